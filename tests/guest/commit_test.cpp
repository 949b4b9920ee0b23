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
// rules out the guest's 9p shares ($XIW_OUT): use tmpfs or a disk.  FILE
// may also be a device DAX character device (/dev/daxN.M, persistent
// memory), of which the server maps 2 MiB and registers the first 1 MiB.
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
//   post_checks       what the kernel would fail later fails the post with
//                     EINVAL (ibv_post_send, ibv_wr_complete): a Flush of an
//                     unknown level, a Verify expecting a 33-octet hash or
//                     with no SGE for its result, inline data on an RDMA
//                     Read; nothing is queued, the QP keeps working
//                     (regression: posted, then the QP went to Error)
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

#include "ext_framework.h"
#include "rdma_test_util.h"
#include "sha256.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

namespace ext_fw = xiw_test::ext_fw;
using namespace ext_fw; // fail(), pattern(), load64() ...
using xiw_test::die;
using xiw_test::strf;
using u64 = std::uint64_t;
using u32 = std::uint32_t;
using bytes = std::vector<std::uint8_t>;

// ---- layout ------------------------------------------------------------------

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
	post_checks,
	durable,
	quit,
};

bool is_bad_hash_case(test_case c)
{
	return c == test_case::pipeline_bad_hash || c == test_case::pipeline_bad_sha256;
}

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

// An RDMA Flush on an ibv_qp_ex: through the verbs' own ibv_wr_flush() when
// built against rdma-core >= 45 (the QP created with IBV_QP_EX_WITH_FLUSH),
// else as an xiwdv extension work request.
#ifdef XIW_HAVE_IBV_WR_FLUSH
#define flush_verb "ibv_wr_flush"
#define flush_send_op_text ", flush"
constexpr std::uint64_t flush_send_op = IBV_QP_EX_WITH_FLUSH;
static_assert(IBV_WC_FLUSH == XIWDV_WC_FLUSH && IBV_FLUSH_GLOBAL == XIWDV_FLUSH_GLOBAL &&
	      IBV_FLUSH_PERSISTENT == XIWDV_FLUSH_PERSISTENT && IBV_FLUSH_MR == XIWDV_FLUSH_MR);
void post_flush(ibv_qp_ex *q, u32 rkey, u64 raddr, std::size_t len, unsigned type,
		unsigned level)
{
	ibv_wr_flush(q, rkey, raddr, len, static_cast<std::uint8_t>(type),
		     static_cast<std::uint8_t>(level));
}
#else
#define flush_verb "xiwdv_wr_post_ext"
#define flush_send_op_text ""
constexpr std::uint64_t flush_send_op = 0;
void post_flush(ibv_qp_ex *q, u32 rkey, u64 raddr, std::size_t len, unsigned type,
		unsigned level)
{
	xiwdv_wr_ext flush{};
	xiwdv_ext_flush(&flush, rkey, raddr, len, type, level);
	xiwdv_wr_post_ext(q, &flush);
}
#endif

// ---- what ext_framework.h needs to know ------------------------------------------

struct traits {
	using case_type = test_case;
	using msg = ctrl_msg;
	using target = accept_pd;
	static constexpr u32 pd_magic = 0x78697743; // "xiwC"
	static constexpr op result = op::result;
	static constexpr op bye = op::bye;
	static constexpr ext_fw::case_name<test_case> cases[] = {
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
		{test_case::post_checks, "post_checks"},
		{test_case::durable, "durable"},
		{test_case::quit, "quit"},
	};

	static bool is_error_case(test_case c)
	{
		return is_bad_hash_case(c) || c == test_case::flush_no_right ||
		       c == test_case::flush_type_no_right || c == test_case::verify_no_right ||
		       c == test_case::atomic_write_no_right || c == test_case::atomic_write_unaligned;
	}

	static bool target_fits(const accept_pd &t)
	{
		return t.buf_len >= buf_size && t.file_len >= file_size;
	}

