// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Connection churn for the soak (tests/soak/soak.bash): a server that
// accepts every connection, and a client whose SLOTS threads each connect,
// transfer and disconnect, over and over.
//   xiw_churn server ADDR PORT SECONDS
// The server stops after SECONDS or when its device goes away.
//   xiw_churn client ADDR PORT SLOTS CYCLES SECONDS [tolerate]
// A client cycle: resolve, a QP and an MR of its own, connect (the server
// tells its region in the private data of its accept), a Send, an RDMA
// Write of 4 KiB into the server's region, an RDMA Read of it back
// (compared), a FetchAdd, disconnect, everything destroyed.  Every wait
// is bounded.  The client stops after CYCLES cycles or SECONDS; it fails
// on the first failed cycle, or with "tolerate" (the soak's link, kill
// and fault phases) counts failed cycles and fails only if a call hangs
// past its bound or no cycle succeeded.  Prints "cycles: N ok, M failed".
// SIGUSR1 holds the client (the soak's rmmod phase; see hold_gate).
// With XIW_CHURN_FAULTS=1 in the environment (the soak's fault phase) the
// kernel's fault injection applies to the server's and the client's own
// verbs calls once they are set up; see prepare_for_faults().

#include "../hostile/hostile_lib.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using namespace xiw_hostile;
using xiw_test::strf;

constexpr std::size_t slot_len = 8192, xfer_len = 4096, msg_len = 64;
constexpr u32 max_slots = 256;
constexpr int wait_ms = 20000;

// What the server's accept tells the client.
struct region_info {
	u64 addr;
	u32 rkey;
	u32 slot_len;
} __attribute__((packed));

// XIW_CHURN_FAULTS=1: the soak's fault phase.
const bool g_faults = [] {
	const char *v = std::getenv("XIW_CHURN_FAULTS");
	return v && std::string(v) == "1";
}();

// Before a fault_injection: the process opts into failslab/fail_page_alloc
// (task-filter) itself, not before exec, and not before librdmacm has
// loaded its providers: the loader's own allocations would fail.
// Everything mapped is locked so that no page of a program or library is
// read again through the guest's 9p root while allocations fail (a failed
// 9p read leaves files of the root unreadable for every process: "Invalid
// argument").
void prepare_for_faults()
{
	if (!g_faults)
		return;
	if (rdma_event_channel *ch = rdma_create_event_channel())
		rdma_destroy_event_channel(ch);
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		fail("mlockall: %s", std::strerror(errno));
}

// Fault injection for the calling thread (make-it-fail belongs to a task
// and only threads created afterwards inherit it) from construction to
// off() or the end of its scope.  Off again before the thread ends: the
// last task of a process closes its files at exit, and a failed allocation
// there (a 9p clunk) breaks the guest's root as above.  The file is opened
// before the faults start: opening it allocates, writing to it does not.
class fault_injection {
public:
	fault_injection()
	{
		if (!g_faults)
			return;
		fd_ = open("/proc/thread-self/make-it-fail", O_WRONLY | O_CLOEXEC);
		if (fd_ < 0 || write(fd_, "1", 1) != 1)
			fail("cannot write /proc/thread-self/make-it-fail: %s", std::strerror(errno));
	}
	~fault_injection() { off(); }
	fault_injection(const fault_injection &) = delete;
	fault_injection &operator=(const fault_injection &) = delete;

	void off()
	{
		if (fd_ < 0)
			return;
		if (write(fd_, "0", 1) != 1)
			fail("cannot write /proc/thread-self/make-it-fail: %s", std::strerror(errno));
		close(fd_);
		fd_ = -1;
	}

private:
	int fd_ = -1;
};

// SIGTERM (the soak's stop_server) ends the server's loop, so that it
// turns its fault injection off before it ends.
volatile std::sig_atomic_t g_terminate = 0;

// ----------------------------------------------------------------- server

