// SPDX-License-Identifier: GPL-2.0
/*
 * Argument checking of every nicoff ioctl (Documentation/abi.md, "ioctls"):
 * bad pointers, sizes, reserved fields, ring sizes, versions, port numbers,
 * calls before PORT_OPEN, memory registration arguments and limits.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <termios.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define PAGE 4096ul
#define KERNEL_PTR ((void *)0xffffffff81000000ul)
#define KERNEL_ADDR 0xffff888000000000ull
#define TASK_SIZE_64 0x7ffffffff000ull

/* An address with nothing mapped at it (a page mapped, then unmapped). */
static void *unmapped_page(void)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	munmap(p, PAGE);
	return p;
}

/* A read-only page holding a copy of what the caller gives. */
static void *readonly_copy(const void *src, size_t len)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, src, len);
	if (mprotect(p, PAGE, PROT_READ)) {
		munmap(p, PAGE);
		return NULL;
	}
	return p;
}

static struct nicoff_port_open valid_open(uint32_t port)
{
	struct nicoff_port_open po;

	memset(&po, 0, sizeof(po));
	po.abi_version = NICOFF_ABI_VERSION;
	po.port = port;
	po.cmd_entries = 8;
	po.cq_entries = 8;
	return po;
}

static int port_open_raw(int fd, struct nicoff_port_open *po)
{
	return nt_ioctl(fd, NICOFF_IOC_PORT_OPEN, po);
}

/* A fresh file of card 0 made into a port with small rings. */
static int open_port0(void)
{
	int fd = nt_open_card(0);

	if (fd < 0)
		return fd;
	if (nt_port_open_fd(fd, NICOFF_PORT_ANY, 8, 8, NULL)) {
		close(fd);
		return -1;
	}
	return fd;
}

FIXTURE(card) {
	int fd;
	struct nicoff_query q;
	long long pinned0;
};

FIXTURE_SETUP(card)
{
	self->fd = nt_open_card(0);
	ASSERT_LE(0, self->fd) TH_LOG("open /dev/nicoff0: %s", strerror(-self->fd));
	ASSERT_EQ(0, nt_query(self->fd, &self->q));
	self->pinned0 = nt_pinned_pages();
	ASSERT_LE(0, self->pinned0);
}

FIXTURE_TEARDOWN(card)
{
	if (self->fd >= 0)
		close(self->fd);
}

TEST_F(card, query_fields)
{
	struct nicoff_query q;
	uint32_t i;

	/* Reserved words are written as zero by the kernel. */
	memset(&q, 0xa5, sizeof(q));
	ASSERT_EQ(0, nt_ioctl(self->fd, NICOFF_IOC_QUERY, &q));
	EXPECT_EQ(NICOFF_ABI_VERSION, q.abi_version);
	EXPECT_EQ(0, q.card);
	EXPECT_LE(1, q.num_cards);
	EXPECT_LE(1, q.max_ports);
	EXPECT_LE(2, q.max_ring_entries);
	EXPECT_EQ(0, q.max_ring_entries & (q.max_ring_entries - 1));
	EXPECT_LE(1, q.max_mrs);
	for (i = 0; i < 10; i++)
		EXPECT_EQ(0, q.reserved[i]);

	/* Each card reports its own number and the same totals. */
	for (i = 0; i < q.num_cards; i++) {
		struct nicoff_query qi;
		int fd = nt_open_card(i);

		ASSERT_LE(0, fd) TH_LOG("card %u", i);
		ASSERT_EQ(0, nt_query(fd, &qi));
		EXPECT_EQ(i, qi.card);
		EXPECT_EQ(q.num_cards, qi.num_cards);
		EXPECT_EQ(q.max_ports, qi.max_ports);
		EXPECT_EQ(q.max_mrs, qi.max_mrs);
		close(fd);
	}
	/* One device per card and no more. */
	EXPECT_EQ(-ENOENT, nt_open_card(q.num_cards));
}

TEST_F(card, query_bad_pointers)
{
	struct nicoff_query q = {};
	void *ro = readonly_copy(&q, sizeof(q));
	void *um = unmapped_page();

	ASSERT_NE(NULL, ro);
	ASSERT_NE(NULL, um);
	EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_QUERY, NULL));
	EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_QUERY, um));
	EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_QUERY, KERNEL_PTR));
	EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_QUERY, ro));
	/* Straddling the end of a mapping into an unmapped page. */
	EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_QUERY, (char *)um - 8));
	munmap(ro, PAGE);
}

