// SPDX-License-Identifier: GPL-2.0
/*
 * The ring protocol (Documentation/abi.md, "Rings", "Opcodes", "Doorbell"):
 * NOP and COPY completions, COPY correctness byte for byte, malformed
 * descriptors, back-pressure by a full completion ring.
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
#define TMO 10000	/* ms to wait for any single completion */

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Expect a completion to be (tag, opcode, status, result); the result of a
 * failed command is not specified.
 */
#define EXPECT_CQE(cqe, _tag, _op, _status, _result) do { \
	EXPECT_EQ((uint64_t)(_tag), (cqe).tag); \
	EXPECT_EQ((uint8_t)(_op), (cqe).opcode); \
	EXPECT_EQ((int32_t)(_status), (cqe).status); \
	if (!(_status)) \
		EXPECT_EQ((uint64_t)(_result), (cqe).result); \
	EXPECT_EQ(0, (cqe).flags); \
	EXPECT_EQ(0, (cqe).reserved0); \
	EXPECT_EQ(0, (cqe).reserved1[0]); \
	EXPECT_EQ(0, (cqe).reserved1[1]); \
	EXPECT_EQ(0, (cqe).reserved1[2]); \
} while (0)

FIXTURE(ring) {
	struct nt_port p;
	long long pinned0;
};

FIXTURE_SETUP(ring)
{
	self->pinned0 = nt_pinned_pages();
	ASSERT_LE(0, self->pinned0);
	ASSERT_EQ(0, nt_port_open(&self->p, 0, NICOFF_PORT_ANY, 256, 256));
}

FIXTURE_TEARDOWN(ring)
{
	nt_port_close(&self->p);
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 2000));
}

TEST_F(ring, nop)
{
	struct nicoff_port_stats st;
	struct nicoff_cmd c[200];
	struct nicoff_cqe cqe[200];
	uint64_t seed = 42;
	unsigned int i;

	nicoff_prep_nop(&c[0], 0x1122334455667788ull);
	ASSERT_EQ(0, nt_run_one(&self->p, &c[0], &cqe[0], TMO));
	EXPECT_CQE(cqe[0], 0x1122334455667788ull, NICOFF_OP_NOP, 0, 0);

	/* A batch larger than the budget of one pass, arbitrary tags. */
	for (i = 0; i < 200; i++)
		nicoff_prep_nop(&c[i], nt_rand64(&seed));
	ASSERT_EQ(0, nt_submit(&self->p, c, 200));
	ASSERT_EQ(200, nt_wait_cqes(&self->p, cqe, 200, TMO));
	for (i = 0; i < 200; i++)
		EXPECT_CQE(cqe[i], c[i].tag, NICOFF_OP_NOP, 0, 0);
	EXPECT_EQ(0, nt_cq_ready(&self->p));
	ASSERT_EQ(0, nt_stats(self->p.fd, &st));
	EXPECT_EQ(201, st.cmds);
	EXPECT_EQ(201, st.cqes);
	EXPECT_EQ(0, st.bad_cmds);
	EXPECT_EQ(self->p.kicks, st.kicks);
	for (i = 0; i < 11; i++)
		EXPECT_EQ(0, st.reserved[i]);
}

/*
 * COPY between two regions that start at odd addresses, for sizes from one
 * byte to 4 MiB and offsets that cross page boundaries; the destination is
 * compared byte for byte and the bytes around it must be untouched.
 */
