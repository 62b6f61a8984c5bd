/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the nicoff kernel selftests, written against the raw
 * ABI of include/uapi/nicoff.h (not libnicoff), so that a test can put into
 * the rings whatever it likes, including garbage.
 *
 * Nothing here uses the kselftest harness: functions return 0 or a
 * negative errno and the tests assert on that.
 */
#ifndef NICOFF_SELFTEST_UTIL_H
#define NICOFF_SELFTEST_UTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <uapi/nicoff.h>
#include <nicoff/prep.h>

#define NT_PINNED_PAGES_PATH "/sys/class/nicoff/pinned_pages"
#define NT_PARAM_DIR "/sys/module/nicoff/parameters/"

/* A port: the file, what PORT_OPEN answered and the two mapped rings. */
struct nt_port {
	int fd;
	int card;
	struct nicoff_port_open po;
	struct nicoff_ring_hdr *cmd_hdr;
	struct nicoff_ring_hdr *cq_hdr;
	struct nicoff_cmd *cmds;
	struct nicoff_cqe *cqes;
	uint32_t cmd_entries;
	uint32_t cq_entries;
	uint32_t cmd_prod;	/* our copy of the command producer index */
	uint32_t cq_cons;	/* our copy of the completion consumer index */
	uint64_t kicks;		/* wake-up ioctls this process made */
};

/* Files and ioctls. */
int nt_open_card(int card);
int nt_query(int fd, struct nicoff_query *q);
/* Open a card, query it and close it again. */
int nt_query_card(int card, struct nicoff_query *q);
int nt_port_open_fd(int fd, uint32_t port, uint32_t cmd_entries, uint32_t cq_entries,
		    struct nicoff_port_open *out);
int nt_reg_mr(int fd, const void *addr, uint64_t len, uint32_t access, uint32_t *handle);
int nt_dereg_mr(int fd, uint32_t handle);
int nt_stats(int fd, struct nicoff_port_stats *st);
int nt_kick(int fd);
int nt_ioctl(int fd, unsigned long req, void *arg);	/* 0 or -errno */

/* Map a port's command ring (cq false) or completion ring; MAP_FAILED or it. */
void *nt_map_ring(int fd, const struct nicoff_port_open *po, bool cq);
/* Open a card, make the file a port and map both rings. */
int nt_port_open(struct nt_port *p, int card, uint32_t port, uint32_t cmd_entries,
		 uint32_t cq_entries);
/* Unmap and close (no-op on a zeroed or already closed struct). */
void nt_port_close(struct nt_port *p);

/* Ring access. */
static inline uint32_t nt_load_acquire(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void nt_store_release(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline void nt_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static inline uint32_t nt_cmd_flags(const struct nt_port *p)
{
	return __atomic_load_n(&p->cmd_hdr->flags, __ATOMIC_ACQUIRE);
}

static inline uint32_t nt_cq_flags(const struct nt_port *p)
{
	return __atomic_load_n(&p->cq_hdr->flags, __ATOMIC_ACQUIRE);
}

/*
 * Wait up to ms for flag in the flags of the completion ring (cq) or of
 * the command ring (NEED_WAKEUP: the thread serving p announced it
 * sleeps); true if it came.
 */
bool nt_wait_flag(const struct nt_port *p, bool cq, uint32_t flag, int ms);

/* Free command slots, from the card's published consumer index. */
uint32_t nt_cmd_space(const struct nt_port *p);
/* Commands published but not yet taken by the card. */
uint32_t nt_cmd_pending(const struct nt_port *p);
/* Write a descriptor at our producer index (not published yet). */
void nt_cmd_write(struct nt_port *p, const struct nicoff_cmd *c);
/* Publish our producer index (release). */
void nt_publish(struct nt_port *p);
/*
 * Doorbell steps 2 and 3: full fence, read flags, kick only if the card
 * thread asked for it.  Returns 1 if it kicked, 0 if not, -errno.
 */
int nt_doorbell(struct nt_port *p);
/* Write, publish and ring the doorbell for n descriptors (must fit). */
int nt_submit(struct nt_port *p, const struct nicoff_cmd *c, uint32_t n);
/* The same for n NOPs tagged tag0, tag0 + 1, ... */
int nt_submit_nops(struct nt_port *p, uint32_t n, uint64_t tag0);

/* Completions available (producer - our consumer). */
uint32_t nt_cq_ready(const struct nt_port *p);
/*
 * Take up to max completions, publish the consumer index and, if commands
 * are still waiting in the command ring, ring the doorbell again (the
 * re-kick of abi.md).  Returns the number taken or -errno.
 */
int nt_reap(struct nt_port *p, struct nicoff_cqe *out, uint32_t max);
/*
 * Collect exactly n completions, sleeping in poll() while none is ready;
 * gives up after timeout_ms.  Returns the number collected (< n on timeout
 * or error state) or -errno.
 */
int nt_wait_cqes(struct nt_port *p, struct nicoff_cqe *out, uint32_t n, int timeout_ms);

/*
 * A command built by nicoff_prep_<op>() of <nicoff/prep.h>, as a value: for
 * tables and initialisers, e.g. NT_CMD(send, card, port, mr, off, len,
 * msg_tag, tag).
 */
#define NT_CMD(op, ...) ({ \
	struct nicoff_cmd nt_cmd_; \
	nicoff_prep_##op(&nt_cmd_, __VA_ARGS__); \
	nt_cmd_; \
})
/* Post one command and wait for its completion (timeout_ms); 0 or -errno. */
int nt_run_one(struct nt_port *p, const struct nicoff_cmd *c, struct nicoff_cqe *cqe,
	       int timeout_ms);

