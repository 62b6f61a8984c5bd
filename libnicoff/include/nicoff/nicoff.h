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
#include <nicoff/version.h>

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

/*
 * The loaded library's version string, e.g. "0.1.0" (NICOFF_VERSION_STRING
 * of the headers it was built with), and the ABI version it speaks.
 */
NICOFF_API const char *nicoff_version(void);
NICOFF_API int nicoff_abi_version(void);

/*
 * Names for logs: a completion's status (0 or a negative errno value, as
 * struct nicoff_cqe.status holds) and an opcode (NICOFF_OP_*).  Never NULL;
 * values they do not know give "unknown status" and "unknown".  The
 * strings are static.
 */
NICOFF_API const char *nicoff_strerror(int status);
NICOFF_API const char *nicoff_opcode_name(uint8_t opcode);

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

/*
 * Remote atomics on the naturally aligned width-byte word (4 or 8) at
 * remote_off of the peer's region rkey (NICOFF_ACCESS_REMOTE_ATOMIC),
 * executed by the target card; the completion's result is the old value.
 * See Documentation/atomics.md.
 */
NICOFF_API int nicoff_post_fetch_add(nicoff_port *port, uint32_t card, uint32_t dst_port,
                                     uint32_t rkey, uint64_t remote_off, uint32_t width,
                                     uint64_t value, uint64_t tag);
NICOFF_API int nicoff_post_swap(nicoff_port *port, uint32_t card, uint32_t dst_port, uint32_t rkey,
                                uint64_t remote_off, uint32_t width, uint64_t value, uint64_t tag);
NICOFF_API int nicoff_post_compare_swap(nicoff_port *port, uint32_t card, uint32_t dst_port,
                                        uint32_t rkey, uint64_t remote_off, uint32_t width,
                                        uint64_t compare, uint64_t swap, uint64_t tag);

/* A round trip to (card, dst_port) answered by that card alone; the result is its ns. */
NICOFF_API int nicoff_post_ping(nicoff_port *port, uint32_t card, uint32_t dst_port, uint64_t tag);
/* NICOFF_OP_PUT_STRIDED, GET_STRIDED or ACC_STRIDED (else -EINVAL) as op says. */
NICOFF_API int nicoff_post_strided(nicoff_port *port, uint8_t opcode,
                                   const struct nicoff_op_strided *op, uint64_t tag);

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
 * launcher environment at all is a single-process job (rank 0, size 1);
 * under MPICH's Hydra the ranks agree through its PMI key-value space, so
 * every rank calls nicoff_job_from_env (errors of that exchange: -ETIMEDOUT,
 * -EPROTO, -ECONNRESET; see job.hpp).
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

/*
 * Process groups and barriers run by the card (see nicoff/group.hpp).
 * Every member creates the group with the same member list (size entries)
 * and group id and its own rank; creation returns once every member has
 * created it.  algorithm: NICOFF_BARRIER_* (AUTO: the card times them all
 * and keeps the fastest) or NICOFF_BARRIER_DEFAULT (the module's
 * barrier_alg tunable); param: tree degree or combining fan-in, 0 for the
 * default.  nicoff_group_create_job makes the group of all ranks of a job
 * (id from the job id and the number of groups made so far).  While these
 * calls wait they take every completion of the port (one not theirs is
 * -EPROTO).  Errors: the completion's (-ETIMEDOUT: a member fell silent;
 * -ECONNRESET: a member's group failed or went away), see abi.md.
 */
typedef struct nicoff_group nicoff_group;
NICOFF_API int nicoff_group_create(nicoff_port *port, const struct nicoff_member *members,
                                   uint32_t size, uint32_t rank, uint32_t group_id,
                                   uint32_t algorithm, uint32_t param, nicoff_group **out);
NICOFF_API int nicoff_group_create_job(nicoff_port *port, const nicoff_job *job, uint32_t algorithm,
                                       uint32_t param, nicoff_group **out);
NICOFF_API int nicoff_group_barrier(nicoff_group *group);
/* What the card runs (NICOFF_BARRIER_*) and its degree or fan-in; -EINVAL for NULL. */
NICOFF_API int nicoff_group_algorithm(const nicoff_group *group);
NICOFF_API int nicoff_group_param(const nicoff_group *group);
/* GROUP_DESTROY and free (also on failure, whose error is returned); NULL is fine. */
NICOFF_API int nicoff_group_destroy(nicoff_group *group);

