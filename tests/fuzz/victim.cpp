// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// The wire fuzzer's victim: an ordinary verbs consumer on an iWARP device
// (xiw) that exposes memory to whoever connects and checks, after every
// connection, that the peer changed nothing it had no right to change.
//
//   xiw_fuzz_victim listen ADDR PORT [OPTIONS]
//   xiw_fuzz_victim client ADDR PORT COUNT [OPTIONS]
//
// listen: an rdma_cm listener on ADDR:PORT that serves one connection at a
// time (others wait their turn) until a peer's fz_hello says HF_QUIT or
// --max-conns connections were served.  client: connects COUNT times to a
// (hostile) MPA responder at ADDR:PORT (tests/fuzz/fuzzer.cpp "respond").
// Per connection (fuzz_proto.h has the shared definitions):
//   - a PD, a second PD, one CQ, an RC QP with the fz_hello's
//     responder_resources/initiator_depth, n_recv posted receives of
//     several SGE layouts (reposted as they complete, unless HF_NO_REPOST);
//   - the regions of region_kind, each inside a larger mapping between
//     guard areas filled with canary_byte(), its window with region_byte();
//     R_RW is placed across a 4 GiB boundary of the address space;
//   - fz_target (STags, addresses, lengths, rights) as the accept (client:
//     connect) private data;
//   - once established, the fz_hello's actions posted toward the peer;
//   - every work completion checked as it comes: wr_id one posted and not
//     completed before, status in a known set, opcode that of the work
//     request; a successful receive holds send_byte() and nothing more, a
//     successful Read the fake_byte()s, an Atomic the fake_atomic_orig();
//   - after the disconnect (or --conn-seconds): QP queried, moved to Error,
//     every posted work request must complete (flushed) within 10 s;
//   - canaries unchanged; windows without a remote write or atomic right
//     unchanged (R_RO, R_LOCAL, R_FLUSH, R_OTHERPD, R_DEREG, R_SRC), R_RECV
//     outside the SGEs of completed receives, R_SINK outside the windows of
//     posted actions;
//   - teardown (MRs before QP, or QP first with HF_QP_FIRST), each call
//     watched by a watchdog thread: one taking longer than --hang-seconds
//     prints "victim: HANG" (the call may never return: a kernel bug).
// Output: one line per connection,
//   victim: conn N case C seed S: ... : ok|FAIL: why
// and at the end "victim summary: ...".  Exit status 0, or 1 if any
// connection failed its checks, 3 if the watchdog fired.
#include "fuzz_proto.h"

#include <infiniband/verbs.h>
#include <infiniband/xiwdv.h>
#include <rdma/rdma_cma.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace xiw_fuzz;

namespace {

// ---------------------------------------------------------------------------
// Options
struct options {
	const char *addr = nullptr;
	const char *port = nullptr;
	bool client = false;
	unsigned count = 0;        // client: connections
	unsigned max_conns = 0;    // listen: 0 = until HF_QUIT
	int conn_seconds = 60;     // a connection's longest life
	int hang_seconds = 20;     // a teardown call's longest time
	std::string file;          // backs R_FLUSH
	bool verbose = false;
} opt;

long long now_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	const std::string m = vstrf(fmt, ap);
	va_end(ap);
	std::printf("victim: FATAL: %s\n", m.c_str());
	std::fflush(stdout);
	std::exit(2);
}

// ---------------------------------------------------------------------------
// Watchdog: the phase under way and when it must be over.
std::atomic<long long> g_deadline{0};
std::atomic<const char *> g_phase{"start"};
std::atomic<unsigned> g_conn{0};
std::atomic<bool> g_hung{false};

void phase(const char *what, int seconds)
{
	g_phase.store(what);
	g_deadline.store(seconds > 0 ? now_ms() + seconds * 1000LL : 0);
}

void watchdog()
{
	const char *reported = nullptr;
	for (;;) {
		std::this_thread::sleep_for(std::chrono::milliseconds(200));
		const long long d = g_deadline.load();
		const char *p = g_phase.load();
		if (!d || now_ms() < d || p == reported)
			continue;
		reported = p;
		g_hung = true;
		char b[256];
		const int n = std::snprintf(b, sizeof(b),
					    "victim: HANG: conn %u: %s did not return within %d s\n",
					    g_conn.load(), p, opt.hang_seconds);
		if (n > 0 && write(1, b, static_cast<std::size_t>(n)) < 0)
			_exit(3);
	}
}

// Last resort for a wait in user space that should have ended.
void on_alarm(int)
{
	static const char m[] = "victim: HANG: alarm: a connection outlived its time limit\n";
	if (write(1, m, sizeof(m) - 1) < 0)
		_exit(3);
	_exit(3);
}

// ---------------------------------------------------------------------------
// Memory

struct region_mem {
	u8 *map = nullptr;
	std::size_t map_len = 0;
	std::size_t off = 0; // window offset in the mapping
	std::size_t len = 0;
	bool fixed_4g = false;
	u8 *win() const { return map + off; }
};

region_mem g_mem[R_COUNT];
int g_file_fd = -1;

constexpr std::size_t page = 4096;

std::size_t round_up(std::size_t n, std::size_t a) { return (n + a - 1) / a * a; }

std::size_t region_len(unsigned k)
{
	switch (k) {
	case R_RW: return 8292;
	case R_RO: return 6000;
	case R_WO: return 5000;
	case R_ATOMIC: return 256;
	case R_FLUSH: return 8192;
	case R_RECV: return max_recv * recv_area_len;
	case R_SINK: return max_actions * sink_window;
	default: return 4096;
	}
}

// Offset of the window within its page: every kind its own.
std::size_t region_skew(unsigned k)
{
	switch (k) {
	case R_RO: return 4000;
	case R_WO: return 1;
	case R_ATOMIC: return 8;
	case R_FLUSH: return 100;
	case R_OTHERPD: return 64;
	case R_RECV: return 16;
	case R_SINK: return 32;
	default: return 0;
	}
}

