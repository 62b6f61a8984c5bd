// SPDX-License-Identifier: GPL-2.0
/*
 * Remote atomics: the three operations on both widths, every refusal (with
 * nothing executed), exactly once under drops, duplicates and reordering
 * (duplicates answered from the reply table, never executed again), CAS
 * and swap histories, the requester's credit (commands beyond it wait,
 * none fails), retirement of replies, a hostile requester that cannot
 * overflow the table, timeouts and closing ports.
 */
#include <stdlib.h>

#include "fwtest.h"

#define A_LEN		4096u
#define A_BOGUS_RKEY	0xdead0000u

struct a_env {
	struct sim *s;
	u64 *mem;		/* node 1 port 2: REMOTE_ATOMIC, A_LEN bytes */
	u64 *rw;		/* node 1 port 2: remote read and write, no atomic right */
	u32 rkey, rw_rkey;
	u32 other_rkey;		/* node 1 port 3: a region of another port */
	u64 *other;
};

static void a_setup(struct a_env *e, u32 nodes, u32 table, const struct fw_fault_cfg *faults)
{
	struct sim_cfg cfg;
	u32 h;

	sim_cfg_default(&cfg, nodes);
	if (table)
		cfg.fw.atomic_table = table;
	if (faults)
		cfg.faults = *faults;
	e->s = sim_create(&cfg);
	assert_non_null(e->s);
	e->mem = aligned_alloc(64, A_LEN);
	e->rw = aligned_alloc(64, A_LEN);
	e->other = aligned_alloc(64, A_LEN);
	memset(e->mem, 0, A_LEN);
	memset(e->rw, 0, A_LEN);
	memset(e->other, 0, A_LEN);
	h = t_port_mr(e->s, 1, 2, e->mem, A_LEN, NICOFF_ACCESS_REMOTE_ATOMIC, &e->rkey);
	h = t_port_mr(e->s, 1, 2, e->rw, A_LEN,
		      NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE, &e->rw_rkey);
	h = t_port_mr(e->s, 1, 3, e->other, A_LEN, NICOFF_ACCESS_ALL, &e->other_rkey);
	(void)h;
}

static void a_teardown(struct a_env *e)
{
	t_finish(e->s);
	free(e->mem);
	free(e->rw);
	free(e->other);
}

/* Post from node 0 port 1 (or @node/@port) and wait for the completion. */
static struct nicoff_cqe a_run(struct a_env *e, u32 node, u32 port, const struct nicoff_cmd *c)
{
	struct nicoff_cqe q;

	if (!sim_attached(e->s, node, port))
		assert_int_equal(sim_attach(e->s, node, port), 0);
	sim_post(e->s, node, port, c);
	q = t_cqe(e->s, node, port, sim_now(e->s) + 10 * T_SEC);
	assert_int_equal(q.tag, c->tag);
	assert_int_equal(q.opcode, c->opcode);
	return q;
}

static u64 a_op(struct a_env *e, u8 opcode, u64 roff, u32 width, u64 operand, u64 compare)
{
	struct nicoff_cmd c = t_atomic(opcode, 11, 1, 2, e->rkey, roff, width, operand, compare);
	struct nicoff_cqe q = a_run(e, 0, 1, &c);

	assert_int_equal(q.status, 0);
	return q.result;
}

static struct fw_stats a_stats(struct a_env *e, u32 node)
{
	struct fw_stats st;

	fw_get_stats(sim_card(e->s, node), &st);
	return st;
}

