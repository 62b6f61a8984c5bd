/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An emulated card and the card threads ("engines") that run it.  Each card
 * belongs to exactly one engine, which runs its firmware; a process opening
 * or closing a port, and netlink, take the card mutex too (see struct
 * nicoff_card.lock).
 */
#ifndef NICOFF_CARD_H
#define NICOFF_CARD_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/ktime.h>
#include <linux/lockdep.h>

#include "fabric.h"
#include "faults.h"
#include "fw.h"

struct nicoff_port;
struct task_struct;
struct device;

struct nicoff_engine {
	struct task_struct *task;
	unsigned int id;
	struct nicoff_card **cards;
	unsigned int ncards;
	unsigned int first;	/* the card its next pass starts with */
	wait_queue_head_t wq;
	bool kicked;		/* a wake-up ioctl arrived since the last sleep */
	bool asleep;		/* NEED_WAKEUP is (being) set on every port */
};

/* The firmware's handle on its host: fw_os.h leaves it to us. */
struct fw_host {
	struct nicoff_card *card;
};

struct nicoff_fabric_stats {
	u64 no_route;
};

struct nicoff_card {
	u32 id;
	struct nicoff_engine *engine;
	/*
	 * Held by the engine while it runs the card's firmware and serves its
	 * ports, by a process opening or closing a port or removing a memory
	 * region, and by netlink: so the firmware state, the port table, the
	 * ports' regions in use, the fault settings and the counters have one
	 * user at a time.  Not the receive queue: see struct nicoff_rxq.
	 */
	struct mutex lock;
	struct list_head ports;
	struct nicoff_port **port_tab;
	struct device *dev;
	struct fw_card *fw;
	struct fw_host host;
	u64 next_timer;		/* firmware's next deadline, ns */
	/*
	 * The card's clock while its engine serves it (0 otherwise): the
	 * engine reads the time once per pass, and the firmware's timers and
	 * the switch's due times all use that reading.  A message then costs
	 * no clock reads of its own, and a packet sent to a card served later
	 * in the same pass is due in that pass, not the next.  Under @lock.
	 */
	u64 pass_now;
	struct nicoff_rxq rxq;	/* packets from the fabric */
	struct fw_switch_link link;	/* its link to the switch: under @lock */
	struct fw_fault_state faults;	/* the card's outgoing link */
	struct fw_fault_cfg fault_cfg;		/* used when fault_override */
	bool fault_override;
	/*
	 * The firmware's bcast_hw, as last set for this card: by the module's
	 * tunable (every card) or over netlink (this card).  Under @lock.
	 */
	u32 bcast_hw;
	struct nicoff_fabric_stats fabric_stats;
};

extern struct nicoff_card *nicoff_cards;
extern unsigned int nicoff_num_cards;

/* The card's time: its engine pass's, or the clock outside a pass. */
static inline u64 nicoff_card_now(struct nicoff_card *card)
{
	lockdep_assert_held(&card->lock);
	return card->pass_now ? card->pass_now : ktime_get_ns();
}

int nicoff_cards_init(void);
void nicoff_cards_exit(void);
int nicoff_cards_set_config(enum fw_config_key key, u64 value);
/* One card's hardware broadcast on (1) or off (0); under the card's lock. */
int nicoff_card_set_bcast_hw(struct nicoff_card *card, u32 on);
/* GROUP_CREATE above this fails at once: a larger group cannot have distinct members. */
u64 nicoff_fw_group_limit(u64 max_group_size);

int nicoff_engines_start(void);
void nicoff_engines_stop(void);
void nicoff_engine_kick(struct nicoff_engine *e);

#endif
