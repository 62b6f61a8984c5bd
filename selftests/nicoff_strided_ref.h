/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The reference a strided transfer is checked against, by the firmware's
 * unit test (firmware-sim/tests/test_strided.c) and by the kselftest
 * (nicoff_strided_test.c): the shape's chunks copied one by one in message
 * order with an odometer over the levels, and seeded random shapes; what
 * a transfer with overlapping sides in one buffer may leave; and the same
 * for vector transfers: segment lists and their copy.
 */
#ifndef NICOFF_STRIDED_REF_H
#define NICOFF_STRIDED_REF_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <uapi/nicoff.h>

static inline __u64 sref_rand(__u64 *seed)
{
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	return *seed >> 33;
}

/* Bytes of the shape: the product of the counts. */
static inline __u64 sref_len(const struct nicoff_strided_desc *d, __u32 levels)
{
	__u64 n = d->count[0];
	__u32 i;

	for (i = 1; i <= levels; i++)
		n *= d->count[i];
	return n;
}

/* From the first byte to past the last, with strides @st (non-empty shape). */
static inline __u64 sref_extent(const struct nicoff_strided_desc *d, __u32 levels,
				   const __u64 *st)
{
	__u64 x = d->count[0];
	__u32 i;

	for (i = 1; i <= levels; i++)
		x += (d->count[i] - 1) * st[i - 1];
	return x;
}

/*
 * Call fn(ctx, source offset, destination offset) for each chunk of the
 * shape in message order (the lowest level fastest): an odometer over the
 * levels, from @soff with strides @ss and @doff with strides @ds.
 */
static inline void sref_walk(const struct nicoff_strided_desc *d, __u32 levels, __u64 soff,
			     const __u64 *ss, __u64 doff, const __u64 *ds,
			     void (*fn)(void *ctx, __u64 so, __u64 dof), void *ctx)
{
	__u64 idx[NICOFF_STRIDED_MAX_LEVELS + 1] = { 0 };
	__u32 i;

	if (!sref_len(d, levels))
		return;
	for (;;) {
		__u64 so = soff, dof = doff;

		for (i = 1; i <= levels; i++) {
			so += idx[i] * ss[i - 1];
			dof += idx[i] * ds[i - 1];
		}
		fn(ctx, so, dof);
		for (i = 1; i <= levels; i++) {
			if (++idx[i] < d->count[i])
				break;
			idx[i] = 0;
		}
		if (i > levels)
			return;
	}
}

struct sref_move {
	const struct nicoff_strided_desc *d;
	const __u8 *src;
	__u8 *dst;
};

static inline void sref_copy_chunk(void *ctx, __u64 so, __u64 dof)
{
	struct sref_move *m = (struct sref_move *)ctx;

	memmove(m->dst + dof, m->src + so, m->d->count[0]);
}

/*
 * Element by element: the destination's plus scale times the source's,
 * wrapping; doubles as the library's StridedTarget computes them (a + s * b,
 * the scale converted), so that the result is bit for bit the same.
 */
static inline void sref_acc_chunk(void *ctx, __u64 so, __u64 dof)
{
	struct sref_move *m = (struct sref_move *)ctx;
	__u32 k, w = m->d->acc == NICOFF_ACC_INT32 ? 4 : 8;

	for (k = 0; k < m->d->count[0]; k += w) {
		__u64 a = 0, b = 0;
		double x, y;

		if (m->d->acc == NICOFF_ACC_DOUBLE) {
			memcpy(&x, m->dst + dof + k, 8);
			memcpy(&y, m->src + so + k, 8);
			x = x + (double)m->d->scale * y;
			memcpy(m->dst + dof + k, &x, 8);
			continue;
		}
		memcpy(&a, m->dst + dof + k, w);
		memcpy(&b, m->src + so + k, w);
		a += (__u64)m->d->scale * b;
		memcpy(m->dst + dof + k, &a, w);
	}
}

