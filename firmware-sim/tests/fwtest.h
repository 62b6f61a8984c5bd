/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the firmware's unit tests: commands, data patterns and a
 * simulator that checks, when a test ends, that nothing leaked and no
 * completion went to a closed port.
 */
#ifndef NICOFF_FWTEST_H
#define NICOFF_FWTEST_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "sim.h"
#include "card.h"

#define T_MS	1000000ull
#define T_SEC	1000000000ull

/*
 * cmocka's struct of a test case: build.mk passes its (CamelCase) name in
 * FWT_UNIT_TEST, which keeps checkpatch's naming rule quiet here.
 */
#ifndef FWT_UNIT_TEST
#error "build with -DFWT_UNIT_TEST=<cmocka's test case struct>"
#endif

#define T_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct nicoff_cmd t_send(u64 tag, u32 dst, u32 dport, u32 mr, u64 off, u64 len, u64 msg_tag);
struct nicoff_cmd t_recv(u64 tag, u32 mr, u64 off, u64 len, u32 src, u32 sport, u64 match,
			 u64 mask);
struct nicoff_cmd t_rdma(u8 opcode, u64 tag, u32 dst, u32 dport, u32 rkey, u64 roff, u32 mr,
			 u64 off, u64 len);
struct nicoff_cmd t_atomic(u8 opcode, u64 tag, u32 dst, u32 dport, u32 rkey, u64 roff,
			   u32 width, u64 operand, u64 compare);
/* GROUP_CREATE takes every argument; BARRIER and GROUP_DESTROY only @gid. */
struct nicoff_cmd t_group(u8 opcode, u64 tag, u32 gid, u32 rank, u32 size, u32 mr, u32 alg,
			  u32 param);
struct nicoff_cmd t_bcast(u64 tag, u32 gid, u32 root, u32 mr, u64 off, u64 len);
struct nicoff_cmd t_ping(u64 tag, u32 dst, u32 dport);
/* sim_post() of a command built in the call: t_post(s, 0, 0, t_send(...)). */
void t_post(struct sim *s, u32 node, u32 port, struct nicoff_cmd c);

/* A pattern that differs per seed and per byte. */
void t_fill(void *buf, size_t len, u32 seed);
bool t_check(const void *buf, size_t len, u32 seed);

/* sim_cfg_default()'s fabric of @nodes cards; @mtu, @window (0: default) and @faults if any. */
struct sim *t_sim(u32 nodes, u32 mtu, u32 window, const struct fw_fault_cfg *faults);
/* Two cards with a small MTU (1000) and window (32), so that transfers take many packets. */
struct sim *t_sim_pair(const struct fw_fault_cfg *faults);

/* Attach @port on @node and register @buf on it; returns the handle. */
u32 t_port_mr(struct sim *s, u32 node, u32 port, void *buf, u64 len, u32 access, u32 *rkey);

/* Wait for one completion or fail the test. */
struct nicoff_cqe t_cqe(struct sim *s, u32 node, u32 port, u64 limit);

/* Wait up to a second for one completion; demand its tag and status. */
void t_expect(struct sim *s, u32 node, u32 port, u64 tag, s32 status);

/* run(seed) for each seed from @first to @last. */
void t_seeds(void (*run)(u64 seed), u64 first, u64 last);

/* Sum of every card's counters. */
void t_stats_sum(struct sim *s, struct fw_stats *sum);

/* A fabric that drops 10%, duplicates and reorders 5%, corrupts 1% of the packets. */
extern const struct fw_fault_cfg t_lossy;
/*
 * After a run on t_lossy: packets were resent and corrupted ones caught,
 * no connection failed, and the targets refused exactly @remote_errors.
 */
void t_expect_lossy(struct sim *s, u64 remote_errors);

/*
 * A crafted packet of header type @type from card 0 port 1 to card 1
 * port 2 with @len bytes of payload, zeroed but for type, flags and len;
 * t_pkt_send() seals it with its CRC, sends it and lets the fabric go quiet.
 */
struct fw_pkt *t_pkt(struct sim *s, u8 type, u8 flags, u32 len);
void t_pkt_send(struct sim *s, struct fw_pkt *pkt);

/* Let the fabric go quiet, then destroy it and demand no leak. */
void t_finish(struct sim *s);

#endif
