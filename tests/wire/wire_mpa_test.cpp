// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// MPA: RFC 5044 §4 (FPDU, pad, CRC), §4.3/§5 (markers), §7.1 (Request/
// Reply frame), RFC 6581 §5 (enhanced private data).
#include <algorithm>
#include <cstddef>

#include <xiw/crc32c.h>
#include <xiw/wire.h>

#include "wire_test_util.h"

using namespace xiw_test;

// RFC 5044 §7.1: the keys are ASCII "MPA ID Req Frame"/"MPA ID Rep Frame",
// given in the figure as hex octets.
TEST(Mpa, KeysMatchFigureOctets)
{
	const Bytes req = {0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52,
			   0x65, 0x71, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65};
	const Bytes rep = {0x4d, 0x50, 0x41, 0x20, 0x49, 0x44, 0x20, 0x52,
			   0x65, 0x70, 0x20, 0x46, 0x72, 0x61, 0x6d, 0x65};
	static_assert(sizeof(XIW_MPA_KEY_REQ) - 1 == XIW_MPA_KEY_LEN);
	static_assert(sizeof(XIW_MPA_KEY_REP) - 1 == XIW_MPA_KEY_LEN);
	const char kreq[] = XIW_MPA_KEY_REQ, krep[] = XIW_MPA_KEY_REP;
	EXPECT_BYTES(Bytes(kreq, kreq + XIW_MPA_KEY_LEN), req);
	EXPECT_BYTES(Bytes(krep, krep + XIW_MPA_KEY_LEN), rep);
}

// RFC 5044 §7.1 figure: Key(16) |M|C|R|Res(5)|Rev(8)|PD_Length(16)|
TEST(Mpa, RequestFrameLayout)
{
	EXPECT_EQ(sizeof(xiw_mpa_rr), 20u);
	EXPECT_EQ(offsetof(xiw_mpa_rr, key), 0u);
	EXPECT_EQ(offsetof(xiw_mpa_rr, flags), 16u);
	EXPECT_EQ(offsetof(xiw_mpa_rr, rev), 17u);
	EXPECT_EQ(offsetof(xiw_mpa_rr, pd_len), 18u);
	// M is bit 0 (MSB) of octet 16, C bit 1, R bit 2, Res bits 3-7.
	EXPECT_EQ(XIW_MPA_FLAG_M, 0x80);
	EXPECT_EQ(XIW_MPA_FLAG_C, 0x40);
	EXPECT_EQ(XIW_MPA_FLAG_R, 0x20);
	EXPECT_EQ(XIW_MPA_FLAG_RES_MASK, 0x1f);
	EXPECT_EQ(XIW_MPA_MAX_PD, 512);
	EXPECT_EQ(XIW_MPA_REV_V1, 1);
	EXPECT_EQ(XIW_MPA_REV_V2, 2);
}

// The xiw extension bit is one of the five Res bits (which a stock peer
// sends as zero) and none of M/C/R.
TEST(Mpa, ExtensionBitIsReserved)
{
	EXPECT_EQ(XIW_MPA_FLAG_EXT, 0x04);
	EXPECT_EQ(XIW_MPA_FLAG_EXT & XIW_MPA_FLAG_RES_MASK, XIW_MPA_FLAG_EXT);
	EXPECT_EQ(XIW_MPA_FLAG_EXT &
		      (XIW_MPA_FLAG_M | XIW_MPA_FLAG_C | XIW_MPA_FLAG_R),
		  0);
	// exactly one bit
	EXPECT_EQ(XIW_MPA_FLAG_EXT & (XIW_MPA_FLAG_EXT - 1), 0);
}

// The Res bits in use: the RFC 6581 "enhanced" marker of the IRD/ORD
// word, and xiw's extension bit with the responder's own answer to it
// (a stock responder echoes the Request's Res bits).  All distinct.
TEST(Mpa, ResBitsInUse)
{
	EXPECT_EQ(XIW_MPA_FLAG_ENHANCED, 0x10);
	EXPECT_EQ(XIW_MPA_FLAG_EXT_ACK, 0x02);
	const int res[] = {XIW_MPA_FLAG_ENHANCED, XIW_MPA_FLAG_EXT,
			   XIW_MPA_FLAG_EXT_ACK};
	int seen = 0;
	for (int bit : res) {
		EXPECT_EQ(bit & XIW_MPA_FLAG_RES_MASK, bit);
		EXPECT_EQ(seen & bit, 0);
		seen |= bit;
	}
}

