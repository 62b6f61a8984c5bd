// SPDX-License-Identifier: GPL-2.0
/*
 * A seeded fuzz of everything a process can do to nicoff (issue 19, "keep
 * it found").  Forked workers, root or unprivileged (uid 65534 with a
 * small RLIMIT_MEMLOCK), do at random: every ioctl number of the nicoff
 * type and its neighbours with NULL, unmapped, misaligned, kernel,
 * read-only and garbage arguments; PORT_OPEN with random fields; mmap at
 * random offsets, lengths, protections and flags; garbage commands of
 * every opcode (firmware ones included) and garbage ring indices, then
 * KICK; REG_MR and DEREG_MR racing between threads of one process (DEREG
 * of the handle a concurrent REG_MR is about to return), close() racing
 * with ongoing I/O; messages of the "nicoff" generic netlink family with
 * random attributes (only GETs, and SETs built so that they must be
 * refused: no fault setting changes); fork() of a process with mapped
 * rings (MADV_DOFORK of a ring must fail), the child inheriting no ring
 * and poking the parent's port through the file; SIGKILL at random points.
 *
 * Each worker checks what the ABI (Documentation/abi.md) promises about
 * each result, as exactly as it can know it, and exits 42 on the first
 * broken promise, naming it.  The supervisor keeps the workers going for
 * NICOFF_FUZZ_SECS seconds (default 60), SIGKILLs some at random, then
 * checks that none is stuck in the kernel (state D), that every one ended,
 * that no page stays pinned, no port stays open, the fault settings are
 * what they were, a fresh port on every card still completes a NOP, and
 * that the kernel log is clean.  The VM harness checks rmmod and dmesg
 * afterwards (with slub_debug, which sees a use after free).
 *
 * NICOFF_FUZZ_SEED=N replays the choices of a run (the seed is printed;
 * timing, and so the interleavings, differ from run to run);
 * NICOFF_FUZZ_WORKERS (default 6) sets how many run at once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "nicoff_nl.h"
#include "nicoff_util.h"

#define PAGE 4096ul
#define FZ_FAIL 42			/* exit status of a worker that saw a broken promise */
#define FZ_DEFAULT_SECS 60
#define FZ_MAX_SECS 400			/* the harness's timeout below is 500 s */
#define FZ_DEFAULT_WORKERS 6
#define FZ_MAX_WORKERS 32
#define FZ_FILES 4			/* open files a worker juggles */
#define FZ_MRS 24			/* regions tracked per file */
#define FZ_TRACK 4096			/* commands tracked per file */
#define FZ_EXTRAS 8			/* extra ring mappings kept */
#define FZ_BUF (2ul << 20)		/* a worker's registrable memory */
#define FZ_KPTR ((void *)0xffffffff81000000ul)
#define FZ_TASK_SIZE 0x7ffffffff000ull
#define FZ_NOBODY 65534

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------- errno sets -- */

/* The results a call may give, as a bit set over this table (0: success). */
static const int fz_errs[] = {
	0, EINVAL, ENOENT, ERANGE, EACCES, EOPNOTSUPP, EFAULT, ENOMEM, ENOSPC, EIO,
	ENOTCONN, EBUSY, EPROTO, EADDRINUSE, EPERM, ENOTTY, EBADF, EAGAIN, ECANCELED,
	ECONNABORTED, ECONNREFUSED, ECONNRESET, EEXIST, EMSGSIZE, ENOBUFS, ENODEV,
	ETIMEDOUT, ESPIPE, ENOEXEC,
};

static uint64_t fz_bit(int err)
{
	unsigned int i;

	if (err < 0)
		err = -err;
	for (i = 0; i < ARRAY_LEN(fz_errs); i++)
		if (fz_errs[i] == err)
			return 1ull << i;
	return 1ull << 63;	/* in no set */
}

static uint64_t fz_set_of(const int *e)
{
	uint64_t m = 0;

	for (; *e >= 0; e++)
		m |= fz_bit(*e);
	return m;
}

#define E(...) fz_set_of((const int[]){ __VA_ARGS__, -1 })

static void fz_set_str(uint64_t m, char *buf, size_t len)
{
	unsigned int i;
	size_t n = 0;

	buf[0] = 0;
	for (i = 0; i < ARRAY_LEN(fz_errs) && n < len; i++)
		if (m & (1ull << i))
			n += snprintf(buf + n, len - n, "%s%d", n ? "," : "", -fz_errs[i]);
}

/* What the firmware may complete its commands with. */
static uint64_t fz_fw_set(void)
{
	return E(0, EACCES, EAGAIN, EBUSY, ECANCELED, ECONNABORTED, ECONNREFUSED, ECONNRESET,
		 EEXIST, EINVAL, EMSGSIZE, ENOBUFS, ENODEV, ENOENT, ENOMEM, ENOSPC, EOPNOTSUPP,
		 EPROTO, ERANGE, ETIMEDOUT);
}

/* ------------------------------------------------------ shared counters -- */

#define FZ_SELFKILL_SLOTS 4096

struct fz_stats {
	uint64_t actions, ioctls, port_opens, maps, regs, regs_ok, deregs, cmds, cqes;
	uint64_t forced_errors, nl_msgs, nl_refused, forks, inherited_maps, races, closes;
	uint64_t selfkills;
	pid_t selfkill[FZ_SELFKILL_SLOTS];	/* by worker id: the pid that killed itself */
};

static struct fz_stats *fz_sh;

#define FZ_COUNT(field, n) __atomic_fetch_add(&fz_sh->field, (n), __ATOMIC_RELAXED)

/* -------------------------------------------------------------- worker -- */

struct fz_mr {
	uint32_t h, rkey, access;
	uint64_t len;
};

struct fz_file {
	int fd;			/* -1: free slot */
	int card;
	int oflags;
	bool port;		/* PORT_OPEN succeeded on it */
	bool mapped;		/* both rings mapped: p.* valid */
	bool honest;		/* rings written only as the ABI says: no error state */
	bool idx_honest;	/* no garbage index published: we know the card's */
	bool mr_known;		/* mrs[] is exactly the port's table */
	bool errored;		/* seen in the error state */
	uint32_t cmd_entries, cq_entries, port_num;
	uint64_t cmd_size, cq_size;
	struct nt_port p;
	struct fz_mr mrs[FZ_MRS];
	unsigned int nmr;
	uint32_t stale[4];
	uint32_t serial;	/* high half of our tags */
	uint32_t seq;		/* commands posted with a tracked tag */
	uint32_t epoch;		/* bumped by each REG_MR and DEREG_MR */
	struct nicoff_port_stats st;	/* the last PORT_STATS */
	/* Per command posted (op must stay first: see fz_act_open). */
	uint8_t op[FZ_TRACK];
	uint8_t done[FZ_TRACK];
	uint32_t ep[FZ_TRACK];
	uint64_t allowed[FZ_TRACK];
};

struct fz_extra {
	void *addr;
	size_t len;
};

static struct {
	unsigned int id;
	uint64_t seed, rs;
	bool root;
	uint64_t memlock_pages;	/* RLIMIT_MEMLOCK of an unprivileged worker */
	uint64_t deadline;
	uint64_t totalram;	/* pages */
	const char *what;	/* the action under way, for messages */
	struct nicoff_query q;
	uint8_t *buf;		/* FZ_BUF read-write, then a PROT_NONE guard page */
	uint8_t *guard;
	uint8_t *scratch;	/* 4 pages never registered: ioctl arguments */
	uint8_t *ro;		/* 4 read-only pages */
	uint8_t *hole;		/* a PROT_NONE page */
	int devnull;
	int nl;
	uint16_t family;
	uint32_t nl_seq;
	struct fz_file f[FZ_FILES];
	struct fz_extra x[FZ_EXTRAS];
} w;

static void __attribute__((noreturn, format(printf, 2, 3))) fz_die(int line, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "# worker %u (%s, pid %d, seed %#llx), line %d, in %s: %s\n", w.id,
		w.root ? "root" : "uid 65534", getpid(), (unsigned long long)w.seed, line,
		w.what ? w.what : "?", msg);
	_exit(FZ_FAIL);
}

#define FZ_CHECK(cond, ...) do { \
	if (!(cond)) \
		fz_die(__LINE__, __VA_ARGS__); \
} while (0)

/* ret (0 or -errno) must be in the set m. */
#define FZ_EXPECT(ret, m, ...) do { \
	int __r = (ret); \
	uint64_t __m = (m); \
	if (!(fz_bit(__r) & __m)) { \
		char __s[200], __d[300]; \
		fz_set_str(__m, __s, sizeof(__s)); \
		snprintf(__d, sizeof(__d), __VA_ARGS__); \
		fz_die(__LINE__, "%s: got %d, allowed {%s}", __d, __r, __s); \
	} \
} while (0)

static uint64_t rnd(void)
{
	return nt_rand64(&w.rs);
}

