// SPDX-License-Identifier: GPL-2.0
/*
 * The fabric's switch (switch.h): a packet takes its sender's link, is
 * routed or replicated, and each copy suffers its fault verdict before the
 * host queues it.
 */
#include "switch.h"
#include "fw_pkt.h"

static u64 fw_switch_max(u64 a, u64 b)
{
	return a > b ? a : b;
}

u64 fw_switch_wire_ns(const struct fw_switch_cfg *cfg, u32 size)
{
	return cfg->byte_div ? (u64)size * cfg->byte_mul / cfg->byte_div : 0;
}

/*
 * The sender's link takes the first byte of @size once it is free and
 * the packet is ready; returns when the last byte has left.
 */
static u64 fw_switch_tx(const struct fw_switch_cfg *cfg, struct fw_switch_link *link, u32 size,
			u64 ready)
{
	u64 wire = fw_switch_wire_ns(cfg, size);
	u64 t = fw_switch_max(ready, link->tx_free);

	link->tx_free = t + cfg->gap_ns + wire;
	return t + wire;
}

u64 fw_switch_arrive(const struct fw_switch_cfg *cfg, struct fw_switch_link *link, u64 due,
		     u32 size)
{
	u64 t = fw_switch_max(due, link->rx_free + fw_switch_wire_ns(cfg, size));

	link->rx_free = t + cfg->gap_ns;
	return t;
}

/* A copy of the first @size bytes of @pkt, from the sender's packets. */
static struct fw_pkt *fw_switch_copy(const struct fw_switch_src *src, const struct fw_pkt *pkt,
				     u32 size)
{
	struct fw_pkt *copy = fwos_pkt_alloc(src->host, pkt->hdr.len);

	if (copy)
		memcpy(copy, pkt, size);
	return copy;
}

/*
 * One copy, its last byte at node @dst at @due unless a fault says
 * otherwise: dropped, duplicated (the duplicate intact: it is made before
 * the corruption), corrupted, held back.
 */
static enum fw_switch_fate fw_switch_out(const struct fw_switch *sw,
					 const struct fw_switch_src *src, struct fw_pkt *pkt,
					 u32 size, u32 dst, u64 due)
{
	struct fw_fault_verdict v;

	if (sw->ops->link_up && !sw->ops->link_up(sw->arg, dst)) {
		fwos_pkt_free(src->host, pkt);
		return FW_SWITCH_LINK_DOWN;
	}
	v = fw_fault_verdict(src->faults, src->fault_cfg, size);
	if (v.faults & FW_FAULT_DROP) {
		fwos_pkt_free(src->host, pkt);
		return FW_SWITCH_DROPPED;
	}
	due += v.delay_ns;
	if (v.faults & FW_FAULT_DUP) {
		struct fw_pkt *copy = fw_switch_copy(src, pkt, size);

		if (copy)
			sw->ops->deliver(sw->arg, dst, copy, size, due,
					 v.faults & ~FW_FAULT_CORRUPT);
	}
	if (v.faults & FW_FAULT_CORRUPT)
		fw_fault_flip(pkt, v.corrupt_bit);
	sw->ops->deliver(sw->arg, dst, pkt, size, due, v.faults & ~FW_FAULT_DUP);
	return FW_SWITCH_QUEUED;
}

enum fw_switch_fate fw_switch_send(const struct fw_switch *sw, const struct fw_switch_src *src,
				   struct fw_pkt *pkt, u64 ready)
{
	u32 dst = pkt->hdr.dst_node;
	u32 size = fw_pkt_size(pkt);
	u64 due;

	if (dst >= sw->cfg.nodes) {
		fwos_pkt_free(src->host, pkt);
		return FW_SWITCH_NO_ROUTE;
	}
	due = fw_switch_tx(&sw->cfg, src->link, size, ready) + sw->cfg.latency_ns;
	return fw_switch_out(sw, src, pkt, size, dst, due);
}

int fw_switch_replicate(const struct fw_switch *sw, const struct fw_switch_src *src,
			struct fw_pkt *pkt, u32 first, u32 last, u64 ready)
{
	u32 size = fw_pkt_size(pkt);
	u32 final, n;
	int queued = 0;
	u64 due;

	if (first > last || last >= sw->cfg.nodes || (first == last && first == src->node)) {
		fwos_pkt_free(src->host, pkt);
		return -EINVAL;
	}
	/* The last copy to go is the packet itself. */
	final = last == src->node ? last - 1 : last;
	due = fw_switch_tx(&sw->cfg, src->link, size, ready) + sw->cfg.latency_ns;
	for (n = first; n <= final; n++) {
		struct fw_pkt *p = pkt;

		if (n == src->node)
			continue;
		if (n != final) {
			p = fw_switch_copy(src, pkt, size);
			if (!p)
				continue;
		}
		if (fw_switch_out(sw, src, p, size, n, due) == FW_SWITCH_QUEUED)
			queued++;
	}
	return queued;
}
