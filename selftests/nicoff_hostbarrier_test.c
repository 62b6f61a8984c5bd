// SPDX-License-Identifier: GPL-2.0
/*
 * The host-based baselines of the barrier suite: libnicoff's HostBarrier
 * (through its C API, linked statically), the same algorithms as the card
 * runs but executed by the processes over the card's SEND/RECV.  Forked
 * processes, rank r on card r % 8, port PORT_BASE + r / 8.
 *
 * Each process counts itself into a shared counter before barrier k and
 * checks, once it leaves barrier k, that every member had entered it.  A
 * member that left early would see a count short of the group's size.
 * Members start once every port is open (a SEND to a port not yet open is
 * refused); the host-based barrier has no time limit of its own, so a run
 * that outlives RUN_LIMIT_NS is killed and fails.
 *
 * every_algorithm	N = 1, 2, 3, 5, 8, 13, every algorithm
 * back_to_back		thousands of barriers back to back, N = 8
 * under_faults		10% drop, 10% duplicates, 10% reordering, 1% corrupt
 * bad_input		wrong rank, duplicate members, unknown algorithm, empty group
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"
#include <nicoff/nicoff.h>

#define PORT_BASE	24
#define NICS		8
#define MAX_N		16
#define MAX_K		3000
#define RUN_LIMIT_NS	240000000000ull	/* one run, all barriers */

struct shared {
	uint32_t ready;			/* members whose port is open */
	uint32_t entered[MAX_K + 2];	/* members that entered barrier k */
	char why[MAX_N][96];		/* what went wrong */
};

static void member_table(struct nicoff_member *tab, int n)
{
	int r;

	for (r = 0; r < n; r++) {
		tab[r].card = r % NICS;
		tab[r].port = PORT_BASE + r / NICS;
	}
}

/* One member's life; the exit code says how it went. */
static int member(struct shared *sh, int n, uint32_t alg, int barriers, int rank)
{
	struct nicoff_port_attr attr = { PORT_BASE + rank / NICS, 64, 64, 0 };
	struct nicoff_member tab[MAX_N];
	nicoff_host_barrier *hb = NULL;
	nicoff_device *dev = NULL;
	nicoff_port *port = NULL;
	int k, ret;

	member_table(tab, n);
	ret = nicoff_device_open(rank % NICS, &dev);
	if (!ret)
		ret = nicoff_port_create(dev, &attr, &port);
	if (!ret) {
		__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < (uint32_t)n)
			usleep(1000);
		ret = nicoff_host_barrier_create(port, tab, n, rank, alg, 0, &hb);
	}
	if (ret) {
		snprintf(sh->why[rank], sizeof(sh->why[rank]), "setup: %d", ret);
		return 10;
	}
	for (k = 1; k <= barriers && !ret; k++) {
		__atomic_add_fetch(&sh->entered[k], 1, __ATOMIC_SEQ_CST);
		ret = nicoff_host_barrier_wait(hb);
		if (ret) {
			snprintf(sh->why[rank], sizeof(sh->why[rank]), "barrier %d: %d", k, ret);
			ret = 11;
		} else if (__atomic_load_n(&sh->entered[k], __ATOMIC_SEQ_CST) != (uint32_t)n) {
			snprintf(sh->why[rank], sizeof(sh->why[rank]),
				 "left barrier %d when %u of %d had entered", k, sh->entered[k], n);
			ret = 12;
		}
	}
	nicoff_host_barrier_free(hb);
	nicoff_port_destroy(port);
	nicoff_device_close(dev);
	return ret;
}

