// SPDX-License-Identifier: GPL-2.0
/*
 * The user-space host: fw_os.h for N cards in one process and a LogGP
 * fabric on a virtual clock.
 *
 * Each card has its own clock.  Whenever the host runs the firmware of a
 * card (a packet arrives, a timer is due, a command is posted) at global
 * time t, the card's clock is max(t, the time its processor is busy until);
 * a packet received costs o more before fw_rx() sees it, and each packet
 * the firmware sends keeps the processor busy for o.  Whatever the card
 * does therefore happens at its own time, never before: what it causes
 * elsewhere comes no earlier, so the global order of events stays causal
 * while each card serves its work in order of arrival (commands its host
 * posts go before packets that arrived while the card was busy).
 *
 * Packet arrivals wait in a 4-ary heap ordered by (time, insertion
 * number); each card's next timer has one entry in a second heap, never
 * later than the deadline and brought up to date before it runs, so no
 * stale timer ever reaches the firmware.  Both orders are total, so runs
 * are reproducible.
 */
#include <stdlib.h>
#include <stdio.h>
#include <stdint.h>
#include <malloc.h>
#include <endian.h>
#include <sys/mman.h>
#include <zlib.h>
#ifdef __x86_64__
#include <immintrin.h>
#endif

#include "sim.h"
#include "fw_os.h"
#include "fw_pkt.h"
#include "switch.h"

#define SIM_NO_TIMER	0xffffffffu

/*
 * Packets and firmware objects come from an arena of 2 MiB slabs (huge
 * pages on large fabrics), each slab cut into blocks of one size class
 * (multiples of 16 bytes); freed blocks go on their class's free list and
 * are handed out again.  A block carries no header: its slab says its
 * class.  At a million cards this halves the cost of an event, most of
 * which was malloc's bookkeeping, page faults and TLB misses.  Larger
 * blocks, or any once the arena's address space is used up, come from
 * malloc.
 */
#define SIM_SLAB_SHIFT		21
#define SIM_SLAB		(2ull << 20)	/* 1 << SIM_SLAB_SHIFT */
#define SIM_ARENA_SLABS		65536u		/* 128 GiB of address space, reserved only */
#define SIM_CLASS_MAX		(8192u + 256u)
#define SIM_CLASSES		(SIM_CLASS_MAX / 16 + 1)
#define SIM_HUGE_NODES		1024u		/* huge pages from this many cards on */
#define SIM_HUGE_MIN		(4ull << 20)	/* and for arrays this large */

struct sim_free {
	struct sim_free *next;
};

struct sim_class {
	struct sim_free *free;
	u8 *cur;
	u8 *end;
};

struct sim_arena {
	u8 *map;		/* the reservation, */
	u8 *base;		/*  from its first 2 MiB boundary */
	u32 nslabs;		/* slabs handed to classes */
	u16 *slab_class;
	struct sim_class cls[SIM_CLASSES];
};

/* What the host keeps ahead of each packet it allocates. */
struct sim_pkt {
	u32 node;		/* destination card */
	u32 size;		/* bytes the fabric delivers */
	u32 corrupt;
	u32 reserved;		/* keeps the packet 16-byte aligned */
};

/* A packet arrival. */
struct sim_ev {
	u64 time;
	u64 seq;
	struct sim_pkt *p;
};

/* A card's next timer. */
struct sim_tmr {
	u64 time;
	u64 seq;
	u32 node;
};

/* A completion waiting for the hook. */
struct sim_done {
	u32 node;
	u32 port;
	u64 t;
	struct nicoff_cqe cqe;
};

struct sim_mr {
	struct sim_mr *next;
	u32 port;
	u32 handle;
	u32 rkey;
	u32 access;
	u8 *buf;
	u64 len;
};

struct sim_port {
	bool attached;
	struct nicoff_cqe *cq;
	u32 head;
	u32 count;
	u32 cap;
};

struct fw_host {
	struct sim *sim;
	struct fw_card *card;
	struct sim_port *ports;	/* nports of them, from the first attach */
	struct sim_mr *mrs;
	u64 clock;		/* the card's time while the firmware runs */
	u64 busy;		/* its processor is busy until then */
	struct fw_switch_link link;
	u64 timer_at;		/* its next deadline (its heap entry may be earlier) */
	long zallocs;
	u32 node;
	u32 tmr_idx;		/* position in the timer heap, or SIM_NO_TIMER */
	u32 next_handle;
	u8 nports;
	bool dead;
	struct fw_fault_state faults;
};

struct sim {
	struct sim_cfg cfg;
	struct fw_switch sw;
	struct sim_stats stats;
	struct sim_hooks hooks;
	struct sim_mem mem;
	u64 now;
	u64 seq;
	struct sim_ev *heap;
	u32 nev;
	u32 ev_cap;
	struct sim_tmr *theap;
	u32 ntmr;
	u32 tmr_cap;
	struct sim_done *done;
	u32 ndone;
	u32 done_head;
	u32 done_cap;
	bool draining;
	bool huge;
	struct sim_arena arena;
	long pkts;
	u32 rkey_salt;
	struct fw_host *hosts;
};

void sim_cfg_default(struct sim_cfg *cfg, u32 nodes)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nodes = nodes;
	cfg->latency_ns = SIM_DEFAULT_L_NS;
	cfg->byte_ps = SIM_DEFAULT_BYTE_PS;
	cfg->seed = 1;
	fw_config_default(&cfg->fw, 0, nodes);
	cfg->fw.rto_ns = 20000;
	cfg->fw.rto_max_ns = 2000000;
	cfg->fw.ack_delay_ns = 2000;
}

