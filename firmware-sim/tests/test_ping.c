// SPDX-License-Identifier: GPL-2.0
/*
 * PING: a round trip answered by the target card alone, its time on the
 * initiator's clock; lost packets sent again and the round trip measured
 * from the answered one; -ETIMEDOUT once the atomics' budget is spent; a
 * closed port refused; late and duplicate PONGs counted and dropped; bad
 * arguments refused with nothing sent; a closing port completes nothing.
 */
#include "fwtest.h"

/* A header-only packet one way on sim_cfg_default()'s fabric: L + s * G. */
#define P_ONE_WAY	(SIM_DEFAULT_L_NS + FW_PKT_HDR_SIZE * SIM_DEFAULT_BYTE_PS / 1000)

/* Two cards, node 0 port 1 and node 1 port 2 open, under @faults if any. */
static struct sim *p_setup(const struct fw_fault_cfg *faults)
{
	struct sim_cfg cfg;
	struct sim *s;

	sim_cfg_default(&cfg, 2);
	if (faults)
		cfg.faults = *faults;
	s = sim_create(&cfg);
	assert_non_null(s);
	assert_int_equal(sim_attach(s, 0, 1), 0);
	assert_int_equal(sim_attach(s, 1, 2), 0);
	return s;
}

/* Ping @dst:@dport from @node port 1; its completion, tag and opcode checked. */
static struct nicoff_cqe p_run(struct sim *s, u32 node, u64 tag, u32 dst, u32 dport)
{
	struct nicoff_cmd c = t_ping(tag, dst, dport);
	struct nicoff_cqe q;

	sim_post(s, node, 1, &c);
	q = t_cqe(s, node, 1, sim_now(s) + 10 * T_SEC);
	assert_int_equal(q.tag, tag);
	assert_int_equal(q.opcode, NICOFF_OP_PING);
	return q;
}

static struct fw_stats p_stats(struct sim *s, u32 node)
{
	struct fw_stats st;

	fw_get_stats(sim_card(s, node), &st);
	return st;
}

static void test_round_trip(void **state)
{
	struct sim *s = p_setup(NULL);
	struct nicoff_cqe q;
	u32 i;

	(void)state;
	for (i = 0; i < 3; i++) {
		q = p_run(s, 0, 10 + i, 1, 2);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, 2 * P_ONE_WAY);
	}
	/* The target's host saw nothing: no completion, no receive needed. */
	assert_int_equal(sim_cq_count(s, 1, 2), 0);
	/* The other way, and a card to itself (no fabric latency to measure). */
	assert_int_equal(sim_attach(s, 1, 1), 0);
	q = p_run(s, 1, 20, 0, 1);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, 2 * P_ONE_WAY);
	q = p_run(s, 1, 21, 1, 2);
	assert_int_equal(q.status, 0);
	assert_int_equal(p_stats(s, 0).ping_strays + p_stats(s, 1).ping_strays, 0);
	assert_int_equal(p_stats(s, 0).ping_timeouts + p_stats(s, 1).ping_timeouts, 0);
	t_finish(s);
}

/* The target is unreachable for three timeouts, then back: the ping gets through. */
static void test_lost_retried(void **state)
{
	struct sim *s = p_setup(NULL);
	const struct sim_cfg *cfg = sim_config(s);
	u64 rto = cfg->fw.rto_ns, t0 = sim_now(s);
	struct nicoff_cmd c = t_ping(5, 1, 2);
	struct fw_stats st0 = p_stats(s, 0);
	struct nicoff_cqe q;

	(void)state;
	sim_set_dead(s, 1, true);
	sim_post(s, 0, 1, &c);
	/* Sent at 0, rto, 3 rto: the third is lost too, the fourth goes at 7 rto. */
	sim_run_until(s, t0 + 4 * rto);
	assert_int_equal(sim_cq_count(s, 0, 1), 0);
	sim_set_dead(s, 1, false);
	q = t_cqe(s, 0, 1, sim_now(s) + T_SEC);
	assert_int_equal(q.status, 0);
	/* From the transmission answered, not from the first. */
	assert_int_equal(q.result, 2 * P_ONE_WAY);
	assert_true(sim_now(s) - t0 >= 7 * rto);
	assert_int_equal(p_stats(s, 0).tx_pkts - st0.tx_pkts, 4);
	assert_int_equal(p_stats(s, 0).ping_timeouts, 0);
	t_finish(s);
}

