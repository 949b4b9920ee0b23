/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * xiw - wire formats of the iWARP protocol suite and its extensions.
 *
 * One header, shared by the kernel module (C, gnu11, sparse-clean) and by
 * user space (C and C++20: provider, tests, tools).
 *
 * Sources (section numbers are quoted next to each definition):
 *   RFC 5044  MPA  - Marker PDU Aligned Framing for TCP
 *   RFC 6581  MPA v2 - Enhanced RDMA Connection Establishment
 *   RFC 5041  DDP  - Direct Data Placement over Reliable Transports
 *   RFC 5040  RDMAP - Remote Direct Memory Access Protocol
 *   RFC 7306  RDMAP extensions: Atomics, Immediate Data
 *   draft-ietf-storm-rdmap-ext-01   early RFC 7306 draft (Swap AOpCode)
 *   draft-talpey-rdma-commit-02     Flush, Verify, Atomic Write (RV=1)
 *   draft-wood-storm-rdmap-ext-v2-00 Read V2, Send with Immediate (RV=2)
 *
 * Conventions
 *   - Every structure is made of __u8 / __be16 / __be32 (/__le32) members
 *     only, and every member sits at a multiple of its own size, so no
 *     structure needs __packed and none has implicit padding.  64-bit wire
 *     fields are "struct xiw_be64" (two __be32 words, high word first),
 *     because several of them are only 4-byte aligned on the wire (e.g. the
 *     Tagged Offset of the Flush request), which keeps the alignment of all
 *     structures at 4.  Sizes are checked with static asserts below.
 *   - The headers of a DDP segment are described the way they appear in
 *     an FPDU, i.e. prefixed by the 16-bit MPA ULPDU_Length (RFC 5044
 *     §4).  This makes every 32-bit DDP/RDMAP field 4-byte aligned.  The
 *     DDP header proper starts at offset XIW_DDP_HDR_OFFSET (2) and is
 *     XIW_DDP_TAGGED_HLEN (14) or XIW_DDP_UNTAGGED_HLEN (18) bytes long.
 *   - Byte order: only through the xiw_be*_to_cpu / xiw_cpu_to_be* helpers
 *     (kernel: be32_to_cpu & co.; user space: <endian.h> be32toh & co.).
 */
#ifndef XIW_WIRE_H
#define XIW_WIRE_H

#include <linux/types.h>

#ifdef __KERNEL__
#include <asm/byteorder.h>
#define xiw_be16_to_cpu(x) be16_to_cpu(x)
#define xiw_be32_to_cpu(x) be32_to_cpu(x)
#define xiw_cpu_to_be16(x) cpu_to_be16(x)
#define xiw_cpu_to_be32(x) cpu_to_be32(x)
#define xiw_le32_to_cpu(x) le32_to_cpu(x)
#define xiw_cpu_to_le32(x) cpu_to_le32(x)
#else
#include <endian.h>
#ifndef be32toh
/* strict ISO mode hides the BSD names of <endian.h>: same thing by hand */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define be16toh(x) __builtin_bswap16(x)
#define be32toh(x) __builtin_bswap32(x)
#define htobe16(x) __builtin_bswap16(x)
#define htobe32(x) __builtin_bswap32(x)
#define le32toh(x) (x)
#define htole32(x) (x)
#else
#define be16toh(x) (x)
#define be32toh(x) (x)
#define htobe16(x) (x)
#define htobe32(x) (x)
#define le32toh(x) __builtin_bswap32(x)
#define htole32(x) __builtin_bswap32(x)
#endif
#endif
static inline __u16 xiw_be16_to_cpu(__be16 x) { return (__u16)be16toh(x); }
static inline __u32 xiw_be32_to_cpu(__be32 x) { return (__u32)be32toh(x); }
static inline __be16 xiw_cpu_to_be16(__u16 x) { return (__be16)htobe16(x); }
static inline __be32 xiw_cpu_to_be32(__u32 x) { return (__be32)htobe32(x); }
static inline __u32 xiw_le32_to_cpu(__le32 x) { return (__u32)le32toh(x); }
static inline __le32 xiw_cpu_to_le32(__u32 x) { return (__le32)htole32(x); }
#endif

#ifdef __cplusplus
#define XIW_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#define XIW_NULL nullptr
#else
#define XIW_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define XIW_NULL ((void *)0)
#endif

/* ======================================================================
 * Generic 64-bit big-endian field (two 32-bit words, most significant first)
 * ==================================================================== */
struct xiw_be64 {
	__be32 hi;
	__be32 lo;
};

static inline __u64 xiw_get_be64(const struct xiw_be64 *f)
{
	return ((__u64)xiw_be32_to_cpu(f->hi) << 32) |
	       (__u64)xiw_be32_to_cpu(f->lo);
}

static inline void xiw_put_be64(struct xiw_be64 *f, __u64 v)
{
	f->hi = xiw_cpu_to_be32((__u32)(v >> 32));
	f->lo = xiw_cpu_to_be32((__u32)v);
}

/* ======================================================================
 * MPA - RFC 5044, RFC 6581
 * ==================================================================== */

/* RFC 5044 §7.1: the 16-byte keys of the request and reply frames. */
#define XIW_MPA_KEY_LEN 16
#define XIW_MPA_KEY_REQ "MPA ID Req Frame"
#define XIW_MPA_KEY_REP "MPA ID Rep Frame"

/*
 * RFC 5044 §7.1, Request/Reply frame header:
 *
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  ~                     Key (16 octets)                           ~
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |M|C|R|   Res   |      Rev      |           PD_Length           |
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  ~                   Private Data (PD_Length octets)             ~
 */
struct xiw_mpa_rr {
	__u8 key[XIW_MPA_KEY_LEN];
	__u8 flags;             /* XIW_MPA_FLAG_* */
	__u8 rev;               /* XIW_MPA_REV_* */
	__be16 pd_len;          /* private data length, <= XIW_MPA_MAX_PD */
};

enum {
	XIW_MPA_FLAG_M = 0x80,  /* Markers requested (RFC 5044 §7.1) */
	XIW_MPA_FLAG_C = 0x40,  /* CRC requested */
	XIW_MPA_FLAG_R = 0x20,  /* Rejected (reply frame only) */
	XIW_MPA_FLAG_RES_MASK = 0x1f, /* Res: zero on transmit, ignored on rx */
	/*
	 * xiw private: "this endpoint speaks the RDMAP extensions"
	 * (RFC 7306 Atomics/Immediate, draft-talpey Flush/Verify/Atomic
	 * Write, draft-wood RV=2).  RFC 7306 §1 and draft-talpey leave
	 * negotiation to the ULP; xiw advertises it in the MPA frame
	 * instead, using bit 0x04 of the flags octet (bit 5 in the RFC
	 * figure's numbering, i.e. the third of the five Res bits):
	 *   - it is inside Res, which RFC 5044 §7.1 requires stock peers to
	 *     send as zero and to ignore on receive, so a stock peer never
	 *     sets it and never chokes on it;
	 *   - 0x10 is taken: it marks a Rev 2 frame as carrying the RFC
	 *     6581 IRD/ORD word (XIW_MPA_FLAG_ENHANCED), 0x08 because Linux
	 *     siw uses it for its experimental GSO negotiation;  0x04 is
	 *     unused by any implementation we know of.
	 * A stock responder (Linux siw) returns the Request's Res bits
	 * unchanged in its Reply, so the Reply answers with a bit of its own,
	 * XIW_MPA_FLAG_EXT_ACK: extensions are used on a connection only if
	 * the Request carries XIW_MPA_FLAG_EXT and the Reply
	 * XIW_MPA_FLAG_EXT_ACK.
	 */
	XIW_MPA_FLAG_EXT = 0x04,
	/* The responder's answer to XIW_MPA_FLAG_EXT, see above. */
	XIW_MPA_FLAG_EXT_ACK = 0x02,
	/*
	 * RFC 6581 §5: Rev 2 frames start their private data with the
	 * IRD/ORD word.  The deployed implementations (Linux siw, cxgb4,
	 * irdma) mark its presence with this Res bit and refuse Rev 2 frames
	 * without it; a Rev 2 frame without it has no IRD/ORD word.
	 */
	XIW_MPA_FLAG_ENHANCED = 0x10,
};

