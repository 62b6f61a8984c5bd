// SPDX-License-Identifier: GPL-2.0
/*
 * Receiver not ready (msg.c): a port out of receives and unexpected room
 * refuses messages with an RNR reply, without holding up the connection
 * its card shares with every other port.  Isolation from other ports,
 * delivery in send order once receives are posted, the budget after which
 * only the refused messages fail (-ENOBUFS), ports and regions going away
 * under a refusal, and all of it under faults.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fwtest.h"

#define RN_MSG		65536u		/* a message to the full port */
#define RN_TAGS(p, k)	(((u64)(p) << 32) | (k))

static void rn_cfg(struct sim_cfg *cfg, u32 nodes, u64 seed)
{
	sim_cfg_default(cfg, nodes);
	cfg->seed = seed;
	cfg->fw.unexpected_bytes = 4 * RN_MSG;
}

/* How long a refused message is retried (msg.c): the retry budget. */
static u64 rn_budget(const struct sim_cfg *cfg)
{
	u64 rto = cfg->fw.rto_ns, sum = 0;
	u32 i;

	for (i = 0; i <= cfg->fw.max_retries; i++) {
		sum += rto;
		rto = rto * 2 > cfg->fw.rto_max_ns ? cfg->fw.rto_max_ns : rto * 2;
	}
	return sum;
}

/*
 * Two cards from cfg (rn_cfg(), then the test's changes): card 0 port 0
 * sends from a (ma), card 1 port 1, the port that fills up, receives into
 * b (mb).
 */
struct rn_env {
	struct sim_cfg cfg;
	struct sim *s;
	u32 ma, mb;
	u64 budget;		/* rn_budget(&cfg) */
};

static void rn_start(struct rn_env *e, void *a, u64 alen, void *b, u64 blen)
{
	e->budget = rn_budget(&e->cfg);
	e->s = sim_create(&e->cfg);
	e->ma = t_port_mr(e->s, 0, 0, a, alen, 0, NULL);
	e->mb = t_port_mr(e->s, 1, 1, b, blen, NICOFF_ACCESS_LOCAL_WRITE, NULL);
}

/*
 * Port 1 of card 1 never posts a receive and its unexpected budget is
 * full; port 2 has a receive posted.  Five sends to port 1, then one to
 * port 2: port 2 gets its message at once, the fifth to port 1 fails with
 * -ENOBUFS after the budget, the connection never times out, and port 1
 * later gets its four buffered messages in order and the pair works again.
 */
static void test_isolation(void **state)
{
	static u8 a[RN_MSG], b1[5 * RN_MSG], b2[64];
	struct rn_env e;
	struct fw_stats st0, st1;
	struct nicoff_cqe q;
	u32 m2, i;
	u64 t0, t2;

	(void)state;
	rn_cfg(&e.cfg, 2, 1);
	rn_start(&e, a, sizeof(a), b1, sizeof(b1));
	m2 = t_port_mr(e.s, 1, 2, b2, sizeof(b2), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	t_fill(a, sizeof(a), 3);
	t_post(e.s, 1, 2, t_recv(100, m2, 0, sizeof(b2), NICOFF_ANY, NICOFF_ANY, 0, 0));
	t0 = sim_now(e.s);
	for (i = 0; i < 5; i++)
		t_post(e.s, 0, 0, t_send(i, 1, 1, e.ma, 0, RN_MSG, i));
	t_post(e.s, 0, 0, t_send(200, 1, 2, e.ma, 0, 8, 200));

	/* Port 2's message: one round trip behind port 1's refused one. */
	q = t_cqe(e.s, 1, 2, t0 + T_MS);
	t2 = sim_now(e.s) - t0;
	assert_int_equal(q.status, 0);
	assert_int_equal(q.msg_tag, 200);
	assert_memory_equal(b2, a, 8);
	for (i = 0; i < 5; i++) {
		q = t_cqe(e.s, 0, 0, t0 + T_MS);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.tag, i == 4 ? 200 : i);
	}
	q = t_cqe(e.s, 0, 0, t0 + e.budget + e.cfg.fw.rto_max_ns + T_MS);
	assert_int_equal(q.tag, 4);
	assert_int_equal(q.status, -ENOBUFS);
	print_message("port 2 served after %llu us; port 1's fifth failed after %llu us",
		      (unsigned long long)t2 / 1000,
		      (unsigned long long)(sim_now(e.s) - t0) / 1000);
	print_message(" (budget %llu us)\n", (unsigned long long)e.budget / 1000);
	assert_true(sim_now(e.s) - t0 >= e.budget);
	fw_get_stats(sim_card(e.s, 0), &st0);
	fw_get_stats(sim_card(e.s, 1), &st1);
	assert_int_equal(st0.timeouts, 0);
	assert_int_equal(st0.conn_failures, 0);
	assert_int_equal(st0.rnr_failures, 1);
	assert_true(st1.rnr_drops >= 2);
	assert_int_equal(st1.unexpected, 4);

	/* Port 1: its four, in order; then the pair works again. */
	for (i = 0; i < 5; i++) {
		t_post(e.s, 1, 1, t_recv(10 + i, e.mb, (u64)i * RN_MSG, RN_MSG, NICOFF_ANY,
					 NICOFF_ANY, 0, 0));
	}
	for (i = 0; i < 4; i++) {
		q = t_cqe(e.s, 1, 1, sim_now(e.s));
		assert_int_equal(q.status, 0);
		assert_int_equal(q.tag, 10 + i);
		assert_int_equal(q.msg_tag, i);
		assert_memory_equal(b1 + (u64)i * RN_MSG, a, RN_MSG);
	}
	t_post(e.s, 0, 0, t_send(300, 1, 1, e.ma, 0, 1000, 300));
	q = t_cqe(e.s, 1, 1, sim_now(e.s) + T_MS);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.msg_tag, 300);
	assert_int_equal(t_cqe(e.s, 0, 0, sim_now(e.s) + T_MS).status, 0);
	assert_int_equal(sim_card(e.s, 1)->ports[1]->unexp_used, 0);
	assert_true(fw_list_empty(&fw_peer_find(sim_card(e.s, 1), 0)->rblocks));
	t_finish(e.s);
}

