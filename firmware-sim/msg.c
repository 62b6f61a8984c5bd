// SPDX-License-Identifier: GPL-2.0
/*
 * Two-sided messages.  A SEND is cut into mtu-sized DATA fragments, built
 * from host memory only when the window has room.  On the receiving card a
 * message is matched at its first fragment against the port's posted
 * receives (GM's receive tokens) in posting order, and its fragments are
 * written straight into the matched buffer.  A message nobody waits for is
 * buffered as long as the port's unexpected_bytes and the card's
 * card_unexpected_bytes (the sum over its ports) allow; a later RECV takes
 * the oldest compatible one.  Its memory is reserved in full when its first
 * fragment arrives, charged to the port, and each fragment is copied into
 * it (the packet goes back at once): what a port holds is what it was
 * charged for, and a message that fits never runs out of memory half way.
 * Fragments of one message arrive in order on one connection, and those of
 * two messages never interleave, so a message is reassembled by appending.
 *
 * Receiver not ready, after InfiniBand's RNR NAK.  A first fragment that
 * finds no posted receive and no room in the unexpected budgets (or no
 * memory for the message) is
 * accepted in the stream (acknowledged: the connection, shared by every
 * port, keeps moving) but its message is refused: an RNR reply, reliable
 * and counted like an ERR, and the rest of the message is dropped.  The
 * port pair (peer, source port, this port) is then blocked at that
 * message: every later message of the pair is refused too (RNR -EAGAIN)
 * until the awaited one comes again, to be judged afresh, or its sender
 * aborts it.  So messages of one port pair are still matched in the order
 * they were sent, and other pairs are not held up.
 *
 * The sender takes a refused message back, with every later message of
 * the same pair that it has sent or begun since (they will be refused),
 * and holds new ones of the pair behind it (peer->rnrq, one run per pair
 * in message order).  A message refused for lack of room goes again after
 * a backoff, rto_ns doubling up to rto_max_ns; those behind it follow it
 * at once.  A message that has been waiting for the connection's retry
 * budget (the sum of max_retries + 1 backed-off timeouts from rto_ns)
 * since it was first refused or held fails with -ENOBUFS, alone: an ABORT
 * tells the receiver not to wait for it, the connection's retry count is
 * never touched, and other pairs' messages go on meanwhile.  Without
 * memory for the reply or the block, the receiver falls back to dropping
 * the packet unacknowledged, as if it were lost.
 */
#include "card.h"

/*
 * An unexpected message's bytes are kept in chunks of FW_UNEXP_CHUNK,
 * each a separate allocation that fits a page.  It is charged what they
 * take from an allocator that rounds up to powers of two, and at least
 * FW_UNEXP_MIN_CHARGE, which covers its record: so that what a port
 * holds stays close to its budget whatever the sizes (fw_unexp_charge()).
 */
#define FW_UNEXP_MIN_CHARGE	512u
#define FW_UNEXP_CHUNK_SHIFT	12
#define FW_UNEXP_CHUNK		FW_BIT(FW_UNEXP_CHUNK_SHIFT)

/* A port pair of a peer's whose messages we refuse until one comes again. */
struct fw_rblock {
	struct fw_list node;		/* peer->rblocks */
	u32 src_port;			/* the peer's port */
	u32 dst_port;			/* ours (it may close and open again meanwhile) */
	u64 msg_id;			/* refused for lack of room; awaited */
};

static bool fw_same_pair(const struct fw_op *a, const struct fw_op *b)
{
	return a->lport == b->lport && a->dst_port == b->dst_port;
}

