// SPDX-License-Identifier: GPL-2.0
/*
 * Two-sided messages.  A SEND is cut into mtu-sized DATA fragments, built
 * from host memory only when the window has room.  On the receiving card a
 * message is matched at its first fragment against the port's posted
 * receives (GM's receive tokens) in posting order, and its fragments are
 * written straight into the matched buffer.  A message nobody waits for is
 * kept, fragment by fragment, as long as the port's unexpected_bytes allow;
 * a later RECV takes the oldest compatible one.  A first fragment that
 * fits nowhere is refused unacknowledged (receiver not ready), so the
 * sender retries.  Fragments of one message arrive in order on one
 * connection, so a message is reassembled by appending.
 */
#include "card.h"

/* Empty unexpected messages are charged this much, to bound them too. */
#define FW_UNEXP_MIN_CHARGE	64u

int fw_msg_send(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_send *s = &cmd->send;
	struct fw_peer *peer;
	struct fw_op *op;
	int ret;

	if (s->reserved0 || s->reserved1 || s->dst_card >= card->cfg.num_nodes)
		return -EINVAL;
	if (s->len > card->cfg.max_msg)
		return -EMSGSIZE;
	if (s->off + s->len < s->off)
		return -ERANGE;
	/* Check the whole range now: a bad region sends nothing. */
	ret = fwos_mem_read(card->host, port->id, s->mr, 0, s->off + s->len, NULL, 0);
	if (ret)
		return ret;
	peer = fw_peer_get(card, s->dst_card);
	if (!peer)
		return -ENOMEM;
	op = fw_op_new(card, peer, port, FW_OP_SEND, cmd->tag);
	if (!op)
		return -ENOMEM;
	op->dst_port = s->dst_port;
	op->key = s->mr;
	op->off = s->off;
	op->len = s->len;
	op->msg_tag = s->msg_tag;
	op->msg_id = card->next_msg_id++;
	fw_tx_enqueue(peer, op);
	fw_tx_flush(card, peer);
	fw_peer_rearm(card, peer);
	return 0;
}

int fw_msg_build(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
		 struct fw_pkt **out)
{
	u32 frag = (u32)fw_min_u64(card->cfg.mtu, op->len - op->pos);
	struct fw_pkt *pkt = fw_pkt_new(card, peer, FW_PKT_DATA, op->lport, op->dst_port, frag);
	int ret = 0;

