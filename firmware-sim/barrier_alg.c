// SPDX-License-Identifier: GPL-2.0
/*
 * The barrier algorithms, as schedules: for one member of a group, the
 * steps of one barrier, each a list of messages to send on entering it and
 * a list of messages that end it.  The card runs every algorithm with the
 * same machinery (barrier.c); only these lists differ.
 *
 * pairwise       recursive doubling (seed 000, 5.1): in step m, i and
 *                i ^ 2^m exchange; with N not a power of two, M the largest
 *                power of two below N, i >= M first notifies i - M and
 *                waits for it at the very end (two extra steps).
 * dissemination  in step m, i sends to (i + 2^m) mod N and waits for
 *                (i - 2^m) mod N: ceil(log2 N) steps.
 * tree           gather-broadcast on the d-ary tree of parent (i - 1) / d:
 *                wait for the children, notify the parent and wait for its
 *                release, release the children.
 * central        central counter (seed 003, 4.1): everyone notifies rank
 *                0, which counts them and then releases everyone.
 * combining      combining tree of fan-in n (seed 003, 4.2): groups of n
 *                consecutive members report to their first, the firsts form
 *                groups of n at the next level, and so on up to rank 0;
 *                then a binomial-tree broadcast from rank 0 releases all.
 * tournament     the tournament barrier (seed 003, 4.3): in round k the
 *                loser i (i mod 2^(k+1) = 2^k) reports to the winner
 *                i - 2^k; rank 0 wins the tournament and the winners wake
 *                their losers in reverse order, i.e. the binomial tree:
 *                the combining tree of fan-in 2.
 */
#include "barrier.h"

/* Builds a schedule in two passes: count (s == NULL), then fill. */
struct fw_bbuild {
	struct fw_bsched *s;
	u32 step;		/* the step being described */
	bool used;		/* it has a message */
	u32 nsend;
	u32 nrecv;
};

static void fw_bb_send(struct fw_bbuild *b, u32 rank)
{
	if (b->s) {
		b->s->send[b->nsend].rank = rank;
		b->s->send[b->nsend].step = b->step;
	}
	b->nsend++;
	b->used = true;
}

static void fw_bb_recv(struct fw_bbuild *b, u32 rank)
{
	if (b->s) {
		b->s->recv[b->nrecv].rank = rank;
		b->s->recv[b->nrecv].step = b->step;
		b->s->need[b->step]++;
	}
	b->nrecv++;
	b->used = true;
}

/* The next messages belong to a new step (unless this one is empty). */
static void fw_bb_next(struct fw_bbuild *b)
{
	if (b->used) {
		b->step++;
		b->used = false;
	}
}

static void fw_alg_dissemination(struct fw_bbuild *b, u32 r, u32 n)
{
	u64 d;

	for (d = 1; d < n; d <<= 1) {
		fw_bb_send(b, (u32)((r + d) % n));
		fw_bb_recv(b, (u32)((r + n - d) % n));
		fw_bb_next(b);
	}
}

static void fw_alg_pairwise(struct fw_bbuild *b, u32 r, u32 n)
{
	u64 m = 1, k;

	while (m * 2 <= n)
		m *= 2;
	if (r >= m) {
		/* An extra member: it reports to its partner and waits for it. */
		fw_bb_send(b, (u32)(r - m));
		fw_bb_next(b);
		fw_bb_recv(b, (u32)(r - m));
		fw_bb_next(b);
		return;
	}
	if (r + m < n) {
		fw_bb_recv(b, (u32)(r + m));
		fw_bb_next(b);
	}
	for (k = 1; k < m; k <<= 1) {
		fw_bb_send(b, (u32)(r ^ k));
		fw_bb_recv(b, (u32)(r ^ k));
		fw_bb_next(b);
	}
	if (r + m < n) {
		fw_bb_send(b, (u32)(r + m));
		fw_bb_next(b);
	}
}

