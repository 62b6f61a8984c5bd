// SPDX-License-Identifier: GPL-2.0
/*
 * The user-space host: fw_os.h for N cards in one process and a LogGP
 * fabric on a virtual clock.
 *
 * Each card has its own clock.  Whenever the host runs the firmware of a
 * card (a packet arrives, a timer is due, a command is posted) at global
 * time t, the card's clock is max(t, the time its processor is busy until);
 * a packet received costs o more before fw_rx() sees it, and each packet
 * the firmware sends keeps the processor busy for o.  Whatever the card
 * does therefore happens at its own time, never before: what it causes
 * elsewhere comes no earlier, so the global order of events stays causal
 * while each card serves its work in order of arrival (commands its host
 * posts go before packets that arrived while the card was busy).
 *
 * Packet arrivals wait in a 4-ary heap ordered by (time, insertion
 * number); each card's next timer has one entry in a second heap, never
 * later than the deadline and brought up to date before it runs, so no
 * stale timer ever reaches the firmware (events.c).  host.h lists the
 * other files.
 */
#include <stdlib.h>

#include "host.h"

void sim_cfg_default(struct sim_cfg *cfg, u32 nodes)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nodes = nodes;
	cfg->latency_ns = SIM_DEFAULT_L_NS;
	cfg->byte_ps = SIM_DEFAULT_BYTE_PS;
	cfg->seed = 1;
	fw_config_default(&cfg->fw, 0, nodes);
	cfg->fw.rto_ns = 20000;
	cfg->fw.rto_max_ns = 2000000;
	cfg->fw.ack_delay_ns = 2000;
}

/*
 * The firmware's timers stay at its defaults: a 20 us timeout is shorter
 * than the queues a card's overhead builds up (a window of packets from a
 * few peers), and go-back-N would then resend what was never lost.
 */
void sim_cfg_loggp(struct sim_cfg *cfg, u32 nodes)
{
	sim_cfg_default(cfg, nodes);
	cfg->overhead_ns = SIM_DEFAULT_O_NS;
	cfg->gap_ns = SIM_DEFAULT_G_NS;
	fw_config_default(&cfg->fw, 0, nodes);
}

/* The card starts work at global time @t: when its processor is free. */
void sim_enter(struct sim *s, struct fw_host *h, u64 t)
{
	t = sim_max(sim_max(t, s->now), h->busy);
	h->clock = t;
	h->busy = t;
}

/* Ask the card for its next deadline and move its timer there. */
void sim_kick(struct sim *s, struct fw_host *h)
{
	u64 next;

	if (!h->card)
		return;
	next = fw_poll(h->card, h->clock);
	if (next != FW_NEVER && next < s->now)
		next = s->now;
	sim_tmr_set(s, h, next);
}

u64 fwos_now(struct fw_host *h)
{
	return h->clock;
}

static void sim_port_clear(struct sim *s, struct sim_port *p)
{
	free(p->cq);
	s->mem.host -= (u64)p->cap * sizeof(*p->cq);
	memset(p, 0, sizeof(*p));
}

static long sim_card_down(struct sim *s, struct fw_host *h)
{
	long leaked;
	u32 i;

	sim_tmr_set(s, h, FW_NEVER);
	fw_card_destroy(h->card);
	h->card = NULL;
	leaked = h->zallocs;
	s->stats.zalloc_leaks += leaked;
	h->zallocs = 0;
	for (i = 0; i < h->nports; i++)
		sim_port_clear(s, &h->ports[i]);
	sim_mrs_drop(s, h, 0, true);
	return leaked;
}

static int sim_card_up(struct sim *s, struct fw_host *h, u32 epoch)
{
	struct fw_config cfg = s->cfg.fw;

	cfg.node = h->node;
	cfg.num_nodes = s->cfg.nodes;
	cfg.epoch = epoch;
	h->card = fw_card_create(h, &cfg);
	return h->card ? 0 : -EINVAL;
}

struct sim *sim_create(const struct sim_cfg *cfg)
{
	struct sim *s;
	u32 i;

	if (!cfg->nodes || cfg->nodes >= SIM_NO_TIMER)
		return NULL;
	s = sim_xcalloc(1, sizeof(*s));
	s->cfg = *cfg;
	s->sw.cfg.nodes = cfg->nodes;
	s->sw.cfg.gap_ns = cfg->gap_ns;
	s->sw.cfg.latency_ns = cfg->latency_ns;
	s->sw.cfg.byte_mul = cfg->byte_ps;
	s->sw.cfg.byte_div = 1000;
	s->sw.ops = &sim_switch_ops;
	s->sw.arg = s;
	s->rkey_salt = 0x5eed;
	s->huge = cfg->nodes >= SIM_HUGE_NODES;
	sim_arena_init(s);
	s->hosts = sim_xcalloc(cfg->nodes, sizeof(*s->hosts));
	sim_huge(s, s->hosts, (size_t)cfg->nodes * sizeof(*s->hosts));
	s->mem.host = (u64)cfg->nodes * sizeof(*s->hosts);
	for (i = 0; i < cfg->nodes; i++) {
		struct fw_host *h = &s->hosts[i];

		h->sim = s;
		h->node = i;
		h->next_handle = 1;
		h->timer_at = FW_NEVER;
		h->tmr_idx = SIM_NO_TIMER;
		fw_fault_init(&h->faults, cfg->seed, i);
		if (sim_card_up(s, h, cfg->fw.epoch)) {
			sim_destroy(s);
			return NULL;
		}
	}
	return s;
}