static void test_operations(void **state)
{
	u32 *w32;
	struct a_env e;
	struct nicoff_cmd c;
	struct nicoff_cqe q;

	(void)state;
	a_setup(&e, 2, 0, NULL);
	w32 = (u32 *)e.mem;
	e.mem[0] = 5;
	assert_int_equal(a_op(&e, NICOFF_OP_FETCH_ADD, 0, 8, 3, 0), 5);
	assert_int_equal(e.mem[0], 8);
	assert_int_equal(a_op(&e, NICOFF_OP_FETCH_ADD, 0, 8, (u64)-10, 0), 8);
	assert_int_equal(e.mem[0], (u64)-2);

	/* 32 bits wrap at 32 bits and leave the neighbour alone. */
	w32[2] = 0xfffffffe;
	w32[3] = 0x12345678;
	assert_int_equal(a_op(&e, NICOFF_OP_FETCH_ADD, 8, 4, 3, 0), 0xfffffffe);
	assert_int_equal(w32[2], 1);
	assert_int_equal(w32[3], 0x12345678);

	assert_int_equal(a_op(&e, NICOFF_OP_FETCH_WRITE, 12, 4, 7, 0), 0x12345678);
	assert_int_equal(w32[3], 7);
	e.mem[2] = 0x1122334455667788ull;
	assert_int_equal(a_op(&e, NICOFF_OP_FETCH_WRITE, 16, 8, 9, 0), 0x1122334455667788ull);
	assert_int_equal(e.mem[2], 9);

	/* CAS hit and miss, both widths. */
	assert_int_equal(a_op(&e, NICOFF_OP_COMPARE_SWAP, 16, 8, 100, 9), 9);
	assert_int_equal(e.mem[2], 100);
	assert_int_equal(a_op(&e, NICOFF_OP_COMPARE_SWAP, 16, 8, 200, 9), 100);
	assert_int_equal(e.mem[2], 100);
	assert_int_equal(a_op(&e, NICOFF_OP_COMPARE_SWAP, 12, 4, 8, 7), 7);
	assert_int_equal(w32[3], 8);
	assert_int_equal(a_op(&e, NICOFF_OP_COMPARE_SWAP, 12, 4, 9, 7), 8);
	assert_int_equal(w32[3], 8);

	/* The last word of the region. */
	assert_int_equal(a_op(&e, NICOFF_OP_FETCH_ADD, A_LEN - 8, 8, 1, 0), 0);
	assert_int_equal(a_op(&e, NICOFF_OP_FETCH_ADD, A_LEN - 4, 4, 1, 0), 0);

	/* A card to itself: node 1 port 3 on node 1 port 2. */
	c = t_atomic(NICOFF_OP_FETCH_ADD, 12, 1, 2, e.rkey, 0, 8, 2, 0);
	q = a_run(&e, 1, 3, &c);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, (u64)-2);
	assert_int_equal(e.mem[0], 0);

	assert_int_equal(a_stats(&e, 1).atomics, 12);
	assert_int_equal(a_stats(&e, 1).remote_errors, 0);
	assert_int_equal(fw_port_remote_errors(sim_card(e.s, 1), 2, NULL), 0);
	a_teardown(&e);
}

