// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// CRC32c (RFC 5044 §4 -> iSCSI CRC, RFC 3720 §12.1 and B.4 vectors).
#include <cstdint>
#include <random>

#include <xiw/crc32c.h>

#include "wire_test_util.h"

using xiw_test::Bytes;

namespace {

// Bit-at-a-time reference (reflected polynomial 0x82f63b78).
std::uint32_t crc_bitwise(const Bytes &b)
{
	std::uint32_t c = 0xffffffffu;
	for (std::uint8_t x : b) {
		c ^= x;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? 0x82f63b78u : 0u);
	}
	return ~c;
}

} // namespace

TEST(Crc32c, Rfc3720Zeros)
{
	Bytes b(32, 0x00);
	EXPECT_EQ(xiw_crc32c(b.data(), b.size()), 0x8a9136aau);
}

TEST(Crc32c, Rfc3720Ones)
{
	Bytes b(32, 0xff);
	EXPECT_EQ(xiw_crc32c(b.data(), b.size()), 0x62a8ab43u);
}

TEST(Crc32c, Rfc3720Incrementing)
{
	Bytes b;
	for (int i = 0; i < 32; i++)
		b.push_back(static_cast<std::uint8_t>(i));
	EXPECT_EQ(xiw_crc32c(b.data(), b.size()), 0x46dd794eu);
}

TEST(Crc32c, Rfc3720Decrementing)
{
	Bytes b;
	for (int i = 31; i >= 0; i--)
		b.push_back(static_cast<std::uint8_t>(i));
	EXPECT_EQ(xiw_crc32c(b.data(), b.size()), 0x113fdb5cu);
}

// RFC 3720 B.4: the 48-octet iSCSI SCSI Read (10) command PDU; CRC
// value 0xd9963a56.
TEST(Crc32c, Rfc3720ReadPdu)
{
	const Bytes b = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
		0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
		0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	EXPECT_EQ(xiw_crc32c(b.data(), b.size()), 0xd9963a56u);
}

TEST(Crc32c, CheckString)
{
	const char s[] = "123456789";
	EXPECT_EQ(xiw_crc32c(s, 9), 0xe3069283u);
	EXPECT_EQ(xiw_crc32c(s, 0), 0u);
}

TEST(Crc32c, StreamingEqualsOneShotAndBitwise)
{
	std::mt19937 rng(5044);
	for (int iter = 0; iter < 200; iter++) {
		Bytes b(rng() % 700);
		for (auto &x : b)
			x = static_cast<std::uint8_t>(rng());
		std::size_t cut = b.empty() ? 0 : rng() % b.size();
		std::uint32_t c = ~0u;
		c = xiw_crc32c_update(c, b.data(), cut);
		c = xiw_crc32c_update(c, b.data() + cut, b.size() - cut);
		EXPECT_EQ(~c, xiw_crc32c(b.data(), b.size()));
		EXPECT_EQ(crc_bitwise(b), xiw_crc32c(b.data(), b.size()));
	}
}
