// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_barrier_safety [ITERATIONS]: no rank leaves MPI_Barrier k on
 * MPI_COMM_WORLD before every rank entered it.  Each iteration one rank, in
 * turn, enters late (a short sleep), so that a barrier which let the others
 * through early would be seen.
 */
#include "mpi_test.h"

int main(int argc, char **argv)
{
	struct mt_slots s;
	int *members, n;
	long iters, k;

	mt_init(&argc, &argv, "mpi_barrier_safety");
	iters = mt_arg(argc, argv, 1, 1000);
	mt_slots_open(&s, 1);
	members = mt_members(MPI_COMM_WORLD, &n);
	for (k = 1; k <= iters; k++) {
		if (k % n == mt_world_rank)
			usleep(200);
		mt_safe_barrier(&s, 0, MPI_COMM_WORLD, members, n, (uint64_t)k, "MPI_COMM_WORLD");
	}
	free(members);
	mt_slots_close(&s);
	if (mt_world_rank == 0)
		printf("mpi_barrier_safety: %d ranks, %ld barriers: ok\n", n, iters);
	MPI_Finalize();
	return 0;
}
