// SPDX-License-Identifier: GPL-2.0
/*
 * Memory registration: pin a user range for the card, charge it to the
 * process the way RDMA does (mm->pinned_vm against RLIMIT_MEMLOCK), and give
 * the card page-wise access to it.  Nothing here keeps a user address for
 * later use: every access goes through the pinned page array.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/capability.h>
#include <linux/overflow.h>
#include <uapi/nicoff.h>

#include "mr.h"
#include "port.h"
#include "card.h"
#include "params.h"
#include "fw_atomic.h"

atomic64_t nicoff_pinned_pages = ATOMIC64_INIT(0);

/* Handles are small integers; the rkey adds random bits above them. */
#define NICOFF_MR_HANDLE_BITS	20
#define NICOFF_MR_HANDLE_MAX	((1u << NICOFF_MR_HANDLE_BITS) - 1)
/* Pin in chunks so a huge range does not need one huge call. */
#define NICOFF_PIN_CHUNK	512

static bool nicoff_mr_writable(u32 access)
{
	return access & (NICOFF_ACCESS_LOCAL_WRITE | NICOFF_ACCESS_REMOTE_WRITE |
			 NICOFF_ACCESS_REMOTE_ATOMIC);
}

static int nicoff_charge(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 pinned = atomic64_add_return(npages, &mm->pinned_vm);

	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

static void nicoff_mr_free(struct nicoff_mr *mr)
{
	unpin_user_pages_dirty_lock(mr->pages, mr->npages, nicoff_mr_writable(mr->access));
	atomic64_sub(mr->npages, &mr->mm->pinned_vm);
	atomic64_sub(mr->npages, &nicoff_pinned_pages);
	kvfree(mr->pages);
	kfree(mr);
}

/*
 * Is all of [start, end) mapped writable?  Then the pin is made writable
 * even for read-only rights: a read-only pin of untouched anonymous memory
 * would take the shared zero page (6.1 does not unshare it for long-term
 * pins), and the process's later writes would land in a copy the card
 * never sees.
 */
static bool nicoff_range_writable(struct mm_struct *mm, unsigned long start, unsigned long end)
{
	struct vm_area_struct *vma;
	bool ok = true;

	mmap_read_lock(mm);
	while (start < end) {
		vma = find_vma(mm, start);
		if (!vma || vma->vm_start > start || !(vma->vm_flags & VM_WRITE)) {
			ok = false;
			break;
		}
		start = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return ok;
}

static int nicoff_pin(struct nicoff_mr *mr)
{
	unsigned long start = mr->addr & PAGE_MASK;
	unsigned int flags = FOLL_LONGTERM;
	unsigned long done = 0;
	int ret;

	if (nicoff_mr_writable(mr->access) ||
	    nicoff_range_writable(current->mm, start, start + mr->npages * PAGE_SIZE))
		flags |= FOLL_WRITE;
	while (done < mr->npages) {
		unsigned long start = (mr->addr & PAGE_MASK) + done * PAGE_SIZE;
		int n = min_t(unsigned long, mr->npages - done, NICOFF_PIN_CHUNK);

		ret = pin_user_pages_fast(start, n, flags, mr->pages + done);
		if (ret <= 0) {
			ret = ret ? ret : -EFAULT;
			goto unpin;
		}
		done += ret;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto unpin;
		}
		cond_resched();
	}
	return 0;
unpin:
	unpin_user_pages(mr->pages, done);
	return ret;
}

/*
 * Pin and check a region, and reserve its handle, for nicoff_mr_publish()
 * or nicoff_mr_abort() to finish.  Until then nobody else can see it: a
 * DEREG_MR of its handle, from another thread, finds nothing (a reserved
 * slot reads as empty), and neither does the card.  So a region whose
 * REG_MR fails late (the answer cannot be copied out) is never seen, and
 * undoing it can never reach another region, whatever was deregistered
 * and registered meanwhile with the same handle and rkey.
 */
struct nicoff_mr *nicoff_mr_register(struct nicoff_port *port, struct nicoff_reg_mr *req)
{
	struct nicoff_mr *mr;
	u64 end;
	u32 id;
	int ret;

	if (req->reserved0 || req->reserved[0] || req->reserved[1] || req->handle || req->rkey)
		return ERR_PTR(-EINVAL);
	if (!req->length || (req->access & ~NICOFF_ACCESS_ALL))
		return ERR_PTR(-EINVAL);
	if (check_add_overflow(req->addr, req->length, &end) || end > TASK_SIZE)
		return ERR_PTR(-EFAULT);
	if (current->mm != port->mm)
		return ERR_PTR(-EPERM);

	/* The bookkeeping is the caller's too: charged to its memory cgroup. */
	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->addr = req->addr;
	mr->length = req->length;
	mr->access = req->access;
	mr->first_off = offset_in_page(req->addr);
	mr->npages = (PAGE_ALIGN(end) - (req->addr & PAGE_MASK)) >> PAGE_SHIFT;
	mr->mm = port->mm;

	/* More than RAM can never be pinned: refuse before sizing anything by it. */
	if (mr->npages > totalram_pages()) {
		kfree(mr);
		return ERR_PTR(-ENOMEM);
	}
	if (atomic_inc_return(&port->nr_mrs) > nicoff_max_mrs) {
		ret = -ENOSPC;
		goto out_count;
	}
	ret = nicoff_charge(mr->mm, mr->npages);
	if (ret)
		goto out_count;
	mr->pages = kvmalloc_array(mr->npages, sizeof(*mr->pages),
				   GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!mr->pages) {
		ret = -ENOMEM;
		goto out_charge;
	}
	ret = nicoff_pin(mr);
	if (ret)
		goto out_pages;
	atomic64_add(mr->npages, &nicoff_pinned_pages);

	/* Reserved, not stored: see above. */
	ret = xa_alloc(&port->mrs, &id, NULL, XA_LIMIT(1, NICOFF_MR_HANDLE_MAX),
		       GFP_KERNEL_ACCOUNT);
	if (ret) {
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto out_pinned;
	}
	mr->handle = id;
	mr->rkey = (get_random_u32() << NICOFF_MR_HANDLE_BITS) | id;
	req->handle = mr->handle;
	req->rkey = mr->rkey;
	return mr;

out_pinned:
	nicoff_mr_free(mr);
	atomic_dec(&port->nr_mrs);
	return ERR_PTR(ret);
out_pages:
	kvfree(mr->pages);
out_charge:
	atomic64_sub(mr->npages, &mr->mm->pinned_vm);
out_count:
	atomic_dec(&port->nr_mrs);
	kfree(mr);
	return ERR_PTR(ret);
}

/* The registration is answered: make the region usable. */
void nicoff_mr_publish(struct nicoff_port *port, struct nicoff_mr *mr)
{
	/* The reserved slot has its node already: storing allocates nothing. */
	xa_store(&port->mrs, mr->handle, mr, GFP_KERNEL);
}

/* The registration failed after nicoff_mr_register(): undo it. */
void nicoff_mr_abort(struct nicoff_port *port, struct nicoff_mr *mr)
{
	xa_release(&port->mrs, mr->handle);
	nicoff_mr_free(mr);
	atomic_dec(&port->nr_mrs);
}

/*
 * Remove region @handle.  Only a region that was published is erased: a
 * slot reserved by a REG_MR still under way reads as empty here and stays
 * reserved for it.
 */
int nicoff_mr_deregister(struct nicoff_port *port, u32 handle)
{
	struct nicoff_mr *mr;

	/*
	 * The engine uses a region only while it holds the card lock; a COPY
	 * under way keeps no reference to it across passes, it stops.
	 */
	mutex_lock(&port->card->lock);
	mr = xa_load(&port->mrs, handle);
	if (mr) {
		xa_erase(&port->mrs, handle);
		nicoff_port_mr_gone(port, mr);
	}
	mutex_unlock(&port->card->lock);
	if (!mr)
		return -ENOENT;
	nicoff_mr_free(mr);
	atomic_dec(&port->nr_mrs);
	return 0;
}

/* Called once the port is off its card: nobody else can see the table. */
void nicoff_mr_release_all(struct nicoff_port *port)
{
	struct nicoff_mr *mr;
	unsigned long id;

	xa_for_each(&port->mrs, id, mr) {
		xa_erase(&port->mrs, id);
		nicoff_mr_free(mr);
		cond_resched();
	}
	atomic_set(&port->nr_mrs, 0);
}

/* The card lock keeps the region found registered while it is used. */
struct nicoff_mr *nicoff_mr_lookup(struct nicoff_port *port, u32 handle)
{
	lockdep_assert_held(&port->card->lock);
	return xa_load(&port->mrs, handle);
}

struct nicoff_mr *nicoff_mr_lookup_rkey(struct nicoff_port *port, u32 rkey)
{
	struct nicoff_mr *mr;

	lockdep_assert_held(&port->card->lock);
	mr = xa_load(&port->mrs, rkey & NICOFF_MR_HANDLE_MAX);
	return mr && mr->rkey == rkey ? mr : NULL;
}

int nicoff_mr_check(const struct nicoff_mr *mr, u64 off, u64 len, u32 access)
{
	u64 end;

	if ((mr->access & access) != access)
		return -EACCES;
	if (check_add_overflow(off, len, &end) || end > mr->length)
		return -ERANGE;
	return 0;
}

/*
 * Both ranges have been checked with nicoff_mr_check().  The card copies a
 * slice of a COPY at a time (nicoff_copy_run()) and reschedules between
 * passes, with the card lock let go: not here, where it holds it.
 */
void nicoff_mr_copy(struct nicoff_mr *dst, u64 dst_off, struct nicoff_mr *src, u64 src_off,
		    u64 len)
{
	u64 dpos = dst->first_off + dst_off;
	u64 spos = src->first_off + src_off;

	while (len) {
		size_t doff = offset_in_page(dpos), soff = offset_in_page(spos);
		size_t n = min3((u64)(PAGE_SIZE - doff), (u64)(PAGE_SIZE - soff), len);
		void *d = kmap_local_page(dst->pages[dpos >> PAGE_SHIFT]);
		void *s = kmap_local_page(src->pages[spos >> PAGE_SHIFT]);

		memcpy(d + doff, s + soff, n);
		kunmap_local(s);
		kunmap_local(d);
		dpos += n;
		spos += n;
		len -= n;
	}
}

/*
 * Copy [off, off + len) of a region page by page, into it from @buf with
 * @to_mr, out of it into @buf otherwise.  The range has been checked with
 * nicoff_mr_check().
 */
void nicoff_mr_rw(struct nicoff_mr *mr, u64 off, void *buf, u64 len, bool to_mr)
{
	u64 pos = mr->first_off + off;
	u8 *b = buf;

	while (len) {
		size_t in = offset_in_page(pos);
		size_t n = min_t(u64, PAGE_SIZE - in, len);
		void *p = kmap_local_page(mr->pages[pos >> PAGE_SHIFT]);

		if (to_mr)
			memcpy(p + in, b, n);
		else
			memcpy(b, p + in, n);
		kunmap_local(p);
		pos += n;
		b += n;
		len -= n;
	}
}

/*
 * A remote atomic on the word at @off, checked with nicoff_mr_check(): one
 * locked CPU instruction on the pinned page, through the kernel's mapping
 * of it, atomic against other cards and against the process's own atomic
 * instructions on the same word, which reach the same physical memory.
 */
int nicoff_mr_atomic(struct nicoff_mr *mr, u64 off, u32 width, u32 op, u64 operand, u64 compare,
		     u64 *old)
{
	u64 pos = mr->first_off + off;
	void *page;
	int ret;

	/*
	 * The word's offset in its page is that of the process's address, so
	 * the mapping has its alignment; aligned, it does not cross a page.
	 */
	page = kmap_local_page(mr->pages[pos >> PAGE_SHIFT]);
	ret = fw_atomic_apply(page + offset_in_page(pos), width, op, operand, compare, old);
	kunmap_local(page);
	return ret;
}
