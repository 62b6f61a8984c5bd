// SPDX-License-Identifier: GPL-2.0
/*
 * Broadcasts run by the cards (NICOFF_OP_BCAST; firmware-sim/bcast.c)
 * between forked processes with a port each.  Contiguous groups place rank
 * r as nicoffrun does: card r % nics, port PORT_BASE + r / nics; scattered
 * groups take a table of cards (non-consecutive, several ports on one).
 *
 * Broadcast k of a run has root k % N (or one of a few roots spread over
 * the ranks) and a payload of its own (a pattern seeded by the group and
 * k); each member keeps up to `win` broadcasts posted, each in a slot of
 * its own, and checks when one completes that it is the next in order,
 * that its result is its length and, on a receiver, that the slot holds
 * the root's payload byte for byte and nothing past it changed.  A slot is
 * reused only after that check; at the end no completion is left over
 * (each broadcast completed exactly once).
 *
 * every_root_every_size	N = 1, 2, 3, 5, 8, 13: each root, 0 B to 4 MiB
 * sixty_four			64 processes, every root (8 B, 1500 B); three
 *				roots (0 B, 16 KiB + 1, 256 KiB)
 * scattered			members on non-consecutive cards, several
 *				ports on one card, ranks not in card order
 * back_to_back			10,000 broadcasts, rotating roots, 16 posted
 *				ahead, 4 channels: channels reused all along
 * under_faults			10% drop, 5% duplicate, 5% reorder, 1% corrupt
 * hw_off_mid_run		bcast_hw turned off (netlink, per card) and on
 *				(tunable) while broadcasts are in flight: no
 *				multicast while off, again once on, and no
 *				fail-over counted (it is no failure)
 * counters			bcast_mcasts moves with hardware broadcast,
 *				not with NICOFF_BCAST_F_P2P; NOCRC works
 * switch_buffer		the switch_buffer_bytes tunable: its range; 1 MiB
 *				broadcasts paced with 4 KiB, never with 1 GiB
 * dead_member			a member killed: the others' broadcasts fail
 *				with an error completion within a bound
 * size_mismatch		a member posting another length: -EMSGSIZE,
 *				nothing written, the others fail, no hang
 * bad_input			refusals at GROUP_CREATE and BCAST
 * late_root			a receiver posts 2 s before the root: a late
 *				but live root is not a dead one
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
#include "nicoff_nl.h"

#define PORT_BASE	16
#define MAX_N		64
#define TMO		60000	/* ms: one completion */
#define RING		64
#define GUARD		64	/* bytes past a payload that must stay untouched */
#define POISON		0xa5
#define DEATH_BOUND_NS	60000000000ull	/* a failure after a death: generous */

/* Memory every process of a run shares. */
struct shared {
	int32_t status[MAX_N];		/* a member's first error completion */
	uint32_t fail_k[MAX_N];		/* the broadcast it came for */
	uint64_t fail_ns[MAX_N];	/* when it came */
	uint32_t done[MAX_N];		/* broadcasts completed */
	uint64_t death_ns;		/* when the victim died */
	char why[MAX_N][128];		/* what went wrong */
};

struct run {
	int n;
	uint32_t card[MAX_N];
	uint32_t port[MAX_N];
	uint32_t gid;
	uint32_t channels;		/* GROUP_CREATE's bcast_channels */
	uint32_t flags;			/* and bcast_flags */
	int count;			/* broadcasts */
	int win;			/* posted ahead, each in its own slot */
	const size_t *sizes;		/* broadcast k: sizes[(k / roots) % nsizes] */
	int nsizes;
	int roots;			/* 0: every rank roots in turn; else so many, spread */
	int victim;			/* -1: none; else killed ... */
	int victim_after;		/* ... once it completed this many */
	int bad_rank;			/* -1: none; else posts bad_len ... */
	int bad_k;			/* ... for broadcast bad_k */
	size_t bad_len;
	bool expect_fail;		/* errors are the point: record them */
};

static uint32_t next_gid;

static void place_contiguous(struct run *rn, int n, int nics)
{
	int r;

	rn->n = n;
	for (r = 0; r < n; r++) {
		rn->card[r] = r % nics;
		rn->port[r] = PORT_BASE + r / nics;
	}
}

/* Ranks on the given cards; a card named twice gets a second port. */
static void place_on(struct run *rn, const uint32_t *cards, int n)
{
	int r, s;

	rn->n = n;
	for (r = 0; r < n; r++) {
		rn->card[r] = cards[r];
		rn->port[r] = PORT_BASE;
		for (s = 0; s < r; s++)
			if (cards[s] == cards[r])
				rn->port[r]++;
	}
}

static int nroots(const struct run *rn)
{
	return rn->roots ? rn->roots : rn->n;
}

/* Broadcast k's root: the ranks 0, n / roots, 2 n / roots, ... in turn. */
static int bcast_root(const struct run *rn, int k)
{
	return k % nroots(rn) * (rn->n / nroots(rn));
}

static size_t bcast_len(const struct run *rn, int k)
{
	return rn->sizes[(k / nroots(rn)) % rn->nsizes];
}

static size_t max_len(const struct run *rn)
{
	size_t m = rn->bad_rank >= 0 ? rn->bad_len : 0;
	int i;

	for (i = 0; i < rn->nsizes; i++)
		if (rn->sizes[i] > m)
			m = rn->sizes[i];
	return m;
}

static uint64_t payload_seed(const struct run *rn, int k)
{
	return ((uint64_t)rn->gid << 32) ^ (uint64_t)k * 0x9e3779b97f4a7c15ull;
}

