// SPDX-License-Identifier: GPL-2.0
/* Raw-ABI helpers for the nicoff selftests; see nicoff_util.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "nicoff_util.h"

int nt_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? -errno : 0;
}

int nt_open_card(int card)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/nicoff%d", card);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int nt_query(int fd, struct nicoff_query *q)
{
	memset(q, 0, sizeof(*q));
	return nt_ioctl(fd, NICOFF_IOC_QUERY, q);
}

int nt_query_card(int card, struct nicoff_query *q)
{
	int fd = nt_open_card(card), ret;

	if (fd < 0)
		return fd;
	ret = nt_query(fd, q);
	close(fd);
	return ret;
}

int nt_port_open_fd(int fd, uint32_t port, uint32_t cmd_entries, uint32_t cq_entries,
		    struct nicoff_port_open *out)
{
	struct nicoff_port_open po;
	int ret;

	memset(&po, 0, sizeof(po));
	po.abi_version = NICOFF_ABI_VERSION;
	po.port = port;
	po.cmd_entries = cmd_entries;
	po.cq_entries = cq_entries;
	ret = nt_ioctl(fd, NICOFF_IOC_PORT_OPEN, &po);
	if (!ret && out)
		*out = po;
	return ret;
}

int nt_reg_mr(int fd, const void *addr, uint64_t len, uint32_t access, uint32_t *handle)
{
	struct nicoff_reg_mr mr;
	int ret;

	memset(&mr, 0, sizeof(mr));
	mr.addr = (uintptr_t)addr;
	mr.length = len;
	mr.access = access;
	ret = nt_ioctl(fd, NICOFF_IOC_REG_MR, &mr);
	if (!ret && handle)
		*handle = mr.handle;
	return ret;
}

int nt_dereg_mr(int fd, uint32_t handle)
{
	struct nicoff_dereg_mr d = { .handle = handle };

	return nt_ioctl(fd, NICOFF_IOC_DEREG_MR, &d);
}

int nt_stats(int fd, struct nicoff_port_stats *st)
{
	memset(st, 0, sizeof(*st));
	return nt_ioctl(fd, NICOFF_IOC_PORT_STATS, st);
}

int nt_kick(int fd)
{
	return ioctl(fd, NICOFF_IOC_KICK) ? -errno : 0;
}

void *nt_map_ring(int fd, const struct nicoff_port_open *po, bool cq)
{
	return mmap(NULL, cq ? po->cq_size : po->cmd_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		    cq ? po->cq_offset : po->cmd_offset);
}

int nt_port_open(struct nt_port *p, int card, uint32_t port, uint32_t cmd_entries,
		 uint32_t cq_entries)
{
	void *m;
	int ret;

	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->card = card;
	ret = nt_open_card(card);
	if (ret < 0)
		return ret;
	p->fd = ret;
	ret = nt_port_open_fd(p->fd, port, cmd_entries, cq_entries, &p->po);
	if (ret)
		goto fail;
	m = nt_map_ring(p->fd, &p->po, false);
	if (m == MAP_FAILED) {
		ret = -errno;
		goto fail;
	}
	p->cmd_hdr = m;
	m = nt_map_ring(p->fd, &p->po, true);
	if (m == MAP_FAILED) {
		ret = -errno;
		goto fail;
	}
	p->cq_hdr = m;
	p->cmds = (struct nicoff_cmd *)((char *)p->cmd_hdr + NICOFF_RING_HDR_SIZE);
	p->cqes = (struct nicoff_cqe *)((char *)p->cq_hdr + NICOFF_RING_HDR_SIZE);
	p->cmd_entries = cmd_entries;
	p->cq_entries = cq_entries;
	/* A fresh port starts at index 0 on both rings. */
	p->cmd_prod = nt_load_acquire(&p->cmd_hdr->producer);
	p->cq_cons = nt_load_acquire(&p->cq_hdr->consumer);
	return 0;
fail:
	nt_port_close(p);
	return ret;
}

