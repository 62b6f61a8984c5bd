// SPDX-License-Identifier: GPL-2.0
/*
 * Per-peer reliability, after GM: one connection per (this node, peer
 * node), shared by all ports.  Each packet sent gets a sequence number and a
 * send record holding the card's copy of it and a timestamp; the peer
 * acknowledges cumulatively, on its own packets or in an ACK sent at most
 * ack_delay_ns later.  Packets are accepted only in order: a duplicate or
 * out-of-order one is dropped and the last in-order one acknowledged again.
 * A timeout resends everything unacknowledged (go-back-N) with the timeout
 * doubled up to rto_max_ns; after max_retries the connection fails, every
 * operation on it completes with -ETIMEDOUT and the next packet opens a new
 * epoch (SYN), whose first sequence number the receiver adopts.
 *
 * The timeout adapts to the connection as in RFC 6298: one packet at a
 * time is timed from its sending (or the last progress, if later: the
 * timer restarts on progress) to the acknowledgment that covers it,
 * never one sent again (Karn), and the timeout before backoff is
 * srtt + 4 * rttvar, no less than rto_ns and no more than rto_max_ns
 * (rto_fixed: rto_ns, as before).  Progress ends the backoff.  A receiver
 * that drops a packet out of order says so on its next acknowledgment
 * (FW_PKT_F_OOO); the sender then resends from the hole at once, so that
 * a loss costs a round trip, not a timeout, however long that has grown.
 * A loss with nothing sent after it (the last packets of a burst, or the
 * acknowledgment of them) has no later packet to report it: a learnt round
 * trip (srtt + 4 rttvar, at least 2 srtt, without the floor rto_ns or the
 * backoff) plus ack_delay_ns after the last send or progress, if that comes
 * before the timeout, the sender resends its
 * last packet with ACKREQ once (a tail-loss probe, after RFC 8985), and
 * restarts the timeout.  The receiver answers it at once: as a duplicate
 * if only the acknowledgment was lost, out of order if a hole is left (a
 * fast retransmit follows), in order if it was the one lost.  A probe
 * also fires first when the card itself ran late (its host did not
 * schedule it): one packet resent, rather than the window and a backoff.
 *
 * Error replies (ERR) are reliable packets of the reverse stream, so one
 * may arrive after the acknowledgment of the packet it is about.  Every
 * packet therefore carries err_count, the ERR packets its sender queued so
 * far in its epoch: a SEND or PUT whose packets are all acknowledged
 * completes with success only once the ERRs vouched by that acknowledgment
 * have all arrived here.  Receiver-not-ready replies (RNR, msg.c) are
 * counted with them.
 */
#include "card.h"

static bool fw_peer_owed(const struct fw_peer *peer)
{
	return !fw_list_empty(&peer->pending) || !fw_list_empty(&peer->rx_msgs);
}

/* The peer is about to owe us something: time its silence from now. */
void fw_peer_owe(struct fw_card *card, struct fw_peer *peer)
{
	if (!fw_peer_owed(peer)) {
		peer->wd_base = fwos_now(card->host);
		peer->mute_rounds = 0;
	}
}

void fw_peer_pending_add(struct fw_card *card, struct fw_peer *peer, struct fw_op *op)
{
	fw_peer_owe(card, peer);
	fw_list_add_tail(&op->q_node, &peer->pending);
	op->queue = FW_OPQ_PENDING;
}

struct fw_pkt *fw_pkt_new(struct fw_card *card, struct fw_peer *peer, u8 type, u32 lport,
			  u32 rport, u32 len)
{
	struct fw_pkt *pkt = fwos_pkt_alloc(card->host, len);

	if (!pkt)
		return NULL;
	memset(&pkt->hdr, 0, sizeof(pkt->hdr));
	pkt->hdr.src_node = card->cfg.node;
	pkt->hdr.dst_node = peer->node;
	pkt->hdr.src_port = lport;
	pkt->hdr.dst_port = rport;
	pkt->hdr.type = type;
	pkt->hdr.len = len;
	return pkt;
}

static u32 fw_pkt_crc(const struct fw_pkt *pkt)
{
	u32 crc = fwos_crc32c(0, &pkt->hdr, FW_PKT_HDR_SIZE);

	if (pkt->hdr.flags & FW_PKT_F_NOCRC)
		return crc;
	return fwos_crc32c(crc, pkt->payload, pkt->hdr.len);
}

void fw_pkt_seal(struct fw_pkt *pkt)
{
	pkt->hdr.crc = 0;
	pkt->hdr.crc = fw_pkt_crc(pkt);
}

void fw_pkt_send(struct fw_card *card, struct fw_pkt *pkt)
{
	fw_pkt_seal(pkt);
	card->stats.tx_pkts++;
	card->stats.tx_bytes += fw_pkt_size(pkt);
	fwos_send(card->host, pkt);
}

