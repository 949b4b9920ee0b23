// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Many objects on one device: QPS QPs (QPS/2 connections of xiw to itself
// over rdma_cm) and MRS memory regions, each QP doing a Send and an RDMA
// FetchAdd on its peer's region.  Then the server QPs' shared receive CQ,
// which had room for the first round, gets more Sends than it holds
// without being polled: the overflow must be reported once (one CQ error
// event), and every completion it had room for must be there.
//   xiw_scale ADDR PORT QPS MRS
// Prints the counts and the time of each phase, then
// "xiw_scale scale: ...: ok" when every Send arrived with its payload, every
// FetchAdd returned the value its target held and left the sum, the
// overflow was reported once and everything tore down.

#include "../hostile/hostile_lib.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <map>

namespace {

using namespace xiw_hostile;
using xiw_test::strf;

constexpr std::size_t page = 4096;
constexpr u32 connect_wave = 64; // connections being made at once
constexpr u64 add_base = 0x100000000ull;
constexpr int event_wait_ms = 60000;
// Each QP's page: the FetchAdd target its peer adds to, the FetchAdd's
// result, the receive buffer and the Send's payload.
constexpr std::size_t target_off = 0, result_off = 64, recv_off = 128, send_off = 1024;
constexpr u32 msg_len = 64;

u8 payload_octet(u32 qp, std::size_t i)
{
	return static_cast<u8>(qp * 7 + i * 13 + 1);
}

struct connection {
	rdma_cm_id *client = nullptr, *server = nullptr;
};

class scale {
public:
	scale(const char *addr, const char *port, u32 qps, u32 mrs)
		: addr_(addr), port_(port), n_(qps / 2), mrs_wanted_(mrs), conns_(n_)
	{
	}

	int run()
	{
		const long long t0 = xiw_raw::now_ms();
		setup();
		const long long t1 = xiw_raw::now_ms();
		connect_all();
		const long long t2 = xiw_raw::now_ms();
		traffic();
		const long long t3 = xiw_raw::now_ms();
		const u32 room = overflow();
		const long long t4 = xiw_raw::now_ms();
		teardown();
		const long long t5 = xiw_raw::now_ms();
		std::printf("xiw_scale: %u QPs in %u connections, %u MRs; setup %lld ms, "
			    "connecting %lld ms, Sends and FetchAdds %lld ms, overflow %lld ms, "
			    "teardown %lld ms\n",
			    2 * n_, n_, mrs_wanted_, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4);
		pass(strf("%u QPs each did a Send and a FetchAdd, %u MRs, a CQ of %u overflowed: "
			  "reported once, none of its %u completions lost",
			  2 * n_, mrs_wanted_, room, room));
		return 0;
	}

private:
	u32 qp_index(u32 c, bool server) const { return 2 * c + (server ? 1 : 0); }
	u8 *page_of(u32 q) const { return mem_ + static_cast<std::size_t>(q) * page; }

	// ------------------------------------------------------------- setup
	void setup()
	{
		if (mrs_wanted_ < 2 * n_)
			fail("%u MRs are fewer than the %u the QPs use", mrs_wanted_, 2 * n_);
		ch_ = rdma_create_event_channel();
		client_ch_ = rdma_create_event_channel();
		if (!client_ch_)
			xiw_test::die("rdma_create_event_channel");
		listen_ = xiw_test::listen_async(ch_, addr_, port_, 1024);
		ctx_ = listen_->verbs;
		fcntl(ctx_->async_fd, F_SETFL, fcntl(ctx_->async_fd, F_GETFL) | O_NONBLOCK);
		pd_ = ibv_alloc_pd(ctx_);
		// Room for everything a side's QPs complete, the overflow round's
		// Sends included; the server's receives get a CQ of one per QP.
		const int room = static_cast<int>(8 * n_ + 16);
		client_send_ = ibv_create_cq(ctx_, room, nullptr, nullptr, 0);
		client_recv_ = ibv_create_cq(ctx_, room, nullptr, nullptr, 0);
		server_send_ = ibv_create_cq(ctx_, room, nullptr, nullptr, 0);
		server_recv_ = ibv_create_cq(ctx_, static_cast<int>(n_), nullptr, nullptr, 0);
		if (!pd_ || !client_send_ || !client_recv_ || !server_send_ || !server_recv_)
			xiw_test::die("ibv_alloc_pd/ibv_create_cq");
		// Sends per client in the overflow round: more than the CQ holds.
		extra_ = static_cast<u32>(server_recv_->cqe) / n_ + 1;

		const std::size_t len = static_cast<std::size_t>(mrs_wanted_) * page;
		void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (m == MAP_FAILED)
			xiw_test::die("mmap");
		mem_ = static_cast<u8 *>(m);
		std::memset(mem_, 0, len);
		const int rights = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
		for (u32 i = 0; i < mrs_wanted_; i++) {
			ibv_mr *mr = ibv_reg_mr(pd_, page_of(i), page, rights);
			if (!mr)
				fail("ibv_reg_mr %u of %u: %s", i + 1, mrs_wanted_,
				     std::strerror(errno));
			mrs_.push_back(mr);
		}
	}

