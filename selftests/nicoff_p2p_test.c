// SPDX-License-Identifier: GPL-2.0
/*
 * Point-to-point messaging between cards (firmware-sim/README.md,
 * "Protocol"; include/uapi/nicoff.h): SEND/RECV and PUT/GET, mostly between
 * two processes (fork) with a port each on cards 0 and 1.
 *
 * send_recv_sizes, put_get_sizes (and _under_faults)
 *	1 B, mtu-1, mtu, mtu+1, 64 KiB, 1 MiB and 4 MiB arrive byte-exact, both
 *	ways, with guard bytes around every buffer untouched
 * streams_clean, streams_under_faults, put_get_under_faults
 *	300 sequence-numbered messages each way, back to back, the first 100
 *	receives posted ahead and the rest late (the unexpected path): each
 *	message exactly once, in order, every byte right; then the cards'
 *	counters: tx - drops + dups == rx + crc_errors per direction,
 *	crc_errors == corrupts, fault counts within 6 sigma of their rates
 *	(faults: 10% drop, 5% dup, 5% reorder, 1% corrupt, global tunables)
 * tag_matching, fan_in
 *	masks, NICOFF_ANY, source card/port filters, posting order, the oldest
 *	compatible unexpected message; two senders on two cards into one port
 * bad_input, remote_access_errors, recv_buffer_too_small, zero_length
 *	error completions on the initiator (-EINVAL, -EMSGSIZE, -ENOENT,
 *	-ERANGE, -EACCES, -ECONNREFUSED), nothing written anywhere, and
 *	NICOFF_OP_REMOTE_ACCESS_ERROR on the target for its refusals
 * dead_peer_port_closed, peer_killed_mid_send, dead_peer_never_receives,
 * receiver_not_ready, link_down_times_out
 *	a closed port refuses at once; a receiver out of unexpected-message
 *	room fails that message with -ENOBUFS, a link that drops everything
 *	(per-card faults over netlink) every operation with -ETIMEDOUT, after
 *	the retry budget computed from rto_usecs and max_retries, no earlier
 *	and not much later; a receiver that becomes ready in time gets
 *	everything; the connection recovers afterwards
 * same_card, dereg_under_transfer
 *	two ports of one card; regions deregistered under a get, a put, a
 *	send and a posted receive
 * other_port_behind_rnr
 *	a port refusing messages (receiver not ready) does not hurt another
 *	port of its card: that one gets its message within a few round
 *	trips, the refused one fails alone with -ENOBUFS after the budget
 *
 * Cards' counters and the per-card fault override go over the "nicoff"
 * generic netlink family (raw netlink here, no libnl).  Every test starts
 * and ends with all faults at 0 and cards 0-2 following the global ones.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "kselftest_harness.h"
#include "nicoff_nl.h"
#include "nicoff_util.h"

#define TMO		20000	/* ms: one completion, one handshake */
#define CHILD_TMO	120000	/* ms: a child's whole life */
#define GUARD		0xee	/* what untouched receive memory holds */
#define CARD_A		0	/* the parent's card */
#define CARD_B		1	/* the child's card */
#define NSIZES		7

/* Firmware constants the module does not expose (firmware-sim/card.c). */
#define FW_MAX_MSG	(64ull << 20)	/* fw_config_default(): max_msg */
#define FW_RTO_MAX_US	50000ull	/* fw_config_default(): rto_max_ns */

/* Fault mix of the fault tests, parts per million. */
#define F_DROP		100000
#define F_DUP		50000
#define F_CORRUPT	10000
#define F_REORDER	50000
#define F_DELAY_US	200	/* how long a reordered packet is held back */

static const char *const fault_params[] = {
	"fault_drop_ppm", "fault_dup_ppm", "fault_corrupt_ppm", "fault_reorder_ppm",
	"fault_delay_ppm",
};

/* -------------------------------------------------------------- faults -- */

static int set_faults(unsigned long drop, unsigned long dup, unsigned long corrupt,
		      unsigned long reorder)
{
	int ret = 0;

	ret |= nt_param_set("fault_drop_ppm", drop);
	ret |= nt_param_set("fault_dup_ppm", dup);
	ret |= nt_param_set("fault_corrupt_ppm", corrupt);
	ret |= nt_param_set("fault_reorder_ppm", reorder);
	ret |= nt_param_set("fault_delay_ppm", 0);
	return ret;
}

static int clear_faults(void)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < sizeof(fault_params) / sizeof(fault_params[0]); i++)
		ret |= nt_param_set(fault_params[i], 0);
	return ret;
}

/* -1 if buf[0, len) holds the pattern of seed, else the first bad offset. */
static long diff_pattern(const void *buf, size_t len, uint64_t seed)
{
	unsigned char *want = malloc(len ? len : 1);
	const unsigned char *b = buf;
	long bad = -1;
	size_t i;

	if (!want)
		return 0;
	nt_fill_pattern(want, len, seed);
	if (memcmp(b, want, len)) {
		for (i = 0; i < len && bad < 0; i++)
			if (b[i] != want[i])
				bad = i;
	}
	free(want);
	return bad;
}

static long diff_byte(const void *buf, size_t len, unsigned char v)
{
	const unsigned char *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != v)
			return i;
	return -1;
}

/* ------------------------------------------------------------ children -- */

/* A child and the two pipes to it: down (parent -> child), up (child -> parent). */
struct chan {
	int down[2];
	int up[2];
	pid_t pid;
};

/* What the two sides tell each other. */
struct hello {
	uint32_t card;
	uint32_t port;
	uint32_t port2;
	uint32_t rkey[5];
	uint64_t v[4];
};

/*
 * The messages are far below PIPE_BUF, so a pipe takes each one whole in
 * one write: 0, or -1 on error (a short write would be one too).
 */
static int xwrite(int fd, const void *buf, size_t len)
{
	ssize_t n;

	do
		n = write(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : -1;
}

/* Read exactly len bytes within ms; 0, or -1 on timeout, EOF or error. */
static int xread(int fd, void *buf, size_t len, int ms)
{
	uint64_t deadline = nt_now_ns() + (uint64_t)ms * 1000000ull;
	char *b = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = nt_now_ns();
		ssize_t n;

		if (now >= deadline)
			return -1;
		n = poll(&pfd, 1, (int)((deadline - now) / 1000000ull) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			continue;
		n = read(fd, b, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b += n;
		len -= n;
	}
	return 0;
}

/* Child side of the pipes. */
static int to_parent(struct chan *ch, const void *b, size_t n)
{
	return xwrite(ch->up[1], b, n);
}

static int from_parent(struct chan *ch, void *b, size_t n, int ms)
{
	return xread(ch->down[0], b, n, ms);
}

/* Parent side. */
static int to_child(struct chan *ch, const void *b, size_t n)
{
	return xwrite(ch->down[1], b, n);
}

static int from_child(struct chan *ch, void *b, size_t n, int ms)
{
	return xread(ch->up[0], b, n, ms);
}

static int token_to_child(struct chan *ch)
{
	return to_child(ch, "t", 1);
}

static int token_from_parent(struct chan *ch, int ms)
{
	char c;

	return from_parent(ch, &c, 1, ms);
}

static int token_to_parent(struct chan *ch)
{
	return to_parent(ch, "t", 1);
}

static int token_from_child(struct chan *ch, int ms)
{
	char c;

	return from_child(ch, &c, 1, ms);
}

/*
 * Fork a child running fn(ch, arg); its return value is its exit status.
 * When the parent goes away (an ASSERT), the child's pipe reads fail and it
 * exits too.
 */
static pid_t spawn(struct chan *ch, int (*fn)(struct chan *, void *), void *arg)
{
	pid_t pid;

	if (pipe(ch->down) || pipe(ch->up))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(ch->down[1]);
		close(ch->up[0]);
		_exit(fn(ch, arg));
	}
	close(ch->down[0]);
	close(ch->up[1]);
	ch->pid = pid;
	return pid;
}

/* The child's exit status, or -1 if it had to be killed after ms. */
static int wait_child(pid_t pid, int ms)
{
	uint64_t deadline = nt_now_ns() + (uint64_t)ms * 1000000ull;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (r < 0)
			return -2;
		if (nt_now_ns() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		nt_sleep_ms(5);
	}
}

/* Every test ends its child so: reap it (killed after CHILD_TMO), close its pipes. */
static int end_child(struct chan *ch)
{
	int st = wait_child(ch->pid, CHILD_TMO);

	close(ch->down[1]);
	close(ch->up[0]);
	return st;
}

/*
 * Checks in a child, or in a helper both sides use: report on stderr (the
 * parent's TAP shows it) and return 1, the child's exit status.
 */
#define CK(cond)                                                                       \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "# %s:%d: check failed: %s\n", __func__,        \
				__LINE__, #cond);                                      \
			return 1;                                                      \
		}                                                                      \
	} while (0)