	static constexpr std::size_t server_buf_size = buf_size;
	static constexpr u32 server_send_depth = 16;
	static constexpr u32 server_recv_depth = 16;
	static constexpr std::size_t client_buf_size = ::client_buf_size;
	static constexpr u32 client_send_depth = 64;
	static constexpr u32 client_send_sge = 2; // Verify: the result and the expected hash
	static bool uses_qp_ex(test_case c)
	{
		return c == test_case::qp_ex || c == test_case::post_checks;
	}
	static constexpr std::uint64_t qp_ex_ops =
		IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_SEND |
		IBV_QP_EX_WITH_ATOMIC_WRITE | flush_send_op | XIWDV_QP_EX_WITH_EXTENSIONS;
	static constexpr const char *qp_ex_ops_text =
		"write, read, send, atomic write" flush_send_op_text ", XIWDV_QP_EX_WITH_EXTENSIONS";
};

// ---- data, hashes ----------------------------------------------------------------

std::string hex(const std::uint8_t *p, std::size_t n)
{
	std::string s;
	for (std::size_t i = 0; i < n; i++)
		s += strf("%02x", p[i]);
	return s;
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

// =============================================================================
// Server
// =============================================================================

struct server_file {
	std::string path;
	int fd = -1;
	std::uint8_t *map = nullptr;
	std::size_t map_len = file_size;
	bool remove = false;
	// A device DAX character device (persistent memory): mapped in its
	// alignment, no read(2); the mapping is the medium.
	bool dax = false;
};

struct server_conn : ext_fw::server_conn_base<traits> {
	server_file *file = nullptr;
	ibv_mr *mr_rw = nullptr, *mr_ro = nullptr, *mr_crc = nullptr, *mr_sha = nullptr;
	ibv_mr *fmr_crc = nullptr, *fmr_sha = nullptr;

	std::uint8_t *base(u32 where) const { return where == region_file ? file->map : buf; }
	std::size_t size(u32 where) const { return where == region_file ? file_size : buf_size; }

	// What ext_fw::run_server() calls.
	bool setup();
	accept_pd target() const;
	bool handle(const ctrl_msg &m, ctrl_msg &r);
	std::size_t changed(std::string &note) const;
	void release();
};

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
	if (m.where == region_file && !c.file->dax) {
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

// The file as an error case leaves it: the pattern, and for the bad-hash
// pipelines the record, which the Write before the failing Verify placed.
std::uint8_t file_expected(test_case which, std::size_t i)
{
	if (is_bad_hash_case(which) && i >= rec_off && i < rec_off + rec_len)
		return pattern(rec_seed, i - rec_off);
	return pattern(error_seed + 1, i);
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
	f.dax = S_ISCHR(st.st_mode);
	if (f.dax) {
		// Device DAX maps in units of its alignment (2 MiB here).
		f.map_len = 2u << 20;
	} else if (!S_ISREG(st.st_mode)) {
		std::printf("commit server: %s is neither a regular file nor device DAX\n",
			    f.path.c_str());
		return false;
	} else if (st.st_size < static_cast<off_t>(file_size) &&
		   ftruncate(f.fd, static_cast<off_t>(file_size))) {
		std::printf("commit server: ftruncate %s: %s\n", f.path.c_str(),
			    std::strerror(errno));
		return false;
	}
	void *m = mmap(nullptr, f.map_len, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, 0);
	if (m == MAP_FAILED) {
		std::printf("commit server: writable MAP_SHARED mapping of %s: %s (a 9p share "
			    "such as $XIW_OUT cannot be mapped so)\n",
			    f.path.c_str(), std::strerror(errno));
		return false;
	}
	f.map = static_cast<std::uint8_t *>(m);
	return true;
}

// ---- what ext_fw::run_server() calls ----------------------------------------------

bool server_conn::setup()
{
	if (traits::is_error_case(which)) {
		fill(buf, buf_size, error_seed);
		fill(file->map, file_size, error_seed + 1);
	}
	ctrl_mr = rdma_reg_msgs(id, &ctrl, sizeof(ctrl));
	if (!ctrl_mr)
		die("rdma_reg_msgs");
	return register_all(*this);
}

accept_pd server_conn::target() const
{
	accept_pd t{};
	t.magic = traits::pd_magic;
	t.xiw = xiw;
	t.buf_addr = reinterpret_cast<std::uintptr_t>(buf);
	t.buf_len = buf_size;
	t.file_addr = reinterpret_cast<std::uintptr_t>(file->map);
	t.file_len = file_size;
	auto key = [](ibv_mr *mr) { return mr ? mr->rkey : 0u; };
	t.rkey_rw = key(mr_rw);
	t.rkey_ro = key(mr_ro);
	t.rkey_crc = key(mr_crc);
	t.rkey_sha = key(mr_sha);
	t.frkey_crc = key(fmr_crc);
	t.frkey_sha = key(fmr_sha);
	return t;
}

bool server_conn::handle(const ctrl_msg &m, ctrl_msg &r)
{
	if (m.what != op::check && m.what != op::check64)
		return false;
	if (std::string e = serve_check(*this, m); !e.empty()) {
		r.ok = 0;
		std::snprintf(r.text, sizeof(r.text), "%s", e.c_str());
		server_fail(*this, e);
	}
	post_ctrl_recv();
	return true;
}

// Error cases: once the client has gone, nothing in the buffer and the file
// may have changed but what the case placed before the error.
std::size_t server_conn::changed(std::string &note) const
{
	std::size_t n = bytes_changed(buf, buf_size, error_seed);
	for (std::size_t i = 0; i < file_size; i++)
		n += file->map[i] != file_expected(which, i);
	if (is_bad_hash_case(which)) {
		std::size_t rec_bad = 0;
		for (std::size_t i = 0; i < rec_len; i++)
			rec_bad += file->map[rec_off + i] != pattern(rec_seed, i);
		std::uint8_t initial[8];
		for (std::size_t i = 0; i < 8; i++)
			initial[i] = file_expected(which, ptr_off + i);
		const u64 ptr = load64(file->map + ptr_off);
		note = strf(" (record %s, pointer %s)", rec_bad ? "NOT in place" : "in place",
			    ptr == load64(initial) ? "not written"
			    : ptr == ptr_value     ? "WRITTEN"
						   : "CHANGED");
	}
	return n;
}

void server_conn::release()
{
	rdma_dereg_mr(ctrl_mr);
	deregister_all(*this);
}

int run_server(const char *path, const char *addr, const char *port)
{
	server_file file;
	if (!open_file(file, path))
		return 1;
	server_conn proto;
	proto.file = &file;
	const std::string note = strf(", file %s", file.path.c_str());
	const int rc = ext_fw::run_server(proto, addr, port, note.c_str());
	munmap(file.map, file.map_len);
	close(file.fd);
	if (file.remove)
		unlink(file.path.c_str());
	return rc;
}

// =============================================================================
// Client
// =============================================================================

struct client : ext_fw::client_base<traits> {
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
	u64 out_addr(unsigned slot) const { return laddr(out_off + slot * slot_size + slot_hash); }
	u64 exp_addr(unsigned slot) const { return laddr(exp_off + slot * slot_size); }

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
	xiwdv_wr_ext vcrc{}, vsha{};
	ibv_sge crc_sges[2] = {{cl.out_addr(0), crc_len, lkey}, {cl.exp_addr(0), crc_len, lkey}};

	ibv_wr_start(q);
	q->wr_flags = IBV_SEND_SIGNALED;
	q->wr_id = 0;
	ibv_wr_rdma_write(q, fcrc, rec);
	ibv_wr_set_sge(q, lkey, cl.laddr(stage_off), rec_len);
	q->wr_id = 1;
	post_flush(q, fcrc, rec, rec_len, XIWDV_FLUSH_PERSISTENT, XIWDV_FLUSH_RANGE);
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
	post_flush(q, fcrc, cl.raddr(region_file, 0), 0, XIWDV_FLUSH_GLOBAL, XIWDV_FLUSH_MR);
	cl.complete_qpx("[RDMA Write, Flush, Verify, Verify, Atomic Write, Flush]");

	expect_wcs(cl, {
			       {"ibv_wr_rdma_write of the record", IBV_WC_SUCCESS,
				IBV_WC_RDMA_WRITE, -1},
			       {flush_verb " RDMA Flush (persistent, range)", IBV_WC_SUCCESS,
				XIWDV_WC_FLUSH, -1},
			       {"xiwdv_wr_post_ext RDMA Verify (CRC32c, expected hash)",
				IBV_WC_SUCCESS, XIWDV_WC_VERIFY, static_cast<int>(crc_len)},
			       {"xiwdv_wr_post_ext RDMA Verify (SHA-256)", IBV_WC_SUCCESS,
				XIWDV_WC_VERIFY, static_cast<int>(sha_len)},
			       {"ibv_wr_atomic_write of the pointer", IBV_WC_SUCCESS,
				IBV_WC_ATOMIC_WRITE, -1},
			       {flush_verb " RDMA Flush (global, whole region)", IBV_WC_SUCCESS,
				XIWDV_WC_FLUSH, -1},
		       });
	cl.check_out(0, r.crc, "RDMA Verify (CRC32c)");
	cl.check_out(1, r.sha, "RDMA Verify (SHA-256)");
	cl.check(region_file, qpx_rec_off, r.data.data(), rec_len, "the record");
	cl.check64(region_file, qpx_ptr_off, qpx_ptr_value, "the pointer");
	std::printf("commit: %s: both RDMA Flushes completed, posted with %s\n", g_case,
		    flush_verb);
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
	cl.expect_refused(wr, EOPNOTSUPP, what);
	std::printf("commit: unsupported: %s: EOPNOTSUPP (as expected)\n", what);
}

// After posts that were refused: the RDMA Write of LEN staged octets just
// made is in the server's memory (which Sends both ways ask and answer),
// and an RDMA Read brings them back.
void expect_qp_works(client &cl, u32 rkey, u32 len)
{
	cl.check(region_buf, buf_verify_off, cl.buf + stage_off, len,
		 "RDMA Write after refused posts");
	std::memset(cl.buf + back_off, 0, len);
	cl.one_sided(false, back_off, cl.raddr(region_buf, buf_verify_off), len, rkey);
	if (std::memcmp(cl.buf + back_off, cl.buf + stage_off, len))
		fail("RDMA Read after refused posts: data wrong");
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
	cl.expect_nothing_queued();

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
	expect_qp_works(cl, rkey, len);
}

// ---- refused at post ------------------------------------------------------------------------

// What the kernel would fail when it takes the work request (a completion
// error, the QP in Error) is refused at post, through ibv_post_send and
// through ibv_qp_ex alike, and the QP keeps working.
void post_checks(client &cl)
{
	cl.require_xiw();
	const u32 rkey = cl.target.rkey_rw;
	const u64 target = cl.raddr(region_buf, target_off);
	auto refused_batch = [&](int rc, const char *what) {
		if (rc != EINVAL)
			fail("ibv_wr_complete of %s returned %d (%s), expected EINVAL", what, rc,
			     rc ? std::strerror(rc) : "success");
		std::printf("commit: post_checks: %s: EINVAL at ibv_wr_complete\n", what);
	};
	{
		ibv_send_wr wr{};
		xiwdv_wr_flush(&wr, rkey, target, 4096, XIWDV_FLUSH_GLOBAL, 7);
		wr.send_flags = IBV_SEND_SIGNALED;
		cl.expect_refused(wr, EINVAL, "a Flush of placement level 7");
		std::printf("commit: post_checks: a Flush of level 7: EINVAL at ibv_post_send\n");
	}
	ibv_sge sge[2] = {{cl.out_addr(0), crc_len, cl.mr->lkey},
			  {cl.exp_addr(0), XIWDV_VERIFY_MAX_HASH + 1, cl.mr->lkey}};
	xiwdv_wr_ext ext{};
	xiwdv_ext_verify(&ext, cl.target.rkey_crc, target, 4096);
	{
		ibv_send_wr wr{};
		xiwdv_wr_set_ext(&wr, &ext);
		wr.sg_list = sge;
		wr.num_sge = 2;
		wr.send_flags = IBV_SEND_SIGNALED;
		cl.expect_refused(wr, EINVAL, "a Verify expecting a 33-octet hash");
		std::printf("commit: post_checks: a Verify expecting a 33-octet hash: EINVAL at "
			    "ibv_post_send\n");
	}
	ibv_wr_start(cl.qpx);
	cl.qpx->wr_flags = IBV_SEND_SIGNALED;
	xiwdv_wr_post_ext(cl.qpx, &ext);
	ibv_wr_set_sge_list(cl.qpx, 2, sge);
	refused_batch(ibv_wr_complete(cl.qpx), "a Verify expecting a 33-octet hash");
	ibv_wr_start(cl.qpx);
	xiwdv_wr_post_ext(cl.qpx, &ext);
	refused_batch(ibv_wr_complete(cl.qpx), "a Verify with no SGE for its result");
	ibv_wr_start(cl.qpx);
	ibv_wr_rdma_read(cl.qpx, rkey, target);
	ibv_wr_set_inline_data(cl.qpx, cl.buf + stage_off, 8);
	refused_batch(ibv_wr_complete(cl.qpx), "an RDMA Read with inline data");
	cl.expect_nothing_queued();
	const u32 len = 65536;
	fill(cl.buf + stage_off, len, 78);
	cl.one_sided(true, stage_off, cl.raddr(region_buf, buf_verify_off), len, rkey);
	expect_qp_works(cl, rkey, len);
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

// What case WHICH does on its connection (see ext_fw::run_client()).
void run_case(client &cl, test_case which)
{
	switch (which) {
	case test_case::pipeline:
		pipeline(cl);
		break;
	case test_case::pipeline_bad_hash:
	case test_case::pipeline_bad_sha256:
		pipeline_bad(cl, which == test_case::pipeline_bad_sha256);
		break;
	case test_case::qp_ex:
		qp_ex(cl);
		break;
	case test_case::verify_hash:
		verify_hash(cl);
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
		break;
	case test_case::post_checks:
		post_checks(cl);
		break;
	case test_case::durable:
		durable(cl);
		break;
	case test_case::quit:
		break;
	}
}

// =============================================================================
// Local checks
// =============================================================================

int run_caps(const char *dev_name)
{
	g_case = "caps";
	ibv_context *ctx = ext_fw::open_device(dev_name);
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

// What ibv_reg_mr accepts: at most one Verify algorithm, and only with
// remote read; FLUSH_PERSISTENT only within one shared mapping of a file.
int run_registration(const char *dev_name, const char *path)
{
	g_case = "registration";
	ibv_context *ctx = ext_fw::open_device(dev_name);
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
	// A hash over ranges the peer picks reads the region (draft-talpey §6).
	refused(anon, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | vc, EINVAL,
		"anonymous memory with XIWDV_ACCESS_VERIFY_CRC32C but no remote read");
	refused(anon, len, IBV_ACCESS_LOCAL_WRITE | vs, EINVAL,
		"anonymous memory with XIWDV_ACCESS_VERIFY_SHA256 but no remote read");

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
	ext_fw::g_tool = "commit";
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
		return ext_fw::run_client(argv[2], argv[3], argv + 4, argc - 4, run_case);
	std::fprintf(stderr,
		     "usage: %s server [-f FILE] ADDR PORT | client ADDR PORT CASE... |\n"
		     "       %s caps DEVICE | %s registration DEVICE FILE\n",
		     argv[0], argv[0], argv[0]);
	return 2;
}
