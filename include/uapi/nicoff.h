/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * nicoff user ABI: ioctls, mmap offsets, ring and descriptor layouts.
 *
 * Every structure has fixed-width fields and explicit padding; every
 * reserved field must be zero or the kernel answers -EINVAL, so that a
 * later ABI version can give those fields a meaning.  The library checks
 * NICOFF_ABI_VERSION against NICOFF_IOC_QUERY at open.
 *
 * See Documentation/abi.md for the semantics of each call.
 */
#ifndef _UAPI_NICOFF_H
#define _UAPI_NICOFF_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define NICOFF_ABI_VERSION	1

/* One port per open file: "any free port" asks the card to choose. */
#define NICOFF_PORT_ANY		0xffffffffu
/* Wildcard source card or port of a receive. */
#define NICOFF_ANY		0xffffffffu

/* Memory region access rights (struct nicoff_reg_mr.access). */
#define NICOFF_ACCESS_LOCAL_WRITE	(1u << 0)
#define NICOFF_ACCESS_REMOTE_READ	(1u << 1)
#define NICOFF_ACCESS_REMOTE_WRITE	(1u << 2)
#define NICOFF_ACCESS_REMOTE_ATOMIC	(1u << 3)
#define NICOFF_ACCESS_ALL		0xfu

/* mmap offsets of the two rings of a port (also returned by PORT_OPEN). */
#define NICOFF_MMAP_CMD_RING	0x00000000ull
#define NICOFF_MMAP_CQ_RING	0x10000000ull

/* Ring header flags (struct nicoff_ring_hdr.flags). */
#define NICOFF_RING_NEED_WAKEUP	(1u << 0)	/* cmd ring: card thread sleeps */
#define NICOFF_RING_ERROR	(1u << 1)	/* port is in the error state */

/*
 * Ring header at offset 0 of each ring mapping.  The producer and the
 * consumer index each own a cache line; the flags word has a third.  The
 * indices run freely and are masked with (entries - 1) on use.
 *
 * Command ring: the process produces, the card consumes.
 * Completion ring: the card produces, the process consumes.
 */
struct nicoff_ring_hdr {
	__u32 producer;
	__u32 pad0[15];
	__u32 consumer;
	__u32 pad1[15];
	__u32 flags;
	__u32 entries;		/* read-only copy of the ring size */
	__u32 pad2[14];
	__u32 pad3[16];
};

#define NICOFF_RING_HDR_SIZE	256

/* Opcodes (struct nicoff_cmd.opcode): see nicoff_lists.h. */
enum nicoff_opcode {
#define NICOFF_OPCODE(op, name)		NICOFF_OP_##op,
#define NICOFF_OPCODE_CQE(op, name)
#include "nicoff_lists.h"
#undef NICOFF_OPCODE
#undef NICOFF_OPCODE_CQE
	NICOFF_OP_MAX,			/* first invalid opcode */
	/*
	 * Completion-only opcodes.  REMOTE_ACCESS_ERROR: a peer's put or get
	 * broke this port's memory rules (status: the errno it got; result:
	 * violations so far; src_card/src_port: the latest offender).  Posted
	 * best effort, when the ring has room.  PORT_ERROR: the port entered
	 * the error state.
	 */
	NICOFF_OP_REMOTE_ACCESS_ERROR = 0xfe,
	NICOFF_OP_PORT_ERROR = 0xff,
};

/* NICOFF_OP_COPY: copy @len bytes between two regions of the port. */
struct nicoff_op_copy {
	__u32 src_mr;		/* handle of the source region */
	__u32 dst_mr;		/* handle of the destination (LOCAL_WRITE) */
	__u64 src_off;		/* byte offsets within the regions */
	__u64 dst_off;
	__u64 len;
	__u64 reserved[2];
};

/*
 * NICOFF_OP_SEND: send @len bytes of region @mr at @off as one message to
 * (dst_card, dst_port), labelled @msg_tag.  Completes once every byte is
 * acknowledged by the destination card.
 */
struct nicoff_op_send {
	__u32 dst_card;
	__u32 dst_port;
	__u32 mr;
	__u32 reserved0;
	__u64 off;
	__u64 len;
	__u64 msg_tag;
	__u64 reserved1;
};

/*
 * NICOFF_OP_RECV: post a receive buffer (GM's receive token).  It takes the
 * first message from (src_card, src_port) -- NICOFF_ANY matches any --
 * whose tag satisfies (msg_tag ^ tag) & tag_mask == 0.  Completes with the
 * message length, its source and its tag.
 */
