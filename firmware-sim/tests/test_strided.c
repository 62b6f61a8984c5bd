// SPDX-License-Identifier: GPL-2.0
/*
 * Strided put and get walked by the card: seeded random shapes of 0 to 8
 * levels, different strides on the two sides, checked byte for byte
 * against a reference walk; zero counts, one-byte chunks, regions ending
 * at the last byte, both sides in one region, overlapping or not; the
 * same under drops, duplicates, reordering and corruption; and every
 * refusal with no byte written; PUT_STRIDED packets whose piece table
 * does not fit their payload are ignored.  Vector put and get (segment lists) likewise:
 * random lists, empty lists and segments, overlaps, faults, refusals, a
 * list rewritten after the card took it.
 */
#include <stdlib.h>

#include "fwtest.h"
/* The reference the kselftest checks against too. */
#include "../../selftests/nicoff_strided_ref.h"

#define S_BIG		0x100000u	/* each side's buffer */
#define S_MAX_EXTENT	0x60000u	/* a random shape spans at most this */
#define S_MAX_LEN	0x20000u	/* and moves at most this */

struct s_env {
	struct sim *s;
	u8 *a, *b;
	struct nicoff_strided_desc *desc;
	struct nicoff_vector_seg *segs;	/* a vector command's list, one more than allowed */
	u32 ma;			/* node 0 port 1: a, all rights (it is also a target) */
	u32 ma_rkey;
	u32 md;			/* node 0 port 1: the descriptor */
	u32 mv;			/* node 0 port 1: the segment list */
	u32 mb, rkey;		/* node 1 port 2: b, all rights */
	u32 ro_rkey;		/* node 1 port 2: b, remote read only */
	u32 wo_rkey;		/* node 1 port 2: b, remote write only */
};

/* Two cards with @mtu (0: t_sim_pair()'s) and the regions of struct s_env. */
static void s_setup_mtu(struct s_env *e, const struct fw_fault_cfg *faults, u32 mtu)
{
	e->s = mtu ? t_sim(2, mtu, 32, faults) : t_sim_pair(faults);
	e->a = calloc(1, S_BIG);
	e->b = calloc(1, S_BIG);
	e->desc = calloc(1, sizeof(*e->desc));
	e->ma = t_port_mr(e->s, 0, 1, e->a, S_BIG, NICOFF_ACCESS_ALL, &e->ma_rkey);
	e->md = t_port_mr(e->s, 0, 1, e->desc, sizeof(*e->desc), 0, NULL);
	e->segs = calloc(NICOFF_VECTOR_MAX_SEGS + 1, sizeof(*e->segs));
	e->mv = t_port_mr(e->s, 0, 1, e->segs, (NICOFF_VECTOR_MAX_SEGS + 1) * sizeof(*e->segs), 0,
			  NULL);
	e->mb = t_port_mr(e->s, 1, 2, e->b, S_BIG, NICOFF_ACCESS_ALL, &e->rkey);
	t_port_mr(e->s, 1, 2, e->b, S_BIG, NICOFF_ACCESS_REMOTE_READ, &e->ro_rkey);
	t_port_mr(e->s, 1, 2, e->b, S_BIG, NICOFF_ACCESS_REMOTE_WRITE, &e->wo_rkey);
}

static void s_setup(struct s_env *e, const struct fw_fault_cfg *faults)
{
	s_setup_mtu(e, faults, 0);
}

static void s_teardown(struct s_env *e)
{
	t_finish(e->s);
	free(e->a);
	free(e->b);
	free(e->desc);
	free(e->segs);
}

static bool s_is_vector(u8 opcode)
{
	return opcode == NICOFF_OP_PUT_VECTOR || opcode == NICOFF_OP_GET_VECTOR;
}

/*
 * A command (tag 77) from node 0 port 1's region a at @off to node 1
 * port 2's b at 0, with the shape in e->desc, @levels the command's; or
 * a vector one of the first @levels segments of e->segs.
 */
static struct nicoff_cmd s_cmd(const struct s_env *e, u8 opcode, u64 off, u32 levels)
{
	struct nicoff_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.tag = 77;
	c.strided = (struct nicoff_op_strided){ .dst_card = 1, .dst_port = 2, .rkey = e->rkey,
						.mr = e->ma, .off = off,
						.desc_mr = s_is_vector(opcode) ? e->mv : e->md,
						.levels = levels };
	return c;
}

/* s_cmd()'s command to card @dst port @dport, region @rkey at @roff, completed. */
static struct nicoff_cqe s_op(struct s_env *e, u8 opcode, u32 dst, u32 dport, u32 rkey,
			      u64 roff, u64 off, u32 levels)
{
	struct nicoff_cmd c = s_cmd(e, opcode, off, levels);
	struct nicoff_cqe q;

	c.strided.dst_card = dst;
	c.strided.dst_port = dport;
	c.strided.rkey = rkey;
	c.strided.remote_off = roff;
	sim_post(e->s, 0, 1, &c);
	q = t_cqe(e->s, 0, 1, sim_now(e->s) + 20 * T_SEC);
	assert_int_equal(q.tag, 77);
	assert_int_equal(q.opcode, opcode);
	return q;
}

/* A put or an accumulate (a to b), not a get (b to a). */
static bool s_is_put(u8 opcode)
{
	return opcode == NICOFF_OP_PUT_STRIDED || opcode == NICOFF_OP_PUT_VECTOR ||
	       opcode == NICOFF_OP_ACC_STRIDED;
}

/* The reference's copy of a destination buffer, written by s_want(). */
static u8 s_ref[S_BIG];

/*
 * The reference: what @opcode of the shape in e->desc, or of the first
 * @levels segments of e->segs, between @local at @off and @remote at
 * @roff leaves in its destination (@remote for a put, @local for a get),
 * written to s_ref.  Returns the bytes it moves.
 */
