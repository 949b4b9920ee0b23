// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// What the hostile local user's programs share: reporting, the device,
// the rings the provider mapped (found as a malicious library would, in
// /proc/self/maps), QP states, an rdma_cm active side.
#ifndef XIW_TESTS_HOSTILE_LIB_H
#define XIW_TESTS_HOSTILE_LIB_H

#include "../fuzz/raw_peer.h"
#include "../guest/rdma_test_util.h"

#include <rdma/ib_user_verbs.h>
#include <rdma/xiw-abi.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace xiw_hostile {

using xiw_raw::bytes;

// Program and case, for "PROGRAM CASE: ...: ok | FAIL: why".
inline const char *g_tool = "";
inline const char *g_case = "";

[[noreturn]] __attribute__((format(printf, 1, 2))) inline void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	xiw_test::vfail(g_tool, g_case, fmt, ap);
}

inline void pass(const std::string &what)
{
	std::printf("%s %s: %s: ok\n", g_tool, g_case, what.c_str());
	std::fflush(stdout);
}

// ---------------------------------------------------------------------------
// Shared rings

struct mapping {
	std::uintptr_t start, end;
	std::uint64_t offset; // in the device file: mmap() it again there
	std::size_t size() const { return end - start; }
	bool operator<(const mapping &o) const { return start < o.start; }
};

// The mappings of a uverbs device in this process.
inline std::set<mapping> uverbs_mappings()
{
	std::ifstream maps("/proc/self/maps");
	std::set<mapping> out;
	std::string line;
	while (std::getline(maps, line)) {
		if (line.find("/dev/infiniband/uverbs") == std::string::npos)
			continue;
		mapping m{};
		if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " %*s %" SCNx64, &m.start,
				&m.end, &m.offset) == 3)
			out.insert(m);
	}
	return out;
}

// The mappings that CREATE added, largest first.
template <class F> std::vector<mapping> new_mappings(F create)
{
	const std::set<mapping> before = uverbs_mappings();
	create();
	std::vector<mapping> added;
	for (const mapping &m : uverbs_mappings())
		if (!before.count(m))
			added.push_back(m);
	std::sort(added.begin(), added.end(),
		  [](const mapping &a, const mapping &b) { return a.size() > b.size(); });
	return added;
}

inline xiw_ring_ctrl *ctrl_of(const mapping &m)
{
	return reinterpret_cast<xiw_ring_ctrl *>(m.start);
}

// The doorbell as the provider rings it: POST_SEND with no work request.
inline bool raw_doorbell(ibv_qp *qp)
{
	struct {
		ib_uverbs_cmd_hdr hdr;
		ib_uverbs_post_send cmd;
	} req{};
	ib_uverbs_post_send_resp resp{};
	req.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = reinterpret_cast<std::uintptr_t>(&resp);
	req.cmd.qp_handle = qp->handle;
	// Checked even without work requests (ib_uverbs_post_send()).
	req.cmd.wqe_size = sizeof(ib_uverbs_send_wr);
	return write(qp->context->cmd_fd, &req, sizeof(req)) == static_cast<ssize_t>(sizeof(req));
}

