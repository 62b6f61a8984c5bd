// SPDX-License-Identifier: GPL-2.0
/*
 * Strided put and get walked by the card: the NIC-based method of seed 004
 * (§5).  One command names a shape, ARMCI's counts and a stride array per
 * side, which the card copies from registered memory and checks whole,
 * both sides inside their regions, before the first byte moves.
 *
 * An accumulate (ARMCI's AccS, integers only: the card does no floating
 * point) travels as a strided PUT whose target adds scale times each
 * element to what is there, with elements never cut between packets.
 *
 * A strided PUT goes as packets of contiguous pieces (count[0]-byte
 * chunks, cut where a packet is full), each packet with a table of the
 * region offset and length of its pieces, so the target keeps no state
 * for it and small chunks share packets; the packet at offset 0 also
 * names the end of the remote span, which the target checks whole before
 * it writes anything.  A strided GET sends the remote shape in its request; the
 * target checks the span, then answers as for a GET, gathering its pieces
 * into full packets, which the initiator scatters with its own shape.
 * The go-back-N window bounds what is in flight: a long walk is built a
 * window at a time and the card thread serves everything else in between.
 *
 * A vector put or get (ARMCI's PutV and GetV) is the same operation with
 * segment lists for shapes: its cursors walk the lists, so its PUT goes as
 * PUT_STRIDED packets and its GET is answered and placed as a strided
 * GET's; only its request carries the remote list instead of a shape.
 */
#include "card.h"

/*
 * A PUT_STRIDED packet's payload: this head, a table of where each piece
 * goes and how long it is (struct fwos_seg: region offset and length, so
 * the target hands the table to fwos_mem_scatter() as it stands), then
 * their bytes one after the other.  A piece is contiguous on both sides
 * (the counts are shared, so a chunk is count[0] bytes on each), so the
 * target writes each where it says without knowing the shape.
 */
struct fw_sput_head {
	u32 pieces;
	u32 acc;		/* enum nicoff_acc_type; 0: write */
	s64 scale;
};

/* The accumulate fields at the end of struct nicoff_strided_desc. */
struct fw_desc_acc {
	u32 acc;
	u32 reserved;
	s64 scale;
};

/* Local pieces gathered per fwos_mem_gather(): a small stack buffer. */
#define FW_SPUT_GATHER	8

#define FW_SPUT_PIECES_OFF	((u32)sizeof(struct fw_sput_head))

/* Bytes of an accumulate's element; 1 for a put. */
static u32 fw_acc_width(u32 acc)
{
	return acc == NICOFF_ACC_INT32 ? 4 : acc == NICOFF_ACC_INT64 ? 8 : 1;
}

/* The shape on the wire: levels, count[0..levels], stride[0..levels - 1]. */
static u32 fw_shape_wire_len(u32 levels)
{
	return 8 * (2 + 2 * levels);
}

FW_STATIC_ASSERT(FW_SHAPE_MAX_LEVELS == NICOFF_STRIDED_MAX_LEVELS,
		 "a shape holds a descriptor's counts and strides");

/*
 * Copy the shapes of strided command @d from its descriptor (struct
 * nicoff_strided_desc) into @local and @remote, and check them.  Copied
 * once, in one read (one look at the region), and checked after: the
 * process may rewrite its descriptor at will.
 */
static int fw_strided_shapes(struct fw_card *card, struct fw_port *port,
			     const struct nicoff_op_strided *d, struct fw_shape *local,
			     struct fw_shape *remote, struct fw_desc_acc *acc)
{
	struct nicoff_strided_desc desc;
	u64 end;
	int ret;

	if (fw_add_overflow(d->desc_off, sizeof(desc), &end))
		return -ERANGE;
	ret = fwos_mem_read(card->host, port->id, d->desc_mr, 0, d->desc_off, &desc, sizeof(desc));
	if (ret)
		return ret;
	memset(local, 0, sizeof(*local));
	memcpy(local->count, desc.count, sizeof(desc.count));
	*remote = *local;
	memcpy(local->stride, desc.local_stride, sizeof(desc.local_stride));
	memcpy(remote->stride, desc.remote_stride, sizeof(desc.remote_stride));
	acc->acc = desc.acc;
	acc->reserved = desc.reserved;
	acc->scale = desc.scale;
	local->levels = d->levels;
	remote->levels = d->levels;
	ret = fw_shape_init(local);
	return ret ? ret : fw_shape_init(remote);
}

