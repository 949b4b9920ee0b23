// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw transmit path: turns send queue entries, answers to inbound RDMA
 * Read Requests and Terminate messages into FPDUs (RFC 5044 §4, RFC 5041
 * §4, RFC 5040 §4) and hands them to the TCP socket.
 *
 * All sending happens in process context with tx.lock held: directly in
 * the doorbell system call when the queue is idle, else in the QP's work
 * item.  FPDU headers, trailers and short payloads are framed into tx.buf;
 * longer payloads stay in the registered pages, so that the only copy is
 * TCP's own.  One push hands all of it to the socket; what TCP does not
 * take now goes when it signals write space.
 */
#include <linux/bvec.h>
#include <crypto/hash.h>
#include <linux/highmem.h>
#include <linux/uio.h>
#include <linux/net.h>
#include <linux/percpu.h>
#include <linux/sched/clock.h>
#include <linux/sched/isolation.h>
#include <linux/tcp.h>
#include <net/tcp.h>

#include "xiw.h"

/* Headers, trailers and short payloads; kmalloc'ed, so page aligned. */
#define XIW_TX_BUF_SIZE (16 * 1024)
#define XIW_TX_BUF_PAGES (XIW_TX_BUF_SIZE / PAGE_SIZE)
/* Pieces handed to TCP in one push; also bounds the MRs it holds. */
#define XIW_TX_VECS 256
/* Markers (RFC 5044 §4.3) in one push: each takes two of the pieces. */
#define XIW_TX_MARKERS (XIW_TX_VECS / 2)
/*
 * Payloads up to this size are copied behind their header; longer ones go
 * to TCP straight from the registered pages, which spares a copy - unless
 * the FPDU carries a CRC: TCP copies the pages later, and memory the
 * consumer or the peer changes meanwhile (a Read of a region being
 * written is legal, its data undefined) would no longer match the CRC,
 * which ends the stream.  The CRC must cover what is sent.
 */
#define XIW_TX_COPY_MAX XIW_MAX_INLINE
/* Loopback's MSS is near 64 KiB: keep several FPDUs per push. */
#define XIW_FPDU_MAX (16 * 1024)
/* Pushes of one run of the transmit loop before it yields the worker. */
#define XIW_TX_BUDGET 64
/* Runs of it for one doorbell or work item before the worker goes on. */
#define XIW_TX_ROUNDS 4

struct workqueue_struct *xiw_wq;
struct workqueue_struct *xiw_tx_wq;

static struct xiw_ring_ctrl *xiw_sq_ctrl(struct xiw_qp *qp)
{
	return qp->sq.mem;
}

/*
 * The consumer posts without waiting for each completion (the provider's
 * hint, XIW_POST_STREAM; anything but XIW_POST_NOW counts as a stream).
 */
static bool xiw_sq_streams(struct xiw_qp *qp)
{
	return qp->sq.num &&
	       READ_ONCE(xiw_sq_ctrl(qp)->post_mode) != XIW_POST_NOW;
}

static struct xiw_sqe *xiw_sq_slot(struct xiw_qp *qp, u32 index)
{
	return xiw_ring_entry(&qp->sq, index);
}

static struct xiw_wqe *xiw_wqe_at(struct xiw_qp *qp, u32 index)
{
	return &qp->tx.wqes[index & (qp->sq.num - 1)];
}

/* Largest ULP payload of an FPDU with a @hdr_size byte header. */
static u32 xiw_tx_max_payload(struct xiw_qp *qp, u32 hdr_size)
{
	u32 mss = READ_ONCE(tcp_sk(qp->sock->sk)->mss_cache);
	u32 fpdu = clamp_t(u32, mss, 512, XIW_FPDU_MAX);

	/*
	 * RFC 5044 §6: an FPDU should fit into one TCP segment, so that a
	 * segment can be placed on its own.  Header, pad, CRC and markers
	 * included.
	 */
	if (qp->conn.markers_tx)
		fpdu -= XIW_MPA_MARKER_LEN * xiw_mpa_fpdu_markers_max(fpdu);
	return round_down(fpdu - hdr_size - XIW_MPA_CRC_LEN, XIW_MPA_ALIGN);
}

static void xiw_tx_add_vec(struct xiw_qp_tx *tx, struct page *page, u32 off,
			   u32 len)
{
	struct bio_vec *last = tx->nvec ? &tx->vec[tx->nvec - 1] : NULL;

	if (last && last->bv_page == page &&
	    last->bv_offset + last->bv_len == off)
		last->bv_len += len;
	else
		tx->vec[tx->nvec++] = (struct bio_vec){
			.bv_page = page, .bv_offset = off, .bv_len = len,
		};
	tx->out_len += len;
}

/* Stream position (RFC 5044 §4.3) of the next octet framed. */
static u32 xiw_tx_stream_pos(const struct xiw_qp_tx *tx)
{
	return tx->stream_base + tx->out_len;
}

/*
 * Inserts the marker due at the current stream position, if one is: the
 * FPDU being framed has it, and its CRC covers it (RFC 5044 §4.3).
 */
static void xiw_tx_marker_due(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;
	u32 pos = xiw_tx_stream_pos(tx);
	struct xiw_mpa_marker *m;

	if (xiw_mpa_marker_gap(pos))
		return;
	m = &tx->markers[tx->nmarkers++];
	/* The one right before the FPDU's header points nowhere (0). */
	xiw_mpa_marker_set(m, pos, pos + XIW_MPA_MARKER_LEN == tx->fpdu_pos ?
				   pos : tx->fpdu_pos);
	if (qp->conn.crc)
		tx->crc = xiw_crc_update(tx->crc, m, sizeof(*m));
	xiw_tx_add_vec(tx, virt_to_page(m), offset_in_page(m), sizeof(*m));
}

/*
 * Appends @len octets of the FPDU being framed, at @off in @page, mapped
 * at @va, to what the next push sends: counted into its CRC unless @va
 * is NULL (the CRC field itself), markers inserted where due.
 */
static void xiw_tx_emit(struct xiw_qp *qp, struct page *page, u32 off,
			u32 len, const u8 *va)
{
	struct xiw_qp_tx *tx = &qp->tx;

	while (len) {
		u32 n = len;

		if (qp->conn.markers_tx) {
			xiw_tx_marker_due(qp);
			n = min(n, xiw_mpa_marker_gap(xiw_tx_stream_pos(tx)));
		}
		if (va && qp->conn.crc) {
			tx->crc = xiw_crc_update(tx->crc, va, n);
			va += n;
		}
		xiw_tx_add_vec(tx, page, off, n);
		off += n;
		len -= n;
	}
}

/* Appends the bytes of tx.buf not yet in tx.vec, up to tx.buf_len. */
static void xiw_tx_describe_buf(struct xiw_qp *qp, bool crc)
{
	struct xiw_qp_tx *tx = &qp->tx;

	while (tx->buf_described < tx->buf_len) {
		const u8 *p = tx->buf + tx->buf_described;
		u32 n = min_t(u32, tx->buf_len - tx->buf_described,
			      PAGE_SIZE - offset_in_page(p));

		xiw_tx_emit(qp, virt_to_page(p), offset_in_page(p), n,
			    crc ? p : NULL);
		tx->buf_described += n;
	}
}

/*
 * Forgets what is framed and lets go of the registrations it points into.
 * What TCP took of it stays on the stream.
 */
static void xiw_tx_discard(struct xiw_qp_tx *tx)
{
	while (tx->nheld)
		xiw_mr_put(tx->held[--tx->nheld]);
	tx->stream_base += tx->out_sent;
	tx->buf_len = 0;
	tx->buf_described = 0;
	tx->nvec = 0;
	tx->nmarkers = 0;
	tx->out_len = 0;
	tx->out_sent = 0;
	/* Completed by now, or left to the flush of an error. */
	tx->sent_head = 0;
	tx->nsent = 0;
}

/*
 * Reserves room for an FPDU: its header and @copied payload bytes in
 * tx.buf, @attached payload bytes sent from registered pages.  Returns
 * where the header goes, NULL when this push has no room left.
 */
static void *xiw_tx_frame_begin(struct xiw_qp *qp, u32 hdr_size, u32 copied,
				u32 attached)
{
	struct xiw_qp_tx *tx = &qp->tx;
	u32 ulpdu = hdr_size - XIW_MPA_HDR_LEN + copied + attached;
	size_t need = xiw_mpa_fpdu_len(ulpdu) - attached;
	/* tx.buf before and after the attached pages, each page a piece. */
	u32 vecs = 2 * XIW_TX_BUF_PAGES;
	u32 markers = 0;

	/* Each SGE's piece may begin and end in a partial page. */
	if (attached)
		vecs += DIV_ROUND_UP(attached, PAGE_SIZE) + 2 * XIW_MAX_SGE;
	/* A marker is a piece, and splits one. */
	if (qp->conn.markers_tx) {
		markers = xiw_mpa_fpdu_markers_max(xiw_mpa_fpdu_len(ulpdu));
		vecs += 2 * markers;
	}
	if (tx->buf_len + need > XIW_TX_BUF_SIZE ||
	    tx->nvec + vecs > XIW_TX_VECS ||
	    tx->nmarkers + markers > XIW_TX_MARKERS ||
	    tx->nheld + XIW_MAX_SGE > XIW_TX_VECS)
		return NULL;
	tx->fpdu = tx->buf + tx->buf_len;
	tx->fpdu_attached = 0;
	/* Its header goes behind the marker due where it begins, if any. */
	tx->fpdu_pos = xiw_tx_stream_pos(tx);
	if (qp->conn.markers_tx && !xiw_mpa_marker_gap(tx->fpdu_pos))
		tx->fpdu_pos += XIW_MPA_MARKER_LEN;
	tx->crc = ~0U;
	return tx->fpdu;
}

