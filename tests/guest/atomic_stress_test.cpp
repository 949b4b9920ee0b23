// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Remote atomics are atomic: many QPs and a CPU thread of the target
// increment one 64-bit counter at once, and not one update may be lost.
//   xiw_atomic_stress_test server ADDR PORT
//   xiw_atomic_stress_test client ADDR PORT [MODE [Q [T [N [L]]]]]
// MODE faa (default): every QP issues N FetchAdd(1), pipelined up to
// 16 deep.  MODE cas: every QP makes N increments with CmpSwap loops (guess,
// guess + 1; on a mismatch retry with the returned original), one at a time.
// Q QPs (default 8), each its own rdma_cm connection, driven by T threads
// (default 4; QPs dealt round-robin).  N defaults to 20000 (faa) or 2000
// (cas).  While the client runs, a thread of the server adds L (default
// 50000) to the counter with __atomic_fetch_add, or with
// __atomic_compare_exchange_n loops in cas mode, spread over the run.
// The client checks that no two successful operations saw the same
// original value, and each connection ends with a Send of how many
// increments it made.  The server, once every connection has ended, checks
// that the counter is exactly initial + (what they reported) + L, and prints
//   atomic_stress MODE: counter X expected Y: ok
// A connection that reported nothing (its client failed or was killed)
// leaves only bounds to check, and fails the run as unfinished.
// The server takes MODE, Q, N and L from the connect private data.
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include "rdma_test_util.h"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using xiw_test::conn_param_with;
using xiw_test::die;
using xiw_test::one_sge_wr;
using xiw_test::wait_disconnect;
using u64 = std::uint64_t;
using clock_type = std::chrono::steady_clock;

constexpr std::uint32_t pd_magic = 0x78697753; // "xiwS"
// Counting from here crosses bit 32 early on.
constexpr u64 initial_value = 0x00000000ffffc000ull;
// Responder resources and initiator depth each way.
constexpr std::uint8_t atomic_depth = 16;
// FetchAdds in flight per QP: as many as the connection lets through.
constexpr unsigned faa_depth = atomic_depth;
constexpr std::uint32_t send_depth = 64;
// The client's slots for originals, the last for its report (and its wr_id).
constexpr unsigned slot_count = 64;
constexpr unsigned report_slot = slot_count - 1;
static_assert(faa_depth <= report_slot);
constexpr u64 report_wr_id = ~0ull;
// The server's report slots: words of the counter's page, a cache line on.
constexpr unsigned report_word = 8;
constexpr std::uint32_t max_connections = 4096 / sizeof(u64) - report_word;

enum class mode : std::uint32_t { faa = 1, cas = 2 };

const char *mode_name(mode m)
{
	return m == mode::cas ? "cas" : "faa";
}

struct connect_pd {
	std::uint32_t magic;
	mode how;
	std::uint32_t q;     // connections in the run
	std::uint32_t index; // this one
	u64 n;		     // increments per connection
	u64 l;		     // increments of the server's CPU thread
};

struct accept_pd {
	std::uint32_t magic;
	std::uint32_t rkey;
	u64 addr;
	u64 initial;
};

// =============================================================================
// Server
// =============================================================================

// The target's own increments, spread over the client's run: it keeps its
// share of L in step with how far the remote increments have got.
struct cpu_adder {
	u64 *counter = nullptr;
	u64 initial = 0;
	u64 remote_total = 0;
	u64 l = 0;
	bool cas = false;
	std::atomic<bool> stop{false};
	u64 done = 0;
	u64 during = 0; // increments made while remote ones were still due
	u64 cas_retries = 0;

	void increment()
	{
		if (!cas) {
			__atomic_fetch_add(counter, 1, __ATOMIC_SEQ_CST);
			return;
		}
		u64 old = __atomic_load_n(counter, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n(counter, &old, old + 1, false, __ATOMIC_SEQ_CST,
						    __ATOMIC_RELAXED))
			cas_retries++;
	}

