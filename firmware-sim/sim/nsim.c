// SPDX-License-Identifier: GPL-2.0
/*
 * nicoff-sim's engine: sets up the fabric and every node's port and
 * region, hands completions to the workload, runs the fabric until it is
 * idle and measures the run (virtual time, events, wall time, memory).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>

#include "nsim.h"

const struct nsim_workload *const nsim_workloads[] = {
	&nsim_wl_pingpong,
	&nsim_wl_ring,
	&nsim_wl_alltoall_sparse,
	&nsim_wl_random,
	&nsim_wl_dissemination,
	&nsim_wl_barrier,
	&nsim_wl_barrier_pairwise,
	&nsim_wl_barrier_tree,
	&nsim_wl_barrier_central,
	&nsim_wl_barrier_combining,
	&nsim_wl_barrier_tournament,
	&nsim_wl_barrier_auto,
	&nsim_wl_bcast,
	&nsim_wl_bcast_p2p,
	&nsim_wl_bcast_nocrc,
	NULL,
};

const struct nsim_workload *nsim_find(const char *name)
{
	u32 i;

	for (i = 0; nsim_workloads[i]; i++)
		if (!strcmp(nsim_workloads[i]->name, name))
			return nsim_workloads[i];
	return NULL;
}

void nsim_params_default(struct nsim_params *p)
{
	memset(p, 0, sizeof(*p));
	p->workload = "ring";
	p->nodes = 4096;
	p->size = 8;
	p->iters = 10;
	p->warmup = 1;
	p->fanout = 4;
	p->limit_ns = 3600ull * 1000000000ull;
	sim_cfg_loggp(&p->cfg, p->nodes);
}

u64 nsim_hash(u64 seed, u64 a, u64 b, u64 c)
{
	u64 x = seed ^ (a * 0x9e3779b97f4a7c15ull) ^ (b * 0xc2b2ae3d27d4eb4full) ^
		(c * 0x165667b19e3779f9ull);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void nsim_fail(struct nsim *ns, const char *fmt, ...)
{
	va_list ap;

	if (!ns->errors++) {
		va_start(ap, fmt);
		vsnprintf(ns->first_error, sizeof(ns->first_error), fmt, ap);
		va_end(ap);
	}
}

void nsim_metric(struct nsim *ns, const char *name, double value, const char *unit, u32 runs)
{
	struct nsim_metric *m;

	if (ns->nmetrics == NSIM_MAX_METRICS)
		return;
	m = &ns->metrics[ns->nmetrics++];
	m->name = name;
	m->value = value;
	m->unit = unit;
	m->runs = runs;
}

void *nsim_state(struct nsim *ns, size_t size, size_t node_size)
{
	ns->wl_state = calloc(1, size + (size_t)ns->p.nodes * node_size);
	return ns->wl_state;
}

static void nsim_state_free(struct nsim *ns)
{
	if (ns->wl->fini)
		ns->wl->fini(ns);
	free(ns->wl_state);
	ns->wl_state = NULL;
}

void nsim_start_each(struct nsim *ns, void (*enter)(struct nsim *ns, u32 node, u64 t))
{
	u32 n;

	for (n = 0; n < ns->p.nodes; n++)
		enter(ns, n, 0);
}

void nsim_next_iter(struct nsim *ns, u32 node, u32 done,
		    void (*enter)(struct nsim *ns, u32 node, u64 t), u64 t)
{
	if (done == ns->p.iters)
		nsim_node_done(ns, t);
	else
		enter(ns, node, t);
}

void nsim_check_counts(struct nsim *ns, u64 sends, u64 recvs, u64 want)
{
	if (sends != want || recvs != want)
		nsim_fail(ns, "%s: %llu sends and %llu receives completed, not %llu", ns->wl->name,
			  (unsigned long long)sends, (unsigned long long)recvs,
			  (unsigned long long)want);
}

void nsim_metric_iters(struct nsim *ns, u64 recvs)
{
	nsim_metric(ns, "completion_us", (double)ns->t_done / 1000, "us", 1);
	nsim_metric(ns, "iter_us", (double)ns->t_done / 1000 / ns->p.iters, "us", ns->p.iters);
	nsim_metric(ns, "messages", (double)recvs, "messages", 1);
}

void nsim_node_done(struct nsim *ns, u64 t)
{
	if (!ns->unfinished) {
		nsim_fail(ns, "more nodes finished than there are");
		return;
	}
	ns->unfinished--;
	if (t > ns->t_done)
		ns->t_done = t;
}

/* ----------------------------------------------------------- buffers -- */