/* Attached pages are never read here: with a CRC, payloads are copied. */
static int xiw_tx_attach_piece(struct page *page, size_t off, size_t n,
			       void *arg)
{
	xiw_tx_emit(arg, page, off, n, NULL);
	return 0;
}

/*
 * Adds @len bytes of @mr at @addr to the FPDU begun last, to go to TCP
 * from the registered pages; what the FPDU has in tx.buf ends at @at.
 * The pages must not be unpinned before TCP took the bytes: the push holds
 * a reference on @mr until then.
 */
static void xiw_tx_frame_attach(struct xiw_qp *qp, u8 *at, struct xiw_mr *mr,
				u64 addr, u32 len)
{
	struct xiw_qp_tx *tx = &qp->tx;

	if (!tx->fpdu_attached) {
		tx->buf_len = at - tx->buf;
		xiw_tx_describe_buf(qp, true);
	}
	if (!tx->nheld || tx->held[tx->nheld - 1] != mr) {
		xiw_mr_hold(mr);
		tx->held[tx->nheld++] = mr;
	}
	xiw_mr_walk_pages(mr, addr, len, xiw_tx_attach_piece, qp);
	tx->held_end[tx->nheld - 1] = tx->out_len;
	tx->fpdu_attached += len;
}

/* Pads the FPDU begun last, of @ulpdu_len, adds the CRC and commits it. */
static void xiw_tx_frame_end(struct xiw_qp *qp, u32 ulpdu_len)
{
	struct xiw_qp_tx *tx = &qp->tx;
	u32 pad = xiw_mpa_pad_len(ulpdu_len);
	u8 *pad_at = tx->fpdu_attached ? tx->buf + tx->buf_len :
			tx->fpdu + XIW_MPA_HDR_LEN + ulpdu_len;
	struct xiw_mpa_trailer *trailer;

	memset(pad_at, 0, pad);
	trailer = (struct xiw_mpa_trailer *)(pad_at + pad);
	tx->buf_len = (u8 *)trailer - tx->buf;
	xiw_tx_describe_buf(qp, true);
	/* A marker between the pad and the CRC is the FPDU's own. */
	if (qp->conn.markers_tx)
		xiw_tx_marker_due(qp);
	/* RFC 5044 §4: without CRC the field is still there, all zero. */
	xiw_mpa_put_crc(trailer, qp->conn.crc ? ~tx->crc : 0);
	tx->buf_len += sizeof(*trailer);
	xiw_tx_describe_buf(qp, false);
}

/*
 * Adds @len payload bytes of @wqe starting at @offset to the FPDU begun
 * last, behind its header, which ends at @dst: copied there when @copy,
 * else attached.
 */
static void xiw_tx_frame_wqe_payload(struct xiw_qp *qp, struct xiw_wqe *wqe,
				     u32 offset, u8 *dst, u32 len, bool copy)
{
	const struct xiw_sqe *sqe = &wqe->sqe;
	unsigned int i;

	if (sqe->flags & XIW_SQE_INLINE) {
		memcpy(dst, (const u8 *)sqe->sge + offset, len);
		return;
	}
	for (i = 0; i < sqe->num_sge && len; i++) {
		u32 sge_len = sqe->sge[i].length;
		u64 addr = sqe->sge[i].addr + offset;
		u32 n;

		if (offset >= sge_len) {
			offset -= sge_len;
			continue;
		}
		n = min(len, sge_len - offset);
		if (copy) {
			/* Invalidated by its consumer meanwhile: send zeros. */
			if (xiw_mr_copy_from(wqe->mr[i], addr, dst, n))
				memset(dst, 0, n);
			dst += n;
		} else {
			xiw_tx_frame_attach(qp, dst, wqe->mr[i], addr, n);
		}
		len -= n;
		offset = 0;
	}
}

static void xiw_wqe_release(struct xiw_wqe *wqe)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(wqe->mr); i++) {
		if (wqe->mr[i])
			xiw_mr_put(wqe->mr[i]);
		wqe->mr[i] = NULL;
	}
}

/*
 * Completes the WQEs at the head of the SQ that are done, in order, and
 * gives their slots back to the producer.  Called with qp->lock held.
 */
static void xiw_sq_retire(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;

	while (tx->retire != tx->fetch) {
		struct xiw_wqe *wqe = xiw_wqe_at(qp, tx->retire);
		struct xiw_cqe cqe = {
			.wr_id = wqe->sqe.wr_id,
			.byte_len = wqe->bytes,
			.qp_num = qp->ibqp.qp_num,
			/* An SQE with no opcode completes as a Send. */
			.opcode = wqe->info ? wqe->info->wc : XIW_WC_SEND,
			.status = wqe->status,
		};
		bool report;

		if (!wqe->done)
			break;
		report = wqe->status != XIW_WC_SUCCESS ||
			 wqe->sqe.flags & XIW_SQE_SIGNALED || qp->sig_all;
		xiw_wqe_release(wqe);
		wqe->done = false;
		tx->retire++;
		/*
		 * The slot goes back before its completion is visible: a
		 * consumer that posts again as soon as it polls the CQE must
		 * find room.  The slot was read out before (release).
		 */
		smp_store_release(&xiw_sq_ctrl(qp)->consumer, tx->retire);
		if (report)
			xiw_cq_post(to_xiw_cq(qp->ibqp.send_cq), &cqe,
				    cqe.status != XIW_WC_SUCCESS);
	}
}

static void xiw_wqe_done(struct xiw_qp *qp, struct xiw_wqe *wqe, u8 status)
	__must_hold(&qp->lock)
{
	wqe->status = status;
	wqe->done = true;
	xiw_sq_retire(qp);
}

static void xiw_wqe_finish(struct xiw_qp *qp, struct xiw_wqe *wqe, u8 status)
{
	spin_lock_bh(&qp->lock);
	xiw_wqe_done(qp, wqe, status);
	spin_unlock_bh(&qp->lock);
}

/*
 * The request @seq is still waiting for its answer: a flush (the QP went
 * to Error meanwhile) has not completed it, nor has its slot been taken
 * by a later request since.  qp->lock held.
 */
static bool xiw_request_outstanding(struct xiw_qp *qp, struct xiw_wqe *wqe,
				    u32 seq)
{
	struct xiw_qp_tx *tx = &qp->tx;

	return seq - tx->retire < READ_ONCE(tx->fetch) - tx->retire &&
	       !wqe->done;
}

/*
 * The answer to an outbound QN 1 request (@wqe, issued as @seq) arrived
 * (RX): the request completes, unless the QP's flush completed it first -
 * the receive path lets go of qp->lock before it gets here.
 */
void xiw_qp_sq_complete_request(struct xiw_qp *qp, struct xiw_wqe *wqe,
				u32 seq, u8 status)
{
	bool invalidate, kick;
	u32 stag;

	spin_lock_bh(&qp->lock);
	if (!xiw_request_outstanding(qp, wqe, seq)) {
		spin_unlock_bh(&qp->lock);
		return;
	}
	invalidate = wqe->sqe.opcode == XIW_WR_RDMA_READ_WITH_INV &&
		     status == XIW_WC_SUCCESS;
	stag = wqe->sqe.sge[0].lkey;
	spin_unlock_bh(&qp->lock);
	/*
	 * The sink's STag ends with the Read (IB_WR_RDMA_READ_WITH_INV).  It
	 * is the one the Read placed into: the core's rdma_rw names it in
	 * ex.invalidate_rkey with the key it had before registration.
	 */
	if (invalidate &&
	    xiw_mr_invalidate(to_xiw_dev(qp->ibqp.device), qp->ibqp.pd,
			      stag) != XIW_ACCESS_OK)
		status = XIW_WC_LOC_PROT_ERR;
	spin_lock_bh(&qp->lock);
	if (xiw_request_outstanding(qp, wqe, seq))
		xiw_wqe_done(qp, wqe, status);
	/*
	 * The worker is needed by a sender that stopped for this answer (an
	 * ORD slot, a fence), and helps a consumer that streams: it posts
	 * again as answers complete, and a worker running meanwhile, the
	 * SQ's notify flag up, takes those posts without a doorbell.  One
	 * that waited for this answer (XIW_POST_NOW) polls for it next, and
	 * a worker woken for nothing would first take the CPU from it (high
	 * priority): a context switch each way into every round trip.  An
	 * idle sender has the notify flag down, so that its next post rings.
	 */
	kick = qp->tx.wants_answer || xiw_sq_streams(qp);
	qp->tx.wants_answer = false;
	spin_unlock_bh(&qp->lock);
	if (kick)
		xiw_qp_tx_kick(qp);
}

static u8 xiw_access_error_status(enum xiw_access_error why)
{
	return why == XIW_ACCESS_RIGHTS ? XIW_WC_LOC_ACCESS_ERR :
					  XIW_WC_LOC_PROT_ERR;
}

/*
 * Checks a copy of a user SQE against its opcode's row and takes
 * references on the registrations of its SGEs.  Returns a work completion
 * status.
 */
