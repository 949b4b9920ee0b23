// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// The opcode table of wire.h against RFC 5040 §4.2 (opcode table) and
// table (queues), RFC 7306 §4.1 Figure 2 / §4.2 Figure 3, draft-talpey
// §2 Figures 2/3, draft-wood §4.1 Figure 2 / §4.2 Figure 3.
#include <set>
#include <utility>

#include <xiw/wire.h>

#include "wire_test_util.h"

namespace {

// The X-macro also yields a compile-time table (C++ only).
constexpr xiw_opcode_info kTable[] = {
	XIW_RDMAP_OPCODES(XIW_OPCODE_INFO_INIT)
};
static_assert(sizeof(kTable) / sizeof(kTable[0]) == XIW_OPCODE_COUNT);
static_assert(XIW_OPCODE_COUNT == 24);
static_assert(kTable[XIW_OP_ATOMIC_REQ].hdr_len ==
	      sizeof(xiw_rdmap_atomic_req));

struct Expect {
	unsigned rv;
	unsigned op;
	unsigned qn;         // XIW_QN_NONE if tagged
	unsigned hdr_len;
	bool payload;
	unsigned resp;       // XIW_OP_NONE if none
	bool is_response;
	bool inval;
	bool se;
};

constexpr unsigned N = XIW_QN_NONE;
constexpr unsigned NO = XIW_OP_NONE;

// Straight from the figures.
const Expect kExpect[] = {
	// RFC 5040 §4.2 / §4.4 / §4.8; valid with RV 1 and 2 (wood §4.1)
	{1, 0x0, N, 0, true, NO, false, false, false},   // Write
	{1, 0x1, 1, 28, false, 0x2, false, false, false}, // Read Request
	{1, 0x2, N, 0, true, NO, true, false, false},    // Read Response
	{1, 0x3, 0, 0, true, NO, false, false, false},   // Send
	{1, 0x4, 0, 0, true, NO, false, true, false},    // Send w/ Inv
	{1, 0x5, 0, 0, true, NO, false, false, true},    // Send w/ SE
	{1, 0x6, 0, 0, true, NO, false, true, true},     // Send w/ SE+Inv
	{1, 0x7, 2, 4, false, NO, false, false, false},  // Terminate
	// RFC 7306 Figure 2/3 and §5.2, §6.2
	{1, 0x8, 0, 8, false, NO, false, false, false},  // Immediate
	{1, 0x9, 0, 8, false, NO, false, false, true},   // Immediate SE
	{1, 0xa, 1, 52, false, 0xb, false, false, false}, // Atomic Req
	{1, 0xb, 3, 12, false, NO, true, false, false},  // Atomic Resp
	// draft-talpey §2 Figure 2/3 and §2.1-§2.3
	{1, 0xc, 1, 20, false, 0xd, false, false, false}, // Flush Req
	{1, 0xd, 3, 0, false, NO, true, false, false},   // Flush Resp
	{1, 0xe, 1, 16, false, 0xf, false, false, false}, // Verify Req
	{1, 0xf, 3, 0, false, NO, true, false, false},   // Verify Resp
	{1, 0x10, 1, 24, false, 0x11, false, false, false}, // AW Req
	{1, 0x11, 3, 0, false, NO, true, false, false},  // AW Resp
	// draft-wood Figure 2/3 (RV=2 only)
	{2, 0x11, 1, 16, false, 0x12, false, false, false}, // Read V2 Req
	{2, 0x12, 3, 0, true, NO, true, false, false},   // Read V2 Resp
	{2, 0x13, 0, 0, true, NO, false, false, false},  // Send Imm
	{2, 0x14, 0, 0, true, NO, false, true, false},   // Send Inv Imm
	{2, 0x15, 0, 0, true, NO, false, false, true},   // Send SE Imm
	{2, 0x16, 0, 0, true, NO, false, true, true},    // Send Inv SE Imm
};

void check(unsigned rv, const Expect &e)
{
	SCOPED_TRACE(testing::Message() << "rv " << rv << " op 0x" << std::hex
					<< e.op);
	const xiw_opcode_info *oi = xiw_opcode_lookup(rv, e.op);
	ASSERT_NE(oi, nullptr);
	EXPECT_EQ(oi->opcode, e.op);
	EXPECT_EQ(oi->qn, e.qn);
	EXPECT_EQ(!!(oi->flags & XIW_OPF_TAGGED), e.qn == N);
	EXPECT_EQ(oi->hdr_len, e.hdr_len);
	EXPECT_EQ(!!(oi->flags & XIW_OPF_PAYLOAD), e.payload);
	EXPECT_EQ(oi->resp_opcode, e.resp);
	EXPECT_EQ(!!(oi->flags & XIW_OPF_RESPONSE), e.is_response);
	EXPECT_EQ(!!(oi->flags & XIW_OPF_INVAL), e.inval);
	EXPECT_EQ(!!(oi->flags & XIW_OPF_SE), e.se);
	EXPECT_NE(oi->name, nullptr);
	if (e.resp != NO) {
		// the response exists under the same RV, on QN 3 or tagged
		const xiw_opcode_info *r = xiw_opcode_lookup(rv, e.resp);
		ASSERT_NE(r, nullptr);
		EXPECT_TRUE(r->flags & XIW_OPF_RESPONSE);
		EXPECT_TRUE(r->qn == XIW_QN_RESPONSE ||
			    (r->flags & XIW_OPF_TAGGED));
		EXPECT_EQ(e.qn, static_cast<unsigned>(XIW_QN_READ_REQ));
	}
}

} // namespace

