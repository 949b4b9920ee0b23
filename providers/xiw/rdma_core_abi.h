/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The part of libibverbs' private provider interface (IBVERBS_PRIVATE_34,
 * rdma-core 44) that the xiw provider uses.
 *
 * libibverbs does not install its provider header, so this file declares
 * what xiw needs: the device/context operation tables, the verbs_* object
 * wrappers that libibverbs allocates inside provider objects, the buffers
 * handed to the ibv_cmd_* helpers and the prototypes of the exported helpers.
 * The layouts were checked against rdma-core v44.0 compiled on x86_64; the
 * numbers are collected in the XIW_RC_* constants below and asserted both
 * here and, when building with -DRDMA_CORE_SOURCE_DIR=..., against the real
 * rdma-core headers by rdma_core_check.c.
 *
 * The first part (constants and the operation list) is valid C and C++.
 * The declarations are C++ only and live in namespace xiw::rc, so they never
 * clash with rdma-core's own global definitions.
 */
#ifndef XIW_RDMA_CORE_ABI_H
#define XIW_RDMA_CORE_ABI_H

/* ------------------------------------------------------------------------
 * Layout facts of rdma-core 44 (LP64).  Shared by C and C++.
 * ------------------------------------------------------------------------ */

/* The private ABI version: the provider must be named lib<name>-rdmav34.so
 * and register itself through verbs_register_driver_34(). */
#define XIW_RC_PABI_VERSION 34

#define XIW_RC_SIZEOF_VERBS_DEVICE_OPS 72
#define XIW_RC_SIZEOF_VERBS_DEVICE 712
#define XIW_RC_SIZEOF_VERBS_CONTEXT_OPS 608
#define XIW_RC_SIZEOF_VERBS_MATCH_ENT 24
#define XIW_RC_SIZEOF_VERBS_MR 56
/*
 * rdma-core 45 appended wr_flush to struct ibv_qp_ex, which verbs_qp
 * embeds, and kept the private ABI version: verbs_qp's size and the
 * offsets behind ibv_qp_ex depend on the verbs.h built against, and a
 * provider works only with the libibverbs whose headers it was built with.
 */
#ifdef XIW_HAVE_IBV_WR_FLUSH
#define XIW_RC_QP_EX_GROWTH 8
#else
#define XIW_RC_QP_EX_GROWTH 0
#endif
#define XIW_RC_SIZEOF_VERBS_QP (368 + XIW_RC_QP_EX_GROWTH)
#define XIW_RC_SIZEOF_VERBS_CQ 288

/* struct verbs_device_ops */
#define XIW_RC_OFF_DEVOPS_NAME 0
#define XIW_RC_OFF_DEVOPS_MATCH_MIN_ABI 8
#define XIW_RC_OFF_DEVOPS_MATCH_MAX_ABI 12
#define XIW_RC_OFF_DEVOPS_MATCH_TABLE 16
#define XIW_RC_OFF_DEVOPS_STATIC_PROVIDERS 24
#define XIW_RC_OFF_DEVOPS_MATCH_DEVICE 32
#define XIW_RC_OFF_DEVOPS_ALLOC_CONTEXT 40
#define XIW_RC_OFF_DEVOPS_IMPORT_CONTEXT 48
#define XIW_RC_OFF_DEVOPS_ALLOC_DEVICE 56
#define XIW_RC_OFF_DEVOPS_UNINIT_DEVICE 64

/* struct verbs_device */
#define XIW_RC_OFF_VDEV_OPS 664
#define XIW_RC_OFF_VDEV_REFCOUNT 672
#define XIW_RC_OFF_VDEV_ENTRY 680
#define XIW_RC_OFF_VDEV_SYSFS 696
#define XIW_RC_OFF_VDEV_CORE_SUPPORT 704

/* struct verbs_match_ent */
#define XIW_RC_OFF_MATCH_DRIVER_DATA 0
#define XIW_RC_OFF_MATCH_U 8
#define XIW_RC_OFF_MATCH_VENDOR 16
#define XIW_RC_OFF_MATCH_DEVICE 18
#define XIW_RC_OFF_MATCH_KIND 20
#define XIW_RC_MATCH_SENTINEL 0
#define XIW_RC_MATCH_MODALIAS 2

/* struct verbs_mr, verbs_qp */
#define XIW_RC_OFF_VMR_MR_TYPE 48
#define XIW_RC_OFF_VMR_ACCESS 52
#define XIW_RC_OFF_VQP_COMP_MASK (352 + XIW_RC_QP_EX_GROWTH)
#define XIW_RC_OFF_VQP_XRCD (360 + XIW_RC_QP_EX_GROWTH)
/* verbs_qp.comp_mask: the QP is an ibv_qp_ex (ibv_qp_to_qp_ex() returns it) */
#define XIW_RC_VERBS_QP_EX 2