	void create_qp(rdma_cm_id *id, u32 c, bool server)
	{
		ibv_qp_init_attr a = xiw_test::rc_qp_attr(4 + extra_, 4 + extra_);
		a.send_cq = server ? server_send_ : client_send_;
		a.recv_cq = server ? server_recv_ : client_recv_;
		if (rdma_create_qp(id, pd_, &a))
			fail("%s QP of connection %u: %s", server ? "server" : "client", c,
			     std::strerror(errno));
		// The server's receives for both rounds; the client's one.
		for (u32 k = 0; k < (server ? 1 + extra_ : 1); k++)
			post_recv(id, qp_index(c, server));
	}
	void post_recv(rdma_cm_id *id, u32 q)
	{
		if (xiw_test::post_recv_one(id->qp, page_of(q) + recv_off, msg_len, mrs_[q]->lkey,
					    q))
			xiw_test::die("ibv_post_recv");
	}

	// Connections in waves: clients resolve and connect (their number as
	// private data), the listener accepts, until every QP is established.
	void connect_all()
	{
		std::map<rdma_cm_id *, u32> client_of;
		u32 started = 0, established = 0;
		while (established < 2 * n_) {
			while (started < n_ && started - established / 2 < connect_wave) {
				rdma_cm_id *id = nullptr;
				if (rdma_create_id(client_ch_, &id, nullptr, RDMA_PS_TCP))
					xiw_test::die("rdma_create_id");
				rdma_addrinfo *res = xiw_test::resolve(addr_, port_, false);
				if (rdma_resolve_addr(id, nullptr, res->ai_dst_addr, 5000))
					xiw_test::die("rdma_resolve_addr");
				rdma_freeaddrinfo(res);
				conns_[started].client = id;
				client_of[id] = started++;
			}
			pollfd p[2] = {{client_ch_->fd, POLLIN, 0}, {ch_->fd, POLLIN, 0}};
			if (poll(p, 2, event_wait_ms) <= 0)
				fail("no connection event in %d s (%u of %u QPs established)",
				     event_wait_ms / 1000, established, 2 * n_);
			for (int k = 0; k < 2; k++) {
				if (!(p[k].revents & POLLIN))
					continue;
				rdma_cm_event *ev = nullptr;
				if (rdma_get_cm_event(k ? ch_ : client_ch_, &ev))
					xiw_test::die("rdma_get_cm_event");
				const rdma_cm_event_type type = ev->event;
				rdma_cm_id *id = ev->id;
				const int status = ev->status;
				u32 c = ~0u;
				if (type == RDMA_CM_EVENT_CONNECT_REQUEST &&
				    ev->param.conn.private_data_len >= sizeof(c))
					std::memcpy(&c, ev->param.conn.private_data, sizeof(c));
				rdma_ack_cm_event(ev);
				if (type == RDMA_CM_EVENT_ADDR_RESOLVED) {
					if (rdma_resolve_route(id, 5000))
						xiw_test::die("rdma_resolve_route");
				} else if (type == RDMA_CM_EVENT_ROUTE_RESOLVED) {
					u32 cn = client_of.at(id);
					create_qp(id, cn, false);
					rdma_conn_param cp = xiw_test::conn_param_with(cn);
					if (rdma_connect(id, &cp))
						xiw_test::die("rdma_connect");
				} else if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
					if (c >= n_ || conns_[c].server)
						fail("a connect request for connection %u", c);
					conns_[c].server = id;
					create_qp(id, c, true);
					rdma_conn_param cp = xiw_test::conn_param();
					if (rdma_accept(id, &cp))
						xiw_test::die("rdma_accept");
				} else if (type == RDMA_CM_EVENT_ESTABLISHED) {
					established++;
				} else {
					fail("connection event %s (status %d) with %u of %u QPs "
					     "established",
					     rdma_event_str(type), status, established, 2 * n_);
				}
			}
		}
	}