static void prep_bcast(struct nicoff_cmd *c, uint32_t gid, uint32_t root, uint32_t mr,
		       uint64_t off, uint64_t len, uint64_t tag)
{
	memset(c, 0, sizeof(*c));
	c->opcode = NICOFF_OP_BCAST;
	c->tag = tag;
	c->bcast.group_id = gid;
	c->bcast.root = root;
	c->bcast.mr = mr;
	c->bcast.off = off;
	c->bcast.len = len;
}

static void prep_create(struct nicoff_cmd *c, uint32_t gid, uint32_t rank, uint32_t size,
			uint32_t mr, uint32_t channels, uint32_t flags, uint64_t tag)
{
	nicoff_prep_group_create(c, gid, rank, size, mr, 0, NICOFF_BARRIER_DEFAULT, 0, tag);
	c->group.bcast_channels = channels;
	c->group.bcast_flags = flags;
}

static int run_one(struct nt_port *p, const struct nicoff_cmd *c, struct nicoff_cqe *q)
{
	int ret = nt_run_one(p, c, q, TMO);

	return ret ? ret : q->status;
}

#define WHY(...) snprintf(sh->why[rank], sizeof(sh->why[rank]), __VA_ARGS__)

/* A receiver's slot after broadcast k: the payload, then the guard untouched. */
static int check_slot(const unsigned char *slot, const unsigned char *want, size_t len,
		      size_t room, size_t *at)
{
	size_t i, end = len + GUARD < room ? len + GUARD : room;

	if (memcmp(slot, want, len)) {
		for (i = 0; i < len && slot[i] == want[i]; i++)
			;
		*at = i;
		return -1;
	}
	for (i = len; i < end; i++) {
		if (slot[i] != POISON) {
			*at = i;
			return -1;
		}
	}
	return 0;
}

/* Every byte of the slot still the poison: nothing was written. */
static bool untouched(const unsigned char *slot, size_t room)
{
	size_t i;

	for (i = 0; i < room; i++)
		if (slot[i] != POISON)
			return false;
	return true;
}

/*
 * After a member's first error: the broadcasts it still has posted complete
 * in order (with an error, or with success if their data had arrived before
 * the group failed), never hang; one more must fail (a failed group refuses).
 */
static int drain_failed(struct shared *sh, const struct run *rn, int rank, struct nt_port *p,
			int posted, int completed, uint32_t mr)
{
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	int k, ret;

	for (k = completed + 1; k < posted; k++) {
		if (nt_wait_cqes(p, &q, 1, TMO) != 1) {
			WHY("broadcast %d after the failure: no completion", k);
			return 30;
		}
		if (q.tag != (uint64_t)k) {
			WHY("broadcast %d after the failure: tag %llu status %d", k,
			    (unsigned long long)q.tag, q.status);
			return 31;
		}
	}
	prep_bcast(&c, rn->gid, 0, mr, 0, bcast_len(rn, posted), posted);
	ret = run_one(p, &c, &q);
	if (!ret) {
		WHY("a broadcast of the failed group succeeded");
		return 32;
	}
	return 0;
}

