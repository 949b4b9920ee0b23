// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Byte-checked Send/Recv, RDMA Write and RDMA Read over librdmacm, for any
// iWARP device (xiw, upstream siw).  Runs as a server and a client:
//   xiw_datapath_test server ADDR PORT
//   xiw_datapath_test client ADDR PORT [MAX_SIZE [stream]]
// The client drives; every size from 0 bytes up to MAX_SIZE (default
// 4 MiB) goes each way, with a guard byte behind the target checked too.
// With "stream" it posts a stream of small RDMA Writes instead, back to
// back with few of them signaled, which the server checks as one range:
// what a device that batches them must keep whole and in order; then a
// burst of Reads beyond the ORD, in one post.
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "rdma_test_util.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using xiw_test::conn_param;
using xiw_test::die;

// The send queue holds a stream's window (write_stream()).
constexpr std::uint32_t send_depth = 128;

ibv_qp_init_attr qp_attr()
{
	return xiw_test::rc_qp_attr(send_depth, 16);
}

constexpr std::size_t default_max = 4u << 20;
constexpr std::uint8_t guard = 0xee;

enum class op : std::uint32_t { hello, check_write, fill, expect_send, bye };

struct ctrl_msg {
	op what;
	std::uint32_t seed;
	std::uint64_t len;
	std::uint64_t addr; // hello: the server's buffer
	std::uint32_t rkey;
	std::uint32_t ok;
};

[[noreturn]] void fail(const std::string &what)
{
	std::fprintf(stderr, "datapath: FAIL: %s\n", what.c_str());
	std::exit(1);
}

std::uint8_t pattern(std::uint32_t seed, std::size_t i)
{
	std::uint32_t x = seed * 2654435761u + static_cast<std::uint32_t>(i) * 40503u;
	return static_cast<std::uint8_t>(x ^ (x >> 13) ^ (x >> 24));
}

void fill(std::uint8_t *p, std::size_t n, std::uint32_t seed)
{
	for (std::size_t i = 0; i < n; i++)
		p[i] = pattern(seed, i);
}

bool matches(const std::uint8_t *p, std::size_t n, std::uint32_t seed)
{
	for (std::size_t i = 0; i < n; i++)
		if (p[i] != pattern(seed, i))
			return false;
	return true;
}

struct endpoint {
	rdma_cm_id *id = nullptr;
	std::vector<std::uint8_t> buf; // data buffer, plus one guard byte
	ctrl_msg send_msg{};
	ctrl_msg recv_msg{};
	ibv_mr *buf_mr = nullptr;
	ibv_mr *send_mr = nullptr;
	ibv_mr *recv_mr = nullptr;

	void register_memory(std::size_t max)
	{
		buf.assign(max + 1, 0);
		buf_mr = ibv_reg_mr(id->pd, buf.data(), buf.size(),
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					    IBV_ACCESS_REMOTE_READ);
		send_mr = rdma_reg_msgs(id, &send_msg, sizeof(send_msg));
		recv_mr = rdma_reg_msgs(id, &recv_msg, sizeof(recv_msg));
		if (!buf_mr || !send_mr || !recv_mr)
			die("register memory");
	}

	ibv_wc wait(ibv_cq *cq, const char *what)
	{
		ibv_wc wc{};
		auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
		for (;;) {
			int n = ibv_poll_cq(cq, 1, &wc);
			if (n < 0)
				die("poll cq");
			if (n == 1)
				break;
			if (std::chrono::steady_clock::now() > until)
				fail(std::string("timeout waiting for ") + what);
		}
		if (wc.status != IBV_WC_SUCCESS)
			fail(std::string(what) + ": " + ibv_wc_status_str(wc.status));
		return wc;
	}
	ibv_wc wait_send(const char *what) { return wait(id->send_cq, what); }
	ibv_wc wait_recv(const char *what) { return wait(id->recv_cq, what); }

	void post_ctrl_recv()
	{
		if (rdma_post_recv(id, nullptr, &recv_msg, sizeof(recv_msg), recv_mr))
			die("post recv");
	}
	void send_ctrl(const ctrl_msg &m)
	{
		send_msg = m;
		if (rdma_post_send(id, nullptr, &send_msg, sizeof(send_msg), send_mr,
				   IBV_SEND_SIGNALED))
			die("post send");
		wait_send("control send");
	}
	ctrl_msg recv_ctrl()
	{
		wait_recv("control receive");
		ctrl_msg m = recv_msg;
		return m;
	}
};

