// SPDX-License-Identifier: GPL-2.0
/*
 * Strided put and get through the module (NICOFF_OP_PUT_STRIDED and
 * GET_STRIDED, the card walking ARMCI shapes): this process holds a port
 * on card 0, whose region a is the local side, and one on card 1, whose
 * region b is the target.
 *
 * random_shapes
 *	seeded random shapes of 0 to 8 levels, chunks of 1 byte to 9,000
 *	bytes across pages, different strides on the two sides: each put and
 *	get leaves both buffers exactly as the reference copy does
 * faults
 *	the same under 10% drop, 5% duplication and reordering, 1% corruption
 * accumulate
 *	random shapes of 32- and 64-bit integers added with a scale, exactly
 *	as the reference does, also under faults (a piece applied twice would
 *	show); doubles are refused (no floating point on the card)
 * exact_region
 *	a target region that ends at the shape's last byte takes it; one byte
 *	further is refused and nothing is written
 * overlap
 *	source and destination overlapping in one region of card 0: a put or
 *	get that fits one packet is a copy of the source as it was; random
 *	shapes leave each destination byte a value its source byte held
 *	(sref_overlap_check()) and write nothing else, also under faults
 * descriptor_rewritten
 *	the process rewrites its descriptor as soon as the card has taken the
 *	command: the transfer is the one posted
 * long_walk
 *	a 32 MiB strided put of 8,192 chunks runs while another port of card 0
 *	keeps a NOP in flight: the NOPs keep completing (the card walks the
 *	shape a window of packets at a time), and the bytes arrive
 * walk_barrier
 *	a 64 MiB strided put over 4 KiB on each side (strides of 0: the card's
 *	largest message without the memory) runs while three other ports of
 *	card 0 run barriers of their group back to back: barriers keep
 *	completing while the card walks the shape, and the bytes arrive
 * bad_input
 *	too many levels, counts whose product overflows, strides that overflow
 *	or step outside a region, missing rights, a descriptor outside its
 *	region, an unknown card: each an error completion, no byte written on
 *	either side, and the port goes on
 * vector
 *	vector put and get (PUT_VECTOR, GET_VECTOR: ARMCI's PutV and GetV) of
 *	seeded random segment lists, empty, zero-length and overlapping
 *	segments among them, exactly as the reference copy; then the same
 *	under faults
 * vector_bad_input
 *	too many segments, a segment whose end wraps, lengths whose sum
 *	overflows, a side outside its region, missing rights: each an error
 *	completion and no byte written
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"
#include "nicoff_strided_ref.h"

#define TMO		30000		/* ms: one completion */
#define BIG		(1u << 20)	/* each side's region */
#define MAX_EXTENT	0x60000u	/* a random shape spans at most this */
#define MAX_LEN		0x20000u	/* and moves at most this */
#define DESC_LEN	((NICOFF_VECTOR_MAX_SEGS + 1) * sizeof(struct nicoff_vector_seg))

FIXTURE(strided) {
	struct nt_port pa, pb;
	struct nt_region a, b, desc;
	unsigned char *want;
};

FIXTURE_SETUP(strided)
{
	struct nicoff_query q;

	self->pa.fd = -1;
	ASSERT_EQ(0, nt_query_card(0, &q));
	if (q.num_cards < 2)
		SKIP(return, "needs 2 cards, the module has %u", q.num_cards);
	ASSERT_EQ(0, nt_set_faults(0, 0, 0, 0));
	ASSERT_EQ(0, nt_port_open(&self->pa, 0, NICOFF_PORT_ANY, 64, 64));
	ASSERT_EQ(0, nt_port_open(&self->pb, 1, NICOFF_PORT_ANY, 64, 64));
	ASSERT_EQ(0, nt_region_new(&self->pa, &self->a, BIG, NICOFF_ACCESS_LOCAL_WRITE, 0));
	/* A strided shape or a vector list, one segment more than a command takes. */
	ASSERT_EQ(0, nt_region_new(&self->pa, &self->desc, DESC_LEN, 0, 0));
	ASSERT_EQ(0, nt_region_new(&self->pb, &self->b, BIG, NICOFF_ACCESS_ALL, 0));
	self->want = malloc(BIG);
	ASSERT_NE(NULL, self->want);
}

