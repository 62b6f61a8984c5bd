// SPDX-License-Identifier: GPL-2.0
/*
 * The simulator's fabric: the packets of fw_os.h, the switch of switch.h
 * with LogGP's o on each side (SIMULATOR.md), and arrivals.
 */
#include "host.h"

struct fw_pkt *fwos_pkt_alloc(struct fw_host *h, u32 payload)
{
	struct sim *s = h->sim;
	u32 bytes;
	struct sim_pkt *p = sim_alloc(s, sizeof(*p) + sizeof(struct fw_pkt) + (size_t)payload,
				      &bytes);

	if (!p)
		return NULL;
	p->corrupt = 0;
	s->pkts++;
	s->mem.pkt += bytes;
	if (s->mem.pkt > s->mem.pkt_peak)
		s->mem.pkt_peak = s->mem.pkt;
	return sim_pkt_fw(p);
}

void fwos_pkt_free(struct fw_host *h, struct fw_pkt *pkt)
{
	struct sim_pkt *p;

	if (!pkt)
		return;
	p = sim_pkt_of(pkt);
	h->sim->pkts--;
	h->sim->mem.pkt -= sim_block_bytes(h->sim, p);
	sim_release(h->sim, p);
}

/* The switch hands over a packet: one arrival event. */
static void sim_queue(void *arg, u32 dst, struct fw_pkt *pkt, u32 size, u64 due, u32 faults)
{
	struct sim *s = arg;
	struct sim_pkt *p = sim_pkt_of(pkt);

	p->node = dst;
	p->size = size;
	s->hosts[dst].rx_queued += size;
	if (s->hosts[dst].rx_queued > s->stats.rx_queued_peak)
		s->stats.rx_queued_peak = s->hosts[dst].rx_queued;
	p->corrupt = !!(faults & FW_FAULT_CORRUPT);
	if (faults & FW_FAULT_DUP) {
		s->stats.dups++;
	} else {
		s->stats.reorders += !!(faults & FW_FAULT_REORDER);
		s->stats.delays += !!(faults & FW_FAULT_DELAY);
	}
	sim_ev_push(s, due, p);
}

static bool sim_link_up(void *arg, u32 node)
{
	struct sim *s = arg;

	return !s->hosts[node].dead;
}

const struct fw_switch_ops sim_switch_ops = {
	.deliver = sim_queue,
	.link_up = sim_link_up,
};

/* The sending card as the switch sees it. */
static struct fw_switch_src sim_switch_src(struct fw_host *h)
{
	return (struct fw_switch_src){
		.node = h->node,
		.host = h,
		.link = &h->link,
		.faults = &h->faults,
		.fault_cfg = &h->sim->cfg.faults,
	};
}

/*
 * The card spends o on the packet, then the switch has it (switch.h).  A
 * packet lost on the way cost its sender as much; one to no node, nothing.
 */
void fwos_send(struct fw_host *h, struct fw_pkt *pkt)
{
	struct sim *s = h->sim;
	struct fw_switch_src src = sim_switch_src(h);
	enum fw_switch_fate fate;

	s->stats.sent++;
	if (h->dead) {
		s->stats.dead++;
		fwos_pkt_free(h, pkt);
		return;
	}
	fate = fw_switch_send(&s->sw, &src, pkt, h->busy + s->cfg.overhead_ns);
	if (fate != FW_SWITCH_NO_ROUTE)
		h->busy += s->cfg.overhead_ns;
	if (fate == FW_SWITCH_DROPPED)
		s->stats.dropped++;
	else if (fate != FW_SWITCH_QUEUED)
		s->stats.dead++;
}

/* The multicast: one o and one link time for all the copies. */
int fwos_send_range(struct fw_host *h, struct fw_pkt *pkt, u32 first, u32 last)
{
	struct sim *s = h->sim;
	struct fw_switch_src src = sim_switch_src(h);
	int n;

	s->stats.sent++;
	if (h->dead) {
		s->stats.dead++;
		fwos_pkt_free(h, pkt);
		return 0;
	}
	if (s->mcast_lost) {
		/* Lost in the switch, as a drop fault would: the sender paid for it. */
		s->stats.dropped++;
		fwos_pkt_free(h, pkt);
		h->busy += s->cfg.overhead_ns;
		return 0;
	}
	n = fw_switch_replicate(&s->sw, &src, pkt, first, last, h->busy + s->cfg.overhead_ns);
	if (n >= 0)
		h->busy += s->cfg.overhead_ns;
	return n;
}

/* The sim_cfg's rx_room bounds what is on its way to each card (0: nothing does). */
bool fwos_fabric_room(struct fw_host *h, u32 first, u32 last)
{
	struct sim *s = h->sim;
	u32 i;

	for (i = first; s->cfg.rx_room && i <= last && i < s->cfg.nodes; i++)
		if (s->hosts[i].rx_queued >= s->cfg.rx_room)
			return false;
	return true;
}

/* A packet's last byte reached its card: the link, then the processor. */
void sim_arrive(struct sim *s, const struct sim_ev *ev)
{
	struct sim_pkt *p = ev->p;
	struct fw_host *h = &s->hosts[p->node];
	u64 r;

	h->rx_queued -= p->size;
	if (h->dead || !h->card) {
		s->stats.dead++;
		fwos_pkt_free(h, sim_pkt_fw(p));
		return;
	}
	r = fw_switch_arrive(&s->sw.cfg, &h->link, ev->time, p->size);
	sim_enter(s, h, r);
	h->clock += s->cfg.overhead_ns;
	h->busy = h->clock;
	s->stats.delivered++;
	if (p->corrupt)
		s->stats.corrupted++;
	fw_rx(h->card, sim_pkt_fw(p), p->size);
	sim_kick(s, h);
}
