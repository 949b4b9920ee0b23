// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// A fake iWARP peer over a plain TCP socket, to drive exact bytes at xiw:
//   xiw_wire_inject listen ADDR PORT
//   xiw_wire_inject ADDR PORT CASE
//   xiw_wire_inject selfcheck
// "listen" is an rdma_cm server on the xiw device: per connection one QP,
// one posted 64-octet receive and a 4 KiB buffer registered with remote
// read, write and atomic rights but no flush or verify right, described in
// the accept private data (the MPA Reply's private data).  It serves
// connection after connection; once the peer has gone it prints
//   wire_inject server: CASE: N bytes changed, M receives completed: ok
// (N: octets of the buffer and the receive that differ from what CASE
// leaves there, FAIL if N is not 0 or M is not what CASE completes), and
// exits after CASE "quit", 1 if any connection failed those checks.
//
// The client speaks MPA itself (RFC 5044 §7.1 Request, revision 1, CRC,
// the xiw extensions bit XIW_MPA_FLAG_EXT, CASE as private data), expects
// XIW_MPA_FLAG_EXT_ACK in the Reply, sends one crafted FPDU and reads FPDUs
// (CRC checked) until the Terminate or the expected response:
//   bad_aopcode       Atomic Request with AOpCode 0x5: Terminate RDMAP,
//                     Remote Operation, Unexpected OpCode (0/2/0x06)
//   unaligned_atomic  FetchAdd at the buffer + 4: Terminate RDMAP, Remote
//                     Operation, catastrophic localized (0/2/0x07)
//   short_immediate   Immediate Data with 4 octets instead of 8: any
//                     Terminate, nothing placed
//   good_fetch_add    a valid FetchAdd: Atomic Response with the request
//                     id and the original value
//   atomic_write_bad_length
//                     Atomic Write Request (draft-talpey §2.3.1) with Data
//                     Sink Length 4 instead of 8: Terminate RDMAP, Remote
//                     Operation, catastrophic localized (0/2/0x07), nothing
//                     written
//   flush_no_right    RDMA Flush Request to the buffer, which has no flush
//                     right: Terminate RDMAP, Remote Protection, access
//                     rights (0/1/0x02)
//   atomic_write_good a valid Atomic Write: Atomic Write Response (opcode
//                     0x11, QN 3, no payload); the listener finds the
//                     big-endian Data as a host-order 64-bit value at the
//                     target
//   send_mo_after_message
//                     a 16-octet Send (MSN 1, MO 0, Last), then a Send
//                     segment with MSN 2 and MO 16 although no message is
//                     under way: Terminate DDP, untagged, invalid MO
//                     (1/2/0x04); the first Send completes its receive
//                     (regression: the second was placed through the
//                     receive already completed, a NULL dereference)
//   send_mo_after_full_receive
//                     the same, but the first Send fills the listener's
//                     receive of 16 octets exactly: the same Terminate, and
//                     no completion but the first Send's (regression: the
//                     second segment found no room in the receive already
//                     completed and completed it again, with its stale
//                     wr_id and a local length error)
//   flush_no_type     RDMA Flush Request with no disposition bit to the
//                     STag of the receive buffer, which has local rights
//                     only: Terminate RDMAP, Remote Protection, access
//                     rights (0/1/0x02) (regression: answered, so any
//                     STag's validity could be probed)
//   write_qp_denied   the listener takes remote write off its QP
//                     (ibv_modify_qp IBV_QP_ACCESS_FLAGS = remote read);
//                     then an RDMA Write to the buffer, which has the
//                     right: Terminate RDMAP, Remote Protection, access
//                     rights, nothing placed
//   stalled_write     the header and 8 of the 2048 payload octets of an
//                     RDMA Write, then nothing: the listener deregisters
//                     the buffer while the Write is half received, which
//                     must return at once (regression: dereg_mr waited
//                     for the Write until the QP was destroyed); the
//                     client then resets the connection
//   exit_stalled_write
//                     the same 8 octets of a Write, then the listener's
//                     process exits with everything still open (its
//                     region, registered after its QP, is released first):
//                     the exit must not wait for the Write, and the
//                     connection must end within 10 s, with nothing sent
//                     but a Terminate (regression: the exit's dereg_mr
//                     waited for the Write until the QP was destroyed,
//                     which came after it: the process stayed in D state)
//   unregister_stalled_write
//                     the same, but the listener's process waits while
//                     the script deletes the device (rdma link delete),
//                     which releases the process's objects in the same
//                     order: it must not wait for the Write either
//   frmr_read_after_invalidate
//                     against tests/kmod/xiw_frmr_victim.ko instead of the
//                     listener (a kernel ULP whose buffer is a fast
//                     registration, all octets 0xa5): an RDMA Read Request
//                     of the whole region (16 MiB) with a small receive
//                     buffer, so that most of the Read Response waits
//                     behind a full TCP send buffer; then a Send with
//                     Invalidate of its STag, on which the ULP reuses the
//                     pages (fills them with 0x5a); then everything is
//                     read: no octet may come from after the invalidation,
//                     and the Read Response must stop (Terminate or end of
//                     stream) (regression: it went on from the reused pages)
//   frmr_read_after_local_inv
//                     the same against xiw_frmr_victim.ko loaded with
//                     local_inv=1 and a plain Send instead: the ULP then
//                     invalidates the STag itself (Local Invalidate),
//                     reuses the pages and maps the region to others: no
//                     octet may come from after the invalidation (the
//                     Local Invalidate may complete after the whole Read
//                     Response went) (regression: as above)
//   frmr_atomics_after_invalidate
//                     frmr_read_after_invalidate with a FetchAdd of the
//                     region's first word and an Atomic Write of its
//                     second behind the Read Request, before the Send with
//                     Invalidate: neither may be answered, and the ULP
//                     finds none of its reused pages changed (regression:
//                     both went on to the pages after the Read Response)
//   kernel_ext_unnegotiated
//                     against xiw_frmr_victim.ko loaded with probe_posts=1:
//                     an MPA Request without the extensions bit, then 3 s
//                     of listening, during which the ULP posts a Send with
//                     Immediate Data and an RDMA Read with two SGEs:
//                     nothing may arrive, as both posts must fail
//                     (-EOPNOTSUPP and -EINVAL, which the ULP logs)
//                     (regression: the posts succeeded and the QP went to
//                     Error, with a Terminate to this peer)
//   read_before_atomic
//                     no MPA CRC either way (mpa_crc=0, no C in the
//                     Request; the listener's buffer is 1 MiB): an RDMA
//                     Read Request of the whole buffer with a small
//                     receive buffer, so that its Read Response waits
//                     behind a full TCP send buffer; 1 s later a FetchAdd
//                     of the buffer's last word; then everything is read:
//                     the Read Response must carry the word as it was
//                     before the FetchAdd (RFC 7306 §7: an Atomic Response
//                     is not generated until the Read Response before it
//                     has been), and the Atomic Response its original
//                     value (regression: the Read Response was framed by
//                     reference to the registered pages and the FetchAdd
//                     executed before TCP copied them)
//   read_after_dereg  no MPA CRC either way, the listener's buffer 1 MiB:
//                     an RDMA Read Request of the whole buffer with a
//                     small receive buffer, so that its Read Response
//                     waits behind a full TCP send buffer; 2 s later the
//                     listener deregisters the buffer and writes another
//                     pattern into it; 4 s after the Request everything
//                     is read: no octet may come from after the
//                     deregistration, and the Read Response must stop
//                     (regression: what was framed from the registered
//                     pages went on to TCP from them after
//                     ibv_dereg_mr() returned)
//   dereg_after_read  no MPA CRC either way: the listener posts a Send of
//                     64 KiB and one of 512 KiB, which wait behind a full
//                     TCP send buffer (the script sets tcp_wmem to 4 KiB);
//                     1 s later an RDMA Read Request of the 4 KiB buffer,
//                     whose Read Response goes between the two Sends; all
//                     is read up to the Read Response's end, then a Send
//                     of 16 octets tells the listener to deregister the
//                     buffer, which the Read is done with; 2 s later the
//                     rest is read: the second Send must arrive whole and
//                     both complete at the listener (regression: the
//                     deregistration aborted the stream, as the buffer was
//                     still counted among what the unsent part of the
//                     second Send's batch was framed from)
//   terminate_last    4 RDMA Read Requests of the buffer with a small
//                     receive buffer, so that their Read Responses wait
//                     behind a closed TCP window; then a Send to QN 5,
//                     and 200 ms later 16 more Sends; 1 s later
//                     everything is read: all Read Responses, then the
//                     Terminate DDP, untagged, invalid QN (1/2/0x01),
//                     then the end of the stream (regression: xiw had
//                     closed its socket, and TCP answered the later Sends
//                     with a reset, dropping the Read Responses still
//                     queued and the Terminate behind them)
//   quit              MPA only; ends the listener
// and prints "wire_inject CASE: terminate layer L type T code C: ok".
// None of these asks for MPA markers, and each fails if the Reply does.
//
// MPA markers (RFC 5044 §4.3): a direction carries them iff its receiver
// set M in its Request or Reply (§7.1).  The client inserts them into what
// it sends and checks (FPDUPTR, CRC over them) and strips them from what
// it reads, by its own stream positions, not the kernel's code:
//   markers_both      M in the Request, M required in the Reply
//                     (mpa_markers=2): markers both ways
//   markers_to_peer   M in the Request, none in the Reply (mpa_markers=0):
//                     markers from xiw only
//   markers_from_peer no M in the Request, M in the Reply (mpa_markers=2):
//                     markers to xiw only
// each sends, back to back, two RDMA Writes of marker_data_len octets to
// the buffer (laid out so that client->xiw markers fall at an FPDU's
// start, in a payload, inside a DDP header and between a pad and its CRC:
// see good_stream), a 64-octet Send into the posted receive and an RDMA
// Read Request of what was written, checks the Read Response(s) octet by
// octet and prints "wire_inject CASE: read back W octets through markers:
// ok"; the listener finds the written octets, the Send's and 1 receive.
//   bad_marker        M both ways (mpa_markers=2); an RDMA Write whose
//                     leading marker has FPDUPTR 4 instead of 0: Terminate
//                     LLP, MPA, marker error (2/0/0x03), nothing placed
// Connecting to a peer that never answers:
//   xiw_wire_inject mute ADDR PORT
//                     a plain TCP listener that reads and never answers
//   xiw_wire_inject destroy_connecting ADDR PORT
//                     an rdma_cm client on xiw connects to it and destroys
//                     its QP 1 s later, while xiw waits for the MPA Reply:
//                     ibv_destroy_qp() must return within 3 s and the
//                     connect must fail (regression: destroy waited for the
//                     MPA timeout, 10 s, and a late Reply bound the dying
//                     QP)
// "selfcheck" frames the good cases' FPDUs (and FPDUs of every length)
// with and without markers over a socketpair, reads them back, and checks
// the marker layout worked out by hand below; no device involved.
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <xiw/crc32c.h>
#include <xiw/wire.h>

