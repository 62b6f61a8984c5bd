// SPDX-License-Identifier: GPL-2.0
/*
 * Card and port lifecycle, command dispatch, timers and counters, and the
 * life of an operation (from command to completion).
 */
#include "card.h"

/* Beyond this a retry budget is meaningless; it also bounds a loop below. */
#define FW_MAX_RETRIES_LIMIT	1000u
#define FW_MTU_LIMIT		FW_BIT(24)
#define FW_WINDOW_LIMIT		FW_BIT(16)
#define FW_ATOMIC_TABLE_LIMIT	FW_BIT(20)
#define FW_BARRIER_ROUNDS_LIMIT	1000u

void fw_config_default(struct fw_config *cfg, u32 node, u32 num_nodes)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->node = node;
	cfg->num_nodes = num_nodes;
	cfg->mtu = 4096;
	cfg->window = 64;
	cfg->rto_ns = 200000;
	cfg->rto_max_ns = 50000000;
	cfg->max_retries = 12;
	cfg->ack_delay_ns = 20000;
	cfg->unexpected_bytes = 4ull << 20;
	cfg->card_unexpected_bytes = FW_U64_MAX;	/* the host may bound the sum */
	cfg->max_msg = 64ull << 20;
	cfg->initial_seq = 0;
	cfg->epoch = 1;
	cfg->atomic_table = 1024;
	cfg->max_groups = 64;
	cfg->max_group_size = FW_GROUP_SIZE_LIMIT;
	cfg->card_group_members = FW_U64_MAX;	/* the host may bound the sum */
	cfg->barrier_alg = NICOFF_BARRIER_AUTO;
	cfg->barrier_rounds = 16;
	cfg->group_create_ms = 30000;
	cfg->bcast_channels = 16;
	cfg->bcast_hw = 1;
}

/* The run-time tunables: where each is in struct fw_config, and its range. */
static const struct fw_tunable {
	u32 offset;
	u32 size;
	u64 min, max;
} fw_tunables[FW_CFG_NUM_KEYS] = {
	[FW_CFG_UNEXPECTED_BYTES] = { offsetof(struct fw_config, unexpected_bytes), 8, 0,
				      FW_U64_MAX },
	[FW_CFG_CARD_UNEXPECTED_BYTES] = { offsetof(struct fw_config, card_unexpected_bytes), 8,
					   0, FW_U64_MAX },
	[FW_CFG_MAX_GROUP_SIZE] = { offsetof(struct fw_config, max_group_size), 4, 1,
				    FW_GROUP_SIZE_LIMIT },
	[FW_CFG_CARD_GROUP_MEMBERS] = { offsetof(struct fw_config, card_group_members), 8, 0,
					FW_U64_MAX },
	[FW_CFG_BARRIER_ALG] = { offsetof(struct fw_config, barrier_alg), 4, 0,
				 NICOFF_BARRIER_MAX - 1 },
	[FW_CFG_GROUP_CREATE_MS] = { offsetof(struct fw_config, group_create_ms), 4, 1,
				     FW_GROUP_CREATE_MS_MAX },
	[FW_CFG_BCAST_CHANNELS] = { offsetof(struct fw_config, bcast_channels), 4,
				    NICOFF_BCAST_MIN_CHANNELS, NICOFF_BCAST_MAX_CHANNELS },
	[FW_CFG_BCAST_HW] = { offsetof(struct fw_config, bcast_hw), 4, 0, 1 },
};

static u64 fw_tunable_get(const struct fw_config *cfg, const struct fw_tunable *t)
{
	const u8 *field = (const u8 *)cfg + t->offset;
	u32 v32;
	u64 v64;

	if (t->size == sizeof(v32)) {
		memcpy(&v32, field, sizeof(v32));
		return v32;
	}
	memcpy(&v64, field, sizeof(v64));
	return v64;
}

static bool fw_tunables_valid(const struct fw_config *cfg)
{
	u32 i;

	for (i = 0; i < FW_CFG_NUM_KEYS; i++) {
		u64 v = fw_tunable_get(cfg, &fw_tunables[i]);

		if (v < fw_tunables[i].min || v > fw_tunables[i].max)
			return false;
	}
	return true;
}

int fw_set_config(struct fw_card *card, enum fw_config_key key, u64 value)
{
	const struct fw_tunable *t;
	u8 *field;
	u32 v32;

	if ((u32)key >= FW_CFG_NUM_KEYS)
		return -EINVAL;
	t = &fw_tunables[key];
	if (value < t->min || value > t->max)
		return -EINVAL;
	field = (u8 *)&card->cfg + t->offset;
	if (t->size == sizeof(v32)) {
		v32 = value;
		memcpy(field, &v32, sizeof(v32));
	} else {
		memcpy(field, &value, sizeof(value));
	}
	return 0;
}

