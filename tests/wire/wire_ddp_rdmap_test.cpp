// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// DDP (RFC 5041 §4), RDMAP (RFC 5040 §4), RFC 7306 §4-§6, draft-talpey-
// rdma-commit-02 §2, draft-wood-storm-rdmap-ext-v2-00 §4, §6: every
// header built through the accessors and compared octet by octet with
// the bit positions of the figures.  All expected arrays below are
// FPDU-relative: 2 octets of MPA ULPDU_Length first.
#include <cstddef>

#include <xiw/wire.h>

#include "wire_test_util.h"

using namespace xiw_test;

namespace {

// Expected first 20 octets of an untagged segment.
Bytes untagged_prefix(std::uint16_t len, std::uint8_t ddp, std::uint8_t rdmap,
		      std::uint32_t inval, std::uint32_t qn, std::uint32_t msn,
		      std::uint32_t mo)
{
	Bytes b;
	be(b, len, 2);
	b.push_back(ddp);
	b.push_back(rdmap);
	be(b, inval, 4);
	be(b, qn, 4);
	be(b, msn, 4);
	be(b, mo, 4);
	return b;
}

} // namespace

// RFC 5041 §4.2: |T|L|Resrv(4)|DV(2)|, DV = 01b.
TEST(Ddp, ControlField)
{
	EXPECT_EQ(xiw_ddp_ctrl(1, 1), 0xc1);
	EXPECT_EQ(xiw_ddp_ctrl(1, 0), 0x81);
	EXPECT_EQ(xiw_ddp_ctrl(0, 1), 0x41);
	EXPECT_EQ(xiw_ddp_ctrl(0, 0), 0x01);
	EXPECT_EQ(XIW_DDP_RSVD_MASK, 0x3c);
	EXPECT_EQ(XIW_DDP_DV_MASK, 0x03);
	EXPECT_TRUE(xiw_ddp_tagged(0xc1));
	EXPECT_TRUE(xiw_ddp_last(0x41));
	EXPECT_FALSE(xiw_ddp_tagged(0x41));
	EXPECT_FALSE(xiw_ddp_last(0x81));
	EXPECT_EQ(xiw_ddp_version(0xc1), 1u);
	EXPECT_EQ(xiw_ddp_version(0xc2), 2u);
}

// RFC 5040 §4.2 / RFC 7306 Figure 1: |RV(2)|Rsv(2)|Opcode(4)|, RV = 01b.
// draft-talpey §3 Figure 1 / draft-wood §4.1 Figure 1: |RV|R|Opcode(5)|.
TEST(Rdmap, ControlField)
{
	// RFC 5040 opcodes with RV=1: 0x40 | opcode.
	EXPECT_EQ(xiw_rdmap_ctrl(1, XIW_OP_WRITE), 0x40);
	EXPECT_EQ(xiw_rdmap_ctrl(1, XIW_OP_SEND), 0x43);
	EXPECT_EQ(xiw_rdmap_ctrl(1, XIW_OP_TERMINATE), 0x47);
	EXPECT_EQ(xiw_rdmap_ctrl(1, XIW_OP_ATOMIC_REQ), 0x4a);
	// talpey: 5-bit opcodes under RV=1; the former low Rsv bit is 0x10.
	EXPECT_EQ(xiw_rdmap_ctrl(1, XIW_OP_ATOMIC_WRITE_REQ), 0x50);
	EXPECT_EQ(xiw_rdmap_ctrl(1, XIW_OP_ATOMIC_WRITE_RESP), 0x51);
	// wood: RV=2.
	EXPECT_EQ(xiw_rdmap_ctrl(2, XIW_OP_SEND), 0x83);
	EXPECT_EQ(xiw_rdmap_ctrl(2, XIW_OP2_READ_REQ_V2), 0x91);
	EXPECT_EQ(xiw_rdmap_ctrl(2, XIW_OP2_SEND_IMM), 0x93);
	EXPECT_EQ(xiw_rdmap_ctrl(2, XIW_OP2_SEND_SE_INV_IMM), 0x96);
	// decode
	EXPECT_EQ(xiw_rdmap_rv(0x51), 1u);
	EXPECT_EQ(xiw_rdmap_opcode(0x51), 0x11u);
	EXPECT_EQ(xiw_rdmap_rv(0x91), 2u);
	EXPECT_EQ(xiw_rdmap_opcode(0x91), 0x11u);
	EXPECT_EQ(xiw_rdmap_opcode(0x63), 0x03u); // Rsv bit ignored
	EXPECT_EQ(XIW_RDMAP_RSV_MASK, 0x20);
	EXPECT_EQ(XIW_RDMAP_RSV4_MASK, 0x30);
	EXPECT_EQ(XIW_RDMAP_OPCODE4_MASK, 0x0f);
	// RFC 5040 opcodes (< 0x10) encode identically in both views.
	for (unsigned op = 0; op < 0x10; op++)
		EXPECT_EQ(xiw_rdmap_ctrl(1, op) & XIW_RDMAP_RSV4_MASK, 0);
}