#include "../fixed_width.h"
#include "../fuzz/raw_peer.h"
#include "rdma_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using xiw_test::die;
using xiw_test::wait_disconnect;
using xiw_test::resolve;
using xiw_raw::bytes_of;
using xiw_raw::mpa_stream;

constexpr u32 pd_magic = 0x78697749; // "xiwI"
constexpr std::size_t buf_size = 4096;
constexpr std::size_t recv_len = 64;
constexpr u8 recv_fill = 0xee;
constexpr u64 good_add = 0x0000000100000003ull;
constexpr u64 atomic_write_value = 0xfeedc0de12345678ull;
constexpr u32 request_id = 0xa70c0001u;

// The good marker cases: two RDMA Writes of these lengths (W = 1993 in
// all), laid out in good_stream.
constexpr std::size_t marker_write1_len = 984;
constexpr std::size_t marker_write2_len = 1009;
constexpr std::size_t marker_data_len = marker_write1_len + marker_write2_len;
// The Read Request's Data Sink, which the Read Response must echo.
constexpr u32 sink_stag = 0x5eed0a01u;
constexpr u64 sink_to = 0x0000123400000010ull;

// Listener -> client in the accept private data.
struct inject_target {
	u32 magic;
	u32 rkey;
	u64 addr;
	u64 len;
	u64 word0; // the value at addr
	u32 local_stag; // the receive buffer's: local write access only
	u32 pad;
	u64 local_addr; // of the receive buffer
};

u8 pattern(std::size_t i)
{
	return static_cast<u8>(i * 7 + 3 + (i >> 8) * 13);
}

// The 64-bit word (host order, as an Atomic sees it) of pattern() at AT.
u64 pattern_word(std::size_t at)
{
	u8 b[sizeof(u64)];
	for (std::size_t i = 0; i < sizeof(b); i++)
		b[i] = pattern(at + i);
	u64 w;
	std::memcpy(&w, b, sizeof(w));
	return w;
}

// What the good marker cases write: unlike pattern() at every offset.
u8 pattern2(std::size_t i)
{
	return static_cast<u8>(pattern(i) ^ 0x5a);
}

// What the good marker cases Send.
u8 send_pattern(std::size_t i)
{
	return static_cast<u8>(0xc1 + i * 3);
}

bool marker_good_case(const std::string &which)
{
	return which == "markers_both" || which == "markers_to_peer" ||
	       which == "markers_from_peer";
}

// send_mo_after_message: the length of its complete first Send.
constexpr std::size_t first_send_len = 16;

// The cases whose second Send segment continues a message the first one
// completed.
bool send_mo_case(const std::string &which)
{
	return which == "send_mo_after_message" || which == "send_mo_after_full_receive";
}

// stalled_write: the Write's length and what of its payload is sent.
constexpr std::size_t stalled_write_len = 2048;
constexpr std::size_t stalled_write_sent = 8;
// read_before_atomic, read_after_dereg: their buffer, much more than TCP
// buffers on its way.
constexpr std::size_t ordered_buf_size = 1 << 20;

// dereg_after_read: the listener's two Sends, the first holding back the
// second and the Read Response behind it.
constexpr std::size_t held_send_len = 64 * 1024;
constexpr std::size_t after_send_len = 512 * 1024;

// The cases whose Read Response must wait behind a full TCP send buffer,
// with no MPA CRC (only then does xiw send it from the registered pages
// themselves: it copies what the CRC is computed over).
bool read_held_case(const std::string &which)
{
	return which == "read_before_atomic" || which == "read_after_dereg" ||
	       which == "dereg_after_read";
}

// The listener's registered buffer for CASE.
std::size_t buffer_octets(const std::string &which)
{
	return which == "read_before_atomic" || which == "read_after_dereg" ? ordered_buf_size
									      : buf_size;
}

// Where in the buffer CASE's one good FetchAdd or Atomic Write goes.
std::size_t atomic_target(const std::string &which)
{
	return which == "read_before_atomic" ? ordered_buf_size - sizeof(u64) : 0;
}

// Octets of send_pattern that CASE delivers into the posted receive, in
// one Send; 0: it completes no receive.
std::size_t received_octets(const std::string &which)
{
	if (marker_good_case(which))
		return recv_len;
	return send_mo_case(which) || which == "dereg_after_read" ? first_send_len : 0;
}

// Octets at the start of the buffer that CASE writes (to pattern2).
std::size_t written_octets(const std::string &which)
{
	if (marker_good_case(which))
		return marker_data_len;
	if (which == "read_after_dereg")
		return ordered_buf_size; // by the listener itself

	return which == "stalled_write" ? stalled_write_sent : 0;
}

// stalled_write: deregisters MR while a Write into it is half received;
// false if ibv_dereg_mr() did not return within 5 s.  It then returns
// only once the QP is destroyed, which the caller does after us.
bool dereg_returns(ibv_mr *mr, std::thread &deregister)
{
	auto done = std::make_shared<std::promise<int>>();
	std::future<int> result = done->get_future();
	deregister = std::thread([mr, done] { done->set_value(ibv_dereg_mr(mr)); });
	if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
		return false;
	return result.get() == 0;
}

// The cases in which a Write stays half received until the listener's
// process or its device goes.
bool stalled_end_case(const std::string &which)
{
	return which == "exit_stalled_write" || which == "unregister_stalled_write";
}

// exit_stalled_write, unregister_stalled_write: 2 s after the accept,
// when the Write is half received, exits with every object of ID open;
// or first waits for the device's removal (or the connection's end) that
// the script brings about.
[[noreturn]] void stall_then_end(rdma_cm_id *id, const std::string &which)
{
	const bool exits = which == "exit_stalled_write";
	std::this_thread::sleep_for(std::chrono::seconds(2));
	std::printf("wire_inject server: %s: %s with the Write half received\n", which.c_str(),
		    exits ? "exiting" : "waiting for the device to go");
	std::fflush(stdout);
	if (exits)
		std::_Exit(0);
	const bool gone = xiw_test::wait_disconnect(id, 60000);
	std::printf("wire_inject server: %s: %s\n", which.c_str(),
		    gone ? "the device or the connection went, exiting"
			 : "neither the device nor the connection went within 60 s: FAIL");
	std::fflush(stdout);
	std::_Exit(gone ? 0 : 1);
}

// dereg_after_read: the source of the listener's two Sends.
struct send_source {
	std::vector<u8> buf;
	ibv_mr *mr = nullptr;
	~send_source()
	{
		if (mr)
			ibv_dereg_mr(mr);
	}

