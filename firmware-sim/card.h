/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The firmware's private state: card, ports, peers (one reliable
 * connection each), operations, posted receives and messages being
 * received.  Shared by card.c, peer.c, transport.c, msg.c and rma.c only.
 */
#ifndef NICOFF_FW_CARD_H
#define NICOFF_FW_CARD_H

#include "fw.h"
#include "fw_os.h"
#include "fw_list.h"
#include "fw_pkt.h"
#include "atomic.h"
#include "engine.h"
#include "cursor.h"
#include "timer.h"
#include <uapi/nicoff.h>

/*
 * The smallest MTU a card takes: room for a strided put's head, one table
 * entry and one 8-byte element.
 */
#define FW_MTU_MIN		64u

/*
 * Those up to FW_OP_VGETRESP move data (struct fw_xfer_op), the rest send
 * one packet (fw_ctrl_op); engine.c says what else each one is.
 */
enum fw_op_kind {
	FW_OP_SEND,		/* a port's SEND (struct fw_send_op) */
	FW_OP_PUT,		/* a port's PUT */
	FW_OP_GET,		/* a port's GET */
	FW_OP_GETRESP,		/* data owed to a peer's GET */
	FW_OP_SPUT,		/* a port's strided PUT (struct fw_strided_op) */
	FW_OP_SACC,		/* a port's strided accumulate (struct fw_strided_op) */
	FW_OP_SGET,		/* a port's strided GET (struct fw_strided_op) */
	FW_OP_SGETRESP,		/* data owed to a peer's strided GET (struct fw_strided_op) */
	FW_OP_VPUT,		/* a port's vector PUT (struct fw_vector_op) */
	FW_OP_VGET,		/* a port's vector GET (struct fw_vector_op) */
	FW_OP_VGETRESP,		/* data owed to a peer's vector GET (struct fw_vector_op) */
	FW_OP_ERR,		/* one ERR packet */
	FW_OP_ABORT,		/* one ABORT packet */
	FW_OP_RNR,		/* one RNR packet (msg.c) */
	FW_OP_PROBE,		/* one PROBE packet (transport.c) */
};

/* Which of its peer's queues an operation is on. */
enum fw_op_queue {
	FW_OPQ_NONE,
	FW_OPQ_TX,		/* peer->txq: packets still to build */
	FW_OPQ_PENDING,		/* peer->pending: waits for the peer, not for acks */
	FW_OPQ_RNR,		/* peer->rnrq: a SEND refused (RNR) or held behind one */
};

/*
 * Something this card sends to a peer: what every kind shares, embedded
 * first in the kind's own struct (engine.c gives each kind's size).  It
 * lives until it is done (its completion posted, or none owed) and no
 * send record refers to it.
 */
struct fw_op {
	struct fw_list peer_node;	/* peer->ops */
	struct fw_list port_node;	/* port->ops while the port lives */
	struct fw_list q_node;		/* peer->txq, peer->pending or peer->rnrq */
	struct fw_peer *peer;
	struct fw_port *port;		/* NULL once detached, or for ERR/ABORT */
	u8 kind;			/* enum fw_op_kind */
	u8 queue;			/* enum fw_op_queue */
	bool done;			/* completion posted, or none owed */
	bool all_sent;			/* every packet built */
	bool acked;			/* every packet acknowledged */
	u32 nrec;			/* send records still unacknowledged */
	u32 need_epoch;			/* SEND/PUT: peer's epoch and error count */
	u32 need_err;			/*  that vouch no ERR is owed for it */
	u32 lport;			/* our port number */
	u32 dst_port;			/* the peer's port */
	u64 cmd_tag;
	u64 msg_id;
};

/* ERR, ABORT, RNR: one packet, header only. */
struct fw_ctrl_op {
	struct fw_op op;
	s32 err;			/* ERR: errno to send; RNR: why refused */
	u64 seq;			/* RNR: the refused packet's epoch << 32 | seq */
};

