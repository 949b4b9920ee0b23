// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Queue pairs.  The send and receive queues are shared rings that the
// provider produces into and the kernel consumes.
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <span>

#include "opcodes.h"
#include "xiw.h"

namespace xiw {
namespace {

// Maps the rings the kernel set up.  A queue of zero entries (max_send_wr
// or max_recv_wr was 0, or the QP uses an SRQ) has no mapping.
int map_queues(qp &q, int cmd_fd, const xiw_uresp_create_qp &resp) noexcept
{
	if (resp.num_sqe)
		if (int err = q.sq.map(cmd_fd, resp.sq_mmap_key, resp.num_sqe))
			return err;
	if (resp.num_rqe)
		if (int err = q.rq.map(cmd_fd, resp.rq_mmap_key, resp.num_rqe))
			return err;
	return 0;
}

} // namespace

ibv_qp *create_qp_ex(ibv_context *ibctx, ibv_qp_init_attr_ex *attr) noexcept
{
	if (attr->comp_mask & ~static_cast<std::uint32_t>(IBV_QP_INIT_ATTR_PD)) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	qp *q = create<qp>();
	if (!q)
		return nullptr;

	rc::create_qp_cmd cmd{};
	rc::create_qp_resp<xiw_uresp_create_qp> resp{};
	int err = rc::ibv_cmd_create_qp_ex(ibctx, &q->vqp, attr, rc::as_cmd(cmd),
					   sizeof(cmd), rc::as_resp(resp),
					   sizeof(resp));
	if (err) {
		destroy(q);
		errno = err;
		return nullptr;
	}
	q->id = resp.udata.qp_id;
	err = map_queues(*q, ibctx->cmd_fd, resp.udata);
	if (err) {
		rc::ibv_cmd_destroy_qp(&q->vqp.qp);
		destroy(q); // unmaps whatever was mapped
		errno = err;
		return nullptr;
	}
	return &q->vqp.qp;
}

ibv_qp *create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) noexcept
{
	ibv_qp_init_attr_ex ex{};
	ex.qp_context = attr->qp_context;
	ex.send_cq = attr->send_cq;
	ex.recv_cq = attr->recv_cq;
	ex.srq = attr->srq;
	ex.cap = attr->cap;
	ex.qp_type = attr->qp_type;
	ex.sq_sig_all = attr->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;

	ibv_qp *q = create_qp_ex(pd->context, &ex);
	if (q)
		attr->cap = ex.cap; // the sizes the kernel granted
	return q;
}

int destroy_qp(ibv_qp *ibqp) noexcept
{
	qp *q = from_ibv(ibqp);
	if (int err = rc::ibv_cmd_destroy_qp(ibqp))
		return err;
	destroy(q); // unmaps the rings
	return 0;
}

int modify_qp(ibv_qp *ibqp, ibv_qp_attr *attr, int attr_mask) noexcept
{
	rc::modify_qp_cmd cmd{};
	return rc::ibv_cmd_modify_qp(ibqp, attr, attr_mask, rc::as_cmd(cmd),
				     sizeof(cmd));
}

int query_qp(ibv_qp *ibqp, ibv_qp_attr *attr, int attr_mask,
	     ibv_qp_init_attr *init_attr) noexcept
{
	rc::query_qp_cmd cmd{};
	return rc::ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr,
				    rc::as_cmd(cmd), sizeof(cmd));
}

