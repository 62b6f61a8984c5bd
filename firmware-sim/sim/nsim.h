/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nicoff-sim: N firmware instances on the LogGP fabric of host/sim.h,
 * driven by a workload that plays every node's host process.  A workload
 * is one file (wl_*.c) defining a struct nsim_workload, listed in
 * nsim_workloads[] (nsim.c).  Every node has port 0 and one region on it,
 * handle ns->mr: ns->send_slots slots of ns->p.size bytes to send from,
 * then ns->recv_slots to receive into.  With p.verify each node has its own
 * region whose send slots hold a pattern of (node, slot), which receivers
 * check; otherwise all nodes share one region and only tags are checked.
 *
 * A workload reacts to completions only: its hook runs at the card time of
 * the completion and posts commands at that time (the host's reaction
 * costs nothing).
 */
#ifndef NICOFF_NSIM_H
#define NICOFF_NSIM_H

#include "sim.h"

#define NSIM_MAX_METRICS	48

struct nsim_params {
	const char *workload;
	u32 nodes;
	u64 size;		/* message bytes */
	u32 iters;		/* iterations (pingpong: round trips) */
	u32 warmup;		/* pingpong: round trips not measured */
	u32 fanout;		/* alltoall-sparse, random: messages per node per iteration */
	bool verify;		/* per-node regions, contents checked */
	u64 limit_ns;		/* virtual time limit */
	struct sim_cfg cfg;	/* nodes is set from @nodes */
};

struct nsim_metric {
	const char *name;
	double value;
	const char *unit;
	u32 runs;
};

struct nsim;

struct nsim_workload {
	const char *name;
	const char *about;
	/* Check the parameters, set slots, allocate state (ns->wl_state). */
	int (*init)(struct nsim *ns);
	/* Post the first commands. */
	void (*start)(struct nsim *ns);
	/* A completion on @node's port 0 at card time @t. */
	void (*cqe)(struct nsim *ns, u32 node, const struct nicoff_cqe *cqe, u64 t);
	/* The fabric is idle: check counts, add metrics. */
	void (*finish)(struct nsim *ns);
	/* Free what nsim_state() did not allocate (NULL: nothing). */
	void (*fini)(struct nsim *ns);
};

/* A workload whose callbacks are @init, pfx_start, pfx_cqe, pfx_finish and @fini. */
#define NSIM_WORKLOAD(sym, wl_name, text, init_fn, pfx, fini_fn)		\
const struct nsim_workload sym = {						\
	.name = wl_name,							\
	.about = text,								\
	.init = init_fn,							\
	.start = pfx##_start,							\
	.cqe = pfx##_cqe,							\
	.finish = pfx##_finish,							\
	.fini = fini_fn,							\
}

struct nsim {
	struct nsim_params p;
	const struct nsim_workload *wl;
	struct sim *s;
	void *wl_state;
	u32 send_slots;
	u32 recv_slots;
	u32 mr;			/* region handle, the same on every node */
	u8 *bufs;		/* all regions */
	u64 region;		/* bytes of one region */

	u64 errors;
	char first_error[160];
	u32 unfinished;		/* nodes that have not called nsim_node_done() */
	u64 t_done;		/* latest nsim_node_done() */

	/* Measured by nsim_run(). */
	double setup_s;
	double run_s, cpu_s, sys_s;	/* the run: wall, CPU (user + system), system */
	u64 rss_base_kb, rss_peak_kb;
	bool idle;
	long leaks;
	struct sim_stats stats;
	struct sim_mem mem;
	struct fw_stats fw;	/* every card's, summed */
	u64 end_ns;		/* virtual time when the fabric went idle */

	struct nsim_metric metrics[NSIM_MAX_METRICS];
	u32 nmetrics;
};

extern const struct nsim_workload nsim_wl_pingpong;
extern const struct nsim_workload nsim_wl_ring;
extern const struct nsim_workload nsim_wl_alltoall_sparse;
extern const struct nsim_workload nsim_wl_random;
extern const struct nsim_workload nsim_wl_dissemination;
/* wl_barrier.c: barriers run by the cards, one workload per algorithm. */
extern const struct nsim_workload nsim_wl_barrier;
extern const struct nsim_workload nsim_wl_barrier_pairwise;
extern const struct nsim_workload nsim_wl_barrier_tree;
extern const struct nsim_workload nsim_wl_barrier_central;
extern const struct nsim_workload nsim_wl_barrier_combining;
extern const struct nsim_workload nsim_wl_barrier_tournament;
extern const struct nsim_workload nsim_wl_barrier_auto;
/* wl_bcast.c: broadcasts run by the cards. */
extern const struct nsim_workload nsim_wl_bcast;
extern const struct nsim_workload nsim_wl_bcast_p2p;
extern const struct nsim_workload nsim_wl_bcast_nocrc;
extern const struct nsim_workload *const nsim_workloads[];

const struct nsim_workload *nsim_find(const char *name);
void nsim_params_default(struct nsim_params *p);

