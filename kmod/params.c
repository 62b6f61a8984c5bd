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
#include "fabric.h"

/*
 * One row of the table of load-time parameters: the variable nicoff_@name
 * with its default @def, read-only in /sys/module/nicoff/parameters/@name,
 * checked by nicoff_params_check().  MODULE_INFO() is MODULE_PARM_DESC()
 * spelled out, so that a row macro names its parameter once.
 */
#define NICOFF_LOAD_PARAM(name, def, desc)					\
	unsigned int nicoff_##name = (def);					\
	module_param_named(name, nicoff_##name, uint, 0444);			\
	MODULE_INFO(parm, #name ":" desc)

NICOFF_LOAD_PARAM(nics, 8,
		  "Number of emulated cards, each a /dev/nicoffN (1-1024, default 8)");

NICOFF_LOAD_PARAM(ports, 64,
		  "Ports per card (1-4096, default 64)");

NICOFF_LOAD_PARAM(max_ring_entries, 4096,
		  "Largest ring a port may ask for, a power of two (2-65536, default 4096)");

NICOFF_LOAD_PARAM(max_mrs, 1024,
		  "Memory regions per port (1-65536, default 1024)");

NICOFF_LOAD_PARAM(threads, 0,
		  "Card threads; card i belongs to thread i mod threads (0 = half the online CPUs, at least 1)");

/*
 * A run-time tunable: the variable the module reads, its range, and the
 * firmware's key when the cards must be told of a change.  One setter and
 * one getter serve them all; the setter runs under the module's param
 * lock and refuses what is out of range, so readers can trust what they
 * see with READ_ONCE().
 */
struct nicoff_tunable {
	unsigned int *val;
	unsigned int min;
	unsigned int max;
	enum fw_config_key key;
};

/* The key of a tunable only the module reads. */
#define NICOFF_MODULE_ONLY	FW_CFG_NUM_KEYS
/* The key of a global fault setting: changed under the faults' seqlock (fabric.c). */
#define NICOFF_FAULT_SETTING	(FW_CFG_NUM_KEYS + 1)

static int nicoff_tunable_set(const char *val, const struct kernel_param *kp)
{
	const struct nicoff_tunable *t = kp->arg;
	unsigned int v;
	int ret;

	ret = kstrtouint(val, 0, &v);
	if (ret)
		return ret;
	if (v < t->min || v > t->max)
		return -EINVAL;
	if (t->key == NICOFF_FAULT_SETTING) {
		nicoff_fault_set_param(t->val, v);
		return 0;
	}
	WRITE_ONCE(*t->val, v);
	return t->key == NICOFF_MODULE_ONLY ? 0 : nicoff_cards_set_config(t->key, v);
}

static int nicoff_tunable_get(char *buf, const struct kernel_param *kp)
{
	const struct nicoff_tunable *t = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(*t->val));
}

static const struct kernel_param_ops nicoff_tunable_ops = {
	.set = nicoff_tunable_set,
	.get = nicoff_tunable_get,
};

/*
 * One row of the table of run-time tunables: the variable nicoff_@name
 * with its default @def, shown as /sys/module/nicoff/parameters/@name,
 * which takes @lo-@hi and tells the cards under @fw_key.
 */
#define NICOFF_TUNABLE(name, def, lo, hi, fw_key, desc)				\
	unsigned int nicoff_##name = (def);					\
	static struct nicoff_tunable nicoff_tunable_##name = {			\
		.val = &nicoff_##name, .min = (lo), .max = (hi), .key = (fw_key),	\
	};									\
	module_param_cb(name, &nicoff_tunable_ops, &nicoff_tunable_##name, 0644);	\
	MODULE_INFO(parm, #name ":" desc)

NICOFF_LOAD_PARAM(mtu, 4096,
		  "Payload bytes per packet on the fabric (256-65536, default 4096)");

NICOFF_LOAD_PARAM(rto_usecs, 2000,
		  "First retransmission timeout (10-10000000 us, default 2000)");

NICOFF_LOAD_PARAM(max_retries, 12,
		  "Retransmissions before a peer's operations fail with ETIMEDOUT (1-64, default 12)");

NICOFF_LOAD_PARAM(atomic_table, 1024,
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

NICOFF_TUNABLE(poll_usecs, 50, 0, NICOFF_MAX_POLL_USECS, NICOFF_MODULE_ONLY,
	       "Idle time a card thread keeps polling before it sleeps (0-10000000 us, default 50)");

NICOFF_TUNABLE(budget, 64, 1, NICOFF_MAX_BUDGET, NICOFF_MODULE_ONLY,
	       "Commands a card thread takes from one port per pass (1-4096, default 64)");

/*
 * Kernel memory a user can make the cards hold for it without receiving:
 * see Documentation/limits.md.
 */
NICOFF_TUNABLE(unexpected_bytes, 4 << 20, 0, NICOFF_MAX_UNEXPECTED_BYTES,
	       FW_CFG_UNEXPECTED_BYTES,
	       "Bytes of unexpected messages one port may buffer (0-1073741824, default 4194304)");

NICOFF_TUNABLE(card_unexpected_bytes, 16 << 20, 0, NICOFF_MAX_UNEXPECTED_BYTES,
	       FW_CFG_CARD_UNEXPECTED_BYTES,
	       "Bytes of unexpected messages one card may buffer, all its ports together (0-1073741824, default 16777216)");

/*
 * A card checks a new group's member table and builds its schedules in one
 * go, holding its card thread for time that grows with the size: this
 * bounds it.  4096 is four times the largest job the module runs (1024
 * cards, one port each).
 */
NICOFF_TUNABLE(max_group_size, 4096, 1, NICOFF_MAX_GROUP_SIZE, FW_CFG_MAX_GROUP_SIZE,
	       "Largest group GROUP_CREATE accepts, and never more than nics x ports; larger ones fail with E2BIG (1-1048576, default 4096)");

/*
 * A group's state grows with its size, and a process may create 64 per
 * port: the members of a card's groups together are bounded as well (see
 * Documentation/limits.md).  16384 leaves room for four groups of the
 * largest default size, or 16 of the 1,024-card job's, on one card.
 */
NICOFF_TUNABLE(card_group_members, 16384, 1, NICOFF_MAX_CARD_GROUP_MEMBERS,
	       FW_CFG_CARD_GROUP_MEMBERS,
	       "Members of all the groups of one card together, destroyed ones until forgotten; past it GROUP_CREATE fails with ENOSPC (1-16777216, default 16384)");

/*
 * A group's creation, with auto's trial of every algorithm, must end within
 * this; a large group on a slow (emulated) machine may need more.
 */
NICOFF_TUNABLE(group_create_ms, 30000, 1, FW_GROUP_CREATE_MS_MAX, FW_CFG_GROUP_CREATE_MS,
	       "Time GROUP_CREATE may take, auto's trials included, before it fails with ETIMEDOUT (1-3600000 ms, default 30000)");

/*
 * Broadcast (seed 002): the channels of a group created with
 * bcast_channels 0, and whether the cards use the switch's multicast.
 * Setting bcast_hw sets it on every card, over what netlink set for one.
 */
NICOFF_TUNABLE(bcast_channels, 16, NICOFF_BCAST_MIN_CHANNELS, NICOFF_BCAST_MAX_CHANNELS,
	       FW_CFG_BCAST_CHANNELS,
	       "Broadcast channels of groups created with bcast_channels 0 (2-64, default 16)");

NICOFF_TUNABLE(bcast_hw, 1, 0, 1, FW_CFG_BCAST_HW,
	       "Broadcast by the switch's multicast (1, the default) or by the point-to-point tree (0); broadcasts in flight fail over");

NICOFF_TUNABLE(link_latency_ns, 0, 0, 100000000, NICOFF_MODULE_ONLY,
	       "Extra one-way latency of every link (0-100000000 ns, default 0)");

NICOFF_TUNABLE(link_mbps, 0, 0, 1000000, NICOFF_MODULE_ONLY,
	       "Link bandwidth in Mbit/s (0 = unlimited, the default)");

/*
 * What a switch output buffers for its card: a multicast sender waits
 * while a destination holds this much or more, so that a reply queued
 * behind broadcast data waits for that much, not for a whole broadcast.
 */
NICOFF_TUNABLE(switch_buffer_bytes, 256 << 10, 4096, 1 << 30, NICOFF_MODULE_ONLY,
	       "Bytes a switch output holds for its card before multicast senders wait (4096-1073741824, default 262144)");

/* The fault injector's rates: a share of the packets, in parts per million. */
#define NICOFF_FAULT_PPM(name, what)						\
	NICOFF_TUNABLE(name, 0, 0, 1000000, NICOFF_FAULT_SETTING, what ", per million (default 0)")

NICOFF_FAULT_PPM(fault_drop_ppm, "Packets dropped");
NICOFF_FAULT_PPM(fault_dup_ppm, "Packets duplicated");
NICOFF_FAULT_PPM(fault_corrupt_ppm, "Packets with one bit flipped");
NICOFF_FAULT_PPM(fault_reorder_ppm, "Packets held back behind later ones");
NICOFF_FAULT_PPM(fault_delay_ppm, "Packets delayed by fault_delay_usecs");

NICOFF_TUNABLE(fault_delay_usecs, 100, 0, NICOFF_MAX_FAULT_DELAY_USECS, NICOFF_FAULT_SETTING,
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
	return 0;
}
