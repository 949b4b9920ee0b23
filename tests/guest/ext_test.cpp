// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// RFC 7306 atomics and immediate data through the verbs and xiwdv APIs,
// between two iWARP hosts over librdmacm.  Runs as a server and a client:
//   xiw_ext_test server ADDR PORT
//   xiw_ext_test client ADDR PORT CASE...
//   xiw_ext_test caps DEVICE
// The client runs each CASE on a connection of its own (the connect
// private data names the case) and prints "ext: CASE: ok", or fails with
// exit status 1 and says why.  The server exports a 4 MiB buffer in the
// accept private data and then follows the client's control messages; it
// serves connection after connection until a client sends CASE "quit",
// then exits 0, or 1 if any check it made failed.
//
// CASE (client):
//   atomic_verbs     FetchAdd and CmpSwap (match, mismatch) via ibv_post_send
//   atomic_qp_ex     the same through ibv_qp_ex (ibv_wr_atomic_*)
//   masked_wire      random masked FetchAdd / CmpSwap / Swap against
//                    <xiw/atomic_ops.h>, pipelined in batches
//                    (XIW_EXT_MASKED_OPS, default 24576; XIW_EXT_SEED)
//   write_imm        RDMA Write with Immediate of 0 B .. 1 MiB, the 64-bit
//                    immediate of xiwdv and standalone Immediate Data
//   send_imm         Send with Immediate of 0 B .. 100000 B, also 64-bit
//   solicited        only a solicited message wakes a solicited-only CQ
//   order            200 back-to-back writes with immediate complete in
//                    order, each one's data in place
//   no_receive_imm, no_receive_send_imm, atomic_unaligned,
//   atomic_no_right  remote errors: the expected completion status, then
//                    flushes; the server reports "N bytes changed"
//   unsupported      toward a peer without the extensions every extension
//                    opcode fails to post with EOPNOTSUPP and the QP keeps
//                    working for Send, Write and Read
//   quit             ends the server
// caps DEVICE: ibv_query_device on DEVICE reports IBV_ATOMIC_GLOB.
#include <infiniband/verbs.h>
#include <infiniband/xiwdv.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <xiw/atomic_ops.h>

#include "ext_framework.h"
#include "rdma_test_util.h"

#include <poll.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace ext_fw = xiw_test::ext_fw;
using namespace ext_fw; // fail(), pattern() ...
using xiw_test::die;
using xiw_test::poll_one;
using xiw_test::strf;
using u64 = std::uint64_t;
using clock_type = std::chrono::steady_clock;

// ---- layout of the 4 MiB buffer of either side ---------------------------

constexpr std::size_t buf_size = 4u << 20;
// Server: 64-bit words the atomics work on.  Client: 8-byte result slots.
constexpr std::size_t atomic_off = 0;
constexpr std::size_t atomic_len = 16u << 10;
// Client: what RDMA Write sends and RDMA Read fetches for the atomics.
constexpr std::size_t stage_off = 16u << 10;
// Server: "the first message is out" flag of the solicited case.
constexpr std::size_t flag_off = 32u << 10;
// Server: the buffer of receives that RDMA Write with Immediate consumes;
// nothing may ever land there.
constexpr std::size_t scratch_off = 48u << 10;
constexpr std::size_t scratch_len = 4096;
// Both: the data of writes and sends, at the same offset on both sides.
constexpr std::size_t data_off = 64u << 10;
constexpr std::uint8_t guard = 0xee;
constexpr std::uint32_t error_seed = 0x5eed;

constexpr unsigned window = 64; // work requests in flight per batch

// ---- cases -----------------------------------------------------------------

enum class test_case : std::uint32_t {
	atomic_verbs = 1,
	atomic_qp_ex,
	masked_wire,
	write_imm,
	send_imm,
	solicited,
	order,
	no_receive_imm,
	no_receive_send_imm,
	atomic_unaligned,
	atomic_no_right,
	unsupported,
	quit,
};

// Server -> client in the accept private data: the server's buffer.
struct accept_pd {
	std::uint32_t magic;
	std::uint32_t rkey;           // all rights (remote atomic if the
				      // device let us register it)
	std::uint32_t rkey_no_atomic; // remote read and write only
	std::uint32_t atomic_mr;      // rkey carries remote atomic
	u64 addr;
	u64 len;
};

// ---- control messages ------------------------------------------------------

enum class op : std::uint32_t { expect = 1, ready, step, check, result, bye };
enum class plan_kind : std::uint32_t { write_imm = 1, send_imm, order, solicited, plain_send };

struct ctrl_msg {
	op what;
	plan_kind kind; // expect
	std::uint32_t seed;
	std::uint32_t ok; // result
	u64 off;	  // check
	u64 len;	  // check
	char text[168];	  // result: what went wrong
};

// ---- what ext_framework.h needs to know ------------------------------------

struct traits {
	using case_type = test_case;
	using msg = ctrl_msg;
	using target = accept_pd;
	static constexpr std::uint32_t pd_magic = 0x78697745; // "xiwE"
	static constexpr op result = op::result;
	static constexpr op bye = op::bye;
	static constexpr ext_fw::case_name<test_case> cases[] = {
		{test_case::atomic_verbs, "atomic_verbs"},
		{test_case::atomic_qp_ex, "atomic_qp_ex"},
		{test_case::masked_wire, "masked_wire"},
		{test_case::write_imm, "write_imm"},
		{test_case::send_imm, "send_imm"},
		{test_case::solicited, "solicited"},
		{test_case::order, "order"},
		{test_case::no_receive_imm, "no_receive_imm"},
		{test_case::no_receive_send_imm, "no_receive_send_imm"},
		{test_case::atomic_unaligned, "atomic_unaligned"},
		{test_case::atomic_no_right, "atomic_no_right"},
		{test_case::unsupported, "unsupported"},
		{test_case::quit, "quit"},
	};

	static bool is_error_case(test_case c)
	{
		return c == test_case::no_receive_imm || c == test_case::no_receive_send_imm ||
		       c == test_case::atomic_unaligned || c == test_case::atomic_no_right;
	}

	static bool target_fits(const accept_pd &t) { return t.len >= buf_size; }

	static constexpr std::size_t server_buf_size = buf_size;
	static constexpr std::uint32_t server_send_depth = 16;
	static constexpr std::uint32_t server_recv_depth = 256;
	static constexpr std::size_t client_buf_size = buf_size;
	static constexpr std::uint32_t client_send_depth = 128;
	static constexpr std::uint32_t client_send_sge = 1;
	static bool uses_qp_ex(test_case c) { return c == test_case::atomic_qp_ex; }
	static constexpr std::uint64_t qp_ex_ops =
		IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_SEND;
	static constexpr const char *qp_ex_ops_text = "atomics, write, read, send";
};

