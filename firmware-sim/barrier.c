// SPDX-License-Identifier: GPL-2.0
/*
 * Process groups and their barriers, run by the card: the NIC-based
 * collective protocol of seed 000 (sections 3 and 6), not the
 * point-to-point path.
 *
 * - Queuing: a group's messages do not wait in any peer's queue; they go
 *   to the fabric the moment the card decides to send them.
 * - Packetisation: each group has one static send packet (its header,
 *   filled in at creation); a message is that packet with the destination,
 *   the epoch and a value patched in.  No payload, no fragments.
 * - Bookkeeping: one record per barrier, a bit vector of the messages
 *   received (bit i: the i-th sender of the schedule, by rank) and a count
 *   per step; no send records.
 * - Error control: receiver-driven.  No acknowledgments: a member that
 *   waits too long for a message sends a NACK to its sender, which sends it
 *   again (or, if it has not got that far, says it is alive; if its group
 *   failed or is gone, says so).  A member silent for dead_ns fails the
 *   barrier with -ETIMEDOUT; one whose group failed or went makes it fail
 *   with -ECONNRESET.
 *
 * Barriers of a group are numbered by epoch, in every message.  A member
 * can receive messages of barrier k + 1 before it has finished barrier k
 * (its peers left k, so it had entered k) but never of k + 2, so the card
 * keeps two bit vectors, for the epoch running (or next to run) and the
 * one after, and drops anything else as stale.
 *
 * Creation is itself a barrier (epoch 0, dissemination): it completes
 * when every member has created the group.  With NICOFF_BARRIER_AUTO the
 * members then run every algorithm for warm-up plus barrier_rounds
 * barriers in lockstep (seed 003, 3.2); rank 0's card times them and
 * decides, and a dissemination barrier whose messages carry a value (OR
 * of what the sender heard, an all-reduce) tells everyone.  One more
 * dissemination barrier follows, so that nobody gets a message of the
 * chosen algorithm before it knows the choice.  With
 * NICOFF_GROUP_F_HOST_TRIALS the cards' trials are followed by the
 * processes' own barriers (BARRIER commands posted while the creation is
 * pending, one epoch each, the candidates taken in turn): the time a
 * process takes to see one end and enter the next, which the cards'
 * trials leave out and which is most of a barrier as a program sees it,
 * can then overrule the cards' pick.
 *
 * A destroyed group, or one whose port went away, lingers for dead_ns as
 * a zombie that only answers NACKs, so that peers finishing their last
 * barrier can still get a lost message again.
 */
#include "barrier.h"
#include "engine.h"
#include "grouptab.h"

/* Member tables up to this size are checked whole (cards, duplicates). */
#define FW_GROUP_CHECK_MAX	4096u
/* Auto: barriers per candidate run before the timed ones. */
#define FW_BAR_AUTO_WARM	4u

enum fw_gstate {
	FW_G_CREATING,		/* epoch 0 and, with auto, the trials */
	FW_G_READY,
	FW_G_FAILED,		/* a barrier failed: only DESTROY is left */
};

struct fw_bpeer {
	u32 rank;
	u32 node;
	u32 port;
};

/* Host trials (NICOFF_GROUP_F_HOST_TRIALS): apart, so that groups stay small. */
struct fw_htrials {
	u64 tag;			/* of the BARRIER that waits for its epoch */
	bool op;			/* one waits */
	u64 times[FW_BAR_NALG];
};

struct fw_group {
	struct fw_gent e;		/* port, id, zombie: in the card's table */
	u32 rank;
	u32 size;
	u8 state;			/* enum fw_gstate */
	bool running;			/* an epoch is in progress */
	bool host_op;			/* a command waits for the epoch's end */
	u8 cmd_opcode;
	s32 err;			/* why it failed */
	u64 cmd_tag;

	u32 want;			/* algorithm asked for, AUTO included */
	u32 alg;			/* the one of host barriers; 0 until decided */
	u32 tree_d;
	u32 comb_k;
	u32 rounds;			/* auto: barriers per candidate */
	u32 decision;			/* auto, rank 0: its choice */
	u64 decide_epoch;		/* auto: the barrier that tells the choice */
	u64 user_epoch;			/* the first host barrier */
	struct fw_bsched *sched[FW_BAR_NALG];
	struct fw_bpeer *peers;		/* members it talks to, by rank */
	u32 npeers;
	struct fw_pkt_hdr tmpl;		/* the static send packet */

	/* The barrier record: epoch running (or next), and the one after. */
	u64 epoch;
	u32 step;			/* step it waits in */
	u32 sent;			/* steps whose messages went out */
	u32 send_pos;			/* next message of sched->send to go */
	u32 words;			/* u64s in each bit vector */
	u32 max_steps;
	u64 *bits[2];			/* by epoch & 1 */
	u32 *got[2];			/* messages in per step, by epoch & 1 */
	u64 acc[2];			/* OR of the values received */
	u64 last_val;			/* value of the last epoch done */

	/* Timers. */
	struct fw_timer timer;		/* earliest of the below, in card->timers */
	u64 nack_at;
	u64 nack_ivl;
	u64 life_at;			/* last sign of life of whom it waits for */
	u32 nack_rounds;		/* NACK rounds since then */
	u64 t_start;			/* the epoch's start */
	u64 srtt;			/* smoothed duration of its barriers */
	u64 create_by;
	u64 t_mark;			/* auto: end of the previous barrier */
	u64 *round_ns;			/* auto: the timed barriers' intervals */
	u64 times[FW_BAR_NALG];		/* auto: the cards' trials */
	struct fw_htrials *ht;		/* auto: host trials, or NULL */
};