static uint32_t rn(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static bool one_in(unsigned int n)
{
	return rn(n) == 0;
}

static uint64_t fz_boundary(void)
{
	static const uint64_t v[] = {
		0, 1, 2, 3, 7, 8, 63, 64, 0x7f, 0x80, 0xff, 0x100, 0xfff, 0x1000, 0x1001,
		0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
		0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull, ~0ull - 1, ~0ull - 4095,
		FZ_TASK_SIZE, FZ_TASK_SIZE - 1, FZ_TASK_SIZE + 1, NICOFF_MMAP_CQ_RING,
	};

	switch (rn(4)) {
	case 0:
		return rnd();
	case 1:
		return rn(256);
	default:
		return v[rn(ARRAY_LEN(v))];
	}
}

static uint32_t fz_log2(uint32_t v)
{
	uint32_t l = 0;

	while (v > 1) {
		v >>= 1;
		l++;
	}
	return l;
}

/* ------------------------------------------------------------- files -- */

static struct fz_file *fz_pick(bool want_port, bool want_mapped)
{
	struct fz_file *c[FZ_FILES];
	unsigned int i, n = 0;

	for (i = 0; i < FZ_FILES; i++) {
		struct fz_file *f = &w.f[i];

		if (f->fd < 0 || (want_port && !f->port) || (want_mapped && !f->mapped))
			continue;
		c[n++] = f;
	}
	return n ? c[rn(n)] : NULL;
}

static struct fz_file *fz_free_slot(void)
{
	unsigned int i;

	for (i = 0; i < FZ_FILES; i++)
		if (w.f[i].fd < 0)
			return &w.f[i];
	return NULL;
}

static void fz_extra_add(void *addr, size_t len)
{
	unsigned int i;

	for (i = 0; i < FZ_EXTRAS; i++) {
		if (!w.x[i].addr) {
			w.x[i].addr = addr;
			w.x[i].len = len;
			return;
		}
	}
	munmap(addr, len);
}

static void fz_unmap_rings(struct fz_file *f)
{
	if (!f->mapped)
		return;
	munmap(f->p.cmd_hdr, f->cmd_size);
	munmap(f->p.cq_hdr, f->cq_size);
	f->p.cmd_hdr = NULL;
	f->p.cq_hdr = NULL;
	f->mapped = false;
}

static void fz_close(struct fz_file *f, bool unmap)
{
	if (f->mapped) {
		if (unmap) {
			fz_unmap_rings(f);
		} else {
			/* The mappings keep the port alive after the close. */
			fz_extra_add(f->p.cmd_hdr, f->cmd_size);
			fz_extra_add(f->p.cq_hdr, f->cq_size);
			f->mapped = false;
		}
	}
	FZ_CHECK(close(f->fd) == 0, "close: %s", strerror(errno));
	f->fd = -1;
	FZ_COUNT(closes, 1);
}

/* Map both rings of a port; check what a fresh mapping shows. */
static void fz_map_rings(struct fz_file *f)
{
	void *c, *q;

	c = mmap(NULL, f->cmd_size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd,
		 NICOFF_MMAP_CMD_RING);
	if ((f->oflags & O_ACCMODE) != O_RDWR) {
		/* A shared writable mapping needs a file open for both. */
		FZ_CHECK(c == MAP_FAILED && errno == EACCES,
			 "mmap rw of a file opened %#x: %p errno %d", f->oflags, c, errno);
		return;
	}
	FZ_CHECK(c != MAP_FAILED || errno == ENOMEM, "mmap cmd ring: %s", strerror(errno));
	if (c == MAP_FAILED)
		return;
	q = mmap(NULL, f->cq_size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, NICOFF_MMAP_CQ_RING);
	FZ_CHECK(q != MAP_FAILED || errno == ENOMEM, "mmap cq ring: %s", strerror(errno));
	if (q == MAP_FAILED) {
		munmap(c, f->cmd_size);
		return;
	}
	memset(&f->p, 0, sizeof(f->p));
	f->p.fd = f->fd;
	f->p.card = f->card;
	f->p.cmd_hdr = c;
	f->p.cq_hdr = q;
	f->p.cmds = (struct nicoff_cmd *)((char *)c + NICOFF_RING_HDR_SIZE);
	f->p.cqes = (struct nicoff_cqe *)((char *)q + NICOFF_RING_HDR_SIZE);
	f->p.cmd_entries = f->cmd_entries;
	f->p.cq_entries = f->cq_entries;
	f->p.po.cmd_size = f->cmd_size;
	f->p.po.cq_size = f->cq_size;
	f->mapped = true;
	FZ_COUNT(maps, 2);
	FZ_CHECK(f->p.cmd_hdr->entries == f->cmd_entries && f->p.cq_hdr->entries == f->cq_entries,
		 "ring headers say %u/%u entries, asked %u/%u", f->p.cmd_hdr->entries,
		 f->p.cq_hdr->entries, f->cmd_entries, f->cq_entries);
	FZ_CHECK(!(nt_cmd_flags(&f->p) & ~NICOFF_RING_NEED_WAKEUP) && !nt_cq_flags(&f->p),
		 "fresh rings with flags %#x/%#x", nt_cmd_flags(&f->p), nt_cq_flags(&f->p));
	f->p.cmd_prod = nt_load_acquire(&f->p.cmd_hdr->producer);
	f->p.cq_cons = nt_load_acquire(&f->p.cq_hdr->consumer);
	/*
	 * The card may have posted a REMOTE_ACCESS_ERROR already (any worker
	 * may PUT to this port number): checked when reaped.
	 */
	FZ_CHECK(f->p.cmd_prod == 0 && f->p.cq_cons == 0 && f->p.cmd_hdr->consumer == 0 &&
		 f->p.cq_hdr->producer <= f->cq_entries,
		 "fresh rings with indices %u/%u/%u/%u", f->p.cmd_prod, f->p.cmd_hdr->consumer,
		 f->p.cq_hdr->producer, f->p.cq_cons);
}

static void fz_act_open(void)
{
	struct fz_file *f = fz_free_slot();
	char path[64];
	int card, fd, oflags = O_RDWR;

	if (!f) {
		fz_close(fz_pick(false, false), one_in(2));
		return;
	}
	card = one_in(12) ? (int)(w.q.num_cards + rn(3)) : (int)rn(w.q.num_cards);
	if (one_in(10))
		oflags = O_RDONLY;
	else if (one_in(10))
		oflags = O_WRONLY;
	if (one_in(4))
		oflags |= O_NONBLOCK;
	snprintf(path, sizeof(path), "/dev/nicoff%d", card);
	fd = open(path, oflags | O_CLOEXEC);
	if ((uint32_t)card >= w.q.num_cards) {
		FZ_CHECK(fd < 0 && errno == ENOENT, "open %s: fd %d errno %d", path, fd, errno);
		return;
	}
	FZ_CHECK(fd >= 0 || errno == EMFILE || errno == ENFILE || errno == ENOMEM,
		 "open %s: %s", path, strerror(errno));
	if (fd < 0)
		return;
	memset(f, 0, offsetof(struct fz_file, op));
	memset(f->done, 0, sizeof(f->done));
	f->fd = fd;
	f->card = card;
	f->oflags = oflags;
	f->honest = true;
	f->idx_honest = true;
	f->mr_known = true;
	f->serial = (uint32_t)rnd() | 1;
}

/* ------------------------------------------------------ ioctl arguments -- */

enum fz_arg { A_GOOD, A_MISALIGNED, A_NULL, A_HOLE, A_KERNEL, A_STRADDLE, A_RO, A_ALLONES,
	      A_KINDS };

static bool fz_arg_bad(enum fz_arg k)
{
	return k == A_NULL || k == A_HOLE || k == A_KERNEL || k == A_STRADDLE || k == A_ALLONES;
}

static enum fz_arg fz_pick_arg(void)
{
	return one_in(3) ? (enum fz_arg)rn(A_KINDS) : one_in(3) ? A_MISALIGNED : A_GOOD;
}

/*
 * Where an ioctl argument of len bytes, contents src, goes for kind k:
 * scratch memory (aligned or not), a read-only copy, or somewhere the
 * kernel cannot read it whole.
 */
static void *fz_place(enum fz_arg k, const void *src, size_t len)
{
	uint8_t *p;

	switch (k) {
	case A_GOOD:
		p = w.scratch;
		break;
	case A_MISALIGNED:
		p = w.scratch + 1 + rn(7);
		break;
	case A_NULL:
		return NULL;
	case A_HOLE:
		return w.hole + rn(PAGE - len);
	case A_KERNEL:
		return FZ_KPTR;
	case A_ALLONES:
		return (void *)~0ul;
	case A_STRADDLE:
		/* The last bytes of the buffer and the first of its guard page. */
		p = w.guard - 1 - rn(len > 1 ? len - 1 : 1);
		memcpy(p, src, w.guard - p);
		return p;
	case A_RO:
		mprotect(w.ro, PAGE, PROT_READ | PROT_WRITE);
		p = w.ro + rn(PAGE - len);
		memcpy(p, src, len);
		mprotect(w.ro, PAGE, PROT_READ);
		return p;
	default:
		return NULL;
	}
	memcpy(p, src, len);
	return p;
}

/* ----------------------------------------------------------- PORT_OPEN -- */

static uint32_t fz_pick_entries(void)
{
	uint32_t maxl = fz_log2(w.q.max_ring_entries);

	switch (rn(10)) {
	case 0:
		return (uint32_t)fz_boundary();
	case 1:
		return w.q.max_ring_entries << rn(2);
	case 2:
		return 3 + 2 * rn(8);
	default:
		return 2u << rn(maxl < 10 ? maxl : 10);
	}
}

/* What PORT_OPEN may answer, in the order the kernel checks. */
static uint64_t fz_po_expect(const struct nicoff_port_open *po, enum fz_arg k, bool has_port)
{
	uint32_t maxr = w.q.max_ring_entries, c = po->cmd_entries, q = po->cq_entries;
	uint64_t m;

	if (fz_arg_bad(k))
		return E(EFAULT);
	if (has_port)
		return E(EBUSY);
	if (po->abi_version != NICOFF_ABI_VERSION)
		return E(EPROTO);
	if (po->flags || po->reserved0 || po->cmd_offset || po->cmd_size || po->cq_offset ||
	    po->cq_size || po->reserved[0] || po->reserved[1] || po->reserved[2] ||
	    po->reserved[3])
		return E(EINVAL);
	if (c < 2 || c > maxr || (c & (c - 1)) || q < c || q > maxr || (q & (q - 1)))
		return E(EINVAL);
	if (po->port != NICOFF_PORT_ANY && po->port >= w.q.max_ports)
		return E(EINVAL);
	m = E(ENOMEM) | (po->port == NICOFF_PORT_ANY ? E(EBUSY) : E(EADDRINUSE));
	return m | (k == A_RO ? E(EFAULT) : E(0));
}

static uint64_t fz_ring_size(uint32_t entries)
{
	return (NICOFF_RING_HDR_SIZE + (uint64_t)entries * 64 + PAGE - 1) & ~(PAGE - 1);
}

static void fz_port_opened(struct fz_file *f, const struct nicoff_port_open *req,
			   const struct nicoff_port_open *out)
{
	FZ_CHECK(out->port < w.q.max_ports &&
		 (req->port == NICOFF_PORT_ANY || out->port == req->port),
		 "PORT_OPEN gave port %u for %#x", out->port, req->port);
	FZ_CHECK(out->cmd_offset == NICOFF_MMAP_CMD_RING && out->cq_offset == NICOFF_MMAP_CQ_RING &&
		 out->cmd_size == fz_ring_size(req->cmd_entries) &&
		 out->cq_size == fz_ring_size(req->cq_entries),
		 "PORT_OPEN answered offsets %#llx/%#llx sizes %llu/%llu for %u/%u entries",
		 (unsigned long long)out->cmd_offset, (unsigned long long)out->cq_offset,
		 (unsigned long long)out->cmd_size, (unsigned long long)out->cq_size,
		 req->cmd_entries, req->cq_entries);
	f->port = true;
	f->port_num = out->port;
	f->cmd_entries = req->cmd_entries;
	f->cq_entries = req->cq_entries;
	f->cmd_size = out->cmd_size;
	f->cq_size = out->cq_size;
}

static void fz_act_port_open(void)
{
	struct fz_file *f = fz_pick(false, false);
	struct nicoff_port_open po, out;
	enum fz_arg k = fz_pick_arg();
	uint64_t allowed;
	void *arg;
	int ret;

	if (!f)
		return;
	memset(&po, 0, sizeof(po));
	po.abi_version = one_in(15) ? (uint32_t)fz_boundary() : NICOFF_ABI_VERSION;
	if (one_in(3))
		po.port = rn(w.q.max_ports + 2);
	else if (one_in(10))
		po.port = (uint32_t)fz_boundary();
	else
		po.port = NICOFF_PORT_ANY;
	po.cmd_entries = one_in(3) ? fz_pick_entries() : 2u << rn(6);
	po.cq_entries = one_in(4) ? fz_pick_entries() : po.cmd_entries << rn(3);
	if (po.cq_entries > w.q.max_ring_entries && !one_in(4))
		po.cq_entries = po.cmd_entries;
	if (one_in(15))
		po.flags = (uint32_t)rnd() | 1;
	if (one_in(20))
		po.reserved0 = (uint32_t)rnd() | 1;
	if (one_in(20))
		po.cmd_size = fz_boundary() | 1;
	if (one_in(20))
		po.cq_offset = fz_boundary() | 1;
	if (one_in(20))
		po.reserved[rn(4)] = rnd() | 1;
	allowed = fz_po_expect(&po, k, f->port);
	arg = fz_place(k, &po, sizeof(po));
	ret = nt_ioctl(f->fd, NICOFF_IOC_PORT_OPEN, arg);
	FZ_COUNT(port_opens, 1);
	FZ_EXPECT(ret, allowed, "PORT_OPEN (arg kind %d, abi %u, port %#x, entries %u/%u)", k,
		  po.abi_version, po.port, po.cmd_entries, po.cq_entries);
	if (ret)
		return;
	memcpy(&out, arg, sizeof(out));
	fz_port_opened(f, &po, &out);
	if (!one_in(4))
		fz_map_rings(f);
}

/* -------------------------------------------------------------- REG_MR -- */

static bool fz_has(const struct fz_file *f, uint32_t h, unsigned int *idx)
{
	unsigned int i;

	for (i = 0; i < f->nmr; i++) {
		if (f->mrs[i].h == h) {
			if (idx)
				*idx = i;
			return true;
		}
	}
	return false;
}

/* Pages of [addr, end), stored in *n too. */
static uint64_t fz_npages(uint64_t addr, uint64_t end, uint64_t *n)
{
	*n = (((end + PAGE - 1) & ~(PAGE - 1)) - (addr & ~(PAGE - 1))) / PAGE;
	return *n;
}

enum fz_range { R_BUF, R_RO, R_HOLE, R_NULL, R_KERNEL, R_WRAP, R_HUGE, R_CROSS, R_RING, R_KINDS };

/* REG_MR with every field chosen at random, and what it may answer. */
static void fz_act_reg(void)
{
	struct fz_file *f = fz_pick(false, false), *rf;
	struct nicoff_reg_mr mr, out;
	enum fz_range r = one_in(2) ? R_BUF : (enum fz_range)rn(R_KINDS);
	enum fz_arg k = one_in(6) ? fz_pick_arg() : A_GOOD;
	uint64_t allowed, end, npages, off;
	bool writable, garbage = false;
	void *arg;
	int ret;

	if (!f)
		return;
	memset(&mr, 0, sizeof(mr));
	mr.access = one_in(12) ? (uint32_t)fz_boundary() : rn(16);
	writable = mr.access & (NICOFF_ACCESS_LOCAL_WRITE | NICOFF_ACCESS_REMOTE_WRITE |
				NICOFF_ACCESS_REMOTE_ATOMIC);
	switch (r) {
	case R_BUF:
		off = one_in(2) ? rn(FZ_BUF / PAGE) * PAGE : rn(FZ_BUF);
		mr.addr = (uintptr_t)w.buf + off;
		mr.length = one_in(3) ? 1 + rn(FZ_BUF - off) : 1 + rn(4 * PAGE < FZ_BUF - off ?
								4 * PAGE : FZ_BUF - off);
		break;
	case R_RO:
		mr.addr = (uintptr_t)w.ro + rn(4 * PAGE);
		mr.length = 1 + rn((uintptr_t)w.ro + 4 * PAGE - mr.addr);
		break;
	case R_HOLE:
		mr.addr = (uintptr_t)w.hole + rn(PAGE);
		mr.length = 1 + rn(PAGE);
		break;
	case R_NULL:
		mr.addr = rn(PAGE);
		mr.length = 1 + rn(PAGE);
		break;
	case R_KERNEL:
		mr.addr = (uintptr_t)FZ_KPTR + rn(PAGE);
		mr.length = 1 + rn(PAGE);
		break;
	case R_WRAP:
		mr.addr = (uintptr_t)w.buf;
		mr.length = ~0ull - rn(2 * PAGE);
		break;
	case R_HUGE:
		/* More pages than the machine has. */
		mr.addr = (uintptr_t)w.buf;
		mr.length = (w.totalram + 1 + rn(1u << 20)) * PAGE;
		break;
	case R_CROSS:
		/* Into the guard page after the buffer. */
		mr.addr = (uintptr_t)w.guard - 1 - rn(4 * PAGE);
		mr.length = (uintptr_t)w.guard - mr.addr + 1 + rn(PAGE);
		break;
	case R_RING:
		rf = fz_pick(true, true);
		if (!rf)
			return;
		mr.addr = (uintptr_t)rf->p.cmd_hdr + rn(rf->cmd_size);
		mr.length = 1 + rn((uintptr_t)rf->p.cmd_hdr + rf->cmd_size - mr.addr);
		/* The card may write that ring through the region: no promises. */
		rf->honest = false;
		f->honest = false;
		break;
	default:
		return;
	}
	if (one_in(15)) {
		garbage = true;
		switch (rn(4)) {
		case 0:
			mr.reserved0 = (uint32_t)rnd() | 1;
			break;
		case 1:
			mr.handle = (uint32_t)rnd() | 1;
			break;
		case 2:
			mr.rkey = (uint32_t)rnd() | 1;
			break;
		default:
			mr.reserved[rn(2)] = rnd() | 1;
			break;
		}
	}
	if (one_in(20))
		mr.length = 0;

	/* The kernel's checks, in its order. */
	npages = 0;
	if (!f->port)
		allowed = E(ENOTCONN);
	else if (f->errored)
		allowed = E(EIO);
	else if (fz_arg_bad(k))
		allowed = E(EFAULT) | (f->honest ? 0 : E(EIO));
	else if (garbage || !mr.length || (mr.access & ~NICOFF_ACCESS_ALL))
		allowed = E(EINVAL);
	else if (__builtin_add_overflow(mr.addr, mr.length, &end) || end > FZ_TASK_SIZE)
		allowed = E(EFAULT);
	else if (fz_npages(mr.addr, end, &npages) > w.totalram)
		allowed = E(ENOMEM);
	else if (f->mr_known && f->nmr >= w.q.max_mrs)
		allowed = E(ENOSPC);
	else if (!w.root && npages > w.memlock_pages)
		allowed = E(ENOMEM);
	else if (r == R_BUF || (r == R_RO && !writable))
		allowed = E(0);
	else if (r == R_RING)
		allowed = E(0, EFAULT);
	else
		allowed = E(EFAULT);
	if (f->port && !f->errored && !fz_arg_bad(k)) {
		if (!f->honest)
			allowed |= E(EIO);
		if (!f->mr_known)
			allowed |= E(ENOSPC);
		/*
		 * Charged before pinned: with the other regions of this
		 * process, any range that gets that far may pass the limit.
		 */
		if (!w.root && (allowed & E(0, EFAULT)) && npages)
			allowed |= E(ENOMEM);
		if (k == A_RO && (allowed & E(0)))
			allowed = (allowed & ~E(0)) | E(EFAULT);
	}
	arg = fz_place(k, &mr, sizeof(mr));
	ret = nt_ioctl(f->fd, NICOFF_IOC_REG_MR, arg);
	FZ_COUNT(regs, 1);
	FZ_EXPECT(ret, allowed,
		  "REG_MR (arg kind %d, range kind %d, addr %#llx len %#llx access %#x, %llu pages)",
		  k, r, (unsigned long long)mr.addr, (unsigned long long)mr.length, mr.access,
		  (unsigned long long)npages);
	if (ret)
		return;
	FZ_COUNT(regs_ok, 1);
	memcpy(&out, arg, sizeof(out));
	FZ_CHECK(out.handle != 0, "REG_MR returned handle 0");
	f->epoch++;
	if (f->mr_known && fz_has(f, out.handle, NULL))
		fz_die(__LINE__, "REG_MR returned handle %u, which is registered already",
		       out.handle);
	if (f->nmr < FZ_MRS) {
		f->mrs[f->nmr].h = out.handle;
		f->mrs[f->nmr].rkey = out.rkey;
		f->mrs[f->nmr].access = mr.access;
		f->mrs[f->nmr].len = mr.length;
		f->nmr++;
	} else {
		/* No room to remember it: forget it for good. */
		FZ_CHECK(nt_dereg_mr(f->fd, out.handle) == 0, "DEREG_MR of a fresh handle");
	}
}

static void fz_act_dereg(void)
{
	struct fz_file *f = fz_pick(false, false);
	struct nicoff_dereg_mr d;
	enum fz_arg k = one_in(8) ? fz_pick_arg() : A_GOOD;
	unsigned int idx = 0;
	uint64_t allowed;
	bool live;
	int ret;

	if (!f)
		return;
	memset(&d, 0, sizeof(d));
	switch (rn(6)) {
	case 0:
		d.handle = f->stale[rn(4)];
		break;
	case 1:
		d.handle = (uint32_t)fz_boundary();
		break;
	default:
		d.handle = f->nmr ? f->mrs[rn(f->nmr)].h : 0;
		break;
	}
	if (one_in(15))
		d.reserved = (uint32_t)rnd() | 1;
	live = fz_has(f, d.handle, &idx);
	if (!f->port)
		allowed = E(ENOTCONN);
	else if (fz_arg_bad(k))
		allowed = E(EFAULT);
	else if (d.reserved)
		allowed = E(EINVAL);
	else if (!f->mr_known)
		allowed = E(0, ENOENT);
	else
		allowed = live ? E(0) : E(ENOENT);
	ret = nt_ioctl(f->fd, NICOFF_IOC_DEREG_MR, fz_place(k, &d, sizeof(d)));
	FZ_COUNT(deregs, 1);
	FZ_EXPECT(ret, allowed, "DEREG_MR (arg kind %d) of handle %u (%s)", k, d.handle,
		  live ? "registered" : "not registered");
	if (ret)
		return;
	f->epoch++;
	f->stale[rn(4)] = d.handle;
	if (live)
		f->mrs[idx] = f->mrs[--f->nmr];
}

/* ------------------------------------------------------ ring commands -- */

static uint32_t fz_pick_mr(const struct fz_file *f)
{
	switch (rn(10)) {
	case 0:
		return 0;
	case 1:
		return f->stale[rn(4)];
	case 2:
		return (uint32_t)fz_boundary();
	default:
		return f->nmr ? f->mrs[rn(f->nmr)].h : 1 + rn(4);
	}
}

static uint32_t fz_pick_rkey(const struct fz_file *f)
{
	if (f->nmr && !one_in(4))
		return f->mrs[rn(f->nmr)].rkey;
	return (uint32_t)fz_boundary();
}

static uint64_t fz_pick_off(void)
{
	switch (rn(8)) {
	case 0:
		return fz_boundary();
	case 1:
		return rn(64) * 8;
	default:
		return rn(2 * PAGE);
	}
}

static uint64_t fz_pick_len(void)
{
	switch (rn(10)) {
	case 0:
		return fz_boundary();
	case 1:
		return rn(FZ_BUF + 2);
	case 2:
		return 0;
	default:
		return rn(3 * PAGE);
	}
}

static void fz_pick_dst(const struct fz_file *f, uint32_t *card, uint32_t *port)
{
	switch (rn(6)) {
	case 0:
		*card = one_in(2) ? w.q.num_cards : (uint32_t)fz_boundary();
		*port = rn(w.q.max_ports);
		break;
	case 1:
		*card = rn(w.q.num_cards);
		*port = one_in(2) ? w.q.max_ports : (uint32_t)fz_boundary();
		break;
	case 2:
		*card = rn(w.q.num_cards);
		*port = rn(w.q.max_ports);
		break;
	default:
		/* Ourselves: the operation does something. */
		*card = f->card;
		*port = f->port_num;
		break;
	}
}

/* A random command, fields chosen to hit both the rules and the work. */
static void fz_make_cmd(const struct fz_file *f, struct nicoff_cmd *c)
{
	unsigned int r = rn(100), i;

	memset(c, 0, sizeof(*c));
	if (r < 3) {
		for (i = 0; i < sizeof(*c) / 8; i++)
			((uint64_t *)c)[i] = rnd();
		return;
	}
	if (r < 18)
		c->opcode = NICOFF_OP_NOP;
	else if (r < 33)
		c->opcode = NICOFF_OP_COPY;
	else if (r < 93)
		c->opcode = NICOFF_OP_SEND + rn(NICOFF_OP_MAX - NICOFF_OP_SEND);
	else
		c->opcode = NICOFF_OP_MAX + rn(256 - NICOFF_OP_MAX);
	switch (c->opcode) {
	case NICOFF_OP_NOP:
		if (one_in(8))
			c->raw[rn(6)] = rnd() | 1;
		break;
	case NICOFF_OP_COPY:
		c->copy.src_mr = fz_pick_mr(f);
		c->copy.dst_mr = fz_pick_mr(f);
		c->copy.src_off = fz_pick_off();
		c->copy.dst_off = fz_pick_off();
		c->copy.len = fz_pick_len();
		if (one_in(16))
			c->copy.reserved[rn(2)] = rnd() | 1;
		break;
	case NICOFF_OP_SEND:
		fz_pick_dst(f, &c->send.dst_card, &c->send.dst_port);
		c->send.mr = fz_pick_mr(f);
		c->send.off = fz_pick_off();
		c->send.len = fz_pick_len();
		c->send.msg_tag = rnd();
		if (one_in(16))
			c->send.reserved1 = rnd() | 1;
		break;
	case NICOFF_OP_RECV:
		fz_pick_dst(f, &c->recv.src_card, &c->recv.src_port);
		if (one_in(2))
			c->recv.src_card = NICOFF_ANY;
		if (one_in(2))
			c->recv.src_port = NICOFF_ANY;
		c->recv.mr = fz_pick_mr(f);
		c->recv.off = fz_pick_off();
		c->recv.len = fz_pick_len();
		c->recv.tag = rnd();
		c->recv.tag_mask = one_in(2) ? 0 : rnd();
		break;
	case NICOFF_OP_PUT:
	case NICOFF_OP_GET:
		fz_pick_dst(f, &c->rdma.dst_card, &c->rdma.dst_port);
		c->rdma.rkey = fz_pick_rkey(f);
		c->rdma.mr = fz_pick_mr(f);
		c->rdma.remote_off = fz_pick_off();
		c->rdma.off = fz_pick_off();
		c->rdma.len = fz_pick_len();
		break;
	case NICOFF_OP_FETCH_ADD:
	case NICOFF_OP_FETCH_WRITE:
	case NICOFF_OP_COMPARE_SWAP:
		fz_pick_dst(f, &c->atomic.dst_card, &c->atomic.dst_port);
		c->atomic.rkey = fz_pick_rkey(f);
		c->atomic.width = one_in(6) ? (uint32_t)fz_boundary() : 4u << rn(2);
		c->atomic.remote_off = one_in(4) ? fz_pick_off() : rn(512) * 8;
		c->atomic.operand = one_in(2) ? rn(100) : rnd();
		if (c->opcode == NICOFF_OP_COMPARE_SWAP || one_in(10))
			c->atomic.compare = one_in(2) ? 0 : rnd();
		break;
	case NICOFF_OP_GROUP_CREATE:
		/* Small groups only: bounding huge ones is another change's. */
		c->group.group_id = rn(8);
		c->group.size = one_in(10) ? 0 : 1 + rn(8);
		c->group.rank = one_in(10) ? c->group.size + rn(3) : rn(c->group.size + 1);
		c->group.mr = fz_pick_mr(f);
		c->group.off = one_in(4) ? fz_pick_off() : rn(64) * 8;
		c->group.algorithm = one_in(3) ? NICOFF_BARRIER_DEFAULT :
				     rn(NICOFF_BARRIER_MAX + 2);
		c->group.param = one_in(2) ? 0 : rn(10);
		break;
	case NICOFF_OP_GROUP_DESTROY:
	case NICOFF_OP_BARRIER:
		c->group.group_id = rn(10);
		if (one_in(10))
			c->group.size = 1 + rn(8);
		break;
	default:
		for (i = 0; i < 6; i++)
			c->raw[i] = one_in(2) ? 0 : rnd();
		break;
	}
	if (one_in(25))
		c->flags = (uint8_t)(rnd() | 1);
	if (one_in(40))
		c->reserved0 = (uint16_t)(rnd() | 1);
	if (one_in(40))
		c->reserved1 = (uint32_t)(rnd() | 1);
}

static bool fz_nonzero(const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i])
			return true;
	return false;
}

