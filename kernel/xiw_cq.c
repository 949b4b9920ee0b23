// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * xiw completion queues.  The CQE ring is shared with user consumers,
 * which poll it without a system call; kernel consumers poll it here.
 */
#include <linux/log2.h>

#include "xiw.h"

static struct xiw_ring_ctrl *xiw_cq_ctrl(struct xiw_cq *cq)
{
	return cq->ring.mem;
}

static struct xiw_cqe *xiw_cq_entry(struct xiw_cq *cq, u32 index)
{
	return xiw_ring_entry(&cq->ring, index);
}

int xiw_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata)
{
	struct xiw_device *xdev = to_xiw_dev(ibcq->device);
	struct xiw_cq *cq = to_xiw_cq(ibcq);
	struct xiw_uresp_create_cq resp = {};
	u32 num;
	int err;

	if (attr->flags || attr->cqe < 1 || attr->cqe > XIW_MAX_CQE)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&xdev->num_cq) > XIW_MAX_CQ) {
		err = -ENOMEM;
		goto err_count;
	}

	num = roundup_pow_of_two(attr->cqe);
	err = xiw_ring_alloc(&cq->ring, num, sizeof(struct xiw_cqe), udata,
			     &resp.cq_mmap_key);
	if (err)
		goto err_count;
	spin_lock_init(&cq->lock);
	ibcq->cqe = num;

	if (udata) {
		resp.num_cqe = num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_ring;
	}
	return 0;

err_ring:
	xiw_ring_free(&cq->ring);
err_count:
	atomic_dec(&xdev->num_cq);
	return err;
}

int xiw_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct xiw_cq *cq = to_xiw_cq(ibcq);

	xiw_ring_free(&cq->ring);
	atomic_dec(&to_xiw_dev(ibcq->device)->num_cq);
	return 0;
}

/* Kernel verbs' names of the completion opcodes and statuses. */
static const int xiw_ib_wc_opcodes[] = {
#define XIW_IB_WC_OF(wc, ibv, ib) \
	[wc] = ib,
	XIW_WC_OPCODES(XIW_IB_WC_OF)
#undef XIW_IB_WC_OF
};

static const enum ib_wc_status xiw_ib_wc_statuses[] = {
#define XIW_IB_WC_STATUS_OF(status, ibv, ib) \
	[status] = ib,
	XIW_WC_STATUSES(XIW_IB_WC_STATUS_OF)
#undef XIW_IB_WC_STATUS_OF
};

static void xiw_cqe_to_ib_wc(const struct xiw_cqe *cqe, struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->byte_len = cqe->byte_len;

	/* Opcodes kernel verbs have no name for stay IB_WC_SEND (0). */
	if (cqe->opcode < ARRAY_SIZE(xiw_ib_wc_opcodes) &&
	    xiw_ib_wc_opcodes[cqe->opcode] != XIW_NO_VERB)
		wc->opcode = xiw_ib_wc_opcodes[cqe->opcode];

	wc->status = cqe->status < ARRAY_SIZE(xiw_ib_wc_statuses) ?
		     xiw_ib_wc_statuses[cqe->status] : IB_WC_GENERAL_ERR;
	wc->vendor_err = cqe->vendor_err;
	if (cqe->flags & XIW_CQE_WITH_IMM) {
		wc->wc_flags |= IB_WC_WITH_IMM;
		wc->ex.imm_data = cpu_to_be32(cqe->imm_or_inv);
	} else if (cqe->flags & XIW_CQE_WITH_INV) {
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
		wc->ex.invalidate_rkey = cqe->imm_or_inv;
	}
}

int xiw_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct xiw_cq *cq = to_xiw_cq(ibcq);
	struct xiw_ring_ctrl *ctrl = xiw_cq_ctrl(cq);
	struct xiw_device *xdev = to_xiw_dev(ibcq->device);
	unsigned long flags;
	u32 consumer, producer;
	int n = 0;

	spin_lock_irqsave(&cq->lock, flags);
	consumer = ctrl->consumer;
	/* Pairs with the producer's release: CQE contents before index. */
	producer = smp_load_acquire(&ctrl->producer);
	while (n < num_entries && consumer != producer) {
		const struct xiw_cqe *cqe = xiw_cq_entry(cq, consumer);
		struct xiw_qp *qp = xa_load(&xdev->qp_xa, cqe->qp_num);

		xiw_cqe_to_ib_wc(cqe, &wc[n]);
		wc[n].qp = qp ? &qp->ibqp : NULL;
		consumer++;
		n++;
	}
	/* The slots are read out before the producer may reuse them. */
	smp_store_release(&ctrl->consumer, consumer);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int xiw_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct xiw_cq *cq = to_xiw_cq(ibcq);
	struct xiw_ring_ctrl *ctrl = xiw_cq_ctrl(cq);
	u32 notify = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
		     XIW_CQ_NOTIFY_SOLICITED : XIW_CQ_NOTIFY_NEXT;

	/*
	 * Arm, then look (full barrier in between, paired with the one the
	 * producer has between publishing a CQE and reading the arm state):
	 * a CQE added concurrently is either seen here or raises an event.
	 */
	smp_store_mb(ctrl->notify, notify);
	if (flags & IB_CQ_REPORT_MISSED_EVENTS)
		return READ_ONCE(ctrl->consumer) != READ_ONCE(ctrl->producer);
	return 0;
}

/*
 * Adds a completion and raises the completion event the consumer armed
 * for.  A full CQ is a consumer error: the CQE is dropped and the
 * consumer told through an asynchronous CQ error event, once until the CQ
 * has room again.  The producer index is the kernel's own; the consumer's
 * may be anything (moved backwards, or past the producer): then the CQ is
 * full.
 */
void xiw_cq_post(struct xiw_cq *cq, const struct xiw_cqe *cqe, bool solicited)
{
	struct xiw_ring_ctrl *ctrl = xiw_cq_ctrl(cq);
	unsigned long flags;
	bool notify = false;
	bool report;
	u32 producer;

	spin_lock_irqsave(&cq->lock, flags);
	producer = cq->ring.own;
	if (producer - READ_ONCE(ctrl->consumer) >= cq->ring.num) {
		report = !cq->ring.broken;
		cq->ring.broken = true;
		spin_unlock_irqrestore(&cq->lock, flags);
		if (report && cq->ibcq.event_handler) {
			struct ib_event event = {
				.device = cq->ibcq.device,
				.element.cq = &cq->ibcq,
				.event = IB_EVENT_CQ_ERR,
			};

			cq->ibcq.event_handler(&event, cq->ibcq.cq_context);
		}
		return;
	}
	cq->ring.broken = false;
	*xiw_cq_entry(cq, producer) = *cqe;
	cq->ring.own = producer + 1;
	/* The CQE is complete in memory before the consumer can see it. */
	smp_store_release(&ctrl->producer, producer + 1);
	/* Pairs with the barrier in xiw_req_notify_cq() and the provider's. */
	smp_mb();
	if (ctrl->notify == XIW_CQ_NOTIFY_NEXT ||
	    (ctrl->notify == XIW_CQ_NOTIFY_SOLICITED && solicited)) {
		WRITE_ONCE(ctrl->notify, XIW_CQ_NOTIFY_NONE);
		notify = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (notify && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}
