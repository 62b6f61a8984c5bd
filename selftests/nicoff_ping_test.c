// SPDX-License-Identifier: GPL-2.0
/*
 * NICOFF_OP_PING through the module: a round trip between two cards that
 * the target card answers alone.  This process holds a port on card 0 and
 * one on card 1, and never serves the latter.
 *
 * round_trip
 *	a window of pings from card 0 to card 1's port and back to card 0
 *	itself: every one completes with a round trip in (0, 1 s), and the
 *	target port sees no completion
 * closed_port
 *	a port nobody has open, never or since it closed: -ECONNREFUSED
 * bad_input
 *	an unknown card, a nonzero reserved field: -EINVAL; the card goes on
 * faults
 *	10% drop and 10% duplication on every card: every ping completes (lost
 *	ones sent again), and the duplicated answers are counted as strays
 * timeout
 *	card 1 drops everything it sends: -ETIMEDOUT once the retries are
 *	spent, counted in card 0's ping_timeouts; then card 1 answers again
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "kselftest_harness.h"
#include "nicoff_nl.h"
#include "nicoff_util.h"

#define TMO		20000	/* ms: one completion */
#define WINDOW		32	/* pings in flight at once */
#define ROUNDS		8

FIXTURE(ping) {
	struct nt_port a;	/* card 0: pings */
	struct nt_port b;	/* card 1: pinged, never served */
	struct nicoff_query q;
	struct nt_nl nl;
};

FIXTURE_SETUP(ping)
{
	self->nl.fd = -1;
	ASSERT_EQ(0, nt_query_card(0, &self->q));
	if (self->q.num_cards < 2)
		SKIP(return, "needs 2 cards, the module has %u", self->q.num_cards);
	ASSERT_EQ(0, nt_nl_connect(&self->nl)) TH_LOG("generic netlink family \"nicoff\"");
	ASSERT_EQ(0, nt_set_faults(0, 0, 0, 0));
	ASSERT_EQ(0, nt_nl_card_follow_global(&self->nl, 1));
	ASSERT_EQ(0, nt_port_open(&self->a, 0, NICOFF_PORT_ANY, 64, 64));
	ASSERT_EQ(0, nt_port_open(&self->b, 1, NICOFF_PORT_ANY, 64, 64));
}

FIXTURE_TEARDOWN(ping)
{
	if (self->nl.fd < 0)
		return;
	EXPECT_EQ(0, nt_set_faults(0, 0, 0, 0));
	EXPECT_EQ(0, nt_nl_card_follow_global(&self->nl, 1));
	nt_port_close(&self->a);
	nt_port_close(&self->b);
	nt_nl_close(&self->nl);
}

/* ROUNDS windows of pings to (card, port), each checked; how many went. */
static unsigned int ping_rounds(struct __test_metadata *_metadata, struct nt_port *p,
				uint32_t card, uint32_t port)
{
	struct nicoff_cmd c[WINDOW];
	struct nicoff_cqe q[WINDOW];
	unsigned int r, i, n = 0;

	for (r = 0; r < ROUNDS; r++) {
		for (i = 0; i < WINDOW; i++)
			nicoff_prep_ping(&c[i], card, port, n + i);
		EXPECT_EQ(0, nt_submit(p, c, WINDOW));
		EXPECT_EQ(WINDOW, nt_wait_cqes(p, q, WINDOW, TMO));
		for (i = 0; i < WINDOW; i++) {
			EXPECT_EQ(NICOFF_OP_PING, q[i].opcode);
			EXPECT_EQ(0, q[i].status) TH_LOG("ping %llu", (unsigned long long)q[i].tag);
			EXPECT_LT(0, q[i].result);
			EXPECT_GT(1000000000ull, q[i].result);
		}
		n += WINDOW;
	}
	return n;
}