#define CKEQ(want, got)                                                                \
	do {                                                                           \
		long long _w = (long long)(want), _g = (long long)(got);               \
		if (_w != _g) {                                                        \
			fprintf(stderr, "# %s:%d: %s == %s: want %lld, got %lld\n",       \
				__func__, __LINE__, #want, #got, _w, _g);              \
			return 1;                                                      \
		}                                                                      \
	} while (0)

/* ------------------------------------------------------------ helpers -- */

static int wait1(struct nt_port *p, struct nicoff_cqe *cqe, int ms)
{
	return nt_wait_cqes(p, cqe, 1, ms) == 1 ? 0 : -ETIMEDOUT;
}

/* Until the card has taken every posted command (so receives are posted). */
static int wait_consumed(struct nt_port *p, int ms)
{
	uint64_t deadline = nt_now_ns() + (uint64_t)ms * 1000000ull;

	while (nt_cmd_pending(p)) {
		if (nt_now_ns() >= deadline)
			return -ETIMEDOUT;
		nt_sleep_ms(1);
	}
	return 0;
}

/* A child's port on card B (rings of @entries) and a region @r on it. */
static int child_port(struct nt_port *p, uint32_t entries, struct nt_region *r, size_t len,
		      uint32_t access, int fill)
{
	CKEQ(0, nt_port_open(p, CARD_B, NICOFF_PORT_ANY, entries, entries));
	CKEQ(0, nt_region_new(p, r, len, access, fill));
	return 0;
}

/* Tell the parent where the child's port on card B is, and @rkey. */
static int tell_port(struct chan *ch, const struct nt_port *p, uint32_t rkey)
{
	struct hello me = { .card = CARD_B, .port = p->po.port, .rkey = { rkey } };

	return to_parent(ch, &me, sizeof(me));
}

/*
 * The parent's start: @fn(@arg) running in a child, a port on card A (rings
 * of @entries) and a region @s on it to send from.
 */
static void parent_port(struct __test_metadata *_metadata, struct chan *ch,
			int (*fn)(struct chan *, void *), void *arg, struct nt_port *p,
			uint32_t entries, struct nt_region *s, size_t len)
{
	ASSERT_LT(0, spawn(ch, fn, arg));
	ASSERT_EQ(0, nt_port_open(p, CARD_A, NICOFF_PORT_ANY, entries, entries));
	ASSERT_EQ(0, nt_region_new(p, s, len, 0, 0));
}

/* Run @c on @p: it completes within TMO (else the test stops here), successfully. */
static void run_ok(struct __test_metadata *_metadata, struct nt_port *p, const struct nicoff_cmd *c,
		   struct nicoff_cqe *cqe)
{
	ASSERT_EQ(0, nt_run_one(p, c, cqe, TMO));
	EXPECT_EQ(0, cqe->status);
}

/* No completion shows up within ms. */
static int cq_stays_empty(struct nt_port *p, int ms)
{
	struct pollfd pfd = { .fd = p->fd, .events = POLLIN };

	poll(&pfd, 1, ms);
	return nt_cq_ready(p) == 0;
}

static size_t round_page(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

/* The test's size classes and a layout with a guard page after each. */
struct sizes {
	size_t size[NSIZES];
	size_t off[NSIZES];
	size_t total;
};

static void sizes_init(struct sizes *s, unsigned long mtu, size_t lead)
{
	const size_t sz[NSIZES] = { 1, mtu - 1, mtu, mtu + 1, 64 << 10, 1 << 20, 4 << 20 };
	size_t off = 0;
	int i;

	for (i = 0; i < NSIZES; i++) {
		s->size[i] = sz[i];
		s->off[i] = off;
		off += round_page(lead + sz[i]) + 4096;
	}
	s->total = off;
}

/* Fixture state the children also read (they are forked from it). */
FIXTURE(p2p) {
	struct nicoff_query q;
	struct nt_nl nl;
	unsigned long mtu;
	unsigned long rto_us;
	unsigned long max_retries;
	unsigned long delay_us0;
	struct sizes sz;
	struct hello peer;	/* what the other side said */
};

FIXTURE_SETUP(p2p)
{
	uint32_t c;

	ASSERT_EQ(0, nt_query_card(0, &self->q));
	self->nl.fd = -1;
	if (self->q.num_cards < 3)
		SKIP(return, "needs 3 cards, the module has %u", self->q.num_cards);
	ASSERT_EQ(0, nt_param_get("mtu", &self->mtu));
	ASSERT_EQ(0, nt_param_get("rto_usecs", &self->rto_us));
	ASSERT_EQ(0, nt_param_get("max_retries", &self->max_retries));
	ASSERT_EQ(0, nt_param_get("fault_delay_usecs", &self->delay_us0));
	ASSERT_EQ(0, nt_nl_connect(&self->nl)) TH_LOG("generic netlink family \"nicoff\"");
	/* Whatever ran before: no faults, and every card we use follows them. */
	ASSERT_EQ(0, clear_faults());
	for (c = 0; c < 3; c++)
		ASSERT_EQ(0, nt_nl_card_follow_global(&self->nl, c));
	sizes_init(&self->sz, self->mtu, 0);
}

FIXTURE_TEARDOWN(p2p)
{
	uint32_t c;

	EXPECT_EQ(0, clear_faults());
	for (c = 0; self->nl.fd >= 0 && c < 3; c++)
		EXPECT_EQ(0, nt_nl_card_follow_global(&self->nl, c));
	if (self->delay_us0)
		EXPECT_EQ(0, nt_param_set("fault_delay_usecs", self->delay_us0));
	nt_nl_close(&self->nl);
}

static void snap2(struct __test_metadata *_metadata, FIXTURE_DATA(p2p) *self,
		  struct nt_card_stats s[2]);
static void check_fault_counters(struct __test_metadata *_metadata, FIXTURE_DATA(p2p) *self,
				 const struct nt_card_stats before[2],
				 const struct nt_card_stats during[2], bool faults);

/* Turn on the fault mix of the fault tests; returns 0 or -errno. */
static int faults_on(void)
{
	int ret = nt_param_set("fault_delay_usecs", F_DELAY_US);

	return ret ? ret : set_faults(F_DROP, F_DUP, F_CORRUPT, F_REORDER);
}

/* ---------------------------------------------- send/recv, every size -- */

/*
 * One side's NSIZES receive completions, in any order: command tags tag0 +
 * k, each k once, size k from (@card, @port) with message tag mtag0 + k.
 * 0, or 1 with the first mismatch reported (CK).
 */
static int check_size_recvs(const struct sizes *s, const struct nicoff_cqe *cqe, int tag0,
			    uint32_t card, uint32_t port, uint64_t mtag0)
{
	unsigned int seen = 0;
	int i;

	for (i = 0; i < NSIZES; i++) {
		int k = (int)cqe[i].tag - tag0;

		CK(k >= 0 && k < NSIZES && !(seen & (1u << k)));
		seen |= 1u << k;
		CKEQ(NICOFF_OP_RECV, cqe[i].opcode);
		CKEQ(0, cqe[i].status);
		CKEQ(s->size[k], cqe[i].result);
		CKEQ(card, cqe[i].src_card);
		CKEQ(port, cqe[i].src_port);
		CKEQ(mtag0 + k, cqe[i].msg_tag);
	}
	return 0;
}

static int child_sizes(struct chan *ch, void *arg)
{
	FIXTURE_DATA(p2p) *self = arg;
	const struct sizes *s = &self->sz;
	struct nicoff_cqe cqe[NSIZES];
	struct hello pa;
	struct nt_port p;
	struct nt_region r;
	int i;

	CK(from_parent(ch, &pa, sizeof(pa), TMO) == 0);
	CKEQ(0, child_port(&p, 64, &r, s->total, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	/* Receives posted ahead, one per size, matched by exact tag. */
	for (i = 0; i < NSIZES; i++) {
		struct nicoff_cmd c = NT_CMD(recv, r.handle, s->off[i], s->size[i], CARD_A, pa.port,
					     i, ~0ull, 100 + i);

		CKEQ(0, nt_submit(&p, &c, 1));
	}
	CKEQ(0, wait_consumed(&p, TMO));
	CK(tell_port(ch, &p, 0) == 0);

	CKEQ(NSIZES, nt_wait_cqes(&p, cqe, NSIZES, CHILD_TMO));
	CKEQ(0, check_size_recvs(s, cqe, 100, CARD_A, pa.port, 0));
	for (i = 0; i < NSIZES; i++) {
		size_t slot = round_page(s->size[i]) + 4096;

		CKEQ(-1, diff_pattern(r.buf + s->off[i], s->size[i], 1000 + i));
		CKEQ(-1, diff_byte(r.buf + s->off[i] + s->size[i], slot - s->size[i], GUARD));
	}
	/* Echo everything back from the receive buffers. */
	CK(token_from_parent(ch, CHILD_TMO) == 0);
	for (i = 0; i < NSIZES; i++) {
		struct nicoff_cmd c = NT_CMD(send, CARD_A, pa.port, r.handle, s->off[i], s->size[i],
					     0x100 + i, 200 + i);

		CKEQ(0, nt_submit(&p, &c, 1));
	}
	CKEQ(NSIZES, nt_wait_cqes(&p, cqe, NSIZES, CHILD_TMO));
	for (i = 0; i < NSIZES; i++) {
		CKEQ(NICOFF_OP_SEND, cqe[i].opcode);
		CKEQ(0, cqe[i].status);
		CKEQ(s->size[cqe[i].tag - 200], cqe[i].result);
	}
	return 0;
}

static void sizes_test(struct __test_metadata *_metadata, FIXTURE_DATA(p2p) *self, bool faults)
{
	struct nt_card_stats before[2], during[2];
	const struct sizes *s = &self->sz;
	struct hello me = { .card = CARD_A }, ch_info;
	struct nicoff_cqe cqe[NSIZES];
	struct nt_region src, dst;
	struct nt_port p;
	struct chan ch;
	int i;

	parent_port(_metadata, &ch, child_sizes, self, &p, 64, &src, s->total);
	ASSERT_EQ(0, nt_region_new(&p, &dst, s->total, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	for (i = 0; i < NSIZES; i++)
		nt_fill_pattern(src.buf + s->off[i], s->size[i], 1000 + i);
	me.port = p.po.port;
	ASSERT_EQ(0, to_child(&ch, &me, sizeof(me)));
	ASSERT_EQ(0, from_child(&ch, &ch_info, sizeof(ch_info), TMO));
	snap2(_metadata, self, before);
	if (faults)
		ASSERT_EQ(0, faults_on());

	/* All seven in flight at once. */
	for (i = 0; i < NSIZES; i++) {
		struct nicoff_cmd c = NT_CMD(send, CARD_B, ch_info.port, src.handle, s->off[i],
					     s->size[i], i, i);

		ASSERT_EQ(0, nt_submit(&p, &c, 1));
	}
	ASSERT_EQ(NSIZES, nt_wait_cqes(&p, cqe, NSIZES, CHILD_TMO));
	for (i = 0; i < NSIZES; i++) {
		ASSERT_LT(cqe[i].tag, NSIZES);
		EXPECT_EQ(NICOFF_OP_SEND, cqe[i].opcode);
		EXPECT_EQ(0, cqe[i].status) TH_LOG("send of %zu bytes", s->size[cqe[i].tag]);
		EXPECT_EQ(s->size[cqe[i].tag], cqe[i].result);
	}

	/* The echo: receives posted, then the child sends. */
	for (i = 0; i < NSIZES; i++) {
		struct nicoff_cmd c = NT_CMD(recv, dst.handle, s->off[i], s->size[i], CARD_B,
					     ch_info.port, 0x100 + i, ~0ull, 300 + i);

		ASSERT_EQ(0, nt_submit(&p, &c, 1));
	}
	ASSERT_EQ(0, wait_consumed(&p, TMO));
	ASSERT_EQ(0, token_to_child(&ch));
	ASSERT_EQ(NSIZES, nt_wait_cqes(&p, cqe, NSIZES, CHILD_TMO));
	EXPECT_EQ(0, check_size_recvs(s, cqe, 300, CARD_B, ch_info.port, 0x100));
	for (i = 0; i < NSIZES; i++) {
		size_t slot = round_page(s->size[i]) + 4096;

		EXPECT_EQ(-1, diff_pattern(dst.buf + s->off[i], s->size[i], 1000 + i))
			TH_LOG("echo of %zu bytes", s->size[i]);
		EXPECT_EQ(-1, diff_byte(dst.buf + s->off[i] + s->size[i], slot - s->size[i],
					GUARD));
	}
	EXPECT_EQ(0, end_child(&ch));
	snap2(_metadata, self, during);
	ASSERT_EQ(0, clear_faults());
	check_fault_counters(_metadata, self, before, during, faults);
	nt_port_close(&p);
}

TEST_F_TIMEOUT(p2p, send_recv_sizes, 300)
{
	sizes_test(_metadata, self, false);
}

TEST_F_TIMEOUT(p2p, send_recv_sizes_under_faults, 600)
{
	sizes_test(_metadata, self, true);
}

/* ------------------------------------------------ put/get, every size -- */

#define PG_LEAD		3	/* remote offsets are unaligned by this much */
#define PG_SRC_SEED	77

static int child_put_get(struct chan *ch, void *arg)
{
	FIXTURE_DATA(p2p) *self = arg;
	struct sizes s;
	struct hello me = { .card = CARD_B };
	struct nt_region t, src;
	struct nt_port p;
	int i;

	sizes_init(&s, self->mtu, PG_LEAD);
	CKEQ(0, child_port(&p, 16, &t, s.total, NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE,
			   GUARD));
	CKEQ(0, nt_region_new(&p, &src, 4 << 20, NICOFF_ACCESS_REMOTE_READ, 0));
	nt_fill_pattern(src.buf, src.len, PG_SRC_SEED);
	me.port = p.po.port;
	me.rkey[0] = t.rkey;
	me.rkey[1] = src.rkey;
	CK(to_parent(ch, &me, sizeof(me)) == 0);
	CK(token_from_parent(ch, CHILD_TMO) == 0);
	/* What the parent put is in our memory, and nothing else changed. */
	for (i = 0; i < NSIZES; i++) {
		size_t slot = round_page(PG_LEAD + s.size[i]) + 4096;
		unsigned char *b = t.buf + s.off[i];

		CKEQ(-1, diff_byte(b, PG_LEAD, GUARD));
		CKEQ(-1, diff_pattern(b + PG_LEAD, s.size[i], 2000 + i));
		CKEQ(-1, diff_byte(b + PG_LEAD + s.size[i], slot - PG_LEAD - s.size[i], GUARD));
	}
	CKEQ(-1, diff_pattern(src.buf, src.len, PG_SRC_SEED));
	CK(cq_stays_empty(&p, 10));
	return 0;
}

static void put_get_test(struct __test_metadata *_metadata, FIXTURE_DATA(p2p) *self,
			 bool faults)
{
	struct nt_card_stats before[2], during[2];
	struct sizes s;
	struct hello ci;
	struct nt_region src, dst, big;
	struct nicoff_cqe cqe[NSIZES];
	unsigned char *want;
	struct nt_port p;
	struct chan ch;
	int i;

	sizes_init(&s, self->mtu, PG_LEAD);
	parent_port(_metadata, &ch, child_put_get, self, &p, 64, &src, s.total);
	ASSERT_EQ(0, nt_region_new(&p, &dst, s.total, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	ASSERT_EQ(0, nt_region_new(&p, &big, 4 << 20, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	for (i = 0; i < NSIZES; i++)
		nt_fill_pattern(src.buf + s.off[i], s.size[i], 2000 + i);
	ASSERT_EQ(0, from_child(&ch, &ci, sizeof(ci), TMO));
	snap2(_metadata, self, before);
	if (faults)
		ASSERT_EQ(0, faults_on());

	for (i = 0; i < NSIZES; i++) {
		size_t n = s.size[i], roff = s.off[i] + PG_LEAD;
		struct nicoff_cmd c;

		nicoff_prep_put(&c, CARD_B, ci.port, ci.rkey[0], roff, src.handle, s.off[i], n, i);
		ASSERT_EQ(0, nt_run_one(&p, &c, cqe, CHILD_TMO));
		EXPECT_EQ(NICOFF_OP_PUT, cqe[0].opcode);
		EXPECT_EQ(0, cqe[0].status) TH_LOG("put of %zu bytes", n);
		EXPECT_EQ(n, cqe[0].result);
		/* Read it back: a put is complete at the target once acknowledged. */
		nicoff_prep_get(&c, CARD_B, ci.port, ci.rkey[0], roff, dst.handle, s.off[i], n,
				100 + i);
		ASSERT_EQ(0, nt_run_one(&p, &c, cqe, CHILD_TMO));
		EXPECT_EQ(NICOFF_OP_GET, cqe[0].opcode);
		EXPECT_EQ(0, cqe[0].status) TH_LOG("get of %zu bytes", n);
		EXPECT_EQ(n, cqe[0].result);
		EXPECT_EQ(-1, diff_pattern(dst.buf + s.off[i], n, 2000 + i)) TH_LOG("%zu B", n);
		EXPECT_EQ(-1, diff_byte(dst.buf + s.off[i] + n, 4096, GUARD));
		/* And what the child wrote itself, from offset 0. */
		memset(big.buf, GUARD, n + 1 < big.len ? n + 1 : n);
		nicoff_prep_get(&c, CARD_B, ci.port, ci.rkey[1], 0, big.handle, 0, n, 200 + i);
		ASSERT_EQ(0, nt_run_one(&p, &c, cqe, CHILD_TMO));
		EXPECT_EQ(0, cqe[0].status);
		EXPECT_EQ(n, cqe[0].result);
		EXPECT_EQ(-1, diff_pattern(big.buf, n, PG_SRC_SEED)) TH_LOG("%zu B", n);
		if (n < big.len)
			EXPECT_EQ(GUARD, big.buf[n]);
	}

	/* Seven gets in flight at once, from unaligned places, into the slots. */
	want = malloc(4 << 20);
	ASSERT_NE(NULL, want);
	nt_fill_pattern(want, 4 << 20, PG_SRC_SEED);
	memset(dst.buf, GUARD, dst.len);
	for (i = 0; i < NSIZES; i++) {
		size_t n = s.size[i], roff = ((size_t)i * 12347) % ((4 << 20) - n + 1);
		struct nicoff_cmd c = NT_CMD(get, CARD_B, ci.port, ci.rkey[1], roff, dst.handle,
					     s.off[i], n, 300 + i);

		ASSERT_EQ(0, nt_submit(&p, &c, 1));
	}
	ASSERT_EQ(NSIZES, nt_wait_cqes(&p, cqe, NSIZES, CHILD_TMO));
	for (i = 0; i < NSIZES; i++) {
		int k = (int)cqe[i].tag - 300;
		size_t n, roff;

		ASSERT_TRUE(k >= 0 && k < NSIZES);
		n = s.size[k];
		roff = ((size_t)k * 12347) % ((4 << 20) - n + 1);
		EXPECT_EQ(0, cqe[i].status);
		EXPECT_EQ(n, cqe[i].result);
		EXPECT_EQ(0, memcmp(dst.buf + s.off[k], want + roff, n)) TH_LOG("%zu B", n);
		EXPECT_EQ(-1, diff_byte(dst.buf + s.off[k] + n, 4096, GUARD));
	}
	free(want);
	snap2(_metadata, self, during);
	ASSERT_EQ(0, clear_faults());
	check_fault_counters(_metadata, self, before, during, faults);
	ASSERT_EQ(0, token_to_child(&ch));
	EXPECT_EQ(0, end_child(&ch));
	nt_port_close(&p);
}

TEST_F_TIMEOUT(p2p, put_get_sizes, 300)
{
	put_get_test(_metadata, self, false);
}

TEST_F_TIMEOUT(p2p, put_get_sizes_under_faults, 600)
{
	put_get_test(_metadata, self, true);
}

/* ----------------------------------------------------- tag matching -- */

#define TM_SLOT 256
#define TM_LEN	64

/* The child's receives: cmd tag -> what it must get (message id). */
static int tm_check(struct nicoff_cqe *c, struct nt_region *r, uint64_t want_tag, int want_id,
		    uint64_t want_msg_tag, uint32_t want_port)
{
	uint64_t id;

	CKEQ(want_tag, c->tag);
	CKEQ(NICOFF_OP_RECV, c->opcode);
	CKEQ(0, c->status);
	CKEQ(TM_LEN, c->result);
	CKEQ(CARD_A, c->src_card);
	CKEQ(want_port, c->src_port);
	CKEQ(want_msg_tag, c->msg_tag);
	memcpy(&id, r->buf + (want_tag - 1) * TM_SLOT, sizeof(id));
	CKEQ(want_id, id);
	CKEQ(-1, diff_byte(r->buf + (want_tag - 1) * TM_SLOT + TM_LEN, TM_SLOT - TM_LEN, GUARD));
	return 0;
}

/* Post receive @c on @p, take its completion and check it (tm_check()). */
static int tm_recv(struct nt_port *p, const struct nicoff_cmd *c, struct nt_region *r, int want_id,
		   uint64_t want_msg_tag, uint32_t want_port)
{
	struct nicoff_cqe q;

	CKEQ(0, nt_submit(p, c, 1));
	CKEQ(1, nt_wait_cqes(p, &q, 1, TMO));
	return tm_check(&q, r, c->tag, want_id, want_msg_tag, want_port);
}

static int child_tags(struct chan *ch, void *arg)
{
	struct hello pa;
	struct nicoff_cmd c[5];
	struct nicoff_cqe q[4];
	struct nt_port p;
	struct nt_region r;
	uint32_t P0, P1;

	(void)arg;
	CK(from_parent(ch, &pa, sizeof(pa), TMO) == 0);
	P0 = pa.port;
	P1 = pa.port2;
	CKEQ(0, child_port(&p, 16, &r, 16 * TM_SLOT, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
#define RSLOT(t) ((uint64_t)((t) - 1) * TM_SLOT)
	/* Posting order matters: the first compatible receive wins. */
	nicoff_prep_recv(&c[0], r.handle, RSLOT(1), TM_SLOT, NICOFF_ANY, NICOFF_ANY, 0x100, 0xf00,
			 1);
	nicoff_prep_recv(&c[1], r.handle, RSLOT(2), TM_SLOT, NICOFF_ANY, NICOFF_ANY, 5, ~0ull, 2);
	nicoff_prep_recv(&c[2], r.handle, RSLOT(3), TM_SLOT, CARD_A, P1, 0, 0, 3);
	/* From card 2: nobody. */
	nicoff_prep_recv(&c[3], r.handle, RSLOT(4), TM_SLOT, 2, NICOFF_ANY, 0, 0, 4);
	nicoff_prep_recv(&c[4], r.handle, RSLOT(5), TM_SLOT, NICOFF_ANY, NICOFF_ANY, 0, 0, 5);
	CKEQ(0, nt_submit(&p, c, 5));
	CKEQ(0, wait_consumed(&p, TMO));
	CK(tell_port(ch, &p, 0) == 0);

	/* Messages 1-4 (each sent after the previous one completed). */
	CKEQ(4, nt_wait_cqes(&p, q, 4, CHILD_TMO));
	if (tm_check(&q[0], &r, 5, 1, 0x999, P0) || tm_check(&q[1], &r, 2, 2, 5, P0) ||
	    tm_check(&q[2], &r, 1, 3, 0x1ab, P0) || tm_check(&q[3], &r, 3, 4, 7, P1))
		return 1;
	/* Messages 5 (tag 5) and 6 (tag 6) found no receive: unexpected. */
	CK(token_from_parent(ch, CHILD_TMO) == 0);
	CK(cq_stays_empty(&p, 20));
	/* The oldest compatible one: tag 6 takes message 6, over the older 5. */
	nicoff_prep_recv(&c[0], r.handle, RSLOT(6), TM_SLOT, CARD_A, NICOFF_ANY, 6, ~0ull, 6);
	if (tm_recv(&p, &c[0], &r, 6, 6, P0))
		return 1;
	nicoff_prep_recv(&c[0], r.handle, RSLOT(7), TM_SLOT, NICOFF_ANY, NICOFF_ANY, 0, 0, 7);
	if (tm_recv(&p, &c[0], &r, 5, 5, P0))
		return 1;
	/* A source port filter and a partial mask. */
	nicoff_prep_recv(&c[0], r.handle, RSLOT(8), TM_SLOT, CARD_A, P0, 0x42, 0xff, 8);
	CKEQ(0, nt_submit(&p, c, 1));
	CKEQ(0, wait_consumed(&p, TMO));
	CK(token_to_parent(ch) == 0);
	CK(token_from_parent(ch, CHILD_TMO) == 0);
	CKEQ(1, nt_wait_cqes(&p, q, 1, TMO));
	if (tm_check(&q[0], &r, 8, 8, 0x142, P0))
		return 1;
	nicoff_prep_recv(&c[0], r.handle, RSLOT(9), TM_SLOT, NICOFF_ANY, P1, 0, 0, 9);
	if (tm_recv(&p, &c[0], &r, 7, 0x42, P1))
		return 1;
	/* Receive 4 (from card 2) never matched anything. */
	CK(cq_stays_empty(&p, 100));
#undef RSLOT
	return 0;
}

TEST_F_TIMEOUT(p2p, tag_matching, 120)
{
	/* id, from port 1?, tag */
	static const struct { int id; int p1; uint64_t tag; } m[] = {
		{ 1, 0, 0x999 }, { 2, 0, 5 }, { 3, 0, 0x1ab }, { 4, 1, 7 },
		{ 5, 0, 5 }, { 6, 0, 6 }, { 7, 1, 0x42 }, { 8, 0, 0x142 },
	};
	struct hello me = { .card = CARD_A }, ci;
	struct nt_card_stats s0, s1;
	struct nt_port p[2];
	struct nt_region src[2];
	struct chan ch;
	unsigned int i;

	ASSERT_LT(0, spawn(&ch, child_tags, NULL));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, nt_port_open(&p[i], CARD_A, NICOFF_PORT_ANY, 16, 16));
		ASSERT_EQ(0, nt_region_new(&p[i], &src[i], 16 * TM_LEN, 0, 0));
	}
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		uint64_t id = m[i].id;

		memcpy(src[m[i].p1].buf + i * TM_LEN, &id, sizeof(id));
	}
	me.port = p[0].po.port;
	me.port2 = p[1].po.port;
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_B, &s0));
	ASSERT_EQ(0, to_child(&ch, &me, sizeof(me)));
	ASSERT_EQ(0, from_child(&ch, &ci, sizeof(ci), TMO));
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		struct nt_port *pp = &p[m[i].p1];
		struct nicoff_cmd c = NT_CMD(send, CARD_B, ci.port, src[m[i].p1].handle, i * TM_LEN,
					     TM_LEN, m[i].tag, i);
		struct nicoff_cqe cqe;

		if (i == 6) {
			/* After the child took 5 and 6 and posted receive 8. */
			ASSERT_EQ(0, token_to_child(&ch));
			ASSERT_EQ(0, token_from_child(&ch, CHILD_TMO));
		}
		ASSERT_EQ(0, nt_run_one(pp, &c, &cqe, TMO));
		EXPECT_EQ(0, cqe.status) TH_LOG("message %d", m[i].id);
		EXPECT_EQ(TM_LEN, cqe.result);
	}
	ASSERT_EQ(0, token_to_child(&ch));
	EXPECT_EQ(0, end_child(&ch));
	/* Messages 5, 6 and 7 waited unexpected on the child's card. */
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_B, &s1));
	EXPECT_LE(3, s1.v[NICOFF_NL_STAT_UNEXPECTED] - s0.v[NICOFF_NL_STAT_UNEXPECTED]);
	nt_port_close(&p[0]);
	nt_port_close(&p[1]);
}

/* --------------------------------- streams both ways, under faults -- */

/*
 * One end of a bidirectional stream: nmsg messages to the peer, sent back
 * to back (up to SW_SENDS in flight), and nmsg from it.  Receives take any
 * message (mask 0), so the k-th receive must get the peer's k-th message.
 * The first `ahead` receives are posted before anything is sent; once they
 * completed the end sleeps late_ms, so the rest of the peer's messages pile
 * up unexpected, then posts the others as it goes.  Returns 0 or a line.
 */
#define SW_SENDS	32
#define SW_RECVS	96
#define SW_CMD		256
#define SW_CQ		512

struct stream {
	struct nt_port *p;
	uint32_t peer_card, peer_port;
	unsigned int nmsg, ahead, late_ms;
	unsigned long mtu;
	uint64_t my_seed, peer_seed;
	struct nt_region s, r;
	size_t slot;
	char why[160];
};

struct stream_cfg {
	unsigned int nmsg, ahead, late_ms;
	unsigned long mtu;
};

static size_t sw_len(unsigned long mtu, unsigned int k)
{
	return 8 + ((uint64_t)k * 2654435761u) % (3 * mtu);
}

static void sw_fill(unsigned char *b, size_t len, uint64_t seed, uint64_t k)
{
	nt_fill_pattern(b, len, seed * 1000003 + k);
	memcpy(b, &k, sizeof(k));
}

/*
 * The end on @p of a stream of @cfg with @peer_card: its messages drawn
 * from @my_seed, the peer's from @peer_seed.
 */
static int stream_setup(struct stream *st, struct nt_port *p, const struct stream_cfg *cfg,
			uint32_t peer_card, uint64_t my_seed, uint64_t peer_seed)
{
	unsigned int k;
	int ret;

	*st = (struct stream){
		.p = p, .peer_card = peer_card, .nmsg = cfg->nmsg, .ahead = cfg->ahead,
		.late_ms = cfg->late_ms, .mtu = cfg->mtu, .my_seed = my_seed, .peer_seed = peer_seed,
	};
	st->slot = round_page(3 * st->mtu + 8 + 1);
	ret = nt_region_new(st->p, &st->s, st->slot * st->nmsg, 0, 0);
	if (!ret)
		ret = nt_region_new(st->p, &st->r, st->slot * st->nmsg, NICOFF_ACCESS_LOCAL_WRITE,
				 GUARD);
	for (k = 0; !ret && k < st->nmsg; k++)
		sw_fill(st->s.buf + k * st->slot, sw_len(st->mtu, k), st->my_seed, k);
	return ret;
}

#define SW_FAIL(...)                                                                   \
	do {                                                                           \
		snprintf(st->why, sizeof(st->why), __VA_ARGS__);                       \
		return __LINE__;                                                       \
	} while (0)

static int stream_run(struct stream *st, int timeout_ms)
{
	uint64_t deadline = nt_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	unsigned int sent = 0, sdone = 0, rposted = 0, rdone = 0, k;
	unsigned char *seen = calloc(st->nmsg, 1), *want = malloc(st->slot);
	struct nicoff_cqe cqe[64];
	bool slept = false;
	int ret = 0;

	if (!seen || !want)
		SW_FAIL("out of memory");
	while (sdone < st->nmsg || rdone < st->nmsg) {
		struct nicoff_cmd c[64];
		unsigned int n = 0;
		int got, i;

		if (nt_now_ns() > deadline) {
			snprintf(st->why, sizeof(st->why),
				 "stuck: sent %u, send done %u, recv posted %u, recv done %u",
				 sent, sdone, rposted, rdone);
			ret = __LINE__;
			break;
		}
		/* Receives: ahead ones first; the rest after the late pause. */
		while (rposted < st->nmsg && n < 32 &&
		       (rposted < st->ahead || (slept && rposted - rdone < SW_RECVS))) {
			nicoff_prep_recv(&c[n++], st->r.handle, rposted * st->slot, st->slot,
					 NICOFF_ANY, NICOFF_ANY, 0, 0, 1000000 + rposted);
			rposted++;
		}
		while (sent < st->nmsg && sent - sdone < SW_SENDS && n < 64) {
			nicoff_prep_send(&c[n++], st->peer_card, st->peer_port, st->s.handle,
					 sent * st->slot, sw_len(st->mtu, sent), sent, sent);
			sent++;
		}
		ret = n ? nt_submit(st->p, c, n) : 0;
		if (ret) {
			snprintf(st->why, sizeof(st->why), "submit: %d", ret);
			ret = __LINE__;
			break;
		}
		got = nt_reap(st->p, cqe, 64);
		if (got < 0) {
			snprintf(st->why, sizeof(st->why), "reap: %d", got);
			ret = __LINE__;
			break;
		}
		for (i = 0; i < got && !ret; i++) {
			const struct nicoff_cqe *q = &cqe[i];

			if (q->opcode == NICOFF_OP_SEND) {
				k = (unsigned int)q->tag;
				if (k >= st->nmsg || seen[k] || q->status ||
				    q->result != sw_len(st->mtu, k)) {
					snprintf(st->why, sizeof(st->why),
						 "send %llu: status %d result %llu%s",
						 (unsigned long long)q->tag, q->status,
						 (unsigned long long)q->result,
						 k < st->nmsg && seen[k] ? " (again)" : "");
					ret = __LINE__;
				}
				if (k < st->nmsg)
					seen[k] = 1;
				sdone++;
				continue;
			}
			/* Receive rdone must hold the peer's message rdone. */
			k = rdone;
			if (q->opcode != NICOFF_OP_RECV || q->tag != 1000000 + k || q->status ||
			    q->msg_tag != k || q->result != sw_len(st->mtu, k) ||
			    q->src_card != st->peer_card || q->src_port != st->peer_port) {
				snprintf(st->why, sizeof(st->why),
					 "receive %u: opcode %u tag %llu status %d msg_tag %llu "
					 "result %llu (want %zu) from %u:%u",
					 k, q->opcode, (unsigned long long)q->tag, q->status,
					 (unsigned long long)q->msg_tag,
					 (unsigned long long)q->result, sw_len(st->mtu, k),
					 q->src_card, q->src_port);
				ret = __LINE__;
				break;
			}
			sw_fill(want, sw_len(st->mtu, k), st->peer_seed, k);
			if (memcmp(want, st->r.buf + k * st->slot, sw_len(st->mtu, k)) ||
			    st->r.buf[k * st->slot + sw_len(st->mtu, k)] != GUARD) {
				snprintf(st->why, sizeof(st->why), "message %u: wrong bytes", k);
				ret = __LINE__;
				break;
			}
			rdone++;
		}
		if (ret)
			break;
		if (!slept && rdone >= st->ahead) {
			nt_sleep_ms(st->late_ms);
			slept = true;
			continue;
		}
		if (!got) {
			struct pollfd pfd = { .fd = st->p->fd, .events = POLLIN };

			poll(&pfd, 1, 5);
		}
	}
	free(seen);
	free(want);
	return ret;
}

static int child_stream(struct chan *ch, void *arg)
{
	const struct stream_cfg *cfg = arg;
	struct hello pa;
	struct stream st;
	struct nt_port p;
	int ret;

	CK(from_parent(ch, &pa, sizeof(pa), TMO) == 0);
	CKEQ(0, nt_port_open(&p, CARD_B, NICOFF_PORT_ANY, SW_CMD, SW_CQ));
	CKEQ(0, stream_setup(&st, &p, cfg, CARD_A, 2, 1));
	st.peer_port = pa.port;
	CK(tell_port(ch, &p, 0) == 0);
	CK(token_from_parent(ch, TMO) == 0);	/* both ends set up */
	ret = stream_run(&st, CHILD_TMO);
	if (ret)
		fprintf(stderr, "# child stream line %d: %s\n", ret, st.why);
	CKEQ(0, ret);
	/* Stay until the parent is done too: our port must not vanish. */
	CK(token_to_parent(ch) == 0);
	CK(token_from_parent(ch, CHILD_TMO) == 0);
	return 0;
}

/* No libm: Newton's square root is plenty for a tolerance. */
static double root(double x)
{
	double r = x > 1 ? x : 1;
	int i;

	for (i = 0; i < 64; i++)
		r = (r + x / r) / 2;
	return r;
}

static double dist(double a, double b)
{
	return a > b ? a - b : b - a;
}

static double binom_slack(double n, double p)
{
	return 6 * root(n * p * (1 - p)) + 5;
}

#define ST(s, name) ((s).v[NICOFF_NL_STAT_##name])

/* Card @x's @got faults (@what) of @n packets: about @rate of them. */
static void expect_rate(struct __test_metadata *_metadata, int x, const char *what, uint64_t got,
			double n, double rate)
{
	EXPECT_GE(binom_slack(n, rate), dist(got, rate * n))
		TH_LOG("card %d: %llu %s of %.0f", x, (unsigned long long)got, what, n);
}

/*
 * The counters of cards a and b over a fault run: before, at the end of
 * the traffic (faults still on) and after the fabric went quiet (faults
 * off).  Only a and b exchanged packets meanwhile.
 */
static void check_fault_counters(struct __test_metadata *_metadata, FIXTURE_DATA(p2p) *self,
				 const struct nt_card_stats before[2],
				 const struct nt_card_stats during[2], bool faults)
{
	struct nt_card_stats after[2], d[2], f[2];
	uint64_t t_end = nt_now_ns() + 5000000000ull;
	int x, y;

	/*
	 * Conservation, once nothing is in flight: what one card sent,
	 * less what the fabric dropped, plus the copies it made, is what
	 * the other card took in, good or damaged:
	 *   tx(a) - drops(a) + dups(a) == rx(b) + crc_errors(b)
	 * (every packet a sends goes to b; rx counts packets whose CRC
	 * checked).  Every damaged packet reaches its receiver and fails
	 * its CRC there (a one-bit flip always does), so also
	 *   crc_errors(b) == corrupts(a).
	 */
	for (;;) {
		bool ok = true;

		ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_A, &after[0]));
		ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_B, &after[1]));
		for (x = 0; x < 2; x++)
			for (y = 0; y <= NICOFF_NL_STAT_MAX; y++)
				d[x].v[y] = after[x].v[y] - before[x].v[y];
		for (x = 0; x < 2; x++)
			ok &= ST(d[x], TX_PKTS) - ST(d[x], FAULT_DROPS) + ST(d[x], FAULT_DUPS) ==
			      ST(d[!x], RX_PKTS) + ST(d[!x], CRC_ERRORS);
		if (ok || nt_now_ns() > t_end)
			break;
		nt_sleep_ms(20);
	}
	for (x = 0; x < 2; x++) {
		TH_LOG("card %d: tx %llu rx %llu acks %llu/%llu retransmits %llu timeouts %llu "
		       "dup %llu ooo %llu crc %llu unexpected %llu rnr %llu | fault drops %llu "
		       "dups %llu corrupts %llu reorders %llu",
		       x ? CARD_B : CARD_A, (unsigned long long)ST(d[x], TX_PKTS),
		       (unsigned long long)ST(d[x], RX_PKTS), (unsigned long long)ST(d[x], TX_ACKS),
		       (unsigned long long)ST(d[x], RX_ACKS),
		       (unsigned long long)ST(d[x], RETRANSMITS),
		       (unsigned long long)ST(d[x], TIMEOUTS),
		       (unsigned long long)ST(d[x], DUPLICATES),
		       (unsigned long long)ST(d[x], OUT_OF_ORDER),
		       (unsigned long long)ST(d[x], CRC_ERRORS),
		       (unsigned long long)ST(d[x], UNEXPECTED),
		       (unsigned long long)ST(d[x], RNR_DROPS),
		       (unsigned long long)ST(d[x], FAULT_DROPS),
		       (unsigned long long)ST(d[x], FAULT_DUPS),
		       (unsigned long long)ST(d[x], FAULT_CORRUPTS),
		       (unsigned long long)ST(d[x], FAULT_REORDERS));
	}
	for (x = 0; x < 2; x++) {
		EXPECT_EQ(ST(d[x], TX_PKTS) - ST(d[x], FAULT_DROPS) + ST(d[x], FAULT_DUPS),
			  ST(d[!x], RX_PKTS) + ST(d[!x], CRC_ERRORS)) TH_LOG("from card %d", x);
		EXPECT_EQ(ST(d[x], FAULT_CORRUPTS), ST(d[!x], CRC_ERRORS)) TH_LOG("to card %d", !x);
		EXPECT_EQ(0, ST(d[x], NO_ROUTE));
		/* Retransmissions and acks are packets too. */
		EXPECT_LE(ST(d[x], RETRANSMITS), ST(d[x], TX_PKTS));
		EXPECT_LE(ST(d[x], TX_ACKS), ST(d[x], TX_PKTS));
		EXPECT_LE(ST(d[x], RX_ACKS), ST(d[x], RX_PKTS));
		EXPECT_LT(0, ST(d[x], TX_PKTS));
	}
	if (!faults) {
		for (x = 0; x < 2; x++) {
			EXPECT_EQ(0, ST(d[x], FAULT_DROPS) + ST(d[x], FAULT_DUPS) +
					     ST(d[x], FAULT_CORRUPTS) + ST(d[x], FAULT_REORDERS));
			EXPECT_EQ(0, ST(d[x], CRC_ERRORS));
			EXPECT_EQ(ST(d[x], TX_PKTS), ST(d[!x], RX_PKTS));
		}
		return;
	}
	/*
	 * Statistics of the injector, over the traffic with faults on: every
	 * packet gets a verdict; a drop excludes the other faults, which are
	 * drawn independently (faults.c), so each has (1 - drop) * its rate.
	 */
	for (x = 0; x < 2; x++) {
		double n;

		for (y = 0; y <= NICOFF_NL_STAT_MAX; y++)
			f[x].v[y] = during[x].v[y] - before[x].v[y];
		n = (double)ST(f[x], TX_PKTS);
		if (n < 500) {
			TH_LOG("card %d sent only %.0f packets: no statistics", x, n);
			continue;
		}
		expect_rate(_metadata, x, "drops", ST(f[x], FAULT_DROPS), n, 0.1);
		expect_rate(_metadata, x, "dups", ST(f[x], FAULT_DUPS), n, 0.045);
		expect_rate(_metadata, x, "corrupts", ST(f[x], FAULT_CORRUPTS), n, 0.009);
		expect_rate(_metadata, x, "reorders", ST(f[x], FAULT_REORDERS), n, 0.045);
	}
	/* Losses were repaired by retransmission, and the receivers noticed. */
	for (x = 0; x < 2; x++) {
		if (ST(f[x], FAULT_DROPS) + ST(f[x], FAULT_CORRUPTS) >= 20) {
			EXPECT_LT(0, ST(d[0], RETRANSMITS) + ST(d[1], RETRANSMITS));
			/* by the timeout or by the receiver's out-of-order report */
			EXPECT_LT(0, ST(d[0], TIMEOUTS) + ST(d[1], TIMEOUTS) +
				  ST(d[0], FAST_RETRANSMITS) + ST(d[1], FAST_RETRANSMITS));
		}
		if (ST(f[x], FAULT_DUPS) + ST(f[x], FAULT_REORDERS) >= 20)
			EXPECT_LT(0, ST(d[!x], DUPLICATES) + ST(d[!x], OUT_OF_ORDER));
	}
}