FIXTURE_TEARDOWN(strided)
{
	if (self->pa.fd < 0)
		return;
	EXPECT_EQ(0, nt_set_faults(0, 0, 0, 0));
	nt_port_close(&self->pa);
	nt_port_close(&self->pb);
	munmap(self->a.buf, BIG);
	munmap(self->b.buf, BIG);
	munmap(self->desc.buf, self->desc.len);
	free(self->want);
}

static struct nicoff_strided_desc *desc_of(FIXTURE_DATA(strided) *self)
{
	return (struct nicoff_strided_desc *)self->desc.buf;
}

static struct nicoff_vector_seg *segs_of(FIXTURE_DATA(strided) *self)
{
	return (struct nicoff_vector_seg *)self->desc.buf;
}

static int is_vector(uint8_t opcode)
{
	return opcode == NICOFF_OP_PUT_VECTOR || opcode == NICOFF_OP_GET_VECTOR;
}

static bool is_put(uint8_t opcode)
{
	return opcode == NICOFF_OP_PUT_STRIDED || opcode == NICOFF_OP_PUT_VECTOR;
}

static struct nicoff_cmd strided_cmd(FIXTURE_DATA(strided) *self, uint8_t opcode, uint32_t card,
				     uint32_t rkey, uint64_t roff, uint64_t off, uint32_t levels)
{
	struct nicoff_op_strided op = {
		.dst_card = card, .dst_port = self->pb.po.port, .rkey = rkey,
		.mr = self->a.handle, .remote_off = roff, .off = off,
		.desc_mr = self->desc.handle, .levels = levels,
	};
	struct nicoff_cmd c;

	nicoff_prep_strided(&c, opcode, &op, 7);
	return c;
}

/* Run one strided command on port a; its completion. */
static struct nicoff_cqe strided_run(struct __test_metadata *_metadata,
				     FIXTURE_DATA(strided) *self, uint8_t opcode, uint32_t card,
				     uint32_t rkey, uint64_t roff, uint64_t off, uint32_t levels)
{
	struct nicoff_cmd c = strided_cmd(self, opcode, card, rkey, roff, off, levels);
	struct nicoff_cqe q;

	memset(&q, 0, sizeof(q));
	EXPECT_EQ(0, nt_run_one(&self->pa, &c, &q, TMO));
	EXPECT_EQ(opcode, q.opcode);
	EXPECT_EQ(7, q.tag);
	return q;
}

/*
 * A put (a to b) or get (b to a) of the shape in the descriptor, or of its
 * first @levels segments for a vector one, checked whole.
 */
static void checked_op(struct __test_metadata *_metadata, FIXTURE_DATA(strided) *self,
		       uint8_t opcode, uint32_t levels, uint64_t off, uint64_t roff, uint64_t seed)
{
	const struct nicoff_strided_desc *d = desc_of(self);
	bool put = is_put(opcode);
	unsigned char *src = put ? self->a.buf : self->b.buf;
	unsigned char *dst = put ? self->b.buf : self->a.buf;
	struct nicoff_cqe q;
	uint64_t len;

	nt_fill_pattern(src, BIG, seed);
	nt_fill_pattern(dst, BIG, seed + 1);
	memcpy(self->want, dst, BIG);
	if (is_vector(opcode)) {
		vref_copy(segs_of(self), levels, put, src, put ? off : roff, self->want,
			  put ? roff : off);
		len = vref_len(segs_of(self), levels);
	} else if (put) {
		sref_copy(d, levels, src, off, d->local_stride, self->want, roff, d->remote_stride);
		len = sref_len(d, levels);
	} else {
		sref_copy(d, levels, src, roff, d->remote_stride, self->want, off, d->local_stride);
		len = sref_len(d, levels);
	}
	q = strided_run(_metadata, self, opcode, 1, self->b.rkey, roff, off, levels);
	EXPECT_EQ(0, q.status);
	EXPECT_EQ(len, q.result);
	EXPECT_EQ(0, memcmp(dst, self->want, BIG))
		TH_LOG("%s of %u levels, chunk %llu", put ? "put" : "get", levels,
		       (unsigned long long)d->count[0]);
}

/*
 * @rounds shapes drawn from @seed, strided ones or vectors, each put and
 * got back between random offsets.
 */
