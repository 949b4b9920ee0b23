// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// unit.provider.*: the provider's own logic on the host - completion
// decoding, work-request opcode translation - and the built provider
// module (what it exports, what it registers when loaded).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <elf.h>
#include <fnmatch.h>

#include <gtest/gtest.h>

#include <infiniband/xiwdv.h>
#include <rdma/xiw-abi.h>

#include "opcodes.h"
#include "rdma_core_abi.h"

namespace rc = xiw::rc;

// ---- completion conversion -------------------------------------------------

TEST(CqeToWc, ReceiveWithImmediateIsNetworkOrder)
{
	xiw_cqe cqe{};
	cqe.wr_id = 0x1122334455667788ull;
	cqe.byte_len = 4096;
	cqe.qp_num = 17;
	cqe.opcode = XIW_WC_RECV_RDMA_WITH_IMM;
	cqe.status = XIW_WC_SUCCESS;
	cqe.flags = XIW_CQE_WITH_IMM;
	cqe.imm_or_inv = 0x01020304;
	ibv_wc wc;
	xiw::cqe_to_wc(cqe, wc);
	EXPECT_EQ(wc.wr_id, cqe.wr_id);
	EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
	EXPECT_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	EXPECT_EQ(wc.byte_len, 4096u);
	EXPECT_EQ(wc.qp_num, 17u);
	EXPECT_EQ(wc.wc_flags, unsigned{IBV_WC_WITH_IMM});
	const unsigned char wire[4] = {1, 2, 3, 4};
	EXPECT_EQ(std::memcmp(&wc.imm_data, wire, 4), 0);
}

TEST(CqeToWc, InvalidateAndErrors)
{
	xiw_cqe cqe{};
	cqe.opcode = XIW_WC_RECV;
	cqe.status = XIW_WC_REM_ACCESS_ERR;
	cqe.flags = XIW_CQE_WITH_INV;
	cqe.imm_or_inv = 0xabcd;
	ibv_wc wc;
	xiw::cqe_to_wc(cqe, wc);
	EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	EXPECT_EQ(wc.wc_flags, unsigned{IBV_WC_WITH_INV});
	EXPECT_EQ(wc.invalidated_rkey, 0xabcdu);

	cqe = {};
	cqe.opcode = XIW_WC_REG_MR; // not for user space: must not pass as success
	xiw::cqe_to_wc(cqe, wc);
	EXPECT_EQ(wc.status, IBV_WC_GENERAL_ERR);
	EXPECT_EQ(wc.vendor_err, unsigned{XIW_WC_REG_MR});

	cqe = {};
	cqe.opcode = XIW_WC_SEND;
	cqe.status = 200; // unknown status
	xiw::cqe_to_wc(cqe, wc);
	EXPECT_EQ(wc.status, IBV_WC_GENERAL_ERR);
}

// A verbs imm_data crosses the wire as a 64-bit value and comes back out of
// the receiver's completion unchanged; xiwdv_wc_imm64() sees all 64 bits.
TEST(CqeToWc, ImmediateRoundTrip)
{
	const unsigned char sent[4] = {0xde, 0xad, 0xbe, 0xef};
	__be32 imm_data;
	std::memcpy(&imm_data, sent, 4);
	const std::uint64_t wire = xiw::imm64_of(imm_data);
	EXPECT_EQ(wire, 0xdeadbeefull);

	xiw_cqe cqe{};
	cqe.opcode = XIW_WC_RECV;
	cqe.flags = XIW_CQE_WITH_IMM;
	cqe.imm_or_inv = static_cast<std::uint32_t>(wire);
	cqe.imm_high = static_cast<std::uint32_t>(wire >> 32);
	ibv_wc wc;
	xiw::cqe_to_wc(cqe, wc);
	EXPECT_EQ(std::memcmp(&wc.imm_data, sent, 4), 0);
	EXPECT_EQ(xiwdv_wc_imm64(&wc), wire);

	cqe.imm_high = 0x01234567;
	xiw::cqe_to_wc(cqe, wc);
	EXPECT_EQ(xiwdv_wc_imm64(&wc), 0x01234567deadbeefull);
}

