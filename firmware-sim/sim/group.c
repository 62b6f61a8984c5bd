// SPDX-License-Identifier: GPL-2.0
/*
 * The run loop of the workloads whose collective the cards run
 * (wl_barrier.c, wl_bcast.c): see struct nsim_group in nsim.h.
 */

#include "nsim.h"

int nsim_group_init(struct nsim *ns, const struct nsim_group_kind *kind, u32 alg,
		    u32 bcast_flags)
{
	struct nsim_group *g;
	u64 table = (u64)ns->p.nodes * sizeof(struct nicoff_member);

	if (ns->p.iters <= ns->p.warmup || !ns->p.size) {
		nsim_fail(ns, "%s: iters (%u) must exceed warmup (%u), size must be > 0",
			  kind->name, ns->p.iters, ns->p.warmup);
		return -EINVAL;
	}
	if (kind->opcode == NICOFF_OP_BCAST && ns->p.nodes > 4096) {
		nsim_fail(ns, "%s: a group of more than 4096 members cannot broadcast", kind->name);
		return -EINVAL;
	}
	if (ns->p.verify && ns->p.nodes > 4096) {
		nsim_fail(ns, "%s: --verify keeps a table per node: 4096 nodes at most",
			  kind->name);
		return -EINVAL;
	}
	g = nsim_state(ns, sizeof(*g), sizeof(g->done[0]));
	if (!g)
		return -ENOMEM;
	g->kind = kind;
	g->alg = alg;
	g->bcast_flags = bcast_flags;
	/* The member table fills the send slots; a broadcast's data is the receive slot. */
	ns->send_slots = (u32)((table + ns->p.size - 1) / ns->p.size);
	ns->recv_slots = kind->opcode == NICOFF_OP_BCAST ? 1 : 0;
	return 0;
}

static void nsim_group_post(struct nsim *ns, u32 node, u8 opcode, u64 t)
{
	struct nsim_group *g = ns->wl_state;
	struct nicoff_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.tag = opcode;
	if (opcode == NICOFF_OP_BCAST) {
		c.bcast.group_id = 1;
		c.bcast.mr = ns->mr;
		c.bcast.off = (u64)ns->send_slots * ns->p.size;
		c.bcast.len = ns->p.size;
	} else {
		c.group.group_id = 1;
	}
	if (opcode == NICOFF_OP_GROUP_CREATE) {
		c.group.rank = node;
		c.group.size = ns->p.nodes;
		c.group.mr = ns->mr;
		c.group.algorithm = g->alg;
		c.group.bcast_flags = g->bcast_flags;
	}
	sim_post_at(ns->s, node, 0, &c, t);
}

void nsim_group_start(struct nsim *ns)
{
	u32 n, i;

	/* One table in the shared region, or one in each node's own (--verify). */
	for (n = 0; n < (ns->p.verify ? ns->p.nodes : 1); n++) {
		u64 at = ns->p.verify ? (u64)n * ns->region : 0;
		struct nicoff_member *tab = (struct nicoff_member *)(ns->bufs + at);

		for (i = 0; i < ns->p.nodes; i++) {
			tab[i].card = i;
			tab[i].port = 0;
		}
	}
	for (n = 0; n < ns->p.nodes; n++)
		nsim_group_post(ns, n, NICOFF_OP_GROUP_CREATE, 0);
}

void nsim_group_cqe(struct nsim *ns, u32 node, const struct nicoff_cqe *cqe, u64 t)
{
	struct nsim_group *g = ns->wl_state;
	const struct nsim_group_kind *kind = g->kind;

	if (cqe->status) {
		nsim_fail(ns, "%s: node %u: opcode %u failed: %d", kind->name, node, cqe->opcode,
			  cqe->status);
		nsim_node_done(ns, t);
		return;
	}
	if (cqe->opcode == NICOFF_OP_GROUP_CREATE) {
		/* The algorithm run: every member runs the same. */
		if (!g->created++)
			g->chosen = cqe->result;
		else if (cqe->result != g->chosen)
			nsim_fail(ns, "%s: node %u chose %llu, node 0 %llu", kind->name, node,
				  (unsigned long long)cqe->result, (unsigned long long)g->chosen);
		if (t > g->t_created)
			g->t_created = t;
		nsim_group_post(ns, node, kind->opcode, t);
		return;
	}
	if (cqe->opcode != kind->opcode)
		return;
	if (!kind->check(ns, node, cqe, g->done[node] + 1))
		return;
	if (++g->done[node] == ns->p.warmup && t > g->t_warm)
		g->t_warm = t;
	if (g->done[node] < ns->p.iters) {
		nsim_group_post(ns, node, kind->opcode, t);
		return;
	}
	if (t > g->t_end)
		g->t_end = t;
	nsim_node_done(ns, t);
	nsim_group_post(ns, node, NICOFF_OP_GROUP_DESTROY, t);
}

void nsim_group_finish(struct nsim *ns)
{
	struct nsim_group *g = ns->wl_state;
	u32 runs = ns->p.iters - ns->p.warmup, n;

	for (n = 0; n < ns->p.nodes; n++) {
		if (g->done[n] != ns->p.iters) {
			nsim_fail(ns, "%s: node %u did %u of %u %s", g->kind->name, n, g->done[n],
				  ns->p.iters, g->kind->ops);
			return;
		}
	}
	if (!ns->p.warmup)
		g->t_warm = g->t_created;
	nsim_metric(ns, "latency_us", (double)(g->t_end - g->t_warm) / runs / 1000, "us", runs);
	g->kind->metrics(ns, g);
}
