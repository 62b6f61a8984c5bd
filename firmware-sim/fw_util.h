/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers of the firmware.  The firmware builds in the kernel and in
 * user space, so it carries its own: every name starts with fw_ to stay
 * clear of the kernel's min(), container_of() and friends.
 */
#ifndef NICOFF_FW_UTIL_H
#define NICOFF_FW_UTIL_H

#include "fw_compat.h"

/*
 * Compile-time check that any C compiler of either host takes: a false
 * @cond declares an array of negative size.  @msg only documents.
 */
#define FW_STATIC_ASSERT(cond, msg)	extern int fw_static_assert[(cond) ? 1 : -1]

#define FW_BIT(n)	(1u << (n))

#define FW_U32_MAX	0xffffffffu
#define FW_U64_MAX	0xffffffffffffffffull

#define fw_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline u32 fw_min_u32(u32 a, u32 b)
{
	return a < b ? a : b;
}

static inline u64 fw_min_u64(u64 a, u64 b)
{
	return a < b ? a : b;
}

static inline u64 fw_max_u64(u64 a, u64 b)
{
	return a > b ? a : b;
}

/* a + b, saturated at FW_U64_MAX: deadlines must not wrap. */
static inline u64 fw_add_sat(u64 a, u64 b)
{
	return a + b < a ? FW_U64_MAX : a + b;
}

/* *@r = a + b or a * b; true if that overflowed (the compilers' checked arithmetic). */
static inline bool fw_add_overflow(u64 a, u64 b, u64 *r)
{
	return __builtin_add_overflow(a, b, r);
}

static inline bool fw_mul_overflow(u64 a, u64 b, u64 *r)
{
	return __builtin_mul_overflow(a, b, r);
}

/* Sequence numbers wrap at 2^32: compare them as serial numbers. */
static inline bool fw_seq_before(u32 a, u32 b)
{
	return (s32)(a - b) < 0;
}

#endif
