// SPDX-License-Identifier: GPL-2.0
/*
 * Remote atomics (Documentation/atomics.md) through the module, against the
 * raw ABI.  The target is this process: a port on card 1 and its words;
 * requesters are forked children with ports on cards 0, 2 and 3.
 *
 * fetch_add_under_faults
 *	P processes x K fetch-adds on one 64-bit word and K on one 32-bit word
 *	under 10% drop + 5% duplicate + 5% reorder: the words end at exactly
 *	P*K, the old values of the 64-bit word are 0 .. P*K-1 each once, the
 *	target executed exactly P*K*2 requests and answered the duplicates
 *	from its table; meanwhile this process adds to a third word with its
 *	own CPU atomics while the children add to it through their cards: no
 *	update is lost (the atomicity domain)
 * swap_cas_linearizable
 *	under the same faults, histories of swaps of unique values and of
 *	CAS increments, with the time each was posted and seen, checked to be
 *	linearizable: swaps form one chain from the initial value whose order
 *	respects real time; CAS successes form the chain 0, 1, 2 ... in real
 *	time order and every failed CAS returned a value the word held during
 *	its interval
 * credit_never_overflows
 *	three requesters post thousands of atomics at once: all complete, none
 *	is refused, the target never holds more than a credit of replies per
 *	requesting card, and once they are idle the table empties
 * bad_input
 *	misaligned word (alignment is the process's address, not the offset),
 *	out of bounds, no REMOTE_ATOMIC right, wrong key, unknown card, unknown
 *	port, bad width or operand: an error completion, nothing executed, and
 *	REMOTE_ACCESS_ERROR on the target port for the refusals it made
 * requester_killed
 *	a requester killed with thousands of atomics in flight: nothing leaks,
 *	no request is executed twice, the card serves the next requester
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "nicoff_atomic_util.h"

#define TARGET_CARD	1
#define MEM_LEN		8192

/* The target's words (offsets in its region). */
#define OFF_FADD64	0
#define OFF_FADD32	64
#define OFF_MIXED	128
#define OFF_SWAP	192
#define OFF_CAS		256
#define OFF_CREDIT	320

static const uint32_t req_cards[] = { 0, 2, 3, 0 };
#define NREQ		(sizeof(req_cards) / sizeof(req_cards[0]))

FIXTURE(atomic) {
	struct nt_port target;
	uint8_t *mem;		/* registered REMOTE_ATOMIC on the target port */
	uint32_t handle, rkey;
	uint64_t *shared;	/* MAP_SHARED scratch the children report into */
	size_t shared_len;
	long long pinned0;
};

FIXTURE_SETUP(atomic)
{
	struct nicoff_reg_mr r;

	ASSERT_EQ(0, at_faults_clear());
	self->pinned0 = nt_pinned_pages();
	ASSERT_EQ(0, nt_port_open(&self->target, TARGET_CARD, NICOFF_PORT_ANY, 64, 64));
	self->mem = aligned_alloc(4096, MEM_LEN);
	ASSERT_NE(NULL, self->mem);
	memset(self->mem, 0, MEM_LEN);
	memset(&r, 0, sizeof(r));
	r.addr = (uintptr_t)self->mem;
	r.length = MEM_LEN;
	r.access = NICOFF_ACCESS_REMOTE_ATOMIC | NICOFF_ACCESS_REMOTE_READ;
	ASSERT_EQ(0, nt_ioctl(self->target.fd, NICOFF_IOC_REG_MR, &r));
	self->handle = r.handle;
	self->rkey = r.rkey;
	self->shared_len = 64 << 20;
	self->shared = mmap(NULL, self->shared_len, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->shared);
}

FIXTURE_TEARDOWN(atomic)
{
	EXPECT_EQ(0, at_faults_clear());
	nt_port_close(&self->target);
	free(self->mem);
	munmap(self->shared, self->shared_len);
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 5000));
}

static volatile uint64_t *word64(FIXTURE_DATA(atomic) *self, uint64_t off)
{
	return (volatile uint64_t *)(self->mem + off);
}

