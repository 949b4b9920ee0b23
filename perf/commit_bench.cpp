// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Latency of RDMA Flush and Atomic Write and throughput of RDMA Verify
// (draft-talpey-rdma-commit) on xiw, with RDMA Read and RDMA Write of 8
// bytes measured the same way for comparison, for perf/guest-bench.sh.  A
// benchmark, not a test: it checks completion statuses, nothing else.
//   xiw_commit_bench server ADDR PORT FILE
//   xiw_commit_bench client ADDR PORT ITERATIONS [VERIFIES]
// The server maps 2 MiB of FILE (made that long if shorter) shared and
// registers it twice, with both flush rights and Verify CRC32c resp.
// SHA-256 (without flush to persistence if the device refuses it for FILE),
// serves one client and exits.  The client prints one line per measurement,
//   commit_bench<TAB>NAME<TAB>VALUE<TAB>UNIT
// Latencies: the median ("typical", as perftest says) of ITERATIONS (>= 500)
// post-to-completion times of one signaled work request at a time, in
// microseconds.  The Flushes, Atomic Write and Read complete on the peer's
// response; an RDMA Write completes once sent.  The flushed ranges are clean
// after the first iteration.  Verify: MB/s (2^20 bytes, as perftest) of
// VERIFIES (default 64) Verifies of 1 MiB, four in flight.
#include <infiniband/verbs.h>
#include <infiniband/xiwdv.h>
#include <rdma/rdma_cma.h>

#include "../tests/guest/rdma_test_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string_view>
#include <vector>

namespace {

using xiw_test::die;
using clock_type = std::chrono::steady_clock;
using u64 = std::uint64_t;
using u32 = std::uint32_t;

constexpr u32 magic = 0x78697762; // "xiwb"
constexpr std::size_t region_size = 2u << 20;
constexpr u32 verify_len = 1u << 20;
constexpr unsigned verify_window = 4;
constexpr unsigned warmup = 20;

struct target {
	u32 magic;
	u32 persistent; // the region has the flush-to-persistence right
	u64 addr;
	u32 rkey_crc; // both flush rights (or global only), Verify CRC32c
	u32 rkey_sha; // the same with Verify SHA-256
};

rdma_conn_param conn_param(const void *pd, std::uint8_t len)
{
	rdma_conn_param p = xiw_test::conn_param();
	p.responder_resources = 16;
	p.initiator_depth = 16;
	p.private_data = pd;
	p.private_data_len = len;
	return p;
}

int run_server(const char *addr, const char *port, const char *path)
{
	const int fd = open(path, O_RDWR | O_CREAT, 0600);
	struct stat st {};
	if (fd < 0 || fstat(fd, &st))
		die(path);
	if (st.st_size < static_cast<off_t>(region_size) &&
	    ftruncate(fd, static_cast<off_t>(region_size)))
		die("ftruncate");
	void *map = mmap(nullptr, region_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("mmap MAP_SHARED");
	std::memset(map, 0x5a, region_size);

	rdma_cm_id *listen_id = xiw_test::listen_on("commit_bench", addr, port,
						     xiw_test::rc_qp_attr(16, 16), 1);
	rdma_cm_id *id = nullptr;
	if (rdma_get_request(listen_id, &id))
		die("rdma_get_request");

	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		       XIWDV_ACCESS_FLUSH_GLOBAL;
	target t{magic, 1, reinterpret_cast<std::uintptr_t>(map), 0, 0};
	auto reg = [&](int verify) {
		ibv_mr *mr = ibv_reg_mr(id->pd, map, region_size,
					rw | XIWDV_ACCESS_FLUSH_PERSISTENT | verify);
		if (!mr) {
			std::fprintf(stderr,
				     "commit_bench server: no flush to persistence for %s: %s\n", path,
				     std::strerror(errno));
			t.persistent = 0;
			mr = ibv_reg_mr(id->pd, map, region_size, rw | verify);
		}
		if (!mr)
			die("ibv_reg_mr");
		return mr;
	};
	ibv_mr *crc = reg(XIWDV_ACCESS_VERIFY_CRC32C);
	ibv_mr *sha = reg(XIWDV_ACCESS_VERIFY_SHA256);
	t.rkey_crc = crc->rkey;
	t.rkey_sha = sha->rkey;
	rdma_conn_param p = conn_param(&t, sizeof(t));
	if (rdma_accept(id, &p))
		die("rdma_accept");
	// The client disconnects when done; give it an hour.
	xiw_test::wait_disconnect(id, 3600 * 1000);
	ibv_dereg_mr(crc);
	ibv_dereg_mr(sha);
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen_id);
	munmap(map, region_size);
	close(fd);
	return 0;
}

struct client {
	rdma_cm_id *id = nullptr;
	std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(4096);
	ibv_mr *mr = nullptr;
	target t{};

	ibv_wc poll()
	{
		ibv_wc wc{};
		int n;
		while ((n = ibv_poll_cq(id->send_cq, 1, &wc)) == 0)
			;
		if (n < 0 || wc.status != IBV_WC_SUCCESS) {
			std::fprintf(stderr, "commit_bench: completion error: %s\n",
				     n < 0 ? "ibv_poll_cq failed" : ibv_wc_status_str(wc.status));
			std::exit(1);
		}
		return wc;
	}

