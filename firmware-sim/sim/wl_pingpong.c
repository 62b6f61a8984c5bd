// SPDX-License-Identifier: GPL-2.0
/*
 * pingpong: node 0 sends a message to node 1, which answers with one of
 * the same size; iters round trips, of which the first warmup are not
 * measured.  Each side posts its next receive before it sends.  Reports
 * half the mean round trip (latency_us); SIMULATOR.md gives the LogGP
 * formula it must match.
 */

#include "nsim.h"

struct pp_state {
	u32 recvs[2];
	u32 sends;
	u64 t_warm;		/* end of the warm-up round trips */
	u64 t_end;		/* end of the last */
};

static int pp_init(struct nsim *ns)
{
	if (ns->p.iters <= ns->p.warmup) {
		nsim_fail(ns, "pingpong: iters (%u) must exceed warmup (%u)", ns->p.iters,
			  ns->p.warmup);
		return -EINVAL;
	}
	ns->send_slots = 1;
	ns->recv_slots = 1;
	return nsim_state(ns, sizeof(struct pp_state), 0) ? 0 : -ENOMEM;
}

static void pp_start(struct nsim *ns)
{
	u32 n;

	/* The other nodes take no part. */
	for (n = 2; n < ns->p.nodes; n++)
		nsim_node_done(ns, 0);
	nsim_recv(ns, 1, 0, 0, 0, ~0ull, 0, 0);
	nsim_recv(ns, 0, 1, 0, 0, ~0ull, 0, 0);
	nsim_send(ns, 0, 1, 0, 0, 0, 0);
}

static void pp_cqe(struct nsim *ns, u32 node, const struct nicoff_cqe *cqe, u64 t)
{
	struct pp_state *st = ns->wl_state;
	u32 peer = node ^ 1, i = (u32)cqe->tag;

	if (cqe->opcode == NICOFF_OP_SEND) {
		if (cqe->status)
			nsim_fail(ns, "pingpong: node %u send %u: %d", node, i, cqe->status);
		st->sends++;
		if (node == 1 && i + 1 == ns->p.iters)
			nsim_node_done(ns, t);
		return;
	}
	if (!nsim_check_recv(ns, node, cqe, 0, peer, 0))
		return;
	if (cqe->msg_tag != i || i != st->recvs[node]) {
		nsim_fail(ns, "pingpong: node %u got message %llu for receive %u, expected %u",
			  node, (unsigned long long)cqe->msg_tag, i, st->recvs[node]);
		return;
	}
	st->recvs[node]++;
	if (node == 1) {
		/* Ping i: post the receive for the next, answer. */
		if (i + 1 < ns->p.iters)
			nsim_recv(ns, 1, 0, 0, i + 1, ~0ull, i + 1, t);
		nsim_send(ns, 1, 0, 0, i, i, t);
		return;
	}
	/* Pong i: round trip i is over. */
	if (i + 1 == ns->p.warmup)
		st->t_warm = t;
	if (i + 1 == ns->p.iters) {
		st->t_end = t;
		nsim_node_done(ns, t);
		return;
	}
	nsim_recv(ns, 0, 1, 0, i + 1, ~0ull, i + 1, t);
	nsim_send(ns, 0, 1, 0, i + 1, i + 1, t);
}

static void pp_finish(struct nsim *ns)
{
	struct pp_state *st = ns->wl_state;
	u32 runs = ns->p.iters - ns->p.warmup;
	double rtt;

	if (st->recvs[0] != ns->p.iters || st->recvs[1] != ns->p.iters ||
	    st->sends != 2 * ns->p.iters) {
		nsim_fail(ns, "pingpong: %u and %u receives, %u sends of %u round trips",
			  st->recvs[0], st->recvs[1], st->sends, ns->p.iters);
		return;
	}
	rtt = (double)(st->t_end - st->t_warm) / runs;
	nsim_metric(ns, "latency_us", rtt / 2000, "us", runs);
	nsim_metric(ns, "rtt_us", rtt / 1000, "us", runs);
	nsim_metric(ns, "completion_us", (double)st->t_end / 1000, "us", 1);
}

NSIM_WORKLOAD(nsim_wl_pingpong, "pingpong", "nodes 0 and 1 bounce a message: half round trip",
	      pp_init, pp, NULL);
