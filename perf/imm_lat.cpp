// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Ping-pong latency of RDMA Write with Immediate against plain RDMA Write,
// measured the same way, for perf/guest-bench.sh (perftest 4.5 has no
// write-with-immediate test).
//   xiw_imm_lat server ADDR PORT
//   xiw_imm_lat client ADDR PORT write|write_imm SIZE ITERATIONS
// write: each side RDMA-Writes SIZE bytes from its send area into the
// other's receive area and spins on that area's last byte, as ib_write_lat
// does.  write_imm: the
// same Writes carry immediate data and each side spins on its receive CQ
// for the completion.  Prints the typical (median) and average one-way
// latency, half a round trip, in microseconds.
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "../tests/guest/rdma_test_util.h"

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

using xiw_test::die;
using clock_type = std::chrono::steady_clock;

constexpr std::uint32_t recv_depth = 64;
constexpr std::uint32_t max_size = 1u << 20;

struct buffer_info {
	std::uint64_t addr;
	std::uint32_t rkey;
	std::uint32_t with_imm; // client to server: the mode
	std::uint32_t size;
	std::uint32_t iterations;
};

// The last byte of message SEQ: never 0, and differs from the one before.
std::uint8_t marker(std::uint32_t seq)
{
	return static_cast<std::uint8_t>(seq % 255 + 1);
}

struct endpoint {
	rdma_cm_id *id = nullptr;
	// The send area, then the receive area the peer writes into.
	std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(2 * max_size);
	ibv_mr *mr = nullptr;
	buffer_info peer{};
	bool with_imm = false;
	std::uint32_t size = 0;

	void register_buffer()
	{
		mr = ibv_reg_mr(id->pd, buf.data(), buf.size(),
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (!mr)
			die("ibv_reg_mr");
	}
	buffer_info own() const
	{
		return {reinterpret_cast<std::uintptr_t>(buf.data() + max_size), mr->rkey,
			with_imm, size, 0};
	}
	void post_recv() const
	{
		ibv_recv_wr wr{}, *bad = nullptr;
		if (ibv_post_recv(id->qp, &wr, &bad))
			die("ibv_post_recv");
	}
	ibv_wc poll(ibv_cq *cq) const
	{
		ibv_wc wc{};
		int n;
		while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
			;
		if (n < 0 || wc.status != IBV_WC_SUCCESS) {
			std::fprintf(stderr, "imm_lat: completion error: %s\n",
				     ibv_wc_status_str(wc.status));
			std::exit(1);
		}
		return wc;
	}
	// Sends message number SEQ to the peer.
	void ping(std::uint32_t seq)
	{
		buf[size - 1] = marker(seq);
		xiw_test::one_sge_wr w(with_imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
				       buf.data(), size, mr->lkey);
		w.wr.imm_data = htonl(seq);
		w.wr.wr.rdma.remote_addr = peer.addr;
		w.wr.wr.rdma.rkey = peer.rkey;
		if (w.post(id->qp))
			die("ibv_post_send");
		poll(id->send_cq);
	}
	// Waits for the peer's message number SEQ.
	void pong(std::uint32_t seq)
	{
		if (with_imm) {
			const ibv_wc wc = poll(id->recv_cq);
			if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || ntohl(wc.imm_data) != seq) {
				std::fprintf(stderr, "imm_lat: message %u out of order\n", seq);
				std::exit(1);
			}
			post_recv();
			return;
		}
		volatile std::uint8_t *last = &buf[max_size + size - 1];
		while (*last != marker(seq))
			;
	}
};

void prepare(endpoint &e)
{
	e.register_buffer();
	for (std::uint32_t i = 0; i < recv_depth; i++)
		e.post_recv();
}

int run_server(const char *addr, const char *port)
{
	rdma_cm_id *listen_id = xiw_test::listen_on("imm_lat", addr, port,
						     xiw_test::rc_qp_attr(16, recv_depth), 1);

	endpoint e;
	if (rdma_get_request(listen_id, &e.id))
		die("rdma_get_request");
	const rdma_conn_param &cp = e.id->event->param.conn;
	if (!cp.private_data || cp.private_data_len < sizeof(buffer_info))
		die("connect request without buffer information");
	std::memcpy(&e.peer, cp.private_data, sizeof(e.peer));
	e.with_imm = e.peer.with_imm;
	e.size = std::clamp<std::uint32_t>(e.peer.size, 1, max_size);
	prepare(e);
	const buffer_info mine = e.own();
	rdma_conn_param p = xiw_test::conn_param_with(mine);
	if (rdma_accept(e.id, &p))
		die("rdma_accept");
	for (std::uint32_t i = 0; i < e.peer.iterations; i++) {
		e.pong(i);
		e.ping(i);
	}
	rdma_disconnect(e.id);
	return 0;
}

int run_client(const char *addr, const char *port, bool with_imm, std::uint32_t size,
	       std::uint32_t iterations)
{
	ibv_qp_init_attr attr = xiw_test::rc_qp_attr(16, recv_depth);
	endpoint e;
	e.with_imm = with_imm;
	e.size = size;
	e.id = xiw_test::endpoint_to(addr, port, &attr);
	prepare(e);
	buffer_info mine = e.own();
	mine.iterations = iterations;
	rdma_conn_param p = xiw_test::conn_param_with(mine);
	if (rdma_connect(e.id, &p))
		die("rdma_connect");
	const rdma_conn_param &cp = e.id->event->param.conn;
	if (!cp.private_data || cp.private_data_len < sizeof(buffer_info))
		die("accept without buffer information");
	std::memcpy(&e.peer, cp.private_data, sizeof(e.peer));

	std::vector<double> one_way(iterations);
	const auto start = clock_type::now();
	for (std::uint32_t i = 0; i < iterations; i++) {
		const auto t0 = clock_type::now();
		e.ping(i);
		e.pong(i);
		one_way[i] = std::chrono::duration<double, std::micro>(clock_type::now() - t0)
				     .count() / 2;
	}
	const double total = std::chrono::duration<double, std::micro>(clock_type::now() - start)
				     .count();
	std::nth_element(one_way.begin(), one_way.begin() + iterations / 2, one_way.end());
	std::printf("imm_lat %s %u B: typical %.2f us, average %.2f us\n",
		    with_imm ? "write_imm" : "write", size, one_way[iterations / 2],
		    total / iterations / 2);
	rdma_disconnect(e.id);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc == 4 && std::string_view(argv[1]) == "server")
		return run_server(argv[2], argv[3]);
	if (argc == 7 && std::string_view(argv[1]) == "client") {
		const std::string_view mode = argv[4];
		const unsigned long size = std::strtoul(argv[5], nullptr, 0);
		const unsigned long iterations = std::strtoul(argv[6], nullptr, 0);
		if ((mode == "write" || mode == "write_imm") && size && size <= max_size &&
		    iterations)
			return run_client(argv[2], argv[3], mode == "write_imm",
					  static_cast<std::uint32_t>(size),
					  static_cast<std::uint32_t>(iterations));
	}
	std::fprintf(stderr, "usage: xiw_imm_lat server ADDR PORT\n"
			     "       xiw_imm_lat client ADDR PORT write|write_imm SIZE ITERATIONS\n");
	return 2;
}
