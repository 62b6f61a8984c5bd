// SPDX-License-Identifier: GPL-2.0
/*
 * bcast, bcast-p2p, bcast-nocrc: broadcast run by the cards
 * (firmware-sim/bcast.c): every node creates one group of all nodes
 * (node i is card i, port 0), then runs iters broadcasts of size bytes
 * from node 0 back to back, every node posting its next as soon as its
 * previous completes (seed 002, 6: the sample loop).  "bcast" uses the
 * fabric's multicast, bcast-p2p the point-to-point tree, bcast-nocrc the
 * multicast without a payload CRC; --channels sets the group's channels.
 * Reports the mean broadcast time (latency_us: the last node's completion
 * of broadcast warmup to that of broadcast iters, over iters - warmup),
 * and the broadcast packets and synchronisations per broadcast.
 */

#include "nsim.h"

static bool bc_check(struct nsim *ns, u32 node, const struct nicoff_cqe *cqe, u32 n)
{
	(void)n;	/* every broadcast carries size bytes */
	if (cqe->result == ns->p.size)
		return true;
	nsim_fail(ns, "bcast: node %u: %llu bytes", node, (unsigned long long)cqe->result);
	return false;
}

static void bc_metrics(struct nsim *ns, const struct nsim_group *g)
{
	(void)g;
	nsim_metric(ns, "bcast_pkts_per_bcast", (double)ns->fw.bcast_pkts / ns->p.iters,
		    "packets", 1);
	nsim_metric(ns, "bcast_mcasts_per_bcast", (double)ns->fw.bcast_mcasts / ns->p.iters,
		    "packets", 1);
	nsim_metric(ns, "syncs_per_bcast",
		    (double)ns->fw.bcast_syncs / ns->p.nodes / ns->p.iters, "rounds", 1);
	nsim_metric(ns, "bcast_resends", (double)ns->fw.bcast_resends, "packets", 1);
	nsim_metric(ns, "bcast_nacks", (double)ns->fw.bcast_nacks, "packets", 1);
	nsim_metric(ns, "bcast_failovers", (double)ns->fw.bcast_failovers, "groups", 1);
}

NSIM_GROUP_KIND(bc, "bcast", "broadcasts", NICOFF_OP_BCAST);

#define BC_WORKLOAD(sym, wname, flags, text)					\
	NSIM_GROUP_WORKLOAD(sym, wname, text, &bc_kind, NICOFF_BARRIER_DISSEMINATION, flags)

BC_WORKLOAD(nsim_wl_bcast, "bcast", 0,
	    "card-run broadcast from node 0 by the fabric's multicast, back to back: mean time");
BC_WORKLOAD(nsim_wl_bcast_p2p, "bcast-p2p", NICOFF_BCAST_F_P2P,
	    "card-run broadcast down the point-to-point binomial tree");
BC_WORKLOAD(nsim_wl_bcast_nocrc, "bcast-nocrc", NICOFF_BCAST_F_NOCRC,
	    "card-run broadcast by multicast, no CRC over the payload");
