// SPDX-License-Identifier: GPL-2.0
/*
 * Ports: opening and closing them, and the card's service of their rings.
 *
 * Everything the process writes into a ring is untrusted: indices are
 * checked against the ring size, each descriptor is copied once out of
 * shared memory and only the copy is used.  A port whose process writes an
 * impossible index goes into the error state; a bad descriptor only earns
 * an error completion.
 */
#include <linux/slab.h>
#include <linux/sched/mm.h>
#include <linux/sched/user.h>
#include <linux/memcontrol.h>
#include <linux/log2.h>
#include <linux/poll.h>
#include <uapi/nicoff.h>

#include "port.h"
#include "card.h"
#include "mr.h"
#include "params.h"
#include "fw.h"

static int nicoff_port_claim(struct nicoff_card *card, struct nicoff_port *port, u32 want)
{
	u32 i;

	if (want != NICOFF_PORT_ANY) {
		if (want >= nicoff_ports)
			return -EINVAL;
		if (card->port_tab[want])
			return -EADDRINUSE;
		port->num = want;
		return 0;
	}
	for (i = 0; i < nicoff_ports; i++) {
		if (!card->port_tab[i]) {
			port->num = i;
			return 0;
		}
	}
	return -EBUSY;
}

static int nicoff_port_open_check(const struct nicoff_port_open *req)
{
	if (req->abi_version != NICOFF_ABI_VERSION)
		return -EPROTO;
	if (req->flags || req->reserved0 || req->cmd_offset || req->cmd_size ||
	    req->cq_offset || req->cq_size || memchr_inv(req->reserved, 0, sizeof(req->reserved)))
		return -EINVAL;
	if (req->cmd_entries < 2 || req->cmd_entries > nicoff_max_ring_entries ||
	    !is_power_of_2(req->cmd_entries))
		return -EINVAL;
	if (req->cq_entries < req->cmd_entries || req->cq_entries > nicoff_max_ring_entries ||
	    !is_power_of_2(req->cq_entries))
		return -EINVAL;
	/* Every argument is checked before anything is charged or allocated. */
	if (req->port != NICOFF_PORT_ANY && req->port >= nicoff_ports)
		return -EINVAL;
	return 0;
}

int nicoff_port_open(struct nicoff_card *card, struct nicoff_port_open *req,
		     struct nicoff_port **out)
{
	struct nicoff_port *port;
	int ret;

	ret = nicoff_port_open_check(req);
	if (ret)
		return ret;

	/* Everything here is the caller's: charged to its memory cgroup. */
	port = kzalloc(sizeof(*port), GFP_KERNEL_ACCOUNT);
	if (!port)
		return -ENOMEM;
	port->card = card;
	xa_init_flags(&port->mrs, XA_FLAGS_ALLOC1);
	init_waitqueue_head(&port->wq);
	port->user = get_current_user();
	port->ring_pages = (nicoff_ring_size(req->cmd_entries, sizeof(struct nicoff_cmd)) +
			    nicoff_ring_size(req->cq_entries, sizeof(struct nicoff_cqe))) >>
			   PAGE_SHIFT;
	ret = nicoff_ring_charge(port->user, port->ring_pages);
	if (ret)
		goto out_user;
	ret = nicoff_ring_alloc(&port->cmd, req->cmd_entries, sizeof(struct nicoff_cmd));
	if (ret)
		goto out_charge;
	ret = nicoff_ring_alloc(&port->cq, req->cq_entries, sizeof(struct nicoff_cqe));
	if (ret)
		goto out_cmd;
	port->mm = current->mm;
	mmgrab(port->mm);
	/* The card thread charges what it keeps for the port to this cgroup. */
	port->memcg = get_mem_cgroup_from_mm(current->mm);

	mutex_lock(&card->lock);
	ret = nicoff_port_claim(card, port, req->port);
	if (!ret)
		ret = fw_port_attach(card->fw, port->num);
	if (ret) {
		mutex_unlock(&card->lock);
		goto out_mm;
	}
	/* A sleeping engine must be kicked for this port's first command. */
	if (READ_ONCE(card->engine->asleep))
		nicoff_ring_set_flags(&port->cmd, NICOFF_RING_NEED_WAKEUP, 0);
	card->port_tab[port->num] = port;
	list_add_tail(&port->node, &card->ports);
	mutex_unlock(&card->lock);

