// SPDX-License-Identifier: GPL-2.0
/*
 * The module's fabric: the switch of firmware-sim/switch.c on the cards'
 * clock.  Sending runs on the source card's engine; each packet the switch
 * hands over is put on the destination card's receive queue with the time
 * it is due, and that card's engine is woken if it sleeps.  The receive
 * queue is the one structure two engines share, hence its spinlock.
 */
#include <linux/slab.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>
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
	WRITE_ONCE(q->head_due, U64_MAX);
	q->bytes = 0;
}

void nicoff_rxq_purge(struct nicoff_rxq *q)
{
	struct nicoff_kpkt *kp, *tmp;

	list_for_each_entry_safe(kp, tmp, &q->pkts, node) {
		list_del(&kp->node);
		kfree(kp);
	}
	WRITE_ONCE(q->head_due, U64_MAX);
	WRITE_ONCE(q->bytes, 0);
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
	lockdep_assert_held(&q->lock);
	/* Read without the lock by senders (nicoff_fabric_room()). */
	WRITE_ONCE(q->bytes, q->bytes + kp->size);
	/* Read without the lock by the owning engine (nicoff_fabric_deliver()). */
	WRITE_ONCE(q->head_due, list_first_entry(&q->pkts, struct nicoff_kpkt, node)->due_ns);
}

/* The switch hands over a packet for @dst: queue it, wake the card's engine. */
static void nicoff_fabric_queue(void *arg, u32 dst, struct fw_pkt *pkt, u32 size, u64 due,
				u32 faults)
{
	struct nicoff_card *card = &nicoff_cards[dst];
	struct nicoff_kpkt *kp = nicoff_kpkt(pkt);
	bool wake;

	kp->size = size;
	kp->due_ns = due;
	spin_lock(&card->rxq.lock);
	nicoff_rxq_insert(&card->rxq, kp);
	spin_unlock(&card->rxq.lock);
	/* Pairs with the engine's fence between setting asleep and its last look. */
	smp_mb();
	wake = READ_ONCE(card->engine->asleep);
	if (wake)
		nicoff_engine_kick(card->engine);
}

static const struct fw_switch_ops nicoff_switch_ops = {
	.deliver = nicoff_fabric_queue,
};

/* The switch as the cards' clock and tunables have it now. */
static void nicoff_fabric_switch(struct fw_switch *sw)
{
	*sw = (struct fw_switch){
		.cfg = {
			.nodes = nicoff_num_cards,
			.latency_ns = READ_ONCE(nicoff_link_latency_ns),
			.byte_mul = 8000,
			.byte_div = READ_ONCE(nicoff_link_mbps),
		},
		.ops = &nicoff_switch_ops,
	};
}

/*
 * The switch and the sending card as the switch sees them: its link and
 * fault generator, which its lock makes its own, and the faults in force.
 */
static void nicoff_fabric_src(struct nicoff_card *src, struct fw_switch *sw,
			      struct fw_switch_src *from, struct fw_fault_cfg *cfg)
{
	lockdep_assert_held(&src->lock);
	nicoff_fabric_switch(sw);
	nicoff_fault_config(src, cfg);
	*from = (struct fw_switch_src){
		.node = src->id,
		.host = &src->host,
		.link = &src->link,
		.faults = &src->faults,
		.fault_cfg = cfg,
	};
}

/*
 * Runs in the sending card's context, under its lock.  The links have no
 * gap and a time per byte of 8000 / link_mbps ns.
 */
void nicoff_fabric_send(struct nicoff_card *src, struct fw_pkt *pkt)
{
	struct fw_switch sw;
	struct fw_switch_src from;
	struct fw_fault_cfg cfg;

	nicoff_fabric_src(src, &sw, &from, &cfg);
	/* No such node: the switch drops it, as real hardware would. */
	if (fw_switch_send(&sw, &from, pkt, nicoff_card_now(src)) == FW_SWITCH_NO_ROUTE)
		src->fabric_stats.no_route++;
}

