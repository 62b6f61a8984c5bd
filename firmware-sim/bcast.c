// SPDX-License-Identifier: GPL-2.0
/*
 * Broadcast in process groups, run by the cards: seed 002's design (LA-MPI
 * over Quadrics hardware broadcast) with the card doing the host's part.
 *
 * - Numbering.  Every member posts a group's broadcasts in the same order
 *   (MPI's rule), so the n-th BCAST of every member is broadcast n of the
 *   group, whoever its root.  Packets name it; nothing else is agreed.
 * - The fabric's multicast.  The switch replicates one packet to a range
 *   of contiguous cards (fwos_send_range()).  The root sends each fragment
 *   once per run of consecutive member cards, one run after the other
 *   (seed 002 4.2), and a copy to each member port on its own card.  A card
 *   hands a multicast copy to every member port it has in the group.
 * - Channels.  Broadcasts are taken in rounds of at most the group's
 *   channel count; broadcast k of a round travels in channel k - (the
 *   round's first), held in card memory on every member until the round
 *   ends (4.1, 4.3).  Data up to NICOFF_BCAST_EAGER_MAX bytes is copied
 *   into the root's channel and its command completes at once; a larger
 *   broadcast goes straight into the receivers' posted buffers (dropped
 *   where none is posted yet: the receiver asks for it again), ends its
 *   round, and its root's command completes only when the round does.
 * - Delayed synchronisation.  Receivers acknowledge nothing per broadcast.
 *   When a member has taken a round's last broadcast and holds all of the
 *   round, it reports up a tree of degree 4 rooted at rank 0, once every
 *   child has; rank 0 then sends the verdict to all (multicast), and the
 *   round's channels are free again (4.3, Fig. 4).  A packet of the next
 *   round from a member that had the verdict stands for a lost verdict.
 * - Reliability.  Every packet has a CRC (over the header only for groups
 *   created with NICOFF_BCAST_F_NOCRC: the cost seed 002 Fig. 8 measures).
 *   A receiver that waits too long for a broadcast sends its root a NACK
 *   naming up to 64 missing fragments, and the root sends those to it
 *   alone.  A member that still lacks data of a round it must report
 *   reports a NACK instead; rank 0 then tells all, and every root sends
 *   again what it sent in the round's channels (receivers drop what they
 *   hold): seed 002's retransmission since the last synchronisation.
 *   Whoever waits on a member (a root, a child, rank 0) polls it, less
 *   often while it is unanswered or "not yet"; a live one answers, a
 *   silent one is dead after dead_ns and max_retries polls unanswered,
 *   and the group fails.
 *   A large root sends a burst only while the switch has room for it at
 *   every card it goes to (fwos_fabric_room()), so that those answers
 *   never queue behind a whole broadcast.
 * - Fail-over.  With the card's bcast_hw off, the group's
 *   NICOFF_BCAST_F_P2P, after a broadcast needed FW_BC_HW_TRIES
 *   retransmissions of its round, or after FW_BC_HW_TRIES rounds in a
 *   row whose data reached this member only by repairs (not one
 *   multicast copy came: the repairs hide the loss from the verdicts),
 *   data and verdicts go down a binomial
 *   tree of unicast packets instead (each receiver forwards what it gets
 *   to its children), the same recovery beneath.  Broadcasts in flight
 *   complete either way: resends are unicast.
 *
 * A failed group (a member dead, a length that differs, a region gone)
 * completes what is posted with -ECONNRESET (the member that found it with
 * its own error) and tells every member.  A group is destroyed once every
 * member's broadcasts are done (the library holds a barrier first); a
 * destroyed one lingers dead_ns to finish a synchronisation, serving no
 * data.
 */
#include "bcast.h"
#include "barrier.h"
#include "grouptab.h"

#define FW_BC_TREE_DEGREE	4u	/* of the synchronisation tree */
#define FW_BC_NACK_WINDOW	64u	/* fragments one NACK asks for */
#define FW_BC_BURST		32u	/* fragments of a large broadcast per pass */
#define FW_BC_PACE_DIV		64u	/* a held burst tries again after rto_ns / this */
#define FW_BC_HW_TRIES		8u	/* retransmission verdicts in a round before the tree */
#define FW_BC_ANY		0xffffu	/* body.to of a multicast */
#define FW_BC_ROUND_MASK	0xffffffu

enum fw_bc_sync {
	FW_BC_OPEN,		/* the round takes broadcasts */
	FW_BC_WAIT,		/* closed: waits for its data and the children */
	FW_BC_SENT,		/* reported to the parent: waits for the verdict */
};

enum fw_bc_opstate {
	FW_BC_QUEUED,		/* posted, its round not open yet */
	FW_BC_TAKEN,		/* in the current round */
	FW_BC_FINISHED,		/* status known; completes in posting order */
};

/* A posted BCAST. */
/*
 * Waiting on a member: its last sign of life, and the questions asked
 * since.  It is dead only when silent for the dead time and asked as
 * often as the transport retries: both, so that a card its host did not
 * run for a while (a VM not scheduled) asks again before it gives up.
 */
struct fw_bc_wait {
	u64 heard;
	u32 asked;
};

struct fw_bop {
	struct fw_list node;	/* g->ops, in posting order */
	u64 tag;
	u64 seq;		/* its broadcast, once taken */
	u64 off;
	u64 len;
	u32 mr;
	u32 root;
	u32 nfrag;
	u32 got;		/* large receiver: fragments written */
	u32 sent;		/* large root: fragments sent once */
	u64 sent_at;		/* large root: when the last one was */
	u32 ask;		/* large receiver: first fragment of its last NACK */
	u8 state;		/* enum fw_bc_opstate */
	bool large;
	bool root_op;
	bool root_late;		/* receiver: its root said it has not posted it yet */
	bool posted;		/* its completion went to the port */
	s32 status;
	u64 nack_at;		/* receiver: when it asks its root again */
	u64 wait;		/* receiver: its interval, longer while the root is late */
	struct fw_bc_wait root_w;	/* receiver: on its root */
	u64 *bits;		/* large receiver: fragments written */
};

/* One channel: a broadcast of the round, in card memory if eager. */
struct fw_bchan {
	u64 seq;		/* 0: empty */
	u64 total;
	u8 *buf;
	u64 bits[NICOFF_BCAST_EAGER_MAX / FW_MTU_MIN / 64];
	u32 nfrag;
	u32 got;
	bool full;
	bool mine;		/* this member is its root */
};

struct fw_bgrp {
	struct fw_gent e;	/* port, id, zombie: in the card's table */
	struct fw_timer timer;
	u32 rank;
	u32 size;
	u32 nchan;
	u32 flags;		/* NICOFF_BCAST_F_* */
	bool ready;		/* created on every member: broadcasts may be taken */
	bool hw_failed;		/* fell back to the tree for good */
	u32 cookie;		/* in every packet: a hash of id, members, channels, flags */
	u64 resend_at;		/* the last retransmission of the round's channels */
	s32 err;		/* failed: what posted broadcasts complete with */
	u64 bury_at;		/* zombie: freed then */
	struct nicoff_member *members;
	u32 *runs;		/* first and last card of each run of member cards */
	u32 nruns;
	u32 *local;		/* ranks of the other member ports on this card */
	u32 nlocal;

	struct fw_list ops;
	u64 next_seq;		/* of the next broadcast taken */
	u64 round;
	u64 rstart;		/* the round's first broadcast */
	u32 rcount;		/* broadcasts taken in the round */
	u32 retries;		/* retransmission rounds asked in this round */
	u32 hw_misses;		/* rounds in a row served by repairs, no multicast copy */
	bool rx_mcast;		/* a multicast copy came this round */
	bool rx_repaired;	/* data of the round came as a unicast repair */
	u8 sync;		/* enum fw_bc_sync */
	bool closed;		/* the round has its last broadcast */
	bool nacked;		/* reported a NACK this round */
	u32 nchild;
	u32 child_ok;		/* bit i: child i reported this round */
	struct fw_bc_wait child_w[FW_BC_TREE_DEGREE];
	u64 poll_at;		/* parent waiting: polls children, or rank 0 repairs */
	u64 poll_ivl;		/* WAIT: longer while a child does not answer */
	u64 query_at;		/* SENT: asks rank 0 for the verdict */
	u64 query_ivl;		/* SENT: longer while rank 0 is not there yet */
	struct fw_bc_wait mgr_w;	/* SENT: on rank 0's verdict */
	u64 wait_since;		/* closed: since when */
	u64 nack_up_at;		/* a NACK went up (rank 0: out) then */
	u64 send_at;		/* a large root has fragments to send */
	struct fw_bchan *chans;
	struct fw_pkt_hdr tmpl;
};

