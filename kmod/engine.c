// SPDX-License-Identifier: GPL-2.0
/*
 * Card threads.  An engine serves its cards in passes; after poll_usecs
 * without work it announces NEED_WAKEUP on every port, fences, looks once
 * more, and sleeps until a wake-up ioctl.  A process publishes its ring
 * tail, fences, and kicks only if it then sees NEED_WAKEUP, so either the
 * engine's last look sees the command or the process sees the flag.
 */
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/ktime.h>
#include <linux/hrtimer.h>
#include <linux/cpumask.h>
#include <linux/sched/mm.h>

#include "card.h"
#include "port.h"
#include "params.h"
#include "fabric.h"
#include "fw.h"

static struct nicoff_engine *nicoff_engines;
static unsigned int nicoff_num_engines;

/*
 * One pass over a card: packets that are due, commands, then timers.  @now
 * is read once per pass of the engine: a later card sees it a little old,
 * which only delays what became due meanwhile to the next pass.  Each card
 * pass has its own allowance for expensive commands: as the ports take
 * turns at going first, a port waiting for an expensive command has the
 * whole allowance within as many passes as its card has ports, whatever
 * the other cards of the engine do.
 */
static unsigned int nicoff_card_pass(struct nicoff_card *card, unsigned int budget, u64 now)
{
	u32 work = NICOFF_PASS_WORK;
	struct nicoff_port *port;
	struct mem_cgroup *old;
	unsigned int done;

	mutex_lock(&card->lock);
	card->pass_now = now;
	done = nicoff_fabric_deliver(card, now);
	list_for_each_entry(port, &card->ports, node) {
		/* What the firmware allocates for the port's commands is its owner's. */
		old = set_active_memcg(port->memcg);
		done += nicoff_port_service(port, budget, &work);
		set_active_memcg(old);
	}
	/* The port served first has first pick of the allowance: take turns. */
	if (!list_empty(&card->ports))
		list_rotate_left(&card->ports);
	if (done || card->next_timer <= now)
		card->next_timer = fw_poll(card->fw, now);
	card->pass_now = 0;
	mutex_unlock(&card->lock);
	return done;
}

static unsigned int nicoff_engine_pass(struct nicoff_engine *e, u64 now)
{
	unsigned int budget = READ_ONCE(nicoff_budget);
	unsigned int done = 0, i, c = e->first;

	/* Cards take turns at going first: the first card of a pass is served soonest. */
	for (i = 0; i < e->ncards; i++) {
		done += nicoff_card_pass(e->cards[c], budget, now);
		c = c + 1 < e->ncards ? c + 1 : 0;
	}
	e->first = c + 1 < e->ncards ? c + 1 : 0;
	return done;
}

/* The earliest firmware timer or packet arrival among the engine's cards. */
static u64 nicoff_engine_deadline(struct nicoff_engine *e)
{
	u64 next = U64_MAX;
	unsigned int i;

	for (i = 0; i < e->ncards; i++) {
		next = min(next, READ_ONCE(e->cards[i]->next_timer));
		next = min(next, nicoff_fabric_next_due(e->cards[i]));
	}
	return next;
}

static void nicoff_engine_flag_all(struct nicoff_engine *e, bool need_wakeup)
{
	u32 set = need_wakeup ? NICOFF_RING_NEED_WAKEUP : 0;
	u32 clear = need_wakeup ? 0 : NICOFF_RING_NEED_WAKEUP;
	unsigned int i;

	for (i = 0; i < e->ncards; i++) {
		struct nicoff_card *card = e->cards[i];
		struct nicoff_port *port;

		mutex_lock(&card->lock);
		list_for_each_entry(port, &card->ports, node)
			nicoff_ring_set_flags(&port->cmd, set, clear);
		mutex_unlock(&card->lock);
	}
}

static bool nicoff_engine_has_work(struct nicoff_engine *e)
{
	bool work = false;
	unsigned int i;

	for (i = 0; i < e->ncards && !work; i++) {
		struct nicoff_card *card = e->cards[i];
		struct nicoff_port *port;

		mutex_lock(&card->lock);
		list_for_each_entry(port, &card->ports, node) {
			if (nicoff_port_has_work(port)) {
				work = true;
				break;
			}
		}
		mutex_unlock(&card->lock);
	}
	return work;
}

