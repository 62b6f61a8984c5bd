/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Broadcast in process groups (bcast.c; seed 002): what the group engine
 * (barrier.c) tells it of a group's life, and its entry points in the
 * engine table.
 */
#ifndef NICOFF_FW_BCAST_H
#define NICOFF_FW_BCAST_H

#include "card.h"

/* Groups larger than this cannot broadcast (BCAST fails with -E2BIG). */
#define FW_BCAST_MAX_SIZE	4096u

/*
 * The typed part of the broadcast packets' header (in place of msg_id to
 * roff).  BCAST: a fragment of broadcast @seq, @offset its first byte,
 * @total the broadcast's length.  NACK: fragments @offset to @offset + 63
 * of @seq that the sender lacks, bit i of @total for fragment offset + i.
 * SYNC and VERDICT: @seq is the round.  The header's rkey holds the
 * channel (low 8 bits) and the round's low 24 bits for BCAST; err the
 * status of SYNC, VERDICT and STATE.
 */
struct fw_bcast_body {
	u64 seq;
	u64 offset;
	u64 total;
	u32 group;		/* the group's id */
	u16 size_lo;		/* the group's size, low 16 bits */
	u16 root;		/* BCAST, NACK: the broadcast's root */
	u16 from;		/* the sender's rank */
	u16 to;			/* the receiver's rank (multicast: 0xffff) */
	u32 reserved;		/* zero */
};

FW_STATIC_ASSERT(FW_BCAST_MAX_SIZE <= 0xffffu, "ranks of a broadcasting group fit 16 bits");

int fw_bcast_group_create(struct fw_card *card, u32 port, const struct nicoff_op_group *op);
/* The group is destroyed or its port detached: its broadcasts end. */
void fw_bcast_group_bury(struct fw_card *card, u32 port, u32 id);

int fw_bcast_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd);
void fw_bcast_rx(struct fw_card *card, struct fw_pkt *pkt);
void fw_bcast_port_detach(struct fw_card *card, u32 port);
void fw_bcast_destroy(struct fw_card *card);

#endif
