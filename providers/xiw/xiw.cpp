// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// xiw provider: registration, device, context, protection domains and
// memory regions.  Completion queues are in cq.cpp, queue pairs in qp.cpp.
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <rdma/ib_user_ioctl_verbs.h>

#include <infiniband/xiwdv.h>

#include "xiw.h"

// xiwdv.h stands alone for applications: what it states again of the
// kernel ABI must say the same.
static_assert(XIWDV_VENDOR_ID == XIW_VENDOR_ID);
static_assert(XIWDV_VENDOR_PART_ID == XIW_VENDOR_PART_ID);
static_assert(XIWDV_DEVICE_FLUSH_GLOBAL == XIW_UVERBS_DEVICE_FLUSH_GLOBAL);
static_assert(XIWDV_DEVICE_FLUSH_PERSISTENT == XIW_UVERBS_DEVICE_FLUSH_PERSISTENT);
static_assert(XIWDV_DEVICE_ATOMIC_WRITE == XIW_UVERBS_DEVICE_ATOMIC_WRITE);

namespace xiw {
namespace {

// ---- device ------------------------------------------------------------

rc::verbs_device *alloc_device(rc::verbs_sysfs_dev *) noexcept
{
	device *dev = create<device>();
	return dev ? &dev->vdev : nullptr;
}

void uninit_device(rc::verbs_device *vdev) noexcept
{
	static_assert(offsetof(device, vdev) == 0);
	destroy(reinterpret_cast<device *>(vdev));
}

// ---- context -----------------------------------------------------------

void free_context(ibv_context *ibctx) noexcept
{
	context *ctx = from_ibv(ibctx);
	rc::verbs_uninit_context(&ctx->vctx);
	std::free(ctx);
}

int query_device_ex(ibv_context *ibctx, const ibv_query_device_ex_input *input,
		    ibv_device_attr_ex *attr, std::size_t attr_size) noexcept
{
	ib_uverbs_ex_query_device_resp resp{};
	std::size_t resp_size = sizeof(resp);
	if (int err = rc::ibv_cmd_query_device_any(ibctx, input, attr, attr_size,
						   &resp, &resp_size))
		return err;

	// The kernel reports the firmware version as major.minor.sub in
	// 16-bit fields; verbs wants a string.
	const std::uint64_t fw = resp.base.fw_ver;
	std::snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		      "%" PRIu64 ".%" PRIu64 ".%" PRIu64, (fw >> 32) & 0xffff,
		      (fw >> 16) & 0xffff, fw & 0xffff);
	return 0;
}

int query_port(ibv_context *ibctx, std::uint8_t port,
	       ibv_port_attr *attr) noexcept
{
	rc::query_port_cmd cmd{};
	return rc::ibv_cmd_query_port(ibctx, port, attr, rc::as_cmd(cmd),
				      sizeof(cmd));
}

// ---- protection domains --------------------------------------------------

ibv_pd *alloc_pd(ibv_context *ibctx) noexcept
{
	owned<ibv_pd> pd = make<ibv_pd>();
	if (!pd)
		return nullptr;
	rc::alloc_pd_cmd cmd{};
	rc::alloc_pd_resp resp{};
	if (int err = rc::ibv_cmd_alloc_pd(ibctx, pd.get(), rc::as_cmd(cmd), sizeof(cmd),
					   rc::as_resp(resp), sizeof(resp)))
		return fail_with(err);
	return pd.release();
}

int dealloc_pd(ibv_pd *pd) noexcept
{
	if (int err = rc::ibv_cmd_dealloc_pd(pd))
		return err;
	destroy(pd);
	return 0;
}

// ---- memory regions ------------------------------------------------------

// Moves the xiw rights of xiwdv.h that the uverbs core would refuse out
// of the verbs access flags into the udata: the Verify rights, and the
// Flush rights unless the kernel takes those itself (Linux 6.2 and
// later).  0 or an errno.
int take_ext_access(int &access, xiw_ureq_reg_mr &req, bool native_flush) noexcept
{
	constexpr int verify = XIWDV_ACCESS_VERIFY_CRC32C | XIWDV_ACCESS_VERIFY_SHA256;
	constexpr int flush = XIWDV_ACCESS_FLUSH_GLOBAL | XIWDV_ACCESS_FLUSH_PERSISTENT;
	if ((access & verify) == verify)
		return EINVAL; // one hash algorithm per region
	if (!native_flush) {
		if (access & XIWDV_ACCESS_FLUSH_GLOBAL)
			req.ext_access |= XIW_ACCESS_FLUSH_GLOBAL;
		if (access & XIWDV_ACCESS_FLUSH_PERSISTENT)
			req.ext_access |= XIW_ACCESS_FLUSH_PERSISTENT;
		access &= ~flush;
	}
	if (access & verify) {
		req.ext_access |= XIW_ACCESS_VERIFY;
		req.verify_hash = access & XIWDV_ACCESS_VERIFY_CRC32C ? XIW_VERIFY_CRC32C
								      : XIW_VERIFY_SHA256;
	}
	access &= ~verify;
	return 0;
}

ibv_mr *reg_mr(ibv_pd *pd, void *addr, std::size_t length,
	       std::uint64_t hca_va, int access) noexcept
{
	rc::reg_mr_cmd<xiw_ureq_reg_mr> cmd{};
	if (int err = take_ext_access(access, cmd.udata,
				      from_ibv(pd->context)->native_flush_access))
		return fail_with(err);
	owned<mr> m = make<mr>();
	if (!m)
		return nullptr;
	rc::reg_mr_resp<xiw_uresp_reg_mr> resp{};
	if (int err = rc::ibv_cmd_reg_mr(pd, addr, length, hca_va, access,
					 &m->vmr, rc::as_cmd(cmd), sizeof(cmd),
					 rc::as_resp(resp), sizeof(resp)))
		return fail_with(err);
	return &m.release()->vmr.ibmr;
}

int dereg_mr(rc::verbs_mr *vmr) noexcept
{
	if (int err = rc::ibv_cmd_dereg_mr(vmr))
		return err;
	destroy(from_verbs(vmr));
	return 0;
}

constexpr rc::verbs_context_ops make_context_ops() noexcept
{
	rc::verbs_context_ops ops{};
	ops.alloc_pd = alloc_pd;
	ops.create_cq = create_cq;
	ops.create_qp = create_qp;
	ops.create_qp_ex = create_qp_ex;
	ops.create_srq = create_srq;
	ops.dealloc_pd = dealloc_pd;
	ops.dereg_mr = dereg_mr;
	ops.destroy_cq = destroy_cq;
	ops.destroy_qp = destroy_qp;
	ops.destroy_srq = destroy_srq;
	ops.free_context = free_context;
	ops.modify_qp = modify_qp;
	ops.modify_srq = modify_srq;
	ops.poll_cq = poll_cq;
	ops.post_recv = post_recv;
	ops.post_send = post_send;
	ops.post_srq_recv = post_srq_recv;
	ops.query_device_ex = query_device_ex;
	ops.query_port = query_port;
	ops.query_qp = query_qp;
	ops.query_srq = query_srq;
	ops.reg_mr = reg_mr;
	ops.req_notify_cq = req_notify_cq;
	return ops;
}

constexpr rc::verbs_context_ops context_ops = make_context_ops();

verbs_context *alloc_context(ibv_device *ibdev, int cmd_fd, void *) noexcept
{
	// libibverbs allocates sizeof(context) zeroed bytes and initialises
	// the verbs_context found at the given offset (passed as a pointer).
	auto *ctx = static_cast<context *>(rc::_verbs_init_and_alloc_context(
		ibdev, cmd_fd, sizeof(context),
		reinterpret_cast<verbs_context *>(offsetof(context, vctx)),
		RDMA_DRIVER_UNKNOWN));
	if (!ctx)
		return nullptr;

	rc::get_context_cmd cmd{};
	rc::get_context_resp<xiw_uresp_alloc_ctx> resp{};
	if (int err = rc::ibv_cmd_get_context(&ctx->vctx, rc::as_cmd(cmd),
					      sizeof(cmd), rc::as_resp(resp),
					      sizeof(resp))) {
		rc::verbs_uninit_context(&ctx->vctx);
		std::free(ctx);
		return fail_with(err);
	}
	ctx->native_flush_access = resp.udata.flags & XIW_CTX_NATIVE_FLUSH_ACCESS;
	rc::verbs_set_ops(&ctx->vctx, &context_ops);
	return &ctx->vctx;
}

// ---- registration ----------------------------------------------------------

// The kernel driver id is RDMA_DRIVER_UNKNOWN (out of tree), so the device
// can only be recognised by its name: "rdma_device:N<ibdev name>" is matched
// against this pattern, as for rdma-core's name matches.
constexpr rc::verbs_match_ent match_table[] = {
	{.driver_data = nullptr,
	 .u = {.modalias = "rdma_device:*N" XIW_DRIVER_NAME "*"},
	 .vendor = 0,
	 .device = 0,
	 .kind = rc::match_kind::modalias},
	{.driver_data = nullptr,
	 .u = {.modalias = nullptr},
	 .vendor = 0,
	 .device = 0,
	 .kind = rc::match_kind::sentinel},
};

constexpr rc::verbs_device_ops device_ops = {
	.name = XIW_DRIVER_NAME,
	.match_min_abi_version = XIW_ABI_VERSION,
	.match_max_abi_version = XIW_ABI_VERSION,
	.match_table = match_table,
	.static_providers = nullptr,
	.match_device = nullptr,
	.alloc_context = alloc_context,
	.import_context = nullptr,
	.alloc_device = alloc_device,
	.uninit_device = uninit_device,
};

// Runs when libibverbs dlopen()s lib<name>-rdmav34.so.
[[gnu::constructor]] void register_provider() noexcept
{
	rc::verbs_register_driver_34(&device_ops);
}

} // namespace
} // namespace xiw
