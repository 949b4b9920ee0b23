// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw queue pairs: creation with their shared SQ/RQ rings, the state
 * machine and the references iw_cm holds on a connected QP.
 */
#include <linux/log2.h>
#include <linux/sched/signal.h>
#include <net/sock.h>
#include <rdma/rdma_cm.h>

#include "xiw.h"

static int xiw_check_qp_init_attr(const struct ib_qp_init_attr *attr)
{
	const struct ib_qp_cap *cap = &attr->cap;

	/* iWARP knows reliable connected QPs only (RFC 5040 §1). */
	if (attr->qp_type != IB_QPT_RC)
		return -EOPNOTSUPP;
	if (attr->create_flags)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > XIW_MAX_QP_WR || cap->max_recv_wr > XIW_MAX_QP_WR ||
	    cap->max_send_sge > XIW_MAX_SGE ||
	    cap->max_recv_sge > XIW_MAX_RECV_SGE ||
	    cap->max_inline_data > XIW_MAX_INLINE)
		return -EINVAL;
	return 0;
}

int xiw_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *attr,
		  struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibqp->device);
	struct xiw_qp *qp = to_xiw_qp(ibqp);
	struct xiw_uresp_create_qp resp = {};
	u32 num_sqe, num_rqe, qpn;
	int err;

	err = xiw_check_qp_init_attr(attr);
	if (err)
		return err;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&xdev->num_qp) > XIW_MAX_QP) {
		err = -ENOMEM;
		goto err_count;
	}

	/*
	 * Consumers may ask for no send or no receive queue at all; a QP on
	 * an SRQ has none of its own.
	 */
	num_sqe = attr->cap.max_send_wr ?
		  roundup_pow_of_two(attr->cap.max_send_wr) : 0;
	num_rqe = attr->cap.max_recv_wr && !attr->srq ?
		  roundup_pow_of_two(attr->cap.max_recv_wr) : 0;

	err = xiw_ring_alloc(&qp->sq, num_sqe, sizeof(struct xiw_sqe), udata,
			     &resp.sq_mmap_key);
	if (err)
		goto err_count;
	err = xiw_ring_alloc(&qp->rq, num_rqe, sizeof(struct xiw_rqe), udata,
			     &resp.rq_mmap_key);
	if (err)
		goto err_sq;

	mutex_init(&qp->state_lock);
	spin_lock_init(&qp->lock);
	spin_lock_init(&qp->post_lock);
	qp->state = IB_QPS_RESET;
	refcount_set(&qp->iw_refs, 1);
	init_completion(&qp->iw_released);
	qp->sig_all = attr->sq_sig_type == IB_SIGNAL_ALL_WR;
	err = xiw_qp_tx_init(qp);
	if (!err)
		err = xiw_qp_rx_init(qp);
	if (err)
		goto err_data_path;

	if (udata) {
		resp.num_sqe = num_sqe;
		resp.num_rqe = num_rqe;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_data_path;
	}
	/*
	 * Published last: from here on iw_cm may take the QP by its number
	 * (xiw_get_qp()), which an error path freeing it would not wait for.
	 */
	err = xa_alloc_cyclic_irq(&xdev->qp_xa, &qpn, qp,
				  XA_LIMIT(1, XIW_STAG_INDEX_MAX),
				  &xdev->qpn_next, GFP_KERNEL);
	if (err < 0)
		goto err_data_path;
	ibqp->qp_num = qpn;

	attr->cap.max_send_wr = num_sqe;
	attr->cap.max_recv_wr = num_rqe;
	attr->cap.max_inline_data = XIW_MAX_INLINE;
	return 0;

err_data_path:
	xiw_qp_rx_destroy(qp);
	xiw_qp_tx_destroy(qp);
	xiw_ring_free(&qp->rq);
err_sq:
	xiw_ring_free(&qp->sq);
err_count:
	atomic_dec(&xdev->num_qp);
	return err;
}

