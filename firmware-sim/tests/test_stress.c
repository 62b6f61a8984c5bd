// SPDX-License-Identifier: GPL-2.0
/*
 * Random operations under every fault: sends, receives, puts and gets,
 * ports closing and reopening, regions going, cards dying, coming back and
 * restarting.  Whatever happens: each command completes at most once and
 * only while its port lives, no send/put/get is left hanging once the
 * fabric is quiet, delivered messages are intact, and nothing leaks.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fwtest.h"

#define S_NODES		4u
#define S_PORTS		3u
#define S_SLOTS		16u
#define S_SLOT		65536u
#define S_SRC		(256u * 1024)
#define S_RMA		(256u * 1024)
#define S_MAXOPS	4096u

struct s_cmd {
	u64 tag;
	u8 opcode;
	u8 slot;
	bool live;
};

struct s_port {
	bool open;
	u8 *src, *dst, *rma;
	u32 msrc, mdst, mrma, rkey;
	bool slot_busy[S_SLOTS];
	struct s_cmd cmds[S_MAXOPS];
	u32 ncmds;
};

struct s_world {
	struct sim *s;
	u64 rng;
	u64 next_tag;
	struct s_port port[S_NODES][S_PORTS];
	bool dead[S_NODES];
	u32 epoch[S_NODES];
	u64 completions, sends_ok, recvs_ok, errors;
};

static u32 s_rand(struct s_world *w, u32 n)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return (u32)((w->rng >> 16) % n);
}

static u8 s_byte(u32 seed, u64 i)
{
	u32 x = (u32)i * 2654435761u + seed * 40503u + (u32)(i >> 16);

	return (u8)(x ^ (x >> 13) ^ (x >> 24));
}

static u32 s_seed(u32 node, u32 port)
{
	return node * 16 + port + 1;
}

static void s_open(struct s_world *w, u32 n, u32 p)
{
	struct s_port *sp = &w->port[n][p];
	u32 h;
	u64 i;

	assert_int_equal(sim_attach(w->s, n, p), 0);
	sp->open = true;
	for (i = 0; i < S_SRC; i++)
		sp->src[i] = s_byte(s_seed(n, p), i);
	assert_int_equal(sim_reg_mr(w->s, n, p, sp->src, S_SRC, 0, &sp->msrc, &h), 0);
	assert_int_equal(sim_reg_mr(w->s, n, p, sp->dst, (u64)S_SLOTS * S_SLOT,
				    NICOFF_ACCESS_LOCAL_WRITE, &sp->mdst, &h), 0);
	assert_int_equal(sim_reg_mr(w->s, n, p, sp->rma, S_RMA,
				    s_rand(w, 8) ? NICOFF_ACCESS_ALL : NICOFF_ACCESS_REMOTE_READ,
				    &sp->mrma, &sp->rkey), 0);
}

static void s_close(struct s_world *w, u32 n, u32 p)
{
	struct s_port *sp = &w->port[n][p];

	sim_detach(w->s, n, p);
	sp->open = false;
	sp->ncmds = 0;
	memset(sp->slot_busy, 0, sizeof(sp->slot_busy));
}

static void s_post(struct s_world *w, u32 n, u32 p, struct nicoff_cmd *c, int slot)
{
	struct s_port *sp = &w->port[n][p];
	struct s_cmd *sc;

	if (sp->ncmds == S_MAXOPS)
		return;
	sc = &sp->cmds[sp->ncmds++];
	c->tag = w->next_tag++;
	sc->tag = c->tag;
	sc->opcode = c->opcode;
	sc->slot = slot;
	sc->live = true;
	if (slot >= 0)
		sp->slot_busy[slot] = true;
	sim_post(w->s, n, p, c);
}

static void s_check_recv(struct s_world *w, u32 n, u32 p, const struct s_cmd *sc,
			 const struct nicoff_cqe *q)
{
	struct s_port *sp = &w->port[n][p];
	u32 src_node = q->msg_tag >> 48, src_port = (q->msg_tag >> 40) & 0xff;
	u64 off = q->msg_tag & 0xffffffffffull, len = q->result, i;
	const u8 *got = sp->dst + (u64)sc->slot * S_SLOT;

	assert_int_equal(src_node, q->src_card);
	assert_int_equal(src_port, q->src_port);
	if (len > S_SLOT)
		len = S_SLOT;
	for (i = 0; i < len; i++)
		if (got[i] != s_byte(s_seed(src_node, src_port), off + i))
			fail_msg("card %u port %u: byte %llu of a message from %u:%u is wrong",
				 n, p, (unsigned long long)i, src_node, src_port);
}

static void s_reap(struct s_world *w)
{
	u32 n, p, i;

	for (n = 0; n < S_NODES; n++) {
		for (p = 0; p < S_PORTS; p++) {
			struct s_port *sp = &w->port[n][p];
			struct nicoff_cqe q;

			while (sim_cq_pop(w->s, n, p, &q)) {
				struct s_cmd *sc = NULL;

				for (i = 0; i < sp->ncmds; i++)
					if (sp->cmds[i].tag == q.tag)
						sc = &sp->cmds[i];
				if (!sc || !sc->live)
					fail_msg("completion for unknown tag %llu",
						 (unsigned long long)q.tag);
				assert_int_equal(q.opcode, sc->opcode);
				sc->live = false;
				w->completions++;
				if (q.status && q.status != -EMSGSIZE)
					w->errors++;
				if (sc->opcode == NICOFF_OP_RECV) {
					if (!q.status || q.status == -EMSGSIZE) {
						s_check_recv(w, n, p, sc, &q);
						w->recvs_ok++;
					}
					sp->slot_busy[sc->slot] = false;
				} else if (sc->opcode == NICOFF_OP_SEND && !q.status) {
					w->sends_ok++;
				}
				/* Forget it, keeping the table short. */
				*sc = sp->cmds[--sp->ncmds];
			}
		}
	}
}

