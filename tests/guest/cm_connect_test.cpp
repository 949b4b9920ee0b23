// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Connection management through librdmacm, one side per process: runs
// inside the guest (tests/guest/cm_*.sh), the server on one host and the
// client on the other.
//
//   cm_connect_test server ADDR PORT SCENARIO
//   cm_connect_test client ADDR PORT SCENARIO
//
// ADDR is the server's address (bound by the server, connected to by the
// client).  SCENARIO:
//   cdisc    accept; the client disconnects first
//   sdisc    accept; the server disconnects first
//   destroy  accept; the client destroys its id without disconnecting
//   reject   the server rejects
//   hold     accept, then wait until the connection ends for another
//            reason (device removal, the peer's end), either side
//   refused  client only: nobody listens, the connect must fail
//   unreachable  client only: the server never answers the MPA Request
//   connerr  client only: the server answers with a malformed Reply
// Private data goes both ways and is checked byte for byte.  Exit status 0
// on success; every failure is explained on stderr.
#include "rdma_test_util.h"

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <arpa/inet.h>
#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// Longest wait for an event: a minute, times XIW_TIME_FACTOR (scripts/guest
// sets it for the sanitizer kernel).  guest.cm_robust runs its raw-socket
// cases (about 25 s under TCG on a busy host, over 60 s on the sanitizer
// kernel) while the server waits for its first request, so this must
// outlast them.
int event_timeout_ms()
{
	return 60000 * xiw_test::time_factor();
}
const char *g_role = "?";

[[noreturn]] void fail(const char *what, int err = 0)
{
	if (err)
		std::fprintf(stderr, "%s: FAIL: %s: %s\n", g_role, what,
			     std::strerror(err));
	else
		std::fprintf(stderr, "%s: FAIL: %s\n", g_role, what);
	std::exit(1);
}

void note(const std::string &msg)
{
	std::printf("%s: %s\n", g_role, msg.c_str());
	std::fflush(stdout);
}

// Distinct, recognisable private data for each direction.
std::vector<uint8_t> pattern(size_t len, uint8_t seed)
{
	std::vector<uint8_t> v(len);

	for (size_t i = 0; i < len; i++)
		v[i] = static_cast<uint8_t>(seed + i * 7u);
	return v;
}

const std::vector<uint8_t> kConnectPd = pattern(56, 0x11);
const std::vector<uint8_t> kAcceptPd = pattern(40, 0x52);
const std::vector<uint8_t> kRejectPd = pattern(20, 0xa3);

void check_pd(const char *what, const void *data, uint8_t len,
	      const std::vector<uint8_t> &want)
{
	// iWARP carries private data as is: length and contents exact.
	if (len != want.size() ||
	    (len && std::memcmp(data, want.data(), len) != 0)) {
		std::fprintf(stderr, "%s: %s: private data: got %u bytes, want %zu\n",
			     g_role, what, len, want.size());
		fail("private data differs");
	}
	note(std::string(what) + ": private data ok (" +
	     std::to_string(len) + " bytes)");
}

// Waits for the next event, which must be @want; returns it (to be acked).
rdma_cm_event *expect(rdma_event_channel *ch, rdma_cm_event_type want)
{
	pollfd pfd = { ch->fd, POLLIN, 0 };
	rdma_cm_event *ev;

	if (poll(&pfd, 1, event_timeout_ms()) != 1)
		fail((std::string("timeout waiting for ") +
		      rdma_event_str(want)).c_str());
	if (rdma_get_cm_event(ch, &ev))
		fail("rdma_get_cm_event", errno);
	if (ev->event != want) {
		std::fprintf(stderr, "%s: got %s (status %d), want %s\n",
			     g_role, rdma_event_str(ev->event), ev->status,
			     rdma_event_str(want));
		fail("unexpected event");
	}
	note(std::string("event ") + rdma_event_str(ev->event));
	return ev;
}

void ack(rdma_cm_event *ev)
{
	rdma_ack_cm_event(ev);
}

// Until @id is disconnected or its device goes away; events of other ids
// (a listener's DEVICE_REMOVAL) are skipped.
void wait_end(rdma_event_channel *ch, rdma_cm_id *id)
{
	note("holding the connection");
	for (;;) {
		pollfd pfd = { ch->fd, POLLIN, 0 };
		rdma_cm_event *ev;
		bool end;

		if (poll(&pfd, 1, 60000) != 1)
			fail("timeout waiting for the connection to end");
		if (rdma_get_cm_event(ch, &ev))
			fail("rdma_get_cm_event", errno);
		note(std::string("event ") + rdma_event_str(ev->event) +
		     (ev->id == id ? "" : " (other id)"));
		end = ev->id == id &&
		      (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
		       ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL);
		rdma_ack_cm_event(ev);
		if (end)
			return;
	}
}

// ADDR (IPv4 or IPv6) and PORT as a socket address.
sockaddr_storage make_addr(const char *addr, int port)
{
	sockaddr_storage ss = {};
	auto *sin = reinterpret_cast<sockaddr_in *>(&ss);
	auto *sin6 = reinterpret_cast<sockaddr_in6 *>(&ss);
	const auto nport = htons(static_cast<uint16_t>(port));

	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = nport;
	} else if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = nport;
	} else {
		fail("bad address");
	}
	return ss;
}

void create_qp(rdma_cm_id *id)
{
	ibv_qp_init_attr attr = {};

	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = 4;
	attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, nullptr, &attr))
		fail("rdma_create_qp", errno);
}

