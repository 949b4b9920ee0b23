/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * <infiniband/xiwdv.h> - direct verbs of the xiw software iWARP RNIC.
 *
 * xiw devices are driven through the standard libibverbs and librdmacm
 * APIs: ibv_post_send() with IBV_WR_ATOMIC_FETCH_AND_ADD,
 * IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_RDMA_WRITE_WITH_IMM and
 * IBV_WR_SEND_WITH_IMM works on xiw as on InfiniBand, over RFC 7306.  This
 * header holds what those APIs cannot express: how to recognise an xiw
 * device and what it implements, the masked atomics of RFC 7306 §5.1, the
 * full 64-bit Immediate Data of RFC 7306 §6, standalone Immediate Data,
 * and the RDMA Flush, Atomic Write and Verify of draft-talpey-rdma-commit,
 * which rdma-core 44 has no names for.  See xiw(7).
 *
 * Usable from C (C99 or later) and C++.  Everything here is inline: there is
 * no libxiw to link against, only libibverbs (pkg-config --libs xiw).
 */
#ifndef INFINIBAND_XIWDV_H
#define INFINIBAND_XIWDV_H

#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ibv_device_attr.vendor_id of every xiw device.  A software device has no
 * IEEE OUI; the value spells "xiw" in ASCII.
 */
#define XIWDV_VENDOR_ID 0x786977u
/* ibv_device_attr.vendor_part_id of every xiw device. */
#define XIWDV_VENDOR_PART_ID 1u

/*
 * xiwdv_is_xiw_context - does CTX belong to an xiw device?
 *
 * Returns 1 if it does, 0 if it does not or the device cannot be queried.
 * The answer comes from the device itself (ibv_query_device), not from the
 * device name, which the administrator chooses in `rdma link add`.
 */
static inline int xiwdv_is_xiw_context(struct ibv_context *ctx)
{
	struct ibv_device_attr attr;

	if (!ctx || ibv_query_device(ctx, &attr))
		return 0;
	return attr.vendor_id == XIWDV_VENDOR_ID &&
	       attr.vendor_part_id == XIWDV_VENDOR_PART_ID;
}

/*
 * xiwdv_is_xiw_device - is DEV an xiw device?
 *
 * Opens a context on DEV for the query and closes it again; use
 * xiwdv_is_xiw_context() when a context is at hand.  Returns 1 or 0 as
 * xiwdv_is_xiw_context() does (0 also when DEV cannot be opened).
 */
static inline int xiwdv_is_xiw_device(struct ibv_device *dev)
{
	struct ibv_context *ctx;
	int ret;

	if (!dev)
		return 0;
	ctx = ibv_open_device(dev);
	if (!ctx)
		return 0;
	ret = xiwdv_is_xiw_context(ctx);
	ibv_close_device(ctx);
	return ret;
}

/*
 * xiwdv_query_caps - the extensions CTX's device implements.
 *
 * Returns a mask of XIWDV_CAP_* (enum xiw_device_caps of xiw-abi.h), 0 for
 * a device that is not xiw.  A software device has no hardware revision:
 * xiw reports its capabilities in ibv_device_attr.hw_ver instead.
 */
enum {
	XIWDV_CAP_ATOMICS = 1 << 0,		/* RFC 7306 §5, masked too */
	XIWDV_CAP_IMMEDIATE = 1 << 1,		/* RFC 7306 §6, draft-wood */
	XIWDV_CAP_FLUSH_GLOBAL = 1 << 2,	/* draft-talpey-rdma-commit */
	XIWDV_CAP_FLUSH_PERSISTENT = 1 << 3,
	XIWDV_CAP_ATOMIC_WRITE = 1 << 4,
	XIWDV_CAP_VERIFY_CRC32C = 1 << 5,
	XIWDV_CAP_VERIFY_SHA256 = 1 << 6,
};

/*
 * ibv_query_device_ex() also reports Flush and Atomic Write the way rxe
 * does on Linux >= 6.2: these bits of device_cap_flags_ex (the kernel's
 * IB_UVERBS_DEVICE_FLUSH_GLOBAL, _FLUSH_PERSISTENT, _ATOMIC_WRITE).
 */
#define XIWDV_DEVICE_FLUSH_GLOBAL (1ULL << 38)
#define XIWDV_DEVICE_FLUSH_PERSISTENT (1ULL << 39)
#define XIWDV_DEVICE_ATOMIC_WRITE (1ULL << 40)

