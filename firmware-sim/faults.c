// SPDX-License-Identifier: GPL-2.0
/*
 * Fault verdicts: xoshiro256** seeded through splitmix64.  Every verdict
 * draws the same number of values whatever it decides, so changing one
 * probability does not shift the decisions about later packets.
 */
#include "faults.h"

static u64 fw_splitmix64(u64 *x)
{
	u64 z;

	*x += 0x9e3779b97f4a7c15ull;
	z = *x;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static u64 fw_rotl(u64 x, unsigned int k)
{
	return (x << k) | (x >> (64 - k));
}

void fw_fault_init(struct fw_fault_state *st, u64 seed, u32 node)
{
	u64 x = seed ^ ((u64)node * 0xd1b54a32d192ed03ull);
	int i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < 4; i++)
		st->s[i] = fw_splitmix64(&x);
}

u64 fw_fault_rand(struct fw_fault_state *st)
{
	u64 *s = st->s;
	u64 r = fw_rotl(s[1] * 5, 7) * 9;
	u64 t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = fw_rotl(s[3], 45);
	return r;
}

/* A uniform value in [0, n) from 32 random bits, without a division. */
static u32 fw_fault_below(u32 r, u32 n)
{
	return (u32)(((u64)r * n) >> 32);
}

static bool fw_fault_chance(u32 r, u32 ppm)
{
	return fw_fault_below(r, FW_FAULT_PPM) < ppm;
}

struct fw_fault_verdict fw_fault_verdict(struct fw_fault_state *st,
					 const struct fw_fault_cfg *cfg, u32 pkt_len)
{
	struct fw_fault_verdict v = { 0 };
	u64 a = fw_fault_rand(st);
	u64 b = fw_fault_rand(st);
	u64 c = fw_fault_rand(st);
	u64 d = fw_fault_rand(st);
	u32 bits = pkt_len * 8;

	st->counts.packets++;
	if (fw_fault_chance((u32)a, cfg->drop_ppm)) {
		v.faults = FW_FAULT_DROP;
		st->counts.drops++;
		return v;
	}
	if (fw_fault_chance((u32)(a >> 32), cfg->dup_ppm)) {
		v.faults |= FW_FAULT_DUP;
		st->counts.dups++;
	}
	if (bits && fw_fault_chance((u32)b, cfg->corrupt_ppm)) {
		v.faults |= FW_FAULT_CORRUPT;
		v.corrupt_bit = fw_fault_below((u32)(c >> 32), bits);
		st->counts.corrupts++;
	}
	if (cfg->delay_ns && fw_fault_chance((u32)(b >> 32), cfg->reorder_ppm)) {
		v.faults |= FW_FAULT_REORDER;
		v.delay_ns = cfg->delay_ns;
		st->counts.reorders++;
	}
	if (cfg->delay_ns && fw_fault_chance((u32)c, cfg->delay_ppm)) {
		v.faults |= FW_FAULT_DELAY;
		v.delay_ns += 1 + fw_fault_below((u32)d, cfg->delay_ns);
		st->counts.delays++;
	}
	return v;
}

void fw_fault_flip(void *buf, u32 bit)
{
	u8 *p = buf;

	p[bit >> 3] ^= (u8)(1u << (bit & 7));
}