struct nicoff_op_recv {
	__u32 mr;
	__u32 src_card;
	__u32 src_port;
	__u32 reserved0;
	__u64 off;
	__u64 len;
	__u64 tag;
	__u64 tag_mask;
};

/*
 * NICOFF_OP_PUT / NICOFF_OP_GET: write @len bytes of local region @mr at
 * @off into, or read them from, the peer's region named by @rkey at
 * @remote_off.  The peer's region needs REMOTE_WRITE or REMOTE_READ; the
 * local one needs LOCAL_WRITE for a get.
 */
struct nicoff_op_rdma {
	__u32 dst_card;
	__u32 dst_port;
	__u32 rkey;
	__u32 mr;
	__u64 remote_off;
	__u64 off;
	__u64 len;
	__u64 reserved;
};

/*
 * NICOFF_OP_PUT_STRIDED / NICOFF_OP_GET_STRIDED: a non-contiguous put or
 * get in ARMCI's terms, walked by the card (the NIC-based method).  The
 * shape is a struct nicoff_strided_desc the card reads from local region
 * @desc_mr at @desc_off when it takes the command (copied: the process may
 * reuse the memory at once): @levels (0 to NICOFF_STRIDED_MAX_LEVELS)
 * levels of blocks, count[0] contiguous bytes at the bottom.  The local
 * side starts at @off of region @mr, the remote side at @remote_off of the
 * peer's region @rkey; each has its own strides, the counts are shared.
 * Rights as for PUT and GET; every byte of both sides is checked to be
 * inside its region before the first one moves.  Completes with the bytes
 * moved: the product of the counts.
 */
struct nicoff_op_strided {
	__u32 dst_card;
	__u32 dst_port;
	__u32 rkey;
	__u32 mr;
	__u64 remote_off;
	__u64 off;
	__u32 desc_mr;
	union {
		__u32 levels;
		__u32 segments;	/* PUT_VECTOR, GET_VECTOR */
	};
	__u64 desc_off;
};

#define NICOFF_STRIDED_MAX_LEVELS	8

/*
 * NICOFF_OP_ACC_STRIDED: a strided put that adds instead of writing (ARMCI's
 * AccS): each element at the destination becomes itself plus scale times
 * the source's, with wrapping two's complement arithmetic, elements of the
 * descriptor's acc type; the card serves one at a time, so accumulates to
 * one card do not interleave.  The peer's region needs REMOTE_WRITE.  The
 * card does no floating point: NICOFF_ACC_DOUBLE is refused (EOPNOTSUPP).
 */
enum nicoff_acc_type {
	NICOFF_ACC_NONE,	/* a put or a get */
	NICOFF_ACC_INT32,
	NICOFF_ACC_INT64,
	NICOFF_ACC_DOUBLE,
};

/*
 * The shape of a strided transfer, in registered memory.  Level 0 is
 * count[0] contiguous bytes; level i (1 <= i <= levels) is count[i] level
 * i - 1 blocks, *_stride[i - 1] bytes apart.  Bytes move in that order,
 * the lowest level fastest.  Counts and strides above levels are ignored;
 * a zero count moves nothing.  An accumulate's count[0] is a whole number
 * of its elements.
 */
struct nicoff_strided_desc {
	__u64 count[NICOFF_STRIDED_MAX_LEVELS + 1];
	__u64 local_stride[NICOFF_STRIDED_MAX_LEVELS];
	__u64 remote_stride[NICOFF_STRIDED_MAX_LEVELS];
	__u32 acc;		/* ACC_STRIDED: enum nicoff_acc_type; else zero */
	__u32 reserved;		/* zero */
	__s64 scale;		/* ACC_STRIDED: the factor; else zero */
};

/*
 * NICOFF_OP_PUT_VECTOR / NICOFF_OP_GET_VECTOR: a put or get of a list of
 * contiguous segments, ARMCI's PutV and GetV, walked by the card as a
 * strided transfer is, with a struct nicoff_op_strided whose @segments
 * (at most NICOFF_VECTOR_MAX_SEGS, else EINVAL) struct nicoff_vector_seg
 * are at @desc_off of local region @desc_mr, copied when the card takes
 * the command (the process may reuse the memory at once).  Segment i
 * moves len bytes between @off + local_off of local region @mr and
 * @remote_off + remote_off of the peer's region @rkey; segments move in
 * list order, may overlap on either side, and one of zero length moves
 * nothing.  Rights as for PUT and GET; every segment of both sides is
 * checked to be inside its region (offsets that wrap: ERANGE) before the
 * first byte moves.  Completes with the bytes moved: the sum of the
 * lengths.
 */

/*
 * Bounds the card's copy of a list (it keeps both sides' offsets for the
 * walk); a longer list is split by the host into several commands.
 */