static volatile uint32_t *word32(FIXTURE_DATA(atomic) *self, uint64_t off)
{
	return (volatile uint32_t *)(self->mem + off);
}

/* ------------------------------------------------------ fetch-add runs -- */

#define FADD_K		400
#define MIXED_LOCAL	20000

struct fadd_arg {
	FIXTURE_DATA(atomic) *self;
	uint32_t k;
};

/* Child i: K adds on each word, 8 in flight; old values to shared[i * 3K ..]. */
static int fadd_child(void *argp, int i)
{
	struct fadd_arg *a = argp;
	FIXTURE_DATA(atomic) *self = a->self;
	uint32_t k = a->k, n = 3 * k, j;
	struct nicoff_cmd *cmds = calloc(n, sizeof(*cmds));
	struct nicoff_cqe *out = calloc(n, sizeof(*out));
	struct nt_port p;

	if (!cmds || !out || nt_port_open(&p, req_cards[i], NICOFF_PORT_ANY, 256, 256))
		return 2;
	for (j = 0; j < k; j++) {
		nicoff_prep_fetch_add(&cmds[3 * j], TARGET_CARD, self->target.po.port, self->rkey,
				      OFF_FADD64, 8, 1, 3 * j);
		nicoff_prep_fetch_add(&cmds[3 * j + 1], TARGET_CARD, self->target.po.port,
				      self->rkey, OFF_FADD32, 4, 1, 3 * j + 1);
		nicoff_prep_fetch_add(&cmds[3 * j + 2], TARGET_CARD, self->target.po.port,
				      self->rkey, OFF_MIXED, 8, 1, 3 * j + 2);
	}
	if (at_pipeline(&p, cmds, n, 8, out, NULL, NULL, 60000))
		return 3;
	for (j = 0; j < n; j++) {
		if (out[j].status || out[j].opcode != NICOFF_OP_FETCH_ADD)
			return 4;
		self->shared[i * n + j] = out[j].result;
	}
	nt_port_close(&p);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

TEST_F_TIMEOUT(atomic, fetch_add_under_faults, 400)
{
	const uint32_t k = FADD_K, n = NREQ * k;
	struct nt_card_stats before, after;
	uint64_t *olds64 = calloc(n, sizeof(uint64_t)), *olds32 = calloc(n, sizeof(uint64_t));
	struct fadd_arg arg = { self, k };
	pid_t pids[NREQ];
	uint32_t i, j;

	ASSERT_NE(NULL, olds64);
	ASSERT_NE(NULL, olds32);
	ASSERT_EQ(0, nt_card_stats(TARGET_CARD, &before));
	ASSERT_EQ(0, at_faults_set(AT_DROP_PPM, AT_DUP_PPM, AT_REORDER_PPM));
	for (i = 0; i < NREQ; i++)
		pids[i] = at_spawn(fadd_child, &arg, i);
	/* Meanwhile the target's own CPU atomics on the mixed word. */
	for (j = 0; j < MIXED_LOCAL; j++) {
		__atomic_fetch_add((uint64_t *)(self->mem + OFF_MIXED), 1, __ATOMIC_SEQ_CST);
		if (!(j & 255))
			sched_yield();
	}
	for (i = 0; i < NREQ; i++)
		EXPECT_EQ(0, at_reap(pids[i]));
	ASSERT_EQ(0, at_faults_clear());
	ASSERT_EQ(0, nt_card_stats(TARGET_CARD, &after));

	EXPECT_EQ(n, *word64(self, OFF_FADD64));
	EXPECT_EQ(n, *word32(self, OFF_FADD32));
	EXPECT_EQ((uint64_t)n + MIXED_LOCAL, *word64(self, OFF_MIXED));
	for (i = 0; i < NREQ; i++)
		for (j = 0; j < k; j++) {
			olds64[i * k + j] = self->shared[i * 3 * k + 3 * j];
			olds32[i * k + j] = self->shared[i * 3 * k + 3 * j + 1];
		}
	qsort(olds64, n, sizeof(uint64_t), cmp_u64);
	qsort(olds32, n, sizeof(uint64_t), cmp_u64);
	for (i = 0; i < n; i++) {
		ASSERT_EQ(i, olds64[i]);
		ASSERT_EQ(i, olds32[i]);
	}
	/* Exactly once: executed 3n times, every duplicate answered from the table. */
	EXPECT_EQ(3ull * n, after.v[NICOFF_NL_STAT_ATOMICS] - before.v[NICOFF_NL_STAT_ATOMICS]);
	EXPECT_LT(0, after.v[NICOFF_NL_STAT_ATOMIC_REPLAYS] -
		     before.v[NICOFF_NL_STAT_ATOMIC_REPLAYS]);
	EXPECT_EQ(0, after.v[NICOFF_NL_STAT_ATOMIC_REFUSED] - before.v[NICOFF_NL_STAT_ATOMIC_REFUSED]);
	TH_LOG("replays %llu, stale %llu, requester retransmits %llu",
	       (unsigned long long)(after.v[NICOFF_NL_STAT_ATOMIC_REPLAYS] -
				    before.v[NICOFF_NL_STAT_ATOMIC_REPLAYS]),
	       (unsigned long long)(after.v[NICOFF_NL_STAT_ATOMIC_STALE] -
				    before.v[NICOFF_NL_STAT_ATOMIC_STALE]),
	       (unsigned long long)nt_card_stat(0, NICOFF_NL_STAT_ATOMIC_RETRANSMITS));
	free(olds64);
	free(olds32);
}

/* ------------------------------------------------------ linearizability -- */

#define HIST_K		150
/* Per child in shared: K swaps, then up to 4K CAS ops, each {old, inv, resp, arg}. */
#define HIST_REC	4
#define HIST_SLOTS	(5 * HIST_K * HIST_REC + 8)

static uint64_t *hist(FIXTURE_DATA(atomic) *self, uint32_t child, uint32_t op)
{
	return &self->shared[(child * HIST_SLOTS) + op * HIST_REC];
}

/* Run c, recording in h the old value, when it was posted and seen, and v. */
static int hist_op(struct nt_port *p, const struct nicoff_cmd *c, uint64_t *h, uint64_t v)
{
	struct nicoff_cqe q;

	h[1] = nt_now_ns();
	if (nt_run_one(p, c, &q, 60000) || q.status)
		return -1;
	h[2] = nt_now_ns();
	h[0] = q.result;
	h[3] = v;
	return 0;
}

/* Child i: K swaps of unique values, then CAS increments until K successes. */
static int hist_child(void *argp, int i)
{
	FIXTURE_DATA(atomic) *self = argp;
	uint32_t port = self->target.po.port, j, cur = 0, wins = 0, ops = 0;
	struct nicoff_cmd c;
	struct nt_port p;

	if (nt_port_open(&p, req_cards[i], NICOFF_PORT_ANY, 64, 64))
		return 2;
	for (j = 0; j < HIST_K; j++) {
		uint64_t *h = hist(self, i, j), v = 1 + i * HIST_K + j;

		nicoff_prep_fetch_write(&c, TARGET_CARD, port, self->rkey, OFF_SWAP, 8, v, j);
		if (hist_op(&p, &c, h, v))
			return 3;
	}
	while (wins < HIST_K) {
		uint64_t *h = hist(self, i, HIST_K + ops);

		if (ops >= 4 * HIST_K)
			return 4;
		nicoff_prep_compare_swap(&c, TARGET_CARD, port, self->rkey, OFF_CAS, 4, cur,
					 cur + 1, ops);
		if (hist_op(&p, &c, h, cur))
			return 5;
		ops++;
		if (h[0] == cur) {
			wins++;
			cur++;
		} else {
			cur = h[0];
		}
	}
	/* How many CAS ops this child made. */
	self->shared[i * HIST_SLOTS + HIST_SLOTS - 1] = ops;
	nt_port_close(&p);
	return 0;
}

struct hop {
	uint64_t old, inv, resp, arg;
};

static int by_old(const void *a, const void *b)
{
	return cmp_u64(&((const struct hop *)a)->old, &((const struct hop *)b)->old);
}

/*
 * Swaps of unique values are linearizable iff their old values chain them
 * from the initial value to the final one, each value read once, and the
 * chain order respects real time: no operation later in the chain
 * responded before an earlier one was invoked.
 */
static int check_swaps(struct hop *ops, uint32_t n, uint64_t final)
{
	uint64_t *next = calloc(n + 1, sizeof(uint64_t)), v, min_resp;
	uint32_t *order = calloc(n, sizeof(uint32_t));
	uint32_t i, len = 0;
	int ret = 0;

	if (!next || !order)
		return -1;
	/* ops[i] wrote value arg, read old: chain old -> arg; values 1..n, initial 0. */
	for (i = 0; i <= n; i++)
		next[i] = ~0ull;
	for (i = 0; i < n; i++) {
		if (ops[i].old > n || next[ops[i].old] != ~0ull) {
			ret = 1;	/* a value read twice: some swap happened twice */
			goto out;
		}
		next[ops[i].old] = i;
	}
	for (v = 0; next[v] != ~0ull && len < n; v = ops[next[v]].arg)
		order[len++] = next[v];
	if (len != n || v != final) {
		ret = 2;
		goto out;
	}
	/* Real time: walking the chain backwards, nothing later responded before
	 * an earlier one was invoked.
	 */
	min_resp = ~0ull;
	for (i = n; i-- > 0;) {
		if (min_resp < ops[order[i]].inv) {
			ret = 3;
			goto out;
		}
		if (ops[order[i]].resp < min_resp)
			min_resp = ops[order[i]].resp;
	}
out:
	free(next);
	free(order);
	return ret;
}

/*
 * CAS increments: the successes (old == arg, the compare value) read 0, 1,
 * ... n-1 once each, in an order that respects real time; a failure that
 * read v must overlap the time the word held v: it responded after the
 * success that wrote v was invoked, and was invoked before the success
 * that overwrote v responded.
 */
static int check_cas(struct hop *ops, uint32_t nops, uint32_t n, uint64_t final)
{
	struct hop *wins = calloc(n, sizeof(*wins));
	uint32_t i, w = 0;
	uint64_t min_resp;
	int ret = 0;

	if (!wins)
		return -1;
	for (i = 0; i < nops; i++)
		if (ops[i].old == ops[i].arg) {
			if (w == n) {
				ret = 1;
				goto out;
			}
			wins[w++] = ops[i];
		}
	if (w != n || final != n) {
		ret = 2;
		goto out;
	}
	qsort(wins, n, sizeof(*wins), by_old);
	min_resp = ~0ull;
	for (i = n; i-- > 0;) {
		if (wins[i].old != i) {
			ret = 3;
			goto out;
		}
		if (min_resp < wins[i].inv) {
			ret = 4;
			goto out;
		}
		if (wins[i].resp < min_resp)
			min_resp = wins[i].resp;
	}
	for (i = 0; i < nops; i++) {
		uint64_t v = ops[i].old;

		if (ops[i].old == ops[i].arg)
			continue;
		if (v > n) {
			ret = 5;
			goto out;
		}
		/* Written by wins[v - 1] (v > 0), overwritten by wins[v] (v < n). */
		if (v > 0 && ops[i].resp < wins[v - 1].inv) {
			ret = 6;
			goto out;
		}
		if (v < n && wins[v].resp < ops[i].inv) {
			ret = 7;
			goto out;
		}
	}
out:
	free(wins);
	return ret;
}

TEST_F_TIMEOUT(atomic, swap_cas_linearizable, 400)
{
	const uint32_t n = NREQ * HIST_K;
	struct hop *swaps = calloc(n, sizeof(*swaps));
	struct hop *cas = calloc(NREQ * 4 * HIST_K, sizeof(*cas));
	uint32_t i, j, ncas = 0;
	pid_t pids[NREQ];

	ASSERT_NE(NULL, swaps);
	ASSERT_NE(NULL, cas);
	ASSERT_EQ(0, at_faults_set(AT_DROP_PPM, AT_DUP_PPM, AT_REORDER_PPM));
	for (i = 0; i < NREQ; i++)
		pids[i] = at_spawn(hist_child, self, i);
	for (i = 0; i < NREQ; i++)
		ASSERT_EQ(0, at_reap(pids[i]));
	ASSERT_EQ(0, at_faults_clear());
	for (i = 0; i < NREQ; i++) {
		uint64_t nc = self->shared[i * HIST_SLOTS + HIST_SLOTS - 1];

		for (j = 0; j < HIST_K; j++)
			memcpy(&swaps[i * HIST_K + j], hist(self, i, j), sizeof(struct hop));
		for (j = 0; j < nc; j++)
			memcpy(&cas[ncas++], hist(self, i, HIST_K + j), sizeof(struct hop));
	}
	EXPECT_EQ(0, check_swaps(swaps, n, *word64(self, OFF_SWAP)));
	EXPECT_EQ(0, check_cas(cas, ncas, n, *word32(self, OFF_CAS)));
	TH_LOG("%u swaps, %u CAS of which %u failed", n, ncas, ncas - n);
	free(swaps);
	free(cas);
}

/* ------------------------------------------------------------- credit -- */

#define FLOOD_N		3000

static int flood_child(void *argp, int i)
{
	FIXTURE_DATA(atomic) *self = argp;
	struct nicoff_cmd *cmds = calloc(FLOOD_N, sizeof(*cmds));
	struct nicoff_cqe *out = calloc(FLOOD_N, sizeof(*out));
	struct nt_port p;
	uint32_t j;

	if (!cmds || !out || nt_port_open(&p, req_cards[i], NICOFF_PORT_ANY, 4096, 4096))
		return 2;
	for (j = 0; j < FLOOD_N; j++)
		nicoff_prep_fetch_add(&cmds[j], TARGET_CARD, self->target.po.port, self->rkey,
				      OFF_CREDIT, 8, 1, j);
	/* Everything at once: far beyond the credit. */
	if (at_pipeline(&p, cmds, FLOOD_N, FLOOD_N, out, NULL, NULL, 60000))
		return 3;
	for (j = 0; j < FLOOD_N; j++)
		if (out[j].status)
			return 4;
	nt_port_close(&p);
	return 0;
}

TEST_F_TIMEOUT(atomic, credit_never_overflows, 300)
{
	struct nt_card_stats before, after;
	unsigned long table, nics, credit = 1;
	pid_t pids[3];
	uint32_t i;
	int tries;

	ASSERT_EQ(0, nt_param_get("atomic_table", &table));
	ASSERT_EQ(0, nt_param_get("nics", &nics));
	while (credit <= table / nics / 2)
		credit <<= 1;
	ASSERT_EQ(0, nt_card_stats(TARGET_CARD, &before));
	for (i = 0; i < 3; i++)
		pids[i] = at_spawn(flood_child, self, i);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, at_reap(pids[i]));
	EXPECT_EQ(3ull * FLOOD_N, *word64(self, OFF_CREDIT));
	ASSERT_EQ(0, nt_card_stats(TARGET_CARD, &after));
	EXPECT_EQ(0, after.v[NICOFF_NL_STAT_ATOMIC_REFUSED] - before.v[NICOFF_NL_STAT_ATOMIC_REFUSED]);
	/* Three requesting cards (0, 2, 3): a credit each at most. */
	EXPECT_GE(3 * credit, after.v[NICOFF_NL_STAT_ATOMIC_TABLE_PEAK]);
	EXPECT_GE(table, after.v[NICOFF_NL_STAT_ATOMIC_TABLE_PEAK]);
	TH_LOG("credit %lu, table peak %llu", credit,
	       (unsigned long long)after.v[NICOFF_NL_STAT_ATOMIC_TABLE_PEAK]);
	/* Idle requesters tell the target: the table empties. */
	for (tries = 0; tries < 100 && nt_card_stat(TARGET_CARD, NICOFF_NL_STAT_ATOMIC_TABLE_LIVE);
	     tries++)
		nt_sleep_ms(20);
	EXPECT_EQ(0, nt_card_stat(TARGET_CARD, NICOFF_NL_STAT_ATOMIC_TABLE_LIVE));
}

