// SPDX-License-Identifier: GPL-2.0
/*
 * Reliability: sequence wrap-around, each fault alone and all together,
 * determinism, timeouts and new epochs, the reply watchdog, receiver not
 * ready, acknowledgments, and many peers.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fwtest.h"

#define TR_MTU		1024u
#define TR_SLOT		20480u
#define TR_SRC_SIZE	65536u

static const u32 tr_sizes[] = { 0, 1, 100, TR_MTU - 1, TR_MTU, TR_MTU + 1, 3 * TR_MTU + 5,
				20000 };
#define TR_NSIZES	(T_ARRAY_SIZE(tr_sizes))

/* Every fault at once: the runs that want them all. */
static const struct fw_fault_cfg tr_all_faults = {
	.drop_ppm = 100000, .dup_ppm = 50000, .reorder_ppm = 50000, .corrupt_ppm = 10000,
	.delay_ns = 10000,
};

static void tr_cfg(struct sim_cfg *cfg, u32 nodes, u64 seed)
{
	sim_cfg_default(cfg, nodes);
	cfg->seed = seed;
	cfg->fw.mtu = TR_MTU;
	cfg->fw.window = 16;
	cfg->fw.rto_ns = 20000;
	cfg->fw.rto_max_ns = 2000000;
	cfg->fw.max_retries = 12;
	cfg->fw.ack_delay_ns = 2000;
}

/*
 * Two cards from cfg (tr_cfg(&cfg, 2, 1), then the test's changes): a on
 * card 0 port 0 (ma), b on card 1 port 0 (mb, rkey).
 */
struct tr_env {
	struct sim_cfg cfg;
	struct sim *s;
	u32 ma, mb, rkey;
};

static void tr_start(struct tr_env *e, void *a, u64 alen, u32 a_access, void *b, u64 blen,
		     u32 b_access)
{
	e->s = sim_create(&e->cfg);
	e->ma = t_port_mr(e->s, 0, 0, a, alen, a_access, NULL);
	e->mb = t_port_mr(e->s, 1, 0, b, blen, b_access, &e->rkey);
}

/*
 * tr_start() on tr_cfg(&e->cfg, 2, 1) with @max_retries, @a locally
 * writable: the tests of a peer that dies or restarts.
 */
static void tr_start_retries(struct tr_env *e, u32 max_retries, void *a, u64 alen, void *b,
			     u64 blen, u32 b_access)
{
	tr_cfg(&e->cfg, 2, 1);
	e->cfg.fw.max_retries = max_retries;
	tr_start(e, a, alen, NICOFF_ACCESS_LOCAL_WRITE, b, blen, b_access);
}

static u32 tr_len(u32 k)
{
	return tr_sizes[k % TR_NSIZES];
}

static u64 tr_off(u32 k)
{
	return (k * 997ull) % (TR_SRC_SIZE - 20000);
}

/*
 * Every node sends @msgs messages to every node (itself included) and
 * checks that each arrives exactly once, in order and intact.
 */
static u64 tr_done_at;

