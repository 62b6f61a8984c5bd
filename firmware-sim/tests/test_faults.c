// SPDX-License-Identifier: GPL-2.0
/*
 * Fault verdicts: deterministic, at the configured rates, within bounds.
 */
#include "fwtest.h"
#include "faults.h"

#define F_N	1000000u

static void test_deterministic(void **state)
{
	struct fw_fault_cfg cfg = { 100000, 100000, 100000, 100000, 100000, 5000 };
	struct fw_fault_state a, b, c;
	u32 i, same = 0;

	(void)state;
	fw_fault_init(&a, 42, 3);
	fw_fault_init(&b, 42, 3);
	fw_fault_init(&c, 42, 4);
	for (i = 0; i < 10000; i++) {
		struct fw_fault_verdict va = fw_fault_verdict(&a, &cfg, 100 + i % 900);
		struct fw_fault_verdict vb = fw_fault_verdict(&b, &cfg, 100 + i % 900);
		struct fw_fault_verdict vc = fw_fault_verdict(&c, &cfg, 100 + i % 900);

		assert_memory_equal(&va, &vb, sizeof(va));
		same += !memcmp(&va, &vc, sizeof(va));
	}
	assert_memory_equal(&a.counts, &b.counts, sizeof(a.counts));
	/* Another node draws another sequence (most verdicts are "nothing"). */
	assert_true(same < 9000);
}

static void test_rates(void **state)
{
	struct fw_fault_cfg cfg = { .drop_ppm = 100000, .dup_ppm = 50000, .corrupt_ppm = 10000,
				    .reorder_ppm = 50000, .delay_ppm = 20000, .delay_ns = 7000 };
	struct fw_fault_state st;
	u64 drops = 0, dups = 0, corrupts = 0, reorders = 0, delays = 0;
	u32 i;

	(void)state;
	fw_fault_init(&st, 7, 0);
	for (i = 0; i < F_N; i++) {
		u32 len = 96 + i % 4000;
		struct fw_fault_verdict v = fw_fault_verdict(&st, &cfg, len);

		if (v.faults & FW_FAULT_DROP) {
			assert_int_equal(v.faults, FW_FAULT_DROP);
			drops++;
			continue;
		}
		if (v.faults & FW_FAULT_DUP)
			dups++;
		if (v.faults & FW_FAULT_CORRUPT) {
			assert_true(v.corrupt_bit < len * 8);
			corrupts++;
		}
		if (v.faults & FW_FAULT_REORDER)
			reorders++;
		if (v.faults & FW_FAULT_DELAY)
			delays++;
		if (v.faults & (FW_FAULT_REORDER | FW_FAULT_DELAY))
			assert_true(v.delay_ns >= 1 && v.delay_ns <= 2 * cfg.delay_ns);
		else
			assert_int_equal(v.delay_ns, 0);
	}
	assert_int_equal(st.counts.packets, F_N);
	assert_int_equal(st.counts.drops, drops);
	assert_int_equal(st.counts.dups, dups);
	assert_int_equal(st.counts.corrupts, corrupts);
	assert_int_equal(st.counts.reorders, reorders);
	assert_int_equal(st.counts.delays, delays);
	/* Within 3% of the rate (dup and others apply to the 90% not dropped). */
	assert_in_range(drops, 97000, 103000);
	assert_in_range(dups, 43650, 46350);
	assert_in_range(corrupts, 8730, 9270);
	assert_in_range(reorders, 43650, 46350);
	assert_in_range(delays, 17460, 18540);
}

static void test_extremes(void **state)
{
	struct fw_fault_cfg never = { 0 };
	struct fw_fault_cfg always = { .drop_ppm = FW_FAULT_PPM };
	struct fw_fault_cfg bits = { .corrupt_ppm = FW_FAULT_PPM };
	struct fw_fault_state st;
	u32 i, hist[8] = { 0 };
	u8 buf[1] = { 0 };

	(void)state;
	fw_fault_init(&st, 1, 1);
	for (i = 0; i < 10000; i++) {
		assert_int_equal(fw_fault_verdict(&st, &never, 100).faults, 0);
		assert_int_equal(fw_fault_verdict(&st, &always, 100).faults, FW_FAULT_DROP);
	}
	/* Delay and reorder need a delay; nothing to corrupt in an empty packet. */
	never.reorder_ppm = FW_FAULT_PPM;
	never.delay_ppm = FW_FAULT_PPM;
	assert_int_equal(fw_fault_verdict(&st, &never, 100).faults, 0);
	assert_int_equal(fw_fault_verdict(&st, &bits, 0).faults, 0);
	/* Every bit of a one-byte packet gets hit, and flipping works. */
	for (i = 0; i < 8000; i++) {
		struct fw_fault_verdict v = fw_fault_verdict(&st, &bits, 1);

		assert_int_equal(v.faults, FW_FAULT_CORRUPT);
		hist[v.corrupt_bit]++;
	}
	for (i = 0; i < 8; i++) {
		assert_in_range(hist[i], 800, 1200);
		fw_fault_flip(buf, i);
	}
	assert_int_equal(buf[0], 0xff);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_extremes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