static void s_step(struct s_world *w)
{
	u32 n = s_rand(w, S_NODES), p = s_rand(w, S_PORTS);
	u32 dn = s_rand(w, S_NODES), dp = s_rand(w, S_PORTS);
	struct s_port *sp = &w->port[n][p], *dsp = &w->port[dn][dp];
	u32 r = s_rand(w, 1000), i;
	struct nicoff_cmd c;

	if (!sp->open) {
		if (r < 300)
			s_open(w, n, p);
		return;
	}
	if (r < 350) {				/* send */
		u64 len = s_rand(w, 4) ? s_rand(w, 5000) : s_rand(w, 80000);
		u64 off = s_rand(w, S_SRC - 80000);

		c = t_send(0, dn, dp, sp->msrc, off, len,
			   ((u64)n << 48) | ((u64)p << 40) | off);
		s_post(w, n, p, &c, -1);
	} else if (r < 650) {			/* receive, into a free slot */
		for (i = 0; i < S_SLOTS && sp->slot_busy[i]; i++)
			;
		if (i == S_SLOTS)
			return;
		c = t_recv(0, sp->mdst, (u64)i * S_SLOT, S_SLOT,
			   s_rand(w, 3) ? NICOFF_ANY : dn, s_rand(w, 3) ? NICOFF_ANY : dp, 0, 0);
		s_post(w, n, p, &c, i);
	} else if (r < 800) {			/* put or get */
		u64 len = s_rand(w, 30000), roff = s_rand(w, S_RMA - 20000);
		u32 rkey = dsp->open && s_rand(w, 10) ? dsp->rkey : s_rand(w, 1000);

		c = t_rdma(r < 725 ? NICOFF_OP_PUT : NICOFF_OP_GET, 0, dn, dp, rkey, roff,
			   r < 725 ? sp->msrc : sp->mrma, s_rand(w, 1000), len);
		s_post(w, n, p, &c, -1);
	} else if (r < 810) {			/* the port closes */
		s_close(w, n, p);
	} else if (r < 815) {			/* a region goes and comes back */
		u32 h;

		sim_dereg_mr(w->s, n, p, sp->msrc);
		sim_run_until(w->s, sim_now(w->s) + s_rand(w, 20000));
		assert_int_equal(sim_reg_mr(w->s, n, p, sp->src, S_SRC, 0, &sp->msrc, &h), 0);
	} else if (r < 820) {			/* a card dies or comes back */
		w->dead[n] = !w->dead[n];
		sim_set_dead(w->s, n, w->dead[n]);
	} else if (r < 822) {			/* a card restarts */
		assert_int_equal(sim_restart(w->s, n, ++w->epoch[n]), 0);
		for (i = 0; i < S_PORTS; i++) {
			w->port[n][i].open = false;
			w->port[n][i].ncmds = 0;
			memset(w->port[n][i].slot_busy, 0, sizeof(w->port[n][i].slot_busy));
		}
	} else {				/* time passes */
		sim_run_until(w->s, sim_now(w->s) + s_rand(w, 30000));
	}
}

