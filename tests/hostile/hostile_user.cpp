// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// A local user who does to xiw what a broken or malicious verbs library
// would: writes ring indices the kernel reads, reuses QPs, fills CQs.
//   xiw_hostile_user qp_reuse ADDR PORT | orq_reuse ADDR PORT |
//                    stalled_reuse ADDR PORT |
//                    stale_rts ADDR PORT | connect_accept ADDR PORT |
//                    qp_steal ADDR PORT | connect_destroy ADDR PORT |
//                    create_fault ADDR PORT |
//                    scribbled_sink ADDR PORT | long_verify ADDR PORT |
//                    send_stream ADDR PORT | query_states ADDR PORT
//   xiw_hostile_user rq_producer | sq_producer | sq_creep | cq_overflow |
//                    read_sges
// Each case prints "xiw_hostile_user CASE: ...: ok" or "...: FAIL: why" and
// exits 1 on failure; the guest harness adds the kernel log (a soft lockup,
// an oops, a WARN fail the run).
//
//   qp_reuse     a QP connects to a raw TCP peer (in this process, on PORT),
//                posts an RDMA Read of read_len octets, gets the header and
//                the first octets of its Read Response, then a reset; the
//                QP goes Error -> Reset -> Init and connects again (rdma_cm
//                with its qp_num) to the same peer, which now sends one
//                good Send.  The Send must arrive whole in the receive
//                posted for it, the Read's sink must hold nothing but what
//                the first stream placed.  (Regression: the parser went on
//                with the first stream's half-received Read Response and
//                placed the Send's octets through the flushed ORQ slot.)
//   orq_reuse    1000 RDMA Reads of 64 octets, one posted (and the
//                doorbell rung) a millisecond, to a raw peer on PORT that
//                answers the oldest only while ORD (the device's largest,
//                the ORQ ring's size) are outstanding: each request the QP
//                issues then takes the slot the last Read Response freed.  Every Read must
//                complete in order, successfully, with its own octets.
//                (Regression: the completion read its slot after the QP's
//                lock was dropped, and with the next request issued into
//                it meanwhile completed that one, Read 128 in place of
//                Read 0, with an error; run with the window widened, see
//                hostile_user.sh.)
//   stalled_reuse  a QP keeps Writes of 8 KiB in flight to a raw peer that
//                stops reading, until none completes for a second: TCP is
//                full and the next Write is framed behind it.  The peer
//                resets, the QP goes Error -> Reset -> Init, connects again
//                and posts a Send: it must complete, and be the first FPDU
//                of the new stream.  (Regression: the framed Write's
//                "complete it once sent" outlived the flush; the reused
//                QP's first push completed it through a NULL pointer.)
//   stale_rts    a raw peer sends the header and the first octets of an
//                RDMA Write into the QP's region; the QP is reset and taken
//                through Init and RTR to RTS before the end of its
//                connection can unbind the socket (this thread at real-time
//                priority on the CPU that end's work waits for); the peer
//                then sends the rest.  RTS must be refused: the stream was
//                flushed.  (Regression: RTS was granted on the old socket,
//                and the parser placed the rest of the Write through the
//                target the flush had let go: a NULL dereference.)
//   connect_accept  a QP named in rdma_connect to a peer that never answers
//                MPA (ADDR:PORT), then in rdma_accept of a connection from
//                this process (ADDR:PORT+1): the accept must fail, and
//                ibv_destroy_qp return at once.  (Regression: the accept
//                bound the QP and forgot the connect still pending, and the
//                destroy waited for its MPA timeout, 10 s, in D state.)
//   connect_destroy  rdma_connect naming a QP of ours, and ibv_destroy_qp
//                of it while iw_cm's lookup of the number has returned
//                and waits (xiw_delay.ko, loaded by hostile_user.sh, holds
//                it there): the connect must fail (the destroy took the
//                number away first), the destroy return at once, and the
//                kernel log stay clean.  (Regression: the
//                lookup took no reference, so the destroy dropped the last
//                one and iw_cm's own came after it, on a QP being freed:
//                "refcount_t: addition on 0; use-after-free", and
//                "underflow" as the failed connect let it go.)
//   send_stream  RDMA Writes of 64 octets posted for 4 s from CPU 0, as
//                fast as the SQ takes them, to a raw peer on PORT that reads
//                all it gets, the doorbell rung on CPU 1 each millisecond,
//                each socket send made 1 ms slower (xiw_delay.ko, loaded by
//                hostile_user.sh) so that the ring never runs dry;
//                preemption switched to "none" where the kernel allows,
//                the soft lockup detector at 2 s.  Until then a thread
//                spinning on CPU 1 must get a tenth of it, and an 8-octet
//                Read on a connection on PORT+1, due from CPU 1 after 1 s,
//                must complete within 2 s of that.  (Regressions: one run
//                of the transmit loop went on for as long as work came,
//                without yielding: a soft lockup of CPU 1, and every other
//                QP's work queued behind it.  Then the loop yielded, but
//                on a worker at nice -20: the thread got 1-5% of CPU 1,
//                and ksoftirqd, starved as well, took the Read's request
//                and answer off the sockets up to 2.8 s late.  Once more
//                when the worker went to nice -20 for perftest's sake,
//                without the cap on its share of the CPU: 1.2%.)
//   qp_steal     rdma_connect with qp_num = a QP of another process (in
//                Init): EINVAL, no connection reaches the peer on PORT, the
//                other QP stays in Init.  (Regression: it was bound.)
//   rq_producer  a 1-entry RQ whose producer index says 0xffffffff
//                receives are posted, then modify to Error: it must return
//                at once (regression: the flush took them all, 2^32 loops
//                under a spinlock with BHs off: a soft lockup).
//   sq_producer  the same on the SQ: at most one ring's worth of flushed
//                completions (regression: 6.4 million from a ring of 8 in
//                90 s, and a soft lockup of the worker).
//   sq_creep     the SQ's producer index kept a few entries ahead of what
//                the kernel flushed (QP in Error), for 4 s, with the soft
//                lockup detector at 2 s: the flush goes on in turns of the
//                worker, and stops with the index.  (One run of the
//                transmit loop used to follow the index for as long as it
//                moved; in a guest the index loses the race within a few
//                milliseconds, so this shows the bound, not the old loop.)
//   read_sges    an RDMA Read with 2 SGEs: EINVAL at post time.
//   accounting   (in a cgroup v2 with the memory controller) 16 QPs with
//                4096-entry queues: at least 1 MiB each charged to it.
//   memlock      (without CAP_IPC_LOCK, RLIMIT_MEMLOCK 256 KiB) a QP with
//                4096-entry queues: ENOMEM; a 16-entry one: created; QPs
//                destroyed while their queues stay mapped still count:
//                ENOMEM before 256 KiB of them, a QP again once unmapped.
//   query_states every transition xiw has, without a connection and on
//                one (see run_query_states): after each, ibv_query_qp
//                reports the state it is in and the attributes it got.
//   cq_overflow  64 receives flushed into a CQ of 4 entries: exactly one
//                IBV_EVENT_CQ_ERR (regression: one per dropped CQE, each
//                an allocation in the kernel's event path).
// The rings are found the way such a library would find them: the
// provider mapped them from the uverbs device, /proc/self/maps lists them.

#include "hostile_lib.h"

#include <infiniband/xiwdv.h>

#include <rdma/ib_user_verbs.h>
#include <linux/userfaultfd.h>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <deque>
#include <fstream>
#include <iterator>
#include <memory>
#include <thread>
#include <vector>

namespace {

using namespace xiw_hostile;
using xiw_test::strf;


// ibv_modify_qp to Error in a thread: its duration, or -1 if it has not
// returned after LIMIT_MS (it is then left behind; the kernel log tells).
long long timed_error(ibv_qp *qp, int limit_ms)
{
	auto done = std::make_shared<std::atomic<long long>>(-1);
	const long long t0 = xiw_raw::now_ms();
	std::thread([qp, done, t0] {
		to_state(qp, IBV_QPS_ERR);
		done->store(xiw_raw::now_ms() - t0);
	}).detach();
	while (done->load() < 0 && xiw_raw::now_ms() - t0 < limit_ms)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	return done->load();
}

int count_completions(ibv_cq *cq, int wait_ms)
{
	int n = 0;
	ibv_wc wc[16];
	const long long until = xiw_raw::now_ms() + wait_ms;
	while (xiw_raw::now_ms() < until) {
		const int k = ibv_poll_cq(cq, 16, wc);
		if (k < 0)
			xiw_test::die("ibv_poll_cq");
		n += k;
		if (!k)
			std::this_thread::sleep_for(std::chrono::milliseconds(5));
	}
	return n;
}

// The device, its PD and one CQ for every QP; QPs are the caller's to
// destroy.
struct device_cq {
	device d;
	ibv_cq *cq = nullptr;

	explicit device_cq(int cqe)
	{
		cq = ibv_create_cq(d.ctx, cqe, nullptr, nullptr, 0);
		if (!cq)
			xiw_test::die("ibv_create_cq");
	}
	~device_cq() { ibv_destroy_cq(cq); }
	// An RC QP on the CQ, or nullptr (errno).
	ibv_qp *create_qp(u32 send_wr, u32 recv_wr)
	{
		ibv_qp_init_attr a = xiw_test::rc_qp_attr(send_wr, recv_wr);
		a.send_cq = a.recv_cq = cq;
		return ibv_create_qp(d.pd, &a);
	}
};

// One QP in Reset on its own device_cq; MAPS are the uverbs mappings its
// creation added, largest first.
struct local_qp : device_cq {
	ibv_qp *qp = nullptr;
	std::vector<mapping> maps;