static void tr_traffic(struct sim *s, u32 msgs, u64 limit)
{
	u32 n = sim_nodes(s), i, j, k;
	u8 **src = calloc(n, sizeof(*src)), **dst = calloc(n, sizeof(*dst));
	u32 *ms = calloc(n, sizeof(*ms)), *md = calloc(n, sizeof(*md));
	u32 *next = calloc(n * n, sizeof(*next));
	struct nicoff_cqe q;
	u32 sends = 0, recvs = 0;

	for (i = 0; i < n; i++) {
		src[i] = malloc(TR_SRC_SIZE);
		dst[i] = calloc((size_t)n * msgs, TR_SLOT);
		t_fill(src[i], TR_SRC_SIZE, i + 1);
		ms[i] = t_port_mr(s, i, 0, src[i], TR_SRC_SIZE, 0, NULL);
		md[i] = t_port_mr(s, i, 1, dst[i], (u64)n * msgs * TR_SLOT,
				  NICOFF_ACCESS_LOCAL_WRITE, NULL);
	}
	/* Receives first, per source in order: slot (src, k). */
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			for (k = 0; k < msgs; k++) {
				t_post(s, i, 1, t_recv(j * msgs + k, md[i],
						       (u64)(j * msgs + k) * TR_SLOT, TR_SLOT, j, 0,
						       0, 0));
			}
	for (k = 0; k < msgs; k++)
		for (i = 0; i < n; i++)
			for (j = 0; j < n; j++) {
				t_post(s, i, 0, t_send(j * msgs + k, j, 1, ms[i], tr_off(k),
						       tr_len(k), k));
			}
	while (sends + recvs < 2 * n * n * msgs) {
		bool got = false;

		for (i = 0; i < n; i++) {
			while (sim_cq_pop(s, i, 0, &q)) {
				assert_int_equal(q.status, 0);
				assert_int_equal(q.opcode, NICOFF_OP_SEND);
				assert_int_equal(q.result, tr_len(q.tag % msgs));
				sends++;
				got = true;
			}
			while (sim_cq_pop(s, i, 1, &q)) {
				u32 from = q.src_card;

				assert_int_equal(q.status, 0);
				assert_int_equal(q.tag / msgs, from);
				/* In order: the k-th receive from a source gets message k. */
				assert_int_equal(q.msg_tag, next[i * n + from]);
				assert_int_equal(q.tag % msgs, next[i * n + from]);
				next[i * n + from]++;
				assert_int_equal(q.result, tr_len(q.msg_tag));
				assert_memory_equal(dst[i] + q.tag * TR_SLOT,
						    src[from] + tr_off(q.msg_tag), q.result);
				recvs++;
				got = true;
			}
		}
		if (!got && !sim_step(s))
			break;
		assert_true(sim_now(s) <= limit);
	}
	assert_int_equal(sends, n * n * msgs);
	assert_int_equal(recvs, n * n * msgs);
	tr_done_at = sim_now(s);
	assert_true(sim_run_idle(s, sim_now(s) + 10 * T_SEC));
	for (i = 0; i < n; i++) {
		assert_int_equal(sim_cq_count(s, i, 0), 0);
		assert_int_equal(sim_cq_count(s, i, 1), 0);
		sim_detach(s, i, 0);
		sim_detach(s, i, 1);
		free(src[i]);
		free(dst[i]);
	}
	free(src);
	free(dst);
	free(ms);
	free(md);
	free(next);
}

/* The fabric's and the cards' counters must tell the same story. */
static void tr_consistent(struct sim *s, struct fw_stats *sum)
{
	const struct sim_stats *ss = sim_stats(s);

	t_stats_sum(s, sum);
	assert_int_equal(sum->tx_pkts, ss->sent);
	assert_int_equal(sum->rx_pkts + sum->crc_errors, ss->delivered);
	assert_int_equal(sum->crc_errors, ss->corrupted);
	assert_int_equal(ss->sent + ss->dups, ss->delivered + ss->dropped + ss->dead);
	assert_int_equal(sum->conn_failures, 0);
	assert_int_equal(sum->unexpected, 0);
	assert_int_equal(sum->rnr_drops, 0);
}

static void test_seq_wrap(void **state)
{
	struct sim_cfg cfg;
	struct sim *s;
	struct fw_stats sum;
	struct fw_peer *p;

	(void)state;
	tr_cfg(&cfg, 2, 5);
	cfg.fw.initial_seq = 0xffffffc0u;
	cfg.faults.drop_ppm = 50000;
	s = sim_create(&cfg);
	tr_traffic(s, 40, 10 * T_SEC);
	/* Both streams crossed 2^32 and went on. */
	p = fw_peer_find(sim_card(s, 0), 1);
	assert_non_null(p);
	assert_true(p->snd_nxt < 0x10000u);
	p = fw_peer_find(sim_card(s, 1), 0);
	assert_true(p->rcv_nxt < 0x10000u);
	p = fw_peer_find(sim_card(s, 1), 1);
	assert_true(p->snd_nxt < 0x10000u && p->rcv_nxt == p->snd_nxt);
	tr_consistent(s, &sum);
	assert_true(sum.retransmits > 0);
	t_finish(s);
}

struct tr_fault {
	const char *name;
	struct fw_fault_cfg f;
};

