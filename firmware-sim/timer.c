// SPDX-License-Identifier: GPL-2.0
/*
 * The card's timer heap (see timer.h).
 */
#include "timer.h"
#include "fw.h"
#include "fw_heap.h"
#include "fw_os.h"

#define FW_TIMER_HEAP_MIN	2

/* Timer @a runs before timer @b: earlier, or as early and of an earlier class. */
static bool fw_timer_before(const void *a, const void *b)
{
	const struct fw_timer *x = a, *y = b;

	return x->deadline < y->deadline || (x->deadline == y->deadline && x->cls < y->cls);
}

int fw_timer_add(struct fw_host *host, struct fw_timer_heap *h, struct fw_timer *t,
		 fw_timer_fn fire, u8 cls)
{
	t->deadline = FW_NEVER;
	t->heap_idx = FW_U32_MAX;
	t->cls = cls;
	if (h->owners >= h->cap) {
		u32 cap = h->cap ? h->cap * 2 : FW_TIMER_HEAP_MIN;
		struct fw_timer **nv = fwos_zalloc(host, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		if (h->v) {
			memcpy(nv, h->v, h->n * sizeof(*nv));
			fwos_free(host, h->v);
		}
		h->v = nv;
		h->cap = cap;
	}
	h->owners++;
	h->fire[cls] = fire;
	return 0;
}

void *fw_timer_owner_new(struct fw_host *host, struct fw_timer_heap *h, size_t size,
			 size_t off, fw_timer_fn fire, u8 cls)
{
	u8 *o = fwos_zalloc(host, size);

	if (!o)
		return NULL;
	if (fw_timer_add(host, h, (struct fw_timer *)(o + off), fire, cls)) {
		fwos_free(host, o);
		return NULL;
	}
	return o;
}

static void fw_timer_place(struct fw_timer_heap *h, u32 i, struct fw_timer *t)
{
	h->v[i] = t;
	t->heap_idx = i;
}

static const void *fw_timer_at(const void *heap, u32 i)
{
	return ((const struct fw_timer_heap *)heap)->v[i];
}

static void fw_timer_move(void *heap, u32 to, u32 from)
{
	struct fw_timer_heap *h = heap;

	fw_timer_place(h, to, h->v[from]);
}

static const struct fw_heap_ops fw_timer_heap_ops = {
	.ary = 2,
	.before = fw_timer_before,
	.at = fw_timer_at,
	.move = fw_timer_move,
};

static void fw_timer_up(struct fw_timer_heap *h, u32 i)
{
	struct fw_timer *t = h->v[i];

	fw_timer_place(h, fw_heap_up(h, i, t, &fw_timer_heap_ops), t);
}

static void fw_timer_down(struct fw_timer_heap *h, u32 i)
{
	struct fw_timer *t = h->v[i];

	fw_timer_place(h, fw_heap_down(h, i, h->n, t, &fw_timer_heap_ops), t);
}

void fw_timer_set(struct fw_timer_heap *h, struct fw_timer *t, u64 deadline)
{
	u32 i = t->heap_idx;
	u64 old = t->deadline;

	t->deadline = deadline;
	if (i == FW_U32_MAX) {
		if (deadline == FW_NEVER)
			return;
		i = h->n++;
		fw_timer_place(h, i, t);
		fw_timer_up(h, i);
		return;
	}
	if (deadline == FW_NEVER) {
		struct fw_timer *last = h->v[--h->n];

		t->heap_idx = FW_U32_MAX;
		if (last == t)
			return;
		fw_timer_place(h, i, last);
		fw_timer_up(h, i);
		fw_timer_down(h, last->heap_idx);
		return;
	}
	if (deadline < old)
		fw_timer_up(h, i);
	else if (deadline > old)
		fw_timer_down(h, i);
}

void fw_timer_del(struct fw_timer_heap *h, struct fw_timer *t)
{
	fw_timer_set(h, t, FW_NEVER);
	h->owners--;
}

struct fw_timer *fw_timer_first(const struct fw_timer_heap *h)
{
	return h->n ? h->v[0] : NULL;
}

u64 fw_timer_run(struct fw_card *card, struct fw_timer_heap *h, u64 now)
{
	/*
	 * Each due timer gets a later deadline or goes; the bound only guards
	 * a host whose @now runs ahead of fwos_now().
	 */
	u32 budget = 2 * h->owners + 1;

	while (h->n && h->v[0]->deadline <= now && budget--)
		h->fire[h->v[0]->cls](card, h->v[0], now);
	return h->n ? h->v[0]->deadline : FW_NEVER;
}

void fw_timer_heap_free(struct fw_host *host, struct fw_timer_heap *h)
{
	fwos_free(host, h->v);
	memset(h, 0, sizeof(*h));
}