namespace {

// Fills an SQE from a verbs work request; returns 0 or the errno that
// fails the post.
int fill_sqe(const ibv_send_wr &wr, xiw_sqe &sqe) noexcept
{
	const auto op = to_wr_opcode(wr.opcode);
	if (!op || !kernel_executes(*op))
		return EOPNOTSUPP;
	if (wr.num_sge < 0 || wr.num_sge > XIW_MAX_SGE)
		return EINVAL;

	std::memset(&sqe, 0, offsetof(xiw_sqe, sge));
	sqe.wr_id = wr.wr_id;
	sqe.opcode = static_cast<std::uint8_t>(*op);
	if (wr.send_flags & IBV_SEND_SIGNALED)
		sqe.flags |= XIW_SQE_SIGNALED;
	if (wr.send_flags & IBV_SEND_SOLICITED)
		sqe.flags |= XIW_SQE_SOLICITED;
	if (wr.send_flags & IBV_SEND_FENCE)
		sqe.flags |= XIW_SQE_FENCE;

	switch (*op) {
	case wr_opcode::rdma_write:
	case wr_opcode::rdma_read:
		sqe.remote_addr = wr.wr.rdma.remote_addr;
		sqe.rkey = wr.wr.rdma.rkey;
		break;
	case wr_opcode::send_with_inv:
		sqe.invalidate_rkey = wr.invalidate_rkey;
		break;
	default:
		break;
	}

	const std::span<const ibv_sge> sges(wr.sg_list,
					    static_cast<std::size_t>(wr.num_sge));
	if (wr.send_flags & IBV_SEND_INLINE && *op != wr_opcode::rdma_read) {
		// Inline data travels in the SGE array of the SQE itself.
		auto *dst = reinterpret_cast<std::uint8_t *>(sqe.sge);
		std::size_t len = 0;
		for (const ibv_sge &sge : sges) {
			if (sge.length > XIW_MAX_INLINE - len)
				return EINVAL;
			std::memcpy(dst + len,
				    reinterpret_cast<const void *>(sge.addr),
				    sge.length);
			len += sge.length;
		}
		sqe.flags |= XIW_SQE_INLINE;
		sqe.inline_length = static_cast<std::uint32_t>(len);
		return 0;
	}
	static_assert(sizeof(ibv_sge) == sizeof(xiw_sge));
	std::memcpy(sqe.sge, sges.data(), sges.size_bytes());
	sqe.num_sge = static_cast<std::uint8_t>(sges.size());
	return 0;
}

} // namespace

// Writes the work requests into the send queue, then rings the doorbell
// unless the kernel said it is still working on the queue (ctrl.notify).
int post_send(ibv_qp *ibqp, ibv_send_wr *wr, ibv_send_wr **bad_wr) noexcept
{
	qp &q = *from_ibv(ibqp);
	int err = 0;

	if (!wr)
		return 0;
	if (!q.sq.mapped()) {
		*bad_wr = wr;
		return EINVAL;
	}

	q.sq_lock.lock();
	const std::uint32_t first = q.sq.own(q.sq.ctrl().producer);
	std::uint32_t producer = first;
	for (; wr; wr = wr->next) {
		if (producer - q.sq.load_consumer() >= q.sq.capacity()) {
			err = ENOMEM;
			break;
		}
		err = fill_sqe(*wr, q.sq.slot(producer));
		if (err)
			break;
		producer++;
	}
	if (producer != first) {
		q.sq.store_producer(producer);
		// Pairs with the kernel's barrier between clearing notify and
		// looking at the producer index once more.
		std::atomic_thread_fence(std::memory_order_seq_cst);
		if (!q.sq.load_notify())
			rc::ibv_cmd_post_send(ibqp, nullptr, nullptr);
	}
	q.sq_lock.unlock();

	if (err)
		*bad_wr = wr;
	return err;
}

int post_recv(ibv_qp *ibqp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) noexcept
{
	qp &q = *from_ibv(ibqp);
	int err = 0;

	if (!wr)
		return 0;
	if (!q.rq.mapped()) {
		*bad_wr = wr;
		return EINVAL;
	}

	q.rq_lock.lock();
	const std::uint32_t first = q.rq.own(q.rq.ctrl().producer);
	std::uint32_t producer = first;
	for (; wr; wr = wr->next) {
		if (producer - q.rq.load_consumer() >= q.rq.capacity()) {
			err = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || wr->num_sge > XIW_MAX_RECV_SGE) {
			err = EINVAL;
			break;
		}
		xiw_rqe &rqe = q.rq.slot(producer);
		rqe.wr_id = wr->wr_id;
		rqe.num_sge = static_cast<std::uint8_t>(wr->num_sge);
		std::memcpy(rqe.sge, wr->sg_list,
			    sizeof(ibv_sge) * static_cast<std::size_t>(wr->num_sge));
		producer++;
	}
	if (producer != first) {
		q.rq.store_producer(producer);
		// The kernel takes receives off the ring as messages arrive;
		// only a QP in Error asks to be told, to flush them.
		std::atomic_thread_fence(std::memory_order_seq_cst);
		if (q.rq.load_notify())
			rc::ibv_cmd_post_recv(ibqp, nullptr, nullptr);
	}
	q.rq_lock.unlock();

	if (err)
		*bad_wr = wr;
	return err;
}

} // namespace xiw