static u8 xiw_wqe_prepare(struct xiw_qp *qp, struct xiw_wqe *wqe)
{
	struct xiw_device *xdev = to_xiw_dev(qp->ibqp.device);
	struct xiw_sqe *sqe = &wqe->sqe;
	const struct xiw_wr_info *wi = xiw_wr_lookup(sqe->opcode);
	enum xiw_access_error why;
	int access;
	u64 total = 0;
	unsigned int i;
	u8 status;

	wqe->info = wi;
	wqe->bytes = 0;
	wqe->copy_only = false;
	if (!wi)
		return XIW_WC_LOC_QP_OP_ERR;
	/* A REG_MR's SQE names a kernel object: kernel QPs only. */
	if (wi->flags & XIW_WRF_KERNEL && qp->ibqp.uobject)
		return XIW_WC_LOC_QP_OP_ERR;
	/*
	 * A peer that did not negotiate the extensions would terminate the
	 * stream; the provider and xiw_fill_sqe() refuse these at post time
	 * already.
	 */
	if (wi->flags & XIW_WRF_EXT && !qp->conn.extensions)
		return XIW_WC_LOC_QP_OP_ERR;
	/* Refused at post time; a provider may not have. */
	if (sqe->flags & XIW_SQE_INLINE ?
		    !(wi->flags & XIW_WRF_INLINE) ||
			    sqe->inline_length > XIW_MAX_INLINE :
		    !xiw_wr_sge_count_ok(wi, sqe->num_sge))
		return XIW_WC_LOC_LEN_ERR;
	status = xiw_sqe_check_operands(sqe);
	if (status != XIW_WC_SUCCESS)
		return status;

	if (sqe->flags & XIW_SQE_INLINE) {
		wqe->bytes = sqe->inline_length;
		return XIW_WC_SUCCESS;
	}
	/* A request's SGEs take the answer in. */
	access = wi->flags & XIW_WRF_REQUEST ? IB_ACCESS_LOCAL_WRITE : 0;
	for (i = 0; i < sqe->num_sge; i++) {
		struct xiw_sge *sge = &sqe->sge[i];

		if (!xiw_wr_sge_len_ok(wi, sge->length))
			return XIW_WC_LOC_LEN_ERR;
		total += sge->length;
		/* Zero-length SGEs name no memory (IBTA o10-2.1). */
		if (!sge->length)
			continue;
		/* A Verify's expected hash (SGE 1) is only read. */
		wqe->mr[i] = xiw_mr_get(xdev, qp->ibqp.pd, sge->lkey,
					sge->addr, sge->length,
					i ? access & ~IB_ACCESS_LOCAL_WRITE :
					    access, &why);
		if (!wqe->mr[i])
			return xiw_access_error_status(why);
		wqe->copy_only |= wqe->mr[i]->fast_reg;
	}
	if (total > (1U << 31))
		return XIW_WC_LOC_LEN_ERR;
	wqe->bytes = total;
	return XIW_WC_SUCCESS;
}

/* Takes the next SQE off the ring into the shadow array, or NULL. */
static struct xiw_wqe *xiw_sq_fetch(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;
	struct xiw_wqe *wqe;
	u32 producer;
	u8 status;

	if (!qp->sq.num)
		return NULL;
	/* Pairs with the provider's release: SQE contents before index. */
	producer = smp_load_acquire(&xiw_sq_ctrl(qp)->producer);
	if (producer == tx->fetch)
		return NULL;
	/* A producer running ahead of the free slots is a broken provider. */
	if (tx->fetch - tx->retire >= qp->sq.num) {
		xiw_qp_fatal(qp, XIW_WC_LOC_QP_OP_ERR);
		return NULL;
	}
	wqe = xiw_wqe_at(qp, tx->fetch);
	memcpy(&wqe->sqe, xiw_sq_slot(qp, tx->fetch), sizeof(wqe->sqe));
	wqe->seq = tx->fetch++;

	status = xiw_wqe_prepare(qp, wqe);
	if (status != XIW_WC_SUCCESS) {
		xiw_wqe_finish(qp, wqe, status);
		/* IBTA 10.8.3.1: a local WQE error takes the QP to Error. */
		xiw_qp_fatal(qp, XIW_WC_WR_FLUSH_ERR);
		return NULL;
	}
	return wqe;
}

/*
 * The RDMAP opcode of an untagged message, with Solicited Event if its
 * SQE asks for one (RFC 5040 §4.2, RFC 7306 §4.1, draft-wood §4.1).
 */
static u8 xiw_untagged_opcode(u8 rv, u8 opcode, const struct xiw_sqe *sqe)
{
	if (!(sqe->flags & XIW_SQE_SOLICITED))
		return opcode;
	return xiw_wire_solicited(rv, opcode);
}

/*
 * Frames the 8 octets of Immediate Data that end @wqe: an Immediate Data
 * message of its own after an RDMA Write or alone (RFC 7306 §6.3), or the
 * last segment of a Send with Immediate Data, which carries nothing else
 * (draft-wood §5.3).  0, or -ENOSPC if tx.buf has no room.
 */
static int xiw_tx_frame_imm(struct xiw_qp *qp, struct xiw_wqe *wqe, u32 msn)
{
	const struct xiw_sqe *sqe = &wqe->sqe;
	const struct xiw_wr_info *wi = wqe->info;
	u32 ulpdu = sizeof(struct xiw_hdr_imm) - XIW_MPA_HDR_LEN;
	struct xiw_hdr_imm *h;

	h = xiw_tx_frame_begin(qp, sizeof(*h), 0, 0);
	if (!h)
		return -ENOSPC;
	/* draft-wood's Send is the only RV 2 message a WR sends. */
	if (wi->rv == XIW_RDMAP_RV2) {
		xiw_ctrl_set(&h->ddp.ctrl, ulpdu, 0, 1, wi->rv,
			     xiw_untagged_opcode(wi->rv, wi->wire, sqe));
		xiw_untagged_set(&h->ddp, 0, XIW_QN_SEND, msn, wqe->bytes);
	} else {
		xiw_ctrl_set(&h->ddp.ctrl, ulpdu, 0, 1, XIW_RDMAP_RV1,
			     xiw_untagged_opcode(XIW_RDMAP_RV1, XIW_OP_IMM,
						 sqe));
		xiw_untagged_set(&h->ddp, 0, XIW_QN_SEND, msn, 0);
	}
	/* 8 opaque octets; xiw sends the 64-bit value big-endian. */
	xiw_put_be64((struct xiw_be64 *)h->imm.data, sqe->operand[0]);
	xiw_tx_frame_end(qp, ulpdu);
	return 0;
}

/*
 * Frames as much of the current Send or Write (with its Immediate Data)
 * as tx.buf takes.  Returns 0 when the whole message is framed, -ENOSPC
 * when tx.buf is full before that (the rest goes on the next call).
 */
static int xiw_tx_frame_message(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;
	struct xiw_wqe *wqe = tx->cur;
	const struct xiw_sqe *sqe = &wqe->sqe;
	const struct xiw_wr_info *wi = wqe->info;
	bool tagged = wi->flags & XIW_WRF_TAGGED;
	bool imm = wi->flags & XIW_WRF_IMM;
	u32 hdr_size = tagged ? sizeof(struct xiw_ddp_tagged_hdr) :
				sizeof(struct xiw_ddp_untagged_hdr);
	u32 max = xiw_tx_max_payload(qp, hdr_size);
	u32 msn = tx->msn[XIW_QN_SEND] + 1;

	while (!tx->cur_payload_done) {
		u32 n = min(wqe->bytes - tx->cur_sent, max);
		bool end = tx->cur_sent + n == wqe->bytes;
		u32 ulpdu = hdr_size - XIW_MPA_HDR_LEN + n;
		bool copy = n <= XIW_TX_COPY_MAX || qp->conn.crc ||
			    sqe->flags & XIW_SQE_INLINE || wqe->copy_only;
		union xiw_hdr *hdr = xiw_tx_frame_begin(qp, hdr_size,
							copy ? n : 0,
							copy ? 0 : n);

		if (!hdr)
			return -ENOSPC;
		if (tagged) {
			xiw_ctrl_set(&hdr->ctrl, ulpdu, 1, end, wi->rv,
				     wi->wire);
			xiw_tagged_set(&hdr->tagged, sqe->rkey,
				       sqe->remote_addr + tx->cur_sent);
		} else {
			/* A Send with Immediate ends in the imm segment. */
			xiw_ctrl_set(&hdr->ctrl, ulpdu, 0, end && !imm, wi->rv,
				     xiw_untagged_opcode(wi->rv, wi->wire,
							 sqe));
			xiw_untagged_set(&hdr->untagged,
					 wi->flags & XIW_WRF_INVALIDATE ?
					 sqe->invalidate_rkey : 0,
					 XIW_QN_SEND, msn, tx->cur_sent);
		}
		xiw_tx_frame_wqe_payload(qp, wqe, tx->cur_sent,
					 (u8 *)hdr + hdr_size, n, copy);
		xiw_tx_frame_end(qp, ulpdu);
		tx->cur_sent += n;
		tx->cur_payload_done = end;
	}
	if (imm && xiw_tx_frame_imm(qp, wqe, msn))
		return -ENOSPC;
	if (!tagged || imm)
		tx->msn[XIW_QN_SEND] = msn;
	return 0;
}