static void test_each_fault(void **state)
{
	static const struct tr_fault faults[] = {
		{ "none", { 0 } },
		{ "drop", { .drop_ppm = 100000 } },
		{ "dup", { .dup_ppm = 100000 } },
		{ "corrupt", { .corrupt_ppm = 50000 } },
		{ "reorder", { .reorder_ppm = 100000, .delay_ns = 10000 } },
		{ "delay", { .delay_ppm = 200000, .delay_ns = 50000 } },
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < T_ARRAY_SIZE(faults); i++) {
		struct sim_cfg cfg;
		struct fw_stats sum;
		const struct sim_stats *ss;
		struct sim *s;

		tr_cfg(&cfg, 3, 100 + i);
		cfg.faults = faults[i].f;
		s = sim_create(&cfg);
		tr_traffic(s, 24, 20 * T_SEC);
		tr_consistent(s, &sum);
		ss = sim_stats(s);
		print_message("%-8s t=%6llu us pkts %llu retx %llu", faults[i].name,
			      (unsigned long long)tr_done_at / 1000,
			      (unsigned long long)ss->sent, (unsigned long long)sum.retransmits);
		print_message(" dup %llu ooo %llu crc %llu acks %llu\n",
			      (unsigned long long)sum.duplicates,
			      (unsigned long long)sum.out_of_order,
			      (unsigned long long)sum.crc_errors, (unsigned long long)sum.tx_acks);
		switch (i) {
		case 0:
			assert_int_equal(sum.retransmits, 0);
			assert_int_equal(sum.duplicates + sum.out_of_order + sum.crc_errors, 0);
			break;
		case 1:
			assert_true(ss->dropped > 0 && sum.retransmits > 0 && sum.timeouts > 0);
			break;
		case 2:
			assert_true(ss->dups > 0 && sum.duplicates >= ss->dups / 2);
			break;
		case 3:
			assert_true(ss->corrupted > 0 && sum.retransmits > 0);
			break;
		default:
			assert_true(sum.out_of_order > 0);
			break;
		}
		t_finish(s);
	}
}

static void test_all_faults(void **state)
{
	struct sim_cfg cfg;
	struct fw_stats sum;
	const struct sim_stats *ss;
	struct sim *s;

	(void)state;
	tr_cfg(&cfg, 4, 2024);
	cfg.faults = tr_all_faults;
	s = sim_create(&cfg);
	tr_traffic(s, 32, 60 * T_SEC);
	tr_consistent(s, &sum);
	ss = sim_stats(s);
	print_message("all: t=%llu us pkts %llu dropped %llu dups %llu corrupted %llu",
		      (unsigned long long)tr_done_at / 1000, (unsigned long long)ss->sent,
		      (unsigned long long)ss->dropped, (unsigned long long)ss->dups,
		      (unsigned long long)ss->corrupted);
	print_message(" retx %llu timeouts %llu dup %llu ooo %llu\n",
		      (unsigned long long)sum.retransmits,
		      (unsigned long long)sum.timeouts, (unsigned long long)sum.duplicates,
		      (unsigned long long)sum.out_of_order);
	assert_true(ss->dropped && ss->dups && ss->corrupted && ss->reorders);
	assert_true(sum.retransmits && sum.duplicates && sum.out_of_order && sum.crc_errors);
	t_finish(s);
}

/* Same seed, same run: to the nanosecond and the counter. */
static void test_determinism(void **state)
{
	struct fw_stats a, b;
	u64 ta, tb;
	int run;

	(void)state;
	for (run = 0; run < 2; run++) {
		struct sim_cfg cfg;
		struct sim *s;

		tr_cfg(&cfg, 3, 77);
		cfg.faults = tr_all_faults;
		s = sim_create(&cfg);
		tr_traffic(s, 8, 10 * T_SEC);
		t_stats_sum(s, run ? &b : &a);
		if (run)
			tb = sim_now(s);
		else
			ta = sim_now(s);
		t_finish(s);
	}
	assert_int_equal(ta, tb);
	assert_memory_equal(&a, &b, sizeof(a));
}

/* A dead peer: every operation fails within the retry budget; then a new
 * epoch works once it is back.
 */