	req->port = port->num;
	req->cmd_offset = NICOFF_MMAP_CMD_RING;
	req->cmd_size = port->cmd.size;
	req->cq_offset = NICOFF_MMAP_CQ_RING;
	req->cq_size = port->cq.size;
	*out = port;
	return 0;

out_mm:
	mem_cgroup_put(port->memcg);
	mmdrop(port->mm);
	nicoff_ring_free(&port->cq);
out_cmd:
	nicoff_ring_free(&port->cmd);
out_charge:
	nicoff_ring_uncharge(port->user, port->ring_pages);
out_user:
	free_uid(port->user);
	kfree(port);
	return ret;
}

/*
 * The last reference to the file is gone, so no mapping of the rings and no
 * ioctl remains.  Once the port is off the card's list the engine cannot be
 * inside it; commands it never took are cancelled with the port.
 */
void nicoff_port_close(struct nicoff_port *port)
{
	struct nicoff_card *card = port->card;

	mutex_lock(&card->lock);
	/* The firmware forgets the port: no completion for it after this. */
	fw_port_detach(card->fw, port->num);
	list_del(&port->node);
	card->port_tab[port->num] = NULL;
	/* Detaching queues aborts and arms timers: the engine must see them. */
	card->next_timer = fw_poll(card->fw, ktime_get_ns());
	mutex_unlock(&card->lock);
	nicoff_engine_kick(card->engine);

	nicoff_mr_release_all(port);
	xa_destroy(&port->mrs);
	/* The firmware forgot the port: the card thread charges it no more. */
	mem_cgroup_put(port->memcg);
	mmdrop(port->mm);
	nicoff_ring_free(&port->cq);
	nicoff_ring_free(&port->cmd);
	nicoff_ring_uncharge(port->user, port->ring_pages);
	free_uid(port->user);
	kfree(port);
}

void nicoff_port_stats(struct nicoff_port *port, struct nicoff_port_stats *st)
{
	st->cmds = READ_ONCE(port->cmds);
	st->cqes = READ_ONCE(port->cqes);
	st->kicks = atomic64_read(&port->kicks);
	st->bad_cmds = READ_ONCE(port->bad_cmds);
	st->cq_full = READ_ONCE(port->cq_full);
}

static void nicoff_port_wake(struct nicoff_port *port)
{
	if (wq_has_sleeper(&port->wq))
		wake_up_interruptible_poll(&port->wq, EPOLLIN | EPOLLRDNORM);
}

/* The process broke the ring protocol: stop serving the port for good. */
static void nicoff_port_fail(struct nicoff_port *port, u32 cq_used)
{
	struct nicoff_cqe *cqe;

	nicoff_ring_set_flags(&port->cmd, NICOFF_RING_ERROR, 0);
	nicoff_ring_set_flags(&port->cq, NICOFF_RING_ERROR, 0);
	/* Release: whoever sees the error (poll, REG_MR) sees the ring flags too. */
	smp_store_release(&port->error, true);
	/* Tell it in-band too, unless that would overwrite a completion. */
	if (cq_used < port->cq.entries) {
		cqe = nicoff_ring_slot(&port->cq, port->cq.priv);
		memset(cqe, 0, sizeof(*cqe));
		cqe->status = -EPROTO;
		cqe->opcode = NICOFF_OP_PORT_ERROR;
		/* The entry is written before the process can see it. */
		smp_store_release(&port->cq.hdr->producer, ++port->cq.priv);
	}
	wake_up_interruptible_poll(&port->wq, EPOLLERR);
}

