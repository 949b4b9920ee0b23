// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// A shared receive queue feeding several connections, over librdmacm:
//   xiw_srq_test server ADDR PORT
//   xiw_srq_test client ADDR PORT        (run kClients of them at once)
// The server makes one SRQ on the device of ADDR and gives it to the QP of
// every connection; each client sends kMessages byte-checked Sends of
// 0..4096 bytes into it.  The server checks the SRQ's attributes and what
// it refuses, its limit event (once, then disarmed), Last WQE Reached for
// a QP moved to Error, and that the SRQ goes once its QPs have gone.
// One "srq: CHECK: ok" line per check; a failure prints
// "srq: CHECK: FAIL: why" and exits with status 1.
//
// Flow control: iWARP has no receiver-not-ready retry, a Send without a
// posted receive ends the connection.  A client sends only what the server
// granted it in a credit Send, at most kBatch messages at a time, the next
// credit once the whole batch arrived; after its last message it sends a
// bye.  So no more than kClients * (kBatch + 1) receives are ever due.
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "rdma_test_util.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

using xiw_test::conn_param;
using xiw_test::conn_param_with;
using xiw_test::die;
using xiw_test::one_sge_wr;
using xiw_test::poll_one;
using xiw_test::resolve;
using xiw_test::strf;

constexpr std::uint32_t kClients = 3;
constexpr std::uint32_t kMessages = 200;    // per client, then a bye
constexpr std::uint32_t kMaxMessage = 4096; // also each receive buffer's size
// Each receive's SGE is this much longer than its buffer, so the last
// buffer's reaches past the end of the registration: only what a message
// places must be registered (perftest 25 posts such SRQ receives, rounded
// up to the MTU).  (Regression: xiw checked the whole SGE when a Send
// began, and the first message into the last buffer failed with
// IBV_WC_LOC_PROT_ERR.)
constexpr std::uint32_t kSgeSlack = 4096;
constexpr std::uint32_t kBatch = 16;        // messages per credit
constexpr std::uint32_t kSrqWr = 64;        // max_wr asked for
// The limit event: kLimitPosted receives posted, the limit armed at
// kLimit; message kLimitPosted - kLimit + 1 leaves kLimit - 1 posted.
constexpr std::uint32_t kLimitPosted = 32;
constexpr std::uint32_t kLimit = 8;
constexpr std::uint32_t kLimitShare = (kLimitPosted - kLimit) / kClients;
constexpr std::uint32_t kMagic = 0x51525321;
constexpr int kTimeoutMs = 60000; // for anything the peer must do
constexpr int kQuietMs = 200;     // watched for an event that must not come

static_assert(kSrqWr >= kClients * (kBatch + 1),
	      "every credited message and every bye finds a receive");
static_assert(kLimit > 0 && kLimit < kLimitPosted && kLimitPosted <= kSrqWr);
static_assert(kLimitShare * kClients == kLimitPosted - kLimit,
	      "the clients share the messages before the limit evenly");
static_assert(kLimitShare + 1 <= kBatch && kLimitShare + 1 <= kMessages);

// The check under way, named in what pass() and fail() print.
std::string g_check = "setup";

void pass()
{
	std::printf("srq: %s: ok\n", g_check.c_str());
	std::fflush(stdout);
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	xiw_test::vfail("srq:", g_check.c_str(), fmt, ap);
}

// ---- messages ----------------------------------------------------------------

// In the accept private data: which client the connection is.
struct accept_info {
	std::uint32_t magic;
	std::uint32_t client;
};

// From the server: the client may send COUNT more messages.
struct credit_msg {
	std::uint32_t magic;
	std::uint32_t count;
};

// The first bytes of a message with room for them.
struct message_header {
	std::uint32_t client;
	std::uint32_t seq;
};

// Size of message SEQ of CLIENT: the edge cases in turn, in between sizes
// spread over 0..kMaxMessage.  Message kMessages is the bye: a header.
std::uint32_t message_size(std::uint32_t client, std::uint32_t seq)
{
	static constexpr std::uint32_t edges[] = {0,   1,    7,    8,    9,    63,
						  64,  65,   1023, 1024, 4095, 4096};
	if (seq == kMessages)
		return sizeof(message_header);
	const std::uint32_t turn = seq + client * 4;
	if (turn % 3 == 0)
		return edges[(turn / 3) % std::size(edges)];
	return (seq * 2654435761u ^ client * 40503u) % (kMaxMessage + 1);
}