int run_server(const char *addr, int port, const std::string &scenario)
{
	rdma_event_channel *ch = rdma_create_event_channel();
	rdma_cm_id *listen_id, *id;
	rdma_conn_param param = {};
	rdma_cm_event *ev;
	sockaddr_storage sa = make_addr(addr, port);

	if (!ch)
		fail("rdma_create_event_channel", errno);
	if (rdma_create_id(ch, &listen_id, nullptr, RDMA_PS_TCP))
		fail("rdma_create_id", errno);
	if (rdma_bind_addr(listen_id, reinterpret_cast<sockaddr *>(&sa)))
		fail("rdma_bind_addr", errno);
	if (rdma_listen(listen_id, 4))
		fail("rdma_listen", errno);
	note(std::string("listening on ") + addr + ":" + std::to_string(port));

	ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	check_pd("connect request", ev->param.conn.private_data,
		 ev->param.conn.private_data_len, kConnectPd);
	note("device " + std::string(ibv_get_device_name(id->verbs->device)) +
	     ", peer initiator_depth " +
	     std::to_string(ev->param.conn.initiator_depth) +
	     ", responder_resources " +
	     std::to_string(ev->param.conn.responder_resources));
	ack(ev);

	if (scenario == "reject") {
		if (rdma_reject(id, kRejectPd.data(),
				static_cast<uint8_t>(kRejectPd.size())))
			fail("rdma_reject", errno);
		rdma_destroy_id(id);
		rdma_destroy_id(listen_id);
		rdma_destroy_event_channel(ch);
		note("rejected: ok");
		return 0;
	}

	create_qp(id);
	param.private_data = kAcceptPd.data();
	param.private_data_len = static_cast<uint8_t>(kAcceptPd.size());
	param.responder_resources = 1;
	param.initiator_depth = 1;
	if (rdma_accept(id, &param))
		fail("rdma_accept", errno);
	ack(expect(ch, RDMA_CM_EVENT_ESTABLISHED));

	if (scenario == "hold") {
		wait_end(ch, id);
	} else {
		if (scenario == "sdisc" && rdma_disconnect(id))
			fail("rdma_disconnect", errno);
		ack(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	}

	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	note(scenario + ": ok");
	return 0;
}

int run_client(const char *addr, int port, const std::string &scenario)
{
	rdma_event_channel *ch = rdma_create_event_channel();
	sockaddr_storage sa = make_addr(addr, port);
	rdma_conn_param param = {};
	rdma_cm_event *ev;
	rdma_cm_id *id;

	if (!ch)
		fail("rdma_create_event_channel", errno);
	if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP))
		fail("rdma_create_id", errno);
	if (rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&sa),
			      5000))
		fail("rdma_resolve_addr", errno);
	ack(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 5000))
		fail("rdma_resolve_route", errno);
	ack(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	note("device " + std::string(ibv_get_device_name(id->verbs->device)));

	create_qp(id);
	param.private_data = kConnectPd.data();
	param.private_data_len = static_cast<uint8_t>(kConnectPd.size());
	param.responder_resources = 1;
	param.initiator_depth = 1;
	if (rdma_connect(id, &param)) {
		// siw connects synchronously and fails right here.
		if (scenario == "refused" && errno == ECONNREFUSED) {
			note("rdma_connect: connection refused");
			rdma_destroy_qp(id);
			rdma_destroy_id(id);
			rdma_destroy_event_channel(ch);
			note("refused: ok");
			return 0;
		}
		fail("rdma_connect", errno);
	}

	if (scenario == "refused") {
		pollfd pfd = { ch->fd, POLLIN, 0 };

		if (poll(&pfd, 1, event_timeout_ms()) != 1)
			fail("timeout waiting for the connect to fail");
		if (rdma_get_cm_event(ch, &ev))
			fail("rdma_get_cm_event", errno);
		note(std::string("event ") + rdma_event_str(ev->event) +
		     " status " + std::to_string(ev->status));
		if (ev->event != RDMA_CM_EVENT_REJECTED &&
		    ev->event != RDMA_CM_EVENT_UNREACHABLE &&
		    ev->event != RDMA_CM_EVENT_CONNECT_ERROR)
			fail("connect to nobody did not fail");
		ack(ev);
	} else if (scenario == "unreachable") {
		ack(expect(ch, RDMA_CM_EVENT_UNREACHABLE));
	} else if (scenario == "connerr") {
		ack(expect(ch, RDMA_CM_EVENT_CONNECT_ERROR));
	} else if (scenario == "reject") {
		ev = expect(ch, RDMA_CM_EVENT_REJECTED);
		check_pd("reject", ev->param.conn.private_data,
			 ev->param.conn.private_data_len, kRejectPd);
		ack(ev);
	} else {
		ev = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
		check_pd("accept", ev->param.conn.private_data,
			 ev->param.conn.private_data_len, kAcceptPd);
		ack(ev);
		if (scenario == "cdisc") {
			if (rdma_disconnect(id))
				fail("rdma_disconnect", errno);
			ack(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
		} else if (scenario == "sdisc") {
			ack(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
		} else if (scenario == "hold") {
			wait_end(ch, id);
		} else if (scenario != "destroy") {
			fail("unknown scenario");
		}
	}
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	note(scenario + ": ok");
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 5) {
		std::fprintf(stderr,
			     "usage: %s server|client ADDR PORT SCENARIO\n",
			     argv[0]);
		return 2;
	}
	std::string role = argv[1];
	int port = std::atoi(argv[3]);

	g_role = argv[1];
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	if (role == "server")
		return run_server(argv[2], port, argv[4]);
	if (role == "client")
		return run_client(argv[2], port, argv[4]);
	fail("role must be server or client");
}