static int fw_msg_send(struct fw_card *card, struct fw_port *port,
		       const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_send *s = &cmd->send;
	struct fw_send_op *so;
	struct fw_cursor cur;
	struct fw_op *op;
	u64 span;
	int ret;

	if (s->reserved0 || s->reserved1 || s->dst_card >= card->cfg.num_nodes)
		return -EINVAL;
	if (s->len > card->cfg.max_msg)
		return -EMSGSIZE;
	fw_cursor_init(&cur, s->off, s->len);
	if (!fw_cursor_span(&cur, &span))
		return -ERANGE;
	/* Check the whole range now: a bad region sends nothing. */
	ret = fwos_mem_read(card->host, port->id, s->mr, 0, span, NULL, 0);
	if (ret)
		return ret;
	op = fw_op_start(card, port, s->dst_card, FW_OP_SEND, cmd->tag);
	if (!op)
		return -ENOMEM;
	so = fw_send_op(op);
	op->dst_port = s->dst_port;
	so->x.key = s->mr;
	so->x.cur = cur;
	so->msg_tag = s->msg_tag;
	fw_op_go(card, op);
	return 0;
}

int fw_msg_build(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
		 struct fw_pkt **out)
{
	struct fw_send_op *so = fw_send_op(op);
	struct fw_cursor *cur = &so->x.cur;
	u64 at;
	u32 frag = (u32)fw_cursor_next(cur, card->cfg.mtu, &at);
	struct fw_pkt *pkt = fw_pkt_new(card, peer, FW_PKT_DATA, op->lport, op->dst_port, frag);
	int ret = 0;

	if (!pkt)
		return FW_BUILD_NOMEM;
	pkt->hdr.msg_id = op->msg_id;
	pkt->hdr.offset = cur->pos;
	pkt->hdr.total = cur->len;
	pkt->hdr.tag = so->msg_tag;
	if (frag)
		ret = fwos_mem_read(card->host, op->lport, so->x.key, 0, at, pkt->payload, frag);
	if (ret) {
		fwos_pkt_free(card->host, pkt);
		/*
		 * The region went away half way: the peer drops what it has;
		 * or the peer refused it and waits for it to come again.
		 */
		if (cur->pos || so->rnr_named)
			fw_tx_queue_ctrl(card, peer, FW_OP_ABORT, op->lport, op->dst_port,
					 op->msg_id, 0, &op->q_node);
		fw_op_finish(card, op, ret, 0);
		return FW_BUILD_GONE;
	}
	fw_cursor_advance(cur, frag);
	op->all_sent = fw_cursor_done(cur);
	*out = pkt;
	return FW_BUILD_PKT;
}

static bool fw_recv_match(const struct fw_recv *r, u32 src, u32 sport, u64 tag)
{
	return (r->src_card == NICOFF_ANY || r->src_card == src) &&
	       (r->src_port == NICOFF_ANY || r->src_port == sport) &&
	       !((tag ^ r->tag) & r->tag_mask);
}

static void fw_recv_complete(struct fw_card *card, const struct fw_rmsg *rm, s32 status,
			     u64 result)
{
	struct nicoff_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.tag = rm->recv->cmd_tag;
	cqe.status = status;
	cqe.opcode = NICOFF_OP_RECV;
	cqe.result = result;
	cqe.src_card = rm->src_node;
	cqe.src_port = rm->src_port;
	cqe.msg_tag = rm->msg_tag;
	fw_post(card, rm->port->id, &cqe);
}

static u64 fw_unexp_charge(u64 total)
{
	u64 tail = total & (FW_UNEXP_CHUNK - 1), c = total - tail;

	if (tail) {
		u64 p = 1;

		while (p < tail)
			p <<= 1;
		c += p;
	}
	return fw_max_u64(c, FW_UNEXP_MIN_CHARGE);
}

static u64 fw_unexp_nchunks(u64 total)
{
	return (total >> FW_UNEXP_CHUNK_SHIFT) + !!(total & (FW_UNEXP_CHUNK - 1));
}

static void fw_rmsg_chunks_free(struct fw_card *card, struct fw_rmsg *rm)
{
	u64 i, n = fw_unexp_nchunks(rm->total);

	if (!rm->chunks)
		return;
	for (i = 0; i < n; i++)
		fwos_free(card->host, rm->chunks[i]);
	fwos_free(card->host, rm->chunks);
	rm->chunks = NULL;
}

