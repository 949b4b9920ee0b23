/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause */
/*
 * xiw user/kernel ABI: the udata of the uverbs commands and the layout of
 * the queues that the module shares with the provider through mmap().
 *
 * Every shared queue is one mapping: a struct xiw_ring_ctrl followed by a
 * power-of-two array of fixed-size entries.  Producer and consumer indices
 * are free-running 32-bit counters; an entry's slot is (index & (n - 1)).
 * Each index is written by exactly one side and sits on its own cache line,
 * so the two sides never write the same line in the fast path.
 */
#ifndef XIW_ABI_USER_H
#define XIW_ABI_USER_H

#include <linux/types.h>

#define XIW_ABI_VERSION 1

/* Name of the link type and of the ib_device driver (VERBS_NAME_MATCH). */
#define XIW_DRIVER_NAME "xiw"

/*
 * ib_device_attr.vendor_id ("xiw" in ASCII) and vendor_part_id; xiwdv.h,
 * which stands alone for applications, names them XIWDV_VENDOR_ID and
 * _PART_ID (the provider checks that both say the same).
 */
#define XIW_VENDOR_ID 0x786977
#define XIW_VENDOR_PART_ID 1

#define XIW_MAX_SGE 12
/* An RDMA Read Request names one sink STag (RFC 5040 §4.4). */
#define XIW_MAX_SGE_RD 1
#define XIW_MAX_RECV_SGE 7
/* Inline data is carried in the SGE array of the SQE. */
#define XIW_MAX_INLINE (XIW_MAX_SGE * 16)

/* Work request opcodes as the provider writes them into an SQE. */
enum xiw_wr_opcode {
	XIW_WR_SEND = 0,
	XIW_WR_SEND_WITH_IMM = 1,
	XIW_WR_SEND_WITH_INV = 2,
	XIW_WR_RDMA_WRITE = 3,
	XIW_WR_RDMA_WRITE_WITH_IMM = 4,
	XIW_WR_RDMA_READ = 5,
	XIW_WR_ATOMIC_FETCH_ADD = 6,
	XIW_WR_ATOMIC_CMP_SWAP = 7,
	XIW_WR_MASKED_FETCH_ADD = 8,
	XIW_WR_MASKED_CMP_SWAP = 9,
	XIW_WR_IMMEDIATE_DATA = 10,
	XIW_WR_FLUSH = 11,
	XIW_WR_ATOMIC_WRITE = 12,
	XIW_WR_VERIFY = 13,
	/* Kernel consumers only. */
	XIW_WR_LOCAL_INV = 14,
	XIW_WR_REG_MR = 15,
	XIW_WR_RDMA_READ_WITH_INV = 16,
	XIW_WR_NUM_OPCODES
};

/* Flush placement types and levels (the values of rdma-core >= 45). */
enum xiw_flush_type {
	XIW_FLUSH_GLOBAL = 1,		/* global visibility */
	XIW_FLUSH_PERSISTENT = 2,	/* persistence */
};

enum xiw_flush_level {
	XIW_FLUSH_RANGE = 0,		/* the bytes named */
	XIW_FLUSH_MR = 1,		/* the whole region of the STag */
};

enum xiw_sqe_flags {
	XIW_SQE_SIGNALED = 1 << 0,
	XIW_SQE_SOLICITED = 1 << 1,
	XIW_SQE_INLINE = 1 << 2,
	XIW_SQE_FENCE = 1 << 3,
};

/* Same layout as struct ibv_sge, so an SGE list is copied as it is. */
struct xiw_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * Send queue entry, 256 bytes.  operand[] holds per-opcode values:
 *   atomics:        [0] compare (CmpSwap) or add data (FetchAdd),
 *                   [1] swap data, [2] compare mask,
 *                   [3] swap mask (CmpSwap) or field boundary mask
 *                   (FetchAdd), all host order, as RFC 7306 §5.1 uses them
 *   immediate data: [0] the 64-bit immediate (with Write, Send or alone)
 *   flush:          [0] length, [1] enum xiw_flush_type | enum
 *                   xiw_flush_level << 8
 *   atomic write:   [0] the value (host order)
 *   verify:         [0] length; sge[0] receives the hash, the optional
 *                   sge[1] holds the expected one
 */