/* Frames a Read Request (RFC 5040 §4.4); 0, or -ENOSPC if no room. */
static int xiw_tx_frame_read_request(struct xiw_qp *qp, u32 sink_stag,
				     u64 sink_to, u32 len, u32 src_stag,
				     u64 src_to)
{
	struct xiw_hdr_read_req *h;
	u32 ulpdu = sizeof(*h) - XIW_MPA_HDR_LEN;

	h = xiw_tx_frame_begin(qp, sizeof(*h), 0, 0);
	if (!h)
		return -ENOSPC;
	xiw_ctrl_set(&h->ddp.ctrl, ulpdu, 0, 1, XIW_RDMAP_RV1, XIW_OP_READ_REQ);
	xiw_untagged_set(&h->ddp, 0, XIW_QN_READ_REQ,
			 ++qp->tx.msn[XIW_QN_READ_REQ], 0);
	h->rreq.sink_stag = cpu_to_be32(sink_stag);
	xiw_put_be64(&h->rreq.sink_to, sink_to);
	h->rreq.read_size = cpu_to_be32(len);
	h->rreq.src_stag = cpu_to_be32(src_stag);
	xiw_put_be64(&h->rreq.src_to, src_to);
	xiw_tx_frame_end(qp, ulpdu);
	return 0;
}

/*
 * Frames the Atomic Request of @wqe (RFC 7306 §5.2.1) with the Request
 * Identifier @req_id gets: the request's MSN on QN 1, unique among the
 * outstanding ones.  0, or -ENOSPC if tx.buf has no room.
 */
static int xiw_tx_frame_atomic_request(struct xiw_qp *qp,
				       const struct xiw_wqe *wqe, u32 *req_id)
{
	const struct xiw_sqe *sqe = &wqe->sqe;
	u8 aop = wqe->info->aop;
	struct xiw_rdmap_atomic_req *a;
	struct xiw_hdr_atomic_req *h;
	u32 ulpdu = sizeof(*h) - XIW_MPA_HDR_LEN;
	u32 msn;

	h = xiw_tx_frame_begin(qp, sizeof(*h), 0, 0);
	if (!h)
		return -ENOSPC;
	msn = ++qp->tx.msn[XIW_QN_READ_REQ];
	xiw_ctrl_set(&h->ddp.ctrl, ulpdu, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_ATOMIC_REQ);
	xiw_untagged_set(&h->ddp, 0, XIW_QN_READ_REQ, msn, 0);
	a = &h->atomic;
	a->aopcode = cpu_to_be32(aop);
	a->req_id = cpu_to_be32(msn);
	a->stag = cpu_to_be32(sqe->rkey);
	xiw_put_be64(&a->to, sqe->remote_addr);
	if (aop == XIW_AOP_FETCH_ADD) {
		/* §5.2.1: unused Compare fields are 0 and all ones. */
		xiw_put_be64(&a->add_swap, sqe->operand[0]);
		xiw_put_be64(&a->add_swap_mask, sqe->operand[3]);
		xiw_put_be64(&a->compare, 0);
		xiw_put_be64(&a->compare_mask, XIW_ATOMIC_MASK_UNUSED);
	} else {
		xiw_put_be64(&a->add_swap, sqe->operand[1]);
		xiw_put_be64(&a->add_swap_mask, sqe->operand[3]);
		xiw_put_be64(&a->compare, sqe->operand[0]);
		xiw_put_be64(&a->compare_mask, sqe->operand[2]);
	}
	xiw_tx_frame_end(qp, ulpdu);
	*req_id = msn;
	return 0;
}

/*
 * Frames the Flush, Verify or Atomic Write Request of @wqe (draft-talpey
 * §4.1.1, §4.2.1, §4.3.1); 0, or -ENOSPC if tx.buf has no room.  All
 * three start with Data Sink STag, Length and Tagged Offset.
 */
static int xiw_tx_frame_placement_request(struct xiw_qp *qp,
					  struct xiw_wqe *wqe, u8 opcode)
{
	const struct xiw_sqe *sqe = &wqe->sqe;
	u32 hash_len = sqe->opcode == XIW_WR_VERIFY && sqe->num_sge == 2 ?
		       sqe->sge[1].length : 0;
	u32 rdmap_len = xiw_wire_op(XIW_RDMAP_RV1, opcode)->hdr_len;
	u32 hdr_size = sizeof(struct xiw_ddp_untagged_hdr) + rdmap_len;
	u32 ulpdu = hdr_size - XIW_MPA_HDR_LEN + hash_len;
	union xiw_hdr *h = xiw_tx_frame_begin(qp, hdr_size, hash_len, 0);
	struct xiw_rdmap_flush_req *f;

	if (!h)
		return -ENOSPC;
	xiw_ctrl_set(&h->ctrl, ulpdu, 0, 1, XIW_RDMAP_RV1, opcode);
	xiw_untagged_set(&h->untagged, 0, XIW_QN_READ_REQ,
			 ++qp->tx.msn[XIW_QN_READ_REQ], 0);
	/* The common start, laid out as the Flush Request's. */
	f = &h->flush_req.flush;
	f->sink_stag = cpu_to_be32(sqe->rkey);
	f->sink_len = cpu_to_be32(opcode == XIW_OP_ATOMIC_WRITE_REQ ?
				  XIW_ATOMIC_WRITE_LEN : sqe->operand[0]);
	xiw_put_be64(&f->sink_to, sqe->remote_addr);
	if (opcode == XIW_OP_FLUSH_REQ)
		f->flags = cpu_to_be32(xiw_flush_flags(sqe->operand[1]));
	else if (opcode == XIW_OP_ATOMIC_WRITE_REQ)
		xiw_put_be64(&h->awrite_req.awrite.data, sqe->operand[0]);
	else if (hash_len &&
		 xiw_mr_copy_from(wqe->mr[1], sqe->sge[1].addr,
				  (u8 *)h + hdr_size, hash_len))
		memset((u8 *)h + hdr_size, 0, hash_len);
	xiw_tx_frame_end(qp, ulpdu);
	return 0;
}

/*
 * Issues the current request on QN 1 - RDMA Read, Atomic, Flush, Verify or
 * Atomic Write: an ORD slot (RFC 5040 §6.5; RFC 7306 §5.2 and draft-talpey
 * §4: together no more than ORD outstanding), then the request.  False to
 * retry later.
 */
static bool xiw_tx_issue_request(struct xiw_qp *qp)
{
	struct xiw_wqe *wqe = qp->tx.cur;
	const struct xiw_sqe *sqe = &wqe->sqe;
	u8 opcode = wqe->info->wire;
	struct xiw_qp_rx *rx = &qp->rx;
	u32 sink_stag = wqe->bytes ? sqe->sge[0].lkey : 0;
	u64 sink_to = wqe->bytes ? sqe->sge[0].addr : 0;
	u32 req_id = 0;
	bool ok = false;
	int err;

	spin_lock_bh(&qp->lock);
	if (rx->orq_tail - rx->orq_head >= max_t(u8, qp->ord, 1)) {
		qp->tx.wants_answer = true;
		goto out;
	}
	switch (opcode) {
	case XIW_OP_ATOMIC_REQ:
		err = xiw_tx_frame_atomic_request(qp, wqe, &req_id);
		break;
	case XIW_OP_READ_REQ:
		err = xiw_tx_frame_read_request(qp, sink_stag, sink_to,
						wqe->bytes, sqe->rkey,
						sqe->remote_addr);
		break;
	default:
		err = xiw_tx_frame_placement_request(qp, wqe, opcode);
		break;
	}
	if (err)
		goto out;
	rx->orq[rx->orq_tail++ % XIW_MAX_ORD] = (struct xiw_orq_entry){
		.wqe = wqe,
		.wqe_seq = wqe->seq,
		.opcode = opcode,
		.req_id = req_id,
		.sink_stag = sink_stag,
		.sink_to = sink_to,
		.len = wqe->bytes,
	};
	ok = true;
out:
	spin_unlock_bh(&qp->lock);
	return ok;
}

/* Frames the RTR of RFC 6581 §5.2, sent once by the initiator. */
static int xiw_tx_frame_rtr(struct xiw_qp *qp)
{
	struct xiw_qp_rx *rx = &qp->rx;
	int err;
	u8 *h;

	switch (qp->conn.rtr_opcode) {
	case XIW_OP_READ_REQ:
		spin_lock_bh(&qp->lock);
		err = xiw_tx_frame_read_request(qp, 0, 0, 0, 0, 0);
		if (!err)
			rx->orq[rx->orq_tail++ % XIW_MAX_ORD] =
				(struct xiw_orq_entry){ .opcode = XIW_OP_READ_REQ };
		spin_unlock_bh(&qp->lock);
		return err;
	case XIW_OP_WRITE:
		h = xiw_tx_frame_begin(qp, sizeof(struct xiw_ddp_tagged_hdr),
				       0, 0);
		if (!h)
			return -ENOSPC;
		xiw_ctrl_set((struct xiw_ctrl *)h, XIW_DDP_TAGGED_HLEN, 1, 1,
			     XIW_RDMAP_RV1, XIW_OP_WRITE);
		xiw_tagged_set((struct xiw_ddp_tagged_hdr *)h, 0, 0);
		xiw_tx_frame_end(qp, XIW_DDP_TAGGED_HLEN);
		return 0;
	default:
		h = xiw_tx_frame_begin(qp, sizeof(struct xiw_ddp_untagged_hdr),
				       0, 0);
		if (!h)
			return -ENOSPC;
		xiw_ctrl_set((struct xiw_ctrl *)h, XIW_DDP_UNTAGGED_HLEN, 0, 1,
			     XIW_RDMAP_RV1, XIW_OP_SEND);
		xiw_untagged_set((struct xiw_ddp_untagged_hdr *)h, 0,
				 XIW_QN_SEND, ++qp->tx.msn[XIW_QN_SEND], 0);
		xiw_tx_frame_end(qp, XIW_DDP_UNTAGGED_HLEN);
		return 0;
	}
}