static void snap2(struct __test_metadata *_metadata, FIXTURE_DATA(p2p) *self,
		  struct nt_card_stats s[2])
{
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_A, &s[0]));
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_B, &s[1]));
}

static void run_streams(struct __test_metadata *_metadata, FIXTURE_DATA(p2p) *self,
			struct stream_cfg *cfg, bool faults)
{
	struct nt_card_stats before[2], during[2];
	struct hello me = { .card = CARD_A }, ci;
	struct stream st;
	struct nt_port p;
	struct chan ch;
	uint64_t t0;
	int ret;

	ASSERT_LT(0, spawn(&ch, child_stream, cfg));
	ASSERT_EQ(0, nt_port_open(&p, CARD_A, NICOFF_PORT_ANY, SW_CMD, SW_CQ));
	ASSERT_EQ(0, stream_setup(&st, &p, cfg, CARD_B, 1, 2));
	me.port = p.po.port;
	ASSERT_EQ(0, to_child(&ch, &me, sizeof(me)));
	ASSERT_EQ(0, from_child(&ch, &ci, sizeof(ci), TMO));
	st.peer_port = ci.port;

	snap2(_metadata, self, before);
	if (faults)
		ASSERT_EQ(0, faults_on());
	t0 = nt_now_ns();
	ASSERT_EQ(0, token_to_child(&ch));
	ret = stream_run(&st, CHILD_TMO);
	EXPECT_EQ(0, ret) TH_LOG("parent stream: %s", st.why);
	/* The child's end is done too: all traffic is over. */
	EXPECT_EQ(0, token_from_child(&ch, CHILD_TMO));
	snap2(_metadata, self, during);
	ASSERT_EQ(0, clear_faults());
	TH_LOG("%u messages each way in %.2f s", cfg->nmsg, (nt_now_ns() - t0) / 1e9);
	check_fault_counters(_metadata, self, before, during, faults);
	/* The late receives met unexpected messages on both cards. */
	EXPECT_LT(before[0].v[NICOFF_NL_STAT_UNEXPECTED], during[0].v[NICOFF_NL_STAT_UNEXPECTED]);
	EXPECT_LT(before[1].v[NICOFF_NL_STAT_UNEXPECTED], during[1].v[NICOFF_NL_STAT_UNEXPECTED]);
	ASSERT_EQ(0, token_to_child(&ch));
	EXPECT_EQ(0, end_child(&ch));
	nt_port_close(&p);
}