/*
 * Groups are many (64 per port, and their zombies): one stays within a
 * 512-byte allocation (limits.md counts 3 KiB per group with everything it
 * holds).  Auto's records while it is created are allocated apart.
 */
FW_STATIC_ASSERT(sizeof(struct fw_group) <= 512, "struct fw_group outgrew 512 bytes");

struct fw_bcard {
	struct fw_gtab groups;
	u64 members;			/* sizes of the groups in the table, summed */
};

static struct fw_bcard *fw_bcard(struct fw_card *card)
{
	if (!card->bar)
		card->bar = fwos_zalloc(card->host, sizeof(*card->bar));
	return card->bar;
}

static struct fw_group *fw_grp_of(struct fw_gent *e)
{
	return e ? fw_container_of(e, struct fw_group, e) : NULL;
}

/* The live group (or, if @zombies, a zombie when no live one) of (port, id). */
static struct fw_group *fw_grp_find(struct fw_card *card, u32 port, u32 id, bool zombies)
{
	return card->bar ? fw_grp_of(fw_gtab_find(&card->bar->groups, port, id, zombies)) : NULL;
}

/*
 * Free @g, its timer and whatever it allocated: a group that fw_grp_create()
 * gives up on half-built as well as one that is unhashed.
 */
static void fw_grp_release(struct fw_card *card, struct fw_group *g)
{
	u32 i;

	fw_timer_del(&card->timers, &g->timer);
	for (i = 0; i < FW_BAR_NALG; i++)
		fw_bsched_free(card, g->sched[i]);
	for (i = 0; i < 2; i++) {
		fwos_free(card->host, g->bits[i]);
		fwos_free(card->host, g->got[i]);
	}
	fwos_free(card->host, g->peers);
	fwos_free(card->host, g->round_ns);
	fwos_free(card->host, g->ht);
	fwos_free(card->host, g);
}

static void fw_grp_free(struct fw_card *card, struct fw_group *g)
{
	fw_gtab_del(&card->bar->groups, &g->e);
	card->bar->members -= g->size;
	fw_grp_release(card, g);
}

static void fw_grp_arm(struct fw_card *card, struct fw_group *g, u64 when)
{
	fw_timer_set(&card->timers, &g->timer, when);
}

static const struct fw_bpeer *fw_grp_peer(const struct fw_group *g, u32 rank)
{
	int i = fw_rank_search(g->peers, g->npeers, sizeof(*g->peers),
			       offsetof(struct fw_bpeer, rank), rank);

	return i < 0 ? NULL : &g->peers[i];
}

/*
 * The cards' own trials run each candidate's FW_BAR_AUTO_WARM +
 * barrier_rounds barriers in a row.  Host trials, after them, visit each
 * candidate for one barrier that is not timed (the processes leave the
 * previous algorithm's barrier at different times: a tree's root first)
 * and FW_BAR_TRIAL_BLOCK timed ones, the candidates in turn, as often as
 * barrier_rounds asks: so that a process held up for a while (a busy CPU)
 * slows all of them alike.
 */
static u32 fw_grp_visits(const struct fw_group *g)
{
	return (g->rounds + FW_BAR_TRIAL_BLOCK - 1) / FW_BAR_TRIAL_BLOCK;
}

/* The first host trial epoch: after epoch 0 and the cards' trials. */
static u64 fw_grp_host_from(const struct fw_group *g)
{
	return 1 + (u64)(FW_BAR_NALG - 1) * (FW_BAR_AUTO_WARM + g->rounds);
}

/* Whether epoch @e is a host trial's (or after): it starts when its process enters it. */
static bool fw_grp_waits_host(const struct fw_group *g, u64 e)
{
	return g->ht && e >= fw_grp_host_from(g);
}

/* Timed host trial barriers per candidate. */
static u32 fw_grp_host_samples(const struct fw_group *g)
{
	return g->ht ? fw_grp_visits(g) * FW_BAR_TRIAL_BLOCK : 0;
}

/*
 * Auto's trial epoch @e (1 to decide_epoch - 1): its candidate, in *@host
 * whether it is a host trial, and in *@sample which of the candidate's
 * timed barriers (of the cards' or of the hosts') it is, -1 if none.
 */
static u32 fw_grp_trial(const struct fw_group *g, u64 e, bool *host, s32 *sample)
{
	const u32 n = FW_BAR_NALG - 1, per = FW_BAR_AUTO_WARM + g->rounds;
	u64 t, visit;
	u32 pos;

	*host = fw_grp_waits_host(g, e);
	if (!*host) {
		t = e - 1;
		pos = (u32)(t % per);
		*sample = pos >= FW_BAR_AUTO_WARM ? (s32)(pos - FW_BAR_AUTO_WARM) : -1;
		return 1 + (u32)(t / per);
	}
	t = e - fw_grp_host_from(g);
	visit = t / (FW_BAR_TRIAL_BLOCK + 1);
	pos = (u32)(t % (FW_BAR_TRIAL_BLOCK + 1));
	*sample = pos ? (s32)((visit / n) * FW_BAR_TRIAL_BLOCK + pos - 1) : -1;
	return 1 + (u32)(visit % n);
}