void map_regions()
{
	for (unsigned k = 0; k < R_COUNT; k++) {
		region_mem &m = g_mem[k];
		m.len = region_len(k);
		if (k == R_RW) {
			// Across a 4 GiB boundary X: 4096 + 36 octets below it.
			const std::uintptr_t x = 0x200000000000ull;
			const std::uintptr_t w = x - page - 36;
			const std::uintptr_t base = (w - guard_len) & ~(page - 1);
			m.off = w - base;
			m.map_len = round_up(m.off + m.len + guard_len, page);
			void *p = mmap(reinterpret_cast<void *>(base), m.map_len,
				       PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p != MAP_FAILED && p == reinterpret_cast<void *>(base)) {
				m.map = static_cast<u8 *>(p);
				m.fixed_4g = true;
				continue;
			}
			if (p != MAP_FAILED)
				munmap(p, m.map_len);
			std::printf("victim: note: no mapping at 0x%" PRIxPTR
				    " (%s): R_RW does not straddle 4 GiB\n",
				    base, std::strerror(errno));
		}
		m.off = guard_len + region_skew(k);
		m.map_len = round_up(m.off + m.len + guard_len, page);
		void *p;
		if (k == R_FLUSH) {
			std::string path = opt.file;
			if (path.empty()) {
				const char *t = std::getenv("TMPDIR");
				path = std::string(t && *t ? t : "/tmp") + "/xiw-fuzz-victim." +
				       std::to_string(getpid());
			}
			g_file_fd = open(path.c_str(), O_RDWR | O_CREAT, 0600);
			if (g_file_fd < 0 || ftruncate(g_file_fd, static_cast<off_t>(m.map_len)))
				die("%s: %s", path.c_str(), std::strerror(errno));
			if (opt.file.empty())
				unlink(path.c_str());
			p = mmap(nullptr, m.map_len, PROT_READ | PROT_WRITE, MAP_SHARED, g_file_fd, 0);
		} else {
			p = mmap(nullptr, m.map_len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		}
		if (p == MAP_FAILED)
			die("mmap: %s", std::strerror(errno));
		m.map = static_cast<u8 *>(p);
	}
}

void fill_regions()
{
	for (unsigned k = 0; k < R_COUNT; k++) {
		region_mem &m = g_mem[k];
		for (std::size_t i = 0; i < m.off; i++)
			m.map[i] = canary_byte(k, i);
		for (std::size_t i = m.off + m.len; i < m.map_len; i++)
			m.map[i] = canary_byte(k, i);
		if (k == R_RECV)
			std::memset(m.win(), recv_fill, m.len);
		else
			for (std::size_t i = 0; i < m.len; i++)
				m.win()[i] = region_byte(k, i);
	}
}

// ---------------------------------------------------------------------------
// One connection

constexpr u64 wr_recv = 0x5245435600000000ull; // "RECV" + number
constexpr u64 wr_send = 0x53454e4400000000ull; // "SEND" + action
constexpr int max_reposts = 4096;

struct posted {
	unsigned k; // receive number or action index
	bool done = false;
	int status = -1;
};

struct stats {
	unsigned conns = 0, failed = 0, not_established = 0, accept_failed = 0;
	unsigned long long recv_ok = 0, recv_err = 0, recv_flush = 0, send_ok = 0, send_err = 0;
	unsigned long long bytes_received = 0, reposts = 0, post_failed = 0;
	std::map<int, unsigned long long> async_events;
	std::map<std::string, unsigned> qp_states;
} g_stats;

struct conn {
	rdma_cm_id *id = nullptr;
	fz_hello hello{};
	bool hello_ok = false;
	unsigned no = 0;
	ibv_pd *pd = nullptr, *pd2 = nullptr;
	ibv_comp_channel *ch = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *mr[R_COUNT]{};
	fz_target target{};
	bool qp_created = false;
	std::vector<posted> recvs;  // by receive number
	std::vector<posted> sends;  // by action index
	std::vector<bool> send_posted;
	unsigned recv_outstanding = 0, send_outstanding = 0;
	int reposts = 0;
	bool error_seen = false;
	bool established = false, disconnected = false;
	std::vector<std::string> problems;
	unsigned recv_ok = 0, recv_err = 0, send_ok = 0, send_err = 0;
	u64 bytes = 0;

	void problem(const std::string &s)
	{
		if (problems.size() < 8)
			problems.push_back(s);
		else if (problems.size() == 8)
			problems.push_back("...");
	}
};

rdma_event_channel *g_ec = nullptr;
rdma_cm_id *g_listen = nullptr;
std::deque<std::pair<rdma_cm_id *, std::vector<u8>>> g_pending;
unsigned g_conn_no = 0;
u32 g_caps = 0;
bool g_quit = false;

ibv_access_flags access_of(u8 rights)
{
	static constexpr std::pair<u8, int> access[] = {
		{RT_LW, IBV_ACCESS_LOCAL_WRITE},     {RT_RR, IBV_ACCESS_REMOTE_READ},
		{RT_RW, IBV_ACCESS_REMOTE_WRITE},    {RT_RA, IBV_ACCESS_REMOTE_ATOMIC},
		{RT_FG, XIWDV_ACCESS_FLUSH_GLOBAL},  {RT_FP, XIWDV_ACCESS_FLUSH_PERSISTENT},
		{RT_VC, XIWDV_ACCESS_VERIFY_CRC32C}, {RT_VS, XIWDV_ACCESS_VERIFY_SHA256},
	};
	int a = 0;
	for (const auto &[right, flag] : access)
		if (rights & right)
			a |= flag;
	return static_cast<ibv_access_flags>(a);
}

u8 rights_wanted(unsigned k)
{
	switch (k) {
	case R_RW:
		return RT_LW | RT_RR | RT_RW | RT_RA | RT_FG | RT_VC;
	case R_RO:
		return RT_RR;
	case R_WO:
		return RT_LW | RT_RW;
	case R_ATOMIC:
		return RT_LW | RT_RA;
	case R_FLUSH:
		return RT_RR | RT_FG | RT_FP | RT_VS;
	case R_OTHERPD:
		return RT_LW | RT_RR | RT_RW | RT_RA | RT_FG | RT_VC;
	case R_DEREG:
		return RT_LW | RT_RR | RT_RW | RT_RA;
	default:
		return RT_LW;
	}
}

// What the device can grant (xiwdv caps).
u8 rights_possible(u8 r)
{
	if (!(g_caps & XIWDV_CAP_FLUSH_GLOBAL))
		r &= static_cast<u8>(~RT_FG);
	if (!(g_caps & XIWDV_CAP_FLUSH_PERSISTENT))
		r &= static_cast<u8>(~RT_FP);
	if (!(g_caps & XIWDV_CAP_VERIFY_CRC32C))
		r &= static_cast<u8>(~RT_VC);
	if (!(g_caps & XIWDV_CAP_VERIFY_SHA256))
		r &= static_cast<u8>(~RT_VS);
	return r;
}

// The regions' MRs (R_DEREG registered and deregistered again).
bool register_regions(conn &c)
{
	c.target.magic = target_magic;
	c.target.conn = c.no;
	c.target.n_regions = R_COUNT;
	for (unsigned k = 0; k < R_COUNT; k++) {
		u8 r = rights_possible(rights_wanted(k));
		ibv_pd *pd = k == R_OTHERPD ? c.pd2 : c.pd;
		ibv_mr *mr = ibv_reg_mr(pd, g_mem[k].win(), g_mem[k].len, access_of(r));
		// Without the flush-to-persistence right (the file system may
		// not do it), then without any draft-talpey right.
		for (const u8 drop : {u8(RT_FP), u8(RT_FG | RT_FP | RT_VC | RT_VS)}) {
			if (mr || !(r & drop))
				continue;
			static bool told[R_COUNT];
			if (!told[k])
				std::printf("victim: note: ibv_reg_mr of %s with rights 0x%02x: %s\n",
					    region_name(k), r, std::strerror(errno));
			told[k] = true;
			r &= static_cast<u8>(~drop);
			mr = ibv_reg_mr(pd, g_mem[k].win(), g_mem[k].len, access_of(r));
		}
		if (!mr) {
			c.problem(strf("ibv_reg_mr of %s: %s", region_name(k), std::strerror(errno)));
			return false;
		}
		fz_region &t = c.target.regions[k];
		t.stag = mr->rkey;
		t.kind = static_cast<u8>(k);
		t.rights = r;
		t.addr = reinterpret_cast<std::uintptr_t>(g_mem[k].win());
		t.len = static_cast<u32>(g_mem[k].len);
		if (k == R_DEREG) {
			if (ibv_dereg_mr(mr))
				c.problem("ibv_dereg_mr of the stale region failed");
		} else {
			c.mr[k] = mr;
		}
	}
	return true;
}

u8 *recv_area(unsigned k, const conn &c)
{
	return g_mem[R_RECV].win() + static_cast<std::size_t>(k % c.hello.n_recv) * recv_area_len;
}

bool post_recv(conn &c, unsigned k)
{
	const fz_recv_layout &l = recv_layouts[k % recv_layout_count];
	ibv_sge sge[4]{};
	u8 *area = recv_area(k, c);
	for (unsigned i = 0; i < l.num_sge; i++) {
		sge[i].addr = reinterpret_cast<std::uintptr_t>(area + l.sge[i].off);
		sge[i].length = l.sge[i].len;
		sge[i].lkey = c.mr[R_RECV]->lkey;
	}
	// HF_BAD_RECV: this receive's first SGE names the read-only region
	// (no local write right), so a Send into it must fail.
	if (c.hello.flags & HF_BAD_RECV && k == c.hello.bad_recv_at && l.num_sge) {
		sge[0].addr = reinterpret_cast<std::uintptr_t>(g_mem[R_RO].win());
		sge[0].lkey = c.mr[R_RO]->lkey;
	}
	ibv_recv_wr wr{}, *bad = nullptr;
	wr.wr_id = wr_recv | k;
	wr.sg_list = sge;
	wr.num_sge = static_cast<int>(l.num_sge);
	if (ibv_post_recv(c.id->qp, &wr, &bad)) {
		g_stats.post_failed++;
		return false;
	}
	if (c.recvs.size() <= k)
		c.recvs.resize(k + 1);
	c.recvs[k] = posted{k};
	c.recv_outstanding++;
	return true;
}

bool wc_status_known(int s, bool recv)
{
	switch (s) {
	case IBV_WC_SUCCESS:
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_WR_FLUSH_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_FATAL_ERR:
	case IBV_WC_GENERAL_ERR:
		return true;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_ABORT_ERR:
		return !recv;
	default:
		return false;
	}
}

// A completed receive's area: a successful one holds send_byte() in its
// first BYTE_LEN octets of SGE space (none for an RDMA Write with
// Immediate), receive fill everywhere else; a failed one may have anything
// in its SGEs.  Refilled afterwards for the next receive of the area.
void check_recv_area(conn &c, unsigned k, const ibv_wc &wc)
{
	const fz_recv_layout &l = recv_layouts[k % recv_layout_count];
	u8 *area = recv_area(k, c);
	const bool ok = wc.status == IBV_WC_SUCCESS;
	const bool placed = ok && wc.opcode == IBV_WC_RECV;
	const bool bad_sge = c.hello.flags & HF_BAD_RECV && k == c.hello.bad_recv_at;
	const bool strict = c.hello.flags & HF_STRICT_DATA;
	std::vector<bool> in_sge(recv_area_len, false);
	u32 m = 0; // message offset
	unsigned wrong = 0, first = ~0u;
	for (unsigned i = 0; i < l.num_sge; i++) {
		if (bad_sge && i == 0)
			continue;
		for (u32 j = 0; j < l.sge[i].len; j++) {
			const u32 at = l.sge[i].off + j;
			in_sge[at] = true;
			if (!ok)
				continue;
			const bool in_msg = placed && m < wc.byte_len;
			const u8 want = in_msg ? send_byte(m) : recv_fill;
			if (area[at] != want && (strict || !in_msg)) {
				wrong++;
				first = std::min(first, m);
			}
			m++;
		}
	}
	for (u32 at = 0; at < recv_area_len; at++)
		if (!in_sge[at] && area[at] != recv_fill) {
			wrong++;
			first = std::min(first, 0x80000000u | at);
		}
	if (wrong)
		c.problem(strf("receive %u (status %d, %u octets): %u octets not what was sent "
			       "(first at %s0x%x)",
			       k, wc.status, wc.byte_len, wrong, first & 0x80000000u ? "gap " : "message ",
			       first & 0x7fffffffu));
	std::memset(area, recv_fill, recv_area_len);
}

void post_actions(conn &c)
{
	c.sends.assign(c.hello.n_actions, posted{});
	c.send_posted.assign(c.hello.n_actions, false);
	for (unsigned k = 0; k < c.hello.n_actions; k++) {
		const fz_action &a = c.hello.actions[k];
		ibv_sge sge{};
		ibv_send_wr wr{}, *bad = nullptr;
		const u32 len = std::min<u32>(a.len, a.kind == A_READ ? sink_window : 4096);
		wr.wr_id = wr_send | k;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		sge.lkey = c.mr[R_SINK]->lkey;
		sge.addr = reinterpret_cast<std::uintptr_t>(g_mem[R_SINK].win() + k * sink_window);
		switch (a.kind) {
		case A_READ:
			wr.opcode = IBV_WR_RDMA_READ;
			sge.length = len;
			wr.wr.rdma.remote_addr = fake_to(k);
			wr.wr.rdma.rkey = fake_stag(k);
			break;
		case A_FETCH_ADD:
		case A_CMP_SWAP:
			wr.opcode = a.kind == A_FETCH_ADD ? IBV_WR_ATOMIC_FETCH_AND_ADD
							  : IBV_WR_ATOMIC_CMP_AND_SWP;
			sge.length = 8;
			wr.wr.atomic.remote_addr = fake_to(k);
			wr.wr.atomic.rkey = fake_stag(k);
			wr.wr.atomic.compare_add = a.kind == A_FETCH_ADD ? 1 + k : 0;
			wr.wr.atomic.swap = k;
			break;
		case A_SEND:
		case A_SEND_IMM:
		case A_WRITE:
			wr.opcode = a.kind == A_SEND	  ? IBV_WR_SEND
				    : a.kind == A_SEND_IMM ? IBV_WR_SEND_WITH_IMM
							   : IBV_WR_RDMA_WRITE;
			sge.lkey = c.mr[R_SRC]->lkey;
			sge.addr = reinterpret_cast<std::uintptr_t>(g_mem[R_SRC].win());
			sge.length = len;
			wr.imm_data = htobe32(0x1000 + k);
			wr.wr.rdma.remote_addr = fake_to(k);
			wr.wr.rdma.rkey = fake_stag(k);
			if (!len)
				wr.num_sge = 0;
			break;
		case A_FLUSH:
			xiwdv_wr_flush(&wr, fake_stag(k), fake_to(k), len, XIWDV_FLUSH_GLOBAL,
				       XIWDV_FLUSH_RANGE);
			wr.num_sge = 0;
			wr.sg_list = nullptr;
			break;
		case A_AWRITE:
			xiwdv_wr_atomic_write(&wr, fake_stag(k), fake_to(k), 0x1122334455667788ull + k);
			wr.num_sge = 0;
			wr.sg_list = nullptr;
			break;
		default:
			continue;
		}
		if (ibv_post_send(c.id->qp, &wr, &bad)) {
			// E.g. EOPNOTSUPP without the extensions: not posted,
			// nothing to complete.
			g_stats.post_failed++;
			continue;
		}
		c.sends[k] = posted{k};
		c.send_posted[k] = true;
		c.send_outstanding++;
	}
}

int success_opcode(unsigned kind)
{
	switch (kind) {
	case A_READ: return IBV_WC_RDMA_READ;
	case A_FETCH_ADD: return IBV_WC_FETCH_ADD;
	case A_CMP_SWAP: return IBV_WC_COMP_SWAP;
	case A_SEND:
	case A_SEND_IMM: return IBV_WC_SEND;
	case A_WRITE: return IBV_WC_RDMA_WRITE;
	case A_FLUSH: return XIWDV_WC_FLUSH;
	case A_AWRITE: return IBV_WC_ATOMIC_WRITE;
	default: return -1;
	}
}

void check_sink(conn &c, unsigned k, const ibv_wc &wc)
{
	const fz_action &a = c.hello.actions[k];
	const u8 *w = g_mem[R_SINK].win() + k * sink_window;
	if (wc.status != IBV_WC_SUCCESS || !(c.hello.flags & HF_STRICT_DATA))
		return;
	if (a.kind == A_READ) {
		const u32 len = std::min<u32>(a.len, sink_window);
		for (u32 i = 0; i < len; i++)
			if (w[i] != fake_byte(k, i)) {
				c.problem(strf("Read %u completed, octet %u is 0x%02x, the peer sent "
					       "0x%02x",
					       k, i, w[i], fake_byte(k, i)));
				return;
			}
	} else if (a.kind == A_FETCH_ADD || a.kind == A_CMP_SWAP) {
		u64 v;
		std::memcpy(&v, w, 8);
		if (v != fake_atomic_orig(k))
			c.problem(strf("Atomic %u completed with 0x%016" PRIx64
				       ", the peer's original value was 0x%016" PRIx64,
				       k, v, fake_atomic_orig(k)));
	}
}

void handle_wc(conn &c, const ibv_wc &wc)
{
	const u64 tag = wc.wr_id & 0xffffffff00000000ull;
	const unsigned k = static_cast<unsigned>(wc.wr_id & 0xffffffffu);
	if (wc.status != IBV_WC_SUCCESS)
		c.error_seen = true;
	if (tag == wr_recv) {
		if (k >= c.recvs.size() || c.recvs[k].done) {
			c.problem(strf("receive completion with wr_id 0x%016" PRIx64
				       " never posted or completed twice",
				       static_cast<u64>(wc.wr_id)));
			return;
		}
		c.recvs[k].done = true;
		c.recvs[k].status = wc.status;
		c.recv_outstanding--;
		if (!wc_status_known(wc.status, true))
			c.problem(strf("receive %u completed with status %d (%s)", k, wc.status,
				       ibv_wc_status_str(wc.status)));
		if (wc.status == IBV_WC_SUCCESS) {
			c.recv_ok++;
			c.bytes += wc.byte_len;
			const bool imm = wc.wc_flags & IBV_WC_WITH_IMM;
			if (wc.opcode != IBV_WC_RECV && !(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && imm))
				c.problem(strf("receive %u completed with opcode %d", k, wc.opcode));
			if (wc.opcode == IBV_WC_RECV && wc.byte_len > recv_capacity(k))
				c.problem(strf("receive %u of %u octets completed with byte_len %u", k,
					       recv_capacity(k), wc.byte_len));
		} else if (wc.status == IBV_WC_WR_FLUSH_ERR) {
			g_stats.recv_flush++;
		} else {
			c.recv_err++;
		}
		check_recv_area(c, k, wc);
		// The next receive, while the QP is well (a flushed repost
		// would only come back flushed).
		if (!c.error_seen && !(c.hello.flags & HF_NO_REPOST) && c.reposts < max_reposts &&
		    !c.disconnected) {
			if (post_recv(c, static_cast<unsigned>(c.recvs.size())))
				c.reposts++;
		}
		return;
	}
	if (tag == wr_send && k < c.sends.size() && c.send_posted[k] && !c.sends[k].done) {
		c.sends[k].done = true;
		c.sends[k].status = wc.status;
		c.send_outstanding--;
		if (!wc_status_known(wc.status, false))
			c.problem(strf("action %u (%s) completed with status %d (%s)", k,
				       act_name(c.hello.actions[k].kind), wc.status,
				       ibv_wc_status_str(wc.status)));
		if (wc.status == IBV_WC_SUCCESS) {
			c.send_ok++;
			if (static_cast<int>(wc.opcode) != success_opcode(c.hello.actions[k].kind))
				c.problem(strf("action %u (%s) completed with opcode %d", k,
					       act_name(c.hello.actions[k].kind), wc.opcode));
			check_sink(c, k, wc);
		} else if (wc.status != IBV_WC_WR_FLUSH_ERR) {
			c.send_err++;
		}
		return;
	}
	c.problem(strf("send completion with wr_id 0x%016" PRIx64 " never posted or completed twice",
		       static_cast<u64>(wc.wr_id)));
}

void drain_cq(conn &c)
{
	ibv_wc wc[16];
	for (int round = 0; round < 1000; round++) {
		const int n = ibv_poll_cq(c.cq, 16, wc);
		if (n < 0) {
			c.problem("ibv_poll_cq failed");
			return;
		}
		for (int i = 0; i < n; i++)
			handle_wc(c, wc[i]);
		if (n < 16)
			return;
	}
}

void drain_async(ibv_context *ctx)
{
	ibv_async_event ev;
	for (int i = 0; i < 256; i++) {
		pollfd p{ctx->async_fd, POLLIN, 0};
		if (poll(&p, 1, 0) != 1 || ibv_get_async_event(ctx, &ev))
			return;
		g_stats.async_events[ev.event_type]++;
		ibv_ack_async_event(&ev);
	}
}

struct cm_ev {
	rdma_cm_event_type type;
	rdma_cm_id *id;
	int status;
	std::vector<u8> pd;
};

// The next CM event within TIMEOUT_MS, or false.
bool get_cm_event(cm_ev &out, int timeout_ms)
{
	pollfd p{g_ec->fd, POLLIN, 0};
	if (poll(&p, 1, timeout_ms) != 1)
		return false;
	rdma_cm_event *ev = nullptr;
	if (rdma_get_cm_event(g_ec, &ev))
		return false;
	out.type = ev->event;
	out.id = ev->id;
	out.status = ev->status;
	out.pd.clear();
	if (ev->param.conn.private_data && ev->param.conn.private_data_len) {
		const auto *b = static_cast<const u8 *>(ev->param.conn.private_data);
		out.pd.assign(b, b + ev->param.conn.private_data_len);
	}
	rdma_ack_cm_event(ev);
	return true;
}

const char *qp_state_name(int s)
{
	switch (s) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR";
	default: return "?";
	}
}

