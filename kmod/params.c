// SPDX-License-Identifier: GPL-2.0
/*
 * Module tunables.  Load-time ones are checked once in nicoff_params_check();
 * run-time ones go through a setter that refuses out-of-range values, so the
 * card threads can read them with READ_ONCE() and trust what they see.
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/kernel.h>
#include <linux/log2.h>

#include "params.h"

unsigned int nicoff_nics = 8;
module_param_named(nics, nicoff_nics, uint, 0444);
MODULE_PARM_DESC(nics, "Number of emulated cards, each a /dev/nicoffN (1-1024, default 8)");

unsigned int nicoff_ports = 64;
module_param_named(ports, nicoff_ports, uint, 0444);
MODULE_PARM_DESC(ports, "Ports per card (1-4096, default 64)");

unsigned int nicoff_max_ring_entries = 4096;
module_param_named(max_ring_entries, nicoff_max_ring_entries, uint, 0444);
MODULE_PARM_DESC(max_ring_entries,
		 "Largest ring a port may ask for, a power of two (2-65536, default 4096)");

unsigned int nicoff_max_mrs = 1024;
module_param_named(max_mrs, nicoff_max_mrs, uint, 0444);
MODULE_PARM_DESC(max_mrs, "Memory regions per port (1-65536, default 1024)");

unsigned int nicoff_threads;
module_param_named(threads, nicoff_threads, uint, 0444);
MODULE_PARM_DESC(threads,
		 "Card threads; card i belongs to thread i mod threads (0 = one per online CPU)");

static int nicoff_param_set_range(const char *val, const struct kernel_param *kp,
				  unsigned int min, unsigned int max)
{
	unsigned int v;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (ret)
		return ret;
	if (v < min || v > max)
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return 0;
}

unsigned int nicoff_poll_usecs = 50;

static int nicoff_poll_usecs_set(const char *val, const struct kernel_param *kp)
{
	return nicoff_param_set_range(val, kp, 0, NICOFF_MAX_POLL_USECS);
}

static const struct kernel_param_ops nicoff_poll_usecs_ops = {
	.set = nicoff_poll_usecs_set,
	.get = param_get_uint,
};

module_param_cb(poll_usecs, &nicoff_poll_usecs_ops, &nicoff_poll_usecs, 0644);
MODULE_PARM_DESC(poll_usecs,
		 "Idle time a card thread keeps polling before it sleeps (0-10000000 us, default 50)");

unsigned int nicoff_budget = 64;

static int nicoff_budget_set(const char *val, const struct kernel_param *kp)
{
	return nicoff_param_set_range(val, kp, 1, NICOFF_MAX_BUDGET);
}

static const struct kernel_param_ops nicoff_budget_ops = {
	.set = nicoff_budget_set,
	.get = param_get_uint,
};

module_param_cb(budget, &nicoff_budget_ops, &nicoff_budget, 0644);
MODULE_PARM_DESC(budget, "Commands a card thread takes from one port per pass (1-4096, default 64)");

int nicoff_params_check(void)
{
	if (nicoff_nics < 1 || nicoff_nics > NICOFF_MAX_CARDS) {
		pr_err("nicoff: nics=%u out of range 1-%u\n", nicoff_nics, NICOFF_MAX_CARDS);
		return -EINVAL;
	}
	if (nicoff_ports < 1 || nicoff_ports > NICOFF_MAX_PORTS) {
		pr_err("nicoff: ports=%u out of range 1-%u\n", nicoff_ports, NICOFF_MAX_PORTS);
		return -EINVAL;
	}
	if (nicoff_max_ring_entries < 2 || nicoff_max_ring_entries > NICOFF_MAX_RING ||
	    !is_power_of_2(nicoff_max_ring_entries)) {
		pr_err("nicoff: max_ring_entries=%u must be a power of two in 2-%u\n",
		       nicoff_max_ring_entries, NICOFF_MAX_RING);
		return -EINVAL;
	}
	if (nicoff_max_mrs < 1 || nicoff_max_mrs > NICOFF_MAX_MRS) {
		pr_err("nicoff: max_mrs=%u out of range 1-%u\n", nicoff_max_mrs, NICOFF_MAX_MRS);
		return -EINVAL;
	}
	if (nicoff_threads > NICOFF_MAX_CARDS) {
		pr_err("nicoff: threads=%u out of range 0-%u\n", nicoff_threads, NICOFF_MAX_CARDS);
		return -EINVAL;
	}
	if (nicoff_poll_usecs > NICOFF_MAX_POLL_USECS || nicoff_budget < 1 ||
	    nicoff_budget > NICOFF_MAX_BUDGET) {
		pr_err("nicoff: poll_usecs or budget out of range\n");
		return -EINVAL;
	}
	return 0;
}
