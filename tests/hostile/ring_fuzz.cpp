// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// A malicious verbs library on xiw: writes random and structured garbage
// into the send and receive rings the provider mapped, moves their indices
// and the CQ's anywhere, rewrites entries while the kernel reads them (a
// second thread), and rings the doorbell itself with the raw uverbs
// command - all on a QP connected over rdma_cm to a QP of its own (the
// peer), while another process holds canary regions whose keys the
// attacker knows.
//   xiw_ring_fuzz ADDR PORT [ENTRIES [SECONDS [SEED]]]
// Runs until ENTRIES ring entries were written (default 100000) or SECONDS
// passed (default 120), reconnecting whenever the attacked QP has failed.
// Prints the seed, the entries, doorbells, connections, completions by
// status and async events, and "xiw_ring_fuzz ring: ...: ok" when the
// canaries are intact, everything tore down and at least ENTRIES were
// written; the harness adds the kernel log.

#include "hostile_lib.h"

#include <rdma/ib_user_verbs.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <optional>
#include <random>
#include <thread>

namespace {

using namespace xiw_hostile;
using xiw_test::strf;

constexpr std::size_t region_len = 64 * 1024;

struct counters {
	u64 entries = 0, rqes = 0, doorbells = 0, bad_indices = 0, cq_moves = 0, flips = 0;
	u64 connections = 0, sends_from_peer = 0, refused_doorbells = 0;
	std::map<std::string, u64> completions; // "side:status"
	std::map<std::string, u64> events;
};

// One connection: QP A (attacked, its rings corrupted) and QP B (its
// peer, used as a normal consumer would), each with its own PD and CQ.
struct pair {
	device &d;
	ibv_pd *pd_b = nullptr;
	ibv_cq *cq_a = nullptr, *cq_b = nullptr;
	ibv_qp *a = nullptr, *b = nullptr;
	ibv_mr *mr_a = nullptr, *mr_b = nullptr;
	std::vector<mapping> a_rings, a_cq;
	std::optional<loop_connection> link;
	u8 *buf_a, *buf_b;
	u32 sq_num = 0, rq_num = 0; // the rings' sizes, as the kernel made them

	pair(device &dev, const char *addr, const char *port, u8 *ba, u8 *bb)
		: d(dev), buf_a(ba), buf_b(bb)
	{
		link.emplace(addr, port);
		pd_b = ibv_alloc_pd(d.ctx);
		a_cq = new_mappings([&] { cq_a = ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0); });
		cq_b = ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0);
		if (!pd_b || !cq_a || !cq_b || a_cq.size() != 1)
			fail("PD/CQ setup (CQ mappings: %zu)", a_cq.size());
		const int rights = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
		mr_a = ibv_reg_mr(d.pd, buf_a, region_len, rights);
		mr_b = ibv_reg_mr(pd_b, buf_b, region_len, rights);
		if (!mr_a || !mr_b)
			xiw_test::die("ibv_reg_mr");
		ibv_qp_init_attr qa = xiw_test::rc_qp_attr(64, 16);
		qa.cap.max_send_sge = 4;
		qa.send_cq = qa.recv_cq = cq_a;
		a_rings = new_mappings([&] { a = ibv_create_qp(d.pd, &qa); });
		ibv_qp_init_attr qb = xiw_test::rc_qp_attr(64, 64);
		qb.send_cq = qb.recv_cq = cq_b;
		b = ibv_create_qp(pd_b, &qb);
		if (!a || !b || a_rings.size() != 2 || !to_state(a, IBV_QPS_INIT) ||
		    !to_state(b, IBV_QPS_INIT))
			fail("QP setup");
		ibv_qp_attr got{};
		ibv_qp_init_attr init{};
		if (ibv_query_qp(a, &got, IBV_QP_CAP, &init))
			xiw_test::die("ibv_query_qp");
		sq_num = got.cap.max_send_wr;
		rq_num = got.cap.max_recv_wr;
		for (int i = 0; i < 64; i++)
			post_b_recv(static_cast<u64>(i));
		link->connect(a, b);
	}
	~pair()
	{
		link.reset();
		xiw_test::destroy_all(a, b, mr_a, mr_b, cq_a, cq_b, pd_b);
	}
	void post_b_recv(u64 id)
	{
		xiw_test::post_recv_one(b, buf_b, 4096, mr_b->lkey, id);
	}
	// The attacked rings: the larger mapping is the SQ (64 x 256 octets
	// against 16 x 128).  Entries are indexed modulo the ring size.
	xiw_ring_ctrl *sq() const { return ctrl_of(a_rings[0]); }
	xiw_ring_ctrl *rq() const { return ctrl_of(a_rings[1]); }
	u8 *sq_entries() const { return reinterpret_cast<u8 *>(sq()) + XIW_RING_ENTRIES_OFFSET; }
	u8 *rq_entries() const { return reinterpret_cast<u8 *>(rq()) + XIW_RING_ENTRIES_OFFSET; }
};

