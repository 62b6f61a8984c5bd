/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sift loops of a d-ary min-heap kept in an array, shared by the
 * card's timer heap (binary, of timer pointers: timer.c) and the
 * simulator's arrival and timer queues (4-ary, of values: host/events.c).
 *
 * A sift moves a hole, not the element: fw_heap_up() and fw_heap_down()
 * shift the elements in the way of @e one slot each and return the slot
 * where @e belongs, which the caller then fills.  Each heap gives its
 * order, how to reach slot i and how to move a slot (telling an element
 * that keeps its own index).  Pass a static const ops: the functions are
 * inline, so each heap gets its own copy with the calls made direct.
 */
#ifndef NICOFF_FW_HEAP_H
#define NICOFF_FW_HEAP_H

#include "fw_util.h"

struct fw_heap_ops {
	u32 ary;					/* children a slot has */
	bool (*before)(const void *a, const void *b);	/* @a comes out first */
	const void *(*at)(const void *heap, u32 i);	/* the element in slot @i */
	void (*move)(void *heap, u32 to, u32 from);	/* slot @from into slot @to */
};

/* Where @e, in a hole at slot @i, belongs on the way to the root. */
static inline u32 fw_heap_up(void *heap, u32 i, const void *e, const struct fw_heap_ops *ops)
{
	while (i) {
		u32 parent = (i - 1) / ops->ary;

		if (!ops->before(e, ops->at(heap, parent)))
			break;
		ops->move(heap, i, parent);
		i = parent;
	}
	return i;
}

/* Where @e, in a hole at slot @i of @n slots, belongs on the way down. */
static inline u32 fw_heap_down(void *heap, u32 i, u32 n, const void *e,
			       const struct fw_heap_ops *ops)
{
	for (;;) {
		u32 c = ops->ary * i + 1, k, end;

		if (c >= n)
			break;
		end = fw_min_u32(c + ops->ary, n);
		for (k = c + 1; k < end; k++)
			if (ops->before(ops->at(heap, k), ops->at(heap, c)))
				c = k;
		if (!ops->before(ops->at(heap, c), e))
			break;
		ops->move(heap, i, c);
		i = c;
	}
	return i;
}

#endif