TEST(OpcodeTable, EveryOpcodeRv1)
{
	for (const Expect &e : kExpect)
		if (e.rv == 1)
			check(1, e);
}

TEST(OpcodeTable, EveryOpcodeRv2)
{
	// draft-wood §4.1: with RV=2 negotiated, all RFC 5040 / RFC 7306
	// messages are sent with RV=2 too.
	for (const Expect &e : kExpect)
		if (e.rv == 2 || e.op <= 0xb)
			check(2, e);
}

TEST(OpcodeTable, RvDisambiguates0x11)
{
	const xiw_opcode_info *a = xiw_opcode_lookup(1, 0x11);
	const xiw_opcode_info *b = xiw_opcode_lookup(2, 0x11);
	ASSERT_NE(a, nullptr);
	ASSERT_NE(b, nullptr);
	EXPECT_NE(a, b);
	EXPECT_EQ(a->spec, XIW_SPEC_TALPEY);
	EXPECT_EQ(b->spec, XIW_SPEC_WOOD);
	EXPECT_TRUE(a->flags & XIW_OPF_RESPONSE); // Atomic Write Response
	EXPECT_EQ(b->resp_opcode, 0x12);          // Read V2 Request
}

TEST(OpcodeTable, UndefinedCombinationsAreNull)
{
	for (unsigned op = 0x12; op < 0x20; op++)
		EXPECT_EQ(xiw_opcode_lookup(1, op), nullptr) << op;
	for (unsigned op = 0xc; op <= 0x10; op++) // talpey is RV=1 only
		EXPECT_EQ(xiw_opcode_lookup(2, op), nullptr) << op;
	for (unsigned op = 0x17; op < 0x20; op++)
		EXPECT_EQ(xiw_opcode_lookup(2, op), nullptr) << op;
	for (unsigned op = 0; op < 0x20; op++) {
		EXPECT_EQ(xiw_opcode_lookup(0, op), nullptr) << op;
		EXPECT_EQ(xiw_opcode_lookup(3, op), nullptr) << op;
	}
	EXPECT_EQ(xiw_opcode_lookup(1, 0x100), nullptr);
}

// The Solicited Event variants, as RFC 5040 §4.2, RFC 7306 §4.1 and
// draft-wood §4.1 list them; every other message has none.
TEST(OpcodeTable, SolicitedEventVariants)
{
	struct pair {
		unsigned int rv, op, se;
	};
	constexpr pair kSolicited[] = {
		{XIW_RDMAP_RV1, XIW_OP_SEND, XIW_OP_SEND_SE},
		{XIW_RDMAP_RV1, XIW_OP_SEND_INV, XIW_OP_SEND_SE_INV},
		{XIW_RDMAP_RV1, XIW_OP_IMM, XIW_OP_IMM_SE},
		{XIW_RDMAP_RV2, XIW_OP_SEND, XIW_OP_SEND_SE},
		{XIW_RDMAP_RV2, XIW_OP_SEND_INV, XIW_OP_SEND_SE_INV},
		{XIW_RDMAP_RV2, XIW_OP_IMM, XIW_OP_IMM_SE},
		{XIW_RDMAP_RV2, XIW_OP2_SEND_IMM, XIW_OP2_SEND_SE_IMM},
		{XIW_RDMAP_RV2, XIW_OP2_SEND_INV_IMM, XIW_OP2_SEND_SE_INV_IMM},
	};
	for (unsigned int rv : {XIW_RDMAP_RV1, XIW_RDMAP_RV2}) {
		for (unsigned int op = 0; op < 32; op++) {
			unsigned int want = op;
			for (const pair &p : kSolicited)
				if (p.rv == rv && p.op == op)
					want = p.se;
			EXPECT_EQ(xiw_opcode_solicited(rv, op), want)
				<< "RV " << rv << " opcode 0x" << std::hex << op;
		}
	}
}