/* The fabric's length must match the header's before the CRC is trusted. */
static bool fw_pkt_check(struct fw_pkt *pkt, u32 size)
{
	u32 crc;
	bool ok;

	if (size < FW_PKT_HDR_SIZE || size - FW_PKT_HDR_SIZE != pkt->hdr.len)
		return false;
	crc = pkt->hdr.crc;
	pkt->hdr.crc = 0;
	ok = fw_pkt_crc(pkt) == crc;
	pkt->hdr.crc = crc;
	return ok;
}

/* Every packet acknowledges what we received: the ack rides along. */
static void fw_fill_ack(struct fw_peer *peer, struct fw_pkt_hdr *h)
{
	h->ack_epoch = peer->rx_epoch;
	h->ack = peer->rcv_nxt;
	h->err_count = peer->err_tx;
	if (peer->ooo_pending)
		h->flags |= FW_PKT_F_OOO;
	peer->ooo_pending = false;
	peer->ack_pending = false;
	peer->ack_count = 0;
}

static void fw_send_ack(struct fw_card *card, struct fw_peer *peer)
{
	struct fw_pkt *pkt;

	/* Cleared even if no packet can be had: the peer's retry re-asks. */
	peer->ack_pending = false;
	if (!peer->rx_epoch)
		return;
	pkt = fw_pkt_new(card, peer, FW_PKT_ACK, 0, 0, 0);
	if (!pkt)
		return;
	pkt->hdr.epoch = peer->epoch;
	pkt->hdr.seq = peer->snd_nxt;
	fw_fill_ack(peer, &pkt->hdr);
	card->stats.tx_acks++;
	fw_pkt_send(card, pkt);
}

/* The fabric takes the packet it is given: send a fresh copy of the record. */
static void fw_xmit(struct fw_card *card, struct fw_peer *peer, struct fw_srec *rec, u8 flags)
{
	struct fw_pkt *pkt = fwos_pkt_alloc(card->host, rec->pkt->hdr.len);

	if (!pkt)
		return;		/* as good as lost: the timer resends it */
	memcpy(pkt, rec->pkt, fw_pkt_size(rec->pkt));
	pkt->hdr.flags |= flags;
	fw_fill_ack(peer, &pkt->hdr);
	fw_pkt_send(card, pkt);
}

static struct fw_srec *fw_rec_at(struct fw_peer *peer, u32 seq)
{
	return &peer->recs[(peer->rec_head + (seq - peer->snd_una)) % peer->rec_cap];
}

/*
 * Room for one more send record.  The ring starts small and doubles up to
 * the window, so that a peer exchanging small messages costs little.
 */
static bool fw_recs_room(struct fw_card *card, struct fw_peer *peer)
{
	u32 n = peer->snd_nxt - peer->snd_una, cap, i;
	struct fw_srec *recs;

	if (n < peer->rec_cap)
		return true;
	cap = peer->rec_cap ? fw_min_u32(peer->rec_cap * 2, card->cfg.window) :
			      fw_min_u32(4, card->cfg.window);
	recs = fwos_zalloc(card->host, cap * sizeof(*recs));
	if (!recs)
		return false;
	for (i = 0; i < n; i++)
		recs[i] = *fw_rec_at(peer, peer->snd_una + i);
	fwos_free(card->host, peer->recs);
	peer->recs = recs;
	peer->rec_cap = cap;
	peer->rec_head = 0;
	return true;
}

struct fw_op *fw_op_start(struct fw_card *card, struct fw_port *port, u32 dst, u8 kind, u64 tag)
{
	struct fw_peer *peer = fw_peer_get(card, dst);

	return peer ? fw_op_new(card, peer, port, kind, tag) : NULL;
}

void fw_op_go(struct fw_card *card, struct fw_op *op)
{
	op->msg_id = card->next_msg_id++;
	fw_tx_enqueue(op->peer, op);
	fw_tx_flush(card, op->peer);
	fw_peer_rearm(card, op->peer);
}

void fw_tx_enqueue(struct fw_peer *peer, struct fw_op *op)
{
	fw_list_add_tail(&op->q_node, &peer->txq);
	op->queue = FW_OPQ_TX;
}

static bool fw_op_reply(const struct fw_op *op)
{
	return op->kind == FW_OP_ERR || op->kind == FW_OP_RNR;
}

/*
 * Where a reply (ERR, RNR) joins txq: after those queued before it, ahead
 * of data.  Replies go out in the order err_count counted them, or a
 * later one could vouch for an earlier one still on its way.  They all
 * sit among the control packets and the op being cut at the front.
 */
static struct fw_list *fw_reply_point(struct fw_peer *peer)
{
	struct fw_list *n, *at = peer->txq.next;
	bool cut = false;

	for (n = peer->txq.next; n != &peer->txq; n = n->next) {
		const struct fw_op *o = fw_list_entry(n, struct fw_op, q_node);

		if (fw_op_reply(o))
			at = n->next;
		else if (o->kind != FW_OP_ABORT && (cut || !fw_op_sent(o)))
			break;
		else if (o->kind != FW_OP_ABORT)
			cut = true;
	}
	return at;
}

