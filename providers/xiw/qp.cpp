// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Queue pairs.  The send and receive queues are shared rings that the
// provider produces into; the kernel side does not consume them yet, so
// posting fails with EOPNOTSUPP.
#include <cerrno>

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

// Until the kernel consumes the send and receive queues, no work request is
// accepted: the first one is returned as the failed one.  (When the data
// path is added, each WR's opcode goes through to_wr_opcode() and any
// opcode without an SQE encoding fails the same way.)
int post_send(ibv_qp *, ibv_send_wr *wr, ibv_send_wr **bad_wr) noexcept
{
	if (!wr)
		return 0;
	*bad_wr = wr;
	return EOPNOTSUPP;
}

int post_recv(ibv_qp *, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) noexcept
{
	if (!wr)
		return 0;
	*bad_wr = wr;
	return EOPNOTSUPP;
}

} // namespace xiw
