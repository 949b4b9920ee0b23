/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * <infiniband/xiwdv.h> - direct verbs of the xiw software iWARP RNIC.
 *
 * xiw devices are driven through the standard libibverbs and librdmacm
 * APIs: ibv_post_send() with IBV_WR_ATOMIC_FETCH_AND_ADD,
 * IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_RDMA_WRITE_WITH_IMM and
 * IBV_WR_SEND_WITH_IMM works on xiw as on InfiniBand, over RFC 7306.  This
 * header holds what those APIs cannot express: how to recognise an xiw
 * device, the masked atomics of RFC 7306 §5.1, the full 64-bit Immediate
 * Data of RFC 7306 §6 and standalone Immediate Data.  See xiw(7).
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
 * Extension work requests
 *
 * An extension work request is an ordinary struct ibv_send_wr, posted with
 * ibv_post_send(), whose opcode is XIWDV_WR_EXTENDED and whose tso.hdr
 * points to a struct xiwdv_wr_ext that says what to do.  The provider
 * reads the xiwdv_wr_ext during ibv_post_send() only: it may live on the
 * stack.  wr_id, sg_list, num_sge, send_flags and next keep their verbs
 * meaning; the xiwdv_wr_*() helpers below fill in everything else.
 *
 * Extensions are negotiated when the connection is set up.  Toward a peer
 * that does not speak them (upstream siw, hardware iWARP) ibv_post_send()
 * fails with EOPNOTSUPP and sets bad_wr, and the connection carries on;
 * the same holds for the verbs atomics and immediate-data opcodes.
 */
#define XIWDV_WR_EXTENDED IBV_WR_DRIVER1

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
};

struct xiwdv_wr_ext {
	uint32_t opcode;	/* enum xiwdv_wr_ext_opcode */
	uint32_t reserved;	/* zero */
	/*
	 * Masked FetchAdd: [0] add data, [3] field boundary mask.
	 * Masked CmpSwap:  [0] compare data, [1] swap data,
	 *                  [2] compare mask, [3] swap mask.
	 * Immediate data:  [0] the 64-bit immediate.
	 */
	uint64_t operand[4];
};

/*
 * Completion opcode of XIWDV_WR_IMMEDIATE_DATA at the sender.  At the
 * receiver every Immediate Data message completes a receive as
 * IBV_WC_RECV_RDMA_WITH_IMM, whose byte_len is the length of the RDMA
 * Write message right before it on the connection (0 if the previous
 * message was not an RDMA Write).  Masked atomics complete as
 * IBV_WC_FETCH_ADD and IBV_WC_COMP_SWAP.
 */
#define XIWDV_WC_IMMEDIATE_DATA IBV_WC_DRIVER3

static inline void xiwdv_wr_ext_init(struct ibv_send_wr *wr,
				     struct xiwdv_wr_ext *ext,
				     enum xiwdv_wr_ext_opcode opcode)
{
	memset(ext, 0, sizeof(*ext));
	ext->opcode = opcode;
	wr->opcode = XIWDV_WR_EXTENDED;
	wr->tso.hdr = ext;
	wr->tso.hdr_sz = sizeof(*ext);
	wr->tso.mss = 0;
}

/*
 * Masked FetchAdd on the 64-bit word at REMOTE_ADDR (8-byte aligned) of
 * RKEY: a set bit in FIELD_BOUNDARY_MASK marks the most significant bit of
 * a field, whose carry is discarded; 0 makes it a plain 64-bit add.  The
 * original value lands in the 8-byte local SGE.
 */
static inline void xiwdv_wr_masked_fetch_add(struct ibv_send_wr *wr,
					     struct xiwdv_wr_ext *ext,
					     uint32_t rkey,
					     uint64_t remote_addr,
					     uint64_t add,
					     uint64_t field_boundary_mask)
{
	xiwdv_wr_ext_init(wr, ext, XIWDV_WR_MASKED_FETCH_ADD);
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	ext->operand[0] = add;
	ext->operand[3] = field_boundary_mask;
}

/*
 * Masked CmpSwap: if ((original ^ compare) & compare_mask) == 0 the target
 * becomes (original & ~swap_mask) | (swap & swap_mask).  The original value
 * lands in the 8-byte local SGE.
 */
static inline void xiwdv_wr_masked_cmp_swap(struct ibv_send_wr *wr,
					    struct xiwdv_wr_ext *ext,
					    uint32_t rkey,
					    uint64_t remote_addr,
					    uint64_t compare,
					    uint64_t compare_mask,
					    uint64_t swap, uint64_t swap_mask)
{
	xiwdv_wr_ext_init(wr, ext, XIWDV_WR_MASKED_CMP_SWAP);
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	ext->operand[0] = compare;
	ext->operand[1] = swap;
	ext->operand[2] = compare_mask;
	ext->operand[3] = swap_mask;
}

/* Unconditional Swap: a CmpSwap whose compare mask is zero. */
static inline void xiwdv_wr_swap(struct ibv_send_wr *wr,
				 struct xiwdv_wr_ext *ext, uint32_t rkey,
				 uint64_t remote_addr, uint64_t swap)
{
	xiwdv_wr_masked_cmp_swap(wr, ext, rkey, remote_addr, 0, 0, swap,
				 ~(uint64_t)0);
}

/*
 * Immediate Data on its own: consumes one receive at the peer and
 * completes it with IMM; no local SGE (num_sge = 0).
 */
static inline void xiwdv_wr_immediate_data(struct ibv_send_wr *wr,
					   struct xiwdv_wr_ext *ext,
					   uint64_t imm)
{
	xiwdv_wr_ext_init(wr, ext, XIWDV_WR_IMMEDIATE_DATA);
	ext->operand[0] = imm;
}

/* RDMA Write of the SGEs to RKEY/REMOTE_ADDR followed by IMM. */
static inline void xiwdv_wr_rdma_write_imm64(struct ibv_send_wr *wr,
					     struct xiwdv_wr_ext *ext,
					     uint32_t rkey,
					     uint64_t remote_addr,
					     uint64_t imm)
{
	xiwdv_wr_ext_init(wr, ext, XIWDV_WR_RDMA_WRITE_WITH_IMM64);
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	ext->operand[0] = imm;
}

/* Send of the SGEs carrying IMM (draft-wood-storm-rdmap-ext-v2 §5). */
static inline void xiwdv_wr_send_imm64(struct ibv_send_wr *wr,
				       struct xiwdv_wr_ext *ext, uint64_t imm)
{
	xiwdv_wr_ext_init(wr, ext, XIWDV_WR_SEND_WITH_IMM64);
	ext->operand[0] = imm;
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
