// SPDX-License-Identifier: GPL-2.0
/* Allocation, accounting and mapping of the rings a port shares with its process. */
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/build_bug.h>
#include <linux/capability.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>

#include "ring.h"
#include "compat.h"

/* Bytes of a ring's mapping: header and slots, page aligned. */
size_t nicoff_ring_size(u32 entries, u32 slot_size)
{
	return PAGE_ALIGN(NICOFF_RING_HDR_SIZE + (size_t)entries * slot_size);
}

/*
 * Ring pages are kernel memory that the process maps and that cannot be
 * swapped out.  They are charged against RLIMIT_MEMLOCK in the user's
 * locked_vm, as io_uring's rings and AF_XDP's umem are, rather than in
 * the process's pinned_vm: a user cannot multiply them by forking, and
 * the process's budget for registered memory stays whole.
 */
int nicoff_ring_charge(struct user_struct *user, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	long cur = atomic_long_read(&user->locked_vm), want;

	do {
		want = cur + npages;
		if ((unsigned long)want > limit && !capable(CAP_IPC_LOCK))
			return -ENOMEM;
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &cur, want));
	return 0;
}

void nicoff_ring_uncharge(struct user_struct *user, unsigned long npages)
{
	atomic_long_sub(npages, &user->locked_vm);
}

int nicoff_ring_alloc(struct nicoff_kring *r, u32 entries, u32 slot_size)
{
	BUILD_BUG_ON(sizeof(struct nicoff_ring_hdr) != NICOFF_RING_HDR_SIZE);
	BUILD_BUG_ON(offsetof(struct nicoff_ring_hdr, consumer) != 64);
	BUILD_BUG_ON(offsetof(struct nicoff_ring_hdr, flags) != 128);

	r->size = nicoff_ring_size(entries, slot_size);
	/*
	 * Zeroed (the process sees all of it) and charged to the caller's
	 * memory cgroup.  vmalloc_user() cannot charge, and the accounted
	 * variant that marks an area VM_USERMAP is not exported to modules:
	 * nicoff_ring_mmap() inserts the pages itself instead of
	 * remap_vmalloc_range().
	 */
	r->mem = __vmalloc(r->size, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
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
	unsigned long off;
	int ret;

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
	/* Each page gets a reference of the mapping's, dropped at unmap. */
	for (off = 0; off < r->size; off += PAGE_SIZE) {
		ret = vm_insert_page(vma, vma->vm_start + off, vmalloc_to_page(r->mem + off));
		if (ret)
			return ret;
	}
	return 0;
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