static bool fz_range_bad(uint64_t off, uint64_t len, uint64_t size)
{
	return off + len < off || off + len > size;
}

/* What a command may complete with, given the region table it was posted with. */
static uint64_t fz_cmd_expect(const struct fz_file *f, const struct nicoff_cmd *c, bool exact)
{
	const struct nicoff_op_copy *op = &c->copy;
	unsigned int si, di;
	bool s, d;

	if (c->flags || c->reserved0 || c->reserved1)
		return E(EINVAL);
	switch (c->opcode) {
	case NICOFF_OP_NOP:
		return fz_nonzero(c->raw, sizeof(c->raw)) ? E(EINVAL) : E(0);
	case NICOFF_OP_COPY:
		if (op->reserved[0] || op->reserved[1])
			return E(EINVAL);
		if (!exact || !f->mr_known)
			return E(0, ENOENT, ERANGE, EACCES);
		s = fz_has(f, op->src_mr, &si);
		d = fz_has(f, op->dst_mr, &di);
		if (!s || !d)
			return E(ENOENT);
		if (fz_range_bad(op->src_off, op->len, f->mrs[si].len))
			return E(ERANGE);
		if (!(f->mrs[di].access & NICOFF_ACCESS_LOCAL_WRITE))
			return E(EACCES);
		if (fz_range_bad(op->dst_off, op->len, f->mrs[di].len))
			return E(ERANGE);
		return E(0);
	default:
		if (c->opcode >= NICOFF_OP_SEND && c->opcode < NICOFF_OP_MAX)
			return fz_fw_set();
		return E(EOPNOTSUPP);
	}
}

/* A completion of a port used by the rules must be one we are owed. */
static void fz_check_cqe(struct fz_file *f, const struct nicoff_cqe *e)
{
	uint64_t allowed;
	uint32_t seq;

	FZ_COUNT(cqes, 1);
	if (!f->honest)
		return;
	/*
	 * Our tags carry the file's serial (never 0) in their high half; the
	 * card's own completions have tag 0.  (A command posted with opcode
	 * 0xfe or 0xff completes with that opcode too: only the tag tells.)
	 */
	if ((e->tag >> 32) != f->serial) {
		FZ_CHECK(e->opcode != NICOFF_OP_PORT_ERROR,
			 "PORT_ERROR completion (status %d) on a port that kept the rules",
			 e->status);
		/* A peer's bad PUT or GET: any worker may send one. */
		FZ_CHECK(e->opcode == NICOFF_OP_REMOTE_ACCESS_ERROR && !e->tag &&
			 e->status < 0 && e->status > -4096,
			 "completion with a tag never posted: %#llx (opcode %u, status %d)",
			 (unsigned long long)e->tag, e->opcode, e->status);
		return;
	}
	seq = (uint32_t)e->tag;
	FZ_CHECK(seq < f->seq,
		 "completion with a tag never posted: %#llx (opcode %u, status %d; %u posted)",
		 (unsigned long long)e->tag, e->opcode, e->status, f->seq);
	FZ_CHECK(!f->done[seq], "command %u (opcode %u) completed twice", seq, f->op[seq]);
	f->done[seq] = 1;
	FZ_CHECK(e->opcode == f->op[seq], "command %u: opcode %u posted, completion says %u", seq,
		 f->op[seq], e->opcode);
	allowed = f->allowed[seq];
	/* A region registered or deregistered since: any COPY outcome. */
	if (f->ep[seq] != f->epoch && e->opcode == NICOFF_OP_COPY && allowed != E(EINVAL))
		allowed = E(0, ENOENT, ERANGE, EACCES);
	FZ_EXPECT(e->status, allowed, "completion of command %u (opcode %u)", seq, e->opcode);
}

static void fz_reap(struct fz_file *f)
{
	uint32_t n, i;

	if (!f->mapped)
		return;
	n = nt_load_acquire(&f->p.cq_hdr->producer) - f->p.cq_cons;
	if (f->honest)
		FZ_CHECK(n <= f->cq_entries, "completion producer %u, consumer %u, %u entries",
			 f->p.cq_hdr->producer, f->p.cq_cons, f->cq_entries);
	else if (n > f->cq_entries)
		n = f->cq_entries;
	for (i = 0; i < n; i++) {
		struct nicoff_cqe e = f->p.cqes[(f->p.cq_cons + i) & (f->cq_entries - 1)];

		fz_check_cqe(f, &e);
	}
	f->p.cq_cons += n;
	nt_store_release(&f->p.cq_hdr->consumer, f->p.cq_cons);
	if (f->honest)
		FZ_CHECK(!(nt_cq_flags(&f->p) & NICOFF_RING_ERROR),
			 "port in the error state though it kept the rules");
	if (n && f->idx_honest && nt_cmd_pending(&f->p) && !f->errored) {
		int ret = nt_doorbell(&f->p);

		FZ_CHECK(ret >= 0, "doorbell: %d", ret);
	}
}

static void fz_act_reap(void)
{
	struct fz_file *f = fz_pick(true, true);
	struct pollfd pfd;

	if (!f)
		return;
	pfd.fd = f->fd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	FZ_CHECK(poll(&pfd, 1, rn(20)) >= 0 || errno == EINTR, "poll: %s", strerror(errno));
	FZ_CHECK(!(pfd.revents & POLLNVAL), "poll on an open port: POLLNVAL");
	if (f->honest)
		FZ_CHECK(!(pfd.revents & POLLERR), "poll: POLLERR on a port that kept the rules");
	fz_reap(f);
}

static void fz_act_submit(void)
{
	struct fz_file *f = fz_pick(true, true);
	uint32_t space, n, i;
	int ret;

	if (!f || f->errored || !f->idx_honest)
		return;
	space = nt_cmd_space(&f->p);
	if (space > f->cmd_entries) {
		FZ_CHECK(!f->honest, "command consumer %u ahead of our producer %u",
			 f->p.cmd_hdr->consumer, f->p.cmd_prod);
		return;
	}
	n = 1 + rn(32);
	if (n > space)
		n = space;
	if (n > FZ_TRACK - f->seq)
		n = FZ_TRACK - f->seq;
	for (i = 0; i < n; i++) {
		struct nicoff_cmd c;
		uint32_t seq = f->seq++;

		fz_make_cmd(f, &c);
		c.tag = (uint64_t)f->serial << 32 | seq;
		f->op[seq] = c.opcode;
		f->allowed[seq] = fz_cmd_expect(f, &c, true);
		f->ep[seq] = f->epoch;
		nt_cmd_write(&f->p, &c);
	}
	if (!n)
		goto reap;
	FZ_COUNT(cmds, n);
	nt_publish(&f->p);
	if (one_in(4)) {
		FZ_CHECK(nt_kick(f->fd) == 0, "KICK on a port: %s", strerror(errno));
	} else {
		ret = nt_doorbell(&f->p);
		FZ_CHECK(ret >= 0, "doorbell: %d", ret);
	}
	/* Garbage in the free slots after the producer is nobody's business. */
	if (one_in(3) && f->honest && nt_cmd_space(&f->p) <= f->cmd_entries) {
		uint32_t free_slots = nt_cmd_space(&f->p), j;

		for (j = 0; j < free_slots && j < 4; j++)
			nt_fill_pattern(&f->p.cmds[(f->p.cmd_prod + j) & (f->cmd_entries - 1)],
					sizeof(struct nicoff_cmd), rnd());
	}
reap:
	if (one_in(2))
		fz_reap(f);
}

static bool fz_wait_error(struct fz_file *f, int ms)
{
	uint64_t end = nt_now_ns() + ms * 1000000ull;

	do {
		struct pollfd pfd = { .fd = f->fd, .events = POLLIN };

		if (poll(&pfd, 1, 50) > 0 && (pfd.revents & POLLERR))
			return true;
	} while (nt_now_ns() < end);
	return false;
}

