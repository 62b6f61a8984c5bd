// SPDX-License-Identifier: GPL-2.0
/*
 * Put and get (GM's directed sends) on a peer's registered memory named by
 * its rkey.  A PUT travels as fragments carrying rkey and offset; the
 * target checks the whole range at the first one and writes each as it
 * comes.  A GET is one request; the target checks it, then streams the
 * data back as reliable fragments of its own, read from host memory only
 * as its window opens.  A refusal (no such port, bad rkey, bounds, rights)
 * is an ERR reply that fails the initiator's command, and is counted on
 * the target's port for its host to report.
 */
#include "card.h"

/*
 * Whether the local region @mr holds [0, @span) with the rights a command
 * needs: to be read from for a put (@put), written to for a get.
 */
int fw_rma_local_check(struct fw_card *card, struct fw_port *port, u32 mr, u64 span, bool put)
{
	if (put)
		return fwos_mem_read(card->host, port->id, mr, 0, span, NULL, 0);
	return fwos_mem_write(card->host, port->id, mr, NICOFF_ACCESS_LOCAL_WRITE, span, NULL, 0);
}

/* PUT or GET: the engine table gives it no other opcode. */
int fw_rma_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_rdma *d = &cmd->rdma;
	u8 kind = cmd->opcode == NICOFF_OP_PUT ? FW_OP_PUT : FW_OP_GET;
	struct fw_cursor cur;
	struct fw_xfer_op *x;
	struct fw_op *op;
	u64 span;
	int ret;

	if (d->reserved || d->dst_card >= card->cfg.num_nodes)
		return -EINVAL;
	if (d->len > card->cfg.max_msg)
		return -EMSGSIZE;
	fw_cursor_init(&cur, d->off, d->len);
	if (!fw_cursor_span(&cur, &span) || d->remote_off + d->len < d->remote_off)
		return -ERANGE;
	ret = fw_rma_local_check(card, port, d->mr, span, kind == FW_OP_PUT);
	if (ret)
		return ret;
	op = fw_op_start(card, port, d->dst_card, kind, cmd->tag);
	if (!op)
		return -ENOMEM;
	x = fw_xfer_op(op);
	op->dst_port = d->dst_port;
	x->key = d->mr;
	x->rkey = d->rkey;
	x->cur = cur;
	x->roff = d->remote_off;
	fw_op_go(card, op);
	return 0;
}

static void fw_rma_count(struct fw_card *card, struct fw_port *port, u32 src_card,
			 u32 src_port, s32 err, u32 opcode)
{
	card->stats.remote_errors++;
	if (!port)
		return;
	port->remote_errors++;
	port->last_remote.status = err;
	port->last_remote.src_card = src_card;
	port->last_remote.src_port = src_port;
	port->last_remote.opcode = opcode;
}

void fw_rma_refuse(struct fw_card *card, struct fw_peer *peer, struct fw_port *port,
		   const struct fw_pkt_hdr *h, s32 err, u32 opcode)
{
	fw_rma_count(card, port, peer->node, h->src_port, err, opcode);
	fw_reply_err(card, peer, h, err);
}

/* Region pieces moved per fwos_mem_gather() or _scatter(): a small stack buffer. */
#define FW_RMA_SEGS	16

/*
 * Move message bytes [@pos, @pos + @len) of @cur between @buf and region
 * @key, piece by piece as the cursor's layout has them (a batch of pieces
 * per look at the region): into the region with @to_region, out of it
 * otherwise.  The caller checked the range.
 */
static int fw_rma_pieces(struct fw_card *card, u32 port, u32 key, u32 flags,
			 const struct fw_cursor *cur, u64 pos, u8 *buf, u32 len, bool to_region)
{
	struct fwos_seg seg[FW_RMA_SEGS];
	struct fw_walk walk;

	fw_walk_init(&walk, cur, pos);
	while (len) {
		u32 n, bytes = 0;
		int ret;

		for (n = 0; n < FW_RMA_SEGS && bytes < len; n++) {
			seg[n].len = fw_walk_next(&walk, len - bytes, &seg[n].off);
			if (!seg[n].len)
				return -ERANGE;	/* past the walk's end: the caller checked */
			bytes += (u32)seg[n].len;
		}
		ret = to_region ? fwos_mem_scatter(card->host, port, key, flags, seg, n, buf) :
				  fwos_mem_gather(card->host, port, key, flags, seg, n, buf);
		if (ret)
			return ret;
		buf += bytes;
		len -= bytes;
	}
	return 0;
}

