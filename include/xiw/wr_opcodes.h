/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * xiw - what each work-request opcode is, stated once.
 *
 * The send queue carries enum xiw_wr_opcode (uapi/rdma/xiw-abi.h).  Every
 * part of xiw that must know something about such an opcode - which
 * completion it makes, which RDMAP message it sends, whether it waits for
 * a response, whether the peer must have negotiated the extensions, how
 * many SGEs of which size it takes, which verbs opcode posts it - asks
 * this table: the kernel's post, fetch, transmit and completion paths, the
 * provider's post paths and completion decoding, and the tests.  Adding an
 * opcode is a row here, a row in the wire table (XIW_RDMAP_OPCODES in
 * wire.h) if it is a new message, and the code that executes it.
 *
 * Shared by the kernel module (C), the provider (C++20) and the tests, as
 * wire.h is.  The verbs columns name enumerators of one side only (ibv_*
 * for the provider, ib_* for the kernel): a column is only ever expanded
 * where its names exist.
 */
#ifndef XIW_WR_OPCODES_H
#define XIW_WR_OPCODES_H

#ifdef __KERNEL__
#include <uapi/rdma/xiw-abi.h>
#else
#include <rdma/xiw-abi.h>
#endif
#include <xiw/wire.h>

/* A verbs column of an opcode no verbs opcode posts. */
#define XIW_NO_VERB (-1)

/* struct xiw_wr_info.flags */
enum {
	/*
	 * Sends a request on QN 1 and completes on its response; its SGEs
	 * (all but a Verify's second: the hash expected) take the answer.
	 */
	XIW_WRF_REQUEST = 1 << 0,
	/* Local work: no message (memory registration). */
	XIW_WRF_LOCAL = 1 << 1,
	/*
	 * Exists on the wire only between peers that negotiated the RDMAP
	 * extensions (RFC 7306, draft-wood, draft-talpey; MPA Res bit).
	 */
	XIW_WRF_EXT = 1 << 2,
	/*
	 * Ends with 8 octets of Immediate Data (RFC 7306 §6.3, draft-wood
	 * §5.3), taken from operand[0].
	 */
	XIW_WRF_IMM = 1 << 3,
	/* Its payload may travel inline in the SQE (XIW_SQE_INLINE). */
	XIW_WRF_INLINE = 1 << 4,
	/* Tagged: placed at the peer's STag and offset (RDMA Write). */
	XIW_WRF_TAGGED = 1 << 5,
	/* Invalidates the peer's STag in invalidate_rkey. */
	XIW_WRF_INVALIDATE = 1 << 6,
	/*
	 * Posted by kernel consumers only (its SQE names kernel objects, or
	 * it completes with a local invalidation).
	 */
	XIW_WRF_KERNEL = 1 << 7,
};

/*
 * struct xiw_wr_info.args: what of a verbs work request (libibverbs'
 * struct ibv_send_wr, kernel verbs' struct ib_send_wr and the structures
 * around it) the SQE takes besides the SGEs, the flags and the Immediate
 * Data of XIW_WRF_IMM.  Where verbs keeps an opcode's operands is the
 * verbs ABI's choice; what the SQE makes of them is its operand[] layout
 * (uapi/rdma/xiw-abi.h).
 */
enum {
	/* ex.invalidate_rkey into invalidate_rkey */
	XIW_ARG_INVALIDATE = 1 << 0,
	/* remote_addr and rkey of wr.rdma (libibverbs) or rdma_wr() */
	XIW_ARG_RDMA = 1 << 1,
	/*
	 * remote_addr and rkey of wr.atomic (libibverbs) or atomic_wr(), and
	 * compare_add into operand[0]
	 */
	XIW_ARG_ATOMIC = 1 << 2,
	/*
	 * with XIW_ARG_ATOMIC, swap into operand[1] and the masks of a plain
	 * CmpSwap (every bit compared and swapped, RFC 7306 §5.1.2)
	 */
	XIW_ARG_SWAP = 1 << 3,
	/*
	 * with XIW_ARG_ATOMIC, the low 16 bits of swap into operand[1]: a
	 * Flush's type and level, where rdma-core >= 45 puts them
	 */
	XIW_ARG_FLUSH_SELECT = 1 << 4,
	/* mr, access and key of reg_wr() (kernel consumers) */
	XIW_ARG_REG = 1 << 5,
};