void nt_port_close(struct nt_port *p)
{
	if (p->cmd_hdr)
		munmap(p->cmd_hdr, p->po.cmd_size);
	if (p->cq_hdr)
		munmap(p->cq_hdr, p->po.cq_size);
	p->cmd_hdr = NULL;
	p->cq_hdr = NULL;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

bool nt_wait_flag(const struct nt_port *p, bool cq, uint32_t flag, int ms)
{
	uint64_t end = nt_now_ns() + ms * 1000000ull;

	while (!((cq ? nt_cq_flags(p) : nt_cmd_flags(p)) & flag)) {
		if (nt_now_ns() >= end)
			return false;
		nt_sleep_ms(1);
	}
	return true;
}

uint32_t nt_cmd_space(const struct nt_port *p)
{
	uint32_t cons = nt_load_acquire(&p->cmd_hdr->consumer);

	return p->cmd_entries - (p->cmd_prod - cons);
}

uint32_t nt_cmd_pending(const struct nt_port *p)
{
	return p->cmd_prod - nt_load_acquire(&p->cmd_hdr->consumer);
}

void nt_cmd_write(struct nt_port *p, const struct nicoff_cmd *c)
{
	p->cmds[p->cmd_prod & (p->cmd_entries - 1)] = *c;
	p->cmd_prod++;
}

void nt_publish(struct nt_port *p)
{
	nt_store_release(&p->cmd_hdr->producer, p->cmd_prod);
}

int nt_doorbell(struct nt_port *p)
{
	int ret;

	nt_fence();
	if (!(nt_cmd_flags(p) & NICOFF_RING_NEED_WAKEUP))
		return 0;
	ret = nt_kick(p->fd);
	if (ret)
		return ret;
	p->kicks++;
	return 1;
}

int nt_submit(struct nt_port *p, const struct nicoff_cmd *c, uint32_t n)
{
	uint32_t i;
	int ret;

	if (n > nt_cmd_space(p))
		return -ENOSPC;
	for (i = 0; i < n; i++)
		nt_cmd_write(p, &c[i]);
	nt_publish(p);
	ret = nt_doorbell(p);
	return ret < 0 ? ret : 0;
}

int nt_submit_nops(struct nt_port *p, uint32_t n, uint64_t tag0)
{
	struct nicoff_cmd c;
	uint32_t i;
	int ret;

	if (n > nt_cmd_space(p))
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		nicoff_prep_nop(&c, tag0 + i);
		nt_cmd_write(p, &c);
	}
	nt_publish(p);
	ret = nt_doorbell(p);
	return ret < 0 ? ret : 0;
}

uint32_t nt_cq_ready(const struct nt_port *p)
{
	return nt_load_acquire(&p->cq_hdr->producer) - p->cq_cons;
}

int nt_reap(struct nt_port *p, struct nicoff_cqe *out, uint32_t max)
{
	uint32_t n = nt_cq_ready(p), i;
	int ret;

	if (n > max)
		n = max;
	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		if (out)
			out[i] = p->cqes[(p->cq_cons + i) & (p->cq_entries - 1)];
	}
	p->cq_cons += n;
	nt_store_release(&p->cq_hdr->consumer, p->cq_cons);
	/* The card may have stopped on a full completion ring: re-kick. */
	if (nt_cmd_pending(p)) {
		ret = nt_doorbell(p);
		if (ret < 0)
			return ret;
	}
	return n;
}

int nt_wait_cqes(struct nt_port *p, struct nicoff_cqe *out, uint32_t n, int timeout_ms)
{
	uint64_t deadline = nt_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	uint32_t got = 0;

	while (got < n) {
		struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
		uint64_t now;
		int ret;

		ret = nt_reap(p, out ? out + got : NULL, n - got);
		if (ret < 0)
			return ret;
		got += ret;
		if (got == n)
			break;
		if (ret)
			continue;
		if (nt_cq_flags(p) & NICOFF_RING_ERROR)
			break;
		now = nt_now_ns();
		if (now >= deadline)
			break;
		ret = (deadline - now) / 1000000ull;
		if (ret > 100)
			ret = 100;
		if (poll(&pfd, 1, ret ? ret : 1) < 0 && errno != EINTR)
			return -errno;
	}
	return got;
}