static u64 s_want(const struct s_env *e, u8 opcode, u32 levels, const u8 *local, u64 off,
		  const u8 *remote, u64 roff)
{
	const struct nicoff_strided_desc *d = e->desc;
	bool put = s_is_put(opcode);

	memcpy(s_ref, put ? remote : local, S_BIG);
	if (s_is_vector(opcode)) {
		vref_copy(e->segs, levels, put, put ? local : remote, put ? off : roff, s_ref,
			  put ? roff : off);
		return vref_len(e->segs, levels);
	}
	if (opcode == NICOFF_OP_ACC_STRIDED)
		sref_acc(d, levels, local, off, d->local_stride, s_ref, roff, d->remote_stride);
	else if (put)
		sref_copy(d, levels, local, off, d->local_stride, s_ref, roff, d->remote_stride);
	else
		sref_copy(d, levels, remote, roff, d->remote_stride, s_ref, off, d->local_stride);
	return sref_len(d, levels);
}

/*
 * A put or accumulate (a to b) or get (b to a) of the shape in e->desc, or
 * of the first @levels segments of e->segs, checked against the reference
 * over the whole destination buffer.
 */
static void s_checked_op(struct s_env *e, u8 opcode, u32 levels, u64 off, u64 roff, u32 seed)
{
	bool put = s_is_put(opcode);
	u8 *src = put ? e->a : e->b, *dst = put ? e->b : e->a;
	struct nicoff_cqe q;
	u64 len;

	t_fill(src, S_BIG, seed);
	t_fill(dst, S_BIG, seed + 1);
	len = s_want(e, opcode, levels, e->a, off, e->b, roff);
	q = s_op(e, opcode, 1, 2, e->rkey, roff, off, levels);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, len);
	assert_memory_equal(dst, s_ref, S_BIG);
}

/* One random put and one random get of a random shape. */
static void s_random_round(struct s_env *e, u64 *seed, u32 round)
{
	u32 levels = sref_random_shape(e->desc, S_MAX_LEN, S_MAX_EXTENT, seed);
	u64 off = sref_rand(seed) % (S_BIG - S_MAX_EXTENT);
	u64 roff = sref_rand(seed) % (S_BIG - S_MAX_EXTENT);

	s_checked_op(e, NICOFF_OP_PUT_STRIDED, levels, off, roff, 1000 + 2 * round);
	s_checked_op(e, NICOFF_OP_GET_STRIDED, levels, off, roff, 3000 + 2 * round);
}

/*
 * @rounds calls of @round on one pair of cards, over a fabric with
 * @faults (NULL: none), which must then have dropped, doubled, reordered
 * and corrupted packets.
 */
static void s_rounds_mtu(const struct fw_fault_cfg *faults, u32 mtu, u32 rounds, u64 seed,
			 void (*round)(struct s_env *e, u64 *seed, u32 round))
{
	struct s_env e;
	u32 r;

	s_setup_mtu(&e, faults, mtu);
	for (r = 0; r < rounds; r++)
		round(&e, &seed, r);
	if (faults)
		t_expect_lossy(e.s, 0);
	s_teardown(&e);
}

static void s_rounds(const struct fw_fault_cfg *faults, u32 rounds, u64 seed,
		     void (*round)(struct s_env *e, u64 *seed, u32 round))
{
	s_rounds_mtu(faults, 0, rounds, seed, round);
}

static void test_random_shapes(void **state)
{
	(void)state;
	s_rounds(NULL, 150, 12345, s_random_round);
}

/* Every byte exactly once through a lossy, duplicating, reordering, corrupting fabric. */
static void test_random_shapes_faults(void **state)
{
	(void)state;
	s_rounds(&t_lossy, 30, 777, s_random_round);
}

/* A shape of @levels with all counts @c and strides @st on both sides. */
static void s_shape(struct s_env *e, u32 levels, u64 chunk, u64 c, u64 st)
{
	u32 i;

	memset(e->desc, 0, sizeof(*e->desc));
	e->desc->count[0] = chunk;
	for (i = 1; i <= levels; i++) {
		e->desc->count[i] = c;
		e->desc->local_stride[i - 1] = st;
		e->desc->remote_stride[i - 1] = st;
	}
}

/* Zero counts, one-byte chunks, a region ending at the shape's last byte. */
/*
 * fw_walk against fw_cursor_piece(): from a random position, with random
 * piece limits, every piece the same length at the same offset, over
 * random shapes of 0 to 8 levels and contiguous walks.
 */
static void test_walk(void **state)
{
	unsigned int seed = 41, round;

	(void)state;
	for (round = 0; round < 2000; round++) {
		struct fw_shape sh = { .levels = (u32)(rand_r(&seed) % 9) };
		struct fw_cursor c;
		struct fw_walk w;
		u64 pos, at, want_at, n, want;
		u32 i;

		sh.count[0] = 1 + rand_r(&seed) % 24;
		for (i = 1; i <= sh.levels; i++) {
			sh.count[i] = 1 + rand_r(&seed) % 3;
			sh.stride[i - 1] = rand_r(&seed) % 4096;
		}
		assert_int_equal(fw_shape_init(&sh), 0);
		if (round % 10)
			fw_cursor_init_strided(&c, rand_r(&seed) % 65536, &sh);
		else
			fw_cursor_init(&c, rand_r(&seed) % 65536, sh.len);
		pos = sh.len ? rand_r(&seed) % sh.len : 0;
		fw_walk_init(&w, &c, pos);
		while (pos < sh.len) {
			u64 max = 1 + rand_r(&seed) % 40;

			want = fw_cursor_piece(&c, pos, max, &want_at);
			n = fw_walk_next(&w, max, &at);
			assert_int_equal(n, want);
			assert_int_equal(at, want_at);
			pos += n;
		}
		assert_int_equal(fw_walk_next(&w, 8, &at), 0);
	}
}