std::uint8_t pattern(std::uint32_t client, std::uint32_t seq, std::uint32_t i)
{
	std::uint32_t x = (client + 1) * 0x9e3779b1u ^ seq * 0x85ebca77u ^ i * 0xc2b2ae35u;
	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 13;
	return static_cast<std::uint8_t>(x);
}

// Writes message SEQ of CLIENT to P (kMaxMessage bytes); returns its size.
std::uint32_t make_message(std::uint8_t *p, std::uint32_t client, std::uint32_t seq)
{
	const std::uint32_t n = message_size(client, seq);
	for (std::uint32_t i = 0; i < n; i++)
		p[i] = pattern(client, seq, i);
	if (n >= sizeof(message_header)) {
		const message_header h{client, seq};
		std::memcpy(p, &h, sizeof(h));
	}
	return n;
}

// ---- verbs -------------------------------------------------------------------

// The next event on CH (to be acknowledged); fails after kTimeoutMs.
rdma_cm_event *next_cm_event(rdma_event_channel *ch, const char *waiting_for)
{
	pollfd pfd{ch->fd, POLLIN, 0};
	if (poll(&pfd, 1, kTimeoutMs) != 1)
		fail("no %s within %d s", waiting_for, kTimeoutMs / 1000);
	rdma_cm_event *ev = nullptr;
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	return ev;
}

// ---- server ------------------------------------------------------------------

struct connection {
	rdma_cm_id *id = nullptr;
	std::uint32_t index = 0;
	std::uint32_t granted = 0;  // messages the client may send so far
	std::uint32_t received = 0; // messages (and the bye) arrived and checked
	bool disconnected = false;
};

class srq_server {
public:
	void listen(const char *addr, const char *port);
	void check_attributes();
	void create_queues();
	void accept_clients();
	void check_qps_on_srq();
	void limit_event();
	void data();
	void last_wqe_reached();
	void cleanup();

private:
	rdma_event_channel *channel_ = nullptr;
	rdma_cm_id *listen_id_ = nullptr;
	ibv_context *ctx_ = nullptr;
	ibv_pd *pd_ = nullptr;
	ibv_srq *srq_ = nullptr;
	std::uint32_t depth_ = 0; // the SRQ's max_wr: receive buffers
	ibv_cq *send_cq_ = nullptr;
	ibv_cq *recv_cq_ = nullptr;
	std::uint8_t *recv_bufs_ = nullptr;
	ibv_mr *recv_mr_ = nullptr;
	std::uint8_t expected_[kMaxMessage]; // what the message received should be
	credit_msg credits_[kClients]{};
	ibv_mr *credit_mr_ = nullptr;
	std::vector<connection> conns_;

	ibv_srq_attr query();
	void post_receive(std::uint64_t buf);
	void grant(connection &c, std::uint32_t count);
	std::uint64_t receive_message();
	connection &by_qp_num(std::uint32_t qp_num);
	bool next_async_event(int timeout_ms, ibv_async_event &ev);
	void expect_no_async_event(int timeout_ms);
};

void srq_server::listen(const char *addr, const char *port)
{
	channel_ = rdma_create_event_channel();
	if (!channel_)
		die("rdma_create_event_channel");
	if (rdma_create_id(channel_, &listen_id_, nullptr, RDMA_PS_TCP))
		die("rdma_create_id");
	rdma_addrinfo *res = resolve(addr, port, true);
	if (rdma_bind_addr(listen_id_, res->ai_src_addr))
		die("rdma_bind_addr");
	rdma_freeaddrinfo(res);
	// Bound to the address of a device, the id has its context (the one
	// librdmacm gives every id on that device): the SRQ can be there
	// before the first connection.
	ctx_ = listen_id_->verbs;
	if (!ctx_)
		fail("%s is not the address of an RDMA device", addr);
	pd_ = ibv_alloc_pd(ctx_);
	if (!pd_)
		die("ibv_alloc_pd");
	ibv_srq_init_attr init{};
	init.attr.max_wr = kSrqWr;
	init.attr.max_sge = 1;
	srq_ = ibv_create_srq(pd_, &init);
	if (!srq_)
		fail("ibv_create_srq: %s", std::strerror(errno));
	if (rdma_listen(listen_id_, kClients))
		die("rdma_listen");
	std::printf("srq: listening on %s:%s\n", addr, port);
	std::fflush(stdout);
}

