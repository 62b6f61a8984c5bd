// SPDX-License-Identifier: GPL-2.0
/*
 * The host's memory for packets and firmware objects: an arena of 2 MiB
 * slabs, one size class per slab (host.h), and the arrays of the heaps.
 */
#include <stdlib.h>
#include <stdio.h>
#include <stdint.h>
#include <malloc.h>
#include <sys/mman.h>

#include "host.h"

void sim_oom(void)
{
	fprintf(stderr, "sim: out of memory\n");
	abort();
}

void *sim_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		sim_oom();
	return p;
}

/* Huge pages for [p, p + len) where whole ones fit (THP in madvise mode). */
void sim_huge(const struct sim *s, void *p, size_t len)
{
	uintptr_t a = ((uintptr_t)p + SIM_SLAB - 1) & ~(uintptr_t)(SIM_SLAB - 1);
	uintptr_t e = ((uintptr_t)p + len) & ~(uintptr_t)(SIM_SLAB - 1);

	if (s->huge && len >= SIM_HUGE_MIN && e > a)
		madvise((void *)a, e - a, MADV_HUGEPAGE);
}

/* Grow an array of @size-byte elements to hold one more; counts its bytes. */
void *sim_grow(struct sim *s, void *a, u32 *cap, size_t size)
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

void sim_arena_init(struct sim *s)
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

void sim_arena_fini(struct sim *s)
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
void *sim_alloc(struct sim *s, size_t n, u32 *bytes)
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

u32 sim_block_bytes(const struct sim *s, void *p)
{
	if (sim_in_arena(s, p))
		return s->arena.slab_class[((u8 *)p - s->arena.base) >> SIM_SLAB_SHIFT] * 16u;
	return (u32)malloc_usable_size(p);
}

void sim_release(struct sim *s, void *p)
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