/*
 * The firmware's timers stay at its defaults: a 20 us timeout is shorter
 * than the queues a card's overhead builds up (a window of packets from a
 * few peers), and go-back-N would then resend what was never lost.
 */
void sim_cfg_loggp(struct sim_cfg *cfg, u32 nodes)
{
	sim_cfg_default(cfg, nodes);
	cfg->overhead_ns = SIM_DEFAULT_O_NS;
	cfg->gap_ns = SIM_DEFAULT_G_NS;
	fw_config_default(&cfg->fw, 0, nodes);
}

static void sim_oom(void)
{
	fprintf(stderr, "sim: out of memory\n");
	abort();
}

static void *sim_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		sim_oom();
	return p;
}

/* Huge pages for [p, p + len) where whole ones fit (THP in madvise mode). */
static void sim_huge(const struct sim *s, void *p, size_t len)
{
	uintptr_t a = ((uintptr_t)p + SIM_SLAB - 1) & ~(uintptr_t)(SIM_SLAB - 1);
	uintptr_t e = ((uintptr_t)p + len) & ~(uintptr_t)(SIM_SLAB - 1);

	if (s->huge && len >= SIM_HUGE_MIN && e > a)
		madvise((void *)a, e - a, MADV_HUGEPAGE);
}

/* Grow an array of @size-byte elements to hold one more; counts its bytes. */
static void *sim_grow(struct sim *s, void *a, u32 *cap, size_t size)
{
	u32 n = *cap ? *cap * 2 : 1024;
	void *b;

	if (n < *cap)
		sim_oom();
	b = realloc(a, (size_t)n * size);
	if (!b)
		sim_oom();
	sim_huge(s, b, (size_t)n * size);
	s->mem.queue += (u64)(n - *cap) * size;
	if (s->mem.queue > s->mem.queue_peak)
		s->mem.queue_peak = s->mem.queue;
	*cap = n;
	return b;
}

static u64 sim_max(u64 a, u64 b)
{
	return a > b ? a : b;
}

static struct fw_pkt *sim_pkt_fw(struct sim_pkt *p)
{
	return (struct fw_pkt *)(p + 1);
}

static struct sim_pkt *sim_pkt_of(struct fw_pkt *pkt)
{
	return (struct sim_pkt *)pkt - 1;
}

/* ------------------------------------------------------------ memory -- */

static void sim_arena_init(struct sim *s)
{
	struct sim_arena *ar = &s->arena;
	size_t len = (size_t)(SIM_ARENA_SLABS + 1) * SIM_SLAB;
	void *m;

	ar->slab_class = calloc(SIM_ARENA_SLABS, sizeof(*ar->slab_class));
	if (!ar->slab_class)
		return;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (m == MAP_FAILED)
		return;
	ar->map = m;
	ar->base = (u8 *)(((uintptr_t)m + SIM_SLAB - 1) & ~(uintptr_t)(SIM_SLAB - 1));
	if (s->huge)
		madvise(ar->base, (size_t)SIM_ARENA_SLABS * SIM_SLAB, MADV_HUGEPAGE);
}

static void sim_arena_fini(struct sim *s)
{
	struct sim_arena *ar = &s->arena;

	if (ar->map)
		munmap(ar->map, (size_t)(SIM_ARENA_SLABS + 1) * SIM_SLAB);
	free(ar->slab_class);
	memset(ar, 0, sizeof(*ar));
}

static bool sim_in_arena(const struct sim *s, const void *p)
{
	const u8 *b = s->arena.base;

	return b && (const u8 *)p >= b && (const u8 *)p < b + (u64)s->arena.nslabs * SIM_SLAB;
}

/* @n bytes (not zeroed); *@bytes: the block's size, for the accounts. */
static void *sim_alloc(struct sim *s, size_t n, u32 *bytes)
{
	struct sim_arena *ar = &s->arena;
	size_t c = n ? (n + 15) / 16 : 1;
	struct sim_class *k = &ar->cls[c < SIM_CLASSES ? c : 0];
	void *p;

	if (c * 16 <= SIM_CLASS_MAX && ar->base) {
		if (k->free) {
			p = k->free;
			k->free = k->free->next;
			*bytes = (u32)(c * 16);
			return p;
		}
		if (k->cur + c * 16 > k->end && ar->nslabs < SIM_ARENA_SLABS) {
			k->cur = ar->base + (u64)ar->nslabs * SIM_SLAB;
			k->end = k->cur + SIM_SLAB;
			ar->slab_class[ar->nslabs++] = (u16)c;
		}
		if (k->cur + c * 16 <= k->end) {
			p = k->cur;
			k->cur += c * 16;
			*bytes = (u32)(c * 16);
			return p;
		}
	}
	p = malloc(n);
	*bytes = p ? (u32)malloc_usable_size(p) : 0;
	return p;
}

static u32 sim_block_bytes(const struct sim *s, void *p)
{
	if (sim_in_arena(s, p))
		return s->arena.slab_class[((u8 *)p - s->arena.base) >> SIM_SLAB_SHIFT] * 16u;
	return (u32)malloc_usable_size(p);
}

