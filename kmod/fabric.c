// SPDX-License-Identifier: GPL-2.0
/*
 * The emulated switch.  Sending runs on the source card's engine; the
 * packet is put on the destination card's receive queue with the time it
 * is due, and that card's engine is woken if it sleeps.  The receive queue
 * is the one structure two engines share, hence its spinlock.
 */
#include <linux/slab.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/sched/mm.h>

#include "fabric.h"
#include "card.h"
#include "port.h"
#include "params.h"
#include "fw_pkt.h"
#include "faults.h"
#include "fw.h"

void nicoff_rxq_init(struct nicoff_rxq *q)
{
	spin_lock_init(&q->lock);
	INIT_LIST_HEAD(&q->pkts);
	q->head_due = U64_MAX;
	q->tx_busy_until = 0;
}

void nicoff_rxq_purge(struct nicoff_rxq *q)
{
	struct nicoff_kpkt *kp, *tmp;

	list_for_each_entry_safe(kp, tmp, &q->pkts, node) {
		list_del(&kp->node);
		kfree(kp);
	}
	q->head_due = U64_MAX;
}

static struct nicoff_kpkt *nicoff_kpkt(struct fw_pkt *pkt)
{
	return container_of(pkt, struct nicoff_kpkt, pkt);
}

/*
 * Packets are not charged to a memory cgroup: they are the card's, in
 * flight (bounded by the window per peer) and freed when acknowledged or
 * taken; a message kept for a port is copied into the port's own memory.
 */
struct fw_pkt *nicoff_pkt_alloc(u32 payload)
{
	struct nicoff_kpkt *kp;

	kp = kmalloc(struct_size(kp, pkt.payload, payload), GFP_KERNEL | __GFP_NOWARN);
	if (!kp)
		return NULL;
	memset(&kp->pkt.hdr, 0, sizeof(kp->pkt.hdr));
	return &kp->pkt;
}

void nicoff_pkt_free(struct fw_pkt *pkt)
{
	kfree(nicoff_kpkt(pkt));
}

static struct fw_pkt *nicoff_pkt_clone(struct fw_pkt *pkt)
{
	struct fw_pkt *copy = nicoff_pkt_alloc(pkt->hdr.len);

	if (copy) {
		memcpy(copy, pkt, fw_pkt_size(pkt));
		nicoff_kpkt(copy)->size = nicoff_kpkt(pkt)->size;
	}
	return copy;
}

/* Insert in due order; equal times keep sending order. */
static void nicoff_rxq_insert(struct nicoff_rxq *q, struct nicoff_kpkt *kp)
{
	struct nicoff_kpkt *pos;

	list_for_each_entry_reverse(pos, &q->pkts, node) {
		if (pos->due_ns <= kp->due_ns) {
			list_add(&kp->node, &pos->node);
			goto out;
		}
	}
	list_add(&kp->node, &q->pkts);
out:
	q->head_due = list_first_entry(&q->pkts, struct nicoff_kpkt, node)->due_ns;
}

static void nicoff_fabric_enqueue(struct nicoff_card *dst, struct fw_pkt *pkt, u64 due)
{
	struct nicoff_kpkt *kp = nicoff_kpkt(pkt);
	bool wake;

	kp->due_ns = due;
	spin_lock(&dst->rxq.lock);
	nicoff_rxq_insert(&dst->rxq, kp);
	spin_unlock(&dst->rxq.lock);
	/* Pairs with the engine's fence between setting asleep and its last look. */
	smp_mb();
	wake = READ_ONCE(dst->engine->asleep);
	if (wake)
		nicoff_engine_kick(dst->engine);
}

void nicoff_fabric_send(struct nicoff_card *src, struct fw_pkt *pkt)
{
	u32 dst_node = pkt->hdr.dst_node;
	struct fw_fault_verdict v;
	struct fw_fault_cfg cfg;
	struct nicoff_card *dst;
	u64 now = ktime_get_ns(), due, wire;
	u32 mbps = READ_ONCE(nicoff_link_mbps);

	/* The source card's link: its serialisation, faults and counters. */
	lockdep_assert_held(&src->lock);
	if (dst_node >= nicoff_num_cards) {
		/* No such node: the switch drops it, as real hardware would. */
		src->fabric_stats.no_route++;
		nicoff_pkt_free(pkt);
		return;
	}
	dst = &nicoff_cards[dst_node];
	nicoff_kpkt(pkt)->size = fw_pkt_size(pkt);

	/* Serialisation on the sender's link, then the wire's latency. */
	wire = mbps ? div_u64((u64)(sizeof(pkt->hdr) + pkt->hdr.len) * 8000, mbps) : 0;
	due = max(now, src->rxq.tx_busy_until) + wire;
	src->rxq.tx_busy_until = due;
	due += (u64)READ_ONCE(nicoff_link_latency_ns);

	nicoff_fault_config(src, &cfg);
	v = fw_fault_verdict(&src->faults, &cfg, fw_pkt_size(pkt));
	if (v.faults & FW_FAULT_DROP) {
		nicoff_pkt_free(pkt);
		return;
	}
	/* The duplicate is the intact packet; the original may be corrupted. */
	if (v.faults & FW_FAULT_DUP) {
		struct fw_pkt *copy = nicoff_pkt_clone(pkt);

		if (copy)
			nicoff_fabric_enqueue(dst, copy, due);
	}
	if (v.faults & FW_FAULT_CORRUPT)
		fw_fault_flip(pkt, v.corrupt_bit);
	nicoff_fabric_enqueue(dst, pkt, due + v.delay_ns);
}

