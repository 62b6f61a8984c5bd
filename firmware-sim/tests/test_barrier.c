// SPDX-License-Identifier: GPL-2.0
/*
 * Process groups and barriers run by the cards: every algorithm's
 * schedule, every algorithm on groups of 1 to a few hundred members with
 * members entering at random times, thousands of back-to-back barriers,
 * faults, members that die or are merely slow, auto selection, bad input.
 *
 * The barrier property is checked with a counter per barrier, as a shared
 * memory counter would be across processes: a member counts itself in when
 * it posts barrier k, and no member may see barrier k complete before the
 * count is the group's size.
 */
#include <stdlib.h>

#include "fwtest.h"
#include "barrier.h"

#define B_PORT		3u
#define B_GID		0x5eedu

static const u32 b_algs[] = {
	NICOFF_BARRIER_PAIRWISE, NICOFF_BARRIER_DISSEMINATION, NICOFF_BARRIER_TREE,
	NICOFF_BARRIER_CENTRAL, NICOFF_BARRIER_COMBINING, NICOFF_BARRIER_TOURNAMENT,
};

/* --------------------------------------------------------- schedules -- */

/*
 * Run the schedules of all @n members abstractly: messages carry the set
 * of members their sender has heard of (itself included), delivered in an
 * order the seed mixes.  Every member must finish, hearing of everyone;
 * every message must be expected, and expected once.
 */
static void b_sched_check(struct fw_card *card, u32 alg, u32 param, u32 n, u32 seed)
{
	struct fw_bsched **s = calloc(n, sizeof(*s));
	u32 *step = calloc(n, sizeof(*step)), *pos = calloc(n, sizeof(*pos));
	u64 *know = calloc(n, sizeof(*know)), *seen = calloc(n, sizeof(*seen));
	u32 (*got)[72] = calloc(n, sizeof(*got));
	struct { u32 from, to; u64 mask; } *q;
	u32 cap = 64 * 64 * 4, head = 0, tail = 0, i;
	u64 full = n == 64 ? ~0ull : (1ull << n) - 1;

	q = calloc(cap, sizeof(*q));
	for (i = 0; i < n; i++) {
		s[i] = fw_bsched_build(card, alg, param, i, n);
		assert_non_null(s[i]);
		assert_true(s[i]->nsteps < 72);
		know[i] = 1ull << i;
	}
	/* Members advance as far as they can: send on entering a step. */
	for (;;) {
		bool moved = false;

		for (i = 0; i < n; i++) {
			while (step[i] < s[i]->nsteps) {
				while (pos[i] < s[i]->nsend && s[i]->send[pos[i]].step == step[i]) {
					assert_true(tail - head < cap);
					q[tail % cap].from = i;
					q[tail % cap].to = s[i]->send[pos[i]].rank;
					q[tail % cap].mask = know[i];
					tail++;
					pos[i]++;
				}
				if (got[i][step[i]] < s[i]->need[step[i]])
					break;
				step[i]++;
				moved = true;
			}
		}
		if (head == tail && !moved)
			break;
		if (head != tail) {
			/* Deliver one, picked pseudo-randomly among the first few. */
			u32 k;
			u32 from, to;
			u64 mask;
			int slot;

			seed = seed * 1103515245u + 12345u;
			k = head + seed % fw_min_u32(4, tail - head);
			from = q[k % cap].from;
			to = q[k % cap].to;
			mask = q[k % cap].mask;
			q[k % cap] = q[head % cap];
			head++;
			assert_true(to < n);
			slot = fw_bsched_recv_slot(s[to], from);
			assert_true(slot >= 0);
			assert_false(seen[to] & (1ull << slot));
			seen[to] |= 1ull << slot;
			got[to][s[to]->recv[slot].step]++;
			know[to] |= mask;
		}
	}
	for (i = 0; i < n; i++) {
		assert_int_equal(step[i], s[i]->nsteps);
		if (n > 1)
			assert_true(know[i] == full);
		assert_true(s[i]->nrecv <= 64);
		assert_true(seen[i] == (s[i]->nrecv == 64 ? ~0ull : (1ull << s[i]->nrecv) - 1));
		fw_bsched_free(card, s[i]);
	}
	free(q);
	free(got);
	free(seen);
	free(know);
	free(pos);
	free(step);
	free(s);
}

static void test_schedules(void **state)
{
	static const u32 params[] = { 0, 2, 3, 4, 5, 8 };
	struct sim_cfg cfg;
	struct sim *s;
	u32 a, p, n, seed;

	(void)state;
	sim_cfg_default(&cfg, 1);
	s = sim_create(&cfg);
	for (a = 0; a < T_ARRAY_SIZE(b_algs); a++) {
		for (p = 0; p < T_ARRAY_SIZE(params); p++) {
			u32 param = params[p] ? params[p] : (b_algs[a] == NICOFF_BARRIER_TREE ?
					FW_BAR_TREE_DEGREE : FW_BAR_COMBINING_FANIN);

			if (params[p] && b_algs[a] != NICOFF_BARRIER_TREE &&
			    b_algs[a] != NICOFF_BARRIER_COMBINING)
				continue;
			for (n = 1; n <= 64; n++)
				for (seed = 1; seed <= 3; seed++)
					b_sched_check(sim_card(s, 0), b_algs[a], param, n, seed);
		}
	}
	t_finish(s);
}

/* Steps: dissemination ceil(log2 N), pairwise floor(log2 N) + 2 extra. */
static void test_step_counts(void **state)
{
	struct sim_cfg cfg;
	struct sim *s;
	u32 n, r;

	(void)state;
	sim_cfg_default(&cfg, 1);
	s = sim_create(&cfg);
	for (n = 2; n <= 40; n++) {
		u32 lg = 0, lf = 0;

		while ((1u << lg) < n)
			lg++;
		while ((2u << lf) <= n)
			lf++;
		for (r = 0; r < n; r++) {
			struct fw_bsched *d, *p;

			d = fw_bsched_build(sim_card(s, 0), NICOFF_BARRIER_DISSEMINATION, 0, r, n);
			p = fw_bsched_build(sim_card(s, 0), NICOFF_BARRIER_PAIRWISE, 0, r, n);
			assert_int_equal(d->nsteps, lg);
			assert_int_equal(d->nsend, lg);
			if (!(n & (n - 1)))
				assert_int_equal(p->nsteps, lf);
			else if (r < n - (1u << lf))
				assert_int_equal(p->nsteps, lf + 2);
			fw_bsched_free(sim_card(s, 0), d);
			fw_bsched_free(sim_card(s, 0), p);
		}
	}
	t_finish(s);
}

/* ------------------------------------------------------------ driver -- */

enum b_op { B_NONE, B_CREATE, B_BARRIER, B_DESTROY, B_DIE, B_CARD_DIES };

