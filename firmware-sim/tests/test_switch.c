// SPDX-License-Identifier: GPL-2.0
/*
 * The switch both hosts share (switch.h), on its own: serialisation on the
 * sender's link and at the receiver, routing, replication to a range of
 * nodes, and fault verdicts applied in the order the fault generator gives
 * them (a duplicate is made before the corruption).  Packets come from a
 * simulator's card so that leaks are counted.
 */
#include <stdlib.h>

#include "fwtest.h"
#include "fw_os.h"
#include "fw_pkt.h"
#include "switch.h"

#define SW_NODES	5u
#define SW_PAYLOAD	8u
#define SW_SIZE		(FW_PKT_HDR_SIZE + SW_PAYLOAD)
#define SW_MAX_OUT	64u

struct sw_out {
	u32 dst;
	struct fw_pkt *pkt;
	u32 size;
	u64 due;
	u32 faults;
};

struct sw_test {
	struct sim *s;
	struct fw_host *h;
	struct fw_switch sw;
	struct fw_switch_link links[SW_NODES];
	struct fw_fault_state faults;
	struct fw_fault_cfg fault_cfg;
	struct fw_switch_src src;
	bool down[SW_NODES];
	struct sw_out out[SW_MAX_OUT];
	u32 nout;
};

static void sw_deliver(void *arg, u32 dst, struct fw_pkt *pkt, u32 size, u64 due, u32 faults)
{
	struct sw_test *t = arg;

	assert_true(t->nout < SW_MAX_OUT);
	t->out[t->nout++] = (struct sw_out){ dst, pkt, size, due, faults };
}

static bool sw_link_up(void *arg, u32 node)
{
	struct sw_test *t = arg;

	return !t->down[node];
}

static const struct fw_switch_ops sw_ops = { .deliver = sw_deliver, .link_up = sw_link_up };

/* Node 1 sends; g 20 ns, L 1000 ns, G 0.1 ns per byte; no faults. */
static struct sw_test *sw_setup(void)
{
	struct sw_test *t = calloc(1, sizeof(*t));
	struct sim_cfg cfg;

	assert_non_null(t);
	sim_cfg_default(&cfg, SW_NODES);
	t->s = sim_create(&cfg);
	assert_non_null(t->s);
	t->h = sim_host(t->s, 1);
	t->sw.cfg = (struct fw_switch_cfg){ .nodes = SW_NODES, .gap_ns = 20, .latency_ns = 1000,
					    .byte_mul = 100, .byte_div = 1000 };
	t->sw.ops = &sw_ops;
	t->sw.arg = t;
	fw_fault_init(&t->faults, 9, 1);
	t->src = (struct fw_switch_src){ .node = 1, .host = t->h, .link = &t->links[1],
					 .faults = &t->faults, .fault_cfg = &t->fault_cfg };
	return t;
}

static struct fw_pkt *sw_pkt(struct sw_test *t, u32 dst, u8 fill)
{
	struct fw_pkt *pkt = fwos_pkt_alloc(t->h, SW_PAYLOAD);

	assert_non_null(pkt);
	memset(&pkt->hdr, 0, sizeof(pkt->hdr));
	pkt->hdr.src_node = 1;
	pkt->hdr.dst_node = dst;
	pkt->hdr.len = SW_PAYLOAD;
	memset(pkt->payload, fill, SW_PAYLOAD);
	return pkt;
}

/* Free what was delivered; demand that no packet is left anywhere. */
static void sw_finish(struct sw_test *t)
{
	u32 i;

	for (i = 0; i < t->nout; i++)
		fwos_pkt_free(t->h, t->out[i].pkt);
	assert_int_equal(sim_pkts(t->s), 0);
	t_finish(t->s);
	free(t);
}

static void test_unicast_timing(void **state)
{
	struct sw_test *t = sw_setup();
	u64 wire = SW_SIZE * 100 / 1000;

	(void)state;
	assert_int_equal(fw_switch_wire_ns(&t->sw.cfg, SW_SIZE), wire);
	assert_int_equal(fw_switch_send(&t->sw, &t->src, sw_pkt(t, 3, 1), 500), FW_SWITCH_QUEUED);
	/* Ready before the link is free: it waits g + s * G after the first. */
	assert_int_equal(fw_switch_send(&t->sw, &t->src, sw_pkt(t, 0, 2), 500), FW_SWITCH_QUEUED);
	/* Ready long after: the link is idle. */
	assert_int_equal(fw_switch_send(&t->sw, &t->src, sw_pkt(t, 3, 3), 9000), FW_SWITCH_QUEUED);
	assert_int_equal(t->nout, 3);
	assert_int_equal(t->out[0].dst, 3);
	assert_int_equal(t->out[0].size, SW_SIZE);
	assert_int_equal(t->out[0].due, 500 + wire + 1000);
	assert_int_equal(t->out[0].faults, 0);
	assert_int_equal(t->out[1].dst, 0);
	assert_int_equal(t->out[1].due, 500 + 20 + 2 * wire + 1000);
	assert_int_equal(t->out[2].due, 9000 + wire + 1000);
	assert_int_equal(t->links[1].tx_free, 9000 + 20 + wire);
	assert_int_equal(t->out[2].pkt->payload[0], 3);
	/* Links without a rate take no time. */
	t->sw.cfg.byte_div = 0;
	assert_int_equal(fw_switch_wire_ns(&t->sw.cfg, SW_SIZE), 0);
	/* The module's rate: 8000 / Mb/s ns per byte. */
	t->sw.cfg.byte_mul = 8000;
	t->sw.cfg.byte_div = 10000;
	assert_int_equal(fw_switch_wire_ns(&t->sw.cfg, 1000), 800);
	sw_finish(t);
}

