// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// Queue pairs.  The send and receive queues are shared rings that the
// provider produces into and the kernel consumes.
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <span>

#include <unistd.h>

#include <infiniband/xiwdv.h>
#include <rdma/ib_user_verbs.h>

#include "opcodes.h"
#include "xiw.h"

namespace xiw {
namespace {

// Rings a queue's doorbell: an empty post command (Cmd is struct
// ib_uverbs_post_send or _post_recv), which makes the kernel look at the
// ring.  It goes to the uverbs file with write(), as the kernel's write
// interface takes a command, not through libibverbs' ibv_cmd_post_send(),
// which carries the same command in ioctl(UVERBS_METHOD_INVOKE_WRITE):
// that path parses an attribute bundle first, about a microsecond of
// every one-operation round trip in the guest (perf/profile write_lat_2).
// The kernel checks the sizes (in_words, out_words, wqe_size) and the
// handle as for any post.  0 or the errno of the write.
template <typename Cmd>
int ring_doorbell(const ibv_qp &ibqp, std::uint32_t command) noexcept
{
	struct {
		ib_uverbs_cmd_hdr hdr;
		Cmd cmd;
	} req{};
	static_assert(offsetof(decltype(req), cmd) == sizeof(req.hdr));
	// Both commands answer the index of the failing work request.
	std::uint32_t bad_wr = 0;
	static_assert(sizeof(bad_wr) == sizeof(ib_uverbs_post_send_resp) &&
		      sizeof(bad_wr) == sizeof(ib_uverbs_post_recv_resp));

	req.hdr.command = command;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(bad_wr) / 4;
	req.cmd.response = reinterpret_cast<std::uintptr_t>(&bad_wr);
	req.cmd.qp_handle = ibqp.handle;
	// The kernel wants a work request's size even for none.
	req.cmd.wqe_size = command == IB_USER_VERBS_CMD_POST_SEND
				   ? sizeof(ib_uverbs_send_wr)
				   : sizeof(ib_uverbs_recv_wr);
	const ssize_t n = write(ibqp.context->cmd_fd, &req, sizeof(req));
	if (n == static_cast<ssize_t>(sizeof(req)))
		return 0;
	return n < 0 ? errno : EIO;
}

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

// Starts an SQE: everything but the SGEs is cleared.
void sqe_begin(xiw_sqe &sqe, std::uint64_t wr_id, unsigned int send_flags,
	       xiw_wr_opcode op) noexcept
{
	std::memset(&sqe, 0, offsetof(xiw_sqe, sge));
	sqe.wr_id = wr_id;
	sqe.opcode = static_cast<std::uint8_t>(op);
	if (send_flags & IBV_SEND_SIGNALED)
		sqe.flags |= XIW_SQE_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		sqe.flags |= XIW_SQE_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		sqe.flags |= XIW_SQE_FENCE;
}

void sqe_set_atomic(xiw_sqe &sqe, std::uint32_t rkey, std::uint64_t remote_addr,
		    const atomic_operands &a) noexcept
{
	sqe.rkey = rkey;
	sqe.remote_addr = remote_addr;
	sqe.operand[0] = a.compare_or_add;
	sqe.operand[1] = a.swap;
	sqe.operand[2] = a.compare_mask;
	sqe.operand[3] = a.swap_or_boundary_mask;
}

// Copies the SGE list; 0 or the errno that fails the post.
int sqe_set_sges(xiw_sqe &sqe, std::span<const ibv_sge> sges) noexcept
{
	if (sges.size() > XIW_MAX_SGE)
		return EINVAL;
	static_assert(sizeof(ibv_sge) == sizeof(xiw_sge));
	std::memcpy(sqe.sge, sges.data(), sges.size_bytes());
	sqe.num_sge = static_cast<std::uint8_t>(sges.size());
	sqe.flags &= ~XIW_SQE_INLINE;
	return 0;
}

// Inline data travels in the SGE array of the SQE itself.
template <class Buffers, class Addr, class Len>
int sqe_set_inline(xiw_sqe &sqe, const Buffers &bufs, Addr addr_of,
		   Len length_of) noexcept
{
	auto *dst = reinterpret_cast<std::uint8_t *>(sqe.sge);
	std::size_t len = 0;
	for (const auto &buf : bufs) {
		const std::size_t n = length_of(buf);
		if (n > XIW_MAX_INLINE - len)
			return EINVAL;
		std::memcpy(dst + len, addr_of(buf), n);
		len += n;
	}
	sqe.flags |= XIW_SQE_INLINE;
	sqe.num_sge = 0;
	sqe.inline_length = static_cast<std::uint32_t>(len);
	return 0;
}

bool extensions_negotiated(const qp &q) noexcept
{
	return q.sq.load_conn_flags() & XIW_CONN_EXTENSIONS;
}

// Begins the SQE of an xiwdv extension work request as OP.
void sqe_begin_ext(xiw_sqe &sqe, std::uint64_t wr_id, unsigned int send_flags,
		   xiw_wr_opcode op, const xiwdv_wr_ext &ext) noexcept
{
	sqe_begin(sqe, wr_id, send_flags, op);
	sqe.rkey = ext.rkey;
	sqe.remote_addr = ext.remote_addr;
	static_assert(sizeof(sqe.operand) == sizeof(ext.operand));
	std::memcpy(sqe.operand, ext.operand, sizeof(sqe.operand));
}

// The extension work request a (hdr, size) pair describes, or nullptr.
const xiwdv_wr_ext *ext_of(const void *hdr, std::size_t size) noexcept
{
	return hdr && size >= sizeof(xiwdv_wr_ext)
		       ? static_cast<const xiwdv_wr_ext *>(hdr)
		       : nullptr;
}

// Begins the SQE of a verbs work request; 0 or the errno of the post.
int sqe_begin_verbs(xiw_sqe &sqe, const ibv_send_wr &wr) noexcept
{
	if (wr.opcode == XIWDV_WR_EXTENDED) {
		const xiwdv_wr_ext *ext = ext_of(wr.tso.hdr, wr.tso.hdr_sz);
		if (!ext)
			return EINVAL;
		const auto op = to_wr_opcode(static_cast<xiwdv_wr_ext_opcode>(ext->opcode));
		if (!op)
			return EOPNOTSUPP;
		sqe_begin_ext(sqe, wr.wr_id, wr.send_flags, *op, *ext);
		return 0;
	}
	const auto op = to_wr_opcode(wr.opcode);
	if (!op)
		return EOPNOTSUPP;
	sqe_begin(sqe, wr.wr_id, wr.send_flags, *op);
	// The fields of ibv_send_wr that the opcode uses (its row's args).
	const xiw_wr_info &wi = *xiw_wr_lookup(*op);
	if (wi.flags & XIW_WRF_IMM)
		sqe.operand[0] = imm64_of(wr.imm_data);
	if (wi.args & XIW_ARG_INVALIDATE)
		sqe.invalidate_rkey = wr.invalidate_rkey;
	if (wi.args & XIW_ARG_RDMA) {
		sqe.remote_addr = wr.wr.rdma.remote_addr;
		sqe.rkey = wr.wr.rdma.rkey;
	}
	if (wi.args & XIW_ARG_ATOMIC) {
		sqe.remote_addr = wr.wr.atomic.remote_addr;
		sqe.rkey = wr.wr.atomic.rkey;
		xiw_sqe_atomic_args(&sqe, &wi, wr.wr.atomic.compare_add, wr.wr.atomic.swap);
	}
	return 0;
}

// Whether an SGE list fits the opcode (its row in XIW_WR_OPCODES): 0 or
// the errno of the post.  Not only when the work request fails later: at
// post, like any driver.
int check_sges(xiw_wr_opcode op, std::span<const ibv_sge> sges) noexcept
{
	const xiw_wr_info *wi = xiw_wr_lookup(op);
	if (!wi || !xiw_wr_sge_count_ok(wi, sges.size()))
		return EINVAL;
	for (const ibv_sge &sge : sges)
		if (!xiw_wr_sge_len_ok(wi, sge.length))
			return EINVAL;
	return 0;
}

// Fills an SQE from a verbs work request; returns 0 or the errno that
// fails the post.
int fill_sqe(const qp &q, const ibv_send_wr &wr, xiw_sqe &sqe) noexcept
{
	if (wr.num_sge < 0)
		return EINVAL;
	if (int err = sqe_begin_verbs(sqe, wr))
		return err;
	const auto op = static_cast<xiw_wr_opcode>(sqe.opcode);
	if (xiw_wr_is(op, XIW_WRF_EXT) && !extensions_negotiated(q))
		return EOPNOTSUPP;

	const std::span<const ibv_sge> sges(wr.sg_list,
					    static_cast<std::size_t>(wr.num_sge));
	if (int err = check_sges(op, sges))
		return err;
	// IBV_SEND_INLINE is ignored where there is no payload to send (a
	// Read or an atomic), as other providers do.
	int err;
	if (wr.send_flags & IBV_SEND_INLINE && xiw_wr_is(op, XIW_WRF_INLINE))
		err = sqe_set_inline(
			sqe, sges,
			[](const ibv_sge &sge) {
				return reinterpret_cast<const void *>(sge.addr);
			},
			[](const ibv_sge &sge) { return std::size_t{sge.length}; });
	else
		err = sqe_set_sges(sqe, sges);
	if (!err && xiw_sqe_check_operands(&sqe) != XIW_WC_SUCCESS)
		err = EINVAL;
	return err;
}

// Publishes the SQEs up to producer and rings the doorbell unless the
// kernel said it is still working on the queue (ctrl.notify).  A consumer
// streams when it polled no CQ since its last post, or when work it
// posted before is not done yet (a window of outstanding requests): then
// the doorbell hands the queue to the kernel's worker, and the posts that
// follow while it sends ring none (XIW_POST_STREAM).  One that waited for
// its last work request gets this one sent in the doorbell's own system
// call, the shortest path for one operation.  0, or the errno of the
// doorbell (EIO once the device went away).
int sq_publish(qp &q, std::uint32_t producer) noexcept
{
	const std::uint32_t polls =
		std::atomic_ref<std::uint32_t>(from_ibv(q.vqp.qp.context)->polls)
			.load(std::memory_order_relaxed);
	const bool outstanding =
		q.sq.load_consumer() != q.sq.own(q.sq.ctrl().producer);
	q.sq.store_post_mode(polls == q.polls_at_post || outstanding
				     ? XIW_POST_STREAM
				     : XIW_POST_NOW);
	q.polls_at_post = polls;
	q.sq.store_producer(producer);
	// Pairs with the kernel's barrier between clearing notify and
	// looking at the producer index once more.
	std::atomic_thread_fence(std::memory_order_seq_cst);
	if (q.sq.load_notify())
		return 0;
	return ring_doorbell<ib_uverbs_post_send>(q.vqp.qp,
						  IB_USER_VERBS_CMD_POST_SEND);
}

// ---- ibv_qp_ex: work requests built by calls -----------------------------

// Ends the batch's last work request: what ibv_post_send() refuses at
// post, ibv_wr_complete() refuses for the batch (its SGEs are given after
// its opcode, so only now is it whole).
void batch_end_wr(qp &q) noexcept
{
	const xiw_sqe *sqe = q.batch_sqe;
	q.batch_sqe = nullptr;
	if (!sqe || q.batch_err)
		return;
	const xiw_wr_info *wi = xiw_wr_lookup(sqe->opcode);
	if (!(sqe->flags & XIW_SQE_INLINE) && !xiw_wr_sge_count_ok(wi, sqe->num_sge))
		q.batch_err = EINVAL;
	else if (xiw_sqe_check_operands(sqe) != XIW_WC_SUCCESS)
		q.batch_err = EINVAL;
}

// The next SQE of the batch, begun for op; nullptr once the batch failed.
xiw_sqe *batch_next(ibv_qp_ex *qpx, xiw_wr_opcode op) noexcept
{
	qp &q = *from_ibv(qpx);
	batch_end_wr(q);
	if (q.batch_err)
		return nullptr;
	if (xiw_wr_is(op, XIW_WRF_EXT) && !extensions_negotiated(q))
		q.batch_err = EOPNOTSUPP;
	else if (q.batch_producer - q.sq.load_consumer() >= q.sq.capacity())
		q.batch_err = ENOMEM;
	if (q.batch_err)
		return nullptr;
	xiw_sqe &sqe = q.sq.slot(q.batch_producer++);
	sqe_begin(sqe, qpx->wr_id, qpx->wr_flags, op);
	q.batch_sqe = &sqe;
	return &sqe;
}

// The data of the last work request; errors are kept for wr_complete().
void batch_check(qp &q, int err) noexcept
{
	if (err && !q.batch_err)
		q.batch_err = err;
}

void wr_start(ibv_qp_ex *qpx) noexcept
{
	qp &q = *from_ibv(qpx);
	q.sq_lock.lock();
	q.batch_err = q.sq.mapped() ? 0 : EINVAL;
	q.batch_sqe = nullptr;
	if (!q.batch_err)
		q.batch_producer = q.sq.own(q.sq.ctrl().producer);
}

int wr_complete(ibv_qp_ex *qpx) noexcept
{
	qp &q = *from_ibv(qpx);
	batch_end_wr(q);
	int err = q.batch_err;
	// A failed batch is dropped whole, as ibv_wr_complete() documents.
	if (!err && q.batch_producer != q.sq.own(q.sq.ctrl().producer))
		err = sq_publish(q, q.batch_producer);
	q.sq_lock.unlock();
	return err;
}

void wr_abort(ibv_qp_ex *qpx) noexcept
{
	from_ibv(qpx)->sq_lock.unlock();
}

void wr_send(ibv_qp_ex *qpx) noexcept
{
	batch_next(qpx, XIW_WR_SEND);
}

void wr_send_imm(ibv_qp_ex *qpx, __be32 imm_data) noexcept
{
	if (xiw_sqe *sqe = batch_next(qpx, XIW_WR_SEND_WITH_IMM))
		sqe->operand[0] = imm64_of(imm_data);
}

void wr_send_inv(ibv_qp_ex *qpx, std::uint32_t invalidate_rkey) noexcept
{
	if (xiw_sqe *sqe = batch_next(qpx, XIW_WR_SEND_WITH_INV))
		sqe->invalidate_rkey = invalidate_rkey;
}

void set_remote(xiw_sqe *sqe, std::uint32_t rkey, std::uint64_t remote_addr) noexcept
{
	if (sqe) {
		sqe->rkey = rkey;
		sqe->remote_addr = remote_addr;
	}
}

void wr_rdma_write(ibv_qp_ex *qpx, std::uint32_t rkey,
		   std::uint64_t remote_addr) noexcept
{
	set_remote(batch_next(qpx, XIW_WR_RDMA_WRITE), rkey, remote_addr);
}

void wr_rdma_write_imm(ibv_qp_ex *qpx, std::uint32_t rkey,
		       std::uint64_t remote_addr, __be32 imm_data) noexcept
{
	xiw_sqe *sqe = batch_next(qpx, XIW_WR_RDMA_WRITE_WITH_IMM);
	set_remote(sqe, rkey, remote_addr);
	if (sqe)
		sqe->operand[0] = imm64_of(imm_data);
}

void wr_rdma_read(ibv_qp_ex *qpx, std::uint32_t rkey,
		  std::uint64_t remote_addr) noexcept
{
	set_remote(batch_next(qpx, XIW_WR_RDMA_READ), rkey, remote_addr);
}

void wr_atomic_fetch_add(ibv_qp_ex *qpx, std::uint32_t rkey,
			 std::uint64_t remote_addr, std::uint64_t add) noexcept
{
	if (xiw_sqe *sqe = batch_next(qpx, XIW_WR_ATOMIC_FETCH_ADD))
		sqe_set_atomic(*sqe, rkey, remote_addr, fetch_add_operands(add));
}

void wr_atomic_cmp_swp(ibv_qp_ex *qpx, std::uint32_t rkey,
		       std::uint64_t remote_addr, std::uint64_t compare,
		       std::uint64_t swap) noexcept
{
	if (xiw_sqe *sqe = batch_next(qpx, XIW_WR_ATOMIC_CMP_SWAP))
		sqe_set_atomic(*sqe, rkey, remote_addr,
			       cmp_swap_operands(compare, swap));
}

void wr_atomic_write(ibv_qp_ex *qpx, std::uint32_t rkey,
		     std::uint64_t remote_addr, const void *atomic_wr) noexcept
{
	xiw_sqe *sqe = batch_next(qpx, XIW_WR_ATOMIC_WRITE);
	set_remote(sqe, rkey, remote_addr);
	if (sqe) // the 8 bytes as they are: stored as they are at the target
		std::memcpy(&sqe->operand[0], atomic_wr, sizeof(sqe->operand[0]));
}

#ifdef XIW_HAVE_IBV_WR_FLUSH
// rdma-core >= 45's ibv_wr_flush(): the same Flush as IBV_WR_FLUSH through
// ibv_post_send, with the same type and level numbers.
void wr_flush(ibv_qp_ex *qpx, std::uint32_t rkey, std::uint64_t remote_addr,
	      std::size_t len, std::uint8_t type, std::uint8_t level) noexcept
{
	xiw_sqe *sqe = batch_next(qpx, XIW_WR_FLUSH);
	set_remote(sqe, rkey, remote_addr);
	if (sqe) {
		sqe->operand[0] = len;
		sqe->operand[1] = type | static_cast<std::uint64_t>(level) << 8;
	}
}
#endif

// xiwdv_wr_post_ext(): the TSO entry point carries an xiwdv_wr_ext, since
// xiw QPs have no TSO and rdma-core 44's ibv_qp_ex no other way in.
void wr_post_ext(ibv_qp_ex *qpx, void *hdr, std::uint16_t hdr_sz, std::uint16_t) noexcept
{
	qp &q = *from_ibv(qpx);
	const xiwdv_wr_ext *ext = ext_of(hdr, hdr_sz);
	const auto op = ext ? to_wr_opcode(static_cast<xiwdv_wr_ext_opcode>(ext->opcode))
			    : std::nullopt;
	if (!op) {
		batch_end_wr(q);
		batch_check(q, ext ? EOPNOTSUPP : EINVAL);
		return;
	}
	if (xiw_sqe *sqe = batch_next(qpx, *op))
		sqe_begin_ext(*sqe, qpx->wr_id, qpx->wr_flags, *op, *ext);
}

void wr_set_sge_list(ibv_qp_ex *qpx, std::size_t num_sge,
		     const ibv_sge *sg_list) noexcept
{
	qp &q = *from_ibv(qpx);
	if (!q.batch_sqe)
		return;
	if (int err = check_sges(static_cast<xiw_wr_opcode>(q.batch_sqe->opcode),
				 {sg_list, num_sge}))
		batch_check(q, err);
	else
		batch_check(q, sqe_set_sges(*q.batch_sqe, {sg_list, num_sge}));
}

void wr_set_sge(ibv_qp_ex *qpx, std::uint32_t lkey, std::uint64_t addr,
		std::uint32_t length) noexcept
{
	const ibv_sge sge{addr, length, lkey};
	wr_set_sge_list(qpx, 1, &sge);
}

void wr_set_inline_data_list(ibv_qp_ex *qpx, std::size_t num_buf,
			     const ibv_data_buf *buf_list) noexcept
{
	qp &q = *from_ibv(qpx);
	// Inline data only where the message carries payload.
	if (q.batch_sqe && !xiw_wr_is(q.batch_sqe->opcode, XIW_WRF_INLINE))
		batch_check(q, EINVAL);
	else if (q.batch_sqe)
		batch_check(q, sqe_set_inline(
				       *q.batch_sqe,
				       std::span<const ibv_data_buf>(buf_list, num_buf),
				       [](const ibv_data_buf &b) -> const void * { return b.addr; },
				       [](const ibv_data_buf &b) { return b.length; }));
}

void wr_set_inline_data(ibv_qp_ex *qpx, void *addr, std::size_t length) noexcept
{
	const ibv_data_buf buf{addr, length};
	wr_set_inline_data_list(qpx, 1, &buf);
}

// The ibv_qp_ex capability (IBV_QP_EX_WITH_*) of libibverbs opcode OP, 0
// if this libibverbs has no ibv_wr_* builder for it.  The bits follow the
// opcodes up to TSO only.
constexpr std::uint64_t qp_ex_send_op(int op) noexcept
{
	static_assert(IBV_QP_EX_WITH_RDMA_WRITE == 1 << IBV_WR_RDMA_WRITE &&
		      IBV_QP_EX_WITH_SEND_WITH_INV == 1 << IBV_WR_SEND_WITH_INV &&
		      IBV_QP_EX_WITH_TSO == 1 << IBV_WR_TSO);
	if (op >= 0 && op <= IBV_WR_TSO)
		return std::uint64_t{1} << op;
	if (op == IBV_WR_ATOMIC_WRITE)
		return IBV_QP_EX_WITH_ATOMIC_WRITE;
#ifdef XIW_HAVE_IBV_WR_FLUSH
	if (op == IBV_WR_FLUSH)
		return IBV_QP_EX_WITH_FLUSH;
#endif
	return 0;
}

// The ibv_qp_ex work request builders xiw provides: one for each row of
// XIW_WR_OPCODES that libibverbs posts, and xiwdv's for the rest.
constexpr std::uint64_t supported_send_ops = [] {
	std::uint64_t ops = XIWDV_QP_EX_WITH_EXTENSIONS;
	for (const int op : ibv_wr_opcodes)
		ops |= qp_ex_send_op(op);
	return ops;
}();

void init_qp_ex(qp &q) noexcept
{
	ibv_qp_ex &x = q.vqp.qp_ex;
	x.wr_start = wr_start;
	x.wr_complete = wr_complete;
	x.wr_abort = wr_abort;
	x.wr_send = wr_send;
	x.wr_send_imm = wr_send_imm;
	x.wr_send_inv = wr_send_inv;
	x.wr_rdma_write = wr_rdma_write;
	x.wr_rdma_write_imm = wr_rdma_write_imm;
	x.wr_rdma_read = wr_rdma_read;
	x.wr_atomic_fetch_add = wr_atomic_fetch_add;
	x.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x.wr_atomic_write = wr_atomic_write;
#ifdef XIW_HAVE_IBV_WR_FLUSH
	x.wr_flush = wr_flush;
#endif
	x.wr_send_tso = wr_post_ext;
	x.wr_set_sge = wr_set_sge;
	x.wr_set_sge_list = wr_set_sge_list;
	x.wr_set_inline_data = wr_set_inline_data;
	x.wr_set_inline_data_list = wr_set_inline_data_list;
	q.vqp.comp_mask |= rc::verbs_qp_ex;
}

} // namespace

ibv_qp *create_qp_ex(ibv_context *ibctx, ibv_qp_init_attr_ex *attr) noexcept
{
	constexpr std::uint32_t supported_comp_mask =
		IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	const bool ex = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	if (attr->comp_mask & ~supported_comp_mask ||
	    (ex && attr->send_ops_flags & ~supported_send_ops)) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	owned<qp> q = make<qp>();
	if (!q)
		return nullptr;

	rc::create_qp_cmd cmd{};
	rc::create_qp_resp<xiw_uresp_create_qp> resp{};
	if (int err = rc::ibv_cmd_create_qp_ex(ibctx, &q->vqp, attr, rc::as_cmd(cmd),
					       sizeof(cmd), rc::as_resp(resp),
					       sizeof(resp)))
		return fail_with(err);
	undo_unless_done kernel_qp([&q] { rc::ibv_cmd_destroy_qp(&q->vqp.qp); });
	// On failure, destroying the object unmaps whatever was mapped.
	if (int err = map_queues(*q, ibctx->cmd_fd, resp.udata))
		return fail_with(err);
	kernel_qp.dismiss();
	if (ex)
		init_qp_ex(*q);
	return &q.release()->vqp.qp;
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

// Writes the work requests into the send queue, then rings the doorbell.
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

	ibv_send_wr *const first_wr = wr;
	{
		const std::lock_guard guard(q.sq_lock);
		const std::uint32_t first = q.sq.own(q.sq.ctrl().producer);
		std::uint32_t producer = first;
		for (; wr; wr = wr->next) {
			if (producer - q.sq.load_consumer() >= q.sq.capacity()) {
				err = ENOMEM;
				break;
			}
			err = fill_sqe(q, *wr, q.sq.slot(producer));
			if (err)
				break;
			producer++;
		}
		// A doorbell that fails fails the post, unless a work request
		// did before.
		if (producer != first) {
			if (const int bell = sq_publish(q, producer); bell && !err) {
				err = bell;
				wr = first_wr;
			}
		}
	}

	if (err)
		*bad_wr = wr;
	return err;
}

int put_receives(const ring<xiw_rqe> &rq, ibv_recv_wr *&wr) noexcept
{
	const std::uint32_t first = rq.own(rq.ctrl().producer);
	std::uint32_t producer = first;
	int err = 0;

	for (; wr; wr = wr->next) {
		if (producer - rq.load_consumer() >= rq.capacity()) {
			err = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || wr->num_sge > XIW_MAX_RECV_SGE) {
			err = EINVAL;
			break;
		}
		xiw_rqe &rqe = rq.slot(producer);
		rqe.wr_id = wr->wr_id;
		rqe.num_sge = static_cast<std::uint8_t>(wr->num_sge);
		std::memcpy(rqe.sge, wr->sg_list,
			    sizeof(ibv_sge) * static_cast<std::size_t>(wr->num_sge));
		producer++;
	}
	if (producer != first)
		rq.store_producer(producer);
	return err;
}

int post_recv(ibv_qp *ibqp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) noexcept
{
	qp &q = *from_ibv(ibqp);

	if (!wr)
		return 0;
	if (!q.rq.mapped()) {
		*bad_wr = wr;
		return EINVAL;
	}

	int err;
	{
		const std::lock_guard guard(q.rq_lock);
		ibv_recv_wr *const first = wr;
		err = put_receives(q.rq, wr);
		if (wr != first) {
			// The kernel takes receives off the ring as messages
			// arrive; only a QP in Error asks to be told, to flush
			// them.
			std::atomic_thread_fence(std::memory_order_seq_cst);
			if (q.rq.load_notify()) {
				const int bell = ring_doorbell<ib_uverbs_post_recv>(
					*ibqp, IB_USER_VERBS_CMD_POST_RECV);
				if (bell && !err) {
					err = bell;
					wr = first;
				}
			}
		}
	}

	if (err)
		*bad_wr = wr;
	return err;
}

} // namespace xiw