static inline uint32_t xiwdv_query_caps(struct ibv_context *ctx)
{
	struct ibv_device_attr attr;

	if (!ctx || ibv_query_device(ctx, &attr) ||
	    attr.vendor_id != XIWDV_VENDOR_ID ||
	    attr.vendor_part_id != XIWDV_VENDOR_PART_ID)
		return 0;
	return attr.hw_ver;
}

/*
 * Memory registration rights for ibv_reg_mr().  The flush rights have the
 * values of rdma-core >= 45's IBV_ACCESS_FLUSH_GLOBAL/_PERSISTENT.  A
 * region with FLUSH_PERSISTENT must lie in one shared mapping of a file
 * (ibv_reg_mr() fails with EOPNOTSUPP on anonymous memory); a Verify right
 * names the hash algorithm (at most one) and needs IBV_ACCESS_REMOTE_READ
 * (EINVAL without it): hashes of ranges the peer chooses reveal the data.
 */
#define XIWDV_ACCESS_FLUSH_GLOBAL (1 << 8)
#define XIWDV_ACCESS_FLUSH_PERSISTENT (1 << 9)
#define XIWDV_ACCESS_VERIFY_CRC32C (1 << 16)
#define XIWDV_ACCESS_VERIFY_SHA256 (1 << 17)

/*
 * RDMA Flush and Atomic Write through ibv_post_send(), with the opcode
 * values of rdma-core >= 45 (usable on 44 as literals):
 *   IBV_WR_FLUSH (14): target in wr.atomic.remote_addr/rkey, length in
 *     wr.atomic.compare_add, placement type (XIWDV_FLUSH_GLOBAL,
 *     XIWDV_FLUSH_PERSISTENT) in the low byte of wr.atomic.swap and the
 *     level (XIWDV_FLUSH_RANGE, XIWDV_FLUSH_MR) in the next byte; completes
 *     as IBV_WC_FLUSH (8).
 *   IBV_WR_ATOMIC_WRITE (15): target in wr.atomic.remote_addr/rkey (8-byte
 *     aligned), the value in wr.atomic.compare_add; completes as
 *     IBV_WC_ATOMIC_WRITE (9).
 * No SGE.  xiwdv_wr_flush() and xiwdv_wr_atomic_write() fill these in.
 */
#define XIWDV_WR_FLUSH ((enum ibv_wr_opcode)14)
#define XIWDV_WC_FLUSH ((enum ibv_wc_opcode)8)
#define XIWDV_FLUSH_GLOBAL 1
#define XIWDV_FLUSH_PERSISTENT 2
#define XIWDV_FLUSH_RANGE 0
#define XIWDV_FLUSH_MR 1

static inline void xiwdv_wr_flush(struct ibv_send_wr *wr, uint32_t rkey,
				  uint64_t remote_addr, uint64_t length,
				  unsigned int type, unsigned int level)
{
	wr->opcode = XIWDV_WR_FLUSH;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = length;
	wr->wr.atomic.swap = (type & 0xff) | (level & 0xff) << 8;
}

static inline void xiwdv_wr_atomic_write(struct ibv_send_wr *wr, uint32_t rkey,
					 uint64_t remote_addr, uint64_t value)
{
	wr->opcode = IBV_WR_ATOMIC_WRITE;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = value;
}

/*
 * Extension work requests
 *
 * What verbs has no opcode for travels as a struct xiwdv_wr_ext, either
 *  - in an ordinary struct ibv_send_wr posted with ibv_post_send(): opcode
 *    XIWDV_WR_EXTENDED, wr.tso.hdr pointing to the xiwdv_wr_ext
 *    (xiwdv_wr_set_ext() does it); wr_id, sg_list, num_sge, send_flags and
 *    next keep their verbs meaning; or
 *  - on an ibv_qp_ex created with XIWDV_QP_EX_WITH_EXTENSIONS in its
 *    send_ops_flags, between ibv_wr_start() and ibv_wr_complete():
 *    xiwdv_wr_post_ext(), followed by ibv_wr_set_sge*() as for any
 *    work request.
 * The provider reads the xiwdv_wr_ext during the call only: it may live on
 * the stack.  The xiwdv_ext_*() helpers fill one in.
 *
 * Extensions are negotiated when the connection is set up.  Toward a peer
 * that does not speak them (upstream siw, hardware iWARP) the post fails
 * with EOPNOTSUPP (ibv_post_send() sets bad_wr, ibv_wr_complete() fails the
 * batch) and the connection carries on; the same holds for the verbs
 * atomics, immediate-data, flush and atomic-write opcodes.
 */
#define XIWDV_WR_EXTENDED IBV_WR_DRIVER1
#define XIWDV_QP_EX_WITH_EXTENSIONS IBV_QP_EX_WITH_TSO