/* Copy the shape's chunks from @src at @soff (strides @ss) to @dst at @doff (strides @ds). */
static inline void sref_copy(const struct nicoff_strided_desc *d, __u32 levels, const __u8 *src,
			     __u64 soff, const __u64 *ss, __u8 *dst, __u64 doff, const __u64 *ds)
{
	struct sref_move m = { d, src, dst };

	sref_walk(d, levels, soff, ss, doff, ds, sref_copy_chunk, &m);
}

/* The same for an accumulate of @d->acc elements with @d->scale. */
static inline void sref_acc(const struct nicoff_strided_desc *d, __u32 levels, const __u8 *src,
			    __u64 soff, const __u64 *ss, __u8 *dst, __u64 doff, const __u64 *ds)
{
	struct sref_move m = { d, src, dst };

	sref_walk(d, levels, soff, ss, doff, ds, sref_acc_chunk, &m);
}

/* Strides for one side: blocks apart by a random gap, or now and then overlapping. */
static inline void sref_strides(const struct nicoff_strided_desc *d, __u32 levels,
				__u64 *st, __u64 *seed)
{
	__u64 block = d->count[0];
	__u32 i;

	for (i = 1; i <= levels; i++) {
		__u64 r = sref_rand(seed) % 16;

		st[i - 1] = r == 0 ? block / 2 : block + (r < 8 ? 0 : sref_rand(seed) % 300);
		block = st[i - 1] * (d->count[i] - 1) + block;
	}
}

/*
 * A random shape into @d of at most @max_len bytes whose sides each span
 * at most @max_extent; returns its levels (0 to 8).
 */
static inline __u32 sref_random_shape(struct nicoff_strided_desc *d, __u64 max_len,
					 __u64 max_extent, __u64 *seed)
{
	static const __u64 chunk_max[] = { 1, 8, 64, 999, 1000, 1001, 3000, 9000 };
	const __u64 nchunk = sizeof(chunk_max) / sizeof(chunk_max[0]);

	for (;;) {
		__u32 levels = sref_rand(seed) % (NICOFF_STRIDED_MAX_LEVELS + 1), i;

		memset(d, 0, sizeof(*d));
		d->count[0] = 1 + sref_rand(seed) % chunk_max[sref_rand(seed) % nchunk];
		for (i = 1; i <= levels; i++)
			d->count[i] = 1 + sref_rand(seed) % (levels <= 2 ? 40 : 4);
		if (sref_len(d, levels) > max_len)
			continue;
		sref_strides(d, levels, d->local_stride, seed);
		sref_strides(d, levels, d->remote_stride, seed);
		if (sref_extent(d, levels, d->local_stride) <= max_extent &&
		    sref_extent(d, levels, d->remote_stride) <= max_extent)
			return levels;
	}
}

/* Raise strides @st where needed so that the shape's chunks on that side do not overlap. */
static inline void sref_disjoint(const struct nicoff_strided_desc *d, __u32 levels, __u64 *st)
{
	__u64 block = d->count[0];
	__u32 i;

	for (i = 1; i <= levels; i++) {
		if (st[i - 1] < block)
			st[i - 1] = block;
		block = st[i - 1] * (d->count[i] - 1) + block;
	}
}

/* Where each byte of a transfer went, in message order, for sref_overlap_check(). */
struct sref_trace {
	__u64 chunk, p;
	__u32 *pos;		/* per byte of the buffer: its writer's position, or ~0 */
	__u64 *so, *dof;	/* per position: source and destination offsets */
	bool twice;		/* a destination byte written twice */
};

static inline void sref_trace_chunk(void *ctx, __u64 so, __u64 dof)
{
	struct sref_trace *t = (struct sref_trace *)ctx;
	__u64 k;

	for (k = 0; k < t->chunk; k++, t->p++) {
		t->twice |= t->pos[dof + k] != ~0u;
		t->pos[dof + k] = (__u32)t->p;
		t->so[t->p] = so + k;
		t->dof[t->p] = dof + k;
	}
}

