/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the firmware may use, for the user-space host: kernel-style
 * fixed-width types, bool, size_t, NULL, offsetof, mem* and errno values.
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

#endif
