// SPDX-License-Identifier: GPL-2.0
/*
 * COPY in slices (Documentation/abi.md, NICOFF_OP_COPY; issue 19, item 2):
 * the card copies a long COPY a slice per pass and lets the card lock go
 * in between, so it stalls no one.
 *
 * neighbours_progress	a 64 MiB COPY while a port on the same card and
 *			one on another card of the same card thread do NOP
 *			round trips: many of them complete before the COPY
 *			does (with the COPY done in one go, one or two did),
 *			and the COPY is byte-exact.
 * in_order		a port's commands behind a COPY complete after it.
 * dereg_mid_copy	deregistering the source or the destination while
 *			the COPY runs stops it: ENOENT, the bytes copied so
 *			far in result (and in the destination), no page left
 *			pinned.
 * close_mid_copy	closing the port while its COPY runs: the neighbour
 *			goes on, no page left pinned, nothing in the log.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define LEN		(64ul << 20)
#define TMO		60000		/* ms: a 64 MiB COPY under TCG with slab debugging */
/*
 * A 64 MiB COPY takes at least 64 passes (a pass copies at most its
 * allowance, 1 MiB); a neighbour keeping one NOP in flight gets one
 * served per pass while it keeps up, which it does not always do: the
 * whole COPY takes 85 ms when the guest's copies run at memory speed, and
 * a vCPU of a busy host is descheduled for milliseconds.  A card that
 * copied the whole at once (as before COPY was cut into slices) completes
 * none meanwhile.
 */
#define MIN_NOPS	4
#define ATTEMPTS	5

FIXTURE(copy) {
	struct nt_port a;	/* the port that copies */
	struct nt_port b;	/* a neighbour on the same card */
	struct nt_port c;	/* a port on another card of the same thread */
	bool have_c;
	unsigned char *src, *dst;
	uint32_t hs, hd;
	long long pinned0;
	int kmsg;
};

static unsigned long param_or(const char *name, unsigned long dflt)
{
	unsigned long v;

	return nt_param_get(name, &v) ? dflt : v;
}

/*
 * A card served by card 0's thread: card i is served by thread i mod the
 * number of threads (the threads tunable, 0 for half the CPUs).
 */
static int same_thread_card(uint32_t ncards)
{
	unsigned long t = param_or("threads", 0);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (!t)
		t = cpus > 1 ? cpus / 2 : 1;
	return t < ncards ? (int)t : -1;
}

FIXTURE_SETUP(copy)
{
	struct rlimit unlimited = { RLIM_INFINITY, RLIM_INFINITY };
	struct nicoff_query q;
	int other;

	self->a.fd = -1;
	self->b.fd = -1;
	self->c.fd = -1;
	self->pinned0 = nt_pinned_pages();
	ASSERT_LE(0, self->pinned0);
	NT_KMSG_WATCH(self->kmsg);
	/* Two 64 MiB regions: more than an unprivileged user may lock. */
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &unlimited));
	ASSERT_EQ(0, nt_query_card(0, &q));
	ASSERT_EQ(0, nt_port_open(&self->a, 0, NICOFF_PORT_ANY, 64, 64));
	ASSERT_EQ(0, nt_port_open(&self->b, 0, NICOFF_PORT_ANY, 64, 64));
	other = same_thread_card(q.num_cards);
	if (other > 0) {
		ASSERT_EQ(0, nt_port_open(&self->c, other, NICOFF_PORT_ANY, 64, 64));
		self->have_c = true;
	}
	self->src = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	self->dst = mmap(NULL, LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->src);
	ASSERT_NE(MAP_FAILED, self->dst);
	nt_fill_pattern(self->src, LEN, 0x19c0);
}

FIXTURE_TEARDOWN(copy)
{
	nt_port_close(&self->a);
	nt_port_close(&self->b);
	nt_port_close(&self->c);
	munmap(self->src, LEN);
	munmap(self->dst, LEN);
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 5000));
	NT_KMSG_CHECK(self->kmsg);
}

static int reg_both(FIXTURE_DATA(copy) *self)
{
	int ret;

	memset(self->dst, 0, LEN);
	ret = nt_reg_mr(self->a.fd, self->src, LEN, 0, &self->hs);
	if (!ret)
		ret = nt_reg_mr(self->a.fd, self->dst, LEN, NICOFF_ACCESS_LOCAL_WRITE, &self->hd);
	return ret;
}

/* Post a COPY of everything and wait until the card has taken it. */
static int start_copy(FIXTURE_DATA(copy) *self, uint64_t tag)
{
	uint64_t end = nt_now_ns() + TMO * 1000000ull;
	struct nicoff_cmd c;
	int ret;

	nicoff_prep_copy(&c, self->hs, 0, self->hd, 0, LEN, tag);
	ret = nt_submit(&self->a, &c, 1);
	while (!ret && nt_cmd_pending(&self->a))
		if (nt_now_ns() > end)
			ret = -ETIMEDOUT;
	return ret;
}

/* Bytes of the destination that differ from the source in [0, len). */
static size_t first_diff(FIXTURE_DATA(copy) *self, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (self->dst[i] != self->src[i])
			break;
	return i;
}

