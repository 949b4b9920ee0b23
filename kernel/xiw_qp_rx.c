// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw receive path: parses the FPDU stream (RFC 5044 §4) straight out of
 * the TCP receive queue in the socket's data_ready callback, validates
 * each DDP segment (RFC 5041 §7) and RDMAP message (RFC 5040 §7) and
 * places its payload directly into the target memory.  Any error sends
 * the matching Terminate and stops the stream.
 *
 * What serialises the parser is the socket: it runs from data_ready (the
 * socket's spinlock held, in softirq) or with the socket owned
 * (lock_sock()), never both at once, so struct xiw_qp_rx's parser state
 * (hdr, the counters of the current FPDU, the held RQE and MR) has one
 * writer.  qp->lock is held as well, for what the parser shares with
 * others: the RQ and ORQ indices and entries (flushes, the transmit path
 * issuing requests), qp->state.  Four steps drop qp->lock to call out -
 * xiw_rx_fail() and xiw_rx_terminate() (Terminate, xiw_qp_fatal()),
 * xiw_rx_response() and a Read Response's last segment (completing the
 * request) - having first taken out of the ORQ what they need.  Meanwhile
 * the QP may go to Error and flush the RQ and ORQ, and the transmit path
 * may issue a request into a freed ORQ slot; the parser's own state
 * cannot change, and the actor re-checks xiw_rx_parsing() after each.
 * They run with the skb's current fragment mapped (struct xiw_skb_cursor)
 * and so must not sleep, as in softirq.
 */
#include <linux/skbuff.h>
#include <crypto/hash.h>
#include <net/tcp.h>

#include "xiw.h"

/*
 * The wire table (XIW_RDMAP_OPCODES) by RDMAP version and 5-bit opcode,
 * filled at module load: a look-up per FPDU instead of a walk.
 */
static const struct xiw_opcode_info *xiw_ops[2][32] __ro_after_init;
/* And the Solicited Event variant of each untagged message. */
static u8 xiw_se_ops[2][32] __ro_after_init;

/* The row of (@rv, @opcode), NULL if the wire table has none. */
const struct xiw_opcode_info *xiw_wire_op(unsigned int rv, unsigned int opcode)
{
	if (rv != XIW_RDMAP_RV1 && rv != XIW_RDMAP_RV2)
		return NULL;
	return xiw_ops[rv - 1][opcode % ARRAY_SIZE(xiw_ops[0])];
}

/* The Solicited Event variant of a valid untagged (@rv, @opcode). */
u8 xiw_wire_solicited(unsigned int rv, unsigned int opcode)
{
	return xiw_se_ops[rv - 1][opcode % ARRAY_SIZE(xiw_se_ops[0])];
}

/* Room for the variable tail of a header-only message. */
#define XIW_TAIL_MAX sizeof(((struct xiw_qp_rx *)NULL)->tail)

static struct xiw_ring_ctrl *xiw_rq_ctrl(struct xiw_qp *qp)
{
	return qp->rq.mem;
}

static void xiw_rqe_release(struct xiw_qp_rx *rx)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(rx->rqe_mr); i++) {
		if (rx->rqe_mr[i])
			xiw_mr_put(rx->rqe_mr[i]);
		rx->rqe_mr[i] = NULL;
	}
	rx->rqe_valid = false;
}

/* Lets go of the receive's and the tagged segment's registrations. */
static void xiw_rx_release(struct xiw_qp_rx *rx)
{
	xiw_rqe_release(rx);
	if (rx->tagged_mr)
		xiw_mr_put(rx->tagged_mr);
	rx->tagged_mr = NULL;
}

/* Completes the current RQE with @cqe, whose other fields are set. */
static void xiw_rq_post(struct xiw_qp *qp, struct xiw_cqe *cqe, bool solicited)
{
	struct xiw_qp_rx *rx = &qp->rx;

	cqe->wr_id = rx->rqe.wr_id;
	cqe->qp_num = qp->ibqp.qp_num;
	xiw_rqe_release(rx);
	xiw_cq_post(to_xiw_cq(qp->ibqp.recv_cq), cqe,
		    solicited || cqe->status != XIW_WC_SUCCESS);
}

static void xiw_rq_complete(struct xiw_qp *qp, u32 byte_len, u8 status,
			    bool solicited)
{
	struct xiw_cqe cqe = {
		.byte_len = byte_len,
		.opcode = XIW_WC_RECV,
		.status = status,
	};

	xiw_rq_post(qp, &cqe, solicited);
}

/* Completes the current RQE with the 8 octets of Immediate Data @imm. */
static void xiw_rq_complete_imm(struct xiw_qp *qp, u8 opcode, u32 byte_len,
				const u8 *imm, bool solicited)
{
	u64 value = xiw_get_be64((const struct xiw_be64 *)imm);
	struct xiw_cqe cqe = {
		.byte_len = byte_len,
		.opcode = opcode,
		.status = XIW_WC_SUCCESS,
		.flags = XIW_CQE_WITH_IMM,
		.imm_or_inv = lower_32_bits(value),
		.imm_high = upper_32_bits(value),
	};

	xiw_rq_post(qp, &cqe, solicited);
}

/*
 * Copies the next RQE off @ring: 1, 0 if the consumer posted none, or
 * -EPROTO if the producer index claims more entries than the ring holds
 * (a broken or hostile provider; reported by the caller, once).  The
 * kernel counts with its own consumer index, never with the shared one.
 */
int xiw_rqe_pop(struct xiw_ring *ring, struct xiw_rqe *rqe)
{
	struct xiw_ring_ctrl *ctrl = ring->mem;
	u32 consumer = ring->own;
	u32 posted;

	if (!ring->num || ring->broken)
		return 0;
	/* Pairs with the provider's release: RQE contents before index. */
	posted = smp_load_acquire(&ctrl->producer) - consumer;
	if (!posted)
		return 0;
	if (posted > ring->num) {
		ring->broken = true;
		return -EPROTO;
	}
	memcpy(rqe, xiw_ring_entry(ring, consumer), sizeof(*rqe));
	ring->own = consumer + 1;
	/* The slot is read out before the provider may refill it. */
	smp_store_release(&ctrl->consumer, consumer + 1);
	return 1;
}

/*
 * Writes a kernel consumer's receives into @ring (the RQ or SRQ ring the
 * provider fills for user consumers); the caller serialises the posters.
 */
int xiw_rqe_put(struct xiw_ring *ring, const struct ib_recv_wr *wr,
		const struct ib_recv_wr **bad_wr)
{
	struct xiw_ring_ctrl *ctrl = ring->mem;
	u32 producer = ctrl->producer;
	int err = 0;

	for (; wr; wr = wr->next) {
		struct xiw_rqe *rqe = xiw_ring_entry(ring, producer);

		/* Pairs with the receive path's release of the slot. */
		if (producer - smp_load_acquire(&ctrl->consumer) >= ring->num) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || wr->num_sge > XIW_MAX_RECV_SGE) {
			err = -EINVAL;
			break;
		}
		memset(rqe, 0, sizeof(*rqe));
		rqe->wr_id = wr->wr_id;
		rqe->num_sge = wr->num_sge;
		xiw_sges_from_ib(rqe->sge, wr->sg_list, wr->num_sge);
		producer++;
	}
	/* The entries before the index (xiw_rqe_pop() acquires it). */
	smp_store_release(&ctrl->producer, producer);
	if (err)
		*bad_wr = wr;
	return err;
}

/*
 * How many RQEs @ring holds, at most its size; the provider may be adding
 * more.
 */
u32 xiw_rqe_posted(struct xiw_ring *ring)
{
	struct xiw_ring_ctrl *ctrl = ring->mem;

	/* Pairs with the provider's release of its producer index. */
	return min(smp_load_acquire(&ctrl->producer) - ring->own, ring->num);
}

/*
 * The receive a new message goes into, from the SRQ if the QP has one;
 * as xiw_rqe_pop().
 */
static int xiw_rq_take(struct xiw_qp *qp, struct xiw_rqe *rqe)
{
	if (qp->ibqp.srq)
		return xiw_srq_take(to_xiw_srq(qp->ibqp.srq), rqe);
	return xiw_rqe_pop(&qp->rq, rqe);
}