static bool fw_config_valid(const struct fw_config *cfg)
{
	return cfg->num_nodes && cfg->node < cfg->num_nodes &&
	       cfg->mtu >= FW_MTU_MIN && cfg->mtu <= FW_MTU_LIMIT &&
	       cfg->window && cfg->window <= FW_WINDOW_LIMIT &&
	       cfg->rto_ns && cfg->rto_max_ns >= cfg->rto_ns &&
	       cfg->max_retries <= FW_MAX_RETRIES_LIMIT &&
	       cfg->atomic_table && cfg->atomic_table <= FW_ATOMIC_TABLE_LIMIT &&
	       cfg->barrier_rounds && cfg->barrier_rounds <= FW_BARRIER_ROUNDS_LIMIT &&
	       fw_tunables_valid(cfg);
}

/*
 * How long a sender keeps retrying before it gives up: the sum of its
 * backed-off timeouts.  A peer that owes us a reply and stays silent for
 * that long plus one more ceiling is asked whether it is alive
 * (transport.c).
 */
static u64 fw_dead_ns(const struct fw_config *cfg)
{
	u64 rto = cfg->rto_ns, sum = 0;
	u32 i;

	for (i = 0; i <= cfg->max_retries; i++) {
		sum = fw_add_sat(sum, rto);
		rto = fw_backoff(cfg, rto);
	}
	return fw_add_sat(sum, cfg->rto_max_ns);
}

struct fw_card *fw_card_create(struct fw_host *host, const struct fw_config *cfg)
{
	struct fw_card *card;

	if (!fw_config_valid(cfg))
		return NULL;
	card = fwos_zalloc(host, sizeof(*card));
	if (!card)
		return NULL;
	card->host = host;
	card->cfg = *cfg;
	if (!card->cfg.epoch)
		card->cfg.epoch = 1;
	card->dead_ns = fw_dead_ns(cfg);
	card->next_msg_id = 1;
	fw_engines_init(card);
	return card;
}

void fw_card_destroy(struct fw_card *card)
{
	u32 i;

	if (!card)
		return;
	card->dying = true;
	for (i = 0; i < card->nports; i++)
		if (card->ports[i])
			fw_port_detach(card, i);
	fw_engines_destroy(card);
	fw_timer_heap_free(card->host, &card->timers);
	fwos_free(card->host, card->ports);
	fwos_free(card->host, card);
}

struct fw_port *fw_port_find(struct fw_card *card, u32 id)
{
	return id < card->nports ? card->ports[id] : NULL;
}

int fw_port_attach(struct fw_card *card, u32 id)
{
	struct fw_port *port;

	if (id >= FW_MAX_PORTS)
		return -EINVAL;
	if (fw_port_find(card, id))
		return -EBUSY;
	if (id >= card->nports) {
		u32 n = card->nports ? card->nports : 8;
		struct fw_port **np;

		while (n <= id)
			n *= 2;
		n = fw_min_u32(n, FW_MAX_PORTS);
		np = fwos_zalloc(card->host, n * sizeof(*np));
		if (!np)
			return -ENOMEM;
		if (card->ports) {
			memcpy(np, card->ports, card->nports * sizeof(*np));
			fwos_free(card->host, card->ports);
		}
		card->ports = np;
		card->nports = n;
	}
	port = fwos_zalloc(card->host, sizeof(*port));
	if (!port)
		return -ENOMEM;
	port->id = id;
	fw_list_init(&port->posted);
	fw_list_init(&port->unexp);
	fw_list_init(&port->bound);
	fw_list_init(&port->ops);
	card->ports[id] = port;
	return 0;
}

/*
 * An operation of a closing port: no completion any more.  What the peer
 * already holds of it must not dangle: a half-sent message is aborted and
 * a half-sent GET answer becomes an error reply.
 */
static void fw_op_detach(struct fw_card *card, struct fw_op *op)
{
	struct fw_peer *peer = op->peer;

	fw_list_del(&op->port_node);
	op->port = NULL;
	if (op->kind == FW_OP_SEND && !card->dying)
		fw_msg_op_detach(card, op);	/* refused once: the peer waits for it */
	if (op->queue == FW_OPQ_TX && !card->dying) {
		if (op->kind == FW_OP_SEND && fw_op_sent(op))
			fw_tx_queue_ctrl(card, peer, FW_OP_ABORT, op->lport, op->dst_port,
					 op->msg_id, 0, &op->q_node);
		else if (fw_op_is(op, FW_OPF_ANSWER))
			fw_tx_queue_ctrl(card, peer, FW_OP_ERR, op->lport, op->dst_port,
					 op->msg_id, -ECONNABORTED, &op->q_node);
	}
	op->done = true;
	fw_op_unqueue(op);
	fw_op_put(card, op);
	if (!peer->flush_mark) {
		peer->flush_mark = true;
		peer->flush_next = card->flush_head;
		card->flush_head = peer;
	}
}

