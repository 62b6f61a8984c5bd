/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Remote atomics: the state card.h embeds in the card and hangs off each
 * peer, and the calls card.c and transport.c make.  See atomic.c and
 * Documentation/atomics.md for the protocol.
 */
#ifndef NICOFF_FW_ATOMIC_H
#define NICOFF_FW_ATOMIC_H

#include "fw_util.h"
#include "fw_list.h"
#include "timer.h"

struct fw_card;
struct fw_peer;
struct fw_port;
struct fw_pkt;
struct nicoff_cmd;

/* Payload of FW_PKT_ATOMIC_REQ and FW_PKT_ATOMIC_REPLY. */
struct fw_atomic_body {
	u8 opcode;		/* NICOFF_OP_FETCH_ADD, _FETCH_WRITE, _COMPARE_SWAP */
	u8 width;		/* 4 or 8 */
	u16 reserved;		/* zero */
	u32 reserved1;		/* zero */
	u64 operand;		/* request: the operand; reply: the word's old value */
	u64 compare;		/* request, COMPARE_SWAP: the value compared */
};

FW_STATIC_ASSERT(sizeof(struct fw_atomic_body) == 24, "fw_atomic_body must stay 24 bytes");

/* An atomic of one of our ports, from its command to its completion. */
struct fw_aop {
	struct fw_list node;		/* ap->waitq while it waits for credit */
	u64 cmd_tag;
	u64 roff;
	u64 operand;
	u64 compare;
	u64 due;			/* next retransmission */
	u64 rto;
	u32 lport;
	u32 dst_port;
	u32 rkey;
	u32 seq;			/* once sent */
	u32 tries;			/* transmissions so far */
	u8 opcode;
	u8 width;
};

/* A reply kept for a requester card: what its request seq got. */
struct fw_atomic_ent {
	u32 seq;
	u32 src_port;
	s32 status;
	bool valid;
	u64 old;
};

/* Atomic state with one peer card, both roles; created on first use. */
struct fw_apeer {
	struct fw_list node;		/* card->atomic.peers */
	struct fw_peer *peer;

	/* Requester: our atomics to the peer, sequence numbers [low, next). */
	u32 next;
	u32 low;			/* oldest still waiting for its reply; next if none */
	u32 inflight;
	struct fw_aop **win;		/* credit slots, by seq % credit */
	struct fw_list waitq;		/* beyond the credit, in command order */
	u64 ack_at;			/* when to tell the target our mark, FW_NEVER */
	u64 ack_rto;			/* then how long to wait for its confirmation */
	u32 ack_tries;
	struct fw_timer timer;		/* earliest of the timers above (may be early) */

	/* Target: the replies kept for the peer's requests. */
	u32 epoch;			/* the peer's card epoch; 0 before its first */
	u32 prev_epoch;
	u32 rlow;			/* the peer has seen every reply below this */
	u32 live;			/* valid entries */
	struct fw_atomic_ent *ents;	/* credit entries, by seq % credit */
};

struct fw_atomic_card {
	struct fw_list peers;		/* struct fw_apeer */
	u32 credit;			/* outstanding atomics per (requester, target) */
};

void fw_atomic_init(struct fw_card *card);
void fw_atomic_destroy(struct fw_card *card);
int fw_atomic_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd);
/* A packet of the atomics' types for this card (engine.c routes them). */
void fw_atomic_rx(struct fw_card *card, struct fw_pkt *pkt);
void fw_atomic_port_detach(struct fw_card *card, u32 port);

#endif