struct fw_bccard {
	struct fw_gtab groups;
};

static struct fw_bgrp *fw_bc_of(struct fw_gent *e)
{
	return e ? fw_container_of(e, struct fw_bgrp, e) : NULL;
}

static struct fw_bgrp *fw_bc_find(struct fw_card *card, u32 port, u32 id, bool zombies)
{
	return card->bcast ? fw_bc_of(fw_gtab_find(&card->bcast->groups, port, id, zombies)) :
			     NULL;
}

static u32 fw_bc_nfrag(const struct fw_card *card, u64 len)
{
	return len ? (u32)((len + card->cfg.mtu - 1) / card->cfg.mtu) : 1;
}

/*
 * Time from @t to @now, 0 if @t is later: a host's timer may run with a
 * time taken before the fwos_now() a packet's arrival recorded.
 */
static u64 fw_bc_since(u64 now, u64 t)
{
	return now > t ? now - t : 0;
}

static u64 fw_bc_ivl(const struct fw_card *card)
{
	return card->cfg.rto_ns;
}

static void fw_bc_hear(struct fw_bc_wait *w, u64 now)
{
	w->heard = now;
	w->asked = 0;
}

/*
 * The interval before asking @w again: longer once a question went
 * unanswered (any sign of life clears w->asked), so that members of a
 * slow or lost peer do not all ask it every rto.
 */
static u64 fw_bc_again(const struct fw_card *card, const struct fw_bc_wait *w, u64 ivl)
{
	return w->asked ? fw_backoff(&card->cfg, ivl) : ivl;
}

static bool fw_bc_dead(const struct fw_card *card, const struct fw_bc_wait *w, u64 now)
{
	return fw_bc_since(now, w->heard) > card->dead_ns && w->asked >= card->cfg.max_retries;
}

static void fw_bc_chan_clear(struct fw_card *card, struct fw_bchan *ch)
{
	fwos_free(card->host, ch->buf);
	memset(ch, 0, sizeof(*ch));
}

static void fw_bop_free(struct fw_card *card, struct fw_bop *op)
{
	fw_list_del(&op->node);
	fwos_free(card->host, op->bits);
	fwos_free(card->host, op);
}

static void fw_bc_release_mem(struct fw_card *card, struct fw_bgrp *g)
{
	u32 i;

	fw_timer_del(&card->timers, &g->timer);
	while (!fw_list_empty(&g->ops))
		fw_bop_free(card, fw_list_entry(g->ops.next, struct fw_bop, node));
	for (i = 0; g->chans && i < g->nchan; i++)
		fw_bc_chan_clear(card, &g->chans[i]);
	fwos_free(card->host, g->chans);
	fwos_free(card->host, g->members);
	fwos_free(card->host, g->runs);
	fwos_free(card->host, g->local);
	fwos_free(card->host, g);
}

static void fw_bc_unhash_free(struct fw_card *card, struct fw_bgrp *g)
{
	fw_gtab_del(&card->bcast->groups, &g->e);
	fw_bc_release_mem(card, g);
}

/* ------------------------------------------------------------ sending -- */

static struct fw_pkt *fw_bc_pkt(struct fw_card *card, struct fw_bgrp *g, u8 type, u32 len)
{
	struct fw_pkt *pkt = fwos_pkt_alloc(card->host, len);

	if (!pkt)
		return NULL;
	pkt->hdr = g->tmpl;
	pkt->hdr.type = type;
	pkt->hdr.len = len;
	return pkt;
}

static struct fw_pkt *fw_bc_copy(struct fw_card *card, const struct fw_pkt *pkt)
{
	struct fw_pkt *c = fwos_pkt_alloc(card->host, pkt->hdr.len);

	if (c)
		memcpy(c, pkt, fw_pkt_size(pkt));
	return c;
}

static struct fw_bcast_body *fw_bc_body(struct fw_pkt *pkt)
{
	return (struct fw_bcast_body *)&pkt->hdr.msg_id;
}

/* To one member (the packet is the fabric's after). */
static void fw_bc_unicast(struct fw_card *card, struct fw_bgrp *g, struct fw_pkt *pkt, u32 to)
{
	pkt->hdr.dst_node = g->members[to].card;
	pkt->hdr.dst_port = g->members[to].port;
	fw_bc_body(pkt)->to = to;
	fw_pkt_send(card, pkt);
}

static bool fw_bc_use_hw(const struct fw_card *card, const struct fw_bgrp *g)
{
	return card->cfg.bcast_hw && !(g->flags & NICOFF_BCAST_F_P2P) && !g->hw_failed;
}

/* The binomial tree of @root: the children of this member, in rank order. */
static u32 fw_bc_tree_children(const struct fw_bgrp *g, u32 root, u32 *out)
{
	u32 rel = (g->rank + g->size - root) % g->size, mask = 1, n = 0;

	while (mask < g->size && !(rel & mask))
		mask <<= 1;
	for (mask >>= 1; mask; mask >>= 1)
		if (rel + mask < g->size)
			out[n++] = (rel + mask + root) % g->size;
	return n;
}

/* This member's parent in the binomial tree of @root (itself if the root). */
static u32 fw_bc_tree_parent(const struct fw_bgrp *g, u32 root)
{
	u32 rel = (g->rank + g->size - root) % g->size;

	return ((rel & (rel - 1)) + root) % g->size;
}

static void fw_bc_fall_back(struct fw_card *card, struct fw_bgrp *g)
{
	if (g->hw_failed)
		return;
	g->hw_failed = true;
	card->stats.bcast_failovers++;
}

/*
 * To every member but this one: by the fabric's multicast (@hw), or down
 * the binomial tree of @root (this member being root or forwarder).
 * Takes @pkt.
 */
static void fw_bc_spread(struct fw_card *card, struct fw_bgrp *g, struct fw_pkt *pkt, u32 root,
			 bool hw)
{
	u32 kids[32], n, i;

	if (g->size == 1) {
		fwos_pkt_free(card->host, pkt);
		return;
	}
	/* A forwarded packet goes on as this member's. */
	pkt->hdr.src_node = card->cfg.node;
	pkt->hdr.src_port = g->e.port;
	fw_bc_body(pkt)->from = (u16)g->rank;
	if (hw) {
		for (i = 0; i < g->nlocal; i++) {
			struct fw_pkt *c = fw_bc_copy(card, pkt);

			if (c)
				fw_bc_unicast(card, g, c, g->local[i]);
		}
		pkt->hdr.flags &= ~FW_PKT_F_TREE;
		pkt->hdr.dst_node = FW_NODE_ANY;
		pkt->hdr.dst_port = 0;
		fw_bc_body(pkt)->to = FW_BC_ANY;
		fw_pkt_seal(pkt);
		for (i = 0; i < g->nruns; i++) {
			struct fw_pkt *c = pkt;
			int ret;

			if (g->runs[2 * i] == g->runs[2 * i + 1] &&
			    g->runs[2 * i] == card->cfg.node)
				continue;
			if (i + 1 < g->nruns) {
				c = fw_bc_copy(card, pkt);
				if (!c)
					continue;
			}
			card->stats.tx_pkts++;
			card->stats.tx_bytes += fw_pkt_size(c);
			card->stats.bcast_mcasts++;
			ret = fwos_send_range(card->host, c, g->runs[2 * i], g->runs[2 * i + 1]);
			if (ret < 0)
				fw_bc_fall_back(card, g);
			if (c == pkt)
				return;
		}
		fwos_pkt_free(card->host, pkt);
		return;
	}
	pkt->hdr.flags |= FW_PKT_F_TREE;
	n = fw_bc_tree_children(g, root, kids);
	for (i = 0; i < n; i++) {
		struct fw_pkt *c = i + 1 < n ? fw_bc_copy(card, pkt) : pkt;

		if (c)
			fw_bc_unicast(card, g, c, kids[i]);
	}
	if (!n)
		fwos_pkt_free(card->host, pkt);
}