// ---- message plans shared by both sides ------------------------------------

enum class item_op : std::uint32_t {
	write_imm,   // IBV_WR_RDMA_WRITE_WITH_IMM
	write_imm64, // xiwdv_ext_rdma_write_imm64
	imm_only,    // xiwdv_ext_immediate_data
	send_imm,    // IBV_WR_SEND_WITH_IMM
	send_imm64,  // xiwdv_ext_send_imm64
	send,	     // IBV_WR_SEND
};

const char *item_op_name(item_op o)
{
	switch (o) {
	case item_op::write_imm: return "RDMA Write with Immediate";
	case item_op::write_imm64: return "RDMA Write with 64-bit Immediate";
	case item_op::imm_only: return "Immediate Data";
	case item_op::send_imm: return "Send with Immediate";
	case item_op::send_imm64: return "Send with 64-bit Immediate";
	case item_op::send: return "Send";
	}
	return "?";
}

bool is_write(item_op o)
{
	return o == item_op::write_imm || o == item_op::write_imm64 || o == item_op::imm_only;
}

bool is_imm64(item_op o)
{
	return o == item_op::write_imm64 || o == item_op::imm_only || o == item_op::send_imm64;
}

struct item {
	item_op op;
	u64 off; // data, same offset at both ends
	std::uint32_t len;
	std::uint32_t seed;
	u64 imm; // 32-bit for the verbs opcodes
	bool solicited;
};

// What the client sends after an "expect" of KIND, in order; the server
// derives the same list to check what arrives.
std::vector<item> make_plan(plan_kind kind, std::uint32_t seed)
{
	std::vector<item> items;
	u64 next = data_off;
	auto add = [&](item_op o, std::uint32_t len, bool solicited = false) {
		const auto i = static_cast<std::uint32_t>(items.size());
		item it{};
		it.op = o;
		it.len = len;
		it.seed = seed * 1000 + i;
		it.solicited = solicited;
		std::uint32_t lo = (seed + 7) * 0x01000193u ^ (i + 1) * 0x9e3779b9u;
		it.imm = is_imm64(o) ? (u64)(0xa5000000u | (i + 1)) << 32 | lo : lo;
		if (o != item_op::imm_only) {
			it.off = next;
			next += (len + 64 + 63) & ~u64{63};
		}
		items.push_back(it);
	};
	switch (kind) {
	case plan_kind::write_imm:
		// First, so that the message before it is a Send: the
		// receiver's byte_len must then be 0 (xiwdv.h).
		add(item_op::imm_only, 0);
		for (std::uint32_t n : {0u, 1u, 4096u, 100000u, 1u << 20})
			add(item_op::write_imm, n);
		add(item_op::write_imm64, 4096);
		break;
	case plan_kind::send_imm:
		for (std::uint32_t n : {0u, 1u, 4096u, 100000u})
			add(item_op::send_imm, n);
		add(item_op::send_imm64, 4096);
		add(item_op::send_imm64, 0);
		break;
	case plan_kind::order:
		for (std::uint32_t i = 0; i < 200; i++) {
			std::uint32_t h = (i + 1) * 2654435761u;
			add(item_op::write_imm, i % 10 == 3 ? 0 : 1 + (h >> 7) % 16384);
		}
		break;
	case plan_kind::solicited:
		add(item_op::write_imm, 64, false);
		add(item_op::write_imm, 64, true);
		break;
	case plan_kind::plain_send:
		add(item_op::send, 4096);
		add(item_op::send, 65536);
		break;
	}
	if (next > buf_size) {
		std::fprintf(stderr, "plan does not fit the buffer\n");
		std::abort();
	}
	return items;
}

// =============================================================================
// Server
// =============================================================================

constexpr u64 data_wr_id = 0x10000;

struct server_conn : ext_fw::server_conn_base<traits> {
	ibv_mr *mr = nullptr;
	ibv_mr *mr_no_atomic = nullptr;
	bool atomic_mr = false;

	// What ext_fw::run_server() calls.
	bool setup();
	accept_pd target() const;
	bool handle(const ctrl_msg &m, ctrl_msg &r);
	std::size_t changed(std::string &note) const;
	void release();
};

// Checks the receive completion WC of plan item IT (number I).
std::string check_item(server_conn &c, const item &it, std::size_t i, const ibv_wc &wc)
{
	std::string what = strf("message %zu (%s, %u bytes)", i, item_op_name(it.op), it.len);
	if (wc.status != IBV_WC_SUCCESS)
		return what + ": receive completed with " + status_str(wc.status);
	if (wc.wr_id != data_wr_id + i)
		return what + strf(": completed receive %" PRIu64 " (receives out of order?)",
				   static_cast<u64>(wc.wr_id - data_wr_id));
	const ibv_wc_opcode want_op = is_write(it.op) ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	if (wc.opcode != want_op)
		return what + strf(": wc opcode %d, expected %d", wc.opcode, want_op);
	const bool with_imm = it.op != item_op::send;
	if (!!(wc.wc_flags & IBV_WC_WITH_IMM) != with_imm)
		return what + (with_imm ? ": IBV_WC_WITH_IMM not set" : ": IBV_WC_WITH_IMM set");
	if (with_imm) {
		const auto lo = static_cast<std::uint32_t>(it.imm);
		if (wc.imm_data != htobe32(lo))
			return what + strf(": imm_data 0x%08x, expected 0x%08x",
					   be32toh(wc.imm_data), lo);
		// A verbs sender's 32-bit immediate arrives as a 64-bit value with
		// a zero high half (xiwdv.h).
		if (c.xiw && xiwdv_wc_imm64(&wc) != it.imm)
			return what + strf(": 64-bit immediate 0x%016" PRIx64 ", expected 0x%016" PRIx64,
					   static_cast<u64>(xiwdv_wc_imm64(&wc)), it.imm);
	}
	if (wc.byte_len != it.len)
		return what + strf(": byte_len %u", wc.byte_len);
	if (it.op == item_op::imm_only)
		return "";
	// The data must be in place by the time its completion is seen.
	std::size_t bad = mismatch_at(c.buf + it.off, it.len, it.seed);
	if (bad != it.len)
		return what + strf(": data wrong at byte %zu when its completion was seen", bad);
	if (c.buf[it.off + it.len] != guard)
		return what + ": the byte behind the data changed";
	return "";
}