/* Everything abi.md promises about a port put in the error state. */
static void fz_check_error_state(struct fz_file *f, const char *how)
{
	struct nicoff_reg_mr mr;
	uint64_t end;
	int ret;

	FZ_CHECK(fz_wait_error(f, 15000), "%s: no error state after 15 s", how);
	/*
	 * The card raises POLLERR (port->error) a moment before it sets the
	 * flags: give it a second.
	 */
	end = nt_now_ns() + 1000000000ull;
	while (!((nt_cq_flags(&f->p) & NICOFF_RING_ERROR) &&
		 (nt_cmd_flags(&f->p) & NICOFF_RING_ERROR)) && nt_now_ns() < end)
		nt_sleep_ms(1);
	FZ_CHECK((nt_cq_flags(&f->p) & NICOFF_RING_ERROR) &&
		 (nt_cmd_flags(&f->p) & NICOFF_RING_ERROR),
		 "%s: error state without NICOFF_RING_ERROR 1 s after POLLERR (flags %#x/%#x)",
		 how, nt_cmd_flags(&f->p), nt_cq_flags(&f->p));
	memset(&mr, 0, sizeof(mr));
	mr.addr = (uintptr_t)w.buf;
	mr.length = PAGE;
	ret = nt_ioctl(f->fd, NICOFF_IOC_REG_MR, &mr);
	FZ_EXPECT(ret, E(EIO), "%s: REG_MR on a port in the error state", how);
	FZ_CHECK(nt_kick(f->fd) == 0, "%s: KICK on a port in the error state: %s", how,
		 strerror(errno));
	f->errored = true;
	f->honest = false;
	FZ_COUNT(forced_errors, 1);
}

/* Garbage indices and headers; some certain to break the port. */
static void fz_act_garbage(void)
{
	struct fz_file *f = fz_pick(true, true);
	struct nicoff_ring_hdr *h;
	uint32_t v, *word;
	struct nicoff_cmd c;

	if (!f)
		return;
	switch (rn(6)) {
	case 0:
		if (!f->honest || !f->idx_honest || f->errored)
			break;
		/* More than entries ahead of anything the card consumed. */
		v = f->p.cmd_prod + f->cmd_entries + 1 + rn(1u << 30);
		nt_store_release(&f->p.cmd_hdr->producer, v);
		FZ_CHECK(nt_kick(f->fd) == 0, "KICK: %s", strerror(errno));
		f->idx_honest = false;
		fz_check_error_state(f, "command producer too far ahead");
		return;
	case 1:
		if (!f->honest || !f->idx_honest || f->errored || !nt_cmd_space(&f->p) ||
		    f->seq >= FZ_TRACK)
			break;
		/* Claims completions the card never produced, then a command. */
		v = f->p.cq_cons + f->cq_entries + 1 + rn(1u << 30);
		nt_store_release(&f->p.cq_hdr->consumer, v);
		nicoff_prep_nop(&c, (uint64_t)f->serial << 32 | f->seq);
		f->op[f->seq] = NICOFF_OP_NOP;
		f->allowed[f->seq] = E(0);
		f->ep[f->seq++] = f->epoch;
		nt_cmd_write(&f->p, &c);
		nt_publish(&f->p);
		FZ_CHECK(nt_kick(f->fd) == 0, "KICK: %s", strerror(errno));
		f->idx_honest = false;
		fz_check_error_state(f, "completion consumer ahead of the producer");
		return;
	default:
		break;
	}
	/* Any word of either header, or any index, at random. */
	h = one_in(2) ? f->p.cmd_hdr : f->p.cq_hdr;
	switch (rn(4)) {
	case 0:
		word = &h->producer;
		break;
	case 1:
		word = &h->consumer;
		break;
	case 2:
		word = &h->flags;
		break;
	default:
		word = (uint32_t *)h + rn(NICOFF_RING_HDR_SIZE / 4);
		break;
	}
	v = one_in(2) ? (uint32_t)fz_boundary() : *word + rn(2 * f->cmd_entries + 3) - 1;
	nt_store_release(word, v);
	f->honest = false;
	f->idx_honest = false;
	if (one_in(2))
		nt_fill_pattern(&f->p.cqes[rn(f->cq_entries)], sizeof(struct nicoff_cqe), rnd());
	FZ_CHECK(nt_kick(f->fd) == 0, "KICK: %s", strerror(errno));
}

/* ---------------------------------------------------------------- mmap -- */

static void fz_act_mmap(void)
{
	struct fz_file *f = fz_pick(false, false);
	static const int prots[] = { PROT_READ, PROT_READ | PROT_WRITE, PROT_WRITE, PROT_NONE,
				     PROT_READ | PROT_EXEC };
	uint64_t off, want = 0;
	size_t len;
	int prot, flags;
	bool shared, ok, must;
	void *m;

	if (!f)
		return;
	switch (rn(8)) {
	case 0:
		off = PAGE * (1 + rn(4));
		break;
	case 1:
		off = NICOFF_MMAP_CQ_RING + (one_in(2) ? PAGE : -PAGE);
		break;
	case 2:
		off = fz_boundary() & ~(PAGE - 1);
		break;
	default:
		off = one_in(2) ? NICOFF_MMAP_CMD_RING : NICOFF_MMAP_CQ_RING;
		break;
	}
	if (f->port && off == NICOFF_MMAP_CMD_RING)
		want = f->cmd_size;
	else if (f->port && off == NICOFF_MMAP_CQ_RING)
		want = f->cq_size;
	switch (rn(8)) {
	case 0:
		len = PAGE * (1 + rn(8));
		break;
	case 1:
		len = want + PAGE;
		break;
	case 2:
		len = want > PAGE ? want - PAGE : 1;
		break;
	case 3:
		len = 1ul << (20 + rn(20));
		break;
	default:
		len = want ? want - rn(PAGE) : PAGE;
		break;
	}
	prot = one_in(3) ? prots[rn(ARRAY_LEN(prots))] : PROT_READ | PROT_WRITE;
	switch (rn(8)) {
	case 0:
		flags = MAP_PRIVATE;
		break;
	case 1:
		flags = MAP_SHARED | MAP_POPULATE;
		break;
	case 2:
		flags = MAP_SHARED_VALIDATE | (one_in(2) ? MAP_SYNC : MAP_NORESERVE);
		break;
	case 3:
		flags = MAP_SHARED | MAP_LOCKED;
		break;
	default:
		flags = MAP_SHARED;
		break;
	}
	shared = (flags & MAP_TYPE) != MAP_PRIVATE;
	m = mmap(NULL, len, prot, flags, f->fd, off);
	FZ_COUNT(maps, 1);
	/* The only mappings there are: a whole ring, shared, as the file allows. */
	ok = f->port && shared && want && len && ((len + PAGE - 1) & ~(PAGE - 1)) == want &&
	     (f->oflags & O_ACCMODE) != O_WRONLY &&
	     (!(prot & PROT_WRITE) || (f->oflags & O_ACCMODE) == O_RDWR) &&
	     !(flags == (MAP_SHARED_VALIDATE | MAP_SYNC));
	must = ok && flags == MAP_SHARED && !(prot & PROT_EXEC) &&
	       (f->oflags & O_ACCMODE) == O_RDWR;
	if (m == MAP_FAILED) {
		FZ_CHECK(!must || errno == ENOMEM || errno == EAGAIN,
			 "mmap of a whole ring (off %#llx len %zu prot %#x): %s",
			 (unsigned long long)off, len, prot, strerror(errno));
		return;
	}
	FZ_CHECK(ok, "mmap succeeded: port %d off %#llx len %zu (ring %llu) prot %#x flags %#x "
		 "oflags %#x", f->port, (unsigned long long)off, len, (unsigned long long)want,
		 prot, flags, f->oflags);
	if ((prot & PROT_READ) && f->honest) {
		const struct nicoff_ring_hdr *h = m;

		FZ_CHECK(h->entries == (off ? f->cq_entries : f->cmd_entries),
			 "second mapping shows %u entries", h->entries);
	}
	if ((prot & PROT_WRITE) && one_in(4)) {
		/* Scribble through the second mapping: the port's problem. */
		((uint32_t *)m)[rn(want / 4)] = (uint32_t)rnd();
		f->honest = false;
		f->idx_honest = false;
	}
	if (one_in(2))
		munmap(m, len);
	else
		fz_extra_add(m, len);
}

/* Kept mappings: grow (never), move, shrink, protect, advise, unmap. */
static void fz_act_extra(void)
{
	struct fz_extra *x = &w.x[rn(FZ_EXTRAS)];
	void *m;

	if (!x->addr)
		return;
	switch (rn(5)) {
	case 0:
		m = mremap(x->addr, x->len, x->len + PAGE * (1 + rn(4)), MREMAP_MAYMOVE);
		FZ_CHECK(m == MAP_FAILED, "a ring mapping grew with mremap (VM_DONTEXPAND)");
		return;
	case 1:
		if (x->len > PAGE) {
			m = mremap(x->addr, x->len, x->len - PAGE, 0);
			if (m != MAP_FAILED)
				x->len -= PAGE;
		}
		return;
	case 2:
		mprotect(x->addr, x->len, one_in(2) ? PROT_READ : PROT_NONE);
		return;
	case 3:
		madvise(x->addr, x->len, one_in(2) ? MADV_DONTNEED : MADV_DONTDUMP);
		/* Touching it now could fault: it is only ever unmapped. */
		munmap(x->addr, x->len);
		x->addr = NULL;
		return;
	default:
		munmap(x->addr, x->len);
		x->addr = NULL;
		return;
	}
}

/* --------------------------------------------------------------- ioctl -- */

static const unsigned long fz_real_cmds[] = {
	NICOFF_IOC_QUERY, NICOFF_IOC_PORT_OPEN, NICOFF_IOC_REG_MR, NICOFF_IOC_DEREG_MR,
	NICOFF_IOC_KICK, NICOFF_IOC_PORT_STATS,
};

static bool fz_is_real(unsigned long cmd)
{
	unsigned int i;

	for (i = 0; i < ARRAY_LEN(fz_real_cmds); i++)
		if (fz_real_cmds[i] == cmd)
			return true;
	return false;
}

/* An ioctl number: ours, a neighbour of ours, or anything. */
static unsigned long fz_pick_cmd(void)
{
	unsigned long c = fz_real_cmds[rn(ARRAY_LEN(fz_real_cmds))];
	unsigned int dir = _IOC_DIR(c), type = _IOC_TYPE(c), nr = _IOC_NR(c), size = _IOC_SIZE(c);
	static const int dsize[] = { -8, -4, -1, 1, 4, 8, 64 };

	switch (rn(8)) {
	case 0:
	case 1:
		return c;
	case 2:
		nr = (nr + (one_in(2) ? 1 + rn(3) : 256 - 1 - rn(3))) & 0xff;
		break;
	case 3:
		size = one_in(3) ? rn(1u << _IOC_SIZEBITS) :
		       (size + dsize[rn(ARRAY_LEN(dsize))]) & ((1u << _IOC_SIZEBITS) - 1);
		break;
	case 4:
		dir = rn(4);
		break;
	case 5:
		nr = rn(256);
		dir = rn(4);
		size = rn(1u << _IOC_SIZEBITS);
		break;
	case 6:
		type = (type + (one_in(2) ? 1 : 255)) & 0xff;
		break;
	default:
		c = (uint32_t)rnd();
		/* Leave the file-system ioctls of the VFS alone (freeze, clone, ...). */
		if (_IOC_TYPE(c) == 'X' || _IOC_TYPE(c) == 0x94 || _IOC_TYPE(c) == 'f' ||
		    _IOC_TYPE(c) == 0)
			c = fz_real_cmds[0];
		return c;
	}
	return _IOC(dir, type, nr, size);
}

/* Garbage of a struct: random, boundary, zero, or a valid one altered. */
static void fz_garbage_arg(unsigned long cmd, const struct fz_file *f, void *buf, size_t len)
{
	uint64_t *q = buf;
	size_t i;

	memset(buf, 0, len);
	switch (rn(4)) {
	case 0:
		nt_fill_pattern(buf, len, rnd());
		return;
	case 1:
		for (i = 0; i < len / 8; i++)
			q[i] = one_in(2) ? fz_boundary() : 0;
		return;
	case 2:
		return;
	default:
		break;
	}
	if (cmd == NICOFF_IOC_PORT_OPEN) {
		struct nicoff_port_open *po = buf;

		po->abi_version = NICOFF_ABI_VERSION;
		po->port = one_in(2) ? NICOFF_PORT_ANY : rn(w.q.max_ports + 1);
		po->cmd_entries = fz_pick_entries();
		po->cq_entries = one_in(2) ? po->cmd_entries : fz_pick_entries();
	} else if (cmd == NICOFF_IOC_REG_MR) {
		struct nicoff_reg_mr *mr = buf;

		mr->addr = (uintptr_t)w.buf + rn(FZ_BUF);
		mr->length = one_in(2) ? rn(2 * PAGE) : fz_boundary();
		mr->access = rn(32);
	} else if (cmd == NICOFF_IOC_DEREG_MR) {
		struct nicoff_dereg_mr *d = buf;

		d->handle = f && f->nmr ? f->mrs[rn(f->nmr)].h : (uint32_t)fz_boundary();
	}
	if (len >= 8 && one_in(3))
		q[rn(len / 8)] ^= 1ull << rn(64);
}

/* What one of our ioctls answers on a nicoff file, for argument kind k. */
static uint64_t fz_ioctl_expect(unsigned long cmd, const struct fz_file *f, enum fz_arg k,
				const void *content)
{
	bool bad = fz_arg_bad(k);

	switch (cmd) {
	case NICOFF_IOC_QUERY:
		return bad || k == A_RO ? E(EFAULT) : E(0);
	case NICOFF_IOC_PORT_OPEN:
		return fz_po_expect(content, k, f->port);
	case NICOFF_IOC_KICK:
		return f->port ? E(0) : E(ENOTCONN);
	case NICOFF_IOC_PORT_STATS:
		if (!f->port)
			return E(ENOTCONN);
		return bad || k == A_RO ? E(EFAULT) : E(0);
	case NICOFF_IOC_REG_MR:
		if (!f->port)
			return E(ENOTCONN);
		if (f->errored)
			return E(EIO);
		if (bad)
			return E(EFAULT) | (f->honest ? 0 : E(EIO));
		return E(EINVAL, EFAULT, ENOMEM, ENOSPC) | (f->honest ? 0 : E(EIO)) |
		       (k == A_RO ? 0 : E(0));
	case NICOFF_IOC_DEREG_MR: {
		const struct nicoff_dereg_mr *d = content;

		if (!f->port)
			return E(ENOTCONN);
		if (bad)
			return E(EFAULT);
		if (d->reserved)
			return E(EINVAL);
		if (!f->mr_known)
			return E(0, ENOENT);
		return fz_has(f, d->handle, NULL) ? E(0) : E(ENOENT);
	}
	default:
		return E(ENOTTY);
	}
}

