// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Remote errors end in the right work completion and never touch memory
// they must not.  One connection per case:
//   xiw_datapath_errors_test server ADDR PORT
//   xiw_datapath_errors_test client ADDR PORT CASE
// CASE: bad_rkey_write, bad_rkey_read, write_out_of_bounds,
// read_out_of_bounds, write_without_right, read_without_right, no_receive,
// stream (writes until the connection breaks: for the peer-killed and
// link-down tests; exits 0 once an error completion arrived).
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "rdma_test_util.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using xiw_test::conn_param;
using xiw_test::die;

ibv_qp_init_attr qp_attr()
{
	return xiw_test::rc_qp_attr(64, 4);
}

constexpr std::size_t buf_size = 64 * 1024;
constexpr std::uint8_t fill_byte = 0x5a;

struct target {
	std::uint64_t addr;
	std::uint32_t rw_rkey;	 // remote read and write
	std::uint32_t ro_rkey;	 // remote read only
	std::uint32_t wo_rkey;	 // remote write only
	std::uint32_t len;
};

// Waits for one completion; returns its status, or -1 on timeout.
int wait_wc(ibv_cq *cq, int seconds, ibv_wc *out = nullptr)
{
	ibv_wc wc{};
	auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
	while (std::chrono::steady_clock::now() < until) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("poll cq");
		if (n == 1) {
			if (out)
				*out = wc;
			return wc.status;
		}
	}
	return -1;
}