// Solicited case: item 0 unsolicited, item 1 with IBV_SEND_SOLICITED; the
// receive CQ was armed for solicited completions only.
std::string check_solicited(server_conn &c, const std::vector<item> &items)
{
	// The client writes the flag word right after item 0: once it is
	// set, item 0 has been received (one TCP stream, in order).
	volatile u64 *flag = reinterpret_cast<u64 *>(c.buf + flag_off);
	const auto until = clock_type::now() + std::chrono::seconds(60);
	while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) == 0) {
		if (clock_type::now() > until)
			return "the flag written after the first message never arrived";
		std::this_thread::sleep_for(std::chrono::microseconds(100));
	}
	pollfd pfd{c.id->recv_cq_channel->fd, POLLIN, 0};
	int n = poll(&pfd, 1, 300);
	if (n < 0)
		die("poll");
	if (n > 0)
		return "an RDMA Write with Immediate without IBV_SEND_SOLICITED raised an event "
		       "on a CQ armed for solicited completions only";
	ibv_wc wc{};
	n = ibv_poll_cq(c.id->recv_cq, 1, &wc);
	if (n != 1)
		return "the completion of the unsolicited RDMA Write with Immediate is not in the CQ";
	if (std::string e = check_item(c, items[0], 0, wc); !e.empty())
		return e;
	ctrl_msg step{};
	step.what = op::step;
	if (!c.send(step))
		return "control send failed";
	n = poll(&pfd, 1, 30000);
	if (n < 0)
		die("poll");
	if (n == 0)
		return "no completion event within 30 s for a solicited RDMA Write with Immediate";
	ibv_cq *ev_cq = nullptr;
	void *ev_ctx = nullptr;
	if (ibv_get_cq_event(c.id->recv_cq_channel, &ev_cq, &ev_ctx))
		die("ibv_get_cq_event");
	ibv_ack_cq_events(ev_cq, 1);
	if (ev_cq != c.id->recv_cq)
		return "completion event for another CQ";
	n = ibv_poll_cq(c.id->recv_cq, 1, &wc);
	if (n != 1)
		return "completion event without a completion in the CQ";
	return check_item(c, items[1], 1, wc);
}

// "expect": post the receives of the plan, say "ready", check what comes.
void serve_expect(server_conn &c, const ctrl_msg &m, ctrl_msg &r)
{
	const std::vector<item> items = make_plan(m.kind, m.seed);
	std::memset(c.buf + data_off, guard, buf_size - data_off);
	std::memset(c.buf + scratch_off, guard, scratch_len);
	__atomic_store_n(reinterpret_cast<u64 *>(c.buf + flag_off), 0, __ATOMIC_RELEASE);
	for (std::size_t i = 0; i < items.size(); i++) {
		const item &it = items[i];
		// Writes with immediate consume a receive but place nothing in
		// it: give them the scratch area, checked below.  Sends land in
		// the data buffer, with room for 64 bytes more than sent.
		if (is_write(it.op))
			post_recv(c.id->qp, data_wr_id + i, c.buf + scratch_off, 64, c.mr->lkey);
		else
			post_recv(c.id->qp, data_wr_id + i, c.buf + it.off, it.len + 64,
				  c.mr->lkey);
	}
	c.post_ctrl_recv();
	if (m.kind == plan_kind::solicited && ibv_req_notify_cq(c.id->recv_cq, 1))
		die("ibv_req_notify_cq");
	ctrl_msg ready{};
	ready.what = op::ready;
	if (!c.send(ready)) {
		r.ok = 0;
		return;
	}
	std::string err;
	if (m.kind == plan_kind::solicited) {
		err = check_solicited(c, items);
	} else {
		for (std::size_t i = 0; i < items.size() && err.empty(); i++) {
			ibv_wc wc{};
			if (!poll_one(c.id->recv_cq, wc, op_timeout_ms))
				err = strf("message %zu (%s, %u bytes) did not arrive within %d s",
					   i, item_op_name(items[i].op), items[i].len,
					   op_timeout_ms / 1000);
			else
				err = check_item(c, items[i], i, wc);
		}
	}
	if (err.empty())
		for (std::size_t i = 0; i < scratch_len; i++)
			if (c.buf[scratch_off + i] != guard) {
				err = "a write with immediate placed data into its receive buffer";
				break;
			}
	r.ok = err.empty();
	if (!r.ok) {
		server_fail(c, err);
		std::snprintf(r.text, sizeof(r.text), "%s", err.c_str());
	}
}

// ---- what ext_fw::run_server() calls ----------------------------------------

bool server_conn::setup()
{
	if (traits::is_error_case(which))
		fill(buf, buf_size, error_seed);
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	mr = ibv_reg_mr(id->pd, buf, buf_size, rw | IBV_ACCESS_REMOTE_ATOMIC);
	atomic_mr = mr != nullptr;
	if (!mr) // a device without atomics may refuse the right
		mr = ibv_reg_mr(id->pd, buf, buf_size, rw);
	mr_no_atomic = ibv_reg_mr(id->pd, buf, buf_size, rw);
	ctrl_mr = rdma_reg_msgs(id, &ctrl, sizeof(ctrl));
	if (!mr || !mr_no_atomic || !ctrl_mr)
		die("register memory");
	return true;
}

accept_pd server_conn::target() const
{
	return {traits::pd_magic, mr->rkey, mr_no_atomic->rkey, atomic_mr,
		reinterpret_cast<std::uintptr_t>(buf), buf_size};
}

// The control messages of a data case.
bool server_conn::handle(const ctrl_msg &m, ctrl_msg &r)
{
	switch (m.what) {
	case op::expect:
		serve_expect(*this, m, r);
		return true;
	case op::check:
		if (m.off < data_off || m.off + m.len > buf_size) {
			r.ok = 0;
			std::snprintf(r.text, sizeof(r.text), "check out of range");
		} else if (std::size_t bad = mismatch_at(buf + m.off, m.len, m.seed); bad != m.len) {
			r.ok = 0;
			std::snprintf(r.text, sizeof(r.text), "written data wrong at byte %zu of %" PRIu64,
				      bad, static_cast<u64>(m.len));
			server_fail(*this, r.text);
		}
		post_ctrl_recv();
		return true;
	default:
		return false;
	}
}

// Error cases: nothing in the buffer may have changed.
std::size_t server_conn::changed(std::string &) const
{
	return bytes_changed(buf, buf_size, error_seed);
}

void server_conn::release()
{
	rdma_dereg_mr(ctrl_mr);
	ibv_dereg_mr(mr);
	ibv_dereg_mr(mr_no_atomic);
}

// =============================================================================
// Client
// =============================================================================

