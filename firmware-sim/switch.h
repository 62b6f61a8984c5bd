/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The switch of the emulated fabric, one model for both hosts: the module
 * (kmod/fabric.c) and the user-space host (host/), which keep only their
 * queues and clocks.  Nodes 0..nodes-1 each have one link to it.
 *
 * A packet a node sends is serialised on its link, then routed to one node
 * or replicated to a range of nodes; each copy gets a fault verdict
 * (faults.h) from the sender's generator and is handed to the host with
 * the time its last byte reaches its node.  Timing is LogGP's
 * (SIMULATOR.md): a link takes a packet's first byte no earlier than
 * g + s * G after the previous one's, and the last byte arrives s * G + L
 * after the first left (s bytes, G per byte, latency L).
 *
 * Portable C like the firmware: copies come from fwos_pkt_alloc() of the
 * sender's host and lost packets go back with fwos_pkt_free().  A link's
 * state and a sender's fault generator belong to the one context that
 * runs that node: they have no lock.
 */
#ifndef NICOFF_FW_SWITCH_H
#define NICOFF_FW_SWITCH_H

#include "fw_os.h"
#include "faults.h"

struct fw_pkt;

struct fw_switch_cfg {
	u32 nodes;		/* nodes 0..nodes-1 exist */
	u32 gap_ns;		/* g */
	u64 latency_ns;		/* L */
	u32 byte_mul;		/* G is byte_mul / byte_div ns per byte; */
	u32 byte_div;		/*  byte_div 0: links take no time */
};

/* What the switch asks of its host. */
struct fw_switch_ops {
	/*
	 * Queue @pkt, @size bytes on the wire whatever its header now says,
	 * for node @dst, its last byte there at @due.  @faults: the FW_FAULT_*
	 * of this copy: DUP marks the (intact) duplicate, CORRUPT a flipped
	 * bit, REORDER and DELAY that @due includes the extra delay.
	 */
	void (*deliver)(void *arg, u32 dst, struct fw_pkt *pkt, u32 size, u64 due, u32 faults);
	/* Whether @node's link is up (NULL: every link is): a down one loses packets. */
	bool (*link_up)(void *arg, u32 node);
};

struct fw_switch {
	struct fw_switch_cfg cfg;
	const struct fw_switch_ops *ops;
	void *arg;
};

/* A node's link, as the switch sees it. */
struct fw_switch_link {
	u64 tx_free;		/* it takes the next packet's first byte then */
	u64 rx_free;		/* the switch starts the next packet to it then */
};

/* The node a packet comes from. */
struct fw_switch_src {
	u32 node;
	struct fw_host *host;	/* its packets' allocator */
	struct fw_switch_link *link;
	struct fw_fault_state *faults;
	const struct fw_fault_cfg *fault_cfg;
};

enum fw_switch_fate {
	FW_SWITCH_QUEUED,	/* handed to the host (with a duplicate if DUP) */
	FW_SWITCH_NO_ROUTE,	/* no such node: freed before it took the link */
	FW_SWITCH_LINK_DOWN,	/* the sender's link was taken; the receiver's is down */
	FW_SWITCH_DROPPED,	/* a drop fault */
};

/* G: the link time of @size bytes. */
u64 fw_switch_wire_ns(const struct fw_switch_cfg *cfg, u32 size);

/*
 * Send @pkt (the switch takes it) from @src to the node its header names,
 * ready for the link at @ready.  A packet to no node costs nothing; any
 * other takes the sender's link, even if it is then lost.
 */
enum fw_switch_fate fw_switch_send(const struct fw_switch *sw, const struct fw_switch_src *src,
				   struct fw_pkt *pkt, u64 ready);

/*
 * Send @pkt (the switch takes it) from @src to every node of
 * [@first, @last] but the sender itself: it takes the sender's link once,
 * then each copy has its own verdict, drawn in node order.  Returns the
 * copies handed to the host (duplicates not counted); the sender's fault
 * counts say how many were dropped.  A range that reaches past the last
 * node, or holds only the sender, is refused (-EINVAL): the packet is
 * freed before it takes the link.
 */
int fw_switch_replicate(const struct fw_switch *sw, const struct fw_switch_src *src,
			struct fw_pkt *pkt, u32 first, u32 last, u64 ready);

/*
 * When the switch has put the last byte of a @size-byte packet, due at
 * @due, onto the receiver's @link: no earlier than G * @size after the
 * previous packet to it, which then waits g more.  Receivers contend for
 * nothing unless their host calls this.
 */
u64 fw_switch_arrive(const struct fw_switch_cfg *cfg, struct fw_switch_link *link, u64 due,
		     u32 size);

#endif
