// SPDX-License-Identifier: GPL-2.0
/*
 * Broadcast run by the cards (bcast.c): every root, sizes around the
 * fragment and eager limits, contiguous and scattered groups, several
 * member ports on one card, rounds of few channels, faults, the
 * point-to-point tree and the fail-over to it, members that die or post
 * a different length, bad input.
 *
 * Every member posts the whole sequence of broadcasts at once (they are
 * non-blocking), each into its own slot of the member's buffer, so that a
 * broadcast clobbering another's data, or one delivered twice or to the
 * wrong slot, shows in the byte check at its completion; completions must
 * come in posting order.
 */
#include <stdlib.h>

#include "fwtest.h"
#include "bcast.h"

#define C_GID		0xbca5u
#define C_TAG_CREATE	0x10000000000ull
#define C_TAG_DESTROY	0x20000000000ull

struct c_member {
	u32 card;
	u32 port;
	u32 mr;			/* its slots */
	u32 tab_mr;		/* the member table */
	u8 *buf;
	u32 done;		/* broadcasts completed */
	u32 errors;		/* failed completions */
	s32 first_err;
	u64 err_t;
	bool created;
	bool destroyed;
};

struct c_run {
	struct sim *s;
	u32 n;
	struct c_member *m;
	struct nicoff_member *tab;
	u32 k;			/* broadcasts */
	u32 *root;
	u64 *len;
	u64 slot;		/* bytes of each broadcast's slot */
	u32 bad;		/* data or order wrong */
	u32 *len_of;		/* member, broadcast whose len it posts wrong: n * k + k */
};

static u32 c_seed(u32 k)
{
	return 0x9e37u + k * 7919u;
}

static struct c_member *c_find(struct c_run *r, u32 card, u32 port)
{
	u32 i;

	for (i = 0; i < r->n; i++)
		if (r->m[i].card == card && r->m[i].port == port)
			return &r->m[i];
	fail_msg("completion for no member (%u, %u)", card, port);
	return NULL;
}

static void c_cqe(void *arg, u32 card, u32 port, const struct nicoff_cqe *cqe, u64 t)
{
	struct c_run *r = arg;
	struct c_member *m = c_find(r, card, port);
	u32 rank = (u32)(m - r->m), k;

	if (cqe->tag == C_TAG_CREATE) {
		assert_int_equal(cqe->status, 0);
		m->created = true;
		return;
	}
	if (cqe->tag == C_TAG_DESTROY) {
		assert_int_equal(cqe->status, 0);
		m->destroyed = true;
		return;
	}
	assert_int_equal(cqe->opcode, NICOFF_OP_BCAST);
	k = (u32)cqe->tag;
	if (k != m->done + m->errors)
		r->bad++;	/* out of order */
	if (cqe->status) {
		if (!m->errors) {
			m->first_err = cqe->status;
			m->err_t = t;
		}
		m->errors++;
		return;
	}
	if (cqe->result != r->len[k])
		r->bad++;
	if (r->root[k] != rank && !t_check(m->buf + k * r->slot, r->len[k], c_seed(k)))
		r->bad++;
	m->done++;
}

/* @n members on the cards of @cards (NULL: member i on card i), port 1 + i / cards. */
static struct c_run *c_new(u32 n, u32 nodes, const u32 *cards, u32 k, u64 slot,
			   const struct fw_fault_cfg *faults, u64 seed)
{
	struct c_run *r = calloc(1, sizeof(*r));
	struct sim_cfg cfg;
	u32 i;

	sim_cfg_default(&cfg, nodes);
	cfg.fw.mtu = 1000;
	cfg.seed = seed;
	if (faults)
		cfg.faults = *faults;
	r->s = sim_create(&cfg);
	assert_non_null(r->s);
	r->n = n;
	r->k = k;
	r->slot = slot;
	r->m = calloc(n, sizeof(*r->m));
	r->tab = calloc(n, sizeof(*r->tab));
	r->root = calloc(k + 1, sizeof(*r->root));
	r->len = calloc(k + 1, sizeof(*r->len));
	for (i = 0; i < n; i++) {
		r->m[i].card = cards ? cards[i] : i % nodes;
		r->m[i].port = 1 + i / nodes;
		r->tab[i].card = r->m[i].card;
		r->tab[i].port = r->m[i].port;
	}
	for (i = 0; i < n; i++) {
		struct c_member *m = &r->m[i];

		m->buf = calloc(1, k * slot + 1);
		m->mr = t_port_mr(r->s, m->card, m->port, m->buf, k * slot + 1,
				  NICOFF_ACCESS_LOCAL_WRITE, NULL);
		m->tab_mr = t_port_mr(r->s, m->card, m->port, r->tab, n * sizeof(*r->tab), 0,
				      NULL);
	}
	return r;
}