/*
 * Frames the next Read Response FPDU of @e (RFC 5040 §4.5) and says in
 * @last whether it ended the message.  Returns 0, -ENOSPC if tx.buf has
 * no room, -EFAULT if the source was invalidated or deregistered since
 * the request arrived: each FPDU checks again, as the request may wait
 * for long behind a full TCP send buffer.  A fast registration's pages
 * are copied, so that none of them is left in what TCP has yet to take
 * when its consumer gets them back.
 */
static int xiw_tx_frame_read_response(struct xiw_qp *qp,
				      struct xiw_irq_entry *e, bool *last)
{
	u32 hdr_size = sizeof(struct xiw_ddp_tagged_hdr);
	u32 n = min(e->len - e->sent, xiw_tx_max_payload(qp, hdr_size));
	bool copy = n <= XIW_TX_COPY_MAX || qp->conn.crc ||
		    (e->mr && e->mr->fast_reg);
	struct xiw_ddp_tagged_hdr *h;

	if (n && !xiw_mr_named(e->mr, e->stag))
		return -EFAULT;
	h = xiw_tx_frame_begin(qp, hdr_size, copy ? n : 0, copy ? 0 : n);
	if (!h)
		return -ENOSPC;
	*last = e->sent + n == e->len;
	xiw_ctrl_set(&h->ctrl, hdr_size - XIW_MPA_HDR_LEN + n, 1, *last,
		     XIW_RDMAP_RV1, XIW_OP_READ_RESP);
	xiw_tagged_set(h, e->sink_stag, e->sink_to + e->sent);
	if (n && copy) {
		/* Nothing is committed before xiw_tx_frame_end(). */
		if (xiw_mr_copy_from(e->mr, e->to + e->sent,
				     (u8 *)h + hdr_size, n))
			return -EFAULT;
	} else if (n) {
		xiw_tx_frame_attach(qp, (u8 *)h + hdr_size, e->mr,
				    e->to + e->sent, n);
	}
	xiw_tx_frame_end(qp, hdr_size - XIW_MPA_HDR_LEN + n);
	e->sent += n;
	return 0;
}

/*
 * Executes the Atomic (RFC 7306 §5.2.1), Flush, Verify or Atomic Write
 * (draft-talpey §4.1.2, §4.2.2, §4.3.2) of @e and frames its response on
 * QN 3.  Returns 0, -ENOSPC when tx.buf has no room (nothing was done), or
 * the error that stops the stream.
 */
static int xiw_tx_execute(struct xiw_qp *qp, struct xiw_irq_entry *e)
{
	u8 resp = xiw_wire_op(XIW_RDMAP_RV1, e->opcode)->resp_opcode;
	u32 hdr_size = sizeof(struct xiw_ddp_untagged_hdr) +
		       xiw_wire_op(XIW_RDMAP_RV1, resp)->hdr_len;
	u32 payload = e->opcode == XIW_OP_VERIFY_REQ ?
		      crypto_shash_digestsize(e->mr->verify_tfm) : 0;
	u32 ulpdu = hdr_size - XIW_MPA_HDR_LEN + payload;
	union xiw_hdr *h = xiw_tx_frame_begin(qp, hdr_size, payload, 0);
	u8 *hash = (u8 *)h + hdr_size;
	int err = 0;
	u64 orig;

	if (!h)
		return -ENOSPC;
	/* It may have waited long: its target must still be what it named. */
	if (!xiw_mr_named(e->mr, e->stag))
		return -EFAULT;
	switch (e->opcode) {
	case XIW_OP_ATOMIC_REQ:
		err = xiw_mr_atomic(e->mr, e->to,
				    be32_to_cpu(e->atomic.aopcode) & XIW_AOP_MASK,
				    &e->atomic, &orig);
		h->atomic_resp.atomic.req_id = cpu_to_be32(e->req_id);
		xiw_put_be64(&h->atomic_resp.atomic.orig, orig);
		break;
	case XIW_OP_FLUSH_REQ:
		err = xiw_mr_flush(e->mr, e->to, e->len, e->flush_flags);
		break;
	case XIW_OP_VERIFY_REQ:
		err = xiw_mr_hash(e->mr, e->to, e->len, hash);
		/* A mismatch ends the stream, and no response is sent. */
		if (!err && e->expected.len &&
		    memcmp(hash, e->expected.bytes, payload))
			err = -EILSEQ;
		break;
	case XIW_OP_ATOMIC_WRITE_REQ:
		err = xiw_mr_store64(e->mr, e->to, e->value);
		break;
	}
	if (err)
		return err;
	xiw_ctrl_set(&h->ctrl, ulpdu, 0, 1, XIW_RDMAP_RV1, resp);
	xiw_untagged_set(&h->untagged, 0, XIW_QN_RESPONSE,
			 ++qp->tx.msn[XIW_QN_RESPONSE], 0);
	xiw_tx_frame_end(qp, ulpdu);
	return 0;
}

/*
 * The high-priority workers' share of their CPU (xiw_init_module() says
 * why they are high priority and why that must be bounded): each CPU's
 * credit grows at three quarters of the clock's rate, up to
 * XIW_TX_SHARE_BURST, and a run on the CPU's high-priority worker spends
 * it as it goes, charged at each push and each request it executes.
 * Without credit the run stops there and leaves the rest to the nice-0
 * worker, xiw_tx_fair_work().
 * However many QPs and however long their requests, over time at most
 * three quarters of a CPU run at high priority, and a thread at nice 0
 * keeps a fair part of the rest (hostile_user's send_stream: 42%; 1.2%
 * without the cap).
 */
#define XIW_TX_SHARE_BURST (2 * NSEC_PER_MSEC)

struct xiw_tx_share {
	u64 stamp;		/* local_clock() of the last refill */
	s64 credit;		/* ns the high-priority worker may still run */
};

static DEFINE_PER_CPU(struct xiw_tx_share, xiw_tx_share);

/*
 * Brings this CPU's credit up to date and charges it for @tx's
 * high-priority run since it was last charged, if @tx is on that worker;
 * whether credit is left.
 */
static bool xiw_tx_share_update(struct xiw_qp_tx *tx)
{
	struct xiw_tx_share *share = get_cpu_ptr(&xiw_tx_share);
	u64 now = local_clock();
	bool left;

	/* local_clock() may step back a little from one CPU to another. */
	if (now > share->stamp) {
		share->credit = min_t(s64, XIW_TX_SHARE_BURST,
				      share->credit +
				      (s64)((now - share->stamp) / 4 * 3));
		share->stamp = now;
	}
	if (tx->high_since) {
		if (now > tx->high_since)
			share->credit -= (s64)(now - tx->high_since);
		tx->high_since = now;
	}
	left = share->credit > 0;
	put_cpu_ptr(&xiw_tx_share);
	return left;
}

/*
 * Leaves the rest of this run to xiw_tx_fair_work(), at nice 0; until it
 * ran, other runs do nothing (xiw_tx_run()).  Under tx.lock, with which
 * xiw_qp_tx_destroy() turns fair_work off; false once it is off.
 */
static bool xiw_tx_hand_over(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;

	if (tx->fair_work_off)
		return false;
	tx->handed_over = true;
	queue_work(xiw_wq, &tx->fair_work);
	return true;
}

/*
 * Above this, a Flush to persistence or a Verify is executed on xiw_wq's
 * nice-0 worker, not on the high-priority transmit worker: at the 50-115
 * MB/s a TCG guest hashes (README, xiw_commit_bench), 64 KiB is about a
 * millisecond of CPU.
 */
#define XIW_TX_LONG_REQUEST (64 * 1024)

/*
 * Whether executing @e takes CPU time in proportion to a length the peer
 * chose (xiw_init_module() says why that matters).
 */
static bool xiw_tx_request_is_long(const struct xiw_irq_entry *e)
{
	u64 len = e->len;

	if (e->opcode == XIW_OP_FLUSH_REQ) {
		/* Global visibility alone is one barrier (xiw_mr_flush()). */
		if (!(e->flush_flags & XIW_FLUSH_DISP_P))
			return false;
		if (e->flush_flags & XIW_FLUSH_DISP_R)
			len = e->mr->length;
	} else if (e->opcode != XIW_OP_VERIFY_REQ) {
		return false;
	}
	return len > XIW_TX_LONG_REQUEST;
}

/*
 * Whether @e is for xiw_tx_fair_work() to execute, which then picks the
 * requests up where this run stops, at @e: a long request, or any once
 * the high-priority worker has spent its CPU's share.
 */
static bool xiw_tx_defer_request(struct xiw_qp *qp,
				 const struct xiw_irq_entry *e)
{
	struct xiw_qp_tx *tx = &qp->tx;

	if (tx->on_fair_worker)
		return false;
	if (!xiw_tx_request_is_long(e) &&
	    (!tx->high_since || xiw_tx_share_update(tx)))
		return false;
	return xiw_tx_hand_over(qp);
}