// A Rev 2 Reply: CRC + xiw extension bit, PD_Length 4, followed by the
// RFC 6581 §5 IRD/ORD word: A=1 (P2P), B=1 (zero-length Send RTR),
// IRD=16; C=0, D=1 (zero-length Read RTR), ORD=0x3fff.
TEST(Mpa, ReplyFrameWithV2PrivateDataBytes)
{
	struct {
		xiw_mpa_rr hdr;
		xiw_mpa_v2_ird_ord v2;
	} f;
	static_assert(sizeof(f) == 24);
	std::memcpy(f.hdr.key, XIW_MPA_KEY_REP, XIW_MPA_KEY_LEN);
	f.hdr.flags = XIW_MPA_FLAG_C | XIW_MPA_FLAG_EXT;
	f.hdr.rev = XIW_MPA_REV_V2;
	f.hdr.pd_len = xiw_cpu_to_be16(sizeof(xiw_mpa_v2_ird_ord));
	xiw_mpa_v2_set(&f.v2, XIW_MPA_V2_IRD_P2P | XIW_MPA_V2_IRD_RTR_SEND, 16,
		       XIW_MPA_V2_ORD_RTR_READ, 0x3fff);

	const char krep[] = XIW_MPA_KEY_REP;
	Bytes exp(krep, krep + XIW_MPA_KEY_LEN);
	Bytes tail = {0x44, 0x02, 0x00, 0x04, 0xc0, 0x10, 0x7f, 0xff};
	exp.insert(exp.end(), tail.begin(), tail.end());
	EXPECT_BYTES(bytes_of(f), exp);

	EXPECT_EQ(xiw_mpa_v2_ird(&f.v2), 16);
	EXPECT_EQ(xiw_mpa_v2_ord(&f.v2), 0x3fff);
	EXPECT_EQ(xiw_mpa_v2_ird_flags(&f.v2),
		  XIW_MPA_V2_IRD_P2P | XIW_MPA_V2_IRD_RTR_SEND);
	EXPECT_EQ(xiw_mpa_v2_ord_flags(&f.v2), XIW_MPA_V2_ORD_RTR_READ);
}

// RFC 6581 §5: A/B are the two top bits of the IRD half-word, C/D of the
// ORD half-word, IRD/ORD are 14 bits.
TEST(Mpa, V2FlagPositions)
{
	xiw_mpa_v2_ird_ord v;
	xiw_mpa_v2_set(&v, 0, 0, XIW_MPA_V2_ORD_RTR_WRITE, 1);
	EXPECT_BYTES(bytes_of(v), (Bytes{0x00, 0x00, 0x80, 0x01}));
	xiw_mpa_v2_set(&v, XIW_MPA_V2_IRD_P2P, 0x7fff /* clipped */, 0, 0);
	EXPECT_BYTES(bytes_of(v), (Bytes{0xbf, 0xff, 0x00, 0x00}));
	EXPECT_EQ(XIW_MPA_V2_IRD_ORD_MASK, 0x3fff);
}

// RFC 5044 §4: pad so that ULPDU_Length field + ULPDU + pad is a
// multiple of 4.
TEST(Mpa, PadAndFpduLength)
{
	EXPECT_EQ(xiw_mpa_pad_len(0), 2u);  // 2 + 0 -> 4
	EXPECT_EQ(xiw_mpa_pad_len(1), 1u);  // 2 + 1 -> 4
	EXPECT_EQ(xiw_mpa_pad_len(2), 0u);  // 2 + 2 = 4
	EXPECT_EQ(xiw_mpa_pad_len(3), 3u);  // 2 + 3 -> 8
	EXPECT_EQ(xiw_mpa_pad_len(14), 0u); // bare tagged header
	EXPECT_EQ(xiw_mpa_pad_len(18), 0u); // bare untagged header
	EXPECT_EQ(xiw_mpa_pad_len(23), 3u);
	for (unsigned n = 0; n < 4096; n++) {
		unsigned p = xiw_mpa_pad_len(n);
		EXPECT_LT(p, 4u);
		EXPECT_EQ((2 + n + p) % 4, 0u) << n;
		EXPECT_EQ(xiw_mpa_fpdu_len(n), 2 + n + p + 4) << n;
	}
	EXPECT_EQ(XIW_MPA_HDR_LEN, 2);
	EXPECT_EQ(XIW_MPA_CRC_LEN, 4);
}

// RFC 5044 §4.3: marker = 16 bits reserved, then 16-bit FPDUPTR.
TEST(Mpa, MarkerLayout)
{
	xiw_mpa_marker m;
	m.rsvd = xiw_cpu_to_be16(0);
	m.fpdu_ptr = xiw_cpu_to_be16(0x0123);
	EXPECT_BYTES(bytes_of(m), (Bytes{0x00, 0x00, 0x01, 0x23}));
	EXPECT_EQ(offsetof(xiw_mpa_marker, fpdu_ptr), 2u);
	EXPECT_EQ(XIW_MPA_MARKER_LEN, 4);
	EXPECT_EQ(XIW_MPA_MARKER_INTERVAL, 512);
}