/* Whether the accumulate fields suit @opcode: 0, -EINVAL or -EOPNOTSUPP. */
static int fw_strided_acc_check(u8 opcode, const struct fw_desc_acc *a, const struct fw_shape *s)
{
	if (a->reserved)
		return -EINVAL;
	if (opcode != NICOFF_OP_ACC_STRIDED)
		return a->acc || a->scale ? -EINVAL : 0;
	if (a->acc == NICOFF_ACC_DOUBLE)
		return -EOPNOTSUPP;	/* no floating point on the card */
	if (a->acc != NICOFF_ACC_INT32 && a->acc != NICOFF_ACC_INT64)
		return -EINVAL;
	return s->count[0] % fw_acc_width(a->acc) ? -EINVAL : 0;
}

/*
 * The end of a strided or vector command, whose operation was made first to
 * hold its shapes or lists: sent if they passed their checks (@ret 0), else
 * dropped unsent with @ret for the command's error.
 */
static int fw_strided_send(struct fw_card *card, struct fw_op *op,
			   const struct nicoff_op_strided *d, int ret)
{
	struct fw_xfer_op *x = fw_xfer_op(op);

	if (ret) {
		op->done = true;
		fw_op_put(card, op);
		return ret;
	}
	op->dst_port = d->dst_port;
	x->key = d->mr;
	x->rkey = d->rkey;
	x->roff = d->remote_off;
	fw_op_go(card, op);
	return 0;
}

/* The checks of a strided command whose shapes @s holds, before it goes. */
static int fw_strided_check(struct fw_card *card, struct fw_port *port,
			    const struct nicoff_cmd *cmd, struct fw_strided_op *s)
{
	const struct nicoff_op_strided *d = &cmd->strided;
	struct fw_desc_acc acc;
	u64 span, rend;
	int ret;

	ret = fw_strided_shapes(card, port, d, &s->local, &s->remote, &acc);
	if (!ret)
		ret = fw_strided_acc_check(cmd->opcode, &acc, &s->local);
	if (ret)
		return ret;
	if (s->local.len > card->cfg.max_msg)
		return -EMSGSIZE;
	s->acc = acc.acc;
	s->scale = acc.scale;
	fw_cursor_init_strided(&s->x.cur, d->off, &s->local);
	fw_cursor_init_strided(&s->rcur, d->remote_off, &s->remote);
	if (!fw_cursor_span(&s->x.cur, &span) ||
	    fw_add_overflow(d->remote_off, s->remote.extent, &rend))
		return -ERANGE;
	return fw_rma_local_check(card, port, d->mr, span, cmd->opcode != NICOFF_OP_GET_STRIDED);
}

int fw_strided_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_strided *d = &cmd->strided;
	struct fw_op *op;
	u8 kind;

	if (d->dst_card >= card->cfg.num_nodes || d->levels > NICOFF_STRIDED_MAX_LEVELS)
		return -EINVAL;
	kind = cmd->opcode == NICOFF_OP_ACC_STRIDED ? FW_OP_SACC :
	       cmd->opcode == NICOFF_OP_PUT_STRIDED ? FW_OP_SPUT : FW_OP_SGET;
	op = fw_op_start(card, port, d->dst_card, kind, cmd->tag);
	if (!op)
		return -ENOMEM;
	return fw_strided_send(card, op, d, fw_strided_check(card, port, cmd, fw_strided_op(op)));
}

/*
 * How many pieces from local walk @from (left as it is) fit @mtu payload
 * bytes, and their bytes: a piece takes its table entry and its bytes, is
 * whole elements of @w bytes (chunks are, so every cut is too), and the
 * packet ends at the first piece that no room is left for.  A list's
 * pieces are walked one by one.
 */
