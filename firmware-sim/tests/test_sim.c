// SPDX-License-Identifier: GPL-2.0
/*
 * The simulator: its LogGP fabric against the formulas of SIMULATOR.md,
 * determinism under faults, every workload delivering each message exactly
 * once (a ring of 4,096 nodes among them), the host's CRC-32C against its
 * definition, and that a run measures itself.  No test looks at how fast it ran.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fwtest.h"
#include "nsim.h"

static double s_metric(const struct nsim *ns, const char *name)
{
	u32 i;

	for (i = 0; i < ns->nmetrics; i++)
		if (!strcmp(ns->metrics[i].name, name))
			return ns->metrics[i].value;
	fail_msg("no metric %s", name);
	return 0;
}

static void s_params(struct nsim_params *p, const char *workload, u32 nodes)
{
	nsim_params_default(p);
	p->workload = workload;
	p->nodes = nodes;
	p->verify = true;
}

static struct nsim *s_run(const struct nsim_params *p)
{
	struct nsim *ns = calloc(1, sizeof(*ns));

	assert_non_null(ns);
	assert_int_equal(nsim_run(ns, p), 0);
	if (ns->errors)
		fail_msg("%s on %u nodes: %llu errors, first: %s", p->workload, p->nodes,
			 (unsigned long long)ns->errors, ns->first_error);
	assert_true(ns->idle);
	assert_int_equal(ns->leaks, 0);
	return ns;
}

/* G: link time of @bytes, as the fabric rounds it. */
static u64 s_ser(const struct sim_cfg *c, u64 bytes)
{
	return bytes * c->byte_ps / 1000;
}

/*
 * Half a round trip of a one-packet message of @m bytes: the sender's o,
 * L, G for header and payload, the receiver's o; and, ahead of each answer,
 * the o of the ACK the receiving card sends first (its link is then busy
 * for g + 96 G, which may hold the answer back further).
 */
static u64 s_half_rtt(const struct sim_cfg *c, u64 m)
{
	u64 ack = c->gap_ns + s_ser(c, FW_PKT_HDR_SIZE);

	return 2 * c->overhead_ns + (ack > c->overhead_ns ? ack : c->overhead_ns) + c->latency_ns +
	       s_ser(c, FW_PKT_HDR_SIZE + m);
}

static void test_pingpong_formula(void **state)
{
	static const struct {
		u64 L;
		u32 o, g, byte_ps;
	} models[] = {
		{ SIM_DEFAULT_L_NS, SIM_DEFAULT_O_NS, SIM_DEFAULT_G_NS, SIM_DEFAULT_BYTE_PS },
		{ 2500, 1500, 1000, 6000 },	/* LogGOPSim's defaults */
		{ 700, 100, 400, 80 },		/* g + 96 G > o: the ACK holds the link */
		{ 1000, 0, 0, 100 },		/* the unit tests' fabric */
	};
	static const u64 sizes[] = { 0, 8, 1000, 4000 };
	unsigned int i, j;

	(void)state;
	for (i = 0; i < T_ARRAY_SIZE(models); i++)
		for (j = 0; j < T_ARRAY_SIZE(sizes); j++) {
			struct nsim_params p;
			struct nsim *ns;
			u64 want;
			double got;

			s_params(&p, "pingpong", 2);
			p.cfg.latency_ns = models[i].L;
			p.cfg.overhead_ns = models[i].o;
			p.cfg.gap_ns = models[i].g;
			p.cfg.byte_ps = models[i].byte_ps;
			p.size = sizes[j];
			p.iters = 20;
			p.warmup = 2;
			ns = s_run(&p);
			want = s_half_rtt(&p.cfg, sizes[j]);
			got = s_metric(ns, "latency_us");
			if ((u64)(got * 1000 + 0.5) != want)
				fail_msg("model %u, %llu bytes: %.4f us, formula %llu ns", i,
					 (unsigned long long)sizes[j], got,
					 (unsigned long long)want);
			assert_true(s_metric(ns, "rtt_us") == 2 * got);
			free(ns);
		}
}

/*
 * Messages of many packets stream at the link's rate: each packet more
 * costs g + (mtu + 96) G on the way there and back, as long as the link,
 * not the card's o, is the bottleneck.
 */
static void test_pingpong_bandwidth(void **state)
{
	const u64 small = 16 * 4096, big = 64 * 4096;
	struct nsim_params p;
	struct nsim *ns;
	double a, b, per_pkt, want;

	(void)state;
	s_params(&p, "pingpong", 2);
	p.cfg.byte_ps = 200;		/* 5 GB/s: 838 ns a full packet */
	p.iters = 6;
	p.size = small;
	ns = s_run(&p);
	a = s_metric(ns, "latency_us");
	free(ns);
	p.size = big;
	ns = s_run(&p);
	b = s_metric(ns, "latency_us");
	free(ns);
	per_pkt = (b - a) * 1000 / ((big - small) / 4096);
	want = (double)(p.cfg.gap_ns + s_ser(&p.cfg, 4096 + FW_PKT_HDR_SIZE));
	print_message("%llu B: %.2f us, %llu B: %.2f us: %.1f ns a packet (g + s G = %.0f)\n",
		      (unsigned long long)small, a, (unsigned long long)big, b, per_pkt, want);
	assert_true(per_pkt > want * 0.99 && per_pkt < want * 1.01);
}

