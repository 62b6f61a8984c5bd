// SPDX-License-Identifier: GPL-2.0
/*
 * PING: a card-to-card round trip that touches no host memory, the
 * fabric's liveness and latency probe.  The initiating card sends a
 * header-only PING to (node, port); the target card answers with a PONG
 * itself, with no receive posted and nothing for its host to do, or with
 * -ECONNREFUSED in the PONG if nobody has the port open.
 *
 * Like the atomics, pings ride outside the go-back-N stream (a probe must
 * not wait behind data) and are sent again on their own timer with the
 * atomics' budget: rto_ns doubling up to rto_max_ns, max_retries resends,
 * then -ETIMEDOUT.  A ping is idempotent, so the target keeps nothing and
 * answers every copy.  The PING carries its transmission's time and the
 * PONG echoes it: the round trip is measured from the transmission that
 * was answered, so a resend never inflates it (TCP's timestamps solve
 * Karn's problem the same way).  A PONG for no ping waiting (late,
 * duplicated, from before the card restarted) is counted and dropped.
 */
#include "card.h"

/* A ping of one of our ports, from its command to its completion. */
struct fw_ping {
	struct fw_list node;		/* card->ping.pings */
	struct fw_timer timer;		/* its next resend */
	struct fw_peer *peer;		/* the target card */
	u64 id;
	u64 cmd_tag;
	u64 first;			/* its first transmission */
	u64 rto;			/* the wait after its next one */
	u32 lport;
	u32 dst_port;
	u32 tries;			/* transmissions so far */
};

void fw_ping_init(struct fw_card *card)
{
	fw_list_init(&card->ping.pings);
}

static void fw_ping_free(struct fw_card *card, struct fw_ping *p)
{
	fw_timer_del(&card->timers, &p->timer);
	fw_list_del(&p->node);
	fwos_free(card->host, p);
}

static void fw_ping_done(struct fw_card *card, struct fw_ping *p, s32 status, u64 rtt)
{
	fw_complete(card, p->lport, p->cmd_tag, NICOFF_OP_PING, status, rtt);
	fw_ping_free(card, p);
}

static void fw_ping_xmit(struct fw_card *card, struct fw_ping *p, u64 now)
{
	struct fw_pkt *pkt = fw_pkt_new(card, p->peer, FW_PKT_PING, p->lport, p->dst_port, 0);

	p->tries++;
	fw_timer_set(&card->timers, &p->timer, fw_add_sat(now, p->rto));
	p->rto = fw_backoff(&card->cfg, p->rto);
	if (!pkt)
		return;		/* as good as lost: the timer sends it again */
	pkt->hdr.epoch = card->cfg.epoch;
	pkt->hdr.ping.id = p->id;
	pkt->hdr.ping.sent = now;
	fw_pkt_send(card, pkt);
}

/* Its answer is overdue: send it again, or give up once the retries are spent. */
static void fw_ping_timer(struct fw_card *card, struct fw_timer *t, u64 now)
{
	struct fw_ping *p = fw_container_of(t, struct fw_ping, timer);

	if (p->tries > card->cfg.max_retries) {
		card->stats.ping_timeouts++;
		fw_ping_done(card, p, -ETIMEDOUT, 0);
		return;
	}
	fw_ping_xmit(card, p, now);
}

int fw_ping_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_ping *op = &cmd->ping;
	const u64 *rsv = op->reserved;
	struct fw_peer *peer;
	struct fw_ping *p;

	if ((rsv[0] | rsv[1] | rsv[2] | rsv[3] | rsv[4]) || op->dst_card >= card->cfg.num_nodes)
		return -EINVAL;
	peer = fw_peer_get(card, op->dst_card);
	if (!peer)
		return -ENOMEM;
	p = fw_timer_owner_new(card->host, &card->timers, sizeof(*p),
			       offsetof(struct fw_ping, timer), fw_ping_timer, FW_TIMER_PING);
	if (!p)
		return -ENOMEM;
	p->peer = peer;
	p->id = card->ping.next_id++;
	p->cmd_tag = cmd->tag;
	p->first = fwos_now(card->host);
	p->rto = card->cfg.rto_ns;
	p->lport = port->id;
	p->dst_port = op->dst_port;
	fw_list_add_tail(&p->node, &card->ping.pings);
	fw_ping_xmit(card, p, p->first);
	return 0;
}

static bool fw_ping_body_ok(const struct fw_pkt_hdr *h)
{
	return !h->len && !h->ping.reserved[0] && !h->ping.reserved[1] && !h->ping.reserved[2];
}

/* Answer a PING: the card itself, whether or not its port is open. */
static void fw_ping_answer(struct fw_card *card, const struct fw_pkt_hdr *h)
{
	struct fw_peer *peer;
	struct fw_pkt *pkt;

	if (!fw_ping_body_ok(h))
		return;		/* malformed: ignored */
	peer = fw_peer_get(card, h->src_node);
	pkt = peer ? fw_pkt_new(card, peer, FW_PKT_PONG, h->dst_port, h->src_port, 0) : NULL;
	if (!pkt)
		return;		/* as good as lost: the initiator asks again */
	pkt->hdr.epoch = h->epoch;
	pkt->hdr.ping = h->ping;
	pkt->hdr.err = fw_port_find(card, h->dst_port) ? 0 : -ECONNREFUSED;
	fw_pkt_send(card, pkt);
}

/* The ping @h answers, sent by this card since it started, or NULL. */
static struct fw_ping *fw_ping_find(struct fw_card *card, const struct fw_pkt_hdr *h, u64 now)
{
	struct fw_list *n;

	if (!fw_ping_body_ok(h) || h->epoch != card->cfg.epoch)
		return NULL;
	for (n = card->ping.pings.next; n != &card->ping.pings; n = n->next) {
		struct fw_ping *p = fw_list_entry(n, struct fw_ping, node);

		if (p->id == h->ping.id)
			return p->peer->node == h->src_node && p->dst_port == h->src_port &&
			       h->ping.sent >= p->first && h->ping.sent <= now ? p : NULL;
	}
	return NULL;
}

static void fw_ping_rx_pong(struct fw_card *card, const struct fw_pkt_hdr *h)
{
	u64 now = fwos_now(card->host);
	struct fw_ping *p = fw_ping_find(card, h, now);

	if (!p) {
		card->stats.ping_strays++;
		return;
	}
	if (h->err)
		fw_ping_done(card, p, h->err > 0 ? -EIO : h->err, 0);
	else
		fw_ping_done(card, p, 0, now - h->ping.sent);
}

void fw_ping_rx(struct fw_card *card, struct fw_pkt *pkt)
{
	card->stats.rx_pkts++;
	card->stats.rx_bytes += fw_pkt_size(pkt);
	if (pkt->hdr.type == FW_PKT_PING)
		fw_ping_answer(card, &pkt->hdr);
	else
		fw_ping_rx_pong(card, &pkt->hdr);
	fwos_pkt_free(card->host, pkt);
}

/* The port is closing: its pings go without completions. */
void fw_ping_port_detach(struct fw_card *card, u32 port)
{
	struct fw_list *n, *next;

	for (n = card->ping.pings.next; n != &card->ping.pings; n = next) {
		struct fw_ping *p = fw_list_entry(n, struct fw_ping, node);

		next = n->next;
		if (p->lport == port)
			fw_ping_free(card, p);
	}
}

/* The card is going: drop every ping, completing nothing. */
void fw_ping_destroy(struct fw_card *card)
{
	while (!fw_list_empty(&card->ping.pings))
		fw_ping_free(card, fw_list_entry(card->ping.pings.next, struct fw_ping, node));
}