/* Completes every posted receive with a flush error; qp->lock held. */
static void xiw_rq_flush_locked(struct xiw_qp *qp)
{
	struct xiw_qp_rx *rx = &qp->rx;
	u32 n;

	/*
	 * Receives posted from now on need a doorbell to be flushed.  Asking
	 * for it before emptying the ring (full barrier, paired with the
	 * provider's between its producer store and its notify load) means
	 * every receive is either flushed below or rings.
	 */
	if (qp->rq.num)
		/* see above */
		smp_store_mb(xiw_rq_ctrl(qp)->notify, 1);
	/*
	 * A segment left half received holds its target: let go now, not
	 * when the QP is destroyed (a peer could otherwise hold it forever).
	 */
	if (rx->tagged_mr) {
		xiw_mr_put(rx->tagged_mr);
		rx->tagged_mr = NULL;
	}
	if (rx->rqe_valid)
		xiw_rq_complete(qp, 0, XIW_WC_WR_FLUSH_ERR, true);
	/*
	 * An SRQ's receives stay for its other QPs.  At most a ring's worth:
	 * a provider that posts on while this runs rings for the rest (the
	 * notify flag is up).
	 */
	for (n = 0; n < qp->rq.num && xiw_rqe_pop(&qp->rq, &rx->rqe) > 0; n++)
		xiw_rq_complete(qp, 0, XIW_WC_WR_FLUSH_ERR, true);
}

/*
 * Flushes the receives of a QP in Error.  Its callers saw Error without
 * the lock: by now the QP may have been reset and connected again, and a
 * flush would take the new stream's receives and the target its parser
 * holds.
 */
void xiw_qp_rx_flush(struct xiw_qp *qp)
{
	spin_lock_bh(&qp->lock);
	if (qp->state == IB_QPS_ERR)
		xiw_rq_flush_locked(qp);
	spin_unlock_bh(&qp->lock);
}

/* Stops the stream after a protocol error: Terminate, then Error. */
static void xiw_rx_fail(struct xiw_qp *qp, u8 layer, u8 etype, u8 ecode)
	__must_hold(&qp->lock)
{
	struct xiw_qp_rx *rx = &qp->rx;
	u8 ddp_len = rx->hdr_got >= sizeof(struct xiw_ctrl) &&
		     xiw_ddp_tagged(rx->hdr.ctrl.ddp_ctrl) ?
		     XIW_DDP_TAGGED_HLEN : XIW_DDP_UNTAGGED_HLEN;

	/*
	 * RFC 5040 §4.8: the DDP header is quoted whole or not at all; an
	 * error seen in the first word of a segment is reported without it.
	 */
	if (rx->hdr_got < XIW_DDP_HDR_OFFSET + ddp_len)
		ddp_len = 0;
	rx->failed = true;
	spin_unlock_bh(&qp->lock);
	ibdev_dbg(qp->ibqp.device,
		  "qp %u: terminating: layer %u type %u code %u, opcode %d\n",
		  qp->ibqp.qp_num, layer, etype, ecode,
		  rx->op ? rx->op->opcode : -1);
	xiw_qp_send_terminate(qp, layer, etype, ecode,
			      (u8 *)&rx->hdr + XIW_DDP_HDR_OFFSET, ddp_len,
			      be16_to_cpu(rx->hdr.ctrl.mpa_len));
	xiw_qp_fatal(qp, XIW_WC_FATAL_ERR);
	spin_lock_bh(&qp->lock);
}

static void xiw_rx_fail_access(struct xiw_qp *qp, enum xiw_access_error why)
{
	/* Tagged buffer errors are DDP's (RFC 5041 §7.2), rights RDMAP's. */
	switch (why) {
	case XIW_ACCESS_RIGHTS:
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_REMOTE_PROTECTION,
			    XIW_RDMAP_ECODE_ACCESS_RIGHTS);
		break;
	case XIW_ACCESS_BOUNDS:
		xiw_rx_fail(qp, XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_TAGGED,
			    XIW_DDP_ECODE_T_BASE_BOUNDS);
		break;
	case XIW_ACCESS_WRONG_PD:
		xiw_rx_fail(qp, XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_TAGGED,
			    XIW_DDP_ECODE_T_STAG_NOT_ASSOC);
		break;
	default:
		xiw_rx_fail(qp, XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_TAGGED,
			    XIW_DDP_ECODE_T_INVALID_STAG);
		break;
	}
}

static void xiw_rx_rtr_seen(struct xiw_qp *qp, u8 opcode)
{
	struct xiw_qp_rx *rx = &qp->rx;

	if (rx->rtr_expected && opcode == qp->conn.rtr_opcode) {
		rx->rtr_expected = false;
		/*
		 * An unbind may have let go of the endpoint while this
		 * callback was already on its way (it clears qp->cep under
		 * qp->lock, before the QP leaves RTS).
		 */
		if (qp->cep)
			xiw_cm_rtr_received(qp->cep);
	}
}

/*
 * Whether the QP itself lets the peer do what needs the remote @access
 * rights, besides the STag's (RFC 5040 §2.1, IBTA's QP access flags).
 * iWARP connection managers set the flags unevenly: librdmacm's active
 * side leaves them 0, iw_cm grants the passive side remote read and
 * write, and neither ever grants atomics.  So 0 restricts nothing, and
 * remote read and write together allow atomics, which do both; any
 * other setting is taken as it is.
 */
static bool xiw_qp_grants(const struct xiw_qp *qp, int access)
{
	const int rw = IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE;
	int granted = READ_ONCE(qp->access) &
		      (rw | IB_ACCESS_REMOTE_ATOMIC);

	if (!granted)
		return true;
	if ((granted & rw) == rw)
		granted |= IB_ACCESS_REMOTE_ATOMIC;
	return (granted & access) == access;
}

/*
 * The registration a request of the peer names, checked against the
 * QP's rights first, so that a refusal says nothing about the STag.
 */
static struct xiw_mr *xiw_rx_mr_get(struct xiw_qp *qp, u32 stag, u64 to,
				    u64 len, int access,
				    enum xiw_access_error *why)
{
	if (!xiw_qp_grants(qp, access)) {
		*why = XIW_ACCESS_RIGHTS;
		return NULL;
	}
	return xiw_mr_get(to_xiw_dev(qp->ibqp.device), qp->ibqp.pd, stag, to,
			  len, access, why);
}

/* RDMA Write (RFC 5040 §5.1): the target is named by the peer's STag. */
static bool xiw_rx_begin_write(struct xiw_qp *qp)
{
	struct xiw_qp_rx *rx = &qp->rx;
	u32 stag = be32_to_cpu(rx->hdr.tagged.stag);
	u64 to = xiw_get_be64(&rx->hdr.tagged.to);
	enum xiw_access_error why;

	/* A zero-length Write places nothing and names no buffer. */
	if (!rx->payload_len) {
		if (xiw_ddp_last(rx->hdr.ctrl.ddp_ctrl))
			xiw_rx_rtr_seen(qp, XIW_OP_WRITE);
		return true;
	}
	/* Remote rights are those of the STag and the QP (RFC 5040 §7). */
	rx->tagged_mr = xiw_rx_mr_get(qp, stag, to, rx->payload_len,
				      IB_ACCESS_REMOTE_WRITE, &why);
	if (!rx->tagged_mr) {
		xiw_rx_fail_access(qp, why);
		return false;
	}
	return true;
}

/* RDMA Read Response: must continue the oldest outstanding Read. */
static bool xiw_rx_begin_read_response(struct xiw_qp *qp)
{
	struct xiw_qp_rx *rx = &qp->rx;
	u32 stag = be32_to_cpu(rx->hdr.tagged.stag);
	u64 to = xiw_get_be64(&rx->hdr.tagged.to);
	struct xiw_orq_entry *e;

	e = &rx->orq[rx->orq_head % XIW_MAX_ORD];
	if (rx->orq_head == rx->orq_tail || e->opcode != XIW_OP_READ_REQ) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_REMOTE_OPERATION,
			    XIW_RDMAP_ECODE_UNEXPECTED_OPCODE);
		return false;
	}
	if (rx->payload_len && (stag != e->sink_stag ||
				to != e->sink_to + e->placed)) {
		xiw_rx_fail_access(qp, XIW_ACCESS_INVALID_STAG);
		return false;
	}
	if (rx->payload_len > e->len - e->placed) {
		xiw_rx_fail_access(qp, XIW_ACCESS_BOUNDS);
		return false;
	}
	return true;
}