/*
 * X(wr, name, rv, wire, wc, flags, sge_min, sge_max, sge_len, ibv, ib, dv,
 *   aop, args)
 *   wr        enum xiw_wr_opcode; rows are in its order
 *   rv, wire  the RDMAP version and opcode of the message it sends (the
 *             first, without Solicited Event; XIW_OP_NONE for local work)
 *   wc        enum xiw_wc_opcode it completes as
 *   flags     XIW_WRF_*
 *   sge_min, sge_max   SGEs it takes; sge_len the length each must have
 *             (0: any)
 *   ibv       the libibverbs opcode that posts it (enum ibv_wr_opcode)
 *   ib        the kernel verbs opcode that posts it (enum ib_wr_opcode)
 *   dv        the xiwdv extension opcode that posts it
 *             (enum xiwdv_wr_ext_opcode)
 *   aop       the AOpCode of its Atomic Request (RFC 7306 §5.2.1 Figure 5;
 *             0 for other messages)
 *   args      XIW_ARG_*: its operands in a verbs work request (the ibv
 *             and ib columns' opcodes)
 * Sources: RFC 5040 §4.2, §5.1; RFC 7306 §4, §5.1, §6.3; draft-talpey §2,
 * §4; draft-wood §4.1, §5.3.
 */
#define XIW_WR_OPCODES(X)						\
	X(XIW_WR_SEND, "Send", XIW_RDMAP_RV1, XIW_OP_SEND,		\
	  XIW_WC_SEND, XIW_WRF_INLINE, 0, XIW_MAX_SGE, 0, IBV_WR_SEND,	\
	  IB_WR_SEND, XIW_NO_VERB, 0, 0)				\
	X(XIW_WR_SEND_WITH_IMM, "Send with Immediate Data",		\
	  XIW_RDMAP_RV2, XIW_OP2_SEND_IMM, XIW_WC_SEND,			\
	  XIW_WRF_EXT | XIW_WRF_IMM | XIW_WRF_INLINE, 0, XIW_MAX_SGE,	\
	  0, IBV_WR_SEND_WITH_IMM, IB_WR_SEND_WITH_IMM,			\
	  XIWDV_WR_SEND_WITH_IMM64, 0, 0)				\
	X(XIW_WR_SEND_WITH_INV, "Send with Invalidate", XIW_RDMAP_RV1,	\
	  XIW_OP_SEND_INV, XIW_WC_SEND,					\
	  XIW_WRF_INLINE | XIW_WRF_INVALIDATE, 0, XIW_MAX_SGE, 0,	\
	  IBV_WR_SEND_WITH_INV, IB_WR_SEND_WITH_INV, XIW_NO_VERB, 0,	\
	  XIW_ARG_INVALIDATE)						\
	X(XIW_WR_RDMA_WRITE, "RDMA Write", XIW_RDMAP_RV1,		\
	  XIW_OP_WRITE, XIW_WC_RDMA_WRITE,				\
	  XIW_WRF_INLINE | XIW_WRF_TAGGED, 0, XIW_MAX_SGE, 0,		\
	  IBV_WR_RDMA_WRITE, IB_WR_RDMA_WRITE, XIW_NO_VERB, 0,		\
	  XIW_ARG_RDMA)							\
	X(XIW_WR_RDMA_WRITE_WITH_IMM,					\
	  "RDMA Write with Immediate Data", XIW_RDMAP_RV1,		\
	  XIW_OP_WRITE, XIW_WC_RDMA_WRITE,				\
	  XIW_WRF_EXT | XIW_WRF_IMM | XIW_WRF_INLINE | XIW_WRF_TAGGED,	\
	  0, XIW_MAX_SGE, 0, IBV_WR_RDMA_WRITE_WITH_IMM,		\
	  IB_WR_RDMA_WRITE_WITH_IMM, XIWDV_WR_RDMA_WRITE_WITH_IMM64,	\
	  0, XIW_ARG_RDMA)						\
	X(XIW_WR_RDMA_READ, "RDMA Read", XIW_RDMAP_RV1,			\
	  XIW_OP_READ_REQ, XIW_WC_RDMA_READ, XIW_WRF_REQUEST, 0,	\
	  XIW_MAX_SGE_RD, 0, IBV_WR_RDMA_READ, IB_WR_RDMA_READ,		\
	  XIW_NO_VERB, 0, XIW_ARG_RDMA)					\
	X(XIW_WR_ATOMIC_FETCH_ADD, "FetchAdd", XIW_RDMAP_RV1,		\
	  XIW_OP_ATOMIC_REQ, XIW_WC_FETCH_ADD,				\
	  XIW_WRF_REQUEST | XIW_WRF_EXT, 1, 1, 8,			\
	  IBV_WR_ATOMIC_FETCH_AND_ADD, IB_WR_ATOMIC_FETCH_AND_ADD,	\
	  XIW_NO_VERB, XIW_AOP_FETCH_ADD, XIW_ARG_ATOMIC)		\
	X(XIW_WR_ATOMIC_CMP_SWAP, "CmpSwap", XIW_RDMAP_RV1,		\
	  XIW_OP_ATOMIC_REQ, XIW_WC_COMP_SWAP,				\
	  XIW_WRF_REQUEST | XIW_WRF_EXT, 1, 1, 8,			\
	  IBV_WR_ATOMIC_CMP_AND_SWP, IB_WR_ATOMIC_CMP_AND_SWP,		\
	  XIW_NO_VERB, XIW_AOP_CMP_SWAP,				\
	  XIW_ARG_ATOMIC | XIW_ARG_SWAP)				\
	X(XIW_WR_MASKED_FETCH_ADD, "Masked FetchAdd", XIW_RDMAP_RV1,	\
	  XIW_OP_ATOMIC_REQ, XIW_WC_MASKED_FETCH_ADD,			\
	  XIW_WRF_REQUEST | XIW_WRF_EXT, 1, 1, 8, XIW_NO_VERB,		\
	  XIW_NO_VERB, XIWDV_WR_MASKED_FETCH_ADD, XIW_AOP_FETCH_ADD,	\
	  0)								\
	X(XIW_WR_MASKED_CMP_SWAP, "Masked CmpSwap", XIW_RDMAP_RV1,	\
	  XIW_OP_ATOMIC_REQ, XIW_WC_MASKED_COMP_SWAP,			\
	  XIW_WRF_REQUEST | XIW_WRF_EXT, 1, 1, 8, XIW_NO_VERB,		\
	  XIW_NO_VERB, XIWDV_WR_MASKED_CMP_SWAP, XIW_AOP_CMP_SWAP, 0)	\
	X(XIW_WR_IMMEDIATE_DATA, "Immediate Data", XIW_RDMAP_RV1,	\
	  XIW_OP_IMM, XIW_WC_IMMEDIATE_DATA,				\
	  XIW_WRF_EXT | XIW_WRF_IMM, 0, 0, 0, XIW_NO_VERB,		\
	  XIW_NO_VERB, XIWDV_WR_IMMEDIATE_DATA, 0, 0)			\
	X(XIW_WR_FLUSH, "RDMA Flush", XIW_RDMAP_RV1, XIW_OP_FLUSH_REQ,	\
	  XIW_WC_FLUSH, XIW_WRF_REQUEST | XIW_WRF_EXT, 0, 0, 0,		\
	  XIWDV_WR_FLUSH, XIW_NO_VERB, XIWDV_WR_FLUSH_EXT, 0,		\
	  XIW_ARG_ATOMIC | XIW_ARG_FLUSH_SELECT)			\
	X(XIW_WR_ATOMIC_WRITE, "Atomic Write", XIW_RDMAP_RV1,		\
	  XIW_OP_ATOMIC_WRITE_REQ, XIW_WC_ATOMIC_WRITE,			\
	  XIW_WRF_REQUEST | XIW_WRF_EXT, 0, 0, 0, IBV_WR_ATOMIC_WRITE,	\
	  XIW_NO_VERB, XIW_NO_VERB, 0, XIW_ARG_ATOMIC)			\
	X(XIW_WR_VERIFY, "RDMA Verify", XIW_RDMAP_RV1,			\
	  XIW_OP_VERIFY_REQ, XIW_WC_VERIFY,				\
	  XIW_WRF_REQUEST | XIW_WRF_EXT, 1, 2, 0, XIW_NO_VERB,		\
	  XIW_NO_VERB, XIWDV_WR_VERIFY, 0, 0)				\
	X(XIW_WR_LOCAL_INV, "Local Invalidate", 0, XIW_OP_NONE,		\
	  XIW_WC_LOCAL_INV, XIW_WRF_LOCAL | XIW_WRF_KERNEL, 0, 0, 0,	\
	  XIW_NO_VERB, IB_WR_LOCAL_INV, XIW_NO_VERB, 0,			\
	  XIW_ARG_INVALIDATE)						\
	X(XIW_WR_REG_MR, "Fast Register", 0, XIW_OP_NONE,		\
	  XIW_WC_REG_MR, XIW_WRF_LOCAL | XIW_WRF_KERNEL, 0, 0, 0,	\
	  XIW_NO_VERB, IB_WR_REG_MR, XIW_NO_VERB, 0, XIW_ARG_REG)	\
	X(XIW_WR_RDMA_READ_WITH_INV, "RDMA Read with Invalidate",	\
	  XIW_RDMAP_RV1, XIW_OP_READ_REQ, XIW_WC_RDMA_READ,		\
	  XIW_WRF_REQUEST | XIW_WRF_KERNEL, 0, XIW_MAX_SGE_RD, 0,	\
	  XIW_NO_VERB, IB_WR_RDMA_READ_WITH_INV, XIW_NO_VERB, 0,	\
	  XIW_ARG_RDMA | XIW_ARG_INVALIDATE)