enum {
	XIW_MPA_REV_V1 = 1,     /* RFC 5044 */
	XIW_MPA_REV_V2 = 2,     /* RFC 6581 enhanced connection setup */
};

#define XIW_MPA_MAX_PD 512      /* RFC 5044 §7.1: PD_Length <= 512 */

/*
 * RFC 6581 §5: with Rev 2 the first 4 octets of the private data are
 *
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |A|B|           IRD             |C|D|            ORD            |
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *
 *  A: peer-to-peer (Ready-To-Receive handshake requested)
 *  B: RTR may be a zero-length Send
 *  C: RTR may be a zero-length RDMA Write
 *  D: RTR may be a zero-length RDMA Read
 */
struct xiw_mpa_v2_ird_ord {
	__be16 ird;
	__be16 ord;
};

enum {
	XIW_MPA_V2_IRD_P2P = 0x8000,        /* A, in the IRD word */
	XIW_MPA_V2_IRD_RTR_SEND = 0x4000,   /* B, in the IRD word */
	XIW_MPA_V2_ORD_RTR_WRITE = 0x8000,  /* C, in the ORD word */
	XIW_MPA_V2_ORD_RTR_READ = 0x4000,   /* D, in the ORD word */
	XIW_MPA_V2_IRD_ORD_MASK = 0x3fff,   /* 14-bit IRD/ORD value */
};

static inline void xiw_mpa_v2_set(struct xiw_mpa_v2_ird_ord *p,
				  __u16 ird_flags, __u16 ird,
				  __u16 ord_flags, __u16 ord)
{
	p->ird = xiw_cpu_to_be16((__u16)((ird_flags & 0xc000u) |
					 (ird & XIW_MPA_V2_IRD_ORD_MASK)));
	p->ord = xiw_cpu_to_be16((__u16)((ord_flags & 0xc000u) |
					 (ord & XIW_MPA_V2_IRD_ORD_MASK)));
}

static inline __u16 xiw_mpa_v2_ird(const struct xiw_mpa_v2_ird_ord *p)
{
	return (__u16)(xiw_be16_to_cpu(p->ird) & XIW_MPA_V2_IRD_ORD_MASK);
}

static inline __u16 xiw_mpa_v2_ord(const struct xiw_mpa_v2_ird_ord *p)
{
	return (__u16)(xiw_be16_to_cpu(p->ord) & XIW_MPA_V2_IRD_ORD_MASK);
}

static inline __u16 xiw_mpa_v2_ird_flags(const struct xiw_mpa_v2_ird_ord *p)
{
	return (__u16)(xiw_be16_to_cpu(p->ird) & 0xc000u);
}

static inline __u16 xiw_mpa_v2_ord_flags(const struct xiw_mpa_v2_ird_ord *p)
{
	return (__u16)(xiw_be16_to_cpu(p->ord) & 0xc000u);
}

/*
 * RFC 5044 §4 FPDU:  ULPDU_Length (16) | ULPDU | PAD (0-3) | CRC (32)
 * ULPDU_Length counts the ULPDU (the DDP segment) only: not itself, not
 * the pad, not markers, not the CRC.  The pad makes
 * 2 + ULPDU_Length + pad a multiple of 4 (RFC 5044 §4); markers, being
 * 4 octets at 4-aligned stream positions, do not change it.
 */
#define XIW_MPA_HDR_LEN 2
#define XIW_MPA_CRC_LEN 4
#define XIW_MPA_ALIGN 4

static inline unsigned int xiw_mpa_pad_len(unsigned int ulpdu_len)
{
	return (XIW_MPA_ALIGN - ((XIW_MPA_HDR_LEN + ulpdu_len) &
				 (XIW_MPA_ALIGN - 1))) & (XIW_MPA_ALIGN - 1);
}

/* FPDU length on the stream, markers excluded. */
static inline unsigned int xiw_mpa_fpdu_len(unsigned int ulpdu_len)
{
	return XIW_MPA_HDR_LEN + ulpdu_len + xiw_mpa_pad_len(ulpdu_len) +
	       XIW_MPA_CRC_LEN;
}

/*
 * CRC trailer, RFC 5044 §4: CRC32c (Castagnoli, as in iSCSI), computed
 * over the FPDU as it is on the stream up to the CRC field: ULPDU_Length,
 * ULPDU, pad and the markers among them (a marker's reserved field is
 * "ignored on receive, except for the CRC").  The four octets carry the
 * conventional (reflected, complemented) CRC32c value least significant
 * octet first - RFC 3720 B.4 shows 32 zero octets giving the octets
 * aa 36 91 8a, i.e. value 0x8a9136aa - which is what the kernel's
 * crc32c + cpu_to_le32 and Linux siw produce.
 */
struct xiw_mpa_trailer {
	__le32 crc;
};

static inline void xiw_mpa_put_crc(struct xiw_mpa_trailer *t, __u32 crc)
{
	t->crc = xiw_cpu_to_le32(crc);
}

static inline __u32 xiw_mpa_get_crc(const struct xiw_mpa_trailer *t)
{
	return xiw_le32_to_cpu(t->crc);
}

/*
 * MPA markers, RFC 5044 §4.3, on a stream whose receiver set the M bit in
 * its MPA Request or Reply (§7.1).  Stream positions count the octets of
 * one direction from the first octet of Full Operation Phase (the first
 * FPDU after the Request or Reply), markers included; a marker starts at
 * every position that is a multiple of 512, 0 included.
 *
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |           RESERVED            |            FPDUPTR            |
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *
 * FPDUPTR: octets from the ULPDU_Length field of the FPDU the marker is
 * in to the marker; a sender clears its two low-order bits, a receiver
 * treats them as zero.  A marker where an FPDU begins belongs to that
 * FPDU, before its ULPDU_Length, with FPDUPTR 0 - as the very first
 * marker, "inserted immediately preceding the first FPDU", must be; the
 * FPDU's later markers count from its ULPDU_Length, 4 octets after that
 * one.  RESERVED is sent as zero and ignored on receive (but CRC'd).
 * Every FPDU field that is 4-aligned on the stream (ULPDU_Length, the
 * CRC) is whole on one side of a marker; a marker may fall between the
 * pad and the CRC, and then counts into the CRC like any other.
 */