static void fz_act_ioctl(void)
{
	struct fz_file *f = fz_pick(false, false);
	unsigned long cmd = fz_pick_cmd();
	enum fz_arg k = fz_pick_arg();
	uint8_t content[256];
	uint64_t allowed;
	size_t len = _IOC_SIZE(cmd);
	unsigned int idx;
	void *arg;
	int ret, fd;
	bool nicoff = true;

	if (len > sizeof(content))
		len = sizeof(content);
	if (len < 8)
		len = 8;
	fz_garbage_arg(cmd, f, content, len);
	if (!f || one_in(10)) {
		fd = one_in(2) ? w.devnull : 900 + rn(100);
		nicoff = false;
		f = NULL;
	} else {
		fd = f->fd;
	}
	if (nicoff && fz_is_real(cmd))
		allowed = fz_ioctl_expect(cmd, f, k, content);
	else if (!nicoff && fd != w.devnull)
		allowed = E(EBADF);
	else if (_IOC_TYPE(cmd) == NICOFF_IOC_MAGIC)
		allowed = E(ENOTTY);
	else
		allowed = ~0ull;	/* the VFS's own ioctls: anything */
	arg = fz_place(k, content, len);
	ret = nt_ioctl(fd, cmd, arg);
	FZ_COUNT(ioctls, 1);
	FZ_EXPECT(ret, allowed, "ioctl %#lx (dir %u nr %#x size %u) on %s, arg kind %d", cmd,
		  (unsigned int)_IOC_DIR(cmd), (unsigned int)_IOC_NR(cmd),
		  (unsigned int)_IOC_SIZE(cmd),
		  nicoff ? (f->port ? "a port" : "a nicoff file") : "another file", k);
	if (ret || !nicoff || fz_arg_bad(k))
		return;
	/*
	 * DEREG_MR only reads its argument: from read-only memory it succeeds,
	 * and the handle must be forgotten like any other deregistered one.
	 */
	if (cmd == NICOFF_IOC_DEREG_MR) {
		const struct nicoff_dereg_mr *d = (const void *)content;

		f->epoch++;
		if (fz_has(f, d->handle, &idx))
			f->mrs[idx] = f->mrs[--f->nmr];
		return;
	}
	if (k == A_RO)
		return;
	if (cmd == NICOFF_IOC_QUERY) {
		const struct nicoff_query *q = arg;

		FZ_CHECK(q->abi_version == NICOFF_ABI_VERSION && q->card == (uint32_t)f->card &&
			 q->num_cards == w.q.num_cards &&
			 !fz_nonzero(q->reserved, sizeof(q->reserved)),
			 "QUERY answered abi %u card %u of %u", q->abi_version, q->card,
			 q->num_cards);
	} else if (cmd == NICOFF_IOC_PORT_OPEN) {
		fz_port_opened(f, (const void *)content, arg);
	} else if (cmd == NICOFF_IOC_REG_MR) {
		const struct nicoff_reg_mr *mr = arg;

		f->epoch++;
		if (f->nmr < FZ_MRS) {
			f->mrs[f->nmr].h = mr->handle;
			f->mrs[f->nmr].rkey = mr->rkey;
			f->mrs[f->nmr].access = mr->access;
			f->mrs[f->nmr].len = mr->length;
			f->nmr++;
		} else {
			FZ_CHECK(nt_dereg_mr(f->fd, mr->handle) == 0, "DEREG_MR of a fresh handle");
		}
	}
}

/* read, write, lseek, poll, fcntl, dup, QUERY, PORT_STATS. */
static void fz_act_misc(void)
{
	struct fz_file *f = fz_pick(false, false);
	struct nicoff_port_stats st;
	struct nicoff_query q;
	struct pollfd pfd;
	int acc, ret, fd2;
	ssize_t n;

	if (!f)
		return;
	acc = f->oflags & O_ACCMODE;
	switch (rn(8)) {
	case 0:
		n = read(f->fd, w.scratch, 1 + rn(256));
		FZ_CHECK(n < 0 && errno == (acc == O_WRONLY ? EBADF : EINVAL), "read: %zd, %s",
			 n, strerror(errno));
		break;
	case 1:
		n = write(f->fd, w.scratch, 1 + rn(256));
		FZ_CHECK(n < 0 && errno == (acc == O_RDONLY ? EBADF : EINVAL), "write: %zd, %s",
			 n, strerror(errno));
		break;
	case 2:
		FZ_CHECK(lseek(f->fd, rn(4096), SEEK_SET) < 0 && errno == ESPIPE, "lseek: %s",
			 strerror(errno));
		break;
	case 3:
		pfd.fd = f->fd;
		pfd.events = POLLIN | POLLOUT;
		pfd.revents = 0;
		FZ_CHECK(poll(&pfd, 1, 0) >= 0, "poll: %s", strerror(errno));
		if (!f->port)
			FZ_CHECK(pfd.revents & POLLERR, "poll on a file without a port: %#x",
				 pfd.revents);
		else if (f->honest)
			FZ_CHECK(!(pfd.revents & (POLLERR | POLLNVAL)), "poll on a port: %#x",
				 pfd.revents);
		break;
	case 4:
		ret = nt_stats(f->fd, &st);
		FZ_EXPECT(ret, f->port ? E(0) : E(ENOTCONN), "PORT_STATS");
		if (ret)
			break;
		FZ_CHECK(st.cmds >= f->st.cmds && st.cqes >= f->st.cqes &&
			 st.kicks >= f->st.kicks && st.bad_cmds >= f->st.bad_cmds && st.cq_full >= f->st.cq_full &&
			 !fz_nonzero(st.reserved, sizeof(st.reserved)),
			 "PORT_STATS went backwards: cmds %llu->%llu cqes %llu->%llu",
			 (unsigned long long)f->st.cmds, (unsigned long long)st.cmds,
			 (unsigned long long)f->st.cqes, (unsigned long long)st.cqes);
		f->st = st;
		break;
	case 5:
		FZ_EXPECT(nt_kick(f->fd), f->port ? E(0) : E(ENOTCONN), "KICK");
		break;
	case 6:
		FZ_CHECK(fcntl(f->fd, F_SETFL, (one_in(2) ? O_NONBLOCK : 0) |
			       (one_in(2) ? O_ASYNC : 0)) == 0, "fcntl: %s", strerror(errno));
		fd2 = dup(f->fd);
		FZ_CHECK(fd2 >= 0 || errno == EMFILE, "dup: %s", strerror(errno));
		if (fd2 >= 0) {
			FZ_EXPECT(nt_query(fd2, &q), E(0), "QUERY on a dup");
			close(fd2);
		}
		break;
	default:
		ret = nt_query(f->fd, &q);
		FZ_EXPECT(ret, E(0), "QUERY");
		FZ_CHECK(q.card == (uint32_t)f->card && q.num_cards == w.q.num_cards &&
			 q.max_ports == w.q.max_ports, "QUERY: card %u of %u", q.card, q.num_cards);
		break;
	}
}

static void fz_act_close(void)
{
	struct fz_file *f = fz_pick(false, false);

	if (f)
		fz_close(f, !one_in(4));
}

/* ---------------------------------------------------------------- race -- */

/*
 * One port, several threads: REG_MR in a loop, DEREG_MR of the handles
 * around the last one returned (so also of the one a REG_MR in flight is
 * about to return), commands naming those handles, poll/stats/kick, and
 * the descriptor closed or replaced under all of them.
 */
struct fz_race {
	int fd;
	struct nt_port p;
	uint8_t *buf;
	size_t len;
	uint32_t last;		/* the last handle REG_MR returned (atomic) */
	int stop;		/* atomic */
	uint64_t seed[3];
};

static uint32_t fz_race_rn(uint64_t *rs, uint32_t n)
{
	return n ? nt_rand64(rs) % n : 0;
}

/* Closed (EBADF) or replaced by /dev/null (ENOTTY) under the thread. */
#define FZ_GONE E(EBADF, ENOTTY)

static void *fz_race_reg(void *arg)
{
	struct fz_race *r = arg;
	uint64_t rs = r->seed[0];

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		size_t off = fz_race_rn(&rs, r->len / PAGE) * PAGE;
		size_t len = PAGE * (1 + fz_race_rn(&rs, 4)) - fz_race_rn(&rs, 2) * 100;
		uint32_t h = 0;
		int ret;

		if (off + len > r->len)
			len = r->len - off;
		ret = nt_reg_mr(r->fd, r->buf + off, len, fz_race_rn(&rs, 16), &h);
		FZ_EXPECT(ret, E(0, EFAULT, ENOMEM, ENOSPC) | FZ_GONE, "racing REG_MR");
		if (ret)
			continue;
		__atomic_store_n(&r->last, h, __ATOMIC_RELEASE);
		FZ_COUNT(regs_ok, 1);
		if (fz_race_rn(&rs, 2))
			FZ_EXPECT(nt_dereg_mr(r->fd, h), E(0, ENOENT) | FZ_GONE,
				  "racing DEREG_MR of our own handle %u", h);
	}
	return NULL;
}

static void *fz_race_dereg(void *arg)
{
	struct fz_race *r = arg;
	uint64_t rs = r->seed[1];

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		uint32_t h = __atomic_load_n(&r->last, __ATOMIC_ACQUIRE) + fz_race_rn(&rs, 4);

		FZ_EXPECT(nt_dereg_mr(r->fd, h ? h : 1), E(0, ENOENT) | FZ_GONE,
			  "racing DEREG_MR of handle %u", h);
		FZ_COUNT(deregs, 1);
	}
	return NULL;
}

/* The ring's only producer: COPYs between the racing handles, NOPs, PUTs. */
static void *fz_race_io(void *arg)
{
	struct fz_race *r = arg;
	uint64_t rs = r->seed[2], tag = 0;
	struct nt_port *p = &r->p;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		uint32_t space = nt_cmd_space(p), n = 1 + fz_race_rn(&rs, 8), i;
		struct nicoff_cqe e[16];
		int got, ret;

		if (n > space)
			n = space;
		for (i = 0; i < n; i++) {
			uint32_t last = __atomic_load_n(&r->last, __ATOMIC_ACQUIRE), rkey;
			struct nicoff_cmd c;
			uint8_t op;

			switch (fz_race_rn(&rs, 3)) {
			case 0:
				nicoff_prep_nop(&c, ++tag);
				break;
			case 1:
				nicoff_prep_copy(&c, last - fz_race_rn(&rs, 3),
						 fz_race_rn(&rs, PAGE), last + fz_race_rn(&rs, 2),
						 fz_race_rn(&rs, PAGE), fz_race_rn(&rs, PAGE),
						 ++tag);
				break;
			default:
				/* Drawn in this order, as the test always drew them. */
				op = fz_race_rn(&rs, 2) ? NICOFF_OP_PUT : NICOFF_OP_GET;
				rkey = (uint32_t)nt_rand64(&rs);
				nicoff_prep_rdma(&c, op, p->card, p->po.port, rkey, 0, last, 0,
						 fz_race_rn(&rs, PAGE), ++tag);
				break;
			}
			nt_cmd_write(p, &c);
		}
		if (n) {
			nt_publish(p);
			ret = nt_doorbell(p);
			FZ_EXPECT(ret < 0 ? ret : 0, E(0) | FZ_GONE, "racing doorbell");
			FZ_COUNT(cmds, n);
		}
		got = nt_reap(p, e, 16);
		FZ_EXPECT(got < 0 ? got : 0, E(0) | FZ_GONE, "racing reap");
		for (i = 0; i < (uint32_t)(got > 0 ? got : 0); i++) {
			uint64_t m = e[i].opcode == NICOFF_OP_NOP ? E(0) :
				     e[i].opcode == NICOFF_OP_COPY ? E(0, ENOENT, ERANGE, EACCES) :
				     fz_fw_set();

			/* Our own PUTs and GETs with bad rkeys, seen from the target side. */
			if (e[i].opcode == NICOFF_OP_REMOTE_ACCESS_ERROR) {
				FZ_CHECK(e[i].status < 0 && e[i].status > -4096,
					 "REMOTE_ACCESS_ERROR with status %d", e[i].status);
				continue;
			}
			FZ_CHECK(e[i].tag && e[i].tag <= tag,
				 "racing port: completion tag %llu of %llu (opcode %u)",
				 (unsigned long long)e[i].tag, (unsigned long long)tag,
				 e[i].opcode);
			FZ_EXPECT(e[i].status, m, "racing port: completion of opcode %u",
				  e[i].opcode);
			FZ_COUNT(cqes, 1);
		}
		FZ_CHECK(!(nt_cq_flags(p) & NICOFF_RING_ERROR),
			 "racing port in the error state though it kept the rules");
		if (!n && !got)
			sched_yield();
	}
	return NULL;
}