TEST(WrOpcode, ExtensionsNeedNegotiation)
{
	for (auto op : {XIW_WR_SEND, XIW_WR_SEND_WITH_INV, XIW_WR_RDMA_WRITE,
			XIW_WR_RDMA_READ})
		EXPECT_FALSE(xiw_wr_is(op, XIW_WRF_EXT));
	for (auto op : {XIW_WR_SEND_WITH_IMM, XIW_WR_RDMA_WRITE_WITH_IMM,
			XIW_WR_ATOMIC_FETCH_ADD, XIW_WR_ATOMIC_CMP_SWAP,
			XIW_WR_MASKED_FETCH_ADD, XIW_WR_MASKED_CMP_SWAP,
			XIW_WR_IMMEDIATE_DATA, XIW_WR_FLUSH, XIW_WR_ATOMIC_WRITE,
			XIW_WR_VERIFY})
		EXPECT_TRUE(xiw_wr_is(op, XIW_WRF_EXT));
}

// rdma-core >= 45's numbers for Flush, the xiwdv names for them on 44.
TEST(WrOpcode, PlacementExtensions)
{
	EXPECT_EQ(xiw::to_wr_opcode(XIWDV_WR_FLUSH), XIW_WR_FLUSH);
	EXPECT_EQ(static_cast<int>(XIWDV_WR_FLUSH), 14);
	EXPECT_EQ(xiw::to_wr_opcode(IBV_WR_ATOMIC_WRITE), XIW_WR_ATOMIC_WRITE);
	EXPECT_EQ(xiw::to_wr_opcode(XIWDV_WR_VERIFY), XIW_WR_VERIFY);
	EXPECT_EQ(xiw::to_wr_opcode(XIWDV_WR_FLUSH_EXT), XIW_WR_FLUSH);
	EXPECT_FALSE(xiw::to_wr_opcode(static_cast<xiwdv_wr_ext_opcode>(99)).has_value());
	for (auto op : {XIW_WR_FLUSH, XIW_WR_VERIFY,
			XIW_WR_ATOMIC_WRITE, XIW_WR_RDMA_READ})
		EXPECT_TRUE(xiw_wr_is(op, XIW_WRF_REQUEST));
	EXPECT_FALSE(xiw_wr_is(XIW_WR_RDMA_WRITE_WITH_IMM, XIW_WRF_REQUEST));

	xiw_cqe cqe{};
	ibv_wc wc;
	cqe.opcode = XIW_WC_FLUSH;
	xiw::cqe_to_wc(cqe, wc);
	EXPECT_EQ(wc.opcode, XIWDV_WC_FLUSH);
	EXPECT_EQ(static_cast<int>(wc.opcode), 8);
	cqe.opcode = XIW_WC_ATOMIC_WRITE;
	xiw::cqe_to_wc(cqe, wc);
	EXPECT_EQ(wc.opcode, IBV_WC_ATOMIC_WRITE);
	cqe.opcode = XIW_WC_VERIFY;
	xiw::cqe_to_wc(cqe, wc);
	EXPECT_EQ(wc.opcode, XIWDV_WC_VERIFY);
}

// The capability bits of xiwdv.h are the kernel's (xiw-abi.h).
static_assert(unsigned{XIWDV_CAP_ATOMICS} == unsigned{XIW_CAP_ATOMICS});
static_assert(XIWDV_DEVICE_FLUSH_GLOBAL == XIW_UVERBS_DEVICE_FLUSH_GLOBAL);
static_assert(XIWDV_DEVICE_FLUSH_PERSISTENT == XIW_UVERBS_DEVICE_FLUSH_PERSISTENT);
static_assert(XIWDV_DEVICE_ATOMIC_WRITE == XIW_UVERBS_DEVICE_ATOMIC_WRITE);
static_assert(unsigned{XIWDV_CAP_IMMEDIATE} == unsigned{XIW_CAP_IMMEDIATE});
static_assert(unsigned{XIWDV_CAP_FLUSH_GLOBAL} == unsigned{XIW_CAP_FLUSH_GLOBAL});
static_assert(unsigned{XIWDV_CAP_FLUSH_PERSISTENT} == unsigned{XIW_CAP_FLUSH_PERSISTENT});
static_assert(unsigned{XIWDV_CAP_ATOMIC_WRITE} == unsigned{XIW_CAP_ATOMIC_WRITE});
static_assert(unsigned{XIWDV_CAP_VERIFY_CRC32C} == unsigned{XIW_CAP_VERIFY_CRC32C});
static_assert(unsigned{XIWDV_CAP_VERIFY_SHA256} == unsigned{XIW_CAP_VERIFY_SHA256});
static_assert(XIWDV_FLUSH_GLOBAL == XIW_FLUSH_GLOBAL);
static_assert(XIWDV_FLUSH_PERSISTENT == XIW_FLUSH_PERSISTENT);
static_assert(XIWDV_FLUSH_RANGE == XIW_FLUSH_RANGE);
static_assert(XIWDV_FLUSH_MR == XIW_FLUSH_MR);
static_assert(XIWDV_VERIFY_MAX_HASH == XIW_VERIFY_MAX_HASH);

