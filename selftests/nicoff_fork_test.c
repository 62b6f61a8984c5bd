// SPDX-License-Identifier: GPL-2.0
/*
 * fork() of a process with a port (Documentation/abi.md, "fork()"): the
 * child has no ring mappings (and cannot get any: neither MADV_DOFORK nor
 * a fresh mmap of the inherited file), may not register or deregister, and its
 * writes to its copy of registered memory are invisible to the card, which
 * keeps reading and writing the parent's pages.  The port lives until the
 * last process holding the file closes it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define PAGE 4096ul
#define LEN (4 * PAGE)
#define TMO 10000

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static bool all_bytes(const unsigned char *p, size_t len, unsigned char v)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* Is anything of /dev/nicoff mapped in this process? */
static bool maps_nicoff(void)
{
	char line[512];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return true;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/dev/nicoff"))
			found = true;
	fclose(f);
	return found;
}

static int wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

FIXTURE(fork) {
	struct nt_port p;
	unsigned char *src, *dst;
	uint32_t hs, hd;
	long long pinned0;
	int to_child[2], to_parent[2];
};

FIXTURE_SETUP(fork)
{
	self->pinned0 = nt_pinned_pages();
	ASSERT_LE(0, self->pinned0);
	ASSERT_EQ(0, nt_port_open(&self->p, 0, NICOFF_PORT_ANY, 16, 16));
	self->src = map_anon(LEN);
	self->dst = map_anon(LEN);
	ASSERT_NE(NULL, self->src);
	ASSERT_NE(NULL, self->dst);
	memset(self->src, 0xa1, LEN);
	memset(self->dst, 0x00, LEN);
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, self->src, LEN, 0, &self->hs));
	ASSERT_EQ(0, nt_reg_mr(self->p.fd, self->dst, LEN, NICOFF_ACCESS_LOCAL_WRITE, &self->hd));
	ASSERT_EQ(self->pinned0 + 8, nt_pinned_pages());
	ASSERT_EQ(0, pipe(self->to_child));
	ASSERT_EQ(0, pipe(self->to_parent));
}

FIXTURE_TEARDOWN(fork)
{
	nt_port_close(&self->p);
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 2000));
}

static void sync_send(int fd)
{
	char c = 1;

	if (write(fd, &c, 1) != 1)
		_exit(90);
}

static bool sync_recv(int fd)
{
	char c;

	return read(fd, &c, 1) == 1;
}

/* The child's side of fork_semantics. */
static int child_side(FIXTURE_DATA(fork) *self)
{
	static char own[PAGE] __attribute__((aligned(4096)));
	unsigned char vec[8];

	/* The rings are not mapped in the child. */
	NT_CK(!maps_nicoff());
	NT_CK(mincore(self->p.cmd_hdr, self->p.po.cmd_size, vec) == -1 && errno == ENOMEM);
	NT_CK(mincore(self->p.cq_hdr, self->p.po.cq_size, vec) == -1 && errno == ENOMEM);
	NT_CK(msync(self->p.cmd_hdr, PAGE, MS_ASYNC) == -1 && errno == ENOMEM);
	/* Registration belongs to the process that opened the port. */
	NT_CK(nt_reg_mr(self->p.fd, own, sizeof(own), 0, NULL) == -EPERM);
	NT_CK(nt_reg_mr(self->p.fd, self->src, LEN, 0, NULL) == -EPERM);
	NT_CK(nt_reg_mr(self->p.fd, self->dst, PAGE, NICOFF_ACCESS_LOCAL_WRITE, NULL) == -EPERM);
	NT_CK(nt_dereg_mr(self->p.fd, self->hs) == -EPERM);
	NT_CK(nt_dereg_mr(self->p.fd, self->hd) == -EPERM);
	/* The parent's regions are still registered. */
	NT_CK(nt_pinned_pages() == self->pinned0 + 8);
	/* Scribble on our copies. */
	NT_CK(all_bytes(self->src, LEN, 0xa1));
	memset(self->src, 0xcc, LEN);
	memset(self->dst, 0xdd, LEN);
	sync_send(self->to_parent[1]);
	/* The parent's COPY went to the parent's pages, not to ours. */
	NT_CK(sync_recv(self->to_child[0]));
	NT_CK(all_bytes(self->dst, LEN, 0xdd));
	NT_CK(all_bytes(self->src, LEN, 0xcc));
	return 0;
}

TEST_F(fork, fork_semantics)
{
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(child_side(self));

	ASSERT_TRUE(sync_recv(self->to_parent[0]));
	/* The parent writes its source after the fork: the card sees that. */
	memset(self->src, 0x5e, PAGE);
	nicoff_prep_copy(&c, self->hs, 0, self->hd, 0, LEN, 1);
	ASSERT_EQ(0, nt_run_one(&self->p, &c, &cqe, TMO));
	EXPECT_EQ(0, cqe.status);
	EXPECT_EQ(LEN, cqe.result);
	EXPECT_TRUE(all_bytes(self->dst, PAGE, 0x5e));
	EXPECT_TRUE(all_bytes(self->dst + PAGE, LEN - PAGE, 0xa1))
		TH_LOG("the card read the child's copy (%#x)", self->dst[PAGE]);
	sync_send(self->to_child[1]);
	EXPECT_EQ(0, wait_child(pid));
	/* And after the child is gone, too. */
	memset(self->src, 0x77, LEN);
	c.tag = 2;
	ASSERT_EQ(0, nt_run_one(&self->p, &c, &cqe, TMO));
	EXPECT_EQ(0, cqe.status);
	EXPECT_TRUE(all_bytes(self->dst, LEN, 0x77));
	EXPECT_EQ(self->pinned0 + 8, nt_pinned_pages());
}

