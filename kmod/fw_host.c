// SPDX-License-Identifier: GPL-2.0
/*
 * The module's implementation of the firmware's OS interface (fw_os.h).
 * Every call comes from the context that holds the card's lock: the
 * card's engine, or a process opening or closing a port.
 */
#include <linux/slab.h>
#include <linux/sched.h>
#include <linux/ktime.h>
#include <linux/crc32c.h>
#include <uapi/nicoff.h>

#include "fw_os.h"
#include "card.h"
#include "port.h"
#include "mr.h"
#include "fabric.h"
#include "params.h"

u64 fwos_now(struct fw_host *h)
{
	return nicoff_card_now(h->card);
}

struct fw_pkt *fwos_pkt_alloc(struct fw_host *h, u32 payload)
{
	return nicoff_pkt_alloc(payload);
}

void fwos_pkt_free(struct fw_host *h, struct fw_pkt *pkt)
{
	nicoff_pkt_free(pkt);
}

void fwos_send(struct fw_host *h, struct fw_pkt *pkt)
{
	lockdep_assert_held(&h->card->lock);
	nicoff_fabric_send(h->card, pkt);
}

int fwos_send_range(struct fw_host *h, struct fw_pkt *pkt, u32 first, u32 last)
{
	lockdep_assert_held(&h->card->lock);
	return nicoff_fabric_send_range(h->card, pkt, first, last);
}

bool fwos_fabric_room(struct fw_host *h, u32 first, u32 last)
{
	return nicoff_fabric_room(first, last);
}

static struct nicoff_mr *nicoff_host_mr(struct fw_host *h, u32 port_num, u32 key, u32 flags,
					u64 off, u32 len, int *err)
{
	struct nicoff_port *port;
	struct nicoff_mr *mr;

	/* The lock keeps the port and its region from going away meanwhile. */
	lockdep_assert_held(&h->card->lock);
	port = port_num < nicoff_ports ? h->card->port_tab[port_num] : NULL;
	if (!port) {
		*err = -ECONNREFUSED;
		return NULL;
	}
	if (flags & FWOS_MEM_REMOTE)
		mr = nicoff_mr_lookup_rkey(port, key);
	else
		mr = nicoff_mr_lookup(port, key);
	if (!mr) {
		*err = -ENOENT;
		return NULL;
	}
	*err = nicoff_mr_check(mr, off, len, flags & NICOFF_ACCESS_ALL);
	return *err ? NULL : mr;
}

/* Copy between @buf and region @key of @port: into the region with @to_mr. */
static int nicoff_host_rw(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, void *buf,
			  u32 len, bool to_mr)
{
	struct nicoff_mr *mr;
	int err;

	mr = nicoff_host_mr(h, port, key, flags, off, len, &err);
	if (mr)
		nicoff_mr_rw(mr, off, buf, len, to_mr);
	return err;
}

int fwos_mem_read(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, void *dst, u32 len)
{
	return nicoff_host_rw(h, port, key, flags, off, dst, len, false);
}

int fwos_mem_write(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, const void *src,
		   u32 len)
{
	/* @src is only read: the copy goes into the region. */
	return nicoff_host_rw(h, port, key, flags, off, (void *)src, len, true);
}

/* Several pieces of one region: one lookup, every piece checked before any copy. */
static int nicoff_host_rwv(struct fw_host *h, u32 port, u32 key, u32 flags,
			   const struct fwos_seg *seg, u32 n, u8 *buf, bool to_mr)
{
	struct nicoff_mr *mr;
	int err;
	u32 i;

	mr = nicoff_host_mr(h, port, key, flags, 0, 0, &err);
	for (i = 0; mr && i < n; i++) {
		err = nicoff_mr_check(mr, seg[i].off, seg[i].len, flags & NICOFF_ACCESS_ALL);
		if (err)
			return err;
	}
	if (!mr)
		return err;
	for (i = 0; i < n; i++) {
		nicoff_mr_rw(mr, seg[i].off, buf, seg[i].len, to_mr);
		buf += seg[i].len;
	}
	return 0;
}

int fwos_mem_gather(struct fw_host *h, u32 port, u32 key, u32 flags,
		    const struct fwos_seg *seg, u32 n, void *dst)
{
	return nicoff_host_rwv(h, port, key, flags, seg, n, dst, false);
}

int fwos_mem_scatter(struct fw_host *h, u32 port, u32 key, u32 flags,
		     const struct fwos_seg *seg, u32 n, const void *src)
{
	/* @src is only read: the copies go into the region. */
	return nicoff_host_rwv(h, port, key, flags, seg, n, (void *)src, true);
}

int fwos_mem_atomic(struct fw_host *h, u32 port, u32 rkey, u64 off, u32 width, u32 op,
		    u64 operand, u64 compare, u64 *old)
{
	struct nicoff_mr *mr;
	int err;

	if (width != 4 && width != 8)
		return -EINVAL;
	mr = nicoff_host_mr(h, port, rkey, FWOS_MEM_REMOTE | NICOFF_ACCESS_REMOTE_ATOMIC, off,
			    width, &err);
	if (!mr)
		return err;
	return nicoff_mr_atomic(mr, off, width, op, operand, compare, old);
}

void fwos_complete(struct fw_host *h, u32 port_num, const struct nicoff_cqe *cqe)
{
	struct nicoff_port *port;

	lockdep_assert_held(&h->card->lock);
	port = port_num < nicoff_ports ? h->card->port_tab[port_num] : NULL;
	if (port)
		nicoff_port_complete_async(port, cqe);
}

/*
 * Charged to the memory cgroup in force: the calling process's, or the
 * one a card thread adopts for a port's work (engine.c, fabric.c).  A
 * card thread serves every port of its cards, so it neither retries hard
 * nor calls the OOM killer for one cgroup: the firmware handles a failure
 * (the command fails with -ENOMEM, a message is refused).
 */
void *fwos_zalloc(struct fw_host *h, size_t size)
{
	gfp_t gfp = GFP_KERNEL_ACCOUNT;

	if (current->flags & PF_KTHREAD)
		gfp |= __GFP_NORETRY | __GFP_NOWARN;
	return kvzalloc(size, gfp);
}

void fwos_free(struct fw_host *h, void *p)
{
	kvfree(p);
}

u32 fwos_crc32c(u32 crc, const void *buf, size_t len)
{
	/*
	 * libcrc32c's crc32c() takes the fastest "crc32c" the crypto API has:
	 * crc32c-intel (the crc32 instruction, PCLMULQDQ folding for long
	 * buffers) where the CPU has SSE4.2; its softdep loads that module.
	 * It leaves the pre- and post-inversion to its caller.
	 */
	return ~crc32c(~crc, buf, len);
}