struct xiw_mpa_marker {
	__be16 rsvd;
	__be16 fpdu_ptr;
};

#define XIW_MPA_MARKER_LEN 4
#define XIW_MPA_MARKER_INTERVAL 512

/* Octets from stream position @pos to the next marker; 0 if one starts. */
static inline unsigned int xiw_mpa_marker_gap(__u32 pos)
{
	return (XIW_MPA_MARKER_INTERVAL - pos) & (XIW_MPA_MARKER_INTERVAL - 1);
}

/*
 * The marker at stream position @pos, in (or at the start of) the FPDU
 * whose ULPDU_Length is at @fpdu_pos; @pos == @fpdu_pos for a marker
 * preceding it.
 */
static inline void xiw_mpa_marker_set(struct xiw_mpa_marker *m, __u32 pos,
				      __u32 fpdu_pos)
{
	m->rsvd = 0;
	m->fpdu_ptr = xiw_cpu_to_be16((__u16)(pos - fpdu_pos));
}

/*
 * Most markers an FPDU of @fpdu_len octets (markers excluded) can have
 * wherever it begins: k markers make its stream extent L = fpdu_len + 4k,
 * which holds at most (L + 511) / 512 of them, so 508k <= fpdu_len + 511.
 */
static inline unsigned int xiw_mpa_fpdu_markers_max(unsigned int fpdu_len)
{
	return (fpdu_len + XIW_MPA_MARKER_INTERVAL - 1) /
	       (XIW_MPA_MARKER_INTERVAL - XIW_MPA_MARKER_LEN);
}

/* ======================================================================
 * DDP - RFC 5041 §4
 * ==================================================================== */

/*
 * RFC 5041 §4.2 DDP Control Field (first octet of the DDP header):
 *
 *   0 1 2 3 4 5 6 7
 *  +-+-+-+-+-+-+-+-+
 *  |T|L| Resrv | DV|
 *  +-+-+-+-+-+-+-+-+
 */
enum {
	XIW_DDP_FLAG_T = 0x80,          /* Tagged buffer model */
	XIW_DDP_FLAG_L = 0x40,          /* Last segment of the message */
	XIW_DDP_RSVD_MASK = 0x3c,
	XIW_DDP_DV_MASK = 0x03,
	XIW_DDP_VERSION = 1,            /* RFC 5041 §4.2: DV = 01b */
};

#define XIW_DDP_HDR_OFFSET 2            /* after the MPA ULPDU_Length */
#define XIW_DDP_TAGGED_HLEN 14          /* RFC 5041 §4.3 */
#define XIW_DDP_UNTAGGED_HLEN 18        /* RFC 5041 §4.4 */

static inline __u8 xiw_ddp_ctrl(int tagged, int last)
{
	return (__u8)((tagged ? XIW_DDP_FLAG_T : 0) |
		      (last ? XIW_DDP_FLAG_L : 0) | XIW_DDP_VERSION);
}

static inline int xiw_ddp_tagged(__u8 c) { return !!(c & XIW_DDP_FLAG_T); }
static inline int xiw_ddp_last(__u8 c) { return !!(c & XIW_DDP_FLAG_L); }
static inline unsigned int xiw_ddp_version(__u8 c)
{
	return c & XIW_DDP_DV_MASK;
}

/* ======================================================================
 * RDMAP control field - RFC 5040 §4.2, extended per the drafts
 * ==================================================================== */

/*
 * RFC 5040 §4.2 (and RFC 7306 §4.1 Figure 1) - RDMAP Control Field, the
 * first octet of the DDP RsvdULP field:
 *
 *   0 1 2 3 4 5 6 7
 *  +-+-+-+-+-+-+-+-+
 *  | RV|Rsv| Opcode|      RV = 01b, Rsv zero, 4-bit Opcode
 *  +-+-+-+-+-+-+-+-+
 *
 * draft-talpey-rdma-commit-02 §2 Figure 1 and draft-wood-storm-rdmap-ext-
 * v2-00 §4.1 Figure 1 both draw the field as
 *
 *  +-+-+-+-+-+-+-+-+
 *  | RV|R|  Opcode |      RV, one reserved bit, 5-bit Opcode
 *  +-+-+-+-+-+-+-+-+
 *
 * i.e. the low bit of the RFC 5040 Rsv field becomes the most
 * significant opcode bit (draft-wood: "The Opcode field has been
 * extended one additional bit ... compatible with RFC 5040 since only the
 * new opcodes will set this bit to one").  Opcodes 0x10/0x11 (talpey,
 * RV=01b) and 0x11..0x16 (wood, RV=10b) are therefore encoded as
 * (RV << 6) | opcode, e.g. Atomic Write Request = 0x50, Send with
 * Immediate Data (RV=2) = 0x93.  For opcodes < 0x10 the encoding is
 * identical to RFC 5040's.  The RV value disambiguates 0x11.
 */
enum {
	XIW_RDMAP_RV_MASK = 0xc0,
	XIW_RDMAP_RV_SHIFT = 6,
	XIW_RDMAP_RSV_MASK = 0x20,      /* remaining reserved bit */
	XIW_RDMAP_OPCODE_MASK = 0x1f,   /* 5-bit opcode (drafts) */
	XIW_RDMAP_RSV4_MASK = 0x30,     /* RFC 5040 view: 2 reserved bits */
	XIW_RDMAP_OPCODE4_MASK = 0x0f,  /* RFC 5040 view: 4-bit opcode */
	XIW_RDMAP_RV1 = 1,              /* RFC 5040 / RFC 7306 / talpey */
	XIW_RDMAP_RV2 = 2,              /* draft-wood-storm-rdmap-ext-v2 */
};

static inline __u8 xiw_rdmap_ctrl(unsigned int rv, unsigned int opcode)
{
	return (__u8)(((rv << XIW_RDMAP_RV_SHIFT) & XIW_RDMAP_RV_MASK) |
		      (opcode & XIW_RDMAP_OPCODE_MASK));
}

static inline unsigned int xiw_rdmap_rv(__u8 c)
{
	return (unsigned int)(c & XIW_RDMAP_RV_MASK) >> XIW_RDMAP_RV_SHIFT;
}

static inline unsigned int xiw_rdmap_opcode(__u8 c)
{
	return c & XIW_RDMAP_OPCODE_MASK;
}

/* RDMAP opcodes.  RV=1: RFC 5040 §4.2 (0x0-0x7), RFC 7306 §4.1 Figure 2
 * (0x8-0xB), draft-talpey-rdma-commit-02 §2 Figure 2 / §5 (0xC-0x11). */