// RFC 5040 §4.2 and RFC 7306 §10, talpey §8, wood §10 numbering.
TEST(Rdmap, OpcodeValues)
{
	EXPECT_EQ(XIW_OP_WRITE, 0x0);
	EXPECT_EQ(XIW_OP_READ_REQ, 0x1);
	EXPECT_EQ(XIW_OP_READ_RESP, 0x2);
	EXPECT_EQ(XIW_OP_SEND, 0x3);
	EXPECT_EQ(XIW_OP_SEND_INV, 0x4);
	EXPECT_EQ(XIW_OP_SEND_SE, 0x5);
	EXPECT_EQ(XIW_OP_SEND_SE_INV, 0x6);
	EXPECT_EQ(XIW_OP_TERMINATE, 0x7);
	EXPECT_EQ(XIW_OP_IMM, 0x8);
	EXPECT_EQ(XIW_OP_IMM_SE, 0x9);
	EXPECT_EQ(XIW_OP_ATOMIC_REQ, 0xa);
	EXPECT_EQ(XIW_OP_ATOMIC_RESP, 0xb);
	EXPECT_EQ(XIW_OP_FLUSH_REQ, 0xc);
	EXPECT_EQ(XIW_OP_FLUSH_RESP, 0xd);
	EXPECT_EQ(XIW_OP_VERIFY_REQ, 0xe);
	EXPECT_EQ(XIW_OP_VERIFY_RESP, 0xf);
	EXPECT_EQ(XIW_OP_ATOMIC_WRITE_REQ, 0x10);
	EXPECT_EQ(XIW_OP_ATOMIC_WRITE_RESP, 0x11);
	EXPECT_EQ(XIW_OP2_READ_REQ_V2, 0x11);
	EXPECT_EQ(XIW_OP2_READ_RESP_V2, 0x12);
	EXPECT_EQ(XIW_OP2_SEND_IMM, 0x13);
	EXPECT_EQ(XIW_OP2_SEND_INV_IMM, 0x14);
	EXPECT_EQ(XIW_OP2_SEND_SE_IMM, 0x15);
	EXPECT_EQ(XIW_OP2_SEND_SE_INV_IMM, 0x16);
	EXPECT_EQ(XIW_QN_SEND, 0);
	EXPECT_EQ(XIW_QN_READ_REQ, 1);
	EXPECT_EQ(XIW_QN_TERMINATE, 2);
	EXPECT_EQ(XIW_QN_RESPONSE, 3);
}

// RFC 5041 §4.3 tagged header: ctrl, RsvdULP(8), STag(32), TO(64).
TEST(Ddp, TaggedHeaderLayoutAndBytes)
{
	EXPECT_EQ(sizeof(xiw_ddp_tagged_hdr), 16u);
	EXPECT_EQ(offsetof(xiw_ddp_tagged_hdr, ctrl.mpa_len), 0u);
	EXPECT_EQ(offsetof(xiw_ddp_tagged_hdr, ctrl.ddp_ctrl), 2u);
	EXPECT_EQ(offsetof(xiw_ddp_tagged_hdr, ctrl.rdmap_ctrl), 3u);
	EXPECT_EQ(offsetof(xiw_ddp_tagged_hdr, stag), 4u);
	EXPECT_EQ(offsetof(xiw_ddp_tagged_hdr, to), 8u);
	EXPECT_EQ(sizeof(xiw_ddp_tagged_hdr) - XIW_DDP_HDR_OFFSET,
		  static_cast<std::size_t>(XIW_DDP_TAGGED_HLEN));

	// RDMA Write, last segment, 100 octets of payload.
	xiw_ddp_tagged_hdr h;
	xiw_ctrl_set(&h.ctrl, XIW_DDP_TAGGED_HLEN + 100, 1, 1, XIW_RDMAP_RV1,
		     XIW_OP_WRITE);
	xiw_tagged_set(&h, 0x11223344u, 0x0102030405060708ull);
	EXPECT_BYTES(bytes_of(h),
		     (Bytes{0x00, 0x72, 0xc1, 0x40, 0x11, 0x22, 0x33, 0x44,
			    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}));
	EXPECT_EQ(xiw_get_be64(&h.to), 0x0102030405060708ull);
	EXPECT_EQ(xiw_be32_to_cpu(h.stag), 0x11223344u);

	// RDMA Read Response, not last.
	xiw_ctrl_set(&h.ctrl, 14, 1, 0, XIW_RDMAP_RV1, XIW_OP_READ_RESP);
	const Bytes got = bytes_of(h);
	EXPECT_BYTES(Bytes(got.begin(), got.begin() + 4),
		     (Bytes{0x00, 0x0e, 0x81, 0x42}));
}