struct b_node {
	u64 post_at;		/* when the host posts op, FW_NEVER if nothing */
	u8 op;
	u32 done;		/* barriers completed */
	s32 status;		/* first error completion */
	u64 fail_t;		/* when it came */
	bool created;
	bool destroyed;
	bool gone;
};

struct b_run {
	struct sim *s;
	u32 n;
	u32 alg;
	u32 param;
	u32 barriers;		/* each member runs this many */
	u64 skew_ns;		/* members enter up to this late */
	u64 slow_ns;		/* one member in 16 (by hash) enters this late */
	u32 seed;
	bool destroy;		/* members destroy the group when done */
	/* A member that dies after this many barriers (n: none). */
	u32 victim;
	u32 victim_after;
	bool victim_card;	/* its card dies, not just its process */
	u64 death_t;

	struct nicoff_member *tab;
	u32 *mr;
	struct b_node *nd;
	u32 *entered;		/* per barrier number: members that entered it */
	u64 result;		/* creation result, the same everywhere */
	u32 creates;
	u32 finished;
	u32 failed;
	u32 bad;		/* barrier property violations */
	u32 bad_result;
};

static u64 b_hash(u32 seed, u32 a, u32 b)
{
	u64 x = (u64)seed * 0x9e3779b97f4a7c15ull ^ ((u64)a << 32 | b);

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return x;
}

static u64 b_delay(struct b_run *b, u32 node, u32 k)
{
	u64 h = b_hash(b->seed, node, k);
	u64 d = b->skew_ns ? h % (b->skew_ns + 1) : 0;

	if (b->slow_ns && (h >> 40) % 16 == 0)
		d += b->slow_ns;
	return d;
}

static void b_schedule(struct b_run *b, u32 i, u8 op, u64 t)
{
	b->nd[i].op = op;
	b->nd[i].post_at = t;
}

static void b_cqe(void *arg, u32 node, u32 port, const struct nicoff_cqe *cqe, u64 t)
{
	struct b_run *b = arg;
	struct b_node *nd = &b->nd[node];

	assert_int_equal(port, B_PORT);
	if (cqe->status) {
		assert_int_equal(nd->status, 0);
		nd->status = cqe->status;
		nd->fail_t = t;
		b->failed++;
		return;
	}
	switch (cqe->opcode) {
	case NICOFF_OP_GROUP_CREATE:
		if (!b->creates++)
			b->result = cqe->result;
		else if (cqe->result != b->result)
			b->bad_result++;
		nd->created = true;
		if (b->barriers)
			b_schedule(b, node, B_BARRIER, t + b_delay(b, node, 0));
		else
			b->finished++;
		break;
	case NICOFF_OP_BARRIER:
		nd->done++;
		if (cqe->result != nd->done)
			b->bad_result++;
		if (b->entered[nd->done] != b->n)
			b->bad++;
		if (node == b->victim && nd->done == b->victim_after) {
			b_schedule(b, node, b->victim_card ? B_CARD_DIES : B_DIE, t + 1000);
		} else if (nd->done < b->barriers) {
			b_schedule(b, node, B_BARRIER, t + b_delay(b, node, nd->done));
		} else {
			b->finished++;
			if (b->destroy)
				b_schedule(b, node, B_DESTROY, t);
		}
		break;
	case NICOFF_OP_GROUP_DESTROY:
		nd->destroyed = true;
		break;
	default:
		fail_msg("unexpected completion opcode %u", cqe->opcode);
	}
}

static void b_post(struct b_run *b, u32 i)
{
	struct b_node *nd = &b->nd[i];
	struct nicoff_cmd c;
	u8 op = nd->op;

	nd->op = B_NONE;
	nd->post_at = FW_NEVER;
	switch (op) {
	case B_CREATE:
		c = t_group(NICOFF_OP_GROUP_CREATE, 1, B_GID, i, b->n, b->mr[i], b->alg, b->param);
		break;
	case B_BARRIER:
		b->entered[nd->done + 1]++;
		c = t_group(NICOFF_OP_BARRIER, 2, B_GID, 0, 0, 0, 0, 0);
		break;
	case B_DESTROY:
		c = t_group(NICOFF_OP_GROUP_DESTROY, 3, B_GID, 0, 0, 0, 0, 0);
		break;
	case B_DIE:
		nd->gone = true;
		b->death_t = sim_now(b->s);
		sim_detach(b->s, i, B_PORT);
		return;
	default:
		nd->gone = true;
		b->death_t = sim_now(b->s);
		sim_set_dead(b->s, i, true);
		return;
	}
	sim_post(b->s, i, B_PORT, &c);
}

static struct b_run *b_new(u32 n, const struct sim_cfg *cfg_in)
{
	struct b_run *b = calloc(1, sizeof(*b));
	struct sim_cfg cfg;
	u32 i;

	if (cfg_in)
		cfg = *cfg_in;
	else
		sim_cfg_default(&cfg, n);
	cfg.nodes = n;
	b->s = sim_create(&cfg);
	assert_non_null(b->s);
	b->n = n;
	b->victim = n;
	b->seed = 1;
	b->tab = calloc(n, sizeof(*b->tab));
	b->mr = calloc(n, sizeof(*b->mr));
	b->nd = calloc(n, sizeof(*b->nd));
	for (i = 0; i < n; i++) {
		b->tab[i].card = i;
		b->tab[i].port = B_PORT;
		b->nd[i].post_at = FW_NEVER;
	}
	for (i = 0; i < n; i++)
		b->mr[i] = t_port_mr(b->s, i, B_PORT, b->tab, n * sizeof(*b->tab), 0, NULL);
	return b;
}

/* Create the group everywhere (members start up to @start_skew apart), run. */
static void b_go(struct b_run *b, u64 start_skew, u64 limit)
{
	struct sim_hooks hooks = { b_cqe, b };
	u32 i;

	b->entered = calloc(b->barriers + 2, sizeof(*b->entered));
	sim_set_hooks(b->s, &hooks);
	for (i = 0; i < b->n; i++)
		b_schedule(b, i, B_CREATE, sim_now(b->s) +
			   (start_skew ? b_hash(b->seed, i, 99999) % start_skew : 0));
	for (;;) {
		u64 tp = FW_NEVER;

		for (i = 0; i < b->n; i++)
			tp = fw_min_u64(tp, b->nd[i].post_at);
		if (tp != FW_NEVER && tp <= sim_next_time(b->s)) {
			sim_run_until(b->s, tp);
			for (i = 0; i < b->n; i++)
				if (b->nd[i].post_at <= sim_now(b->s))
					b_post(b, i);
			continue;
		}
		if (!sim_step(b->s))
			break;
		if (sim_now(b->s) > limit)
			fail_msg("still running at %llu ns: %u of %u finished, %u failed",
				 (unsigned long long)sim_now(b->s), b->finished, b->n, b->failed);
	}
	sim_set_hooks(b->s, NULL);
}