/* The schedule of epoch @e, NULL while it is not known yet. */
static const struct fw_bsched *fw_grp_sched(const struct fw_group *g, u64 e)
{
	s32 sample;
	bool host;

	if (e >= g->user_epoch)
		return g->alg ? g->sched[g->alg] : NULL;
	if (g->want != NICOFF_BARRIER_AUTO || !e || e >= g->decide_epoch)
		return g->sched[NICOFF_BARRIER_DISSEMINATION];
	return g->sched[fw_grp_trial(g, e, &host, &sample)];
}

/* What this member adds to the value of epoch @e: rank 0's choice. */
static u64 fw_grp_own_val(const struct fw_group *g, u64 e)
{
	return g->want == NICOFF_BARRIER_AUTO && e == g->decide_epoch && !g->rank ?
	       g->decision : 0;
}

static u32 fw_alg_param(const struct fw_group *g, u32 alg)
{
	if (alg == NICOFF_BARRIER_TREE)
		return g->tree_d;
	if (alg == NICOFF_BARRIER_COMBINING)
		return g->comb_k;
	return alg == NICOFF_BARRIER_TOURNAMENT ? 2 : 0;
}

static void fw_bar_xmit(struct fw_card *card, struct fw_pkt_hdr *h)
{
	struct fw_pkt *pkt = fwos_pkt_alloc(card->host, 0);

	if (!pkt)
		return;		/* as good as lost: the receiver asks again */
	pkt->hdr = *h;
	pkt->hdr.len = 0;
	fw_pkt_send(card, pkt);
}

/* A packet of the group to member @to: the static packet, patched. */
static void fw_bar_send(struct fw_card *card, struct fw_group *g, u8 type, u32 to, u64 epoch,
			u64 val, s32 err)
{
	const struct fw_bpeer *p = fw_grp_peer(g, to);

	if (!p)
		return;
	g->tmpl.type = type;
	g->tmpl.dst_node = p->node;
	g->tmpl.dst_port = p->port;
	g->tmpl.bar.to = to;
	g->tmpl.bar.epoch = epoch;
	g->tmpl.bar.value = val;
	g->tmpl.err = err;
	if (type == FW_PKT_BARRIER)
		card->stats.barrier_msgs++;
	else if (type == FW_PKT_BARRIER_NACK)
		card->stats.barrier_nacks++;
	fw_bar_xmit(card, &g->tmpl);
}

static void fw_grp_complete(struct fw_card *card, struct fw_group *g, s32 status, u64 result)
{
	if (!g->host_op)
		return;
	g->host_op = false;
	if (g->e.zombie)
		return;
	/* The engines serving the group wait for it to be usable everywhere. */
	if (g->cmd_opcode == NICOFF_OP_GROUP_CREATE)
		fw_engines_group_ready(card, g->e.port, g->e.id, status);
	fw_complete(card, g->e.port, g->cmd_tag, g->cmd_opcode, status, result);
}

/* Host trials: the BARRIER of the trial epoch ends, @left more to come. */
static void fw_grp_trial_done(struct fw_card *card, struct fw_group *g, s32 status, u64 left)
{
	if (!g->ht || !g->ht->op)
		return;
	g->ht->op = false;
	if (!g->e.zombie)
		fw_complete(card, g->e.port, g->ht->tag, NICOFF_OP_BARRIER, status, left);
}

static void fw_grp_fail(struct fw_card *card, struct fw_group *g, s32 err)
{
	g->state = FW_G_FAILED;
	g->err = err;
	g->running = false;
	card->stats.barrier_failures++;
	fw_grp_arm(card, g, FW_NEVER);
	fw_grp_trial_done(card, g, err, 0);
	fw_grp_complete(card, g, err, 0);
}

/* Forget the record of epoch @e, whose slot epoch e + 2 takes over. */
static void fw_grp_clear(struct fw_group *g, u64 e)
{
	u32 i = e & 1;

	memset(g->bits[i], 0, g->words * sizeof(u64));
	memset(g->got[i], 0, g->max_steps * sizeof(u32));
	g->acc[i] = 0;
}

/* The fastest candidate of @times, ties to the lower number. */
static u32 fw_grp_best(const u64 *times)
{
	u32 a, best = NICOFF_BARRIER_DISSEMINATION;

	for (a = 1; a < FW_BAR_NALG; a++)
		if (times[a] < times[best] || (times[a] == times[best] && a < best))
			best = a;
	return best;
}

/*
 * Auto, rank 0: the cards' pick, unless the host trials time another
 * candidate faster than it by more than FW_BAR_HOST_MARGIN_PCT.  The
 * cards' trials are steady but blind to the processes; the hosts' see
 * them but are noisy (in the VM, candidates within the margin swap places
 * from run to run): they overrule only a clear difference.
 */
static u32 fw_grp_decide(const struct fw_group *g)
{
	u32 pick = fw_grp_best(g->times), h;

	if (!g->ht)
		return pick;
	h = fw_grp_best(g->ht->times);
	return g->ht->times[pick] * 100 > g->ht->times[h] * (100 + FW_BAR_HOST_MARGIN_PCT) ?
	       h : pick;
}

static void fw_grp_start(struct fw_card *card, struct fw_group *g, u64 now);

/*
 * How long a member waits in a step before it NACKs: rto_ns, or twice the
 * group's usual barrier if that is longer (up to rto_max_ns), so that a
 * barrier that is merely long (a central counter over thousands of
 * members, late processes) does not bring NACKs from everyone at once.
 */
