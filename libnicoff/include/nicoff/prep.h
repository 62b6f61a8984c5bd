/*
 * Command builders: one static inline nicoff_prep_<op>() per opcode of
 * <nicoff/nicoff_abi.h>, each filling a whole struct nicoff_cmd (flags and
 * reserved fields zero, as the card demands) so that no caller writes a
 * descriptor field by field.  As liburing's io_uring_prep_*(), they only
 * fill memory: the command goes into a ring slot or a local variable and is
 * posted by whatever the caller uses (nicoff_post(), the raw ring).
 *
 * The arguments follow nicoff_post_<op>() of <nicoff/nicoff.h>, the
 * completion's tag last.  Usable from C and C++ with the ABI header alone:
 * no library symbol is needed.
 */
#ifndef NICOFF_PREP_H
#define NICOFF_PREP_H

#include <stdint.h>
#include <string.h>

#include <nicoff/nicoff_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Zero the whole descriptor, then set what every opcode has. */
static inline void nicoff_prep_cmd(struct nicoff_cmd *c, uint8_t opcode, uint64_t tag) {
    memset(c, 0, sizeof(*c));
    c->opcode = opcode;
    c->tag = tag;
}

/* NICOFF_OP_NOP: completes at once; tests the rings. */
static inline void nicoff_prep_nop(struct nicoff_cmd *c, uint64_t tag) {
    nicoff_prep_cmd(c, NICOFF_OP_NOP, tag);
}

/* NICOFF_OP_COPY: len bytes from region src_mr at src_off to dst_mr at dst_off. */
static inline void nicoff_prep_copy(struct nicoff_cmd *c, uint32_t src_mr, uint64_t src_off,
                                    uint32_t dst_mr, uint64_t dst_off, uint64_t len, uint64_t tag) {
    nicoff_prep_cmd(c, NICOFF_OP_COPY, tag);
    c->copy.src_mr = src_mr;
    c->copy.dst_mr = dst_mr;
    c->copy.src_off = src_off;
    c->copy.dst_off = dst_off;
    c->copy.len = len;
}

/* NICOFF_OP_SEND: len bytes of region mr at off to (card, port), labelled msg_tag. */
static inline void nicoff_prep_send(struct nicoff_cmd *c, uint32_t card, uint32_t port, uint32_t mr,
                                    uint64_t off, uint64_t len, uint64_t msg_tag, uint64_t tag) {
    nicoff_prep_cmd(c, NICOFF_OP_SEND, tag);
    c->send.dst_card = card;
    c->send.dst_port = port;
    c->send.mr = mr;
    c->send.off = off;
    c->send.len = len;
    c->send.msg_tag = msg_tag;
}

/*
 * NICOFF_OP_RECV: a buffer of len bytes in region mr at off for the first
 * message from (src_card, src_port) -- NICOFF_ANY for any -- whose tag
 * equals msg_tag on the bits of tag_mask.
 */
static inline void nicoff_prep_recv(struct nicoff_cmd *c, uint32_t mr, uint64_t off, uint64_t len,
                                    uint32_t src_card, uint32_t src_port, uint64_t msg_tag,
                                    uint64_t tag_mask, uint64_t tag) {
    nicoff_prep_cmd(c, NICOFF_OP_RECV, tag);
    c->recv.mr = mr;
    c->recv.src_card = src_card;
    c->recv.src_port = src_port;
    c->recv.off = off;
    c->recv.len = len;
    c->recv.tag = msg_tag;
    c->recv.tag_mask = tag_mask;
}

/*
 * NICOFF_OP_PUT or NICOFF_OP_GET (opcode): len bytes between local region
 * mr at off and the peer's region rkey at remote_off on (card, port).
 */
static inline void nicoff_prep_rdma(struct nicoff_cmd *c, uint8_t opcode, uint32_t card,
                                    uint32_t port, uint32_t rkey, uint64_t remote_off, uint32_t mr,
                                    uint64_t off, uint64_t len, uint64_t tag) {
    nicoff_prep_cmd(c, opcode, tag);
    c->rdma.dst_card = card;
    c->rdma.dst_port = port;
    c->rdma.rkey = rkey;
    c->rdma.mr = mr;
    c->rdma.remote_off = remote_off;
    c->rdma.off = off;
    c->rdma.len = len;
}

static inline void nicoff_prep_put(struct nicoff_cmd *c, uint32_t card, uint32_t port,
                                   uint32_t rkey, uint64_t remote_off, uint32_t mr, uint64_t off,
                                   uint64_t len, uint64_t tag) {
    nicoff_prep_rdma(c, NICOFF_OP_PUT, card, port, rkey, remote_off, mr, off, len, tag);
}

static inline void nicoff_prep_get(struct nicoff_cmd *c, uint32_t card, uint32_t port,
                                   uint32_t rkey, uint64_t remote_off, uint32_t mr, uint64_t off,
                                   uint64_t len, uint64_t tag) {
    nicoff_prep_rdma(c, NICOFF_OP_GET, card, port, rkey, remote_off, mr, off, len, tag);
}

/*
 * A remote atomic (opcode NICOFF_OP_FETCH_ADD, FETCH_WRITE or COMPARE_SWAP)
 * on the width-byte word (4 or 8) at remote_off of the peer's region rkey;
 * compare counts for COMPARE_SWAP only.
 */
static inline void nicoff_prep_atomic(struct nicoff_cmd *c, uint8_t opcode, uint32_t card,
                                      uint32_t port, uint32_t rkey, uint64_t remote_off,
                                      uint32_t width, uint64_t operand, uint64_t compare,
                                      uint64_t tag) {
    nicoff_prep_cmd(c, opcode, tag);
    c->atomic.dst_card = card;
    c->atomic.dst_port = port;
    c->atomic.rkey = rkey;
    c->atomic.width = width;
    c->atomic.remote_off = remote_off;
    c->atomic.operand = operand;
    c->atomic.compare = compare;
}

