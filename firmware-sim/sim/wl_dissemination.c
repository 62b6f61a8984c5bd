// SPDX-License-Identifier: GPL-2.0
/*
 * dissemination: the dissemination barrier's communication, driven by the
 * hosts over reliable messages.  ceil(log2 N) rounds: in round k node i
 * sends to (i + 2^k) mod N and waits for the message of (i - 2^k) mod N,
 * then goes on to round k + 1.  A node keeps the receives of its round
 * and the next one posted (DIS_AHEAD): a message from a partner further
 * ahead waits in the card's unexpected queue until its receive is posted.
 * Posting every round's receive at once costs 80 bytes per round and node
 * of firmware memory, 1.6 GB at a million nodes.  iters barriers back to
 * back; reports the mean barrier time (the last node's exit over iters).
 */

#include "nsim.h"

#define DIS_AHEAD	2u	/* rounds with a receive posted */

struct dis_node {
	u32 got;		/* rounds of this barrier whose message arrived */
	u16 round;		/* the round it waits in (its send is posted) */
	u16 posted;		/* rounds of this barrier with a receive posted */
	u16 iter;		/* barriers done */
};

struct dis_state {
	u32 rounds;
	u64 sends, recvs;
	struct dis_node node[];
};

static int dis_init(struct nsim *ns)
{
	struct dis_state *st;

	if (ns->p.iters > 0xffff) {
		nsim_fail(ns, "dissemination: at most 65535 iterations");
		return -EINVAL;
	}
	st = nsim_state(ns, sizeof(*st), sizeof(st->node[0]));
	if (!st)
		return -ENOMEM;
	while ((1ull << st->rounds) < ns->p.nodes)
		st->rounds++;
	ns->send_slots = st->rounds;
	ns->recv_slots = st->rounds;
	return 0;
}

static u32 dis_peer(const struct nsim *ns, u32 n, u32 k, bool to)
{
	u64 d = (1ull << k) % ns->p.nodes;

	return (u32)(to ? (n + d) % ns->p.nodes : (n + ns->p.nodes - d) % ns->p.nodes);
}

static u64 dis_tag(const struct dis_state *st, u32 iter, u32 k)
{
	return (u64)iter * st->rounds + k;
}

/* Post receives up to DIS_AHEAD rounds from the current one. */
static void dis_post(struct nsim *ns, u32 n, u64 t)
{
	struct dis_state *st = ns->wl_state;
	struct dis_node *dn = &st->node[n];

	while (dn->posted < st->rounds && dn->posted < dn->round + DIS_AHEAD) {
		u32 k = dn->posted++;
		u64 tag = dis_tag(st, dn->iter, k);

		nsim_recv(ns, n, dis_peer(ns, n, k, false), k, tag, ~0ull, tag, t);
	}
}

/* Node @n enters barrier dn->iter: post the first receives, send round 0. */
static void dis_enter(struct nsim *ns, u32 n, u64 t)
{
	struct dis_state *st = ns->wl_state;
	struct dis_node *dn = &st->node[n];

	dn->got = 0;
	dn->round = 0;
	dn->posted = 0;
	dis_post(ns, n, t);
	nsim_send(ns, n, dis_peer(ns, n, 0, true), 0, dis_tag(st, dn->iter, 0),
		  dis_tag(st, dn->iter, 0), t);
}

static void dis_start(struct nsim *ns)
{
	nsim_start_each(ns, dis_enter);
}

static void dis_cqe(struct nsim *ns, u32 n, const struct nicoff_cqe *cqe, u64 t)
{
	struct dis_state *st = ns->wl_state;
	struct dis_node *dn = &st->node[n];
	u32 k = (u32)(cqe->tag % st->rounds);

	if (cqe->opcode == NICOFF_OP_SEND) {
		if (cqe->status)
			nsim_fail(ns, "dissemination: node %u send %llu: %d", n,
				  (unsigned long long)cqe->tag, cqe->status);
		st->sends++;
		return;
	}
	if (!nsim_check_recv(ns, n, cqe, k, dis_peer(ns, n, k, false), k))
		return;
	if (cqe->tag / st->rounds != dn->iter || cqe->msg_tag != cqe->tag ||
	    (dn->got & (1u << k))) {
		nsim_fail(ns, "dissemination: node %u: message %llu in receive %llu (barrier %u)",
			  n, (unsigned long long)cqe->msg_tag, (unsigned long long)cqe->tag,
			  dn->iter);
		return;
	}
	dn->got |= 1u << k;
	st->recvs++;
	while (dn->round < st->rounds && (dn->got & (1u << dn->round))) {
		if (++dn->round < st->rounds) {
			u64 tag = dis_tag(st, dn->iter, dn->round);

			dis_post(ns, n, t);
			nsim_send(ns, n, dis_peer(ns, n, dn->round, true), dn->round, tag, tag, t);
		}
	}
	if (dn->round < st->rounds)
		return;
	/* Out of the barrier. */
	nsim_next_iter(ns, n, ++dn->iter, dis_enter, t);
}

static void dis_finish(struct nsim *ns)
{
	struct dis_state *st = ns->wl_state;
	u64 want = (u64)ns->p.nodes * ns->p.iters * st->rounds;

	nsim_check_counts(ns, st->sends, st->recvs, want);
	nsim_metric(ns, "rounds", st->rounds, "rounds", 1);
	nsim_metric(ns, "barrier_us", (double)ns->t_done / 1000 / ns->p.iters, "us",
		    ns->p.iters);
	nsim_metric(ns, "completion_us", (double)ns->t_done / 1000, "us", 1);
	nsim_metric(ns, "messages", (double)st->recvs, "messages", 1);
}

NSIM_WORKLOAD(nsim_wl_dissemination, "dissemination",
	      "log2 N rounds to node + 2^k: the dissemination barrier, host-driven", dis_init, dis,
	      NULL);
