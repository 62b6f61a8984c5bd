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
#include <linux/string.h>
#include <linux/sysfs.h>
#include <uapi/nicoff.h>

#include "params.h"
#include "card.h"

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
		 "Card threads; card i belongs to thread i mod threads (0 = half the online CPUs, at least 1)");

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

/*
 * A run-time tunable of the firmware: checked, stored, then handed to
 * every card (the setter runs under the module's param lock).
 */
static int nicoff_param_set_fw(const char *val, const struct kernel_param *kp,
			       unsigned int min, unsigned int max, enum fw_config_key key)
{
	int ret = nicoff_param_set_range(val, kp, min, max);

	return ret ? ret : nicoff_cards_set_config(key, *(unsigned int *)kp->arg);
}

/* Setters of the run-time tunables, one per range. */
static int nicoff_set_usecs(const char *val, const struct kernel_param *kp)
{
	return nicoff_param_set_range(val, kp, 0, NICOFF_MAX_POLL_USECS);
}

static const struct kernel_param_ops nicoff_usecs_ops = {
	.set = nicoff_set_usecs,
	.get = param_get_uint,
};

static int nicoff_set_delay(const char *val, const struct kernel_param *kp)
{
	return nicoff_param_set_range(val, kp, 0, NICOFF_MAX_FAULT_DELAY_USECS);
}

static const struct kernel_param_ops nicoff_delay_ops = {
	.set = nicoff_set_delay,
	.get = param_get_uint,
};

static int nicoff_set_budget(const char *val, const struct kernel_param *kp)
{
	return nicoff_param_set_range(val, kp, 1, NICOFF_MAX_BUDGET);
}

static const struct kernel_param_ops nicoff_budget_ops = {
	.set = nicoff_set_budget,
	.get = param_get_uint,
};

static int nicoff_set_group_size(const char *val, const struct kernel_param *kp)
{
	return nicoff_param_set_fw(val, kp, 1, NICOFF_MAX_GROUP_SIZE, FW_CFG_MAX_GROUP_SIZE);
}

static const struct kernel_param_ops nicoff_group_size_ops = {
	.set = nicoff_set_group_size,
	.get = param_get_uint,
};

static int nicoff_set_card_members(const char *val, const struct kernel_param *kp)
{
	return nicoff_param_set_fw(val, kp, 1, NICOFF_MAX_CARD_GROUP_MEMBERS,
				   FW_CFG_CARD_GROUP_MEMBERS);
}

static const struct kernel_param_ops nicoff_card_members_ops = {
	.set = nicoff_set_card_members,
	.get = param_get_uint,
};

static int nicoff_set_million(const char *val, const struct kernel_param *kp)
{
	return nicoff_param_set_range(val, kp, 0, 1000000);
}

static const struct kernel_param_ops nicoff_million_ops = {
	.set = nicoff_set_million,
	.get = param_get_uint,
};

static int nicoff_set_ns(const char *val, const struct kernel_param *kp)
{
	return nicoff_param_set_range(val, kp, 0, 100000000);
}

static const struct kernel_param_ops nicoff_ns_ops = {
	.set = nicoff_set_ns,
	.get = param_get_uint,
};

static int nicoff_set_bytes(const char *val, const struct kernel_param *kp)
{
	return nicoff_param_set_fw(val, kp, 0, NICOFF_MAX_UNEXPECTED_BYTES,
				   FW_CFG_UNEXPECTED_BYTES);
}

static const struct kernel_param_ops nicoff_bytes_ops = {
	.set = nicoff_set_bytes,
	.get = param_get_uint,
};

static int nicoff_set_card_bytes(const char *val, const struct kernel_param *kp)
{
	return nicoff_param_set_fw(val, kp, 0, NICOFF_MAX_UNEXPECTED_BYTES,
				   FW_CFG_CARD_UNEXPECTED_BYTES);
}

static const struct kernel_param_ops nicoff_card_bytes_ops = {
	.set = nicoff_set_card_bytes,
	.get = param_get_uint,
};

unsigned int nicoff_poll_usecs = 50;
module_param_cb(poll_usecs, &nicoff_usecs_ops, &nicoff_poll_usecs, 0644);
MODULE_PARM_DESC(poll_usecs,
		 "Idle time a card thread keeps polling before it sleeps (0-10000000 us, default 50)");