void fw_port_detach(struct fw_card *card, u32 id)
{
	struct fw_port *port = fw_port_find(card, id);

	if (!port)
		return;
	fw_engines_port_detach(card, id);
	while (!fw_list_empty(&port->ops))
		fw_op_detach(card, fw_list_entry(port->ops.next, struct fw_op, port_node));
	card->ports[id] = NULL;
	fwos_free(card->host, port);
	/* Only now, so that nothing more of this port gets built. */
	while (card->flush_head) {
		struct fw_peer *peer = card->flush_head;

		card->flush_head = peer->flush_next;
		peer->flush_mark = false;
		if (!card->dying) {
			fw_tx_flush(card, peer);
			fw_peer_rearm(card, peer);
		}
	}
}

struct fw_op *fw_op_new(struct fw_card *card, struct fw_peer *peer, struct fw_port *port,
			u8 kind, u64 cmd_tag)
{
	struct fw_op *op = fwos_zalloc(card->host, fw_op_info_of(kind)->size);

	if (!op)
		return NULL;
	fw_list_init(&op->peer_node);
	fw_list_init(&op->port_node);
	fw_list_init(&op->q_node);
	op->peer = peer;
	op->kind = kind;
	op->cmd_tag = cmd_tag;
	fw_list_add_tail(&op->peer_node, &peer->ops);
	if (port) {
		op->port = port;
		op->lport = port->id;
		fw_list_add_tail(&op->port_node, &port->ops);
	}
	return op;
}

void fw_op_unqueue(struct fw_op *op)
{
	fw_list_del(&op->q_node);
	op->queue = FW_OPQ_NONE;
}

/* Free the operation once nothing needs it any more. */
void fw_op_put(struct fw_card *card, struct fw_op *op)
{
	if (!op->done || op->nrec || op->queue != FW_OPQ_NONE)
		return;
	fw_list_del(&op->peer_node);
	fw_list_del(&op->port_node);
	fwos_free(card->host, op);
}

void fw_post(struct fw_card *card, u32 port, const struct nicoff_cqe *cqe)
{
	fwos_complete(card->host, port, cqe);
}

void fw_complete(struct fw_card *card, u32 port, u64 tag, u8 opcode, s32 status, u64 result)
{
	struct nicoff_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.tag = tag;
	cqe.status = status;
	cqe.opcode = opcode;
	cqe.result = result;
	fw_post(card, port, &cqe);
}

/* Post the operation's one completion (if still owed) and let it go. */
void fw_op_finish(struct fw_card *card, struct fw_op *op, s32 status, u64 result)
{
	if (!op->done) {
		op->done = true;
		if (op->port)
			fw_complete(card, op->port->id, op->cmd_tag,
				    fw_op_info_of(op->kind)->opcode, status, result);
	}
	fw_op_unqueue(op);
	fw_op_put(card, op);
}

int fw_cmd(struct fw_card *card, u32 port_id, const struct nicoff_cmd *cmd)
{
	const struct fw_engine_ops *engine = fw_engine_of_opcode(cmd->opcode);
	struct fw_port *port = fw_port_find(card, port_id);
	int ret;

	if (!port)
		return 0;	/* the host detached it: nobody to answer */
	if (cmd->flags || cmd->reserved0 || cmd->reserved1) {
		ret = -EINVAL;
	} else if (!engine) {
		card->stats.bad_opcodes++;
		ret = -EOPNOTSUPP;
	} else {
		ret = engine->cmd(card, port, cmd);
	}
	if (ret)
		fw_complete(card, port_id, cmd->tag, cmd->opcode, ret, 0);
	return ret;
}

u64 fw_poll(struct fw_card *card, u64 now)
{
	return fw_timer_run(card, &card->timers, now);
}

void fw_get_stats(const struct fw_card *card, struct fw_stats *st)
{
	*st = card->stats;
}

u64 fw_port_remote_errors(const struct fw_card *card, u32 id, struct fw_remote_error *last)
{
	const struct fw_port *port = id < card->nports ? card->ports[id] : NULL;

	if (!port) {
		if (last)
			memset(last, 0, sizeof(*last));
		return 0;
	}
	if (last)
		*last = port->last_remote;
	return port->remote_errors;
}