static void sim_release(struct sim *s, void *p)
{
	struct sim_free *f = p;
	struct sim_class *k;

	if (!sim_in_arena(s, p)) {
		free(p);
		return;
	}
	k = &s->arena.cls[s->arena.slab_class[((u8 *)p - s->arena.base) >> SIM_SLAB_SHIFT]];
	f->next = k->free;
	k->free = f;
}

/* ------------------------------------------------------------ events -- */

/*
 * Both heaps are 4-ary: half the levels of a binary heap, and at a million
 * cards each level is a cache miss.
 */
#define SIM_ARY		4u

/* (time, seq) as one number: compared without branches, as ties are common. */
static unsigned __int128 sim_ev_key(const struct sim_ev *e)
{
	return (unsigned __int128)e->time << 64 | e->seq;
}

static bool sim_ev_less(const struct sim_ev *a, const struct sim_ev *b)
{
	return sim_ev_key(a) < sim_ev_key(b);
}

static void sim_ev_push(struct sim *s, u64 time, struct sim_pkt *p)
{
	struct sim_ev ev = { .time = time, .seq = s->seq++, .p = p };
	u32 i;

	if (s->nev == s->ev_cap)
		s->heap = sim_grow(s, s->heap, &s->ev_cap, sizeof(*s->heap));
	i = s->nev++;
	while (i) {
		u32 parent = (i - 1) / SIM_ARY;

		if (!sim_ev_less(&ev, &s->heap[parent]))
			break;
		s->heap[i] = s->heap[parent];
		i = parent;
	}
	s->heap[i] = ev;
}

static struct sim_ev sim_ev_pop(struct sim *s)
{
	struct sim_ev top = s->heap[0];
	struct sim_ev last = s->heap[--s->nev];
	u32 i = 0;