/* Every refusal: an error completion, nothing executed anywhere. */
static void test_errors(void **state)
{
	static const struct {
		u8 opcode;
		u32 dst, port;
		int key;	/* 0 atomic, 1 read/write only, 2 other port's, 3 bogus */
		u64 roff;
		u32 width;
		u64 operand, compare, reserved;
		int err;
		bool remote;	/* counted on the target's port */
	} cases[] = {
		{ NICOFF_OP_FETCH_ADD, 1, 2, 0, 4, 8, 1, 0, 0, -EINVAL, true },	/* misaligned */
		{ NICOFF_OP_FETCH_ADD, 1, 2, 0, 2, 4, 1, 0, 0, -EINVAL, true },
		{ NICOFF_OP_COMPARE_SWAP, 1, 2, 0, 1, 8, 1, 0, 0, -EINVAL, true },
		{ NICOFF_OP_FETCH_ADD, 1, 2, 0, A_LEN - 4, 8, 1, 0, 0, -ERANGE, true },
		{ NICOFF_OP_FETCH_ADD, 1, 2, 0, A_LEN, 4, 1, 0, 0, -ERANGE, true },
		{ NICOFF_OP_FETCH_WRITE, 1, 2, 0, (u64)-8, 8, 1, 0, 0, -ERANGE, true },
		{ NICOFF_OP_FETCH_ADD, 1, 2, 1, 0, 8, 1, 0, 0, -EACCES, true },	/* no right */
		{ NICOFF_OP_COMPARE_SWAP, 1, 2, 1, 0, 4, 1, 0, 0, -EACCES, true },
		{ NICOFF_OP_FETCH_ADD, 1, 2, 2, 0, 8, 1, 0, 0, -ENOENT, true },	/* wrong key */
		{ NICOFF_OP_FETCH_ADD, 1, 2, 3, 0, 8, 1, 0, 0, -ENOENT, true },
		{ NICOFF_OP_FETCH_ADD, 1, 9, 0, 0, 8, 1, 0, 0, -ECONNREFUSED, false },
		/* no such card */
		{ NICOFF_OP_FETCH_ADD, 7, 2, 0, 0, 8, 1, 0, 0, -EINVAL, false },
		{ NICOFF_OP_FETCH_ADD, 1, 2, 0, 0, 2, 1, 0, 0, -EINVAL, false },	/* width */
		{ NICOFF_OP_FETCH_ADD, 1, 2, 0, 0, 16, 1, 0, 0, -EINVAL, false },
		{ NICOFF_OP_FETCH_ADD, 1, 2, 0, 0, 4, 1ull << 32, 0, 0, -EINVAL, false },
		{ NICOFF_OP_COMPARE_SWAP, 1, 2, 0, 0, 4, 1, 1ull << 32, 0, -EINVAL, false },
		/* a compare value where none is used; a reserved field */
		{ NICOFF_OP_FETCH_ADD, 1, 2, 0, 0, 8, 1, 5, 0, -EINVAL, false },
		{ NICOFF_OP_FETCH_WRITE, 1, 2, 0, 0, 8, 1, 0, 1, -EINVAL, false },
	};
	struct a_env e;
	unsigned int i;
	u64 seen = 0, errors = 0;

	(void)state;
	a_setup(&e, 2, 0, NULL);
	for (i = 0; i < T_ARRAY_SIZE(cases); i++) {
		const u32 keys[] = { e.rkey, e.rw_rkey, e.other_rkey, A_BOGUS_RKEY };
		struct fw_remote_error last;
		struct nicoff_cmd c;
		struct nicoff_cqe q;

		t_fill(e.mem, A_LEN, 40 + i);
		t_fill(e.rw, A_LEN, 60 + i);
		t_fill(e.other, A_LEN, 80 + i);
		c = t_atomic(cases[i].opcode, 100 + i, cases[i].dst, cases[i].port,
			     keys[cases[i].key], cases[i].roff, cases[i].width, cases[i].operand,
			     cases[i].compare);
		c.atomic.reserved = cases[i].reserved;
		q = a_run(&e, 0, 1, &c);
		assert_int_equal(q.status, cases[i].err);
		assert_int_equal(q.result, 0);
		assert_true(t_check(e.mem, A_LEN, 40 + i));
		assert_true(t_check(e.rw, A_LEN, 60 + i));
		assert_true(t_check(e.other, A_LEN, 80 + i));
		assert_int_equal(a_stats(&e, 1).atomics, 0);
		if (cases[i].remote)
			errors++;
		assert_int_equal(a_stats(&e, 1).remote_errors, errors);
		if (cases[i].remote) {
			assert_int_equal(fw_port_remote_errors(sim_card(e.s, 1), 2, &last), ++seen);
			assert_int_equal(last.status, cases[i].err);
			assert_int_equal(last.src_card, 0);
			assert_int_equal(last.src_port, 1);
			assert_int_equal(last.opcode, cases[i].opcode);
		}
	}
	/* Errors are replies too: the table holds them like any other. */
	assert_int_equal(a_stats(&e, 1).atomic_refused, 0);
	a_teardown(&e);
}

/* Requesters: (node, port) pairs; every one posts all its commands at once. */
struct a_req {
	u32 node, port;
};

static const struct a_req a_reqs[] = {
	{ 0, 1 }, { 0, 4 }, { 2, 1 }, { 2, 5 }, { 3, 1 }, { 1, 3 },
};