TEST_F(card, port_open_bad_pointers)
{
	void *um = unmapped_page();

	ASSERT_NE(NULL, um);
	EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_PORT_OPEN, NULL));
	EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_PORT_OPEN, um));
	EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_PORT_OPEN, KERNEL_PTR));
	/* None of that made the file a port. */
	EXPECT_EQ(-ENOTCONN, nt_kick(self->fd));
	EXPECT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));
}

/*
 * A request the kernel can read but not answer into: the call fails with
 * EFAULT and must not leave a half-open port behind (the file is not a
 * port, the port number is free again).
 */
TEST_F(card, port_open_unwritable_answer)
{
	uint32_t want = self->q.max_ports - 1;
	struct nicoff_port_open po = valid_open(want);
	void *ro = readonly_copy(&po, sizeof(po));
	int fd2;

	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_PORT_OPEN, ro));
	EXPECT_EQ(-ENOTCONN, nt_kick(self->fd));
	fd2 = nt_open_card(0);
	ASSERT_LE(0, fd2);
	po = valid_open(want);
	EXPECT_EQ(0, port_open_raw(fd2, &po)) TH_LOG("port %u still taken", want);
	EXPECT_EQ(want, po.port);
	close(fd2);
	po = valid_open(want);
	EXPECT_EQ(0, port_open_raw(self->fd, &po));
	munmap(ro, PAGE);
}

TEST_F(card, port_ioctls_bad_pointers)
{
	struct nicoff_port_stats st = {};
	void *ro = readonly_copy(&st, sizeof(st));
	void *um = unmapped_page();
	void *bad[] = { NULL, um, KERNEL_PTR };
	unsigned int i;

	ASSERT_NE(NULL, ro);
	ASSERT_NE(NULL, um);
	ASSERT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_QUERY, bad[i]));
		EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_REG_MR, bad[i]));
		EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_DEREG_MR, bad[i]));
		EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_PORT_STATS, bad[i]));
		EXPECT_EQ(-EBUSY, nt_ioctl(self->fd, NICOFF_IOC_PORT_OPEN, &(struct nicoff_port_open){
			.abi_version = NICOFF_ABI_VERSION, .port = NICOFF_PORT_ANY,
			.cmd_entries = 8, .cq_entries = 8 }));
	}
	EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_PORT_STATS, ro));
	EXPECT_EQ(self->pinned0, nt_pinned_pages());
	munmap(ro, PAGE);
}

/* REG_MR whose answer cannot be written: EFAULT and nothing stays pinned. */
TEST_F(card, reg_mr_unwritable_answer)
{
	char *buf = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	struct nicoff_reg_mr mr = {};
	void *ro;

	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 1, 4 * PAGE);
	mr.addr = (uintptr_t)buf;
	mr.length = 4 * PAGE;
	mr.access = NICOFF_ACCESS_LOCAL_WRITE;
	ro = readonly_copy(&mr, sizeof(mr));
	ASSERT_NE(NULL, ro);
	ASSERT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));
	EXPECT_EQ(-EFAULT, nt_ioctl(self->fd, NICOFF_IOC_REG_MR, ro));
	EXPECT_EQ(self->pinned0, nt_pinned_pages());
	munmap(ro, PAGE);
	munmap(buf, 4 * PAGE);
}

/* An ioctl number built with another size or direction is not ours. */
TEST_F(card, wrong_sizes)
{
	static const struct {
		unsigned long nr, dir, size;
	} ioc[] = {
		{ 0x00, _IOC_READ, sizeof(struct nicoff_query) },
		{ 0x01, _IOC_READ | _IOC_WRITE, sizeof(struct nicoff_port_open) },
		{ 0x02, _IOC_READ | _IOC_WRITE, sizeof(struct nicoff_reg_mr) },
		{ 0x03, _IOC_WRITE, sizeof(struct nicoff_dereg_mr) },
		{ 0x04, _IOC_NONE, 0 },
		{ 0x05, _IOC_READ, sizeof(struct nicoff_port_stats) },
	};
	static const long delta[] = { -8, -4, -1, 1, 4, 8, 64 };
	char big[4096];
	int pass, port_fd;
	unsigned int i, j;

	memset(big, 0, sizeof(big));
	port_fd = open_port0();
	ASSERT_LE(0, port_fd);
	for (pass = 0; pass < 2; pass++) {
		int fd = pass ? port_fd : self->fd;

		for (i = 0; i < ARRAY_SIZE(ioc); i++) {
			for (j = 0; j < ARRAY_SIZE(delta); j++) {
				long sz = (long)ioc[i].size + delta[j];

				if (sz < 0)
					continue;
				EXPECT_EQ(-ENOTTY, nt_ioctl(fd, _IOC(ioc[i].dir, NICOFF_IOC_MAGIC,
						ioc[i].nr, sz), big))
					TH_LOG("nr %lu size %ld", ioc[i].nr, sz);
			}
			/* Same size, other direction. */
			for (j = 0; j < 4; j++) {
				if (j == ioc[i].dir)
					continue;
				EXPECT_EQ(-ENOTTY, nt_ioctl(fd, _IOC(j, NICOFF_IOC_MAGIC,
						ioc[i].nr, ioc[i].size), big))
					TH_LOG("nr %lu dir %u", ioc[i].nr, j);
			}
		}
	}
	/* The port is untouched by all of that. */
	EXPECT_EQ(0, nt_stats(port_fd, (struct nicoff_port_stats *)big));
	close(port_fd);
}

