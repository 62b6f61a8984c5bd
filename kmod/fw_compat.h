/* SPDX-License-Identifier: GPL-2.0 */
/* What the portable firmware may use, taken from the kernel. */
#ifndef NICOFF_FW_COMPAT_H
#define NICOFF_FW_COMPAT_H

#include <linux/types.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/errno.h>
#include <linux/atomic.h>
#include <linux/processor.h>

#endif
