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

/* ------------------------------------------------------------ netlink -- */

struct at_nl_msg {
	struct nlmsghdr n;
	struct genlmsghdr g;
	char attrs[256];
};

static inline void at_nl_init(struct at_nl_msg *m, uint16_t type, uint8_t cmd, uint8_t version)
{
	memset(m, 0, sizeof(*m));
	m->n.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m->n.nlmsg_type = type;
	m->g.cmd = cmd;
	m->g.version = version;
}

static inline void at_nl_put(struct at_nl_msg *m, uint16_t type, const void *data, size_t len)
{
	struct nlattr *a = (struct nlattr *)((char *)m + NLMSG_ALIGN(m->n.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy((char *)a + NLA_HDRLEN, data, len);
	m->n.nlmsg_len = NLMSG_ALIGN(m->n.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

/* Send @m, copy the attributes of the data reply to @out; 0 or -errno. */
static inline int at_nl_xact(int fd, struct at_nl_msg *m, char *out, size_t *outlen)
{
	static char buf[16384];
	size_t cap = *outlen;

	m->n.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	m->n.nlmsg_seq++;
	*outlen = 0;
	if (send(fd, m, m->n.nlmsg_len, 0) != (ssize_t)m->n.nlmsg_len)
		return -errno;
	for (;;) {
		ssize_t got = recv(fd, buf, sizeof(buf), 0);
		int len = (int)got;
		struct nlmsghdr *h;

		if (got < 0)
			return -errno;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_len >= NLMSG_LENGTH(GENL_HDRLEN)) {
				size_t n = h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);

				n = n < cap ? n : cap;
				memcpy(out, (char *)NLMSG_DATA(h) + GENL_HDRLEN, n);
				*outlen = n;
			}
		}
	}
}

#define at_for_each_nla(a, start, len)                                                  \
	for (a = (struct nlattr *)(start);                                              \
	     (char *)(a) + NLA_HDRLEN <= (char *)(start) + (len) &&                     \
	     (a)->nla_len >= NLA_HDRLEN &&                                              \
	     (char *)(a) + (a)->nla_len <= (char *)(start) + (len);                     \
	     a = (struct nlattr *)((char *)(a) + NLA_ALIGN((a)->nla_len)))

/* A card's counters (NICOFF_NL_STAT_*), one snapshot; 0 or -errno. */
static inline int at_card_stats(uint32_t card, uint64_t st[NICOFF_NL_STAT_MAX + 1])
{
	struct timeval tv = { .tv_sec = 5 };
	static char attrs[8192];
	struct nlattr *a, *b;
	struct at_nl_msg m;
	int fd, family = -1, ret;
	size_t len = sizeof(attrs);

	memset(st, 0, sizeof(uint64_t) * (NICOFF_NL_STAT_MAX + 1));
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	at_nl_init(&m, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
	at_nl_put(&m, CTRL_ATTR_FAMILY_NAME, NICOFF_GENL_NAME, sizeof(NICOFF_GENL_NAME));
	ret = at_nl_xact(fd, &m, attrs, &len);
	if (!ret) {
		at_for_each_nla(a, attrs, len)
			if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID)
				family = *(uint16_t *)((char *)a + NLA_HDRLEN);
		ret = family < 0 ? -ENOENT : 0;
	}
	if (!ret) {
		len = sizeof(attrs);
		at_nl_init(&m, family, NICOFF_NL_CMD_GET_CARD, NICOFF_GENL_VERSION);
		at_nl_put(&m, NICOFF_NL_A_CARD, &card, sizeof(card));
		ret = at_nl_xact(fd, &m, attrs, &len);
	}
	close(fd);
	if (ret)
		return ret;
	at_for_each_nla(a, attrs, len) {
		char *in = (char *)a + NLA_HDRLEN;

		if ((a->nla_type & NLA_TYPE_MASK) != NICOFF_NL_A_STATS)
			continue;
		at_for_each_nla(b, in, a->nla_len - NLA_HDRLEN) {
			int t = b->nla_type & NLA_TYPE_MASK;

			if (t > NICOFF_NL_STAT_PAD && t <= NICOFF_NL_STAT_MAX &&
			    b->nla_len >= NLA_HDRLEN + 8)
				memcpy(&st[t], (char *)b + NLA_HDRLEN, 8);
		}
	}
	return 0;
}

static inline uint64_t at_stat(uint32_t card, int stat)
{
	uint64_t st[NICOFF_NL_STAT_MAX + 1];

	return at_card_stats(card, st) ? ~0ull : st[stat];
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