enum xiw_rdmap_opcode {
	XIW_OP_WRITE = 0x0,
	XIW_OP_READ_REQ = 0x1,
	XIW_OP_READ_RESP = 0x2,
	XIW_OP_SEND = 0x3,
	XIW_OP_SEND_INV = 0x4,
	XIW_OP_SEND_SE = 0x5,
	XIW_OP_SEND_SE_INV = 0x6,
	XIW_OP_TERMINATE = 0x7,
	XIW_OP_IMM = 0x8,               /* RFC 7306 Immediate Data */
	XIW_OP_IMM_SE = 0x9,            /* RFC 7306 Immediate Data with SE */
	XIW_OP_ATOMIC_REQ = 0xa,        /* RFC 7306 */
	XIW_OP_ATOMIC_RESP = 0xb,       /* RFC 7306 */
	XIW_OP_FLUSH_REQ = 0xc,         /* draft-talpey */
	XIW_OP_FLUSH_RESP = 0xd,
	XIW_OP_VERIFY_REQ = 0xe,
	XIW_OP_VERIFY_RESP = 0xf,
	XIW_OP_ATOMIC_WRITE_REQ = 0x10,
	XIW_OP_ATOMIC_WRITE_RESP = 0x11, /* with RV=1 only */
	/* RV=2: draft-wood-storm-rdmap-ext-v2-00 §4.1 Figure 2 / §10 */
	XIW_OP2_READ_REQ_V2 = 0x11,     /* with RV=2 only */
	XIW_OP2_READ_RESP_V2 = 0x12,
	XIW_OP2_SEND_IMM = 0x13,
	XIW_OP2_SEND_INV_IMM = 0x14,
	XIW_OP2_SEND_SE_IMM = 0x15,
	XIW_OP2_SEND_SE_INV_IMM = 0x16,
	XIW_OP_NONE = 0xff,             /* "no response" in the table */
};

/* DDP untagged queue numbers (RFC 5040 §4.2 table, RFC 7306 §10.2). */
enum {
	XIW_QN_SEND = 0,                /* Send variants, Immediate Data */
	XIW_QN_READ_REQ = 1,            /* Read/Atomic/Flush/Verify/AW req. */
	XIW_QN_TERMINATE = 2,
	XIW_QN_RESPONSE = 3,            /* RFC 7306: Atomic responses; also
					 * talpey and wood responses */
	XIW_QN_COUNT = 4,
	XIW_QN_NONE = 0xff,             /* tagged message: no queue */
};

/* ======================================================================
 * FPDU-relative DDP headers (MPA ULPDU_Length + DDP header)
 * ==================================================================== */

/* First 32-bit word of every FPDU. */
struct xiw_ctrl {
	__be16 mpa_len;         /* RFC 5044 §4 ULPDU_Length */
	__u8 ddp_ctrl;          /* RFC 5041 §4.2 DDP Control */
	__u8 rdmap_ctrl;        /* RFC 5041 RsvdULP[0] = RFC 5040 §4.2 */
};

/*
 * RFC 5041 §4.3 Tagged Buffer DDP header (14 octets):
 *
 *                                   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *                                   |T|L| Resrv | DV|   RsvdULP     |
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |                              STag                             |
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |                           TO (64 bits)                        |
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 */
struct xiw_ddp_tagged_hdr {
	struct xiw_ctrl ctrl;
	__be32 stag;
	struct xiw_be64 to;
};

/*
 * RFC 5041 §4.4 Untagged Buffer DDP header (18 octets):
 *
 *                                   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *                                   |T|L| Resrv | DV| RsvdULP[0:7]  |
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |                           RsvdULP[8:39]                       |
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |                            QN                                 |
 *   |                            MSN                                |
 *   |                            MO                                 |
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *
 * RsvdULP[8:39] is the RDMAP Invalidate STag (RFC 5040 §4.2), zero
 * unless the opcode carries one.
 */
struct xiw_ddp_untagged_hdr {
	struct xiw_ctrl ctrl;
	__be32 inval_stag;
	__be32 qn;
	__be32 msn;
	__be32 mo;
};

static inline void xiw_ctrl_set(struct xiw_ctrl *c, __u16 mpa_len, int tagged,
				int last, unsigned int rv, unsigned int opcode)
{
	c->mpa_len = xiw_cpu_to_be16(mpa_len);
	c->ddp_ctrl = xiw_ddp_ctrl(tagged, last);
	c->rdmap_ctrl = xiw_rdmap_ctrl(rv, opcode);
}

static inline void xiw_tagged_set(struct xiw_ddp_tagged_hdr *h, __u32 stag,
				  __u64 to)
{
	h->stag = xiw_cpu_to_be32(stag);
	xiw_put_be64(&h->to, to);
}

static inline void xiw_untagged_set(struct xiw_ddp_untagged_hdr *h,
				    __u32 inval_stag, __u32 qn, __u32 msn,
				    __u32 mo)
{
	h->inval_stag = xiw_cpu_to_be32(inval_stag);
	h->qn = xiw_cpu_to_be32(qn);
	h->msn = xiw_cpu_to_be32(msn);
	h->mo = xiw_cpu_to_be32(mo);
}

/* ======================================================================
 * RDMAP headers (the octets right after the DDP header)
 * ==================================================================== */

/*
 * RFC 5040 §4.4 RDMA Read Request Header (28 octets):
 * Data Sink STag, Data Sink Tagged Offset (64), RDMA Read Message Size,
 * Data Source STag, Data Source Tagged Offset (64).
 */
struct xiw_rdmap_read_req {
	__be32 sink_stag;
	struct xiw_be64 sink_to;
	__be32 read_size;
	__be32 src_stag;
	struct xiw_be64 src_to;
};

/*
 * RFC 5040 §4.8 Terminate Header:
 *
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  | Layer | EType |  Error Code   |M|D|R|  Reserved (13 bits)     |
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  |  DDP Segment Length (if any)  |                               |
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
 *  ~          Terminated DDP Header (if any, 14 or 18 octets)      ~
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *  ~          Terminated RDMA Header (if any, 28 octets)           ~
 *  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *
 * (The 24-bit Terminate Control is followed by an 8-bit Reserved field.)
 * M: DDP Segment Length valid; D: Terminated DDP Header included;
 * R: Terminated RDMA Header included (only a Read Request header can be
 * copied; RFC 7306 §8.1 and draft-talpey §4.1 send it as zero).  The
 * segment length + DDP header pair has exactly the layout of
 * struct xiw_ddp_(un)tagged_hdr, so ddp_seg_len..ddp_hdr can be viewed as
 * one of those (offset 4 here).  A terminated tagged header uses the first
 * 14 octets of ddp_hdr.
 */
struct xiw_rdmap_terminate {
	__be32 ctrl;
	__be16 ddp_seg_len;
	__u8 ddp_hdr[XIW_DDP_UNTAGGED_HLEN];
	__u8 rdma_hdr[28];
};

enum {
	XIW_TERM_LAYER_SHIFT = 28,
	XIW_TERM_ETYPE_SHIFT = 24,
	XIW_TERM_ECODE_SHIFT = 16,
	XIW_TERM_FLAG_M = 0x8000,       /* DDP Segment Length valid */
	XIW_TERM_FLAG_D = 0x4000,       /* DDP header included */
	XIW_TERM_FLAG_R = 0x2000,       /* RDMA header included */
	XIW_TERM_FLAGS_MASK = 0xe000,
};