	// Posts the two Sends of held_send_len and after_send_len octets.
	void post(rdma_cm_id *id)
	{
		buf.resize(held_send_len + after_send_len);
		for (std::size_t i = 0; i < buf.size(); i++)
			buf[i] = send_pattern(i);
		mr = ibv_reg_mr(id->pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
		if (!mr)
			die("ibv_reg_mr (the Sends)");
		if (rdma_post_send(id, nullptr, buf.data(), held_send_len, mr, IBV_SEND_SIGNALED) ||
		    rdma_post_send(id, nullptr, buf.data() + held_send_len, after_send_len, mr,
				   IBV_SEND_SIGNALED))
			die("rdma_post_send");
	}

	// After the peer went: both Sends completed; else why not.
	std::string completions(rdma_cm_id *id) const
	{
		ibv_wc wc[2]{};
		int n = 0;
		for (int tries = 0; n < 2 && tries < 100; tries++) {
			const int k = ibv_poll_cq(id->send_cq, 2 - n, wc + n);
			if (k < 0)
				return "ibv_poll_cq failed";
			n += k;
			if (n < 2)
				std::this_thread::sleep_for(std::chrono::milliseconds(10));
		}
		for (int i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS)
				return xiw_test::strf("Send %d completed with %s", i + 1,
						      ibv_wc_status_str(wc[i].status));
		return n == 2 ? "" : xiw_test::strf("%d of the 2 Sends completed", n);
	}
};

// dereg_after_read: posts the Sends, waits (30 s at most) for the peer's
// Send saying it has the whole Read Response, then deregisters MR, which
// the Read was of.  Counts that Send in SIGNALLED; says what went wrong.
std::string dereg_on_signal(rdma_cm_id *id, ibv_mr *mr, send_source &sends,
			    std::size_t &signalled)
{
	sends.post(id);
	ibv_wc wc{};
	if (!xiw_test::poll_one(id->recv_cq, wc, 30000))
		return "no Send from the peer within 30 s";
	if (wc.status != IBV_WC_SUCCESS || wc.byte_len != first_send_len)
		return xiw_test::strf("the peer's Send completed with %s, %u octets",
				      ibv_wc_status_str(wc.status), wc.byte_len);
	signalled = 1;
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr");
	return "";
}

// =============================================================================
// Listener
// =============================================================================


int run_listener(const char *addr, const char *port)
{
	rdma_addrinfo *res = resolve(addr, port, true);
	rdma_cm_id *listen_id = nullptr;
	ibv_qp_init_attr attr = xiw_test::rc_qp_attr(4, 4);
	int failures = 0;

	if (rdma_create_ep(&listen_id, res, nullptr, &attr))
		die("rdma_create_ep");
	if (rdma_listen(listen_id, 4))
		die("rdma_listen");
	std::printf("wire_inject server: listening on %s:%s\n", addr, port);
	std::fflush(stdout);

	for (;;) {
		rdma_cm_id *id = nullptr;
		if (rdma_get_request(listen_id, &id))
			die("rdma_get_request");
		char name[32] = "";
		const rdma_conn_param &cp = id->event->param.conn;
		if (cp.private_data)
			std::memcpy(name, cp.private_data,
				    std::min<std::size_t>(cp.private_data_len, sizeof(name) - 1));
		const std::string which = name;

		const std::size_t size = buffer_octets(which);
		auto *buf = static_cast<u8 *>(std::aligned_alloc(4096, size));
		u8 rbuf[recv_len];
		if (!buf)
			die("aligned_alloc");
		for (std::size_t i = 0; i < size; i++)
			buf[i] = pattern(i);
		std::memset(rbuf, recv_fill, sizeof(rbuf));
		u64 word0;
		std::memcpy(&word0, buf, sizeof(word0));
		ibv_mr *mr = ibv_reg_mr(id->pd, buf, size,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		ibv_mr *rmr = ibv_reg_mr(id->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
		if (!mr || !rmr)
			die("ibv_reg_mr");
		// send_mo_after_full_receive: a receive the first Send fills.
		const std::size_t posted =
			which == "send_mo_after_full_receive" ? first_send_len : sizeof(rbuf);
		if (rdma_post_recv(id, nullptr, rbuf, posted, rmr))
			die("rdma_post_recv");

		inject_target t{pd_magic, mr->rkey, reinterpret_cast<std::uintptr_t>(buf), size,
				word0, rmr->lkey, 0, reinterpret_cast<std::uintptr_t>(rbuf)};
		rdma_conn_param p{};
		p.responder_resources = 4;
		p.initiator_depth = 4;
		p.private_data = &t;
		p.private_data_len = sizeof(t);
		bool ok = true;
		bool mr_gone = false;
		// dereg_after_read: the Sends' source and what their
		// completions and the signal's said.
		send_source sends;
		std::size_t signalled = 0;
		std::thread deregister;
		std::string why;
		if (rdma_accept(id, &p)) {
			ok = false;
			why = std::string("rdma_accept: ") + std::strerror(errno);
		} else {
			// The client waits 2 s before it sends in these cases.
			if (which == "write_qp_denied") {
				ibv_qp_attr a{};
				a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
				if (ibv_modify_qp(id->qp, &a, IBV_QP_ACCESS_FLAGS))
					die("ibv_modify_qp(IBV_QP_ACCESS_FLAGS)");
			}
			if (which == "stalled_write") {
				std::this_thread::sleep_for(std::chrono::seconds(2));
				mr_gone = true;
				if (!dereg_returns(mr, deregister)) {
					ok = false;
					why = "ibv_dereg_mr() blocked by a half-received Write";
				}
			}
			if (stalled_end_case(which))
				stall_then_end(id, which);
			if (which == "dereg_after_read") {
				std::string err = dereg_on_signal(id, mr, sends, signalled);
				mr_gone = true;
				if (!err.empty()) {
					ok = false;
					why = err;
				}
			}
			if (which == "read_after_dereg") {
				std::this_thread::sleep_for(std::chrono::seconds(2));
				mr_gone = true;
				if (ibv_dereg_mr(mr))
					die("ibv_dereg_mr");
				for (std::size_t i = 0; i < size; i++)
					buf[i] = pattern2(i);
			}
			if (!wait_disconnect(id, 60000)) {
				ok = false;
				why = "the peer did not go away within 60 s";
			}
		}

		// What the peer may have changed: only the word a good FetchAdd
		// (by exactly its addend) or a good Atomic Write (to exactly its
		// value) targets; the good marker cases the first
		// marker_data_len octets (to pattern2) and the receive buffer
		// (to send_pattern, in exactly one receive).
		const bool good_fa = which == "good_fetch_add" || which == "read_before_atomic";
		const bool good_aw = which == "atomic_write_good";
		const bool good = good_fa || good_aw;
		const std::size_t target = atomic_target(which);
		const std::size_t written = written_octets(which);
		const std::size_t delivered = received_octets(which);
		const u64 want = good_fa ? pattern_word(target) + good_add : atomic_write_value;
		std::size_t changed = 0;
		for (std::size_t i = 0; i < size; i++)
			if (!good || i - target >= sizeof(u64))
				changed += buf[i] != (i < written ? pattern2(i) : pattern(i));
		u64 now;
		std::memcpy(&now, buf + target, sizeof(now));
		if (good && now != want) {
			ok = false;
			char msg[128];
			std::snprintf(msg, sizeof(msg),
				      "the %s target is 0x%016" PRIx64 ", expected 0x%016" PRIx64,
				      good_fa ? "FetchAdd" : "Atomic Write", now, want);
			why = msg;
		}
		for (std::size_t i = 0; i < recv_len; i++)
			changed += rbuf[i] != (i < delivered ? send_pattern(i) : recv_fill);
		std::size_t received = signalled;
		ibv_wc wc{};
		while (ibv_poll_cq(id->recv_cq, 1, &wc) == 1) {
			if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) {
				// The send_mo cases' one receive is completed by
				// their first Send: nothing is left to flush.
				if (send_mo_case(which)) {
					ok = false;
					why = xiw_test::strf("another completion after the "
							     "receive's: %s, wr_id %" PRIu64,
							     ibv_wc_status_str(wc.status),
							     static_cast<u64>(wc.wr_id));
				}
				continue;
			}
			received++;
			if (wc.byte_len != delivered) {
				ok = false;
				why = xiw_test::strf("a receive of %u octets, the Send had %zu",
						     wc.byte_len, delivered);
			}
		}
		if (changed || received != (delivered ? 1 : 0))
			ok = false;
		if (sends.mr && ok) {
			why = sends.completions(id);
			ok = why.empty();
		}
		std::printf("wire_inject server: %s: %zu bytes changed, %zu receives completed: %s%s%s\n",
			    which.c_str(), changed, received, ok ? "ok" : "FAIL",
			    why.empty() ? "" : ": ", why.c_str());
		std::fflush(stdout);
		failures += !ok;

		rdma_disconnect(id);
		if (!mr_gone)
			ibv_dereg_mr(mr);
		ibv_dereg_mr(rmr);
		rdma_destroy_ep(id);
		if (deregister.joinable())
			deregister.join();
		std::free(buf);
		if (which == "quit")
			return failures ? 1 : 0;
	}
}

// =============================================================================
// Fake peer
// =============================================================================

const char *g_case = "?";

[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	xiw_test::vfail("wire_inject", g_case, fmt, ap);
}

void send_all(int fd, const void *p, std::size_t n)
{
	const auto *b = static_cast<const u8 *>(p);
	while (n) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
		if (k < 0)
			fail("send: %s", std::strerror(errno));
		b += k;
		n -= static_cast<std::size_t>(k);
	}
}

// Reads N bytes; false on end of stream before any of them.
bool recv_all(int fd, void *p, std::size_t n, const char *what)
{
	auto *b = static_cast<u8 *>(p);
	std::size_t got = 0;
	while (got < n) {
		pollfd pfd{fd, POLLIN, 0};
		int r = poll(&pfd, 1, 20000);
		if (r < 0)
			fail("poll: %s", std::strerror(errno));
		if (r == 0)
			fail("nothing from xiw for 20 s while waiting for %s", what);
		ssize_t k = recv(fd, b + got, n - got, 0);
		if (k < 0)
			fail("recv (%s): %s", what, std::strerror(errno));
		if (k == 0) {
			if (!got)
				return false;
			fail("end of stream in the middle of %s", what);
		}
		got += static_cast<std::size_t>(k);
	}
	return true;
}

// The stream octets of one FPDU starting at D.pos (xiw_raw::frame_fpdu).
// D is one direction of Full Operation Phase: with markers if its receiver
// set M in its own Request or Reply, with the CRC if C was set in the
// Request or the Reply (RFC 5044 §7.1).  HDR is ULPDU_Length and ULPDU,
// LEN octets.  A marker at the FPDU's first octet has FPDUPTR LEAD_PTR
// (bad_marker) instead of 0 if that is not 0.
std::vector<u8> frame_fpdu(mpa_stream &d, const void *hdr, std::size_t len,
			   std::uint16_t lead_ptr = 0)
{
	const auto *h = static_cast<const u8 *>(hdr);
	const auto ulpdu = static_cast<unsigned>(len - XIW_MPA_HDR_LEN);
	if (xiw_raw::get_be16(h) != ulpdu)
		fail("framing an FPDU whose ULPDU_Length is not its %u octets", ulpdu);
	if (lead_ptr && !(d.markers && xiw_mpa_marker_gap(d.pos) == 0))
		fail("no leading marker at P=%u to make FPDUPTR %u of", d.pos, lead_ptr);
	xiw_raw::frame_opts o;
	o.lead_marker_ptr = lead_ptr;
	return xiw_raw::frame_fpdu(d, h, len, o);
}

// One FPDU from D's stream on FD: ULPDU_Length + ULPDU, markers stripped
// (each FPDUPTR checked, RFC 5044 §4.3), pad and CRC (over the stream
// octets, markers included) checked and dropped; empty at the end of the
// stream.  Advances D.pos.  Unlike xiw_raw::fpdu_reader, which parses what
// it is given, this takes no octet of the socket beyond the FPDU: the
// cases read what follows their own way.
std::vector<u8> read_fpdu(int fd, mpa_stream &d)
{
	const u32 start = d.pos;
	std::vector<u8> raw; // the FPDU as on the stream, for the CRC
	std::vector<u8> f;   // without markers
	u32 len_pos = start; // where ULPDU_Length is
	// The next N octets of the FPDU into F and RAW, markers into RAW only;
	// false at the end of the stream before the FPDU's first octet.
	auto take = [&](std::size_t n) {
		while (n) {
			const u32 p = start + static_cast<u32>(raw.size());
			const unsigned gap = d.markers ? xiw_mpa_marker_gap(p) : ~0u;
			const std::size_t k =
				gap ? std::min<std::size_t>(n, gap) : XIW_MPA_MARKER_LEN;
			const std::size_t at = raw.size();
			raw.resize(at + k);
			if (!recv_all(fd, raw.data() + at, k, "an FPDU")) {
				if (at)
					fail("end of stream in the middle of an FPDU");
				return false;
			}
			if (gap) {
				f.insert(f.end(), raw.begin() + static_cast<std::ptrdiff_t>(at),
					 raw.end());
				n -= k;
				continue;
			}
			xiw_mpa_marker m{};
			std::memcpy(&m, raw.data() + at, sizeof(m));
			// Its reserved field is "ignored on receive, except for
			// the CRC" (wire.h): only FPDUPTR is checked, all of it,
			// as §4.3 has the sender clear its two low bits.
			if (p == start)
				len_pos = start + XIW_MPA_MARKER_LEN;
			const u32 want = p == start ? 0 : p - len_pos;
			if (xiw_be16_to_cpu(m.fpdu_ptr) != want)
				fail("the marker at P=%u (FPDU at P=%u) has FPDUPTR %u, "
				     "expected %u",
				     p, start, xiw_be16_to_cpu(m.fpdu_ptr), want);
		}
		return true;
	};
	if (!take(XIW_MPA_HDR_LEN))
		return {};
	const unsigned ulpdu = static_cast<unsigned>(f[0]) << 8 | f[1];
	take(ulpdu + xiw_mpa_pad_len(ulpdu));
	// The CRC is 4-aligned: a marker may precede it, never split it.
	take(XIW_MPA_CRC_LEN);
	xiw_mpa_trailer t{};
	std::memcpy(&t, raw.data() + raw.size() - sizeof(t), sizeof(t));
	const u32 want = xiw_crc32c(raw.data(), raw.size() - sizeof(t));
	if (d.crc && xiw_mpa_get_crc(&t) != want)
		fail("FPDU of %u octets at P=%u with CRC 0x%08x, computed 0x%08x", ulpdu, start,
		     xiw_mpa_get_crc(&t), want);
	d.pos += static_cast<u32>(raw.size());
	f.resize(XIW_MPA_HDR_LEN + ulpdu);
	return f;
}

// Checks the DDP/RDMAP framing of an untagged FPDU F from xiw.
void check_untagged(const std::vector<u8> &f, unsigned opcode, unsigned qn, const char *what)
{
	if (f.size() < sizeof(xiw_ddp_untagged_hdr))
		fail("%s: only %zu octets", what, f.size());
	xiw_ddp_untagged_hdr h{};
	std::memcpy(&h, f.data(), sizeof(h));
	if (xiw_ddp_tagged(h.ctrl.ddp_ctrl) || !xiw_ddp_last(h.ctrl.ddp_ctrl) ||
	    xiw_ddp_version(h.ctrl.ddp_ctrl) != XIW_DDP_VERSION)
		fail("%s: DDP control 0x%02x, expected untagged, last, version 1", what,
		     h.ctrl.ddp_ctrl);
	if (xiw_rdmap_rv(h.ctrl.rdmap_ctrl) != XIW_RDMAP_RV1 ||
	    xiw_rdmap_opcode(h.ctrl.rdmap_ctrl) != opcode)
		fail("%s: RDMAP control 0x%02x, expected RV 1 opcode 0x%x", what,
		     h.ctrl.rdmap_ctrl, opcode);
	if (xiw_be32_to_cpu(h.qn) != qn || xiw_be32_to_cpu(h.msn) != 1 ||
	    xiw_be32_to_cpu(h.mo) != 0)
		fail("%s: QN %u MSN %u MO %u, expected QN %u MSN 1 MO 0", what,
		     xiw_be32_to_cpu(h.qn), xiw_be32_to_cpu(h.msn), xiw_be32_to_cpu(h.mo), qn);
}

// The original value an Atomic Response F (RFC 7306 §5.2.2) to
// atomic_request() carries; fails if F is not one.
u64 atomic_original(const std::vector<u8> &f)
{
	check_untagged(f, XIW_OP_ATOMIC_RESP, XIW_QN_RESPONSE, "Atomic Response");
	if (f.size() != sizeof(xiw_hdr_atomic_resp))
		fail("Atomic Response of %zu octets, expected %zu", f.size(),
		     sizeof(xiw_hdr_atomic_resp));
	xiw_hdr_atomic_resp r{};
	std::memcpy(&r, f.data(), sizeof(r));
	const u32 id = xiw_be32_to_cpu(r.atomic.req_id);
	if (id != request_id)
		fail("Atomic Response for request id 0x%08x, expected 0x%08x", id, request_id);
	return xiw_get_be64(&r.atomic.orig);
}

// A Terminate F's control word (F at least term_fixed octets).
constexpr std::size_t term_fixed = sizeof(xiw_ddp_untagged_hdr) + 4;
xiw_hdr_terminate terminate_of(const std::vector<u8> &f)
{
	xiw_hdr_terminate term{};
	std::memcpy(&term, f.data(), std::min(f.size(), sizeof(term)));
	return term;
}

// "Terminate layer L type T code 0xCC" of a Terminate F, for messages.
std::string terminate_text(const std::vector<u8> &f)
{
	const xiw_hdr_terminate term = terminate_of(f);
	return xiw_test::strf("Terminate layer %u type %u code 0x%02x",
			      xiw_term_layer(term.term.ctrl), xiw_term_etype(term.term.ctrl),
			      xiw_term_ecode(term.term.ctrl));
}

// An RDMA Write (RFC 5040: tagged, last segment) of DATA[0, N) to STag/TO.
std::vector<u8> write_segment(u32 stag, u64 to, const u8 *data, std::size_t n)
{
	xiw_ddp_tagged_hdr h{};
	xiw_ctrl_set(&h.ctrl, static_cast<std::uint16_t>(XIW_DDP_TAGGED_HLEN + n), 1, 1,
		     XIW_RDMAP_RV1, XIW_OP_WRITE);
	xiw_tagged_set(&h, stag, to);
	std::vector<u8> s(sizeof(h) + n);
	std::memcpy(s.data(), &h, sizeof(h));
	std::copy_n(data, n, s.begin() + sizeof(h));
	return s;
}

// An RDMA Read Request (QN 1, MSN MSN) of the first LEN octets of the
// buffer to the sink.
std::vector<u8> read_request(const inject_target &t, u64 len, u32 msn = 1)
{
	xiw_hdr_read_req h{};
	xiw_ctrl_set(&h.ddp.ctrl, sizeof(h) - XIW_MPA_HDR_LEN, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_READ_REQ);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, msn, 0);
	h.rreq.sink_stag = xiw_cpu_to_be32(sink_stag);
	xiw_put_be64(&h.rreq.sink_to, sink_to);
	h.rreq.read_size = xiw_cpu_to_be32(static_cast<u32>(len));
	h.rreq.src_stag = xiw_cpu_to_be32(t.rkey);
	xiw_put_be64(&h.rreq.src_to, t.addr);
	return bytes_of(h);
}

