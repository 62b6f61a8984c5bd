// SPDX-License-Identifier: GPL-2.0
/*
 * armci_calls ITERS [SEED]: the calls the other programs leave out, each
 * checked against a local reference.  ARMCI_Init_args starts ARMCI; the
 * armci_domain_* calls must describe one process per domain.  Each
 * iteration every rank works on its right neighbour's windows: an
 * ARMCI_NbPut from an ARMCI_Malloc_local buffer completed by
 * ARMCI_AllFence alone (then an MPI barrier, which fences nothing), an
 * ARMCI_NbGet into that buffer polled to completion with ARMCI_Test, an
 * ARMCI_NbAccS of 2 dimensions (int, long, double by turns), and
 * ARMCI_NbPutV, _NbGetV and _NbAccV of scattered segments; then
 * armci_msg_bcast from a root that changes, armci_msg_igop (+) and
 * armci_msg_dgop (max), between armci_msg_barrier calls.  With
 * ARMCI_TEST_BAD_LOCAL set, first: puts from a local buffer that is not
 * mapped and gets into one that is read-only must each return an error, and
 * the iterations after them must pass.
 */
#include <sys/mman.h>
#include <unistd.h>

#include "armci_test.h"

#define LEN 4096	/* a contiguous put or get, and each window */
#define NSEG 5		/* segments of a vector call */
#define SEG 96		/* bytes of a segment: whole ints, longs and doubles */

static int right(void)
{
	return (at_rank + 1) % at_nproc;
}

static int left(void)
{
	return (at_rank + at_nproc - 1) % at_nproc;
}

/*
 * Local buffers the process cannot read (a put's source) or write (a get's
 * destination): an error from the call, nothing else.  Asked of
 * libarmci-nicoff only: ARMCI-MPI copies them with memcpy and faults.
 */
static void check_bad_local(void **win)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *gone = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	char *ro = mmap(NULL, (size_t)pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int count[2] = { 64, 4 }, stride[1] = { 128 }, t = right();

	if (gone == MAP_FAILED || ro == MAP_FAILED)
		mt_fail("mmap: %m");
	munmap(gone, (size_t)pg);
	if (ARMCI_Put(gone, win[t], 64, t) == 0)
		mt_fail("ARMCI_Put from an unmapped buffer returned 0");
	if (ARMCI_PutS(gone, stride, win[t], stride, count, 1, t) == 0)
		mt_fail("ARMCI_PutS from an unmapped buffer returned 0");
	if (ARMCI_Get(win[t], ro, 64, t) == 0)
		mt_fail("ARMCI_Get into a read-only buffer returned 0");
	if (ARMCI_GetS(win[t], stride, ro, stride, count, 1, t) == 0)
		mt_fail("ARMCI_GetS into a read-only buffer returned 0");
	munmap(ro, (size_t)pg);
}

/* The window contents of rank r in iteration it, purpose what. */
static void window(uint64_t seed, int it, int r, int what, void *buf)
{
	struct at_rng g = at_rng(seed, it, r, what);

	at_fill(&g, buf, LEN);
}

/* Accumulate values (of type) of rank r in iteration it, purpose what. */
static void acc_window(uint64_t seed, int it, int r, int what, int type, void *buf)
{
	struct at_rng g = at_rng(seed, it, r, what);

	at_acc_values(&g, type, buf, LEN / at_type_size(type));
}

/* Segment k of a vector call: its offset in the window (in the local buffer: k * SEG). */
static long seg_remote(int k)
{
	return (long)(3 * k + 1) * SEG;
}

static void check_domains(void)
{
	int p;

	if (armci_domain_count(ARMCI_DOMAIN_SMP) != at_nproc ||
	    armci_domain_my_id(ARMCI_DOMAIN_SMP) != at_rank)
		mt_fail("armci_domain_count %d, _my_id %d: expected %d and %d",
			armci_domain_count(ARMCI_DOMAIN_SMP), armci_domain_my_id(ARMCI_DOMAIN_SMP),
			at_nproc, at_rank);
	for (p = 0; p < at_nproc; p++) {
		if (armci_domain_nprocs(ARMCI_DOMAIN_SMP, p) != 1 ||
		    armci_domain_id(ARMCI_DOMAIN_SMP, p) != p ||
		    armci_domain_glob_proc_id(ARMCI_DOMAIN_SMP, p, 0) != p ||
		    armci_domain_same_id(ARMCI_DOMAIN_SMP, p) != (p == at_rank))
			mt_fail("armci_domain_*: domain %d is not process %d alone", p, p);
	}
}

/* Poll ARMCI_Test until it says done (0); anything but 0 or 1 fails. */
static void test_until_done(armci_hdl_t *h, const char *what)
{
	long polls = 0;
	int rc;

	while ((rc = ARMCI_Test(h)) == 1)
		polls++;
	if (rc != 0)
		mt_fail("ARMCI_Test on %s returned %d after %ld polls", what, rc, polls);
}

