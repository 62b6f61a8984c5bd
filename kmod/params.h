/* SPDX-License-Identifier: GPL-2.0 */
/* Module tunables: validated at load, some changeable at run time. */
#ifndef NICOFF_PARAMS_H
#define NICOFF_PARAMS_H

#include <linux/types.h>

#define NICOFF_MAX_CARDS	1024
#define NICOFF_MAX_PORTS	4096
#define NICOFF_MAX_RING		65536
#define NICOFF_MAX_MRS		65536
#define NICOFF_MAX_BUDGET	4096
#define NICOFF_MAX_POLL_USECS	10000000
/* The firmware holds a fault delay in u32 nanoseconds. */
#define NICOFF_MAX_FAULT_DELAY_USECS	4000000
#define NICOFF_MAX_ATOMIC_TABLE	1048576
#define NICOFF_MAX_UNEXPECTED_BYTES	1073741824
/* The firmware's FW_GROUP_SIZE_LIMIT: the simulator's million nodes. */
#define NICOFF_MAX_GROUP_SIZE	1048576
#define NICOFF_MAX_CARD_GROUP_MEMBERS	16777216

extern unsigned int nicoff_nics;
extern unsigned int nicoff_ports;
extern unsigned int nicoff_max_ring_entries;
extern unsigned int nicoff_max_mrs;
extern unsigned int nicoff_threads;
extern unsigned int nicoff_poll_usecs;
extern unsigned int nicoff_budget;

extern unsigned int nicoff_mtu;
extern unsigned int nicoff_link_latency_ns;
extern unsigned int nicoff_link_mbps;
extern unsigned int nicoff_switch_buffer_bytes;
extern unsigned int nicoff_rto_usecs;
extern unsigned int nicoff_max_retries;
extern unsigned int nicoff_atomic_table;
extern unsigned int nicoff_barrier_alg;
/* Unexpected messages a port, and a card (all its ports), may buffer. */
extern unsigned int nicoff_unexpected_bytes;
extern unsigned int nicoff_card_unexpected_bytes;
extern unsigned int nicoff_max_group_size;
extern unsigned int nicoff_card_group_members;
extern unsigned int nicoff_group_create_ms;
/* Broadcast: channels of groups that ask for none, and the fabric's multicast on. */
extern unsigned int nicoff_bcast_channels;
extern unsigned int nicoff_bcast_hw;

/* Fault injection, global: parts per million of packets. */
extern unsigned int nicoff_fault_drop_ppm;
extern unsigned int nicoff_fault_dup_ppm;
extern unsigned int nicoff_fault_corrupt_ppm;
extern unsigned int nicoff_fault_reorder_ppm;
extern unsigned int nicoff_fault_delay_ppm;
extern unsigned int nicoff_fault_delay_usecs;
extern unsigned long long nicoff_fault_seed;

int nicoff_params_check(void);

#endif
