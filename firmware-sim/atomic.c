// SPDX-License-Identifier: GPL-2.0
/*
 * Remote atomics (seed 001, section III-B): FETCH_ADD, FETCH_WRITE and
 * COMPARE_SWAP on a 4- or 8-byte word of a peer's region, executed by the
 * target card with one CPU atomic instruction on the pinned page
 * (fwos_mem_atomic()).  Documentation/atomics.md has the whole story.
 *
 * Atomics do not ride the go-back-N stream: that stream drops duplicates,
 * and an atomic is not idempotent, so its reply must be replayed, never
 * recomputed.  Each requester card numbers its atomics to one target card
 * (ATOMIC_REQ, seq), keeps each one with a timer and sends the same
 * request again, with backoff, until the reply (ATOMIC_REPLY, which is
 * also the acknowledgment) arrives or max_retries runs out (-ETIMEDOUT).
 *
 * The target keeps the reply of every request it executed in a table, a
 * ring of `credit` entries per requester card indexed by seq % credit,
 * and answers a duplicate from it.  Every request carries the requester's
 * low-water mark, the oldest sequence number still waiting for its reply:
 * the requester has seen every reply below it, so the target retires
 * those entries and drops any request below it as stale.  A requester
 * keeps at most `credit` sequence numbers in flight past its mark (later
 * commands wait in its queue), so every live entry of a requester lies in
 * [mark, mark + credit): one slot each, and credit * cards <= atomic_table
 * entries in all.  A request beyond that window (only a broken or hostile
 * requester sends one) is refused with -ENOSPC and never overwrites a live
 * entry.  A requester with nothing more in flight tells the target its new
 * mark in an ATOMIC_ACK (with ACKREQ) rto_ns after its last reply,
 * unless a request tells it first; the target confirms with an ATOMIC_ACK
 * of its own and the requester repeats its ACK, with backoff, until then
 * or until max_retries: so replies are retired once the requester has
 * seen them, whatever the fabric loses.
 */
#include "card.h"

static u32 fw_atomic_mask(const struct fw_card *card)
{
	return card->atomic.credit - 1;
}

void fw_atomic_init(struct fw_card *card)
{
	u32 per = card->cfg.atomic_table / card->cfg.num_nodes;
	u32 credit = 1;

	/* A power of two, so seq % credit stays continuous across the wrap. */
	while (credit <= per >> 1)
		credit <<= 1;
	fw_list_init(&card->atomic.peers);
	card->atomic.credit = credit;
}

u32 fw_atomic_credit(const struct fw_card *card)
{
	return card->atomic.credit;
}

/* The peer's timer runs by @at, maybe early: it then finds what is due. */
static void fw_atomic_arm(struct fw_card *card, struct fw_apeer *ap, u64 at)
{
	if (at < ap->timer.deadline)
		fw_timer_set(&card->timers, &ap->timer, at);
}

static void fw_atomic_peer_timer(struct fw_card *card, struct fw_timer *t, u64 now);

static struct fw_apeer *fw_apeer_get(struct fw_card *card, struct fw_peer *peer)
{
	struct fw_apeer *ap = peer->atomic;

	if (ap)
		return ap;
	ap = fw_timer_owner_new(card->host, &card->timers, sizeof(*ap),
				offsetof(struct fw_apeer, timer), fw_atomic_peer_timer,
				FW_TIMER_ATOMIC);
	if (!ap)
		return NULL;
	ap->peer = peer;
	ap->next = card->cfg.initial_seq;
	ap->low = card->cfg.initial_seq;
	ap->ack_at = FW_NEVER;
	fw_list_init(&ap->waitq);
	fw_list_add_tail(&ap->node, &card->atomic.peers);
	peer->atomic = ap;
	return ap;
}

static void fw_apeer_free(struct fw_card *card, struct fw_apeer *ap)
{
	u32 s;

	while (!fw_list_empty(&ap->waitq)) {
		struct fw_aop *op = fw_list_entry(ap->waitq.next, struct fw_aop, node);

		fw_list_del(&op->node);
		fwos_free(card->host, op);
	}
	if (ap->win) {
		for (s = ap->low; s != ap->next; s++)
			fwos_free(card->host, ap->win[s & fw_atomic_mask(card)]);
		fwos_free(card->host, ap->win);
	}
	if (ap->ents) {
		card->stats.atomic_table_live -= ap->live;
		fwos_free(card->host, ap->ents);
	}
	fw_timer_del(&card->timers, &ap->timer);
	fw_list_del(&ap->node);
	ap->peer->atomic = NULL;
	fwos_free(card->host, ap);
}