int xiw_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibqp->device);
	struct xiw_qp *qp = to_xiw_qp(ibqp);

	xa_erase_irq(&xdev->qp_xa, ibqp->qp_num);
	mutex_lock(&qp->state_lock);
	qp->destroying = true;
	if (qp->cep)
		xiw_cm_qp_close(qp->cep, true);
	/* Not waiting for a peer's MPA Reply: the connect fails now. */
	if (qp->connecting)
		xiw_cm_qp_close(qp->connecting, true);
	mutex_unlock(&qp->state_lock);
	/*
	 * The core frees the QP on return: iw_cm and the connection must be
	 * done with it, which the closes above make happen without waiting
	 * for the peer.
	 */
	xiw_qp_put_ref(ibqp);
	wait_for_completion(&qp->iw_released);

	xiw_qp_tx_destroy(qp);
	xiw_qp_rx_destroy(qp);
	xiw_ring_free(&qp->rq);
	xiw_ring_free(&qp->sq);
	atomic_dec(&xdev->num_qp);
	return 0;
}

/*
 * The transitions of the verbs QP state machine that make sense for an
 * iWARP QP.  Unlike InfiniBand, the path attributes come from the TCP
 * connection, so no transition needs more than the state itself.
 */
static bool xiw_qp_transition_ok(enum ib_qp_state cur, enum ib_qp_state next)
{
	if (next == IB_QPS_RESET || next == IB_QPS_ERR)
		return true;

	switch (cur) {
	case IB_QPS_RESET:
		return next == IB_QPS_INIT;
	case IB_QPS_INIT:
		return next == IB_QPS_INIT || next == IB_QPS_RTR;
	case IB_QPS_RTR:
		return next == IB_QPS_RTS;
	case IB_QPS_RTS:
		return next == IB_QPS_RTS || next == IB_QPS_SQD;
	case IB_QPS_SQD:
		return next == IB_QPS_RTS || next == IB_QPS_SQD;
	default:
		return false;
	}
}

/*
 * The side effects of a state change; state_lock held.  Leaving RTS
 * closes the connection: to SQD gracefully, to ERR abortively (the verbs
 * view of iw_cm_disconnect()).
 */
static int xiw_qp_enter_state(struct xiw_qp *qp, enum ib_qp_state cur,
			      enum ib_qp_state next)
{
	struct xiw_cep *cep;

	if (next == IB_QPS_ERR) {
		xiw_qp_fatal(qp, XIW_WC_WR_FLUSH_ERR);
		return 0;
	}
	/*
	 * Reset from a state that may have a stream or work in flight, or
	 * from an Error whose flush the worker may not have done yet: through
	 * Error, at once, so that nothing of it is left for the next
	 * connection (the worker finds the QP in Reset and does nothing).
	 */
	if (next == IB_QPS_RESET && cur != IB_QPS_RESET && cur != IB_QPS_INIT) {
		xiw_qp_fatal(qp, XIW_WC_WR_FLUSH_ERR);
		xiw_qp_tx_flush_now(qp);
		/*
		 * An Error from the data path may not have flushed the RQ
		 * yet; once in Reset, its flush would not.
		 */
		xiw_qp_rx_flush(qp);
	}

	spin_lock_bh(&qp->lock);
	/*
	 * The data path may have moved the QP to Error since @cur was read
	 * (xiw_qp_fatal() takes qp->lock only): that stands.  RTS needs a
	 * stream, and one that was not flushed: its parser and transmit
	 * state are gone (a QP reset under a socket not yet unbound).
	 */
	if (next != IB_QPS_RESET &&
	    (qp->state != cur ||
	     (next == IB_QPS_RTS && cur != IB_QPS_RTS &&
	      (!qp->sock || qp->stream_over)))) {
		spin_unlock_bh(&qp->lock);
		return -EINVAL;
	}
	WRITE_ONCE(qp->state, next);
	cep = qp->cep;
	if (next == IB_QPS_RTS && cur != IB_QPS_RTS)
		qp->tx.rtr_pending = qp->conn.p2p && qp->conn.initiator;
	spin_unlock_bh(&qp->lock);

	if (next == IB_QPS_RTS) {
		xiw_qp_tx_kick(qp);
	} else if (next == IB_QPS_SQD && cep) {
		xiw_qp_tx_send_rtr(qp);
		xiw_cm_qp_close(cep, false);
	}
	return 0;
}

/*
 * Moves the QP to Error (any context): the consumer is told, the
 * transmit path sends a pending Terminate, closes the stream and flushes
 * the SQ; the RQ is flushed here.
 */
