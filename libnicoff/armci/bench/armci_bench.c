// SPDX-License-Identifier: GPL-2.0
/*
 * nicoff-armci-bench: ARMCI_PutS and ARMCI_GetS of square 2-D patches of
 * doubles (side x side, inside an array of ROWS x LD doubles on every rank),
 * in the manner of ARMCI's own strided benchmark: rank 0 moves the patch to
 * or from rank 1 while the others wait.  A put is timed with the ARMCI_Fence
 * that completes it at the target, a get alone (it returns with the data).
 * Built twice, over Debian's ARMCI-MPI and over libarmci-nicoff: the same
 * program measures each ARMCI.  Rank 0 appends two JSON records per case
 * and side to --out, one line each:
 *   {"suite":"armci","case":"puts"|"gets","method":M,"nodes":ranks,
 *    "side":s,"bytes":8*s*s,"metric":"latency_us"|"mb_per_s","value":v,
 *    "unit":"us"|"MB/s","runs":n}
 * Each get is checked against the target's contents once per side.
 */
#include <getopt.h>
#include <json-c/json.h>

#include "armci_test.h"

#define LD 1040
#define ROWS 1032

struct opts {
	const char *method;
	const char *out;
	char *sides;	/* comma-separated */
	long iters, warmup;
	double seconds;	/* bound on each measurement's time */
};

/* The value of the target's array at (row, col): checkable after a get. */
static double cell(long row, long col)
{
	return (double)(row * LD + col);
}

/* Time one case at one side: mean microseconds per operation, runs in *runs. */
static double measure(const struct opts *o, int put, void **arr, double *local, int side,
		      long *runs)
{
	int stride[1] = { LD * (int)sizeof(double) };
	int count[2] = { side * (int)sizeof(double), side };
	/* Off the array's corner, so that the patch is a true sub-array. */
	double *remote = (double *)arr[1] + 3 * LD + 5;
	double t0 = 0;
	long i, n = 0;

	for (i = 0; i < o->warmup + o->iters; i++) {
		if (i == o->warmup)
			t0 = MPI_Wtime();
		if (put) {
			AT_CK(ARMCI_PutS(local, stride, remote, stride, count, 1, 1));
			ARMCI_Fence(1);
		} else {
			AT_CK(ARMCI_GetS(remote, stride, local, stride, count, 1, 1));
		}
		if (i >= o->warmup)
			n++;
		if (i >= o->warmup && o->seconds > 0 && MPI_Wtime() - t0 > o->seconds)
			break;
	}
	*runs = n;
	return (MPI_Wtime() - t0) * 1e6 / (double)n;
}

