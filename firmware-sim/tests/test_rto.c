// SPDX-License-Identifier: GPL-2.0
/*
 * The adaptive retransmission timeout (transport.c): on a fabric that
 * loses nothing but whose latency jitters, the fixed timeout expires
 * while packets are merely late and resends them; the adaptive one learns
 * the round trip and its variation and does not.  Also its bounds, and
 * that losses are still recovered fast, without waiting for it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fwtest.h"

#define RT_WARMUP	200u		/* round trips to learn from */
#define RT_ROUNDS	3000u		/* then measured */
#define RT_JITTER_NS	15000u		/* each packet: up to this much late */

struct rt_result {
	u64 timeouts, retransmits, duplicates;
	u64 us;				/* time the measured round trips took */
	u64 rto_base, srtt, rttvar;	/* card 0's view of card 1, at the end */
};

/*
 * Ping-pong of 64-byte messages between two cards whose every packet is
 * delivered late by up to RT_JITTER_NS, on top of 1 us: nothing is lost,
 * and with one message in flight each way none overtakes another.
 */
static void rt_pingpong(u32 rto_fixed, u64 seed, struct rt_result *r)
{
	static u8 a[64], b[64];
	struct fw_stats s0, s1, e0, e1;
	struct sim_cfg cfg;
	struct nicoff_cqe q;
	struct fw_peer *p;
	struct sim *s;
	u32 ma, mb, i;
	u64 t0 = 0;

	sim_cfg_default(&cfg, 2);
	cfg.seed = seed;
	cfg.fw.rto_fixed = rto_fixed;
	cfg.faults.delay_ppm = FW_FAULT_PPM;
	cfg.faults.delay_ns = RT_JITTER_NS;
	s = sim_create(&cfg);
	ma = t_port_mr(s, 0, 0, a, sizeof(a), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	mb = t_port_mr(s, 1, 0, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	memset(&s0, 0, sizeof(s0));
	memset(&s1, 0, sizeof(s1));
	for (i = 0; i < RT_WARMUP + RT_ROUNDS; i++) {
		if (i == RT_WARMUP) {
			fw_get_stats(sim_card(s, 0), &s0);
			fw_get_stats(sim_card(s, 1), &s1);
			t0 = sim_now(s);
		}
		t_post(s, 1, 0, t_recv(i, mb, 0, sizeof(b), 0, 0, 0, 0));
		t_post(s, 0, 0, t_send(i, 1, 0, ma, 0, sizeof(a), i));
		q = t_cqe(s, 1, 0, sim_now(s) + T_SEC);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.msg_tag, i);
		t_post(s, 0, 0, t_recv(i, ma, 0, sizeof(a), 1, 0, 0, 0));
		t_post(s, 1, 0, t_send(i, 0, 0, mb, 0, sizeof(b), i));
		/* Card 0: its send's completion and the pong, in either order. */
		q = t_cqe(s, 0, 0, sim_now(s) + T_SEC);
		assert_int_equal(q.status, 0);
		q = t_cqe(s, 0, 0, sim_now(s) + T_SEC);
		assert_int_equal(q.status, 0);
		q = t_cqe(s, 1, 0, sim_now(s) + T_SEC);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.opcode, NICOFF_OP_SEND);
	}
	fw_get_stats(sim_card(s, 0), &e0);
	fw_get_stats(sim_card(s, 1), &e1);
	r->timeouts = e0.timeouts - s0.timeouts + e1.timeouts - s1.timeouts;
	r->retransmits = e0.retransmits - s0.retransmits + e1.retransmits - s1.retransmits;
	r->duplicates = e0.duplicates - s0.duplicates + e1.duplicates - s1.duplicates;
	r->us = (sim_now(s) - t0) / 1000;
	p = fw_peer_find(sim_card(s, 0), 1);
	r->rto_base = p->rto_base;
	r->srtt = p->srtt;
	r->rttvar = p->rttvar;
	assert_true(p->rto_base >= cfg.fw.rto_ns && p->rto_base <= cfg.fw.rto_max_ns);
	if (rto_fixed)
		assert_int_equal(p->rto_base, cfg.fw.rto_ns);
	t_finish(s);
}

