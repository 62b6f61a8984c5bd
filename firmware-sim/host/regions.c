// SPDX-License-Identifier: GPL-2.0
/*
 * Memory regions, checked as the module checks them.  A card's regions sit
 * in an array by handle, and an rkey's low bits are its handle: a lookup
 * is one index and one compare.
 */
#include <stdlib.h>

#include "host.h"
#include "fw_atomic.h"

/*
 * Handles count from 1 and are never reused; an rkey carries its handle
 * in its low SIM_HANDLE_BITS.
 */
#define SIM_HANDLE_BITS		20
#define SIM_HANDLE_MASK		((1u << SIM_HANDLE_BITS) - 1)

static struct sim_mr *sim_mr_find(struct fw_host *h, u32 port, u32 key, bool remote)
{
	u32 handle = remote ? key & SIM_HANDLE_MASK : key;
	struct sim_mr *mr;

	if (!handle || handle > h->mrs_cap)
		return NULL;
	mr = &h->mrs[handle - 1];
	if (!mr->len || mr->port != port || (remote && mr->rkey != key))
		return NULL;
	return mr;
}

/* Whether [off, off + len) lies inside the region, without wrapping. */
static bool sim_mr_covers(const struct sim_mr *mr, u64 off, u64 len)
{
	return off + len >= off && off + len <= mr->len;
}

/* The module's checks: region of this port, rights, then bounds. */
static int sim_mr_check(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, u64 len,
			struct sim_mr **out)
{
	u32 need = flags & NICOFF_ACCESS_ALL;
	struct sim_mr *mr;

	if (!sim_port(h, port))
		h->sim->stats.bad_mem++;
	mr = sim_mr_find(h, port, key, flags & FWOS_MEM_REMOTE);
	if (!mr)
		return -ENOENT;
	if ((mr->access & need) != need)
		return -EACCES;
	if (!sim_mr_covers(mr, off, len))
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

/* Several pieces of one region: every one checked before the first copy. */
static int sim_mr_rwv(struct fw_host *h, u32 port, u32 key, u32 flags,
		      const struct fwos_seg *seg, u32 n, u8 *buf, bool to_mr)
{
	struct sim_mr *mr;
	u32 i;
	int ret = sim_mr_check(h, port, key, flags, 0, 0, &mr);

	for (i = 0; !ret && i < n; i++)		/* one lookup, then bounds only */
		if (!sim_mr_covers(mr, seg[i].off, seg[i].len))
			ret = -ERANGE;
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (to_mr)
			memcpy(mr->buf + seg[i].off, buf, seg[i].len);
		else
			memcpy(buf, mr->buf + seg[i].off, seg[i].len);
		buf += seg[i].len;
	}
	return 0;
}

int fwos_mem_gather(struct fw_host *h, u32 port, u32 key, u32 flags,
		    const struct fwos_seg *seg, u32 n, void *dst)
{
	return sim_mr_rwv(h, port, key, flags, seg, n, dst, false);
}

int fwos_mem_scatter(struct fw_host *h, u32 port, u32 key, u32 flags,
		     const struct fwos_seg *seg, u32 n, const void *src)
{
	return sim_mr_rwv(h, port, key, flags, seg, n, (u8 *)src, true);
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
	return ret ? ret : fw_atomic_apply(mr->buf + off, width, op, operand, compare, old);
}

/* Forget the regions of @port, or every region and the array with @all. */
void sim_mrs_drop(struct sim *s, struct fw_host *h, u32 port, bool all)
{
	u32 i;

	if (all) {
		free(h->mrs);
		s->mem.host -= (u64)h->mrs_cap * sizeof(*h->mrs);
		h->mrs = NULL;
		h->mrs_cap = 0;
		return;
	}
	for (i = 0; i < h->mrs_cap; i++)
		if (h->mrs[i].port == port)
			memset(&h->mrs[i], 0, sizeof(h->mrs[i]));
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
	if (h->next_handle > SIM_HANDLE_MASK)
		return -ENOSPC;
	if (h->next_handle > h->mrs_cap) {
		u32 cap = h->mrs_cap ? h->mrs_cap : 1;
		struct sim_mr *mrs;

		while (cap < h->next_handle)
			cap *= 2;
		mrs = realloc(h->mrs, (size_t)cap * sizeof(*mrs));

		if (!mrs)
			sim_oom();
		memset(mrs + h->mrs_cap, 0, (size_t)(cap - h->mrs_cap) * sizeof(*mrs));
		s->mem.host += (u64)(cap - h->mrs_cap) * sizeof(*mrs);
		h->mrs = mrs;
		h->mrs_cap = cap;
	}
	mr = &h->mrs[h->next_handle - 1];
	mr->port = port;
	mr->handle = h->next_handle++;
	s->rkey_salt = s->rkey_salt * 1103515245u + 12345u;
	mr->rkey = (s->rkey_salt << SIM_HANDLE_BITS) | mr->handle;
	mr->access = access;
	mr->buf = buf;
	mr->len = len;
	*handle = mr->handle;
	*rkey = mr->rkey;
	return 0;
}

int sim_dereg_mr(struct sim *s, u32 node, u32 port, u32 handle)
{
	struct fw_host *h = &s->hosts[node];
	struct sim_mr *mr = sim_mr_find(h, port, handle, false);

	if (!mr)
		return -ENOENT;
	memset(mr, 0, sizeof(*mr));
	return 0;
}