// The work done toward a run's target by all its lanes
// (tests/guest/lanes_lib.bash), in the 8-octet file $XIW_LANE_COUNTER they
// share, so that they stop when the run's target is reached, not each at
// a share of it (lanes differ twofold in speed with their seeds).  Without
// lanes it is the caller's own count.
class work_count {
	std::uint64_t *shared_ = nullptr;

public:
	work_count()
	{
		const char *path = std::getenv("XIW_LANE_COUNTER");
		if (!path)
			return;
		const int fd = open(path, O_RDWR);
		if (fd < 0)
			xiw_test::die("open $XIW_LANE_COUNTER");
		void *m = mmap(nullptr, sizeof(*shared_), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (m == MAP_FAILED)
			xiw_test::die("mmap $XIW_LANE_COUNTER");
		shared_ = static_cast<std::uint64_t *>(m);
	}
	~work_count()
	{
		if (shared_)
			munmap(shared_, sizeof(*shared_));
	}
	work_count(const work_count &) = delete;
	work_count &operator=(const work_count &) = delete;
	void add(std::uint64_t n)
	{
		if (shared_)
			__atomic_add_fetch(shared_, n, __ATOMIC_RELAXED);
	}
	// All lanes' work; MINE, the caller's own count, without lanes.
	std::uint64_t total(std::uint64_t mine) const
	{
		return shared_ ? __atomic_load_n(shared_, __ATOMIC_RELAXED) : mine;
	}
};

// A context of the first xiw device, or nullptr.
inline ibv_context *open_xiw()
{
	int n = 0;
	ibv_context *ctx = nullptr;
	ibv_device **list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (std::string(ibv_get_device_name(list[i])).rfind("xiw", 0) == 0)
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

struct device {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;

	device() : ctx(open_xiw())
	{
		if (!ctx)
			fail("no xiw device");
		pd = ibv_alloc_pd(ctx);
		if (!pd)
			xiw_test::die("ibv_alloc_pd");
	}
	~device()
	{
		ibv_dealloc_pd(pd);
		ibv_close_device(ctx);
	}
};

inline bool to_state(ibv_qp *qp, ibv_qp_state s)
{
	ibv_qp_attr a{};
	a.qp_state = s;
	int mask = IBV_QP_STATE;
	if (s == IBV_QPS_INIT) {
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_WRITE;
		mask |= IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask) == 0;
}

// What the canary process tells the attacker about its region.
struct canary_keys {
	u32 lkey, rkey;
	u64 addr;
};

// Another process: a region with every remote right and known keys, never
// touched by itself.  changed() ends it and counts the octets that are no
// longer as it wrote them.  Start it before any thread.
class canary_process {
public:
	static constexpr std::size_t len = 64 * 1024;
	static constexpr u8 fill = 0xc3;

	canary_process()
	{
		int down[2], up[2];
		if (pipe(down) || pipe(up))
			xiw_test::die("pipe");
		pid_ = fork();
		if (pid_ < 0)
			xiw_test::die("fork");
		if (pid_ == 0)
			serve(down[0], up[1]);
		close(down[0]);
		close(up[1]);
		to_ = down[1];
		from_ = up[0];
		if (read(from_, &keys_, sizeof(keys_)) != sizeof(keys_))
			fail("the canary process did not start");
	}
	~canary_process()
	{
		if (pid_ > 0)
			changed();
	}
	canary_process(const canary_process &) = delete;
	canary_process &operator=(const canary_process &) = delete;

	const canary_keys &keys() const { return keys_; }

	u64 changed()
	{
		const char c = 1;
		u64 n = ~0ull;
		if (write(to_, &c, 1) != 1 || read(from_, &n, sizeof(n)) != sizeof(n))
			fail("the canary process went away");
		int status = 0;
		waitpid(pid_, &status, 0);
		pid_ = -1;
		close(to_);
		close(from_);
		return n;
	}

private:
	[[noreturn]] static void serve(int in, int out)
	{
		device d;
		static u8 region[len];
		std::memset(region, fill, sizeof(region));
		ibv_mr *mr = ibv_reg_mr(d.pd, region, sizeof(region),
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
						IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
		if (!mr)
			_exit(2);
		const canary_keys k{mr->lkey, mr->rkey, reinterpret_cast<std::uintptr_t>(region)};
		char c;
		if (write(out, &k, sizeof(k)) != sizeof(k) || read(in, &c, 1) != 1)
			_exit(3);
		u64 n = 0;
		for (u8 b : region)
			n += b != fill;
		ibv_dereg_mr(mr);
		_exit(write(out, &n, sizeof(n)) == sizeof(n) ? 0 : 3);
	}

	pid_t pid_ = -1;
	int to_ = -1, from_ = -1;
	canary_keys keys_{};
};

// An rdma_cm active side with its own event channel, resolved to ADDR:PORT.
struct cm_client {
	rdma_event_channel *ch = rdma_create_event_channel();
	rdma_cm_id *id = nullptr;

	cm_client(const char *addr, const char *port)
	{
		if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP))
			xiw_test::die("rdma_create_id");
		rdma_addrinfo *res = xiw_test::resolve(addr, port, false);
		if (rdma_resolve_addr(id, nullptr, res->ai_dst_addr, 2000))
			xiw_test::die("rdma_resolve_addr");
		rdma_freeaddrinfo(res);
		expect(RDMA_CM_EVENT_ADDR_RESOLVED);
		if (rdma_resolve_route(id, 2000))
			xiw_test::die("rdma_resolve_route");
		expect(RDMA_CM_EVENT_ROUTE_RESOLVED);
	}
	~cm_client()
	{
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ch);
	}
	// The next event, which must be WANT.
	void expect(rdma_cm_event_type want)
	{
		rdma_cm_event *ev = nullptr;
		if (rdma_get_cm_event(ch, &ev))
			xiw_test::die("rdma_get_cm_event");
		const rdma_cm_event_type got = ev->event;
		rdma_ack_cm_event(ev);
		if (got != want)
			fail("rdma_cm event %s, expected %s", rdma_event_str(got),
			     rdma_event_str(want));
	}
	// An RC QP (SEND_WR sends, 4 receives) on a new CQ of CQE entries,
	// both on this id's device and PD; nullptr (errno) if the QP cannot
	// be made.  The caller destroys both.
	ibv_qp *create_qp(int cqe, std::uint32_t send_wr, ibv_cq *&cq) const
	{
		cq = ibv_create_cq(id->verbs, cqe, nullptr, nullptr, 0);
		if (!cq)
			xiw_test::die("ibv_create_cq");
		ibv_qp_init_attr a = xiw_test::rc_qp_attr(send_wr, 4);
		a.send_cq = a.recv_cq = cq;
		return ibv_create_qp(id->pd, &a);
	}
	// Connects with the caller's QP, named by its number (the QP outlives
	// this id), at IRD/ORD DEPTH, and waits until the connection is
	// established.
	void connect_qp(const ibv_qp *qp, std::uint8_t depth = 4)
	{
		rdma_conn_param p = xiw_test::conn_param(depth);
		p.qp_num = qp->qp_num;
		if (rdma_connect(id, &p))
			xiw_test::die("rdma_connect");
		expect(RDMA_CM_EVENT_ESTABLISHED);
	}
};

