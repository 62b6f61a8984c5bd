/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the remote-atomic selftests (nicoff_atomic_test.c,
 * nicoff_lock_test.c): cards' counters over the "nicoff" generic netlink
 * family (raw netlink, no libnl), the global fault tunables, forked
 * workers, and atomic commands.  Everything is static inline, so a test
 * that does not use a helper does not warn about it.
 */
#ifndef NICOFF_ATOMIC_UTIL_H
#define NICOFF_ATOMIC_UTIL_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "nicoff_nl.h"
#include "nicoff_util.h"

/* The fault mix of the issue: 10% drop, 5% duplicate, 5% reorder. */
#define AT_DROP_PPM	100000
#define AT_DUP_PPM	50000
#define AT_REORDER_PPM	50000
#define AT_DELAY_US	200

static const char *const at_fault_params[] = {
	"fault_drop_ppm", "fault_dup_ppm", "fault_corrupt_ppm", "fault_reorder_ppm",
	"fault_delay_ppm",
};

static inline int at_faults_set(unsigned long drop, unsigned long dup, unsigned long reorder)
{
	int ret = 0;

	ret |= nt_param_set("fault_delay_usecs", AT_DELAY_US);
	ret |= nt_param_set("fault_drop_ppm", drop);
	ret |= nt_param_set("fault_dup_ppm", dup);
	ret |= nt_param_set("fault_corrupt_ppm", 0);
	ret |= nt_param_set("fault_reorder_ppm", reorder);
	ret |= nt_param_set("fault_delay_ppm", 0);
	return ret;
}

static inline int at_faults_clear(void)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < sizeof(at_fault_params) / sizeof(at_fault_params[0]); i++)
		ret |= nt_param_set(at_fault_params[i], 0);
	return ret;
}

/* ------------------------------------------------------------ workers -- */

/* Run fn(arg, i) in a child; its exit status is fn's result (0: pass). */
static inline pid_t at_spawn(int (*fn)(void *, int), void *arg, int i)
{
	pid_t pid = fork();

	if (pid == 0) {
		alarm(300);
		_exit(fn(arg, i));
	}
	return pid;
}

/* Wait for a child; its exit code, or 128 + signal. */
static inline int at_reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -errno;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

/* --------------------------------------------------------------- atomics -- */

/*
 * Run cmds[0..n) with at most @depth in flight; the completion of the
 * command tagged i goes to out[i] (tags must be 0..n-1) and, if t_inv /
 * t_resp are set, the times it was posted and seen.  0 or -errno.
 */
static inline int at_pipeline(struct nt_port *p, const struct nicoff_cmd *cmds, uint32_t n,
			      uint32_t depth, struct nicoff_cqe *out, uint64_t *t_inv,
			      uint64_t *t_resp, int timeout_ms)
{
	uint32_t posted = 0, done = 0;
	uint64_t last = nt_now_ns();

	while (done < n) {
		struct nicoff_cqe q[64];
		int got, i;

		while (posted < n && posted - done < depth && nt_cmd_space(p)) {
			if (t_inv)
				t_inv[cmds[posted].tag] = nt_now_ns();
			nt_cmd_write(p, &cmds[posted++]);
			nt_publish(p);
			if (nt_doorbell(p) < 0)
				return -EIO;
		}
		got = nt_reap(p, q, 64);
		if (got < 0)
			return got;
		for (i = 0; i < got; i++) {
			if (q[i].tag >= n)
				return -EPROTO;
			out[q[i].tag] = q[i];
			if (t_resp)
				t_resp[q[i].tag] = nt_now_ns();
		}
		done += got;
		if (got) {
			last = nt_now_ns();
		} else if (nt_now_ns() - last > (uint64_t)timeout_ms * 1000000ull) {
			return -ETIMEDOUT;
		} else if (nt_cq_flags(p) & NICOFF_RING_ERROR) {
			return -EIO;
		}
	}
	return 0;
}

#endif
