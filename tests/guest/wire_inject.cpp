// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// A fake iWARP peer over a plain TCP socket, to drive exact bytes at xiw:
//   xiw_wire_inject listen ADDR PORT
//   xiw_wire_inject ADDR PORT CASE
// "listen" is an rdma_cm server on the xiw device: per connection one QP,
// one posted receive and a 4 KiB buffer registered with remote read, write
// and atomic rights but no flush or verify right, described in the accept
// private data (the MPA Reply's private data).  It serves connection after
// connection; once the peer has gone it prints
//   wire_inject server: CASE: N bytes changed, M receives completed: ok
// (FAIL if the buffer or the receive changed where they must not), and
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
//   quit              MPA only; ends the listener
// and prints "wire_inject CASE: terminate layer L type T code C: ok".
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <xiw/crc32c.h>
#include <xiw/wire.h>

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
#include <string>
#include <vector>

namespace {

using xiw_test::die;
using xiw_test::wait_disconnect;
using xiw_test::resolve;
using u64 = std::uint64_t;

constexpr std::uint32_t pd_magic = 0x78697749; // "xiwI"
constexpr std::size_t buf_size = 4096;
constexpr std::size_t recv_len = 64;
constexpr std::uint8_t recv_fill = 0xee;
constexpr u64 good_add = 0x0000000100000003ull;
constexpr u64 atomic_write_value = 0xfeedc0de12345678ull;
constexpr std::uint32_t request_id = 0xa70c0001u;

// Listener -> client in the accept private data.
struct inject_target {
	std::uint32_t magic;
	std::uint32_t rkey;
	u64 addr;
	u64 len;
	u64 word0; // the value at addr
};

std::uint8_t pattern(std::size_t i)
{
	return static_cast<std::uint8_t>(i * 7 + 3 + (i >> 8) * 13);
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

		auto *buf = static_cast<std::uint8_t *>(std::aligned_alloc(4096, buf_size));
		std::uint8_t rbuf[recv_len];
		if (!buf)
			die("aligned_alloc");
		for (std::size_t i = 0; i < buf_size; i++)
			buf[i] = pattern(i);
		std::memset(rbuf, recv_fill, sizeof(rbuf));
		u64 word0;
		std::memcpy(&word0, buf, sizeof(word0));
		ibv_mr *mr = ibv_reg_mr(id->pd, buf, buf_size,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		ibv_mr *rmr = ibv_reg_mr(id->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
		if (!mr || !rmr)
			die("ibv_reg_mr");
		if (rdma_post_recv(id, nullptr, rbuf, sizeof(rbuf), rmr))
			die("rdma_post_recv");

		inject_target t{pd_magic, mr->rkey, reinterpret_cast<std::uintptr_t>(buf), buf_size,
				word0};
		rdma_conn_param p{};
		p.responder_resources = 4;
		p.initiator_depth = 4;
		p.private_data = &t;
		p.private_data_len = sizeof(t);
		bool ok = true;
		std::string why;
		if (rdma_accept(id, &p)) {
			ok = false;
			why = std::string("rdma_accept: ") + std::strerror(errno);
		} else if (!wait_disconnect(id, 60000)) {
			ok = false;
			why = "the peer did not go away within 60 s";
		}

		// What the peer may have changed: only the word a good FetchAdd
		// (by exactly its addend) or a good Atomic Write (to exactly its
		// value) targets.
		const bool good_fa = which == "good_fetch_add";
		const bool good_aw = which == "atomic_write_good";
		const bool good = good_fa || good_aw;
		const u64 want0 = good_fa ? word0 + good_add : atomic_write_value;
		std::size_t changed = 0;
		for (std::size_t i = good ? 8 : 0; i < buf_size; i++)
			changed += buf[i] != pattern(i);
		u64 now0;
		std::memcpy(&now0, buf, sizeof(now0));
		if (good && now0 != want0) {
			ok = false;
			char msg[128];
			std::snprintf(msg, sizeof(msg),
				      "the %s target is 0x%016" PRIx64 ", expected 0x%016" PRIx64,
				      good_fa ? "FetchAdd" : "Atomic Write", now0, want0);
			why = msg;
		}
		for (std::uint8_t b : rbuf)
			changed += b != recv_fill;
		std::size_t received = 0;
		ibv_wc wc{};
		while (ibv_poll_cq(id->recv_cq, 1, &wc) == 1)
			received += wc.status == IBV_WC_SUCCESS;
		if (changed || received)
			ok = false;
		std::printf("wire_inject server: %s: %zu bytes changed, %zu receives completed: %s%s%s\n",
			    which.c_str(), changed, received, ok ? "ok" : "FAIL",
			    why.empty() ? "" : ": ", why.c_str());
		std::fflush(stdout);
		failures += !ok;

		rdma_disconnect(id);
		ibv_dereg_mr(mr);
		ibv_dereg_mr(rmr);
		rdma_destroy_ep(id);
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
	const auto *b = static_cast<const std::uint8_t *>(p);
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
	auto *b = static_cast<std::uint8_t *>(p);
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

// HDR (from ULPDU_Length on) with its pad and CRC trailer appended.
std::vector<std::uint8_t> make_fpdu(const void *hdr, std::size_t len)
{
	std::vector<std::uint8_t> f(static_cast<const std::uint8_t *>(hdr),
				    static_cast<const std::uint8_t *>(hdr) + len);
	const auto ulpdu = static_cast<unsigned>(len - XIW_MPA_HDR_LEN);
	f.resize(len + xiw_mpa_pad_len(ulpdu), 0);
	xiw_mpa_trailer t{};
	xiw_mpa_put_crc(&t, xiw_crc32c(f.data(), f.size()));
	const auto *tb = reinterpret_cast<const std::uint8_t *>(&t);
	f.insert(f.end(), tb, tb + sizeof(t));
	return f;
}

// One FPDU from xiw: ULPDU_Length + ULPDU (pad and CRC checked and
// dropped); empty at the end of the stream.
std::vector<std::uint8_t> read_fpdu(int fd)
{
	std::uint8_t lenb[2];
	if (!recv_all(fd, lenb, 2, "an FPDU"))
		return {};
	const unsigned ulpdu = static_cast<unsigned>(lenb[0]) << 8 | lenb[1];
	std::vector<std::uint8_t> f(2 + ulpdu + xiw_mpa_pad_len(ulpdu));
	f[0] = lenb[0];
	f[1] = lenb[1];
	recv_all(fd, f.data() + 2, f.size() - 2, "an FPDU");
	xiw_mpa_trailer t{};
	recv_all(fd, &t, sizeof(t), "an FPDU's CRC");
	const std::uint32_t want = xiw_crc32c(f.data(), f.size());
	if (xiw_mpa_get_crc(&t) != want)
		fail("FPDU of %u octets with CRC 0x%08x, computed 0x%08x", ulpdu,
		     xiw_mpa_get_crc(&t), want);
	f.resize(2 + ulpdu);
	return f;
}

// Checks the DDP/RDMAP framing of an untagged FPDU F from xiw.
void check_untagged(const std::vector<std::uint8_t> &f, unsigned opcode, unsigned qn,
		    const char *what)
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
	if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)))
		fail("connect to %s:%s: %s", addr, port, std::strerror(errno));

