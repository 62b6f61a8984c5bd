/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A walk over the bytes an operation moves, in message order, as region
 * offsets.  The contiguous cursor below maps message byte i to region
 * offset base + i; another layout (a strided shape, a segment list)
 * gives the same calls its own mapping, and the code that cuts packets
 * and places fragments stays as it is:
 * - fw_cursor_span(): the region must hold [0, span) for the whole walk,
 *   checked once before the first byte moves;
 * - fw_cursor_piece(): where message byte @pos is, and how many bytes from
 *   there are contiguous in the region;
 * - fw_cursor_next() and fw_cursor_advance(): the same at the cursor's own
 *   position, for a sender cutting packets.
 */
#ifndef NICOFF_FW_CURSOR_H
#define NICOFF_FW_CURSOR_H

#include "fw_util.h"

#define FW_SHAPE_MAX_LEVELS	8

/*
 * A strided layout (ARMCI's): count[0] contiguous bytes; level i is
 * count[i] blocks of level i - 1, stride[i - 1] bytes apart.  Message byte
 * p is in chunk p / count[0], whose digits in the counts' mixed radix
 * (level 1 fastest) pick the block at each level.
 */
struct fw_shape {
	u32 levels;
	u64 count[FW_SHAPE_MAX_LEVELS + 1];
	u64 stride[FW_SHAPE_MAX_LEVELS];
	u64 len;		/* bytes: the product of the counts */
	u64 extent;		/* from the first byte to past the last; 0 if len is 0 */
};

/*
 * Check and complete @s from its levels, counts and strides: -EINVAL for
 * too many levels, -EOVERFLOW if the product of the counts overflows,
 * -ERANGE if the extent does.
 */
static inline int fw_shape_init(struct fw_shape *s)
{
	u64 len = s->count[0], extent = s->count[0];
	u32 i;

	if (s->levels > FW_SHAPE_MAX_LEVELS)
		return -EINVAL;
	for (i = 1; i <= s->levels; i++) {
		if (fw_mul_overflow(len, s->count[i], &len))
			return -EOVERFLOW;
	}
	if (!len) {
		s->len = 0;
		s->extent = 0;
		return 0;
	}
	for (i = 1; i <= s->levels; i++) {
		u64 step;

		if (fw_mul_overflow(s->count[i] - 1, s->stride[i - 1], &step) ||
		    fw_add_overflow(extent, step, &extent))
			return -ERANGE;
	}
	s->len = len;
	s->extent = extent;
	return 0;
}

#define FW_SEGS_MAX		16

/*
 * A segment list (ARMCI's vector form): segment i holds message bytes
 * [start[i], start[i + 1]) at off[i] on.  Segments of zero length are
 * left out, so every segment holds at least one byte.
 */
struct fw_segs {
	u32 n;
	u64 start[FW_SEGS_MAX + 1];	/* start[n]: the bytes of the list */
	u64 off[FW_SEGS_MAX];
	u64 extent;		/* past the furthest byte of any segment; 0 if empty */
};

/*
 * Add a segment of @len bytes at @off to @s, which has room: -ERANGE if
 * its end wraps, -EOVERFLOW if the list's bytes do.
 */
static inline int fw_segs_add(struct fw_segs *s, u64 off, u64 len)
{
	u64 end, total;

	if (fw_add_overflow(off, len, &end))
		return -ERANGE;
	if (!len)
		return 0;
	if (fw_add_overflow(s->start[s->n], len, &total))
		return -EOVERFLOW;
	s->off[s->n] = off;
	s->start[++s->n] = total;
	s->extent = fw_max_u64(s->extent, end);
	return 0;
}

