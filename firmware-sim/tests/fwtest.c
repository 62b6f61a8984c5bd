// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers of the firmware's unit tests.
 */
#include "fwtest.h"

/* A command with every byte zero but its opcode and tag. */
static struct nicoff_cmd t_cmd(u8 opcode, u64 tag)
{
	struct nicoff_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.tag = tag;
	return c;
}

struct nicoff_cmd t_send(u64 tag, u32 dst, u32 dport, u32 mr, u64 off, u64 len, u64 msg_tag)
{
	struct nicoff_cmd c = t_cmd(NICOFF_OP_SEND, tag);

	c.send = (struct nicoff_op_send){ .dst_card = dst, .dst_port = dport, .mr = mr,
					  .off = off, .len = len, .msg_tag = msg_tag };
	return c;
}

struct nicoff_cmd t_recv(u64 tag, u32 mr, u64 off, u64 len, u32 src, u32 sport, u64 match,
			 u64 mask)
{
	struct nicoff_cmd c = t_cmd(NICOFF_OP_RECV, tag);

	c.recv = (struct nicoff_op_recv){ .mr = mr, .off = off, .len = len, .src_card = src,
					  .src_port = sport, .tag = match, .tag_mask = mask };
	return c;
}

struct nicoff_cmd t_rdma(u8 opcode, u64 tag, u32 dst, u32 dport, u32 rkey, u64 roff, u32 mr,
			 u64 off, u64 len)
{
	struct nicoff_cmd c = t_cmd(opcode, tag);

	c.rdma = (struct nicoff_op_rdma){ .dst_card = dst, .dst_port = dport, .rkey = rkey,
					  .remote_off = roff, .mr = mr, .off = off, .len = len };
	return c;
}

struct nicoff_cmd t_atomic(u8 opcode, u64 tag, u32 dst, u32 dport, u32 rkey, u64 roff,
			   u32 width, u64 operand, u64 compare)
{
	struct nicoff_cmd c = t_cmd(opcode, tag);

	c.atomic = (struct nicoff_op_atomic){ .dst_card = dst, .dst_port = dport, .rkey = rkey,
					      .width = width, .remote_off = roff,
					      .operand = operand, .compare = compare };
	return c;
}

struct nicoff_cmd t_group(u8 opcode, u64 tag, u32 gid, u32 rank, u32 size, u32 mr, u32 alg,
			  u32 param)
{
	struct nicoff_cmd c = t_cmd(opcode, tag);

	c.group.group_id = gid;
	/* BARRIER and GROUP_DESTROY name the group only. */
	if (opcode == NICOFF_OP_GROUP_CREATE)
		c.group = (struct nicoff_op_group){ .group_id = gid, .rank = rank, .size = size,
						    .mr = mr, .algorithm = alg, .param = param };
	return c;
}

struct nicoff_cmd t_bcast(u64 tag, u32 gid, u32 root, u32 mr, u64 off, u64 len)
{
	struct nicoff_cmd c = t_cmd(NICOFF_OP_BCAST, tag);

	c.bcast.group_id = gid;
	c.bcast.root = root;
	c.bcast.mr = mr;
	c.bcast.off = off;
	c.bcast.len = len;
	return c;
}

struct nicoff_cmd t_ping(u64 tag, u32 dst, u32 dport)
{
	struct nicoff_cmd c = t_cmd(NICOFF_OP_PING, tag);

	c.ping.dst_card = dst;
	c.ping.dst_port = dport;
	return c;
}

void t_post(struct sim *s, u32 node, u32 port, struct nicoff_cmd c)
{
	sim_post(s, node, port, &c);
}

static u8 t_byte(size_t i, u32 seed)
{
	u32 x = (u32)i * 2654435761u + seed * 40503u + (u32)(i >> 16);

	return (u8)(x ^ (x >> 13) ^ (x >> 24));
}

void t_fill(void *buf, size_t len, u32 seed)
{
	u8 *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = t_byte(i, seed);
}

bool t_check(const void *buf, size_t len, u32 seed)
{
	const u8 *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != t_byte(i, seed))
			return false;
	return true;
}

struct sim *t_sim(u32 nodes, u32 mtu, u32 window, const struct fw_fault_cfg *faults)
{
	struct sim_cfg cfg;

