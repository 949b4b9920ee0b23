// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Random verbs call sequences, as a careless or malicious program makes
// them: PDs, MRs, CQs, SRQs and QPs created with any attributes, QPs moved
// through every modify_qp transition and mask, work requests of every
// opcode posted in every state, connections made and dropped, objects
// destroyed while in use, QPs reused after Error, and processes that exit
// or are killed with all of it live.
//   xiw_verbs_fuzz ADDR PORT [SEQUENCES [SECONDS [SEED]]]
//   xiw_verbs_fuzz ADDR PORT --replay SEED SEQUENCE
// Sequence N of seed S is always the same calls (4..40 of them).  Workers
// run 50 sequences each; one worker in 8 is killed at a random moment, and
// the last sequence of each worker exits with its objects alive.  Checked
// after every call: a failure carries an errno; a QP is in the state the
// transition table allows (no RTS without a connection); every completion
// belongs to a work request posted to a QP of that CQ and completes it
// once, and a receive fits its buffers; an object in use cannot be
// destroyed and one not in use can.  At the end the canary process's
// region must be untouched.  Prints the calls by outcome; the harness adds
// the kernel log and `rmmod xiw`, the shell script the device's resource
// counts.

#include "hostile_lib.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <sys/mman.h>

#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>

namespace {

using namespace xiw_hostile;
using xiw_test::strf;

constexpr int sequences_per_worker = 50;
constexpr std::size_t arena_len = 1 << 20;
constexpr std::size_t peer_region_len = 256 * 1024;
constexpr int cm_wait_ms = 5000;

// What every worker knows: the peer's region and the canary's.
struct targets {
	canary_keys peer, canary;
};

// ---------------------------------------------------------------------------
// The peer: accepts every connection with a QP of its own, sends one Send
// on it, keeps receives posted and its CQs drained, and tears a connection
// down when it ends.

struct peer_conn {
	rdma_cm_id *id;
	ibv_cq *cq;
	int posted;
};

enum : u64 { peer_recv_id = 1, peer_send_id = 2 };

void peer_post_recvs(peer_conn &c, ibv_mr *mr)
{
	for (; c.posted < 32; c.posted++) {
		if (xiw_test::post_recv_one(c.id->qp, mr->addr, 4096, mr->lkey, peer_recv_id))
			break;
	}
}

[[noreturn]] void run_peer(const char *addr, const char *port, int parent, int report)
{
	rdma_event_channel *ch = rdma_create_event_channel();
	rdma_cm_id *listen = xiw_test::listen_async(ch, addr, port, 64);
	ibv_pd *pd = ibv_alloc_pd(listen->verbs);
	static u8 region[peer_region_len];
	ibv_mr *mr = pd ? ibv_reg_mr(pd, region, sizeof(region),
				    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
					    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)
			: nullptr;
	if (!mr)
		xiw_test::die("peer: ibv_reg_mr");
	const canary_keys k{mr->lkey, mr->rkey, reinterpret_cast<std::uintptr_t>(region)};
	if (write(report, &k, sizeof(k)) != sizeof(k))
		_exit(3);
	close(report);

	std::map<rdma_cm_id *, peer_conn> conns;
	pollfd pfd[2] = {{ch->fd, POLLIN, 0}, {parent, POLLIN, 0}};
	for (;;) {
		if (poll(pfd, 2, 20) < 0 && errno != EINTR)
			xiw_test::die("peer: poll");
		if (pfd[1].revents)
			break;	// the parent is done
		for (auto &[id, c] : conns) {
			ibv_wc wc[16];
			int n;
			while ((n = ibv_poll_cq(c.cq, 16, wc)) > 0)
				for (int i = 0; i < n; i++)
					c.posted -= wc[i].wr_id == peer_recv_id;
			peer_post_recvs(c, mr);
		}
		if (!(pfd[0].revents & POLLIN))
			continue;
		const auto [id, type] = xiw_test::next_cm_event(ch);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			peer_conn c{id, nullptr, 0};
			ibv_qp_init_attr a = xiw_test::rc_qp_attr(16, 32);
			a.cap.max_send_sge = a.cap.max_recv_sge = 2;
			if (conns.size() < 128)
				c.cq = ibv_create_cq(id->verbs, 64, nullptr, nullptr, 0);
			a.send_cq = a.recv_cq = c.cq;
			if (!c.cq || rdma_create_qp(id, pd, &a)) {
				rdma_reject(id, nullptr, 0);
				if (c.cq)
					ibv_destroy_cq(c.cq);
				rdma_destroy_id(id);
				continue;
			}
			peer_post_recvs(c, mr);
			rdma_conn_param p = xiw_test::conn_param();
			conns[id] = c;
			if (rdma_accept(id, &p) == 0)
				continue;
		} else if (type == RDMA_CM_EVENT_ESTABLISHED && conns.count(id)) {
			// One Send, for whatever receives the worker posted.
			xiw_test::one_sge_wr(IBV_WR_SEND, mr->addr, 32, mr->lkey, peer_send_id)
				.post(id->qp);
			continue;
		} else if (!conns.count(id)) {
			continue;
		}
		// The connection ended (or was never made): its resources go.
		peer_conn c = conns[id];
		conns.erase(id);
		rdma_destroy_qp(id);
		ibv_destroy_cq(c.cq);
		rdma_destroy_id(id);
	}
	for (auto &[id, c] : conns) {
		rdma_disconnect(id);
		rdma_destroy_qp(id);
		ibv_destroy_cq(c.cq);
		rdma_destroy_id(id);
	}
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(listen);
	rdma_destroy_event_channel(ch);
	_exit(0);
}

// ---------------------------------------------------------------------------
// A worker: runs sequences, reporting each call's outcome on a pipe as
//   B seq | O call outcome | E seq | F seq message