/* Memory for all of an unexpected message, or -ENOMEM and none. */
static int fw_rmsg_reserve(struct fw_card *card, struct fw_rmsg *rm)
{
	u64 i, n = fw_unexp_nchunks(rm->total);

	if (!n)
		return 0;
	if (n > FW_U32_MAX)
		return -ENOMEM;
	rm->chunks = fwos_zalloc(card->host, n * sizeof(*rm->chunks));
	if (!rm->chunks)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		u64 len = fw_min_u64(FW_UNEXP_CHUNK, rm->total - (i << FW_UNEXP_CHUNK_SHIFT));

		rm->chunks[i] = fwos_zalloc(card->host, len);
		if (!rm->chunks[i]) {
			fw_rmsg_chunks_free(card, rm);
			return -ENOMEM;
		}
	}
	return 0;
}

/* Append a fragment to an unexpected message; it fits (fw_msg_rx_data). */
static void fw_rmsg_copy_in(struct fw_rmsg *rm, u64 foff, const u8 *data, u32 len)
{
	while (len) {
		u32 in = (u32)(foff & (FW_UNEXP_CHUNK - 1));
		u32 n = fw_min_u32(len, FW_UNEXP_CHUNK - in);

		memcpy(rm->chunks[foff >> FW_UNEXP_CHUNK_SHIFT] + in, data, n);
		foff += n;
		data += n;
		len -= n;
	}
}

static void fw_rmsg_uncharge(struct fw_card *card, struct fw_rmsg *rm)
{
	rm->port->unexp_used -= rm->charge;
	card->unexp_used -= rm->charge;
	rm->charge = 0;
}

static void fw_rmsg_free(struct fw_card *card, struct fw_rmsg *rm)
{
	fw_rmsg_chunks_free(card, rm);
	fw_rmsg_uncharge(card, rm);
	fw_list_del(&rm->peer_node);
	fw_list_del(&rm->port_node);
	fwos_free(card->host, rm->recv);
	fwos_free(card->host, rm);
}

/* Copy what fits of a fragment into the receive buffer; drop the rest. */
static void fw_msg_write(struct fw_card *card, struct fw_rmsg *rm, u64 foff, const void *data,
			 u32 len)
{
	const struct fw_recv *r = rm->recv;
	u64 at;
	u32 n;
	int ret;

	if (rm->status || foff >= r->cur.len)
		return;
	n = (u32)fw_cursor_piece(&r->cur, foff, len, &at);
	if (!n)
		return;
	ret = fwos_mem_write(card->host, rm->port->id, r->mr, NICOFF_ACCESS_LOCAL_WRITE, at, data,
			     n);
	if (ret)
		rm->status = ret;
}

static void fw_msg_deliver(struct fw_card *card, struct fw_rmsg *rm)
{
	s32 status = rm->status;

	if (!status && rm->total > rm->recv->cur.len)
		status = -EMSGSIZE;
	fw_recv_complete(card, rm, status, rm->total);
	fw_rmsg_free(card, rm);
}

/* The message will not be finished: its receive completes with @status. */
static void fw_msg_abort(struct fw_card *card, struct fw_rmsg *rm, s32 status)
{
	if (rm->recv)
		fw_recv_complete(card, rm, status, rm->rcvd);
	fw_rmsg_free(card, rm);
}

/* An unexpected message meets its receive. */
static void fw_msg_bind(struct fw_card *card, struct fw_port *port, struct fw_rmsg *rm,
			struct fw_recv *recv)
{
	u64 off, i;

	fw_list_del(&rm->port_node);
	fw_rmsg_uncharge(card, rm);
	rm->recv = recv;
	for (off = 0, i = 0; off < rm->rcvd; off += FW_UNEXP_CHUNK, i++)
		fw_msg_write(card, rm, off, rm->chunks[i],
			     (u32)fw_min_u64(FW_UNEXP_CHUNK, rm->rcvd - off));
	fw_rmsg_chunks_free(card, rm);
	if (rm->rcvd == rm->total)
		fw_msg_deliver(card, rm);
	else
		fw_list_add_tail(&rm->port_node, &port->bound);
}

