// SPDX-License-Identifier: GPL-2.0
/*
 * armci_strided ITERS [SEED]: ARMCI_PutS, GetS and AccS of 1 to 7 dimensions
 * (iteration i has 1 + i % 7), each compared in full against the local
 * reference copy (armci_test.h).  Shapes, strides, offsets and data come
 * from the seed, so that a receiver replays what its sender did:
 *   put  every rank puts a random patch (source and destination strides
 *        drawn apart) into the next rank's window along a shift that changes
 *        with the iteration (one writer per window, itself at shift 0); the
 *        owner compares its whole window, untouched bytes included.
 *   get  every rank gets a random patch of a peer's window into a prefilled
 *        local buffer and compares the whole buffer.
 *   acc  every rank accumulates its own patch of int, long or double (by
 *        turns) with its own scale into the same target at once; the target
 *        compares its window with the sum (integer-valued, so exact in any
 *        order).
 */
#include "armci_test.h"

#define WIN (256 * 1024)
#define SRC_LEN (256 * 1024)

/* A patch drawn from g: shape, both stride sets and both offsets. */
struct patch {
	struct at_shape sh;
	int ss[AT_MAX_DIMS], ds[AT_MAX_DIMS];
	long soff, doff;
};

static void draw_patch(struct at_rng *g, int dims, int unit, struct patch *p)
{
	long sspan, dspan;

	at_random_shape(g, dims, unit, &p->sh);
	at_random_strides(g, &p->sh, unit, 16, p->ss);
	at_random_strides(g, &p->sh, unit, 16, p->ds);
	sspan = at_span(&p->sh, p->ss);
	dspan = at_span(&p->sh, p->ds);
	if (sspan > SRC_LEN || dspan > WIN)
		mt_fail("a %d-dimensional patch spans %ld/%ld bytes: the window is too small", dims,
			sspan, dspan);
	p->soff = unit * at_range(g, 0, (SRC_LEN - sspan) / unit);
	p->doff = unit * at_range(g, 0, (WIN - dspan) / unit);
}

/*
 * Rank r's patch of phase ph in iteration it (in *p) and its data (len bytes
 * in data: random bytes, or values of the accumulate type when type >= 0).
 */
static void replay(uint64_t seed, int it, int r, int ph, int dims, int type, struct patch *p,
		   char *data, long len)
{
	struct at_rng g = at_rng(seed, it, r, ph);

	draw_patch(&g, dims, type >= 0 ? at_type_size(type) : 1, p);
	g = at_rng(seed, it, r, ph + 1);
	if (type >= 0)
		at_acc_values(&g, type, data, len / at_type_size(type));
	else
		at_fill(&g, data, (size_t)len);
}

/* This rank's window filled from phase ph's generator (a copy in want), then a barrier. */
static void reset_window(void **win, char *want, uint64_t seed, int it, int ph)
{
	struct at_rng g = at_rng(seed, it, at_rank, ph);

	at_fill(&g, want, WIN);
	at_local_write(win[at_rank], want, WIN);
	ARMCI_Barrier();
}

static void put_phase(void **win, char *buf, char *want, char *seen, uint64_t seed, int it,
		      int dims)
{
	int shift = it % at_nproc, to = (at_rank + shift) % at_nproc;
	int from = (at_rank - shift + at_nproc) % at_nproc;
	struct patch p;

	reset_window(win, want, seed, it, 1);
	replay(seed, it, at_rank, 2, dims, -1, &p, buf, SRC_LEN);
	AT_CK(ARMCI_PutS(buf + p.soff, p.ss, (char *)win[to] + p.doff, p.ds, p.sh.count,
			 p.sh.levels, to));
	ARMCI_Barrier();

	/* The reference: the sender's patch over this window's first contents. */
	replay(seed, it, from, 2, dims, -1, &p, buf, SRC_LEN);
	at_strided_apply(want + p.doff, p.ds, buf + p.soff, p.ss, &p.sh, 0, 0, NULL);
	at_local_read(seen, win[at_rank], WIN);
	at_compare(seen, want, WIN, "iteration %d: PutS of %d dimensions (%ld bytes) from rank %d", it, dims, at_bytes(&p.sh), from);
	ARMCI_Barrier();
}

static void get_phase(void **win, char *buf, char *want, char *seen, uint64_t seed, int it,
		      int dims)
{
	int from = (at_rank + 1 + it % at_nproc) % at_nproc;
	struct at_rng g;
	struct patch p;

	reset_window(win, want, seed, it, 4);
	/* Source is the peer's window (strides ds), destination this buffer (ss). */
	replay(seed, it, at_rank, 5, dims, -1, &p, seen, SRC_LEN);
	memcpy(want, seen, SRC_LEN);
	AT_CK(ARMCI_GetS((char *)win[from] + p.doff, p.ds, seen + p.soff, p.ss, p.sh.count,
			 p.sh.levels, from));

	g = at_rng(seed, it, from, 4);
	at_fill(&g, buf, WIN);
	at_strided_apply(want + p.soff, p.ss, buf + p.doff, p.ds, &p.sh, 0, 0, NULL);
	at_compare(seen, want, SRC_LEN, "iteration %d: GetS of %d dimensions (%ld bytes) from rank %d", it, dims, at_bytes(&p.sh), from);
	ARMCI_Barrier();
}

static void acc_phase(void **win, char *buf, char *want, char *seen, uint64_t seed, int it,
		      int dims)
{
	int type = at_acc_types[it % 3], unit = at_type_size(type), target = it % at_nproc, r;
	struct at_rng g;
	struct patch p;
	union at_scale scale;

	g = at_rng(seed, it, target, 7);
	at_acc_values(&g, type, want, WIN / unit);
	if (at_rank == target)
		at_local_write(win[at_rank], want, WIN);
	ARMCI_Barrier();

	replay(seed, it, at_rank, 8, dims, type, &p, buf, SRC_LEN);
	at_acc_scale(type, at_rank, it, &scale);
	AT_CK(ARMCI_AccS(type, &scale, buf + p.soff, p.ss, (char *)win[target] + p.doff, p.ds,
			 p.sh.count, p.sh.levels, target));
	ARMCI_Barrier();

	if (at_rank == target) {
		for (r = 0; r < at_nproc; r++) {
			replay(seed, it, r, 8, dims, type, &p, buf, SRC_LEN);
			at_acc_scale(type, r, it, &scale);
			at_strided_apply(want + p.doff, p.ds, buf + p.soff, p.ss, &p.sh, 1, type,
					 &scale);
		}
		at_local_read(seen, win[at_rank], WIN);
		at_compare(seen, want, WIN, "iteration %d: AccS (type %d) of %d dimensions from all %d ranks", it,
			 type, dims, at_nproc);
	}
	ARMCI_Barrier();
}

int main(int argc, char **argv)
{
	char *buf, *want, *seen;
	uint64_t seed;
	void **win;
	int it, iters;

	iters = at_start(&argc, &argv, "armci_strided", 42, &seed);
	win = at_malloc(WIN);
	buf = at_xmalloc(SRC_LEN);
	want = at_xmalloc(WIN);
	seen = at_xmalloc(WIN);
	for (it = 0; it < iters; it++) {
		int dims = 1 + it % AT_MAX_DIMS;

		put_phase(win, buf, want, seen, seed, it, dims);
		get_phase(win, buf, want, seen, seed, it, dims);
		acc_phase(win, buf, want, seen, seed, it, dims);
	}
	free(seen);
	free(want);
	free(buf);
	at_free(win);
	at_finish("%d iterations of PutS, GetS and AccS", iters);
	return 0;
}