static u64 fw_grp_nack_base(const struct fw_card *card, const struct fw_group *g)
{
	return fw_min_u64(fw_max_u64(card->cfg.rto_ns, 2 * g->srtt), card->cfg.rto_max_ns);
}

/*
 * Epoch g->epoch is over.  Host barriers complete; during creation the
 * next internal barrier starts at once (the caller loops).
 */
static void fw_grp_epoch_done(struct fw_card *card, struct fw_group *g, u64 now)
{
	u64 e = g->epoch;
	u32 a;

	g->last_val = g->acc[e & 1] | fw_grp_own_val(g, e);
	g->srtt = g->srtt ? (7 * g->srtt + (now - g->t_start)) / 8 : now - g->t_start;
	fw_grp_clear(g, e);
	g->epoch++;
	g->running = false;
	g->sent = 0;
	g->step = 0;
	if (g->state != FW_G_CREATING) {
		fw_grp_arm(card, g, FW_NEVER);
		fw_grp_complete(card, g, 0, e - g->user_epoch + 1);
		return;
	}
	if (g->want == NICOFF_BARRIER_AUTO && e && e < g->decide_epoch) {
		s32 sample;
		bool host;
		u32 n;
		u64 *ns;

		a = fw_grp_trial(g, e, &host, &sample);
		n = host ? fw_grp_host_samples(g) : g->rounds;
		/*
		 * The cards' trials time one candidate after another: its
		 * samples take the first g->rounds, each in turn.  The
		 * hosts' come in turn: each has its own after those.
		 */
		ns = g->round_ns + (host ? g->rounds + (size_t)(a - 1) * n : 0);
		if (sample >= 0)
			ns[sample] = now - g->t_mark;
		g->t_mark = now;
		if (sample == (s32)n - 1)
			(host ? g->ht->times : g->times)[a] = fw_bar_trial_ns(ns, n);
		if (e + 1 == g->decide_epoch)
			g->decision = fw_grp_decide(g);
	} else if (g->want == NICOFF_BARRIER_AUTO && e == g->decide_epoch) {
		a = (u32)(g->last_val & 0xff);
		if (!a || a >= FW_BAR_NALG || !g->sched[a])
			a = NICOFF_BARRIER_DISSEMINATION;
		g->alg = a;
		/* Nobody can ask for an older message than of epoch e now. */
		for (a = 1; a < FW_BAR_NALG; a++) {
			if (a != g->alg && a != NICOFF_BARRIER_DISSEMINATION) {
				fw_bsched_free(card, g->sched[a]);
				g->sched[a] = NULL;
			}
		}
	}
	if (fw_grp_waits_host(g, e))
		fw_grp_trial_done(card, g, 0, g->user_epoch - g->epoch);
	if (g->epoch == g->user_epoch) {
		g->state = FW_G_READY;
		/* Auto's trial records are of no more use. */
		fwos_free(card->host, g->round_ns);
		g->round_ns = NULL;
		fwos_free(card->host, g->ht);
		g->ht = NULL;
		fw_grp_arm(card, g, FW_NEVER);
		fw_grp_complete(card, g, 0, g->alg | (u64)fw_alg_param(g, g->alg) << 32);
		return;
	}
	if (fw_grp_waits_host(g, g->epoch) && !g->ht->op) {
		/* The next epoch starts when its process enters it. */
		fw_grp_arm(card, g, g->create_by);
		return;
	}
	fw_grp_start(card, g, now);
}

/* Enter step g->step: send its messages. */
static void fw_grp_send_step(struct fw_card *card, struct fw_group *g, const struct fw_bsched *s)
{
	u64 val = g->acc[g->epoch & 1] | fw_grp_own_val(g, g->epoch);

	while (g->send_pos < s->nsend && s->send[g->send_pos].step <= g->step) {
		fw_bar_send(card, g, FW_PKT_BARRIER, s->send[g->send_pos].rank, g->epoch, val, 0);
		g->send_pos++;
	}
	g->sent = g->step + 1;
}

/* Send what is due and move through the steps whose messages are all in. */
static void fw_grp_run(struct fw_card *card, struct fw_group *g, u64 now)
{
	while (g->running) {
		const struct fw_bsched *s = fw_grp_sched(g, g->epoch);
		u32 i = g->epoch & 1;

		if (!s) {
			fw_grp_fail(card, g, -EPROTO);
			return;
		}
		while (g->step < s->nsteps) {
			if (g->sent <= g->step)
				fw_grp_send_step(card, g, s);
			if (g->got[i][g->step] < s->need[g->step])
				break;
			g->step++;
			g->life_at = now;
			g->nack_rounds = 0;
			g->nack_ivl = fw_grp_nack_base(card, g);
			g->nack_at = fw_add_sat(now, g->nack_ivl);
		}
		if (g->step < s->nsteps) {
			u64 limit = g->state == FW_G_CREATING ? g->create_by :
				    fw_add_sat(g->life_at, card->dead_ns);

			fw_grp_arm(card, g, fw_min_u64(g->nack_at, limit));
			return;
		}
		fw_grp_epoch_done(card, g, now);
	}
}

static void fw_grp_start(struct fw_card *card, struct fw_group *g, u64 now)
{
	g->running = true;
	g->step = 0;
	g->sent = 0;
	g->send_pos = 0;
	g->t_start = now;
	g->life_at = now;
	g->nack_rounds = 0;
	g->nack_ivl = fw_grp_nack_base(card, g);
	g->nack_at = fw_add_sat(now, g->nack_ivl);
}