void xiw_qp_fatal(struct xiw_qp *qp, u8 status)
{
	struct ib_event event = {
		.device = qp->ibqp.device,
		.element.qp = &qp->ibqp,
		.event = IB_EVENT_QP_FATAL,
	};
	enum ib_qp_state was;

	spin_lock_bh(&qp->lock);
	was = qp->state;
	if (was != IB_QPS_ERR) {
		WRITE_ONCE(qp->state, IB_QPS_ERR);
		qp->stream_over = true;
		qp->tx.flush_status = status;
		qp->tx.close_pending = true;
	}
	spin_unlock_bh(&qp->lock);
	if (was == IB_QPS_ERR)
		return;

	xiw_qp_rx_flush(qp);
	xiw_qp_tx_kick(qp);
	if (was != IB_QPS_RESET && status != XIW_WC_WR_FLUSH_ERR &&
	    qp->ibqp.event_handler)
		qp->ibqp.event_handler(&event, qp->ibqp.qp_context);
	/*
	 * A QP in Error takes nothing more from its SRQ: the verbs' Last WQE
	 * Reached, which its consumer waits for before destroying it.
	 */
	if (qp->ibqp.srq && qp->ibqp.event_handler) {
		event.event = IB_EVENT_QP_LAST_WQE_REACHED;
		qp->ibqp.event_handler(&event, qp->ibqp.qp_context);
	}
}

#define XIW_QP_ATTR_MASK_SUPPORTED                                          \
	(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS |               \
	 IB_QP_MAX_QP_RD_ATOMIC | IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_PKEY_INDEX | \
	 IB_QP_PORT)

int xiw_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);
	enum ib_qp_state cur;
	int err = 0;

	if (mask & ~XIW_QP_ATTR_MASK_SUPPORTED)
		return -EOPNOTSUPP;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC && attr->max_rd_atomic > XIW_MAX_ORD) ||
	    (mask & IB_QP_MAX_DEST_RD_ATOMIC &&
	     attr->max_dest_rd_atomic > XIW_MAX_IRD))
		return -EINVAL;
	if (mask & IB_QP_PORT && attr->port_num != 1)
		return -EINVAL;

	mutex_lock(&qp->state_lock);
	cur = mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
	if (cur != qp->state) {
		err = -EINVAL;
		goto out;
	}
	if (mask & IB_QP_STATE) {
		if (!xiw_qp_transition_ok(cur, attr->qp_state)) {
			err = -EINVAL;
			goto out;
		}
		err = xiw_qp_enter_state(qp, cur, attr->qp_state);
		if (err)
			goto out;
	}
	if (mask & IB_QP_ACCESS_FLAGS)
		qp->access = attr->qp_access_flags;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		qp->ord = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		qp->ird = attr->max_dest_rd_atomic;
out:
	mutex_unlock(&qp->state_lock);
	return err;
}

int xiw_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init_attr)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);

	memset(attr, 0, sizeof(*attr));
	memset(init_attr, 0, sizeof(*init_attr));

	mutex_lock(&qp->state_lock);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->max_rd_atomic = qp->ord;
	attr->max_dest_rd_atomic = qp->ird;
	attr->qp_access_flags = qp->access;
	mutex_unlock(&qp->state_lock);

	attr->port_num = 1;
	attr->path_mtu = IB_MTU_4096;
	attr->cap.max_send_wr = qp->sq.num;
	attr->cap.max_recv_wr = qp->rq.num;
	attr->cap.max_send_sge = XIW_MAX_SGE;
	attr->cap.max_recv_sge = XIW_MAX_RECV_SGE;
	attr->cap.max_inline_data = XIW_MAX_INLINE;

	init_attr->qp_type = IB_QPT_RC;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->cap = attr->cap;
	init_attr->sq_sig_type = IB_SIGNAL_REQ_WR;
	return 0;
}

/*
 * Gives the socket back: its callbacks are the owner's again and the
 * transmit path no longer uses it.  state_lock held.
 */
