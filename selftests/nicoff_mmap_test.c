// SPDX-License-Identifier: GPL-2.0
/*
 * Mapping the rings (Documentation/abi.md, "mmap"): only the two offsets,
 * only the exact size, only MAP_SHARED; the mapped header describes the
 * ring, and a mapping keeps the port alive after close().
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define PAGE 4096ul

/* Bytes a ring of n slots maps: the header and the slots, whole pages. */
static uint64_t ring_bytes(uint64_t n, size_t slot)
{
	return (NICOFF_RING_HDR_SIZE + n * slot + PAGE - 1) & ~(PAGE - 1);
}

/* mmap that returns 0 (and unmaps at once) or -errno. */
static int try_map(int fd, size_t len, int flags, uint64_t off)
{
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, off);

	if (m == MAP_FAILED)
		return -errno;
	munmap(m, len);
	return 0;
}

FIXTURE(port) {
	int fd;
	struct nicoff_query q;
	struct nicoff_port_open po;
	uint32_t cmd_n, cq_n;	/* ring sizes of the port */
};

FIXTURE_SETUP(port)
{
	self->fd = nt_open_card(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, nt_query(self->fd, &self->q));
	/* Rings of different sizes, several pages each. */
	self->cq_n = self->q.max_ring_entries < 1024 ? self->q.max_ring_entries : 1024;
	self->cmd_n = self->cq_n / 4;
	ASSERT_LE(2, self->cmd_n);
	ASSERT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, self->cmd_n, self->cq_n,
				     &self->po));
	ASSERT_EQ(NICOFF_MMAP_CMD_RING, self->po.cmd_offset);
	ASSERT_EQ(NICOFF_MMAP_CQ_RING, self->po.cq_offset);
	ASSERT_EQ(ring_bytes(self->cmd_n, sizeof(struct nicoff_cmd)), self->po.cmd_size);
	ASSERT_EQ(ring_bytes(self->cq_n, sizeof(struct nicoff_cqe)), self->po.cq_size);
}

FIXTURE_TEARDOWN(port)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(port, correct_mappings)
{
	struct nicoff_ring_hdr *cmd, *cq, *cmd2;
	char *c, *c2;

	cmd = nt_map_ring(self->fd, &self->po, false);
	ASSERT_NE(MAP_FAILED, cmd);
	cq = nt_map_ring(self->fd, &self->po, true);
	ASSERT_NE(MAP_FAILED, cq);
	/* The header: entries, indices at zero, flags at byte 128. */
	c = (char *)cmd;
	EXPECT_EQ(self->cmd_n, cmd->entries);
	EXPECT_EQ(self->cmd_n, *(uint32_t *)(c + 132));
	EXPECT_EQ(self->cq_n, cq->entries);
	EXPECT_EQ(self->cq_n, *(uint32_t *)((char *)cq + 132));
	EXPECT_EQ(0, cmd->producer);
	EXPECT_EQ(0, cmd->consumer);
	EXPECT_EQ(0, cq->producer);
	EXPECT_EQ(0, cq->consumer);
	EXPECT_EQ(0, cmd->flags & ~(NICOFF_RING_NEED_WAKEUP | NICOFF_RING_ERROR));
	EXPECT_EQ(0, cmd->flags & NICOFF_RING_ERROR);
	EXPECT_EQ(0, cq->flags & NICOFF_RING_ERROR);
	/* Every byte of the mapping is there (the last slot too). */
	c[self->po.cmd_size - 1] = 0x5a;
	((char *)cq)[self->po.cq_size - 1] = 0x5a;
	/* The two rings are different memory. */
	EXPECT_NE(0x5a, ((char *)cq)[self->po.cmd_size - 1]);

	/* A second mapping of the same ring shares the memory. */
	cmd2 = nt_map_ring(self->fd, &self->po, false);
	ASSERT_NE(MAP_FAILED, cmd2);
	c2 = (char *)cmd2;
	EXPECT_EQ(0x5a, c2[self->po.cmd_size - 1]);
	c2[NICOFF_RING_HDR_SIZE + 100] = 0x33;
	EXPECT_EQ(0x33, c[NICOFF_RING_HDR_SIZE + 100]);
	munmap(cmd2, self->po.cmd_size);

	/* Unmapped and mapped again: still the same ring. */
	munmap(cmd, self->po.cmd_size);
	cmd = nt_map_ring(self->fd, &self->po, false);
	ASSERT_NE(MAP_FAILED, cmd);
	EXPECT_EQ(0x33, ((char *)cmd)[NICOFF_RING_HDR_SIZE + 100]);
	EXPECT_EQ(self->cmd_n, cmd->entries);
	munmap(cmd, self->po.cmd_size);
	munmap(cq, self->po.cq_size);
}

TEST_F(port, entries_for_each_size)
{
	const uint32_t sizes[][2] = {
		{ 2, 2 }, { 2, 4 }, { 8, 64 }, { 64, 64 },
		{ self->q.max_ring_entries / 2, self->q.max_ring_entries },
		{ self->q.max_ring_entries, self->q.max_ring_entries },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct nt_port p;

		ASSERT_EQ(0, nt_port_open(&p, 0, NICOFF_PORT_ANY, sizes[i][0], sizes[i][1]))
			TH_LOG("%u/%u", sizes[i][0], sizes[i][1]);
		EXPECT_EQ(sizes[i][0], p.cmd_hdr->entries);
		EXPECT_EQ(sizes[i][1], p.cq_hdr->entries);
		EXPECT_EQ(ring_bytes(sizes[i][0], sizeof(struct nicoff_cmd)), p.po.cmd_size);
		EXPECT_EQ(ring_bytes(sizes[i][1], sizeof(struct nicoff_cqe)), p.po.cq_size);
		nt_port_close(&p);
	}
}

