// SPDX-License-Identifier: GPL-2.0
/*
 * A hostile process (Documentation/abi.md, "Hostile indices"): impossible
 * ring indices put its port in the error state and nothing else; random
 * descriptors each get the completion the rules call for.  A second port on
 * the same card must keep working throughout.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define PAGE 4096ul
#define TMO 10000

FIXTURE(hostile) {
	struct nt_port bad;	/* the port the test abuses */
	struct nt_port good;	/* a bystander on the same card */
	long long pinned0;
	int kmsg;
	uint64_t good_tag;
};

FIXTURE_SETUP(hostile)
{
	self->pinned0 = nt_pinned_pages();
	ASSERT_LE(0, self->pinned0);
	NT_KMSG_WATCH(self->kmsg);
	ASSERT_EQ(0, nt_port_open(&self->bad, 0, NICOFF_PORT_ANY, 64, 64));
	ASSERT_EQ(0, nt_port_open(&self->good, 0, NICOFF_PORT_ANY, 64, 64));
}

FIXTURE_TEARDOWN(hostile)
{
	nt_port_close(&self->bad);
	nt_port_close(&self->good);
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 2000));
	NT_KMSG_CHECK(self->kmsg);
}

/* The bystander port completes a NOP. */
static int good_nop(struct nt_port *p, uint64_t tag)
{
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	int ret;

	nicoff_prep_nop(&c, tag);
	ret = nt_run_one(p, &c, &cqe, TMO);
	if (ret)
		return ret;
	return cqe.tag == tag && cqe.status == 0 && cqe.opcode == NICOFF_OP_NOP ? 0 : -EIO;
}

/* Everything abi.md promises about a port in the error state. */
static void check_error_state(struct __test_metadata *_metadata, FIXTURE_DATA(hostile) *self,
			      bool expect_cqe)
{
	static char buf[PAGE] __attribute__((aligned(4096)));
	struct pollfd pfd = { .fd = self->bad.fd, .events = POLLIN };
	struct nicoff_port_stats st;
	struct nicoff_cmd c;
	uint32_t prod;

	/* The completion ring's ERROR flag first. */
	ASSERT_TRUE(nt_wait_flag(&self->bad, true, NICOFF_RING_ERROR, TMO));
	EXPECT_TRUE(nt_cmd_flags(&self->bad) & NICOFF_RING_ERROR);
	ASSERT_EQ(1, poll(&pfd, 1, 1000));
	EXPECT_TRUE(pfd.revents & POLLERR);
	EXPECT_EQ(-EIO, nt_reg_mr(self->bad.fd, buf, sizeof(buf), 0, NULL));
	EXPECT_EQ(0, nt_stats(self->bad.fd, &st));
	if (expect_cqe) {
		struct nicoff_cqe *e;

		ASSERT_LE(1, nt_cq_ready(&self->bad));
		e = &self->bad.cqes[(self->bad.cq_cons + nt_cq_ready(&self->bad) - 1) &
				    (self->bad.cq_entries - 1)];
		EXPECT_EQ(NICOFF_OP_PORT_ERROR, e->opcode);
		EXPECT_EQ(-EPROTO, e->status);
	}
	/* The card ignores the port from now on. */
	prod = nt_load_acquire(&self->bad.cq_hdr->producer);
	nicoff_prep_nop(&c, 77);
	self->bad.cmd_prod = nt_load_acquire(&self->bad.cmd_hdr->consumer);
	nt_cmd_write(&self->bad, &c);
	nt_publish(&self->bad);
	nt_doorbell(&self->bad);
	nt_kick(self->bad.fd);
	nt_sleep_ms(100);
	EXPECT_EQ(prod, nt_load_acquire(&self->bad.cq_hdr->producer));
	EXPECT_TRUE(nt_cq_flags(&self->bad) & NICOFF_RING_ERROR);
	/* The bystander does not care. */
	EXPECT_EQ(0, good_nop(&self->good, ++self->good_tag));
	EXPECT_EQ(0, nt_reg_mr(self->good.fd, buf, sizeof(buf), NICOFF_ACCESS_LOCAL_WRITE, NULL));
	EXPECT_FALSE(nt_cq_flags(&self->good) & NICOFF_RING_ERROR);
	EXPECT_FALSE(nt_cmd_flags(&self->good) & NICOFF_RING_ERROR);
}

