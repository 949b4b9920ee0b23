// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw queue pairs: creation with their shared SQ/RQ rings, the state
 * machine and the references iw_cm holds on a connected QP.
 */
#include <linux/log2.h>

#include "xiw.h"

static int xiw_check_qp_init_attr(const struct ib_qp_init_attr *attr)
{
	const struct ib_qp_cap *cap = &attr->cap;

	/* iWARP knows reliable connected QPs only (RFC 5040 §1). */
	if (attr->qp_type != IB_QPT_RC)
		return -EOPNOTSUPP;
	if (attr->create_flags || attr->srq)
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

	/* Consumers may ask for no send or no receive queue at all. */
	num_sqe = attr->cap.max_send_wr ?
		  roundup_pow_of_two(attr->cap.max_send_wr) : 0;
	num_rqe = attr->cap.max_recv_wr ?
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
	qp->state = IB_QPS_RESET;
	refcount_set(&qp->iw_refs, 1);
	init_completion(&qp->iw_released);
	qp->max_inline = attr->cap.max_inline_data;

	err = xa_alloc_cyclic(&xdev->qp_xa, &qpn, qp,
			      XA_LIMIT(1, XIW_STAG_INDEX_MAX), &xdev->qpn_next,
			      GFP_KERNEL);
	if (err < 0)
		goto err_rq;
	ibqp->qp_num = qpn;

	attr->cap.max_send_wr = num_sqe;
	attr->cap.max_recv_wr = num_rqe;
	attr->cap.max_inline_data = XIW_MAX_INLINE;

	if (udata) {
		resp.qp_id = qpn;
		resp.num_sqe = num_sqe;
		resp.num_rqe = num_rqe;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_xa;
	}
	return 0;

err_xa:
	xa_erase(&xdev->qp_xa, qpn);
err_rq:
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

	xa_erase(&xdev->qp_xa, ibqp->qp_num);
	/* The core frees the QP on return: iw_cm must be done with it. */
	xiw_qp_put_ref(ibqp);
	wait_for_completion(&qp->iw_released);

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
		qp->state = attr->qp_state;
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

/* The data path is not there yet: refuse every work request. */
int xiw_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr)
{
	*bad_wr = wr;
	return -EOPNOTSUPP;
}

int xiw_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr)
{
	*bad_wr = wr;
	return -EOPNOTSUPP;
}

void xiw_qp_get_ref(struct ib_qp *ibqp)
{
	refcount_inc(&to_xiw_qp(ibqp)->iw_refs);
}

void xiw_qp_put_ref(struct ib_qp *ibqp)
{
	struct xiw_qp *qp = to_xiw_qp(ibqp);

	if (refcount_dec_and_test(&qp->iw_refs))
		complete(&qp->iw_released);
}

struct ib_qp *xiw_get_qp(struct ib_device *ibdev, int qpn)
{
	struct xiw_qp *qp = xa_load(&to_xiw_dev(ibdev)->qp_xa, qpn);

	return qp ? &qp->ibqp : NULL;
}