static u32 fw_sput_fit_list(const struct fw_walk *from, u64 room, u64 w, u64 *data)
{
	struct fw_walk walk = *from;
	u32 n = 0;
	u64 at;

	*data = 0;
	while (room >= sizeof(struct fwos_seg) + w) {
		u64 m = fw_walk_next(&walk, room - sizeof(struct fwos_seg), &at) / w * w;

		if (!m)
			break;
		n++;
		*data += m;
		room -= sizeof(struct fwos_seg) + m;
	}
	return n;
}

/*
 * A shape's pieces need no walk: the rest of the chunk the walk is in,
 * then whole chunks while room and message last, then the part of one
 * more that the room takes.
 */
static u32 fw_sput_fit(const struct fw_strided_op *s, const struct fw_walk *from, u32 mtu,
		       u64 *data)
{
	const u64 seg = sizeof(struct fwos_seg), w = fw_acc_width(s->acc);
	const struct fw_shape *sh = from->c->shape;
	u64 room = mtu - FW_SPUT_PIECES_OFF, c, left, m, k;
	u32 n;

	if (!sh)
		return fw_sput_fit_list(from, room, w, data);
	*data = 0;
	if (from->pos >= from->c->len || room < seg + w)
		return 0;
	c = sh->count[0];
	left = from->c->len - from->pos;	/* whole chunks from the current one's start */
	/* w is 1, 4 or 8: rounding down to whole elements is a mask. */
	m = fw_min_u64(room - seg, c - from->idx[0]) & ~(w - 1);
	if (!m)
		return 0;
	if (m < c - from->idx[0]) {	/* cut by the room: the packet is full */
		*data = m;
		return 1;
	}
	n = 1;
	room -= seg + m;
	left -= m;
	k = fw_min_u64(room / (seg + c), left / c);
	n += (u32)k;
	room -= k * (seg + c);
	left -= k * c;
	*data = m + k * c;
	if (left && room >= seg + w) {
		m = (room - seg) & ~(w - 1);	/* less than a chunk, or k would be larger */
		if (m) {
			n++;
			*data += m;
		}
	}
	return n;
}

/* The next packet of a strided PUT: as many pieces as fit. */
static int fw_strided_build_put(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
				struct fw_pkt **out)
{
	struct fw_strided_op *s = fw_strided_op(op);
	struct fw_xfer_op *x = &s->x;
	struct fwos_seg *piece;
	struct fw_walk lw, rw;
	struct fw_pkt *pkt;
	u64 data, span_end;
	u32 n, i, k, table;
	bool twin;
	u8 *to;
	int ret = 0;

	/*
	 * Both sides walked together, from where the last packet ended: a
	 * strided operation's remote walk follows the local one's digits.
	 */
	fw_walk_init(&lw, &x->cur, x->cur.pos);
	twin = fw_walk_twins(&lw, &s->rcur);
	if (twin)
		fw_walk_init_twin(&rw, &lw, &s->rcur);
	else
		fw_walk_init(&rw, &s->rcur, x->cur.pos);
	n = fw_sput_fit(s, &lw, card->cfg.mtu, &data);
	table = FW_SPUT_PIECES_OFF + n * (u32)sizeof(struct fwos_seg);
	pkt = fw_pkt_new(card, peer, FW_PKT_PUT_STRIDED, op->lport, op->dst_port,
			 table + (u32)data);
	if (!pkt)
		return FW_BUILD_NOMEM;
	fw_cursor_span(&s->rcur, &span_end);	/* checked when the command was taken */
	pkt->hdr.msg_id = op->msg_id;
	pkt->hdr.offset = x->cur.pos;
	pkt->hdr.total = x->cur.len;
	pkt->hdr.span_end = span_end;
	pkt->hdr.roff = rw.at;	/* the first piece's, or the base of an empty walk */
	pkt->hdr.rkey = x->rkey;
	*(struct fw_sput_head *)pkt->payload =
		(struct fw_sput_head){ .pieces = n, .acc = s->acc, .scale = s->scale };
	piece = (struct fwos_seg *)(pkt->payload + FW_SPUT_PIECES_OFF);
	to = pkt->payload + table;
	/* The local pieces a batch at a time, each one gather. */
	for (i = 0; i < n && !ret; i += k) {
		struct fwos_seg seg[FW_SPUT_GATHER];
		u64 bytes = 0;

		for (k = 0; k < FW_SPUT_GATHER && i + k < n; k++) {
			/* The counts are shared: the remote piece is as long. */
			u64 m;

			if (twin) {
				m = fw_walk_next_twin(&lw, &rw, data, &seg[k].off,
						      &piece[i + k].off);
			} else {
				m = fw_walk_next(&lw, data, &seg[k].off);
				fw_walk_next(&rw, m, &piece[i + k].off);
			}
			piece[i + k].len = m;
			seg[k].len = m;
			fw_cursor_advance(&x->cur, m);
			bytes += m;
			data -= m;
		}
		ret = fwos_mem_gather(card->host, op->lport, x->key, 0, seg, k, to);
		to += bytes;
	}
	if (ret) {
		fwos_pkt_free(card->host, pkt);
		fw_op_finish(card, op, ret, 0);
		return FW_BUILD_GONE;
	}
	op->all_sent = fw_cursor_done(&x->cur);
	*out = pkt;
	return FW_BUILD_PKT;
}

