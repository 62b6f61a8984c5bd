// SPDX-License-Identifier: GPL-2.0
/*
 * Strided put and get walked by the card: the NIC-based method of seed 004
 * (§5).  One command names a shape, ARMCI's counts and a stride array per
 * side, which the card copies from registered memory and checks whole,
 * both sides inside their regions, before the first byte moves.
 *
 * A strided PUT goes as one packet per contiguous piece (a count[0]-byte
 * chunk, cut at the MTU), each naming the region offset it goes to, so
 * the target keeps no state for it; the piece at offset 0 also names the
 * end of the remote span, which the target checks whole before it writes
 * anything.  A strided GET sends the remote shape in its request; the
 * target checks the span, then answers as for a GET, gathering its pieces
 * into full packets, which the initiator scatters with its own shape.
 * The go-back-N window bounds what is in flight: a long walk is built a
 * window at a time and the card thread serves everything else in between.
 */
#include "card.h"

/* The shape on the wire: levels, count[0..levels], stride[0..levels - 1]. */
static u32 fw_shape_wire_len(u32 levels)
{
	return 8 * (2 + 2 * levels);
}

/*
 * Copy the shapes of strided command @d from its descriptor (struct
 * nicoff_strided_desc) into @local and @remote, and check them.  Copied
 * once and checked after: the process may rewrite its descriptor at will.
 */
static int fw_strided_shapes(struct fw_card *card, struct fw_port *port,
			     const struct nicoff_op_strided *d, struct fw_shape *local,
			     struct fw_shape *remote)
{
	const u32 n = NICOFF_STRIDED_MAX_LEVELS;
	const u64 lst = offsetof(struct nicoff_strided_desc, local_stride);
	const u64 rst = offsetof(struct nicoff_strided_desc, remote_stride);
	u64 end;
	int ret;

	if (fw_add_overflow(d->desc_off, sizeof(struct nicoff_strided_desc), &end))
		return -ERANGE;
	memset(local, 0, sizeof(*local));
	ret = fwos_mem_read(card->host, port->id, d->desc_mr, 0, d->desc_off, local->count,
			    8 * (n + 1));
	if (!ret)
		ret = fwos_mem_read(card->host, port->id, d->desc_mr, 0,
				    d->desc_off + lst, local->stride, 8 * n);
	*remote = *local;
	if (!ret)
		ret = fwos_mem_read(card->host, port->id, d->desc_mr, 0,
				    d->desc_off + rst, remote->stride, 8 * n);
	if (ret)
		return ret;
	local->levels = d->levels;
	remote->levels = d->levels;
	ret = fw_shape_init(local);
	return ret ? ret : fw_shape_init(remote);
}

int fw_strided_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_strided *d = &cmd->strided;
	bool put = cmd->opcode == NICOFF_OP_PUT_STRIDED;
	struct fw_shape local, remote;
	struct fw_strided_op *s;
	struct fw_cursor cur;
	struct fw_op *op;
	u64 span, rend;
	int ret;

	if (d->dst_card >= card->cfg.num_nodes || d->levels > NICOFF_STRIDED_MAX_LEVELS)
		return -EINVAL;
	ret = fw_strided_shapes(card, port, d, &local, &remote);
	if (ret)
		return ret;
	if (local.len > card->cfg.max_msg)
		return -EMSGSIZE;
	fw_cursor_init_strided(&cur, d->off, &local);
	if (!fw_cursor_span(&cur, &span) || fw_add_overflow(d->remote_off, remote.extent, &rend))
		return -ERANGE;
	ret = fw_rma_local_check(card, port, d->mr, span, put);
	if (ret)
		return ret;
	op = fw_op_start(card, port, d->dst_card, put ? FW_OP_SPUT : FW_OP_SGET, cmd->tag);
	if (!op)
		return -ENOMEM;
	s = fw_strided_op(op);
	op->dst_port = d->dst_port;
	s->local = local;
	s->remote = remote;
	s->x.key = d->mr;
	s->x.rkey = d->rkey;
	s->x.roff = d->remote_off;
	fw_cursor_init_strided(&s->x.cur, d->off, &s->local);
	fw_cursor_init_strided(&s->rcur, d->remote_off, &s->remote);
	fw_op_go(card, op);
	return 0;
}

/* The next piece of a strided PUT: contiguous on both sides, as the counts are shared. */
static int fw_strided_build_put(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
				struct fw_pkt **out)
{
	struct fw_strided_op *s = fw_strided_op(op);
	struct fw_xfer_op *x = &s->x;
	u64 at, rat;
	u32 n = (u32)fw_cursor_next(&x->cur, card->cfg.mtu, &at);
	struct fw_pkt *pkt = fw_pkt_new(card, peer, FW_PKT_PUT_STRIDED, op->lport, op->dst_port, n);
	int ret;