	// --------------------------------------------------------- traffic
	void post_send(rdma_cm_id *id, u32 q)
	{
		u8 *msg = page_of(q) + send_off;
		for (std::size_t i = 0; i < msg_len; i++)
			msg[i] = payload_octet(q, i);
		if (xiw_test::one_sge_wr(IBV_WR_SEND, msg, msg_len, mrs_[q]->lkey, q).post(id->qp))
			xiw_test::die("ibv_post_send (Send)");
	}
	void post_fetch_add(rdma_cm_id *id, u32 q, u32 peer)
	{
		xiw_test::one_sge_wr w(IBV_WR_ATOMIC_FETCH_AND_ADD, page_of(q) + result_off, 8,
				       mrs_[q]->lkey, q);
		w.wr.wr.atomic.remote_addr = reinterpret_cast<std::uintptr_t>(page_of(peer) + target_off);
		w.wr.wr.atomic.rkey = mrs_[peer]->rkey;
		w.wr.wr.atomic.compare_add = add_base + q;
		if (w.post(id->qp))
			xiw_test::die("ibv_post_send (FetchAdd)");
	}
	// WANT successful completions from CQ, each checked by CHECK(wc).
	template <class F> void reap(ibv_cq *cq, u32 want, const char *what, F check)
	{
		u32 got = 0;
		const long long until = xiw_raw::now_ms() + event_wait_ms;
		ibv_wc wc[64];
		while (got < want) {
			const int k = ibv_poll_cq(cq, 64, wc);
			if (k < 0)
				xiw_test::die("ibv_poll_cq");
			for (int i = 0; i < k; i++) {
				if (wc[i].status != IBV_WC_SUCCESS)
					fail("%s: completion %u of %u: %s (QP index %" PRIu64 ")", what,
					     got + i + 1, want, ibv_wc_status_str(wc[i].status),
					     wc[i].wr_id);
				check(wc[i]);
			}
			got += static_cast<u32>(k);
			if (!k && xiw_raw::now_ms() > until)
				fail("%s: %u of %u completions in %d s", what, got, want,
				     event_wait_ms / 1000);
			if (!k)
				std::this_thread::sleep_for(std::chrono::microseconds(200));
		}
	}
	void check_receive(const ibv_wc &wc)
	{
		const u32 q = static_cast<u32>(wc.wr_id);
		const u32 sender = q ^ 1;
		if (q >= 2 * n_ || wc.byte_len != msg_len)
			fail("a receive for QP index %u of %u octets", q, wc.byte_len);
		const u8 *got = page_of(q) + recv_off;
		for (std::size_t i = 0; i < msg_len; i++)
			if (got[i] != payload_octet(sender, i))
				fail("QP %u received octet %zu as 0x%02x", q, i, got[i]);
	}

	void traffic()
	{
		for (u32 c = 0; c < n_; c++)
			for (bool server : {false, true}) {
				rdma_cm_id *id = server ? conns_[c].server : conns_[c].client;
				const u32 q = qp_index(c, server);
				post_send(id, q);
				post_fetch_add(id, q, q ^ 1);
			}
		const auto nothing = [](const ibv_wc &) {};
		reap(client_send_, 2 * n_, "client Sends and FetchAdds", nothing);
		reap(server_send_, 2 * n_, "server Sends and FetchAdds", nothing);
		reap(client_recv_, n_, "client receives", [this](const ibv_wc &wc) { check_receive(wc); });
		reap(server_recv_, n_, "server receives", [this](const ibv_wc &wc) { check_receive(wc); });
		for (u32 q = 0; q < 2 * n_; q++) {
			u64 result, target;
			std::memcpy(&result, page_of(q) + result_off, 8);
			std::memcpy(&target, page_of(q) + target_off, 8);
			if (result != 0)
				fail("QP %u's FetchAdd returned 0x%" PRIx64 ", its target held 0", q,
				     result);
			if (target != add_base + (q ^ 1))
				fail("QP %u's target holds 0x%" PRIx64 ", expected 0x%" PRIx64, q,
				     target, add_base + (q ^ 1));
		}
	}