/* Copy a descriptor out of shared memory once, word by word. */
static void nicoff_cmd_fetch(struct nicoff_cmd *dst, const struct nicoff_cmd *src)
{
	const u64 *s = (const u64 *)src;
	u64 *d = (u64 *)dst;
	unsigned int i;

	BUILD_BUG_ON(sizeof(*dst) != 64);
	BUILD_BUG_ON(sizeof(struct nicoff_cqe) != 64);
	/* Opcodes are numbered by their place in nicoff_lists.h: appending keeps them. */
	BUILD_BUG_ON(NICOFF_OP_BARRIER != 11 || NICOFF_OP_PING != 12 ||
		     NICOFF_OP_ACC_STRIDED != 15 || NICOFF_OP_GET_VECTOR != 18);
	for (i = 0; i < sizeof(*dst) / sizeof(u64); i++)
		d[i] = READ_ONCE(s[i]);
}

/* A COPY costs the pass's allowance one unit per KiB it copies. */
#define NICOFF_COPY_UNIT_SHIFT	10

/*
 * Check a COPY and make it the port's COPY under way; one that fails the
 * checks completes at once with its error.
 */
static s32 nicoff_exec_copy(struct nicoff_port *port, const struct nicoff_cmd *c)
{
	const struct nicoff_op_copy *op = &c->copy;
	struct nicoff_port_copy *cp = &port->copy;
	struct nicoff_mr *src, *dst;
	int ret;

	if (op->reserved[0] || op->reserved[1])
		return -EINVAL;
	src = nicoff_mr_lookup(port, op->src_mr);
	dst = nicoff_mr_lookup(port, op->dst_mr);
	if (!src || !dst)
		return -ENOENT;
	ret = nicoff_mr_check(src, op->src_off, op->len, 0);
	if (!ret)
		ret = nicoff_mr_check(dst, op->dst_off, op->len, NICOFF_ACCESS_LOCAL_WRITE);
	if (ret)
		return ret;
	cp->src = src;
	cp->dst = dst;
	cp->src_off = op->src_off;
	cp->dst_off = op->dst_off;
	cp->len = op->len;
	cp->done = 0;
	cp->tag = c->tag;
	cp->active = true;
	return 0;
}

/*
 * Copy the next slice of the port's COPY under way: as many KiB as the
 * pass's allowance @work has left (a rest under a KiB costs nothing), so
 * that a COPY of any length holds the card lock for a bounded time.  Once
 * it is done, or a region was deregistered, it completes into the room
 * reserved when it was taken.  Returns whether it completed.
 */
static bool nicoff_copy_run(struct nicoff_port *port, u32 *work)
{
	struct nicoff_port_copy *cp = &port->copy;
	struct nicoff_kring *cq = &port->cq;
	struct nicoff_cqe *cqe;
	s32 status = -ENOENT;
	u64 rest, n;

	if (cp->src && cp->dst) {
		rest = cp->len - cp->done;
		n = rest >> NICOFF_COPY_UNIT_SHIFT ?
		    min_t(u64, rest, (u64)*work << NICOFF_COPY_UNIT_SHIFT) : rest;
		nicoff_mr_copy(cp->dst, cp->dst_off + cp->done, cp->src, cp->src_off + cp->done,
			       n);
		cp->done += n;
		*work -= n >> NICOFF_COPY_UNIT_SHIFT;
		if (cp->done < cp->len)
			return false;
		status = 0;
	}
	cp->active = false;
	cp->src = NULL;
	cp->dst = NULL;
	port->cq_pending--;
	if (status)
		port->bad_cmds++;
	port->cqes++;
	cqe = nicoff_ring_slot(cq, cq->priv++);
	memset(cqe, 0, sizeof(*cqe));
	cqe->tag = cp->tag;
	cqe->status = status;
	cqe->opcode = NICOFF_OP_COPY;
	cqe->result = cp->done;
	/* Release: the completion is written before the process sees it. */
	smp_store_release(&cq->hdr->producer, cq->priv);
	nicoff_port_wake(port);
	return true;
}

