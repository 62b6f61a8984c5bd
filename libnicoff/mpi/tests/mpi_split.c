// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_split [LOOPS] [BARRIERS]: communicators made by MPI_Comm_split (by
 * rank parity and by rank / 3), MPI_Comm_dup and MPI_Comm_create (the world
 * ranks r with r % 3 != 1) run BARRIERS (default 20) checked barriers each,
 * the disjoint sub-groups at the same time, then are freed (in creation
 * order or, every other loop, the reverse) and made again, LOOPS (default
 * 20) times: a group the library creates or destroys wrongly shows as a
 * barrier that lets a rank out early, a hang or an error.
 */
#include "mpi_test.h"

enum { SPLIT_PARITY, SPLIT_THIRD, DUP, CREATE, NCOMMS };

static const char *const comm_name[NCOMMS] = {
	[SPLIT_PARITY] = "split by rank % 2",
	[SPLIT_THIRD] = "split by rank / 3",
	[DUP] = "MPI_Comm_dup of world",
	[CREATE] = "MPI_Comm_create of ranks r % 3 != 1",
};

static MPI_Comm make_comm(int which)
{
	MPI_Group wg, g;
	MPI_Comm c;
	int n, i, m, *ranks;

	switch (which) {
	case SPLIT_PARITY:
		MT_CK(MPI_Comm_split(MPI_COMM_WORLD, mt_world_rank % 2, mt_world_rank, &c));
		break;
	case SPLIT_THIRD:
		/* Reversed keys: the new ranks are not the world's order. */
		MT_CK(MPI_Comm_split(MPI_COMM_WORLD, mt_world_rank / 3, -mt_world_rank, &c));
		break;
	case DUP:
		MT_CK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
		break;
	default:
		MT_CK(MPI_Comm_size(MPI_COMM_WORLD, &n));
		ranks = malloc(sizeof(int) * (size_t)n);
		if (!ranks)
			mt_fail("out of memory");
		for (i = 0, m = 0; i < n; i++)
			if (i % 3 != 1)
				ranks[m++] = i;
		MT_CK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
		MT_CK(MPI_Group_incl(wg, m, ranks, &g));
		MT_CK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
		MT_CK(MPI_Group_free(&g));
		MT_CK(MPI_Group_free(&wg));
		free(ranks);
		if ((c == MPI_COMM_NULL) != (mt_world_rank % 3 == 1))
			mt_fail("MPI_Comm_create: membership wrong (comm %s)",
				c == MPI_COMM_NULL ? "null" : "not null");
		break;
	}
	if (c != MPI_COMM_NULL)
		MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
	return c;
}

int main(int argc, char **argv)
{
	MPI_Comm comm[NCOMMS];
	int *members[NCOMMS], size[NCOMMS];
	struct mt_slots s;
	long loops, barriers, l, b;
	char what[96];
	int i, j;

	mt_init(&argc, &argv, "mpi_split");
	loops = mt_arg(argc, argv, 1, 20);
	barriers = mt_arg(argc, argv, 2, 20);
	mt_slots_open(&s, NCOMMS);
	for (l = 0; l < loops; l++) {
		for (i = 0; i < NCOMMS; i++) {
			comm[i] = make_comm(i);
			members[i] = NULL;
			if (comm[i] != MPI_COMM_NULL)
				members[i] = mt_members(comm[i], &size[i]);
		}
		/* The counters go on across loops: a new communicator's
		 * barrier k is still the k-th on its row.
		 */
		for (b = 1; b <= barriers; b++) {
			uint64_t k = (uint64_t)(l * barriers + b);

			for (i = 0; i < NCOMMS; i++) {
				if (comm[i] == MPI_COMM_NULL)
					continue;
				/* One member in turn is late. */
				if ((long)k % size[i] == (mt_world_rank * 7) % size[i])
					usleep(100);
				snprintf(what, sizeof(what), "%s, loop %ld", comm_name[i], l);
				mt_safe_barrier(&s, i, comm[i], members[i], size[i], k, what);
			}
		}
		for (j = 0; j < NCOMMS; j++) {
			i = l % 2 ? NCOMMS - 1 - j : j;
			if (comm[i] == MPI_COMM_NULL)
				continue;
			MT_CK(MPI_Comm_free(&comm[i]));
			free(members[i]);
		}
	}
	mt_slots_close(&s);
	if (mt_world_rank == 0)
		printf("mpi_split: %d communicators x %ld loops x %ld barriers: ok\n", NCOMMS,
		       loops, barriers);
	MPI_Finalize();
	return 0;
}