/* Two cards send to a third at once: its link takes one packet after the other. */
static u64 s_incast_t[3];

static void s_incast_cqe(void *arg, u32 node, u32 port, const struct nicoff_cqe *cqe, u64 t)
{
	(void)arg;
	(void)port;
	if (cqe->opcode == NICOFF_OP_RECV) {
		assert_int_equal(node, 0);
		assert_int_equal(cqe->status, 0);
		s_incast_t[cqe->src_card] = t;
	}
}

static void test_incast(void **state)
{
	static u8 buf[3][4096];
	struct sim_hooks hooks = { .cqe = s_incast_cqe };
	struct sim_cfg cfg;
	struct sim *s;
	u32 mr[3], n;
	u64 ser, first, second;

	(void)state;
	sim_cfg_default(&cfg, 3);
	cfg.byte_ps = 1000;		/* 1 ns a byte */
	cfg.overhead_ns = 50;
	s = sim_create(&cfg);
	sim_set_hooks(s, &hooks);
	for (n = 0; n < 3; n++)
		mr[n] = t_port_mr(s, n, 0, buf[n], sizeof(buf[n]), NICOFF_ACCESS_LOCAL_WRITE,
				  NULL);
	for (n = 1; n < 3; n++)
		t_post(s, 0, 0, t_recv(n, mr[0], n * 1024, 1024, n, 0, 0, ~0ull));
	for (n = 1; n < 3; n++)
		t_post(s, n, 0, t_send(n, 0, 0, mr[n], 0, 1000, 0));
	assert_true(sim_run_idle(s, T_SEC));
	ser = 1096;
	first = s_incast_t[1] < s_incast_t[2] ? s_incast_t[1] : s_incast_t[2];
	second = s_incast_t[1] < s_incast_t[2] ? s_incast_t[2] : s_incast_t[1];
	/* o, the packet's G, L, o; then the second waits for the link. */
	assert_int_equal(first, 50 + ser + cfg.latency_ns + 50);
	assert_int_equal(second, first + ser);
	t_finish(s);
}

static void s_fault_params(struct nsim_params *p, u64 seed)
{
	s_params(p, "ring", 256);
	p->iters = 5;
	p->cfg.seed = seed;
	p->cfg.fw.rto_ns = 20000;
	p->cfg.faults.drop_ppm = 20000;
	p->cfg.faults.dup_ppm = 10000;
	p->cfg.faults.corrupt_ppm = 10000;
	p->cfg.faults.reorder_ppm = 10000;
	p->cfg.faults.delay_ppm = 10000;
	p->cfg.faults.delay_ns = 5000;
}

/* Same seed, same run, to the event and the counter; faults or not, exactly once. */
static void test_determinism(void **state)
{
	struct nsim_params p;
	struct nsim *a, *b, *c;

	(void)state;
	s_fault_params(&p, 7);
	a = s_run(&p);
	b = s_run(&p);
	s_fault_params(&p, 8);
	c = s_run(&p);
	print_message("faults: %llu events, %llu dropped, %llu retransmits, %.2f us\n",
		      (unsigned long long)a->stats.events, (unsigned long long)a->stats.dropped,
		      (unsigned long long)a->fw.retransmits, s_metric(a, "completion_us"));
	assert_true(a->stats.dropped && a->stats.dups && a->stats.corrupted &&
		    a->stats.reorders && a->stats.delays && a->fw.retransmits);
	assert_memory_equal(&a->stats, &b->stats, sizeof(a->stats));
	assert_memory_equal(&a->fw, &b->fw, sizeof(a->fw));
	assert_int_equal(a->end_ns, b->end_ns);
	assert_int_equal(a->t_done, b->t_done);
	assert_true(s_metric(a, "messages") == 256 * 5 && s_metric(c, "messages") == 256 * 5);
	assert_true(memcmp(&a->stats, &c->stats, sizeof(a->stats)) || a->t_done != c->t_done);
	free(a);
	free(b);
	free(c);
}

static void test_ring_4096(void **state)
{
	struct nsim_params p;
	struct nsim *ns;

	(void)state;
	s_params(&p, "ring", 4096);
	p.iters = 3;
	ns = s_run(&p);
	/* The workload checked order, sources and contents; the fabric agrees. */
	assert_true(s_metric(ns, "messages") == 4096 * 3);
	assert_int_equal(ns->fw.retransmits + ns->fw.duplicates + ns->fw.out_of_order, 0);
	assert_int_equal(ns->stats.delivered, 2 * 4096 * 3);	/* a message and its ACK */
	assert_int_equal(ns->stats.completions, 2 * 4096 * 3);
	free(ns);
}

