// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// RDMA Flush, RDMA Verify and Atomic Write (draft-talpey-rdma-commit-02)
// through ibv_post_send, ibv_qp_ex and <infiniband/xiwdv.h>, between two
// iWARP hosts over librdmacm; and what memory registration allows.
//   xiw_commit_test server [-f FILE] ADDR PORT
//   xiw_commit_test client ADDR PORT CASE...
//   xiw_commit_test caps DEVICE
//   xiw_commit_test registration DEVICE FILE
// The client runs each CASE on a connection of its own (the connect
// private data names the case) and prints "commit: CASE: ok", or fails with
// exit status 1 and says why.  The server exports a 2 MiB anonymous buffer
// and a 1 MiB MAP_SHARED mapping of FILE, each registered with several sets
// of rights, in the accept private data, and follows the client's control
// messages; it serves connection after connection until a client sends
// CASE "quit", then exits 0, or 1 if any check it made failed.  FILE
// (default: a new file in $TMPDIR or /tmp, removed at exit) is made 1 MiB
// long if it is shorter; it must allow a writable shared mapping, which
// rules out the guest's 9p shares ($XIW_OUT): use tmpfs or a disk.
//
// CASE (client):
//   pipeline          RDMA Write of a record, Flush (persistent, range),
//                     Verify with the expected CRC32c and again with the
//                     expected SHA-256, Atomic Write of a pointer, posted
//                     back to back: all complete in order with the right
//                     opcodes and hashes; then Flush global, whole-region
//                     Flushes and an XIWDV_WR_EXTENDED Flush; the server
//                     finds record and pointer in memory and in the file
//   pipeline_bad_hash, pipeline_bad_sha256
//                     the same with a wrong expected CRC32c (SHA-256): that
//                     Verify ends in IBV_WC_REM_OP_ERR, what follows is
//                     flushed, and the server finds the record in place but
//                     the pointer not written
//   qp_ex             the pipeline through ibv_qp_ex: ibv_wr_rdma_write,
//                     xiwdv_wr_post_ext Flush and Verify, ibv_wr_atomic_write
//   verify_hash       Verify without an expected hash returns the CRC32c
//                     and SHA-256 computed here, for 1, 4096 and 100000
//                     bytes at several offsets, of anonymous memory and of
//                     the file; with the right expected hash it succeeds
//   flush_no_right, flush_type_no_right, verify_no_right,
//   atomic_write_no_right, atomic_write_unaligned
//                     remote errors: the expected completion status, then
//                     flushes; the server reports "N bytes changed"
//   unsupported       toward a peer without the extensions (upstream siw)
//                     Flush, Atomic Write and extended Verify/Flush fail to
//                     post with EOPNOTSUPP and the QP keeps working for
//                     Send, Write and Read
//   durable           (tests/durability) RDMA Write of record A at 64 KiB
//                     of the file, Flush (persistent, range) of it, then
//                     RDMA Write of record B at 512 KiB without a Flush;
//                     both are checked in the server's memory.  Each record
//                     is 64 lines of "xiw flush_durability TAG record A
//                     (flushed)" (resp. "record B (not flushed)"),
//                     printf "%-63.63s\n", TAG from $XIW_COMMIT_TAG.
//   quit              ends the server
// caps DEVICE: xiwdv_query_caps() reports all seven XIWDV_CAP_* bits.
// registration DEVICE FILE: ibv_reg_mr with the flush and verify rights on
// anonymous memory and on a mapping of FILE (see run_registration()).
#include <infiniband/verbs.h>
#include <infiniband/xiwdv.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <xiw/crc32c.h>

#include "rdma_test_util.h"
#include "sha256.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using xiw_test::die;
using xiw_test::resolve;
using xiw_test::wait_disconnect;
using u64 = std::uint64_t;
using u32 = std::uint32_t;
using clock_type = std::chrono::steady_clock;
using bytes = std::vector<std::uint8_t>;

// ---- layout ------------------------------------------------------------------

constexpr u32 pd_magic = 0x78697743; // "xiwC"
// Server: the anonymous buffer and the file mapping.
constexpr std::size_t buf_size = 2u << 20;
constexpr std::size_t file_size = 1u << 20;
// Server buffer: the target of the error cases; Verify's data.
constexpr std::size_t target_off = 0;
constexpr std::size_t buf_verify_off = 64u << 10;
// Server file: pointers, records, Verify's data.
constexpr std::size_t ptr_off = 0;	   // pipeline
constexpr std::size_t qpx_ptr_off = 64;	   // qp_ex
constexpr std::size_t durable_a_off = 64u << 10;
constexpr std::size_t durable_b_off = 512u << 10;
constexpr std::size_t durable_len = 4096;
constexpr std::size_t rec_off = 128u << 10; // pipeline
constexpr std::size_t qpx_rec_off = 256u << 10;
constexpr u32 rec_len = 64u << 10;
constexpr u32 rec_seed = 0x7ec0;
constexpr std::size_t file_verify_off = 384u << 10;
constexpr u64 ptr_value = 0x786977c0ffee0001ull;
constexpr u64 qpx_ptr_value = 0x786977c0ffee0002ull;
constexpr u32 error_seed = 0x5eed;

// Client buffer: what Writes send, hash results (64-byte slots, the hash at
// +16 between guard bytes), expected hashes, what Reads fetch.
constexpr std::size_t client_buf_size = 4u << 20;
constexpr std::size_t stage_off = 0;
constexpr std::size_t out_off = 1u << 20;
constexpr std::size_t exp_off = (1u << 20) + (32u << 10);
constexpr std::size_t back_off = 2u << 20;
constexpr std::size_t slot_size = 64;
constexpr std::size_t slot_hash = 16;
constexpr std::uint8_t guard = 0xcd;

constexpr u32 crc_len = 4;
constexpr u32 sha_len = 32;

constexpr u32 client_send_depth = 64;
constexpr u32 client_recv_depth = 8;
constexpr u32 server_send_depth = 16;
constexpr u32 server_recv_depth = 16;
constexpr int op_timeout_ms = 60000;

static_assert(file_verify_off + 4093 + 100000 <= durable_b_off);
static_assert(qpx_rec_off + rec_len <= file_verify_off);
static_assert(rec_off + rec_len <= qpx_rec_off);
static_assert(durable_a_off + durable_len <= rec_off);
static_assert(buf_verify_off + 4093 + 100000 <= buf_size);

// ---- cases -------------------------------------------------------------------

enum class test_case : u32 {
	pipeline = 1,
	pipeline_bad_hash,
	pipeline_bad_sha256,
	qp_ex,
	verify_hash,
	flush_no_right,
	flush_type_no_right,
	verify_no_right,
	atomic_write_no_right,
	atomic_write_unaligned,
	unsupported,
	durable,
	quit,
};

struct case_name {
	test_case c;
	const char *name;
};

constexpr case_name case_names[] = {
	{test_case::pipeline, "pipeline"},
	{test_case::pipeline_bad_hash, "pipeline_bad_hash"},
	{test_case::pipeline_bad_sha256, "pipeline_bad_sha256"},
	{test_case::qp_ex, "qp_ex"},
	{test_case::verify_hash, "verify_hash"},
	{test_case::flush_no_right, "flush_no_right"},
	{test_case::flush_type_no_right, "flush_type_no_right"},
	{test_case::verify_no_right, "verify_no_right"},
	{test_case::atomic_write_no_right, "atomic_write_no_right"},
	{test_case::atomic_write_unaligned, "atomic_write_unaligned"},
	{test_case::unsupported, "unsupported"},
	{test_case::durable, "durable"},
	{test_case::quit, "quit"},
};

const char *name_of(test_case c)
{
	for (const auto &n : case_names)
		if (n.c == c)
			return n.name;
	return "?";
}

bool is_bad_hash_case(test_case c)
{
	return c == test_case::pipeline_bad_hash || c == test_case::pipeline_bad_sha256;
}

// Cases after which the connection is dead: no control channel, the
// server checks its memory once the client has gone.
bool is_error_case(test_case c)
{
	return is_bad_hash_case(c) || c == test_case::flush_no_right ||
	       c == test_case::flush_type_no_right || c == test_case::verify_no_right ||
	       c == test_case::atomic_write_no_right || c == test_case::atomic_write_unaligned;
}

// Client -> server in the connect private data.
struct connect_pd {
	u32 magic;
	test_case which;
};

// Server -> client in the accept private data.  The rkeys other than
// rkey_rw and rkey_ro are 0 unless the server's device is xiw.
struct accept_pd {
	u32 magic;
	u32 xiw; // the server's device is xiw
	u64 buf_addr;
	u64 buf_len;
	u64 file_addr;
	u64 file_len;
	u32 rkey_rw;   // buffer: remote read and write only
	u32 rkey_ro;   // buffer: remote read only
	u32 rkey_crc;  // buffer: rw, flush global, verify CRC32c
	u32 rkey_sha;  // buffer: rw, flush global, verify SHA-256
	u32 frkey_crc; // file: rw, flush global and persistent, verify CRC32c
	u32 frkey_sha; // file: rw, flush global and persistent, verify SHA-256
};

// ---- control messages ----------------------------------------------------------

enum class op : u32 { check = 1, check64, bye, result };
enum region : u32 { region_buf = 0, region_file = 1 };

struct ctrl_msg {
	op what;
	u32 where; // enum region
	u64 off;
	u64 len;
	u64 value; // check64
	u32 crc;   // check: CRC32c of the LEN bytes at OFF
	u32 ok;	   // result
	char text[160];
};