	for (;;) {
		u32 c = SIM_ARY * i + 1, k, end;

		if (c >= s->nev)
			break;
		end = c + SIM_ARY < s->nev ? c + SIM_ARY : s->nev;
		for (k = c + 1; k < end; k++)
			if (sim_ev_less(&s->heap[k], &s->heap[c]))
				c = k;
		if (!sim_ev_less(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nev)
		s->heap[i] = last;
	return top;
}

/* ------------------------------------------------------------ timers -- */

static bool sim_tmr_less(const struct sim_tmr *a, const struct sim_tmr *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void sim_tmr_place(struct sim *s, u32 i, const struct sim_tmr *t)
{
	s->theap[i] = *t;
	s->hosts[t->node].tmr_idx = i;
}

static void sim_tmr_up(struct sim *s, u32 i, struct sim_tmr t)
{
	while (i) {
		u32 parent = (i - 1) / SIM_ARY;

		if (!sim_tmr_less(&t, &s->theap[parent]))
			break;
		sim_tmr_place(s, i, &s->theap[parent]);
		i = parent;
	}
	sim_tmr_place(s, i, &t);
}

static void sim_tmr_down(struct sim *s, u32 i, struct sim_tmr t)
{
	for (;;) {
		u32 c = SIM_ARY * i + 1, k, end;

		if (c >= s->ntmr)
			break;
		end = c + SIM_ARY < s->ntmr ? c + SIM_ARY : s->ntmr;
		for (k = c + 1; k < end; k++)
			if (sim_tmr_less(&s->theap[k], &s->theap[c]))
				c = k;
		if (!sim_tmr_less(&s->theap[c], &t))
			break;
		sim_tmr_place(s, i, &s->theap[c]);
		i = c;
	}
	sim_tmr_place(s, i, &t);
}

/*
 * The card's next deadline is now @at (FW_NEVER: none).  Only an earlier
 * one moves the card's entry at once.  A later one, or none, leaves the
 * entry early and sim_tmr_clean() puts it right when it reaches the top:
 * retransmission timeouts are pushed back or cancelled on nearly every
 * packet and seldom expire.  An entry is never later than its deadline.
 */
static void sim_tmr_set(struct sim *s, struct fw_host *h, u64 at)
{
	u32 i = h->tmr_idx;
	struct sim_tmr t;

	if (at == h->timer_at)
		return;
	h->timer_at = at;
	if (at == FW_NEVER || (i != SIM_NO_TIMER && at >= s->theap[i].time))
		return;
	t.time = at;
	t.seq = s->seq++;
	t.node = h->node;
	if (i == SIM_NO_TIMER) {
		if (s->ntmr == s->tmr_cap)
			s->theap = sim_grow(s, s->theap, &s->tmr_cap, sizeof(*s->theap));
		i = s->ntmr++;
	}
	sim_tmr_up(s, i, t);
}

static void sim_tmr_pop(struct sim *s)
{
	struct sim_tmr last = s->theap[--s->ntmr];

	s->hosts[s->theap[0].node].tmr_idx = SIM_NO_TIMER;
	if (s->ntmr)
		sim_tmr_down(s, 0, last);
}

/*
 * Until the top entry is its card's deadline, or later than the next
 * arrival anyway: move it to the deadline, or drop it.
 */
static void sim_tmr_clean(struct sim *s)
{
	while (s->ntmr) {
		struct sim_tmr top = s->theap[0];
		u64 at = s->hosts[top.node].timer_at;

		if (at == top.time || (s->nev && top.time > s->heap[0].time))
			return;
		if (at == FW_NEVER) {
			sim_tmr_pop(s);
		} else {
			top.time = at;
			top.seq = s->seq++;
			sim_tmr_down(s, 0, top);
		}
	}
}

/* ------------------------------------------------------- card clocks -- */

/* The card starts work at global time @t: when its processor is free. */
static void sim_enter(struct sim *s, struct fw_host *h, u64 t)
{
	t = sim_max(sim_max(t, s->now), h->busy);
	h->clock = t;
	h->busy = t;
}

/* Ask the card for its next deadline and move its timer there. */
static void sim_kick(struct sim *s, struct fw_host *h)
{
	u64 next;

	if (!h->card)
		return;
	next = fw_poll(h->card, h->clock);
	if (next != FW_NEVER && next < s->now)
		next = s->now;
	sim_tmr_set(s, h, next);
}

static struct sim_port *sim_port(struct fw_host *h, u32 port)
{
	return port < h->nports && h->ports[port].attached ? &h->ports[port] : NULL;
}

/* Hand queued completions to the hook, in order; its posts add to them. */
static void sim_drain(struct sim *s)
{
	if (s->draining)
		return;
	s->draining = true;
	while (s->done_head < s->ndone) {
		struct sim_done d = s->done[s->done_head++];

		if (sim_port(&s->hosts[d.node], d.port))
			s->hooks.cqe(s->hooks.arg, d.node, d.port, &d.cqe, d.t);
	}
	s->ndone = 0;
	s->done_head = 0;
	s->draining = false;
}

/* ------------------------------------------------------------ fw_os.h -- */

u64 fwos_now(struct fw_host *h)
{
	return h->clock;
}

struct fw_pkt *fwos_pkt_alloc(struct fw_host *h, u32 payload)
{
	struct sim *s = h->sim;
	u32 bytes;
	struct sim_pkt *p = sim_alloc(s, sizeof(*p) + sizeof(struct fw_pkt) + (size_t)payload,
				      &bytes);

	if (!p)
		return NULL;
	p->corrupt = 0;
	s->pkts++;
	s->mem.pkt += bytes;
	if (s->mem.pkt > s->mem.pkt_peak)
		s->mem.pkt_peak = s->mem.pkt;
	return sim_pkt_fw(p);
}

void fwos_pkt_free(struct fw_host *h, struct fw_pkt *pkt)
{
	struct sim_pkt *p;

	if (!pkt)
		return;
	p = sim_pkt_of(pkt);
	h->sim->pkts--;
	h->sim->mem.pkt -= sim_block_bytes(h->sim, p);
	sim_release(h->sim, p);
}

/* The switch hands over a packet: one arrival event. */
static void sim_queue(void *arg, u32 dst, struct fw_pkt *pkt, u32 size, u64 due, u32 faults)
{
	struct sim *s = arg;
	struct sim_pkt *p = sim_pkt_of(pkt);

	p->node = dst;
	p->size = size;
	p->corrupt = !!(faults & FW_FAULT_CORRUPT);
	if (faults & FW_FAULT_DUP) {
		s->stats.dups++;
	} else {
		s->stats.reorders += !!(faults & FW_FAULT_REORDER);
		s->stats.delays += !!(faults & FW_FAULT_DELAY);
	}
	sim_ev_push(s, due, p);
}

static bool sim_link_up(void *arg, u32 node)
{
	struct sim *s = arg;

	return !s->hosts[node].dead;
}

static const struct fw_switch_ops sim_switch_ops = {
	.deliver = sim_queue,
	.link_up = sim_link_up,
};

/*
 * The card spends o on the packet, then the switch has it (switch.h).  A
 * packet lost on the way cost its sender as much; one to no node, nothing.
 */
void fwos_send(struct fw_host *h, struct fw_pkt *pkt)
{
	struct sim *s = h->sim;
	struct fw_switch_src src = {
		.node = h->node,
		.host = h,
		.link = &h->link,
		.faults = &h->faults,
		.fault_cfg = &s->cfg.faults,
	};
	enum fw_switch_fate fate;

	s->stats.sent++;
	if (h->dead) {
		s->stats.dead++;
		fwos_pkt_free(h, pkt);
		return;
	}
	fate = fw_switch_send(&s->sw, &src, pkt, h->busy + s->cfg.overhead_ns);
	if (fate != FW_SWITCH_NO_ROUTE)
		h->busy += s->cfg.overhead_ns;
	if (fate == FW_SWITCH_DROPPED)
		s->stats.dropped++;
	else if (fate != FW_SWITCH_QUEUED)
		s->stats.dead++;
}

/* The module's checks: region of this port, rights, then bounds. */
static int sim_mr_check(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, u32 len,
			struct sim_mr **out)
{
	bool remote = flags & FWOS_MEM_REMOTE;
	u32 need = flags & NICOFF_ACCESS_ALL;
	struct sim_mr *mr;

	if (!sim_port(h, port))
		h->sim->stats.bad_mem++;
	for (mr = h->mrs; mr; mr = mr->next)
		if (mr->port == port && (remote ? mr->rkey : mr->handle) == key)
			break;
	if (!mr)
		return -ENOENT;
	if ((mr->access & need) != need)
		return -EACCES;
	if (off + len < off || off + len > mr->len)
		return -ERANGE;
	*out = mr;
	return 0;
}

int fwos_mem_read(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, void *dst,
		  u32 len)
{
	struct sim_mr *mr;
	int ret = sim_mr_check(h, port, key, flags, off, len, &mr);

	if (!ret && len)
		memcpy(dst, mr->buf + off, len);
	return ret;
}

int fwos_mem_write(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, const void *src,
		   u32 len)
{
	struct sim_mr *mr;
	int ret = sim_mr_check(h, port, key, flags, off, len, &mr);

	if (!ret && len)
		memcpy(mr->buf + off, src, len);
	return ret;
}

/* Real CPU atomics on the process's word, as the module's are. */
static int sim_atomic32(u32 *w, u32 op, u32 operand, u32 compare, u64 *old)
{
	switch (op) {
	case NICOFF_OP_FETCH_ADD:
		*old = __atomic_fetch_add(w, operand, __ATOMIC_SEQ_CST);
		return 0;
	case NICOFF_OP_FETCH_WRITE:
		*old = __atomic_exchange_n(w, operand, __ATOMIC_SEQ_CST);
		return 0;
	case NICOFF_OP_COMPARE_SWAP:
		__atomic_compare_exchange_n(w, &compare, operand, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
		*old = compare;
		return 0;
	default:
		return -EINVAL;
	}
}

static int sim_atomic64(u64 *w, u32 op, u64 operand, u64 compare, u64 *old)
{
	switch (op) {
	case NICOFF_OP_FETCH_ADD:
		*old = __atomic_fetch_add(w, operand, __ATOMIC_SEQ_CST);
		return 0;
	case NICOFF_OP_FETCH_WRITE:
		*old = __atomic_exchange_n(w, operand, __ATOMIC_SEQ_CST);
		return 0;
	case NICOFF_OP_COMPARE_SWAP:
		__atomic_compare_exchange_n(w, &compare, operand, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
		*old = compare;
		return 0;
	default:
		return -EINVAL;
	}
}

/* The module's checks, then the atomic. */
int fwos_mem_atomic(struct fw_host *h, u32 port, u32 rkey, u64 off, u32 width, u32 op,
		    u64 operand, u64 compare, u64 *old)
{
	struct sim_mr *mr;
	int ret;

	if (width != 4 && width != 8)
		return -EINVAL;
	ret = sim_mr_check(h, port, rkey, FWOS_MEM_REMOTE | NICOFF_ACCESS_REMOTE_ATOMIC, off,
			   width, &mr);
	if (ret)
		return ret;
	if ((unsigned long)(mr->buf + off) & (width - 1))
		return -EINVAL;
	if (width == 4)
		return sim_atomic32((u32 *)(mr->buf + off), op, (u32)operand, (u32)compare, old);
	return sim_atomic64((u64 *)(mr->buf + off), op, operand, compare, old);
}

static void sim_cq_push(struct sim *s, struct sim_port *p, const struct nicoff_cqe *cqe)
{
	if (p->count == p->cap) {
		u32 cap = p->cap ? p->cap * 2 : 64;
		struct nicoff_cqe *cq = sim_xcalloc(cap, sizeof(*cq));
		u32 i;

		for (i = 0; i < p->count; i++)
			cq[i] = p->cq[(p->head + i) % p->cap];
		free(p->cq);
		s->mem.host += (u64)(cap - p->cap) * sizeof(*cq);
		p->cq = cq;
		p->cap = cap;
		p->head = 0;
	}
	p->cq[(p->head + p->count++) % p->cap] = *cqe;
}

void fwos_complete(struct fw_host *h, u32 port, const struct nicoff_cqe *cqe)
{
	struct sim *s = h->sim;
	struct sim_port *p = sim_port(h, port);
	struct sim_done *d;

	if (!p) {
		s->stats.bad_completions++;
		return;
	}
	s->stats.completions++;
	if (!s->hooks.cqe) {
		sim_cq_push(s, p, cqe);
		return;
	}
	if (s->ndone == s->done_cap)
		s->done = sim_grow(s, s->done, &s->done_cap, sizeof(*s->done));
	d = &s->done[s->ndone++];
	d->node = h->node;
	d->port = port;
	d->t = h->clock;
	d->cqe = *cqe;
}

void *fwos_zalloc(struct fw_host *h, size_t size)
{
	struct sim *s = h->sim;
	u32 u;
	void *p = sim_alloc(s, size, &u);

	if (!p)
		return NULL;
	memset(p, 0, size);
	h->zallocs++;
	s->mem.fw += u;
	if (s->mem.fw > s->mem.fw_peak)
		s->mem.fw_peak = s->mem.fw;
	return p;
}

void fwos_free(struct fw_host *h, void *p)
{
	if (!p)
		return;
	h->zallocs--;
	h->sim->mem.fw -= sim_block_bytes(h->sim, p);
	sim_release(h->sim, p);
}

/*
 * zlib's CRC-32 (IEEE 802.3, reflected), much faster than zlib's own on the
 * ~100-byte packets that dominate, where the CRC was a quarter of the cost
 * of an event: with PCLMULQDQ, folding 16 bytes a step (the kernel's
 * crc32-pclmul algorithm and constants), else eight bytes a step from
 * tables (slicing-by-8).  The tests compare it with zlib.
 */
static u32 sim_crc_tab[8][256];
static bool sim_crc_clmul_ok;

static void sim_crc_init(void)
{
	u32 i, k;

	for (i = 0; i < 256; i++) {
		u32 c = i;

		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
		sim_crc_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (k = 1; k < 8; k++)
			sim_crc_tab[k][i] = (sim_crc_tab[k - 1][i] >> 8) ^
					    sim_crc_tab[0][sim_crc_tab[k - 1][i] & 0xff];
#ifdef __x86_64__
	sim_crc_clmul_ok = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
}

/* On the inverted CRC @crc. */
static u32 sim_crc_slice8(u32 crc, const u8 *p, size_t len)
{
	u32 (*t)[256] = sim_crc_tab;

	for (; len >= 8; len -= 8, p += 8) {
		u64 v;
		u32 lo, hi;

		memcpy(&v, p, 8);
		v = le64toh(v);
		lo = (u32)v ^ crc;
		hi = (u32)(v >> 32);
		crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
		      t[4][lo >> 24] ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		      t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
	}
	while (len--)
		crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#ifdef __x86_64__
#define SIM_CLMUL __attribute__((target("pclmul,sse4.1")))

SIM_CLMUL static __m128i sim_fold(__m128i x, __m128i k, __m128i next)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
					   _mm_clmulepi64_si128(x, k, 0x11)), next);
}

SIM_CLMUL static __m128i sim_load(const u8 *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

/* On the inverted CRC @crc; @len a multiple of 16, at least 64. */
SIM_CLMUL static u32 sim_crc_clmul(u32 crc, const u8 *p, size_t len)
{
	__m128i x1 = _mm_xor_si128(sim_load(p), _mm_cvtsi32_si128((int)crc));
	__m128i x2 = sim_load(p + 16), x3 = sim_load(p + 32), x4 = sim_load(p + 48);
	__m128i mask = _mm_set_epi32(0, 0, 0, -1);
	__m128i k = _mm_set_epi64x(0x1c6e41596ll, 0x154442bd4ll);
	__m128i t;

	for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
		x1 = sim_fold(x1, k, sim_load(p));
		x2 = sim_fold(x2, k, sim_load(p + 16));
		x3 = sim_fold(x3, k, sim_load(p + 32));
		x4 = sim_fold(x4, k, sim_load(p + 48));
	}
	k = _mm_set_epi64x(0x0ccaa009ell, 0x1751997d0ll);
	x1 = sim_fold(sim_fold(sim_fold(x1, k, x2), k, x3), k, x4);
	for (; len >= 16; p += 16, len -= 16)
		x1 = sim_fold(x1, k, sim_load(p));
	/* 128 bits to 64, to 32, then Barrett's reduction. */
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), _mm_clmulepi64_si128(k, x1, 0x01));
	t = _mm_srli_si128(x1, 4);
	k = _mm_set_epi64x(0, 0x163cd6124ll);
	x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask), k, 0x00), t);
	k = _mm_set_epi64x(0x1f7011641ll, 0x1db710641ll);
	t = x1;
	x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask), k, 0x10);
	x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask), k, 0x00);
	return (u32)_mm_extract_epi32(_mm_xor_si128(x1, t), 1);
}
#endif