// Every region's guards, and the windows nobody may write.
void check_memory(conn &c)
{
	for (unsigned k = 0; k < R_COUNT; k++) {
		const region_mem &m = g_mem[k];
		unsigned bad = 0;
		std::size_t first = 0;
		for (std::size_t i = 0; i < m.map_len; i++) {
			if (i >= m.off && i < m.off + m.len)
				continue;
			if (m.map[i] != canary_byte(k, i) && !bad++)
				first = i;
		}
		if (bad)
			c.problem(strf("%s: %u canary octets changed (first at window %+lld)",
				       region_name(k), bad,
				       static_cast<long long>(first) - static_cast<long long>(m.off)));
		const u8 r = c.target.regions[k].rights;
		const bool writable = k == R_RW || k == R_WO || k == R_ATOMIC;
		if (writable || k == R_RECV)
			continue;
		bad = 0;
		for (std::size_t i = 0; i < m.len; i++) {
			if (k == R_SINK) {
				const unsigned a = static_cast<unsigned>(i / sink_window);
				const std::size_t o = i % sink_window;
				if (a < c.hello.n_actions && a < c.send_posted.size() &&
				    c.send_posted[a]) {
					const fz_action &act = c.hello.actions[a];
					const std::size_t n = act.kind == A_READ ? act.len
							      : act.kind == A_FETCH_ADD ||
									act.kind == A_CMP_SWAP
								      ? 8
								      : 0;
					if (o < n)
						continue;
				}
			}
			if (m.win()[i] != region_byte(k, i) && !bad++)
				first = i;
		}
		if (bad)
			c.problem(strf("%s (rights 0x%02x): %u octets changed (first at +0x%zx)",
				       region_name(k), r, bad, first));
	}
	// R_RECV: the gaps and unconsumed receives are fill (areas of
	// completed receives were checked and refilled as they completed).
	for (std::size_t k = 0; k < c.recvs.size(); k++) {
		if (c.recvs[k].done)
			continue;
		const u8 *area = recv_area(static_cast<unsigned>(k), c);
		for (u32 i = 0; i < recv_area_len; i++)
			if (area[i] != recv_fill) {
				c.problem(strf("receive %zu never completed, but its area changed at "
					       "+0x%x",
					       k, i));
				break;
			}
	}
}

