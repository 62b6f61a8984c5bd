// SPDX-License-Identifier: GPL-2.0
/*
 * Barriers run by the cards (NICOFF_OP_GROUP_CREATE, NICOFF_OP_BARRIER,
 * NICOFF_OP_GROUP_DESTROY; firmware-sim/barrier.c), between forked
 * processes with a port each, placed as nicoffrun places ranks: rank r on
 * card r % nics, port PORT_BASE + r / nics.
 *
 * Each process counts itself into a counter in shared memory before it
 * posts barrier k, and checks when barrier k completes that the counter is
 * the group's size: no member leaves barrier k before every member has
 * entered it.  Processes wait for completions asleep in poll().
 *
 * every_algorithm	N = 1, 2, 3, 5, 8, 13, every algorithm and auto
 * back_to_back		thousands of barriers back to back, N = 8
 * sixty_four		64 processes
 * under_faults		10% drop, 10% duplicates, 10% reordering, 1% corrupt
 * dead_member		a member killed after 10 barriers: every other one's
 *			next barrier fails (-ECONNRESET or -ETIMEDOUT) within a
 *			bound, none hangs; a failed group refuses barriers
 * default_tunable	barrier_alg selects the algorithm of DEFAULT groups
 * bad_input		duplicate members, wrong rank, unknown card, too many
 *			groups, unknown group, busy group
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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

#define PORT_BASE	16
#define MAX_N		64
#define MAX_K		5000
#define TMO		60000	/* ms: one completion */
#define RING		64

/* Memory every process of a run shares. */
struct shared {
	uint32_t entered[MAX_K + 2];	/* members that entered barrier k */
	int32_t status[MAX_N];		/* a member's error completion, if any */
	uint64_t fail_ns[MAX_N];	/* when it came */
	uint32_t done[MAX_N];		/* barriers completed */
	uint64_t result[MAX_N];		/* GROUP_CREATE's result */
	uint64_t death_ns;		/* when the victim died */
	char why[MAX_N][96];		/* what went wrong */
};

struct run {
	int n;
	int nics;
	uint32_t gid;
	uint32_t alg;
	uint32_t param;
	int barriers;
	int victim;			/* -1: none */
	int victim_after;
};

static int run_one(struct nt_port *p, const struct nicoff_cmd *c, struct nicoff_cqe *q)
{
	int ret = nt_run_one(p, c, q, TMO);

	return ret ? ret : q->status;
}

static void member_table(struct nicoff_member *tab, int n, int nics)
{
	int r;

	for (r = 0; r < n; r++) {
		tab[r].card = r % nics;
		tab[r].port = PORT_BASE + r / nics;
	}
}

/* One member's life; the exit code says how it went. */
static int member(struct shared *sh, const struct run *rn, int rank)
{
	struct nicoff_member tab[MAX_N];
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	struct nt_port p;
	uint32_t mr;
	int k, ret;

	memset(&p, 0, sizeof(p));
	member_table(tab, rn->n, rn->nics);
	ret = nt_port_open(&p, rank % rn->nics, PORT_BASE + rank / rn->nics, RING, RING);
	if (!ret)
		ret = nt_reg_mr(p.fd, tab, sizeof(tab), 0, &mr);
	if (ret) {
		snprintf(sh->why[rank], sizeof(sh->why[rank]), "port or region: %d", ret);
		return 10;
	}
	nicoff_prep_group_create(&c, rn->gid, rank, rn->n, mr, 0, rn->alg, rn->param, 1);
	ret = run_one(&p, &c, &q);
	sh->result[rank] = q.result;
	if (ret) {
		snprintf(sh->why[rank], sizeof(sh->why[rank]), "create: %d", ret);
		return 11;
	}
	for (k = 1; k <= rn->barriers; k++) {
		if (rank == rn->victim && k == rn->victim_after + 1) {
			sh->death_ns = nt_now_ns();
			raise(SIGKILL);
		}
		__atomic_add_fetch(&sh->entered[k], 1, __ATOMIC_SEQ_CST);
		nicoff_prep_barrier(&c, rn->gid, 100 + k);
		ret = run_one(&p, &c, &q);
		if (ret) {
			sh->status[rank] = ret;
			sh->fail_ns[rank] = nt_now_ns();
			if (rn->victim < 0)
				snprintf(sh->why[rank], sizeof(sh->why[rank]), "barrier %d: %d", k,
					 ret);
			/* A failed group refuses barriers from now on. */
			ret = run_one(&p, &c, &q);
			if (ret != sh->status[rank])
				return 12;
			break;
		}
		if (__atomic_load_n(&sh->entered[k], __ATOMIC_SEQ_CST) != (uint32_t)rn->n) {
			snprintf(sh->why[rank], sizeof(sh->why[rank]),
				 "left barrier %d when %u of %d had entered", k, sh->entered[k],
				 rn->n);
			return 13;
		}
		if (q.result != (uint64_t)k) {
			snprintf(sh->why[rank], sizeof(sh->why[rank]), "barrier %d: result %llu",
				 k, (unsigned long long)q.result);
			return 14;
		}
		sh->done[rank] = k;
	}
	nicoff_prep_group_destroy(&c, rn->gid, 2);
	ret = run_one(&p, &c, &q);
	nt_port_close(&p);
	return ret ? 15 : 0;
}

