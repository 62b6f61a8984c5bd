// SPDX-License-Identifier: GPL-2.0
/*
 * The engine table: every engine, the opcodes and packet types each one
 * takes, and what each kind of operation sends.  A new engine or opcode
 * is one entry here; nothing else in the firmware names it to route it.
 */
#include "card.h"
#include "engine.h"
#include "bcast.h"

#define FW_TABLE_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const struct fw_engine_ops fw_atomic_engine = {
	.name = "atomic", .init = fw_atomic_init, .cmd = fw_atomic_cmd, .rx = fw_atomic_rx,
	.port_detach = fw_atomic_port_detach, .destroy = fw_atomic_destroy,
};

static const struct fw_engine_ops fw_barrier_engine = {
	.name = "barrier", .cmd = fw_barrier_cmd, .rx = fw_barrier_rx,
	.port_detach = fw_barrier_port_detach, .destroy = fw_barrier_card_free,
};

static const struct fw_engine_ops fw_msg_engine = {
	.name = "msg", .cmd = fw_msg_cmd, .port_detach = fw_msg_port_detach,
};

static const struct fw_engine_ops fw_rma_engine = { .name = "rma", .cmd = fw_rma_cmd };

static const struct fw_engine_ops fw_strided_engine = { .name = "strided", .cmd = fw_strided_cmd };

/* Vector put and get: the strided engine's walk over segment lists. */
static const struct fw_engine_ops fw_vector_engine = { .name = "vector", .cmd = fw_vector_cmd };

static const struct fw_engine_ops fw_bcast_engine = {
	.name = "bcast", .cmd = fw_bcast_cmd, .rx = fw_bcast_rx,
	.port_detach = fw_bcast_port_detach, .destroy = fw_bcast_destroy,
	.group_create = fw_bcast_group_create, .group_ready = fw_bcast_group_ready,
	.group_bury = fw_bcast_group_bury,
};

static const struct fw_engine_ops fw_ping_engine = {
	.name = "ping", .init = fw_ping_init, .cmd = fw_ping_cmd, .rx = fw_ping_rx,
	.port_detach = fw_ping_port_detach, .destroy = fw_ping_destroy,
};

/* The go-back-N stream: its packets carry messages, puts, gets and replies. */
static const struct fw_engine_ops fw_stream_engine = {
	.name = "stream", .rx = fw_stream_rx,
	.destroy = fw_peers_free,	/* last: the others' state hangs off peers */
};

/*
 * In lifecycle order: a card is torn down atomics, barriers, broadcasts,
 * then the peers; a closing port leaves atomics, barriers, broadcasts,
 * then messages.
 */
static const struct fw_engine_ops *const fw_engines[] = {
	&fw_atomic_engine,
	&fw_barrier_engine,
	&fw_bcast_engine,
	&fw_msg_engine,
	&fw_rma_engine,
	&fw_strided_engine,
	&fw_vector_engine,
	&fw_ping_engine,
	&fw_stream_engine,
};

/* Command opcodes; NOP and COPY are the host's (kmod/port.c). */
static const struct fw_engine_ops *const fw_opcodes[] = {
	[NICOFF_OP_SEND] = &fw_msg_engine,
	[NICOFF_OP_RECV] = &fw_msg_engine,
	[NICOFF_OP_PUT] = &fw_rma_engine,
	[NICOFF_OP_GET] = &fw_rma_engine,
	[NICOFF_OP_FETCH_ADD] = &fw_atomic_engine,
	[NICOFF_OP_FETCH_WRITE] = &fw_atomic_engine,
	[NICOFF_OP_COMPARE_SWAP] = &fw_atomic_engine,
	[NICOFF_OP_GROUP_CREATE] = &fw_barrier_engine,
	[NICOFF_OP_GROUP_DESTROY] = &fw_barrier_engine,
	[NICOFF_OP_BARRIER] = &fw_barrier_engine,
	[NICOFF_OP_PING] = &fw_ping_engine,
	[NICOFF_OP_PUT_STRIDED] = &fw_strided_engine,
	[NICOFF_OP_GET_STRIDED] = &fw_strided_engine,
	[NICOFF_OP_ACC_STRIDED] = &fw_strided_engine,
	[NICOFF_OP_BCAST] = &fw_bcast_engine,
	[NICOFF_OP_PUT_VECTOR] = &fw_vector_engine,
	[NICOFF_OP_GET_VECTOR] = &fw_vector_engine,
};