void destroy_conn(conn &c)
{
	auto dereg_all = [&] {
		for (unsigned k = 0; k < R_COUNT; k++) {
			if (!c.mr[k])
				continue;
			static char what[R_COUNT][48];
			std::snprintf(what[k], sizeof(what[k]), "ibv_dereg_mr(%s)", region_name(k));
			phase(what[k], opt.hang_seconds);
			if (ibv_dereg_mr(c.mr[k]))
				c.problem(strf("ibv_dereg_mr(%s): %s", region_name(k),
					       std::strerror(errno)));
			c.mr[k] = nullptr;
		}
	};
	auto destroy_qp = [&] {
		if (!c.qp_created)
			return;
		phase("rdma_destroy_qp", opt.hang_seconds);
		rdma_destroy_qp(c.id);
		c.qp_created = false;
	};
	if (c.hello.flags & HF_QP_FIRST) {
		destroy_qp();
		dereg_all();
	} else {
		dereg_all();
		destroy_qp();
	}
	if (c.cq) {
		phase("ibv_destroy_cq", opt.hang_seconds);
		if (ibv_destroy_cq(c.cq))
			c.problem(strf("ibv_destroy_cq: %s", std::strerror(errno)));
	}
	if (c.ch)
		ibv_destroy_comp_channel(c.ch);
	phase("ibv_dealloc_pd", opt.hang_seconds);
	if (c.pd && ibv_dealloc_pd(c.pd))
		c.problem(strf("ibv_dealloc_pd: %s", std::strerror(errno)));
	if (c.pd2 && ibv_dealloc_pd(c.pd2))
		c.problem(strf("ibv_dealloc_pd (second): %s", std::strerror(errno)));
	phase("rdma_destroy_id", opt.hang_seconds);
	if (c.id)
		rdma_destroy_id(c.id);
	phase("idle", 0);
}

