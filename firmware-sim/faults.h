/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault injection for the fabrics of both hosts: given a packet about to
 * be delivered, decide which faults it suffers.  Decisions come from a
 * deterministic generator, so the same seed and node give the same verdicts
 * in the same order on any host.
 */
#ifndef NICOFF_FW_FAULTS_H
#define NICOFF_FW_FAULTS_H

#include "fw_util.h"

/* Probabilities in parts per million of packets. */
struct fw_fault_cfg {
	u32 drop_ppm;
	u32 dup_ppm;
	u32 corrupt_ppm;
	u32 reorder_ppm;
	u32 delay_ppm;
	u32 delay_ns;		/* delay: up to this much extra; reorder: held back this long */
};

#define FW_FAULT_PPM		1000000u

#define FW_FAULT_DROP		FW_BIT(0)	/* not delivered; excludes the others */
#define FW_FAULT_DUP		FW_BIT(1)	/* delivered twice, the copy intact */
#define FW_FAULT_CORRUPT	FW_BIT(2)	/* bit corrupt_bit flipped */
#define FW_FAULT_REORDER	FW_BIT(3)	/* held back so later packets overtake it */
#define FW_FAULT_DELAY		FW_BIT(4)	/* delivered delay_ns late */

struct fw_fault_verdict {
	u32 faults;		/* FW_FAULT_* */
	u32 corrupt_bit;	/* bit to flip, counted from the packet's first byte */
	u64 delay_ns;		/* extra latency of DELAY and REORDER together */
};

/* Faults decided so far. */
struct fw_fault_counts {
	u64 packets;
	u64 drops;
	u64 dups;
	u64 corrupts;
	u64 reorders;
	u64 delays;
};

struct fw_fault_state {
	u64 s[4];		/* xoshiro256** state */
	struct fw_fault_counts counts;
};

void fw_fault_init(struct fw_fault_state *st, u64 seed, u32 node);
u64 fw_fault_rand(struct fw_fault_state *st);
struct fw_fault_verdict fw_fault_verdict(struct fw_fault_state *st,
					 const struct fw_fault_cfg *cfg, u32 pkt_len);
/* Flip bit @bit of @buf (bit 0 is the low bit of byte 0). */
void fw_fault_flip(void *buf, u32 bit);

#endif
