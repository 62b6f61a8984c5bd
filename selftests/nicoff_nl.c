// SPDX-License-Identifier: GPL-2.0
/* The selftests' generic netlink client; see nicoff_nl.h. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "nicoff_nl.h"

void nt_nl_start(struct nt_nlmsg *m, uint16_t type, uint16_t flags, uint8_t cmd,
		 uint8_t version, uint32_t seq)
{
	struct nlmsghdr *n = (struct nlmsghdr *)m->b;
	struct genlmsghdr *g = (struct genlmsghdr *)NLMSG_DATA(n);

	memset(m, 0, sizeof(*m));
	n->nlmsg_type = type;
	n->nlmsg_flags = flags;
	n->nlmsg_seq = seq;
	g->cmd = cmd;
	g->version = version;
	m->len = NLMSG_LENGTH(GENL_HDRLEN);
	n->nlmsg_len = m->len;
}

struct nlattr *nt_nl_put(struct nt_nlmsg *m, uint16_t type, const void *data, size_t len)
{
	struct nlattr *a = (struct nlattr *)(m->b + NLA_ALIGN(m->len));

	if (NLA_ALIGN(m->len) + NLA_HDRLEN + NLA_ALIGN(len) > sizeof(m->b))
		return NULL;
	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((uint8_t *)a + NLA_HDRLEN, data, len);
	m->len = NLA_ALIGN(m->len) + NLA_ALIGN(a->nla_len);
	((struct nlmsghdr *)m->b)->nlmsg_len = m->len;
	return a;
}

void nt_nl_put_u32(struct nt_nlmsg *m, uint16_t type, uint32_t v)
{
	nt_nl_put(m, type, &v, sizeof(v));
}

void nt_nl_nest_end(struct nt_nlmsg *m, struct nlattr *nest)
{
	if (nest)
		nest->nla_len = m->b + m->len - (uint8_t *)nest;
}

int nt_nl_xact(int fd, struct nt_nlmsg *m, nt_nl_cb cb, void *ctx)
{
	static uint8_t buf[NT_NL_BUF] __attribute__((aligned(8)));
	uint32_t seq = ((struct nlmsghdr *)m->b)->nlmsg_seq;

	if (send(fd, m->b, m->len, 0) != (ssize_t)m->len)
		return errno == ENOBUFS ? NT_NL_LOST : -errno;
	for (;;) {
		ssize_t got = recv(fd, buf, sizeof(buf), 0);
		int len = (int)got;
		struct nlmsghdr *h;

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return errno == ENOBUFS || errno == EAGAIN ? NT_NL_LOST : -errno;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != seq)
				continue;	/* an answer to an earlier request */
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			if (h->nlmsg_type == NLMSG_DONE)
				return *(int *)NLMSG_DATA(h);
			if (cb)
				cb(ctx, h);
		}
	}
}

void nt_nl_drain(int fd)
{
	static uint8_t buf[NT_NL_BUF];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0 || errno == ENOBUFS)
		;
}

const struct nlattr *nt_nl_attrs(const struct nlmsghdr *h, int *len)
{
	*len = (int)h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN);
	return (const struct nlattr *)((const uint8_t *)NLMSG_DATA(h) + GENL_HDRLEN);
}

static void nt_nl_family_cb(void *ctx, const struct nlmsghdr *h)
{
	const struct nlattr *a;
	int len, rem;

	nt_nla_for_each(a, nt_nl_attrs(h, &len), len, rem)
		if ((a->nla_type & NLA_TYPE_MASK) == CTRL_ATTR_FAMILY_ID)
			*(int *)ctx = *(const uint16_t *)nt_nla_data(a);
}

int nt_nl_open(uint16_t *family, uint32_t *seq)
{
	struct timeval tv = { .tv_sec = 5 };
	struct nt_nlmsg m;
	int fd, ret, fam = -1;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	nt_nl_start(&m, GENL_ID_CTRL, NLM_F_REQUEST | NLM_F_ACK, CTRL_CMD_GETFAMILY, 1, ++*seq);
	nt_nl_put(&m, CTRL_ATTR_FAMILY_NAME, NICOFF_GENL_NAME, sizeof(NICOFF_GENL_NAME));
	ret = nt_nl_xact(fd, &m, nt_nl_family_cb, &fam);
	if (ret == NT_NL_LOST)
		ret = -ETIMEDOUT;
	if (!ret && fam < 0)
		ret = -ENOENT;
	if (ret) {
		close(fd);
		return ret;
	}
	*family = fam;
	return fd;
}

int nt_nl_connect(struct nt_nl *nl)
{
	int fd;

	nl->seq = 0;
	fd = nt_nl_open(&nl->family, &nl->seq);
	nl->fd = fd < 0 ? -1 : fd;
	return fd < 0 ? fd : 0;
}

void nt_nl_close(struct nt_nl *nl)
{
	if (nl->fd >= 0)
		close(nl->fd);
	nl->fd = -1;
}