ibv_srq_attr srq_server::query()
{
	ibv_srq_attr attr{};
	if (int rc = ibv_query_srq(srq_, &attr))
		fail("ibv_query_srq: %s", std::strerror(rc));
	return attr;
}

void srq_server::check_attributes()
{
	g_check = "query";
	const ibv_srq_attr attr = query();
	if (attr.max_wr < kSrqWr || attr.max_sge < 1 || attr.srq_limit != 0)
		fail("max_wr %u (asked for %u), max_sge %u, srq_limit %u (not armed: 0)",
		     attr.max_wr, kSrqWr, attr.max_sge, attr.srq_limit);
	depth_ = attr.max_wr;
	pass();

	g_check = "modify max_wr refused";
	ibv_srq_attr change{};
	change.max_wr = 2 * depth_;
	int rc = ibv_modify_srq(srq_, &change, IBV_SRQ_MAX_WR);
	if (rc != EOPNOTSUPP)
		fail("ibv_modify_srq IBV_SRQ_MAX_WR returned %d (%s), expected EOPNOTSUPP", rc,
		     std::strerror(rc));
	pass();

	g_check = "limit above max_wr refused";
	change = {};
	change.srq_limit = depth_ + 1;
	rc = ibv_modify_srq(srq_, &change, IBV_SRQ_LIMIT);
	if (rc != EINVAL)
		fail("ibv_modify_srq srq_limit %u > max_wr %u returned %d (%s), expected EINVAL",
		     change.srq_limit, depth_, rc, std::strerror(rc));
	if (query().srq_limit != 0)
		fail("the refused limit was armed");
	pass();
}

void srq_server::create_queues()
{
	// Every receive buffer may be filled before its completion is polled;
	// grant() waits for each credit Send.
	recv_cq_ = ibv_create_cq(ctx_, static_cast<int>(depth_), nullptr, nullptr, 0);
	send_cq_ = ibv_create_cq(ctx_, 1, nullptr, nullptr, 0);
	if (!recv_cq_ || !send_cq_)
		die("ibv_create_cq");
	const std::size_t bytes = std::size_t{depth_} * kMaxMessage;
	recv_bufs_ = static_cast<std::uint8_t *>(std::aligned_alloc(4096, bytes));
	if (!recv_bufs_)
		die("aligned_alloc");
	recv_mr_ = ibv_reg_mr(pd_, recv_bufs_, bytes, IBV_ACCESS_LOCAL_WRITE);
	credit_mr_ = ibv_reg_mr(pd_, credits_, sizeof(credits_), IBV_ACCESS_LOCAL_WRITE);
	if (!recv_mr_ || !credit_mr_)
		die("ibv_reg_mr");
}

void srq_server::accept_clients()
{
	g_check = strf("%u connections on the srq", kClients);
	std::uint32_t established = 0;
	while (established < kClients) {
		rdma_cm_event *ev = next_cm_event(channel_, "connection");
		rdma_cm_id *id = ev->id;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST: {
			if (conns_.size() == kClients)
				fail("more than %u connect requests", kClients);
			// A QP on an SRQ has no receive queue of its own;
			// it sends one credit at a time.
			ibv_qp_init_attr attr = xiw_test::rc_qp_attr(1, 0);
			attr.cap.max_recv_sge = 0;
			attr.send_cq = send_cq_;
			attr.recv_cq = recv_cq_;
			attr.srq = srq_;
			if (rdma_create_qp(id, pd_, &attr))
				fail("rdma_create_qp with an SRQ: %s", std::strerror(errno));
			connection c;
			c.id = id;
			c.index = static_cast<std::uint32_t>(conns_.size());
			const accept_info info{kMagic, c.index};
			rdma_conn_param param = conn_param_with(info);
			if (rdma_accept(id, &param))
				die("rdma_accept");
			conns_.push_back(c);
			break;
		}
		case RDMA_CM_EVENT_ESTABLISHED:
			established++;
			break;
		default:
			fail("%s (status %d) while accepting", rdma_event_str(ev->event),
			     ev->status);
		}
		rdma_ack_cm_event(ev);
	}
	pass();
}

