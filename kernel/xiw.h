/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * xiw: software iWARP RNIC with the RDMAP extensions of RFC 7306 and
 * draft-talpey-rdma-commit.  Objects and limits shared by all files.
 */
#ifndef XIW_H
#define XIW_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>
#include <uapi/rdma/xiw-abi.h>

/* A software device has no IEEE OUI: the vendor id spells "xiw" in ASCII. */
#define XIW_VENDOR_ID 0x786977
#define XIW_VENDOR_PART_ID 1
#define XIW_NODE_DESC "xiw software iWARP RNIC"
/* Reported as the firmware version: the module's own release. */
#define XIW_VERSION_MAJOR 0
#define XIW_VERSION_MINOR 1
#define XIW_VERSION_PATCH 0

#define XIW_MAX_QP (32 * 1024)
#define XIW_MAX_QP_WR (16 * 1024)
#define XIW_MAX_CQ (32 * 1024)
#define XIW_MAX_CQE (64 * 1024)
#define XIW_MAX_MR (64 * 1024)
#define XIW_MAX_PD (32 * 1024)
#define XIW_MAX_SRQ (16 * 1024)
#define XIW_MAX_SRQ_WR (16 * 1024)
#define XIW_MAX_ORD 128
#define XIW_MAX_IRD 128
#define XIW_MAX_FRMR_PAGES 4096
/* The STag is a 24-bit index and an 8-bit key (RFC 5040 §2.1). */
#define XIW_STAG_INDEX_MAX 0xffffff

struct xiw_device {
	struct ib_device ibdev;
	struct net_device *netdev;
	struct list_head devices_entry;	/* xiw_devices, for module exit */
	u8 mac[ETH_ALEN];

	struct xarray qp_xa;
	struct xarray mr_xa;
	atomic_t num_pd;
	atomic_t num_cq;
	atomic_t num_qp;
	atomic_t num_mr;
	atomic_t num_srq;
	atomic_t cq_id_seq;
	u32 qpn_next;		/* cyclic allocation cursors */
	u32 stag_index_next;
};

struct xiw_ucontext {
	struct ib_ucontext ibucontext;
};

struct xiw_pd {
	struct ib_pd ibpd;
};

/*
 * A queue in memory the module shares with its consumer: an xiw_ring_ctrl
 * followed by @num entries of @entry_size bytes.  For user consumers the
 * memory belongs to the mmap entry once it is inserted and is freed by
 * xiw_mmap_free() after the last mapping is gone, so destroying the queue
 * never pulls pages out from under a process.
 */
struct xiw_ring {
	void *mem;
	u32 num;		/* power of two, 0 for no queue */
	u32 entry_size;
	size_t bytes;
	struct rdma_user_mmap_entry *mmap_entry;
};

struct xiw_cq {
	struct ib_cq ibcq;
	struct xiw_ring ring;
	spinlock_t lock;	/* serialises producers */
	u32 id;
};

struct xiw_qp {
	struct ib_qp ibqp;
	struct xiw_ring sq;
	struct xiw_ring rq;
	struct mutex state_lock;	/* serialises modify_qp */
	enum ib_qp_state state;
	refcount_t iw_refs;		/* references taken by iw_cm */
	struct completion iw_released;
	u32 max_inline;
	int access;			/* IB_ACCESS_REMOTE_* granted */
	u8 ord;
	u8 ird;
};

struct xiw_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;		/* NULL for kernel MRs */
	u64 iova;
	u64 length;
	int access;
	u32 ext_access;			/* enum xiw_mr_ext_access */
};

static inline struct xiw_device *to_xiw_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct xiw_device, ibdev);
}

static inline struct xiw_pd *to_xiw_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct xiw_pd, ibpd);
}

static inline struct xiw_cq *to_xiw_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct xiw_cq, ibcq);
}

static inline struct xiw_qp *to_xiw_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct xiw_qp, ibqp);
}

static inline struct xiw_mr *to_xiw_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct xiw_mr, ibmr);
}

/* xiw_verbs.c */
int xiw_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		     struct ib_udata *udata);
int xiw_query_port(struct ib_device *ibdev, u32 port,
		   struct ib_port_attr *attr);
int xiw_get_port_immutable(struct ib_device *ibdev, u32 port,
			   struct ib_port_immutable *immutable);
int xiw_query_gid(struct ib_device *ibdev, u32 port, int index,
		  union ib_gid *gid);
int xiw_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey);
void xiw_get_dev_fw_str(struct ib_device *ibdev, char *str);
int xiw_alloc_ucontext(struct ib_ucontext *ibucontext, struct ib_udata *udata);
void xiw_dealloc_ucontext(struct ib_ucontext *ibucontext);
void xiw_disassociate_ucontext(struct ib_ucontext *ibucontext);
int xiw_mmap(struct ib_ucontext *ibucontext, struct vm_area_struct *vma);
void xiw_mmap_free(struct rdma_user_mmap_entry *entry);
int xiw_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int xiw_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int xiw_ring_alloc(struct xiw_ring *ring, u32 num, u32 entry_size,
		   struct ib_udata *udata, u64 *mmap_key);
void xiw_ring_free(struct xiw_ring *ring);

/* xiw_cq.c */
int xiw_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata);
int xiw_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int xiw_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int xiw_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

/* xiw_qp.c */
int xiw_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		  struct ib_udata *udata);
int xiw_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int xiw_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata);
int xiw_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init_attr);
int xiw_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr);
int xiw_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr);
void xiw_qp_get_ref(struct ib_qp *ibqp);
void xiw_qp_put_ref(struct ib_qp *ibqp);
struct ib_qp *xiw_get_qp(struct ib_device *ibdev, int qpn);

/* xiw_mem.c */
struct ib_mr *xiw_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *xiw_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata);
int xiw_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

/* xiw_cm.c */
int xiw_connect(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int xiw_accept(struct iw_cm_id *id, struct iw_cm_conn_param *param);
int xiw_reject(struct iw_cm_id *id, const void *pdata, u8 pdata_len);
int xiw_create_listen(struct iw_cm_id *id, int backlog);
int xiw_destroy_listen(struct iw_cm_id *id);

#endif /* XIW_H */