// RFC 5041 §4.4 untagged header: ctrl, RsvdULP(40) = RDMAP ctrl +
// Invalidate STag (RFC 5040 §4.2), QN, MSN, MO.
TEST(Ddp, UntaggedHeaderLayoutAndBytes)
{
	EXPECT_EQ(sizeof(xiw_ddp_untagged_hdr), 20u);
	EXPECT_EQ(offsetof(xiw_ddp_untagged_hdr, inval_stag), 4u);
	EXPECT_EQ(offsetof(xiw_ddp_untagged_hdr, qn), 8u);
	EXPECT_EQ(offsetof(xiw_ddp_untagged_hdr, msn), 12u);
	EXPECT_EQ(offsetof(xiw_ddp_untagged_hdr, mo), 16u);
	EXPECT_EQ(sizeof(xiw_ddp_untagged_hdr) - XIW_DDP_HDR_OFFSET,
		  static_cast<std::size_t>(XIW_DDP_UNTAGGED_HLEN));

	// Send with Solicited Event and Invalidate, first of two segments.
	xiw_ddp_untagged_hdr h;
	xiw_ctrl_set(&h.ctrl, 1000, 0, 0, XIW_RDMAP_RV1, XIW_OP_SEND_SE_INV);
	xiw_untagged_set(&h, 0xcafef00du, XIW_QN_SEND, 0x01020304u,
			 0x00000200u);
	EXPECT_BYTES(bytes_of(h), untagged_prefix(1000, 0x01, 0x46, 0xcafef00d,
						  0, 0x01020304, 0x200));
}

// RFC 5040 §4.4 Read Request header (after the untagged header, QN 1).
TEST(Rdmap, ReadRequestBytes)
{
	EXPECT_EQ(sizeof(xiw_rdmap_read_req), 28u);
	EXPECT_EQ(offsetof(xiw_rdmap_read_req, sink_stag), 0u);
	EXPECT_EQ(offsetof(xiw_rdmap_read_req, sink_to), 4u);
	EXPECT_EQ(offsetof(xiw_rdmap_read_req, read_size), 12u);
	EXPECT_EQ(offsetof(xiw_rdmap_read_req, src_stag), 16u);
	EXPECT_EQ(offsetof(xiw_rdmap_read_req, src_to), 20u);
	EXPECT_EQ(sizeof(xiw_hdr_read_req), 48u);

	xiw_hdr_read_req h;
	xiw_ctrl_set(&h.ddp.ctrl, 18 + 28, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_READ_REQ);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, 7, 0);
	h.rreq.sink_stag = xiw_cpu_to_be32(0xa0a1a2a3u);
	xiw_put_be64(&h.rreq.sink_to, 0xb0b1b2b3b4b5b6b7ull);
	h.rreq.read_size = xiw_cpu_to_be32(0x00010000u);
	h.rreq.src_stag = xiw_cpu_to_be32(0xc0c1c2c3u);
	xiw_put_be64(&h.rreq.src_to, 0xd0d1d2d3d4d5d6d7ull);

	Bytes exp = untagged_prefix(46, 0x41, 0x41, 0, 1, 7, 0);
	be(exp, 0xa0a1a2a3u, 4);
	be(exp, 0xb0b1b2b3b4b5b6b7ull, 8);
	be(exp, 0x00010000u, 4);
	be(exp, 0xc0c1c2c3u, 4);
	be(exp, 0xd0d1d2d3d4d5d6d7ull, 8);
	EXPECT_BYTES(bytes_of(h), exp);
}