/*
 * fw_walk_next_twin() against two walks of their own, over random pairs of
 * shapes with the same counts and different strides and bases, from a
 * random position.
 */
static void test_walk_twin(void **state)
{
	unsigned int seed = 43, round;

	(void)state;
	for (round = 0; round < 2000; round++) {
		struct fw_shape ls = { .levels = (u32)(rand_r(&seed) % 9) }, rs;
		struct fw_cursor lc, rc;
		struct fw_walk l, r, lref, rref;
		u64 pos, at, rat, want_at, want_rat, n, want;
		u32 i;

		ls.count[0] = 1 + rand_r(&seed) % 24;
		for (i = 1; i <= ls.levels; i++) {
			ls.count[i] = 1 + rand_r(&seed) % 3;
			ls.stride[i - 1] = rand_r(&seed) % 4096;
		}
		rs = ls;
		for (i = 0; i < rs.levels; i++)
			rs.stride[i] = rand_r(&seed) % 4096;
		assert_int_equal(fw_shape_init(&ls), 0);
		assert_int_equal(fw_shape_init(&rs), 0);
		fw_cursor_init_strided(&lc, rand_r(&seed) % 65536, &ls);
		fw_cursor_init_strided(&rc, rand_r(&seed) % 65536, &rs);
		pos = ls.len ? rand_r(&seed) % ls.len : 0;
		fw_walk_init(&l, &lc, pos);
		assert_true(fw_walk_twins(&l, &rc));
		fw_walk_init_twin(&r, &l, &rc);
		fw_walk_init(&lref, &lc, pos);
		fw_walk_init(&rref, &rc, pos);
		assert_int_equal(r.at, rref.at);
		while (pos < ls.len) {
			u64 max = 1 + rand_r(&seed) % 40;

			want = fw_walk_next(&lref, max, &want_at);
			assert_int_equal(fw_walk_next(&rref, want, &want_rat), want);
			n = fw_walk_next_twin(&l, &r, max, &at, &rat);
			assert_int_equal(n, want);
			assert_int_equal(at, want_at);
			assert_int_equal(rat, want_rat);
			pos += n;
		}
		assert_int_equal(fw_walk_next_twin(&l, &r, 8, &at, &rat), 0);
	}
}

static void test_edges(void **state)
{
	u32 exact, exact_rkey, opcode;
	struct nicoff_cqe q;
	struct s_env e;
	u32 k;

	(void)state;
	s_setup(&e, NULL);
	for (k = 0; k < 2; k++) {
		opcode = k ? NICOFF_OP_GET_STRIDED : NICOFF_OP_PUT_STRIDED;
		/* A zero count anywhere moves nothing, successfully. */
		t_fill(e.a, S_BIG, 5);
		t_fill(e.b, S_BIG, 6);
		s_shape(&e, 3, 16, 4, 100);
		e.desc->count[2] = 0;
		q = s_op(&e, opcode, 1, 2, e.rkey, 0, 0, 3);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, 0);
		assert_true(t_check(e.a, S_BIG, 5) && t_check(e.b, S_BIG, 6));
		/* Levels above the command's are ignored, garbage or not. */
		s_shape(&e, 0, 3, 0, 0);
		e.desc->count[1] = ~0ull;
		e.desc->local_stride[0] = ~0ull;
		q = s_op(&e, opcode, 1, 2, e.rkey, 4093, 4094, 0);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, 3);
	}
	/* One-byte chunks across page boundaries, into a region that ends at the last one. */
	s_shape(&e, 2, 1, 70, 97);
	exact = t_port_mr(e.s, 1, 2, e.b + 4000, 1 + 69 * 97 + 69 * 97, NICOFF_ACCESS_ALL,
			  &exact_rkey);
	t_fill(e.a, S_BIG, 7);
	t_fill(e.b, S_BIG, 17);
	s_want(&e, NICOFF_OP_PUT_STRIDED, 2, e.a, 0, e.b, 4000);
	q = s_op(&e, NICOFF_OP_PUT_STRIDED, 1, 2, exact_rkey, 0, 0, 2);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, 70 * 70);
	assert_memory_equal(e.b, s_ref, S_BIG);
	s_want(&e, NICOFF_OP_GET_STRIDED, 2, e.a, 50, e.b, 4000);
	q = s_op(&e, NICOFF_OP_GET_STRIDED, 1, 2, exact_rkey, 0, 50, 2);
	assert_int_equal(q.status, 0);
	assert_memory_equal(e.a, s_ref, S_BIG);
	/* One byte further is outside it: refused, nothing written. */
	t_fill(e.b, S_BIG, 8);
	q = s_op(&e, NICOFF_OP_PUT_STRIDED, 1, 2, exact_rkey, 1, 0, 2);
	assert_int_equal(q.status, -ERANGE);
	assert_true(t_check(e.b, S_BIG, 8));
	(void)exact;
	s_teardown(&e);
}

/* Both sides in one region of one card: chunks interleaved, none overlapping. */
static void test_same_region(void **state)
{
	struct s_env e;
	u32 k;

	(void)state;
	s_setup(&e, NULL);
	s_shape(&e, 1, 100, 500, 200);
	t_fill(e.a, S_BIG, 9);
	/* A put from 0 to 100, then a get from 100 to 0 of what it left. */
	for (k = 0; k < 2; k++) {
		u8 opcode = k ? NICOFF_OP_GET_STRIDED : NICOFF_OP_PUT_STRIDED;

		s_want(&e, opcode, 1, e.a, 0, e.a, 100);
		assert_int_equal(s_op(&e, opcode, 0, 1, e.ma_rkey, 100, 0, 1).status, 0);
		assert_memory_equal(e.a, s_ref, S_BIG);
	}
	s_teardown(&e);
}

/*
 * A put or get of the shape in e->desc from @soff to @doff of region a
 * (card 0 port 1 to itself), which held @before: completed, and its bytes.
 */