/* The card is going: drop everything, completing nothing. */
void fw_atomic_destroy(struct fw_card *card)
{
	while (!fw_list_empty(&card->atomic.peers))
		fw_apeer_free(card, fw_list_entry(card->atomic.peers.next, struct fw_apeer, node));
}

static void fw_atomic_body_get(struct fw_atomic_body *b, const struct fw_pkt *pkt)
{
	memcpy(b, pkt->payload, sizeof(*b));
}

/* ------------------------------------------------------------ requester -- */

static void fw_atomic_xmit(struct fw_card *card, struct fw_apeer *ap, struct fw_aop *op, u64 now)
{
	struct fw_pkt *pkt = fw_pkt_new(card, ap->peer, FW_PKT_ATOMIC_REQ, op->lport,
					op->dst_port, sizeof(struct fw_atomic_body));
	struct fw_atomic_body b;

	op->tries++;
	op->due = fw_add_sat(now, op->rto);
	op->rto = fw_backoff(&card->cfg, op->rto);
	fw_atomic_arm(card, ap, op->due);
	if (!pkt)
		return;		/* as good as lost: the timer sends it again */
	/* The request tells the target our mark: no ACK needed for it. */
	ap->ack_at = FW_NEVER;
	pkt->hdr.epoch = card->cfg.epoch;
	pkt->hdr.seq = op->seq;
	pkt->hdr.ack = ap->low;
	pkt->hdr.roff = op->roff;
	pkt->hdr.rkey = op->rkey;
	memset(&b, 0, sizeof(b));
	b.opcode = op->opcode;
	b.width = op->width;
	b.operand = op->operand;
	b.compare = op->compare;
	memcpy(pkt->payload, &b, sizeof(b));
	fw_pkt_send(card, pkt);
}

/* Send what the credit allows, oldest command first. */
static void fw_atomic_pump(struct fw_card *card, struct fw_apeer *ap, u64 now)
{
	while (!fw_list_empty(&ap->waitq) && ap->next - ap->low < card->atomic.credit) {
		struct fw_aop *op = fw_list_entry(ap->waitq.next, struct fw_aop, node);

		fw_list_del(&op->node);
		op->seq = ap->next++;
		op->rto = card->cfg.rto_ns;
		ap->win[op->seq & fw_atomic_mask(card)] = op;
		ap->inflight++;
		fw_atomic_xmit(card, ap, op, now);
	}
}

/*
 * @op leaves the window: its completion is posted unless @complete is
 * false (its port is closing), and the mark moves past it if it was the
 * oldest.  Once nothing is left in flight the target hears of the new
 * mark, rto_ns later unless a request tells it first (not sooner: a
 * requester issuing one atomic after another should not pay an ACK each).
 */
static void fw_atomic_retire_op(struct fw_card *card, struct fw_apeer *ap, struct fw_aop *op,
				s32 status, u64 old, bool complete)
{
	u32 mask = fw_atomic_mask(card);

	ap->win[op->seq & mask] = NULL;
	ap->inflight--;
	while (ap->low != ap->next && !ap->win[ap->low & mask])
		ap->low++;
	if (complete)
		fw_complete(card, op->lport, op->cmd_tag, op->opcode, status, status ? 0 : old);
	fwos_free(card->host, op);
	if (!ap->inflight && !card->dying) {
		ap->ack_at = fw_add_sat(fwos_now(card->host), card->cfg.rto_ns);
		ap->ack_rto = card->cfg.rto_ns;
		ap->ack_tries = 0;
		fw_atomic_arm(card, ap, ap->ack_at);
	}
}

