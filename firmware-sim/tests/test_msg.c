// SPDX-License-Identifier: GPL-2.0
/*
 * Send and receive: packetisation and reassembly, matching, unexpected
 * messages, truncation, refusals and malformed commands.
 */
#include <stdlib.h>

#include "fwtest.h"

static struct sim *mk(u32 nodes, u32 mtu)
{
	return t_sim(nodes, mtu, 0, NULL);
}

/*
 * Two cards with @mtu: @a registered on card 0 port 0 (*ma, read only),
 * @b on card 1 port 0 (*mb, for receives).
 */
static struct sim *mk_pair(u32 mtu, void *a, u64 alen, u32 *ma, void *b, u64 blen, u32 *mb)
{
	struct sim *s = mk(2, mtu);

	*ma = t_port_mr(s, 0, 0, a, alen, 0, NULL);
	*mb = t_port_mr(s, 1, 0, b, blen, NICOFF_ACCESS_LOCAL_WRITE, NULL);
	return s;
}

/* @recv posted on card 1 port 0, then @send on card 0 port 0: the receive's completion. */
static struct nicoff_cqe xfer(struct sim *s, struct nicoff_cmd recv, struct nicoff_cmd send,
			      u64 limit)
{
	t_post(s, 1, 0, recv);
	t_post(s, 0, 0, send);
	return t_cqe(s, 1, 0, limit);
}

/* Unexpected: @send completed on card 0 port 0, then @recv posted on card 1 port 0. */
static struct nicoff_cqe xfer_late(struct sim *s, struct nicoff_cmd send, struct nicoff_cmd recv,
				   u64 limit)
{
	t_post(s, 0, 0, send);
	assert_int_equal(t_cqe(s, 0, 0, T_SEC).status, 0);
	t_post(s, 1, 0, recv);
	return t_cqe(s, 1, 0, limit);
}

static void test_basic(void **state)
{
	struct sim *s = mk(2, 4096);
	static u8 a[10000], b[10000];
	u32 ma = t_port_mr(s, 0, 1, a, sizeof(a), 0, NULL);
	u32 mb = t_port_mr(s, 1, 2, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	struct nicoff_cqe q;

	(void)state;
	t_fill(a, sizeof(a), 7);
	memset(b, 0, sizeof(b));
	t_post(s, 1, 2, t_recv(11, mb, 0, sizeof(b), NICOFF_ANY, NICOFF_ANY, 0, 0));
	t_post(s, 0, 1, t_send(22, 1, 2, ma, 0, sizeof(a), 0xabc));

	q = t_cqe(s, 1, 2, T_SEC);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.opcode, NICOFF_OP_RECV);
	assert_int_equal(q.tag, 11);
	assert_int_equal(q.result, sizeof(a));
	assert_int_equal(q.src_card, 0);
	assert_int_equal(q.src_port, 1);
	assert_int_equal(q.msg_tag, 0xabc);
	assert_true(t_check(b, sizeof(b), 7));

	q = t_cqe(s, 0, 1, T_SEC);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.opcode, NICOFF_OP_SEND);
	assert_int_equal(q.tag, 22);
	assert_int_equal(q.result, sizeof(a));
	t_finish(s);
}

/* Every size around the MTU and up to 4 MiB, with even and odd MTUs. */
static void test_reassembly(void **state)
{
	static const u32 mtus[] = { 4096, 1000, 1499, 97 };
	const u64 max = 4ull << 20;
	u8 *a = malloc(max + 64), *b = malloc(max + 64);
	unsigned int i, j;

	(void)state;
	t_fill(a, max + 64, 3);
	for (i = 0; i < T_ARRAY_SIZE(mtus); i++) {
		u32 mtu = mtus[i];
		const u64 sizes[] = { 1, 2, mtu - 1, mtu, mtu + 1, 2 * mtu, 3 * mtu + 7, 65536,
				      1 << 20, max };
		u32 ma, mb;
		struct sim *s = mk_pair(mtu, a, max + 64, &ma, b, max + 64, &mb);

		for (j = 0; j < T_ARRAY_SIZE(sizes); j++) {
			u64 len = sizes[j];
			struct nicoff_cqe q;

			/* Odd offsets on both sides; canaries around the message. */
			memset(b, 0xee, max + 64);
			q = xfer(s, t_recv(j, mb, 3, len + 32, 0, 0, 0, 0),
				 t_send(100 + j, 1, 0, ma, 1, len, j), sim_now(s) + 10 * T_SEC);
			assert_int_equal(q.status, 0);
			assert_int_equal(q.result, len);
			assert_int_equal(q.msg_tag, j);
			assert_memory_equal(b + 3, a + 1, len);
			assert_int_equal(b[3 + len], 0xee);
			assert_int_equal(b[2], 0xee);
			q = t_cqe(s, 0, 0, sim_now(s) + 10 * T_SEC);
			assert_int_equal(q.status, 0);
			assert_int_equal(q.tag, 100 + j);
			assert_int_equal(q.result, len);
		}
		t_finish(s);
	}
	free(a);
	free(b);
}

