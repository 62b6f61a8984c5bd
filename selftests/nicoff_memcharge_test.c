// SPDX-License-Identifier: GPL-2.0
/*
 * What one unprivileged user can make the module allocate, against the
 * bound of Documentation/limits.md.
 *
 * A child of user and group 65534 (nobody), RLIMIT_MEMLOCK 8 MiB, in a
 * memory cgroup of its own, is given the device nodes the way the
 * packaged udev rule gives them to the group nicoff (root:65534, 0660).
 * It opens every port of every card, with the largest rings its memlock
 * leaves room for; registers regions until its pin budget runs out;
 * creates groups of one member until its port may have no more; has one
 * port of each card send unexpected messages to every port of the next
 * card: first what the documented budgets should accept, then one more to
 * every port, which must be refused (receiver not ready).  Ports that
 * accept it anyway are filled (an unfixed module) until the growth passes
 * the bound.  Last it fills every card's group budget (card_group_members)
 * with groups of the largest size allowed, left being created (the other
 * members never come), when a group holds the most.
 *
 * The parent measures MemAvailable (with the free pages of the per-CPU
 * lists), Slab (and SUnreclaim, VmallocUsed for the record) and the
 * cgroup's kernel memory before and while all of it is held: the growth
 * of MemAvailable, and that of Slab, stay under the bound computed from
 * the tunables, and the cgroup pays for the rings and the buffered
 * messages.  Once the child is gone the memory comes back
 * and nothing stays pinned.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "nicoff_util.h"

#define PAGE		4096ul
#define KIB		1024ull
#define MIB		(1024ull * 1024)
#define NOBODY		65534
#define MEMLOCK		(8 * MIB)	/* the kernel's default RLIMIT_MEMLOCK */
#define MSG_MAX		(512 * KIB)
#define MAX_CARDS	64
#define MAX_PORTS	(64 * 64)
#define MAX_GROUPS	1000		/* more than the firmware's per-port limit */
#define PORT_GROUPS	64		/* the firmware's live groups per port */
#define BIG_GROUP_ID	1000		/* above the one-member groups' ids */
/* Long enough for a group never completed to outlive the measuring. */
#define CREATE_MS	600000
#define CG_ROOT		"/sys/fs/cgroup"
#define CG_DIR		CG_ROOT "/nicoff-memcharge"
#define TMO_MS		20000
/* The firmware's ceiling of the retransmission timeout (rto_max_ns). */
#define FW_RTO_MAX_US	50000
/* Module defaults, for a module that lacks the tunables (an unfixed one). */
#define DEF_UNEXP	(4 * MIB)
#define DEF_CARD_UNEXP	(16 * MIB)
#define DEF_GROUP_SIZE	4096
#define DEF_CARD_MEMBERS	16384
/*
 * Documentation/limits.md: per port besides its rings; per region besides
 * 16 bytes per page; per group of S members 3 KiB + 64 S, and 80 S more
 * while it is created; memory per byte charged to unexpected messages 1.3
 * (13 / 10).
 */
#define DOC_PORT	(2 * KIB)
#define DOC_REGION	256
#define DOC_PAGE	16
#define DOC_GROUP(s)	(3 * KIB + 64ull * (s))
#define DOC_GROUP_CREATING(s)	(DOC_GROUP(s) + 80ull * (s))
/* Measurement noise allowed around the bound and when memory comes back. */
#define SLACK		(16 * MIB)

/* What the parent tells the child. */
struct orders {
	uint32_t nics, ports, max_ring;
	uint64_t unexp, card_unexp;
	uint32_t group_size;		/* the largest group allowed */
	uint64_t card_members;		/* card_group_members */
	uint64_t budget_us;		/* how long a refused message is retried */
	long long avail0_kb;		/* avail_kb() before */
	long long limit_kb;		/* growth past which the child stops filling */
};

/* What the child did. */
struct report {
	uint32_t ports, ring_pages, big_ports;
	int open_last;			/* PORT_OPEN's result that stopped it, or 0 */
	int reopen_big, reopen_small;	/* PORT_OPEN results once memlock is used */
	bool reopen_over;		/* the large one is over RLIMIT_MEMLOCK */
	uint32_t regions, region_pages;
	int region_last;		/* REG_MR's result that stopped it */
	uint32_t groups, group_ports;
	int group_last;
	uint32_t big_groups;		/* of group_size members, being created */
	uint32_t big_full;		/* cards that refused one more (ENOSPC) */
	uint32_t big_other;		/* other refusals */
	int big_other_status;
	uint64_t msg;			/* message size */
	uint32_t fill_ok, fill_err;
	int fill_err_status;
	uint32_t probe_ok, probe_refused, probe_other;
	int probe_other_status;
	uint32_t topped_up;		/* messages sent beyond the bound (unfixed) */
	uint64_t data;			/* bytes buffered unexpected */
};