/*
 * A request named a buffer of the peer that cannot be used: the source
 * STag of a Read and the target of an Atomic are RDMAP's to check (RFC
 * 5040 §7, RFC 7306 §8.2).
 */
static void xiw_rx_fail_remote_protection(struct xiw_qp *qp,
					  enum xiw_access_error why)
{
	static const u8 ecode[] = {
		[XIW_ACCESS_INVALID_STAG] = XIW_RDMAP_ECODE_INVALID_STAG,
		[XIW_ACCESS_WRONG_PD] = XIW_RDMAP_ECODE_STAG_NOT_ASSOC,
		[XIW_ACCESS_BOUNDS] = XIW_RDMAP_ECODE_BASE_BOUNDS,
		[XIW_ACCESS_RIGHTS] = XIW_RDMAP_ECODE_ACCESS_RIGHTS,
	};

	xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ETYPE_REMOTE_PROTECTION,
		    ecode[why]);
}

/* A QN 1 request needs an IRD entry (RFC 5040 §6.5, RFC 7306 §5.2). */
static bool xiw_rx_irq_room(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;

	if (tx->irq_tail - tx->irq_head >= max_t(u8, qp->ird, 1)) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_UNTAGGED,
			    XIW_DDP_ECODE_UT_INVALID_MSN_NOBUF);
		return false;
	}
	return true;
}

/* Queues a checked request for the transmit path, which executes it. */
static void xiw_rx_queue_request(struct xiw_qp *qp,
				 const struct xiw_irq_entry *request)
{
	struct xiw_qp_tx *tx = &qp->tx;

	tx->irq[tx->irq_tail % XIW_MAX_IRD] = *request;
	/* The entry before the index: the transmit path looks unlocked. */
	smp_store_release(&tx->irq_tail, tx->irq_tail + 1);
	xiw_qp_tx_kick(qp);
}

/* RDMA Read Request (RFC 5040 §5.2): queued for the transmit path. */
static void xiw_rx_read_request(struct xiw_qp *qp)
{
	const struct xiw_rdmap_read_req *r = &qp->rx.hdr.rreq.rreq;
	struct xiw_irq_entry e = {
		.opcode = XIW_OP_READ_REQ,
		.to = xiw_get_be64(&r->src_to),
		.len = be32_to_cpu(r->read_size),
		.sink_stag = be32_to_cpu(r->sink_stag),
		.sink_to = xiw_get_be64(&r->sink_to),
	};
	enum xiw_access_error why;

	if (!xiw_rx_irq_room(qp))
		return;
	if (e.len) {
		e.stag = be32_to_cpu(r->src_stag);
		e.mr = xiw_rx_mr_get(qp, e.stag, e.to, e.len,
				     IB_ACCESS_REMOTE_READ, &why);
		if (!e.mr) {
			xiw_rx_fail_remote_protection(qp, why);
			return;
		}
	} else {
		xiw_rx_rtr_seen(qp, XIW_OP_READ_REQ);
	}
	xiw_rx_queue_request(qp, &e);
}

/*
 * Looks up the target of a Flush, Verify or Atomic Write with the verbs
 * rights @access and the xiw rights @ext_access; the whole region for
 * @whole.  Fails the stream with the Terminate of draft-talpey §4.4 (RFC
 * 5040 §7 codes) if it cannot be used.
 */
static struct xiw_mr *xiw_rx_target(struct xiw_qp *qp, u32 stag, u64 to,
				    u32 len, bool whole, int access,
				    u32 ext_access)
{
	enum xiw_access_error why = XIW_ACCESS_RIGHTS;
	struct xiw_mr *mr = NULL;

	if (!whole)
		mr = xiw_rx_mr_get(qp, stag, to, len, access, &why);
	else if (xiw_qp_grants(qp, access))
		mr = xiw_mr_get_region(to_xiw_dev(qp->ibqp.device), qp->ibqp.pd,
				       stag, access, &why);
	if (mr && (mr->ext_access & ext_access) != ext_access) {
		xiw_mr_put(mr);
		mr = NULL;
		why = XIW_ACCESS_RIGHTS;
	}
	if (!mr)
		xiw_rx_fail_remote_protection(qp, why);
	return mr;
}

static void xiw_rx_fail_remote_operation(struct xiw_qp *qp)
{
	xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ETYPE_REMOTE_OPERATION,
		    XIW_RDMAP_ECODE_CATASTROPHIC_STREAM);
}

/*
 * Atomic Request (RFC 7306 §5.2.1), delivered.  Every check comes now,
 * before memory is touched, so a refused request changes nothing.
 */
static void xiw_rx_atomic_request(struct xiw_qp *qp)
{
	const struct xiw_rdmap_atomic_req *r = &qp->rx.hdr.atomic_req.atomic;
	unsigned int aopcode = be32_to_cpu(r->aopcode) & XIW_AOP_MASK;
	struct xiw_irq_entry e = {
		.opcode = XIW_OP_ATOMIC_REQ,
		.to = xiw_get_be64(&r->to),
		.req_id = be32_to_cpu(r->req_id),
		.atomic = *r,
	};
	enum xiw_access_error why;

	if (!xiw_rx_irq_room(qp))
		return;
	/* Rule 4: an AOpCode we do not implement is an error. */
	if (aopcode != XIW_AOP_FETCH_ADD && aopcode != XIW_AOP_CMP_SWAP) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_REMOTE_OPERATION,
			    XIW_RDMAP_ECODE_UNEXPECTED_OPCODE);
		return;
	}
	if (e.to & (sizeof(u64) - 1)) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_TERM_ATOMIC_MISALIGNED_ETYPE,
			    XIW_TERM_ATOMIC_MISALIGNED_ECODE);
		return;
	}
	e.stag = be32_to_cpu(r->stag);
	e.mr = xiw_rx_mr_get(qp, e.stag, e.to, sizeof(u64),
			     IB_ACCESS_REMOTE_ATOMIC, &why);
	if (!e.mr) {
		xiw_rx_fail_remote_protection(qp, why);
		return;
	}
	xiw_rx_queue_request(qp, &e);
}

/* RDMA Flush Request (draft-talpey §4.1.1). */
static void xiw_rx_flush_request(struct xiw_qp *qp)
{
	const struct xiw_rdmap_flush_req *r = &qp->rx.hdr.flush_req.flush;
	struct xiw_irq_entry e = {
		.opcode = XIW_OP_FLUSH_REQ,
		.to = xiw_get_be64(&r->sink_to),
		.len = be32_to_cpu(r->sink_len),
		.flush_flags = be32_to_cpu(r->flags) & XIW_FLUSH_DISP_MASK,
	};
	u32 rights = (e.flush_flags & XIW_FLUSH_DISP_P ?
		      XIW_ACCESS_FLUSH_PERSISTENT : 0) |
		     (e.flush_flags & XIW_FLUSH_DISP_G ? XIW_ACCESS_FLUSH_GLOBAL : 0);

	if (!xiw_rx_irq_room(qp))
		return;
	/*
	 * No disposition asks for nothing the region could have a right
	 * to (draft-talpey §4.1.1): refused before the STag is looked at,
	 * so that it tells nothing about it.
	 */
	if (!rights) {
		xiw_rx_fail_remote_protection(qp, XIW_ACCESS_RIGHTS);
		return;
	}
	e.stag = be32_to_cpu(r->sink_stag);
	e.mr = xiw_rx_target(qp, e.stag, e.to, e.len,
			     e.flush_flags & XIW_FLUSH_DISP_R, 0, rights);
	if (e.mr)
		xiw_rx_queue_request(qp, &e);
}