// ---- failure reporting -----------------------------------------------------------

const char *g_case = "setup";

[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	xiw_test::vfail("commit", g_case, fmt, ap);
}

__attribute__((format(printf, 1, 2))) std::string strf(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	std::vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return msg;
}

[[noreturn]] void die_rc(const char *what, int rc)
{
	std::fprintf(stderr, "%s: %s\n", what, std::strerror(rc));
	std::exit(1);
}

const char *status_str(ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

std::string hex(const std::uint8_t *p, std::size_t n)
{
	std::string s;
	for (std::size_t i = 0; i < n; i++)
		s += strf("%02x", p[i]);
	return s;
}

// ---- data, hashes ----------------------------------------------------------------

std::uint8_t pattern(u32 seed, std::size_t i)
{
	u32 x = (seed + 1) * 0x9e3779b1u ^ static_cast<u32>(i) * 0x85ebca77u;
	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return static_cast<std::uint8_t>(x ^ (x >> 24));
}

void fill(std::uint8_t *p, std::size_t n, u32 seed)
{
	for (std::size_t i = 0; i < n; i++)
		p[i] = pattern(seed, i);
}

u64 load64(const std::uint8_t *p)
{
	u64 v;
	std::memcpy(&v, p, sizeof(v));
	return v;
}

void store64(std::uint8_t *p, u64 v)
{
	std::memcpy(p, &v, sizeof(v));
}

// The Verify hash of CRC32c: the standard CRC32c value, least significant
// octet first (what the kernel's "crc32c" shash produces).
bytes hash_crc32c(const void *p, std::size_t n)
{
	const u32 c = xiw_crc32c(p, n);
	return {static_cast<std::uint8_t>(c), static_cast<std::uint8_t>(c >> 8),
		static_cast<std::uint8_t>(c >> 16), static_cast<std::uint8_t>(c >> 24)};
}

bytes hash_sha256(const void *p, std::size_t n)
{
	const auto d = xiw_test::sha256::of(p, n);
	return bytes(d.begin(), d.end());
}

// The published test vectors, so that a wrong local hash is not blamed on
// the device.
void self_test()
{
	const char *abc = "abc";
	const auto want_abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
	const auto want_empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
	const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	const auto want_448 = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
	bytes h = hash_sha256(abc, 3);
	bytes e = hash_sha256("", 0);
	bytes l = hash_sha256(m448, std::strlen(m448));
	if (hex(h.data(), h.size()) != want_abc || hex(e.data(), e.size()) != want_empty ||
	    hex(l.data(), l.size()) != want_448) {
		std::fprintf(stderr, "commit: the local SHA-256 fails the FIPS 180-4 vectors\n");
		std::exit(2);
	}
	// RFC 3720 B.4 / the usual check value of CRC32c.
	if (xiw_crc32c("123456789", 9) != 0xe3069283u) {
		std::fprintf(stderr, "commit: the local CRC32c fails its check value\n");
		std::exit(2);
	}
}

// The 4096 bytes of a durable record: 64 lines of TEXT, each 63 characters
// (padded with spaces, cut if longer) and a newline.
bytes durable_record(const std::string &text)
{
	bytes r;
	char line[65];
	std::snprintf(line, sizeof(line), "%-63.63s\n", text.c_str());
	for (int i = 0; i < 64; i++)
		r.insert(r.end(), line, line + 64);
	return r;
}

// ---- completion polling ------------------------------------------------------------

// One completion of CQ, or false after TIMEOUT_MS.  Spins briefly, then
// naps: the guest has two CPUs and the kernel side needs them.
bool poll_one(ibv_cq *cq, ibv_wc &wc, int timeout_ms)
{
	const auto until = clock_type::now() + std::chrono::milliseconds(timeout_ms);
	for (unsigned spin = 0;; spin++) {
		int n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n == 1)
			return true;
		if (spin < 200)
			continue;
		if (clock_type::now() > until)
			return false;
		std::this_thread::sleep_for(std::chrono::microseconds(20));
	}
}

void post_recv(ibv_qp *qp, u64 wr_id, void *addr, u32 len, u32 lkey)
{
	ibv_sge sge{reinterpret_cast<std::uintptr_t>(addr), len, lkey};
	ibv_recv_wr wr{}, *bad = nullptr;
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (int rc = ibv_post_recv(qp, &wr, &bad))
		die_rc("ibv_post_recv", rc);
}

// =============================================================================
// Server
// =============================================================================

constexpr u64 ctrl_wr_id = 1;

struct server_file {
	std::string path;
	int fd = -1;
	std::uint8_t *map = nullptr;
	bool remove = false;
};

struct server_conn {
	rdma_cm_id *id = nullptr;
	test_case which{};
	bool xiw = false;
	std::uint8_t *buf = nullptr;
	server_file *file = nullptr;
	ibv_mr *mr_rw = nullptr, *mr_ro = nullptr, *mr_crc = nullptr, *mr_sha = nullptr;
	ibv_mr *fmr_crc = nullptr, *fmr_sha = nullptr;
	struct {
		ctrl_msg send;
		ctrl_msg recv;
	} ctrl{};
	ibv_mr *ctrl_mr = nullptr;

	void post_ctrl_recv()
	{
		post_recv(id->qp, ctrl_wr_id, &ctrl.recv, sizeof(ctrl.recv), ctrl_mr->lkey);
	}

	bool send(const ctrl_msg &m)
	{
		ctrl.send = m;
		ibv_sge sge{reinterpret_cast<std::uintptr_t>(&ctrl.send), sizeof(ctrl.send),
			    ctrl_mr->lkey};
		ibv_send_wr wr{}, *bad = nullptr;
		wr.wr_id = ctrl_wr_id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (int rc = ibv_post_send(id->qp, &wr, &bad))
			die_rc("ibv_post_send", rc);
		ibv_wc wc{};
		if (!poll_one(id->send_cq, wc, op_timeout_ms)) {
			std::printf("commit server: control send timed out\n");
			return false;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			std::printf("commit server: control send: %s\n", status_str(wc.status));
			return false;
		}
		return true;
	}

	std::uint8_t *base(u32 where) const { return where == region_file ? file->map : buf; }
	std::size_t size(u32 where) const { return where == region_file ? file_size : buf_size; }
};

int g_failures = 0;
int g_connections = 0;

void server_fail(const server_conn &c, const std::string &what)
{
	std::printf("commit server: FAIL: %s: %s\n", name_of(c.which), what.c_str());
	std::fflush(stdout);
	g_failures++;
}

// "check": the CRC32c of a range of memory; for the file also what
// read(2) returns, which must be the same pages.
std::string serve_check(server_conn &c, const ctrl_msg &m)
{
	if (m.where > region_file || m.off > c.size(m.where) || m.len > c.size(m.where) - m.off)
		return "check out of range";
	const char *what = m.where == region_file ? "file" : "buffer";
	if (m.what == op::check64) {
		if (m.len != 8)
			return "check64 of other than 8 bytes";
		const u64 got = load64(c.base(m.where) + m.off);
		if (got != m.value)
			return strf("the 8 bytes at %s offset %" PRIu64 " hold 0x%016" PRIx64
				    ", expected 0x%016" PRIx64,
				    what, static_cast<u64>(m.off), got, static_cast<u64>(m.value));
	} else {
		const u32 got = xiw_crc32c(c.base(m.where) + m.off, m.len);
		if (got != m.crc)
			return strf("CRC32c of %" PRIu64 " bytes at %s offset %" PRIu64
				    " is 0x%08x, expected 0x%08x",
				    static_cast<u64>(m.len), what, static_cast<u64>(m.off), got, m.crc);
	}
	if (m.where == region_file) {
		bytes f(m.len);
		const ssize_t n = pread(c.file->fd, f.data(), f.size(), static_cast<off_t>(m.off));
		if (n != static_cast<ssize_t>(f.size()))
			return strf("pread of the file: %s", n < 0 ? std::strerror(errno) : "short");
		if (std::memcmp(f.data(), c.file->map + m.off, f.size()))
			return strf("read(2) of the file at offset %" PRIu64
				    " differs from the mapping the MR covers",
				    static_cast<u64>(m.off));
	}
	return "";
}

// Control loop of a case, until "bye" or the client is gone.
void serve_ctrl(server_conn &c)
{
	for (;;) {
		ibv_wc wc{};
		if (!poll_one(c.id->recv_cq, wc, 600000)) {
			server_fail(c, "no control message for 10 minutes");
			return;
		}
		if (wc.status != IBV_WC_SUCCESS)
			return; // flushed: the client went away
		const ctrl_msg m = c.ctrl.recv;
		ctrl_msg r{};
		r.what = op::result;
		r.ok = 1;
		switch (m.what) {
		case op::check:
		case op::check64:
			if (std::string e = serve_check(c, m); !e.empty()) {
				r.ok = 0;
				std::snprintf(r.text, sizeof(r.text), "%s", e.c_str());
				server_fail(c, e);
			}
			c.post_ctrl_recv();
			break;
		case op::bye:
			c.send(r);
			return;
		default:
			r.ok = 0;
			std::snprintf(r.text, sizeof(r.text), "unknown control message %u",
				      static_cast<unsigned>(m.what));
			c.post_ctrl_recv();
			break;
		}
		if (!c.send(r))
			return;
	}
}

