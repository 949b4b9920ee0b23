// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Latency of RDMA Flush and Atomic Write and throughput of RDMA Verify
// (draft-talpey-rdma-commit), with RDMA Read and RDMA Write of 8 bytes
// measured the same way for comparison, for perf/guest-bench.sh.  A
// benchmark, not a test: it checks completion statuses, nothing else.
//   xiw_commit_bench server ADDR PORT FILE
//   xiw_commit_bench client ADDR PORT ITERATIONS [VERIFIES]
// The server maps 2 MiB of FILE (made that long if shorter; or a device
// DAX node) shared and registers it with both flush rights (without flush
// to persistence if the device refuses it for FILE), and on xiw twice more
// with Verify CRC32c resp. SHA-256; it serves one client and exits.  Built
// against an rdma-core with ibv_wr_flush() (>= 45), the work requests go
// through ibv_qp_ex and the rights are the verbs' own, so any device with
// Flush and Atomic Write (rxe on Linux >= 6.2) is measured the same way;
// else through ibv_post_send and <infiniband/xiwdv.h> (xiw only).  Verify
// exists on xiw only.  The client prints one line per measurement,
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
	u32 rkey; // both flush rights (or global only)
	u32 rkey_crc; // the same with Verify CRC32c (0: no Verify)
	u32 rkey_sha; // the same with Verify SHA-256 (0: no Verify)
};

#ifdef XIW_HAVE_IBV_WR_FLUSH
constexpr int access_flush_global = IBV_ACCESS_FLUSH_GLOBAL;
constexpr int access_flush_persistent = IBV_ACCESS_FLUSH_PERSISTENT;
#else
constexpr int access_flush_global = XIWDV_ACCESS_FLUSH_GLOBAL;
constexpr int access_flush_persistent = XIWDV_ACCESS_FLUSH_PERSISTENT;
#endif

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
	if (S_ISREG(st.st_mode) && st.st_size < static_cast<off_t>(region_size) &&
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
		       access_flush_global;
	target t{magic, 1, reinterpret_cast<std::uintptr_t>(map), 0, 0, 0};
	auto reg = [&](int verify) {
		ibv_mr *mr = nullptr;
		if (t.persistent) {
			mr = ibv_reg_mr(id->pd, map, region_size,
					rw | access_flush_persistent | verify);
			if (!mr)
				std::fprintf(stderr,
					     "commit_bench server: no flush to persistence for %s: %s\n",
					     path, std::strerror(errno));
			t.persistent = mr != nullptr;
		}
		if (!mr)
			mr = ibv_reg_mr(id->pd, map, region_size, rw | verify);
		if (!mr)
			die("ibv_reg_mr");
		return mr;
	};
	std::vector<ibv_mr *> mrs{reg(0)};
	t.rkey = mrs[0]->rkey;
	if (xiwdv_is_xiw_context(id->verbs)) {
		mrs.push_back(reg(XIWDV_ACCESS_VERIFY_CRC32C));
		t.rkey_crc = mrs.back()->rkey;
		mrs.push_back(reg(XIWDV_ACCESS_VERIFY_SHA256));
		t.rkey_sha = mrs.back()->rkey;
	}
	rdma_conn_param p = conn_param(&t, sizeof(t));
	if (rdma_accept(id, &p))
		die("rdma_accept");
	// The client disconnects when done; give it an hour.
	xiw_test::wait_disconnect(id, 3600 * 1000);
	for (ibv_mr *mr : mrs)
		ibv_dereg_mr(mr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen_id);
	munmap(map, region_size);
	close(fd);
	return 0;
}

// The client's connection; one signaled work request at a time.
struct client {
	rdma_cm_id *id = nullptr;
	std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(4096);
	ibv_mr *mr = nullptr;
	target t{};
#ifdef XIW_HAVE_IBV_WR_FLUSH
	ibv_qp_ex *qpx = nullptr;
#endif

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

	// The work requests measured, posted one at a time.
	void flush(unsigned type, u64 len);
	void atomic_write(u64 value);
	void one_sided(bool read);
};

#ifdef XIW_HAVE_IBV_WR_FLUSH
static_assert(IBV_FLUSH_GLOBAL == XIWDV_FLUSH_GLOBAL &&
	      IBV_FLUSH_PERSISTENT == XIWDV_FLUSH_PERSISTENT && IBV_FLUSH_RANGE == XIWDV_FLUSH_RANGE);