TEST_F_TIMEOUT(ring, copy_sizes_and_offsets, 120)
{
	const uint64_t region = (4ul << 20) + 4096;
	const unsigned int sbase = 1237, dbase = 3001;
	static const uint64_t lens[] = {
		1, 2, 3, 7, 8, 63, 64, 65, 511, 4095, 4096, 4097, 8191, 8192, 8193, 12289,
		65535, 65536 + 17, 262144 + 4095, 1048575, 1048577, 3 * 1048576 + 333,
		4 * 1048576 - 1, 4 * 1048576,
	};
	static const uint64_t offs[] = { 0, 1, 4095 - 1237, 4096 - 1237, 2858, 4095, 4096 };
	size_t blen = region + 2 * PAGE;
	unsigned char *sbuf = map_anon(blen), *dbuf = map_anon(blen), *src, *dst;
	uint32_t hs, hd;
	uint64_t tag = 1000, seed = 7;
	unsigned int i, j;

	ASSERT_NE(NULL, sbuf);
	ASSERT_NE(NULL, dbuf);
	src = sbuf + sbase;
	dst = dbuf + dbase;
	nt_fill_pattern(sbuf, blen, 0xabcdef);
	memset(dbuf, 0xee, blen);
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, src, region, 0, &hs));
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, dst, region, NICOFF_ACCESS_LOCAL_WRITE, &hd));

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		for (j = 0; j < 3; j++) {
			uint64_t len = lens[i], so, d_o;
			struct nicoff_cmd c;
			struct nicoff_cqe cqe;

			so = offs[(i + j) % ARRAY_SIZE(offs)];
			d_o = offs[(i + 2 * j + 3) % ARRAY_SIZE(offs)];
			if (j == 2) {
				so = nt_rand64(&seed) % (region - len + 1);
				d_o = nt_rand64(&seed) % (region - len + 1);
			}
			if (so + len > region)
				so = region - len;
			if (d_o + len > region)
				d_o = region - len;
			nicoff_prep_copy(&c, hs, so, hd, d_o, len, ++tag);
			ASSERT_EQ(0, nt_run_one(&self->p, &c, &cqe, TMO));
			EXPECT_CQE(cqe, tag, NICOFF_OP_COPY, 0, len);
			EXPECT_EQ(0, memcmp(dst + d_o, src + so, len))
				TH_LOG("len %llu src_off %llu dst_off %llu", (unsigned long long)len,
				       (unsigned long long)so, (unsigned long long)d_o);
			EXPECT_EQ(0xee, dst[(int64_t)d_o - 1]);
			EXPECT_EQ(0xee, dst[d_o + len]);
			if (_metadata->passed == 0)
				return;
			memset(dst + d_o, 0xee, len);
		}
	}
	/* Nothing outside the copies was ever written. */
	for (i = 0; i < blen; i++)
		if (dbuf[i] != 0xee)
			break;
	EXPECT_EQ(blen, i);
	/* The source was only read. */
	EXPECT_EQ(0xee, dbuf[0]);
	munmap(sbuf, blen);
	munmap(dbuf, blen);
}

