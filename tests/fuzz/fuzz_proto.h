// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// What the wire fuzzer (fuzzer.cpp) and its victim (victim.cpp) agree on:
// the private data each puts into its MPA frame, the memory regions the
// victim exports and how their bytes start out, the layouts of the
// victim's posted receives, the operations the victim posts toward the
// fuzzer and the bytes the fuzzer answers them with.  Every value here is
// ours; nothing is taken from a specification except through wire.h.
//
// Private data (the ULP part of an MPA frame: after the RFC 6581 IRD/ORD
// word when there is one):
//   fuzzer -> victim  struct fz_hello   (MPA Request, or the Reply when the
//                                        victim connects: client mode)
//   victim -> fuzzer  struct fz_target  (MPA Reply, or the Request)
// Both are host byte order: the two ends run on one machine.  A Request
// without fz_hello (handshake fuzzing, foreign clients) gets the default
// configuration (fz_default_hello()).
#ifndef XIW_TESTS_FUZZ_PROTO_H
#define XIW_TESTS_FUZZ_PROTO_H

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "../fixed_width.h"

namespace xiw_fuzz {

constexpr u32 hello_magic = 0x315a4658;  // "XFZ1"
constexpr u32 target_magic = 0x315a4656; // "VFZ1"

// ---------------------------------------------------------------------------
// Regions the victim registers on every connection.  Each lies in a mapping
// of its own between two guard areas; kind is also the index in
// fz_target.regions.
enum region_kind : u8 {
	R_RW,      // every remote right (+ flush global, verify CRC32c);
		   // straddles a 4 GiB boundary of the address space if it can
	R_RO,      // remote read only; crosses a page boundary
	R_WO,      // remote write only
	R_LOCAL,   // local write only: its STag is an lkey to the peer
	R_ATOMIC,  // remote atomic only
	R_FLUSH,   // shared file mapping: remote read, flush global and
		   // persistent, verify SHA-256; no write
	R_OTHERPD, // every remote right, but in a second PD
	R_DEREG,   // registered, then deregistered before the accept: stale
	R_RECV,    // local write: the posted receives' SGEs point here
	R_SINK,    // local write: where the victim's own Reads/Atomics land
	R_SRC,     // local: what the victim's own Sends/Writes carry
	R_COUNT
};

inline const char *region_name(unsigned k)
{
	static const char *const n[] = {"rw",     "ro",   "wo",   "local",
					"atomic", "flush", "otherpd", "dereg",
					"recv",   "sink", "src"};
	return k < R_COUNT ? n[k] : "?";
}

// fz_region.rights
enum : u8 {
	RT_LW = 0x01, // local write
	RT_RR = 0x02, // remote read
	RT_RW = 0x04, // remote write
	RT_RA = 0x08, // remote atomic
	RT_FG = 0x10, // flush global
	RT_FP = 0x20, // flush persistent
	RT_VC = 0x40, // verify CRC32c
	RT_VS = 0x80, // verify SHA-256
};

struct fz_region {
	u32 stag; // 0: not registered (the device lacks the rights)
	u8 kind;
	u8 rights;
	u16 rsvd;
	u64 addr;
	u32 len;
};
// Packed by hand into the private data (target_encode): 20 octets each.
constexpr std::size_t region_wire_len = 20;

// Guard octets before and after each region's window.
constexpr std::size_t guard_len = 4096 + 64;

// Bytes of a region's window when the connection starts, and of its
// guards at all times.
inline u8 region_byte(unsigned kind, std::size_t off)
{
	return static_cast<u8>(off * 37 + kind * 101 + (off >> 9) * 7 + 0x5a);
}

inline u8 canary_byte(unsigned kind, std::size_t i)
{
	return static_cast<u8>(0xc3 ^ (i * 13 + kind * 29 + (i >> 8)));
}

// ---------------------------------------------------------------------------
// Receives.  Receive number k (0, 1, ... in the order they are consumed)
// has layout k % recv_layout_count and lives in area k % n_recv of R_RECV:
// a receive is reposted only after it completed, so no two posted receives
// share an area.
struct fz_sge {
	u32 off; // in the area
	u32 len;
};
struct fz_recv_layout {
	unsigned num_sge;
	fz_sge sge[4];
};
constexpr fz_recv_layout recv_layouts[] = {
	{1, {{0, 256}}},
	{2, {{0, 64}, {80, 200}}},
	{3, {{0, 1}, {16, 7}, {40, 1000}}},
	{0, {}},
	{4, {{0, 16}, {32, 0}, {48, 32}, {96, 4096}}},
	{1, {{0, 4096}}},
	{2, {{0, 8}, {24, 8}}},
	{1, {{0, 0}}},
};
constexpr unsigned recv_layout_count = sizeof(recv_layouts) / sizeof(recv_layouts[0]);
constexpr u32 recv_area_len = 4096 + 256;
constexpr u8 recv_fill = 0xee; // a receive's SGEs and gaps before any Send
constexpr unsigned max_recv = 16;

inline u32 recv_capacity(unsigned k)
{
	const fz_recv_layout &l = recv_layouts[k % recv_layout_count];
	u32 n = 0;
	for (unsigned i = 0; i < l.num_sge; i++)
		n += l.sge[i].len;
	return n;
}

// Payload octet at message offset M of every Send message (the fuzzer
// derives a segment's payload from the MO it puts in its header, whatever
// else it mutates).  A successful receive holds exactly these.
inline u8 send_byte(u32 m)
{
	return static_cast<u8>((m * 131 + 7) ^ (m >> 8));
}

// ---------------------------------------------------------------------------
// Operations the victim posts toward the fuzzer once connected.  Action k
// uses window k of R_SINK (sink_window octets) and names the fuzzer's
// (fake) buffer fake_stag(k) at fake_to(k).
enum act_kind : u8 {
	A_NONE,
	A_READ,       // RDMA Read of len octets into sink window k
	A_FETCH_ADD,  // 8 octets into the window
	A_CMP_SWAP,
	A_SEND,       // len octets of R_SRC
	A_WRITE,      // len octets of R_SRC to fake_stag(k)
	A_FLUSH,      // global, range
	A_AWRITE,     // Atomic Write
	A_SEND_IMM,   // Send with Immediate (IBV_WR_SEND_WITH_IMM), len octets
	A_COUNT
};
constexpr unsigned max_actions = 8;
constexpr u32 sink_window = 1024;

inline const char *act_name(unsigned k)
{
	static const char *const n[] = {"none",  "read",  "fetch_add", "cmp_swap", "send",
					"write", "flush", "awrite",    "send_imm"};
	return k < A_COUNT ? n[k] : "?";
}

inline u32 fake_stag(unsigned k) { return 0xf22a0000u | (k << 8) | 0x5b; }
inline u64 fake_to(unsigned k) { return 0x00007f5500000000ull + (u64)k * 0x10000; }

// The octets of the fuzzer's fake buffer of action k (what its Read
// Responses carry) and the original value its Atomic Response reports.
inline u8 fake_byte(unsigned k, u32 off)
{
	return static_cast<u8>((off * 11 + k * 53 + 0x21) ^ (off >> 7));
}
inline u64 fake_atomic_orig(unsigned k) { return 0x0123456789abcdefull ^ ((u64)k * 0x1111111111111111ull); }

struct fz_action {
	u8 kind;
	u8 flags; // rsvd
	u16 len;
};

// ---------------------------------------------------------------------------
// fuzzer -> victim
enum : u8 {
	HF_QUIT = 0x01,        // serve nothing more: print the summary, exit
	HF_QP_FIRST = 0x02,    // tear down QP before the MRs (default: MRs first)
	HF_BAD_RECV = 0x04,    // receive bad_recv_at has an SGE without local write
	HF_NO_REPOST = 0x08,   // do not repost completed receives
	// Only valid frames come: a successful receive holds send_byte()s, a
	// successful Read the fake_byte()s, an Atomic fake_atomic_orig().
	// Without it a mutated frame may legitimately deliver other octets,
	// and only what lies beyond them is checked.
	HF_STRICT_DATA = 0x10,
};

struct fz_hello {
	u32 magic;
	u32 case_id;
	u64 seed;
	u8 ird; // rdma_conn_param.responder_resources
	u8 ord; // initiator_depth
	u8 n_recv; // 1..max_recv receives posted before the accept
	u8 flags;  // HF_*
	u8 n_actions;
	u8 bad_recv_at;
	u8 rsvd[2];
	fz_action actions[max_actions];
};
static_assert(sizeof(fz_hello) == 56);

inline fz_hello fz_default_hello()
{
	fz_hello h{};
	h.ird = 4;
	h.ord = 4;
	h.n_recv = 8;
	return h;
}

// victim -> fuzzer
enum : u8 {
	TF_CLIENT = 0x01, // the victim connected (client mode)
};

struct fz_target {
	u32 magic;
	u32 conn;    // the victim's connection number
	u8 n_regions;
	u8 ird, ord; // what it passed to rdma_accept/rdma_connect
	u8 n_recv;   // receives posted
	u8 flags;
	u8 rsvd[3];
	fz_region regions[R_COUNT];
};
constexpr std::size_t target_header_len = 16;
constexpr std::size_t target_wire_len = target_header_len + R_COUNT * region_wire_len;
static_assert(target_wire_len <= 255, "fits the ULP private data of iw_cm");

inline void put_le(u8 *p, u64 v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = static_cast<u8>(v >> (8 * i));
}
inline u64 get_le(const u8 *p, unsigned n)
{
	u64 v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= static_cast<u64>(p[i]) << (8 * i);
	return v;
}

inline std::size_t target_encode(const fz_target &t, u8 *out)
{
	std::memset(out, 0, target_wire_len);
	put_le(out, t.magic, 4);
	put_le(out + 4, t.conn, 4);
	out[8] = t.n_regions;
	out[9] = t.ird;
	out[10] = t.ord;
	out[11] = t.n_recv;
	out[12] = t.flags;
	for (unsigned i = 0; i < R_COUNT; i++) {
		u8 *r = out + target_header_len + i * region_wire_len;
		put_le(r, t.regions[i].stag, 4);
		r[4] = t.regions[i].kind;
		r[5] = t.regions[i].rights;
		put_le(r + 6, t.regions[i].addr, 8);
		put_le(r + 14, t.regions[i].len, 4);
	}
	return target_wire_len;
}

inline bool target_decode(const u8 *p, std::size_t n, fz_target &t)
{
	if (n < target_wire_len)
		return false;
	t = fz_target{};
	t.magic = static_cast<u32>(get_le(p, 4));
	t.conn = static_cast<u32>(get_le(p + 4, 4));
	t.n_regions = p[8];
	t.ird = p[9];
	t.ord = p[10];
	t.n_recv = p[11];
	t.flags = p[12];
	if (t.magic != target_magic || t.n_regions != R_COUNT)
		return false;
	for (unsigned i = 0; i < R_COUNT; i++) {
		const u8 *r = p + target_header_len + i * region_wire_len;
		t.regions[i].stag = static_cast<u32>(get_le(r, 4));
		t.regions[i].kind = r[4];
		t.regions[i].rights = r[5];
		t.regions[i].addr = get_le(r + 6, 8);
		t.regions[i].len = static_cast<u32>(get_le(r + 14, 4));
	}
	return true;
}

inline bool hello_decode(const void *p, std::size_t n, fz_hello &h)
{
	if (n < sizeof(fz_hello))
		return false;
	std::memcpy(&h, p, sizeof(h));
	if (h.magic != hello_magic)
		return false;
	if (h.n_recv < 1 || h.n_recv > max_recv)
		h.n_recv = 8;
	if (h.n_actions > max_actions)
		h.n_actions = max_actions;
	return true;
}

// ---------------------------------------------------------------------------
// Both programs' messages: printf into a string (up to 2047 characters).
__attribute__((format(printf, 1, 0))) inline std::string vstrf(const char *fmt, va_list ap)
{
	char b[2048];
	std::vsnprintf(b, sizeof(b), fmt, ap);
	return b;
}

__attribute__((format(printf, 1, 2))) inline std::string strf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	std::string s = vstrf(fmt, ap);
	va_end(ap);
	return s;
}

} // namespace xiw_fuzz

#endif
