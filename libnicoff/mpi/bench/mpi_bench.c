// SPDX-License-Identifier: GPL-2.0
/*
 * nicoff-mpi-bench: barrier and broadcast latency of an MPI job, in the
 * manner of the OSU micro-benchmarks' osu_barrier and osu_bcast (which
 * Debian does not package): every rank runs warm-up iterations, then times
 * iters back-to-back operations; the latency of one operation is the
 * average over ranks of each rank's mean.
 *
 * The same program measures every method of the `mpi` benchmark: run plain
 * it times the MPI library's own collectives; under LD_PRELOAD of
 * libnicoff-mpi it times them through the card; with --native it times
 * nicoff's own C API (a card group of all ranks, MPI only to start and to
 * synchronise).  --paired NAME times both in the same processes, in
 * alternating blocks, and records the native API's figure as method NAME:
 * separate runs of two methods differ by the host's scheduling of the
 * moment (with more ranks than CPUs, by 30% from one run to the next),
 * which hides the few percent the interposition layer itself costs.
 * Rank 0 appends one JSON record per line to --out:
 *   {"suite":"mpi","case":"barrier"|"bcast","method":M,"nodes":ranks,
 *    "bytes":n|null,"metric":"latency_us","value":v,"unit":"us","runs":iters}
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nicoff/nicoff.h>

struct opts {
	const char *test;	/* "barrier" or "bcast" */
	const char *method;
	const char *config;	/* the settings the method ran with, for the record */
	const char *out;
	long iters, warmup;
	double seconds;		/* bound on each measurement's time; 0: none */
	const char *sizes;	/* comma-separated byte counts */
	int native;
	const char *paired;	/* the native API's method name in a paired run */
};

/* Which API an operation goes through: MPI's (interposed or not) or nicoff's. */
enum api { API_MPI, API_NATIVE, API_COUNT };

struct native {
	nicoff_job *job;
	nicoff_port *port;
	nicoff_group *group;
};

static int rank, nranks;

