/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The user-space host of the firmware: fw_os.h over heap buffers and an
 * in-process fabric of N cards driven by a virtual clock and one event
 * queue (a binary heap).  A packet leaves its card when the card's link is
 * free, takes len * byte_ps to serialise and latency_ns to arrive, and
 * suffers the faults of struct fw_fault_cfg, decided per sending node.
 * Everything is deterministic: same configuration, same run.
 *
 * Memory regions are registered per (card, port) and checked like the
 * module does.  Completions queue per port without bound.  Allocations
 * are counted so that tests can demand that none leaks.
 */
#ifndef NICOFF_FWSIM_SIM_H
#define NICOFF_FWSIM_SIM_H

#include "fw_compat.h"
#include "fw.h"
#include "faults.h"
#include <uapi/nicoff.h>

#define SIM_MAX_PORTS	16u

struct sim_cfg {
	u32 nodes;
	u64 latency_ns;		/* per packet, wire and switch */
	u32 byte_ps;		/* link time per byte, in picoseconds */
	u64 seed;		/* of the fault generators */
	struct fw_fault_cfg faults;
	struct fw_config fw;	/* node and num_nodes are set per card */
};

struct sim_stats {
	u64 events;
	u64 sent;		/* packets handed to the fabric */
	u64 delivered;		/* packets handed to a card, copies included */
	u64 dropped;		/* by a drop fault */
	u64 dead;		/* from or to a dead or missing card */
	u64 dups;
	u64 corrupted;		/* corrupted packets handed to a card */
	u64 reorders;
	u64 delays;
	u64 bad_completions;	/* posted to a port that is not attached */
	u64 bad_mem;		/* memory calls for a port that is not attached */
	u64 zalloc_leaks;	/* firmware allocations left at card destroy */
};

struct sim;

void sim_cfg_default(struct sim_cfg *cfg, u32 nodes);
struct sim *sim_create(const struct sim_cfg *cfg);
/* Destroys everything; returns allocations leaked (firmware and packets). */
long sim_destroy(struct sim *s);

u64 sim_now(const struct sim *s);
u32 sim_nodes(const struct sim *s);
struct fw_card *sim_card(struct sim *s, u32 node);
const struct sim_stats *sim_stats(const struct sim *s);
void sim_set_faults(struct sim *s, const struct fw_fault_cfg *faults);
/* A dead card's packets, and packets to it, are lost. */
void sim_set_dead(struct sim *s, u32 node, bool dead);
/* Destroy and recreate a card with @epoch: its ports and regions are gone. */
long sim_restart(struct sim *s, u32 node, u32 epoch);
/* Outstanding firmware allocations of a card, and packets in the process. */
long sim_zallocs(const struct sim *s, u32 node);
long sim_pkts(const struct sim *s);

int sim_attach(struct sim *s, u32 node, u32 port);
bool sim_attached(const struct sim *s, u32 node, u32 port);
void sim_detach(struct sim *s, u32 node, u32 port);
int sim_reg_mr(struct sim *s, u32 node, u32 port, void *buf, u64 len, u32 access,
	       u32 *handle, u32 *rkey);
int sim_dereg_mr(struct sim *s, u32 node, u32 port, u32 handle);

void sim_post(struct sim *s, u32 node, u32 port, const struct nicoff_cmd *cmd);
bool sim_cq_pop(struct sim *s, u32 node, u32 port, struct nicoff_cqe *cqe);
u32 sim_cq_count(const struct sim *s, u32 node, u32 port);

/* Run one event; false if there is none. */
bool sim_step(struct sim *s);
/* Run every event up to @t, then set the clock to @t. */
void sim_run_until(struct sim *s, u64 t);
/* Run until no event is left or the clock passes @limit; true if idle. */
bool sim_run_idle(struct sim *s, u64 limit);
/* Run until the port has a completion (popped into @cqe) or @limit. */
bool sim_wait_cqe(struct sim *s, u32 node, u32 port, struct nicoff_cqe *cqe, u64 limit);

#endif