/* One member's life; the exit code says how it went. */
static int member(struct shared *sh, const struct run *rn, int rank)
{
	const size_t maxlen = max_len(rn);
	const size_t room = maxlen + GUARD;
	struct nicoff_member tab[MAX_N];
	unsigned char *buf, *want;
	int posted = 0, completed = 0, r, ret;
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	struct nt_port p;
	uint32_t mt, mb;

	memset(&p, 0, sizeof(p));
	for (r = 0; r < rn->n; r++) {
		tab[r].card = rn->card[r];
		tab[r].port = rn->port[r];
	}
	buf = mmap(NULL, room * rn->win, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	want = malloc(maxlen + 1);
	if (buf == MAP_FAILED || !want) {
		WHY("out of memory");
		return 10;
	}
	ret = nt_port_open(&p, rn->card[rank], rn->port[rank], RING, RING);
	if (!ret)
		ret = nt_reg_mr(p.fd, tab, sizeof(tab), 0, &mt);
	if (!ret)
		ret = nt_reg_mr(p.fd, buf, room * rn->win, NICOFF_ACCESS_LOCAL_WRITE, &mb);
	if (ret) {
		WHY("port or region: %d", ret);
		return 11;
	}
	prep_create(&c, rn->gid, rank, rn->n, mt, rn->channels, rn->flags, 1u << 31);
	ret = run_one(&p, &c, &q);
	if (ret) {
		WHY("create: %d", ret);
		return 12;
	}
	while (completed < rn->count) {
		unsigned char *slot;
		size_t len;
		int root;

		if (rank == rn->victim && completed >= rn->victim_after) {
			sh->death_ns = nt_now_ns();
			raise(SIGKILL);
		}
		while (posted < rn->count && posted - completed < rn->win) {
			slot = buf + (size_t)(posted % rn->win) * room;
			len = bcast_len(rn, posted);
			if (rank == rn->bad_rank && posted == rn->bad_k)
				len = rn->bad_len;
			if (bcast_root(rn, posted) == rank)
				nt_fill_pattern(slot, len, payload_seed(rn, posted));
			else
				memset(slot, POISON, room);
			prep_bcast(&c, rn->gid, bcast_root(rn, posted), mb,
				   (uint64_t)(posted % rn->win) * room, len, posted);
			ret = nt_submit(&p, &c, 1);
			if (ret) {
				WHY("submit %d: %d", posted, ret);
				return 13;
			}
			posted++;
		}
		if (nt_wait_cqes(&p, &q, 1, TMO) != 1) {
			WHY("broadcast %d: no completion in %d ms (%d posted)", completed, TMO,
			    posted);
			return 14;
		}
		if (q.tag != (uint64_t)completed) {
			WHY("broadcast %d: completion of %llu instead", completed,
			    (unsigned long long)q.tag);
			return 15;
		}
		root = bcast_root(rn, completed);
		slot = buf + (size_t)(completed % rn->win) * room;
		len = rank == rn->bad_rank && completed == rn->bad_k ? rn->bad_len :
		      bcast_len(rn, completed);
		if (q.status) {
			sh->status[rank] = q.status;
			sh->fail_k[rank] = completed;
			sh->fail_ns[rank] = nt_now_ns();
			if (!rn->expect_fail) {
				WHY("broadcast %d (root %d, %zu B): status %d", completed, root,
				    len, q.status);
				return 16;
			}
			/* A failed receive wrote nothing: no partial copy. */
			if (root != rank && !untouched(slot, room)) {
				WHY("failed broadcast %d wrote into the buffer", completed);
				return 17;
			}
			ret = drain_failed(sh, rn, rank, &p, posted, completed, mb);
			if (ret)
				return ret;
			goto out;
		}
		if (q.result != len) {
			WHY("broadcast %d: result %llu, len %zu", completed,
			    (unsigned long long)q.result, len);
			return 18;
		}
		if (root != rank) {
			size_t at = 0;

			nt_fill_pattern(want, len, payload_seed(rn, completed));
			if (check_slot(slot, want, len, room, &at)) {
				WHY("broadcast %d (root %d, %zu B): wrong byte at %zu", completed,
				    root, len, at);
				return 19;
			}
		}
		completed++;
		__atomic_store_n(&sh->done[rank], completed, __ATOMIC_RELEASE);
	}
	/* Each broadcast completed once: nothing more arrives. */
	nt_sleep_ms(20);
	if (nt_cq_ready(&p)) {
		WHY("%u completions after the last broadcast", nt_cq_ready(&p));
		return 20;
	}
	/*
	 * A root's broadcast completes once sent, and a destroyed member
	 * serves no more data: destroy only when every member holds it all
	 * (Documentation/broadcast.md), as the library's Group does.
	 */
	nicoff_prep_barrier(&c, rn->gid, 1u << 29);
	ret = run_one(&p, &c, &q);
	if (ret) {
		WHY("barrier before destroying: %d", ret);
		return 22;
	}
out:
	nicoff_prep_group_destroy(&c, rn->gid, 1u << 30);
	ret = run_one(&p, &c, &q);
	nt_port_close(&p);
	munmap(buf, room * rn->win);
	free(want);
	return ret ? 21 : 0;
}

/* Called by the parent while the members run, until it returns false. */
typedef bool (*watch_fn)(struct __test_metadata *_metadata, struct shared *sh,
			 const struct run *rn);

/* Fork the members, wait for all; returns the shared memory (munmap it). */
static struct shared *run_group(struct __test_metadata *_metadata, const struct run *rn,
				int *codes, watch_fn watch)
{
	bool watching = watch != NULL;
	int r, left = rn->n;
	pid_t pids[MAX_N];
	struct shared *sh;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return NULL;
	fflush(NULL);
	for (r = 0; r < rn->n; r++) {
		pids[r] = fork();
		if (!pids[r])
			_exit(member(sh, rn, r));
	}
	for (r = 0; r < rn->n; r++) {
		codes[r] = -1;
		if (pids[r] < 0)
			left--;
	}
	/* Reap as they exit; the watch runs until it is done or nobody is left. */
	while (left) {
		int st = 0;
		pid_t pid = waitpid(-1, &st, watching ? WNOHANG : 0);

		if (pid < 0)
			break;
		if (!pid) {
			watching = watch(_metadata, sh, rn);
			nt_sleep_ms(2);
			continue;
		}
		for (r = 0; r < rn->n; r++) {
			if (pids[r] != pid)
				continue;
			codes[r] = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
			left--;
		}
	}
	return sh;
}

static void run_ok_watch(struct __test_metadata *_metadata, struct run *rn, watch_fn watch)
{
	int codes[MAX_N], r;
	struct shared *sh;
	uint64_t t0 = nt_now_ns();

	rn->gid = next_gid++;
	sh = run_group(_metadata, rn, codes, watch);
	ASSERT_NE(NULL, sh);
	for (r = 0; r < rn->n; r++) {
		EXPECT_EQ(0, codes[r]) TH_LOG("N %d rank %d (card %u port %u): %s", rn->n, r,
					       rn->card[r], rn->port[r], sh->why[r]);
		EXPECT_EQ((uint32_t)rn->count, sh->done[r]);
	}
	TH_LOG("N %2d: %d broadcasts, %d posted ahead, %.2f s", rn->n, rn->count, rn->win,
	       (nt_now_ns() - t0) / 1e9);
	munmap(sh, sizeof(*sh));
}

static void run_ok(struct __test_metadata *_metadata, struct run *rn)
{
	run_ok_watch(_metadata, rn, NULL);
}

static const size_t all_sizes[] = {
	0, 1, 7, 64, 1000, 4096, NICOFF_BCAST_EAGER_MAX - 1, NICOFF_BCAST_EAGER_MAX,
	NICOFF_BCAST_EAGER_MAX + 1, 65536, 1 << 20, 4 << 20,
};
#define NSIZES(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const size_t small_sizes[] = { 8, 0, 100, 4096, NICOFF_BCAST_EAGER_MAX, 3 };
static const size_t mixed_sizes[] = { 8, 1500, NICOFF_BCAST_EAGER_MAX + 1, 64, 65536, 0 };

static struct run base_run(int n, int count, int win, const size_t *sizes, int nsizes)
{
	struct run rn;

	memset(&rn, 0, sizeof(rn));
	place_contiguous(&rn, n, 8);
	rn.count = count;
	rn.win = win;
	rn.sizes = sizes;
	rn.nsizes = nsizes;
	rn.victim = -1;
	rn.bad_rank = -1;
	return rn;
}

/* Sum of one counter over every card; ~0 if one cannot be read. */
static uint64_t stat_sum(int stat)
{
	struct nicoff_query qy;
	uint64_t sum = 0, v;
	uint32_t i;

	if (nt_query_card(0, &qy))
		return ~0ull;
	for (i = 0; i < qy.num_cards; i++) {
		v = nt_card_stat(i, stat);
		if (v == ~0ull)
			return v;
		sum += v;
	}
	return sum;
}

/* Every test starts and ends with no faults and hardware broadcast on. */
FIXTURE(bcast) {
	int unused;
};

FIXTURE_SETUP(bcast)
{
	struct nicoff_query qy;

	ASSERT_EQ(0, nt_query_card(0, &qy));
	if (qy.num_cards < 8)
		SKIP(return, "needs 8 cards (nics=%u)", qy.num_cards);
	/* Each test is a process of its own: group ids unique per test. */
	next_gid = ((uint32_t)getpid() & 0xfffff) << 12;
	nt_set_faults(0, 0, 0, 0);
	nt_param_set("bcast_hw", 1);
}

FIXTURE_TEARDOWN(bcast)
{
	nt_set_faults(0, 0, 0, 0);
	nt_param_set("bcast_hw", 1);
	nt_param_set("bcast_channels", 16);
	nt_param_set("switch_buffer_bytes", 262144);
}

/* Every root with every size, one broadcast in flight (4 MiB slots). */
TEST_F_TIMEOUT(bcast, every_root_every_size, 600)
{
	static const int ns[] = { 1, 2, 3, 5, 8, 13 };
	unsigned int i;

	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		struct run rn = base_run(ns[i], ns[i] * NSIZES(all_sizes), 1, all_sizes,
					 NSIZES(all_sizes));

		run_ok(_metadata, &rn);
	}
}