enum xiwdv_wr_ext_opcode {
	/* RFC 7306 §5.1.1: fields of the 64-bit target added separately. */
	XIWDV_WR_MASKED_FETCH_ADD = 1,
	/* RFC 7306 §5.1.2: compare and swap under masks. */
	XIWDV_WR_MASKED_CMP_SWAP = 2,
	/* RFC 7306 §6: 8 bytes of Immediate Data without an RDMA Write. */
	XIWDV_WR_IMMEDIATE_DATA = 3,
	/* RDMA Write with all 64 bits of the immediate. */
	XIWDV_WR_RDMA_WRITE_WITH_IMM64 = 4,
	/* Send with all 64 bits of the immediate. */
	XIWDV_WR_SEND_WITH_IMM64 = 5,
	/* draft-talpey §4.2: hash of remote bytes, optionally checked. */
	XIWDV_WR_VERIFY = 6,
	/* draft-talpey §4.1, as IBV_WR_FLUSH (for ibv_qp_ex on rdma-core 44). */
	XIWDV_WR_FLUSH_EXT = 7,
};

struct xiwdv_wr_ext {
	uint32_t opcode;	/* enum xiwdv_wr_ext_opcode */
	uint32_t rkey;		/* of the remote buffer, if any */
	uint64_t remote_addr;
	/*
	 * Masked FetchAdd: [0] add data, [3] field boundary mask.
	 * Masked CmpSwap:  [0] compare data, [1] swap data,
	 *                  [2] compare mask, [3] swap mask.
	 * Immediate data:  [0] the 64-bit immediate.
	 * Verify:          [0] length.
	 * Flush:           [0] length, [1] type | level << 8.
	 */
	uint64_t operand[4];
};

/*
 * Completion opcodes at the sender.  XIWDV_WR_IMMEDIATE_DATA: at the
 * receiver every Immediate Data message completes a receive as
 * IBV_WC_RECV_RDMA_WITH_IMM, whose byte_len is the length of the RDMA
 * Write message right before it on the connection (0 if the previous
 * message was not an RDMA Write).  Masked atomics complete as
 * IBV_WC_FETCH_ADD and IBV_WC_COMP_SWAP, Verify as XIWDV_WC_VERIFY with
 * byte_len the size of the hash, Flush as XIWDV_WC_FLUSH.
 */
#define XIWDV_WC_IMMEDIATE_DATA IBV_WC_DRIVER3
#define XIWDV_WC_VERIFY IBV_WC_DRIVER2

static inline void xiwdv_ext_init(struct xiwdv_wr_ext *ext,
				  enum xiwdv_wr_ext_opcode opcode,
				  uint32_t rkey, uint64_t remote_addr)
{
	memset(ext, 0, sizeof(*ext));
	ext->opcode = opcode;
	ext->rkey = rkey;
	ext->remote_addr = remote_addr;
}

/* Makes WR an extension work request described by EXT. */
static inline void xiwdv_wr_set_ext(struct ibv_send_wr *wr,
				    struct xiwdv_wr_ext *ext)
{
	wr->opcode = XIWDV_WR_EXTENDED;
	wr->tso.hdr = ext;
	wr->tso.hdr_sz = sizeof(*ext);
	wr->tso.mss = 0;
}

/* Adds the extension work request EXT to the ibv_qp_ex batch of QPX. */
static inline void xiwdv_wr_post_ext(struct ibv_qp_ex *qpx,
				     struct xiwdv_wr_ext *ext)
{
	qpx->wr_send_tso(qpx, ext, sizeof(*ext), 0);
}

/*
 * Masked FetchAdd on the 64-bit word at REMOTE_ADDR (8-byte aligned) of
 * RKEY: a set bit in FIELD_BOUNDARY_MASK marks the most significant bit of
 * a field, whose carry is discarded; 0 makes it a plain 64-bit add.  The
 * original value lands in the one 8-byte local SGE.
 */
static inline void xiwdv_ext_masked_fetch_add(struct xiwdv_wr_ext *ext,
					      uint32_t rkey,
					      uint64_t remote_addr, uint64_t add,
					      uint64_t field_boundary_mask)
{
	xiwdv_ext_init(ext, XIWDV_WR_MASKED_FETCH_ADD, rkey, remote_addr);
	ext->operand[0] = add;
	ext->operand[3] = field_boundary_mask;
}

/*
 * Masked CmpSwap: if ((original ^ compare) & compare_mask) == 0 the target
 * becomes (original & ~swap_mask) | (swap & swap_mask).  The original value
 * lands in the one 8-byte local SGE.
 */