/*
 * Executes the inbound requests and frames their responses, in the order
 * the requests arrived (RFC 7306 §7, draft-talpey §4: none overtakes
 * another).  Returns false when tx.buf is full, a request failed or must
 * wait until what is framed went to TCP; true when nothing is left to do.
 */
static bool xiw_tx_frame_responses(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;

	for (;;) {
		struct xiw_irq_entry *e;
		bool last = true;
		int err = 0;

		/*
		 * Only this path moves irq_head; pairs with the release in
		 * xiw_rx_queue_request(), so that the entry is complete.
		 */
		if (tx->irq_head == smp_load_acquire(&tx->irq_tail))
			return true;
		e = &tx->irq[tx->irq_head % XIW_MAX_IRD];

		/*
		 * What is framed by reference, a Read Response say, is
		 * generated only when TCP copies it from the registered pages:
		 * no request after it may change them before (RFC 7306 §7,
		 * RDMA Read then Atomic).
		 */
		if (e->opcode != XIW_OP_READ_REQ &&
		    (tx->nheld || xiw_tx_defer_request(qp, e)))
			return false;
		if (e->opcode == XIW_OP_READ_REQ)
			err = xiw_tx_frame_read_response(qp, e, &last);
		else
			err = xiw_tx_execute(qp, e);
		if (err == -ENOSPC)
			return false;
		/* A failed request ends its message and the stream. */
		last |= !!err;
		if (!last)
			continue;
		if (e->mr)
			xiw_mr_put(e->mr);
		e->mr = NULL;
		spin_lock_bh(&qp->lock);
		tx->irq_head++;
		spin_unlock_bh(&qp->lock);
		if (err) {
			/*
			 * Later requests are never executed (draft-talpey
			 * §4.3.2); xiw_tx_error() sends the Terminate after
			 * the responses framed so far.
			 */
			ibdev_dbg(qp->ibqp.device,
				  "qp %u: request 0x%x failed: %d\n",
				  qp->ibqp.qp_num, e->opcode, err);
			/* -EFAULT: the STag is no longer valid (RFC 5040 §7). */
			xiw_qp_send_terminate(qp, XIW_TERM_LAYER_RDMAP,
					      err == -EFAULT ?
					      XIW_RDMAP_ETYPE_REMOTE_PROTECTION :
					      XIW_RDMAP_ETYPE_REMOTE_OPERATION,
					      err == -EFAULT ?
					      XIW_RDMAP_ECODE_INVALID_STAG :
					      XIW_RDMAP_ECODE_CATASTROPHIC_STREAM,
					      NULL, 0, 0);
			xiw_qp_fatal(qp, XIW_WC_FATAL_ERR);
			return false;
		}
	}
}

/* Frames the pending Terminate (RFC 5040 §4.8); 0, or -ENOSPC if no room. */
static int xiw_tx_frame_terminate(struct xiw_qp *qp)
{
	struct xiw_term_info *t = &qp->tx.term;
	struct xiw_hdr_terminate *h;
	u32 flags = 0;
	u32 ulpdu;

	h = xiw_tx_frame_begin(qp, sizeof(*h), 0, 0);
	if (!h)
		return -ENOSPC;
	memset(h, 0, sizeof(*h));
	if (t->ddp_hdr_len) {
		flags = XIW_TERM_FLAG_M | XIW_TERM_FLAG_D;
		h->term.ddp_seg_len = cpu_to_be16(t->seg_len);
		memcpy(h->term.ddp_hdr, t->ddp_hdr, t->ddp_hdr_len);
	}
	/* Fixed part plus the copied segment length and DDP header. */
	ulpdu = XIW_DDP_UNTAGGED_HLEN + sizeof(h->term.ctrl) +
		(t->ddp_hdr_len ? sizeof(h->term.ddp_seg_len) +
				  XIW_DDP_UNTAGGED_HLEN : 0);
	xiw_ctrl_set(&h->ddp.ctrl, ulpdu, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_TERMINATE);
	xiw_untagged_set(&h->ddp, 0, XIW_QN_TERMINATE,
			 ++qp->tx.msn[XIW_QN_TERMINATE], 0);
	h->term.ctrl = xiw_term_ctrl(t->layer, t->etype, t->ecode, flags);
	xiw_tx_frame_end(qp, ulpdu);
	t->pending = false;
	t->sent = true;
	return 0;
}

/*
 * Completes the Sends and Writes of this push whose last octet TCP took
 * (RDMAP: complete once sent), all under one qp->lock.
 */
static void xiw_tx_complete_sent(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;
	u32 end = tx->sent_head;

	while (end < tx->nsent && tx->sent[end].end <= tx->out_sent)
		end++;
	if (end == tx->sent_head)
		return;
	spin_lock_bh(&qp->lock);
	for (; tx->sent_head < end; tx->sent_head++) {
		struct xiw_wqe *wqe = tx->sent[tx->sent_head].wqe;

		wqe->status = XIW_WC_SUCCESS;
		wqe->done = true;
	}
	xiw_sq_retire(qp);
	spin_unlock_bh(&qp->lock);
}

/*
 * Hands what is framed to TCP, which copies it.  Returns 0 when all of it
 * went, -EAGAIN when TCP is full (write space will call again), -EFAULT if
 * a registration it points into was deregistered while it waited (the
 * rest is never sent: it would carry what the pages hold since), another
 * error if the stream is broken.
 */
static int xiw_tx_push(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;
	u32 unsent = 0;

	if (tx->out_sent == tx->out_len)
		goto sent;
	/*
	 * Up before trying, so that write space arriving between a refused
	 * send and our return is not lost; down again once all went.
	 */
	WRITE_ONCE(tx->wants_space, true);
	while (tx->out_sent < tx->out_len) {
		struct msghdr msg = {
			.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL,
		};
		int rv;

		iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, tx->vec, tx->nvec,
			      tx->out_len);
		iov_iter_advance(&msg.msg_iter, tx->out_sent);
		/*
		 * Only the registrations with bytes still to go must be
		 * registered still: one whose part TCP took may be
		 * deregistered by now (a Read completed at the peer).
		 */
		while (unsent < tx->nheld &&
		       tx->held_end[unsent] <= tx->out_sent)
			unsent++;
		rv = xiw_mr_sendmsg(qp->sock, &msg, tx->held + unsent,
				    tx->nheld - unsent);
		if (rv < 0)
			return rv;
		tx->out_sent += rv;
		xiw_tx_complete_sent(qp);
	}
	WRITE_ONCE(tx->wants_space, false);
sent:
	xiw_tx_discard(tx);
	return 0;
}

/* Drops the peer's requests not yet answered; qp->lock held. */
static void xiw_tx_drop_requests(struct xiw_qp_tx *tx)
{
	for (; tx->irq_head != tx->irq_tail; tx->irq_head++) {
		struct xiw_irq_entry *e = &tx->irq[tx->irq_head % XIW_MAX_IRD];

		if (e->mr)
			xiw_mr_put(e->mr);
		e->mr = NULL;
	}
}

/* Completes every WQE not yet done with a flush error (QP in Error). */
static void xiw_tx_flush(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;
	u32 producer = 0;
	u32 i;

	if (qp->sq.num)
		/* Pairs with the provider's release of its producer index. */
		producer = smp_load_acquire(&xiw_sq_ctrl(qp)->producer);

	tx->cur = NULL;
	/*
	 * Messages framed whole but not (known to be) sent are flushed below
	 * with the rest; the next stream's first push must not complete them.
	 */
	xiw_tx_discard(tx);
	spin_lock_bh(&qp->lock);
	qp->rx.orq_head = qp->rx.orq_tail;
	xiw_tx_drop_requests(tx);
	for (i = tx->retire; i != tx->fetch; i++) {
		struct xiw_wqe *wqe = xiw_wqe_at(qp, i);

		if (!wqe->done) {
			wqe->status = tx->flush_status;
			wqe->done = true;
			tx->flush_status = XIW_WC_WR_FLUSH_ERR;
		}
	}
	/* Entries posted after the error are flushed unread. */
	while (tx->fetch != producer && tx->fetch - tx->retire < qp->sq.num) {
		struct xiw_wqe *wqe = xiw_wqe_at(qp, tx->fetch++);

		wqe->sqe.wr_id = xiw_sq_slot(qp, tx->fetch - 1)->wr_id;
		wqe->sqe.opcode = xiw_sq_slot(qp, tx->fetch - 1)->opcode;
		/* Completes as its own opcode, not the slot's last one. */
		wqe->info = xiw_wr_lookup(wqe->sqe.opcode);
		wqe->sqe.flags = XIW_SQE_SIGNALED;
		wqe->bytes = 0;
		/* The cause of the error goes to the first WQE flushed. */
		wqe->status = tx->flush_status;
		wqe->done = true;
		tx->flush_status = XIW_WC_WR_FLUSH_ERR;
	}
	xiw_sq_retire(qp);
	spin_unlock_bh(&qp->lock);
}

static bool xiw_tx_requests_outstanding(struct xiw_qp *qp)
{
	bool outstanding;

	spin_lock_bh(&qp->lock);
	outstanding = qp->rx.orq_head != qp->rx.orq_tail;
	qp->tx.wants_answer |= outstanding;
	spin_unlock_bh(&qp->lock);
	return outstanding;
}