long sim_destroy(struct sim *s)
{
	long leaked = 0;
	u32 i;

	if (!s)
		return 0;
	for (i = 0; i < s->cfg.nodes; i++) {
		struct fw_host *h = &s->hosts[i];

		if (h->card)
			leaked += sim_card_down(s, h);
		free(h->ports);
	}
	while (s->nev) {
		struct sim_ev ev = sim_ev_pop(s);

		fwos_pkt_free(&s->hosts[0], sim_pkt_fw(ev.p));
	}
	leaked += s->pkts;
	sim_arena_fini(s);
	free(s->heap);
	free(s->theap);
	free(s->done);
	free(s->hosts);
	free(s);
	return leaked;
}

u64 sim_now(const struct sim *s)
{
	return s->now;
}

u64 sim_node_time(const struct sim *s, u32 node)
{
	return sim_max(s->now, s->hosts[node].busy);
}

u32 sim_nodes(const struct sim *s)
{
	return s->cfg.nodes;
}

const struct sim_cfg *sim_config(const struct sim *s)
{
	return &s->cfg;
}

struct fw_card *sim_card(struct sim *s, u32 node)
{
	return s->hosts[node].card;
}

struct fw_host *sim_host(struct sim *s, u32 node)
{
	return &s->hosts[node];
}

const struct sim_stats *sim_stats(const struct sim *s)
{
	return &s->stats;
}

void sim_mem_usage(const struct sim *s, struct sim_mem *m)
{
	*m = s->mem;
	m->arena = (u64)s->arena.nslabs * SIM_SLAB;
}

void sim_set_faults(struct sim *s, const struct fw_fault_cfg *faults)
{
	s->cfg.faults = *faults;
}

void sim_set_rx_room(struct sim *s, u32 bytes)
{
	s->cfg.rx_room = bytes;
}

void sim_set_mcast_lost(struct sim *s, bool lost)
{
	s->mcast_lost = lost;
}

void sim_set_hooks(struct sim *s, const struct sim_hooks *hooks)
{
	if (hooks)
		s->hooks = *hooks;
	else
		memset(&s->hooks, 0, sizeof(s->hooks));
}

void sim_set_dead(struct sim *s, u32 node, bool dead)
{
	s->hosts[node].dead = dead;
}

void sim_stall(struct sim *s, u32 node, u64 until)
{
	struct fw_host *h = &s->hosts[node];

	h->busy = sim_max(h->busy, until);
}

long sim_restart(struct sim *s, u32 node, u32 epoch)
{
	struct fw_host *h = &s->hosts[node];
	long leaked;

	sim_enter(s, h, s->now);
	leaked = sim_card_down(s, h);
	if (sim_card_up(s, h, epoch))
		return -1;
	return leaked;
}

long sim_zallocs(const struct sim *s, u32 node)
{
	return s->hosts[node].zallocs;
}

long sim_pkts(const struct sim *s)
{
	return s->pkts;
}

int sim_attach(struct sim *s, u32 node, u32 port)
{
	struct fw_host *h = &s->hosts[node];
	int ret;

	if (port >= SIM_MAX_PORTS || sim_port(h, port))
		return -EINVAL;
	if (port >= h->nports) {
		u32 n = port + 1;
		struct sim_port *np = sim_xcalloc(n, sizeof(*np));

		if (h->ports)
			memcpy(np, h->ports, h->nports * sizeof(*np));
		free(h->ports);
		s->mem.host += (u64)(n - h->nports) * sizeof(*np);
		h->ports = np;
		h->nports = (u8)n;
	}
	sim_enter(s, h, s->now);
	ret = fw_port_attach(h->card, port);
	if (!ret)
		h->ports[port].attached = true;
	sim_kick(s, h);
	return ret;
}

bool sim_attached(const struct sim *s, u32 node, u32 port)
{
	const struct fw_host *h = &s->hosts[node];

	return port < h->nports && h->ports[port].attached;
}

void sim_detach(struct sim *s, u32 node, u32 port)
{
	struct fw_host *h = &s->hosts[node];

	if (!sim_port(h, port))
		return;
	/* The card forgets the port first; only then do its regions go. */
	sim_enter(s, h, s->now);
	fw_port_detach(h->card, port);
	sim_port_clear(s, &h->ports[port]);
	sim_mrs_drop(s, h, port, false);
	sim_kick(s, h);
}

void sim_post_at(struct sim *s, u32 node, u32 port, const struct nicoff_cmd *cmd, u64 t)
{
	struct fw_host *h = &s->hosts[node];

	if (!sim_port(h, port))
		return;
	sim_enter(s, h, t);
	fw_cmd(h->card, port, cmd);
	sim_kick(s, h);
	sim_drain(s);
}

void sim_post(struct sim *s, u32 node, u32 port, const struct nicoff_cmd *cmd)
{
	sim_post_at(s, node, port, cmd, s->now);
}