/* Many small copies in flight at once, within one region and across two. */
TEST_F(ring, copy_batch)
{
	const size_t len = 256 * 1024;
	unsigned char *a = map_anon(len), *b = map_anon(len), *ref = malloc(len);
	struct nicoff_cmd c[256];
	struct nicoff_cqe cqe[256];
	uint64_t seed = 99;
	uint32_t ha, hb;
	unsigned int i;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, ref);
	nt_fill_pattern(a, len, 5);
	memset(b, 0, len);
	memset(ref, 0, len);
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, a, len, NICOFF_ACCESS_LOCAL_WRITE, &ha));
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, b, len, NICOFF_ACCESS_LOCAL_WRITE, &hb));
	/* 256 copies to disjoint 1 KiB slots of b, random sources in a. */
	for (i = 0; i < 256; i++) {
		uint64_t n = 1 + nt_rand64(&seed) % 1024;
		uint64_t so = nt_rand64(&seed) % (len - n);

		nicoff_prep_copy(&c[i], ha, so, hb, i * 1024, n, i);
		memcpy(ref + i * 1024, a + so, n);
	}
	ASSERT_EQ(0, nt_submit(&self->p, c, 256));
	ASSERT_EQ(256, nt_wait_cqes(&self->p, cqe, 256, TMO));
	for (i = 0; i < 256; i++)
		EXPECT_CQE(cqe[i], i, NICOFF_OP_COPY, 0, c[i].copy.len);
	EXPECT_EQ(0, memcmp(ref, b, len));
	/* Within one region, non-overlapping: second half from first half. */
	nicoff_prep_copy(&c[0], ha, 0, ha, len / 2, len / 2, 7);
	ASSERT_EQ(0, nt_run_one(&self->p, &c[0], &cqe[0], TMO));
	EXPECT_CQE(cqe[0], 7, NICOFF_OP_COPY, 0, len / 2);
	EXPECT_EQ(0, memcmp(a, a + len / 2, len / 2));
	/* Zero bytes: nothing to do, also at the very end of a region. */
	nicoff_prep_copy(&c[0], ha, len, hb, len, 0, 8);
	ASSERT_EQ(0, nt_run_one(&self->p, &c[0], &cqe[0], TMO));
	EXPECT_CQE(cqe[0], 8, NICOFF_OP_COPY, 0, 0);
	/* The last byte of a region, and a whole region. */
	nicoff_prep_copy(&c[0], hb, 0, ha, len - 1, 1, 9);
	ASSERT_EQ(0, nt_run_one(&self->p, &c[0], &cqe[0], TMO));
	EXPECT_CQE(cqe[0], 9, NICOFF_OP_COPY, 0, 1);
	EXPECT_EQ(b[0], a[len - 1]);
	nicoff_prep_copy(&c[0], ha, 0, hb, 0, len, 10);
	ASSERT_EQ(0, nt_run_one(&self->p, &c[0], &cqe[0], TMO));
	EXPECT_CQE(cqe[0], 10, NICOFF_OP_COPY, 0, len);
	EXPECT_EQ(0, memcmp(a, b, len));
	free(ref);
	munmap(a, len);
	munmap(b, len);
}

/*
 * Malformed descriptors each get their error completion, touch no memory,
 * and the port goes on; alone and all in one batch between valid commands.
 */
TEST_F(ring, bad_descriptors)
{
	const size_t len = 64 * 1024;
	unsigned char *a = map_anon(len), *b = map_anon(len), *snap = malloc(len);
	struct nicoff_port_stats st0, st;
	struct nicoff_cmd c[64], batch[128];
	struct nicoff_cqe cqe[128];
	int expect[64];
	uint32_t ha, hb, hc, hd;
	unsigned int n = 0, i, nb = 0, nbad = 0;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, snap);
	nt_fill_pattern(a, len, 1);
	nt_fill_pattern(b, len, 2);
	memcpy(snap, b, len);
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, a, len, 0, &ha));		/* read only */
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, b, len, NICOFF_ACCESS_LOCAL_WRITE, &hb));
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, b, len, NICOFF_ACCESS_REMOTE_READ |
			       NICOFF_ACCESS_REMOTE_WRITE | NICOFF_ACCESS_REMOTE_ATOMIC, &hc));
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, b, len, NICOFF_ACCESS_ALL, &hd));
	ASSERT_EQ(0, nt_dereg_mr(self->p.fd, hd));	/* a stale handle */

