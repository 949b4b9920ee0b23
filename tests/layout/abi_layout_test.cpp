// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Layout of the interfaces the xiw provider shares with libibverbs
// (rdma-core 44, IBVERBS_PRIVATE_34) and with the xiw kernel module:
// compile-time checks only, built into xiw_provider_tests (a layout that
// changed fails the build).
//
// The rdma-core numbers were measured by compiling rdma-core v44.0's own
// headers on x86_64 (libibverbs/driver.h for verbs_*; libibverbs/kern-abi.h
// for the command buffers; libibverbs/verbs.h for the public structs).
#include <cstddef>

#include <rdma/xiw-abi.h>

#include "rdma_core_abi.h"

namespace rc = xiw::rc;

// ---- rdma-core 44 private provider ABI ----------------------------------

// struct verbs_device_ops (libibverbs/driver.h)
static_assert(sizeof(rc::verbs_device_ops) == 72);
static_assert(offsetof(rc::verbs_device_ops, name) == 0);
static_assert(offsetof(rc::verbs_device_ops, match_min_abi_version) == 8);
static_assert(offsetof(rc::verbs_device_ops, match_max_abi_version) == 12);
static_assert(offsetof(rc::verbs_device_ops, match_table) == 16);
static_assert(offsetof(rc::verbs_device_ops, static_providers) == 24);
static_assert(offsetof(rc::verbs_device_ops, match_device) == 32);
static_assert(offsetof(rc::verbs_device_ops, alloc_context) == 40);
static_assert(offsetof(rc::verbs_device_ops, import_context) == 48);
static_assert(offsetof(rc::verbs_device_ops, alloc_device) == 56);
static_assert(offsetof(rc::verbs_device_ops, uninit_device) == 64);

// struct verbs_device: the public ibv_device (664 B) comes first.
static_assert(sizeof(ibv_device) == 664);
static_assert(sizeof(rc::verbs_device) == 712);
static_assert(offsetof(rc::verbs_device, device) == 0);
static_assert(offsetof(rc::verbs_device, ops) == 664);
static_assert(offsetof(rc::verbs_device, refcount) == 672);
static_assert(offsetof(rc::verbs_device, entry) == 680);
static_assert(offsetof(rc::verbs_device, sysfs) == 696);
static_assert(offsetof(rc::verbs_device, core_support) == 704);

// struct verbs_match_ent
static_assert(sizeof(rc::verbs_match_ent) == 24);
static_assert(offsetof(rc::verbs_match_ent, driver_data) == 0);
static_assert(offsetof(rc::verbs_match_ent, u) == 8);
static_assert(offsetof(rc::verbs_match_ent, vendor) == 16);
static_assert(offsetof(rc::verbs_match_ent, device) == 18);
static_assert(offsetof(rc::verbs_match_ent, kind) == 20);

// struct verbs_context_ops: 76 pointers, sorted by name.
static_assert(sizeof(rc::verbs_context_ops) == 608);
static_assert(XIW_RC_NUM_CONTEXT_OPS == 76);
static_assert(offsetof(rc::verbs_context_ops, advise_mr) == 0);
static_assert(offsetof(rc::verbs_context_ops, alloc_pd) == 40);
static_assert(offsetof(rc::verbs_context_ops, async_event) == 56);
static_assert(offsetof(rc::verbs_context_ops, create_cq) == 120);
static_assert(offsetof(rc::verbs_context_ops, create_cq_ex) == 128);
static_assert(offsetof(rc::verbs_context_ops, create_qp) == 152);
static_assert(offsetof(rc::verbs_context_ops, create_qp_ex) == 160);
static_assert(offsetof(rc::verbs_context_ops, dealloc_pd) == 208);
static_assert(offsetof(rc::verbs_context_ops, dereg_mr) == 224);
static_assert(offsetof(rc::verbs_context_ops, destroy_cq) == 248);
static_assert(offsetof(rc::verbs_context_ops, destroy_qp) == 272);
static_assert(offsetof(rc::verbs_context_ops, free_context) == 312);
static_assert(offsetof(rc::verbs_context_ops, modify_qp) == 376);
static_assert(offsetof(rc::verbs_context_ops, poll_cq) == 424);
static_assert(offsetof(rc::verbs_context_ops, post_recv) == 432);
static_assert(offsetof(rc::verbs_context_ops, post_send) == 440);
static_assert(offsetof(rc::verbs_context_ops, query_device_ex) == 464);
static_assert(offsetof(rc::verbs_context_ops, query_port) == 480);
static_assert(offsetof(rc::verbs_context_ops, query_qp) == 488);
static_assert(offsetof(rc::verbs_context_ops, reg_mr) == 544);
static_assert(offsetof(rc::verbs_context_ops, req_notify_cq) == 552);
static_assert(offsetof(rc::verbs_context_ops, unimport_pd) == 600);