static int fw_msg_recv(struct fw_card *card, struct fw_port *port,
		       const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_recv *r = &cmd->recv;
	struct fw_recv *recv;
	struct fw_cursor cur;
	struct fw_list *n;
	u64 span;
	int ret;

	if (r->reserved0 || (r->src_card != NICOFF_ANY && r->src_card >= card->cfg.num_nodes))
		return -EINVAL;
	fw_cursor_init(&cur, r->off, r->len);
	if (!fw_cursor_span(&cur, &span))
		return -ERANGE;
	ret = fwos_mem_write(card->host, port->id, r->mr, NICOFF_ACCESS_LOCAL_WRITE, span, NULL,
			     0);
	if (ret)
		return ret;
	recv = fwos_zalloc(card->host, sizeof(*recv));
	if (!recv)
		return -ENOMEM;
	fw_list_init(&recv->node);
	recv->cmd_tag = cmd->tag;
	recv->mr = r->mr;
	recv->src_card = r->src_card;
	recv->src_port = r->src_port;
	recv->cur = cur;
	recv->tag = r->tag;
	recv->tag_mask = r->tag_mask;
	for (n = port->unexp.next; n != &port->unexp; n = n->next) {
		struct fw_rmsg *rm = fw_list_entry(n, struct fw_rmsg, port_node);

		if (fw_recv_match(recv, rm->src_node, rm->src_port, rm->msg_tag)) {
			fw_msg_bind(card, port, rm, recv);
			return 0;
		}
	}
	fw_list_add_tail(&recv->node, &port->posted);
	return 0;
}

/* SEND or RECV: the engine table gives it no other opcode. */
int fw_msg_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	return cmd->opcode == NICOFF_OP_SEND ? fw_msg_send(card, port, cmd) :
					       fw_msg_recv(card, port, cmd);
}

static struct fw_recv *fw_msg_match(struct fw_port *port, u32 src, u32 sport, u64 tag)
{
	struct fw_list *n;

	for (n = port->posted.next; n != &port->posted; n = n->next) {
		struct fw_recv *r = fw_list_entry(n, struct fw_recv, node);

		if (fw_recv_match(r, src, sport, tag))
			return r;
	}
	return NULL;
}

static struct fw_rmsg *fw_rmsg_find(struct fw_peer *peer, u64 msg_id)
{
	struct fw_list *n;

	for (n = peer->rx_msgs.next; n != &peer->rx_msgs; n = n->next) {
		struct fw_rmsg *rm = fw_list_entry(n, struct fw_rmsg, peer_node);

		if (rm->msg_id == msg_id)
			return rm;
	}
	return NULL;
}

static bool fw_unexp_fits(u64 used, u64 limit, u64 charge)
{
	return used <= limit && charge <= limit - used;
}

/* Whether the port and its card can buffer one more unexpected message of @total bytes. */
static bool fw_unexp_room(const struct fw_card *card, const struct fw_port *port, u64 total)
{
	u64 charge = fw_unexp_charge(total);

	return fw_unexp_fits(port->unexp_used, card->cfg.unexpected_bytes, charge) &&
	       fw_unexp_fits(card->unexp_used, card->cfg.card_unexpected_bytes, charge);
}

/*
 * The refusal of a port pair lasts until the awaited message comes again
 * or is aborted, or the peer's stream restarts: the sender counts on it
 * to refuse what it takes back.  It outlives our port, if need be.
 */
static struct fw_rblock *fw_rblock_find(struct fw_peer *peer, u32 sport, u32 dport)
{
	struct fw_list *n;

	for (n = peer->rblocks.next; n != &peer->rblocks; n = n->next) {
		struct fw_rblock *b = fw_list_entry(n, struct fw_rblock, node);

		if (b->src_port == sport && b->dst_port == dport)
			return b;
	}
	return NULL;
}

static void fw_rblock_free(struct fw_card *card, struct fw_rblock *b)
{
	fw_list_del(&b->node);
	fwos_free(card->host, b);
}

/*
 * Refuse the message that @h opens: accepted in the stream, answered with
 * RNR @why.  -ENOBUFS blocks the pair at this message (@b: blocked there
 * already).  Without memory, dropped unacknowledged instead.
 */