// The file as an error case leaves it: the pattern, and for the bad-hash
// pipelines the record, which the Write before the failing Verify placed.
std::uint8_t file_expected(test_case which, std::size_t i)
{
	if (is_bad_hash_case(which) && i >= rec_off && i < rec_off + rec_len)
		return pattern(rec_seed, i - rec_off);
	return pattern(error_seed + 1, i);
}

// Error cases: once the client has gone, nothing in the buffer and the file
// may have changed but what the case placed before the error.
void serve_error(server_conn &c)
{
	if (!wait_disconnect(c.id, 120000)) {
		server_fail(c, "the client did not disconnect within 120 s");
		return;
	}
	std::size_t changed = 0;
	for (std::size_t i = 0; i < buf_size; i++)
		changed += c.buf[i] != pattern(error_seed, i);
	for (std::size_t i = 0; i < file_size; i++)
		changed += c.file->map[i] != file_expected(c.which, i);
	std::string detail;
	if (is_bad_hash_case(c.which)) {
		std::size_t rec_bad = 0;
		for (std::size_t i = 0; i < rec_len; i++)
			rec_bad += c.file->map[rec_off + i] != pattern(rec_seed, i);
		std::uint8_t initial[8];
		for (std::size_t i = 0; i < 8; i++)
			initial[i] = file_expected(c.which, ptr_off + i);
		const u64 ptr = load64(c.file->map + ptr_off);
		detail = strf(" (record %s, pointer %s)", rec_bad ? "NOT in place" : "in place",
			      ptr == load64(initial) ? "not written"
			      : ptr == ptr_value     ? "WRITTEN"
						     : "CHANGED");
	}
	std::printf("commit server: %s: connection closed, %zu bytes changed%s\n", name_of(c.which),
		    changed, detail.c_str());
	std::fflush(stdout);
	if (changed)
		g_failures++;
}

ibv_mr *reg(server_conn &c, void *p, std::size_t n, int access, const char *what)
{
	ibv_mr *mr = ibv_reg_mr(c.id->pd, p, n, access);
	if (!mr)
		server_fail(c, strf("ibv_reg_mr of %s: %s", what, std::strerror(errno)));
	return mr;
}

// Registers what the case may use; false if any registration failed.
bool register_all(server_conn &c)
{
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	c.mr_rw = reg(c, c.buf, buf_size, rw, "the buffer (read, write)");
	c.mr_ro = reg(c, c.buf, buf_size, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
		      "the buffer (read only)");
	if (!c.mr_rw || !c.mr_ro)
		return false;
	if (!c.xiw) // a peer without the extensions gets plain memory only
		return true;
	c.mr_crc = reg(c, c.buf, buf_size,
		       rw | XIWDV_ACCESS_FLUSH_GLOBAL | XIWDV_ACCESS_VERIFY_CRC32C,
		       "the buffer (flush global, verify CRC32c)");
	c.mr_sha = reg(c, c.buf, buf_size,
		       rw | XIWDV_ACCESS_FLUSH_GLOBAL | XIWDV_ACCESS_VERIFY_SHA256,
		       "the buffer (flush global, verify SHA-256)");
	const int fl = XIWDV_ACCESS_FLUSH_GLOBAL | XIWDV_ACCESS_FLUSH_PERSISTENT;
	c.fmr_crc = reg(c, c.file->map, file_size, rw | fl | XIWDV_ACCESS_VERIFY_CRC32C,
			"the file mapping (flush global and persistent, verify CRC32c)");
	c.fmr_sha = reg(c, c.file->map, file_size, rw | fl | XIWDV_ACCESS_VERIFY_SHA256,
			"the file mapping (flush global and persistent, verify SHA-256)");
	return c.mr_crc && c.mr_sha && c.fmr_crc && c.fmr_sha;
}

void deregister_all(server_conn &c)
{
	for (ibv_mr *mr : {c.mr_rw, c.mr_ro, c.mr_crc, c.mr_sha, c.fmr_crc, c.fmr_sha})
		if (mr && ibv_dereg_mr(mr))
			server_fail(c, "ibv_dereg_mr failed");
}