static u8 *nsim_region(struct nsim *ns, u32 node)
{
	return ns->p.verify ? ns->bufs + (u64)node * ns->region : ns->bufs;
}

static u8 nsim_byte(u32 node, u32 slot, u64 i)
{
	u64 x = (u64)node * 0x9e3779b1u + (u64)slot * 0x85ebca6bu + i * 0xc2b2ae35u;

	return (u8)(x ^ (x >> 13) ^ (x >> 29));
}

static int nsim_buffers(struct nsim *ns)
{
	u32 n = ns->p.nodes, i;
	u64 j;

	ns->region = (u64)(ns->send_slots + ns->recv_slots) * ns->p.size;
	if (!ns->region)
		ns->region = 1;
	ns->bufs = calloc(ns->p.verify ? n : 1, ns->region);
	if (!ns->bufs) {
		nsim_fail(ns, "no memory for %llu-byte regions",
			  (unsigned long long)ns->region);
		return -ENOMEM;
	}
	for (i = 0; i < (ns->p.verify ? n : 1); i++) {
		u8 *r = nsim_region(ns, i);
		u32 k;

		for (k = 0; k < ns->send_slots; k++)
			for (j = 0; j < ns->p.size; j++)
				r[k * ns->p.size + j] = nsim_byte(i, k, j);
	}
	return 0;
}

void nsim_send(struct nsim *ns, u32 node, u32 dst, u32 slot, u64 msg_tag, u64 tag, u64 t)
{
	struct nicoff_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = NICOFF_OP_SEND;
	c.tag = tag;
	c.send.dst_card = dst;
	c.send.dst_port = 0;
	c.send.mr = ns->mr;
	c.send.off = (u64)slot * ns->p.size;
	c.send.len = ns->p.size;
	c.send.msg_tag = msg_tag;
	sim_post_at(ns->s, node, 0, &c, t);
}

void nsim_recv(struct nsim *ns, u32 node, u32 src, u32 slot, u64 match, u64 mask, u64 tag,
	       u64 t)
{
	struct nicoff_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = NICOFF_OP_RECV;
	c.tag = tag;
	c.recv.mr = ns->mr;
	c.recv.off = (u64)(ns->send_slots + slot) * ns->p.size;
	c.recv.len = ns->p.size;
	c.recv.src_card = src;
	c.recv.src_port = 0;
	c.recv.tag = match;
	c.recv.tag_mask = mask;
	sim_post_at(ns->s, node, 0, &c, t);
}

bool nsim_check_recv(struct nsim *ns, u32 node, const struct nicoff_cqe *cqe, u32 slot,
		     u32 src, u32 src_slot)
{
	const u8 *r;
	u64 j;

	if (cqe->status || cqe->result != ns->p.size || cqe->src_card != src) {
		nsim_fail(ns, "node %u: receive %llu from %u: status %d, %llu bytes (from %u)",
			  node, (unsigned long long)cqe->tag, src, cqe->status,
			  (unsigned long long)cqe->result, cqe->src_card);
		return false;
	}
	if (!ns->p.verify)
		return true;
	r = nsim_region(ns, node) + (u64)(ns->send_slots + slot) * ns->p.size;
	for (j = 0; j < ns->p.size; j++)
		if (r[j] != nsim_byte(src, src_slot, j)) {
			nsim_fail(ns, "node %u: message from %u corrupt at byte %llu", node, src,
				  (unsigned long long)j);
			return false;
		}
	return true;
}