static void c_create(struct c_run *r, u32 channels, u32 flags)
{
	struct sim_hooks hooks = { c_cqe, r };
	u32 i;

	sim_set_hooks(r->s, &hooks);
	for (i = 0; i < r->n; i++) {
		struct nicoff_cmd c = t_group(NICOFF_OP_GROUP_CREATE, C_TAG_CREATE, C_GID, i, r->n,
					      r->m[i].tab_mr, NICOFF_BARRIER_DISSEMINATION, 0);

		c.group.bcast_channels = channels;
		c.group.bcast_flags = flags;
		sim_post(r->s, r->m[i].card, r->m[i].port, &c);
	}
	while (sim_step(r->s)) {
		for (i = 0; i < r->n && r->m[i].created; i++)
			;
		if (i == r->n)
			break;
	}
	for (i = 0; i < r->n; i++)
		assert_true(r->m[i].created);
}

static struct nicoff_cmd c_bcast(u64 tag, u32 root, u32 mr, u64 off, u64 len)
{
	return t_bcast(tag, C_GID, root, mr, off, len);
}

/* Called once when the run reaches its time. */
struct c_event {
	u64 at;
	void (*fn)(struct c_run *r);
};

/*
 * Every member posts broadcasts 0..k-1, member i's k-th at
 * t0 + k * @gap plus up to @skew of its own (roots fill their slot
 * first), in time order across members as the simulator needs; then the
 * run goes on until the fabric is idle or @limit passes.
 */
static u64 c_post_time(u64 t0, u64 gap, u64 skew, u32 i, u32 k)
{
	return t0 + k * gap + (skew ? (i * 7919u) % skew : 0);
}

static void c_drive(struct c_run *r, u64 gap, u64 skew, u64 limit, const struct c_event *ev)
{
	struct sim_hooks hooks = { c_cqe, r };
	u64 t0 = sim_now(r->s) + 1000, end = sim_now(r->s) + limit;
	u32 *next = calloc(r->n, sizeof(*next));
	bool ev_done = !ev;
	u32 i, k;

	sim_set_hooks(r->s, &hooks);
	for (k = 0; k < r->k; k++)
		t_fill(r->m[r->root[k]].buf + k * r->slot, r->len[k], c_seed(k));
	for (;;) {
		u64 tp = FW_NEVER, tq;

		for (i = 0; i < r->n; i++)
			if (next[i] < r->k)
				tp = fw_min_u64(tp, c_post_time(t0, gap, skew, i, next[i]));
		if (!ev_done)
			tp = fw_min_u64(tp, ev->at);
		tq = sim_next_time(r->s);
		if (tp == FW_NEVER && tq == FW_NEVER)
			break;
		if (fw_min_u64(tp, tq) > end) {
			for (i = 0; i < r->n; i++)
				print_message("member %u: %u done, %u failed (%d)\n", i,
					      r->m[i].done, r->m[i].errors, r->m[i].first_err);
			fail_msg("still running at %llu ns", (unsigned long long)sim_now(r->s));
		}
		if (tp > tq) {
			sim_step(r->s);
			continue;
		}
		sim_run_until(r->s, tp);
		if (!ev_done && ev->at <= tp) {
			ev_done = true;
			ev->fn(r);
		}
		for (i = 0; i < r->n; i++) {
			u64 len;
			struct nicoff_cmd c;

			k = next[i];
			if (k >= r->k || c_post_time(t0, gap, skew, i, k) > tp)
				continue;
			len = r->len[k];
			if (r->len_of && r->len_of[i * r->k + k])
				len += r->len_of[i * r->k + k];
			c = c_bcast(k, r->root[k], r->m[i].mr, k * r->slot, len);
			sim_post(r->s, r->m[i].card, r->m[i].port, &c);
			next[i]++;
		}
	}
	free(next);
}

static void c_destroy_free(struct c_run *r)
{
	u32 i;

	for (i = 0; i < r->n; i++) {
		struct nicoff_cmd c = t_group(NICOFF_OP_GROUP_DESTROY, C_TAG_DESTROY, C_GID, 0, 0,
					      0, 0, 0);

		if (sim_attached(r->s, r->m[i].card, r->m[i].port))
			sim_post(r->s, r->m[i].card, r->m[i].port, &c);
	}
	t_finish(r->s);
	for (i = 0; i < r->n; i++)
		free(r->m[i].buf);
	free(r->len_of);
	free(r->len);
	free(r->root);
	free(r->tab);
	free(r->m);
	free(r);
}

/* Run k broadcasts with the roots and lengths set; everyone gets all. */
static void c_expect_all(struct c_run *r, u64 gap, u64 skew, u64 limit)
{
	u32 i;

	c_drive(r, gap, skew, limit, NULL);
	assert_int_equal(r->bad, 0);
	for (i = 0; i < r->n; i++) {
		assert_int_equal(r->m[i].errors, 0);
		assert_int_equal(r->m[i].done, r->k);
	}
}

