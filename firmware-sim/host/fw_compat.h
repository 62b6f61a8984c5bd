/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the firmware may use, for the user-space host: kernel-style
 * fixed-width types, bool, size_t, NULL, offsetof, mem*, errno values and
 * atomics on plain words.
 */
#ifndef NICOFF_FW_COMPAT_H
#define NICOFF_FW_COMPAT_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <errno.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s8 s8;
typedef __s16 s16;
typedef __s32 s32;
typedef __s64 s64;

/*
 * The kernel's atomics on plain words, as fw_atomic.h uses them: the
 * value-returning ones fully ordered, READ_ONCE() a single load.
 */
#define READ_ONCE(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define cpu_relax()		do { } while (0)
#define xchg(p, v)		__atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define try_cmpxchg(p, oldp, v)						\
	__atomic_compare_exchange_n((p), (oldp), (v), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)
#define cmpxchg(p, o, v) ({							\
	__typeof__(p) fw_cmp_p_ = (p);						\
	__typeof__(*fw_cmp_p_) fw_cmp_old_ = (o);				\
	try_cmpxchg(fw_cmp_p_, &fw_cmp_old_, (v));				\
	fw_cmp_old_;								\
})

#endif