static void fz_act_race(void)
{
	struct fz_race r;
	void *(*fn[3])(void *) = { fz_race_reg, fz_race_dereg, fz_race_io };
	pthread_t t[3];
	uint64_t end;
	unsigned int i, nt;
	bool gone = false;
	int ret;

	memset(&r, 0, sizeof(r));
	ret = nt_port_open(&r.p, rn(w.q.num_cards), NICOFF_PORT_ANY, 64, 64);
	FZ_EXPECT(ret, E(0, EBUSY, ENOMEM), "PORT_OPEN for the race");
	if (ret)
		return;
	r.fd = r.p.fd;
	r.len = 64 * PAGE;
	r.buf = mmap(NULL, r.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	FZ_CHECK(r.buf != MAP_FAILED, "mmap: %s", strerror(errno));
	for (i = 0; i < 3; i++)
		r.seed[i] = rnd();
	nt = 0;
	for (i = 0; i < 3; i++) {
		if (i == 2 && one_in(4))
			continue;
		FZ_CHECK(pthread_create(&t[nt], NULL, fn[i], &r) == 0, "pthread_create");
		nt++;
	}
	FZ_COUNT(races, 1);
	end = nt_now_ns() + (30 + rn(270)) * 1000000ull;
	while (nt_now_ns() < end) {
		struct nicoff_port_stats st;
		struct pollfd pfd = { .fd = r.fd, .events = POLLIN };

		if (!gone && one_in(40)) {
			/* close() or dup2() under the other threads' feet. */
			if (one_in(2))
				ret = close(r.fd);
			else
				ret = dup2(w.devnull, r.fd) < 0 ? -1 : 0;
			FZ_CHECK(ret == 0, "close under the race: %s", strerror(errno));
			gone = true;
			continue;
		}
		if (!gone && one_in(30)) {
			/* Registered pages stay pinned; new REG_MRs there fail. */
			size_t at = rn(r.len / PAGE) * PAGE, n = PAGE * (1 + rn(4));

			munmap(r.buf + at, at + n > r.len ? r.len - at : n);
		}
		FZ_CHECK(poll(&pfd, 1, 1) >= 0 || errno == EINTR, "poll: %s", strerror(errno));
		FZ_EXPECT(nt_stats(r.fd, &st), E(0) | FZ_GONE, "racing PORT_STATS");
		FZ_EXPECT(nt_kick(r.fd), E(0) | FZ_GONE, "racing KICK");
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	/* Only the rings may still hold the file: gone with them. */
	r.p.fd = gone ? -1 : r.fd;
	if (gone && fcntl(r.fd, F_GETFD) >= 0)
		close(r.fd);	/* the /dev/null copy */
	nt_port_close(&r.p);
	munmap(r.buf, r.len);
}

/* ------------------------------------------------------------- netlink -- */

struct fz_nl_seen {
	int msgs;
	uint32_t num_cards, abi, card;
	uint64_t cards_seen;	/* bit i: card i reported (first 64) */
	bool dup;
};

static void fz_nl_seen_cb(void *ctx, const struct nlmsghdr *h)
{
	struct fz_nl_seen *s = ctx;
	const struct nlattr *a;
	int len, rem;

	s->msgs++;
	nt_nla_for_each(a, nt_nl_attrs(h, &len), len, rem) {
		uint16_t t = a->nla_type & NLA_TYPE_MASK;

		if (a->nla_len < NLA_HDRLEN + 4)
			continue;
		if (t == NICOFF_NL_A_NUM_CARDS) {
			s->num_cards = *(const uint32_t *)nt_nla_data(a);
		} else if (t == NICOFF_NL_A_ABI_VERSION) {
			s->abi = *(const uint32_t *)nt_nla_data(a);
		} else if (t == NICOFF_NL_A_CARD) {
			s->card = *(const uint32_t *)nt_nla_data(a);
			if (s->card < 64) {
				if (s->cards_seen & (1ull << s->card))
					s->dup = true;
				s->cards_seen |= 1ull << s->card;
			}
		}
	}
}

/* Random attributes, of the types given by a mask of NICOFF_NL_A_* (bit 31: unknown ones). */
static void fz_nl_garbage(struct nt_nlmsg *m, uint32_t types)
{
	unsigned int n = rn(4), i, j;

	for (i = 0; i < n; i++) {
		uint8_t data[16];
		uint16_t t;
		struct nlattr *nest;

		do {
			t = rn(NICOFF_NL_A_MAX + 4);
		} while (t <= NICOFF_NL_A_MAX ? !(types & (1u << t)) : !(types & (1u << 31)));
		if (t == NICOFF_NL_A_FAULTS || one_in(8)) {
			nest = nt_nl_put(m, t | (one_in(4) ? 0 : NLA_F_NESTED), NULL, 0);
			for (j = rn(4); j && nest; j--) {
				nt_fill_pattern(data, sizeof(data), rnd());
				nt_nl_put(m, rn(NICOFF_NL_FAULT_MAX + 3), data, rn(9));
			}
			nt_nl_nest_end(m, nest);
			continue;
		}
		nt_fill_pattern(data, sizeof(data), rnd());
		if (one_in(2))
			*(uint32_t *)data = one_in(2) ? rn(w.q.num_cards + 2) :
					    (uint32_t)fz_boundary();
		nt_nl_put(m, t, data, one_in(3) ? 4 : rn(13));
	}
}

/* Top-level attributes the family's strict policy refuses. */
#define FZ_NL_REFUSED ((1u << NICOFF_NL_A_UNSPEC) | (1u << NICOFF_NL_A_PAD) | \
		       (1u << NICOFF_NL_A_NUM_CARDS) | (1u << NICOFF_NL_A_ABI_VERSION) | \
		       (1u << NICOFF_NL_A_PINNED_PAGES) | (1u << NICOFF_NL_A_PORTS_OPEN) | \
		       (1u << NICOFF_NL_A_STATS) | (1u << 31))

/*
 * A SET_FAULTS that must be refused however privileged the sender: every
 * message carries one reason the family refuses it before it changes
 * anything.  Unprivileged workers also send well-formed ones, zero faults.
 */
static void fz_nl_bad_set(struct nt_nlmsg *m)
{
	uint32_t zero = 0, ppm;
	struct nlattr *nest;

	switch (rn(w.root ? 6 : 7)) {
	case 0:
		/* No FAULTS attribute. */
		if (one_in(2))
			nt_nl_put_u32(m, NICOFF_NL_A_CARD, rn(w.q.num_cards));
		fz_nl_garbage(m, FZ_NL_REFUSED);
		return;
	case 1:
		/* A rate above a million per million. */
		ppm = 1000001 + rn(1u << 30);
		nest = nt_nl_put(m, NICOFF_NL_A_FAULTS | NLA_F_NESTED, NULL, 0);
		nt_nl_put_u32(m, NICOFF_NL_FAULT_DROP_PPM + rn(5), ppm);
		nt_nl_nest_end(m, nest);
		break;
	case 2:
		/* A u32 of two bytes. */
		nest = nt_nl_put(m, NICOFF_NL_A_FAULTS | NLA_F_NESTED, NULL, 0);
		nt_nl_put(m, NICOFF_NL_FAULT_DROP_PPM + rn(6), &zero, 2);
		nt_nl_nest_end(m, nest);
		break;
	case 3:
		/* An attribute the family does not know. */
		nt_nl_put_u32(m, NICOFF_NL_A_MAX + 1 + rn(10), 0);
		nest = nt_nl_put(m, NICOFF_NL_A_FAULTS | NLA_F_NESTED, NULL, 0);
		nt_nl_put_u32(m, NICOFF_NL_FAULT_DROP_PPM, 0);
		nt_nl_nest_end(m, nest);
		break;
	case 4:
		/* A card that does not exist. */
		nt_nl_put_u32(m, NICOFF_NL_A_CARD, one_in(2) ? w.q.num_cards + rn(100) :
				 (uint32_t)~rn(4));
		nest = nt_nl_put(m, NICOFF_NL_A_FAULTS | NLA_F_NESTED, NULL, 0);
		nt_nl_put_u32(m, NICOFF_NL_FAULT_DUP_PPM, 0);
		nt_nl_nest_end(m, nest);
		break;
	case 5:
		/* The global flag without a card. */
		nest = nt_nl_put(m, NICOFF_NL_A_FAULTS | NLA_F_NESTED, NULL, 0);
		nt_nl_put(m, NICOFF_NL_FAULT_GLOBAL, NULL, 0);
		nt_nl_nest_end(m, nest);
		break;
	default:
		/* Well-formed, zero faults: only CAP_NET_ADMIN stops it. */
		if (one_in(2))
			nt_nl_put_u32(m, NICOFF_NL_A_CARD, rn(w.q.num_cards));
		nest = nt_nl_put(m, NICOFF_NL_A_FAULTS | NLA_F_NESTED, NULL, 0);
		nt_nl_put_u32(m, NICOFF_NL_FAULT_DROP_PPM, 0);
		nt_nl_put_u32(m, NICOFF_NL_FAULT_CORRUPT_PPM, 0);
		nt_nl_nest_end(m, nest);
		return;
	}
	fz_nl_garbage(m, FZ_NL_REFUSED);
}

static void fz_act_netlink(void)
{
	struct fz_nl_seen s;
	struct nt_nlmsg m;
	uint16_t flags = NLM_F_REQUEST | NLM_F_ACK, dump;
	uint64_t mask;
	uint32_t card;
	uint8_t cmd;
	int ret;

	if (w.nl < 0) {
		ret = nt_nl_open(&w.family, &w.nl_seq);
		FZ_CHECK(ret >= 0, "the nicoff netlink family: %s", strerror(-ret));
		w.nl = ret;
	}
	memset(&s, 0, sizeof(s));
	FZ_COUNT(nl_msgs, 1);
	switch (rn(8)) {
	case 0:
		nt_nl_start(&m, w.family, flags, NICOFF_NL_CMD_GET_INFO, rn(3), ++w.nl_seq);
		ret = nt_nl_xact(w.nl, &m, fz_nl_seen_cb, &s);
		if (ret == NT_NL_LOST)
			break;
		FZ_EXPECT(ret, E(0), "netlink GET_INFO");
		FZ_CHECK(s.msgs == 1 && s.num_cards == w.q.num_cards && s.abi == NICOFF_ABI_VERSION,
			 "GET_INFO: %d replies, %u cards, abi %u", s.msgs, s.num_cards, s.abi);
		break;
	case 1:
		card = rn(w.q.num_cards);
		nt_nl_start(&m, w.family, flags, NICOFF_NL_CMD_GET_CARD, rn(3), ++w.nl_seq);
		nt_nl_put_u32(&m, NICOFF_NL_A_CARD, card);
		ret = nt_nl_xact(w.nl, &m, fz_nl_seen_cb, &s);
		if (ret == NT_NL_LOST)
			break;
		FZ_EXPECT(ret, E(0), "netlink GET_CARD %u", card);
		FZ_CHECK(s.msgs == 1 && s.card == card, "GET_CARD %u: %d replies, card %u", card,
			 s.msgs, s.card);
		break;
	case 2:
		card = one_in(2) ? w.q.num_cards + rn(1000) : (uint32_t)~rn(4);
		nt_nl_start(&m, w.family, flags, NICOFF_NL_CMD_GET_CARD, 1, ++w.nl_seq);
		if (one_in(3)) {
			ret = nt_nl_xact(w.nl, &m, NULL, NULL);
			if (ret != NT_NL_LOST)
				FZ_EXPECT(ret, E(EINVAL), "netlink GET_CARD without a card");
			break;
		}
		nt_nl_put_u32(&m, NICOFF_NL_A_CARD, card);
		ret = nt_nl_xact(w.nl, &m, NULL, NULL);
		if (ret != NT_NL_LOST)
			FZ_EXPECT(ret, E(ENODEV), "netlink GET_CARD of card %u", card);
		break;
	case 3:
		nt_nl_start(&m, w.family, NLM_F_REQUEST | NLM_F_DUMP, NICOFF_NL_CMD_GET_CARD, 1,
			    ++w.nl_seq);
		ret = nt_nl_xact(w.nl, &m, fz_nl_seen_cb, &s);
		if (ret == NT_NL_LOST)
			break;
		FZ_EXPECT(ret, E(0), "netlink dump of GET_CARD");
		mask = w.q.num_cards >= 64 ? ~0ull : (1ull << w.q.num_cards) - 1;
		FZ_CHECK(s.msgs == (int)w.q.num_cards && !s.dup && s.cards_seen == mask,
			 "dump of GET_CARD: %d replies for %u cards (seen %#llx)", s.msgs,
			 w.q.num_cards, (unsigned long long)s.cards_seen);
		break;
	case 4:
		dump = one_in(4) ? NLM_F_DUMP : 0;
		nt_nl_start(&m, w.family, flags | dump, NICOFF_NL_CMD_SET_FAULTS, rn(3),
			    ++w.nl_seq);
		fz_nl_bad_set(&m);
		ret = nt_nl_xact(w.nl, &m, NULL, NULL);
		if (ret == NT_NL_LOST)
			break;
		if (w.root)
			FZ_CHECK(ret < 0, "a SET_FAULTS that had to be refused was accepted");
		else
			/* SET has no dump: that may be found out first. */
			FZ_EXPECT(ret, dump ? E(EPERM, EOPNOTSUPP) : E(EPERM),
				  "SET_FAULTS without CAP_NET_ADMIN");
		FZ_COUNT(nl_refused, 1);
		break;
	case 5:
		/* Commands the family does not have. */
		nt_nl_start(&m, w.family, flags | (one_in(4) ? NLM_F_DUMP : 0),
			    one_in(2) ? NICOFF_NL_CMD_UNSPEC : NICOFF_NL_CMD_MAX + 1 + rn(250),
			    rn(256), ++w.nl_seq);
		fz_nl_garbage(&m, ~0u);
		ret = nt_nl_xact(w.nl, &m, NULL, NULL);
		if (ret != NT_NL_LOST)
			FZ_EXPECT(ret, E(EOPNOTSUPP), "netlink command %u",
				  ((struct genlmsghdr *)NLMSG_DATA((struct nlmsghdr *)m.b))->cmd);
		break;
	case 6:
		/* GETs with garbage: any answer, but an answer. */
		nt_nl_start(&m, w.family, flags | (one_in(3) ? NLM_F_DUMP : 0),
			    one_in(2) ? NICOFF_NL_CMD_GET_INFO : NICOFF_NL_CMD_GET_CARD, rn(256),
			    ++w.nl_seq);
		fz_nl_garbage(&m, ~0u);
		ret = nt_nl_xact(w.nl, &m, NULL, NULL);
		FZ_CHECK(ret <= 0 || ret == NT_NL_LOST, "netlink GET with garbage: %d", ret);
		break;
	default:
		/*
		 * Broken frames: truncated, lengths that lie, no REQUEST flag.
		 * A SET never has a FAULTS attribute: refused whatever is left.
		 */
		cmd = NICOFF_NL_CMD_GET_INFO + rn(3);
		nt_nl_start(&m, w.family, one_in(2) ? NLM_F_ACK : flags, cmd, 1, ++w.nl_seq);
		fz_nl_garbage(&m, cmd == NICOFF_NL_CMD_SET_FAULTS || one_in(2) ?
				  FZ_NL_REFUSED : ~0u);
		switch (rn(3)) {
		case 0:
			m.len = rn(m.len);
			break;
		case 1:
			/*
			 * Longer than what is sent, or shorter than a header:
			 * never shorter than the message, whose rest would be
			 * read as a message of its own, maybe for another family.
			 */
			((struct nlmsghdr *)m.b)->nlmsg_len = one_in(2) ? rn(NLMSG_HDRLEN) :
							      m.len + 1 + rn(m.len);
			break;
		default:
			if (m.len > NLMSG_LENGTH(GENL_HDRLEN) + NLA_HDRLEN)
				((struct nlattr *)(m.b + NLMSG_LENGTH(GENL_HDRLEN)))->nla_len =
					(uint16_t)rnd();
			break;
		}
		send(w.nl, m.b, m.len, 0);
		nt_nl_drain(w.nl);
		break;
	}
}

/*
 * A NOP through a port, its completion awaited up to ms: 0 if it came back
 * with status 0.  Any worker may PUT to any port with a bad rkey, so a
 * REMOTE_ACCESS_ERROR completion may come first; it is skipped.
 */
static int fz_nop_round_trip(struct nt_port *p, uint64_t tag, int ms)
{
	uint64_t end = nt_now_ns() + ms * 1000000ull;
	struct nicoff_cqe e;
	struct nicoff_cmd c;
	int ret;

	nicoff_prep_nop(&c, tag);
	ret = nt_submit(p, &c, 1);
	if (ret)
		return ret;
	while (nt_now_ns() < end) {
		ret = nt_wait_cqes(p, &e, 1, 100);
		if (ret < 0)
			return ret;
		if (!ret || e.opcode == NICOFF_OP_REMOTE_ACCESS_ERROR)
			continue;
		return e.tag == tag && e.opcode == NICOFF_OP_NOP && !e.status ? 0 : -EPROTO;
	}
	return -ETIMEDOUT;
}

/* ---------------------------------------------------------------- fork -- */

/* The rings are VM_IO: MADV_DOFORK must refuse to make one inheritable. */
static void fz_no_dofork(void *ring, uint64_t len, const char *what)
{
	int err = madvise(ring, len, MADV_DOFORK) ? errno : 0;

	FZ_CHECK(err == EINVAL, "MADV_DOFORK of a %s ring: %s", what,
		 err ? strerror(err) : "succeeded");
}


/* A forked child: what it inherited, and a port of its own. */
static void __attribute__((noreturn)) fz_child(struct fz_file *f)
{
	struct nicoff_dereg_mr d = { .handle = 1 };
	struct nicoff_reg_mr mr;
	struct nt_port p;
	char line[512];
	unsigned int maps = 0;
	FILE *fm;
	int ret;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	w.what = "fork child";
	fm = fopen("/proc/self/maps", "r");
	FZ_CHECK(fm, "/proc/self/maps: %s", strerror(errno));
	while (fgets(line, sizeof(line), fm))
		maps += !!strstr(line, "/dev/nicoff");
	fclose(fm);
	FZ_CHECK(!maps, "a child inherited %u ring mappings (they are VM_DONTCOPY, and VM_IO "
		 "keeps them so)", maps);
	FZ_COUNT(inherited_maps, maps);
	if (f && f->port) {
		/* The parent's port: the child may kick it, not change its regions. */
		FZ_EXPECT(nt_kick(f->fd), E(0), "KICK of the parent's port");
		memset(&mr, 0, sizeof(mr));
		mr.addr = (uintptr_t)w.buf;
		mr.length = PAGE;
		ret = nt_ioctl(f->fd, NICOFF_IOC_REG_MR, &mr);
		FZ_EXPECT(ret, f->honest ? E(EPERM) : E(EPERM, EIO),
			  "REG_MR on the parent's port");
		FZ_EXPECT(nt_ioctl(f->fd, NICOFF_IOC_DEREG_MR, &d), E(EPERM),
			  "DEREG_MR on the parent's port");
		FZ_EXPECT(nt_port_open_fd(f->fd, NICOFF_PORT_ANY, 8, 8, NULL), E(EBUSY),
			  "PORT_OPEN on the parent's port");
	}
	if (one_in(4)) {
		fz_sh->selfkill[w.id % FZ_SELFKILL_SLOTS] = getpid();
		raise(SIGKILL);
	}
	ret = nt_port_open(&p, rn(w.q.num_cards), NICOFF_PORT_ANY, 8, 8);
	FZ_EXPECT(ret, E(0, EBUSY, ENOMEM), "the child's PORT_OPEN");
	if (!ret) {
		ret = fz_nop_round_trip(&p, 0xc0ffee, 20000);
		FZ_CHECK(ret == 0, "the child's NOP on a port of its own: %d", ret);
		if (one_in(2))
			nt_port_close(&p);
	}
	_exit(0);
}

static void fz_act_fork(void)
{
	struct fz_file *f = fz_pick(false, false);
	uint64_t end;
	int status = 0;
	pid_t pid, got = 0;

	if (f && f->mapped && one_in(3)) {
		fz_no_dofork(f->p.cmd_hdr, f->cmd_size, "command");
		fz_no_dofork(f->p.cq_hdr, f->cq_size, "completion");
	}
	fflush(NULL);
	pid = fork();
	if (!pid)
		fz_child(f);
	FZ_CHECK(pid > 0 || errno == EAGAIN || errno == ENOMEM, "fork: %s", strerror(errno));
	if (pid < 0)
		return;
	FZ_COUNT(forks, 1);
	end = nt_now_ns() + 40000000000ull;
	while (nt_now_ns() < end) {
		got = waitpid(pid, &status, WNOHANG);
		if (got)
			break;
		nt_sleep_ms(2);
	}
	if (!got) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fz_die(__LINE__, "a forked child did not end in 40 s");
	}
	FZ_CHECK(got == pid, "waitpid: %s", strerror(errno));
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
	    fz_sh->selfkill[w.id % FZ_SELFKILL_SLOTS] == pid)
		return;
	FZ_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "a forked child ended with status %#x", status);
}

