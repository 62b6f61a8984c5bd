/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The card's timers: one binary min-heap of every armed deadline, whatever
 * owns it (a peer's connection, its atomics, a process group).  The owner
 * embeds a struct fw_timer and registers it once, which reserves its room
 * in the heap: arming, re-arming and cancelling then never allocate and
 * cost O(log n) in the timers armed, so a card of a million-node fabric
 * never walks what it owns to find the next deadline.
 */
#ifndef NICOFF_FW_TIMER_H
#define NICOFF_FW_TIMER_H

#include "fw_util.h"

struct fw_host;
struct fw_card;
struct fw_timer;

/* Runs a due timer: it must re-arm it (later), cancel it, or delete it. */
typedef void (*fw_timer_fn)(struct fw_card *card, struct fw_timer *t, u64 now);

/*
 * Timers due at the same time run in class order, the order in which the
 * card ran its separate timer lists before they were one heap.
 */
enum fw_timer_class {
	FW_TIMER_PEER,		/* a peer's connection (transport.c, msg.c) */
	FW_TIMER_ATOMIC,	/* the atomics with a peer (atomic.c) */
	FW_TIMER_GROUP,		/* a process group (barrier.c) */
	FW_TIMER_PING,		/* a ping waiting for its answer (ping.c) */
	FW_TIMER_BCAST,		/* a group's broadcasts (bcast.c) */
	FW_TIMER_NCLASS
};

/* 16 bytes in every peer: a class, not a function, says who runs it. */
struct fw_timer {
	u64 deadline;		/* FW_NEVER while not armed */
	u32 heap_idx;		/* in heap->v, or FW_U32_MAX while not armed */
	u8 cls;			/* enum fw_timer_class */
};

FW_STATIC_ASSERT(sizeof(struct fw_timer) == 16, "fw_timer must stay 16 bytes");

struct fw_timer_heap {
	struct fw_timer **v;	/* armed timers, earliest first */
	u32 n;			/* armed */
	u32 cap;		/* room in v */
	u32 owners;		/* timers registered: n never exceeds it */
	fw_timer_fn fire[FW_TIMER_NCLASS];	/* what runs each class */
};

/*
 * Register @t, not armed, of class @cls, whose timers @fire runs;
 * -ENOMEM if the heap cannot grow to hold it too.
 */
int fw_timer_add(struct fw_host *host, struct fw_timer_heap *h, struct fw_timer *t,
		 fw_timer_fn fire, u8 cls);
/*
 * A zeroed owner of @size bytes whose timer, @off bytes in, is registered
 * as fw_timer_add() does; NULL if either the owner or the room cannot be
 * had.  fw_timer_del() and fwos_free() undo it.
 */
void *fw_timer_owner_new(struct fw_host *host, struct fw_timer_heap *h, size_t size,
			 size_t off, fw_timer_fn fire, u8 cls);
/* Cancel @t and give its room back: its owner is going. */
void fw_timer_del(struct fw_timer_heap *h, struct fw_timer *t);
/* Arm @t for @deadline, earlier or later than before; FW_NEVER cancels it. */
void fw_timer_set(struct fw_timer_heap *h, struct fw_timer *t, u64 deadline);
/* The earliest armed timer, or NULL. */
struct fw_timer *fw_timer_first(const struct fw_timer_heap *h);
/* Run the timers due by @now; the earliest deadline left, FW_NEVER if none. */
u64 fw_timer_run(struct fw_card *card, struct fw_timer_heap *h, u64 now);
/* Free the heap itself (every owner deleted its timer, or is gone). */
void fw_timer_heap_free(struct fw_host *host, struct fw_timer_heap *h);

#endif