	void run()
	{
		while (done < l) {
			bool remote_running = false;
			if (!stop.load()) {
				const u64 cur = __atomic_load_n(counter, __ATOMIC_SEQ_CST);
				const u64 remote = std::min(cur - initial - done, remote_total);
				remote_running = remote < remote_total;
				const u64 want =
					remote_total
						? static_cast<u64>(static_cast<double>(l) *
								   static_cast<double>(remote) /
								   static_cast<double>(remote_total)) +
							  64
						: l;
				if (remote_running && done >= want) {
					std::this_thread::sleep_for(std::chrono::microseconds(200));
					continue;
				}
			}
			const u64 burst = std::min<u64>(32, l - done);
			for (u64 i = 0; i < burst; i++)
				increment();
			done += burst;
			if (remote_running)
				during += burst;
		}
	}
};


int run_server(const char *addr, const char *port)
{
	rdma_cm_id *listen_id =
		xiw_test::listen_on("atomic_stress", addr, port, xiw_test::rc_qp_attr(4, 4), 16);

	auto *page = static_cast<u64 *>(std::aligned_alloc(4096, 4096));
	if (!page)
		die("aligned_alloc");
	std::memset(page, 0, 4096);
	u64 *counter = page; // 8-byte aligned
	*counter = initial_value;

	std::vector<rdma_cm_id *> ids;
	std::map<ibv_pd *, ibv_mr *> mrs;
	connect_pd run{};
	do {
		rdma_cm_id *id = nullptr;
		if (rdma_get_request(listen_id, &id))
			die("rdma_get_request");
		connect_pd req{};
		const rdma_conn_param &cp = id->event->param.conn;
		if (cp.private_data && cp.private_data_len >= sizeof(req))
			std::memcpy(&req, cp.private_data, sizeof(req));
		if (ids.empty())
			run = req;
		if (req.magic != pd_magic || req.how != run.how || req.q != run.q ||
		    req.n != run.n || req.l != run.l || req.q == 0 || req.q > max_connections) {
			std::printf("atomic_stress server: unexpected connect request, rejected\n");
			rdma_reject(id, nullptr, 0);
			rdma_destroy_ep(id);
			if (ids.empty())
				run = {};
			continue;
		}
		ibv_mr *&mr = mrs[id->pd];
		if (!mr)
			mr = ibv_reg_mr(id->pd, page, 4096,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		if (!mr)
			die("ibv_reg_mr with IBV_ACCESS_REMOTE_ATOMIC");
		u64 *report = page + report_word + ids.size();
		if (xiw_test::post_recv_one(id->qp, report, sizeof(*report), mr->lkey, ids.size()))
			die("ibv_post_recv for the report");
		accept_pd t{pd_magic, mr->rkey, reinterpret_cast<std::uintptr_t>(counter),
			    initial_value};
		rdma_conn_param p = conn_param_with(t, atomic_depth);
		if (rdma_accept(id, &p))
			die("rdma_accept");
		ids.push_back(id);
	} while (ids.empty() || ids.size() < run.q);

	const mode how = run.how;
	std::printf("atomic_stress server: %s: %u connections x %" PRIu64
		    " increments, %" PRIu64 " by the CPU\n",
		    mode_name(how), run.q, run.n, run.l);
	std::fflush(stdout);
	cpu_adder cpu;
	cpu.counter = counter;
	cpu.initial = initial_value;
	cpu.remote_total = static_cast<u64>(run.q) * run.n;
	cpu.l = run.l;
	cpu.cas = how == mode::cas;
	std::thread cpu_thread([&cpu] { cpu.run(); });

	// Every remote operation has been executed once its requester saw the
	// response, i.e. before the requester disconnects.
	int rc = 0;
	for (rdma_cm_id *id : ids)
		if (!wait_disconnect(id, 1800 * 1000)) {
			std::printf("atomic_stress server: a client did not disconnect\n");
			rc = 1;
		}
	cpu.stop = true;
	cpu_thread.join();

	const u64 final_value = __atomic_load_n(counter, __ATOMIC_SEQ_CST);
	std::printf("atomic_stress server: CPU thread: %" PRIu64 " increments, %" PRIu64
		    " of them while remote ones were due, %" PRIu64 " CAS retries\n",
		    cpu.done, cpu.during, cpu.cas_retries);
	// The reports arrived before the disconnects that wait_disconnect saw.
	u64 reported = 0;
	std::uint32_t silent = 0;
	for (std::size_t i = 0; i < ids.size(); i++) {
		ibv_wc wc{};
		if (ibv_poll_cq(ids[i]->recv_cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
		    wc.byte_len == sizeof(u64) && wc.wr_id == i)
			reported += page[report_word + i];
		else
			silent++;
	}
	const u64 expected = initial_value + reported + cpu.done;
	if (silent) {
		// Unfinished, not miscounted: judge what can be judged.
		const u64 most = expected + static_cast<u64>(silent) * run.n;
		std::printf("atomic_stress %s: FAIL: %u of %u connections reported no result "
			    "(client failed or killed): counter %" PRIu64 " %s [%" PRIu64
			    ", %" PRIu64 "]\n",
			    mode_name(how), silent, run.q, final_value,
			    final_value >= expected && final_value <= most ? "within" : "OUTSIDE",
			    expected, most);
		rc = 1;
	} else if (final_value == expected) {
		std::printf("atomic_stress %s: counter %" PRIu64 " expected %" PRIu64 ": ok\n",
			    mode_name(how), final_value, expected);
	} else {
		const auto diff = static_cast<std::int64_t>(expected - final_value);
		std::printf("atomic_stress %s: FAIL: counter %" PRIu64 " expected %" PRIu64
			    ": %" PRId64 " updates %s\n",
			    mode_name(how), final_value, expected, diff > 0 ? diff : -diff,
			    diff > 0 ? "lost" : "too many (duplicated)");
		rc = 1;
	}
	for (rdma_cm_id *id : ids) {
		rdma_disconnect(id);
		rdma_destroy_ep(id);
	}
	for (auto &[pd, mr] : mrs)
		ibv_dereg_mr(mr);
	return rc;
}

// =============================================================================
// Client
// =============================================================================

struct qp_state {
	rdma_cm_id *id = nullptr;
	ibv_mr *mr = nullptr;
	u64 *slots = nullptr; // original values come back here
	u64 raddr = 0;
	std::uint32_t rkey = 0;
	u64 posted = 0;
	u64 completed = 0;
	u64 succeeded = 0;
	unsigned inflight = 0;
	u64 guess = 0; // cas
	u64 retries = 0;
	std::vector<u64> originals; // of the successful operations
	std::string error;
};

void post_atomic(qp_state &q, mode how, unsigned depth)
{
	const unsigned slot = static_cast<unsigned>(q.posted % depth);
	const bool faa = how == mode::faa;
	one_sge_wr w(faa ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP,
		     &q.slots[slot], 8, q.mr->lkey, q.posted);
	w.wr.wr.atomic.remote_addr = q.raddr;
	w.wr.wr.atomic.rkey = q.rkey;
	w.wr.wr.atomic.compare_add = faa ? 1 : q.guess;
	if (!faa)
		w.wr.wr.atomic.swap = q.guess + 1;
	if (int rc = w.post(q.id->qp)) {
		q.error = std::string("ibv_post_send: ") + std::strerror(rc);
		return;
	}
	q.posted++;
	q.inflight++;
}

// Drives the QPs of one thread until each has N successful increments.
void drive(std::vector<qp_state *> qps, mode how, u64 n)
{
	const unsigned depth = how == mode::faa ? faa_depth : 1;
	auto last_progress = clock_type::now();
	unsigned idle = 0;
	for (;;) {
		bool busy = false, progress = false;
		for (qp_state *q : qps) {
			if (!q->error.empty() || q->succeeded == n)
				continue;
			busy = true;
			if (how == mode::faa) {
				while (q->inflight < depth && q->posted < n && q->error.empty())
					post_atomic(*q, how, depth);
			} else if (q->inflight == 0) {
				post_atomic(*q, how, depth);
			}
			ibv_wc wc[16];
			int got = ibv_poll_cq(q->id->send_cq, 16, wc);
			if (got < 0) {
				q->error = "ibv_poll_cq failed";
				continue;
			}
			for (int i = 0; i < got && q->error.empty(); i++) {
				progress = true;
				q->inflight--;
				q->completed++;
				const ibv_wc_opcode want =
					how == mode::faa ? IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP;
				if (wc[i].status != IBV_WC_SUCCESS) {
					q->error = std::string("completion: ") +
						   ibv_wc_status_str(wc[i].status);
					break;
				}
				if (wc[i].opcode != want || wc[i].byte_len != 8) {
					q->error = "completion with opcode " +
						   std::to_string(wc[i].opcode) + ", byte_len " +
						   std::to_string(wc[i].byte_len);
					break;
				}
				const u64 orig = q->slots[wc[i].wr_id % depth];
				if (how == mode::faa) {
					q->succeeded++;
					q->originals.push_back(orig);
				} else if (orig == q->guess) {
					q->succeeded++;
					q->originals.push_back(orig);
					q->guess = orig + 1;
				} else {
					q->retries++;
					q->guess = orig;
				}
			}
		}
		if (!busy)
			return;
		if (progress) {
			last_progress = clock_type::now();
			idle = 0;
			continue;
		}
		if (++idle < 100)
			continue;
		if (clock_type::now() - last_progress > std::chrono::seconds(60)) {
			for (qp_state *q : qps)
				if (q->error.empty() && q->succeeded < n)
					q->error = "no completion for 60 s";
			return;
		}
		std::this_thread::sleep_for(std::chrono::microseconds(20));
	}
}

// Sends the server this connection's count of increments, once all of
// them completed: the server judges the counter by what was done.
bool report_to_server(qp_state &q)
{
	u64 *report = &q.slots[report_slot];
	*report = q.succeeded;
	one_sge_wr w(IBV_WR_SEND, report, sizeof(*report), q.mr->lkey, report_wr_id);
	ibv_wc wc{};
	return w.post(q.id->qp) == 0 && xiw_test::poll_one(q.id->send_cq, wc, 60 * 1000) &&
	       wc.status == IBV_WC_SUCCESS && wc.wr_id == report_wr_id;
}

int run_client(const char *addr, const char *port, mode how, unsigned nq, unsigned nt, u64 n,
	       u64 l)
{
	std::vector<qp_state> qps(nq);
	for (unsigned i = 0; i < nq; i++) {
		qp_state &q = qps[i];
		ibv_qp_init_attr attr = xiw_test::rc_qp_attr(send_depth, 1);
		q.id = xiw_test::endpoint_to(addr, port, &attr);
		q.slots = static_cast<u64 *>(std::aligned_alloc(64, slot_count * sizeof(u64)));
		if (!q.slots)
			die("aligned_alloc");
		q.mr = ibv_reg_mr(q.id->pd, q.slots, slot_count * sizeof(u64), IBV_ACCESS_LOCAL_WRITE);
		if (!q.mr)
			die("ibv_reg_mr");
		connect_pd req{pd_magic, how, nq, i, n, l};
		rdma_conn_param p = conn_param_with(req, atomic_depth);
		if (rdma_connect(q.id, &p))
			die("rdma_connect");
		const rdma_conn_param &cp = q.id->event->param.conn;
		accept_pd t{};
		if (!cp.private_data || cp.private_data_len < sizeof(t))
			die("no counter address in the accept private data");
		std::memcpy(&t, cp.private_data, sizeof(t));
		if (t.magic != pd_magic)
			die("bad accept private data");
		q.raddr = t.addr;
		q.rkey = t.rkey;
		q.guess = t.initial;
		q.originals.reserve(n);
	}

	std::printf("atomic_stress client: %s: %u QPs on %u threads x %" PRIu64 " increments\n",
		    mode_name(how), nq, nt, n);
	std::fflush(stdout);
	const auto t0 = clock_type::now();
	std::vector<std::thread> threads;
	for (unsigned t = 0; t < nt; t++) {
		std::vector<qp_state *> mine;
		for (unsigned i = t; i < nq; i += nt)
			mine.push_back(&qps[i]);
		threads.emplace_back(drive, mine, how, n);
	}
	for (auto &t : threads)
		t.join();
	const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();

	int rc = 0;
	u64 succeeded = 0, retries = 0, completed = 0;
	std::vector<u64> all;
	all.reserve(static_cast<std::size_t>(nq) * n);
	for (unsigned i = 0; i < nq; i++) {
		const qp_state &q = qps[i];
		succeeded += q.succeeded;
		retries += q.retries;
		completed += q.completed;
		all.insert(all.end(), q.originals.begin(), q.originals.end());
		if (!q.error.empty()) {
			std::printf("atomic_stress client: FAIL: QP %u after %" PRIu64
				    " increments: %s\n",
				    i, q.succeeded, q.error.c_str());
			rc = 1;
		}
	}
	// Each successful FetchAdd(1) or CmpSwap(v, v + 1) owns the value it
	// saw: two of them seeing the same original means an update was lost.
	std::sort(all.begin(), all.end());
	u64 dups = 0;
	for (std::size_t i = 1; i < all.size(); i++)
		dups += all[i] == all[i - 1];
	std::printf("atomic_stress client: %s: %" PRIu64 " of %" PRIu64
		    " increments in %.1f s (%.0f/s), %" PRIu64 " operations, %" PRIu64
		    " CmpSwap retries, %" PRIu64 " duplicate originals\n",
		    mode_name(how), succeeded, static_cast<u64>(nq) * n, secs,
		    static_cast<double>(completed) / secs, completed, retries, dups);
	if (dups) {
		std::printf("atomic_stress client: FAIL: %" PRIu64
			    " operations saw an original value another one saw too "
			    "(lost updates)\n",
			    dups);
		rc = 1;
	}
	if (succeeded != static_cast<u64>(nq) * n)
		rc = 1;
	for (unsigned i = 0; i < nq; i++)
		if (qps[i].error.empty() && !report_to_server(qps[i])) {
			std::printf("atomic_stress client: FAIL: QP %u could not report\n", i);
			rc = 1;
		}
	for (qp_state &q : qps) {
		rdma_disconnect(q.id);
		ibv_dereg_mr(q.mr);
		rdma_destroy_ep(q.id);
		std::free(q.slots);
	}
	if (!rc)
		std::printf("atomic_stress client: %s: ok\n", mode_name(how));
	return rc;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc == 4 && std::strcmp(argv[1], "server") == 0)
		return run_server(argv[2], argv[3]);
	if (argc >= 4 && argc <= 9 && std::strcmp(argv[1], "client") == 0) {
		const std::string m = argc > 4 ? argv[4] : "faa";
		if (m != "faa" && m != "cas") {
			std::fprintf(stderr, "MODE is faa or cas\n");
			return 2;
		}
		const mode how = m == "cas" ? mode::cas : mode::faa;
		auto arg = [&](int i, u64 def) {
			return argc > i ? std::strtoull(argv[i], nullptr, 0) : def;
		};
		const auto nq = static_cast<unsigned>(arg(5, 8));
		const auto nt = static_cast<unsigned>(arg(6, 4));
		const u64 n = arg(7, how == mode::faa ? 20000 : 2000);
		const u64 l = arg(8, 50000);
		if (!nq || !nt || !n) {
			std::fprintf(stderr, "Q, T and N must be positive\n");
			return 2;
		}
		return run_client(argv[2], argv[3], how, nq, std::min(nt, nq), n, l);
	}
	std::fprintf(stderr, "usage: %s server ADDR PORT | client ADDR PORT [faa|cas [Q [T [N [L]]]]]\n",
		     argv[0]);
	return 2;
}
