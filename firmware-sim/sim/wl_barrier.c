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

static bool bar_check(struct nsim *ns, u32 node, const struct nicoff_cqe *cqe, u32 n)
{
	/* A barrier's result is its number. */
	if (cqe->result == n)
		return true;
	nsim_fail(ns, "barrier: node %u: barrier %llu, expected %u", node,
		  (unsigned long long)cqe->result, n);
	return false;
}

static void bar_metrics(struct nsim *ns, const struct nsim_group *g)
{
	nsim_metric(ns, "create_us", (double)g->t_created / 1000, "us", 1);
	nsim_metric(ns, "chosen", (double)(g->chosen & 0xffffffff), "alg", 1);
	nsim_metric(ns, "barrier_msgs_per_node",
		    (double)ns->fw.barrier_msgs / ns->p.nodes / (ns->p.iters + 1), "packets", 1);
	nsim_metric(ns, "barrier_nacks", (double)ns->fw.barrier_nacks, "packets", 1);
}

NSIM_GROUP_KIND(bar, "barrier", "barriers", NICOFF_OP_BARRIER);

#define BAR_WORKLOAD(sym, wname, alg, text)					\
	NSIM_GROUP_WORKLOAD(sym, wname, text, &bar_kind, alg, 0)

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