static void random_rounds(struct __test_metadata *_metadata, FIXTURE_DATA(strided) *self,
			  bool vector, unsigned int rounds, __u64 seed)
{
	uint8_t put = vector ? NICOFF_OP_PUT_VECTOR : NICOFF_OP_PUT_STRIDED;
	uint8_t get = vector ? NICOFF_OP_GET_VECTOR : NICOFF_OP_GET_STRIDED;
	unsigned int r;

	for (r = 0; r < rounds; r++) {
		/* Small segments share packets; large ones span several. */
		__u32 n = vector ? vref_random(segs_of(self), NICOFF_VECTOR_MAX_SEGS, MAX_EXTENT,
					       r % 3 ? 200 : 9000, &seed)
				 : sref_random_shape(desc_of(self), MAX_LEN, MAX_EXTENT, &seed);
		uint64_t off = sref_rand(&seed) % (BIG - MAX_EXTENT);
		uint64_t roff = sref_rand(&seed) % (BIG - MAX_EXTENT);

		checked_op(_metadata, self, put, n, off, roff, 2 * r + (vector ? 5 : 1));
		checked_op(_metadata, self, get, n, off, roff, 2 * r + (vector ? 200 : 100));
	}
}

TEST_F(strided, random_shapes)
{
	random_rounds(_metadata, self, false, 40, 2026);
}

/* A shape of @levels levels, all counts @c and strides @st, on both sides. */
static void set_shape(FIXTURE_DATA(strided) *self, uint32_t levels, uint64_t chunk, uint64_t c,
		      uint64_t st)
{
	struct nicoff_strided_desc *d = desc_of(self);
	uint32_t i;

	memset(d, 0, sizeof(*d));
	d->count[0] = chunk;
	for (i = 1; i <= levels && i <= NICOFF_STRIDED_MAX_LEVELS; i++) {
		d->count[i] = c;
		d->local_stride[i - 1] = st;
		d->remote_stride[i - 1] = st;
	}
}

static void acc_rounds(struct __test_metadata *_metadata, FIXTURE_DATA(strided) *self,
		       unsigned int rounds, __u64 seed)
{
	struct nicoff_strided_desc *d = desc_of(self);
	unsigned int r;

	for (r = 0; r < rounds; r++) {
		__u32 levels = sref_random_shape(d, MAX_LEN, MAX_EXTENT, &seed);
		uint64_t off = sref_rand(&seed) % (BIG - MAX_EXTENT);
		uint64_t roff = sref_rand(&seed) % (BIG - MAX_EXTENT);
		uint32_t w = r % 2 ? 8 : 4;
		struct nicoff_cqe q;

		d->count[0] = (d->count[0] + w - 1) / w * w;
		if (sref_extent(d, levels, d->local_stride) > MAX_EXTENT ||
		    sref_extent(d, levels, d->remote_stride) > MAX_EXTENT)
			continue;
		d->acc = r % 2 ? NICOFF_ACC_INT64 : NICOFF_ACC_INT32;
		d->scale = (int64_t)(sref_rand(&seed) % 7) - 3;
		nt_fill_pattern(self->a.buf, BIG, 300 + r);
		nt_fill_pattern(self->b.buf, BIG, 400 + r);
		memcpy(self->want, self->b.buf, BIG);
		sref_acc(d, levels, self->a.buf, off, d->local_stride, self->want, roff,
			 d->remote_stride);
		q = strided_run(_metadata, self, NICOFF_OP_ACC_STRIDED, 1, self->b.rkey, roff, off,
				levels);
		EXPECT_EQ(0, q.status);
		EXPECT_EQ(sref_len(d, levels), q.result);
		EXPECT_EQ(0, memcmp(self->b.buf, self->want, BIG));
	}
}

TEST_F(strided, accumulate)
{
	struct nicoff_cqe q;

	acc_rounds(_metadata, self, 30, 7);
	ASSERT_EQ(0, nt_set_faults(100000, 50000, 50000, 10000));
	acc_rounds(_metadata, self, 6, 8);
	ASSERT_EQ(0, nt_set_faults(0, 0, 0, 0));
	set_shape(self, 1, 64, 4, 128);
	desc_of(self)->acc = NICOFF_ACC_DOUBLE;
	desc_of(self)->scale = 1;
	q = strided_run(_metadata, self, NICOFF_OP_ACC_STRIDED, 1, self->b.rkey, 0, 0, 1);
	EXPECT_EQ(-EOPNOTSUPP, q.status);
}

