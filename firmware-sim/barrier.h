/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The card's collective protocol (seed 000, sections 3 and 6): process
 * groups and their barriers.  Shared by barrier.c (groups, the protocol)
 * and barrier_alg.c (what each algorithm sends and waits for).
 */
#ifndef NICOFF_FW_BARRIER_H
#define NICOFF_FW_BARRIER_H

#include "card.h"

/* Algorithms a group can run: enum nicoff_barrier_alg minus AUTO. */
#define FW_BAR_NALG		NICOFF_BARRIER_MAX

/* Default tree degree and combining fan-in (seed 003 finds 4 best). */
#define FW_BAR_TREE_DEGREE	4u
#define FW_BAR_COMBINING_FANIN	4u
#define FW_BAR_MAX_PARAM	1024u

/* One message an algorithm sends, or waits for, in one of its steps. */
struct fw_bmsg {
	u32 rank;
	u32 step;
};

/*
 * What one member does in one barrier with one algorithm: a sequence of
 * steps; entering a step sends its messages, and the step ends when every
 * message it waits for has arrived.  A member gets at most one message
 * from a given member per barrier and sends at most one to it, so a
 * message is named by its sender's rank (and the barrier's epoch).
 */
struct fw_bsched {
	u32 alg;		/* enum nicoff_barrier_alg */
	u32 param;		/* tree degree or combining fan-in, else 0 */
	u32 nsteps;
	u32 nsend;
	u32 nrecv;
	struct fw_bmsg *send;	/* in the order they go: by step */
	struct fw_bmsg *recv;	/* sorted by rank: recv[i] is bit i of the vector */
	u32 *need;		/* messages each step waits for */
};

/*
 * Build the schedule of @rank in a group of @size with @alg and @param.
 * NULL when memory runs out.
 */
struct fw_bsched *fw_bsched_build(struct fw_card *card, u32 alg, u32 param, u32 rank, u32 size);
void fw_bsched_free(struct fw_card *card, struct fw_bsched *s);
/* The index in s->recv of the message from @rank, or -1. */
int fw_bsched_recv_slot(const struct fw_bsched *s, u32 rank);
/*
 * Where @rank stands among the @n entries at @v, @size bytes each and sorted
 * by the u32 rank at @off in each: a group's peers, a schedule's senders.
 * -1 if it is not there.
 */
int fw_rank_search(const void *v, u32 n, size_t size, size_t off, u32 rank);
/* The send to @rank, or NULL. */
const struct fw_bmsg *fw_bsched_send_to(const struct fw_bsched *s, u32 rank);
/* Sort in increasing order. */
void fw_sort_u64(u64 *a, u32 n);

/* Auto: timed barriers per block of fw_bar_trial_ns(). */
#define FW_BAR_TRIAL_BLOCK	4u
/* Auto with host trials: by how much (%) they must beat the cards' pick to overrule it. */
#define FW_BAR_HOST_MARGIN_PCT	10u
/*
 * Auto: a candidate's time per barrier from the intervals @ns[0..n) between
 * its timed barriers, in order (@ns is overwritten): the median of the
 * means of consecutive blocks of FW_BAR_TRIAL_BLOCK (one block if fewer).
 * Blocks, because the intervals one member sees can be uneven, long and
 * short, so that their median says little of the rate (barrier.md, Auto);
 * a block's mean is the rate.  Their median, so that a stall of the host
 * in one block does not decide.
 */
u64 fw_bar_trial_ns(u64 *ns, u32 n);

#endif