static void b_free(struct b_run *b)
{
	t_finish(b->s);
	free(b->entered);
	free(b->nd);
	free(b->mr);
	free(b->tab);
	free(b);
}

/* Run @barriers barriers of @alg on @n members; check everything. */
static void b_check_run(u32 n, u32 alg, u32 param, u32 barriers, u64 skew, u32 seed,
			const struct sim_cfg *cfg)
{
	struct b_run *b = b_new(n, cfg);
	u32 i;

	b->alg = alg;
	b->param = param;
	b->barriers = barriers;
	b->skew_ns = skew;
	b->seed = seed;
	b->destroy = true;
	b_go(b, skew * 10, 1000 * T_SEC);
	assert_int_equal(b->failed, 0);
	assert_int_equal(b->bad, 0);
	assert_int_equal(b->bad_result, 0);
	assert_int_equal(b->finished, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(b->nd[i].done, barriers);
		assert_true(b->nd[i].destroyed);
	}
	if (alg != NICOFF_BARRIER_AUTO && alg != NICOFF_BARRIER_DEFAULT)
		assert_int_equal((u32)b->result, alg);
	else
		assert_true((u32)b->result >= 1 && (u32)b->result < NICOFF_BARRIER_MAX);
	b_free(b);
}

/* ------------------------------------------------------------- tests -- */

static void test_every_alg_small(void **state)
{
	static const u32 ns[] = { 1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 64 };
	u32 a, i;

	(void)state;
	for (a = 0; a < T_ARRAY_SIZE(b_algs); a++)
		for (i = 0; i < T_ARRAY_SIZE(ns); i++)
			b_check_run(ns[i], b_algs[a], 0, 100, 5000, a * 100 + i, NULL);
}

static void test_params(void **state)
{
	static const u32 params[] = { 2, 3, 5, 16 };
	u32 i;

	(void)state;
	for (i = 0; i < T_ARRAY_SIZE(params); i++) {
		b_check_run(23, NICOFF_BARRIER_TREE, params[i], 50, 3000, i, NULL);
		b_check_run(23, NICOFF_BARRIER_COMBINING, params[i], 50, 3000, i, NULL);
	}
}

/*
 * Auto's time of a candidate: the rate of its barriers even when the
 * intervals alternate long and short, with a stall in one block left out.
 * (In the VM at 2 members the medians of the same dissemination barriers
 * were 12.7 us on rank 0's card and 7.1 us on rank 1's: uneven intervals,
 * and rank 0 chose the tree, 7.4 us, for it.)
 */
static void test_trial_time(void **state)
{
	u64 ns[20];
	u32 i;

	(void)state;
	for (i = 0; i < 16; i++)
		ns[i] = i & 1 ? 23000 : 1000;
	assert_int_equal(fw_bar_trial_ns(ns, 16), 12000);
	for (i = 0; i < 16; i++)
		ns[i] = i & 1 ? 1000 : 23000;
	ns[9] = 5000000;
	assert_int_equal(fw_bar_trial_ns(ns, 16), 12000);
	/* Two stalled blocks of five: the median is the third of the others. */
	for (i = 0; i < 20; i++)
		ns[i] = 7000 + 1000 * (i / 4);
	ns[1] = 900000;
	ns[18] = 800000;
	assert_int_equal(fw_bar_trial_ns(ns, 20), 10000);
	/* Fewer than two blocks: one mean. */
	for (i = 0; i < 7; i++)
		ns[i] = 1000 * (i + 1);
	assert_int_equal(fw_bar_trial_ns(ns, 7), 4000);
	ns[0] = 42;
	assert_int_equal(fw_bar_trial_ns(ns, 1), 42);
	assert_int_equal(fw_bar_trial_ns(ns, 0), 0);
	/* Blocks of unequal length (9 = 4 + 5): means 2500 and 7000. */
	for (i = 0; i < 9; i++)
		ns[i] = 1000 * (i + 1);
	assert_int_equal(fw_bar_trial_ns(ns, 9), 4750);
}

static void test_auto(void **state)
{
	static const u32 ns[] = { 1, 2, 5, 8, 13 };
	u32 i;

	(void)state;
	for (i = 0; i < T_ARRAY_SIZE(ns); i++)
		b_check_run(ns[i], NICOFF_BARRIER_AUTO, 0, 50, 2000, i, NULL);
}

/* The card's configured default, for groups that ask for it. */
static void test_default_alg(void **state)
{
	struct sim_cfg cfg;
	struct b_run *b;

	(void)state;
	sim_cfg_default(&cfg, 6);
	cfg.fw.barrier_alg = NICOFF_BARRIER_CENTRAL;
	b = b_new(6, &cfg);
	b->alg = NICOFF_BARRIER_DEFAULT;
	b->barriers = 10;
	b->destroy = true;
	b_go(b, 0, 10 * T_SEC);
	assert_int_equal(b->failed, 0);
	assert_int_equal(b->result, NICOFF_BARRIER_CENTRAL);
	b_free(b);

	b_check_run(6, NICOFF_BARRIER_DEFAULT, 0, 10, 0, 1, NULL);
}

/* A few hundred members. */
static void test_hundreds(void **state)
{
	u32 a;

	(void)state;
	for (a = 0; a < T_ARRAY_SIZE(b_algs); a++)
		b_check_run(300, b_algs[a], 0, 10, 2000, a, NULL);
	b_check_run(257, NICOFF_BARRIER_DISSEMINATION, 0, 10, 0, 7, NULL);
	b_check_run(257, NICOFF_BARRIER_PAIRWISE, 0, 10, 0, 7, NULL);
}

/* Back to back: messages of barrier k + 1 arrive while k is running. */
static void test_back_to_back(void **state)
{
	u32 a;

	(void)state;
	for (a = 0; a < T_ARRAY_SIZE(b_algs); a++) {
		b_check_run(8, b_algs[a], 0, 3000, 0, a, NULL);
		b_check_run(13, b_algs[a], 0, 1000, 300, a, NULL);
	}
}

/* 10% drop, duplicates, reordering, corruption and delays. */
static void test_faults(void **state)
{
	static const u32 ns[] = { 2, 5, 8, 13 };
	struct sim_cfg cfg;
	struct fw_stats st;
	u32 a, i;

	(void)state;
	for (a = 0; a < T_ARRAY_SIZE(b_algs); a++) {
		for (i = 0; i < T_ARRAY_SIZE(ns); i++) {
			struct b_run *b;

			sim_cfg_default(&cfg, ns[i]);
			cfg.seed = 11 + a * 7 + i;
			cfg.faults = (struct fw_fault_cfg){ .drop_ppm = 100000, .dup_ppm = 100000,
							    .reorder_ppm = 100000,
							    .corrupt_ppm = 20000,
							    .delay_ppm = 50000, .delay_ns = 30000 };
			b = b_new(ns[i], &cfg);
			b->alg = b_algs[a];
			b->barriers = 300;
			b->skew_ns = 2000;
			b->seed = a + i;
			b->destroy = true;
			b_go(b, 20000, 1000 * T_SEC);
			assert_int_equal(b->failed, 0);
			assert_int_equal(b->bad, 0);
			assert_int_equal(b->bad_result, 0);
			assert_int_equal(b->finished, ns[i]);
			t_stats_sum(b->s, &st);
			assert_true(st.barrier_nacks > 0);
			assert_true(st.barrier_resends > 0);
			b_free(b);
		}
	}
	/* Auto under faults: everyone still agrees on the choice. */
	sim_cfg_default(&cfg, 7);
	cfg.faults.drop_ppm = 100000;
	cfg.faults.dup_ppm = 100000;
	cfg.faults.reorder_ppm = 100000;
	b_check_run(7, NICOFF_BARRIER_AUTO, 0, 50, 1000, 3, &cfg);
}

