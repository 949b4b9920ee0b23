/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * xiw - what an MPA Request and Reply decide, as pure functions.
 *
 * The connection manager (kernel/xiw_cm.c) reads and writes the frames;
 * what goes into them and what the connection then uses is decided here,
 * from the frames' negotiation fields and the local settings alone, so
 * that host unit tests (tests/wire) can walk every combination of
 * revision, flags, IRD/ORD and RTR offer.
 *
 * Sources: RFC 5044 §7.1 (M, C, R bits, revision), RFC 6581 §5 (the
 * IRD/ORD word: §5.1 IRD and ORD, §5.2 peer-to-peer mode and the RTR),
 * and the RDMAP extensions bit pair of wire.h (XIW_MPA_FLAG_EXT/_EXT_ACK).
 */
#ifndef XIW_MPA_NEGOTIATE_H
#define XIW_MPA_NEGOTIATE_H

#include <xiw/wire.h>

/* The negotiation fields of an MPA Request or Reply. */
struct xiw_mpa_terms {
	__u8 rev;		/* XIW_MPA_REV_V1 or _V2 */
	__u8 flags;		/* XIW_MPA_FLAG_* of the frame */
	__u8 has_v2w;		/* the RFC 6581 IRD/ORD word is in the frame */
	/* The sender's IRD and ORD: on the wire only with has_v2w. */
	__u16 ird, ord;
	__u16 ird_flags;	/* XIW_MPA_V2_IRD_P2P, _RTR_SEND */
	__u16 ord_flags;	/* XIW_MPA_V2_ORD_RTR_WRITE, _RTR_READ */
};

/* The local settings (xiw's module parameters and device limits). */
struct xiw_mpa_policy {
	__u8 rev;		/* highest revision to speak */
	__u8 crc;		/* ask for CRC32c */
	__u8 markers;		/* ask the peer for markers */
	__u8 p2p;		/* RFC 6581 peer-to-peer mode, with an RTR */
	__u16 max_ird, max_ord;	/* of the device */
};

/* What one side's connection uses. */
struct xiw_mpa_result {
	__u8 crc;		/* FPDUs carry a CRC32c, both directions */
	__u8 markers_tx;	/* the peer asked for markers */
	__u8 markers_rx;	/* we asked for markers */
	__u8 extensions;	/* the RDMAP extensions are on */
	__u8 p2p;		/* an RTR opens the connection */
	__u8 rtr_opcode;	/* its RDMAP opcode: XIW_OP_WRITE, _READ_REQ, _SEND */
	__u16 ird, ord;
};

/* What a Reply means to its initiator (xiw_mpa_conclude()). */
enum xiw_mpa_verdict {
	XIW_MPA_ACCEPTED = 0,
	XIW_MPA_REFUSED,	/* R set: the responder's ULP said no */
	XIW_MPA_INVALID,	/* no responder may answer so */
};

static inline __u16 xiw_mpa_min(__u16 a, __u16 b)
{
	return a < b ? a : b;
}

/* The terms of a received frame; @v2w NULL if it has no IRD/ORD word. */
static inline void xiw_mpa_terms_read(struct xiw_mpa_terms *t, __u8 rev, __u8 flags,
				      const struct xiw_mpa_v2_ird_ord *v2w)
{
	t->rev = rev;
	t->flags = flags;
	t->has_v2w = v2w != XIW_NULL;
	t->ird = v2w ? xiw_mpa_v2_ird(v2w) : 0;
	t->ord = v2w ? xiw_mpa_v2_ord(v2w) : 0;
	t->ird_flags = v2w ? xiw_mpa_v2_ird_flags(v2w) : 0;
	t->ord_flags = v2w ? xiw_mpa_v2_ord_flags(v2w) : 0;
}

/* The IRD/ORD word of frame terms @t (sent if t->has_v2w). */
static inline void xiw_mpa_terms_word(const struct xiw_mpa_terms *t,
				      struct xiw_mpa_v2_ird_ord *v2w)
{
	xiw_mpa_v2_set(v2w, t->ird_flags, t->ird, t->ord_flags, t->ord);
}

