// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// The wire fuzzer's description of what it sends: frame_spec, one DDP
// segment with symbolic fields (a region's STag or address, resolved
// against the fz_target of the connection it is sent on), its framing
// mutations, and the line format of tests/fuzz/seeds/*.seed, which the
// fuzzer also writes when it dumps a case (--dump-dir).  And the random
// number generator everything is drawn from.
//
// Seed file format: one directive per line, '#' starts a comment.
//   conn KEY=VALUE...     the connection (MPA frames, victim config), see
//                         conn_cfg; must come first, at most once
//   frame OP KEY=VALUE... one FPDU: OP names a template (op_templates),
//                         KEYs override its fields (see frame_spec)
//   bytes HEX             octets sent as they are (no framing)
//   respond               answer the victim's oldest request correctly
//   wait MS               read what comes for MS milliseconds
//   answers MS            read until every QN 1 request sent so far is
//                         answered, at most MS milliseconds: what a correct
//                         peer does before it exceeds xiw's IRD (the
//                         generator waits so, and its dumps say where)
//   stall MS              send nothing for MS milliseconds
//   pace MS               from now on read for MS milliseconds after each
//                         frame (default 5; 0 sends back to back)
//   deaf 1 | deaf 0       stop (resume) reading from the socket: what xiw
//                         sends stays in TCP's queues until then
//   fin | rst             end the connection: FIN, or RST (SO_LINGER 0)
//   expect WHAT           at the end of the case: alive | answered (alive,
//                         and every well-formed QN 1 request answered) |
//                         closed | term (any Terminate) | term L/T/C
// Values: numbers (0x.. or decimal, may be negative), or a region name of
// fuzz_proto.h (rw ro wo local atomic flush otherpd dereg recv sink src):
// its STag in STag fields (NAME, NAME^X flips key bits, NAME+X moves the
// index with X a multiple of 0x100), its address elsewhere (NAME+OFF,
// NAME-OFF, NAME.end+OFF), NAME.len+OFF its length; "req" is the Request
// Identifier of the victim's oldest unanswered Atomic Request.
#ifndef XIW_TESTS_FUZZ_FZ_SPEC_H
#define XIW_TESTS_FUZZ_FZ_SPEC_H

#include "fuzz_proto.h"
#include "raw_peer.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace xiw_fuzz {

using xiw_raw::bytes;
using i64 = std::int64_t;

// ---------------------------------------------------------------------------
// xoshiro256** seeded through splitmix64
class rng {
public:
	explicit rng(u64 seed = 1) { reseed(seed); }
	void reseed(u64 seed)
	{
		u64 z = seed;
		for (auto &w : s_) {
			z += 0x9e3779b97f4a7c15ull;
			u64 x = z;
			x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
			x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
			w = x ^ (x >> 31);
		}
	}
	u64 next()
	{
		const u64 r = rotl(s_[1] * 5, 7) * 9;
		const u64 t = s_[1] << 17;
		s_[2] ^= s_[0];
		s_[3] ^= s_[1];
		s_[1] ^= s_[2];
		s_[0] ^= s_[3];
		s_[2] ^= t;
		s_[3] = rotl(s_[3], 45);
		return r;
	}
	// 0 <= result < n (n > 0)
	u64 below(u64 n) { return n ? next() % n : 0; }
	// lo <= result <= hi
	u64 range(u64 lo, u64 hi) { return lo + below(hi - lo + 1); }
	// true with probability num/den
	bool chance(unsigned num, unsigned den) { return below(den) < num; }
	template <class T> const T &pick(const std::vector<T> &v) { return v[below(v.size())]; }
	template <class T, std::size_t N> const T &pick(const T (&v)[N]) { return v[below(N)]; }

private:
	static u64 rotl(u64 x, int k) { return (x << k) | (x >> (64 - k)); }
	u64 s_[4];
};

// Deterministic filler octets (payloads drawn from a 64-bit seed).
inline void rand_fill(u64 seed, u8 *p, std::size_t n)
{
	rng r(seed ^ 0x5851f42d4c957f2dull);
	for (std::size_t i = 0; i < n; i += 8) {
		const u64 v = r.next();
		for (std::size_t j = 0; j < 8 && i + j < n; j++)
			p[i + j] = static_cast<u8>(v >> (8 * j));
	}
}

// ---------------------------------------------------------------------------
// Symbolic values

// The I < N whose NAME(I) is T, or -1: a name of the text form back to
// the value it names.
template <class Name> int name_index(const std::string &t, unsigned n, Name name)
{
	for (unsigned i = 0; i < n; i++)
		if (t == name(i))
			return static_cast<int>(i);
	return -1;
}

enum field_type : u8 { FT_NUM, FT_STAG, FT_ADDR };

struct sym {
	enum kind : u8 {
		abs,    // v
		reg,    // region's STag (FT_STAG: + off, ^ x) or address + off
		regend, // region's address + length + off
		reglen, // region's length + off
		req,    // the victim's oldest unanswered Atomic Request Identifier + off
	};
	kind k = abs;
	u8 region = 0;
	i64 off = 0;
	u32 x = 0;
	u64 v = 0;