	// Each client sends EXTRA more, the server's receive CQ is not polled:
	// one CQ error event, and exactly as many completions as it holds.
	u32 overflow()
	{
		for (u32 c = 0; c < n_; c++)
			for (u32 k = 0; k < extra_; k++)
				post_send(conns_[c].client, qp_index(c, false));
		// Sent is not yet received: wait for the receive side to settle.
		u32 sent = 0;
		ibv_wc wc[64];
		const long long until = xiw_raw::now_ms() + event_wait_ms;
		while (sent < n_ * extra_ && xiw_raw::now_ms() < until) {
			const int k = ibv_poll_cq(client_send_, 64, wc);
			sent += k > 0 ? static_cast<u32>(k) : 0;
			if (k <= 0)
				std::this_thread::sleep_for(std::chrono::milliseconds(1));
		}
		u64 cq_errors = 0, others = 0;
		const long long settle = xiw_raw::now_ms() + 5000;
		while (xiw_raw::now_ms() < settle) {
			ibv_async_event ev{};
			if (ibv_get_async_event(ctx_, &ev)) {
				std::this_thread::sleep_for(std::chrono::milliseconds(50));
				continue;
			}
			if (ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == server_recv_)
				cq_errors++;
			else
				others++;
			ibv_ack_async_event(&ev);
		}
		const u32 room = static_cast<u32>(server_recv_->cqe);
		u32 polled = 0;
		int k;
		while ((k = ibv_poll_cq(server_recv_, 64, wc)) > 0)
			polled += static_cast<u32>(k);
		std::printf("xiw_scale: %u Sends into a CQ of %u: %u completions, %" PRIu64
			    " CQ error events, %" PRIu64 " other async events\n",
			    n_ * extra_, room, polled, cq_errors, others);
		if (cq_errors != 1)
			fail("%" PRIu64 " CQ error events for one overflow", cq_errors);
		if (polled != room)
			fail("the overflowed CQ of %u entries had %u completions", room, polled);
		return room;
	}

	// -------------------------------------------------------- teardown
	void teardown()
	{
		for (connection &c : conns_)
			rdma_disconnect(c.client);
		for (connection &c : conns_) {
			rdma_destroy_qp(c.client);
			rdma_destroy_qp(c.server);
			rdma_destroy_id(c.client);
			rdma_destroy_id(c.server);
		}
		for (ibv_mr *mr : mrs_)
			if (ibv_dereg_mr(mr))
				xiw_test::die("ibv_dereg_mr");
		for (ibv_cq *cq : {client_send_, client_recv_, server_send_, server_recv_})
			if (ibv_destroy_cq(cq))
				xiw_test::die("ibv_destroy_cq");
		if (ibv_dealloc_pd(pd_))
			xiw_test::die("ibv_dealloc_pd");
		rdma_destroy_id(listen_);
		rdma_destroy_event_channel(ch_);
		rdma_destroy_event_channel(client_ch_);
	}

	const char *addr_, *port_;
	u32 n_, mrs_wanted_, extra_ = 0;
	std::vector<connection> conns_;
	rdma_event_channel *ch_ = nullptr, *client_ch_ = nullptr;
	rdma_cm_id *listen_ = nullptr;
	ibv_context *ctx_ = nullptr;
	ibv_pd *pd_ = nullptr;
	ibv_cq *client_send_ = nullptr, *client_recv_ = nullptr;
	ibv_cq *server_send_ = nullptr, *server_recv_ = nullptr;
	u8 *mem_ = nullptr;
	std::vector<ibv_mr *> mrs_;
};

} // namespace

int main(int argc, char **argv)
{
	if (argc != 5) {
		std::fprintf(stderr, "usage: xiw_scale ADDR PORT QPS MRS\n");
		return 2;
	}
	g_tool = "xiw_scale";
	g_case = "scale";
	const u32 qps = static_cast<u32>(std::strtoul(argv[3], nullptr, 0));
	const u32 mrs = static_cast<u32>(std::strtoul(argv[4], nullptr, 0));
	if (qps < 2)
		fail("at least 2 QPs");
	return scale(argv[1], argv[2], qps, mrs).run();
}