int nt_run_one(struct nt_port *p, const struct nicoff_cmd *c, struct nicoff_cqe *cqe,
	       int timeout_ms)
{
	int ret;

	ret = nt_submit(p, c, 1);
	if (ret)
		return ret;
	ret = nt_wait_cqes(p, cqe, 1, timeout_ms);
	if (ret < 0)
		return ret;
	return ret == 1 ? 0 : -ETIMEDOUT;
}

ssize_t nt_read_file(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	buf[n < 0 ? 0 : n] = 0;
	return n;
}

static int nt_read_ull(const char *path, unsigned long long *v)
{
	char buf[64];
	ssize_t n = nt_read_file(path, buf, sizeof(buf));

	*v = 0;
	if (n < 0)
		return (int)n;
	errno = 0;
	*v = strtoull(buf, NULL, 0);
	return errno ? -errno : 0;
}

long long nt_pinned_pages(void)
{
	unsigned long long v;

	return nt_read_ull(NT_PINNED_PAGES_PATH, &v) ? -1 : (long long)v;
}

long long nt_wait_pinned(long long want, int timeout_ms)
{
	uint64_t deadline = nt_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	long long v;

	for (;;) {
		v = nt_pinned_pages();
		if (v == want || nt_now_ns() >= deadline)
			return v;
		nt_sleep_ms(10);
	}
}

int nt_param_get(const char *name, unsigned long *v)
{
	unsigned long long x;
	char path[256];
	int ret;

	snprintf(path, sizeof(path), NT_PARAM_DIR "%s", name);
	ret = nt_read_ull(path, &x);
	if (!ret)
		*v = x;
	return ret;
}

int nt_param_set(const char *name, unsigned long v)
{
	char path[256], buf[32];
	int fd, len, ret = 0;

	snprintf(path, sizeof(path), NT_PARAM_DIR "%s", name);
	len = snprintf(buf, sizeof(buf), "%lu\n", v);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != len)
		ret = -errno;
	close(fd);
	return ret;
}

int nt_set_faults(unsigned long drop, unsigned long dup, unsigned long reorder,
		  unsigned long corrupt)
{
	static const char *const names[] = {
		"fault_drop_ppm", "fault_dup_ppm", "fault_reorder_ppm", "fault_corrupt_ppm",
	};
	const unsigned long ppm[] = { drop, dup, reorder, corrupt };
	int ret = 0, r;
	unsigned int i;

	for (i = 0; i < sizeof(ppm) / sizeof(ppm[0]); i++) {
		r = nt_param_set(names[i], ppm[i]);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

uint64_t nt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void nt_sleep_ms(unsigned int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000l };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

uint64_t nt_rand64(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

void nt_fill_pattern(void *buf, size_t len, uint64_t seed)
{
	unsigned char *b = buf;
	uint64_t s = seed | 1, r = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 7))
			r = nt_rand64(&s);
		b[i] = r >> ((i & 7) * 8);
	}
}

/* Fork a child that runs @fn: its pid, or -1. */
static pid_t nt_fork_fn(int (*fn)(void))
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (!pid)
		_exit(fn());
	return pid;
}

/* Wait for @pid: its exit code, 128 + the signal that killed it, or -1. */
static int nt_wait_code(pid_t pid)
{
	int status;

	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int nt_run_child(int (*fn)(void))
{
	return nt_wait_code(nt_fork_fn(fn));
}

int nt_run_pair(int (*member)(int rank))
{
	pid_t pids[2];
	int rank, code[2];

	fflush(NULL);
	for (rank = 0; rank < 2; rank++) {
		pids[rank] = fork();
		if (!pids[rank])
			_exit(member(rank));
	}
	for (rank = 0; rank < 2; rank++)
		code[rank] = nt_wait_code(pids[rank]);
	return code[0] ? code[0] : code[1];
}

static void nt_kill_left(const pid_t *pids, const bool *reaped, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!reaped[i])
			kill(pids[i], SIGKILL);
}