static int fw_msg_refuse(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt_hdr *h,
			 s32 why, struct fw_rblock *b)
{
	struct fw_rblock *nb = NULL;

	if (why == -ENOBUFS && !b) {
		nb = fwos_zalloc(card->host, sizeof(*nb));
		if (!nb)
			return FW_RX_RNR;
	}
	if (!fw_reply_rnr(card, peer, h, why)) {
		fwos_free(card->host, nb);
		return FW_RX_RNR;
	}
	if (nb) {
		nb->src_port = h->src_port;
		nb->dst_port = h->dst_port;
		nb->msg_id = h->msg_id;
		fw_list_add_tail(&nb->node, &peer->rblocks);
	}
	peer->rnr_msg_id = h->msg_id;
	card->stats.rnr_drops++;
	return FW_RX_DONE;
}

/*
 * First fragment: bind it to @recv, or buffer it (the caller saw room).
 * NULL without memory.
 */
static struct fw_rmsg *fw_msg_start(struct fw_card *card, struct fw_peer *peer,
				    struct fw_port *port, const struct fw_pkt_hdr *h,
				    struct fw_recv *recv)
{
	u64 charge = recv ? 0 : fw_unexp_charge(h->total);
	struct fw_rmsg *rm = fwos_zalloc(card->host, sizeof(*rm));

	if (!rm)
		return NULL;
	fw_list_init(&rm->peer_node);
	fw_list_init(&rm->port_node);
	rm->port = port;
	rm->msg_id = h->msg_id;
	rm->src_node = peer->node;
	rm->src_port = h->src_port;
	rm->msg_tag = h->tag;
	rm->total = h->total;
	if (!recv && fw_rmsg_reserve(card, rm)) {
		fwos_free(card->host, rm);
		return NULL;
	}
	if (recv) {
		fw_list_del(&recv->node);
		rm->recv = recv;
		fw_list_add_tail(&rm->port_node, &port->bound);
	} else {
		rm->charge = charge;
		port->unexp_used += charge;
		card->unexp_used += charge;
		fw_list_add_tail(&rm->port_node, &port->unexp);
		card->stats.unexpected++;
	}
	fw_peer_owe(card, peer);
	fw_list_add_tail(&rm->peer_node, &peer->rx_msgs);
	return rm;
}

static int fw_msg_add(struct fw_card *card, struct fw_rmsg *rm, const struct fw_pkt *pkt)
{
	u64 foff = pkt->hdr.offset;
	u32 len = pkt->hdr.len;

	if (rm->recv)
		fw_msg_write(card, rm, foff, pkt->payload, len);
	else
		fw_rmsg_copy_in(rm, foff, pkt->payload, len);
	rm->rcvd += len;
	if (rm->rcvd == rm->total) {
		fw_list_del(&rm->peer_node);
		if (rm->recv)
			fw_msg_deliver(card, rm);
	}
	return FW_RX_DONE;
}

int fw_msg_rx_data(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	struct fw_port *port = fw_port_find(card, h->dst_port);
	struct fw_rmsg *rm = fw_rmsg_find(peer, h->msg_id);
	struct fw_rblock *blk = NULL;
	struct fw_recv *recv = NULL;

	if (!rm) {
		if (h->offset && h->msg_id == peer->rnr_msg_id)
			return FW_RX_DONE;	/* the rest of a message refused */
		if (h->offset) {
			/* The port closed since the start. */
			fw_reply_err(card, peer, h, port ? -ECONNABORTED : -ECONNREFUSED);
			return FW_RX_DONE;
		}
		blk = fw_rblock_find(peer, h->src_port, h->dst_port);
		if (blk && blk->msg_id != h->msg_id)
			return fw_msg_refuse(card, peer, h, -EAGAIN, NULL);
		if (!port) {
			/* Nobody listens: refused, and no longer awaited. */
			if (blk)
				fw_rblock_free(card, blk);
			fw_reply_err(card, peer, h, -ECONNREFUSED);
			return FW_RX_DONE;
		}
		if (h->len > h->total)
			return FW_RX_DONE;	/* malformed: ignored */
		recv = fw_msg_match(port, peer->node, h->src_port, h->tag);
		if (!recv && !fw_unexp_room(card, port, h->total))
			return fw_msg_refuse(card, peer, h, -ENOBUFS, blk);
	} else if (h->offset != rm->rcvd || h->len > rm->total - rm->rcvd) {
		return FW_RX_DONE;
	}
	if (!rm) {
		rm = fw_msg_start(card, peer, port, h, recv);
		/*
		 * No memory (a memory cgroup's limit, say): refused like a
		 * message without room, so the connection goes on.
		 */
		if (!rm)
			return fw_msg_refuse(card, peer, h, -ENOBUFS, blk);
		if (blk)
			fw_rblock_free(card, blk);	/* the awaited message is in */
	}
	return fw_msg_add(card, rm, pkt);
}

