// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw shared receive queues: a ring of RQEs in memory shared with the
 * provider, as a QP's own RQ is, from which every QP created on the SRQ
 * takes the receive for its next inbound message.
 */
#include <linux/log2.h>

#include "xiw.h"

static int xiw_check_srq_attr(const struct ib_srq_attr *attr)
{
	if (attr->max_wr > XIW_MAX_SRQ_WR || attr->max_sge > XIW_MAX_RECV_SGE ||
	    attr->srq_limit > attr->max_wr)
		return -EINVAL;
	return 0;
}

int xiw_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		   struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibsrq->device);
	struct xiw_srq *srq = to_xiw_srq(ibsrq);
	struct xiw_uresp_create_srq resp = {};
	u32 num_rqe;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	err = xiw_check_srq_attr(&init->attr);
	if (err)
		return err;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&xdev->num_srq) > XIW_MAX_SRQ) {
		err = -ENOMEM;
		goto err_count;
	}

	num_rqe = roundup_pow_of_two(max(init->attr.max_wr, 1U));
	err = xiw_ring_alloc(&srq->ring, num_rqe, sizeof(struct xiw_rqe), udata,
			     &resp.srq_mmap_key);
	if (err)
		goto err_count;
	spin_lock_init(&srq->lock);
	spin_lock_init(&srq->post_lock);
	srq->limit = init->attr.srq_limit;
	init->attr.max_wr = num_rqe;
	init->attr.max_sge = XIW_MAX_RECV_SGE;

	if (udata) {
		resp.num_rqe = num_rqe;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_ring;
	}
	return 0;

err_ring:
	xiw_ring_free(&srq->ring);
err_count:
	atomic_dec(&xdev->num_srq);
	return err;
}

/* The core refuses while QPs still use the SRQ. */
int xiw_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct xiw_srq *srq = to_xiw_srq(ibsrq);

	xiw_ring_free(&srq->ring);
	atomic_dec(&to_xiw_dev(ibsrq->device)->num_srq);
	return 0;
}

int xiw_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct xiw_srq *srq = to_xiw_srq(ibsrq);

	/* The ring is shared memory of a fixed size. */
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->ring.num)
			return -EINVAL;
		/* Armed with a non-zero limit; fires once (IBTA 11.2.7). */
		spin_lock_bh(&srq->lock);
		srq->limit = attr->srq_limit;
		spin_unlock_bh(&srq->lock);
	}
	return 0;
}

int xiw_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct xiw_srq *srq = to_xiw_srq(ibsrq);

	attr->max_wr = srq->ring.num;
	attr->max_sge = XIW_MAX_RECV_SGE;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

/* Kernel consumers' receives; the provider fills user SRQs itself. */
int xiw_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr)
{
	struct xiw_srq *srq = to_xiw_srq(ibsrq);
	unsigned long flags;
	int err;

	spin_lock_irqsave(&srq->post_lock, flags);
	err = xiw_rqe_put(&srq->ring, wr, bad_wr);
	spin_unlock_irqrestore(&srq->post_lock, flags);
	return err;
}

/*
 * Takes the next receive off the SRQ for a QP's new message, as
 * xiw_rqe_pop().  When that leaves fewer posted than an armed limit, the
 * consumer hears of it once (IB_EVENT_SRQ_LIMIT_REACHED); a ring the
 * provider broke is reported once (IB_EVENT_SRQ_ERR) and gives no more.
 */
int xiw_srq_take(struct xiw_srq *srq, struct xiw_rqe *rqe)
{
	struct ib_event event = {
		.device = srq->ibsrq.device,
		.element.srq = &srq->ibsrq,
	};
	bool fire = false;
	int got;

	spin_lock_bh(&srq->lock);
	got = xiw_rqe_pop(&srq->ring, rqe);
	if (got < 0) {
		event.event = IB_EVENT_SRQ_ERR;
		fire = true;
	} else if (got && srq->limit &&
		   xiw_rqe_posted(&srq->ring) < srq->limit) {
		srq->limit = 0;
		event.event = IB_EVENT_SRQ_LIMIT_REACHED;
		fire = true;
	}
	spin_unlock_bh(&srq->lock);
	if (fire && srq->ibsrq.event_handler)
		srq->ibsrq.event_handler(&event, srq->ibsrq.srq_context);
	return got;
}