TEST_F(card, unknown_ioctls)
{
	char big[4096];
	unsigned long nr;
	int port_fd = open_port0();

	ASSERT_LE(0, port_fd);
	memset(big, 0, sizeof(big));
	for (nr = 0x06; nr < 0x100; nr += (nr < 0x20 ? 1 : 0x1f)) {
		EXPECT_EQ(-ENOTTY, nt_ioctl(self->fd, _IO(NICOFF_IOC_MAGIC, nr), big));
		EXPECT_EQ(-ENOTTY, nt_ioctl(port_fd, _IOWR(NICOFF_IOC_MAGIC, nr, uint64_t), big));
	}
	/* Our numbers under another magic. */
	EXPECT_EQ(-ENOTTY, nt_ioctl(self->fd, _IOR(0xB9, 0x00, struct nicoff_query), big));
	EXPECT_EQ(-ENOTTY, nt_ioctl(port_fd, _IO(0xB7, 0x04), big));
	EXPECT_EQ(-ENOTTY, nt_ioctl(port_fd, 0, big));
	EXPECT_EQ(-ENOTTY, nt_ioctl(port_fd, TCGETS, big));
	close(port_fd);
}

TEST_F(card, port_open_abi_version)
{
	static const uint32_t bad[] = { 0, NICOFF_ABI_VERSION + 1, 0xffffffffu, 0x100 };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct nicoff_port_open po = valid_open(NICOFF_PORT_ANY);

		po.abi_version = bad[i];
		EXPECT_EQ(-EPROTO, port_open_raw(self->fd, &po)) TH_LOG("version %u", bad[i]);
	}
	EXPECT_EQ(-ENOTCONN, nt_kick(self->fd));
}

TEST_F(card, port_open_reserved_fields)
{
	unsigned int i, bit;

	for (bit = 0; bit < 32; bit++) {
		struct nicoff_port_open po = valid_open(NICOFF_PORT_ANY);

		po.flags = 1u << bit;
		EXPECT_EQ(-EINVAL, port_open_raw(self->fd, &po)) TH_LOG("flag bit %u", bit);
	}
	for (i = 0; i < 9; i++) {
		struct nicoff_port_open po = valid_open(NICOFF_PORT_ANY);

		switch (i) {
		case 0: po.reserved0 = 1; break;
		case 1: po.cmd_offset = PAGE; break;
		case 2: po.cmd_size = 1; break;
		case 3: po.cq_offset = NICOFF_MMAP_CQ_RING; break;
		case 4: po.cq_size = 1ull << 40; break;
		default: po.reserved[i - 5] = 1ull << (i * 7); break;
		}
		EXPECT_EQ(-EINVAL, port_open_raw(self->fd, &po)) TH_LOG("field %u", i);
	}
	EXPECT_EQ(-ENOTCONN, nt_kick(self->fd));
	EXPECT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));
}