/*
 * Groups with their broadcast settings (NULL attr: the defaults, as
 * nicoff_group_create with NICOFF_BARRIER_DEFAULT and param 0):
 * bcast_channels 0 (the card's default) or NICOFF_BCAST_MIN_CHANNELS to
 * NICOFF_BCAST_MAX_CHANNELS; bcast_flags NICOFF_BCAST_F_NOCRC (no CRC over
 * broadcast payloads), NICOFF_BCAST_F_P2P (the point-to-point tree, never
 * the fabric's multicast).  The card refuses other values (-EINVAL), as
 * the call does flags other than below.
 */
struct nicoff_group_attr {
    uint32_t algorithm; /* NICOFF_BARRIER_* or NICOFF_BARRIER_DEFAULT */
    uint32_t param;     /* tree degree or combining fan-in; 0: the default */
    uint32_t bcast_channels;
    uint32_t bcast_flags;
    /*
     * NICOFF_GROUP_F_HOST_TRIALS, with NICOFF_BARRIER_AUTO only: after the
     * cards' trials, the call times the candidates again on this process's
     * own barriers before it returns (nicoff::GroupConfig::host_trials).
     */
    uint32_t flags;
    uint32_t reserved0;   /* must be zero */
    uint64_t reserved[1]; /* must be zero */
};
NICOFF_API int nicoff_group_create_attr(nicoff_port *port, const struct nicoff_member *members,
                                        uint32_t size, uint32_t rank, uint32_t group_id,
                                        const struct nicoff_group_attr *attr, nicoff_group **out);
NICOFF_API int nicoff_group_create_job_attr(nicoff_port *port, const nicoff_job *job,
                                            const struct nicoff_group_attr *attr,
                                            nicoff_group **out);

/*
 * Broadcast run by the cards (seed 002, nicoff::Group::broadcast): every
 * member calls these for the group's broadcasts in the same order, each
 * with the same root and len.  The root sends len bytes of region mr at
 * off (or of buf), every other member receives them there (the region
 * needs NICOFF_ACCESS_LOCAL_WRITE); the _buf forms take any memory and go
 * through a registered bounce buffer the group keeps.  The blocking forms
 * return once this member's part is done.  The _start forms post without
 * waiting and give a request: several may be outstanding, they complete in
 * posting order; the buffer must stay valid until the request is done.
 * nicoff_bcast_wait waits for a request and frees it (also on failure,
 * whose error it returns); nicoff_bcast_test says 1 once it is done (then
 * nicoff_bcast_wait returns at once), 0 before; nicoff_bcast_free waits
 * for it, errors ignored.  Errors: -EINVAL (a root outside the group, a
 * range outside the region), and the completion's: -EMSGSIZE (a length
 * other than the root's), -ECONNRESET (the group failed), -ETIMEDOUT (a
 * member is dead), -ECANCELED (the group was destroyed first).
 */
typedef struct nicoff_bcast_req nicoff_bcast_req;
NICOFF_API int nicoff_group_broadcast(nicoff_group *group, const nicoff_mr *mr, uint64_t off,
                                      uint64_t len, uint32_t root);
NICOFF_API int nicoff_group_broadcast_buf(nicoff_group *group, void *buf, size_t len,
                                          uint32_t root);
NICOFF_API int nicoff_group_broadcast_start(nicoff_group *group, const nicoff_mr *mr, uint64_t off,
                                            uint64_t len, uint32_t root, nicoff_bcast_req **out);
NICOFF_API int nicoff_group_broadcast_start_buf(nicoff_group *group, void *buf, size_t len,
                                                uint32_t root, nicoff_bcast_req **out);
NICOFF_API int nicoff_bcast_wait(nicoff_bcast_req *req);
NICOFF_API int nicoff_bcast_test(nicoff_bcast_req *req);
NICOFF_API void nicoff_bcast_free(nicoff_bcast_req *req); /* NULL is fine */

/*
 * The host-based broadcast (nicoff::HostBroadcast): a binomial tree the
 * processes run over SEND/RECV, same member list and rank as a group.
 */
typedef struct nicoff_host_bcast nicoff_host_bcast;
NICOFF_API int nicoff_host_bcast_create(nicoff_port *port, const struct nicoff_member *members,
                                        uint32_t size, uint32_t rank, nicoff_host_bcast **out);
NICOFF_API int nicoff_host_broadcast(nicoff_host_bcast *bcast, const nicoff_mr *mr, uint64_t off,
                                     uint64_t len, uint32_t root);
NICOFF_API int nicoff_host_broadcast_buf(nicoff_host_bcast *bcast, void *buf, size_t len,
                                         uint32_t root);
NICOFF_API void nicoff_host_bcast_free(nicoff_host_bcast *bcast); /* NULL is fine */