/* A header-only packet to member @to, or to all when @to is FW_BC_ANY. */
static void fw_bc_ctrl(struct fw_card *card, struct fw_bgrp *g, u8 type, u32 to, u64 seq,
		       s32 err, u8 flags)
{
	struct fw_pkt *pkt = fw_bc_pkt(card, g, type, 0);

	if (!pkt)
		return;		/* as good as lost: whoever waits asks again */
	pkt->hdr.flags = flags;
	pkt->hdr.err = err;
	fw_bc_body(pkt)->seq = seq;
	if (type == FW_PKT_BCAST_NACK || (flags & FW_PKT_F_ACKREQ))
		card->stats.bcast_nacks++;
	if (to != FW_BC_ANY) {
		fw_bc_unicast(card, g, pkt, to);
	} else if (fw_bc_use_hw(card, g) || type == FW_PKT_BCAST_VERDICT) {
		/* Verdicts come from rank 0: its tree reaches all. */
		fw_bc_spread(card, g, pkt, 0, fw_bc_use_hw(card, g));
	} else {
		u32 i;

		for (i = 0; i < g->size; i++) {
			struct fw_pkt *c = i == g->rank ? NULL : fw_bc_copy(card, pkt);

			if (c)
				fw_bc_unicast(card, g, c, i);
		}
		fwos_pkt_free(card->host, pkt);
	}
}

/*
 * Fragment @i of broadcast @seq (channel @chan), from the channel's copy
 * or the root's region; NULL if it cannot be had now.
 */
static struct fw_pkt *fw_bc_frag(struct fw_card *card, struct fw_bgrp *g, u64 seq, u32 chan,
				 u64 total, u32 i, const struct fw_bop *op)
{
	u64 off = (u64)i * card->cfg.mtu;
	u32 len = (u32)fw_min_u64(card->cfg.mtu, total - off);
	struct fw_pkt *pkt = fw_bc_pkt(card, g, FW_PKT_BCAST, len);
	struct fw_bcast_body *b;

	if (!pkt)
		return NULL;
	if (op) {
		if (fwos_mem_read(card->host, g->e.port, op->mr, 0, op->off + off, pkt->payload,
				  len)) {
			fwos_pkt_free(card->host, pkt);
			return NULL;
		}
	} else if (len) {
		memcpy(pkt->payload, g->chans[chan].buf + off, len);
	}
	if (g->flags & NICOFF_BCAST_F_NOCRC)
		pkt->hdr.flags |= FW_PKT_F_NOCRC;
	pkt->hdr.rkey = chan | (u32)(g->round & FW_BC_ROUND_MASK) << 8;
	b = fw_bc_body(pkt);
	b->seq = seq;
	b->offset = off;
	b->total = total;
	b->root = g->rank;
	card->stats.bcast_pkts++;
	return pkt;
}

/* The op of broadcast @seq, taken; NULL if none. */
static struct fw_bop *fw_bc_op_of(struct fw_bgrp *g, u64 seq)
{
	struct fw_list *n;

	for (n = g->ops.next; n != &g->ops; n = n->next) {
		struct fw_bop *op = fw_list_entry(n, struct fw_bop, node);

		if (op->state != FW_BC_QUEUED && op->seq == seq)
			return op;
		if (op->state == FW_BC_QUEUED || op->seq > seq)
			break;
	}
	return NULL;
}

/* Every fragment of the round's broadcast in channel @c, which this member rooted. */
static void fw_bc_send_eager(struct fw_card *card, struct fw_bgrp *g, u32 c)
{
	struct fw_bchan *ch = &g->chans[c];
	u32 i;

	for (i = 0; i < ch->nfrag; i++) {
		struct fw_pkt *pkt = fw_bc_frag(card, g, ch->seq, c, ch->total, i, NULL);

		if (pkt)
			fw_bc_spread(card, g, pkt, g->rank, fw_bc_use_hw(card, g));
	}
}

/* ----------------------------------------------------------- progress -- */

static void fw_bc_rearm(struct fw_card *card, struct fw_bgrp *g);
static void fw_bc_resend_round(struct fw_card *card, struct fw_bgrp *g);
static void fw_bc_progress(struct fw_card *card, struct fw_bgrp *g, u64 now);

static void fw_bc_finish(struct fw_bop *op, s32 status)
{
	if (op->state == FW_BC_FINISHED)
		return;
	op->state = FW_BC_FINISHED;
	op->status = status;
}

/* Post the completions that are due, in posting order. */
static void fw_bc_flush(struct fw_card *card, struct fw_bgrp *g)
{
	while (!fw_list_empty(&g->ops)) {
		struct fw_bop *op = fw_list_entry(g->ops.next, struct fw_bop, node);

		if (op->state != FW_BC_FINISHED)
			break;
		/* Taken ops stay until their round ends: NACKs name them. */
		if (op->seq >= g->rstart && op->seq && !g->err && !op->status)
			break;
		if (!g->e.zombie && !op->posted)
			fw_complete(card, g->e.port, op->tag, NICOFF_OP_BCAST, op->status,
				    op->status ? 0 : op->len);
		fw_bop_free(card, op);
	}
}

/* Post the completions of a round's ops that finished (they stay for NACKs). */
static void fw_bc_complete_ready(struct fw_card *card, struct fw_bgrp *g)
{
	struct fw_list *n;

	for (n = g->ops.next; n != &g->ops; n = n->next) {
		struct fw_bop *op = fw_list_entry(n, struct fw_bop, node);

		if (op->state != FW_BC_FINISHED)
			break;
		if (op->posted)
			continue;
		if (!g->e.zombie)
			fw_complete(card, g->e.port, op->tag, NICOFF_OP_BCAST, op->status,
				    op->status ? 0 : op->len);
		op->posted = true;
	}
}

/*
 * The group fails: everything posted completes with @err (what the member
 * that found the cause got is set on its op already), every member is told
 * unless @quiet (it was told by one).
 */
static void fw_bc_fail(struct fw_card *card, struct fw_bgrp *g, s32 err, bool quiet)
{
	struct fw_list *n;

	if (g->err)
		return;
	g->err = err;
	card->stats.bcast_failures++;
	for (n = g->ops.next; n != &g->ops; n = n->next)
		fw_bc_finish(fw_list_entry(n, struct fw_bop, node), err);
	fw_bc_complete_ready(card, g);
	fw_bc_flush(card, g);
	if (!quiet && g->members)
		fw_bc_ctrl(card, g, FW_PKT_BCAST_STATE, FW_BC_ANY, 0, -ECONNRESET, 0);
	g->poll_at = FW_NEVER;
	g->query_at = FW_NEVER;
	g->send_at = FW_NEVER;
	fw_bc_rearm(card, g);
}

/*
 * At a round's end: a member that needed repairs for data no multicast
 * copy brought, round after round, stops trusting the multicast.  Only
 * while it uses the multicast itself: with bcast_hw off the tree's data
 * is no sign of a fault.
 */
static void fw_bc_judge_hw(struct fw_card *card, struct fw_bgrp *g)
{
	if (g->rx_mcast)
		g->hw_misses = 0;
	else if (g->rx_repaired && fw_bc_use_hw(card, g) && ++g->hw_misses >= FW_BC_HW_TRIES)
		fw_bc_fall_back(card, g);
	g->rx_mcast = false;
	g->rx_repaired = false;
}

/*
 * The round ends: channels free, large roots done, the next round opens
 * (fw_bc_progress() takes what waits for it: never from here, so that a
 * long queue of rounds that end at once is a loop, not a recursion).
 */
static void fw_bc_release(struct fw_card *card, struct fw_bgrp *g)
{
	struct fw_list *n;
	u32 i;

	card->stats.bcast_syncs++;
	fw_bc_judge_hw(card, g);
	for (n = g->ops.next; n != &g->ops; n = n->next) {
		struct fw_bop *op = fw_list_entry(n, struct fw_bop, node);

		if (op->state == FW_BC_QUEUED)
			break;
		fw_bc_finish(op, 0);
	}
	g->rstart += g->rcount;
	g->round++;
	g->rcount = 0;
	g->retries = 0;
	g->closed = false;
	g->nacked = false;
	g->sync = FW_BC_OPEN;
	g->child_ok = 0;
	g->poll_at = FW_NEVER;
	g->query_at = FW_NEVER;
	for (i = 0; i < g->nchan; i++)
		fw_bc_chan_clear(card, &g->chans[i]);
}

/*
 * Whether this member holds its whole round (a large root: sent it all
 * once); if not, *@lost says whether what it lacks was sent by its root
 * (not just posted late there).
 */