int fw_msg_rx_abort(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	struct fw_rmsg *rm = fw_rmsg_find(peer, h->msg_id);
	struct fw_rblock *b = fw_rblock_find(peer, h->src_port, h->dst_port);

	if (rm)
		fw_msg_abort(card, rm, -ECONNABORTED);
	if (b && b->msg_id == h->msg_id)
		fw_rblock_free(card, b);	/* its sender gave up the awaited message */
	return FW_RX_DONE;
}

/* The peer's half-received messages will never be finished. */
void fw_msg_abort_peer(struct fw_card *card, struct fw_peer *peer, s32 status)
{
	while (!fw_list_empty(&peer->rx_msgs))
		fw_msg_abort(card, fw_list_entry(peer->rx_msgs.next, struct fw_rmsg, peer_node),
			     status);
}

/*
 * The peer's stream restarted (it failed every operation of its old one),
 * or the card goes: no message we refused will come again.
 */
void fw_msg_peer_reset(struct fw_card *card, struct fw_peer *peer)
{
	while (!fw_list_empty(&peer->rblocks))
		fw_rblock_free(card, fw_list_entry(peer->rblocks.next, struct fw_rblock, node));
	peer->rnr_msg_id = 0;
}

/* The port closes: its receives and messages go, without completions. */
void fw_msg_port_detach(struct fw_card *card, u32 id)
{
	struct fw_port *port = fw_port_find(card, id);

	while (!fw_list_empty(&port->posted)) {
		struct fw_recv *r = fw_list_entry(port->posted.next, struct fw_recv, node);

		fw_list_del(&r->node);
		fwos_free(card->host, r);
	}
	while (!fw_list_empty(&port->bound))
		fw_rmsg_free(card, fw_list_entry(port->bound.next, struct fw_rmsg, port_node));
	while (!fw_list_empty(&port->unexp))
		fw_rmsg_free(card, fw_list_entry(port->unexp.next, struct fw_rmsg, port_node));
}

/* ------------------------------------------- sender: messages refused -- */

/*
 * How long a message may wait refused or held: the connection's retry
 * budget, the sum of max_retries + 1 timeouts from rto_ns doubling up to
 * rto_max_ns (card.c's dead_ns less its last ceiling).
 */
static u64 fw_rnr_budget(const struct fw_card *card)
{
	return card->dead_ns == FW_U64_MAX ? FW_U64_MAX : card->dead_ns - card->cfg.rto_max_ns;
}

/* Onto rnrq: the ops of one port pair form one run, in message order. */
static void fw_rnrq_add(struct fw_card *card, struct fw_peer *peer, struct fw_op *op, u64 now)
{
	struct fw_send_op *so = fw_send_op(op);
	struct fw_list *n, *at = &peer->rnrq;
	bool run = false;

	for (n = peer->rnrq.next; n != &peer->rnrq; n = n->next) {
		struct fw_op *o = fw_list_entry(n, struct fw_op, q_node);

		if (!fw_same_pair(o, op)) {
			if (run)
				break;
			continue;
		}
		run = true;
		at = n->next;
		if (o->msg_id > op->msg_id) {
			at = n;
			break;
		}
	}
	fw_list_insert(&op->q_node, at->prev, at);
	op->queue = FW_OPQ_RNR;
	if (!so->rnr_end) {
		so->rnr_end = fw_add_sat(now, fw_rnr_budget(card));
		so->rnr_wait = card->cfg.rto_ns;
	}
}