TEST_F_TIMEOUT(bcast, sixty_four, 600)
{
	/* Larger sizes from a few roots only: 64 processes at TCG speed. */
	static const size_t big_sizes[] = { 0, NICOFF_BCAST_EAGER_MAX + 1, 256 << 10 };
	struct run rn = base_run(64, 64 * 2, 4, mixed_sizes, 2);

	run_ok(_metadata, &rn);
	rn = base_run(64, 3 * NSIZES(big_sizes), 2, big_sizes, NSIZES(big_sizes));
	rn.roots = 3;
	run_ok(_metadata, &rn);
}

TEST_F_TIMEOUT(bcast, scattered, 600)
{
	/* Non-consecutive cards; several ports on one card; ranks out of card order. */
	static const uint32_t gaps[] = { 0, 2, 5, 7 };
	static const uint32_t shared_cards[] = { 1, 1, 4, 6, 6, 6 };
	static const uint32_t shuffled[] = { 7, 3, 0, 3, 5, 1, 6, 2, 0 };
	struct run rn;

	rn = base_run(1, 0, 1, all_sizes, NSIZES(all_sizes));
	place_on(&rn, gaps, 4);
	rn.count = 4 * NSIZES(all_sizes);
	run_ok(_metadata, &rn);

	rn = base_run(1, 0, 4, mixed_sizes, NSIZES(mixed_sizes));
	place_on(&rn, shared_cards, 6);
	rn.count = 6 * NSIZES(mixed_sizes);
	run_ok(_metadata, &rn);

	rn = base_run(1, 0, 4, mixed_sizes, NSIZES(mixed_sizes));
	place_on(&rn, shuffled, 9);
	rn.count = 9 * NSIZES(mixed_sizes);
	run_ok(_metadata, &rn);
}

/*
 * 10,000 broadcasts from rotating roots, 16 posted ahead over 4 channels:
 * a channel is reused every fourth broadcast, so a payload overwritten
 * before a member read it would show.
 */
TEST_F_TIMEOUT(bcast, back_to_back, 900)
{
	struct run rn = base_run(8, 10000, 16, small_sizes, NSIZES(small_sizes));

	rn.channels = 4;
	run_ok(_metadata, &rn);
	/* The card's default channels, the smallest count, scattered members. */
	rn = base_run(5, 2000, 8, small_sizes, NSIZES(small_sizes));
	rn.channels = NICOFF_BCAST_MIN_CHANNELS;
	run_ok(_metadata, &rn);
}

/* 10% drop, 5% duplicates, 5% reordering, 1% corrupt */
#define FAULTS_ON	100000, 50000, 50000, 10000