static bool fw_bc_round_held(struct fw_bgrp *g, bool *lost)
{
	struct fw_list *n;
	bool held = true;

	*lost = false;
	for (n = g->ops.next; n != &g->ops; n = n->next) {
		struct fw_bop *op = fw_list_entry(n, struct fw_bop, node);

		if (op->state == FW_BC_QUEUED)
			break;
		if (op->seq < g->rstart)
			continue;
		if (op->root_op ? op->sent < op->nfrag : op->state != FW_BC_FINISHED) {
			held = false;
			*lost |= !op->root_op && !op->root_late;
		}
	}
	return held;
}

static u32 fw_bc_all_children(const struct fw_bgrp *g)
{
	return (u32)((1ull << g->nchild) - 1);
}

/* Rank 0 tells all the verdict of the round: 0 (release) or -EAGAIN (send again). */
static void fw_bc_verdict(struct fw_card *card, struct fw_bgrp *g, s32 verdict)
{
	fw_bc_ctrl(card, g, FW_PKT_BCAST_VERDICT, FW_BC_ANY, g->round, verdict, 0);
	if (!verdict)
		fw_bc_release(card, g);
	else
		fw_bc_resend_round(card, g);
}

static void fw_bc_resend_round(struct fw_card *card, struct fw_bgrp *g)
{
	u32 c;

	if (++g->retries >= FW_BC_HW_TRIES)
		fw_bc_fall_back(card, g);
	for (c = 0; c < g->rcount && c < g->nchan; c++) {
		if (g->chans[c].mine && g->chans[c].buf) {
			card->stats.bcast_resends += g->chans[c].nfrag;
			fw_bc_send_eager(card, g, c);
		}
	}
}

/*
 * A NACK of the round goes up the tree (rank 0: out to all), at most once
 * an interval however many members report one: the roots' retransmission
 * serves them all.
 */
static void fw_bc_nack_up(struct fw_card *card, struct fw_bgrp *g, u64 now)
{
	if (g->nack_up_at && fw_bc_since(now, g->nack_up_at) < fw_bc_ivl(card))
		return;
	g->nack_up_at = now;
	if (g->rank)
		fw_bc_ctrl(card, g, FW_PKT_BCAST_SYNC, (g->rank - 1) / FW_BC_TREE_DEGREE, g->round,
			   -EAGAIN, 0);
	else
		fw_bc_verdict(card, g, -EAGAIN);
}

/*
 * The round's synchronisation moves on a step: once closed and held here
 * and by every child, report up (rank 0: decide).  A member that still
 * lacks data two intervals after closing reports a NACK.  True if the
 * round ended.
 */
static bool fw_bc_sync_step(struct fw_card *card, struct fw_bgrp *g, u64 now)
{
	bool held, lost;
	u32 i;

	if (g->err || !g->closed || g->sync == FW_BC_SENT)
		return false;
	if (g->sync == FW_BC_OPEN) {
		g->sync = FW_BC_WAIT;
		g->wait_since = now;
		g->poll_ivl = fw_bc_ivl(card);
		g->poll_at = fw_add_sat(now, g->poll_ivl);
		for (i = 0; i < g->nchild; i++)
			fw_bc_hear(&g->child_w[i], now);
	}
	held = fw_bc_round_held(g, &lost);
	if (!held) {
		if (lost && !g->nacked && fw_bc_since(now, g->wait_since) >= 2 * fw_bc_ivl(card)) {
			g->nacked = true;
			fw_bc_nack_up(card, g, now);
		}
		return false;
	}
	if (g->child_ok != fw_bc_all_children(g))
		return false;
	if (!g->rank) {
		fw_bc_verdict(card, g, 0);
		return true;
	}
	fw_bc_ctrl(card, g, FW_PKT_BCAST_SYNC, (g->rank - 1) / FW_BC_TREE_DEGREE, g->round, 0, 0);
	g->sync = FW_BC_SENT;
	g->poll_at = FW_NEVER;
	fw_bc_hear(&g->mgr_w, now);
	g->query_ivl = fw_bc_ivl(card);
	g->query_at = fw_add_sat(now, g->query_ivl);
	return false;
}

/* A receiver has broadcast @op's bytes in its channel: deliver them. */
static void fw_bc_deliver(struct fw_card *card, struct fw_bgrp *g, struct fw_bop *op,
			  struct fw_bchan *ch)
{
	int ret;

	if (ch->total != op->len) {
		fw_bc_finish(op, -EMSGSIZE);
		fw_bc_fail(card, g, -ECONNRESET, false);
		return;
	}
	ret = fwos_mem_write(card->host, g->e.port, op->mr, NICOFF_ACCESS_LOCAL_WRITE, op->off,
			     ch->buf, (u32)op->len);
	if (ret) {
		fw_bc_finish(op, ret);
		fw_bc_fail(card, g, -ECONNRESET, false);
		return;
	}
	fw_bc_finish(op, 0);
}

/* Take posted broadcasts into the round while it is open. */
static void fw_bc_take(struct fw_card *card, struct fw_bgrp *g, u64 now)
{
	struct fw_list *n;

	for (n = g->ops.next; n != &g->ops && g->ready && !g->closed && !g->err; n = n->next) {
		struct fw_bop *op = fw_list_entry(n, struct fw_bop, node);
		u32 c = g->rcount;
		struct fw_bchan *ch = &g->chans[c];

		if (op->state != FW_BC_QUEUED)
			continue;
		op->state = FW_BC_TAKEN;
		op->seq = g->next_seq++;
		g->rcount++;
		op->large = op->len > NICOFF_BCAST_EAGER_MAX;
		op->nfrag = fw_bc_nfrag(card, op->len);
		fw_bc_hear(&op->root_w, now);
		if (op->large || g->rcount == g->nchan)
			g->closed = true;
		if (op->root_op) {
			if (op->large) {
				ch->seq = op->seq;
				ch->total = op->len;
				ch->mine = true;
				g->send_at = now;
				continue;
			}
			fw_bc_chan_clear(card, ch);
			ch->buf = fwos_zalloc(card->host, op->len ? op->len : 1);
			if (!ch->buf) {
				fw_bc_finish(op, -ENOMEM);
				fw_bc_fail(card, g, -ECONNRESET, false);
				break;
			}
			if (op->len && fwos_mem_read(card->host, g->e.port, op->mr, 0, op->off,
						     ch->buf, (u32)op->len)) {
				fw_bc_finish(op, -EFAULT);
				fw_bc_fail(card, g, -ECONNRESET, false);
				break;
			}
			ch->seq = op->seq;
			ch->total = op->len;
			ch->nfrag = op->nfrag;
			ch->got = op->nfrag;
			ch->full = true;
			ch->mine = true;
			op->sent = op->nfrag;
			fw_bc_send_eager(card, g, c);
			fw_bc_finish(op, 0);
			continue;
		}
		op->wait = fw_bc_ivl(card);
		op->nack_at = fw_add_sat(now, op->wait);
		if (op->large && ch->seq == op->seq) {
			/* Eager data for it came already: the root's length is another. */
			fw_bc_finish(op, -EMSGSIZE);
			fw_bc_fail(card, g, -ECONNRESET, false);
			break;
		}
		if (op->large) {
			op->bits = fwos_zalloc(card->host, ((op->nfrag + 63) / 64) * sizeof(u64));
			if (!op->bits) {
				fw_bc_finish(op, -ENOMEM);
				fw_bc_fail(card, g, -ECONNRESET, false);
				break;
			}
		} else if (ch->seq == op->seq && ch->full) {
			fw_bc_deliver(card, g, op, ch);
			if (g->err)
				break;	/* the ops, @op too, may be gone */
		}
	}
}

/* Everything that can move does: rounds taken, synchronised, ended, in a loop. */
static void fw_bc_progress(struct fw_card *card, struct fw_bgrp *g, u64 now)
{
	do
		fw_bc_take(card, g, now);
	while (fw_bc_sync_step(card, g, now));
	fw_bc_complete_ready(card, g);
	fw_bc_flush(card, g);
	fw_bc_rearm(card, g);
}

/*
 * Whether every card a burst of this root's goes to has room for it in the
 * switch (fwos_fabric_room()).  Nothing acknowledges a broadcast's data, so
 * without this a root at full speed would queue a whole broadcast in front
 * of every reply its receivers wait for from each other, longer than the
 * dead time on a slow host.
 */
