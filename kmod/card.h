/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An emulated card and the card threads ("engines") that run it.  Each card
 * belongs to exactly one engine, so its protocol state has one owner; the
 * card mutex only keeps the port table stable while the engine walks it.
 */
#ifndef NICOFF_CARD_H
#define NICOFF_CARD_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/wait.h>

struct nicoff_port;
struct task_struct;
struct device;

struct nicoff_engine {
	struct task_struct *task;
	unsigned int id;
	struct nicoff_card **cards;
	unsigned int ncards;
	wait_queue_head_t wq;
	bool kicked;		/* a wake-up ioctl arrived since the last sleep */
	bool asleep;		/* NEED_WAKEUP is (being) set on every port */
};

struct nicoff_card {
	u32 id;
	struct nicoff_engine *engine;
	struct mutex lock;	/* ports list and port_tab */
	struct list_head ports;
	struct nicoff_port **port_tab;
	struct device *dev;
};

extern struct nicoff_card *nicoff_cards;
extern unsigned int nicoff_num_cards;

int nicoff_cards_init(void);
void nicoff_cards_exit(void);

int nicoff_engines_start(void);
void nicoff_engines_stop(void);
void nicoff_engine_kick(struct nicoff_engine *e);

#endif