/* The same algorithms run by the process over SEND/RECV (nicoff::HostBarrier). */
typedef struct nicoff_host_barrier nicoff_host_barrier;
NICOFF_API int nicoff_host_barrier_create(nicoff_port *port, const struct nicoff_member *members,
                                          uint32_t size, uint32_t rank, uint32_t algorithm,
                                          uint32_t param, nicoff_host_barrier **out);
NICOFF_API int nicoff_host_barrier_wait(nicoff_host_barrier *barrier);
NICOFF_API void nicoff_host_barrier_free(nicoff_host_barrier *barrier); /* NULL is fine */

/*
 * Synchronous remote atomics and locks (see nicoff/atomic.hpp): a remote
 * memory over a port (NICOFF_RMEM_CARD: the target card executes atomics;
 * NICOFF_RMEM_HOST: an atomic server process at the target does), MCS and
 * test-and-set locks over one, and the host-based atomic server.  The port
 * must serve nothing else while they use it; one thread at a time.
 */
struct nicoff_remote_word {
    uint32_t card;
    uint32_t port;   /* the target's port; NICOFF_RMEM_HOST: the server's */
    uint32_t rkey;   /* the target's region (unused with NICOFF_RMEM_HOST) */
    uint32_t width;  /* 4 or 8 */
    uint64_t offset; /* in the region, or in the server's memory */
};

typedef struct nicoff_rmem nicoff_rmem;
typedef struct nicoff_lock nicoff_lock;
typedef struct nicoff_atomic_server nicoff_atomic_server;

#define NICOFF_RMEM_CARD 0
#define NICOFF_RMEM_HOST 1
NICOFF_API int nicoff_rmem_create(nicoff_port *port, int kind, nicoff_rmem **out);
NICOFF_API void nicoff_rmem_destroy(nicoff_rmem *mem); /* NULL is fine */
/* One atomic (NICOFF_OP_FETCH_ADD, _FETCH_WRITE, _COMPARE_SWAP); *old set on success. */
NICOFF_API int nicoff_rmem_atomic(nicoff_rmem *mem, uint8_t opcode,
                                  const struct nicoff_remote_word *w, uint64_t operand,
                                  uint64_t compare, uint64_t *old);

#define NICOFF_LOCK_MCS 0
#define NICOFF_LOCK_TAS 1
/*
 * MCS: this rank's queue node is local_node (local_len >= 64, 8-aligned,
 * registered with NICOFF_ACCESS_REMOTE_WRITE), qnodes[0..nranks) every
 * rank's node, word the lock word at the home.  TAS: only word is used
 * (qnodes and local_node may be NULL).  The lock keeps a reference to mem.
 */
NICOFF_API int nicoff_lock_create(nicoff_rmem *mem, int kind, uint32_t rank,
                                  const struct nicoff_remote_word *qnodes, uint32_t nranks,
                                  const struct nicoff_remote_word *word, void *local_node,
                                  size_t local_len, nicoff_lock **out);
NICOFF_API int nicoff_lock_acquire(nicoff_lock *lock);
NICOFF_API int nicoff_lock_release(nicoff_lock *lock);
NICOFF_API void nicoff_lock_destroy(nicoff_lock *lock); /* NULL is fine */

#define NICOFF_SERVER_POLL 0
#define NICOFF_SERVER_SPIN_BLOCK 1
#define NICOFF_SERVER_BLOCK 2
/* Serves host-based atomics on mem[0..len) (8-byte aligned) over port. */
NICOFF_API int nicoff_atomic_server_create(nicoff_port *port, void *mem, size_t len, int mode,
                                           uint32_t spin_us, nicoff_atomic_server **out);
/* Serves until *stop is non-zero (read at least every 10 ms). */
NICOFF_API int nicoff_atomic_server_serve(nicoff_atomic_server *server, const volatile int *stop);
/* Serves what is ready; the number of completions handled. */
NICOFF_API int nicoff_atomic_server_serve_ready(nicoff_atomic_server *server);
NICOFF_API void nicoff_atomic_server_destroy(nicoff_atomic_server *server); /* NULL is fine */

/*
 * Strided put and get walked by the card (ARMCI's PutS and GetS, seed 004's
 * NIC-based method).  A nicoff_strided holds the descriptors the card reads
 * (registered on the port); every command of the port must be posted by
 * the same thread, as always.  The shape is ARMCI's: count[0] contiguous
 * bytes, count[1..stride_levels] repetitions, each side's stride array in
 * bytes; stride_levels 0 to NICOFF_STRIDED_MAX_LEVELS.  The arguments come
 * in ARMCI's order: source, its strides, destination, its strides, count,
 * stride_levels, then where the remote side is.  0 once posted, -EAGAIN when
 * the command ring is full, -EINVAL, -EIO (error state).  The completion,
 * with tag, carries the bytes moved or the card's error.
 */