unsigned int nicoff_budget = 64;
module_param_cb(budget, &nicoff_budget_ops, &nicoff_budget, 0644);
MODULE_PARM_DESC(budget,
		 "Commands a card thread takes from one port per pass (1-4096, default 64)");

unsigned int nicoff_mtu = 4096;
module_param_named(mtu, nicoff_mtu, uint, 0444);
MODULE_PARM_DESC(mtu, "Payload bytes per packet on the fabric (256-65536, default 4096)");

unsigned int nicoff_rto_usecs = 2000;
module_param_named(rto_usecs, nicoff_rto_usecs, uint, 0444);
MODULE_PARM_DESC(rto_usecs, "First retransmission timeout (10-10000000 us, default 2000)");

unsigned int nicoff_max_retries = 12;
module_param_named(max_retries, nicoff_max_retries, uint, 0444);
MODULE_PARM_DESC(max_retries,
		 "Retransmissions before a peer's operations fail with ETIMEDOUT (1-64, default 12)");

unsigned int nicoff_atomic_table = 1024;
module_param_named(atomic_table, nicoff_atomic_table, uint, 0444);
MODULE_PARM_DESC(atomic_table,
		 "Remote-atomic replies each card keeps; each card may have the largest power of two <= atomic_table/nics outstanding at another (nics-1048576, default 1024)");