// An Atomic Write Request (draft-talpey §2.3.1: Data Sink STag, Length,
// which must be 8, Tagged Offset, Data big-endian; QN 1, MSN MSN) of
// atomic_write_value to TO in the buffer.
std::vector<u8> atomic_write_request(const inject_target &t, u32 len, u64 to, u32 msn = 1)
{
	xiw_hdr_atomic_write_req h{};
	xiw_ctrl_set(&h.ddp.ctrl, sizeof(h) - XIW_MPA_HDR_LEN, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_ATOMIC_WRITE_REQ);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, msn, 0);
	h.awrite.sink_stag = xiw_cpu_to_be32(t.rkey);
	h.awrite.sink_len = xiw_cpu_to_be32(len);
	xiw_put_be64(&h.awrite.sink_to, to);
	xiw_put_be64(&h.awrite.data, atomic_write_value);
	return bytes_of(h);
}

// An Atomic Request (RFC 7306 §5.2.1, QN 1, MSN MSN) with AOpCode AOP at TO
// in the buffer: a plain 64-bit add of good_add if AOP is FetchAdd.
std::vector<u8> atomic_request(const inject_target &t, unsigned aop, u64 to, u32 msn = 1)
{
	xiw_hdr_atomic_req h{};
	xiw_ctrl_set(&h.ddp.ctrl, sizeof(h) - XIW_MPA_HDR_LEN, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_ATOMIC_REQ);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, msn, 0);
	h.atomic.aopcode = xiw_cpu_to_be32(aop);
	h.atomic.req_id = xiw_cpu_to_be32(request_id);
	h.atomic.stag = xiw_cpu_to_be32(t.rkey);
	xiw_put_be64(&h.atomic.to, to);
	xiw_put_be64(&h.atomic.add_swap, good_add);
	xiw_put_be64(&h.atomic.add_swap_mask, 0); // a plain 64-bit add
	xiw_put_be64(&h.atomic.compare, 0);	  // unused: RFC 7306 §5.2.1
	xiw_put_be64(&h.atomic.compare_mask, XIW_ATOMIC_MASK_UNUSED);
	return bytes_of(h);
}

// The good marker cases' four FPDUs, back to back on TX from its start:
//   (a) RDMA Write of pattern2[0, 984) to the buffer;
//   (b) RDMA Write of pattern2[984, 1993) (pad 3) after it;
//   (c) Send of 64 octets of send_pattern (QN 0, MSN 1, MO 0);
//   (d) RDMA Read Request (QN 1, MSN 1) of the 1993 octets to the sink.
// With markers (stream positions P, M = a marker with its FPDUPTR):
//       0  M 0     (a) leading marker; ULPDU_Length at 4, DDP header to 20
//     512  M 508   (a) in the payload (492 octets before, 492 after)
//    1008          (a) CRC; (b) starts at 1012
//    1024  M 12    (b) in the DDP header, between the two words of the TO
//    1536  M 524   (b) in the payload (504 octets before, 505 after)
//    2048  M 1036  (b) between the 3-octet pad and the CRC at 2052
//    2056          (c), 88 octets;  2144: (d), 52 octets;  end at 2196
// Without markers the same FPDUs are 1004, 1032, 88 and 52 octets long.
// SEGS gets the FPDUs without pad, CRC or markers.
std::vector<u8> good_stream(mpa_stream &tx, const inject_target &t,
			    std::vector<std::vector<u8>> &segs)
{
	std::vector<u8> data(marker_data_len);
	for (std::size_t i = 0; i < data.size(); i++)
		data[i] = pattern2(i);
	segs.clear();
	segs.push_back(write_segment(t.rkey, t.addr, data.data(), marker_write1_len));
	segs.push_back(write_segment(t.rkey, t.addr + marker_write1_len,
				     data.data() + marker_write1_len, marker_write2_len));

	xiw_ddp_untagged_hdr sh{};
	xiw_ctrl_set(&sh.ctrl, XIW_DDP_UNTAGGED_HLEN + recv_len, 0, 1, XIW_RDMAP_RV1, XIW_OP_SEND);
	xiw_untagged_set(&sh, 0, XIW_QN_SEND, 1, 0);
	segs.push_back(bytes_of(sh));
	for (std::size_t i = 0; i < recv_len; i++)
		segs.back().push_back(send_pattern(i));

	segs.push_back(read_request(t, marker_data_len));

	std::vector<u8> out;
	for (std::size_t i = 0; i < segs.size(); i++) {
		const u32 at = tx.pos;
		// The point of (b): a marker strictly inside its DDP header,
		// i.e. after its own first octet and before its payload.
		const unsigned gap = xiw_mpa_marker_gap(at);
		if (i == 1 && tx.markers && (gap == 0 || gap >= sizeof(xiw_ddp_tagged_hdr)))
			fail("the second RDMA Write starts at P=%u: no marker in its DDP header",
			     at);
		const std::vector<u8> fr = frame_fpdu(tx, segs[i].data(), segs[i].size());
		out.insert(out.end(), fr.begin(), fr.end());
	}
	return out;
}