TEST_F_TIMEOUT(copy, neighbours_progress, 180)
{
	bool fb = false, fc = false;
	uint64_t nb = 0, nc = 0, t0, end;
	struct nicoff_cqe cqe;
	int got = 0;

	ASSERT_EQ(0, reg_both(self));
	t0 = nt_now_ns();
	end = t0 + TMO * 1000000ull;
	ASSERT_EQ(0, start_copy(self, 1));
	while (!got && nt_now_ns() < end) {
		ASSERT_EQ(0, nt_nop_step(&self->b, &fb, &nb));
		if (self->have_c)
			ASSERT_EQ(0, nt_nop_step(&self->c, &fc, &nc));
		got = nt_reap(&self->a, &cqe, 1);
		ASSERT_LE(0, got);
	}
	ASSERT_EQ(1, got);
	TH_LOG("64 MiB COPY in %.1f ms; NOPs completed meanwhile: %llu on card 0, %llu on card %d",
	       (nt_now_ns() - t0) / 1e6, (unsigned long long)nb, (unsigned long long)nc,
	       self->have_c ? self->c.card : -1);
	EXPECT_EQ(1, cqe.tag);
	EXPECT_EQ(NICOFF_OP_COPY, cqe.opcode);
	EXPECT_EQ(0, cqe.status);
	EXPECT_EQ(LEN, cqe.result);
	EXPECT_EQ(LEN, first_diff(self, LEN));
	EXPECT_LE(MIN_NOPS, nb);
	if (self->have_c)
		EXPECT_LE(MIN_NOPS, nc);
}

TEST_F_TIMEOUT(copy, in_order, 180)
{
	struct nicoff_cmd c[4];
	struct nicoff_cqe cqe[4];
	int i;

	ASSERT_EQ(0, reg_both(self));
	nicoff_prep_copy(&c[0], self->hs, 0, self->hd, 0, LEN, 1);
	nicoff_prep_nop(&c[1], 2);
	nicoff_prep_copy(&c[2], self->hs, 0, self->hd, 0, 4096, 3);
	nicoff_prep_nop(&c[3], 4);
	ASSERT_EQ(0, nt_submit(&self->a, c, 4));
	ASSERT_EQ(4, nt_wait_cqes(&self->a, cqe, 4, TMO));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(i + 1, cqe[i].tag);
		EXPECT_EQ(c[i].opcode, cqe[i].opcode);
		EXPECT_EQ(0, cqe[i].status);
	}
	EXPECT_EQ(LEN, cqe[0].result);
	EXPECT_EQ(4096, cqe[2].result);
	EXPECT_EQ(LEN, first_diff(self, LEN));
}

/*
 * Deregistering a region stops the COPY that uses it at the slice it
 * reached.  The process may lose the race (the COPY done first): a few
 * attempts, half on the source, half on the destination, must see it.
 */
TEST_F_TIMEOUT(copy, dereg_mid_copy, 300)
{
	struct nicoff_cqe cqe;
	int i, stopped = 0;

	for (i = 0; i < ATTEMPTS * 2; i++) {
		bool gone_src = i & 1;

		ASSERT_EQ(0, reg_both(self));
		ASSERT_EQ(0, start_copy(self, i + 1));
		ASSERT_EQ(0, nt_dereg_mr(self->a.fd, gone_src ? self->hs : self->hd));
		ASSERT_EQ(1, nt_wait_cqes(&self->a, &cqe, 1, TMO));
		EXPECT_EQ(i + 1, cqe.tag);
		EXPECT_EQ(NICOFF_OP_COPY, cqe.opcode);
		if (cqe.status) {
			EXPECT_EQ(-ENOENT, cqe.status);
			EXPECT_GT(LEN, cqe.result);
			/* What it says it copied is there. */
			EXPECT_EQ(cqe.result, first_diff(self, cqe.result));
			stopped++;
		} else {
			EXPECT_EQ(LEN, cqe.result);
			EXPECT_EQ(LEN, first_diff(self, LEN));
		}
		ASSERT_EQ(0, nt_dereg_mr(self->a.fd, gone_src ? self->hd : self->hs));
	}
	TH_LOG("%d of %d COPYs stopped by the deregistration", stopped, ATTEMPTS * 2);
	EXPECT_LT(0, stopped);
	/* The port goes on. */
	ASSERT_EQ(0, nt_submit_nops(&self->a, 1, 99));
	ASSERT_EQ(1, nt_wait_cqes(&self->a, &cqe, 1, TMO));
	EXPECT_EQ(99, cqe.tag);
	EXPECT_EQ(0, cqe.status);
}

TEST_F_TIMEOUT(copy, close_mid_copy, 180)
{
	struct nicoff_cqe cqe;
	uint64_t t0;
	int i;

	for (i = 0; i < ATTEMPTS; i++) {
		if (i)
			ASSERT_EQ(0, nt_port_open(&self->a, 0, NICOFF_PORT_ANY, 64, 64));
		ASSERT_EQ(0, reg_both(self));
		ASSERT_EQ(0, start_copy(self, 1));
		t0 = nt_now_ns();
		nt_port_close(&self->a);
		TH_LOG("close() during the COPY: %.2f ms", (nt_now_ns() - t0) / 1e6);
		/* Its regions went with it. */
		EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 5000));
		ASSERT_EQ(0, nt_submit_nops(&self->b, 1, i + 1));
		ASSERT_EQ(1, nt_wait_cqes(&self->b, &cqe, 1, TMO));
		EXPECT_EQ(i + 1, cqe.tag);
		EXPECT_EQ(0, cqe.status);
	}
}

TEST_HARNESS_MAIN