/* Create the group with @channels and @flags, run c_expect_all() and sum the cards' counters. */
static void c_run_all(struct c_run *r, u32 channels, u32 flags, u64 gap, u64 skew, u64 limit,
		      struct fw_stats *st)
{
	c_create(r, channels, flags);
	c_expect_all(r, gap, skew, limit);
	t_stats_sum(r->s, st);
}

static const u64 c_sizes[] = { 0, 1, 999, 1000, 1001, 4096, 16384, 16385, 50000 };

/* Every root, every size, groups of 1 to 13 on their own cards. */
static void test_roots_sizes(void **state)
{
	static const u32 ns[] = { 1, 2, 3, 5, 8, 13 };
	u32 a, i, k;

	(void)state;
	for (a = 0; a < T_ARRAY_SIZE(ns); a++) {
		u32 n = ns[a], nk = n * T_ARRAY_SIZE(c_sizes);
		struct c_run *r = c_new(n, n, NULL, nk, 50000, NULL, 1);

		for (k = 0; k < nk; k++) {
			r->root[k] = k % n;
			r->len[k] = c_sizes[(k / n) % T_ARRAY_SIZE(c_sizes)];
		}
		c_create(r, 0, 0);
		c_expect_all(r, 20000, 5000, 100 * T_SEC);
		for (i = 0; i < n; i++)
			assert_true(n == 1 || sim_card(r->s, r->m[i].card)->stats.bcast_syncs > 0);
		c_destroy_free(r);
	}
}

/* Members on scattered cards, two ports on some cards; rounds of 2 channels. */
static void test_scattered(void **state)
{
	static const u32 cards[] = { 0, 2, 3, 7, 2, 9, 0, 5, 6, 11 };
	u32 n = T_ARRAY_SIZE(cards), k, i;
	struct c_run *r;
	struct fw_stats st;

	(void)state;
	r = c_new(n, 12, cards, 300, 2000, NULL, 2);
	/* Two members on one port number of one card would be one port. */
	r->m[4].port = 2;
	r->m[6].port = 2;
	r->tab[4].port = 2;
	r->tab[6].port = 2;
	for (i = 0; i < n; i++)
		sim_dereg_mr(r->s, r->m[i].card, r->m[i].port, r->m[i].mr);
	for (i = 0; i < n; i++)
		r->m[i].mr = t_port_mr(r->s, r->m[i].card, r->m[i].port, r->m[i].buf,
				       r->k * r->slot + 1, NICOFF_ACCESS_LOCAL_WRITE, NULL);
	for (i = 0; i < n; i++)
		r->m[i].tab_mr = t_port_mr(r->s, r->m[i].card, r->m[i].port, r->tab,
					   n * sizeof(*r->tab), 0, NULL);
	for (k = 0; k < r->k; k++) {
		r->root[k] = (k * 3) % n;
		r->len[k] = (k * 131) % 2000;
	}
	c_run_all(r, 2, 0, 3000, 20000, 100 * T_SEC, &st);
	assert_true(st.bcast_mcasts > 0);
	assert_true(st.bcast_syncs >= 150 * n);
	assert_int_equal(st.bcast_failovers, 0);
	c_destroy_free(r);
}

/* 10 % drop, 5 % duplicates and reorders, 1 % corrupt: everything arrives once. */
static void c_lossy(u64 seed)
{
	struct c_run *r = c_new(8, 8, NULL, 120, 60000, &t_lossy, seed);
	struct fw_stats st;
	u32 k;

	for (k = 0; k < r->k; k++) {
		r->root[k] = (k * 5 + (u32)seed) % 8;
		r->len[k] = k % 10 == 9 ? 60000 : (k * 977) % 3000;
	}
	c_run_all(r, 4, 0, 50000, 20000, 1000 * T_SEC, &st);
	assert_true(st.bcast_resends > 0);
	assert_true(st.crc_errors > 0);
	assert_int_equal(st.bcast_failures, 0);
	c_destroy_free(r);
}

static void test_lossy(void **state)
{
	(void)state;
	t_seeds(c_lossy, 1, 4);
}

static u64 c_mcasts;

/* Halfway: every card's bcast_hw off, and the fabric lossy. */
static void c_hw_off(struct c_run *r)
{
	struct fw_stats st;
	u32 i;

	t_stats_sum(r->s, &st);
	c_mcasts = st.bcast_mcasts;
	for (i = 0; i < r->n; i++)
		assert_int_equal(fw_set_config(sim_card(r->s, r->m[i].card), FW_CFG_BCAST_HW, 0),
				 0);
	sim_set_faults(r->s, &t_lossy);
}

