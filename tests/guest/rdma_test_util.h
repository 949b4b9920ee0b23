// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// What the librdmacm-based guest test programs share.
#ifndef XIW_TESTS_RDMA_TEST_UTIL_H
#define XIW_TESTS_RDMA_TEST_UTIL_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>

namespace xiw_test {

// How much slower than the stock kernel the guest's kernel runs:
// XIW_TIME_FACTOR, which scripts/guest sets for the sanitizer kernel; 1
// when unset.  Tests multiply their waits for the kernel by it.
inline int time_factor()
{
	const char *factor = std::getenv("XIW_TIME_FACTOR");
	const int n = factor ? std::atoi(factor) : 1;
	return n > 0 ? n : 1;
}

[[noreturn]] inline void die(const char *what)
{
	std::fprintf(stderr, "%s: %s\n", what, std::strerror(errno));
	std::exit(1);
}

// For the functions that return an error number instead of setting errno.
[[noreturn]] inline void die_rc(const char *what, int rc)
{
	std::fprintf(stderr, "%s: %s\n", what, std::strerror(rc));
	std::exit(1);
}

__attribute__((format(printf, 1, 2))) inline std::string strf(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return msg;
}

// The address of ADDR:PORT on the RDMA TCP port space.
inline rdma_addrinfo *resolve(const char *addr, const char *port, bool passive)
{
	rdma_addrinfo hints{}, *res = nullptr;
	hints.ai_port_space = RDMA_PS_TCP;
	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		die("rdma_getaddrinfo");
	return res;
}

// An RC QP with one SGE per work request.
inline ibv_qp_init_attr rc_qp_attr(std::uint32_t send_wr, std::uint32_t recv_wr)
{
	ibv_qp_init_attr attr{};
	attr.cap.max_send_wr = send_wr;
	attr.cap.max_recv_wr = recv_wr;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	return attr;
}

// Room for DEPTH RDMA Reads or atomics in flight each way.
inline rdma_conn_param conn_param(std::uint8_t depth = 4)
{
	rdma_conn_param p{};
	p.responder_resources = depth;
	p.initiator_depth = depth;
	p.retry_count = 7;
	return p;
}

// conn_param(DEPTH) carrying PD as private data (PD must outlive the call
// that takes the parameters).
template <typename T>
inline rdma_conn_param conn_param_with(const T &pd, std::uint8_t depth = 4)
{
	rdma_conn_param p = conn_param(depth);
	p.private_data = &pd;
	p.private_data_len = sizeof(pd);
	return p;
}

// A signaled work request of one SGE, the shape of most posts in the tests;
// set the wr.wr union for Writes, Reads and atomics.  It points at its own
// SGE, so it is neither copied nor moved.
struct one_sge_wr {
	ibv_sge sge;
	ibv_send_wr wr{};

	one_sge_wr(ibv_wr_opcode opcode, const void *addr, std::uint32_t length,
		   std::uint32_t lkey, std::uint64_t wr_id = 0)
		: sge{reinterpret_cast<std::uintptr_t>(addr), length, lkey}
	{
		wr.wr_id = wr_id;
		wr.opcode = opcode;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
	}
	one_sge_wr(const one_sge_wr &) = delete;
	one_sge_wr &operator=(const one_sge_wr &) = delete;