/* A one-packet operation, owing no completion, not queued yet; NULL without memory. */
static struct fw_ctrl_op *fw_ctrl_new(struct fw_card *card, struct fw_peer *peer, u8 kind,
				      u32 lport, u32 rport, u64 msg_id, s32 err)
{
	struct fw_op *op = fw_op_new(card, peer, NULL, kind, 0);

	if (!op)
		return NULL;
	op->done = true;
	op->lport = lport;
	op->dst_port = rport;
	op->msg_id = msg_id;
	fw_ctrl_op(op)->err = err;
	return fw_ctrl_op(op);
}

/*
 * A one-packet operation (ERR or ABORT), queued before @before or last;
 * an ERR behind the replies already queued instead (fw_reply_point()).
 */
void fw_tx_queue_ctrl(struct fw_card *card, struct fw_peer *peer, u8 kind, u32 lport,
		      u32 rport, u64 msg_id, s32 err, struct fw_list *before)
{
	struct fw_ctrl_op *c = fw_ctrl_new(card, peer, kind, lport, rport, msg_id, err);

	if (!c)
		return;		/* the peer's operation will time out instead */
	if (kind == FW_OP_ERR) {
		peer->err_tx++;
		card->stats.err_replies++;
		before = fw_reply_point(peer);
	}
	if (!before)
		before = &peer->txq;
	fw_list_insert(&c->op.q_node, before->prev, before);
	c->op.queue = FW_OPQ_TX;
}

/*
 * Refuse the peer's message @h with @err.  Once per message: its later
 * fragments are dropped quietly.  Queued first, so that the peer's
 * operations waiting for our error count are not held up behind data.
 */
void fw_reply_err(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt_hdr *h,
		  s32 err)
{
	if (h->msg_id == peer->err_msg_id)
		return;
	peer->err_msg_id = h->msg_id;
	fw_tx_queue_ctrl(card, peer, FW_OP_ERR, h->dst_port, h->src_port, h->msg_id, err,
			 peer->txq.next);
}

/*
 * Receiver not ready: the peer's message that @h opens is refused, @why
 * (msg.c).  Counted and queued with the ERRs; the peer learns of refusals
 * in their order.  False if there is no memory for it.
 */
bool fw_reply_rnr(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt_hdr *h,
		  s32 why)
{
	struct fw_ctrl_op *c = fw_ctrl_new(card, peer, FW_OP_RNR, h->dst_port, h->src_port,
					   h->msg_id, why);
	struct fw_list *at;

	if (!c)
		return false;
	c->seq = (u64)h->epoch << 32 | h->seq;
	peer->err_tx++;
	at = fw_reply_point(peer);
	fw_list_insert(&c->op.q_node, at->prev, at);
	c->op.queue = FW_OPQ_TX;
	return true;
}

int fw_ctrl_build(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
		  struct fw_pkt **out)
{
	struct fw_pkt *pkt = fw_pkt_new(card, peer, fw_op_info_of(op->kind)->pkt_type, op->lport,
					op->dst_port, 0);

	if (!pkt)
		return FW_BUILD_NOMEM;
	pkt->hdr.msg_id = op->msg_id;
	pkt->hdr.err = fw_ctrl_op(op)->err;
	pkt->hdr.roff = fw_ctrl_op(op)->seq;
	op->all_sent = true;
	*out = pkt;
	return FW_BUILD_PKT;
}

/*
 * Time the tail-loss probe from @now, while packets are unacknowledged and
 * none was probed since the last progress: the round trip as learnt, with
 * its variation (srtt + 4 rttvar, at least 2 srtt) and the receiver's ack
 * delay, but not the floor rto_ns nor the backoff, if that is before the
 * timeout.  Not before an RTT is known (nor with rto_fixed): the timeout
 * alone, as before.
 */
static void fw_tlp_arm(struct fw_card *card, struct fw_peer *peer, u64 now)
{
	u64 pto;

	peer->tlp_at = FW_NEVER;
	if (!peer->rtt_valid || peer->tlp_sent || peer->snd_una == peer->snd_nxt)
		return;
	pto = peer->rttvar > FW_U64_MAX >> 2 ? FW_U64_MAX : peer->rttvar << 2;
	pto = fw_max_u64(fw_add_sat(peer->srtt, pto), fw_add_sat(peer->srtt, peer->srtt));
	pto = fw_add_sat(pto, card->cfg.ack_delay_ns);
	if (fw_add_sat(now, pto) < peer->rto_at)
		peer->tlp_at = fw_add_sat(now, pto);
}

