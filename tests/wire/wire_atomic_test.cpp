// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// RFC 7306 §5.1.1 (masked FetchAdd) and §5.1.2 (masked CmpSwap) against
// deliberately naive reference models written from the RFC text.
#include <cstdint>
#include <random>
#include <vector>

#include <xiw/atomic_ops.h>
#include <xiw/wire.h>

#include <gtest/gtest.h>

namespace {

using u64 = std::uint64_t;

// Line-by-line transcription of the RFC 7306 §5.1.1 pseudocode.
u64 ref_fetch_add_pseudocode(u64 original, u64 add_data, u64 add_mask)
{
	u64 bit_location = 1;
	u64 carry = 0;
	u64 remote = 0;
	for (unsigned bit = 0; bit <= 63; bit++) {
		if (bit != 0)
			bit_location = bit_location << 1;
		u64 val1 = (original & bit_location) >> bit;
		u64 val2 = (add_data & bit_location) >> bit;
		u64 sum = carry + val1 + val2;
		carry = (sum & 2) >> 1;
		sum = sum & 1;
		if (sum)
			remote |= bit_location;
		carry = (carry && !(add_mask & bit_location)) ? 1 : 0;
	}
	return remote;
}

// Field-by-field model of the §5.1.1 prose: each set mask bit is the
// most significant bit of a field; every field is added on its own,
// modulo 2^width.  Bits above the highest set mask bit form one more
// field ending at bit 63.
u64 ref_fetch_add_fields(u64 original, u64 add_data, u64 add_mask)
{
	u64 result = 0;
	unsigned lo = 0;
	for (unsigned bit = 0; bit < 64; bit++) {
		bool end = ((add_mask >> bit) & 1) || bit == 63;
		if (!end)
			continue;
		unsigned width = bit - lo + 1;
		u64 fmask = width == 64 ? ~0ull : ((1ull << width) - 1);
		u64 a = (original >> lo) & fmask;
		u64 b = (add_data >> lo) & fmask;
		result |= ((a + b) & fmask) << lo;
		lo = bit + 1;
	}
	return result;
}

// Bit-by-bit model of the §5.1.2 pseudocode.
u64 ref_cmp_swap(u64 original, u64 compare, u64 cmask, u64 swap, u64 smask,
		 bool *matched)
{
	bool match = true;
	for (unsigned i = 0; i < 64; i++)
		if (((cmask >> i) & 1) &&
		    ((compare >> i) & 1) != ((original >> i) & 1))
			match = false;
	*matched = match;
	if (!match)
		return original;
	u64 r = 0;
	for (unsigned i = 0; i < 64; i++) {
		u64 bitv = ((smask >> i) & 1) ? (swap >> i) & 1
					      : (original >> i) & 1;
		r |= bitv << i;
	}
	return r;
}

// Random 64-bit values with varied bit density.
u64 rnd(std::mt19937_64 &g)
{
	switch (g() % 6) {
	case 0:
		return g() & g() & g();          // sparse
	case 1:
		return g() | g() | g();          // dense
	case 2:
		return 0;
	case 3:
		return ~0ull;
	case 4:
		return 1ull << (g() % 64);       // single bit
	default:
		return g();
	}
}

} // namespace

TEST(MaskedAtomics, ReferenceModelsAgree)
{
	// sanity of the two reference models against each other
	std::mt19937_64 g(7306);
	for (int i = 0; i < 2000; i++) {
		u64 a = rnd(g), b = rnd(g), m = rnd(g);
		ASSERT_EQ(ref_fetch_add_pseudocode(a, b, m),
			  ref_fetch_add_fields(a, b, m));
	}
}

TEST(MaskedAtomics, FetchAddHandWorked)
{
	// Add Mask 0: plain 64-bit add (§5.1.1), wraps.
	EXPECT_EQ(xiw_masked_fetch_add(~0ull, 1, 0), 0ull);
	EXPECT_EQ(xiw_masked_fetch_add(41, 1, 0), 42ull);
	// Two 32-bit fields: low field wraps, its carry is discarded.
	EXPECT_EQ(xiw_masked_fetch_add(0x00000001ffffffffull,
				       0x0000000100000001ull,
				       0x8000000080000000ull),
		  0x0000000200000000ull);
	// Eight 8-bit fields.
	EXPECT_EQ(xiw_masked_fetch_add(0xff01ff01ff01ff01ull,
				       0x0101010101010101ull,
				       0x8080808080808080ull),
		  0x0002000200020002ull);
	// Only bit 63 set: same as unmasked.
	EXPECT_EQ(xiw_masked_fetch_add(0x7fffffffffffffffull, 1,
				       0x8000000000000000ull),
		  0x8000000000000000ull);
	// All bits set: 64 one-bit fields -> xor.
	EXPECT_EQ(xiw_masked_fetch_add(0xf0f0ull, 0xff00ull, ~0ull),
		  0x0ff0ull);
	// 16-bit field at the bottom, 48-bit field above it.
	EXPECT_EQ(xiw_masked_fetch_add(0x000000000001fffeull,
				       0x0000000000000003ull,
				       0x0000000000008000ull),
		  0x0000000000010001ull);
	// Unmasked helper.
	EXPECT_EQ(xiw_fetch_add(0xffffffffffffffffull, 2), 1ull);
}

