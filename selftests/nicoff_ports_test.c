// SPDX-License-Identifier: GPL-2.0
/*
 * Many ports and cards: a port on every card, and every port of one card
 * (Documentation/abi.md, "Devices, files and ports"), each completing a NOP,
 * then all closed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define TMO 10000

FIXTURE(ports) {
	struct nicoff_query q;
	long long pinned0;
};

FIXTURE_SETUP(ports)
{
	ASSERT_EQ(0, nt_query_card(0, &self->q));
	self->pinned0 = nt_pinned_pages();
	ASSERT_LE(0, self->pinned0);
}

FIXTURE_TEARDOWN(ports)
{
}

/* Post one NOP on each port first, then collect them all. */
static void nop_on_all(struct __test_metadata *_metadata, struct nt_port *p, unsigned int n,
		       uint64_t tag0)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct nicoff_cmd c;

		nicoff_prep_nop(&c, tag0 + i);
		ASSERT_EQ(0, nt_submit(&p[i], &c, 1)) TH_LOG("port %u", i);
	}
	for (i = 0; i < n; i++) {
		struct nicoff_cqe cqe;

		ASSERT_EQ(1, nt_wait_cqes(&p[i], &cqe, 1, TMO)) TH_LOG("port %u", i);
		EXPECT_EQ(tag0 + i, cqe.tag);
		EXPECT_EQ(0, cqe.status);
		EXPECT_EQ(NICOFF_OP_NOP, cqe.opcode);
	}
}

TEST_F(ports, one_port_per_card)
{
	unsigned int n = self->q.num_cards, i;
	struct nt_port *p = calloc(n, sizeof(*p));
	static char buf[4096] __attribute__((aligned(4096)));

	ASSERT_NE(NULL, p);
	for (i = 0; i < n; i++) {
		struct nicoff_query q;

		ASSERT_EQ(0, nt_port_open(&p[i], i, NICOFF_PORT_ANY, 8, 8)) TH_LOG("card %u", i);
		ASSERT_EQ(0, nt_query(p[i].fd, &q));
		EXPECT_EQ(i, q.card);
		ASSERT_EQ(0, nt_reg_mr(p[i].fd, buf, sizeof(buf), 0, NULL));
	}
	EXPECT_EQ(self->pinned0 + n, nt_pinned_pages());
	nop_on_all(_metadata, p, n, 1000);
	/* Twice, so sleeping and awake threads are both exercised. */
	nt_sleep_ms(20);
	nop_on_all(_metadata, p, n, 2000);
	for (i = 0; i < n; i++)
		nt_port_close(&p[i]);
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 2000));
	free(p);
}

TEST_F_TIMEOUT(ports, all_ports_of_a_card, 120)
{
	unsigned int n = self->q.max_ports, i, card = self->q.num_cards - 1;
	struct nt_port *p = calloc(n, sizeof(*p));
	unsigned char *used = calloc(n, 1);
	struct nicoff_port_open po;
	struct rlimit rl;
	int fd;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, used);
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < n + 16) {
		rl.rlim_cur = n + 16 < rl.rlim_max ? n + 16 : rl.rlim_max;
		ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	}
	/* NICOFF_PORT_ANY hands out every port once, the lowest free first. */
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, nt_port_open(&p[i], card, NICOFF_PORT_ANY, 2, 2)) TH_LOG("port %u", i);
		ASSERT_GT(n, p[i].po.port);
		EXPECT_EQ(0, used[p[i].po.port]);
		used[p[i].po.port] = 1;
		EXPECT_EQ(i, p[i].po.port);
	}
	/* The card is full. */
	fd = nt_open_card(card);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EBUSY, nt_port_open_fd(fd, NICOFF_PORT_ANY, 2, 2, NULL));
	EXPECT_EQ(-EADDRINUSE, nt_port_open_fd(fd, n / 2, 2, 2, NULL));

	nop_on_all(_metadata, p, n, 0);
	nop_on_all(_metadata, p, n, 100000);

	/* Free one in the middle: ANY now finds exactly that one. */
	nt_port_close(&p[n / 2]);
	ASSERT_EQ(0, nt_port_open_fd(fd, NICOFF_PORT_ANY, 2, 2, &po));
	EXPECT_EQ(n / 2, po.port);
	close(fd);
	for (i = 0; i < n; i++)
		nt_port_close(&p[i]);
	/* All closed: every port can be had again, explicitly. */
	for (i = 0; i < n; i += n / 4 ? n / 4 : 1) {
		ASSERT_EQ(0, nt_port_open(&p[i], card, i, 2, 2)) TH_LOG("port %u", i);
		EXPECT_EQ(i, p[i].po.port);
		nt_port_close(&p[i]);
	}
	free(used);
	free(p);
}

/* Every port of every card at once, if that is not too many. */
TEST_F_TIMEOUT(ports, every_port_everywhere, 120)
{
	unsigned int per = self->q.max_ports, cards = self->q.num_cards, n, i;
	struct nt_port *p;
	struct rlimit rl;

	n = per * cards;
	if (n > 1024)
		SKIP(return, "%u ports is too many for this test", n);
	p = calloc(n, sizeof(*p));
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur < n + 16) {
		rl.rlim_cur = n + 16 < rl.rlim_max ? n + 16 : rl.rlim_max;
		ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	}
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, nt_port_open(&p[i], i % cards, NICOFF_PORT_ANY, 2, 2))
			TH_LOG("port %u", i);
	nop_on_all(_metadata, p, n, 0);
	for (i = 0; i < n; i++)
		nt_port_close(&p[i]);
	free(p);
}

TEST_HARNESS_MAIN