	// MPA Request, RFC 5044 §7.1: revision 1, CRC, the extensions bit.
	xiw_mpa_rr req{};
	std::memcpy(req.key, XIW_MPA_KEY_REQ, XIW_MPA_KEY_LEN);
	req.flags = XIW_MPA_FLAG_C | XIW_MPA_FLAG_EXT;
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
	if (!(rep.flags & XIW_MPA_FLAG_EXT_ACK))
		fail("the MPA Reply (flags 0x%02x) does not acknowledge the extensions",
		     rep.flags);
	if (rep.rev != XIW_MPA_REV_V1)
		fail("MPA Reply revision %u to a revision 1 Request", rep.rev);
	if (rep.flags & XIW_MPA_FLAG_M)
		fail("the MPA Reply asks for markers, which were not offered");
	std::vector<std::uint8_t> pd(xiw_be16_to_cpu(rep.pd_len));
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

	std::vector<std::uint8_t> sent;
	expectation want{};
	bool expect_response = false;
	auto atomic = [&](unsigned aop, u64 to) {
		xiw_hdr_atomic_req h{};
		xiw_ctrl_set(&h.ddp.ctrl, sizeof(h) - XIW_MPA_HDR_LEN, 0, 1, XIW_RDMAP_RV1,
			     XIW_OP_ATOMIC_REQ);
		xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, 1, 0);
		h.atomic.aopcode = xiw_cpu_to_be32(aop);
		h.atomic.req_id = xiw_cpu_to_be32(request_id);
		h.atomic.stag = xiw_cpu_to_be32(t.rkey);
		xiw_put_be64(&h.atomic.to, to);
		xiw_put_be64(&h.atomic.add_swap, good_add);
		xiw_put_be64(&h.atomic.add_swap_mask, 0); // a plain 64-bit add
		xiw_put_be64(&h.atomic.compare, 0);	  // unused: RFC 7306 §5.2.1
		xiw_put_be64(&h.atomic.compare_mask, XIW_ATOMIC_MASK_UNUSED);
		sent.assign(reinterpret_cast<std::uint8_t *>(&h),
			    reinterpret_cast<std::uint8_t *>(&h) + sizeof(h));
	};
	// draft-talpey §2.3.1: Data Sink STag, Length (must be 8), Tagged
	// Offset, Data (big-endian).
	auto atomic_write = [&](std::uint32_t len, u64 to) {
		xiw_hdr_atomic_write_req h{};
		xiw_ctrl_set(&h.ddp.ctrl, sizeof(h) - XIW_MPA_HDR_LEN, 0, 1, XIW_RDMAP_RV1,
			     XIW_OP_ATOMIC_WRITE_REQ);
		xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, 1, 0);
		h.awrite.sink_stag = xiw_cpu_to_be32(t.rkey);
		h.awrite.sink_len = xiw_cpu_to_be32(len);
		xiw_put_be64(&h.awrite.sink_to, to);
		xiw_put_be64(&h.awrite.data, atomic_write_value);
		sent.assign(reinterpret_cast<std::uint8_t *>(&h),
			    reinterpret_cast<std::uint8_t *>(&h) + sizeof(h));
	};
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
		const std::uint8_t four[4] = {0xde, 0xad, 0xbe, 0xef};
		xiw_ctrl_set(&h.ctrl, XIW_DDP_UNTAGGED_HLEN + sizeof(four), 0, 1, XIW_RDMAP_RV1,
			     XIW_OP_IMM);
		xiw_untagged_set(&h, 0, XIW_QN_SEND, 1, 0);
		sent.assign(reinterpret_cast<std::uint8_t *>(&h),
			    reinterpret_cast<std::uint8_t *>(&h) + sizeof(h));
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
		h.flush.sink_len = xiw_cpu_to_be32(static_cast<std::uint32_t>(t.len));
		xiw_put_be64(&h.flush.sink_to, t.addr);
		h.flush.flags = xiw_cpu_to_be32(XIW_FLUSH_G);
		sent.assign(reinterpret_cast<std::uint8_t *>(&h),
			    reinterpret_cast<std::uint8_t *>(&h) + sizeof(h));
		want = {false, XIW_TERM_LAYER_RDMAP, XIW_RDMAP_ETYPE_REMOTE_PROTECTION,
			XIW_RDMAP_ECODE_ACCESS_RIGHTS};
	} else {
		std::fprintf(stderr, "unknown case %s\n", which.c_str());
		return 2;
	}
	const std::vector<std::uint8_t> fpdu = make_fpdu(sent.data(), sent.size());
	send_all(fd, fpdu.data(), fpdu.size());

	const std::vector<std::uint8_t> f = read_fpdu(fd);
	const char *resp_name =
		resp_opcode == XIW_OP_ATOMIC_RESP ? "Atomic Response" : "Atomic Write Response";
	if (f.empty())
		fail("the connection ended without %s%s", expect_response ? "the " : "a ",
		     expect_response ? resp_name : "Terminate");
	if (f.size() < sizeof(xiw_ctrl))
		fail("an FPDU of %zu octets", f.size());
	const unsigned opcode = xiw_rdmap_opcode(f[3]);
	// A Terminate: DDP header and its 4-octet control word at least.
	constexpr std::size_t term_fixed = sizeof(xiw_ddp_untagged_hdr) + 4;

	if (expect_response) {
		if (opcode == XIW_OP_TERMINATE && f.size() >= term_fixed) {
			xiw_hdr_terminate term{};
			std::memcpy(&term, f.data(), std::min(f.size(), sizeof(term)));
			fail("Terminate layer %u type %u code 0x%02x instead of the %s",
			     xiw_term_layer(term.term.ctrl), xiw_term_etype(term.term.ctrl),
			     xiw_term_ecode(term.term.ctrl), resp_name);
		}
		check_untagged(f, resp_opcode, XIW_QN_RESPONSE, resp_name);
		if (resp_opcode == XIW_OP_ATOMIC_WRITE_RESP) {
			// draft-talpey §2.3.3: no payload on QN 3.
			if (f.size() != sizeof(xiw_ddp_untagged_hdr))
				fail("Atomic Write Response of %zu octets, expected %zu (no payload)",
				     f.size(), sizeof(xiw_ddp_untagged_hdr));
			close(fd);
			std::printf("wire_inject %s: atomic write response: ok\n", which.c_str());
			return 0;
		}
		if (f.size() != sizeof(xiw_hdr_atomic_resp))
			fail("Atomic Response of %zu octets, expected %zu", f.size(),
			     sizeof(xiw_hdr_atomic_resp));
		xiw_hdr_atomic_resp r{};
		std::memcpy(&r, f.data(), sizeof(r));
		const std::uint32_t id = xiw_be32_to_cpu(r.atomic.req_id);
		const u64 orig = xiw_get_be64(&r.atomic.orig);
		if (id != request_id)
			fail("Atomic Response for request id 0x%08x, expected 0x%08x", id,
			     request_id);
		if (orig != t.word0)
			fail("Atomic Response with original value 0x%016" PRIx64
			     ", the target held 0x%016" PRIx64,
			     orig, t.word0);
		close(fd);
		std::printf("wire_inject %s: atomic response id 0x%08x original 0x%016" PRIx64
			    ": ok\n",
			    which.c_str(), id, orig);
		return 0;
	}

	check_untagged(f, XIW_OP_TERMINATE, XIW_QN_TERMINATE, "Terminate");
	if (f.size() < term_fixed)
		fail("Terminate of %zu octets, without its control word", f.size());
	xiw_hdr_terminate term{};
	std::memcpy(&term, f.data(), std::min(f.size(), sizeof(term)));
	const unsigned layer = xiw_term_layer(term.term.ctrl);
	const unsigned etype = xiw_term_etype(term.term.ctrl);
	const unsigned ecode = xiw_term_ecode(term.term.ctrl);
	const unsigned flags = xiw_term_flags(term.term.ctrl);
	// RFC 5040 §4.8: what the Terminate says it copies must be what we sent.
	if (flags & (XIW_TERM_FLAG_M | XIW_TERM_FLAG_D)) {
		if (f.size() < term_fixed + 2)
			fail("Terminate with flags 0x%04x but no DDP Segment Length", flags);
		if ((flags & XIW_TERM_FLAG_M) &&
		    xiw_be16_to_cpu(term.term.ddp_seg_len) != sent.size() - XIW_MPA_HDR_LEN)
			fail("Terminate: DDP Segment Length %u, the segment had %zu octets",
			     xiw_be16_to_cpu(term.term.ddp_seg_len), sent.size() - XIW_MPA_HDR_LEN);
		const std::size_t copied =
			std::min<std::size_t>(f.size() - term_fixed - 2, XIW_DDP_UNTAGGED_HLEN);
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

} // namespace

int main(int argc, char **argv)
{
	if (argc == 4 && std::strcmp(argv[1], "listen") == 0)
		return run_listener(argv[2], argv[3]);
	if (argc == 4)
		return run_inject(argv[1], argv[2], argv[3]);
	std::fprintf(stderr, "usage: %s listen ADDR PORT | %s ADDR PORT CASE\n", argv[0], argv[0]);
	return 2;
}