static void test_timeout(void **state)
{
	static u8 a[100000], b[100000];
	struct tr_env e;
	struct fw_stats st;
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	u64 t0, budget = 0, rto;
	int i;

	(void)state;
	tr_start_retries(&e, 8, a, sizeof(a), b, sizeof(b), NICOFF_ACCESS_ALL);
	for (i = 0, rto = e.cfg.fw.rto_ns; i <= (int)e.cfg.fw.max_retries; i++) {
		budget += rto;
		rto = rto * 2 > e.cfg.fw.rto_max_ns ? e.cfg.fw.rto_max_ns : rto * 2;
	}

	sim_set_dead(e.s, 1, true);
	t0 = sim_now(e.s);
	c = t_send(1, 1, 0, e.ma, 0, 50000, 0);	/* several windows */
	sim_post(e.s, 0, 0, &c);
	t_post(e.s, 0, 0, t_send(2, 1, 0, e.ma, 0, 10, 0));
	t_post(e.s, 0, 0, t_rdma(NICOFF_OP_PUT, 3, 1, 0, e.rkey, 0, e.ma, 0, 3000));
	t_post(e.s, 0, 0, t_rdma(NICOFF_OP_GET, 4, 1, 0, e.rkey, 0, e.ma, 0, 3000));
	for (i = 0; i < 4; i++) {
		q = t_cqe(e.s, 0, 0, t0 + budget + e.cfg.fw.rto_ns);
		assert_int_equal(q.tag, i + 1);
		assert_int_equal(q.status, -ETIMEDOUT);
	}
	print_message("failed after %llu us (budget %llu us)\n",
		      (unsigned long long)(sim_now(e.s) - t0) / 1000,
		      (unsigned long long)budget / 1000);
	fw_get_stats(sim_card(e.s, 0), &st);
	assert_int_equal(st.conn_failures, 1);
	assert_int_equal(st.timeouts, e.cfg.fw.max_retries + 1);
	assert_true(sim_run_idle(e.s, sim_now(e.s) + T_SEC));

	/* Back: the next packet opens a new epoch and the receiver follows. */
	sim_set_dead(e.s, 1, false);
	t_fill(a, sizeof(a), 12);
	t_post(e.s, 1, 0, t_recv(5, e.mb, 0, sizeof(b), 0, 0, 0, 0));
	t_post(e.s, 0, 0, t_send(6, 1, 0, e.ma, 0, 50000, 0));
	assert_int_equal(t_cqe(e.s, 0, 0, sim_now(e.s) + T_SEC).status, 0);
	q = t_cqe(e.s, 1, 0, sim_now(e.s) + T_SEC);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, 50000);
	assert_memory_equal(a, b, 50000);
	assert_int_equal(fw_peer_find(sim_card(e.s, 0), 1)->epoch, e.cfg.fw.epoch + 1);
	assert_int_equal(fw_peer_find(sim_card(e.s, 1), 0)->rx_epoch, e.cfg.fw.epoch + 1);
	t_post(e.s, 0, 0, t_rdma(NICOFF_OP_GET, 7, 1, 0, e.rkey, 0, e.ma, 0, 3000));
	q = t_cqe(e.s, 0, 0, sim_now(e.s) + T_SEC);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, 3000);
	t_finish(e.s);
}

/*
 * A message (tag @tag) of @len bytes from card @from's region to offset 0
 * of the other card's, into a receive of @cap bytes posted first on the
 * other card, from @from: the receive, then the send, complete by @limit.
 */
static void tr_msg(struct tr_env *e, u32 from, u64 tag, u64 len, u64 cap, u64 limit)
{
	u32 to = !from;

	t_post(e->s, to, 0, t_recv(tag, to ? e->mb : e->ma, 0, cap, from, 0, 0, 0));
	t_post(e->s, from, 0, t_send(tag, to, 0, from ? e->mb : e->ma, 0, len, 0));
	assert_int_equal(t_cqe(e->s, to, 0, limit).status, 0);
	assert_int_equal(t_cqe(e->s, from, 0, limit).status, 0);
}