class reporter {
public:
	explicit reporter(int fd) : fd_(fd) {}
	void line(const std::string &s)
	{
		const std::string l = s + "\n";
		if (write(fd_, l.data(), l.size()) != static_cast<ssize_t>(l.size()))
			_exit(4);
	}

private:
	int fd_;
};

const char *errno_name(int e)
{
	switch (e) {
	case EINVAL: return "EINVAL";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOMEM: return "ENOMEM";
	case EBUSY: return "EBUSY";
	case EFAULT: return "EFAULT";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EAGAIN: return "EAGAIN";
	case ENOSPC: return "ENOSPC";
	case ENOSYS: return "ENOSYS";
	case E2BIG: return "E2BIG";
	case ERANGE: return "ERANGE";
	case EOVERFLOW: return "EOVERFLOW";
	case ENOTCONN: return "ENOTCONN";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ECONNRESET: return "ECONNRESET";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EIO: return "EIO";
	case ENOENT: return "ENOENT";
	case ENODEV: return "ENODEV";
	default: return nullptr;
	}
}

const char *state_name(int s)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
	return s >= 0 && s < static_cast<int>(std::size(names)) ? names[s] : "?";
}

// The QP state machine of an iWARP QP (IB spec 10.3.1 restricted to what
// RFC 5040 §6 has: the path comes from the connection, RTS needs one).
bool transition_ok(int cur, int next)
{
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		return cur >= IBV_QPS_RESET && cur <= IBV_QPS_ERR;
	switch (cur) {
	case IBV_QPS_RESET: return next == IBV_QPS_INIT;
	case IBV_QPS_INIT: return next == IBV_QPS_INIT || next == IBV_QPS_RTR;
	case IBV_QPS_RTR: return next == IBV_QPS_RTS;
	case IBV_QPS_RTS: return next == IBV_QPS_RTS || next == IBV_QPS_SQD;
	case IBV_QPS_SQD: return next == IBV_QPS_RTS || next == IBV_QPS_SQD;
	default: return false;
	}
}

// An rdma_cm active side whose events are waited for with a timeout.
struct cm_link {
	rdma_event_channel *ch = nullptr;
	rdma_cm_id *id = nullptr;
	bool established = false;

	~cm_link()
	{
		if (id)
			rdma_destroy_id(id);
		if (ch)
			rdma_destroy_event_channel(ch);
	}
	// The next event's type, or -1 after MS.
	int next_event(int ms)
	{
		pollfd p{ch->fd, POLLIN, 0};
		if (poll(&p, 1, ms) <= 0)
			return -1;
		rdma_cm_event *ev = nullptr;
		if (rdma_get_cm_event(ch, &ev))
			return -1;
		const int t = ev->event;
		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_ESTABLISHED)
			established = true;
		if (t == RDMA_CM_EVENT_DISCONNECTED)
			established = false;
		return t;
	}
	void drain()
	{
		while (next_event(0) >= 0) {
		}
	}
};

struct mr_obj {
	ibv_mr *mr;
	int pd;
};
struct cq_obj {
	ibv_cq *cq;
};
struct srq_obj {
	ibv_srq *srq;
	int pd;
};
struct qp_obj {
	ibv_qp *qp;
	int pd, send_cq, recv_cq, srq;
	int state = IBV_QPS_RESET;
	bool connected_ever = false;
	std::unique_ptr<cm_link> cm;
};

// A posted work request, by wr_id, until it completes.
struct posted {
	enum class kind { send, recv, srq_recv } k;
	u32 qp_num;	// or the SRQ's number for srq_recv
	const ibv_cq *cq;	// where it completes (SRQ: any QP's receive CQ)
	int opcode;	// send: IBV_WR_*
	u64 recv_len;	// receive: the room its SGEs give
	int srq;
};

class sequence {
public:
	sequence(u64 seed, reporter &out, const targets &t, const ibv_device_attr &dev,
		 ibv_context *ctx, u8 *arena, const char *addr, const char *port)
		: r_(seed), out_(out), t_(t), dev_(dev), ctx_(ctx), arena_(arena), addr_(addr),
		  port_(port)
	{
	}

	// Runs the calls; with KEEP, returns leaving every object alive.
	void run(bool keep)
	{
		const int calls = 4 + static_cast<int>(below(37));
		for (int i = 0; i < calls; i++)
			step();
		drain_async();
		if (!keep)
			teardown();
	}

private:
	// ------------------------------------------------------------ choices
	u64 next() { return r_(); }
	u32 below(u64 n) { return static_cast<u32>(r_() % n); }
	bool chance(u32 n) { return below(n) == 0; }
	template <class V> int pick(const std::vector<V> &v)
	{
		std::vector<int> live;
		for (std::size_t i = 0; i < v.size(); i++)
			if (alive(v[i]))
				live.push_back(static_cast<int>(i));
		return live.empty() ? -1 : live[below(live.size())];
	}
	static bool alive(const mr_obj &o) { return o.mr; }
	static bool alive(const cq_obj &o) { return o.cq; }
	static bool alive(const srq_obj &o) { return o.srq; }
	static bool alive(const qp_obj &o) { return o.qp; }
	static bool alive(ibv_pd *p) { return p; }

