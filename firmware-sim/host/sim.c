// SPDX-License-Identifier: GPL-2.0
/*
 * The user-space host: fw_os.h for N cards in one process, a fabric with a
 * virtual clock, and an event queue kept as a binary heap ordered by
 * (time, insertion number) so that runs are reproducible.
 */
#include <stdlib.h>
#include <stdio.h>
#include <zlib.h>

#include "sim.h"
#include "fw_os.h"
#include "fw_pkt.h"

enum sim_ev_kind {
	SIM_EV_DELIVER,
	SIM_EV_TIMER,
};

struct sim_ev {
	u64 time;
	u64 seq;
	struct fw_pkt *pkt;
	u32 node;
	u32 size;
	u8 kind;
	bool corrupt;
};

struct sim_mr {
	struct sim_mr *next;
	u32 port;
	u32 handle;
	u32 rkey;
	u32 access;
	u8 *buf;
	u64 len;
};

struct sim_port {
	bool attached;
	struct nicoff_cqe *cq;
	u32 head;
	u32 count;
	u32 cap;
};

struct fw_host {
	struct sim *sim;
	u32 node;
	bool dead;
	struct fw_card *card;
	struct sim_port ports[SIM_MAX_PORTS];
	struct sim_mr *mrs;
	u32 next_handle;
	long zallocs;
	u64 timer_at;
	u64 tx_free;		/* the link is busy until then */
	struct fw_fault_state faults;
};

struct sim {
	struct sim_cfg cfg;
	struct sim_stats stats;
	u64 now;
	u64 ev_seq;
	struct sim_ev *heap;
	u32 nev;
	u32 ev_cap;
	long pkts;
	u32 rkey_salt;
	struct fw_host *hosts;
};

void sim_cfg_default(struct sim_cfg *cfg, u32 nodes)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nodes = nodes;
	cfg->latency_ns = 1000;
	cfg->byte_ps = 100;	/* 10 GB/s */
	cfg->seed = 1;
	fw_config_default(&cfg->fw, 0, nodes);
	cfg->fw.rto_ns = 20000;
	cfg->fw.rto_max_ns = 2000000;
	cfg->fw.ack_delay_ns = 2000;
}

static void *sim_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "sim: out of memory\n");
		abort();
	}
	return p;
}

/* ------------------------------------------------------------ events -- */