u32 fwos_crc32(u32 crc, const void *buf, size_t len)
{
	const u8 *p = buf;

	if (!sim_crc_tab[0][1])
		sim_crc_init();
	crc = ~crc;
#ifdef __x86_64__
	if (len >= 64 && sim_crc_clmul_ok) {
		size_t n = len & ~(size_t)15;

		crc = sim_crc_clmul(crc, p, n);
		p += n;
		len -= n;
	}
#endif
	return ~sim_crc_slice8(crc, p, len);
}

u32 sim_crc32_zlib(u32 crc, const void *buf, size_t len)
{
	return (u32)crc32(crc, buf, (unsigned int)len);
}

/* ------------------------------------------------------------- cards -- */

static void sim_port_clear(struct sim *s, struct sim_port *p)
{
	free(p->cq);
	s->mem.host -= (u64)p->cap * sizeof(*p->cq);
	memset(p, 0, sizeof(*p));
}

static void sim_mrs_drop(struct sim *s, struct fw_host *h, u32 port, bool all)
{
	struct sim_mr **pp = &h->mrs;

	while (*pp) {
		struct sim_mr *mr = *pp;

		if (all || mr->port == port) {
			*pp = mr->next;
			s->mem.host -= sizeof(*mr);
			free(mr);
		} else {
			pp = &mr->next;
		}
	}
}

