// SPDX-License-Identifier: GPL-2.0
/*
 * Pinned memory is charged to the process against RLIMIT_MEMLOCK unless it
 * has CAP_IPC_LOCK (Documentation/abi.md, "Pinning and accounting").  Each
 * scenario runs in a child that gives up its privilege after opening the
 * port; the parent checks that everything is unpinned when the child ends.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define PAGE 4096ul
#define LIMIT_PAGES 16

/* Remove CAP_IPC_LOCK from every set of this process. */
static int drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	unsigned int w = CAP_IPC_LOCK / 32, bit = 1u << (CAP_IPC_LOCK % 32);

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[w].effective &= ~bit;
	d[w].permitted &= ~bit;
	d[w].inheritable &= ~bit;
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

static int set_memlock(unsigned long bytes)
{
	struct rlimit rl = { .rlim_cur = bytes, .rlim_max = bytes };

	return setrlimit(RLIMIT_MEMLOCK, &rl) ? -errno : 0;
}

/* VmPin of /proc/self/status in pages (mm->pinned_vm), or -1. */
static long vm_pin_pages(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb / 4;
}

/* mlock() beyond the limit fails: the privilege is really gone. */
static bool unprivileged(char *buf, size_t len)
{
	bool r = mlock(buf, len) != 0 && errno == ENOMEM;

	munlock(buf, len);
	return r;
}

/* Pinned pages before the test: what each child adds to. */
static long long pinned0;

/*
 * A child's start: @pages of populated memory in *buf, a port on card 0 in
 * *fd, then a memlock limit of @limit bytes.  0, or 1 with the failed
 * check reported.
 */
static int limited_port(char **buf, size_t pages, size_t limit, int *fd)
{
	*buf = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	NT_CK(*buf != MAP_FAILED);
	*fd = nt_open_card(0);
	NT_CK(*fd >= 0);
	NT_CK(nt_port_open_fd(*fd, NICOFF_PORT_ANY, 8, 8, NULL) == 0);
	NT_CK(set_memlock(limit) == 0);
	return 0;
}

/* Limit of 16 pages, CAP_IPC_LOCK dropped with capset(). */
static int child_capset(void)
{
	char *buf;
	uint32_t h1, h2, h3, h4;
	int fd;

	NT_CK(limited_port(&buf, 64, LIMIT_PAGES * PAGE, &fd) == 0);
	NT_CK(drop_ipc_lock() == 0);
	NT_CK(unprivileged(buf, 32 * PAGE));
	NT_CK(vm_pin_pages() == 0);

	NT_CK(nt_reg_mr(fd, buf, 8 * PAGE, NICOFF_ACCESS_LOCAL_WRITE, &h1) == 0);
	NT_CK(nt_pinned_pages() == pinned0 + 8);
	NT_CK(vm_pin_pages() == 8);
	NT_CK(nt_reg_mr(fd, buf + 8 * PAGE, 8 * PAGE, 0, &h2) == 0);	/* exactly the limit */
	NT_CK(vm_pin_pages() == 16);
	NT_CK(nt_reg_mr(fd, buf + 16 * PAGE, PAGE, 0, NULL) == -ENOMEM);
	NT_CK(nt_reg_mr(fd, buf, 1, NICOFF_ACCESS_ALL, NULL) == -ENOMEM);
	NT_CK(nt_pinned_pages() == pinned0 + 16);
	NT_CK(vm_pin_pages() == 16);

	NT_CK(nt_dereg_mr(fd, h1) == 0);
	NT_CK(vm_pin_pages() == 8);
	NT_CK(nt_reg_mr(fd, buf, 9 * PAGE, 0, NULL) == -ENOMEM);
	NT_CK(nt_reg_mr(fd, buf, 7 * PAGE, 0, &h3) == 0);		/* 15 pages */
	/* Two bytes across a page boundary are two pages: 17 > 16. */
	NT_CK(nt_reg_mr(fd, buf + PAGE - 1, 2, 0, NULL) == -ENOMEM);
	NT_CK(nt_reg_mr(fd, buf + PAGE - 2, 2, 0, &h4) == 0);	/* one page: 16 */
	NT_CK(nt_reg_mr(fd, buf, 1, 0, NULL) == -ENOMEM);
	NT_CK(nt_pinned_pages() == pinned0 + 16);

	/* A single region larger than the limit. */
	NT_CK(nt_dereg_mr(fd, h2) == 0);
	NT_CK(nt_dereg_mr(fd, h3) == 0);
	NT_CK(nt_dereg_mr(fd, h4) == 0);
	NT_CK(vm_pin_pages() == 0);
	NT_CK(nt_reg_mr(fd, buf, (LIMIT_PAGES + 1) * PAGE, 0, NULL) == -ENOMEM);
	NT_CK(nt_reg_mr(fd, buf + 1, LIMIT_PAGES * PAGE, 0, NULL) == -ENOMEM);
	NT_CK(nt_reg_mr(fd, buf, LIMIT_PAGES * PAGE, 0, NULL) == 0);
	NT_CK(nt_pinned_pages() == pinned0 + 16);
	/* Exit with the region registered: the port's release unpins it. */
	return 0;
}