TEST_F_TIMEOUT(p2p, streams_clean, 300)
{
	struct stream_cfg cfg = { .nmsg = 300, .ahead = 100, .late_ms = 100, .mtu = self->mtu };

	run_streams(_metadata, self, &cfg, false);
}

TEST_F_TIMEOUT(p2p, streams_under_faults, 600)
{
	struct stream_cfg cfg = { .nmsg = 300, .ahead = 100, .late_ms = 100, .mtu = self->mtu };

	run_streams(_metadata, self, &cfg, true);
}

/* ------------------------------------------- put/get under faults -- */

#define PF_BIG		(1u << 20)
#define PF_CHUNK	(64u << 10)
#define PF_NCHUNK	4
#define PF_ROUNDS	3
#define PF_TLEN		(PF_BIG + PF_NCHUNK * (PF_CHUNK + 1) + 4096)

static size_t pf_chunk_off(int j)
{
	return PF_BIG + (size_t)j * (PF_CHUNK + 1);
}

static int child_pf(struct chan *ch, void *arg)
{
	unsigned char *want;
	struct nt_port p;
	struct nt_region t;
	int j;

	(void)arg;
	CKEQ(0, child_port(&p, 16, &t, PF_TLEN, NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE,
			   GUARD));
	CK(tell_port(ch, &p, t.rkey) == 0);
	CK(token_from_parent(ch, CHILD_TMO) == 0);
	/* What the last round put, and guards between the chunks. */
	want = malloc(PF_TLEN);
	CK(want);
	memset(want, GUARD, PF_TLEN);
	nt_fill_pattern(want, PF_BIG, 3000 + PF_ROUNDS - 1);
	for (j = 0; j < PF_NCHUNK; j++)
		nt_fill_pattern(want + pf_chunk_off(j), PF_CHUNK, 4000 + j);
	CKEQ(0, memcmp(want, t.buf, PF_TLEN));
	free(want);
	CK(cq_stays_empty(&p, 10));
	return 0;
}