/* --------------------------------------------------------------- run -- */

static void nsim_hook(void *arg, u32 node, u32 port, const struct nicoff_cqe *cqe, u64 t)
{
	struct nsim *ns = arg;

	if (port) {
		nsim_fail(ns, "node %u: completion on port %u", node, port);
		return;
	}
	ns->wl->cqe(ns, node, cqe, t);
}

static double nsim_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1000000000.0;
}

/* CPU time of the process, in user space or (@sys) in the kernel. */
static double nsim_cpu(bool sys)
{
	struct rusage ru;
	struct timeval *tv = sys ? &ru.ru_stime : &ru.ru_utime;

	getrusage(RUSAGE_SELF, &ru);
	return (double)tv->tv_sec + (double)tv->tv_usec / 1000000.0;
}

static u64 nsim_maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (u64)ru.ru_maxrss;
}

/* Resident memory now, from /proc (getrusage only has the peak). */
static u64 nsim_rss_kb(void)
{
	unsigned long long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return nsim_maxrss_kb();
	if (fscanf(f, "%llu %llu", &size, &rss) != 2)
		rss = 0;
	fclose(f);
	return rss * 4;
}

static void nsim_fw_sum(struct nsim *ns)
{
	u64 *sum = (u64 *)&ns->fw;
	u32 n, i;

	memset(&ns->fw, 0, sizeof(ns->fw));
	for (n = 0; n < ns->p.nodes; n++) {
		struct fw_stats st;
		const u64 *v = (const u64 *)&st;

		fw_get_stats(sim_card(ns->s, n), &st);
		for (i = 0; i < sizeof(st) / sizeof(u64); i++)
			sum[i] += v[i];
	}
}

static int nsim_setup(struct nsim *ns)
{
	struct sim_hooks hooks = { .cqe = nsim_hook, .arg = ns };
	u32 n, handle, rkey;
	int ret;

	ns->p.cfg.nodes = ns->p.nodes;
	ns->p.cfg.fw.num_nodes = ns->p.nodes;
	ns->s = sim_create(&ns->p.cfg);
	if (!ns->s) {
		nsim_fail(ns, "invalid fabric or firmware configuration");
		return -EINVAL;
	}
	sim_set_hooks(ns->s, &hooks);
	ret = nsim_buffers(ns);
	if (ret)
		return ret;
	for (n = 0; n < ns->p.nodes; n++) {
		ret = sim_attach(ns->s, n, 0);
		if (!ret)
			ret = sim_reg_mr(ns->s, n, 0, nsim_region(ns, n), ns->region,
					 NICOFF_ACCESS_LOCAL_WRITE, &handle, &rkey);
		if (ret) {
			nsim_fail(ns, "node %u: port or region: %d", n, ret);
			return ret;
		}
		if (!n)
			ns->mr = handle;
		else if (handle != ns->mr)
			nsim_fail(ns, "node %u: region handle %u, not %u", n, handle, ns->mr);
	}
	return 0;
}

