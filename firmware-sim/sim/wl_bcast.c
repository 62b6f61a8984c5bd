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

struct bc_state {
	u32 flags;
	u64 t_warm;
	u64 t_end;
	u64 t_created;
	u32 done[];		/* broadcasts completed per node */
};

static int bc_init_flags(struct nsim *ns, u32 flags)
{
	struct bc_state *st;
	u64 table = (u64)ns->p.nodes * sizeof(struct nicoff_member);

	if (ns->p.iters <= ns->p.warmup || !ns->p.size) {
		nsim_fail(ns, "bcast: iters (%u) must exceed warmup (%u), size must be > 0",
			  ns->p.iters, ns->p.warmup);
		return -EINVAL;
	}
	if (ns->p.nodes > 4096) {
		nsim_fail(ns, "bcast: a group of more than 4096 members cannot broadcast");
		return -EINVAL;
	}
	st = nsim_state(ns, sizeof(*st), sizeof(st->done[0]));
	if (!st)
		return -ENOMEM;
	st->flags = flags;
	/* The member table fills the send slots; the data is the receive slot. */
	ns->send_slots = (u32)((table + ns->p.size - 1) / ns->p.size);
	ns->recv_slots = 1;
	return 0;
}

static void bc_post(struct nsim *ns, u32 node, u8 opcode, u64 t)
{
	struct bc_state *st = ns->wl_state;
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
		c.group.algorithm = NICOFF_BARRIER_DISSEMINATION;
		c.group.bcast_flags = st->flags;
	}
	sim_post_at(ns->s, node, 0, &c, t);
}

static void bc_start(struct nsim *ns)
{
	u32 n, i;

	for (n = 0; n < (ns->p.verify ? ns->p.nodes : 1); n++) {
		u64 at = ns->p.verify ? (u64)n * ns->region : 0;
		struct nicoff_member *tab = (struct nicoff_member *)(ns->bufs + at);

		for (i = 0; i < ns->p.nodes; i++) {
			tab[i].card = i;
			tab[i].port = 0;
		}
	}
	for (n = 0; n < ns->p.nodes; n++)
		bc_post(ns, n, NICOFF_OP_GROUP_CREATE, 0);
}

static void bc_cqe(struct nsim *ns, u32 node, const struct nicoff_cqe *cqe, u64 t)
{
	struct bc_state *st = ns->wl_state;

	if (cqe->status) {
		nsim_fail(ns, "bcast: node %u: opcode %u failed: %d", node, cqe->opcode,
			  cqe->status);
		nsim_node_done(ns, t);
		return;
	}
	switch (cqe->opcode) {
	case NICOFF_OP_GROUP_CREATE:
		if (t > st->t_created)
			st->t_created = t;
		bc_post(ns, node, NICOFF_OP_BCAST, t);
		break;
	case NICOFF_OP_BCAST:
		if (cqe->result != ns->p.size) {
			nsim_fail(ns, "bcast: node %u: %llu bytes", node,
				  (unsigned long long)cqe->result);
			return;
		}
		st->done[node]++;
		if (st->done[node] == ns->p.warmup && t > st->t_warm)
			st->t_warm = t;
		if (st->done[node] < ns->p.iters) {
			bc_post(ns, node, NICOFF_OP_BCAST, t);
			return;
		}
		if (t > st->t_end)
			st->t_end = t;
		nsim_node_done(ns, t);
		bc_post(ns, node, NICOFF_OP_GROUP_DESTROY, t);
		break;
	default:
		break;
	}
}

static void bc_finish(struct nsim *ns)
{
	struct bc_state *st = ns->wl_state;
	u32 runs = ns->p.iters - ns->p.warmup, n;

	for (n = 0; n < ns->p.nodes; n++) {
		if (st->done[n] != ns->p.iters) {
			nsim_fail(ns, "bcast: node %u did %u of %u broadcasts", n, st->done[n],
				  ns->p.iters);
			return;
		}
	}
	if (!ns->p.warmup)
		st->t_warm = st->t_created;
	nsim_metric(ns, "latency_us", (double)(st->t_end - st->t_warm) / runs / 1000, "us", runs);
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

#define BC_WORKLOAD(sym, wname, flags, text)					\
static int sym##_init(struct nsim *ns)						\
{										\
	return bc_init_flags(ns, flags);					\
}										\
NSIM_WORKLOAD(sym, wname, text, sym##_init, bc, NULL)

BC_WORKLOAD(nsim_wl_bcast, "bcast", 0,
	    "card-run broadcast from node 0 by the fabric's multicast, back to back: mean time");
BC_WORKLOAD(nsim_wl_bcast_p2p, "bcast-p2p", NICOFF_BCAST_F_P2P,
	    "card-run broadcast down the point-to-point binomial tree");
BC_WORKLOAD(nsim_wl_bcast_nocrc, "bcast-nocrc", NICOFF_BCAST_F_NOCRC,
	    "card-run broadcast by multicast, no CRC over the payload");