/* Packet types (fw_pkt.h). */
static const struct fw_pkt_info fw_pkt_infos[] = {
	[FW_PKT_ACK] = { &fw_stream_engine, NULL },
	[FW_PKT_DATA] = { &fw_stream_engine, fw_msg_rx_data },
	[FW_PKT_PUT] = { &fw_stream_engine, fw_rma_rx_put },
	[FW_PKT_GET_REQ] = { &fw_stream_engine, fw_rma_rx_get_req },
	[FW_PKT_GET_RESP] = { &fw_stream_engine, fw_rma_rx_get_resp },
	[FW_PKT_ERR] = { &fw_stream_engine, fw_stream_rx_err },
	[FW_PKT_ABORT] = { &fw_stream_engine, fw_msg_rx_abort },
	[FW_PKT_ATOMIC_REQ ... FW_PKT_ATOMIC_ACK] = { &fw_atomic_engine, NULL },
	[FW_PKT_BARRIER ... FW_PKT_BARRIER_STATE] = { &fw_barrier_engine, NULL },
	[FW_PKT_RNR] = { &fw_stream_engine, fw_stream_rx_rnr },
	[FW_PKT_PING ... FW_PKT_PONG] = { &fw_ping_engine, NULL },
	[FW_PKT_PUT_STRIDED] = { &fw_stream_engine, fw_strided_rx_put },
	[FW_PKT_GET_STRIDED_REQ] = { &fw_stream_engine, fw_strided_rx_get_req },
	[FW_PKT_BCAST ... FW_PKT_BCAST_STATE] = { &fw_bcast_engine, NULL, true },
	[FW_PKT_GET_VECTOR_REQ] = { &fw_stream_engine, fw_vector_rx_get_req },
	[FW_PKT_PROBE] = { &fw_stream_engine, NULL },	/* its acknowledgment is the answer */
};

#define FW_OPF_PUTLIKE	(FW_OPF_COMMAND | FW_OPF_ACKED)
#define FW_OPF_GETLIKE	(FW_OPF_COMMAND | FW_OPF_REQUEST)

/* Kinds of operation (card.h). */
static const struct fw_op_info fw_op_infos[] = {
	[FW_OP_SEND] = { FW_PKT_DATA, NICOFF_OP_SEND, FW_OPF_PUTLIKE, sizeof(struct fw_send_op),
			 fw_msg_build },
	[FW_OP_PUT] = { FW_PKT_PUT, NICOFF_OP_PUT, FW_OPF_PUTLIKE, sizeof(struct fw_xfer_op),
			fw_rma_build },
	[FW_OP_GET] = { FW_PKT_GET_REQ, NICOFF_OP_GET, FW_OPF_GETLIKE, sizeof(struct fw_xfer_op),
			fw_rma_build },
	[FW_OP_GETRESP] = { FW_PKT_GET_RESP, NICOFF_OP_NOP, FW_OPF_ANSWER,
			    sizeof(struct fw_xfer_op), fw_rma_build },
	[FW_OP_SPUT] = { FW_PKT_PUT_STRIDED, NICOFF_OP_PUT_STRIDED, FW_OPF_PUTLIKE,
			 sizeof(struct fw_strided_op), fw_strided_build },
	[FW_OP_SACC] = { FW_PKT_PUT_STRIDED, NICOFF_OP_ACC_STRIDED, FW_OPF_PUTLIKE,
			 sizeof(struct fw_strided_op), fw_strided_build },
	[FW_OP_SGET] = { FW_PKT_GET_STRIDED_REQ, NICOFF_OP_GET_STRIDED, FW_OPF_GETLIKE,
			 sizeof(struct fw_strided_op), fw_strided_build },
	[FW_OP_SGETRESP] = { FW_PKT_GET_RESP, NICOFF_OP_NOP, FW_OPF_ANSWER,
			     sizeof(struct fw_strided_op), fw_rma_build },
	[FW_OP_VPUT] = { FW_PKT_PUT_STRIDED, NICOFF_OP_PUT_VECTOR, FW_OPF_PUTLIKE,
			 sizeof(struct fw_vector_op), fw_strided_build },
	[FW_OP_VGET] = { FW_PKT_GET_VECTOR_REQ, NICOFF_OP_GET_VECTOR, FW_OPF_GETLIKE,
			 sizeof(struct fw_vector_op), fw_vector_build_get },
	[FW_OP_VGETRESP] = { FW_PKT_GET_RESP, NICOFF_OP_NOP, FW_OPF_ANSWER,
			     sizeof(struct fw_vector_op), fw_rma_build },
	[FW_OP_ERR] = { FW_PKT_ERR, NICOFF_OP_NOP, 0, sizeof(struct fw_ctrl_op), fw_ctrl_build },
	[FW_OP_ABORT] = { FW_PKT_ABORT, NICOFF_OP_NOP, 0, sizeof(struct fw_ctrl_op),
			  fw_ctrl_build },
	[FW_OP_RNR] = { FW_PKT_RNR, NICOFF_OP_NOP, 0, sizeof(struct fw_ctrl_op), fw_ctrl_build },
	[FW_OP_PROBE] = { FW_PKT_PROBE, NICOFF_OP_NOP, 0, sizeof(struct fw_ctrl_op),
			  fw_ctrl_build },
};