static void xiw_qp_detach_sock(struct xiw_qp *qp)
{
	struct socket *sock = qp->sock;

	if (sock) {
		/* No callback runs once this returns. */
		write_lock_bh(&sock->sk->sk_callback_lock);
		sock->sk->sk_data_ready = qp->saved_data_ready;
		sock->sk->sk_write_space = qp->saved_write_space;
		write_unlock_bh(&sock->sk->sk_callback_lock);
	}
	mutex_lock(&qp->tx.lock);
	spin_lock_bh(&qp->lock);
	qp->cep = NULL;
	qp->sock = NULL;
	spin_unlock_bh(&qp->lock);
	mutex_unlock(&qp->tx.lock);
}

int xiw_qp_llp_bind(struct xiw_qp *qp, struct xiw_cep *cep,
		    struct socket *sock, const struct xiw_conn_params *params)
{
	enum ib_qp_state cur;
	int err = 0;

	mutex_lock(&qp->state_lock);
	/*
	 * A QP takes part in one connection at a time: an accept naming a
	 * QP that a connect still waits with is refused (destroy_qp fails
	 * that connect; an accept that cleared it would leave destroy_qp
	 * waiting out its MPA timeout).
	 */
	if (qp->cep || qp->destroying ||
	    (qp->connecting && qp->connecting != cep) ||
	    (qp->state != IB_QPS_INIT && qp->state != IB_QPS_RTR)) {
		err = -EINVAL;
		goto out;
	}
	/* The data path may still fail the QP: enter_state() sees that. */
	cur = qp->state;
	qp->connecting = NULL;
	mutex_lock(&qp->tx.lock);
	xiw_qp_tx_reset_stream(qp);
	mutex_unlock(&qp->tx.lock);
	spin_lock_bh(&qp->lock);
	xiw_qp_rx_reset_stream(qp);
	qp->cep = cep;
	qp->sock = sock;
	qp->stream_over = false;
	qp->conn = *params;
	qp->ord = min_t(u16, params->ord, XIW_MAX_ORD);
	qp->ird = min_t(u16, params->ird, XIW_MAX_IRD);
	qp->rx.rtr_expected = params->p2p && !params->initiator;
	spin_unlock_bh(&qp->lock);
	/* Before RTS: the provider checks it when extended work is posted. */
	if (qp->sq.num)
		WRITE_ONCE(((struct xiw_ring_ctrl *)qp->sq.mem)->conn_flags,
			   params->extensions ? XIW_CONN_EXTENSIONS : 0);

	write_lock_bh(&sock->sk->sk_callback_lock);
	qp->saved_data_ready = sock->sk->sk_data_ready;
	qp->saved_write_space = sock->sk->sk_write_space;
	sock->sk->sk_data_ready = xiw_qp_data_ready;
	sock->sk->sk_write_space = xiw_qp_write_space;
	write_unlock_bh(&sock->sk->sk_callback_lock);

	/*
	 * Like every iWARP RNIC, the QP is ready to send once MPA is done -
	 * unless the data path failed it meanwhile: the endpoint then keeps
	 * its socket.
	 */
	err = xiw_qp_enter_state(qp, cur, IB_QPS_RTS);
	if (err)
		xiw_qp_detach_sock(qp);
	else
		/* FPDUs the peer sent right after its MPA frame. */
		xiw_qp_rx_process_queued(qp);
out:
	mutex_unlock(&qp->state_lock);
	return err;
}

void xiw_qp_llp_unbind(struct xiw_qp *qp)
{
	mutex_lock(&qp->state_lock);
	xiw_qp_detach_sock(qp);
	/* A QP its consumer reset already is ready for reuse: leave it so. */
	if (qp->state != IB_QPS_RESET && qp->state != IB_QPS_INIT)
		xiw_qp_fatal(qp, XIW_WC_WR_FLUSH_ERR);
	mutex_unlock(&qp->state_lock);
}

/* The kernel verbs opcode of each work-request opcode, XIW_NO_VERB. */
static const int xiw_ib_wr_opcodes[] = {
#define XIW_IB_WR_OF(wr, nm, rv, wire, wc, fl, smin, smax, slen, ibv, ib, dv, \
			aop, args)					\
	[wr] = ib,
	XIW_WR_OPCODES(XIW_IB_WR_OF)
#undef XIW_IB_WR_OF
};

/* The row of a kernel consumer's work request; NULL if xiw has none. */
static const struct xiw_wr_info *xiw_wr_info_of_ib(enum ib_wr_opcode opcode)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(xiw_ib_wr_opcodes); i++)
		if (xiw_ib_wr_opcodes[i] == (int)opcode)
			return xiw_wr_lookup(i);
	return NULL;
}