static u64 s_in_a(struct s_env *e, bool put, u32 levels, u64 soff, u64 doff, u8 *before,
		  u32 seed)
{
	struct nicoff_cqe q;

	t_fill(e->a, S_BIG, seed);
	memcpy(before, e->a, S_BIG);
	q = s_op(e, put ? NICOFF_OP_PUT_STRIDED : NICOFF_OP_GET_STRIDED, 0, 1, e->ma_rkey,
		 put ? doff : soff, put ? soff : doff, levels);
	assert_int_equal(q.status, 0);
	return q.result;
}

/*
 * Source and destination overlapping in one region, a random shape whose
 * destination chunks are disjoint: what sref_overlap_check() allows, and
 * no byte written outside the destination's chunks.
 */
static void s_overlap_round(struct s_env *e, u64 *seed, u32 r)
{
	static u8 before[S_BIG];
	struct nicoff_strided_desc *d = e->desc;
	u32 levels = sref_random_shape(d, S_MAX_LEN, S_MAX_EXTENT, seed);
	bool put = r % 2 == 0;
	u64 *ss = put ? d->local_stride : d->remote_stride;
	u64 *ds = put ? d->remote_stride : d->local_stride;
	u64 ext, soff, doff;

	sref_disjoint(d, levels, ds);
	ext = fw_max_u64(sref_extent(d, levels, ss), sref_extent(d, levels, ds));
	if (ext > S_MAX_EXTENT)
		return;
	/* The destination's start within an extent of the source's, either side. */
	soff = ext + sref_rand(seed) % (S_BIG - S_MAX_EXTENT - ext);
	doff = soff + sref_rand(seed) % (2 * ext) - ext;
	doff = fw_min_u64(doff, S_BIG - S_MAX_EXTENT);
	assert_int_equal(s_in_a(e, put, levels, soff, doff, before, 500 + r), sref_len(d, levels));
	assert_int_equal(sref_overlap_check(d, levels, soff, ss, doff, ds, before, e->a, S_BIG),
			 -1);
}

/*
 * Overlapping sides in one region.  A transfer that fits one packet is a
 * copy of the source as it was: the card reads a packet whole before any
 * of it is written.
 */
static void test_overlap(void **state)
{
	static u8 before[S_BIG];
	struct nicoff_strided_desc *d;
	struct s_env e;
	u32 k;

	(void)state;
	s_setup(&e, NULL);
	d = e.desc;
	for (k = 0; k < 2; k++) {
		/* Four 16-byte chunks, each read before the one before it lands on it. */
		s_shape(&e, 1, 16, 4, 16);
		(k ? d->local_stride : d->remote_stride)[0] = 24;
		assert_int_equal(s_in_a(&e, !k, 1, 4000, 4008, before, 600 + k), 64);
		s_want(&e, k ? NICOFF_OP_GET_STRIDED : NICOFF_OP_PUT_STRIDED, 1, before,
		       k ? 4008 : 4000, before, k ? 4000 : 4008);
		assert_memory_equal(e.a, s_ref, S_BIG);
	}
	s_teardown(&e);
	s_rounds(NULL, 60, 99, s_overlap_round);
	s_rounds(&t_lossy, 16, 98, s_overlap_round);
}

/*
 * Post a put to card 1 port 2 from offset 0 to 0 of the shape in e->desc
 * or the first @levels segments of e->segs, and run the simulation until
 * some of it is on the wire.
 */
static void s_post_started(struct s_env *e, u8 opcode, u32 levels)
{
	struct nicoff_cmd c = s_cmd(e, opcode, 0, levels);

	sim_post(e->s, 0, 1, &c);
	for (;;) {
		struct fw_stats st;

		fw_get_stats(sim_card(e->s, 0), &st);
		if (st.tx_pkts)
			return;
		assert_true(sim_step(e->s));
	}
}

/* The card copied the descriptor when it took the command: rewriting it later changes nothing. */
static void test_descriptor_rewritten(void **state)
{
	struct nicoff_cqe q;
	struct s_env e;

	(void)state;
	s_setup(&e, NULL);
	s_shape(&e, 2, 500, 30, 1000);
	t_fill(e.a, S_BIG, 10);
	t_fill(e.b, S_BIG, 11);
	s_want(&e, NICOFF_OP_PUT_STRIDED, 2, e.a, 0, e.b, 0);
	/* Some of it on the wire, then a shape that would run past the region. */
	s_post_started(&e, NICOFF_OP_PUT_STRIDED, 2);
	s_shape(&e, 2, 4096, 4096, 1ull << 40);
	q = t_cqe(e.s, 0, 1, sim_now(e.s) + 10 * T_SEC);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, 500 * 30 * 30);
	assert_memory_equal(e.b, s_ref, S_BIG);
	s_teardown(&e);
}

/*
 * A command of @levels whose descriptor is not inside its region: it
 * starts @past bytes in, or where its end wraps.
 */
static void s_desc_outside(struct s_env *e, u8 opcode, u32 levels, u64 past)
{
	struct nicoff_cmd c = s_cmd(e, opcode, 0, levels);
	struct nicoff_cqe q;

	c.strided.desc_off = past;
	sim_post(e->s, 0, 1, &c);
	q = t_cqe(e->s, 0, 1, sim_now(e->s) + T_SEC);
	assert_int_equal(q.status, -ERANGE);
	c.strided.desc_off = ~0ull - 30;
	sim_post(e->s, 0, 1, &c);
	q = t_cqe(e->s, 0, 1, sim_now(e->s) + T_SEC);
	assert_int_equal(q.status, -ERANGE);
}