/* Fork the members, wait for all; returns the shared memory (munmap it). */
static struct shared *run_group(struct __test_metadata *_metadata, const struct run *rn,
				int *codes)
{
	struct shared *sh;
	pid_t pids[MAX_N];
	int r;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return NULL;
	for (r = 0; r < rn->n; r++) {
		pids[r] = fork();
		if (!pids[r])
			_exit(member(sh, rn, r));
	}
	for (r = 0; r < rn->n; r++) {
		int st = 0;

		if (pids[r] < 0 || waitpid(pids[r], &st, 0) != pids[r])
			codes[r] = -1;
		else if (WIFSIGNALED(st))
			codes[r] = 128 + WTERMSIG(st);
		else
			codes[r] = WEXITSTATUS(st);
	}
	return sh;
}

/* Run and demand success everywhere; returns the algorithm chosen. */
static uint64_t run_ok(struct __test_metadata *_metadata, int n, uint32_t alg, uint32_t param,
		       int barriers, uint32_t gid)
{
	struct run rn = { n, 8, gid, alg, param, barriers, -1, 0 };
	int codes[MAX_N], r;
	struct shared *sh;
	uint64_t res;

	sh = run_group(_metadata, &rn, codes);
	if (!sh)
		return 0;
	res = sh->result[0];
	for (r = 0; r < n; r++) {
		EXPECT_EQ(0, codes[r]) TH_LOG("n %d alg %u rank %d: %s", n, alg, r, sh->why[r]);
		EXPECT_EQ(res, sh->result[r]) TH_LOG("n %d alg %u: ranks disagree", n, alg);
	}
	if (alg >= NICOFF_BARRIER_PAIRWISE && alg < NICOFF_BARRIER_MAX)
		EXPECT_EQ(alg, (uint32_t)res);
	munmap(sh, sizeof(*sh));
	return res;
}

static uint32_t next_gid = 0x100;

/* 10% drop, 10% duplicates, 10% reordering, 1% corrupt */
#define FAULTS_ON	100000, 100000, 100000, 10000