/* Some honest traffic first, so the indices are not all zero. */
static void warm_up(struct __test_metadata *_metadata, FIXTURE_DATA(hostile) *self)
{
	static char buf[PAGE] __attribute__((aligned(4096)));

	/* A registered region must be released with the broken port. */
	ASSERT_EQ(0, nt_reg_mr(self->bad.fd, buf, sizeof(buf), NICOFF_ACCESS_LOCAL_WRITE, NULL));
	ASSERT_EQ(0, nt_submit_nops(&self->bad, 40, 0));
	ASSERT_EQ(40, nt_wait_cqes(&self->bad, NULL, 40, TMO));
	ASSERT_EQ(0, good_nop(&self->good, ++self->good_tag));
}

/* Write a producer index and ring the doorbell the honest way. */
static void publish_garbage(struct nt_port *p, uint32_t producer)
{
	nt_store_release(&p->cmd_hdr->producer, producer);
	nt_doorbell(p);
}

TEST_F(hostile, producer_too_far_ahead)
{
	warm_up(_metadata, self);
	/* entries + 1 ahead of what the card consumed. */
	publish_garbage(&self->bad, self->bad.cmd_prod + 65);
	check_error_state(_metadata, self, true);
}

TEST_F(hostile, producer_behind_consumer)
{
	warm_up(_metadata, self);
	publish_garbage(&self->bad, self->bad.cmd_prod - 1);
	check_error_state(_metadata, self, true);
}

TEST_F(hostile, producer_huge)
{
	warm_up(_metadata, self);
	publish_garbage(&self->bad, self->bad.cmd_prod + 0x80000000u);
	check_error_state(_metadata, self, true);
}

/* Exactly entries ahead is a full ring, not garbage. */
TEST_F(hostile, producer_full_ring_is_legal)
{
	warm_up(_metadata, self);
	ASSERT_EQ(0, nt_submit_nops(&self->bad, 64, 1000));
	ASSERT_EQ(64, nt_wait_cqes(&self->bad, NULL, 64, TMO));
	EXPECT_FALSE(nt_cq_flags(&self->bad) & NICOFF_RING_ERROR);
}

/*
 * Claim @ahead completions more than the card produced, give the card a
 * reason to look at the ring (a NOP), and check the port's error state.
 */
static void consumer_ahead(struct __test_metadata *_metadata, FIXTURE_DATA(hostile) *self,
			   uint32_t ahead)
{
	struct nicoff_cmd c;

	warm_up(_metadata, self);
	nt_store_release(&self->bad.cq_hdr->consumer, self->bad.cq_cons + ahead);
	nicoff_prep_nop(&c, 1);
	nt_cmd_write(&self->bad, &c);
	nt_publish(&self->bad);
	nt_doorbell(&self->bad);
	check_error_state(_metadata, self, false);
}

TEST_F(hostile, completion_consumer_ahead)
{
	consumer_ahead(_metadata, self, 5);
}

TEST_F(hostile, completion_consumer_huge)
{
	consumer_ahead(_metadata, self, 0x7fffffffu);
}

/*
 * With a full completion ring the error completion has no room: none is
 * written over the completions the process has not read yet.
 */
TEST_F(hostile, error_with_full_completion_ring)
{
	unsigned int i;

	warm_up(_metadata, self);
	ASSERT_EQ(0, nt_submit_nops(&self->bad, 64, 5000));
	for (i = 0; i < 500 && nt_cq_ready(&self->bad) < 64; i++)
		nt_sleep_ms(10);
	ASSERT_EQ(64, nt_cq_ready(&self->bad));
	publish_garbage(&self->bad, self->bad.cmd_prod + 100);
	check_error_state(_metadata, self, false);
	EXPECT_EQ(64, nt_cq_ready(&self->bad));
	for (i = 0; i < 64; i++) {
		struct nicoff_cqe *e = &self->bad.cqes[(self->bad.cq_cons + i) & 63];

		EXPECT_EQ(5000 + i, e->tag);
		EXPECT_EQ(NICOFF_OP_NOP, e->opcode);
	}
}