/* The next fragment of a PUT or of a GET answer: header and data. */
static int fw_rma_build_data(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
			     struct fw_pkt **out)
{
	struct fw_xfer_op *x = fw_xfer_op(op);
	bool put = op->kind == FW_OP_PUT;
	/* Message bytes are what the packet carries: pieces of a strided answer fill it. */
	u32 frag = (u32)fw_min_u64(card->cfg.mtu, x->cur.len - x->cur.pos);
	struct fw_pkt *pkt = fw_pkt_new(card, peer, fw_op_info_of(op->kind)->pkt_type, op->lport,
					op->dst_port, frag);
	int ret;

	if (!pkt)
		return FW_BUILD_NOMEM;
	pkt->hdr.msg_id = op->msg_id;
	pkt->hdr.offset = x->cur.pos;
	pkt->hdr.total = x->cur.len;
	if (put) {
		pkt->hdr.rkey = x->rkey;
		pkt->hdr.roff = x->roff;
		ret = fw_rma_pieces(card, op->lport, x->key, 0, &x->cur, x->cur.pos, pkt->payload,
				    frag, false);
	} else {
		const u32 flags = FWOS_MEM_REMOTE | NICOFF_ACCESS_REMOTE_READ;

		ret = fw_rma_pieces(card, op->lport, x->rkey, flags, &x->cur, x->cur.pos,
				    pkt->payload, frag, false);
	}
	if (ret) {
		fwos_pkt_free(card->host, pkt);
		if (!put) {
			/* Deregistered under the answer: the initiator gets the error. */
			u32 opcode = op->kind == FW_OP_SGETRESP ? NICOFF_OP_GET_STRIDED :
				     op->kind == FW_OP_VGETRESP ? NICOFF_OP_GET_VECTOR :
								  NICOFF_OP_GET;

			fw_rma_count(card, op->port, peer->node, op->dst_port, ret, opcode);
			fw_tx_queue_ctrl(card, peer, FW_OP_ERR, op->lport, op->dst_port,
					 op->msg_id, ret, &op->q_node);
		}
		fw_op_finish(card, op, ret, 0);
		return FW_BUILD_GONE;
	}
	fw_cursor_advance(&x->cur, frag);
	op->all_sent = fw_cursor_done(&x->cur);
	*out = pkt;
	return FW_BUILD_PKT;
}

struct fw_pkt *fw_rma_req(struct fw_card *card, struct fw_peer *peer, struct fw_op *op, u32 len)
{
	struct fw_xfer_op *x = fw_xfer_op(op);
	struct fw_pkt *pkt = fw_pkt_new(card, peer, fw_op_info_of(op->kind)->pkt_type, op->lport,
					op->dst_port, len);

	if (!pkt)
		return NULL;
	pkt->hdr.msg_id = op->msg_id;
	pkt->hdr.total = x->cur.len;
	pkt->hdr.rkey = x->rkey;
	pkt->hdr.roff = x->roff;
	op->all_sent = true;
	return pkt;
}

int fw_rma_build(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
		 struct fw_pkt **out)
{
	if (op->kind != FW_OP_GET)
		return fw_rma_build_data(card, peer, op, out);
	*out = fw_rma_req(card, peer, op, 0);
	return *out ? FW_BUILD_PKT : FW_BUILD_NOMEM;
}

