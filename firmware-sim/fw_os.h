/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The firmware's only door to its host.  The firmware never calls the
 * kernel or libc itself: time, packets, registered host memory,
 * completions, allocation and CRC all come through these functions.
 * kmod/fw_host.c implements them in the module's card threads;
 * firmware-sim/host/ implements them in user space for the unit tests and
 * the simulator.  Each host also provides "fw_compat.h" (fixed-width types,
 * bool, size_t, memcpy/memset, errno values) on its include path.
 *
 * Every call is made by the single context that owns the card; none may
 * be made concurrently for the same card.
 */
#ifndef NICOFF_FW_OS_H
#define NICOFF_FW_OS_H

#include "fw_compat.h"

struct fw_host;		/* the host's per-card context, opaque here */
struct fw_pkt;
struct nicoff_cqe;

/* Monotonic time in nanoseconds (virtual time in the simulator). */
u64 fwos_now(struct fw_host *h);

/*
 * Packets: allocate one with room for @payload bytes, fill it, and hand it
 * to the fabric with fwos_send(), which takes ownership.  Packets the
 * fabric delivers (fw_rx()) are the firmware's to free.
 */
struct fw_pkt *fwos_pkt_alloc(struct fw_host *h, u32 payload);
void fwos_pkt_free(struct fw_host *h, struct fw_pkt *pkt);
void fwos_send(struct fw_host *h, struct fw_pkt *pkt);
/*
 * The fabric's multicast (a switch that replicates, as Quadrics' did):
 * one copy of @pkt, which it takes, to every node of [@first, @last] but
 * the sender, each copy with its own fate.  The header's dst_node is left
 * as the firmware set it.  Returns the copies the fabric took, or a
 * negative errno with the packet freed: -EINVAL for a range past the last
 * node or holding only the sender.
 */
int fwos_send_range(struct fw_host *h, struct fw_pkt *pkt, u32 first, u32 last);
/*
 * Whether the switch's outputs to the nodes [@first, @last] have room for
 * a packet now.  A real switch holds a packet while an output's buffer is
 * full (link-level flow control); an emulated one would queue it without
 * bound, and a sender that streams without acknowledgements (a large
 * broadcast) would bury its receivers' replies under its data.  Such a
 * sender asks first and sends later when there is none.
 */
bool fwos_fabric_room(struct fw_host *h, u32 first, u32 last);

/*
 * Registered host memory of a port of this card.  @key is a local handle,
 * or an rkey when FWOS_MEM_REMOTE is set in @flags.  The other bits of
 * @flags are the NICOFF_ACCESS_* rights the access needs (none to read for
 * the port's own commands).  The host checks that the region exists and
 * belongs to @port (-ENOENT), holds those rights (-EACCES) and covers
 * [off, off + len) (-ERANGE), then copies through its pinned pages.  With
 * @len 0 it only checks (off <= length), and the buffer may be NULL.
 */
#define FWOS_MEM_REMOTE	0x80000000u
int fwos_mem_read(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, void *dst,
		  u32 len);
int fwos_mem_write(struct fw_host *h, u32 port, u32 key, u32 flags, u64 off, const void *src,
		   u32 len);

/*
 * The same for @n pieces of one region, @seg[i].len bytes at @seg[i].off,
 * packed back to back in @dst (gather) or @src (scatter): what a strided
 * transfer moves per packet.  The region is looked up once and every piece
 * checked before the first byte is copied, so an error copies nothing.
 */
struct fwos_seg {
	u64 off;
	u64 len;
};

int fwos_mem_gather(struct fw_host *h, u32 port, u32 key, u32 flags,
		    const struct fwos_seg *seg, u32 n, void *dst);
int fwos_mem_scatter(struct fw_host *h, u32 port, u32 key, u32 flags,
		     const struct fwos_seg *seg, u32 n, const void *src);

/*
 * A remote atomic on the naturally aligned @width-byte word (4 or 8) at
 * @off of region @rkey of @port: @op NICOFF_OP_FETCH_ADD adds @operand,
 * NICOFF_OP_FETCH_WRITE stores it, NICOFF_OP_COMPARE_SWAP stores it if the
 * word equals @compare; *@old gets the word's previous value.  The host
 * checks as fwos_mem_write() does with FWOS_MEM_REMOTE |
 * NICOFF_ACCESS_REMOTE_ATOMIC (-ENOENT, -EACCES, -ERANGE), then that the
 * word's address in the process is a multiple of @width and @op and
 * @width are known (-EINVAL), and only then performs the operation, with
 * one CPU atomic instruction on the memory the process sees: it is atomic
 * against other cards' atomics and the process's own atomic instructions
 * on that word.  Nothing is written on error.
 */
int fwos_mem_atomic(struct fw_host *h, u32 port, u32 rkey, u64 off, u32 width, u32 op,
		    u64 operand, u64 compare, u64 *old);

/*
 * Post a completion to a port.  The host reserved room for it when it gave
 * the command to the firmware, so this cannot fail; completions for a port
 * the firmware was told is gone (fw_port_detach()) are never posted.
 */
void fwos_complete(struct fw_host *h, u32 port, const struct nicoff_cqe *cqe);

/* Zeroed memory for firmware state; may return NULL.  Freeing NULL does nothing. */
void *fwos_zalloc(struct fw_host *h, size_t size);
void fwos_free(struct fw_host *h, void *p);

/*
 * CRC-32C (Castagnoli, reflected, with pre- and post-inversion: iSCSI's
 * and ext4's): the wire checksum, because CPUs compute it in hardware
 * (SSE4.2's crc32 instruction) and both hosts have a library for it.
 * Chains like zlib's crc32(): start with 0, pass the last result on.
 */
u32 fwos_crc32c(u32 crc, const void *buf, size_t len);

#endif