/* A strided GET's request: the remote shape, for the target to walk. */
static int fw_strided_build_get(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
				struct fw_pkt **out)
{
	const struct fw_shape *r = &fw_strided_op(op)->remote;
	struct fw_pkt *pkt = fw_rma_req(card, peer, op, fw_shape_wire_len(r->levels));
	u64 *w;

	if (!pkt)
		return FW_BUILD_NOMEM;
	w = (u64 *)pkt->payload;
	w[0] = r->levels;
	memcpy(&w[1], r->count, 8 * (r->levels + 1));
	memcpy(&w[2 + r->levels], r->stride, 8 * r->levels);
	*out = pkt;
	return FW_BUILD_PKT;
}

int fw_strided_build(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
		     struct fw_pkt **out)
{
	if (op->kind != FW_OP_SGET)
		return fw_strided_build_put(card, peer, op, out);
	return fw_strided_build_get(card, peer, op, out);
}

/*
 * Whether a PUT_STRIDED packet's table is sound: its pieces and their
 * bytes fill the payload exactly and stay inside the message.
 */
static bool fw_sput_pieces(const struct fw_pkt *pkt, u32 *n, u64 *data)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	const struct fw_sput_head *head = (const struct fw_sput_head *)pkt->payload;
	const struct fwos_seg *piece;
	u64 sum = 0;
	u32 i, w;

	if (h->len < FW_SPUT_PIECES_OFF || head->acc > NICOFF_ACC_INT64)
		return false;
	w = fw_acc_width(head->acc);
	if (head->pieces > (h->len - FW_SPUT_PIECES_OFF) / sizeof(*piece))
		return false;
	*n = head->pieces;
	*data = h->len - FW_SPUT_PIECES_OFF - *n * sizeof(*piece);
	piece = (const struct fwos_seg *)(pkt->payload + FW_SPUT_PIECES_OFF);
	for (i = 0; i < *n; i++) {
		/* Inside the span the message announced (checked whole at its start). */
		if (piece[i].len > *data - sum || piece[i].len % w ||
		    piece[i].off > h->span_end || piece[i].len > h->span_end - piece[i].off)
			return false;
		sum += piece[i].len;
	}
	return sum == *data && *data <= h->total && h->offset <= h->total - *data;
}

/*
 * Add @scale times the @len bytes of elements at @src to those at @roff of
 * region @rkey, a block at a time, with wrapping integer arithmetic.
 */
static int fw_strided_add(struct fw_card *card, u32 port, u32 rkey, u64 roff, const u8 *src,
			  u64 len, const struct fw_sput_head *head)
{
	const u32 flags = FWOS_MEM_REMOTE | NICOFF_ACCESS_REMOTE_WRITE;
	const u32 w = fw_acc_width(head->acc);
	u64 block[32];
	u32 n, i;
	int ret;

	for (; len; len -= n, roff += n, src += n) {
		n = (u32)fw_min_u64(len, sizeof(block));
		ret = fwos_mem_read(card->host, port, rkey, flags, roff, block, n);
		if (ret)
			return ret;
		for (i = 0; i < n; i += w) {
			if (w == 4) {
				u32 a, b;

				memcpy(&a, (u8 *)block + i, 4);
				memcpy(&b, src + i, 4);
				a += (u32)head->scale * b;
				memcpy((u8 *)block + i, &a, 4);
			} else {
				u64 a, b;

				memcpy(&a, (u8 *)block + i, 8);
				memcpy(&b, src + i, 8);
				a += (u64)head->scale * b;
				memcpy((u8 *)block + i, &a, 8);
			}
		}
		ret = fwos_mem_write(card->host, port, rkey, flags, roff, block, n);
		if (ret)
			return ret;
	}
	return 0;
}