// The Read Response to read_request(LEN) from RX's stream on FD: its
// segments to the sink, in order, until the Last one; fails on anything
// else.
std::vector<u8> read_response(int fd, mpa_stream &rx, std::size_t len)
{
	std::vector<u8> got;
	for (;;) {
		const std::vector<u8> f = read_fpdu(fd, rx);
		if (f.empty())
			fail("the connection ended after %zu of the %zu octets read back",
			     got.size(), len);
		if (f.size() < sizeof(xiw_ctrl))
			fail("an FPDU of %zu octets", f.size());
		xiw_ctrl c{};
		std::memcpy(&c, f.data(), sizeof(c));
		const unsigned opcode = xiw_rdmap_opcode(c.rdmap_ctrl);
		if (opcode == XIW_OP_TERMINATE && f.size() >= term_fixed)
			fail("%s after %zu octets read back", terminate_text(f).c_str(),
			     got.size());
		if (opcode != XIW_OP_READ_RESP || !xiw_ddp_tagged(c.ddp_ctrl) ||
		    xiw_rdmap_rv(c.rdmap_ctrl) != XIW_RDMAP_RV1 ||
		    f.size() < sizeof(xiw_ddp_tagged_hdr))
			fail("an FPDU of %zu octets with DDP control 0x%02x, RDMAP control 0x%02x "
			     "instead of a Read Response",
			     f.size(), c.ddp_ctrl, c.rdmap_ctrl);
		xiw_ddp_tagged_hdr h{};
		std::memcpy(&h, f.data(), sizeof(h));
		// RFC 5040: the Read Response goes to the Data Sink
		// STag/TO; in order here, so each segment continues the last.
		const u32 stag = xiw_be32_to_cpu(h.stag);
		const u64 to = xiw_get_be64(&h.to);
		if (stag != sink_stag || to != sink_to + got.size())
			fail("Read Response segment to STag 0x%08x TO 0x%016" PRIx64
			     ", expected 0x%08x 0x%016" PRIx64,
			     stag, to, sink_stag, sink_to + got.size());
		got.insert(got.end(), f.begin() + sizeof(h), f.end());
		if (got.size() > len)
			fail("Read Response of more than the %zu octets asked for", len);
		if (xiw_ddp_last(c.ddp_ctrl))
			break;
	}
	if (got.size() != len)
		fail("Read Response of %zu octets, %zu asked for", got.size(), len);
	return got;
}

// The good marker cases after the MPA exchange: good_stream, then Read
// Response FPDUs until the Last one, compared with what was written.
int run_markers(int fd, const inject_target &t, mpa_stream &tx, mpa_stream &rx, const std::string &which)
{
	std::vector<std::vector<u8>> segs;
	const std::vector<u8> out = good_stream(tx, t, segs);
	send_all(fd, out.data(), out.size());

	const std::vector<u8> got = read_response(fd, rx, marker_data_len);
	for (std::size_t i = 0; i < got.size(); i++)
		if (got[i] != pattern2(i))
			fail("octet %zu read back is 0x%02x, 0x%02x was written", i, got[i],
			     pattern2(i));
	close(fd);
	std::printf("wire_inject %s: read back %zu octets through markers: ok\n", which.c_str(),
		    got.size());
	return 0;
}

// What a Read Response that had to stop brought: its octets, those of them
// unlike what the buffer held before (by EXPECTED(offset, octet)), and how
// the stream ended.
struct held_read {
	std::size_t read_back = 0, unexpected = 0;
	std::string end = "end of stream";
	bool reset = false;
	bool silent = false; // ended by 10 s of silence, not by xiw
};

// Reads all xiw sends until the end of the stream (a reset counts as one)
// or 10 s of silence, then parses it: Read Responses (no markers: none
// asked), the last FPDU maybe torn, up to a Terminate.
template <typename Expected> held_read read_until_end(int fd, Expected expected)
{
	held_read r;
	std::vector<u8> in;
	for (;;) {
		pollfd pfd{fd, POLLIN, 0};
		if (poll(&pfd, 1, 10000) != 1) {
			r.end = "10 s of silence";
			r.silent = true;
			break;
		}
		u8 b[65536];
		const ssize_t k = recv(fd, b, sizeof(b), 0);
		if (k <= 0) {
			r.reset = k < 0;
			break;
		}
		in.insert(in.end(), b, b + k);
	}
	close(fd);
	std::size_t at = 0;
	while (at + XIW_MPA_HDR_LEN <= in.size()) {
		const std::size_t ulpdu = static_cast<std::size_t>(in[at]) << 8 | in[at + 1];
		const std::size_t len = XIW_MPA_HDR_LEN + ulpdu + xiw_mpa_pad_len(ulpdu) +
					XIW_MPA_CRC_LEN;
		if (at + len > in.size())
			break; // cut by the reset
		std::vector<u8> f(in.begin() + static_cast<std::ptrdiff_t>(at),
				  in.begin() + static_cast<std::ptrdiff_t>(at + XIW_MPA_HDR_LEN + ulpdu));
		at += len;
		if (f.size() < sizeof(xiw_ctrl))
			fail("an FPDU of %zu octets", f.size());
		const unsigned opcode = xiw_rdmap_opcode(f[3]);
		if (opcode == XIW_OP_TERMINATE && f.size() >= term_fixed) {
			r.end = terminate_text(f);
			break;
		}
		if (opcode != XIW_OP_READ_RESP || f.size() < sizeof(xiw_ddp_tagged_hdr))
			fail("an FPDU with RDMAP control 0x%02x instead of a Read Response", f[3]);
		for (std::size_t i = sizeof(xiw_ddp_tagged_hdr); i < f.size(); i++)
			r.unexpected += !expected(r.read_back + i - sizeof(xiw_ddp_tagged_hdr), f[i]);
		r.read_back += f.size() - sizeof(xiw_ddp_tagged_hdr);
	}
	return r;
}

// exit_stalled_write, unregister_stalled_write, once the Write is half
// sent: the listener's process exits 2 s after the MPA Reply, or the
// script deletes its device; its connection must end soon after, with
// nothing but a Terminate before the end.
int run_stalled_until_end(int fd, const std::string &which)
{
	const auto start = std::chrono::steady_clock::now();
	const held_read r = read_until_end(fd, [](std::size_t, u8) { return false; });
	const double waited =
		std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	const bool ok = !r.silent && r.read_back == 0;
	std::printf("wire_inject %s: %s%s after %.1f s, %zu octets of Read Responses: %s\n",
		    which.c_str(), r.end.c_str(), r.reset ? " (reset)" : "", waited, r.read_back,
		    ok ? "ok" : "FAIL");
	return ok ? 0 : 1;
}

// Frames ULPDU on TX at the end of OUT.
void append_fpdu(std::vector<u8> &out, mpa_stream &tx, const std::vector<u8> &ulpdu)
{
	const std::vector<u8> f = frame_fpdu(tx, ulpdu.data(), ulpdu.size());
	out.insert(out.end(), f.begin(), f.end());
}

// terminate_last after the MPA exchange (no markers either way): the
// Read Requests, the bad Send, the Sends behind it in a segment of their
// own (xiw drops the rest of the segment it failed in), 1 s, then
// everything xiw sends, parsed once the stream ended.
int run_terminate_last(int fd, const inject_target &t, mpa_stream &tx)
{
	constexpr u32 reads = 4; // the listener's IRD
	constexpr u32 sends_behind = 16;
	constexpr u8 bad_qn = 5;
	std::vector<u8> out;
	auto send_then_wait = [&](std::chrono::milliseconds pause) {
		send_all(fd, out.data(), out.size());
		out.clear();
		std::this_thread::sleep_for(pause);
	};
	auto send_message = [&](u8 qn, u32 msn) {
		xiw_ddp_untagged_hdr h{};
		xiw_ctrl_set(&h.ctrl, XIW_DDP_UNTAGGED_HLEN + first_send_len, 0, 1,
			     XIW_RDMAP_RV1, XIW_OP_SEND);
		xiw_untagged_set(&h, 0, qn, msn, 0);
		std::vector<u8> seg = bytes_of(h);
		for (std::size_t k = 0; k < first_send_len; k++)
			seg.push_back(send_pattern(k));
		append_fpdu(out, tx, seg);
	};
	for (u32 msn = 1; msn <= reads; msn++)
		append_fpdu(out, tx, read_request(t, t.len, msn));
	send_then_wait(std::chrono::milliseconds(500));
	send_message(bad_qn, 1);
	send_then_wait(std::chrono::milliseconds(200));
	for (u32 msn = 1; msn <= sends_behind; msn++)
		send_message(XIW_QN_SEND, msn);
	send_then_wait(std::chrono::milliseconds(1000));

	const held_read r = read_until_end(
		fd, [&t](std::size_t at, u8 b) { return b == pattern(at % t.len); });
	const std::string want = xiw_test::strf("Terminate layer %u type %u code 0x%02x",
						unsigned{XIW_TERM_LAYER_DDP},
						unsigned{XIW_DDP_ETYPE_UNTAGGED},
						unsigned{XIW_DDP_ECODE_UT_INVALID_QN});
	std::printf("wire_inject terminate_last: %zu of %" PRIu64
		    " octets read back, %zu of them unlike the buffer, then %s, then %s",
		    r.read_back, reads * t.len, r.unexpected, r.end.c_str(),
		    r.reset ? "a reset" : "the end of the stream");
	if (r.unexpected || r.read_back != reads * t.len || r.end != want || r.reset) {
		std::printf(": FAIL\n");
		return 1;
	}
	std::printf(": ok\n");
	return 0;
}

// The cases against xiw_frmr_victim.ko that make it take its pages back.
bool frmr_case(const std::string &which)
{
	return which == "frmr_read_after_invalidate" || which == "frmr_read_after_local_inv" ||
	       which == "frmr_atomics_after_invalidate";
}