bool open_file(server_file &f, const char *path)
{
	if (path) {
		f.path = path;
	} else {
		const char *tmp = std::getenv("TMPDIR");
		f.path = strf("%s/xiw_commit_test-%d.dat", tmp && *tmp ? tmp : "/tmp",
			      static_cast<int>(getpid()));
		f.remove = true;
	}
	f.fd = open(f.path.c_str(), O_RDWR | O_CREAT, 0600);
	struct stat st {};
	if (f.fd < 0 || fstat(f.fd, &st)) {
		std::printf("commit server: %s: %s\n", f.path.c_str(), std::strerror(errno));
		return false;
	}
	if (!S_ISREG(st.st_mode)) {
		std::printf("commit server: %s is not a regular file\n", f.path.c_str());
		return false;
	}
	if (st.st_size < static_cast<off_t>(file_size) &&
	    ftruncate(f.fd, static_cast<off_t>(file_size))) {
		std::printf("commit server: ftruncate %s: %s\n", f.path.c_str(),
			    std::strerror(errno));
		return false;
	}
	void *m = mmap(nullptr, file_size, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
	if (m == MAP_FAILED) {
		std::printf("commit server: writable MAP_SHARED mapping of %s: %s (a 9p share "
			    "such as $XIW_OUT cannot be mapped so)\n",
			    f.path.c_str(), std::strerror(errno));
		return false;
	}
	f.map = static_cast<std::uint8_t *>(m);
	return true;
}

int run_server(const char *path, const char *addr, const char *port)
{
	server_file file;
	if (!open_file(file, path))
		return 1;
	rdma_addrinfo *res = resolve(addr, port, true);
	rdma_cm_id *listen_id = nullptr;
	ibv_qp_init_attr attr = xiw_test::rc_qp_attr(server_send_depth, server_recv_depth);
	if (rdma_create_ep(&listen_id, res, nullptr, &attr))
		die("rdma_create_ep");
	if (rdma_listen(listen_id, 4))
		die("rdma_listen");
	std::printf("commit server: listening on %s:%s, file %s\n", addr, port, file.path.c_str());
	std::fflush(stdout);

	for (;;) {
		server_conn c;
		if (rdma_get_request(listen_id, &c.id))
			die("rdma_get_request");
		connect_pd req{};
		const rdma_conn_param &cp = c.id->event->param.conn;
		if (cp.private_data && cp.private_data_len >= sizeof(req))
			std::memcpy(&req, cp.private_data, sizeof(req));
		if (req.magic != pd_magic) {
			std::printf("commit server: connect request without our private data, "
				    "rejected\n");
			rdma_reject(c.id, nullptr, 0);
			rdma_destroy_ep(c.id);
			continue;
		}
		c.which = req.which;
		c.xiw = xiwdv_is_xiw_context(c.id->verbs);
		c.file = &file;
		g_connections++;

		void *b = std::aligned_alloc(4096, buf_size);
		if (!b)
			die("aligned_alloc");
		c.buf = static_cast<std::uint8_t *>(b);
		std::memset(c.buf, 0, buf_size);
		if (is_error_case(c.which)) {
			fill(c.buf, buf_size, error_seed);
			fill(c.file->map, file_size, error_seed + 1);
		}
		c.ctrl_mr = rdma_reg_msgs(c.id, &c.ctrl, sizeof(c.ctrl));
		if (!c.ctrl_mr)
			die("rdma_reg_msgs");
		const bool registered = register_all(c);

		const bool ctrl = !is_error_case(c.which) && c.which != test_case::quit;
		if (ctrl && registered)
			c.post_ctrl_recv();
		bool peer_gone = false;
		accept_pd t{};
		t.magic = pd_magic;
		t.xiw = c.xiw;
		t.buf_addr = reinterpret_cast<std::uintptr_t>(c.buf);
		t.buf_len = buf_size;
		t.file_addr = reinterpret_cast<std::uintptr_t>(c.file->map);
		t.file_len = file_size;
		auto key = [](ibv_mr *mr) { return mr ? mr->rkey : 0u; };
		t.rkey_rw = key(c.mr_rw);
		t.rkey_ro = key(c.mr_ro);
		t.rkey_crc = key(c.mr_crc);
		t.rkey_sha = key(c.mr_sha);
		t.frkey_crc = key(c.fmr_crc);
		t.frkey_sha = key(c.fmr_sha);
		rdma_conn_param p{};
		p.responder_resources = 16;
		p.initiator_depth = 16;
		p.retry_count = 7;
		p.private_data = &t;
		p.private_data_len = sizeof(t);
		if (!registered) {
			rdma_reject(c.id, nullptr, 0);
			peer_gone = true;
		} else if (rdma_accept(c.id, &p)) {
			server_fail(c, strf("rdma_accept: %s", std::strerror(errno)));
		} else if (c.which == test_case::quit) {
			peer_gone = wait_disconnect(c.id, 30000);
		} else if (ctrl) {
			serve_ctrl(c);
		} else {
			serve_error(c);
			peer_gone = true;
		}
		// A synchronous rdma_disconnect() waits for a DISCONNECTED
		// event, and an id gets only one: not after the peer's.
		if (!peer_gone)
			rdma_disconnect(c.id);
		rdma_dereg_mr(c.ctrl_mr);
		deregister_all(c);
		rdma_destroy_ep(c.id);
		std::free(c.buf);
		if (c.which == test_case::quit) {
			munmap(file.map, file_size);
			close(file.fd);
			if (file.remove)
				unlink(file.path.c_str());
			std::printf("commit server: %d connections, %d failures\n", g_connections,
				    g_failures);
			return g_failures ? 1 : 0;
		}
	}
}

// =============================================================================
// Client
// =============================================================================

constexpr u64 ctrl_send_wr_id = 0xc0;
constexpr u64 ctrl_recv_wr_id = 0xc1;

struct client {
	rdma_cm_id *id = nullptr;
	ibv_qp_ex *qpx = nullptr; // set: control sends go through ibv_wr_*()
	std::uint8_t *buf = nullptr;
	ibv_mr *mr = nullptr;
	struct {
		ctrl_msg send;
		ctrl_msg recv[client_recv_depth];
	} ctrl{};
	ibv_mr *ctrl_mr = nullptr;
	accept_pd target{};

	void open(const char *addr, const char *port, test_case which, bool qp_ex)
	{
		rdma_addrinfo *res = resolve(addr, port, false);
		ibv_qp_init_attr attr = xiw_test::rc_qp_attr(client_send_depth, client_recv_depth);
		attr.cap.max_send_sge = 2; // Verify: the result and the expected hash
		if (rdma_create_ep(&id, res, nullptr, qp_ex ? nullptr : &attr))
			die("rdma_create_ep");
		rdma_freeaddrinfo(res);
		if (qp_ex) {
			ibv_qp_init_attr_ex ax{};
			ax.qp_type = IBV_QPT_RC;
			ax.cap = attr.cap;
			ax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			ax.pd = id->pd;
			ax.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
					    IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE |
					    XIWDV_QP_EX_WITH_EXTENSIONS;
			if (rdma_create_qp_ex(id, &ax))
				fail("rdma_create_qp_ex with send_ops_flags (write, read, send, "
				     "atomic write, XIWDV_QP_EX_WITH_EXTENSIONS): %s",
				     std::strerror(errno));
			qpx = ibv_qp_to_qp_ex(id->qp);
			if (!qpx)
				fail("ibv_qp_to_qp_ex returned NULL");
		}
		void *b = std::aligned_alloc(4096, client_buf_size);
		if (!b)
			die("aligned_alloc");
		buf = static_cast<std::uint8_t *>(b);
		std::memset(buf, 0, client_buf_size);
		mr = ibv_reg_mr(id->pd, buf, client_buf_size, IBV_ACCESS_LOCAL_WRITE);
		ctrl_mr = rdma_reg_msgs(id, &ctrl, sizeof(ctrl));
		if (!mr || !ctrl_mr)
			die("register memory");
		for (u32 i = 0; i < client_recv_depth; i++)
			post_ctrl_recv(i);

		connect_pd req{pd_magic, which};
		rdma_conn_param p{};
		p.responder_resources = 16;
		p.initiator_depth = 16;
		p.retry_count = 7;
		p.private_data = &req;
		p.private_data_len = sizeof(req);
		if (rdma_connect(id, &p))
			fail("rdma_connect: %s (the server says why it rejected, if it did)",
			     std::strerror(errno));
		const rdma_conn_param &cp = id->event->param.conn;
		if (!cp.private_data || cp.private_data_len < sizeof(target))
			fail("no target description in the accept private data (%u bytes)",
			     cp.private_data_len);
		std::memcpy(&target, cp.private_data, sizeof(target));
		if (target.magic != pd_magic || target.buf_len < buf_size ||
		    target.file_len < file_size)
			fail("bad target description from the server");
	}

	void close()
	{
		rdma_disconnect(id);
		rdma_dereg_mr(ctrl_mr);
		ibv_dereg_mr(mr);
		rdma_destroy_ep(id);
		std::free(buf);
		id = nullptr;
		qpx = nullptr;
	}

	// The server must be xiw for the extension rkeys to mean anything.
	void require_xiw() const
	{
		if (!target.xiw)
			fail("the server's device is not xiw: no flush or verify rights to use");
	}

	u64 raddr(u32 where, std::size_t off) const
	{
		return (where == region_file ? target.file_addr : target.buf_addr) + off;
	}
	u64 laddr(std::size_t off) const { return reinterpret_cast<std::uintptr_t>(buf + off); }
	u64 out_addr(unsigned slot) const { return laddr(out_off + slot * slot_size + slot_hash); }
	u64 exp_addr(unsigned slot) const { return laddr(exp_off + slot * slot_size); }

	void post_ctrl_recv(u32 slot)
	{
		post_recv(id->qp, ctrl_recv_wr_id + slot, &ctrl.recv[slot], sizeof(ctrl_msg),
			  ctrl_mr->lkey);
	}

	ibv_wc wait_send(const char *what)
	{
		ibv_wc wc{};
		if (!poll_one(id->send_cq, wc, op_timeout_ms))
			fail("no completion for %s within %d s", what, op_timeout_ms / 1000);
		return wc;
	}

	void wait_ok(const char *what, ibv_wc_opcode opc)
	{
		ibv_wc wc = wait_send(what);
		if (wc.status != IBV_WC_SUCCESS)
			fail("%s: %s", what, status_str(wc.status));
		if (wc.opcode != opc)
			fail("%s: wc opcode %d, expected %d", what, wc.opcode, opc);
	}

	void complete_qpx(const char *what)
	{
		if (int rc = ibv_wr_complete(qpx))
			fail("ibv_wr_complete of %s: %s", what, std::strerror(rc));
	}

	void send_ctrl(const ctrl_msg &m)
	{
		ctrl.send = m;
		const u64 a = reinterpret_cast<std::uintptr_t>(&ctrl.send);
		if (qpx) {
			ibv_wr_start(qpx);
			qpx->wr_id = ctrl_send_wr_id;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_send(qpx);
			ibv_wr_set_sge(qpx, ctrl_mr->lkey, a, sizeof(ctrl_msg));
			complete_qpx("control send");
		} else {
			ibv_sge sge{a, sizeof(ctrl_msg), ctrl_mr->lkey};
			ibv_send_wr wr{}, *bad = nullptr;
			wr.wr_id = ctrl_send_wr_id;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			if (int rc = ibv_post_send(id->qp, &wr, &bad))
				fail("ibv_post_send of a control send: %s", std::strerror(rc));
		}
		wait_ok("control send", IBV_WC_SEND);
	}

	ctrl_msg recv_ctrl()
	{
		ibv_wc wc{};
		if (!poll_one(id->recv_cq, wc, 2 * op_timeout_ms))
			fail("no control message from the server within %d s",
			     2 * op_timeout_ms / 1000);
		if (wc.status != IBV_WC_SUCCESS)
			fail("control receive: %s", status_str(wc.status));
		if (wc.wr_id < ctrl_recv_wr_id || wc.wr_id >= ctrl_recv_wr_id + client_recv_depth)
			fail("unexpected receive completion %" PRIu64, static_cast<u64>(wc.wr_id));
		const auto slot = static_cast<u32>(wc.wr_id - ctrl_recv_wr_id);
		ctrl_msg m = ctrl.recv[slot];
		post_ctrl_recv(slot);
		return m;
	}

	void expect_result(const char *what)
	{
		ctrl_msg r = recv_ctrl();
		r.text[sizeof(r.text) - 1] = 0;
		if (r.what != op::result)
			fail("%s: control message %u from the server, expected a result", what,
			     static_cast<unsigned>(r.what));
		if (!r.ok)
			fail("%s: the server says: %s", what, r.text);
	}

	// The server compares the CRC32c of LEN bytes at OFF of WHERE with that
	// of EXPECTED (and, for the file, what read(2) returns).
	void check(u32 where, std::size_t off, const std::uint8_t *expected, std::size_t len,
		   const char *what)
	{
		ctrl_msg m{};
		m.what = op::check;
		m.where = where;
		m.off = off;
		m.len = len;
		m.crc = xiw_crc32c(expected, len);
		send_ctrl(m);
		expect_result(what);
	}

	void check64(u32 where, std::size_t off, u64 value, const char *what)
	{
		ctrl_msg m{};
		m.what = op::check64;
		m.where = where;
		m.off = off;
		m.len = 8;
		m.value = value;
		send_ctrl(m);
		expect_result(what);
	}

	void bye()
	{
		ctrl_msg m{};
		m.what = op::bye;
		send_ctrl(m);
		expect_result("bye");
	}

	// RDMA Write (WRITE true) or Read of LEN bytes between local offset
	// LOFF and RADDR, waited for.
	void one_sided(bool write, std::size_t loff, u64 raddr, u32 len, u32 rkey)
	{
		const char *what = write ? "RDMA Write" : "RDMA Read";
		if (qpx) {
			ibv_wr_start(qpx);
			qpx->wr_id = 1;
			qpx->wr_flags = IBV_SEND_SIGNALED;
			if (write)
				ibv_wr_rdma_write(qpx, rkey, raddr);
			else
				ibv_wr_rdma_read(qpx, rkey, raddr);
			ibv_wr_set_sge(qpx, mr->lkey, laddr(loff), len);
			complete_qpx(what);
		} else {
			ibv_sge sge{laddr(loff), len, mr->lkey};
			ibv_send_wr wr{}, *bad = nullptr;
			wr.wr_id = 1;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.rdma.remote_addr = raddr;
			wr.wr.rdma.rkey = rkey;
			if (int rc = ibv_post_send(id->qp, &wr, &bad))
				fail("ibv_post_send of an %s: %s", what, std::strerror(rc));
		}
		wait_ok(what, write ? IBV_WC_RDMA_WRITE : IBV_WC_RDMA_READ);
	}

	// Hash result slots: guard bytes around the hash, expected hashes.
	void clear_out(unsigned slot) { std::memset(buf + out_off + slot * slot_size, guard, slot_size); }
	void put_expected(unsigned slot, const bytes &h)
	{
		std::memcpy(buf + exp_off + slot * slot_size, h.data(), h.size());
	}
	void check_out(unsigned slot, const bytes &want, const char *what)
	{
		const std::uint8_t *s = buf + out_off + slot * slot_size;
		if (std::memcmp(s + slot_hash, want.data(), want.size()))
			fail("%s: returned hash %s, computed here %s", what,
			     hex(s + slot_hash, want.size()).c_str(),
			     hex(want.data(), want.size()).c_str());
		for (std::size_t i = 0; i < slot_size; i++)
			if ((i < slot_hash || i >= slot_hash + want.size()) && s[i] != guard)
				fail("%s: wrote outside the %zu bytes of its result SGE", what,
				     want.size());
	}
};

// ---- work requests posted together -------------------------------------------------

struct want_wc {
	std::string what;
	ibv_wc_status status;
	ibv_wc_opcode opcode; // checked on success
	int byte_len;	      // checked on success if >= 0
};

// Work requests built in place (the extension ones point into the batch),
// posted as one chain; wr_id is the index.
class batch {
public:
	static constexpr std::size_t max = 16;
	batch() = default;
	batch(const batch &) = delete;
	batch &operator=(const batch &) = delete;

	void write(const std::string &what, const client &cl, std::size_t loff, u32 len, u32 rkey,
		   u64 raddr)
	{
		ibv_send_wr &w = add(what, IBV_WC_RDMA_WRITE);
		sge_[n_ - 1][0] = {cl.laddr(loff), len, cl.mr->lkey};
		w.sg_list = sge_[n_ - 1].data();
		w.num_sge = 1;
		w.opcode = IBV_WR_RDMA_WRITE;
		w.wr.rdma.remote_addr = raddr;
		w.wr.rdma.rkey = rkey;
	}

	void read8(const std::string &what, const client &cl, u32 rkey, u64 raddr)
	{
		ibv_send_wr &w = add(what, IBV_WC_RDMA_READ);
		sge_[n_ - 1][0] = {cl.laddr(back_off), 8, cl.mr->lkey};
		w.sg_list = sge_[n_ - 1].data();
		w.num_sge = 1;
		w.opcode = IBV_WR_RDMA_READ;
		w.wr.rdma.remote_addr = raddr;
		w.wr.rdma.rkey = rkey;
	}

	void flush(const std::string &what, u32 rkey, u64 raddr, u64 len, unsigned type,
		   unsigned level)
	{
		xiwdv_wr_flush(&add(what, XIWDV_WC_FLUSH), rkey, raddr, len, type, level);
	}

	// The same through XIWDV_WR_EXTENDED.
	void flush_ext(const std::string &what, u32 rkey, u64 raddr, u64 len, unsigned type,
		       unsigned level)
	{
		ibv_send_wr &w = add(what, XIWDV_WC_FLUSH);
		xiwdv_ext_flush(&ext_[n_ - 1], rkey, raddr, len, type, level);
		xiwdv_wr_set_ext(&w, &ext_[n_ - 1]);
	}

	void atomic_write(const std::string &what, u32 rkey, u64 raddr, u64 value)
	{
		xiwdv_wr_atomic_write(&add(what, IBV_WC_ATOMIC_WRITE), rkey, raddr, value);
	}

	// Verify of LEN bytes at RADDR: the hash (HASH_LEN bytes) into result
	// slot OUT; with an expected hash from slot EXPECTED unless it is -1.
	void verify(const std::string &what, const client &cl, u32 rkey, u64 raddr, u32 len,
		    u32 hash_len, unsigned out, int expected)
	{
		ibv_send_wr &w = add(what, XIWDV_WC_VERIFY, static_cast<int>(hash_len));
		xiwdv_ext_verify(&ext_[n_ - 1], rkey, raddr, len);
		xiwdv_wr_set_ext(&w, &ext_[n_ - 1]);
		auto &s = sge_[n_ - 1];
		s[0] = {cl.out_addr(out), hash_len, cl.mr->lkey};
		w.sg_list = s.data();
		w.num_sge = 1;
		if (expected >= 0) {
			s[1] = {cl.exp_addr(static_cast<unsigned>(expected)), hash_len, cl.mr->lkey};
			w.num_sge = 2;
		}
	}

	void post(client &cl)
	{
		for (std::size_t i = 0; i + 1 < n_; i++)
			wr_[i].next = &wr_[i + 1];
		ibv_send_wr *bad = nullptr;
		if (int rc = ibv_post_send(cl.id->qp, &wr_[0], &bad)) {
			const std::size_t at = bad ? static_cast<std::size_t>(bad - &wr_[0]) : n_;
			fail("ibv_post_send of [%s]: %s at work request %zu (%s)", names().c_str(),
			     std::strerror(rc), at, at < n_ ? wants[at].what.c_str() : "?");
		}
	}

	std::string names() const
	{
		std::string s;
		for (std::size_t i = 0; i < n_; i++)
			s += (i ? ", " : "") + wants[i].what;
		return s;
	}

	std::vector<want_wc> wants;

private:
	ibv_send_wr &add(const std::string &what, ibv_wc_opcode opc, int byte_len = -1)
	{
		if (n_ == max)
			fail("batch too long");
		ibv_send_wr &w = wr_[n_++];
		w = {};
		w.wr_id = n_ - 1;
		w.send_flags = IBV_SEND_SIGNALED;
		wants.push_back({what, IBV_WC_SUCCESS, opc, byte_len});
		return w;
	}

	std::array<ibv_send_wr, max> wr_{};
	std::array<xiwdv_wr_ext, max> ext_{};
	std::array<std::array<ibv_sge, 2>, max> sge_{};
	std::size_t n_ = 0;
};

// The completions of WANT, in order, with their status (and on success the
// opcode and, where given, byte_len).
void expect_wcs(client &cl, const std::vector<want_wc> &want)
{
	for (std::size_t i = 0; i < want.size(); i++) {
		const want_wc &w = want[i];
		ibv_wc wc = cl.wait_send(w.what.c_str());
		if (wc.wr_id != i)
			fail("completion of work request %" PRIu64 " (%s) where %zu (%s) was next",
			     static_cast<u64>(wc.wr_id),
			     wc.wr_id < want.size() ? want[wc.wr_id].what.c_str() : "?", i,
			     w.what.c_str());
		if (wc.status != w.status)
			fail("%s: %s, expected %s", w.what.c_str(), status_str(wc.status),
			     status_str(w.status));
		if (wc.status != IBV_WC_SUCCESS) {
			std::printf("commit: %s: %s: %s (as expected)\n", g_case, w.what.c_str(),
				    status_str(wc.status));
			continue;
		}
		if (wc.opcode != w.opcode)
			fail("%s: wc opcode %d, expected %d", w.what.c_str(), wc.opcode, w.opcode);
		if (w.byte_len >= 0 && wc.byte_len != static_cast<u32>(w.byte_len))
			fail("%s: byte_len %u, expected %d", w.what.c_str(), wc.byte_len, w.byte_len);
	}
}

// After a remote error the QP is in error: what is posted now flushes.
void expect_flush(client &cl)
{
	batch b;
	b.read8("RDMA Read after the error", cl, cl.target.rkey_rw, cl.raddr(region_buf, 0));
	b.wants[0].status = IBV_WC_WR_FLUSH_ERR;
	b.post(cl);
	expect_wcs(cl, b.wants);
}

// ---- pipeline ------------------------------------------------------------------------

struct record {
	bytes data, crc, sha;
};

record make_record(client &cl, u32 seed, std::size_t len)
{
	record r;
	r.data.resize(len);
	fill(r.data.data(), len, seed);
	std::memcpy(cl.buf + stage_off, r.data.data(), len);
	r.crc = hash_crc32c(r.data.data(), len);
	r.sha = hash_sha256(r.data.data(), len);
	return r;
}

// WRITE(record) -> FLUSH(persistent, range) -> VERIFY(CRC32c, expected) ->
// VERIFY(SHA-256, expected) -> ATOMIC_WRITE(pointer), back to back.
// BAD_SLOT (0: CRC32c, 1: SHA-256, -1: none) gets a corrupted expected hash.
void post_pipeline(client &cl, batch &b, const record &r, int bad_slot)
{
	const u64 rec = cl.raddr(region_file, rec_off);
	bytes crc = r.crc, sha = r.sha;
	if (bad_slot == 0)
		crc[0] ^= 0x01;
	if (bad_slot == 1)
		sha[31] ^= 0x80;
	cl.put_expected(0, crc);
	cl.put_expected(1, sha);
	cl.clear_out(0);
	cl.clear_out(1);
	const u32 fcrc = cl.target.frkey_crc, fsha = cl.target.frkey_sha;
	b.write("RDMA Write of the record", cl, stage_off, rec_len, fcrc, rec);
	b.flush("RDMA Flush (persistent, range)", fcrc, rec, rec_len, XIWDV_FLUSH_PERSISTENT,
		XIWDV_FLUSH_RANGE);
	b.verify("RDMA Verify (CRC32c, expected hash)", cl, fcrc, rec, rec_len, crc_len, 0, 0);
	b.verify("RDMA Verify (SHA-256, expected hash)", cl, fsha, rec, rec_len, sha_len, 1, 1);
	b.atomic_write("Atomic Write of the pointer", fcrc, cl.raddr(region_file, ptr_off),
		       ptr_value);
	b.post(cl);
}

void pipeline(client &cl)
{
	cl.require_xiw();
	const record r = make_record(cl, rec_seed, rec_len);
	// The pointer starts as 0, so that its value shows the Atomic Write.
	store64(cl.buf + back_off, 0);
	cl.one_sided(true, back_off, cl.raddr(region_file, ptr_off), 8, cl.target.frkey_crc);

	batch b;
	post_pipeline(cl, b, r, -1);
	expect_wcs(cl, b.wants);
	cl.check_out(0, r.crc, "RDMA Verify (CRC32c)");
	cl.check_out(1, r.sha, "RDMA Verify (SHA-256)");

	// The other kinds of Flush, of the file and of anonymous memory.
	const u32 fcrc = cl.target.frkey_crc;
	const u64 rec = cl.raddr(region_file, rec_off);
	batch f;
	f.flush("RDMA Flush (global, range)", fcrc, rec, rec_len, XIWDV_FLUSH_GLOBAL,
		XIWDV_FLUSH_RANGE);
	f.flush("RDMA Flush (persistent, whole region)", cl.target.frkey_sha,
		cl.raddr(region_file, 0), 0, XIWDV_FLUSH_PERSISTENT, XIWDV_FLUSH_MR);
	f.flush("RDMA Flush (global, whole region)", fcrc, cl.raddr(region_file, 0), 0,
		XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_MR);
	f.flush("RDMA Flush (global, range) of anonymous memory", cl.target.rkey_crc,
		cl.raddr(region_buf, buf_verify_off), 4096, XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_RANGE);
	f.flush_ext("XIWDV_WR_EXTENDED RDMA Flush (persistent, range)", fcrc, rec, rec_len,
		    XIWDV_FLUSH_PERSISTENT, XIWDV_FLUSH_RANGE);
	f.post(cl);
	expect_wcs(cl, f.wants);

	cl.check(region_file, rec_off, r.data.data(), rec_len, "the record");
	cl.check64(region_file, ptr_off, ptr_value, "the pointer");
	// And the requester reads back what it wrote atomically.
	std::memset(cl.buf + back_off, 0, 8);
	cl.one_sided(false, back_off, cl.raddr(region_file, ptr_off), 8, fcrc);
	if (load64(cl.buf + back_off) != ptr_value)
		fail("RDMA Read of the pointer: 0x%016" PRIx64 ", expected 0x%016" PRIx64,
		     load64(cl.buf + back_off), ptr_value);
}

void pipeline_bad(client &cl, bool bad_sha)
{
	cl.require_xiw();
	const record r = make_record(cl, rec_seed, rec_len);
	batch b;
	post_pipeline(cl, b, r, bad_sha ? 1 : 0);
	std::vector<want_wc> w = b.wants;
	const std::size_t bad = bad_sha ? 3 : 2;
	w[bad].status = IBV_WC_REM_OP_ERR;
	for (std::size_t i = bad + 1; i < w.size(); i++)
		w[i].status = IBV_WC_WR_FLUSH_ERR;
	expect_wcs(cl, w);
	if (bad_sha)
		cl.check_out(0, r.crc, "RDMA Verify (CRC32c)");
	expect_flush(cl);
}

// ---- qp_ex -----------------------------------------------------------------------------

void qp_ex(client &cl)
{
	cl.require_xiw();
	ibv_qp_ex *q = cl.qpx;
	const record r = make_record(cl, rec_seed + 1, rec_len);
	store64(cl.buf + back_off, 0);
	cl.one_sided(true, back_off, cl.raddr(region_file, qpx_ptr_off), 8, cl.target.frkey_crc);
	cl.put_expected(0, r.crc);
	cl.clear_out(0);
	cl.clear_out(1);

	const u32 fcrc = cl.target.frkey_crc, fsha = cl.target.frkey_sha;
	const u64 rec = cl.raddr(region_file, qpx_rec_off);
	const u32 lkey = cl.mr->lkey;
	const u64 value = qpx_ptr_value; // ibv_wr_atomic_write reads 8 bytes here
	xiwdv_wr_ext flush{}, vcrc{}, vsha{}, flush_mr{};
	ibv_sge crc_sges[2] = {{cl.out_addr(0), crc_len, lkey}, {cl.exp_addr(0), crc_len, lkey}};

	ibv_wr_start(q);
	q->wr_flags = IBV_SEND_SIGNALED;
	q->wr_id = 0;
	ibv_wr_rdma_write(q, fcrc, rec);
	ibv_wr_set_sge(q, lkey, cl.laddr(stage_off), rec_len);
	q->wr_id = 1;
	xiwdv_ext_flush(&flush, fcrc, rec, rec_len, XIWDV_FLUSH_PERSISTENT, XIWDV_FLUSH_RANGE);
	xiwdv_wr_post_ext(q, &flush);
	q->wr_id = 2;
	xiwdv_ext_verify(&vcrc, fcrc, rec, rec_len);
	xiwdv_wr_post_ext(q, &vcrc);
	ibv_wr_set_sge_list(q, 2, crc_sges);
	q->wr_id = 3;
	xiwdv_ext_verify(&vsha, fsha, rec, rec_len);
	xiwdv_wr_post_ext(q, &vsha);
	ibv_wr_set_sge(q, lkey, cl.out_addr(1), sha_len);
	q->wr_id = 4;
	ibv_wr_atomic_write(q, fcrc, cl.raddr(region_file, qpx_ptr_off), &value);
	q->wr_id = 5;
	xiwdv_ext_flush(&flush_mr, fcrc, cl.raddr(region_file, 0), 0, XIWDV_FLUSH_GLOBAL,
			XIWDV_FLUSH_MR);
	xiwdv_wr_post_ext(q, &flush_mr);
	cl.complete_qpx("[RDMA Write, Flush, Verify, Verify, Atomic Write, Flush]");

	expect_wcs(cl, {
			       {"ibv_wr_rdma_write of the record", IBV_WC_SUCCESS,
				IBV_WC_RDMA_WRITE, -1},
			       {"xiwdv_wr_post_ext RDMA Flush (persistent, range)", IBV_WC_SUCCESS,
				XIWDV_WC_FLUSH, -1},
			       {"xiwdv_wr_post_ext RDMA Verify (CRC32c, expected hash)",
				IBV_WC_SUCCESS, XIWDV_WC_VERIFY, static_cast<int>(crc_len)},
			       {"xiwdv_wr_post_ext RDMA Verify (SHA-256)", IBV_WC_SUCCESS,
				XIWDV_WC_VERIFY, static_cast<int>(sha_len)},
			       {"ibv_wr_atomic_write of the pointer", IBV_WC_SUCCESS,
				IBV_WC_ATOMIC_WRITE, -1},
			       {"xiwdv_wr_post_ext RDMA Flush (global, whole region)",
				IBV_WC_SUCCESS, XIWDV_WC_FLUSH, -1},
		       });
	cl.check_out(0, r.crc, "RDMA Verify (CRC32c)");
	cl.check_out(1, r.sha, "RDMA Verify (SHA-256)");
	cl.check(region_file, qpx_rec_off, r.data.data(), rec_len, "the record");
	cl.check64(region_file, qpx_ptr_off, qpx_ptr_value, "the pointer");
}

// ---- verify_hash -------------------------------------------------------------------------

void verify_hash(client &cl)
{
	cl.require_xiw();
	struct target_region {
		const char *name;
		u32 where;
		std::size_t base;
		u32 write_rkey, crc_rkey, sha_rkey;
	};
	const target_region regions[] = {
		{"anonymous memory", region_buf, buf_verify_off, cl.target.rkey_rw,
		 cl.target.rkey_crc, cl.target.rkey_sha},
		{"the file", region_file, file_verify_off, cl.target.frkey_crc, cl.target.frkey_crc,
		 cl.target.frkey_sha},
	};
	unsigned ranges = 0, verifies = 0;
	for (const target_region &t : regions)
		for (u32 len : {1u, 4096u, 100000u})
			for (std::size_t off : {std::size_t{0}, std::size_t{1}, std::size_t{4093}}) {
				const u32 seed = 1000 + ranges;
				const record r = make_record(cl, seed, len);
				const u64 at = cl.raddr(t.where, t.base + off);
				for (unsigned s = 0; s < 4; s++)
					cl.clear_out(s);
				cl.put_expected(2, r.crc);
				cl.put_expected(3, r.sha);
				const std::string where =
					strf(" of %u bytes at offset %zu of %s", len, off, t.name);
				batch b;
				b.write("RDMA Write" + where, cl, stage_off, len, t.write_rkey, at);
				b.verify("RDMA Verify (CRC32c)" + where, cl, t.crc_rkey, at, len,
					 crc_len, 0, -1);
				b.verify("RDMA Verify (SHA-256)" + where, cl, t.sha_rkey, at, len,
					 sha_len, 1, -1);
				b.verify("RDMA Verify (CRC32c, expected hash)" + where, cl,
					 t.crc_rkey, at, len, crc_len, 2, 2);
				b.verify("RDMA Verify (SHA-256, expected hash)" + where, cl,
					 t.sha_rkey, at, len, sha_len, 3, 3);
				b.post(cl);
				expect_wcs(cl, b.wants);
				cl.check_out(0, r.crc, ("RDMA Verify (CRC32c)" + where).c_str());
				cl.check_out(1, r.sha, ("RDMA Verify (SHA-256)" + where).c_str());
				cl.check_out(2, r.crc, ("RDMA Verify (CRC32c, expected)" + where).c_str());
				cl.check_out(3, r.sha, ("RDMA Verify (SHA-256, expected)" + where).c_str());
				ranges++;
				verifies += 4;
			}
	std::printf("commit: verify_hash: %u ranges, %u Verify results equal to the CRC32c and "
		    "SHA-256 computed here\n",
		    ranges, verifies);
}

// ---- remote errors -------------------------------------------------------------------------

// One operation that must fail with WANT, an RDMA Read behind it that must
// be flushed, then nothing but flushes.
void remote_error(client &cl, test_case which)
{
	cl.require_xiw();
	const u64 target = cl.raddr(region_buf, target_off);
	batch b;
	ibv_wc_status want = IBV_WC_REM_ACCESS_ERR;
	switch (which) {
	case test_case::flush_no_right:
		b.flush("RDMA Flush (global) without a flush right", cl.target.rkey_rw, target, 4096,
			XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_RANGE);
		break;
	case test_case::flush_type_no_right:
		b.flush("RDMA Flush (persistent) with the global flush right only",
			cl.target.rkey_crc, target, 4096, XIWDV_FLUSH_PERSISTENT, XIWDV_FLUSH_RANGE);
		break;
	case test_case::verify_no_right:
		cl.clear_out(0);
		b.verify("RDMA Verify without a verify right", cl, cl.target.rkey_rw, target, 4096,
			 crc_len, 0, -1);
		break;
	case test_case::atomic_write_no_right:
		b.atomic_write("Atomic Write without IBV_ACCESS_REMOTE_WRITE", cl.target.rkey_ro,
			       target, 0x0101010101010101ull);
		break;
	case test_case::atomic_write_unaligned:
		b.atomic_write("Atomic Write to a misaligned address", cl.target.rkey_crc,
			       target + 4, 0x0101010101010101ull);
		want = IBV_WC_REM_OP_ERR;
		break;
	default:
		fail("not an error case");
	}
	b.read8("RDMA Read behind it", cl, cl.target.rkey_rw, target);
	b.wants[0].status = want;
	b.wants[1].status = IBV_WC_WR_FLUSH_ERR;
	b.post(cl);
	expect_wcs(cl, b.wants);
	expect_flush(cl);
}

// ---- a peer without the extensions ----------------------------------------------------------

void expect_eopnotsupp(client &cl, ibv_send_wr &wr, const char *what)
{
	ibv_send_wr *bad = nullptr;
	int rc = ibv_post_send(cl.id->qp, &wr, &bad);
	if (rc != EOPNOTSUPP)
		fail("ibv_post_send of %s toward a peer without the extensions returned %d (%s), "
		     "expected EOPNOTSUPP",
		     what, rc, rc ? std::strerror(rc) : "success");
	if (bad != &wr)
		fail("ibv_post_send of %s: bad_wr does not point to it", what);
	std::printf("commit: unsupported: %s: EOPNOTSUPP (as expected)\n", what);
}

void unsupported(client &cl)
{
	if (cl.target.xiw)
		fail("the server's device is xiw, which has the extensions; run this case "
		     "against upstream siw");
	const u32 rkey = cl.target.rkey_rw;
	const u64 target = cl.raddr(region_buf, target_off);
	{
		ibv_send_wr wr{};
		xiwdv_wr_flush(&wr, rkey, target, 4096, XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_RANGE);
		wr.wr_id = 60;
		wr.send_flags = IBV_SEND_SIGNALED;
		expect_eopnotsupp(cl, wr, "XIWDV_WR_FLUSH");
	}
	{
		ibv_send_wr wr{};
		xiwdv_wr_atomic_write(&wr, rkey, target, 1);
		wr.wr_id = 61;
		wr.send_flags = IBV_SEND_SIGNALED;
		expect_eopnotsupp(cl, wr, "IBV_WR_ATOMIC_WRITE");
	}
	{
		ibv_send_wr wr{};
		xiwdv_wr_ext ext{};
		xiwdv_ext_verify(&ext, rkey, target, 4096);
		xiwdv_wr_set_ext(&wr, &ext);
		ibv_sge sge{cl.out_addr(0), crc_len, cl.mr->lkey};
		wr.wr_id = 62;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		expect_eopnotsupp(cl, wr, "XIWDV_WR_EXTENDED RDMA Verify");
		ibv_send_wr fl{};
		xiwdv_ext_flush(&ext, rkey, target, 4096, XIWDV_FLUSH_PERSISTENT, XIWDV_FLUSH_RANGE);
		xiwdv_wr_set_ext(&fl, &ext);
		fl.wr_id = 63;
		fl.send_flags = IBV_SEND_SIGNALED;
		expect_eopnotsupp(cl, fl, "XIWDV_WR_EXTENDED RDMA Flush");
	}
	// Nothing of that may have been queued.
	std::this_thread::sleep_for(std::chrono::milliseconds(200));
	ibv_wc wc{};
	if (int n = ibv_poll_cq(cl.id->send_cq, 1, &wc); n != 0)
		fail("a refused work request produced a completion (wr_id %" PRIu64 ", %s)",
		     static_cast<u64>(wc.wr_id), status_str(wc.status));
	ibv_qp_attr qa{};
	ibv_qp_init_attr qia{};
	if (ibv_query_qp(cl.id->qp, &qa, IBV_QP_STATE, &qia))
		die("ibv_query_qp");
	if (qa.qp_state != IBV_QPS_RTS)
		fail("QP state %d after the refused posts, expected RTS", qa.qp_state);

	// [RDMA Write, Atomic Write]: the Write is posted, the Atomic Write
	// refused.
	const u32 len = 65536;
	fill(cl.buf + stage_off, len, 77);
	{
		ibv_sge sge{cl.laddr(stage_off), len, cl.mr->lkey};
		ibv_send_wr w{}, aw{};
		w.wr_id = 0;
		w.sg_list = &sge;
		w.num_sge = 1;
		w.opcode = IBV_WR_RDMA_WRITE;
		w.send_flags = IBV_SEND_SIGNALED;
		w.wr.rdma.remote_addr = cl.raddr(region_buf, buf_verify_off);
		w.wr.rdma.rkey = rkey;
		xiwdv_wr_atomic_write(&aw, rkey, target, 2);
		aw.wr_id = 1;
		aw.send_flags = IBV_SEND_SIGNALED;
		w.next = &aw;
		ibv_send_wr *bad = nullptr;
		int rc = ibv_post_send(cl.id->qp, &w, &bad);
		if (rc != EOPNOTSUPP || bad != &aw)
			fail("ibv_post_send of [RDMA Write, Atomic Write]: returned %d, bad_wr %s; "
			     "expected EOPNOTSUPP at the Atomic Write",
			     rc, bad == &aw ? "the Atomic Write" : bad == &w ? "the Write" : "other");
		cl.wait_ok("the RDMA Write in front of the refused Atomic Write", IBV_WC_RDMA_WRITE);
	}
	// Send (both ways: the control messages), Write (checked by the
	// server), Read.
	cl.check(region_buf, buf_verify_off, cl.buf + stage_off, len,
		 "RDMA Write after refused posts");
	std::memset(cl.buf + back_off, 0, len);
	cl.one_sided(false, back_off, cl.raddr(region_buf, buf_verify_off), len, rkey);
	if (std::memcmp(cl.buf + back_off, cl.buf + stage_off, len))
		fail("RDMA Read after refused posts: data wrong");
}

// ---- durable ----------------------------------------------------------------------------------

void durable(client &cl)
{
	cl.require_xiw();
	const char *env = std::getenv("XIW_COMMIT_TAG");
	const std::string tag = env && *env ? env : "untagged";
	const bytes a = durable_record("xiw flush_durability " + tag + " record A (flushed)");
	const bytes b = durable_record("xiw flush_durability " + tag + " record B (not flushed)");
	const u32 fcrc = cl.target.frkey_crc;
	std::memcpy(cl.buf + stage_off, a.data(), a.size());
	std::memcpy(cl.buf + stage_off + durable_len, b.data(), b.size());

	batch fa;
	fa.write("RDMA Write of record A", cl, stage_off, durable_len, fcrc,
		 cl.raddr(region_file, durable_a_off));
	fa.flush("RDMA Flush (persistent, range) of record A", fcrc,
		 cl.raddr(region_file, durable_a_off), durable_len, XIWDV_FLUSH_PERSISTENT,
		 XIWDV_FLUSH_RANGE);
	fa.post(cl);
	expect_wcs(cl, fa.wants);
	batch wb;
	wb.write("RDMA Write of record B", cl, stage_off + durable_len, durable_len, fcrc,
		 cl.raddr(region_file, durable_b_off));
	wb.post(cl);
	expect_wcs(cl, wb.wants);
	// Both are in the server's memory (the Sends come after the Writes).
	cl.check(region_file, durable_a_off, a.data(), a.size(), "record A in memory");
	cl.check(region_file, durable_b_off, b.data(), b.size(), "record B in memory");
	std::printf("commit: durable: record A (flushed) at %zu, record B (not flushed) at %zu, "
		    "tag \"%s\"\n",
		    durable_a_off, durable_b_off, tag.c_str());
}

void run_case(const char *addr, const char *port, test_case which)
{
	client cl;
	cl.open(addr, port, which, which == test_case::qp_ex);
	switch (which) {
	case test_case::pipeline:
		pipeline(cl);
		cl.bye();
		break;
	case test_case::pipeline_bad_hash:
	case test_case::pipeline_bad_sha256:
		pipeline_bad(cl, which == test_case::pipeline_bad_sha256);
		break;
	case test_case::qp_ex:
		qp_ex(cl);
		cl.bye();
		break;
	case test_case::verify_hash:
		verify_hash(cl);
		cl.bye();
		break;
	case test_case::flush_no_right:
	case test_case::flush_type_no_right:
	case test_case::verify_no_right:
	case test_case::atomic_write_no_right:
	case test_case::atomic_write_unaligned:
		remote_error(cl, which);
		break;
	case test_case::unsupported:
		unsupported(cl);
		cl.bye();
		break;
	case test_case::durable:
		durable(cl);
		cl.bye();
		break;
	case test_case::quit:
		break;
	}
	cl.close();
}

int run_client(const char *addr, const char *port, char **names, int n)
{
	for (int i = 0; i < n; i++) {
		const case_name *found = nullptr;
		for (const auto &c : case_names)
			if (std::strcmp(c.name, names[i]) == 0)
				found = &c;
		if (!found) {
			std::fprintf(stderr, "unknown case %s\n", names[i]);
			return 2;
		}
		g_case = found->name;
		const auto t0 = clock_type::now();
		run_case(addr, port, found->c);
		const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
		std::printf("commit: %s: ok (%.1f s)\n", found->name, s);
		std::fflush(stdout);
	}
	return 0;
}

// =============================================================================
// Local checks
// =============================================================================

ibv_context *open_device(const char *dev_name)
{
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	if (!list)
		die("ibv_get_device_list");
	ibv_context *ctx = nullptr;
	for (int i = 0; i < n; i++)
		if (std::strcmp(ibv_get_device_name(list[i]), dev_name) == 0)
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		fail("no device %s", dev_name);
	return ctx;
}

int run_caps(const char *dev_name)
{
	g_case = "caps";
	ibv_context *ctx = open_device(dev_name);
	if (!xiwdv_is_xiw_context(ctx))
		fail("%s is not an xiw device", dev_name);
	const u32 all = XIWDV_CAP_ATOMICS | XIWDV_CAP_IMMEDIATE | XIWDV_CAP_FLUSH_GLOBAL |
			XIWDV_CAP_FLUSH_PERSISTENT | XIWDV_CAP_ATOMIC_WRITE |
			XIWDV_CAP_VERIFY_CRC32C | XIWDV_CAP_VERIFY_SHA256;
	const u32 caps = xiwdv_query_caps(ctx);
	if ((caps & all) != all)
		fail("xiwdv_query_caps(%s) = 0x%x, missing 0x%x of the seven XIWDV_CAP_* bits 0x%x",
		     dev_name, caps, all & ~caps, all);
	ibv_close_device(ctx);
	std::printf("commit: caps: ok (%s: xiwdv_query_caps 0x%x)\n", dev_name, caps);
	return 0;
}

void *map_or_die(void *at, std::size_t len, int flags, int fd)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (p == MAP_FAILED)
		fail("mmap: %s", std::strerror(errno));
	std::memset(p, 0x5a, len); // populated, and shared pages dirty
	return p;
}