TEST_F(card, port_open_ring_sizes)
{
	uint32_t max = self->q.max_ring_entries;
	const struct {
		uint32_t cmd, cq;
		int err;
	} t[] = {
		{ 0, 0, -EINVAL }, { 0, 2, -EINVAL }, { 1, 1, -EINVAL }, { 1, 2, -EINVAL },
		{ 3, 4, -EINVAL }, { 2, 3, -EINVAL }, { 6, 8, -EINVAL }, { 8, 12, -EINVAL },
		{ 4, 2, -EINVAL }, { 8, 4, -EINVAL }, { max, max / 2, -EINVAL },
		{ max * 2, max * 2, -EINVAL }, { max, max * 2, -EINVAL },
		{ 2, max * 2, -EINVAL }, { 0x80000000u, 0x80000000u, -EINVAL },
		{ 2, 0x80000000u, -EINVAL }, { 0xffffffffu, 0xffffffffu, -EINVAL },
		{ 2, 2, 0 }, { 2, max, 0 }, { max, max, 0 }, { 4, 16, 0 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct nicoff_port_open po = valid_open(NICOFF_PORT_ANY);
		int fd = nt_open_card(0);

		ASSERT_LE(0, fd);
		po.cmd_entries = t[i].cmd;
		po.cq_entries = t[i].cq;
		EXPECT_EQ(t[i].err, port_open_raw(fd, &po))
			TH_LOG("cmd_entries %u cq_entries %u", t[i].cmd, t[i].cq);
		if (!t[i].err) {
			EXPECT_EQ(NICOFF_MMAP_CMD_RING, po.cmd_offset);
			EXPECT_EQ(NICOFF_MMAP_CQ_RING, po.cq_offset);
			EXPECT_LE(NICOFF_RING_HDR_SIZE + t[i].cmd * sizeof(struct nicoff_cmd),
				  po.cmd_size);
			EXPECT_LE(NICOFF_RING_HDR_SIZE + t[i].cq * sizeof(struct nicoff_cqe),
				  po.cq_size);
			EXPECT_EQ(0, po.cmd_size % PAGE);
			EXPECT_EQ(0, po.cq_size % PAGE);
			EXPECT_GT(self->q.max_ports, po.port);
		} else {
			EXPECT_EQ(-ENOTCONN, nt_kick(fd));
		}
		close(fd);
	}
}

TEST_F(card, port_numbers)
{
	uint32_t last = self->q.max_ports - 1, p2;
	struct nicoff_port_open po;
	int fd2, fd3;

	po = valid_open(self->q.max_ports);
	EXPECT_EQ(-EINVAL, port_open_raw(self->fd, &po));
	po = valid_open(self->q.max_ports + 1);
	EXPECT_EQ(-EINVAL, port_open_raw(self->fd, &po));
	po = valid_open(0xfffffffeu);
	EXPECT_EQ(-EINVAL, port_open_raw(self->fd, &po));
	po = valid_open(0x80000000u);
	EXPECT_EQ(-EINVAL, port_open_raw(self->fd, &po));
	EXPECT_EQ(-ENOTCONN, nt_kick(self->fd));

	po = valid_open(last);
	ASSERT_EQ(0, port_open_raw(self->fd, &po));
	EXPECT_EQ(last, po.port);

	/* Taken by another file. */
	fd2 = nt_open_card(0);
	ASSERT_LE(0, fd2);
	po = valid_open(last);
	EXPECT_EQ(-EADDRINUSE, port_open_raw(fd2, &po));
	/* ANY picks a free port below max_ports, not the taken one. */
	po = valid_open(NICOFF_PORT_ANY);
	ASSERT_EQ(0, port_open_raw(fd2, &po));
	EXPECT_GT(last, po.port);
	p2 = po.port;
	fd3 = nt_open_card(0);
	ASSERT_LE(0, fd3);
	po = valid_open(p2);
	EXPECT_EQ(-EADDRINUSE, port_open_raw(fd3, &po));
	/* The same number on another card is a different port. */
	if (self->q.num_cards > 1) {
		int fd4 = nt_open_card(1);

		ASSERT_LE(0, fd4);
		po = valid_open(last);
		EXPECT_EQ(0, port_open_raw(fd4, &po));
		close(fd4);
	}
	/* Closing the file frees the port number. */
	close(self->fd);
	self->fd = -1;
	po = valid_open(last);
	EXPECT_EQ(0, port_open_raw(fd3, &po));
	close(fd3);
	close(fd2);
}

TEST_F(card, port_open_twice)
{
	struct nicoff_port_stats st;
	struct nicoff_port_open po;
	uint32_t first;
	int fd2;

	po = valid_open(NICOFF_PORT_ANY);
	ASSERT_EQ(0, port_open_raw(self->fd, &po));
	first = po.port;
	po = valid_open(NICOFF_PORT_ANY);
	EXPECT_EQ(-EBUSY, port_open_raw(self->fd, &po));
	po = valid_open(first);
	EXPECT_EQ(-EBUSY, port_open_raw(self->fd, &po));
	po = valid_open(self->q.max_ports - 1);
	EXPECT_EQ(-EBUSY, port_open_raw(self->fd, &po));
	/* ... and the failed attempt did not claim that other port. */
	fd2 = nt_open_card(0);
	ASSERT_LE(0, fd2);
	po = valid_open(self->q.max_ports - 1);
	EXPECT_EQ(0, port_open_raw(fd2, &po));
	close(fd2);
	/* The first port is still there. */
	EXPECT_EQ(0, nt_stats(self->fd, &st));
	EXPECT_EQ(0, nt_kick(self->fd));
	fd2 = nt_open_card(0);
	ASSERT_LE(0, fd2);
	po = valid_open(first);
	EXPECT_EQ(-EADDRINUSE, port_open_raw(fd2, &po));
	close(fd2);
}

TEST_F(card, before_port_open)
{
	struct nicoff_port_stats st;
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	static char buf[PAGE] __attribute__((aligned(4096)));
	uint32_t h;
	void *m;

	EXPECT_EQ(-ENOTCONN, nt_reg_mr(self->fd, buf, sizeof(buf), 0, &h));
	EXPECT_EQ(-ENOTCONN, nt_dereg_mr(self->fd, 1));
	EXPECT_EQ(-ENOTCONN, nt_kick(self->fd));
	EXPECT_EQ(-ENOTCONN, nt_stats(self->fd, &st));
	/* Even with bad pointers the missing port is what counts. */
	EXPECT_EQ(-ENOTCONN, nt_ioctl(self->fd, NICOFF_IOC_REG_MR, NULL));
	EXPECT_EQ(-ENOTCONN, nt_ioctl(self->fd, NICOFF_IOC_PORT_STATS, NULL));
	m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, NICOFF_MMAP_CMD_RING);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(ENOTCONN, errno);
	m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, NICOFF_MMAP_CQ_RING);
	EXPECT_EQ(MAP_FAILED, m);
	EXPECT_EQ(ENOTCONN, errno);
	ASSERT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_TRUE(pfd.revents & POLLERR);
	EXPECT_FALSE(pfd.revents & POLLIN);
	EXPECT_EQ(self->pinned0, nt_pinned_pages());
}

