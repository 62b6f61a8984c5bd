/*
 * libnicoff C API: open a nicoff card, turn an open file into a port, post
 * commands and poll completions without system calls, register memory.
 *
 * Usable from C11 and C++.  Every function that can fail returns 0 (or a
 * non-negative count) on success and a negative errno value on failure; no
 * function sets errno as its result and no C++ exception ever escapes.
 *
 * Error values worth knowing:
 *   -EINVAL   a null pointer, a bad ring size, a bad card number
 *   -ENOENT   no such card (/dev/nicoffN does not exist)
 *   -ENOTTY   the path is not a nicoff device
 *   -EPROTO   the kernel module speaks another ABI version than this library
 *   -EAGAIN   the command ring is full (poll completions, then post again)
 *   -EIO      the port is in the error state; only closing it helps
 *
 * Thread safety: see nicoff.hpp; a struct nicoff_port follows the rules of
 * nicoff::Port (one posting thread and one polling thread at a time).
 */
#ifndef NICOFF_NICOFF_H
#define NICOFF_NICOFF_H

#include <stddef.h>
#include <stdint.h>

#include <nicoff/nicoff_abi.h>

#if defined(NICOFF_BUILDING_LIB)
#define NICOFF_API __attribute__((visibility("default")))
#else
#define NICOFF_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nicoff_device nicoff_device;
typedef struct nicoff_port nicoff_port;
typedef struct nicoff_mr nicoff_mr;
typedef struct nicoff_job nicoff_job;

/* Port parameters.  Zero ring sizes take the defaults noted. */
struct nicoff_port_attr {
    uint32_t port;        /* port number, or NICOFF_PORT_ANY for any free one */
    uint32_t cmd_entries; /* power of two >= 2; 0: 256 */
    uint32_t cq_entries;  /* power of two >= cmd_entries; 0: cmd_entries */
    uint32_t reserved;    /* must be zero */
};

/* Library version string, e.g. "0.1.0", and the ABI version it speaks. */
NICOFF_API const char *nicoff_version(void);
NICOFF_API int nicoff_abi_version(void);

/* Devices: /dev/nicoff<card> or any path.  *out is set only on success. */
NICOFF_API int nicoff_device_open(int card, nicoff_device **out);
NICOFF_API int nicoff_device_open_path(const char *path, nicoff_device **out);
NICOFF_API void nicoff_device_close(nicoff_device *dev); /* NULL is fine */
NICOFF_API int nicoff_device_query(const nicoff_device *dev, struct nicoff_query *out);

/*
 * Ports: each port opens its own file on the device's path.  attr may be
 * NULL: any free port, default ring sizes.
 */
NICOFF_API int nicoff_port_create(const nicoff_device *dev, const struct nicoff_port_attr *attr,
                                  nicoff_port **out);
/* Unmaps the rings; the file closes once the last region is deregistered. */
NICOFF_API void nicoff_port_destroy(nicoff_port *port);         /* NULL is fine */
NICOFF_API int nicoff_port_fd(const nicoff_port *port);         /* for poll/epoll */
NICOFF_API int nicoff_port_number(const nicoff_port *port);     /* the port granted */
NICOFF_API int nicoff_port_in_error(const nicoff_port *port);   /* 1, 0 or -EINVAL */
NICOFF_API uint64_t nicoff_port_kicks(const nicoff_port *port); /* 0 for NULL */
NICOFF_API int nicoff_port_get_stats(const nicoff_port *port, struct nicoff_port_stats *out);

/* Posting: 0, -EAGAIN (ring full), -EIO (error state), -EINVAL. */
NICOFF_API int nicoff_post(nicoff_port *port, const struct nicoff_cmd *cmd);
/* Posts the longest prefix of cmds[0..n) that fits, with one doorbell at
 * most.  Returns the number posted (n == 0 gives 0), -EAGAIN when none fits. */
NICOFF_API int nicoff_post_batch(nicoff_port *port, const struct nicoff_cmd *cmds, size_t n);
NICOFF_API int nicoff_post_nop(nicoff_port *port, uint64_t tag);
NICOFF_API int nicoff_post_copy(nicoff_port *port, uint32_t src_mr, uint64_t src_off,
                                uint32_t dst_mr, uint64_t dst_off, uint64_t len, uint64_t tag);