struct xiw_sqe {
	__aligned_u64 wr_id;
	__u8 opcode;		/* enum xiw_wr_opcode */
	__u8 num_sge;
	__u16 flags;		/* enum xiw_sqe_flags */
	__u32 invalidate_rkey;
	__aligned_u64 remote_addr;
	__u32 rkey;
	__u32 inline_length;
	__aligned_u64 operand[4];
	struct xiw_sge sge[XIW_MAX_SGE];
};

/* Receive queue entry, 128 bytes. */
struct xiw_rqe {
	__aligned_u64 wr_id;
	__u8 num_sge;
	__u8 reserved[7];
	struct xiw_sge sge[XIW_MAX_RECV_SGE];
};

enum xiw_wc_opcode {
	XIW_WC_SEND = 0,
	XIW_WC_RDMA_WRITE = 1,
	XIW_WC_RDMA_READ = 2,
	XIW_WC_COMP_SWAP = 3,
	XIW_WC_FETCH_ADD = 4,
	XIW_WC_LOCAL_INV = 5,
	XIW_WC_REG_MR = 6,
	XIW_WC_FLUSH = 7,
	XIW_WC_ATOMIC_WRITE = 8,
	XIW_WC_VERIFY = 9,
	XIW_WC_MASKED_COMP_SWAP = 10,
	XIW_WC_MASKED_FETCH_ADD = 11,
	XIW_WC_IMMEDIATE_DATA = 12,
	XIW_WC_RECV = 128,
	XIW_WC_RECV_RDMA_WITH_IMM = 129,
};

enum xiw_wc_status {
	XIW_WC_SUCCESS = 0,
	XIW_WC_LOC_LEN_ERR,
	XIW_WC_LOC_QP_OP_ERR,
	XIW_WC_LOC_PROT_ERR,
	XIW_WC_WR_FLUSH_ERR,
	XIW_WC_BAD_RESP_ERR,
	XIW_WC_LOC_ACCESS_ERR,
	XIW_WC_REM_INV_REQ_ERR,
	XIW_WC_REM_ACCESS_ERR,
	XIW_WC_REM_OP_ERR,
	XIW_WC_RNR_RETRY_EXC_ERR,
	XIW_WC_FATAL_ERR,
	XIW_WC_GENERAL_ERR,
};

enum xiw_cqe_flags {
	XIW_CQE_WITH_IMM = 1 << 0,
	XIW_CQE_WITH_INV = 1 << 1,
};

/* Completion queue entry, 32 bytes. */
struct xiw_cqe {
	__aligned_u64 wr_id;
	__u32 byte_len;
	__u32 qp_num;
	__u8 opcode;		/* enum xiw_wc_opcode */
	__u8 status;		/* enum xiw_wc_status */
	__u16 flags;		/* enum xiw_cqe_flags */
	__u32 imm_or_inv;	/* low 32 bits of the immediate, or the rkey */
	__u32 imm_high;		/* high 32 bits of a 64-bit immediate */
	__u32 vendor_err;
};

/* Values of xiw_ring_ctrl.notify on a CQ, set by the consumer to arm it. */
enum xiw_cq_notify {
	XIW_CQ_NOTIFY_NONE = 0,
	XIW_CQ_NOTIFY_SOLICITED = 1,
	XIW_CQ_NOTIFY_NEXT = 2,
};

/*
 * xiw_ring_ctrl.conn_flags of a send queue: what the connection the QP is
 * bound to negotiated.  Written by the kernel before the QP enters RTS, so
 * a consumer that saw the connection established sees them too.
 */
enum xiw_conn_flags {
	/* The peer speaks the RDMAP extensions (MPA Res bit, see wire.h). */
	XIW_CONN_EXTENSIONS = 1 << 0,
};

/*
 * xiw_ring_ctrl.post_mode of a send queue, set by the provider with each
 * doorbell: how the kernel should take the entries it rings for.
 */
enum xiw_post_mode {
	/* Send them now, in the doorbell's system call: one operation. */
	XIW_POST_NOW = 0,
	/*
	 * The consumer posts a stream (no poll since its last post, or work
	 * requests of the QP still outstanding): hand the queue to the
	 * transmit worker and keep ctrl.notify up while it drains, so that
	 * the posts that follow ring no doorbell and go to TCP in batches.
	 * A hint: any value but 0 means this.
	 */
	XIW_POST_STREAM = 1,
};

struct xiw_ring_ctrl {
	__u32 producer;
	__u32 post_mode;	/* send queue only: enum xiw_post_mode */
	__u32 reserved0[14];
	__u32 consumer;
	__u32 reserved1[15];
	__u32 notify;
	__u32 conn_flags;	/* send queue only: enum xiw_conn_flags */
	__u32 reserved2[14];
};

