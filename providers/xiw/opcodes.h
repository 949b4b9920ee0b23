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
// The tables are shared with the kernel: C, with C casts.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#include <xiw/wr_opcodes.h>
#pragma GCC diagnostic pop

namespace xiw {

// ---- send queue ----------------------------------------------------------
// What each xiw_wr_opcode is comes from XIW_WR_OPCODES (xiw/wr_opcodes.h).

// The libibverbs and xiwdv extension opcodes of each work-request opcode
// (the table's rows are in enum order).
// (xiwdv.h names rdma-core 44's missing values with C casts.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#define XIW_IBV_WR_OF(wr, nm, rv, wire, wc, fl, smin, smax, slen, ibv, ib, dv, aop, args) \
	static_cast<int>(ibv),
#define XIW_DV_WR_OF(wr, nm, rv, wire, wc, fl, smin, smax, slen, ibv, ib, dv, aop, args) \
	static_cast<int>(dv),
inline constexpr std::array<int, XIW_WR_NUM_OPCODES> ibv_wr_opcodes{
	XIW_WR_OPCODES(XIW_IBV_WR_OF)};
inline constexpr std::array<int, XIW_WR_NUM_OPCODES> dv_wr_opcodes{
	XIW_WR_OPCODES(XIW_DV_WR_OF)};
#undef XIW_IBV_WR_OF
#undef XIW_DV_WR_OF
#pragma GCC diagnostic pop

// A column inverted: the work-request opcode of each verbs value (-1:
// none), so that a post indexes instead of searching.  Every verbs value
// is below 32 (a larger one fails to compile here).
using wr_opcode_index = std::array<int, 32>;
constexpr wr_opcode_index invert(const std::array<int, XIW_WR_NUM_OPCODES> &column) noexcept
{
	wr_opcode_index wr_of{};
	wr_of.fill(-1);
	for (std::size_t wr = 0; wr < column.size(); wr++)
		if (column[wr] != XIW_NO_VERB)
			wr_of[static_cast<std::size_t>(column[wr])] = static_cast<int>(wr);
	return wr_of;
}
inline constexpr wr_opcode_index wr_of_ibv = invert(ibv_wr_opcodes);
inline constexpr wr_opcode_index wr_of_dv = invert(dv_wr_opcodes);

// The SQE opcode that libibverbs opcode (or xiwdv extension opcode) OP
// posts, or nothing if xiw cannot carry it (the caller must then reject the
// work request, never drop it).
template <class Verb>
constexpr std::optional<xiw_wr_opcode> wr_opcode_in(const wr_opcode_index &wr_of, Verb op) noexcept
{
	const auto v = static_cast<unsigned int>(op);
	if (v >= wr_of.size() || wr_of[v] < 0)
		return std::nullopt;
	return static_cast<xiw_wr_opcode>(wr_of[v]);
}

constexpr std::optional<xiw_wr_opcode> to_wr_opcode(ibv_wr_opcode op) noexcept
{
	return wr_opcode_in(wr_of_ibv, op);
}

constexpr std::optional<xiw_wr_opcode> to_wr_opcode(xiwdv_wr_ext_opcode op) noexcept
{
	return wr_opcode_in(wr_of_dv, op);
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

// The libibverbs names of completion opcodes and statuses (xiw/wr_opcodes.h);
// the extensions' are the driver-private IBV_WC_DRIVERn values of xiwdv.h.
// Indexed by the CQE's opcode: every CQE polled looks its name up.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
inline constexpr auto ibv_wc_of = [] {
	std::array<int, XIW_WC_RECV_RDMA_WITH_IMM + 1> names{};
	names.fill(XIW_NO_VERB);
#define XIW_IBV_WC_OF(wc, ibv, ib) names[wc] = static_cast<int>(ibv);
	XIW_WC_OPCODES(XIW_IBV_WC_OF)
#undef XIW_IBV_WC_OF
	return names;
}();
#pragma GCC diagnostic pop

constexpr std::optional<ibv_wc_opcode> to_wc_opcode(std::uint8_t op) noexcept
{
	if (op >= ibv_wc_of.size() || ibv_wc_of[op] == XIW_NO_VERB)
		return std::nullopt;
	return static_cast<ibv_wc_opcode>(ibv_wc_of[op]);
}

inline constexpr std::array<ibv_wc_status, XIW_WC_GENERAL_ERR + 1> wc_status_table{
#define XIW_IBV_WC_STATUS_OF(status, ibv, ib) ibv,
	XIW_WC_STATUSES(XIW_IBV_WC_STATUS_OF)
#undef XIW_IBV_WC_STATUS_OF
};

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
