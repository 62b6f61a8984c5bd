// SPDX-License-Identifier: GPL-2.0
/*
 * Strided put and get walked by the card: seeded random shapes of 0 to 8
 * levels, different strides on the two sides, checked byte for byte
 * against a reference walk; zero counts, one-byte chunks, regions ending
 * at the last byte, both sides in one region; the same under drops,
 * duplicates, reordering and corruption; and every refusal with no byte
 * written; PUT_STRIDED packets whose piece table does not fit their
 * payload are ignored.
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
	u32 ma;			/* node 0 port 1: a, all rights (it is also a target) */
	u32 ma_rkey;
	u32 md;			/* node 0 port 1: the descriptor */
	u32 mb, rkey;		/* node 1 port 2: b, all rights */
	u32 ro_rkey;		/* node 1 port 2: b, remote read only */
	u32 wo_rkey;		/* node 1 port 2: b, remote write only */
};

static void s_setup(struct s_env *e, const struct fw_fault_cfg *faults)
{
	e->s = t_sim_pair(faults);
	e->a = calloc(1, S_BIG);
	e->b = calloc(1, S_BIG);
	e->desc = calloc(1, sizeof(*e->desc));
	e->ma = t_port_mr(e->s, 0, 1, e->a, S_BIG, NICOFF_ACCESS_ALL, &e->ma_rkey);
	e->md = t_port_mr(e->s, 0, 1, e->desc, sizeof(*e->desc), 0, NULL);
	e->mb = t_port_mr(e->s, 1, 2, e->b, S_BIG, NICOFF_ACCESS_ALL, &e->rkey);
	t_port_mr(e->s, 1, 2, e->b, S_BIG, NICOFF_ACCESS_REMOTE_READ, &e->ro_rkey);
	t_port_mr(e->s, 1, 2, e->b, S_BIG, NICOFF_ACCESS_REMOTE_WRITE, &e->wo_rkey);
}

static void s_teardown(struct s_env *e)
{
	t_finish(e->s);
	free(e->a);
	free(e->b);
	free(e->desc);
}

/* A strided command with the shape in e->desc; @levels is the command's. */
static struct nicoff_cqe s_op(struct s_env *e, u8 opcode, u32 dst, u32 dport, u32 rkey,
			      u64 roff, u64 off, u32 levels)
{
	struct nicoff_cmd c;
	struct nicoff_cqe q;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.tag = 77;
	c.strided = (struct nicoff_op_strided){ .dst_card = dst, .dst_port = dport, .rkey = rkey,
						.mr = e->ma, .remote_off = roff, .off = off,
						.desc_mr = e->md, .levels = levels };
	sim_post(e->s, 0, 1, &c);
	q = t_cqe(e->s, 0, 1, sim_now(e->s) + 20 * T_SEC);
	assert_int_equal(q.tag, 77);
	assert_int_equal(q.opcode, opcode);
	return q;
}

/*
 * A put (a to b) or get (b to a) of the shape in e->desc, checked against
 * the reference over the whole destination buffer.
 */
static void s_checked_op(struct s_env *e, u8 opcode, u32 levels, u64 off, u64 roff, u32 seed)
{
	static u8 want[S_BIG];
	const struct nicoff_strided_desc *d = e->desc;
	bool put = opcode == NICOFF_OP_PUT_STRIDED;
	u8 *src = put ? e->a : e->b, *dst = put ? e->b : e->a;
	struct nicoff_cqe q;

	t_fill(src, S_BIG, seed);
	t_fill(dst, S_BIG, seed + 1);
	memcpy(want, dst, S_BIG);
	if (put)
		sref_copy(d, levels, src, off, d->local_stride, want, roff, d->remote_stride);
	else
		sref_copy(d, levels, src, roff, d->remote_stride, want, off, d->local_stride);
	q = s_op(e, opcode, 1, 2, e->rkey, roff, off, levels);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, sref_len(d, levels));
	assert_memory_equal(dst, want, S_BIG);
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