/* The multicast: as nicoff_fabric_send(), the switch replicating. */
int nicoff_fabric_send_range(struct nicoff_card *src, struct fw_pkt *pkt, u32 first, u32 last)
{
	struct fw_switch sw;
	struct fw_switch_src from;
	struct fw_fault_cfg cfg;

	nicoff_fabric_src(src, &sw, &from, &cfg);
	return fw_switch_replicate(&sw, &from, pkt, first, last, nicoff_card_now(src));
}

/*
 * Whether every card of [@first, @last] has less than switch_buffer_bytes
 * queued: a multicast sender waits for the slowest (fwos_fabric_room()).
 */
bool nicoff_fabric_room(u32 first, u32 last)
{
	const u64 room = READ_ONCE(nicoff_switch_buffer_bytes);
	u32 i;

	for (i = first; i <= last && i < nicoff_num_cards; i++)
		if (READ_ONCE(nicoff_cards[i].rxq.bytes) >= room)
			return false;
	return true;
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

/*
 * The global fault settings are six tunables that netlink sets together:
 * a card must never send with some of an update and not the rest (drop
 * rates of the new one, delay of the old).  Writers (netlink, the
 * parameters' setter) take the seqlock, which also orders them; readers,
 * card threads on every packet sent, retry a copy made during a write.
 */
static DEFINE_SEQLOCK(nicoff_fault_lock);

static void nicoff_fault_read(struct fw_fault_cfg *cfg)
{
	cfg->drop_ppm = READ_ONCE(nicoff_fault_drop_ppm);
	cfg->dup_ppm = READ_ONCE(nicoff_fault_dup_ppm);
	cfg->corrupt_ppm = READ_ONCE(nicoff_fault_corrupt_ppm);
	cfg->reorder_ppm = READ_ONCE(nicoff_fault_reorder_ppm);
	cfg->delay_ppm = READ_ONCE(nicoff_fault_delay_ppm);
	cfg->delay_ns = READ_ONCE(nicoff_fault_delay_usecs) * NSEC_PER_USEC;
}

void nicoff_fault_global(struct fw_fault_cfg *cfg)
{
	unsigned int seq;

	do {
		seq = read_seqbegin(&nicoff_fault_lock);
		nicoff_fault_read(cfg);
	} while (read_seqretry(&nicoff_fault_lock, seq));
}

/*
 * Change the global settings as @update says, in one step: @update gets
 * the current ones and changes what it sets (values were range-checked by
 * the netlink policy).
 */
void nicoff_fault_update_global(void (*update)(struct fw_fault_cfg *cfg, void *arg), void *arg)
{
	struct fw_fault_cfg cfg;

	write_seqlock(&nicoff_fault_lock);
	nicoff_fault_read(&cfg);
	update(&cfg, arg);
	WRITE_ONCE(nicoff_fault_drop_ppm, cfg.drop_ppm);
	WRITE_ONCE(nicoff_fault_dup_ppm, cfg.dup_ppm);
	WRITE_ONCE(nicoff_fault_corrupt_ppm, cfg.corrupt_ppm);
	WRITE_ONCE(nicoff_fault_reorder_ppm, cfg.reorder_ppm);
	WRITE_ONCE(nicoff_fault_delay_ppm, cfg.delay_ppm);
	WRITE_ONCE(nicoff_fault_delay_usecs, cfg.delay_ns / NSEC_PER_USEC);
	write_sequnlock(&nicoff_fault_lock);
}

/* One of the tunables, from its module parameter (range-checked by the setter). */
void nicoff_fault_set_param(unsigned int *param, unsigned int value)
{
	write_seqlock(&nicoff_fault_lock);
	WRITE_ONCE(*param, value);
	write_sequnlock(&nicoff_fault_lock);
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
		WRITE_ONCE(q->bytes, q->bytes - kp->size);
	}
	WRITE_ONCE(q->head_due, list_empty(&q->pkts) ? U64_MAX :
		   list_first_entry(&q->pkts, struct nicoff_kpkt, node)->due_ns);
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