static int a_cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * P requesters x K fetch-adds of 1 on one word, all posted at once (most
 * wait for credit), under @faults: the word ends at P * K and the old
 * values are exactly 0 .. P*K-1, each once; the target executed P * K
 * requests and answered the rest from its table.
 */
static void a_fadd_run(const struct fw_fault_cfg *faults, u32 table, u32 width, u32 k,
		       struct fw_stats *target)
{
	const u32 p = T_ARRAY_SIZE(a_reqs), n = p * k;
	u64 *olds = calloc(n, sizeof(*olds));
	struct a_env e;
	u32 i, j, got = 0;

	a_setup(&e, 4, table, faults);
	for (i = 0; i < p; i++) {
		if (!sim_attached(e.s, a_reqs[i].node, a_reqs[i].port))
			assert_int_equal(sim_attach(e.s, a_reqs[i].node, a_reqs[i].port), 0);
		for (j = 0; j < k; j++) {
			struct nicoff_cmd c = t_atomic(NICOFF_OP_FETCH_ADD, i * k + j, 1, 2, e.rkey,
						       64, width, 1, 0);

			sim_post(e.s, a_reqs[i].node, a_reqs[i].port, &c);
		}
	}
	while (got < n) {
		bool any = false;

		for (i = 0; i < p; i++) {
			struct nicoff_cqe q;

			while (sim_cq_pop(e.s, a_reqs[i].node, a_reqs[i].port, &q)) {
				assert_int_equal(q.status, 0);
				assert_int_equal(q.opcode, NICOFF_OP_FETCH_ADD);
				assert_true(q.tag / k == i);
				olds[got++] = q.result;
				any = true;
			}
		}
		if (!any)
			assert_true(sim_step(e.s));
	}
	if (width == 8)
		assert_int_equal(e.mem[8], n);
	else
		assert_int_equal(((u32 *)e.mem)[16], n);
	qsort(olds, n, sizeof(*olds), a_cmp_u64);
	for (i = 0; i < n; i++)
		assert_int_equal(olds[i], i);
	*target = a_stats(&e, 1);
	assert_int_equal(target->atomics, n);
	assert_int_equal(target->atomic_refused, 0);
	assert_true(target->atomic_table_peak <= sim_config(e.s)->fw.atomic_table);
	assert_true(target->atomic_table_peak <= 4 * fw_atomic_credit(sim_card(e.s, 1)));
	/* Once the requesters go quiet, they tell the target: nothing is left. */
	assert_true(sim_run_idle(e.s, sim_now(e.s) + 100 * T_SEC));
	assert_int_equal(a_stats(&e, 1).atomic_table_live, 0);
	free(olds);
	a_teardown(&e);
}

static void test_exactly_once_faults(void **state)
{
	struct fw_fault_cfg f = { .drop_ppm = 100000, .dup_ppm = 50000, .reorder_ppm = 50000,
				  .corrupt_ppm = 10000, .delay_ns = 30000 };
	struct fw_stats st;

	(void)state;
	a_fadd_run(&f, 0, 8, 300, &st);
	assert_true(st.atomic_replays > 0);
	a_fadd_run(&f, 8, 4, 100, &st);	/* credit 2: nearly everything waits */
	assert_true(st.atomic_replays > 0);
	assert_true(st.atomic_table_peak <= 8);
}

/* Half the packets duplicated: many duplicates, none executed twice. */
static void test_duplicates_replayed(void **state)
{
	struct fw_fault_cfg f = { .dup_ppm = 500000, .reorder_ppm = 100000, .delay_ns = 5000 };
	struct fw_stats st;

	(void)state;
	a_fadd_run(&f, 0, 8, 200, &st);
	assert_true(st.atomic_replays > 200);
}