/*
 * Refused messages arrive later, in send order, once receives come: a
 * receive for the last message only, posted first, must not take it
 * ahead of the others; meanwhile another source port's messages to the
 * same port keep their own order.
 */
static void test_order_when_ready(void **state)
{
	static u8 a[8192], b[16][8192];
	struct sim_cfg cfg;
	struct sim *s;
	struct nicoff_cqe q;
	u32 ma, ma2, mb, i, n1 = 0, n2 = 0;
	struct fw_stats st;

	(void)state;
	rn_cfg(&cfg, 2, 1);
	cfg.fw.mtu = 1024;
	cfg.fw.unexpected_bytes = 2 * 4096;
	s = sim_create(&cfg);
	ma = t_port_mr(s, 0, 3, a, sizeof(a), 0, NULL);
	ma2 = t_port_mr(s, 0, 4, a, sizeof(a), 0, NULL);
	mb = t_port_mr(s, 1, 0, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	t_fill(a, sizeof(a), 8);
	/* Port 3: six messages, 0 and 1 fit; port 4: three, interleaved. */
	for (i = 0; i < 6; i++) {
		t_post(s, 0, 3, t_send(i, 1, 0, ma, i, i == 3 ? 0 : 4096, RN_TAGS(3, i)));
		if (i % 2)
			t_post(s, 0, 4, t_send(i, 1, 0, ma2, 7, 3000, RN_TAGS(4, i / 2)));
	}
	/* Only port 3's last message matches this one. */
	t_post(s, 1, 0, t_recv(50, mb, 15 * 8192ull, 8192, 0, 3, RN_TAGS(3, 5), ~0ull));
	sim_run_until(s, sim_now(s) + 3 * T_MS);
	assert_int_equal(sim_cq_count(s, 1, 0), 0);
	fw_get_stats(sim_card(s, 1), &st);
	assert_true(st.rnr_drops > 0);
	/* Everything else: any source, any tag. */
	for (i = 0; i < 8; i++)
		t_post(s, 1, 0, t_recv(i, mb, (u64)i * 8192, 8192, NICOFF_ANY, NICOFF_ANY, 0, 0));
	for (i = 0; i < 9; i++) {
		q = t_cqe(s, 1, 0, sim_now(s) + 5 * T_MS);
		assert_int_equal(q.status, 0);
		if (q.src_port == 3) {
			assert_int_equal(q.msg_tag, RN_TAGS(3, n1));
			assert_int_equal(q.result, n1 == 3 ? 0 : 4096);
			assert_int_equal(q.tag, n1 == 5 ? 50 : q.tag);
			assert_memory_equal(q.tag == 50 ? b[15] : b[q.tag], a + n1, q.result);
			n1++;
		} else {
			assert_int_equal(q.src_port, 4);
			assert_int_equal(q.msg_tag, RN_TAGS(4, n2));
			assert_memory_equal(b[q.tag], a + 7, 3000);
			n2++;
		}
	}
	assert_int_equal(n1, 6);
	assert_int_equal(n2, 3);
	for (i = 0; i < 6; i++)
		assert_int_equal(t_cqe(s, 0, 3, sim_now(s) + T_MS).status, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(t_cqe(s, 0, 4, sim_now(s) + T_MS).status, 0);
	fw_get_stats(sim_card(s, 0), &st);
	print_message("resends %llu, timeouts %llu\n", (unsigned long long)st.rnr_resends,
		      (unsigned long long)st.timeouts);
	assert_true(st.rnr_resends > 0);
	assert_int_equal(st.rnr_failures, 0);
	assert_int_equal(st.conn_failures, 0);
	t_finish(s);
}

/*
 * Ten messages queued to a port that never receives: all fail with
 * -ENOBUFS within about one budget of the first refusal (not one budget
 * each), and only they; another port of the same card is served
 * throughout.
 */
static void test_budget_only_those(void **state)
{
	static u8 a[RN_MSG], b[64 * 64];
	struct rn_env e;
	struct nicoff_cqe q;
	u32 m2, i, fails = 0, oks = 0;
	u64 t0, last = 0;
	struct fw_stats st;

	(void)state;
	rn_cfg(&e.cfg, 2, 1);
	e.cfg.fw.unexpected_bytes = RN_MSG;
	rn_start(&e, a, sizeof(a), b, sizeof(b));
	m2 = t_port_mr(e.s, 1, 2, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	t0 = sim_now(e.s);
	for (i = 0; i < 11; i++)
		t_post(e.s, 0, 0, t_send(i, 1, 1, e.ma, 0, i ? 5000 : RN_MSG, i));
	/* A message to port 2 every 500 us, each received within 200 us. */
	for (i = 0; i < 64 && fails < 10; i++) {
		u64 t = sim_now(e.s);

		t_post(e.s, 1, 2, t_recv(i, m2, 64 * i, 64, NICOFF_ANY, NICOFF_ANY, 0, 0));
		t_post(e.s, 0, 0, t_send(1000 + i, 1, 2, e.ma, 0, 64, i));
		q = t_cqe(e.s, 1, 2, t + 200000);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.msg_tag, i);
		sim_run_until(e.s, t + 500000);
		while (sim_cq_pop(e.s, 0, 0, &q)) {
			if (q.tag >= 1000) {
				assert_int_equal(q.status, 0);
				continue;
			}
			if (!q.status) {
				oks++;
				continue;
			}
			assert_int_equal(q.status, -ENOBUFS);
			assert_true(sim_now(e.s) - t0 >= e.budget);
			last = sim_now(e.s) - t0;
			fails++;
		}
	}
	assert_int_equal(oks, 1);
	assert_int_equal(fails, 10);
	print_message("ten refused messages failed by %llu us (budget %llu us)\n",
		      (unsigned long long)last / 1000, (unsigned long long)e.budget / 1000);
	assert_true(last <= e.budget + e.cfg.fw.rto_max_ns + T_MS);
	fw_get_stats(sim_card(e.s, 0), &st);
	assert_int_equal(st.rnr_failures, 10);
	assert_int_equal(st.timeouts, 0);
	assert_int_equal(st.conn_failures, 0);
	t_finish(e.s);
}

/*
 * The refused message's port closes (an ABORT lets the receiver go on),
 * or its region goes before it is sent again (the same): a new process on
 * that port, or the next message, gets through.  The receiving port
 * closes while it refuses: the message is refused for good.
 */
static void test_ports_and_regions_go(void **state)
{
	static u8 a[RN_MSG], b[4 * RN_MSG];
	struct sim_cfg cfg;
	struct sim *s;
	struct nicoff_cqe q;
	u32 ma, mb, i;

	(void)state;
	rn_cfg(&cfg, 2, 1);
	cfg.fw.unexpected_bytes = RN_MSG;
	s = sim_create(&cfg);
	ma = t_port_mr(s, 0, 0, a, sizeof(a), 0, NULL);
	mb = t_port_mr(s, 1, 0, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	t_fill(a, sizeof(a), 4);

	/* 1. The sender's port closes while its message is refused. */
	for (i = 0; i < 2; i++)
		t_post(s, 0, 0, t_send(i, 1, 0, ma, 0, RN_MSG, i));
	assert_int_equal(t_cqe(s, 0, 0, sim_now(s) + T_MS).status, 0);
	sim_run_until(s, sim_now(s) + 200000);
	assert_false(fw_list_empty(&fw_peer_find(sim_card(s, 1), 0)->rblocks));
	sim_detach(s, 0, 0);
	sim_run_until(s, sim_now(s) + 200000);
	assert_true(fw_list_empty(&fw_peer_find(sim_card(s, 1), 0)->rblocks));
	ma = t_port_mr(s, 0, 0, a, sizeof(a), 0, NULL);
	t_post(s, 1, 0, t_recv(10, mb, 0, RN_MSG, NICOFF_ANY, NICOFF_ANY, 0, 0));
	q = t_cqe(s, 1, 0, sim_now(s));
	assert_int_equal(q.msg_tag, 0);
	t_post(s, 0, 0, t_send(20, 1, 0, ma, 0, 100, 20));
	assert_int_equal(t_cqe(s, 0, 0, sim_now(s) + T_MS).status, 0);
	t_post(s, 1, 0, t_recv(11, mb, 0, RN_MSG, NICOFF_ANY, NICOFF_ANY, 0, 0));
	q = t_cqe(s, 1, 0, sim_now(s));
	assert_int_equal(q.msg_tag, 20);

	/* 2. The refused message's region goes: it fails, the next goes through. */
	for (i = 0; i < 3; i++)
		t_post(s, 0, 0, t_send(30 + i, 1, 0, ma, 0, i == 2 ? 100 : RN_MSG, 30 + i));
	assert_int_equal(t_cqe(s, 0, 0, sim_now(s) + T_MS).status, 0);
	sim_run_until(s, sim_now(s) + 10000);
	assert_int_equal(sim_dereg_mr(s, 0, 0, ma), 0);
	t_expect(s, 0, 0, 31, -ENOENT);
	t_expect(s, 0, 0, 32, -ENOENT);
	ma = t_port_mr(s, 0, 0, a, sizeof(a), 0, NULL);
	t_post(s, 0, 0, t_send(40, 1, 0, ma, 0, 100, 40));
	t_post(s, 1, 0, t_recv(12, mb, 0, RN_MSG, NICOFF_ANY, NICOFF_ANY, 0, 0));
	assert_int_equal(t_cqe(s, 1, 0, sim_now(s) + T_MS).msg_tag, 30);
	t_post(s, 1, 0, t_recv(13, mb, 0, RN_MSG, NICOFF_ANY, NICOFF_ANY, 0, 0));
	assert_int_equal(t_cqe(s, 1, 0, sim_now(s) + T_MS).msg_tag, 40);
	assert_int_equal(t_cqe(s, 0, 0, sim_now(s) + T_MS).status, 0);

	/* 3. The receiving port closes while it refuses. */
	for (i = 0; i < 2; i++)
		t_post(s, 0, 0, t_send(50 + i, 1, 0, ma, 0, RN_MSG, 50 + i));
	assert_int_equal(t_cqe(s, 0, 0, sim_now(s) + T_MS).status, 0);
	sim_run_until(s, sim_now(s) + 100000);
	sim_detach(s, 1, 0);
	t_expect(s, 0, 0, 51, -ECONNREFUSED);
	t_finish(s);
}

/*
 * Under every fault, ports of two cards send to two ports of a third
 * whose receives come slowly and whose unexpected budget is small: every
 * message arrives once, in order per port pair, intact, and every send
 * succeeds.
 */
#define RF_SRC		4u		/* (card, port): cards 0 and 2, ports 0 and 1 */
#define RF_MSGS		40u
#define RF_SLOT		6000u

static void rf_run(u64 seed)
{
	static u8 src[8192], dst[2][2 * RF_SRC * RF_MSGS][RF_SLOT];
	u32 next[2][RF_SRC], posted[2] = { 0, 0 }, got = 0, sent = 0, i, p;
	u32 msrc[RF_SRC], mdst[2];
	struct sim_cfg cfg;
	struct fw_stats sum;
	struct sim *s;
	struct nicoff_cqe q;

	rn_cfg(&cfg, 3, seed);
	cfg.fw.mtu = 1000;
	cfg.fw.window = 16;
	cfg.fw.max_retries = 30;
	cfg.fw.unexpected_bytes = 8000;
	cfg.faults = (struct fw_fault_cfg){ .drop_ppm = 50000, .dup_ppm = 30000,
					    .corrupt_ppm = 10000, .reorder_ppm = 30000,
					    .delay_ppm = 30000, .delay_ns = 20000 };
	s = sim_create(&cfg);
	t_fill(src, sizeof(src), 77);
	memset(next, 0, sizeof(next));
	for (i = 0; i < RF_SRC; i++)
		msrc[i] = t_port_mr(s, i / 2 * 2, i % 2, src, sizeof(src), 0, NULL);
	for (p = 0; p < 2; p++)
		mdst[p] = t_port_mr(s, 1, p, dst[p], sizeof(dst[p]), NICOFF_ACCESS_LOCAL_WRITE,
				    NULL);
	/* Each source: RF_MSGS to each receiving port, sizes 0 to 5999. */
	for (i = 0; i < RF_MSGS; i++)
		for (p = 0; p < 2 * RF_SRC; p++) {
			u32 k = p % RF_SRC, len = (i * 2654435761u + p * 97) % RF_SLOT;

			u64 tag = RN_TAGS(p / RF_SRC, i) | ((u64)len << 40);

			t_post(s, k / 2 * 2, k % 2,
			       t_send(i, 1, p / RF_SRC, msrc[k], (i * 31) % 2000, len, tag));
		}
	/* Receives trickle in: one per port every 100 us. */
	while (got < 2 * RF_SRC * RF_MSGS) {
		for (p = 0; p < 2; p++) {
			if (posted[p] < RF_SRC * RF_MSGS) {
				t_post(s, 1, p, t_recv(posted[p], mdst[p], (u64)posted[p] * RF_SLOT,
						       RF_SLOT, NICOFF_ANY, NICOFF_ANY, 0, 0));
				posted[p]++;
			}
			while (sim_cq_pop(s, 1, p, &q)) {
				u32 from = q.src_card / 2 * 2 + q.src_port;
				u64 len = q.msg_tag >> 40;

				assert_int_equal(q.status, 0);
				assert_int_equal(q.result, len);
				assert_int_equal(q.msg_tag & 0xffffffffull, next[p][from]);
				assert_memory_equal(dst[p][q.tag],
						    src + (next[p][from] * 31) % 2000, len);
				next[p][from]++;
				got++;
			}
		}
		for (i = 0; i < RF_SRC; i++)
			while (sim_cq_pop(s, i / 2 * 2, i % 2, &q)) {
				assert_int_equal(q.status, 0);
				sent++;
			}
		sim_run_until(s, sim_now(s) + 100000);
		assert_true(sim_now(s) < 60 * T_SEC);
	}
	assert_true(sim_run_idle(s, sim_now(s) + 10 * T_SEC));
	for (i = 0; i < RF_SRC; i++)
		while (sim_cq_pop(s, i / 2 * 2, i % 2, &q)) {
			assert_int_equal(q.status, 0);
			sent++;
		}
	assert_int_equal(sent, 2 * RF_SRC * RF_MSGS);
	t_stats_sum(s, &sum);
	print_message("seed %llu: %llu us, refusals %llu, resends %llu, retx %llu, timeouts %llu\n",
		      (unsigned long long)seed, (unsigned long long)sim_now(s) / 1000,
		      (unsigned long long)sum.rnr_drops, (unsigned long long)sum.rnr_resends,
		      (unsigned long long)sum.retransmits, (unsigned long long)sum.timeouts);
	assert_true(sum.rnr_drops > 0);
	assert_int_equal(sum.rnr_failures, 0);
	assert_int_equal(sum.conn_failures, 0);
	t_finish(s);
}

static void test_order_under_faults(void **state)
{
	(void)state;
	t_seeds(rf_run, 1, 6);
}

/*
 * Chaos: every port of three cards sends to random ports; receivers post
 * in bursts with long droughts (longer than the budget), receiving ports
 * close and reopen, the fabric drops, duplicates, corrupts and reorders.
 * Per (source port, destination port), messages arrive in send order and
 * at most once; a delivered message's send succeeded; a message whose send
 * succeeded is delivered unless its destination port closed meanwhile; a
 * send fails only with -ENOBUFS, or -ECONNREFUSED or -ECONNABORTED if its
 * destination port closed, a receive only with -ECONNABORTED when the
 * sender's port closed half way; and no refusal outlives its message.
 */
#define RC_NODES	3u
#define RC_PORTS	3u
#define RC_EP		(RC_NODES * RC_PORTS)
#define RC_MSGS		1500u
#define RC_SLOTS	32u
#define RC_SLOT		12000u

struct rc_msg {
	u32 src, dst, seq, len;
	u32 gen;		/* the destination port's closings when sent */
	u32 src_gen;		/* the source port's */
	s32 status;		/* of the send; 1 until it completes, 2: its port closed */
	bool delivered;
};

struct rc_world {
	struct sim *s;
	u64 rng;
	u8 src[RC_EP][16384];
	u8 dst[RC_EP][RC_SLOTS][RC_SLOT];
	u32 msrc[RC_EP], mdst[RC_EP];
	bool slot_busy[RC_EP][RC_SLOTS];
	u32 closings[RC_EP];
	u32 sent_seq[RC_EP][RC_EP];	/* next sequence, per pair */
	s64 last_seq[RC_EP][RC_EP];	/* last delivered, per pair */
	struct rc_msg msgs[RC_MSGS];
	u32 nmsgs, ncompleted;
	u64 fails[3];			/* -ENOBUFS, -ECONNREFUSED, delivered */
};

static u32 rc_rand(struct rc_world *w, u32 n)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return (u32)((w->rng >> 16) % n);
}

static void rc_open(struct rc_world *w, u32 ep)
{
	memset(w->slot_busy[ep], 0, sizeof(w->slot_busy[ep]));
	w->msrc[ep] = t_port_mr(w->s, ep / RC_PORTS, ep % RC_PORTS, w->src[ep],
				sizeof(w->src[ep]), 0, NULL);
	w->mdst[ep] = t_port_mr(w->s, ep / RC_PORTS, ep % RC_PORTS, w->dst[ep],
				sizeof(w->dst[ep]), NICOFF_ACCESS_LOCAL_WRITE, NULL);
}

static void rc_reap(struct rc_world *w)
{
	struct nicoff_cqe q;
	u32 ep;

	for (ep = 0; ep < RC_EP; ep++) {
		while (sim_cq_pop(w->s, ep / RC_PORTS, ep % RC_PORTS, &q)) {
			struct rc_msg *m;

			if (q.opcode == NICOFF_OP_SEND) {
				m = &w->msgs[q.tag];
				assert_int_equal(m->status, 1);
				m->status = q.status;
				w->ncompleted++;
				if (q.status == -ENOBUFS)
					w->fails[0]++;
				if (q.status == -ECONNREFUSED || q.status == -ECONNABORTED) {
					/* Its destination port closed meanwhile. */
					assert_true(w->closings[m->dst] > m->gen);
					w->fails[1]++;
				} else if (q.status) {
					assert_int_equal(q.status, -ENOBUFS);
				}
				continue;
			}
			assert_int_equal(q.opcode, NICOFF_OP_RECV);
			w->slot_busy[ep][q.tag] = false;
			m = &w->msgs[q.msg_tag];
			if (q.status == -ECONNABORTED) {
				/* Its sender's port closed half way. */
				assert_int_equal(m->status, 2);
				assert_true(w->closings[m->src] > m->src_gen);
				assert_false(m->delivered);
				continue;
			}
			assert_int_equal(q.status, 0);
			assert_int_equal(m->dst, ep);
			assert_int_equal(m->src, q.src_card * RC_PORTS + q.src_port);
			assert_int_equal(q.result, m->len);
			assert_false(m->delivered);
			/* In order: after every message of the pair delivered so far. */
			assert_true((s64)m->seq > w->last_seq[m->src][ep]);
			w->last_seq[m->src][ep] = m->seq;
			m->delivered = true;
			w->fails[2]++;
			assert_memory_equal(w->dst[ep][q.tag], w->src[m->src] + m->seq % 4000,
					    m->len);
			/* A delivered message's send cannot have failed. */
			assert_true(m->status == 1 || m->status == 0 || m->status == 2);
		}
	}
}

static void rc_post_recvs(struct rc_world *w, u32 ep, u32 n)
{
	struct nicoff_cmd c;
	u32 i;

	for (i = 0; i < RC_SLOTS && n; i++) {
		if (w->slot_busy[ep][i])
			continue;
		c = t_recv(i, w->mdst[ep], (u64)i * RC_SLOT, RC_SLOT, NICOFF_ANY, NICOFF_ANY, 0, 0);
		sim_post(w->s, ep / RC_PORTS, ep % RC_PORTS, &c);
		w->slot_busy[ep][i] = true;
		n--;
	}
}

static void rc_run(u64 seed)
{
	struct rc_world *w = calloc(1, sizeof(*w));
	u32 drought[RC_EP] = { 0 }, ep, i, undelivered = 0;
	struct sim_cfg cfg;
	struct fw_stats sum;
	struct nicoff_cmd c;

	rn_cfg(&cfg, RC_NODES, seed);
	cfg.fw.mtu = 1500;
	cfg.fw.window = 24;
	cfg.fw.unexpected_bytes = 20000;
	cfg.faults = (struct fw_fault_cfg){ .drop_ppm = 20000, .dup_ppm = 20000,
					    .corrupt_ppm = 5000, .reorder_ppm = 20000,
					    .delay_ns = 10000 };
	w->s = sim_create(&cfg);
	w->rng = seed * 0x9e3779b97f4a7c15ull + 7;
	for (ep = 0; ep < RC_EP; ep++) {
		t_fill(w->src[ep], sizeof(w->src[ep]), ep + 1);
		rc_open(w, ep);
		for (i = 0; i < RC_EP; i++)
			w->last_seq[i][ep] = -1;
	}
	while (w->nmsgs < RC_MSGS) {
		u32 r = rc_rand(w, 100);

		ep = rc_rand(w, RC_EP);
		if (r < 60) {
			u32 d = rc_rand(w, RC_EP);
			struct rc_msg *m = &w->msgs[w->nmsgs];

			m->src = ep;
			m->dst = d;
			m->seq = w->sent_seq[ep][d]++;
			m->len = rc_rand(w, 5) ? rc_rand(w, 3000) : rc_rand(w, RC_SLOT);
			m->gen = w->closings[d];
			m->src_gen = w->closings[ep];
			m->status = 1;
			c = t_send(w->nmsgs, d / RC_PORTS, d % RC_PORTS, w->msrc[ep],
				   m->seq % 4000, m->len, w->nmsgs);
			w->nmsgs++;
			sim_post(w->s, ep / RC_PORTS, ep % RC_PORTS, &c);
		} else if (r < 90) {
			/* Receives, unless in a drought (sometimes past the budget). */
			if (sim_now(w->s) >= drought[ep])
				rc_post_recvs(w, ep, 1 + rc_rand(w, 4));
			if (!rc_rand(w, 40))
				drought[ep] = sim_now(w->s) + rc_rand(w, 30) * T_MS;
		} else if (r < 91) {
			/* The port closes and opens again: what it held is lost. */
			sim_detach(w->s, ep / RC_PORTS, ep % RC_PORTS);
			w->closings[ep]++;
			for (i = 0; i < w->nmsgs; i++) {
				if (w->msgs[i].src == ep && w->msgs[i].status == 1) {
					w->msgs[i].status = 2;	/* no completion any more */
					w->ncompleted++;
				}
			}
			rc_open(w, ep);
		} else {
			sim_run_until(w->s, sim_now(w->s) + rc_rand(w, 200000));
		}
		rc_reap(w);
	}
	/* No more droughts: everything still buffered or refused comes in. */
	while (w->ncompleted < w->nmsgs || !sim_run_idle(w->s, sim_now(w->s) + T_MS)) {
		for (ep = 0; ep < RC_EP; ep++)
			rc_post_recvs(w, ep, RC_SLOTS);
		sim_run_until(w->s, sim_now(w->s) + T_MS);
		rc_reap(w);
		assert_true(sim_now(w->s) < 100 * T_SEC);
	}
	for (ep = 0; ep < RC_EP; ep++)
		rc_post_recvs(w, ep, RC_SLOTS);
	assert_true(sim_run_idle(w->s, sim_now(w->s) + T_SEC));
	rc_reap(w);
	/* Not delivered though sent: only if its port closed since. */
	for (i = 0; i < w->nmsgs; i++) {
		struct rc_msg *m = &w->msgs[i];

		if (m->delivered || m->status)
			continue;	/* failed, or its sender's port closed */
		assert_true(w->closings[m->dst] > m->gen);
		undelivered++;
	}
	/* No refusal outlives its message. */
	for (ep = 0; ep < RC_NODES * RC_NODES; ep++) {
		struct fw_peer *p = fw_peer_find(sim_card(w->s, ep / RC_NODES), ep % RC_NODES);

		assert_true(!p || fw_list_empty(&p->rblocks));
	}
	t_stats_sum(w->s, &sum);
	print_message("seed %llu: %llu delivered, %llu -ENOBUFS, %llu to closed ports,",
		      (unsigned long long)seed, (unsigned long long)w->fails[2],
		      (unsigned long long)w->fails[0], (unsigned long long)w->fails[1]);
	print_message(" %u lost to closings, %llu refusals\n", undelivered,
		      (unsigned long long)sum.rnr_drops);
	assert_int_equal(sum.conn_failures, 0);
	for (ep = 0; ep < RC_EP; ep++)
		sim_detach(w->s, ep / RC_PORTS, ep % RC_PORTS);
	t_finish(w->s);
	free(w);
}

static void test_chaos(void **state)
{
	(void)state;
	t_seeds(rc_run, 1, 4);
}

/*
 * The card's budget bounds the sum over its ports: port 1 takes its own
 * budget, port 2 what the card has left, then every port is refused, even
 * one that holds nothing, until a receive frees room.  The budgets may
 * change while the card runs.
 */
static void test_card_budget(void **state)
{
	static u8 a[RN_MSG], b[RN_MSG];
	struct rn_env e;
	struct fw_card *c1;
	struct nicoff_cqe q;
	u32 i;
	u64 t0;

	(void)state;
	rn_cfg(&e.cfg, 2, 1);
	e.cfg.fw.card_unexpected_bytes = 6 * RN_MSG;
	rn_start(&e, a, sizeof(a), b, sizeof(b));
	c1 = sim_card(e.s, 1);
	assert_int_equal(sim_attach(e.s, 1, 2), 0);
	assert_int_equal(sim_attach(e.s, 1, 3), 0);
	t_fill(a, sizeof(a), 5);
	t0 = sim_now(e.s);
	for (i = 0; i < 7; i++)
		t_post(e.s, 0, 0, t_send(i, 1, i < 4 ? 1 : 2, e.ma, 0, RN_MSG, i));
	t_post(e.s, 0, 0, t_send(7, 1, 3, e.ma, 0, 1, 7));
	for (i = 0; i < 6; i++) {
		q = t_cqe(e.s, 0, 0, t0 + 10 * T_MS);
		assert_int_equal(q.tag, i);
		assert_int_equal(q.status, 0);
	}
	for (i = 0; i < 2; i++) {
		q = t_cqe(e.s, 0, 0, t0 + e.budget + e.cfg.fw.rto_max_ns + 10 * T_MS);
		assert_true(q.tag == 6 || q.tag == 7);
		assert_int_equal(q.status, -ENOBUFS);
	}
	assert_true(sim_now(e.s) - t0 >= e.budget);
	assert_int_equal(c1->unexp_used, 6 * RN_MSG);
	assert_int_equal(c1->ports[1]->unexp_used, 4 * RN_MSG);
	assert_int_equal(c1->ports[2]->unexp_used, 2 * RN_MSG);
	assert_int_equal(c1->ports[3]->unexp_used, 0);

	/* A receive on port 1 makes room on the card, for port 3 too. */
	t_post(e.s, 1, 1, t_recv(100, e.mb, 0, RN_MSG, NICOFF_ANY, NICOFF_ANY, 0, 0));
	q = t_cqe(e.s, 1, 1, sim_now(e.s) + T_MS);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.msg_tag, 0);
	assert_memory_equal(b, a, RN_MSG);
	assert_int_equal(c1->unexp_used, 5 * RN_MSG);
	t_post(e.s, 0, 0, t_send(8, 1, 3, e.ma, 0, 1, 8));
	q = t_cqe(e.s, 0, 0, sim_now(e.s) + 10 * T_MS);
	assert_int_equal(q.tag, 8);
	assert_int_equal(q.status, 0);
	/* Even a one-byte message is charged FW_UNEXP_MIN_CHARGE (msg.c). */
	assert_int_equal(c1->ports[3]->unexp_used, 512);
	assert_int_equal(c1->unexp_used, 5 * RN_MSG + 512);

	/* No card budget left at all: refused, what is buffered stays. */
	assert_int_equal(fw_set_config(c1, FW_CFG_UNEXPECTED_BYTES, 4 * RN_MSG), 0);
	assert_int_equal(fw_set_config(c1, FW_CFG_CARD_UNEXPECTED_BYTES, 0), 0);
	t0 = sim_now(e.s);
	t_post(e.s, 0, 0, t_send(9, 1, 3, e.ma, 0, 0, 9));
	q = t_cqe(e.s, 0, 0, t0 + e.budget + e.cfg.fw.rto_max_ns + 10 * T_MS);
	assert_int_equal(q.tag, 9);
	assert_int_equal(q.status, -ENOBUFS);
	assert_int_equal(c1->unexp_used, 5 * RN_MSG + 512);
	t_post(e.s, 1, 1, t_recv(101, e.mb, 0, RN_MSG, NICOFF_ANY, NICOFF_ANY, 0, 0));
	q = t_cqe(e.s, 1, 1, sim_now(e.s) + T_MS);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.msg_tag, 1);
	assert_memory_equal(b, a, RN_MSG);
	assert_int_equal(c1->unexp_used, 4 * RN_MSG + 512);
	t_finish(e.s);
}