/*
 * The Request of an initiator with @pol whose ULP asked for @ird/@ord.
 * xiw always offers the extensions; it offers Write and Read as RTR, not
 * a zero-length Send, which would consume a Receive the responder's ULP
 * never posted for it (RFC 6581 §5.2 leaves the choice to the initiator).
 */
static inline void xiw_mpa_request(const struct xiw_mpa_policy *pol, __u16 ird, __u16 ord,
				   struct xiw_mpa_terms *req)
{
	req->flags = XIW_MPA_FLAG_EXT;
	if (pol->crc)
		req->flags |= XIW_MPA_FLAG_C;
	if (pol->markers)
		req->flags |= XIW_MPA_FLAG_M;
	req->has_v2w = pol->rev != XIW_MPA_REV_V1;
	req->rev = req->has_v2w ? XIW_MPA_REV_V2 : XIW_MPA_REV_V1;
	req->ird = xiw_mpa_min(ird, pol->max_ird);
	req->ord = xiw_mpa_min(ord, pol->max_ord);
	req->ird_flags = 0;
	req->ord_flags = 0;
	if (req->has_v2w) {
		req->flags |= XIW_MPA_FLAG_ENHANCED;
		if (pol->p2p) {
			req->ird_flags = XIW_MPA_V2_IRD_P2P;
			req->ord_flags = XIW_MPA_V2_ORD_RTR_WRITE | XIW_MPA_V2_ORD_RTR_READ;
		}
	}
}

/*
 * The Reply of a responder with @pol, whose ULP accepts @req asking for
 * @ird/@ord, and what its connection uses.
 */
static inline void xiw_mpa_respond(const struct xiw_mpa_terms *req,
				   const struct xiw_mpa_policy *pol, __u16 ird, __u16 ord,
				   struct xiw_mpa_terms *rep, struct xiw_mpa_result *res)
{
	__u16 offer = req->ord_flags;
	int send_ok = (req->ird_flags & XIW_MPA_V2_IRD_RTR_SEND) != 0;

	/* RFC 5044 §7.1: C in the Request obliges the Reply to have it. */
	rep->flags = 0;
	if ((req->flags & XIW_MPA_FLAG_C) || pol->crc)
		rep->flags |= XIW_MPA_FLAG_C;
	if (pol->markers)
		rep->flags |= XIW_MPA_FLAG_M;
	if (req->flags & XIW_MPA_FLAG_EXT)
		rep->flags |= XIW_MPA_FLAG_EXT | XIW_MPA_FLAG_EXT_ACK;
	res->crc = (rep->flags & XIW_MPA_FLAG_C) != 0;
	res->markers_rx = (rep->flags & XIW_MPA_FLAG_M) != 0;
	res->markers_tx = (req->flags & XIW_MPA_FLAG_M) != 0;
	res->extensions = (rep->flags & XIW_MPA_FLAG_EXT) != 0;
	res->p2p = 0;
	res->rtr_opcode = 0;

	rep->ird = xiw_mpa_min(ird, pol->max_ird);
	rep->ord = xiw_mpa_min(ord, pol->max_ord);
	rep->ird_flags = 0;
	rep->ord_flags = 0;
	/* The Request's revision, or 1 if we are set to 1. */
	rep->has_v2w = req->has_v2w && pol->rev != XIW_MPA_REV_V1;
	rep->rev = rep->has_v2w ? XIW_MPA_REV_V2 : XIW_MPA_REV_V1;
	if (rep->has_v2w) {
		rep->flags |= XIW_MPA_FLAG_ENHANCED;
		/* RFC 6581 §5.1: our ORD may not exceed the initiator's IRD. */
		rep->ord = xiw_mpa_min(rep->ord, req->ird);
		/* §5.2: pick one of the offered RTR messages. */
		if (pol->p2p && (req->ird_flags & XIW_MPA_V2_IRD_P2P)) {
			rep->ird_flags = XIW_MPA_V2_IRD_P2P;
			res->p2p = 1;
			/*
			 * Write is cheapest; it is also the answer to a
			 * Request that offers nothing at all.
			 */
			if ((offer & XIW_MPA_V2_ORD_RTR_WRITE) ||
			    (!(offer & XIW_MPA_V2_ORD_RTR_READ) && !send_ok)) {
				rep->ord_flags = XIW_MPA_V2_ORD_RTR_WRITE;
				res->rtr_opcode = XIW_OP_WRITE;
			} else if (offer & XIW_MPA_V2_ORD_RTR_READ) {
				rep->ord_flags = XIW_MPA_V2_ORD_RTR_READ;
				res->rtr_opcode = XIW_OP_READ_REQ;
			} else {
				rep->ird_flags |= XIW_MPA_V2_IRD_RTR_SEND;
				res->rtr_opcode = XIW_OP_SEND;
			}
		}
	}
	res->ird = rep->ird;
	res->ord = rep->ord;
}

