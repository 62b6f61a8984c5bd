// SPDX-License-Identifier: GPL-2.0
/* Allocation and mapping of the rings a port shares with its process. */
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/build_bug.h>

#include "ring.h"
#include "compat.h"

int nicoff_ring_alloc(struct nicoff_kring *r, u32 entries, u32 slot_size)
{
	size_t bytes = NICOFF_RING_HDR_SIZE + (size_t)entries * slot_size;

	BUILD_BUG_ON(sizeof(struct nicoff_ring_hdr) != NICOFF_RING_HDR_SIZE);
	BUILD_BUG_ON(offsetof(struct nicoff_ring_hdr, consumer) != 64);
	BUILD_BUG_ON(offsetof(struct nicoff_ring_hdr, flags) != 128);

	r->size = PAGE_ALIGN(bytes);
	/* vmalloc_user() zeroes the memory and allows remap_vmalloc_range(). */
	r->mem = vmalloc_user(r->size);
	if (!r->mem)
		return -ENOMEM;
	r->hdr = r->mem;
	r->slots = r->mem + NICOFF_RING_HDR_SIZE;
	r->entries = entries;
	r->mask = entries - 1;
	r->slot_size = slot_size;
	r->priv = 0;
	WRITE_ONCE(r->hdr->entries, entries);
	return 0;
}

void nicoff_ring_free(struct nicoff_kring *r)
{
	vfree(r->mem);
	r->mem = NULL;
}

int nicoff_ring_mmap(struct nicoff_kring *r, struct vm_area_struct *vma)
{
	/* Exactly the ring: a larger mapping would expose nothing useful. */
	if (vma->vm_end - vma->vm_start != r->size)
		return -EINVAL;
	/*
	 * Not inherited by a child: the rings belong to the process that
	 * opened the port (see Documentation/abi.md on fork).  VM_IO keeps it
	 * so: madvise(MADV_DOFORK) refuses to clear VM_DONTCOPY on such a
	 * mapping, and nothing can pin the ring pages through it either.
	 */
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP | VM_IO);
	return remap_vmalloc_range(vma, r->mem, 0);
}

/*
 * The flags word is written only by the kernel; the process may scribble
 * on it, which harms only that process, so a plain read-modify-write of
 * our own intent is enough.
 */
void nicoff_ring_set_flags(struct nicoff_kring *r, u32 set, u32 clear)
{
	u32 f = READ_ONCE(r->hdr->flags);

	WRITE_ONCE(r->hdr->flags, (f & ~clear) | set);
}