TEST_F_TIMEOUT(bcast, under_faults, 900)
{
	static const uint32_t cards[] = { 0, 1, 2, 4, 5, 5, 7 };
	struct run rn;

	ASSERT_EQ(0, nt_set_faults(FAULTS_ON));
	rn = base_run(8, 400, 8, mixed_sizes, NSIZES(mixed_sizes));
	run_ok(_metadata, &rn);
	rn = base_run(8, 300, 8, small_sizes, NSIZES(small_sizes));
	rn.channels = 2;
	run_ok(_metadata, &rn);
	rn = base_run(1, 0, 4, mixed_sizes, NSIZES(mixed_sizes));
	place_on(&rn, cards, 7);
	rn.count = 7 * NSIZES(mixed_sizes) * 3;
	run_ok(_metadata, &rn);
	rn = base_run(5, 5 * NSIZES(all_sizes), 1, all_sizes, NSIZES(all_sizes));
	run_ok(_metadata, &rn);
	EXPECT_EQ(0, nt_set_faults(0, 0, 0, 0));
}

/*
 * The parent's watch in hw_off_mid_run: a third of the way, every card of
 * the group stops using the multicast (netlink, card by card); two thirds
 * of the way, the tunable turns it on again on every card.
 */
static int hw_phase;
static uint64_t hw_mcasts[2];	/* bcast_mcasts when it went off, and when on again */

static bool hw_flip(struct __test_metadata *_metadata, struct shared *sh, const struct run *rn)
{
	uint32_t done = __atomic_load_n(&sh->done[0], __ATOMIC_ACQUIRE);
	struct nt_card_stats st;
	struct nt_nl nl;
	int r;

	if (hw_phase == 0 && done >= (uint32_t)rn->count / 3) {
		hw_phase = 1;
		EXPECT_EQ(0, nt_nl_connect(&nl));
		if (nl.fd < 0)
			return false;
		for (r = 0; r < rn->n; r++) {
			EXPECT_EQ(0, nt_nl_card_set_bcast_hw(&nl, rn->card[r], 0));
			EXPECT_EQ(0, nt_nl_card(&nl, rn->card[r], &st));
			EXPECT_EQ(0, st.bcast_hw);
		}
		nt_nl_close(&nl);
		hw_mcasts[0] = stat_sum(NICOFF_NL_STAT_BCAST_MCASTS);
	} else if (hw_phase == 1 && done >= (uint32_t)rn->count * 2 / 3) {
		hw_mcasts[1] = stat_sum(NICOFF_NL_STAT_BCAST_MCASTS);
		EXPECT_EQ(0, nt_param_set("bcast_hw", 1));
		hw_phase = 2;
	}
	return hw_phase < 2 && done < (uint32_t)rn->count;
}

TEST_F_TIMEOUT(bcast, hw_off_mid_run, 900)
{
	static const size_t sizes[] = { 8, 65536, 2000, NICOFF_BCAST_EAGER_MAX + 1, 0 };
	uint64_t fo0 = stat_sum(NICOFF_NL_STAT_BCAST_FAILOVERS), fo1, m1;
	struct run rn = base_run(8, 3000, 8, sizes, NSIZES(sizes));

	hw_phase = 0;
	run_ok_watch(_metadata, &rn, hw_flip);
	EXPECT_EQ(2, hw_phase);
	fo1 = stat_sum(NICOFF_NL_STAT_BCAST_FAILOVERS);
	m1 = stat_sum(NICOFF_NL_STAT_BCAST_MCASTS);
	TH_LOG("bcast_failovers %llu -> %llu, bcast_mcasts %llu, %llu, %llu",
	       (unsigned long long)fo0, (unsigned long long)fo1, (unsigned long long)hw_mcasts[0],
	       (unsigned long long)hw_mcasts[1], (unsigned long long)m1);
	/*
	 * Turning bcast_hw off is no failure of the multicast: no fail-over is
	 * counted, none went out while it was off on every card, and the
	 * group, not fallen back for good, used it again once it was on.
	 */
	ASSERT_NE(~0ull, fo0);
	EXPECT_EQ(fo0, fo1);
	ASSERT_NE(~0ull, hw_mcasts[0]);
	EXPECT_EQ(hw_mcasts[0], hw_mcasts[1]);
	EXPECT_LT(hw_mcasts[1], m1);

	/* Off from the start, by the tunable: the tree alone, under faults too. */
	ASSERT_EQ(0, nt_param_set("bcast_hw", 0));
	rn = base_run(8, 400, 8, sizes, NSIZES(sizes));
	run_ok(_metadata, &rn);
	ASSERT_EQ(0, nt_set_faults(FAULTS_ON));
	rn = base_run(6, 300, 8, sizes, NSIZES(sizes));
	run_ok(_metadata, &rn);
	EXPECT_EQ(0, nt_set_faults(0, 0, 0, 0));
}