TEST_F(card, reg_mr_bad_arguments)
{
	size_t len = 4 * PAGE;
	char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *hole;
	unsigned int i, bit;
	uint32_t h;

	ASSERT_NE(MAP_FAILED, buf);
	memset(buf, 0, len);
	ASSERT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));

	EXPECT_EQ(-EINVAL, nt_reg_mr(self->fd, buf, 0, 0, &h));
	EXPECT_EQ(-EINVAL, nt_reg_mr(self->fd, buf, 0, NICOFF_ACCESS_LOCAL_WRITE, &h));
	for (bit = 4; bit < 32; bit++)
		EXPECT_EQ(-EINVAL, nt_reg_mr(self->fd, buf, len, 1u << bit, &h))
			TH_LOG("access bit %u", bit);
	EXPECT_EQ(-EINVAL, nt_reg_mr(self->fd, buf, len, NICOFF_ACCESS_ALL | 0x10, &h));

	/* Non-zero reserved and out fields. */
	for (i = 0; i < 5; i++) {
		struct nicoff_reg_mr mr = {
			.addr = (uintptr_t)buf, .length = len, .access = NICOFF_ACCESS_ALL,
		};

		switch (i) {
		case 0: mr.reserved0 = 1; break;
		case 1: mr.handle = 1; break;
		case 2: mr.rkey = 0x80000000u; break;
		case 3: mr.reserved[0] = 1; break;
		default: mr.reserved[1] = 1ull << 63; break;
		}
		EXPECT_EQ(-EINVAL, nt_ioctl(self->fd, NICOFF_IOC_REG_MR, &mr)) TH_LOG("field %u", i);
	}

	/* Ranges that wrap or leave user space. */
	EXPECT_EQ(-EFAULT, nt_reg_mr(self->fd, (void *)(uintptr_t)0xfffffffffffff000ull,
				     2 * PAGE, 0, &h));
	EXPECT_EQ(-EFAULT, nt_reg_mr(self->fd, buf, UINT64_MAX, 0, &h));
	EXPECT_EQ(-EFAULT, nt_reg_mr(self->fd, buf, UINT64_MAX - (uintptr_t)buf + 2, 0, &h));
	EXPECT_EQ(-EFAULT, nt_reg_mr(self->fd, (void *)(uintptr_t)KERNEL_ADDR, PAGE, 0, &h));
	EXPECT_EQ(-EFAULT, nt_reg_mr(self->fd, KERNEL_PTR, PAGE, NICOFF_ACCESS_LOCAL_WRITE, &h));
	EXPECT_EQ(-EFAULT, nt_reg_mr(self->fd, (void *)(uintptr_t)(TASK_SIZE_64 - PAGE),
				     2 * PAGE, 0, &h));
	/* Unmapped: nothing there, NULL, a hole after a mapped page. */
	EXPECT_EQ(-EFAULT, nt_reg_mr(self->fd, unmapped_page(), PAGE, 0, &h));
	EXPECT_EQ(-EFAULT, nt_reg_mr(self->fd, NULL, PAGE, 0, &h));
	hole = buf + 2 * PAGE;
	ASSERT_EQ(0, munmap(hole, PAGE));
	EXPECT_EQ(-EFAULT, nt_reg_mr(self->fd, buf, 3 * PAGE, 0, &h));
	EXPECT_EQ(-EFAULT, nt_reg_mr(self->fd, buf + PAGE + 100, PAGE, NICOFF_ACCESS_LOCAL_WRITE,
				     &h));
	/* None of the failures left anything pinned. */
	EXPECT_EQ(self->pinned0, nt_pinned_pages());
	/* And the valid part still registers. */
	EXPECT_EQ(0, nt_reg_mr(self->fd, buf, 2 * PAGE, NICOFF_ACCESS_ALL, &h));
	EXPECT_EQ(self->pinned0 + 2, nt_pinned_pages());
	EXPECT_EQ(0, nt_dereg_mr(self->fd, h));
	EXPECT_EQ(self->pinned0, nt_pinned_pages());
	munmap(buf, len);
}