/* Each refusal completes with its error and writes no byte on either side. */
static void test_refusals(void **state)
{
	static const struct {
		u32 levels, rkey_sel, dst, dport;
		u64 chunk, c, st, off, roff;
		s32 want_put, want_get;
	} cases[] = {
		/* too many levels */
		{ 9, 0, 1, 2, 8, 2, 8, 0, 0, -EINVAL, -EINVAL },
		/* the counts' product overflows */
		{ 8, 0, 1, 2, 1ull << 20, 1ull << 8, 1, 0, 0, -EOVERFLOW, -EOVERFLOW },
		/* a stride overflows the extent */
		{ 2, 0, 1, 2, 8, 3, 1ull << 63, 0, 0, -ERANGE, -ERANGE },
		/* the local side steps outside its region */
		{ 2, 0, 1, 2, 100, 10, 0x10000, 0, 0, -ERANGE, -ERANGE },
		/* the remote side does (the target refuses) */
		{ 1, 0, 1, 2, 100, 10, 0x1000, 0, S_BIG - 0x1000, -ERANGE, -ERANGE },
		/* missing rights: a read-only or write-only rkey */
		{ 1, 1, 1, 2, 100, 10, 200, 0, 0, -EACCES, 0 },
		{ 1, 2, 1, 2, 100, 10, 200, 0, 0, 0, -EACCES },
		/* no such port, no such card */
		{ 1, 0, 1, 9, 100, 10, 200, 0, 0, -ECONNREFUSED, -ECONNREFUSED },
		{ 1, 0, 7, 2, 100, 10, 200, 0, 0, -EINVAL, -EINVAL },
	};
	struct s_env e;
	u32 i, k;

	(void)state;
	s_setup(&e, NULL);
	for (i = 0; i < T_ARRAY_SIZE(cases); i++) {
		u32 rkeys[] = { e.rkey, e.ro_rkey, e.wo_rkey };

		for (k = 0; k < 2; k++) {
			u8 opcode = k ? NICOFF_OP_GET_STRIDED : NICOFF_OP_PUT_STRIDED;
			s32 want = cases[i].want_put;
			struct nicoff_cqe q;

			if (k)
				want = cases[i].want_get;
			t_fill(e.a, S_BIG, 20 + i);
			t_fill(e.b, S_BIG, 40 + i);
			s_shape(&e, fw_min_u32(cases[i].levels, 8), cases[i].chunk, cases[i].c,
				cases[i].st);
			q = s_op(&e, opcode, cases[i].dst, cases[i].dport, rkeys[cases[i].rkey_sel],
				 cases[i].roff, cases[i].off, cases[i].levels);
			assert_int_equal(q.status, want);
			if (want) {
				assert_int_equal(q.result, 0);
				assert_true(t_check(e.a, S_BIG, 20 + i));
				assert_true(t_check(e.b, S_BIG, 40 + i));
			}
		}
	}
	memset(e.desc, 0, sizeof(*e.desc));
	s_desc_outside(&e, NICOFF_OP_PUT_STRIDED, 0, 8);
	s_teardown(&e);
}

/*
 * A PUT_STRIDED packet to card 1 port 2 as card 0 would send it, opening
 * epoch @epoch: @n pieces (offset @roff + 100 * i, @len[i] bytes of 0xee)
 * claiming @count pieces, at message offset @offset of @total bytes.
 */
static void s_inject(struct s_env *e, u32 epoch, u32 n, u64 count, const u64 *len, u64 roff,
		     u64 offset, u64 total)
{
	u64 data = 0, *w;
	struct fw_pkt *pkt;
	u32 i;

	for (i = 0; i < n; i++)
		data += len[i];
	pkt = t_pkt(e->s, FW_PKT_PUT_STRIDED, FW_PKT_F_SYN | FW_PKT_F_ACKREQ,
		    16 + 16 * n + (u32)data);
	pkt->hdr.epoch = epoch;
	pkt->hdr.msg_id = epoch;
	pkt->hdr.offset = offset;
	pkt->hdr.total = total;
	pkt->hdr.roff = roff;
	pkt->hdr.span_end = roff + 100 * n + 100;
	pkt->hdr.rkey = e->rkey;
	w = (u64 *)pkt->payload;
	w[0] = count;		/* pieces, and acc 0 (a put) above them if they fit 32 bits */
	for (i = 0; i < n; i++) {
		w[2 + 2 * i] = roff + 100 * i;
		w[3 + 2 * i] = len[i];
	}
	memset(pkt->payload + 16 + 16 * n, 0xee, data);
	t_pkt_send(e->s, pkt);
}

static void test_malformed_pieces(void **state)
{
	const u64 len[3] = { 10, 20, 30 }, beyond[3] = { 10, 20, 250 };
	struct fw_stats st0, st;
	struct s_env e;

	(void)state;
	s_setup(&e, NULL);
	t_fill(e.b, S_BIG, 12);
	fw_get_stats(sim_card(e.s, 1), &st0);
	/* More pieces claimed than the payload holds; lengths not filling it; past the message. */
	s_inject(&e, 77, 3, 4, len, 1000, 0, 60);
	s_inject(&e, 78, 3, 2, len, 1000, 0, 60);
	s_inject(&e, 79, 3, 3, len, 1000, 10, 60);
	s_inject(&e, 80, 0, 1ull << 31, len, 1000, 0, 0);
	/* An unknown element type, and int32 elements cut (10 bytes), in the high half. */
	s_inject(&e, 82, 3, 3 | (7ull << 32), len, 1000, 0, 60);
	s_inject(&e, 83, 3, 3 | ((u64)NICOFF_ACC_INT32 << 32), len, 1000, 0, 60);
	/* A piece past the span the packet announces. */
	s_inject(&e, 84, 3, 3, beyond, 1000, 0, 280);
	assert_true(t_check(e.b, S_BIG, 12));
	/* They reached the card, sound on the wire, and were refused there. */
	fw_get_stats(sim_card(e.s, 1), &st);
	assert_int_equal(st.rx_pkts - st0.rx_pkts, 7);
	assert_int_equal(st.crc_errors, st0.crc_errors);
	/* The same, sound: written where its table says. */
	s_inject(&e, 81, 3, 3, len, 1000, 0, 60);
	assert_int_equal(e.b[1000], 0xee);
	assert_int_equal(e.b[1000 + 100 + 19], 0xee);
	assert_int_equal(e.b[1000 + 200 + 29], 0xee);
	assert_int_not_equal(e.b[1000 + 10], 0xee);
	s_teardown(&e);
}