/* The segment holding message byte @pos (< start[n]): a binary search. */
static inline u32 fw_segs_find(const struct fw_segs *s, u64 pos)
{
	u32 lo = 0, hi = s->n - 1;

	while (lo < hi) {
		u32 mid = lo + (hi - lo + 1) / 2;

		if (s->start[mid] <= pos)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* One layout at most is set; none: contiguous. */
struct fw_cursor {
	u64 base;		/* region offset of message byte 0 */
	u64 len;		/* message bytes */
	u64 pos;		/* message bytes walked so far */
	const struct fw_shape *shape;
	const struct fw_segs *segs;
};

static inline void fw_cursor_init(struct fw_cursor *c, u64 base, u64 len)
{
	c->base = base;
	c->len = len;
	c->pos = 0;
	c->shape = NULL;
	c->segs = NULL;
}

/* A walk of @shape (checked by fw_shape_init(), kept as long as the cursor) from @base. */
static inline void fw_cursor_init_strided(struct fw_cursor *c, u64 base,
					  const struct fw_shape *shape)
{
	fw_cursor_init(c, base, shape->len);
	c->shape = shape;
}

/* A walk of @segs (kept as long as the cursor), offsets from @base. */
static inline void fw_cursor_init_segs(struct fw_cursor *c, u64 base, const struct fw_segs *segs)
{
	fw_cursor_init(c, base, segs->start[segs->n]);
	c->segs = segs;
}

/* False if the walk's end wraps the offset space: -ERANGE. */
static inline bool fw_cursor_span(const struct fw_cursor *c, u64 *span)
{
	u64 extent = c->shape ? c->shape->extent : c->segs ? c->segs->extent : c->len;

	*span = c->base + extent;
	return *span >= c->base;
}

static inline u64 fw_cursor_piece_segs(const struct fw_cursor *c, u64 pos, u64 max, u64 *at)
{
	const struct fw_segs *s = c->segs;
	u32 i;

	if (pos >= c->len) {
		*at = c->base;
		return 0;
	}
	i = fw_segs_find(s, pos);
	*at = c->base + s->off[i] + (pos - s->start[i]);
	return fw_min_u64(max, s->start[i + 1] - pos);
}

/* Message byte @pos (< len) is at region offset *@at; the contiguous bytes from there, <= @max. */
static inline u64 fw_cursor_piece(const struct fw_cursor *c, u64 pos, u64 max, u64 *at)
{
	const struct fw_shape *s = c->shape;
	u64 chunk, in, off;
	u32 i;

	if (c->segs)
		return fw_cursor_piece_segs(c, pos, max, at);
	if (!s) {
		*at = c->base + pos;
		return fw_min_u64(max, c->len - pos);
	}
	if (pos >= c->len) {
		*at = c->base;
		return 0;
	}
	chunk = pos / s->count[0];
	in = pos - chunk * s->count[0];
	off = c->base + in;
	for (i = 1; i <= s->levels; i++) {
		off += (chunk % s->count[i]) * s->stride[i - 1];
		chunk /= s->count[i];
	}
	*at = off;
	return fw_min_u64(max, s->count[0] - in);
}

/* The next piece of at most @max bytes (0 at the end), not yet walked past. */
static inline u64 fw_cursor_next(const struct fw_cursor *c, u64 max, u64 *at)
{
	return fw_cursor_piece(c, c->pos, max, at);
}

static inline void fw_cursor_advance(struct fw_cursor *c, u64 n)
{
	c->pos += n;
}

static inline bool fw_cursor_done(const struct fw_cursor *c)
{
	return c->pos == c->len;
}

/*
 * A cursor's pieces in message order from a position, as fw_cursor_piece()
 * gives them one by one, without the divisions it makes for each: a
 * shape's chunk indices are counted up as an odometer.  For the many small
 * pieces of one packet.
 */
struct fw_walk {
	const struct fw_cursor *c;
	u64 pos;	/* message byte of the next piece */
	u64 at;		/* its region offset: a shape's walk keeps it, others set it at init */
	u64 idx[FW_SHAPE_MAX_LEVELS + 1];	/* its byte in the chunk, then the chunk's digits */
};

static inline void fw_walk_init(struct fw_walk *w, const struct fw_cursor *c, u64 pos)
{
	const struct fw_shape *s = c->shape;
	u64 chunk;
	u32 i;

	w->c = c;
	w->pos = pos;
	w->at = c->base;
	w->idx[0] = 0;
	if (pos >= c->len)
		return;
	if (!s) {
		fw_cursor_piece(c, pos, 1, &w->at);
		return;
	}
	/* fw_cursor_piece()'s digits, kept for the odometer. */
	chunk = pos / s->count[0];
	w->idx[0] = pos - chunk * s->count[0];
	w->at += w->idx[0];
	for (i = 1; i <= s->levels; i++) {
		w->idx[i] = chunk % s->count[i];
		w->at += w->idx[i] * s->stride[i - 1];
		chunk /= s->count[i];
	}
}

/*
 * One piece of shape walk @w, which is not at its end: at most @max bytes
 * at region offset *@at, the odometer turned past it.  A twin @r (or NULL)
 * over a shape with @w's counts moves along, its offset in *@rat: it keeps
 * only its offset, the digits are @w's.
 */
static inline u64 fw_walk_step(struct fw_walk *w, struct fw_walk *r, u64 max, u64 *at,
			       u64 *rat)
{
	const struct fw_shape *s = w->c->shape, *rs = r ? r->c->shape : NULL;
	u64 n = fw_min_u64(max, s->count[0] - w->idx[0]);
	u32 i;

	*at = w->at;
	w->pos += n;
	w->idx[0] += n;
	w->at += n;
	if (r) {
		*rat = r->at;
		r->pos += n;
		r->at += n;
	}
	if (w->idx[0] < s->count[0])
		return n;
	/* The chunk is done: the odometer turns to the next one. */
	w->at -= s->count[0];
	if (r)
		r->at -= s->count[0];
	w->idx[0] = 0;
	for (i = 1; i <= s->levels; i++) {
		if (++w->idx[i] < s->count[i]) {
			w->at += s->stride[i - 1];
			if (r)
				r->at += rs->stride[i - 1];
			break;
		}
		w->idx[i] = 0;
		w->at -= (s->count[i] - 1) * s->stride[i - 1];
		if (r)
			r->at -= (s->count[i] - 1) * rs->stride[i - 1];
	}
	return n;
}

/* The walk's next piece of at most @max bytes (0 at the end), at region offset *@at. */
static inline u64 fw_walk_next(struct fw_walk *w, u64 max, u64 *at)
{
	u64 n;

	if (!w->c->shape || w->pos >= w->c->len) {
		n = fw_cursor_piece(w->c, w->pos, max, at);
		w->pos += n;
		return n;
	}
	return fw_walk_step(w, NULL, max, at, NULL);
}

/*
 * Whether walk @r of cursor @rc can follow walk @l's digits instead of
 * keeping its own: both walk shapes, and a strided operation's two shapes
 * share their counts (only the strides differ).
 */
static inline bool fw_walk_twins(const struct fw_walk *l, const struct fw_cursor *rc)
{
	return l->c->shape && rc->shape && l->c->shape->levels == rc->shape->levels;
}

/*
 * Start @r at @l's position over @rc, whose shape has @l's counts
 * (fw_walk_twins()): its offset from @l's digits, with no division.  Only
 * fw_walk_next_twin() moves it after.
 */
static inline void fw_walk_init_twin(struct fw_walk *r, const struct fw_walk *l,
				     const struct fw_cursor *rc)
{
	const struct fw_shape *rs = rc->shape;
	u32 i;

	r->c = rc;
	r->pos = l->pos;
	r->at = rc->base;
	r->idx[0] = 0;
	if (l->pos >= l->c->len)
		return;
	r->at += l->idx[0];
	for (i = 1; i <= rs->levels; i++)
		r->at += l->idx[i] * rs->stride[i - 1];
}

/* fw_walk_next() of @l and of its twin @r together, @r's offset in *@rat. */
static inline u64 fw_walk_next_twin(struct fw_walk *l, struct fw_walk *r, u64 max, u64 *at,
				    u64 *rat)
{
	if (l->pos >= l->c->len) {
		*at = l->at;
		*rat = r->at;
		return 0;
	}
	return fw_walk_step(l, r, max, at, rat);
}

#endif
