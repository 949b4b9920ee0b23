// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// The work-request table of wr_opcodes.h against the ABI enums and the wire
// table: every opcode has its row, in order; each message a row sends is
// an RDMAP opcode of its version whose properties agree with the row's
// (RFC 5040 §4.2, RFC 7306 §4.1, draft-talpey §2, draft-wood §4.1).
#include <iterator>
#include <set>

#include <xiw/wr_opcodes.h>

#include "wire_test_util.h"

namespace {

const xiw_opcode_info &wire_of(const xiw_wr_info &wi)
{
	const xiw_opcode_info *oi = xiw_opcode_lookup(wi.rv, wi.wire);
	EXPECT_NE(oi, nullptr) << wi.name << ": RV " << unsigned{wi.rv} << " opcode "
			       << unsigned{wi.wire} << " is not in the wire table";
	static const xiw_opcode_info none{};
	return oi ? *oi : none;
}

TEST(WrTable, OneRowPerOpcodeInOrder)
{
	std::set<std::string> names;
	for (unsigned int op = 0; op < XIW_WR_NUM_OPCODES; op++) {
		const xiw_wr_info *wi = xiw_wr_lookup(op);
		ASSERT_NE(wi, nullptr) << "opcode " << op;
		EXPECT_EQ(wi->wr, op);
		EXPECT_TRUE(names.insert(wi->name).second) << wi->name;
	}
	EXPECT_EQ(xiw_wr_lookup(XIW_WR_NUM_OPCODES), nullptr);
	EXPECT_EQ(xiw_wr_lookup(0xff), nullptr);
}

TEST(WrTable, SgeRulesFitTheQueueEntry)
{
	for (unsigned int op = 0; op < XIW_WR_NUM_OPCODES; op++) {
		const xiw_wr_info &wi = *xiw_wr_lookup(op);
		EXPECT_LE(wi.sge_min, wi.sge_max) << wi.name;
		EXPECT_LE(wi.sge_max, XIW_MAX_SGE) << wi.name;
		if (wi.flags & XIW_WRF_INLINE) {
			EXPECT_GT(wi.sge_max, 0) << wi.name << " has no payload to inline";
		}
		if (wi.flags & (XIW_WRF_LOCAL | XIW_WRF_IMM) && !(wi.flags & XIW_WRF_INLINE)) {
			EXPECT_EQ(wi.sge_max, 0) << wi.name;
		}
	}
	// RFC 7306 §5.1: the original value comes back into one 8-octet
	// buffer; RDMA Read takes max_sge_rd.
	for (unsigned int op : {XIW_WR_ATOMIC_FETCH_ADD, XIW_WR_ATOMIC_CMP_SWAP,
				XIW_WR_MASKED_FETCH_ADD, XIW_WR_MASKED_CMP_SWAP}) {
		const xiw_wr_info &wi = *xiw_wr_lookup(op);
		EXPECT_EQ(wi.sge_min, 1);
		EXPECT_EQ(wi.sge_max, 1);
		EXPECT_EQ(wi.sge_len, 8u);
	}
	EXPECT_EQ(xiw_wr_lookup(XIW_WR_RDMA_READ)->sge_max, XIW_MAX_SGE_RD);
	EXPECT_EQ(xiw_wr_lookup(XIW_WR_RDMA_READ_WITH_INV)->sge_max, XIW_MAX_SGE_RD);
}

// What a row says of its message is what the wire table says of it.
TEST(WrTable, MessagesAgreeWithTheWireTable)
{
	for (unsigned int op = 0; op < XIW_WR_NUM_OPCODES; op++) {
		const xiw_wr_info &wi = *xiw_wr_lookup(op);
		if (wi.flags & XIW_WRF_LOCAL) {
			EXPECT_EQ(wi.wire, XIW_OP_NONE) << wi.name;
			EXPECT_FALSE(wi.flags & (XIW_WRF_REQUEST | XIW_WRF_EXT)) << wi.name;
			continue;
		}
		const xiw_opcode_info &oi = wire_of(wi);
		EXPECT_FALSE(oi.flags & XIW_OPF_RESPONSE) << wi.name << " sends a response";
		EXPECT_FALSE(oi.flags & XIW_OPF_SE) << wi.name << ": Solicited Event is the SQE's";
		// A request goes on QN 1 and has a response.
		EXPECT_EQ(bool(wi.flags & XIW_WRF_REQUEST),
			  oi.qn == XIW_QN_READ_REQ && oi.resp_opcode != XIW_OP_NONE)
			<< wi.name;
		EXPECT_EQ(bool(wi.flags & XIW_WRF_TAGGED), bool(oi.flags & XIW_OPF_TAGGED))
			<< wi.name;
		EXPECT_EQ(bool(wi.flags & XIW_WRF_INVALIDATE), bool(oi.flags & XIW_OPF_INVAL))
			<< wi.name;
		// Payload inline only where the message carries payload.
		if (wi.flags & XIW_WRF_INLINE) {
			EXPECT_TRUE(oi.flags & XIW_OPF_PAYLOAD) << wi.name;
		}
		// Beyond RFC 5040, or ending with Immediate Data: negotiated.
		EXPECT_EQ(bool(wi.flags & XIW_WRF_EXT),
			  oi.spec != XIW_SPEC_RFC5040 || bool(wi.flags & XIW_WRF_IMM))
			<< wi.name;
	}
}

// An atomic's AOpCode (RFC 7306 §5.2.1 Figure 5) is the one its completion
// names; no other row has one.
TEST(WrTable, AtomicsNameTheirAOpCode)
{
	for (unsigned int op = 0; op < XIW_WR_NUM_OPCODES; op++) {
		const xiw_wr_info &wi = *xiw_wr_lookup(op);
		if (wi.wire != XIW_OP_ATOMIC_REQ || wi.flags & XIW_WRF_LOCAL) {
			EXPECT_EQ(wi.aop, 0) << wi.name;
			continue;
		}
		const bool adds = wi.wc == XIW_WC_FETCH_ADD || wi.wc == XIW_WC_MASKED_FETCH_ADD;
		const bool swaps = wi.wc == XIW_WC_COMP_SWAP || wi.wc == XIW_WC_MASKED_COMP_SWAP;
		EXPECT_TRUE(adds || swaps) << wi.name;
		EXPECT_EQ(wi.aop, adds ? XIW_AOP_FETCH_ADD : XIW_AOP_CMP_SWAP) << wi.name;
	}
}

// Where a verbs work request keeps a row's operands (its args): the
// peer's address in one place, only for a message that names the peer's
// memory, and each bit on the kind of row it is for.
TEST(WrTable, VerbsArgsFitTheRow)
{
	for (unsigned int op = 0; op < XIW_WR_NUM_OPCODES; op++) {
		const xiw_wr_info &wi = *xiw_wr_lookup(op);
		const unsigned a = wi.args;
		EXPECT_FALSE((a & XIW_ARG_RDMA) && (a & XIW_ARG_ATOMIC)) << wi.name;
		if (a & XIW_ARG_RDMA) {
			EXPECT_TRUE(wi.flags & (XIW_WRF_TAGGED | XIW_WRF_REQUEST)) << wi.name;
		}
		if (a & XIW_ARG_ATOMIC) {
			EXPECT_TRUE(wi.flags & XIW_WRF_REQUEST) << wi.name;
		}
		if (a & (XIW_ARG_SWAP | XIW_ARG_FLUSH_SELECT)) {
			EXPECT_TRUE(a & XIW_ARG_ATOMIC) << wi.name;
		}
		EXPECT_FALSE((a & XIW_ARG_SWAP) && (a & XIW_ARG_FLUSH_SELECT)) << wi.name;
		EXPECT_EQ(bool(a & XIW_ARG_REG), wi.wc == XIW_WC_REG_MR) << wi.name;
		EXPECT_EQ(bool(a & XIW_ARG_FLUSH_SELECT), wi.wr == XIW_WR_FLUSH) << wi.name;
		// The peer's STag to invalidate, or a kernel consumer's own.
		if (wi.flags & XIW_WRF_INVALIDATE) {
			EXPECT_TRUE(a & XIW_ARG_INVALIDATE) << wi.name;
		} else if (a & XIW_ARG_INVALIDATE) {
			EXPECT_TRUE(wi.flags & XIW_WRF_KERNEL) << wi.name;
		}
		// The masked CmpSwap is xiwdv's only: its masks are its own.
		EXPECT_EQ(bool(a & XIW_ARG_SWAP), wi.wc == XIW_WC_COMP_SWAP) << wi.name;
	}
}

// What the atomic fields of a verbs work request become in the SQE
// (xiw-abi.h's operand[] layout).
TEST(WrTable, VerbsAtomicArgsIntoOperands)
{
	auto operands = [](unsigned int op, __u64 compare_add, __u64 swap) {
		xiw_sqe sqe{};
		xiw_sqe_atomic_args(&sqe, xiw_wr_lookup(op), compare_add, swap);
		return std::vector<__u64>(std::begin(sqe.operand), std::end(sqe.operand));
	};
	const __u64 all = ~__u64{0};
	EXPECT_EQ(operands(XIW_WR_ATOMIC_FETCH_ADD, 5, 9), (std::vector<__u64>{5, 0, 0, 0}));
	EXPECT_EQ(operands(XIW_WR_ATOMIC_CMP_SWAP, 1, 2), (std::vector<__u64>{1, 2, all, all}));
	EXPECT_EQ(operands(XIW_WR_ATOMIC_WRITE, 7, 9), (std::vector<__u64>{7, 0, 0, 0}));
	// Length; type and level in swap's low 16 bits (rdma-core >= 45).
	EXPECT_EQ(operands(XIW_WR_FLUSH, 4096, 0xabcd0102), (std::vector<__u64>{4096, 0x0102, 0, 0}));
}

// Every completion opcode a row names has its verbs names.
TEST(WrTable, CompletionsHaveRows)
{
	std::set<unsigned> wcs;
#define XIW_WC_ROW(wc, ibv, ib) wcs.insert(wc);
	XIW_WC_OPCODES(XIW_WC_ROW)
#undef XIW_WC_ROW
	for (unsigned int op = 0; op < XIW_WR_NUM_OPCODES; op++)
		EXPECT_TRUE(wcs.count(xiw_wr_lookup(op)->wc)) << xiw_wr_lookup(op)->name;
	EXPECT_TRUE(wcs.count(XIW_WC_RECV));
	EXPECT_TRUE(wcs.count(XIW_WC_RECV_RDMA_WITH_IMM));

	unsigned next = 0;
#define XIW_WC_STATUS_ROW(status, ibv, ib) EXPECT_EQ(status, next++);
	XIW_WC_STATUSES(XIW_WC_STATUS_ROW)
#undef XIW_WC_STATUS_ROW
	EXPECT_EQ(next, XIW_WC_GENERAL_ERR + 1u);
}

} // namespace