/* Region @mr is being deregistered: a COPY using it stops where it is. */
void nicoff_port_mr_gone(struct nicoff_port *port, struct nicoff_mr *mr)
{
	struct nicoff_port_copy *cp = &port->copy;

	lockdep_assert_held(&port->card->lock);
	if (cp->active && (cp->src == mr || cp->dst == mr)) {
		cp->src = NULL;
		cp->dst = NULL;
	}
}

/*
 * NOP, COPY and malformed commands are the host's; every other opcode goes
 * to the firmware, whose engine table refuses those it does not know.  A
 * valid COPY becomes the port's COPY under way (port->copy.active).
 */
static bool nicoff_exec_local(struct nicoff_port *port, const struct nicoff_cmd *cmd,
			      s32 *status)
{
	if (cmd->flags || cmd->reserved0 || cmd->reserved1) {
		*status = -EINVAL;
		return true;
	}
	switch (cmd->opcode) {
	case NICOFF_OP_NOP:
		*status = memchr_inv(cmd->raw, 0, sizeof(cmd->raw)) ? -EINVAL : 0;
		return true;
	case NICOFF_OP_COPY:
		*status = nicoff_exec_copy(port, cmd);
		return true;
	default:
		return false;
	}
}

/* A completion the firmware posts, into room reserved when it took the command. */
void nicoff_port_complete_async(struct nicoff_port *port, const struct nicoff_cqe *cqe)
{
	struct nicoff_kring *cq = &port->cq;

	lockdep_assert_held(&port->card->lock);
	port->cq_pending--;
	if (port->error)
		return;
	memcpy(nicoff_ring_slot(cq, cq->priv++), cqe, sizeof(*cqe));
	port->cqes++;
	/* Release: the completion is written before the process sees it. */
	smp_store_release(&cq->hdr->producer, cq->priv);
	nicoff_port_wake(port);
}

/*
 * A peer broke this port's memory rules: tell the process, best effort,
 * once its completion ring has room (it has no command this answers).
 */
static void nicoff_port_remote_errors(struct nicoff_port *port, u32 cq_used)
{
	struct fw_remote_error last;
	struct nicoff_cqe *cqe;
	u64 n;

	n = fw_port_remote_errors(port->card->fw, port->num, &last);
	if (n == port->remote_errors_told || cq_used + port->cq_pending >= port->cq.entries)
		return;
	port->remote_errors_told = n;
	cqe = nicoff_ring_slot(&port->cq, port->cq.priv++);
	memset(cqe, 0, sizeof(*cqe));
	cqe->status = last.status;
	cqe->opcode = NICOFF_OP_REMOTE_ACCESS_ERROR;
	cqe->result = n;
	cqe->src_card = last.src_card;
	cqe->src_port = last.src_port;
	port->cqes++;
	/* Release: the completion is written before the process sees it. */
	smp_store_release(&port->cq.hdr->producer, port->cq.priv);
	nicoff_port_wake(port);
}

/*
 * What a command costs the card thread at once beyond a cheap one, in
 * units of about one member of a GROUP_CREATE (whose table the card reads,
 * checks and sorts, and whose schedules it builds, all at once).  A COPY
 * pays per slice instead (nicoff_copy_run()).
 */
static u32 nicoff_cmd_work(const struct nicoff_cmd *c, u64 group_limit)
{
	if (c->opcode == NICOFF_OP_GROUP_CREATE)
		return c->group.size <= group_limit ? c->group.size : 0;
	return 0;
}

/*
 * Serve up to @budget commands.  A command is taken only when the
 * completion ring has room for its completion, so a full completion ring
 * holds commands back instead of losing completions.  An expensive one is
 * taken only while the pass's allowance @work lasts (or nothing of it was
 * spent yet); otherwise it and the port's later commands wait for the next
 * pass, so no port makes a pass long for everyone.  A COPY is copied a
 * slice per pass, from that allowance; the port's later commands wait
 * until it completes, so completions keep the ring's order.
 */
