// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
//
// xiw provider objects.  libibverbs hands out pointers to the verbs structs
// embedded at offset 0 of each object; from_ibv() goes back.
#ifndef XIW_PROVIDER_XIW_H
#define XIW_PROVIDER_XIW_H

#include <cstddef>
#include <cstdint>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include <infiniband/verbs.h>
#include <rdma/xiw-abi.h>

#include "rdma_core_abi.h"
#include "ring.h"

namespace xiw {

// Provider objects are allocated with calloc() and placement new so that
// the provider needs nothing from the C++ runtime and never throws.
template <class T> T *create() noexcept
{
	void *p = std::calloc(1, sizeof(T));
	return p ? new (p) T{} : nullptr;
}
template <class T> void destroy(T *obj) noexcept
{
	if (obj) {
		obj->~T();
		std::free(obj);
	}
}

// A provider object under construction: destroyed (its rings unmapped)
// unless release()d to libibverbs.
template <class T> struct destroyer {
	void operator()(T *obj) const noexcept { destroy(obj); }
};
template <class T> using owned = std::unique_ptr<T, destroyer<T>>;
template <class T> owned<T> make() noexcept
{
	return owned<T>(create<T>());
}

// The kernel half of an object under construction: UNDO (the uverbs
// destroy command) runs unless the construction completed (dismiss()).
// errno, which the failing step set, is kept.
template <class F> class undo_unless_done {
public:
	explicit undo_unless_done(F undo) noexcept : undo_(std::move(undo)) {}
	~undo_unless_done()
	{
		if (armed_) {
			const int saved = errno;
			undo_();
			errno = saved;
		}
	}
	undo_unless_done(const undo_unless_done &) = delete;
	undo_unless_done &operator=(const undo_unless_done &) = delete;
	void dismiss() noexcept { armed_ = false; }

private:
	F undo_;
	bool armed_ = true;
};

// errno = ERR and nullptr, for the creation paths.
inline std::nullptr_t fail_with(int err) noexcept
{
	errno = err;
	return nullptr;
}

struct device {
	rc::verbs_device vdev;
};

// Allocated (zeroed) by libibverbs through _verbs_init_and_alloc_context()
// and released with free(): must stay trivial.
struct context {
	verbs_context vctx;
	// The kernel takes the Flush rights as verbs access flags
	// (XIW_CTX_NATIVE_FLUSH_ACCESS): they need not travel in the udata.
	bool native_flush_access;
	// Calls of poll_cq() on any of its CQs, counted so that a post can
	// tell whether its consumer waited for anything since the last one.
	std::uint32_t polls;
};
static_assert(std::is_trivially_destructible_v<context>);
static_assert(std::is_standard_layout_v<context>);

struct mr {
	rc::verbs_mr vmr;
};

struct cq {
	rc::verbs_cq vcq;
	spin_lock lock; // serialises pollers
	ring<xiw_cqe> queue;
};

struct qp {
	rc::verbs_qp vqp;
	spin_lock sq_lock;
	spin_lock rq_lock;
	ring<xiw_sqe> sq; // not mapped if the QP has no send queue
	ring<xiw_rqe> rq; // not mapped if the QP has no receive queue
	// The ibv_qp_ex batch between wr_start() and wr_complete() or
	// wr_abort(), which hold sq_lock throughout.
	std::uint32_t batch_producer;
	xiw_sqe *batch_sqe; // the entry the wr_set_*() calls fill in
	int batch_err;	    // first error of the batch, reported by wr_complete
	// context::polls at the last post (sq_lock): unchanged at the next
	// one, the consumer posts a stream.
	std::uint32_t polls_at_post = UINT32_MAX;
};

// A shared receive queue: the ring the kernel takes receives from for every
// QP created on it.
struct srq {
	ibv_srq ibsrq;
	spin_lock lock; // serialises posters
	ring<xiw_rqe> rq;
};

// ibv_context is the last member of verbs_context.
inline context *from_ibv(ibv_context *c) noexcept
{
	static_assert(offsetof(context, vctx) == 0);
	return reinterpret_cast<context *>(reinterpret_cast<std::byte *>(c) -
					   offsetof(verbs_context, context));
}
inline cq *from_ibv(ibv_cq *c) noexcept
{
	static_assert(offsetof(cq, vcq) == 0);
	return reinterpret_cast<cq *>(c);
}
inline qp *from_ibv(ibv_qp *q) noexcept
{
	static_assert(offsetof(qp, vqp) == 0);
	return reinterpret_cast<qp *>(q);
}
inline qp *from_ibv(ibv_qp_ex *q) noexcept
{
	return from_ibv(&q->qp_base);
}
inline srq *from_ibv(ibv_srq *s) noexcept
{
	static_assert(offsetof(srq, ibsrq) == 0);
	return reinterpret_cast<srq *>(s);
}
inline mr *from_verbs(rc::verbs_mr *m) noexcept
{
	static_assert(offsetof(mr, vmr) == 0);
	return reinterpret_cast<mr *>(m);
}

// Operations, grouped by source file.
ibv_cq *create_cq(ibv_context *ctx, int cqe, ibv_comp_channel *channel,
		  int comp_vector) noexcept;
int destroy_cq(ibv_cq *cq) noexcept;
int poll_cq(ibv_cq *cq, int num_entries, ibv_wc *wc) noexcept;
int req_notify_cq(ibv_cq *cq, int solicited_only) noexcept;

ibv_qp *create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) noexcept;
ibv_qp *create_qp_ex(ibv_context *ctx, ibv_qp_init_attr_ex *attr) noexcept;
int destroy_qp(ibv_qp *qp) noexcept;
int modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask) noexcept;
int query_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask,
	     ibv_qp_init_attr *init_attr) noexcept;
int post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad_wr) noexcept;
int post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) noexcept;
// Writes receives into rq up to the first that fails, which wr is left at;
// publishes what it wrote.  Returns 0 or the errno of that failure.  The
// caller serialises the posters of rq.
int put_receives(const ring<xiw_rqe> &rq, ibv_recv_wr *&wr) noexcept;

ibv_srq *create_srq(ibv_pd *pd, ibv_srq_init_attr *attr) noexcept;
int destroy_srq(ibv_srq *srq) noexcept;
int modify_srq(ibv_srq *srq, ibv_srq_attr *attr, int attr_mask) noexcept;
int query_srq(ibv_srq *srq, ibv_srq_attr *attr) noexcept;
int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) noexcept;

} // namespace xiw

#endif // XIW_PROVIDER_XIW_H