struct client : ext_fw::client_base<traits> {
	u64 raddr(std::size_t off) const { return target.addr + off; }

	ctrl_msg expect(op what)
	{
		ctrl_msg m = recv_ctrl();
		if (m.what == op::result && what != op::result && !m.ok) {
			m.text[sizeof(m.text) - 1] = 0;
			fail("the server says: %s", m.text);
		}
		if (m.what != what)
			fail("control message %u from the server, expected %u",
			     static_cast<unsigned>(m.what), static_cast<unsigned>(what));
		return m;
	}

	// ---- one-sided operations, through ibv_qp_ex when the QP has it ----

	void write(std::size_t loff, u64 raddr, std::uint32_t len, std::uint32_t rkey)
	{
		one_sided(true, loff, raddr, len, rkey);
	}
	void read(std::size_t loff, u64 raddr, std::uint32_t len, std::uint32_t rkey)
	{
		one_sided(false, loff, raddr, len, rkey);
	}

	// A verbs FetchAdd (CMP false) or CmpSwap (CMP true) whose original
	// value lands at local offset SLOT; returns its completion.
	ibv_wc atomic(bool cmp, u64 raddr, std::uint32_t rkey, u64 compare_add, u64 swap,
		      std::size_t slot)
	{
		const char *what = cmp ? "CmpSwap" : "FetchAdd";
		if (qpx) {
			ibv_wr_start(qpx);
			qpx->wr_id = 3;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			if (cmp)
				ibv_wr_atomic_cmp_swp(qpx, rkey, raddr, compare_add, swap);
			else
				ibv_wr_atomic_fetch_add(qpx, rkey, raddr, compare_add);
			ibv_wr_set_sge(qpx, mr->lkey, laddr(slot), 8);
			complete_qpx(what);
		} else {
			ibv_send_wr wr{};
			wr.opcode = cmp ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr.wr.atomic.remote_addr = raddr;
			wr.wr.atomic.rkey = rkey;
			wr.wr.atomic.compare_add = compare_add;
			wr.wr.atomic.swap = swap;
			post_sge(wr, 3, slot, 8, what);
		}
		return wait_send(what);
	}
};

// ---- a, b: FetchAdd and CmpSwap --------------------------------------------

void atomic_basics(client &cl)
{
	if (!cl.target.atomic_mr)
		fail("the server could not register its buffer with IBV_ACCESS_REMOTE_ATOMIC");
	const std::uint32_t rkey = cl.target.rkey;
	// Remote: guard, value, guard at atomic_off + 64.
	const u64 word = cl.raddr(atomic_off + 64);
	const u64 g0 = 0x1122334455667788ull, g1 = 0x99aabbccddeeff00ull;
	// Local: the result slot at 64, 0xcd bytes on either side of it.
	const std::size_t slot = atomic_off + 64;

	auto set = [&](u64 v) {
		store64(cl.buf + stage_off, g0);
		store64(cl.buf + stage_off + 8, v);
		store64(cl.buf + stage_off + 16, g1);
		cl.write(stage_off, word - 8, 24, rkey);
	};
	auto get = [&]() {
		std::memset(cl.buf + stage_off + 64, 0, 24);
		cl.read(stage_off + 64, word - 8, 24, rkey);
		if (load64(cl.buf + stage_off + 64) != g0 || load64(cl.buf + stage_off + 80) != g1)
			fail("an atomic changed the words next to its target");
		return load64(cl.buf + stage_off + 72);
	};
	auto run = [&](const char *what, bool cmp, u64 compare_add, u64 swap, u64 want_orig) {
		std::memset(cl.buf + slot - 8, 0xcd, 24);
		ibv_wc wc = cl.atomic(cmp, word, rkey, compare_add, swap, slot);
		if (wc.status != IBV_WC_SUCCESS)
			fail("%s: %s", what, status_str(wc.status));
		const ibv_wc_opcode want = cmp ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD;
		if (wc.opcode != want)
			fail("%s: wc opcode %d, expected %d", what, wc.opcode, want);
		if (wc.byte_len != 8)
			fail("%s: byte_len %u, expected 8", what, wc.byte_len);
		const u64 got = load64(cl.buf + slot);
		if (got != want_orig)
			fail("%s: returned 0x%016" PRIx64 ", the original value was 0x%016" PRIx64,
			     what, got, want_orig);
		for (std::size_t i : {slot - 8, slot + 8})
			if (load64(cl.buf + i) != 0xcdcdcdcdcdcdcdcdull)
				fail("%s: wrote outside its 8-byte local buffer", what);
	};
	auto expect_value = [&](const char *what, u64 want) {
		const u64 got = get();
		if (got != want)
			fail("%s: remote value 0x%016" PRIx64 ", expected 0x%016" PRIx64, what, got,
			     want);
	};

	const u64 v0 = 0x0123456789abcdefull;
	set(v0);
	run("FetchAdd", false, 0x0000000100000001ull, 0, v0);
	expect_value("FetchAdd", v0 + 0x0000000100000001ull);
	const u64 v1 = v0 + 0x0000000100000001ull;
	run("FetchAdd of 0", false, 0, 0, v1);
	expect_value("FetchAdd of 0", v1);
	const u64 s = 0xfeedfacecafebeefull;
	run("CmpSwap (match)", true, v1, s, v1);
	expect_value("CmpSwap (match)", s);
	run("CmpSwap (mismatch)", true, s ^ 0x100, 0x1111111111111111ull, s);
	expect_value("CmpSwap (mismatch)", s);
	run("CmpSwap (mismatch in the high half)", true, s ^ (1ull << 63), 0, s);
	expect_value("CmpSwap (mismatch in the high half)", s);
	// Carries across the 32-bit halves and the 64-bit wrap.
	set(0x00000000ffffffffull);
	run("FetchAdd (carry into bit 32)", false, 1, 0, 0x00000000ffffffffull);
	expect_value("FetchAdd (carry into bit 32)", 0x0000000100000000ull);
	set(~u64{0} - 2);
	run("FetchAdd (64-bit wrap)", false, 5, 0, ~u64{0} - 2);
	expect_value("FetchAdd (64-bit wrap)", 2);
	// A run of increments, each seeing the one before.
	set(1000);
	for (u64 i = 0; i < 50; i++)
		run("FetchAdd (sequence)", false, 3, 0, 1000 + 3 * i);
	expect_value("FetchAdd (sequence)", 1150);
	for (u64 i = 0; i < 20; i++)
		run("CmpSwap (sequence)", true, 1150 + i, 1150 + i + 1, 1150 + i);
	expect_value("CmpSwap (sequence)", 1170);
}