static void rt_print(const char *name, const struct rt_result *r)
{
	print_message("%-8s %llu round trips in %llu us: %llu timeouts, %llu resent,", name,
		      (unsigned long long)RT_ROUNDS, (unsigned long long)r->us,
		      (unsigned long long)r->timeouts, (unsigned long long)r->retransmits);
	print_message(" %llu duplicates;", (unsigned long long)r->duplicates);
	print_message(" rto %llu ns (srtt %llu, rttvar %llu)\n", (unsigned long long)r->rto_base,
		      (unsigned long long)r->srtt, (unsigned long long)r->rttvar);
}

/*
 * Round trips of 2 to about 32 us against a 20 us timeout: the fixed one
 * fires on a good share of them, the adaptive one on none once learnt.
 */
static void test_jitter(void **state)
{
	u64 seed;

	(void)state;
	for (seed = 1; seed <= 3; seed++) {
		struct rt_result fixed, adaptive;

		rt_pingpong(1, seed, &fixed);
		rt_pingpong(0, seed, &adaptive);
		rt_print("fixed", &fixed);
		rt_print("adaptive", &adaptive);
		assert_true(fixed.timeouts > RT_ROUNDS / 20);
		assert_true(fixed.duplicates > 0);
		assert_int_equal(adaptive.timeouts, 0);
		assert_int_equal(adaptive.retransmits, 0);
		assert_int_equal(adaptive.duplicates, 0);
		assert_true(adaptive.rto_base > 20000);
	}
}

/*
 * A dead peer from the start: nothing to learn from, so the timeouts are
 * rto_ns doubling up to rto_max_ns, and the connection fails within the
 * same budget as with the fixed timeout.  Then real loss after learning:
 * still recovered, and the timeout stays within its bounds.
 */