/* The child's writes never reach the card, even racing the parent's COPYs. */
TEST_F(fork, child_writes_invisible)
{
	struct nicoff_cmd c;
	struct nicoff_cqe cqe;
	unsigned int i;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		uint64_t end = nt_now_ns() + 300000000ull;

		sync_send(self->to_parent[1]);
		while (nt_now_ns() < end) {
			memset(self->src, 0xcc, LEN);
			memset(self->dst, 0xdd, LEN);
		}
		_exit(0);
	}
	ASSERT_TRUE(sync_recv(self->to_parent[0]));
	for (i = 0; i < 50; i++) {
		memset(self->src, i, LEN);
		nicoff_prep_copy(&c, self->hs, 0, self->hd, 0, LEN, i);
		ASSERT_EQ(0, nt_run_one(&self->p, &c, &cqe, TMO));
		ASSERT_EQ(0, cqe.status);
		ASSERT_TRUE(all_bytes(self->dst, LEN, i)) TH_LOG("round %u: %#x", i, self->dst[0]);
	}
	EXPECT_EQ(0, wait_child(pid));
}

/* A thread of the opening process is the same process: allowed. */
struct reg_arg {
	int fd;
	void *buf;
	int ret;
	uint32_t h;
};

static void *reg_in_thread(void *arg)
{
	struct reg_arg *a = arg;

	a->ret = nt_reg_mr(a->fd, a->buf, PAGE, 0, &a->h);
	if (!a->ret)
		a->ret = nt_dereg_mr(a->fd, a->h);
	return NULL;
}

TEST_F(fork, thread_may_register)
{
	struct reg_arg a = { .fd = self->p.fd, .buf = self->src };
	pthread_t th;

	ASSERT_EQ(0, pthread_create(&th, NULL, reg_in_thread, &a));
	pthread_join(th, NULL);
	EXPECT_EQ(0, a.ret);
}

/* The port lives until the last process holding the file closes it. */
TEST_F(fork, port_outlives_parent_close)
{
	uint32_t port = self->p.po.port;
	pid_t pid;
	int fd2;

	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Hold the inherited file until told to go. */
		close(self->to_child[1]);
		sync_send(self->to_parent[1]);
		sync_recv(self->to_child[0]);
		_exit(0);
	}
	close(self->to_child[0]);
	ASSERT_TRUE(sync_recv(self->to_parent[0]));
	nt_port_close(&self->p);
	/* The child still holds it: regions pinned, port number taken. */
	nt_sleep_ms(50);
	EXPECT_EQ(self->pinned0 + 8, nt_pinned_pages());
	fd2 = nt_open_card(0);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-EADDRINUSE, nt_port_open_fd(fd2, port, 2, 2, NULL));
	sync_send(self->to_child[1]);
	EXPECT_EQ(0, wait_child(pid));
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 5000));
	EXPECT_EQ(0, nt_port_open_fd(fd2, port, 2, 2, NULL));
	close(fd2);
}

/*
 * The rings stay the opener's: madvise(MADV_DOFORK) may not make a child
 * inherit them, and a child may not map them afresh through the file.
 */
/* The child's side of rings_stay_with_opener. */
static int rings_child(FIXTURE_DATA(fork) *self)
{
	void *m;

	NT_CK(!maps_nicoff());
	m = mmap(NULL, self->p.po.cmd_size, PROT_READ | PROT_WRITE, MAP_SHARED, self->p.fd,
		 self->p.po.cmd_offset);
	NT_CK(m == MAP_FAILED && errno == EPERM);
	m = mmap(NULL, self->p.po.cq_size, PROT_READ, MAP_SHARED, self->p.fd,
		 self->p.po.cq_offset);
	NT_CK(m == MAP_FAILED && errno == EPERM);
	return 0;
}

TEST_F(fork, rings_stay_with_opener)
{
	void *m;
	pid_t pid;

	EXPECT_EQ(-1, madvise(self->p.cmd_hdr, self->p.po.cmd_size, MADV_DOFORK));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, madvise(self->p.cq_hdr, self->p.po.cq_size, MADV_DOFORK));
	EXPECT_EQ(EINVAL, errno);
	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(rings_child(self));
	EXPECT_EQ(0, wait_child(pid));
	/* The opener itself may map them again. */
	m = mmap(NULL, self->p.po.cmd_size, PROT_READ | PROT_WRITE, MAP_SHARED, self->p.fd,
		 self->p.po.cmd_offset);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, munmap(m, self->p.po.cmd_size));
}

TEST_HARNESS_MAIN