bool setup_conn(conn &c)
{
	ibv_context *ctx = c.id->verbs;
	if (!g_caps)
		g_caps = xiwdv_query_caps(ctx);
	c.pd = ibv_alloc_pd(ctx);
	c.pd2 = ibv_alloc_pd(ctx);
	c.ch = ibv_create_comp_channel(ctx);
	if (!c.pd || !c.pd2 || !c.ch) {
		c.problem(strf("PD/channel: %s", std::strerror(errno)));
		return false;
	}
	fcntl(c.ch->fd, F_SETFL, fcntl(c.ch->fd, F_GETFL) | O_NONBLOCK);
	const int cqe = static_cast<int>(max_recv + max_actions + 16);
	c.cq = ibv_create_cq(ctx, cqe, nullptr, c.ch, 0);
	if (!c.cq) {
		c.problem(strf("ibv_create_cq: %s", std::strerror(errno)));
		return false;
	}
	ibv_req_notify_cq(c.cq, 0);
	fill_regions();
	if (!register_regions(c))
		return false;
	ibv_qp_init_attr a{};
	a.send_cq = c.cq;
	a.recv_cq = c.cq;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 1;
	a.cap.max_send_wr = max_actions + 4;
	a.cap.max_recv_wr = max_recv;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 4;
	if (rdma_create_qp(c.id, c.pd, &a)) {
		c.problem(strf("rdma_create_qp: %s", std::strerror(errno)));
		return false;
	}
	c.qp_created = true;
	for (unsigned k = 0; k < c.hello.n_recv; k++)
		if (!post_recv(c, k)) {
			c.problem(strf("ibv_post_recv %u: %s", k, std::strerror(errno)));
			return false;
		}
	c.target.ird = c.hello.ird;
	c.target.ord = c.hello.ord;
	c.target.n_recv = c.hello.n_recv;
	c.target.flags = opt.client ? TF_CLIENT : 0;
	return true;
}