/* A request of the family, acknowledged: 0 or -errno. */
static int nt_nl_request(struct nt_nl *nl, struct nt_nlmsg *m, nt_nl_cb cb, void *ctx)
{
	int ret = nt_nl_xact(nl->fd, m, cb, ctx);

	return ret == NT_NL_LOST ? -ETIMEDOUT : ret;
}

static void nt_nl_card_cb(void *ctx, const struct nlmsghdr *h)
{
	struct nt_card_stats *st = ctx;
	const struct nlattr *a, *b;
	int len, rem, rem2;

	nt_nla_for_each(a, nt_nl_attrs(h, &len), len, rem) {
		int type = a->nla_type & NLA_TYPE_MASK;
		const struct nlattr *in = nt_nla_data(a);
		int inlen = a->nla_len - NLA_HDRLEN;

		if (type == NICOFF_NL_A_STATS) {
			nt_nla_for_each(b, in, inlen, rem2) {
				int t = b->nla_type & NLA_TYPE_MASK;

				if (t > NICOFF_NL_STAT_PAD && t <= NICOFF_NL_STAT_MAX &&
				    b->nla_len >= NLA_HDRLEN + 8) {
					memcpy(&st->v[t], nt_nla_data(b), 8);
					st->seen[t]++;
				} else if (t > NICOFF_NL_STAT_MAX) {
					st->unknown++;
				}
			}
		} else if (type == NICOFF_NL_A_BCAST_HW && a->nla_len >= NLA_HDRLEN + 4) {
			memcpy(&st->bcast_hw, in, 4);
		} else if (type == NICOFF_NL_A_FAULTS) {
			nt_nla_for_each(b, in, inlen, rem2) {
				if ((b->nla_type & NLA_TYPE_MASK) == NICOFF_NL_FAULT_GLOBAL)
					st->global = 1;
			}
		}
	}
}

int nt_nl_card(struct nt_nl *nl, uint32_t card, struct nt_card_stats *st)
{
	struct nt_nlmsg m;

	memset(st, 0, sizeof(*st));
	st->bcast_hw = -1;
	nt_nl_start(&m, nl->family, NLM_F_REQUEST | NLM_F_ACK, NICOFF_NL_CMD_GET_CARD,
		    NICOFF_GENL_VERSION, ++nl->seq);
	nt_nl_put_u32(&m, NICOFF_NL_A_CARD, card);
	return nt_nl_request(nl, &m, nt_nl_card_cb, st);
}

/* SET_FAULTS of one card with a nest holding one attribute. */
static int nt_nl_card_fault(struct nt_nl *nl, uint32_t card, uint16_t type, const void *data,
			    size_t len)
{
	struct nlattr *nest;
	struct nt_nlmsg m;

	nt_nl_start(&m, nl->family, NLM_F_REQUEST | NLM_F_ACK, NICOFF_NL_CMD_SET_FAULTS,
		    NICOFF_GENL_VERSION, ++nl->seq);
	nt_nl_put_u32(&m, NICOFF_NL_A_CARD, card);
	nest = nt_nl_put(&m, NICOFF_NL_A_FAULTS | NLA_F_NESTED, NULL, 0);
	nt_nl_put(&m, type, data, len);
	nt_nl_nest_end(&m, nest);
	return nt_nl_request(nl, &m, NULL, NULL);
}

int nt_nl_card_follow_global(struct nt_nl *nl, uint32_t card)
{
	return nt_nl_card_fault(nl, card, NICOFF_NL_FAULT_GLOBAL, NULL, 0);
}

int nt_nl_card_set_drop(struct nt_nl *nl, uint32_t card, uint32_t drop_ppm)
{
	return nt_nl_card_fault(nl, card, NICOFF_NL_FAULT_DROP_PPM, &drop_ppm, sizeof(drop_ppm));
}

int nt_nl_card_set_bcast_hw(struct nt_nl *nl, uint32_t card, uint32_t on)
{
	struct nt_nlmsg m;

	nt_nl_start(&m, nl->family, NLM_F_REQUEST | NLM_F_ACK, NICOFF_NL_CMD_SET_CARD,
		    NICOFF_GENL_VERSION, ++nl->seq);
	nt_nl_put_u32(&m, NICOFF_NL_A_CARD, card);
	nt_nl_put_u32(&m, NICOFF_NL_A_BCAST_HW, on);
	return nt_nl_request(nl, &m, NULL, NULL);
}

int nt_card_stats(uint32_t card, struct nt_card_stats *st)
{
	struct nt_nl nl;
	int ret;

	memset(st, 0, sizeof(*st));
	ret = nt_nl_connect(&nl);
	if (ret)
		return ret;
	ret = nt_nl_card(&nl, card, st);
	nt_nl_close(&nl);
	return ret;
}

uint64_t nt_card_stat(uint32_t card, int stat)
{
	struct nt_card_stats st;

	return nt_card_stats(card, &st) ? ~0ull : st.v[stat];
}
