/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of the user-space host share: its state and the calls
 * between its parts.
 *
 *   sim.c          configuration, cards, ports, the cards' clocks
 *   arena.c        packets' and firmware objects' memory (fwos_zalloc())
 *   events.c       the heaps of packet arrivals and card timers
 *   fabric.c       packets (fwos_send()) through the switch of switch.h
 *   regions.c      memory regions (fwos_mem_*())
 *   completions.c  port completion queues and the completion hook
 *   crc.c          fwos_crc32c()
 *   loop.c         running events in order
 */
#ifndef NICOFF_FWSIM_HOST_H
#define NICOFF_FWSIM_HOST_H

#include "sim.h"
#include "fw_os.h"
#include "fw_pkt.h"
#include "switch.h"

#define SIM_NO_TIMER	0xffffffffu

/*
 * Packets and firmware objects come from an arena of 2 MiB slabs (huge
 * pages on large fabrics), each slab cut into blocks of one size class
 * (multiples of 16 bytes); freed blocks go on their class's free list and
 * are handed out again.  A block carries no header: its slab says its
 * class.  At a million cards this halves the cost of an event, most of
 * which was malloc's bookkeeping, page faults and TLB misses.  Larger
 * blocks, or any once the arena's address space is used up, come from
 * malloc.
 */
#define SIM_SLAB_SHIFT		21
#define SIM_SLAB		(2ull << 20)	/* 1 << SIM_SLAB_SHIFT */
#define SIM_ARENA_SLABS		65536u		/* 128 GiB of address space, reserved only */
#define SIM_CLASS_MAX		(8192u + 256u)
#define SIM_CLASSES		(SIM_CLASS_MAX / 16 + 1)
#define SIM_HUGE_NODES		1024u		/* huge pages from this many cards on */
#define SIM_HUGE_MIN		(4ull << 20)	/* and for arrays this large */

struct sim_free {
	struct sim_free *next;
};

struct sim_class {
	struct sim_free *free;
	u8 *cur;
	u8 *end;
};

struct sim_arena {
	u8 *map;		/* the reservation, */
	u8 *base;		/*  from its first 2 MiB boundary */
	u32 nslabs;		/* slabs handed to classes */
	u16 *slab_class;
	struct sim_class cls[SIM_CLASSES];
};

/* What the host keeps ahead of each packet it allocates. */
struct sim_pkt {
	u32 node;		/* destination card */
	u32 size;		/* bytes the fabric delivers */
	u32 corrupt;
	u32 reserved;		/* keeps the packet 16-byte aligned */
};

/* A packet arrival. */
struct sim_ev {
	u64 time;
	u64 seq;
	struct sim_pkt *p;
};

/* A card's next timer. */
struct sim_tmr {
	u64 time;
	u64 seq;
	u32 node;
};

/* A completion waiting for the hook. */
struct sim_done {
	u32 node;
	u32 port;
	u64 t;
	struct nicoff_cqe cqe;
};

/* A registered region; its handle is its index + 1, a zero len a free slot. */
struct sim_mr {
	u32 port;
	u32 handle;
	u32 rkey;
	u32 access;
	u8 *buf;
	u64 len;
};

struct sim_port {
	bool attached;
	struct nicoff_cqe *cq;
	u32 head;
	u32 count;
	u32 cap;
};

struct fw_host {
	struct sim *sim;
	struct fw_card *card;
	struct sim_port *ports;	/* nports of them, from the first attach */
	struct sim_mr *mrs;	/* by handle: next_handle - 1 of them used, */
	u32 mrs_cap;		/*  room for this many */
	u64 clock;		/* the card's time while the firmware runs */
	u64 busy;		/* its processor is busy until then */
	struct fw_switch_link link;
	u64 rx_queued;		/* bytes the switch took for it, not arrived yet */
	u64 timer_at;		/* its next deadline (its heap entry may be earlier) */
	long zallocs;
	u32 node;
	u32 tmr_idx;		/* position in the timer heap, or SIM_NO_TIMER */
	u32 next_handle;
	u8 nports;
	bool dead;
	struct fw_fault_state faults;
};

struct sim {
	struct sim_cfg cfg;
	struct fw_switch sw;
	struct sim_stats stats;
	struct sim_hooks hooks;
	struct sim_mem mem;
	u64 now;
	u64 seq;
	struct sim_ev *heap;
	u32 nev;
	u32 ev_cap;
	struct sim_tmr *theap;
	u32 ntmr;
	u32 tmr_cap;
	struct sim_done *done;
	u32 ndone;
	u32 done_head;
	u32 done_cap;
	bool draining;
	bool huge;
	bool mcast_lost;	/* sim_set_mcast_lost() */
	struct sim_arena arena;
	long pkts;
	u32 rkey_salt;
	struct fw_host *hosts;
};

static inline u64 sim_max(u64 a, u64 b)
{
	return a > b ? a : b;
}

static inline struct fw_pkt *sim_pkt_fw(struct sim_pkt *p)
{
	return (struct fw_pkt *)(p + 1);
}

static inline struct sim_pkt *sim_pkt_of(struct fw_pkt *pkt)
{
	return (struct sim_pkt *)pkt - 1;
}

static inline struct sim_port *sim_port(struct fw_host *h, u32 port)
{
	return port < h->nports && h->ports[port].attached ? &h->ports[port] : NULL;
}

/* arena.c */
void sim_oom(void);
void *sim_xcalloc(size_t n, size_t size);
void sim_huge(const struct sim *s, void *p, size_t len);
void *sim_grow(struct sim *s, void *a, u32 *cap, size_t size);
void sim_arena_init(struct sim *s);
void sim_arena_fini(struct sim *s);
void *sim_alloc(struct sim *s, size_t n, u32 *bytes);
u32 sim_block_bytes(const struct sim *s, void *p);
void sim_release(struct sim *s, void *p);

/* events.c */
void sim_ev_push(struct sim *s, u64 time, struct sim_pkt *p);
struct sim_ev sim_ev_pop(struct sim *s);
void sim_tmr_set(struct sim *s, struct fw_host *h, u64 at);
void sim_tmr_pop(struct sim *s);
void sim_tmr_clean(struct sim *s);

/* fabric.c */
extern const struct fw_switch_ops sim_switch_ops;
void sim_arrive(struct sim *s, const struct sim_ev *ev);

/* regions.c */
void sim_mrs_drop(struct sim *s, struct fw_host *h, u32 port, bool all);

/* completions.c */
void sim_drain(struct sim *s);

/* sim.c */
void sim_enter(struct sim *s, struct fw_host *h, u64 t);
void sim_kick(struct sim *s, struct fw_host *h);

#endif
