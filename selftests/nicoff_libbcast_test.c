// SPDX-License-Identifier: GPL-2.0
/*
 * libnicoff's broadcasts through its C API (linked statically): the card's
 * (nicoff::Group::broadcast, blocking, over a region and a bounce buffer,
 * and non-blocking: nicoff::BcastRequest) and the host-based binomial tree
 * (nicoff::HostBroadcast).  Forked processes, rank r on card r % 8, port
 * PORT_BASE + r / 8.
 *
 * Every member calls each method for every size and every root in the same
 * order.  A root fills its buffer with a pattern of (method, size, root); a
 * receiver poisons its buffer first and checks, once the call returns (the
 * request is done), the payload byte for byte and GUARD bytes past it
 * untouched.  The non-blocking form posts every root's broadcast of a size
 * at once, each into a slot of its own, then tests one and waits for all.
 *
 * methods	N = 2, 3, 5: every method, root, size (0, 16 KiB, 16 KiB + 1, 1 MiB);
 *		at N = 3 and 5 the group is auto with NICOFF_GROUP_F_HOST_TRIALS
 *		(the candidates timed on the members' own barriers while it is
 *		created), and then runs the algorithm it chose
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"
#include <nicoff/nicoff.h>

#define PORT_BASE	28
#define NICS		8
#define MAX_N		8
#define GUARD		64
#define POISON		0xa5
#define MAX_LEN		(1u << 20)
#define RUN_LIMIT_NS	300000000000ull	/* one run, every method */

enum method { M_MR, M_BUF, M_START, M_HOST_MR, M_HOST_BUF, M_COUNT };

static const char *const method_name[M_COUNT] = {
	"broadcast", "broadcast_buf", "broadcast_start", "host_broadcast", "host_broadcast_buf",
};

static const size_t sizes[] = {
	0, 1, NICOFF_BCAST_EAGER_MAX, NICOFF_BCAST_EAGER_MAX + 1, MAX_LEN,
};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

struct shared {
	uint32_t ready;			/* members whose port is open */
	char why[MAX_N][128];		/* what went wrong */
};

/* Everything one member holds. */
struct member {
	int n, rank;
	nicoff_device *dev;
	nicoff_port *port;
	nicoff_group *grp;
	nicoff_host_bcast *hb;
	unsigned char *buf;		/* MAX_N slots of MAX_LEN + GUARD */
	nicoff_mr *mr;
};

static size_t slot_bytes(void)
{
	return MAX_LEN + GUARD;
}

static unsigned char pattern(int m, size_t len, int root, size_t i)
{
	return (unsigned char)((i * 131 + len * 7 + (size_t)root * 29 + (size_t)m * 53 + 1) % 251);
}

/* Root: the payload; receiver: poison, which the payload must replace. */
static void prepare(unsigned char *slot, int m, size_t len, int root, bool is_root)
{
	size_t i;

	memset(slot, POISON, len + GUARD);
	if (is_root)
		for (i = 0; i < len; i++)
			slot[i] = pattern(m, len, root, i);
}

static int check(struct shared *sh, int rank, const unsigned char *slot, int m, size_t len,
		 int root)
{
	size_t i;

	for (i = 0; i < len + GUARD; i++) {
		int want = i < len ? pattern(m, len, root, i) : POISON;

		if (slot[i] != want) {
			snprintf(sh->why[rank], sizeof(sh->why[rank]),
				 "%s len %zu root %d: byte %zu is %#x, not %#x", method_name[m],
				 len, root, i, slot[i], want);
			return -1;
		}
	}
	return 0;
}

static int fail(struct shared *sh, int rank, int m, size_t len, int root, const char *what,
		int ret)
{
	snprintf(sh->why[rank], sizeof(sh->why[rank]), "%s len %zu root %d: %s %d",
		 method_name[m], len, root, what, ret);
	return -1;
}