/* RDMA Verify Request (draft-talpey §4.2.1); the expected hash is in tail. */
static void xiw_rx_verify_request(struct xiw_qp *qp)
{
	const struct xiw_rdmap_verify_req *r = &qp->rx.hdr.verify_req.verify;
	struct xiw_irq_entry e = {
		.opcode = XIW_OP_VERIFY_REQ,
		.to = xiw_get_be64(&r->sink_to),
		.len = be32_to_cpu(r->sink_len),
	};
	u32 given = qp->rx.payload_len;

	if (!xiw_rx_irq_room(qp))
		return;
	e.stag = be32_to_cpu(r->sink_stag);
	e.mr = xiw_rx_target(qp, e.stag, e.to, e.len, false,
			     0, XIW_ACCESS_VERIFY);
	if (!e.mr)
		return;
	/* An expected hash is the size of the region's algorithm's. */
	if (given && given != crypto_shash_digestsize(e.mr->verify_tfm)) {
		xiw_mr_put(e.mr);
		xiw_rx_fail_remote_operation(qp);
		return;
	}
	e.expected.len = given;
	memcpy(e.expected.bytes, qp->rx.tail, given);
	xiw_rx_queue_request(qp, &e);
}

/* Atomic Write Request (draft-talpey §4.3.1). */
static void xiw_rx_atomic_write_request(struct xiw_qp *qp)
{
	const struct xiw_rdmap_atomic_write_req *r =
		&qp->rx.hdr.awrite_req.awrite;
	struct xiw_irq_entry e = {
		.opcode = XIW_OP_ATOMIC_WRITE_REQ,
		.to = xiw_get_be64(&r->sink_to),
		.len = be32_to_cpu(r->sink_len),
		.value = xiw_get_be64(&r->data),
	};

	if (!xiw_rx_irq_room(qp))
		return;
	/* §4.3.2: 8 bytes, 64-bit aligned, or nothing is written. */
	if (e.len != XIW_ATOMIC_WRITE_LEN || e.to & (sizeof(u64) - 1)) {
		xiw_rx_fail_remote_operation(qp);
		return;
	}
	e.stag = be32_to_cpu(r->sink_stag);
	e.mr = xiw_rx_target(qp, e.stag, e.to, e.len, false,
			     IB_ACCESS_REMOTE_WRITE, 0);
	if (e.mr)
		xiw_rx_queue_request(qp, &e);
}

/* Takes the RQE a new Send message goes into and checks its SGEs. */
static bool xiw_rx_begin_receive(struct xiw_qp *qp)
{
	struct xiw_device *xdev = to_xiw_dev(qp->ibqp.device);
	struct xiw_qp_rx *rx = &qp->rx;
	enum xiw_access_error why;
	unsigned int i;
	int got;

	got = xiw_rq_take(qp, &rx->rqe);
	if (got < 0) {
		/* The consumer broke its own ring: a local error. */
		ibdev_dbg(qp->ibqp.device,
			  "qp %u: receive ring index out of range\n",
			  qp->ibqp.qp_num);
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_LOCAL_CATASTROPHIC,
			    XIW_RDMAP_ECODE_LOCAL_CATASTROPHIC);
		return false;
	}
	if (!got) {
		/* iWARP has no receiver-not-ready retry (RFC 5041 §7.2). */
		xiw_rx_fail(qp, XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_UNTAGGED,
			    XIW_DDP_ECODE_UT_INVALID_MSN_NOBUF);
		return false;
	}
	rx->rqe_valid = true;
	rx->msg_len = 0;
	if (rx->rqe.num_sge > XIW_MAX_RECV_SGE) {
		xiw_rq_complete(qp, 0, XIW_WC_LOC_LEN_ERR, true);
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_LOCAL_CATASTROPHIC,
			    XIW_RDMAP_ECODE_LOCAL_CATASTROPHIC);
		return false;
	}
	/*
	 * The keys and rights now, the range as the message fills it
	 * (xiw_rx_place): a receive buffer is sized for the longest message
	 * its consumer expects, and only what a message places must be
	 * registered (perftest posts SRQ buffers rounded up to the MTU,
	 * which reach past the end of its region).
	 */
	for (i = 0; i < rx->rqe.num_sge; i++) {
		struct xiw_sge *sge = &rx->rqe.sge[i];

		if (!sge->length)
			continue;
		rx->rqe_mr[i] = xiw_mr_get_region(xdev, qp->ibqp.pd, sge->lkey,
						  IB_ACCESS_LOCAL_WRITE, &why);
		if (!rx->rqe_mr[i]) {
			xiw_rq_complete(qp, 0, why == XIW_ACCESS_RIGHTS ?
					XIW_WC_LOC_ACCESS_ERR :
					XIW_WC_LOC_PROT_ERR, true);
			xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
				    XIW_RDMAP_ETYPE_LOCAL_CATASTROPHIC,
				    XIW_RDMAP_ECODE_LOCAL_CATASTROPHIC);
			return false;
		}
	}
	return true;
}

/*
 * Send (RFC 5040 §5.3), Send with Immediate Data (draft-wood §5.3) and
 * Immediate Data (RFC 7306 §6.3): the next message of QN 0 goes into the
 * next RQE.
 */
static bool xiw_rx_begin_send(struct xiw_qp *qp)
{
	struct xiw_qp_rx *rx = &qp->rx;
	const struct xiw_ddp_untagged_hdr *h = &rx->hdr.untagged;
	bool last = xiw_ddp_last(h->ctrl.ddp_ctrl);
	u32 mo = be32_to_cpu(h->mo);

	if (be32_to_cpu(h->msn) != rx->msn[XIW_QN_SEND]) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_UNTAGGED,
			    XIW_DDP_ECODE_UT_INVALID_MSN_RANGE);
		return false;
	}
	/* An RTR Send is consumed by the connection, not by the ULP. */
	if (rx->rtr_expected && !mo && !rx->payload_len &&
	    rx->op->opcode == XIW_OP_SEND && qp->conn.rtr_opcode == XIW_OP_SEND)
		return true;
	/*
	 * The segment with L set carries exactly the 8 octets of Immediate
	 * Data (RFC 7306 §6.3, draft-wood §5.3); an Immediate Data message
	 * has no other segment.
	 */
	if ((rx->op->flags & XIW_OPF_IMM_LAST && last &&
	     rx->payload_len != XIW_IMM_DATA_LEN) ||
	    (rx->op->hdr_len == XIW_IMM_DATA_LEN && (!last || mo))) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_REMOTE_OPERATION,
			    XIW_RDMAP_ECODE_CATASTROPHIC_STREAM);
		return false;
	}
	/*
	 * A segment starts a message iff no receive is held for one: then
	 * its MO must be 0 (RFC 5041 §5.1), else it continues the message
	 * where the last segment ended.  The MSN, checked above, stays that
	 * of the message until its last segment.
	 */
	if (rx->rqe_valid ? mo != rx->msg_len : mo != 0) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_UNTAGGED,
			    XIW_DDP_ECODE_UT_INVALID_MO);
		return false;
	}
	return rx->rqe_valid || xiw_rx_begin_receive(qp);
}

/*
 * A response on QN 3 must answer the oldest outstanding request: of its
 * kind, an Atomic Response with its Request Identifier.
 */
static bool xiw_rx_begin_response(struct xiw_qp *qp)
{
	struct xiw_qp_rx *rx = &qp->rx;
	const struct xiw_orq_entry *e = &rx->orq[rx->orq_head % XIW_MAX_ORD];
	const struct xiw_opcode_info *req;

	req = rx->orq_head == rx->orq_tail ? NULL :
	      xiw_wire_op(XIW_RDMAP_RV1, e->opcode);
	if (!req || req->resp_opcode != rx->op->opcode ||
	    (e->opcode == XIW_OP_ATOMIC_REQ &&
	     be32_to_cpu(rx->hdr.atomic_resp.atomic.req_id) != e->req_id)) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_REMOTE_OPERATION,
			    XIW_RDMAP_ECODE_UNEXPECTED_OPCODE);
		return false;
	}
	return true;
}

/*
 * A request, response or Terminate: one whole segment with the next MSN of
 * its queue; a variable tail (Terminate copies, a hash) fits rx.tail.
 */
