/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A ring shared with user space: a header (producer, consumer, flags on
 * separate cache lines) and a power-of-two array of fixed-size slots, in
 * vmalloc memory that the process maps.  The kernel keeps a private
 * copy of the index it owns and never trusts the one the process writes.
 */
#ifndef NICOFF_RING_H
#define NICOFF_RING_H

#include <linux/types.h>
#include <linux/mm_types.h>
#include <uapi/nicoff.h>

struct nicoff_kring {
	void *mem;
	size_t size;		/* bytes mapped, page aligned */
	struct nicoff_ring_hdr *hdr;
	void *slots;
	u32 entries;
	u32 mask;
	u32 slot_size;
	u32 priv;		/* the index the kernel owns */
};

struct user_struct;

size_t nicoff_ring_size(u32 entries, u32 slot_size);
int nicoff_ring_charge(struct user_struct *user, unsigned long npages);
void nicoff_ring_uncharge(struct user_struct *user, unsigned long npages);
int nicoff_ring_alloc(struct nicoff_kring *r, u32 entries, u32 slot_size);
void nicoff_ring_free(struct nicoff_kring *r);
int nicoff_ring_mmap(struct nicoff_kring *r, struct vm_area_struct *vma);

static inline void *nicoff_ring_slot(struct nicoff_kring *r, u32 idx)
{
	return r->slots + (size_t)(idx & r->mask) * r->slot_size;
}

void nicoff_ring_set_flags(struct nicoff_kring *r, u32 set, u32 clear);

#endif