/*
 * Registers or invalidates memory for a Register or Local Invalidate work
 * request, in send queue order; an error takes the QP to Error, as any
 * local work request error does (IBTA 10.8.3.1).
 */
static void xiw_tx_execute_local(struct xiw_qp *qp, struct xiw_wqe *wqe)
{
	const struct xiw_sqe *sqe = &wqe->sqe;
	u8 status;

	if (sqe->opcode == XIW_WR_REG_MR)
		/* Put there by xiw_post_send() of this kernel QP. */
		status = xiw_mr_fast_register(qp->ibqp.pd,
					      (struct ib_mr *)(uintptr_t)sqe->operand[0],
					      sqe->rkey, sqe->operand[1]);
	else
		status = xiw_mr_invalidate(to_xiw_dev(qp->ibqp.device),
					   qp->ibqp.pd, sqe->invalidate_rkey) ==
			 XIW_ACCESS_OK ? XIW_WC_SUCCESS : XIW_WC_LOC_PROT_ERR;
	xiw_wqe_finish(qp, wqe, status);
	if (status != XIW_WC_SUCCESS)
		xiw_qp_fatal(qp, XIW_WC_WR_FLUSH_ERR);
}

/*
 * The current work request waits, for an ORD slot or for its fence, and
 * has framed nothing yet, so the stream is between messages: the peer's
 * requests are still answered.  Otherwise a peer whose own Reads wait for
 * our Read Responses while it holds back the responses to ours would wait
 * for us forever, and we for it.  Always false: the caller stops until a
 * response, a new request or TCP space brings it back.
 */
static bool xiw_tx_frame_responses_only(struct xiw_qp *qp)
{
	xiw_tx_frame_responses(qp);
	return false;
}

/* Picks and frames the next work; false when there is none or no room. */
static bool xiw_tx_frame_next(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;

	/* In Error only xiw_tx_error() sends, the Terminate last. */
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		return false;
	/*
	 * The Terminate ends the stream (RFC 5040 §7.1): nothing follows it,
	 * although the QP gets to Error only after it is queued - a message
	 * the consumer posted meanwhile is flushed, not sent.
	 */
	if (tx->term.sent)
		return false;
	if (tx->term.pending)
		return xiw_tx_frame_terminate(qp) == 0;
	if (tx->rtr_pending) {
		if (xiw_tx_frame_rtr(qp))
			return false;
		tx->rtr_pending = false;
		return true;
	}
	/* Responses go between messages, never inside one. */
	if (!tx->cur) {
		if (!xiw_tx_frame_responses(qp))
			return false;
		tx->cur = xiw_sq_fetch(qp);
		if (!tx->cur)
			return false;
		tx->cur_sent = 0;
		/*
		 * Immediate Data carries a Send with no payload by itself.  An
		 * empty RDMA Write with Immediate still sends its zero-length
		 * Write, so that the peer reports 0 bytes, not the length of
		 * an earlier Write.
		 */
		tx->cur_payload_done = !tx->cur->bytes &&
			tx->cur->info->flags & XIW_WRF_IMM &&
			!(tx->cur->info->flags & XIW_WRF_TAGGED);
	}
	/*
	 * A fenced work request waits for the Reads and other QN 1 requests
	 * before it to complete (IBTA: Fence indicator).
	 */
	if (tx->cur->sqe.flags & XIW_SQE_FENCE && !tx->cur_sent &&
	    xiw_tx_requests_outstanding(qp))
		return xiw_tx_frame_responses_only(qp);
	if (tx->cur->info->flags & XIW_WRF_LOCAL) {
		xiw_tx_execute_local(qp, tx->cur);
		tx->cur = NULL;
		return true;
	}
	if (tx->cur->info->flags & XIW_WRF_REQUEST) {
		if (!xiw_tx_issue_request(qp))
			return xiw_tx_frame_responses_only(qp);
		/* Completed by its response (xiw_qp_rx.c). */
		tx->cur = NULL;
		return true;
	}
	if (xiw_tx_frame_message(qp))
		return false;
	tx->sent[tx->nsent++] = (struct xiw_tx_sent){
		.wqe = tx->cur,
		.end = tx->out_len,
	};
	tx->cur = NULL;
	return true;
}

static bool xiw_qp_sending(struct xiw_qp *qp)
{
	return READ_ONCE(qp->state) == IB_QPS_RTS && qp->sock;
}

/*
 * The QP is in Error: the Terminate, if any, still goes out (RFC 5040
 * §7.1), then the stream is closed and every WQE flushed.
 */
static void xiw_tx_error(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;
	struct xiw_cep *cep = NULL;
	bool terminated = false;

	/* Only on an FPDU boundary: a torn FPDU cannot be followed. */
	if (tx->term.pending && qp->sock && !tx->out_sent) {
		xiw_tx_discard(tx);
		terminated = xiw_tx_frame_terminate(qp) == 0 && !xiw_tx_push(qp);
	}
	spin_lock_bh(&qp->lock);
	if (tx->close_pending) {
		tx->close_pending = false;
		cep = qp->cep;
	}
	spin_unlock_bh(&qp->lock);
	if (cep)
		xiw_cm_qp_close(cep, !terminated);
	xiw_tx_flush(qp);
}

/*
 * The transmit loop; tx.lock held.  Returns true when it stopped for
 * lack of work, false when it waits for TCP or for an ORD slot and will
 * be called again when that frees up.
 */
static bool xiw_tx_run(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;
	unsigned int pushes = 0;
	int err;

	/* The fair worker clears it, and never sets it in its own run. */
	if (tx->handed_over)
		return false;
	if (READ_ONCE(qp->state) == IB_QPS_ERR) {
		xiw_tx_error(qp);
		return true;
	}
	if (!xiw_qp_sending(qp))
		return true;

	for (;;) {
		err = xiw_tx_push(qp);
		if (err == -EAGAIN)
			return false;
		if (err) {
			xiw_qp_fatal(qp, XIW_WC_FATAL_ERR);
			return true;
		}
		/*
		 * A peer that reads as fast as a consumer posts keeps this
		 * going: past its budget the QP queues its work again and
		 * lets the other QPs' work of this CPU run.
		 */
		if (++pushes > XIW_TX_BUDGET) {
			xiw_qp_tx_kick(qp);
			return false;
		}
		/* The high-priority worker stops where its share ends. */
		if (tx->high_since && !xiw_tx_share_update(tx) &&
		    xiw_tx_hand_over(qp))
			return false;
		/*
		 * Fill the buffer with as much work as it takes: a stream of
		 * small messages goes to TCP in one send, as one segment.
		 */
		while (tx->nsent < XIW_TX_SENT_MAX && xiw_tx_frame_next(qp))
			;
		/* What is framed is the fair worker's to push. */
		if (tx->handed_over)
			return false;
		/* Every FPDU has its header in tx.buf. */
		if (!tx->buf_len)
			return !tx->cur;
	}
}

/*
 * Runs the transmit loop and keeps the SQ's notify flag up while the
 * kernel will come back to the queue by itself; the provider rings the
 * doorbell only when it is down.
 */
static void xiw_tx_run_sq(struct xiw_qp *qp)
{
	struct xiw_ring_ctrl *ctrl = qp->sq.num ? xiw_sq_ctrl(qp) : NULL;
	unsigned int rounds = 0;
	u32 producer;

	if (!ctrl) {
		xiw_tx_run(qp);
		return;
	}
	for (;;) {
		/* Up before the queue is read: the provider may skip a ring. */
		smp_store_mb(ctrl->notify, 1);
		if (!xiw_tx_run(qp))
			return;
		/*
		 * Down, then look once more (full barrier in between, paired
		 * with the provider's fence between its producer store and
		 * its notify load): an SQE posted meanwhile is either seen
		 * here or rings the doorbell.
		 */
		smp_store_mb(ctrl->notify, 0);
		/*
		 * Outside RTS and Error nothing is sent or flushed: entries
		 * wait for the kick of the next state change.
		 */
		if (!xiw_qp_sending(qp) && READ_ONCE(qp->state) != IB_QPS_ERR)
			return;
		/* Pairs with the provider's release of its producer index. */
		producer = smp_load_acquire(&ctrl->producer);
		if (producer == qp->tx.fetch)
			return;
		/*
		 * More entries than the ring holds: the provider broke it and
		 * the QP is in Error for that (xiw_sq_fetch()).  Another round
		 * would flush a ring's worth of garbage, and another, up to 2^32
		 * entries: each doorbell flushes at most one ring's worth.
		 */
		if (producer - qp->tx.retire > qp->sq.num)
			return;
		/*
		 * A consumer that posts as fast as this sends or flushes - or
		 * just keeps moving its producer index - would keep the
		 * caller here for good: after a few rounds the QP waits for
		 * its next turn on the worker, the flag up again.
		 */
		if (++rounds == XIW_TX_ROUNDS) {
			/* Up as at the top: the provider may skip its rings. */
			smp_store_mb(ctrl->notify, 1);
			xiw_qp_tx_kick(qp);
			return;
		}
	}
}

/* The sender at high priority, within its share of the CPU. */
static void xiw_tx_work(struct work_struct *work)
{
	struct xiw_qp *qp = container_of(work, struct xiw_qp, tx.work);
	struct xiw_qp_tx *tx = &qp->tx;

	mutex_lock(&tx->lock);
	if (xiw_tx_share_update(tx)) {
		tx->high_since = local_clock();
		xiw_tx_run_sq(qp);
		xiw_tx_share_update(tx);
		tx->high_since = 0;
	} else {
		xiw_tx_hand_over(qp);
	}
	mutex_unlock(&tx->lock);
}