static bool xiw_rx_begin_single(struct xiw_qp *qp)
	__must_hold(&qp->lock)
{
	struct xiw_qp_rx *rx = &qp->rx;
	const struct xiw_ddp_untagged_hdr *h = &rx->hdr.untagged;

	if (be32_to_cpu(h->msn) != rx->msn[rx->op->qn] ||
	    be32_to_cpu(h->mo) != 0 || !xiw_ddp_last(h->ctrl.ddp_ctrl)) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_UNTAGGED,
			    XIW_DDP_ECODE_UT_INVALID_MSN_RANGE);
		return false;
	}
	if (rx->op->flags & XIW_OPF_VARLEN && rx->payload_len > XIW_TAIL_MAX) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_UNTAGGED,
			    XIW_DDP_ECODE_UT_MSG_TOO_LONG);
		return false;
	}
	return true;
}

static bool xiw_rx_begin_response_fpdu(struct xiw_qp *qp)
	__must_hold(&qp->lock)
{
	return xiw_rx_begin_single(qp) && xiw_rx_begin_response(qp);
}

/*
 * A Read V2 Request (draft-wood §6): xiw takes draft-wood's Send with
 * Immediate Data, not its Read V2, so the request ends the stream with a
 * Terminate, as an opcode it does not support.
 */
static bool xiw_rx_begin_unsupported(struct xiw_qp *qp)
	__must_hold(&qp->lock)
{
	if (xiw_rx_begin_single(qp))
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_REMOTE_OPERATION,
			    XIW_RDMAP_ECODE_UNEXPECTED_OPCODE);
	return false;
}

static const struct xiw_rx_handler *xiw_rx_handler_of(unsigned int rv,
						      unsigned int opcode);

/*
 * Decodes the first word of an FPDU: the header length follows from the
 * opcode.  False if the stream failed.
 */
static bool xiw_rx_parse_ctrl(struct xiw_qp *qp)
{
	struct xiw_qp_rx *rx = &qp->rx;
	const struct xiw_ctrl *c = &rx->hdr.ctrl;
	bool tagged = xiw_ddp_tagged(c->ddp_ctrl);
	u32 ulpdu = be16_to_cpu(c->mpa_len);
	unsigned int rv;

	if (xiw_ddp_version(c->ddp_ctrl) != XIW_DDP_VERSION) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_DDP,
			    tagged ? XIW_DDP_ETYPE_TAGGED : XIW_DDP_ETYPE_UNTAGGED,
			    tagged ? XIW_DDP_ECODE_T_INVALID_VERSION :
				     XIW_DDP_ECODE_UT_INVALID_VERSION);
		return false;
	}
	rv = xiw_rdmap_rv(c->rdmap_ctrl);
	/* RV 2 is draft-wood's, part of the negotiated extensions. */
	if (rv != XIW_RDMAP_RV1 && !(rv == XIW_RDMAP_RV2 && qp->conn.extensions)) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_REMOTE_OPERATION,
			    XIW_RDMAP_ECODE_INVALID_VERSION);
		return false;
	}
	rx->op = xiw_wire_op(rv, xiw_rdmap_opcode(c->rdmap_ctrl));
	rx->handler = xiw_rx_handler_of(rv, xiw_rdmap_opcode(c->rdmap_ctrl));
	if (!rx->op || !!(rx->op->flags & XIW_OPF_TAGGED) != tagged ||
	    (rx->op->spec != XIW_SPEC_RFC5040 && !qp->conn.extensions)) {
		rx->op = NULL;
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_REMOTE_OPERATION,
			    XIW_RDMAP_ECODE_UNEXPECTED_OPCODE);
		return false;
	}
	rx->hdr_len = tagged ? sizeof(struct xiw_ddp_tagged_hdr) :
			       sizeof(struct xiw_ddp_untagged_hdr) +
			       rx->op->hdr_len;
	if (ulpdu + XIW_MPA_HDR_LEN < rx->hdr_len) {
		/* Shorter than its own DDP header: the framing is off. */
		if (ulpdu + XIW_MPA_HDR_LEN < sizeof(struct xiw_ddp_tagged_hdr))
			xiw_rx_fail(qp, XIW_TERM_LAYER_LLP, XIW_LLP_ETYPE_MPA,
				    XIW_LLP_ECODE_MARKER);
		else
			xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
				    XIW_RDMAP_ETYPE_REMOTE_OPERATION,
				    XIW_RDMAP_ECODE_CATASTROPHIC_STREAM);
		return false;
	}
	rx->payload_len = ulpdu + XIW_MPA_HDR_LEN - rx->hdr_len;
	/* Only messages with a payload may carry bytes past the header. */
	if (rx->payload_len &&
	    !(rx->op->flags & (XIW_OPF_PAYLOAD | XIW_OPF_VARLEN))) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_REMOTE_OPERATION,
			    XIW_RDMAP_ECODE_CATASTROPHIC_STREAM);
		return false;
	}
	return true;
}

/* Maps the Terminate a peer sent to the status of our oldest request. */
static u8 xiw_terminate_status(__be32 ctrl)
{
	switch (xiw_term_layer(ctrl)) {
	case XIW_TERM_LAYER_RDMAP:
		return xiw_term_etype(ctrl) == XIW_RDMAP_ETYPE_REMOTE_PROTECTION ?
		       XIW_WC_REM_ACCESS_ERR : XIW_WC_REM_OP_ERR;
	case XIW_TERM_LAYER_DDP:
		return xiw_term_etype(ctrl) == XIW_DDP_ETYPE_TAGGED ?
		       XIW_WC_REM_ACCESS_ERR : XIW_WC_REM_INV_REQ_ERR;
	default:
		return XIW_WC_FATAL_ERR;
	}
}

static void xiw_rx_terminate(struct xiw_qp *qp)
	__must_hold(&qp->lock)
{
	__be32 ctrl = qp->rx.hdr.term.term.ctrl;

	qp->rx.failed = true;
	spin_unlock_bh(&qp->lock);
	ibdev_dbg(qp->ibqp.device,
		  "qp %u: peer terminated: layer %u type %u code %u\n",
		  qp->ibqp.qp_num, xiw_term_layer(ctrl), xiw_term_etype(ctrl),
		  xiw_term_ecode(ctrl));
	xiw_qp_fatal(qp, xiw_terminate_status(ctrl));
	spin_lock_bh(&qp->lock);
}

/*
 * The response (QN 3) to the oldest outstanding request: an Atomic
 * Response's original value or a Verify Response's hash goes to the
 * request's local buffer (RFC 7306 §5.1: the value in the requester's own
 * byte order), then the request completes.
 */
static void xiw_rx_response(struct xiw_qp *qp)
	__must_hold(&qp->lock)
{
	struct xiw_qp_rx *rx = &qp->rx;
	struct xiw_orq_entry *e = &rx->orq[rx->orq_head++ % XIW_MAX_ORD];
	struct xiw_wqe *wqe = e->wqe;
	u32 seq = e->wqe_seq;
	u8 status = XIW_WC_SUCCESS;
	u64 orig;

	switch (rx->op->opcode) {
	case XIW_OP_ATOMIC_RESP:
		orig = xiw_get_be64(&rx->hdr.atomic_resp.atomic.orig);
		if (xiw_mr_copy_to(wqe->mr[0], e->sink_to, &orig, sizeof(orig)))
			status = XIW_WC_LOC_PROT_ERR;
		break;
	case XIW_OP_VERIFY_RESP:
		wqe->bytes = rx->payload_len;
		if (!wqe->mr[0] || wqe->sqe.sge[0].length < rx->payload_len)
			status = XIW_WC_LOC_LEN_ERR;
		else if (xiw_mr_copy_to(wqe->mr[0], e->sink_to, rx->tail,
					rx->payload_len))
			status = XIW_WC_LOC_PROT_ERR;
		break;
	default:
		break;
	}
	spin_unlock_bh(&qp->lock);
	xiw_qp_sq_complete_request(qp, wqe, seq, status);
	spin_lock_bh(&qp->lock);
}