static bool fw_bc_room(struct fw_card *card, const struct fw_bgrp *g)
{
	u32 kids[32], n, i;

	if (fw_bc_use_hw(card, g)) {
		if (g->nlocal && !fwos_fabric_room(card->host, card->cfg.node, card->cfg.node))
			return false;
		for (i = 0; i < g->nruns; i++)
			if (!fwos_fabric_room(card->host, g->runs[2 * i], g->runs[2 * i + 1]))
				return false;
		return true;
	}
	n = fw_bc_tree_children(g, g->rank, kids);
	for (i = 0; i < n; i++) {
		u32 c = g->members[kids[i]].card;

		if (!fwos_fabric_room(card->host, c, c))
			return false;
	}
	return true;
}

/* A large root sends its broadcast's fragments a burst per pass, when the fabric has room. */
static void fw_bc_send_large(struct fw_card *card, struct fw_bgrp *g, u64 now)
{
	struct fw_list *n;
	bool room = false;
	u32 burst = 0;

	g->send_at = FW_NEVER;
	for (n = g->ops.next; n != &g->ops; n = n->next) {
		struct fw_bop *op = fw_list_entry(n, struct fw_bop, node);

		if (op->state == FW_BC_QUEUED)
			break;
		if (!op->root_op || !op->large || op->sent >= op->nfrag || op->seq < g->rstart)
			continue;
		if (!room && !fw_bc_room(card, g)) {
			card->stats.bcast_paced++;
			g->send_at = fw_add_sat(now, fw_bc_ivl(card) / FW_BC_PACE_DIV + 1);
			break;
		}
		room = true;
		while (op->sent < op->nfrag && burst < FW_BC_BURST) {
			struct fw_pkt *pkt = fw_bc_frag(card, g, op->seq,
							(u32)(op->seq - g->rstart), op->len,
							op->sent, op);

			if (!pkt) {
				fw_bc_finish(op, -EFAULT);
				fw_bc_fail(card, g, -ECONNRESET, false);
				return;
			}
			fw_bc_spread(card, g, pkt, g->rank, fw_bc_use_hw(card, g));
			op->sent++;
			burst++;
		}
		op->sent_at = now;
		if (op->sent < op->nfrag)
			g->send_at = now;
	}
	fw_bc_progress(card, g, now);
}

/* A receiver asks its root for the fragments it lacks, from @op->ask on. */
static void fw_bc_nack(struct fw_card *card, struct fw_bgrp *g, struct fw_bop *op, u64 now)
{
	struct fw_bchan *ch = op->large ? NULL : &g->chans[op->seq - g->rstart];
	const u64 *bits = op->large ? op->bits : ch->bits;
	u32 i, first = 0, nfrag = op->nfrag;
	struct fw_bcast_body *b;
	struct fw_pkt *pkt;
	u64 mask = ~0ull;

	/* The first 64 fragments from the first one missing (all, if none came). */
	if (op->large || ch->seq == op->seq) {
		if (ch)
			nfrag = ch->nfrag;
		for (first = 0; first < nfrag && bits[first / 64] >> (first % 64) & 1; first++)
			;
		for (mask = 0, i = first; i < nfrag && i - first < FW_BC_NACK_WINDOW; i++)
			if (!(bits[i / 64] >> (i % 64) & 1))
				mask |= 1ull << (i - first);
	}
	op->ask = first;
	op->nack_at = fw_add_sat(now, op->wait);
	op->root_w.asked++;
	pkt = fw_bc_pkt(card, g, FW_PKT_BCAST_NACK, 0);
	if (!pkt)
		return;
	b = fw_bc_body(pkt);
	b->seq = op->seq;
	b->offset = first;
	b->total = mask;
	b->root = op->root;
	card->stats.bcast_nacks++;
	fw_bc_unicast(card, g, pkt, op->root);
}

/* ------------------------------------------------------------- timers -- */

static void fw_bc_rearm(struct fw_card *card, struct fw_bgrp *g)
{
	u64 t = FW_NEVER;
	struct fw_list *n;

	if (g->e.zombie)
		t = g->bury_at;
	if (!g->err) {
		for (n = g->ops.next; n != &g->ops; n = n->next) {
			struct fw_bop *op = fw_list_entry(n, struct fw_bop, node);

			if (op->state == FW_BC_QUEUED)
				break;
			if (op->state == FW_BC_TAKEN && !op->root_op)
				t = fw_min_u64(t, op->nack_at);
		}
		t = fw_min_u64(t, g->send_at);
		if (g->sync == FW_BC_WAIT)
			t = fw_min_u64(t, g->poll_at);
		if (g->sync == FW_BC_SENT)
			t = fw_min_u64(t, g->query_at);
	}
	fw_timer_set(&card->timers, &g->timer, t);
}

static void fw_bc_timer(struct fw_card *card, struct fw_timer *t, u64 now)
{
	struct fw_bgrp *g = fw_container_of(t, struct fw_bgrp, timer);
	struct fw_list *n;
	u32 i;

	if (g->e.zombie && now >= g->bury_at) {
		fw_bc_unhash_free(card, g);
		return;
	}
	if (g->err)
		goto out;
	if (g->send_at <= now)
		fw_bc_send_large(card, g, now);
	for (n = g->ops.next; n != &g->ops && !g->err; n = n->next) {
		struct fw_bop *op = fw_list_entry(n, struct fw_bop, node);

		if (op->state == FW_BC_QUEUED)
			break;
		if (op->state != FW_BC_TAKEN || op->root_op || op->nack_at > now)
			continue;
		if (fw_bc_dead(card, &op->root_w, now)) {
			fw_bc_fail(card, g, -ETIMEDOUT, false);
			break;
		}
		op->wait = fw_bc_again(card, &op->root_w, op->wait);
		fw_bc_nack(card, g, op, now);
	}
	if (g->err)
		goto out;
	if (g->sync == FW_BC_WAIT && g->poll_at <= now) {
		u64 next = g->poll_ivl;

		for (i = 0; i < g->nchild; i++) {
			if (g->child_ok & (1u << i))
				continue;
			if (fw_bc_dead(card, &g->child_w[i], now)) {
				fw_bc_fail(card, g, -ETIMEDOUT, false);
				goto out;
			}
			next = fw_max_u64(next, fw_bc_again(card, &g->child_w[i], g->poll_ivl));
			g->child_w[i].asked++;
			fw_bc_ctrl(card, g, FW_PKT_BCAST_SYNC, g->rank * FW_BC_TREE_DEGREE + 1 + i,
				   g->round, 0, FW_PKT_F_ACKREQ);
		}
		g->poll_ivl = next;
		g->poll_at = fw_add_sat(now, next);
		fw_bc_progress(card, g, now);
	}
	if (g->sync == FW_BC_SENT && g->query_at <= now) {
		if (fw_bc_dead(card, &g->mgr_w, now)) {
			fw_bc_fail(card, g, -ETIMEDOUT, false);
			goto out;
		}
		g->query_ivl = fw_bc_again(card, &g->mgr_w, g->query_ivl);
		g->query_at = fw_add_sat(now, g->query_ivl);
		g->mgr_w.asked++;
		fw_bc_ctrl(card, g, FW_PKT_BCAST_VERDICT, 0, g->round, 0, FW_PKT_F_ACKREQ);
	}
out:
	fw_bc_rearm(card, g);
}

/* ----------------------------------------------------------- creation -- */

static struct fw_bccard *fw_bccard(struct fw_card *card)
{
	if (!card->bcast)
		card->bcast = fwos_zalloc(card->host, sizeof(*card->bcast));
	return card->bcast;
}

/* Runs of consecutive member cards, and the other member ports of this card. */
static int fw_bc_topology(struct fw_card *card, struct fw_bgrp *g)
{
	u64 *cards = fwos_zalloc(card->host, (size_t)g->size * sizeof(u64));
	u32 i, n = 0, r = 0;

	if (!cards)
		return -ENOMEM;
	for (i = 0; i < g->size; i++) {
		cards[i] = g->members[i].card;
		if (i != g->rank && g->members[i].card == card->cfg.node)
			g->nlocal++;
	}
	fw_sort_u64(cards, g->size);
	for (i = 0; i < g->size; i++)
		if (!i || cards[i] != cards[i - 1])
			cards[n++] = cards[i];
	for (i = 0; i < n; i++)
		r += !i || cards[i] != cards[i - 1] + 1;
	g->runs = fwos_zalloc(card->host, 2 * (size_t)r * sizeof(u32));
	g->local = fwos_zalloc(card->host, (g->nlocal + 1) * sizeof(u32));
	if (!g->runs || !g->local) {
		fwos_free(card->host, cards);
		return -ENOMEM;
	}
	for (i = 0, r = 0; i < n; i++) {
		if (!i || cards[i] != cards[i - 1] + 1) {
			g->runs[2 * r] = (u32)cards[i];
			r++;
		}
		g->runs[2 * r - 1] = (u32)cards[i];
	}
	g->nruns = r;
	for (i = 0, n = 0; i < g->size; i++)
		if (i != g->rank && g->members[i].card == card->cfg.node)
			g->local[n++] = i;
	fwos_free(card->host, cards);
	return 0;
}

