// SPDX-License-Identifier: GPL-2.0
/*
 * The firmware's CRC-32 (IEEE 802.3, reflected: zlib's and the kernel's
 * crc32_le) from ISA-L, whose crc32_gzip_refl() folds with PCLMULQDQ
 * where the CPU has it: on the ~100-byte packets that dominate, zlib's
 * crc32() costs ten times as much, and the CRC was already a quarter of
 * the cost of an event.  zlib's stays, for the tests to compare with.
 */
#include <zlib.h>
#include <isa-l/crc.h>

#include "host.h"

u32 fwos_crc32(u32 crc, const void *buf, size_t len)
{
	return crc32_gzip_refl(crc, buf, len);
}

u32 sim_crc32_zlib(u32 crc, const void *buf, size_t len)
{
	return (u32)crc32(crc, buf, (unsigned int)len);
}