/* Terminate Layer (RFC 5040 §4.8). */
enum xiw_term_layer {
	XIW_TERM_LAYER_RDMAP = 0x0,
	XIW_TERM_LAYER_DDP = 0x1,
	XIW_TERM_LAYER_LLP = 0x2,       /* MPA/TCP (RFC 5044 §8) */
};

/* RDMAP layer error types and codes (RFC 5040 §4.8 table, §7). */
enum xiw_rdmap_etype {
	XIW_RDMAP_ETYPE_LOCAL_CATASTROPHIC = 0x0,
	XIW_RDMAP_ETYPE_REMOTE_PROTECTION = 0x1,
	XIW_RDMAP_ETYPE_REMOTE_OPERATION = 0x2,
};

enum xiw_rdmap_ecode {
	XIW_RDMAP_ECODE_LOCAL_CATASTROPHIC = 0x00, /* with etype 0x0 */
	XIW_RDMAP_ECODE_INVALID_STAG = 0x00,
	XIW_RDMAP_ECODE_BASE_BOUNDS = 0x01,
	XIW_RDMAP_ECODE_ACCESS_RIGHTS = 0x02,
	XIW_RDMAP_ECODE_STAG_NOT_ASSOC = 0x03,
	XIW_RDMAP_ECODE_TO_WRAP = 0x04,
	XIW_RDMAP_ECODE_INVALID_VERSION = 0x05,
	XIW_RDMAP_ECODE_UNEXPECTED_OPCODE = 0x06,
	XIW_RDMAP_ECODE_CATASTROPHIC_STREAM = 0x07,
	XIW_RDMAP_ECODE_CATASTROPHIC_GLOBAL = 0x08,
	XIW_RDMAP_ECODE_CANNOT_INVALIDATE = 0x09,
	XIW_RDMAP_ECODE_UNSPECIFIED = 0xff,
};

/* DDP layer error types and codes (RFC 5041 §7.2, RFC 5040 §4.8). */
enum xiw_ddp_etype {
	XIW_DDP_ETYPE_LOCAL_CATASTROPHIC = 0x0,
	XIW_DDP_ETYPE_TAGGED = 0x1,
	XIW_DDP_ETYPE_UNTAGGED = 0x2,
	XIW_DDP_ETYPE_RSVD = 0x3,
};

enum xiw_ddp_ecode {
	XIW_DDP_ECODE_LOCAL_CATASTROPHIC = 0x00,
	/* tagged buffer errors */
	XIW_DDP_ECODE_T_INVALID_STAG = 0x00,
	XIW_DDP_ECODE_T_BASE_BOUNDS = 0x01,
	XIW_DDP_ECODE_T_STAG_NOT_ASSOC = 0x02,
	XIW_DDP_ECODE_T_TO_WRAP = 0x03,
	XIW_DDP_ECODE_T_INVALID_VERSION = 0x04,
	/* untagged buffer errors */
	XIW_DDP_ECODE_UT_INVALID_QN = 0x01,
	XIW_DDP_ECODE_UT_INVALID_MSN_NOBUF = 0x02,
	XIW_DDP_ECODE_UT_INVALID_MSN_RANGE = 0x03,
	XIW_DDP_ECODE_UT_INVALID_MO = 0x04,
	XIW_DDP_ECODE_UT_MSG_TOO_LONG = 0x05,
	XIW_DDP_ECODE_UT_INVALID_VERSION = 0x06,
};

/* LLP (MPA) layer (RFC 5044 §8; codes 0x05-0x07 added by RFC 6581). */
enum xiw_llp_etype {
	XIW_LLP_ETYPE_MPA = 0x0,
};

enum xiw_llp_ecode {
	XIW_LLP_ECODE_TCP_LOST = 0x01,          /* connection closed/lost */
	XIW_LLP_ECODE_CRC = 0x02,               /* received CRC mismatch */
	XIW_LLP_ECODE_MARKER = 0x03,            /* marker/ULPDU_Length error */
	XIW_LLP_ECODE_INVALID_REQ_REP = 0x04,   /* bad Request/Reply frame */
	XIW_LLP_ECODE_LOCAL_CATASTROPHIC = 0x05, /* RFC 6581 */
	XIW_LLP_ECODE_INSUFFICIENT_IRD = 0x06,  /* RFC 6581 */
	XIW_LLP_ECODE_NO_MATCHING_RTR = 0x07,   /* RFC 6581 */
};

/*
 * RFC 7306 §8 and draft-talpey §4 define no new codes; they say which
 * existing codes to use.  The ones they name explicitly:
 *   - misaligned Atomic target (RFC 7306 §8.2): RDMAP layer, Remote
 *     Operation Error, "Catastrophic error, localized to RDMAP Stream";
 *   - unsupported extension opcode (RFC 7306 §1, talpey §2.4): Remote
 *     Operation Error or Unexpected OpCode.
 */
#define XIW_TERM_ATOMIC_MISALIGNED_ETYPE XIW_RDMAP_ETYPE_REMOTE_OPERATION
#define XIW_TERM_ATOMIC_MISALIGNED_ECODE XIW_RDMAP_ECODE_CATASTROPHIC_STREAM

static inline __be32 xiw_term_ctrl(unsigned int layer, unsigned int etype,
				   unsigned int ecode, unsigned int flags)
{
	return xiw_cpu_to_be32(((layer & 0xfu) << XIW_TERM_LAYER_SHIFT) |
			       ((etype & 0xfu) << XIW_TERM_ETYPE_SHIFT) |
			       ((ecode & 0xffu) << XIW_TERM_ECODE_SHIFT) |
			       (flags & XIW_TERM_FLAGS_MASK));
}

static inline unsigned int xiw_term_layer(__be32 ctrl)
{
	return (xiw_be32_to_cpu(ctrl) >> XIW_TERM_LAYER_SHIFT) & 0xfu;
}

static inline unsigned int xiw_term_etype(__be32 ctrl)
{
	return (xiw_be32_to_cpu(ctrl) >> XIW_TERM_ETYPE_SHIFT) & 0xfu;
}

static inline unsigned int xiw_term_ecode(__be32 ctrl)
{
	return (xiw_be32_to_cpu(ctrl) >> XIW_TERM_ECODE_SHIFT) & 0xffu;
}

static inline unsigned int xiw_term_flags(__be32 ctrl)
{
	return xiw_be32_to_cpu(ctrl) & XIW_TERM_FLAGS_MASK;
}

/*
 * RFC 7306 §6.2 Figure 7 Immediate Data header: 8 opaque octets of ULP
 * data (also the last segment of draft-wood Send with Immediate, §5.3).
 */
#define XIW_IMM_DATA_LEN 8
struct xiw_rdmap_imm {
	__u8 data[XIW_IMM_DATA_LEN];
};