/*
 * What every packet of the group carries and every receiver checks: FNV-1a
 * over the id, the settings and the member table, so that a group of
 * another table (another job's, or a port that names a member's root in
 * its own group of the same id), or of other settings (channels from
 * cards configured differently), never takes the group's packets.
 */
static u32 fw_bc_cookie(const struct fw_bgrp *g)
{
	u32 h = 2166136261u, i, j;
	u32 head[4] = { g->e.id, g->size, g->nchan, g->flags };

	for (i = 0; i < 4; i++)
		for (j = 0; j < 4; j++)
			h = (h ^ (u8)(head[i] >> (8 * j))) * 16777619u;
	for (i = 0; i < g->size; i++) {
		u64 m = (u64)g->members[i].card << 32 | g->members[i].port;

		for (j = 0; j < 8; j++)
			h = (h ^ (u8)(m >> (8 * j))) * 16777619u;
	}
	return h;
}

int fw_bcast_group_create(struct fw_card *card, u32 port, const struct nicoff_op_group *op)
{
	struct fw_bgrp *g, *z;
	u32 h;
	int ret;

	if (!fw_bccard(card))
		return -ENOMEM;
	g = fw_timer_owner_new(card->host, &card->timers, sizeof(*g),
			       offsetof(struct fw_bgrp, timer), fw_bc_timer, FW_TIMER_BCAST);
	if (!g)
		return -ENOMEM;
	fw_list_init(&g->ops);
	g->e.port = port;
	g->e.id = op->group_id;
	g->rank = op->rank;
	g->size = op->size;
	g->flags = op->bcast_flags;
	g->nchan = op->bcast_channels ? op->bcast_channels : card->cfg.bcast_channels;
	g->next_seq = 1;
	g->rstart = 1;
	g->poll_at = FW_NEVER;
	g->query_at = FW_NEVER;
	g->send_at = FW_NEVER;
	if (g->size <= FW_BCAST_MAX_SIZE) {
		ret = -ENOMEM;
		g->members = fwos_zalloc(card->host, (size_t)g->size * sizeof(*g->members));
		g->chans = fwos_zalloc(card->host, g->nchan * sizeof(*g->chans));
		if (!g->members || !g->chans)
			goto fail;
		ret = fwos_mem_read(card->host, port, op->mr, 0, op->off, g->members,
				    g->size * (u32)sizeof(*g->members));
		if (ret)
			goto fail;
		ret = fw_bc_topology(card, g);
		if (ret)
			goto fail;
		g->cookie = fw_bc_cookie(g);
		h = g->rank * FW_BC_TREE_DEGREE + 1;
		g->nchild = h >= g->size ? 0 : fw_min_u32(FW_BC_TREE_DEGREE, g->size - h);
	}
	g->tmpl.src_node = card->cfg.node;
	g->tmpl.src_port = port;
	g->tmpl.msg_id = 0;
	fw_bc_body((struct fw_pkt *)&g->tmpl)->group = g->e.id;
	fw_bc_body((struct fw_pkt *)&g->tmpl)->size_lo = (u16)g->size;
	fw_bc_body((struct fw_pkt *)&g->tmpl)->from = (u16)g->rank;
	fw_bc_body((struct fw_pkt *)&g->tmpl)->cookie = g->cookie;

	z = fw_bc_find(card, port, g->e.id, true);
	if (z)
		fw_bc_unhash_free(card, z);
	fw_gtab_add(&card->bcast->groups, &g->e);
	return 0;
fail:
	fw_bc_release_mem(card, g);
	return ret;
}

/* Destroyed or detached: posted broadcasts end; it lingers dead_ns for the synchronisation. */
static void fw_bc_bury(struct fw_card *card, struct fw_bgrp *g, bool complete)
{
	struct fw_list *n;

	for (n = g->ops.next; n != &g->ops; n = n->next) {
		struct fw_bop *op = fw_list_entry(n, struct fw_bop, node);

		if (op->state != FW_BC_FINISHED)
			fw_bc_finish(op, -ECANCELED);
	}
	if (complete)
		fw_bc_complete_ready(card, g);
	g->e.zombie = true;
	g->bury_at = fw_add_sat(fwos_now(card->host), card->dead_ns);
	fw_bc_rearm(card, g);
}

void fw_bcast_group_bury(struct fw_card *card, u32 port, u32 id, bool complete)
{
	struct fw_bgrp *g = fw_bc_find(card, port, id, false);

	if (g)
		fw_bc_bury(card, g, complete);
}

void fw_bcast_group_ready(struct fw_card *card, u32 port, u32 id, s32 status)
{
	struct fw_bgrp *g = fw_bc_find(card, port, id, false);

	if (!g)
		return;
	if (status) {
		fw_bc_fail(card, g, status, true);
		return;
	}
	g->ready = true;
	fw_bc_progress(card, g, fwos_now(card->host));
}

void fw_bcast_port_detach(struct fw_card *card, u32 port)
{
	struct fw_gent *e;

	if (!card->bcast)
		return;
	/* Burying keeps a group in the table: the walk may go on from it. */
	for (e = fw_gtab_next(&card->bcast->groups, NULL); e;
	     e = fw_gtab_next(&card->bcast->groups, e))
		if (e->port == port && !e->zombie)
			fw_bc_bury(card, fw_bc_of(e), false);
}

void fw_bcast_destroy(struct fw_card *card)
{
	struct fw_gent *e;

	if (!card->bcast)
		return;
	while ((e = fw_gtab_next(&card->bcast->groups, NULL)))
		fw_bc_unhash_free(card, fw_bc_of(e));
	fwos_free(card->host, card->bcast);
	card->bcast = NULL;
}

/* ----------------------------------------------------------- commands -- */

int fw_bcast_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_bcast *b = &cmd->bcast;
	struct fw_bgrp *g;
	struct fw_bop *op;
	u64 end;
	int ret;

	if (b->reserved0 || b->reserved[0] || b->reserved[1])
		return -EINVAL;
	g = fw_bc_find(card, port->id, b->group_id, false);
	if (!g)
		return -ENOENT;
	if (!g->members)
		return -E2BIG;
	if (g->err)
		return g->err;
	if (b->root >= g->size)
		return -EINVAL;
	if (b->len > card->cfg.max_msg)
		return -EMSGSIZE;
	if (fw_add_overflow(b->off, b->len, &end))
		return -ERANGE;
	ret = fw_rma_local_check(card, port, b->mr, end, b->root == g->rank);
	if (ret)
		return ret;
	op = fwos_zalloc(card->host, sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->tag = cmd->tag;
	op->off = b->off;
	op->len = b->len;
	op->mr = b->mr;
	op->root = b->root;
	op->root_op = b->root == g->rank;
	op->state = FW_BC_QUEUED;
	fw_list_add_tail(&op->node, &g->ops);
	fw_bc_progress(card, g, fwos_now(card->host));
	return 0;
}

/* ------------------------------------------------------------ packets -- */