static void test_random_shapes(void **state)
{
	struct s_env e;
	u64 seed = 12345;
	u32 round;

	(void)state;
	s_setup(&e, NULL);
	for (round = 0; round < 150; round++)
		s_random_round(&e, &seed, round);
	s_teardown(&e);
}

/* Every byte exactly once through a lossy, duplicating, reordering, corrupting fabric. */
static void test_random_shapes_faults(void **state)
{
	struct s_env e;
	u64 seed = 777;
	u32 round;

	(void)state;
	s_setup(&e, &t_lossy);
	for (round = 0; round < 30; round++)
		s_random_round(&e, &seed, round);
	t_expect_lossy(e.s, 0);
	s_teardown(&e);
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
static void test_edges(void **state)
{
	static u8 want[S_BIG];
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
	memcpy(want, e.b, S_BIG);
	sref_copy(e.desc, 2, e.a, 0, e.desc->local_stride, want, 4000, e.desc->remote_stride);
	q = s_op(&e, NICOFF_OP_PUT_STRIDED, 1, 2, exact_rkey, 0, 0, 2);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, 70 * 70);
	assert_memory_equal(e.b, want, S_BIG);
	memcpy(want, e.a, S_BIG);
	sref_copy(e.desc, 2, e.b, 4000, e.desc->remote_stride, want, 50, e.desc->local_stride);
	q = s_op(&e, NICOFF_OP_GET_STRIDED, 1, 2, exact_rkey, 0, 50, 2);
	assert_int_equal(q.status, 0);
	assert_memory_equal(e.a, want, S_BIG);
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
	static u8 want[S_BIG];
	struct nicoff_cqe q;
	struct s_env e;

	(void)state;
	s_setup(&e, NULL);
	s_shape(&e, 1, 100, 500, 200);
	t_fill(e.a, S_BIG, 9);
	memcpy(want, e.a, S_BIG);
	sref_copy(e.desc, 1, e.a, 0, e.desc->local_stride, want, 100, e.desc->remote_stride);
	q = s_op(&e, NICOFF_OP_PUT_STRIDED, 0, 1, e.ma_rkey, 100, 0, 1);
	assert_int_equal(q.status, 0);
	assert_memory_equal(e.a, want, S_BIG);
	memcpy(want, e.a, S_BIG);
	sref_copy(e.desc, 1, e.a, 100, e.desc->remote_stride, want, 0, e.desc->local_stride);
	q = s_op(&e, NICOFF_OP_GET_STRIDED, 0, 1, e.ma_rkey, 100, 0, 1);
	assert_int_equal(q.status, 0);
	assert_memory_equal(e.a, want, S_BIG);
	s_teardown(&e);
}