static long sim_card_down(struct sim *s, struct fw_host *h)
{
	long leaked;
	u32 i;

	sim_tmr_set(s, h, FW_NEVER);
	fw_card_destroy(h->card);
	h->card = NULL;
	leaked = h->zallocs;
	s->stats.zalloc_leaks += leaked;
	h->zallocs = 0;
	for (i = 0; i < h->nports; i++)
		sim_port_clear(s, &h->ports[i]);
	sim_mrs_drop(s, h, 0, true);
	return leaked;
}

static int sim_card_up(struct sim *s, struct fw_host *h, u32 epoch)
{
	struct fw_config cfg = s->cfg.fw;

	cfg.node = h->node;
	cfg.num_nodes = s->cfg.nodes;
	cfg.epoch = epoch;
	h->card = fw_card_create(h, &cfg);
	return h->card ? 0 : -EINVAL;
}

struct sim *sim_create(const struct sim_cfg *cfg)
{
	struct sim *s;
	u32 i;

	if (!cfg->nodes || cfg->nodes >= SIM_NO_TIMER)
		return NULL;
	s = sim_xcalloc(1, sizeof(*s));
	s->cfg = *cfg;
	s->sw.cfg.nodes = cfg->nodes;
	s->sw.cfg.gap_ns = cfg->gap_ns;
	s->sw.cfg.latency_ns = cfg->latency_ns;
	s->sw.cfg.byte_mul = cfg->byte_ps;
	s->sw.cfg.byte_div = 1000;
	s->sw.ops = &sim_switch_ops;
	s->sw.arg = s;
	s->rkey_salt = 0x5eed;
	s->huge = cfg->nodes >= SIM_HUGE_NODES;
	sim_arena_init(s);
	s->hosts = sim_xcalloc(cfg->nodes, sizeof(*s->hosts));
	sim_huge(s, s->hosts, (size_t)cfg->nodes * sizeof(*s->hosts));
	s->mem.host = (u64)cfg->nodes * sizeof(*s->hosts);
	for (i = 0; i < cfg->nodes; i++) {
		struct fw_host *h = &s->hosts[i];

		h->sim = s;
		h->node = i;
		h->next_handle = 1;
		h->timer_at = FW_NEVER;
		h->tmr_idx = SIM_NO_TIMER;
		fw_fault_init(&h->faults, cfg->seed, i);
		if (sim_card_up(s, h, cfg->fw.epoch)) {
			sim_destroy(s);
			return NULL;
		}
	}
	return s;
}