	local_qp(int cqe, u32 send_wr, u32 recv_wr) : device_cq(cqe)
	{
		maps = new_mappings([&] { qp = create_qp(send_wr, recv_wr); });
		if (!qp)
			xiw_test::die("ibv_create_qp");
	}
	~local_qp() { ibv_destroy_qp(qp); }
	ibv_qp_cap caps() const
	{
		ibv_qp_attr got{};
		ibv_qp_init_attr init{};
		if (ibv_query_qp(qp, &got, IBV_QP_CAP, &init))
			xiw_test::die("ibv_query_qp");
		return got.cap;
	}
};

// rq_producer, sq_producer: the ring's producer index says 0xffffffff
// entries were posted, then modify to Error.  The ring is made the smaller
// of the two, so that it is the second mapping.
int run_bad_producer(bool send_ring)
{
	local_qp l(4096, send_ring ? 8 : 64, send_ring ? 512 : 1);
	if (l.maps.size() != 2)
		fail("ibv_create_qp mapped %zu regions of the device, expected 2", l.maps.size());
	const ibv_qp_cap cap = l.caps();
	const u32 ring = send_ring ? cap.max_send_wr : cap.max_recv_wr;
	if (!to_state(l.qp, IBV_QPS_INIT))
		xiw_test::die("ibv_modify_qp(INIT)");
	__atomic_store_n(&ctrl_of(l.maps[1])->producer, 0xffffffffu, __ATOMIC_RELEASE);
	const long long took = timed_error(l.qp, 10000);
	if (took < 0)
		fail("ibv_modify_qp(ERR) has not returned after 10 s");
	// The send flush runs on the kernel's worker: time to misbehave.
	const int flushed = count_completions(l.cq, 3000);
	if (static_cast<u32>(flushed) > ring)
		fail("%d completions flushed from a ring of %u", flushed, ring);
	pass(strf("modify to Error in %lld ms, %d flushed (ring of %u)", took, flushed, ring));
	return 0;
}

int run_cq_overflow()
{
	local_qp l(4, 4, 64);
	device &d = l.d;
	ibv_qp *qp = l.qp;
	ibv_cq *cq = l.cq;
	if (!to_state(qp, IBV_QPS_INIT))
		xiw_test::die("ibv_modify_qp(INIT)");
	static char buf[64];
	ibv_mr *mr = ibv_reg_mr(d.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		xiw_test::die("ibv_reg_mr");
	for (int i = 0; i < 64; i++) {
		if (xiw_test::post_recv_one(qp, buf, sizeof(buf), mr->lkey, static_cast<u64>(i)))
			xiw_test::die("ibv_post_recv");
	}
	if (!to_state(qp, IBV_QPS_ERR))
		xiw_test::die("ibv_modify_qp(ERR)");
	// The async events, for a second.
	int fl = fcntl(d.ctx->async_fd, F_GETFL);
	fcntl(d.ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	int cq_err = 0, other = 0;
	const long long until = xiw_raw::now_ms() + 1000;
	while (xiw_raw::now_ms() < until) {
		ibv_async_event ev{};
		if (ibv_get_async_event(d.ctx, &ev)) {
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
			continue;
		}
		(ev.event_type == IBV_EVENT_CQ_ERR ? cq_err : other)++;
		ibv_ack_async_event(&ev);
	}
	const int polled = count_completions(cq, 200);
	ibv_dereg_mr(mr);
	if (cq_err != 1)
		fail("%d CQ error events for one overflow (%d completions in the CQ)", cq_err,
		     polled);
	pass(strf("1 CQ error event, %d completions kept, %d other events", polled, other));
	return 0;
}

// This process's memory cgroup's usage (cgroup v2), or -1.
long long cgroup_memory_current()
{
	std::ifstream self("/proc/self/cgroup");
	std::string line;
	while (std::getline(self, line))
		if (line.rfind("0::", 0) == 0) {
			std::ifstream cur("/sys/fs/cgroup" + line.substr(3) + "/memory.current");
			long long v = -1;
			cur >> v;
			return v;
		}
	return -1;
}

// accounting: the kernel memory of QPs is charged to the creator's memory
// cgroup (run in one with the memory controller).  16 QPs with 4096-entry
// queues hold about 16 x 2 MiB of rings and shadows.  (Regression: none of
// it was charged, vmalloc_user and kvcalloc without __GFP_ACCOUNT.)
int run_accounting()
{
	constexpr int nqp = 16;
	device_cq dc(16);
	const long long before = cgroup_memory_current();
	if (before < 0)
		fail("not in a cgroup v2 with the memory controller");
	std::vector<ibv_qp *> qps;
	for (int i = 0; i < nqp; i++) {
		ibv_qp *qp = dc.create_qp(4096, 4096);
		if (!qp)
			xiw_test::die("ibv_create_qp");
		qps.push_back(qp);
	}
	const long long during = cgroup_memory_current();
	for (ibv_qp *qp : qps)
		ibv_destroy_qp(qp);
	const long long after = cgroup_memory_current();
	const long long per_qp = (during - before) / nqp;
	// The SQ ring alone: 4096 SQEs of more than 200 octets.
	if (per_qp < 1 << 20)
		fail("%d QPs with 4096-entry queues charged %lld octets to the cgroup", nqp,
		     during - before);
	pass(strf("%lld KiB charged per QP, %lld KiB left after destroying them", per_qp >> 10,
		  (after - before) >> 10));
	return 0;
}

// This process's pinned memory (VmPin in /proc/self/status), in KiB.
long vm_pin_kib()
{
	std::ifstream status("/proc/self/status");
	std::string line;
	while (std::getline(status, line))
		if (line.rfind("VmPin:", 0) == 0)
			return std::atol(line.c_str() + 6);
	return -1;
}

// memlock: queues count as locked memory.  Run without CAP_IPC_LOCK and
// with RLIMIT_MEMLOCK at 256 KiB: a QP with 4096-entry queues fails with
// ENOMEM, a small one is created, and once destroyed its pages count no
// more (the big one's failure did not leak a charge either) - unless the
// process still maps them.
int run_memlock()
{
	device_cq dc(16);
	errno = 0;
	ibv_qp *big = dc.create_qp(4096, 4096);
	const int big_err = errno;
	if (big)
		fail("a QP with 4096-entry queues was created within RLIMIT_MEMLOCK 256 KiB");
	if (big_err != ENOMEM)
		fail("a QP beyond RLIMIT_MEMLOCK: %s, expected ENOMEM", std::strerror(big_err));
	for (int round = 0; round < 3; round++) {
		ibv_qp *small = dc.create_qp(16, 16);
		if (!small)
			fail("round %d: a QP with 16-entry queues: %s", round, std::strerror(errno));
		ibv_destroy_qp(small);
	}
	// Queues destroyed while this process keeps mappings of their own:
	// still its locked memory.  (Regression: destroying a queue gave its
	// charge back at once, and QP after QP stayed mapped past the limit.)
	constexpr std::size_t limit = 256 * 1024;
	std::vector<mapping> kept;
	std::size_t kept_bytes = 0;
	int created = 0, create_err = 0;
	for (; created < 64; created++) {
		ibv_qp *qp = nullptr;
		const std::vector<mapping> maps = new_mappings([&] { qp = dc.create_qp(16, 16); });
		if (!qp) {
			create_err = errno;
			break;
		}
		for (const mapping &m : maps) {
			void *p = mmap(nullptr, m.size(), PROT_READ, MAP_SHARED, dc.d.ctx->cmd_fd,
				       static_cast<off_t>(m.offset));
			if (p == MAP_FAILED)
				xiw_test::die("mmap of a queue again");
			kept.push_back({reinterpret_cast<std::uintptr_t>(p),
					reinterpret_cast<std::uintptr_t>(p) + m.size(), m.offset});
			kept_bytes += m.size();
		}
		ibv_destroy_qp(qp);
	}
	if (create_err != ENOMEM)
		fail("%d QPs created and destroyed with their queues kept mapped (%zu KiB, limit "
		     "%zu KiB): %s", created, kept_bytes / 1024, limit / 1024,
		     create_err ? std::strerror(create_err) : "no ENOMEM");
	for (const mapping &m : kept)
		munmap(reinterpret_cast<void *>(m.start), m.size());
	ibv_qp *again = dc.create_qp(16, 16);
	if (!again)
		fail("a QP once the kept queues were unmapped: %s", std::strerror(errno));
	ibv_destroy_qp(again);
	// The provider unmaps a queue after destroying it: memory it then
	// registers must fit at once, without a queue allocation between.
	// (Regression of the above: the destroyed queues stayed counted.)
	const long pin_before = vm_pin_kib();
	std::vector<ibv_qp *> many;
	for (int i = 0; i < 15; i++) {
		ibv_qp *qp = dc.create_qp(16, 16);
		if (!qp)
			fail("QP %d of 15: %s", i, std::strerror(errno));
		many.push_back(qp);
	}
	for (ibv_qp *qp : many)
		ibv_destroy_qp(qp);
	// Nor does it wait for the next one: released within seconds.
	long pin = vm_pin_kib();
	for (int i = 0; i < 30 && pin > pin_before; i++) {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		pin = vm_pin_kib();
	}
	if (pin > pin_before)
		fail("VmPin %ld KiB 3 s after 15 QPs were destroyed, %ld KiB before them", pin,
		     pin_before);
	static u8 region[128 * 1024];
	ibv_mr *mr = ibv_reg_mr(dc.d.pd, region, sizeof(region), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		fail("128 KiB registered after 15 QPs were destroyed: %s", std::strerror(errno));
	ibv_dereg_mr(mr);
	pass(strf("4096-entry QP: ENOMEM; 16-entry QP created 3 times; with destroyed QPs' "
		  "queues kept mapped, ENOMEM after %d (%zu KiB kept), a QP again once unmapped; "
		  "15 QPs destroyed: VmPin back to %ld KiB, 128 KiB registered",
		  created, kept_bytes / 1024, pin));
	return 0;
}

// An RDMA Read with two SGEs, through ibv_post_send and through the
// ibv_wr_* API: EINVAL at post time, as max_sge_rd (1) says.  (Regression:
// accepted, the QP went to Error when the kernel fetched it.)
int run_read_sges()
{
	device_cq dc(16);
	device &d = dc.d;
	ibv_cq *cq = dc.cq;
	ibv_qp_init_attr_ex a{};
	a.cap = xiw_test::rc_qp_attr(4, 4).cap;
	a.cap.max_send_sge = 2;
	a.qp_type = IBV_QPT_RC;
	a.send_cq = a.recv_cq = cq;
	a.pd = d.pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	a.send_ops_flags = IBV_QP_EX_WITH_RDMA_READ;
	ibv_qp *qp = ibv_create_qp_ex(d.ctx, &a);
	if (!qp || !to_state(qp, IBV_QPS_INIT))
		xiw_test::die("ibv_create_qp_ex, ibv_modify_qp(INIT)");
	static char buf[64];
	ibv_mr *mr = ibv_reg_mr(d.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		xiw_test::die("ibv_reg_mr");
	ibv_sge sge[2] = {{reinterpret_cast<std::uintptr_t>(buf), 32, mr->lkey},
			  {reinterpret_cast<std::uintptr_t>(buf + 32), 32, mr->lkey}};
	ibv_send_wr wr{}, *bad = nullptr;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.sg_list = sge;
	wr.num_sge = 2;
	wr.wr.rdma.rkey = 0x5eed;
	const int post = ibv_post_send(qp, &wr, &bad);
	ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
	ibv_wr_start(qpx);
	ibv_wr_rdma_read(qpx, 0x5eed, 0);
	ibv_wr_set_sge_list(qpx, 2, sge);
	const int batch = ibv_wr_complete(qpx);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	if (post != EINVAL || batch != EINVAL)
		fail("ibv_post_send: %d, ibv_wr_complete: %d; expected EINVAL (%d) from both",
		     post, batch, EINVAL);
	pass("EINVAL from ibv_post_send and ibv_wr_complete");
	return 0;
}

const char *state_name(ibv_qp_state s)
{
	static const char *const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
	return s < std::size(names) ? names[s] : "?";
}

// One step of query_states: modify_qp to TO with MASK and the attributes
// ACCESS, ORD, IRD, which must return RC; then ibv_query_qp must report
// STATE (or Error, if OR_ERR: a close the step began may have ended) and,
// for the masks given so far, what they set, and the capacities the QP
// was created with.
struct query_step {
	ibv_qp_state to;
	int mask;
	unsigned access, ord, ird;
	int rc;
	ibv_qp_state state;
	bool or_err = false;
};

// The attributes a QP was given and where it stands, as query_states
// follows them.
struct query_model {
	unsigned access = 0, ord = 0, ird = 0;
	ibv_qp_cap cap{};
	std::string walk;
};

void query_check(ibv_qp *qp, const query_step &st, query_model &m)
{
	ibv_qp_attr a{};
	a.qp_state = st.to;
	a.port_num = 1;
	a.qp_access_flags = st.access;
	a.max_rd_atomic = static_cast<u8>(st.ord);
	a.max_dest_rd_atomic = static_cast<u8>(st.ird);
	const int rc = ibv_modify_qp(qp, &a, st.mask);
	m.walk += strf("%s%s %s", m.walk.empty() ? "" : ", ", state_name(st.to),
		       rc ? std::strerror(rc) : "ok");
	if (rc != st.rc)
		fail("modify_qp to %s returned %d (%s), expected %d (walk: %s)",
		     state_name(st.to), rc, std::strerror(rc), st.rc, m.walk.c_str());
	if (!rc) {
		if (st.mask & IBV_QP_ACCESS_FLAGS)
			m.access = st.access;
		if (st.mask & IBV_QP_MAX_QP_RD_ATOMIC)
			m.ord = st.ord;
		if (st.mask & IBV_QP_MAX_DEST_RD_ATOMIC)
			m.ird = st.ird;
	}
	ibv_qp_attr got{};
	ibv_qp_init_attr init{};
	if (ibv_query_qp(qp, &got,
			 IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MAX_QP_RD_ATOMIC |
				 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_CAP,
			 &init))
		xiw_test::die("ibv_query_qp");
	if (got.qp_state != st.state && !(st.or_err && got.qp_state == IBV_QPS_ERR))
		fail("ibv_query_qp says %s, expected %s (walk: %s)", state_name(got.qp_state),
		     state_name(st.state), m.walk.c_str());
	m.walk += strf(" (%s)", state_name(got.qp_state));
	if (got.qp_access_flags != m.access || got.max_rd_atomic != m.ord ||
	    got.max_dest_rd_atomic != m.ird)
		fail("ibv_query_qp in %s says access 0x%x, ORD %u, IRD %u; given 0x%x, %u, %u "
		     "(walk: %s)",
		     state_name(got.qp_state), got.qp_access_flags, got.max_rd_atomic,
		     got.max_dest_rd_atomic, m.access, m.ord, m.ird, m.walk.c_str());
	if (got.cap.max_send_wr != m.cap.max_send_wr ||
	    got.cap.max_recv_wr != m.cap.max_recv_wr ||
	    got.cap.max_send_sge != m.cap.max_send_sge ||
	    got.cap.max_recv_sge != m.cap.max_recv_sge ||
	    init.cap.max_send_wr != m.cap.max_send_wr)
		fail("ibv_query_qp in %s says other capacities than at creation (walk: %s)",
		     state_name(got.qp_state), m.walk.c_str());
}

// query_states: a QP walked through every transition xiw has, with
// ibv_query_qp after each: the state it is in and every attribute it was
// given (access flags, ORD, IRD) and its capacities.  Without a
// connection: Reset, Init, Init with new attributes, RTR, RTS (refused:
// no stream), Error, RTS (refused), Reset, Init.  Then connected through
// rdma_cm (RTS with the connection's ORD and IRD, 4 each): RTS with new
// access flags, SQD, Error, Reset, Init.  SQD begins the graceful close,
// at whose end the QP goes to Error by itself: so SQD -> SQD and SQD ->
// RTS are left out (their outcome depends on when the close ends), and
// the query after SQD may say Error.
int run_query_states(const char *addr, const char *port)
{
	constexpr unsigned lrw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_REMOTE_WRITE;
	constexpr unsigned rr = IBV_ACCESS_REMOTE_READ;
	constexpr int init_mask = IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	constexpr int all = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MAX_QP_RD_ATOMIC |
			    IBV_QP_MAX_DEST_RD_ATOMIC;
	constexpr int state = IBV_QP_STATE;
	device_cq dc(64);
	ibv_qp *q = dc.create_qp(16, 4);
	ibv_qp *a = dc.create_qp(16, 4);
	ibv_qp *b = dc.create_qp(16, 4);
	if (!q || !a || !b)
		xiw_test::die("ibv_create_qp");
	query_model m;
	{
		ibv_qp_attr got{};
		ibv_qp_init_attr init{};
		if (ibv_query_qp(q, &got, IBV_QP_CAP | IBV_QP_STATE, &init))
			xiw_test::die("ibv_query_qp");
		m.cap = init.cap;
		if (got.qp_state != IBV_QPS_RESET)
			fail("a new QP is in %s", state_name(got.qp_state));
	}
	const query_step alone[] = {
		{IBV_QPS_INIT, init_mask, lrw, 0, 0, 0, IBV_QPS_INIT},
		{IBV_QPS_INIT, all, rr, 8, 16, 0, IBV_QPS_INIT},
		{IBV_QPS_RTR, state, 0, 0, 0, 0, IBV_QPS_RTR},
		{IBV_QPS_RTS, state, 0, 0, 0, EINVAL, IBV_QPS_RTR},
		{IBV_QPS_ERR, state, 0, 0, 0, 0, IBV_QPS_ERR},
		{IBV_QPS_RTS, state, 0, 0, 0, EINVAL, IBV_QPS_ERR},
		{IBV_QPS_RESET, state, 0, 0, 0, 0, IBV_QPS_RESET},
		{IBV_QPS_INIT, init_mask, lrw, 0, 0, 0, IBV_QPS_INIT},
	};
	for (const query_step &st : alone)
		query_check(q, st, m);
	const std::string first = m.walk;

	if (!to_state(a, IBV_QPS_INIT) || !to_state(b, IBV_QPS_INIT))
		xiw_test::die("ibv_modify_qp(INIT)");
	query_model c;
	c.cap = m.cap;
	c.access = lrw;
	{
		loop_connection link(addr, port);
		link.connect(a, b);
		// What the connection set: RTS, the ORD and IRD it negotiated.
		c.ord = c.ird = 4;
		const query_step connected[] = {
			{IBV_QPS_RTS, state, 0, 0, 0, 0, IBV_QPS_RTS},
			{IBV_QPS_RTS, state | IBV_QP_ACCESS_FLAGS, rr, 0, 0, 0, IBV_QPS_RTS},
			{IBV_QPS_SQD, state, 0, 0, 0, 0, IBV_QPS_SQD, true},
			{IBV_QPS_ERR, state, 0, 0, 0, 0, IBV_QPS_ERR},
			{IBV_QPS_RESET, state, 0, 0, 0, 0, IBV_QPS_RESET},
			{IBV_QPS_INIT, init_mask, lrw, 0, 0, 0, IBV_QPS_INIT},
		};
		for (const query_step &st : connected)
			query_check(a, st, c);
	}
	for (ibv_qp *qp : {q, a, b})
		ibv_destroy_qp(qp);
	pass("without a connection: " + first + "; connected: " + c.walk);
	return 0;
}

// after_removal: the device goes away (the script deletes the link when
// told "ready") under a process with a QP; posting then must fail with an
// errno, as with any verbs provider, not crash the process.  (Regression:
// when the doorbell went through ibv_cmd_post_send(), the provider gave it
// a NULL bad_wr, which libibverbs writes to when the command fails: a
// segfault.)
int run_after_removal()
{
	local_qp l(16, 4, 4);
	if (!to_state(l.qp, IBV_QPS_INIT))
		xiw_test::die("ibv_modify_qp(INIT)");
	std::printf("xiw_hostile_user after_removal: ready\n");
	std::fflush(stdout);
	char c;
	if (std::fread(&c, 1, 1, stdin) != 1)
		fail("no word from the script");
	static u8 buf[64];
	ibv_sge sge{reinterpret_cast<std::uintptr_t>(buf), 0, 0};
	ibv_send_wr wr{}, *bad = nullptr;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	const int send = ibv_post_send(l.qp, &wr, &bad);
	ibv_recv_wr rwr{}, *rbad = nullptr;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	const int recv = ibv_post_recv(l.qp, &rwr, &rbad);
	pass(strf("after the device went away: ibv_post_send %s, ibv_post_recv %s",
		  send ? std::strerror(send) : "0", recv ? std::strerror(recv) : "0"));
	return 0;
}

// A kernel setting (a file under /proc or /sys) at VALUE while this lives,
// as it was before after.  The value in force is the file's first line,
// or with IN_PARENS the word in parentheses there ("none (voluntary)
// full"); where none is found nothing is changed.
class kernel_setting {
	const char *path;
	std::string before;

public:
	kernel_setting(const char *file, const char *value, bool in_parens) : path(file)
	{
		std::getline(std::ifstream(path), before);
		if (in_parens) {
			const std::size_t open = before.find('('), close = before.find(')');
			before = open == std::string::npos || close < open
					 ? ""
					 : before.substr(open + 1, close - open - 1);
		}
		if (!before.empty() && !(std::ofstream(path) << value << "\n"))
			xiw_test::die(path);
	}
	~kernel_setting()
	{
		if (!before.empty())
			std::ofstream(path) << before << "\n";
	}
	kernel_setting(const kernel_setting &) = delete;
	kernel_setting &operator=(const kernel_setting &) = delete;
	bool changed() const { return !before.empty(); }
};

// The soft lockup detector at its shortest while it lives
// (kernel.watchdog_thresh = 1: a CPU that does not schedule for 2 s is
// reported; hashing 512 MiB takes 3 to 5 s in a TCG guest).  Only around
// the Verify: pinning and releasing 512 MiB may take longer than that in
// one go.
struct short_watchdog : kernel_setting {
	short_watchdog() : kernel_setting("/proc/sys/kernel/watchdog_thresh", "1", false)
	{
		if (!changed())
			xiw_test::die("kernel.watchdog_thresh");
	}
};

// Keeps the calling thread on CPU (the kernel queues a thread's work items
// on the CPU it runs on).
void pin_to_cpu(int cpu)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		fail("the case needs two CPUs online");
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		xiw_test::die("sched_setaffinity");
}

int run_sq_creep()
{
	constexpr int creep_ms = 4000;
	local_qp l(4096, 8, 512);
	if (l.maps.size() != 2)
		fail("ibv_create_qp mapped %zu regions of the device, expected 2", l.maps.size());
	const u32 ring = l.caps().max_send_wr;
	if (!to_state(l.qp, IBV_QPS_INIT))
		xiw_test::die("ibv_modify_qp(INIT)");
	xiw_ring_ctrl *ctrl = ctrl_of(l.maps[1]);
	std::atomic<bool> stop{false};
	u64 moves = 0;
	// Half a ring ahead of the kernel's consumer index, never more than
	// the ring holds (that the kernel stops at).
	std::thread creeper([&] {
		pin_to_cpu(1);
		while (!stop.load(std::memory_order_relaxed)) {
			const u32 c = __atomic_load_n(&ctrl->consumer, __ATOMIC_ACQUIRE);
			__atomic_store_n(&ctrl->producer, c + ring / 2, __ATOMIC_RELEASE);
			moves++;
		}
	});
	pin_to_cpu(0);
	long long took;
	{
		short_watchdog w;
		took = timed_error(l.qp, 10000);
		std::this_thread::sleep_for(std::chrono::milliseconds(creep_ms));
		stop.store(true);
		creeper.join();
	}
	if (took < 0)
		fail("ibv_modify_qp(ERR) has not returned after 10 s");
	const int flushed = count_completions(l.cq, 1000);
	const int after = count_completions(l.cq, 1000);
	if (after)
		fail("%d completions more a second after the index stopped", after);
	pass(strf("the producer index crept %llu times over %d ms: modify to Error in %lld ms, "
		  "%d completions (CQ of 4096), none after it stopped",
		  static_cast<unsigned long long>(moves), creep_ms, took, flushed));
	return 0;
}

// long_verify: an RDMA Verify of a 512 MiB region with SHA-256, seconds
// of hashing for the responder, with the soft lockup detector at 2 s while
// it runs (the script then looks for a report).  The responder must yield
// while it walks the region, and answer.  (Regression: Verify and
// persistent Flush walked up to 4 GiB a peer names without yielding.)
// Meanwhile, from the same CPU, an 8-octet RDMA Read on another connection
// (on PORT + 1) must complete within 2 s: the hashing must not hold back the other QPs'
// work on that CPU.  (Regression: it did, until the Verify was answered,
// as the workers of a CPU take the next work item only when the running
// one sleeps, and a hash never does.)
int run_long_verify(const char *addr, const char *port)
{
	const std::string port2 = std::to_string(std::atoi(port) + 1);
	constexpr std::size_t len = std::size_t{512} << 20;
	constexpr std::uint32_t sha256_len = 32;
	constexpr auto read_limit = std::chrono::seconds(2);
	static u8 hash[sha256_len];
	static u64 word, word_copy;
	device d;
	void *region = mmap(nullptr, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED)
		xiw_test::die("mmap");
	ibv_cq *cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
	ibv_cq *cq2 = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
	ibv_mr *target = ibv_reg_mr(d.pd, region, len,
				    IBV_ACCESS_REMOTE_READ | XIWDV_ACCESS_VERIFY_SHA256);
	ibv_mr *out = ibv_reg_mr(d.pd, hash, sizeof(hash), IBV_ACCESS_LOCAL_WRITE);
	ibv_mr *src = ibv_reg_mr(d.pd, &word, sizeof(word), IBV_ACCESS_REMOTE_READ);
	ibv_mr *dst = ibv_reg_mr(d.pd, &word_copy, sizeof(word_copy), IBV_ACCESS_LOCAL_WRITE);
	ibv_qp_init_attr qa = xiw_test::rc_qp_attr(4, 1);
	qa.send_cq = qa.recv_cq = cq;
	ibv_qp *a = cq ? ibv_create_qp(d.pd, &qa) : nullptr;
	ibv_qp *b = cq ? ibv_create_qp(d.pd, &qa) : nullptr;
	qa.send_cq = qa.recv_cq = cq2;
	ibv_qp *c = cq2 ? ibv_create_qp(d.pd, &qa) : nullptr;
	ibv_qp *e = cq2 ? ibv_create_qp(d.pd, &qa) : nullptr;
	if (!target || !out || !src || !dst || !a || !b || !c || !e ||
	    !to_state(a, IBV_QPS_INIT) || !to_state(b, IBV_QPS_INIT) ||
	    !to_state(c, IBV_QPS_INIT) || !to_state(e, IBV_QPS_INIT))
		xiw_test::die("objects");
	// Both requests, and so both responders' work, on CPU 0.
	pin_to_cpu(0);
	ibv_wc wc{}, rwc{};
	bool done, read_done, verify_first = false;
	double read_secs = 0;
	const auto start = std::chrono::steady_clock::now();
	{
		loop_connection link(addr, port), link2(addr, port2.c_str());
		link.connect(a, b);
		link2.connect(c, e);
		xiwdv_wr_ext ext{};
		xiwdv_ext_verify(&ext, target->rkey, reinterpret_cast<std::uintptr_t>(region),
				 static_cast<std::uint32_t>(len));
		// (The opcode is xiwdv_wr_set_ext()'s to set.)
		xiw_test::one_sge_wr w(IBV_WR_SEND, hash, sha256_len, out->lkey);
		xiwdv_wr_set_ext(&w.wr, &ext);
		short_watchdog watchdog;
		if (w.post(a))
			xiw_test::die("ibv_post_send (Verify)");
		std::this_thread::sleep_for(std::chrono::seconds(1));
		verify_first = ibv_poll_cq(cq, 1, &wc) == 1;
		xiw_test::one_sge_wr r(IBV_WR_RDMA_READ, &word_copy, sizeof(word_copy), dst->lkey);
		r.wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(&word);
		r.wr.wr.rdma.rkey = src->rkey;
		const auto read_start = std::chrono::steady_clock::now();
		if (r.post(c))
			xiw_test::die("ibv_post_send (Read)");
		read_done = xiw_test::poll_one(cq2, rwc, 600000);
		read_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() -
							  read_start).count();
		done = verify_first || xiw_test::poll_one(cq, wc, 600000);
	}
	const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	for (ibv_qp *q : {a, b, c, e})
		ibv_destroy_qp(q);
	for (ibv_mr *m : {out, src, dst, target})
		ibv_dereg_mr(m);
	ibv_destroy_cq(cq);
	ibv_destroy_cq(cq2);
	munmap(region, len);
	if (!done || wc.status != IBV_WC_SUCCESS)
		fail("the Verify of 512 MiB %s", done ? ibv_wc_status_str(wc.status) : "did not complete");
	if (!read_done || rwc.status != IBV_WC_SUCCESS)
		fail("the Read on the other connection %s",
		     read_done ? ibv_wc_status_str(rwc.status) : "did not complete");
	if (verify_first)
		fail("the Verify was answered before the Read on the other connection was "
		     "posted (%.1f s): the case shows nothing", secs);
	if (read_secs > std::chrono::duration<double>(read_limit).count())
		fail("an 8-octet Read on another connection took %.1f s while the Verify ran",
		     read_secs);
	pass(strf("Verify (SHA-256) of 512 MiB answered in %.1f s; an 8-octet Read on another "
		  "connection meanwhile in %.3f s",
		  secs, read_secs));
	return 0;
}

// scribbled_sink: RDMA Writes land in a region whose owner keeps rewriting
// it - a race the verbs allow (the contents are then undefined, not the
// connection).  The MPA CRC must cover the octets that arrived, not the
// memory after they were copied.  (Regression: the receiver computed it
// over the destination, so a concurrent writer turned a good FPDU into
// Terminate LLP/MPA/CRC and the connection failed.)
int run_scribbled_sink(const char *addr, const char *port)
{
	constexpr std::size_t len = 256 * 1024;
	constexpr int writes = 200;
	static u8 src[len], sink[len];
	device d;
	ibv_cq *cq_a = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
	ibv_cq *cq_b = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
	ibv_mr *mr_a = ibv_reg_mr(d.pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	ibv_mr *mr_b = ibv_reg_mr(d.pd, sink, len,
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ibv_qp_init_attr qa = xiw_test::rc_qp_attr(16, 1);
	qa.send_cq = qa.recv_cq = cq_a;
	ibv_qp *a = cq_a ? ibv_create_qp(d.pd, &qa) : nullptr;
	qa.send_cq = qa.recv_cq = cq_b;
	ibv_qp *b = cq_b ? ibv_create_qp(d.pd, &qa) : nullptr;
	if (!mr_a || !mr_b || !a || !b || !to_state(a, IBV_QPS_INIT) || !to_state(b, IBV_QPS_INIT))
		xiw_test::die("objects");
	int ok = 0;
	ibv_wc wc{};
	{
		loop_connection link(addr, port);
		link.connect(a, b);
		std::atomic<bool> stop{false};
		std::thread owner([&] {
			for (u8 v = 0; !stop.load(std::memory_order_relaxed); v++)
				std::memset(sink, v, sizeof(sink));
		});
		for (int i = 0; i < writes; i++) {
			xiw_test::one_sge_wr w(IBV_WR_RDMA_WRITE, src, len, mr_a->lkey);
			w.wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(sink);
			w.wr.wr.rdma.rkey = mr_b->rkey;
			if (w.post(a))
				xiw_test::die("ibv_post_send");
			if (!xiw_test::poll_one(cq_a, wc, 20000) || wc.status != IBV_WC_SUCCESS)
				break;
			ok++;
		}
		stop = true;
		owner.join();
	}
	xiw_test::destroy_all(a, b, mr_a, mr_b, cq_a, cq_b);
	if (ok < writes)
		fail("Write %d of %d ended with %s while the sink's owner wrote to it", ok + 1,
		     writes, ibv_wc_status_str(wc.status));
	pass(strf("%d Writes of %zu octets into a region its owner kept rewriting", writes, len));
	return 0;
}

// ---------------------------------------------------------------------------
// qp_reuse: a raw peer and a QP that connects to it twice

constexpr std::size_t read_len = 4096;
constexpr std::size_t read_sent = 8;	// of the Read Response's payload
constexpr std::size_t send_len = 16;
constexpr u8 sink_fill = 0xee;

u8 send_octet(std::size_t i)
{
	return static_cast<u8>(0x30 + i);
}

// The responder's side of MPA: reads the Request, answers it like a plain
// RNIC would (same revision, no markers, CRC as asked, IRD/ORD IRD_ORD, no
// RTR).
bool raw_accept(int fd, xiw_raw::mpa_stream &s, bytes &rest, std::string &why, u16 ird_ord = 4)
{
	xiw_raw::mpa_frame_reader r;
	bytes in;
	const long long until = xiw_raw::now_ms() + 10000;
	while (!r.done()) {
		in.clear();
		const long k = xiw_raw::recv_some(fd, in, 1000);
		if (k == 0 || k == -1 || xiw_raw::now_ms() > until) {
			why = "no MPA Request";
			return false;
		}
		if (k > 0) {
			const std::size_t used = r.feed(in.data(), in.size());
			rest.assign(in.begin() + static_cast<long>(used), in.end());
		}
	}
	const xiw_raw::mpa_frame &req = r.frame();
	if (!req.key_is(XIW_MPA_KEY_REQ)) {
		why = "not an MPA Request";
		return false;
	}
	s.crc = req.flags & XIW_MPA_FLAG_C;
	s.markers = false;
	s.pos = 0;
	bytes pd;
	u8 flags = req.flags & XIW_MPA_FLAG_C;
	if (req.has_v2()) {
		flags |= XIW_MPA_FLAG_ENHANCED;
		pd = xiw_raw::mpa_v2_word(0, ird_ord, 0, ird_ord);
	}
	const bytes rep = xiw_raw::mpa_encode(XIW_MPA_KEY_REP, flags, req.rev, pd);
	if (send(fd, rep.data(), rep.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(rep.size())) {
		why = "sending the MPA Reply failed";
		return false;
	}
	return true;
}

// Reads FPDUs until one for which MATCH(segment, view) is true; false
// (and why) if the stream ends or breaks first, or after 10 s.
template <class Match>
bool raw_segment(int fd, const xiw_raw::mpa_stream &s, const bytes &rest, Match match,
		 std::string &why)
{
	xiw_raw::fpdu_reader rd(s);
	rd.feed(rest.data(), rest.size());
	const long long until = xiw_raw::now_ms() + 10000;
	for (;;) {
		bytes seg;
		u32 pos = 0;
		const auto st = rd.next(seg, pos, why);
		if (st == xiw_raw::fpdu_reader::error)
			return false;
		if (st == xiw_raw::fpdu_reader::ok) {
			if (match(seg, xiw_raw::seg_view(seg)))
				return true;
			continue;
		}
		bytes in;
		const long k = xiw_raw::recv_some(fd, in, 1000);
		if (k == 0 || k == -1 || xiw_raw::now_ms() > until) {
			why = "the stream ended before the FPDU looked for";
			return false;
		}
		if (k > 0)
			rd.feed(in.data(), in.size());
	}
}

// Reads FPDUs until an RDMA Read Request; its sink STag and offset.
bool raw_read_request(int fd, const xiw_raw::mpa_stream &s, const bytes &rest, u32 &stag,
		      u64 &to, std::string &why)
{
	return raw_segment(
		fd, s, rest,
		[&](const bytes &seg, const xiw_raw::seg_view &v) {
			if (!v.valid || v.tagged || v.opcode != XIW_OP_READ_REQ ||
			    seg.size() < v.hdr_len + 16)
				return false;
			stag = xiw_raw::get_be32(seg.data() + v.hdr_len);
			to = xiw_raw::get_be64(seg.data() + v.hdr_len + 4);
			return true;
		},
		why);
}

// The next connection on LFD (WHICH names it in why), through its MPA
// exchange; its descriptor, or -1 and why.
int raw_connection(int lfd, xiw_raw::mpa_stream &s, bytes &rest, const char *which,
		   std::string &why, u16 ird_ord = 4)
{
	pollfd p{lfd, POLLIN, 0};
	const int fd = poll(&p, 1, 20000) > 0 ? accept(lfd, nullptr, nullptr) : -1;
	if (fd < 0) {
		why = strf("no %s connection", which);
		return -1;
	}
	rest.clear();
	if (!raw_accept(fd, s, rest, why, ird_ord)) {
		close(fd);
		return -1;
	}
	return fd;
}

// Keeps FD open until DONE (at most 10 s), then closes it.
void raw_close_when(int fd, const std::atomic<bool> &done)
{
	for (int i = 0; i < 1000 && !done.load(); i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	close(fd);
}

// The raw peer's listening socket on ADDR:PORT.
int raw_listen(const char *addr, const char *port)
{
	std::string why;
	const int lfd = xiw_raw::tcp_listen(addr, static_cast<u16>(std::atoi(port)), 4, why);
	if (lfd < 0)
		fail("%s", why.c_str());
	return lfd;
}

// Resets the connection on FD, then takes the second one on LFD.
int raw_reset_and_reconnect(int fd, int lfd, xiw_raw::mpa_stream &s, bytes &rest,
			    std::string &why)
{
	xiw_raw::set_rst_on_close(fd);
	close(fd);
	return raw_connection(lfd, s, rest, "second", why);
}

// The peer: connection 1 gets the start of a Read Response and a reset,
// connection 2 one good Send, then an orderly close once the QP has it.
void raw_peer(int lfd, std::string &why, std::atomic<bool> &send_done)
{
	xiw_raw::mpa_stream s;
	bytes rest;
	u32 stag = 0;
	u64 to = 0;
	int fd = raw_connection(lfd, s, rest, "first", why);
	if (fd < 0)
		return;
	if (!raw_read_request(fd, s, rest, stag, to, why)) {
		close(fd);
		return;
	}
	std::vector<u8> payload(read_len, 0xab);
	const bytes resp = xiw_raw::frame_fpdu(
		s, xiw_raw::seg_tagged(xiw_ddp_ctrl(1, 1), xiw_rdmap_ctrl(XIW_RDMAP_RV1, XIW_OP_READ_RESP),
				       stag, to, payload.data(), payload.size()));
	const std::size_t part = XIW_MPA_HDR_LEN + XIW_DDP_TAGGED_HLEN + read_sent;
	send(fd, resp.data(), part, MSG_NOSIGNAL);
	std::this_thread::sleep_for(std::chrono::milliseconds(500));
	fd = raw_reset_and_reconnect(fd, lfd, s, rest, why);
	if (fd < 0)
		return;
	u8 data[send_len];
	for (std::size_t i = 0; i < send_len; i++)
		data[i] = send_octet(i);
	const bytes msg = xiw_raw::frame_fpdu(
		s, xiw_raw::seg_untagged(xiw_ddp_ctrl(0, 1), xiw_rdmap_ctrl(XIW_RDMAP_RV1, XIW_OP_SEND),
					 0, XIW_QN_SEND, 1, 0, data, send_len));
	send(fd, msg.data(), msg.size(), MSG_NOSIGNAL);
	raw_close_when(fd, send_done);
}

int run_qp_reuse(const char *addr, const char *port)
{
	const int lfd = raw_listen(addr, port);
	std::atomic<bool> send_done{false};
	std::string peer_why;
	std::thread peer(raw_peer, lfd, std::ref(peer_why), std::ref(send_done));

	static u8 sink[read_len];
	static u8 rbuf[64];
	std::memset(sink, sink_fill, sizeof(sink));
	std::memset(rbuf, sink_fill, sizeof(rbuf));
	ibv_qp *qp = nullptr;
	ibv_cq *cq = nullptr;
	ibv_mr *smr = nullptr, *rmr = nullptr;
	ibv_wc wc{};
	int read_status;
	bool got = false;
	// The QP outlives both connections (rdma_cm ids): it is the caller's,
	// given to each by its number.
	{
		cm_client first(addr, port);
		qp = first.create_qp(16, 4, cq);
		smr = ibv_reg_mr(first.id->pd, sink, sizeof(sink), IBV_ACCESS_LOCAL_WRITE);
		rmr = ibv_reg_mr(first.id->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
		if (!qp || !smr || !rmr || !to_state(qp, IBV_QPS_INIT))
			xiw_test::die("ibv_create_qp, ibv_reg_mr, ibv_modify_qp(INIT)");
		first.connect_qp(qp);

		xiw_test::one_sge_wr w(IBV_WR_RDMA_READ, sink, read_len, smr->lkey);
		w.wr.wr.rdma.remote_addr = 0x1000;
		w.wr.wr.rdma.rkey = 0x5eed;
		if (w.post(qp))
			xiw_test::die("ibv_post_send");
		if (!xiw_test::poll_one(cq, wc, 20000))
			fail("the Read did not complete after the peer's reset");
		if (wc.status == IBV_WC_SUCCESS)
			fail("the Read completed successfully from %zu of %zu octets", read_sent,
			     read_len);
		read_status = wc.status;
		xiw_test::wait_disconnect(first.id, 5000);

		// Reuse: Error (the reset did that) -> Reset -> Init, a receive.
		if (!to_state(qp, IBV_QPS_RESET) || !to_state(qp, IBV_QPS_INIT))
			xiw_test::die("ibv_modify_qp(RESET, INIT)");
		if (xiw_test::post_recv_one(qp, rbuf, sizeof(rbuf), rmr->lkey, 42))
			xiw_test::die("ibv_post_recv");

		cm_client second(addr, port);
		second.connect_qp(qp);
		while (!got && xiw_test::poll_one(cq, wc, 5000))
			got = wc.wr_id == 42 && wc.status == IBV_WC_SUCCESS;
		send_done.store(true);
		xiw_test::wait_disconnect(second.id, 5000);
	}
	peer.join();
	close(lfd);
	if (!peer_why.empty())
		fail("peer: %s", peer_why.c_str());
	if (!got)
		fail("the second connection's Send did not complete the receive");
	if (wc.byte_len != send_len)
		fail("the Send arrived as %u octets, it had %zu", wc.byte_len, send_len);
	for (std::size_t i = 0; i < sizeof(rbuf); i++)
		if (rbuf[i] != (i < send_len ? send_octet(i) : sink_fill))
			fail("receive buffer octet %zu is 0x%02x", i, rbuf[i]);
	std::size_t changed = 0;
	for (std::size_t i = read_sent; i < read_len; i++)
		changed += sink[i] != sink_fill;
	if (changed)
		fail("%zu octets of the Read's sink beyond the %zu received changed", changed,
		     read_sent);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(rmr);
	ibv_destroy_cq(cq);
	pass(strf("the Read ended with status %d, the reused QP received the %zu-octet Send",
		  read_status, send_len));
	return 0;
}

// ---------------------------------------------------------------------------
// orq_reuse: Reads through an ORQ kept full at its largest ORD, so that
// each request the QP issues goes into the slot the last Read Response
// just freed

constexpr unsigned orq_reads = 1000;
constexpr u32 orq_read_len = 64;
constexpr u64 orq_source_base = 0x100000;

// The octet a Read Response carries at I of the source at TO.
u8 orq_octet(u64 to, u32 i)
{
	return static_cast<u8>((to >> 6) * 7 + i);
}

struct orq_request {
	u32 sink_stag;
	u64 sink_to;
	u32 len;
	u64 source_to;
};

// The responder: answers the oldest Read once DEPTH are outstanding, so
// that the requester's ORQ is full before each Read Response (FULL counts
// those), or when no other Request came for 100 ms (the end, or a smaller
// ORD than asked for).
void orq_peer(int lfd, u16 depth, std::string &why, unsigned &full,
	      const std::atomic<bool> &done)
{
	xiw_raw::mpa_stream s;
	bytes rest;
	const int fd = raw_connection(lfd, s, rest, "first", why, depth);
	if (fd < 0)
		return;
	xiw_raw::fpdu_reader rd(s);
	rd.feed(rest.data(), rest.size());
	std::deque<orq_request> waiting;
	unsigned received = 0, answered = 0;
	long long last = xiw_raw::now_ms();
	while (answered < orq_reads && why.empty()) {
		bool idle = false;
		bytes seg;
		u32 pos = 0;
		const auto st = rd.next(seg, pos, why);
		if (st == xiw_raw::fpdu_reader::error)
			break;
		if (st == xiw_raw::fpdu_reader::ok) {
			const xiw_raw::seg_view v(seg);
			if (!v.valid || v.tagged || v.opcode != XIW_OP_READ_REQ ||
			    seg.size() < v.hdr_len + 28u) {
				why = strf("FPDU with opcode %u after %u Read Requests", v.opcode,
					   received);
				break;
			}
			const u8 *p = seg.data() + v.hdr_len;
			waiting.push_back({xiw_raw::get_be32(p), xiw_raw::get_be64(p + 4),
					   xiw_raw::get_be32(p + 12), xiw_raw::get_be64(p + 20)});
			received++;
			last = xiw_raw::now_ms();
		} else {
			bytes in;
			const long k = xiw_raw::recv_some(fd, in, 100);
			if (k == 0 || k == -1) {
				why = strf("the stream ended after %u Read Requests", received);
				break;
			}
			if (k > 0)
				rd.feed(in.data(), in.size());
			else if (xiw_raw::now_ms() - last > 20000)
				why = strf("no Read Request for 20 s after %u (%u answered)",
					   received, answered);
			else
				idle = true;
		}
		while (!waiting.empty() && (waiting.size() >= depth || idle)) {
			const orq_request r = waiting.front();
			waiting.pop_front();
			full += received - answered == depth;
			std::vector<u8> payload(r.len);
			for (u32 i = 0; i < r.len; i++)
				payload[i] = orq_octet(r.source_to, i);
			const bytes resp = xiw_raw::frame_fpdu(
				s, xiw_raw::seg_tagged(xiw_ddp_ctrl(1, 1),
						       xiw_rdmap_ctrl(XIW_RDMAP_RV1, XIW_OP_READ_RESP),
						       r.sink_stag, r.sink_to, payload.data(),
						       payload.size()));
			if (send(fd, resp.data(), resp.size(), MSG_NOSIGNAL) !=
			    static_cast<ssize_t>(resp.size())) {
				why = "sending a Read Response failed";
				break;
			}
			answered++;
		}
	}
	raw_close_when(fd, done);
}

int run_orq_reuse(const char *addr, const char *port)
{
	const int lfd = raw_listen(addr, port);
	std::atomic<bool> done{false};
	std::string peer_why;
	unsigned full = 0;
	std::vector<u8> sink(std::size_t{orq_reads} * orq_read_len, sink_fill);
	unsigned completed = 0;
	std::string bad;
	u16 depth = 0;
	{
		cm_client c(addr, port);
		ibv_device_attr da{};
		if (ibv_query_device(c.id->verbs, &da))
			xiw_test::die("ibv_query_device");
		// A slot is reused by the very next request only when the ORQ
		// is full at the ring's size, the device's largest ORD.
		depth = static_cast<u16>(std::min(da.max_qp_init_rd_atom, 255));
		std::thread peer(orq_peer, lfd, depth, std::ref(peer_why), std::ref(full),
				 std::cref(done));
		ibv_cq *cq = nullptr;
		ibv_qp *qp = c.create_qp(2 * orq_reads, orq_reads, cq);
		ibv_mr *mr = ibv_reg_mr(c.id->pd, sink.data(), sink.size(), IBV_ACCESS_LOCAL_WRITE);
		if (!qp || !mr || !to_state(qp, IBV_QPS_INIT))
			xiw_test::die("ibv_create_qp, ibv_reg_mr, ibv_modify_qp(INIT)");
		c.connect_qp(qp, static_cast<u8>(depth));

		// One Read a millisecond whatever completes, and the doorbell with
		// it even when the kernel said it is still at work (the provider
		// would not ring then), so that the transmit path is woken while
		// a Read Response is being completed.
		unsigned posted = 0;
		long long last = xiw_raw::now_ms();
		while (completed < orq_reads && bad.empty() && xiw_raw::now_ms() - last < 20000) {
			if (posted < orq_reads) {
				xiw_test::one_sge_wr w(IBV_WR_RDMA_READ,
						       sink.data() + std::size_t{posted} * orq_read_len,
						       orq_read_len, mr->lkey, posted);
				w.wr.wr.rdma.remote_addr = orq_source_base + u64{posted} * orq_read_len;
				w.wr.wr.rdma.rkey = 0x5eed;
				if (w.post(qp))
					xiw_test::die("ibv_post_send");
				posted++;
			}
			raw_doorbell(qp);
			ibv_wc wc[16];
			const int n = ibv_poll_cq(cq, 16, wc);
			if (n < 0)
				xiw_test::die("ibv_poll_cq");
			for (int i = 0; i < n && bad.empty(); i++, completed++) {
				last = xiw_raw::now_ms();
				if (wc[i].wr_id != completed || wc[i].status != IBV_WC_SUCCESS) {
					bad = strf("Read %u completed as Read %llu with status %s",
						   completed,
						   static_cast<unsigned long long>(wc[i].wr_id),
						   ibv_wc_status_str(wc[i].status));
					break;
				}
				const u8 *got = sink.data() + std::size_t{completed} * orq_read_len;
				const u64 to = orq_source_base + u64{completed} * orq_read_len;
				for (u32 k = 0; k < orq_read_len; k++)
					if (got[k] != orq_octet(to, k)) {
						bad = strf("Read %u completed with octet %u 0x%02x, "
							   "its source holds 0x%02x",
							   completed, k, got[k], orq_octet(to, k));
						break;
					}
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
		// What came after a wrong completion says which Read took its place.
		unsigned later = 0;
		for (const long long until = xiw_raw::now_ms() + 2000;
		     !bad.empty() && xiw_raw::now_ms() < until;) {
			ibv_wc wc;
			if (ibv_poll_cq(cq, 1, &wc) != 1) {
				std::this_thread::sleep_for(std::chrono::milliseconds(10));
				continue;
			}
			if (wc.status != IBV_WC_SUCCESS && wc.status != IBV_WC_WR_FLUSH_ERR &&
			    ++later <= 2)
				bad += strf("; then Read %llu completed with status %s",
					    static_cast<unsigned long long>(wc.wr_id),
					    ibv_wc_status_str(wc.status));
		}
		done.store(true);
		peer.join();
		ibv_destroy_qp(qp);
		ibv_dereg_mr(mr);
		ibv_destroy_cq(cq);
	}
	close(lfd);
	if (!bad.empty())
		fail("%s (%u of %u Reads completed in order before)", bad.c_str(), completed,
		     orq_reads);
	if (completed < orq_reads)
		fail("%u of %u Reads completed, then none for 20 s%s%s", completed, orq_reads,
		     peer_why.empty() ? "" : "; peer: ", peer_why.c_str());
	if (!peer_why.empty())
		fail("peer: %s", peer_why.c_str());
	// Most answers must have found the ORQ full, or the case shows nothing.
	if (full < orq_reads / 2)
		fail("only %u of %u Read Responses were sent with %u Reads outstanding", full,
		     orq_reads, depth);
	pass(strf("%u Reads of %u octets at ORD %u, %u answered with the ORQ full: each "
		  "completed in order with its own octets",
		  orq_reads, orq_read_len, depth, full));
	return 0;
}

// ---------------------------------------------------------------------------
// stalled_reuse: a QP whose stream stalled on a full TCP send buffer, a
// whole Write framed and waiting, is reset by its peer and reused

constexpr std::size_t stall_write_len = 8192;
constexpr int stall_depth = 32;
constexpr int stall_writes_max = 100000;
constexpr u64 stall_send_wr_id = 7;

// The peer: connection 1 takes the MPA exchange, then reads nothing until
// told (its receive window closes) and resets; connection 2's first FPDU
// must be the Send, MSN 1, with its octets.
void stalled_peer(int lfd, std::string &why, const std::atomic<bool> &stalled,
		  const std::atomic<bool> &send_done)
{
	xiw_raw::mpa_stream s;
	bytes rest;
	int fd = raw_connection(lfd, s, rest, "first", why);
	if (fd < 0)
		return;
	for (int i = 0; i < 12000 && !stalled.load(); i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	fd = raw_reset_and_reconnect(fd, lfd, s, rest, why);
	if (fd < 0)
		return;
	// The first FPDU ends the search, whatever it is.
	raw_segment(
		fd, s, rest,
		[&](const bytes &seg, const xiw_raw::seg_view &v) {
			if (!v.valid || v.tagged || v.opcode != XIW_OP_SEND || v.msn != 1 ||
			    seg.size() != v.hdr_len + send_len) {
				why = strf("the new stream began with opcode %u, %s, MSN %u, %zu octets, not the Send",
					   v.opcode, v.tagged ? "tagged" : "untagged", v.msn,
					   seg.size() - std::min(seg.size(), v.hdr_len));
				return true;
			}
			for (std::size_t i = 0; i < send_len; i++)
				if (seg[v.hdr_len + i] != send_octet(i))
					why = strf("Send octet %zu is 0x%02x", i, seg[v.hdr_len + i]);
			return true;
		},
		why);
	raw_close_when(fd, send_done);
}

int run_stalled_reuse(const char *addr, const char *port)
{
	const int lfd = raw_listen(addr, port);
	// A small window: the QP's stream stalls after a few Writes.
	const int rcvbuf = 64 * 1024;
	setsockopt(lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	std::atomic<bool> stalled{false}, send_done{false};
	std::string peer_why;
	std::thread peer(stalled_peer, lfd, std::ref(peer_why), std::cref(stalled),
			 std::cref(send_done));

	static u8 src[stall_write_len];
	static u8 msg[send_len];
	for (std::size_t i = 0; i < send_len; i++)
		msg[i] = send_octet(i);
	const long long quiet_ms = 1000LL * xiw_test::time_factor();
	int posted = 0, completed = 0;
	ibv_wc wc{};
	{
		cm_client first(addr, port);
		ibv_cq *cq = nullptr;
		ibv_qp *qp = first.create_qp(2 * stall_depth, stall_depth, cq);
		ibv_mr *mr = ibv_reg_mr(first.id->pd, src, sizeof(src), 0);
		ibv_mr *mmr = ibv_reg_mr(first.id->pd, msg, sizeof(msg), 0);
		if (!qp || !mr || !mmr || !to_state(qp, IBV_QPS_INIT))
			xiw_test::die("ibv_create_qp, ibv_reg_mr, ibv_modify_qp(INIT)");
		first.connect_qp(qp);

		// Writes, stall_depth in flight, until none completes for a while:
		// TCP is full, the next Write framed behind it.
		xiw_test::one_sge_wr w(IBV_WR_RDMA_WRITE, src, sizeof(src), mr->lkey);
		w.wr.wr.rdma.remote_addr = 0x10000;
		w.wr.wr.rdma.rkey = 0x5eed;
		long long last = xiw_raw::now_ms();
		while (xiw_raw::now_ms() - last < quiet_ms) {
			while (posted - completed < stall_depth && posted < stall_writes_max) {
				if (w.post(qp))
					xiw_test::die("ibv_post_send");
				posted++;
			}
			raw_doorbell(qp);
			ibv_wc wcs[16];
			const int n = ibv_poll_cq(cq, 16, wcs);
			for (int i = 0; i < n; i++)
				if (wcs[i].status != IBV_WC_SUCCESS)
					fail("Write %d completed with status %d before the peer reset",
					     completed + i, wcs[i].status);
			completed += n;
			if (n > 0)
				last = xiw_raw::now_ms();
			else
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
			if (completed == stall_writes_max)
				fail("%d Writes went out: the peer's window never closed", completed);
		}
		const int sent = completed;
		stalled.store(true);
		// The reset takes the QP to Error: the rest complete, flushed.
		while (completed < posted) {
			if (!xiw_test::poll_one(cq, wc, 20000))
				fail("%d of %d Writes never completed after the peer's reset",
				     posted - completed, posted);
			completed++;
		}
		xiw_test::wait_disconnect(first.id, 5000);

		if (!to_state(qp, IBV_QPS_RESET) || !to_state(qp, IBV_QPS_INIT))
			xiw_test::die("ibv_modify_qp(RESET, INIT)");
		cm_client second(addr, port);
		second.connect_qp(qp);
		xiw_test::one_sge_wr s(IBV_WR_SEND, msg, sizeof(msg), mmr->lkey, stall_send_wr_id);
		if (s.post(qp))
			xiw_test::die("ibv_post_send (the reused QP)");
		if (!xiw_test::poll_one(cq, wc, 20000))
			fail("the reused QP's Send did not complete");
		send_done.store(true);
		if (wc.wr_id != stall_send_wr_id || wc.status != IBV_WC_SUCCESS)
			fail("the reused QP completed wr_id %" PRIu64 " with status %d, not its Send",
			     wc.wr_id, wc.status);
		xiw_test::wait_disconnect(second.id, 5000);
		ibv_destroy_qp(qp);
		ibv_dereg_mr(mr);
		ibv_dereg_mr(mmr);
		ibv_destroy_cq(cq);
		peer.join();
		close(lfd);
		if (!peer_why.empty())
			fail("peer: %s", peer_why.c_str());
		pass(strf("%d Writes of %zu octets went out before the stall, %d were flushed; "
			  "the reused QP's stream began with its Send",
			  sent, stall_write_len, posted - sent));
	}
	return 0;
}

// A page whose first touch waits for the test (userfaultfd): whoever
// touches it, the kernel included, stays in the fault until the test
// unmaps the page and closes the userfaultfd, which fails the access.
class stalling_page {
public:
	stalling_page()
	{
		fd_ = static_cast<int>(syscall(SYS_userfaultfd, O_CLOEXEC));
		uffdio_api api{};
		api.api = UFFD_API;
		if (fd_ < 0 || ioctl(fd_, UFFDIO_API, &api))
			xiw_test::die("userfaultfd");
		page_ = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
		if (page_ == MAP_FAILED)
			xiw_test::die("mmap");
		uffdio_register reg{};
		reg.range.start = reinterpret_cast<std::uintptr_t>(page_);
		reg.range.len = 4096;
		reg.mode = UFFDIO_REGISTER_MODE_MISSING;
		if (ioctl(fd_, UFFDIO_REGISTER, &reg))
			xiw_test::die("UFFDIO_REGISTER");
	}
	~stalling_page() { release(); }
	stalling_page(const stalling_page &) = delete;
	stalling_page &operator=(const stalling_page &) = delete;

	void *addr() const { return page_; }
	// Whether something touched the page within MS milliseconds.
	bool touched(int ms) const
	{
		pollfd pfd{fd_, POLLIN, 0};
		uffd_msg msg{};
		return poll(&pfd, 1, ms) == 1 && read(fd_, &msg, sizeof(msg)) == sizeof(msg) &&
		       msg.event == UFFD_EVENT_PAGEFAULT;
	}
	// The waiting access fails (EFAULT in the kernel): the page goes
	// first, as a fault retried once the userfaultfd is closed would
	// get a fresh page.
	void release()
	{
		if (page_)
			munmap(page_, 4096);
		page_ = nullptr;
		if (fd_ >= 0)
			close(fd_);
		fd_ = -1;
	}

private:
	int fd_ = -1;
	void *page_ = nullptr;
};

// create_fault: ibv_create_qp's response cannot be written (its page
// stalls, then fails), while another thread names the QP number it is
// being given in rdma_connect.  The connect must fail: the QP is not
// there until its creation succeeded.  (Regression: the QP could be taken
// by number before the response was written, and the failed creation
// freed it under the connection: a use-after-free.)
int run_create_fault(const char *addr, const char *port)
{
	device d;
	ibv_cq *cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
	ibv_qp_init_attr qa = xiw_test::rc_qp_attr(4, 4);
	qa.send_cq = qa.recv_cq = cq;
	// QP numbers are given in turn: the next one is the probe's plus one.
	ibv_qp *probe = cq ? ibv_create_qp(d.pd, &qa) : nullptr;
	if (!probe)
		xiw_test::die("ibv_create_qp");
	const u32 next_qpn = probe->qp_num + 1;
	ibv_destroy_qp(probe);

	stalling_page page;
	struct {
		ib_uverbs_cmd_hdr hdr;
		ib_uverbs_create_qp cmd;
	} req{};
	req.hdr.command = IB_USER_VERBS_CMD_CREATE_QP;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = (sizeof(ib_uverbs_create_qp_resp) + sizeof(xiw_uresp_create_qp)) / 4;
	req.cmd.response = reinterpret_cast<std::uintptr_t>(page.addr());
	req.cmd.pd_handle = d.pd->handle;
	req.cmd.send_cq_handle = cq->handle;
	req.cmd.recv_cq_handle = cq->handle;
	req.cmd.max_send_wr = 4;
	req.cmd.max_recv_wr = 4;
	req.cmd.max_send_sge = 1;
	req.cmd.max_recv_sge = 1;
	req.cmd.qp_type = IBV_QPT_RC;
	std::atomic<int> create_errno{-1};
	const void *cmd = &req;
	const int cmd_fd = d.ctx->cmd_fd;
	std::thread creator([cmd, cmd_fd, &create_errno] {
		const ssize_t n = write(cmd_fd, cmd, sizeof(req));
		create_errno = n == static_cast<ssize_t>(sizeof(req)) ? 0 : errno;
	});
	const bool stalled = page.touched(10000);
	int rc = -1, err = 0;
	const int lfd = raw_listen(addr, port);
	if (stalled) {
		cm_client c(addr, port);
		rdma_conn_param p = xiw_test::conn_param();
		p.qp_num = next_qpn;
		rc = rdma_connect(c.id, &p);
		err = errno;
		page.release();
		creator.join();
	} else {
		page.release();
		creator.join();
	}
	close(lfd);
	ibv_destroy_cq(cq);
	if (!stalled)
		fail("the creation never wrote its response (errno %d)", create_errno.load());
	if (create_errno != EFAULT)
		fail("the creation with a response it cannot write: errno %d, expected EFAULT",
		     create_errno.load());
	if (rc == 0 || err != EINVAL)
		fail("rdma_connect naming QP %u while its creation was failing: %s, expected "
		     "EINVAL",
		     next_qpn, rc ? std::strerror(err) : "accepted");
	pass(strf("rdma_connect naming QP %u while its creation waited to write its response: "
		  "EINVAL; the creation then failed with EFAULT",
		  next_qpn));
	return 0;
}

// qp_steal: another process's QP, named by its number in rdma_connect's
// qp_num, must not be bound to our connection.  (Regression: iw_cm took any
// QP of the device by number: the peer got a connection on the other
// process's QP.)
int run_qp_steal(const char *addr, const char *port)
{
	int to_parent[2], to_child[2];
	if (pipe(to_parent) || pipe(to_child))
		xiw_test::die("pipe");
	const pid_t child = fork();
	if (child < 0)
		xiw_test::die("fork");
	if (child == 0) {
		// The victim: a QP in Init, as any server's between create and
		// accept; reports its number, then its state when told.
		device d;
		ibv_cq *cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
		ibv_qp_init_attr a = xiw_test::rc_qp_attr(4, 4);
		a.send_cq = a.recv_cq = cq;
		ibv_qp *qp = cq ? ibv_create_qp(d.pd, &a) : nullptr;
		if (!qp || !to_state(qp, IBV_QPS_INIT))
			_exit(2);
		const u32 qpn = qp->qp_num;
		char c;
		if (write(to_parent[1], &qpn, sizeof(qpn)) != sizeof(qpn) ||
		    read(to_child[0], &c, 1) != 1)
			_exit(3);
		ibv_qp_attr got{};
		ibv_qp_init_attr init{};
		const int state = ibv_query_qp(qp, &got, IBV_QP_STATE, &init) ? -1 : got.qp_state;
		if (write(to_parent[1], &state, sizeof(state)) != sizeof(state))
			_exit(3);
		ibv_destroy_qp(qp);
		ibv_destroy_cq(cq);
		_exit(0);
	}
	u32 victim_qpn = 0;
	if (read(to_parent[0], &victim_qpn, sizeof(victim_qpn)) != sizeof(victim_qpn))
		fail("the victim process did not start");

	std::string why;
	const int lfd = raw_listen(addr, port);
	int connected = 0;
	{
		cm_client thief(addr, port);
		rdma_conn_param p = xiw_test::conn_param();
		p.qp_num = victim_qpn;
		const int rc = rdma_connect(thief.id, &p);
		const int err = errno;
		// What reaches the peer: a connection means the QP was taken.
		pollfd pfd{lfd, POLLIN, 0};
		if (poll(&pfd, 1, 2000) > 0) {
			connected = 1;
			const int fd = accept(lfd, nullptr, nullptr);
			xiw_raw::mpa_stream s;
			bytes rest;
			if (fd >= 0 && raw_accept(fd, s, rest, why))
				std::this_thread::sleep_for(std::chrono::milliseconds(500));
			if (fd >= 0)
				close(fd);
		}
		if (rc == 0 || connected) {
			char c = 1;
			(void)!write(to_child[1], &c, 1);
			fail("rdma_connect with another process's QP %u: %s, the peer %s", victim_qpn,
			     rc ? std::strerror(err) : "accepted",
			     connected ? "got a connection" : "got nothing");
		}
		if (err != EINVAL)
			fail("rdma_connect with another process's QP: %s, expected EINVAL",
			     std::strerror(err));
	}
	close(lfd);
	char c = 1;
	int state = -1;
	if (write(to_child[1], &c, 1) != 1 ||
	    read(to_parent[0], &state, sizeof(state)) != sizeof(state))
		fail("the victim process went away");
	int status = 0;
	waitpid(child, &status, 0);
	if (state != IBV_QPS_INIT)
		fail("the victim's QP is in state %d afterwards, expected Init", state);
	pass(strf("rdma_connect with QP %u of another process: EINVAL, its QP still in Init",
		  victim_qpn));
	return 0;
}

// ---------------------------------------------------------------------------
// stale_rts: a QP reset under a half-received Write and brought back to RTS
// before its connection's end unbinds the socket

constexpr std::size_t stale_write_len = 4096;
constexpr std::size_t stale_write_sent = 8;

struct stale_rts_steps {
	// The target, set before the peer starts.
	u32 rkey = 0;
	u64 addr = 0;
	// 1: the Write's start is out; 2: the QP's states were set; 3: the
	// rest is out; 4: the QP is done with the peer.
	std::atomic<int> step{0};
};

bool wait_step(const stale_rts_steps &st, int want, int limit_ms)
{
	for (int i = 0; i < limit_ms && st.step.load() < want; i++)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	return st.step.load() >= want;
}

// The peer, on CPU 1: the Write's header and first octets, then (once the
// QP's states were set) the rest of it.
void stale_rts_peer(int lfd, std::string &why, stale_rts_steps &st)
{
	pin_to_cpu(1);
	xiw_raw::mpa_stream s;
	bytes rest;
	const int fd = raw_connection(lfd, s, rest, "first", why);
	if (fd < 0)
		return;
	std::vector<u8> payload(stale_write_len, 0xab);
	const bytes write = xiw_raw::frame_fpdu(
		s, xiw_raw::seg_tagged(xiw_ddp_ctrl(1, 1), xiw_rdmap_ctrl(XIW_RDMAP_RV1, XIW_OP_WRITE),
				       st.rkey, st.addr, payload.data(),
				       payload.size()));
	const std::size_t part = XIW_MPA_HDR_LEN + XIW_DDP_TAGGED_HLEN + stale_write_sent;
	send(fd, write.data(), part, MSG_NOSIGNAL);
	st.step.store(1);
	if (wait_step(st, 2, 20000))
		send(fd, write.data() + part, write.size() - part, MSG_NOSIGNAL);
	st.step.store(3);
	wait_step(st, 4, 20000);
	close(fd);
}

int run_stale_rts(const char *addr, const char *port)
{
	const int lfd = raw_listen(addr, port);
	stale_rts_steps st;
	std::string peer_why;
	static u8 target[stale_write_len];
	std::memset(target, sink_fill, sizeof(target));
	cm_client c(addr, port);
	ibv_cq *cq = nullptr;
	ibv_qp *qp = c.create_qp(16, 4, cq);
	ibv_mr *mr = ibv_reg_mr(c.id->pd, target, sizeof(target),
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!qp || !mr || !to_state(qp, IBV_QPS_INIT))
		xiw_test::die("ibv_create_qp, ibv_reg_mr, ibv_modify_qp(INIT)");
	st.rkey = mr->rkey;
	st.addr = reinterpret_cast<std::uintptr_t>(target);
	std::thread peer(stale_rts_peer, lfd, std::ref(peer_why), std::ref(st));
	c.connect_qp(qp);
	if (!wait_step(st, 1, 20000))
		fail("the peer sent nothing: %s", peer_why.c_str());
	// Time for the kernel to parse the header and place the first octets.
	std::this_thread::sleep_for(std::chrono::milliseconds(300 * xiw_test::time_factor()));

	// The reset queues the end of the connection on this CPU; a real-time
	// thread that does not sleep keeps it from running meanwhile.
	pin_to_cpu(0);
	sched_param rt{};
	rt.sched_priority = 10;
	if (sched_setscheduler(0, SCHED_FIFO, &rt))
		xiw_test::die("sched_setscheduler(SCHED_FIFO)");
	std::string walk;
	bool rts = false;
	int rts_errno = 0;
	for (ibv_qp_state s : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
		ibv_qp_attr attr{};
		attr.qp_state = s;
		const int err = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
		walk += strf("%s%s %s", walk.empty() ? "" : ", ", state_name(s),
			     err ? std::strerror(err) : "ok");
		if (s == IBV_QPS_RTS) {
			rts = !err;
			rts_errno = err;
		} else if (err) {
			break;
		}
	}
	st.step.store(2);
	// Busy until the rest is out (the peer's CPU places it) and a little
	// longer, without sleeping.
	const long long until = xiw_raw::now_ms() + 2000;
	while (st.step.load() < 3 && xiw_raw::now_ms() < until)
		;
	const long long linger = xiw_raw::now_ms() + 100;
	while (xiw_raw::now_ms() < linger)
		;
	rt.sched_priority = 0;
	sched_setscheduler(0, SCHED_OTHER, &rt);

	std::this_thread::sleep_for(std::chrono::milliseconds(200 * xiw_test::time_factor()));
	std::size_t changed = 0;
	for (std::size_t i = stale_write_sent; i < sizeof(target); i++)
		changed += target[i] != sink_fill;
	st.step.store(4);
	peer.join();
	close(lfd);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	if (!peer_why.empty())
		fail("peer: %s", peer_why.c_str());
	if (rts)
		fail("RTS was granted on the stream the QP was reset from (%s)", walk.c_str());
	if (rts_errno != EINVAL)
		fail("the walk stopped early: %s", walk.c_str());
	if (changed)
		fail("%zu octets of the region beyond the %zu placed before the reset changed",
		     changed, stale_write_sent);
	pass(strf("%s; the region holds only the %zu octets placed before the reset", walk.c_str(),
		  stale_write_sent));
	return 0;
}

// ---------------------------------------------------------------------------
// connect_accept: one QP in a pending connect and in an accept

int run_connect_accept(const char *addr, const char *port)
{
	const std::string accept_port = std::to_string(std::atoi(port) + 1);
	const int lfd = raw_listen(addr, port);
	device_cq dc(16);
	ibv_qp *q = dc.create_qp(4, 4);
	ibv_qp *r = dc.create_qp(4, 4);
	if (!q || !r || !to_state(q, IBV_QPS_INIT) || !to_state(r, IBV_QPS_INIT))
		xiw_test::die("ibv_create_qp, ibv_modify_qp(INIT)");
	bool accepted;
	int accept_errno;
	int fd;
	// The connect: its peer takes the MPA Request and says nothing.
	cm_client pending(addr, port);
	{
		rdma_conn_param p = xiw_test::conn_param();
		p.qp_num = q->qp_num;
		if (rdma_connect(pending.id, &p))
			xiw_test::die("rdma_connect");
		xiw_raw::mpa_frame_reader req;
		pollfd pfd{lfd, POLLIN, 0};
		fd = poll(&pfd, 1, 10000) > 0 ? accept(lfd, nullptr, nullptr) : -1;
		bytes in;
		while (fd >= 0 && !req.done() && xiw_raw::recv_some(fd, in, 5000) > 0) {
			req.feed(in.data(), in.size());
			in.clear();
		}
		if (!req.done())
			fail("the pending connect's MPA Request did not arrive");
		// The accept of another connection, naming the same QP.
		loop_connection link(addr, accept_port.c_str());
		cm_client other(addr, accept_port.c_str());
		rdma_conn_param pr = xiw_test::conn_param();
		pr.qp_num = r->qp_num;
		if (rdma_connect(other.id, &pr))
			xiw_test::die("rdma_connect (the other connection)");
		rdma_cm_event *ev = nullptr;
		if (rdma_get_cm_event(link.lch, &ev) || ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
			fail("no connect request");
		link.conn_b = ev->id;
		rdma_ack_cm_event(ev);
		rdma_conn_param pq = xiw_test::conn_param();
		pq.qp_num = q->qp_num;
		accepted = rdma_accept(link.conn_b, &pq) == 0;
		accept_errno = errno;
	}
	const long long t0 = xiw_raw::now_ms();
	ibv_destroy_qp(q);
	const long long took = xiw_raw::now_ms() - t0;
	close(fd);
	close(lfd);
	ibv_destroy_qp(r);
	if (accepted)
		fail("rdma_accept bound a QP that a connect still waits with (ibv_destroy_qp "
		     "then took %lld ms)", took);
	if (took > 2000 * xiw_test::time_factor())
		fail("ibv_destroy_qp took %lld ms: it waited for the pending connect", took);
	pass(strf("rdma_accept naming the QP of a pending connect: %s; ibv_destroy_qp: %lld ms",
		  std::strerror(accept_errno), took));
	return 0;
}

// ---------------------------------------------------------------------------
// connect_destroy: ibv_destroy_qp while iw_cm holds the QP it just looked
// up by number and has not taken its reference yet

// Where xiw_delay counts the waits it began (hostile_user.sh loads it).
constexpr const char *delay_hits = "/sys/module/xiw_delay/parameters/hits";

long read_hits()
{
	std::ifstream f(delay_hits);
	long n = -1;
	f >> n;
	return n;
}

int run_connect_destroy(const char *addr, const char *port)
{
	const int lfd = raw_listen(addr, port);
	device_cq dc(16);
	ibv_qp *q = dc.create_qp(4, 4);
	if (!q || !to_state(q, IBV_QPS_INIT))
		xiw_test::die("ibv_create_qp, ibv_modify_qp(INIT)");
	const long hits = read_hits();
	if (hits < 0)
		fail("no %s: run with xiw_delay.ko at xiw_get_qp's return", delay_hits);
	cm_client c(addr, port);
	std::atomic<int> connect_errno{-1};
	std::thread connector([&] {
		rdma_conn_param p = xiw_test::conn_param();
		p.qp_num = q->qp_num;
		connect_errno.store(rdma_connect(c.id, &p) ? errno : 0);
	});
	// The lookup returned and waits: the QP goes now.
	const long long until = xiw_raw::now_ms() + 10000;
	while (read_hits() == hits && xiw_raw::now_ms() < until)
		std::this_thread::sleep_for(std::chrono::microseconds(100));
	const long long hit_ms = xiw_raw::now_ms();
	const bool in_window = read_hits() > hits;
	const long long t0 = xiw_raw::now_ms();
	const int destroy_rc = ibv_destroy_qp(q);
	const long long took = xiw_raw::now_ms() - t0;
	connector.join();
	close(lfd);
	if (!in_window)
		fail("rdma_connect did not reach the QP lookup in 10 s");
	if (destroy_rc)
		fail("ibv_destroy_qp: %s", std::strerror(destroy_rc));
	if (took > 2000 * xiw_test::time_factor())
		fail("ibv_destroy_qp took %lld ms", took);
	// The destroy begins with the QP's number: a connect that got as far
	// as xiw's own lookup means it came too late, the window shows nothing.
	if (connect_errno.load() == 0)
		fail("rdma_connect went on with the QP (ibv_destroy_qp came %lld ms into the "
		     "window, too late: widen it)",
		     t0 - hit_ms);
	pass(strf("rdma_connect naming a QP destroyed between iw_cm's lookup and its reference: %s; "
		  "ibv_destroy_qp: %lld ms",
		  std::strerror(connect_errno.load()), took));
	return 0;
}

// ---------------------------------------------------------------------------
// send_stream: a consumer whose SQ never runs dry, to a peer that reads as
// fast as it gets

// Preemption at "none" while it lives, where the kernel can switch it at
// run time (PREEMPT_DYNAMIC, with SCHED_DEBUG's file): kernel code then
// yields only where it calls cond_resched(), as in a PREEMPT_NONE build,
// so a loop that never does is reported by the soft lockup detector.
struct preemption_none : kernel_setting {
	// "none (voluntary) full": the model in use is in parentheses.
	preemption_none() : kernel_setting("/sys/kernel/debug/sched/preempt", "none", true) {}
};

constexpr u32 stream_write_len = 64;
constexpr u32 stream_depth = 1024;

// CPU time the calling thread has used, in seconds.
double thread_cpu_seconds()
{
	timespec ts{};
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		xiw_test::die("clock_gettime");
	return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// The peer: takes the MPA exchange and reads everything until DONE;
// OCTETS counts what came after the MPA Reply.
void draining_peer(int lfd, std::string &why, std::atomic<u64> &octets,
		   const std::atomic<bool> &done)
{
	xiw_raw::mpa_stream s;
	bytes rest;
	const int fd = raw_connection(lfd, s, rest, "first", why);
	if (fd < 0)
		return;
	octets += rest.size();
	while (!done.load()) {
		bytes in;
		const long k = xiw_raw::recv_some(fd, in, 100);
		if (k == 0 || k == -1) {
			why = "the stream ended while the Writes went on";
			break;
		}
		if (k > 0)
			octets += static_cast<u64>(k);
	}
	close(fd);
}

int run_send_stream(const char *addr, const char *port)
{
	const std::string port2 = std::to_string(std::atoi(port) + 1);
	constexpr auto stream_time = std::chrono::seconds(4);
	constexpr auto read_after = std::chrono::seconds(1);
	constexpr auto read_limit = std::chrono::seconds(2);
	static u8 source[stream_write_len];
	static u64 word = 0x5e11d57ea1, word_copy;
	const int lfd = raw_listen(addr, port);
	// A thread at nice 0 beside the transmit loop gets half its CPU from
	// a worker at nice 0, about a hundredth from one at nice -20; from
	// xiw's, at nice -20 for at most three quarters of the CPU's time and
	// at nice 0 beyond, an eighth or more.
	constexpr double min_cpu_share = 0.1;
	std::atomic<bool> done{false};
	std::atomic<u64> octets{0};
	std::string peer_why;
	std::thread peer(draining_peer, lfd, std::ref(peer_why), std::ref(octets),
			 std::cref(done));
	u64 writes = 0, doorbells = 0, full = 0;
	bool read_done = false;
	ibv_wc rwc{};
	double read_secs = 0, cpu_share = 0;
	bool switched;
	{
		cm_client c(addr, port);
		ibv_cq *cq = nullptr;
		ibv_qp *qp = c.create_qp(16, stream_depth, cq);
		ibv_mr *smr = ibv_reg_mr(c.id->pd, source, sizeof(source), 0);
		ibv_cq *cq2 = ibv_create_cq(c.id->verbs, 16, nullptr, nullptr, 0);
		ibv_mr *src = ibv_reg_mr(c.id->pd, &word, sizeof(word), IBV_ACCESS_REMOTE_READ);
		ibv_mr *dst = ibv_reg_mr(c.id->pd, &word_copy, sizeof(word_copy),
					 IBV_ACCESS_LOCAL_WRITE);
		ibv_qp_init_attr qa = xiw_test::rc_qp_attr(4, 1);
		qa.send_cq = qa.recv_cq = cq2;
		ibv_qp *a = cq2 ? ibv_create_qp(c.id->pd, &qa) : nullptr;
		ibv_qp *b = cq2 ? ibv_create_qp(c.id->pd, &qa) : nullptr;
		if (!qp || !smr || !src || !dst || !a || !b || !to_state(qp, IBV_QPS_INIT) ||
		    !to_state(a, IBV_QPS_INIT) || !to_state(b, IBV_QPS_INIT))
			xiw_test::die("objects");
		c.connect_qp(qp);
		{
			loop_connection link(addr, port2.c_str());
			link.connect(a, b);
			preemption_none no_preemption;
			short_watchdog watchdog;
			switched = no_preemption.changed();
			// The Writes are posted on CPU 0, unsignaled, as fast as the
			// ring takes them; the doorbell rung on CPU 1 each
			// millisecond, so that the transmit loop runs there, in this
			// process's system call or the worker it hands over to.  Both
			// stop by the clock: this thread, on CPU 1 too, may not get
			// to run before.
			const auto start = std::chrono::steady_clock::now();
			const auto end = start + stream_time;
			std::thread poster([&] {
				pin_to_cpu(0);
				xiw_test::one_sge_wr w(IBV_WR_RDMA_WRITE, source, sizeof(source),
						       smr->lkey);
				w.wr.send_flags = 0;
				w.wr.wr.rdma.remote_addr = 0x1000;
				w.wr.wr.rdma.rkey = 0x5eed;
				while (std::chrono::steady_clock::now() < end) {
					const int rc = w.post(qp);
					if (rc == ENOMEM) {
						full++;
						std::this_thread::yield();
					} else if (rc) {
						xiw_test::die_rc("ibv_post_send", rc);
					} else {
						writes++;
					}
				}
			});
			std::thread ringer([&] {
				pin_to_cpu(1);
				while (std::chrono::steady_clock::now() < end) {
					doorbells += raw_doorbell(qp);
					std::this_thread::sleep_for(std::chrono::milliseconds(1));
				}
			});
			// From CPU 1 too, while the Writes stream: this thread spins
			// until the Read is due, and counts the CPU time it got;
			// then an 8-octet Read on the other connection, whose
			// request and answer are taken off the sockets by softirqs
			// of this CPU (ksoftirqd's, at nice 0, once they are
			// deferred) and framed by a worker of it.  Timed from when
			// it was due: a thread that cannot get its CPU is what the
			// case looks for too.
			pin_to_cpu(1);
			const auto due = start + read_after;
			const auto spin_start = std::chrono::steady_clock::now();
			const double cpu_start = thread_cpu_seconds();
			while (std::chrono::steady_clock::now() < due)
				;
			cpu_share = (thread_cpu_seconds() - cpu_start) /
				    std::chrono::duration<double>(std::chrono::steady_clock::now() -
								  spin_start)
					    .count();
			xiw_test::one_sge_wr r(IBV_WR_RDMA_READ, &word_copy, sizeof(word_copy),
					       dst->lkey);
			r.wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(&word);
			r.wr.wr.rdma.rkey = src->rkey;
			if (r.post(a))
				xiw_test::die("ibv_post_send (Read)");
			read_done = xiw_test::poll_one(cq2, rwc, 60000);
			read_secs = std::chrono::duration<double>(std::chrono::steady_clock::now() -
								  due).count();
			poster.join();
			ringer.join();
		}
		// What is still queued goes out before the peer stops reading.
		raw_doorbell(qp);
		std::this_thread::sleep_for(std::chrono::milliseconds(500));
		done.store(true);
		peer.join();
		ibv_destroy_qp(qp);
		for (ibv_qp *q : {a, b})
			ibv_destroy_qp(q);
		for (ibv_mr *m : {smr, src, dst})
			ibv_dereg_mr(m);
		ibv_destroy_cq(cq);
		ibv_destroy_cq(cq2);
	}
	close(lfd);
	if (!peer_why.empty())
		fail("peer: %s", peer_why.c_str());
	if (!read_done || rwc.status != IBV_WC_SUCCESS)
		fail("the Read on the other connection %s",
		     read_done ? ibv_wc_status_str(rwc.status) : "did not complete in 60 s");
	if (word_copy != word)
		fail("the Read brought 0x%" PRIx64 ", not 0x%" PRIx64, word_copy, word);
	if (cpu_share < min_cpu_share)
		fail("a thread at nice 0 on the transmit loop's CPU got %.1f%% of it, and an "
		     "8-octet Read on another connection took %.1f s, while %" PRIu64
		     " Writes streamed",
		     100 * cpu_share, read_secs, writes);
	if (read_secs > std::chrono::duration<double>(read_limit).count())
		fail("an 8-octet Read on another connection, from the transmit loop's CPU, "
		     "completed %.1f s after it was due while %" PRIu64 " Writes streamed",
		     read_secs, writes);
	// The poster must have found the ring full more often than not, or
	// the transmit loop ran dry and the case shows nothing.
	if (full < writes)
		fail("the ring was full for %" PRIu64 " of %" PRIu64 " posts: the kernel kept up",
		     full, writes + full);
	pass(strf("%" PRIu64 " Writes of %u octets from a ring of %u kept full (%" PRIu64
		  " posts refused), %" PRIu64 " octets read by the peer, %" PRIu64
		  " doorbells, preemption %s; a thread on the loop's CPU got %.0f%% of it, "
		  "an 8-octet Read on another connection meanwhile took %.3f s",
		  writes, stream_write_len, stream_depth, full, octets.load(), doorbells,
		  switched ? "none" : "as booted", 100 * cpu_share, read_secs));
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2) {
		std::fprintf(stderr, "usage: xiw_hostile_user qp_reuse|orq_reuse|stalled_reuse|stale_rts|connect_accept|qp_steal|connect_destroy|create_fault|scribbled_sink|long_verify|send_stream|query_states ADDR PORT | rq_producer | "
				     "sq_producer | sq_creep | cq_overflow | read_sges | accounting | "
				     "memlock | after_removal\n");
		return 2;
	}
	g_tool = "xiw_hostile_user";
	g_case = argv[1];
	const std::string c = argv[1];
	if (c == "qp_reuse" && argc == 4)
		return run_qp_reuse(argv[2], argv[3]);
	if (c == "orq_reuse" && argc == 4)
		return run_orq_reuse(argv[2], argv[3]);
	if (c == "stalled_reuse" && argc == 4)
		return run_stalled_reuse(argv[2], argv[3]);
	if (c == "stale_rts" && argc == 4)
		return run_stale_rts(argv[2], argv[3]);
	if (c == "connect_accept" && argc == 4)
		return run_connect_accept(argv[2], argv[3]);
	if (c == "qp_steal" && argc == 4)
		return run_qp_steal(argv[2], argv[3]);
	if (c == "connect_destroy" && argc == 4)
		return run_connect_destroy(argv[2], argv[3]);
	if (c == "create_fault" && argc == 4)
		return run_create_fault(argv[2], argv[3]);
	if (c == "scribbled_sink" && argc == 4)
		return run_scribbled_sink(argv[2], argv[3]);
	if (c == "long_verify" && argc == 4)
		return run_long_verify(argv[2], argv[3]);
	if (c == "send_stream" && argc == 4)
		return run_send_stream(argv[2], argv[3]);
	if (c == "rq_producer" || c == "sq_producer")
		return run_bad_producer(c == "sq_producer");
	if (c == "sq_creep")
		return run_sq_creep();
	if (c == "cq_overflow")
		return run_cq_overflow();
	if (c == "read_sges")
		return run_read_sges();
	if (c == "query_states" && argc == 4)
		return run_query_states(argv[2], argv[3]);
	if (c == "accounting")
		return run_accounting();
	if (c == "memlock")
		return run_memlock();
	if (c == "after_removal")
		return run_after_removal();
	std::fprintf(stderr, "xiw_hostile_user: unknown case %s\n", argv[1]);
	return 2;
}