#define NICOFF_VECTOR_MAX_SEGS	16

/* One segment of a vector put or get, in registered memory. */
struct nicoff_vector_seg {
	__u64 local_off;
	__u64 remote_off;
	__u64 len;
};

/*
 * NICOFF_OP_FETCH_ADD / FETCH_WRITE / COMPARE_SWAP: executed by the target
 * card on the naturally aligned @width-byte word (4 or 8) at @remote_off of
 * the peer's region @rkey, which needs REMOTE_ATOMIC.  FETCH_ADD adds
 * @operand, FETCH_WRITE stores it, COMPARE_SWAP stores it if the word
 * equals @compare.  The completion's result is the word's old value.
 */
struct nicoff_op_atomic {
	__u32 dst_card;
	__u32 dst_port;
	__u32 rkey;
	__u32 width;
	__u64 remote_off;
	__u64 operand;
	__u64 compare;
	__u64 reserved;
};

/* Barrier algorithms (struct nicoff_op_group.algorithm): see nicoff_lists.h. */
enum nicoff_barrier_alg {
#define NICOFF_BARRIER_ALG(alg, name)	NICOFF_BARRIER_##alg,
#include "nicoff_lists.h"
#undef NICOFF_BARRIER_ALG
	NICOFF_BARRIER_MAX,
};

/*
 * GROUP_CREATE's algorithm: whatever the card is configured to run (the
 * module's barrier_alg tunable, auto unless set).  The completion's result
 * is the algorithm run (low 32 bits) and its tree degree or fan-in (high
 * 32 bits, 0 when it has none); a BARRIER's result is its number, from 1.
 */
#define NICOFF_BARRIER_DEFAULT	0xffu

/* One member of a group: where its port is. */
struct nicoff_member {
	__u32 card;
	__u32 port;
};

/*
 * NICOFF_OP_GROUP_CREATE: a collective group of @size members, listed as
 * struct nicoff_member[size] in region @mr at @off, this port being member
 * @rank; @group_id is the same on every member (agreed through the job id).
 * Every member posts it; it completes, with the algorithm chosen in
 * result, once the group is usable.  NICOFF_OP_GROUP_DESTROY and
 * NICOFF_OP_BARRIER name the group by @group_id only.
 *
 * NICOFF_GROUP_F_HOST_TRIALS (with NICOFF_BARRIER_AUTO only): after the
 * barriers the cards run by themselves, the candidates are timed again on
 * the members' own barriers, so that the time a process takes to see a
 * barrier end and enter the next counts in the choice: a candidate they
 * time clearly faster than the cards' pick replaces it.  While the
 * GROUP_CREATE is pending, every member posts BARRIERs on the group, one
 * at a time; each completes with the number of such barriers still to
 * come, and the GROUP_CREATE completes (with the choice) after the one
 * that says 0.  They are not counted among the group's barriers.
 */
#define NICOFF_GROUP_F_HOST_TRIALS	0x1u
#define NICOFF_GROUP_F_ALL		0x1u

struct nicoff_op_group {
	__u32 group_id;
	__u32 rank;
	__u32 size;
	__u32 mr;
	__u64 off;
	__u32 algorithm;	/* enum nicoff_barrier_alg */
	__u32 param;		/* tree degree or combining fan-in; 0: default */
	__u32 bcast_channels;	/* NICOFF_BCAST_MIN/MAX_CHANNELS; 0: the card's default */
	__u32 bcast_flags;	/* NICOFF_BCAST_F_* */
	__u32 flags;		/* NICOFF_GROUP_F_* */
	__u32 reserved;
};

/*
 * Broadcast (seed 002).  A group's broadcasts are numbered in the order
 * its members post them: every member posts the same sequence, each with
 * the same root and length.  Data up to NICOFF_BCAST_EAGER_MAX bytes
 * travels in one of the group's channels (card memory on every member)
 * and the root's command completes once it is sent; larger data goes
 * straight into the receivers' posted buffers and the root's command
 * completes once every member holds it.  Members do not acknowledge
 * each broadcast: when the channels run out (or after a large one) the
 * group synchronises once.  See Documentation/broadcast.md.
 */
#define NICOFF_BCAST_MIN_CHANNELS	2
#define NICOFF_BCAST_MAX_CHANNELS	64
#define NICOFF_BCAST_EAGER_MAX		16384
/* GROUP_CREATE's bcast_flags. */
#define NICOFF_BCAST_F_NOCRC	0x1u	/* no CRC over broadcast payloads (measure its cost) */
#define NICOFF_BCAST_F_P2P	0x2u	/* never the fabric's multicast: the point-to-point tree */
#define NICOFF_BCAST_F_ALL	0x3u