TEST_F(port, wrong_offsets)
{
	static const uint64_t off[] = {
		PAGE, 2 * PAGE, NICOFF_MMAP_CQ_RING - PAGE, NICOFF_MMAP_CQ_RING + PAGE,
		NICOFF_MMAP_CQ_RING * 2, NICOFF_MMAP_CQ_RING * 3, 0x20000000ull, 1ull << 40,
		1ull << 44, NICOFF_MMAP_CQ_RING | (1ull << 40),
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(off); i++) {
		EXPECT_EQ(-EINVAL, try_map(self->fd, self->po.cmd_size, MAP_SHARED, off[i]))
			TH_LOG("offset %#llx", (unsigned long long)off[i]);
		EXPECT_EQ(-EINVAL, try_map(self->fd, PAGE, MAP_SHARED, off[i]))
			TH_LOG("offset %#llx", (unsigned long long)off[i]);
	}
	/* Not page aligned: refused before the driver sees it. */
	EXPECT_EQ(-EINVAL, try_map(self->fd, self->po.cmd_size, MAP_SHARED, 64));
	EXPECT_EQ(-EINVAL, try_map(self->fd, self->po.cq_size, MAP_SHARED,
				   NICOFF_MMAP_CQ_RING + 256));
}

TEST_F(port, wrong_sizes)
{
	uint64_t cmd = self->po.cmd_size, cq = self->po.cq_size;

	/* Too large. */
	EXPECT_EQ(-EINVAL, try_map(self->fd, cmd + PAGE, MAP_SHARED, self->po.cmd_offset));
	EXPECT_EQ(-EINVAL, try_map(self->fd, cmd * 4, MAP_SHARED, self->po.cmd_offset));
	EXPECT_EQ(-EINVAL, try_map(self->fd, cq + PAGE, MAP_SHARED, self->po.cq_offset));
	EXPECT_EQ(-EINVAL, try_map(self->fd, 64 << 20, MAP_SHARED, self->po.cq_offset));
	/* Too small. */
	EXPECT_EQ(-EINVAL, try_map(self->fd, cmd - PAGE, MAP_SHARED, self->po.cmd_offset));
	EXPECT_EQ(-EINVAL, try_map(self->fd, PAGE, MAP_SHARED, self->po.cmd_offset));
	EXPECT_EQ(-EINVAL, try_map(self->fd, cq - PAGE, MAP_SHARED, self->po.cq_offset));
	EXPECT_EQ(-EINVAL, try_map(self->fd, 1, MAP_SHARED, self->po.cq_offset));
	/* The other ring's size. */
	ASSERT_NE(cmd, cq);
	EXPECT_EQ(-EINVAL, try_map(self->fd, cq, MAP_SHARED, self->po.cmd_offset));
	EXPECT_EQ(-EINVAL, try_map(self->fd, cmd, MAP_SHARED, self->po.cq_offset));
	/* The right sizes still work after all that. */
	EXPECT_EQ(0, try_map(self->fd, cmd, MAP_SHARED, self->po.cmd_offset));
	EXPECT_EQ(0, try_map(self->fd, cq, MAP_SHARED, self->po.cq_offset));
}

TEST_F(port, private_mappings)
{
	EXPECT_EQ(-EINVAL, try_map(self->fd, self->po.cmd_size, MAP_PRIVATE,
				   self->po.cmd_offset));
	EXPECT_EQ(-EINVAL, try_map(self->fd, self->po.cq_size, MAP_PRIVATE, self->po.cq_offset));
	EXPECT_EQ(-EINVAL, try_map(self->fd, self->po.cq_size, MAP_PRIVATE | MAP_POPULATE,
				   self->po.cq_offset));
}

/* The mappings hold the file: the port outlives close() until munmap. */
TEST_F(port, mapping_keeps_port)
{
	long long pinned0 = nt_pinned_pages();
	char *buf = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	struct nicoff_ring_hdr *cmd, *cq;
	struct nicoff_port_open po;
	int fd2;

	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_LE(0, pinned0);
	ASSERT_EQ(0, nt_reg_mr(self->fd, buf, 4 * PAGE, NICOFF_ACCESS_LOCAL_WRITE, NULL));
	EXPECT_EQ(pinned0 + 4, nt_pinned_pages());
	cmd = nt_map_ring(self->fd, &self->po, false);
	ASSERT_NE(MAP_FAILED, cmd);
	cq = nt_map_ring(self->fd, &self->po, true);
	ASSERT_NE(MAP_FAILED, cq);
	close(self->fd);
	self->fd = -1;
	/* Port and regions live on; its port number is still taken. */
	EXPECT_EQ(self->cmd_n, cmd->entries);
	EXPECT_EQ(pinned0 + 4, nt_pinned_pages());
	fd2 = nt_open_card(0);
	ASSERT_LE(0, fd2);
	memset(&po, 0, sizeof(po));
	po.abi_version = NICOFF_ABI_VERSION;
	po.port = self->po.port;
	po.cmd_entries = 2;
	po.cq_entries = 2;
	EXPECT_EQ(-EADDRINUSE, nt_ioctl(fd2, NICOFF_IOC_PORT_OPEN, &po));
	munmap(cmd, self->po.cmd_size);
	EXPECT_EQ(pinned0 + 4, nt_pinned_pages());
	munmap(cq, self->po.cq_size);
	/* Last reference gone: everything released. */
	EXPECT_EQ(pinned0, nt_wait_pinned(pinned0, 2000));
	EXPECT_EQ(0, nt_ioctl(fd2, NICOFF_IOC_PORT_OPEN, &po));
	close(fd2);
	munmap(buf, 4 * PAGE);
}

TEST_HARNESS_MAIN