/* The faults in force on a card: its own, or the global tunables. */
void nicoff_fault_config(struct nicoff_card *card, struct fw_fault_cfg *cfg)
{
	lockdep_assert_held(&card->lock);
	if (card->fault_override)
		*cfg = card->fault_cfg;
	else
		nicoff_fault_global(cfg);
}

void nicoff_fault_global(struct fw_fault_cfg *cfg)
{
	cfg->drop_ppm = READ_ONCE(nicoff_fault_drop_ppm);
	cfg->dup_ppm = READ_ONCE(nicoff_fault_dup_ppm);
	cfg->corrupt_ppm = READ_ONCE(nicoff_fault_corrupt_ppm);
	cfg->reorder_ppm = READ_ONCE(nicoff_fault_reorder_ppm);
	cfg->delay_ppm = READ_ONCE(nicoff_fault_delay_ppm);
	cfg->delay_ns = READ_ONCE(nicoff_fault_delay_usecs) * NSEC_PER_USEC;
}

/* Values were range-checked by the netlink policy. */
void nicoff_fault_set_global(const struct fw_fault_cfg *cfg)
{
	WRITE_ONCE(nicoff_fault_drop_ppm, cfg->drop_ppm);
	WRITE_ONCE(nicoff_fault_dup_ppm, cfg->dup_ppm);
	WRITE_ONCE(nicoff_fault_corrupt_ppm, cfg->corrupt_ppm);
	WRITE_ONCE(nicoff_fault_reorder_ppm, cfg->reorder_ppm);
	WRITE_ONCE(nicoff_fault_delay_ppm, cfg->delay_ppm);
	WRITE_ONCE(nicoff_fault_delay_usecs, cfg->delay_ns / NSEC_PER_USEC);
}

/*
 * The memory cgroup to charge for what the firmware allocates on taking
 * @pkt: a message's first fragment may be buffered for the port it is
 * for (unexpected), at that port's owner's expense.  The header is not
 * checked yet (the firmware checks its CRC): a corrupt one only picks
 * whom to charge for a packet that will be dropped.
 */
static struct mem_cgroup *nicoff_rx_memcg(struct nicoff_card *card, const struct fw_pkt *pkt)
{
	struct nicoff_port *port;

	if (pkt->hdr.type != FW_PKT_DATA || pkt->hdr.dst_port >= nicoff_ports)
		return NULL;
	port = card->port_tab[pkt->hdr.dst_port];
	return port ? port->memcg : NULL;
}

/* Hand every packet that is due to the card's firmware (card lock held). */
unsigned int nicoff_fabric_deliver(struct nicoff_card *card, u64 now)
{
	struct nicoff_rxq *q = &card->rxq;
	struct mem_cgroup *old;
	unsigned int n = 0;
	LIST_HEAD(due);

	lockdep_assert_held(&card->lock);
	if (READ_ONCE(q->head_due) > now)
		return 0;
	spin_lock(&q->lock);
	while (!list_empty(&q->pkts)) {
		struct nicoff_kpkt *kp = list_first_entry(&q->pkts, struct nicoff_kpkt, node);

		if (kp->due_ns > now)
			break;
		list_move_tail(&kp->node, &due);
	}
	q->head_due = list_empty(&q->pkts) ? U64_MAX :
		list_first_entry(&q->pkts, struct nicoff_kpkt, node)->due_ns;
	spin_unlock(&q->lock);

	while (!list_empty(&due)) {
		struct nicoff_kpkt *kp = list_first_entry(&due, struct nicoff_kpkt, node);

		list_del(&kp->node);
		old = set_active_memcg(nicoff_rx_memcg(card, &kp->pkt));
		fw_rx(card->fw, &kp->pkt, kp->size);
		set_active_memcg(old);
		n++;
	}
	return n;
}

u64 nicoff_fabric_next_due(struct nicoff_card *card)
{
	return READ_ONCE(card->rxq.head_due);
}