	// A queue size: small, at or past the device's limit, or anything.
	u32 size(u32 limit)
	{
		switch (below(8)) {
		case 0: return 0;
		case 1: return limit;
		case 2: return limit + 1;
		case 3: return static_cast<u32>(next());
		case 4: return 1u << below(16);
		default: return 1 + below(64);
		}
	}
	u32 key(bool remote)
	{
		const int m = pick(mrs_);
		switch (below(6)) {
		case 0: return remote ? t_.peer.rkey : t_.peer.lkey;
		case 1: return remote ? t_.canary.rkey : t_.canary.lkey;
		case 2: return static_cast<u32>(next());
		default:
			if (m < 0)
				return static_cast<u32>(next());
			return remote ? mrs_[m].mr->rkey : mrs_[m].mr->lkey;
		}
	}
	// A local address: in the arena (where every MR lies), or anything.
	u64 local_addr(u32 len)
	{
		if (chance(6))
			return next();
		return reinterpret_cast<std::uintptr_t>(arena_) + below(arena_len - std::min<u64>(len, arena_len) + 1);
	}
	u64 remote_addr(u64 base, std::size_t len)
	{
		switch (below(4)) {
		case 0: return next();
		case 1: return base + len - below(16);
		default: return base + (below(len / 8)) * 8;
		}
	}
	u32 length()
	{
		switch (below(6)) {
		case 0: return 0;
		case 1: return 8;
		case 2: return 0xffffffffu - below(64);
		case 3: return below(arena_len + 4096);
		default: return below(512);
		}
	}

	// ----------------------------------------------------------- checking
	void call(const char *what, int err)
	{
		if (err == 0) {
			out_.line(strf("O %s ok", what));
			return;
		}
		const char *name = errno_name(err);
		if (!name)
			failure(strf("%s failed with error %d, not an errno of a verbs call", what, err));
		out_.line(strf("O %s %s", what, name));
	}
	void note(const char *what, const std::string &outcome)
	{
		out_.line(strf("O %s %s", what, outcome.c_str()));
	}
	[[noreturn]] void failure(const std::string &why)
	{
		out_.line("F " + why);
		_exit(1);
	}