static void check_msg(uint64_t seed, int it, char *buf, char *want)
{
	int root = it % at_nproc, n = at_nproc, x[3];
	double d[2];

	armci_msg_barrier();
	if (at_rank == root)
		window(seed, it, root, 20, buf);
	else
		memset(buf, 0, LEN);
	armci_msg_bcast(buf, LEN - it, root);
	window(seed, it, root, 20, want);
	memset(want + LEN - it, 0, (size_t)it);
	if (at_rank != root)
		at_compare(buf, want, LEN, "iteration %d: armci_msg_bcast of %d bytes from %d", it,
			   LEN - it, root);
	x[0] = at_rank + 1;
	x[1] = at_rank * it;
	x[2] = -at_rank;
	armci_msg_igop(x, 3, "+");
	if (x[0] != n * (n + 1) / 2 || x[1] != it * n * (n - 1) / 2 || x[2] != -n * (n - 1) / 2)
		mt_fail("iteration %d: armci_msg_igop +: %d %d %d", it, x[0], x[1], x[2]);
	d[0] = 0.5 * at_rank + it;
	d[1] = -at_rank;
	armci_msg_dgop(d, 2, "max");
	if (d[0] != 0.5 * (n - 1) + it || d[1] != 0)
		mt_fail("iteration %d: armci_msg_dgop max: %g %g", it, d[0], d[1]);
	armci_msg_barrier();
}