/* A strided accumulate of elements @acc (INT32 or INT64) with @scale, checked whole. */
static void s_checked_acc(struct s_env *e, u32 acc, s64 scale, u32 levels, u64 off, u64 roff,
			  u32 seed)
{
	e->desc->acc = acc;
	e->desc->scale = scale;
	s_checked_op(e, NICOFF_OP_ACC_STRIDED, levels, off, roff, seed);
}

/* A random shape of whole elements accumulated; under faults, a doubled piece would show. */
static void s_acc_round(struct s_env *e, u64 *seed, u32 r)
{
	u32 acc = r % 2 ? NICOFF_ACC_INT64 : NICOFF_ACC_INT32, w = r % 2 ? 8 : 4;
	u32 levels = sref_random_shape(e->desc, S_MAX_LEN, S_MAX_EXTENT, seed);
	u64 off = sref_rand(seed) % (S_BIG - S_MAX_EXTENT);
	u64 roff = sref_rand(seed) % (S_BIG - S_MAX_EXTENT);

	/* Whole elements: a chunk of at least one, strides kept. */
	e->desc->count[0] = (e->desc->count[0] + w - 1) / w * w;
	if (sref_extent(e->desc, levels, e->desc->local_stride) > S_MAX_EXTENT ||
	    sref_extent(e->desc, levels, e->desc->remote_stride) > S_MAX_EXTENT)
		return;
	s_checked_acc(e, acc, (s64)(sref_rand(seed) % 7) - 3, levels, off, roff, 50 + r);
}

static void test_accumulate(void **state)
{
	(void)state;
	s_rounds(NULL, 80, 31, s_acc_round);
	s_rounds(&t_lossy, 20, 32, s_acc_round);
	/* Room for a packet's last piece that is not whole elements: cut it to them. */
	s_rounds_mtu(NULL, 1003, 40, 33, s_acc_round);
}

/* What the card refuses to accumulate, and what a put or get may not carry. */
static void test_accumulate_refusals(void **state)
{
	static const struct {
		u8 opcode;
		u32 acc;
		s64 scale;
		u64 chunk;
		s32 want;
	} cases[] = {
		{ NICOFF_OP_ACC_STRIDED, NICOFF_ACC_DOUBLE, 1, 64, -EOPNOTSUPP },
		{ NICOFF_OP_ACC_STRIDED, 9, 1, 64, -EINVAL },
		{ NICOFF_OP_ACC_STRIDED, NICOFF_ACC_NONE, 1, 64, -EINVAL },
		{ NICOFF_OP_ACC_STRIDED, NICOFF_ACC_INT64, 1, 12, -EINVAL },
		{ NICOFF_OP_ACC_STRIDED, NICOFF_ACC_INT32, 1, 6, -EINVAL },
		{ NICOFF_OP_PUT_STRIDED, NICOFF_ACC_INT32, 0, 64, -EINVAL },
		{ NICOFF_OP_GET_STRIDED, 0, 5, 64, -EINVAL },
	};
	struct nicoff_cqe q;
	struct s_env e;
	u32 i;

	(void)state;
	s_setup(&e, NULL);
	for (i = 0; i < T_ARRAY_SIZE(cases); i++) {
		t_fill(e.a, S_BIG, 60 + i);
		t_fill(e.b, S_BIG, 70 + i);
		s_shape(&e, 1, cases[i].chunk, 10, 100);
		e.desc->acc = cases[i].acc;
		e.desc->scale = cases[i].scale;
		q = s_op(&e, cases[i].opcode, 1, 2, e.rkey, 0, 0, 1);
		assert_int_equal(q.status, cases[i].want);
		assert_true(t_check(e.a, S_BIG, 60 + i) && t_check(e.b, S_BIG, 70 + i));
	}
	/* A reserved field. */
	s_shape(&e, 1, 64, 10, 100);
	e.desc->acc = NICOFF_ACC_INT32;
	e.desc->reserved = 1;
	q = s_op(&e, NICOFF_OP_ACC_STRIDED, 1, 2, e.rkey, 0, 0, 1);
	assert_int_equal(q.status, -EINVAL);
	/* A read-only target: nothing written. */
	e.desc->reserved = 0;
	t_fill(e.b, S_BIG, 90);
	q = s_op(&e, NICOFF_OP_ACC_STRIDED, 1, 2, e.ro_rkey, 0, 0, 1);
	assert_int_equal(q.status, -EACCES);
	assert_true(t_check(e.b, S_BIG, 90));
	s_teardown(&e);
}

/* A random list (empty, zero-length and overlapping segments among them), both ways. */
static void s_vector_round(struct s_env *e, u64 *seed, u32 r)
{
	/* Small segments share packets; large ones span several. */
	u64 max_seg = r % 3 ? 200 : 9000;
	u32 n = vref_random(e->segs, NICOFF_VECTOR_MAX_SEGS, S_MAX_EXTENT, max_seg, seed);
	u64 off = sref_rand(seed) % (S_BIG - S_MAX_EXTENT);
	u64 roff = sref_rand(seed) % (S_BIG - S_MAX_EXTENT);

	s_checked_op(e, NICOFF_OP_PUT_VECTOR, n, off, roff, 100 + 2 * r);
	s_checked_op(e, NICOFF_OP_GET_VECTOR, n, off, roff, 300 + 2 * r);
}

