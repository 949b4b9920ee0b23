// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw - which of the kernel's CRC32c implementations MPA's CRC (RFC 5044
 * §4.4) goes through.
 *
 * An FPDU's CRC is taken piece by piece as it is framed or parsed: its
 * header, a marker, a payload chunk, its pad.  In a stream of small
 * messages most pieces are tens of octets.  The kernel offers two ways:
 * crc32c(), through the crypto API to the best registered driver (on
 * x86 crc32c-intel, with the SSE4.2 crc32 instruction), and
 * __crc32c_le(), lib/crc32's table loop, called directly.  For a short
 * piece the crypto API's fixed cost per call (a descriptor on the stack,
 * an indirect call) can outweigh the loop, and where the instruction is
 * slow, as under an emulator that computes it bit by bit, the table wins
 * outright.  Which is faster is a property of the machine, so it is
 * measured once at load, as the kernel picks its RAID6 and XOR routines.
 *
 * The two are timed at a short piece's length and at a page's, and the
 * table takes the pieces up to the longest length at which it won: its
 * cost grows faster with the length wherever the instruction is fast, so
 * where it wins at some length it wins at every shorter one.  Longer
 * pieces (placements of more than a page) always go to crc32c().
 */
#include <linux/crc32.h>
#include <linux/crc32c.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/printk.h>

#include "xiw.h"

unsigned int xiw_crc_table_max __read_mostly;

enum {
	/* Calls per timed round, and rounds: the fastest round counts. */
	XIW_CRC_CALLS = 64,
	XIW_CRC_ROUNDS = 8,
	/* The lengths timed: a header with its payload, and a page. */
	XIW_CRC_SHORT = 128,
	XIW_CRC_LONG = 4096,
};

/* Ascending: the table keeps the lengths up to its first loss. */
static const unsigned int xiw_crc_lengths[] __initconst = {
	XIW_CRC_SHORT, XIW_CRC_LONG
};

/* Nanoseconds of the fastest round of XIW_CRC_CALLS chained calls. */
static u64 __init xiw_crc_time(u32 (*fn)(u32 crc, const u8 *p,
					 unsigned int len),
			       const u8 *buf, unsigned int len)
{
	u64 best = U64_MAX;
	unsigned int round, call;
	u32 crc = ~0U;

	for (round = 0; round < XIW_CRC_ROUNDS; round++) {
		u64 start = ktime_get_ns();

		/* Each call takes the last one's result: none can be skipped. */
		for (call = 0; call < XIW_CRC_CALLS; call++)
			crc = fn(crc, buf, len);
		best = min(best, ktime_get_ns() - start);
	}
	/* Keeps the chain's result alive. */
	OPTIMIZER_HIDE_VAR(crc);
	return best;
}

static u32 __init xiw_crc_by_crypto(u32 crc, const u8 *p, unsigned int len)
{
	return crc32c(crc, p, len);
}

static u32 __init xiw_crc_by_table(u32 crc, const u8 *p, unsigned int len)
{
	return __crc32c_le(crc, p, len);
}

void __init xiw_crc_select(void)
{
	static u8 buf[XIW_CRC_LONG] __initdata;
	unsigned int i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = i * 37 + 11;
	/* Both are the kernel's; a disagreement would be its bug, not ours. */
	if (crc32c(~0U, buf, sizeof(buf)) != __crc32c_le(~0U, buf, sizeof(buf))) {
		pr_err("xiw: crc32c() and __crc32c_le() disagree; using crc32c()\n");
		return;
	}
	for (i = 0; i < ARRAY_SIZE(xiw_crc_lengths); i++) {
		unsigned int len = xiw_crc_lengths[i];
		u64 crypto_ns = xiw_crc_time(xiw_crc_by_crypto, buf, len);
		u64 table_ns = xiw_crc_time(xiw_crc_by_table, buf, len);

		pr_info("xiw: CRC32c of %u octets, %u calls: crypto API %llu ns, lib/crc32's table %llu ns\n",
			len, XIW_CRC_CALLS, crypto_ns, table_ns);
		if (table_ns >= crypto_ns)
			break;
		xiw_crc_table_max = len;
	}
	if (xiw_crc_table_max)
		pr_info("xiw: CRC32c of pieces up to %u octets by lib/crc32's table\n",
			xiw_crc_table_max);
}