TEST_F(strided, faults)
{
	ASSERT_EQ(0, nt_set_faults(100000, 50000, 50000, 10000));
	random_rounds(_metadata, self, false, 8, 1125);
}

TEST_F(strided, exact_region)
{
	/* One-byte chunks 97 bytes apart at two levels: 1 + 2 * 69 * 97 bytes. */
	const uint64_t extent = 1 + 2 * 69 * 97;
	struct nicoff_reg_mr mr = { 0 };
	struct nicoff_cqe q;

	mr.addr = (uintptr_t)(self->b.buf + 4000);
	mr.length = extent;
	mr.access = NICOFF_ACCESS_ALL;
	ASSERT_EQ(0, nt_ioctl(self->pb.fd, NICOFF_IOC_REG_MR, &mr));
	set_shape(self, 2, 1, 70, 97);
	nt_fill_pattern(self->a.buf, BIG, 5);
	q = strided_run(_metadata, self, NICOFF_OP_PUT_STRIDED, 1, mr.rkey, 0, 0, 2);
	EXPECT_EQ(0, q.status);
	EXPECT_EQ(70 * 70, q.result);
	nt_fill_pattern(self->b.buf, BIG, 6);
	memcpy(self->want, self->b.buf, BIG);
	q = strided_run(_metadata, self, NICOFF_OP_PUT_STRIDED, 1, mr.rkey, 1, 0, 2);
	EXPECT_EQ(-ERANGE, q.status);
	EXPECT_EQ(0, memcmp(self->b.buf, self->want, BIG));
}

TEST_F(strided, descriptor_rewritten)
{
	const struct nicoff_strided_desc *d = desc_of(self);
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	uint64_t deadline;

	set_shape(self, 2, 500, 30, 1000);
	nt_fill_pattern(self->a.buf, BIG, 7);
	nt_fill_pattern(self->b.buf, BIG, 8);
	memcpy(self->want, self->b.buf, BIG);
	sref_copy(d, 2, self->a.buf, 0, d->local_stride, self->want, 0, d->remote_stride);
	c = strided_cmd(self, NICOFF_OP_PUT_STRIDED, 1, self->b.rkey, 0, 0, 2);
	ASSERT_EQ(0, nt_submit(&self->pa, &c, 1));
	/* The card has taken the command once its ring has none pending. */
	deadline = nt_now_ns() + TMO * 1000000ull;
	while (nt_cmd_pending(&self->pa) && nt_now_ns() < deadline)
		;
	ASSERT_EQ(0, nt_cmd_pending(&self->pa));
	set_shape(self, 2, 4096, 4096, 1ull << 40);
	ASSERT_EQ(1, nt_wait_cqes(&self->pa, &q, 1, TMO));
	EXPECT_EQ(0, q.status);
	EXPECT_EQ(500 * 30 * 30, q.result);
	EXPECT_EQ(0, memcmp(self->b.buf, self->want, BIG));
}

/*
 * A put or get of the shape in the descriptor from @soff to @doff of
 * region @r of port a (card 0 to itself), filled from @seed first and
 * copied into self->want; the bytes it moved.
 */
static uint64_t in_region(struct __test_metadata *_metadata, FIXTURE_DATA(strided) *self,
			  struct nt_region *r, int put, uint32_t levels, uint64_t soff,
			  uint64_t doff, uint64_t seed)
{
	struct nicoff_cmd c = strided_cmd(self, put ? NICOFF_OP_PUT_STRIDED : NICOFF_OP_GET_STRIDED,
					  0, r->rkey, put ? doff : soff, put ? soff : doff, levels);
	struct nicoff_cqe q;

	c.strided.mr = r->handle;
	c.strided.dst_port = self->pa.po.port;
	nt_fill_pattern(r->buf, BIG, seed);
	memcpy(self->want, r->buf, BIG);
	memset(&q, 0, sizeof(q));
	EXPECT_EQ(0, nt_run_one(&self->pa, &c, &q, TMO));
	EXPECT_EQ(0, q.status);
	return q.result;
}

