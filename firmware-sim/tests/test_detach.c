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
	return t_sim(3, 1024, 16, faults);
}

/* Three cards; a on card 0 port @aport and b on card 1 port 0, D_BIG each. */
struct d_env {
	struct sim *s;
	u8 *a, *b;
	u32 ma, mb, rkey;	/* rkey: b's */
};

static void d_setup(struct d_env *e, u32 aport, u32 a_access, u32 b_access)
{
	e->s = d_sim(NULL);
	e->a = calloc(1, D_BIG);
	e->b = calloc(1, D_BIG);
	e->ma = t_port_mr(e->s, 0, aport, e->a, D_BIG, a_access, NULL);
	e->mb = t_port_mr(e->s, 1, 0, e->b, D_BIG, b_access, &e->rkey);
}

static void d_free(struct d_env *e)
{
	free(e->a);
	free(e->b);
}

/* The sending port closes half way: the receiver's buffer is released. */
static void test_sender_detach(void **state)
{
	struct d_env e;
	struct nicoff_cqe q;
	u32 m2;
	int i;

	(void)state;
	d_setup(&e, 1, 0, NICOFF_ACCESS_LOCAL_WRITE);
	m2 = t_port_mr(e.s, 0, 2, e.a, D_BIG, 0, NULL);
	t_post(e.s, 1, 0, t_recv(1, e.mb, 0, D_BIG, 0, 1, 0, 0));
	t_post(e.s, 1, 0, t_recv(2, e.mb, 0, 100, 0, 2, 0, 0));
	for (i = 0; i < 4; i++)
		t_post(e.s, 0, 1, t_send(i, 1, 0, e.ma, 0, D_BIG, 0));
	t_post(e.s, 0, 2, t_send(9, 1, 0, m2, 0, 100, 0));
	sim_run_until(e.s, sim_now(e.s) + 30000);
	sim_detach(e.s, 0, 1);

	/* Port 2 of the same card is not disturbed. */
	t_expect(e.s, 0, 2, 9, 0);
	for (i = 0; i < 2; i++) {
		q = t_cqe(e.s, 1, 0, sim_now(e.s) + T_SEC);
		if (q.tag == 1) {
			assert_int_equal(q.status, -ECONNABORTED);
			assert_true(q.result > 0 && q.result < D_BIG);
		} else {
			assert_int_equal(q.status, 0);
		}
	}
	assert_true(sim_run_idle(e.s, sim_now(e.s) + T_SEC));
	assert_int_equal(sim_cq_count(e.s, 1, 0), 0);
	t_finish(e.s);
	d_free(&e);
}

/* The receiving port closes half way: the sender is refused. */
static void test_receiver_detach(void **state)
{
	struct d_env e;
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	int i;

	(void)state;
	d_setup(&e, 0, 0, NICOFF_ACCESS_LOCAL_WRITE);
	t_post(e.s, 1, 0, t_recv(1, e.mb, 0, D_BIG, NICOFF_ANY, NICOFF_ANY, 0, 0));
	c = t_send(1, 1, 0, e.ma, 0, D_BIG, 0);	/* bound to the receive */
	sim_post(e.s, 0, 0, &c);
	c = t_send(2, 1, 0, e.ma, 0, 5000, 0);	/* unexpected */
	sim_post(e.s, 0, 0, &c);
	sim_run_until(e.s, sim_now(e.s) + 30000);
	sim_detach(e.s, 1, 0);
	t_expect(e.s, 0, 0, 1, -ECONNREFUSED);
	t_expect(e.s, 0, 0, 2, -ECONNREFUSED);

	/* Reopened under the same number: a half message is refused too. */
	e.mb = t_port_mr(e.s, 1, 0, e.b, D_BIG, NICOFF_ACCESS_LOCAL_WRITE, NULL);
	t_post(e.s, 1, 0, t_recv(3, e.mb, 0, D_BIG, NICOFF_ANY, NICOFF_ANY, 0, 0));
	t_post(e.s, 0, 0, t_send(3, 1, 0, e.ma, 0, D_BIG, 0));
	sim_run_until(e.s, sim_now(e.s) + 30000);
	sim_detach(e.s, 1, 0);
	assert_int_equal(sim_attach(e.s, 1, 0), 0);
	q = t_cqe(e.s, 0, 0, sim_now(e.s) + T_SEC);
	assert_int_equal(q.tag, 3);
	assert_true(q.status == -ECONNABORTED || q.status == -ECONNREFUSED);
	for (i = 0; i < 3; i++)
		assert_false(sim_cq_pop(e.s, 1, 0, &q));
	t_finish(e.s);
	d_free(&e);
}

/* GETs: the target port closes mid-answer; the initiator port closes. */
static void test_get_detach(void **state)
{
	struct d_env e;
	struct nicoff_cqe q;

	(void)state;
	d_setup(&e, 0, NICOFF_ACCESS_LOCAL_WRITE, NICOFF_ACCESS_ALL);
	t_post(e.s, 0, 0, t_rdma(NICOFF_OP_GET, 1, 1, 0, e.rkey, 0, e.ma, 0, D_BIG));
	sim_run_until(e.s, sim_now(e.s) + 30000);
	sim_detach(e.s, 1, 0);
	q = t_cqe(e.s, 0, 0, sim_now(e.s) + T_SEC);
	assert_int_equal(q.status, -ECONNABORTED);

	e.mb = t_port_mr(e.s, 1, 0, e.b, D_BIG, NICOFF_ACCESS_ALL, &e.rkey);
	t_post(e.s, 0, 0, t_rdma(NICOFF_OP_GET, 2, 1, 0, e.rkey, 0, e.ma, 0, D_BIG));
	t_post(e.s, 0, 0, t_rdma(NICOFF_OP_PUT, 3, 1, 0, e.rkey, 0, e.ma, 0, D_BIG));
	sim_run_until(e.s, sim_now(e.s) + 30000);
	sim_detach(e.s, 0, 0);
	t_finish(e.s);
	d_free(&e);
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
	struct d_env e;
	int i;

	(void)state;
	d_setup(&e, 0, NICOFF_ACCESS_ALL, NICOFF_ACCESS_ALL);
	for (i = 0; i < 3; i++) {
		t_post(e.s, 0, 0, t_send(i, 1, 0, e.ma, 0, D_BIG / 2, 0));
		t_post(e.s, 0, 0, t_rdma(NICOFF_OP_GET, i, 1, 0, e.rkey, 0, e.ma, 0, D_BIG));
		t_post(e.s, 1, 0, t_recv(i, e.mb, 0, 10, NICOFF_ANY, NICOFF_ANY, 7, ~0ull));
	}
	sim_run_until(e.s, sim_now(e.s) + 20000);
	assert_int_equal(sim_restart(e.s, 1, 5), 0);
	sim_run_until(e.s, sim_now(e.s) + 20000);
	assert_int_equal(sim_stats(e.s)->bad_completions, 0);
	assert_int_equal(sim_destroy(e.s), 0);
	d_free(&e);
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