/* SEND (inside struct fw_send_op), PUT, GET, GETRESP: data between regions. */
struct fw_xfer_op {
	struct fw_op op;
	/*
	 * The bytes it puts in packets (SEND, PUT: region key; GETRESP: region
	 * rkey) or, for GET, where the answer goes (region key); cur.pos: bytes
	 * put in packets so far.
	 */
	struct fw_cursor cur;
	u32 key;			/* local handle (SEND, PUT, GET) */
	u32 rkey;			/* the target's region (PUT, GET, GETRESP) */
	u64 roff;			/* offset in the target's region (PUT, GET) */
	u64 rcvd;			/* GET: bytes written back so far */
	s32 err;			/* GET: first write error */
};

struct fw_send_op {
	struct fw_xfer_op x;
	u64 msg_tag;
	/* Refused by the receiver (RNR) or held behind one (msg.c). */
	bool rnr_named;			/* the peer refuses its port pair until it comes again */
	bool resend;			/* put back on txq after a refusal */
	u32 rnr_seq;			/* first packet of its latest attempt */
	u64 rnr_at;			/* may go again then (0: right behind the pair's earlier) */
	u64 rnr_end;			/* -ENOBUFS then; 0 until first refused or held */
	u64 rnr_wait;			/* its next backoff */
};

/* The next wait of a retry: twice the last, at most rto_max_ns. */
static inline u64 fw_backoff(const struct fw_config *cfg, u64 rto)
{
	return rto > cfg->rto_max_ns >> 1 ? cfg->rto_max_ns : rto << 1;
}

/*
 * A strided PUT or GET, or the answer to a strided GET: the shapes its
 * cursors walk.  x.cur walks this card's side (local, or the target's own
 * for an answer); rcur, of a PUT, finds where each piece goes.
 */
struct fw_strided_op {
	struct fw_xfer_op x;
	struct fw_shape local;
	struct fw_shape remote;
	struct fw_cursor rcur;
	u32 acc;			/* enum nicoff_acc_type of an accumulate */
	s64 scale;
};

/*
 * A vector PUT or GET, or the answer to a vector GET: a strided operation
 * whose cursors walk segment lists instead of shapes (local: this card's
 * side, the target's own for an answer), so that the same code cuts its
 * packets and places its bytes.
 */
struct fw_vector_op {
	struct fw_strided_op s;
	struct fw_segs local;
	struct fw_segs remote;
};

static inline bool fw_op_is_xfer(const struct fw_op *op)
{
	return op->kind <= FW_OP_VGETRESP;
}

/* Whether the kind of @op has all of @flags (FW_OPF_*, engine.h). */
static inline bool fw_op_is(const struct fw_op *op, u8 flags)
{
	return (fw_op_info_of(op->kind)->flags & flags) == flags;
}

static inline struct fw_ctrl_op *fw_ctrl_op(struct fw_op *op)
{
	return fw_container_of(op, struct fw_ctrl_op, op);
}

static inline struct fw_xfer_op *fw_xfer_op(struct fw_op *op)
{
	return fw_container_of(op, struct fw_xfer_op, op);
}

static inline struct fw_send_op *fw_send_op(struct fw_op *op)
{
	return fw_container_of(fw_xfer_op(op), struct fw_send_op, x);
}

static inline struct fw_strided_op *fw_strided_op(struct fw_op *op)
{
	return fw_container_of(fw_xfer_op(op), struct fw_strided_op, x);
}

static inline struct fw_vector_op *fw_vector_op(struct fw_op *op)
{
	return fw_container_of(fw_strided_op(op), struct fw_vector_op, s);
}

/* Bytes of @op put in packets so far: 0 for a one-packet kind. */
static inline u64 fw_op_sent(const struct fw_op *op)
{
	return fw_op_is_xfer(op) ? fw_container_of(op, const struct fw_xfer_op, op)->cur.pos : 0;
}

/* A packet sent and not yet acknowledged: the card's copy of it. */
struct fw_srec {
	struct fw_pkt *pkt;
	struct fw_op *op;
	u64 ts;				/* last transmission */
	u32 tries;
};

/*
 * The reliable connection with one peer node, both directions, shared by
 * all ports.  Created when first needed and kept until the card goes.
 */