/* A slow member (far longer than the dead time) is not a dead one. */
static void test_slow_member(void **state)
{
	struct b_run *b = b_new(9, NULL);
	const struct fw_card *card = sim_card(b->s, 0);
	u64 slow = 5 * card->dead_ns;

	(void)state;
	b->alg = NICOFF_BARRIER_DISSEMINATION;
	b->barriers = 30;
	b->skew_ns = 1000;
	b->slow_ns = slow;
	b->destroy = true;
	b_go(b, 3 * card->dead_ns, 1000 * T_SEC);
	assert_int_equal(b->failed, 0);
	assert_int_equal(b->bad, 0);
	assert_int_equal(b->finished, 9);
	assert_true(sim_now(b->s) > slow);
	b_free(b);
}

/*
 * A member dies after some barriers (its port closes, or its whole card
 * goes): every other member's next barrier fails, within a bound, and
 * nobody hangs.
 */
static void b_death(u32 n, u32 alg, bool card_dies, u32 seed)
{
	struct b_run *b = b_new(n, NULL);
	const struct fw_card *card = sim_card(b->s, 0);
	u64 bound = card->dead_ns + 8 * card->cfg.rto_max_ns;
	u32 i;

	b->alg = alg;
	b->barriers = 20;
	b->skew_ns = 3000;
	b->seed = seed;
	b->victim = seed % n;
	b->victim_after = 10;
	b->victim_card = card_dies;
	b_go(b, 0, 1000 * T_SEC);
	assert_int_equal(b->bad, 0);
	assert_int_equal(b->finished, 0);
	assert_int_equal(b->failed, n - 1);
	for (i = 0; i < n; i++) {
		if (i == b->victim)
			continue;
		assert_int_equal(b->nd[i].done, 10);
		assert_true(b->nd[i].status == -ECONNRESET || b->nd[i].status == -ETIMEDOUT);
		if (b->nd[i].fail_t > b->death_t + bound)
			fail_msg("n %u alg %u: member %u failed %llu ns after the death", n, alg,
				 i, (unsigned long long)(b->nd[i].fail_t - b->death_t));
	}
	/* A failed group refuses barriers until destroyed. */
	for (i = 0; i < n; i++) {
		struct nicoff_cmd c = t_group(NICOFF_OP_BARRIER, 5, B_GID, 0, 0, 0, 0, 0);
		struct nicoff_cqe q;

		if (i == b->victim)
			continue;
		sim_post(b->s, i, B_PORT, &c);
		q = t_cqe(b->s, i, B_PORT, sim_now(b->s) + T_SEC);
		assert_int_equal(q.status, b->nd[i].status);
		c = t_group(NICOFF_OP_GROUP_DESTROY, 6, B_GID, 0, 0, 0, 0, 0);
		sim_post(b->s, i, B_PORT, &c);
		q = t_cqe(b->s, i, B_PORT, sim_now(b->s) + T_SEC);
		assert_int_equal(q.status, 0);
	}
	if (card_dies)
		sim_set_dead(b->s, b->victim, false);
	b_free(b);
}

static void test_dead_member(void **state)
{
	u32 a;

	(void)state;
	for (a = 0; a < T_ARRAY_SIZE(b_algs); a++) {
		b_death(8, b_algs[a], false, a + 1);
		b_death(13, b_algs[a], true, a + 2);
		b_death(5, b_algs[a], true, a);
	}
}

/* Two groups over the same ports, and barriers of both interleaved. */
static void test_two_groups(void **state)
{
	struct b_run *b = b_new(6, NULL);
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	u32 i, k;

	(void)state;
	for (i = 0; i < 6; i++) {
		c = t_group(NICOFF_OP_GROUP_CREATE, 1, 10, i, 6, b->mr[i],
			    NICOFF_BARRIER_DISSEMINATION, 0);
		sim_post(b->s, i, B_PORT, &c);
		c = t_group(NICOFF_OP_GROUP_CREATE, 2, 11, i, 6, b->mr[i], NICOFF_BARRIER_CENTRAL,
			    0);
		sim_post(b->s, i, B_PORT, &c);
	}
	for (i = 0; i < 6; i++) {
		for (k = 0; k < 2; k++) {
			q = t_cqe(b->s, i, B_PORT, sim_now(b->s) + T_SEC);
			assert_int_equal(q.status, 0);
			assert_int_equal(q.result, q.tag == 1 ? NICOFF_BARRIER_DISSEMINATION :
					 NICOFF_BARRIER_CENTRAL);
		}
	}
	for (k = 1; k <= 50; k++) {
		for (i = 0; i < 6; i++) {
			c = t_group(NICOFF_OP_BARRIER, 10, 10, 0, 0, 0, 0, 0);
			sim_post(b->s, i, B_PORT, &c);
			c = t_group(NICOFF_OP_BARRIER, 11, 11, 0, 0, 0, 0, 0);
			sim_post(b->s, i, B_PORT, &c);
		}
		for (i = 0; i < 6; i++) {
			u32 j;

			for (j = 0; j < 2; j++) {
				q = t_cqe(b->s, i, B_PORT, sim_now(b->s) + T_SEC);
				assert_int_equal(q.status, 0);
				assert_int_equal(q.result, k);
			}
		}
	}
	for (i = 0; i < 6; i++) {
		for (k = 10; k <= 11; k++) {
			c = t_group(NICOFF_OP_GROUP_DESTROY, k, k, 0, 0, 0, 0, 0);
			sim_post(b->s, i, B_PORT, &c);
			q = t_cqe(b->s, i, B_PORT, sim_now(b->s) + T_SEC);
			assert_int_equal(q.status, 0);
		}
	}
	b_free(b);
}

static s32 b_create_status(struct sim *s, u32 node, u32 port, u32 gid, u32 rank, u32 size,
			   u32 mr, u64 off, u32 alg, u32 param)
{
	struct nicoff_cmd c = t_group(NICOFF_OP_GROUP_CREATE, 77, gid, rank, size, mr, alg, param);
	struct nicoff_cqe q;

	c.group.off = off;
	sim_post(s, node, port, &c);
	q = t_cqe(s, node, port, sim_now(s) + 100 * T_SEC);
	assert_int_equal(q.tag, 77);
	assert_int_equal(q.opcode, NICOFF_OP_GROUP_CREATE);
	return q.status;
}

