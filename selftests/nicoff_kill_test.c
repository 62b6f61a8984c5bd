// SPDX-License-Identifier: GPL-2.0
/*
 * A process dying with work in flight (Documentation/abi.md, "Devices,
 * files and ports"): a child keeps a big ring full of NOPs and COPYs and is
 * SIGKILLed in the middle; its port, rings and pinned pages must all go
 * away (pinned_pages back to the baseline), and the card must go on serving
 * others.  The VM harness checks that rmmod succeeds at the end.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define TOTAL_OPS 10000u
/* 4096 entries, or the largest ring the module allows if that is less. */
static uint32_t ring = 4096;
#define RING ring
#define BUF_LEN (1ul << 20)
#define COPY_LEN (64ul << 10)

/* Progress the child publishes for the parent. */
struct progress {
	volatile uint32_t posted;
	volatile uint32_t completed;
	volatile uint32_t refills;
	volatile int ready;
	volatile int failed;
};

/*
 * The child: 10,000 operations through a 4096-entry ring, a COPY of 64 KiB
 * for every other one, refilling as the card consumes.  It never exits on
 * its own before the parent kills it (it waits for the last completions,
 * then sleeps).
 */
static void child_run(struct progress *pr, int card, bool drain)
{
	unsigned char *src, *dst;
	struct nt_port p;
	uint32_t hs, hd, i;
	uint64_t deadline = nt_now_ns() + 60000000000ull;

	if (nt_port_open(&p, card, NICOFF_PORT_ANY, RING, RING)) {
		pr->failed = 1;
		_exit(1);
	}
	src = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED || dst == MAP_FAILED) {
		pr->failed = 2;
		_exit(1);
	}
	memset(src, 0x11, BUF_LEN);
	if (nt_reg_mr(p.fd, src, BUF_LEN, 0, &hs) ||
	    nt_reg_mr(p.fd, dst, BUF_LEN, NICOFF_ACCESS_LOCAL_WRITE, &hd)) {
		pr->failed = 3;
		_exit(1);
	}
	pr->ready = 1;
	while (nt_now_ns() < deadline) {
		uint32_t space = nt_cmd_space(&p), n = 0;

		while (pr->posted < TOTAL_OPS && n < space) {
			struct nicoff_cmd c;
			uint32_t k = pr->posted;

			if (k & 1)
				nicoff_prep_copy(&c, hs, (k * 4096ul) % (BUF_LEN - COPY_LEN), hd,
						 (k * 8192ul) % (BUF_LEN - COPY_LEN), COPY_LEN, k);
			else
				nicoff_prep_nop(&c, k);
			nt_cmd_write(&p, &c);
			pr->posted = k + 1;
			n++;
		}
		if (n) {
			nt_publish(&p);
			nt_doorbell(&p);
			pr->refills++;
		}
		if (drain) {
			int got = nt_reap(&p, NULL, RING);

			if (got > 0)
				pr->completed += got;
		} else {
			/* Leave completions unread: the ring fills and stalls. */
			pr->completed = nt_cq_ready(&p);
		}
		for (i = 0; i < 100; i++)
			__asm__ __volatile__("" ::: "memory");
	}
	pr->failed = 4;
	_exit(1);
}

