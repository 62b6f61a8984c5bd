// SPDX-License-Identifier: GPL-2.0
/*
 * Completions: a queue per port without bound, or, with a hook set, a
 * list handed to the hook once the firmware call that posted them returns.
 */
#include <stdlib.h>

#include "host.h"

static void sim_cq_push(struct sim *s, struct sim_port *p, const struct nicoff_cqe *cqe)
{
	if (p->count == p->cap) {
		u32 cap = p->cap ? p->cap * 2 : 64;
		struct nicoff_cqe *cq = sim_xcalloc(cap, sizeof(*cq));
		u32 i;

		for (i = 0; i < p->count; i++)
			cq[i] = p->cq[(p->head + i) % p->cap];
		free(p->cq);
		s->mem.host += (u64)(cap - p->cap) * sizeof(*cq);
		p->cq = cq;
		p->cap = cap;
		p->head = 0;
	}
	p->cq[(p->head + p->count++) % p->cap] = *cqe;
}

void fwos_complete(struct fw_host *h, u32 port, const struct nicoff_cqe *cqe)
{
	struct sim *s = h->sim;
	struct sim_port *p = sim_port(h, port);
	struct sim_done *d;

	if (!p) {
		s->stats.bad_completions++;
		return;
	}
	s->stats.completions++;
	if (!s->hooks.cqe) {
		sim_cq_push(s, p, cqe);
		return;
	}
	if (s->ndone == s->done_cap)
		s->done = sim_grow(s, s->done, &s->done_cap, sizeof(*s->done));
	d = &s->done[s->ndone++];
	d->node = h->node;
	d->port = port;
	d->t = h->clock;
	d->cqe = *cqe;
}

/* Hand queued completions to the hook, in order; its posts add to them. */
void sim_drain(struct sim *s)
{
	if (s->draining)
		return;
	s->draining = true;
	while (s->done_head < s->ndone) {
		struct sim_done d = s->done[s->done_head++];

		if (sim_port(&s->hosts[d.node], d.port))
			s->hooks.cqe(s->hooks.arg, d.node, d.port, &d.cqe, d.t);
	}
	s->ndone = 0;
	s->done_head = 0;
	s->draining = false;
}

bool sim_cq_pop(struct sim *s, u32 node, u32 port, struct nicoff_cqe *cqe)
{
	struct sim_port *p = sim_port(&s->hosts[node], port);

	if (!p || !p->count)
		return false;
	*cqe = p->cq[p->head];
	p->head = (p->head + 1) % p->cap;
	p->count--;
	return true;
}

u32 sim_cq_count(const struct sim *s, u32 node, u32 port)
{
	const struct fw_host *h = &s->hosts[node];

	return port < h->nports && h->ports[port].attached ? h->ports[port].count : 0;
}