/* Build and send packets while the window has room. */
void fw_tx_flush(struct fw_card *card, struct fw_peer *peer)
{
	u64 now = fwos_now(card->host);

	while (!fw_list_empty(&peer->txq) && peer->snd_nxt - peer->snd_una < card->cfg.window) {
		struct fw_op *op = fw_list_entry(peer->txq.next, struct fw_op, q_node);
		struct fw_pkt *pkt = NULL;
		struct fw_srec *rec;
		u8 flags = 0;
		int r;

		/* A new message waits behind a refused one of its port pair. */
		if (op->kind == FW_OP_SEND && !fw_op_sent(op) && !fw_list_empty(&peer->rnrq) &&
		    fw_msg_rnr_hold(card, peer, op))
			continue;
		r = fw_recs_room(card, peer) ?
		    fw_op_info_of(op->kind)->build(card, peer, op, &pkt) : FW_BUILD_NOMEM;
		if (r == FW_BUILD_NOMEM) {
			/* The retransmission timer tries again. */
			if (peer->rto_at == FW_NEVER)
				peer->rto_at = fw_add_sat(now, peer->rto);
			break;
		}
		if (r == FW_BUILD_GONE)
			continue;
		rec = fw_rec_at(peer, peer->snd_nxt);
		pkt->hdr.epoch = peer->epoch;
		pkt->hdr.seq = peer->snd_nxt++;
		if (peer->syn) {
			pkt->hdr.flags |= FW_PKT_F_SYN;
			peer->syn = false;
		}
		rec->pkt = pkt;
		rec->op = op;
		rec->ts = now;
		rec->tries = 1;
		op->nrec++;
		if (op->kind == FW_OP_SEND && !pkt->hdr.offset) {
			/* A new attempt: it ends any refusal of the last one. */
			fw_send_op(op)->rnr_seq = pkt->hdr.seq;
			fw_send_op(op)->rnr_named = false;
		}
		if (!peer->rtt_timing && !card->cfg.rto_fixed) {
			peer->rtt_timing = true;
			peer->rtt_seq = pkt->hdr.seq;
			peer->rtt_ts = now;
		}
		if (op->all_sent) {
			fw_op_unqueue(op);
			if (fw_op_is(op, FW_OPF_REQUEST))
				fw_peer_pending_add(card, peer, op);
		}
		/*
		 * Ask for an ack at once when the window is full, or when the
		 * queue ran dry and no earlier request is still on its way: a
		 * lone message completes in one round trip, and a stream of
		 * commands arriving one by one does not get one ack per packet.
		 */
		if (peer->snd_nxt - peer->snd_una == card->cfg.window ||
		    (fw_list_empty(&peer->txq) &&
		     !(peer->ackreq_out && !fw_seq_before(peer->ackreq_seq, peer->snd_una)))) {
			flags = FW_PKT_F_ACKREQ;
			peer->ackreq_out = true;
			peer->ackreq_seq = rec->pkt->hdr.seq;
		}
		fw_xmit(card, peer, rec, flags);
		if (peer->rto_at == FW_NEVER)
			peer->rto_at = fw_add_sat(now, peer->rto);
		/* The tail moved: a probe is about the new last packet. */
		fw_tlp_arm(card, peer, now);
	}
}

/* Whether the ERRs that the acknowledgment of @op vouched for are in. */
static bool fw_op_settled(const struct fw_peer *peer, const struct fw_op *op)
{
	if (!op->need_err)
		return true;
	return op->need_epoch == peer->rx_epoch && !fw_seq_before(peer->err_rx, op->need_err);
}

static void fw_pending_settle(struct fw_card *card, struct fw_peer *peer)
{
	struct fw_list *n, *next;

	for (n = peer->pending.next; n != &peer->pending; n = next) {
		struct fw_op *op = fw_list_entry(n, struct fw_op, q_node);

		next = n->next;
		if (!fw_op_is(op, FW_OPF_REQUEST) && fw_op_settled(peer, op))
			fw_op_finish(card, op, 0, fw_xfer_op(op)->cur.len);
	}
}

/* The last send record of @op was acknowledged by a packet with header @h. */
static void fw_op_acked(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
			const struct fw_pkt_hdr *h)
{
	if (op->nrec || !op->all_sent) {
		fw_op_put(card, op);
		return;
	}
	op->acked = true;
	op->need_epoch = h->epoch;
	op->need_err = h->err_count;
	if (!op->done && fw_op_is(op, FW_OPF_ACKED)) {
		if (fw_op_settled(peer, op))
			fw_op_finish(card, op, 0, fw_xfer_op(op)->cur.len);
		else
			fw_peer_pending_add(card, peer, op);
		return;
	}
	fw_op_put(card, op);
}

/*
 * RFC 6298 with its gains as shifts: srtt moves 1/8 of the way to the
 * sample r, rttvar 1/4 of the way to |srtt - r| when that is larger, but
 * only 1/16 when smaller, so that a spell of delays (a card's thread not
 * scheduled for a while) keeps the timeout up for a while after it.
 */
static void fw_rtt_sample(struct fw_card *card, struct fw_peer *peer, u64 r)
{
	u64 rto;

	if (!peer->rtt_valid) {
		peer->srtt = r;
		peer->rttvar = r >> 1;
		peer->rtt_valid = true;
	} else {
		u64 d = r > peer->srtt ? r - peer->srtt : peer->srtt - r;

		if (d > peer->rttvar)
			peer->rttvar = peer->rttvar - (peer->rttvar >> 2) + (d >> 2);
		else
			peer->rttvar = peer->rttvar - (peer->rttvar >> 4) + (d >> 4);
		peer->srtt = peer->srtt - (peer->srtt >> 3) + (r >> 3);
	}
	rto = peer->rttvar > FW_U64_MAX >> 2 ? FW_U64_MAX : peer->rttvar << 2;
	rto = fw_add_sat(peer->srtt, rto);
	peer->rto_base = fw_max_u64(card->cfg.rto_ns, fw_min_u64(rto, card->cfg.rto_max_ns));
}