typedef struct nicoff_strided nicoff_strided;
NICOFF_API int nicoff_strided_create(nicoff_port *port, nicoff_strided **out);
NICOFF_API void nicoff_strided_destroy(nicoff_strided *s); /* NULL is fine */
NICOFF_API int nicoff_put_strided(nicoff_strided *s, const nicoff_mr *src_mr, uint64_t src_off,
                                  const uint64_t *src_stride, uint64_t dst_off,
                                  const uint64_t *dst_stride, const uint64_t *count,
                                  int stride_levels, uint32_t card, uint32_t dst_port,
                                  uint32_t rkey, uint64_t tag);
/* ARMCI's AccS on integers (acc NICOFF_ACC_INT32 or INT64): dst += scale * src. */
NICOFF_API int nicoff_acc_strided(nicoff_strided *s, uint32_t acc, int64_t scale,
                                  const nicoff_mr *src_mr, uint64_t src_off,
                                  const uint64_t *src_stride, uint64_t dst_off,
                                  const uint64_t *dst_stride, const uint64_t *count,
                                  int stride_levels, uint32_t card, uint32_t dst_port,
                                  uint32_t rkey, uint64_t tag);
NICOFF_API int nicoff_get_strided(nicoff_strided *s, uint64_t src_off, const uint64_t *src_stride,
                                  const nicoff_mr *dst_mr, uint64_t dst_off,
                                  const uint64_t *dst_stride, const uint64_t *count,
                                  int stride_levels, uint32_t card, uint32_t src_port,
                                  uint32_t rkey, uint64_t tag);

/*
 * Vector put and get walked by the card (ARMCI's PutV and GetV) through a
 * nicoff_strided: darr[0..len) in ARMCI's form, with region offsets for
 * pointers, ptr_array_len segments of bytes each from src_off_array[i] to
 * dst_off_array[i], moved in order.  The local side (the source of a put,
 * the destination of a get) is region mr; the remote side the peer's
 * region rkey on (card, port).  One command: at most
 * NICOFF_VECTOR_MAX_SEGS segments in all (else -EINVAL: split the list).
 * Returns as the strided calls do.
 */
typedef struct nicoff_giov {
    const uint64_t *src_off_array;
    const uint64_t *dst_off_array;
    int ptr_array_len;
    uint64_t bytes;
} nicoff_giov;
NICOFF_API int nicoff_put_vector(nicoff_strided *s, const nicoff_giov *darr, int len,
                                 const nicoff_mr *src_mr, uint32_t card, uint32_t dst_port,
                                 uint32_t rkey, uint64_t tag);
NICOFF_API int nicoff_get_vector(nicoff_strided *s, const nicoff_giov *darr, int len,
                                 const nicoff_mr *dst_mr, uint32_t card, uint32_t src_port,
                                 uint32_t rkey, uint64_t tag);

/*
 * Strided transfers by method (seed 004 section 5, nicoff::StridedEngine):
 *   NICOFF_STRIDED_NIC    the card walks the shape (one command)
 *   NICOFF_STRIDED_HBNA   host-based, NIC-assisted: this process packs, the
 *                         target card grants one of the target's receive
 *                         buffers, the target's nicoff_strided_target
 *                         thread unpacks (its CPU pays)
 *   NICOFF_STRIDED_NAIVE  one contiguous PUT or GET per chunk
 *   NICOFF_STRIDED_AUTO   the cheaper of the others by the card's cost
 *                         models, calibrated once and cached
 *                         ($XDG_CACHE_HOME/nicoff/strided-card<N>)
 */
#define NICOFF_STRIDED_NIC 0
#define NICOFF_STRIDED_HBNA 1
#define NICOFF_STRIDED_NAIVE 2
#define NICOFF_STRIDED_AUTO 3

/* What a target publishes for HBNA sources (buffers 0: no target). */
struct nicoff_hbna_address {
    uint32_t card;
    uint32_t port;
    uint32_t buf_rkey;
    uint32_t flag_rkey;
    uint32_t buffers;
    uint32_t reserved; /* 0 */
    uint64_t buffer_bytes;
};

/* A peer's memory: its region on (card, port) by rkey, and its HBNA target. */
struct nicoff_strided_peer {
    uint32_t card;
    uint32_t port;
    uint32_t rkey;
    uint32_t reserved; /* 0 */
    struct nicoff_hbna_address hbna;
};