// ---- c: masked atomics against <xiw/atomic_ops.h> ----------------------------

enum class mkind { masked_fa, masked_cs, swap, verbs_fa, verbs_cs };

struct masked_op {
	mkind kind;
	unsigned word;
	u64 a, b, c, d; // see fill_masked_wr
	u64 orig;	// what the model says it returns
	bool match;
};

u64 random_mask(std::mt19937_64 &rng)
{
	static const u64 fields[] = {
		0x8080808080808080ull, 0x8000800080008000ull, 0x8000000080000000ull,
		0x8000000000000000ull, 0x0000000080000000ull, 0x0000000000000001ull,
		0xaaaaaaaaaaaaaaaaull, 0x0000ffff0000ffffull,
	};
	switch (rng() % 8) {
	case 0: return 0;
	case 1: return ~u64{0};
	case 2:
	case 3: return fields[rng() % (sizeof(fields) / sizeof(fields[0]))];
	case 4: return rng() & rng() & rng(); // sparse
	case 5: return rng() | rng();	      // dense
	default: return rng();
	}
}

u64 random_value(std::mt19937_64 &rng)
{
	switch (rng() % 8) {
	case 0: return 0;
	case 1: return ~u64{0};
	case 2: return 0x7fffffffffffffffull;
	case 3: return 0x8000000000000000ull;
	case 4: return 0x00000000ffffffffull;
	default: return rng();
	}
}

void masked_wire(client &cl)
{
	if (!cl.target.atomic_mr)
		fail("the server could not register its buffer with IBV_ACCESS_REMOTE_ATOMIC");
	const char *env_ops = std::getenv("XIW_EXT_MASKED_OPS");
	const char *env_seed = std::getenv("XIW_EXT_SEED");
	const std::size_t total = env_ops ? std::strtoull(env_ops, nullptr, 0) : 24576;
	const u64 seed = env_seed ? std::strtoull(env_seed, nullptr, 0)
				  : static_cast<u64>(clock_type::now().time_since_epoch().count());
	std::printf("ext: masked_wire: %zu operations, seed %" PRIu64 " (XIW_EXT_SEED)\n", total,
		    seed);
	std::fflush(stdout);
	std::mt19937_64 rng(seed);

	constexpr unsigned words = 256;	 // remote 64-bit words per batch
	constexpr unsigned batch = 1024; // operations per batch
	static_assert(words * 8 <= atomic_len && batch * 8 <= atomic_len);
	static_assert(words * 8 <= flag_off - stage_off);
	const std::uint32_t rkey = cl.target.rkey;
	const u64 base = cl.raddr(atomic_off);

	std::size_t n_fa = 0, n_cs = 0, n_cs_match = 0, n_swap = 0, n_verbs = 0, done = 0;
	std::vector<u64> model(words);
	std::vector<masked_op> ops(batch);
	while (done < total) {
		const unsigned n = static_cast<unsigned>(std::min<std::size_t>(batch, total - done));
		for (unsigned w = 0; w < words; w++) {
			model[w] = random_value(rng);
			store64(cl.buf + stage_off + 8 * w, model[w]);
		}
		cl.write(stage_off, base, words * 8, rkey);

		// The plan: every operation applied to the model in posting
		// order (one stream: the responder executes them in order).
		for (unsigned j = 0; j < n; j++) {
			masked_op &o = ops[j];
			const unsigned r = static_cast<unsigned>(rng() % 100);
			o.kind = r < 44 ? mkind::masked_fa
				 : r < 88 ? mkind::masked_cs
				 : r < 94 ? mkind::swap
				 : r < 97 ? mkind::verbs_fa
					  : mkind::verbs_cs;
			o.word = static_cast<unsigned>(rng() % words);
			const u64 cur = model[o.word];
			o.orig = cur;
			o.match = true;
			int swapped = 0;
			switch (o.kind) {
			case mkind::masked_fa: // a: add, d: field boundary mask
				o.a = random_value(rng) ^ rng();
				o.d = random_mask(rng);
				model[o.word] = xiw_masked_fetch_add(cur, o.a, o.d);
				n_fa++;
				break;
			case mkind::masked_cs: { // a: compare, b: swap, c/d: masks
				o.c = random_mask(rng);
				o.d = random_mask(rng);
				o.b = random_value(rng) ^ rng();
				const bool want_match = rng() & 1;
				o.a = cur ^ (rng() & ~o.c); // differs outside the mask only
				if (!want_match && o.c) {
					u64 bits = o.c;
					unsigned skip = static_cast<unsigned>(rng() % std::popcount(o.c));
					while (skip--)
						bits &= bits - 1;
					o.a ^= bits & -bits; // flip one compared bit
				}
				model[o.word] = xiw_masked_cmp_swap(cur, o.a, o.c, o.b, o.d, &swapped);
				o.match = swapped;
				n_cs++;
				n_cs_match += swapped;
				break;
			}
			case mkind::swap: // b: new value
				o.b = random_value(rng) ^ rng();
				model[o.word] = xiw_masked_cmp_swap(cur, 0, 0, o.b, ~u64{0}, &swapped);
				n_swap++;
				break;
			case mkind::verbs_fa:
				o.a = rng();
				model[o.word] = xiw_fetch_add(cur, o.a);
				n_verbs++;
				break;
			case mkind::verbs_cs:
				o.a = (rng() & 1) ? cur : cur ^ (1ull << (rng() % 64));
				o.b = rng();
				model[o.word] = xiw_cmp_swap(cur, o.a, o.b);
				o.match = o.a == cur;
				n_verbs++;
				break;
			}
		}
		std::memset(cl.buf + atomic_off, 0xcd, batch * 8);

		unsigned posted = 0, completed = 0;
		while (completed < n) {
			while (posted < n && posted - completed < window) {
				const masked_op &o = ops[posted];
				const u64 target = base + 8 * o.word;
				ibv_sge sge{cl.laddr(atomic_off + 8 * posted), 8, cl.mr->lkey};
				ibv_send_wr wr{};
				xiwdv_wr_ext ext{};
				switch (o.kind) {
				case mkind::masked_fa:
					xiwdv_ext_masked_fetch_add(&ext, rkey, target, o.a, o.d);
					xiwdv_wr_set_ext(&wr, &ext);
					break;
				case mkind::masked_cs:
					xiwdv_ext_masked_cmp_swap(&ext, rkey, target, o.a, o.c,
								 o.b, o.d);
					xiwdv_wr_set_ext(&wr, &ext);
					break;
				case mkind::swap:
					xiwdv_ext_swap(&ext, rkey, target, o.b);
					xiwdv_wr_set_ext(&wr, &ext);
					break;
				case mkind::verbs_fa:
				case mkind::verbs_cs:
					wr.opcode = o.kind == mkind::verbs_fa
							    ? IBV_WR_ATOMIC_FETCH_AND_ADD
							    : IBV_WR_ATOMIC_CMP_AND_SWP;
					wr.wr.atomic.remote_addr = target;
					wr.wr.atomic.rkey = rkey;
					wr.wr.atomic.compare_add = o.a;
					wr.wr.atomic.swap = o.b;
					break;
				}
				wr.wr_id = posted;
				wr.sg_list = &sge;
				wr.num_sge = 1;
				wr.send_flags = IBV_SEND_SIGNALED;
				cl.post(wr, "masked atomic");
				posted++;
			}
			ibv_wc wc = cl.wait_send("masked atomic");
			const masked_op &o = ops[completed];
			if (wc.status != IBV_WC_SUCCESS)
				fail("operation %zu: %s", done + completed, status_str(wc.status));
			if (wc.wr_id != completed)
				fail("completion of operation %" PRIu64 " where %u was next",
				     static_cast<u64>(wc.wr_id), completed);
			const bool fa = o.kind == mkind::masked_fa || o.kind == mkind::verbs_fa;
			const ibv_wc_opcode want = fa ? IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP;
			if (wc.opcode != want)
				fail("operation %zu: wc opcode %d, expected %d", done + completed,
				     wc.opcode, want);
			if (wc.byte_len != 8)
				fail("operation %zu: byte_len %u", done + completed, wc.byte_len);
			completed++;
		}
		// Every original value, then every final value.
		for (unsigned j = 0; j < n; j++) {
			const masked_op &o = ops[j];
			const u64 got = load64(cl.buf + atomic_off + 8 * j);
			if (got != o.orig)
				fail("operation %zu (kind %d, word %u, a 0x%016" PRIx64 " b 0x%016" PRIx64
				     " c 0x%016" PRIx64 " d 0x%016" PRIx64 "): returned 0x%016" PRIx64
				     ", the model's original is 0x%016" PRIx64,
				     done + j, static_cast<int>(o.kind), o.word, o.a, o.b, o.c, o.d, got,
				     o.orig);
		}
		std::memset(cl.buf + stage_off, 0, words * 8);
		cl.read(stage_off, base, words * 8, rkey);
		for (unsigned w = 0; w < words; w++) {
			const u64 got = load64(cl.buf + stage_off + 8 * w);
			if (got == model[w])
				continue;
			// Name the last operation on that word.
			std::size_t last = n;
			for (unsigned j = 0; j < n; j++)
				if (ops[j].word == w)
					last = j;
			fail("word %u after batch: 0x%016" PRIx64 ", the model says 0x%016" PRIx64
			     " (last operation on it: %zu, kind %d)",
			     w, got, model[w], last == n ? 0 : done + last,
			     last == n ? -1 : static_cast<int>(ops[last].kind));
		}
		done += n;
	}
	std::printf("ext: masked_wire: masked FetchAdd %zu, masked CmpSwap %zu (%zu matched), "
		    "Swap %zu, verbs %zu\n",
		    n_fa, n_cs, n_cs_match, n_swap, n_verbs);
	// The generator must exercise both outcomes, about half each.
	if (n_cs && (n_cs_match * 10 < n_cs * 3 || n_cs_match * 10 > n_cs * 8))
		fail("masked CmpSwap matched %zu times of %zu: the generator is off", n_cs_match,
		     n_cs);
}