int fw_atomic_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_atomic *a = &cmd->atomic;
	struct fw_peer *peer;
	struct fw_apeer *ap;
	struct fw_aop *op;

	if (a->reserved || a->dst_card >= card->cfg.num_nodes)
		return -EINVAL;
	if (a->width != 4 && a->width != 8)
		return -EINVAL;
	if (cmd->opcode != NICOFF_OP_COMPARE_SWAP && a->compare)
		return -EINVAL;
	/* A 32-bit operation takes 32-bit operands: nothing is truncated. */
	if (a->width == 4 && ((a->operand | a->compare) >> 32))
		return -EINVAL;
	peer = fw_peer_get(card, a->dst_card);
	if (!peer)
		return -ENOMEM;
	ap = fw_apeer_get(card, peer);
	if (!ap)
		return -ENOMEM;
	if (!ap->win) {
		ap->win = fwos_zalloc(card->host, card->atomic.credit * sizeof(*ap->win));
		if (!ap->win)
			return -ENOMEM;
	}
	op = fwos_zalloc(card->host, sizeof(*op));
	if (!op)
		return -ENOMEM;
	op->cmd_tag = cmd->tag;
	op->roff = a->remote_off;
	op->operand = a->operand;
	op->compare = a->compare;
	op->lport = port->id;
	op->dst_port = a->dst_port;
	op->rkey = a->rkey;
	op->opcode = cmd->opcode;
	op->width = (u8)a->width;
	fw_list_add_tail(&op->node, &ap->waitq);
	fw_atomic_pump(card, ap, fwos_now(card->host));
	return 0;
}

static void fw_atomic_rx_reply(struct fw_card *card, struct fw_peer *peer,
			       const struct fw_pkt *pkt)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	struct fw_apeer *ap = peer->atomic;
	struct fw_atomic_body b;
	struct fw_aop *op;

	if (!ap || !ap->win || h->epoch != card->cfg.epoch || h->len != sizeof(b))
		return;
	if (h->seq - ap->low >= ap->next - ap->low) {
		card->stats.atomic_dup_replies++;	/* seen already, or given up */
		return;
	}
	op = ap->win[h->seq & fw_atomic_mask(card)];
	if (!op || op->seq != h->seq) {
		card->stats.atomic_dup_replies++;
		return;
	}
	if (h->src_port != op->dst_port)
		return;		/* not from where we asked */
	fw_atomic_body_get(&b, pkt);
	fw_atomic_retire_op(card, ap, op, h->err > 0 ? -EIO : h->err, b.operand, true);
	fw_atomic_pump(card, ap, fwos_now(card->host));
}

/* Retransmit what is due, give up on what ran out of tries, send the ACK. */
static void fw_atomic_peer_timer(struct fw_card *card, struct fw_timer *t, u64 now)
{
	struct fw_apeer *ap = fw_container_of(t, struct fw_apeer, timer);
	u32 mask = fw_atomic_mask(card), s, end = ap->next;
	u64 d = FW_NEVER;

	for (s = ap->low; s != end; s++) {
		struct fw_aop *op = ap->win ? ap->win[s & mask] : NULL;

		if (!op)
			continue;
		if (op->due <= now) {
			if (op->tries > card->cfg.max_retries) {
				card->stats.atomic_timeouts++;
				fw_atomic_retire_op(card, ap, op, -ETIMEDOUT, 0, true);
				continue;
			}
			card->stats.atomic_retransmits++;
			fw_atomic_xmit(card, ap, op, now);
		}
		d = fw_min_u64(d, op->due);
	}
	if (ap->ack_at <= now) {
		struct fw_pkt *pkt = fw_pkt_new(card, ap->peer, FW_PKT_ATOMIC_ACK, 0, 0, 0);

		if (ap->ack_tries++ > card->cfg.max_retries) {
			ap->ack_at = FW_NEVER;	/* the next request will tell it */
		} else {
			ap->ack_at = fw_add_sat(now, ap->ack_rto);
			ap->ack_rto = fw_backoff(&card->cfg, ap->ack_rto);
		}
		if (pkt) {
			pkt->hdr.flags = FW_PKT_F_ACKREQ;
			pkt->hdr.epoch = card->cfg.epoch;
			pkt->hdr.ack = ap->low;
			fw_pkt_send(card, pkt);
		}
	}
	fw_timer_set(&card->timers, &ap->timer, fw_min_u64(d, ap->ack_at));
	if (ap->win)
		fw_atomic_pump(card, ap, now);
}