	int query_state(qp_obj &q)
	{
		ibv_qp_attr a{};
		ibv_qp_init_attr init{};
		const int err = ibv_query_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_CAP, &init);
		call("query_qp", err);
		if (err)
			failure("ibv_query_qp of a live QP failed");
		return a.qp_state;
	}

	// ------------------------------------------------------------- calls
	void step()
	{
		static constexpr int weights[] = {3, 2, 6, 3, 4, 2, 2, 2, 2, 3, 8, 14, 4, 14, 6, 10, 4, 3, 3, 2};
		u32 w = below(std::accumulate(std::begin(weights), std::end(weights), 0));
		int op = 0;
		while (w >= static_cast<u32>(weights[op]))
			w -= weights[op++];
		switch (op) {
		case 0: alloc_pd(); break;
		case 1: dealloc_pd(); break;
		case 2: reg_mr(); break;
		case 3: dereg_mr(); break;
		case 4: create_cq(); break;
		case 5: destroy_cq(); break;
		case 6: req_notify(); break;
		case 7: create_srq(); break;
		case 8: srq_misc(); break;
		case 9: destroy_srq(); break;
		case 10: create_qp(); break;
		case 11: modify_qp(); break;
		case 12: destroy_qp(); break;
		case 13: post_send(); break;
		case 14: post_recv(); break;
		case 15: poll(); break;
		case 16: connect(); break;
		case 17: disconnect(); break;
		case 18: query(); break;
		default: drain_async(); break;
		}
	}

	// A live PD or CQ, made if there is none; -1 if that failed.
	int need_pd()
	{
		if (pick(pds_) < 0)
			alloc_pd();
		return pick(pds_);
	}
	int need_cq()
	{
		if (pick(cqs_) < 0)
			create_cq(16);
		return pick(cqs_);
	}

	void alloc_pd()
	{
		ibv_pd *pd = ibv_alloc_pd(ctx_);
		call("alloc_pd", pd ? 0 : errno);
		if (pd)
			pds_.push_back(pd);
	}
	bool pd_in_use(int p) const
	{
		for (const mr_obj &m : mrs_)
			if (m.mr && m.pd == p)
				return true;
		for (const srq_obj &s : srqs_)
			if (s.srq && s.pd == p)
				return true;
		for (const qp_obj &q : qps_)
			if (q.qp && q.pd == p)
				return true;
		return false;
	}
	bool cq_in_use(int c) const
	{
		for (const qp_obj &q : qps_)
			if (q.qp && (q.send_cq == c || q.recv_cq == c))
				return true;
		return false;
	}
	bool srq_in_use(int s) const
	{
		for (const qp_obj &q : qps_)
			if (q.qp && q.srq == s)
				return true;
		return false;
	}
	// A destroy call's result: EBUSY exactly while the object is in use.
	void destroyed(const char *what, int err, bool in_use)
	{
		call(what, err);
		if (in_use && !err)
			failure(strf("%s succeeded on an object still in use", what));
		if (!in_use && err)
			failure(strf("%s of an unused object: %s", what, std::strerror(err)));
	}
	void dealloc_pd()
	{
		const int p = pick(pds_);
		if (p < 0)
			return;
		const bool busy = pd_in_use(p);
		const int err = ibv_dealloc_pd(pds_[p]);
		destroyed("dealloc_pd", err, busy);
		if (!err)
			pds_[p] = nullptr;
	}
	void reg_mr()
	{
		const int p = need_pd();
		if (p < 0)
			return;
		const u32 len = length();
		const u64 addr = local_addr(len);
		int access = static_cast<int>(below(32));
		if (chance(8))
			access = static_cast<int>(next());
		ibv_mr *mr = ibv_reg_mr(pds_[p], reinterpret_cast<void *>(addr), len, access);
		call("reg_mr", mr ? 0 : errno);
		if (mr)
			mrs_.push_back({mr, p});
	}
	// An MR may go while work requests that name it are queued: they
	// must fail, not use it (the memory stays ours, so a stray write
	// would only corrupt this process).
	void dereg_mr()
	{
		const int m = pick(mrs_);
		if (m < 0)
			return;
		const int err = ibv_dereg_mr(mrs_[m].mr);
		destroyed("dereg_mr", err, false);
		mrs_[m].mr = nullptr;
	}
	void create_cq(int cqe = 0)
	{
		if (!cqe)
			cqe = static_cast<int>(size(static_cast<u32>(dev_.max_cqe)));
		ibv_cq *cq = ibv_create_cq(ctx_, cqe, nullptr, nullptr,
					   chance(8) ? static_cast<int>(below(8)) : 0);
		call("create_cq", cq ? 0 : errno);
		if (cq)
			cqs_.push_back({cq});
	}
	void destroy_cq()
	{
		const int c = pick(cqs_);
		if (c < 0)
			return;
		poll_cq(c);
		const bool busy = cq_in_use(c);
		const int err = ibv_destroy_cq(cqs_[c].cq);
		destroyed("destroy_cq", err, busy);
		if (!err)
			cqs_[c].cq = nullptr;
	}
	void req_notify()
	{
		const int c = pick(cqs_);
		if (c >= 0)
			call("req_notify_cq", ibv_req_notify_cq(cqs_[c].cq, static_cast<int>(below(2))));
	}
	void create_srq()
	{
		const int p = need_pd();
		if (p < 0)
			return;
		ibv_srq_init_attr a{};
		a.attr.max_wr = size(static_cast<u32>(dev_.max_srq_wr));
		a.attr.max_sge = chance(4) ? size(static_cast<u32>(dev_.max_srq_sge)) : 1 + below(2);
		a.attr.srq_limit = chance(2) ? 0 : below(64);
		ibv_srq *s = ibv_create_srq(pds_[p], &a);
		call("create_srq", s ? 0 : errno);
		if (s)
			srqs_.push_back({s, p});
	}
	void srq_misc()
	{
		const int s = pick(srqs_);
		if (s < 0)
			return;
		if (chance(2)) {
			ibv_srq_attr a{};
			a.max_wr = size(static_cast<u32>(dev_.max_srq_wr));
			a.srq_limit = below(128);
			call("modify_srq", ibv_modify_srq(srqs_[s].srq, &a,
							  static_cast<int>(1 + below(3))));
		} else {
			ibv_srq_attr a{};
			call("query_srq", ibv_query_srq(srqs_[s].srq, &a));
		}
		post_srq_recv(s);
	}
	void destroy_srq()
	{
		const int s = pick(srqs_);
		if (s < 0)
			return;
		const bool busy = srq_in_use(s);
		const int err = ibv_destroy_srq(srqs_[s].srq);
		destroyed("destroy_srq", err, busy);
		if (!err)
			srqs_[s].srq = nullptr;
	}
	void create_qp()
	{
		const int p = need_pd();
		const int sc = need_cq();
		if (p < 0 || sc < 0)
			return;
		const int rc = chance(3) ? need_cq() : sc;
		const int s = chance(4) ? pick(srqs_) : -1;
		ibv_qp_init_attr a{};
		a.cap.max_send_wr = size(static_cast<u32>(dev_.max_qp_wr));
		a.cap.max_recv_wr = size(static_cast<u32>(dev_.max_qp_wr));
		a.cap.max_send_sge = chance(4) ? size(static_cast<u32>(dev_.max_sge)) : 1 + below(4);
		a.cap.max_recv_sge = chance(4) ? size(static_cast<u32>(dev_.max_sge)) : 1 + below(2);
		a.cap.max_inline_data = chance(4) ? size(4096) : below(128);
		a.qp_type = chance(8) ? static_cast<ibv_qp_type>(below(256)) : IBV_QPT_RC;
		a.sq_sig_all = static_cast<int>(below(2));
		a.send_cq = cqs_[sc].cq;
		a.recv_cq = cqs_[rc].cq;
		a.srq = s >= 0 ? srqs_[s].srq : nullptr;
		ibv_qp *qp = ibv_create_qp(pds_[p], &a);
		call("create_qp", qp ? 0 : errno);
		if (!qp)
			return;
		qps_.push_back(qp_obj{qp, p, sc, rc, s, IBV_QPS_RESET, false, nullptr});
		if (query_state(qps_.back()) != IBV_QPS_RESET)
			failure("a new QP is not in Reset");
	}
	void modify_qp()
	{
		const int i = pick(qps_);
		if (i < 0)
			return;
		qp_obj &q = qps_[i];
		const int before = query_state(q);
		ibv_qp_attr a{};
		int mask = IBV_QP_STATE;
		a.qp_state = static_cast<ibv_qp_state>(chance(16) ? below(16) : below(7));
		// Half the time the way a program walks the states, so that every
		// state is reached, not only Reset and Error.
		static constexpr ibv_qp_state forward[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
							   IBV_QPS_SQD, IBV_QPS_RTS, IBV_QPS_RESET,
							   IBV_QPS_RESET};
		if (chance(2) && before >= 0 && before < static_cast<int>(std::size(forward)))
			a.qp_state = forward[before];
		if (a.qp_state == IBV_QPS_INIT || chance(2)) {
			// What a Reset -> Init needs, as most programs set it.
			mask |= IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
			a.port_num = chance(8) ? static_cast<u8>(below(4)) : 1;
			a.qp_access_flags = chance(4) ? static_cast<unsigned>(below(64)) : 7;
		}
		if (chance(4)) {
			mask |= IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC;
			a.max_rd_atomic = static_cast<u8>(below(dev_.max_qp_rd_atom + 2));
			a.max_dest_rd_atomic = static_cast<u8>(below(dev_.max_qp_rd_atom + 2));
		}
		if (chance(6)) {
			mask |= IBV_QP_CUR_STATE;
			a.cur_qp_state = static_cast<ibv_qp_state>(chance(2) ? before : static_cast<int>(below(7)));
		}
		if (chance(8))
			mask |= static_cast<int>(1u << below(26));
		if (chance(16))
			mask &= ~IBV_QP_STATE;
		const int err = ibv_modify_qp(q.qp, &a, mask);
		call("modify_qp", err);
		const int after = query_state(q);
		const bool async = q.connected_ever; // a connection may fail it meanwhile
		note("qp_state", strf("%s->%s", state_name(before), state_name(after)));
		if (!err && !(mask & IBV_QP_STATE) && after != before &&
		    !(async && after == IBV_QPS_ERR))
			failure(strf("modify_qp without a state (mask 0x%x) moved the QP %s -> %s",
				     mask, state_name(before), state_name(after)));
		if (!err && (mask & IBV_QP_STATE)) {
			if (!transition_ok(before, a.qp_state) &&
			    !(async && transition_ok(IBV_QPS_ERR, a.qp_state)))
				failure(strf("modify_qp %s -> %s (mask 0x%x) succeeded",
					     state_name(before), state_name(a.qp_state), mask));
			if (a.qp_state == IBV_QPS_RTS && before != IBV_QPS_RTS && !q.connected_ever)
				failure("modify_qp to RTS succeeded on a QP that never had a connection");
			if (after != static_cast<int>(a.qp_state) &&
			    !(async && after == IBV_QPS_ERR))
				failure(strf("modify_qp to %s succeeded, ibv_query_qp says %s",
					     state_name(a.qp_state), state_name(after)));
		}
		if (err && after != before && !(async && after == IBV_QPS_ERR))
			failure(strf("modify_qp failed (%s) but the QP went %s -> %s",
				     std::strerror(err), state_name(before), state_name(after)));
		q.state = after;
	}
	void destroy_qp()
	{
		const int i = pick(qps_);
		if (i < 0)
			return;
		const int err = ibv_destroy_qp(qps_[i].qp);
		destroyed("destroy_qp", err, false);
		qps_[i].qp = nullptr;
		// Its connection's id goes after the QP, or before it.
		qps_[i].cm.reset();
	}

	// One SGE list; inline data must be readable memory of ours.
	void sges(std::vector<ibv_sge> &v, u32 n, bool inl)
	{
		v.resize(n);
		for (ibv_sge &s : v) {
			s.length = inl ? below(256) : length();
			s.addr = inl ? reinterpret_cast<std::uintptr_t>(arena_) + below(arena_len - 256)
				     : local_addr(s.length);
			s.lkey = key(false);
		}
	}
	void post_send()
	{
		const int i = pick(qps_);
		if (i < 0)
			return;
		qp_obj &q = qps_[i];
		const u32 count = 1 + below(4);
		std::vector<ibv_send_wr> wrs(count);
		std::vector<std::vector<ibv_sge>> lists(count);
		static constexpr int opcodes[] = {
			IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND,
			IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
			IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV, IBV_WR_SEND_WITH_INV};
		for (u32 k = 0; k < count; k++) {
			ibv_send_wr &w = wrs[k];
			w.wr_id = ++wr_id_;
			w.opcode = static_cast<ibv_wr_opcode>(chance(8) ? below(32)
								     : opcodes[below(std::size(opcodes))]);
			w.send_flags = chance(4) ? static_cast<unsigned>(below(64))
						 : IBV_SEND_SIGNALED | (chance(4) ? unsigned{IBV_SEND_INLINE} : 0u);
			const bool inl = w.send_flags & IBV_SEND_INLINE;
			sges(lists[k], chance(8) ? below(33) : below(3), inl);
			w.sg_list = lists[k].data();
			w.num_sge = static_cast<int>(lists[k].size());
			w.imm_data = static_cast<u32>(next());
			const bool peer = chance(2);
			const canary_keys &tk = peer ? t_.peer : t_.canary;
			if (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			    w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
				w.wr.atomic.remote_addr = remote_addr(tk.addr, peer ? peer_region_len : canary_process::len);
				w.wr.atomic.rkey = chance(4) ? key(true) : tk.rkey;
				w.wr.atomic.compare_add = next();
				w.wr.atomic.swap = next();
			} else {
				w.wr.rdma.remote_addr = remote_addr(tk.addr, peer ? peer_region_len : canary_process::len);
				w.wr.rdma.rkey = chance(4) ? key(true) : tk.rkey;
			}
			w.next = k + 1 < count ? &wrs[k + 1] : nullptr;
		}
		ibv_send_wr *bad = nullptr;
		const int err = ibv_post_send(q.qp, wrs.data(), &bad);
		call("post_send", err);
		for (const ibv_send_wr &w : wrs) {
			if (err && (!bad || &w == bad))
				break;
			posts_[w.wr_id] = {posted::kind::send, q.qp->qp_num, cqs_[q.send_cq].cq, w.opcode, 0, -1};
		}
	}
	template <class Post> void post_recvs(Post post, posted proto, const char *what)
	{
		const u32 count = 1 + below(4);
		std::vector<ibv_recv_wr> wrs(count);
		std::vector<std::vector<ibv_sge>> lists(count);
		for (u32 k = 0; k < count; k++) {
			sges(lists[k], chance(8) ? below(33) : below(3), false);
			wrs[k].wr_id = ++wr_id_;
			wrs[k].sg_list = lists[k].data();
			wrs[k].num_sge = static_cast<int>(lists[k].size());
			wrs[k].next = k + 1 < count ? &wrs[k + 1] : nullptr;
		}
		ibv_recv_wr *bad = nullptr;
		const int err = post(wrs.data(), &bad);
		call(what, err);
		for (u32 k = 0; k < count; k++) {
			if (err && (!bad || &wrs[k] == bad))
				break;
			posted p = proto;
			p.recv_len = 0;
			for (const ibv_sge &s : lists[k])
				p.recv_len += s.length;
			posts_[wrs[k].wr_id] = p;
		}
	}
	void post_recv()
	{
		const int i = pick(qps_);
		if (i < 0)
			return;
		qp_obj &q = qps_[i];
		post_recvs([&](ibv_recv_wr *w, ibv_recv_wr **bad) { return ibv_post_recv(q.qp, w, bad); },
			   {posted::kind::recv, q.qp->qp_num, cqs_[q.recv_cq].cq, 0, 0, -1}, "post_recv");
	}
	void post_srq_recv(int s)
	{
		post_recvs([&](ibv_recv_wr *w, ibv_recv_wr **bad) {
			return ibv_post_srq_recv(srqs_[s].srq, w, bad);
		}, {posted::kind::srq_recv, 0, nullptr, 0, 0, s}, "post_srq_recv");
	}
	void poll()
	{
		const int c = pick(cqs_);
		if (c >= 0)
			poll_cq(c);
	}
	// Every completion completes a work request posted to a QP (or an
	// SRQ of a QP) of this CQ, once; a receive fits its buffers.
	void poll_cq(int c)
	{
		ibv_wc wc[16];
		int n;
		for (int rounds = 0; rounds < 64 && (n = ibv_poll_cq(cqs_[c].cq, 16, wc)) > 0; rounds++)
			for (int k = 0; k < n; k++)
				check_completion(c, wc[k]);
	}
	void check_completion(int c, const ibv_wc &wc)
	{
		note("completion", wc.status == IBV_WC_SUCCESS ? strf("success-op%d", wc.opcode)
							       : ibv_wc_status_str(wc.status));
		auto it = posts_.find(wc.wr_id);
		if (it == posts_.end())
			failure(strf("a completion with wr_id %" PRIu64 " (status %d, QP %u) that no "
				     "outstanding work request has", wc.wr_id, wc.status, wc.qp_num));
		const posted p = it->second;
		posts_.erase(it);
		if (wc.status > IBV_WC_TM_RNDV_INCOMPLETE)
			failure(strf("completion status %d", wc.status));
		if (p.k == posted::kind::srq_recv) {
			const qp_obj *q = nullptr;
			for (const qp_obj &o : qps_)
				if (o.qp && o.qp->qp_num == wc.qp_num)
					q = &o;
			if (q && (q->srq != p.srq || cqs_[q->recv_cq].cq != cqs_[c].cq))
				failure("an SRQ receive completed on a QP or CQ not of that SRQ");
		} else if (p.cq != cqs_[c].cq || p.qp_num != wc.qp_num) {
			failure(strf("wr_id %" PRIu64 " posted to QP %u completed for QP %u on "
				     "another CQ", wc.wr_id, p.qp_num, wc.qp_num));
		}
		if (wc.status != IBV_WC_SUCCESS)
			return;
		if (p.k != posted::kind::send && wc.byte_len > p.recv_len)
			failure(strf("a receive of %u octets into %" PRIu64 " octets of buffers",
				     wc.byte_len, p.recv_len));
		if (p.k != posted::kind::send && !(wc.opcode & IBV_WC_RECV))
			failure(strf("a receive completed as opcode %d", wc.opcode));
		if (p.k == posted::kind::send && (wc.opcode & IBV_WC_RECV))
			failure(strf("a send work request completed as opcode %d", wc.opcode));
	}
	void connect()
	{
		const int i = pick(qps_);
		if (i < 0)
			return;
		qp_obj &q = qps_[i];
		if (chance(2) && q.state != IBV_QPS_INIT) {
			// Reuse: whatever it was, through Reset to Init.
			ibv_qp_attr a{};
			a.qp_state = IBV_QPS_RESET;
			call("modify_qp", ibv_modify_qp(q.qp, &a, IBV_QP_STATE));
			call("modify_qp", to_state(q.qp, IBV_QPS_INIT) ? 0 : errno);
			q.state = query_state(q);
		}
		auto link = std::make_unique<cm_link>();
		link->ch = rdma_create_event_channel();
		if (!link->ch || rdma_create_id(link->ch, &link->id, nullptr, RDMA_PS_TCP))
			failure("rdma_create_id");
		rdma_addrinfo *res = xiw_test::resolve(addr_, port_, false);
		const int ra = rdma_resolve_addr(link->id, nullptr, res->ai_dst_addr, 2000);
		rdma_freeaddrinfo(res);
		if (ra || link->next_event(cm_wait_ms) != RDMA_CM_EVENT_ADDR_RESOLVED ||
		    rdma_resolve_route(link->id, 2000) ||
		    link->next_event(cm_wait_ms) != RDMA_CM_EVENT_ROUTE_RESOLVED)
			failure("rdma_cm could not resolve the peer");
		rdma_conn_param p{};
		p.qp_num = chance(16) ? static_cast<u32>(next()) : q.qp->qp_num;
		p.responder_resources = static_cast<u8>(below(dev_.max_qp_rd_atom + 2));
		p.initiator_depth = static_cast<u8>(below(dev_.max_qp_rd_atom + 2));
		u8 priv[64];
		for (u8 &b : priv)
			b = static_cast<u8>(next());
		p.private_data = priv;
		p.private_data_len = static_cast<u8>(below(sizeof(priv) + 1));
		const int err = rdma_connect(link->id, &p) ? errno : 0;
		call("connect", err);
		int ev = -1;
		if (!err) {
			// From here on the QP may change state by itself.
			q.connected_ever = true;
			ev = link->next_event(cm_wait_ms);
			note("connect_event", ev < 0 ? "none in time"
					      : rdma_event_str(static_cast<rdma_cm_event_type>(ev)));
			if (ev == RDMA_CM_EVENT_ESTABLISHED && p.qp_num != q.qp->qp_num)
				failure("rdma_connect bound a QP number that is not ours");
		}
		q.state = query_state(q);
		if (q.state == IBV_QPS_RTS && ev >= 0 && ev != RDMA_CM_EVENT_ESTABLISHED)
			failure(strf("the QP is in RTS after %s",
				     rdma_event_str(static_cast<rdma_cm_event_type>(ev))));
		q.cm = std::move(link);
	}
	void disconnect()
	{
		const int i = pick(qps_);
		if (i < 0 || !qps_[i].cm)
			return;
		qp_obj &q = qps_[i];
		call("disconnect", rdma_disconnect(q.cm->id) ? errno : 0);
		q.cm->drain();
		if (chance(2))
			q.cm.reset();
		q.state = query_state(q);
	}
	void query()
	{
		if (chance(2)) {
			ibv_device_attr a{};
			call("query_device", ibv_query_device(ctx_, &a));
		} else {
			ibv_port_attr a{};
			call("query_port", ibv_query_port(ctx_, static_cast<u8>(below(3)), &a));
		}
		const int i = pick(qps_);
		if (i >= 0)
			qps_[i].state = query_state(qps_[i]);
	}
	void drain_async()
	{
		ibv_async_event ev{};
		while (ibv_get_async_event(ctx_, &ev) == 0) {
			note("async_event", ibv_event_type_str(ev.event_type));
			ibv_ack_async_event(&ev);
		}
		for (qp_obj &q : qps_)
			if (q.cm)
				q.cm->drain();
	}

	// Everything goes, in a random order: EBUSY exactly while in use,
	// then each object once nothing uses it.
	void teardown()
	{
		for (int c = 0; c < static_cast<int>(cqs_.size()); c++)
			if (cqs_[c].cq)
				poll_cq(c);
		for (int k = 0; k < 16; k++) {
			switch (below(5)) {
			case 0: destroy_qp(); break;
			case 1: dealloc_pd(); break;
			case 2: destroy_cq(); break;
			case 3: destroy_srq(); break;
			default: dereg_mr(); break;
			}
		}
		while (pick(qps_) >= 0)
			destroy_qp();
		while (pick(srqs_) >= 0)
			destroy_srq();
		while (pick(mrs_) >= 0)
			dereg_mr();
		while (pick(cqs_) >= 0)
			destroy_cq();
		while (pick(pds_) >= 0)
			dealloc_pd();
	}
	std::mt19937_64 r_;
	reporter &out_;
	const targets &t_;
	const ibv_device_attr &dev_;
	ibv_context *ctx_;
	u8 *arena_;
	const char *addr_, *port_;
	std::vector<ibv_pd *> pds_;
	std::vector<mr_obj> mrs_;
	std::vector<cq_obj> cqs_;
	std::vector<srq_obj> srqs_;
	std::vector<qp_obj> qps_;
	std::map<u64, posted> posts_;
	u64 wr_id_ = 0;
};