/*
 * A huge unmapped range must fail (EFAULT: not mapped; ENOMEM would be
 * tolerable) without the kernel warning about it: a user must not be able
 * to trigger WARN_ON or an allocation-failure splat (panic_on_warn).
 */
TEST_F(card, reg_mr_huge_unmapped_range)
{
	static const uint64_t sizes[] = {
		1ull << 36,		/* 64 GiB */
		600ull << 30,		/* page array larger than the VM's RAM */
		2ull << 40,		/* page array above INT_MAX bytes */
	};
	char line[256] = "";
	unsigned int i;
	int kmsg, ret;

	ASSERT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));
	NT_KMSG_WATCH(kmsg);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		/* Far below the program, the heap and the mmap area. */
		ret = nt_reg_mr(self->fd, (void *)(uintptr_t)(1ull << 32), sizes[i], 0, NULL);
		EXPECT_TRUE(ret == -EFAULT || ret == -ENOMEM)
			TH_LOG("%llu GiB: %s", (unsigned long long)(sizes[i] >> 30),
			       strerror(-ret));
		EXPECT_EQ(0, nt_kmsg_splat(kmsg, line, sizeof(line)))
			TH_LOG("REG_MR of %llu GiB: kernel log: %s",
			       (unsigned long long)(sizes[i] >> 30), line);
	}
	EXPECT_EQ(self->pinned0, nt_pinned_pages());
	close(kmsg);
}

/* A write or atomic right pins for writing: a read-only mapping refuses. */
TEST_F(card, reg_mr_readonly_mapping)
{
	static const uint32_t wr[] = {
		NICOFF_ACCESS_LOCAL_WRITE, NICOFF_ACCESS_REMOTE_WRITE,
		NICOFF_ACCESS_REMOTE_ATOMIC, NICOFF_ACCESS_ALL,
		NICOFF_ACCESS_REMOTE_READ | NICOFF_ACCESS_REMOTE_WRITE,
	};
	char *ro = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	uint32_t h1, h2;
	unsigned int i;

	ASSERT_NE(MAP_FAILED, ro);
	memset(ro, 7, 2 * PAGE);
	ASSERT_EQ(0, mprotect(ro, 2 * PAGE, PROT_READ));
	ASSERT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));
	for (i = 0; i < ARRAY_SIZE(wr); i++)
		EXPECT_EQ(-EFAULT, nt_reg_mr(self->fd, ro, 2 * PAGE, wr[i], NULL))
			TH_LOG("access %#x", wr[i]);
	EXPECT_EQ(self->pinned0, nt_pinned_pages());
	EXPECT_EQ(0, nt_reg_mr(self->fd, ro, 2 * PAGE, 0, &h1));
	EXPECT_EQ(0, nt_reg_mr(self->fd, ro + 1, PAGE, NICOFF_ACCESS_REMOTE_READ, &h2));
	EXPECT_EQ(self->pinned0 + 4, nt_pinned_pages());
	EXPECT_EQ(0, nt_dereg_mr(self->fd, h1));
	EXPECT_EQ(0, nt_dereg_mr(self->fd, h2));
	EXPECT_EQ(self->pinned0, nt_pinned_pages());
	munmap(ro, 2 * PAGE);
}