int nt_reap_within(const pid_t *pids, int n, uint64_t t0, uint64_t limit_ns, bool *ok)
{
	bool *reaped = calloc(n > 0 ? n : 1, sizeof(*reaped));
	int i, st, left = n, bad = 0;
	bool killed = false;
	pid_t got;

	for (i = 0; i < n; i++)
		ok[i] = false;
	while (left && reaped) {
		got = waitpid(-1, &st, WNOHANG);
		if (got < 0)
			break;
		if (!got) {
			if (!killed && nt_now_ns() - t0 >= limit_ns) {
				nt_kill_left(pids, reaped, n);
				killed = true;
			}
			nt_sleep_ms(10);
			continue;
		}
		for (i = 0; i < n && pids[i] != got; i++)
			;
		if (i == n)
			continue;
		reaped[i] = true;
		left--;
		ok[i] = !killed && WIFEXITED(st) && WEXITSTATUS(st) == 0;
		if (!ok[i] && !killed) {
			/* The others may wait for it for ever (a host-run tree has no timeout). */
			nt_kill_left(pids, reaped, n);
			killed = true;
		}
	}
	for (i = 0; i < n; i++)
		bad += !ok[i];
	free(reaped);
	return bad;
}

int nt_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (lseek(fd, 0, SEEK_END) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

int nt_kmsg_splat(int fd, char *line, size_t len)
{
	static const char *const bad[] = {
		"WARNING:", "BUG:", "Oops", "Call Trace", "general protection",
		"kernel BUG", "UBSAN", "refcount_t", "page allocation failure",
		"vmalloc error", "lockup", "blocked for more than", "Kernel panic",
		/* slub_debug's reports, RCU stalls, hung tasks, hard lockups */
		"Poison overwritten", "Redzone overwritten", "Object already free",
		"Freepointer corrupt", "BUG kmalloc", "self-detected stall", "detected stalls",
		"detected expedited stalls", "RCU Stall", "hung_task", "LOCKUP", "Object padding",
	};
	char rec[8192];
	unsigned int i;
	int found = 0;

	/* Read everything logged so far; report the first bad record. */
	for (;;) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);
		char *msg, *nl;

		if (n < 0) {
			if (errno == EAGAIN)
				return found;
			if (errno == EPIPE || errno == EINTR)
				continue;	/* records lost or interrupted: go on */
			return -errno;
		}
		if (found)
			continue;
		rec[n] = 0;
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		nl = strchr(msg, '\n');
		if (nl)
			*nl = 0;
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			if (strstr(msg, bad[i])) {
				if (line && len) {
					strncpy(line, msg, len - 1);
					line[len - 1] = 0;
				}
				found = 1;
				break;
			}
		}
	}
}

int nt_region_new(struct nt_port *p, struct nt_region *r, size_t len, uint32_t access, int fill)
{
	struct nicoff_reg_mr mr;
	void *m;
	int ret;

	memset(r, 0, sizeof(*r));
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	r->buf = m;
	r->len = len;
	memset(r->buf, fill, len);
	memset(&mr, 0, sizeof(mr));
	mr.addr = (uintptr_t)r->buf;
	mr.length = len;
	mr.access = access;
	ret = nt_ioctl(p->fd, NICOFF_IOC_REG_MR, &mr);
	if (ret)
		return ret;
	r->handle = mr.handle;
	r->rkey = mr.rkey;
	return 0;
}

int nt_nop_step(struct nt_port *p, bool *inflight, uint64_t *done)
{
	struct nicoff_cqe cqe;
	int got;

	if (!*inflight) {
		got = nt_submit_nops(p, 1, *done + 1);
		if (got)
			return got;
		*inflight = true;
	}
	got = nt_reap(p, &cqe, 1);
	if (got <= 0)
		return got;
	if (cqe.opcode != NICOFF_OP_NOP || cqe.status || cqe.tag != *done + 1)
		return -EIO;
	*inflight = false;
	++*done;
	return 0;
}