/*
 * Writes a kernel consumer's work request into its SQE, as the provider
 * does for user QPs (the SGE addresses are kernel virtual addresses: a
 * software device maps DMA one to one).  @conn_flags: XIW_CONN_*, what the
 * connection negotiated.
 */
static int xiw_fill_sqe(struct xiw_sqe *sqe, const struct ib_send_wr *wr,
			u32 conn_flags)
{
	const struct xiw_wr_info *wi = xiw_wr_info_of_ib(wr->opcode);
	u32 len = 0;
	int i;

	/* What the SQ would fail later fails the post, as the provider's. */
	if (!wi || wr->num_sge < 0 || !xiw_wr_sge_count_ok(wi, wr->num_sge))
		return -EINVAL;
	/* Not to a peer that would terminate the stream (xiwdv.h). */
	if (wi->flags & XIW_WRF_EXT && !(conn_flags & XIW_CONN_EXTENSIONS))
		return -EOPNOTSUPP;
	for (i = 0; i < wr->num_sge; i++)
		if (!xiw_wr_sge_len_ok(wi, wr->sg_list[i].length))
			return -EINVAL;
	/* Only the SGEs (or inline bytes) in use are read. */
	memset(sqe, 0, offsetof(struct xiw_sqe, sge));
	sqe->wr_id = wr->wr_id;
	sqe->opcode = wi->wr;
	if (wr->send_flags & IB_SEND_SIGNALED)
		sqe->flags |= XIW_SQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		sqe->flags |= XIW_SQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		sqe->flags |= XIW_SQE_FENCE;

	/* The 64-bit immediate whose value is the 32 bits sent. */
	if (wi->flags & XIW_WRF_IMM)
		sqe->operand[0] = be32_to_cpu(wr->ex.imm_data);
	/* The peer's STag (a Send's) or ours (the others'). */
	if (wi->args & XIW_ARG_INVALIDATE)
		sqe->invalidate_rkey = wr->ex.invalidate_rkey;
	if (wi->args & XIW_ARG_RDMA) {
		sqe->remote_addr = rdma_wr(wr)->remote_addr;
		sqe->rkey = rdma_wr(wr)->rkey;
	}
	if (wi->args & XIW_ARG_ATOMIC) {
		sqe->remote_addr = atomic_wr(wr)->remote_addr;
		sqe->rkey = atomic_wr(wr)->rkey;
		xiw_sqe_atomic_args(sqe, wi, atomic_wr(wr)->compare_add,
				    atomic_wr(wr)->swap);
	}
	if (wi->args & XIW_ARG_REG) {
		sqe->operand[0] = (uintptr_t)reg_wr(wr)->mr;
		sqe->operand[1] = reg_wr(wr)->access;
		sqe->rkey = reg_wr(wr)->key;
		return 0;
	}

	if (!(wr->send_flags & IB_SEND_INLINE && wi->flags & XIW_WRF_INLINE)) {
		sqe->num_sge = wr->num_sge;
		xiw_sges_from_ib(sqe->sge, wr->sg_list, wr->num_sge);
		return 0;
	}
	for (i = 0; i < wr->num_sge; i++) {
		u32 n = wr->sg_list[i].length;

		if (n > XIW_MAX_INLINE - len)
			return -EINVAL;
		memcpy((u8 *)sqe->sge + len,
		       (void *)(uintptr_t)wr->sg_list[i].addr, n);
		len += n;
	}
	sqe->flags |= XIW_SQE_INLINE;
	sqe->inline_length = len;
	return 0;
}

/* Kernel consumers' work requests go into the same ring as the provider's. */
static int xiw_post_kernel_send(struct xiw_qp *qp, const struct ib_send_wr *wr,
				const struct ib_send_wr **bad_wr)
{
	struct xiw_ring_ctrl *ctrl = qp->sq.mem;
	unsigned long flags;
	u32 producer;
	int err = 0;

	if (!qp->sq.num) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->post_lock, flags);
	producer = ctrl->producer;
	for (; wr; wr = wr->next) {
		/* Pairs with the transmit path's release of the slot. */
		if (producer - smp_load_acquire(&ctrl->consumer) >=
		    qp->sq.num) {
			err = -ENOMEM;
			break;
		}
		err = xiw_fill_sqe(xiw_ring_entry(&qp->sq, producer), wr,
				   READ_ONCE(ctrl->conn_flags));
		if (err)
			break;
		producer++;
	}
	/* The entries before the index (xiw_sq_fetch() acquires it). */
	smp_store_release(&ctrl->producer, producer);
	spin_unlock_irqrestore(&qp->post_lock, flags);
	if (err)
		*bad_wr = wr;
	/* Consumers post from any context: the work item sends. */
	xiw_qp_tx_kick(qp);
	return err;
}