/* Resend everything unacknowledged, from snd_una: go-back-N. */
static void fw_resend_all(struct fw_card *card, struct fw_peer *peer, u64 now)
{
	u32 n = peer->snd_nxt - peer->snd_una;
	u32 i;

	peer->rtt_timing = false;	/* Karn: its acknowledgment would be ambiguous */
	peer->fr_active = true;		/* reports of the same hole are stale now */
	peer->fr_una = peer->snd_una;
	for (i = 0; i < n; i++) {
		struct fw_srec *rec = fw_rec_at(peer, peer->snd_una + i);

		rec->ts = now;
		rec->tries++;
		card->stats.retransmits++;
		fw_xmit(card, peer, rec, i == n - 1 ? FW_PKT_F_ACKREQ : 0);
	}
}

/*
 * The peer reports a packet dropped out of order, so the one at @h->ack
 * (snd_una) is lost or late: resend from there now rather than after the
 * timeout (which an adaptive one makes longer), once per hole: until
 * snd_una moves, further reports are about what was sent before the
 * resend.  Neither the retry count nor the backoff is touched.
 */
static void fw_fast_retransmit(struct fw_card *card, struct fw_peer *peer,
			       const struct fw_pkt_hdr *h, u64 now)
{
	if (!(h->flags & FW_PKT_F_OOO) || h->ack_epoch != peer->epoch || h->ack != peer->snd_una ||
	    peer->snd_una == peer->snd_nxt || (peer->fr_active && peer->fr_una == peer->snd_una))
		return;
	card->stats.fast_retransmits++;
	fw_resend_all(card, peer, now);
	peer->rto_at = fw_add_sat(now, peer->rto);
	fw_tlp_arm(card, peer, now);
}

/*
 * Nothing acknowledged for a probe's time: resend the last packet asking
 * for an ack at once.  Whatever was lost, the answer tells (see the top of
 * the file); its report is about what the peer has now, so a hole it names
 * gets a fast retransmit even where one was made already.  The timeout
 * restarts: the probe is the packet it now waits for.
 */
static void fw_tail_probe(struct fw_card *card, struct fw_peer *peer, u64 now)
{
	u32 seq = peer->snd_nxt - 1;
	struct fw_srec *rec = fw_rec_at(peer, seq);

	peer->tlp_at = FW_NEVER;
	peer->tlp_sent = true;
	if (peer->rtt_timing && peer->rtt_seq == seq)
		peer->rtt_timing = false;	/* Karn */
	peer->fr_active = false;
	rec->ts = now;
	rec->tries++;
	card->stats.retransmits++;
	card->stats.tail_probes++;
	fw_xmit(card, peer, rec, FW_PKT_F_ACKREQ);
	peer->rto_at = fw_add_sat(now, peer->rto);
}

static void fw_ack_rx(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt_hdr *h,
		      u64 now)
{
	u32 adv = h->ack - peer->snd_una;
	u32 i;

	if (h->ack_epoch != peer->epoch || !adv || adv > peer->snd_nxt - peer->snd_una) {
		fw_fast_retransmit(card, peer, h, now);
		return;
	}
	for (i = 0; i < adv; i++) {
		struct fw_srec *rec = &peer->recs[peer->rec_head];
		struct fw_op *op = rec->op;

		fwos_pkt_free(card->host, rec->pkt);
		rec->pkt = NULL;
		rec->op = NULL;
		if (++peer->rec_head == peer->rec_cap)
			peer->rec_head = 0;
		peer->snd_una++;
		op->nrec--;
		fw_op_acked(card, peer, op, h);
	}
	/*
	 * Progress: the backoff starts over, and, if the timed packet is in,
	 * a measurement of what the timer, restarted on each progress, had
	 * to wait for it: since it left, or since the last progress if later
	 * (a packet queued behind a window is not late for that).
	 */
	if (peer->rtt_timing && fw_seq_before(peer->rtt_seq, peer->snd_una)) {
		peer->rtt_timing = false;
		fw_rtt_sample(card, peer, now - fw_max_u64(peer->rtt_ts, peer->progress_at));
	}
	peer->progress_at = now;
	peer->retries = 0;
	peer->rto = peer->rto_base;
	peer->rto_at = peer->snd_una == peer->snd_nxt ? FW_NEVER : fw_add_sat(now, peer->rto);
	peer->tlp_sent = false;
	fw_tlp_arm(card, peer, now);
	fw_fast_retransmit(card, peer, h, now);
}

