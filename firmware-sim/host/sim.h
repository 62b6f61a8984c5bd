/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The user-space host of the firmware: fw_os.h over heap buffers and an
 * in-process fabric of N cards driven by a virtual clock.  The fabric is a
 * LogGP model (see SIMULATOR.md): each card's processor is busy for o per
 * packet it sends and per packet it receives, a link takes one packet's
 * first byte at most every g + s * G after the previous one (s bytes:
 * header and payload), and a packet's last byte arrives s * G + L after its
 * first left.  Packets suffer the faults of struct fw_fault_cfg, decided
 * per sending node.  Everything is deterministic: same configuration, same
 * run.
 *
 * Events (packet arrivals) sit in one 4-ary heap ordered by (time,
 * insertion number); each card has at most one timer, kept in a second
 * heap and brought up to date before it runs, so no event is ever stale.
 *
 * Memory regions are registered per (card, port) and checked like the
 * module does.  Completions queue per port without bound, or go to a
 * completion hook (the simulator's workloads).  Allocations are counted so
 * that tests can demand that none leaks.
 */
#ifndef NICOFF_FWSIM_SIM_H
#define NICOFF_FWSIM_SIM_H

#include "fw_compat.h"
#include "fw.h"
#include "faults.h"
#include <uapi/nicoff.h>

#define SIM_MAX_PORTS	16u

/* LogGP defaults of sim_cfg_loggp(); SIMULATOR.md says where they come from. */
#define SIM_DEFAULT_L_NS	1000u
#define SIM_DEFAULT_O_NS	250u
#define SIM_DEFAULT_G_NS	20u
#define SIM_DEFAULT_BYTE_PS	100u	/* 10 GB/s */

struct sim_cfg {
	u32 nodes;
	u64 latency_ns;		/* L: last byte sent to last byte received */
	u32 overhead_ns;	/* o: card busy per packet sent and per packet received */
	u32 gap_ns;		/* g: between two packets' first bytes on a link, plus s * G */
	u32 byte_ps;		/* G: link time per byte, in picoseconds */
	u64 seed;		/* of the fault generators */
	u32 rx_room;		/* bytes a switch output holds for its card; 0: no limit */
	struct fw_fault_cfg faults;
	struct fw_config fw;	/* node and num_nodes are set per card */
};

struct sim_stats {
	u64 events;		/* arrivals and timers run */
	u64 timers;		/* timer events */
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
	u64 completions;	/* posted to ports */
	u64 rx_queued_peak;	/* most bytes on their way to one card at once */
};

/* Bytes the host holds; *_peak are high-water marks. */
struct sim_mem {
	u64 host;		/* per-card host state and its ports */
	u64 fw, fw_peak;	/* firmware allocations (usable size) */
	u64 pkt, pkt_peak;	/* packets: in flight, kept for resending, buffered */
	u64 queue, queue_peak;	/* event and timer heaps, allocated */
	u64 arena;		/* slabs the packets and firmware objects came from */
};

/*
 * Completion hook.  When set, completions bypass the ports' queues: each
 * is handed to @cqe once the firmware call that posted it has returned,
 * with the card's time @t when it was posted.  The hook may post commands
 * (sim_post_at()); their completions follow in order.
 */
struct sim_hooks {
	void (*cqe)(void *arg, u32 node, u32 port, const struct nicoff_cqe *cqe, u64 t);
	void *arg;
};

struct sim;

/*
 * sim_cfg_default(): the unit tests' fabric, L and G only (o = g = 0), with
 * short firmware timers.  sim_cfg_loggp(): the simulator's, every LogGP
 * parameter at its default and the firmware's own timer defaults.
 */
void sim_cfg_default(struct sim_cfg *cfg, u32 nodes);
void sim_cfg_loggp(struct sim_cfg *cfg, u32 nodes);
struct sim *sim_create(const struct sim_cfg *cfg);
/* Destroys everything; returns allocations leaked (firmware and packets). */
long sim_destroy(struct sim *s);

u64 sim_now(const struct sim *s);
/* A card's own clock: later than sim_now() while its processor is busy. */
u64 sim_node_time(const struct sim *s, u32 node);
u32 sim_nodes(const struct sim *s);
const struct sim_cfg *sim_config(const struct sim *s);
struct fw_card *sim_card(struct sim *s, u32 node);
/* The card's fw_os.h context, to allocate packets with. */
struct fw_host *sim_host(struct sim *s, u32 node);
const struct sim_stats *sim_stats(const struct sim *s);
void sim_mem_usage(const struct sim *s, struct sim_mem *m);
void sim_set_faults(struct sim *s, const struct fw_fault_cfg *faults);
/* The cfg's rx_room from now on. */
void sim_set_rx_room(struct sim *s, u32 bytes);
/*
 * A switch whose replication is broken: every copy of a multicast
 * (fwos_send_range()) is lost, unicast still goes, so that a card meets
 * hardware broadcast that keeps failing rather than one it was told is off.
 */
void sim_set_mcast_lost(struct sim *s, bool lost);
void sim_set_hooks(struct sim *s, const struct sim_hooks *hooks);
/* A dead card's packets, and packets to it, are lost. */
void sim_set_dead(struct sim *s, u32 node, bool dead);
/*
 * The card's host does not run it until global time @until (a card thread
 * not scheduled): what arrives meanwhile waits, and its timers run late.
 */
void sim_stall(struct sim *s, u32 node, u64 until);
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

/* Give the card a command now, or at time @t (not before now). */
void sim_post(struct sim *s, u32 node, u32 port, const struct nicoff_cmd *cmd);
void sim_post_at(struct sim *s, u32 node, u32 port, const struct nicoff_cmd *cmd, u64 t);
bool sim_cq_pop(struct sim *s, u32 node, u32 port, struct nicoff_cqe *cqe);
u32 sim_cq_count(const struct sim *s, u32 node, u32 port);

/* Run one event; false if there is none. */
bool sim_step(struct sim *s);
/* Time of the next event, FW_NEVER if there is none. */
u64 sim_next_time(struct sim *s);
/* Run every event up to @t, then set the clock to @t. */
void sim_run_until(struct sim *s, u64 t);
/* Run until no event is left or the clock passes @limit; true if idle. */
bool sim_run_idle(struct sim *s, u64 limit);
/* Run until the port has a completion (popped into @cqe) or @limit. */
bool sim_wait_cqe(struct sim *s, u32 node, u32 port, struct nicoff_cqe *cqe, u64 limit);

#endif