static void test_bounds_and_loss(void **state)
{
	static u8 a[200000], b[200000];
	struct sim_cfg cfg;
	struct fw_stats st;
	struct nicoff_cqe q;
	struct fw_peer *p;
	struct sim *s;
	u64 t0, budget = 0, rto;
	u32 ma, mb, i;

	(void)state;
	sim_cfg_default(&cfg, 2);
	cfg.fw.max_retries = 6;
	s = sim_create(&cfg);
	ma = t_port_mr(s, 0, 0, a, sizeof(a), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	mb = t_port_mr(s, 1, 0, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	for (i = 0, rto = cfg.fw.rto_ns; i <= cfg.fw.max_retries; i++) {
		budget += rto;
		rto = rto * 2 > cfg.fw.rto_max_ns ? cfg.fw.rto_max_ns : rto * 2;
	}
	sim_set_dead(s, 1, true);
	t0 = sim_now(s);
	t_post(s, 0, 0, t_send(1, 1, 0, ma, 0, 1000, 0));
	q = t_cqe(s, 0, 0, t0 + budget + cfg.fw.rto_ns);
	assert_int_equal(q.status, -ETIMEDOUT);
	assert_true(sim_now(s) - t0 >= budget);
	sim_set_dead(s, 1, false);

	/* Learn a round trip, then lose a tenth of the packets. */
	t_fill(a, sizeof(a), 6);
	for (i = 0; i < 20; i++) {
		t_post(s, 1, 0, t_recv(i, mb, 0, sizeof(b), 0, 0, 0, 0));
		t_post(s, 0, 0, t_send(i, 1, 0, ma, 0, i < 10 ? 100 : sizeof(a), i));
		if (i == 10) {
			struct fw_fault_cfg f = { .drop_ppm = 100000 };

			sim_set_faults(s, &f);
		}
		assert_int_equal(t_cqe(s, 1, 0, sim_now(s) + T_SEC).status, 0);
		assert_int_equal(t_cqe(s, 0, 0, sim_now(s) + T_SEC).status, 0);
	}
	assert_memory_equal(a, b, sizeof(a));
	p = fw_peer_find(sim_card(s, 0), 1);
	assert_true(p->rtt_valid);
	assert_true(p->rto_base >= cfg.fw.rto_ns && p->rto_base <= cfg.fw.rto_max_ns);
	fw_get_stats(sim_card(s, 0), &st);
	assert_true(st.timeouts > cfg.fw.max_retries + 1);
	assert_int_equal(st.conn_failures, 1);
	t_finish(s);
}

/*
 * A long timeout (1 ms here, as an adaptive one grows on a jittery host)
 * does not make losses slow: the receiver reports what it dropped out of
 * order and the sender resends at once.  2% of a 4 MiB transfer's packets
 * are lost; most losses cost a round trip, not a timeout.
 */
static void test_fast_retransmit(void **state)
{
	const u64 len = 4ull << 20;
	u8 *a = malloc(len), *b = calloc(1, len);
	const struct sim_stats *ss;
	struct sim_cfg cfg;
	struct fw_stats st;
	struct sim *s;
	u64 t0, took;
	u32 ma, mb;

	(void)state;
	sim_cfg_default(&cfg, 2);
	cfg.seed = 9;
	cfg.fw.rto_ns = T_MS;
	cfg.fw.rto_max_ns = 50 * T_MS;
	cfg.faults.drop_ppm = 20000;
	s = sim_create(&cfg);
	ma = t_port_mr(s, 0, 0, a, len, 0, NULL);
	mb = t_port_mr(s, 1, 0, b, len, NICOFF_ACCESS_LOCAL_WRITE, NULL);
	t_fill(a, len, 11);
	t_post(s, 1, 0, t_recv(1, mb, 0, len, 0, 0, 0, 0));
	t0 = sim_now(s);
	t_post(s, 0, 0, t_send(2, 1, 0, ma, 0, len, 0));
	assert_int_equal(t_cqe(s, 1, 0, t0 + 10 * T_SEC).status, 0);
	assert_int_equal(t_cqe(s, 0, 0, t0 + 10 * T_SEC).status, 0);
	took = sim_now(s) - t0;
	assert_true(t_check(b, len, 11));
	fw_get_stats(sim_card(s, 0), &st);
	ss = sim_stats(s);
	print_message("4 MiB, %llu packets lost: %llu us, %llu fast retransmits, %llu timeouts\n",
		      (unsigned long long)ss->dropped, (unsigned long long)took / 1000,
		      (unsigned long long)st.fast_retransmits, (unsigned long long)st.timeouts);
	assert_true(ss->dropped > 50);
	assert_true(st.fast_retransmits > 2 * st.timeouts);
	assert_true(took < ss->dropped * cfg.fw.rto_ns / 2);
	t_finish(s);
	free(a);
	free(b);
}

/* Step the fabric until a packet is lost to a dead card (sim_set_dead()). */
static void tl_step_to_loss(struct sim *s)
{
	u64 dead = sim_stats(s)->dead;

	while (sim_stats(s)->dead == dead)
		assert_true(sim_step(s));
}

/*
 * Time from now until card 0's @n sends and card 1's receives complete,
 * the last @n commands posted; the timeouts and probes it took.
 */
static u64 tl_settle(struct sim *s, u32 n, u64 *timeouts, u64 *probes)
{
	u64 t0 = sim_now(s);
	struct fw_stats st;
	u32 i;

	for (i = 0; i < n; i++) {
		assert_int_equal(t_cqe(s, 0, 0, t0 + T_SEC).status, 0);
		assert_int_equal(t_cqe(s, 1, 0, t0 + T_SEC).status, 0);
	}
	fw_get_stats(sim_card(s, 0), &st);
	*timeouts = st.timeouts;
	*probes = st.tail_probes;
	return sim_now(s) - t0;
}

/*
 * A loss with nothing sent after it: the last packet of a burst, or the
 * acknowledgment of a lone message.  No later packet makes the receiver
 * report it, so before the tail-loss probe only the timeout recovered it
 * (rto_ns, 2 ms as in the module, whatever the round trip).  Now one probe
 * does, within a few round trips, without a timeout.
 */
static void test_tail_loss(void **state)
{
	static u8 a[8000], b[8000];
	u64 took, timeouts, probes;
	struct fw_stats st1;
	struct sim_cfg cfg;
	struct sim *s;
	u32 ma, mb, i, rx0;

	(void)state;
	sim_cfg_default(&cfg, 2);
	cfg.fw.rto_ns = 2 * T_MS;
	cfg.fw.rto_max_ns = 50 * T_MS;
	cfg.fw.ack_delay_ns = 20000;
	s = sim_create(&cfg);
	ma = t_port_mr(s, 0, 0, a, sizeof(a), 0, NULL);
	mb = t_port_mr(s, 1, 0, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	for (i = 0; i < 20; i++) {
		t_post(s, 1, 0, t_recv(i, mb, 0, 1000, 0, 0, 0, 0));
		t_post(s, 0, 0, t_send(i, 1, 0, ma, 0, 1000, i));
		tl_settle(s, 1, &timeouts, &probes);
	}
	assert_true(fw_peer_find(sim_card(s, 0), 1)->rtt_valid);

	/* Eight one-packet messages; the last is lost. */
	for (i = 0; i < 8; i++)
		t_post(s, 1, 0, t_recv(i, mb, i * 1000, 1000, 0, 0, 0, 0));
	fw_get_stats(sim_card(s, 1), &st1);
	rx0 = st1.rx_pkts;
	for (i = 0; i < 8; i++)
		t_post(s, 0, 0, t_send(i, 1, 0, ma, i * 1000, 1000, i));
	do {
		assert_true(sim_step(s));
		fw_get_stats(sim_card(s, 1), &st1);
	} while (st1.rx_pkts - rx0 < 7);
	sim_set_dead(s, 1, true);
	tl_step_to_loss(s);
	sim_set_dead(s, 1, false);
	took = tl_settle(s, 8, &timeouts, &probes);
	print_message("tail lost: %llu us, %llu timeouts, %llu probes\n",
		      (unsigned long long)took / 1000, (unsigned long long)timeouts,
		      (unsigned long long)probes);
	assert_int_equal(timeouts, 0);
	assert_int_equal(probes, 1);
	assert_true(took < cfg.fw.rto_ns / 4);

	/* A lone message whose acknowledgment is lost. */
	t_post(s, 1, 0, t_recv(9, mb, 0, 1000, 0, 0, 0, 0));
	t_post(s, 0, 0, t_send(9, 1, 0, ma, 0, 1000, 9));
	sim_set_dead(s, 0, true);
	tl_step_to_loss(s);
	sim_set_dead(s, 0, false);
	took = tl_settle(s, 1, &timeouts, &probes);
	fw_get_stats(sim_card(s, 1), &st1);
	print_message("ack lost: %llu us, %llu timeouts, %llu probes, %llu duplicates\n",
		      (unsigned long long)took / 1000, (unsigned long long)timeouts,
		      (unsigned long long)probes, (unsigned long long)st1.duplicates);
	assert_int_equal(timeouts, 0);
	assert_int_equal(probes, 2);
	assert_int_equal(st1.duplicates, 1);
	assert_true(took < cfg.fw.rto_ns / 4);
	assert_memory_equal(a, b, sizeof(a));
	t_finish(s);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_jitter),
		cmocka_unit_test(test_bounds_and_loss),
		cmocka_unit_test(test_fast_retransmit),
		cmocka_unit_test(test_tail_loss),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
