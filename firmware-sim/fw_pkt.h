/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The wire format between cards.  A packet is a fixed 96-byte header and
 * hdr.len payload bytes.  Fields are in host byte order: the fabric never
 * leaves the machine (module or simulator).  The fabrics route on
 * hdr.dst_node and size a packet as sizeof(struct fw_pkt_hdr) + hdr.len.
 *
 * Reliability is per (source node, destination node) connection, shared by
 * all ports: seq numbers the sender's stream within its epoch, ack/ack_epoch
 * acknowledge the reverse stream cumulatively (every seq before ack arrived).
 */
#ifndef NICOFF_FW_PKT_H
#define NICOFF_FW_PKT_H

#include "fw_util.h"

enum fw_pkt_type {
	FW_PKT_ACK = 1,		/* acknowledgment only: takes no sequence number */
	FW_PKT_DATA = 2,	/* a fragment of a SEND */
	FW_PKT_PUT = 3,		/* a fragment of a PUT */
	FW_PKT_GET_REQ = 4,	/* asks for [roff, roff + total) of region rkey */
	FW_PKT_GET_RESP = 5,	/* a fragment of the answer to a GET_REQ */
	FW_PKT_ERR = 6,		/* error reply about the peer's message msg_id */
	FW_PKT_ABORT = 7,	/* the sender gave up message msg_id half way */
	/*
	 * Remote atomics (atomic.c), outside the go-back-N stream: epoch is
	 * the requester card's epoch, seq its atomic sequence number to the
	 * target, ack its mark (every reply below it seen); the payload is a
	 * struct fw_atomic_body.  REQ: roff, rkey.  REPLY: err, old value.
	 * ACK: the mark only, no payload; the requester's has ACKREQ, the
	 * target's, which confirms it, has not.
	 */
	FW_PKT_ATOMIC_REQ = 8,
	FW_PKT_ATOMIC_REPLY = 9,
	FW_PKT_ATOMIC_ACK = 10,
	/*
	 * Barriers of process groups (barrier.c), outside the go-back-N
	 * stream, header only, with struct fw_barrier_body in its typed
	 * part.  BARRIER: one message of a barrier.  NACK: the receiver
	 * misses the sender's message of that epoch.  STATE: answer to a
	 * NACK that cannot be a resend: err -EAGAIN (not there yet), -ENOENT
	 * (no such group), or why it failed.
	 */
	FW_PKT_BARRIER = 11,
	FW_PKT_BARRIER_NACK = 12,
	FW_PKT_BARRIER_STATE = 13,
	/*
	 * Receiver not ready (msg.c), in the go-back-N stream: the DATA
	 * packet that opened the peer's message msg_id was accepted (and
	 * acknowledged) but the message refused; its other fragments are
	 * dropped.  Reliable, and counted in err_count like ERR.  roff: that
	 * packet's epoch << 32 | seq; err: -ENOBUFS (no receive and no room
	 * on port src_port: it refuses every message from dst_port until this
	 * one comes again or is aborted), -EAGAIN (refused because an earlier
	 * message of the same port pair is awaited).
	 */
	FW_PKT_RNR = 14,
	/*
	 * Pings (ping.c), outside the go-back-N stream, header only, with
	 * struct fw_ping_body in its typed part; epoch is the initiator's
	 * card epoch.  PING: a probe, answered by the card itself.  PONG: its
	 * answer, the body and epoch echoed; err -ECONNREFUSED if no port
	 * dst_port is open.
	 */
	FW_PKT_PING = 15,
	FW_PKT_PONG = 16,
	/*
	 * Strided put and get (strided.c), in the go-back-N stream.  PUT_STRIDED:
	 * pieces of a strided put or accumulate, each contiguous on both
	 * sides: the payload is their number (u32), the accumulate's element
	 * type (u32, 0 for a put) and scale (s64), a table of (region offset,
	 * length) pairs (u64 each), then their bytes; offset is the first one's place in the
	 * message, roff its region offset; span_end ends the remote span, which
	 * the packet at offset 0 starts (roff): the target checks it whole there.
	 * GET_STRIDED_REQ: a GET_REQ whose payload is the shape to read at
	 * roff, u64 each: levels, count[0..levels], stride[0..levels - 1];
	 * GET_RESP answers it.
	 */
	FW_PKT_PUT_STRIDED = 17,
	FW_PKT_GET_STRIDED_REQ = 18,
	/*
	 * Broadcast (bcast.c), outside the go-back-N stream, with struct
	 * fw_bcast_body (bcast.h) in the typed part.  BCAST: a fragment of a
	 * broadcast, multicast (dst_node FW_NODE_ANY), forwarded down a tree
	 * (FW_PKT_F_TREE) or resent to one member.  The others are header
	 * only.  NACK: fragments a member lacks, to the broadcast's root.
	 * SYNC: a member reports a round to its parent (err 0, or -EAGAIN: it
	 * lacks data); with ACKREQ, the parent asks for it.  VERDICT: rank 0
	 * ends a round (err 0) or has it sent again (-EAGAIN); with ACKREQ, a
	 * member asks for it.  STATE: -EAGAIN, alive but not there yet; any
	 * other errno, the group failed.
	 */
	FW_PKT_BCAST = 19,
	FW_PKT_BCAST_NACK = 20,
	FW_PKT_BCAST_SYNC = 21,
	FW_PKT_BCAST_VERDICT = 22,
	FW_PKT_BCAST_STATE = 23,
	/*
	 * GET_VECTOR_REQ (strided.c): a GET_REQ whose payload is the segment
	 * list to read, u64 each: their number, then (offset from roff,
	 * length) pairs, none of zero length; GET_RESP answers it.  A vector
	 * PUT travels as PUT_STRIDED packets.
	 */
	FW_PKT_GET_VECTOR_REQ = 24,
	/*
	 * PROBE (transport.c), in the go-back-N stream, header only: a
	 * question to a peer that owes us a reply and has been silent.  Its
	 * acknowledgment is the answer; nothing else is done with it.
	 */
	FW_PKT_PROBE = 25,
	FW_PKT_MAX,		/* first invalid type */
};

