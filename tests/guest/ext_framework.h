// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// What xiw_ext_test and xiw_commit_test share: a server that takes one
// connection per test case, the case named in the connect private data, its
// memory described in the accept private data, and follows the client's
// control messages (Sends both ways); a client that opens such a connection,
// exchanges control messages and waits for its one-sided operations.
//
// A program describes itself in a traits struct T:
//   case_type          enum class of its cases; case_type::quit ends the server
//   msg                its control message, with op what, std::uint32_t ok and
//                      char text[] (what went wrong)
//   target             its accept private data, starting with std::uint32_t magic
//   pd_magic           first word of the connect and accept private data
//   result, bye        msg.what of a result (the server's answer to each
//                      message) and of the last message of a case
//   cases              case_name<case_type>[]: what the client takes by name
//   is_error_case(c)   after case C the connection is dead: no control
//                      messages, the server counts what changed in its memory
//                      once the client has gone (serve_error())
//   target_fits(t)     the accept private data describes enough memory
//   server_buf_size, server_send_depth, server_recv_depth
//   client_buf_size, client_send_depth, client_send_sge
//   uses_qp_ex(c)      whether the client QP of case C is an ibv_qp_ex
//   qp_ex_ops, qp_ex_ops_text
//                      send_ops_flags of that ibv_qp_ex, and how a failure
//                      to create it names them
// and its server's side of a connection in a type derived from
// server_conn_base<T> (see run_server()).
#ifndef XIW_TESTS_EXT_FRAMEWORK_H
#define XIW_TESTS_EXT_FRAMEWORK_H

#include <infiniband/verbs.h>
#include <infiniband/xiwdv.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "rdma_test_util.h"

#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace xiw_test::ext_fw {

// The program's name in what it prints ("ext", "commit"): main() sets it
// first.  The case under way, for fail().
inline const char *g_tool = "?";
inline const char *g_case = "setup";

// Prints "TOOL CASE: FAIL: message" and exits with status 1.
[[noreturn]] __attribute__((format(printf, 1, 2))) inline void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(g_tool, g_case, fmt, ap);
}

inline const char *status_str(ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

constexpr int op_timeout_ms = 60000;

// ---- data patterns ---------------------------------------------------------

inline std::uint8_t pattern(std::uint32_t seed, std::size_t i)
{
	std::uint32_t x = (seed + 1) * 0x9e3779b1u ^ static_cast<std::uint32_t>(i) * 0x85ebca77u;
	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return static_cast<std::uint8_t>(x ^ (x >> 24));
}

inline void fill(std::uint8_t *p, std::size_t n, std::uint32_t seed)
{
	for (std::size_t i = 0; i < n; i++)
		p[i] = pattern(seed, i);
}

// Index of the first byte that differs, or n.
inline std::size_t mismatch_at(const std::uint8_t *p, std::size_t n, std::uint32_t seed)
{
	for (std::size_t i = 0; i < n; i++)
		if (p[i] != pattern(seed, i))
			return i;
	return n;
}

// How many of the N bytes at P differ from the pattern of SEED.
inline std::size_t bytes_changed(const std::uint8_t *p, std::size_t n, std::uint32_t seed)
{
	std::size_t changed = 0;
	for (std::size_t i = 0; i < n; i++)
		changed += p[i] != pattern(seed, i);
	return changed;
}

inline std::uint64_t load64(const std::uint8_t *p)
{
	std::uint64_t v;
	std::memcpy(&v, p, sizeof(v));
	return v;
}

inline void store64(std::uint8_t *p, std::uint64_t v)
{
	std::memcpy(p, &v, sizeof(v));
}

// N zeroed bytes, page aligned.
inline std::uint8_t *alloc_buffer(std::size_t n)
{
	void *p = std::aligned_alloc(4096, n);
	if (!p)
		die("aligned_alloc");
	std::memset(p, 0, n);
	return static_cast<std::uint8_t *>(p);
}

// ---- verbs -----------------------------------------------------------------

inline void post_recv(ibv_qp *qp, std::uint64_t wr_id, void *addr, std::uint32_t len,
		      std::uint32_t lkey)
{
	if (int rc = post_recv_one(qp, addr, len, lkey, wr_id))
		die_rc("ibv_post_recv", rc);
}

// Room for 16 RDMA Reads and atomics in flight each way.
constexpr std::uint8_t rdma_depth = 16;

// Opens DEVICE by name, or fails.
inline ibv_context *open_device(const char *dev_name)
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list");
	ibv_context *ctx = nullptr;
	for (int i = 0; i < n; i++)
		if (std::strcmp(ibv_get_device_name(list[i]), dev_name) == 0)
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		fail("no device %s", dev_name);
	return ctx;
}