/* Commands beyond the credit wait on the card; none fails, the table holds <= credit. */
static void test_credit_queue(void **state)
{
	const u32 n = 40;
	struct a_env e;
	u64 olds[40];
	u32 i;

	(void)state;
	a_setup(&e, 2, 4, NULL);
	assert_int_equal(fw_atomic_credit(sim_card(e.s, 0)), 2);
	assert_int_equal(sim_attach(e.s, 0, 1), 0);
	for (i = 0; i < n; i++) {
		struct nicoff_cmd c = t_atomic(NICOFF_OP_FETCH_ADD, i, 1, 2, e.rkey, 0, 8, 1, 0);

		sim_post(e.s, 0, 1, &c);
	}
	for (i = 0; i < n; i++) {
		struct nicoff_cqe q = t_cqe(e.s, 0, 1, sim_now(e.s) + T_SEC);

		assert_int_equal(q.status, 0);
		/* One requester, one target, no faults: in command order. */
		assert_int_equal(q.tag, i);
		olds[i] = q.result;
	}
	for (i = 0; i < n; i++)
		assert_int_equal(olds[i], i);
	assert_int_equal(e.mem[0], n);
	assert_int_equal(a_stats(&e, 1).atomic_table_peak, 2);
	assert_int_equal(a_stats(&e, 1).atomic_refused, 0);
	a_teardown(&e);
}

/* Replies retire once the requester has seen them: by its next request or its ACK. */
static void test_retirement(void **state)
{
	struct a_env e;
	struct nicoff_cmd c;

	(void)state;
	a_setup(&e, 2, 0, NULL);
	assert_int_equal(a_op(&e, NICOFF_OP_FETCH_ADD, 0, 8, 1, 0), 0);
	/* Right after the reply the entry is live: the ACK is ack_delay_ns away. */
	assert_int_equal(a_stats(&e, 1).atomic_table_live, 1);
	assert_true(sim_run_idle(e.s, sim_now(e.s) + T_SEC));
	assert_int_equal(a_stats(&e, 1).atomic_table_live, 0);

	/* Back to back: each request retires the previous reply. */
	assert_int_equal(a_op(&e, NICOFF_OP_FETCH_ADD, 0, 8, 1, 0), 1);
	c = t_atomic(NICOFF_OP_FETCH_ADD, 11, 1, 2, e.rkey, 0, 8, 1, 0);
	sim_post(e.s, 0, 1, &c);
	assert_int_equal(t_cqe(e.s, 0, 1, sim_now(e.s) + T_SEC).result, 2);
	assert_int_equal(a_stats(&e, 1).atomic_table_live, 1);
	assert_true(sim_run_idle(e.s, sim_now(e.s) + T_SEC));
	assert_int_equal(a_stats(&e, 1).atomic_table_live, 0);
	assert_int_equal(a_stats(&e, 1).atomic_table_peak, 1);
	a_teardown(&e);
}

/* A crafted request from node 0 port 1 to node 1 port 2: FETCH_ADD 8 bytes at 0. */
static void a_inject(struct a_env *e, u8 type, u32 epoch, u32 seq, u32 mark, u64 operand,
		     u32 len)
{
	u8 flags = type == FW_PKT_ATOMIC_ACK ? FW_PKT_F_ACKREQ : 0;
	struct fw_pkt *pkt = t_pkt(e->s, type, flags, len);
	struct fw_atomic_body b;

	pkt->hdr.epoch = epoch;
	pkt->hdr.seq = seq;
	pkt->hdr.ack = mark;
	pkt->hdr.rkey = e->rkey;
	memset(&b, 0, sizeof(b));
	b.opcode = NICOFF_OP_FETCH_ADD;
	b.width = 8;
	b.operand = operand;
	memcpy(pkt->payload, &b, fw_min_u32(len, sizeof(b)));
	t_pkt_send(e->s, pkt);
}

static void a_req(struct a_env *e, u32 epoch, u32 seq, u32 mark, u64 operand)
{
	a_inject(e, FW_PKT_ATOMIC_REQ, epoch, seq, mark, operand, sizeof(struct fw_atomic_body));
}

static void a_expect(struct a_env *e, u64 word, u64 executed, u64 replays, u64 refused,
		     u64 live)
{
	struct fw_stats st = a_stats(e, 1);

	assert_int_equal(e->mem[0], word);
	assert_int_equal(st.atomics, executed);
	assert_int_equal(st.atomic_replays, replays);
	assert_int_equal(st.atomic_refused, refused);
	assert_int_equal(st.atomic_table_live, live);
	assert_true(st.atomic_table_peak <= fw_atomic_credit(sim_card(e->s, 1)));
}