/* The card copied the descriptor when it took the command: rewriting it later changes nothing. */
static void test_descriptor_rewritten(void **state)
{
	static u8 want[S_BIG];
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	struct s_env e;

	(void)state;
	s_setup(&e, NULL);
	s_shape(&e, 2, 500, 30, 1000);
	t_fill(e.a, S_BIG, 10);
	t_fill(e.b, S_BIG, 11);
	memcpy(want, e.b, S_BIG);
	sref_copy(e.desc, 2, e.a, 0, e.desc->local_stride, want, 0, e.desc->remote_stride);
	memset(&c, 0, sizeof(c));
	c.opcode = NICOFF_OP_PUT_STRIDED;
	c.tag = 1;
	c.strided = (struct nicoff_op_strided){ .dst_card = 1, .dst_port = 2, .rkey = e.rkey,
						.mr = e.ma, .desc_mr = e.md, .levels = 2 };
	sim_post(e.s, 0, 1, &c);
	/* Until some of it is on the wire, then a shape that would run past the region. */
	for (;;) {
		struct fw_stats st;

		fw_get_stats(sim_card(e.s, 0), &st);
		if (st.tx_pkts)
			break;
		assert_true(sim_step(e.s));
	}
	s_shape(&e, 2, 4096, 4096, 1ull << 40);
	q = t_cqe(e.s, 0, 1, sim_now(e.s) + 10 * T_SEC);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, 500 * 30 * 30);
	assert_memory_equal(e.b, want, S_BIG);
	s_teardown(&e);
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
	/* A descriptor outside its region. */
	memset(e.desc, 0, sizeof(*e.desc));
	{
		struct nicoff_cmd c;
		struct nicoff_cqe q;

		memset(&c, 0, sizeof(c));
		c.opcode = NICOFF_OP_PUT_STRIDED;
		c.tag = 77;
		c.strided = (struct nicoff_op_strided){ .dst_card = 1, .dst_port = 2,
							.rkey = e.rkey, .mr = e.ma,
							.desc_mr = e.md, .desc_off = 8 };
		sim_post(e.s, 0, 1, &c);
		q = t_cqe(e.s, 0, 1, sim_now(e.s) + T_SEC);
		assert_int_equal(q.status, -ERANGE);
		c.strided.desc_off = ~0ull - 100;
		sim_post(e.s, 0, 1, &c);
		q = t_cqe(e.s, 0, 1, sim_now(e.s) + T_SEC);
		assert_int_equal(q.status, -ERANGE);
	}
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
	static u8 want[S_BIG];
	struct nicoff_strided_desc *d = e->desc;
	struct nicoff_cqe q;

	d->acc = acc;
	d->scale = scale;
	t_fill(e->a, S_BIG, seed);
	t_fill(e->b, S_BIG, seed + 1);
	memcpy(want, e->b, S_BIG);
	sref_acc(d, levels, e->a, off, d->local_stride, want, roff, d->remote_stride);
	q = s_op(e, NICOFF_OP_ACC_STRIDED, 1, 2, e->rkey, roff, off, levels);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, sref_len(d, levels));
	assert_memory_equal(e->b, want, S_BIG);
}

/* Random shapes of whole elements; under faults too, where a doubled piece would show. */
static void s_acc_rounds(const struct fw_fault_cfg *faults, u32 rounds, u64 seed)
{
	struct s_env e;
	u32 r;

	s_setup(&e, faults);
	for (r = 0; r < rounds; r++) {
		u32 acc = r % 2 ? NICOFF_ACC_INT64 : NICOFF_ACC_INT32, w = r % 2 ? 8 : 4;
		u32 levels = sref_random_shape(e.desc, S_MAX_LEN, S_MAX_EXTENT, &seed);
		u64 off = sref_rand(&seed) % (S_BIG - S_MAX_EXTENT);
		u64 roff = sref_rand(&seed) % (S_BIG - S_MAX_EXTENT);

		/* Whole elements: a chunk of at least one, strides kept. */
		e.desc->count[0] = (e.desc->count[0] + w - 1) / w * w;
		if (sref_extent(e.desc, levels, e.desc->local_stride) > S_MAX_EXTENT ||
		    sref_extent(e.desc, levels, e.desc->remote_stride) > S_MAX_EXTENT)
			continue;
		s_checked_acc(&e, acc, (s64)(sref_rand(&seed) % 7) - 3, levels, off, roff, 50 + r);
	}
	if (faults)
		t_expect_lossy(e.s, 0);
	s_teardown(&e);
}

static void test_accumulate(void **state)
{
	(void)state;
	s_acc_rounds(NULL, 80, 31);
	s_acc_rounds(&t_lossy, 20, 32);
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

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_random_shapes),
		cmocka_unit_test(test_random_shapes_faults),
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_same_region),
		cmocka_unit_test(test_descriptor_rewritten),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_malformed_pieces),
		cmocka_unit_test(test_accumulate),
		cmocka_unit_test(test_accumulate_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