/* The multicast is counted when it is used, and only then. */
TEST_F_TIMEOUT(bcast, counters, 300)
{
	uint64_t m0, m1, p0, p1;
	struct run rn;

	m0 = stat_sum(NICOFF_NL_STAT_BCAST_MCASTS);
	p0 = stat_sum(NICOFF_NL_STAT_BCAST_PKTS);
	rn = base_run(8, 200, 8, mixed_sizes, NSIZES(mixed_sizes));
	rn.flags = NICOFF_BCAST_F_P2P;
	run_ok(_metadata, &rn);
	m1 = stat_sum(NICOFF_NL_STAT_BCAST_MCASTS);
	p1 = stat_sum(NICOFF_NL_STAT_BCAST_PKTS);
	ASSERT_NE(~0ull, m1);
	EXPECT_EQ(m0, m1) TH_LOG("point-to-point group: %llu multicasts",
				 (unsigned long long)(m1 - m0));
	EXPECT_LT(p0, p1);

	rn = base_run(8, 200, 8, mixed_sizes, NSIZES(mixed_sizes));
	run_ok(_metadata, &rn);
	m0 = stat_sum(NICOFF_NL_STAT_BCAST_MCASTS);
	EXPECT_LT(m1, m0) TH_LOG("no multicast with bcast_hw on");

	/* With bcast_hw off, no multicast either. */
	ASSERT_EQ(0, nt_param_set("bcast_hw", 0));
	rn = base_run(8, 100, 8, mixed_sizes, NSIZES(mixed_sizes));
	run_ok(_metadata, &rn);
	m1 = stat_sum(NICOFF_NL_STAT_BCAST_MCASTS);
	EXPECT_EQ(m0, m1);
	ASSERT_EQ(0, nt_param_set("bcast_hw", 1));

	/* No CRC: the same payloads, checked the same way. */
	rn = base_run(5, 100, 8, mixed_sizes, NSIZES(mixed_sizes));
	rn.flags = NICOFF_BCAST_F_NOCRC;
	run_ok(_metadata, &rn);
	/* The module's default channels come from the tunable. */
	ASSERT_EQ(0, nt_param_set("bcast_channels", 2));
	rn = base_run(8, 300, 8, small_sizes, NSIZES(small_sizes));
	run_ok(_metadata, &rn);
	EXPECT_EQ(0, nt_param_set("bcast_channels", 16));
}

/*
 * The switch's output buffer is a tunable: refused outside 4 KiB to 1 GiB;
 * the same 1 MiB broadcasts arrive whole with 1 GiB and with 4 KiB, their
 * roots never held back (bcast_paced) with 1 GiB and held back with 4 KiB.
 */
static uint64_t paced_run(struct __test_metadata *_metadata, unsigned long bytes)
{
	static const size_t sizes[] = { 1 << 20, 65536, 8 };
	struct run rn = base_run(8, 24, 2, sizes, NSIZES(sizes));
	uint64_t p0, p1;

	if (nt_param_set("switch_buffer_bytes", bytes))
		return ~0ull;
	p0 = stat_sum(NICOFF_NL_STAT_BCAST_PACED);
	run_ok(_metadata, &rn);
	p1 = stat_sum(NICOFF_NL_STAT_BCAST_PACED);
	return p0 == ~0ull || p1 == ~0ull ? ~0ull : p1 - p0;
}

TEST_F_TIMEOUT(bcast, switch_buffer, 300)
{
	uint64_t big, small;
	unsigned long v;

	EXPECT_NE(0, nt_param_set("switch_buffer_bytes", 4095));
	EXPECT_NE(0, nt_param_set("switch_buffer_bytes", (1ul << 30) + 1));
	ASSERT_EQ(0, nt_param_get("switch_buffer_bytes", &v));
	EXPECT_EQ(262144, v);
	big = paced_run(_metadata, 1ul << 30);
	small = paced_run(_metadata, 4096);
	ASSERT_NE(~0ull, big);
	ASSERT_NE(~0ull, small);
	TH_LOG("bcast_paced: %llu with 1 GiB, %llu with 4 KiB", (unsigned long long)big,
	       (unsigned long long)small);
	EXPECT_EQ(0, big);
	EXPECT_LT(0, small);
	EXPECT_EQ(0, nt_param_set("switch_buffer_bytes", 262144));
}

/*
 * A member killed after 10 broadcasts: every other member's broadcasts
 * fail (-ECONNRESET or -ETIMEDOUT) within the bound, none hangs, and the
 * failed group refuses more.  Once the victim is the next root, once not.
 */
TEST_F_TIMEOUT(bcast, dead_member, 600)
{
	static const int victims[] = { 3, 5 };
	unsigned int v;

	for (v = 0; v < sizeof(victims) / sizeof(victims[0]); v++) {
		struct run rn = base_run(8, 500, 4, small_sizes, NSIZES(small_sizes));
		int codes[MAX_N], r;
		struct shared *sh;

		rn.gid = next_gid++;
		rn.victim = victims[v];
		rn.victim_after = 11;
		rn.expect_fail = true;
		sh = run_group(_metadata, &rn, codes, NULL);
		ASSERT_NE(NULL, sh);
		for (r = 0; r < rn.n; r++) {
			if (r == rn.victim) {
				EXPECT_EQ(128 + SIGKILL, codes[r]);
				continue;
			}
			EXPECT_EQ(0, codes[r]) TH_LOG("victim %d rank %d: %s", rn.victim, r,
						      sh->why[r]);
			EXPECT_TRUE(sh->status[r] == -ECONNRESET || sh->status[r] == -ETIMEDOUT)
				TH_LOG("victim %d rank %d: status %d at %u", rn.victim, r,
				       sh->status[r], sh->fail_k[r]);
			EXPECT_LE((uint32_t)rn.victim_after, sh->done[r]);
			EXPECT_LT(sh->fail_ns[r] - sh->death_ns, DEATH_BOUND_NS)
				TH_LOG("victim %d rank %d failed %.3f s after the death", rn.victim,
				       r, (sh->fail_ns[r] - sh->death_ns) / 1e9);
			TH_LOG("victim %d rank %d: %d after %.3f s at broadcast %u", rn.victim, r,
			       sh->status[r], (sh->fail_ns[r] - sh->death_ns) / 1e9,
			       sh->fail_k[r]);
		}
		munmap(sh, sizeof(*sh));
	}
}

/*
 * A member posting a length other than the root's gets -EMSGSIZE with
 * nothing written; the others' broadcasts fail from there on (the root's
 * eager one may have completed already; a member still on an earlier one
 * gets -ECONNRESET there); nobody hangs.
 */