int fw_stream_rx_err(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	struct fw_list *n;

	peer->err_rx++;
	for (n = peer->ops.next; n != &peer->ops; n = n->next) {
		struct fw_op *op = fw_list_entry(n, struct fw_op, peer_node);

		if (op->msg_id == h->msg_id && fw_op_is(op, FW_OPF_COMMAND) && !op->done) {
			fw_op_finish(card, op, h->err < 0 ? h->err : -EIO, 0);
			break;
		}
	}
	fw_pending_settle(card, peer);
	return FW_RX_DONE;
}

/*
 * A SEND that failed with the peer's old stream, whose RNR about it may
 * still come (the peer keeps those): completed, but kept on pending until
 * the replies the peer owed when it restarted, @err_count of its new
 * epoch, are in, so that msg.c can let the peer go on if it refused it.
 */
static void fw_send_zombie(struct fw_card *card, struct fw_op *op, u32 epoch, u32 err_count)
{
	struct nicoff_cqe cqe;

	if (op->port) {
		memset(&cqe, 0, sizeof(cqe));
		cqe.tag = op->cmd_tag;
		cqe.status = -ECONNRESET;
		cqe.opcode = NICOFF_OP_SEND;
		fw_post(card, op->port->id, &cqe);
	}
	op->done = true;
	op->need_epoch = epoch;
	op->need_err = err_count;
}

/*
 * The peer's stream is in epoch @epoch now (@err_count: replies it owes
 * so far): what it owed us from an earlier one, the operations vouched
 * for there, is gone with it.
 */
static void fw_pending_reset(struct fw_card *card, struct fw_peer *peer, u32 epoch,
			     u32 err_count)
{
	struct fw_list *n, *next;

	for (n = peer->pending.next; n != &peer->pending; n = next) {
		struct fw_op *op = fw_list_entry(n, struct fw_op, q_node);

		next = n->next;
		if (!op->acked || op->need_epoch == epoch)
			continue;
		if (op->kind == FW_OP_SEND && !op->done)
			fw_send_zombie(card, op, epoch, err_count);
		else
			fw_op_finish(card, op, -ECONNRESET, 0);
	}
}

/*
 * The peer opened epoch @epoch (@err_count: replies it owes so far).  If
 * it had another before, it failed its connection to us and dropped what
 * it owed us: messages it was sending, GET answers and ERRs of the old
 * epoch (not its RNRs).
 */
static void fw_rx_sync(struct fw_card *card, struct fw_peer *peer, u32 epoch, u32 seq,
		       u32 err_count)
{
	bool reset = peer->rx_epoch;

	peer->rx_prev_epoch = peer->rx_epoch;
	peer->rx_epoch = epoch;
	peer->rcv_nxt = seq;
	peer->err_rx = 0;
	peer->err_msg_id = 0;
	peer->rnr_msg_id = 0;
	if (reset) {
		fw_msg_abort_peer(card, peer, -ECONNRESET);
		fw_msg_peer_reset(card, peer);
		fw_pending_reset(card, peer, epoch, err_count);
	}
	fw_pending_settle(card, peer);
}

/*
 * An ACK from the peer's stream epoch @h->epoch.  A peer that failed its
 * connection to us and has nothing more to send never opens its new epoch
 * with us: when our probe (fw_peer_probe()) is answered from a later
 * epoch than what we wait for, that is gone, as fw_rx_sync() would say.
 * A late ACK of an earlier epoch says nothing.
 */
static void fw_ack_epoch(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt_hdr *h)
{
	struct fw_list *n;
	bool later = false;

	/* Only after a probe: every other ACK stays off the pending list. */
	if (!peer->mute_rounds || !h->epoch || !fw_peer_owed(peer))
		return;
	if (peer->rx_epoch && fw_seq_before(peer->rx_epoch, h->epoch) &&
	    !fw_list_empty(&peer->rx_msgs)) {
		fw_msg_abort_peer(card, peer, -ECONNRESET);
		card->stats.epoch_resets++;
	}
	for (n = peer->pending.next; n != &peer->pending && !later; n = n->next) {
		const struct fw_op *op = fw_list_entry(n, struct fw_op, q_node);

		later = op->acked && fw_seq_before(op->need_epoch, h->epoch);
	}
	if (later) {
		fw_pending_reset(card, peer, h->epoch, h->err_count);
		card->stats.epoch_resets++;
	}
	fw_pending_settle(card, peer);
}

int fw_stream_rx_rnr(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	peer->err_rx++;
	/* Before settling: the op it refuses must not complete. */
	fw_msg_rx_rnr(card, peer, &pkt->hdr);
	fw_pending_settle(card, peer);
	return FW_RX_DONE;
}