/*
 * What an unexpected message is charged (msg.c): at least 512 bytes, and
 * its last chunk (4 KiB) rounded up to a power of two.  The budget holds
 * exactly the sum; one byte more is refused.
 */
static void test_charge_rounding(void **state)
{
	static const u32 len[4] = { 1, 513, 4096 + 600, 2049 };
	static u8 a[8192], b[4][8192];
	struct rn_env e;
	struct nicoff_cqe q;
	u32 i;
	u64 t0;

	(void)state;
	rn_cfg(&e.cfg, 2, 1);
	e.cfg.fw.unexpected_bytes = 512 + 1024 + (4096 + 1024) + 4096;
	rn_start(&e, a, sizeof(a), b, sizeof(b));
	t_fill(a, sizeof(a), 6);
	t0 = sim_now(e.s);
	for (i = 0; i < 5; i++)
		t_post(e.s, 0, 0, t_send(i, 1, 1, e.ma, 0, i < 4 ? len[i] : 1, i));
	for (i = 0; i < 4; i++) {
		q = t_cqe(e.s, 0, 0, t0 + 10 * T_MS);
		assert_int_equal(q.tag, i);
		assert_int_equal(q.status, 0);
	}
	q = t_cqe(e.s, 0, 0, t0 + e.budget + e.cfg.fw.rto_max_ns + 10 * T_MS);
	assert_int_equal(q.tag, 4);
	assert_int_equal(q.status, -ENOBUFS);
	assert_int_equal(sim_card(e.s, 1)->ports[1]->unexp_used, e.cfg.fw.unexpected_bytes);
	for (i = 0; i < 4; i++) {
		t_post(e.s, 1, 1, t_recv(10 + i, e.mb, (u64)i * 8192, 8192, NICOFF_ANY,
					 NICOFF_ANY, 0, 0));
		q = t_cqe(e.s, 1, 1, sim_now(e.s) + T_MS);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, len[i]);
		assert_memory_equal(b[i], a, len[i]);
	}
	assert_int_equal(sim_card(e.s, 1)->ports[1]->unexp_used, 0);
	assert_int_equal(sim_card(e.s, 1)->unexp_used, 0);
	t_finish(e.s);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_isolation),
		cmocka_unit_test(test_order_when_ready),
		cmocka_unit_test(test_budget_only_those),
		cmocka_unit_test(test_ports_and_regions_go),
		cmocka_unit_test(test_order_under_faults),
		cmocka_unit_test(test_chaos),
		cmocka_unit_test(test_card_budget),
		cmocka_unit_test(test_charge_rounding),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