/* The same under faults: every byte exactly once. */
static void test_vector_random(void **state)
{
	(void)state;
	s_rounds(NULL, 120, 4242, s_vector_round);
	s_rounds(&t_lossy, 30, 4343, s_vector_round);
}

/* No segments, only empty ones, one byte each, a region ending at the last byte. */
static void test_vector_edges(void **state)
{
	u32 exact_rkey, i, k;
	struct nicoff_cqe q;
	struct s_env e;

	(void)state;
	s_setup(&e, NULL);
	for (k = 0; k < 2; k++) {
		u8 opcode = k ? NICOFF_OP_GET_VECTOR : NICOFF_OP_PUT_VECTOR;

		t_fill(e.a, S_BIG, 5);
		t_fill(e.b, S_BIG, 6);
		q = s_op(&e, opcode, 1, 2, e.rkey, 0, 0, 0);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, 0);
		/* Empty segments move nothing and are not held to the region. */
		for (i = 0; i < 3; i++)
			e.segs[i] = (struct nicoff_vector_seg){ 1ull << 40, ~0ull, 0 };
		q = s_op(&e, opcode, 1, 2, e.rkey, 0, 0, 3);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, 0);
		assert_true(t_check(e.a, S_BIG, 5) && t_check(e.b, S_BIG, 6));
	}
	/* One-byte segments across a page boundary, backwards. */
	for (i = 0; i < NICOFF_VECTOR_MAX_SEGS; i++)
		e.segs[i] = (struct nicoff_vector_seg){ 4090 + i, 8191 - i, 1 };
	s_checked_op(&e, NICOFF_OP_PUT_VECTOR, NICOFF_VECTOR_MAX_SEGS, 3, 0, 7);
	s_checked_op(&e, NICOFF_OP_GET_VECTOR, NICOFF_VECTOR_MAX_SEGS, 3, 0, 8);
	/* A region that ends at the list's last byte, then one byte short of it. */
	t_port_mr(e.s, 1, 2, e.b + 4000, 5000, NICOFF_ACCESS_ALL, &exact_rkey);
	e.segs[0] = (struct nicoff_vector_seg){ 0, 4000, 1000 };
	e.segs[1] = (struct nicoff_vector_seg){ 2000, 0, 3000 };
	t_fill(e.a, S_BIG, 9);
	t_fill(e.b, S_BIG, 10);
	q = s_op(&e, NICOFF_OP_PUT_VECTOR, 1, 2, exact_rkey, 0, 0, 2);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, 4000);
	assert_memory_equal(e.b + 8000, e.a, 1000);
	assert_memory_equal(e.b + 4000, e.a + 2000, 3000);
	t_fill(e.b, S_BIG, 11);
	q = s_op(&e, NICOFF_OP_PUT_VECTOR, 1, 2, exact_rkey, 1, 0, 2);
	assert_int_equal(q.status, -ERANGE);
	assert_true(t_check(e.b, S_BIG, 11));
	s_teardown(&e);
}

/* The card copied the list when it took the command: rewriting it later changes nothing. */
static void test_vector_rewritten(void **state)
{
	struct nicoff_cqe q;
	const u32 n = NICOFF_VECTOR_MAX_SEGS;
	struct s_env e;
	u32 i;

	(void)state;
	s_setup(&e, NULL);
	for (i = 0; i < n; i++)
		e.segs[i] = (struct nicoff_vector_seg){ 3000 * i, 2000 * (n - 1 - i), 1500 };
	t_fill(e.a, S_BIG, 12);
	t_fill(e.b, S_BIG, 13);
	s_want(&e, NICOFF_OP_PUT_VECTOR, n, e.a, 0, e.b, 0);
	/* Some of it on the wire, then segments that would run past the region. */
	s_post_started(&e, NICOFF_OP_PUT_VECTOR, n);
	for (i = 0; i < n; i++)
		e.segs[i] = (struct nicoff_vector_seg){ 0, S_BIG * 2, 4096 };
	q = t_cqe(e.s, 0, 1, sim_now(e.s) + 10 * T_SEC);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, n * 1500);
	assert_memory_equal(e.b, s_ref, S_BIG);
	s_teardown(&e);
}

