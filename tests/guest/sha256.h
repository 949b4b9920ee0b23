// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// SHA-256 after FIPS 180-4 §6.2, small and slow, for checking the hashes
// that RDMA Verify returns (tests/guest/commit_test.cpp).  Not for
// anything where speed or side channels matter.
#ifndef XIW_TESTS_SHA256_H
#define XIW_TESTS_SHA256_H

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace xiw_test {

class sha256 {
public:
	static constexpr std::size_t digest_size = 32;
	using digest = std::array<std::uint8_t, digest_size>;

	sha256() { reset(); }

	void reset()
	{
		// FIPS 180-4 §5.3.3: the first 32 bits of the fractional parts of
		// the square roots of the first eight primes.
		static constexpr std::uint32_t h0[8] = {
			0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
			0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u,
		};
		std::memcpy(h_, h0, sizeof(h_));
		bits_ = 0;
		used_ = 0;
	}

	void update(const void *data, std::size_t len)
	{
		const auto *p = static_cast<const std::uint8_t *>(data);
		bits_ += static_cast<std::uint64_t>(len) * 8;
		while (len) {
			const std::size_t n = std::min(len, sizeof(block_) - used_);
			std::memcpy(block_ + used_, p, n);
			used_ += n;
			p += n;
			len -= n;
			if (used_ == sizeof(block_)) {
				compress(block_);
				used_ = 0;
			}
		}
	}

	// §5.1.1: a 1 bit, zeros up to 56 mod 64 octets, the bit length as a
	// 64-bit big-endian number; then H0..H7 big-endian.
	digest finish()
	{
		const std::uint64_t bits = bits_;
		const std::uint8_t one = 0x80, zero = 0;
		update(&one, 1);
		while (used_ != 56)
			update(&zero, 1);
		std::uint8_t len_be[8];
		for (int i = 0; i < 8; i++)
			len_be[i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
		update(len_be, sizeof(len_be));
		digest d{};
		for (int i = 0; i < 8; i++)
			for (int j = 0; j < 4; j++)
				d[4 * i + j] = static_cast<std::uint8_t>(h_[i] >> (24 - 8 * j));
		reset();
		return d;
	}

	static digest of(const void *data, std::size_t len)
	{
		sha256 s;
		s.update(data, len);
		return s.finish();
	}

private:
	static std::uint32_t rotr(std::uint32_t x, int n) { return x >> n | x << (32 - n); }

	// §6.2.2 for one 512-bit block.
	void compress(const std::uint8_t *b)
	{
		// §4.2.2: the first 32 bits of the fractional parts of the cube
		// roots of the first 64 primes.
		static constexpr std::uint32_t k[64] = {
			0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u,
			0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
			0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u,
			0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
			0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu,
			0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
			0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
			0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
			0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u,
			0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
			0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u,
			0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
			0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u,
			0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
			0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
			0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
		};
		std::uint32_t w[64];
		for (int t = 0; t < 16; t++)
			w[t] = static_cast<std::uint32_t>(b[4 * t]) << 24 |
			       static_cast<std::uint32_t>(b[4 * t + 1]) << 16 |
			       static_cast<std::uint32_t>(b[4 * t + 2]) << 8 | b[4 * t + 3];
		for (int t = 16; t < 64; t++) {
			const std::uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ w[t - 15] >> 3;
			const std::uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ w[t - 2] >> 10;
			w[t] = s1 + w[t - 7] + s0 + w[t - 16];
		}
		std::uint32_t a = h_[0], bb = h_[1], c = h_[2], d = h_[3];
		std::uint32_t e = h_[4], f = h_[5], g = h_[6], h = h_[7];
		for (int t = 0; t < 64; t++) {
			const std::uint32_t big1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
			const std::uint32_t ch = (e & f) ^ (~e & g);
			const std::uint32_t t1 = h + big1 + ch + k[t] + w[t];
			const std::uint32_t big0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
			const std::uint32_t maj = (a & bb) ^ (a & c) ^ (bb & c);
			const std::uint32_t t2 = big0 + maj;
			h = g;
			g = f;
			f = e;
			e = d + t1;
			d = c;
			c = bb;
			bb = a;
			a = t1 + t2;
		}
		h_[0] += a;
		h_[1] += bb;
		h_[2] += c;
		h_[3] += d;
		h_[4] += e;
		h_[5] += f;
		h_[6] += g;
		h_[7] += h;
	}

	std::uint32_t h_[8];
	std::uint64_t bits_;
	std::uint8_t block_[64];
	std::size_t used_;
};

} // namespace xiw_test

#endif
