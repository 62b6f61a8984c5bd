/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A port: one open file of /dev/nicoffN after NICOFF_IOC_PORT_OPEN, with its
 * command and completion rings and its registered memory.
 */
#ifndef NICOFF_PORT_H
#define NICOFF_PORT_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <linux/atomic.h>

#include "ring.h"

struct nicoff_card;
struct mm_struct;
struct mem_cgroup;
struct user_struct;
struct nicoff_mr;

/*
 * The port's COPY under way, under the card lock: the card copies it a
 * slice per pass and takes none of the port's later commands before it
 * completes.  It holds no reference: deregistering either region clears
 * @src and @dst (nicoff_port_mr_gone()), and the COPY then completes with
 * ENOENT; closing the port drops it with the port.
 */
struct nicoff_port_copy {
	struct nicoff_mr *src;
	struct nicoff_mr *dst;
	u64 src_off;
	u64 dst_off;
	u64 len;
	u64 done;			/* bytes copied so far */
	u64 tag;
	bool active;
};

struct nicoff_port {
	struct nicoff_card *card;
	u32 num;
	struct list_head node;		/* card->ports, under card->lock */
	struct nicoff_kring cmd;
	struct nicoff_kring cq;
	struct xarray mrs;		/* handle -> struct nicoff_mr */
	atomic_t nr_mrs;
	struct mm_struct *mm;		/* the process that opened the port */
	struct mem_cgroup *memcg;	/* its memory cgroup: pays for the port's state */
	struct user_struct *user;	/* its user: the rings count in user->locked_vm */
	unsigned long ring_pages;	/* charged there */
	wait_queue_head_t wq;		/* poll() waiters */
	bool error;			/* written by the engine only */
	/* Counters written by the engine only, read with READ_ONCE(). */
	u64 cmds;
	u64 cqes;
	u64 bad_cmds;
	u64 cq_full;
	u32 cq_pending;			/* completions the firmware owes */
	u64 remote_errors_told;		/* peers' violations reported so far */
	struct nicoff_port_copy copy;
	atomic64_t kicks;
};

/* What an open file of /dev/nicoffN holds. */
struct nicoff_file {
	struct nicoff_card *card;
	struct mutex lock;		/* serialises PORT_OPEN */
	struct nicoff_port *port;	/* set once, read with smp_load_acquire */
};

struct nicoff_port_open;
struct nicoff_port_stats;

int nicoff_port_open(struct nicoff_card *card, struct nicoff_port_open *req,
		     struct nicoff_port **out);
void nicoff_port_close(struct nicoff_port *port);
void nicoff_port_stats(struct nicoff_port *port, struct nicoff_port_stats *st);
/*
 * The expensive work a card thread may do in one pass over one card, in
 * units of about one group member's checks (nicoff_cmd_work()): under a
 * millisecond of the VM's emulated CPU, so that a NOP on any card of the
 * thread waits little (a pass over n busy cards costs n of these).  A
 * COPY takes what is left of it, a slice at a time; the first other
 * expensive command of a card pass runs whatever its size (max_group_size
 * bounds that of a GROUP_CREATE).
 */
#define NICOFF_PASS_WORK	1024u
unsigned int nicoff_port_service(struct nicoff_port *port, unsigned int budget, u32 *work);
bool nicoff_port_has_work(struct nicoff_port *port);
bool nicoff_port_cq_ready(struct nicoff_port *port);
struct nicoff_cqe;
void nicoff_port_complete_async(struct nicoff_port *port, const struct nicoff_cqe *cqe);
void nicoff_port_mr_gone(struct nicoff_port *port, struct nicoff_mr *mr);

#endif