	static sym num(u64 v)
	{
		sym s;
		s.v = v;
		return s;
	}
	static sym at(unsigned region, i64 off = 0)
	{
		sym s;
		s.k = reg;
		s.region = static_cast<u8>(region);
		s.off = off;
		return s;
	}
	static sym stag(unsigned region, u32 x = 0, i64 add = 0)
	{
		sym s = at(region, add);
		s.x = x;
		return s;
	}
	static sym end(unsigned region, i64 off = 0)
	{
		sym s = at(region, off);
		s.k = regend;
		return s;
	}
	static sym len(unsigned region, i64 off = 0)
	{
		sym s = at(region, off);
		s.k = reglen;
		return s;
	}
	static sym request(i64 off = 0)
	{
		sym s;
		s.k = req;
		s.off = off;
		return s;
	}
};

struct resolve_ctx {
	const fz_target *t = nullptr;
	std::optional<u32> req_id;
};

inline u64 resolve(const sym &s, field_type ft, const resolve_ctx &c)
{
	const fz_region *r = c.t && s.region < R_COUNT ? &c.t->regions[s.region] : nullptr;
	switch (s.k) {
	case sym::abs:
		return s.v;
	case sym::reg:
		if (!r)
			return static_cast<u64>(s.off);
		if (ft == FT_STAG)
			return static_cast<u32>((r->stag ^ s.x) + static_cast<u32>(s.off));
		return r->addr + static_cast<u64>(s.off);
	case sym::regend:
		return r ? r->addr + r->len + static_cast<u64>(s.off) : static_cast<u64>(s.off);
	case sym::reglen:
		return (r ? r->len : 0) + static_cast<u64>(s.off);
	case sym::req:
		return c.req_id.value_or(0) + static_cast<u64>(s.off);
	}
	return 0;
}

inline std::string hexnum(u64 v)
{
	char b[32];
	std::snprintf(b, sizeof(b), "0x%" PRIx64, v);
	return b;
}

inline std::string offtext(i64 off)
{
	if (!off)
		return "";
	return off < 0 ? "-" + hexnum(static_cast<u64>(-off)) : "+" + hexnum(static_cast<u64>(off));
}

inline std::string sym_text(const sym &s)
{
	const std::string n = s.region < R_COUNT ? region_name(s.region) : "?";
	switch (s.k) {
	case sym::abs:
		return hexnum(s.v);
	case sym::reg:
		return n + (s.x ? "^" + hexnum(s.x) : "") + offtext(s.off);
	case sym::regend:
		return n + ".end" + offtext(s.off);
	case sym::reglen:
		return n + ".len" + offtext(s.off);
	case sym::req:
		return "req" + offtext(s.off);
	}
	return "?";
}

inline bool parse_num(const std::string &t, u64 &v)
{
	if (t.empty())
		return false;
	char *end = nullptr;
	errno = 0;
	if (t[0] == '-') {
		const long long x = std::strtoll(t.c_str(), &end, 0);
		v = static_cast<u64>(x);
	} else {
		v = std::strtoull(t.c_str(), &end, 0);
	}
	return !errno && end && !*end;
}