/* The port is closing: its atomics go without completions. */
void fw_atomic_port_detach(struct fw_card *card, u32 port)
{
	u64 now = fwos_now(card->host);
	struct fw_list *n, *m, *next;

	for (n = card->atomic.peers.next; n != &card->atomic.peers; n = n->next) {
		struct fw_apeer *ap = fw_list_entry(n, struct fw_apeer, node);
		u32 s, end = ap->next;

		for (m = ap->waitq.next; m != &ap->waitq; m = next) {
			struct fw_aop *op = fw_list_entry(m, struct fw_aop, node);

			next = m->next;
			if (op->lport == port) {
				fw_list_del(&op->node);
				fwos_free(card->host, op);
			}
		}
		if (!ap->win)
			continue;
		for (s = ap->low; s != end; s++) {
			struct fw_aop *op = ap->win[s & fw_atomic_mask(card)];

			if (op && op->lport == port)
				fw_atomic_retire_op(card, ap, op, 0, 0, false);
		}
		if (!card->dying)
			fw_atomic_pump(card, ap, now);
	}
}

/* --------------------------------------------------------------- target -- */

static void fw_atomic_reply(struct fw_card *card, struct fw_peer *peer,
			    const struct fw_pkt_hdr *h, const struct fw_atomic_body *req,
			    s32 status, u64 old)
{
	struct fw_pkt *pkt = fw_pkt_new(card, peer, FW_PKT_ATOMIC_REPLY, h->dst_port, h->src_port,
					sizeof(struct fw_atomic_body));
	struct fw_atomic_body b;

	if (!pkt)
		return;		/* as good as lost: the requester asks again */
	pkt->hdr.epoch = h->epoch;
	pkt->hdr.seq = h->seq;
	pkt->hdr.err = status;
	memset(&b, 0, sizeof(b));
	b.opcode = req->opcode;
	b.width = req->width;
	b.operand = old;
	memcpy(pkt->payload, &b, sizeof(b));
	fw_pkt_send(card, pkt);
}

static void fw_atomic_ent_drop(struct fw_card *card, struct fw_apeer *ap,
			       struct fw_atomic_ent *e)
{
	e->valid = false;
	ap->live--;
	card->stats.atomic_table_live--;
}

/* The requester has seen every reply below @mark. */
static void fw_atomic_retire(struct fw_card *card, struct fw_apeer *ap, u32 mark)
{
	u32 credit = card->atomic.credit, s;

	if (!fw_seq_before(ap->rlow, mark))
		return;
	if (mark - ap->rlow >= credit) {
		for (s = 0; s < credit && ap->live; s++)
			if (ap->ents[s].valid)
				fw_atomic_ent_drop(card, ap, &ap->ents[s]);
	} else {
		for (s = ap->rlow; s != mark && ap->live; s++) {
			struct fw_atomic_ent *e = &ap->ents[s & (credit - 1)];

			if (e->valid && e->seq == s)
				fw_atomic_ent_drop(card, ap, e);
		}
	}
	ap->rlow = mark;
}

/*
 * The requester's atomic epoch (its card's epoch): a new one means a new
 * card, whose numbering starts over; the previous one's packets are stale.
 */
static bool fw_atomic_epoch(struct fw_card *card, struct fw_apeer *ap, const struct fw_pkt_hdr *h)
{
	u32 s;

	if (h->epoch && h->epoch == ap->epoch)
		return true;
	if (!h->epoch || h->epoch == ap->prev_epoch) {
		card->stats.atomic_stale++;
		return false;
	}
	for (s = 0; s < card->atomic.credit && ap->live; s++)
		if (ap->ents[s].valid)
			fw_atomic_ent_drop(card, ap, &ap->ents[s]);
	ap->prev_epoch = ap->epoch;
	ap->epoch = h->epoch;
	ap->rlow = h->ack;
	return true;
}

/* Execute a request: one CPU atomic on the target's memory. */
static s32 fw_atomic_exec(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt_hdr *h,
			  const struct fw_atomic_body *b, u64 *old)
{
	struct fw_port *port = fw_port_find(card, h->dst_port);
	s32 err;

	*old = 0;
	if (!port)
		return -ECONNREFUSED;
	if (b->reserved || b->reserved1 || (b->width != 4 && b->width != 8) ||
	    (b->opcode != NICOFF_OP_FETCH_ADD && b->opcode != NICOFF_OP_FETCH_WRITE &&
	     b->opcode != NICOFF_OP_COMPARE_SWAP) ||
	    (b->width == 4 && ((b->operand | b->compare) >> 32)))
		err = -EINVAL;
	else
		err = fwos_mem_atomic(card->host, port->id, h->rkey, h->roff, b->width, b->opcode,
				      b->operand, b->compare, old);
	if (err) {
		*old = 0;
		card->stats.remote_errors++;
		port->remote_errors++;
		port->last_remote.status = err;
		port->last_remote.src_card = peer->node;
		port->last_remote.src_port = h->src_port;
		port->last_remote.opcode = b->opcode;
	} else {
		card->stats.atomics++;
	}
	return err;
}