TEST_F_TIMEOUT(bcast, size_mismatch, 600)
{
	static const struct {
		size_t len, bad_len;
	} cases[] = {
		{ 100, 50 },
		{ 50, 100 },
		{ 65536, 32768 },
		{ 32768, 65536 },
		{ 8, NICOFF_BCAST_EAGER_MAX + 8 },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct run rn = base_run(3, 12, 1, &cases[i].len, 1);
		int codes[MAX_N], r;
		struct shared *sh;

		rn.gid = next_gid++;
		rn.bad_rank = 2;
		rn.bad_k = 6;	/* root 0 */
		rn.bad_len = cases[i].bad_len;
		rn.expect_fail = true;
		sh = run_group(_metadata, &rn, codes, NULL);
		ASSERT_NE(NULL, sh);
		for (r = 0; r < rn.n; r++) {
			EXPECT_EQ(0, codes[r]) TH_LOG("case %u rank %d: %s", i, r, sh->why[r]);
			EXPECT_NE(0, sh->status[r]) TH_LOG("case %u rank %d never failed", i, r);
			if (r == rn.bad_rank) {
				EXPECT_EQ(-EMSGSIZE, sh->status[r]);
				EXPECT_EQ((uint32_t)rn.bad_k, sh->fail_k[r]);
			} else if (sh->status[r]) {
				EXPECT_TRUE(sh->status[r] == -ECONNRESET ||
					    sh->status[r] == -EMSGSIZE)
					TH_LOG("case %u rank %d: %d", i, r, sh->status[r]);
				/*
				 * Before bad_k only the group's failure, which
				 * reaches a member its host ran late while it is
				 * still on an earlier broadcast: never the size
				 * check of a broadcast it posted rightly.
				 */
				if (sh->fail_k[r] < (uint32_t)rn.bad_k)
					EXPECT_EQ(-ECONNRESET, sh->status[r])
						TH_LOG("case %u rank %d: %d at broadcast %u", i, r,
						       sh->status[r], sh->fail_k[r]);
			}
		}
		munmap(sh, sizeof(*sh));
	}
}

static int bcast_status(struct nt_port *p, uint32_t gid, uint32_t root, uint32_t mr,
			uint64_t off, uint64_t len)
{
	struct nicoff_cmd c;
	struct nicoff_cqe q;

	int ret;

	prep_bcast(&c, gid, root, mr, off, len, 7);
	ret = run_one(p, &c, &q);
	return ret || q.result == len ? ret : -EIO;
}

static int create_status(struct nt_port *p, uint32_t gid, uint32_t mr, uint32_t channels,
			 uint32_t flags, uint64_t reserved)
{
	struct nicoff_cmd c;
	struct nicoff_cqe q;

	prep_create(&c, gid, 0, 1, mr, channels, flags, 9);
	c.group.reserved = reserved;
	return run_one(p, &c, &q);
}

static int destroy_status(struct nt_port *p, uint32_t gid)
{
	struct nicoff_cmd c;
	struct nicoff_cqe q;

	nicoff_prep_group_destroy(&c, gid, 10);
	return run_one(p, &c, &q);
}

TEST_F_TIMEOUT(bcast, bad_input, 120)
{
	struct nicoff_member one[1] = { { 0, 40 } };
	uint32_t mo, mb, mro;
	unsigned char *buf;
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	struct nt_port p;
	unsigned long v;

	memset(&p, 0, sizeof(p));
	buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, nt_port_open(&p, 0, 40, RING, RING));
	ASSERT_EQ(0, nt_reg_mr(p.fd, one, sizeof(one), 0, &mo));
	ASSERT_EQ(0, nt_reg_mr(p.fd, buf, 4096, NICOFF_ACCESS_LOCAL_WRITE, &mb));
	ASSERT_EQ(0, nt_reg_mr(p.fd, buf + 4096, 4096, 0, &mro));

	/* Channels outside 2-64 (0 is the card's default), unknown flags, reserved. */
	EXPECT_EQ(-EINVAL, create_status(&p, 1, mo, 1, 0, 0));
	EXPECT_EQ(-EINVAL, create_status(&p, 1, mo, 65, 0, 0));
	EXPECT_EQ(-EINVAL, create_status(&p, 1, mo, ~0u, 0, 0));
	EXPECT_EQ(-EINVAL, create_status(&p, 1, mo, 0, NICOFF_BCAST_F_ALL + 1, 0));
	EXPECT_EQ(-EINVAL, create_status(&p, 1, mo, 0, 1u << 31, 0));
	EXPECT_EQ(-EINVAL, create_status(&p, 1, mo, 0, 0, 1));
	EXPECT_EQ(-ENOENT, bcast_status(&p, 1, 0, mb, 0, 8));
	/* The tunable refuses what GROUP_CREATE refuses. */
	EXPECT_NE(0, nt_param_set("bcast_channels", 1));
	EXPECT_NE(0, nt_param_set("bcast_channels", 65));
	EXPECT_NE(0, nt_param_set("bcast_channels", 0));
	ASSERT_EQ(0, nt_param_get("bcast_channels", &v));
	EXPECT_EQ(16ul, v);

	ASSERT_EQ(0, create_status(&p, 2, mo, NICOFF_BCAST_MIN_CHANNELS, 0, 0));
	ASSERT_EQ(0, destroy_status(&p, 2));
	ASSERT_EQ(0, create_status(&p, 3, mo, NICOFF_BCAST_MAX_CHANNELS, NICOFF_BCAST_F_ALL, 0));
	ASSERT_EQ(0, destroy_status(&p, 3));

	ASSERT_EQ(0, create_status(&p, 4, mo, 0, 0, 0));
	/* Root out of range, reserved fields, regions missing or too small. */
	EXPECT_EQ(-EINVAL, bcast_status(&p, 4, 1, mb, 0, 8));
	EXPECT_EQ(-EINVAL, bcast_status(&p, 4, ~0u, mb, 0, 8));
	prep_bcast(&c, 4, 0, mb, 0, 8, 7);
	c.bcast.reserved0 = 1;
	EXPECT_EQ(-EINVAL, run_one(&p, &c, &q));
	prep_bcast(&c, 4, 0, mb, 0, 8, 7);
	c.bcast.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, run_one(&p, &c, &q));
	EXPECT_EQ(-ENOENT, bcast_status(&p, 4, 0, 12345, 0, 8));
	EXPECT_EQ(-ERANGE, bcast_status(&p, 4, 0, mb, 4090, 8));
	EXPECT_EQ(-ERANGE, bcast_status(&p, 4, 0, mb, 4096, 1));
	EXPECT_EQ(-ERANGE, bcast_status(&p, 4, 0, mb, 0, 4097));
	EXPECT_EQ(-ERANGE, bcast_status(&p, 4, 0, mb, ~0ull - 3, 8));
	/* Refusals do not count: the group still broadcasts. */
	EXPECT_EQ(0, bcast_status(&p, 4, 0, mb, 0, 4096));
	/* The root only reads: a region without LOCAL_WRITE will do for it. */
	EXPECT_EQ(0, bcast_status(&p, 4, 0, mro, 0, 64));
	EXPECT_EQ(0, destroy_status(&p, 4));
	EXPECT_EQ(-ENOENT, bcast_status(&p, 4, 0, mb, 0, 8));
	nt_port_close(&p);
	munmap(buf, 8192);
}