class generator {
public:
	generator(u64 seed, const pair &p, const canary_keys &c) : r_(seed), p_(p), c_(c) {}

	u64 next() { return r_(); }
	u32 below(u32 n) { return static_cast<u32>(r_() % n); }
	bool chance(u32 n) { return below(n) == 0; }

	// An lkey/rkey: ours, the peer's (other PD), the canary's (other
	// process), a neighbour of one, or anything.
	u32 key(bool remote)
	{
		const u32 ours = remote ? p_.mr_b->rkey : p_.mr_a->lkey;
		switch (below(6)) {
		case 0:
			return ours;
		case 1:
			return remote ? p_.mr_a->rkey : p_.mr_b->lkey;
		case 2:
			return remote ? c_.rkey : c_.lkey;
		case 3:
			return ours ^ (1u << below(32));
		case 4:
			return ours + 0x100;
		default:
			return static_cast<u32>(next());
		}
	}
	// An address near a region of ours, the peer's or the canary's.
	u64 addr(u64 base)
	{
		switch (below(5)) {
		case 0:
			return base + below(region_len);
		case 1:
			return base + region_len - below(16);
		case 2:
			return base - below(4096);
		case 3:
			return c_.addr + below(region_len);
		default:
			return next();
		}
	}
	u32 length()
	{
		switch (below(5)) {
		case 0:
			return below(64);
		case 1:
			return below(region_len + 1);
		case 2:
			return 0xffffffffu - below(64);
		case 3:
			return 8;
		default:
			return static_cast<u32>(next());
		}
	}
	// A well-formed Send, RDMA Write or RDMA Read within our region and
	// the peer's, with garbage where the kernel must not look (the SGE
	// slots past num_sge, the operands these opcodes have none of): the
	// QP lives on, so that the kernel keeps parsing what follows.
	void good_sqe(xiw_sqe &e)
	{
		for (auto *w = reinterpret_cast<u64 *>(&e); w < reinterpret_cast<u64 *>(&e + 1); w++)
			*w = next();
		static constexpr u8 ops[] = {XIW_WR_SEND, XIW_WR_RDMA_WRITE, XIW_WR_RDMA_READ};
		e.opcode = ops[below(3)];
		e.num_sge = 1;
		e.flags = XIW_SQE_SIGNALED;
		e.invalidate_rkey = 0;
		const u32 len = below(e.opcode == XIW_WR_SEND ? 4096 : region_len / 2);
		e.sge[0].addr = reinterpret_cast<std::uintptr_t>(p_.buf_a) + below(region_len - len);
		e.sge[0].length = len;
		e.sge[0].lkey = p_.mr_a->lkey;
		e.remote_addr = reinterpret_cast<std::uintptr_t>(p_.buf_b) + below(region_len - len);
		e.rkey = p_.mr_b->rkey;
		e.inline_length = 0;
	}
	void sqe(xiw_sqe &e)
	{
		if (chance(2)) {
			good_sqe(e);
			return;
		}
		if (chance(8)) {
			for (auto *w = reinterpret_cast<u64 *>(&e); w < reinterpret_cast<u64 *>(&e + 1); w++)
				*w = next();
			return;
		}
		std::memset(&e, 0, sizeof(e));
		e.wr_id = next();
		e.opcode = static_cast<u8>(chance(8) ? next() : below(XIW_WR_NUM_OPCODES + 2));
		e.num_sge = static_cast<u8>(chance(8) ? next() : below(5));
		e.flags = static_cast<u16>(chance(4) ? next() : u64{XIW_SQE_SIGNALED});
		e.invalidate_rkey = key(true);
		e.remote_addr = addr(reinterpret_cast<std::uintptr_t>(p_.buf_b));
		e.rkey = key(true);
		e.inline_length = chance(4) ? static_cast<u32>(next()) : below(sizeof(e.sge) + 8);
		for (auto &o : e.operand)
			o = chance(2) ? next() : below(16);
		for (xiw_sge &s : e.sge) {
			s.addr = addr(reinterpret_cast<std::uintptr_t>(p_.buf_a));
			s.length = length();
			s.lkey = key(false);
		}
	}
	void rqe(xiw_rqe &e)
	{
		std::memset(&e, 0, sizeof(e));
		e.wr_id = next();
		e.num_sge = static_cast<u8>(chance(4) ? next() : below(XIW_MAX_RECV_SGE + 1));
		for (xiw_sge &s : e.sge) {
			s.addr = addr(reinterpret_cast<std::uintptr_t>(p_.buf_a));
			s.length = length();
			s.lkey = key(false);
		}
	}

private:
	std::mt19937_64 r_;
	const pair &p_;
	const canary_keys &c_;
};

