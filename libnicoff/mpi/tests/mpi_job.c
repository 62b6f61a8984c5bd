// SPDX-License-Identifier: GPL-2.0
/*
 * mpi_job: a native nicoff program under mpiexec without any NICOFF_
 * variable.  Each rank takes its job from nicoff_job_from_env(), which
 * under Hydra agrees with the other ranks through the launcher's PMI
 * key-value space, prints what it got on one line (the caller compares
 * the ranks' lines), then runs BARRIERS card barriers in the group of the
 * whole job (0: no card, for a host without the module).
 *
 *   mpi_job MODE BARRIERS
 *     native  no MPI call at all: PMI is this library's alone
 *     after   MPI_Init first, then the job (MPICH's PMI client used the
 *             socket before ours), MPI_Finalize last
 *     before  the job first, then MPI_Init
 * In the MPI modes MPI itself checks that every rank got the same job.
 */
#include <nicoff/nicoff.h>

#include <errno.h>
#include <stdarg.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank = -1;

static void __attribute__((format(printf, 1, 2), noreturn)) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mpi_job: rank %d: FAIL: ", rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	/* Hydra takes the other ranks down when one exits non-zero. */
	exit(1);
}

static nicoff_job *take_job(char *line, size_t len)
{
	nicoff_job *job = NULL;
	char msg[256];
	int err = nicoff_job_from_env(&job, msg, sizeof(msg));

	if (err)
		die("nicoff_job_from_env: %s (%d)", msg, err);
	rank = nicoff_job_rank(job);
	snprintf(line, len, "job %s size %d nics %d port_base %d", nicoff_job_id(job),
		 nicoff_job_size(job), nicoff_job_nics(job), nicoff_job_port_base(job));
	return job;
}

static void card_barriers(const nicoff_job *job, long n)
{
	nicoff_port *port = NULL;
	nicoff_group *group = NULL;
	int err;
	long i;

	err = nicoff_job_open_port(job, NULL, &port);
	if (err)
		die("opening port %d on card %d: %s", nicoff_job_port_of(job, rank),
		    nicoff_job_card_of(job, rank), strerror(-err));
	err = nicoff_group_create_job(port, job, NICOFF_BARRIER_DEFAULT, 0, &group);
	if (err)
		die("creating the job's group: %s", strerror(-err));
	for (i = 0; i < n; i++) {
		err = nicoff_group_barrier(group);
		if (err)
			die("card barrier %ld: %s", i, strerror(-err));
	}
	err = nicoff_group_destroy(group);
	if (err)
		die("destroying the group: %s", strerror(-err));
	nicoff_port_destroy(port);
}

int main(int argc, char **argv)
{
	char line[512], *all;
	nicoff_job *job = NULL;
	long barriers;
	int size, i, mpi;

	if (argc != 3 || (strcmp(argv[1], "native") && strcmp(argv[1], "after") &&
			  strcmp(argv[1], "before")))
		die("usage: mpi_job native|after|before BARRIERS");
	barriers = strtol(argv[2], NULL, 10);
	mpi = strcmp(argv[1], "native") != 0;
	if (!strcmp(argv[1], "before"))
		job = take_job(line, sizeof(line));
	if (mpi && MPI_Init(&argc, &argv) != MPI_SUCCESS)
		die("MPI_Init failed");
	if (!job)
		job = take_job(line, sizeof(line));
	printf("mpi_job: rank %d: %s card %d port %d\n", rank, line,
	       nicoff_job_card_of(job, rank), nicoff_job_port_of(job, rank));
	fflush(stdout);
	if (mpi) {
		MPI_Comm_size(MPI_COMM_WORLD, &size);
		all = calloc((size_t)size, sizeof(line));
		if (!all)
			die("out of memory");
		MPI_Allgather(line, sizeof(line), MPI_CHAR, all, sizeof(line), MPI_CHAR,
			      MPI_COMM_WORLD);
		for (i = 0; i < size; i++)
			if (strcmp(all + (size_t)i * sizeof(line), line))
				die("rank %d has '%s', this rank '%s'", i,
				    all + (size_t)i * sizeof(line), line);
		free(all);
	}
	if (barriers > 0)
		card_barriers(job, barriers);
	nicoff_job_free(job);
	if (mpi)
		MPI_Finalize();
	printf("mpi_job: rank %d: ok, %ld card barriers\n", rank, barriers);
	return 0;
}