/* Byte offset of entry 0 in every shared queue mapping. */
#define XIW_RING_ENTRIES_OFFSET 256

/*
 * Words the kernel writes as zero: what the provider needs comes from the
 * core's own responses and query_device; each keeps its place so that
 * providers and modules of different versions agree on the layout.
 */
struct xiw_uresp_alloc_ctx {
	__u32 flags;		/* XIW_CTX_* */
	__u32 reserved;
};

enum {
	/*
	 * The kernel's uverbs takes IB_UVERBS_ACCESS_FLUSH_GLOBAL/PERSISTENT
	 * in a registration's access flags (Linux 6.2 and later) and the
	 * module reads them there; without it the provider carries them in
	 * xiw_ureq_reg_mr.ext_access, past a uverbs that would refuse them.
	 */
	XIW_CTX_NATIVE_FLUSH_ACCESS = 1 << 0,
};

struct xiw_uresp_create_cq {
	__aligned_u64 cq_mmap_key;
	__u32 reserved;
	__u32 num_cqe;
};

struct xiw_uresp_create_qp {
	__aligned_u64 sq_mmap_key;
	__aligned_u64 rq_mmap_key;
	__u32 reserved0;
	__u32 num_sqe;
	__u32 num_rqe;
	__u32 reserved;
};

struct xiw_uresp_create_srq {
	__aligned_u64 srq_mmap_key;
	__u32 num_rqe;
	__u32 reserved;
};

/*
 * Access rights that the 6.1 uverbs core does not know: it rejects unknown
 * bits in ib_uverbs_reg_mr.access_flags, so they travel in the udata.
 */
enum xiw_mr_ext_access {
	XIW_ACCESS_FLUSH_GLOBAL = 1 << 0,
	XIW_ACCESS_FLUSH_PERSISTENT = 1 << 1,
	XIW_ACCESS_VERIFY = 1 << 2,
};

/* Hash algorithms of RDMA Verify, chosen at registration. */
enum xiw_verify_hash {
	XIW_VERIFY_NONE = 0,
	XIW_VERIFY_CRC32C = 1,		/* 4 bytes */
	XIW_VERIFY_SHA256 = 2,		/* 32 bytes */
};

/* The largest hash of any algorithm above. */
#define XIW_VERIFY_MAX_HASH 32

struct xiw_ureq_reg_mr {
	__u32 ext_access;	/* enum xiw_mr_ext_access */
	__u32 verify_hash;	/* enum xiw_verify_hash, with XIW_ACCESS_VERIFY */
};

/*
 * ib_device_attr.hw_ver of an xiw device: a software device has no
 * hardware revision, so it reports the extensions it implements.
 */
enum xiw_device_caps {
	XIW_CAP_ATOMICS = 1 << 0,		/* RFC 7306 §5, masked too */
	XIW_CAP_IMMEDIATE = 1 << 1,		/* RFC 7306 §6, draft-wood §5 */
	XIW_CAP_FLUSH_GLOBAL = 1 << 2,		/* draft-talpey §4.1 */
	XIW_CAP_FLUSH_PERSISTENT = 1 << 3,
	XIW_CAP_ATOMIC_WRITE = 1 << 4,		/* draft-talpey §4.3 */
	XIW_CAP_VERIFY_CRC32C = 1 << 5,		/* draft-talpey §4.2 */
	XIW_CAP_VERIFY_SHA256 = 1 << 6,
};

/*
 * ib_device_attr.device_cap_flags bits that Linux 6.2 named in this uapi
 * (IB_UVERBS_DEVICE_FLUSH_GLOBAL, _FLUSH_PERSISTENT, _ATOMIC_WRITE of
 * <rdma/ib_user_verbs.h>).  6.1 has no names for them but passes the
 * field to user space whole, as ibv_device_attr_ex.device_cap_flags_ex,
 * so xiw sets them: code written for rxe on newer kernels finds them.
 */
#define XIW_UVERBS_DEVICE_FLUSH_GLOBAL (1ULL << 38)
#define XIW_UVERBS_DEVICE_FLUSH_PERSISTENT (1ULL << 39)
#define XIW_UVERBS_DEVICE_ATOMIC_WRITE (1ULL << 40)

struct xiw_uresp_reg_mr {
	__u32 reserved[2];
};

#endif /* XIW_ABI_USER_H */