#define BAD(err) do { expect[n] = (err); c[n].tag = 0xbad0000 + n; n++; } while (0)
	/* Unknown opcodes. */
	nicoff_prep_nop(&c[n], 0); c[n].opcode = NICOFF_OP_MAX; BAD(-EOPNOTSUPP);
	nicoff_prep_nop(&c[n], 0); c[n].opcode = 0x7f; BAD(-EOPNOTSUPP);
	nicoff_prep_nop(&c[n], 0); c[n].opcode = 0xfe; BAD(-EOPNOTSUPP);
	nicoff_prep_nop(&c[n], 0); c[n].opcode = NICOFF_OP_PORT_ERROR; BAD(-EOPNOTSUPP);
	/* Flags and reserved words of the command. */
	nicoff_prep_nop(&c[n], 0); c[n].flags = 1; BAD(-EINVAL);
	nicoff_prep_nop(&c[n], 0); c[n].flags = 0x80; BAD(-EINVAL);
	nicoff_prep_nop(&c[n], 0); c[n].reserved0 = 1; BAD(-EINVAL);
	nicoff_prep_nop(&c[n], 0); c[n].reserved1 = 0x80000000u; BAD(-EINVAL);
	nicoff_prep_copy(&c[n], ha, 0, hb, 0, 16, 0); c[n].flags = 2; BAD(-EINVAL);
	nicoff_prep_copy(&c[n], ha, 0, hb, 0, 16, 0); c[n].reserved1 = 1; BAD(-EINVAL);
	nicoff_prep_copy(&c[n], ha, 0, hb, 0, 16, 0); c[n].copy.reserved[0] = 1; BAD(-EINVAL);
	nicoff_prep_copy(&c[n], ha, 0, hb, 0, 16, 0); c[n].copy.reserved[1] = 1ull << 63;
	BAD(-EINVAL);
	/* Unknown regions. */
	nicoff_prep_copy(&c[n], 0, 0, hb, 0, 16, 0); BAD(-ENOENT);
	nicoff_prep_copy(&c[n], ha, 0, 0, 0, 16, 0); BAD(-ENOENT);
	nicoff_prep_copy(&c[n], 999999, 0, hb, 0, 16, 0); BAD(-ENOENT);
	nicoff_prep_copy(&c[n], ha, 0, 0xffffffffu, 0, 16, 0); BAD(-ENOENT);
	nicoff_prep_copy(&c[n], hd, 0, hb, 0, 16, 0); BAD(-ENOENT);
	nicoff_prep_copy(&c[n], ha, 0, hd, 0, 16, 0); BAD(-ENOENT);
	/* Out of bounds, including offset + len overflowing. */
	nicoff_prep_copy(&c[n], ha, len - 15, hb, 0, 16, 0); BAD(-ERANGE);
	nicoff_prep_copy(&c[n], ha, 0, hb, len - 15, 16, 0); BAD(-ERANGE);
	nicoff_prep_copy(&c[n], ha, 0, hb, 0, len + 1, 0); BAD(-ERANGE);
	nicoff_prep_copy(&c[n], ha, len + 1, hb, 0, 0, 0); BAD(-ERANGE);
	nicoff_prep_copy(&c[n], ha, 0, hb, len + 1, 0, 0); BAD(-ERANGE);
	nicoff_prep_copy(&c[n], ha, UINT64_MAX, hb, 0, 2, 0); BAD(-ERANGE);
	nicoff_prep_copy(&c[n], ha, 0, hb, UINT64_MAX - 7, 16, 0); BAD(-ERANGE);
	nicoff_prep_copy(&c[n], ha, 1, hb, 0, UINT64_MAX, 0); BAD(-ERANGE);
	nicoff_prep_copy(&c[n], ha, 1ull << 63, hb, 1ull << 63, 1ull << 63, 0); BAD(-ERANGE);
	nicoff_prep_copy(&c[n], ha, 16, hb, 16, UINT64_MAX - 15, 0); BAD(-ERANGE);
	/* Destination without LOCAL_WRITE (remote rights do not count). */
	nicoff_prep_copy(&c[n], hb, 0, ha, 0, 16, 0); BAD(-EACCES);
	nicoff_prep_copy(&c[n], hb, 0, hc, 0, 16, 0); BAD(-EACCES);
	nicoff_prep_copy(&c[n], ha, 0, ha, 100, 1, 0); BAD(-EACCES);
	nbad = n;
	/* Valid ones: reading needs no right. */
	nicoff_prep_copy(&c[n], hc, 0, hb, 0, 0, 0); BAD(0);
	nicoff_prep_copy(&c[n], ha, 0, hb, 0, 0, 0); BAD(0);
	nicoff_prep_nop(&c[n], 0); BAD(0);