static void fw_grp_begin(struct fw_card *card, struct fw_group *g)
{
	u64 now = fwos_now(card->host);

	fw_grp_start(card, g, now);
	fw_grp_run(card, g, now);
}

/* ------------------------------------------------------------ creation -- */

/*
 * Sort the @n ranks (all below @size) at @a and drop repeats, through a
 * bitmap of the group: linear, where sorting a schedule that names most of
 * a big group (the central counter's root) would be n log n.
 */
static int fw_ranks_unique(struct fw_card *card, u64 *a, u32 *n, u32 size)
{
	u32 words = size / 64 + 1, i, j, m = 0;
	u64 *seen = fwos_zalloc(card->host, words * sizeof(u64));

	if (!seen)
		return -ENOMEM;
	for (i = 0; i < *n; i++)
		if (a[i] < size)
			seen[a[i] / 64] |= 1ull << (a[i] % 64);
	for (i = 0; i < words; i++) {
		u64 w = seen[i];

		for (j = 0; w; j++, w >>= 1)
			if (w & 1)
				a[m++] = (u64)i * 64 + j;
	}
	fwos_free(card->host, seen);
	*n = m;
	return 0;
}

/* The member table: check it and keep the entries of the peers. */
static int fw_grp_members(struct fw_card *card, struct fw_group *g, u32 port,
			  const struct nicoff_op_group *op)
{
	struct nicoff_member *tab = NULL, m;
	u64 *ranks = NULL;
	u32 n = 0, i, a;
	int ret = 0;

	for (a = 1; a < FW_BAR_NALG; a++)
		if (g->sched[a])
			n += g->sched[a]->nsend + g->sched[a]->nrecv;
	if (n) {
		ranks = fwos_zalloc(card->host, n * sizeof(*ranks));
		if (!ranks)
			return -ENOMEM;
	}
	n = 0;
	for (a = 1; a < FW_BAR_NALG; a++) {
		const struct fw_bsched *s = g->sched[a];

		for (i = 0; s && i < s->nsend; i++)
			ranks[n++] = s->send[i].rank;
		for (i = 0; s && i < s->nrecv; i++)
			ranks[n++] = s->recv[i].rank;
	}
	if ((u64)n * 64 >= g->size) {
		ret = fw_ranks_unique(card, ranks, &n, g->size);
		if (ret)
			goto out;
	} else {
		fw_sort_u64(ranks, n);
		for (i = 0, a = 0; i < n; i++)
			if (!a || ranks[a - 1] != ranks[i])
				ranks[a++] = ranks[i];
		n = a;
	}
	if (n) {
		g->peers = fwos_zalloc(card->host, n * sizeof(*g->peers));
		if (!g->peers) {
			ret = -ENOMEM;
			goto out;
		}
	}
	g->npeers = n;

	if (g->size <= FW_GROUP_CHECK_MAX) {
		u64 *keys;

		tab = fwos_zalloc(card->host, (size_t)g->size * (sizeof(*tab) + sizeof(u64)));
		if (!tab) {
			ret = -ENOMEM;
			goto out;
		}
		ret = fwos_mem_read(card->host, port, op->mr, 0, op->off, tab,
				    g->size * (u32)sizeof(*tab));
		if (ret)
			goto out;
		keys = (u64 *)(tab + g->size);
		for (i = 0; i < g->size; i++) {
			if (tab[i].card >= card->cfg.num_nodes) {
				ret = -ENODEV;
				goto out;
			}
			keys[i] = (u64)tab[i].card << 32 | tab[i].port;
		}
		fw_sort_u64(keys, g->size);
		for (i = 1; i < g->size; i++) {
			if (keys[i] == keys[i - 1]) {
				ret = -EINVAL;
				goto out;
			}
		}
	}
	for (i = 0; i <= n; i++) {
		u32 r = i < n ? (u32)ranks[i] : g->rank;

		if (tab) {
			m = tab[r];
		} else {
			ret = fwos_mem_read(card->host, port, op->mr, 0,
					    op->off + (u64)r * sizeof(m), &m, sizeof(m));
			if (ret)
				goto out;
		}
		if (m.card >= card->cfg.num_nodes) {
			ret = -ENODEV;
			goto out;
		}
		if (i == n) {
			/* Its own entry must be this port: the rank is right. */
			if (m.card != card->cfg.node || m.port != port)
				ret = -EINVAL;
			break;
		}
		g->peers[i].rank = r;
		g->peers[i].node = m.card;
		g->peers[i].port = m.port;
	}
out:
	fwos_free(card->host, tab);
	fwos_free(card->host, ranks);
	return ret;
}