/* Fork a child, wait until it has posted kill_at operations, SIGKILL it. */
static int kill_in_flight(struct __test_metadata *_metadata, uint32_t kill_at, bool drain,
			  long long pinned0)
{
	struct progress *pr = mmap(NULL, sizeof(*pr), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t deadline;
	uint32_t posted, completed, refills;
	int status;
	pid_t pid;

	if (pr == MAP_FAILED)
		return -1;
	memset(pr, 0, sizeof(*pr));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		child_run(pr, 0, drain);
	deadline = nt_now_ns() + 30000000000ull;
	/* Spin, so the kill lands as soon as possible after kill_at. */
	while (!pr->failed && pr->posted < kill_at && nt_now_ns() < deadline)
		__asm__ __volatile__("" ::: "memory");
	kill(pid, SIGKILL);
	posted = pr->posted;
	completed = pr->completed;
	refills = pr->refills;
	waitpid(pid, &status, 0);
	EXPECT_EQ(0, pr->failed);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	EXPECT_LE(kill_at, posted);
	TH_LOG("killed after %u posted (%u refills), %u completed: %u in flight", posted,
	       refills, completed, posted - completed);
	/* Release may lag the reap a little. */
	EXPECT_EQ(pinned0, nt_wait_pinned(pinned0, 5000));
	munmap(pr, sizeof(*pr));
	return 0;
}

FIXTURE(kill) {
	long long pinned0;
	int kmsg;
};

FIXTURE_SETUP(kill)
{
	struct nicoff_query q;

	ASSERT_EQ(0, nt_query_card(0, &q));
	if (q.max_ring_entries < ring)
		ring = q.max_ring_entries;
	self->pinned0 = nt_pinned_pages();
	ASSERT_LE(0, self->pinned0);
	NT_KMSG_WATCH(self->kmsg);
}

FIXTURE_TEARDOWN(kill)
{
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	struct nt_port p;

	/* The card still serves a new port, on the port number just freed. */
	EXPECT_EQ(0, nt_port_open(&p, 0, NICOFF_PORT_ANY, 8, 8));
	nicoff_prep_nop(&c, 42);
	EXPECT_EQ(0, nt_run_one(&p, &c, &cqe, 10000));
	EXPECT_EQ(42, cqe.tag);
	EXPECT_EQ(0, cqe.status);
	nt_port_close(&p);
	NT_KMSG_CHECK(self->kmsg);
}

/* Killed after several refills of the ring, while it drains. */
TEST_F_TIMEOUT(kill, while_draining, 120)
{
	ASSERT_EQ(0, kill_in_flight(_metadata, 2 * RING + 1000, true, self->pinned0));
}

/* Killed late, near the end of the 10,000. */
TEST_F_TIMEOUT(kill, near_the_end, 120)
{
	ASSERT_EQ(0, kill_in_flight(_metadata, TOTAL_OPS - 500, true, self->pinned0));
}

/* Killed with a full command ring stalled behind a full completion ring. */
TEST_F_TIMEOUT(kill, stalled_full_rings, 120)
{
	ASSERT_EQ(0, kill_in_flight(_metadata, 2 * RING, false, self->pinned0));
}

/* Killed at once, the first ring of commands just posted. */
TEST_F_TIMEOUT(kill, right_after_posting, 120)
{
	ASSERT_EQ(0, kill_in_flight(_metadata, 1, true, self->pinned0));
}

/* Several processes killed together, on several cards. */
TEST_F_TIMEOUT(kill, many_at_once, 120)
{
	struct nicoff_query q;
	struct progress *pr;
	pid_t pids[4];
	int fd, i, n = 4, status;
	uint64_t deadline;

	fd = nt_open_card(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, nt_query(fd, &q));
	close(fd);
	pr = mmap(NULL, n * sizeof(*pr), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		  -1, 0);
	ASSERT_NE(MAP_FAILED, pr);
	memset(pr, 0, n * sizeof(*pr));
	fflush(NULL);
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			child_run(&pr[i], i % q.num_cards, i & 1);
	}
	deadline = nt_now_ns() + 30000000000ull;
	for (i = 0; i < n; i++)
		while (!pr[i].failed && pr[i].posted < RING + 100 && nt_now_ns() < deadline)
			nt_sleep_ms(1);
	for (i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (i = 0; i < n; i++) {
		waitpid(pids[i], &status, 0);
		EXPECT_EQ(0, pr[i].failed);
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 5000));
	munmap(pr, n * sizeof(*pr));
}

TEST_HARNESS_MAIN