#undef BAD

	ASSERT_EQ(0, nt_stats(self->p.fd, &st0));
	/* One by one, each followed by a NOP that must still work. */
	for (i = 0; i < n; i++) {
		struct nicoff_cmd nop;

		ASSERT_EQ(0, nt_run_one(&self->p, &c[i], &cqe[0], TMO)) TH_LOG("case %u", i);
		EXPECT_EQ(expect[i], cqe[0].status) TH_LOG("case %u", i);
		EXPECT_CQE(cqe[0], c[i].tag, c[i].opcode, expect[i], 0);
		nicoff_prep_nop(&nop, 0x600d0000 + i);
		ASSERT_EQ(0, nt_run_one(&self->p, &nop, &cqe[0], TMO));
		EXPECT_CQE(cqe[0], nop.tag, NICOFF_OP_NOP, 0, 0);
	}
	EXPECT_EQ(0, memcmp(snap, b, len));
	ASSERT_EQ(0, nt_stats(self->p.fd, &st));
	EXPECT_EQ(st0.cmds + 2 * n, st.cmds);
	EXPECT_EQ(st0.cqes + 2 * n, st.cqes);
	EXPECT_EQ(st0.bad_cmds + nbad, st.bad_cmds);

	/* All in one batch, interleaved with valid copies. */
	for (i = 0; i < n; i++) {
		batch[nb++] = c[i];
		nicoff_prep_copy(&batch[nb], ha, i * 64, hb, i * 64, 64, 0xc0000 + i);
		nb++;
	}
	ASSERT_EQ(0, nt_submit(&self->p, batch, nb));
	ASSERT_EQ(nb, nt_wait_cqes(&self->p, cqe, nb, TMO));
	for (i = 0; i < n; i++) {
		EXPECT_EQ(expect[i], cqe[2 * i].status) TH_LOG("case %u", i);
		EXPECT_CQE(cqe[2 * i], c[i].tag, c[i].opcode, expect[i], 0);
		EXPECT_CQE(cqe[2 * i + 1], 0xc0000 + i, NICOFF_OP_COPY, 0, 64);
	}
	EXPECT_EQ(0, memcmp(a, b, n * 64));
	EXPECT_EQ(0, memcmp(snap + n * 64, b + n * 64, len - n * 64));
	ASSERT_EQ(0, nt_stats(self->p.fd, &st0));
	EXPECT_EQ(st.bad_cmds + nbad, st0.bad_cmds);
	free(snap);
	munmap(a, len);
	munmap(b, len);
}

/* Commands naming a region deregistered meanwhile complete with ENOENT. */
TEST_F(ring, copy_after_dereg)
{
	unsigned char *a = map_anon(PAGE), *b = map_anon(PAGE);
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	uint32_t ha, hb;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	memset(a, 1, PAGE);
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, a, PAGE, 0, &ha));
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, b, PAGE, NICOFF_ACCESS_LOCAL_WRITE, &hb));
	nicoff_prep_copy(&c, ha, 0, hb, 0, PAGE, 1);
	ASSERT_EQ(0, nt_run_one(&self->p, &c, &cqe, TMO));
	EXPECT_CQE(cqe, 1, NICOFF_OP_COPY, 0, PAGE);
	EXPECT_EQ(1, b[PAGE - 1]);
	ASSERT_EQ(0, nt_dereg_mr(self->p.fd, hb));
	memset(a, 2, PAGE);
	c.tag = 2;
	ASSERT_EQ(0, nt_run_one(&self->p, &c, &cqe, TMO));
	EXPECT_CQE(cqe, 2, NICOFF_OP_COPY, -ENOENT, 0);
	EXPECT_EQ(1, b[0]);
	ASSERT_EQ(0, nt_dereg_mr(self->p.fd, ha));
	c.tag = 3;
	ASSERT_EQ(0, nt_run_one(&self->p, &c, &cqe, TMO));
	EXPECT_CQE(cqe, 3, NICOFF_OP_COPY, -ENOENT, 0);
	munmap(a, PAGE);
	munmap(b, PAGE);
}