/* Whether an attempt of @op is out: sent, or being sent, and not taken back. */
static bool fw_rnr_out(const struct fw_op *op)
{
	return op->queue == FW_OPQ_NONE || op->queue == FW_OPQ_PENDING ||
	       (op->queue == FW_OPQ_TX && fw_op_sent(op));
}

/* Take back what was sent of @op: it goes again from its first byte. */
static void fw_rnr_withdraw(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
			    u64 now)
{
	struct fw_send_op *so = fw_send_op(op);

	fw_op_unqueue(op);
	so->x.cur.pos = 0;
	op->all_sent = false;
	op->acked = false;
	op->need_epoch = 0;
	op->need_err = 0;
	so->rnr_at = 0;
	card->stats.rnr_resends++;
	fw_rnrq_add(card, peer, op, now);
}

/*
 * Message @msg_id of the pair (@lport, @dport) was refused for lack of
 * room: the receiver refuses every later message of the pair until it
 * comes again or is aborted, which is sent after this.  Take back those
 * sent or begun since, so that they go again behind it; those not begun
 * are held when their turn comes.
 */
static void fw_rnr_recall(struct fw_card *card, struct fw_peer *peer, u32 lport, u32 dport,
			  u64 msg_id, u64 now)
{
	struct fw_list *n, *next;

	for (n = peer->ops.next; n != &peer->ops; n = next) {
		struct fw_op *o = fw_list_entry(n, struct fw_op, peer_node);

		next = n->next;
		if (o->kind != FW_OP_SEND || o->done || o->msg_id <= msg_id ||
		    o->lport != lport || o->dst_port != dport || !fw_rnr_out(o))
			continue;
		fw_rnr_withdraw(card, peer, o, now);
	}
}

/* Let the receiver stop waiting for @op, if it does. */
static void fw_rnr_let_go(struct fw_card *card, struct fw_peer *peer, struct fw_op *op)
{
	if (fw_send_op(op)->rnr_named)
		fw_tx_queue_ctrl(card, peer, FW_OP_ABORT, op->lport, op->dst_port, op->msg_id, 0,
				 peer->txq.next);
	fw_send_op(op)->rnr_named = false;
}

/*
 * Where @op, going again, joins txq: after control packets, the op being
 * cut and the others going again, but before those of its pair that come
 * after it.
 */
static struct fw_list *fw_rnr_resend_point(struct fw_peer *peer, const struct fw_op *op)
{
	struct fw_list *n;

	for (n = peer->txq.next; n != &peer->txq; n = n->next) {
		struct fw_op *o = fw_list_entry(n, struct fw_op, q_node);

		if (!fw_op_is_xfer(o) || fw_op_sent(o))
			continue;
		if (o->kind != FW_OP_SEND || !fw_send_op(o)->resend ||
		    (fw_same_pair(o, op) && o->msg_id > op->msg_id))
			break;
	}
	return n;
}

/*
 * Due messages of rnrq go again, each pair's in order and right behind
 * its earlier ones; a pair's first one past its budget fails with
 * -ENOBUFS.  Sets peer->rnr_at to the next due time.
 */
void fw_msg_rnr_run(struct fw_card *card, struct fw_peer *peer, u64 now)
{
	struct fw_list *n, *next, *at;
	u32 lport = 0, rport = 0;
	bool seen = false, kept = false;
	u64 due = FW_NEVER;

	for (n = peer->rnrq.next; n != &peer->rnrq; n = next) {
		struct fw_op *op = fw_list_entry(n, struct fw_op, q_node);
		struct fw_send_op *so = fw_send_op(op);
		bool same = seen && op->lport == lport && op->dst_port == rport;

		next = n->next;
		seen = true;
		lport = op->lport;
		rport = op->dst_port;
		if (same && kept)
			continue;	/* behind an earlier one of its pair */
		kept = false;
		if (so->rnr_end <= now) {
			card->stats.rnr_failures++;
			fw_rnr_let_go(card, peer, op);
			fw_op_finish(card, op, -ENOBUFS, 0);
		} else if (so->rnr_at <= now) {
			at = fw_rnr_resend_point(peer, op);
			fw_list_del(&op->q_node);
			fw_list_insert(&op->q_node, at->prev, at);
			op->queue = FW_OPQ_TX;
			so->resend = true;
		} else {
			kept = true;
			due = fw_min_u64(due, fw_min_u64(so->rnr_at, so->rnr_end));
		}
	}
	peer->rnr_at = due;
}