// RFC 5040 §4.8 Terminate: |Layer(4)|EType(4)|ECode(8)|M|D|R|Rsvd(13)|,
// then DDP Segment Length(16), Terminated DDP Header, Terminated RDMA Hdr.
TEST(Rdmap, TerminateBytes)
{
	EXPECT_EQ(sizeof(xiw_rdmap_terminate), 52u);
	EXPECT_EQ(offsetof(xiw_rdmap_terminate, ddp_seg_len), 4u);
	EXPECT_EQ(offsetof(xiw_rdmap_terminate, ddp_hdr), 6u);
	EXPECT_EQ(offsetof(xiw_rdmap_terminate, rdma_hdr), 24u);
	EXPECT_EQ(sizeof(xiw_hdr_terminate), 72u);

	// DDP layer (1), untagged buffer error (2), invalid QN (1), M|D.
	__be32 c = xiw_term_ctrl(XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_UNTAGGED,
				 XIW_DDP_ECODE_UT_INVALID_QN,
				 XIW_TERM_FLAG_M | XIW_TERM_FLAG_D);
	EXPECT_BYTES(bytes_of(c), (Bytes{0x12, 0x01, 0xc0, 0x00}));
	EXPECT_EQ(xiw_term_layer(c), 1u);
	EXPECT_EQ(xiw_term_etype(c), 2u);
	EXPECT_EQ(xiw_term_ecode(c), 1u);
	EXPECT_EQ(xiw_term_flags(c), 0xc000u);

	// RDMAP layer (0), remote protection (1), access rights (2), R only.
	c = xiw_term_ctrl(XIW_TERM_LAYER_RDMAP,
			  XIW_RDMAP_ETYPE_REMOTE_PROTECTION,
			  XIW_RDMAP_ECODE_ACCESS_RIGHTS, XIW_TERM_FLAG_R);
	EXPECT_BYTES(bytes_of(c), (Bytes{0x01, 0x02, 0x20, 0x00}));

	// LLP layer (2), MPA (0), CRC error (2), no flags.
	c = xiw_term_ctrl(XIW_TERM_LAYER_LLP, XIW_LLP_ETYPE_MPA,
			  XIW_LLP_ECODE_CRC, 0);
	EXPECT_BYTES(bytes_of(c), (Bytes{0x20, 0x02, 0x00, 0x00}));

	// Unspecified (0xff) and reserved bits are not leaked.
	c = xiw_term_ctrl(0x10 | XIW_TERM_LAYER_RDMAP,
			  XIW_RDMAP_ETYPE_REMOTE_OPERATION,
			  XIW_RDMAP_ECODE_UNSPECIFIED, 0xffff);
	EXPECT_BYTES(bytes_of(c), (Bytes{0x02, 0xff, 0xe0, 0x00}));

	// A whole Terminate message copying a terminated Send's header:
	// the copied length + DDP header sit where an xiw_ddp_untagged_hdr
	// would (offset 4 of the terminate header).
	xiw_hdr_terminate t;
	std::memset(&t, 0, sizeof(t));
	xiw_ctrl_set(&t.ddp.ctrl, 18 + 4 + 2 + 18, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_TERMINATE);
	xiw_untagged_set(&t.ddp, 0, XIW_QN_TERMINATE, 1, 0);
	t.term.ctrl = xiw_term_ctrl(XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_UNTAGGED,
				    XIW_DDP_ECODE_UT_INVALID_MSN_NOBUF,
				    XIW_TERM_FLAG_M | XIW_TERM_FLAG_D);
	xiw_ddp_untagged_hdr bad;
	xiw_ctrl_set(&bad.ctrl, 18 + 64, 0, 1, XIW_RDMAP_RV1, XIW_OP_SEND);
	xiw_untagged_set(&bad, 0, XIW_QN_SEND, 9, 0);
	std::memcpy(&t.term.ddp_seg_len, &bad, sizeof(bad));

	Bytes exp = untagged_prefix(42, 0x41, 0x47, 0, 2, 1, 0);
	Bytes rest = {0x12, 0x02, 0xc0, 0x00,             // ctrl
		      0x00, 0x52,                         // seg len 82
		      0x41, 0x43, 0, 0, 0, 0,             // ctrl, inval
		      0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0}; // QN MSN MO
	exp.insert(exp.end(), rest.begin(), rest.end());
	exp.resize(72, 0);
	EXPECT_BYTES(bytes_of(t), exp);
}