static void record(const struct opts *o, FILE *f, const char *c, int side, const char *metric,
		   double v, const char *unit, long runs)
{
	struct json_object *r = json_object_new_object();

	json_object_object_add(r, "suite", json_object_new_string("armci"));
	json_object_object_add(r, "case", json_object_new_string(c));
	json_object_object_add(r, "method", json_object_new_string(o->method));
	json_object_object_add(r, "nodes", json_object_new_int(at_nproc));
	json_object_object_add(r, "side", json_object_new_int(side));
	json_object_object_add(r, "bytes", json_object_new_int64(8L * side * side));
	json_object_object_add(r, "metric", json_object_new_string(metric));
	json_object_object_add(r, "value", json_object_new_double(v));
	json_object_object_add(r, "unit", json_object_new_string(unit));
	json_object_object_add(r, "runs", json_object_new_int64(runs));
	fprintf(f, "%s\n", json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(r);
}

/* After a get of the patch: the local corner holds the target's cells. */
static void check_get(const double *local, int side)
{
	long i, j;

	for (i = 0; i < side; i++)
		for (j = 0; j < side; j++)
			if (local[i * LD + j] != cell(3 + i, 5 + j))
				mt_fail("GetS of side %d: (%ld, %ld) is %g, expected %g", side, i, j,
					local[i * LD + j], cell(3 + i, 5 + j));
}

/*
 * Before a put: the target's own values (so that the gets after it still
 * read cell()); before a get: zeros, which the get must replace.
 */
static void fill_local(double *local, int side, int put)
{
	long i, j;

	memset(local, 0, sizeof(double) * LD * ROWS);
	if (put)
		for (i = 0; i < side; i++)
			for (j = 0; j < side; j++)
				local[i * LD + j] = cell(3 + i, 5 + j);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: nicoff-armci-bench --method NAME --out FILE [--sides S,S,...]\n"
		   "       [--iters N] [--warmup N] [--seconds S]\n");
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "method", required_argument, NULL, 'm' }, { "out", required_argument, NULL, 'o' },
		{ "sides", required_argument, NULL, 's' },  { "iters", required_argument, NULL, 'i' },
		{ "warmup", required_argument, NULL, 'w' }, { "seconds", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },	    { NULL, 0, NULL, 0 }
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm': o->method = optarg; break;
		case 'o': o->out = optarg; break;
		case 's': o->sides = optarg; break;
		case 'i': o->iters = strtol(optarg, &end, 10); break;
		case 'w': o->warmup = strtol(optarg, &end, 10); break;
		case 't': o->seconds = strtod(optarg, &end); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
		if ((c == 'i' || c == 'w' || c == 't') && (*optarg == '\0' || *end != '\0'))
			mt_fail("--%s: not a number: %s", c == 'i' ? "iters" : c == 'w' ? "warmup" : "seconds",
				optarg);
	}
	if (!o->method || !o->out || optind != argc || o->iters < 1 || o->warmup < 0) {
		usage(stderr);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct opts o = { NULL, NULL, NULL, 1000, 10, 2.0 };
	char default_sides[] = "1,2,4,8,16,32,64,128,256,512,1024", *tok, *save = NULL;
	double *local, us;
	void **arr;
	long i, runs;
	FILE *f = NULL;
	int side, put;

	at_init(&argc, &argv, "nicoff-armci-bench");
	parse(argc, argv, &o);
	if (at_nproc < 2)
		mt_fail("needs 2 ranks or more");
	if (!o.sides)
		o.sides = default_sides;
	arr = at_malloc((long)LD * ROWS * (long)sizeof(double));
	local = at_xmalloc(sizeof(double) * LD * ROWS);
	ARMCI_Access_begin(arr[at_rank]);
	for (i = 0; i < (long)LD * ROWS; i++)
		((double *)arr[at_rank])[i] = cell(i / LD, i % LD);
	ARMCI_Access_end(arr[at_rank]);
	if (at_rank == 0) {
		f = fopen(o.out, "a");
		if (!f)
			mt_fail("%s: %m", o.out);
	}
	ARMCI_Barrier();
	for (tok = strtok_r(o.sides, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		side = atoi(tok);
		if (side < 1 || side > ROWS - 8 || side > LD - 8)
			mt_fail("--sides: %s: from 1 to %d", tok, ROWS - 8);
		for (put = 1; put >= 0; put--) {
			if (at_rank == 0) {
				fill_local(local, side, put);
				us = measure(&o, put, arr, local, side, &runs);
				if (!put)
					check_get(local, side);
				record(&o, f, put ? "puts" : "gets", side, "latency_us", us, "us",
				       runs);
				record(&o, f, put ? "puts" : "gets", side, "mb_per_s",
				       8.0 * side * side / us, "MB/s", runs);
				printf("%s %-10s side %4d  %10.2f us  %10.2f MB/s  (%ld runs)\n",
				       put ? "puts" : "gets", o.method, side, us,
				       8.0 * side * side / us, runs);
				fflush(stdout);
			}
			ARMCI_Barrier();
		}
	}
	if (f)
		fclose(f);
	free(local);
	at_free(arr);
	ARMCI_Finalize();
	MPI_Finalize();
	return 0;
}