/*
 * Random shapes whose destination chunks are disjoint, the destination
 * starting within an extent of the source, either side: each leaves what
 * sref_overlap_check() allows.
 */
static void overlap_rounds(struct __test_metadata *_metadata, FIXTURE_DATA(strided) *self,
			   struct nt_region *r, unsigned int rounds, __u64 seed)
{
	struct nicoff_strided_desc *d = desc_of(self);
	unsigned int i;

	for (i = 0; i < rounds; i++) {
		__u32 levels = sref_random_shape(d, MAX_LEN, MAX_EXTENT, &seed);
		int put = i % 2 == 0;
		__u64 *ss = put ? d->local_stride : d->remote_stride;
		__u64 *ds = put ? d->remote_stride : d->local_stride;
		uint64_t ext, soff, doff;

		sref_disjoint(d, levels, ds);
		ext = sref_extent(d, levels, ss);
		if (sref_extent(d, levels, ds) > ext)
			ext = sref_extent(d, levels, ds);
		if (ext > MAX_EXTENT)
			continue;
		soff = ext + sref_rand(&seed) % (BIG - MAX_EXTENT - ext);
		doff = soff + sref_rand(&seed) % (2 * ext) - ext;
		if (doff > BIG - MAX_EXTENT)
			doff = BIG - MAX_EXTENT;
		EXPECT_EQ(sref_len(d, levels), in_region(_metadata, self, r, put, levels, soff, doff,
							 900 + i));
		EXPECT_EQ(-1, sref_overlap_check(d, levels, soff, ss, doff, ds, self->want, r->buf,
						 BIG))
			TH_LOG("%s of %u levels, chunk %llu, from %llu to %llu", put ? "put" : "get",
			       levels, (unsigned long long)d->count[0], (unsigned long long)soff,
			       (unsigned long long)doff);
	}
}

TEST_F(strided, overlap)
{
	struct nicoff_strided_desc *d = desc_of(self);
	unsigned char *want = malloc(BIG);
	struct nt_region r;
	int k;

	ASSERT_NE(NULL, want);
	ASSERT_EQ(0, nt_region_new(&self->pa, &r, BIG, NICOFF_ACCESS_ALL, 0));
	/* One packet, four 16-byte chunks each read before the one before lands on it. */
	for (k = 0; k < 2; k++) {
		set_shape(self, 1, 16, 4, 16);
		(k ? d->local_stride : d->remote_stride)[0] = 24;
		EXPECT_EQ(64, in_region(_metadata, self, &r, !k, 1, 4000, 4008, 50 + k));
		memcpy(want, self->want, BIG);
		sref_copy(d, 1, self->want, 4000, k ? d->remote_stride : d->local_stride, want,
			  4008, k ? d->local_stride : d->remote_stride);
		EXPECT_EQ(0, memcmp(r.buf, want, BIG)) TH_LOG("%s", k ? "get" : "put");
	}
	overlap_rounds(_metadata, self, &r, 30, 404);
	ASSERT_EQ(0, nt_set_faults(100000, 50000, 50000, 10000));
	overlap_rounds(_metadata, self, &r, 8, 405);
	ASSERT_EQ(0, nt_set_faults(0, 0, 0, 0));
	munmap(r.buf, BIG);
	free(want);
}

/*
 * Post (tag 5) a put of @n chunks of @chunk bytes, @stride apart on both
 * sides, from region @src of port a to @dst of port b.
 */
static int post_walk(FIXTURE_DATA(strided) *self, const struct nt_region *src,
		     const struct nt_region *dst, uint64_t chunk, uint64_t n, uint64_t stride)
{
	struct nicoff_strided_desc *d = desc_of(self);
	struct nicoff_op_strided op = { .dst_card = 1, .dst_port = self->pb.po.port,
					.rkey = dst->rkey, .mr = src->handle,
					.desc_mr = self->desc.handle, .levels = 1 };
	struct nicoff_cmd c;

	memset(d, 0, sizeof(*d));
	d->count[0] = chunk;
	d->count[1] = n;
	d->local_stride[0] = stride;
	d->remote_stride[0] = stride;
	nicoff_prep_strided(&c, NICOFF_OP_PUT_STRIDED, &op, 5);
	return nt_submit(&self->pa, &c, 1);
}