struct fw_peer {
	struct fw_peer *hnext;		/* hash chain */
	u32 node;
	struct fw_timer timer;		/* earliest of its deadlines, in card->timers */

	/* Our stream to the peer. */
	u32 epoch;
	u32 snd_una;			/* oldest unacknowledged sequence */
	u32 snd_nxt;			/* next sequence to use */
	u32 rec_head;			/* recs[] slot of snd_una */
	u32 retries;			/* consecutive timeouts */
	u32 err_tx;			/* ERR packets queued in this epoch */
	bool syn;			/* next packet opens the epoch */
	bool ackreq_out;		/* a packet asking for an ack is unacked: */
	u32 ackreq_seq;			/*  this one */
	u64 rto;
	u64 rto_at;			/* retransmission deadline or FW_NEVER */
	struct fw_srec *recs;		/* ring of rec_cap records, grown to window */
	u32 rec_cap;
	struct fw_list txq;		/* ops with packets to build */
	struct fw_list pending;		/* ops waiting for a reply or a verdict */
	struct fw_list ops;		/* every op of ours with this peer */

	/* The peer's stream to us. */
	u32 rx_epoch;			/* 0 until the first SYN */
	u32 rx_prev_epoch;
	u32 rcv_nxt;
	u32 err_rx;			/* ERR packets accepted in rx_epoch */
	bool ack_pending;
	u32 ack_count;			/* accepted since our last acknowledgment */
	u64 ack_at;
	u64 wd_base;			/* last sign of life while the peer owes us */
	u32 mute_rounds;		/* probes it answered since, owing still */
	struct fw_list rx_msgs;		/* incomplete incoming messages */
	u64 err_msg_id;			/* last message of its we answered with ERR */

	struct fw_peer *flush_next;	/* card->flush_head: to flush after a detach */
	bool flush_mark;

	struct fw_apeer *atomic;	/* remote atomics with the peer (atomic.c) */

	/* Adaptive retransmission timeout (transport.c, RFC 6298). */
	u64 rto_base;			/* timeout before backoff: srtt + 4 rttvar, bounded */
	u64 srtt, rttvar;		/* once rtt_valid */
	u64 rtt_ts;			/* when the packet being timed left */
	u64 progress_at;		/* when snd_una last moved */
	u32 rtt_seq;			/* the packet being timed, if rtt_timing */
	bool rtt_timing;
	bool rtt_valid;
	bool ooo_pending;		/* dropped one out of order: say so (FW_PKT_F_OOO) */
	bool fr_active;			/* resent everything from fr_una already */
	u32 fr_una;
	u64 tlp_at;			/* tail-loss probe due, FW_NEVER if none */
	bool tlp_sent;			/* one since the last progress */

	/* Receiver not ready (msg.c). */
	struct fw_list rnrq;		/* our SENDs refused or held: runs per port pair */
	u64 rnr_at;			/* earliest due time on rnrq, FW_NEVER if none */
	struct fw_list rblocks;		/* its port pairs we refuse until a message comes again */
	u64 rnr_msg_id;			/* its last message refused: drop the rest */
};

struct fw_port {
	u32 id;
	struct fw_list posted;		/* struct fw_recv, in posting order */
	struct fw_list unexp;		/* unmatched struct fw_rmsg, arrival order */
	struct fw_list bound;		/* incomplete fw_rmsg matched to a receive */
	struct fw_list ops;		/* struct fw_op of this port */
	u64 unexp_used;			/* bytes charged to unexpected messages */
	u64 remote_errors;
	struct fw_remote_error last_remote;
};

/* A posted receive buffer (GM's receive token). */
struct fw_recv {
	struct fw_list node;		/* port->posted */
	u64 cmd_tag;
	u32 mr;
	u32 src_card;
	u32 src_port;
	struct fw_cursor cur;		/* where the message goes in region mr */
	u64 tag;
	u64 tag_mask;
};