// Runs sequences FIRST..FIRST+COUNT-1 of SEED, each on a device context
// of its own; the last keeps its objects and the process exits with them.
[[noreturn]] void run_worker(const char *addr, const char *port, const targets &t, u64 seed,
			     u64 first, int count, int out_fd)
{
	reporter out(out_fd);
	// MRs lie in the arena; the guard page after it keeps a registration
	// that runs past its end from covering this process's own heap.
	void *map = mmap(nullptr, arena_len + 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || mprotect(static_cast<u8 *>(map) + arena_len, 4096, PROT_NONE))
		_exit(4);
	u8 *arena = static_cast<u8 *>(map);
	for (int k = 0; k < count; k++) {
		const u64 n = first + static_cast<u64>(k);
		out.line(strf("B %" PRIu64, n));
		ibv_context *ctx = open_xiw();
		if (!ctx)
			out.line("F no xiw device"), _exit(1);
		fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
		ibv_device_attr dev{};
		if (ibv_query_device(ctx, &dev))
			out.line("F ibv_query_device"), _exit(1);
		const bool keep = (n + 1) % sequences_per_worker == 0 || k + 1 == count;
		sequence s(seed ^ (n * 0x9e3779b97f4a7c15ull), out, t, dev, ctx, arena, addr, port);
		s.run(keep);
		if (!keep && ibv_close_device(ctx))
			out.line("F ibv_close_device after every object was destroyed"), _exit(1);
		out.line(strf("E %" PRIu64, n));
	}
	_exit(0);
}