TEST_F_TIMEOUT(strided, long_walk, 300)
{
	const uint64_t chunk = 4096, n = 8192, len = chunk * n;
	struct nt_region src, dst;
	struct nt_port other;
	struct nicoff_cqe q;
	bool inflight = false;
	uint64_t nops = 0, t0;
	int got = 0;

	ASSERT_EQ(0, nt_region_new(&self->pa, &src, len, 0, 0));
	ASSERT_EQ(0, nt_region_new(&self->pb, &dst, len, NICOFF_ACCESS_REMOTE_WRITE, 0));
	ASSERT_EQ(0, nt_port_open(&other, 0, NICOFF_PORT_ANY, 16, 16));
	nt_fill_pattern(src.buf, len, 9);
	t0 = nt_now_ns();
	ASSERT_EQ(0, post_walk(self, &src, &dst, chunk, n, chunk));
	while (!got && nt_now_ns() < t0 + TMO * 1000000ull) {
		ASSERT_EQ(0, nt_nop_step(&other, &inflight, &nops));
		got = nt_reap(&self->pa, &q, 1);
		ASSERT_LE(0, got);
	}
	ASSERT_EQ(1, got);
	TH_LOG("32 MiB in 8,192 chunks in %.1f ms; NOPs completed meanwhile on card 0: %llu",
	       (nt_now_ns() - t0) / 1e6, (unsigned long long)nops);
	EXPECT_EQ(0, q.status);
	EXPECT_EQ(len, q.result);
	EXPECT_EQ(0, memcmp(src.buf, dst.buf, len));
	EXPECT_LE(16, nops);
	nt_port_close(&other);
	munmap(src.buf, len);
	munmap(dst.buf, len);
}

#define WB_MEMBERS	3	/* walk_barrier's group: ports of card 0 */

/*
 * Post @c on every port of @m (a GROUP_CREATE as rank i, the table in
 * region @t[i]) and wait for each one's completion: 0 if all succeeded.
 */
static int all_ports(struct nt_port *m, const struct nt_region *t, struct nicoff_cmd *c)
{
	struct nicoff_cqe q;
	int i, bad = 0;

	for (i = 0; i < WB_MEMBERS; i++) {
		if (c->opcode == NICOFF_OP_GROUP_CREATE) {
			c->group.rank = i;
			c->group.mr = t[i].handle;
		}
		if (nt_submit(&m[i], c, 1))
			return -1;
	}
	for (i = 0; i < WB_MEMBERS; i++)
		if (nt_wait_cqes(&m[i], &q, 1, TMO) != 1 || q.status)
			bad = -1;
	return bad;
}

TEST_F_TIMEOUT(strided, walk_barrier, 300)
{
	/* 64 MiB (the card's largest message) from 4 KiB to 4 KiB: strides of 0. */
	const uint64_t chunk = 4096, n = 16384, len = chunk * n;
	struct nicoff_member tab[WB_MEMBERS];
	struct nt_port m[WB_MEMBERS];
	struct nt_region src, dst, t[WB_MEMBERS];
	uint64_t barriers = 0, t0;
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	int i, got = 0;

	ASSERT_EQ(0, nt_region_new(&self->pa, &src, chunk, 0, 0));
	ASSERT_EQ(0, nt_region_new(&self->pb, &dst, chunk, NICOFF_ACCESS_REMOTE_WRITE, 0));
	for (i = 0; i < WB_MEMBERS; i++) {
		ASSERT_EQ(0, nt_port_open(&m[i], 0, NICOFF_PORT_ANY, 16, 16));
		tab[i] = (struct nicoff_member){ 0, m[i].po.port };
	}
	for (i = 0; i < WB_MEMBERS; i++) {
		ASSERT_EQ(0, nt_region_new(&m[i], &t[i], sizeof(tab), 0, 0));
		memcpy(t[i].buf, tab, sizeof(tab));
	}
	nicoff_prep_group_create(&c, 0x5717, 0, WB_MEMBERS, 0, 0, NICOFF_BARRIER_AUTO, 0, 1);
	ASSERT_EQ(0, all_ports(m, t, &c));
	nt_fill_pattern(src.buf, chunk, 11);
	t0 = nt_now_ns();
	ASSERT_EQ(0, post_walk(self, &src, &dst, chunk, n, 0));
	nicoff_prep_barrier(&c, 0x5717, 2);
	while (!got && nt_now_ns() < t0 + TMO * 1000000ull) {
		ASSERT_EQ(0, all_ports(m, t, &c));
		got = nt_reap(&self->pa, &q, 1);
		ASSERT_LE(0, got);
		barriers += !got;
	}
	ASSERT_EQ(1, got);
	TH_LOG("64 MiB over 4 KiB in %.1f ms; barriers of %d ports of card 0 meanwhile: %llu",
	       (nt_now_ns() - t0) / 1e6, WB_MEMBERS, (unsigned long long)barriers);
	EXPECT_EQ(0, q.status);
	EXPECT_EQ(len, q.result);
	EXPECT_EQ(0, memcmp(src.buf, dst.buf, chunk));
	EXPECT_LE(8, barriers);
	nicoff_prep_group_destroy(&c, 0x5717, 3);
	EXPECT_EQ(0, all_ports(m, t, &c));
	for (i = 0; i < WB_MEMBERS; i++) {
		nt_port_close(&m[i]);
		munmap(t[i].buf, t[i].len);
	}
	munmap(src.buf, chunk);
	munmap(dst.buf, chunk);
}