int run_server(const char *addr, const char *port, int seconds)
{
	rdma_event_channel *ch = rdma_create_event_channel();
	rdma_cm_id *listen = xiw_test::listen_async(ch, addr, port, 256);
	ibv_pd *pd = ibv_alloc_pd(listen->verbs);
	alignas(4096) static u8 region[max_slots * slot_len];
	static u8 inbox[msg_len];
	ibv_mr *mr = pd ? ibv_reg_mr(pd, region, sizeof(region),
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
					    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)
			: nullptr;
	ibv_mr *in_mr = pd ? ibv_reg_mr(pd, inbox, sizeof(inbox), IBV_ACCESS_LOCAL_WRITE) : nullptr;
	if (!mr || !in_mr)
		xiw_test::die("ibv_reg_mr");
	std::printf("xiw_churn server: listening on %s:%s\n", addr, port);
	std::fflush(stdout);
	std::signal(SIGTERM, [](int) { g_terminate = 1; });
	prepare_for_faults();
	fault_injection faults;
	std::map<rdma_cm_id *, ibv_cq *> conns;
	u64 accepted = 0;
	const long long until = xiw_raw::now_ms() + seconds * 1000LL;
	while (xiw_raw::now_ms() < until && !g_terminate) {
		pollfd p{ch->fd, POLLIN, 0};
		if (poll(&p, 1, 100) <= 0)
			continue;
		const auto [id, type] = xiw_test::next_cm_event(ch);
		if (id == listen && type == RDMA_CM_EVENT_DEVICE_REMOVAL)
			break;	// the device went away (the soak's link phase)
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			ibv_cq *cq = ibv_create_cq(id->verbs, 8, nullptr, nullptr, 0);
			ibv_qp_init_attr a = xiw_test::rc_qp_attr(4, 4);
			a.send_cq = a.recv_cq = cq;
			if (!cq || rdma_create_qp(id, pd, &a)) {
				// Out of resources (the fault phase): refuse this one.
				rdma_reject(id, nullptr, 0);
				if (cq)
					ibv_destroy_cq(cq);
				rdma_destroy_id(id);
				continue;
			}
			xiw_test::post_recv_one(id->qp, inbox, msg_len, in_mr->lkey);
			const region_info info{reinterpret_cast<std::uintptr_t>(region), mr->rkey,
					       slot_len};
			rdma_conn_param cp = xiw_test::conn_param_with(info);
			conns[id] = cq;
			accepted++;
			if (rdma_accept(id, &cp) == 0)
				continue;
		} else if (type == RDMA_CM_EVENT_ESTABLISHED || !conns.count(id)) {
			continue;
		}
		ibv_cq *cq = conns[id];
		conns.erase(id);
		rdma_destroy_qp(id);
		ibv_destroy_cq(cq);
		rdma_destroy_id(id);
	}
	faults.off();
	for (auto &[id, cq] : conns) {
		rdma_disconnect(id);
		rdma_destroy_qp(id);
		ibv_destroy_cq(cq);
		rdma_destroy_id(id);
	}
	ibv_dereg_mr(mr);
	ibv_dereg_mr(in_mr);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(listen);
	rdma_destroy_event_channel(ch);
	std::printf("xiw_churn server: %" PRIu64 " connections accepted\n", accepted);
	return 0;
}

// ----------------------------------------------------------------- client

// SIGUSR1, sent by the soak's rmmod phase before it unregisters the
// devices, holds the client: from then on no cycle starts a route
// resolution (its ID waits at the gate with its address resolved) and a
// connection that is up keeps moving data instead of closing, so the
// devices go away under live traffic.  Once every slot is at the gate or
// lingering the client prints "held: N connections open".
//
// Why: rdma_cm itself (6.1 to at least 6.12, whatever the driver) has a
// race at device removal.  cma_send_device_removal_put() drops the ID's
// handler_mutex after the DEVICE_REMOVAL event and then calls
// cma_cancel_operation() with the state it saw; ucma reacts to that event
// by destroying the ID from its close_work, which clears id.device
// (cma_release_dev()).  For an ID in RDMA_CM_ROUTE_QUERY the cancel then
// reads id.device->port_data: a NULL dereference in cma_cancel_route()
// (hit once by guest.soak in CI, in ib_unregister_work).  No driver can
// close that window; the test stays out of it.
volatile std::sig_atomic_t g_hold = 0;

class hold_gate {
public:
	// Before a route resolution: true to go on, false if the client was
	// held until its end.
	bool pass(long long until)
	{
		if (!g_hold)
			return true;
		settled_++;
		while (xiw_raw::now_ms() < until)
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
		settled_--;
		return false;
	}
	// Scope of a connection kept open while held.
	void linger_begin()
	{
		settled_++;
		lingering_++;
	}
	void linger_end()
	{
		lingering_--;
		settled_--;
	}
	void thread_done() { done_++; }
	// Prints the "held" line once every one of SLOTS threads is settled.
	void announce_when_held(u32 slots)
	{
		if (announced_ || !g_hold || settled_.load() + done_.load() < slots)
			return;
		announced_ = true;
		std::printf("xiw_churn client: held: %u connections open\n", lingering_.load());
		std::fflush(stdout);
	}
	bool all_done(u32 slots) const { return done_.load() == slots; }

private:
	std::atomic<u32> settled_{0}, lingering_{0}, done_{0};
	bool announced_ = false;
};

struct outcome {
	std::atomic<u64> ok{0}, failed{0}, started{0};
	std::atomic<bool> stop{false};
	std::mutex lock;
	std::map<std::string, u64> why;
};