static void test_bad_input(void **state)
{
	struct nicoff_member tab[8], dup[4], unknown[4];
	struct sim_cfg cfg;
	struct sim *s;
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	u32 mr, mdup, munk, i;

	(void)state;
	sim_cfg_default(&cfg, 4);
	cfg.fw.max_groups = 3;
	s = sim_create(&cfg);
	for (i = 0; i < 8; i++) {
		tab[i].card = i % 4;
		tab[i].port = 1 + i / 4;
	}
	memcpy(dup, tab, sizeof(dup));
	dup[2] = dup[1];
	memcpy(unknown, tab, sizeof(unknown));
	unknown[3].card = 4;
	mr = t_port_mr(s, 0, 1, tab, sizeof(tab), 0, NULL);
	mdup = t_port_mr(s, 0, 1, dup, sizeof(dup), 0, NULL);
	munk = t_port_mr(s, 0, 1, unknown, sizeof(unknown), 0, NULL);

	/* Duplicate members, a wrong rank, an unknown card. */
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 4, mdup, 0, 2, 0), -EINVAL);
	assert_int_equal(b_create_status(s, 0, 1, 1, 1, 4, mr, 0, 2, 0), -EINVAL);
	assert_int_equal(b_create_status(s, 0, 1, 1, 4, 4, mr, 0, 2, 0), -EINVAL);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 4, munk, 0, 2, 0), -ENODEV);
	/* Sizes, algorithms, parameters, regions. */
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 0, mr, 0, 2, 0), -EINVAL);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 4, mr, 0, NICOFF_BARRIER_MAX, 0),
			 -EINVAL);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 4, mr, 0, 1, 4), -EINVAL);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 4, mr, 0, 3, 1), -EINVAL);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 4, mr, 0, 3, FW_BAR_MAX_PARAM + 1),
			 -EINVAL);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 4, 999, 0, 2, 0), -ENOENT);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 9, mr, 0, 2, 0), -ERANGE);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 8, mr, 8, 2, 0), -ERANGE);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 4, mr, ~0ull - 7, 2, 0), -ERANGE);
	c = t_group(NICOFF_OP_GROUP_CREATE, 77, 1, 0, 1, mr, 2, 0);
	c.group.reserved = 1;
	sim_post(s, 0, 1, &c);
	assert_int_equal(t_cqe(s, 0, 1, sim_now(s) + T_SEC).status, -EINVAL);

	/* Groups of one: usable at once. */
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 1, mr, 0, 2, 0), 0);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 1, mr, 0, 2, 0), -EEXIST);
	assert_int_equal(b_create_status(s, 0, 1, 2, 0, 1, mr, 0, 0, 0), 0);
	assert_int_equal(b_create_status(s, 0, 1, 3, 0, 1, mr, 0, 4, 0), 0);
	/* Too many groups on the port. */
	assert_int_equal(b_create_status(s, 0, 1, 4, 0, 1, mr, 0, 2, 0), -ENOSPC);
	for (i = 1; i <= 5; i++) {
		t_post(s, 0, 1, t_group(NICOFF_OP_BARRIER, 90 + i, 1, 0, 0, 0, 0, 0));
		q = t_cqe(s, 0, 1, sim_now(s) + T_SEC);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, i);
	}
	/* BARRIER and DESTROY name a group and nothing else. */
	t_post(s, 0, 1, t_group(NICOFF_OP_BARRIER, 5, 42, 0, 0, 0, 0, 0));
	assert_int_equal(t_cqe(s, 0, 1, sim_now(s) + T_SEC).status, -ENOENT);
	c = t_group(NICOFF_OP_BARRIER, 5, 1, 0, 0, 0, 0, 0);
	c.group.size = 1;
	sim_post(s, 0, 1, &c);
	assert_int_equal(t_cqe(s, 0, 1, sim_now(s) + T_SEC).status, -EINVAL);
	c = t_group(NICOFF_OP_GROUP_DESTROY, 5, 3, 0, 0, 0, 0, 0);
	c.group.param = 1;
	sim_post(s, 0, 1, &c);
	assert_int_equal(t_cqe(s, 0, 1, sim_now(s) + T_SEC).status, -EINVAL);
	t_post(s, 0, 1, t_group(NICOFF_OP_GROUP_DESTROY, 5, 3, 0, 0, 0, 0, 0));
	assert_int_equal(t_cqe(s, 0, 1, sim_now(s) + T_SEC).status, 0);
	t_post(s, 0, 1, t_group(NICOFF_OP_GROUP_DESTROY, 5, 3, 0, 0, 0, 0, 0));
	assert_int_equal(t_cqe(s, 0, 1, sim_now(s) + T_SEC).status, -ENOENT);
	/* Room again. */
	assert_int_equal(b_create_status(s, 0, 1, 4, 0, 1, mr, 0, 2, 0), 0);

	/*
	 * A barrier while one runs is refused; DESTROY cancels the one
	 * running.  Members 1-3 of group 8 never come.
	 */
	mr = t_port_mr(s, 1, 1, tab, sizeof(tab), 0, NULL);
	c = t_group(NICOFF_OP_GROUP_CREATE, 7, 8, 0, 2, mr, 2, 0);
	c.group.mr = mr;
	c.group.off = 0;
	c.group.rank = 1;
	sim_post(s, 1, 1, &c);
	t_post(s, 1, 1, t_group(NICOFF_OP_BARRIER, 8, 8, 0, 0, 0, 0, 0));
	t_expect(s, 1, 1, 8, -EBUSY);
	sim_run_until(s, sim_now(s) + 10 * T_MS);
	t_post(s, 1, 1, t_group(NICOFF_OP_GROUP_DESTROY, 9, 8, 0, 0, 0, 0, 0));
	t_expect(s, 1, 1, 7, -ECANCELED);
	t_expect(s, 1, 1, 9, 0);
	t_finish(s);
}