/* A sequenced packet: accept it in order or drop it.  Whether to ack now. */
static bool fw_rx_seq(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt, u64 now)
{
	struct fw_pkt_hdr *h = &pkt->hdr;
	bool ackreq = h->flags & FW_PKT_F_ACKREQ;
	int (*deliver)(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);
	int verdict;

	if (h->epoch != peer->rx_epoch) {
		if (!(h->flags & FW_PKT_F_SYN) || !h->epoch || h->epoch == peer->rx_prev_epoch) {
			card->stats.stale++;
			fwos_pkt_free(card->host, pkt);
			return false;
		}
		fw_rx_sync(card, peer, h->epoch, h->seq, h->err_count);
	}
	if (h->seq != peer->rcv_nxt) {
		if (fw_seq_before(h->seq, peer->rcv_nxt)) {
			card->stats.duplicates++;
		} else {
			card->stats.out_of_order++;
			peer->ooo_pending = true;	/* the sender resends at once */
		}
		fwos_pkt_free(card->host, pkt);
		peer->ack_pending = true;	/* tell the sender where we are */
		return true;
	}
	deliver = fw_pkt_info_of(h->type)->deliver;
	verdict = deliver ? deliver(card, peer, pkt) : FW_RX_DONE;
	if (verdict == FW_RX_RNR) {
		/* No room: no ack, the sender's retransmission retries. */
		card->stats.rnr_drops++;
		fwos_pkt_free(card->host, pkt);
		return false;
	}
	if (verdict == FW_RX_DONE)
		fwos_pkt_free(card->host, pkt);
	peer->rcv_nxt++;
	peer->wd_base = now;
	peer->mute_rounds = 0;
	if (!peer->ack_pending) {
		peer->ack_pending = true;
		peer->ack_at = fw_add_sat(now, card->cfg.ack_delay_ns);
	}
	peer->ack_count++;
	return ackreq || peer->ack_count >= fw_max_u64(1, card->cfg.window / 4);
}

void fw_rx(struct fw_card *card, struct fw_pkt *pkt, u32 size)
{
	const struct fw_pkt_info *pt;

	if (!fw_pkt_check(pkt, size)) {
		card->stats.crc_errors++;
		fwos_pkt_free(card->host, pkt);
		return;
	}
	pt = fw_pkt_info_of(pkt->hdr.type);
	if (!pt) {
		card->stats.bad_packets++;
		fwos_pkt_free(card->host, pkt);
		return;
	}
	if ((pkt->hdr.dst_node != card->cfg.node &&
	     (pkt->hdr.dst_node != FW_NODE_ANY || !pt->multicast)) ||
	    ((pkt->hdr.flags & FW_PKT_F_NOCRC) && !pt->multicast)) {
		fwos_pkt_free(card->host, pkt);
		return;
	}
	pt->engine->rx(card, pkt);
}

/* A packet of the go-back-N stream (or an ACK of it) for this card. */
void fw_stream_rx(struct fw_card *card, struct fw_pkt *pkt)
{
	struct fw_peer *peer;
	bool ack_now = false;
	u64 now;

	card->stats.rx_pkts++;
	card->stats.rx_bytes += fw_pkt_size(pkt);
	peer = fw_peer_get(card, pkt->hdr.src_node);
	if (!peer) {
		fwos_pkt_free(card->host, pkt);
		return;
	}
	now = fwos_now(card->host);
	fw_ack_rx(card, peer, &pkt->hdr, now);
	if (pkt->hdr.type == FW_PKT_ACK) {
		card->stats.rx_acks++;
		fw_ack_epoch(card, peer, &pkt->hdr);
		fwos_pkt_free(card->host, pkt);
	} else {
		ack_now = fw_rx_seq(card, peer, pkt, now);
	}
	fw_tx_flush(card, peer);
	if (ack_now && peer->ack_pending)
		fw_send_ack(card, peer);
	fw_peer_rearm(card, peer);
}

/*
 * Give up on the peer: every operation with it fails with @status, what we
 * owed it is dropped, and our stream restarts in a new epoch.
 */
static void fw_peer_fail(struct fw_card *card, struct fw_peer *peer, s32 status)
{
	u32 n = peer->snd_nxt - peer->snd_una;
	struct fw_list *node, *next;
	u32 i;

	card->stats.conn_failures++;
	for (i = 0; i < n; i++) {
		struct fw_srec *rec = fw_rec_at(peer, peer->snd_una + i);

		fwos_pkt_free(card->host, rec->pkt);
		rec->op->nrec--;
		rec->pkt = NULL;
		rec->op = NULL;
	}
	for (node = peer->ops.next; node != &peer->ops; node = next) {
		struct fw_op *op = fw_list_entry(node, struct fw_op, peer_node);

		next = node->next;
		if (op->kind != FW_OP_RNR)	/* still owed: below */
			fw_op_finish(card, op, status, 0);
	}
	if (!++peer->epoch)
		peer->epoch = 1;
	peer->snd_una = card->cfg.initial_seq;
	peer->snd_nxt = card->cfg.initial_seq;
	peer->rec_head = 0;
	peer->retries = 0;
	peer->err_tx = 0;
	peer->syn = true;
	peer->ackreq_out = false;
	peer->rto = card->cfg.rto_ns;
	peer->rto_at = FW_NEVER;
	peer->tlp_at = FW_NEVER;
	peer->tlp_sent = false;
	peer->rto_base = card->cfg.rto_ns;
	peer->rtt_timing = false;
	peer->rtt_valid = false;
	peer->fr_active = false;
	peer->rnr_at = FW_NEVER;	/* every op failed: rnrq is empty */
	/*
	 * Receiver-not-ready replies stay owed: the peer's stream to us goes
	 * on, its messages we refused must not pass for delivered, and our
	 * refusals of their port pairs stand.  They go first in the new
	 * epoch, in their order, whenever it starts.
	 */
	for (node = peer->ops.next; node != &peer->ops; node = node->next) {
		struct fw_op *op = fw_list_entry(node, struct fw_op, peer_node);

		if (op->kind != FW_OP_RNR)
			continue;
		fw_op_unqueue(op);
		fw_list_add_tail(&op->q_node, &peer->txq);
		op->queue = FW_OPQ_TX;
		op->all_sent = false;
		peer->err_tx++;
	}
	fw_msg_abort_peer(card, peer, status);
}