/*
 * 200 broadcasts over 8 cards, 4 channels, multicast first; halfway @fn
 * breaks it.  Everything completes once, with its bytes.
 */
static struct c_run *c_mid_run(u64 seed, void (*fn)(struct c_run *r))
{
	struct c_run *r = c_new(8, 8, NULL, 200, 20000, NULL, seed);
	struct c_event half;
	u32 k;

	for (k = 0; k < r->k; k++) {
		r->root[k] = (k * 3) % 8;
		r->len[k] = k % 20 == 19 ? 20000 : 500;
	}
	c_create(r, 4, 0);
	c_mcasts = 0;
	half.at = sim_now(r->s) + 100 * 10000;
	half.fn = fn;
	c_drive(r, 10000, 3000, 1000 * T_SEC, &half);
	assert_true(c_mcasts > 0);
	assert_int_equal(r->bad, 0);
	for (k = 0; k < r->n; k++) {
		assert_int_equal(r->m[k].errors, 0);
		assert_int_equal(r->m[k].done, r->k);
	}
	return r;
}

/* The point-to-point tree: by the group's flag, and after the card's switch mid-run. */
static void test_tree(void **state)
{
	struct c_run *r;
	struct fw_stats st;
	u32 k;

	(void)state;
	r = c_new(13, 13, NULL, 60, 30000, &t_lossy, 3);
	for (k = 0; k < r->k; k++) {
		r->root[k] = k % 13;
		r->len[k] = k % 6 == 5 ? 30000 : k * 37;
	}
	c_create(r, 8, NICOFF_BCAST_F_P2P | NICOFF_BCAST_F_NOCRC);
	/* NOCRC with corruption would let bad bytes through: no corruption here. */
	sim_set_faults(r->s, &(struct fw_fault_cfg){ .drop_ppm = 100000 });
	c_expect_all(r, 50000, 10000, 1000 * T_SEC);
	t_stats_sum(r->s, &st);
	assert_int_equal(st.bcast_mcasts, 0);
	assert_true(st.bcast_pkts > 0);
	c_destroy_free(r);

	/* Multicast first, then every card's bcast_hw off halfway: fail-over. */
	r = c_mid_run(4, c_hw_off);
	k = (u32)c_mcasts;
	t_stats_sum(r->s, &st);
	assert_true(st.bcast_mcasts == k);
	c_destroy_free(r);
}

/* Halfway: the switch loses every multicast copy from now on (unicast still goes). */
static void c_mcast_breaks(struct c_run *r)
{
	struct fw_stats st;

	t_stats_sum(r->s, &st);
	c_mcasts = st.bcast_mcasts;
	sim_set_mcast_lost(r->s, true);
}

/*
 * Hardware broadcast that keeps failing, bcast_hw still on: the cards
 * fail over to the tree by themselves, and every broadcast, in flight
 * at the break or posted after it, completes once with its bytes.
 */
static void test_mcast_keeps_failing(void **state)
{
	struct c_run *r = c_mid_run(30, c_mcast_breaks);
	struct fw_stats st;

	(void)state;
	/* Every member lacked the multicast: every card stopped using it. */
	t_stats_sum(r->s, &st);
	assert_int_equal(st.bcast_failovers, r->n);
	assert_int_equal(st.bcast_failures, 0);
	c_destroy_free(r);
}

/* A member posting another length fails, and so does everyone else: no hang. */
static void test_len_mismatch(void **state)
{
	struct c_run *r = c_new(5, 5, NULL, 6, 40000, NULL, 5);
	u32 i, k;

	(void)state;
	for (k = 0; k < r->k; k++) {
		r->root[k] = 1;
		r->len[k] = k == 3 ? 30000 : 100;
	}
	r->len_of = calloc(5 * r->k, sizeof(*r->len_of));
	r->len_of[2 * r->k + 3] = 8;	/* member 2, broadcast 3 */
	c_create(r, 0, 0);
	c_drive(r, 10000, 0, 100 * T_SEC, NULL);
	assert_int_equal(r->bad, 0);
	assert_int_equal(r->m[2].done, 3);
	assert_int_equal(r->m[2].first_err, -EMSGSIZE);
	for (i = 0; i < 5; i++) {
		assert_true(r->m[i].done + r->m[i].errors == r->k);
		if (i != 2 && r->m[i].errors)
			assert_int_equal(r->m[i].first_err, -ECONNRESET);
	}
	/* Those still waiting (the large one's root) learnt it. */
	assert_true(r->m[1].errors > 0);
	c_destroy_free(r);
}

static void c_detach_4(struct c_run *r)
{
	sim_detach(r->s, r->m[4].card, r->m[4].port);
}

/*
 * A member's card dies, or its process goes (its port detached mid-run):
 * the others' broadcasts end, the later ones in errors, in bounded time.
 */
