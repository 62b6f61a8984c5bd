// SPDX-License-Identifier: GPL-2.0
/*
 * nicoff-sim: run N card firmware instances in one process on a LogGP
 * fabric with a workload, and report virtual-time results and the
 * simulator's own speed (events per second) and memory.  SIMULATOR.md
 * describes the model and the workloads.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "nsim.h"

enum {
	OPT_L = 256, OPT_O, OPT_GAP, OPT_BYTE, OPT_SIZE, OPT_ITERS, OPT_WARMUP, OPT_FANOUT,
	OPT_DROP, OPT_DUP, OPT_CORRUPT, OPT_REORDER, OPT_DELAY, OPT_DELAY_NS, OPT_SEED,
	OPT_JSON, OPT_VERIFY, OPT_LIMIT, OPT_RTO, OPT_ACK_DELAY, OPT_WINDOW, OPT_MTU, OPT_CHANNELS,
	OPT_QUIET,
	OPT_LIST, OPT_HELP, OPT_VERSION,
};

static const struct option nsim_opts[] = {
	{ "nodes", required_argument, NULL, 'n' },
	{ "workload", required_argument, NULL, 'w' },
	{ "L", required_argument, NULL, OPT_L },
	{ "o", required_argument, NULL, OPT_O },
	{ "g", required_argument, NULL, OPT_GAP },
	{ "G", required_argument, NULL, OPT_BYTE },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "iters", required_argument, NULL, OPT_ITERS },
	{ "warmup", required_argument, NULL, OPT_WARMUP },
	{ "fanout", required_argument, NULL, OPT_FANOUT },
	{ "drop", required_argument, NULL, OPT_DROP },
	{ "dup", required_argument, NULL, OPT_DUP },
	{ "corrupt", required_argument, NULL, OPT_CORRUPT },
	{ "reorder", required_argument, NULL, OPT_REORDER },
	{ "delay", required_argument, NULL, OPT_DELAY },
	{ "delay-ns", required_argument, NULL, OPT_DELAY_NS },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "json", required_argument, NULL, OPT_JSON },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "limit-us", required_argument, NULL, OPT_LIMIT },
	{ "rto-ns", required_argument, NULL, OPT_RTO },
	{ "ack-delay-ns", required_argument, NULL, OPT_ACK_DELAY },
	{ "window", required_argument, NULL, OPT_WINDOW },
	{ "mtu", required_argument, NULL, OPT_MTU },
	{ "channels", required_argument, NULL, OPT_CHANNELS },
	{ "quiet", no_argument, NULL, OPT_QUIET },
	{ "list", no_argument, NULL, OPT_LIST },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

static void nsim_usage(FILE *f)
{
	struct sim_cfg d;

	sim_cfg_loggp(&d, 2);
	fprintf(f,
		"usage: nicoff-sim --nodes N --workload W [--L ns] [--o ns] [--g ns]\n"
		"         [--G ns-per-byte] [--size BYTES] [--iters K] [--warmup K]\n"
		"         [--fanout F] [--drop PPM] [--dup PPM] [--corrupt PPM]\n"
		"         [--reorder PPM] [--delay PPM] [--delay-ns NS] [--seed S]\n"
		"         [--rto-ns NS] [--ack-delay-ns NS] [--window PKTS] [--mtu BYTES]\n"
		"         [--channels 2-64] [--limit-us US] [--verify] [--json FILE] [--quiet] [--list]\n"
		"       nicoff-sim --help | --version\n"
		"defaults: --nodes 4096 --workload ring --size 8 --iters 10 --warmup 1\n"
		"          --fanout 4 --L %llu --o %u --g %u --G %.3f --rto-ns %llu\n"
		"          --ack-delay-ns %u --window %u --mtu %u --channels %u --seed 1\n",
		(unsigned long long)d.latency_ns, d.overhead_ns, d.gap_ns, d.byte_ps / 1000.0,
		(unsigned long long)d.fw.rto_ns, d.fw.ack_delay_ns, d.fw.window, d.fw.mtu,
		d.fw.bcast_channels);
}

static bool nsim_num(const char *arg, const char *name, u64 max, u64 *out)
{
	char *end;
	unsigned long long v;

	v = strtoull(arg, &end, 0);
	if (!*arg || *end || *arg == '-' || v > max) {
		fprintf(stderr, "nicoff-sim: --%s: not a number up to %llu: %s\n", name,
			(unsigned long long)max, arg);
		return false;
	}
	*out = v;
	return true;
}

static bool nsim_u32(const char *arg, const char *name, u32 max, u32 *out)
{
	u64 v;

	if (!nsim_num(arg, name, max, &v))
		return false;
	*out = (u32)v;
	return true;
}

/* G in nanoseconds per byte, kept in picoseconds. */
static bool nsim_byte_ps(const char *arg, u32 *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (!*arg || *end || !(v >= 0) || v > 4000000) {
		fprintf(stderr, "nicoff-sim: --G: not a time per byte in ns: %s\n", arg);
		return false;
	}
	*out = (u32)(v * 1000 + 0.5);
	return true;
}

