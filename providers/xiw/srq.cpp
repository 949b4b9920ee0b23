// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Shared receive queues.  Posting only writes the ring: the kernel takes
// each QP's next receive from it when a message arrives, and an SRQ never
// goes to Error, so there is nothing to ring.
#include <cerrno>
#include <mutex>

#include "xiw.h"

namespace xiw {

ibv_srq *create_srq(ibv_pd *pd, ibv_srq_init_attr *attr) noexcept
{
	owned<srq> s = make<srq>();
	if (!s)
		return nullptr;

	rc::create_srq_cmd cmd{};
	rc::create_srq_resp<xiw_uresp_create_srq> resp{};
	if (int err = rc::ibv_cmd_create_srq(pd, &s->ibsrq, attr, rc::as_cmd(cmd),
					     sizeof(cmd), rc::as_resp(resp),
					     sizeof(resp)))
		return fail_with(err);
	undo_unless_done kernel_srq([&s] { rc::ibv_cmd_destroy_srq(&s->ibsrq); });
	if (int err = s->rq.map(pd->context->cmd_fd, resp.udata.srq_mmap_key,
				resp.udata.num_rqe))
		return fail_with(err);
	kernel_srq.dismiss();
	return &s.release()->ibsrq;
}

int destroy_srq(ibv_srq *ibsrq) noexcept
{
	if (int err = rc::ibv_cmd_destroy_srq(ibsrq))
		return err;
	destroy(from_ibv(ibsrq)); // unmaps the ring
	return 0;
}

int modify_srq(ibv_srq *ibsrq, ibv_srq_attr *attr, int attr_mask) noexcept
{
	rc::modify_srq_cmd cmd{};
	return rc::ibv_cmd_modify_srq(ibsrq, attr, attr_mask, rc::as_cmd(cmd),
				      sizeof(cmd));
}

int query_srq(ibv_srq *ibsrq, ibv_srq_attr *attr) noexcept
{
	rc::query_srq_cmd cmd{};
	return rc::ibv_cmd_query_srq(ibsrq, attr, rc::as_cmd(cmd), sizeof(cmd));
}

int post_srq_recv(ibv_srq *ibsrq, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) noexcept
{
	srq &s = *from_ibv(ibsrq);

	int err;
	{
		const std::lock_guard guard(s.lock);
		err = put_receives(s.rq, wr);
	}
	if (err)
		*bad_wr = wr;
	return err;
}

} // namespace xiw