/*
 * X(wc, ibv, ib): each completion opcode (enum xiw_wc_opcode) and what
 * libibverbs and kernel verbs call it (XIW_NO_VERB: never reported to that
 * side).  The masked atomics complete as the plain ones for libibverbs,
 * which has no names for them; Flush, Verify and Immediate Data have the
 * xiwdv.h names on rdma-core 44.
 */
#define XIW_WC_OPCODES(X)						\
	X(XIW_WC_SEND, IBV_WC_SEND, IB_WC_SEND)				\
	X(XIW_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE, IB_WC_RDMA_WRITE)	\
	X(XIW_WC_RDMA_READ, IBV_WC_RDMA_READ, IB_WC_RDMA_READ)		\
	X(XIW_WC_COMP_SWAP, IBV_WC_COMP_SWAP, IB_WC_COMP_SWAP)		\
	X(XIW_WC_FETCH_ADD, IBV_WC_FETCH_ADD, IB_WC_FETCH_ADD)		\
	X(XIW_WC_LOCAL_INV, IBV_WC_LOCAL_INV, IB_WC_LOCAL_INV)		\
	X(XIW_WC_REG_MR, XIW_NO_VERB, IB_WC_REG_MR)			\
	X(XIW_WC_FLUSH, XIWDV_WC_FLUSH, XIW_NO_VERB)			\
	X(XIW_WC_ATOMIC_WRITE, IBV_WC_ATOMIC_WRITE, XIW_NO_VERB)	\
	X(XIW_WC_VERIFY, XIWDV_WC_VERIFY, XIW_NO_VERB)			\
	X(XIW_WC_MASKED_COMP_SWAP, IBV_WC_COMP_SWAP, IB_WC_MASKED_COMP_SWAP) \
	X(XIW_WC_MASKED_FETCH_ADD, IBV_WC_FETCH_ADD, IB_WC_MASKED_FETCH_ADD) \
	X(XIW_WC_IMMEDIATE_DATA, XIWDV_WC_IMMEDIATE_DATA, XIW_NO_VERB)	\
	X(XIW_WC_RECV, IBV_WC_RECV, IB_WC_RECV)				\
	X(XIW_WC_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM,		\
	  IB_WC_RECV_RDMA_WITH_IMM)

