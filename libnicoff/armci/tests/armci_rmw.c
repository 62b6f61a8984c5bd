// SPDX-License-Identifier: GPL-2.0
/*
 * armci_rmw OPS: ARMCI_Rmw on counters in every rank's window.  Each rank
 * makes OPS calls of each kind, the i-th on rank i % nproc:
 *   fetch-and-add  int (add rank + 1) and long (from 2^35, add
 *                  (rank + 1) * 1000003): every rank learns every fetched
 *                  value, and the owner checks that they chain, sorted, from
 *                  the first value to the final one, each step one call's
 *                  addend: no add lost, doubled or torn.
 *   swap           int and long, every value swapped in unique (the long
 *                  ones above 2^32): the first value and all swapped in are,
 *                  as a set, the values returned and the final one.
 */
#include "armci_test.h"

#define LONG_BASE (1L << 35)

/* One call's record: the owner of the counter, what it returned, what it added. */
struct rec {
	long target, old, arg;
};

/*
 * The counters' places: long fetch-and-add, long swap, int fetch-and-add,
 * int swap, in a window of 32 bytes: with 24 (the counters alone),
 * ARMCI-MPI on MPICH 4.0.2 (the control) returned wrong values at 2 ranks
 * on the host: the int fetch-and-add saw the long counters' sums.
 */
enum { FADD_L = 0, SWAP_L = 8, FADD_I = 16, SWAP_I = 20, WIN = 32 };

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static int cmp_rec(const void *a, const void *b)
{
	return cmp_long(&((const struct rec *)a)->old, &((const struct rec *)b)->old);
}

/* Every rank's n records, gathered into all (n * nproc). */
static struct rec *gather(const struct rec *mine, long n)
{
	struct rec *all = at_xmalloc(sizeof(*all) * (size_t)(n * at_nproc));

	if (MPI_Allgather(mine, (int)(n * 3), MPI_LONG, all, (int)(n * 3), MPI_LONG,
			  MPI_COMM_WORLD) != MPI_SUCCESS)
		mt_fail("MPI_Allgather failed");
	return all;
}

/* The fetch-and-add records that hit this rank chain from first to final. */
static void check_chain(struct rec *all, long n, long first, long final, const char *what)
{
	long i, k = 0, v = first;

	for (i = 0; i < n; i++)
		if (all[i].target == at_rank)
			all[k++] = all[i];
	qsort(all, (size_t)k, sizeof(*all), cmp_rec);
	for (i = 0; i < k; i++) {
		if (all[i].old != v)
			mt_fail("%s: call %ld of %ld in order returned %ld, expected %ld", what, i, k,
				all[i].old, v);
		v += all[i].arg;
	}
	if (v != final)
		mt_fail("%s: the counter holds %ld after %ld calls, expected %ld", what, final, k,
			v);
}

/* The swap records that hit this rank: {first} + swapped in = returned + {final}. */
static void check_swaps(const struct rec *all, long n, long first, long final, const char *what)
{
	long *in = at_xmalloc(sizeof(long) * (size_t)(n + 1));
	long *out = at_xmalloc(sizeof(long) * (size_t)(n + 1));
	long i, k = 0;

	in[0] = first;
	out[0] = final;
	for (i = 0; i < n; i++) {
		if (all[i].target != at_rank)
			continue;
		k++;
		in[k] = all[i].arg;
		out[k] = all[i].old;
	}
	qsort(in, (size_t)k + 1, sizeof(long), cmp_long);
	qsort(out, (size_t)k + 1, sizeof(long), cmp_long);
	for (i = 0; i <= k; i++)
		if (in[i] != out[i])
			mt_fail("%s: after %ld swaps the values in and out differ (%ld against %ld)",
				what, k, in[i], out[i]);
	free(out);
	free(in);
}

int main(int argc, char **argv)
{
	struct rec *fi, *fl, *si, *sl, *all;
	char init[WIN], now[WIN];
	long i, ops, first_l = LONG_BASE, final_l;
	int first_i = -1, final_i;
	void **win;

	at_init(&argc, &argv, "armci_rmw");
	ops = mt_arg(argc, argv, 1, 500);
	win = at_malloc(WIN);
	memset(init, 0, sizeof(init));
	memcpy(init + FADD_L, &first_l, sizeof(long));
	memcpy(init + SWAP_L, &(long){ -1 }, sizeof(long));
	memcpy(init + SWAP_I, &first_i, sizeof(int));
	at_local_write(win[at_rank], init, WIN);
	fi = at_xmalloc(sizeof(*fi) * (size_t)ops);
	fl = at_xmalloc(sizeof(*fl) * (size_t)ops);
	si = at_xmalloc(sizeof(*si) * (size_t)ops);
	sl = at_xmalloc(sizeof(*sl) * (size_t)ops);
	ARMCI_Barrier();
	for (i = 0; i < ops; i++) {
		int t = (int)(i % at_nproc), vi;
		char *rc = win[t];
		long vl;

		fi[i] = (struct rec){ t, 0, at_rank + 1 };
		AT_CK(ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &vi, rc + FADD_I, at_rank + 1, t));
		fi[i].old = vi;
		fl[i] = (struct rec){ t, 0, (at_rank + 1) * 1000003L };
		AT_CK(ARMCI_Rmw(ARMCI_FETCH_AND_ADD_LONG, &vl, rc + FADD_L, (at_rank + 1) * 1000003,
				t));
		fl[i].old = vl;
		vi = (int)(at_rank * ops + i + 1);
		si[i] = (struct rec){ t, 0, vi };
		AT_CK(ARMCI_Rmw(ARMCI_SWAP, &vi, rc + SWAP_I, 0, t));
		si[i].old = vi;
		vl = ((at_rank * ops + i + 1) << 33) | 1;
		sl[i] = (struct rec){ t, 0, vl };
		AT_CK(ARMCI_Rmw(ARMCI_SWAP_LONG, &vl, rc + SWAP_L, 0, t));
		sl[i].old = vl;
	}
	ARMCI_Barrier();
	at_local_read(now, win[at_rank], WIN);

	all = gather(fi, ops);
	memcpy(&final_i, now + FADD_I, sizeof(int));
	check_chain(all, ops * at_nproc, 0, final_i, "int fetch-and-add");
	free(all);
	all = gather(fl, ops);
	memcpy(&final_l, now + FADD_L, sizeof(long));
	check_chain(all, ops * at_nproc, first_l, final_l, "long fetch-and-add");
	free(all);
	all = gather(si, ops);
	memcpy(&final_i, now + SWAP_I, sizeof(int));
	check_swaps(all, ops * at_nproc, first_i, final_i, "int swap");
	free(all);
	all = gather(sl, ops);
	memcpy(&final_l, now + SWAP_L, sizeof(long));
	check_swaps(all, ops * at_nproc, -1, final_l, "long swap");
	free(all);

	free(sl);
	free(si);
	free(fl);
	free(fi);
	at_free(win);
	at_finish("%ld calls of each of the four kinds a rank", ops);
	return 0;
}