/*
 * Sizes of the write() command buffers the ibv_cmd_* helpers take: the
 * 8-byte ib_uverbs_cmd_hdr followed by the core payload of the command.
 * Provider udata, if any, follows directly.
 */
#define XIW_RC_SIZEOF_CMD_GET_CONTEXT 16
#define XIW_RC_SIZEOF_CMD_QUERY_PORT 24
#define XIW_RC_SIZEOF_CMD_ALLOC_PD 16
#define XIW_RC_SIZEOF_CMD_REG_MR 48
#define XIW_RC_SIZEOF_CMD_CREATE_CQ 40
#define XIW_RC_SIZEOF_CMD_CREATE_QP 64
#define XIW_RC_SIZEOF_CMD_MODIFY_QP 120
#define XIW_RC_SIZEOF_CMD_QUERY_QP 24
#define XIW_RC_SIZEOF_CMD_CREATE_SRQ 40
#define XIW_RC_SIZEOF_CMD_MODIFY_SRQ 24
#define XIW_RC_SIZEOF_CMD_QUERY_SRQ 24
/* Core responses; provider udata follows directly. */
#define XIW_RC_SIZEOF_RESP_GET_CONTEXT 8
#define XIW_RC_SIZEOF_RESP_ALLOC_PD 4
#define XIW_RC_SIZEOF_RESP_REG_MR 12
#define XIW_RC_SIZEOF_RESP_CREATE_CQ 8
#define XIW_RC_SIZEOF_RESP_CREATE_QP 32
#define XIW_RC_SIZEOF_RESP_CREATE_SRQ 16
#define XIW_RC_SIZEOF_RESP_EX_QUERY_DEVICE 304

/*
 * struct verbs_context_ops: every entry in rdma-core 44's order (the struct
 * is kept sorted by name there).  X(name) is expanded once per entry.
 */
#define XIW_RC_CONTEXT_OPS(X)                                                  \
	X(advise_mr) X(alloc_dm) X(alloc_mw) X(alloc_null_mr)                  \
	X(alloc_parent_domain) X(alloc_pd) X(alloc_td) X(async_event)          \
	X(attach_counters_point_flow) X(attach_mcast) X(bind_mw)               \
	X(close_xrcd) X(cq_event) X(create_ah) X(create_counters)              \
	X(create_cq) X(create_cq_ex) X(create_flow)                            \
	X(create_flow_action_esp) X(create_qp) X(create_qp_ex)                 \
	X(create_rwq_ind_table) X(create_srq) X(create_srq_ex) X(create_wq)    \
	X(dealloc_mw) X(dealloc_pd) X(dealloc_td) X(dereg_mr) X(destroy_ah)    \
	X(destroy_counters) X(destroy_cq) X(destroy_flow)                      \
	X(destroy_flow_action) X(destroy_qp) X(destroy_rwq_ind_table)          \
	X(destroy_srq) X(destroy_wq) X(detach_mcast) X(free_context)           \
	X(free_dm) X(get_srq_num) X(import_dm) X(import_mr) X(import_pd)       \
	X(modify_cq) X(modify_flow_action_esp) X(modify_qp)                    \
	X(modify_qp_rate_limit) X(modify_srq) X(modify_wq) X(open_qp)          \
	X(open_xrcd) X(poll_cq) X(post_recv) X(post_send) X(post_srq_ops)      \
	X(post_srq_recv) X(query_device_ex) X(query_ece) X(query_port)         \
	X(query_qp) X(query_qp_data_in_order) X(query_rt_values) X(query_srq)  \
	X(read_counters) X(reg_dm_mr) X(reg_dmabuf_mr) X(reg_mr)               \
	X(req_notify_cq) X(rereg_mr) X(resize_cq) X(set_ece) X(unimport_dm)    \
	X(unimport_mr) X(unimport_pd)

/* XIW_RC_OPIDX_<name>: the index of each entry; XIW_RC_NUM_CONTEXT_OPS. */
#define XIW_RC_OPIDX_(name) XIW_RC_OPIDX_##name,
enum { XIW_RC_CONTEXT_OPS(XIW_RC_OPIDX_) XIW_RC_NUM_CONTEXT_OPS };
#undef XIW_RC_OPIDX_

/*
 * Checks of the real rdma-core definitions against the facts above.  Only
 * for a C translation unit that included rdma-core's <infiniband/driver.h>
 * (see rdma_core_check.c); rdma-core's private headers are not valid C++.
 */