/*
 * X(status, ibv, ib): each completion status (enum xiw_wc_status, from 0
 * without gaps) and its libibverbs and kernel verbs names.
 */
#define XIW_WC_STATUSES(X)						\
	X(XIW_WC_SUCCESS, IBV_WC_SUCCESS, IB_WC_SUCCESS)		\
	X(XIW_WC_LOC_LEN_ERR, IBV_WC_LOC_LEN_ERR, IB_WC_LOC_LEN_ERR)	\
	X(XIW_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR, IB_WC_LOC_QP_OP_ERR) \
	X(XIW_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR, IB_WC_LOC_PROT_ERR)	\
	X(XIW_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR, IB_WC_WR_FLUSH_ERR)	\
	X(XIW_WC_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR, IB_WC_BAD_RESP_ERR)	\
	X(XIW_WC_LOC_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR, IB_WC_LOC_ACCESS_ERR) \
	X(XIW_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR,		\
	  IB_WC_REM_INV_REQ_ERR)					\
	X(XIW_WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR, IB_WC_REM_ACCESS_ERR) \
	X(XIW_WC_REM_OP_ERR, IBV_WC_REM_OP_ERR, IB_WC_REM_OP_ERR)	\
	X(XIW_WC_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR,		\
	  IB_WC_RNR_RETRY_EXC_ERR)					\
	X(XIW_WC_FATAL_ERR, IBV_WC_FATAL_ERR, IB_WC_FATAL_ERR)		\
	X(XIW_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR, IB_WC_GENERAL_ERR)

