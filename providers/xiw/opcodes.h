// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Translation between the verbs enums and the xiw queue entry encodings.
#ifndef XIW_PROVIDER_OPCODES_H
#define XIW_PROVIDER_OPCODES_H

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>

#include <endian.h>

#include <infiniband/verbs.h>
#include <infiniband/xiwdv.h>
#include <rdma/xiw-abi.h>

namespace xiw {

// ---- send queue ----------------------------------------------------------

enum class wr_opcode : std::uint8_t {
	send = XIW_WR_SEND,
	send_with_imm = XIW_WR_SEND_WITH_IMM,
	send_with_inv = XIW_WR_SEND_WITH_INV,
	rdma_write = XIW_WR_RDMA_WRITE,
	rdma_write_with_imm = XIW_WR_RDMA_WRITE_WITH_IMM,
	rdma_read = XIW_WR_RDMA_READ,
	atomic_fetch_add = XIW_WR_ATOMIC_FETCH_ADD,
	atomic_cmp_swap = XIW_WR_ATOMIC_CMP_SWAP,
	masked_fetch_add = XIW_WR_MASKED_FETCH_ADD,
	masked_cmp_swap = XIW_WR_MASKED_CMP_SWAP,
	immediate_data = XIW_WR_IMMEDIATE_DATA,
	flush = XIW_WR_FLUSH,
	atomic_write = XIW_WR_ATOMIC_WRITE,
	verify = XIW_WR_VERIFY,
};

// rdma-core >= 45 numbers the RDMA Flush work request and completion;
// rdma-core 44 has no name for them (xiwdv.h: XIWDV_WR_FLUSH, _WC_FLUSH).
inline constexpr auto ibv_wr_flush = static_cast<ibv_wr_opcode>(14);
inline constexpr auto ibv_wc_flush = static_cast<ibv_wc_opcode>(8);

// The SQE opcode for a verbs send opcode, or nothing if xiw cannot carry it
// (the caller must then reject the work request, never drop it).  The
// extension work requests of xiwdv.h (IBV_WR_DRIVER1) are decoded apart.
constexpr std::optional<wr_opcode> to_wr_opcode(ibv_wr_opcode op) noexcept
{
#ifndef XIW_HAVE_IBV_WR_FLUSH
	if (op == ibv_wr_flush)
		return wr_opcode::flush;
#endif
	switch (op) {
#ifdef XIW_HAVE_IBV_WR_FLUSH
	case IBV_WR_FLUSH: return wr_opcode::flush;
#endif
	case IBV_WR_SEND: return wr_opcode::send;
	case IBV_WR_SEND_WITH_IMM: return wr_opcode::send_with_imm;
	case IBV_WR_SEND_WITH_INV: return wr_opcode::send_with_inv;
	case IBV_WR_RDMA_WRITE: return wr_opcode::rdma_write;
	case IBV_WR_RDMA_WRITE_WITH_IMM: return wr_opcode::rdma_write_with_imm;
	case IBV_WR_RDMA_READ: return wr_opcode::rdma_read;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return wr_opcode::atomic_fetch_add;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return wr_opcode::atomic_cmp_swap;
	case IBV_WR_ATOMIC_WRITE: return wr_opcode::atomic_write;
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
	case IBV_WR_TSO:
	case IBV_WR_DRIVER1:
		break;
	}
	return std::nullopt;
}

// The SQE opcode of an xiwdv extension work request (xiwdv_wr_ext.opcode).
constexpr std::optional<wr_opcode> to_wr_opcode(xiwdv_wr_ext_opcode op) noexcept
{
	switch (op) {
	case XIWDV_WR_MASKED_FETCH_ADD: return wr_opcode::masked_fetch_add;
	case XIWDV_WR_MASKED_CMP_SWAP: return wr_opcode::masked_cmp_swap;
	case XIWDV_WR_IMMEDIATE_DATA: return wr_opcode::immediate_data;
	case XIWDV_WR_RDMA_WRITE_WITH_IMM64: return wr_opcode::rdma_write_with_imm;
	case XIWDV_WR_SEND_WITH_IMM64: return wr_opcode::send_with_imm;
	case XIWDV_WR_VERIFY: return wr_opcode::verify;
	case XIWDV_WR_FLUSH_EXT: return wr_opcode::flush;
	}
	return std::nullopt;
}

// Requests the peer answers on QN 3 or with a Read Response: their SGEs
// take the answer in (a Verify's second one holds the hash expected), so
// they are never inline.
constexpr bool is_request(wr_opcode op) noexcept
{
	switch (op) {
	case wr_opcode::rdma_read:
	case wr_opcode::atomic_fetch_add:
	case wr_opcode::atomic_cmp_swap:
	case wr_opcode::masked_fetch_add:
	case wr_opcode::masked_cmp_swap:
	case wr_opcode::flush:
	case wr_opcode::atomic_write:
	case wr_opcode::verify:
		return true;
	default:
		return false;
	}
}

// Opcodes that exist on the wire only between peers that negotiated the
// RDMAP extensions (RFC 7306, draft-wood); toward any other peer the post
// fails with EOPNOTSUPP.
constexpr bool needs_extensions(wr_opcode op) noexcept
{
	switch (op) {
	case wr_opcode::send:
	case wr_opcode::send_with_inv:
	case wr_opcode::rdma_write:
	case wr_opcode::rdma_read:
		return false;
	default:
		return true;
	}
}

// Operands of an atomic in the SQE (see xiw_sqe): the verbs atomics are the
// masked ones of RFC 7306 §5.1 with neutral masks.
struct atomic_operands {
	std::uint64_t compare_or_add = 0;
	std::uint64_t swap = 0;
	std::uint64_t compare_mask = 0;
	std::uint64_t swap_or_boundary_mask = 0;
};

// Plain FetchAdd: no field boundary, one 64-bit addition (§5.1.1).
constexpr atomic_operands fetch_add_operands(std::uint64_t add) noexcept
{
	return {add, 0, 0, 0};
}

// Plain CmpSwap: all 64 bits compared and all swapped (§5.1.2).
constexpr atomic_operands cmp_swap_operands(std::uint64_t compare,
					    std::uint64_t swap) noexcept
{
	return {compare, swap, ~std::uint64_t{0}, ~std::uint64_t{0}};
}

// The 64-bit immediate carried for a verbs imm_data (network order): the
// value of those 32 bits, so that the receiver's imm_data is the same.
inline std::uint64_t imm64_of(__be32 imm_data) noexcept
{
	return be32toh(imm_data);
}

// ---- completion queue ----------------------------------------------------

// Completion opcodes of the xiw extensions that verbs has no name for are
// reported as the driver-private IBV_WC_DRIVERn values (xiwdv.h).
inline constexpr ibv_wc_opcode wc_verify = IBV_WC_DRIVER2;
inline constexpr ibv_wc_opcode wc_immediate_data = IBV_WC_DRIVER3;

constexpr std::optional<ibv_wc_opcode> to_wc_opcode(std::uint8_t op) noexcept
{
	switch (op) {
	case XIW_WC_SEND: return IBV_WC_SEND;
	case XIW_WC_RDMA_WRITE: return IBV_WC_RDMA_WRITE;
	case XIW_WC_RDMA_READ: return IBV_WC_RDMA_READ;
	case XIW_WC_COMP_SWAP:
	case XIW_WC_MASKED_COMP_SWAP: return IBV_WC_COMP_SWAP;
	case XIW_WC_FETCH_ADD:
	case XIW_WC_MASKED_FETCH_ADD: return IBV_WC_FETCH_ADD;
	case XIW_WC_LOCAL_INV: return IBV_WC_LOCAL_INV;
	case XIW_WC_ATOMIC_WRITE: return IBV_WC_ATOMIC_WRITE;
	case XIW_WC_FLUSH: return ibv_wc_flush;
	case XIW_WC_VERIFY: return wc_verify;
	case XIW_WC_IMMEDIATE_DATA: return wc_immediate_data;
	case XIW_WC_RECV: return IBV_WC_RECV;
	case XIW_WC_RECV_RDMA_WITH_IMM: return IBV_WC_RECV_RDMA_WITH_IMM;
	default: // XIW_WC_REG_MR is for kernel consumers only
		return std::nullopt;
	}
}

inline constexpr std::array<ibv_wc_status, XIW_WC_GENERAL_ERR + 1> wc_status_table{
	IBV_WC_SUCCESS,		// XIW_WC_SUCCESS
	IBV_WC_LOC_LEN_ERR,	// XIW_WC_LOC_LEN_ERR
	IBV_WC_LOC_QP_OP_ERR,	// XIW_WC_LOC_QP_OP_ERR
	IBV_WC_LOC_PROT_ERR,	// XIW_WC_LOC_PROT_ERR
	IBV_WC_WR_FLUSH_ERR,	// XIW_WC_WR_FLUSH_ERR
	IBV_WC_BAD_RESP_ERR,	// XIW_WC_BAD_RESP_ERR
	IBV_WC_LOC_ACCESS_ERR,	// XIW_WC_LOC_ACCESS_ERR
	IBV_WC_REM_INV_REQ_ERR, // XIW_WC_REM_INV_REQ_ERR
	IBV_WC_REM_ACCESS_ERR,	// XIW_WC_REM_ACCESS_ERR
	IBV_WC_REM_OP_ERR,	// XIW_WC_REM_OP_ERR
	IBV_WC_RNR_RETRY_EXC_ERR, // XIW_WC_RNR_RETRY_EXC_ERR
	IBV_WC_FATAL_ERR,	// XIW_WC_FATAL_ERR
	IBV_WC_GENERAL_ERR,	// XIW_WC_GENERAL_ERR
};
static_assert(wc_status_table[XIW_WC_WR_FLUSH_ERR] == IBV_WC_WR_FLUSH_ERR);
static_assert(wc_status_table[XIW_WC_RNR_RETRY_EXC_ERR] == IBV_WC_RNR_RETRY_EXC_ERR);

constexpr ibv_wc_status to_wc_status(std::uint8_t status) noexcept
{
	return status < wc_status_table.size() ? wc_status_table[status]
					       : IBV_WC_GENERAL_ERR;
}

// Fills a work completion from a CQE (a private copy, not the ring slot).
// A CQE that the provider does not understand is reported as a general
// error with vendor_err = its raw opcode, never as a success.
inline void cqe_to_wc(const xiw_cqe &cqe, ibv_wc &wc) noexcept
{
	std::memset(&wc, 0, sizeof(wc));
	wc.wr_id = cqe.wr_id;
	wc.status = to_wc_status(cqe.status);
	wc.vendor_err = cqe.vendor_err;
	wc.byte_len = cqe.byte_len;
	wc.qp_num = cqe.qp_num;
	if (auto op = to_wc_opcode(cqe.opcode)) {
		wc.opcode = *op;
	} else {
		wc.opcode = (cqe.opcode & XIW_WC_RECV) ? IBV_WC_RECV : IBV_WC_SEND;
		wc.status = IBV_WC_GENERAL_ERR;
		wc.vendor_err = cqe.opcode;
		return;
	}
	if (cqe.flags & XIW_CQE_WITH_IMM) {
		// imm_or_inv carries the low half; verbs wants network order.
		// The high half goes where xiwdv_wc_imm64() looks for it.
		wc.imm_data = htobe32(cqe.imm_or_inv);
		wc.src_qp = cqe.imm_high;
		wc.wc_flags |= IBV_WC_WITH_IMM;
	} else if (cqe.flags & XIW_CQE_WITH_INV) {
		wc.invalidated_rkey = cqe.imm_or_inv;
		wc.wc_flags |= IBV_WC_WITH_INV;
	}
}

} // namespace xiw

#endif // XIW_PROVIDER_OPCODES_H