int fw_strided_rx_put(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	const u32 flags = FWOS_MEM_REMOTE | NICOFF_ACCESS_REMOTE_WRITE;
	const struct fw_pkt_hdr *h = &pkt->hdr;
	struct fw_port *port = fw_port_find(card, h->dst_port);
	const struct fw_sput_head *head = (const struct fw_sput_head *)pkt->payload;
	const struct fwos_seg *piece;
	const u8 *from;
	u64 data;
	int err = 0;
	u32 n, i;

	if (h->msg_id == peer->err_msg_id)
		return FW_RX_DONE;	/* refused already: the rest goes too */
	if (!fw_sput_pieces(pkt, &n, &data))
		return FW_RX_DONE;	/* malformed: ignored */
	if (!port)
		err = -ECONNREFUSED;
	else if (!h->offset && h->span_end < h->roff)
		err = -ERANGE;
	else if (!h->offset && (!data || data < h->total || head->acc))
		/*
		 * The whole span, before the first byte.  A message of one
		 * packet with bytes needs no look of its own: its pieces are
		 * all of it, and the scatter checks each before it writes
		 * any.  An accumulate's pieces are read and written one by one.
		 */
		err = fwos_mem_write(card->host, port->id, h->rkey, flags, h->span_end, NULL, 0);
	piece = (const struct fwos_seg *)(pkt->payload + FW_SPUT_PIECES_OFF);
	from = (const u8 *)(piece + n);
	if (!err && !head->acc)		/* the table is a scatter list as it stands */
		err = fwos_mem_scatter(card->host, port->id, h->rkey, flags, piece, n, from);
	for (i = 0; i < n && !err && head->acc; i++) {
		err = fw_strided_add(card, port->id, h->rkey, piece[i].off, from, piece[i].len,
				     head);
		from += piece[i].len;
	}
	if (err)
		fw_rma_refuse(card, peer, port, h, err,
			      head->acc ? NICOFF_OP_ACC_STRIDED : NICOFF_OP_PUT_STRIDED);
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

	err = fw_rma_req_check(card, port, h);
	if (!err)
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

FW_STATIC_ASSERT(FW_SEGS_MAX == NICOFF_VECTOR_MAX_SEGS, "the card holds a whole list");

/* Segments copied from a command's list per read: a small stack buffer. */
#define FW_VEC_BATCH	8

/*
 * Copy the list of vector command @d into @v's local and remote segment
 * lists and check it whole.  Copied once and checked after: the process
 * may rewrite its list at will.
 */
static int fw_vector_segs(struct fw_card *card, struct fw_port *port,
			  const struct nicoff_op_strided *d, struct fw_vector_op *v)
{
	struct nicoff_vector_seg seg[FW_VEC_BATCH];
	u64 end;
	u32 i, j;
	int ret;

	if (fw_add_overflow(d->desc_off, (u64)d->segments * sizeof(seg[0]), &end))
		return -ERANGE;
	for (i = 0; i < d->segments; i += FW_VEC_BATCH) {
		u32 n = fw_min_u32(FW_VEC_BATCH, d->segments - i);

		ret = fwos_mem_read(card->host, port->id, d->desc_mr, 0,
				    d->desc_off + i * sizeof(seg[0]), seg, n * sizeof(seg[0]));
		for (j = 0; j < n && !ret; j++) {
			ret = fw_segs_add(&v->local, seg[j].local_off, seg[j].len);
			if (!ret)
				ret = fw_segs_add(&v->remote, seg[j].remote_off, seg[j].len);
		}
		if (ret)
			return ret;
	}
	return 0;
}

int fw_vector_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_strided *d = &cmd->strided;
	bool put = cmd->opcode == NICOFF_OP_PUT_VECTOR;
	struct fw_vector_op *v;
	struct fw_xfer_op *x;
	struct fw_op *op;
	u64 span;
	int ret;

	if (d->dst_card >= card->cfg.num_nodes || d->segments > NICOFF_VECTOR_MAX_SEGS)
		return -EINVAL;
	op = fw_op_start(card, port, d->dst_card, put ? FW_OP_VPUT : FW_OP_VGET, cmd->tag);
	if (!op)
		return -ENOMEM;
	v = fw_vector_op(op);
	x = &v->s.x;
	ret = fw_vector_segs(card, port, d, v);
	if (!ret) {
		/* Cursors only over lists that passed: a failed copy may be partial. */
		fw_cursor_init_segs(&x->cur, d->off, &v->local);
		fw_cursor_init_segs(&v->s.rcur, d->remote_off, &v->remote);
		if (x->cur.len > card->cfg.max_msg)
			ret = -EMSGSIZE;
		else if (!fw_cursor_span(&v->s.rcur, &span) || !fw_cursor_span(&x->cur, &span))
			ret = -ERANGE;
		else
			ret = fw_rma_local_check(card, port, d->mr, span, put);
	}
	return fw_strided_send(card, op, d, ret);
}