/*
 * Member @rank of the two-member group @gid of @tab: open the port @tab
 * gives it (*p zeroed first), register the table and create the group.
 * 0, or 1 with the failed check reported.
 */
static int pair_join(struct nt_port *p, const struct nicoff_member *tab, uint32_t rank,
		     uint32_t gid)
{
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	uint32_t mt;

	memset(p, 0, sizeof(*p));
	NT_CK(!nt_port_open(p, tab[rank].card, tab[rank].port, RING, RING));
	NT_CK(!nt_reg_mr(p->fd, tab, 2 * sizeof(*tab), 0, &mt));
	prep_create(&c, gid, rank, 2, mt, 0, 0, 1);
	NT_CK(!run_one(p, &c, &q));
	return 0;
}

/*
 * Then: broadcast @len bytes of region @mb from rank 0, check that @buf
 * holds @want, destroy the group and close the port.
 */
static int pair_bcast_leave(struct nt_port *p, uint32_t gid, uint32_t mb, const void *buf,
			    const void *want, size_t len)
{
	NT_CK(!bcast_status(p, gid, 0, mb, 0, len));
	NT_CK(!memcmp(buf, want, len));
	NT_CK(!destroy_status(p, gid));
	nt_port_close(p);
	return 0;
}

/*
 * A receiver's region without LOCAL_WRITE is refused with -EACCES, and
 * the refusal does not count: the same broadcast then succeeds.
 */
static int noaccess_member(int rank)
{
	struct nicoff_member tab[2] = { { 0, 41 }, { 1, 41 } };
	unsigned char *buf, want[256];
	struct nt_port p;
	uint32_t mb, mro;

	buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	NT_CK(buf != MAP_FAILED);
	NT_CK(!pair_join(&p, tab, rank, 77));
	NT_CK(!nt_reg_mr(p.fd, buf, 4096, NICOFF_ACCESS_LOCAL_WRITE, &mb));
	NT_CK(!nt_reg_mr(p.fd, buf + 4096, 4096, 0, &mro));
	nt_fill_pattern(want, sizeof(want), 1234);
	if (rank == 0) {
		memcpy(buf, want, sizeof(want));
	} else {
		memset(buf, POISON, 8192);
		NT_CK(bcast_status(&p, 77, 0, mro, 0, sizeof(want)) == -EACCES);
	}
	return pair_bcast_leave(&p, 77, mb, buf, want, sizeof(want));
}

TEST_F_TIMEOUT(bcast, receiver_without_write, 120)
{
	EXPECT_EQ(0, nt_run_pair(noaccess_member));
}

/* Member @rank of a two-member group; the root posts its broadcast after 2 s. */
static int late_member(int rank)
{
	struct nicoff_member tab[2] = { { 2, 42 }, { 3, 42 } };
	unsigned char buf[512], want[512];
	struct nt_port p;
	uint32_t mb;

	NT_CK(!pair_join(&p, tab, rank, 78));
	NT_CK(!nt_reg_mr(p.fd, buf, sizeof(buf), NICOFF_ACCESS_LOCAL_WRITE, &mb));
	nt_fill_pattern(want, sizeof(want), 99);
	memcpy(buf, want, sizeof(want));
	if (rank == 0)
		nt_sleep_ms(2000);
	else
		memset(buf, POISON, sizeof(buf));
	return pair_bcast_leave(&p, 78, mb, buf, want, sizeof(want));
}

TEST_F_TIMEOUT(bcast, late_root, 120)
{
	EXPECT_EQ(0, nt_run_pair(late_member));
}

TEST_HARNESS_MAIN