const struct fw_engine_ops *fw_engine_of_opcode(u8 opcode)
{
	return opcode < FW_TABLE_SIZE(fw_opcodes) ? fw_opcodes[opcode] : NULL;
}

const struct fw_pkt_info *fw_pkt_info_of(u8 type)
{
	if (type >= FW_TABLE_SIZE(fw_pkt_infos) || !fw_pkt_infos[type].engine)
		return NULL;
	return &fw_pkt_infos[type];
}

const struct fw_op_info *fw_op_info_of(u8 kind)
{
	return &fw_op_infos[kind];
}

void fw_engines_init(struct fw_card *card)
{
	u32 i;

	for (i = 0; i < FW_TABLE_SIZE(fw_engines); i++)
		if (fw_engines[i]->init)
			fw_engines[i]->init(card);
}

void fw_engines_port_detach(struct fw_card *card, u32 port)
{
	u32 i;

	for (i = 0; i < FW_TABLE_SIZE(fw_engines); i++)
		if (fw_engines[i]->port_detach)
			fw_engines[i]->port_detach(card, port);
}

void fw_engines_destroy(struct fw_card *card)
{
	u32 i;

	for (i = 0; i < FW_TABLE_SIZE(fw_engines); i++)
		if (fw_engines[i]->destroy)
			fw_engines[i]->destroy(card);
}

int fw_engines_group_create(struct fw_card *card, u32 port, const struct nicoff_op_group *op)
{
	u32 i;
	int ret;

	for (i = 0; i < FW_TABLE_SIZE(fw_engines); i++) {
		if (!fw_engines[i]->group_create)
			continue;
		ret = fw_engines[i]->group_create(card, port, op);
		if (!ret)
			continue;
		/* The engines before it let the group go, as a detaching port does. */
		while (i--)
			if (fw_engines[i]->group_bury)
				fw_engines[i]->group_bury(card, port, op->group_id, false);
		return ret;
	}
	return 0;
}

void fw_engines_group_ready(struct fw_card *card, u32 port, u32 id, s32 status)
{
	u32 i;

	for (i = 0; i < FW_TABLE_SIZE(fw_engines); i++)
		if (fw_engines[i]->group_ready)
			fw_engines[i]->group_ready(card, port, id, status);
}

void fw_engines_group_bury(struct fw_card *card, u32 port, u32 id, bool complete)
{
	u32 i;

	for (i = 0; i < FW_TABLE_SIZE(fw_engines); i++)
		if (fw_engines[i]->group_bury)
			fw_engines[i]->group_bury(card, port, id, complete);
}