struct xiw_wr_info {
	const char *name;
	__u8 wr;		/* enum xiw_wr_opcode */
	__u8 rv;		/* RDMAP version of the message sent */
	__u8 wire;		/* its RDMAP opcode, XIW_OP_NONE */
	__u8 wc;		/* enum xiw_wc_opcode */
	__u16 flags;		/* XIW_WRF_* */
	__u8 sge_min;
	__u8 sge_max;
	__u32 sge_len;		/* of each SGE; 0: any */
	__u8 aop;		/* an Atomic Request's AOpCode */
	__u8 args;		/* XIW_ARG_* */
};

#define XIW_WR_INFO_INIT(wr, nm, rv, wire, wc, fl, smin, smax, slen, ibv, ib, \
			 dv, aop, args)					\
	{ nm, (__u8)(wr), (__u8)(rv), (__u8)(wire), (__u8)(wc),	\
	  (__u16)(fl), (__u8)(smin), (__u8)(smax), (__u32)(slen),	\
	  (__u8)(aop), (__u8)(args) },
#define XIW_WR_COUNT_ONE(wr, nm, rv, wire, wc, fl, smin, smax, slen, ibv, ib, \
			 dv, aop, args) +1

XIW_STATIC_ASSERT(0 XIW_WR_OPCODES(XIW_WR_COUNT_ONE) == XIW_WR_NUM_OPCODES,
		  "one row per work-request opcode");