	if (!pkt)
		return FW_BUILD_NOMEM;
	pkt->hdr.msg_id = op->msg_id;
	pkt->hdr.offset = op->pos;
	pkt->hdr.total = op->len;
	pkt->hdr.tag = op->msg_tag;
	if (frag)
		ret = fwos_mem_read(card->host, op->lport, op->key, 0, op->off + op->pos,
				    pkt->payload, frag);
	if (ret) {
		fwos_pkt_free(card->host, pkt);
		/* The region went away half way: the peer drops what it has. */
		if (op->pos)
			fw_tx_queue_ctrl(card, peer, FW_OP_ABORT, op->lport, op->dst_port,
					 op->msg_id, 0, &op->q_node);
		fw_op_finish(card, op, ret, 0);
		return FW_BUILD_GONE;
	}
	op->pos += frag;
	op->all_sent = op->pos == op->len;
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

static void fw_rmsg_free(struct fw_card *card, struct fw_rmsg *rm)
{
	struct fw_rfrag *f, *next;

	for (f = rm->frags; f; f = next) {
		next = f->next;
		fwos_pkt_free(card->host, f->pkt);
		fwos_free(card->host, f);
	}
	rm->port->unexp_used -= rm->charge;
	fw_list_del(&rm->peer_node);
	fw_list_del(&rm->port_node);
	if (rm->recv)
		fwos_free(card->host, rm->recv);
	fwos_free(card->host, rm);
}

/* Copy what fits of a fragment into the receive buffer; drop the rest. */
static void fw_msg_write(struct fw_card *card, struct fw_rmsg *rm, u64 foff, const void *data,
			 u32 len)
{
	const struct fw_recv *r = rm->recv;
	u32 n;
	int ret;

	if (rm->status || foff >= r->len)
		return;
	n = (u32)fw_min_u64(len, r->len - foff);
	if (!n)
		return;
	ret = fwos_mem_write(card->host, rm->port->id, r->mr, NICOFF_ACCESS_LOCAL_WRITE,
			     r->off + foff, data, n);
	if (ret)
		rm->status = ret;
}

static void fw_msg_deliver(struct fw_card *card, struct fw_rmsg *rm)
{
	s32 status = rm->status;

	if (!status && rm->total > rm->recv->len)
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
	struct fw_rfrag *f, *next;

	fw_list_del(&rm->port_node);
	port->unexp_used -= rm->charge;
	rm->charge = 0;
	rm->recv = recv;
	for (f = rm->frags; f; f = next) {
		next = f->next;
		fw_msg_write(card, rm, f->pkt->hdr.offset, f->pkt->payload, f->pkt->hdr.len);
		fwos_pkt_free(card->host, f->pkt);
		fwos_free(card->host, f);
	}
	rm->frags = NULL;
	rm->ftail = &rm->frags;
	if (rm->rcvd == rm->total)
		fw_msg_deliver(card, rm);
	else
		fw_list_add_tail(&rm->port_node, &port->bound);
}

int fw_msg_recv(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_recv *r = &cmd->recv;
	struct fw_recv *recv;
	struct fw_list *n;
	int ret;

	if (r->reserved0 || (r->src_card != NICOFF_ANY && r->src_card >= card->cfg.num_nodes))
		return -EINVAL;
	if (r->off + r->len < r->off)
		return -ERANGE;
	ret = fwos_mem_write(card->host, port->id, r->mr, NICOFF_ACCESS_LOCAL_WRITE,
			     r->off + r->len, NULL, 0);
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
	recv->off = r->off;
	recv->len = r->len;
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

/* First fragment: bind it to @recv, or buffer it if the port has room. */
static struct fw_rmsg *fw_msg_start(struct fw_card *card, struct fw_peer *peer,
				    struct fw_port *port, const struct fw_pkt_hdr *h,
				    struct fw_recv *recv)
{
	u64 charge = 0;
	struct fw_rmsg *rm;

	if (!recv) {
		charge = fw_max_u64(h->total, FW_UNEXP_MIN_CHARGE);
		if (port->unexp_used > card->cfg.unexpected_bytes ||
		    charge > card->cfg.unexpected_bytes - port->unexp_used)
			return NULL;
	}
	rm = fwos_zalloc(card->host, sizeof(*rm));
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
	rm->ftail = &rm->frags;
	if (recv) {
		fw_list_del(&recv->node);
		rm->recv = recv;
		fw_list_add_tail(&rm->port_node, &port->bound);
	} else {
		rm->charge = charge;
		port->unexp_used += charge;
		fw_list_add_tail(&rm->port_node, &port->unexp);
		card->stats.unexpected++;
	}
	fw_peer_owe(card, peer);
	fw_list_add_tail(&rm->peer_node, &peer->rx_msgs);
	return rm;
}

static int fw_msg_add(struct fw_card *card, struct fw_rmsg *rm, struct fw_pkt *pkt,
		      struct fw_rfrag *frag)
{
	u64 foff = pkt->hdr.offset;
	u32 len = pkt->hdr.len;
	int verdict = FW_RX_DONE;

	if (rm->recv) {
		fw_msg_write(card, rm, foff, pkt->payload, len);
	} else if (frag) {
		frag->pkt = pkt;
		*rm->ftail = frag;
		rm->ftail = &frag->next;
		verdict = FW_RX_KEPT;
	}
	rm->rcvd += len;
	if (rm->rcvd == rm->total) {
		fw_list_del(&rm->peer_node);
		if (rm->recv)
			fw_msg_deliver(card, rm);
	}
	return verdict;
}

int fw_msg_rx_data(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	struct fw_port *port = fw_port_find(card, h->dst_port);
	struct fw_rmsg *rm = fw_rmsg_find(peer, h->msg_id);
	struct fw_recv *recv = NULL;
	struct fw_rfrag *frag = NULL;

	if (!rm) {
		if (!port || h->offset) {
			/* Nobody listens, or the port closed since the start. */
			fw_reply_err(card, peer, h, port ? -ECONNABORTED : -ECONNREFUSED);
			return FW_RX_DONE;
		}
		if (h->len > h->total)
			return FW_RX_DONE;	/* malformed: ignored */
		recv = fw_msg_match(port, peer->node, h->src_port, h->tag);
	} else if (h->offset != rm->rcvd || h->len > rm->total - rm->rcvd) {
		return FW_RX_DONE;
	}
	if (!(rm ? rm->recv : recv) && h->len) {
		frag = fwos_zalloc(card->host, sizeof(*frag));
		if (!frag)
			return FW_RX_RNR;
	}
	if (!rm) {
		rm = fw_msg_start(card, peer, port, h, recv);
		if (!rm) {
			if (frag)
				fwos_free(card->host, frag);
			return FW_RX_RNR;
		}
	}
	return fw_msg_add(card, rm, pkt, frag);
}

void fw_msg_rx_abort(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt_hdr *h)
{
	struct fw_rmsg *rm = fw_rmsg_find(peer, h->msg_id);

	if (rm)
		fw_msg_abort(card, rm, -ECONNABORTED);
}

/* The peer's half-received messages will never be finished. */
void fw_msg_abort_peer(struct fw_card *card, struct fw_peer *peer, s32 status)
{
	while (!fw_list_empty(&peer->rx_msgs))
		fw_msg_abort(card, fw_list_entry(peer->rx_msgs.next, struct fw_rmsg, peer_node),
			     status);
}

/* The port closes: its receives and messages go, without completions. */
void fw_msg_port_detach(struct fw_card *card, struct fw_port *port)
{
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