// Waits for the end of the connection, handling completions and events.
void run_conn(conn &c, long long until)
{
	for (;;) {
		drain_cq(c);
		drain_async(c.id->verbs);
		if (c.disconnected)
			return;
		if (now_ms() > until) {
			c.problem(strf("no disconnect within %d s", opt.conn_seconds));
			return;
		}
		pollfd p[3] = {{g_ec->fd, POLLIN, 0}, {c.ch->fd, POLLIN, 0},
			       {c.id->verbs->async_fd, POLLIN, 0}};
		if (poll(p, 3, 50) <= 0)
			continue;
		if (p[1].revents & POLLIN) {
			ibv_cq *cq;
			void *ctx;
			if (!ibv_get_cq_event(c.ch, &cq, &ctx)) {
				ibv_ack_cq_events(cq, 1);
				ibv_req_notify_cq(cq, 0);
			}
		}
		if (!(p[0].revents & POLLIN))
			continue;
		cm_ev ev;
		while (get_cm_event(ev, 0)) {
			if (ev.type == RDMA_CM_EVENT_CONNECT_REQUEST) {
				g_pending.emplace_back(ev.id, ev.pd);
				continue;
			}
			if (ev.id != c.id)
				continue;
			switch (ev.type) {
			case RDMA_CM_EVENT_ESTABLISHED:
				if (!c.established) {
					c.established = true;
					if (opt.client) {
						fz_hello h{};
						if (hello_decode(ev.pd.data(), ev.pd.size(), h))
							c.hello.n_actions = h.n_actions,
							std::memcpy(c.hello.actions, h.actions,
								    sizeof(h.actions));
					}
					post_actions(c);
				}
				break;
			case RDMA_CM_EVENT_DISCONNECTED:
			case RDMA_CM_EVENT_CONNECT_ERROR:
			case RDMA_CM_EVENT_UNREACHABLE:
			case RDMA_CM_EVENT_REJECTED:
			case RDMA_CM_EVENT_DEVICE_REMOVAL:
				c.disconnected = true;
				break;
			default:
				break;
			}
		}
	}
}