/*
 * Case @i of a bad_input table, a put or a get: the command completes with
 * @want, and if that is an error, neither a (filled from @seed) nor b (from
 * @seed + 20) changed.
 */
static void bad_case(struct __test_metadata *_metadata, FIXTURE_DATA(strided) *self,
		     unsigned int i, int32_t want, uint64_t seed, uint8_t opcode, uint32_t card,
		     uint32_t rkey, uint64_t roff, uint64_t off, uint32_t levels)
{
	struct nicoff_cqe q;

	nt_fill_pattern(self->a.buf, BIG, seed);
	nt_fill_pattern(self->b.buf, BIG, seed + 20);
	q = strided_run(_metadata, self, opcode, card, rkey, roff, off, levels);
	EXPECT_EQ(want, q.status) TH_LOG("case %u, %s", i, is_put(opcode) ? "put" : "get");
	if (!want)
		return;
	nt_fill_pattern(self->want, BIG, seed);
	EXPECT_EQ(0, memcmp(self->a.buf, self->want, BIG));
	nt_fill_pattern(self->want, BIG, seed + 20);
	EXPECT_EQ(0, memcmp(self->b.buf, self->want, BIG));
}

TEST_F(strided, bad_input)
{
	static const struct {
		uint32_t levels, card, rights;
		uint64_t chunk, c, st, off, roff;
		int32_t put, get;
	} cases[] = {
		{ 9, 1, 0, 8, 2, 8, 0, 0, -EINVAL, -EINVAL },		/* too many levels */
		{ 8, 1, 0, 1 << 20, 256, 1, 0, 0, -EOVERFLOW, -EOVERFLOW }, /* counts overflow */
		{ 2, 1, 0, 8, 3, 1ull << 63, 0, 0, -ERANGE, -ERANGE },	/* strides overflow */
		{ 2, 1, 0, 100, 10, 0x10000, 0, 0, -ERANGE, -ERANGE },	/* local side outside */
		{ 1, 1, 0, 100, 10, 0x1000, 0, BIG - 0x1000, -ERANGE, -ERANGE }, /* remote side */
		{ 1, 1, 1, 100, 10, 200, 0, 0, -EACCES, 0 },		/* read-only target */
		{ 1, 1, 2, 100, 10, 200, 0, 0, 0, -EACCES },		/* write-only target */
		{ 1, 99999, 0, 100, 10, 200, 0, 0, -EINVAL, -EINVAL },	/* no such card */
	};
	struct nt_region ro, wo;
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	unsigned int i, k;

	ASSERT_EQ(0, nt_region_new(&self->pb, &ro, BIG, NICOFF_ACCESS_REMOTE_READ, 0));
	ASSERT_EQ(0, nt_region_new(&self->pb, &wo, BIG, NICOFF_ACCESS_REMOTE_WRITE, 0));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t rkeys[] = { self->b.rkey, ro.rkey, wo.rkey };

		for (k = 0; k < 2; k++) {
			set_shape(self, cases[i].levels, cases[i].chunk, cases[i].c, cases[i].st);
			bad_case(_metadata, self, i, k ? cases[i].get : cases[i].put, 20 + i,
				 k ? NICOFF_OP_GET_STRIDED : NICOFF_OP_PUT_STRIDED, cases[i].card,
				 rkeys[cases[i].rights], cases[i].roff, cases[i].off, cases[i].levels);
		}
	}
	/* A descriptor that is not all inside its region. */
	c = strided_cmd(self, NICOFF_OP_PUT_STRIDED, 1, self->b.rkey, 0, 0, 1);
	c.strided.desc_off = DESC_LEN - 8;
	ASSERT_EQ(0, nt_run_one(&self->pa, &c, &q, TMO));
	EXPECT_EQ(-ERANGE, q.status);
	c.strided.desc_off = ~0ull - 100;
	ASSERT_EQ(0, nt_run_one(&self->pa, &c, &q, TMO));
	EXPECT_EQ(-ERANGE, q.status);
	/* And the port goes on. */
	set_shape(self, 1, 64, 4, 128);
	checked_op(_metadata, self, NICOFF_OP_PUT_STRIDED, 1, 0, 0, 77);
	munmap(ro.buf, BIG);
	munmap(wo.buf, BIG);
}