// ---- d, e, g: plans of writes and sends with immediate ------------------------

void post_item(client &cl, const item &it, u64 wr_id)
{
	ibv_sge sge{cl.laddr(it.off), it.len, cl.mr->lkey};
	ibv_send_wr wr{};
	xiwdv_wr_ext ext{};
	const u64 raddr = cl.raddr(it.off);
	const auto imm32 = htobe32(static_cast<std::uint32_t>(it.imm));
	switch (it.op) {
	case item_op::write_imm:
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = imm32;
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = cl.target.rkey;
		break;
	case item_op::write_imm64:
		xiwdv_ext_rdma_write_imm64(&ext, cl.target.rkey, raddr, it.imm);
		xiwdv_wr_set_ext(&wr, &ext);
		break;
	case item_op::imm_only:
		xiwdv_ext_immediate_data(&ext, it.imm);
		xiwdv_wr_set_ext(&wr, &ext);
		break;
	case item_op::send_imm:
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = imm32;
		break;
	case item_op::send_imm64:
		xiwdv_ext_send_imm64(&ext, it.imm);
		xiwdv_wr_set_ext(&wr, &ext);
		break;
	case item_op::send:
		wr.opcode = IBV_WR_SEND;
		break;
	}
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = it.op == item_op::imm_only ? 0 : 1;
	wr.send_flags = IBV_SEND_SIGNALED | (it.solicited ? IBV_SEND_SOLICITED : 0);
	cl.post(wr, item_op_name(it.op));
}

ibv_wc_opcode sender_opcode(item_op o)
{
	switch (o) {
	case item_op::write_imm:
	case item_op::write_imm64: return IBV_WC_RDMA_WRITE;
	case item_op::imm_only: return XIWDV_WC_IMMEDIATE_DATA;
	default: return IBV_WC_SEND;
	}
}

void check_sender_wc(const ibv_wc &wc, const item &it, std::size_t i)
{
	if (wc.status != IBV_WC_SUCCESS)
		fail("message %zu (%s, %u bytes): %s", i, item_op_name(it.op), it.len,
		     status_str(wc.status));
	if (wc.wr_id != i)
		fail("completion of message %" PRIu64 " where %zu was next",
		     static_cast<u64>(wc.wr_id), i);
	if (wc.opcode != sender_opcode(it.op))
		fail("message %zu (%s): sender wc opcode %d, expected %d", i, item_op_name(it.op),
		     wc.opcode, sender_opcode(it.op));
}

void ask_expect(client &cl, plan_kind kind, std::uint32_t seed)
{
	ctrl_msg m{};
	m.what = op::expect;
	m.kind = kind;
	m.seed = seed;
	cl.send_ctrl(m);
	cl.expect(op::ready);
}

void run_plan(client &cl, plan_kind kind, std::uint32_t seed, const char *what)
{
	const std::vector<item> items = make_plan(kind, seed);
	for (const item &it : items)
		fill(cl.buf + it.off, it.len, it.seed);
	ask_expect(cl, kind, seed);
	std::size_t posted = 0, completed = 0;
	while (completed < items.size()) {
		while (posted < items.size() && posted - completed < window) {
			post_item(cl, items[posted], posted);
			posted++;
		}
		ibv_wc wc = cl.wait_send(item_op_name(items[completed].op));
		check_sender_wc(wc, items[completed], completed);
		completed++;
	}
	cl.expect_result(what);
}

