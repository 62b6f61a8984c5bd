// SPDX-License-Identifier: GPL-2.0
/*
 * ga_matmul [N [SEED]]: a Global Arrays program on ARMCI.  Three distributed
 * N x N arrays of doubles A, B and C: every rank puts (NGA_Put) a band of
 * rows of A and B whose edges do not follow GA's distribution, GA_Sync,
 * every rank accumulates (NGA_Acc) its own matrix into the same patch of B,
 * GA_Sync, every rank reads back (NGA_Get) a random patch of B, then
 * C = A B by GA_Dgemm, and every rank reads all of C.  Each step is compared
 * with a serial reference computed by every rank; the values are small
 * integers, so every sum is exact and the checksum printed is the same in
 * any order of arithmetic and on any ARMCI.
 * Prints "ga_matmul: P ranks: N=N checksum C seconds S" on rank 0 (S: from
 * the arrays' creation to the last check).
 */
#include <ga.h>
#include <macdecls.h>

#include "armci_test.h"

static long n;
static long seed;

static double a_of(long i, long j)
{
	return (double)((i * 7 + j * 13 + seed) % 11 - 5);
}

static double b_of(long i, long j)
{
	return (double)((i * 3 + j * 5 + seed) % 9 - 4);
}

/* Rank r's addend of B's accumulated patch at (i, j) of the patch. */
static double d_of(int r, long i, long j)
{
	return (double)((i + 2 * j + r) % 3 - 1);
}

/* A patch [lo, hi] of ga from the reference ref (n x n, row-major). */
static void check_patch(int ga, const double *ref, int lo[2], int hi[2], const char *what)
{
	long rows = hi[0] - lo[0] + 1, cols = hi[1] - lo[1] + 1, i, j;
	double *got = at_xmalloc(sizeof(double) * (size_t)(rows * cols));
	int ld = (int)cols;

	NGA_Get(ga, lo, hi, got, &ld);
	for (i = 0; i < rows; i++)
		for (j = 0; j < cols; j++)
			if (got[i * cols + j] != ref[(lo[0] + i) * n + lo[1] + j])
				mt_fail("%s: (%ld, %ld) is %g, expected %g", what, lo[0] + i,
					lo[1] + j, got[i * cols + j], ref[(lo[0] + i) * n + lo[1] + j]);
	free(got);
}

/* Rows [lo, hi] of a matrix put by this rank: ranks split the rows, shifted by one. */
static void my_band(int *lo, int *hi)
{
	long per = (n + at_nproc - 1) / at_nproc, first = at_rank * per + 1;

	*lo = (int)(first < n ? first : n);
	*hi = (int)(first + per < n ? first + per : n) - 1;
	if (at_rank == at_nproc - 1)
		*hi = (int)n - 1;
	if (at_rank == 0)
		*lo = 0;
}

static void put_band(int ga, double (*f)(long, long))
{
	int lo[2], hi[2], ld = (int)n;
	double *buf;
	long i, j;

	my_band(&lo[0], &hi[0]);
	if (hi[0] < lo[0])
		return;
	lo[1] = 0;
	hi[1] = (int)n - 1;
	buf = at_xmalloc(sizeof(double) * (size_t)((hi[0] - lo[0] + 1) * n));
	for (i = lo[0]; i <= hi[0]; i++)
		for (j = 0; j < n; j++)
			buf[(i - lo[0]) * n + j] = f(i, j);
	NGA_Put(ga, lo, hi, buf, &ld);
	free(buf);
}