static void c_dies(bool card)
{
	struct c_run *r = c_new(6, 6, NULL, 40, 100, NULL, 6);
	struct c_event ev = { 0, c_detach_4 };
	struct fw_card *c0;
	u64 t0;
	u32 i, k;

	for (k = 0; k < r->k; k++) {
		r->root[k] = k % 6;
		r->len[k] = 64;
	}
	c_create(r, 2, 0);
	t0 = sim_now(r->s);
	ev.at = t0 + 5 * 10000;
	if (card)
		sim_set_dead(r->s, 4, true);
	c0 = sim_card(r->s, 0);
	c_drive(r, 10000, 0, 1000 * T_SEC, card ? NULL : &ev);
	assert_int_equal(r->bad, 0);
	for (i = 0; i < 6; i++) {
		if (i == 4)
			continue;
		assert_true(r->m[i].errors > 0);
		assert_true(r->m[i].first_err == -ETIMEDOUT || r->m[i].first_err == -ECONNRESET);
		assert_true(r->m[i].err_t - t0 < r->k * 10000 + 4 * c0->dead_ns);
		assert_int_equal(r->m[i].done + r->m[i].errors, r->k);
	}
	sim_set_dead(r->s, 4, false);
	c_destroy_free(r);
}

static void test_member_dies(void **state)
{
	(void)state;
	c_dies(true);
	c_dies(false);
}

static s32 c_status(struct c_run *r, u32 i, struct nicoff_cmd c)
{
	struct nicoff_cqe q;

	sim_set_hooks(r->s, NULL);
	sim_post(r->s, r->m[i].card, r->m[i].port, &c);
	q = t_cqe(r->s, r->m[i].card, r->m[i].port, sim_now(r->s) + T_SEC);
	return q.status;
}

static void test_bad_input(void **state)
{
	struct c_run *r = c_new(3, 3, NULL, 2, 100, NULL, 7);
	struct nicoff_cmd c;
	u32 ro_mr;

	(void)state;
	r->root[0] = 0;
	r->len[0] = 10;
	r->root[1] = 2;
	r->len[1] = 10;
	c_create(r, 0, 0);
	assert_int_equal(c_status(r, 0, c_bcast(9, 3, r->m[0].mr, 0, 8)), -EINVAL);
	c = c_bcast(9, 0, r->m[0].mr, 0, 8);
	c.bcast.group_id = C_GID + 1;
	assert_int_equal(c_status(r, 0, c), -ENOENT);
	c = c_bcast(9, 0, r->m[0].mr, 0, 8);
	c.bcast.reserved[1] = 1;
	assert_int_equal(c_status(r, 0, c), -EINVAL);
	assert_int_equal(c_status(r, 0, c_bcast(9, 0, r->m[0].mr, 190, 20)), -ERANGE);
	assert_int_equal(c_status(r, 0, c_bcast(9, 0, 999, 0, 8)), -ENOENT);
	assert_int_equal(c_status(r, 0, c_bcast(9, 0, r->m[0].mr, ~0ull - 3, 8)), -ERANGE);
	assert_int_equal(c_status(r, 0, c_bcast(9, 0, r->m[0].mr, 0, 1ull << 40)), -EMSGSIZE);
	/* A receiver's region must be writable. */
	ro_mr = r->m[1].tab_mr;
	assert_int_equal(c_status(r, 1, c_bcast(9, 0, ro_mr, 0, 8)), -EACCES);
	/* Channels and flags at creation. */
	c = t_group(NICOFF_OP_GROUP_CREATE, 5, C_GID + 2, 0, 1, r->m[0].tab_mr, 2, 0);
	c.group.bcast_channels = 1;
	assert_int_equal(c_status(r, 0, c), -EINVAL);
	c.group.bcast_channels = NICOFF_BCAST_MAX_CHANNELS + 1;
	assert_int_equal(c_status(r, 0, c), -EINVAL);
	c.group.bcast_channels = 0;
	c.group.bcast_flags = 4;
	assert_int_equal(c_status(r, 0, c), -EINVAL);
	/* The group still works after all that. */
	c_expect_all(r, 10000, 0, 10 * T_SEC);
	c_destroy_free(r);
}

/* Many back-to-back broadcasts from rotating roots through two channels. */
static void test_back_to_back(void **state)
{
	struct c_run *r = c_new(5, 5, NULL, 3000, 64, NULL, 8);
	struct fw_stats st;
	u32 k;

	(void)state;
	for (k = 0; k < r->k; k++) {
		r->root[k] = k % 5;
		r->len[k] = 8 + k % 57;
	}
	c_run_all(r, 2, 0, 0, 0, 100 * T_SEC, &st);
	/* One synchronisation per two broadcasts, on every member. */
	assert_true(st.bcast_syncs >= 5 * (r->k / 2));
	/* Nothing lost, nothing sent twice. */
	assert_int_equal(st.bcast_resends, 0);
	assert_int_equal(st.bcast_failovers, 0);
	c_destroy_free(r);
}