/*
 * RFC 7306 §5.2.1 Figure 4 Atomic Operation Request header (52 octets):
 *
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |                      Reserved (Not Used)              |AOpCode|
 *   |                       Request Identifier                      |
 *   |                          Remote STag                          |
 *   |                  Remote Tagged Offset (64)                    |
 *   |                    Add or Swap Data (64)                      |
 *   |                    Add or Swap Mask (64)                      |
 *   |                      Compare Data (64)                        |
 *   |                      Compare Mask (64)                        |
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 */
struct xiw_rdmap_atomic_req {
	__be32 aopcode;         /* 28 reserved bits, AOpCode in bits 28-31 */
	__be32 req_id;
	__be32 stag;
	struct xiw_be64 to;
	struct xiw_be64 add_swap;
	struct xiw_be64 add_swap_mask;
	struct xiw_be64 compare;
	struct xiw_be64 compare_mask;
};

/* AOpCode, RFC 7306 §5.2.1 Figure 5 and §10.1. */
enum xiw_aopcode {
	XIW_AOP_FETCH_ADD = 0x0,
	/* draft-ietf-storm-rdmap-ext-01 §5.1.2 "Swap"; Reserved in RFC 7306 */
	XIW_AOP_SWAP_DRAFT = 0x1,
	XIW_AOP_CMP_SWAP = 0x2,
	XIW_AOP_MASK = 0xf,
};

/* RFC 7306 §5.2.1: unused masks are sent as all ones, unused compare
 * data as zero. */
#define XIW_ATOMIC_MASK_UNUSED (~(__u64)0)

/*
 * RFC 7306 §5.2.2 Figure 6 Atomic Operation Response header (12 octets;
 * §4 says "32 bytes", which is the length including MPA length + DDP
 * untagged header: 2 + 18 + 12).
 */
struct xiw_rdmap_atomic_resp {
	__be32 req_id;          /* Original Request Identifier */
	struct xiw_be64 orig;   /* Original Remote Data Value */
};

/*
 * draft-talpey-rdma-commit-02 §2.1.1 RDMA Flush Request (20 octets):
 * Data Sink STag, Data Sink Length, Data Sink Tagged Offset (64),
 * Flush Disposition Flags (32, low bits R G P).
 */
struct xiw_rdmap_flush_req {
	__be32 sink_stag;
	__be32 sink_len;
	struct xiw_be64 sink_to;
	__be32 flags;
};

/*
 * The Flush Disposition Flags (§4.1.1).  Not the verbs' XIW_FLUSH_GLOBAL /
 * _PERSISTENT placement types of xiw-abi.h, whose values are the other way
 * round (rdma-core's).
 */
enum {
	XIW_FLUSH_DISP_P = 0x1,      /* flush to Persistence */
	XIW_FLUSH_DISP_G = 0x2,      /* flush to Global visibility (text: "V") */
	XIW_FLUSH_DISP_R = 0x4,      /* entire Region: length and TO ignored */
	XIW_FLUSH_DISP_MASK = 0x7,
};

/*
 * draft-talpey §2.2.1 RDMA Verify Request: Data Sink STag, Length,
 * Tagged Offset (64), followed by an optional, variable-length Hash Value
 * (the rest of the message).  §2.2.3 Verify Response carries only the
 * variable, non-zero-length Hash Value (no fixed header).
 */
struct xiw_rdmap_verify_req {
	__be32 sink_stag;
	__be32 sink_len;
	struct xiw_be64 sink_to;
	/* __u8 hash[]; */
};

/*
 * draft-talpey §2.3.1 Atomic Write Request (24 octets): Data Sink STag,
 * Data Sink Length (MUST be 8), Data Sink Tagged Offset (64), Data (64,
 * big-endian).  Flush/Verify/Atomic Write Responses carry no header.
 */
struct xiw_rdmap_atomic_write_req {
	__be32 sink_stag;
	__be32 sink_len;
	struct xiw_be64 sink_to;
	struct xiw_be64 data;
};
#define XIW_ATOMIC_WRITE_LEN 8

/*
 * draft-wood-storm-rdmap-ext-v2-00 §6.1 Figure 4 RDMA Read V2 Request
 * (16 octets): RDMA Read Message Size, Data Source STag, Data Source
 * Tagged Offset (64).  The Read V2 Response (QN 3) has no RDMAP header.
 */
struct xiw_rdmap_read_req_v2 {
	__be32 read_size;
	__be32 src_stag;
	struct xiw_be64 src_to;
};

/* ======================================================================
 * Complete headers of one DDP segment, from ULPDU_Length on
 * ==================================================================== */
struct xiw_hdr_read_req {
	struct xiw_ddp_untagged_hdr ddp;
	struct xiw_rdmap_read_req rreq;
};

struct xiw_hdr_terminate {
	struct xiw_ddp_untagged_hdr ddp;
	struct xiw_rdmap_terminate term;
};

struct xiw_hdr_imm {
	struct xiw_ddp_untagged_hdr ddp;
	struct xiw_rdmap_imm imm;
};

struct xiw_hdr_atomic_req {
	struct xiw_ddp_untagged_hdr ddp;
	struct xiw_rdmap_atomic_req atomic;
};

struct xiw_hdr_atomic_resp {
	struct xiw_ddp_untagged_hdr ddp;
	struct xiw_rdmap_atomic_resp atomic;
};

struct xiw_hdr_flush_req {
	struct xiw_ddp_untagged_hdr ddp;
	struct xiw_rdmap_flush_req flush;
};

struct xiw_hdr_verify_req {
	struct xiw_ddp_untagged_hdr ddp;
	struct xiw_rdmap_verify_req verify;
};

struct xiw_hdr_atomic_write_req {
	struct xiw_ddp_untagged_hdr ddp;
	struct xiw_rdmap_atomic_write_req awrite;
};

struct xiw_hdr_read_req_v2 {
	struct xiw_ddp_untagged_hdr ddp;
	struct xiw_rdmap_read_req_v2 rreq;
};

/* Any segment's headers; size = the longest (Atomic Request). */
union xiw_hdr {
	struct xiw_ctrl ctrl;
	struct xiw_ddp_tagged_hdr tagged;       /* Write, Read Response */
	struct xiw_ddp_untagged_hdr untagged;   /* Sends, responses */
	struct xiw_hdr_read_req rreq;
	struct xiw_hdr_terminate term;
	struct xiw_hdr_imm imm;
	struct xiw_hdr_atomic_req atomic_req;
	struct xiw_hdr_atomic_resp atomic_resp;
	struct xiw_hdr_flush_req flush_req;
	struct xiw_hdr_verify_req verify_req;
	struct xiw_hdr_atomic_write_req awrite_req;
	struct xiw_hdr_read_req_v2 rreq_v2;
};

/* ======================================================================
 * Size / layout checks
 * ==================================================================== */
XIW_STATIC_ASSERT(sizeof(struct xiw_be64) == 8, "xiw_be64");
XIW_STATIC_ASSERT(sizeof(struct xiw_mpa_rr) == 20, "MPA req/rep header");
XIW_STATIC_ASSERT(sizeof(struct xiw_mpa_v2_ird_ord) == 4, "MPA v2 PD");
XIW_STATIC_ASSERT(sizeof(struct xiw_mpa_marker) == 4, "MPA marker");
XIW_STATIC_ASSERT(sizeof(struct xiw_mpa_trailer) == 4, "MPA CRC");
XIW_STATIC_ASSERT(sizeof(struct xiw_ctrl) == 4, "ctrl");
XIW_STATIC_ASSERT(sizeof(struct xiw_ddp_tagged_hdr) ==
		  XIW_DDP_HDR_OFFSET + XIW_DDP_TAGGED_HLEN, "DDP tagged");