/* Fragment of a broadcast for member @g. */
static void fw_bc_rx_data(struct fw_card *card, struct fw_bgrp *g, struct fw_pkt *pkt, u64 now)
{
	struct fw_bcast_body *b = fw_bc_body(pkt);
	u32 chan = pkt->hdr.rkey & 0xff, rnd = pkt->hdr.rkey >> 8, i;
	u32 mine = (u32)(g->round & FW_BC_ROUND_MASK);
	u32 frag = card->cfg.mtu;
	struct fw_bchan *ch;
	struct fw_bop *op;

	if (((pkt->hdr.flags & FW_PKT_F_NOCRC) && !(g->flags & NICOFF_BCAST_F_NOCRC)) ||
	    b->root >= g->size || b->root == g->rank || chan >= g->nchan ||
	    b->offset % frag || b->offset >= fw_max_u64(b->total, 1) ||
	    pkt->hdr.len != fw_min_u64(frag, b->total - b->offset))
		return;
	/* Of any round, and if dropped unposted: the switch replicates. */
	if (b->to == FW_BC_ANY)
		g->rx_mcast = true;
	if (rnd == ((mine + 1) & FW_BC_ROUND_MASK) && g->sync == FW_BC_SENT &&
	    b->seq == g->rstart + g->rcount + chan) {
		/* Its root had the verdict: ours was lost. */
		fw_bc_release(card, g);
		fw_bc_progress(card, g, now);
		mine = (u32)(g->round & FW_BC_ROUND_MASK);
	}
	if (rnd != mine || b->seq != g->rstart + chan)
		return;
	if ((pkt->hdr.flags & (FW_PKT_F_RESEND | FW_PKT_F_TREE)) == FW_PKT_F_RESEND)
		g->rx_repaired = true;
	if (pkt->hdr.flags & FW_PKT_F_TREE) {
		struct fw_pkt *c = fw_bc_copy(card, pkt);

		if (c)
			fw_bc_spread(card, g, c, b->root, false);
	}
	i = (u32)(b->offset / frag);
	op = fw_bc_op_of(g, b->seq);
	if (op) {
		fw_bc_hear(&op->root_w, now);
		op->root_late = false;
		if (op->root != b->root || op->root_op) {
			fw_bc_finish(op, -EINVAL);
			fw_bc_fail(card, g, -ECONNRESET, false);
			return;
		}
	}
	if (b->total > NICOFF_BCAST_EAGER_MAX) {
		if (!op || op->state != FW_BC_TAKEN)
			return;		/* not posted: it asks again once it is */
		if (!op->large || op->len != b->total) {
			fw_bc_finish(op, -EMSGSIZE);
			fw_bc_fail(card, g, -ECONNRESET, false);
			return;
		}
		if (op->bits[i / 64] >> (i % 64) & 1)
			return;
		if (fwos_mem_write(card->host, g->e.port, op->mr, NICOFF_ACCESS_LOCAL_WRITE,
				   op->off + b->offset, pkt->payload, pkt->hdr.len)) {
			fw_bc_finish(op, -EFAULT);
			fw_bc_fail(card, g, -ECONNRESET, false);
			return;
		}
		op->bits[i / 64] |= 1ull << (i % 64);
		op->wait = fw_bc_ivl(card);
		op->nack_at = fw_add_sat(now, op->wait);
		if (++op->got == op->nfrag) {
			fw_bc_finish(op, 0);
			fw_bc_complete_ready(card, g);
			fw_bc_progress(card, g, now);
		} else if ((pkt->hdr.flags & FW_PKT_F_RESEND) && i >= op->ask) {
			/* A resend: once the window it asked for is in, ask for the next. */
			u32 j, end = fw_min_u32(op->nfrag, op->ask + FW_BC_NACK_WINDOW);

			for (j = op->ask; j < end; j++)
				if (!(op->bits[j / 64] >> (j % 64) & 1))
					break;
			if (j == end)
				fw_bc_nack(card, g, op, now);
		}
		return;
	}
	if (op && op->state == FW_BC_TAKEN && op->large) {
		/* Posted large here, eager at the root. */
		fw_bc_finish(op, -EMSGSIZE);
		fw_bc_fail(card, g, -ECONNRESET, false);
		return;
	}
	ch = &g->chans[chan];
	if (ch->seq != b->seq) {
		fw_bc_chan_clear(card, ch);
		ch->buf = fwos_zalloc(card->host, b->total ? b->total : 1);
		if (!ch->buf)
			return;		/* as good as lost */
		ch->seq = b->seq;
		ch->total = b->total;
		ch->nfrag = fw_bc_nfrag(card, b->total);
	}
	if (ch->full || ch->total != b->total || ch->bits[i / 64] >> (i % 64) & 1)
		return;
	memcpy(ch->buf + b->offset, pkt->payload, pkt->hdr.len);
	ch->bits[i / 64] |= 1ull << (i % 64);
	if (op) {
		op->wait = fw_bc_ivl(card);
		op->nack_at = fw_add_sat(now, op->wait);
	}
	if (++ch->got < ch->nfrag)
		return;
	ch->full = true;
	if (op && op->state == FW_BC_TAKEN) {
		if (op->large) {
			fw_bc_finish(op, -EMSGSIZE);
			fw_bc_fail(card, g, -ECONNRESET, false);
			return;
		}
		fw_bc_deliver(card, g, op, ch);
		fw_bc_complete_ready(card, g);
		fw_bc_progress(card, g, now);
	}
}

/*
 * The answer to a question about what this member has not done yet:
 * -EAGAIN (alive, later), or -ECONNRESET from a destroyed or detached
 * member that never will (@sync: unless its round is closed, so that its
 * synchronisation can still end).
 */
static s32 fw_bc_later(const struct fw_bgrp *g, bool sync)
{
	return g->e.zombie && !(sync && g->closed) ? -ECONNRESET : -EAGAIN;
}

/* A member lacks fragments of a broadcast this member rooted. */
static void fw_bc_rx_nack(struct fw_card *card, struct fw_bgrp *g, struct fw_pkt *pkt, u32 from,
			  u64 now)
{
	struct fw_bcast_body *b = fw_bc_body(pkt);
	struct fw_bop *op = NULL;
	struct fw_bchan *ch;
	u64 chan;
	u32 i, nfrag;

	if (b->root != g->rank)
		return;
	/*
	 * A destroyed group serves no data: members destroy it once every
	 * member's broadcasts are done, so whoever asks is a new incarnation
	 * of the id, whose creation the old group's barrier messages may have
	 * completed, and must not get the old group's bytes.
	 */
	if (g->e.zombie) {
		fw_bc_ctrl(card, g, FW_PKT_BCAST_STATE, from, b->seq, -ECONNRESET, 0);
		return;
	}
	if (b->seq < g->rstart)
		return;		/* released: it has it (a stale ask) */
	chan = b->seq - g->rstart;
	if (g->err) {
		fw_bc_ctrl(card, g, FW_PKT_BCAST_STATE, from, b->seq, g->err, 0);
		return;
	}
	if (chan >= g->rcount) {
		/* Not posted here yet: alive. */
		fw_bc_ctrl(card, g, FW_PKT_BCAST_STATE, from, b->seq, fw_bc_later(g, false), 0);
		return;
	}
	ch = &g->chans[chan];
	if (ch->seq != b->seq || !ch->mine)
		return;
	if (!ch->buf) {
		op = fw_bc_op_of(g, b->seq);
		if (!op)
			return;
	}
	nfrag = fw_bc_nfrag(card, ch->total);
	/*
	 * Still sending it the first time, or sent less than an interval ago:
	 * alive.  What the member lacks is on its way (held by the fabric's
	 * flow control, or queued at its card behind the rest), and sending
	 * it again would only double the load that delays it: a receiver
	 * whose NACK crossed the next burst would get that burst twice.
	 */
	if (op && (op->sent < op->nfrag || fw_bc_since(now, op->sent_at) < fw_bc_ivl(card))) {
		fw_bc_ctrl(card, g, FW_PKT_BCAST_STATE, from, b->seq, -EAGAIN, 0);
		return;
	}
	for (i = 0; i < FW_BC_NACK_WINDOW; i++) {
		struct fw_pkt *r;

		if (!(b->total >> i & 1) || b->offset + i >= nfrag)
			continue;
		r = fw_bc_frag(card, g, b->seq, (u32)chan, ch->total, (u32)(b->offset + i), op);
		if (!r)
			break;
		card->stats.bcast_resends++;
		r->hdr.flags = (r->hdr.flags & ~FW_PKT_F_TREE) | FW_PKT_F_RESEND;
		fw_bc_unicast(card, g, r, from);
	}
}

