// SPDX-License-Identifier: GPL-2.0
/*
 * Packet arrivals wait in a 4-ary heap ordered by (time, insertion
 * number); each card's next timer has one entry in a second heap, never
 * later than the deadline and brought up to date before it runs, so no
 * stale timer ever reaches the firmware.  Both orders are total, so runs
 * are reproducible.
 */
#include "host.h"
#include "fw_heap.h"

/*
 * Both heaps are 4-ary: half the levels of a binary heap, and at a million
 * cards each level is a cache miss.
 */
#define SIM_ARY		4u

/* (time, seq) as one number: compared without branches, as ties are common. */
static unsigned __int128 sim_ev_key(const struct sim_ev *e)
{
	return (unsigned __int128)e->time << 64 | e->seq;
}

static bool sim_ev_less(const void *a, const void *b)
{
	return sim_ev_key(a) < sim_ev_key(b);
}

static const void *sim_ev_at(const void *s, u32 i)
{
	return &((const struct sim *)s)->heap[i];
}

static void sim_ev_move(void *sv, u32 to, u32 from)
{
	struct sim *s = sv;

	s->heap[to] = s->heap[from];
}

static const struct fw_heap_ops sim_ev_ops = {
	.ary = SIM_ARY,
	.before = sim_ev_less,
	.at = sim_ev_at,
	.move = sim_ev_move,
};

void sim_ev_push(struct sim *s, u64 time, struct sim_pkt *p)
{
	struct sim_ev ev = { .time = time, .seq = s->seq++, .p = p };

	if (s->nev == s->ev_cap)
		s->heap = sim_grow(s, s->heap, &s->ev_cap, sizeof(*s->heap));
	s->heap[fw_heap_up(s, s->nev++, &ev, &sim_ev_ops)] = ev;
}

struct sim_ev sim_ev_pop(struct sim *s)
{
	struct sim_ev top = s->heap[0];
	struct sim_ev last = s->heap[--s->nev];

	if (s->nev)
		s->heap[fw_heap_down(s, 0, s->nev, &last, &sim_ev_ops)] = last;
	return top;
}

static bool sim_tmr_less(const void *a, const void *b)
{
	const struct sim_tmr *x = a, *y = b;

	return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

static void sim_tmr_place(struct sim *s, u32 i, const struct sim_tmr *t)
{
	s->theap[i] = *t;
	s->hosts[t->node].tmr_idx = i;
}

static const void *sim_tmr_at(const void *s, u32 i)
{
	return &((const struct sim *)s)->theap[i];
}

static void sim_tmr_move(void *sv, u32 to, u32 from)
{
	struct sim *s = sv;

	sim_tmr_place(s, to, &s->theap[from]);
}

static const struct fw_heap_ops sim_tmr_ops = {
	.ary = SIM_ARY,
	.before = sim_tmr_less,
	.at = sim_tmr_at,
	.move = sim_tmr_move,
};

static void sim_tmr_up(struct sim *s, u32 i, struct sim_tmr t)
{
	sim_tmr_place(s, fw_heap_up(s, i, &t, &sim_tmr_ops), &t);
}

static void sim_tmr_down(struct sim *s, u32 i, struct sim_tmr t)
{
	sim_tmr_place(s, fw_heap_down(s, i, s->ntmr, &t, &sim_tmr_ops), &t);
}

/*
 * The card's next deadline is now @at (FW_NEVER: none).  Only an earlier
 * one moves the card's entry at once.  A later one, or none, leaves the
 * entry early and sim_tmr_clean() puts it right when it reaches the top:
 * retransmission timeouts are pushed back or cancelled on nearly every
 * packet and seldom expire.  An entry is never later than its deadline.
 */
void sim_tmr_set(struct sim *s, struct fw_host *h, u64 at)
{
	u32 i = h->tmr_idx;
	struct sim_tmr t;

	if (at == h->timer_at)
		return;
	h->timer_at = at;
	if (at == FW_NEVER || (i != SIM_NO_TIMER && at >= s->theap[i].time))
		return;
	t.time = at;
	t.seq = s->seq++;
	t.node = h->node;
	if (i == SIM_NO_TIMER) {
		if (s->ntmr == s->tmr_cap)
			s->theap = sim_grow(s, s->theap, &s->tmr_cap, sizeof(*s->theap));
		i = s->ntmr++;
	}
	sim_tmr_up(s, i, t);
}

void sim_tmr_pop(struct sim *s)
{
	struct sim_tmr last = s->theap[--s->ntmr];

	s->hosts[s->theap[0].node].tmr_idx = SIM_NO_TIMER;
	if (s->ntmr)
		sim_tmr_down(s, 0, last);
}

/*
 * Until the top entry is its card's deadline, or later than the next
 * arrival anyway: move it to the deadline, or drop it.
 */
void sim_tmr_clean(struct sim *s)
{
	while (s->ntmr) {
		struct sim_tmr top = s->theap[0];
		u64 at = s->hosts[top.node].timer_at;

		if (at == top.time || (s->nev && top.time > s->heap[0].time))
			return;
		if (at == FW_NEVER) {
			sim_tmr_pop(s);
		} else {
			top.time = at;
			top.seq = s->seq++;
			sim_tmr_down(s, 0, top);
		}
	}
}