/* fw_tx_flush(): @op, not begun, waits if an earlier message of its pair is refused. */
bool fw_msg_rnr_hold(struct fw_card *card, struct fw_peer *peer, struct fw_op *op)
{
	struct fw_list *n;

	for (n = peer->rnrq.prev; n != &peer->rnrq; n = n->prev) {
		struct fw_op *o = fw_list_entry(n, struct fw_op, q_node);

		if (fw_same_pair(o, op) && o->msg_id < op->msg_id) {
			fw_op_unqueue(op);
			fw_send_op(op)->rnr_at = 0;
			fw_rnrq_add(card, peer, op, fwos_now(card->host));
			return true;
		}
	}
	return false;
}

static struct fw_op *fw_rnr_find(struct fw_peer *peer, u64 msg_id)
{
	struct fw_list *n;

	for (n = peer->ops.next; n != &peer->ops; n = n->next) {
		struct fw_op *op = fw_list_entry(n, struct fw_op, peer_node);

		if (op->kind == FW_OP_SEND && op->msg_id == msg_id)
			return op;
	}
	return NULL;
}

/* The peer refused our message (an RNR packet @h, in order, counted). */
void fw_msg_rx_rnr(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt_hdr *h)
{
	struct fw_op *op = fw_rnr_find(peer, h->msg_id);
	struct fw_send_op *so = op ? fw_send_op(op) : NULL;
	u64 now = fwos_now(card->host);

	/*
	 * About our previous epoch: all its operations failed, and the peer
	 * forgot its refusals when our new epoch began.
	 */
	if ((u32)(h->roff >> 32) != peer->epoch)
		return;
	if (!op || (op->done && op->queue != FW_OPQ_PENDING))
		return;	/* gone: it let the receiver go on already, if it had to */
	if (op->done) {
		/*
		 * Failed with the peer's old stream (transport.c), and refused:
		 * let the receiver go on, and take back first what it refused
		 * behind it.
		 */
		if (h->err == -ENOBUFS && (u32)h->roff == so->rnr_seq) {
			fw_rnr_recall(card, peer, op->lport, op->dst_port, op->msg_id, now);
			so->rnr_named = true;
			fw_rnr_let_go(card, peer, op);
			fw_op_unqueue(op);
			fw_op_put(card, op);
			fw_msg_rnr_run(card, peer, now);
		}
		return;
	}
	if ((u32)h->roff != so->rnr_seq)
		return;		/* about an earlier attempt */
	if (fw_rnr_out(op))
		fw_rnr_withdraw(card, peer, op, now);
	else if (h->err != -ENOBUFS)
		return;		/* taken back already, behind an earlier one */
	/*
	 * -EAGAIN: refused behind an earlier message, whose refusal took back
	 * what followed it.  -ENOBUFS: the receiver waits for this one.
	 */
	if (h->err == -ENOBUFS) {
		fw_rnr_recall(card, peer, op->lport, op->dst_port, op->msg_id, now);
		/* No room: the receiver waits for it; it goes again after a backoff. */
		so->rnr_named = true;
		if (op->queue == FW_OPQ_RNR) {
			so->rnr_at = fw_add_sat(now, so->rnr_wait);
			so->rnr_wait = fw_backoff(&card->cfg, so->rnr_wait);
		}
	}
	fw_msg_rnr_run(card, peer, now);
}

/*
 * A SEND of a closing port (card.c): if the receiver waits for it, or may
 * refuse the attempt out, let it go on (a message half sent is aborted by
 * card.c).  No RNR about it will be acted on.
 */
void fw_msg_op_detach(struct fw_card *card, struct fw_op *op)
{
	if (op->queue == FW_OPQ_NONE || op->queue == FW_OPQ_PENDING)
		fw_send_op(op)->rnr_named = true;
	fw_rnr_let_go(card, op->peer, op);
}
