// SPDX-License-Identifier: GPL-2.0
/*
 * Ports closing with traffic in flight: no completion for them afterwards,
 * errors (not hangs) for their peers, and nothing leaked.
 */
#include <stdlib.h>

#include "fwtest.h"

#define D_BIG	0x100000u

static struct sim *d_sim(const struct fw_fault_cfg *faults)
{
	struct sim_cfg cfg;

	sim_cfg_default(&cfg, 3);
	cfg.fw.mtu = 1024;
	cfg.fw.window = 16;
	if (faults)
		cfg.faults = *faults;
	return sim_create(&cfg);
}

/* The sending port closes half way: the receiver's buffer is released. */
static void test_sender_detach(void **state)
{
	struct sim *s = d_sim(NULL);
	u8 *a = calloc(1, D_BIG), *b = calloc(1, D_BIG);
	u32 ma = t_port_mr(s, 0, 1, a, D_BIG, 0, NULL);
	u32 m2 = t_port_mr(s, 0, 2, a, D_BIG, 0, NULL);
	u32 mb = t_port_mr(s, 1, 0, b, D_BIG, NICOFF_ACCESS_LOCAL_WRITE, NULL);
	struct nicoff_cqe q;
	int i;

	(void)state;
	t_post(s, 1, 0, t_recv(1, mb, 0, D_BIG, 0, 1, 0, 0));
	t_post(s, 1, 0, t_recv(2, mb, 0, 100, 0, 2, 0, 0));
	for (i = 0; i < 4; i++)
		t_post(s, 0, 1, t_send(i, 1, 0, ma, 0, D_BIG, 0));
	t_post(s, 0, 2, t_send(9, 1, 0, m2, 0, 100, 0));
	sim_run_until(s, sim_now(s) + 30000);
	sim_detach(s, 0, 1);

	/* Port 2 of the same card is not disturbed. */
	t_expect(s, 0, 2, 9, 0);
	for (i = 0; i < 2; i++) {
		q = t_cqe(s, 1, 0, sim_now(s) + T_SEC);
		if (q.tag == 1) {
			assert_int_equal(q.status, -ECONNABORTED);
			assert_true(q.result > 0 && q.result < D_BIG);
		} else {
			assert_int_equal(q.status, 0);
		}
	}
	assert_true(sim_run_idle(s, sim_now(s) + T_SEC));
	assert_int_equal(sim_cq_count(s, 1, 0), 0);
	t_finish(s);
	free(a);
	free(b);
}

/* The receiving port closes half way: the sender is refused. */
static void test_receiver_detach(void **state)
{
	struct sim *s = d_sim(NULL);
	u8 *a = calloc(1, D_BIG), *b = calloc(1, D_BIG);
	u32 ma = t_port_mr(s, 0, 0, a, D_BIG, 0, NULL);
	u32 mb = t_port_mr(s, 1, 0, b, D_BIG, NICOFF_ACCESS_LOCAL_WRITE, NULL);
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	int i;

	(void)state;
	t_post(s, 1, 0, t_recv(1, mb, 0, D_BIG, NICOFF_ANY, NICOFF_ANY, 0, 0));
	c = t_send(1, 1, 0, ma, 0, D_BIG, 0);	/* bound to the receive */
	sim_post(s, 0, 0, &c);
	c = t_send(2, 1, 0, ma, 0, 5000, 0);	/* unexpected */
	sim_post(s, 0, 0, &c);
	sim_run_until(s, sim_now(s) + 30000);
	sim_detach(s, 1, 0);
	t_expect(s, 0, 0, 1, -ECONNREFUSED);
	t_expect(s, 0, 0, 2, -ECONNREFUSED);

	/* Reopened under the same number: a half message is refused too. */
	mb = t_port_mr(s, 1, 0, b, D_BIG, NICOFF_ACCESS_LOCAL_WRITE, NULL);
	t_post(s, 1, 0, t_recv(3, mb, 0, D_BIG, NICOFF_ANY, NICOFF_ANY, 0, 0));
	t_post(s, 0, 0, t_send(3, 1, 0, ma, 0, D_BIG, 0));
	sim_run_until(s, sim_now(s) + 30000);
	sim_detach(s, 1, 0);
	assert_int_equal(sim_attach(s, 1, 0), 0);
	q = t_cqe(s, 0, 0, sim_now(s) + T_SEC);
	assert_int_equal(q.tag, 3);
	assert_true(q.status == -ECONNABORTED || q.status == -ECONNREFUSED);
	for (i = 0; i < 3; i++)
		assert_false(sim_cq_pop(s, 1, 0, &q));
	t_finish(s);
	free(a);
	free(b);
}