static void nicoff_engine_sleep(struct nicoff_engine *e)
{
	u64 deadline, now;

	WRITE_ONCE(e->kicked, false);
	WRITE_ONCE(e->asleep, true);
	nicoff_engine_flag_all(e, true);
	/*
	 * Pairs with the fence between a process's tail store and its flag
	 * load, and with the one after the fabric queues a packet: either we
	 * see their work now or they see us asleep and kick.
	 */
	smp_mb();
	deadline = nicoff_engine_deadline(e);
	now = ktime_get_ns();
	if (!nicoff_engine_has_work(e) && deadline > now) {
		if (deadline == U64_MAX)
			wait_event_interruptible(e->wq, READ_ONCE(e->kicked) ||
						 kthread_should_stop());
		else
			wait_event_interruptible_hrtimeout(e->wq, READ_ONCE(e->kicked) ||
							   kthread_should_stop(),
							   ns_to_ktime(deadline - now));
	}
	WRITE_ONCE(e->asleep, false);
	nicoff_engine_flag_all(e, false);
}

static int nicoff_engine_fn(void *arg)
{
	struct nicoff_engine *e = arg;
	u64 last_work = ktime_get_ns();

	while (!kthread_should_stop()) {
		u64 now = ktime_get_ns();

		if (nicoff_engine_pass(e, now)) {
			last_work = now;
		} else if (now - last_work >= (u64)READ_ONCE(nicoff_poll_usecs) * NSEC_PER_USEC) {
			nicoff_engine_sleep(e);
			last_work = ktime_get_ns();
		} else {
			cpu_relax();
		}
		cond_resched();
	}
	return 0;
}

void nicoff_engine_kick(struct nicoff_engine *e)
{
	WRITE_ONCE(e->kicked, true);
	wake_up_interruptible(&e->wq);
}

int nicoff_engines_start(void)
{
	/*
	 * By default half the CPUs are the cards' processors and half are
	 * left to the processes: a card thread that polls on every CPU
	 * leaves the processes it serves nowhere to run.
	 */
	unsigned int n = nicoff_threads ? nicoff_threads : max(1u, num_online_cpus() / 2);
	unsigned int i, c;

	n = clamp(n, 1u, nicoff_num_cards);
	nicoff_engines = kcalloc(n, sizeof(*nicoff_engines), GFP_KERNEL);
	if (!nicoff_engines)
		return -ENOMEM;
	nicoff_num_engines = n;

	for (i = 0; i < n; i++) {
		struct nicoff_engine *e = &nicoff_engines[i];

		e->id = i;
		init_waitqueue_head(&e->wq);
		e->cards = kcalloc(DIV_ROUND_UP(nicoff_num_cards, n), sizeof(*e->cards),
				   GFP_KERNEL);
		if (!e->cards)
			goto fail;
	}
	for (c = 0; c < nicoff_num_cards; c++) {
		struct nicoff_engine *e = &nicoff_engines[c % n];

		e->cards[e->ncards++] = &nicoff_cards[c];
		nicoff_cards[c].engine = e;
	}
	for (i = 0; i < n; i++) {
		struct task_struct *t;

		t = kthread_run(nicoff_engine_fn, &nicoff_engines[i], "nicoff/%u", i);
		if (IS_ERR(t))
			goto fail;
		nicoff_engines[i].task = t;
	}
	return 0;
fail:
	nicoff_engines_stop();
	return -ENOMEM;
}

void nicoff_engines_stop(void)
{
	unsigned int i;

	for (i = 0; i < nicoff_num_engines; i++) {
		if (nicoff_engines[i].task)
			kthread_stop(nicoff_engines[i].task);
		kfree(nicoff_engines[i].cards);
	}
	kfree(nicoff_engines);
	nicoff_engines = NULL;
	nicoff_num_engines = 0;
}