unsigned int nicoff_port_service(struct nicoff_port *port, unsigned int budget, u32 *work)
{
	struct nicoff_kring *cmd = &port->cmd, *cq = &port->cq;
	u64 limit = nicoff_fw_group_limit(READ_ONCE(nicoff_max_group_size));
	u32 avail, cq_used, owed, n, i;
	unsigned int copied = 0;

	lockdep_assert_held(&port->card->lock);
	if (port->error)
		return 0;
	if (port->copy.active) {
		u64 before = port->copy.done;

		if (!nicoff_copy_run(port, work))
			return port->copy.done != before;
		copied = 1;
	}
	if (unlikely(fw_port_remote_errors(port->card->fw, port->num, NULL) !=
		     port->remote_errors_told)) {
		/* Acquire: the process is done with the entries it handed back. */
		cq_used = cq->priv - smp_load_acquire(&cq->hdr->consumer);
		if (cq_used <= cq->entries)
			nicoff_port_remote_errors(port, cq_used);
	}
	/* Acquire: the descriptors are read only after the tail that covers them. */
	avail = smp_load_acquire(&cmd->hdr->producer) - cmd->priv;
	if (!avail)
		return copied;
	/* Acquire: the process is done reading the entries it handed back. */
	cq_used = cq->priv - smp_load_acquire(&cq->hdr->consumer);
	if (avail > cmd->entries || cq_used > cq->entries) {
		nicoff_port_fail(port, cq_used);
		return 1;
	}
	/* Room for one completion per command, besides those owed already. */
	owed = cq_used + port->cq_pending;
	n = min3(avail, owed < cq->entries ? cq->entries - owed : 0, budget);
	if (!n) {
		port->cq_full++;
		return copied;
	}
	for (i = 0; i < n; i++) {
		struct nicoff_cmd c;
		struct nicoff_cqe *cqe;
		s32 status;
		u32 w;

		nicoff_cmd_fetch(&c, nicoff_ring_slot(cmd, cmd->priv));
		w = nicoff_cmd_work(&c, limit);
		if (w) {
			if (w > *work && *work < NICOFF_PASS_WORK)
				break;
			*work -= min(w, *work);
		}
		cmd->priv++;
		if (!nicoff_exec_local(port, &c, &status)) {
			port->cq_pending++;
			port->cmds++;
			/* An opcode nobody runs is a bad command, as the host's refusals are. */
			if (fw_cmd(port->card->fw, port->num, &c) == -EOPNOTSUPP)
				port->bad_cmds++;
			continue;
		}
		if (port->copy.active) {
			/* Its completion goes into room reserved now, when it is done. */
			port->cq_pending++;
			port->cmds++;
			if (nicoff_copy_run(port, work))
				continue;
			i++;
			break;
		}
		if (status)
			port->bad_cmds++;
		port->cmds++;
		port->cqes++;
		cqe = nicoff_ring_slot(cq, cq->priv++);
		memset(cqe, 0, sizeof(*cqe));
		cqe->tag = c.tag;
		cqe->status = status;
		cqe->opcode = c.opcode;
	}
	if (!i)
		return copied;
	/* Release: the slots are read before the process may reuse them. */
	smp_store_release(&cmd->hdr->consumer, cmd->priv);
	/* Release: the completions are written before the process sees them. */
	smp_store_release(&cq->hdr->producer, cq->priv);
	nicoff_port_wake(port);
	return i + copied;
}

/* Would a pass do something?  Used before the engine sleeps. */
bool nicoff_port_has_work(struct nicoff_port *port)
{
	u32 avail, cq_used;

	lockdep_assert_held(&port->card->lock);
	if (port->error)
		return false;
	if (port->copy.active)
		return true;
	avail = READ_ONCE(port->cmd.hdr->producer) - port->cmd.priv;
	if (!avail)
		return false;
	cq_used = port->cq.priv - READ_ONCE(port->cq.hdr->consumer);
	/* Garbage counts as work: the next pass puts the port in error. */
	if (avail > port->cmd.entries || cq_used > port->cq.entries)
		return true;
	return cq_used + port->cq_pending < port->cq.entries;
}

bool nicoff_port_cq_ready(struct nicoff_port *port)
{
	return READ_ONCE(port->cq.hdr->consumer) != READ_ONCE(port->cq.hdr->producer);
}
