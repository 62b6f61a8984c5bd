/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The firmware's engines and the one table that routes to them
 * (engine.c).  An engine (messages, put and get, atomics, barriers, the
 * reliable stream they share) is a set of operations; the table says
 * which engine takes each command opcode and each packet type, what each
 * kind of operation sends, and in which order the card's lifecycle calls
 * the engines.  An opcode or a packet type the table does not name is
 * refused and counted (fw_stats bad_opcodes, bad_packets), never handed
 * to an engine.
 */
#ifndef NICOFF_FW_ENGINE_H
#define NICOFF_FW_ENGINE_H

#include "fw_util.h"

struct fw_card;
struct fw_peer;
struct fw_port;
struct fw_pkt;
struct fw_op;
struct nicoff_cmd;

/*
 * What an engine does for the card; an operation it has no use for is NULL.
 * An engine's deadlines are timers on the card's one heap (timer.h), each
 * registered with the function that runs it: the table has no poll.
 */
struct fw_engine_ops {
	const char *name;
	/* A new card: set up the engine's state (it cannot fail). */
	void (*init)(struct fw_card *card);
	/*
	 * A command of one of its opcodes, its common fields checked: 0 (the
	 * engine owes its completion) or the negative errno to complete it with.
	 */
	int (*cmd)(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd);
	/* A packet of one of its types for this card, CRC and length checked: the engine's now. */
	void (*rx)(struct fw_card *card, struct fw_pkt *pkt);
	/* Port @port closes: what it has in the engine goes, completing nothing. */
	void (*port_detach)(struct fw_card *card, u32 port);
	/* The card goes: everything goes, completing nothing. */
	void (*destroy)(struct fw_card *card);
	/*
	 * Process groups, which GROUP_CREATE makes (the barrier engine owns
	 * them; other engines serve the same groups).  group_create: set up
	 * the engine's side of group op->group_id of @port (0, or the errno
	 * that fails the creation, the engine then holding nothing of it).
	 * group_ready: the creation finished at every member (@status 0) or
	 * failed.  group_bury: the group ends, its operations completing
	 * (@complete: GROUP_DESTROY) or vanishing (the port detaches).
	 */
	int (*group_create)(struct fw_card *card, u32 port, const struct nicoff_op_group *op);
	void (*group_ready)(struct fw_card *card, u32 port, u32 id, s32 status);
	void (*group_bury)(struct fw_card *card, u32 port, u32 id, bool complete);
};

/* The receiver of one packet type. */
struct fw_pkt_info {
	const struct fw_engine_ops *engine;	/* takes the packet (its rx) */
	/*
	 * In the reliable stream, but for ACK: takes the packet once the
	 * stream has accepted it in order.  enum fw_rx_verdict.  NULL for a
	 * PROBE, which only asks for the acknowledgment.
	 */
	int (*deliver)(struct fw_card *card, struct fw_peer *peer, struct fw_pkt *pkt);
	/* The fabric may multicast it (dst_node FW_NODE_ANY), its CRC may skip the payload. */
	bool multicast;
};

/* What a kind of operation is (struct fw_op_info.flags). */
#define FW_OPF_COMMAND	FW_BIT(0)	/* a port's command: an ERR about its msg_id fails it */
#define FW_OPF_REQUEST	FW_BIT(1)	/* once sent, it waits on pending for its answer */
#define FW_OPF_ACKED	FW_BIT(2)	/* done once its packets are acknowledged and settled */
#define FW_OPF_ANSWER	FW_BIT(3)	/* data owed to a peer's request */

/* One kind of the card's operations (enum fw_op_kind). */
struct fw_op_info {
	u8 pkt_type;		/* the packets it sends (enum fw_pkt_type) */
	u8 opcode;		/* of the completion it owes (a command's); else none is owed */
	u8 flags;		/* FW_OPF_* */
	u32 size;		/* of its struct, which embeds struct fw_op first */
	/* Its next packet: enum fw_build. */
	int (*build)(struct fw_card *card, struct fw_peer *peer, struct fw_op *op,
		     struct fw_pkt **out);
};

/* The engine of @opcode, or NULL: no engine runs it. */
const struct fw_engine_ops *fw_engine_of_opcode(u8 opcode);
/* The receiver of packet type @type, or NULL: no such type. */
const struct fw_pkt_info *fw_pkt_info_of(u8 type);
/* The kind @kind of operation (enum fw_op_kind: always one). */
const struct fw_op_info *fw_op_info_of(u8 kind);

/* The card's lifecycle, on every engine in the table's order. */
void fw_engines_init(struct fw_card *card);
void fw_engines_port_detach(struct fw_card *card, u32 port);
void fw_engines_destroy(struct fw_card *card);
/*
 * A process group's lifecycle, on every engine that serves groups: the
 * group_* hooks above.  A failed creation leaves no engine holding it.
 */
int fw_engines_group_create(struct fw_card *card, u32 port, const struct nicoff_op_group *op);
void fw_engines_group_ready(struct fw_card *card, u32 port, u32 id, s32 status);
void fw_engines_group_bury(struct fw_card *card, u32 port, u32 id, bool complete);

#endif