/* The bystander keeps working while the other port is being broken. */
TEST_F(hostile, bystander_under_load)
{
	unsigned int round;

	warm_up(_metadata, self);
	for (round = 0; round < 20; round++) {
		ASSERT_EQ(0, nt_submit_nops(&self->good, 32, round * 32));
		if (round == 10)
			publish_garbage(&self->bad, self->bad.cmd_prod + 1000);
		ASSERT_EQ(32, nt_wait_cqes(&self->good, NULL, 32, TMO)) TH_LOG("round %u", round);
	}
	check_error_state(_metadata, self, true);
}

/* --------------------------------------------------------------- fuzz -- */

#define FZ_LEN 65536ul
#define FZ_SMALL 3000ul

struct fz_mr {
	uint32_t h;
	uint64_t len;
	bool local_write;
};

/* Statuses the rules allow for a descriptor, as a bit set. */
enum { S_OK = 1, S_EINVAL = 2, S_ENOENT = 4, S_ERANGE = 8, S_EACCES = 16, S_EOPNOTSUPP = 32 };

static int status_bit(int32_t status)
{
	switch (status) {
	case 0: return S_OK;
	case -EINVAL: return S_EINVAL;
	case -ENOENT: return S_ENOENT;
	case -ERANGE: return S_ERANGE;
	case -EACCES: return S_EACCES;
	case -EOPNOTSUPP: return S_EOPNOTSUPP;
	default: return 0;
	}
}

static const struct fz_mr *fz_find(const struct fz_mr *mrs, unsigned int n, uint32_t h)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (mrs[i].h == h)
			return &mrs[i];
	return NULL;
}

static bool fz_range_bad(uint64_t off, uint64_t len, uint64_t size)
{
	return off + len < off || off + len > size;
}

/* What may a command complete with?  Every applicable error is allowed. */
static int fz_expect(const struct nicoff_cmd *c, const struct fz_mr *mrs, unsigned int n)
{
	int err = 0;

	if (c->flags || c->reserved0 || c->reserved1)
		err |= S_EINVAL;
	if (c->opcode == NICOFF_OP_NOP) {
		unsigned int i;

		for (i = 0; i < 6; i++)
			if (c->raw[i])
				err |= S_EINVAL;
	} else if (c->opcode == NICOFF_OP_COPY) {
		const struct nicoff_op_copy *op = &c->copy;
		const struct fz_mr *s = fz_find(mrs, n, op->src_mr);
		const struct fz_mr *d = fz_find(mrs, n, op->dst_mr);

		if (op->reserved[0] || op->reserved[1])
			err |= S_EINVAL;
		if (!s || !d)
			err |= S_ENOENT;
		if (s && fz_range_bad(op->src_off, op->len, s->len))
			err |= S_ERANGE;
		if (d && !d->local_write)
			err |= S_EACCES;
		if (d && fz_range_bad(op->dst_off, op->len, d->len))
			err |= S_ERANGE;
	} else {
		err |= S_EOPNOTSUPP;
	}
	return err ? err : S_OK;
}

static uint64_t fz_pick_off(uint64_t *rs, uint64_t len)
{
	switch (nt_rand64(rs) % 8) {
	case 0: return 0;
	case 1: return len;
	case 2: return len - 1;
	case 3: return nt_rand64(rs);
	case 4: return UINT64_MAX - nt_rand64(rs) % 4096;
	default: return nt_rand64(rs) % len;
	}
}