// A frmr_case after the MPA exchange (no markers either way): the Read
// Request of the whole region and the case's requests behind it, 2 s
// later the Send on which the ULP takes its pages back (with Invalidate
// of the STag unless the ULP invalidates it itself), 2 s later everything
// xiw sends, parsed once the stream ended.
int run_frmr_case(int fd, const inject_target &t, mpa_stream &tx, const std::string &which)
{
	const auto fill = static_cast<u8>(t.word0);
	// The ULP advertised the STag with its accept, but its Register work
	// request runs only once the QP is in RTS, as the connection comes up.
	std::this_thread::sleep_for(std::chrono::seconds(1));
	std::vector<u8> out;
	append_fpdu(out, tx, read_request(t, t.len, 1));
	if (which == "frmr_atomics_after_invalidate") {
		append_fpdu(out, tx, atomic_request(t, XIW_AOP_FETCH_ADD, t.addr, 2));
		append_fpdu(out, tx, atomic_write_request(t, XIW_ATOMIC_WRITE_LEN, t.addr + sizeof(u64), 3));
	}
	send_all(fd, out.data(), out.size());
	std::this_thread::sleep_for(std::chrono::seconds(2));

	const bool local_inv = which == "frmr_read_after_local_inv";
	xiw_ddp_untagged_hdr sh{};
	constexpr std::size_t send_len = 16;
	xiw_ctrl_set(&sh.ctrl, XIW_DDP_UNTAGGED_HLEN + send_len, 0, 1, XIW_RDMAP_RV1,
		     local_inv ? XIW_OP_SEND : XIW_OP_SEND_INV);
	xiw_untagged_set(&sh, local_inv ? 0 : t.rkey, XIW_QN_SEND, 1, 0);
	std::vector<u8> seg = bytes_of(sh);
	seg.resize(seg.size() + send_len, 0x11);
	const std::vector<u8> fr = frame_fpdu(tx, seg.data(), seg.size());
	send_all(fd, fr.data(), fr.size());
	std::this_thread::sleep_for(std::chrono::seconds(2));

	const held_read r = read_until_end(fd, [fill](std::size_t, u8 b) { return b == fill; });
	const std::size_t read_back = r.read_back, reused = r.unexpected;
	const std::string &end = r.end;
	std::printf("wire_inject %s: %zu of %" PRIu64
		    " octets read back, %zu of them from the reused pages, then %s",
		    which.c_str(), read_back, t.len, reused, end.c_str());
	// A Local Invalidate is a work request behind what the transmit path
	// is sending: it may complete after the whole Read Response went, the
	// pages reused only then.  Otherwise the STag died mid-Response.
	if (reused || (read_back >= t.len && !local_inv)) {
		std::printf(": FAIL\n");
		return 1;
	}
	std::printf(": ok\n");
	return 0;
}

// read_before_atomic after the MPA exchange (no CRC, no markers): the Read
// Request of the whole buffer; 1 s later, while its Read Response waits
// for TCP, the FetchAdd of its last word; then the Read Response and the
// Atomic Response, which must both show the word as it was before.
int run_read_before_atomic(int fd, const inject_target &t, mpa_stream &tx, mpa_stream &rx)
{
	const std::vector<u8> rh = read_request(t, t.len);
	const std::vector<u8> fr = frame_fpdu(tx, rh.data(), rh.size());
	send_all(fd, fr.data(), fr.size());
	std::this_thread::sleep_for(std::chrono::seconds(1));
	const std::size_t target = t.len - sizeof(u64);
	const std::vector<u8> ah = atomic_request(t, XIW_AOP_FETCH_ADD, t.addr + target, 2);
	const std::vector<u8> fa = frame_fpdu(tx, ah.data(), ah.size());
	send_all(fd, fa.data(), fa.size());

	const std::vector<u8> got = read_response(fd, rx, t.len);
	const std::vector<u8> f = read_fpdu(fd, rx);
	if (f.empty())
		fail("the connection ended after the Read Response, without the Atomic Response");
	const u64 orig = atomic_original(f);
	close(fd);
	const u64 before = pattern_word(target);
	u64 read_word;
	std::memcpy(&read_word, got.data() + target, sizeof(read_word));
	std::size_t differ = 0;
	for (std::size_t i = 0; i < got.size(); i++)
		differ += got[i] != pattern(i);
	std::printf("wire_inject read_before_atomic: %zu octets read back, %zu unlike the buffer; "
		    "the FetchAdd's target read back as 0x%016" PRIx64 ", original 0x%016" PRIx64
		    " in the Atomic Response, 0x%016" PRIx64 " before",
		    got.size(), differ, read_word, orig, before);
	if (differ || orig != before) {
		std::printf(": FAIL\n");
		return 1;
	}
	std::printf(": ok\n");
	return 0;
}

// read_after_dereg after the MPA exchange (no CRC, no markers): the Read
// Request of the whole buffer, which the listener deregisters and rewrites
// (to pattern2) 2 s later; 4 s after the Request, everything xiw sends.
int run_read_after_dereg(int fd, const inject_target &t, mpa_stream &tx)
{
	const std::vector<u8> rh = read_request(t, t.len);
	const std::vector<u8> fr = frame_fpdu(tx, rh.data(), rh.size());
	send_all(fd, fr.data(), fr.size());
	std::this_thread::sleep_for(std::chrono::seconds(4));
	const held_read r =
		read_until_end(fd, [](std::size_t at, u8 b) { return b == pattern(at); });
	std::printf("wire_inject read_after_dereg: %zu of %" PRIu64
		    " octets read back, %zu of them written after the deregistration, then %s",
		    r.read_back, t.len, r.unexpected, r.end.c_str());
	if (r.unexpected || r.read_back >= t.len) {
		std::printf(": FAIL\n");
		return 1;
	}
	std::printf(": ok\n");
	return 0;
}

// One Send message from RX's stream on FD (untagged, QN 0, up to the
// segment with L), its payload; fails on anything else.
std::vector<u8> read_send_message(int fd, mpa_stream &rx, const char *what)
{
	std::vector<u8> got;
	for (;;) {
		const std::vector<u8> f = read_fpdu(fd, rx);
		if (f.empty())
			fail("the connection ended after %zu octets of %s", got.size(), what);
		xiw_ctrl c{};
		if (f.size() < sizeof(xiw_ddp_untagged_hdr))
			fail("an FPDU of %zu octets in %s", f.size(), what);
		std::memcpy(&c, f.data(), sizeof(c));
		if (xiw_rdmap_opcode(c.rdmap_ctrl) == XIW_OP_TERMINATE && f.size() >= term_fixed)
			fail("%s after %zu octets of %s", terminate_text(f).c_str(), got.size(),
			     what);
		if (xiw_ddp_tagged(c.ddp_ctrl) || xiw_rdmap_opcode(c.rdmap_ctrl) != XIW_OP_SEND)
			fail("an FPDU with RDMAP control 0x%02x in %s", c.rdmap_ctrl, what);
		got.insert(got.end(), f.begin() + sizeof(xiw_ddp_untagged_hdr), f.end());
		if (xiw_ddp_last(c.ddp_ctrl))
			return got;
	}
}

// dereg_after_read after the MPA exchange (no CRC, no markers): 1 s for
// the listener's Sends to fill TCP, the Read Request, then the first Send
// and the Read Response read; the Send telling the listener to
// deregister, 2 s, and the second Send read.
int run_dereg_after_read(int fd, const inject_target &t, mpa_stream &tx, mpa_stream &rx)
{
	std::this_thread::sleep_for(std::chrono::seconds(1));
	const std::vector<u8> rh = read_request(t, t.len);
	std::vector<u8> fr = frame_fpdu(tx, rh.data(), rh.size());
	send_all(fd, fr.data(), fr.size());
	std::this_thread::sleep_for(std::chrono::seconds(1));

	std::size_t wrong = 0;
	const std::vector<u8> first = read_send_message(fd, rx, "the first Send");
	for (std::size_t i = 0; i < first.size(); i++)
		wrong += first[i] != send_pattern(i);
	const std::vector<u8> read = read_response(fd, rx, t.len);
	for (std::size_t i = 0; i < read.size(); i++)
		wrong += read[i] != pattern(i);

	xiw_ddp_untagged_hdr h{};
	xiw_ctrl_set(&h.ctrl, XIW_DDP_UNTAGGED_HLEN + first_send_len, 0, 1, XIW_RDMAP_RV1,
		     XIW_OP_SEND);
	xiw_untagged_set(&h, 0, XIW_QN_SEND, 1, 0);
	std::vector<u8> seg = bytes_of(h);
	for (std::size_t i = 0; i < first_send_len; i++)
		seg.push_back(send_pattern(i));
	fr = frame_fpdu(tx, seg.data(), seg.size());
	send_all(fd, fr.data(), fr.size());
	std::this_thread::sleep_for(std::chrono::seconds(2));

	const std::vector<u8> second = read_send_message(fd, rx, "the second Send");
	for (std::size_t i = 0; i < second.size(); i++)
		wrong += second[i] != send_pattern(held_send_len + i);
	close(fd);
	std::printf("wire_inject dereg_after_read: Sends of %zu and %zu octets around a Read "
		    "Response of %zu, the region deregistered between them; %zu octets unlike "
		    "what was sent",
		    first.size(), second.size(), read.size(), wrong);
	if (wrong || first.size() != held_send_len || second.size() != after_send_len) {
		std::printf(": FAIL\n");
		return 1;
	}
	std::printf(": ok\n");
	return 0;
}

// kernel_ext_unnegotiated after the MPA exchange: 3 s in which nothing may
// arrive.
int run_kernel_ext_unnegotiated(int fd, mpa_stream &rx)
{
	pollfd pfd{fd, POLLIN, 0};
	if (poll(&pfd, 1, 3000) == 0) {
		close(fd);
		std::printf("wire_inject kernel_ext_unnegotiated: nothing received: ok\n");
		return 0;
	}
	const std::vector<u8> f = read_fpdu(fd, rx);
	close(fd);
	std::printf("wire_inject kernel_ext_unnegotiated: ");
	if (f.empty())
		std::printf("the connection ended");
	else if (f.size() >= term_fixed && xiw_rdmap_opcode(f[3]) == XIW_OP_TERMINATE)
		std::printf("%s", terminate_text(f).c_str());
	else
		std::printf("an FPDU with RDMAP control 0x%02x", f.size() > 3 ? f[3] : 0);
	std::printf(": FAIL\n");
	return 1;
}

struct expectation {
	bool any_terminate; // short_immediate: whichever Terminate
	unsigned layer, etype, ecode;
};