/* A member alone: 10,000 broadcasts through two channels, a round ended every two. */
static void test_deep_queue(void **state)
{
	struct c_run *r = c_new(1, 1, NULL, 10000, 16, NULL, 9);
	struct fw_stats st;
	u32 k;

	(void)state;
	for (k = 0; k < r->k; k++)
		r->len[k] = 16;
	c_run_all(r, 2, 0, 0, 0, 10 * T_SEC, &st);
	assert_int_equal(st.bcast_syncs, r->k / 2);
	c_destroy_free(r);
}

/* A receiver posts an eager broadcast late, with another length: refused, nothing freed in use. */
static void test_late_len_mismatch(void **state)
{
	struct c_run *r = c_new(3, 3, NULL, 1, 200, NULL, 21);
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	u32 i;

	(void)state;
	c_create(r, 0, 0);
	sim_set_hooks(r->s, NULL);
	t_fill(r->m[0].buf, 100, c_seed(0));
	for (i = 0; i < 2; i++) {
		c = c_bcast(0, 0, r->m[i].mr, 0, 100);
		sim_post(r->s, r->m[i].card, r->m[i].port, &c);
	}
	sim_run_until(r->s, sim_now(r->s) + T_MS);	/* the data is in member 2's channel */
	c = c_bcast(0, 0, r->m[2].mr, 0, 108);
	sim_post(r->s, r->m[2].card, r->m[2].port, &c);	/* delivered from fw_bc_take */
	q = t_cqe(r->s, r->m[2].card, r->m[2].port, sim_now(r->s) + T_SEC);
	assert_int_equal(q.status, -EMSGSIZE);
	c_destroy_free(r);
}

/* Every tag comes back, all ones too. */
static void test_tag_all_ones(void **state)
{
	struct c_run *r = c_new(1, 1, NULL, 1, 64, NULL, 22);
	struct nicoff_cqe q;

	(void)state;
	c_create(r, 0, 0);
	sim_set_hooks(r->s, NULL);
	{
		struct nicoff_cmd c = c_bcast(~0ull, 0, r->m[0].mr, 0, 16);

		sim_post(r->s, 0, 1, &c);
	}
	assert_true(sim_wait_cqe(r->s, 0, 1, &q, sim_now(r->s) + T_SEC));
	assert_true(q.tag == ~0ull);
	c_destroy_free(r);
}

/* The point-to-point tree without loss: forwarded verdicts arrive, nobody asks rank 0. */
static void test_tree_verdict(void **state)
{
	u32 mode;
	u64 polls[2];

	(void)state;
	for (mode = 0; mode < 2; mode++) {
		struct c_run *r = c_new(13, 13, NULL, 40, 200, NULL, 23);
		struct fw_stats st;
		u32 k;

		for (k = 0; k < r->k; k++) {
			r->root[k] = k % 13;
			r->len[k] = 100;
		}
		c_run_all(r, 2, mode ? NICOFF_BCAST_F_P2P : 0, 0, 0, 100 * T_SEC, &st);
		polls[mode] = st.bcast_nacks;
		c_destroy_free(r);
	}
	/* No loss: nobody should need to ask rank 0 for a verdict. */
	assert_int_equal(polls[1], 0);
}

/*
 * A group destroyed and created again under its id while a member lingers
 * in the old one: the old one serves no data, so the new group's broadcast
 * fails rather than taking the old bytes.
 */
static void test_incarnation(void **state)
{
	struct c_run *r = c_new(2, 2, NULL, 2, 200, NULL, 24);
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	u32 i;

	(void)state;
	r->root[0] = 1;
	r->len[0] = 100;
	r->root[1] = 1;
	r->len[1] = 100;
	c_create(r, 0, 0);
	r->k = 1;			/* one broadcast in the first incarnation */
	c_expect_all(r, 0, 0, 10 * T_SEC);
	r->k = 2;
	sim_set_hooks(r->s, NULL);
	for (i = 0; i < 2; i++) {
		c = t_group(NICOFF_OP_GROUP_DESTROY, C_TAG_DESTROY, C_GID, 0, 0, 0, 0, 0);
		sim_post(r->s, r->m[i].card, r->m[i].port, &c);
		t_expect(r->s, r->m[i].card, r->m[i].port, C_TAG_DESTROY, 0);
	}
	/* Member 0 re-creates at once and posts broadcast 1 of the new group (root 1 is slow). */
	c = t_group(NICOFF_OP_GROUP_CREATE, C_TAG_CREATE, C_GID, 0, 2, r->m[0].tab_mr,
		    NICOFF_BARRIER_DISSEMINATION, 0);
	sim_post(r->s, 0, 1, &c);
	memset(r->m[0].buf + 200, 0xee, 100);
	c = c_bcast(77, 1, r->m[0].mr, 200, 100);
	sim_post(r->s, 0, 1, &c);
	/* Root 1 never posts it; member 0 must not complete with success. */
	while (sim_wait_cqe(r->s, 0, 1, &q, sim_now(r->s) + 50 * T_MS)) {
		if (q.tag != 77)
			continue;
		assert_true(q.status != 0);
	}
	c_destroy_free(r);
}

