// SPDX-License-Identifier: GPL-2.0
/*
 * The event loop: the earliest event first, timers before arrivals of the
 * same time when they were set first.
 */
#include "host.h"

u64 sim_next_time(struct sim *s)
{
	u64 t = FW_NEVER;

	sim_tmr_clean(s);
	if (s->nev)
		t = s->heap[0].time;
	if (s->ntmr && s->theap[0].time < t)
		t = s->theap[0].time;
	return t;
}

/* Whether the next event is a timer: the earlier, or the first one set. */
static bool sim_timer_next(const struct sim *s)
{
	const struct sim_tmr *t = &s->theap[0];

	if (!s->ntmr)
		return false;
	if (!s->nev)
		return true;
	return t->time < s->heap[0].time || (t->time == s->heap[0].time && t->seq < s->heap[0].seq);
}

bool sim_step(struct sim *s)
{
	sim_tmr_clean(s);
	if (sim_timer_next(s)) {
		struct fw_host *h = &s->hosts[s->theap[0].node];
		u64 t = s->theap[0].time;

		if (t > s->now)
			s->now = t;
		sim_tmr_pop(s);
		h->timer_at = FW_NEVER;
		s->stats.events++;
		s->stats.timers++;
		sim_enter(s, h, t);
		sim_kick(s, h);
	} else if (s->nev) {
		struct sim_ev ev = sim_ev_pop(s);

		/* The next packet is cold by now: fetch it while this one runs. */
		if (s->nev) {
			__builtin_prefetch(s->heap[0].p);
			__builtin_prefetch((u8 *)s->heap[0].p + 64);
		}
		if (ev.time > s->now)
			s->now = ev.time;
		s->stats.events++;
		sim_arrive(s, &ev);
	} else {
		return false;
	}
	sim_drain(s);
	return true;
}

void sim_run_until(struct sim *s, u64 t)
{
	while (sim_next_time(s) <= t)
		sim_step(s);
	if (t > s->now)
		s->now = t;
}

bool sim_run_idle(struct sim *s, u64 limit)
{
	while (sim_next_time(s) <= limit)
		sim_step(s);
	return sim_next_time(s) == FW_NEVER;
}

bool sim_wait_cqe(struct sim *s, u32 node, u32 port, struct nicoff_cqe *cqe, u64 limit)
{
	for (;;) {
		if (sim_cq_pop(s, node, port, cqe))
			return true;
		if (sim_next_time(s) > limit)
			return false;
		sim_step(s);
	}
}