/* A card restarts: its peer's first operation may fail, the next work. */
static void test_restart(void **state)
{
	static u8 a[5000], b[5000];
	struct tr_env e;
	struct nicoff_cqe q;
	int i;

	(void)state;
	tr_start_retries(&e, 6, a, sizeof(a), b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE);
	for (i = 0; i < 2; i++) {
		tr_msg(&e, 0, i, 5000, sizeof(b), T_SEC);
		tr_msg(&e, 1, i, 5000, sizeof(a), T_SEC);
	}
	assert_int_equal(sim_restart(e.s, 1, 1000), 0);
	e.mb = t_port_mr(e.s, 1, 0, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);

	/* Restarted -> old peer: a new epoch from the start, accepted at once. */
	tr_msg(&e, 1, 9, 4000, sizeof(a), sim_now(e.s) + T_SEC);

	/* Old peer -> restarted: its stream is unknown there, so it fails once. */
	for (i = 0; i < 2; i++)
		t_post(e.s, 1, 0, t_recv(10 + i, e.mb, 0, sizeof(b), 0, 0, 0, 0));
	t_post(e.s, 0, 0, t_send(10, 1, 0, e.ma, 0, 100, 0));
	q = t_cqe(e.s, 0, 0, sim_now(e.s) + T_SEC);
	assert_true(q.status == -ETIMEDOUT || q.status == 0);
	t_post(e.s, 0, 0, t_send(11, 1, 0, e.ma, 0, 100, 0));
	assert_int_equal(t_cqe(e.s, 0, 0, sim_now(e.s) + T_SEC).status, 0);
	q = t_cqe(e.s, 1, 0, sim_now(e.s) + T_SEC);
	assert_int_equal(q.status, 0);
	t_finish(e.s);
}

/*
 * 100 us into a transfer that card 0 waits on, card 1 dies: card 0's
 * watchdog asks it after dead_ns of silence and fails the transfer with
 * -ETIMEDOUT (*q) once the question went unanswered for the retry budget
 * (about dead_ns again).  Returns the moment card 1 died.
 */
static u64 tr_peer_dies(struct tr_env *e, struct nicoff_cqe *q)
{
	u64 t0;

	sim_run_until(e->s, sim_now(e->s) + 100000);
	assert_int_equal(sim_cq_count(e->s, 0, 0), 0);
	sim_set_dead(e->s, 1, true);
	t0 = sim_now(e->s);
	*q = t_cqe(e->s, 0, 0, t0 + 2 * sim_card(e->s, 0)->dead_ns + T_MS);
	assert_int_equal(q->status, -ETIMEDOUT);
	return t0;
}

/* A peer dies while it owes us data: the watchdog ends the wait. */
static void test_watchdog(void **state)
{
	const u64 big = 4ull << 20;
	u8 *a = calloc(1, big), *b = calloc(1, big);
	struct tr_env e;
	struct nicoff_cqe q;
	u64 t0;

	(void)state;
	tr_start_retries(&e, 6, a, big, b, big, NICOFF_ACCESS_ALL);

	/* A GET whose answer stops half way. */
	t_post(e.s, 0, 0, t_rdma(NICOFF_OP_GET, 1, 1, 0, e.rkey, 0, e.ma, 0, big));
	t0 = tr_peer_dies(&e, &q);
	print_message("get failed %llu us after the peer died\n",
		      (unsigned long long)(sim_now(e.s) - t0) / 1000);
	assert_true(sim_run_idle(e.s, sim_now(e.s) + T_SEC));

	/* A message whose sender dies half way. */
	sim_set_dead(e.s, 1, false);
	t_post(e.s, 0, 0, t_recv(2, e.ma, 0, big, 1, 0, 0, 0));
	t_post(e.s, 1, 0, t_send(3, 0, 0, e.mb, 0, big, 0));
	t0 = tr_peer_dies(&e, &q);
	assert_int_equal(q.tag, 2);
	q = t_cqe(e.s, 1, 0, t0 + 2 * sim_card(e.s, 1)->dead_ns + T_MS);
	assert_int_equal(q.status, -ETIMEDOUT);
	t_finish(e.s);
	free(a);
	free(b);
}