/* The payload of a GET_VECTOR_REQ for @n segments. */
static u32 fw_vector_wire_len(u32 n)
{
	return 8 + 16 * n;
}

/* A vector GET's request: the remote segment list, for the target to walk. */
int fw_vector_build_get(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
			struct fw_pkt **out)
{
	const struct fw_segs *r = &fw_vector_op(op)->remote;
	struct fw_pkt *pkt = fw_rma_req(card, peer, op, fw_vector_wire_len(r->n));
	u64 *w;
	u32 i;

	if (!pkt)
		return FW_BUILD_NOMEM;
	w = (u64 *)pkt->payload;
	w[0] = r->n;
	for (i = 0; i < r->n; i++) {
		w[1 + 2 * i] = r->off[i];
		w[2 + 2 * i] = r->start[i + 1] - r->start[i];
	}
	*out = pkt;
	return FW_BUILD_PKT;
}

/*
 * Whether a GET_VECTOR_REQ's list is sound (0, or why it is refused), and
 * the end of the region span it reads, checked before anything is kept.
 */
static int fw_vector_wire_check(const struct fw_pkt *pkt, u64 *span)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	const u64 *w = (const u64 *)pkt->payload;
	u64 sum = 0, extent = 0, end;
	u32 i;

	if (h->len < 8 || w[0] > FW_SEGS_MAX || h->len != fw_vector_wire_len((u32)w[0]))
		return -EINVAL;
	for (i = 0; i < w[0]; i++) {
		u64 off = w[1 + 2 * i], len = w[2 + 2 * i];

		if (!len || fw_add_overflow(sum, len, &sum))
			return -EINVAL;
		if (fw_add_overflow(off, len, &end))
			return -ERANGE;
		extent = fw_max_u64(extent, end);
	}
	if (sum != h->total)
		return -EINVAL;
	return fw_add_overflow(h->roff, extent, span) ? -ERANGE : 0;
}

int fw_vector_rx_get_req(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	const u64 *w = (const u64 *)pkt->payload;
	struct fw_port *port = fw_port_find(card, h->dst_port);
	struct fw_vector_op *v;
	int err, verdict;
	struct fw_op *op;
	u64 span = 0;
	u32 i;

	err = fw_rma_req_check(card, port, h);
	if (!err)
		err = fw_vector_wire_check(pkt, &span);
	op = fw_rma_answer(card, peer, port, h, err, span, FW_OP_VGETRESP, NICOFF_OP_GET_VECTOR,
			   &verdict);
	if (!op)
		return verdict;
	v = fw_vector_op(op);
	for (i = 0; i < w[0]; i++)
		fw_segs_add(&v->local, w[1 + 2 * i], w[2 + 2 * i]);	/* checked above */
	fw_cursor_init_segs(&v->s.x.cur, h->roff, &v->local);
	fw_tx_enqueue(peer, op);
	return FW_RX_DONE;
}