static const char *const nicoff_barrier_names[NICOFF_BARRIER_MAX] = {
#define NICOFF_BARRIER_ALG(alg, name) \
	[NICOFF_BARRIER_##alg] = #name,
#include <uapi/nicoff_lists.h>
#undef NICOFF_BARRIER_ALG
};

static int nicoff_set_barrier_alg(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int i;

	i = sysfs_match_string(nicoff_barrier_names, val);
	if (i >= 0)
		v = i;
	else if (kstrtouint(val, 0, &v) || v >= NICOFF_BARRIER_MAX)
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return nicoff_cards_set_config(FW_CFG_BARRIER_ALG, v);
}

static int nicoff_get_barrier_alg(char *buf, const struct kernel_param *kp)
{
	unsigned int v = READ_ONCE(*(unsigned int *)kp->arg);

	return sysfs_emit(buf, "%s\n", v < NICOFF_BARRIER_MAX ? nicoff_barrier_names[v] : "?");
}

static const struct kernel_param_ops nicoff_barrier_alg_ops = {
	.set = nicoff_set_barrier_alg,
	.get = nicoff_get_barrier_alg,
};

unsigned int nicoff_barrier_alg = NICOFF_BARRIER_AUTO;
module_param_cb(barrier_alg, &nicoff_barrier_alg_ops, &nicoff_barrier_alg, 0644);
MODULE_PARM_DESC(barrier_alg,
		 "Barrier algorithm of groups created with NICOFF_BARRIER_DEFAULT: auto, pairwise, dissemination, tree, central, combining, tournament or its number (default auto)");

/*
 * Kernel memory a user can make the cards hold for it without receiving:
 * see Documentation/limits.md.
 */
unsigned int nicoff_unexpected_bytes = 4 << 20;
module_param_cb(unexpected_bytes, &nicoff_bytes_ops, &nicoff_unexpected_bytes, 0644);
MODULE_PARM_DESC(unexpected_bytes,
		 "Bytes of unexpected messages one port may buffer (0-1073741824, default 4194304)");

unsigned int nicoff_card_unexpected_bytes = 16 << 20;
module_param_cb(card_unexpected_bytes, &nicoff_card_bytes_ops, &nicoff_card_unexpected_bytes,
		0644);
MODULE_PARM_DESC(card_unexpected_bytes,
		 "Bytes of unexpected messages one card may buffer, all its ports together (0-1073741824, default 16777216)");

/*
 * A card checks a new group's member table and builds its schedules in one
 * go, holding its card thread for time that grows with the size: this
 * bounds it.  4096 is four times the largest job the module runs (1024
 * cards, one port each).
 */
unsigned int nicoff_max_group_size = 4096;
module_param_cb(max_group_size, &nicoff_group_size_ops, &nicoff_max_group_size, 0644);
MODULE_PARM_DESC(max_group_size,
		 "Largest group GROUP_CREATE accepts, and never more than nics x ports; larger ones fail with E2BIG (1-1048576, default 4096)");

/*
 * A group's state grows with its size, and a process may create 64 per
 * port: the members of a card's groups together are bounded as well (see
 * Documentation/limits.md).  16384 leaves room for four groups of the
 * largest default size, or 16 of the 1,024-card job's, on one card.
 */
unsigned int nicoff_card_group_members = 16384;
module_param_cb(card_group_members, &nicoff_card_members_ops, &nicoff_card_group_members, 0644);
MODULE_PARM_DESC(card_group_members,
		 "Members of all the groups of one card together, destroyed ones until forgotten; past it GROUP_CREATE fails with ENOSPC (1-16777216, default 16384)");

unsigned int nicoff_link_latency_ns;
module_param_cb(link_latency_ns, &nicoff_ns_ops, &nicoff_link_latency_ns, 0644);
MODULE_PARM_DESC(link_latency_ns,
		 "Extra one-way latency of every link (0-100000000 ns, default 0)");

unsigned int nicoff_link_mbps;
module_param_cb(link_mbps, &nicoff_million_ops, &nicoff_link_mbps, 0644);
MODULE_PARM_DESC(link_mbps,
		 "Link bandwidth in Mbit/s (0 = unlimited, the default)");

unsigned int nicoff_fault_drop_ppm;
module_param_cb(fault_drop_ppm, &nicoff_million_ops, &nicoff_fault_drop_ppm, 0644);
MODULE_PARM_DESC(fault_drop_ppm,
		 "Packets dropped, per million (default 0)");

unsigned int nicoff_fault_dup_ppm;
module_param_cb(fault_dup_ppm, &nicoff_million_ops, &nicoff_fault_dup_ppm, 0644);
MODULE_PARM_DESC(fault_dup_ppm,
		 "Packets duplicated, per million (default 0)");

unsigned int nicoff_fault_corrupt_ppm;
module_param_cb(fault_corrupt_ppm, &nicoff_million_ops, &nicoff_fault_corrupt_ppm, 0644);
MODULE_PARM_DESC(fault_corrupt_ppm,
		 "Packets with one bit flipped, per million (default 0)");

unsigned int nicoff_fault_reorder_ppm;
module_param_cb(fault_reorder_ppm, &nicoff_million_ops, &nicoff_fault_reorder_ppm, 0644);
MODULE_PARM_DESC(fault_reorder_ppm,
		 "Packets held back behind later ones, per million (default 0)");

unsigned int nicoff_fault_delay_ppm;
module_param_cb(fault_delay_ppm, &nicoff_million_ops, &nicoff_fault_delay_ppm, 0644);
MODULE_PARM_DESC(fault_delay_ppm,
		 "Packets delayed by fault_delay_usecs, per million (default 0)");

unsigned int nicoff_fault_delay_usecs = 100;
module_param_cb(fault_delay_usecs, &nicoff_delay_ops, &nicoff_fault_delay_usecs, 0644);
MODULE_PARM_DESC(fault_delay_usecs,
		 "Delay of delayed and reordered packets (0-4000000 us, default 100)");

unsigned long long nicoff_fault_seed = 1;
module_param_named(fault_seed, nicoff_fault_seed, ullong, 0444);
MODULE_PARM_DESC(fault_seed, "Seed of the fault injector: same seed, same faults (default 1)");

int nicoff_params_check(void)
{
	if (nicoff_mtu < 256 || nicoff_mtu > 65536 || nicoff_rto_usecs < 10 ||
	    nicoff_rto_usecs > 10000000 || nicoff_max_retries < 1 || nicoff_max_retries > 64) {
		pr_err("nicoff: mtu, rto_usecs or max_retries out of range\n");
		return -EINVAL;
	}
	if (nicoff_nics < 1 || nicoff_nics > NICOFF_MAX_CARDS) {
		pr_err("nicoff: nics=%u out of range 1-%u\n", nicoff_nics, NICOFF_MAX_CARDS);
		return -EINVAL;
	}
	/* At least one reply per card, so that the credits never overflow the table. */
	if (nicoff_atomic_table < nicoff_nics || nicoff_atomic_table > NICOFF_MAX_ATOMIC_TABLE) {
		pr_err("nicoff: atomic_table=%u out of range %u-%u\n", nicoff_atomic_table,
		       nicoff_nics, NICOFF_MAX_ATOMIC_TABLE);
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