#define NSIM_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct nsim_num_opt {
	int opt;
	u64 max;
	u32 *u32;		/* one of the two */
	u64 *u64;
};

static const struct nsim_num_opt *nsim_num_find(const struct nsim_num_opt *t, size_t n, int opt)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].opt == opt)
			return &t[i];
	return NULL;
}

/* Parse @arg into @num's field; the option's name from nsim_opts for errors. */
static bool nsim_num_set(const struct nsim_num_opt *num, const char *arg)
{
	const struct option *lo = nsim_opts;

	while (lo->name && lo->val != num->opt)
		lo++;
	if (num->u32)
		return nsim_u32(arg, lo->name, (u32)num->max, num->u32);
	return nsim_num(arg, lo->name, num->max, num->u64);
}

static int nsim_parse(int argc, char **argv, struct nsim_params *p, const char **json,
		      bool *quiet)
{
	struct sim_cfg *c = &p->cfg;
	struct fw_fault_cfg *f = &c->faults;
	/* The plain numbers: option, largest value, field (u32 or u64). */
	const struct nsim_num_opt nums[] = {
		{ 'n', 0xfffffffeu, .u32 = &p->nodes },
		{ OPT_L, 1000000000000ull, .u64 = &c->latency_ns },
		{ OPT_O, 1000000000u, .u32 = &c->overhead_ns },
		{ OPT_GAP, 1000000000u, .u32 = &c->gap_ns },
		{ OPT_SIZE, 1ull << 30, .u64 = &p->size },
		{ OPT_ITERS, 1u << 30, .u32 = &p->iters },
		{ OPT_WARMUP, 1u << 30, .u32 = &p->warmup },
		{ OPT_FANOUT, 64, .u32 = &p->fanout },
		{ OPT_DROP, FW_FAULT_PPM, .u32 = &f->drop_ppm },
		{ OPT_DUP, FW_FAULT_PPM, .u32 = &f->dup_ppm },
		{ OPT_CORRUPT, FW_FAULT_PPM, .u32 = &f->corrupt_ppm },
		{ OPT_REORDER, FW_FAULT_PPM, .u32 = &f->reorder_ppm },
		{ OPT_DELAY, FW_FAULT_PPM, .u32 = &f->delay_ppm },
		{ OPT_DELAY_NS, 0xffffffffu, .u32 = &f->delay_ns },
		{ OPT_SEED, ~0ull, .u64 = &c->seed },
		{ OPT_ACK_DELAY, 0xffffffffu, .u32 = &c->fw.ack_delay_ns },
		{ OPT_WINDOW, 65536, .u32 = &c->fw.window },
		{ OPT_MTU, 1u << 24, .u32 = &c->fw.mtu },
		{ OPT_CHANNELS, NICOFF_BCAST_MAX_CHANNELS, .u32 = &c->fw.bcast_channels },
	};
	u64 v;
	int o;

	while ((o = getopt_long(argc, argv, "n:w:hV", nsim_opts, NULL)) != -1) {
		const struct nsim_num_opt *num = nsim_num_find(nums, NSIM_ARRAY_SIZE(nums), o);
		bool ok = true;

		if (num) {
			if (!nsim_num_set(num, optarg))
				return -EINVAL;
			continue;
		}
		switch (o) {
		case 'w':
			p->workload = optarg;
			break;
		case OPT_BYTE:
			ok = nsim_byte_ps(optarg, &c->byte_ps);
			break;
		case OPT_JSON:
			*json = optarg;
			break;
		case OPT_VERIFY:
			p->verify = true;
			break;
		case OPT_LIMIT:
			ok = nsim_num(optarg, "limit-us", ~0ull / 1000, &v);
			p->limit_ns = v * 1000;
			break;
		case OPT_RTO:
			ok = nsim_num(optarg, "rto-ns", 1ull << 40, &c->fw.rto_ns);
			if (ok && c->fw.rto_max_ns < c->fw.rto_ns)
				c->fw.rto_max_ns = c->fw.rto_ns;
			break;
		case OPT_QUIET:
			*quiet = true;
			break;
		case OPT_LIST:
			for (o = 0; nsim_workloads[o]; o++)
				printf("%-16s %s\n", nsim_workloads[o]->name,
				       nsim_workloads[o]->about);
			exit(0);
		case 'h':
		case OPT_HELP:
			nsim_usage(stdout);
			exit(0);
		case 'V':
		case OPT_VERSION:
			printf("nicoff-sim %s\n", NICOFF_VERSION_STRING);
			exit(0);
		default:
			ok = false;
			break;
		}
		if (!ok)
			return -EINVAL;
	}
	if (optind < argc) {
		fprintf(stderr, "nicoff-sim: unexpected argument %s\n", argv[optind]);
		return -EINVAL;
	}
	if (!nsim_find(p->workload)) {
		fprintf(stderr, "nicoff-sim: no workload %s (--list)\n", p->workload);
		return -EINVAL;
	}
	return 0;
}