/* One blocking call of method @m into the first slot. */
static int one_blocking(struct shared *sh, struct member *me, int m, size_t len, int root)
{
	bool is_root = me->rank == root;
	int ret;

	prepare(me->buf, m, len, root, is_root);
	switch (m) {
	case M_MR:
		ret = nicoff_group_broadcast(me->grp, me->mr, 0, len, root);
		break;
	case M_BUF:
		ret = nicoff_group_broadcast_buf(me->grp, me->buf, len, root);
		break;
	case M_HOST_MR:
		ret = nicoff_host_broadcast(me->hb, me->mr, 0, len, root);
		break;
	default:
		ret = nicoff_host_broadcast_buf(me->hb, me->buf, len, root);
		break;
	}
	if (ret)
		return fail(sh, me->rank, m, len, root, "returned", ret);
	return check(sh, me->rank, me->buf, m, len, root);
}

/*
 * Every root's broadcast of @len posted at once, each in its own slot
 * (alternately over the region and through the bounce buffer); the first
 * polled with nicoff_bcast_test until done, then all waited for in order.
 */
static int all_roots_nonblocking(struct shared *sh, struct member *me, size_t len)
{
	nicoff_bcast_req *req[MAX_N] = { NULL };
	int root, ret = 0, t;

	for (root = 0; root < me->n; root++) {
		unsigned char *slot = me->buf + (size_t)root * slot_bytes();

		prepare(slot, M_START, len, root, me->rank == root);
		if (root % 2)
			ret = nicoff_group_broadcast_start_buf(me->grp, slot, len, root, &req[root]);
		else
			ret = nicoff_group_broadcast_start(me->grp, me->mr,
							   (uint64_t)root * slot_bytes(), len, root,
							   &req[root]);
		if (ret) {
			fail(sh, me->rank, M_START, len, root, "start", ret);
			break;
		}
	}
	while (!ret && (t = nicoff_bcast_test(req[0])) == 0)
		;
	if (!ret && t != 1)
		ret = fail(sh, me->rank, M_START, len, 0, "test", t);
	for (root = 0; root < me->n; root++) {
		int w;

		if (!req[root])
			continue;
		w = nicoff_bcast_wait(req[root]);
		if (!ret && w)
			ret = fail(sh, me->rank, M_START, len, root, "wait", w);
	}
	for (root = 0; root < me->n && !ret; root++)
		ret = check(sh, me->rank, me->buf + (size_t)root * slot_bytes(), M_START, len, root);
	return ret;
}

static int setup(struct shared *sh, struct member *me, const struct nicoff_member *tab,
		 uint32_t gid)
{
	struct nicoff_port_attr attr = { PORT_BASE + me->rank / NICS, 64, 64, 0 };
	int ret;

	ret = nicoff_device_open(me->rank % NICS, &me->dev);
	if (!ret)
		ret = nicoff_port_create(me->dev, &attr, &me->port);
	if (!ret) {
		/* A SEND to a port not yet open is refused: the host tree waits for all. */
		__atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < (uint32_t)me->n)
			usleep(1000);
		ret = nicoff_mr_reg(me->port, me->buf, (size_t)MAX_N * slot_bytes(),
				    NICOFF_ACCESS_LOCAL_WRITE, &me->mr);
	}
	if (!ret && me->n % 2) {
		struct nicoff_group_attr ga = { .algorithm = NICOFF_BARRIER_AUTO,
						.flags = NICOFF_GROUP_F_HOST_TRIALS };

		ret = nicoff_group_create_attr(me->port, tab, me->n, me->rank, gid, &ga,
					       &me->grp);
		/* A choice among the six, the same everywhere (each checks its own). */
		if (!ret && (nicoff_group_algorithm(me->grp) < 1 ||
			     nicoff_group_algorithm(me->grp) >= NICOFF_BARRIER_MAX))
			ret = -EPROTO;
	} else if (!ret) {
		ret = nicoff_group_create(me->port, tab, me->n, me->rank, gid,
					  NICOFF_BARRIER_DEFAULT, 0, &me->grp);
	}
	if (!ret)
		ret = nicoff_host_bcast_create(me->port, tab, me->n, me->rank, &me->hb);
	if (ret)
		snprintf(sh->why[me->rank], sizeof(sh->why[me->rank]), "setup: %d", ret);
	return ret;
}