void srq_server::check_qps_on_srq()
{
	g_check = "post_recv on a qp of the srq refused";
	ibv_sge sge{reinterpret_cast<std::uintptr_t>(recv_bufs_), kMaxMessage, recv_mr_->lkey};
	ibv_recv_wr wr{}, *bad = nullptr;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	int rc = ibv_post_recv(conns_[0].id->qp, &wr, &bad);
	if (rc != EINVAL || bad != &wr)
		fail("ibv_post_recv returned %d (%s), bad_wr %s; expected EINVAL and the WR", rc,
		     std::strerror(rc), bad == &wr ? "the WR" : "not the WR");
	pass();

	g_check = "destroy while in use refused";
	rc = ibv_destroy_srq(srq_);
	if (rc != EBUSY)
		fail("ibv_destroy_srq with %u QPs on it returned %d (%s), expected EBUSY",
		     kClients, rc, std::strerror(rc));
	pass();
}

void srq_server::post_receive(std::uint64_t buf)
{
	ibv_sge sge{reinterpret_cast<std::uintptr_t>(recv_bufs_ + buf * kMaxMessage),
		    kMaxMessage + kSgeSlack, recv_mr_->lkey};
	ibv_recv_wr wr{}, *bad = nullptr;
	wr.wr_id = buf;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (int rc = ibv_post_srq_recv(srq_, &wr, &bad))
		fail("ibv_post_srq_recv of buffer %llu: %s",
		     static_cast<unsigned long long>(buf), std::strerror(rc));
}

// One credit Send at a time, each waited for: the credit buffer is reused.
void srq_server::grant(connection &c, std::uint32_t count)
{
	credit_msg &m = credits_[c.index];
	m = {kMagic, count};
	if (int rc = one_sge_wr(IBV_WR_SEND, &m, sizeof(m), credit_mr_->lkey, c.index)
			     .post(c.id->qp))
		fail("ibv_post_send of a credit to client %u: %s", c.index, std::strerror(rc));
	ibv_wc wc{};
	if (!poll_one(send_cq_, wc, kTimeoutMs))
		fail("the credit Send to client %u did not complete", c.index);
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != c.index)
		fail("credit Send to client %u: %s (wr_id %llu)", c.index,
		     ibv_wc_status_str(wc.status), static_cast<unsigned long long>(wc.wr_id));
	c.granted += count;
}

connection &srq_server::by_qp_num(std::uint32_t qp_num)
{
	for (connection &c : conns_)
		if (c.id->qp->qp_num == qp_num)
			return c;
	fail("a completion for QP %u, which is none of the clients'", qp_num);
}

// Waits for the next message on the SRQ, checks it against what its client
// (known by the QP) sends next and returns its receive buffer.
std::uint64_t srq_server::receive_message()
{
	ibv_wc wc{};
	if (!poll_one(recv_cq_, wc, kTimeoutMs))
		fail("no message within %d s", kTimeoutMs / 1000);
	if (wc.status != IBV_WC_SUCCESS)
		fail("receive completion: %s", ibv_wc_status_str(wc.status));
	if (wc.opcode != IBV_WC_RECV || wc.wr_id >= depth_)
		fail("receive completion with opcode %d, wr_id %llu", wc.opcode,
		     static_cast<unsigned long long>(wc.wr_id));
	connection &c = by_qp_num(wc.qp_num);
	const std::uint32_t seq = c.received;
	if (seq >= c.granted && !(seq == kMessages && c.granted == kMessages))
		fail("client %u sent message %u with credit for %u", c.index, seq, c.granted);

	const std::uint8_t *got = recv_bufs_ + wc.wr_id * kMaxMessage;
	const std::uint32_t n = make_message(expected_, c.index, seq);
	if (wc.byte_len != n)
		fail("client %u message %u: %u bytes, expected %u", c.index, seq, wc.byte_len, n);
	if (std::memcmp(got, expected_, n) != 0) {
		message_header h{};
		if (n >= sizeof(h))
			std::memcpy(&h, got, sizeof(h));
		std::uint32_t at = 0;
		while (got[at] == expected_[at])
			at++;
		fail("client %u message %u (%u bytes): byte %u differs; header says client %u "
		     "message %u",
		     c.index, seq, n, at, h.client, h.seq);
	}
	c.received++;
	return wc.wr_id;
}