/* Every packet lost: -ETIMEDOUT after max_retries resends, as an atomic. */
static void test_all_lost(void **state)
{
	struct sim *s = p_setup(NULL);
	struct fw_stats st0 = p_stats(s, 0);
	struct nicoff_cqe q;

	(void)state;
	sim_set_dead(s, 1, true);
	q = p_run(s, 0, 6, 1, 2);
	assert_int_equal(q.status, -ETIMEDOUT);
	assert_int_equal(q.result, 0);
	assert_int_equal(p_stats(s, 0).ping_timeouts, 1);
	assert_int_equal(p_stats(s, 0).tx_pkts - st0.tx_pkts, sim_config(s)->fw.max_retries + 1);
	sim_set_dead(s, 1, false);
	q = p_run(s, 0, 7, 1, 2);
	assert_int_equal(q.status, 0);
	t_finish(s);
}

/* A port nobody has open, never or no longer: refused by the target card. */
static void test_closed_port(void **state)
{
	struct sim *s = p_setup(NULL);
	struct nicoff_cqe q;

	(void)state;
	q = p_run(s, 0, 8, 1, 9);
	assert_int_equal(q.status, -ECONNREFUSED);
	assert_int_equal(q.result, 0);
	sim_detach(s, 1, 2);
	q = p_run(s, 0, 9, 1, 2);
	assert_int_equal(q.status, -ECONNREFUSED);
	q = p_run(s, 0, 10, 1, 0xffffffffu);
	assert_int_equal(q.status, -ECONNREFUSED);
	t_finish(s);
}

/* Every packet duplicated: one completion; the other PONGs are strays. */
static void test_stray_pong(void **state)
{
	struct fw_fault_cfg f = { .dup_ppm = FW_FAULT_PPM };
	struct sim *s = p_setup(&f);
	struct nicoff_cqe q;

	(void)state;
	q = p_run(s, 0, 11, 1, 2);
	assert_int_equal(q.status, 0);
	assert_true(sim_run_idle(s, sim_now(s) + T_SEC));
	assert_int_equal(sim_cq_count(s, 0, 1), 0);
	/* Two PINGs arrive, each answered; each PONG arrives twice. */
	assert_int_equal(p_stats(s, 0).ping_strays, 3);
	t_finish(s);
}

/* A PONG arriving after its port closed is a stray, and completes nothing. */
static void test_detach(void **state)
{
	struct sim *s = p_setup(NULL);
	struct nicoff_cmd c = t_ping(12, 1, 2);
	struct fw_stats st0;

	(void)state;
	sim_post(s, 0, 1, &c);
	sim_run_until(s, sim_now(s) + P_ONE_WAY + 1);
	sim_detach(s, 0, 1);
	assert_true(sim_run_idle(s, sim_now(s) + T_SEC));
	assert_int_equal(p_stats(s, 0).ping_strays, 1);

	/* Waiting for a dead card: nothing completes and nothing is sent again. */
	assert_int_equal(sim_attach(s, 0, 1), 0);
	sim_set_dead(s, 1, true);
	st0 = p_stats(s, 0);
	sim_post(s, 0, 1, &c);
	sim_run_until(s, sim_now(s) + 1000);
	sim_detach(s, 0, 1);
	assert_true(sim_run_idle(s, sim_now(s) + T_SEC));
	assert_int_equal(p_stats(s, 0).ping_timeouts, 0);
	assert_int_equal(p_stats(s, 0).tx_pkts - st0.tx_pkts, 1);
	t_finish(s);
}

/* Refused as the other commands refuse them, nothing sent. */
static void test_bad_args(void **state)
{
	struct sim *s = p_setup(NULL);
	struct fw_stats st0 = p_stats(s, 0);
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	u32 i;

	(void)state;
	c = t_ping(13, 2, 2);		/* no such card */
	sim_post(s, 0, 1, &c);
	q = t_cqe(s, 0, 1, sim_now(s) + T_SEC);
	assert_int_equal(q.status, -EINVAL);
	for (i = 0; i < T_ARRAY_SIZE(c.ping.reserved); i++) {
		c = t_ping(14 + i, 1, 2);
		c.ping.reserved[i] = 1ull << 63;
		sim_post(s, 0, 1, &c);
		q = t_cqe(s, 0, 1, sim_now(s) + T_SEC);
		assert_int_equal(q.tag, 14 + i);
		assert_int_equal(q.status, -EINVAL);
	}
	c = t_ping(20, 1, 2);
	c.flags = 1;
	sim_post(s, 0, 1, &c);
	q = t_cqe(s, 0, 1, sim_now(s) + T_SEC);
	assert_int_equal(q.status, -EINVAL);
	assert_int_equal(p_stats(s, 0).tx_pkts, st0.tx_pkts);
	t_finish(s);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_lost_retried),
		cmocka_unit_test(test_all_lost),
		cmocka_unit_test(test_closed_port),
		cmocka_unit_test(test_stray_pong),
		cmocka_unit_test(test_detach),
		cmocka_unit_test(test_bad_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