/*
 * For user QPs these are the doorbells: the work requests are in the
 * shared rings already.
 */
int xiw_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);

	if (!ibqp->uobject)
		return xiw_post_kernel_send(qp, wr, bad_wr);
	if (READ_ONCE(qp->state) == IB_QPS_RTS ||
	    READ_ONCE(qp->state) == IB_QPS_ERR)
		xiw_qp_tx_doorbell(qp);
	return 0;
}

static int xiw_post_kernel_recv(struct xiw_qp *qp, const struct ib_recv_wr *wr,
				const struct ib_recv_wr **bad_wr)
{
	unsigned long flags;
	int err;

	if (!qp->rq.num) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&qp->post_lock, flags);
	err = xiw_rqe_put(&qp->rq, wr, bad_wr);
	spin_unlock_irqrestore(&qp->post_lock, flags);
	return err;
}

int xiw_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);
	int err = 0;

	if (!ibqp->uobject)
		err = xiw_post_kernel_recv(qp, wr, bad_wr);
	/* Receives posted to a QP in Error complete as flushed. */
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		xiw_qp_rx_flush(qp);
	return err;
}

void xiw_qp_put_ref(struct ib_qp *ibqp)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);

	if (refcount_dec_and_test(&qp->iw_refs))
		complete(&qp->iw_released);
}

/*
 * iw_cm's lookup (ib_device_ops.iw_get_qp).  iw_cm follows every QP it
 * gets with iw_add_ref(), under a spinlock but after this returns, while
 * xiw_destroy_qp() may be dropping the last reference: so the reference is
 * taken here, from a count that is not zero yet, and xiw_iw_add_ref() only
 * stands for it (iwcm.c, iw_cm_connect() and iw_cm_accept(), the only
 * callers of both).  Called with interrupts off (iw_cm's cm_id lock).
 */
struct ib_qp *xiw_get_qp(struct ib_device *ibdev, int qpn)
{
	struct xiw_device *xdev = to_xiw_dev(ibdev);
	struct xiw_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(&xdev->qp_xa, flags);
	qp = xa_load(&xdev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->iw_refs))
		qp = NULL;
	xa_unlock_irqrestore(&xdev->qp_xa, flags);
	return qp ? &qp->ibqp : NULL;
}

/* See xiw_get_qp(): the reference was taken there. */
void xiw_iw_add_ref(struct ib_qp *ibqp)
{
}

/*
 * The QP that a connect or accept of @id names by @qpn, if the caller may
 * bind it, with a reference of its own for the caller: the number may
 * have been freed and given to another QP since iw_cm took its QP by it.
 * Allowed: the QP that rdma_cm attached to the id (kernel ULPs), or else
 * a user QP of the calling process (librdmacm does not attach user QPs to
 * the kernel's id; the call comes from the process's rdma_ucm write).  So
 * no process binds another one's QP, nor a kernel ULP's, by guessing its
 * number.  Every iw_cm id belongs to rdma_cm, whose private id begins
 * with its rdma_cm_id (cma_priv.h).
 */
struct xiw_qp *xiw_qp_for_cm(struct iw_cm_id *id, u32 qpn)
{
	const struct rdma_cm_id *rid = id->context;
	struct ib_qp *ibqp = xiw_get_qp(id->device, qpn);
	bool mine;

	if (!ibqp)
		return NULL;
	if (rid && rid->qp)
		mine = rid->qp == ibqp;
	else
		mine = ibqp->uobject && ibqp->res.task &&
		       same_thread_group(ibqp->res.task, current);
	if (mine)
		return to_xiw_qp(ibqp);
	xiw_qp_put_ref(ibqp);
	return NULL;
}