// The server: per connection, three registrations over one buffer filled
// with fill_byte, no receive posted, and a check, once the client is gone,
// that nothing in the buffer changed.
int run_server(const char *addr, const char *port)
{
	rdma_cm_id *listen_id = xiw_test::listen_on("errors", addr, port, qp_attr(), 4);

	for (;;) {
		rdma_cm_id *id = nullptr;
		if (rdma_get_request(listen_id, &id))
			die("rdma_get_request");
		std::vector<std::uint8_t> buf(buf_size, fill_byte);
		ibv_mr *rw = ibv_reg_mr(id->pd, buf.data(), buf.size(),
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ);
		ibv_mr *ro = ibv_reg_mr(id->pd, buf.data(), buf.size(),
					IBV_ACCESS_REMOTE_READ);
		ibv_mr *wo = ibv_reg_mr(id->pd, buf.data(), buf.size(),
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		target t{reinterpret_cast<std::uintptr_t>(buf.data()), rw->rkey,
			 ro->rkey, wo->rkey, static_cast<std::uint32_t>(buf.size())};
		ibv_mr *tmr = rdma_reg_msgs(id, &t, sizeof(t));
		if (!rw || !ro || !wo || !tmr)
			die("register");
		rdma_conn_param p = conn_param();
		if (rdma_accept(id, &p))
			die("rdma_accept");
		if (rdma_post_send(id, nullptr, &t, sizeof(t), tmr, IBV_SEND_SIGNALED))
			die("post send");
		if (wait_wc(id->send_cq, 30) != IBV_WC_SUCCESS)
			std::printf("errors server: target send failed\n");
		// Wait for the client to go away, then check the buffer.
		rdma_event_channel *ch = id->channel;
		rdma_cm_event *ev = nullptr;
		while (rdma_get_cm_event(ch, &ev) == 0) {
			bool done = ev->event == RDMA_CM_EVENT_DISCONNECTED;
			rdma_ack_cm_event(ev);
			if (done)
				break;
		}
		std::size_t touched = 0;
		for (std::uint8_t b : buf)
			touched += b != fill_byte;
		std::printf("errors server: connection closed, %zu bytes changed\n", touched);
		std::fflush(stdout);
		rdma_disconnect(id);
		rdma_dereg_mr(tmr);
		ibv_dereg_mr(rw);
		ibv_dereg_mr(ro);
		ibv_dereg_mr(wo);
		rdma_destroy_ep(id);
		if (touched)
			return 1;
	}
}

int expect(const std::string &what, int got, std::initializer_list<int> want)
{
	for (int w : want)
		if (got == w) {
			std::printf("errors: %s: %s (as expected)\n", what.c_str(),
				    ibv_wc_status_str(static_cast<ibv_wc_status>(got)));
			return 0;
		}
	std::printf("errors: FAIL: %s: got %s (%d)\n", what.c_str(),
		    got < 0 ? "timeout" : ibv_wc_status_str(static_cast<ibv_wc_status>(got)),
		    got);
	return 1;
}

int run_client(const char *addr, const char *port, const std::string &which)
{
	ibv_qp_init_attr attr = qp_attr();
	rdma_cm_id *id = xiw_test::endpoint_to(addr, port, &attr);
	target t{};

	std::vector<std::uint8_t> local(buf_size, 0x11);
	ibv_mr *mr = ibv_reg_mr(id->pd, local.data(), local.size(),
				IBV_ACCESS_LOCAL_WRITE);
	ibv_mr *tmr = rdma_reg_msgs(id, &t, sizeof(t));
	if (!mr || !tmr)
		die("register");
	if (rdma_post_recv(id, nullptr, &t, sizeof(t), tmr))
		die("post recv");
	rdma_conn_param p = conn_param();
	if (rdma_connect(id, &p))
		die("rdma_connect");
	if (wait_wc(id->recv_cq, 30) != IBV_WC_SUCCESS)
		die("receive target");

	const std::uint64_t base = t.addr;
	int rc = 0;
	auto write = [&](std::uint64_t raddr, std::uint32_t rkey, std::uint32_t len) {
		if (rdma_post_write(id, nullptr, local.data(), len, mr, IBV_SEND_SIGNALED,
				    raddr, rkey))
			die("post write");
		return wait_wc(id->send_cq, 30);
	};
	auto read = [&](std::uint64_t raddr, std::uint32_t rkey, std::uint32_t len,
			ibv_wc *wc = nullptr) {
		if (rdma_post_read(id, nullptr, local.data(), len, mr, IBV_SEND_SIGNALED,
				   raddr, rkey))
			die("post read");
		return wait_wc(id->send_cq, 30, wc);
	};
	// A Write completes locally once sent; the remote error shows on the
	// next request, which the Terminate fails.
	auto write_then_read = [&](std::uint64_t raddr, std::uint32_t rkey) {
		int first = write(raddr, rkey, 64);
		if (first != IBV_WC_SUCCESS)
			return first;
		return read(base, t.rw_rkey, 64);
	};

	if (which == "bad_rkey_write")
		rc = expect(which, write_then_read(base, t.rw_rkey ^ 0xff00),
			    {IBV_WC_REM_ACCESS_ERR});
	else if (which == "bad_rkey_read")
		rc = expect(which, read(base, t.rw_rkey ^ 0xff00, 64), {IBV_WC_REM_ACCESS_ERR});
	else if (which == "write_out_of_bounds")
		rc = expect(which, write_then_read(base + t.len - 32, t.rw_rkey),
			    {IBV_WC_REM_ACCESS_ERR});
	else if (which == "read_out_of_bounds")
		rc = expect(which, read(base + 8, t.rw_rkey, t.len), {IBV_WC_REM_ACCESS_ERR});
	else if (which == "write_without_right")
		rc = expect(which, write_then_read(base, t.ro_rkey), {IBV_WC_REM_ACCESS_ERR});
	else if (which == "read_without_right")
		rc = expect(which, read(base, t.wo_rkey, 64), {IBV_WC_REM_ACCESS_ERR});
	else if (which == "no_receive") {
		if (rdma_post_send(id, nullptr, local.data(), 64, mr, IBV_SEND_SIGNALED))
			die("post send");
		wait_wc(id->send_cq, 30);
		rc = expect(which, read(base, t.rw_rkey, 64),
			    {IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_OP_ERR});
	} else if (which == "stream") {
		std::printf("errors: streaming\n");
		std::fflush(stdout);
		for (;;) {
			int s = write(base, t.rw_rkey, 4096);
			if (s != IBV_WC_SUCCESS) {
				rc = expect(which, s, {IBV_WC_WR_FLUSH_ERR, IBV_WC_FATAL_ERR,
						       IBV_WC_REM_OP_ERR, -1});
				break;
			}
		}
	} else {
		std::fprintf(stderr, "unknown case %s\n", which.c_str());
		return 2;
	}
	// After a remote error the QP is in Error: what is posted now flushes,
	// completing as what it is (verbs leaves the opcode of an error
	// completion undefined, but devices report it and tools print it).
	if (which != "stream") {
		ibv_wc wc{};
		int s = read(base, t.rw_rkey, 8, &wc);
		rc |= expect(which + ", then", s, {IBV_WC_WR_FLUSH_ERR});
		if (s == IBV_WC_WR_FLUSH_ERR && wc.opcode != IBV_WC_RDMA_READ) {
			std::printf("errors: FAIL: %s, then: a flushed RDMA Read completed as opcode %d\n",
				    which.c_str(), wc.opcode);
			rc = 1;
		}
	}
	rdma_disconnect(id);
	rdma_dereg_mr(tmr);
	ibv_dereg_mr(mr);
	rdma_destroy_ep(id);
	return rc;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4) {
		std::fprintf(stderr, "usage: %s server ADDR PORT | client ADDR PORT CASE\n",
			     argv[0]);
		return 2;
	}
	if (std::strcmp(argv[1], "server") == 0)
		return run_server(argv[2], argv[3]);
	return run_client(argv[2], argv[3], argc > 4 ? argv[4] : "");
}