int run_inject(const char *addr, const char *port, const std::string &which)
{
	g_case = which.c_str();
	sockaddr_in sa{};
	sa.sin_family = AF_INET;
	sa.sin_port = htons(static_cast<std::uint16_t>(std::atoi(port)));
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		fail("bad address %s", addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket");
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (frmr_case(which) || which == "terminate_last" || read_held_case(which)) {
		// A small window: the Read Response fills xiw's send buffer.
		const int small = 4096;
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	}
	if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)))
		fail("connect to %s:%s: %s", addr, port, std::strerror(errno));

	// RFC 5044 §7.1: M asks for markers on the stream one receives, so
	// the Request's M bit is about xiw->client, the Reply's about
	// client->xiw.
	const bool ask_markers =
		which == "markers_both" || which == "markers_to_peer" || which == "bad_marker";
	const bool want_reply_m =
		which == "markers_both" || which == "markers_from_peer" || which == "bad_marker";

	const bool crc = !read_held_case(which);

	const bool ext = which != "kernel_ext_unnegotiated";

	// MPA Request, RFC 5044 §7.1: revision 1, CRC, the extensions bit.
	xiw_mpa_rr req{};
	std::memcpy(req.key, XIW_MPA_KEY_REQ, XIW_MPA_KEY_LEN);
	req.flags = (crc ? XIW_MPA_FLAG_C : 0) | (ext ? XIW_MPA_FLAG_EXT : 0) |
		    (ask_markers ? XIW_MPA_FLAG_M : 0);
	req.rev = XIW_MPA_REV_V1;
	req.pd_len = xiw_cpu_to_be16(static_cast<std::uint16_t>(which.size() + 1));
	send_all(fd, &req, sizeof(req));
	send_all(fd, which.c_str(), which.size() + 1);

	xiw_mpa_rr rep{};
	if (!recv_all(fd, &rep, sizeof(rep), "the MPA Reply"))
		fail("connection closed instead of an MPA Reply");
	if (std::memcmp(rep.key, XIW_MPA_KEY_REP, XIW_MPA_KEY_LEN))
		fail("the MPA Reply has a wrong key");
	if (rep.flags & XIW_MPA_FLAG_R)
		fail("the connection was rejected (MPA Reply flags 0x%02x)", rep.flags);
	if (ext != bool(rep.flags & XIW_MPA_FLAG_EXT_ACK))
		fail("the MPA Reply (flags 0x%02x) %s the extensions", rep.flags,
		     ext ? "does not acknowledge" : "acknowledges unasked");
	if (rep.rev != XIW_MPA_REV_V1)
		fail("MPA Reply revision %u to a revision 1 Request", rep.rev);
	const bool reply_m = rep.flags & XIW_MPA_FLAG_M;
	// "quit" sends no FPDU: markers or not, it only ends the listener.
	if (which != "quit" && reply_m != want_reply_m)
		fail("the MPA Reply (flags 0x%02x) %s markers, this case needs %s (is "
		     "mpa_markers %s?)",
		     rep.flags, reply_m ? "asks for" : "does not ask for",
		     want_reply_m ? "them" : "none", want_reply_m ? "2" : "0");
	if (!crc && (rep.flags & XIW_MPA_FLAG_C))
		fail("the MPA Reply (flags 0x%02x) asks for the CRC, this case needs none (is "
		     "mpa_crc 0?)",
		     rep.flags);
	std::vector<u8> pd(xiw_be16_to_cpu(rep.pd_len));
	if (!pd.empty())
		recv_all(fd, pd.data(), pd.size(), "the MPA Reply's private data");
	inject_target t{};
	if (pd.size() < sizeof(t))
		fail("%zu octets of private data in the MPA Reply, expected the target", pd.size());
	std::memcpy(&t, pd.data(), sizeof(t));
	if (t.magic != pd_magic)
		fail("the MPA Reply's private data is not the listener's");

	if (which == "quit") {
		close(fd);
		std::printf("wire_inject quit: ok\n");
		return 0;
	}
	// Full Operation Phase starts here in both directions (RFC 5044 §4.3).
	mpa_stream tx{reply_m, crc, 0}, rx{ask_markers, crc, 0};
	if (marker_good_case(which))
		return run_markers(fd, t, tx, rx, which);
	if (which == "read_before_atomic")
		return run_read_before_atomic(fd, t, tx, rx);
	if (which == "kernel_ext_unnegotiated")
		return run_kernel_ext_unnegotiated(fd, rx);
	if (which == "terminate_last")
		return run_terminate_last(fd, t, tx);

	std::vector<u8> sent;
	std::vector<u8> before; // an FPDU that goes first, not quoted
	std::chrono::seconds pause{0};
	expectation want{};
	bool expect_response = false;
	std::uint16_t lead_ptr = 0;
	auto atomic = [&](unsigned aop, u64 to) { sent = atomic_request(t, aop, to); };
	auto atomic_write = [&](u32 len, u64 to) { sent = atomic_write_request(t, len, to); };
	unsigned resp_opcode = XIW_OP_ATOMIC_RESP;
	if (which == "bad_aopcode") {
		atomic(0x5, t.addr);
		want = {false, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ETYPE_REMOTE_OPERATION,
			XIW_RDMAP_ECODE_UNEXPECTED_OPCODE};
	} else if (which == "unaligned_atomic") {
		atomic(XIW_AOP_FETCH_ADD, t.addr + 4);
		want = {false, XIW_TERM_LAYER_RDMAP, XIW_TERM_ATOMIC_MISALIGNED_ETYPE,
			XIW_TERM_ATOMIC_MISALIGNED_ECODE};
	} else if (which == "short_immediate") {
		xiw_ddp_untagged_hdr h{};
		const u8 four[4] = {0xde, 0xad, 0xbe, 0xef};
		xiw_ctrl_set(&h.ctrl, XIW_DDP_UNTAGGED_HLEN + sizeof(four), 0, 1, XIW_RDMAP_RV1,
			     XIW_OP_IMM);
		xiw_untagged_set(&h, 0, XIW_QN_SEND, 1, 0);
		sent = bytes_of(h);
		sent.insert(sent.end(), four, four + sizeof(four));
		want.any_terminate = true;
	} else if (which == "good_fetch_add") {
		atomic(XIW_AOP_FETCH_ADD, t.addr);
		expect_response = true;
	} else if (which == "atomic_write_bad_length") {
		atomic_write(4, t.addr);
		want = {false, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ETYPE_REMOTE_OPERATION,
			XIW_RDMAP_ECODE_CATASTROPHIC_STREAM};
	} else if (which == "atomic_write_good") {
		atomic_write(XIW_ATOMIC_WRITE_LEN, t.addr);
		resp_opcode = XIW_OP_ATOMIC_WRITE_RESP;
		expect_response = true;
	} else if (which == "flush_no_right") {
		xiw_hdr_flush_req h{};
		xiw_ctrl_set(&h.ddp.ctrl, sizeof(h) - XIW_MPA_HDR_LEN, 0, 1, XIW_RDMAP_RV1,
			     XIW_OP_FLUSH_REQ);
		xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, 1, 0);
		h.flush.sink_stag = xiw_cpu_to_be32(t.rkey);
		h.flush.sink_len = xiw_cpu_to_be32(static_cast<u32>(t.len));
		xiw_put_be64(&h.flush.sink_to, t.addr);
		h.flush.flags = xiw_cpu_to_be32(XIW_FLUSH_DISP_G);
		sent = bytes_of(h);
		want = {false, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ETYPE_REMOTE_PROTECTION,
			XIW_RDMAP_ECODE_ACCESS_RIGHTS};
	} else if (send_mo_case(which)) {
		auto send = [&](u32 msn, u32 mo) {
			xiw_ddp_untagged_hdr h{};
			xiw_ctrl_set(&h.ctrl, XIW_DDP_UNTAGGED_HLEN + first_send_len, 0, 1,
				     XIW_RDMAP_RV1, XIW_OP_SEND);
			xiw_untagged_set(&h, 0, XIW_QN_SEND, msn, mo);
			std::vector<u8> seg = bytes_of(h);
			for (std::size_t i = 0; i < first_send_len; i++)
				seg.push_back(send_pattern(mo + i));
			return seg;
		};
		before = send(1, 0);
		sent = send(2, first_send_len);
		want = {false, XIW_TERM_LAYER_DDP, XIW_DDP_ETYPE_UNTAGGED,
			XIW_DDP_ECODE_UT_INVALID_MO};
	} else if (which == "flush_no_type") {
		xiw_hdr_flush_req h{};
		xiw_ctrl_set(&h.ddp.ctrl, sizeof(h) - XIW_MPA_HDR_LEN, 0, 1, XIW_RDMAP_RV1,
			     XIW_OP_FLUSH_REQ);
		xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, 1, 0);
		h.flush.sink_stag = xiw_cpu_to_be32(t.local_stag);
		h.flush.sink_len = xiw_cpu_to_be32(static_cast<u32>(recv_len));
		xiw_put_be64(&h.flush.sink_to, t.local_addr);
		h.flush.flags = 0;
		sent = bytes_of(h);
		want = {false, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ETYPE_REMOTE_PROTECTION,
			XIW_RDMAP_ECODE_ACCESS_RIGHTS};
	} else if (which == "write_qp_denied") {
		std::vector<u8> data(recv_len);
		for (std::size_t i = 0; i < data.size(); i++)
			data[i] = pattern2(i);
		sent = write_segment(t.rkey, t.addr, data.data(), data.size());
		pause = std::chrono::seconds(2);
		want = {false, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ETYPE_REMOTE_PROTECTION,
			XIW_RDMAP_ECODE_ACCESS_RIGHTS};
	} else if (which == "stalled_write" || stalled_end_case(which)) {
		// Header and the first octets of the Write, then silence while
		// the listener deregisters the buffer, then a reset; or while
		// its process exits, then the end of the stream.
		std::vector<u8> data(stalled_write_len);
		for (std::size_t i = 0; i < data.size(); i++)
			data[i] = pattern2(i);
		sent = write_segment(t.rkey, t.addr, data.data(), data.size());
		const std::vector<u8> fpdu = frame_fpdu(tx, sent.data(), sent.size());
		send_all(fd, fpdu.data(),
			 XIW_MPA_HDR_LEN + XIW_DDP_TAGGED_HLEN + stalled_write_sent);
		if (stalled_end_case(which))
			return run_stalled_until_end(fd, which);
		std::this_thread::sleep_for(std::chrono::seconds(8));
		const linger reset{1, 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
		close(fd);
		std::printf("wire_inject %s: reset after %zu of %zu octets: ok\n", which.c_str(),
			    stalled_write_sent, stalled_write_len);
		return 0;
	} else if (frmr_case(which)) {
		return run_frmr_case(fd, t, tx, which);
	} else if (which == "read_after_dereg") {
		return run_read_after_dereg(fd, t, tx);
	} else if (which == "dereg_after_read") {
		return run_dereg_after_read(fd, t, tx, rx);
	} else if (which == "bad_marker") {
		// The first FPDU starts at P=0, so it has a leading marker,
		// whose FPDUPTR must be 0 (RFC 5044 §4.3).  4 is wrong with
		// its two low bits clear, which a receiver must ignore.
		std::vector<u8> data(recv_len);
		for (std::size_t i = 0; i < data.size(); i++)
			data[i] = pattern2(i);
		sent = write_segment(t.rkey, t.addr, data.data(), data.size());
		lead_ptr = 4;
		want = {false, XIW_TERM_LAYER_LLP, XIW_LLP_ETYPE_MPA, XIW_LLP_ECODE_MARKER};
	} else {
		std::fprintf(stderr, "unknown case %s\n", which.c_str());
		return 2;
	}
	std::this_thread::sleep_for(pause);
	if (!before.empty()) {
		const std::vector<u8> first = frame_fpdu(tx, before.data(), before.size());
		send_all(fd, first.data(), first.size());
	}
	const std::vector<u8> fpdu = frame_fpdu(tx, sent.data(), sent.size(), lead_ptr);
	send_all(fd, fpdu.data(), fpdu.size());

	const std::vector<u8> f = read_fpdu(fd, rx);
	const char *resp_name =
		resp_opcode == XIW_OP_ATOMIC_RESP ? "Atomic Response" : "Atomic Write Response";
	if (f.empty())
		fail("the connection ended without %s%s", expect_response ? "the " : "a ",
		     expect_response ? resp_name : "Terminate");
	if (f.size() < sizeof(xiw_ctrl))
		fail("an FPDU of %zu octets", f.size());
	const unsigned opcode = xiw_rdmap_opcode(f[3]);

	if (expect_response) {
		if (opcode == XIW_OP_TERMINATE && f.size() >= term_fixed)
			fail("%s instead of the %s", terminate_text(f).c_str(), resp_name);
		if (resp_opcode == XIW_OP_ATOMIC_WRITE_RESP) {
			check_untagged(f, resp_opcode, XIW_QN_RESPONSE, resp_name);
			// draft-talpey §2.3.3: no payload on QN 3.
			if (f.size() != sizeof(xiw_ddp_untagged_hdr))
				fail("Atomic Write Response of %zu octets, expected %zu (no payload)",
				     f.size(), sizeof(xiw_ddp_untagged_hdr));
			close(fd);
			std::printf("wire_inject %s: atomic write response: ok\n", which.c_str());
			return 0;
		}
		const u64 orig = atomic_original(f);
		if (orig != t.word0)
			fail("Atomic Response with original value 0x%016" PRIx64
			     ", the target held 0x%016" PRIx64,
			     orig, t.word0);
		close(fd);
		std::printf("wire_inject %s: atomic response id 0x%08x original 0x%016" PRIx64
			    ": ok\n",
			    which.c_str(), request_id, orig);
		return 0;
	}

	check_untagged(f, XIW_OP_TERMINATE, XIW_QN_TERMINATE, "Terminate");
	if (f.size() < term_fixed)
		fail("Terminate of %zu octets, without its control word", f.size());
	const xiw_hdr_terminate term = terminate_of(f);
	const unsigned layer = xiw_term_layer(term.term.ctrl);
	const unsigned etype = xiw_term_etype(term.term.ctrl);
	const unsigned ecode = xiw_term_ecode(term.term.ctrl);
	const unsigned flags = xiw_term_flags(term.term.ctrl);
	// RFC 5040 §4.8: what the Terminate says it copies must be what we
	// sent (markers excluded, which bad_marker's leading one is).
	if (flags & (XIW_TERM_FLAG_M | XIW_TERM_FLAG_D)) {
		if (f.size() < term_fixed + 2)
			fail("Terminate with flags 0x%04x but no DDP Segment Length", flags);
		if ((flags & XIW_TERM_FLAG_M) &&
		    xiw_be16_to_cpu(term.term.ddp_seg_len) != sent.size() - XIW_MPA_HDR_LEN)
			fail("Terminate: DDP Segment Length %u, the segment had %zu octets",
			     xiw_be16_to_cpu(term.term.ddp_seg_len), sent.size() - XIW_MPA_HDR_LEN);
		// The header quoted is the segment's own: 14 octets if tagged.
		const std::size_t hlen = xiw_ddp_tagged(sent[XIW_DDP_HDR_OFFSET])
						 ? XIW_DDP_TAGGED_HLEN
						 : XIW_DDP_UNTAGGED_HLEN;
		const std::size_t copied = std::min<std::size_t>(f.size() - term_fixed - 2, hlen);
		if ((flags & XIW_TERM_FLAG_D) &&
		    std::memcmp(term.term.ddp_hdr, sent.data() + XIW_DDP_HDR_OFFSET,
				std::min(copied, sent.size() - XIW_DDP_HDR_OFFSET)))
			fail("Terminate: the copied DDP header is not the one sent");
	}
	std::printf("wire_inject %s: terminate layer %u type %u code 0x%02x (flags 0x%04x)", which.c_str(),
		    layer, etype, ecode, flags);
	if (!want.any_terminate &&
	    (layer != want.layer || etype != want.etype || ecode != want.ecode)) {
		std::printf(": FAIL: expected layer %u type %u code 0x%02x\n", want.layer, want.etype,
			    want.ecode);
		return 1;
	}
	std::printf(": ok\n");
	close(fd);
	return 0;
}