/* Same limit, privilege lost by becoming an unprivileged user. */
static int child_setuid(void)
{
	char *buf;
	int fd;

	NT_CK(limited_port(&buf, 64, LIMIT_PAGES * PAGE, &fd) == 0);
	NT_CK(setresgid(65534, 65534, 65534) == 0);
	NT_CK(setresuid(65534, 65534, 65534) == 0);
	NT_CK(unprivileged(buf, 32 * PAGE));
	NT_CK(nt_reg_mr(fd, buf, 32 * PAGE, 0, NULL) == -ENOMEM);
	NT_CK(nt_reg_mr(fd, buf, 12 * PAGE, NICOFF_ACCESS_LOCAL_WRITE, NULL) == 0);
	NT_CK(nt_reg_mr(fd, buf, 4 * PAGE, 0, NULL) == 0);
	NT_CK(nt_reg_mr(fd, buf + 20 * PAGE, 1, 0, NULL) == -ENOMEM);
	NT_CK(nt_pinned_pages() == pinned0 + 16);
	return 0;
}

/* With CAP_IPC_LOCK the limit does not apply. */
static int child_privileged(void)
{
	char *buf;
	int fd;

	NT_CK(limited_port(&buf, 64, LIMIT_PAGES * PAGE, &fd) == 0);
	NT_CK(nt_reg_mr(fd, buf, 64 * PAGE, NICOFF_ACCESS_LOCAL_WRITE, NULL) == 0);
	NT_CK(nt_reg_mr(fd, buf, 64 * PAGE, 0, NULL) == 0);
	NT_CK(nt_pinned_pages() == pinned0 + 128);
	NT_CK(vm_pin_pages() == 128);
	return 0;
}

/* The charge is per process: two ports share one limit. */
static int child_two_ports(void)
{
	char *buf = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	uint32_t h;
	int fd1, fd2;

	NT_CK(buf != MAP_FAILED);
	fd1 = nt_open_card(0);
	fd2 = nt_open_card(0);	/* same card, another port */
	NT_CK(fd1 >= 0 && fd2 >= 0);
	NT_CK(nt_port_open_fd(fd1, NICOFF_PORT_ANY, 8, 8, NULL) == 0);
	NT_CK(nt_port_open_fd(fd2, NICOFF_PORT_ANY, 8, 8, NULL) == 0);
	NT_CK(set_memlock(LIMIT_PAGES * PAGE) == 0);
	NT_CK(drop_ipc_lock() == 0);
	NT_CK(nt_reg_mr(fd1, buf, 10 * PAGE, 0, NULL) == 0);
	NT_CK(nt_reg_mr(fd2, buf, 7 * PAGE, 0, NULL) == -ENOMEM);
	NT_CK(nt_reg_mr(fd2, buf, 6 * PAGE, 0, &h) == 0);
	NT_CK(vm_pin_pages() == 16);
	/* Closing one port gives its share back. */
	close(fd1);
	NT_CK(nt_wait_pinned(pinned0 + 6, 2000) == pinned0 + 6);
	NT_CK(vm_pin_pages() == 6);
	NT_CK(nt_reg_mr(fd2, buf, 10 * PAGE, 0, NULL) == 0);
	NT_CK(nt_reg_mr(fd2, buf, 1, 0, NULL) == -ENOMEM);
	NT_CK(nt_dereg_mr(fd2, h) == 0);
	NT_CK(nt_reg_mr(fd2, buf, 1, 0, NULL) == 0);
	return 0;
}

/* A zero limit: nothing can be registered. */
static int child_zero_limit(void)
{
	char *buf;
	int fd;

	NT_CK(limited_port(&buf, 1, 0, &fd) == 0);
	NT_CK(drop_ipc_lock() == 0);
	NT_CK(nt_reg_mr(fd, buf, 1, 0, NULL) == -ENOMEM);
	NT_CK(nt_pinned_pages() == pinned0);
	return 0;
}

FIXTURE(memlock) {
	long long pinned0;
};

FIXTURE_SETUP(memlock)
{
	self->pinned0 = nt_pinned_pages();
	ASSERT_LE(0, self->pinned0);
}

FIXTURE_TEARDOWN(memlock)
{
}

#define RUN_CHILD(fn) do { \
	pinned0 = self->pinned0; \
	EXPECT_EQ(0, nt_run_child(fn)); \
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 5000)); \
} while (0)

TEST_F(memlock, capset_dropped)
{
	RUN_CHILD(child_capset);
}

TEST_F(memlock, setresuid_unprivileged)
{
	RUN_CHILD(child_setuid);
}

TEST_F(memlock, cap_ipc_lock_exempt)
{
	RUN_CHILD(child_privileged);
}

TEST_F(memlock, per_process_charge)
{
	RUN_CHILD(child_two_ports);
}

TEST_F(memlock, zero_limit)
{
	RUN_CHILD(child_zero_limit);
}

TEST_HARNESS_MAIN