// Markers start at every multiple of 512 of the stream, 0 included.
TEST(Mpa, MarkerGap)
{
	EXPECT_EQ(xiw_mpa_marker_gap(0), 0u);
	EXPECT_EQ(xiw_mpa_marker_gap(4), 508u);
	EXPECT_EQ(xiw_mpa_marker_gap(511), 1u);
	EXPECT_EQ(xiw_mpa_marker_gap(512), 0u);
	EXPECT_EQ(xiw_mpa_marker_gap(1000), 24u);
	// Positions count modulo 2^32, as TCP sequence numbers do.
	EXPECT_EQ(xiw_mpa_marker_gap(0xfffffffcu), 4u);
}

// FPDUPTR: from the FPDU's ULPDU_Length back to the marker; 0 for the
// marker preceding an FPDU (the first one of a stream is such).
TEST(Mpa, MarkerPointer)
{
	xiw_mpa_marker m;
	xiw_mpa_marker_set(&m, 1024, 1024 - 0x1a8);
	EXPECT_BYTES(bytes_of(m), (Bytes{0x00, 0x00, 0x01, 0xa8}));
	xiw_mpa_marker_set(&m, 512, 512);
	EXPECT_BYTES(bytes_of(m), (Bytes{0x00, 0x00, 0x00, 0x00}));
}

// The bound on an FPDU's markers holds wherever the FPDU begins, and is
// reached: count them by walking the stream.
TEST(Mpa, FpduMarkersMaxIsTight)
{
	for (unsigned len = 8; len <= 20000; len += 4) {
		unsigned most = 0;
		for (unsigned start = 0; start < XIW_MPA_MARKER_INTERVAL;
		     start += XIW_MPA_ALIGN) {
			unsigned pos = start, left = len, markers = 0;
			while (left) {
				if (!xiw_mpa_marker_gap(pos)) {
					markers++;
					pos += XIW_MPA_MARKER_LEN;
					continue;
				}
				const unsigned n = std::min(left, xiw_mpa_marker_gap(pos));
				pos += n;
				left -= n;
			}
			most = std::max(most, markers);
		}
		ASSERT_GE(xiw_mpa_fpdu_markers_max(len), most) << len;
		ASSERT_LE(xiw_mpa_fpdu_markers_max(len), most + 1) << len;
	}
}

// CRC trailer: RFC 3720 B.4 shows the CRC of 32 zero octets transmitted
// as aa 36 91 8a (value 0x8a9136aa).
TEST(Mpa, CrcTrailerOctetOrder)
{
	xiw_mpa_trailer t;
	xiw_mpa_put_crc(&t, 0x8a9136aau);
	EXPECT_BYTES(bytes_of(t), (Bytes{0xaa, 0x36, 0x91, 0x8a}));
	EXPECT_EQ(xiw_mpa_get_crc(&t), 0x8a9136aau);
}

// A complete Send FPDU (RFC 5040 §4.2 + RFC 5041 §4 + RFC 5044 §4):
// ULPDU = 18-octet untagged DDP header + "hello" (5) = 23, pad 3, CRC.
TEST(Mpa, SendFpduEndToEnd)
{
	const char payload[] = "hello";
	const unsigned plen = 5;
	const unsigned ulpdu = XIW_DDP_UNTAGGED_HLEN + plen;
	Bytes fpdu(xiw_mpa_fpdu_len(ulpdu), 0xee);
	ASSERT_EQ(fpdu.size(), 2u + 23u + 3u + 4u);

	xiw_ddp_untagged_hdr h;
	xiw_ctrl_set(&h.ctrl, static_cast<__u16>(ulpdu), 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_SEND);
	xiw_untagged_set(&h, 0, XIW_QN_SEND, 1, 0);
	std::memcpy(fpdu.data(), &h, sizeof(h));
	std::memcpy(fpdu.data() + sizeof(h), payload, plen);
	const std::size_t pad_at = sizeof(h) + plen;
	std::memset(fpdu.data() + pad_at, 0, xiw_mpa_pad_len(ulpdu));
	const std::size_t crc_at = pad_at + xiw_mpa_pad_len(ulpdu);
	xiw_mpa_trailer t;
	xiw_mpa_put_crc(&t, xiw_crc32c(fpdu.data(), crc_at));
	std::memcpy(fpdu.data() + crc_at, &t, sizeof(t));

	Bytes exp = {0x00, 0x17, 0x41, 0x43, // len 23, L|DV=1, RV=1 Send
		     0x00, 0x00, 0x00, 0x00, // Invalidate STag
		     0x00, 0x00, 0x00, 0x00, // QN 0
		     0x00, 0x00, 0x00, 0x01, // MSN 1
		     0x00, 0x00, 0x00, 0x00, // MO 0
		     'h', 'e', 'l', 'l', 'o', 0, 0, 0};
	EXPECT_BYTES(Bytes(fpdu.begin(), fpdu.begin() + crc_at), exp);

	// Receiver check: CRC32c over the FPDU including its little-endian
	// CRC leaves the CRC-32C residue 0x48674bc7 (~0xb798b438).
	EXPECT_EQ(xiw_crc32c(fpdu.data(), fpdu.size()), 0x48674bc7u);
}