int main(int argc, char **argv)
{
	int dims[2], chunk[2] = { -1, -1 }, ga_a, ga_b, ga_c, lo[2], hi[2], ld, r;
	double *a, *b, *c, *d, one = 1.0, t0, sum = 0, want_sum = 0;
	long i, j, k, half;
	struct at_rng g;

	at_mpi_init(&argc, &argv, "ga_matmul");
	n = mt_arg(argc, argv, 1, 96);
	seed = mt_arg(argc, argv, 2, 1);
	GA_Initialize();
	/* GA_Dgemm takes its work space from MA: room for a few n x n blocks. */
	if (!MA_init(C_DBL, (int)(4 * n * n + 100000), (int)(4 * n * n + 100000)))
		mt_fail("MA_init failed");
	a = at_xmalloc(sizeof(double) * (size_t)(n * n));
	b = at_xmalloc(sizeof(double) * (size_t)(n * n));
	c = at_xmalloc(sizeof(double) * (size_t)(n * n));
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++) {
			a[i * n + j] = a_of(i, j);
			b[i * n + j] = b_of(i, j);
		}

	t0 = MPI_Wtime();
	dims[0] = dims[1] = (int)n;
	ga_a = NGA_Create(C_DBL, 2, dims, "A", chunk);
	ga_b = NGA_Create(C_DBL, 2, dims, "B", chunk);
	ga_c = NGA_Create(C_DBL, 2, dims, "C", chunk);
	if (!ga_a || !ga_b || !ga_c)
		mt_fail("NGA_Create of %ld x %ld failed", n, n);
	GA_Zero(ga_c);
	put_band(ga_a, a_of);
	put_band(ga_b, b_of);
	GA_Sync();
	lo[0] = lo[1] = 0;
	hi[0] = hi[1] = (int)n - 1;
	check_patch(ga_a, a, lo, hi, "A after NGA_Put");

	/* Every rank adds its matrix to the patch rows [n/4, 3n/4), columns [1, n/2]. */
	half = n / 2;
	d = at_xmalloc(sizeof(double) * (size_t)(half * half));
	for (i = 0; i < half; i++)
		for (j = 0; j < half; j++)
			d[i * half + j] = d_of(at_rank, i, j);
	lo[0] = (int)(n / 4);
	lo[1] = 1;
	hi[0] = lo[0] + (int)half - 1;
	hi[1] = (int)half;
	ld = (int)half;
	NGA_Acc(ga_b, lo, hi, d, &ld, &one);
	GA_Sync();
	for (r = 0; r < at_nproc; r++)
		for (i = 0; i < half; i++)
			for (j = 0; j < half; j++)
				b[(lo[0] + i) * n + lo[1] + j] += d_of(r, i, j);
	free(d);
	g = at_rng((uint64_t)seed, 1, at_rank, 0);
	lo[0] = (int)at_range(&g, 0, n - 1);
	lo[1] = (int)at_range(&g, 0, n - 1);
	hi[0] = (int)at_range(&g, lo[0], n - 1);
	hi[1] = (int)at_range(&g, lo[1], n - 1);
	check_patch(ga_b, b, lo, hi, "a patch of B after NGA_Acc");

	GA_Dgemm('N', 'N', (int)n, (int)n, (int)n, 1.0, ga_a, ga_b, 0.0, ga_c);
	GA_Sync();
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++) {
			double s = 0;

			for (k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
			want_sum += s * (double)((i * n + j) % 7 + 1);
		}
	lo[0] = lo[1] = 0;
	hi[0] = hi[1] = (int)n - 1;
	check_patch(ga_c, c, lo, hi, "C = A B by GA_Dgemm");
	/* The checksum of what GA holds (equal to the reference's, checked above). */
	ld = (int)n;
	NGA_Get(ga_c, lo, hi, c, &ld);
	for (i = 0; i < n * n; i++)
		sum += c[i] * (double)(i % 7 + 1);
	if (sum != want_sum)
		mt_fail("checksum %.17g, expected %.17g", sum, want_sum);
	t0 = MPI_Wtime() - t0;
	GA_Sync();
	if (at_rank == 0)
		printf("ga_matmul: %d ranks: N=%ld checksum %.17g seconds %.6f\n", at_nproc, n, sum,
		       t0);
	GA_Destroy(ga_c);
	GA_Destroy(ga_b);
	GA_Destroy(ga_a);
	free(c);
	free(b);
	free(a);
	GA_Terminate();
	MPI_Finalize();
	return 0;
}