// RFC 5040 §4.8 / RFC 5041 §7 / RFC 5044 §8 / RFC 6581 code values.
TEST(Rdmap, TerminateCodeValues)
{
	EXPECT_EQ(XIW_TERM_LAYER_RDMAP, 0);
	EXPECT_EQ(XIW_TERM_LAYER_DDP, 1);
	EXPECT_EQ(XIW_TERM_LAYER_LLP, 2);
	EXPECT_EQ(XIW_RDMAP_ETYPE_LOCAL_CATASTROPHIC, 0);
	EXPECT_EQ(XIW_RDMAP_ETYPE_REMOTE_PROTECTION, 1);
	EXPECT_EQ(XIW_RDMAP_ETYPE_REMOTE_OPERATION, 2);
	EXPECT_EQ(XIW_RDMAP_ECODE_INVALID_STAG, 0x00);
	EXPECT_EQ(XIW_RDMAP_ECODE_BASE_BOUNDS, 0x01);
	EXPECT_EQ(XIW_RDMAP_ECODE_ACCESS_RIGHTS, 0x02);
	EXPECT_EQ(XIW_RDMAP_ECODE_STAG_NOT_ASSOC, 0x03);
	EXPECT_EQ(XIW_RDMAP_ECODE_TO_WRAP, 0x04);
	EXPECT_EQ(XIW_RDMAP_ECODE_INVALID_VERSION, 0x05);
	EXPECT_EQ(XIW_RDMAP_ECODE_UNEXPECTED_OPCODE, 0x06);
	EXPECT_EQ(XIW_RDMAP_ECODE_CATASTROPHIC_STREAM, 0x07);
	EXPECT_EQ(XIW_RDMAP_ECODE_CATASTROPHIC_GLOBAL, 0x08);
	EXPECT_EQ(XIW_RDMAP_ECODE_CANNOT_INVALIDATE, 0x09);
	EXPECT_EQ(XIW_RDMAP_ECODE_UNSPECIFIED, 0xff);
	EXPECT_EQ(XIW_DDP_ETYPE_TAGGED, 1);
	EXPECT_EQ(XIW_DDP_ETYPE_UNTAGGED, 2);
	EXPECT_EQ(XIW_DDP_ECODE_T_INVALID_STAG, 0x00);
	EXPECT_EQ(XIW_DDP_ECODE_T_BASE_BOUNDS, 0x01);
	EXPECT_EQ(XIW_DDP_ECODE_T_STAG_NOT_ASSOC, 0x02);
	EXPECT_EQ(XIW_DDP_ECODE_T_TO_WRAP, 0x03);
	EXPECT_EQ(XIW_DDP_ECODE_T_INVALID_VERSION, 0x04);
	EXPECT_EQ(XIW_DDP_ECODE_UT_INVALID_QN, 0x01);
	EXPECT_EQ(XIW_DDP_ECODE_UT_INVALID_MSN_NOBUF, 0x02);
	EXPECT_EQ(XIW_DDP_ECODE_UT_INVALID_MSN_RANGE, 0x03);
	EXPECT_EQ(XIW_DDP_ECODE_UT_INVALID_MO, 0x04);
	EXPECT_EQ(XIW_DDP_ECODE_UT_MSG_TOO_LONG, 0x05);
	EXPECT_EQ(XIW_DDP_ECODE_UT_INVALID_VERSION, 0x06);
	EXPECT_EQ(XIW_LLP_ECODE_TCP_LOST, 0x01);
	EXPECT_EQ(XIW_LLP_ECODE_CRC, 0x02);
	EXPECT_EQ(XIW_LLP_ECODE_MARKER, 0x03);
	EXPECT_EQ(XIW_LLP_ECODE_INVALID_REQ_REP, 0x04);
	EXPECT_EQ(XIW_LLP_ECODE_LOCAL_CATASTROPHIC, 0x05);
	EXPECT_EQ(XIW_LLP_ECODE_INSUFFICIENT_IRD, 0x06);
	EXPECT_EQ(XIW_LLP_ECODE_NO_MATCHING_RTR, 0x07);
	// RFC 7306 §8.2: misaligned atomic target.
	EXPECT_EQ(XIW_TERM_ATOMIC_MISALIGNED_ETYPE, 2);
	EXPECT_EQ(XIW_TERM_ATOMIC_MISALIGNED_ECODE, 0x07);
}