long sim_destroy(struct sim *s)
{
	long leaked = 0;
	u32 i;

	if (!s)
		return 0;
	for (i = 0; i < s->cfg.nodes; i++) {
		struct fw_host *h = &s->hosts[i];

		if (h->card)
			leaked += sim_card_down(s, h);
		free(h->ports);
	}
	while (s->nev) {
		struct sim_ev ev = sim_ev_pop(s);

		fwos_pkt_free(&s->hosts[0], sim_pkt_fw(ev.p));
	}
	leaked += s->pkts;
	sim_arena_fini(s);
	free(s->heap);
	free(s->theap);
	free(s->done);
	free(s->hosts);
	free(s);
	return leaked;
}

u64 sim_now(const struct sim *s)
{
	return s->now;
}

u64 sim_node_time(const struct sim *s, u32 node)
{
	return sim_max(s->now, s->hosts[node].busy);
}

u32 sim_nodes(const struct sim *s)
{
	return s->cfg.nodes;
}

const struct sim_cfg *sim_config(const struct sim *s)
{
	return &s->cfg;
}

struct fw_card *sim_card(struct sim *s, u32 node)
{
	return s->hosts[node].card;
}

struct fw_host *sim_host(struct sim *s, u32 node)
{
	return &s->hosts[node];
}

const struct sim_stats *sim_stats(const struct sim *s)
{
	return &s->stats;
}

void sim_mem_usage(const struct sim *s, struct sim_mem *m)
{
	*m = s->mem;
	m->arena = (u64)s->arena.nslabs * SIM_SLAB;
}

void sim_set_faults(struct sim *s, const struct fw_fault_cfg *faults)
{
	s->cfg.faults = *faults;
}

void sim_set_hooks(struct sim *s, const struct sim_hooks *hooks)
{
	if (hooks)
		s->hooks = *hooks;
	else
		memset(&s->hooks, 0, sizeof(s->hooks));
}

void sim_set_dead(struct sim *s, u32 node, bool dead)
{
	s->hosts[node].dead = dead;
}

long sim_restart(struct sim *s, u32 node, u32 epoch)
{
	struct fw_host *h = &s->hosts[node];
	long leaked;

	sim_enter(s, h, s->now);
	leaked = sim_card_down(s, h);
	if (sim_card_up(s, h, epoch))
		return -1;
	return leaked;
}

long sim_zallocs(const struct sim *s, u32 node)
{
	return s->hosts[node].zallocs;
}

long sim_pkts(const struct sim *s)
{
	return s->pkts;
}

int sim_attach(struct sim *s, u32 node, u32 port)
{
	struct fw_host *h = &s->hosts[node];
	int ret;

	if (port >= SIM_MAX_PORTS || sim_port(h, port))
		return -EINVAL;
	if (port >= h->nports) {
		u32 n = port + 1;
		struct sim_port *np = sim_xcalloc(n, sizeof(*np));

		if (h->ports)
			memcpy(np, h->ports, h->nports * sizeof(*np));
		free(h->ports);
		s->mem.host += (u64)(n - h->nports) * sizeof(*np);
		h->ports = np;
		h->nports = (u8)n;
	}
	sim_enter(s, h, s->now);
	ret = fw_port_attach(h->card, port);
	if (!ret)
		h->ports[port].attached = true;
	sim_kick(s, h);
	return ret;
}

bool sim_attached(const struct sim *s, u32 node, u32 port)
{
	const struct fw_host *h = &s->hosts[node];

	return port < h->nports && h->ports[port].attached;
}

void sim_detach(struct sim *s, u32 node, u32 port)
{
	struct fw_host *h = &s->hosts[node];

	if (!sim_port(h, port))
		return;
	/* The card forgets the port first; only then do its regions go. */
	sim_enter(s, h, s->now);
	fw_port_detach(h->card, port);
	sim_port_clear(s, &h->ports[port]);
	sim_mrs_drop(s, h, port, false);
	sim_kick(s, h);
}