/* Read up to size - 1 bytes of a file into buf, NUL-terminated; the length or -errno. */
ssize_t nt_read_file(const char *path, char *buf, size_t size);

/* /sys/class/nicoff/pinned_pages, or -1. */
long long nt_pinned_pages(void);
/* Poll pinned_pages until it equals want; returns the last value read. */
long long nt_wait_pinned(long long want, int timeout_ms);

/* Module parameters under /sys/module/nicoff/parameters/. */
int nt_param_get(const char *name, unsigned long *v);
int nt_param_set(const char *name, unsigned long v);
/*
 * The module's global faults, per million packets: drop, duplicate,
 * reorder, corrupt (all 0: a clean fabric).  0 or the first -errno.
 */
int nt_set_faults(unsigned long drop, unsigned long dup, unsigned long reorder,
		  unsigned long corrupt);

/* Time and randomness. */
uint64_t nt_now_ns(void);
void nt_sleep_ms(unsigned int ms);
uint64_t nt_rand64(uint64_t *state);	/* xorshift64* */
void nt_fill_pattern(void *buf, size_t len, uint64_t seed);

/*
 * Kernel log watch: nt_kmsg_open() opens /dev/kmsg positioned at its end;
 * nt_kmsg_splat() reads what was logged since and returns 1 (copying the
 * line into line) if a warning, oops, stack trace, slub_debug report,
 * lockup, hung task or RCU stall appeared, 0 if not, -errno if the log
 * cannot be read.
 */
int nt_kmsg_open(void);
int nt_kmsg_splat(int fd, char *line, size_t len);

/*
 * For kselftest_harness.h tests: NT_KMSG_WATCH(fd) in a fixture's setup
 * opens the log (the test fails if it cannot); NT_KMSG_CHECK(fd) in its
 * teardown expects no splat since, showing the first, and closes @fd.
 */
#define NT_KMSG_WATCH(fd)				\
	do {						\
		(fd) = nt_kmsg_open();			\
		ASSERT_LE(0, (fd));			\
	} while (0)
#define NT_KMSG_CHECK(fd)							\
	do {									\
		char nt_line_[256] = "";					\
										\
		EXPECT_EQ(0, nt_kmsg_splat((fd), nt_line_, sizeof(nt_line_)))	\
			TH_LOG("kernel: %s", nt_line_);				\
		close(fd);							\
	} while (0)

/*
 * One NOP kept in flight on p: post one if none is (*inflight), count the
 * one that completed in *done.  0 or -errno (-EIO: a wrong completion).
 */
int nt_nop_step(struct nt_port *p, bool *inflight, uint64_t *done);

/* Anonymous memory registered on a port. */
struct nt_region {
	unsigned char *buf;
	size_t len;
	uint32_t handle;
	uint32_t rkey;
};

/* Map len bytes (filled with fill), register them on p with access; 0 or -errno. */
int nt_region_new(struct nt_port *p, struct nt_region *r, size_t len, uint32_t access, int fill);

/*
 * Run fn in a forked child (stdio flushed first): its exit code, 128 + the
 * signal that killed it, or -1 if it could not be run.
 */
int nt_run_child(int (*fn)(void));

/*
 * Run @member(0) and @member(1) in two forked children at once (the two
 * members of one group): 0 if both returned 0, else member 0's code if not
 * 0, else member 1's (codes as nt_run_child()'s).
 */
int nt_run_pair(int (*member)(int rank));

/*
 * Wait for the @n forked children of @pids, killing every one still running
 * once @limit_ns has passed since @t0 (nt_now_ns()) or once one failed:
 * ok[i] says whether child i exited with 0 before that.  Returns how many
 * did not.
 */
int nt_reap_within(const pid_t *pids, int n, uint64_t t0, uint64_t limit_ns, bool *ok);

/*
 * In a forked child whose function returns its exit code: report a failed
 * check on stderr (the parent's TAP shows it) and return 1.
 */
#define NT_CK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "# child: %s:%d: check failed: %s (errno %d)\n", \
			__FILE__, __LINE__, #cond, errno); \
		return 1; \
	} \
} while (0)

#endif