static void die(const char *what, int err)
{
	fprintf(stderr, "nicoff-mpi-bench: rank %d: %s: %s\n", rank, what, strerror(err));
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

static void native_open(struct native *n)
{
	char msg[256];
	int err = nicoff_job_from_env(&n->job, msg, sizeof(msg));

	if (err)
		die(msg, -err);
	err = nicoff_job_open_port(n->job, NULL, &n->port);
	if (err)
		die("opening this rank's port", -err);
	err = nicoff_group_create_job(n->port, n->job, NICOFF_BARRIER_DEFAULT, 0, &n->group);
	if (err)
		die("creating the card group", -err);
}

static void native_close(struct native *n)
{
	/* Every member done before any destroys (broadcast.md). */
	nicoff_group_barrier(n->group);
	nicoff_group_destroy(n->group);
	nicoff_port_destroy(n->port);
	nicoff_job_free(n->job);
}

static void one_op(const struct opts *o, enum api api, struct native *n, char *buf, size_t len)
{
	int err;

	if (!strcmp(o->test, "barrier")) {
		if (api == API_NATIVE) {
			err = nicoff_group_barrier(n->group);
			if (err)
				die("nicoff_group_barrier", -err);
		} else {
			MPI_Barrier(MPI_COMM_WORLD);
		}
	} else if (api == API_NATIVE) {
		err = nicoff_group_broadcast_buf(n->group, buf, len, 0);
		if (err)
			die("nicoff_group_broadcast_buf", -err);
	} else {
		MPI_Bcast(buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
	}
}

/* The APIs a run times, in the order of its first block. */
static int apis_of(const struct opts *o, enum api apis[API_COUNT])
{
	if (o->paired) {
		apis[0] = API_MPI;
		apis[1] = API_NATIVE;
		return 2;
	}
	apis[0] = o->native ? API_NATIVE : API_MPI;
	return 1;
}

/*
 * The mean latency in microseconds of one operation of each API the run
 * times (us[i] for apis_of()'s i), averaged over ranks: o->iters
 * operations each, or fewer when --seconds bounds the run (a probe of a
 * few operations estimates the cost; rank 0's estimate decides for all).
 * A paired run splits them into blocks that alternate between the APIs,
 * each block's first API taking turns, so that both see the same moments.
 */
static void measure(const struct opts *o, struct native *n, char *buf, size_t len, long *runs,
		    double us[API_COUNT])
{
	enum api apis[API_COUNT];
	const int napis = apis_of(o, apis);
	const long blocks = napis > 1 ? 16 : 1;
	double t0, spent[API_COUNT] = {}, sum[API_COUNT] = {};
	long iters = o->iters, each_block;

	for (int a = 0; a < napis; a++)
		for (long i = 0; i < o->warmup; i++)
			one_op(o, apis[a], n, buf, len);
	if (o->seconds > 0) {
		const long probe = 8;
		double each;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int a = 0; a < napis; a++)
			for (long i = 0; i < probe; i++)
				one_op(o, apis[a], n, buf, len);
		each = (MPI_Wtime() - t0) / probe;
		if (each * iters > o->seconds)
			iters = (long)(o->seconds / each);
		if (iters < probe)
			iters = probe;
		MPI_Bcast(&iters, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	}
	each_block = (iters + blocks - 1) / blocks;
	MPI_Barrier(MPI_COMM_WORLD);
	for (long b = 0; b < blocks; b++) {
		for (int k = 0; k < napis; k++) {
			const int a = (int)((b + k) % napis);

			t0 = MPI_Wtime();
			for (long i = 0; i < each_block; i++)
				one_op(o, apis[a], n, buf, len);
			spent[a] += MPI_Wtime() - t0;
		}
	}
	MPI_Reduce(spent, sum, napis, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	*runs = each_block * blocks;
	for (int a = 0; a < napis; a++)
		us[a] = sum[a] * 1e6 / (double)*runs / nranks;
}

static void record(const struct opts *o, FILE *f, const char *method, long bytes, double us,
		   long runs)
{
	struct json_object *r = json_object_new_object();

	json_object_object_add(r, "suite", json_object_new_string("mpi"));
	json_object_object_add(r, "case", json_object_new_string(o->test));
	json_object_object_add(r, "method", json_object_new_string(method));
	json_object_object_add(r, "nodes", json_object_new_int(nranks));
	json_object_object_add(r, "bytes", bytes >= 0 ? json_object_new_int64(bytes) : NULL);
	json_object_object_add(r, "metric", json_object_new_string("latency_us"));
	json_object_object_add(r, "value", json_object_new_double(us));
	json_object_object_add(r, "unit", json_object_new_string("us"));
	json_object_object_add(r, "runs", json_object_new_int64(runs));
	if (o->config)
		json_object_object_add(r, "config", json_object_new_string(o->config));
	fprintf(f, "%s\n", json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
	json_object_put(r);
	if (f != stdout)
		printf("%-8s %-20s ranks %2d bytes %8ld  %10.2f us\n", o->test, method, nranks,
		       bytes, us);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: nicoff-mpi-bench --case barrier|bcast --method NAME [--config TEXT]\n"
		"         [--native | --paired NATIVE_METHOD]\n"
		"         [--iters N] [--warmup N] [--seconds S] [--sizes B,B,...] [--out FILE]\n");
}

static long number(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 0 || end == s) {
		fprintf(stderr, "nicoff-mpi-bench: %s '%s': not a number\n", what, s);
		exit(2);
	}
	return v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{ "case", required_argument, NULL, 'c' },
		{ "method", required_argument, NULL, 'm' },
		{ "config", required_argument, NULL, 'C' },
		{ "native", no_argument, NULL, 'n' },
		{ "paired", required_argument, NULL, 'p' },
		{ "iters", required_argument, NULL, 'i' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "sizes", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 'S' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->test = optarg;
			break;
		case 'm':
			o->method = optarg;
			break;
		case 'C':
			o->config = optarg;
			break;
		case 'n':
			o->native = 1;
			break;
		case 'p':
			o->paired = optarg;
			break;
		case 'i':
			o->iters = number(optarg, "--iters");
			break;
		case 'w':
			o->warmup = number(optarg, "--warmup");
			break;
		case 's':
			o->sizes = optarg;
			break;
		case 'S':
			o->seconds = (double)number(optarg, "--seconds");
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (!o->test || !o->method || o->iters < 1 || (o->native && o->paired) ||
	    (strcmp(o->test, "barrier") && strcmp(o->test, "bcast"))) {
		usage(stderr);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct opts o = { .iters = 1000, .warmup = 100, .sizes = "8,1024,16384,65536,1048576" };
	struct native n = {};
	FILE *f = stdout;
	char *buf = NULL, *list;
	int bcast;

	parse(argc, argv, &o);
	bcast = !strcmp(o.test, "bcast");
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (o.native || o.paired)
		native_open(&n);
	if (rank == 0 && o.out) {
		f = fopen(o.out, "a");
		if (!f)
			die(o.out, errno);
	}
	/* A barrier is one measurement of no size; strtok needs its own copy. */
	list = strdup(bcast ? o.sizes : "0");
	if (!list)
		die("--sizes", ENOMEM);
	for (char *s = strtok(list, ","); s; s = strtok(NULL, ",")) {
		long len = number(s, "--sizes"), runs;
		double us[API_COUNT];

		buf = realloc(buf, len ? len : 1);
		if (!buf)
			die("buffer", ENOMEM);
		memset(buf, rank == 0 ? 0x5a : 0, len);
		measure(&o, &n, buf, len, &runs, us);
		for (long i = 0; i < len; i++)
			if (buf[i] != 0x5a)
				die("broadcast data differs from the root's", EIO);
		if (rank == 0) {
			record(&o, f, o.method, bcast ? len : -1, us[0], runs);
			if (o.paired)
				record(&o, f, o.paired, bcast ? len : -1, us[1], runs);
		}
	}
	free(list);
	if (o.native || o.paired)
		native_close(&n);
	if (f != stdout)
		fclose(f);
	free(buf);
	MPI_Finalize();
	return 0;
}