int main(int argc, char **argv)
{
	static const int fill = 10, src_of = 11, shape_of = 12, get_of = 13, vec_of = 14;
	void **wput, **wget, **wacc, *sp[NSEG], *dp[NSEG];
	char *lbuf, *src, *want, *seen;
	int it, iters, k, type, ss[1], ds[1];
	union at_scale scale;
	struct at_shape sh;
	armci_giov_t iov;
	armci_hdl_t h;
	struct at_rng g;
	uint64_t seed;

	at_mpi_init(&argc, &argv, "armci_calls");
	AT_CK(ARMCI_Init_args(&argc, &argv));
	iters = (int)mt_arg(argc, argv, 1, 10);
	seed = (uint64_t)mt_arg(argc, argv, 2, 1);
	check_domains();
	wput = at_malloc(LEN);
	wget = at_malloc(LEN);
	wacc = at_malloc(LEN);
	lbuf = ARMCI_Malloc_local(LEN);
	if (!lbuf)
		mt_fail("ARMCI_Malloc_local(%d) returned NULL", LEN);
	src = at_xmalloc(LEN);
	want = at_xmalloc(LEN);
	seen = at_xmalloc(LEN);
	if (getenv("ARMCI_TEST_BAD_LOCAL"))
		check_bad_local(wget);
	for (it = 0; it < iters; it++) {
		type = at_acc_types[it % 3];
		window(seed, it, at_rank, fill, want);
		at_local_write(wput[at_rank], want, LEN);
		window(seed, it, at_rank, get_of, want);
		at_local_write(wget[at_rank], want, LEN);
		acc_window(seed, it, at_rank, fill, type, want);
		at_local_write(wacc[at_rank], want, LEN);
		ARMCI_Barrier();

		/* NbPut from the local allocation, completed by AllFence alone. */
		window(seed, it, at_rank, src_of, lbuf);
		ARMCI_INIT_HANDLE(&h);
		AT_CK(ARMCI_NbPut(lbuf, wput[right()], LEN - it, right(), &h));
		ARMCI_AllFence();
		MPI_Barrier(MPI_COMM_WORLD);
		window(seed, it, left(), src_of, want);
		window(seed, it, at_rank, fill, seen);
		memcpy(want + LEN - it, seen + LEN - it, (size_t)it);
		at_local_read(seen, wput[at_rank], LEN);
		at_compare(seen, want, LEN, "iteration %d: NbPut of %d bytes, then AllFence", it,
			   LEN - it);
		AT_CK(ARMCI_Wait(&h));

		/* NbGet into the local allocation, polled with Test. */
		memset(lbuf, 0, LEN);
		ARMCI_INIT_HANDLE(&h);
		AT_CK(ARMCI_NbGet(wget[right()], lbuf, LEN, right(), &h));
		test_until_done(&h, "an NbGet");
		window(seed, it, right(), get_of, want);
		at_compare(lbuf, want, LEN, "iteration %d: NbGet completed by Test", it);

		/* NbAccS of 2 dimensions into the right neighbour's window. */
		g = at_rng(seed, it, at_rank, shape_of);
		at_random_shape(&g, 2, at_type_size(type), &sh);
		at_random_strides(&g, &sh, at_type_size(type), 32, ss);
		at_random_strides(&g, &sh, at_type_size(type), 32, ds);
		if (at_span(&sh, ss) > LEN || at_span(&sh, ds) > LEN)
			mt_fail("an accumulate spans more than %d bytes", LEN);
		acc_window(seed, it, at_rank, src_of, type, src);
		at_acc_scale(type, at_rank, it, &scale);
		ARMCI_INIT_HANDLE(&h);
		AT_CK(ARMCI_NbAccS(type, &scale, src, ss, wacc[right()], ds, sh.count, sh.levels,
				   right(), &h));
		AT_CK(ARMCI_Wait(&h));
		ARMCI_Barrier();
		g = at_rng(seed, it, left(), shape_of);
		at_random_shape(&g, 2, at_type_size(type), &sh);
		at_random_strides(&g, &sh, at_type_size(type), 32, ss);
		at_random_strides(&g, &sh, at_type_size(type), 32, ds);
		acc_window(seed, it, at_rank, fill, type, want);
		acc_window(seed, it, left(), src_of, type, src);
		at_acc_scale(type, left(), it, &scale);
		at_strided_apply(want, ds, src, ss, &sh, 1, type, &scale);
		at_local_read(seen, wacc[at_rank], LEN);
		at_compare(seen, want, LEN, "iteration %d: NbAccS of type %d", it, type);
		ARMCI_Barrier();

		/* NbPutV and NbGetV of NSEG scattered segments. */
		window(seed, it, at_rank, vec_of, src);
		for (k = 0; k < NSEG; k++) {
			sp[k] = src + (long)k * SEG;
			dp[k] = (char *)wput[right()] + seg_remote(k);
		}
		iov = (armci_giov_t){ sp, dp, SEG, NSEG };
		ARMCI_INIT_HANDLE(&h);
		AT_CK(ARMCI_NbPutV(&iov, 1, right(), &h));
		AT_CK(ARMCI_Wait(&h));
		for (k = 0; k < NSEG; k++) {
			sp[k] = (char *)wget[right()] + seg_remote(k);
			dp[k] = lbuf + (long)k * SEG;
		}
		ARMCI_INIT_HANDLE(&h);
		AT_CK(ARMCI_NbGetV(&iov, 1, right(), &h));
		AT_CK(ARMCI_Wait(&h));
		window(seed, it, right(), get_of, want);
		for (k = 0; k < NSEG; k++)
			at_compare(lbuf + (long)k * SEG, want + seg_remote(k), SEG,
				   "iteration %d: NbGetV segment %d", it, k);
		ARMCI_Barrier();
		window(seed, it, left(), src_of, want);
		window(seed, it, at_rank, fill, seen);
		memcpy(want + LEN - it, seen + LEN - it, (size_t)it);
		window(seed, it, left(), vec_of, src);
		for (k = 0; k < NSEG; k++)
			memcpy(want + seg_remote(k), src + (long)k * SEG, SEG);
		at_local_read(seen, wput[at_rank], LEN);
		at_compare(seen, want, LEN, "iteration %d: NbPutV of %d segments", it, NSEG);
		/* The accumulate window as NbAccS left it, before anyone's NbAccV. */
		at_local_read(want, wacc[at_rank], LEN);
		ARMCI_Barrier();

		/* NbAccV of the same segments into the accumulate window. */
		acc_window(seed, it, at_rank, vec_of, type, src);
		for (k = 0; k < NSEG; k++) {
			sp[k] = src + (long)k * SEG;
			dp[k] = (char *)wacc[right()] + seg_remote(k);
		}
		at_acc_scale(type, at_rank, it + 1, &scale);
		ARMCI_INIT_HANDLE(&h);
		AT_CK(ARMCI_NbAccV(type, &scale, &iov, 1, right(), &h));
		AT_CK(ARMCI_Wait(&h));
		ARMCI_Barrier();
		acc_window(seed, it, left(), vec_of, type, src);
		at_acc_scale(type, left(), it + 1, &scale);
		sh.levels = 1;
		sh.count[0] = SEG;
		sh.count[1] = NSEG;
		ss[0] = SEG;
		ds[0] = 3 * SEG;
		at_strided_apply(want + seg_remote(0), ds, src, ss, &sh, 1, type, &scale);
		at_local_read(seen, wacc[at_rank], LEN);
		at_compare(seen, want, LEN, "iteration %d: NbAccV of type %d", it, type);
		check_msg(seed, it, src, want);
	}
	ARMCI_Free_local(lbuf);
	at_free(wacc);
	at_free(wget);
	at_free(wput);
	free(seen);
	free(want);
	free(src);
	at_finish("%d iterations of NbPut/AllFence, NbGet/Test, NbAccS, NbPutV, NbGetV, NbAccV, "
		  "armci_msg_*, armci_domain_*", iters);
	return 0;
}