// RFC 7306 §6.2 Figure 7 / Appendix A.3: Immediate Data, QN 0.
TEST(Rfc7306, ImmediateDataBytes)
{
	EXPECT_EQ(sizeof(xiw_hdr_imm), 28u);
	EXPECT_EQ(offsetof(xiw_hdr_imm, imm), 20u);
	xiw_hdr_imm h;
	xiw_ctrl_set(&h.ddp.ctrl, 18 + 8, 0, 1, XIW_RDMAP_RV1, XIW_OP_IMM_SE);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_SEND, 3, 0);
	const std::uint8_t imm[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	std::memcpy(h.imm.data, imm, 8);
	Bytes exp = untagged_prefix(26, 0x41, 0x49, 0, 0, 3, 0);
	exp.insert(exp.end(), imm, imm + 8);
	EXPECT_BYTES(bytes_of(h), exp);
}

// RFC 7306 §5.2.1 Figure 4 / Appendix A.1: Atomic Request, QN 1, every
// field a distinct value.
TEST(Rfc7306, AtomicRequestBytes)
{
	EXPECT_EQ(sizeof(xiw_rdmap_atomic_req), 52u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, aopcode), 0u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, req_id), 4u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, stag), 8u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, to), 12u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, add_swap), 20u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, add_swap_mask), 28u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, compare), 36u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_req, compare_mask), 44u);
	EXPECT_EQ(sizeof(xiw_hdr_atomic_req), 72u);
	EXPECT_EQ(XIW_AOP_FETCH_ADD, 0x0);
	EXPECT_EQ(XIW_AOP_SWAP_DRAFT, 0x1);
	EXPECT_EQ(XIW_AOP_CMP_SWAP, 0x2);

	xiw_hdr_atomic_req h;
	xiw_ctrl_set(&h.ddp.ctrl, 18 + 52, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_ATOMIC_REQ);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, 0x11, 0);
	h.atomic.aopcode = xiw_cpu_to_be32(XIW_AOP_CMP_SWAP);
	h.atomic.req_id = xiw_cpu_to_be32(0xa1a2a3a4u);
	h.atomic.stag = xiw_cpu_to_be32(0xb1b2b3b4u);
	xiw_put_be64(&h.atomic.to, 0xc1c2c3c4c5c6c7c8ull);
	xiw_put_be64(&h.atomic.add_swap, 0xd1d2d3d4d5d6d7d8ull);
	xiw_put_be64(&h.atomic.add_swap_mask, 0xe1e2e3e4e5e6e7e8ull);
	xiw_put_be64(&h.atomic.compare, 0xf1f2f3f4f5f6f7f8ull);
	xiw_put_be64(&h.atomic.compare_mask, 0x9192939495969798ull);

	Bytes exp = untagged_prefix(70, 0x41, 0x4a, 0, 1, 0x11, 0);
	Bytes rdmap = {
		0x00, 0x00, 0x00, 0x02, // Reserved(28) | AOpCode
		0xa1, 0xa2, 0xa3, 0xa4, // Request Identifier
		0xb1, 0xb2, 0xb3, 0xb4, // Remote STag
		0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, // Remote TO
		0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, // Add/Swap Data
		0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, // Add/Swap Mask
		0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, // Compare Data
		0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, // Compare Mask
	};
	exp.insert(exp.end(), rdmap.begin(), rdmap.end());
	EXPECT_BYTES(bytes_of(h), exp);
	EXPECT_EQ(xiw_be32_to_cpu(h.atomic.aopcode) & XIW_AOP_MASK, 2u);
	EXPECT_EQ(xiw_get_be64(&h.atomic.compare_mask), 0x9192939495969798ull);
}