/* Each refusal completes with its error and writes no byte on either side. */
static void test_vector_refusals(void **state)
{
	static const struct {
		u32 n, rkey_sel, dst, dport;
		u64 loff, roff, len, off, cmd_roff;
		s32 want_put, want_get;
	} cases[] = {
		/* more segments than the card takes */
		{ NICOFF_VECTOR_MAX_SEGS + 1, 0, 1, 2, 0, 0, 8, 0, 0, -EINVAL, -EINVAL },
		/* a segment whose end wraps, on either side */
		{ 2, 0, 1, 2, ~0ull - 4, 0, 8, 0, 0, -ERANGE, -ERANGE },
		{ 2, 0, 1, 2, 0, ~0ull - 4, 8, 0, 0, -ERANGE, -ERANGE },
		/* lengths whose sum overflows */
		{ 2, 0, 1, 2, 0, 0, 1ull << 63, 0, 0, -EOVERFLOW, -EOVERFLOW },
		/* the command's offset plus a segment's wraps */
		{ 2, 0, 1, 2, 1ull << 63, 0, 8, 1ull << 63, 0, -ERANGE, -ERANGE },
		/* the local side outside its region */
		{ 2, 0, 1, 2, S_BIG - 4, 0, 8, 0, 0, -ERANGE, -ERANGE },
		/* the remote side (the target refuses) */
		{ 2, 0, 1, 2, 0, S_BIG - 4, 8, 0, 0, -ERANGE, -ERANGE },
		{ 2, 0, 1, 2, 0, 0, 8, 0, S_BIG, -ERANGE, -ERANGE },
		/* missing rights: a read-only or write-only rkey */
		{ 2, 1, 1, 2, 0, 100, 8, 0, 0, -EACCES, 0 },
		{ 2, 2, 1, 2, 0, 100, 8, 0, 0, 0, -EACCES },
		/* no such port, no such card */
		{ 2, 0, 1, 9, 0, 0, 8, 0, 0, -ECONNREFUSED, -ECONNREFUSED },
		{ 2, 0, 7, 2, 0, 0, 8, 0, 0, -EINVAL, -EINVAL },
	};
	struct nicoff_cqe q;
	struct s_env e;
	u32 i, j, k;

	(void)state;
	s_setup(&e, NULL);
	for (i = 0; i < T_ARRAY_SIZE(cases); i++) {
		u32 rkeys[] = { e.rkey, e.ro_rkey, e.wo_rkey };

		for (k = 0; k < 2; k++) {
			s32 want = cases[i].want_put;

			if (k)
				want = cases[i].want_get;

			/* Sound segments first: the bad one is the last, and nothing moves. */
			for (j = 0; j < cases[i].n; j++)
				e.segs[j] = (struct nicoff_vector_seg){ 64 * j, 64 * j, 8 };
			e.segs[cases[i].n - 1] = (struct nicoff_vector_seg){ cases[i].loff,
									     cases[i].roff,
									     cases[i].len };
			if (cases[i].len == 1ull << 63)
				e.segs[0] = e.segs[cases[i].n - 1];
			t_fill(e.a, S_BIG, 20 + i);
			t_fill(e.b, S_BIG, 40 + i);
			q = s_op(&e, k ? NICOFF_OP_GET_VECTOR : NICOFF_OP_PUT_VECTOR, cases[i].dst,
				 cases[i].dport, rkeys[cases[i].rkey_sel], cases[i].cmd_roff,
				 cases[i].off, cases[i].n);
			assert_int_equal(q.status, want);
			if (want) {
				assert_int_equal(q.result, 0);
				assert_true(t_check(e.a, S_BIG, 20 + i));
				assert_true(t_check(e.b, S_BIG, 40 + i));
			}
		}
	}
	e.segs[0] = (struct nicoff_vector_seg){ 0, 0, 8 };
	s_desc_outside(&e, NICOFF_OP_GET_VECTOR, 2, NICOFF_VECTOR_MAX_SEGS * sizeof(e.segs[0]));
	s_teardown(&e);
}

/*
 * A GET_VECTOR_REQ to card 1 port 2 as card 0 would send it, opening
 * epoch @epoch: @n (offset, length) pairs from @w, claiming @count, for
 * @total bytes at @roff; the target's verdict: 0 if it took it, else the
 * error it answered with (and counted on its port).
 */
static s32 v_inject(struct s_env *e, u32 epoch, u32 n, u64 count, const u64 *w, u64 total,
		    u64 roff)
{
	struct fw_pkt *pkt = t_pkt(e->s, FW_PKT_GET_VECTOR_REQ, FW_PKT_F_SYN | FW_PKT_F_ACKREQ,
				   8 + 16 * n);
	u64 before = fw_port_remote_errors(sim_card(e->s, 1), 2, NULL);
	struct fw_remote_error last;

	pkt->hdr.epoch = epoch;
	pkt->hdr.msg_id = epoch;
	pkt->hdr.total = total;
	pkt->hdr.roff = roff;
	pkt->hdr.rkey = e->rkey;
	memcpy(pkt->payload, &count, 8);
	memcpy(pkt->payload + 8, w, 16 * n);
	t_pkt_send(e->s, pkt);
	if (fw_port_remote_errors(sim_card(e->s, 1), 2, &last) == before)
		return 0;
	assert_int_equal(last.opcode, NICOFF_OP_GET_VECTOR);
	return last.status;
}

/* The target checks a vector GET's list whole before it reads a byte. */
static void test_vector_bad_request(void **state)
{
	static u64 w[2 * (NICOFF_VECTOR_MAX_SEGS + 1)];
	const u64 ok[4] = { 0, 100, 500, 50 }, zero[4] = { 0, 100, 500, 0 };
	const u64 wrap[2] = { ~0ull - 10, 20 };
	struct s_env e;
	u32 i;

	(void)state;
	s_setup(&e, NULL);
	for (i = 0; i <= NICOFF_VECTOR_MAX_SEGS; i++) {
		w[2 * i] = 10 * i;
		w[2 * i + 1] = 1;
	}
	assert_int_equal(v_inject(&e, 11, 65, 65, w, 65, 0), -EINVAL);	/* too many */
	assert_int_equal(v_inject(&e, 12, 2, 3, ok, 150, 0), -EINVAL);	/* count != pairs */
	assert_int_equal(v_inject(&e, 13, 2, 2, zero, 100, 0), -EINVAL);	/* empty segment */
	assert_int_equal(v_inject(&e, 14, 2, 2, ok, 151, 0), -EINVAL);	/* total differs */
	assert_int_equal(v_inject(&e, 15, 1, 1, wrap, 20, 0), -ERANGE);	/* end wraps */
	assert_int_equal(v_inject(&e, 16, 2, 2, ok, 150, ~0ull - 100), -ERANGE); /* roff + extent */
	assert_int_equal(v_inject(&e, 17, 2, 2, ok, 150, S_BIG - 500), -ERANGE); /* outside */
	/* Sound: answered (card 0 waits for no such GET and ignores the answer). */
	assert_int_equal(v_inject(&e, 18, 2, 2, ok, 150, 0), 0);
	s_teardown(&e);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_random_shapes),
		cmocka_unit_test(test_random_shapes_faults),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_walk_twin),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_same_region),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_descriptor_rewritten),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_malformed_pieces),
		cmocka_unit_test(test_accumulate),
		cmocka_unit_test(test_accumulate_refusals),
		cmocka_unit_test(test_vector_random),
		cmocka_unit_test(test_vector_edges),
		cmocka_unit_test(test_vector_rewritten),
		cmocka_unit_test(test_vector_refusals),
		cmocka_unit_test(test_vector_bad_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