static void fw_bc_rx_sync(struct fw_card *card, struct fw_bgrp *g, struct fw_pkt *pkt, u32 from,
			  u64 now)
{
	u64 rnd = fw_bc_body(pkt)->seq;
	u32 child;

	if (pkt->hdr.flags & FW_PKT_F_ACKREQ) {
		/* The parent polls: have we reported that round? */
		if (from != (g->rank ? (g->rank - 1) / FW_BC_TREE_DEGREE : FW_U32_MAX))
			return;
		if (g->err)
			fw_bc_ctrl(card, g, FW_PKT_BCAST_STATE, from, rnd, g->err, 0);
		else if (g->round > rnd || (g->round == rnd && g->sync == FW_BC_SENT))
			fw_bc_ctrl(card, g, FW_PKT_BCAST_SYNC, from, rnd, 0, 0);
		else
			fw_bc_ctrl(card, g, FW_PKT_BCAST_STATE, from, rnd, fw_bc_later(g, true), 0);
		return;
	}
	if (from == 0 || (from - 1) / FW_BC_TREE_DEGREE != g->rank)
		return;
	child = (from - 1) % FW_BC_TREE_DEGREE;
	fw_bc_hear(&g->child_w[child], now);
	if (rnd == g->round + 1 && g->sync == FW_BC_SENT && !pkt->hdr.err) {
		/* It had the verdict of ours: ours was lost. */
		fw_bc_release(card, g);
	}
	if (rnd != g->round || g->err)
		return;
	if (pkt->hdr.err == -EAGAIN) {
		fw_bc_nack_up(card, g, now);
		return;
	}
	if (pkt->hdr.err)
		return;
	g->child_ok |= 1u << child;
	fw_bc_progress(card, g, now);
}

static void fw_bc_rx_verdict(struct fw_card *card, struct fw_bgrp *g, struct fw_pkt *pkt,
			     u32 from, u64 now)
{
	u64 rnd = fw_bc_body(pkt)->seq;

	if (pkt->hdr.flags & FW_PKT_F_ACKREQ) {
		/* A member asks rank 0 (us) for a verdict. */
		if (g->rank)
			return;
		if (g->err)
			fw_bc_ctrl(card, g, FW_PKT_BCAST_STATE, from, rnd, g->err, 0);
		else if (g->round > rnd)
			fw_bc_ctrl(card, g, FW_PKT_BCAST_VERDICT, from, rnd, 0, 0);
		else
			fw_bc_ctrl(card, g, FW_PKT_BCAST_STATE, from, rnd, fw_bc_later(g, true), 0);
		return;
	}
	if (g->err || from != (pkt->hdr.flags & FW_PKT_F_TREE ? fw_bc_tree_parent(g, 0) : 0))
		return;
	if (pkt->hdr.flags & FW_PKT_F_TREE) {
		struct fw_pkt *c = fw_bc_copy(card, pkt);

		if (c)
			fw_bc_spread(card, g, c, 0, false);
	}
	fw_bc_hear(&g->mgr_w, now);
	if (rnd != g->round)
		return;
	if (pkt->hdr.err == -EAGAIN) {
		/* Once an interval: a duplicated verdict is not another loss. */
		if (!g->resend_at || fw_bc_since(now, g->resend_at) >= fw_bc_ivl(card)) {
			g->resend_at = now;
			fw_bc_resend_round(card, g);
		}
		return;
	}
	if (!pkt->hdr.err && g->sync == FW_BC_SENT)
		fw_bc_release(card, g);
}

static void fw_bc_rx_state(struct fw_card *card, struct fw_bgrp *g, struct fw_pkt *pkt,
			   u32 from, u64 now)
{
	struct fw_list *n;
	u32 child;

	if (pkt->hdr.err != -EAGAIN) {
		if (pkt->hdr.err < 0)
			fw_bc_fail(card, g, -ECONNRESET, true);
		return;
	}
	/*
	 * Alive: whoever waits on it waits on, asking less often (hundreds of
	 * members asking a slow root or rank 0 every interval would swamp it).
	 */
	if (from == 0 && g->sync == FW_BC_SENT) {
		fw_bc_hear(&g->mgr_w, now);
		g->query_ivl = fw_backoff(&card->cfg, g->query_ivl);
		g->query_at = fw_add_sat(now, g->query_ivl);
	}
	if (from && (from - 1) / FW_BC_TREE_DEGREE == g->rank) {
		child = (from - 1) % FW_BC_TREE_DEGREE;
		fw_bc_hear(&g->child_w[child], now);
	}
	for (n = g->ops.next; n != &g->ops; n = n->next) {
		struct fw_bop *op = fw_list_entry(n, struct fw_bop, node);

		if (op->state == FW_BC_QUEUED)
			break;
		if (op->root == from && op->state == FW_BC_TAKEN) {
			fw_bc_hear(&op->root_w, now);
			op->root_late = true;
			op->wait = fw_backoff(&card->cfg, op->wait);
			op->nack_at = fw_add_sat(now, op->wait);
		}
	}
}

/* Whether @pkt is from the member it names, for group @g. */
static bool fw_bc_from_member(const struct fw_bgrp *g, const struct fw_pkt *pkt)
{
	const struct fw_bcast_body *b = (const struct fw_bcast_body *)&pkt->hdr.msg_id;

	return b->cookie == g->cookie && b->size_lo == (u16)g->size && b->from < g->size &&
	       b->from != g->rank &&
	       g->members[b->from].card == pkt->hdr.src_node &&
	       g->members[b->from].port == pkt->hdr.src_port;
}

/*
 * Any packet from a member is a sign of its life for whoever waits on it
 * (a root sending a large broadcast to many at TCG speed may answer no
 * NACK for longer than the dead time, but its fragments keep coming).
 */
static void fw_bc_heard(struct fw_bgrp *g, u32 from, u64 now)
{
	struct fw_list *n;

	if (!from)
		fw_bc_hear(&g->mgr_w, now);
	if (from && (from - 1) / FW_BC_TREE_DEGREE == g->rank)
		fw_bc_hear(&g->child_w[(from - 1) % FW_BC_TREE_DEGREE], now);
	for (n = g->ops.next; n != &g->ops; n = n->next) {
		struct fw_bop *op = fw_list_entry(n, struct fw_bop, node);

		if (op->state == FW_BC_QUEUED)
			break;
		if (op->root == from)
			fw_bc_hear(&op->root_w, now);
	}
}

static void fw_bc_rx_one(struct fw_card *card, struct fw_bgrp *g, struct fw_pkt *pkt, u64 now)
{
	u32 from = fw_bc_body(pkt)->from;

	if (!g->members || !fw_bc_from_member(g, pkt))
		return;
	fw_bc_heard(g, from, now);
	if (pkt->hdr.type == FW_PKT_BCAST && fw_bc_body(pkt)->root != from)
		fw_bc_heard(g, fw_bc_body(pkt)->root, now);
	switch (pkt->hdr.type) {
	case FW_PKT_BCAST:
		if (!g->err && !g->e.zombie)
			fw_bc_rx_data(card, g, pkt, now);
		break;
	case FW_PKT_BCAST_NACK:
		fw_bc_rx_nack(card, g, pkt, from, now);
		break;
	case FW_PKT_BCAST_SYNC:
		fw_bc_rx_sync(card, g, pkt, from, now);
		break;
	case FW_PKT_BCAST_VERDICT:
		fw_bc_rx_verdict(card, g, pkt, from, now);
		break;
	case FW_PKT_BCAST_STATE:
		fw_bc_rx_state(card, g, pkt, from, now);
		break;
	}
	fw_bc_progress(card, g, now);
}

void fw_bcast_rx(struct fw_card *card, struct fw_pkt *pkt)
{
	const struct fw_bcast_body *b = fw_bc_body(pkt);
	u64 now = fwos_now(card->host);
	struct fw_gent *e, *next;
	struct fw_bgrp *g;

	card->stats.rx_pkts++;
	card->stats.rx_bytes += fw_pkt_size(pkt);
	if (!card->bcast || (pkt->hdr.type != FW_PKT_BCAST && pkt->hdr.len))
		goto out;
	if (pkt->hdr.dst_node != FW_NODE_ANY) {
		g = fw_bc_find(card, pkt->hdr.dst_port, b->group, true);
		if (g && b->to == g->rank)
			fw_bc_rx_one(card, g, pkt, now);
		goto out;
	}
	/* The fabric's multicast: every member port of this card takes it. */
	if (pkt->hdr.type != FW_PKT_BCAST && pkt->hdr.type != FW_PKT_BCAST_VERDICT &&
	    pkt->hdr.type != FW_PKT_BCAST_STATE)
		goto out;
	for (e = fw_gtab_chain(&card->bcast->groups, b->group); e; e = next) {
		next = e->next;
		if (e->id == b->group)
			fw_bc_rx_one(card, fw_bc_of(e), pkt, now);
	}
out:
	fwos_pkt_free(card->host, pkt);
}