TEST(OpcodeTable, ExactlyTheExpectedEntries)
{
	std::set<std::pair<unsigned, unsigned>> want;
	for (const Expect &e : kExpect) {
		want.insert({e.rv, e.op});
		if (e.rv == 1 && e.op <= 0xb)
			want.insert({2, e.op});
	}
	std::set<std::pair<unsigned, unsigned>> have;
	for (unsigned i = 0; const xiw_opcode_info *oi = xiw_opcode_at(i); i++) {
		for (unsigned rv = 1; rv <= 2; rv++) {
			if (oi->rv_mask & (1u << (rv - 1))) {
				EXPECT_TRUE(have.insert({rv, oi->opcode}).second)
					<< "duplicate " << rv << "/" << +oi->opcode;
			}
		}
		// runtime table == constexpr table
		EXPECT_EQ(oi->opcode, kTable[i].opcode);
		EXPECT_STREQ(oi->name, kTable[i].name);
	}
	EXPECT_EQ(have, want);
	EXPECT_EQ(xiw_opcode_at(XIW_OPCODE_COUNT), nullptr);
}

// Fixed header lengths equal the sizes of the corresponding structs.
TEST(OpcodeTable, HeaderLengthsMatchStructs)
{
	EXPECT_EQ(xiw_opcode_lookup(1, XIW_OP_READ_REQ)->hdr_len,
		  sizeof(xiw_rdmap_read_req));
	EXPECT_EQ(xiw_opcode_lookup(1, XIW_OP_TERMINATE)->hdr_len,
		  sizeof(__be32));
	EXPECT_EQ(xiw_opcode_lookup(1, XIW_OP_IMM)->hdr_len,
		  sizeof(xiw_rdmap_imm));
	EXPECT_EQ(xiw_opcode_lookup(1, XIW_OP_ATOMIC_REQ)->hdr_len,
		  sizeof(xiw_rdmap_atomic_req));
	EXPECT_EQ(xiw_opcode_lookup(1, XIW_OP_ATOMIC_RESP)->hdr_len,
		  sizeof(xiw_rdmap_atomic_resp));
	EXPECT_EQ(xiw_opcode_lookup(1, XIW_OP_FLUSH_REQ)->hdr_len,
		  sizeof(xiw_rdmap_flush_req));
	EXPECT_EQ(xiw_opcode_lookup(1, XIW_OP_VERIFY_REQ)->hdr_len,
		  sizeof(xiw_rdmap_verify_req));
	EXPECT_EQ(xiw_opcode_lookup(1, XIW_OP_ATOMIC_WRITE_REQ)->hdr_len,
		  sizeof(xiw_rdmap_atomic_write_req));
	EXPECT_EQ(xiw_opcode_lookup(2, XIW_OP2_READ_REQ_V2)->hdr_len,
		  sizeof(xiw_rdmap_read_req_v2));
	EXPECT_TRUE(xiw_opcode_lookup(1, XIW_OP_TERMINATE)->flags &
		    XIW_OPF_VARLEN);
	EXPECT_TRUE(xiw_opcode_lookup(1, XIW_OP_VERIFY_REQ)->flags &
		    XIW_OPF_VARLEN);
	EXPECT_TRUE(xiw_opcode_lookup(1, XIW_OP_VERIFY_RESP)->flags &
		    XIW_OPF_VARLEN);
	for (unsigned op = XIW_OP2_SEND_IMM; op <= XIW_OP2_SEND_SE_INV_IMM; op++)
		EXPECT_TRUE(xiw_opcode_lookup(2, op)->flags & XIW_OPF_IMM_LAST);
}

// Round trip through the control octet for every table entry.
TEST(OpcodeTable, ControlOctetRoundTrip)
{
	for (unsigned i = 0; const xiw_opcode_info *oi = xiw_opcode_at(i); i++)
		for (unsigned rv = 1; rv <= 2; rv++) {
			if (!(oi->rv_mask & (1u << (rv - 1))))
				continue;
			__u8 c = xiw_rdmap_ctrl(rv, oi->opcode);
			EXPECT_EQ(c & XIW_RDMAP_RSV_MASK, 0);
			EXPECT_EQ(xiw_opcode_lookup(xiw_rdmap_rv(c),
						    xiw_rdmap_opcode(c)),
				  oi);
		}
}