// ---- cases -----------------------------------------------------------------

template <class Case> struct case_name {
	Case c;
	const char *name;
};

template <class T> const char *name_of(typename T::case_type c)
{
	for (const auto &n : T::cases)
		if (n.c == c)
			return n.name;
	return "?";
}

// Client -> server in the connect private data.
template <class Case> struct connect_pd {
	std::uint32_t magic;
	Case which;
};

// =============================================================================
// Server
// =============================================================================

// Server: connections served, checks that failed.
inline int g_failures = 0;
inline int g_connections = 0;

constexpr std::uint64_t server_ctrl_wr_id = 1;

// The framework's part of a connection of the server.  The program derives
// its connection from it, adding its memory and the member functions
// run_server() calls.
template <class T> struct server_conn_base {
	using traits = T;
	using msg = typename T::msg;

	rdma_cm_id *id = nullptr;
	typename T::case_type which{};
	bool xiw = false;	     // the device speaks xiwdv
	std::uint8_t *buf = nullptr; // T::server_buf_size bytes, zeroed
	struct {
		msg send;
		msg recv;
	} ctrl{};
	ibv_mr *ctrl_mr = nullptr; // registered by the program's setup()

	void post_ctrl_recv()
	{
		post_recv(id->qp, server_ctrl_wr_id, &ctrl.recv, sizeof(ctrl.recv), ctrl_mr->lkey);
	}

	bool send(const msg &m)
	{
		ctrl.send = m;
		one_sge_wr w(IBV_WR_SEND, &ctrl.send, sizeof(ctrl.send), ctrl_mr->lkey,
			     server_ctrl_wr_id);
		if (int rc = w.post(id->qp))
			die_rc("ibv_post_send", rc);
		ibv_wc wc{};
		if (!poll_one(id->send_cq, wc, op_timeout_ms)) {
			std::printf("%s server: control send timed out\n", g_tool);
			return false;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			std::printf("%s server: control send: %s\n", g_tool, status_str(wc.status));
			return false;
		}
		return true;
	}
};

template <class Conn> void server_fail(const Conn &c, const std::string &what)
{
	std::printf("%s server: FAIL: %s: %s\n", g_tool, name_of<typename Conn::traits>(c.which),
		    what.c_str());
	std::fflush(stdout);
	g_failures++;
}

// Control loop of a case, until "bye" or the client is gone.  The program's
// c.handle(m, r) answers the messages it knows in R, reposting the control
// receive itself (ext posts the receives of a plan in front of it: receives
// are consumed in order), and returns false for any other.
template <class Conn> void serve_ctrl(Conn &c)
{
	using T = typename Conn::traits;
	for (;;) {
		ibv_wc wc{};
		if (!poll_one(c.id->recv_cq, wc, 600000)) {
			server_fail(c, "no control message for 10 minutes");
			return;
		}
		if (wc.status != IBV_WC_SUCCESS)
			return; // flushed: the client went away
		if (wc.wr_id != server_ctrl_wr_id) {
			server_fail(c, strf("unexpected receive completion %" PRIu64,
					    static_cast<std::uint64_t>(wc.wr_id)));
			return;
		}
		const typename T::msg m = c.ctrl.recv;
		typename T::msg r{};
		r.what = T::result;
		r.ok = 1;
		if (m.what == T::bye) {
			c.send(r);
			return;
		}
		if (!c.handle(m, r)) {
			r.ok = 0;
			std::snprintf(r.text, sizeof(r.text), "unknown control message %u",
				      static_cast<unsigned>(m.what));
			c.post_ctrl_recv();
		}
		if (!c.send(r))
			return;
	}
}

