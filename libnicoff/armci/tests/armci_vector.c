// SPDX-License-Identifier: GPL-2.0
/*
 * armci_vector ITERS [SEED]: ARMCI_PutV, GetV and AccV.  Each call carries 1
 * to 3 descriptors of up to 40 segments each, every segment at its own
 * random place (distinct cells of CELL bytes, at a random offset inside
 * the cell) on both sides:
 *   put  into the next rank along a shift that changes with the iteration;
 *        the owner compares its whole window.
 *   get  from a rank's window (its own by turns) into a prefilled buffer, compared in full.
 *   acc  every rank at once into the same target, int, long or double by
 *        turns, so that the same elements are hit by several ranks; the
 *        target compares its window with the sum.
 */
#include "armci_test.h"

#define CELL 64
#define NCELL 1024
#define WIN (CELL * NCELL)
#define MAX_DESC 3
#define MAX_SEG 40

struct vec {
	int ndesc;
	armci_giov_t iov[MAX_DESC];
	long soff[MAX_DESC][MAX_SEG], doff[MAX_DESC][MAX_SEG];
	void *sptr[MAX_DESC][MAX_SEG], *dptr[MAX_DESC][MAX_SEG];
};

/*
 * n distinct cells of the avail in cells, each with an offset inside it for
 * a segment of len bytes aligned to unit.
 */
static void draw_places(struct at_rng *g, int *cells, int avail, int n, int len, int unit,
			long *off)
{
	int i, j, t;

	for (i = 0; i < n; i++) {
		j = (int)at_range(g, i, avail - 1);
		t = cells[i];
		cells[i] = cells[j];
		cells[j] = t;
		off[i] = (long)cells[i] * CELL + unit * at_range(g, 0, (CELL - len) / unit);
	}
}

/* The call of rank r in iteration it and phase ph; pointers based at src and dst. */
static void draw_vec(uint64_t seed, int it, int r, int ph, int unit, char *src, char *dst,
		     struct vec *v)
{
	struct at_rng g = at_rng(seed, it, r, ph);
	int scells[NCELL], dcells[NCELL], d, s, used = 0;

	for (s = 0; s < NCELL; s++)
		scells[s] = dcells[s] = s;
	v->ndesc = (int)at_range(&g, 1, MAX_DESC);
	for (d = 0; d < v->ndesc; d++) {
		armci_giov_t *io = &v->iov[d];

		io->bytes = unit * (int)at_range(&g, 1, CELL / unit);
		io->ptr_array_len = (int)at_range(&g, 1, MAX_SEG);
		/* Distinct cells across the descriptors: draw from the unused tail. */
		draw_places(&g, scells + used, NCELL - used, io->ptr_array_len, io->bytes, unit, v->soff[d]);
		draw_places(&g, dcells + used, NCELL - used, io->ptr_array_len, io->bytes, unit, v->doff[d]);
		used += io->ptr_array_len;
		for (s = 0; s < io->ptr_array_len; s++) {
			v->sptr[d][s] = src + v->soff[d][s];
			v->dptr[d][s] = dst + v->doff[d][s];
		}
		io->src_ptr_array = v->sptr[d];
		io->dst_ptr_array = v->dptr[d];
	}
}

/* The reference of a call: copy (or, with acc, add scaled) each segment. */
static void apply_vec(const struct vec *v, char *dst, const char *src, int acc, int type,
		      const void *scale)
{
	struct at_shape one = { 0, { 0 } };
	int d, s;

	for (d = 0; d < v->ndesc; d++) {
		one.count[0] = v->iov[d].bytes;
		for (s = 0; s < v->iov[d].ptr_array_len; s++)
			at_strided_apply(dst + v->doff[d][s], NULL, src + v->soff[d][s], NULL, &one,
					 acc, type, scale);
	}
}

/*
 * The window of owner after iteration it's put: its first contents with the
 * writer's call applied, in out (tmp: room for the writer's buffer).
 * Returns the writer.
 */