// Two QPs of this host connected to each other: a listener on ADDR:PORT,
// then connect() joins QP A (the active side) to QP B (accepted).  Ends
// the connection and the listener when destroyed, before the QPs go.
struct loop_connection {
	rdma_event_channel *lch = rdma_create_event_channel();
	rdma_cm_id *listen_id = nullptr, *conn_b = nullptr;
	std::unique_ptr<cm_client> conn_a;
	const char *addr, *port;

	loop_connection(const char *a, const char *p)
		: listen_id(xiw_test::listen_async(lch, a, p, 4)), addr(a), port(p)
	{
	}
	~loop_connection()
	{
		if (conn_a)
			rdma_disconnect(conn_a->id);
		conn_a.reset();
		if (conn_b)
			rdma_destroy_id(conn_b);
		rdma_destroy_id(listen_id);
		rdma_destroy_event_channel(lch);
	}
	void connect(ibv_qp *a, ibv_qp *b)
	{
		conn_a = std::make_unique<cm_client>(addr, port);
		rdma_conn_param pa = xiw_test::conn_param(), pb = xiw_test::conn_param();
		pa.qp_num = a->qp_num;
		if (rdma_connect(conn_a->id, &pa))
			xiw_test::die("rdma_connect");
		rdma_cm_event *ev = nullptr;
		if (rdma_get_cm_event(lch, &ev) || ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
			fail("no connect request");
		conn_b = ev->id;
		rdma_ack_cm_event(ev);
		pb.qp_num = b->qp_num;
		if (rdma_accept(conn_b, &pb))
			xiw_test::die("rdma_accept");
		conn_a->expect(RDMA_CM_EVENT_ESTABLISHED);
		if (rdma_get_cm_event(lch, &ev) || ev->event != RDMA_CM_EVENT_ESTABLISHED)
			fail("the passive side was not established");
		rdma_ack_cm_event(ev);
	}
};

} // namespace xiw_hostile

#endif
