// SPDX-License-Identifier: GPL-2.0
/*
 * The firmware's CRC-32C (fw_os.h) from ISA-L, whose crc32_iscsi() uses
 * the crc32 instruction and PCLMULQDQ folding where the CPU has them.
 * ISA-L's iSCSI CRC, like the kernel's crc32c(), leaves the pre- and
 * post-inversion to its caller.
 */
#include <isa-l/crc.h>

#include "host.h"

u32 fwos_crc32c(u32 crc, const void *buf, size_t len)
{
	return ~crc32_iscsi((unsigned char *)buf, (int)len, ~crc);
}