// ---- f: solicited events ------------------------------------------------------

void solicited(client &cl)
{
	const std::vector<item> items = make_plan(plan_kind::solicited, 11);
	for (const item &it : items)
		fill(cl.buf + it.off, it.len, it.seed);
	ask_expect(cl, plan_kind::solicited, 11);
	post_item(cl, items[0], 0);
	check_sender_wc(cl.wait_send("unsolicited write"), items[0], 0);
	// Tell the server the first message is out.
	store64(cl.buf + stage_off, 1);
	cl.write(stage_off, cl.raddr(flag_off), 8, cl.target.rkey);
	cl.expect(op::step);
	post_item(cl, items[1], 1);
	check_sender_wc(cl.wait_send("solicited write"), items[1], 1);
	cl.expect_result("solicited");
}

// ---- h, i, j: remote errors ----------------------------------------------------

// Completions of WRs posted at once: [success]*, WANT, [flush]*.
void expect_error_sequence(client &cl, std::size_t n, ibv_wc_status want, const char *what)
{
	bool seen = false;
	for (std::size_t i = 0; i < n; i++) {
		ibv_wc wc{};
		if (!poll_one(cl.id->send_cq, wc, 30000))
			fail("%s: completion %zu of %zu did not come", what, i + 1, n);
		const ibv_wc_status ok = seen ? IBV_WC_WR_FLUSH_ERR : IBV_WC_SUCCESS;
		if (wc.status == want && !seen) {
			seen = true;
			std::printf("ext: %s: %s (as expected)\n", what, status_str(wc.status));
			continue;
		}
		if (wc.status != ok)
			fail("%s: completion %zu: %s, expected %s%s", what, i + 1,
			     status_str(wc.status), seen ? "" : "success or ",
			     seen ? status_str(IBV_WC_WR_FLUSH_ERR) : status_str(want));
	}
	if (!seen)
		fail("%s: no %s", what, status_str(want));
}

void post_read8(client &cl, u64 wr_id)
{
	cl.post_rdma(false, wr_id, stage_off, cl.raddr(data_off), 8, cl.target.rkey);
}

// After a remote error the QP is in error: what is posted now flushes.
void expect_flush(client &cl)
{
	post_read8(cl, 99);
	ibv_wc wc{};
	if (!poll_one(cl.id->send_cq, wc, 30000))
		fail("the RDMA Read after the error did not complete");
	if (wc.status != IBV_WC_WR_FLUSH_ERR)
		fail("the RDMA Read after the error: %s, expected %s", status_str(wc.status),
		     status_str(IBV_WC_WR_FLUSH_ERR));
}

void no_receive(client &cl, bool send)
{
	// The message with immediate and an RDMA Read behind it: a Write or
	// Send may complete before the peer's Terminate is in, the Read
	// cannot (RFC 5040 §7, Terminate ends the stream).
	fill(cl.buf + data_off, 64, 3);
	ibv_sge sge{cl.laddr(data_off), 64, cl.mr->lkey};
	ibv_send_wr wr{};
	wr.wr_id = 1;
	if (send) {
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	} else {
		// Zero-length: the buffer must stay unchanged.
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.wr.rdma.remote_addr = cl.raddr(data_off);
		wr.wr.rdma.rkey = cl.target.rkey;
	}
	wr.imm_data = htobe32(0x1234);
	wr.send_flags = IBV_SEND_SIGNALED;
	cl.post(wr, send ? "Send with Immediate" : "RDMA Write with Immediate");
	post_read8(cl, 2);
	expect_error_sequence(cl, 2, IBV_WC_REM_INV_REQ_ERR, g_case);
	expect_flush(cl);
}

void atomic_error(client &cl, u64 raddr, std::uint32_t rkey, ibv_wc_status want)
{
	std::memset(cl.buf + atomic_off, 0xcd, 8);
	ibv_wc wc = cl.atomic(false, raddr, rkey, 0x0101010101010101ull, 0, atomic_off);
	if (wc.status != want)
		fail("FetchAdd: %s, expected %s", status_str(wc.status), status_str(want));
	std::printf("ext: %s: FetchAdd: %s (as expected)\n", g_case, status_str(wc.status));
	expect_flush(cl);
}

// ---- k: a peer without the extensions ----------------------------------------