/* ---------------------------------------------------------- bad input -- */

TEST_F_TIMEOUT(atomic, bad_input, 120)
{
	struct nicoff_reg_mr r, rw;
	struct nicoff_cqe q, ev[64];
	struct nicoff_cmd c;
	struct nt_port p;
	uint32_t port = self->target.po.port, nics;
	uint64_t executed, seen = 0;
	struct nicoff_query qy;
	uint8_t *copy = malloc(MEM_LEN);
	unsigned int i;
	int got;

	ASSERT_EQ(0, nt_query(self->target.fd, &qy));
	nics = qy.num_cards;
	/* A region starting one byte into the buffer: offset 7 is aligned. */
	memset(&r, 0, sizeof(r));
	r.addr = (uintptr_t)self->mem + 4096 + 1;
	r.length = 1024;
	r.access = NICOFF_ACCESS_REMOTE_ATOMIC;
	ASSERT_EQ(0, nt_ioctl(self->target.fd, NICOFF_IOC_REG_MR, &r));
	memset(&rw, 0, sizeof(rw));
	rw.addr = (uintptr_t)self->mem + 6144;
	rw.length = 1024;
	rw.access = NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE;
	ASSERT_EQ(0, nt_ioctl(self->target.fd, NICOFF_IOC_REG_MR, &rw));
	ASSERT_EQ(0, nt_port_open(&p, 0, NICOFF_PORT_ANY, 64, 64));

	nt_fill_pattern(self->mem, MEM_LEN, 77);
	executed = nt_card_stat(TARGET_CARD, NICOFF_NL_STAT_ATOMICS);
	const struct {
		uint8_t op;
		uint32_t card, port, rkey;
		uint64_t off;
		uint32_t width;
		uint64_t operand, compare, reserved;
		int err;
		int remote;
	} cases[] = {
		{ NICOFF_OP_FETCH_ADD, 1, port, r.rkey, 0, 8, 1, 0, 0, -EINVAL, 1 },
		{ NICOFF_OP_FETCH_ADD, 1, port, r.rkey, 8, 8, 1, 0, 0, -EINVAL, 1 },
		{ NICOFF_OP_COMPARE_SWAP, 1, port, r.rkey, 1, 4, 1, 0, 0, -EINVAL, 1 },
		{ NICOFF_OP_FETCH_ADD, 1, port, r.rkey, 1023, 8, 1, 0, 0, -ERANGE, 1 },
		{ NICOFF_OP_FETCH_ADD, 1, port, r.rkey, ~7ull, 8, 1, 0, 0, -ERANGE, 1 },
		{ NICOFF_OP_FETCH_ADD, 1, port, rw.rkey, 0, 8, 1, 0, 0, -EACCES, 1 },
		{ NICOFF_OP_FETCH_WRITE, 1, port, r.rkey ^ 0x100000, 7, 8, 1, 0, 0, -ENOENT, 1 },
		{ NICOFF_OP_FETCH_ADD, nics, port, r.rkey, 7, 8, 1, 0, 0, -EINVAL, 0 },
		{ NICOFF_OP_FETCH_ADD, 1, port + 1, r.rkey, 7, 8, 1, 0, 0, -ECONNREFUSED, 0 },
		{ NICOFF_OP_FETCH_ADD, 1, port, r.rkey, 7, 2, 1, 0, 0, -EINVAL, 0 },
		{ NICOFF_OP_FETCH_ADD, 1, port, r.rkey, 3, 4, 1ull << 32, 0, 0, -EINVAL, 0 },
		{ NICOFF_OP_FETCH_ADD, 1, port, r.rkey, 7, 8, 1, 1, 0, -EINVAL, 0 },
		{ NICOFF_OP_COMPARE_SWAP, 1, port, r.rkey, 7, 8, 1, 0, 1, -EINVAL, 0 },
	};

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		nicoff_prep_atomic(&c, cases[i].op, cases[i].card, cases[i].port, cases[i].rkey,
				   cases[i].off, cases[i].width, cases[i].operand, cases[i].compare,
				   i);
		c.atomic.reserved = cases[i].reserved;
		ASSERT_EQ(0, nt_run_one(&p, &c, &q, 10000));
		EXPECT_EQ(i, q.tag);
		EXPECT_EQ(cases[i].err, q.status) TH_LOG("case %u", i);
		EXPECT_EQ(0, q.result);
		seen += cases[i].remote;
	}
	/* Nothing executed, nothing written. */
	EXPECT_EQ(executed, nt_card_stat(TARGET_CARD, NICOFF_NL_STAT_ATOMICS));
	ASSERT_NE(NULL, copy);
	nt_fill_pattern(copy, MEM_LEN, 77);
	EXPECT_EQ(0, memcmp(copy, self->mem, MEM_LEN));
	free(copy);
	/* The target port hears of the refusals it made (best effort: the last). */
	got = nt_wait_cqes(&self->target, ev, 1, 2000);
	ASSERT_EQ(1, got);
	EXPECT_EQ(NICOFF_OP_REMOTE_ACCESS_ERROR, ev[0].opcode);
	EXPECT_GE(seen, ev[0].result);
	EXPECT_EQ(0, ev[0].src_card);
	EXPECT_EQ(p.po.port, ev[0].src_port);

	/* And the aligned word at offset 7 works. */
	nicoff_prep_fetch_add(&c, 1, port, r.rkey, 7, 8, 5, 99);
	ASSERT_EQ(0, nt_run_one(&p, &c, &q, 10000));
	EXPECT_EQ(0, q.status);
	EXPECT_EQ(*(uint64_t *)(self->mem + 4096 + 8) - 5, q.result);
	nt_port_close(&p);
}