	if (!pkt)
		return FW_BUILD_NOMEM;
	fw_cursor_piece(&s->rcur, x->cur.pos, n, &rat);
	pkt->hdr.msg_id = op->msg_id;
	pkt->hdr.offset = x->cur.pos;
	pkt->hdr.total = x->cur.len;
	pkt->hdr.span_end = x->roff + s->remote.extent;
	pkt->hdr.roff = rat;
	pkt->hdr.rkey = x->rkey;
	ret = n ? fwos_mem_read(card->host, op->lport, x->key, 0, at, pkt->payload, n) : 0;
	if (ret) {
		fwos_pkt_free(card->host, pkt);
		fw_op_finish(card, op, ret, 0);
		return FW_BUILD_GONE;
	}
	fw_cursor_advance(&x->cur, n);
	op->all_sent = fw_cursor_done(&x->cur);
	*out = pkt;
	return FW_BUILD_PKT;
}

/* A strided GET's request: the remote shape, for the target to walk. */
static int fw_strided_build_get(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
				struct fw_pkt **out)
{
	struct fw_strided_op *s = fw_strided_op(op);
	const struct fw_shape *r = &s->remote;
	struct fw_pkt *pkt = fw_pkt_new(card, peer, FW_PKT_GET_STRIDED_REQ, op->lport,
					op->dst_port, fw_shape_wire_len(r->levels));
	u64 *w;

	if (!pkt)
		return FW_BUILD_NOMEM;
	w = (u64 *)pkt->payload;
	w[0] = r->levels;
	memcpy(&w[1], r->count, 8 * (r->levels + 1));
	memcpy(&w[2 + r->levels], r->stride, 8 * r->levels);
	pkt->hdr.msg_id = op->msg_id;
	pkt->hdr.total = s->x.cur.len;
	pkt->hdr.rkey = s->x.rkey;
	pkt->hdr.roff = s->x.roff;
	op->all_sent = true;
	*out = pkt;
	return FW_BUILD_PKT;
}

int fw_strided_build(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
		     struct fw_pkt **out)
{
	if (op->kind == FW_OP_SPUT)
		return fw_strided_build_put(card, peer, op, out);
	return fw_strided_build_get(card, peer, op, out);
}

int fw_strided_rx_put(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	const u32 flags = FWOS_MEM_REMOTE | NICOFF_ACCESS_REMOTE_WRITE;
	const struct fw_pkt_hdr *h = &pkt->hdr;
	struct fw_port *port = fw_port_find(card, h->dst_port);
	int err = 0;

	if (h->msg_id == peer->err_msg_id)
		return FW_RX_DONE;	/* refused already: the rest goes too */
	if (h->len > h->total || h->offset > h->total - h->len)
		return FW_RX_DONE;	/* malformed: ignored */
	if (!port)
		err = -ECONNREFUSED;
	else if (!h->offset && h->span_end < h->roff)
		err = -ERANGE;
	else if (!h->offset)	/* the whole span, before the first byte */
		err = fwos_mem_write(card->host, port->id, h->rkey, flags, h->span_end, NULL, 0);
	if (!err && h->len)
		err = fwos_mem_write(card->host, port->id, h->rkey, flags, h->roff, pkt->payload,
				     h->len);
	if (err)
		fw_rma_refuse(card, peer, port, h, err, NICOFF_OP_PUT_STRIDED);
	return FW_RX_DONE;
}

/* The shape a strided GET's request carries: 0 or why it is refused. */
static int fw_strided_wire_shape(const struct fw_pkt *pkt, struct fw_shape *s)
{
	const u64 *w = (const u64 *)pkt->payload;
	int ret;

	if (pkt->hdr.len < 8 || w[0] > FW_SHAPE_MAX_LEVELS ||
	    pkt->hdr.len != fw_shape_wire_len((u32)w[0]))
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->levels = (u32)w[0];
	memcpy(s->count, &w[1], 8 * (s->levels + 1));
	memcpy(s->stride, &w[2 + s->levels], 8 * s->levels);
	ret = fw_shape_init(s);
	if (ret)
		return ret;
	return s->len == pkt->hdr.total ? 0 : -EINVAL;
}

int fw_strided_rx_get_req(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	struct fw_port *port = fw_port_find(card, h->dst_port);
	struct fw_strided_op *s;
	struct fw_shape shape;
	int err, verdict;
	struct fw_op *op;
	u64 span = 0;

	if (!port)
		err = -ECONNREFUSED;
	else if (h->total > card->cfg.max_msg)
		err = -EMSGSIZE;
	else
		err = fw_strided_wire_shape(pkt, &shape);
	if (!err && fw_add_overflow(h->roff, shape.extent, &span))
		err = -ERANGE;
	op = fw_rma_answer(card, peer, port, h, err, span, FW_OP_SGETRESP, NICOFF_OP_GET_STRIDED,
			   &verdict);
	if (!op)
		return verdict;
	s = fw_strided_op(op);
	s->local = shape;
	fw_cursor_init_strided(&s->x.cur, h->roff, &s->local);
	fw_tx_enqueue(peer, op);
	return FW_RX_DONE;
}