struct mem {
	long long avail, slab, sunreclaim, vmalloc;	/* kB */
	long long cg_kernel;				/* bytes, -1 if none */
};

/* The number after "key<sep>" in a file of such lines, or -1. */
static long long file_key(const char *path, const char *key, char sep)
{
	char line[256];
	long long v = -1, x;
	size_t n = strlen(key);
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, n) && line[n] == sep &&
		    sscanf(line + n + 1, "%lld", &x) == 1) {
			v = x;
			break;
		}
	}
	fclose(f);
	return v;
}

static long long meminfo_kb(const char *key)
{
	return file_key("/proc/meminfo", key, ':');
}

/*
 * Free pages the page allocator keeps in its per-CPU lists, in kB: MemFree
 * and MemAvailable leave them out.  They held 27 MB before the baseline in
 * one run (after tests that freed much) and 4 MB at its end: what they
 * hand back meanwhile would hide that much of the growth measured.
 */
static long long pcp_free_kb(void)
{
	char line[256];
	long long kb = 0, x;
	FILE *f = fopen("/proc/zoneinfo", "r");

	if (!f)
		return 0;
	/* "count:" appears only in the per-CPU page sets, one per CPU and zone. */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " count: %lld", &x) == 1)
			kb += x * (long long)(PAGE / KIB);
	fclose(f);
	return kb;
}

/* Memory that could be had: MemAvailable and the per-CPU free pages. */
static long long avail_kb(void)
{
	return meminfo_kb("MemAvailable") + pcp_free_kb();
}

