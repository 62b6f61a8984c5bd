// SPDX-License-Identifier: GPL-2.0
/*
 * The card's barrier schedules for the library: firmware-sim/barrier_alg.c
 * builds them, with the two fw_os.h calls it makes (allocation) answered
 * by libc.  Its card argument only carries the host context, which this
 * allocator does not need.
 */
#include "barrier.h"
#include "barrier_sched.h"

#include <stdlib.h>

void *fwos_zalloc(struct fw_host *h, size_t size)
{
	(void)h;
	return calloc(1, size);
}

void fwos_free(struct fw_host *h, void *p)
{
	(void)h;
	free(p);
}

int nicoff_bsched_walk(uint32_t alg, uint32_t param, uint32_t rank, uint32_t size,
		       nicoff_bsched_msg_fn *msg, void *ctx)
{
	static struct fw_card no_host;
	struct fw_bsched *s;
	int nsteps;
	u32 i;

	if (!param)
		param = alg == NICOFF_BARRIER_TREE ? FW_BAR_TREE_DEGREE : FW_BAR_COMBINING_FANIN;
	s = fw_bsched_build(&no_host, alg, param, rank, size);
	if (!s)
		return -ENOMEM;
	for (i = 0; i < s->nsend; i++)
		msg(ctx, 0, s->send[i].rank, s->send[i].step);
	for (i = 0; i < s->nrecv; i++)
		msg(ctx, 1, s->recv[i].rank, s->recv[i].step);
	nsteps = (int)s->nsteps;
	fw_bsched_free(&no_host, s);
	return nsteps;
}