/* A message arriving from a peer. */
struct fw_rmsg {
	struct fw_list peer_node;	/* peer->rx_msgs until complete */
	struct fw_list port_node;	/* port->unexp or port->bound */
	struct fw_port *port;
	struct fw_recv *recv;		/* NULL while unexpected */
	u8 **chunks;			/* unexpected: its copy, reserved in full (msg.c) */
	u64 msg_id;
	u32 src_node;
	u32 src_port;
	u64 msg_tag;
	u64 total;
	u64 rcvd;
	u64 charge;			/* against port->unexp_used and card->unexp_used */
	s32 status;			/* first write error */
};

/* This card's pings waiting for their answer (ping.c). */
struct fw_ping_card {
	struct fw_list pings;		/* struct fw_ping, oldest first */
	u64 next_id;
};

struct fw_card {
	struct fw_host *host;
	struct fw_config cfg;
	struct fw_stats stats;
	u64 dead_ns;			/* silence after which an owing peer is dead */
	u64 next_msg_id;
	u64 unexp_used;			/* bytes charged to unexpected messages, all ports */
	bool dying;
	struct fw_peer *flush_head;	/* peers a detaching port touched */
	struct fw_port **ports;
	u32 nports;
	struct fw_peer **buckets;	/* peer hash table */
	u32 hash_bits;
	u32 npeers;
	struct fw_timer_heap timers;	/* every armed deadline of the card */
	struct fw_atomic_card atomic;	/* remote atomics (atomic.c) */
	struct fw_bcard *bar;		/* process groups (barrier.c), from the first */
	struct fw_ping_card ping;	/* pings (ping.c) */
	struct fw_bccard *bcast;	/* broadcast state of groups (bcast.c), from the first */
};

/* What a receive handler did with an in-order packet. */
enum fw_rx_verdict {
	FW_RX_DONE,			/* accepted; free the packet */
	FW_RX_RNR,			/* not accepted (no room): drop, no ack */
};

/* What building an operation's next packet gave. */
enum fw_build {
	FW_BUILD_PKT,			/* a packet */
	FW_BUILD_NOMEM,			/* nothing now; try again later */
	FW_BUILD_GONE,			/* the op failed and left the queue */
};

/* card.c */
struct fw_port *fw_port_find(struct fw_card *card, u32 id);
struct fw_op *fw_op_new(struct fw_card *card, struct fw_peer *peer, struct fw_port *port,
			u8 kind, u64 cmd_tag);
void fw_op_unqueue(struct fw_op *op);
void fw_op_put(struct fw_card *card, struct fw_op *op);
void fw_op_finish(struct fw_card *card, struct fw_op *op, s32 status, u64 result);
void fw_post(struct fw_card *card, u32 port, const struct nicoff_cqe *cqe);
void fw_complete(struct fw_card *card, u32 port, u64 tag, u8 opcode, s32 status, u64 result);

/* peer.c */
struct fw_peer *fw_peer_find(struct fw_card *card, u32 node);
struct fw_peer *fw_peer_get(struct fw_card *card, u32 node);
void fw_peers_free(struct fw_card *card);

/* transport.c */
/* A new operation of @port towards card @dst for the command @tag, or NULL (-ENOMEM). */
struct fw_op *fw_op_start(struct fw_card *card, struct fw_port *port, u32 dst, u8 kind, u64 tag);
/* Give @op (from fw_op_start, fields set) a message id and put it on its peer's stream. */
void fw_op_go(struct fw_card *card, struct fw_op *op);
void fw_tx_enqueue(struct fw_peer *peer, struct fw_op *op);
void fw_tx_flush(struct fw_card *card, struct fw_peer *peer);
void fw_tx_queue_ctrl(struct fw_card *card, struct fw_peer *peer, u8 kind, u32 lport,
		      u32 rport, u64 msg_id, s32 err, struct fw_list *before);
void fw_reply_err(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt_hdr *h,
		  s32 err);
bool fw_reply_rnr(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt_hdr *h,
		  s32 why);