static void test_receiver(void **state)
{
	struct fw_switch_cfg cfg = { .nodes = 2, .gap_ns = 20, .byte_mul = 1, .byte_div = 1 };
	struct fw_switch_link link = { 0 };

	(void)state;
	/* Two packets due at once: the second waits for the first's bytes. */
	assert_int_equal(fw_switch_arrive(&cfg, &link, 1000, 100), 1000);
	assert_int_equal(link.rx_free, 1020);
	assert_int_equal(fw_switch_arrive(&cfg, &link, 1000, 100), 1120);
	/* One due later than that is not held. */
	assert_int_equal(fw_switch_arrive(&cfg, &link, 5000, 100), 5000);
	assert_int_equal(link.rx_free, 5020);
}

static void test_lost(void **state)
{
	struct sw_test *t = sw_setup();

	(void)state;
	/* No such node: freed before it takes the link. */
	assert_int_equal(fw_switch_send(&t->sw, &t->src, sw_pkt(t, SW_NODES, 0), 100),
			 FW_SWITCH_NO_ROUTE);
	assert_int_equal(t->links[1].tx_free, 0);
	assert_int_equal(t->faults.counts.packets, 0);
	/* A receiver whose link is down: the sender's link was taken. */
	t->down[2] = true;
	assert_int_equal(fw_switch_send(&t->sw, &t->src, sw_pkt(t, 2, 0), 100),
			 FW_SWITCH_LINK_DOWN);
	assert_int_equal(t->links[1].tx_free, 100 + 20 + SW_SIZE * 100 / 1000);
	assert_int_equal(t->faults.counts.packets, 0);
	/* Every packet dropped. */
	t->fault_cfg.drop_ppm = FW_FAULT_PPM;
	assert_int_equal(fw_switch_send(&t->sw, &t->src, sw_pkt(t, 3, 0), 100),
			 FW_SWITCH_DROPPED);
	assert_int_equal(t->faults.counts.drops, 1);
	assert_int_equal(t->nout, 0);
	sw_finish(t);
}

/* Duplicated and corrupted: the duplicate first and intact, then the flipped original. */
static void test_dup_before_corrupt(void **state)
{
	struct sw_test *t = sw_setup();
	struct fw_pkt *ref;
	u32 i, diff = 0;

	(void)state;
	t->fault_cfg.dup_ppm = FW_FAULT_PPM;
	t->fault_cfg.corrupt_ppm = FW_FAULT_PPM;
	ref = sw_pkt(t, 4, 0x5a);
	assert_int_equal(fw_switch_send(&t->sw, &t->src, sw_pkt(t, 4, 0x5a), 0), FW_SWITCH_QUEUED);
	assert_int_equal(t->nout, 2);
	assert_int_equal(t->out[0].faults, FW_FAULT_DUP);
	assert_int_equal(t->out[1].faults, FW_FAULT_CORRUPT);
	assert_int_equal(t->out[0].due, t->out[1].due);
	assert_int_equal(t->out[0].size, SW_SIZE);
	assert_int_equal(t->out[1].size, SW_SIZE);
	assert_ptr_not_equal(t->out[0].pkt, t->out[1].pkt);
	assert_memory_equal(t->out[0].pkt, ref, SW_SIZE);
	for (i = 0; i < SW_SIZE; i++)
		diff += __builtin_popcount(((u8 *)t->out[1].pkt)[i] ^ ((u8 *)ref)[i]);
	assert_int_equal(diff, 1);
	fwos_pkt_free(t->h, ref);
	sw_finish(t);
}

/*
 * The deliveries from t->out[@o] on that verdict @v gives a packet to @dst
 * due at @due (before its delay); returns the index after them.
 */
static u32 sw_expect(struct sw_test *t, u32 o, const struct fw_fault_verdict *v, u32 dst,
		     u64 due)
{
	u32 copies = v->faults & FW_FAULT_DROP ? 0 : 1 + !!(v->faults & FW_FAULT_DUP);
	u32 end = o + copies;

	assert_true(t->nout >= end);
	for (; o < end; o++) {
		bool dup = o + 1 < end;

		assert_int_equal(t->out[o].dst, dst);
		assert_int_equal(t->out[o].due, due + v->delay_ns);
		assert_int_equal(t->out[o].faults,
				 v->faults & ~(dup ? FW_FAULT_CORRUPT : FW_FAULT_DUP));
	}
	return end;
}