TEST_F(strided, vector)
{
	random_rounds(_metadata, self, true, 30, 7);
	ASSERT_EQ(0, nt_set_faults(100000, 50000, 50000, 10000));
	random_rounds(_metadata, self, true, 8, 8);
}

TEST_F(strided, vector_bad_input)
{
	static const struct {
		uint32_t n, rights;
		uint64_t loff, roff, len;
		int32_t put, get;
	} cases[] = {
		{ NICOFF_VECTOR_MAX_SEGS + 1, 0, 0, 0, 8, -EINVAL, -EINVAL },	/* too many */
		{ 3, 0, ~0ull - 4, 0, 8, -ERANGE, -ERANGE },		/* local end wraps */
		{ 3, 0, 0, ~0ull - 4, 8, -ERANGE, -ERANGE },		/* remote end wraps */
		{ 3, 0, BIG - 4, 0, 8, -ERANGE, -ERANGE },		/* local side outside */
		{ 3, 0, 0, BIG - 4, 8, -ERANGE, -ERANGE },		/* remote side outside */
		{ 3, 1, 0, 0, 8, -EACCES, 0 },				/* read-only target */
		{ 3, 2, 0, 0, 8, 0, -EACCES },				/* write-only target */
	};
	struct nicoff_vector_seg *seg = segs_of(self);
	struct nt_region ro, wo;
	struct nicoff_cqe q;
	unsigned int i, j, k;

	ASSERT_EQ(0, nt_region_new(&self->pb, &ro, BIG, NICOFF_ACCESS_REMOTE_READ, 0));
	ASSERT_EQ(0, nt_region_new(&self->pb, &wo, BIG, NICOFF_ACCESS_REMOTE_WRITE, 0));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t rkeys[] = { self->b.rkey, ro.rkey, wo.rkey };

		for (k = 0; k < 2; k++) {
			/* Sound segments first, the bad one last: nothing may move. */
			for (j = 0; j + 1 < cases[i].n; j++)
				seg[j] = (struct nicoff_vector_seg){ 64 * j, 64 * j, 8 };
			seg[cases[i].n - 1] = (struct nicoff_vector_seg){
				cases[i].loff, cases[i].roff, cases[i].len };
			bad_case(_metadata, self, i, k ? cases[i].get : cases[i].put, 60 + i,
				 k ? NICOFF_OP_GET_VECTOR : NICOFF_OP_PUT_VECTOR, 1,
				 rkeys[cases[i].rights], 0, 0, cases[i].n);
		}
	}
	/* Lengths whose sum overflows. */
	seg[0] = (struct nicoff_vector_seg){ 0, 0, 1ull << 63 };
	seg[1] = seg[0];
	q = strided_run(_metadata, self, NICOFF_OP_PUT_VECTOR, 1, self->b.rkey, 0, 0, 2);
	EXPECT_EQ(-EOVERFLOW, q.status);
	munmap(ro.buf, BIG);
	munmap(wo.buf, BIG);
}

TEST_HARNESS_MAIN
