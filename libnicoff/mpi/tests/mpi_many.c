// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_many [COUNT]: COUNT (default 5000) back-to-back MPI_Barrier calls on
 * MPI_COMM_WORLD, then COUNT / 10 MPI_Ibarrier completed alternately by
 * MPI_Wait and by polling MPI_Test, each checked for safety (no rank out
 * before every rank in) on counters in shared memory.
 */
#include "mpi_test.h"

int main(int argc, char **argv)
{
	struct mt_slots s;
	MPI_Request req;
	long count, k;
	int *members, n, done;
	double t0, t1;

	mt_init(&argc, &argv, "mpi_many");
	count = mt_arg(argc, argv, 1, 5000);
	mt_slots_open(&s, 1);
	members = mt_members(MPI_COMM_WORLD, &n);

	/* Only the last one is checked: back to back is the point. */
	t0 = MPI_Wtime();
	for (k = 1; k <= count; k++)
		MT_CK(MPI_Barrier(MPI_COMM_WORLD));
	t1 = MPI_Wtime();
	mt_safe_barrier(&s, 0, MPI_COMM_WORLD, members, n, 1, "MPI_Barrier after the run");

	for (k = 2; k <= count / 10 + 1; k++) {
		mt_enter(&s, 0, (uint64_t)k);
		MT_CK(MPI_Ibarrier(MPI_COMM_WORLD, &req));
		if (k % 2) {
			MT_CK(MPI_Wait(&req, MPI_STATUS_IGNORE));
		} else {
			for (done = 0; !done;)
				MT_CK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
			if (req != MPI_REQUEST_NULL)
				mt_fail("MPI_Ibarrier %ld: MPI_Test completed, request not freed",
					k);
		}
		mt_check(&s, 0, members, n, (uint64_t)k, k % 2 ? "MPI_Ibarrier+MPI_Wait"
							       : "MPI_Ibarrier+MPI_Test");
	}
	free(members);
	mt_slots_close(&s);
	if (mt_world_rank == 0)
		printf("mpi_many: %d ranks, %ld barriers (%.1f us each), %ld ibarriers: ok\n", n,
		       count, (t1 - t0) * 1e6 / (double)count, count / 10);
	MPI_Finalize();
	return 0;
}