static void s_run(u64 seed, u32 steps)
{
	struct s_world *w = calloc(1, sizeof(*w));
	struct sim_cfg cfg;
	u32 n, p, i;

	sim_cfg_default(&cfg, S_NODES);
	cfg.seed = seed;
	cfg.fw.mtu = 1000 + (u32)(seed % 3) * 1500;
	cfg.fw.window = 8 + (u32)(seed % 4) * 8;
	cfg.fw.max_retries = 8;
	cfg.fw.unexpected_bytes = 100000;
	cfg.faults = (struct fw_fault_cfg){ .drop_ppm = 50000, .dup_ppm = 30000,
					    .corrupt_ppm = 10000, .reorder_ppm = 30000,
					    .delay_ppm = 20000, .delay_ns = 30000 };
	w->s = sim_create(&cfg);
	w->rng = seed * 0x9e3779b97f4a7c15ull + 1;
	w->next_tag = 1;
	for (n = 0; n < S_NODES; n++) {
		w->epoch[n] = cfg.fw.epoch;
		for (p = 0; p < S_PORTS; p++) {
			w->port[n][p].src = malloc(S_SRC);
			w->port[n][p].dst = malloc((size_t)S_SLOTS * S_SLOT);
			w->port[n][p].rma = calloc(1, S_RMA);
		}
	}
	for (i = 0; i < steps; i++) {
		s_step(w);
		s_reap(w);
	}
	/* Everyone alive again: nothing may be left but receives. */
	for (n = 0; n < S_NODES; n++)
		sim_set_dead(w->s, n, false);
	assert_true(sim_run_idle(w->s, sim_now(w->s) + 1000 * T_SEC));
	s_reap(w);
	for (n = 0; n < S_NODES; n++) {
		for (p = 0; p < S_PORTS; p++) {
			struct s_port *sp = &w->port[n][p];

			for (i = 0; i < sp->ncmds; i++)
				if (sp->cmds[i].opcode != NICOFF_OP_RECV)
					fail_msg("seed %u: %u:%u: opcode %u left hanging",
						 (u32)seed, n, p, sp->cmds[i].opcode);
		}
	}
	print_message("seed %2llu: %llu completions (%llu sends, %llu receives ok",
		      (unsigned long long)seed, (unsigned long long)w->completions,
		      (unsigned long long)w->sends_ok, (unsigned long long)w->recvs_ok);
	print_message(", %llu errors), %llu us\n", (unsigned long long)w->errors,
		      (unsigned long long)sim_now(w->s) / 1000);
	assert_true(w->recvs_ok > 0);
	t_finish(w->s);
	for (n = 0; n < S_NODES; n++) {
		for (p = 0; p < S_PORTS; p++) {
			free(w->port[n][p].src);
			free(w->port[n][p].dst);
			free(w->port[n][p].rma);
		}
	}
	free(w);
}

static void test_stress(void **state)
{
	u64 seed;

	(void)state;
	for (seed = 1; seed <= 12; seed++)
		s_run(seed, 4000);
}

int main(void)
{
	const struct FWT_UNIT_TEST tests[] = {
		cmocka_unit_test(test_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