constexpr std::uint64_t send_ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
				   IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_ATOMIC_WRITE;

template <class F> void post_ex(ibv_qp_ex *q, F &&build)
{
	ibv_wr_start(q);
	q->wr_id = 0;
	q->wr_flags = IBV_SEND_SIGNALED;
	build(q);
	if (int rc = ibv_wr_complete(q)) {
		std::fprintf(stderr, "commit_bench: ibv_wr_complete: %s\n", std::strerror(rc));
		std::exit(1);
	}
}

void client::flush(unsigned type, u64 len)
{
	post_ex(qpx, [&](ibv_qp_ex *q) {
		ibv_wr_flush(q, t.rkey, t.addr, len, static_cast<std::uint8_t>(type),
			     IBV_FLUSH_RANGE);
	});
}

void client::atomic_write(u64 value)
{
	post_ex(qpx, [&](ibv_qp_ex *q) { ibv_wr_atomic_write(q, t.rkey, t.addr + 8192, &value); });
}

void client::one_sided(bool read)
{
	post_ex(qpx, [&](ibv_qp_ex *q) {
		if (read)
			ibv_wr_rdma_read(q, t.rkey, t.addr + 8192);
		else
			ibv_wr_rdma_write(q, t.rkey, t.addr + 8192);
		ibv_wr_set_sge(q, mr->lkey, reinterpret_cast<std::uintptr_t>(buf.data()), 8);
	});
}
#else
void client::flush(unsigned type, u64 len)
{
	ibv_send_wr wr{};
	xiwdv_wr_flush(&wr, t.rkey, t.addr, len, type, XIWDV_FLUSH_RANGE);
	post(wr);
}

void client::atomic_write(u64 value)
{
	ibv_send_wr wr{};
	xiwdv_wr_atomic_write(&wr, t.rkey, t.addr + 8192, value);
	post(wr);
}

void client::one_sided(bool read)
{
	ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf.data()), 8, mr->lkey};
	ibv_send_wr wr{};
	wr.opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = t.addr + 8192;
	wr.wr.rdma.rkey = t.rkey;
	post(wr);
}
#endif

void report(const char *name, double value, const char *unit)
{
	std::printf("commit_bench\t%s\t%.2f\t%s\n", name, value, unit);
	std::fflush(stdout);
}

// The median post-to-completion time of the work request POST(i) posts.
void latency(client &c, const char *name, unsigned iterations,
	     const std::function<void(unsigned)> &post)
{
	std::vector<double> us;
	us.reserve(iterations);
	for (unsigned i = 0; i < warmup + iterations; i++) {
		const auto t0 = clock_type::now();
		post(i);
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
#ifdef XIW_HAVE_IBV_WR_FLUSH
	c.id = xiw_test::endpoint_to(addr, port, nullptr);
	ibv_qp_init_attr_ex ax{};
	ax.qp_type = IBV_QPT_RC;
	ax.cap = attr.cap;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ax.pd = c.id->pd;
	ax.send_ops_flags = send_ops;
	if (rdma_create_qp_ex(c.id, &ax))
		die("rdma_create_qp_ex (write, read, flush, atomic write)");
	c.qpx = ibv_qp_to_qp_ex(c.id->qp);
	if (!c.qpx)
		die("ibv_qp_to_qp_ex");
#else
	c.id = xiw_test::endpoint_to(addr, port, &attr);
#endif
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

	auto flush = [&c](unsigned type, u64 len) {
		return [&c, type, len](unsigned) { c.flush(type, len); };
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
	latency(c, "RDMA Read 8 B", iterations, [&c](unsigned) { c.one_sided(true); });
	latency(c, "Atomic Write 8 B", iterations, [&c](unsigned i) { c.atomic_write(i); });
	latency(c, "RDMA Write 8 B", iterations, [&c](unsigned) { c.one_sided(false); });
	if (c.t.rkey_crc && c.t.rkey_sha) {
		verify_rate(c, "Verify CRC32c 1 MiB", c.t.rkey_crc, 4, verifies);
		verify_rate(c, "Verify SHA-256 1 MiB", c.t.rkey_sha, 32, verifies);
	}
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