// One cycle of slot S; empty on success, else what failed.
class cycle {
public:
	cycle(const char *addr, const char *port, u32 slot, hold_gate &gate, long long until)
		: addr_(addr), port_(port), slot_(slot), gate_(gate), until_(until)
	{
	}
	~cycle()
	{
		if (id_ && id_->qp)
			rdma_destroy_qp(id_);
		if (mr_)
			ibv_dereg_mr(mr_);
		if (cq_)
			ibv_destroy_cq(cq_);
		if (pd_)
			ibv_dealloc_pd(pd_);
		if (id_)
			rdma_destroy_id(id_);
		if (ch_)
			rdma_destroy_event_channel(ch_);
	}
	cycle(const cycle &) = delete;
	cycle &operator=(const cycle &) = delete;

	std::string run()
	{
		ch_ = rdma_create_event_channel();
		if (!ch_ || rdma_create_id(ch_, &id_, nullptr, RDMA_PS_TCP))
			return "rdma_create_id";
		rdma_addrinfo *res = nullptr;
		rdma_addrinfo hints{};
		hints.ai_port_space = RDMA_PS_TCP;
		if (rdma_getaddrinfo(addr_, port_, &hints, &res))
			return "rdma_getaddrinfo";
		const int ra = rdma_resolve_addr(id_, nullptr, res->ai_dst_addr, 5000);
		rdma_freeaddrinfo(res);
		if (ra || !expect(RDMA_CM_EVENT_ADDR_RESOLVED))
			return "address resolution";
		if (!gate_.pass(until_))
			return "the gate (held)";
		if (rdma_resolve_route(id_, 5000) || !expect(RDMA_CM_EVENT_ROUTE_RESOLVED))
			return "route resolution";
		pd_ = ibv_alloc_pd(id_->verbs);
		cq_ = ibv_create_cq(id_->verbs, 8, nullptr, nullptr, 0);
		mr_ = pd_ ? ibv_reg_mr(pd_, buf_, sizeof(buf_), IBV_ACCESS_LOCAL_WRITE) : nullptr;
		if (!cq_ || !mr_)
			return "ibv_alloc_pd/ibv_create_cq/ibv_reg_mr";
		ibv_qp_init_attr a = xiw_test::rc_qp_attr(8, 4);
		a.send_cq = a.recv_cq = cq_;
		if (rdma_create_qp(id_, pd_, &a))
			return "rdma_create_qp";
		rdma_conn_param cp = xiw_test::conn_param();
		if (rdma_connect(id_, &cp) || !expect(RDMA_CM_EVENT_ESTABLISHED))
			return "connect";
		if (info_.slot_len < slot_len || info_.rkey == 0)
			return "the server's private data";
		if (std::string why = transfer(true); !why.empty())
			return why;
		if (g_hold) {
			gate_.linger_begin();
			std::string why = linger();
			gate_.linger_end();
			if (!why.empty())
				return "lingering: " + why;
		}
		if (rdma_disconnect(id_) || !expect(RDMA_CM_EVENT_DISCONNECTED))
			return "disconnect";
		return "";
	}