static int fw_grp_check(struct fw_card *card, u32 port, const struct nicoff_op_group *op,
			u32 *alg)
{
	int ret;

	if (op->reserved || (op->flags & ~NICOFF_GROUP_F_ALL) ||
	    ((op->flags & NICOFF_GROUP_F_HOST_TRIALS) && op->algorithm != NICOFF_BARRIER_AUTO) ||
	    (op->bcast_flags & ~NICOFF_BCAST_F_ALL) ||
	    (op->bcast_channels && (op->bcast_channels < NICOFF_BCAST_MIN_CHANNELS ||
				    op->bcast_channels > NICOFF_BCAST_MAX_CHANNELS)))
		return -EINVAL;
	*alg = op->algorithm == NICOFF_BARRIER_DEFAULT ? card->cfg.barrier_alg : op->algorithm;
	if (*alg >= NICOFF_BARRIER_MAX)
		return -EINVAL;
	if (op->param && (op->param < 2 || op->param > FW_BAR_MAX_PARAM ||
			  (*alg != NICOFF_BARRIER_AUTO && *alg != NICOFF_BARRIER_TREE &&
			   *alg != NICOFF_BARRIER_COMBINING)))
		return -EINVAL;
	if (!op->size)
		return -EINVAL;
	/* Before anything is read or allocated: the card's work grows with it. */
	if (op->size > card->cfg.max_group_size)
		return -E2BIG;
	if (op->rank >= op->size)
		return -EINVAL;
	if (op->off + (u64)op->size * sizeof(struct nicoff_member) < op->off)
		return -ERANGE;
	ret = fwos_mem_read(card->host, port, op->mr, 0,
			    op->off + (u64)op->size * sizeof(struct nicoff_member), NULL, 0);
	if (ret)
		return ret;
	if (fw_grp_find(card, port, op->group_id, false))
		return -EEXIST;
	if (!fw_bcard(card))
		return -ENOMEM;
	if (fw_gtab_live(&card->bar->groups, port) >= card->cfg.max_groups)
		return -ENOSPC;
	/* A group's state grows with its size: the card's groups share a bound. */
	return op->size > card->cfg.card_group_members ||
	       card->bar->members > card->cfg.card_group_members - op->size ? -ENOSPC : 0;
}

static void fw_grp_timer(struct fw_card *card, struct fw_timer *t, u64 now);

static int fw_grp_create(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	const struct nicoff_op_group *op = &cmd->group;
	struct fw_group *g, *z;
	u32 alg, a, nrecv = 0;
	int ret;

	ret = fw_grp_check(card, port->id, op, &alg);
	if (ret)
		return ret;
	g = fw_timer_owner_new(card->host, &card->timers, sizeof(*g),
			       offsetof(struct fw_group, timer), fw_grp_timer, FW_TIMER_GROUP);
	if (!g)
		return -ENOMEM;
	g->e.port = port->id;
	g->e.id = op->group_id;
	g->rank = op->rank;
	g->size = op->size;
	g->want = alg;
	g->tree_d = op->param ? op->param : FW_BAR_TREE_DEGREE;
	g->comb_k = op->param ? op->param : FW_BAR_COMBINING_FANIN;
	g->rounds = card->cfg.barrier_rounds;
	ret = -ENOMEM;
	if (op->flags & NICOFF_GROUP_F_HOST_TRIALS) {
		g->ht = fwos_zalloc(card->host, sizeof(*g->ht));
		if (!g->ht)
			goto fail;
	}
	if (alg == NICOFF_BARRIER_AUTO) {
		size_t n = g->rounds + (size_t)(FW_BAR_NALG - 1) * fw_grp_host_samples(g);

		g->round_ns = fwos_zalloc(card->host, n * sizeof(*g->round_ns));
		if (!g->round_ns)
			goto fail;
	}
	for (a = 1; a < FW_BAR_NALG; a++) {
		if (alg != NICOFF_BARRIER_AUTO && a != alg && a != NICOFF_BARRIER_DISSEMINATION)
			continue;
		g->sched[a] = fw_bsched_build(card, a, fw_alg_param(g, a), g->rank, g->size);
		if (!g->sched[a])
			goto fail;
		if (g->sched[a]->nsteps > g->max_steps)
			g->max_steps = g->sched[a]->nsteps;
		if (g->sched[a]->nrecv > nrecv)
			nrecv = g->sched[a]->nrecv;
	}
	g->words = (nrecv + 63) / 64;
	for (a = 0; a < 2; a++) {
		g->bits[a] = fwos_zalloc(card->host, (g->words + 1) * sizeof(u64));
		g->got[a] = fwos_zalloc(card->host, (g->max_steps + 1) * sizeof(u32));
		if (!g->bits[a] || !g->got[a])
			goto fail;
	}
	ret = fw_grp_members(card, g, port->id, op);
	if (ret)
		goto fail;
	/* Last: nothing after it fails, so no engine's side outlives a failed creation. */
	ret = fw_engines_group_create(card, port->id, op);
	if (ret)
		goto fail;

	if (alg == NICOFF_BARRIER_AUTO) {
		/* The cards' trials, then the hosts' if asked for. */
		g->decide_epoch = fw_grp_host_from(g) + (u64)(FW_BAR_NALG - 1) *
				  fw_grp_host_samples(g) / FW_BAR_TRIAL_BLOCK *
				  (FW_BAR_TRIAL_BLOCK + 1);
		g->user_epoch = g->decide_epoch + 2;
	} else {
		g->alg = alg;
		g->user_epoch = 1;
	}
	g->tmpl.src_node = card->cfg.node;
	g->tmpl.src_port = port->id;
	g->tmpl.bar.group = g->e.id;
	g->tmpl.bar.from = g->rank;
	g->tmpl.bar.size = g->size;

	/* A new incarnation replaces a lingering one of the same name. */
	z = fw_grp_find(card, port->id, g->e.id, true);
	if (z)
		fw_grp_free(card, z);
	fw_gtab_add(&card->bar->groups, &g->e);
	card->bar->members += g->size;

	g->host_op = true;
	g->cmd_tag = cmd->tag;
	g->cmd_opcode = cmd->opcode;
	g->create_by = fw_add_sat(fwos_now(card->host), (u64)card->cfg.group_create_ms * 1000000);
	fw_grp_begin(card, g);
	return 0;
fail:
	fw_grp_release(card, g);
	return ret;
}