// The verbs atomics are the masked ones with neutral masks (RFC 7306 §5.1).
TEST(WrOpcode, VerbsAtomicsUseNeutralMasks)
{
	const auto faa = xiw::fetch_add_operands(5);
	EXPECT_EQ(faa.compare_or_add, 5u);
	EXPECT_EQ(faa.swap_or_boundary_mask, 0u); // one 64-bit field
	const auto cas = xiw::cmp_swap_operands(1, 2);
	EXPECT_EQ(cas.compare_or_add, 1u);
	EXPECT_EQ(cas.swap, 2u);
	EXPECT_EQ(cas.compare_mask, ~std::uint64_t{0});
	EXPECT_EQ(cas.swap_or_boundary_mask, ~std::uint64_t{0});
}

// The verbs columns of XIW_WR_OPCODES, walked: each libibverbs and xiwdv
// opcode a row names posts that row (so no two rows name the same one),
// the kernel-only rows name none, every other row can be posted, every
// xiwdv opcode has a row, and no other libibverbs value posts anything.
TEST(WrOpcode, VerbsColumnsWalk)
{
	std::array<int, 32> ibv_rows{}, dv_rows{};
	for (unsigned int wr = 0; wr < XIW_WR_NUM_OPCODES; wr++) {
		SCOPED_TRACE(xiw_wr_lookup(wr)->name);
		const int ibv = xiw::ibv_wr_opcodes[wr];
		const int dv = xiw::dv_wr_opcodes[wr];
		if (xiw_wr_is(wr, XIW_WRF_KERNEL)) {
			EXPECT_EQ(ibv, XIW_NO_VERB);
			EXPECT_EQ(dv, XIW_NO_VERB);
			continue;
		}
		EXPECT_TRUE(ibv != XIW_NO_VERB || dv != XIW_NO_VERB);
		if (ibv != XIW_NO_VERB) {
			ibv_rows.at(static_cast<std::size_t>(ibv))++;
			EXPECT_EQ(xiw::to_wr_opcode(static_cast<ibv_wr_opcode>(ibv)), wr);
		}
		if (dv != XIW_NO_VERB) {
			dv_rows.at(static_cast<std::size_t>(dv))++;
			EXPECT_EQ(xiw::to_wr_opcode(static_cast<xiwdv_wr_ext_opcode>(dv)), wr);
		}
	}
	for (std::size_t v = 0; v < ibv_rows.size(); v++) {
		EXPECT_LE(ibv_rows[v], 1) << "libibverbs opcode " << v;
		if (!ibv_rows[v]) {
			EXPECT_FALSE(xiw::to_wr_opcode(static_cast<ibv_wr_opcode>(v)).has_value())
				<< "libibverbs opcode " << v;
		}
	}
	for (auto dv : {XIWDV_WR_MASKED_FETCH_ADD, XIWDV_WR_MASKED_CMP_SWAP,
			XIWDV_WR_IMMEDIATE_DATA, XIWDV_WR_RDMA_WRITE_WITH_IMM64,
			XIWDV_WR_SEND_WITH_IMM64, XIWDV_WR_VERIFY, XIWDV_WR_FLUSH_EXT}) {
		EXPECT_EQ(dv_rows.at(static_cast<std::size_t>(dv)), 1) << "xiwdv opcode " << dv;
		EXPECT_TRUE(xiw::to_wr_opcode(dv).has_value()) << "xiwdv opcode " << dv;
	}
}

TEST(WrOpcode, UnsupportedOpcodesAreRejected)
{
	EXPECT_FALSE(xiw::to_wr_opcode(IBV_WR_BIND_MW).has_value());
	EXPECT_FALSE(xiw::to_wr_opcode(IBV_WR_LOCAL_INV).has_value());
	EXPECT_FALSE(xiw::to_wr_opcode(IBV_WR_TSO).has_value());
	EXPECT_FALSE(xiw::to_wr_opcode(static_cast<ibv_wr_opcode>(99)).has_value());
	EXPECT_EQ(xiw::to_wr_opcode(IBV_WR_RDMA_READ), XIW_WR_RDMA_READ);
}

