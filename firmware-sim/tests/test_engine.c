// SPDX-License-Identifier: GPL-2.0
/*
 * The engine table: an opcode or a packet type it does not name is
 * refused and counted, and reaches no engine (no other counter moves, no
 * packet leaves, nothing but the refusal is completed); the card works on.
 */
#include <stdlib.h>

#include "fwtest.h"

#define E_LEN	4096u

/* Opcodes the firmware has no engine for: the host's own, the unassigned, the completion-only. */
static const u8 e_bad_opcodes[] = { NICOFF_OP_NOP, NICOFF_OP_COPY, NICOFF_OP_MAX, 0x7f,
				    NICOFF_OP_REMOTE_ACCESS_ERROR, NICOFF_OP_PORT_ERROR };

/* Packet types outside the table: below the first, past the last, the highest. */
static const u8 e_bad_types[] = { 0, FW_PKT_MAX, 100, 255 };

struct e_env {
	struct sim *s;
	u8 *a, *b;
	u32 ma, mb;
	u32 node;		/* whose counters are watched */
	struct fw_stats st0;	/* its counters, and the fabric's packets, before */
	u64 sent0;
};

/* A message from node 0 port 1 to node 1 port 2 goes through. */
static void e_message(struct e_env *e, u64 tag)
{
	struct nicoff_cmd c = t_recv(tag, e->mb, 0, E_LEN, NICOFF_ANY, NICOFF_ANY, 0, 0);
	struct nicoff_cqe q;

	sim_post(e->s, 1, 2, &c);
	c = t_send(tag, 1, 2, e->ma, 0, E_LEN, tag);
	sim_post(e->s, 0, 1, &c);
	q = t_cqe(e->s, 0, 1, sim_now(e->s) + T_SEC);
	assert_int_equal(q.status, 0);
	q = t_cqe(e->s, 1, 2, sim_now(e->s) + T_SEC);
	assert_int_equal(q.status, 0);
	assert_int_equal(q.result, E_LEN);
	assert_true(t_check(e->b, E_LEN, 3));
	memset(e->b, 0, E_LEN);
}

/* Nothing waits on either port. */
static void e_no_cqe(struct e_env *e)
{
	struct nicoff_cqe q;

	assert_false(sim_cq_pop(e->s, 0, 1, &q));
	assert_false(sim_cq_pop(e->s, 1, 2, &q));
}

/* Two cards that exchanged a message and went quiet; @node's counters taken. */
static void e_setup(struct e_env *e, u32 node)
{
	struct sim_cfg cfg;

	sim_cfg_default(&cfg, 2);
	e->s = sim_create(&cfg);
	e->a = calloc(1, E_LEN);
	e->b = calloc(1, E_LEN);
	t_fill(e->a, E_LEN, 3);
	e->ma = t_port_mr(e->s, 0, 1, e->a, E_LEN, 0, NULL);
	e->mb = t_port_mr(e->s, 1, 2, e->b, E_LEN, NICOFF_ACCESS_LOCAL_WRITE, NULL);
	e_message(e, 1);
	assert_true(sim_run_idle(e->s, sim_now(e->s) + T_SEC));
	e->node = node;
	fw_get_stats(sim_card(e->s, node), &e->st0);
	e->sent0 = sim_stats(e->s)->sent;
}

/*
 * The counter at @field moved by @n and no other (no engine saw what it
 * counts), @sent packets went on the fabric, and the cards still work.
 */
static void e_finish(struct e_env *e, size_t field, u64 n, u64 sent)
{
	struct fw_stats st;
	u64 *v = (u64 *)((char *)&st + field);
	u64 v0 = *(u64 *)((char *)&e->st0 + field);

	fw_get_stats(sim_card(e->s, e->node), &st);
	assert_int_equal(*v, v0 + n);
	*v = v0;
	assert_memory_equal(&st, &e->st0, sizeof(st));
	assert_int_equal(sim_stats(e->s)->sent, e->sent0 + sent);
	e_message(e, 2);
	t_finish(e->s);
	free(e->a);
	free(e->b);
}

static void test_unknown_opcode(void **state)
{
	struct nicoff_cmd c;
	struct nicoff_cqe q;
	struct e_env e;
	u32 i;

	(void)state;
	e_setup(&e, 0);
	for (i = 0; i < T_ARRAY_SIZE(e_bad_opcodes); i++) {
		c = t_send(100 + i, 1, 2, e.ma, 0, 16, 0);
		c.opcode = e_bad_opcodes[i];
		sim_post(e.s, 0, 1, &c);
		q = t_cqe(e.s, 0, 1, sim_now(e.s) + T_SEC);
		assert_int_equal(q.tag, 100 + i);
		assert_int_equal(q.opcode, e_bad_opcodes[i]);
		assert_int_equal(q.status, -EOPNOTSUPP);
		assert_int_equal(q.result, 0);
		/* Nothing else, now or later. */
		assert_true(sim_run_idle(e.s, sim_now(e.s) + T_SEC));
		e_no_cqe(&e);
	}
	/* The host is told so too; a malformed command stays -EINVAL, uncounted. */
	c = t_send(200, 1, 2, e.ma, 0, 16, 0);
	c.opcode = NICOFF_OP_MAX;
	assert_int_equal(fw_cmd(sim_card(e.s, 0), 1, &c), -EOPNOTSUPP);
	q = t_cqe(e.s, 0, 1, sim_now(e.s) + T_SEC);
	assert_int_equal(q.status, -EOPNOTSUPP);
	c.flags = 1;
	assert_int_equal(fw_cmd(sim_card(e.s, 0), 1, &c), -EINVAL);
	q = t_cqe(e.s, 0, 1, sim_now(e.s) + T_SEC);
	assert_int_equal(q.status, -EINVAL);
	e_finish(&e, offsetof(struct fw_stats, bad_opcodes), T_ARRAY_SIZE(e_bad_opcodes) + 1, 0);
}

/* A packet from node 0 to node 1 with a good CRC and header type @type. */
static void e_inject(struct e_env *e, u8 type, u32 len)
{
	struct fw_pkt *pkt = t_pkt(e->s, type, FW_PKT_F_SYN | FW_PKT_F_ACKREQ, len);

	pkt->hdr.epoch = 77;
	pkt->hdr.msg_id = 5;
	pkt->hdr.total = len;
	t_pkt_send(e->s, pkt);
}

static void test_unknown_packet(void **state)
{
	struct e_env e;
	u32 i;

	(void)state;
	e_setup(&e, 1);
	for (i = 0; i < 2 * T_ARRAY_SIZE(e_bad_types); i++)
		e_inject(&e, e_bad_types[i / 2], i % 2 ? 64 : 0);
	/* Not received, not answered: only the injected packets crossed the fabric. */
	e_no_cqe(&e);
	e_finish(&e, offsetof(struct fw_stats, bad_packets), 2 * T_ARRAY_SIZE(e_bad_types),
		 2 * T_ARRAY_SIZE(e_bad_types));
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_unknown_opcode),
		cmocka_unit_test(test_unknown_packet),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
