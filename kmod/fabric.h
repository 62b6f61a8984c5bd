/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The emulated fabric: cards are nodes 0..nics-1 of the switch of
 * firmware-sim/switch.h; a packet sent by one card is queued, after the
 * link's latency and serialisation time and the fault injector's verdict,
 * on the receive queue of its destination card, whose engine is woken if
 * it sleeps.
 */
#ifndef NICOFF_FABRIC_H
#define NICOFF_FABRIC_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/spinlock.h>

#include "fw_pkt.h"
#include "faults.h"
#include "switch.h"

struct nicoff_card;

/* A packet as the kernel host holds it: the firmware sees only @pkt. */
struct nicoff_kpkt {
	struct list_head node;
	u64 due_ns;
	u32 size;		/* bytes on the wire, whatever the header says */
	struct fw_pkt pkt;	/* last: its payload follows */
};

/* Packets waiting for their card, in due-time order. */
struct nicoff_rxq {
	spinlock_t lock;	/* the sending engine vs the owning one */
	struct list_head pkts;
	u64 head_due;		/* due time of the first packet, or U64_MAX */
	u64 bytes;		/* queued, not yet taken by the card (under @lock) */
};

void nicoff_rxq_init(struct nicoff_rxq *q);
void nicoff_rxq_purge(struct nicoff_rxq *q);

struct fw_pkt *nicoff_pkt_alloc(u32 payload);
void nicoff_pkt_free(struct fw_pkt *pkt);
void nicoff_fabric_send(struct nicoff_card *src, struct fw_pkt *pkt);
int nicoff_fabric_send_range(struct nicoff_card *src, struct fw_pkt *pkt, u32 first, u32 last);
bool nicoff_fabric_room(u32 first, u32 last);
unsigned int nicoff_fabric_deliver(struct nicoff_card *card, u64 now);
u64 nicoff_fabric_next_due(struct nicoff_card *card);

void nicoff_fault_config(struct nicoff_card *card, struct fw_fault_cfg *cfg);
void nicoff_fault_global(struct fw_fault_cfg *cfg);
void nicoff_fault_update_global(void (*update)(struct fw_fault_cfg *cfg, void *arg), void *arg);
void nicoff_fault_set_param(unsigned int *param, unsigned int value);

#endif
