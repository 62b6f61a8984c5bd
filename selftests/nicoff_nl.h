/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The selftests' one generic netlink client of the "nicoff" family, raw
 * (no libnl): messages are built attribute by attribute, so that the fuzz
 * test can send whatever it likes, and the other tests read a card's
 * counters and set its faults with the helpers at the end.
 *
 * Functions return 0 or a negative errno unless said otherwise.
 */
#ifndef NICOFF_SELFTEST_NL_H
#define NICOFF_SELFTEST_NL_H

#include <stddef.h>
#include <stdint.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <uapi/nicoff.h>

/* Room for the largest reply: a dump of every card's counters. */
#define NT_NL_BUF	32768
/* What nt_nl_xact() returns when the answer was lost (ENOBUFS) or late. */
#define NT_NL_LOST	1

/* A request being built: a netlink and a generic netlink header, attributes. */
struct nt_nlmsg {
	uint8_t b[1024] __attribute__((aligned(4)));
	size_t len;
};

void nt_nl_start(struct nt_nlmsg *m, uint16_t type, uint16_t flags, uint8_t cmd,
		 uint8_t version, uint32_t seq);
/* Append an attribute (len bytes of data); returns it, or NULL if no room. */
struct nlattr *nt_nl_put(struct nt_nlmsg *m, uint16_t type, const void *data, size_t len);
void nt_nl_put_u32(struct nt_nlmsg *m, uint16_t type, uint32_t v);
/* Close a nest opened with nt_nl_put(m, type | NLA_F_NESTED, NULL, 0). */
void nt_nl_nest_end(struct nt_nlmsg *m, struct nlattr *nest);

typedef void (*nt_nl_cb)(void *ctx, const struct nlmsghdr *h);
/*
 * Send m, read what answers it (by its sequence number): data messages go
 * to cb, up to the ack, error or NLMSG_DONE.  Returns that error (0 or
 * -errno) or NT_NL_LOST.
 */
int nt_nl_xact(int fd, struct nt_nlmsg *m, nt_nl_cb cb, void *ctx);
/* Throw away whatever is queued on the socket. */
void nt_nl_drain(int fd);
/* The attributes of a generic netlink message, and their bytes in *len. */
const struct nlattr *nt_nl_attrs(const struct nlmsghdr *h, int *len);

#define nt_nla_for_each(a, start, len, rem) \
	for (a = (start), rem = (len); rem >= (int)NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && \
	     a->nla_len <= rem; rem -= NLA_ALIGN(a->nla_len), \
	     a = (const struct nlattr *)((const uint8_t *)a + NLA_ALIGN(a->nla_len)))

static inline const void *nt_nla_data(const struct nlattr *a)
{
	return (const uint8_t *)a + NLA_HDRLEN;
}

/*
 * A socket for the nicoff family (replies time out after 5 s): returns
 * it, its family id in *family, or -errno.  *seq counts the requests.
 */
int nt_nl_open(uint16_t *family, uint32_t *seq);

/* An open socket with its family and sequence, for the helpers below. */
struct nt_nl {
	int fd;
	uint16_t family;
	uint32_t seq;
};

int nt_nl_connect(struct nt_nl *nl);
void nt_nl_close(struct nt_nl *nl);	/* no-op once closed (fd -1) */

/* A card's counters (one snapshot, taken under the card's lock). */
struct nt_card_stats {
	uint64_t v[NICOFF_NL_STAT_MAX + 1];
	unsigned int seen[NICOFF_NL_STAT_MAX + 1];	/* times each counter came */
	unsigned int unknown;	/* counters beyond NICOFF_NL_STAT_MAX */
	int global;		/* the card follows the global faults */
	int bcast_hw;		/* the card's bcast_hw setting, -1 if not reported */
};

/* GET_CARD of one card; -ETIMEDOUT if no answer came. */
int nt_nl_card(struct nt_nl *nl, uint32_t card, struct nt_card_stats *st);
/* The card drops its own fault settings and follows the global ones. */
int nt_nl_card_follow_global(struct nt_nl *nl, uint32_t card);
/* The card's own drop rate (it stops following the global faults). */
int nt_nl_card_set_drop(struct nt_nl *nl, uint32_t card, uint32_t drop_ppm);

/* SET_CARD: the card's bcast_hw (0 or 1; other values must be refused). */
int nt_nl_card_set_bcast_hw(struct nt_nl *nl, uint32_t card, uint32_t on);

/* One-shot: a card's counters through a socket of its own. */
int nt_card_stats(uint32_t card, struct nt_card_stats *st);
/* One counter (NICOFF_NL_STAT_*) of a card, ~0 if it cannot be read. */
uint64_t nt_card_stat(uint32_t card, int stat);

#endif