void unsupported(client &cl)
{
	const std::uint32_t rkey = cl.target.rkey;
	ibv_sge sge8{cl.laddr(atomic_off), 8, cl.mr->lkey};
	ibv_sge sge64{cl.laddr(data_off), 64, cl.mr->lkey};
	auto atomic_wr = [&](ibv_wr_opcode opc) {
		ibv_send_wr wr{};
		wr.wr_id = 50;
		wr.sg_list = &sge8;
		wr.num_sge = 1;
		wr.opcode = opc;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.atomic.remote_addr = cl.raddr(atomic_off);
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
		return wr;
	};
	ibv_send_wr fa = atomic_wr(IBV_WR_ATOMIC_FETCH_AND_ADD);
	cl.expect_refused(fa, EOPNOTSUPP, "FetchAdd");
	ibv_send_wr cs = atomic_wr(IBV_WR_ATOMIC_CMP_AND_SWP);
	cl.expect_refused(cs, EOPNOTSUPP, "CmpSwap");
	{
		ibv_send_wr wr{};
		wr.wr_id = 51;
		wr.sg_list = &sge64;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htobe32(1);
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = cl.raddr(data_off);
		wr.wr.rdma.rkey = rkey;
		cl.expect_refused(wr, EOPNOTSUPP, "RDMA Write with Immediate");
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		cl.expect_refused(wr, EOPNOTSUPP, "Send with Immediate");
	}
	{
		ibv_send_wr wr{};
		xiwdv_wr_ext ext{};
		xiwdv_ext_masked_fetch_add(&ext, rkey, cl.raddr(atomic_off), 1, 0);
		xiwdv_wr_set_ext(&wr, &ext);
		wr.wr_id = 52;
		wr.sg_list = &sge8;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		cl.expect_refused(wr, EOPNOTSUPP, "XIWDV_WR_EXTENDED masked FetchAdd");
		ibv_send_wr imm{};
		xiwdv_ext_immediate_data(&ext, 7);
		xiwdv_wr_set_ext(&imm, &ext);
		imm.wr_id = 53;
		imm.send_flags = IBV_SEND_SIGNALED;
		cl.expect_refused(imm, EOPNOTSUPP, "XIWDV_WR_EXTENDED Immediate Data");
		ibv_send_wr w64{};
		xiwdv_ext_rdma_write_imm64(&ext, rkey, cl.raddr(data_off), 1ull << 40);
		xiwdv_wr_set_ext(&w64, &ext);
		w64.wr_id = 54;
		w64.sg_list = &sge64;
		w64.num_sge = 1;
		w64.send_flags = IBV_SEND_SIGNALED;
		cl.expect_refused(w64, EOPNOTSUPP, "XIWDV_WR_EXTENDED RDMA Write with 64-bit Immediate");
	}
	cl.expect_nothing_queued();

	// Send: a valid Send chained in front of a FetchAdd is posted, the
	// FetchAdd is refused, and both Sends arrive byte-exact.
	const std::vector<item> items = make_plan(plan_kind::plain_send, 21);
	for (const item &it : items)
		fill(cl.buf + it.off, it.len, it.seed);
	ask_expect(cl, plan_kind::plain_send, 21);
	{
		ibv_sge s0{cl.laddr(items[0].off), items[0].len, cl.mr->lkey};
		ibv_send_wr send0{};
		send0.wr_id = 0;
		send0.sg_list = &s0;
		send0.num_sge = 1;
		send0.opcode = IBV_WR_SEND;
		send0.send_flags = IBV_SEND_SIGNALED;
		ibv_send_wr fa2 = atomic_wr(IBV_WR_ATOMIC_FETCH_AND_ADD);
		send0.next = &fa2;
		ibv_send_wr *bad = nullptr;
		int rc = ibv_post_send(cl.id->qp, &send0, &bad);
		if (rc != EOPNOTSUPP || bad != &fa2)
			fail("ibv_post_send of [Send, FetchAdd]: returned %d, bad_wr %s; expected "
			     "EOPNOTSUPP at the FetchAdd",
			     rc, bad == &fa2 ? "the FetchAdd" : bad == &send0 ? "the Send" : "other");
		ibv_wc w{};
		if (!poll_one(cl.id->send_cq, w, 10000))
			fail("the Send in front of the refused FetchAdd was not posted");
		check_sender_wc(w, items[0], 0);
	}
	post_item(cl, items[1], 1);
	check_sender_wc(cl.wait_send("Send"), items[1], 1);
	cl.expect_result("Send after refused posts");

	// RDMA Write, checked by the server and read back.
	const std::uint32_t len = 65536;
	fill(cl.buf + data_off, len, 33);
	cl.write(data_off, cl.raddr(data_off), len, rkey);
	ctrl_msg m{};
	m.what = op::check;
	m.off = data_off;
	m.len = len;
	m.seed = 33;
	cl.send_ctrl(m);
	cl.expect_result("RDMA Write after refused posts");
	const std::size_t back = data_off + (1u << 20);
	std::memset(cl.buf + back, 0, len);
	cl.read(back, cl.raddr(data_off), len, rkey);
	if (std::size_t bad = mismatch_at(cl.buf + back, len, 33); bad != len)
		fail("RDMA Read after refused posts: data wrong at byte %zu", bad);
}

// What case WHICH does on its connection (see ext_fw::run_client()).
void run_case(client &cl, test_case which)
{
	switch (which) {
	case test_case::atomic_verbs:
	case test_case::atomic_qp_ex:
		atomic_basics(cl);
		break;
	case test_case::masked_wire:
		masked_wire(cl);
		break;
	case test_case::write_imm:
		run_plan(cl, plan_kind::write_imm, 1, "write_imm");
		break;
	case test_case::send_imm:
		run_plan(cl, plan_kind::send_imm, 2, "send_imm");
		break;
	case test_case::solicited:
		solicited(cl);
		break;
	case test_case::order:
		run_plan(cl, plan_kind::order, 3, "order");
		break;
	case test_case::no_receive_imm:
	case test_case::no_receive_send_imm:
		no_receive(cl, which == test_case::no_receive_send_imm);
		break;
	case test_case::atomic_unaligned:
		atomic_error(cl, cl.raddr(atomic_off + 4), cl.target.rkey, IBV_WC_REM_OP_ERR);
		break;
	case test_case::atomic_no_right:
		atomic_error(cl, cl.raddr(atomic_off), cl.target.rkey_no_atomic,
			     IBV_WC_REM_ACCESS_ERR);
		break;
	case test_case::unsupported:
		unsupported(cl);
		break;
	case test_case::quit:
		break;
	}
}

// ---- l: device capabilities ---------------------------------------------------

int run_caps(const char *dev_name)
{
	g_case = "device_caps";
	ibv_context *ctx = ext_fw::open_device(dev_name);
	ibv_device_attr attr{};
	if (int rc = ibv_query_device(ctx, &attr))
		fail("ibv_query_device: %s", std::strerror(rc));
	if (!xiwdv_is_xiw_context(ctx))
		fail("%s is not an xiw device (vendor_id 0x%x, part %u)", dev_name, attr.vendor_id,
		     attr.vendor_part_id);
	if (attr.atomic_cap != IBV_ATOMIC_GLOB)
		fail("atomic_cap %d, expected IBV_ATOMIC_GLOB (%d)", attr.atomic_cap,
		     IBV_ATOMIC_GLOB);
	if (attr.max_qp_rd_atom < 1 || attr.max_qp_init_rd_atom < 1)
		fail("max_qp_rd_atom %d, max_qp_init_rd_atom %d", attr.max_qp_rd_atom,
		     attr.max_qp_init_rd_atom);
	ibv_close_device(ctx);
	std::printf("ext: device_caps: ok (%s: atomic_cap IBV_ATOMIC_GLOB, max_qp_rd_atom %d, "
		    "max_qp_init_rd_atom %d)\n",
		    dev_name, attr.max_qp_rd_atom, attr.max_qp_init_rd_atom);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	ext_fw::g_tool = "ext";
	if (argc == 3 && std::strcmp(argv[1], "caps") == 0)
		return run_caps(argv[2]);
	if (argc == 4 && std::strcmp(argv[1], "server") == 0)
		return ext_fw::run_server(server_conn{}, argv[2], argv[3], "");
	if (argc >= 5 && std::strcmp(argv[1], "client") == 0)
		return ext_fw::run_client(argv[2], argv[3], argv + 4, argc - 4, run_case);
	std::fprintf(stderr,
		     "usage: %s server ADDR PORT | client ADDR PORT CASE... | caps DEVICE\n",
		     argv[0]);
	return 2;
}
