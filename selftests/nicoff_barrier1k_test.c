// SPDX-License-Identifier: GPL-2.0
/*
 * Barriers across every card of the module (1,024 with nics=1024: see
 * run-in-vm.sh), driven by one process that holds a port on each card:
 * the protocol's scaling without process scheduling.
 *
 * all_cards	every algorithm, auto included: the process posts barrier k on
 *		every port but the last, waits, checks that no port has
 *		completed it, posts the last, and collects every completion
 *		(no member leaves barrier k before every member has entered)
 * faults	the same under 10% drop, duplicates and reordering
 *
 * The mean time of a barrier (post of the first to the last completion) is
 * logged for each algorithm.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define PORT		16
#define TMO_NS		120000000000ull	/* one barrier, everywhere */
#define CREATE_MS	100000		/* a group's creation, auto's trials included */

struct cards {
	int n;
	struct nt_port *p;
	struct pollfd *pfd;
	struct nicoff_member *tab;
	uint32_t *mr;
	uint32_t gid;
};

static int cards_open(struct cards *c)
{
	struct nicoff_query q;
	struct rlimit rl;
	int fd, i, ret;

	fd = nt_open_card(0);
	if (fd < 0)
		return fd;
	ret = nt_query(fd, &q);
	close(fd);
	if (ret)
		return ret;
	/* A file per card, and then some. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < q.num_cards + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	c->n = q.num_cards;
	c->p = calloc(c->n, sizeof(*c->p));
	c->pfd = calloc(c->n, sizeof(*c->pfd));
	c->tab = calloc(c->n, sizeof(*c->tab));
	c->mr = calloc(c->n, sizeof(*c->mr));
	if (!c->p || !c->pfd || !c->tab || !c->mr)
		return -ENOMEM;
	for (i = 0; i < c->n; i++) {
		c->tab[i].card = i;
		c->tab[i].port = PORT;
	}
	for (i = 0; i < c->n; i++) {
		ret = nt_port_open(&c->p[i], i, PORT, 4, 4);
		if (!ret)
			ret = nt_reg_mr(c->p[i].fd, c->tab, c->n * sizeof(*c->tab), 0, &c->mr[i]);
		if (ret)
			return ret;
		c->pfd[i].fd = c->p[i].fd;
		c->pfd[i].events = POLLIN;
	}
	return 0;
}

static void cards_close(struct cards *c)
{
	int i;

	for (i = 0; c->p && i < c->n; i++)
		nt_port_close(&c->p[i]);
	free(c->p);
	free(c->pfd);
	free(c->tab);
	free(c->mr);
}

static int post(struct cards *c, int i, uint8_t op, uint64_t tag, uint32_t alg)
{
	struct nicoff_cmd cmd;

	if (op == NICOFF_OP_GROUP_CREATE)
		nicoff_prep_group_create(&cmd, c->gid, i, c->n, c->mr[i], 0, alg, 0, tag);
	else if (op == NICOFF_OP_BARRIER)
		nicoff_prep_barrier(&cmd, c->gid, tag);
	else
		nicoff_prep_group_destroy(&cmd, c->gid, tag);
	return nt_submit(&c->p[i], &cmd, 1);
}

/*
 * One completion from every port, each with tag @tag; first error status
 * in *status; @results (if not NULL) gets each result.  -ETIMEDOUT, or 0.
 */
static int collect(struct cards *c, uint64_t tag, int32_t *status, uint64_t *results)
{
	uint64_t deadline = nt_now_ns() + TMO_NS;
	char *got = calloc(c->n, 1);
	int left = c->n, i, ret = 0;

	*status = 0;
	while (left) {
		int progress = 0;

		for (i = 0; i < c->n; i++) {
			struct nicoff_cqe q;

			if (got[i] || nt_reap(&c->p[i], &q, 1) != 1)
				continue;
			if (q.tag != tag && !*status)
				*status = -EPROTO;
			if (q.status && !*status)
				*status = q.status;
			if (results)
				results[i] = q.result;
			got[i] = 1;
			left--;
			progress = 1;
		}
		if (progress)
			continue;
		if (nt_now_ns() > deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		for (i = 0; i < c->n; i++)
			c->pfd[i].events = got[i] ? 0 : POLLIN;
		poll(c->pfd, c->n, 100);
	}
	free(got);
	return ret;
}

/* Nothing completed anywhere yet. */
static bool none_ready(struct cards *c)
{
	int i;

	for (i = 0; i < c->n; i++)
		if (nt_cq_ready(&c->p[i]))
			return false;
	return true;
}

static void run_alg(struct __test_metadata *_metadata, struct cards *c, uint32_t alg, int k_max)
{
	uint64_t *res = calloc(c->n, sizeof(*res));
	uint64_t t0 = 0, t, chose;
	int32_t st;
	int i, k;

	c->gid++;
	for (i = 0; i < c->n; i++)
		ASSERT_EQ(0, post(c, i, NICOFF_OP_GROUP_CREATE, 1, alg));
	ASSERT_EQ(0, collect(c, 1, &st, res));
	ASSERT_EQ(0, st) TH_LOG("create, algorithm %u", alg);
	for (i = 1; i < c->n; i++)
		ASSERT_EQ(res[0], res[i]) TH_LOG("cards disagree on the algorithm");
	if (alg)
		ASSERT_EQ(alg, (uint32_t)res[0]);
	chose = res[0];
	for (k = 1; k <= k_max; k++) {
		int last = (k * 7919) % c->n;

		if (k == 11)
			t0 = nt_now_ns();
		for (i = 0; i < c->n; i++)
			if (i != last)
				ASSERT_EQ(0, post(c, i, NICOFF_OP_BARRIER, 100 + k, 0));
		/* The last member is late: nobody may leave meanwhile. */
		if (k <= 10 || k % 8 == 0) {
			nt_sleep_ms(k <= 3 ? 20 : 1);
			ASSERT_TRUE(none_ready(c)) TH_LOG("barrier %d completed early", k);
		}
		ASSERT_EQ(0, post(c, last, NICOFF_OP_BARRIER, 100 + k, 0));
		ASSERT_EQ(0, collect(c, 100 + k, &st, res));
		ASSERT_EQ(0, st) TH_LOG("barrier %d, algorithm %u", k, alg);
		for (i = 0; i < c->n; i++)
			ASSERT_EQ((uint64_t)k, res[i]);
	}
	t = nt_now_ns();
	TH_LOG("%d cards, algorithm %u (chose %u): %.1f us per barrier", c->n, alg,
	       (uint32_t)chose, k_max > 10 ? (t - t0) / 1e3 / (k_max - 10) : 0.0);
	for (i = 0; i < c->n; i++)
		ASSERT_EQ(0, post(c, i, NICOFF_OP_GROUP_DESTROY, 2, 0));
	ASSERT_EQ(0, collect(c, 2, &st, NULL));
	ASSERT_EQ(0, st);
	free(res);
}

FIXTURE(cards) {
	struct cards c;
};

FIXTURE_SETUP(cards)
{
	memset(&self->c, 0, sizeof(self->c));
	self->c.gid = ((uint32_t)getpid() & 0xfffff) << 12;
	/*
	 * Auto times every algorithm across all the cards while the group is
	 * created: under emulation that can take longer than the default
	 * 30 s budget, which is for real machines.
	 */
	ASSERT_EQ(0, nt_param_set("group_create_ms", CREATE_MS));
	ASSERT_EQ(0, cards_open(&self->c));
}

FIXTURE_TEARDOWN(cards)
{
	static const char *const f[] = { "fault_drop_ppm", "fault_dup_ppm", "fault_reorder_ppm" };
	unsigned int i;

	for (i = 0; i < 3; i++)
		nt_param_set(f[i], 0);
	nt_param_set("group_create_ms", 30000);
	cards_close(&self->c);
}

TEST_F_TIMEOUT(cards, all_cards, 900)
{
	uint32_t alg;

	for (alg = NICOFF_BARRIER_PAIRWISE; alg < NICOFF_BARRIER_MAX; alg++)
		run_alg(_metadata, &self->c, alg, 60);
	run_alg(_metadata, &self->c, NICOFF_BARRIER_AUTO, 30);
}

TEST_F_TIMEOUT(cards, faults, 900)
{
	ASSERT_EQ(0, nt_param_set("fault_drop_ppm", 100000));
	ASSERT_EQ(0, nt_param_set("fault_dup_ppm", 100000));
	ASSERT_EQ(0, nt_param_set("fault_reorder_ppm", 100000));
	run_alg(_metadata, &self->c, NICOFF_BARRIER_DISSEMINATION, 30);
	run_alg(_metadata, &self->c, NICOFF_BARRIER_COMBINING, 30);
}

TEST_HARNESS_MAIN