// Error cases: no receive posted, nothing to follow; once the client has
// gone, the program's c.changed(note) counts the bytes of its memory that
// changed where they should not have (and may say more in NOTE).
template <class Conn> void serve_error(Conn &c)
{
	if (!wait_disconnect(c.id, 120000)) {
		server_fail(c, "the client did not disconnect within 120 s");
		return;
	}
	std::string note;
	const std::size_t changed = c.changed(note);
	std::printf("%s server: %s: connection closed, %zu bytes changed%s\n", g_tool,
		    name_of<typename Conn::traits>(c.which), changed, note.c_str());
	std::fflush(stdout);
	if (changed)
		g_failures++;
}

// Serves connection after connection on ADDR:PORT until the case "quit";
// returns the exit status.  Each connection starts as a copy of PROTO (what
// the program's connections share) and calls the program's
//   bool c.setup()         after c.which, c.xiw and c.buf are set: fills
//                          and registers its memory and c.ctrl_mr; false:
//                          reject the connection
//   T::target c.target()   the accept private data
//   bool c.handle(m, r)    see serve_ctrl()
//   size_t c.changed(note) see serve_error()
//   void c.release()       undoes setup()
// NOTE follows "listening on ADDR:PORT", the line the scripts wait for.
template <class Conn>
int run_server(const Conn &proto, const char *addr, const char *port, const char *note)
{
	using T = typename Conn::traits;
	rdma_cm_id *listen_id = xiw_test::listen_on(
		g_tool, addr, port, rc_qp_attr(T::server_send_depth, T::server_recv_depth), 4,
		note);

	for (;;) {
		Conn c = proto;
		if (rdma_get_request(listen_id, &c.id))
			die("rdma_get_request");
		connect_pd<typename T::case_type> req{};
		const rdma_conn_param &cp = c.id->event->param.conn;
		if (cp.private_data && cp.private_data_len >= sizeof(req))
			std::memcpy(&req, cp.private_data, sizeof(req));
		if (req.magic != T::pd_magic) {
			std::printf("%s server: connect request without our private data, rejected\n",
				    g_tool);
			rdma_reject(c.id, nullptr, 0);
			rdma_destroy_ep(c.id);
			continue;
		}
		c.which = req.which;
		c.xiw = xiwdv_is_xiw_context(c.id->verbs);
		g_connections++;
		c.buf = alloc_buffer(T::server_buf_size);
		const bool registered = c.setup();

		// The error cases need a QP without any receive posted.
		const bool quit = c.which == T::case_type::quit;
		const bool ctrl = !T::is_error_case(c.which) && !quit;
		if (ctrl && registered)
			c.post_ctrl_recv();
		bool peer_gone = false;
		const typename T::target t = c.target();
		rdma_conn_param p = conn_param_with(t, rdma_depth);
		if (!registered) {
			rdma_reject(c.id, nullptr, 0);
			peer_gone = true;
		} else if (rdma_accept(c.id, &p)) {
			server_fail(c, strf("rdma_accept: %s", std::strerror(errno)));
		} else if (quit) {
			peer_gone = wait_disconnect(c.id, 30000);
		} else if (ctrl) {
			serve_ctrl(c);
		} else {
			serve_error(c);
			peer_gone = true;
		}
		// A synchronous rdma_disconnect() waits for a DISCONNECTED
		// event, and an id gets only one: not after the peer's.
		if (!peer_gone)
			rdma_disconnect(c.id);
		c.release();
		rdma_destroy_ep(c.id);
		std::free(c.buf);
		if (quit) {
			std::printf("%s server: %d connections, %d failures\n", g_tool, g_connections,
				    g_failures);
			return g_failures ? 1 : 0;
		}
	}
}