static void fw_alg_tree(struct fw_bbuild *b, u32 r, u32 n, u32 d)
{
	u64 c0 = (u64)r * d + 1, c;

	for (c = c0; c < c0 + d && c < n; c++)
		fw_bb_recv(b, (u32)c);
	fw_bb_next(b);
	if (r) {
		fw_bb_send(b, (r - 1) / d);
		fw_bb_recv(b, (r - 1) / d);
		fw_bb_next(b);
	}
	for (c = c0; c < c0 + d && c < n; c++)
		fw_bb_send(b, (u32)c);
	fw_bb_next(b);
}

static void fw_alg_central(struct fw_bbuild *b, u32 r, u32 n)
{
	u32 i;

	if (r) {
		fw_bb_send(b, 0);
		fw_bb_recv(b, 0);
		fw_bb_next(b);
		return;
	}
	for (i = 1; i < n; i++)
		fw_bb_recv(b, i);
	fw_bb_next(b);
	for (i = 1; i < n; i++)
		fw_bb_send(b, i);
	fw_bb_next(b);
}

/*
 * Combining tree of fan-in @k, then the binomial broadcast of MPICH from
 * rank 0 (parent i - lowbit(i), children i + 2^j for 2^j < lowbit(i),
 * farthest first).
 */
static void fw_alg_combining(struct fw_bbuild *b, u32 r, u32 n, u32 k)
{
	u64 s = 1, mask, j;

	while (s < n) {
		u64 grp = s * k;

		if (r % grp) {
			/* Its group's first member collects this level. */
			fw_bb_send(b, (u32)(r - r % grp));
			break;
		}
		for (j = 1; j < k && r + j * s < n; j++)
			fw_bb_recv(b, (u32)(r + j * s));
		fw_bb_next(b);
		s = grp;
	}
	if (r)
		fw_bb_recv(b, r - (r & -r));
	fw_bb_next(b);
	if (r) {
		mask = (r & -r) >> 1;
	} else {
		mask = 1;
		while (mask * 2 < n)
			mask *= 2;
		if (n < 2)
			mask = 0;
	}
	for (; mask; mask >>= 1)
		if (r + mask < n)
			fw_bb_send(b, (u32)(r + mask));
	fw_bb_next(b);
}

static void fw_bsched_run(struct fw_bbuild *b, u32 alg, u32 param, u32 r, u32 n)
{
	switch (alg) {
	case NICOFF_BARRIER_PAIRWISE:
		fw_alg_pairwise(b, r, n);
		break;
	case NICOFF_BARRIER_DISSEMINATION:
		fw_alg_dissemination(b, r, n);
		break;
	case NICOFF_BARRIER_TREE:
		fw_alg_tree(b, r, n, param);
		break;
	case NICOFF_BARRIER_CENTRAL:
		fw_alg_central(b, r, n);
		break;
	case NICOFF_BARRIER_COMBINING:
		fw_alg_combining(b, r, n, param);
		break;
	default:
		fw_alg_combining(b, r, n, 2);
		break;
	}
}

/* Heapsort: no recursion and no allocation, for either host. */
static void fw_sift_u64(u64 *a, u32 i, u32 n)
{
	u64 v = a[i];

	for (;;) {
		u32 c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && a[c + 1] > a[c])
			c++;
		if (v >= a[c])
			break;
		a[i] = a[c];
		i = c;
	}
	a[i] = v;
}

void fw_sort_u64(u64 *a, u32 n)
{
	u32 i;

	/* Often sorted already (the central counter's root): linear then. */
	for (i = 1; i < n && a[i - 1] <= a[i]; i++)
		;
	if (i >= n)
		return;
	for (i = n / 2; i-- > 0;)
		fw_sift_u64(a, i, n);
	for (i = n; i-- > 1;) {
		u64 t = a[0];

		a[0] = a[i];
		a[i] = t;
		fw_sift_u64(a, 0, i);
	}
}

