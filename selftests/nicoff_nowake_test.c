// SPDX-License-Identifier: GPL-2.0
/*
 * "While the thread is awake posting costs no system call"
 * (Documentation/abi.md, "Doorbell"): with poll_usecs high, one kick wakes
 * the card thread and 1,000,000 NOPs then flow with the doorbell protocol
 * and not a single further wake-up ioctl; the kernel's kick counter agrees
 * and every completion is seen exactly once.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define TOTAL 1000000u
static uint32_t RING = 1024;
#define BATCH 256u
#define POLL_USECS 5000000ul	/* 5 s: far more than any gap between batches */

static int query_card0(struct nicoff_query *q)
{
	int fd = nt_open_card(0), ret;

	if (fd < 0)
		return fd;
	ret = nt_query(fd, q);
	close(fd);
	return ret;
}

FIXTURE(nowake) {
	unsigned long saved;
	bool restore;
	struct nt_port p;
};

FIXTURE_SETUP(nowake)
{
	struct nicoff_query q;

	ASSERT_EQ(0, nt_param_get("poll_usecs", &self->saved));
	ASSERT_EQ(0, nt_param_set("poll_usecs", POLL_USECS));
	self->restore = true;
	ASSERT_EQ(0, query_card0(&q));
	if (q.max_ring_entries < RING)
		RING = q.max_ring_entries;
	ASSERT_EQ(0, nt_port_open(&self->p, 0, NICOFF_PORT_ANY, RING, RING));
}

FIXTURE_TEARDOWN(nowake)
{
	nt_port_close(&self->p);
	if (self->restore)
		EXPECT_EQ(0, nt_param_set("poll_usecs", self->saved));
}

TEST_F_TIMEOUT(nowake, million_nops_no_kick, 240)
{
	unsigned char *seen = calloc(TOTAL / 8, 1);
	struct nicoff_port_stats st;
	struct nicoff_cqe cqe[BATCH];
	uint32_t posted = 0, done = 0, dups = 0, bad = 0, i;
	uint64_t t0, t1, deadline, spins = 0;

	ASSERT_NE(NULL, seen);
	/* The one kick: wake the thread and wait until it says it is awake. */
	ASSERT_EQ(0, nt_kick(self->p.fd));
	deadline = nt_now_ns() + 5000000000ull;
	while ((nt_cmd_flags(&self->p) & NICOFF_RING_NEED_WAKEUP) && nt_now_ns() < deadline)
		;
	ASSERT_FALSE(nt_cmd_flags(&self->p) & NICOFF_RING_NEED_WAKEUP);

	t0 = nt_now_ns();
	deadline = t0 + 200000000000ull;
	while (done < TOTAL) {
		uint32_t space = nt_cmd_space(&self->p), n;
		int got;

		n = space < BATCH ? space : BATCH;
		if (n > TOTAL - posted)
			n = TOTAL - posted;
		if (n) {
			for (i = 0; i < n; i++) {
				struct nicoff_cmd *c = &self->p.cmds[(self->p.cmd_prod + i) &
								     (RING - 1)];

				nicoff_prep_nop(c, posted + i);
			}
			self->p.cmd_prod += n;
			posted += n;
			nt_publish(&self->p);
			/* Steps 2 and 3: kicks only if the thread asked for it. */
			ASSERT_LE(0, nt_doorbell(&self->p));
		}
		got = nt_reap(&self->p, cqe, BATCH);
		ASSERT_LE(0, got);
		for (i = 0; i < (uint32_t)got; i++) {
			uint64_t t = cqe[i].tag;

			if (t >= TOTAL || cqe[i].status || cqe[i].opcode != NICOFF_OP_NOP) {
				bad++;
				continue;
			}
			if (seen[t / 8] & (1u << (t % 8)))
				dups++;
			seen[t / 8] |= 1u << (t % 8);
		}
		done += got;
		if (!n && !got && !(++spins & 0xffff)) {
			ASSERT_GT(deadline, nt_now_ns()) TH_LOG("stuck: %u posted, %u done",
							       posted, done);
			ASSERT_FALSE(nt_cq_flags(&self->p) & NICOFF_RING_ERROR);
		}
	}
	t1 = nt_now_ns();
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, dups);
	for (i = 0; i < TOTAL / 8; i++)
		if (seen[i] != 0xff)
			break;
	EXPECT_EQ(TOTAL / 8, i) TH_LOG("tag %u never completed", i * 8);
	EXPECT_EQ(0, nt_cq_ready(&self->p));
	/* Not one kick after the first, by our count and by the kernel's. */
	EXPECT_EQ(0, self->p.kicks);
	ASSERT_EQ(0, nt_stats(self->p.fd, &st));
	EXPECT_EQ(1, st.kicks);
	EXPECT_EQ(TOTAL, st.cmds);
	EXPECT_EQ(TOTAL, st.cqes);
	EXPECT_EQ(0, st.bad_cmds);
	TH_LOG("%u NOPs in %.2f s (%.0f/s), %llu stalled passes", TOTAL, (t1 - t0) / 1e9,
	       TOTAL / ((t1 - t0) / 1e9), (unsigned long long)st.cq_full);
	free(seen);
}

TEST_HARNESS_MAIN