/*
 * A Send with Invalidate is placed: its STag is invalidated before the
 * receive completes (RFC 5040 §5.3).  Only fast registrations of the QP's
 * PD can be; for any other STag the stream ends (RFC 5040 §7.4).
 */
static void xiw_rx_invalidate(struct xiw_qp *qp, bool se)
	__must_hold(&qp->lock)
{
	struct xiw_qp_rx *rx = &qp->rx;
	u32 stag = be32_to_cpu(rx->hdr.untagged.inval_stag);
	struct xiw_cqe cqe = {
		.byte_len = rx->msg_len,
		.opcode = XIW_WC_RECV,
		.flags = XIW_CQE_WITH_INV,
		.imm_or_inv = stag,
	};

	if (xiw_mr_invalidate(to_xiw_dev(qp->ibqp.device), qp->ibqp.pd,
			      stag) != XIW_ACCESS_OK) {
		xiw_rq_complete(qp, rx->msg_len, XIW_WC_REM_INV_REQ_ERR, true);
		xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
			    XIW_RDMAP_ETYPE_REMOTE_PROTECTION,
			    XIW_RDMAP_ECODE_CANNOT_INVALIDATE);
		return;
	}
	xiw_rq_post(qp, &cqe, se);
}

/* The last segment of a QN 0 message arrived: complete its RQE. */
static void xiw_rx_end_send(struct xiw_qp *qp)
	__must_hold(&qp->lock)
{
	struct xiw_qp_rx *rx = &qp->rx;
	bool se = rx->op->flags & XIW_OPF_SE;
	u32 write_len = rx->last_write_len;

	rx->msn[XIW_QN_SEND]++;
	rx->last_write_len = 0;
	if (!rx->rqe_valid) {
		xiw_rx_rtr_seen(qp, XIW_OP_SEND);
		return;
	}
	if (rx->op->flags & XIW_OPF_INVAL)
		xiw_rx_invalidate(qp, se);
	else if (rx->op->flags & XIW_OPF_IMM_LAST)
		xiw_rq_complete_imm(qp, XIW_WC_RECV, rx->msg_len, rx->imm, se);
	else if (rx->op->hdr_len == XIW_IMM_DATA_LEN)
		/* RFC 7306 §6: completes the RDMA Write right before it. */
		xiw_rq_complete_imm(qp, XIW_WC_RECV_RDMA_WITH_IMM, write_len,
				    rx->hdr.imm.imm.data, se);
	else
		xiw_rq_complete(qp, rx->msg_len, XIW_WC_SUCCESS, se);
}

static void xiw_rx_end_write(struct xiw_qp *qp, bool last)
	__must_hold(&qp->lock)
{
	struct xiw_qp_rx *rx = &qp->rx;

	rx->write_len += rx->payload_len;
	if (last) {
		rx->last_write_len = rx->write_len;
		rx->write_len = 0;
	}
}

static void xiw_rx_end_read_response(struct xiw_qp *qp, bool last)
	__must_hold(&qp->lock)
{
	struct xiw_qp_rx *rx = &qp->rx;
	struct xiw_orq_entry *e = &rx->orq[rx->orq_head % XIW_MAX_ORD];
	struct xiw_wqe *wqe;
	u32 seq;
	u8 status;

	e->placed += rx->payload_len;
	if (!last)
		return;
	/*
	 * The slot is free once orq_head passed it: the transmit path may
	 * issue the next request into it as soon as the lock is dropped, so
	 * take what completes the Read before.
	 */
	wqe = e->wqe;
	seq = e->wqe_seq;
	status = e->placed == e->len ? XIW_WC_SUCCESS : XIW_WC_REM_OP_ERR;
	rx->orq_head++;
	if (wqe) {
		spin_unlock_bh(&qp->lock);
		xiw_qp_sq_complete_request(qp, wqe, seq, status);
		spin_lock_bh(&qp->lock);
	}
}

static void xiw_rx_end_send_fpdu(struct xiw_qp *qp, bool last)
	__must_hold(&qp->lock)
{
	if (last)
		xiw_rx_end_send(qp);
}

static void xiw_rx_end_request(struct xiw_qp *qp, bool last)
	__must_hold(&qp->lock)
{
	qp->rx.msn[XIW_QN_READ_REQ]++;
	qp->rx.handler->execute(qp);
}

static void xiw_rx_end_response(struct xiw_qp *qp, bool last)
	__must_hold(&qp->lock)
{
	qp->rx.msn[XIW_QN_RESPONSE]++;
	xiw_rx_response(qp);
}

static void xiw_rx_end_terminate(struct xiw_qp *qp, bool last)
	__must_hold(&qp->lock)
{
	qp->rx.msn[XIW_QN_TERMINATE]++;
	xiw_rx_terminate(qp);
}

/*
 * What the parser does with each RDMAP opcode (the wire table's rows, RFC
 * 5040 §4.2, RFC 7306 §4.1, draft-talpey §2, draft-wood §4.1), by version.
 * Every message of RV 1 is valid with RV 2 too (draft-wood §4.1).
 */
#define XIW_RX_SEND { xiw_rx_begin_send, xiw_rx_end_send_fpdu }
/* Requests are executed once delivered: xiw_rx_end_request(). */
#define XIW_RX_REQUEST(exec) { xiw_rx_begin_single, xiw_rx_end_request, exec }
#define XIW_RX_RESPONSE { xiw_rx_begin_response_fpdu, xiw_rx_end_response }
static const struct xiw_rx_handler xiw_rx_rv1[32] = {
	[XIW_OP_WRITE] = { xiw_rx_begin_write, xiw_rx_end_write },
	[XIW_OP_READ_REQ] = XIW_RX_REQUEST(xiw_rx_read_request),
	[XIW_OP_READ_RESP] = { xiw_rx_begin_read_response,
			       xiw_rx_end_read_response },
	[XIW_OP_SEND] = XIW_RX_SEND,
	[XIW_OP_SEND_INV] = XIW_RX_SEND,
	[XIW_OP_SEND_SE] = XIW_RX_SEND,
	[XIW_OP_SEND_SE_INV] = XIW_RX_SEND,
	[XIW_OP_TERMINATE] = { xiw_rx_begin_single, xiw_rx_end_terminate },
	[XIW_OP_IMM] = XIW_RX_SEND,
	[XIW_OP_IMM_SE] = XIW_RX_SEND,
	[XIW_OP_ATOMIC_REQ] = XIW_RX_REQUEST(xiw_rx_atomic_request),
	[XIW_OP_ATOMIC_RESP] = XIW_RX_RESPONSE,
	[XIW_OP_FLUSH_REQ] = XIW_RX_REQUEST(xiw_rx_flush_request),
	[XIW_OP_FLUSH_RESP] = XIW_RX_RESPONSE,
	[XIW_OP_VERIFY_REQ] = XIW_RX_REQUEST(xiw_rx_verify_request),
	[XIW_OP_VERIFY_RESP] = XIW_RX_RESPONSE,
	[XIW_OP_ATOMIC_WRITE_REQ] = XIW_RX_REQUEST(xiw_rx_atomic_write_request),
	[XIW_OP_ATOMIC_WRITE_RESP] = XIW_RX_RESPONSE,
};

static const struct xiw_rx_handler xiw_rx_rv2[32] = {
	[XIW_OP2_READ_REQ_V2] = { xiw_rx_begin_unsupported },
	[XIW_OP2_READ_RESP_V2] = XIW_RX_RESPONSE,
	[XIW_OP2_SEND_IMM] = XIW_RX_SEND,
	[XIW_OP2_SEND_INV_IMM] = XIW_RX_SEND,
	[XIW_OP2_SEND_SE_IMM] = XIW_RX_SEND,
	[XIW_OP2_SEND_SE_INV_IMM] = XIW_RX_SEND,
};

#undef XIW_RX_SEND
#undef XIW_RX_REQUEST
#undef XIW_RX_RESPONSE

/* The handler of a valid (@rv, @opcode): xiw_wire_op() found its row. */
static const struct xiw_rx_handler *xiw_rx_handler_of(unsigned int rv,
						      unsigned int opcode)
{
	opcode %= ARRAY_SIZE(xiw_rx_rv1);
	if (rv == XIW_RDMAP_RV2 && xiw_rx_rv2[opcode].begin)
		return &xiw_rx_rv2[opcode];
	return &xiw_rx_rv1[opcode];
}