static void fw_atomic_rx_req(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt *pkt)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	u32 credit = card->atomic.credit;
	struct fw_atomic_body b;
	struct fw_atomic_ent *e;
	struct fw_apeer *ap;
	u64 old;
	s32 err;

	if (h->len != sizeof(b))
		return;		/* malformed: ignored */
	fw_atomic_body_get(&b, pkt);
	ap = fw_apeer_get(card, peer);
	if (!ap)
		return;		/* no memory: no reply, the requester asks again */
	if (!ap->ents) {
		ap->ents = fwos_zalloc(card->host, credit * sizeof(*ap->ents));
		if (!ap->ents)
			return;
	}
	if (!fw_atomic_epoch(card, ap, h))
		return;
	fw_atomic_retire(card, ap, h->ack);
	if (fw_seq_before(h->seq, ap->rlow)) {
		/* Its reply was seen, or the requester gave up on it. */
		card->stats.atomic_stale++;
		return;
	}
	e = &ap->ents[h->seq & (credit - 1)];
	if (e->valid && e->seq == h->seq) {
		if (e->src_port != h->src_port)
			return;		/* not the request we answered */
		card->stats.atomic_replays++;
		fw_atomic_reply(card, peer, h, &b, e->status, e->old);
		return;
	}
	/* Beyond the credit: refused, and nothing live is overwritten. */
	if (h->seq - ap->rlow >= credit || e->valid ||
	    card->stats.atomic_table_live >= card->cfg.atomic_table) {
		card->stats.atomic_refused++;
		fw_atomic_reply(card, peer, h, &b, -ENOSPC, 0);
		return;
	}
	err = fw_atomic_exec(card, peer, h, &b, &old);
	e->seq = h->seq;
	e->src_port = h->src_port;
	e->status = err;
	e->old = old;
	e->valid = true;
	ap->live++;
	card->stats.atomic_table_live++;
	card->stats.atomic_table_peak = fw_max_u64(card->stats.atomic_table_peak,
						   card->stats.atomic_table_live);
	fw_atomic_reply(card, peer, h, &b, err, old);
}

/*
 * With ACKREQ: a requester's mark, confirmed by an ACK back.  Without: the
 * target's confirmation of our mark.
 */
static void fw_atomic_rx_ack(struct fw_card *card, struct fw_peer *peer,
			     const struct fw_pkt_hdr *h)
{
	struct fw_apeer *ap = peer->atomic;
	struct fw_pkt *pkt;

	if (!(h->flags & FW_PKT_F_ACKREQ)) {
		if (ap && h->epoch == card->cfg.epoch && h->ack == ap->low && !ap->inflight)
			ap->ack_at = FW_NEVER;
		return;
	}
	if (ap && ap->ents && h->epoch && h->epoch == ap->epoch)
		fw_atomic_retire(card, ap, h->ack);
	pkt = fw_pkt_new(card, peer, FW_PKT_ATOMIC_ACK, 0, 0, 0);
	if (!pkt)
		return;
	pkt->hdr.epoch = h->epoch;
	pkt->hdr.ack = h->ack;
	fw_pkt_send(card, pkt);
}

void fw_atomic_rx(struct fw_card *card, struct fw_pkt *pkt)
{
	struct fw_peer *peer = fw_peer_get(card, pkt->hdr.src_node);
	u8 type = pkt->hdr.type;

	if (peer) {
		card->stats.rx_pkts++;
		card->stats.rx_bytes += fw_pkt_size(pkt);
		if (type == FW_PKT_ATOMIC_REQ)
			fw_atomic_rx_req(card, peer, pkt);
		else if (type == FW_PKT_ATOMIC_REPLY)
			fw_atomic_rx_reply(card, peer, pkt);
		else
			fw_atomic_rx_ack(card, peer, &pkt->hdr);
	}
	fwos_pkt_free(card->host, pkt);
}
