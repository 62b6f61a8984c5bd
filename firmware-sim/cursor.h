/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A walk over the bytes an operation moves, in message order, as region
 * offsets.  The contiguous cursor below maps message byte i to region
 * offset base + i; an engine with another layout (a strided one, say)
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

struct fw_cursor {
	u64 base;		/* region offset of message byte 0 */
	u64 len;		/* message bytes */
	u64 pos;		/* message bytes walked so far */
};

static inline void fw_cursor_init(struct fw_cursor *c, u64 base, u64 len)
{
	c->base = base;
	c->len = len;
	c->pos = 0;
}

/* False if the walk's end wraps the offset space: -ERANGE. */
static inline bool fw_cursor_span(const struct fw_cursor *c, u64 *span)
{
	*span = c->base + c->len;
	return *span >= c->base;
}

/* Message byte @pos (< len) is at region offset *@at; the contiguous bytes from there, <= @max. */
static inline u64 fw_cursor_piece(const struct fw_cursor *c, u64 pos, u64 max, u64 *at)
{
	*at = c->base + pos;
	return fw_min_u64(max, c->len - pos);
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

#endif