/*
 * Make the group a zombie: it answers NACKs until dead_ns from now.  The
 * other engines' operations on it (broadcasts) end too, completing
 * (@complete: a GROUP_DESTROY) or not (the port detaches).
 */
static void fw_grp_bury(struct fw_card *card, struct fw_group *g, bool complete)
{
	fw_engines_group_bury(card, g->e.port, g->e.id, complete);
	g->e.zombie = true;
	g->running = false;
	fw_grp_arm(card, g, fw_add_sat(fwos_now(card->host), card->dead_ns));
}

static const struct nicoff_op_group fw_grp_zero;

/* BARRIER and GROUP_DESTROY name the group by id only. */
static bool fw_grp_only_id(const struct nicoff_op_group *op)
{
	struct nicoff_op_group o = *op;

	o.group_id = 0;
	return !memcmp(&o, &fw_grp_zero, sizeof(o));
}

int fw_barrier_cmd(struct fw_card *card, struct fw_port *port, const struct nicoff_cmd *cmd)
{
	struct fw_group *g;

	if (cmd->opcode == NICOFF_OP_GROUP_CREATE)
		return fw_grp_create(card, port, cmd);
	if (!fw_grp_only_id(&cmd->group))
		return -EINVAL;
	g = fw_grp_find(card, port->id, cmd->group.group_id, false);
	if (!g)
		return -ENOENT;
	if (cmd->opcode == NICOFF_OP_GROUP_DESTROY) {
		fw_grp_trial_done(card, g, -ECANCELED, 0);
		fw_grp_complete(card, g, -ECANCELED, 0);
		fw_grp_bury(card, g, true);
		fw_complete(card, port->id, cmd->tag, cmd->opcode, 0, 0);
		return 0;
	}
	if (g->state == FW_G_FAILED)
		return g->err;
	if (g->state == FW_G_CREATING && g->ht && !g->ht->op) {
		/* A trial epoch: it starts now if the one before is over. */
		g->ht->op = true;
		g->ht->tag = cmd->tag;
		if (!g->running && fw_grp_waits_host(g, g->epoch))
			fw_grp_begin(card, g);
		return 0;
	}
	if (g->running || g->host_op)
		return -EBUSY;
	g->host_op = true;
	g->cmd_tag = cmd->tag;
	g->cmd_opcode = cmd->opcode;
	fw_grp_begin(card, g);
	return 0;
}

void fw_barrier_port_detach(struct fw_card *card, u32 port)
{
	struct fw_gtab *t = card->bar ? &card->bar->groups : NULL;
	struct fw_gent *e;

	if (!t)
		return;
	/* Burying keeps a group in the table: the walk may go on from it. */
	for (e = fw_gtab_next(t, NULL); e; e = fw_gtab_next(t, e)) {
		struct fw_group *g = fw_grp_of(e);

		if (e->port == port && !e->zombie) {
			g->host_op = false;
			if (g->ht)
				g->ht->op = false;
			fw_grp_bury(card, g, false);
		}
	}
}

void fw_barrier_card_free(struct fw_card *card)
{
	struct fw_gent *e;

	if (!card->bar)
		return;
	while ((e = fw_gtab_next(&card->bar->groups, NULL)))
		fw_grp_free(card, fw_grp_of(e));
	fwos_free(card->host, card->bar);
	card->bar = NULL;
}

/* ------------------------------------------------------------- packets -- */

/* A NACK for a group this port does not have (yet, or any more). */
static void fw_bar_reply_nogroup(struct fw_card *card, const struct fw_pkt_hdr *h)
{
	struct fw_pkt_hdr r;

	memset(&r, 0, sizeof(r));
	r.src_node = card->cfg.node;
	r.dst_node = h->src_node;
	r.src_port = h->dst_port;
	r.dst_port = h->src_port;
	r.type = FW_PKT_BARRIER_STATE;
	r.bar.group = h->bar.group;
	r.bar.epoch = h->bar.epoch;
	r.bar.from = h->bar.to;
	r.bar.to = h->bar.from;
	r.bar.size = h->bar.size;
	r.err = -ENOENT;
	fw_bar_xmit(card, &r);
}

static void fw_bar_rx_msg(struct fw_card *card, struct fw_group *g, const struct fw_pkt_hdr *h,
			  u64 now)
{
	const struct fw_bsched *s;
	u64 e = h->bar.epoch;
	u32 i = e & 1;
	int slot;

	if (g->e.zombie || g->state == FW_G_FAILED || e < g->epoch || e > g->epoch + 1)
		return;
	s = fw_grp_sched(g, e);
	slot = s ? fw_bsched_recv_slot(s, h->bar.from) : -1;
	if (slot < 0)
		return;
	if (g->bits[i][slot / 64] & (1ull << (slot % 64))) {
		card->stats.duplicates++;
		return;
	}
	g->bits[i][slot / 64] |= 1ull << (slot % 64);
	g->got[i][s->recv[slot].step]++;
	g->acc[i] |= h->bar.value;
	if (e == g->epoch && g->running) {
		g->life_at = now;
		g->nack_rounds = 0;
		fw_grp_run(card, g, now);
	}
}

