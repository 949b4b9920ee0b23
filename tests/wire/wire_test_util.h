// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Helpers shared by the unit.wire tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace xiw_test {

using Bytes = std::vector<std::uint8_t>;

template <typename T> Bytes bytes_of(const T &obj)
{
	Bytes b(sizeof(T));
	std::memcpy(b.data(), &obj, sizeof(T));
	return b;
}

// Big-endian octets of v, n octets wide.
inline void be(Bytes &out, std::uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		out.push_back(static_cast<std::uint8_t>(v >> (8 * (n - 1 - i))));
}

inline std::string hex(const Bytes &b)
{
	static const char d[] = "0123456789abcdef";
	std::string s;
	for (std::size_t i = 0; i < b.size(); i++) {
		if (i && i % 4 == 0)
			s += (i % 16 == 0) ? '\n' : ' ';
		s += d[b[i] >> 4];
		s += d[b[i] & 15];
	}
	return s;
}

} // namespace xiw_test

// Compare two byte vectors and print both as hex words on mismatch.
#define EXPECT_BYTES(actual, expected)                                        \
	EXPECT_EQ(xiw_test::hex(actual), xiw_test::hex(expected))