static void test_workloads(void **state)
{
	static const char *const names[] = { "alltoall-sparse", "random", "dissemination" };
	static const u32 nodes[] = { 2, 3, 100, 256 };
	unsigned int i, j;

	(void)state;
	for (i = 0; i < T_ARRAY_SIZE(names); i++)
		for (j = 0; j < T_ARRAY_SIZE(nodes); j++) {
			struct nsim_params p;
			struct nsim *ns;
			u32 rounds = 0;

			s_params(&p, names[i], nodes[j]);
			p.iters = 3;
			p.size = 100;
			ns = s_run(&p);
			if (i == 2) {
				while ((1u << rounds) < nodes[j])
					rounds++;
				assert_true(s_metric(ns, "messages") ==
					    (double)nodes[j] * 3 * rounds);
			} else if (i == 1) {
				assert_true(s_metric(ns, "messages") == (double)nodes[j] * 3 * 4);
			}
			free(ns);
		}
}

/*
 * Broadcasts run by the cards: one data packet per 8-byte broadcast,
 * multicast once (one run of cards: all) or sent down the tree (none
 * multicast), one synchronisation per 16 (the default channels).
 */
static void test_bcast(void **state)
{
	static const char *const names[] = { "bcast", "bcast-p2p", "bcast-nocrc" };
	unsigned int i;

	(void)state;
	for (i = 0; i < T_ARRAY_SIZE(names); i++) {
		struct nsim_params p;
		struct nsim *ns;

		s_params(&p, names[i], 13);
		p.iters = 160;
		p.warmup = 16;
		ns = s_run(&p);
		assert_true(s_metric(ns, "bcast_pkts_per_bcast") == 1);
		/* And rank 0's verdict, one per round. */
		assert_true(s_metric(ns, "bcast_mcasts_per_bcast") == (i == 1 ? 0 : 1 + 1.0 / 16));
		assert_true(s_metric(ns, "syncs_per_bcast") == 1.0 / 16);
		assert_true(s_metric(ns, "bcast_resends") == 0);
		free(ns);
	}
}

static void test_refuses(void **state)
{
	struct nsim_params p;
	struct nsim *ns = calloc(1, sizeof(*ns));

	(void)state;
	s_params(&p, "pingpong", 2);
	p.iters = 1;
	assert_int_equal(nsim_run(ns, &p), -EINVAL);
	s_params(&p, "nope", 4);
	assert_int_equal(nsim_run(ns, &p), -EINVAL);
	s_params(&p, "ring", 1);
	assert_int_equal(nsim_run(ns, &p), -EINVAL);
	free(ns);
}

/* A run measures itself: events per second are events over the run's time. */
static void test_measures(void **state)
{
	struct nsim_params p;
	struct nsim *ns;
	double eps;

	(void)state;
	s_params(&p, "dissemination", 64);
	p.verify = false;
	ns = s_run(&p);
	eps = s_metric(ns, "events_per_s");
	assert_true(ns->stats.events > 0 && ns->run_s > 0);
	assert_true(s_metric(ns, "events") == (double)ns->stats.events);
	assert_true(eps > 0);
	assert_true(eps == (double)ns->stats.events / ns->run_s);
	assert_true(s_metric(ns, "events_per_cpu_s") ==
		    (ns->cpu_s > 0 ? (double)ns->stats.events / ns->cpu_s : 0));
	assert_true(s_metric(ns, "peak_rss_mb") > 0);
	assert_true(s_metric(ns, "host_bytes_per_node") > 0);
	assert_true(s_metric(ns, "fw_bytes_per_node") > 0);
	assert_true(s_metric(ns, "sim_time_us") >= s_metric(ns, "completion_us"));
	free(ns);
}

/* CRC-32C one bit at a time, from its definition (reflected 0x1EDC6F41). */
static u32 crc32c_bitwise(u32 crc, const u8 *p, size_t len)
{
	int k;

	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & -(crc & 1));
	}
	return ~crc;
}

static void test_crc(void **state)
{
	static u8 buf[5000];
	u32 i, seed = 1;

	(void)state;
	/* The check value every CRC-32C implementation publishes. */
	assert_int_equal(fwos_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(crc32c_bitwise(0, (const u8 *)"123456789", 9), 0xE3069283u);
	t_fill(buf, sizeof(buf), 3);
	for (i = 0; i < 2000; i++) {
		u32 off, len, crc;

		seed = seed * 1103515245u + 12345u;
		off = (seed >> 8) % 1000;
		len = i < 300 ? i : (seed >> 4) % 4000;
		crc = i & 1 ? seed : 0;
		assert_int_equal(fwos_crc32c(crc, buf + off, len),
				 crc32c_bitwise(crc, buf + off, len));
	}
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_crc),
		cmocka_unit_test(test_pingpong_formula),
		cmocka_unit_test(test_pingpong_bandwidth),
		cmocka_unit_test(test_incast),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_ring_4096),
		cmocka_unit_test(test_workloads),
		cmocka_unit_test(test_bcast),
		cmocka_unit_test(test_refuses),
		cmocka_unit_test(test_measures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