const char *wc_name(int status)
{
	return ibv_wc_status_str(static_cast<ibv_wc_status>(status));
}

// Polls CQ into the counters, calling ON_RECV(wr_id) for each receive
// that completed; true if a completion says the QP failed.
template <class F> bool drain(ibv_cq *cq, const char *side, counters &n, F on_recv)
{
	ibv_wc wc[32];
	bool failed = false;
	int k;
	while ((k = ibv_poll_cq(cq, 32, wc)) > 0)
		for (int i = 0; i < k; i++) {
			n.completions[std::string(side) + ":" + wc_name(wc[i].status)]++;
			failed |= wc[i].status != IBV_WC_SUCCESS;
			if (wc[i].status == IBV_WC_SUCCESS && wc[i].opcode == IBV_WC_RECV)
				on_recv(wc[i].wr_id);
		}
	return failed;
}

void drain_events(device &d, counters &n)
{
	ibv_async_event ev{};
	while (ibv_get_async_event(d.ctx, &ev) == 0) {
		n.events[ibv_event_type_str(ev.event_type)]++;
		ibv_ack_async_event(&ev);
	}
}

int run(const char *addr, const char *port, u64 want, int seconds, u64 seed)
{
	canary_process canary;
	const canary_keys &ck = canary.keys();
	std::printf("xiw_ring_fuzz: seed %" PRIu64 " (replay: xiw_ring_fuzz %s %s %" PRIu64
		    " %d %" PRIu64 ")\n",
		    seed, addr, port, want, seconds, seed);
	std::fflush(stdout);

	device d;
	fcntl(d.ctx->async_fd, F_SETFL, fcntl(d.ctx->async_fd, F_GETFL) | O_NONBLOCK);
	static u8 buf_a[region_len], buf_b[region_len];
	counters n;
	work_count work;
	const long long start = xiw_raw::now_ms(), until = start + seconds * 1000LL;
	long long next_report = start + 60000;
	u64 round = 0;
	while (work.total(n.entries) < want && xiw_raw::now_ms() < until) {
		// A long run says how far it got once a minute.
		if (const long long now = xiw_raw::now_ms(); now >= next_report) {
			std::printf("xiw_ring_fuzz: %lld s: %" PRIu64 " of %" PRIu64
				    " entries (%" PRIu64 " of them here) in %" PRIu64 " connections\n",
				    (now - start) / 1000, work.total(n.entries), want, n.entries,
				    n.connections);
			std::fflush(stdout);
			next_report = now + 60000;
		}
		pair p(d, addr, port, buf_a, buf_b);
		n.connections++;
		generator g(seed + round++, p, ck);
		// Rewrites random octets of the SQ's entries while the kernel
		// reads them, until the connection ends.
		std::atomic<bool> stop{false};
		std::atomic<u64> flips{0};
		std::thread flipper([&, fseed = g.next()] {
			std::mt19937_64 fr(fseed);
			const std::size_t span = p.sq_num * sizeof(xiw_sqe);
			while (!stop.load(std::memory_order_relaxed)) {
				p.sq_entries()[fr() % span] ^= static_cast<u8>(1u << (fr() % 8));
				flips.fetch_add(1, std::memory_order_relaxed);
				std::this_thread::sleep_for(std::chrono::microseconds(50));
			}
		});
		u32 sq_prod = p.sq()->producer, rq_prod = p.rq()->producer;
		bool failed = false;
		for (int step = 0; step < 400 && !failed && work.total(n.entries) < want &&
				   xiw_raw::now_ms() < until;
		     step++) {
			const u32 k = 1 + g.below(8);
			for (u32 i = 0; i < k; i++) {
				xiw_sqe e;
				g.sqe(e);
				std::memcpy(p.sq_entries() + ((sq_prod + i) % p.sq_num) * sizeof(xiw_sqe), &e,
					    sizeof(e));
			}
			n.entries += k;
			work.add(k);
			sq_prod += k;
			u32 publish = sq_prod;
			if (g.chance(32)) {
				publish = static_cast<u32>(g.next());
				n.bad_indices++;
			}
			__atomic_store_n(&p.sq()->producer, publish, __ATOMIC_RELEASE);
			if (raw_doorbell(p.a))
				n.doorbells++;
			else
				n.refused_doorbells++;
			if (g.chance(4)) {
				xiw_rqe e;
				g.rqe(e);
				std::memcpy(p.rq_entries() + (rq_prod % p.rq_num) * sizeof(xiw_rqe), &e,
					    sizeof(e));
				rq_prod++;
				n.rqes++;
				__atomic_store_n(&p.rq()->producer,
						 g.chance(32) ? static_cast<u32>(g.next()) : rq_prod,
						 __ATOMIC_RELEASE);
			}
			if (g.chance(64)) {
				__atomic_store_n(&ctrl_of(p.a_cq[0])->consumer, static_cast<u32>(g.next()),
						 __ATOMIC_RELEASE);
				n.cq_moves++;
			}
			if (g.chance(8)) {
				// The peer sends: A takes (maybe garbage) receives.
				xiw_test::one_sge_wr w(IBV_WR_SEND, buf_b, g.below(256), p.mr_b->lkey);
				n.sends_from_peer += w.post(p.b) == 0;
			}
			failed = drain(p.cq_a, "a", n, [](u64) {});
			drain(p.cq_b, "b", n, [&p](u64 id) { p.post_b_recv(id); });
			drain_events(d, n);
		}
		stop.store(true);
		flipper.join();
		n.flips += flips.load();
	}
	drain_events(d, n);

	const u64 changed = canary.changed();

	std::printf("xiw_ring_fuzz: %" PRIu64 " SQEs and %" PRIu64 " RQEs written, %" PRIu64
		    " bad producer indices, %" PRIu64 " CQ consumer moves, %" PRIu64
		    " octets flipped under the kernel, %" PRIu64 " doorbells, %" PRIu64
		    " connections, %" PRIu64 " Sends from the peer\n",
		    n.entries, n.rqes, n.bad_indices, n.cq_moves, n.flips, n.doorbells, n.connections,
		    n.sends_from_peer);
	for (const auto &[k, v] : n.completions)
		std::printf("  completion %-40s %" PRIu64 "\n", k.c_str(), v);
	for (const auto &[k, v] : n.events)
		std::printf("  async event %-39s %" PRIu64 "\n", k.c_str(), v);
	if (changed)
		fail("%" PRIu64 " octets of the other process's region changed", changed);
	if (n.refused_doorbells)
		fail("%" PRIu64 " doorbells refused (errno of the raw command)", n.refused_doorbells);
	if (work.total(n.entries) < want)
		fail("only %" PRIu64 " of %" PRIu64 " entries in %d s", work.total(n.entries), want,
		     seconds);
	pass(strf("%" PRIu64 " ring entries (%" PRIu64 " SQEs by the run's lanes), canary intact",
		  n.entries + n.rqes, work.total(n.entries)));
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 3) {
		std::fprintf(stderr, "usage: xiw_ring_fuzz ADDR PORT [ENTRIES [SECONDS [SEED]]]\n");
		return 2;
	}
	g_tool = "xiw_ring_fuzz";
	g_case = "ring";
	const u64 want = argc > 3 ? std::strtoull(argv[3], nullptr, 0) : 100000;
	const int seconds = argc > 4 ? std::atoi(argv[4]) : 120;
	const u64 seed = argc > 5 ? std::strtoull(argv[5], nullptr, 0) : std::random_device{}();
	return run(argv[1], argv[2], want, seconds, seed);
}