/* -------------------------------------------------------- killed child -- */

static int doomed_child(void *argp, int i)
{
	FIXTURE_DATA(atomic) *self = argp;
	struct nicoff_cmd c;
	struct nt_port p;
	uint32_t j;

	(void)i;
	if (nt_port_open(&p, 2, NICOFF_PORT_ANY, 4096, 4096))
		return 2;
	for (j = 0; j < 4000; j++) {
		nicoff_prep_fetch_add(&c, TARGET_CARD, self->target.po.port, self->rkey, OFF_CREDIT,
				      8, 1, j);
		nt_cmd_write(&p, &c);
	}
	nt_publish(&p);
	nt_doorbell(&p);
	self->shared[0] = 1;
	for (;;)
		pause();
	return 0;
}

TEST_F_TIMEOUT(atomic, requester_killed, 120)
{
	uint64_t before, after, executed;
	struct nicoff_cqe q;
	struct nicoff_cmd c;
	struct nt_port p;
	pid_t pid;
	int i;

	ASSERT_EQ(0, at_faults_set(AT_DROP_PPM, AT_DUP_PPM, AT_REORDER_PPM));
	before = nt_card_stat(TARGET_CARD, NICOFF_NL_STAT_ATOMICS);
	self->shared[0] = 0;
	pid = at_spawn(doomed_child, self, 0);
	for (i = 0; i < 5000 && !self->shared[0]; i++)
		nt_sleep_ms(1);
	nt_sleep_ms(20);
	kill(pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, at_reap(pid));
	ASSERT_EQ(0, at_faults_clear());
	/* What it left in flight settles: the word counts each executed once. */
	nt_sleep_ms(500);
	after = nt_card_stat(TARGET_CARD, NICOFF_NL_STAT_ATOMICS);
	executed = after - before;
	EXPECT_EQ(executed, *word64(self, OFF_CREDIT));
	EXPECT_GE(4000, executed);

	/* The card serves the next requester on the same card. */
	ASSERT_EQ(0, nt_port_open(&p, 2, NICOFF_PORT_ANY, 64, 64));
	nicoff_prep_fetch_add(&c, TARGET_CARD, self->target.po.port, self->rkey, OFF_CREDIT, 8, 1,
			      1);
	ASSERT_EQ(0, nt_run_one(&p, &c, &q, 10000));
	EXPECT_EQ(0, q.status);
	EXPECT_EQ(executed, q.result);
	nt_port_close(&p);
}

TEST_HARNESS_MAIN