static void nsim_measure(struct nsim *ns)
{
	u64 n = ns->p.nodes;
	double eps = ns->run_s > 0 ? (double)ns->stats.events / ns->run_s : 0;
	double epc = ns->cpu_s > 0 ? (double)ns->stats.events / ns->cpu_s : 0;
	double rss = (double)(ns->rss_peak_kb - ns->rss_base_kb) * 1024;

	nsim_metric(ns, "sim_time_us", (double)ns->end_ns / 1000, "us", 1);
	nsim_metric(ns, "events", (double)ns->stats.events, "events", 1);
	nsim_metric(ns, "timer_events", (double)ns->stats.timers, "events", 1);
	nsim_metric(ns, "packets", (double)ns->stats.delivered, "packets", 1);
	nsim_metric(ns, "wall_s", ns->run_s, "s", 1);
	nsim_metric(ns, "setup_s", ns->setup_s, "s", 1);
	nsim_metric(ns, "cpu_s", ns->cpu_s, "s", 1);
	nsim_metric(ns, "sys_s", ns->sys_s, "s", 1);
	nsim_metric(ns, "events_per_s", eps, "events/s", 1);
	nsim_metric(ns, "events_per_cpu_s", epc, "events/s", 1);
	nsim_metric(ns, "peak_rss_mb", (double)ns->rss_peak_kb / 1024, "MiB", 1);
	nsim_metric(ns, "bytes_per_node", rss / (double)n, "B", 1);
	nsim_metric(ns, "host_bytes_per_node", (double)ns->mem.host / (double)n, "B", 1);
	nsim_metric(ns, "fw_bytes_per_node", (double)ns->mem.fw_peak / (double)n, "B", 1);
	nsim_metric(ns, "pkt_peak_mb", (double)ns->mem.pkt_peak / 1048576, "MiB", 1);
	nsim_metric(ns, "queue_peak_mb", (double)ns->mem.queue_peak / 1048576, "MiB", 1);
	nsim_metric(ns, "arena_mb", (double)ns->mem.arena / 1048576, "MiB", 1);
	nsim_metric(ns, "acks", (double)ns->fw.tx_acks, "packets", 1);
	nsim_metric(ns, "retransmits", (double)ns->fw.retransmits, "packets", 1);
	nsim_metric(ns, "timeouts", (double)ns->fw.timeouts, "timeouts", 1);
	nsim_metric(ns, "unexpected", (double)ns->fw.unexpected, "messages", 1);
	nsim_metric(ns, "rnr_drops", (double)ns->fw.rnr_drops, "packets", 1);
}

int nsim_run(struct nsim *ns, const struct nsim_params *p)
{
	double t0, t1, u1, s1;
	int ret;

	memset(ns, 0, sizeof(*ns));
	ns->p = *p;
	ns->wl = nsim_find(p->workload);
	if (!ns->wl) {
		nsim_fail(ns, "no workload %s", p->workload);
		return -EINVAL;
	}
	if (p->nodes < 2 || !p->iters) {
		nsim_fail(ns, "at least 2 nodes and 1 iteration");
		return -EINVAL;
	}
	ns->unfinished = p->nodes;
	ns->rss_base_kb = nsim_rss_kb();
	t0 = nsim_wall();
	ret = ns->wl->init(ns);
	if (!ret)
		ret = nsim_setup(ns);
	if (ret) {
		nsim_state_free(ns);
		sim_destroy(ns->s);
		free(ns->bufs);
		return ret;
	}
	ns->wl->start(ns);
	t1 = nsim_wall();
	ns->setup_s = t1 - t0;

	u1 = nsim_cpu(false);
	s1 = nsim_cpu(true);
	ns->idle = sim_run_idle(ns->s, p->limit_ns);
	ns->run_s = nsim_wall() - t1;
	ns->sys_s = nsim_cpu(true) - s1;
	ns->cpu_s = nsim_cpu(false) - u1 + ns->sys_s;
	ns->end_ns = sim_now(ns->s);
	ns->rss_peak_kb = nsim_maxrss_kb();
	ns->stats = *sim_stats(ns->s);
	sim_mem_usage(ns->s, &ns->mem);
	nsim_fw_sum(ns);
	if (!ns->idle)
		nsim_fail(ns, "still busy at the limit, %llu us",
			  (unsigned long long)p->limit_ns / 1000);
	if (ns->unfinished)
		nsim_fail(ns, "%u nodes did not finish", ns->unfinished);
	ns->wl->finish(ns);
	nsim_state_free(ns);
	nsim_measure(ns);

	ns->leaks = sim_destroy(ns->s);
	ns->s = NULL;
	free(ns->bufs);
	ns->bufs = NULL;
	if (ns->leaks && ns->idle)
		nsim_fail(ns, "%ld allocations leaked", ns->leaks);
	nsim_metric(ns, "errors", (double)ns->errors, "errors", 1);
	return 0;
}