/*
 * Cards configured with different channel counts: their packets never
 * match (the cookie covers the channels), so the group ends in errors,
 * not in a hang.
 */
static void test_chan_default(void **state)
{
	struct c_run *r = c_new(3, 3, NULL, 12, 200, NULL, 25);
	u32 k;

	(void)state;
	assert_int_equal(fw_set_config(sim_card(r->s, 2), FW_CFG_BCAST_CHANNELS, 4), 0);
	for (k = 0; k < r->k; k++) {
		r->root[k] = k % 2;
		r->len[k] = 100;
	}
	c_create(r, 0, 0);
	c_drive(r, 0, 0, 100 * T_SEC, NULL);
	for (k = 0; k < 3; k++)
		assert_int_equal(r->m[k].done + r->m[k].errors, r->k);
	/* The odd one out hears nobody; the two alike never needed it (no round ended). */
	assert_int_equal(r->m[2].errors, r->k);
	assert_int_equal(r->m[2].first_err, -ETIMEDOUT);
	c_destroy_free(r);
}

/*
 * Another port on a member's card creates a group of the same id that names
 * the victim's root: the victim's multicast is not its to read.
 */
static void test_snoop(void **state)
{
	struct c_run *r = c_new(2, 2, NULL, 1, 200, NULL, 26);
	struct nicoff_member tab[2];
	u8 *spy = calloc(1, 200);
	u32 spy_mr, tab_mr;
	struct nicoff_cmd c;
	struct nicoff_cqe q;

	(void)state;
	r->root[0] = 0;
	r->len[0] = 100;
	c_create(r, 0, 0);
	sim_set_hooks(r->s, NULL);
	assert_int_equal(sim_attach(r->s, 1, 5), 0);
	tab[0] = r->tab[0];		/* the victim's root */
	tab[1].card = 1;
	tab[1].port = 5;		/* the spy */
	spy_mr = t_port_mr(r->s, 1, 5, spy, 200, NICOFF_ACCESS_LOCAL_WRITE, NULL);
	tab_mr = t_port_mr(r->s, 1, 5, tab, sizeof(tab), 0, NULL);
	c = t_group(NICOFF_OP_GROUP_CREATE, C_TAG_CREATE, C_GID, 1, 2, tab_mr,
		    NICOFF_BARRIER_DISSEMINATION, 0);
	sim_post(r->s, 1, 5, &c);
	c = c_bcast(55, 0, spy_mr, 0, 100);
	sim_post(r->s, 1, 5, &c);
	t_fill(r->m[0].buf, 100, c_seed(0));
	c = c_bcast(0, 0, r->m[0].mr, 0, 100);
	sim_post(r->s, 0, 1, &c);		/* the victims broadcast */
	c = c_bcast(0, 0, r->m[1].mr, 0, 100);
	sim_post(r->s, 1, 1, &c);
	while (sim_wait_cqe(r->s, 1, 5, &q, sim_now(r->s) + 10 * T_MS))
		;
	assert_false(t_check(spy, 100, c_seed(0)));
	sim_detach(r->s, 1, 5);
	c_destroy_free(r);
	free(spy);
}

/* A port detached with a BCAST pending: no completion is posted for it. */
static void test_detach_completes(void **state)
{
	struct c_run *r = c_new(2, 2, NULL, 1, 200, NULL, 27);
	struct nicoff_cmd c;
	u64 before;

	(void)state;
	c_create(r, 0, 0);
	sim_set_hooks(r->s, NULL);
	c = c_bcast(66, 0, r->m[1].mr, 0, 100);	/* root 0 never posts */
	sim_post(r->s, 1, 1, &c);
	sim_run_until(r->s, sim_now(r->s) + T_MS);
	before = sim_stats(r->s)->completions;
	sim_detach(r->s, 1, 1);
	assert_true(sim_stats(r->s)->completions == before);
	c_destroy_free(r);
}

/* Members on one card, no loss: a large broadcast's first pass is not taken for resends. */
static void test_local_large(void **state)
{
	struct c_run *r = c_new(3, 1, NULL, 2, 200000, NULL, 28);
	struct fw_stats st;

	(void)state;
	r->root[0] = 0;
	r->len[0] = 200000;
	r->root[1] = 0;
	r->len[1] = 200000;
	c_run_all(r, 0, 0, 0, 0, 10 * T_SEC, &st);
	assert_int_equal(st.bcast_resends, 0);
	c_destroy_free(r);
}