// ---- the built provider module ---------------------------------------------

namespace {

const rc::verbs_device_ops *registered_ops;
int registrations;

// Defined global symbols in the .dynsym of an ELF64 shared object.
std::vector<std::string> exported_symbols(const char *path)
{
	std::ifstream in(path, std::ios::binary);
	std::vector<char> img((std::istreambuf_iterator<char>(in)),
			      std::istreambuf_iterator<char>());
	std::vector<std::string> out;
	if (img.size() < sizeof(Elf64_Ehdr))
		return {"<unreadable>"};
	Elf64_Ehdr eh;
	std::memcpy(&eh, img.data(), sizeof(eh));
	if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return {"<not ELF64>"};
	auto shdr = [&](std::size_t i) {
		Elf64_Shdr sh;
		std::memcpy(&sh, img.data() + eh.e_shoff + i * eh.e_shentsize, sizeof(sh));
		return sh;
	};
	for (std::size_t i = 0; i < eh.e_shnum; ++i) {
		const Elf64_Shdr sym = shdr(i);
		if (sym.sh_type != SHT_DYNSYM)
			continue;
		const Elf64_Shdr str = shdr(sym.sh_link);
		for (std::size_t off = sym.sh_entsize; off + sym.sh_entsize <= sym.sh_size;
		     off += sym.sh_entsize) {
			Elf64_Sym s;
			std::memcpy(&s, img.data() + sym.sh_offset + off, sizeof(s));
			const int bind = ELF64_ST_BIND(s.st_info);
			if (s.st_shndx == SHN_UNDEF ||
			    (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE))
				continue;
			out.emplace_back(img.data() + str.sh_offset + s.st_name);
		}
	}
	return out;
}

} // namespace

// Stands in for libibverbs: the executable's definition comes first in the
// global scope, so the provider's constructor calls this on dlopen().
void rc::verbs_register_driver_34(const rc::verbs_device_ops *ops)
{
	registered_ops = ops;
	++registrations;
}

TEST(ProviderModule, ExportsNothing)
{
	const auto syms = exported_symbols(XIW_PROVIDER_PATH);
	EXPECT_TRUE(syms.empty()) << "first unexpected export: " << syms.front();
}

TEST(ProviderModule, RegistersOnLoad)
{
	void *h = dlopen(XIW_PROVIDER_PATH, RTLD_NOW | RTLD_LOCAL);
	ASSERT_NE(h, nullptr) << dlerror();
	EXPECT_EQ(dlsym(h, "verbs_provider_xiw"), nullptr);

	ASSERT_EQ(registrations, 1);
	const rc::verbs_device_ops &ops = *registered_ops;
	EXPECT_STREQ(ops.name, "xiw");
	EXPECT_EQ(ops.match_min_abi_version, unsigned{XIW_ABI_VERSION});
	EXPECT_EQ(ops.match_max_abi_version, unsigned{XIW_ABI_VERSION});
	EXPECT_NE(ops.alloc_context, nullptr);
	EXPECT_NE(ops.alloc_device, nullptr);
	EXPECT_NE(ops.uninit_device, nullptr);
	EXPECT_EQ(ops.import_context, nullptr);
	EXPECT_EQ(ops.match_device, nullptr);
	EXPECT_EQ(ops.static_providers, nullptr);

	// libibverbs matches "rdma_device:N<name>" against the modalias table.
	ASSERT_NE(ops.match_table, nullptr);
	const rc::verbs_match_ent &m = ops.match_table[0];
	ASSERT_EQ(m.kind, rc::match_kind::modalias);
	EXPECT_EQ(fnmatch(m.u.modalias, "rdma_device:Nxiw0", 0), 0);
	EXPECT_EQ(fnmatch(m.u.modalias, "rdma_device:Nxiw12", 0), 0);
	EXPECT_NE(fnmatch(m.u.modalias, "rdma_device:Nsiw0", 0), 0);
	EXPECT_NE(fnmatch(m.u.modalias, "rdma_device:Nrxe0", 0), 0);
	EXPECT_EQ(ops.match_table[1].kind, rc::match_kind::sentinel);

	rc::verbs_device *dev = ops.alloc_device(nullptr);
	ASSERT_NE(dev, nullptr);
	EXPECT_EQ(dev->ops, nullptr); // libibverbs fills it in
	ops.uninit_device(dev);

	dlclose(h);
}