/* GROUP_CREATE above cfg.max_group_size fails at once, whatever the table. */
static void test_size_limit(void **state)
{
	struct nicoff_member tab[4] = { { 0, 1 }, { 1, 1 }, { 0, 2 }, { 1, 2 } };
	struct sim_cfg cfg;
	struct sim *s;
	u32 mr;

	(void)state;
	sim_cfg_default(&cfg, 2);
	cfg.fw.max_group_size = 3;
	s = sim_create(&cfg);
	mr = t_port_mr(s, 0, 1, tab, sizeof(tab), 0, NULL);
	/* Neither the region (ERANGE, ENOENT) nor the rank (EINVAL) is looked at. */
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 4, mr, 0, 2, 0), -E2BIG);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 5, mr, 0, 2, 0), -E2BIG);
	assert_int_equal(b_create_status(s, 0, 1, 1, 9, 5, 999, 0, 2, 0), -E2BIG);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, FW_U32_MAX, mr, 0, 2, 0), -E2BIG);
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 0, mr, 0, 2, 0), -EINVAL);
	/* At the limit the other checks apply as before. */
	assert_int_equal(b_create_status(s, 0, 1, 1, 0, 3, mr, 16, 2, 0), -ERANGE);
	/* Changed at run time within 1 - FW_GROUP_SIZE_LIMIT; outside it refused. */
	assert_int_equal(fw_set_config(sim_card(s, 0), FW_CFG_MAX_GROUP_SIZE, 0), -EINVAL);
	assert_int_equal(b_create_status(s, 0, 1, 2, 0, 5, mr, 0, 2, 0), -E2BIG);
	assert_int_equal(fw_set_config(sim_card(s, 0), FW_CFG_MAX_GROUP_SIZE, 1), 0);
	assert_int_equal(b_create_status(s, 0, 1, 2, 0, 2, mr, 0, 2, 0), -E2BIG);
	assert_int_equal(b_create_status(s, 0, 1, 2, 0, 1, mr, 0, 2, 0), 0);
	assert_int_equal(fw_set_config(sim_card(s, 0), FW_CFG_MAX_GROUP_SIZE,
				       FW_GROUP_SIZE_LIMIT + 1ull), -EINVAL);
	assert_int_equal(b_create_status(s, 0, 1, 3, 0, 2, mr, 0, 2, 0), -E2BIG);
	assert_int_equal(fw_set_config(sim_card(s, 0), FW_CFG_MAX_GROUP_SIZE,
				       FW_GROUP_SIZE_LIMIT), 0);
	assert_int_equal(b_create_status(s, 0, 1, 3, 0, FW_GROUP_SIZE_LIMIT + 1, mr, 0, 2, 0),
			 -E2BIG);
	assert_int_equal(b_create_status(s, 0, 1, 3, 0, 5, mr, 0, 2, 0), -ERANGE);
	t_finish(s);
}

/*
 * The members of a card's groups, lingering destroyed ones too, share
 * cfg.card_group_members: past it GROUP_CREATE fails with -ENOSPC on every
 * port of that card, and works again once a group is gone.
 */
static void test_card_group_members(void **state)
{
	struct nicoff_member t1 = { 0, 1 }, t2 = { 0, 2 }, t3 = { 1, 1 };
	struct nicoff_member big[2] = { { 0, 1 }, { 1, 1 } };
	struct sim_cfg cfg;
	struct nicoff_cqe q;
	struct sim *s;
	u32 m1, m2, m3, mb, gid;

	(void)state;
	sim_cfg_default(&cfg, 2);
	cfg.fw.card_group_members = 3;
	s = sim_create(&cfg);
	m1 = t_port_mr(s, 0, 1, &t1, sizeof(t1), 0, NULL);
	m2 = t_port_mr(s, 0, 2, &t2, sizeof(t2), 0, NULL);
	m3 = t_port_mr(s, 1, 1, &t3, sizeof(t3), 0, NULL);
	mb = t_port_mr(s, 0, 1, big, sizeof(big), 0, NULL);
	for (gid = 1; gid <= 3; gid++)
		assert_int_equal(b_create_status(s, 0, 1, gid, 0, 1, m1, 0, 2, 0), 0);
	assert_int_equal(b_create_status(s, 0, 1, 4, 0, 1, m1, 0, 2, 0), -ENOSPC);
	assert_int_equal(b_create_status(s, 0, 2, 1, 0, 1, m2, 0, 2, 0), -ENOSPC);
	/* Another card has its own. */
	assert_int_equal(b_create_status(s, 1, 1, 1, 0, 1, m3, 0, 2, 0), 0);
	/* A destroyed group lingers, and counts, until the card forgets it. */
	t_post(s, 0, 1, t_group(NICOFF_OP_GROUP_DESTROY, 5, 1, 0, 0, 0, 0, 0));
	q = t_cqe(s, 0, 1, sim_now(s) + T_SEC);
	assert_int_equal(q.status, 0);
	assert_int_equal(b_create_status(s, 0, 2, 1, 0, 1, m2, 0, 2, 0), -ENOSPC);
	sim_run_until(s, sim_now(s) + 3 * sim_card(s, 0)->dead_ns);
	assert_int_equal(b_create_status(s, 0, 2, 1, 0, 1, m2, 0, 2, 0), 0);
	/* Larger than what is left, or than the whole bound. */
	assert_int_equal(fw_set_config(sim_card(s, 0), FW_CFG_CARD_GROUP_MEMBERS, 4), 0);
	assert_int_equal(b_create_status(s, 0, 1, 6, 0, 2, mb, 0, 2, 0), -ENOSPC);
	assert_int_equal(fw_set_config(sim_card(s, 0), FW_CFG_CARD_GROUP_MEMBERS, 1), 0);
	assert_int_equal(b_create_status(s, 0, 1, 6, 0, 2, mb, 0, 2, 0), -ENOSPC);
	t_finish(s);
}

/* Creation waits for late members, and times out when one never comes. */
static void test_create_timeout(void **state)
{
	struct nicoff_member tab[3] = { { 0, 1 }, { 1, 1 }, { 2, 1 } };
	struct sim_cfg cfg;
	struct sim *s;
	struct nicoff_cqe q;
	u32 mr[3], i;

	(void)state;
	sim_cfg_default(&cfg, 3);
	cfg.fw.group_create_ms = 200;
	s = sim_create(&cfg);
	for (i = 0; i < 3; i++)
		mr[i] = t_port_mr(s, i, 1, tab, sizeof(tab), 0, NULL);
	for (i = 0; i < 2; i++) {
		struct nicoff_cmd c = t_group(NICOFF_OP_GROUP_CREATE, 1, 5, i, 3, mr[i],
					      NICOFF_BARRIER_AUTO, 0);

		sim_post(s, i, 1, &c);
	}
	/* Member 2 comes 150 ms late: creation still succeeds. */
	sim_run_until(s, sim_now(s) + 150 * T_MS);
	assert_int_equal(sim_cq_count(s, 0, 1), 0);
	{
		struct nicoff_cmd c = t_group(NICOFF_OP_GROUP_CREATE, 1, 5, 2, 3, mr[2],
					      NICOFF_BARRIER_AUTO, 0);

		sim_post(s, 2, 1, &c);
	}
	for (i = 0; i < 3; i++) {
		q = t_cqe(s, i, 1, sim_now(s) + T_SEC);
		assert_int_equal(q.status, 0);
	}
	/* Group 6: member 2 never comes. */
	for (i = 0; i < 2; i++) {
		struct nicoff_cmd c = t_group(NICOFF_OP_GROUP_CREATE, 1, 6, i, 3, mr[i],
					      NICOFF_BARRIER_PAIRWISE, 0);

		sim_post(s, i, 1, &c);
	}
	for (i = 0; i < 2; i++) {
		q = t_cqe(s, i, 1, sim_now(s) + T_SEC);
		assert_int_equal(q.status, -ETIMEDOUT);
	}
	/*
	 * Group 7: the budget raised at run time to 2 s (out-of-range values
	 * refused first): member 2 comes 1 s late and creation succeeds.
	 */
	for (i = 0; i < 3; i++) {
		struct fw_card *card = sim_card(s, i);

		assert_int_equal(fw_set_config(card, FW_CFG_GROUP_CREATE_MS, 0), -EINVAL);
		assert_int_equal(fw_set_config(card, FW_CFG_GROUP_CREATE_MS,
					       FW_GROUP_CREATE_MS_MAX + 1), -EINVAL);
		assert_int_equal(fw_set_config(card, FW_CFG_GROUP_CREATE_MS, 2000), 0);
	}
	for (i = 0; i < 3; i++) {
		struct nicoff_cmd c = t_group(NICOFF_OP_GROUP_CREATE, 1, 7, i, 3, mr[i],
					      NICOFF_BARRIER_PAIRWISE, 0);

		if (i == 2)
			sim_run_until(s, sim_now(s) + T_SEC);
		sim_post(s, i, 1, &c);
	}
	for (i = 0; i < 3; i++) {
		q = t_cqe(s, i, 1, sim_now(s) + T_SEC);
		assert_int_equal(q.status, 0);
	}
	t_finish(s);
}