	static inline std::atomic<u32> serials{0};

private:
	// A Send (WITH_SEND), an RDMA Write of 4 KiB into the server's region,
	// a Read of it back (compared) and a FetchAdd.
	std::string transfer(bool with_send)
	{
		const u64 remote = info_.addr + slot_ * slot_len;
		serial_++;
		for (std::size_t i = 0; i < xfer_len; i++)
			buf_[i] = static_cast<u8>(i * 31 + slot_ + serial_);
		if ((with_send && !post(IBV_WR_SEND, 0, msg_len, 0)) ||
		    !post(IBV_WR_RDMA_WRITE, 0, xfer_len, remote) ||
		    !post(IBV_WR_RDMA_READ, xfer_len, xfer_len, remote) ||
		    !post(IBV_WR_ATOMIC_FETCH_AND_ADD, 2 * xfer_len, 8, remote + xfer_len))
			return "ibv_post_send";
		for (int k = 0; k < (with_send ? 4 : 3); k++) {
			ibv_wc wc{};
			if (!xiw_test::poll_one(cq_, wc, wait_ms))
				return "a completion in time";
			if (wc.status != IBV_WC_SUCCESS)
				return std::string("completion: ") + ibv_wc_status_str(wc.status);
		}
		if (std::memcmp(buf_, buf_ + xfer_len, xfer_len))
			return "the Read returned other data than the Write wrote";
		return "";
	}
	// Held: transfers (no Sends: the server posted one receive) until the
	// client's end or the first failure, which the device's removal brings.
	std::string linger()
	{
		while (xiw_raw::now_ms() < until_) {
			if (std::string why = transfer(false); !why.empty())
				return why;
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		}
		return "";
	}
	bool expect(rdma_cm_event_type want)
	{
		pollfd p{ch_->fd, POLLIN, 0};
		if (poll(&p, 1, wait_ms) <= 0)
			return false;
		rdma_cm_event *ev = nullptr;
		if (rdma_get_cm_event(ch_, &ev))
			return false;
		const bool ok = ev->event == want;
		if (ok && want == RDMA_CM_EVENT_ESTABLISHED &&
		    ev->param.conn.private_data_len >= sizeof(info_))
			std::memcpy(&info_, ev->param.conn.private_data, sizeof(info_));
		rdma_ack_cm_event(ev);
		return ok;
	}
	bool post(ibv_wr_opcode op, std::size_t off, std::size_t len, u64 remote)
	{
		xiw_test::one_sge_wr w(op, buf_ + off, static_cast<u32>(len), mr_->lkey);
		if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			w.wr.wr.atomic.remote_addr = remote;
			w.wr.wr.atomic.rkey = info_.rkey;
			w.wr.wr.atomic.compare_add = 1;
		} else {
			w.wr.wr.rdma.remote_addr = remote;
			w.wr.wr.rdma.rkey = info_.rkey;
		}
		return w.post(id_->qp) == 0;
	}

	const char *addr_, *port_;
	u32 slot_, serial_ = serials++;
	hold_gate &gate_;
	long long until_;
	rdma_event_channel *ch_ = nullptr;
	rdma_cm_id *id_ = nullptr;
	ibv_pd *pd_ = nullptr;
	ibv_cq *cq_ = nullptr;
	ibv_mr *mr_ = nullptr;
	region_info info_{};
	alignas(64) u8 buf_[2 * xfer_len + 8];
};

int run_client(const char *addr, const char *port, u32 slots, u64 cycles, int seconds,
	       bool tolerate)
{
	if (slots == 0 || slots > max_slots)
		fail("1..%u slots", max_slots);
	outcome out;
	hold_gate gate;
	const long long until = xiw_raw::now_ms() + seconds * 1000LL;
	std::vector<std::thread> threads;
	std::signal(SIGUSR1, [](int) { g_hold = 1; });
	std::printf("xiw_churn client: %u slots connecting to %s:%s\n", slots, addr, port);
	std::fflush(stdout);
	prepare_for_faults();
	for (u32 s = 0; s < slots; s++)
		threads.emplace_back([&, s] {
			const fault_injection faults;
			while (!out.stop.load() && xiw_raw::now_ms() < until &&
			       out.started.fetch_add(1) < cycles) {
				const std::string why = cycle(addr, port, s, gate, until).run();
				if (why.empty()) {
					out.ok++;
					continue;
				}
				out.failed++;
				std::lock_guard<std::mutex> g(out.lock);
				out.why[why]++;
				if (!tolerate)
					out.stop = true;
			}
			gate.thread_done();
		});
	while (!gate.all_done(slots)) {
		gate.announce_when_held(slots);
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
	}
	for (std::thread &t : threads)
		t.join();
	std::printf("xiw_churn client: cycles: %" PRIu64 " ok, %" PRIu64 " failed, %u slots\n",
		    out.ok.load(), out.failed.load(), slots);
	for (const auto &[why, n] : out.why)
		std::printf("  failed at %s: %" PRIu64 "\n", why.c_str(), n);
	if (out.failed && !tolerate)
		fail("a cycle failed at %s", out.why.begin()->first.c_str());
	if (!out.ok)
		fail("no cycle succeeded");
	if (!tolerate && out.ok < cycles)
		fail("%" PRIu64 " of %" PRIu64 " cycles in %d s", out.ok.load(), cycles, seconds);
	pass(strf("%" PRIu64 " cycles over %u slots", out.ok.load(), slots));
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	g_tool = "xiw_churn";
	if (argc == 5 && std::string(argv[1]) == "server") {
		g_case = "server";
		return run_server(argv[2], argv[3], std::atoi(argv[4]));
	}
	if ((argc == 7 || argc == 8) && std::string(argv[1]) == "client") {
		g_case = "client";
		return run_client(argv[2], argv[3], static_cast<u32>(std::atoi(argv[4])),
				  std::strtoull(argv[5], nullptr, 0), std::atoi(argv[6]),
				  argc == 8 && std::string(argv[7]) == "tolerate");
	}
	std::fprintf(stderr, "usage: xiw_churn server ADDR PORT SECONDS\n"
			     "       xiw_churn client ADDR PORT SLOTS CYCLES SECONDS [tolerate]\n");
	return 2;
}