// What ibv_reg_mr accepts: at most one Verify algorithm; FLUSH_PERSISTENT
// only within one shared mapping of a file.
int run_registration(const char *dev_name, const char *path)
{
	g_case = "registration";
	ibv_context *ctx = open_device(dev_name);
	ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd)
		fail("ibv_alloc_pd: %s", std::strerror(errno));
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	const int fg = XIWDV_ACCESS_FLUSH_GLOBAL, fp = XIWDV_ACCESS_FLUSH_PERSISTENT;
	const int vc = XIWDV_ACCESS_VERIFY_CRC32C, vs = XIWDV_ACCESS_VERIFY_SHA256;
	const std::size_t len = 1u << 20;
	unsigned checks = 0;

	auto ok = [&](void *p, std::size_t n, int access, const char *what) {
		ibv_mr *mr = ibv_reg_mr(pd, p, n, access);
		if (!mr)
			fail("ibv_reg_mr of %s failed: %s", what, std::strerror(errno));
		if (ibv_dereg_mr(mr))
			fail("ibv_dereg_mr of %s failed", what);
		std::printf("commit: registration: %s: registered\n", what);
		checks++;
	};
	// WANT_ERRNO 0: any errno, reported.
	auto refused = [&](void *p, std::size_t n, int access, int want_errno, const char *what) {
		errno = 0;
		ibv_mr *mr = ibv_reg_mr(pd, p, n, access);
		if (mr) {
			ibv_dereg_mr(mr);
			fail("ibv_reg_mr of %s succeeded, expected it to fail%s%s", what,
			     want_errno ? " with " : "", want_errno ? std::strerror(want_errno) : "");
		}
		const int e = errno;
		if (want_errno && e != want_errno)
			fail("ibv_reg_mr of %s: errno %d (%s), expected %d (%s)", what, e,
			     std::strerror(e), want_errno, std::strerror(want_errno));
		std::printf("commit: registration: %s: refused with %s (as expected)\n", what,
			    std::strerror(e));
		checks++;
	};

	void *anon = map_or_die(nullptr, len, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	refused(anon, len, rw | vc | vs, EINVAL, "anonymous memory with both Verify algorithms");
	refused(anon, len, rw | fp, EOPNOTSUPP,
		"anonymous memory with XIWDV_ACCESS_FLUSH_PERSISTENT");
	refused(anon, len, rw | fg | fp, EOPNOTSUPP,
		"anonymous memory with both flush rights");
	ok(anon, len, rw | fg, "anonymous memory with XIWDV_ACCESS_FLUSH_GLOBAL");
	ok(anon, len, rw | vc, "anonymous memory with XIWDV_ACCESS_VERIFY_CRC32C");
	ok(anon, len, rw | vs, "anonymous memory with XIWDV_ACCESS_VERIFY_SHA256");
	ok(anon, len, rw | fg | vs, "anonymous memory with flush global and verify SHA-256");

	int fd = open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, static_cast<off_t>(2 * len)))
		fail("%s: %s", path, std::strerror(errno));
	void *shared = map_or_die(nullptr, len, MAP_SHARED, fd);
	ok(shared, len, rw | fp, "a shared file mapping with XIWDV_ACCESS_FLUSH_PERSISTENT");
	ok(shared, len, rw | fg | fp | vc,
	   "a shared file mapping with both flush rights and verify CRC32c");
	ok(static_cast<std::uint8_t *>(shared) + 4096, 8192, rw | fp | vs,
	   "8 KiB inside a shared file mapping with flush persistent and verify SHA-256");
	refused(shared, len, rw | fp | vc | vs, EINVAL,
		"a shared file mapping with both Verify algorithms");
	void *priv = map_or_die(nullptr, len, MAP_PRIVATE, fd);
	refused(priv, len, rw | fp, 0,
		"a private (copy-on-write) file mapping with XIWDV_ACCESS_FLUSH_PERSISTENT");
	ok(priv, len, rw | fg, "a private file mapping with XIWDV_ACCESS_FLUSH_GLOBAL");
	// A region that runs from the file mapping into anonymous memory.
	auto *two = static_cast<std::uint8_t *>(
		map_or_die(nullptr, 2 * len, MAP_PRIVATE | MAP_ANONYMOUS, -1));
	map_or_die(two, len, MAP_SHARED | MAP_FIXED, fd);
	ok(two, 2 * len, rw, "a file mapping followed by anonymous memory, no flush right");
	refused(two, 2 * len, rw | fp, 0,
		"a file mapping followed by anonymous memory with XIWDV_ACCESS_FLUSH_PERSISTENT");
	ok(two, len, rw | fp, "the file part of it with XIWDV_ACCESS_FLUSH_PERSISTENT");

	munmap(two, 2 * len);
	munmap(priv, len);
	munmap(shared, len);
	munmap(anon, len);
	close(fd);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	std::printf("commit: registration: ok (%u checks on %s, file %s)\n", checks, dev_name,
		    path);
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	self_test();
	if (argc == 3 && std::strcmp(argv[1], "caps") == 0)
		return run_caps(argv[2]);
	if (argc == 4 && std::strcmp(argv[1], "registration") == 0)
		return run_registration(argv[2], argv[3]);
	if (argc == 4 && std::strcmp(argv[1], "server") == 0)
		return run_server(nullptr, argv[2], argv[3]);
	if (argc == 6 && std::strcmp(argv[1], "server") == 0 && std::strcmp(argv[2], "-f") == 0)
		return run_server(argv[3], argv[4], argv[5]);
	if (argc >= 5 && std::strcmp(argv[1], "client") == 0)
		return run_client(argv[2], argv[3], argv + 4, argc - 4);
	std::fprintf(stderr,
		     "usage: %s server [-f FILE] ADDR PORT | client ADDR PORT CASE... |\n"
		     "       %s caps DEVICE | %s registration DEVICE FILE\n",
		     argv[0], argv[0], argv[0]);
	return 2;
}