int sim_reg_mr(struct sim *s, u32 node, u32 port, void *buf, u64 len, u32 access,
	       u32 *handle, u32 *rkey)
{
	struct fw_host *h = &s->hosts[node];
	struct sim_mr *mr;

	if (!sim_port(h, port))
		return -ENOTCONN;
	if (!len || (access & ~NICOFF_ACCESS_ALL))
		return -EINVAL;
	mr = sim_xcalloc(1, sizeof(*mr));
	s->mem.host += sizeof(*mr);
	mr->port = port;
	mr->handle = h->next_handle++;
	s->rkey_salt = s->rkey_salt * 1103515245u + 12345u;
	mr->rkey = (s->rkey_salt << 20) | mr->handle;
	mr->access = access;
	mr->buf = buf;
	mr->len = len;
	mr->next = h->mrs;
	h->mrs = mr;
	*handle = mr->handle;
	*rkey = mr->rkey;
	return 0;
}

int sim_dereg_mr(struct sim *s, u32 node, u32 port, u32 handle)
{
	struct sim_mr **pp;

	for (pp = &s->hosts[node].mrs; *pp; pp = &(*pp)->next) {
		struct sim_mr *mr = *pp;

		if (mr->port == port && mr->handle == handle) {
			*pp = mr->next;
			s->mem.host -= sizeof(*mr);
			free(mr);
			return 0;
		}
	}
	return -ENOENT;
}

void sim_post_at(struct sim *s, u32 node, u32 port, const struct nicoff_cmd *cmd, u64 t)
{
	struct fw_host *h = &s->hosts[node];

	if (!sim_port(h, port))
		return;
	sim_enter(s, h, t);
	fw_cmd(h->card, port, cmd);
	sim_kick(s, h);
	sim_drain(s);
}

void sim_post(struct sim *s, u32 node, u32 port, const struct nicoff_cmd *cmd)
{
	sim_post_at(s, node, port, cmd, s->now);
}

bool sim_cq_pop(struct sim *s, u32 node, u32 port, struct nicoff_cqe *cqe)
{
	struct sim_port *p = sim_port(&s->hosts[node], port);

	if (!p || !p->count)
		return false;
	*cqe = p->cq[p->head];
	p->head = (p->head + 1) % p->cap;
	p->count--;
	return true;
}

u32 sim_cq_count(const struct sim *s, u32 node, u32 port)
{
	const struct fw_host *h = &s->hosts[node];

	return port < h->nports && h->ports[port].attached ? h->ports[port].count : 0;
}

/* -------------------------------------------------------------- loop -- */

u64 sim_next_time(struct sim *s)
{
	u64 t = FW_NEVER;

	sim_tmr_clean(s);
	if (s->nev)
		t = s->heap[0].time;
	if (s->ntmr && s->theap[0].time < t)
		t = s->theap[0].time;
	return t;
}

/* A packet's last byte reached its card: the link, then the processor. */
static void sim_arrive(struct sim *s, const struct sim_ev *ev)
{
	struct sim_pkt *p = ev->p;
	struct fw_host *h = &s->hosts[p->node];
	u64 r;

	if (h->dead || !h->card) {
		s->stats.dead++;
		fwos_pkt_free(h, sim_pkt_fw(p));
		return;
	}
	r = fw_switch_arrive(&s->sw.cfg, &h->link, ev->time, p->size);
	sim_enter(s, h, r);
	h->clock += s->cfg.overhead_ns;
	h->busy = h->clock;
	s->stats.delivered++;
	if (p->corrupt)
		s->stats.corrupted++;
	fw_rx(h->card, sim_pkt_fw(p), p->size);
	sim_kick(s, h);
}

/* Whether the next event is a timer: the earlier, or the first one set. */
static bool sim_timer_next(const struct sim *s)
{
	const struct sim_tmr *t = &s->theap[0];

	if (!s->ntmr)
		return false;
	if (!s->nev)
		return true;
	return t->time < s->heap[0].time || (t->time == s->heap[0].time && t->seq < s->heap[0].seq);
}

bool sim_step(struct sim *s)
{
	sim_tmr_clean(s);
	if (sim_timer_next(s)) {
		struct fw_host *h = &s->hosts[s->theap[0].node];
		u64 t = s->theap[0].time;

		if (t > s->now)
			s->now = t;
		sim_tmr_pop(s);
		h->timer_at = FW_NEVER;
		s->stats.events++;
		s->stats.timers++;
		sim_enter(s, h, t);
		sim_kick(s, h);
	} else if (s->nev) {
		struct sim_ev ev = sim_ev_pop(s);

		/* The next packet is cold by now: fetch it while this one runs. */
		if (s->nev) {
			__builtin_prefetch(s->heap[0].p);
			__builtin_prefetch((u8 *)s->heap[0].p + 64);
		}
		if (ev.time > s->now)
			s->now = ev.time;
		s->stats.events++;
		sim_arrive(s, &ev);
	} else {
		return false;
	}
	sim_drain(s);
	return true;
}

void sim_run_until(struct sim *s, u64 t)
{
	while (sim_next_time(s) <= t)
		sim_step(s);
	if (t > s->now)
		s->now = t;
}

bool sim_run_idle(struct sim *s, u64 limit)
{
	while (sim_next_time(s) <= limit)
		sim_step(s);
	return sim_next_time(s) == FW_NEVER;
}

bool sim_wait_cqe(struct sim *s, u32 node, u32 port, struct nicoff_cqe *cqe, u64 limit)
{
	for (;;) {
		if (sim_cq_pop(s, node, port, cqe))
			return true;
		if (sim_next_time(s) > limit)
			return false;
		sim_step(s);
	}
}