inline bool parse_sym(const std::string &t, sym &s)
{
	u64 v;
	if (parse_num(t, v)) {
		s = sym::num(v);
		return true;
	}
	std::size_t i = 0;
	while (i < t.size() && (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_'))
		i++;
	const std::string name = t.substr(0, i);
	std::string rest = t.substr(i);
	s = sym{};
	if (name == "req") {
		s.k = sym::req;
	} else {
		const int r = name_index(name, R_COUNT, region_name);
		if (r < 0)
			return false;
		s.k = sym::reg;
		s.region = static_cast<u8>(r);
		if (rest.rfind(".end", 0) == 0) {
			s.k = sym::regend;
			rest = rest.substr(4);
		} else if (rest.rfind(".len", 0) == 0) {
			s.k = sym::reglen;
			rest = rest.substr(4);
		}
		if (!rest.empty() && rest[0] == '^') {
			std::size_t j = 1;
			while (j < rest.size() && rest[j] != '+' && rest[j] != '-')
				j++;
			if (!parse_num(rest.substr(1, j - 1), v))
				return false;
			s.x = static_cast<u32>(v);
			rest = rest.substr(j);
		}
	}
	if (rest.empty())
		return true;
	if (rest[0] != '+' && rest[0] != '-')
		return false;
	if (!parse_num(rest.substr(1), v))
		return false;
	s.off = rest[0] == '-' ? -static_cast<i64>(v) : static_cast<i64>(v);
	return true;
}

// ---------------------------------------------------------------------------
// Op templates: the RDMAP header fields that follow the DDP header

struct field_def {
	const char *name;
	u8 width; // 4 or 8
	field_type type;
};

struct op_template {
	const char *name;
	u8 rv, opcode;
	bool tagged;
	u8 qn;
	std::vector<field_def> fields;
};

inline const std::vector<op_template> &op_templates()
{
	static const std::vector<op_template> t = {
		{"write", 1, XIW_OP_WRITE, true, 0, {}},
		{"read_req", 1, XIW_OP_READ_REQ, false, XIW_QN_READ_REQ,
		 {{"sink_stag", 4, FT_NUM}, {"sink_to", 8, FT_NUM}, {"size", 4, FT_NUM},
		  {"src_stag", 4, FT_STAG}, {"src_to", 8, FT_ADDR}}},
		{"read_resp", 1, XIW_OP_READ_RESP, true, 0, {}},
		{"send", 1, XIW_OP_SEND, false, XIW_QN_SEND, {}},
		{"send_inv", 1, XIW_OP_SEND_INV, false, XIW_QN_SEND, {}},
		{"send_se", 1, XIW_OP_SEND_SE, false, XIW_QN_SEND, {}},
		{"send_se_inv", 1, XIW_OP_SEND_SE_INV, false, XIW_QN_SEND, {}},
		{"terminate", 1, XIW_OP_TERMINATE, false, XIW_QN_TERMINATE, {{"ctrl", 4, FT_NUM}}},
		{"imm", 1, XIW_OP_IMM, false, XIW_QN_SEND, {{"imm", 8, FT_NUM}}},
		{"imm_se", 1, XIW_OP_IMM_SE, false, XIW_QN_SEND, {{"imm", 8, FT_NUM}}},
		{"atomic_req", 1, XIW_OP_ATOMIC_REQ, false, XIW_QN_READ_REQ,
		 {{"aop", 4, FT_NUM},
		  {"req_id", 4, FT_NUM},
		  {"stag", 4, FT_STAG},
		  {"to", 8, FT_ADDR},
		  {"add", 8, FT_NUM},
		  {"add_mask", 8, FT_NUM},
		  {"cmp", 8, FT_NUM},
		  {"cmp_mask", 8, FT_NUM}}},
		{"atomic_resp", 1, XIW_OP_ATOMIC_RESP, false, XIW_QN_RESPONSE,
		 {{"req_id", 4, FT_NUM}, {"orig", 8, FT_NUM}}},
		{"flush_req", 1, XIW_OP_FLUSH_REQ, false, XIW_QN_READ_REQ,
		 {{"stag", 4, FT_STAG}, {"len", 4, FT_NUM}, {"to", 8, FT_ADDR}, {"flags", 4, FT_NUM}}},
		{"flush_resp", 1, XIW_OP_FLUSH_RESP, false, XIW_QN_RESPONSE, {}},
		{"verify_req", 1, XIW_OP_VERIFY_REQ, false, XIW_QN_READ_REQ,
		 {{"stag", 4, FT_STAG}, {"len", 4, FT_NUM}, {"to", 8, FT_ADDR}}},
		{"verify_resp", 1, XIW_OP_VERIFY_RESP, false, XIW_QN_RESPONSE, {}},
		{"awrite_req", 1, XIW_OP_ATOMIC_WRITE_REQ, false, XIW_QN_READ_REQ,
		 {{"stag", 4, FT_STAG}, {"len", 4, FT_NUM}, {"to", 8, FT_ADDR}, {"data", 8, FT_NUM}}},
		{"awrite_resp", 1, XIW_OP_ATOMIC_WRITE_RESP, false, XIW_QN_RESPONSE, {}},
		{"read_req_v2", 2, XIW_OP2_READ_REQ_V2, false, XIW_QN_READ_REQ,
		 {{"size", 4, FT_NUM}, {"stag", 4, FT_STAG}, {"to", 8, FT_ADDR}}},
		{"read_resp_v2", 2, XIW_OP2_READ_RESP_V2, false, XIW_QN_RESPONSE, {}},
		{"send_imm", 2, XIW_OP2_SEND_IMM, false, XIW_QN_SEND, {}},
		{"send_inv_imm", 2, XIW_OP2_SEND_INV_IMM, false, XIW_QN_SEND, {}},
		{"send_se_imm", 2, XIW_OP2_SEND_SE_IMM, false, XIW_QN_SEND, {}},
		{"send_se_inv_imm", 2, XIW_OP2_SEND_SE_INV_IMM, false, XIW_QN_SEND, {}},
		{"raw", 1, 0, false, 0, {}},
	};
	return t;
}

inline const op_template *find_template(const std::string &n)
{
	for (const auto &t : op_templates())
		if (n == t.name)
			return &t;
	return nullptr;
}

// The template whose (RV, opcode) these are, if any.
inline const op_template *template_of(unsigned rv, unsigned opcode)
{
	for (const auto &t : op_templates())
		if (std::string(t.name) != "raw" && t.rv == rv && t.opcode == opcode)
			return &t;
	// RV 2 carries the RFC 5040/7306 messages too (draft-wood §4.1).
	return rv == 2 && opcode < 0x10 ? template_of(1, opcode) : nullptr;
}

// ---------------------------------------------------------------------------
// One FPDU to send

enum payload_kind : u8 {
	PK_NONE,
	PK_SEND, // send_byte(MO + i)
	PK_RAND, // rand_fill(pseed)
	PK_FILL, // pseed's low octet
	PK_FAKE, // fake_byte(pseed >> 32, (u32)pseed + i): a Read Response's data
	PK_HEX,  // phex
};

struct frame_spec {
	const op_template *tpl = nullptr;
	u8 ddp_ctrl = 0x41;
	u8 rdmap_ctrl = 0x40;
	bool tagged = false; // the DDP header's layout
	sym stag, to;        // tagged
	sym inval;           // untagged
	u32 qn = 0, msn = 1, mo = 0;
	std::vector<sym> fields; // of tpl->fields
	bytes extra;             // octets between the RDMAP header and the payload
	payload_kind pk = PK_NONE;
	u32 plen = 0;
	u64 pseed = 0;
	bytes phex;
	// Framing
	std::optional<u32> ulpdu; // ULPDU_Length claimed, the frame following it
	std::optional<u32> desync; // ULPDU_Length claimed, the frame not following it
	xiw_raw::frame_opts::crc_kind crc = xiw_raw::frame_opts::crc_good;
	u32 crc_value = 0;
	int lead = -1;
	u16 mxor = 0, mrsvd = 0;
	u8 pad = 0;
	std::vector<u32> split; // send the framed octets in pieces at these offsets
	int trunc = -1;         // send only this many framed octets

	// Not in the text: the generator's view.
	bool valid = false;       // must be accepted (and answered, if a request)
	std::vector<u32> allowed; // Terminates (layer<<16|etype<<8|ecode) it may draw
	bool must_fail = false;   // a request that must not be answered
	std::string mutation;     // what was changed, if anything
};

inline frame_spec spec_from_template(const op_template *t)
{
	frame_spec s;
	s.tpl = t;
	s.tagged = t->tagged;
	s.ddp_ctrl = xiw_ddp_ctrl(t->tagged, 1);
	s.rdmap_ctrl = xiw_rdmap_ctrl(t->rv, t->opcode);
	s.qn = t->qn;
	s.fields.assign(t->fields.size(), sym{});
	return s;
}

inline int field_index(const frame_spec &s, const std::string &n)
{
	for (std::size_t i = 0; i < s.tpl->fields.size(); i++)
		if (n == s.tpl->fields[i].name)
			return static_cast<int>(i);
	return -1;
}

inline sym &field(frame_spec &s, const char *n)
{
	static sym dummy;
	const int i = field_index(s, n);
	return i < 0 ? dummy : s.fields[static_cast<std::size_t>(i)];
}

// The segment (ULPDU_Length + ULPDU) SPEC describes on a connection.
inline bytes build_segment(const frame_spec &s, const resolve_ctx &c)
{
	bytes out;
	if (s.tagged)
		out = xiw_raw::seg_tagged(s.ddp_ctrl, s.rdmap_ctrl,
					  static_cast<u32>(resolve(s.stag, FT_STAG, c)),
					  resolve(s.to, FT_ADDR, c), nullptr, 0);
	else
		out = xiw_raw::seg_untagged(s.ddp_ctrl, s.rdmap_ctrl,
					    static_cast<u32>(resolve(s.inval, FT_STAG, c)), s.qn,
					    s.msn, s.mo, nullptr, 0);
	for (std::size_t i = 0; i < s.fields.size() && i < s.tpl->fields.size(); i++) {
		const field_def &f = s.tpl->fields[i];
		const u64 v = resolve(s.fields[i], f.type, c);
		const std::size_t at = out.size();
		out.resize(at + f.width);
		if (f.width == 8)
			xiw_raw::put_be64(out.data() + at, v);
		else
			xiw_raw::put_be32(out.data() + at, static_cast<u32>(v));
	}
	out.insert(out.end(), s.extra.begin(), s.extra.end());
	const std::size_t at = out.size();
	switch (s.pk) {
	case PK_NONE:
		break;
	case PK_SEND:
		out.resize(at + s.plen);
		for (u32 i = 0; i < s.plen; i++)
			out[at + i] = send_byte(s.mo + i);
		break;
	case PK_RAND:
		out.resize(at + s.plen);
		rand_fill(s.pseed, out.data() + at, s.plen);
		break;
	case PK_FILL:
		out.resize(at + s.plen, static_cast<u8>(s.pseed));
		break;
	case PK_FAKE:
		out.resize(at + s.plen);
		for (u32 i = 0; i < s.plen; i++)
			out[at + i] = fake_byte(static_cast<unsigned>(s.pseed >> 32),
						static_cast<u32>(s.pseed) + i);
		break;
	case PK_HEX:
		out.insert(out.end(), s.phex.begin(), s.phex.end());
		break;
	}
	if (s.ulpdu)
		out.resize(XIW_MPA_HDR_LEN + std::min<u32>(*s.ulpdu, 0xffff), 0);
	// Longer than ULPDU_Length can say: cut (the field wraps otherwise).
	if (out.size() > XIW_MPA_HDR_LEN + 0xffff)
		out.resize(XIW_MPA_HDR_LEN + 0xffff);
	xiw_raw::seg_fix_len(out);
	if (s.desync)
		xiw_raw::put_be16(out.data(), static_cast<u16>(*s.desync));
	return out;
}

// A short name of what a segment claims to be, for the statistics.
inline std::string seg_label(u8 ddp_ctrl, u8 rdmap_ctrl)
{
	const unsigned rv = xiw_rdmap_rv(rdmap_ctrl), op = xiw_rdmap_opcode(rdmap_ctrl);
	const op_template *t = template_of(rv, op);
	char b[64];
	std::snprintf(b, sizeof(b), "%u:%02x%s%s%s", rv, op, xiw_ddp_tagged(ddp_ctrl) ? "T" : "U",
		      t ? " " : "", t ? t->name : "");
	return b;
}

// ---------------------------------------------------------------------------
// Text form

inline std::string hex_text(const bytes &b)
{
	static const char d[] = "0123456789abcdef";
	std::string s;
	for (u8 x : b) {
		s += d[x >> 4];
		s += d[x & 15];
	}
	return s.empty() ? "-" : s;
}

inline bool parse_hex(const std::string &t, bytes &out)
{
	out.clear();
	if (t == "-")
		return true;
	if (t.size() % 2)
		return false;
	for (std::size_t i = 0; i < t.size(); i += 2) {
		unsigned v;
		if (std::sscanf(t.c_str() + i, "%2x", &v) != 1)
			return false;
		out.push_back(static_cast<u8>(v));
	}
	return true;
}

inline const char *crc_name(xiw_raw::frame_opts::crc_kind k)
{
	switch (k) {
	case xiw_raw::frame_opts::crc_good: return "good";
	case xiw_raw::frame_opts::crc_bad: return "bad";
	case xiw_raw::frame_opts::crc_zero: return "zero";
	case xiw_raw::frame_opts::crc_random: return "value";
	}
	return "?";
}

// Every field, so that the line means the same whatever defaults become.
inline std::string spec_text(const frame_spec &s)
{
	std::ostringstream o;
	o << "frame " << s.tpl->name << " ddp=" << hexnum(s.ddp_ctrl) << " rctrl=" << hexnum(s.rdmap_ctrl)
	  << " tagged=" << (s.tagged ? 1 : 0);
	// The other layout's fields only where they matter (a Send payload
	// follows MO).
	if (s.tagged)
		o << " stag=" << sym_text(s.stag) << " to=" << sym_text(s.to);
	if (!s.tagged)
		o << " inval=" << sym_text(s.inval) << " qn=" << hexnum(s.qn) << " msn=" << hexnum(s.msn);
	if (!s.tagged || s.pk == PK_SEND)
		o << " mo=" << hexnum(s.mo);
	for (std::size_t i = 0; i < s.fields.size(); i++)
		o << " h." << s.tpl->fields[i].name << "=" << sym_text(s.fields[i]);
	if (!s.extra.empty())
		o << " extra=" << hex_text(s.extra);
	switch (s.pk) {
	case PK_NONE:
		break;
	case PK_SEND:
		o << " payload=send len=" << s.plen;
		break;
	case PK_RAND:
		o << " payload=rand:" << hexnum(s.pseed) << " len=" << s.plen;
		break;
	case PK_FILL:
		o << " payload=fill:" << hexnum(s.pseed & 0xff) << " len=" << s.plen;
		break;
	case PK_FAKE:
		o << " payload=fake:" << (s.pseed >> 32) << ":" << hexnum(s.pseed & 0xffffffffu)
		  << " len=" << s.plen;
		break;
	case PK_HEX:
		o << " payload=hex:" << hex_text(s.phex);
		break;
	}
	if (s.ulpdu)
		o << " ulpdu=" << *s.ulpdu;
	if (s.desync)
		o << " desync=" << *s.desync;
	if (s.crc != xiw_raw::frame_opts::crc_good)
		o << " crc=" << crc_name(s.crc);
	if (s.crc == xiw_raw::frame_opts::crc_random)
		o << " crcval=" << hexnum(s.crc_value);
	if (s.lead >= 0)
		o << " lead=" << s.lead;
	if (s.mxor)
		o << " mxor=" << hexnum(s.mxor);
	if (s.mrsvd)
		o << " mrsvd=" << hexnum(s.mrsvd);
	if (s.pad)
		o << " pad=" << hexnum(s.pad);
	if (!s.split.empty()) {
		o << " split=";
		for (std::size_t i = 0; i < s.split.size(); i++)
			o << (i ? "," : "") << s.split[i];
	}
	if (s.trunc >= 0)
		o << " trunc=" << s.trunc;
	if (!s.mutation.empty())
		o << "  # " << s.mutation;
	return o.str();
}

inline std::vector<std::string> split_words(const std::string &line)
{
	std::vector<std::string> w;
	std::istringstream in(line);
	std::string x;
	while (in >> x) {
		if (x[0] == '#')
			break;
		w.push_back(x);
	}
	return w;
}

// The items of a comma-separated list.
inline std::vector<std::string> split_list(const std::string &v)
{
	std::vector<std::string> items;
	std::istringstream in(v);
	std::string x;
	while (std::getline(in, x, ','))
		items.push_back(x);
	return items;
}

// The parsers' way out: WHY says what is wrong.
inline bool parse_error(std::string &why, std::string what)
{
	why = std::move(what);
	return false;
}

// Hands each of the words W[FIRST..] to TAKE(KEY, VALUE, WORD), split at
// its first '='.  False at the first word that is no KEY=VALUE or that
// TAKE refuses, with WHY.
template <class Take>
bool parse_keys(const std::vector<std::string> &w, std::size_t first, std::string &why, Take take)
{
	for (std::size_t i = first; i < w.size(); i++) {
		const std::size_t eq = w[i].find('=');
		if (eq == std::string::npos)
			return parse_error(why, "expected KEY=VALUE: " + w[i]);
		if (!take(w[i].substr(0, eq), w[i].substr(eq + 1), w[i]))
			return false;
	}
	return true;
}

// The numeric keys of a line: each names the field its number goes into,
// converted to that field's type.
using num_slot = std::variant<u8 *, u16 *, u32 *, int *, bool *, std::optional<bool> *,
			      std::optional<u8> *, std::optional<u32> *>;
using num_key = std::pair<const char *, num_slot>;

// The type a number is converted to for a field of type T.
template <class T> struct slot_value {
	using type = T;
};
template <class T> struct slot_value<std::optional<T>> {
	using type = T;
};

// The field KEYS names K, or nullptr.
template <std::size_t N> const num_slot *num_key_slot(const num_key (&keys)[N], const std::string &k)
{
	for (const auto &[name, slot] : keys)
		if (k == name)
			return &slot;
	return nullptr;
}

// Stores N into the field of SLOT.
inline void set_num(const num_slot &slot, u64 n)
{
	std::visit([n]<class T>(T *to) { *to = static_cast<typename slot_value<T>::type>(n); }, slot);
}

// "payload=WHAT" of a frame line (its length is len=).
inline bool parse_payload(const std::string &v, frame_spec &s)
{
	u64 n;
	if (v == "send") {
		s.pk = PK_SEND;
	} else if (v.starts_with("rand:") && parse_num(v.substr(5), n)) {
		s.pk = PK_RAND;
		s.pseed = n;
	} else if (v.starts_with("fill:") && parse_num(v.substr(5), n)) {
		s.pk = PK_FILL;
		s.pseed = n & 0xff;
	} else if (v.starts_with("fake:")) {
		const std::size_t c = v.find(':', 5);
		u64 b;
		if (c == std::string::npos || !parse_num(v.substr(5, c - 5), n) ||
		    !parse_num(v.substr(c + 1), b))
			return false;
		s.pk = PK_FAKE;
		s.pseed = n << 32 | (b & 0xffffffffu);
	} else if (v.starts_with("hex:") && parse_hex(v.substr(4), s.phex)) {
		s.pk = PK_HEX;
	} else {
		return false;
	}
	return true;
}

// "frame OP k=v ...": the template's defaults, then the keys.  The fields
// not given keep the template's defaults (MSN 1, MO 0, zeros, L set).
inline bool parse_frame(const std::vector<std::string> &w, frame_spec &s, std::string &why)
{
	if (w.size() < 2 || !find_template(w[1]))
		return parse_error(why, "unknown frame template " +
						(w.size() > 1 ? w[1] : std::string("(none)")));
	s = spec_from_template(find_template(w[1]));
	// Applied once all keys are in: ddp= wins over t=, l= and dv=, len=
	// gives a payload kind only if payload= does not.
	std::optional<u8> ddp;
	std::optional<u32> len;
	std::optional<bool> t_bit, l_bit;
	std::optional<unsigned> dv, rv, op;
	const num_key nums[] = {
		{"ddp", &ddp}, {"rctrl", &s.rdmap_ctrl}, {"tagged", &s.tagged},
		{"t", &t_bit}, {"l", &l_bit}, {"dv", &dv}, {"rv", &rv}, {"op", &op},
		{"qn", &s.qn}, {"msn", &s.msn}, {"mo", &s.mo}, {"len", &len},
		{"ulpdu", &s.ulpdu}, {"desync", &s.desync}, {"trunc", &s.trunc}, {"lead", &s.lead},
		{"mxor", &s.mxor}, {"mrsvd", &s.mrsvd}, {"pad", &s.pad}, {"crcval", &s.crc_value},
	};
	const bool keys_ok = parse_keys(w, 2, why, [&](const std::string &k, const std::string &v,
						       const std::string &word) {
		u64 n = 0;
		sym sv;
		if (k.starts_with("h.")) {
			const int fi = field_index(s, k.substr(2));
			if (fi < 0 || !parse_sym(v, sv))
				return parse_error(why, "bad header field " + word);
			s.fields[static_cast<std::size_t>(fi)] = sv;
		} else if (k == "stag" || k == "to" || k == "inval") {
			if (!parse_sym(v, sv))
				return parse_error(why, "bad value " + word);
			(k == "stag" ? s.stag : k == "to" ? s.to : s.inval) = sv;
		} else if (k == "payload") {
			if (!parse_payload(v, s))
				return parse_error(why, "bad payload " + v);
		} else if (k == "extra") {
			if (!parse_hex(v, s.extra))
				return parse_error(why, "bad hex " + v);
		} else if (k == "crc") {
			const int c = name_index(v, xiw_raw::frame_opts::crc_random + 1, [](unsigned i) {
				return crc_name(static_cast<xiw_raw::frame_opts::crc_kind>(i));
			});
			if (c < 0)
				return parse_error(why, "bad crc " + v);
			s.crc = static_cast<xiw_raw::frame_opts::crc_kind>(c);
		} else if (k == "split") {
			for (const std::string &x : split_list(v))
				if (parse_num(x, n))
					s.split.push_back(static_cast<u32>(n));
		} else if (const num_slot *to = num_key_slot(nums, k)) {
			if (!parse_num(v, n))
				return parse_error(why, "not a number: " + word);
			set_num(*to, n);
		} else {
			return parse_error(why, "unknown key " + k);
		}
		return true;
	});
	if (!keys_ok)
		return false;
	if (len) {
		s.plen = *len;
		if (s.pk == PK_NONE)
			s.pk = PK_FILL;
	}
	auto set_ddp = [&s](unsigned mask, unsigned bits) {
		s.ddp_ctrl = static_cast<u8>((s.ddp_ctrl & ~mask) | bits);
	};
	if (ddp) {
		s.ddp_ctrl = *ddp;
	} else {
		if (t_bit)
			set_ddp(XIW_DDP_FLAG_T, *t_bit ? XIW_DDP_FLAG_T : 0);
		if (l_bit)
			set_ddp(XIW_DDP_FLAG_L, *l_bit ? XIW_DDP_FLAG_L : 0);
		if (dv)
			set_ddp(XIW_DDP_DV_MASK, *dv & 3);
	}
	if (rv || op)
		s.rdmap_ctrl = static_cast<u8>(
			xiw_rdmap_ctrl(rv.value_or(xiw_rdmap_rv(s.rdmap_ctrl)), 0) |
			(op.value_or(xiw_rdmap_opcode(s.rdmap_ctrl)) & XIW_RDMAP_OPCODE_MASK) |
			(s.rdmap_ctrl & XIW_RDMAP_RSV_MASK));
	if (t_bit && !s.tagged && *t_bit && std::string(s.tpl->name) == "raw")
		s.tagged = true;
	return true;
}

// ---------------------------------------------------------------------------
// The connection of a case

enum rtr_choice : u8 { RTR_AUTO, RTR_NONE, RTR_WRITE, RTR_READ, RTR_SEND };

struct conn_cfg {
	u8 rev = 1;
	bool enhanced = true;   // Rev 2: the IRD/ORD word
	bool crc = true;        // C in the Request
	bool markers = false;   // M in the Request (markers from xiw)
	bool ext = true;        // XIW_MPA_FLAG_EXT
	u8 flags_extra = 0;     // other bits of the flags octet
	bool p2p = false;
	u16 offer = 0;          // RTR offered: 1 write, 2 read, 4 send
	u16 ird = 8, ord = 8;   // our IRD/ORD in the word
	rtr_choice rtr = RTR_AUTO;
	u32 rtr_len = 0;        // payload of the RTR (0: a proper one)
	int xiw_markers = -1;   // set /sys/module/xiw/parameters/mpa_markers
	int xiw_crc = -1;       // set .../mpa_crc
	fz_hello hello = fz_default_hello();
};

inline std::string actions_text(const fz_hello &h)
{
	std::string s;
	for (unsigned i = 0; i < h.n_actions; i++) {
		s += (i ? "," : "") + std::string(act_name(h.actions[i].kind));
		if (h.actions[i].len)
			s += ":" + std::to_string(h.actions[i].len);
	}
	return s.empty() ? "-" : s;
}

inline const char *rtr_name(rtr_choice r)
{
	static const char *const n[] = {"auto", "none", "write", "read", "send"};
	return n[r];
}

inline std::string cfg_text(const conn_cfg &c)
{
	std::ostringstream o;
	o << "conn rev=" << unsigned(c.rev) << " enh=" << c.enhanced << " crc=" << c.crc
	  << " markers=" << c.markers << " ext=" << c.ext << " fx=" << hexnum(c.flags_extra)
	  << " p2p=" << c.p2p << " offer=" << c.offer << " ird=" << c.ird << " ord=" << c.ord
	  << " rtr=" << rtr_name(c.rtr) << " rtrlen=" << c.rtr_len << " xm=" << c.xiw_markers
	  << " xc=" << c.xiw_crc << " hird=" << unsigned(c.hello.ird)
	  << " hord=" << unsigned(c.hello.ord) << " nrecv=" << unsigned(c.hello.n_recv)
	  << " hflags=" << hexnum(c.hello.flags) << " badrecv=" << unsigned(c.hello.bad_recv_at)
	  << " act=" << actions_text(c.hello);
	return o.str();
}

inline bool parse_cfg(const std::vector<std::string> &w, conn_cfg &c, std::string &why)
{
	fz_hello &h = c.hello;
	const num_key nums[] = {
		{"rev", &c.rev}, {"enh", &c.enhanced}, {"crc", &c.crc}, {"markers", &c.markers},
		{"ext", &c.ext}, {"fx", &c.flags_extra}, {"p2p", &c.p2p}, {"offer", &c.offer},
		{"ird", &c.ird}, {"ord", &c.ord}, {"rtrlen", &c.rtr_len},
		{"xm", &c.xiw_markers}, {"xc", &c.xiw_crc},
		{"hird", &h.ird}, {"hord", &h.ord}, {"hflags", &h.flags}, {"badrecv", &h.bad_recv_at},
	};
	return parse_keys(w, 1, why, [&](const std::string &k, const std::string &v,
					 const std::string &word) {
		u64 n = 0;
		if (k == "rtr") {
			const int r = name_index(v, RTR_SEND + 1, [](unsigned i) {
				return rtr_name(static_cast<rtr_choice>(i));
			});
			if (r < 0)
				return parse_error(why, "bad rtr " + v);
			c.rtr = static_cast<rtr_choice>(r);
		} else if (k == "act") {
			h.n_actions = 0;
			// "-": none (what actions_text says then).
			for (const std::string &a : split_list(v == "-" ? "" : v)) {
				if (h.n_actions == max_actions)
					break;
				const std::size_t col = a.find(':');
				const int kind = name_index(a.substr(0, col), A_COUNT, act_name);
				if (kind <= A_NONE)
					return parse_error(why, "bad action " + a);
				fz_action act{static_cast<u8>(kind), 0, 0};
				if (col != std::string::npos && parse_num(a.substr(col + 1), n))
					act.len = static_cast<u16>(n);
				h.actions[h.n_actions++] = act;
			}
		} else if (!parse_num(v, n)) {
			return parse_error(why, "not a number: " + word);
		} else if (k == "nrecv") {
			h.n_recv = static_cast<u8>(std::clamp<u64>(n, 1, max_recv));
		} else if (const num_slot *to = num_key_slot(nums, k)) {
			set_num(*to, n);
		} else {
			return parse_error(why, "unknown conn key " + k);
		}
		return true;
	});
}

// ---------------------------------------------------------------------------
// A case: the connection and what is done on it

struct action {
	enum kind : u8 { FRAME, BYTES, RESPOND, WAIT, ANSWERS, STALL, FIN, RST, EXPECT, PACE, DEAF };
	kind k = FRAME;
	frame_spec f;
	bytes raw;
	u32 ms = 0;
	std::string expect; // alive | closed | term | term L/T/C
};

struct fz_case {
	std::string name;
	conn_cfg cfg;
	std::vector<action> acts;
};

inline std::string action_text(const action &a)
{
	switch (a.k) {
	case action::FRAME: return spec_text(a.f);
	case action::BYTES: return "bytes " + hex_text(a.raw);
	case action::RESPOND: return "respond";
	case action::WAIT: return "wait " + std::to_string(a.ms);
	case action::ANSWERS: return "answers " + std::to_string(a.ms);
	case action::STALL: return "stall " + std::to_string(a.ms);
	case action::FIN: return "fin";
	case action::RST: return "rst";
	case action::EXPECT: return "expect " + a.expect;
	case action::PACE: return "pace " + std::to_string(a.ms);
	case action::DEAF: return "deaf " + std::to_string(a.ms);
	}
	return "?";
}

inline bool parse_case(const std::string &text, fz_case &c, std::string &why)
{
	std::istringstream in(text);
	std::string line;
	unsigned lineno = 0;
	bool have_conn = false;
	while (std::getline(in, line)) {
		lineno++;
		const std::vector<std::string> w = split_words(line);
		if (w.empty())
			continue;
		std::string err;
		action a;
		bool ok = true;
		if (w[0] == "conn") {
			ok = !have_conn && parse_cfg(w, c.cfg, err);
			if (have_conn)
				err = "a second conn line";
			have_conn = true;
			if (ok)
				continue;
		} else if (w[0] == "frame") {
			a.k = action::FRAME;
			ok = parse_frame(w, a.f, err);
		} else if (w[0] == "bytes" && w.size() == 2) {
			a.k = action::BYTES;
			ok = parse_hex(w[1], a.raw);
			err = "bad hex";
		} else if (w[0] == "respond") {
			a.k = action::RESPOND;
		} else if ((w[0] == "wait" || w[0] == "answers" || w[0] == "stall" ||
			    w[0] == "pace" || w[0] == "deaf") &&
			   w.size() == 2) {
			u64 n;
			a.k = w[0] == "wait"	    ? action::WAIT
			      : w[0] == "answers" ? action::ANSWERS
			      : w[0] == "pace"    ? action::PACE
			      : w[0] == "deaf"    ? action::DEAF
						  : action::STALL;
			ok = parse_num(w[1], n) && n <= 60000;
			a.ms = static_cast<u32>(n);
			err = "bad milliseconds";
		} else if (w[0] == "fin" || w[0] == "rst") {
			a.k = w[0] == "fin" ? action::FIN : action::RST;
		} else if (w[0] == "expect" && w.size() >= 2) {
			a.k = action::EXPECT;
			a.expect = w[1] + (w.size() > 2 ? " " + w[2] : "");
		} else {
			ok = false;
			err = "unknown directive " + w[0];
		}
		if (!ok) {
			why = "line " + std::to_string(lineno) + ": " + err;
			return false;
		}
		c.acts.push_back(a);
	}
	return true;
}

inline std::string case_text(const fz_case &c)
{
	std::string s = "# " + c.name + "\n" + cfg_text(c.cfg) + "\n";
	for (const auto &a : c.acts)
		s += action_text(a) + "\n";
	return s;
}

} // namespace xiw_fuzz

#endif