/* Write @val to the barrier_alg tunable; 0 or -errno. */
static int alg_param_write(const char *val)
{
	int fd = open(NT_PARAM_DIR "barrier_alg", O_WRONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -errno;
	close(fd);
	return ret;
}

static void alg_param_read(char *buf, size_t len)
{
	int fd = open(NT_PARAM_DIR "barrier_alg", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
}

/* Every test starts and ends with no faults and the default algorithm. */
FIXTURE(barrier) {
	int unused;
};

FIXTURE_SETUP(barrier)
{
	/* Each test is a process of its own: group ids unique per test. */
	next_gid = ((uint32_t)getpid() & 0xfffff) << 12;
	nt_set_faults(0, 0, 0, 0);
	alg_param_write("auto");
}

FIXTURE_TEARDOWN(barrier)
{
	nt_set_faults(0, 0, 0, 0);
	alg_param_write("auto");
}

TEST_F_TIMEOUT(barrier, every_algorithm, 900)
{
	static const int ns[] = { 1, 2, 3, 5, 8, 13 };
	uint32_t alg;
	unsigned int i;

	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		for (alg = NICOFF_BARRIER_AUTO; alg < NICOFF_BARRIER_MAX; alg++) {
			uint64_t res = run_ok(_metadata, ns[i], alg, 0, 200, next_gid++);

			TH_LOG("N %2d %-2u -> algorithm %u, param %u", ns[i], alg, (uint32_t)res,
			       (uint32_t)(res >> 32));
		}
	}
}

TEST_F_TIMEOUT(barrier, back_to_back, 600)
{
	run_ok(_metadata, 8, NICOFF_BARRIER_DISSEMINATION, 0, MAX_K, next_gid++);
	run_ok(_metadata, 8, NICOFF_BARRIER_PAIRWISE, 0, 3000, next_gid++);
	run_ok(_metadata, 5, NICOFF_BARRIER_TREE, 2, 2000, next_gid++);
}

TEST_F_TIMEOUT(barrier, sixty_four, 600)
{
	run_ok(_metadata, 64, NICOFF_BARRIER_DISSEMINATION, 0, 100, next_gid++);
	run_ok(_metadata, 64, NICOFF_BARRIER_COMBINING, 0, 100, next_gid++);
	run_ok(_metadata, 64, NICOFF_BARRIER_AUTO, 0, 50, next_gid++);
}

TEST_F_TIMEOUT(barrier, under_faults, 900)
{
	static const int ns[] = { 5, 8 };
	uint32_t alg;
	unsigned int i;

	ASSERT_EQ(0, nt_set_faults(FAULTS_ON));
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		for (alg = NICOFF_BARRIER_PAIRWISE; alg < NICOFF_BARRIER_MAX; alg++)
			run_ok(_metadata, ns[i], alg, 0, 150, next_gid++);
	run_ok(_metadata, 6, NICOFF_BARRIER_AUTO, 0, 50, next_gid++);
	EXPECT_EQ(0, nt_set_faults(0, 0, 0, 0));
}

TEST_F_TIMEOUT(barrier, dead_member, 600)
{
	static const uint32_t algs[] = { NICOFF_BARRIER_DISSEMINATION, NICOFF_BARRIER_PAIRWISE,
					 NICOFF_BARRIER_TREE, NICOFF_BARRIER_CENTRAL,
					 NICOFF_BARRIER_COMBINING, NICOFF_BARRIER_TOURNAMENT };
	unsigned int a;

	for (a = 0; a < sizeof(algs) / sizeof(algs[0]); a++) {
		struct run rn = { 8, 8, next_gid++, algs[a], 0, 30, (int)(a * 3 + 1) % 8, 10 };
		int codes[MAX_N], r;
		struct shared *sh;

		sh = run_group(_metadata, &rn, codes);
		ASSERT_NE(NULL, sh);
		for (r = 0; r < rn.n; r++) {
			if (r == rn.victim) {
				EXPECT_EQ(128 + SIGKILL, codes[r]);
				continue;
			}
			EXPECT_EQ(0, codes[r]) TH_LOG("alg %u rank %d: %s", rn.alg, r, sh->why[r]);
			EXPECT_EQ(10, sh->done[r]);
			EXPECT_TRUE(sh->status[r] == -ECONNRESET || sh->status[r] == -ETIMEDOUT)
				TH_LOG("alg %u rank %d: status %d", rn.alg, r, sh->status[r]);
			/* Seconds, not a hang: the dead time is about 0.5 s. */
			EXPECT_LT(sh->fail_ns[r] - sh->death_ns, 5000000000ull)
				TH_LOG("alg %u rank %d failed %.3f s after the death", rn.alg, r,
				       (sh->fail_ns[r] - sh->death_ns) / 1e9);
		}
		munmap(sh, sizeof(*sh));
	}
}

TEST_F_TIMEOUT(barrier, default_tunable, 120)
{
	char buf[64];
	uint64_t res;

	/* The tunable takes names or numbers, and reads back a name. */
	ASSERT_EQ(0, alg_param_write("central"));
	alg_param_read(buf, sizeof(buf));
	EXPECT_STREQ("central\n", buf);
	res = run_ok(_metadata, 3, NICOFF_BARRIER_DEFAULT, 0, 20, next_gid++);
	EXPECT_EQ(NICOFF_BARRIER_CENTRAL, (uint32_t)res);
	ASSERT_EQ(0, nt_param_set("barrier_alg", NICOFF_BARRIER_TREE));
	res = run_ok(_metadata, 3, NICOFF_BARRIER_DEFAULT, 0, 20, next_gid++);
	EXPECT_EQ(NICOFF_BARRIER_TREE, (uint32_t)res);
	EXPECT_EQ(4u, (uint32_t)(res >> 32));
	alg_param_read(buf, sizeof(buf));
	EXPECT_STREQ("tree\n", buf);
	EXPECT_NE(0, nt_param_set("barrier_alg", NICOFF_BARRIER_MAX));
	EXPECT_NE(0, alg_param_write("fastest"));
	ASSERT_EQ(0, nt_param_set("barrier_alg", 0));
	alg_param_read(buf, sizeof(buf));
	EXPECT_STREQ("auto\n", buf);
}

static int create_status(struct nt_port *p, uint32_t gid, uint32_t rank, uint32_t size,
			 uint32_t mr, uint32_t alg)
{
	struct nicoff_cmd c;
	struct nicoff_cqe q;

	nicoff_prep_group_create(&c, gid, rank, size, mr, 0, alg, 0, 9);
	return run_one(p, &c, &q);
}

TEST_F_TIMEOUT(barrier, bad_input, 120)
{
	struct nicoff_member tab[4], dup[4], unk[4], one[1];
	struct nicoff_query qy;
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	struct nt_port p;
	uint32_t mt, md, mu, mo;
	int i;

	memset(&p, 0, sizeof(p));
	ASSERT_EQ(0, nt_port_open(&p, 0, 40, RING, RING));
	ASSERT_EQ(0, nt_query(p.fd, &qy));
	member_table(tab, 4, 8);
	tab[0].port = 40;
	memcpy(dup, tab, sizeof(dup));
	dup[3] = dup[1];
	memcpy(unk, tab, sizeof(unk));
	unk[2].card = qy.num_cards;
	one[0] = tab[0];
	ASSERT_EQ(0, nt_reg_mr(p.fd, tab, sizeof(tab), 0, &mt));
	ASSERT_EQ(0, nt_reg_mr(p.fd, dup, sizeof(dup), 0, &md));
	ASSERT_EQ(0, nt_reg_mr(p.fd, unk, sizeof(unk), 0, &mu));
	ASSERT_EQ(0, nt_reg_mr(p.fd, one, sizeof(one), 0, &mo));

	EXPECT_EQ(-EINVAL, create_status(&p, 1, 0, 4, md, NICOFF_BARRIER_DISSEMINATION));
	EXPECT_EQ(-EINVAL, create_status(&p, 1, 1, 4, mt, NICOFF_BARRIER_DISSEMINATION));
	EXPECT_EQ(-EINVAL, create_status(&p, 1, 4, 4, mt, NICOFF_BARRIER_DISSEMINATION));
	EXPECT_EQ(-ENODEV, create_status(&p, 1, 0, 4, mu, NICOFF_BARRIER_DISSEMINATION));
	EXPECT_EQ(-EINVAL, create_status(&p, 1, 0, 4, mt, NICOFF_BARRIER_MAX));
	EXPECT_EQ(-ERANGE, create_status(&p, 1, 0, 5, mt, NICOFF_BARRIER_DISSEMINATION));
	EXPECT_EQ(-ENOENT, create_status(&p, 1, 0, 4, 12345, NICOFF_BARRIER_DISSEMINATION));
	nicoff_prep_barrier(&c, 1, 3);
	EXPECT_EQ(-ENOENT, run_one(&p, &c, &q));

	/* Too many groups: the card keeps 64 per port. */
	for (i = 0; i < 64; i++)
		ASSERT_EQ(0, create_status(&p, 1000 + i, 0, 1, mo, NICOFF_BARRIER_PAIRWISE));
	EXPECT_EQ(-ENOSPC, create_status(&p, 2000, 0, 1, mo, NICOFF_BARRIER_PAIRWISE));
	EXPECT_EQ(-EEXIST, create_status(&p, 1000, 0, 1, mo, NICOFF_BARRIER_PAIRWISE));
	nicoff_prep_barrier(&c, 1000, 3);
	EXPECT_EQ(0, run_one(&p, &c, &q));
	EXPECT_EQ(1u, q.result);
	nicoff_prep_barrier(&c, 1000, 3);
	c.group.size = 1;
	EXPECT_EQ(-EINVAL, run_one(&p, &c, &q));
	nicoff_prep_group_destroy(&c, 1000, 3);
	EXPECT_EQ(0, run_one(&p, &c, &q));
	EXPECT_EQ(0, create_status(&p, 2000, 0, 1, mo, NICOFF_BARRIER_PAIRWISE));
	nicoff_prep_group_destroy(&c, 2000, 3);
	EXPECT_EQ(0, run_one(&p, &c, &q));

	/* A group whose other members never come: busy, then cancelled. */
	nicoff_prep_group_create(&c, 3000, 0, 4, mt, 0, NICOFF_BARRIER_AUTO, 0, 20);
	ASSERT_EQ(0, nt_submit(&p, &c, 1));
	nicoff_prep_barrier(&c, 3000, 21);
	EXPECT_EQ(-EBUSY, run_one(&p, &c, &q));
	nicoff_prep_group_destroy(&c, 3000, 22);
	ASSERT_EQ(0, nt_submit(&p, &c, 1));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(1, nt_wait_cqes(&p, &q, 1, TMO));
		EXPECT_EQ(q.tag == 20 ? -ECANCELED : 0, q.status);
	}
	nt_port_close(&p);
}

TEST_HARNESS_MAIN