// Object wrappers libibverbs expects at offset 0 of provider objects.
static_assert(sizeof(ibv_mr) == 48);
static_assert(sizeof(rc::verbs_mr) == 56);
static_assert(offsetof(rc::verbs_mr, mr_type) == 48);
static_assert(offsetof(rc::verbs_mr, access) == 52);
static_assert(sizeof(ibv_qp) == 160);
// ibv_qp_ex as the verbs.h built against has it (wr_flush since 45).
static_assert(sizeof(ibv_qp_ex) == 352 + XIW_RC_QP_EX_GROWTH);
static_assert(sizeof(rc::verbs_qp) == 368 + XIW_RC_QP_EX_GROWTH);
static_assert(offsetof(rc::verbs_qp, qp) == 0);
static_assert(offsetof(rc::verbs_qp, qp_ex) == 0);
static_assert(offsetof(rc::verbs_qp, comp_mask) == 352 + XIW_RC_QP_EX_GROWTH);
static_assert(offsetof(rc::verbs_qp, xrcd) == 360 + XIW_RC_QP_EX_GROWTH);
static_assert(sizeof(ibv_cq) == 128);
static_assert(sizeof(ibv_cq_ex) == 288);
static_assert(sizeof(rc::verbs_cq) == 288);
static_assert(offsetof(rc::verbs_cq, cq) == 0);
// verbs_context (public) ends with the ibv_context the app sees.
static_assert(sizeof(verbs_context) == 648);
static_assert(offsetof(verbs_context, context) == 648 - sizeof(ibv_context));

// Command buffers: 8-byte header + core payload (libibverbs/kern-abi.h).
static_assert(sizeof(ib_uverbs_cmd_hdr) == 8);
static_assert(sizeof(rc::get_context_cmd) == 16);
static_assert(sizeof(rc::query_port_cmd) == 24);
static_assert(sizeof(rc::alloc_pd_cmd) == 16);
static_assert(sizeof(rc::reg_mr_cmd<rc::no_udata>) == 48);
static_assert(sizeof(rc::create_cq_cmd) == 40);
static_assert(sizeof(rc::create_qp_cmd) == 64);
static_assert(sizeof(rc::modify_qp_cmd) == 120);
static_assert(sizeof(rc::query_qp_cmd) == 24);
static_assert(sizeof(rc::create_srq_cmd) == 40);
static_assert(sizeof(rc::modify_srq_cmd) == 24);
static_assert(sizeof(rc::query_srq_cmd) == 24);
static_assert(sizeof(ib_uverbs_get_context_resp) == 8);
static_assert(sizeof(rc::alloc_pd_resp) == 4);
static_assert(sizeof(ib_uverbs_reg_mr_resp) == 12);
static_assert(sizeof(ib_uverbs_create_cq_resp) == 8);
static_assert(sizeof(ib_uverbs_create_qp_resp) == 32);
static_assert(sizeof(ib_uverbs_create_srq_resp) == 16);
static_assert(sizeof(ib_uverbs_ex_query_device_resp) == 304);

// xiw udata sits right after the core part, with no padding: libibverbs
// passes (cmd + core size) and (resp + core resp size) to the kernel as the
// driver's udata.
static_assert(rc::udata_follows_core<rc::reg_mr_cmd<xiw_ureq_reg_mr>>(48));
static_assert(sizeof(rc::reg_mr_cmd<xiw_ureq_reg_mr>) == 56);
static_assert(rc::udata_follows_core<rc::get_context_resp<xiw_uresp_alloc_ctx>>(8));
static_assert(rc::udata_follows_core<rc::reg_mr_resp<xiw_uresp_reg_mr>>(12));
static_assert(rc::udata_follows_core<rc::create_cq_resp<xiw_uresp_create_cq>>(8));
static_assert(rc::udata_follows_core<rc::create_qp_resp<xiw_uresp_create_qp>>(32));
static_assert(rc::udata_follows_core<rc::create_srq_resp<xiw_uresp_create_srq>>(16));

// ---- xiw-abi.h -----------------------------------------------------------

static_assert(sizeof(xiw_sge) == sizeof(ibv_sge));
static_assert(offsetof(xiw_sge, addr) == offsetof(ibv_sge, addr));
static_assert(offsetof(xiw_sge, length) == offsetof(ibv_sge, length));
static_assert(offsetof(xiw_sge, lkey) == offsetof(ibv_sge, lkey));
static_assert(sizeof(xiw_sqe) == 256);
static_assert(offsetof(xiw_sqe, operand) == 32);
static_assert(offsetof(xiw_sqe, sge) == 64);
static_assert(sizeof(xiw_rqe) == 128);
static_assert(offsetof(xiw_rqe, sge) == 16);
static_assert(sizeof(xiw_cqe) == 32);
static_assert(offsetof(xiw_cqe, opcode) == 16);
static_assert(offsetof(xiw_cqe, imm_or_inv) == 20);
static_assert(offsetof(xiw_cqe, vendor_err) == 28);
static_assert(sizeof(xiw_ring_ctrl) == 192);
static_assert(sizeof(xiw_ring_ctrl) <= XIW_RING_ENTRIES_OFFSET);
static_assert(XIW_RING_ENTRIES_OFFSET % alignof(xiw_sqe) == 0);
static_assert(offsetof(xiw_ring_ctrl, producer) == 0);
static_assert(offsetof(xiw_ring_ctrl, post_mode) == 4);
static_assert(offsetof(xiw_ring_ctrl, consumer) == 64);
static_assert(offsetof(xiw_ring_ctrl, notify) == 128);
static_assert(offsetof(xiw_ring_ctrl, conn_flags) == 132);
static_assert(offsetof(xiw_cqe, imm_high) == 24);
static_assert(sizeof(xiw_uresp_alloc_ctx) == 8);
static_assert(sizeof(xiw_uresp_create_cq) == 16);
static_assert(sizeof(xiw_uresp_create_qp) == 32);
static_assert(sizeof(xiw_uresp_create_srq) == 16);
static_assert(sizeof(xiw_ureq_reg_mr) == 8);
static_assert(sizeof(xiw_uresp_reg_mr) == 8);