static u64 a_rand(u64 *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 2685821657736338717ull;
}

/* Whatever a requester sends, the table keeps <= credit entries for it. */
static void test_hostile_requester(void **state)
{
	u64 rng = 12345, executed, word;
	struct a_env e;
	u32 i;

	(void)state;
	a_setup(&e, 2, 8, NULL);	/* credit 4 */
	assert_int_equal(fw_atomic_credit(sim_card(e.s, 1)), 4);
	for (i = 0; i < 4; i++)
		a_req(&e, 7, i, 0, 1);
	a_expect(&e, 4, 4, 0, 0, 4);
	a_req(&e, 7, 4, 0, 1);		/* beyond the window */
	a_req(&e, 7, 100, 0, 1);
	a_req(&e, 7, 0x7fffffffu, 0, 1);
	a_expect(&e, 4, 4, 0, 3, 4);
	a_req(&e, 7, 2, 0, 1000);	/* duplicates: answered, not executed */
	a_req(&e, 7, 0, 0, 1000);
	a_expect(&e, 4, 4, 2, 3, 4);
	a_req(&e, 7, 4, 2, 10);		/* mark 2: 0 and 1 retire, 4 fits */
	a_expect(&e, 14, 5, 2, 3, 3);
	a_req(&e, 7, 1, 2, 1000);	/* below the mark: stale, dropped */
	a_req(&e, 7, 0, 0, 1000);
	assert_int_equal(a_stats(&e, 1).atomic_stale, 2);
	a_req(&e, 7, 5, 2, 1);
	a_req(&e, 7, 6, 2, 1);		/* window [2, 6) full */
	a_expect(&e, 15, 6, 2, 4, 4);
	a_inject(&e, FW_PKT_ATOMIC_ACK, 7, 0, 6, 0, 0);
	a_expect(&e, 15, 6, 2, 4, 0);
	a_inject(&e, FW_PKT_ATOMIC_REQ, 7, 6, 6, 1, 10);	/* malformed: ignored */
	a_expect(&e, 15, 6, 2, 4, 0);
	a_req(&e, 8, 0, 0, 1);		/* a new card: numbering starts over */
	a_req(&e, 7, 7, 6, 1);		/* the old one is stale */
	a_expect(&e, 16, 7, 2, 4, 1);
	assert_int_equal(a_stats(&e, 1).atomic_stale, 3);

	/* Garbage: random sequence numbers, marks and epochs. */
	executed = 7;
	word = 16;
	for (i = 0; i < 3000; i++) {
		u32 r = (u32)(a_rand(&rng) >> 7);
		u32 epoch = 8 + (r & 1) * (r & 2);
		u32 seq = (r >> 2) & 15, mark = (r >> 6) & 15;
		struct fw_stats before = a_stats(&e, 1), after;

		if (r & 0x80000)
			seq = r >> 3;
		a_req(&e, epoch, seq, mark, 1);
		after = a_stats(&e, 1);
		executed += after.atomics - before.atomics;
		word += after.atomics - before.atomics;
		assert_true(after.atomic_table_live <= 4);
		assert_true(after.atomics - before.atomics <= 1);
		assert_int_equal(e.mem[0], word);
	}
	assert_int_equal(a_stats(&e, 1).atomics, executed);
	assert_true(a_stats(&e, 1).atomic_table_peak <= 4);
	assert_true(a_stats(&e, 1).atomic_refused > 4);
	a_teardown(&e);
}