/*
 * One record of the bench format (tools/results.py), made with json-c: the
 * fields in the bench's order, a value that is not finite as null; one
 * record a line so that runs can be compared with diff.
 */
static void nsim_json_record(FILE *f, const struct nsim *ns, const char *metric, double value,
			     const char *unit, u32 runs, bool first)
{
	struct json_object *r = json_object_new_object();
	char num[32];

	json_object_object_add(r, "suite", json_object_new_string("sim"));
	json_object_object_add(r, "case", json_object_new_string(ns->p.workload));
	json_object_object_add(r, "method", json_object_new_string("sim"));
	json_object_object_add(r, "nodes", json_object_new_int64(ns->p.nodes));
	json_object_object_add(r, "bytes", json_object_new_uint64(ns->p.size));
	json_object_object_add(r, "metric", json_object_new_string(metric));
	/* Ten significant digits, as before, rather than json-c's 17. */
	snprintf(num, sizeof(num), "%.10g", value);
	json_object_object_add(r, "value",
			       isfinite(value) ? json_object_new_double_s(value, num) : NULL);
	json_object_object_add(r, "unit", json_object_new_string(unit));
	json_object_object_add(r, "runs", json_object_new_int64(runs));
	fprintf(f, "%s%s", first ? "[\n  " : ",\n  ",
		json_object_to_json_string_ext(r, JSON_C_TO_STRING_SPACED |
						      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(r);
}

static int nsim_json(const char *path, const struct nsim *ns)
{
	const struct sim_cfg *c = &ns->p.cfg;
	FILE *f = fopen(path, "w");
	u32 i;

	if (!f) {
		perror(path);
		return -1;
	}
	nsim_json_record(f, ns, "L_ns", (double)c->latency_ns, "ns", 1, true);
	nsim_json_record(f, ns, "o_ns", c->overhead_ns, "ns", 1, false);
	nsim_json_record(f, ns, "g_ns", c->gap_ns, "ns", 1, false);
	nsim_json_record(f, ns, "G_ns_per_byte", c->byte_ps / 1000.0, "ns/B", 1, false);
	for (i = 0; i < ns->nmetrics; i++)
		nsim_json_record(f, ns, ns->metrics[i].name, ns->metrics[i].value,
				 ns->metrics[i].unit, ns->metrics[i].runs, false);
	fputs("\n]\n", f);
	if (fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct nsim ns;
	struct nsim_params p;
	const char *json = NULL;
	bool quiet = false;
	const struct sim_cfg *c = &p.cfg;
	const struct fw_fault_cfg *f = &p.cfg.faults;
	u32 i;

	nsim_params_default(&p);
	if (nsim_parse(argc, argv, &p, &json, &quiet)) {
		nsim_usage(stderr);
		return 2;
	}
	if (!quiet) {
		printf("nicoff-sim: %s on %u nodes, %llu-byte messages, %u iterations\n",
		       p.workload, p.nodes, (unsigned long long)p.size, p.iters);
		printf("LogGP: L %llu ns, o %u ns, g %u ns, G %.3f ns/B; seed %llu\n",
		       (unsigned long long)c->latency_ns, c->overhead_ns, c->gap_ns,
		       c->byte_ps / 1000.0, (unsigned long long)c->seed);
		printf("faults (ppm): drop %u dup %u corrupt %u reorder %u delay %u (%u ns)\n",
		       f->drop_ppm, f->dup_ppm, f->corrupt_ppm, f->reorder_ppm, f->delay_ppm,
		       f->delay_ns);
		fflush(stdout);
	}
	if (nsim_run(&ns, &p)) {
		fprintf(stderr, "nicoff-sim: %s\n", ns.first_error);
		return 2;
	}
	if (!quiet)
		for (i = 0; i < ns.nmetrics; i++)
			printf("  %-20s %14.6g %s\n", ns.metrics[i].name, ns.metrics[i].value,
			       ns.metrics[i].unit);
	if (json && nsim_json(json, &ns))
		return 1;
	if (ns.errors) {
		fprintf(stderr, "nicoff-sim: %llu errors, the first: %s\n",
			(unsigned long long)ns.errors, ns.first_error);
		return 1;
	}
	return 0;
}