/*
 * A region is the process's memory [addr, addr + length): what the process
 * writes there after registering is what the card reads, even if the pages
 * had never been touched when the region was registered (no rights needed
 * for the source of a COPY).
 */
TEST_F(ring, copy_from_region_written_after_registration)
{
	const size_t len = 16 * PAGE;
	unsigned char *fresh = map_anon(len), *dst = map_anon(len);
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	uint32_t hs, hd;
	size_t i;

	ASSERT_NE(NULL, fresh);
	ASSERT_NE(NULL, dst);
	memset(dst, 0, len);
	/* Registered before a single byte of it was touched. */
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, fresh, len, 0, &hs));
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, dst, len, NICOFF_ACCESS_LOCAL_WRITE, &hd));
	nt_fill_pattern(fresh, len, 0x1234);
	nicoff_prep_copy(&c, hs, 0, hd, 0, len, 1);
	ASSERT_EQ(0, nt_run_one(&self->p, &c, &cqe, TMO));
	EXPECT_CQE(cqe, 1, NICOFF_OP_COPY, 0, len);
	for (i = 0; i < len; i++)
		if (dst[i] != fresh[i])
			break;
	EXPECT_EQ(len, i) TH_LOG("the card read %#x at byte %zu, the process wrote %#x",
				 dst[i], i, fresh[i]);
	munmap(fresh, len);
	munmap(dst, len);
}

/*
 * NOP takes no operands ("none (all zero)" in abi.md) and every unused
 * field must be zero or the command fails with EINVAL: a NOP whose operand
 * words are not zero is malformed.
 */
TEST_F(ring, nop_with_operands)
{
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	unsigned int i;

	for (i = 0; i < 6; i++) {
		nicoff_prep_nop(&c, 0x40 + i);
		c.raw[i] = 1ull << (i * 9);
		ASSERT_EQ(0, nt_run_one(&self->p, &c, &cqe, TMO));
		EXPECT_CQE(cqe, c.tag, NICOFF_OP_NOP, -EINVAL, 0);
	}
}

/*
 * Back-pressure with cq_entries == cmd_entries: while completions are not
 * consumed the card takes no command and overwrites no completion; after
 * consuming (and the re-kick), everything completes exactly once.  Run with
 * the card thread kept awake and with it sleeping whenever idle.
 */
FIXTURE(bp) {
	struct nt_port p;
	unsigned long poll_usecs;
	bool restore;
};

FIXTURE_VARIANT(bp) {
	unsigned long poll_usecs;
	bool awake;
};

FIXTURE_VARIANT_ADD(bp, awake) {
	.poll_usecs = 2000000,
	.awake = true,
};

FIXTURE_VARIANT_ADD(bp, sleepy) {
	.poll_usecs = 0,
	.awake = false,
};

FIXTURE_SETUP(bp)
{
	ASSERT_EQ(0, nt_param_get("poll_usecs", &self->poll_usecs));
	ASSERT_EQ(0, nt_param_set("poll_usecs", variant->poll_usecs));
	self->restore = true;
	ASSERT_EQ(0, nt_port_open(&self->p, 0, NICOFF_PORT_ANY, 64, 64));
	/* Make sure the card thread sees the new setting now. */
	ASSERT_EQ(0, nt_kick(self->p.fd));
}

FIXTURE_TEARDOWN(bp)
{
	nt_port_close(&self->p);
	if (self->restore)
		EXPECT_EQ(0, nt_param_set("poll_usecs", self->poll_usecs));
}