/* Messages and one-sided operations to (card, port); see nicoff_abi.h. */
NICOFF_API int nicoff_post_send(nicoff_port *port, uint32_t card, uint32_t dst_port, uint32_t mr,
                                uint64_t off, uint64_t len, uint64_t msg_tag, uint64_t tag);
NICOFF_API int nicoff_post_recv(nicoff_port *port, uint32_t mr, uint64_t off, uint64_t len,
                                uint32_t src_card, uint32_t src_port, uint64_t msg_tag,
                                uint64_t tag_mask, uint64_t tag);
NICOFF_API int nicoff_post_put(nicoff_port *port, uint32_t card, uint32_t dst_port, uint32_t rkey,
                               uint64_t remote_off, uint32_t mr, uint64_t off, uint64_t len,
                               uint64_t tag);
NICOFF_API int nicoff_post_get(nicoff_port *port, uint32_t card, uint32_t dst_port, uint32_t rkey,
                               uint64_t remote_off, uint32_t mr, uint64_t off, uint64_t len,
                               uint64_t tag);

/* Completions: number copied into cqes[0..max) (0 if none yet), or -EIO
 * once the port is in the error state and its ring is drained. */
NICOFF_API int nicoff_poll(nicoff_port *port, struct nicoff_cqe *cqes, size_t max);
/* Blocks until completions are ready: 1 ready, 0 timeout, -EIO, -errno.
 * timeout_ms < 0 waits forever. */
NICOFF_API int nicoff_wait(nicoff_port *port, int timeout_ms);

/* Memory regions: pins [addr, addr + len) with NICOFF_ACCESS_* rights. */
NICOFF_API int nicoff_mr_reg(nicoff_port *port, void *addr, size_t len, uint32_t access,
                             nicoff_mr **out);
/* Unpins and frees mr (also on failure, whose error is returned). */
NICOFF_API int nicoff_mr_dereg(nicoff_mr *mr);
NICOFF_API uint32_t nicoff_mr_handle(const nicoff_mr *mr); /* 0 for NULL */
NICOFF_API uint32_t nicoff_mr_rkey(const nicoff_mr *mr);   /* 0 for NULL */

/*
 * Jobs (see nicoff/job.hpp): this process's rank and size, and every rank's
 * card (rank % nics) and port (port_base + rank / nics), from the
 * environment nicoffrun sets or, failing that, an MPI launcher's; no
 * launcher environment at all is a single-process job (rank 0, size 1).
 * nicoff_job_from_env returns -EINVAL for a missing or inconsistent
 * environment (or the error of /dev/nicoff0, queried for its number of
 * cards when NICOFF_NICS is unset, other than "no such device") and, if
 * msg is not NULL, writes why into msg[0..msg_len) (NUL-terminated,
 * truncated to fit); *out is set only on success.
 */
NICOFF_API int nicoff_job_from_env(nicoff_job **out, char *msg, size_t msg_len);
NICOFF_API void nicoff_job_free(nicoff_job *job);            /* NULL is fine */
NICOFF_API int nicoff_job_rank(const nicoff_job *job);       /* -EINVAL for NULL */
NICOFF_API int nicoff_job_size(const nicoff_job *job);       /* -EINVAL for NULL */
NICOFF_API int nicoff_job_nics(const nicoff_job *job);       /* -EINVAL for NULL */
NICOFF_API int nicoff_job_port_base(const nicoff_job *job);  /* -EINVAL for NULL */
NICOFF_API const char *nicoff_job_id(const nicoff_job *job); /* "" if none; NULL for NULL */
/* Card or port of any rank: -EINVAL unless 0 <= rank < size. */
NICOFF_API int nicoff_job_card_of(const nicoff_job *job, int rank);
NICOFF_API int nicoff_job_port_of(const nicoff_job *job, int rank);
/* Opens this rank's port on its card; attr (may be NULL) gives the ring
 * sizes as for nicoff_port_create, its port field is ignored. */
NICOFF_API int nicoff_job_open_port(const nicoff_job *job, const struct nicoff_port_attr *attr,
                                    nicoff_port **out);

#ifdef __cplusplus
}
#endif

#endif /* NICOFF_NICOFF_H */