void fw_peer_pending_add(struct fw_card *card, struct fw_peer *peer, struct fw_op *op);
void fw_peer_owe(struct fw_card *card, struct fw_peer *peer);
void fw_peer_rearm(struct fw_card *card, struct fw_peer *peer);
void fw_peer_timer(struct fw_card *card, struct fw_peer *peer, u64 now);
void fw_peer_release(struct fw_card *card, struct fw_peer *peer);
/* The stream engine: its packets, and the replies it takes itself. */
void fw_stream_rx(struct fw_card *card, struct fw_pkt *pkt);
int fw_stream_rx_err(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);
int fw_stream_rx_rnr(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);
/* The one packet of an ERR, ABORT or RNR operation. */
int fw_ctrl_build(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
		  struct fw_pkt **out);
struct fw_pkt *fw_pkt_new(struct fw_card *card, struct fw_peer *peer, u8 type, u32 lport,
			  u32 rport, u32 len);
/* CRC, count and hand to the fabric a packet outside the go-back-N stream. */
void fw_pkt_send(struct fw_card *card, struct fw_pkt *pkt);
/* Its CRC only (FW_PKT_F_NOCRC: of the header). */
void fw_pkt_seal(struct fw_pkt *pkt);

/* msg.c */
int fw_msg_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd);
int fw_msg_build(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
		 struct fw_pkt **out);
int fw_msg_rx_data(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);
int fw_msg_rx_abort(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);
void fw_msg_abort_peer(struct fw_card *card, struct fw_peer *peer, s32 status);
void fw_msg_port_detach(struct fw_card *card, u32 port);
void fw_msg_rx_rnr(struct fw_card *card, struct fw_peer *peer, const struct fw_pkt_hdr *h);
bool fw_msg_rnr_hold(struct fw_card *card, struct fw_peer *peer, struct fw_op *op);
void fw_msg_rnr_run(struct fw_card *card, struct fw_peer *peer, u64 now);
void fw_msg_op_detach(struct fw_card *card, struct fw_op *op);
void fw_msg_peer_reset(struct fw_card *card, struct fw_peer *peer);

/* rma.c */
int fw_rma_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd);
int fw_rma_build(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
		 struct fw_pkt **out);
int fw_rma_rx_put(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);
int fw_rma_rx_get_req(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);
/*
 * The one packet of GET request @op (plain, strided or vector), with @len
 * bytes of payload for the caller to fill with the remote layout; NULL if
 * out of memory.
 */
struct fw_pkt *fw_rma_req(struct fw_card *card, struct fw_peer *peer, struct fw_op *op, u32 len);
/* The checks every GET request's header passes at its target: 0 or why refused. */
int fw_rma_req_check(struct fw_card *card, const struct fw_port *port, const struct fw_pkt_hdr *h);
int fw_rma_rx_get_resp(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);
int fw_rma_local_check(struct fw_card *card, struct fw_port *port, u32 mr, u64 span, bool put);
void fw_rma_refuse(struct fw_card *card, struct fw_peer *peer, struct fw_port *port,
		   const struct fw_pkt_hdr *h, s32 err, u32 opcode);
struct fw_op *fw_rma_answer(struct fw_card *card, struct fw_peer *peer, struct fw_port *port,
			    const struct fw_pkt_hdr *h, int err, u64 span, u8 kind, u32 opcode,
			    int *verdict);

/* strided.c */
int fw_strided_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd);
int fw_strided_build(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
		     struct fw_pkt **out);
int fw_strided_rx_put(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);
int fw_strided_rx_get_req(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);
int fw_vector_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd);
int fw_vector_build_get(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
			struct fw_pkt **out);
int fw_vector_rx_get_req(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);

/* barrier.c: process groups and their barriers (see barrier.h) */
int fw_barrier_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd);
void fw_barrier_rx(struct fw_card *card, struct fw_pkt *pkt);
void fw_barrier_port_detach(struct fw_card *card, u32 port);
void fw_barrier_card_free(struct fw_card *card);

/* ping.c: card-to-card round trips */
void fw_ping_init(struct fw_card *card);
int fw_ping_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd);
void fw_ping_rx(struct fw_card *card, struct fw_pkt *pkt);
void fw_ping_port_detach(struct fw_card *card, u32 port);
void fw_ping_destroy(struct fw_card *card);

#endif
