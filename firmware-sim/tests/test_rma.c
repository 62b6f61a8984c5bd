// SPDX-License-Identifier: GPL-2.0
/*
 * Put and get: data, and every check of the target (rkey, bounds, rights,
 * port) failing on both sides; regions going away mid-transfer.
 */
#include <stdlib.h>

#include "fwtest.h"

#define R_BIG	0x100000u

struct r_env {
	struct sim *s;
	u8 *a, *b;
	u32 ma;			/* node 0 port 1: everything local */
	u32 mb, rkey;		/* node 1 port 2: all rights */
	u32 ro_rkey;		/* node 1 port 2: remote read only */
	u32 wo_rkey;		/* node 1 port 2: remote write only */
	u32 other_rkey;		/* node 1 port 3 */
};

static void r_setup(struct r_env *e, const struct fw_fault_cfg *faults)
{
	u32 h;

	e->s = t_sim_pair(faults);
	e->a = calloc(1, R_BIG);
	e->b = calloc(1, R_BIG);
	t_fill(e->a, R_BIG, 1);
	t_fill(e->b, R_BIG, 2);
	e->ma = t_port_mr(e->s, 0, 1, e->a, R_BIG, NICOFF_ACCESS_LOCAL_WRITE, NULL);
	e->mb = t_port_mr(e->s, 1, 2, e->b, R_BIG, NICOFF_ACCESS_ALL, &e->rkey);
	h = t_port_mr(e->s, 1, 2, e->b, 4096, NICOFF_ACCESS_REMOTE_READ, &e->ro_rkey);
	h = t_port_mr(e->s, 1, 2, e->b, 4096, NICOFF_ACCESS_REMOTE_WRITE, &e->wo_rkey);
	h = t_port_mr(e->s, 1, 3, e->b, 4096, NICOFF_ACCESS_ALL, &e->other_rkey);
	(void)h;
}

static void r_teardown(struct r_env *e)
{
	t_finish(e->s);
	free(e->a);
	free(e->b);
}

static struct nicoff_cqe r_op(struct r_env *e, u8 opcode, u32 dport, u32 rkey, u64 roff,
			      u64 off, u64 len)
{
	struct nicoff_cmd c = t_rdma(opcode, 7, 1, dport, rkey, roff, e->ma, off, len);
	struct nicoff_cqe q;

	sim_post(e->s, 0, 1, &c);
	q = t_cqe(e->s, 0, 1, sim_now(e->s) + 10 * T_SEC);
	assert_int_equal(q.tag, 7);
	assert_int_equal(q.opcode, opcode);
	return q;
}

static void test_put_get_data(void **state)
{
	static const u64 sizes[] = { 0, 1, 999, 1000, 1001, 4321, 65536, R_BIG - 32 };
	struct r_env e;
	unsigned int i;

	(void)state;
	r_setup(&e, NULL);
	for (i = 0; i < T_ARRAY_SIZE(sizes); i++) {
		u64 len = sizes[i], roff = i * 3, off = 5 - i % 5;
		struct nicoff_cqe q;

		t_fill(e.a, R_BIG, 10 + i);
		q = r_op(&e, NICOFF_OP_PUT, 2, e.rkey, roff, off, len);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, len);
		assert_memory_equal(e.b + roff, e.a + off, len);

		t_fill(e.b, R_BIG, 20 + i);
		memset(e.a, 0, R_BIG);
		q = r_op(&e, NICOFF_OP_GET, 2, e.rkey, roff + 1, off, len);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, len);
		assert_memory_equal(e.a + off, e.b + roff + 1, len);
		if (off)
			assert_int_equal(e.a[off - 1], 0);
		assert_int_equal(e.a[off + len], 0);
	}
	assert_int_equal(fw_port_remote_errors(sim_card(e.s, 1), 2, NULL), 0);
	r_teardown(&e);
}

