/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A remote atomic applied to the process's word: the last step of both
 * hosts' fwos_mem_atomic(), once the region is found and checked.  Written
 * with the kernel's atomics on plain words; fw_compat.h gives the
 * user-space host the same names.
 */
#ifndef NICOFF_FW_ATOMIC_H
#define NICOFF_FW_ATOMIC_H

#include "fw_compat.h"
#include <uapi/nicoff.h>

/*
 * @op on the word at @p (u32 * or u64 *); evaluates to the word's previous
 * value.  The kernel has no fetch-add on a plain word: a compare-and-swap
 * loop does it.
 */
#define FW_ATOMIC_OP(p, op, operand, compare) ({				\
	__typeof__(p) fw_p_ = (p);						\
	__typeof__(*fw_p_) fw_v_ = (operand), fw_prev_;				\
										\
	switch (op) {								\
	case NICOFF_OP_FETCH_ADD:						\
		fw_prev_ = READ_ONCE(*fw_p_);					\
		while (!try_cmpxchg(fw_p_, &fw_prev_, fw_prev_ + fw_v_))	\
			cpu_relax();						\
		break;								\
	case NICOFF_OP_FETCH_WRITE:						\
		fw_prev_ = xchg(fw_p_, fw_v_);					\
		break;								\
	default:								\
		fw_prev_ = cmpxchg(fw_p_, (compare), fw_v_);			\
	}									\
	fw_prev_;								\
})

/*
 * FETCH_ADD, FETCH_WRITE or COMPARE_SWAP on the @width-byte word at @word,
 * as fw_os.h describes fwos_mem_atomic(): -EINVAL, and nothing written,
 * for a word not aligned to @width or an unknown @width or @op.  @word is
 * the host's address of the process's word, with the same alignment.
 */
static inline int fw_atomic_apply(void *word, u32 width, u32 op, u64 operand, u64 compare,
				  u64 *old)
{
	if ((width != 4 && width != 8) || ((unsigned long)word & (width - 1)))
		return -EINVAL;
	if (op != NICOFF_OP_FETCH_ADD && op != NICOFF_OP_FETCH_WRITE &&
	    op != NICOFF_OP_COMPARE_SWAP)
		return -EINVAL;
	if (width == 4)
		*old = FW_ATOMIC_OP((u32 *)word, op, (u32)operand, (u32)compare);
	else
		*old = FW_ATOMIC_OP((u64 *)word, op, operand, compare);
	return 0;
}

#endif