/*
 * NICOFF_OP_BCAST: broadcast @len bytes from member @root of group
 * @group_id.  The root sends region @mr at @off; every other member
 * receives into its region @mr at @off (LOCAL_WRITE).  Completes with
 * @len; a member whose @len differs from the root's gets -EMSGSIZE and
 * the group fails (every member's broadcasts then complete with
 * -ECONNRESET).
 */
struct nicoff_op_bcast {
	__u32 group_id;
	__u32 root;
	__u32 mr;
	__u32 reserved0;
	__u64 off;
	__u64 len;
	__u64 reserved[2];
};

/*
 * NICOFF_OP_PING: a round trip to card @dst_card that touches no host
 * memory.  The target card answers itself, with no receive posted; a port
 * @dst_port nobody has open answers -ECONNREFUSED.  Lost packets are sent
 * again with the atomics' timeout and retry budget, then -ETIMEDOUT.  The
 * completion's result (where an atomic's old value goes) is the round trip
 * in ns on this card's clock, from the transmission that was answered.
 */
struct nicoff_op_ping {
	__u32 dst_card;
	__u32 dst_port;
	__u64 reserved[5];
};

/* A command: 64 bytes, written by the process into the command ring. */
struct nicoff_cmd {
	__u8  opcode;
	__u8  flags;		/* none defined yet: must be zero */
	__u16 reserved0;
	__u32 reserved1;
	__u64 tag;		/* returned untouched in the completion */
	union {
		struct nicoff_op_copy copy;
		struct nicoff_op_send send;
		struct nicoff_op_recv recv;
		struct nicoff_op_rdma rdma;
		struct nicoff_op_atomic atomic;
		struct nicoff_op_group group;
		struct nicoff_op_ping ping;
		struct nicoff_op_strided strided;
		struct nicoff_op_bcast bcast;
		__u64 raw[6];
	};
};

/* A completion: 64 bytes, written by the card into the completion ring. */
struct nicoff_cqe {
	__u64 tag;
	__s32 status;		/* 0 or a negative errno */
	__u8  opcode;
	__u8  flags;
	__u16 reserved0;
	__u64 result;		/* bytes copied or received, old value, ... */
	__u32 src_card;		/* RECV: where the message came from */
	__u32 src_port;
	__u64 msg_tag;		/* RECV: the message's tag */
	__u64 reserved1[3];
};

/* NICOFF_IOC_QUERY: what the card and the module offer. */
struct nicoff_query {
	__u32 abi_version;
	__u32 card;		/* this device's card (node) number */
	__u32 num_cards;
	__u32 max_ports;
	__u32 max_ring_entries;
	__u32 max_mrs;		/* per port */
	__u32 reserved[10];
};

/* NICOFF_IOC_PORT_OPEN: turn this open file into a port. */
struct nicoff_port_open {
	__u32 abi_version;	/* in: NICOFF_ABI_VERSION */
	__u32 port;		/* in: wanted port or NICOFF_PORT_ANY; out */
	__u32 cmd_entries;	/* in: power of two, 2..max_ring_entries */
	__u32 cq_entries;	/* in: power of two, >= cmd_entries */
	__u32 flags;		/* in: none defined yet, must be zero */
	__u32 reserved0;
	__u64 cmd_offset;	/* out: mmap offset and size of each ring */
	__u64 cmd_size;
	__u64 cq_offset;
	__u64 cq_size;
	__u64 reserved[4];
};

/* NICOFF_IOC_REG_MR: pin and register [addr, addr + length). */
struct nicoff_reg_mr {
	__u64 addr;
	__u64 length;
	__u32 access;		/* NICOFF_ACCESS_* */
	__u32 reserved0;
	__u32 handle;		/* out: local handle */
	__u32 rkey;		/* out: key a peer names the region with */
	__u64 reserved[2];
};

/* NICOFF_IOC_DEREG_MR */
struct nicoff_dereg_mr {
	__u32 handle;
	__u32 reserved;
};

/* NICOFF_IOC_PORT_STATS: counters of this port. */
struct nicoff_port_stats {
	__u64 cmds;		/* commands consumed */
	__u64 cqes;		/* completions posted */
	__u64 kicks;		/* wake-up ioctls received */
	__u64 bad_cmds;		/* commands completed with -EINVAL etc. */
	__u64 cq_full;		/* passes stalled by a full completion ring */
	__u64 reserved[11];
};

#define NICOFF_IOC_MAGIC	0xB8