// The next async event of the device within TIMEOUT_MS, acknowledged (a
// QP or SRQ is destroyed only once its events are); false if none came.
// xiw's port events (its netdev came up, changed address) are passed
// over: they say nothing about the SRQ and its QPs.
bool srq_server::next_async_event(int timeout_ms, ibv_async_event &ev)
{
	using clock = std::chrono::steady_clock;
	const auto until = clock::now() + std::chrono::milliseconds(timeout_ms);
	for (;;) {
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
					  until - clock::now())
					  .count();
		pollfd pfd{ctx_->async_fd, POLLIN, 0};
		if (poll(&pfd, 1, static_cast<int>(std::max<decltype(left)>(left, 0))) != 1)
			return false;
		if (ibv_get_async_event(ctx_, &ev))
			die("ibv_get_async_event");
		ibv_ack_async_event(&ev);
		if (ev.event_type != IBV_EVENT_PORT_ACTIVE &&
		    ev.event_type != IBV_EVENT_GID_CHANGE)
			return true;
	}
}

void srq_server::expect_no_async_event(int timeout_ms)
{
	ibv_async_event ev{};
	if (next_async_event(timeout_ms, ev))
		fail("unexpected async event: %s", ibv_event_type_str(ev.event_type));
}

// The limit fires when a receive taken leaves fewer than it posted: not at
// kLimit posted, but at kLimit - 1, and then never again.  No receive is
// posted in between, so the dip is exact.
void srq_server::limit_event()
{
	g_check = "limit armed";
	for (std::uint32_t buf = 0; buf < kLimitPosted; buf++)
		post_receive(buf);
	ibv_srq_attr arm{};
	arm.srq_limit = kLimit;
	if (int rc = ibv_modify_srq(srq_, &arm, IBV_SRQ_LIMIT))
		fail("ibv_modify_srq srq_limit %u: %s", kLimit, std::strerror(rc));
	if (const std::uint32_t limit = query().srq_limit; limit != kLimit)
		fail("srq_limit %u after arming %u", limit, kLimit);
	pass();

	g_check = strf("no limit event with %u posted", kLimit);
	std::vector<std::uint64_t> taken;
	for (connection &c : conns_)
		grant(c, kLimitShare);
	for (std::uint32_t i = 0; i < kLimitPosted - kLimit; i++)
		taken.push_back(receive_message());
	expect_no_async_event(kQuietMs);
	if (const std::uint32_t limit = query().srq_limit; limit != kLimit)
		fail("srq_limit %u before the limit was crossed, expected %u", limit, kLimit);
	pass();

	g_check = "limit event";
	grant(conns_[0], 1);
	taken.push_back(receive_message());
	ibv_async_event ev{};
	if (!next_async_event(kTimeoutMs, ev))
		fail("no async event within %d s of %u posted with srq_limit %u", kTimeoutMs / 1000,
		     kLimit - 1, kLimit);
	if (ev.event_type != IBV_EVENT_SRQ_LIMIT_REACHED || ev.element.srq != srq_)
		fail("got %s%s, expected %s", ibv_event_type_str(ev.event_type),
		     ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED ? " of another SRQ" : "",
		     ibv_event_type_str(IBV_EVENT_SRQ_LIMIT_REACHED));
	pass();

	g_check = "limit disarmed";
	if (const std::uint32_t limit = query().srq_limit; limit != 0)
		fail("srq_limit %u after the event, expected 0", limit);
	pass();

	// Back to a full SRQ: what was taken, and what was never posted.
	for (std::uint64_t buf : taken)
		post_receive(buf);
	for (std::uint32_t buf = kLimitPosted; buf < depth_; buf++)
		post_receive(buf);
}