/* A dead target: -ETIMEDOUT after the retries; a closing port completes nothing. */
static void test_timeout_and_detach(void **state)
{
	struct a_env e;
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	u32 i;

	(void)state;
	a_setup(&e, 2, 8, NULL);
	sim_set_dead(e.s, 1, true);
	c = t_atomic(NICOFF_OP_FETCH_ADD, 5, 1, 2, e.rkey, 0, 8, 1, 0);
	q = a_run(&e, 0, 1, &c);
	assert_int_equal(q.status, -ETIMEDOUT);
	assert_int_equal(a_stats(&e, 0).atomic_timeouts, 1);
	assert_int_equal(a_stats(&e, 0).atomic_retransmits,
			 sim_config(e.s)->fw.max_retries);

	/* In flight and waiting for credit, then the port closes. */
	for (i = 0; i < 10; i++) {
		c = t_atomic(NICOFF_OP_FETCH_ADD, i, 1, 2, e.rkey, 0, 8, 1, 0);
		sim_post(e.s, 0, 1, &c);
	}
	sim_run_until(e.s, sim_now(e.s) + 100000);
	sim_detach(e.s, 0, 1);
	sim_set_dead(e.s, 1, false);
	assert_true(sim_run_idle(e.s, sim_now(e.s) + 10 * T_SEC));
	assert_int_equal(e.mem[0], 0);

	/* The card goes on: another port's atomics work. */
	c = t_atomic(NICOFF_OP_FETCH_ADD, 6, 1, 2, e.rkey, 0, 8, 1, 0);
	q = a_run(&e, 0, 4, &c);
	assert_int_equal(q.status, 0);
	assert_int_equal(e.mem[0], 1);
	a_teardown(&e);
}

/*
 * Swap chain and CAS counter, several requesters under faults.  Swaps of
 * unique values: every value written comes back exactly once as an old
 * value, except the final one, and the initial value comes back once.
 * CAS increments: each success is one increment, so the successes add up
 * to the final value.
 */
static void test_swap_cas_histories(void **state)
{
	struct fw_fault_cfg f = { .drop_ppm = 100000, .dup_ppm = 50000, .reorder_ppm = 50000,
				  .delay_ns = 30000 };
	const u32 p = T_ARRAY_SIZE(a_reqs), k = 100;
	u32 cur[T_ARRAY_SIZE(a_reqs)], left[T_ARRAY_SIZE(a_reqs)];
	u64 swaps = 0, wins = 0, seen_init = 0;
	u8 *seen = calloc(p * k + 1, 1);
	struct a_env e;
	u32 i, busy;

	(void)state;
	a_setup(&e, 4, 0, &f);
	e.mem[1] = 0;			/* swap word: values 1 .. p*k, initial 0 */
	((u32 *)e.mem)[4] = 0;		/* CAS word */
	for (i = 0; i < p; i++) {
		struct nicoff_cmd c;
		u32 j;

		if (!sim_attached(e.s, a_reqs[i].node, a_reqs[i].port))
			assert_int_equal(sim_attach(e.s, a_reqs[i].node, a_reqs[i].port), 0);
		for (j = 0; j < k; j++) {
			c = t_atomic(NICOFF_OP_FETCH_WRITE, 1u << 31, 1, 2, e.rkey, 8, 8,
				     1 + i * k + j, 0);
			sim_post(e.s, a_reqs[i].node, a_reqs[i].port, &c);
		}
		cur[i] = 0;
		left[i] = k;
		c = t_atomic(NICOFF_OP_COMPARE_SWAP, 0, 1, 2, e.rkey, 16, 4, 1, 0);
		sim_post(e.s, a_reqs[i].node, a_reqs[i].port, &c);
	}
	for (busy = p; busy || swaps < p * k;) {
		bool any = false;

		for (i = 0; i < p; i++) {
			struct nicoff_cqe q;

			while (sim_cq_pop(e.s, a_reqs[i].node, a_reqs[i].port, &q)) {
				struct nicoff_cmd c;

				any = true;
				assert_int_equal(q.status, 0);
				if (q.opcode == NICOFF_OP_FETCH_WRITE) {
					assert_true(q.result <= p * k);
					if (q.result)
						assert_int_equal(seen[q.result]++, 0);
					else
						seen_init++;
					swaps++;
					continue;
				}
				assert_int_equal(q.opcode, NICOFF_OP_COMPARE_SWAP);
				if (q.result == cur[i]) {
					wins++;
					left[i]--;
				}
				cur[i] = q.result == cur[i] ? cur[i] + 1 : (u32)q.result;
				if (!left[i]) {
					busy--;
					continue;
				}
				c = t_atomic(NICOFF_OP_COMPARE_SWAP, 0, 1, 2, e.rkey, 16, 4,
					     cur[i] + 1, cur[i]);
				sim_post(e.s, a_reqs[i].node, a_reqs[i].port, &c);
			}
		}
		if (!any)
			assert_true(sim_step(e.s));
	}
	assert_int_equal(seen_init, 1);
	assert_true(e.mem[1] >= 1 && e.mem[1] <= p * k);
	assert_int_equal(seen[e.mem[1]], 0);
	for (i = 1; i <= p * k; i++)
		if (i != e.mem[1])
			assert_int_equal(seen[i], 1);
	assert_int_equal(wins, p * k);
	assert_int_equal(((u32 *)e.mem)[4], p * k);
	assert_true(a_stats(&e, 1).atomic_replays > 0);
	free(seen);
	a_teardown(&e);
}