u64 fw_bar_trial_ns(u64 *ns, u32 n)
{
	u32 nb = n >= FW_BAR_TRIAL_BLOCK ? n / FW_BAR_TRIAL_BLOCK : 1;
	u32 b, i;

	if (!n)
		return 0;
	/* Block b covers ns[b * n / nb] up to ns[(b + 1) * n / nb]: at or after ns[b]. */
	for (b = 0; b < nb; b++) {
		u32 lo = (u32)((u64)b * n / nb), hi = (u32)((u64)(b + 1) * n / nb);
		u64 sum = 0;

		for (i = lo; i < hi; i++)
			sum += ns[i];
		ns[b] = sum / (hi - lo);
	}
	fw_sort_u64(ns, nb);
	return nb & 1 ? ns[nb / 2] : ns[nb / 2 - 1] / 2 + ns[nb / 2] / 2;
}

struct fw_bsched *fw_bsched_build(struct fw_card *card, u32 alg, u32 param, u32 rank, u32 size)
{
	struct fw_bbuild b;
	struct fw_bsched *s;
	u64 *keys = NULL;
	u32 nsteps, i;
	size_t bytes;

	if (alg == NICOFF_BARRIER_TOURNAMENT)
		param = 2;
	else if (alg != NICOFF_BARRIER_TREE && alg != NICOFF_BARRIER_COMBINING)
		param = 0;
	memset(&b, 0, sizeof(b));
	fw_bsched_run(&b, alg, param, rank, size);
	nsteps = b.step + b.used;
	bytes = sizeof(*s) + ((size_t)b.nsend + b.nrecv) * sizeof(struct fw_bmsg) +
		(size_t)nsteps * sizeof(u32);
	s = fwos_zalloc(card->host, bytes);
	if (!s)
		return NULL;
	if (b.nrecv) {
		keys = fwos_zalloc(card->host, b.nrecv * sizeof(*keys));
		if (!keys) {
			fwos_free(card->host, s);
			return NULL;
		}
	}
	s->alg = alg;
	s->param = param;
	s->nsteps = nsteps;
	s->nsend = b.nsend;
	s->nrecv = b.nrecv;
	s->send = (struct fw_bmsg *)(s + 1);
	s->recv = s->send + b.nsend;
	s->need = (u32 *)(s->recv + b.nrecv);
	memset(&b, 0, sizeof(b));
	b.s = s;
	fw_bsched_run(&b, alg, param, rank, size);

	/* Sort what it waits for by sender: the bit of a message is its index. */
	for (i = 0; i < s->nrecv; i++)
		keys[i] = (u64)s->recv[i].rank << 32 | s->recv[i].step;
	fw_sort_u64(keys, s->nrecv);
	for (i = 0; i < s->nrecv; i++) {
		s->recv[i].rank = (u32)(keys[i] >> 32);
		s->recv[i].step = (u32)keys[i];
	}
	fwos_free(card->host, keys);
	return s;
}

void fw_bsched_free(struct fw_card *card, struct fw_bsched *s)
{
	fwos_free(card->host, s);
}

int fw_rank_search(const void *v, u32 n, size_t size, size_t off, u32 rank)
{
	const u8 *base = (const u8 *)v + off;
	u32 lo = 0, hi = n;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (*(const u32 *)(base + (size_t)mid * size) < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && *(const u32 *)(base + (size_t)lo * size) == rank ? (int)lo : -1;
}

int fw_bsched_recv_slot(const struct fw_bsched *s, u32 rank)
{
	return fw_rank_search(s->recv, s->nrecv, sizeof(*s->recv),
			      offsetof(struct fw_bmsg, rank), rank);
}

const struct fw_bmsg *fw_bsched_send_to(const struct fw_bsched *s, u32 rank)
{
	u32 i;

	for (i = 0; i < s->nsend; i++)
		if (s->send[i].rank == rank)
			return &s->send[i];
	return NULL;
}