// RFC 7306 §5.2.2 Figure 6 / Appendix A.2: Atomic Response, QN 3.
TEST(Rfc7306, AtomicResponseBytes)
{
	EXPECT_EQ(sizeof(xiw_rdmap_atomic_resp), 12u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_resp, orig), 4u);
	// RFC 7306 §4 "32 bytes" = MPA length + untagged DDP + Figure 6.
	EXPECT_EQ(sizeof(xiw_hdr_atomic_resp), 32u);
	xiw_hdr_atomic_resp h;
	xiw_ctrl_set(&h.ddp.ctrl, 18 + 12, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_ATOMIC_RESP);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_RESPONSE, 0x11, 0);
	h.atomic.req_id = xiw_cpu_to_be32(0xa1a2a3a4u);
	xiw_put_be64(&h.atomic.orig, 0x0123456789abcdefull);
	Bytes exp = untagged_prefix(30, 0x41, 0x4b, 0, 3, 0x11, 0);
	be(exp, 0xa1a2a3a4u, 4);
	be(exp, 0x0123456789abcdefull, 8);
	EXPECT_BYTES(bytes_of(h), exp);
}

// draft-talpey-rdma-commit-02 §2.1.1 and Appendix A: Flush Request, QN 1.
TEST(Talpey, FlushRequestBytes)
{
	EXPECT_EQ(sizeof(xiw_rdmap_flush_req), 20u);
	EXPECT_EQ(offsetof(xiw_rdmap_flush_req, sink_len), 4u);
	EXPECT_EQ(offsetof(xiw_rdmap_flush_req, sink_to), 8u);
	EXPECT_EQ(offsetof(xiw_rdmap_flush_req, flags), 16u);
	EXPECT_EQ(XIW_FLUSH_DISP_P, 0x1);
	EXPECT_EQ(XIW_FLUSH_DISP_G, 0x2);
	EXPECT_EQ(XIW_FLUSH_DISP_R, 0x4);

	xiw_hdr_flush_req h;
	xiw_ctrl_set(&h.ddp.ctrl, 18 + 20, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_FLUSH_REQ);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, 5, 0);
	h.flush.sink_stag = xiw_cpu_to_be32(0x10203040u);
	h.flush.sink_len = xiw_cpu_to_be32(0x00001000u);
	xiw_put_be64(&h.flush.sink_to, 0x5060708090a0b0c0ull);
	h.flush.flags = xiw_cpu_to_be32(XIW_FLUSH_DISP_P | XIW_FLUSH_DISP_G);
	Bytes exp = untagged_prefix(38, 0x41, 0x4c, 0, 1, 5, 0);
	be(exp, 0x10203040u, 4);
	be(exp, 0x1000u, 4);
	be(exp, 0x5060708090a0b0c0ull, 8);
	be(exp, 0x3u, 4);
	EXPECT_BYTES(bytes_of(h), exp);
}

// draft-talpey §2.2.1: Verify Request fixed part + hash tail; §2.2.3
// response = hash only (QN 3).
TEST(Talpey, VerifyRequestBytes)
{
	EXPECT_EQ(sizeof(xiw_rdmap_verify_req), 16u);
	EXPECT_EQ(sizeof(xiw_hdr_verify_req), 36u);
	xiw_hdr_verify_req h;
	xiw_ctrl_set(&h.ddp.ctrl, 18 + 16 + 4, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_VERIFY_REQ);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, 6, 0);
	h.verify.sink_stag = xiw_cpu_to_be32(0x01020304u);
	h.verify.sink_len = xiw_cpu_to_be32(4096);
	xiw_put_be64(&h.verify.sink_to, 0x8000ull);
	Bytes exp = untagged_prefix(38, 0x41, 0x4e, 0, 1, 6, 0);
	be(exp, 0x01020304u, 4);
	be(exp, 4096u, 4);
	be(exp, 0x8000ull, 8);
	EXPECT_BYTES(bytes_of(h), exp);

	xiw_ctrl ctl;
	xiw_ctrl_set(&ctl, 18 + 32, 0, 1, XIW_RDMAP_RV1, XIW_OP_VERIFY_RESP);
	EXPECT_BYTES(bytes_of(ctl), (Bytes{0x00, 0x32, 0x41, 0x4f}));
}