/* -------------------------------------------------------- worker main -- */

static const struct {
	void (*fn)(void);
	const char *name;
	unsigned int weight;
} fz_actions[] = {
	{ fz_act_open, "open", 8 },
	{ fz_act_port_open, "PORT_OPEN", 8 },
	{ fz_act_mmap, "mmap", 6 },
	{ fz_act_extra, "kept mappings", 2 },
	{ fz_act_ioctl, "ioctl", 16 },
	{ fz_act_reg, "REG_MR", 10 },
	{ fz_act_dereg, "DEREG_MR", 6 },
	{ fz_act_submit, "commands", 22 },
	{ fz_act_reap, "completions", 10 },
	{ fz_act_garbage, "ring garbage", 3 },
	{ fz_act_close, "close", 3 },
	{ fz_act_race, "REG_MR/DEREG_MR/close race", 2 },
	{ fz_act_netlink, "netlink", 6 },
	{ fz_act_fork, "fork", 1 },
	{ fz_act_misc, "misc", 6 },
};

static void *fz_map(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	FZ_CHECK(p != MAP_FAILED, "mmap of %zu bytes: %s", len, strerror(errno));
	return p;
}

/* Drop to uid/gid 65534 with RLIMIT_MEMLOCK at memlock bytes. */
static void fz_unprivileged(uint64_t memlock)
{
	struct rlimit rl = { .rlim_cur = memlock, .rlim_max = memlock };

	FZ_CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0, "setrlimit: %s", strerror(errno));
	FZ_CHECK(setgroups(0, NULL) == 0, "setgroups: %s", strerror(errno));
	FZ_CHECK(setresgid(FZ_NOBODY, FZ_NOBODY, FZ_NOBODY) == 0, "setresgid: %s",
		 strerror(errno));
	FZ_CHECK(setresuid(FZ_NOBODY, FZ_NOBODY, FZ_NOBODY) == 0, "setresuid: %s",
		 strerror(errno));
	FZ_CHECK(geteuid() == FZ_NOBODY && setresuid(0, 0, 0) != 0, "still privileged");
	/* /proc/self of a non-dumpable process belongs to root. */
	prctl(PR_SET_DUMPABLE, 1);
	w.memlock_pages = memlock / PAGE;
}

static void __attribute__((noreturn)) fz_worker(unsigned int id, uint64_t seed, bool root,
						uint64_t memlock, unsigned int life_ms)
{
	unsigned int total = 0, i, fd;
	struct sysinfo si;
	uint8_t *m;

	memset(&w, 0, sizeof(w));
	w.id = id;
	w.seed = seed;
	w.rs = seed;
	w.root = root;
	w.what = "setup";
	w.nl = -1;
	for (i = 0; i < FZ_FILES; i++)
		w.f[i].fd = -1;
	if (!root)
		fz_unprivileged(memlock);
	/* After the credentials change, which clears it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	alarm(life_ms / 1000 + 60);
	w.deadline = nt_now_ns() + life_ms * 1000000ull;
	FZ_CHECK(sysinfo(&si) == 0, "sysinfo");
	w.totalram = (uint64_t)si.totalram * si.mem_unit / PAGE;
	m = fz_map(FZ_BUF + PAGE, PROT_READ | PROT_WRITE);
	w.buf = m;
	w.guard = m + FZ_BUF;
	FZ_CHECK(mprotect(w.guard, PAGE, PROT_NONE) == 0, "mprotect");
	nt_fill_pattern(w.buf, FZ_BUF, seed);
	w.scratch = fz_map(4 * PAGE, PROT_READ | PROT_WRITE);
	w.ro = fz_map(4 * PAGE, PROT_READ);
	/* Inaccessible for good (an unmapped page could be mapped again). */
	w.hole = fz_map(PAGE, PROT_NONE);
	w.devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	FZ_CHECK(w.devnull >= 0, "/dev/null: %s", strerror(errno));
	fd = nt_open_card(0);
	FZ_CHECK((int)fd >= 0, "open /dev/nicoff0: %s", strerror(-(int)fd));
	FZ_CHECK(nt_query(fd, &w.q) == 0 && w.q.num_cards && w.q.max_ports &&
		 w.q.max_ring_entries >= 2, "QUERY");
	close(fd);
	/* Group members for GROUP_CREATE, at the start of the buffer. */
	for (i = 0; i < 64; i++) {
		struct nicoff_member *mb = (struct nicoff_member *)w.buf + i;

		mb->card = rn(w.q.num_cards);
		mb->port = rn(w.q.max_ports);
	}
	for (i = 0; i < ARRAY_LEN(fz_actions); i++)
		total += fz_actions[i].weight;
	while (nt_now_ns() < w.deadline) {
		unsigned int r = rn(total);

		for (i = 0; r >= fz_actions[i].weight; i++)
			r -= fz_actions[i].weight;
		w.what = fz_actions[i].name;
		fz_actions[i].fn();
		FZ_COUNT(actions, 1);
		if (one_in(400)) {
			/* Killed at a random point, whatever is in flight. */
			fz_sh->selfkill[id % FZ_SELFKILL_SLOTS] = getpid();
			FZ_COUNT(selfkills, 1);
			raise(SIGKILL);
		}
	}
	w.what = "exit";
	if (one_in(2)) {
		for (i = 0; i < FZ_FILES; i++)
			if (w.f[i].fd >= 0)
				fz_close(&w.f[i], one_in(2));
	}
	_exit(0);
}

/* ---------------------------------------------------------- supervisor -- */

struct fz_slot {
	pid_t pid;		/* 0: free */
	unsigned int id;
	uint64_t seed;
	bool root, killed;
};

struct fz_run {
	uint64_t seed;
	unsigned int secs, nworkers;
	unsigned int spawned, killed, failures, grandchild_failures, stuck;
	struct fz_slot slot[FZ_MAX_WORKERS];
};

static uint64_t fz_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void fz_spawn(struct fz_run *run, struct fz_slot *s)
{
	static const uint64_t memlock[] = { 0, 16 << 10, 64 << 10, 256 << 10, 1 << 20 };
	unsigned int id = run->spawned++;
	uint64_t seed = fz_mix(run->seed ^ fz_mix(id + 1)), rs = seed;
	bool root = nt_rand64(&rs) % 5 < 3;
	uint64_t ml = memlock[nt_rand64(&rs) % ARRAY_LEN(memlock)];
	unsigned int life = 300 + nt_rand64(&rs) % 4700;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (!pid)
		fz_worker(id, seed, root, ml, life);
	if (pid < 0) {
		fprintf(stderr, "# fork of worker %u: %s\n", id, strerror(errno));
		run->failures++;
		return;
	}
	s->pid = pid;
	s->id = id;
	s->seed = seed;
	s->root = root;
	s->killed = false;
}

/* A child ended: was that allowed? */
static void fz_reaped(struct fz_run *run, pid_t pid, int status)
{
	struct fz_slot *s = NULL;
	unsigned int i;

	for (i = 0; i < run->nworkers; i++)
		if (run->slot[i].pid == pid)
			s = &run->slot[i];
	if (!s) {
		/* A worker's child, orphaned: it printed why if it failed. */
		if (WIFEXITED(status) && WEXITSTATUS(status) == FZ_FAIL)
			run->grandchild_failures++;
		return;
	}
	s->pid = 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
	    (s->killed || fz_sh->selfkill[s->id % FZ_SELFKILL_SLOTS] == pid))
		return;
	run->failures++;
	if (WIFEXITED(status))
		fprintf(stderr, "# worker %u (%s, seed %#llx) exited %d\n", s->id,
			s->root ? "root" : "uid 65534", (unsigned long long)s->seed,
			WEXITSTATUS(status));
	else
		fprintf(stderr, "# worker %u (%s, seed %#llx) killed by signal %d%s\n", s->id,
			s->root ? "root" : "uid 65534", (unsigned long long)s->seed,
			WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (overran its time)" : "");
}

static void fz_reap_all(struct fz_run *run)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		fz_reaped(run, pid, status);
}