/*
 * A switch output that holds 8 packets: large roots wait for room rather
 * than queue a whole broadcast in front of their receivers' replies, by
 * multicast and down the tree.  A burst (32 fragments, twice on a card
 * with a second member) may go past the room, the next one waits.
 */
static void c_paced(u32 flags)
{
	static const u32 cards[] = { 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4 };
	u32 n = T_ARRAY_SIZE(cards), room = 8 * 1000, k;
	struct c_run *r = c_new(n, 8, cards, n, 200000, NULL, 29);
	struct fw_stats st;

	sim_set_rx_room(r->s, room);
	for (k = 0; k < r->k; k++) {
		r->root[k] = k;
		r->len[k] = 200000 - k;
	}
	c_run_all(r, 0, flags, 0, 0, 100 * T_SEC, &st);
	assert_true(sim_stats(r->s)->rx_queued_peak <= room + 2 * 32 * 1200);
	assert_true(st.bcast_paced > 0);
	assert_int_equal(st.bcast_failures, 0);
	c_destroy_free(r);
}

static void test_paced(void **state)
{
	(void)state;
	c_paced(0);
	c_paced(NICOFF_BCAST_F_P2P);
}

/*
 * How often a card asks a peer that never answers within @span, the
 * interval doubling from rto to rto_max: at rto, 2 rto, 4 rto, ...
 */
static u64 c_backoff_asks(const struct fw_config *cfg, u64 span)
{
	u64 t = cfg->rto_ns, ivl = cfg->rto_ns, n = 1;

	while (t + ivl <= span) {
		t += ivl;
		n++;
		ivl = fw_backoff(cfg, ivl);
	}
	return n;
}

/*
 * Member @dead's card dies, then the other posts @count broadcasts from
 * @root: the questions (NACKs, polls, verdict queries, all counted in
 * bcast_nacks) it asks in half the dead time, and *@bound, as many as
 * backing off allows (and a couple for the timer's rounding).
 */
static u64 c_asks(u32 dead, u32 root, u32 count, u64 *bound)
{
	struct c_run *r = c_new(2, 2, NULL, count, 100, NULL, 31);
	u32 live = 1 - dead, k;
	struct fw_card *c;
	u64 n0, n;

	c_create(r, 2, 0);
	sim_set_hooks(r->s, NULL);
	sim_set_dead(r->s, dead, true);
	c = sim_card(r->s, live);
	n0 = c->stats.bcast_nacks;
	for (k = 0; k < count; k++) {
		struct nicoff_cmd cmd = c_bcast(k, root, r->m[live].mr, k * r->slot, 10);

		sim_post(r->s, live, 1, &cmd);
	}
	sim_run_until(r->s, sim_now(r->s) + c->dead_ns / 2);
	n = c->stats.bcast_nacks - n0;
	*bound = c_backoff_asks(&c->cfg, c->dead_ns / 2) + 2;
	sim_set_dead(r->s, dead, false);
	c_destroy_free(r);
	return n;
}

/*
 * A peer that answers nothing is asked ever less often (hundreds of
 * members asking a lost one every rto would swamp the fabric): a
 * receiver's NACKs to its dead root (one broadcast, the round open), a
 * parent's polls of its dead child (rank 0 roots a round of two), a
 * member's verdict queries to a dead rank 0 (rank 1 roots the round).
 */
static void test_backoff(void **state)
{
	static const u32 cases[3][3] = { { 1, 1, 1 }, { 1, 0, 2 }, { 0, 1, 2 } };
	u64 n, bound;
	u32 i;

	(void)state;
	for (i = 0; i < 3; i++) {
		n = c_asks(cases[i][0], cases[i][1], cases[i][2], &bound);
		print_message("case %u: %llu questions, at most %llu\n", i, (unsigned long long)n,
			      (unsigned long long)bound);
		assert_true(n >= 3);
		assert_true(n <= bound);
	}
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_roots_sizes),
		cmocka_unit_test(test_scattered),
		cmocka_unit_test(test_lossy),
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_mcast_keeps_failing),
		cmocka_unit_test(test_len_mismatch),
		cmocka_unit_test(test_member_dies),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_back_to_back),
		cmocka_unit_test(test_deep_queue),
		cmocka_unit_test(test_late_len_mismatch),
		cmocka_unit_test(test_tag_all_ones),
		cmocka_unit_test(test_tree_verdict),
		cmocka_unit_test(test_incarnation),
		cmocka_unit_test(test_chan_default),
		cmocka_unit_test(test_snoop),
		cmocka_unit_test(test_detach_completes),
		cmocka_unit_test(test_local_large),
		cmocka_unit_test(test_paced),
		cmocka_unit_test(test_backoff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