/*
 * The Reply that refuses @req (RFC 5044 §7.1: R set), in its revision; the
 * C and extension bits as the Request had them, an all-zero IRD/ORD word.
 */
static inline void xiw_mpa_reject(const struct xiw_mpa_terms *req,
				  const struct xiw_mpa_policy *pol, struct xiw_mpa_terms *rep)
{
	rep->flags = XIW_MPA_FLAG_R | (req->flags & (XIW_MPA_FLAG_C | XIW_MPA_FLAG_EXT));
	rep->has_v2w = req->has_v2w && pol->rev != XIW_MPA_REV_V1;
	rep->rev = rep->has_v2w ? XIW_MPA_REV_V2 : XIW_MPA_REV_V1;
	if (rep->has_v2w)
		rep->flags |= XIW_MPA_FLAG_ENHANCED;
	rep->ird = 0;
	rep->ord = 0;
	rep->ird_flags = 0;
	rep->ord_flags = 0;
}

/*
 * What the initiator that sent @req makes of @rep: XIW_MPA_ACCEPTED with
 * @res filled in, or why not.  Its IRD grows to the responder's ORD up to
 * @max_ird.
 */
static inline enum xiw_mpa_verdict xiw_mpa_conclude(const struct xiw_mpa_terms *req,
						    const struct xiw_mpa_terms *rep,
						    __u16 max_ird,
						    struct xiw_mpa_result *res)
{
	__u16 chosen;

	/* RFC 5044 §7.1: R set - the responder refused the connection. */
	if (rep->flags & XIW_MPA_FLAG_R)
		return XIW_MPA_REFUSED;
	/* The responder may not answer with a newer revision. */
	if (rep->rev > req->rev)
		return XIW_MPA_INVALID;
	/* CRC in both directions unless both frames have C = 0. */
	res->crc = ((req->flags | rep->flags) & XIW_MPA_FLAG_C) != 0;
	/* Markers: each side's M bit asks for them on what it receives. */
	res->markers_rx = (req->flags & XIW_MPA_FLAG_M) != 0;
	res->markers_tx = (rep->flags & XIW_MPA_FLAG_M) != 0;
	res->extensions = (req->flags & XIW_MPA_FLAG_EXT) &&
			  (rep->flags & XIW_MPA_FLAG_EXT_ACK);
	res->p2p = 0;
	res->rtr_opcode = 0;
	res->ird = req->ird;
	res->ord = req->ord;
	if (!(rep->has_v2w && req->has_v2w))
		return XIW_MPA_ACCEPTED;
	/*
	 * RFC 6581 §5.1: our ORD may not exceed the responder's IRD; our
	 * IRD must cover the responder's ORD - grown if the device can, else
	 * the connection cannot work.
	 */
	res->ord = xiw_mpa_min(res->ord, rep->ird);
	if (rep->ord > res->ird) {
		if (rep->ord > max_ird)
			return XIW_MPA_INVALID;
		res->ird = rep->ord;
	}
	/* §5.2: the responder picked one of the RTR messages we offered. */
	if ((req->ird_flags & XIW_MPA_V2_IRD_P2P) && (rep->ird_flags & XIW_MPA_V2_IRD_P2P)) {
		chosen = rep->ord_flags & req->ord_flags;
		res->p2p = 1;
		if (chosen & XIW_MPA_V2_ORD_RTR_WRITE)
			res->rtr_opcode = XIW_OP_WRITE;
		else if (chosen & XIW_MPA_V2_ORD_RTR_READ)
			res->rtr_opcode = XIW_OP_READ_REQ;
		else
			return XIW_MPA_INVALID;
	}
	return XIW_MPA_ACCEPTED;
}

#endif /* XIW_MPA_NEGOTIATE_H */