	void post(ibv_send_wr &wr)
	{
		ibv_send_wr *bad = nullptr;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (int rc = ibv_post_send(id->qp, &wr, &bad)) {
			std::fprintf(stderr, "commit_bench: ibv_post_send: %s\n", std::strerror(rc));
			std::exit(1);
		}
	}
};

void report(const char *name, double value, const char *unit)
{
	std::printf("commit_bench\t%s\t%.2f\t%s\n", name, value, unit);
	std::fflush(stdout);
}

// The median post-to-completion time of the work request MAKE(i) builds.
void latency(client &c, const char *name, unsigned iterations,
	     const std::function<void(ibv_send_wr &, unsigned)> &make)
{
	std::vector<double> us;
	us.reserve(iterations);
	for (unsigned i = 0; i < warmup + iterations; i++) {
		ibv_send_wr wr{};
		make(wr, i);
		const auto t0 = clock_type::now();
		c.post(wr);
		c.poll();
		if (i >= warmup)
			us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0)
					     .count());
	}
	std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
	report(name, us[us.size() / 2], "us");
}

// MB/s of COUNT Verifies of 1 MiB through RKEY, a few in flight.
void verify_rate(client &c, const char *name, u32 rkey, u32 hash_len, unsigned count)
{
	ibv_sge sge{reinterpret_cast<std::uintptr_t>(c.buf.data()), hash_len, c.mr->lkey};
	xiwdv_wr_ext ext{};
	xiwdv_ext_verify(&ext, rkey, c.t.addr, verify_len);
	auto post_one = [&] {
		ibv_send_wr wr{};
		xiwdv_wr_set_ext(&wr, &ext);
		wr.sg_list = &sge;
		wr.num_sge = 1;
		c.post(wr);
	};
	post_one(); // warm-up
	c.poll();
	unsigned posted = 0, done = 0;
	const auto t0 = clock_type::now();
	while (done < count) {
		while (posted < count && posted - done < verify_window) {
			post_one();
			posted++;
		}
		c.poll();
		done++;
	}
	const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
	report(name, static_cast<double>(count) * verify_len / (1u << 20) / s, "MB/s");
}

int run_client(const char *addr, const char *port, unsigned iterations, unsigned verifies)
{
	client c;
	ibv_qp_init_attr attr = xiw_test::rc_qp_attr(16, 1);
	c.id = xiw_test::endpoint_to(addr, port, &attr);
	c.mr = ibv_reg_mr(c.id->pd, c.buf.data(), c.buf.size(), IBV_ACCESS_LOCAL_WRITE);
	if (!c.mr)
		die("ibv_reg_mr");
	rdma_conn_param p = conn_param(nullptr, 0);
	if (rdma_connect(c.id, &p))
		die("rdma_connect");
	const rdma_conn_param &cp = c.id->event->param.conn;
	if (!cp.private_data || cp.private_data_len < sizeof(target))
		die("accept without the target");
	std::memcpy(&c.t, cp.private_data, sizeof(c.t));
	if (c.t.magic != magic)
		die("accept with someone else's private data");

	const u64 a = c.t.addr;
	const u32 rkey = c.t.rkey_crc;
	auto flush = [&](unsigned type, u64 len) {
		return [a, rkey, type, len](ibv_send_wr &wr, unsigned) {
			xiwdv_wr_flush(&wr, rkey, a, len, type, XIWDV_FLUSH_RANGE);
		};
	};
	latency(c, "Flush global 4 KiB", iterations, flush(XIWDV_FLUSH_GLOBAL, 4096));
	latency(c, "Flush global 1 MiB", iterations, flush(XIWDV_FLUSH_GLOBAL, 1u << 20));
	if (c.t.persistent) {
		latency(c, "Flush persistent 4 KiB", iterations,
			flush(XIWDV_FLUSH_PERSISTENT, 4096));
		latency(c, "Flush persistent 1 MiB", iterations,
			flush(XIWDV_FLUSH_PERSISTENT, 1u << 20));
	} else {
		std::fprintf(stderr, "commit_bench: the server's file has no flush to persistence: "
				     "no Flush persistent rows\n");
	}
	ibv_sge sge8{reinterpret_cast<std::uintptr_t>(c.buf.data()), 8, c.mr->lkey};
	auto one_sided = [&](ibv_wr_opcode opc) {
		return [&sge8, a, rkey, opc](ibv_send_wr &wr, unsigned) {
			wr.opcode = opc;
			wr.sg_list = &sge8;
			wr.num_sge = 1;
			wr.wr.rdma.remote_addr = a + 8192;
			wr.wr.rdma.rkey = rkey;
		};
	};
	latency(c, "RDMA Read 8 B", iterations, one_sided(IBV_WR_RDMA_READ));
	latency(c, "Atomic Write 8 B", iterations, [a, rkey](ibv_send_wr &wr, unsigned i) {
		xiwdv_wr_atomic_write(&wr, rkey, a + 8192, i);
	});
	latency(c, "RDMA Write 8 B", iterations, one_sided(IBV_WR_RDMA_WRITE));
	verify_rate(c, "Verify CRC32c 1 MiB", c.t.rkey_crc, 4, verifies);
	verify_rate(c, "Verify SHA-256 1 MiB", c.t.rkey_sha, 32, verifies);
	rdma_disconnect(c.id);
	ibv_dereg_mr(c.mr);
	rdma_destroy_ep(c.id);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc == 5 && std::string_view(argv[1]) == "server")
		return run_server(argv[2], argv[3], argv[4]);
	if ((argc == 5 || argc == 6) && std::string_view(argv[1]) == "client") {
		const unsigned long iterations = std::strtoul(argv[4], nullptr, 0);
		const unsigned long verifies = argc == 6 ? std::strtoul(argv[5], nullptr, 0) : 64;
		if (iterations >= 500 && iterations <= 1000000 && verifies && verifies <= 100000)
			return run_client(argv[2], argv[3], static_cast<unsigned>(iterations),
					  static_cast<unsigned>(verifies));
	}
	std::fprintf(stderr, "usage: xiw_commit_bench server ADDR PORT FILE\n"
			     "       xiw_commit_bench client ADDR PORT ITERATIONS(>=500) [VERIFIES]\n");
	return 2;
}