/* Member h->bar.from misses our message of epoch h->bar.epoch. */
static void fw_bar_rx_nack(struct fw_card *card, struct fw_group *g, const struct fw_pkt_hdr *h)
{
	u32 who = h->bar.from;
	const struct fw_bsched *s;
	const struct fw_bmsg *m;
	u64 e = h->bar.epoch;
	s32 err;

	if (e + 1 < g->epoch || e > g->epoch + 1)
		return;		/* stale, or impossible */
	s = fw_grp_sched(g, e);
	m = s ? fw_bsched_send_to(s, who) : NULL;
	if (s && !m)
		return;		/* we never send it anything then */
	if (m && (e < g->epoch || (e == g->epoch && m->step < g->sent))) {
		u64 val = e < g->epoch ? g->last_val : g->acc[e & 1] | fw_grp_own_val(g, e);

		card->stats.barrier_resends++;
		fw_bar_send(card, g, FW_PKT_BARRIER, who, e, val, 0);
		return;
	}
	if (g->e.zombie)
		err = -ECONNRESET;
	else if (g->state == FW_G_FAILED)
		err = g->err;
	else
		err = -EAGAIN;
	fw_bar_send(card, g, FW_PKT_BARRIER_STATE, who, e, 0, err);
}

/* Member h->bar.from answered our NACK: not there yet, or gone. */
static void fw_bar_rx_state(struct fw_card *card, struct fw_group *g, const struct fw_pkt_hdr *h,
			    u64 now)
{
	const struct fw_bsched *s;
	int slot;

	if (g->e.zombie || !g->running || h->bar.epoch != g->epoch)
		return;
	s = fw_grp_sched(g, g->epoch);
	slot = s ? fw_bsched_recv_slot(s, h->bar.from) : -1;
	if (slot < 0 || (g->bits[g->epoch & 1][slot / 64] & (1ull << (slot % 64))))
		return;
	if (h->err == -EAGAIN || (h->err == -ENOENT && g->state == FW_G_CREATING)) {
		g->life_at = now;
		g->nack_rounds = 0;
		return;
	}
	fw_grp_fail(card, g, -ECONNRESET);
}

void fw_barrier_rx(struct fw_card *card, struct fw_pkt *pkt)
{
	const struct fw_pkt_hdr *h = &pkt->hdr;
	const struct fw_bpeer *p;
	struct fw_group *g;

	card->stats.rx_pkts++;
	card->stats.rx_bytes += FW_PKT_HDR_SIZE;
	if (h->len)
		goto out;
	g = fw_grp_find(card, h->dst_port, h->bar.group, true);
	if (!g) {
		if (h->type == FW_PKT_BARRIER_NACK)
			fw_bar_reply_nogroup(card, h);
		goto out;
	}
	/* Only from the member it claims to be, about this group. */
	p = h->bar.from < g->size ? fw_grp_peer(g, h->bar.from) : NULL;
	if (!p || p->node != h->src_node || p->port != h->src_port || h->bar.size != g->size ||
	    h->bar.to != g->rank)
		goto out;
	switch (h->type) {
	case FW_PKT_BARRIER:
		fw_bar_rx_msg(card, g, h, fwos_now(card->host));
		break;
	case FW_PKT_BARRIER_NACK:
		fw_bar_rx_nack(card, g, h);
		break;
	default:
		fw_bar_rx_state(card, g, h, fwos_now(card->host));
		break;
	}
out:
	fwos_pkt_free(card->host, pkt);
}

/* -------------------------------------------------------------- timers -- */

static void fw_grp_timer(struct fw_card *card, struct fw_timer *t, u64 now)
{
	struct fw_group *g = fw_container_of(t, struct fw_group, timer);
	const struct fw_bsched *s;
	u64 limit;
	u32 i;

	if (g->e.zombie) {
		fw_grp_free(card, g);
		return;
	}
	if (!g->running) {
		/* Host trials: its process has not entered the next epoch yet. */
		if (g->state == FW_G_CREATING && now >= g->create_by)
			fw_grp_fail(card, g, -ETIMEDOUT);
		else
			fw_grp_arm(card, g, g->state == FW_G_CREATING ? g->create_by : FW_NEVER);
		return;
	}
	/*
	 * Silent for dead_ns and for as many NACK rounds as the transport has
	 * retries: both, so that a host that stalled the card (a VM not
	 * scheduled) does not make it give up on peers it has not asked.
	 */
	limit = g->state == FW_G_CREATING ? g->create_by : fw_add_sat(g->life_at, card->dead_ns);
	if (now >= limit &&
	    (g->state == FW_G_CREATING || g->nack_rounds >= card->cfg.max_retries)) {
		fw_grp_fail(card, g, -ETIMEDOUT);
		return;
	}
	if (now >= g->nack_at) {
		/* Ask every sender of this step whose message is missing. */
		s = fw_grp_sched(g, g->epoch);
		for (i = 0; s && i < s->nrecv; i++) {
			if (s->recv[i].step != g->step ||
			    (g->bits[g->epoch & 1][i / 64] & (1ull << (i % 64))))
				continue;
			fw_bar_send(card, g, FW_PKT_BARRIER_NACK, s->recv[i].rank, g->epoch, 0, 0);
		}
		g->nack_ivl = fw_min_u64(g->nack_ivl * 2, card->cfg.rto_max_ns);
		g->nack_at = fw_add_sat(now, g->nack_ivl);
		g->nack_rounds++;
	}
	fw_grp_arm(card, g, now >= limit ? g->nack_at : fw_min_u64(g->nack_at, limit));
}