XIW_STATIC_ASSERT(sizeof(struct xiw_ddp_untagged_hdr) ==
		  XIW_DDP_HDR_OFFSET + XIW_DDP_UNTAGGED_HLEN, "DDP untagged");
XIW_STATIC_ASSERT(sizeof(struct xiw_rdmap_read_req) == 28, "Read Req");
XIW_STATIC_ASSERT(sizeof(struct xiw_rdmap_terminate) == 52, "Terminate");
XIW_STATIC_ASSERT(sizeof(struct xiw_rdmap_imm) == 8, "Immediate");
XIW_STATIC_ASSERT(sizeof(struct xiw_rdmap_atomic_req) == 52, "Atomic Req");
XIW_STATIC_ASSERT(sizeof(struct xiw_rdmap_atomic_resp) == 12, "Atomic Resp");
XIW_STATIC_ASSERT(sizeof(struct xiw_rdmap_flush_req) == 20, "Flush Req");
XIW_STATIC_ASSERT(sizeof(struct xiw_rdmap_verify_req) == 16, "Verify Req");
XIW_STATIC_ASSERT(sizeof(struct xiw_rdmap_atomic_write_req) == 24, "AW Req");
XIW_STATIC_ASSERT(sizeof(struct xiw_rdmap_read_req_v2) == 16, "Read V2");
XIW_STATIC_ASSERT(sizeof(union xiw_hdr) == 72, "largest header");

/* ======================================================================
 * Opcode table
 * ==================================================================== */

/* Per-opcode properties (struct xiw_opcode_info.flags). */
enum {
	XIW_OPF_TAGGED = 0x01,   /* tagged buffer model (no QN) */
	XIW_OPF_PAYLOAD = 0x02,  /* may carry ULP payload after the header */
	XIW_OPF_INVAL = 0x04,    /* carries an Invalidate STag */
	XIW_OPF_SE = 0x08,       /* solicited event */
	XIW_OPF_RESPONSE = 0x10, /* is the response to a QN 1 request */
	XIW_OPF_VARLEN = 0x20,   /* header is followed by a variable tail
				  * (Terminate copies, Verify hash value) */
	XIW_OPF_IMM_LAST = 0x40, /* last segment = 8 octets Immediate Data
				  * (draft-wood §5.3) */
};

/* Which RDMAP versions an opcode is valid with (struct .rv_mask). */
enum {
	XIW_RVM_1 = 0x1,
	XIW_RVM_2 = 0x2,
	/* draft-wood §4.1: once RV=2 is negotiated every message, including
	 * those of RFC 5040 and RFC 7306, is sent with RV=2. */
	XIW_RVM_12 = 0x3,
};

/* Defining document (struct .spec). */
enum {
	XIW_SPEC_RFC5040 = 1,
	XIW_SPEC_RFC7306 = 2,
	XIW_SPEC_TALPEY = 3,    /* draft-talpey-rdma-commit-02 */
	XIW_SPEC_WOOD = 4,      /* draft-wood-storm-rdmap-ext-v2-00 */
};

struct xiw_opcode_info {
	const char *name;
	__u8 opcode;            /* 5-bit RDMAP opcode */
	__u8 rv_mask;           /* XIW_RVM_* */
	__u8 qn;                /* untagged QN, XIW_QN_NONE if tagged */
	__u8 hdr_len;           /* fixed RDMAP header octets after DDP hdr */
	__u8 resp_opcode;       /* opcode of the response, XIW_OP_NONE */
	__u8 flags;             /* XIW_OPF_* */
	__u8 spec;              /* XIW_SPEC_* */
};

/*
 * X(name, opcode, rv_mask, qn, hdr_len, resp_opcode, flags, spec)
 *
 * Sources: RFC 5040 §4.2 (table), §4.4, §4.8; RFC 7306 §4.1 Figure 2,
 * §4.2 Figure 3; draft-talpey §2 Figures 2/3, §2.1-§2.3; draft-wood §4.1
 * Figure 2, §4.2 Figure 3.  hdr_len of Terminate is its fixed 4-octet
 * control word (optional copies follow, XIW_OPF_VARLEN).
 */