static inline void xiwdv_ext_masked_cmp_swap(struct xiwdv_wr_ext *ext,
					     uint32_t rkey,
					     uint64_t remote_addr,
					     uint64_t compare,
					     uint64_t compare_mask,
					     uint64_t swap, uint64_t swap_mask)
{
	xiwdv_ext_init(ext, XIWDV_WR_MASKED_CMP_SWAP, rkey, remote_addr);
	ext->operand[0] = compare;
	ext->operand[1] = swap;
	ext->operand[2] = compare_mask;
	ext->operand[3] = swap_mask;
}

/* Unconditional Swap: a CmpSwap whose compare mask is zero. */
static inline void xiwdv_ext_swap(struct xiwdv_wr_ext *ext, uint32_t rkey,
				  uint64_t remote_addr, uint64_t swap)
{
	xiwdv_ext_masked_cmp_swap(ext, rkey, remote_addr, 0, 0, swap,
				  ~(uint64_t)0);
}

/*
 * Immediate Data on its own: consumes one receive at the peer and
 * completes it with IMM; no local SGE.
 */
static inline void xiwdv_ext_immediate_data(struct xiwdv_wr_ext *ext,
					    uint64_t imm)
{
	xiwdv_ext_init(ext, XIWDV_WR_IMMEDIATE_DATA, 0, 0);
	ext->operand[0] = imm;
}

/* RDMA Write of the SGEs to RKEY/REMOTE_ADDR followed by IMM. */
static inline void xiwdv_ext_rdma_write_imm64(struct xiwdv_wr_ext *ext,
					      uint32_t rkey,
					      uint64_t remote_addr,
					      uint64_t imm)
{
	xiwdv_ext_init(ext, XIWDV_WR_RDMA_WRITE_WITH_IMM64, rkey, remote_addr);
	ext->operand[0] = imm;
}

/* Send of the SGEs carrying IMM (draft-wood-storm-rdmap-ext-v2 §5). */
static inline void xiwdv_ext_send_imm64(struct xiwdv_wr_ext *ext,
					uint64_t imm)
{
	xiwdv_ext_init(ext, XIWDV_WR_SEND_WITH_IMM64, 0, 0);
	ext->operand[0] = imm;
}

/*
 * RDMA Verify of LENGTH bytes at REMOTE_ADDR of RKEY, whose region was
 * registered with a Verify right naming the hash algorithm.  SGE 0
 * receives the hash the peer computed; an optional SGE 1 holds the hash
 * expected, whose mismatch makes the peer terminate the connection before
 * any later request on it is executed.  An expected hash longer than
 * XIWDV_VERIFY_MAX_HASH octets fails the post with EINVAL.
 */
#define XIWDV_VERIFY_MAX_HASH 32

static inline void xiwdv_ext_verify(struct xiwdv_wr_ext *ext, uint32_t rkey,
				    uint64_t remote_addr, uint32_t length)
{
	xiwdv_ext_init(ext, XIWDV_WR_VERIFY, rkey, remote_addr);
	ext->operand[0] = length;
}

/* RDMA Flush as an extension work request (see xiwdv_wr_flush()). */
static inline void xiwdv_ext_flush(struct xiwdv_wr_ext *ext, uint32_t rkey,
				   uint64_t remote_addr, uint64_t length,
				   unsigned int type, unsigned int level)
{
	xiwdv_ext_init(ext, XIWDV_WR_FLUSH_EXT, rkey, remote_addr);
	ext->operand[0] = length;
	ext->operand[1] = (type & 0xff) | (level & 0xff) << 8;
}

/*
 * The 64-bit immediate of a completion with IBV_WC_WITH_IMM.  The wire
 * carries 64 bits (RFC 7306 §6.2); verbs' imm_data holds the low 32 in
 * network order, and xiw puts the high 32 into wc->src_qp, which has no
 * meaning on a connected iWARP QP.  A verbs sender's imm_data arrives as
 * the 64-bit value be32toh(imm_data), so its high half is zero.
 */
static inline uint64_t xiwdv_wc_imm64(const struct ibv_wc *wc)
{
	const uint8_t *low = (const uint8_t *)&wc->imm_data;

	return (uint64_t)wc->src_qp << 32 | (uint64_t)low[0] << 24 |
	       (uint64_t)low[1] << 16 | (uint64_t)low[2] << 8 | low[3];
}

#ifdef __cplusplus
}
#endif

#endif /* INFINIBAND_XIWDV_H */