/* GETs: the target port closes mid-answer; the initiator port closes. */
static void test_get_detach(void **state)
{
	struct sim *s = d_sim(NULL);
	u8 *a = calloc(1, D_BIG), *b = calloc(1, D_BIG);
	u32 ma = t_port_mr(s, 0, 0, a, D_BIG, NICOFF_ACCESS_LOCAL_WRITE, NULL);
	u32 rkey, mb = t_port_mr(s, 1, 0, b, D_BIG, NICOFF_ACCESS_ALL, &rkey);
	struct nicoff_cqe q;

	(void)state;
	(void)mb;
	t_post(s, 0, 0, t_rdma(NICOFF_OP_GET, 1, 1, 0, rkey, 0, ma, 0, D_BIG));
	sim_run_until(s, sim_now(s) + 30000);
	sim_detach(s, 1, 0);
	q = t_cqe(s, 0, 0, sim_now(s) + T_SEC);
	assert_int_equal(q.status, -ECONNABORTED);

	mb = t_port_mr(s, 1, 0, b, D_BIG, NICOFF_ACCESS_ALL, &rkey);
	t_post(s, 0, 0, t_rdma(NICOFF_OP_GET, 2, 1, 0, rkey, 0, ma, 0, D_BIG));
	t_post(s, 0, 0, t_rdma(NICOFF_OP_PUT, 3, 1, 0, rkey, 0, ma, 0, D_BIG));
	sim_run_until(s, sim_now(s) + 30000);
	sim_detach(s, 0, 0);
	t_finish(s);
	free(a);
	free(b);
}

/* Everything at once under faults, ports closing at random moments. */
static void test_detach_storm(void **state)
{
	struct fw_fault_cfg f = { .drop_ppm = 50000, .dup_ppm = 50000, .corrupt_ppm = 10000,
				  .reorder_ppm = 50000, .delay_ns = 20000 };
	struct sim *s = d_sim(&f);
	u8 *buf = calloc(3, D_BIG);
	u32 mr[3], rkey[3], n, round;
	struct nicoff_cqe q;

	(void)state;
	for (round = 0; round < 4; round++) {
		for (n = 0; n < 3; n++)
			mr[n] = t_port_mr(s, n, 0, buf + n * D_BIG, D_BIG, NICOFF_ACCESS_ALL,
					  &rkey[n]);
		for (n = 0; n < 3; n++) {
			u32 to = (n + 1) % 3, i;

			for (i = 0; i < 6; i++) {
				u64 len = 1000 + i * 40000;

				t_post(s, n, 0, t_recv(i, mr[n], i * 100000, 100000, NICOFF_ANY,
						       NICOFF_ANY, 0, 0));
				t_post(s, n, 0, t_send(i, to, 0, mr[n], 0, len, i));
				t_post(s, n, 0, t_rdma(NICOFF_OP_PUT, i, to, 0, rkey[to], 600000,
						       mr[n], 600000, len));
				t_post(s, n, 0, t_rdma(NICOFF_OP_GET, i, to, 0, rkey[to], 0, mr[n],
						       800000, len / 2));
			}
		}
		sim_run_until(s, sim_now(s) + 10000 * (round + 1));
		for (n = 0; n < 3; n++) {
			while (sim_cq_pop(s, n, 0, &q))
				;
			sim_detach(s, n, 0);
		}
	}
	t_finish(s);
	free(buf);
}

/* The card goes with everything in flight: nothing leaks, nothing posted. */
static void test_destroy_in_flight(void **state)
{
	struct sim *s = d_sim(NULL);
	u8 *a = calloc(1, D_BIG), *b = calloc(1, D_BIG);
	u32 ma = t_port_mr(s, 0, 0, a, D_BIG, NICOFF_ACCESS_ALL, NULL);
	u32 rkey, mb = t_port_mr(s, 1, 0, b, D_BIG, NICOFF_ACCESS_ALL, &rkey);
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		t_post(s, 0, 0, t_send(i, 1, 0, ma, 0, D_BIG / 2, 0));
		t_post(s, 0, 0, t_rdma(NICOFF_OP_GET, i, 1, 0, rkey, 0, ma, 0, D_BIG));
		t_post(s, 1, 0, t_recv(i, mb, 0, 10, NICOFF_ANY, NICOFF_ANY, 7, ~0ull));
	}
	sim_run_until(s, sim_now(s) + 20000);
	assert_int_equal(sim_restart(s, 1, 5), 0);
	sim_run_until(s, sim_now(s) + 20000);
	assert_int_equal(sim_stats(s)->bad_completions, 0);
	assert_int_equal(sim_destroy(s), 0);
	(void)mb;
	free(a);
	free(b);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_sender_detach),
		cmocka_unit_test(test_receiver_detach),
		cmocka_unit_test(test_get_detach),
		cmocka_unit_test(test_detach_storm),
		cmocka_unit_test(test_destroy_in_flight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
