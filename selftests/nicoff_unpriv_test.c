// SPDX-License-Identifier: GPL-2.0
/*
 * Use by an unprivileged user, as installed (Documentation/install.md):
 * the device nodes are root:nicoff 0660 (udev rule, sysusers.d group), so a
 * process of another uid opens a port only with the nicoff group, and what
 * it pins is held to its RLIMIT_MEMLOCK.  The test sets the node's owner and
 * mode as the udev rule would, with a group id of its own, and restores them.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define PAGE 4096ul
#define NODE "/dev/nicoff0"
#define NICOFF_GID 4242
#define USER_ID 65534
#define MEMLOCK_PAGES 16

/* Become an ordinary user (uid 65534) with these supplementary groups. */
static int become_user(const gid_t *groups, size_t n)
{
	struct rlimit rl = { MEMLOCK_PAGES * PAGE, MEMLOCK_PAGES * PAGE };

	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgroups(n, groups) || setgid(USER_ID) ||
	    setuid(USER_ID))
		return -errno;
	return 0;
}

/* A member of the group: opens a port, pins up to its limit and no further. */
static int member(void)
{
	static const gid_t groups[] = { NICOFF_GID };
	size_t len = MEMLOCK_PAGES * PAGE;
	char *buf;
	uint32_t h;
	int fd;

	NT_CK(become_user(groups, 1) == 0);
	NT_CK(getuid() == USER_ID);
	fd = open(NODE, O_RDWR);
	NT_CK(fd >= 0);
	NT_CK(nt_port_open_fd(fd, NICOFF_PORT_ANY, 8, 8, NULL) == 0);
	buf = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	NT_CK(buf != MAP_FAILED);
	memset(buf, 1, 2 * len);
	NT_CK(nt_reg_mr(fd, buf, len, NICOFF_ACCESS_LOCAL_WRITE, &h) == 0);
	NT_CK(nt_reg_mr(fd, buf + len, PAGE, 0, NULL) == -ENOMEM);
	NT_CK(nt_dereg_mr(fd, h) == 0);
	NT_CK(nt_reg_mr(fd, buf + len, len, 0, &h) == 0);
	close(fd);
	return 0;
}

/* Not a member: the node refuses it. */
static int stranger(void)
{
	NT_CK(become_user(NULL, 0) == 0);
	NT_CK(open(NODE, O_RDWR) == -1 && errno == EACCES);
	NT_CK(open(NODE, O_RDONLY) == -1 && errno == EACCES);
	return 0;
}

FIXTURE(unpriv) {
	struct stat st;
	long long pinned0;
};

FIXTURE_SETUP(unpriv)
{
	ASSERT_EQ(0, stat(NODE, &self->st));
	self->pinned0 = nt_pinned_pages();
	ASSERT_LE(0, self->pinned0);
	/* What packaging/60-nicoff.rules does with the group of sysusers.d. */
	ASSERT_EQ(0, chown(NODE, 0, NICOFF_GID));
	ASSERT_EQ(0, chmod(NODE, 0660));
}

FIXTURE_TEARDOWN(unpriv)
{
	EXPECT_EQ(0, chown(NODE, self->st.st_uid, self->st.st_gid));
	EXPECT_EQ(0, chmod(NODE, self->st.st_mode & 07777));
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 2000));
}

TEST_F(unpriv, group_member_opens_within_memlock)
{
	EXPECT_EQ(0, nt_run_child(member));
}

TEST_F(unpriv, others_refused)
{
	EXPECT_EQ(0, nt_run_child(stranger));
}

TEST_HARNESS_MAIN