static uint64_t fz_pick_len(uint64_t *rs)
{
	switch (nt_rand64(rs) % 8) {
	case 0: return 0;
	case 1: return nt_rand64(rs);
	case 2: return UINT64_MAX - nt_rand64(rs) % 4096;
	case 3: return FZ_LEN + nt_rand64(rs) % 16;
	default: return nt_rand64(rs) % 2048;
	}
}

static uint32_t fz_pick_mr(uint64_t *rs, const struct fz_mr *mrs, unsigned int n, uint32_t stale)
{
	switch (nt_rand64(rs) % 10) {
	case 0: return 0;
	case 1: return stale;
	case 2: return (uint32_t)nt_rand64(rs);
	default: return mrs[nt_rand64(rs) % n].h;
	}
}

/* A random descriptor; opcodes with peer semantics (SEND..GET) excluded. */
static void fz_make(struct nicoff_cmd *c, uint64_t *rs, const struct fz_mr *mrs, unsigned int n,
		    uint32_t stale)
{
	uint64_t r = nt_rand64(rs);
	unsigned int i;

	if (r % 8 == 0) {
		for (i = 0; i < 8; i++)
			((uint64_t *)c)[i] = nt_rand64(rs);
	} else {
		memset(c, 0, sizeof(*c));
		switch ((r >> 8) % 10) {
		case 0: case 1: case 2:
			c->opcode = NICOFF_OP_NOP;
			if ((r >> 16) % 8 == 0)
				c->raw[(r >> 20) % 6] = nt_rand64(rs) | 1;
			break;
		case 9:
			c->opcode = nt_rand64(rs);
			break;
		default:
			c->opcode = NICOFF_OP_COPY;
			c->copy.src_mr = fz_pick_mr(rs, mrs, n, stale);
			c->copy.dst_mr = fz_pick_mr(rs, mrs, n, stale);
			c->copy.len = fz_pick_len(rs);
			c->copy.src_off = fz_pick_off(rs, FZ_LEN);
			c->copy.dst_off = fz_pick_off(rs, FZ_LEN);
			if ((r >> 24) % 16 == 0)
				c->copy.reserved[(r >> 28) % 2] = nt_rand64(rs) | 1;
			break;
		}
		if ((r >> 32) % 16 == 0)
			c->flags = nt_rand64(rs) | 1;
		if ((r >> 36) % 32 == 0)
			c->reserved0 = nt_rand64(rs) | 1;
		if ((r >> 41) % 32 == 0)
			c->reserved1 = nt_rand64(rs) | 1;
	}
	/* Opcodes that talk to other ports would need a peer: not here. */
	if (c->opcode >= NICOFF_OP_SEND && c->opcode < NICOFF_OP_MAX)
		c->opcode = NICOFF_OP_MAX + c->opcode;
}