/* ------------------------------------------------------- host trials -- */

#define HT_N		4u
#define HT_CANDIDATES	(FW_BAR_NALG - 1)

struct ht_run {
	struct sim *s;
	struct sim_cfg cfg;
	struct nicoff_member tab[HT_N];
	u32 mr[HT_N];
	u32 slow_rank;		/* its process enters late... */
	u32 fast_alg;		/* ...every trial epoch but this candidate's */
	u32 flags;		/* GROUP_CREATE's */
	u64 late_ns;
	u32 trials[HT_N];	/* trial barriers completed */
	u64 left[HT_N];		/* what the last one said */
	bool created[HT_N];
	u64 result[HT_N];
	u32 bad_left;
};

/* The cards, and the member table registered on each; 0: group_create_ms as is. */
static void ht_start(struct ht_run *h, u32 create_ms)
{
	u32 i;

	sim_cfg_default(&h->cfg, HT_N);
	if (create_ms)
		h->cfg.fw.group_create_ms = create_ms;
	h->s = sim_create(&h->cfg);
	for (i = 0; i < HT_N; i++) {
		h->tab[i].card = i;
		h->tab[i].port = B_PORT;
	}
	for (i = 0; i < HT_N; i++)
		h->mr[i] = t_port_mr(h->s, i, B_PORT, h->tab, sizeof(h->tab), 0, NULL);
}

static struct nicoff_cmd ht_create(const struct ht_run *h, u32 rank, u32 gid, u32 alg)
{
	struct nicoff_cmd c = t_group(NICOFF_OP_GROUP_CREATE, 100 + rank, gid, rank, HT_N,
				      h->mr[rank], alg, 0);

	c.group.flags = h->flags;
	return c;
}

/* The k-th host trial's candidate: visits of one untimed and a block of timed barriers, in turn. */
static u32 ht_candidate(u64 k)
{
	return 1 + (u32)((k - 1) / (FW_BAR_TRIAL_BLOCK + 1) % HT_CANDIDATES);
}

static void ht_cqe(void *arg, u32 node, u32 port, const struct nicoff_cqe *cqe, u64 t)
{
	struct ht_run *h = arg;
	struct nicoff_cmd c = t_group(NICOFF_OP_BARRIER, 7, B_GID, 0, 0, 0, 0, 0);
	u64 next;

	assert_int_equal(port, B_PORT);
	assert_int_equal(cqe->status, 0);
	if (cqe->opcode == NICOFF_OP_GROUP_CREATE) {
		assert_int_equal(cqe->tag, 100 + node);
		h->created[node] = true;
		h->result[node] = cqe->result;
		return;
	}
	assert_int_equal(cqe->opcode, NICOFF_OP_BARRIER);
	assert_int_equal(cqe->tag, 7);
	assert_false(h->created[node]);
	if (h->trials[node] && cqe->result + 1 != h->left[node])
		h->bad_left++;
	h->trials[node]++;
	h->left[node] = cqe->result;
	if (!cqe->result)
		return;
	/* Host trial trials + 1 comes next; the slow process is late to most. */
	next = h->trials[node] + 1;
	sim_post_at(h->s, node, B_PORT, &c,
		    node == h->slow_rank && ht_candidate(next) != h->fast_alg &&
		    cqe->result > 2 ? t + h->late_ns : t);
}

/*
 * An auto group of HT_N members, with @flags; with host trials, one
 * process enters every host trial barrier @late_ns late but those of
 * @fast_alg.  Each trial barrier says how many are left, down to 0; then
 * the creation completes everywhere with the same choice, which it
 * returns, and the next barrier is the first.
 */
static u32 ht_choice(u32 flags, u32 fast_alg, u64 late_ns)
{
	struct sim_hooks hooks;
	struct ht_run h = { .slow_rank = 2, .fast_alg = fast_alg, .late_ns = late_ns,
			    .flags = flags };
	struct nicoff_cqe q;
	u32 i, expect = 0;

	ht_start(&h, 0);
	hooks = (struct sim_hooks){ ht_cqe, &h };
	sim_set_hooks(h.s, &hooks);
	for (i = 0; i < HT_N; i++) {
		struct nicoff_cmd c = ht_create(&h, i, B_GID, NICOFF_BARRIER_AUTO);
		struct nicoff_cmd b = t_group(NICOFF_OP_BARRIER, 7, B_GID, 0, 0, 0, 0, 0);

		/* The first trial barrier may come while the cards' trials run. */
		sim_post(h.s, i, B_PORT, &c);
		if (flags)
			sim_post(h.s, i, B_PORT, &b);
	}
	sim_run_idle(h.s, sim_now(h.s) + 100 * T_SEC);
	sim_set_hooks(h.s, NULL);
	/* Every candidate's visits, the choice, the fence. */
	if (flags)
		expect = HT_CANDIDATES * (FW_BAR_TRIAL_BLOCK + 1) *
			 ((h.cfg.fw.barrier_rounds + FW_BAR_TRIAL_BLOCK - 1) /
			  FW_BAR_TRIAL_BLOCK) + 2;
	assert_int_equal(h.bad_left, 0);
	for (i = 0; i < HT_N; i++) {
		assert_true(h.created[i]);
		assert_int_equal(h.trials[i], expect);
		assert_int_equal(h.left[i], 0);
		assert_int_equal(h.result[i], h.result[0]);
	}
	assert_true((u32)h.result[0] >= 1 && (u32)h.result[0] < FW_BAR_NALG);
	/* The group's own barriers count from 1. */
	for (i = 0; i < HT_N; i++)
		t_post(h.s, i, B_PORT, t_group(NICOFF_OP_BARRIER, 8, B_GID, 0, 0, 0, 0, 0));
	for (i = 0; i < HT_N; i++) {
		q = t_cqe(h.s, i, B_PORT, sim_now(h.s) + T_SEC);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, 1);
	}
	t_finish(h.s);
	return (u32)h.result[0];
}

