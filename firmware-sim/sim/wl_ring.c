// SPDX-License-Identifier: GPL-2.0
/*
 * ring: every node sends to node + 1 and receives from node - 1, iters
 * times.  A node sends message i + 1 once its send i has completed and
 * message i has arrived (a send/receive exchange per iteration); it posts
 * the receive for i + 1 as soon as i has arrived.  Every message must
 * arrive exactly once and in order.  Reports the completion time of the
 * last node and the mean time per iteration.
 */

#include "nsim.h"

struct ring_node {
	u32 posted;		/* sends posted */
	u32 sent;		/* sends completed */
	u32 recvd;		/* messages arrived */
};

struct ring_state {
	u64 sends, recvs;
	struct ring_node node[];
};

static int ring_init(struct nsim *ns)
{
	struct ring_state *st = nsim_state(ns, sizeof(*st), sizeof(st->node[0]));

	if (!st)
		return -ENOMEM;
	ns->send_slots = 1;
	ns->recv_slots = 1;
	return 0;
}

static u32 ring_next(const struct nsim *ns, u32 n)
{
	return n + 1 == ns->p.nodes ? 0 : n + 1;
}

static u32 ring_prev(const struct nsim *ns, u32 n)
{
	return n ? n - 1 : ns->p.nodes - 1;
}

/* Send the next message if the previous exchange is over. */
static void ring_advance(struct nsim *ns, u32 n, u64 t)
{
	struct ring_node *rn = &((struct ring_state *)ns->wl_state)->node[n];

	if (rn->posted < ns->p.iters && rn->sent == rn->posted && rn->recvd >= rn->posted) {
		nsim_send(ns, n, ring_next(ns, n), 0, rn->posted, rn->posted, t);
		rn->posted++;
	} else if (rn->sent == ns->p.iters && rn->recvd == ns->p.iters) {
		nsim_node_done(ns, t);
	}
}

static void ring_start(struct nsim *ns)
{
	u32 n;

	for (n = 0; n < ns->p.nodes; n++) {
		nsim_recv(ns, n, ring_prev(ns, n), 0, 0, ~0ull, 0, 0);
		ring_advance(ns, n, 0);
	}
}

static void ring_cqe(struct nsim *ns, u32 n, const struct nicoff_cqe *cqe, u64 t)
{
	struct ring_state *st = ns->wl_state;
	struct ring_node *rn = &st->node[n];

	if (cqe->opcode == NICOFF_OP_SEND) {
		if (cqe->status || cqe->tag != rn->sent)
			nsim_fail(ns, "ring: node %u send %llu: %d (expected send %u)", n,
				  (unsigned long long)cqe->tag, cqe->status, rn->sent);
		rn->sent++;
		st->sends++;
	} else {
		if (!nsim_check_recv(ns, n, cqe, 0, ring_prev(ns, n), 0))
			return;
		if (cqe->tag != rn->recvd || cqe->msg_tag != rn->recvd) {
			nsim_fail(ns, "ring: node %u: message %llu in receive %llu, expected %u",
				  n, (unsigned long long)cqe->msg_tag,
				  (unsigned long long)cqe->tag, rn->recvd);
			return;
		}
		rn->recvd++;
		st->recvs++;
		if (rn->recvd < ns->p.iters)
			nsim_recv(ns, n, ring_prev(ns, n), 0, rn->recvd, ~0ull, rn->recvd, t);
	}
	ring_advance(ns, n, t);
}

static void ring_finish(struct nsim *ns)
{
	struct ring_state *st = ns->wl_state;
	u64 want = (u64)ns->p.nodes * ns->p.iters;

	nsim_check_counts(ns, st->sends, st->recvs, want);
	nsim_metric_iters(ns, st->recvs);
}

NSIM_WORKLOAD(nsim_wl_ring, "ring",
	      "each node sends to node + 1, receives from node - 1, iters times", ring_init, ring,
	      NULL);