/*
 * Fills the look-up of the wire table.  -EINVAL if a row that may arrive
 * has no handler: a new row in wire.h needs one here, or every FPDU with
 * its opcode would call a NULL function.
 */
int __init xiw_wire_ops_init(void)
{
	unsigned int rv, op;

	for (rv = XIW_RDMAP_RV1; rv <= XIW_RDMAP_RV2; rv++) {
		for (op = 0; op < ARRAY_SIZE(xiw_ops[0]); op++) {
			const struct xiw_opcode_info *row =
				xiw_opcode_lookup(rv, op);
			const struct xiw_rx_handler *h =
				xiw_rx_handler_of(rv, op);
			bool handled = h->begin &&
				       (h->end ||
					h->begin == xiw_rx_begin_unsupported);

			xiw_ops[rv - 1][op] = row;
			xiw_se_ops[rv - 1][op] = xiw_opcode_solicited(rv, op);
			if (!row || handled)
				continue;
			pr_err("xiw: RDMAP version %u opcode 0x%x (%s) has no receive handler\n",
			       rv, op, row->name);
			return -EINVAL;
		}
	}
	return 0;
}

/* Checks everything an FPDU header says; false if the stream failed. */
static bool xiw_rx_begin_fpdu(struct xiw_qp *qp)
	__must_hold(&qp->lock)
{
	struct xiw_qp_rx *rx = &qp->rx;

	if (!(rx->op->flags & XIW_OPF_TAGGED) &&
	    be32_to_cpu(rx->hdr.untagged.qn) != rx->op->qn) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_UNTAGGED,
			    XIW_DDP_ECODE_UT_INVALID_QN);
		return false;
	}
	return rx->handler->begin(qp);
}

/* The FPDU is placed: the message's end, or a request's execution. */
static void xiw_rx_end_fpdu(struct xiw_qp *qp)
	__must_hold(&qp->lock)
{
	struct xiw_qp_rx *rx = &qp->rx;

	if (rx->tagged_mr) {
		xiw_mr_put(rx->tagged_mr);
		rx->tagged_mr = NULL;
	}
	rx->handler->end(qp, xiw_ddp_last(rx->hdr.ctrl.ddp_ctrl));
}

/* Places the next @n payload octets of the current FPDU from @cur. */
static bool xiw_rx_place(struct xiw_qp *qp, struct xiw_skb_cursor *cur, u32 n)
{
	struct xiw_qp_rx *rx = &qp->rx;
	u32 *crc = qp->conn.crc ? &rx->crc : NULL;
	u32 pos = rx->payload_got;
	struct xiw_orq_entry *e;
	unsigned int i;
	u64 to;

	/*
	 * A tagged buffer that fails now was invalidated or deregistered
	 * since the segment began (RFC 5041 §7.2: invalid STag).
	 */
	switch (rx->op->opcode) {
	case XIW_OP_WRITE:
		if (xiw_mr_copy_from_skb(rx->tagged_mr,
					 xiw_get_be64(&rx->hdr.tagged.to) + pos,
					 cur, n, crc))
			goto tagged_fail;
		return true;
	case XIW_OP_READ_RESP:
		/*
		 * The Read this segment began for must still be the oldest
		 * one and hold the room (a flush empties the ORQ).
		 */
		e = &rx->orq[rx->orq_head % XIW_MAX_ORD];
		if (rx->orq_head == rx->orq_tail || !e->wqe ||
		    pos + n > e->len - e->placed)
			goto tagged_fail;
		if (xiw_mr_copy_from_skb(e->wqe->mr[0],
					 e->sink_to + e->placed + pos,
					 cur, n, crc))
			goto tagged_fail;
		return true;
	default:
		break;
	}
	/*
	 * A Terminate's copies (kept for the record only), a Verify's hash:
	 * checked to fit when the segment began.
	 */
	if (rx->op->flags & XIW_OPF_VARLEN) {
		if (xiw_skb_cursor_copy(cur, rx->tail + pos, n, crc))
			goto skb_fail;
		return true;
	}
	/* The Immediate Data segment of a Send (checked to be 8 octets). */
	if (rx->op->flags & XIW_OPF_IMM_LAST &&
	    xiw_ddp_last(rx->hdr.ctrl.ddp_ctrl)) {
		if (xiw_skb_cursor_copy(cur, rx->imm + pos, n, crc))
			goto skb_fail;
		return true;
	}

	/* A Send: spread over the SGEs of the RQE. */
	while (n) {
		u32 at = rx->msg_len;
		u32 chunk;

		for (i = 0; i < rx->rqe.num_sge; i++) {
			if (at < rx->rqe.sge[i].length)
				break;
			at -= rx->rqe.sge[i].length;
		}
		if (i == rx->rqe.num_sge) {
			xiw_rq_complete(qp, 0, XIW_WC_LOC_LEN_ERR, true);
			xiw_rx_fail(qp, XIW_TERM_LAYER_DDP,
				    XIW_DDP_ETYPE_UNTAGGED,
				    XIW_DDP_ECODE_UT_MSG_TOO_LONG);
			return false;
		}
		chunk = min(n, rx->rqe.sge[i].length - at);
		to = rx->rqe.sge[i].addr + at;
		if (!xiw_mr_covers(rx->rqe_mr[i], to, chunk) ||
		    xiw_mr_copy_from_skb(rx->rqe_mr[i], to, cur, chunk, crc)) {
			/*
			 * Past the end of the registration, or its consumer
			 * took the buffer away meanwhile.
			 */
			xiw_rq_complete(qp, 0, XIW_WC_LOC_PROT_ERR, true);
			xiw_rx_fail(qp, XIW_TERM_LAYER_RDMAP,
				    XIW_RDMAP_ETYPE_LOCAL_CATASTROPHIC,
				    XIW_RDMAP_ECODE_LOCAL_CATASTROPHIC);
			return false;
		}
		rx->msg_len += chunk;
		n -= chunk;
	}
	return true;

tagged_fail:
	xiw_rx_fail_access(qp, XIW_ACCESS_INVALID_STAG);
	return false;
skb_fail:
	xiw_rx_fail(qp, XIW_TERM_LAYER_LLP, XIW_LLP_ETYPE_MPA,
		    XIW_LLP_ECODE_LOCAL_CATASTROPHIC);
	return false;
}

/*
 * Bytes from the stream are parsed only in RTS and SQD (RFC 5040 §6: the
 * states that accept incoming messages) and until the stream broke.
 */
static bool xiw_rx_parsing(struct xiw_qp *qp)
{
	enum ib_qp_state state = READ_ONCE(qp->state);

	return !qp->rx.failed &&
	       (state == IB_QPS_RTS || state == IB_QPS_SQD);
}

static void xiw_rx_reset_fpdu(struct xiw_qp_rx *rx)
{
	rx->phase = XIW_RX_CTRL;
	rx->hdr_got = 0;
	rx->hdr_len = 0;
	rx->payload_got = 0;
	rx->trailer_got = 0;
	rx->op = NULL;
	rx->crc = ~0U;
}

/* Checks the CRC (RFC 5044 §4), all octets before it being counted in. */
static bool xiw_rx_check_trailer(struct xiw_qp *qp, u32 pad)
{
	struct xiw_qp_rx *rx = &qp->rx;
	u32 got;

	if (!qp->conn.crc)
		return true;
	got = xiw_mpa_get_crc((struct xiw_mpa_trailer *)(rx->trailer + pad));
	return got == ~rx->crc;
}

/*
 * A marker (RFC 5044 §4.3) points back to the ULPDU_Length of the FPDU it
 * is in; one where an FPDU begins, before that FPDU's header, points
 * nowhere (0).  The CRC covers it either way.  False if the stream failed.
 */