int run_server(const char *addr, const char *port, std::size_t max)
{
	rdma_cm_id *listen_id = xiw_test::listen_on("datapath", addr, port, qp_attr(), 1);
	endpoint ep;

	if (rdma_get_request(listen_id, &ep.id))
		die("rdma_get_request");
	ep.register_memory(max);
	ep.post_ctrl_recv();
	rdma_conn_param param = conn_param();
	if (rdma_accept(ep.id, &param))
		die("rdma_accept");

	ctrl_msg hello{};
	hello.what = op::hello;
	hello.addr = reinterpret_cast<std::uintptr_t>(ep.buf.data());
	hello.rkey = ep.buf_mr->rkey;
	hello.len = max;
	ep.send_ctrl(hello);

	for (;;) {
		ctrl_msg m = ep.recv_ctrl();
		ctrl_msg reply{};
		reply.what = m.what;
		reply.ok = 1;
		switch (m.what) {
		case op::check_write:
			reply.ok = matches(ep.buf.data(), m.len, m.seed) &&
				   ep.buf[m.len] == guard;
			ep.post_ctrl_recv();
			break;
		case op::fill:
			fill(ep.buf.data(), m.len, m.seed);
			ep.buf[m.len] = guard;
			ep.post_ctrl_recv();
			break;
		case op::expect_send: {
			// The data Send lands in the data buffer.
			if (rdma_post_recv(ep.id, nullptr, ep.buf.data(), m.len + 1,
					   ep.buf_mr))
				die("post data recv");
			ep.send_ctrl(reply);
			ibv_wc wc = ep.wait_recv("data receive");
			reply.ok = wc.byte_len == m.len &&
				   matches(ep.buf.data(), m.len, m.seed);
			ep.post_ctrl_recv();
			break;
		}
		case op::bye:
			ep.send_ctrl(reply);
			rdma_disconnect(ep.id);
			std::printf("datapath server: done\n");
			return 0;
		default:
			fail("unknown control message");
		}
		ep.send_ctrl(reply);
	}
}

void expect_ok(endpoint &ep, const char *what, std::size_t n)
{
	ctrl_msg r = ep.recv_ctrl();
	ep.post_ctrl_recv();
	if (!r.ok)
		fail(std::string(what) + " of " + std::to_string(n) +
		     " bytes: data mismatch at the server");
}

// Up to 4096 Writes of 64 bytes to consecutive addresses, each posted as
// soon as the send queue has room, every 32nd signaled (its completion
// stands for the ones before it); the server then checks the whole range.
void write_stream(endpoint &ep, const ctrl_msg &hello, std::size_t max)
{
	constexpr std::size_t piece = 64;
	constexpr std::size_t every = 32;
	const std::size_t count = std::min<std::size_t>(max / piece, 4096);
	const std::size_t len = count * piece;
	ctrl_msg m{};

	m.what = op::fill; // the guard byte behind the range
	m.len = len;
	m.seed = 7;
	ep.send_ctrl(m);
	expect_ok(ep, "fill", len);
	fill(ep.buf.data(), len, ++m.seed);
	std::size_t posted = 0;
	std::size_t completed = 0;
	while (completed < count) {
		while (posted < count && posted - completed < send_depth) {
			const std::size_t off = posted * piece;
			const bool signaled = ++posted % every == 0 || posted == count;
			if (rdma_post_write(ep.id, reinterpret_cast<void *>(posted),
					    ep.buf.data() + off, piece, ep.buf_mr,
					    signaled ? IBV_SEND_SIGNALED : 0,
					    hello.addr + off, hello.rkey))
				die("post write");
		}
		const ibv_wc wc = ep.wait_send("a Write of the stream");
		if (wc.wr_id <= completed || wc.wr_id > posted)
			fail("stream: completion " + std::to_string(wc.wr_id) +
			     " after " + std::to_string(completed) + " of " +
			     std::to_string(posted) + " posted");
		completed = wc.wr_id;
	}
	m.what = op::check_write;
	ep.send_ctrl(m);
	expect_ok(ep, "stream of RDMA Writes", len);
	std::printf("datapath: stream of %zu %zu-byte RDMA Writes ok\n", count,
		    piece);
}

