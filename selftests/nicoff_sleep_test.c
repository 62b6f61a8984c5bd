// SPDX-License-Identifier: GPL-2.0
/*
 * The card thread going to sleep and being woken (Documentation/abi.md,
 * "Doorbell"): with a small poll_usecs, an idle thread sets NEED_WAKEUP;
 * a post with the doorbell protocol kicks it (and the kick is counted);
 * poll() sleeps until a completion arrives.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define TMO 10000

FIXTURE(sleep) {
	unsigned long saved;
	bool restore;
	struct nt_port p;
};

FIXTURE_SETUP(sleep)
{
	ASSERT_EQ(0, nt_param_get("poll_usecs", &self->saved));
	ASSERT_EQ(0, nt_param_set("poll_usecs", 10));
	self->restore = true;
	ASSERT_EQ(0, nt_port_open(&self->p, 0, NICOFF_PORT_ANY, 8, 8));
}

FIXTURE_TEARDOWN(sleep)
{
	nt_port_close(&self->p);
	if (self->restore)
		EXPECT_EQ(0, nt_param_set("poll_usecs", self->saved));
}

/*
 * A firmware timer left by an earlier test (a delayed acknowledgement, a
 * dead peer's watchdog) may wake the thread between our look at the flag
 * and the post: the thread is then awake and the post rightly makes no
 * call.  So the test counts the kicks the doorbell made and checks that
 * the card counted the same, rather than predicting each one.
 */
TEST_F(sleep, idle_sets_need_wakeup)
{
	struct nicoff_port_stats st;
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	uint64_t kicked = 0, before;
	int i;

	/* Make sure the thread is up, then let it idle. */
	ASSERT_EQ(0, nt_kick(self->p.fd));
	for (i = 0; i < 50 && kicked < 3; i++) {
		/* The doorbell sees the flag and kicks; the NOP completes. */
		ASSERT_TRUE(nt_wait_flag(&self->p, false, NICOFF_RING_NEED_WAKEUP, 5000));
		before = self->p.kicks;
		nicoff_prep_nop(&c, 100 + i);
		ASSERT_EQ(0, nt_submit(&self->p, &c, 1));
		kicked += self->p.kicks - before;
		ASSERT_EQ(1, nt_wait_cqes(&self->p, &cqe, 1, TMO));
		EXPECT_EQ(100 + i, cqe.tag);
		EXPECT_EQ(0, cqe.status);
	}
	EXPECT_EQ(3, kicked) TH_LOG("%d posts after NEED_WAKEUP, %llu kicked", i,
				    (unsigned long long)kicked);
	ASSERT_EQ(0, nt_stats(self->p.fd, &st));
	EXPECT_EQ(1 + kicked, st.kicks);
	EXPECT_EQ(i, st.cmds);
	/* And it goes back to sleep. */
	EXPECT_TRUE(nt_wait_flag(&self->p, false, NICOFF_RING_NEED_WAKEUP, 5000));
}

/* A port opened while the thread sleeps must ask for a kick at once. */
TEST_F(sleep, new_port_while_asleep)
{
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	struct nt_port q;

	ASSERT_EQ(0, nt_kick(self->p.fd));
	ASSERT_TRUE(nt_wait_flag(&self->p, false, NICOFF_RING_NEED_WAKEUP, 5000));
	nt_sleep_ms(50);
	ASSERT_EQ(0, nt_port_open(&q, 0, NICOFF_PORT_ANY, 8, 8));
	EXPECT_TRUE(nt_cmd_flags(&q) & NICOFF_RING_NEED_WAKEUP);
	nicoff_prep_nop(&c, 9);
	EXPECT_EQ(0, nt_run_one(&q, &c, &cqe, TMO));
	EXPECT_EQ(9, cqe.tag);
	nt_port_close(&q);
}

struct kicker {
	int fd;
	unsigned int delay_ms;
	int ret;
};

static void *kick_later(void *arg)
{
	struct kicker *k = arg;

	nt_sleep_ms(k->delay_ms);
	k->ret = nt_kick(k->fd);
	return NULL;
}

/*
 * poll() blocks while the completion ring is empty: first with nothing
 * posted (it times out), then with a command the sleeping thread will only
 * see after a kick 300 ms later (poll returns POLLIN only then).
 */