/* One ping; its completion's status. */
static int32_t ping_one(struct __test_metadata *_metadata, struct nt_port *p, uint32_t card,
			uint32_t port, struct nicoff_cmd *c)
{
	struct nicoff_cqe q;

	memset(&q, 0, sizeof(q));
	if (!c->opcode)
		nicoff_prep_ping(c, card, port, 7);
	EXPECT_EQ(0, nt_run_one(p, c, &q, TMO));
	EXPECT_EQ(NICOFF_OP_PING, q.opcode);
	EXPECT_EQ(c->tag, q.tag);
	return q.status;
}

TEST_F(ping, round_trip)
{
	ping_rounds(_metadata, &self->a, 1, self->b.po.port);
	/* A card to itself. */
	ping_rounds(_metadata, &self->a, 0, self->a.po.port);
	EXPECT_EQ(0, nt_cq_ready(&self->b));
}

TEST_F(ping, closed_port)
{
	struct nicoff_cmd c = { 0 };
	struct nt_port gone;
	uint32_t port;

	ASSERT_EQ(0, nt_port_open(&gone, 1, NICOFF_PORT_ANY, 64, 64));
	port = gone.po.port;
	nt_port_close(&gone);
	EXPECT_EQ(-ECONNREFUSED, ping_one(_metadata, &self->a, 1, port, &c));
	memset(&c, 0, sizeof(c));
	EXPECT_EQ(-ECONNREFUSED, ping_one(_metadata, &self->a, 1, NICOFF_PORT_ANY, &c));
}

TEST_F(ping, bad_input)
{
	struct nicoff_port_stats st0, st;
	struct nicoff_cmd c = { 0 };
	unsigned int i;

	ASSERT_EQ(0, nt_stats(self->a.fd, &st0));
	EXPECT_EQ(-EINVAL, ping_one(_metadata, &self->a, self->q.num_cards, self->b.po.port, &c));
	for (i = 0; i < sizeof(c.ping.reserved) / sizeof(c.ping.reserved[0]); i++) {
		nicoff_prep_ping(&c, 1, self->b.po.port, 7);
		c.ping.reserved[i] = 1;
		EXPECT_EQ(-EINVAL, ping_one(_metadata, &self->a, 1, self->b.po.port, &c));
	}
	/* The card goes on. */
	memset(&c, 0, sizeof(c));
	EXPECT_EQ(0, ping_one(_metadata, &self->a, 1, self->b.po.port, &c));
	ASSERT_EQ(0, nt_stats(self->a.fd, &st));
	EXPECT_EQ(st0.cmds + 7, st.cmds);
}

TEST_F(ping, faults)
{
	uint64_t strays0 = nt_card_stat(0, NICOFF_NL_STAT_PING_STRAYS);

	ASSERT_NE(~0ull, strays0);
	ASSERT_EQ(0, nt_set_faults(100000, 100000, 0, 0));
	ping_rounds(_metadata, &self->a, 1, self->b.po.port);
	ASSERT_EQ(0, nt_set_faults(0, 0, 0, 0));
	/* Some of 256 pings and their answers were duplicated, surely. */
	EXPECT_LT(strays0, nt_card_stat(0, NICOFF_NL_STAT_PING_STRAYS));
	EXPECT_EQ(0, nt_cq_ready(&self->b));
}

TEST_F(ping, timeout)
{
	uint64_t timeouts0 = nt_card_stat(0, NICOFF_NL_STAT_PING_TIMEOUTS);
	struct nicoff_cmd c = { 0 };

	ASSERT_NE(~0ull, timeouts0);
	ASSERT_EQ(0, nt_nl_card_set_drop(&self->nl, 1, 1000000));
	EXPECT_EQ(-ETIMEDOUT, ping_one(_metadata, &self->a, 1, self->b.po.port, &c));
	EXPECT_EQ(timeouts0 + 1, nt_card_stat(0, NICOFF_NL_STAT_PING_TIMEOUTS));
	ASSERT_EQ(0, nt_nl_card_follow_global(&self->nl, 1));
	memset(&c, 0, sizeof(c));
	EXPECT_EQ(0, ping_one(_metadata, &self->a, 1, self->b.po.port, &c));
}

TEST_HARNESS_MAIN