// ---------------------------------------------------------------------------
// The parent: starts the canary, the peer and one worker after another,
// kills some, and adds up what they report.

struct tally {
	u64 sequences = 0, killed = 0, kept = 0;
	std::map<std::string, u64> outcomes;
	std::string failure;
};

// Reads the worker's lines until it exits, killing it after KILL_MS (or
// never if negative); false if it had to be stopped for taking too long.
bool supervise(pid_t pid, int fd, long long kill_ms, long long limit_ms, tally &t,
	       u64 &current, bool &was_killed)
{
	const long long start = xiw_raw::now_ms();
	std::string buf;
	was_killed = false;
	for (;;) {
		const long long now = xiw_raw::now_ms() - start;
		if (kill_ms >= 0 && now >= kill_ms && !was_killed) {
			kill(pid, SIGKILL);
			was_killed = true;
		}
		if (now > limit_ms) {
			kill(pid, SIGKILL);
			return false;
		}
		pollfd p{fd, POLLIN, 0};
		if (poll(&p, 1, 10) <= 0)
			continue;
		char chunk[4096];
		const ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n <= 0)
			return true;
		buf.append(chunk, static_cast<std::size_t>(n));
		std::size_t nl;
		while ((nl = buf.find('\n')) != std::string::npos) {
			const std::string l = buf.substr(0, nl);
			buf.erase(0, nl + 1);
			if (l[0] == 'B')
				current = std::strtoull(l.c_str() + 2, nullptr, 10);
			else if (l[0] == 'E')
				t.sequences++;
			else if (l[0] == 'O')
				t.outcomes[l.substr(2)]++;
			else if (l[0] == 'F' && t.failure.empty())
				t.failure = strf("sequence %" PRIu64 ": ", current) + l.substr(2);
		}
	}
}