#define NICOFF_IOC_QUERY	_IOR(NICOFF_IOC_MAGIC, 0x00, struct nicoff_query)
#define NICOFF_IOC_PORT_OPEN	_IOWR(NICOFF_IOC_MAGIC, 0x01, struct nicoff_port_open)
#define NICOFF_IOC_REG_MR	_IOWR(NICOFF_IOC_MAGIC, 0x02, struct nicoff_reg_mr)
#define NICOFF_IOC_DEREG_MR	_IOW(NICOFF_IOC_MAGIC, 0x03, struct nicoff_dereg_mr)
#define NICOFF_IOC_KICK		_IO(NICOFF_IOC_MAGIC, 0x04)
#define NICOFF_IOC_PORT_STATS	_IOR(NICOFF_IOC_MAGIC, 0x05, struct nicoff_port_stats)

/*
 * Generic netlink family "nicoff": module-wide and per-card state for
 * tools (nicoffctl).  GET_INFO and GET_CARD (doit with NICOFF_NL_A_CARD, or
 * dump of every card) are open to all; SET_FAULTS and SET_CARD need
 * CAP_NET_ADMIN.
 */
#define NICOFF_GENL_NAME	"nicoff"
#define NICOFF_GENL_VERSION	1

enum nicoff_nl_cmd {
	NICOFF_NL_CMD_UNSPEC,
	NICOFF_NL_CMD_GET_INFO,		/* -> NUM_CARDS, ABI_VERSION, PINNED_PAGES, FAULTS */
	NICOFF_NL_CMD_GET_CARD,		/* CARD -> CARD, PORTS_OPEN, STATS, FAULTS, BCAST_HW */
	NICOFF_NL_CMD_SET_FAULTS,	/* [CARD], FAULTS: a card's, or the global, faults */
	NICOFF_NL_CMD_SET_CARD,		/* CARD, BCAST_HW: a card's settings */
	__NICOFF_NL_CMD_MAX,
};

#define NICOFF_NL_CMD_MAX	(__NICOFF_NL_CMD_MAX - 1)

enum nicoff_nl_attr {
	NICOFF_NL_A_UNSPEC,
	NICOFF_NL_A_PAD,
	NICOFF_NL_A_NUM_CARDS,		/* u32 */
	NICOFF_NL_A_ABI_VERSION,	/* u32 */
	NICOFF_NL_A_PINNED_PAGES,	/* u64 */
	NICOFF_NL_A_CARD,		/* u32 */
	NICOFF_NL_A_PORTS_OPEN,		/* u32 */
	NICOFF_NL_A_STATS,		/* nest of NICOFF_NL_STAT_* (u64) */
	NICOFF_NL_A_FAULTS,		/* nest of NICOFF_NL_FAULT_* */
	/*
	 * u32, 0 or 1: the card broadcasts by the switch's multicast (1) or
	 * the point-to-point tree (0); the module's bcast_hw sets every card.
	 */
	NICOFF_NL_A_BCAST_HW,
	__NICOFF_NL_A_MAX,
};

#define NICOFF_NL_A_MAX		(__NICOFF_NL_A_MAX - 1)

enum nicoff_nl_stat {
	NICOFF_NL_STAT_UNSPEC,
	NICOFF_NL_STAT_PAD,
#define NICOFF_NL_STAT_FW(attr, name)	NICOFF_NL_STAT_##attr,
#define NICOFF_NL_STAT_HOST(attr, name)	NICOFF_NL_STAT_##attr,
#include "nicoff_lists.h"
#undef NICOFF_NL_STAT_FW
#undef NICOFF_NL_STAT_HOST
	__NICOFF_NL_STAT_MAX,
};

#define NICOFF_NL_STAT_MAX	(__NICOFF_NL_STAT_MAX - 1)

enum nicoff_nl_fault {
	NICOFF_NL_FAULT_UNSPEC,
	NICOFF_NL_FAULT_DROP_PPM,	/* u32, parts per million, <= 1000000 */
	NICOFF_NL_FAULT_DUP_PPM,
	NICOFF_NL_FAULT_CORRUPT_PPM,
	NICOFF_NL_FAULT_REORDER_PPM,
	NICOFF_NL_FAULT_DELAY_PPM,
	NICOFF_NL_FAULT_DELAY_USECS,	/* u32, <= 4000000 */
	/* flag: SET: the card follows the global faults again; GET: it does */
	NICOFF_NL_FAULT_GLOBAL,
	__NICOFF_NL_FAULT_MAX,
};

#define NICOFF_NL_FAULT_MAX	(__NICOFF_NL_FAULT_MAX - 1)

#endif /* _UAPI_NICOFF_H */