TEST_F(card, reg_mr_page_accounting)
{
	char *buf = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	uint32_t h[5];
	unsigned int i, j;

	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));
	ASSERT_EQ(0, nt_reg_mr(self->fd, buf, 3 * PAGE, NICOFF_ACCESS_LOCAL_WRITE, &h[0]));
	EXPECT_EQ(self->pinned0 + 3, nt_pinned_pages());
	/* Two bytes straddling a page boundary pin two pages. */
	ASSERT_EQ(0, nt_reg_mr(self->fd, buf + PAGE - 1, 2, 0, &h[1]));
	EXPECT_EQ(self->pinned0 + 5, nt_pinned_pages());
	ASSERT_EQ(0, nt_reg_mr(self->fd, buf + 5 * PAGE + 17, 1, NICOFF_ACCESS_ALL, &h[2]));
	EXPECT_EQ(self->pinned0 + 6, nt_pinned_pages());
	ASSERT_EQ(0, nt_reg_mr(self->fd, buf + 1, 8 * PAGE - 1, 0, &h[3]));
	EXPECT_EQ(self->pinned0 + 14, nt_pinned_pages());
	ASSERT_EQ(0, nt_reg_mr(self->fd, buf + 1, 8 * PAGE - 2, 0, &h[4]));
	EXPECT_EQ(self->pinned0 + 22, nt_pinned_pages());
	/* Handles are non-zero and distinct. */
	for (i = 0; i < 5; i++) {
		EXPECT_NE(0, h[i]);
		for (j = 0; j < i; j++)
			EXPECT_NE(h[j], h[i]);
	}
	EXPECT_EQ(0, nt_dereg_mr(self->fd, h[3]));
	EXPECT_EQ(self->pinned0 + 14, nt_pinned_pages());
	/* Closing the port releases the rest. */
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 2000));
	munmap(buf, 8 * PAGE);
}

TEST_F(card, dereg_mr_errors)
{
	static char buf[PAGE] __attribute__((aligned(4096)));
	struct nicoff_dereg_mr d;
	uint32_t h, h2;
	int fd2;

	ASSERT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));
	EXPECT_EQ(-ENOENT, nt_dereg_mr(self->fd, 0));
	EXPECT_EQ(-ENOENT, nt_dereg_mr(self->fd, 12345));
	EXPECT_EQ(-ENOENT, nt_dereg_mr(self->fd, 0xffffffffu));
	ASSERT_EQ(0, nt_reg_mr(self->fd, buf, sizeof(buf), NICOFF_ACCESS_LOCAL_WRITE, &h));
	EXPECT_EQ(-ENOENT, nt_dereg_mr(self->fd, h + 1));
	d.handle = h;
	d.reserved = 1;
	EXPECT_EQ(-EINVAL, nt_ioctl(self->fd, NICOFF_IOC_DEREG_MR, &d));
	/* The rejected call did not deregister. */
	EXPECT_EQ(self->pinned0 + 1, nt_pinned_pages());
	EXPECT_EQ(0, nt_dereg_mr(self->fd, h));
	EXPECT_EQ(-ENOENT, nt_dereg_mr(self->fd, h));
	EXPECT_EQ(self->pinned0, nt_pinned_pages());
	/* A handle of another port is unknown here. */
	fd2 = open_port0();
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, nt_reg_mr(fd2, buf, sizeof(buf), 0, &h2));
	EXPECT_EQ(-ENOENT, nt_dereg_mr(self->fd, h2));
	EXPECT_EQ(0, nt_dereg_mr(fd2, h2));
	close(fd2);
}

TEST_F_TIMEOUT(card, max_mrs, 120)
{
	uint32_t max = self->q.max_mrs, i, h, extra;
	char *buf = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint32_t *handles = calloc(max, sizeof(*handles));
	int fd2;

	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_NE(NULL, handles);
	buf[0] = 1;
	ASSERT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));
	for (i = 0; i < max; i++)
		ASSERT_EQ(0, nt_reg_mr(self->fd, buf, PAGE, i & NICOFF_ACCESS_ALL, &handles[i]))
			TH_LOG("region %u of %u", i, max);
	EXPECT_EQ(self->pinned0 + max, nt_pinned_pages());
	EXPECT_EQ(-ENOSPC, nt_reg_mr(self->fd, buf, PAGE, 0, &h));
	EXPECT_EQ(-ENOSPC, nt_reg_mr(self->fd, buf, 1, NICOFF_ACCESS_LOCAL_WRITE, &h));
	EXPECT_EQ(self->pinned0 + max, nt_pinned_pages());
	/* The limit is per port. */
	fd2 = open_port0();
	ASSERT_LE(0, fd2);
	EXPECT_EQ(0, nt_reg_mr(fd2, buf, PAGE, 0, &h));
	close(fd2);
	/* Room again after a deregistration, and only for one. */
	ASSERT_EQ(0, nt_dereg_mr(self->fd, handles[max / 2]));
	EXPECT_EQ(0, nt_reg_mr(self->fd, buf, PAGE, 0, &extra));
	EXPECT_EQ(-ENOSPC, nt_reg_mr(self->fd, buf, PAGE, 0, &h));
	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 5000));
	free(handles);
	munmap(buf, PAGE);
}