#define XIW_RDMAP_OPCODES(X)						\
	X("RDMA Write", XIW_OP_WRITE, XIW_RVM_12, XIW_QN_NONE, 0,	\
	  XIW_OP_NONE, XIW_OPF_TAGGED | XIW_OPF_PAYLOAD, XIW_SPEC_RFC5040) \
	X("RDMA Read Request", XIW_OP_READ_REQ, XIW_RVM_12,		\
	  XIW_QN_READ_REQ, 28, XIW_OP_READ_RESP, 0, XIW_SPEC_RFC5040)	\
	X("RDMA Read Response", XIW_OP_READ_RESP, XIW_RVM_12, XIW_QN_NONE, \
	  0, XIW_OP_NONE,						\
	  XIW_OPF_TAGGED | XIW_OPF_PAYLOAD | XIW_OPF_RESPONSE,		\
	  XIW_SPEC_RFC5040)						\
	X("Send", XIW_OP_SEND, XIW_RVM_12, XIW_QN_SEND, 0, XIW_OP_NONE,	\
	  XIW_OPF_PAYLOAD, XIW_SPEC_RFC5040)				\
	X("Send with Invalidate", XIW_OP_SEND_INV, XIW_RVM_12, XIW_QN_SEND, \
	  0, XIW_OP_NONE, XIW_OPF_PAYLOAD | XIW_OPF_INVAL,		\
	  XIW_SPEC_RFC5040)						\
	X("Send with SE", XIW_OP_SEND_SE, XIW_RVM_12, XIW_QN_SEND, 0,	\
	  XIW_OP_NONE, XIW_OPF_PAYLOAD | XIW_OPF_SE, XIW_SPEC_RFC5040)	\
	X("Send with SE and Invalidate", XIW_OP_SEND_SE_INV, XIW_RVM_12, \
	  XIW_QN_SEND, 0, XIW_OP_NONE,					\
	  XIW_OPF_PAYLOAD | XIW_OPF_SE | XIW_OPF_INVAL, XIW_SPEC_RFC5040) \
	X("Terminate", XIW_OP_TERMINATE, XIW_RVM_12, XIW_QN_TERMINATE, 4, \
	  XIW_OP_NONE, XIW_OPF_VARLEN, XIW_SPEC_RFC5040)		\
	X("Immediate Data", XIW_OP_IMM, XIW_RVM_12, XIW_QN_SEND, 8,	\
	  XIW_OP_NONE, 0, XIW_SPEC_RFC7306)				\
	X("Immediate Data with SE", XIW_OP_IMM_SE, XIW_RVM_12, XIW_QN_SEND, \
	  8, XIW_OP_NONE, XIW_OPF_SE, XIW_SPEC_RFC7306)			\
	X("Atomic Request", XIW_OP_ATOMIC_REQ, XIW_RVM_12, XIW_QN_READ_REQ, \
	  52, XIW_OP_ATOMIC_RESP, 0, XIW_SPEC_RFC7306)			\
	X("Atomic Response", XIW_OP_ATOMIC_RESP, XIW_RVM_12,		\
	  XIW_QN_RESPONSE, 12, XIW_OP_NONE, XIW_OPF_RESPONSE,		\
	  XIW_SPEC_RFC7306)						\
	X("RDMA Flush Request", XIW_OP_FLUSH_REQ, XIW_RVM_1,		\
	  XIW_QN_READ_REQ, 20, XIW_OP_FLUSH_RESP, 0, XIW_SPEC_TALPEY)	\
	X("RDMA Flush Response", XIW_OP_FLUSH_RESP, XIW_RVM_1,		\
	  XIW_QN_RESPONSE, 0, XIW_OP_NONE, XIW_OPF_RESPONSE,		\
	  XIW_SPEC_TALPEY)						\
	X("RDMA Verify Request", XIW_OP_VERIFY_REQ, XIW_RVM_1,		\
	  XIW_QN_READ_REQ, 16, XIW_OP_VERIFY_RESP, XIW_OPF_VARLEN,	\
	  XIW_SPEC_TALPEY)						\
	X("RDMA Verify Response", XIW_OP_VERIFY_RESP, XIW_RVM_1,	\
	  XIW_QN_RESPONSE, 0, XIW_OP_NONE,				\
	  XIW_OPF_RESPONSE | XIW_OPF_VARLEN, XIW_SPEC_TALPEY)		\
	X("Atomic Write Request", XIW_OP_ATOMIC_WRITE_REQ, XIW_RVM_1,	\
	  XIW_QN_READ_REQ, 24, XIW_OP_ATOMIC_WRITE_RESP, 0,		\
	  XIW_SPEC_TALPEY)						\
	X("Atomic Write Response", XIW_OP_ATOMIC_WRITE_RESP, XIW_RVM_1,	\
	  XIW_QN_RESPONSE, 0, XIW_OP_NONE, XIW_OPF_RESPONSE,		\
	  XIW_SPEC_TALPEY)						\
	X("RDMA Read V2 Request", XIW_OP2_READ_REQ_V2, XIW_RVM_2,	\
	  XIW_QN_READ_REQ, 16, XIW_OP2_READ_RESP_V2, 0, XIW_SPEC_WOOD)	\
	X("RDMA Read V2 Response", XIW_OP2_READ_RESP_V2, XIW_RVM_2,	\
	  XIW_QN_RESPONSE, 0, XIW_OP_NONE,				\
	  XIW_OPF_PAYLOAD | XIW_OPF_RESPONSE, XIW_SPEC_WOOD)		\
	X("Send with Immediate Data", XIW_OP2_SEND_IMM, XIW_RVM_2,	\
	  XIW_QN_SEND, 0, XIW_OP_NONE,					\
	  XIW_OPF_PAYLOAD | XIW_OPF_IMM_LAST, XIW_SPEC_WOOD)		\
	X("Send with Invalidate and Immediate Data", XIW_OP2_SEND_INV_IMM, \
	  XIW_RVM_2, XIW_QN_SEND, 0, XIW_OP_NONE,			\
	  XIW_OPF_PAYLOAD | XIW_OPF_INVAL | XIW_OPF_IMM_LAST, XIW_SPEC_WOOD) \
	X("Send with SE and Immediate Data", XIW_OP2_SEND_SE_IMM,	\
	  XIW_RVM_2, XIW_QN_SEND, 0, XIW_OP_NONE,			\
	  XIW_OPF_PAYLOAD | XIW_OPF_SE | XIW_OPF_IMM_LAST, XIW_SPEC_WOOD) \
	X("Send with Invalidate and SE and Immediate Data",		\
	  XIW_OP2_SEND_SE_INV_IMM, XIW_RVM_2, XIW_QN_SEND, 0, XIW_OP_NONE, \
	  XIW_OPF_PAYLOAD | XIW_OPF_INVAL | XIW_OPF_SE | XIW_OPF_IMM_LAST, \
	  XIW_SPEC_WOOD)

#define XIW_OPCODE_INFO_INIT(nm, op, rvm, q, hl, rop, fl, sp)		\
	{ nm, (__u8)(op), (__u8)(rvm), (__u8)(q), (__u8)(hl), (__u8)(rop), \
	  (__u8)(fl), (__u8)(sp) },
#define XIW_OPCODE_COUNT_ONE(nm, op, rvm, q, hl, rop, fl, sp) +1

enum { XIW_OPCODE_COUNT = 0 XIW_RDMAP_OPCODES(XIW_OPCODE_COUNT_ONE) };

/*
 * Look up (RV, opcode) - opcode being the 5-bit value of
 * xiw_rdmap_opcode().  Returns NULL for an invalid RV or an opcode not
 * defined for that RV.  idx (0 <= idx < XIW_OPCODE_COUNT) walks the whole
 * table with xiw_opcode_at().
 */
static inline const struct xiw_opcode_info *xiw_opcode_at(unsigned int idx)
{
	static const struct xiw_opcode_info tbl[] = {
		XIW_RDMAP_OPCODES(XIW_OPCODE_INFO_INIT)
	};

	if (idx >= sizeof(tbl) / sizeof(tbl[0]))
		return XIW_NULL;
	return &tbl[idx];
}

static inline const struct xiw_opcode_info *
xiw_opcode_lookup(unsigned int rv, unsigned int opcode)
{
	const struct xiw_opcode_info *oi;
	unsigned int i;

	if (rv != XIW_RDMAP_RV1 && rv != XIW_RDMAP_RV2)
		return XIW_NULL;
	for (i = 0; (oi = xiw_opcode_at(i)) != XIW_NULL; i++)
		if (oi->opcode == opcode && (oi->rv_mask & (1u << (rv - 1))))
			return oi;
	return XIW_NULL;
}

/*
 * The Solicited Event variant of untagged message @opcode of version @rv:
 * the row that differs from it by XIW_OPF_SE only (RFC 5040 §4.2, RFC 7306
 * §4.1, draft-wood §4.1); @opcode itself if there is none.
 */
static inline unsigned int xiw_opcode_solicited(unsigned int rv,
						unsigned int opcode)
{
	const struct xiw_opcode_info *oi = xiw_opcode_lookup(rv, opcode);
	const struct xiw_opcode_info *se;
	unsigned int i;

	if (!oi || oi->flags & (XIW_OPF_TAGGED | XIW_OPF_SE))
		return opcode;
	for (i = 0; (se = xiw_opcode_at(i)) != XIW_NULL; i++)
		if (se->flags == (oi->flags | XIW_OPF_SE) &&
		    se->rv_mask == oi->rv_mask && se->qn == oi->qn &&
		    se->hdr_len == oi->hdr_len)
			return se->opcode;
	return opcode;
}

#endif /* XIW_WIRE_H */
