// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_passthru [ROUNDS] [BIG]: calls a PMPI library must pass through to
 * MPI, and their results.  On MPI_COMM_WORLD ROUNDS checked MPI_Barrier
 * (no rank out before every rank in, on shared-memory counters) and
 * ROUNDS checked MPI_Ibarrier, then an MPI_Bcast of SMALL bytes and one of
 * BIG bytes (default 65536) from a root that changes, each compared byte
 * for byte.  With two ranks or more the same on an inter-communicator
 * between the lower and the upper half of the world: ROUNDS of each
 * barrier (every world rank in before any out) and one MPI_Bcast from the
 * lower group's first rank to the upper group.  Every rank makes every
 * call: tools/mpi-tests.sh counts them in libnicoff-mpi's report (with
 * NICOFF_MPI_BCAST_MAX below BIG, and with the offloads switched off).
 */
#include "mpi_test.h"

#define SMALL 256

static unsigned char pattern(int root, long bytes, long i)
{
	return (unsigned char)((i * 131 + root * 17 + bytes * 7) % 251 + 1);
}

/* Fill (at the root) or clear buf, broadcast, and compare (elsewhere). */
static void bcast(MPI_Comm comm, int root, int mine, int rank, long bytes, unsigned char *buf,
		  const char *what)
{
	long i;

	for (i = 0; i < bytes; i++)
		buf[i] = mine ? pattern(rank, bytes, i) : 0;
	MT_CK(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, comm));
	if (mine || root == MPI_PROC_NULL)
		return;
	for (i = 0; i < bytes; i++)
		if (buf[i] != pattern(rank, bytes, i))
			mt_fail("%s of %ld bytes: byte %ld is 0x%02x, expected 0x%02x", what, bytes,
				i, buf[i], pattern(rank, bytes, i));
}

/* ROUNDS checked barriers and ibarriers on comm, row set of the counters. */
static void barriers(struct mt_slots *s, int set, MPI_Comm comm, const int *members, int n,
		     long rounds, const char *what)
{
	MPI_Request req;
	long k;

	for (k = 1; k <= rounds; k++)
		mt_safe_barrier(s, set, comm, members, n, (uint64_t)k, what);
	for (k = rounds + 1; k <= 2 * rounds; k++) {
		mt_enter(s, set, (uint64_t)k);
		MT_CK(MPI_Ibarrier(comm, &req));
		MT_CK(MPI_Wait(&req, MPI_STATUS_IGNORE));
		mt_check(s, set, members, n, (uint64_t)k, what);
	}
}

int main(int argc, char **argv)
{
	MPI_Comm half, inter;
	struct mt_slots s;
	unsigned char *buf;
	long rounds, big;
	int *members, n, lower, root, hrank;

	mt_init(&argc, &argv, "mpi_passthru");
	rounds = mt_arg(argc, argv, 1, 10);
	big = mt_arg(argc, argv, 2, 65536);
	mt_slots_open(&s, 2);
	members = mt_members(MPI_COMM_WORLD, &n);
	buf = malloc((size_t)(big > SMALL ? big : SMALL));
	if (!buf)
		mt_fail("out of memory");

	barriers(&s, 0, MPI_COMM_WORLD, members, n, rounds, "MPI_COMM_WORLD");
	root = 1 % n;
	bcast(MPI_COMM_WORLD, root, mt_world_rank == root, root, SMALL, buf,
	      "MPI_Bcast on MPI_COMM_WORLD");
	bcast(MPI_COMM_WORLD, 0, mt_world_rank == 0, 0, big, buf, "MPI_Bcast on MPI_COMM_WORLD");

	if (n >= 2) {
		/* Lower half: world ranks below n / 2; each half's leader is its first. */
		lower = mt_world_rank < n / 2;
		MT_CK(MPI_Comm_split(MPI_COMM_WORLD, !lower, mt_world_rank, &half));
		MT_CK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, lower ? n / 2 : 0, 7, &inter));
		/* Every world rank takes part in an inter-communicator's barrier. */
		barriers(&s, 1, inter, members, n, rounds, "inter-communicator");
		MT_CK(MPI_Comm_rank(half, &hrank));
		root = lower ? (hrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
		bcast(inter, root, root == MPI_ROOT, 0, SMALL, buf,
		      "MPI_Bcast on an inter-communicator");
		MT_CK(MPI_Comm_free(&inter));
		MT_CK(MPI_Comm_free(&half));
	}
	free(buf);
	free(members);
	mt_slots_close(&s);
	if (mt_world_rank == 0)
		printf("mpi_passthru: %d ranks, %ld rounds, broadcasts of %d and %ld bytes: ok\n", n,
		       rounds, SMALL, big);
	MPI_Finalize();
	return 0;
}