/* The row of work-request opcode @wr, or NULL if there is none. */
static inline const struct xiw_wr_info *xiw_wr_lookup(unsigned int wr)
{
	static const struct xiw_wr_info tbl[] = {
		XIW_WR_OPCODES(XIW_WR_INFO_INIT)
	};

	/* Rows are in enum order (tests/wire checks it): index = opcode. */
	if (wr >= sizeof(tbl) / sizeof(tbl[0]) || tbl[wr].wr != wr)
		return XIW_NULL;
	return &tbl[wr];
}

/* Whether opcode @wr has all of @flags; false for no opcode. */
static inline int xiw_wr_is(unsigned int wr, unsigned int flags)
{
	const struct xiw_wr_info *wi = xiw_wr_lookup(wr);

	return wi && (wi->flags & flags) == flags;
}

/*
 * The SGE rule of a row, for every post path (provider, kernel consumers)
 * and for the kernel's own check of what a provider wrote: whether @n
 * SGEs are as many as opcode @wi takes, and whether one of @len octets
 * has the length it must have.
 */
static inline int xiw_wr_sge_count_ok(const struct xiw_wr_info *wi,
				      unsigned long n)
{
	return n >= wi->sge_min && n <= wi->sge_max;
}

static inline int xiw_wr_sge_len_ok(const struct xiw_wr_info *wi, __u32 len)
{
	return !wi->sge_len || len == wi->sge_len;
}

/*
 * The operands that a verbs work request of opcode @wi keeps in its atomic
 * fields (XIW_ARG_ATOMIC: compare_add, swap) into @sqe's operand[], which
 * the post zeroed.
 */
static inline void xiw_sqe_atomic_args(struct xiw_sqe *sqe,
				       const struct xiw_wr_info *wi,
				       __u64 compare_add, __u64 swap)
{
	sqe->operand[0] = compare_add;
	if (wi->args & XIW_ARG_SWAP) {
		sqe->operand[1] = swap;
		sqe->operand[2] = ~(__u64)0;
		sqe->operand[3] = ~(__u64)0;
	}
	if (wi->args & XIW_ARG_FLUSH_SELECT)
		sqe->operand[1] = swap & 0xffff;
}

/*
 * The Flush Disposition Flags (draft-talpey §4.1.1) for the placement type
 * and level of a flush work request (operand[1]: type in the low byte,
 * level above it), or -1 if they are not valid.
 */
static inline int xiw_flush_flags(__u64 type_level)
{
	int flags;

	switch (type_level & 0xff) {
	case XIW_FLUSH_GLOBAL:
		flags = XIW_FLUSH_DISP_G;
		break;
	case XIW_FLUSH_PERSISTENT:
		flags = XIW_FLUSH_DISP_P;
		break;
	default:
		return -1;
	}
	switch (type_level >> 8) {
	case XIW_FLUSH_RANGE:
		return flags;
	case XIW_FLUSH_MR:
		return flags | XIW_FLUSH_DISP_R;
	default:
		return -1;
	}
}

/*
 * What an SQE's opcode needs beyond its row: a Flush's length and
 * disposition (draft-talpey §4.1.1: a 32-bit Data Sink Length), a
 * Verify's length and the size of the hash it expects.  Returns a work
 * completion status (enum xiw_wc_status).  The provider refuses at post
 * what fails here; the kernel checks every SQE again, whoever wrote it.
 */
static inline unsigned int xiw_sqe_check_operands(const struct xiw_sqe *sqe)
{
	if (sqe->opcode == XIW_WR_FLUSH) {
		if (sqe->operand[0] > 0xffffffffu)
			return XIW_WC_LOC_LEN_ERR;
		if (xiw_flush_flags(sqe->operand[1]) < 0)
			return XIW_WC_LOC_QP_OP_ERR;
	}
	if (sqe->opcode == XIW_WR_VERIFY &&
	    (sqe->operand[0] > 0xffffffffu ||
	     (sqe->num_sge == 2 && sqe->sge[1].length > XIW_VERIFY_MAX_HASH)))
		return XIW_WC_LOC_LEN_ERR;
	return XIW_WC_SUCCESS;
}

#endif /* XIW_WR_OPCODES_H */