/*
 * Whether a transfer of shape @d from @soff (strides @ss) to @doff
 * (strides @ds) of one @n-byte buffer, which held @before and holds
 * @after, kept what an overlapping transfer promises (strided.md): bytes
 * outside the destination's chunks unchanged, and each destination byte
 * holding its source byte's value from before the transfer, or one that an
 * earlier byte of the transfer (in message order) wrote into that source
 * byte, and so on back.  The destination's chunks must not overlap each
 * other (sref_disjoint()).  -1 if it kept it, else the first offset where
 * it did not (or -2: no memory, or the destination overlaps itself).
 */
static inline long long sref_overlap_check(const struct nicoff_strided_desc *d, __u32 levels,
					   __u64 soff, const __u64 *ss, __u64 doff,
					   const __u64 *ds, const __u8 *before, const __u8 *after,
					   __u64 n)
{
	const __u64 len = sref_len(d, levels);
	struct sref_trace t = { d->count[0], 0, NULL, NULL, NULL, false };
	__u64 (*seen)[4] = (__u64 (*)[4])calloc(len + 1, sizeof(*seen));
	long long bad = -2;
	__u64 p, x;

	t.pos = (__u32 *)malloc(n * sizeof(*t.pos));
	t.so = (__u64 *)malloc((len + 1) * sizeof(*t.so));
	t.dof = (__u64 *)malloc((len + 1) * sizeof(*t.dof));
	if (!seen || !t.pos || !t.so || !t.dof)
		goto out;
	memset(t.pos, 0xff, n * sizeof(*t.pos));
	sref_walk(d, levels, soff, ss, doff, ds, sref_trace_chunk, &t);
	if (t.twice)
		goto out;
	bad = -1;
	/* seen[p]: the values the byte at position p may hold. */
	for (p = 0; p < len && bad == -1; p++) {
		__u64 s = t.so[p], q = t.pos[s];
		__u8 v = after[t.dof[p]];

		seen[p][before[s] / 64] |= 1ull << (before[s] % 64);
		if (q != ~0u && q < p)
			for (x = 0; x < 4; x++)
				seen[p][x] |= seen[q][x];
		if (!(seen[p][v / 64] & 1ull << (v % 64)))
			bad = (long long)t.dof[p];
	}
	for (x = 0; x < n && bad == -1; x++)
		if (t.pos[x] == ~0u && after[x] != before[x])
			bad = (long long)x;
out:
	free(seen);
	free(t.pos);
	free(t.so);
	free(t.dof);
	return bad;
}

/* Bytes of a segment list: the sum of its lengths. */
static inline __u64 vref_len(const struct nicoff_vector_seg *seg, __u32 n)
{
	__u64 len = 0;
	__u32 i;

	for (i = 0; i < n; i++)
		len += seg[i].len;
	return len;
}

/*
 * Copy each segment in list order from @src at @soff to @dst at @doff:
 * from the local side to the remote one for a put (@put), else back.
 */
static inline void vref_copy(const struct nicoff_vector_seg *seg, __u32 n, bool put,
			     const __u8 *src, __u64 soff, __u8 *dst, __u64 doff)
{
	__u32 i;

	for (i = 0; i < n; i++) {
		__u64 so = put ? seg[i].local_off : seg[i].remote_off;
		__u64 dof = put ? seg[i].remote_off : seg[i].local_off;

		memmove(dst + doff + dof, src + soff + so, seg[i].len);
	}
}

/*
 * A random list into @seg of 0 to @max_n segments, each side inside
 * [0, @span): lengths up to @max_seg (one in eight zero), anywhere, so
 * that segments overlap now and then; returns its length.
 */
static inline __u32 vref_random(struct nicoff_vector_seg *seg, __u32 max_n, __u64 span,
				__u64 max_seg, __u64 *seed)
{
	__u32 n = sref_rand(seed) % (max_n + 1), i;

	for (i = 0; i < n; i++) {
		__u64 len = sref_rand(seed) % 8 ? 1 + sref_rand(seed) % max_seg : 0;

		seg[i].len = len;
		seg[i].local_off = sref_rand(seed) % (span - len + 1);
		seg[i].remote_off = sref_rand(seed) % (span - len + 1);
	}
	return n;
}

#endif