TEST_F(sleep, poll_blocks_until_completion)
{
	struct pollfd pfd = { .fd = self->p.fd, .events = POLLIN };
	struct kicker k = { .fd = self->p.fd, .delay_ms = 300 };
	struct nicoff_port_stats st;
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	uint64_t t0, dt;
	pthread_t th;
	int ret, attempt;

	ASSERT_EQ(0, nt_kick(self->p.fd));
	ASSERT_TRUE(nt_wait_flag(&self->p, false, NICOFF_RING_NEED_WAKEUP, 5000));
	/* Nothing to report: poll sleeps the whole timeout. */
	t0 = nt_now_ns();
	EXPECT_EQ(0, poll(&pfd, 1, 200));
	dt = (nt_now_ns() - t0) / 1000000;
	EXPECT_LE(190, dt);

	/*
	 * The thread has been asleep for a while: publish without kicking.
	 * A firmware timer left by an earlier test may wake it before the
	 * kick (see idle_sets_need_wakeup); then the NOP completes early and
	 * the round says nothing about poll(): try again, a few times.
	 */
	for (attempt = 1; attempt <= 5; attempt++) {
		nt_sleep_ms(50);
		ASSERT_TRUE(nt_wait_flag(&self->p, false, NICOFF_RING_NEED_WAKEUP, 5000));
		nicoff_prep_nop(&c, 0x5133);
		nt_cmd_write(&self->p, &c);
		nt_publish(&self->p);
		ASSERT_EQ(0, pthread_create(&th, NULL, kick_later, &k));
		t0 = nt_now_ns();
		pfd.revents = 0;
		ret = poll(&pfd, 1, TMO);
		dt = (nt_now_ns() - t0) / 1000000;
		pthread_join(th, NULL);
		EXPECT_EQ(0, k.ret);
		ASSERT_EQ(1, ret);
		EXPECT_TRUE(pfd.revents & POLLIN);
		EXPECT_FALSE(pfd.revents & POLLERR);
		ASSERT_EQ(1, nt_reap(&self->p, &cqe, 1));
		EXPECT_EQ(0x5133, cqe.tag);
		if (dt >= 250)
			break;
		TH_LOG("attempt %d: the thread woke by itself after %llu ms", attempt,
		       (unsigned long long)dt);
	}
	/* Woken by the completion the kick allowed, not before. */
	EXPECT_LE(250, dt) TH_LOG("poll returned after %llu ms", (unsigned long long)dt);
	EXPECT_GT(5000, dt);
	ASSERT_EQ(0, nt_stats(self->p.fd, &st));
	/* One kick to start, one per attempt. */
	EXPECT_EQ(1 + (attempt > 5 ? 5 : attempt), st.kicks);
	/* Empty again: poll() has nothing to say. */
	pfd.revents = 0;
	EXPECT_EQ(0, poll(&pfd, 1, 50));
}

/*
 * The doorbell race: with poll_usecs = 0 the thread goes to sleep after
 * every idle pass, so posts keep landing while it is on its way to sleep.
 * The protocol (publish, fence, read flags, kick if asked) must never lose
 * a command: each of many one-command round trips completes, with posts
 * at varying delays after the previous completion.  (A card thread that
 * sleeps without looking at the rings once more after setting NEED_WAKEUP
 * fails this within a few thousand rounds.)
 */
TEST_F_TIMEOUT(sleep, doorbell_race, 120)
{
	const unsigned int rounds = 20000;
	struct nicoff_port_stats st;
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	uint64_t seed = 17, t0;
	unsigned int i, spin, stalls = 0;

	ASSERT_EQ(0, nt_param_set("poll_usecs", 0));
	ASSERT_EQ(0, nt_kick(self->p.fd));
	t0 = nt_now_ns();
	/* At most 20 s: a slow machine does fewer rounds. */
	for (i = 0; i < rounds && nt_now_ns() - t0 < 20000000000ull; i++) {
		int got;

		/* Sweep the window: post at once or after a short spin. */
		spin = nt_rand64(&seed) % 4 ? 0 : nt_rand64(&seed) % 20000;
		while (spin--)
			__asm__ __volatile__("" ::: "memory");
		nicoff_prep_nop(&c, i);
		ASSERT_EQ(0, nt_submit(&self->p, &c, 1));
		got = nt_wait_cqes(&self->p, &cqe, 1, 5000);
		if (got != 1) {
			stalls++;
			TH_LOG("round %u: no completion in 5 s, NEED_WAKEUP %s, cmd consumer %u/%u",
			       i, nt_cmd_flags(&self->p) & NICOFF_RING_NEED_WAKEUP ? "set" : "clear",
			       nt_load_acquire(&self->p.cmd_hdr->consumer), self->p.cmd_prod);
			break;
		}
		ASSERT_EQ(i, cqe.tag);
	}
	EXPECT_EQ(0, stalls);
	ASSERT_EQ(0, nt_stats(self->p.fd, &st));
	EXPECT_EQ(self->p.kicks + 1, st.kicks);
	TH_LOG("%u round trips in %.2f s, %llu kicks", i, (nt_now_ns() - t0) / 1e9,
	       (unsigned long long)st.kicks);
}

/* With the thread kept awake the doorbell protocol makes no call at all. */
TEST_F(sleep, awake_thread_needs_no_kick)
{
	struct nicoff_port_stats st;
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	uint64_t end;
	int i;

	ASSERT_EQ(0, nt_param_set("poll_usecs", 5000000));
	ASSERT_EQ(0, nt_kick(self->p.fd));
	end = nt_now_ns() + 5000000000ull;
	while ((nt_cmd_flags(&self->p) & NICOFF_RING_NEED_WAKEUP) && nt_now_ns() < end)
		nt_sleep_ms(1);
	ASSERT_FALSE(nt_cmd_flags(&self->p) & NICOFF_RING_NEED_WAKEUP);
	for (i = 0; i < 20; i++) {
		nicoff_prep_nop(&c, i);
		ASSERT_EQ(0, nt_run_one(&self->p, &c, &cqe, TMO));
		EXPECT_EQ(i, cqe.tag);
	}
	EXPECT_EQ(0, self->p.kicks);
	ASSERT_EQ(0, nt_stats(self->p.fd, &st));
	EXPECT_EQ(1, st.kicks);
	/* Back to a short poll time: the thread sleeps again soon. */
	ASSERT_EQ(0, nt_param_set("poll_usecs", 10));
	EXPECT_TRUE(nt_wait_flag(&self->p, false, NICOFF_RING_NEED_WAKEUP, 5000));
}

TEST_HARNESS_MAIN