static void run_ok(struct __test_metadata *_metadata, int n, uint32_t alg, int barriers)
{
	uint64_t t0 = nt_now_ns();
	pid_t pids[MAX_N];
	bool ok[MAX_N];
	struct shared *sh;
	int r;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	for (r = 0; r < n; r++) {
		pids[r] = fork();
		if (!pids[r])
			_exit(member(sh, n, alg, barriers, r));
	}
	nt_reap_within(pids, n, t0, RUN_LIMIT_NS, ok);
	for (r = 0; r < n; r++) {
		if (!ok[r] && !sh->why[r][0])
			snprintf(sh->why[r], sizeof(sh->why[r]), "killed: another failed, or over %llu s",
				 RUN_LIMIT_NS / 1000000000ull);
		EXPECT_TRUE(ok[r]) TH_LOG("n %d alg %u rank %d: %s", n, alg, r, sh->why[r]);
	}
	TH_LOG("N %2d algorithm %u: %d barriers, %.1f us each", n, alg, barriers,
	       (nt_now_ns() - t0) / 1e3 / barriers);
	munmap(sh, sizeof(*sh));
}

/* 10% drop, 10% duplicates, 10% reordering, 1% corrupt */
#define FAULTS_ON	100000, 100000, 100000, 10000

FIXTURE(hostbarrier) {
	int unused;
};

FIXTURE_SETUP(hostbarrier)
{
	struct nicoff_query q;

	ASSERT_EQ(0, nt_query_card(0, &q));
	if (q.num_cards < NICS)
		SKIP(return, "needs %d cards", NICS);
}

FIXTURE_TEARDOWN(hostbarrier)
{
	nt_set_faults(0, 0, 0, 0);
}

TEST_F_TIMEOUT(hostbarrier, every_algorithm, 900)
{
	static const int ns[] = { 1, 2, 3, 5, 8, 13 };
	uint32_t alg;
	unsigned int i;

	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		for (alg = NICOFF_BARRIER_PAIRWISE; alg < NICOFF_BARRIER_MAX; alg++)
			run_ok(_metadata, ns[i], alg, 100);
}

TEST_F_TIMEOUT(hostbarrier, back_to_back, 600)
{
	run_ok(_metadata, 8, NICOFF_BARRIER_DISSEMINATION, MAX_K);
}

TEST_F_TIMEOUT(hostbarrier, under_faults, 900)
{
	uint32_t alg;

	ASSERT_EQ(0, nt_set_faults(FAULTS_ON));
	for (alg = NICOFF_BARRIER_PAIRWISE; alg < NICOFF_BARRIER_MAX; alg++)
		run_ok(_metadata, 5, alg, 60);
	EXPECT_EQ(0, nt_set_faults(0, 0, 0, 0));
}

TEST_F_TIMEOUT(hostbarrier, bad_input, 60)
{
	struct nicoff_port_attr attr = { PORT_BASE, 64, 64, 0 };
	struct nicoff_member tab[4];
	nicoff_host_barrier *hb = NULL;
	nicoff_device *dev = NULL;
	nicoff_port *port = NULL;

	member_table(tab, 4);
	ASSERT_EQ(0, nicoff_device_open(0, &dev));
	ASSERT_EQ(0, nicoff_port_create(dev, &attr, &port));
	EXPECT_EQ(-EINVAL, nicoff_host_barrier_create(port, tab, 4, 4, NICOFF_BARRIER_PAIRWISE, 0,
						      &hb));
	EXPECT_EQ(-EINVAL, nicoff_host_barrier_create(port, tab, 4, 1, NICOFF_BARRIER_PAIRWISE, 0,
						      &hb));
	EXPECT_EQ(-EINVAL, nicoff_host_barrier_create(port, tab, 4, 0, NICOFF_BARRIER_MAX, 0, &hb));
	tab[2] = tab[1];
	EXPECT_EQ(-EINVAL, nicoff_host_barrier_create(port, tab, 4, 0, NICOFF_BARRIER_PAIRWISE, 0,
						      &hb));
	EXPECT_EQ(-EINVAL, nicoff_host_barrier_create(port, tab, 0, 0, NICOFF_BARRIER_PAIRWISE, 0,
						      &hb));
	EXPECT_EQ(NULL, hb);
	nicoff_port_destroy(port);
	nicoff_device_close(dev);
}

TEST_HARNESS_MAIN