// =============================================================================
// A peer that never answers, and destroying a QP that connects to it
// =============================================================================

int run_mute(const char *addr, const char *port)
{
	g_case = "mute";
	sockaddr_in sa{};
	sa.sin_family = AF_INET;
	sa.sin_port = htons(static_cast<std::uint16_t>(std::atoi(port)));
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		fail("bad address %s", addr);
	int l = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (l < 0 || bind(l, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) || listen(l, 16))
		fail("listen on %s:%s: %s", addr, port, std::strerror(errno));
	std::printf("wire_inject mute: listening on %s:%s\n", addr, port);
	std::fflush(stdout);
	// Reads whatever comes (an MPA Request), answers nothing; ends when
	// the peer closes the connection.
	int c = accept(l, nullptr, nullptr);
	if (c < 0)
		fail("accept: %s", std::strerror(errno));
	char junk[512];
	while (recv(c, junk, sizeof(junk), 0) > 0)
		;
	close(c);
	close(l);
	std::printf("wire_inject mute: connection closed by the peer: ok\n");
	return 0;
}

int run_destroy_connecting(const char *addr, const char *port)
{
	g_case = "destroy_connecting";
	rdma_event_channel *ch = rdma_create_event_channel();
	rdma_cm_id *id = nullptr;
	if (!ch || rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP))
		die("rdma_create_id");
	rdma_addrinfo *res = resolve(addr, port, false);
	rdma_cm_event *ev = nullptr;
	auto expect = [&](rdma_cm_event_type want) {
		if (rdma_get_cm_event(ch, &ev))
			die("rdma_get_cm_event");
		const rdma_cm_event_type got = ev->event;
		rdma_ack_cm_event(ev);
		if (got != want)
			fail("event %s, expected %s", rdma_event_str(got), rdma_event_str(want));
	};
	if (rdma_resolve_addr(id, nullptr, res->ai_dst_addr, 2000))
		die("rdma_resolve_addr");
	expect(RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	expect(RDMA_CM_EVENT_ROUTE_RESOLVED);
	ibv_qp_init_attr attr = xiw_test::rc_qp_attr(4, 4);
	if (rdma_create_qp(id, nullptr, &attr))
		die("rdma_create_qp");
	rdma_conn_param p = xiw_test::conn_param();
	if (rdma_connect(id, &p))
		die("rdma_connect");
	std::this_thread::sleep_for(std::chrono::seconds(1));
	const auto t0 = std::chrono::steady_clock::now();
	rdma_destroy_qp(id);
	const double took =
		std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	// The connect ends, whatever librdmacm calls it.
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	const rdma_cm_event_type got = ev->event;
	rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	rdma_freeaddrinfo(res);
	std::printf("wire_inject destroy_connecting: destroy took %.2f s, then %s", took,
		    rdma_event_str(got));
	if (took > 3.0 || got == RDMA_CM_EVENT_ESTABLISHED) {
		std::printf(": FAIL\n");
		return 1;
	}
	std::printf(": ok\n");
	return 0;
}

// =============================================================================
// Self-check: the marker framing against itself and the hand-made layout
// =============================================================================

int run_selfcheck()
{
	g_case = "selfcheck";
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair");
	const inject_target t{pd_magic, 0x1234, 0x10000, buf_size, 0, 0, 0, 0};
	for (const bool markers : {false, true}) {
		mpa_stream tx{markers}, rx{markers};
		std::vector<std::vector<u8>> segs;
		const std::vector<u8> wire = good_stream(tx, t, segs);
		if (wire.size() != (markers ? 2196u : 2176u))
			fail("the good cases' FPDUs take %zu octets", wire.size());
		if (markers) {
			// good_stream's table: marker at P -> FPDUPTR.
			const std::uint16_t ptr[] = {0, 508, 12, 524, 1036};
			for (std::size_t i = 0; i < std::size(ptr); i++) {
				const u8 *m = wire.data() + i * XIW_MPA_MARKER_INTERVAL;
				if (m[0] || m[1] || (m[2] << 8 | m[3]) != ptr[i])
					fail("marker at P=%zu: %02x%02x %02x%02x, expected "
					     "FPDUPTR %u",
					     i * XIW_MPA_MARKER_INTERVAL, m[0], m[1], m[2], m[3],
					     ptr[i]);
			}
		}
		send_all(sv[0], wire.data(), wire.size());
		for (const auto &s : segs)
			if (read_fpdu(sv[1], rx) != s)
				fail("an FPDU of the good cases does not round-trip (markers %d)",
				     markers);
		// Then every ULPDU length, so that markers fall at every
		// 4-aligned place of FPDUs of every pad.
		for (unsigned n = 1; n <= 1200; n++) {
			std::vector<u8> s(XIW_MPA_HDR_LEN + n);
			s[0] = static_cast<u8>(n >> 8);
			s[1] = static_cast<u8>(n);
			for (std::size_t i = 2; i < s.size(); i++)
				s[i] = pattern(i + n);
			const std::vector<u8> fr = frame_fpdu(tx, s.data(), s.size());
			send_all(sv[0], fr.data(), fr.size());
			if (read_fpdu(sv[1], rx) != s || rx.pos != tx.pos)
				fail("an FPDU of %u octets does not round-trip (markers %d)", n,
				     markers);
		}
	}
	close(sv[0]);
	close(sv[1]);
	std::printf("wire_inject selfcheck: ok\n");
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	if (argc == 2 && std::strcmp(argv[1], "selfcheck") == 0)
		return run_selfcheck();
	if (argc == 4 && std::strcmp(argv[1], "listen") == 0)
		return run_listener(argv[2], argv[3]);
	if (argc == 4 && std::strcmp(argv[1], "mute") == 0)
		return run_mute(argv[2], argv[3]);
	if (argc == 4 && std::strcmp(argv[1], "destroy_connecting") == 0)
		return run_destroy_connecting(argv[2], argv[3]);
	if (argc == 4)
		return run_inject(argv[1], argv[2], argv[3]);
	std::fprintf(stderr,
		     "usage: %s listen|mute|destroy_connecting ADDR PORT | %s ADDR PORT CASE | "
		     "%s selfcheck\n",
		     argv[0], argv[0], argv[0]);
	return 2;
}