/* State letter of a task ('D': uninterruptible, in the kernel), or 0. */
static char fz_task_state(pid_t pid, const char *tid, char *comm, size_t len)
{
	char path[96], buf[512], *p;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (nt_read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	if (comm) {
		char *o = strchr(buf, '(');

		snprintf(comm, len, "%.*s", o ? (int)(p - o - 1) : 0, o ? o + 1 : "");
	}
	return p[2];
}

/* Our children and theirs: every process of the fuzz still around. */
static unsigned int fz_descendants(pid_t *out, unsigned int max)
{
	pid_t me = getpid(), lvl1[1024];
	unsigned int n = 0, n1 = 0, pass, i;

	for (pass = 0; pass < 2; pass++) {
		struct dirent *d;
		DIR *dir = opendir("/proc");

		if (!dir)
			return n;
		while ((d = readdir(dir))) {
			char path[64], buf[512], *p;
			pid_t pid = atoi(d->d_name), ppid;
			ssize_t len;

			if (pid <= 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/stat", pid);
			len = nt_read_file(path, buf, sizeof(buf));
			if (len <= 0)
				continue;
			p = strrchr(buf, ')');
			if (!p || sscanf(p + 2, "%*c %d", &ppid) != 1)
				continue;
			if (pass == 0 && ppid == me && n1 < ARRAY_LEN(lvl1)) {
				lvl1[n1++] = pid;
				if (n < max)
					out[n++] = pid;
			}
			for (i = 0; pass == 1 && i < n1; i++)
				if (ppid == lvl1[i] && n < max)
					out[n++] = pid;
		}
		closedir(dir);
	}
	return n;
}

static void fz_print_file(const char *path)
{
	char buf[2048];

	if (nt_read_file(path, buf, sizeof(buf)) <= 0)
		return;
	fprintf(stderr, "#   %s:\n", path);
	for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n"))
		fprintf(stderr, "#     %s\n", l);
}

/*
 * Before anything is killed: a task of the fuzz in state D at every look
 * over two seconds is stuck in the kernel.  Returns how many.
 */
static unsigned int fz_find_stuck(struct fz_run *run)
{
	struct {
		pid_t pid;
		char tid[24];
		unsigned int d;
	} t[512];
	unsigned int nt = 0, i, k, looks = 20, stuck = 0;
	pid_t pids[256];
	unsigned int np;

	np = fz_descendants(pids, ARRAY_LEN(pids));
	for (i = 0; i < np; i++) {
		char path[64];
		struct dirent *d;
		DIR *dir;

		snprintf(path, sizeof(path), "/proc/%d/task", pids[i]);
		dir = opendir(path);
		if (!dir)
			continue;
		while ((d = readdir(dir)) && nt < ARRAY_LEN(t)) {
			if (d->d_name[0] == '.')
				continue;
			t[nt].pid = pids[i];
			snprintf(t[nt].tid, sizeof(t[nt].tid), "%.20s", d->d_name);
			t[nt].d = 0;
			nt++;
		}
		closedir(dir);
	}
	for (k = 0; k < looks; k++) {
		for (i = 0; i < nt; i++)
			if (fz_task_state(t[i].pid, t[i].tid, NULL, 0) == 'D')
				t[i].d++;
		fz_reap_all(run);
		nt_sleep_ms(100);
	}
	for (i = 0; i < nt; i++) {
		char comm[32] = "", path[96];

		if (t[i].d < looks || fz_task_state(t[i].pid, t[i].tid, comm, sizeof(comm)) != 'D')
			continue;
		stuck++;
		fprintf(stderr, "# task %s of process %d (%s) stuck in state D for 2 s\n",
			t[i].tid, t[i].pid, comm);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/wchan", t[i].pid, t[i].tid);
		fz_print_file(path);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stack", t[i].pid, t[i].tid);
		fz_print_file(path);
	}
	return stuck;
}

/* SIGKILL every process of the fuzz; reap them all within 30 s.  Returns how many are left. */
static unsigned int fz_kill_all(struct fz_run *run)
{
	uint64_t end = nt_now_ns() + 30000000000ull;
	unsigned int n, i;
	pid_t pids[256];
	int status;
	pid_t pid;

	for (;;) {
		n = fz_descendants(pids, ARRAY_LEN(pids));
		for (i = 0; i < n; i++)
			kill(pids[i], SIGKILL);
		for (i = 0; i < run->nworkers; i++)
			if (run->slot[i].pid)
				run->slot[i].killed = true;
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			fz_reaped(run, pid, status);
		if (pid < 0 && errno == ECHILD)
			return 0;
		if (nt_now_ns() >= end)
			break;
		nt_sleep_ms(20);
	}
	n = fz_descendants(pids, ARRAY_LEN(pids));
	for (i = 0; i < n; i++) {
		char comm[32] = "", path[64], st;

		st = fz_task_state(pids[i], NULL, comm, sizeof(comm));
		fprintf(stderr, "# process %d (%s, state %c) still there 30 s after SIGKILL\n",
			pids[i], comm, st ? st : '?');
		snprintf(path, sizeof(path), "/proc/%d/stack", pids[i]);
		fz_print_file(path);
	}
	return n ? n : 1;
}

/* ------------------------------------------------------ fault settings -- */

static const char *const fz_fault_params[] = {
	"fault_drop_ppm", "fault_dup_ppm", "fault_corrupt_ppm", "fault_reorder_ppm",
	"fault_delay_ppm", "fault_delay_usecs",
};

#define FZ_SNAP_FAULTS 128

struct fz_card_snap {
	uint8_t faults[FZ_SNAP_FAULTS];
	int len;
	uint32_t ports_open;
	bool seen;
};

/* The fault settings (and open ports) of the module and of every card. */
struct fz_snap {
	unsigned long params[ARRAY_LEN(fz_fault_params)];
	uint8_t info[FZ_SNAP_FAULTS];
	int info_len;
	uint32_t ncards;
	struct fz_card_snap *card;
};

static void fz_snap_cb(void *ctx, const struct nlmsghdr *h)
{
	struct fz_snap *s = ctx;
	const struct nlattr *a, *faults = NULL;
	uint32_t card = ~0u, open = ~0u;
	int len, rem;

	nt_nla_for_each(a, nt_nl_attrs(h, &len), len, rem) {
		uint16_t t = a->nla_type & NLA_TYPE_MASK;

		if (t == NICOFF_NL_A_FAULTS)
			faults = a;
		else if (t == NICOFF_NL_A_CARD && a->nla_len >= NLA_HDRLEN + 4)
			card = *(const uint32_t *)nt_nla_data(a);
		else if (t == NICOFF_NL_A_PORTS_OPEN && a->nla_len >= NLA_HDRLEN + 4)
			open = *(const uint32_t *)nt_nla_data(a);
	}
	if (!faults || faults->nla_len - NLA_HDRLEN > FZ_SNAP_FAULTS)
		return;
	if (card == ~0u) {
		s->info_len = faults->nla_len - NLA_HDRLEN;
		memcpy(s->info, nt_nla_data(faults), s->info_len);
	} else if (card < s->ncards) {
		s->card[card].len = faults->nla_len - NLA_HDRLEN;
		memcpy(s->card[card].faults, nt_nla_data(faults), s->card[card].len);
		s->card[card].ports_open = open;
		s->card[card].seen = true;
	}
}

static int fz_snapshot(struct fz_snap *s, uint32_t ncards)
{
	uint32_t seq = 0;
	uint16_t family;
	struct nt_nlmsg m;
	unsigned int i;
	int fd, ret;

	memset(s, 0, sizeof(*s));
	s->ncards = ncards;
	s->card = calloc(ncards, sizeof(*s->card));
	if (!s->card)
		return -ENOMEM;
	for (i = 0; i < ARRAY_LEN(fz_fault_params); i++) {
		ret = nt_param_get(fz_fault_params[i], &s->params[i]);
		if (ret)
			return ret;
	}
	fd = nt_nl_open(&family, &seq);
	if (fd < 0)
		return fd;
	nt_nl_start(&m, family, NLM_F_REQUEST | NLM_F_ACK, NICOFF_NL_CMD_GET_INFO, 1, ++seq);
	ret = nt_nl_xact(fd, &m, fz_snap_cb, s);
	if (!ret) {
		nt_nl_start(&m, family, NLM_F_REQUEST | NLM_F_DUMP, NICOFF_NL_CMD_GET_CARD, 1,
			    ++seq);
		ret = nt_nl_xact(fd, &m, fz_snap_cb, s);
	}
	for (i = 0; !ret && i < ncards; i++)
		if (!s->card[i].seen)
			ret = -ENOENT;
	if (!ret && !s->info_len)
		ret = -ENOENT;
	close(fd);
	return ret == NT_NL_LOST ? -EAGAIN : ret;
}

/* Differences between two snapshots' fault settings, printed; put back if asked. */
static unsigned int fz_faults_diff(const struct fz_snap *a, const struct fz_snap *b, bool restore)
{
	unsigned int i, diff = 0;
	uint32_t seq = 100;
	uint16_t family;
	int fd = -1;

	for (i = 0; i < ARRAY_LEN(fz_fault_params); i++) {
		if (a->params[i] == b->params[i])
			continue;
		diff++;
		fprintf(stderr, "# %s was %lu, is %lu\n", fz_fault_params[i], a->params[i],
			b->params[i]);
		if (restore)
			nt_param_set(fz_fault_params[i], a->params[i]);
	}
	if (a->info_len != b->info_len || memcmp(a->info, b->info, a->info_len)) {
		diff++;
		fprintf(stderr, "# the global faults changed\n");
	}
	if (restore)
		fd = nt_nl_open(&family, &seq);
	for (i = 0; i < a->ncards; i++) {
		struct nt_nlmsg m;
		struct nlattr *nest;

		if (a->card[i].len == b->card[i].len &&
		    !memcmp(a->card[i].faults, b->card[i].faults, a->card[i].len))
			continue;
		diff++;
		fprintf(stderr, "# the faults of card %u changed\n", i);
		if (fd < 0)
			continue;
		nt_nl_start(&m, family, NLM_F_REQUEST | NLM_F_ACK, NICOFF_NL_CMD_SET_FAULTS, 1,
			    ++seq);
		nt_nl_put_u32(&m, NICOFF_NL_A_CARD, i);
		nest = nt_nl_put(&m, NICOFF_NL_A_FAULTS | NLA_F_NESTED, a->card[i].faults,
				 a->card[i].len);
		(void)nest;
		nt_nl_xact(fd, &m, NULL, NULL);
	}
	if (fd >= 0)
		close(fd);
	return diff;
}

/* ---------------------------------------------------------------- tests -- */

FIXTURE(fuzz) {
	int kmsg;
	struct nicoff_query q;
};

FIXTURE_SETUP(fuzz)
{
	ASSERT_EQ(0, nt_query_card(0, &self->q));
	NT_KMSG_WATCH(self->kmsg);
}

FIXTURE_TEARDOWN(fuzz)
{
	NT_KMSG_CHECK(self->kmsg);
}

/*
 * Every ioctl number of the nicoff type: each nr, each direction, sizes
 * around each struct's and at the limits, on a plain file and on a port.
 * Only the six real ones answer; all else is ENOTTY.
 */
TEST_F(fuzz, ioctl_numbers)
{
	static const unsigned int sizes[] = {
		0, 1, 2, 4, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256,
		sizeof(struct nicoff_query), sizeof(struct nicoff_port_open),
		sizeof(struct nicoff_reg_mr), sizeof(struct nicoff_dereg_mr),
		sizeof(struct nicoff_port_stats), (1u << _IOC_SIZEBITS) - 1,
		1u << (_IOC_SIZEBITS - 1),
	};
	static uint8_t big[1u << _IOC_SIZEBITS];
	unsigned int dir, nr, i, pass, checked = 0, real = 0;
	int fds[2], ret, want;

	fds[0] = nt_open_card(0);
	ASSERT_LE(0, fds[0]);
	fds[1] = nt_open_card(0);
	ASSERT_LE(0, fds[1]);
	ASSERT_EQ(0, nt_port_open_fd(fds[1], NICOFF_PORT_ANY, 8, 8, NULL));
	for (dir = 0; dir < 4; dir++) {
		for (nr = 0; nr < 256; nr++) {
			for (i = 0; i < ARRAY_LEN(sizes); i++) {
				unsigned long cmd = _IOC(dir, NICOFF_IOC_MAGIC, nr, sizes[i]);
				unsigned int j;

				for (j = 0; j < i && sizes[j] != sizes[i]; j++)
					;
				if (j < i)
					continue;	/* that size again */

				for (pass = 0; pass < 2; pass++) {
					memset(big, 0, sizeof(struct nicoff_port_stats) + 64);
					ret = nt_ioctl(fds[pass], cmd, big);
					checked++;
					switch (cmd) {
					case NICOFF_IOC_QUERY:
						want = 0;
						break;
					case NICOFF_IOC_PORT_OPEN:
						/* abi_version 0, or a port already */
						want = pass ? -EBUSY : -EPROTO;
						break;
					case NICOFF_IOC_REG_MR:
						want = pass ? -EINVAL : -ENOTCONN;
						break;
					case NICOFF_IOC_DEREG_MR:
						want = pass ? -ENOENT : -ENOTCONN;
						break;
					case NICOFF_IOC_KICK:
					case NICOFF_IOC_PORT_STATS:
						want = pass ? 0 : -ENOTCONN;
						break;
					default:
						want = -ENOTTY;
						break;
					}
					if (want != -ENOTTY)
						real++;
					EXPECT_EQ(want, ret)
						TH_LOG("ioctl %#lx (dir %u nr %#x size %u) on %s",
						       cmd, dir, nr, sizes[i],
						       pass ? "a port" : "a plain file");
				}
			}
		}
	}
	/* Nothing in all that changed the port. */
	EXPECT_EQ(0, nt_stats(fds[1], (struct nicoff_port_stats *)big));
	EXPECT_EQ(0, ((struct nicoff_port_stats *)big)->cmds);
	close(fds[0]);
	close(fds[1]);
	/* The six real numbers, each hit with its own size on both files. */
	EXPECT_EQ(12, real);
	TH_LOG("%u ioctls", checked);
}

static int fz_env(const char *name, unsigned long long def, unsigned long long min,
		  unsigned long long max, unsigned long long *out)
{
	const char *v = getenv(name);
	char *end;

	*out = def;
	if (!v || !*v)
		return 0;
	errno = 0;
	*out = strtoull(v, &end, 0);
	if (errno || *end || *out < min || *out > max)
		return -EINVAL;
	return 0;
}

/* Device nodes of the cards: usable by the unprivileged workers. */
static int fz_chmod_cards(uint32_t ncards, mode_t *modes, bool restore)
{
	char path[64];
	struct stat st;
	uint32_t i;
	int ret = 0;

	for (i = 0; i < ncards; i++) {
		snprintf(path, sizeof(path), "/dev/nicoff%u", i);
		if (!restore) {
			if (stat(path, &st))
				return -errno;
			modes[i] = st.st_mode & 07777;
		}
		if (chmod(path, restore ? modes[i] : 0666))
			ret = -errno;
	}
	return ret;
}

TEST_F_TIMEOUT(fuzz, storm, 500)
{
	unsigned long long seed, secs, nworkers;
	struct fz_snap before, after;
	struct fz_run run;
	uint64_t end, rs, t0;
	long long pinned0, pinned;
	unsigned int i, stuck, left;
	mode_t *modes;

	if (geteuid())
		SKIP(return, "needs root: the workers drop to uid 65534 themselves");
	ASSERT_EQ(0, fz_env("NICOFF_FUZZ_SEED", nt_now_ns() ^ ((uint64_t)getpid() << 32), 0,
			    ~0ull, &seed)) TH_LOG("NICOFF_FUZZ_SEED: a number");
	ASSERT_EQ(0, fz_env("NICOFF_FUZZ_SECS", FZ_DEFAULT_SECS, 1, FZ_MAX_SECS, &secs))
		TH_LOG("NICOFF_FUZZ_SECS: 1 to %d", FZ_MAX_SECS);
	ASSERT_EQ(0, fz_env("NICOFF_FUZZ_WORKERS", FZ_DEFAULT_WORKERS, 1, FZ_MAX_WORKERS,
			    &nworkers)) TH_LOG("NICOFF_FUZZ_WORKERS: 1 to %d", FZ_MAX_WORKERS);
	TH_LOG("seed %#llx (NICOFF_FUZZ_SEED=%#llx replays its choices), %llu s, %llu workers",
	       seed, seed, secs, nworkers);
	fz_sh = mmap(NULL, sizeof(*fz_sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	ASSERT_NE(MAP_FAILED, fz_sh);
	modes = calloc(self->q.num_cards, sizeof(*modes));
	ASSERT_NE(NULL, modes);
	pinned0 = nt_pinned_pages();
	ASSERT_LE(0, pinned0);
	ASSERT_EQ(0, fz_snapshot(&before, self->q.num_cards));
	/* Orphans of the workers come back to us, to be reaped and checked. */
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, fz_chmod_cards(self->q.num_cards, modes, false));

	memset(&run, 0, sizeof(run));
	run.seed = seed;
	run.secs = secs;
	run.nworkers = nworkers;
	rs = fz_mix(seed);
	t0 = nt_now_ns();
	end = t0 + secs * 1000000000ull;
	while (nt_now_ns() < end) {
		fz_reap_all(&run);
		for (i = 0; i < run.nworkers; i++)
			if (!run.slot[i].pid)
				fz_spawn(&run, &run.slot[i]);
		/* About one SIGKILL a second, at a random point of a random worker. */
		if (nt_rand64(&rs) % 20 == 0) {
			struct fz_slot *s = &run.slot[nt_rand64(&rs) % run.nworkers];

			if (s->pid && !s->killed) {
				s->killed = true;
				kill(s->pid, SIGKILL);
				run.killed++;
			}
		}
		nt_sleep_ms(10 + nt_rand64(&rs) % 80);
	}
	stuck = fz_find_stuck(&run);
	left = fz_kill_all(&run);
	EXPECT_EQ(0, fz_chmod_cards(self->q.num_cards, modes, true));
	TH_LOG("%.1f s: %u workers (%u killed by us, %llu by themselves), %llu actions",
	       (nt_now_ns() - t0) / 1e9, run.spawned, run.killed,
	       (unsigned long long)fz_sh->selfkills, (unsigned long long)fz_sh->actions);
	TH_LOG("%llu ioctls, %llu PORT_OPENs, %llu mmaps, %llu REG_MRs (%llu ok), %llu DEREG_MRs",
	       (unsigned long long)fz_sh->ioctls, (unsigned long long)fz_sh->port_opens,
	       (unsigned long long)fz_sh->maps, (unsigned long long)fz_sh->regs,
	       (unsigned long long)fz_sh->regs_ok, (unsigned long long)fz_sh->deregs);
	TH_LOG("%llu commands, %llu completions, %llu ports broken on purpose, %llu races",
	       (unsigned long long)fz_sh->cmds, (unsigned long long)fz_sh->cqes,
	       (unsigned long long)fz_sh->forced_errors, (unsigned long long)fz_sh->races);
	TH_LOG("%llu netlink messages (%llu SETs refused), %llu forks (%llu inherited mappings), "
	       "%llu closes",
	       (unsigned long long)fz_sh->nl_msgs, (unsigned long long)fz_sh->nl_refused,
	       (unsigned long long)fz_sh->forks, (unsigned long long)fz_sh->inherited_maps,
	       (unsigned long long)fz_sh->closes);

	/* Every process ended, none stuck in the kernel, none broke a promise. */
	EXPECT_EQ(0, stuck);
	EXPECT_EQ(0, left);
	EXPECT_EQ(0, run.failures) TH_LOG("workers that failed: see their lines above");
	EXPECT_EQ(0, run.grandchild_failures);
	/* And it did something. */
	EXPECT_LT(0, fz_sh->actions);
	EXPECT_LT(0, fz_sh->ioctls + fz_sh->cmds);

	/* Nothing stays pinned or open. */
	pinned = nt_wait_pinned(0, 10000);
	EXPECT_EQ(0, pinned) TH_LOG("pinned pages: %lld before, %lld after", pinned0, pinned);
	ASSERT_EQ(0, fz_snapshot(&after, self->q.num_cards));
	for (i = 0; i < self->q.num_cards; i++)
		EXPECT_EQ(0, after.card[i].ports_open) TH_LOG("card %u", i);
	/* The fault settings are what they were (put back if not). */
	EXPECT_EQ(0, fz_faults_diff(&before, &after, true));

	/* Every card still serves a fresh port. */
	for (i = 0; i < self->q.num_cards && i < 64; i++) {
		struct nt_port p;

		ASSERT_EQ(0, nt_port_open(&p, i, NICOFF_PORT_ANY, 8, 8)) TH_LOG("card %u", i);
		EXPECT_EQ(0, fz_nop_round_trip(&p, 0xf00d + i, 10000)) TH_LOG("card %u", i);
		nt_port_close(&p);
	}
	EXPECT_EQ(0, nt_wait_pinned(0, 2000));
	free(before.card);
	free(after.card);
	free(modes);
}

TEST_HARNESS_MAIN