static bool sim_ev_less(const struct sim_ev *a, const struct sim_ev *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void sim_ev_push(struct sim *s, struct sim_ev ev)
{
	u32 i;

	if (s->nev == s->ev_cap) {
		u32 cap = s->ev_cap ? s->ev_cap * 2 : 1024;
		struct sim_ev *h = realloc(s->heap, cap * sizeof(*h));

		if (!h)
			abort();
		s->heap = h;
		s->ev_cap = cap;
	}
	ev.seq = s->ev_seq++;
	i = s->nev++;
	while (i) {
		u32 parent = (i - 1) / 2;

		if (!sim_ev_less(&ev, &s->heap[parent]))
			break;
		s->heap[i] = s->heap[parent];
		i = parent;
	}
	s->heap[i] = ev;
}

static struct sim_ev sim_ev_pop(struct sim *s)
{
	struct sim_ev top = s->heap[0];
	struct sim_ev last = s->heap[--s->nev];
	u32 i = 0;

	for (;;) {
		u32 c = 2 * i + 1;

		if (c >= s->nev)
			break;
		if (c + 1 < s->nev && sim_ev_less(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!sim_ev_less(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nev)
		s->heap[i] = last;
	return top;
}

static void sim_ev_add(struct sim *s, u64 time, u8 kind, u32 node, struct fw_pkt *pkt,
		       u32 size, bool corrupt)
{
	struct sim_ev ev;

	memset(&ev, 0, sizeof(ev));
	ev.time = time;
	ev.kind = kind;
	ev.node = node;
	ev.pkt = pkt;
	ev.size = size;
	ev.corrupt = corrupt;
	sim_ev_push(s, ev);
}

/* Ask the card for its next timer and make sure an event wakes it then. */
static void sim_kick(struct sim *s, struct fw_host *h)
{
	u64 next;

	if (!h->card)
		return;
	next = fw_poll(h->card, s->now);
	if (next == FW_NEVER || next >= h->timer_at)
		return;
	h->timer_at = next;
	sim_ev_add(s, next > s->now ? next : s->now, SIM_EV_TIMER, h->node, NULL, 0, false);
}

/* ------------------------------------------------------------ fw_os.h -- */

u64 fwos_now(struct fw_host *h)
{
	return h->sim->now;
}

struct fw_pkt *fwos_pkt_alloc(struct fw_host *h, u32 payload)
{
	struct fw_pkt *pkt = malloc(sizeof(*pkt) + payload);

	if (pkt)
		h->sim->pkts++;
	return pkt;
}

void fwos_pkt_free(struct fw_host *h, struct fw_pkt *pkt)
{
	if (!pkt)
		return;
	h->sim->pkts--;
	free(pkt);
}

void fwos_send(struct fw_host *h, struct fw_pkt *pkt)
{
	struct sim *s = h->sim;
	u32 size = FW_PKT_HDR_SIZE + pkt->hdr.len;
	u32 dst = pkt->hdr.dst_node;
	struct fw_fault_verdict v;
	u64 t;

	s->stats.sent++;
	if (dst >= s->cfg.nodes || h->dead || s->hosts[dst].dead) {
		s->stats.dead++;
		fwos_pkt_free(h, pkt);
		return;
	}
	/* Route and size first: faults hit the packet on the wire. */
	v = fw_fault_verdict(&h->faults, &s->cfg.faults, size);
	if (v.faults & FW_FAULT_DROP) {
		s->stats.dropped++;
		fwos_pkt_free(h, pkt);
		return;
	}
	t = (s->now > h->tx_free ? s->now : h->tx_free) + (u64)size * s->cfg.byte_ps / 1000;
	h->tx_free = t;
	t += s->cfg.latency_ns + v.delay_ns;
	if (v.faults & FW_FAULT_REORDER)
		s->stats.reorders++;
	if (v.faults & FW_FAULT_DELAY)
		s->stats.delays++;
	if (v.faults & FW_FAULT_DUP) {
		struct fw_pkt *copy = fwos_pkt_alloc(h, pkt->hdr.len);

		if (copy) {
			memcpy(copy, pkt, size);
			s->stats.dups++;
			sim_ev_add(s, t, SIM_EV_DELIVER, dst, copy, size, false);
		}
	}
	if (v.faults & FW_FAULT_CORRUPT)
		fw_fault_flip(pkt, v.corrupt_bit);
	sim_ev_add(s, t, SIM_EV_DELIVER, dst, pkt, size, v.faults & FW_FAULT_CORRUPT);
}

static struct sim_port *sim_port(struct fw_host *h, u32 port)
{
	return port < SIM_MAX_PORTS && h->ports[port].attached ? &h->ports[port] : NULL;
}

/* The module's checks: region of this port, rights, then bounds. */
static int sim_mem(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, u32 len,
		   struct sim_mr **out)
{
	bool remote = flags & FWOS_MEM_REMOTE;
	u32 need = flags & NICOFF_ACCESS_ALL;
	struct sim_mr *mr;

	if (!sim_port(h, port))
		h->sim->stats.bad_mem++;
	for (mr = h->mrs; mr; mr = mr->next)
		if (mr->port == port && (remote ? mr->rkey : mr->handle) == key)
			break;
	if (!mr)
		return -ENOENT;
	if ((mr->access & need) != need)
		return -EACCES;
	if (off + len < off || off + len > mr->len)
		return -ERANGE;
	*out = mr;
	return 0;
}

int fwos_mem_read(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, void *dst,
		  u32 len)
{
	struct sim_mr *mr;
	int ret = sim_mem(h, port, key, flags, off, len, &mr);

	if (!ret && len)
		memcpy(dst, mr->buf + off, len);
	return ret;
}

int fwos_mem_write(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, const void *src,
		   u32 len)
{
	struct sim_mr *mr;
	int ret = sim_mem(h, port, key, flags, off, len, &mr);

	if (!ret && len)
		memcpy(mr->buf + off, src, len);
	return ret;
}

void fwos_complete(struct fw_host *h, u32 port, const struct nicoff_cqe *cqe)
{
	struct sim_port *p = sim_port(h, port);

	if (!p) {
		h->sim->stats.bad_completions++;
		return;
	}
	if (p->count == p->cap) {
		u32 cap = p->cap ? p->cap * 2 : 64;
		struct nicoff_cqe *cq = sim_xcalloc(cap, sizeof(*cq));
		u32 i;

		for (i = 0; i < p->count; i++)
			cq[i] = p->cq[(p->head + i) % p->cap];
		free(p->cq);
		p->cq = cq;
		p->cap = cap;
		p->head = 0;
	}
	p->cq[(p->head + p->count++) % p->cap] = *cqe;
}

void *fwos_zalloc(struct fw_host *h, size_t size)
{
	void *p = calloc(1, size);

	if (p)
		h->zallocs++;
	return p;
}

void fwos_free(struct fw_host *h, void *p)
{
	if (!p)
		return;
	h->zallocs--;
	free(p);
}

u32 fwos_crc32(u32 crc, const void *buf, size_t len)
{
	return (u32)crc32(crc, buf, (unsigned int)len);
}

/* ------------------------------------------------------------- cards -- */

static void sim_port_clear(struct sim_port *p)
{
	free(p->cq);
	memset(p, 0, sizeof(*p));
}

static void sim_mrs_drop(struct fw_host *h, u32 port, bool all)
{
	struct sim_mr **pp = &h->mrs;

	while (*pp) {
		struct sim_mr *mr = *pp;

		if (all || mr->port == port) {
			*pp = mr->next;
			free(mr);
		} else {
			pp = &mr->next;
		}
	}
}

static long sim_card_down(struct sim *s, struct fw_host *h)
{
	long leaked;
	u32 i;

	fw_card_destroy(h->card);
	h->card = NULL;
	leaked = h->zallocs;
	s->stats.zalloc_leaks += leaked;
	h->zallocs = 0;
	for (i = 0; i < SIM_MAX_PORTS; i++)
		sim_port_clear(&h->ports[i]);
	sim_mrs_drop(h, 0, true);
	return leaked;
}

static int sim_card_up(struct sim *s, struct fw_host *h, u32 epoch)
{
	struct fw_config cfg = s->cfg.fw;

	cfg.node = h->node;
	cfg.num_nodes = s->cfg.nodes;
	cfg.epoch = epoch;
	h->card = fw_card_create(h, &cfg);
	h->timer_at = FW_NEVER;
	return h->card ? 0 : -EINVAL;
}

struct sim *sim_create(const struct sim_cfg *cfg)
{
	struct sim *s = sim_xcalloc(1, sizeof(*s));
	u32 i;

	s->cfg = *cfg;
	s->rkey_salt = 0x5eed;
	s->hosts = sim_xcalloc(cfg->nodes, sizeof(*s->hosts));
	for (i = 0; i < cfg->nodes; i++) {
		struct fw_host *h = &s->hosts[i];

		h->sim = s;
		h->node = i;
		h->next_handle = 1;
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
	for (i = 0; i < s->cfg.nodes; i++)
		if (s->hosts[i].card)
			leaked += sim_card_down(s, &s->hosts[i]);
	while (s->nev) {
		struct sim_ev ev = sim_ev_pop(s);

		if (ev.pkt)
			fwos_pkt_free(&s->hosts[0], ev.pkt);
	}
	leaked += s->pkts;
	free(s->heap);
	free(s->hosts);
	free(s);
	return leaked;
}

u64 sim_now(const struct sim *s)
{
	return s->now;
}

u32 sim_nodes(const struct sim *s)
{
	return s->cfg.nodes;
}

struct fw_card *sim_card(struct sim *s, u32 node)
{
	return s->hosts[node].card;
}

const struct sim_stats *sim_stats(const struct sim *s)
{
	return &s->stats;
}

void sim_set_faults(struct sim *s, const struct fw_fault_cfg *faults)
{
	s->cfg.faults = *faults;
}

void sim_set_dead(struct sim *s, u32 node, bool dead)
{
	s->hosts[node].dead = dead;
}

long sim_restart(struct sim *s, u32 node, u32 epoch)
{
	struct fw_host *h = &s->hosts[node];
	long leaked = sim_card_down(s, h);

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

	if (port >= SIM_MAX_PORTS || h->ports[port].attached)
		return -EINVAL;
	ret = fw_port_attach(h->card, port);
	if (!ret)
		h->ports[port].attached = true;
	sim_kick(s, h);
	return ret;
}

bool sim_attached(const struct sim *s, u32 node, u32 port)
{
	return port < SIM_MAX_PORTS && s->hosts[node].ports[port].attached;
}

void sim_detach(struct sim *s, u32 node, u32 port)
{
	struct fw_host *h = &s->hosts[node];

	if (!sim_port(h, port))
		return;
	/* The card forgets the port first; only then do its regions go. */
	fw_port_detach(h->card, port);
	sim_port_clear(&h->ports[port]);
	sim_mrs_drop(h, port, false);
	sim_kick(s, h);
}

int sim_reg_mr(struct sim *s, u32 node, u32 port, void *buf, u64 len, u32 access,
	       u32 *handle, u32 *rkey)
{
	struct fw_host *h = &s->hosts[node];
	struct sim_mr *mr;

	if (!sim_port(h, port))
		return -ENOTCONN;
	if (!len || (access & ~NICOFF_ACCESS_ALL))
		return -EINVAL;
	mr = sim_xcalloc(1, sizeof(*mr));
	mr->port = port;
	mr->handle = h->next_handle++;
	s->rkey_salt = s->rkey_salt * 1103515245u + 12345u;
	mr->rkey = (s->rkey_salt << 20) | mr->handle;
	mr->access = access;
	mr->buf = buf;
	mr->len = len;
	mr->next = h->mrs;
	h->mrs = mr;
	*handle = mr->handle;
	*rkey = mr->rkey;
	return 0;
}

int sim_dereg_mr(struct sim *s, u32 node, u32 port, u32 handle)
{
	struct sim_mr **pp;

	for (pp = &s->hosts[node].mrs; *pp; pp = &(*pp)->next) {
		struct sim_mr *mr = *pp;

		if (mr->port == port && mr->handle == handle) {
			*pp = mr->next;
			free(mr);
			return 0;
		}
	}
	return -ENOENT;
}

void sim_post(struct sim *s, u32 node, u32 port, const struct nicoff_cmd *cmd)
{
	struct fw_host *h = &s->hosts[node];

	if (!sim_port(h, port))
		return;
	fw_cmd(h->card, port, cmd);
	sim_kick(s, h);
}

bool sim_cq_pop(struct sim *s, u32 node, u32 port, struct nicoff_cqe *cqe)
{
	struct sim_port *p = sim_port(&s->hosts[node], port);

	if (!p || !p->count)
		return false;
	*cqe = p->cq[p->head];
	p->head = (p->head + 1) % p->cap;
	p->count--;
	return true;
}

u32 sim_cq_count(const struct sim *s, u32 node, u32 port)
{
	const struct fw_host *h = &s->hosts[node];

	return port < SIM_MAX_PORTS && h->ports[port].attached ? h->ports[port].count : 0;
}

/* -------------------------------------------------------------- loop -- */

bool sim_step(struct sim *s)
{
	struct sim_ev ev;
	struct fw_host *h;

	if (!s->nev)
		return false;
	ev = sim_ev_pop(s);
	s->stats.events++;
	if (ev.time > s->now)
		s->now = ev.time;
	h = &s->hosts[ev.node];
	if (ev.kind == SIM_EV_TIMER) {
		if (ev.time == h->timer_at)
			h->timer_at = FW_NEVER;
		sim_kick(s, h);
		return true;
	}
	if (h->dead || !h->card) {
		s->stats.dead++;
		fwos_pkt_free(h, ev.pkt);
		return true;
	}
	s->stats.delivered++;
	if (ev.corrupt)
		s->stats.corrupted++;
	fw_rx(h->card, ev.pkt, ev.size);
	sim_kick(s, h);
	return true;
}

void sim_run_until(struct sim *s, u64 t)
{
	while (s->nev && s->heap[0].time <= t)
		sim_step(s);
	if (t > s->now)
		s->now = t;
}

bool sim_run_idle(struct sim *s, u64 limit)
{
	while (s->nev && s->heap[0].time <= limit)
		sim_step(s);
	return !s->nev;
}

bool sim_wait_cqe(struct sim *s, u32 node, u32 port, struct nicoff_cqe *cqe, u64 limit)
{
	for (;;) {
		if (sim_cq_pop(s, node, port, cqe))
			return true;
		if (!s->nev || s->heap[0].time > limit)
			return false;
		sim_step(s);
	}
}