/*
 * 100 us into a 4 MiB message from card 1 to card 0 and a 4 MiB GET by
 * card 0 from card 1, the host stops running card i from from[i] to
 * to[i] (percent of dead_ns), as a host that does not
 * schedule a card thread.  Card 1
 * owes card 0 the rest of both and says nothing meanwhile; it is alive,
 * so both transfers complete intact and no connection fails.  Returns
 * the silence probes card 0 sent.
 */
static u64 tr_stall(const u64 from[2], const u64 to[2])
{
	const u64 big = 4ull << 20;
	u8 *a = calloc(1, 2 * big), *b = malloc(2 * big);
	u64 t0, limit, tags = 0;
	struct fw_stats st;
	struct nicoff_cqe q;
	struct tr_env e;
	u32 i;

	t_fill(b, 2 * big, 7);
	tr_cfg(&e.cfg, 2, 1);
	tr_start(&e, a, 2 * big, NICOFF_ACCESS_LOCAL_WRITE, b, 2 * big, NICOFF_ACCESS_ALL);
	t_post(e.s, 0, 0, t_recv(1, e.ma, 0, big, 1, 0, 0, 0));
	t_post(e.s, 0, 0, t_rdma(NICOFF_OP_GET, 2, 1, 0, e.rkey, big, e.ma, big, big));
	t_post(e.s, 1, 0, t_send(3, 0, 0, e.mb, 0, big, 0));
	sim_run_until(e.s, sim_now(e.s) + 100000);
	assert_int_equal(sim_cq_count(e.s, 0, 0), 0);
	t0 = sim_now(e.s);
	for (i = 0; i < 2; i++) {
		u32 c = (from[1] < from[0]) ^ i;	/* the earlier stall first */

		sim_run_until(e.s, t0 + sim_card(e.s, c)->dead_ns * from[c] / 100);
		sim_stall(e.s, c, t0 + sim_card(e.s, c)->dead_ns * to[c] / 100);
	}
	limit = t0 + 5 * sim_card(e.s, 0)->dead_ns;
	for (i = 0; i < 2; i++) {
		q = t_cqe(e.s, 0, 0, limit);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, big);
		tags |= 1ull << q.tag;
	}
	assert_int_equal(tags, 6);
	q = t_cqe(e.s, 1, 0, limit);
	assert_int_equal(q.tag, 3);
	assert_int_equal(q.status, 0);
	assert_true(t_check(a, 2 * big, 7));
	fw_get_stats(sim_card(e.s, 0), &st);
	assert_int_equal(st.conn_failures, 0);
	fw_get_stats(sim_card(e.s, 1), &st);
	assert_int_equal(st.conn_failures, 0);
	fw_get_stats(sim_card(e.s, 0), &st);
	t_finish(e.s);
	free(a);
	free(b);
	return st.silence_probes;
}

/*
 * Silence is no proof of death.  A sender stopped for one and a half dead
 * times while its receiver runs; a host that stops running both cards
 * for about three, the receiver from half a dead time later and resuming
 * a quarter before the sender (an engine thread serves its cards in
 * turn, and the first one served finds its watchdog long due): each
 * leaves a live peer that answers when asked.
 */
static void test_stall(void **state)
{
	static const u64 sender_from[2] = { 0, 0 }, sender_to[2] = { 0, 150 };
	static const u64 host_from[2] = { 50, 0 }, host_to[2] = { 275, 300 };

	(void)state;
	assert_true(tr_stall(sender_from, sender_to) >= 1);
	assert_true(tr_stall(host_from, host_to) >= 1);
}

/*
 * Card 0 waits for a GET's answer; cut off for one and a half dead times,
 * it makes card 1's stream to it fail, and card 1, with the answer
 * dropped, has nothing more to send it.  Card 0's question, answered once
 * the link is back, comes from card 1's new epoch: the GET fails with
 * -ECONNRESET at once, not after rounds of probes.
 */