/*
 * Create the fabric, run the workload until the fabric is idle (or the
 * limit), measure, check, destroy.  Returns 0, or -EINVAL for parameters
 * the workload refuses (ns->first_error says why).  Errors found while
 * running are counted in ns->errors.
 */
int nsim_run(struct nsim *ns, const struct nsim_params *p);

/* For workloads. */
void nsim_send(struct nsim *ns, u32 node, u32 dst, u32 slot, u64 msg_tag, u64 tag, u64 t);
void nsim_recv(struct nsim *ns, u32 node, u32 src, u32 slot, u64 match, u64 mask, u64 tag,
	       u64 t);
/* A receive completed: status, length and (verify) contents from @src's slot. */
bool nsim_check_recv(struct nsim *ns, u32 node, const struct nicoff_cqe *cqe, u32 slot,
		     u32 src, u32 src_slot);
void nsim_fail(struct nsim *ns, const char *fmt, ...);
/*
 * The workload's state (ns->wl_state), zeroed: a struct of @size bytes
 * whose flexible array member holds @node_size bytes per node (0: none).
 * Freed after the workload's fini.  NULL if out of memory.
 */
void *nsim_state(struct nsim *ns, size_t size, size_t node_size);
/* Start every node: @enter(ns, node, 0) for each, in order. */
void nsim_start_each(struct nsim *ns, void (*enter)(struct nsim *ns, u32 node, u64 t));
/* @node has done @done iterations at @t: the last makes it done, else @enter starts the next. */
void nsim_next_iter(struct nsim *ns, u32 node, u32 done,
		    void (*enter)(struct nsim *ns, u32 node, u64 t), u64 t);
/* Every node's sends and receives completed: @want of each, in all. */
void nsim_check_counts(struct nsim *ns, u64 sends, u64 recvs, u64 want);
/* completion_us, iter_us and messages (@recvs). */
void nsim_metric_iters(struct nsim *ns, u64 recvs);
void nsim_node_done(struct nsim *ns, u64 t);
void nsim_metric(struct nsim *ns, const char *name, double value, const char *unit, u32 runs);
/* A value from the seed and up to three numbers, for workloads' choices. */
u64 nsim_hash(u64 seed, u64 a, u64 b, u64 c);

/*
 * Collectives run by the cards (group.c, for wl_barrier.c and wl_bcast.c):
 * every node creates one group of all nodes (node i is card i, port 0; the
 * member table fills the send slots), runs iters operations back to back,
 * posting each as soon as the previous one completes, then destroys the
 * group.  latency_us is the last node's completion of operation warmup to
 * that of operation iters, over iters - warmup.
 */
struct nsim_group;

struct nsim_group_kind {
	const char *name;	/* of the workload family, in messages */
	const char *ops;	/* what it counts, in messages: "barriers" */
	u8 opcode;		/* NICOFF_OP_BARRIER or NICOFF_OP_BCAST */
	/* Operation @n (from 1) of @node completed: its result is right (else nsim_fail()). */
	bool (*check)(struct nsim *ns, u32 node, const struct nicoff_cqe *cqe, u32 n);
	/* Every node did iters: the metrics after latency_us. */
	void (*metrics)(struct nsim *ns, const struct nsim_group *g);
};

/* The nsim_group_kind pfx_kind, whose callbacks are pfx_check and pfx_metrics. */
#define NSIM_GROUP_KIND(pfx, kind_name, kind_ops, op)				\
static const struct nsim_group_kind pfx##_kind = {				\
	.name = kind_name,							\
	.ops = kind_ops,							\
	.opcode = op,								\
	.check = pfx##_check,							\
	.metrics = pfx##_metrics,						\
}

struct nsim_group {
	const struct nsim_group_kind *kind;
	u32 alg;		/* GROUP_CREATE's algorithm and bcast_flags */
	u32 bcast_flags;
	u32 created;		/* creations completed */
	u64 chosen;		/* their result: the algorithm run */
	u64 t_created;		/* the last node's creation */
	u64 t_warm;		/* the last node's completion of operation warmup */
	u64 t_end;		/* and of operation iters */
	u32 done[];		/* operations completed per node */
};

/* The workload's init: check the parameters, allocate ns->wl_state, set the slots. */
int nsim_group_init(struct nsim *ns, const struct nsim_group_kind *kind, u32 alg,
		    u32 bcast_flags);
/* The workload's start, cqe and finish (NSIM_WORKLOAD()'s pfx nsim_group). */
void nsim_group_start(struct nsim *ns);
void nsim_group_cqe(struct nsim *ns, u32 node, const struct nicoff_cqe *cqe, u64 t);
void nsim_group_finish(struct nsim *ns);

/* A workload of @kind's operations in a group created with @alg and @bcast_flags. */
#define NSIM_GROUP_WORKLOAD(sym, wl_name, text, kind, alg, bcast_flags)	\
static int sym##_init(struct nsim *ns)						\
{										\
	return nsim_group_init(ns, kind, alg, bcast_flags);			\
}										\
NSIM_WORKLOAD(sym, wl_name, text, sym##_init, nsim_group, NULL)

#endif
