// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Completion queues: the kernel produces CQEs into the shared ring, the
// provider consumes them in poll_cq().
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "opcodes.h"
#include "xiw.h"

namespace xiw {

ibv_cq *create_cq(ibv_context *ibctx, int num_cqe, ibv_comp_channel *channel,
		  int comp_vector) noexcept
{
	owned<cq> c = make<cq>();
	if (!c)
		return nullptr;

	rc::create_cq_cmd cmd{};
	rc::create_cq_resp<xiw_uresp_create_cq> resp{};
	if (int err = rc::ibv_cmd_create_cq(ibctx, num_cqe, channel, comp_vector,
					    &c->vcq.cq, rc::as_cmd(cmd), sizeof(cmd),
					    rc::as_resp(resp), sizeof(resp)))
		return fail_with(err);
	undo_unless_done kernel_cq([&c] { rc::ibv_cmd_destroy_cq(&c->vcq.cq); });
	if (int err = c->queue.map(ibctx->cmd_fd, resp.udata.cq_mmap_key,
				   resp.udata.num_cqe))
		return fail_with(err);
	kernel_cq.dismiss();
	return &c.release()->vcq.cq;
}

int destroy_cq(ibv_cq *ibcq) noexcept
{
	cq *c = from_ibv(ibcq);
	if (int err = rc::ibv_cmd_destroy_cq(ibcq))
		return err;
	destroy(c); // unmaps the ring
	return 0;
}

int poll_cq(ibv_cq *ibcq, int num_entries, ibv_wc *wc) noexcept
{
	cq *c = from_ibv(ibcq);
	std::atomic_ref<std::uint32_t>(from_ibv(ibcq->context)->polls)
		.fetch_add(1, std::memory_order_relaxed);
	const std::lock_guard guard(c->lock);
	const auto &q = c->queue;

	std::uint32_t cons = q.own(q.ctrl().consumer);
	const std::uint32_t prod = q.load_producer();
	if (prod - cons > q.capacity())
		return -EIO; // the kernel broke the ring protocol

	int n = 0;
	for (; n < num_entries && cons != prod; ++n, ++cons) {
		xiw_cqe cqe;
		std::memcpy(&cqe, &q.slot(cons), sizeof(cqe));
		cqe_to_wc(cqe, wc[n]);
	}
	if (n)
		q.store_consumer(cons); // hands the slots back to the kernel
	return n;
}

int req_notify_cq(ibv_cq *ibcq, int solicited_only) noexcept
{
	// The kernel reads the arm state from the ring on every CQE it adds.
	cq *c = from_ibv(ibcq);
	c->queue.store_notify(solicited_only ? XIW_CQ_NOTIFY_SOLICITED
					     : XIW_CQ_NOTIFY_NEXT);
	return 0;
}

} // namespace xiw