void finish_conn(conn &c)
{
	// The QP's state as the connection left it, then Error: every posted
	// work request must come back.
	if (c.qp_created) {
		ibv_qp_attr qa{};
		ibv_qp_init_attr qi{};
		if (ibv_query_qp(c.id->qp, &qa, IBV_QP_STATE, &qi))
			c.problem(strf("ibv_query_qp: %s", std::strerror(errno)));
		else
			g_stats.qp_states[qp_state_name(qa.qp_state)]++;
		if (c.established)
			rdma_disconnect(c.id);
		qa.qp_state = IBV_QPS_ERR;
		if (ibv_modify_qp(c.id->qp, &qa, IBV_QP_STATE))
			c.problem(strf("ibv_modify_qp(ERR): %s", std::strerror(errno)));
		c.disconnected = true; // no more reposts
		const long long until = now_ms() + 10000;
		while ((c.recv_outstanding || c.send_outstanding) && now_ms() < until) {
			drain_cq(c);
			if (c.recv_outstanding || c.send_outstanding)
				std::this_thread::sleep_for(std::chrono::milliseconds(2));
		}
		if (c.recv_outstanding || c.send_outstanding)
			c.problem(strf("%u receives and %u sends never completed after the QP went "
				       "to Error",
				       c.recv_outstanding, c.send_outstanding));
	}
	drain_async(c.id->verbs);
	check_memory(c);
}

void report(conn &c, const char *how)
{
	g_stats.conns++;
	g_stats.recv_ok += c.recv_ok;
	g_stats.recv_err += c.recv_err;
	g_stats.send_ok += c.send_ok;
	g_stats.send_err += c.send_err;
	g_stats.bytes_received += c.bytes;
	g_stats.reposts += static_cast<unsigned>(c.reposts);
	const bool ok = c.problems.empty();
	if (!ok)
		g_stats.failed++;
	std::string why;
	for (const auto &p : c.problems)
		why += (why.empty() ? "" : "; ") + p;
	if (!ok || opt.verbose || c.no % 100 == 0)
		std::printf("victim: conn %u case %u seed %" PRIu64
			    ": %s, receives %u ok %u failed, actions %u ok %u failed, %" PRIu64
			    " octets: %s%s%s\n",
			    c.no, c.hello.case_id, c.hello.seed, how, c.recv_ok, c.recv_err,
			    c.send_ok, c.send_err, c.bytes, ok ? "ok" : "FAIL", ok ? "" : ": ",
			    why.c_str());
	std::fflush(stdout);
}

// Offers C's fz_target to the peer with START (rdma_accept or
// rdma_connect, named CALL), then runs the connection.  Returns how it
// went, nullptr if START failed.
const char *start_conn(conn &c, const char *call, int (*start)(rdma_cm_id *, rdma_conn_param *))
{
	u8 buf[target_wire_len];
	target_encode(c.target, buf);
	rdma_conn_param p{};
	p.responder_resources = c.hello.ird;
	p.initiator_depth = c.hello.ord;
	p.private_data = buf;
	p.private_data_len = static_cast<u8>(target_wire_len);
	phase(call, opt.hang_seconds);
	if (start(c.id, &p))
		return nullptr;
	phase("connected", 0);
	run_conn(c, now_ms() + opt.conn_seconds * 1000LL);
	if (c.established)
		return "served";
	g_stats.not_established++;
	return "never established";
}

void serve(rdma_cm_id *id, const std::vector<u8> &pd)
{
	conn c;
	c.id = id;
	c.no = ++g_conn_no;
	g_conn.store(c.no);
	c.hello_ok = hello_decode(pd.data(), pd.size(), c.hello);
	if (!c.hello_ok)
		c.hello = fz_default_hello();
	alarm(static_cast<unsigned>(opt.conn_seconds + 4 * opt.hang_seconds + 60));
	phase("setup", opt.hang_seconds);
	const char *how = "setup failed";
	if (setup_conn(c)) {
		how = start_conn(c, "rdma_accept", rdma_accept);
		if (!how) {
			// The peer may have gone already (handshake fuzzing).
			how = "accept failed";
			g_stats.accept_failed++;
			c.disconnected = true;
		}
		phase("finish", opt.hang_seconds);
		finish_conn(c);
	} else {
		rdma_reject(id, nullptr, 0);
	}
	destroy_conn(c);
	alarm(0);
	report(c, how);
	if (c.hello_ok && c.hello.flags & HF_QUIT)
		g_quit = true;
}

int run_listen()
{
	rdma_addrinfo hints{}, *res = nullptr;
	hints.ai_port_space = RDMA_PS_TCP;
	hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(opt.addr, opt.port, &hints, &res))
		die("rdma_getaddrinfo %s:%s: %s", opt.addr, opt.port, std::strerror(errno));
	if (rdma_create_id(g_ec, &g_listen, nullptr, RDMA_PS_TCP) ||
	    rdma_bind_addr(g_listen, res->ai_src_addr) || rdma_listen(g_listen, 128))
		die("listen on %s:%s: %s", opt.addr, opt.port, std::strerror(errno));
	rdma_freeaddrinfo(res);
	std::printf("victim: listening on %s:%s\n", opt.addr, opt.port);
	std::fflush(stdout);
	while (!g_quit && (!opt.max_conns || g_conn_no < opt.max_conns)) {
		if (!g_pending.empty()) {
			auto [id, pd] = g_pending.front();
			g_pending.pop_front();
			serve(id, pd);
			continue;
		}
		cm_ev ev;
		if (!get_cm_event(ev, 1000))
			continue;
		if (ev.type == RDMA_CM_EVENT_CONNECT_REQUEST)
			g_pending.emplace_back(ev.id, ev.pd);
	}
	// Requests that came in meanwhile are turned away.
	for (auto &[id, pd] : g_pending) {
		rdma_reject(id, nullptr, 0);
		rdma_destroy_id(id);
	}
	rdma_destroy_id(g_listen);
	return 0;
}