// draft-talpey §2.3.1 / Appendix A: Atomic Write Request (opcode 0x10 ->
// control octet 0x50), Data Sink Length 8; response 0x11 (0x51), QN 3.
TEST(Talpey, AtomicWriteBytes)
{
	EXPECT_EQ(sizeof(xiw_rdmap_atomic_write_req), 24u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_write_req, sink_to), 8u);
	EXPECT_EQ(offsetof(xiw_rdmap_atomic_write_req, data), 16u);
	EXPECT_EQ(sizeof(xiw_hdr_atomic_write_req), 44u);

	xiw_hdr_atomic_write_req h;
	xiw_ctrl_set(&h.ddp.ctrl, 18 + 24, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_ATOMIC_WRITE_REQ);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, 8, 0);
	h.awrite.sink_stag = xiw_cpu_to_be32(0xdeadbeefu);
	h.awrite.sink_len = xiw_cpu_to_be32(XIW_ATOMIC_WRITE_LEN);
	xiw_put_be64(&h.awrite.sink_to, 0x0000000000001008ull);
	xiw_put_be64(&h.awrite.data, 0x1122334455667788ull);
	Bytes exp = untagged_prefix(42, 0x41, 0x50, 0, 1, 8, 0);
	be(exp, 0xdeadbeefu, 4);
	be(exp, 8u, 4);
	be(exp, 0x1008ull, 8);
	be(exp, 0x1122334455667788ull, 8);
	EXPECT_BYTES(bytes_of(h), exp);

	xiw_ddp_untagged_hdr r;
	xiw_ctrl_set(&r.ctrl, 18, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_ATOMIC_WRITE_RESP);
	xiw_untagged_set(&r, 0, XIW_QN_RESPONSE, 8, 0);
	EXPECT_BYTES(bytes_of(r), untagged_prefix(18, 0x41, 0x51, 0, 3, 8, 0));
}

// draft-wood §6.1 Figure 4 / A.1: RDMA Read V2 Request (RV=2, 0x11).
TEST(Wood, ReadV2RequestBytes)
{
	EXPECT_EQ(sizeof(xiw_rdmap_read_req_v2), 16u);
	EXPECT_EQ(offsetof(xiw_rdmap_read_req_v2, src_stag), 4u);
	EXPECT_EQ(offsetof(xiw_rdmap_read_req_v2, src_to), 8u);
	xiw_hdr_read_req_v2 h;
	xiw_ctrl_set(&h.ddp.ctrl, 18 + 16, 0, 1, XIW_RDMAP_RV2,
		     XIW_OP2_READ_REQ_V2);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, 2, 0);
	h.rreq.read_size = xiw_cpu_to_be32(65536);
	h.rreq.src_stag = xiw_cpu_to_be32(0x0000ab01u);
	xiw_put_be64(&h.rreq.src_to, 0x7fff000012345678ull);
	Bytes exp = untagged_prefix(34, 0x41, 0x91, 0, 1, 2, 0);
	be(exp, 65536u, 4);
	be(exp, 0xab01u, 4);
	be(exp, 0x7fff000012345678ull, 8);
	EXPECT_BYTES(bytes_of(h), exp);
}

// draft-wood A.4 Figure 10: last segment of Send with Invalidate and
// Immediate Data carries the Invalidate STag and only the 8 octets.
TEST(Wood, SendInvalidateImmediateLastSegment)
{
	xiw_hdr_imm h;
	xiw_ctrl_set(&h.ddp.ctrl, 18 + 8, 0, 1, XIW_RDMAP_RV2,
		     XIW_OP2_SEND_INV_IMM);
	xiw_untagged_set(&h.ddp, 0x00c0ffeeu, XIW_QN_SEND, 4, 4096);
	const std::uint8_t imm[8] = {0xf0, 0xe1, 0xd2, 0xc3,
				     0xb4, 0xa5, 0x96, 0x87};
	std::memcpy(h.imm.data, imm, 8);
	Bytes exp = untagged_prefix(26, 0x41, 0x94, 0x00c0ffee, 0, 4, 4096);
	exp.insert(exp.end(), imm, imm + 8);
	EXPECT_BYTES(bytes_of(h), exp);
}

TEST(Wire, Be64Helpers)
{
	xiw_be64 v;
	xiw_put_be64(&v, 0x8000000000000001ull);
	EXPECT_BYTES(bytes_of(v), (Bytes{0x80, 0, 0, 0, 0, 0, 0, 0x01}));
	EXPECT_EQ(xiw_get_be64(&v), 0x8000000000000001ull);
	EXPECT_EQ(alignof(xiw_be64), 4u);
	EXPECT_EQ(alignof(xiw_hdr_atomic_req), 4u);
	EXPECT_EQ(sizeof(xiw_hdr), 72u);
}