static long long cg_stat(const char *key)
{
	return file_key(CG_DIR "/memory.stat", key, ' ');
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

static void mem_read(struct mem *m, bool settle)
{
	if (settle) {
		sync();
		write_str("/proc/sys/vm/drop_caches", "3");
		nt_sleep_ms(200);
	}
	m->avail = avail_kb();
	m->slab = meminfo_kb("Slab");
	m->sunreclaim = meminfo_kb("SUnreclaim");
	m->vmalloc = meminfo_kb("VmallocUsed");
	m->cg_kernel = cg_stat("kernel");
}

/* A memory cgroup for the child: cgroup2 mounted and +memory, or false. */
static bool cg_setup(void)
{
	char buf[256] = "";
	int fd;

	if (access(CG_ROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CG_ROOT, "cgroup2", 0, NULL))
		return false;
	fd = open(CG_ROOT "/cgroup.controllers", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	close(fd);
	if (!strstr(buf, "memory"))
		return false;
	write_str(CG_ROOT "/cgroup.subtree_control", "+memory");
	rmdir(CG_DIR);
	if (mkdir(CG_DIR, 0755) && errno != EEXIST)
		return false;
	return access(CG_DIR "/memory.stat", R_OK) == 0;
}

/* ---------------------------------------------------------------- child -- */

struct child {
	struct orders o;
	struct report r;
	struct nt_port *p;		/* [card * ports + i], in opening order per card */
	uint32_t *nports;		/* per card */
	struct nt_port **snd;		/* each card's first port: its sender */
	uint32_t *smr;			/* sender's region */
	uint32_t *tmr;			/* [card * ports + i]: member table's region, or 0 */
	unsigned char *sbuf;
	unsigned char *page;
	uint64_t ring_used;		/* pages charged for rings */
};

static uint32_t ring_pages(uint32_t entries)
{
	return (NICOFF_RING_HDR_SIZE + entries * 64ul + PAGE - 1) / PAGE;
}

/*
 * Run many commands on many ports at once: port i gets cmds[i][0..n[i]);
 * each completion's status goes to st[i][tag].  Returns the number done.
 */
static uint32_t pump(struct nt_port **ports, uint32_t np, struct nicoff_cmd **cmds,
		     const uint32_t *n, int32_t **st, int timeout_ms)
{
	uint64_t deadline = nt_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	uint32_t sent[MAX_CARDS] = { 0 }, done[MAX_CARDS] = { 0 }, total = 0, want = 0, i;
	struct pollfd pfd[MAX_CARDS];

	for (i = 0; i < np; i++)
		want += n[i];
	while (total < want && nt_now_ns() < deadline) {
		bool idle = true;

		for (i = 0; i < np; i++) {
			struct nicoff_cqe q[64];
			uint32_t k = n[i] - sent[i], space = nt_cmd_space(ports[i]);
			int got, j;

			if (k > space)
				k = space;
			if (k && !nt_submit(ports[i], cmds[i] + sent[i], k)) {
				sent[i] += k;
				idle = false;
			}
			got = nt_reap(ports[i], q, 64);
			for (j = 0; j < got; j++) {
				if (q[j].tag < n[i])
					st[i][q[j].tag] = q[j].status;
				done[i]++;
				total++;
				idle = false;
			}
			pfd[i].fd = ports[i]->fd;
			pfd[i].events = POLLIN;
		}
		if (idle)
			poll(pfd, np, 10);
	}
	return total;
}

/* Every port of every card, with the largest rings memlock leaves room for. */
static int child_open(struct child *c)
{
	uint64_t limit = MEMLOCK / PAGE, total = (uint64_t)c->o.nics * c->o.ports, k = 0;
	uint32_t card, i;

	for (i = 0; i < c->o.ports; i++) {
		for (card = 0; card < c->o.nics; card++, k++) {
			struct nt_port *p = &c->p[card * c->o.ports + c->nports[card]];
			uint64_t later = (total - k - 1) * 2 * ring_pages(2);
			uint32_t e = c->o.max_ring;
			int ret;

			while (e > 2 && c->ring_used + later + 2 * ring_pages(e) > limit)
				e /= 2;
			ret = nt_port_open(p, card, NICOFF_PORT_ANY, e, e);
			if (ret == -ENOMEM && e > 2) {
				e = 2;
				ret = nt_port_open(p, card, NICOFF_PORT_ANY, e, e);
			}
			if (ret == -ENOMEM || ret == -EBUSY || ret == -EMFILE) {
				c->r.open_last = ret;
				return 0;
			}
			NT_CK(ret == 0);
			c->ring_used += 2 * ring_pages(e);
			c->r.ring_pages += 2 * ring_pages(e);
			c->r.big_ports += e == c->o.max_ring;
			c->nports[card]++;
			c->r.ports++;
		}
	}
	return 0;
}

/*
 * Memlock is used up: a port with rings of the smallest size (one page
 * each), closed, can be opened again with them, and not with the largest.
 */
static int child_reopen(struct child *c)
{
	uint32_t card = c->o.nics - 1, i = c->nports[card];
	struct nt_port *p = NULL;
	uint32_t e;
	int fd;

	while (i-- > 1 && !p)
		if (ring_pages(c->p[card * c->o.ports + i].cmd_entries) == ring_pages(2))
			p = &c->p[card * c->o.ports + i];
	NT_CK(p);
	e = p->cmd_entries;
	c->r.reopen_over = c->ring_used - 2 * ring_pages(2) + 2 * ring_pages(c->o.max_ring) >
			   MEMLOCK / PAGE;
	nt_port_close(p);
	fd = nt_open_card(card);
	NT_CK(fd >= 0);
	c->r.reopen_big = nt_port_open_fd(fd, NICOFF_PORT_ANY, c->o.max_ring, c->o.max_ring, NULL);
	close(fd);
	c->r.reopen_small = nt_port_open(p, card, NICOFF_PORT_ANY, e, e);
	return 0;
}

/* Groups a port can have being created: its live groups, its completion ring. */
static uint32_t big_room(const struct nt_port *p)
{
	/* A completion slot each, and two for the NOP and a refusal behind them. */
	uint32_t cq = p->cq_entries > 2 ? p->cq_entries - 2 : 0;

	return cq < PORT_GROUPS ? cq : PORT_GROUPS;
}

/*
 * The member table of the large groups, every (card, port) with port
 * major (a port is member po.port * nics + card), registered on enough
 * ports of each card besides its sender to fill the card's budget.
 */
static int child_tables(struct child *c)
{
	uint64_t len = ((uint64_t)c->o.group_size * sizeof(struct nicoff_member) + PAGE - 1) /
		       PAGE * PAGE;
	uint64_t need = c->o.card_members / c->o.group_size + 1;
	struct nicoff_member *t;
	uint32_t card, i;

	t = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		 -1, 0);
	NT_CK(t != MAP_FAILED);
	for (i = 0; i < c->o.group_size; i++) {
		t[i].card = i % c->o.nics;
		t[i].port = i / c->o.nics;
	}
	for (card = 0; card < c->o.nics; card++) {
		uint64_t room = 0;

		for (i = 1; i < c->nports[card] && room < need; i++) {
			struct nt_port *p = &c->p[card * c->o.ports + i];

			if (!big_room(p) || p->po.port * c->o.nics + card >= c->o.group_size)
				continue;
			NT_CK(nt_reg_mr(p->fd, t, len, 0, &c->tmr[card * c->o.ports + i]) == 0);
			c->r.regions++;
			c->r.region_pages += len / PAGE;
			room += big_room(p);
		}
		NT_CK(room >= need);
	}
	return 0;
}

/* The senders' regions, then one-page regions until the pin budget is gone. */
static int child_regions(struct child *c)
{
	uint32_t card, k = 0;
	int ret = 0;

	for (card = 0; card < c->o.nics; card++) {
		struct nicoff_member *m = (void *)(c->sbuf + card * c->r.msg);

		m->card = card;
		m->port = c->snd[card]->po.port;
		NT_CK(nt_reg_mr(c->snd[card]->fd, m, c->r.msg, 0, &c->smr[card]) == 0);
		c->r.regions++;
		c->r.region_pages += c->r.msg / PAGE;
	}
	NT_CK(child_tables(c) == 0);
	while (c->r.regions < 1000000) {
		uint32_t n = c->nports[k % c->o.nics];
		struct nt_port *p = &c->p[(k % c->o.nics) * c->o.ports + (k / c->o.nics) % n];

		ret = nt_reg_mr(p->fd, c->page, PAGE, 0, NULL);
		if (ret)
			break;
		c->r.regions++;
		c->r.region_pages++;
		k++;
	}
	c->r.region_last = ret;
	return 0;
}

/* Groups of one member on every sender until the card refuses one more. */
static int child_groups(struct child *c)
{
	struct nicoff_cmd cmd;
	struct nicoff_cqe q;
	uint32_t card, g;
	int ret;

	for (card = 0; card < c->o.nics; card++) {
		for (g = 1; g <= MAX_GROUPS; g++) {
			nicoff_prep_group_create(&cmd, g, 0, 1, c->smr[card], 0,
						 NICOFF_BARRIER_DEFAULT, 0, g);
			ret = nt_run_one(c->snd[card], &cmd, &q, TMO_MS);
			NT_CK(ret == 0);
			if (q.status) {
				c->r.group_last = q.status;
				break;
			}
			c->r.groups++;
		}
		c->r.group_ports++;
	}
	return 0;
}

/*
 * Card c's ports get messages from card c + 1's sender: each port its
 * budget until the card's is used, all of which must be buffered.
 */
static int child_fill(struct child *c, struct nt_port **snd, struct nicoff_cmd **cmds,
		      uint32_t *n, int32_t **st)
{
	uint64_t per_port = c->o.unexp / c->r.msg * c->r.msg;
	uint32_t card, i, j;

	for (card = 0; card < c->o.nics; card++) {
		uint32_t src = (card + 1) % c->o.nics;
		uint64_t left = c->o.card_unexp;

		snd[card] = c->snd[src];
		n[card] = 0;
		for (i = 0; i < c->nports[card] && left >= c->r.msg; i++) {
			uint64_t give = per_port < left ? per_port : left;

			for (j = 0; j < give / c->r.msg; j++) {
				nicoff_prep_send(&cmds[card][n[card]], card,
						 c->p[card * c->o.ports + i].po.port, c->smr[src],
						 0, c->r.msg, n[card], n[card]);
				n[card]++;
			}
			left -= give / c->r.msg * c->r.msg;
		}
	}
	pump(snd, c->o.nics, cmds, n, st, TMO_MS + 10000);
	for (card = 0; card < c->o.nics; card++) {
		for (i = 0; i < n[card]; i++) {
			if (st[card][i] == 0) {
				c->r.fill_ok++;
				c->r.data += c->r.msg;
			} else {
				c->r.fill_err++;
				c->r.fill_err_status = st[card][i];
			}
		}
	}
	return 0;
}

static long long child_growth_kb(const struct child *c)
{
	return c->o.avail0_kb - avail_kb();
}

/* One byte more to every port: refused by all.  Those that take it are filled. */
static int child_probe(struct child *c, struct nt_port **snd, struct nicoff_cmd **cmds,
		       uint32_t *n, int32_t **st)
{
	uint32_t card, i, j;

	for (card = 0; card < c->o.nics; card++) {
		n[card] = c->nports[card];
		for (i = 0; i < n[card]; i++) {
			st[card][i] = 1;
			nicoff_prep_send(&cmds[card][i], card, c->p[card * c->o.ports + i].po.port,
					 c->smr[(card + 1) % c->o.nics], 0, 1, i, i);
		}
	}
	pump(snd, c->o.nics, cmds, n, st, c->o.budget_us / 1000 + TMO_MS);
	for (card = 0; card < c->o.nics; card++) {
		for (i = 0; i < n[card]; i++) {
			if (st[card][i] == 0) {
				c->r.probe_ok++;
				c->r.data += 1;
			} else if (st[card][i] == -ENOBUFS) {
				c->r.probe_refused++;
			} else {
				c->r.probe_other++;
				c->r.probe_other_status = st[card][i];
			}
		}
	}
	/* An unfixed module took them: fill those ports until past the bound. */
	for (card = 0; card < c->o.nics; card++) {
		uint32_t took[MAX_PORTS], ntook = 0;

		for (i = 0; i < n[card]; i++)
			if (st[card][i] == 0)
				took[ntook++] = i;
		for (i = 0; i < ntook && child_growth_kb(c) <= c->o.limit_kb; i++) {
			uint32_t k = c->o.unexp / c->r.msg;
			struct nt_port *s = snd[card];

			for (j = 0; j < k; j++) {
				st[card][j] = 1;
				nicoff_prep_send(&cmds[card][j], card,
						 c->p[card * c->o.ports + took[i]].po.port,
						 c->smr[(card + 1) % c->o.nics], 0, c->r.msg, j, j);
			}
			pump(&s, 1, &cmds[card], &k, &st[card], TMO_MS);
			for (j = 0; j < k; j++) {
				if (st[card][j] == 0) {
					c->r.topped_up++;
					c->r.data += c->r.msg;
				}
			}
		}
	}
	return 0;
}

/*
 * Fill each card's group budget with groups of the largest size, on the
 * ports child_tables() chose: each stays being created (no other member
 * creates it), until the card refuses one (ENOSPC).  A NOP behind each
 * tells when the card has taken it.
 */
static int child_big_groups(struct child *c)
{
	uint32_t card, i, k, id = BIG_GROUP_ID;

	for (card = 0; card < c->o.nics; card++) {
		int last = 0;

		for (i = 1; i < c->nports[card] && !last; i++) {
			struct nt_port *p = &c->p[card * c->o.ports + i];
			uint32_t mr = c->tmr[card * c->o.ports + i];

			for (k = 0; mr && k < big_room(p) && !last; k++) {
				uint64_t deadline = nt_now_ns() + TMO_MS * 1000000ull;
				struct nicoff_cmd cmd[2];
				struct nicoff_cqe q;
				bool nop = false;

				nicoff_prep_group_create(&cmd[0], ++id, p->po.port * c->o.nics + card,
							 c->o.group_size, mr, 0,
							 NICOFF_BARRIER_DEFAULT, 0, 1);
				nicoff_prep_nop(&cmd[1], 2);
				NT_CK(nt_submit(p, cmd, 2) == 0);
				while (!nop && nt_now_ns() < deadline) {
					if (nt_wait_cqes(p, &q, 1, 1000) != 1)
						continue;
					if (q.tag == 2)
						nop = true;
					else
						last = q.status ? q.status : -EPROTO;
				}
				NT_CK(nop);
				if (!last)
					c->r.big_groups++;
			}
		}
		if (last == -ENOSPC) {
			c->r.big_full++;
		} else {
			c->r.big_other++;
			c->r.big_other_status = last;
		}
	}
	return 0;
}

static int child_main(int rd, int wr)
{
	struct rlimit nofile, ml = { .rlim_cur = MEMLOCK, .rlim_max = MEMLOCK };
	struct nt_port *snd[MAX_CARDS];
	struct nicoff_cmd *cmds[MAX_CARDS];
	int32_t *st[MAX_CARDS];
	uint32_t n[MAX_CARDS];
	struct child c;
	uint32_t card, per;
	char ch;

	memset(&c, 0, sizeof(c));
	NT_CK(read(rd, &c.o, sizeof(c.o)) == sizeof(c.o));
	/* Into the cgroup, then give up root: what remains is a plain user. */
	if (access(CG_DIR "/cgroup.procs", W_OK) == 0)
		NT_CK(write_str(CG_DIR "/cgroup.procs", "0") == 0);
	NT_CK(getrlimit(RLIMIT_NOFILE, &nofile) == 0);
	nofile.rlim_cur = nofile.rlim_max;
	NT_CK(setrlimit(RLIMIT_NOFILE, &nofile) == 0);
	NT_CK(setrlimit(RLIMIT_MEMLOCK, &ml) == 0);
	NT_CK(setgroups(0, NULL) == 0);
	NT_CK(setresgid(NOBODY, NOBODY, NOBODY) == 0);
	NT_CK(setresuid(NOBODY, NOBODY, NOBODY) == 0);
	NT_CK(geteuid() == NOBODY);

	c.r.msg = c.o.unexp < MSG_MAX ? c.o.unexp / PAGE * PAGE : MSG_MAX;
	if (c.r.msg * c.o.nics > MEMLOCK / 2)
		c.r.msg = MEMLOCK / 2 / c.o.nics / PAGE * PAGE;
	NT_CK(c.r.msg >= PAGE);
	c.p = calloc((size_t)c.o.nics * c.o.ports, sizeof(*c.p));
	c.nports = calloc(c.o.nics, sizeof(*c.nports));
	c.smr = calloc(c.o.nics, sizeof(*c.smr));
	c.tmr = calloc((size_t)c.o.nics * c.o.ports, sizeof(*c.tmr));
	c.snd = calloc(c.o.nics, sizeof(*c.snd));
	c.sbuf = mmap(NULL, c.r.msg * c.o.nics, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	c.page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	NT_CK(c.p && c.nports && c.smr && c.tmr && c.snd && c.sbuf != MAP_FAILED && c.page != MAP_FAILED);
	per = c.o.ports + 1;
	for (card = 0; card < c.o.nics; card++) {
		cmds[card] = calloc(per * 8 > 4096 ? per * 8 : 4096, sizeof(**cmds));
		st[card] = calloc(per * 8 > 4096 ? per * 8 : 4096, sizeof(**st));
		NT_CK(cmds[card] && st[card]);
	}
	/* Ready: the parent measures; then go. */
	NT_CK(write(wr, "r", 1) == 1);
	NT_CK(read(rd, &c.o, sizeof(c.o)) == sizeof(c.o));

	NT_CK(child_open(&c) == 0);
	if (c.r.open_last)
		fprintf(stderr, "# child: %u ports (%u ring pages), then %d\n", c.r.ports,
			c.r.ring_pages, c.r.open_last);
	NT_CK(c.r.ports >= c.o.nics);
	for (card = 0; card < c.o.nics; card++)
		c.snd[card] = &c.p[card * c.o.ports];
	NT_CK(child_reopen(&c) == 0);
	NT_CK(child_regions(&c) == 0);
	NT_CK(child_groups(&c) == 0);
	NT_CK(child_fill(&c, snd, cmds, n, st) == 0);
	NT_CK(child_probe(&c, snd, cmds, n, st) == 0);
	NT_CK(child_big_groups(&c) == 0);

	/* Full: report, let the parent measure, then exit (closing everything). */
	NT_CK(write(wr, &c.r, sizeof(c.r)) == sizeof(c.r));
	NT_CK(read(rd, &ch, 1) == 1);
	return 0;
}

/* --------------------------------------------------------------- parent -- */

struct node_mode {
	struct stat st;
	bool saved;
};

FIXTURE(memcharge) {
	struct nicoff_query q;
	struct orders o;
	bool cg;
	long long pinned0;
	unsigned long create_ms;	/* group_create_ms to put back */
	struct node_mode nodes[MAX_CARDS];
};

static unsigned long param_or(const char *name, unsigned long def)
{
	unsigned long v;

	return nt_param_get(name, &v) ? def : v;
}

FIXTURE_SETUP(memcharge)
{
	unsigned long rto, retries, v;
	uint64_t r = 0;
	uint32_t i;

	ASSERT_EQ(0, nt_query_card(0, &self->q));
	if (self->q.num_cards < 2)
		SKIP(return, "needs 2 cards, the module has %u", self->q.num_cards);
	if (self->q.num_cards > MAX_CARDS || self->q.max_ports * self->q.num_cards > MAX_PORTS)
		SKIP(return, "more than %u cards or %u ports in all", MAX_CARDS, MAX_PORTS);
	self->o.nics = self->q.num_cards;
	self->o.ports = self->q.max_ports;
	self->o.max_ring = self->q.max_ring_entries;
	self->o.unexp = param_or("unexpected_bytes", DEF_UNEXP);
	self->o.card_unexp = param_or("card_unexpected_bytes", DEF_CARD_UNEXP);
	self->o.group_size = param_or("max_group_size", DEF_GROUP_SIZE);
	if (self->o.group_size > self->o.nics * self->o.ports)
		self->o.group_size = self->o.nics * self->o.ports;
	self->o.card_members = param_or("card_group_members", DEF_CARD_MEMBERS);
	/* The large groups are never completed: they must outlast the test. */
	ASSERT_EQ(0, nt_param_get("group_create_ms", &self->create_ms));
	ASSERT_EQ(0, nt_param_set("group_create_ms", CREATE_MS));
	ASSERT_EQ(0, nt_param_get("rto_usecs", &rto));
	ASSERT_EQ(0, nt_param_get("max_retries", &retries));
	for (v = rto, i = 0; i <= retries; i++) {
		r += v;
		v = v > FW_RTO_MAX_US / 2 ? FW_RTO_MAX_US : v * 2;
	}
	self->o.budget_us = r;
	ASSERT_EQ(0, nt_set_faults(0, 0, 0, 0));
	self->pinned0 = nt_pinned_pages();
	ASSERT_LE(0, self->pinned0);
	self->cg = cg_setup();
	/* What the packaged udev rule does for the group nicoff. */
	for (i = 0; i < self->o.nics; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/dev/nicoff%u", i);
		ASSERT_EQ(0, stat(path, &self->nodes[i].st));
		self->nodes[i].saved = true;
		ASSERT_EQ(0, chown(path, 0, NOBODY));
		ASSERT_EQ(0, chmod(path, 0660));
	}
}

FIXTURE_TEARDOWN(memcharge)
{
	uint32_t i;

	if (self->create_ms)
		EXPECT_EQ(0, nt_param_set("group_create_ms", self->create_ms));
	for (i = 0; i < MAX_CARDS; i++) {
		char path[64];

		if (!self->nodes[i].saved)
			continue;
		snprintf(path, sizeof(path), "/dev/nicoff%u", i);
		EXPECT_EQ(0, chown(path, self->nodes[i].st.st_uid, self->nodes[i].st.st_gid));
		EXPECT_EQ(0, chmod(path, self->nodes[i].st.st_mode & 07777));
	}
	if (self->cg)
		rmdir(CG_DIR);
}

/*
 * The bound of Documentation/limits.md for what the child did: ports and
 * their rings (all of a user's rings within RLIMIT_MEMLOCK), regions
 * (pages within RLIMIT_MEMLOCK), its groups (the large ones being
 * created), and 1.3 times the smaller of the card's budget and the sum of
 * its ports' on every card.
 */
static uint64_t doc_bound(const struct orders *o, const struct report *r)
{
	uint64_t card = o->card_unexp < (uint64_t)o->ports * o->unexp ?
			o->card_unexp : (uint64_t)o->ports * o->unexp;

	return (uint64_t)r->ports * DOC_PORT + MEMLOCK +
	       (uint64_t)r->regions * DOC_REGION + (uint64_t)r->region_pages * DOC_PAGE +
	       (uint64_t)r->groups * DOC_GROUP(1) +
	       (uint64_t)r->big_groups * DOC_GROUP_CREATING(o->group_size) +
	       o->nics * card * 13 / 10;
}

TEST_F_TIMEOUT(memcharge, unprivileged_user_fills_everything, 300)
{
	int to_child[2], to_parent[2], status;
	struct mem m0, m1, m2;
	struct report r;
	uint64_t bound, slab_bound, expect_ok, expect_ports, expect_big, t0 = nt_now_ns();
	long long grow_kb, slab_kb, back_kb;
	pid_t pid;
	char ch;

	ASSERT_EQ(0, pipe2(to_child, O_CLOEXEC));
	ASSERT_EQ(0, pipe2(to_parent, O_CLOEXEC));
	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(to_child[1]);
		close(to_parent[0]);
		_exit(child_main(to_child[0], to_parent[1]));
	}
	close(to_child[0]);
	close(to_parent[1]);
	ASSERT_EQ(sizeof(self->o), write(to_child[1], &self->o, sizeof(self->o)));
	ASSERT_EQ(1, read(to_parent[0], &ch, 1));

	/* Before: the child exists, its buffers are touched, nothing is open. */
	mem_read(&m0, true);
	self->o.avail0_kb = m0.avail;
	memset(&r, 0, sizeof(r));
	r.ports = self->o.nics * self->o.ports;
	r.regions = MEMLOCK / PAGE;
	r.region_pages = MEMLOCK / PAGE;
	r.groups = self->o.nics * PORT_GROUPS;
	r.big_groups = self->o.nics * (self->o.card_members / self->o.group_size);
	self->o.limit_kb = (doc_bound(&self->o, &r) + SLACK) / KIB;
	ASSERT_EQ(sizeof(self->o), write(to_child[1], &self->o, sizeof(self->o)));
	ASSERT_EQ(sizeof(r), read(to_parent[0], &r, sizeof(r)));

	/* Full. */
	mem_read(&m1, true);
	bound = doc_bound(&self->o, &r);
	grow_kb = m0.avail - m1.avail;
	/* The rings are vmalloc()ed: the rest of the bound is what the slab may take. */
	slab_bound = bound - (uint64_t)r.ring_pages * PAGE;
	slab_kb = m1.slab - m0.slab;
	TH_LOG("%u ports (%u with %u-entry rings), %u ring pages; PORT_OPEN past memlock: %d, smallest: %d",
	       r.ports, r.big_ports, self->o.max_ring, r.ring_pages, r.reopen_big,
	       r.reopen_small);
	TH_LOG("%u regions (%u pages), then %d; %u groups on %u ports, then %d",
	       r.regions, r.region_pages, r.region_last, r.groups, r.group_ports, r.group_last);
	TH_LOG("%u groups of %u members being created, %u cards then full, %u other (%d)",
	       r.big_groups, self->o.group_size, r.big_full, r.big_other, r.big_other_status);
	TH_LOG("%u messages of %llu KiB buffered (%u failed, %d); one more byte to each port: %u taken, %u refused, %u other (%d); %u sent past the bound",
	       r.fill_ok, (unsigned long long)r.msg / KIB, r.fill_err, r.fill_err_status,
	       r.probe_ok, r.probe_refused, r.probe_other, r.probe_other_status, r.topped_up);
	TH_LOG("MemAvailable+pcp %lld -> %lld kB: grew %lld kB; bound %llu kB (+ %llu slack); data %llu kB",
	       m0.avail, m1.avail, grow_kb, (unsigned long long)bound / KIB,
	       (unsigned long long)SLACK / KIB, (unsigned long long)r.data / KIB);
	TH_LOG("Slab %lld -> %lld kB: grew %lld kB; bound %llu kB (+ %llu slack)",
	       m0.slab, m1.slab, slab_kb, (unsigned long long)slab_bound / KIB,
	       (unsigned long long)SLACK / KIB);
	TH_LOG("SUnreclaim %lld -> %lld kB, VmallocUsed %lld -> %lld kB",
	       m0.sunreclaim, m1.sunreclaim, m0.vmalloc, m1.vmalloc);
	TH_LOG("cgroup kernel memory %lld -> %lld kB", m0.cg_kernel / 1024, m1.cg_kernel / 1024);

	/* Every port, within memlock; then memlock refuses a large ring. */
	expect_ports = (uint64_t)self->o.nics * self->o.ports;
	if (expect_ports > MEMLOCK / PAGE / 2)
		expect_ports = MEMLOCK / PAGE / 2;
	EXPECT_EQ(expect_ports, r.ports);
	EXPECT_GE(MEMLOCK / PAGE, r.ring_pages);
	EXPECT_TRUE(r.reopen_over);
	EXPECT_EQ(-ENOMEM, r.reopen_big);
	EXPECT_EQ(0, r.reopen_small);
	EXPECT_EQ(-ENOMEM, r.region_last);
	EXPECT_EQ(MEMLOCK / PAGE, r.region_pages);
	EXPECT_EQ(-ENOSPC, r.group_last);
	/* Every card's group budget is full of the largest groups, then refuses. */
	ASSERT_EQ(0, r.groups % self->o.nics);
	expect_big = self->o.nics * ((self->o.card_members - r.groups / self->o.nics) /
				     self->o.group_size);
	EXPECT_EQ(expect_big, r.big_groups);
	EXPECT_EQ(self->o.nics, r.big_full);
	EXPECT_EQ(0, r.big_other);
	/* What the budgets allow is buffered; nothing more is, anywhere. */
	expect_ok = (self->o.card_unexp < (uint64_t)self->o.ports * self->o.unexp ?
		     self->o.card_unexp / r.msg :
		     (uint64_t)self->o.ports * (self->o.unexp / r.msg)) * self->o.nics;
	EXPECT_EQ(expect_ok, r.fill_ok);
	EXPECT_EQ(0, r.fill_err);
	EXPECT_EQ(0, r.probe_ok);
	EXPECT_EQ(0, r.probe_other);
	EXPECT_EQ(r.ports, r.probe_refused);
	EXPECT_EQ(0, r.topped_up);
	/* The machine's kernel memory grew by the data at least, and stays under the bound. */
	EXPECT_LE(r.data / KIB * 8 / 10, grow_kb);
	EXPECT_GE((long long)((bound + SLACK) / KIB), grow_kb);
	EXPECT_GE((long long)((slab_bound + SLACK) / KIB), slab_kb);
	/* The user's cgroup pays for it: rings and buffered messages at least. */
	if (self->cg && m0.cg_kernel >= 0) {
		EXPECT_LE((long long)(r.data + (uint64_t)r.ring_pages * PAGE) * 9 / 10,
			  m1.cg_kernel - m0.cg_kernel);
		EXPECT_GE((long long)(bound + SLACK), m1.cg_kernel - m0.cg_kernel);
	} else {
		TH_LOG("no memory cgroup: its charge not checked");
	}

	/* Gone: the memory comes back, nothing stays pinned or charged. */
	ASSERT_EQ(1, write(to_child[1], "c", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(self->pinned0, nt_wait_pinned(self->pinned0, 5000));
	mem_read(&m2, true);
	back_kb = m0.avail - m2.avail;
	TH_LOG("closed: MemAvailable+pcp %lld kB (%lld kB below before), Slab %lld kB, VmallocUsed %lld kB, cgroup kernel %lld kB; %llu ms in all",
	       m2.avail, back_kb, m2.slab, m2.vmalloc, m2.cg_kernel / 1024,
	       (unsigned long long)(nt_now_ns() - t0) / 1000000);
	EXPECT_GE((long long)(SLACK / KIB), back_kb);
	if (self->cg && m2.cg_kernel >= 0)
		EXPECT_GE((long long)(4 * MIB), m2.cg_kernel);
	close(to_child[1]);
	close(to_parent[0]);
}

TEST_HARNESS_MAIN