	sim_cfg_default(&cfg, nodes);
	if (mtu)
		cfg.fw.mtu = mtu;
	if (window)
		cfg.fw.window = window;
	if (faults)
		cfg.faults = *faults;
	return sim_create(&cfg);
}

struct sim *t_sim_pair(const struct fw_fault_cfg *faults)
{
	return t_sim(2, 1000, 32, faults);
}

u32 t_port_mr(struct sim *s, u32 node, u32 port, void *buf, u64 len, u32 access, u32 *rkey)
{
	u32 handle = 0, key = 0;

	if (!sim_attached(s, node, port))
		assert_int_equal(sim_attach(s, node, port), 0);
	assert_int_equal(sim_reg_mr(s, node, port, buf, len, access, &handle, &key), 0);
	if (rkey)
		*rkey = key;
	return handle;
}

struct nicoff_cqe t_cqe(struct sim *s, u32 node, u32 port, u64 limit)
{
	struct nicoff_cqe cqe;

	memset(&cqe, 0, sizeof(cqe));
	if (!sim_wait_cqe(s, node, port, &cqe, limit))
		fail_msg("no completion on card %u port %u by %llu ns (now %llu)", node, port,
			 (unsigned long long)limit, (unsigned long long)sim_now(s));
	return cqe;
}

void t_expect(struct sim *s, u32 node, u32 port, u64 tag, s32 status)
{
	struct nicoff_cqe q = t_cqe(s, node, port, sim_now(s) + T_SEC);

	assert_int_equal(q.tag, tag);
	assert_int_equal(q.status, status);
}

void t_seeds(void (*run)(u64 seed), u64 first, u64 last)
{
	u64 seed;

	for (seed = first; seed <= last; seed++)
		run(seed);
}

const struct fw_fault_cfg t_lossy = { .drop_ppm = 100000, .dup_ppm = 50000,
				      .corrupt_ppm = 10000, .reorder_ppm = 50000,
				      .delay_ns = 10000 };

void t_expect_lossy(struct sim *s, u64 remote_errors)
{
	struct fw_stats sum;

	t_stats_sum(s, &sum);
	assert_true(sum.retransmits > 0 && sum.crc_errors > 0);
	assert_int_equal(sum.remote_errors, remote_errors);
	assert_int_equal(sum.conn_failures, 0);
}

void t_stats_sum(struct sim *s, struct fw_stats *sum)
{
	u32 n;

	memset(sum, 0, sizeof(*sum));
	for (n = 0; n < sim_nodes(s); n++) {
		struct fw_stats st;
		u64 *a = (u64 *)sum, *b = (u64 *)&st;
		size_t i;

		fw_get_stats(sim_card(s, n), &st);
		for (i = 0; i < sizeof(st) / sizeof(u64); i++)
			a[i] += b[i];
	}
}

void t_finish(struct sim *s)
{
	const struct sim_stats *st = sim_stats(s);

	assert_true(sim_run_idle(s, sim_now(s) + 100 * T_SEC));
	assert_int_equal(st->bad_completions, 0);
	assert_int_equal(st->bad_mem, 0);
	assert_int_equal(sim_destroy(s), 0);
}

struct fw_pkt *t_pkt(struct sim *s, u8 type, u8 flags, u32 len)
{
	struct fw_pkt *pkt = fwos_pkt_alloc(sim_card(s, 0)->host, len);

	assert_non_null(pkt);
	memset(pkt, 0, FW_PKT_HDR_SIZE + len);
	pkt->hdr.src_node = 0;
	pkt->hdr.dst_node = 1;
	pkt->hdr.src_port = 1;
	pkt->hdr.dst_port = 2;
	pkt->hdr.type = type;
	pkt->hdr.flags = flags;
	pkt->hdr.len = len;
	return pkt;
}

void t_pkt_send(struct sim *s, struct fw_pkt *pkt)
{
	u32 crc = fwos_crc32c(0, &pkt->hdr, FW_PKT_HDR_SIZE);

	pkt->hdr.crc = fwos_crc32c(crc, pkt->payload, pkt->hdr.len);
	fwos_send(sim_card(s, 0)->host, pkt);
	assert_true(sim_run_idle(s, sim_now(s) + T_SEC));
}