int run(const char *addr, const char *port, u64 want, int seconds, u64 seed,
	std::optional<u64> replay)
{
	signal(SIGPIPE, SIG_IGN);
	canary_process canary;
	int to_peer[2], from_peer[2];
	if (pipe(to_peer) || pipe(from_peer))
		xiw_test::die("pipe");
	const pid_t peer = fork();
	if (peer < 0)
		xiw_test::die("fork");
	if (peer == 0) {
		close(to_peer[1]);
		close(from_peer[0]);
		run_peer(addr, port, to_peer[0], from_peer[1]);
	}
	close(to_peer[0]);
	close(from_peer[1]);
	targets t{};
	t.canary = canary.keys();
	if (read(from_peer[0], &t.peer, sizeof(t.peer)) != sizeof(t.peer))
		fail("the peer did not start");
	std::printf("xiw_verbs_fuzz: seed %" PRIu64 " (replay sequence N: xiw_verbs_fuzz %s %s "
		    "--replay %" PRIu64 " N)\n", seed, addr, port, seed);
	std::fflush(stdout);

	std::mt19937_64 r(seed);
	tally total;
	work_count work;
	const long long until = xiw_raw::now_ms() + seconds * 1000LL;
	// A worker's 50 sequences take seconds; ten minutes (times the slow
	// kernel's factor) means something hangs.
	const long long worker_limit_ms = 600 * 1000LL * xiw_test::time_factor();
	u64 next = replay ? *replay : 0;
	while ((replay ? total.sequences + total.killed == 0
		       : work.total(total.sequences) < want) &&
	       xiw_raw::now_ms() < until && total.failure.empty()) {
		const int count = replay ? 1 : sequences_per_worker;
		int lines[2];
		if (pipe(lines))
			xiw_test::die("pipe");
		const pid_t w = fork();
		if (w < 0)
			xiw_test::die("fork");
		if (w == 0) {
			close(lines[0]);
			close(to_peer[1]);
			run_worker(addr, port, t, seed, next, count, lines[1]);
		}
		close(lines[1]);
		// One worker in 8 dies by SIGKILL, at any moment of its life.
		// (A worker lives a few tenths of a second on the stock kernel.)
		const long long kill_ms = !replay && r() % 8 == 0 ? static_cast<long long>(r() % 400) : -1;
		u64 current = next;
		bool killed = false;
		const u64 before = total.sequences;
		const bool in_time = supervise(w, lines[0], kill_ms, worker_limit_ms, total, current, killed);
		work.add(total.sequences - before);
		close(lines[0]);
		int status = 0;
		waitpid(w, &status, 0);
		if (!in_time)
			total.failure = strf("sequence %" PRIu64 ": the worker took more than %lld s",
					     current, worker_limit_ms / 1000);
		else if (killed && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			total.killed++;
		else if (WIFSIGNALED(status) && total.failure.empty())
			total.failure = strf("sequence %" PRIu64 ": the worker died of signal %d",
					     current, WTERMSIG(status));
		else if (WIFEXITED(status) && WEXITSTATUS(status) && total.failure.empty())
			total.failure = strf("sequence %" PRIu64 ": the worker exited with %d", current,
					     WEXITSTATUS(status));
		else
			total.kept++;
		next += static_cast<u64>(count);
	}
	close(to_peer[1]);
	int status = 0;
	waitpid(peer, &status, 0);
	const u64 changed = canary.changed();

	std::printf("xiw_verbs_fuzz: %" PRIu64 " sequences completed, %" PRIu64
		    " workers killed mid-sequence, %" PRIu64 " workers exited with live objects\n",
		    total.sequences, total.killed, total.kept);
	std::map<std::string, std::map<std::string, u64>> by_call;
	for (const auto &[k, v] : total.outcomes) {
		const std::size_t sp = k.find(' ');
		by_call[k.substr(0, sp)][sp == std::string::npos ? "" : k.substr(sp + 1)] += v;
	}
	for (const auto &[call, outcomes] : by_call) {
		std::string line = strf("  %-14s", call.c_str());
		for (const auto &[o, v] : outcomes)
			line += strf(" %s:%" PRIu64, o.c_str(), v);
		std::printf("%s\n", line.c_str());
	}
	if (!total.failure.empty())
		fail("%s (replay: xiw_verbs_fuzz %s %s --replay %" PRIu64 " SEQUENCE)",
		     total.failure.c_str(), addr, port, seed);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail("the peer process failed (status 0x%x)", status);
	if (changed)
		fail("%" PRIu64 " octets of the other process's region changed", changed);
	if (!replay && work.total(total.sequences) < want)
		fail("only %" PRIu64 " of %" PRIu64 " sequences in %d s",
		     work.total(total.sequences), want, seconds);
	pass(strf("%" PRIu64 " sequences (%" PRIu64 " by the run's lanes), canary intact",
		  total.sequences, work.total(total.sequences)));
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 3) {
		std::fprintf(stderr, "usage: xiw_verbs_fuzz ADDR PORT [SEQUENCES [SECONDS [SEED]]]\n"
				     "       xiw_verbs_fuzz ADDR PORT --replay SEED SEQUENCE\n");
		return 2;
	}
	g_tool = "xiw_verbs_fuzz";
	g_case = "verbs";
	if (argc == 6 && std::string(argv[3]) == "--replay")
		return run(argv[1], argv[2], 1, 600, std::strtoull(argv[4], nullptr, 0),
			   std::strtoull(argv[5], nullptr, 0));
	const u64 want = argc > 3 ? std::strtoull(argv[3], nullptr, 0) : 1000;
	const int seconds = argc > 4 ? std::atoi(argv[4]) : 300;
	const u64 seed = argc > 5 ? std::strtoull(argv[5], nullptr, 0) : std::random_device{}();
	return run(argv[1], argv[2], want, seconds, seed, std::nullopt);
}