// =============================================================================
// Client
// =============================================================================

constexpr std::uint32_t client_recv_depth = 8; // control messages
constexpr std::uint64_t ctrl_send_wr_id = 0xc0;
constexpr std::uint64_t ctrl_recv_wr_id = 0xc1;

// The framework's part of the client.  The program derives its client from
// it, adding the operations of its cases.
template <class T> struct client_base {
	using traits = T;
	using msg = typename T::msg;

	rdma_cm_id *id = nullptr;
	ibv_qp_ex *qpx = nullptr; // set: control sends and one_sided() use ibv_wr_*()
	std::uint8_t *buf = nullptr;
	ibv_mr *mr = nullptr;
	struct {
		msg send;
		msg recv[client_recv_depth];
	} ctrl{};
	ibv_mr *ctrl_mr = nullptr;
	typename T::target target{};

	// Connects to the server at ADDR:PORT for case WHICH, through an
	// ibv_qp_ex if QP_EX.
	void open(const char *addr, const char *port, typename T::case_type which, bool qp_ex)
	{
		ibv_qp_init_attr attr = rc_qp_attr(T::client_send_depth, client_recv_depth);
		attr.cap.max_send_sge = T::client_send_sge;
		id = xiw_test::endpoint_to(addr, port, qp_ex ? nullptr : &attr);
		if (qp_ex) {
			ibv_qp_init_attr_ex ax{};
			ax.qp_type = IBV_QPT_RC;
			ax.cap = attr.cap;
			ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			ax.pd = id->pd;
			ax.send_ops_flags = T::qp_ex_ops;
			if (rdma_create_qp_ex(id, &ax))
				fail("rdma_create_qp_ex with send_ops_flags (%s): %s", T::qp_ex_ops_text,
				     std::strerror(errno));
			qpx = ibv_qp_to_qp_ex(id->qp);
			if (!qpx)
				fail("ibv_qp_to_qp_ex returned NULL");
		}
		buf = alloc_buffer(T::client_buf_size);
		mr = ibv_reg_mr(id->pd, buf, T::client_buf_size, IBV_ACCESS_LOCAL_WRITE);
		ctrl_mr = rdma_reg_msgs(id, &ctrl, sizeof(ctrl));
		if (!mr || !ctrl_mr)
			die("register memory");
		for (std::uint32_t i = 0; i < client_recv_depth; i++)
			post_ctrl_recv(i);

		connect_pd<typename T::case_type> req{T::pd_magic, which};
		rdma_conn_param p = conn_param_with(req, rdma_depth);
		if (rdma_connect(id, &p))
			fail("rdma_connect: %s (the server says why it rejected, if it did)",
			     std::strerror(errno));
		const rdma_conn_param &cp = id->event->param.conn;
		if (!cp.private_data || cp.private_data_len < sizeof(target))
			fail("no target description in the accept private data (%u bytes)",
			     cp.private_data_len);
		std::memcpy(&target, cp.private_data, sizeof(target));
		if (target.magic != T::pd_magic || !T::target_fits(target))
			fail("bad target description from the server");
	}

	void close()
	{
		rdma_disconnect(id);
		rdma_dereg_mr(ctrl_mr);
		ibv_dereg_mr(mr);
		rdma_destroy_ep(id);
		std::free(buf);
		id = nullptr;
		qpx = nullptr;
	}

	std::uint64_t laddr(std::size_t off) const
	{
		return reinterpret_cast<std::uintptr_t>(buf + off);
	}

	void post_ctrl_recv(std::uint32_t slot)
	{
		post_recv(id->qp, ctrl_recv_wr_id + slot, &ctrl.recv[slot], sizeof(msg),
			  ctrl_mr->lkey);
	}

	void post(ibv_send_wr &wr, const char *what)
	{
		ibv_send_wr *bad = nullptr;
		if (int rc = ibv_post_send(id->qp, &wr, &bad))
			fail("ibv_post_send of %s: %s", what, std::strerror(rc));
	}

	void complete_qpx(const char *what)
	{
		if (int rc = ibv_wr_complete(qpx))
			fail("ibv_wr_complete of %s: %s", what, std::strerror(rc));
	}

	ibv_wc wait_send(const char *what)
	{
		ibv_wc wc{};
		if (!poll_one(id->send_cq, wc, op_timeout_ms))
			fail("no completion for %s within %d s", what, op_timeout_ms / 1000);
		return wc;
	}

	// Waits for the completion of WHAT: it must succeed with opcode OPC.
	void wait_ok(const char *what, ibv_wc_opcode opc)
	{
		ibv_wc wc = wait_send(what);
		if (wc.status != IBV_WC_SUCCESS)
			fail("%s: %s", what, status_str(wc.status));
		if (wc.opcode != opc)
			fail("%s: wc opcode %d, expected %d", what, wc.opcode, opc);
	}

	void send_ctrl(const msg &m)
	{
		ctrl.send = m;
		const std::uint64_t a = reinterpret_cast<std::uintptr_t>(&ctrl.send);
		if (qpx) {
			ibv_wr_start(qpx);
			qpx->wr_id = ctrl_send_wr_id;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_send(qpx);
			ibv_wr_set_sge(qpx, ctrl_mr->lkey, a, sizeof(msg));
			complete_qpx("control send");
		} else {
			ibv_sge sge{a, sizeof(msg), ctrl_mr->lkey};
			ibv_send_wr wr{};
			wr.wr_id = ctrl_send_wr_id;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			post(wr, "control send");
		}
		wait_ok("control send", IBV_WC_SEND);
	}

	msg recv_ctrl()
	{
		ibv_wc wc{};
		if (!poll_one(id->recv_cq, wc, 2 * op_timeout_ms))
			fail("no control message from the server within %d s",
			     2 * op_timeout_ms / 1000);
		if (wc.status != IBV_WC_SUCCESS)
			fail("control receive: %s", status_str(wc.status));
		if (wc.wr_id < ctrl_recv_wr_id || wc.wr_id >= ctrl_recv_wr_id + client_recv_depth)
			fail("unexpected receive completion %" PRIu64,
			     static_cast<std::uint64_t>(wc.wr_id));
		const auto slot = static_cast<std::uint32_t>(wc.wr_id - ctrl_recv_wr_id);
		msg m = ctrl.recv[slot];
		post_ctrl_recv(slot);
		return m;
	}

	// The server's answer to the message before: it must say ok.
	void expect_result(const char *what)
	{
		msg r = recv_ctrl();
		r.text[sizeof(r.text) - 1] = 0;
		if (r.what != T::result)
			fail("%s: control message %u from the server, expected a result", what,
			     static_cast<unsigned>(r.what));
		if (!r.ok)
			fail("%s: the server says: %s", what, r.text);
	}

	// Ends a case that keeps its connection working.
	void bye()
	{
		msg m{};
		m.what = T::bye;
		send_ctrl(m);
		expect_result("bye");
	}

	// Posts WR (WHAT; its opcode and remote part set) through ibv_post_send
	// as WR_ID, signaled, with one SGE: LEN bytes at local offset LOFF.
	void post_sge(ibv_send_wr &wr, std::uint64_t wr_id, std::size_t loff, std::uint32_t len,
		      const char *what)
	{
		ibv_sge sge{laddr(loff), len, mr->lkey};
		wr.wr_id = wr_id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		post(wr, what);
	}

	// Posts an RDMA Write (WRITE true) or Read of LEN bytes between local
	// offset LOFF and RADDR through ibv_post_send, signaled, as WR_ID.
	void post_rdma(bool write, std::uint64_t wr_id, std::size_t loff, std::uint64_t raddr,
		       std::uint32_t len, std::uint32_t rkey)
	{
		ibv_send_wr wr{};
		wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		post_sge(wr, wr_id, loff, len, write ? "RDMA Write" : "RDMA Read");
	}

	// The same through ibv_qp_ex when the QP has it, waited for.
	void one_sided(bool write, std::size_t loff, std::uint64_t raddr, std::uint32_t len,
		       std::uint32_t rkey)
	{
		const char *what = write ? "RDMA Write" : "RDMA Read";
		const std::uint64_t wr_id = write ? 1 : 2;
		if (qpx) {
			ibv_wr_start(qpx);
			qpx->wr_id = wr_id;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			if (write)
				ibv_wr_rdma_write(qpx, rkey, raddr);
			else
				ibv_wr_rdma_read(qpx, rkey, raddr);
			ibv_wr_set_sge(qpx, mr->lkey, laddr(loff), len);
			complete_qpx(what);
		} else {
			post_rdma(write, wr_id, loff, raddr, len, rkey);
		}
		wait_ok(what, write ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ);
	}

	// ---- toward a peer without the extensions ----

	// WR (WHAT) must fail to post with EOPNOTSUPP, bad_wr pointing to it.
	// ibv_post_send() of WR must fail with ERR and name WR in bad_wr.
	void expect_refused(ibv_send_wr &wr, int err, const char *what)
	{
		ibv_send_wr *bad = nullptr;
		int rc = ibv_post_send(id->qp, &wr, &bad);
		if (rc != err)
			fail("ibv_post_send of %s returned %d (%s), expected %s", what, rc,
			     rc ? std::strerror(rc) : "success", std::strerror(err));
		if (bad != &wr)
			fail("ibv_post_send of %s: bad_wr does not point to it", what);
	}

	// After refused posts: nothing of them was queued, the QP still works.
	void expect_nothing_queued()
	{
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
		ibv_wc wc{};
		if (int n = ibv_poll_cq(id->send_cq, 1, &wc); n != 0)
			fail("a refused work request produced a completion (wr_id %" PRIu64 ", %s)",
			     static_cast<std::uint64_t>(wc.wr_id), status_str(wc.status));
		ibv_qp_attr qa{};
		ibv_qp_init_attr qia{};
		if (ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &qia))
			die("ibv_query_qp");
		if (qa.qp_state != IBV_QPS_RTS)
			fail("QP state %d after the refused posts, expected RTS", qa.qp_state);
	}
};