// Each client gets its next credit once its last batch arrived; each
// receive is posted again as soon as its message is checked.
void srq_server::data()
{
	g_check = strf("%u clients x %u messages", kClients, kMessages);
	std::uint32_t clients_done = 0;
	while (clients_done < kClients) {
		for (connection &c : conns_)
			if (c.received == c.granted && c.granted < kMessages)
				grant(c, std::min(kBatch, kMessages - c.granted));
		const std::uint64_t buf = receive_message();
		post_receive(buf);
		clients_done = 0;
		for (const connection &c : conns_)
			clients_done += c.received == kMessages + 1;
		expect_no_async_event(0);
	}
	pass();

	g_check = "limit event only once";
	expect_no_async_event(kQuietMs);
	if (const std::uint32_t limit = query().srq_limit; limit != 0)
		fail("srq_limit %u, expected 0", limit);
	pass();
}

// Every client's bye arrived, so all its Sends completed: the connection
// moved to Error loses nothing the client waits for.
void srq_server::last_wqe_reached()
{
	g_check = "last wqe reached";
	ibv_qp *qp = conns_[0].id->qp;
	ibv_qp_attr attr{};
	attr.qp_state = IBV_QPS_ERR;
	if (int rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		fail("ibv_modify_qp to IBV_QPS_ERR: %s", std::strerror(rc));
	ibv_async_event ev{};
	if (!next_async_event(kTimeoutMs, ev))
		fail("no async event within %d s of the QP's move to Error", kTimeoutMs / 1000);
	if (ev.event_type != IBV_EVENT_QP_LAST_WQE_REACHED || ev.element.qp != qp)
		fail("got %s%s, expected %s", ibv_event_type_str(ev.event_type),
		     ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED ? " of another QP" : "",
		     ibv_event_type_str(IBV_EVENT_QP_LAST_WQE_REACHED));
	pass();
}

// The QP in Error closed its connection abortively; the others close
// gracefully.  Then the SRQ goes, its QPs gone.
void srq_server::cleanup()
{
	g_check = "cleanup";
	for (std::size_t i = 1; i < conns_.size(); i++)
		if (rdma_disconnect(conns_[i].id))
			die("rdma_disconnect");
	for (std::uint32_t left = kClients; left;) {
		rdma_cm_event *ev = next_cm_event(channel_, "disconnect");
		if (ev->event != RDMA_CM_EVENT_DISCONNECTED)
			fail("%s (status %d) while disconnecting", rdma_event_str(ev->event),
			     ev->status);
		for (connection &c : conns_)
			if (c.id == ev->id && !c.disconnected) {
				c.disconnected = true;
				left--;
			}
		rdma_ack_cm_event(ev);
	}
	for (connection &c : conns_) {
		rdma_destroy_qp(c.id);
		if (rdma_destroy_id(c.id))
			die("rdma_destroy_id");
	}
	if (int rc = ibv_destroy_srq(srq_))
		fail("ibv_destroy_srq without QPs: %s", std::strerror(rc));
	if (ibv_dereg_mr(recv_mr_) || ibv_dereg_mr(credit_mr_))
		die("ibv_dereg_mr");
	if (ibv_destroy_cq(recv_cq_) || ibv_destroy_cq(send_cq_))
		die("ibv_destroy_cq");
	if (ibv_dealloc_pd(pd_))
		die("ibv_dealloc_pd");
	std::free(recv_bufs_);
	if (rdma_destroy_id(listen_id_))
		die("rdma_destroy_id");
	rdma_destroy_event_channel(channel_);
	pass();
}

int run_server(const char *addr, const char *port)
{
	srq_server server;
	server.listen(addr, port);
	server.check_attributes();
	server.create_queues();
	server.accept_clients();
	server.check_qps_on_srq();
	server.limit_event();
	server.data();
	server.last_wqe_reached();
	server.cleanup();
	return 0;
}

// ---- client ------------------------------------------------------------------

void post_message(rdma_cm_id *id, ibv_mr *mr, std::uint8_t *slot, std::uint32_t client,
		  std::uint32_t seq, bool signaled)
{
	const std::uint32_t n = make_message(slot, client, seq);
	one_sge_wr w(IBV_WR_SEND, slot, n, mr->lkey, seq);
	if (!signaled)
		w.wr.send_flags = 0;
	if (int rc = w.post(id->qp))
		fail("ibv_post_send of message %u: %s", seq, std::strerror(rc));
}

int run_client(const char *addr, const char *port)
{
	g_check = "client";
	// One credit receive: the next credit comes only after the batch this
	// one allows.
	ibv_qp_init_attr attr = xiw_test::rc_qp_attr(kBatch, 1);
	rdma_cm_id *id = xiw_test::endpoint_to(addr, port, &attr);

	const std::size_t bytes = std::size_t{kBatch} * kMaxMessage;
	auto *slots = static_cast<std::uint8_t *>(std::aligned_alloc(4096, bytes));
	if (!slots)
		die("aligned_alloc");
	ibv_mr *mr = ibv_reg_mr(id->pd, slots, bytes, IBV_ACCESS_LOCAL_WRITE);
	credit_msg credit{};
	ibv_mr *credit_mr = rdma_reg_msgs(id, &credit, sizeof(credit));
	if (!mr || !credit_mr)
		die("register memory");
	if (rdma_post_recv(id, nullptr, &credit, sizeof(credit), credit_mr))
		die("rdma_post_recv");

	rdma_conn_param param = conn_param();
	if (rdma_connect(id, &param))
		fail("rdma_connect: %s", std::strerror(errno));
	const rdma_conn_param &accepted = id->event->param.conn;
	accept_info info{};
	if (accepted.private_data && accepted.private_data_len >= sizeof(info))
		std::memcpy(&info, accepted.private_data, sizeof(info));
	if (info.magic != kMagic || info.client >= kClients)
		fail("no client index in the accept private data (%u bytes)",
		     accepted.private_data_len);
	g_check = strf("client %u: %u messages, disconnected", info.client, kMessages);

	for (std::uint32_t sent = 0; sent < kMessages;) {
		ibv_wc wc{};
		if (!poll_one(id->recv_cq, wc, kTimeoutMs))
			fail("no credit within %d s after %u messages", kTimeoutMs / 1000, sent);
		if (wc.status != IBV_WC_SUCCESS || wc.byte_len != sizeof(credit) ||
		    credit.magic != kMagic)
			fail("bad credit after %u messages: %s, %u bytes", sent,
			     ibv_wc_status_str(wc.status), wc.byte_len);
		const std::uint32_t count = credit.count;
		if (count == 0 || count > kBatch || sent + count > kMessages)
			fail("credit for %u messages after %u", count, sent);
		if (rdma_post_recv(id, nullptr, &credit, sizeof(credit), credit_mr))
			die("rdma_post_recv");
		for (std::uint32_t i = 0; i < count; i++)
			post_message(id, mr, slots + std::size_t{i} * kMaxMessage, info.client,
				     sent + i, true);
		for (std::uint32_t i = 0; i < count; i++) {
			if (!poll_one(id->send_cq, wc, kTimeoutMs))
				fail("message %u did not complete", sent + i);
			if (wc.status != IBV_WC_SUCCESS || wc.wr_id != sent + i)
				fail("message %u: %s (wr_id %llu)", sent + i,
				     ibv_wc_status_str(wc.status),
				     static_cast<unsigned long long>(wc.wr_id));
		}
		sent += count;
	}
	// The bye tells the server that every message before it completed.
	// Its own completion is not waited for: the server may end the
	// connection as soon as the bye arrives.
	post_message(id, mr, slots, info.client, kMessages, false);
	if (!xiw_test::wait_disconnect(id, kTimeoutMs))
		fail("the server did not disconnect within %d s", kTimeoutMs / 1000);

	if (rdma_dereg_mr(credit_mr) || ibv_dereg_mr(mr))
		die("deregister memory");
	rdma_destroy_ep(id);
	std::free(slots);
	pass();
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 4 || (std::strcmp(argv[1], "server") && std::strcmp(argv[1], "client"))) {
		std::fprintf(stderr, "usage: %s server|client ADDR PORT\n", argv[0]);
		return 2;
	}
	if (std::strcmp(argv[1], "server") == 0)
		return run_server(argv[2], argv[3]);
	return run_client(argv[2], argv[3]);
}