static int put_result(uint64_t seed, int it, int owner, char *out, char *tmp)
{
	int writer = (owner - it % at_nproc + at_nproc) % at_nproc;
	struct at_rng g = at_rng(seed, it, owner, 1);
	struct vec v;

	at_fill(&g, out, WIN);
	g = at_rng(seed, it, writer, 2);
	at_fill(&g, tmp, WIN);
	draw_vec(seed, it, writer, 3, 1, tmp, tmp, &v);
	apply_vec(&v, out, tmp, 0, 0, NULL);
	return writer;
}

int main(int argc, char **argv)
{
	char *buf, *want, *seen;
	int it, iters, shift, peer, type, unit, r;
	union at_scale scale;
	struct at_rng g;
	struct vec v;
	uint64_t seed;
	void **win;

	iters = at_start(&argc, &argv, "armci_vector", 30, &seed);
	win = at_malloc(WIN);
	buf = at_xmalloc(WIN);
	want = at_xmalloc(WIN);
	/* Twice the window: the get's reference needs a second buffer. */
	seen = at_xmalloc(2 * WIN);
	for (it = 0; it < iters; it++) {
		/* put */
		shift = it % at_nproc;
		peer = (at_rank + shift) % at_nproc;
		g = at_rng(seed, it, at_rank, 1);
		at_fill(&g, want, WIN);
		at_local_write(win[at_rank], want, WIN);
		ARMCI_Barrier();
		g = at_rng(seed, it, at_rank, 2);
		at_fill(&g, buf, WIN);
		draw_vec(seed, it, at_rank, 3, 1, buf, win[peer], &v);
		AT_CK(ARMCI_PutV(v.iov, v.ndesc, peer));
		ARMCI_Barrier();
		peer = put_result(seed, it, at_rank, want, buf);
		at_local_read(seen, win[at_rank], WIN);
		at_compare(seen, want, WIN, "iteration %d: PutV from rank %d", it, peer);
		ARMCI_Barrier();

		/* get: the window holds what the put left; the reference rebuilds it */
		peer = (at_rank + 1 + shift) % at_nproc;
		g = at_rng(seed, it, at_rank, 4);
		at_fill(&g, seen, WIN);
		memcpy(want, seen, WIN);
		draw_vec(seed, it, at_rank, 5, 1, win[peer], seen, &v);
		AT_CK(ARMCI_GetV(v.iov, v.ndesc, peer));
		put_result(seed, it, peer, buf, seen + WIN);
		apply_vec(&v, want, buf, 0, 0, NULL);
		at_compare(seen, want, WIN, "iteration %d: GetV of %d descriptors from rank %d", it,
			 v.ndesc, peer);
		ARMCI_Barrier();

		/* acc */
		type = at_acc_types[it % 3];
		unit = at_type_size(type);
		peer = it % at_nproc;
		g = at_rng(seed, it, peer, 6);
		at_acc_values(&g, type, want, WIN / unit);
		if (at_rank == peer)
			at_local_write(win[at_rank], want, WIN);
		ARMCI_Barrier();
		g = at_rng(seed, it, at_rank, 7);
		at_acc_values(&g, type, buf, WIN / unit);
		draw_vec(seed, it, at_rank, 8, unit, buf, win[peer], &v);
		at_acc_scale(type, at_rank, it, &scale);
		AT_CK(ARMCI_AccV(type, &scale, v.iov, v.ndesc, peer));
		ARMCI_Barrier();
		if (at_rank == peer) {
			for (r = 0; r < at_nproc; r++) {
				g = at_rng(seed, it, r, 7);
				at_acc_values(&g, type, buf, WIN / unit);
				draw_vec(seed, it, r, 8, unit, buf, buf, &v);
				at_acc_scale(type, r, it, &scale);
				apply_vec(&v, want, buf, 1, type, &scale);
			}
			at_local_read(seen, win[at_rank], WIN);
			at_compare(seen, want, WIN, "iteration %d: AccV (type %d) from all %d ranks", it, type, at_nproc);
		}
		ARMCI_Barrier();
	}
	free(seen);
	free(want);
	free(buf);
	at_free(win);
	at_finish("%d iterations of PutV, GetV and AccV", iters);
	return 0;
}
