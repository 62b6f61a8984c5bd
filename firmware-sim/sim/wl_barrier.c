// SPDX-License-Identifier: GPL-2.0
/*
 * barrier, barrier-<algorithm>: the barrier run by the cards
 * (firmware-sim/barrier.c), not by the hosts: every node creates one group
 * of all nodes (member table in its region: node i is card i, port 0),
 * then runs iters barriers back to back, posting each as soon as the
 * previous one completes.  "barrier" runs dissemination; barrier-auto lets
 * the cards time every algorithm and choose.  Reports the mean barrier
 * time (latency_us: the last node's completion of barrier warmup to that
 * of barrier iters, over iters - warmup), the algorithm run (chosen) and
 * the barrier packets per node and barrier.
 */

#include "nsim.h"
#include "fw_pkt.h"

struct bar_state {
	u32 alg;
	u32 created;
	u64 chosen;
	u64 t_warm;		/* the last node's completion of barrier warmup */
	u64 t_end;		/* and of barrier iters */
	u64 t_created;
	u32 done[];		/* barriers completed per node */
};

static int bar_init_alg(struct nsim *ns, u32 alg)
{
	struct bar_state *st;
	u64 table = (u64)ns->p.nodes * sizeof(struct nicoff_member);

	if (ns->p.iters <= ns->p.warmup || !ns->p.size) {
		nsim_fail(ns, "barrier: iters (%u) must exceed warmup (%u), size must be > 0",
			  ns->p.iters, ns->p.warmup);
		return -EINVAL;
	}
	if (ns->p.verify && ns->p.nodes > 4096) {
		nsim_fail(ns, "barrier: --verify keeps a table per node: 4096 nodes at most");
		return -EINVAL;
	}
	st = nsim_state(ns, sizeof(*st), sizeof(st->done[0]));
	if (!st)
		return -ENOMEM;
	st->alg = alg;
	/* The member table fills the send slots. */
	ns->send_slots = (u32)((table + ns->p.size - 1) / ns->p.size);
	ns->recv_slots = 0;
	return 0;
}

static void bar_post(struct nsim *ns, u32 node, u8 opcode, u64 t)
{
	struct bar_state *st = ns->wl_state;
	struct nicoff_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.tag = opcode;
	c.group.group_id = 1;
	if (opcode == NICOFF_OP_GROUP_CREATE) {
		c.group.rank = node;
		c.group.size = ns->p.nodes;
		c.group.mr = ns->mr;
		c.group.algorithm = st->alg;
	}
	sim_post_at(ns->s, node, 0, &c, t);
}

/* The region of @node (shared by all without --verify). */
static struct nicoff_member *bar_table(struct nsim *ns, u32 node)
{
	return (struct nicoff_member *)(ns->bufs + (ns->p.verify ? (u64)node * ns->region : 0));
}

static void bar_start(struct nsim *ns)
{
	u32 n, i;

	for (n = 0; n < (ns->p.verify ? ns->p.nodes : 1); n++) {
		struct nicoff_member *tab = bar_table(ns, n);

		for (i = 0; i < ns->p.nodes; i++) {
			tab[i].card = i;
			tab[i].port = 0;
		}
	}
	for (n = 0; n < ns->p.nodes; n++)
		bar_post(ns, n, NICOFF_OP_GROUP_CREATE, 0);
}

static void bar_cqe(struct nsim *ns, u32 node, const struct nicoff_cqe *cqe, u64 t)
{
	struct bar_state *st = ns->wl_state;

	if (cqe->status) {
		nsim_fail(ns, "barrier: node %u: opcode %u failed: %d", node, cqe->opcode,
			  cqe->status);
		nsim_node_done(ns, t);
		return;
	}
	switch (cqe->opcode) {
	case NICOFF_OP_GROUP_CREATE:
		if (!st->created++)
			st->chosen = cqe->result;
		else if (cqe->result != st->chosen)
			nsim_fail(ns, "barrier: node %u chose %llu, node 0 %llu", node,
				  (unsigned long long)cqe->result, (unsigned long long)st->chosen);
		if (t > st->t_created)
			st->t_created = t;
		bar_post(ns, node, NICOFF_OP_BARRIER, t);
		break;
	case NICOFF_OP_BARRIER:
		if (cqe->result != ++st->done[node]) {
			nsim_fail(ns, "barrier: node %u: barrier %llu, expected %u", node,
				  (unsigned long long)cqe->result, st->done[node]);
			return;
		}
		if (st->done[node] == ns->p.warmup && t > st->t_warm)
			st->t_warm = t;
		if (st->done[node] < ns->p.iters) {
			bar_post(ns, node, NICOFF_OP_BARRIER, t);
			return;
		}
		if (t > st->t_end)
			st->t_end = t;
		nsim_node_done(ns, t);
		bar_post(ns, node, NICOFF_OP_GROUP_DESTROY, t);
		break;
	default:
		break;
	}
}

static void bar_finish(struct nsim *ns)
{
	struct bar_state *st = ns->wl_state;
	u32 runs = ns->p.iters - ns->p.warmup, n;

	for (n = 0; n < ns->p.nodes; n++) {
		if (st->done[n] != ns->p.iters) {
			nsim_fail(ns, "barrier: node %u did %u of %u barriers", n, st->done[n],
				  ns->p.iters);
			return;
		}
	}
	if (!ns->p.warmup)
		st->t_warm = st->t_created;
	nsim_metric(ns, "latency_us", (double)(st->t_end - st->t_warm) / runs / 1000, "us", runs);
	nsim_metric(ns, "create_us", (double)st->t_created / 1000, "us", 1);
	nsim_metric(ns, "chosen", (double)(st->chosen & 0xffffffff), "alg", 1);
	nsim_metric(ns, "barrier_msgs_per_node",
		    (double)ns->fw.barrier_msgs / ns->p.nodes / (ns->p.iters + 1), "packets", 1);
	nsim_metric(ns, "barrier_nacks", (double)ns->fw.barrier_nacks, "packets", 1);
}

#define BAR_WORKLOAD(sym, wname, alg, text)					\
static int sym##_init(struct nsim *ns)						\
{										\
	return bar_init_alg(ns, alg);						\
}										\
NSIM_WORKLOAD(sym, wname, text, sym##_init, bar, NULL)

BAR_WORKLOAD(nsim_wl_barrier, "barrier", NICOFF_BARRIER_DISSEMINATION,
	     "card-run barrier (dissemination), back to back: mean time");
BAR_WORKLOAD(nsim_wl_barrier_pairwise, "barrier-pairwise", NICOFF_BARRIER_PAIRWISE,
	     "card-run barrier, pairwise exchange");
BAR_WORKLOAD(nsim_wl_barrier_tree, "barrier-tree", NICOFF_BARRIER_TREE,
	     "card-run barrier, gather-broadcast tree of degree 4");
BAR_WORKLOAD(nsim_wl_barrier_central, "barrier-central", NICOFF_BARRIER_CENTRAL,
	     "card-run barrier, central counter");
BAR_WORKLOAD(nsim_wl_barrier_combining, "barrier-combining", NICOFF_BARRIER_COMBINING,
	     "card-run barrier, combining tree of fan-in 4");
BAR_WORKLOAD(nsim_wl_barrier_tournament, "barrier-tournament", NICOFF_BARRIER_TOURNAMENT,
	     "card-run barrier, tournament");
BAR_WORKLOAD(nsim_wl_barrier_auto, "barrier-auto", NICOFF_BARRIER_AUTO,
	     "card-run barrier, the cards time every algorithm and keep the fastest");