/* word += value */
static inline void nicoff_prep_fetch_add(struct nicoff_cmd *c, uint32_t card, uint32_t port,
                                         uint32_t rkey, uint64_t remote_off, uint32_t width,
                                         uint64_t value, uint64_t tag) {
    nicoff_prep_atomic(c, NICOFF_OP_FETCH_ADD, card, port, rkey, remote_off, width, value, 0, tag);
}

/* word = value */
static inline void nicoff_prep_fetch_write(struct nicoff_cmd *c, uint32_t card, uint32_t port,
                                           uint32_t rkey, uint64_t remote_off, uint32_t width,
                                           uint64_t value, uint64_t tag) {
    nicoff_prep_atomic(c, NICOFF_OP_FETCH_WRITE, card, port, rkey, remote_off, width, value, 0,
                       tag);
}

/* if (word == compare) word = swap */
static inline void nicoff_prep_compare_swap(struct nicoff_cmd *c, uint32_t card, uint32_t port,
                                            uint32_t rkey, uint64_t remote_off, uint32_t width,
                                            uint64_t compare, uint64_t swap, uint64_t tag) {
    nicoff_prep_atomic(c, NICOFF_OP_COMPARE_SWAP, card, port, rkey, remote_off, width, swap,
                       compare, tag);
}

/*
 * NICOFF_OP_GROUP_CREATE: group group_id of size members, listed as struct
 * nicoff_member[size] in region mr at off, this port being member rank;
 * algorithm is a NICOFF_BARRIER_* or NICOFF_BARRIER_DEFAULT, param its tree
 * degree or fan-in (0: the default).
 */
static inline void nicoff_prep_group_create(struct nicoff_cmd *c, uint32_t group_id, uint32_t rank,
                                            uint32_t size, uint32_t mr, uint64_t off,
                                            uint32_t algorithm, uint32_t param, uint64_t tag) {
    nicoff_prep_cmd(c, NICOFF_OP_GROUP_CREATE, tag);
    c->group.group_id = group_id;
    c->group.rank = rank;
    c->group.size = size;
    c->group.mr = mr;
    c->group.off = off;
    c->group.algorithm = algorithm;
    c->group.param = param;
}

/*
 * The same with the group's broadcast settings: bcast_channels 0 (the
 * card's default) or NICOFF_BCAST_MIN_CHANNELS to NICOFF_BCAST_MAX_CHANNELS,
 * bcast_flags NICOFF_BCAST_F_* (NOCRC, P2P).
 */
static inline void nicoff_prep_group_create_bcast(struct nicoff_cmd *c, uint32_t group_id,
                                                  uint32_t rank, uint32_t size, uint32_t mr,
                                                  uint64_t off, uint32_t algorithm, uint32_t param,
                                                  uint32_t bcast_channels, uint32_t bcast_flags,
                                                  uint64_t tag) {
    nicoff_prep_group_create(c, group_id, rank, size, mr, off, algorithm, param, tag);
    c->group.bcast_channels = bcast_channels;
    c->group.bcast_flags = bcast_flags;
}

/* NICOFF_OP_GROUP_DESTROY and NICOFF_OP_BARRIER name the group only. */
static inline void nicoff_prep_group_destroy(struct nicoff_cmd *c, uint32_t group_id,
                                             uint64_t tag) {
    nicoff_prep_cmd(c, NICOFF_OP_GROUP_DESTROY, tag);
    c->group.group_id = group_id;
}

static inline void nicoff_prep_barrier(struct nicoff_cmd *c, uint32_t group_id, uint64_t tag) {
    nicoff_prep_cmd(c, NICOFF_OP_BARRIER, tag);
    c->group.group_id = group_id;
}

/*
 * NICOFF_OP_BCAST: broadcast len bytes from member root of group group_id;
 * the root sends region mr at off, every other member receives into its
 * region mr at off.  Every member posts the group's broadcasts in the same
 * order with the same root and len.
 */
static inline void nicoff_prep_bcast(struct nicoff_cmd *c, uint32_t group_id, uint32_t root,
                                     uint32_t mr, uint64_t off, uint64_t len, uint64_t tag) {
    nicoff_prep_cmd(c, NICOFF_OP_BCAST, tag);
    c->bcast.group_id = group_id;
    c->bcast.root = root;
    c->bcast.mr = mr;
    c->bcast.off = off;
    c->bcast.len = len;
}

/*
 * NICOFF_OP_PING: a round trip to (card, port) answered by the card alone;
 * the completion's result is its time in ns.
 */
static inline void nicoff_prep_ping(struct nicoff_cmd *c, uint32_t card, uint32_t port,
                                    uint64_t tag) {
    nicoff_prep_cmd(c, NICOFF_OP_PING, tag);
    c->ping.dst_card = card;
    c->ping.dst_port = port;
}

/*
 * NICOFF_OP_PUT_STRIDED or NICOFF_OP_GET_STRIDED as op describes it: the
 * shape is the struct nicoff_strided_desc at op->desc_off of the local
 * region op->desc_mr, which the card copies when it takes the command.
 */
static inline void nicoff_prep_strided(struct nicoff_cmd *c, uint8_t opcode,
                                       const struct nicoff_op_strided *op, uint64_t tag) {
    nicoff_prep_cmd(c, opcode, tag);
    c->strided = *op;
}

#ifdef __cplusplus
}
#endif

#endif
