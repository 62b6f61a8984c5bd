/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The card firmware, as its host sees it.  One struct fw_card per emulated
 * card; all calls for one card come from the one context that owns it (a
 * card thread in the module, the event loop in the simulator).
 *
 * Contract with the host:
 * - fw_cmd() is given each command the process posted, in ring order, only
 *   when the host has reserved room for one completion on that port; the
 *   firmware then posts exactly one completion for it with fwos_complete(),
 *   now or later, unless the port is detached first.
 * - fw_rx() is given each packet the fabric delivers to this card, with the
 *   number of bytes the fabric delivered (the header's len may be corrupt).
 * - fw_poll() runs timers (retransmission, delayed acknowledgments) and
 *   returns the time of the next one, so an idle host can sleep until then.
 *   fw_cmd(), fw_rx() and fw_port_detach() may arm timers: call fw_poll()
 *   after them before sleeping.
 * - fwos_send() must not call back into the firmware (deliver later).
 */
#ifndef NICOFF_FW_H
#define NICOFF_FW_H

#include "fw_compat.h"
#include <uapi/nicoff.h>

struct fw_host;
struct fw_card;
struct fw_pkt;
struct nicoff_cmd;

#define FW_NEVER	((u64)-1)

/*
 * Completion-only opcode: a peer's put or get violated this port's memory
 * (bad rkey, bounds, rights).  The firmware cannot post it (the host holds
 * no room for it); the host reads fw_port_remote_errors() and posts one
 * best-effort when its completion ring has room.
 */
#define FW_CQE_REMOTE_ACCESS_ERROR	0xfe

struct fw_config {
	u32 node;		/* this card's node number */
	u32 num_nodes;		/* nodes on the fabric */
	u32 mtu;		/* payload bytes per packet */
	u32 window;		/* unacknowledged packets per peer */
	u64 rto_ns;		/* first retransmission timeout; floor of the adaptive one */
	u64 rto_max_ns;		/* backoff ceiling */
	u32 max_retries;	/* then the peer's sends fail with -ETIMEDOUT */
	u32 ack_delay_ns;	/* how long an acknowledgment may wait for a ride */
	u64 unexpected_bytes;	/* per port: unmatched messages buffered */
	u64 card_unexpected_bytes;	/* the same, summed over the card's ports */
	u64 max_msg;		/* largest message, put or get */
	u32 initial_seq;	/* first sequence number of every connection epoch */
	u32 epoch;		/* first connection epoch; a restarted card picks another */
	u32 atomic_table;	/* replies of remote atomics kept here (all requesters) */
	/* Process groups and barriers (barrier.c). */
	u32 max_groups;		/* per port */
	u32 max_group_size;	/* larger GROUP_CREATEs fail with -E2BIG; 1-FW_GROUP_SIZE_LIMIT */
	u64 card_group_members;	/* members of all the card's groups, lingering ones too */
	u32 barrier_alg;	/* groups created with NICOFF_BARRIER_DEFAULT run it */
	u32 barrier_rounds;	/* auto: timed barriers per candidate */
	u32 group_create_ms;	/* creation (and auto's trials) must end by then */
	u32 rto_fixed;		/* 1: no RTT estimate, every first timeout is rto_ns */
	/* Broadcast (bcast.c). */
	u32 bcast_channels;	/* of groups created with bcast_channels 0 */
	u32 bcast_hw;		/* 1: the fabric's multicast; 0: the point-to-point tree */
};

/* The largest group any card takes: the simulator's million nodes. */
#define FW_GROUP_SIZE_LIMIT	1048576u	/* 2^20 */

/* The longest a group's creation may be given: an hour. */
#define FW_GROUP_CREATE_MS_MAX	3600000u

void fw_config_default(struct fw_config *cfg, u32 node, u32 num_nodes);

/* NULL if the configuration is invalid or memory runs out. */
struct fw_card *fw_card_create(struct fw_host *host, const struct fw_config *cfg);

/*
 * What a running card's host may change, each a field of struct fw_config.
 * A value applies to what comes next: messages buffered already stay (a
 * budget lowered below what is used refuses new ones until enough are
 * received); groups created already keep their algorithm and size.
 */
enum fw_config_key {
	FW_CFG_UNEXPECTED_BYTES,	/* unexpected_bytes */
	FW_CFG_CARD_UNEXPECTED_BYTES,	/* card_unexpected_bytes */
	FW_CFG_MAX_GROUP_SIZE,		/* max_group_size: 1-FW_GROUP_SIZE_LIMIT */
	FW_CFG_CARD_GROUP_MEMBERS,	/* card_group_members */
	FW_CFG_BARRIER_ALG,		/* barrier_alg: < NICOFF_BARRIER_MAX */
	FW_CFG_GROUP_CREATE_MS,		/* group_create_ms: 1-FW_GROUP_CREATE_MS_MAX */
	FW_CFG_BCAST_CHANNELS,		/* bcast_channels: NICOFF_BCAST_MIN-MAX_CHANNELS */
	FW_CFG_BCAST_HW,		/* bcast_hw: 0 or 1 */
	FW_CFG_NUM_KEYS,
};

/* 0, or -EINVAL (unknown key, value out of range: nothing changes). */
int fw_set_config(struct fw_card *card, enum fw_config_key key, u64 value);
/* Frees everything; posts no completion. */
void fw_card_destroy(struct fw_card *card);

/*
 * A port opened / is closing: detach cancels all it has in flight silently.
 * attach: 0, -EBUSY (attached already), -EINVAL (port >= FW_MAX_PORTS),
 * -ENOMEM.
 */
#define FW_MAX_PORTS	65536u
int fw_port_attach(struct fw_card *card, u32 port);
void fw_port_detach(struct fw_card *card, u32 port);

/*
 * 0: the command is taken (or the port is detached: no completion then);
 * else the negative errno of its completion, posted already: -EOPNOTSUPP
 * when no engine has its opcode.
 */
int fw_cmd(struct fw_card *card, u32 port, const struct nicoff_cmd *cmd);
void fw_rx(struct fw_card *card, struct fw_pkt *pkt, u32 size);
u64 fw_poll(struct fw_card *card, u64 now);

/*
 * Per-card counters: the NICOFF_NL_STAT_FW entries of uapi/nicoff_lists.h,
 * which lists and explains them all, so that every one reaches netlink.
 */
struct fw_stats {
	u64
#define NICOFF_NL_STAT_FW(attr, name)	name,
#define NICOFF_NL_STAT_HOST(attr, name)
#include <uapi/nicoff_lists.h>
#undef NICOFF_NL_STAT_FW
#undef NICOFF_NL_STAT_HOST
	end[0];		/* closes the list */
};

void fw_get_stats(const struct fw_card *card, struct fw_stats *st);

/*
 * Atomics one card may have outstanding at one target card: the largest
 * power of two <= atomic_table / num_nodes (at least 1), the same on every
 * card configured alike.  Beyond it commands wait in the card's queue.
 */
u32 fw_atomic_credit(const struct fw_card *card);

/* The last remote access violation on a port. */
struct fw_remote_error {
	s32 status;		/* negative errno the initiator was given */
	u32 src_card;		/* the initiator */
	u32 src_port;
	u32 opcode;		/* NICOFF_OP_PUT or NICOFF_OP_GET */
};

/*
 * Remote access violations on @port since it was attached (0 if it is
 * not); @last, if not NULL, gets the latest one.
 */
u64 fw_port_remote_errors(const struct fw_card *card, u32 port, struct fw_remote_error *last);

#endif