static bool xiw_rx_check_marker(struct xiw_qp *qp)
{
	struct xiw_qp_rx *rx = &qp->rx;
	u32 pos = rx->stream_pos - XIW_MPA_MARKER_LEN;
	u32 fpdu_pos = rx->hdr_got ? rx->fpdu_pos : pos;
	/* The two low-order bits are always zero to a receiver. */
	u16 ptr = be16_to_cpu(rx->marker.fpdu_ptr) & ~(XIW_MPA_ALIGN - 1);

	rx->marker_got = 0;
	if (qp->conn.crc)
		rx->crc = xiw_crc_update(rx->crc, &rx->marker,
					 XIW_MPA_MARKER_LEN);
	if (ptr != (u16)(pos - fpdu_pos)) {
		xiw_rx_fail(qp, XIW_TERM_LAYER_LLP, XIW_LLP_ETYPE_MPA,
			    XIW_LLP_ECODE_MARKER);
		return false;
	}
	return true;
}

/*
 * Parses the next @len octets of @cur.  A stream of small FPDUs is many
 * copies of a few octets each (control word, header, payload, trailer);
 * each goes on where the last ended instead of walking the skb's
 * fragments from the start again (skb_copy_bits()).
 */
static void xiw_rx_parse(struct xiw_qp *qp, struct xiw_skb_cursor *cur,
			 size_t len)
	__must_hold(&qp->lock)
{
	struct xiw_qp_rx *rx = &qp->rx;
	size_t left = len;

	/* The QP may go to Error while the lock is dropped (completions). */
	while (left && xiw_rx_parsing(qp)) {
		/* Of @left, the octets up to the next marker. */
		size_t avail = left;
		u32 want, n, pad;

		if (qp->conn.markers_rx) {
			u32 gap = xiw_mpa_marker_gap(rx->stream_pos);

			if (!gap || rx->marker_got) {
				n = min_t(size_t, left,
					  XIW_MPA_MARKER_LEN - rx->marker_got);
				if (xiw_skb_cursor_copy(cur, (u8 *)&rx->marker +
							rx->marker_got, n,
							NULL))
					goto fatal;
				rx->marker_got += n;
				rx->stream_pos += n;
				left -= n;
				if (rx->marker_got == XIW_MPA_MARKER_LEN &&
				    !xiw_rx_check_marker(qp))
					break;
				continue;
			}
			avail = min_t(size_t, left, gap);
		}

		switch (rx->phase) {
		case XIW_RX_CTRL:
		case XIW_RX_HEADER: {
			u8 *to = (u8 *)&rx->hdr + rx->hdr_got;

			want = rx->phase == XIW_RX_HEADER ? rx->hdr_len :
				sizeof(struct xiw_ctrl);
			n = min_t(size_t, want - rx->hdr_got, avail);
			if (xiw_skb_cursor_copy(cur, to, n,
						qp->conn.crc ? &rx->crc : NULL))
				goto fatal;
			if (!rx->hdr_got)
				rx->fpdu_pos = rx->stream_pos;
			rx->hdr_got += n;
			rx->stream_pos += n;
			left -= n;
			if (rx->hdr_got < want)
				continue;
			if (rx->phase == XIW_RX_CTRL) {
				/* Sets hdr_len, which the control word ends. */
				if (!xiw_rx_parse_ctrl(qp))
					return;
				rx->phase = XIW_RX_HEADER;
				continue;
			}
			if (!xiw_rx_begin_fpdu(qp))
				return;
			rx->phase = rx->payload_len ? XIW_RX_PAYLOAD :
						      XIW_RX_TRAILER;
			continue;
		}
		case XIW_RX_PAYLOAD:
			n = min_t(size_t, rx->payload_len - rx->payload_got,
				  avail);
			if (!xiw_rx_place(qp, cur, n))
				return;
			rx->payload_got += n;
			rx->stream_pos += n;
			left -= n;
			if (rx->payload_got == rx->payload_len)
				rx->phase = XIW_RX_TRAILER;
			continue;
		case XIW_RX_TRAILER:
			break;
		}
		pad = xiw_mpa_pad_len(rx->hdr_len - XIW_MPA_HDR_LEN +
				      rx->payload_len);
		want = pad + XIW_MPA_CRC_LEN;
		n = min_t(size_t, want - rx->trailer_got, avail);
		if (xiw_skb_cursor_copy(cur, rx->trailer + rx->trailer_got, n,
					NULL))
			goto fatal;
		/* A marker may sit between the pad and the CRC. */
		if (qp->conn.crc && rx->trailer_got < pad)
			rx->crc = xiw_crc_update(rx->crc,
						 rx->trailer + rx->trailer_got,
						 min(n, pad - rx->trailer_got));
		rx->trailer_got += n;
		rx->stream_pos += n;
		left -= n;
		if (rx->trailer_got < want)
			continue;
		if (!xiw_rx_check_trailer(qp, pad)) {
			xiw_rx_fail(qp, XIW_TERM_LAYER_LLP, XIW_LLP_ETYPE_MPA,
				    XIW_LLP_ECODE_CRC);
			break;
		}
		xiw_rx_end_fpdu(qp);
		xiw_rx_reset_fpdu(rx);
	}
	return;

fatal:
	xiw_rx_fail(qp, XIW_TERM_LAYER_LLP, XIW_LLP_ETYPE_MPA,
		    XIW_LLP_ECODE_LOCAL_CATASTROPHIC);
}

static int xiw_rx_actor(read_descriptor_t *desc, struct sk_buff *skb,
			unsigned int off, size_t len)
{
	struct xiw_qp *qp = desc->arg.data;
	struct xiw_skb_cursor cur = { .pos = 0 };

	skb_prepare_seq_read(skb, off, off + len, &cur.seq);
	xiw_rx_parse(qp, &cur, len);
	skb_abort_seq_read(&cur.seq);
	if (!xiw_rx_parsing(qp))
		desc->count = 0;
	return len;
}

/* Runs the parser over what the socket holds; socket lock held. */
static void xiw_rx_read(struct xiw_qp *qp, struct sock *sk)
{
	read_descriptor_t desc = {
		.arg.data = qp,
		.count = 1,
	};

	spin_lock_bh(&qp->lock);
	if (xiw_rx_parsing(qp))
		tcp_read_sock(sk, &desc, xiw_rx_actor);
	spin_unlock_bh(&qp->lock);
}

void xiw_qp_data_ready(struct sock *sk)
{
	struct xiw_qp *qp;

	read_lock_bh(&sk->sk_callback_lock);
	qp = sk->sk_user_data ? xiw_cep_qp(sk->sk_user_data) : NULL;
	if (qp)
		xiw_rx_read(qp, sk);
	read_unlock_bh(&sk->sk_callback_lock);
}

/* Bytes that arrived before the QP took the socket over. */
void xiw_qp_rx_process_queued(struct xiw_qp *qp)
{
	struct sock *sk = qp->sock->sk;

	lock_sock(sk);
	xiw_rx_read(qp, sk);
	release_sock(sk);
}

/*
 * A new stream starts from nothing (qp->lock held): a QP reused after
 * Error and Reset keeps no parser state, no half-received message, no
 * outstanding Read and no MSN of its last connection.  Its receives were
 * flushed when it went to Error.
 */
void xiw_qp_rx_reset_stream(struct xiw_qp *qp)
{
	struct xiw_qp_rx *rx = &qp->rx;
	struct xiw_orq_entry *orq = rx->orq;
	unsigned int i;

	xiw_rx_release(rx);
	memset(rx, 0, sizeof(*rx));
	rx->orq = orq;
	memset(orq, 0, XIW_MAX_ORD * sizeof(*orq));
	for (i = 0; i < XIW_QN_COUNT; i++)
		rx->msn[i] = 1;
	xiw_rx_reset_fpdu(rx);
}

int xiw_qp_rx_init(struct xiw_qp *qp)
{
	qp->rx.orq = kcalloc(XIW_MAX_ORD, sizeof(*qp->rx.orq),
			     GFP_KERNEL_ACCOUNT);
	if (!qp->rx.orq)
		return -ENOMEM;
	xiw_qp_rx_reset_stream(qp);
	return 0;
}

void xiw_qp_rx_destroy(struct xiw_qp *qp)
{
	struct xiw_qp_rx *rx = &qp->rx;

	xiw_rx_release(rx);
	kfree(rx->orq);
	rx->orq = NULL;
}