/* Wait until the completion ring holds want entries (or time out). */
static uint32_t wait_cq_level(struct nt_port *p, uint32_t want, int ms)
{
	uint64_t end = nt_now_ns() + ms * 1000000ull;
	uint32_t have;

	while ((have = nt_cq_ready(p)) < want && nt_now_ns() < end) {
		struct pollfd pfd = { .fd = p->fd, .events = POLLIN };

		if (have)
			nt_sleep_ms(1);
		else
			poll(&pfd, 1, 10);
	}
	return have;
}

TEST_F_TIMEOUT(bp, full_completion_ring, 120)
{
	const uint32_t total = 64 * 40;
	struct nicoff_port_stats st;
	struct nicoff_cqe cqe[64];
	unsigned char *seen = calloc(total, 1);
	uint32_t posted = 0, done = 0, i;
	uint64_t seed = 3, deadline;

	ASSERT_NE(NULL, seen);
	/* Fill the command ring: all 64 are taken into the empty cq. */
	ASSERT_EQ(0, nt_submit_nops(&self->p, 64, posted));
	posted = 64;
	ASSERT_EQ(64, wait_cq_level(&self->p, 64, TMO));
	EXPECT_EQ(64, nt_load_acquire(&self->p.cmd_hdr->consumer));
	/* Fill it again: the completion ring is full, nothing moves. */
	ASSERT_EQ(0, nt_submit_nops(&self->p, 64, posted));
	posted = 128;
	nt_sleep_ms(200);
	EXPECT_EQ(64, nt_load_acquire(&self->p.cq_hdr->producer));
	EXPECT_EQ(64, nt_load_acquire(&self->p.cmd_hdr->consumer));
	for (i = 0; i < 64; i++)
		EXPECT_EQ(i, self->p.cqes[i].tag);
	ASSERT_EQ(0, nt_stats(self->p.fd, &st));
	EXPECT_EQ(64, st.cmds);
	EXPECT_EQ(64, st.cqes);
	if (variant->awake)
		EXPECT_LT(0, st.cq_full);

	/* Drain in random bites, refilling; every tag exactly once. */
	deadline = nt_now_ns() + 60000000000ull;
	while (done < total && nt_now_ns() < deadline) {
		uint32_t space = nt_cmd_space(&self->p), want;
		int got;

		if (posted < total && space) {
			uint32_t n = space < total - posted ? space : total - posted;

			ASSERT_EQ(0, nt_submit_nops(&self->p, n, posted));
			posted += n;
		}
		/* Never more completions than slots. */
		ASSERT_GE(64, nt_load_acquire(&self->p.cq_hdr->producer) - self->p.cq_cons);
		want = 1 + nt_rand64(&seed) % 64;
		got = nt_reap(&self->p, cqe, want);
		ASSERT_LE(0, got);
		for (i = 0; i < (uint32_t)got; i++) {
			ASSERT_GT(total, cqe[i].tag);
			ASSERT_EQ(0, seen[cqe[i].tag]) TH_LOG("tag %llu twice",
							   (unsigned long long)cqe[i].tag);
			seen[cqe[i].tag] = 1;
			EXPECT_EQ(0, cqe[i].status);
		}
		done += got;
		if (!got)
			wait_cq_level(&self->p, 1, 100);
	}
	EXPECT_EQ(total, done) TH_LOG("posted %u, %u completions, cmd consumer %u",
				      posted, done, self->p.cmd_hdr->consumer);
	for (i = 0; i < total; i++)
		if (!seen[i])
			break;
	EXPECT_EQ(total, i);
	nt_sleep_ms(20);
	EXPECT_EQ(0, nt_cq_ready(&self->p));
	ASSERT_EQ(0, nt_stats(self->p.fd, &st));
	EXPECT_EQ(total, st.cmds);
	EXPECT_EQ(total, st.cqes);
	EXPECT_EQ(self->p.kicks + 1, st.kicks);
	TH_LOG("%u commands, %llu kicks, %llu stalled passes", total,
	       (unsigned long long)st.kicks, (unsigned long long)st.cq_full);
	free(seen);
}

TEST_HARNESS_MAIN