// 64 Reads of 64 bytes of what the server holds, posted in one call at
// ORD 4 with only the last signaled and fenced: the device issues each
// next Read when an answer frees an ORD slot and the fenced one when all
// before it are answered, with no post in between to wake it.
void read_burst(endpoint &ep, const ctrl_msg &hello)
{
	constexpr std::size_t piece = 64;
	constexpr std::size_t count = 64;
	constexpr std::size_t len = piece * count;
	ibv_sge sge[count];
	ibv_send_wr wr[count];
	ibv_send_wr *bad = nullptr;
	ctrl_msg m{};

	m.what = op::fill;
	m.len = len;
	m.seed = 91;
	ep.send_ctrl(m);
	expect_ok(ep, "fill", len);
	std::memset(ep.buf.data(), 0, len);
	for (std::size_t i = 0; i < count; i++) {
		sge[i] = {reinterpret_cast<std::uintptr_t>(ep.buf.data()) + i * piece,
			  piece, ep.buf_mr->lkey};
		wr[i] = {};
		wr[i].wr_id = i;
		wr[i].next = i + 1 < count ? &wr[i + 1] : nullptr;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_READ;
		wr[i].send_flags = i + 1 < count ? 0 : IBV_SEND_SIGNALED | IBV_SEND_FENCE;
		wr[i].wr.rdma.remote_addr = hello.addr + i * piece;
		wr[i].wr.rdma.rkey = hello.rkey;
	}
	if (ibv_post_send(ep.id->qp, wr, &bad))
		die("post reads");
	const ibv_wc wc = ep.wait_send("the last Read of the burst");
	if (wc.wr_id != count - 1)
		fail("read burst: completion " + std::to_string(wc.wr_id));
	if (!matches(ep.buf.data(), len, m.seed))
		fail("read burst: data mismatch");
	std::printf("datapath: %zu %zu-byte RDMA Reads at ORD 4, the last fenced, ok\n",
		    count, piece);
}

int run_client(const char *addr, const char *port, std::size_t max,
	       bool stream)
{
	ibv_qp_init_attr attr = qp_attr();
	endpoint ep;
	ep.id = xiw_test::endpoint_to(addr, port, &attr);
	ep.register_memory(max);
	ep.post_ctrl_recv();
	rdma_conn_param param = conn_param();
	if (rdma_connect(ep.id, &param))
		die("rdma_connect");
	ctrl_msg hello = ep.recv_ctrl();
	ep.post_ctrl_recv();
	if (hello.what != op::hello || hello.len < max)
		fail("bad hello from the server");

	std::vector<std::size_t> sizes{0, 1, 2, 3, 4, 5, 7, 8, 63, 64, 100, 1023,
				       1024, 1447, 1448, 1449, 4095, 4096, 4097,
				       65535, 65536, 100000, 1u << 20};
	sizes.push_back(max);
	if (stream) {
		write_stream(ep, hello, max);
		read_burst(ep, hello);
		sizes.clear();
	}
	std::uint32_t seed = 1;
	for (std::size_t n : sizes) {
		if (n > max)
			continue;
		ctrl_msg m{};

		// RDMA Read of what the server filled in (with a guard byte
		// behind it, which the Write below must leave alone).
		m.what = op::fill;
		m.len = n;
		m.seed = ++seed;
		ep.send_ctrl(m);
		expect_ok(ep, "fill", n);
		std::memset(ep.buf.data(), 0, n);
		ep.buf[n] = guard;
		if (rdma_post_read(ep.id, nullptr, ep.buf.data(), n, ep.buf_mr,
				   IBV_SEND_SIGNALED, hello.addr, hello.rkey))
			die("post read");
		ep.wait_send("RDMA Read");
		if (!matches(ep.buf.data(), n, seed) || ep.buf[n] != guard)
			fail("RDMA Read of " + std::to_string(n) + " bytes: data mismatch");

		// RDMA Write, checked by the server.
		fill(ep.buf.data(), n, ++seed);
		if (rdma_post_write(ep.id, nullptr, ep.buf.data(), n, ep.buf_mr,
				    IBV_SEND_SIGNALED, hello.addr, hello.rkey))
			die("post write");
		ep.wait_send("RDMA Write");
		m.what = op::check_write;
		m.seed = seed;
		ep.send_ctrl(m);
		expect_ok(ep, "RDMA Write", n);

		// Send into a posted receive.
		m.what = op::expect_send;
		m.seed = ++seed;
		ep.send_ctrl(m);
		expect_ok(ep, "receive ready", n);
		fill(ep.buf.data(), n, seed);
		if (rdma_post_send(ep.id, nullptr, ep.buf.data(), n, ep.buf_mr,
				   IBV_SEND_SIGNALED))
			die("post data send");
		ep.wait_send("data Send");
		expect_ok(ep, "Send", n);

		std::printf("datapath: %zu bytes: write, read, send ok\n", n);
		std::fflush(stdout);
	}
	ctrl_msg bye{};
	bye.what = op::bye;
	ep.send_ctrl(bye);
	ep.recv_ctrl();
	rdma_disconnect(ep.id);
	std::printf("datapath client: %s ok\n", stream ? "the stream" : "all sizes");
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4) {
		std::fprintf(stderr, "usage: %s server|client ADDR PORT [MAX_SIZE]\n",
			     argv[0]);
		return 2;
	}
	std::size_t max = argc > 4 ? std::strtoull(argv[4], nullptr, 0) : default_max;
	if (std::strcmp(argv[1], "server") == 0)
		return run_server(argv[2], argv[3], max);
	return run_client(argv[2], argv[3], max,
			  argc > 5 && std::strcmp(argv[5], "stream") == 0);
}
