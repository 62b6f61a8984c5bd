// SPDX-License-Identifier: GPL-2.0
/*
 * Sparse exchanges: each node sends fanout messages per iteration and
 * receives what is sent to it, then goes on to the next iteration (its
 * sends completed, its messages arrived).  Receives of an iteration are
 * posted when the node enters it.
 *
 * alltoall-sparse: fanout fixed random permutations of the nodes,
 * x -> (a_j x + b_j) mod N with a_j prime to N: node i sends to p_j(i) and
 * receives from p_j^-1(i), naming the source (none when p_j(i) = i).
 *
 * random: every iteration each node picks fanout peers at random (not
 * itself); receivers post as many receives as they will get, from any
 * source (the counts are worked out at the start).
 */
#include <stdlib.h>

#include "nsim.h"

#define SP_MAX_FANOUT	64u

struct sp_node {
	u32 iter;
	u16 sent;		/* sends of this iteration completed */
	u16 recvd;		/* and messages arrived */
};

struct sp_state {
	bool random;
	u64 a[SP_MAX_FANOUT], a_inv[SP_MAX_FANOUT], b[SP_MAX_FANOUT];
	u16 *indeg;		/* random: per iteration and node */
	u64 sends, recvs, want;
	struct sp_node node[];
};

static u64 sp_gcd(u64 a, u64 b)
{
	while (b) {
		u64 t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* The inverse of @a modulo @n, for gcd(a, n) = 1. */
static u64 sp_inverse(u64 a, u64 n)
{
	s64 t = 0, nt = 1, r = (s64)n, nr = (s64)a;

	while (nr) {
		s64 q = r / nr, x;

		x = t - q * nt;
		t = nt;
		nt = x;
		x = r - q * nr;
		r = nr;
		nr = x;
	}
	return (u64)(t < 0 ? t + (s64)n : t);
}

static u32 sp_dst(const struct nsim *ns, const struct sp_state *st, u32 it, u32 n, u32 j)
{
	u64 m = ns->p.nodes;

	if (st->random)
		return (u32)((n + 1 + nsim_hash(ns->p.cfg.seed, it, n, j) % (m - 1)) % m);
	return (u32)((st->a[j] * n + st->b[j]) % m);
}

static u32 sp_src(const struct nsim *ns, const struct sp_state *st, u32 n, u32 j)
{
	u64 m = ns->p.nodes;

	return (u32)(st->a_inv[j] * ((n + m - st->b[j]) % m) % m);
}

/* Messages node @n sends and receives in iteration @it. */
static u32 sp_nsend(const struct nsim *ns, const struct sp_state *st, u32 n)
{
	u32 j, c = 0;

	if (st->random)
		return ns->p.fanout;
	for (j = 0; j < ns->p.fanout; j++)
		c += sp_dst(ns, st, 0, n, j) != n;
	return c;
}

static u32 sp_nrecv(const struct nsim *ns, const struct sp_state *st, u32 it, u32 n)
{
	return st->random ? st->indeg[(u64)it * ns->p.nodes + n] : sp_nsend(ns, st, n);
}

static int sp_setup(struct nsim *ns, bool random)
{
	struct sp_state *st;
	u64 m = ns->p.nodes, it, n;
	u32 j, maxdeg = 0;

	if (!ns->p.fanout || ns->p.fanout > SP_MAX_FANOUT) {
		nsim_fail(ns, "fanout must be 1 to %u", SP_MAX_FANOUT);
		return -EINVAL;
	}
	st = nsim_state(ns, sizeof(*st), sizeof(st->node[0]));
	if (!st)
		return -ENOMEM;
	st->random = random;
	ns->send_slots = ns->p.fanout;
	ns->recv_slots = ns->p.fanout;
	if (!random) {
		for (j = 0; j < ns->p.fanout; j++) {
			u64 a, k = 0;

			do {
				a = 1 + nsim_hash(ns->p.cfg.seed, 0x5ba45e, j, k++) % (m - 1);
			} while (sp_gcd(a, m) != 1);
			st->a[j] = a;
			st->a_inv[j] = sp_inverse(a, m);
			st->b[j] = nsim_hash(ns->p.cfg.seed, 0xb, j, 0) % m;
		}
		for (n = 0; n < m; n++)
			st->want += sp_nsend(ns, st, (u32)n);
		st->want *= ns->p.iters;
		return 0;
	}
	st->indeg = calloc(m * ns->p.iters, sizeof(*st->indeg));
	if (!st->indeg)
		return -ENOMEM;
	for (it = 0; it < ns->p.iters; it++)
		for (n = 0; n < m; n++)
			for (j = 0; j < ns->p.fanout; j++) {
				u16 *d = &st->indeg[it * m + sp_dst(ns, st, (u32)it, (u32)n, j)];

				if (*d == 0xffff) {
					nsim_fail(ns, "random: a node gets 65535 messages");
					return -EINVAL;
				}
				if (++*d > maxdeg)
					maxdeg = *d;
			}
	st->want = m * ns->p.iters * ns->p.fanout;
	ns->recv_slots = maxdeg ? maxdeg : 1;
	return 0;
}

static int sp_init_sparse(struct nsim *ns)
{
	return sp_setup(ns, false);
}

static int sp_init_random(struct nsim *ns)
{
	return sp_setup(ns, true);
}

static u64 sp_tag(u32 it, u32 j)
{
	return (u64)it << 32 | j;
}

/* Node @n enters iteration sn->iter: post its receives, then its sends. */
static void sp_enter(struct nsim *ns, u32 n, u64 t)
{
	struct sp_state *st = ns->wl_state;
	struct sp_node *sn = &st->node[n];
	u32 it = sn->iter, j, r;

	sn->sent = 0;
	sn->recvd = 0;
	if (st->random) {
		for (r = 0; r < sp_nrecv(ns, st, it, n); r++)
			nsim_recv(ns, n, NICOFF_ANY, r, sp_tag(it, 0), ~0ull << 32, sp_tag(it, r),
				  t);
	} else {
		for (j = 0; j < ns->p.fanout; j++)
			if (sp_dst(ns, st, it, n, j) != n)
				nsim_recv(ns, n, sp_src(ns, st, n, j), j, sp_tag(it, j), ~0ull,
					  sp_tag(it, j), t);
	}
	for (j = 0; j < ns->p.fanout; j++) {
		u32 d = sp_dst(ns, st, it, n, j);

		if (d != n)
			nsim_send(ns, n, d, j, sp_tag(it, j), sp_tag(it, j), t);
	}
}

static void sp_start(struct nsim *ns)
{
	nsim_start_each(ns, sp_enter);
}

static void sp_cqe(struct nsim *ns, u32 n, const struct nicoff_cqe *cqe, u64 t)
{
	struct sp_state *st = ns->wl_state;
	struct sp_node *sn = &st->node[n];
	u32 it = (u32)(cqe->tag >> 32), slot = (u32)cqe->tag;

	if (it != sn->iter) {
		nsim_fail(ns, "node %u: completion %llx in iteration %u", n,
			  (unsigned long long)cqe->tag, sn->iter);
		return;
	}
	if (cqe->opcode == NICOFF_OP_SEND) {
		if (cqe->status)
			nsim_fail(ns, "node %u send %llx: %d", n, (unsigned long long)cqe->tag,
				  cqe->status);
		sn->sent++;
		st->sends++;
	} else {
		u32 j = (u32)cqe->msg_tag, src = cqe->src_card;

		if (cqe->msg_tag >> 32 != it || j >= ns->p.fanout || src >= ns->p.nodes ||
		    sp_dst(ns, st, it, src, j) != n) {
			nsim_fail(ns, "node %u: message %llx from %u is not for it", n,
				  (unsigned long long)cqe->msg_tag, src);
			return;
		}
		if (!nsim_check_recv(ns, n, cqe, slot, src, j))
			return;
		sn->recvd++;
		st->recvs++;
	}
	if (sn->sent < sp_nsend(ns, st, n) || sn->recvd < sp_nrecv(ns, st, it, n))
		return;
	nsim_next_iter(ns, n, ++sn->iter, sp_enter, t);
}

static void sp_finish(struct nsim *ns)
{
	struct sp_state *st = ns->wl_state;

	nsim_check_counts(ns, st->sends, st->recvs, st->want);
	nsim_metric_iters(ns, st->recvs);
}

static void sp_fini(struct nsim *ns)
{
	struct sp_state *st = ns->wl_state;

	if (st)
		free(st->indeg);
}

NSIM_WORKLOAD(nsim_wl_alltoall_sparse, "alltoall-sparse",
	      "fanout fixed random permutations: each node sends and receives fanout",
	      sp_init_sparse, sp, sp_fini);

NSIM_WORKLOAD(nsim_wl_random, "random",
	      "each node sends fanout messages to random peers every iteration", sp_init_random, sp,
	      sp_fini);