TEST_F_TIMEOUT(p2p, put_get_under_faults, 600)
{
	struct nt_card_stats before[2], during[2];
	struct nicoff_cqe cqe[2 * PF_NCHUNK];
	struct nt_region src, dst;
	struct nt_port p;
	struct hello ci;
	struct chan ch;
	uint64_t t0;
	int r, j;

	parent_port(_metadata, &ch, child_pf, NULL, &p, 64, &src, PF_TLEN);
	ASSERT_EQ(0, nt_region_new(&p, &dst, PF_TLEN, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	ASSERT_EQ(0, from_child(&ch, &ci, sizeof(ci), TMO));

	snap2(_metadata, self, before);
	ASSERT_EQ(0, faults_on());
	t0 = nt_now_ns();
	for (r = 0; r < PF_ROUNDS; r++) {
		struct nicoff_cmd c;

		nt_fill_pattern(src.buf, PF_BIG, 3000 + r);
		nicoff_prep_put(&c, CARD_B, ci.port, ci.rkey[0], 0, src.handle, 0, PF_BIG, r);
		ASSERT_EQ(0, nt_run_one(&p, &c, cqe, CHILD_TMO));
		ASSERT_EQ(0, cqe[0].status) TH_LOG("round %d put", r);
		EXPECT_EQ(PF_BIG, cqe[0].result);
		memset(dst.buf, GUARD, PF_BIG + 1);
		nicoff_prep_get(&c, CARD_B, ci.port, ci.rkey[0], 0, dst.handle, 0, PF_BIG, 100 + r);
		ASSERT_EQ(0, nt_run_one(&p, &c, cqe, CHILD_TMO));
		ASSERT_EQ(0, cqe[0].status) TH_LOG("round %d get", r);
		EXPECT_EQ(PF_BIG, cqe[0].result);
		EXPECT_EQ(-1, diff_pattern(dst.buf, PF_BIG, 3000 + r)) TH_LOG("round %d", r);
		EXPECT_EQ(GUARD, dst.buf[PF_BIG]);
	}
	/* Several puts in flight, then several gets. */
	for (j = 0; j < PF_NCHUNK; j++) {
		struct nicoff_cmd c;

		nt_fill_pattern(src.buf + pf_chunk_off(j), PF_CHUNK, 4000 + j);
		nicoff_prep_put(&c, CARD_B, ci.port, ci.rkey[0], pf_chunk_off(j), src.handle,
				pf_chunk_off(j), PF_CHUNK, 200 + j);
		ASSERT_EQ(0, nt_submit(&p, &c, 1));
	}
	ASSERT_EQ(PF_NCHUNK, nt_wait_cqes(&p, cqe, PF_NCHUNK, CHILD_TMO));
	for (j = 0; j < PF_NCHUNK; j++) {
		EXPECT_EQ(0, cqe[j].status);
		EXPECT_EQ(PF_CHUNK, cqe[j].result);
	}
	for (j = 0; j < PF_NCHUNK; j++) {
		struct nicoff_cmd c = NT_CMD(get, CARD_B, ci.port, ci.rkey[0], pf_chunk_off(j),
					     dst.handle, pf_chunk_off(j), PF_CHUNK, 300 + j);

		ASSERT_EQ(0, nt_submit(&p, &c, 1));
	}
	ASSERT_EQ(PF_NCHUNK, nt_wait_cqes(&p, cqe, PF_NCHUNK, CHILD_TMO));
	for (j = 0; j < PF_NCHUNK; j++) {
		EXPECT_EQ(0, cqe[j].status);
		EXPECT_EQ(PF_CHUNK, cqe[j].result);
		EXPECT_EQ(-1, diff_pattern(dst.buf + pf_chunk_off(j), PF_CHUNK, 4000 + j));
	}
	snap2(_metadata, self, during);
	ASSERT_EQ(0, clear_faults());
	TH_LOG("puts and gets under faults: %.2f s", (nt_now_ns() - t0) / 1e9);
	check_fault_counters(_metadata, self, before, during, true);
	ASSERT_EQ(0, token_to_child(&ch));
	EXPECT_EQ(0, end_child(&ch));
	nt_port_close(&p);
}

/* ------------------------------------------------- bad local input -- */

struct bad_case {
	const char *what;
	struct nicoff_cmd c;
	int status;
};

static void run_bad(struct __test_metadata *_metadata, struct nt_port *p,
		    const struct bad_case *bc, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct nicoff_cmd c = bc[i].c;
		struct nicoff_cqe cqe;
		uint64_t t0 = nt_now_ns();

		c.tag = 0x5000 + i;
		ASSERT_EQ(0, nt_run_one(p, &c, &cqe, TMO)) TH_LOG("%s: no completion", bc[i].what);
		EXPECT_EQ(c.tag, cqe.tag);
		EXPECT_EQ(c.opcode, cqe.opcode);
		EXPECT_EQ(bc[i].status, cqe.status) TH_LOG("%s", bc[i].what);
		EXPECT_EQ(0, cqe.result) TH_LOG("%s", bc[i].what);
		EXPECT_GT(5000000000ull, nt_now_ns() - t0) TH_LOG("%s: slow", bc[i].what);
	}
}

TEST_F_TIMEOUT(p2p, bad_input, 120)
{
	const uint32_t nc = self->q.num_cards;
	struct nt_region s, w, ro;
	struct nt_port p, tmp;
	struct nicoff_cqe cqe;
	struct nicoff_cmd c;
	uint32_t closed;
	const size_t L = 64 << 10;

	/* The fault delay is u32 nanoseconds in the firmware: no more than 4 s. */
	EXPECT_EQ(-EINVAL, nt_param_set("fault_delay_usecs", 4000001));
	EXPECT_EQ(0, nt_param_set("fault_delay_usecs", 4000000));
	EXPECT_EQ(0, nt_param_set("fault_delay_usecs", self->delay_us0));

	ASSERT_EQ(0, nt_port_open(&p, CARD_A, NICOFF_PORT_ANY, 16, 16));
	ASSERT_EQ(0, nt_region_new(&p, &s, L, 0, 0));
	ASSERT_EQ(0, nt_region_new(&p, &w, L, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	ASSERT_EQ(0, nt_region_new(&p, &ro, L, NICOFF_ACCESS_REMOTE_READ, GUARD));
	/* A port of card B that is certainly not open: we just closed it. */
	closed = self->q.max_ports - 1;
	ASSERT_EQ(0, nt_port_open(&tmp, CARD_B, closed, 2, 2));
	nt_port_close(&tmp);
	{
		const struct bad_case bc[] = {
			{ "send to a card beyond the fabric",
			  NT_CMD(send, nc, 0, s.handle, 0, 1, 0, 0), -EINVAL },
			{ "send to card ~0", NT_CMD(send, ~0u, 0, s.handle, 0, 1, 0, 0), -EINVAL },
			{ "put to a card beyond the fabric",
			  NT_CMD(put, nc, 0, 1, 0, s.handle, 0, 1, 0), -EINVAL },
			{ "get from a card beyond the fabric",
			  NT_CMD(get, nc, 0, 1, 0, w.handle, 0, 1, 0), -EINVAL },
			{ "receive from a card beyond the fabric",
			  NT_CMD(recv, w.handle, 0, 1, nc, NICOFF_ANY, 0, 0, 0), -EINVAL },
			{ "send longer than max_msg",
			  NT_CMD(send, CARD_B, closed, s.handle, 0, FW_MAX_MSG + 1, 0, 0),
			  -EMSGSIZE },
			{ "put longer than max_msg",
			  NT_CMD(put, CARD_B, closed, 1, 0, s.handle, 0, FW_MAX_MSG + 1, 0),
			  -EMSGSIZE },
			{ "get longer than max_msg",
			  NT_CMD(get, CARD_B, closed, 1, 0, w.handle, 0, FW_MAX_MSG + 1, 0),
			  -EMSGSIZE },
			{ "send from an unknown region",
			  NT_CMD(send, CARD_B, closed, 0xfffff, 0, 1, 0, 0), -ENOENT },
			{ "send beyond its region",
			  NT_CMD(send, CARD_B, closed, s.handle, L - 10, 20, 0, 0), -ERANGE },
			{ "send with a wrapping range",
			  NT_CMD(send, CARD_B, closed, s.handle, ~0ull, 2, 0, 0), -ERANGE },
			{ "receive into a region without LOCAL_WRITE",
			  NT_CMD(recv, s.handle, 0, 16, NICOFF_ANY, NICOFF_ANY, 0, 0, 0), -EACCES },
			{ "receive beyond its region",
			  NT_CMD(recv, w.handle, L - 1, 2, NICOFF_ANY, NICOFF_ANY, 0, 0, 0),
			  -ERANGE },
			{ "get into a region without LOCAL_WRITE",
			  NT_CMD(get, CARD_B, closed, 1, 0, ro.handle, 0, 16, 0),
			  -EACCES },
			{ "put with a wrapping remote range",
			  NT_CMD(put, CARD_B, closed, 1, ~0ull - 3, s.handle, 0, 8, 0),
			  -ERANGE },
			{ "get beyond the local region",
			  NT_CMD(get, CARD_B, closed, 1, 0, w.handle, L, 1, 0),
			  -ERANGE },
		};

		run_bad(_metadata, &p, bc, sizeof(bc) / sizeof(bc[0]));
	}
	/* Reserved fields of the message and RMA commands. */
	nicoff_prep_send(&c, CARD_B, closed, s.handle, 0, 1, 0, 1);
	c.send.reserved0 = 1;
	ASSERT_EQ(0, nt_run_one(&p, &c, &cqe, TMO));
	EXPECT_EQ(-EINVAL, cqe.status);
	nicoff_prep_send(&c, CARD_B, closed, s.handle, 0, 1, 0, 2);
	c.send.reserved1 = 1;
	ASSERT_EQ(0, nt_run_one(&p, &c, &cqe, TMO));
	EXPECT_EQ(-EINVAL, cqe.status);
	nicoff_prep_recv(&c, w.handle, 0, 1, NICOFF_ANY, NICOFF_ANY, 0, 0, 3);
	c.recv.reserved0 = 1;
	ASSERT_EQ(0, nt_run_one(&p, &c, &cqe, TMO));
	EXPECT_EQ(-EINVAL, cqe.status);
	nicoff_prep_put(&c, CARD_B, closed, 1, 0, s.handle, 0, 1, 4);
	c.rdma.reserved = 1;
	ASSERT_EQ(0, nt_run_one(&p, &c, &cqe, TMO));
	EXPECT_EQ(-EINVAL, cqe.status);

	/* A port nobody opened: refused by the target card, at once. */
	do {
		const struct bad_case bc[] = {
			{ "send to a closed port",
			  NT_CMD(send, CARD_B, closed, s.handle, 0, 1, 0, 0), -ECONNREFUSED },
			{ "long send to a closed port",
			  NT_CMD(send, CARD_B, closed, s.handle, 0, 3 * self->mtu + 5, 0, 0),
			  -ECONNREFUSED },
			{ "put to a closed port",
			  NT_CMD(put, CARD_B, closed, 1, 0, s.handle, 0, 100, 0),
			  -ECONNREFUSED },
			{ "get from a closed port",
			  NT_CMD(get, CARD_B, closed, 1, 0, w.handle, 0, 100, 0),
			  -ECONNREFUSED },
			{ "long get from a closed port",
			  NT_CMD(get, CARD_B, closed, 1, 0, w.handle, 0, L, 0),
			  -ECONNREFUSED },
			{ "send to a port beyond the card's ports",
			  NT_CMD(send, CARD_B, self->q.max_ports + 7, s.handle, 0, 1, 0, 0),
			  -ECONNREFUSED },
		};

		run_bad(_metadata, &p, bc, sizeof(bc) / sizeof(bc[0]));
	} while (0);
	/* Nothing was written anywhere. */
	EXPECT_EQ(-1, diff_byte(w.buf, L, GUARD));
	EXPECT_EQ(-1, diff_byte(ro.buf, L, GUARD));
	/* And the port goes on. */
	EXPECT_EQ(0, nt_cq_flags(&p) & NICOFF_RING_ERROR);
	nicoff_prep_nop(&c, 99);
	run_ok(_metadata, &p, &c, &cqe);
	nt_port_close(&p);
}

/* --------------------------------------------- remote access errors -- */

#define RA_LEN		(64u << 10)
#define RA_POFF		1000	/* the one valid put at the end */
#define RA_PLEN		100

static int child_remote(struct chan *ch, void *arg)
{
	struct hello me = { .card = CARD_B }, pa;
	struct nt_region rw, ro, wo, x;
	struct nicoff_cqe q;
	unsigned char *want;
	uint64_t last = 0;
	struct nt_port p;
	int got = 0;

	(void)arg;
	CKEQ(0, child_port(&p, 16, &rw, RA_LEN, NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE,
			   0));
	CKEQ(0, nt_region_new(&p, &ro, RA_LEN, NICOFF_ACCESS_REMOTE_READ, 0));
	CKEQ(0, nt_region_new(&p, &wo, RA_LEN, NICOFF_ACCESS_REMOTE_WRITE, 0));
	CKEQ(0, nt_region_new(&p, &x, 4096, NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE,
			   0));
	CKEQ(0, nt_dereg_mr(p.fd, x.handle));
	nt_fill_pattern(rw.buf, RA_LEN, 11);
	nt_fill_pattern(ro.buf, RA_LEN, 12);
	nt_fill_pattern(wo.buf, RA_LEN, 13);
	me.port = p.po.port;
	me.rkey[0] = rw.rkey;
	me.rkey[1] = ro.rkey;
	me.rkey[2] = wo.rkey;
	me.rkey[3] = x.rkey;
	CK(to_parent(ch, &me, sizeof(me)) == 0);
	/* v[0]: violations that reached us; v[1]: the errno of the last; port. */
	CK(from_parent(ch, &pa, sizeof(pa), CHILD_TMO) == 0);
	/* Best effort, coalesced: result counts them all, status is the last's. */
	while (last < pa.v[0]) {
		CKEQ(0, wait1(&p, &q, TMO));
		CKEQ(NICOFF_OP_REMOTE_ACCESS_ERROR, q.opcode);
		CK(q.status == -ENOENT || q.status == -ERANGE || q.status == -EACCES);
		CKEQ(CARD_A, q.src_card);
		CKEQ(pa.port, q.src_port);
		CK(q.result > last && q.result <= pa.v[0]);
		last = q.result;
		got++;
		if (last == pa.v[0])
			CKEQ((int64_t)pa.v[1], q.status);
	}
	fprintf(stderr, "# child: %d REMOTE_ACCESS_ERROR completions for %llu violations\n", got,
		(unsigned long long)pa.v[0]);
	CK(cq_stays_empty(&p, 100));
	/* Nothing written but the one valid put. */
	want = malloc(RA_LEN);
	CK(want);
	nt_fill_pattern(want, RA_LEN, 11);
	nt_fill_pattern(want + RA_POFF, RA_PLEN, 99);
	CKEQ(0, memcmp(want, rw.buf, RA_LEN));
	free(want);
	CKEQ(-1, diff_pattern(ro.buf, RA_LEN, 12));
	CKEQ(-1, diff_pattern(wo.buf, RA_LEN, 13));
	return 0;
}

TEST_F_TIMEOUT(p2p, remote_access_errors, 120)
{
	struct hello me = { .card = CARD_A }, ci;
	struct nt_region s, w, nw;
	struct nicoff_cqe cqe;
	struct nicoff_cmd c;
	struct nt_port p;
	struct chan ch;
	unsigned char *want;
	uint32_t P;

	parent_port(_metadata, &ch, child_remote, NULL, &p, 16, &s, 2 * RA_LEN);
	ASSERT_EQ(0, nt_region_new(&p, &w, 2 * RA_LEN, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	ASSERT_EQ(0, nt_region_new(&p, &nw, RA_LEN, NICOFF_ACCESS_REMOTE_WRITE, GUARD));
	nt_fill_pattern(s.buf, 2 * RA_LEN, 50);
	ASSERT_EQ(0, from_child(&ch, &ci, sizeof(ci), TMO));
	P = ci.port;
	{
		const struct bad_case remote[] = {
			{ "put with a wrong rkey",
			  NT_CMD(put, CARD_B, P, ci.rkey[0] ^ 0x80000000u, 0, s.handle, 0, 16, 0),
			  -ENOENT },
			{ "put to a deregistered region",
			  NT_CMD(put, CARD_B, P, ci.rkey[3], 0, s.handle, 0, 16, 0),
			  -ENOENT },
			{ "put across the end of the region",
			  NT_CMD(put, CARD_B, P, ci.rkey[0], RA_LEN - 10, s.handle, 0, 20, 0),
			  -ERANGE },
			{ "put just past the end",
			  NT_CMD(put, CARD_B, P, ci.rkey[0], RA_LEN, s.handle, 0, 1, 0),
			  -ERANGE },
			{ "long put one byte too long",
			  NT_CMD(put, CARD_B, P, ci.rkey[0], 0, s.handle, 0, RA_LEN + 1, 0),
			  -ERANGE },
			{ "put without REMOTE_WRITE",
			  NT_CMD(put, CARD_B, P, ci.rkey[1], 0, s.handle, 0, 16, 0),
			  -EACCES },
			{ "get without REMOTE_READ",
			  NT_CMD(get, CARD_B, P, ci.rkey[2], 0, w.handle, 0, 16, 0),
			  -EACCES },
			{ "get with a wrong rkey",
			  NT_CMD(get, CARD_B, P, ci.rkey[0] ^ 0x80000000u, 0, w.handle, 0, 16, 0),
			  -ENOENT },
			{ "get across the end of the region",
			  NT_CMD(get, CARD_B, P, ci.rkey[0], RA_LEN - 1, w.handle, 0, 2, 0),
			  -ERANGE },
		};
		const struct bad_case local[] = {
			{ "get into a region without LOCAL_WRITE",
			  NT_CMD(get, CARD_B, P, ci.rkey[0], 0, nw.handle, 0, 16, 0),
			  -EACCES },
			{ "put with a wrapping remote offset",
			  NT_CMD(put, CARD_B, P, ci.rkey[0], ~0ull - 4, s.handle, 0, 8, 0),
			  -ERANGE },
			{ "put longer than max_msg",
			  NT_CMD(put, CARD_B, P, ci.rkey[0], 0, s.handle, 0, FW_MAX_MSG + 1, 0),
			  -EMSGSIZE },
			{ "put from beyond the local region",
			  NT_CMD(put, CARD_B, P, ci.rkey[0], 0, s.handle, RA_LEN, RA_LEN + 1, 0),
			  -ERANGE },
		};

		run_bad(_metadata, &p, remote, sizeof(remote) / sizeof(remote[0]));
		run_bad(_metadata, &p, local, sizeof(local) / sizeof(local[0]));
		me.v[0] = sizeof(remote) / sizeof(remote[0]);
		me.v[1] = (uint64_t)(int64_t)remote[me.v[0] - 1].status;
	}
	/* The failed gets wrote nothing. */
	EXPECT_EQ(-1, diff_byte(w.buf, w.len, GUARD));
	EXPECT_EQ(-1, diff_byte(nw.buf, nw.len, GUARD));
	/* The connection is fine: a valid put and gets. */
	nicoff_prep_put(&c, CARD_B, P, ci.rkey[0], RA_POFF, s.handle, 0, RA_PLEN, 1);
	nt_fill_pattern(s.buf, RA_PLEN, 99);
	run_ok(_metadata, &p, &c, &cqe);
	nicoff_prep_get(&c, CARD_B, P, ci.rkey[1], 0, w.handle, 0, RA_LEN, 2);
	run_ok(_metadata, &p, &c, &cqe);
	EXPECT_EQ(-1, diff_pattern(w.buf, RA_LEN, 12));
	nicoff_prep_get(&c, CARD_B, P, ci.rkey[0], 0, w.handle, 0, RA_LEN, 3);
	run_ok(_metadata, &p, &c, &cqe);
	want = malloc(RA_LEN);
	ASSERT_NE(NULL, want);
	nt_fill_pattern(want, RA_LEN, 11);
	nt_fill_pattern(want + RA_POFF, RA_PLEN, 99);
	EXPECT_EQ(0, memcmp(want, w.buf, RA_LEN));
	free(want);
	me.port = p.po.port;
	ASSERT_EQ(0, to_child(&ch, &me, sizeof(me)));
	EXPECT_EQ(0, end_child(&ch));
	nt_port_close(&p);
}

/* ---------------------------------------- receive buffer too small -- */

static int child_small(struct chan *ch, void *arg)
{
	struct nicoff_cmd c[2];
	struct nicoff_cqe q[2];
	struct nt_port p;
	struct nt_region r;

	(void)arg;
	CKEQ(0, child_port(&p, 16, &r, 8192, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	nicoff_prep_recv(&c[0], r.handle, 0, 100, NICOFF_ANY, NICOFF_ANY, 0, 0, 1);
	nicoff_prep_recv(&c[1], r.handle, 4096, 4096, NICOFF_ANY, NICOFF_ANY, 0, 0, 2);
	CKEQ(0, nt_submit(&p, c, 2));
	CKEQ(0, wait_consumed(&p, TMO));
	CK(tell_port(ch, &p, 0) == 0);
	CKEQ(2, nt_wait_cqes(&p, q, 2, CHILD_TMO));
	/* Too long: -EMSGSIZE with the full length; nothing past the buffer. */
	CKEQ(1, q[0].tag);
	CKEQ(-EMSGSIZE, q[0].status);
	CKEQ(5000, q[0].result);
	CKEQ(1, q[0].msg_tag);
	CKEQ(-1, diff_byte(r.buf + 100, 4096 - 100, GUARD));
	/* The next message is not disturbed. */
	CKEQ(2, q[1].tag);
	CKEQ(0, q[1].status);
	CKEQ(50, q[1].result);
	CKEQ(2, q[1].msg_tag);
	CKEQ(-1, diff_pattern(r.buf + 4096, 50, 51));
	CKEQ(-1, diff_byte(r.buf + 4096 + 50, 4096 - 50, GUARD));
	return 0;
}

TEST_F_TIMEOUT(p2p, recv_buffer_too_small, 120)
{
	struct nicoff_cqe cqe;
	struct nicoff_cmd c;
	struct nt_region s;
	struct nt_port p;
	struct hello ci;
	struct chan ch;

	parent_port(_metadata, &ch, child_small, NULL, &p, 16, &s, 8192);
	nt_fill_pattern(s.buf, 5000, 50);
	nt_fill_pattern(s.buf + 5000, 50, 51);
	ASSERT_EQ(0, from_child(&ch, &ci, sizeof(ci), TMO));
	/* The sender is told nothing of the receiver's truncation. */
	nicoff_prep_send(&c, CARD_B, ci.port, s.handle, 0, 5000, 1, 1);
	run_ok(_metadata, &p, &c, &cqe);
	EXPECT_EQ(5000, cqe.result);
	nicoff_prep_send(&c, CARD_B, ci.port, s.handle, 5000, 50, 2, 2);
	run_ok(_metadata, &p, &c, &cqe);
	EXPECT_EQ(50, cqe.result);
	EXPECT_EQ(0, end_child(&ch));
	nt_port_close(&p);
}

/* ------------------------------------------------------- dead peers -- */

/* Open a port, say where, wait for the word, then exit (closing it). */
static int child_closer(struct chan *ch, void *arg)
{
	struct nt_port p;
	struct nt_region r;

	(void)arg;
	CKEQ(0, child_port(&p, 16, &r, 65536,
			   NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE, 0));
	CK(tell_port(ch, &p, r.rkey) == 0);
	CK(token_from_parent(ch, CHILD_TMO) == 0);
	return 0;
}

/* The process is gone, and its port with it: nothing reaches it. */
static void dead_peer_refuses(struct __test_metadata *_metadata, struct nt_port *p,
			      const struct hello *ci, const struct nt_region *s,
			      const struct nt_region *w)
{
	const struct bad_case bc[] = {
		{ "send to the dead peer", NT_CMD(send, CARD_B, ci->port, s->handle, 0, 10, 0, 0),
		  -ECONNREFUSED },
		{ "long send to the dead peer",
		  NT_CMD(send, CARD_B, ci->port, s->handle, 0, 65536, 0, 0), -ECONNREFUSED },
		{ "put to the dead peer",
		  NT_CMD(put, CARD_B, ci->port, ci->rkey[0], 0, s->handle, 0, 100, 0),
		  -ECONNREFUSED },
		{ "get from the dead peer",
		  NT_CMD(get, CARD_B, ci->port, ci->rkey[0], 0, w->handle, 0, 100, 0),
		  -ECONNREFUSED },
	};

	run_bad(_metadata, p, bc, sizeof(bc) / sizeof(bc[0]));
}

TEST_F_TIMEOUT(p2p, dead_peer_port_closed, 120)
{
	struct nt_region s, w;
	struct nicoff_cqe cqe;
	struct nicoff_cmd c;
	struct nt_port p, q;
	struct hello ci;
	struct chan ch;

	parent_port(_metadata, &ch, child_closer, NULL, &p, 16, &s, 65536);
	ASSERT_EQ(0, nt_region_new(&p, &w, 65536, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	ASSERT_EQ(0, from_child(&ch, &ci, sizeof(ci), TMO));
	/* While the peer lives, its memory is there. */
	nicoff_prep_put(&c, CARD_B, ci.port, ci.rkey[0], 0, s.handle, 0, 100, 1);
	run_ok(_metadata, &p, &c, &cqe);
	ASSERT_EQ(0, token_to_child(&ch));
	ASSERT_EQ(0, end_child(&ch));
	dead_peer_refuses(_metadata, &p, &ci, &s, &w);
	EXPECT_EQ(-1, diff_byte(w.buf, w.len, GUARD));
	/* A new port with the same number knows nothing of the old rkey. */
	ASSERT_EQ(0, nt_port_open(&q, CARD_B, ci.port, 16, 16));
	nicoff_prep_put(&c, CARD_B, ci.port, ci.rkey[0], 0, s.handle, 0, 100, 2);
	ASSERT_EQ(0, nt_run_one(&p, &c, &cqe, TMO));
	EXPECT_EQ(-ENOENT, cqe.status);
	ASSERT_EQ(0, wait1(&q, &cqe, TMO));
	EXPECT_EQ(NICOFF_OP_REMOTE_ACCESS_ERROR, cqe.opcode);
	EXPECT_EQ(-ENOENT, cqe.status);
	EXPECT_EQ(1, cqe.result);
	EXPECT_EQ(CARD_A, cqe.src_card);
	EXPECT_EQ(p.po.port, cqe.src_port);
	nt_port_close(&q);
	nt_port_close(&p);
}

/*
 * How long a sender keeps retrying an unacknowledged packet before its
 * operations fail (transport.c: fw_peer_rto(), timeout doubled up to
 * rto_max, max_retries resends, the next expiry fails the peer).
 */
static uint64_t retry_budget_us(unsigned long rto_us, unsigned long retries)
{
	uint64_t rto = rto_us, sum = 0;
	unsigned long i;

	for (i = 0; i <= retries; i++) {
		sum += rto;
		rto = rto > FW_RTO_MAX_US / 2 ? FW_RTO_MAX_US : rto * 2;
	}
	return sum;
}

#define NR_MSG		(1u << 20)
#define NR_MAX		32

/* A peer that posts no receive until told. */
static int child_no_recv(struct chan *ch, void *arg)
{
	struct hello pa;
	struct nicoff_cqe q;
	struct nicoff_cmd c;
	struct nt_port p;
	struct nt_region r;
	unsigned int k;

	(void)arg;
	CKEQ(0, child_port(&p, 16, &r, NR_MSG + 4096, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	CK(tell_port(ch, &p, 0) == 0);
	/* v[0]: messages the card took in before the sender gave up. */
	CK(from_parent(ch, &pa, sizeof(pa), CHILD_TMO) == 0);
	for (k = 0; k < pa.v[0]; k++) {
		uint64_t id;

		memset(r.buf, GUARD, NR_MSG + 1);
		nicoff_prep_recv(&c, r.handle, 0, NR_MSG + 4096, NICOFF_ANY, NICOFF_ANY, 0, 0, k);
		CKEQ(0, nt_submit(&p, &c, 1));
		CKEQ(0, wait1(&p, &q, TMO));
		CKEQ(0, q.status);
		CKEQ(NR_MSG, q.result);
		CKEQ(k, q.msg_tag);
		memcpy(&id, r.buf, sizeof(id));
		CKEQ(k, id);
		CKEQ(-1, diff_pattern(r.buf + 8, NR_MSG - 8, 600 + k));
		CKEQ(GUARD, r.buf[NR_MSG]);
	}
	/* The message that timed out was never taken: next comes the new one. */
	CK(token_to_parent(ch) == 0);
	nicoff_prep_recv(&c, r.handle, 0, NR_MSG, NICOFF_ANY, NICOFF_ANY, 0, 0, 1000);
	CKEQ(0, nt_submit(&p, &c, 1));
	CKEQ(0, wait1(&p, &q, TMO));
	CKEQ(0, q.status);
	CKEQ(0x77, q.msg_tag);
	CKEQ(100, q.result);
	CKEQ(-1, diff_pattern(r.buf, 100, 700));
	CK(cq_stays_empty(&p, 50));
	return 0;
}

TEST_F_TIMEOUT(p2p, dead_peer_never_receives, 180)
{
	uint64_t budget = retry_budget_us(self->rto_us, self->max_retries);
	struct hello me = { .card = CARD_A }, ci;
	struct nicoff_cqe cqe;
	struct nicoff_cmd c;
	struct nt_region s, s2;
	struct nt_port p;
	struct chan ch;
	uint64_t t0 = 0, took = 0;
	unsigned int k;

	parent_port(_metadata, &ch, child_no_recv, NULL, &p, 16, &s, NR_MSG);
	ASSERT_EQ(0, nt_region_new(&p, &s2, 4096, 0, 0));
	nt_fill_pattern(s2.buf, 100, 700);
	ASSERT_EQ(0, from_child(&ch, &ci, sizeof(ci), TMO));
	/*
	 * Messages are buffered unexpected up to the port's budget; then the
	 * card refuses the message (receiver not ready) and the sender tries
	 * it again until its budget runs out: -ENOBUFS, for it alone.
	 */
	for (k = 0; k < NR_MAX; k++) {
		nt_fill_pattern(s.buf + 8, NR_MSG - 8, 600 + k);
		memcpy(s.buf, &(uint64_t){ k }, 8);
		nicoff_prep_send(&c, CARD_B, ci.port, s.handle, 0, NR_MSG, k, k);
		t0 = nt_now_ns();
		ASSERT_EQ(0, nt_run_one(&p, &c, &cqe, CHILD_TMO)) TH_LOG("message %u", k);
		took = (nt_now_ns() - t0) / 1000;
		if (cqe.status)
			break;
		EXPECT_EQ(NR_MSG, cqe.result);
	}
	ASSERT_LT(k, NR_MAX) TH_LOG("%u MiB buffered unexpected: no limit?", k);
	ASSERT_LT(0, k);
	EXPECT_EQ(-ENOBUFS, cqe.status);
	TH_LOG("%u messages buffered; the next failed after %llu us (retry budget %llu us)", k,
	       (unsigned long long)took, (unsigned long long)budget);
	/* No earlier than the retry budget, and not much later. */
	EXPECT_LE(budget * 9 / 10, took);
	EXPECT_GE(budget + FW_RTO_MAX_US + 5000000, took);
	/* The connection starts over: the receiver gets what it buffered, then this. */
	me.v[0] = k;
	ASSERT_EQ(0, to_child(&ch, &me, sizeof(me)));
	ASSERT_EQ(0, token_from_child(&ch, CHILD_TMO));
	nicoff_prep_send(&c, CARD_B, ci.port, s2.handle, 0, 100, 0x77, 0x1000);
	run_ok(_metadata, &p, &c, &cqe);
	EXPECT_EQ(0, end_child(&ch));
	nt_port_close(&p);
}

/* A peer that is killed while a long message is on its way to it. */
static int child_victim(struct chan *ch, void *arg)
{
	struct nicoff_cmd c;
	struct nt_port p;
	struct nt_region r;

	(void)arg;
	CKEQ(0, child_port(&p, 16, &r, 4 << 20, NICOFF_ACCESS_LOCAL_WRITE, 0));
	nicoff_prep_recv(&c, r.handle, 0, r.len, NICOFF_ANY, NICOFF_ANY, 0, 0, 1);
	CKEQ(0, nt_submit(&p, &c, 1));
	CKEQ(0, wait_consumed(&p, TMO));
	CK(tell_port(ch, &p, 0) == 0);
	token_from_parent(ch, CHILD_TMO);
	return 0;
}

TEST_F_TIMEOUT(p2p, peer_killed_mid_send, 120)
{
	struct nicoff_cqe cqe;
	struct nicoff_cmd c;
	struct nt_region s;
	struct nt_port p;
	struct hello ci;
	struct chan ch;
	uint64_t t0;

	parent_port(_metadata, &ch, child_victim, NULL, &p, 16, &s, 4 << 20);
	ASSERT_EQ(0, from_child(&ch, &ci, sizeof(ci), TMO));
	nicoff_prep_send(&c, CARD_B, ci.port, s.handle, 0, s.len, 1, 1);
	ASSERT_EQ(0, nt_submit(&p, &c, 1));
	t0 = nt_now_ns();
	kill(ch.pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, end_child(&ch));
	/* Whatever got there: the send completes, well within the retry budget. */
	ASSERT_EQ(0, wait1(&p, &cqe, TMO));
	TH_LOG("send to a killed peer: status %d after %llu us", cqe.status,
	       (unsigned long long)(nt_now_ns() - t0) / 1000);
	EXPECT_TRUE(cqe.status == 0 || cqe.status == -ECONNREFUSED ||
		    cqe.status == -ECONNABORTED) TH_LOG("status %d", cqe.status);
	nicoff_prep_send(&c, CARD_B, ci.port, s.handle, 0, 100, 1, 2);
	ASSERT_EQ(0, nt_run_one(&p, &c, &cqe, TMO));
	EXPECT_EQ(-ECONNREFUSED, cqe.status);
	nt_port_close(&p);
}

/* ---------------------------------------------- two ports, one card -- */

TEST_F_TIMEOUT(p2p, same_card, 60)
{
	const size_t L = (64 << 10) + 1;
	struct nt_region s, r, t;
	struct nicoff_cqe cqe;
	struct nicoff_cmd c;
	struct nt_port a, b;

	ASSERT_EQ(0, nt_port_open(&a, CARD_A, NICOFF_PORT_ANY, 16, 16));
	ASSERT_EQ(0, nt_port_open(&b, CARD_A, NICOFF_PORT_ANY, 16, 16));
	ASSERT_EQ(0, nt_region_new(&a, &s, L, 0, 0));
	ASSERT_EQ(0, nt_region_new(&a, &t, L, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	ASSERT_EQ(0, nt_region_new(&b, &r, L + 1, NICOFF_ACCESS_LOCAL_WRITE |
				NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE, GUARD));
	nt_fill_pattern(s.buf, L, 31);
	nicoff_prep_recv(&c, r.handle, 0, L, CARD_A, a.po.port, 9, ~0ull, 1);
	ASSERT_EQ(0, nt_submit(&b, &c, 1));
	nicoff_prep_send(&c, CARD_A, b.po.port, s.handle, 0, L, 9, 2);
	run_ok(_metadata, &a, &c, &cqe);
	ASSERT_EQ(0, wait1(&b, &cqe, TMO));
	EXPECT_EQ(0, cqe.status);
	EXPECT_EQ(L, cqe.result);
	EXPECT_EQ(CARD_A, cqe.src_card);
	EXPECT_EQ(a.po.port, cqe.src_port);
	EXPECT_EQ(-1, diff_pattern(r.buf, L, 31));
	EXPECT_EQ(GUARD, r.buf[L]);
	nt_fill_pattern(s.buf, L, 32);
	nicoff_prep_put(&c, CARD_A, b.po.port, r.rkey, 0, s.handle, 0, L, 3);
	run_ok(_metadata, &a, &c, &cqe);
	EXPECT_EQ(-1, diff_pattern(r.buf, L, 32));
	nicoff_prep_get(&c, CARD_A, b.po.port, r.rkey, 0, t.handle, 0, L, 4);
	run_ok(_metadata, &a, &c, &cqe);
	EXPECT_EQ(-1, diff_pattern(t.buf, L, 32));
	EXPECT_TRUE(cq_stays_empty(&b, 10));
	nt_port_close(&b);
	nt_port_close(&a);
}

/* ------------------------------------------------------ zero length -- */

TEST_F_TIMEOUT(p2p, zero_length, 60)
{
	struct nicoff_cqe cqe;
	struct nicoff_cmd c;
	struct nt_region s, w, t;
	struct nt_port a, b;

	ASSERT_EQ(0, nt_port_open(&a, CARD_A, NICOFF_PORT_ANY, 16, 16));
	ASSERT_EQ(0, nt_port_open(&b, CARD_B, NICOFF_PORT_ANY, 16, 16));
	ASSERT_EQ(0, nt_region_new(&a, &s, 4096, 0, 0));
	ASSERT_EQ(0, nt_region_new(&a, &w, 4096, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	ASSERT_EQ(0, nt_region_new(&b, &t, 4096, NICOFF_ACCESS_LOCAL_WRITE |
				NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE, GUARD));
	/* An empty message into a posted empty receive. */
	nicoff_prep_recv(&c, t.handle, 0, 0, CARD_A, a.po.port, 0, 0, 1);
	ASSERT_EQ(0, nt_submit(&b, &c, 1));
	ASSERT_EQ(0, wait_consumed(&b, TMO));
	nicoff_prep_send(&c, CARD_B, b.po.port, s.handle, 0, 0, 5, 2);
	run_ok(_metadata, &a, &c, &cqe);
	EXPECT_EQ(0, cqe.result);
	ASSERT_EQ(0, wait1(&b, &cqe, TMO));
	EXPECT_EQ(1, cqe.tag);
	EXPECT_EQ(0, cqe.status);
	EXPECT_EQ(0, cqe.result);
	EXPECT_EQ(5, cqe.msg_tag);
	/* An empty message nobody waits for, taken later. */
	nicoff_prep_send(&c, CARD_B, b.po.port, s.handle, 4096, 0, 6, 3);
	run_ok(_metadata, &a, &c, &cqe);
	EXPECT_TRUE(cq_stays_empty(&b, 10));
	nicoff_prep_recv(&c, t.handle, 0, 16, NICOFF_ANY, NICOFF_ANY, 0, 0, 4);
	ASSERT_EQ(0, nt_run_one(&b, &c, &cqe, TMO));
	EXPECT_EQ(4, cqe.tag);
	EXPECT_EQ(0, cqe.status);
	EXPECT_EQ(0, cqe.result);
	EXPECT_EQ(6, cqe.msg_tag);
	/* A message into an empty receive: too long. */
	nicoff_prep_recv(&c, t.handle, 4096, 0, NICOFF_ANY, NICOFF_ANY, 0, 0, 5);
	ASSERT_EQ(0, nt_submit(&b, &c, 1));
	ASSERT_EQ(0, wait_consumed(&b, TMO));
	nicoff_prep_send(&c, CARD_B, b.po.port, s.handle, 0, 100, 7, 6);
	run_ok(_metadata, &a, &c, &cqe);
	ASSERT_EQ(0, wait1(&b, &cqe, TMO));
	EXPECT_EQ(5, cqe.tag);
	EXPECT_EQ(-EMSGSIZE, cqe.status);
	EXPECT_EQ(100, cqe.result);
	/* Empty put and get, even at the very end of the region. */
	nicoff_prep_put(&c, CARD_B, b.po.port, t.rkey, 4096, s.handle, 4096, 0, 7);
	run_ok(_metadata, &a, &c, &cqe);
	EXPECT_EQ(0, cqe.result);
	nicoff_prep_get(&c, CARD_B, b.po.port, t.rkey, 4096, w.handle, 0, 0, 8);
	run_ok(_metadata, &a, &c, &cqe);
	EXPECT_EQ(0, cqe.result);
	/* Empty or not, a wrong rkey is refused. */
	nicoff_prep_put(&c, CARD_B, b.po.port, t.rkey ^ 0x80000000u, 0, s.handle, 0, 0, 9);
	ASSERT_EQ(0, nt_run_one(&a, &c, &cqe, TMO));
	EXPECT_EQ(-ENOENT, cqe.status);
	ASSERT_EQ(0, wait1(&b, &cqe, TMO));
	EXPECT_EQ(NICOFF_OP_REMOTE_ACCESS_ERROR, cqe.opcode);
	EXPECT_EQ(-ENOENT, cqe.status);
	EXPECT_EQ(-1, diff_byte(t.buf, t.len, GUARD));
	EXPECT_EQ(-1, diff_byte(w.buf, w.len, GUARD));
	EXPECT_TRUE(cq_stays_empty(&b, 10));
	nt_port_close(&b);
	nt_port_close(&a);
}

/* ------------------------------------------ receiver not ready, then is -- */

#define RN_N	6

static int child_rnr(struct chan *ch, void *arg)
{
	struct nicoff_cqe q[RN_N];
	struct nicoff_cmd c;
	struct nt_port p;
	struct nt_region r;
	unsigned int k;

	(void)arg;
	CKEQ(0, child_port(&p, 16, &r, RN_N * (NR_MSG + 4096), NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	CK(tell_port(ch, &p, 0) == 0);
	/* The first four filled the unexpected budget; the fifth is refused. */
	CK(token_from_parent(ch, CHILD_TMO) == 0);
	nt_sleep_ms(50);
	for (k = 0; k < RN_N; k++) {
		nicoff_prep_recv(&c, r.handle, k * (NR_MSG + 4096), NR_MSG, NICOFF_ANY, NICOFF_ANY,
				 0, 0, k);
		CKEQ(0, nt_submit(&p, &c, 1));
	}
	CKEQ(RN_N, nt_wait_cqes(&p, q, RN_N, CHILD_TMO));
	for (k = 0; k < RN_N; k++) {
		unsigned char *b = r.buf + k * (NR_MSG + 4096);
		uint64_t id;

		CKEQ(k, q[k].tag);
		CKEQ(0, q[k].status);
		CKEQ(NR_MSG, q[k].result);
		CKEQ(k, q[k].msg_tag);
		memcpy(&id, b, 8);
		CKEQ(k, id);
		CKEQ(-1, diff_pattern(b + 8, NR_MSG - 8, 600 + k));
		CKEQ(-1, diff_byte(b + NR_MSG, 4096, GUARD));
	}
	return 0;
}

/* The counters the module reports for a card, against the ABI's list. */
TEST_F_TIMEOUT(p2p, counters_all_reported, 60)
{
	struct nt_card_stats st;
	unsigned int card;

	for (card = CARD_A; card <= CARD_B; card++) {
		ASSERT_EQ(0, nt_nl_card(&self->nl, card, &st));
#define NICOFF_NL_STAT_FW(attr, name)						\
		EXPECT_EQ(1, st.seen[NICOFF_NL_STAT_##attr])			\
			TH_LOG("card %u: counter " #name " came %u times", card,	\
			       st.seen[NICOFF_NL_STAT_##attr]);
#define NICOFF_NL_STAT_HOST NICOFF_NL_STAT_FW
#include <uapi/nicoff_lists.h>
#undef NICOFF_NL_STAT_FW
#undef NICOFF_NL_STAT_HOST
		EXPECT_EQ(0, st.unknown);
	}
}

TEST_F_TIMEOUT(p2p, receiver_not_ready, 120)
{
	struct nt_card_stats s0, s1, a0, a1;
	struct nicoff_cqe cqe[RN_N];
	struct nt_region s;
	struct nt_port p;
	struct hello ci;
	struct chan ch;
	unsigned int k;

	parent_port(_metadata, &ch, child_rnr, NULL, &p, 16, &s, RN_N * NR_MSG);
	for (k = 0; k < RN_N; k++) {
		nt_fill_pattern(s.buf + k * NR_MSG + 8, NR_MSG - 8, 600 + k);
		memcpy(s.buf + k * NR_MSG, &(uint64_t){ k }, 8);
	}
	ASSERT_EQ(0, from_child(&ch, &ci, sizeof(ci), TMO));
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_B, &s0));
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_A, &a0));
	for (k = 0; k < RN_N; k++) {
		struct nicoff_cmd c = NT_CMD(send, CARD_B, ci.port, s.handle, k * NR_MSG, NR_MSG, k,
					     k);

		ASSERT_EQ(0, nt_submit(&p, &c, 1));
	}
	ASSERT_EQ(4, nt_wait_cqes(&p, cqe, 4, CHILD_TMO));
	ASSERT_EQ(0, token_to_child(&ch));
	ASSERT_EQ(RN_N - 4, nt_wait_cqes(&p, cqe + 4, RN_N - 4, CHILD_TMO));
	for (k = 0; k < RN_N; k++) {
		EXPECT_EQ(k, cqe[k].tag);
		EXPECT_EQ(0, cqe[k].status) TH_LOG("message %u", k);
	}
	EXPECT_EQ(0, end_child(&ch));
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_B, &s1));
	TH_LOG("receiver-not-ready drops: %llu",
	       (unsigned long long)(ST(s1, RNR_DROPS) - ST(s0, RNR_DROPS)));
	EXPECT_LT(ST(s0, RNR_DROPS), ST(s1, RNR_DROPS));
	/* What card B refused, card A sent again, and none gave up. */
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_A, &a1));
	EXPECT_LT(ST(a0, RNR_RESENDS), ST(a1, RNR_RESENDS));
	EXPECT_EQ(ST(a0, RNR_FAILURES), ST(a1, RNR_FAILURES));
	nt_port_close(&p);
}

/* ---------------------------------------------------- dead link -- */

/* Card A's own faults drop everything it sends: its operations time out. */
TEST_F_TIMEOUT(p2p, link_down_times_out, 120)
{
	uint64_t budget = retry_budget_us(self->rto_us, self->max_retries);
	struct nt_card_stats s0, s1;
	struct nicoff_cqe cqe;
	struct nicoff_cmd c;
	struct nt_region s, w, t;
	struct nt_port a, b;
	int i;

	ASSERT_EQ(0, nt_port_open(&a, CARD_A, NICOFF_PORT_ANY, 16, 16));
	ASSERT_EQ(0, nt_port_open(&b, CARD_B, NICOFF_PORT_ANY, 16, 16));
	ASSERT_EQ(0, nt_region_new(&a, &s, 65536, 0, 0));
	ASSERT_EQ(0, nt_region_new(&a, &w, 65536, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	ASSERT_EQ(0, nt_region_new(&b, &t, 65536, NICOFF_ACCESS_LOCAL_WRITE |
				NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE, GUARD));
	nt_fill_pattern(s.buf, 65536, 81);
	nicoff_prep_recv(&c, t.handle, 0, 65536, CARD_A, a.po.port, 0, 0, 1);
	ASSERT_EQ(0, nt_submit(&b, &c, 1));
	ASSERT_EQ(0, wait_consumed(&b, TMO));

	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_A, &s0));
	EXPECT_EQ(1, s0.global);
	ASSERT_EQ(0, nt_nl_card_set_drop(&self->nl, CARD_A, 1000000));
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_A, &s1));
	EXPECT_EQ(0, s1.global);
	for (i = 0; i < 3; i++) {
		uint64_t t0 = nt_now_ns(), took;

		if (i == 0)
			nicoff_prep_send(&c, CARD_B, b.po.port, s.handle, 0, 5000, 1, 10);
		else if (i == 1)
			nicoff_prep_put(&c, CARD_B, b.po.port, t.rkey, 0, s.handle, 0, 65536, 11);
		else
			nicoff_prep_get(&c, CARD_B, b.po.port, t.rkey, 0, w.handle, 0, 65536, 12);
		ASSERT_EQ(0, nt_run_one(&a, &c, &cqe, TMO));
		took = (nt_now_ns() - t0) / 1000;
		TH_LOG("opcode %u over a dead link: status %d after %llu us (budget %llu us)",
		       c.opcode, cqe.status, (unsigned long long)took, (unsigned long long)budget);
		EXPECT_EQ(-ETIMEDOUT, cqe.status);
		EXPECT_LE(budget * 9 / 10, took);
		EXPECT_GE(budget + FW_RTO_MAX_US + 5000000, took);
	}
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_A, &s1));
	/* Every try of every packet was dropped (three ops, 1 + max_retries tries each). */
	EXPECT_LE(s0.v[NICOFF_NL_STAT_FAULT_DROPS] + 3 * (self->max_retries + 1),
		  s1.v[NICOFF_NL_STAT_FAULT_DROPS]);
	/* Card A gave its connection to card B up, once per operation at least. */
	EXPECT_LE(ST(s0, CONN_FAILURES) + 3, ST(s1, CONN_FAILURES));
	/* Nothing reached card B's port. */
	EXPECT_TRUE(cq_stays_empty(&b, 20));
	EXPECT_EQ(-1, diff_byte(t.buf, t.len, GUARD));
	EXPECT_EQ(-1, diff_byte(w.buf, w.len, GUARD));

	/* The link is back: a new connection epoch, and exactly one message. */
	ASSERT_EQ(0, nt_nl_card_follow_global(&self->nl, CARD_A));
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_A, &s1));
	EXPECT_EQ(1, s1.global);
	nicoff_prep_send(&c, CARD_B, b.po.port, s.handle, 100, 5000, 2, 13);
	run_ok(_metadata, &a, &c, &cqe);
	ASSERT_EQ(0, wait1(&b, &cqe, TMO));
	EXPECT_EQ(1, cqe.tag);
	EXPECT_EQ(0, cqe.status);
	EXPECT_EQ(2, cqe.msg_tag);
	EXPECT_EQ(5000, cqe.result);
	EXPECT_EQ(0, memcmp(t.buf, s.buf + 100, 5000));
	nicoff_prep_get(&c, CARD_B, b.po.port, t.rkey, 0, w.handle, 0, 5000, 14);
	run_ok(_metadata, &a, &c, &cqe);
	EXPECT_EQ(0, memcmp(w.buf, s.buf + 100, 5000));
	EXPECT_TRUE(cq_stays_empty(&b, 20));
	nt_port_close(&b);
	nt_port_close(&a);
}

/* ----------------------------------------------- two senders, one port -- */

#define FI_N	100

struct fan_arg {
	uint32_t card;
	unsigned long mtu;
};

static int child_sender(struct chan *ch, void *arg)
{
	const struct fan_arg *fa = arg;
	const struct stream_cfg cfg = { .nmsg = FI_N, .mtu = fa->mtu };
	struct hello me = { .card = fa->card }, pa;
	struct nicoff_cqe q[FI_N];
	struct stream st;
	struct nt_port p;
	unsigned int sent = 0, done = 0;

	CKEQ(0, nt_port_open(&p, fa->card, NICOFF_PORT_ANY, 128, 128));
	CKEQ(0, stream_setup(&st, &p, &cfg, 0, 10 + fa->card, 0));
	me.port = p.po.port;
	CK(from_parent(ch, &pa, sizeof(pa), TMO) == 0);
	CK(to_parent(ch, &me, sizeof(me)) == 0);
	CK(token_from_parent(ch, CHILD_TMO) == 0);
	while (done < FI_N) {
		int got;

		while (sent < FI_N && sent - done < SW_SENDS) {
			struct nicoff_cmd c = NT_CMD(send, CARD_A, pa.port, st.s.handle,
						     sent * st.slot, sw_len(fa->mtu, sent), sent,
						     sent);

			CKEQ(0, nt_submit(&p, &c, 1));
			sent++;
		}
		got = nt_wait_cqes(&p, q, 1, TMO);
		CKEQ(1, got);
		CKEQ(0, q[0].status);
		done++;
	}
	CK(cq_stays_empty(&p, 10));
	return 0;
}

TEST_F_TIMEOUT(p2p, fan_in, 180)
{
	struct fan_arg fa[2] = { { CARD_B, self->mtu }, { 2, self->mtu } };
	struct hello me = { .card = CARD_A }, ci[2];
	unsigned int next[2] = { 0, 0 }, posted = 0, k;
	struct nicoff_cqe cqe[64];
	struct chan ch[2];
	unsigned char *want;
	struct nt_port p;
	struct nt_region r;
	size_t slot = round_page(3 * self->mtu + 8 + 1);
	int i;

	for (i = 0; i < 2; i++)
		ASSERT_LT(0, spawn(&ch[i], child_sender, &fa[i]));
	ASSERT_EQ(0, nt_port_open(&p, CARD_A, NICOFF_PORT_ANY, 256, 256));
	ASSERT_EQ(0, nt_region_new(&p, &r, 2 * FI_N * slot, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	want = malloc(slot);
	ASSERT_NE(NULL, want);
	me.port = p.po.port;
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, to_child(&ch[i], &me, sizeof(me)));
		ASSERT_EQ(0, from_child(&ch[i], &ci[i], sizeof(ci[i]), TMO));
	}
	/* Receives for each source, interleaved: tag = source << 16 | k. */
	while (posted < 2 * FI_N) {
		struct nicoff_cmd c[32];
		unsigned int n;

		for (n = 0; n < 32 && posted < 2 * FI_N; n++, posted++) {
			unsigned int src = posted & 1, kk = posted / 2;

			nicoff_prep_recv(&c[n], r.handle, posted * slot, slot, fa[src].card,
					 ci[src].port, 0, 0, (uint64_t)src << 16 | kk);
		}
		ASSERT_EQ(0, nt_submit(&p, c, n));
		ASSERT_EQ(0, wait_consumed(&p, TMO));
	}
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, token_to_child(&ch[i]));
	while (next[0] + next[1] < 2 * FI_N) {
		int got = nt_wait_cqes(&p, cqe, 1, TMO);

		ASSERT_EQ(1, got) TH_LOG("got %u and %u", next[0], next[1]);
		i = cqe[0].src_card == fa[0].card ? 0 : 1;
		k = next[i]++;
		/* Per source, in order, into that source's k-th receive. */
		ASSERT_EQ(fa[i].card, cqe[0].src_card);
		EXPECT_EQ(ci[i].port, cqe[0].src_port);
		ASSERT_EQ((uint64_t)i << 16 | k, cqe[0].tag);
		EXPECT_EQ(0, cqe[0].status);
		EXPECT_EQ(k, cqe[0].msg_tag);
		EXPECT_EQ(sw_len(self->mtu, k), cqe[0].result);
		sw_fill(want, sw_len(self->mtu, k), 10 + fa[i].card, k);
		EXPECT_EQ(0, memcmp(want, r.buf + (2 * k + i) * slot, sw_len(self->mtu, k)));
	}
	free(want);
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(0, end_child(&ch[i]));
	}
	nt_port_close(&p);
}

/* ------------------------------------- regions going away mid-transfer -- */

#define DG_LEN	(4u << 20)

/* Until the first 8 bytes of buf are not all GUARD any more (data came). */
static int wait_written(const volatile unsigned char *buf, int ms)
{
	uint64_t deadline = nt_now_ns() + (uint64_t)ms * 1000000ull;
	int i;

	for (;;) {
		for (i = 0; i < 8; i++)
			if (buf[i] != GUARD)
				return 0;
		if (nt_now_ns() >= deadline)
			return -ETIMEDOUT;
		sched_yield();
	}
}

static int child_dereg(struct chan *ch, void *arg)
{
	struct hello me = { .card = CARD_B }, pa;
	struct nt_region r, t, t2, r4;
	struct nicoff_cqe q;
	struct nicoff_cmd c;
	struct nt_port p;
	int32_t st;

	(void)arg;
	CKEQ(0, nt_port_open(&p, CARD_B, NICOFF_PORT_ANY, 16, 64));
	CKEQ(0, nt_region_new(&p, &r, 4096, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	CKEQ(0, nt_region_new(&p, &t, DG_LEN, NICOFF_ACCESS_REMOTE_READ, 0));
	CKEQ(0, nt_region_new(&p, &t2, DG_LEN, NICOFF_ACCESS_REMOTE_WRITE, GUARD));
	CKEQ(0, nt_region_new(&p, &r4, DG_LEN, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	nt_fill_pattern(t.buf, DG_LEN, 90);
	me.port = p.po.port;
	me.rkey[0] = t.rkey;
	me.rkey[1] = t2.rkey;
	CK(from_parent(ch, &pa, sizeof(pa), TMO) == 0);
	/* 1. A receive whose buffer is deregistered before the message comes. */
	nicoff_prep_recv(&c, r.handle, 0, 4096, NICOFF_ANY, NICOFF_ANY, 0, 0, 1);
	CKEQ(0, nt_submit(&p, &c, 1));
	CKEQ(0, wait_consumed(&p, TMO));
	CKEQ(0, nt_dereg_mr(p.fd, r.handle));
	CK(to_parent(ch, &me, sizeof(me)) == 0);
	CKEQ(0, wait1(&p, &q, TMO));
	CKEQ(1, q.tag);
	CKEQ(-ENOENT, q.status);
	CKEQ(100, q.result);
	CKEQ(-1, diff_byte(r.buf, 4096, GUARD));
	/* 2. and 3. The target of a get, then of a put, deregistered under it. */
	CK(token_from_parent(ch, CHILD_TMO) == 0);	/* the parent saw data come */
	CKEQ(0, nt_dereg_mr(p.fd, t.handle));
	CK(token_to_parent(ch) == 0);
	CK(token_from_parent(ch, CHILD_TMO) == 0);	/* the put is posted */
	CKEQ(0, wait_written(t2.buf, TMO));
	CKEQ(0, nt_dereg_mr(p.fd, t2.handle));
	CK(token_to_parent(ch) == 0);
	/* 4. A message whose source the sender deregisters half way. */
	nicoff_prep_recv(&c, r4.handle, 0, DG_LEN, NICOFF_ANY, NICOFF_ANY, 0, 0, 4);
	CKEQ(0, nt_submit(&p, &c, 1));
	CKEQ(0, wait_consumed(&p, TMO));
	CK(token_to_parent(ch) == 0);
	CKEQ(0, wait_written(r4.buf, TMO));
	CK(token_to_parent(ch) == 0);
	CK(from_parent(ch, &st, sizeof(st), CHILD_TMO) == 0);
	for (;;) {
		/* Skip the (best effort) reports of the refused get and put. */
		if (wait1(&p, &q, st ? 2000 : TMO)) {
			/* Refused at its first fragment: nothing ever came. */
			CKEQ(-ENOENT, st);
			fprintf(stderr, "# child: the aborted message never arrived\n");
			break;
		}
		if (q.opcode == NICOFF_OP_REMOTE_ACCESS_ERROR) {
			CKEQ(-ENOENT, q.status);
			continue;
		}
		CKEQ(4, q.tag);
		fprintf(stderr, "# child: receive of the aborted message: %d, %llu bytes\n",
			q.status, (unsigned long long)q.result);
		if (!st) {
			CKEQ(0, q.status);
			CKEQ(DG_LEN, q.result);
			CKEQ(-1, diff_pattern(r4.buf, DG_LEN, 91));
		} else {
			CKEQ(-ECONNABORTED, q.status);
			CK(q.result < DG_LEN);
		}
		break;
	}
	CK(token_to_parent(ch) == 0);
	return 0;
}

TEST_F_TIMEOUT(p2p, dereg_under_transfer, 120)
{
	struct hello me = { .card = CARD_A }, ci;
	struct nt_region s, w;
	struct nicoff_cqe cqe;
	struct nicoff_cmd c;
	struct nt_port p;
	struct chan ch;
	int32_t st;

	parent_port(_metadata, &ch, child_dereg, NULL, &p, 16, &s, DG_LEN);
	ASSERT_EQ(0, nt_region_new(&p, &w, DG_LEN, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	nt_fill_pattern(s.buf, DG_LEN, 91);
	me.port = p.po.port;
	ASSERT_EQ(0, to_child(&ch, &me, sizeof(me)));
	ASSERT_EQ(0, from_child(&ch, &ci, sizeof(ci), TMO));
	/* 1. The sender is not told about the receiver's vanished buffer. */
	nicoff_prep_send(&c, CARD_B, ci.port, s.handle, 0, 100, 1, 1);
	run_ok(_metadata, &p, &c, &cqe);
	/* 2. Get: all of it, right, or an error and nothing claimed. */
	nicoff_prep_get(&c, CARD_B, ci.port, ci.rkey[0], 0, w.handle, 0, DG_LEN, 2);
	ASSERT_EQ(0, nt_submit(&p, &c, 1));
	ASSERT_EQ(0, wait_written(w.buf, TMO));
	ASSERT_EQ(0, token_to_child(&ch));
	ASSERT_EQ(0, token_from_child(&ch, CHILD_TMO));
	ASSERT_EQ(0, wait1(&p, &cqe, CHILD_TMO));
	TH_LOG("get from a region deregistered under it: status %d", cqe.status);
	EXPECT_TRUE(cqe.status == 0 || cqe.status == -ENOENT);
	if (!cqe.status) {
		EXPECT_EQ(DG_LEN, cqe.result);
		EXPECT_EQ(-1, diff_pattern(w.buf, DG_LEN, 90));
	} else {
		EXPECT_EQ(0, cqe.result);
	}
	/* 3. Put. */
	nicoff_prep_put(&c, CARD_B, ci.port, ci.rkey[1], 0, s.handle, 0, DG_LEN, 3);
	ASSERT_EQ(0, nt_submit(&p, &c, 1));
	ASSERT_EQ(0, token_to_child(&ch));
	ASSERT_EQ(0, token_from_child(&ch, CHILD_TMO));
	ASSERT_EQ(0, wait1(&p, &cqe, CHILD_TMO));
	TH_LOG("put into a region deregistered under it: status %d", cqe.status);
	EXPECT_TRUE(cqe.status == 0 || cqe.status == -ENOENT);
	/* 4. Send, its source deregistered right after posting. */
	ASSERT_EQ(0, token_from_child(&ch, CHILD_TMO));
	nicoff_prep_send(&c, CARD_B, ci.port, s.handle, 0, DG_LEN, 4, 4);
	ASSERT_EQ(0, nt_submit(&p, &c, 1));
	ASSERT_EQ(0, token_from_child(&ch, CHILD_TMO));	/* the first bytes arrived */
	ASSERT_EQ(0, nt_dereg_mr(p.fd, s.handle));
	ASSERT_EQ(0, wait1(&p, &cqe, CHILD_TMO));
	TH_LOG("send from a region deregistered under it: status %d", cqe.status);
	EXPECT_TRUE(cqe.status == 0 || cqe.status == -ENOENT);
	st = cqe.status;
	ASSERT_EQ(0, to_child(&ch, &st, sizeof(st)));
	ASSERT_EQ(0, token_from_child(&ch, CHILD_TMO));
	EXPECT_EQ(0, end_child(&ch));
	nt_port_close(&p);
}

/* ------------------------------ one port's backlog, another port's traffic -- */

/*
 * Port b1 of card B never posts a receive and its unexpected budget is
 * full, so the next message to it is refused (receiver not ready).  Port
 * b2 of the same card has a receive posted.  The firmware keeps one
 * go-back-N stream per pair of cards, but a refusal is answered, not
 * left unacknowledged: the stream goes on.  b2 gets its message within a
 * few round trips, exactly once; b1's sender learns, after the retry
 * budget and not much later, that its message was refused (-ENOBUFS), and
 * only that one; b1's buffered messages are intact and in order; the
 * connection never timed out, and the pair b1 works afterwards.
 */
/*
 * A receive for all of @r posted on @b (tag @rtag), then @len bytes of @s
 * sent from @a with message tag @mtag: both complete, the receive with it.
 */
static void recv_send_ok(struct __test_metadata *_metadata, struct nt_port *b,
			 const struct nt_region *r, uint64_t rtag, struct nt_port *a,
			 const struct nt_region *s, size_t len, uint64_t mtag)
{
	struct nicoff_cqe q;
	struct nicoff_cmd c;

	nicoff_prep_recv(&c, r->handle, 0, r->len, NICOFF_ANY, NICOFF_ANY, 0, 0, rtag);
	ASSERT_EQ(0, nt_submit(b, &c, 1));
	nicoff_prep_send(&c, CARD_B, b->po.port, s->handle, 0, len, mtag, mtag);
	run_ok(_metadata, a, &c, &q);
	ASSERT_EQ(0, wait1(b, &q, TMO));
	EXPECT_EQ(mtag, q.msg_tag);
}

TEST_F_TIMEOUT(p2p, other_port_behind_rnr, 120)
{
	uint64_t budget = retry_budget_us(self->rto_us, self->max_retries);
	uint64_t t0, b2_us = 0, b1_us = 0;
	struct nt_card_stats s0, s1, sb0, sb1;
	struct nt_region s, r1, r2;
	struct nt_port a, b1, b2;
	struct nicoff_cqe q[2];
	struct nicoff_cmd c;
	int32_t b2_status = 1, b1_status = 1;
	unsigned int k, n;
	int i;

	ASSERT_EQ(0, nt_port_open(&a, CARD_A, NICOFF_PORT_ANY, 16, 16));
	ASSERT_EQ(0, nt_port_open(&b1, CARD_B, NICOFF_PORT_ANY, 16, 16));
	ASSERT_EQ(0, nt_port_open(&b2, CARD_B, NICOFF_PORT_ANY, 16, 16));
	ASSERT_EQ(0, nt_region_new(&a, &s, NR_MSG, 0, 0));
	ASSERT_EQ(0, nt_region_new(&b1, &r1, NR_MSG, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	ASSERT_EQ(0, nt_region_new(&b2, &r2, 4096, NICOFF_ACCESS_LOCAL_WRITE, GUARD));
	nt_fill_pattern(s.buf, NR_MSG, 66);
	nicoff_prep_recv(&c, r2.handle, 0, 4096, NICOFF_ANY, NICOFF_ANY, 0, 0, 1);
	ASSERT_EQ(0, nt_submit(&b2, &c, 1));
	ASSERT_EQ(0, wait_consumed(&b2, TMO));
	/* Fill b1's unexpected budget (4 MiB, firmware-sim/card.c). */
	for (k = 0; k < 4; k++) {
		nicoff_prep_send(&c, CARD_B, b1.po.port, s.handle, 0, NR_MSG, k, k);
		ASSERT_EQ(0, nt_run_one(&a, &c, q, CHILD_TMO));
		ASSERT_EQ(0, q[0].status) TH_LOG("message %u to b1", k);
	}
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_A, &s0));
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_B, &sb0));
	/* The next one to b1 is refused; b2's goes right after it. */
	t0 = nt_now_ns();
	nicoff_prep_send(&c, CARD_B, b1.po.port, s.handle, 0, NR_MSG, k, k);
	ASSERT_EQ(0, nt_submit(&a, &c, 1));
	nt_sleep_ms(5);
	nicoff_prep_send(&c, CARD_B, b2.po.port, s.handle, 0, 8, 200, 200);
	ASSERT_EQ(0, nt_submit(&a, &c, 1));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(1, nt_wait_cqes(&a, &q[i], 1, CHILD_TMO));
		if (q[i].tag == 200) {
			b2_status = q[i].status;
			b2_us = (nt_now_ns() - t0) / 1000;
		} else {
			b1_status = q[i].status;
			b1_us = (nt_now_ns() - t0) / 1000;
		}
	}
	TH_LOG("with b1 refusing: b2's send %d after %llu us, b1's %d after %llu us (budget %llu us)",
	       b2_status, (unsigned long long)b2_us, b1_status, (unsigned long long)b1_us,
	       (unsigned long long)budget);
	/* b2: served first, long before b1's budget runs out. */
	EXPECT_EQ(200, q[0].tag);
	EXPECT_EQ(0, b2_status);
	EXPECT_GT(budget / 4, b2_us);
	n = nt_wait_cqes(&b2, q, 1, TMO);
	ASSERT_EQ(1, n);
	EXPECT_EQ(0, q[0].status);
	EXPECT_EQ(200, q[0].msg_tag);
	EXPECT_EQ(8, q[0].result);
	EXPECT_EQ(-1, diff_pattern(r2.buf, 8, 66));
	EXPECT_TRUE(cq_stays_empty(&b2, 20));
	/* b1's sender: a clear outcome for that message alone, after the budget. */
	EXPECT_EQ(-ENOBUFS, b1_status);
	EXPECT_LE(budget * 9 / 10, b1_us);
	EXPECT_GE(budget + FW_RTO_MAX_US + 5000000, b1_us);
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_A, &s1));
	ASSERT_EQ(0, nt_nl_card(&self->nl, CARD_B, &sb1));
	EXPECT_LT(ST(sb0, RNR_DROPS), ST(sb1, RNR_DROPS));
	TH_LOG("card A meanwhile: %llu timeouts, %llu packets sent again; card B: %llu refusals",
	       (unsigned long long)(ST(s1, TIMEOUTS) - ST(s0, TIMEOUTS)),
	       (unsigned long long)(ST(s1, RETRANSMITS) - ST(s0, RETRANSMITS)),
	       (unsigned long long)(ST(sb1, RNR_DROPS) - ST(sb0, RNR_DROPS)));
	/* b1's buffered messages are all still there, in order. */
	for (i = 0; i < (int)k; i++) {
		nicoff_prep_recv(&c, r1.handle, 0, NR_MSG, NICOFF_ANY, NICOFF_ANY, 0, 0, 10 + i);
		run_ok(_metadata, &b1, &c, q);
		EXPECT_EQ(i, q[0].msg_tag);
		EXPECT_EQ(-1, diff_pattern(r1.buf, NR_MSG, 66));
	}
	/* The pair b1 works again, and so does b2. */
	recv_send_ok(_metadata, &b1, &r1, 50, &a, &s, 4096, 301);
	recv_send_ok(_metadata, &b2, &r2, 2, &a, &s, 8, 300);
	nt_port_close(&b2);
	nt_port_close(&b1);
	nt_port_close(&a);
}

TEST_HARNESS_MAIN