static void fw_peer_rto(struct fw_card *card, struct fw_peer *peer, u64 now)
{
	card->stats.timeouts++;
	peer->rtt_timing = false;	/* Karn: its acknowledgment would be ambiguous */
	if (peer->retries >= card->cfg.max_retries) {
		fw_peer_fail(card, peer, -ETIMEDOUT);
		return;
	}
	peer->retries++;
	peer->rto = fw_backoff(&card->cfg, peer->rto);
	fw_resend_all(card, peer, now);
	peer->rto_at = fw_add_sat(now, peer->rto);
	peer->tlp_at = FW_NEVER;	/* the probe did not help: timeouts until progress */
}

/*
 * The peer owes us a reply and has said nothing for dead_ns: ask it.
 * Silence alone proves nothing: a card its host did not run for a while
 * (a stalled card thread, ours or the peer's) hears nothing either.  The
 * question is a PROBE on our stream, or whatever of ours is out already;
 * the peer is dead when that goes unanswered for the stream's whole retry
 * budget (fw_peer_rto()), as the barrier and broadcast engines also ask
 * before they give up on a member.  One that answers from a later epoch
 * lost what it owed (fw_ack_epoch()).  One that answers but owes still
 * after as many rounds as a stream has retries has lost it some other way
 * (a card restarted under an epoch it used before): given up as well.
 */
static void fw_peer_probe(struct fw_card *card, struct fw_peer *peer, u64 now)
{
	peer->wd_base = now;
	if (++peer->mute_rounds > card->cfg.max_retries) {
		fw_peer_fail(card, peer, -ETIMEDOUT);
		return;
	}
	if (peer->snd_una != peer->snd_nxt)
		return;
	card->stats.silence_probes++;
	fw_tx_queue_ctrl(card, peer, FW_OP_PROBE, 0, 0, 0, 0, peer->txq.next);
	fw_tx_flush(card, peer);
}

void fw_peer_rearm(struct fw_card *card, struct fw_peer *peer)
{
	u64 d = fw_min_u64(peer->rto_at, peer->tlp_at);

	if (peer->ack_pending)
		d = fw_min_u64(d, peer->ack_at);
	d = fw_min_u64(d, peer->rnr_at);
	if (fw_peer_owed(peer))
		d = fw_min_u64(d, fw_add_sat(peer->wd_base, card->dead_ns));
	fw_timer_set(&card->timers, &peer->timer, d);
}

void fw_peer_timer(struct fw_card *card, struct fw_peer *peer, u64 now)
{
	/* Before the timeout, which it restarts: a card that ran late probes first. */
	if (peer->tlp_at <= now) {
		if (peer->snd_una != peer->snd_nxt)
			fw_tail_probe(card, peer, now);
		else
			peer->tlp_at = FW_NEVER;
	}
	if (peer->rto_at <= now) {
		if (peer->snd_una != peer->snd_nxt) {
			fw_peer_rto(card, peer, now);
		} else {
			peer->rto_at = FW_NEVER;
			fw_tx_flush(card, peer);
		}
	}
	if (peer->rnr_at <= now) {
		/* Refused messages due to go again, or to fail. */
		fw_msg_rnr_run(card, peer, now);
		fw_tx_flush(card, peer);
	}
	if (peer->ack_pending && peer->ack_at <= now)
		fw_send_ack(card, peer);
	if (fw_peer_owed(peer) && fw_add_sat(peer->wd_base, card->dead_ns) <= now)
		fw_peer_probe(card, peer, now);
	fw_peer_rearm(card, peer);
}

/* The card is going: drop everything of the peer, completing nothing. */
void fw_peer_release(struct fw_card *card, struct fw_peer *peer)
{
	u32 n = peer->snd_nxt - peer->snd_una;
	struct fw_list *node, *next;
	u32 i;

	for (i = 0; i < n; i++) {
		struct fw_srec *rec = fw_rec_at(peer, peer->snd_una + i);

		fwos_pkt_free(card->host, rec->pkt);
		rec->op->nrec--;
	}
	peer->snd_una = peer->snd_nxt;
	for (node = peer->ops.next; node != &peer->ops; node = next) {
		struct fw_op *op = fw_list_entry(node, struct fw_op, peer_node);

		next = node->next;
		op->done = true;
		fw_op_unqueue(op);
		fw_op_put(card, op);
	}
	fw_msg_peer_reset(card, peer);
}