	// ibv_post_send's status.
	int post(ibv_qp *qp)
	{
		ibv_send_wr *bad = nullptr;
		return ibv_post_send(qp, &wr, &bad);
	}
};

// Posts a receive of one SGE to QP; ibv_post_recv's status.
inline int post_recv_one(ibv_qp *qp, const void *addr, std::uint32_t length,
			 std::uint32_t lkey, std::uint64_t wr_id = 0)
{
	ibv_sge sge{reinterpret_cast<std::uintptr_t>(addr), length, lkey};
	ibv_recv_wr wr{}, *bad = nullptr;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

// A listening endpoint on ADDR:PORT (librdmacm's synchronous API) whose
// connect requests get QPs of ATTR; says "WHO server: listening on
// ADDR:PORT" (the line the guest scripts wait for), then NOTE.
inline rdma_cm_id *listen_on(const char *who, const char *addr, const char *port,
			     ibv_qp_init_attr attr, int backlog, const char *note = "")
{
	rdma_addrinfo *res = resolve(addr, port, true);
	rdma_cm_id *id = nullptr;
	if (rdma_create_ep(&id, res, nullptr, &attr))
		die("rdma_create_ep");
	rdma_freeaddrinfo(res);
	if (rdma_listen(id, backlog))
		die("rdma_listen");
	std::printf("%s server: listening on %s:%s%s\n", who, addr, port, note);
	std::fflush(stdout);
	return id;
}

// Verbs objects destroyed in the order given (QPs before their CQs, MRs
// before their PD); null ones, whose creation failed, are passed over.
template <typename... Objects> void destroy_all(Objects *...objects)
{
	const auto destroy = [](auto *object) {
		using object_type = std::remove_pointer_t<decltype(object)>;
		if (!object)
			return;
		if constexpr (std::is_same_v<object_type, ibv_qp>)
			ibv_destroy_qp(object);
		else if constexpr (std::is_same_v<object_type, ibv_mr>)
			ibv_dereg_mr(object);
		else if constexpr (std::is_same_v<object_type, ibv_cq>)
			ibv_destroy_cq(object);
		else if constexpr (std::is_same_v<object_type, ibv_pd>)
			ibv_dealloc_pd(object);
		else
			static_assert(sizeof(object_type) == 0, "not a verbs object destroy_all knows");
	};
	(destroy(objects), ...);
}

// What a loop over CM events keeps of one once it is acknowledged.
struct cm_event_seen {
	rdma_cm_id *id;
	rdma_cm_event_type type;
};

// The next event on CH (waits for it), acknowledged.
inline cm_event_seen next_cm_event(rdma_event_channel *ch)
{
	rdma_cm_event *ev = nullptr;
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	const cm_event_seen seen{ev->id, ev->event};
	rdma_ack_cm_event(ev);
	return seen;
}

// A listening ID on ADDR:PORT whose events (connect requests included)
// arrive on CH (librdmacm's asynchronous API).
inline rdma_cm_id *listen_async(rdma_event_channel *ch, const char *addr, const char *port,
				int backlog)
{
	rdma_cm_id *id = nullptr;
	if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP))
		die("rdma_create_id (listener)");
	rdma_addrinfo *res = resolve(addr, port, true);
	if (rdma_bind_addr(id, res->ai_src_addr) || rdma_listen(id, backlog))
		die("rdma_bind_addr/rdma_listen");
	rdma_freeaddrinfo(res);
	return id;
}

// An active endpoint toward ADDR:PORT with a QP of ATTR (none if null),
// not yet connected.
inline rdma_cm_id *endpoint_to(const char *addr, const char *port, ibv_qp_init_attr *attr)
{
	rdma_addrinfo *res = resolve(addr, port, false);
	rdma_cm_id *id = nullptr;
	if (rdma_create_ep(&id, res, nullptr, attr))
		die("rdma_create_ep");
	rdma_freeaddrinfo(res);
	return id;
}

// Prints "TOOL WHAT: FAIL: message" and exits with status 1.
[[noreturn]] inline void vfail(const char *tool, const char *what, const char *fmt,
			       va_list ap)
{
	char msg[512];
	std::vsnprintf(msg, sizeof(msg), fmt, ap);
	std::printf("%s %s: FAIL: %s\n", tool, what, msg);
	std::fflush(stdout);
	std::exit(1);
}

// Waits up to TIMEOUT_MS for the connection of ID (with its own event
// channel) to end; false on timeout.
inline bool wait_disconnect(rdma_cm_id *id, int timeout_ms)
{
	using clock = std::chrono::steady_clock;
	pollfd pfd{id->channel->fd, POLLIN, 0};
	const auto until = clock::now() + std::chrono::milliseconds(timeout_ms);
	for (;;) {
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
					  until - clock::now())
					  .count();
		if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) <= 0)
			return false;
		rdma_cm_event *ev = nullptr;
		if (rdma_get_cm_event(id->channel, &ev))
			die("rdma_get_cm_event");
		const bool done = ev->event == RDMA_CM_EVENT_DISCONNECTED ||
				  ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL;
		rdma_ack_cm_event(ev);
		if (done)
			return true;
	}
}

// One completion of CQ, or false after TIMEOUT_MS.  Spins briefly, then
// naps: the guest has two CPUs, and the kernel's side of RDMA needs them.
inline bool poll_one(ibv_cq *cq, ibv_wc &wc, int timeout_ms)
{
	using clock = std::chrono::steady_clock;
	const auto until = clock::now() + std::chrono::milliseconds(timeout_ms);
	for (unsigned spin = 0;; spin++) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n == 1)
			return true;
		if (spin < 200)
			continue;
		if (clock::now() > until)
			return false;
		std::this_thread::sleep_for(std::chrono::microseconds(20));
	}
}

} // namespace xiw_test

#endif