/*
 * Ports of one requester card come and go with atomics queued and in
 * flight while another port of the card keeps going: the shared stream's
 * mark moves past what the closed ports left, so the survivor's atomics
 * all complete (none is taken for stale), and the word counts exactly
 * what was executed.
 */
static void test_port_churn(void **state)
{
	struct fw_fault_cfg f = { .drop_ppm = 50000, .dup_ppm = 50000, .reorder_ppm = 50000,
				  .delay_ns = 30000 };
	const u32 rounds = 60, survivor_ops = 400;
	u32 r, done = 0, posted = 0;
	struct a_env e;

	(void)state;
	a_setup(&e, 2, 8, &f);	/* credit 4 */
	assert_int_equal(sim_attach(e.s, 0, 9), 0);
	for (r = 0; r < rounds || done < survivor_ops; r++) {
		u32 port = 1 + r % 4, i;
		struct nicoff_cqe q;

		if (r < rounds) {
			if (!sim_attached(e.s, 0, port))
				assert_int_equal(sim_attach(e.s, 0, port), 0);
			for (i = 0; i < 1 + r % 7; i++) {
				struct nicoff_cmd c;

				c = t_atomic(NICOFF_OP_FETCH_ADD, i, 1, 2, e.rkey, 8, 8, 1, 0);
				sim_post(e.s, 0, port, &c);
			}
		}
		while (posted < survivor_ops && posted - done < 3) {
			struct nicoff_cmd c = t_atomic(NICOFF_OP_FETCH_ADD, posted++, 1, 2, e.rkey,
						       0, 8, 1, 0);

			sim_post(e.s, 0, 9, &c);
		}
		sim_run_until(e.s, sim_now(e.s) + 5000 + (r % 5) * 7000);
		while (sim_cq_pop(e.s, 0, 9, &q)) {
			assert_int_equal(q.status, 0);
			done++;
		}
		if (r < rounds && r % 3 != 2)
			sim_detach(e.s, 0, port);	/* whatever it still has goes */
		if (r >= rounds && done < survivor_ops)
			assert_true(sim_step(e.s) || done == posted);
	}
	assert_true(sim_run_idle(e.s, sim_now(e.s) + 10 * T_SEC));
	assert_int_equal(e.mem[0], survivor_ops);
	assert_int_equal(a_stats(&e, 1).atomics, e.mem[0] + e.mem[1]);
	assert_int_equal(a_stats(&e, 0).atomic_timeouts, 0);
	assert_int_equal(a_stats(&e, 1).atomic_refused, 0);
	a_teardown(&e);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_operations),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_exactly_once_faults),
		cmocka_unit_test(test_duplicates_replayed),
		cmocka_unit_test(test_credit_queue),
		cmocka_unit_test(test_retirement),
		cmocka_unit_test(test_hostile_requester),
		cmocka_unit_test(test_timeout_and_detach),
		cmocka_unit_test(test_swap_cas_histories),
		cmocka_unit_test(test_port_churn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