int fw_rma_rx_put(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	const u32 flags = FWOS_MEM_REMOTE | NICOFF_ACCESS_REMOTE_WRITE;
	const struct fw_pkt_hdr *h = &pkt->hdr;
	struct fw_port *port = fw_port_find(card, h->dst_port);
	struct fw_cursor cur;
	u64 span;
	int err = 0;

	if (h->msg_id == peer->err_msg_id)
		return FW_RX_DONE;	/* refused already: the rest goes too */
	if (h->len > h->total || h->offset > h->total - h->len)
		return FW_RX_DONE;	/* malformed: ignored */
	fw_cursor_init(&cur, h->roff, h->total);
	if (!port)
		err = -ECONNREFUSED;
	else if (!fw_cursor_span(&cur, &span))
		err = -ERANGE;
	else if (!h->offset)	/* all or nothing, as far as checks go */
		err = fwos_mem_write(card->host, port->id, h->rkey, flags, span, NULL, 0);
	if (!err)
		err = fw_rma_pieces(card, port->id, h->rkey, flags, &cur, h->offset, pkt->payload,
				    h->len, true);
	if (err)
		fw_rma_refuse(card, peer, port, h, err, NICOFF_OP_PUT);
	return FW_RX_DONE;
}

/*
 * The answer of kind @kind to the request @h of @opcode (GET or its
 * strided kin), which passed its caller's checks if !@err, for [0, @span)
 * of the region its rkey names: refused with an error reply, or made for
 * the caller to give its cursor and queue.  NULL with the receive verdict
 * in *@verdict when there is none.
 */
struct fw_op *fw_rma_answer(struct fw_card *card, struct fw_peer *peer, struct fw_port *port,
			    const struct fw_pkt_hdr *h, int err, u64 span, u8 kind, u32 opcode,
			    int *verdict)
{
	struct fw_op *op;

	if (!err)
		err = fwos_mem_read(card->host, port->id, h->rkey,
				    FWOS_MEM_REMOTE | NICOFF_ACCESS_REMOTE_READ, span, NULL, 0);
	*verdict = FW_RX_DONE;
	if (err) {
		fw_rma_refuse(card, peer, port, h, err, opcode);
		return NULL;
	}
	op = fw_op_new(card, peer, port, kind, 0);
	if (!op) {
		*verdict = FW_RX_RNR;
		return NULL;
	}
	op->done = true;	/* nothing to complete here */
	op->dst_port = h->src_port;
	op->msg_id = h->msg_id;
	fw_xfer_op(op)->rkey = h->rkey;
	return op;
}

int fw_rma_req_check(struct fw_card *card, const struct fw_port *port, const struct fw_pkt_hdr *h)
{
	if (!port)
		return -ECONNREFUSED;
	return h->total > card->cfg.max_msg ? -EMSGSIZE : 0;
}

int fw_rma_rx_get_req(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	struct fw_port *port = fw_port_find(card, h->dst_port);
	struct fw_cursor cur;
	struct fw_op *op;
	int err, verdict;
	u64 span = 0;

	fw_cursor_init(&cur, h->roff, h->total);
	err = fw_rma_req_check(card, port, h);
	if (!err && !fw_cursor_span(&cur, &span))
		err = -ERANGE;
	op = fw_rma_answer(card, peer, port, h, err, span, FW_OP_GETRESP, NICOFF_OP_GET, &verdict);
	if (!op)
		return verdict;
	fw_xfer_op(op)->cur = cur;
	fw_tx_enqueue(peer, op);
	return FW_RX_DONE;
}

static struct fw_op *fw_rma_find_get(struct fw_peer *peer, u64 msg_id)
{
	struct fw_list *n;

	for (n = peer->pending.next; n != &peer->pending; n = n->next) {
		struct fw_op *op = fw_list_entry(n, struct fw_op, q_node);

		if (fw_op_is(op, FW_OPF_REQUEST) && op->msg_id == msg_id)
			return op;
	}
	return NULL;
}

int fw_rma_rx_get_resp(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	struct fw_op *op = fw_rma_find_get(peer, h->msg_id);
	struct fw_xfer_op *x = op ? fw_xfer_op(op) : NULL;
	u64 len = x ? x->cur.len : 0;

	/* Not (or no longer) waited for, or malformed: ignored. */
	if (!op || h->total != len || h->offset != x->rcvd || h->len > len - x->rcvd)
		return FW_RX_DONE;
	if (!x->err)
		x->err = fw_rma_pieces(card, op->lport, x->key, NICOFF_ACCESS_LOCAL_WRITE,
				       &x->cur, h->offset, pkt->payload, h->len, true);
	x->rcvd += h->len;
	if (x->rcvd == len)
		fw_op_finish(card, op, x->err, x->err ? 0 : len);
	return FW_RX_DONE;
}