/*
 * The sender at nice 0: for a long Flush or Verify at the head of the
 * requests, and for runs beyond the high-priority workers' share; what it
 * sends after that request too, up to its budget.
 */
static void xiw_tx_fair_work(struct work_struct *work)
{
	struct xiw_qp *qp = container_of(work, struct xiw_qp, tx.fair_work);

	mutex_lock(&qp->tx.lock);
	if (!qp->tx.fair_work_off) {
		qp->tx.handed_over = false;
		qp->tx.on_fair_worker = true;
		xiw_tx_run_sq(qp);
		qp->tx.on_fair_worker = false;
	}
	mutex_unlock(&qp->tx.lock);
}

/* Makes the transmit path look at the QP again soon. */
void xiw_qp_tx_kick(struct xiw_qp *qp)
{
	queue_work(xiw_tx_wq, &qp->tx.work);
}

/*
 * Queues the QP's work on a CPU other than the caller's, if there is one:
 * the caller goes on posting while the worker sends what it posts, in
 * batches, rather than the two taking turns on one CPU a message or two
 * at a time.  Only CPUs that take workqueue work (not isolated ones,
 * isolcpus= or nohz_full=) are chosen; should the one chosen go offline
 * meanwhile, the work runs on another (queue_work_on()).
 */
static void xiw_qp_tx_kick_aside(struct xiw_qp *qp)
{
	const struct cpumask *wq_cpus = housekeeping_cpumask(HK_TYPE_WQ);
	unsigned int cpu = cpumask_next_and(raw_smp_processor_id(), wq_cpus,
					    cpu_online_mask);

	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first_and(wq_cpus, cpu_online_mask);
	if (cpu >= nr_cpu_ids) {
		xiw_qp_tx_kick(qp);
		return;
	}
	queue_work_on(cpu, xiw_tx_wq, &qp->tx.work);
}

/*
 * The provider rang: send now, in the caller's context, unless another
 * sender is busy - it will then pick the new entries up - or the consumer
 * posts a stream (XIW_POST_STREAM): then the worker sends, the caller
 * goes back to posting, and the notify flag stays up until the worker
 * drained the queue, so that those posts ring no doorbell and go to TCP
 * in batches.
 */
void xiw_qp_tx_doorbell(struct xiw_qp *qp)
{
	if (xiw_sq_streams(qp)) {
		/*
		 * Up before the work is queued; a worker that is finishing
		 * may let it down again, and the run queued here raises it
		 * once more.  At worst a post rings once too often.
		 */
		smp_store_mb(xiw_sq_ctrl(qp)->notify, 1);
		xiw_qp_tx_kick_aside(qp);
		return;
	}
	if (!mutex_trylock(&qp->tx.lock)) {
		xiw_qp_tx_kick(qp);
		return;
	}
	xiw_tx_run_sq(qp);
	mutex_unlock(&qp->tx.lock);
}

void xiw_qp_write_space(struct sock *sk)
{
	struct xiw_qp *qp;

	read_lock_bh(&sk->sk_callback_lock);
	qp = sk->sk_user_data ? xiw_cep_qp(sk->sk_user_data) : NULL;
	/*
	 * Every ACK frees space; only a sender that found TCP full is waiting
	 * for it, and waking the worker for nothing costs the doorbell path.
	 */
	if (qp && READ_ONCE(qp->tx.wants_space) && sk_stream_is_writeable(sk)) {
		WRITE_ONCE(qp->tx.wants_space, false);
		xiw_qp_tx_kick(qp);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

/*
 * A graceful close (RTS to SQD) that comes before the transmit path ran
 * still owes the peer its RTR: a passive RFC 6581 peer reports the
 * connection only once the RTR arrived, so without it the peer's accept
 * would never complete.  Nothing else can be in tx.buf before the RTR.
 */
void xiw_qp_tx_send_rtr(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;

	mutex_lock(&tx->lock);
	if (tx->rtr_pending && qp->sock && !tx->buf_len &&
	    xiw_tx_frame_rtr(qp) == 0) {
		tx->rtr_pending = false;
		xiw_tx_push(qp);
	}
	mutex_unlock(&tx->lock);
}

/*
 * Queues a Terminate for the peer (any context).  Only the first error
 * of a stream is reported.
 */
void xiw_qp_send_terminate(struct xiw_qp *qp, u8 layer, u8 etype, u8 ecode,
			   const void *ddp_hdr, u8 ddp_hdr_len, u16 seg_len)
{
	struct xiw_term_info *t = &qp->tx.term;

	spin_lock_bh(&qp->lock);
	if (!t->pending && !t->sent && READ_ONCE(qp->state) != IB_QPS_ERR) {
		t->pending = true;
		t->layer = layer;
		t->etype = etype;
		t->ecode = ecode;
		t->seg_len = seg_len;
		t->ddp_hdr_len = min_t(u8, ddp_hdr_len, sizeof(t->ddp_hdr));
		memcpy(t->ddp_hdr, ddp_hdr, t->ddp_hdr_len);
	}
	spin_unlock_bh(&qp->lock);
}

int xiw_qp_tx_init(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;

	mutex_init(&tx->lock);
	INIT_WORK(&tx->work, xiw_tx_work);
	INIT_WORK(&tx->fair_work, xiw_tx_fair_work);
	/* All of it charged to the creator's memory cgroup. */
	if (qp->sq.num) {
		tx->wqes = kvcalloc(qp->sq.num, sizeof(*tx->wqes),
				    GFP_KERNEL_ACCOUNT);
		if (!tx->wqes)
			return -ENOMEM;
	}
	tx->irq = kcalloc(XIW_MAX_IRD, sizeof(*tx->irq), GFP_KERNEL_ACCOUNT);
	/* Handed to TCP by page: linear memory (xiw_tx_describe_buf()). */
	tx->buf = kmalloc(XIW_TX_BUF_SIZE, GFP_KERNEL_ACCOUNT);
	tx->vec = kcalloc(XIW_TX_VECS, sizeof(*tx->vec), GFP_KERNEL_ACCOUNT);
	tx->held = kcalloc(XIW_TX_VECS, sizeof(*tx->held), GFP_KERNEL_ACCOUNT);
	tx->held_end = kcalloc(XIW_TX_VECS, sizeof(*tx->held_end),
			       GFP_KERNEL_ACCOUNT);
	tx->markers = kcalloc(XIW_TX_MARKERS, sizeof(*tx->markers),
			      GFP_KERNEL_ACCOUNT);
	if (!tx->irq || !tx->buf || !tx->vec || !tx->held || !tx->held_end ||
	    !tx->markers) {
		xiw_qp_tx_destroy(qp);
		return -ENOMEM;
	}
	return 0;
}

/*
 * A new stream (tx.lock held): nothing framed, owed or pending from the
 * last connection of a QP reused after Error and Reset.  Its work requests
 * were completed when it went to Error; the SQ's indices go on, the ring
 * being the consumer's.
 */
void xiw_qp_tx_reset_stream(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;

	xiw_tx_discard(tx);
	tx->stream_base = 0;
	tx->fpdu = NULL;
	tx->fpdu_attached = 0;
	tx->fpdu_pos = 0;
	spin_lock_bh(&qp->lock);
	xiw_tx_drop_requests(tx);
	memset(tx->msn, 0, sizeof(tx->msn));
	tx->rtr_pending = false;
	tx->close_pending = false;
	tx->wants_space = false;
	tx->term = (struct xiw_term_info){};
	spin_unlock_bh(&qp->lock);
}

/*
 * Error now, in the caller's context (modify_qp to Reset): the stream is
 * closed and every WQE completed before the caller goes on.
 */
void xiw_qp_tx_flush_now(struct xiw_qp *qp)
{
	mutex_lock(&qp->tx.lock);
	xiw_tx_run(qp);
	mutex_unlock(&qp->tx.lock);
}

void xiw_qp_tx_destroy(struct xiw_qp *qp)
{
	struct xiw_qp_tx *tx = &qp->tx;
	u32 i;

	/*
	 * Each work item queues the other: fair_work first, off for good
	 * (under tx.lock, so that no sender queues it after), then work,
	 * which only queues itself from then on.
	 */
	mutex_lock(&tx->lock);
	tx->fair_work_off = true;
	mutex_unlock(&tx->lock);
	cancel_work_sync(&tx->fair_work);
	cancel_work_sync(&tx->work);
	for (i = 0; tx->wqes && i < qp->sq.num; i++)
		xiw_wqe_release(&tx->wqes[i]);
	for (i = 0; tx->irq && i < XIW_MAX_IRD; i++)
		if (tx->irq[i].mr)
			xiw_mr_put(tx->irq[i].mr);
	kvfree(tx->wqes);
	if (tx->held)
		xiw_tx_discard(tx);
	kfree(tx->irq);
	kfree(tx->buf);
	kfree(tx->vec);
	kfree(tx->held);
	kfree(tx->held_end);
	kfree(tx->markers);
	tx->wqes = NULL;
	tx->irq = NULL;
	tx->buf = NULL;
	tx->vec = NULL;
	tx->held = NULL;
	tx->held_end = NULL;
	tx->markers = NULL;
}