static void test_zero_length(void **state)
{
	static u8 a[16], b[16];
	u32 ma, mb;
	struct sim *s = mk_pair(4096, a, sizeof(a), &ma, b, sizeof(b), &mb);
	struct nicoff_cqe q;

	(void)state;
	/* Unexpected first, then expected. */
	q = xfer_late(s, t_send(1, 1, 0, ma, 0, 0, 5),
		      t_recv(2, mb, 0, 0, NICOFF_ANY, NICOFF_ANY, 5, ~0ull), T_SEC);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, 0);
	assert_int_equal(q.msg_tag, 5);
	q = xfer(s, t_recv(3, mb, 16, 0, NICOFF_ANY, NICOFF_ANY, 0, 0),
		 t_send(4, 1, 0, ma, 16, 0, 6), T_SEC);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.tag, 3);
	assert_int_equal(q.msg_tag, 6);
	assert_int_equal(t_cqe(s, 0, 0, T_SEC).status, 0);
	t_finish(s);
}

/* Messages arrive before their receives; later receives take them in order. */
static void test_unexpected(void **state)
{
	struct sim *s = mk(3, 1024);
	static u8 a1[8192], a2[8192], b[8][8192];
	u32 m1 = t_port_mr(s, 0, 0, a1, sizeof(a1), 0, NULL);
	u32 m2 = t_port_mr(s, 2, 1, a2, sizeof(a2), 0, NULL);
	u32 mb = t_port_mr(s, 1, 0, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	struct fw_stats st;
	struct nicoff_cqe q;
	int i;

	(void)state;
	t_fill(a1, sizeof(a1), 1);
	t_fill(a2, sizeof(a2), 2);
	/* Four from node 0 (tags 0..3, sizes growing), four from node 2. */
	for (i = 0; i < 4; i++) {
		t_post(s, 0, 0, t_send(i, 1, 0, m1, 0, 1000 * (i + 1), i));
		t_post(s, 2, 1, t_send(i, 1, 0, m2, 0, 1500 * (i + 1), 100 + i));
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(t_cqe(s, 0, 0, T_SEC).status, 0);
		assert_int_equal(t_cqe(s, 2, 1, T_SEC).status, 0);
	}
	fw_get_stats(sim_card(s, 1), &st);
	assert_int_equal(st.unexpected, 8);
	assert_int_equal(sim_cq_count(s, 1, 0), 0);

	/* From node 2 only, any tag: its first message. */
	t_post(s, 1, 0, t_recv(50, mb, 0, 8192, 2, NICOFF_ANY, 0, 0));
	q = t_cqe(s, 1, 0, sim_now(s));
	assert_int_equal(q.tag, 50);
	assert_int_equal(q.src_card, 2);
	assert_int_equal(q.src_port, 1);
	assert_int_equal(q.msg_tag, 100);
	assert_int_equal(q.result, 1500);
	assert_true(t_check(b[0], 1500, 2));
	/* Tag 2 exactly, any source. */
	t_post(s, 1, 0, t_recv(51, mb, 8192, 8192, NICOFF_ANY, NICOFF_ANY, 2, ~0ull));
	q = t_cqe(s, 1, 0, sim_now(s));
	assert_int_equal(q.msg_tag, 2);
	assert_int_equal(q.src_card, 0);
	assert_int_equal(q.result, 3000);
	assert_true(t_check(b[1], 3000, 1));
	/* Anything: the oldest left, node 0's tag 0. */
	for (i = 0; i < 6; i++) {
		t_post(s, 1, 0, t_recv(60 + i, mb, 8192 * (2 + i), 8192, NICOFF_ANY, NICOFF_ANY, 0,
				       0));
	}
	/* Arrival order: each source's messages in the order it sent them. */
	{
		static const u64 tags0[] = { 0, 1, 3 }, tags2[] = { 101, 102, 103 };
		int n0 = 0, n2 = 0;

		for (i = 0; i < 6; i++) {
			q = t_cqe(s, 1, 0, sim_now(s));
			assert_int_equal(q.tag, 60 + i);
			if (q.src_card == 0)
				assert_int_equal(q.msg_tag, tags0[n0++]);
			else
				assert_int_equal(q.msg_tag, tags2[n2++]);
			assert_true(t_check(b[2 + i], q.result, q.src_card == 0 ? 1 : 2));
		}
	}
	t_finish(s);
}

/* Masks, wildcards and posting order decide which buffer takes a message. */
static void test_tag_matching(void **state)
{
	struct sim *s = mk(3, 4096);
	static u8 a[64], b[6][64];
	u32 ma = t_port_mr(s, 0, 3, a, sizeof(a), 0, NULL);
	u32 m2 = t_port_mr(s, 2, 0, a, sizeof(a), 0, NULL);
	u32 mb = t_port_mr(s, 1, 0, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);
	struct nicoff_cqe q;
	u64 got[6] = { 0 };
	int i;

	(void)state;
	/* 0: exact 0x1234 from anyone; 1: high byte 0xab from node 2 only;
	 * 2: port 3 of node 0, low nibble 7; 3: anything; 4: same as 0.
	 */
	t_post(s, 1, 0, t_recv(0, mb, 0, 64, NICOFF_ANY, NICOFF_ANY, 0x1234, ~0ull));
	t_post(s, 1, 0, t_recv(1, mb, 64, 64, 2, NICOFF_ANY, 0xab00000000000000ull,
			       0xff00000000000000ull));
	t_post(s, 1, 0, t_recv(2, mb, 128, 64, 0, 3, 0x7, 0xf));
	t_post(s, 1, 0, t_recv(3, mb, 192, 64, NICOFF_ANY, NICOFF_ANY, 0, 0));
	t_post(s, 1, 0, t_recv(4, mb, 256, 64, NICOFF_ANY, NICOFF_ANY, 0x1234, ~0ull));

	/* From node 0 port 3: 0xab..17 matches 2 (not 1: wrong source). */
	t_post(s, 0, 3, t_send(0, 1, 0, ma, 0, 8, 0xab00000000000017ull));
	sim_run_idle(s, sim_now(s) + T_SEC);
	/* From node 2: 0xab..01 matches 1. */
	t_post(s, 2, 0, t_send(0, 1, 0, m2, 0, 8, 0xab00000000000001ull));
	sim_run_idle(s, sim_now(s) + T_SEC);
	/* 0x1234 from node 2: receive 0 (posted before 4). */
	t_post(s, 2, 0, t_send(0, 1, 0, m2, 0, 8, 0x1234));
	sim_run_idle(s, sim_now(s) + T_SEC);
	/* 0x1235: only the wildcard 3. */
	t_post(s, 0, 3, t_send(0, 1, 0, ma, 0, 8, 0x1235));
	sim_run_idle(s, sim_now(s) + T_SEC);
	/* 0x1234 again: 4. */
	t_post(s, 0, 3, t_send(0, 1, 0, ma, 0, 8, 0x1234));
	sim_run_idle(s, sim_now(s) + T_SEC);

	for (i = 0; i < 5; i++) {
		assert_true(sim_cq_pop(s, 1, 0, &q));
		assert_int_equal(q.status, 0);
		got[q.tag] = q.msg_tag;
	}
	assert_int_equal(got[0], 0x1234);
	assert_int_equal(got[1], 0xab00000000000001ull);
	assert_int_equal(got[2], 0xab00000000000017ull);
	assert_int_equal(got[3], 0x1235);
	assert_int_equal(got[4], 0x1234);
	while (sim_cq_pop(s, 0, 3, &q))
		assert_int_equal(q.status, 0);
	while (sim_cq_pop(s, 2, 0, &q))
		assert_int_equal(q.status, 0);
	t_finish(s);
}

/* A message longer than its buffer: -EMSGSIZE, the length, no overrun. */
static void test_truncation(void **state)
{
	static u8 a[5000], b[6000];
	u32 ma, mb;
	struct sim *s = mk_pair(512, a, sizeof(a), &ma, b, sizeof(b), &mb);
	struct nicoff_cqe q;

	(void)state;
	t_fill(a, sizeof(a), 9);
	memset(b, 0, sizeof(b));
	q = xfer(s, t_recv(1, mb, 100, 1234, NICOFF_ANY, NICOFF_ANY, 0, 0),
		 t_send(2, 1, 0, ma, 0, 5000, 0), T_SEC);
	assert_int_equal(q.status, -EMSGSIZE);
	assert_int_equal(q.result, 5000);
	assert_memory_equal(b + 100, a, 1234);
	assert_int_equal(b[100 + 1234], 0);
	assert_int_equal(b[99], 0);
	assert_int_equal(t_cqe(s, 0, 0, T_SEC).status, 0);

	/* The same through the unexpected path. */
	memset(b, 0, sizeof(b));
	q = xfer_late(s, t_send(3, 1, 0, ma, 0, 5000, 0),
		      t_recv(4, mb, 0, 999, NICOFF_ANY, NICOFF_ANY, 0, 0), sim_now(s));
	assert_int_equal(q.status, -EMSGSIZE);
	assert_int_equal(q.result, 5000);
	assert_memory_equal(b, a, 999);
	assert_int_equal(b[999], 0);
	t_finish(s);
}

/* Bad commands complete at once, with nothing sent. */
static void test_bad_commands(void **state)
{
	struct sim *s = mk(2, 4096);
	static u8 a[100];
	u32 ma = t_port_mr(s, 0, 0, a, sizeof(a), 0, NULL);
	const struct sim_stats *ss = sim_stats(s);
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	int i;

	(void)state;
	for (i = 0; i < 14; i++) {
		int want;

		c = t_send(i, 1, 0, ma, 0, 10, 0);
		switch (i) {
		case 0:
			c.flags = 1;
			want = -EINVAL;
			break;
		case 1:
			c.reserved1 = 1;
			want = -EINVAL;
			break;
		case 2:
			c.send.reserved0 = 1;
			want = -EINVAL;
			break;
		case 3:
			c.send.dst_card = 2;
			want = -EINVAL;
			break;
		case 4:
			c.send.len = (64ull << 20) + 1;
			want = -EMSGSIZE;
			break;
		case 5:
			c.send.mr = 99;
			want = -ENOENT;
			break;
		case 6:
			c.send.off = 91;
			want = -ERANGE;
			break;
		case 7:
			c.send.off = ~0ull;
			want = -ERANGE;
			break;
		case 8:
			c.opcode = NICOFF_OP_NOP;
			want = -EOPNOTSUPP;
			break;
		case 9:
			c.opcode = 77;
			want = -EOPNOTSUPP;
			break;
		case 10:	/* no LOCAL_WRITE */
			c = t_recv(i, ma, 0, 10, NICOFF_ANY, NICOFF_ANY, 0, 0);
			want = -EACCES;
			break;
		case 11:
			c = t_recv(i, ma, 0, 10, 5, NICOFF_ANY, 0, 0);
			want = -EINVAL;
			break;
		case 12:	/* get into a read-only region */
			c = t_rdma(NICOFF_OP_GET, i, 1, 0, 1, 0, ma, 0, 10);
			want = -EACCES;
			break;
		default:
			c = t_rdma(NICOFF_OP_PUT, i, 1, 0, 1, ~0ull - 3, ma, 0, 10);
			want = -ERANGE;
			break;
		}
		sim_post(s, 0, 0, &c);
		assert_true(sim_cq_pop(s, 0, 0, &q));
		assert_int_equal(q.tag, i);
		assert_int_equal(q.opcode, c.opcode);
		assert_int_equal(q.status, want);
	}
	assert_int_equal(ss->sent, 0);
	t_finish(s);
}

/* No such port, under loss: always refused, never a false success. */
static void test_refused(void **state)
{
	struct sim_cfg cfg;
	struct sim *s;
	static u8 a[3000];
	u32 ma;
	int i;

	(void)state;
	sim_cfg_default(&cfg, 2);
	cfg.fw.mtu = 1024;
	cfg.faults.drop_ppm = 300000;
	cfg.seed = 42;
	s = sim_create(&cfg);
	ma = t_port_mr(s, 0, 0, a, sizeof(a), 0, NULL);
	for (i = 0; i < 100; i++)
		t_post(s, 0, 0, t_send(i, 1, 5, ma, 0, (i % 3) * 1000 + i, 0));
	for (i = 0; i < 100; i++) {
		struct nicoff_cqe q = t_cqe(s, 0, 0, 60 * T_SEC);

		assert_int_equal(q.status, -ECONNREFUSED);
	}
	t_finish(s);
}

/* Sending to oneself goes through the fabric like any other. */
static void test_loopback(void **state)
{
	struct sim *s = mk(1, 1000);
	static u8 a[5000], b[5000];
	u32 ma = t_port_mr(s, 0, 0, a, sizeof(a), 0, NULL);
	u32 mb = t_port_mr(s, 0, 1, b, sizeof(b), NICOFF_ACCESS_LOCAL_WRITE, NULL);

	(void)state;
	t_fill(a, sizeof(a), 4);
	t_post(s, 0, 0, t_send(1, 0, 1, ma, 0, sizeof(a), 0));
	t_post(s, 0, 1, t_recv(2, mb, 0, sizeof(b), 0, 0, 0, 0));
	assert_int_equal(t_cqe(s, 0, 1, T_SEC).status, 0);
	assert_int_equal(t_cqe(s, 0, 0, T_SEC).status, 0);
	assert_true(t_check(b, sizeof(b), 4));
	t_finish(s);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_reassembly),
		cmocka_unit_test(test_zero_length),
		cmocka_unit_test(test_unexpected),
		cmocka_unit_test(test_tag_matching),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_bad_commands),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_loopback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