/* Each violation: the initiator's error, the target's count, no write. */
static void test_remote_checks(void **state)
{
	static const struct {
		u8 opcode;
		u32 port;
		int rkey;	/* 0 all, 1 read only, 2 write only, 3 other port, 4 bogus */
		u64 roff;
		u64 len;
		int err;
	} cases[] = {
		{ NICOFF_OP_PUT, 2, 4, 0, 10, -ENOENT },
		{ NICOFF_OP_GET, 2, 4, 0, 10, -ENOENT },
		{ NICOFF_OP_PUT, 2, 3, 0, 10, -ENOENT },
		{ NICOFF_OP_GET, 2, 3, 0, 10, -ENOENT },
		{ NICOFF_OP_PUT, 2, 1, 0, 10, -EACCES },
		{ NICOFF_OP_GET, 2, 2, 0, 10, -EACCES },
		{ NICOFF_OP_PUT, 2, 2, 4000, 97, -ERANGE },
		{ NICOFF_OP_GET, 2, 1, 4096, 1, -ERANGE },
		{ NICOFF_OP_PUT, 2, 0, R_BIG - 5000, 5001, -ERANGE },	/* last fragment */
		{ NICOFF_OP_GET, 2, 0, R_BIG - 5000, 5001, -ERANGE },
		{ NICOFF_OP_PUT, 2, 2, 4097, 0, -ERANGE },
		{ NICOFF_OP_PUT, 9, 0, 0, 10, -ECONNREFUSED },
		{ NICOFF_OP_GET, 9, 0, 0, 10, -ECONNREFUSED },
	};
	struct r_env e;
	unsigned int i;
	u64 seen = 0;

	(void)state;
	r_setup(&e, NULL);
	for (i = 0; i < T_ARRAY_SIZE(cases); i++) {
		const u32 keys[] = { e.rkey, e.ro_rkey, e.wo_rkey, e.other_rkey, 0xdead0000 };
		struct fw_remote_error last;
		struct fw_stats st;
		struct nicoff_cqe q;
		u64 n;

		t_fill(e.b, R_BIG, 30 + i);
		memset(e.a, 0x5a, R_BIG);
		q = r_op(&e, cases[i].opcode, cases[i].port, keys[cases[i].rkey], cases[i].roff,
			 0, cases[i].len);
		assert_int_equal(q.status, cases[i].err);
		assert_int_equal(q.result, 0);
		/* Nothing written on either side. */
		assert_true(t_check(e.b, R_BIG, 30 + i));
		if (cases[i].opcode == NICOFF_OP_GET)
			assert_int_equal(e.a[0], 0x5a);

		fw_get_stats(sim_card(e.s, 1), &st);
		assert_int_equal(st.remote_errors, i + 1);
		n = fw_port_remote_errors(sim_card(e.s, 1), cases[i].port, &last);
		if (cases[i].port != 2) {
			assert_int_equal(n, 0);
			continue;
		}
		assert_int_equal(n, ++seen);
		assert_int_equal(last.status, cases[i].err);
		assert_int_equal(last.src_card, 0);
		assert_int_equal(last.src_port, 1);
		assert_int_equal(last.opcode, cases[i].opcode);
	}
	assert_int_equal(fw_port_remote_errors(sim_card(e.s, 1), 3, NULL), 0);
	r_teardown(&e);
}

/*
 * 20 us into what node 0 port 1 posted, @node's @port deregisters @mr:
 * the command fails with -ENOENT.
 */
static void r_dereg_mid_way(struct r_env *e, u32 node, u32 port, u32 mr)
{
	struct nicoff_cqe q;

	sim_run_until(e->s, sim_now(e->s) + 20000);
	assert_int_equal(sim_cq_count(e->s, 0, 1), 0);
	assert_int_equal(sim_dereg_mr(e->s, node, port, mr), 0);
	q = t_cqe(e->s, 0, 1, sim_now(e->s) + T_SEC);
	assert_int_equal(q.status, -ENOENT);
}

/* The target deregisters its region while a GET streams out of it. */
static void test_dereg_mid_get(void **state)
{
	struct r_env e;

	(void)state;
	r_setup(&e, NULL);
	t_post(e.s, 0, 1, t_rdma(NICOFF_OP_GET, 1, 1, 2, e.rkey, 0, e.ma, 0, R_BIG));
	r_dereg_mid_way(&e, 1, 2, e.mb);
	assert_int_equal(fw_port_remote_errors(sim_card(e.s, 1), 2, NULL), 1);
	r_teardown(&e);
}

/* The sender deregisters its region mid-message: both sides fail. */
static void test_dereg_mid_send(void **state)
{
	struct r_env e;
	struct nicoff_cqe q;

	(void)state;
	r_setup(&e, NULL);
	t_post(e.s, 1, 2, t_recv(1, e.mb, 0, R_BIG, 0, 1, 0, 0));
	t_post(e.s, 0, 1, t_send(2, 1, 2, e.ma, 0, R_BIG, 0));
	r_dereg_mid_way(&e, 0, 1, e.ma);
	q = t_cqe(e.s, 1, 2, sim_now(e.s) + T_SEC);
	assert_int_equal(q.status, -ECONNABORTED);
	assert_true(q.result > 0 && q.result < R_BIG);
	r_teardown(&e);
}

/* Puts and gets through a lossy, corrupting, duplicating fabric. */
static void test_rma_faults(void **state)
{
	struct r_env e;
	int i;

	(void)state;
	r_setup(&e, &t_lossy);
	for (i = 0; i < 40; i++) {
		u64 len = 1 + (i * 7919) % 60000, roff = (i * 131) % 1000;
		struct nicoff_cqe q;

		t_fill(e.a, len, 100 + i);
		q = r_op(&e, NICOFF_OP_PUT, 2, e.rkey, roff, 0, len);
		assert_int_equal(q.status, 0);
		assert_true(t_check(e.b + roff, len, 100 + i));
		memset(e.a, 0, len + 1);
		q = r_op(&e, NICOFF_OP_GET, 2, e.rkey, roff, 0, len);
		assert_int_equal(q.status, 0);
		assert_true(t_check(e.a, len, 100 + i));
		assert_int_equal(e.a[len], 0);
		/* And a refused one now and then: still exactly one error. */
		if (i % 8 == 0) {
			q = r_op(&e, NICOFF_OP_PUT, 2, e.ro_rkey, 0, 0, 3000);
			assert_int_equal(q.status, -EACCES);
		}
	}
	t_expect_lossy(e.s, 5);
	r_teardown(&e);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_put_get_data),
		cmocka_unit_test(test_remote_checks),
		cmocka_unit_test(test_dereg_mid_get),
		cmocka_unit_test(test_dereg_mid_send),
		cmocka_unit_test(test_rma_faults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
