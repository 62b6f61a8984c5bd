// SPDX-License-Identifier: GPL-2.0
/*
 * armci_nb ITERS [SEED]: non-blocking strided operations completed out of
 * order.  Each iteration every rank issues NOPS ARMCI_NbPutS of 2 or 3
 * dimensions into its own slots of random ranks' windows and NOPS
 * ARMCI_NbGetS from random ranks' read-only windows, each on its own
 * handle, and completes them by turns with ARMCI_Wait in reverse order,
 * ARMCI_Wait in a random order, or ARMCI_WaitAll.  Once a put's handle is
 * complete its source buffer is overwritten: the target must still see the
 * data as it was at the call.  Every get's buffer and, after a barrier,
 * every window are compared in full with the local reference.
 */
#include "armci_test.h"

#define NOPS 8
#define SLOT (16 * 1024)

struct op {
	struct at_shape sh;
	int ss[AT_MAX_DIMS], ds[AT_MAX_DIMS];
	int peer;
};

/* Operation k of rank r in iteration it: peer, shape and strides. */
static void draw_op(uint64_t seed, int it, int r, int k, int get, struct op *o)
{
	struct at_rng g = at_rng(seed, it, r, 16 + 2 * k + get);

	o->peer = (int)at_range(&g, 0, at_nproc - 1);
	at_random_shape(&g, (int)at_range(&g, 2, 3), 1, &o->sh);
	at_random_strides(&g, &o->sh, 1, 16, o->ss);
	at_random_strides(&g, &o->sh, 1, 16, o->ds);
	if (at_span(&o->sh, o->ss) > SLOT || at_span(&o->sh, o->ds) > SLOT)
		mt_fail("a patch spans more than a slot of %d bytes", SLOT);
}

/* The order of completion: reverse, or a random permutation. */
static void wait_order(struct at_rng *g, int reverse, int *order)
{
	int i, j, t;

	for (i = 0; i < NOPS; i++)
		order[i] = reverse ? NOPS - 1 - i : i;
	if (reverse)
		return;
	for (i = NOPS - 1; i > 0; i--) {
		j = (int)at_range(g, 0, i);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "Wait in reverse order", "Wait in a random order",
					     "WaitAll" };
	long put_len, k2;
	armci_hdl_t hput[NOPS], hget[NOPS];
	char *src, *gbuf, *want, *seen, *peer_win;
	void **wput, **wget;
	int it, iters, k, r, mode, order[NOPS];
	struct at_rng g;
	struct op o;
	uint64_t seed;

	iters = at_start(&argc, &argv, "armci_nb", 30, &seed);
	put_len = (long)at_nproc * NOPS * SLOT;
	wput = at_malloc(put_len);
	wget = at_malloc(SLOT);
	src = at_xmalloc((size_t)NOPS * SLOT);
	gbuf = at_xmalloc((size_t)NOPS * SLOT);
	want = at_xmalloc((size_t)put_len);
	seen = at_xmalloc((size_t)put_len);
	peer_win = at_xmalloc(SLOT);
	for (it = 0; it < iters; it++) {
		mode = it % 3;
		g = at_rng(seed, it, at_rank, 1);
		at_fill(&g, want, (size_t)put_len);
		at_local_write(wput[at_rank], want, (size_t)put_len);
		g = at_rng(seed, it, at_rank, 2);
		at_fill(&g, want, SLOT);
		at_local_write(wget[at_rank], want, SLOT);
		g = at_rng(seed, it, at_rank, 3);
		at_fill(&g, src, (size_t)NOPS * SLOT);
		at_fill(&g, gbuf, (size_t)NOPS * SLOT);
		ARMCI_Barrier();

		for (k = 0; k < NOPS; k++) {
			draw_op(seed, it, at_rank, k, 0, &o);
			ARMCI_INIT_HANDLE(&hput[k]);
			AT_CK(ARMCI_NbPutS(src + (long)k * SLOT, o.ss,
					   (char *)wput[o.peer] + ((long)at_rank * NOPS + k) * SLOT,
					   o.ds, o.sh.count, o.sh.levels, o.peer, &hput[k]));
			draw_op(seed, it, at_rank, k, 1, &o);
			ARMCI_INIT_HANDLE(&hget[k]);
			AT_CK(ARMCI_NbGetS(wget[o.peer], o.ss, gbuf + (long)k * SLOT, o.ds,
					   o.sh.count, o.sh.levels, o.peer, &hget[k]));
		}
		if (mode == 2) {
			AT_CK(ARMCI_WaitAll());
		} else {
			g = at_rng(seed, it, at_rank, 4);
			wait_order(&g, mode == 0, order);
			for (k = 0; k < NOPS; k++) {
				AT_CK(ARMCI_Wait(&hget[order[k]]));
				AT_CK(ARMCI_Wait(&hput[order[NOPS - 1 - k]]));
			}
		}
		/* Complete: the sources may change, the gets' data is there. */
		memset(src, 0xa5, (size_t)NOPS * SLOT);
		g = at_rng(seed, it, at_rank, 3);
		at_fill(&g, seen, (size_t)NOPS * SLOT);
		at_fill(&g, want, (size_t)NOPS * SLOT);
		for (k = 0; k < NOPS; k++) {
			draw_op(seed, it, at_rank, k, 1, &o);
			g = at_rng(seed, it, o.peer, 2);
			at_fill(&g, peer_win, SLOT);
			at_strided_apply(want + (long)k * SLOT, o.ds, peer_win, o.ss, &o.sh, 0, 0,
					 NULL);
		}
		at_compare(gbuf, want, (size_t)NOPS * SLOT, "iteration %d: %d NbGetS completed by %s", it, NOPS,
			 modes[mode]);
		ARMCI_Barrier();

		/* This window: every rank's puts that chose this rank. */
		g = at_rng(seed, it, at_rank, 1);
		at_fill(&g, want, (size_t)put_len);
		for (r = 0; r < at_nproc; r++) {
			g = at_rng(seed, it, r, 3);
			at_fill(&g, src, (size_t)NOPS * SLOT);
			for (k = 0; k < NOPS; k++) {
				draw_op(seed, it, r, k, 0, &o);
				if (o.peer != at_rank)
					continue;
				k2 = ((long)r * NOPS + k) * SLOT;
				at_strided_apply(want + k2, o.ds, src + (long)k * SLOT, o.ss, &o.sh,
						 0, 0, NULL);
			}
		}
		at_local_read(seen, wput[at_rank], (size_t)put_len);
		at_compare(seen, want, (size_t)put_len, "iteration %d: NbPutS completed by %s", it,
			 modes[mode]);
		ARMCI_Barrier();
	}
	free(peer_win);
	free(seen);
	free(want);
	free(gbuf);
	free(src);
	at_free(wget);
	at_free(wput);
	at_finish("%d iterations of %d NbPutS and %d NbGetS each", iters, NOPS,
		 NOPS);
	return 0;
}