/* Each packet suffers the generator's next verdict, delays included. */
static void test_verdict_order(void **state)
{
	struct sw_test *t = sw_setup();
	struct fw_fault_state twin;
	u32 i, o = 0;

	(void)state;
	t->fault_cfg = (struct fw_fault_cfg){ 200000, 200000, 200000, 200000, 200000, 3000 };
	fw_fault_init(&twin, 9, 1);
	for (i = 0; i < 20; i++) {
		struct fw_fault_verdict v = fw_fault_verdict(&twin, &t->fault_cfg, SW_SIZE);
		u64 ready = 100000ull * i;
		enum fw_switch_fate fate = fw_switch_send(&t->sw, &t->src, sw_pkt(t, 0, (u8)i),
							  ready);

		assert_int_equal(fate, v.faults & FW_FAULT_DROP ? FW_SWITCH_DROPPED :
				 FW_SWITCH_QUEUED);
		o = sw_expect(t, o, &v, 0, ready + SW_SIZE * 100 / 1000 + 1000);
		if (fate == FW_SWITCH_QUEUED)
			assert_int_equal(t->out[o - 1].pkt->payload[0], i);
	}
	assert_int_equal(t->nout, o);
	assert_memory_equal(&t->faults, &twin, sizeof(twin));
	sw_finish(t);
}

static void test_replicate(void **state)
{
	struct sw_test *t = sw_setup();
	u64 wire = SW_SIZE * 100 / 1000;
	struct fw_pkt *ref;
	u32 i;

	(void)state;
	ref = sw_pkt(t, 0, 0x33);
	/* Every node but the sender, in order, after one serialisation. */
	assert_int_equal(fw_switch_replicate(&t->sw, &t->src, sw_pkt(t, 0, 0x33), 0, 4, 100), 4);
	assert_int_equal(t->nout, 4);
	assert_int_equal(t->links[1].tx_free, 100 + 20 + wire);
	for (i = 0; i < 4; i++) {
		assert_int_equal(t->out[i].dst, i ? i + 1 : 0);
		assert_int_equal(t->out[i].due, 100 + wire + 1000);
		assert_int_equal(t->out[i].faults, 0);
		assert_memory_equal(t->out[i].pkt, ref, SW_SIZE);
	}
	/* The sender at the end of the range; a down link loses its copy. */
	t->down[0] = true;
	assert_int_equal(fw_switch_replicate(&t->sw, &t->src, sw_pkt(t, 0, 0x33), 0, 1, 100), 0);
	assert_int_equal(fw_switch_replicate(&t->sw, &t->src, sw_pkt(t, 0, 0x33), 2, 3, 100), 2);
	assert_int_equal(t->nout, 6);
	assert_int_equal(t->out[4].dst, 2);
	assert_int_equal(t->out[5].dst, 3);
	assert_int_equal(t->out[5].due, 100 + 2 * (20 + wire) + wire + 1000);
	/* Refused, and free: only the sender, past the last node, backwards. */
	assert_int_equal(fw_switch_replicate(&t->sw, &t->src, sw_pkt(t, 0, 0), 1, 1, 0), -EINVAL);
	assert_int_equal(fw_switch_replicate(&t->sw, &t->src, sw_pkt(t, 0, 0), 2, SW_NODES, 0),
			 -EINVAL);
	assert_int_equal(fw_switch_replicate(&t->sw, &t->src, sw_pkt(t, 0, 0), 3, 2, 0), -EINVAL);
	assert_int_equal(t->links[1].tx_free, 100 + 3 * (20 + wire));
	fwos_pkt_free(t->h, ref);
	sw_finish(t);
}

/* One verdict per copy, in node order: dropped copies are the generator's drops. */
static void test_replicate_faults(void **state)
{
	struct sw_test *t = sw_setup();
	struct fw_fault_state twin;
	u32 i, o = 0;
	int queued;

	(void)state;
	t->fault_cfg = (struct fw_fault_cfg){ .drop_ppm = 300000, .dup_ppm = 300000,
					      .corrupt_ppm = 300000 };
	fw_fault_init(&twin, 9, 1);
	queued = fw_switch_replicate(&t->sw, &t->src, sw_pkt(t, 0, 7), 0, SW_NODES - 1, 0);
	for (i = 0; i < SW_NODES; i++) {
		struct fw_fault_verdict v;

		if (i != 1) {
			v = fw_fault_verdict(&twin, &t->fault_cfg, SW_SIZE);
			o = sw_expect(t, o, &v, i, SW_SIZE * 100 / 1000 + 1000);
		}
	}
	assert_int_equal(t->nout, o);
	assert_int_equal(queued, SW_NODES - 1 - twin.counts.drops);
	assert_memory_equal(&t->faults, &twin, sizeof(twin));
	sw_finish(t);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_unicast_timing),
		cmocka_unit_test(test_receiver),
		cmocka_unit_test(test_lost),
		cmocka_unit_test(test_dup_before_corrupt),
		cmocka_unit_test(test_verdict_order),
		cmocka_unit_test(test_replicate),
		cmocka_unit_test(test_replicate_faults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