static void test_epoch_reset(void **state)
{
	const u64 big = 4ull << 20;
	u8 *a = calloc(1, big), *b = calloc(1, big);
	struct fw_stats st0, st1;
	struct nicoff_cqe q;
	struct tr_env e;
	u64 t0, dead;

	(void)state;
	tr_cfg(&e.cfg, 2, 1);
	tr_start(&e, a, big, NICOFF_ACCESS_LOCAL_WRITE, b, big, NICOFF_ACCESS_ALL);
	dead = sim_card(e.s, 0)->dead_ns;
	t_post(e.s, 0, 0, t_rdma(NICOFF_OP_GET, 1, 1, 0, e.rkey, 0, e.ma, 0, big));
	sim_run_until(e.s, sim_now(e.s) + 100000);
	assert_int_equal(sim_cq_count(e.s, 0, 0), 0);
	t0 = sim_now(e.s);
	sim_set_dead(e.s, 0, true);
	sim_run_until(e.s, t0 + dead * 3 / 2);
	assert_int_equal(sim_cq_count(e.s, 0, 0), 0);
	sim_set_dead(e.s, 0, false);
	q = t_cqe(e.s, 0, 0, t0 + 2 * dead);
	assert_int_equal(q.tag, 1);
	assert_int_equal(q.status, -ECONNRESET);
	fw_get_stats(sim_card(e.s, 0), &st0);
	fw_get_stats(sim_card(e.s, 1), &st1);
	assert_int_equal(st0.epoch_resets, 1);
	assert_true(st0.silence_probes >= 1);
	assert_int_equal(st0.conn_failures, 0);
	assert_int_equal(st1.conn_failures, 1);
	t_finish(e.s);
	free(a);
	free(b);
}

/* More than the unexpected buffer: refused unacknowledged, then recovered. */
static void test_rnr(void **state)
{
	static u8 a[65536], b[6][65536];
	struct tr_env e;
	struct fw_stats st;
	struct nicoff_cqe q;
	int i;

	(void)state;
	tr_cfg(&e.cfg, 2, 1);
	e.cfg.fw.unexpected_bytes = 8192;
	tr_start(&e, a, sizeof(a), 0, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE);
	t_fill(a, sizeof(a), 5);
	/* 4 KiB, 4 KiB fit; then 4 KiB, 64 KiB (never fits), 10 B wait. */
	for (i = 0; i < 5; i++) {
		static const u32 len[] = { 4096, 4096, 4096, 65536, 10 };

		t_post(e.s, 0, 0, t_send(i, 1, 0, e.ma, 0, len[i], i));
	}
	sim_run_until(e.s, sim_now(e.s) + T_MS);
	fw_get_stats(sim_card(e.s, 1), &st);
	assert_true(st.rnr_drops > 0);
	assert_int_equal(st.unexpected, 2);
	for (i = 0; i < 5; i++)
		t_post(e.s, 1, 0, t_recv(i, e.mb, (u64)i * 65536, 65536, 0, 0, 0, 0));
	for (i = 0; i < 5; i++) {
		q = t_cqe(e.s, 1, 0, sim_now(e.s) + T_SEC);
		assert_int_equal(q.status, 0);
		assert_int_equal(q.tag, i);
		assert_int_equal(q.msg_tag, i);
		assert_memory_equal(b[i], a, q.result);
	}
	for (i = 0; i < 5; i++)
		t_expect(e.s, 0, 0, i, 0);
	fw_get_stats(sim_card(e.s, 1), &st);
	print_message("rnr drops %llu, unexpected %llu\n", (unsigned long long)st.rnr_drops,
		      (unsigned long long)st.unexpected);
	assert_int_equal(st.unexpected, 2);
	assert_int_equal(sim_card(e.s, 1)->ports[0]->unexp_used, 0);
	t_finish(e.s);
}