// Runs each case of NAMES (N of them) on a connection of its own, printing
// "TOOL: CASE: ok (S s)"; returns 2 for an unknown name.  RUN_CASE does the
// case on the open connection; after it, a connection that still works (not
// an error case, not "quit") ends with "bye".
template <class Client>
int run_client(const char *addr, const char *port, char **names, int n,
	       void (*run_case)(Client &cl, typename Client::traits::case_type which))
{
	using T = typename Client::traits;
	using clock = std::chrono::steady_clock;
	for (int i = 0; i < n; i++) {
		const case_name<typename T::case_type> *found = nullptr;
		for (const auto &c : T::cases)
			if (std::strcmp(c.name, names[i]) == 0)
				found = &c;
		if (!found) {
			std::fprintf(stderr, "unknown case %s\n", names[i]);
			return 2;
		}
		g_case = found->name;
		const auto t0 = clock::now();
		const typename T::case_type which = found->c;
		Client cl;
		cl.open(addr, port, which, T::uses_qp_ex(which));
		run_case(cl, which);
		if (!T::is_error_case(which) && which != T::case_type::quit)
			cl.bye();
		cl.close();
		const double s = std::chrono::duration<double>(clock::now() - t0).count();
		std::printf("%s: %s: ok (%.1f s)\n", g_tool, found->name, s);
		std::fflush(stdout);
	}
	return 0;
}

} // namespace xiw_test::ext_fw

#endif