/*
 * The HBNA target: a thread on a port of its own on card, serving sources'
 * packed pieces on mem[0..len) (the bytes its peers reach by rkey, offsets
 * alike), with buffers receive buffers of buffer_bytes (0, 0: 16 of 256 KiB).
 */
typedef struct nicoff_strided_target nicoff_strided_target;
struct nicoff_strided_target_stats {
    uint64_t pieces;        /* descriptors served */
    uint64_t bytes;         /* bytes unpacked or packed */
    uint64_t unpack_cpu_ns; /* the thread's CPU time unpacking (put, acc) */
    uint64_t pack_cpu_ns;   /* and packing (get) */
};
NICOFF_API int nicoff_strided_target_create(uint32_t card, void *mem, size_t len, uint32_t buffers,
                                            uint64_t buffer_bytes, nicoff_strided_target **out);
NICOFF_API void nicoff_strided_target_destroy(nicoff_strided_target *t); /* NULL is fine */
NICOFF_API int nicoff_strided_target_address(const nicoff_strided_target *t,
                                             struct nicoff_hbna_address *out);
NICOFF_API int nicoff_strided_target_get_stats(const nicoff_strided_target *t,
                                               struct nicoff_strided_target_stats *out);

/*
 * The engine: owns every completion of port (post nothing else on it); one
 * thread at a time.  The start calls take ARMCI's argument order, as the
 * strided calls above, with the method first and the peer last; they
 * return 0 once started (the engine bounds what is in flight itself),
 * -EINVAL for a bad shape, method or argument or for HBNA towards a peer
 * without a target, -ERANGE for a local side outside its region, or the
 * errno of auto's calibration.  An accumulate takes NICOFF_ACC_INT32,
 * INT64 or DOUBLE (the card runs integers; HBNA runs all three at the
 * target).  A finished operation is reported once, with the caller's tag.
 */
typedef struct nicoff_strided_engine nicoff_strided_engine;
struct nicoff_strided_done {
    uint64_t tag;
    int32_t status;  /* 0 or a negative errno */
    uint32_t method; /* what ran (auto resolved) */
    uint64_t bytes;
};
NICOFF_API int nicoff_strided_engine_create(nicoff_port *port, nicoff_strided_engine **out);
NICOFF_API void nicoff_strided_engine_destroy(nicoff_strided_engine *e); /* NULL is fine */
NICOFF_API int nicoff_strided_start_put(nicoff_strided_engine *e, int method,
                                        const nicoff_mr *src_mr, uint64_t src_off,
                                        const uint64_t *src_stride, uint64_t dst_off,
                                        const uint64_t *dst_stride, const uint64_t *count,
                                        int stride_levels, const struct nicoff_strided_peer *peer,
                                        uint64_t tag);
NICOFF_API int nicoff_strided_start_get(nicoff_strided_engine *e, int method, uint64_t src_off,
                                        const uint64_t *src_stride, const nicoff_mr *dst_mr,
                                        uint64_t dst_off, const uint64_t *dst_stride,
                                        const uint64_t *count, int stride_levels,
                                        const struct nicoff_strided_peer *peer, uint64_t tag);
NICOFF_API int nicoff_strided_start_acc(nicoff_strided_engine *e, int method, uint32_t acc,
                                        int64_t scale, const nicoff_mr *src_mr, uint64_t src_off,
                                        const uint64_t *src_stride, uint64_t dst_off,
                                        const uint64_t *dst_stride, const uint64_t *count,
                                        int stride_levels, const struct nicoff_strided_peer *peer,
                                        uint64_t tag);
/* Finished operations into out[0..n), without waiting: how many, or -errno. */
NICOFF_API int nicoff_strided_poll(nicoff_strided_engine *e, struct nicoff_strided_done *out,
                                   int n);
/* The next finished operation: 0, or -ETIMEDOUT after timeout_ms without progress. */
NICOFF_API int nicoff_strided_wait(nicoff_strided_engine *e, struct nicoff_strided_done *out,
                                   int timeout_ms);
/* What auto runs for this shape and peer (the others: themselves), or -errno. */
NICOFF_API int nicoff_strided_resolve(nicoff_strided_engine *e, int method, const uint64_t *count,
                                      int stride_levels, const struct nicoff_strided_peer *peer);
/* "nic", "hbna", "naive", "auto"; NULL for another value. */
NICOFF_API const char *nicoff_strided_method_name(int method);

#ifdef __cplusplus
}
#endif

#endif /* NICOFF_NICOFF_H */