#if defined(XIW_USE_RDMA_CORE_HEADERS) && !defined(__cplusplus)
#include <stddef.h>
#define XIW_RC_CHECK(cond) _Static_assert(cond, #cond)
#define XIW_RC_CHECK_OP_(name)                                                  \
	XIW_RC_CHECK(offsetof(struct verbs_context_ops, name) ==               \
		     XIW_RC_OPIDX_##name * sizeof(void *));
XIW_RC_CONTEXT_OPS(XIW_RC_CHECK_OP_)
#undef XIW_RC_CHECK_OP_
XIW_RC_CHECK(IBVERBS_PABI_VERSION == XIW_RC_PABI_VERSION);
XIW_RC_CHECK(sizeof(struct verbs_context_ops) == XIW_RC_SIZEOF_VERBS_CONTEXT_OPS);
XIW_RC_CHECK(XIW_RC_NUM_CONTEXT_OPS * sizeof(void *) == XIW_RC_SIZEOF_VERBS_CONTEXT_OPS);
XIW_RC_CHECK(sizeof(struct verbs_device_ops) == XIW_RC_SIZEOF_VERBS_DEVICE_OPS);
XIW_RC_CHECK(offsetof(struct verbs_device_ops, name) == XIW_RC_OFF_DEVOPS_NAME);
XIW_RC_CHECK(offsetof(struct verbs_device_ops, match_min_abi_version) == XIW_RC_OFF_DEVOPS_MATCH_MIN_ABI);
XIW_RC_CHECK(offsetof(struct verbs_device_ops, match_max_abi_version) == XIW_RC_OFF_DEVOPS_MATCH_MAX_ABI);
XIW_RC_CHECK(offsetof(struct verbs_device_ops, match_table) == XIW_RC_OFF_DEVOPS_MATCH_TABLE);
XIW_RC_CHECK(offsetof(struct verbs_device_ops, static_providers) == XIW_RC_OFF_DEVOPS_STATIC_PROVIDERS);
XIW_RC_CHECK(offsetof(struct verbs_device_ops, match_device) == XIW_RC_OFF_DEVOPS_MATCH_DEVICE);
XIW_RC_CHECK(offsetof(struct verbs_device_ops, alloc_context) == XIW_RC_OFF_DEVOPS_ALLOC_CONTEXT);
XIW_RC_CHECK(offsetof(struct verbs_device_ops, import_context) == XIW_RC_OFF_DEVOPS_IMPORT_CONTEXT);
XIW_RC_CHECK(offsetof(struct verbs_device_ops, alloc_device) == XIW_RC_OFF_DEVOPS_ALLOC_DEVICE);
XIW_RC_CHECK(offsetof(struct verbs_device_ops, uninit_device) == XIW_RC_OFF_DEVOPS_UNINIT_DEVICE);
XIW_RC_CHECK(sizeof(struct verbs_device) == XIW_RC_SIZEOF_VERBS_DEVICE);
XIW_RC_CHECK(offsetof(struct verbs_device, device) == 0);
XIW_RC_CHECK(offsetof(struct verbs_device, ops) == XIW_RC_OFF_VDEV_OPS);
XIW_RC_CHECK(offsetof(struct verbs_device, refcount) == XIW_RC_OFF_VDEV_REFCOUNT);
XIW_RC_CHECK(offsetof(struct verbs_device, entry) == XIW_RC_OFF_VDEV_ENTRY);
XIW_RC_CHECK(offsetof(struct verbs_device, sysfs) == XIW_RC_OFF_VDEV_SYSFS);
XIW_RC_CHECK(offsetof(struct verbs_device, core_support) == XIW_RC_OFF_VDEV_CORE_SUPPORT);
XIW_RC_CHECK(sizeof(struct verbs_match_ent) == XIW_RC_SIZEOF_VERBS_MATCH_ENT);
XIW_RC_CHECK(offsetof(struct verbs_match_ent, driver_data) == XIW_RC_OFF_MATCH_DRIVER_DATA);
XIW_RC_CHECK(offsetof(struct verbs_match_ent, u.modalias) == XIW_RC_OFF_MATCH_U);
XIW_RC_CHECK(offsetof(struct verbs_match_ent, vendor) == XIW_RC_OFF_MATCH_VENDOR);
XIW_RC_CHECK(offsetof(struct verbs_match_ent, device) == XIW_RC_OFF_MATCH_DEVICE);
XIW_RC_CHECK(offsetof(struct verbs_match_ent, kind) == XIW_RC_OFF_MATCH_KIND);
XIW_RC_CHECK(VERBS_MATCH_SENTINEL == XIW_RC_MATCH_SENTINEL);
XIW_RC_CHECK(VERBS_MATCH_MODALIAS == XIW_RC_MATCH_MODALIAS);
XIW_RC_CHECK(sizeof(struct verbs_mr) == XIW_RC_SIZEOF_VERBS_MR);
XIW_RC_CHECK(offsetof(struct verbs_mr, ibv_mr) == 0);
XIW_RC_CHECK(offsetof(struct verbs_mr, mr_type) == XIW_RC_OFF_VMR_MR_TYPE);
XIW_RC_CHECK(offsetof(struct verbs_mr, access) == XIW_RC_OFF_VMR_ACCESS);
XIW_RC_CHECK(sizeof(struct verbs_qp) == XIW_RC_SIZEOF_VERBS_QP);
XIW_RC_CHECK(offsetof(struct verbs_qp, qp) == 0);
XIW_RC_CHECK(offsetof(struct verbs_qp, qp_ex) == 0);
XIW_RC_CHECK(offsetof(struct verbs_qp, comp_mask) == XIW_RC_OFF_VQP_COMP_MASK);
XIW_RC_CHECK(offsetof(struct verbs_qp, xrcd) == XIW_RC_OFF_VQP_XRCD);
XIW_RC_CHECK(VERBS_QP_EX == XIW_RC_VERBS_QP_EX);
XIW_RC_CHECK(sizeof(struct verbs_cq) == XIW_RC_SIZEOF_VERBS_CQ);
XIW_RC_CHECK(offsetof(struct verbs_cq, cq) == 0);
XIW_RC_CHECK(sizeof(struct ibv_get_context) == XIW_RC_SIZEOF_CMD_GET_CONTEXT);
XIW_RC_CHECK(sizeof(struct ibv_query_port) == XIW_RC_SIZEOF_CMD_QUERY_PORT);
XIW_RC_CHECK(sizeof(struct ibv_alloc_pd) == XIW_RC_SIZEOF_CMD_ALLOC_PD);
XIW_RC_CHECK(sizeof(struct ibv_reg_mr) == XIW_RC_SIZEOF_CMD_REG_MR);
XIW_RC_CHECK(sizeof(struct ibv_create_cq) == XIW_RC_SIZEOF_CMD_CREATE_CQ);
XIW_RC_CHECK(sizeof(struct ibv_create_qp) == XIW_RC_SIZEOF_CMD_CREATE_QP);
XIW_RC_CHECK(sizeof(struct ibv_modify_qp) == XIW_RC_SIZEOF_CMD_MODIFY_QP);
XIW_RC_CHECK(sizeof(struct ibv_query_qp) == XIW_RC_SIZEOF_CMD_QUERY_QP);
XIW_RC_CHECK(sizeof(struct ibv_create_srq) == XIW_RC_SIZEOF_CMD_CREATE_SRQ);
XIW_RC_CHECK(sizeof(struct ibv_modify_srq) == XIW_RC_SIZEOF_CMD_MODIFY_SRQ);
XIW_RC_CHECK(sizeof(struct ibv_query_srq) == XIW_RC_SIZEOF_CMD_QUERY_SRQ);
XIW_RC_CHECK(sizeof(struct ib_uverbs_get_context_resp) == XIW_RC_SIZEOF_RESP_GET_CONTEXT);
XIW_RC_CHECK(sizeof(struct ib_uverbs_alloc_pd_resp) == XIW_RC_SIZEOF_RESP_ALLOC_PD);
XIW_RC_CHECK(sizeof(struct ib_uverbs_reg_mr_resp) == XIW_RC_SIZEOF_RESP_REG_MR);
XIW_RC_CHECK(sizeof(struct ib_uverbs_create_cq_resp) == XIW_RC_SIZEOF_RESP_CREATE_CQ);
XIW_RC_CHECK(sizeof(struct ib_uverbs_create_qp_resp) == XIW_RC_SIZEOF_RESP_CREATE_QP);
XIW_RC_CHECK(sizeof(struct ib_uverbs_create_srq_resp) == XIW_RC_SIZEOF_RESP_CREATE_SRQ);
XIW_RC_CHECK(sizeof(struct ib_uverbs_ex_query_device_resp) == XIW_RC_SIZEOF_RESP_EX_QUERY_DEVICE);
#endif /* XIW_USE_RDMA_CORE_HEADERS && !__cplusplus */

#ifdef __cplusplus
/* ------------------------------------------------------------------------
 * C++ declarations.
 * ------------------------------------------------------------------------ */
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

namespace xiw::rc {

/* A ccan list_node: libibverbs links devices through it. */
struct list_link {
	list_link *next;
	list_link *prev;
};

/* A device found in sysfs/netlink.  Opaque: xiw matches by table only. */
struct verbs_sysfs_dev;

enum class match_kind : std::uint8_t {
	sentinel = XIW_RC_MATCH_SENTINEL,
	modalias = XIW_RC_MATCH_MODALIAS,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias; /* fnmatch() pattern */
		std::uint64_t driver_id;
	} u;
	std::uint16_t vendor;
	std::uint16_t device;
	match_kind kind;
};

struct verbs_device;

struct verbs_device_ops {
	const char *name;
	std::uint32_t match_min_abi_version;
	std::uint32_t match_max_abi_version;
	const verbs_match_ent *match_table;
	const verbs_device_ops **static_providers;
	bool (*match_device)(verbs_sysfs_dev *sysfs_dev);
	verbs_context *(*alloc_context)(ibv_device *device, int cmd_fd,
					void *private_data);
	verbs_context *(*import_context)(ibv_device *device, int cmd_fd);
	verbs_device *(*alloc_device)(verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(verbs_device *device);
};

/* Allocated by the provider's alloc_device, filled in by libibverbs. */
struct verbs_device {
	ibv_device device;
	const verbs_device_ops *ops;
	std::atomic<int> refcount; /* C11 atomic_int */
	list_link entry;
	verbs_sysfs_dev *sysfs;
	std::uint64_t core_support;
};

struct verbs_xrcd; /* opaque, xiw has no XRC */

enum class verbs_mr_type : std::uint32_t {
	mr = 0,
	null_mr = 1,
	imported_mr = 2,
	dmabuf_mr = 3,
};

struct verbs_mr {
	ibv_mr ibmr; /* rdma-core: ibv_mr */
	verbs_mr_type mr_type;
	int access;
};

struct verbs_qp {
	union {
		ibv_qp qp;
		ibv_qp_ex qp_ex;
	};
	std::uint32_t comp_mask;
	verbs_xrcd *xrcd;
};
inline constexpr std::uint32_t verbs_qp_ex = XIW_RC_VERBS_QP_EX;

struct verbs_cq {
	union {
		ibv_cq cq;
		ibv_cq_ex cq_ex;
	};
};

/* Every operation a provider may supply; a null entry keeps the default. */
struct verbs_context_ops {
	int (*advise_mr)(ibv_pd *pd, ibv_advise_mr_advice advice,
			 std::uint32_t flags, ibv_sge *sg_list,
			 std::uint32_t num_sges);
	ibv_dm *(*alloc_dm)(ibv_context *context, ibv_alloc_dm_attr *attr);
	ibv_mw *(*alloc_mw)(ibv_pd *pd, ibv_mw_type type);
	ibv_mr *(*alloc_null_mr)(ibv_pd *pd);
	ibv_pd *(*alloc_parent_domain)(ibv_context *context,
				       ibv_parent_domain_init_attr *attr);
	ibv_pd *(*alloc_pd)(ibv_context *context);
	ibv_td *(*alloc_td)(ibv_context *context, ibv_td_init_attr *init_attr);
	void (*async_event)(ibv_context *context, ibv_async_event *event);
	int (*attach_counters_point_flow)(ibv_counters *counters,
					  ibv_counter_attach_attr *attr,
					  ibv_flow *flow);
	int (*attach_mcast)(ibv_qp *qp, const ibv_gid *gid, std::uint16_t lid);
	int (*bind_mw)(ibv_qp *qp, ibv_mw *mw, ibv_mw_bind *mw_bind);
	int (*close_xrcd)(ibv_xrcd *xrcd);
	void (*cq_event)(ibv_cq *cq);
	ibv_ah *(*create_ah)(ibv_pd *pd, ibv_ah_attr *attr);
	ibv_counters *(*create_counters)(ibv_context *context,
					 ibv_counters_init_attr *init_attr);
	ibv_cq *(*create_cq)(ibv_context *context, int cqe,
			     ibv_comp_channel *channel, int comp_vector);
	ibv_cq_ex *(*create_cq_ex)(ibv_context *context,
				   ibv_cq_init_attr_ex *init_attr);
	ibv_flow *(*create_flow)(ibv_qp *qp, ibv_flow_attr *flow_attr);
	ibv_flow_action *(*create_flow_action_esp)(
		ibv_context *context, ibv_flow_action_esp_attr *attr);
	ibv_qp *(*create_qp)(ibv_pd *pd, ibv_qp_init_attr *attr);
	ibv_qp *(*create_qp_ex)(ibv_context *context,
				ibv_qp_init_attr_ex *qp_init_attr_ex);
	ibv_rwq_ind_table *(*create_rwq_ind_table)(
		ibv_context *context, ibv_rwq_ind_table_init_attr *init_attr);
	ibv_srq *(*create_srq)(ibv_pd *pd, ibv_srq_init_attr *srq_init_attr);
	ibv_srq *(*create_srq_ex)(ibv_context *context,
				  ibv_srq_init_attr_ex *srq_init_attr_ex);
	ibv_wq *(*create_wq)(ibv_context *context,
			     ibv_wq_init_attr *wq_init_attr);
	int (*dealloc_mw)(ibv_mw *mw);
	int (*dealloc_pd)(ibv_pd *pd);
	int (*dealloc_td)(ibv_td *td);
	int (*dereg_mr)(verbs_mr *vmr);
	int (*destroy_ah)(ibv_ah *ah);
	int (*destroy_counters)(ibv_counters *counters);
	int (*destroy_cq)(ibv_cq *cq);
	int (*destroy_flow)(ibv_flow *flow);
	int (*destroy_flow_action)(ibv_flow_action *action);
	int (*destroy_qp)(ibv_qp *qp);
	int (*destroy_rwq_ind_table)(ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(ibv_srq *srq);
	int (*destroy_wq)(ibv_wq *wq);
	int (*detach_mcast)(ibv_qp *qp, const ibv_gid *gid, std::uint16_t lid);
	void (*free_context)(ibv_context *context);
	int (*free_dm)(ibv_dm *dm);
	int (*get_srq_num)(ibv_srq *srq, std::uint32_t *srq_num);
	ibv_dm *(*import_dm)(ibv_context *context, std::uint32_t dm_handle);
	ibv_mr *(*import_mr)(ibv_pd *pd, std::uint32_t mr_handle);
	ibv_pd *(*import_pd)(ibv_context *context, std::uint32_t pd_handle);
	int (*modify_cq)(ibv_cq *cq, ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(ibv_flow_action *action,
				      ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask);
	int (*modify_qp_rate_limit)(ibv_qp *qp, ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(ibv_srq *srq, ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(ibv_wq *wq, ibv_wq_attr *wq_attr);
	ibv_qp *(*open_qp)(ibv_context *context, ibv_qp_open_attr *attr);
	ibv_xrcd *(*open_xrcd)(ibv_context *context,
			       ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(ibv_cq *cq, int num_entries, ibv_wc *wc);
	int (*post_recv)(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr);
	int (*post_send)(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad_wr);
	int (*post_srq_ops)(ibv_srq *srq, ibv_ops_wr *op, ibv_ops_wr **bad_op);
	int (*post_srq_recv)(ibv_srq *srq, ibv_recv_wr *recv_wr,
			     ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(ibv_context *context,
			       const ibv_query_device_ex_input *input,
			       ibv_device_attr_ex *attr, std::size_t attr_size);
	int (*query_ece)(ibv_qp *qp, ibv_ece *ece);
	int (*query_port)(ibv_context *context, std::uint8_t port_num,
			  ibv_port_attr *port_attr);
	int (*query_qp)(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask,
			ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(ibv_qp *qp, ibv_wr_opcode op,
				      std::uint32_t flags);
	int (*query_rt_values)(ibv_context *context, ibv_values_ex *values);
	int (*query_srq)(ibv_srq *srq, ibv_srq_attr *srq_attr);
	int (*read_counters)(ibv_counters *counters,
			     std::uint64_t *counters_value,
			     std::uint32_t ncounters, std::uint32_t flags);
	ibv_mr *(*reg_dm_mr)(ibv_pd *pd, ibv_dm *dm, std::uint64_t dm_offset,
			     std::size_t length, unsigned int access);
	ibv_mr *(*reg_dmabuf_mr)(ibv_pd *pd, std::uint64_t offset,
				 std::size_t length, std::uint64_t iova, int fd,
				 int access);
	ibv_mr *(*reg_mr)(ibv_pd *pd, void *addr, std::size_t length,
			  std::uint64_t hca_va, int access);
	int (*req_notify_cq)(ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(verbs_mr *vmr, int flags, ibv_pd *pd, void *addr,
			std::size_t length, int access);
	int (*resize_cq)(ibv_cq *cq, int cqe);
	int (*set_ece)(ibv_qp *qp, ibv_ece *ece);
	void (*unimport_dm)(ibv_dm *dm);
	void (*unimport_mr)(ibv_mr *mr);
	void (*unimport_pd)(ibv_pd *pd);
};

/*
 * Buffers for the write()-style ibv_cmd_* helpers.
 *
 * libibverbs fills in the header and the core payload itself; the provider
 * only supplies storage of the right size and its own udata, which must
 * start right after the core part.  The core payload is kept as raw storage
 * sized and aligned like the kernel's uapi struct (those end in flexible
 * arrays and cannot be members in C++).
 */
struct no_udata {};

template <class Core, class Udata = no_udata>
struct write_cmd {
	ib_uverbs_cmd_hdr hdr;
	alignas(Core) unsigned char core[sizeof(Core)];
	Udata udata;
};
template <class Core>
struct write_cmd<Core, no_udata> {
	ib_uverbs_cmd_hdr hdr;
	alignas(Core) unsigned char core[sizeof(Core)];
};

template <class Core, class Udata = no_udata>
struct write_resp {
	alignas(Core) unsigned char core[sizeof(Core)];
	Udata udata;
};
template <class Core>
struct write_resp<Core, no_udata> {
	alignas(Core) unsigned char core[sizeof(Core)];
};

/* True if udata sits right after header + core, with no padding after. */
template <class T>
constexpr bool udata_follows_core(std::size_t prefix)
{
	return offsetof(T, udata) == prefix &&
	       sizeof(T) == prefix + sizeof(T::udata);
}

using get_context_cmd = write_cmd<ib_uverbs_get_context>;
using query_port_cmd = write_cmd<ib_uverbs_query_port>;
using alloc_pd_cmd = write_cmd<ib_uverbs_alloc_pd>;
using create_cq_cmd = write_cmd<ib_uverbs_create_cq>;
using create_qp_cmd = write_cmd<ib_uverbs_create_qp>;
using modify_qp_cmd = write_cmd<ib_uverbs_modify_qp>;
using query_qp_cmd = write_cmd<ib_uverbs_query_qp>;
using create_srq_cmd = write_cmd<ib_uverbs_create_srq>;
using modify_srq_cmd = write_cmd<ib_uverbs_modify_srq>;
using query_srq_cmd = write_cmd<ib_uverbs_query_srq>;
template <class U> using reg_mr_cmd = write_cmd<ib_uverbs_reg_mr, U>;

template <class U> using get_context_resp = write_resp<ib_uverbs_get_context_resp, U>;
using alloc_pd_resp = write_resp<ib_uverbs_alloc_pd_resp>;
template <class U> using reg_mr_resp = write_resp<ib_uverbs_reg_mr_resp, U>;
template <class U> using create_cq_resp = write_resp<ib_uverbs_create_cq_resp, U>;
template <class U> using create_qp_resp = write_resp<ib_uverbs_create_qp_resp, U>;
template <class U> using create_srq_resp = write_resp<ib_uverbs_create_srq_resp, U>;

/* The opaque buffers are passed to libibverbs through these tags. */
struct cmd_buf;
struct resp_buf;

template <class T> inline cmd_buf *as_cmd(T &cmd)
{
	return reinterpret_cast<cmd_buf *>(&cmd);
}
template <class T> inline resp_buf *as_resp(T &resp)
{
	return reinterpret_cast<resp_buf *>(&resp);
}

/* ---- static checks of the declarations above against the facts ---- */
static_assert(sizeof(verbs_device_ops) == XIW_RC_SIZEOF_VERBS_DEVICE_OPS);
static_assert(sizeof(verbs_device) == XIW_RC_SIZEOF_VERBS_DEVICE);
static_assert(offsetof(verbs_device, ops) == XIW_RC_OFF_VDEV_OPS);
static_assert(offsetof(verbs_device, core_support) == XIW_RC_OFF_VDEV_CORE_SUPPORT);
static_assert(sizeof(verbs_context_ops) == XIW_RC_SIZEOF_VERBS_CONTEXT_OPS);
static_assert(XIW_RC_NUM_CONTEXT_OPS * sizeof(void *) == sizeof(verbs_context_ops));
static_assert(sizeof(verbs_match_ent) == XIW_RC_SIZEOF_VERBS_MATCH_ENT);
static_assert(sizeof(verbs_mr) == XIW_RC_SIZEOF_VERBS_MR);
static_assert(sizeof(verbs_qp) == XIW_RC_SIZEOF_VERBS_QP);
static_assert(sizeof(verbs_cq) == XIW_RC_SIZEOF_VERBS_CQ);
#define XIW_RC_ASSERT_OP_(name)                                                 \
	static_assert(offsetof(verbs_context_ops, name) ==                     \
		      XIW_RC_OPIDX_##name * sizeof(void *));
XIW_RC_CONTEXT_OPS(XIW_RC_ASSERT_OP_)
#undef XIW_RC_ASSERT_OP_

static_assert(sizeof(get_context_cmd) == XIW_RC_SIZEOF_CMD_GET_CONTEXT);
static_assert(sizeof(query_port_cmd) == XIW_RC_SIZEOF_CMD_QUERY_PORT);
static_assert(sizeof(alloc_pd_cmd) == XIW_RC_SIZEOF_CMD_ALLOC_PD);
static_assert(sizeof(reg_mr_cmd<no_udata>) == XIW_RC_SIZEOF_CMD_REG_MR);
static_assert(sizeof(create_cq_cmd) == XIW_RC_SIZEOF_CMD_CREATE_CQ);
static_assert(sizeof(create_qp_cmd) == XIW_RC_SIZEOF_CMD_CREATE_QP);
static_assert(sizeof(modify_qp_cmd) == XIW_RC_SIZEOF_CMD_MODIFY_QP);
static_assert(sizeof(query_qp_cmd) == XIW_RC_SIZEOF_CMD_QUERY_QP);
static_assert(sizeof(create_srq_cmd) == XIW_RC_SIZEOF_CMD_CREATE_SRQ);
static_assert(sizeof(modify_srq_cmd) == XIW_RC_SIZEOF_CMD_MODIFY_SRQ);
static_assert(sizeof(query_srq_cmd) == XIW_RC_SIZEOF_CMD_QUERY_SRQ);
static_assert(sizeof(ib_uverbs_get_context_resp) == XIW_RC_SIZEOF_RESP_GET_CONTEXT);
static_assert(sizeof(alloc_pd_resp) == XIW_RC_SIZEOF_RESP_ALLOC_PD);
static_assert(sizeof(ib_uverbs_reg_mr_resp) == XIW_RC_SIZEOF_RESP_REG_MR);
static_assert(sizeof(ib_uverbs_create_cq_resp) == XIW_RC_SIZEOF_RESP_CREATE_CQ);
static_assert(sizeof(ib_uverbs_create_qp_resp) == XIW_RC_SIZEOF_RESP_CREATE_QP);
static_assert(sizeof(ib_uverbs_create_srq_resp) == XIW_RC_SIZEOF_RESP_CREATE_SRQ);
static_assert(sizeof(ib_uverbs_ex_query_device_resp) == XIW_RC_SIZEOF_RESP_EX_QUERY_DEVICE);

/* ---- functions exported by libibverbs.so.1 at IBVERBS_PRIVATE_34 ---- */
extern "C" {
void verbs_register_driver_34(const verbs_device_ops *ops);
void *_verbs_init_and_alloc_context(ibv_device *device, int cmd_fd,
				    std::size_t alloc_size,
				    verbs_context *context_offset,
				    std::uint32_t driver_id);
void verbs_uninit_context(verbs_context *context);
void verbs_set_ops(verbs_context *vctx, const verbs_context_ops *ops);

int ibv_cmd_get_context(verbs_context *context, cmd_buf *cmd,
			std::size_t cmd_size, resp_buf *resp,
			std::size_t resp_size);
int ibv_cmd_query_device_any(ibv_context *context,
			     const ibv_query_device_ex_input *input,
			     ibv_device_attr_ex *attr, std::size_t attr_size,
			     ib_uverbs_ex_query_device_resp *resp,
			     std::size_t *resp_size);
int ibv_cmd_query_port(ibv_context *context, std::uint8_t port_num,
		       ibv_port_attr *port_attr, cmd_buf *cmd,
		       std::size_t cmd_size);
int ibv_cmd_alloc_pd(ibv_context *context, ibv_pd *pd, cmd_buf *cmd,
		     std::size_t cmd_size, resp_buf *resp,
		     std::size_t resp_size);
int ibv_cmd_dealloc_pd(ibv_pd *pd);
int ibv_cmd_reg_mr(ibv_pd *pd, void *addr, std::size_t length,
		   std::uint64_t hca_va, int access, verbs_mr *vmr,
		   cmd_buf *cmd, std::size_t cmd_size, resp_buf *resp,
		   std::size_t resp_size);
int ibv_cmd_dereg_mr(verbs_mr *vmr);
int ibv_cmd_create_cq(ibv_context *context, int cqe,
		      ibv_comp_channel *channel, int comp_vector, ibv_cq *cq,
		      cmd_buf *cmd, std::size_t cmd_size, resp_buf *resp,
		      std::size_t resp_size);
int ibv_cmd_destroy_cq(ibv_cq *cq);
int ibv_cmd_create_qp_ex(ibv_context *context, verbs_qp *qp,
			 ibv_qp_init_attr_ex *attr_ex, cmd_buf *cmd,
			 std::size_t cmd_size, resp_buf *resp,
			 std::size_t resp_size);
int ibv_cmd_modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask,
		      cmd_buf *cmd, std::size_t cmd_size);
int ibv_cmd_query_qp(ibv_qp *qp, ibv_qp_attr *qp_attr, int attr_mask,
		     ibv_qp_init_attr *qp_init_attr, cmd_buf *cmd,
		     std::size_t cmd_size);
int ibv_cmd_destroy_qp(ibv_qp *qp);
int ibv_cmd_create_srq(ibv_pd *pd, ibv_srq *srq, ibv_srq_init_attr *attr,
		       cmd_buf *cmd, std::size_t cmd_size, resp_buf *resp,
		       std::size_t resp_size);
int ibv_cmd_modify_srq(ibv_srq *srq, ibv_srq_attr *srq_attr,
		       int srq_attr_mask, cmd_buf *cmd, std::size_t cmd_size);
int ibv_cmd_query_srq(ibv_srq *srq, ibv_srq_attr *srq_attr, cmd_buf *cmd,
		      std::size_t cmd_size);
int ibv_cmd_destroy_srq(ibv_srq *srq);
}

} // namespace xiw::rc

#endif /* __cplusplus */
#endif /* XIW_RDMA_CORE_ABI_H */