/*
 * REG_MR racing DEREG_MR of the handles it is about to return, from
 * another thread of the same process.  A region must be complete before
 * any other thread (or the card) can reach it by its handle: every REG_MR
 * that succeeds answers a handle in range and the rkey made from it, and
 * the pinned pages end where the successful calls say they should.
 */
struct race {
	int fd;
	void *buf;
	volatile int stop;
	unsigned long regs, deregs, bad;
	uint32_t bad_handle, bad_rkey;
};

static void *race_dereg(void *arg)
{
	struct race *r = arg;
	unsigned int i = 0;

	/* Mostly the handle the next REG_MR gets: the lowest free one. */
	while (!r->stop) {
		if (!nt_dereg_mr(r->fd, ++i & 15 ? 1 : 1 + (i >> 4) % 3))
			r->deregs++;
	}
	return NULL;
}

TEST_F_TIMEOUT(card, reg_dereg_race, 120)
{
	struct race r = { .fd = self->fd };
	struct nicoff_reg_mr req;
	uint32_t h, hmax = 3;
	pthread_t th;
	uint64_t end;
	int kmsg;

	r.buf = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r.buf);
	memset(r.buf, 1, PAGE);
	ASSERT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));
	NT_KMSG_WATCH(kmsg);
	ASSERT_EQ(0, pthread_create(&th, NULL, race_dereg, &r));
	end = nt_now_ns() + 5000000000ull;
	while (nt_now_ns() < end) {
		memset(&req, 0, sizeof(req));
		req.addr = (uintptr_t)r.buf;
		req.length = PAGE;
		if (nt_ioctl(self->fd, NICOFF_IOC_REG_MR, &req))
			continue;
		r.regs++;
		if (req.handle > hmax && req.handle <= 0xfffff)
			hmax = req.handle;
		if (!req.handle || req.handle > 0xfffff || (req.rkey & 0xfffff) != req.handle) {
			r.bad++;
			r.bad_handle = req.handle;
			r.bad_rkey = req.rkey;
		}
	}
	r.stop = 1;
	pthread_join(th, NULL);
	/* What the race left registered (handles above 3 when 1-3 were busy). */
	for (h = 1; h <= hmax; h++)
		if (!nt_dereg_mr(self->fd, h))
			r.deregs++;
	TH_LOG("%lu registrations, %lu deregistrations", r.regs, r.deregs);
	EXPECT_EQ(0, r.bad) TH_LOG("REG_MR answered handle %#x rkey %#x", r.bad_handle,
				    r.bad_rkey);
	EXPECT_LT(100, r.deregs);
	EXPECT_EQ(r.regs, r.deregs);
	EXPECT_EQ(self->pinned0, nt_pinned_pages());
	/* A store into a freed region shows as slub_debug's poison report. */
	close(self->fd);
	self->fd = -1;
	NT_KMSG_CHECK(kmsg);
	munmap(r.buf, PAGE);
}

/*
 * A REG_MR whose answer cannot be written (EFAULT) racing DEREG_MR of the
 * handles it takes, from another thread.  The caller never learns of that
 * region, so nobody may: no DEREG_MR ever finds it (had one, the failed
 * call's undoing could remove another region registered meanwhile with
 * the same handle), and nothing stays pinned.
 */
TEST_F_TIMEOUT(card, reg_mr_unwritable_answer_race, 120)
{
	struct race r = { .fd = self->fd };
	struct nicoff_reg_mr req = {};
	unsigned long efault = 0, other = 0;
	pthread_t th;
	uint64_t end;
	void *ro;
	int ret;

	r.buf = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r.buf);
	memset(r.buf, 1, PAGE);
	req.addr = (uintptr_t)r.buf;
	req.length = PAGE;
	ro = readonly_copy(&req, sizeof(req));
	ASSERT_NE(NULL, ro);
	ASSERT_EQ(0, nt_port_open_fd(self->fd, NICOFF_PORT_ANY, 8, 8, NULL));
	ASSERT_EQ(0, pthread_create(&th, NULL, race_dereg, &r));
	end = nt_now_ns() + 3000000000ull;
	while (nt_now_ns() < end) {
		ret = nt_ioctl(self->fd, NICOFF_IOC_REG_MR, ro);
		if (ret == -EFAULT)
			efault++;
		else
			other++;
	}
	r.stop = 1;
	pthread_join(th, NULL);
	TH_LOG("%lu failed registrations, %lu deregistrations", efault, r.deregs);
	EXPECT_EQ(0, other);
	EXPECT_LT(100, efault);
	EXPECT_EQ(0, r.deregs);
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 5000));
	munmap(ro, PAGE);
	munmap(r.buf, PAGE);
}

TEST_HARNESS_MAIN