// Waits for EVENT on ID (client mode), false on anything else or timeout.
bool wait_for(rdma_cm_id *id, rdma_cm_event_type want, int timeout_ms, int &status)
{
	const long long until = now_ms() + timeout_ms;
	while (now_ms() < until) {
		cm_ev ev;
		if (!get_cm_event(ev, 200))
			continue;
		if (ev.id != id)
			continue;
		status = ev.status;
		return ev.type == want;
	}
	status = -ETIMEDOUT;
	return false;
}

int run_client()
{
	rdma_addrinfo hints{}, *res = nullptr;
	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(opt.addr, opt.port, &hints, &res))
		die("rdma_getaddrinfo %s:%s: %s", opt.addr, opt.port, std::strerror(errno));
	unsigned refused_in_a_row = 0;
	for (unsigned i = 0; i < opt.count && refused_in_a_row < 20; i++) {
		conn c;
		c.no = ++g_conn_no;
		g_conn.store(c.no);
		c.hello = fz_default_hello();
		alarm(static_cast<unsigned>(opt.conn_seconds + 4 * opt.hang_seconds + 60));
		int st = 0;
		const char *how = "setup failed";
		if (rdma_create_id(g_ec, &c.id, nullptr, RDMA_PS_TCP))
			die("rdma_create_id: %s", std::strerror(errno));
		phase("resolve", opt.hang_seconds);
		if (rdma_resolve_addr(c.id, nullptr, res->ai_dst_addr, 5000) ||
		    !wait_for(c.id, RDMA_CM_EVENT_ADDR_RESOLVED, 10000, st) ||
		    rdma_resolve_route(c.id, 5000) ||
		    !wait_for(c.id, RDMA_CM_EVENT_ROUTE_RESOLVED, 10000, st))
			die("resolving %s: %s (status %d)", opt.addr, std::strerror(errno), st);
		phase("setup", opt.hang_seconds);
		if (setup_conn(c)) {
			how = start_conn(c, "rdma_connect", rdma_connect);
			if (!how)
				how = "connect failed";
			refused_in_a_row = c.established ? 0 : refused_in_a_row + 1;
			phase("finish", opt.hang_seconds);
			finish_conn(c);
		}
		destroy_conn(c);
		alarm(0);
		report(c, how);
	}
	rdma_freeaddrinfo(res);
	return 0;
}

void usage(const char *argv0)
{
	std::fprintf(stderr,
		     "usage: %s listen ADDR PORT [OPTIONS]\n"
		     "       %s client ADDR PORT COUNT [OPTIONS]\n"
		     "options: --max-conns N  --conn-seconds S  --hang-seconds S  --file PATH  -v\n",
		     argv0, argv0);
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 4)
		usage(argv[0]);
	int i = 1;
	if (!std::strcmp(argv[i], "client")) {
		opt.client = true;
		if (argc < 5)
			usage(argv[0]);
		opt.addr = argv[2];
		opt.port = argv[3];
		opt.count = static_cast<unsigned>(std::strtoul(argv[4], nullptr, 0));
		i = 5;
	} else if (!std::strcmp(argv[i], "listen")) {
		opt.addr = argv[2];
		opt.port = argv[3];
		i = 4;
	} else {
		usage(argv[0]);
	}
	for (; i < argc; i++) {
		const std::string a = argv[i];
		auto val = [&] {
			if (i + 1 >= argc)
				usage(argv[0]);
			return argv[++i];
		};
		if (a == "--max-conns")
			opt.max_conns = static_cast<unsigned>(std::strtoul(val(), nullptr, 0));
		else if (a == "--conn-seconds")
			opt.conn_seconds = std::atoi(val());
		else if (a == "--hang-seconds")
			opt.hang_seconds = std::atoi(val());
		else if (a == "--file")
			opt.file = val();
		else if (a == "-v")
			opt.verbose = true;
		else
			usage(argv[0]);
	}
	setvbuf(stdout, nullptr, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	std::thread(watchdog).detach();
	map_regions();
	g_ec = rdma_create_event_channel();
	if (!g_ec)
		die("rdma_create_event_channel: %s", std::strerror(errno));
	const int rc = opt.client ? run_client() : run_listen();
	std::string ev;
	for (const auto &[t, n] : g_stats.async_events)
		ev += strf(" %s=%llu", ibv_event_type_str(static_cast<ibv_event_type>(t)), n);
	std::string qs;
	for (const auto &[s, n] : g_stats.qp_states)
		qs += strf(" %s=%u", s.c_str(), n);
	std::printf("victim summary: connections %u, failed %u, not established %u, accept failed "
		    "%u; receives ok %llu failed %llu flushed %llu (%llu octets, %llu reposted); "
		    "actions ok %llu failed %llu; posts refused %llu; QP states at the end:%s; async "
		    "events:%s; hangs %d\n",
		    g_stats.conns, g_stats.failed, g_stats.not_established, g_stats.accept_failed,
		    g_stats.recv_ok, g_stats.recv_err, g_stats.recv_flush, g_stats.bytes_received,
		    g_stats.reposts, g_stats.send_ok, g_stats.send_err, g_stats.post_failed,
		    qs.empty() ? " none" : qs.c_str(), ev.empty() ? " none" : ev.c_str(),
		    g_hung ? 1 : 0);
	if (g_hung)
		return 3;
	return rc ? rc : g_stats.failed ? 1 : 0;
}
