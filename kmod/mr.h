/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Registered memory: a pinned page array the card reaches only through
 * kmap_local_page(), with bounds and rights checked on every access.
 */
#ifndef NICOFF_MR_H
#define NICOFF_MR_H

#include <linux/types.h>
#include <linux/atomic.h>

struct nicoff_port;
struct page;
struct mm_struct;

struct nicoff_mr {
	u64 addr;
	u64 length;
	u32 access;
	u32 handle;
	u32 rkey;
	unsigned int first_off;	/* offset of addr in its first page */
	unsigned long npages;
	struct page **pages;
	struct mm_struct *mm;	/* charged in mm->pinned_vm */
};

/* Pages pinned by every port of every card: tests prove nothing leaks. */
extern atomic64_t nicoff_pinned_pages;

struct nicoff_reg_mr;
struct nicoff_mr *nicoff_mr_register(struct nicoff_port *port, struct nicoff_reg_mr *req);
void nicoff_mr_publish(struct nicoff_port *port, struct nicoff_mr *mr);
void nicoff_mr_abort(struct nicoff_port *port, struct nicoff_mr *mr);
int nicoff_mr_deregister(struct nicoff_port *port, u32 handle);
void nicoff_mr_release_all(struct nicoff_port *port);

struct nicoff_mr *nicoff_mr_lookup(struct nicoff_port *port, u32 handle);
struct nicoff_mr *nicoff_mr_lookup_rkey(struct nicoff_port *port, u32 rkey);
int nicoff_mr_check(const struct nicoff_mr *mr, u64 off, u64 len, u32 access);
void nicoff_mr_rw(struct nicoff_mr *mr, u64 off, void *buf, u64 len, bool to_mr);
void nicoff_mr_copy(struct nicoff_mr *dst, u64 dst_off, struct nicoff_mr *src, u64 src_off,
		    u64 len);
int nicoff_mr_atomic(struct nicoff_mr *mr, u64 off, u32 width, u32 op, u64 operand, u64 compare,
		     u64 *old);

#endif