/*
 * Host trials after the cards' own: the cards' pick stands when the
 * processes' barriers show no clear difference (none, or less than
 * FW_BAR_HOST_MARGIN_PCT), and gives way to a candidate that they time
 * clearly faster (one process late to all the others' barriers).
 */
static void test_host_trials(void **state)
{
	static const u32 fast[] = { NICOFF_BARRIER_CENTRAL, NICOFF_BARRIER_PAIRWISE,
				    NICOFF_BARRIER_TOURNAMENT };
	u32 card_pick, i, overruled = 0;

	(void)state;
	card_pick = ht_choice(0, 0, 0);
	assert_int_equal(ht_choice(NICOFF_GROUP_F_HOST_TRIALS, 0, 0), card_pick);
	/*
	 * Central a little faster for the processes: with the others'
	 * barriers entered 700 ns late, rank 0's host trials time the cards'
	 * pick (pairwise) at 2,040 ns and central at 2,036, within the margin,
	 * so the pick stands; 2 us late (2,518 against 2,036) overrules it.
	 */
	assert_int_not_equal(card_pick, NICOFF_BARRIER_CENTRAL);
	assert_int_equal(ht_choice(NICOFF_GROUP_F_HOST_TRIALS, NICOFF_BARRIER_CENTRAL, 700),
			 card_pick);
	assert_int_equal(ht_choice(NICOFF_GROUP_F_HOST_TRIALS, NICOFF_BARRIER_CENTRAL, 2000),
			 NICOFF_BARRIER_CENTRAL);
	for (i = 0; i < T_ARRAY_SIZE(fast); i++) {
		assert_int_equal(ht_choice(NICOFF_GROUP_F_HOST_TRIALS, fast[i], 300000), fast[i]);
		overruled += fast[i] != card_pick;
	}
	/* At least two of the three differ from the cards' pick. */
	assert_true(overruled >= 2);
}

/*
 * The flag's rules: auto asked for by name only, no unknown flag; one
 * trial barrier at a time; DESTROY ends the trial barrier and the
 * creation; a process that never enters its trial barriers makes the
 * creation time out.
 */
static void test_host_trials_rules(void **state)
{
	struct ht_run h = { .flags = NICOFF_GROUP_F_HOST_TRIALS };
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	u32 i;

	(void)state;
	ht_start(&h, 200);
	c = ht_create(&h, 0, 1, NICOFF_BARRIER_TREE);
	sim_post(h.s, 0, B_PORT, &c);
	t_expect(h.s, 0, B_PORT, 100, -EINVAL);
	c = ht_create(&h, 0, 1, NICOFF_BARRIER_DEFAULT);
	sim_post(h.s, 0, B_PORT, &c);
	t_expect(h.s, 0, B_PORT, 100, -EINVAL);
	c = ht_create(&h, 0, 1, NICOFF_BARRIER_AUTO);
	c.group.flags |= 0x80;
	sim_post(h.s, 0, B_PORT, &c);
	t_expect(h.s, 0, B_PORT, 100, -EINVAL);

	/* Group 2: a second trial barrier while one waits; then DESTROY. */
	for (i = 0; i < HT_N; i++) {
		c = ht_create(&h, i, 2, NICOFF_BARRIER_AUTO);
		sim_post(h.s, i, B_PORT, &c);
	}
	/* Epoch 0 is over; the creation waits for the processes' barriers. */
	sim_run_until(h.s, sim_now(h.s) + 50 * T_MS);
	for (i = 0; i < HT_N; i++)
		assert_int_equal(sim_cq_count(h.s, i, B_PORT), 0);
	t_post(h.s, 0, B_PORT, t_group(NICOFF_OP_BARRIER, 7, 2, 0, 0, 0, 0, 0));
	t_post(h.s, 0, B_PORT, t_group(NICOFF_OP_BARRIER, 9, 2, 0, 0, 0, 0, 0));
	t_expect(h.s, 0, B_PORT, 9, -EBUSY);
	for (i = 0; i < HT_N; i++) {
		t_post(h.s, i, B_PORT, t_group(NICOFF_OP_GROUP_DESTROY, 11, 2, 0, 0, 0, 0, 0));
		if (!i)
			t_expect(h.s, i, B_PORT, 7, -ECANCELED);
		t_expect(h.s, i, B_PORT, 100 + i, -ECANCELED);
		t_expect(h.s, i, B_PORT, 11, 0);
	}

	/*
	 * Group 3: every process enters the first trial barrier, member 3
	 * never the second: the others' second waits for it, and the creation
	 * fails when group_create_ms is up, the waiting barriers with it.
	 */
	for (i = 0; i < HT_N; i++) {
		c = ht_create(&h, i, 3, NICOFF_BARRIER_AUTO);
		sim_post(h.s, i, B_PORT, &c);
		t_post(h.s, i, B_PORT, t_group(NICOFF_OP_BARRIER, 7, 3, 0, 0, 0, 0, 0));
	}
	for (i = 0; i < HT_N; i++) {
		q = t_cqe(h.s, i, B_PORT, sim_now(h.s) + T_SEC);
		assert_int_equal(q.tag, 7);
		assert_int_equal(q.status, 0);
		assert_true(q.result > 0);
		if (i < HT_N - 1)
			t_post(h.s, i, B_PORT, t_group(NICOFF_OP_BARRIER, 7, 3, 0, 0, 0, 0, 0));
	}
	for (i = 0; i < HT_N; i++) {
		if (i < HT_N - 1)
			t_expect(h.s, i, B_PORT, 7, -ETIMEDOUT);
		t_expect(h.s, i, B_PORT, 100 + i, -ETIMEDOUT);
	}
	t_finish(h.s);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_schedules),
		cmocka_unit_test(test_step_counts),
		cmocka_unit_test(test_every_alg_small),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_trial_time),
		cmocka_unit_test(test_auto),
		cmocka_unit_test(test_default_alg),
		cmocka_unit_test(test_hundreds),
		cmocka_unit_test(test_back_to_back),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_slow_member),
		cmocka_unit_test(test_dead_member),
		cmocka_unit_test(test_two_groups),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_card_group_members),
		cmocka_unit_test(test_create_timeout),
		cmocka_unit_test(test_host_trials),
		cmocka_unit_test(test_host_trials_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
