// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_kill [ITERATION]: every rank runs barriers on MPI_COMM_WORLD and on a
 * split communicator; the last rank kills itself with SIGKILL at barrier
 * ITERATION (default 50) while the others wait in it.  The launcher must
 * then fail the job; tools/mpi-tests.sh checks that, and that the module
 * holds no pinned page afterwards.  Exits 0 only if nobody died, which the
 * runner counts as a failure.
 */
#include <signal.h>

#include "mpi_test.h"

int main(int argc, char **argv)
{
	MPI_Comm half;
	long at, k;
	int size;

	mt_init(&argc, &argv, "mpi_kill");
	at = mt_arg(argc, argv, 1, 50);
	MT_CK(MPI_Comm_size(MPI_COMM_WORLD, &size));
	MT_CK(MPI_Comm_split(MPI_COMM_WORLD, mt_world_rank % 2, mt_world_rank, &half));
	for (k = 1; k <= 2 * at; k++) {
		if (k == at && mt_world_rank == size - 1) {
			fprintf(stderr, "mpi_kill: rank %d: SIGKILL at barrier %ld\n",
				mt_world_rank, k);
			raise(SIGKILL);
		}
		MT_CK(MPI_Barrier(k % 2 ? MPI_COMM_WORLD : half));
	}
	MT_CK(MPI_Comm_free(&half));
	printf("mpi_kill: rank %d: %ld barriers and no rank died\n", mt_world_rank, 2 * at);
	MPI_Finalize();
	return 0;
}