/* Acknowledgments: at once for a lone message, coalesced in a burst. */
static void test_acks(void **state)
{
	static u8 a[64], b[64 * 256];
	struct tr_env e;
	struct fw_stats st0, st1, e0, e1;
	u64 t0;
	int i;

	(void)state;
	tr_cfg(&e.cfg, 2, 1);
	e.cfg.fw.ack_delay_ns = 50000;
	tr_start(&e, a, sizeof(a), 0, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE);

	/* Nothing else to send: ACKREQ, and the send completes in one round trip. */
	t_post(e.s, 1, 0, t_recv(0, e.mb, 0, 64, 0, 0, 0, 0));
	t0 = sim_now(e.s);
	t_post(e.s, 0, 0, t_send(0, 1, 0, e.ma, 0, 64, 0));
	assert_int_equal(t_cqe(e.s, 0, 0, T_SEC).status, 0);
	assert_true(sim_now(e.s) - t0 < 5000);
	assert_int_equal(t_cqe(e.s, 1, 0, T_SEC).status, 0);

	/* A burst of 256 one-packet messages: one ACK per quarter window or so. */
	fw_get_stats(sim_card(e.s, 0), &st0);
	fw_get_stats(sim_card(e.s, 1), &st1);
	for (i = 0; i < 256; i++)
		t_post(e.s, 1, 0, t_recv(i, e.mb, 64 * i, 64, 0, 0, 0, 0));
	for (i = 0; i < 256; i++)
		t_post(e.s, 0, 0, t_send(i, 1, 0, e.ma, 0, 64, 0));
	for (i = 0; i < 256; i++) {
		assert_int_equal(t_cqe(e.s, 0, 0, sim_now(e.s) + T_SEC).status, 0);
		assert_int_equal(t_cqe(e.s, 1, 0, sim_now(e.s) + T_SEC).status, 0);
	}
	assert_true(sim_run_idle(e.s, sim_now(e.s) + T_SEC));
	fw_get_stats(sim_card(e.s, 0), &e0);
	fw_get_stats(sim_card(e.s, 1), &e1);
	print_message("burst of 256: %llu acks\n", (unsigned long long)(e1.tx_acks - st1.tx_acks));
	assert_int_equal(e0.tx_acks, st0.tx_acks);
	assert_true(e1.tx_acks - st1.tx_acks <= 256 / 4 + 256 / 16 + 2);
	assert_int_equal(e0.retransmits, 0);
	t_finish(e.s);
}

/* Many peers: state only for those met, and timers for those active. */
static void test_many_peers(void **state)
{
	const u32 n = 3000;
	struct sim_cfg cfg;
	struct sim *s;
	static u8 a[256], b[256 * 8];
	u32 i, mb, got = 0;
	u32 *ma = calloc(n, sizeof(*ma));

	(void)state;
	tr_cfg(&cfg, n, 3);
	cfg.faults.drop_ppm = 20000;
	s = sim_create(&cfg);
	mb = t_port_mr(s, 0, 0, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	for (i = 1; i < n; i++) {
		ma[i] = t_port_mr(s, i, 0, a, sizeof(a), 0, NULL);
		t_post(s, i, 0, t_send(i, 0, 0, ma[i], 0, 1 + i % 256, i));
	}
	for (i = 0; i < n - 1; i++)
		t_post(s, 0, 0, t_recv(i, mb, (i % 8) * 256, 256, NICOFF_ANY, NICOFF_ANY, 0, 0));
	for (i = 0; i < n - 1; i++) {
		struct nicoff_cqe q = t_cqe(s, 0, 0, sim_now(s) + T_SEC);

		assert_int_equal(q.status, 0);
		assert_int_equal(q.result, 1 + q.src_card % 256);
		assert_int_equal(q.msg_tag, q.src_card);
		got++;
	}
	assert_int_equal(got, n - 1);
	assert_true(sim_run_idle(s, sim_now(s) + T_SEC));
	assert_int_equal(sim_card(s, 0)->npeers, n - 1);
	assert_int_equal(sim_card(s, 0)->timers.n, 0);
	assert_int_equal(sim_card(s, 7)->npeers, 1);
	for (i = 1; i < n; i++) {
		struct nicoff_cqe q;

		assert_true(sim_cq_pop(s, i, 0, &q));
		assert_int_equal(q.status, 0);
	}
	free(ma);
	t_finish(s);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_seq_wrap),
		cmocka_unit_test(test_each_fault),
		cmocka_unit_test(test_all_faults),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_watchdog),
		cmocka_unit_test(test_stall),
		cmocka_unit_test(test_epoch_reset),
		cmocka_unit_test(test_rnr),
		cmocka_unit_test(test_acks),
		cmocka_unit_test(test_many_peers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