TEST_F_TIMEOUT(hostile, random_descriptors, 180)
{
	const unsigned int total = 4000;
	unsigned char *ro = mmap(NULL, FZ_LEN, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *rw = mmap(NULL, 3 * FZ_LEN, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *ro_copy = malloc(FZ_LEN);
	int *allowed = calloc(total, sizeof(int));
	unsigned int *count = calloc(total, sizeof(unsigned int));
	unsigned int posted = 0, done = 0, n_ok = 0, n_bad = 0, i;
	struct nicoff_port_stats st0, st;
	struct fz_mr mrs[4];
	uint32_t stale;
	uint64_t rs = 0x5eed1234ull, deadline;

	ASSERT_NE(MAP_FAILED, ro);
	ASSERT_NE(MAP_FAILED, rw);
	ASSERT_NE(NULL, ro_copy);
	ASSERT_NE(NULL, allowed);
	ASSERT_NE(NULL, count);
	nt_fill_pattern(ro, FZ_LEN, 11);
	memcpy(ro_copy, ro, FZ_LEN);
	nt_fill_pattern(rw, 3 * FZ_LEN, 12);
	/* A read-only region, a writable one, a small odd one, all rights. */
	mrs[0] = (struct fz_mr){ 0, FZ_LEN, false };
	ASSERT_EQ(0, nt_reg_mr(self->bad.fd, ro, FZ_LEN, NICOFF_ACCESS_REMOTE_READ, &mrs[0].h));
	mrs[1] = (struct fz_mr){ 0, FZ_LEN, true };
	ASSERT_EQ(0, nt_reg_mr(self->bad.fd, rw + FZ_LEN, FZ_LEN, NICOFF_ACCESS_LOCAL_WRITE,
			       &mrs[1].h));
	mrs[2] = (struct fz_mr){ 0, FZ_SMALL, true };
	ASSERT_EQ(0, nt_reg_mr(self->bad.fd, rw + 2 * FZ_LEN + 77, FZ_SMALL, NICOFF_ACCESS_ALL,
			       &mrs[2].h));
	mrs[3] = (struct fz_mr){ 0, FZ_LEN, false };
	ASSERT_EQ(0, nt_reg_mr(self->bad.fd, rw + FZ_LEN, FZ_LEN, NICOFF_ACCESS_REMOTE_WRITE |
			       NICOFF_ACCESS_REMOTE_ATOMIC, &mrs[3].h));
	ASSERT_EQ(0, nt_reg_mr(self->bad.fd, rw, PAGE, 0, &stale));
	ASSERT_EQ(0, nt_dereg_mr(self->bad.fd, stale));
	ASSERT_EQ(0, nt_stats(self->bad.fd, &st0));

	deadline = nt_now_ns() + 150000000000ull;
	while (done < total && nt_now_ns() < deadline) {
		struct nicoff_cqe cqe[64];
		uint32_t space = nt_cmd_space(&self->bad);
		int got;

		if (posted < total && space) {
			uint32_t n = space < total - posted ? space : total - posted;

			for (i = 0; i < n; i++) {
				struct nicoff_cmd c;

				fz_make(&c, &rs, mrs, 4, stale);
				c.tag = posted;
				allowed[posted] = fz_expect(&c, mrs, 4);
				nt_cmd_write(&self->bad, &c);
				posted++;
			}
			nt_publish(&self->bad);
			ASSERT_LE(0, nt_doorbell(&self->bad));
		}
		got = nt_reap(&self->bad, cqe, 64);
		ASSERT_LE(0, got);
		for (i = 0; i < (unsigned int)got; i++) {
			uint64_t t = cqe[i].tag;

			ASSERT_GT(posted, t);
			ASSERT_EQ(0, count[t]) TH_LOG("tag %llu completed twice",
						     (unsigned long long)t);
			count[t]++;
			EXPECT_TRUE(allowed[t] & status_bit(cqe[i].status))
				TH_LOG("descriptor %llu: status %d, allowed set %#x",
				       (unsigned long long)t, cqe[i].status, allowed[t]);
			if (cqe[i].status)
				n_bad++;
			else
				n_ok++;
		}
		done += got;
		if (!got) {
			struct pollfd pfd = { .fd = self->bad.fd, .events = POLLIN };

			poll(&pfd, 1, 10);
		}
		ASSERT_FALSE(nt_cq_flags(&self->bad) & NICOFF_RING_ERROR);
	}
	ASSERT_EQ(total, done);
	for (i = 0; i < total; i++)
		ASSERT_EQ(1, count[i]);
	ASSERT_EQ(0, nt_stats(self->bad.fd, &st));
	EXPECT_EQ(st0.cmds + total, st.cmds);
	EXPECT_EQ(st0.cqes + total, st.cqes);
	EXPECT_EQ(st0.bad_cmds + n_bad, st.bad_cmds);
	/* The region without LOCAL_WRITE was never written. */
	EXPECT_EQ(0, memcmp(ro, ro_copy, FZ_LEN));
	/* The port still works, and so does its neighbour. */
	EXPECT_EQ(0, good_nop(&self->bad, 0xfeed));
	EXPECT_EQ(0, good_nop(&self->good, 0xbeef));
	TH_LOG("%u descriptors: %u succeeded, %u failed as expected", total, n_ok, n_bad);
	free(allowed);
	free(count);
	free(ro_copy);
}

TEST_HARNESS_MAIN