/* One member's life; the exit code says how it went. */
static int member(struct shared *sh, int n, int rank, uint32_t gid)
{
	struct nicoff_member tab[MAX_N];
	struct member me = { .n = n, .rank = rank };
	int m, s, root, ret, r;

	for (r = 0; r < n; r++) {
		tab[r].card = r % NICS;
		tab[r].port = PORT_BASE + r / NICS;
	}
	me.buf = malloc((size_t)MAX_N * slot_bytes());
	if (!me.buf)
		return 9;
	ret = setup(sh, &me, tab, gid);
	for (m = 0; m < M_COUNT && !ret; m++) {
		for (s = 0; s < NSIZES && !ret; s++) {
			if (m == M_START) {
				ret = all_roots_nonblocking(sh, &me, sizes[s]);
				continue;
			}
			for (root = 0; root < n && !ret; root++)
				ret = one_blocking(sh, &me, m, sizes[s], root);
		}
	}
	/* The group's destruction holds a barrier: everyone is done with it. */
	r = nicoff_group_destroy(me.grp);
	if (!ret && r)
		ret = fail(sh, rank, 0, 0, 0, "destroy", r);
	nicoff_host_bcast_free(me.hb);
	nicoff_mr_dereg(me.mr);
	nicoff_port_destroy(me.port);
	nicoff_device_close(me.dev);
	free(me.buf);
	return ret ? 10 : 0;
}

static void run_ok(struct __test_metadata *_metadata, struct shared *sh, int n)
{
	/* Unique per run: a destroyed group lingers a while under its id. */
	uint32_t gid = ((uint32_t)getpid() & 0xfffff) << 8 | (uint32_t)n;
	uint64_t t0 = nt_now_ns();
	pid_t pids[MAX_N];
	bool ok[MAX_N];
	int r;

	memset(sh, 0, sizeof(*sh));
	fflush(NULL);
	for (r = 0; r < n; r++) {
		pids[r] = fork();
		if (!pids[r])
			_exit(member(sh, n, r, gid));
	}
	nt_reap_within(pids, n, t0, RUN_LIMIT_NS, ok);
	for (r = 0; r < n; r++) {
		if (!ok[r] && !sh->why[r][0])
			snprintf(sh->why[r], sizeof(sh->why[r]), "killed: another failed, or over %llu s",
				 RUN_LIMIT_NS / 1000000000ull);
		EXPECT_TRUE(ok[r]) TH_LOG("N %d rank %d: %s", n, r, sh->why[r]);
	}
	TH_LOG("N %d: %d methods x %d sizes x every root, %.2f s", n, M_COUNT, NSIZES,
	       (nt_now_ns() - t0) / 1e9);
}

/* What the members of a run share, mapped before they fork. */
FIXTURE(libbcast) {
	struct shared *sh;
};

FIXTURE_SETUP(libbcast)
{
	struct nicoff_query q;

	self->sh = mmap(NULL, sizeof(*self->sh), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->sh);
	ASSERT_EQ(0, nt_query_card(0, &q));
	if (q.num_cards < NICS)
		SKIP(return, "needs %d cards", NICS);
}

FIXTURE_TEARDOWN(libbcast)
{
	if (self->sh != MAP_FAILED)
		munmap(self->sh, sizeof(*self->sh));
}

TEST_F_TIMEOUT(libbcast, methods, 900)
{
	static const int ns[] = { 2, 3, 5 };
	unsigned int i;

	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		run_ok(_metadata, self->sh, ns[i]);
}

TEST_HARNESS_MAIN