/* First packet of a connection epoch: the receiver restarts at its seq. */
#define FW_PKT_F_SYN		FW_BIT(0)
/* The sender's window is full or its queue drained: acknowledge at once. */
#define FW_PKT_F_ACKREQ		FW_BIT(1)
/*
 * The receiver dropped a packet out of order since it last acknowledged:
 * one before it is missing, so the sender resends from ack at once
 * (go-back-N fast retransmit) instead of waiting for its timeout.
 */
#define FW_PKT_F_OOO		FW_BIT(2)
/* The CRC covers the header only (broadcasts of a NICOFF_BCAST_F_NOCRC group). */
#define FW_PKT_F_NOCRC		FW_BIT(3)
/* A broadcast packet on the point-to-point tree: the receiver forwards it. */
#define FW_PKT_F_TREE		FW_BIT(4)
/* A broadcast fragment sent again for a NACK (its receiver asks for more on). */
#define FW_PKT_F_RESEND		FW_BIT(5)

/* dst_node of a packet the fabric multicast: every card of a range takes it. */
#define FW_NODE_ANY		0xffffffffu

/*
 * The typed part of the barrier packets' header, where the stream's
 * packets have msg_id to roff: header only, so a barrier message costs
 * no more on the wire than an ACK.
 */
struct fw_barrier_body {
	u64 epoch;		/* the barrier's */
	u64 value;		/* BARRIER: OR of what the sender heard (auto's choice) */
	u32 group;		/* the group's id */
	u32 size;		/* the group's size */
	u32 from;		/* the sender's rank */
	u32 to;			/* the receiver's rank */
	u64 reserved;		/* zero */
};

/* The typed part of PING and PONG: the PONG echoes it. */
struct fw_ping_body {
	u64 id;			/* the initiator's ping, unique per card epoch */
	u64 sent;		/* when this transmission left, on the initiator's clock */
	u64 reserved[3];	/* zero */
};

struct fw_pkt_hdr {
	u32 src_node;
	u32 dst_node;
	u32 src_port;
	u32 dst_port;
	u8 type;		/* enum fw_pkt_type */
	u8 flags;		/* FW_PKT_F_* */
	u16 reserved;		/* zero */
	u32 len;		/* payload bytes */
	u32 epoch;		/* sender's connection epoch (of seq and err_count) */
	u32 seq;		/* sender's sequence number; next one to use in an ACK */
	u32 ack_epoch;		/* epoch of the stream that ack acknowledges */
	u32 ack;		/* next sequence number expected from the receiver */
	u32 err_count;		/* ERR and RNR packets the sender queued in its epoch so far */
	u32 crc;		/* CRC-32C of header (this field zero) and payload */
	/* The typed part: what it holds depends on type. */
	union {
		/* The go-back-N stream's types and the atomics. */
		struct {
			u64 msg_id;	/* initiator's message number, unique per card */
			u64 offset;	/* byte offset of this fragment in the message */
			u64 total;	/* message, put or get length */
			union {
				u64 tag;	/* DATA: message tag */
				u64 span_end;	/* PUT_STRIDED: end of the remote span */
			};
			u64 roff;	/* PUT/GET: offset in the target's region */
		};
		struct fw_barrier_body bar;	/* FW_PKT_BARRIER* */
		struct fw_ping_body ping;	/* FW_PKT_PING, FW_PKT_PONG */
	};
	u32 rkey;		/* PUT/GET: the target's region */
	s32 err;		/* ERR, RNR, ATOMIC_REPLY, BARRIER_STATE: negative errno */
};

FW_STATIC_ASSERT(sizeof(struct fw_pkt_hdr) == 96, "fw_pkt_hdr must stay 96 bytes");
FW_STATIC_ASSERT(offsetof(struct fw_pkt_hdr, msg_id) == 48, "fw_pkt_hdr: no hidden padding");
FW_STATIC_ASSERT(sizeof(struct fw_barrier_body) == 40 &&
		 offsetof(struct fw_pkt_hdr, rkey) == 88, "fw_barrier_body: only msg_id to roff");
FW_STATIC_ASSERT(sizeof(struct fw_ping_body) == 40, "fw_ping_body: only msg_id to roff");

struct fw_pkt {
	struct fw_pkt_hdr hdr;
	u8 payload[];
};

#define FW_PKT_HDR_SIZE		((u32)sizeof(struct fw_pkt_hdr))

static inline u32 fw_pkt_size(const struct fw_pkt *pkt)
{
	return FW_PKT_HDR_SIZE + pkt->hdr.len;
}

#endif