TEST(MaskedAtomics, FetchAddRandomVsPseudocode)
{
	std::mt19937_64 g(0x7306);
	for (int i = 0; i < 20000; i++) {
		u64 a = rnd(g), b = rnd(g), m = rnd(g);
		ASSERT_EQ(xiw_masked_fetch_add(a, b, m),
			  ref_fetch_add_pseudocode(a, b, m))
			<< std::hex << a << " + " << b << " mask " << m;
		ASSERT_EQ(xiw_fetch_add(a, b), ref_fetch_add_pseudocode(a, b, 0));
	}
}

TEST(MaskedAtomics, CmpSwapHandWorked)
{
	int swapped = -1;
	// Upper half compared and equal; lower half swapped.
	EXPECT_EQ(xiw_masked_cmp_swap(0x1122334455667788ull,
				      0x11223344ffffffffull,
				      0xffffffff00000000ull,
				      0xaaaaaaaabbbbbbbbull,
				      0x00000000ffffffffull, &swapped),
		  0x11223344bbbbbbbbull);
	EXPECT_EQ(swapped, 1);
	// One compared bit differs: memory unchanged.
	EXPECT_EQ(xiw_masked_cmp_swap(0x1122334455667788ull,
				      0x11223345ffffffffull,
				      0xffffffff00000000ull,
				      0xaaaaaaaabbbbbbbbull, ~0ull, &swapped),
		  0x1122334455667788ull);
	EXPECT_EQ(swapped, 0);
	// Compare mask 0 always matches.
	EXPECT_EQ(xiw_masked_cmp_swap(5, 6, 0, 7, ~0ull, nullptr), 7ull);
	// Swap mask 0: matches but nothing changes.
	EXPECT_EQ(xiw_masked_cmp_swap(5, 5, ~0ull, 7, 0, &swapped), 5ull);
	EXPECT_EQ(swapped, 1);
	// Unmasked.
	EXPECT_EQ(xiw_cmp_swap(5, 5, 9), 9ull);
	EXPECT_EQ(xiw_cmp_swap(5, 4, 9), 5ull);
}

TEST(MaskedAtomics, CmpSwapRandomVsReference)
{
	std::mt19937_64 g(0x5102);
	for (int i = 0; i < 20000; i++) {
		u64 o = rnd(g), c = rnd(g), cm = rnd(g), s = rnd(g),
		    sm = rnd(g);
		if (g() % 3 == 0) // make matches frequent
			c = (o & cm) | (c & ~cm);
		bool m_ref;
		int m_got = -1;
		u64 ref = ref_cmp_swap(o, c, cm, s, sm, &m_ref);
		ASSERT_EQ(xiw_masked_cmp_swap(o, c, cm, s, sm, &m_got), ref);
		ASSERT_EQ(m_got, m_ref ? 1 : 0);
		bool m2;
		ASSERT_EQ(xiw_cmp_swap(o, c, s),
			  ref_cmp_swap(o, c, ~0ull, s, ~0ull, &m2));
	}
}

TEST(MaskedAtomics, ApplyByAOpCode)
{
	__u64 r = 0;
	// FetchAdd with "unused" compare fields as RFC 7306 §5.2.1 sends them
	EXPECT_EQ(xiw_atomic_apply(XIW_AOP_FETCH_ADD, 10, 5, 0, 0,
				   XIW_ATOMIC_MASK_UNUSED, 0, &r), 0);
	EXPECT_EQ(r, 15ull);
	EXPECT_EQ(xiw_atomic_apply(XIW_AOP_CMP_SWAP, 10, 99, ~0ull, 10, ~0ull,
				   0, &r), 0);
	EXPECT_EQ(r, 99ull);
	EXPECT_EQ(xiw_atomic_apply(XIW_AOP_CMP_SWAP, 10, 99, ~0ull, 11, ~0ull,
				   0, &r), 0);
	EXPECT_EQ(r, 10ull);
	// 0x1: Swap in draft-ietf-storm-rdmap-ext-01, Reserved in RFC 7306.
	r = 1234;
	EXPECT_EQ(xiw_atomic_apply(XIW_AOP_SWAP_DRAFT, 10, 99, ~0ull, 0, ~0ull,
				   0, &r), -1);
	EXPECT_EQ(r, 1234ull);
	EXPECT_EQ(xiw_atomic_apply(XIW_AOP_SWAP_DRAFT, 10, 99, ~0ull, 0, ~0ull,
				   1, &r), 0);
	EXPECT_EQ(r, 99ull);
	for (unsigned op = 3; op < 16; op++)
		EXPECT_EQ(xiw_atomic_apply(op, 1, 1, 0, 0, 0, 1, &r), -1);
	// FetchAdd with "Add Data" 0 is the RFC 7306 §1 probe: no change.
	EXPECT_EQ(xiw_atomic_apply(XIW_AOP_FETCH_ADD, 77, 0, 0, 0, ~0ull, 0,
				   &r), 0);
	EXPECT_EQ(r, 77ull);
}
