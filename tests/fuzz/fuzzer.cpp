// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// A stateful wire fuzzer for an iWARP RNIC (xiw) over a plain TCP socket.
//
//   xiw_fuzz wire --addr A --port P [--seed N] [--cases M | --case K |
//                 --sweep-case K] [--frames N] [--seconds S] [--corpus PATH]...
//                 [--skip NAME,..] [--only-corpus] [--no-sweep] [--set-params]
//                 [--dump-dir DIR] [--progress FILE] [--kmsg] [--quit] [-v]
//   xiw_fuzz handshake --addr A --port P [--seed N] [--cases M] [--flood N]
//                 [--seconds S] [--quit]
//   xiw_fuzz respond --addr A --port P [--seed N] [--cases M] [--seconds S]
//   xiw_fuzz selfcheck [--corpus PATH]...
//
// wire: connects to a victim (victim.cpp, an rdma_cm listener on xiw) case
// after case; a case is one connection.  First the seed files of --corpus
// (fz_spec.h has their format), then 128 sweep cases (every RDMAP RV 0..3
// x opcode 0..31, with the header of its kind, after a few valid
// operations), then generated cases until --frames, --seconds or --cases
// run out.  A generated case is an MPA Request of varying form (revision 1
// or 2, IRD/ORD, peer-to-peer and its RTR, CRC, markers, the xiw extension
// flag; with --set-params also xiw's mpa_markers and mpa_crc), carrying the
// victim's configuration (fz_hello: its IRD/ORD, receives, operations it
// posts toward us), then FPDUs with correct CRCs and markers so that they
// reach DDP and RDMAP: mostly plausible sequences (Writes, Sends, Reads,
// Atomics, Flush, Verify, Atomic Write, Immediate Data, Send with
// Immediate, answers to the victim's own Reads/Atomics/...) in which one
// step is bad (a field mutated, memory without the right, more requests
// than IRD, a response to nothing, a Terminate, a broken frame, a payload
// that never comes, raw garbage), and some purely random ones.
// After every frame it reads what came back and checks every FPDU: CRC and
// markers, xiw's MSNs, that each response answers the oldest request and
// carries the data the model of the victim's memory says, that requests it
// must not get an answer to are refused, that the victim's own requests are
// what it posted.  Outcomes are counted per frame: accepted, answered, a
// Terminate (layer, type, code, matched to the frame by its copied DDP
// header), or the stream closed.  Case K of seed S draws from a generator
// of its own: "--seed S --case K" replays it (same octets, timing aside);
// --dump-dir writes a case that showed an anomaly as a seed file.  Every
// case's first line goes to --progress (and the kernel log with --kmsg), so
// that a case that crashed the machine can be replayed.
//
// handshake: MPA Requests, random and mutated (keys, revision, flags,
// private data 0..65535 octets, truncated, dripped an octet at a time); a
// well-formed one must be answered.  Then a half-open flood of --flood
// connections that send nothing or part of a Request and stay open, during
// which a good connection must be served.
//
// respond: a hostile MPA responder for the victim's client mode: mutated
// MPA Replies, then the victim's Reads, Atomics, ... answered right or
// wrong, responses to nothing, Terminates, and its own requests.
//
// Output: a summary with the frames sent, connections, the table of
// (opcode, outcome) pairs, Terminates by layer/type/code, and every anomaly
// (something a correct peer never does).  Exit status 0, 1 after an
// anomaly, 2 on usage or setup errors, 4 if the victim stopped answering.
#include "fuzz_proto.h"
#include "fz_spec.h"
#include "raw_peer.h"

#include <xiw/atomic_ops.h>

#include "../guest/sha256.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <deque>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <thread>

using namespace xiw_fuzz;
using xiw_raw::bytes;
using xiw_raw::get_be16;
using xiw_raw::get_be32;
using xiw_raw::get_be64;
using xiw_raw::now_ms;

namespace {

// ===========================================================================
// Options, statistics, reporting

struct options {
	std::string mode;
	std::string addr = "192.0.2.1";
	u16 port = 0;
	u64 seed = 0;
	bool seed_given = false;
	u64 cases = 0; // 0: as many as frames/seconds allow
	std::optional<u64> only_case;
	u64 frames = 20000;
	double seconds = 0;
	std::vector<std::string> corpus;
	std::set<std::string> skip;
	bool only_corpus = false;
	bool set_params = false;
	std::string params_dir = "/sys/module/xiw/parameters";
	std::string dump_dir;
	std::string progress;
	bool kmsg = false;
	bool quit = false;
	unsigned flood = 0;
	bool sweep = true;
	std::optional<u64> sweep_case;
	bool verbose = false;
} opt;

u32 term_key(unsigned l, unsigned t, unsigned c) { return l << 16 | t << 8 | c; }

std::string term_text(u32 k)
{
	return strf("%u/%u/%02x", k >> 16, (k >> 8) & 0xff, k & 0xff);
}

// "L/T/C" (C in hex, with or without 0x) as term_key().
u32 term_of_text(const std::string &t)
{
	unsigned l = 0, ty = 0, c = 0;
	if (std::sscanf(t.c_str(), "%u/%u/%x", &l, &ty, &c) != 3)
		return 0xffffffffu;
	return term_key(l, ty, c);
}

const char *term_name(u32 k)
{
	const unsigned l = k >> 16, t = (k >> 8) & 0xff, c = k & 0xff;
	if (l == XIW_TERM_LAYER_RDMAP) {
		if (t == XIW_RDMAP_ETYPE_LOCAL_CATASTROPHIC)
			return "RDMAP local catastrophic";
		static const char *const n[] = {"invalid STag", "base or bounds", "access rights",
						"STag not associated", "TO wrap", "invalid RDMAP version",
						"unexpected opcode", "catastrophic (stream)",
						"catastrophic (global)", "cannot invalidate"};
		if (c < 10)
			return t == XIW_RDMAP_ETYPE_REMOTE_PROTECTION ? n[c] : c >= 5 ? n[c] : "remote op";
		return "unspecified";
	}
	if (l == XIW_TERM_LAYER_DDP) {
		if (t == XIW_DDP_ETYPE_TAGGED) {
			static const char *const n[] = {"tagged: invalid STag", "tagged: base or bounds",
							"tagged: STag not associated", "tagged: TO wrap",
							"tagged: invalid DDP version"};
			return c < 5 ? n[c] : "tagged: ?";
		}
		if (t == XIW_DDP_ETYPE_UNTAGGED) {
			static const char *const n[] = {"untagged: ?", "untagged: invalid QN",
							"untagged: invalid MSN (no buffer)",
							"untagged: invalid MSN (range)", "untagged: invalid MO",
							"untagged: message too long",
							"untagged: invalid DDP version"};
			return c < 7 ? n[c] : "untagged: ?";
		}
		return "DDP local catastrophic";
	}
	if (l == XIW_TERM_LAYER_LLP) {
		static const char *const n[] = {"MPA ?", "MPA: TCP lost", "MPA: CRC", "MPA: marker/length",
						"MPA: bad Request/Reply", "MPA: local catastrophic",
						"MPA: insufficient IRD", "MPA: no matching RTR"};
		return c < 8 ? n[c] : "MPA ?";
	}
	return "?";
}

struct global_stats {
	u64 frames = 0, bytes = 0, cases = 0, conns = 0, conn_failed = 0, rejected = 0;
	u64 responses = 0, answered = 0, surprises = 0, anomalies = 0;
	std::map<std::string, std::map<std::string, u64>> table; // label -> outcome -> n
	std::map<u32, u64> terms;
	std::map<std::string, u64> mutations;
	std::map<std::string, u64> ends;
	std::map<std::string, u64> handshake;
	std::vector<std::string> anomaly_msgs, surprise_msgs;
	std::vector<std::string> seed_results;
	bool victim_gone = false;
} g;

int g_progress_fd = -1;
int g_kmsg_fd = -1;

void progress(const std::string &line)
{
	if (g_progress_fd >= 0) {
		const std::string l = line + "\n";
		if (write(g_progress_fd, l.data(), l.size()) < 0) {
			close(g_progress_fd);
			g_progress_fd = -1;
		}
	}
	if (g_kmsg_fd >= 0) {
		const std::string l = "<3>xiw-fuzz: " + line + "\n";
		if (write(g_kmsg_fd, l.data(), std::min<std::size_t>(l.size(), 900)) < 0) {
			close(g_kmsg_fd);
			g_kmsg_fd = -1;
		}
	}
}

void anomaly(const std::string &where, const std::string &what)
{
	g.anomalies++;
	const std::string m = where + ": " + what;
	if (g.anomaly_msgs.size() < 40)
		g.anomaly_msgs.push_back(m);
	std::printf("fuzz: ANOMALY: %s\n", m.c_str());
	std::fflush(stdout);
	progress("ANOMALY " + m);
}

bool g_surprised = false;

void surprise(const std::string &where, const std::string &what)
{
	g_surprised = true;
	g.surprises++;
	const std::string m = where + ": " + what;
	if (g.surprise_msgs.size() < 40)
		g.surprise_msgs.push_back(m);
	if (opt.verbose)
		std::printf("fuzz: surprise: %s\n", m.c_str());
}

bool write_param(const char *name, int value)
{
	if (value < 0 || !opt.set_params)
		return true;
	const std::string p = opt.params_dir + "/" + name;
	const int fd = open(p.c_str(), O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	const std::string v = std::to_string(value) + "\n";
	const bool ok = write(fd, v.data(), v.size()) == static_cast<ssize_t>(v.size());
	close(fd);
	return ok;
}

action mk_action(action::kind k)
{
	action a;
	a.k = k;
	return a;
}

// ===========================================================================
// One connection as MPA initiator (wire mode)

constexpr u32 our_sink_base = 0x5eed0000u;

struct out_req {
	explicit out_req(u8 o = 0) : op(o) {}
	// A request on SPAN octets at OFF of region K.
	out_req(u8 o, unsigned k, u64 off, u64 n) : op(o), region(k), src_off(off), span(n) {}
	u8 op;           // XIW_OP_*, of our request
	bool v2 = false; // Read V2
	u32 size = 0, got = 0;
	u32 sink_stag = 0;
	u64 sink_to = 0;
	u32 req_id = 0;
	bool orig_known = false;
	u64 orig = 0;
	bool must_fail = false;
	bool checked = true;       // compare data with the model
	unsigned region = R_COUNT; // Read source, Atomic/Verify target
	u64 src_off = 0;
	u64 span = 0;
	// A Read's source as it was when the Read was sent (what the response
	// must carry: later Atomics and Atomic Writes execute after it); RDMA
	// Writes sent after it may or may not show, their octets are unknown.
	bytes snap;
	std::vector<u8> snap_known;
	u8 hash_kind = 0; // Verify: 1 CRC32c, 2 SHA-256
	bytes hash;       // expected response, if known
	std::size_t frame = 0;
};

struct in_req {
	u8 op;
	unsigned k; // victim action
	u32 sink_stag = 0;
	u64 sink_to = 0;
	u32 size = 0;
	u32 req_id = 0;
	u32 sent = 0;
};

struct sent_rec {
	sent_rec(std::string l = "", bool v = false) : label(std::move(l)), valid(v) {}
	std::string label;
	bool valid = false;
	bool must_fail = false;
	std::vector<u32> allowed;
	bytes hdr; // DDP header as sent (after ULPDU_Length)
	bool responded = false;
	std::string mutation;
};

struct shadow {
	bytes v;
	std::vector<u8> known;
};

class session {
public:
	std::string where; // for messages
	int fd = -1;
	conn_cfg cfg;
	fz_target t{};
	resolve_ctx rc;
	xiw_raw::mpa_stream tx;
	xiw_raw::fpdu_reader rd;
	bool ext = false, crc_on = true, p2p = false;
	u8 rtr_op = 0xff; // XIW_OP_WRITE/READ_REQ/SEND chosen by the Reply
	u16 xiw_ird = 1;
	u32 msn_out[4] = {1, 1, 1, 1};
	u32 msn_in[4] = {1, 1, 1, 1};
	unsigned sends_done = 0; // QN 0 messages into receives
	std::deque<out_req> outq;
	std::deque<in_req> inq;
	// victim actions still to come, per class, in posting order
	std::deque<unsigned> act_qn1, act_qn0, act_write;
	u32 act_write_off = 0;
	shadow mem[R_COUNT];
	bool clean = true;
	bool dead = false;
	bool term_seen = false;
	u32 term_code = 0;
	bool term_has_hdr = false;
	bytes term_hdr;
	std::string end = "alive";
	std::string end_frame; // finish(): the frame the end is put on
	std::vector<sent_rec> sent;
	std::vector<action> log;
	u32 next_sink = 0;
	bool dry = false;     // selfcheck: nothing goes out
	bool closing = false; // we sent our FIN: the peer's is no outcome
	bool deaf = false;    // read nothing (a seed's "deaf 1")
	bool rtr_broken = false;
	bool track = false; // seed files: every QN 1 request we send is owed an answer
	u8 expect_rtr = 0xff; // responder mode: the RTR xiw owes us
	u32 rtr_sink = 0;

	void init_model();

	~session()
	{
		if (fd >= 0)
			close(fd);
	}

	// ---- connection setup
	bool open(const conn_cfg &c, std::string &why);
	// ---- sending
	void send_frame(frame_spec s);
	void send_unframed(const bytes &b);
	void send_bytes(const bytes &b, const std::vector<u32> &split = {});
	void stall(u32 ms);
	// ---- receiving
	void pump(int wait_ms);
	bool wait_outq(int ms);
	// ---- ending
	void close_fin();
	void close_rst();
	void hang_up(bool fin) { fin ? close_fin() : close_rst(); } // the case's end
	std::string finish();

	bool ext_ok() const { return ext; }
	const fz_region &reg(unsigned k) const { return t.regions[k]; }
	bool has(unsigned k, u8 rights) const
	{
		return t.regions[k].stag && (t.regions[k].rights & rights) == rights;
	}
	// A frame went out whose effect is not known (a mutation xiw may take
	// or refuse): no octet of any region is known any more, nor what the
	// requests still outstanding find at their targets.  (Found as an
	// "anomaly" under the sanitizer kernel, seed 29002895864 case 4155: a
	// Write with DDP reserved bits set, which xiw ignores, placed over the
	// target of an earlier FetchAdd before it executed, RFC 7306 §7.)
	void dirty()
	{
		clean = false;
		for (unsigned k = 0; k < R_COUNT; k++)
			write_overlap(k, 0, ~0ull);
		for (auto &m : mem)
			std::fill(m.known.begin(), m.known.end(), 0);
	}
	u32 new_sink() { return our_sink_base + (next_sink++ & 0xffff); }
	// An RDMA Write of [OFF, OFF + N) of region K went out: outstanding
	// requests on those octets may see it or not.
	void write_overlap(unsigned k, u64 off, u64 n)
	{
		for (out_req &o : outq) {
			if (o.region != k || off >= o.src_off + o.span || o.src_off >= off + n)
				continue;
			const u64 a = std::max(off, o.src_off), b = std::min(off + n, o.src_off + o.span);
			for (u64 i = a; i < b && i - o.src_off < o.snap_known.size(); i++)
				o.snap_known[i - o.src_off] = 0;
			o.orig_known = false;
			// A Verify that carries its expected hash may now fail.
			if (o.op == XIW_OP_VERIFY_REQ && o.frame < sent.size())
				sent[o.frame].allowed.push_back(term_key(0, 2, 7));
			o.hash.clear();
			// An Atomic (Write) sent before the Write executes whenever
			// the responder gets to it: before or after the placement.
			if (o.op == XIW_OP_ATOMIC_REQ || o.op == XIW_OP_ATOMIC_WRITE_REQ)
				for (u64 i = o.src_off; i < o.src_off + o.span && i < mem[k].known.size(); i++)
					mem[k].known[i] = 0;
		}
	}

private:
	void handle(const bytes &seg);
	void handle_response(const bytes &seg, const xiw_raw::seg_view &v);
	void handle_incoming(const bytes &seg, const xiw_raw::seg_view &v);
	void take(bool eof, int err);
	bool send_raw(const u8 *p, std::size_t n);
	bool log_end(action::kind k);
};

void session::init_model()
{
	for (unsigned k = 0; k < R_COUNT; k++) {
		const fz_region &r = t.regions[k];
		const bool tracked = r.stag && (r.rights & (RT_RR | RT_RW | RT_RA)) && k != R_OTHERPD;
		mem[k].v.resize(tracked ? r.len : 0);
		mem[k].known.assign(mem[k].v.size(), 1);
		for (std::size_t i = 0; i < mem[k].v.size(); i++)
			mem[k].v[i] = region_byte(k, i);
	}
	for (unsigned k = 0; k < cfg.hello.n_actions; k++) {
		// Without the extensions the victim cannot post these.
		const u8 kind = cfg.hello.actions[k].kind;
		if (!ext && kind != A_READ && kind != A_SEND && kind != A_WRITE)
			continue;
		switch (kind) {
		case A_READ:
		case A_FETCH_ADD:
		case A_CMP_SWAP:
		case A_FLUSH:
		case A_AWRITE:
			act_qn1.push_back(k);
			break;
		case A_SEND:
		case A_SEND_IMM:
			act_qn0.push_back(k);
			break;
		case A_WRITE:
			act_write.push_back(k);
			break;
		default:
			break;
		}
	}
}

bool session::open(const conn_cfg &c, std::string &why)
{
	cfg = c;
	// With --set-params every case says what it wants (default: xiw's).
	if (!write_param("mpa_markers", c.xiw_markers < 0 ? 0 : c.xiw_markers) ||
	    !write_param("mpa_crc", c.xiw_crc < 0 ? 1 : c.xiw_crc)) {
		why = "cannot set the module parameters";
		return false;
	}
	fd = xiw_raw::tcp_connect(opt.addr.c_str(), opt.port, 10000, why);
	if (fd < 0)
		return false;
	// The Request: key, flags, revision, [IRD/ORD word] fz_hello.
	u8 flags = c.flags_extra;
	if (c.crc)
		flags |= XIW_MPA_FLAG_C;
	if (c.markers)
		flags |= XIW_MPA_FLAG_M;
	if (c.ext)
		flags |= XIW_MPA_FLAG_EXT;
	bytes pd;
	if (c.rev == XIW_MPA_REV_V2 && c.enhanced) {
		flags |= XIW_MPA_FLAG_ENHANCED;
		const u16 irdf = (c.p2p ? XIW_MPA_V2_IRD_P2P : 0) |
				 (c.offer & 4 ? XIW_MPA_V2_IRD_RTR_SEND : 0);
		const u16 ordf = (c.offer & 1 ? XIW_MPA_V2_ORD_RTR_WRITE : 0) |
				 (c.offer & 2 ? XIW_MPA_V2_ORD_RTR_READ : 0);
		pd = xiw_raw::mpa_v2_word(irdf, c.ird, ordf, c.ord);
	}
	const bytes hb = xiw_raw::bytes_of(c.hello);
	pd.insert(pd.end(), hb.begin(), hb.end());
	const bytes req = xiw_raw::mpa_encode(XIW_MPA_KEY_REQ, flags, c.rev, pd);
	if (!send_raw(req.data(), req.size())) {
		why = "sending the MPA Request failed";
		return false;
	}
	// The Reply, and whatever follows it.
	xiw_raw::mpa_frame_reader mr;
	bytes buf;
	std::size_t used = 0;
	const long got = xiw_raw::recv_mpa_frame(fd, mr, buf, used, 20000);
	if (got <= 0) {
		why = got == -2	  ? "no MPA Reply within 20 s"
		      : got == 0 ? "connection closed instead of an MPA Reply"
				 : std::string("reading the MPA Reply: ") + std::strerror(errno);
		return false;
	}
	const xiw_raw::mpa_frame &rep = mr.frame();
	if (!rep.key_is(XIW_MPA_KEY_REP)) {
		anomaly(where, "MPA Reply with a wrong key");
		return false;
	}
	if (rep.flags & XIW_MPA_FLAG_R) {
		why = "rejected";
		g.rejected++;
		return false;
	}
	if (rep.rev != c.rev && !(c.rev == 2 && rep.rev == 1)) {
		anomaly(where, strf("MPA Reply revision %u to a revision %u Request", rep.rev, c.rev));
		return false;
	}
	if (!target_decode(rep.ulp_pd().data(), rep.ulp_pd().size(), t)) {
		why = strf("the Reply's private data (%zu octets) is not the victim's", rep.pd.size());
		return false;
	}
	rc.t = &t;
	crc_on = (rep.flags & XIW_MPA_FLAG_C) || c.crc;
	if (c.crc && !(rep.flags & XIW_MPA_FLAG_C))
		anomaly(where, "C in the Request but not in the Reply (RFC 5044 7.1)");
	ext = c.ext && (rep.flags & XIW_MPA_FLAG_EXT_ACK);
	tx = xiw_raw::mpa_stream{static_cast<bool>(rep.flags & XIW_MPA_FLAG_M), crc_on, 0};
	rd.reset(xiw_raw::mpa_stream{c.markers, crc_on, 0});
	if (buf.size() > used)
		rd.feed(buf.data() + used, buf.size() - used);
	xiw_ird = std::max<u16>(1, c.hello.ird);
	if (rep.has_v2()) {
		const xiw_mpa_v2_ird_ord w = rep.v2();
		xiw_ird = std::max<u16>(1, xiw_mpa_v2_ird(&w));
		if (c.p2p && c.rev == 2 && c.enhanced && (xiw_mpa_v2_ird_flags(&w) & XIW_MPA_V2_IRD_P2P)) {
			p2p = true;
			if (xiw_mpa_v2_ord_flags(&w) & XIW_MPA_V2_ORD_RTR_WRITE)
				rtr_op = XIW_OP_WRITE;
			else if (xiw_mpa_v2_ord_flags(&w) & XIW_MPA_V2_ORD_RTR_READ)
				rtr_op = XIW_OP_READ_REQ;
			else if (xiw_mpa_v2_ird_flags(&w) & XIW_MPA_V2_IRD_RTR_SEND)
				rtr_op = XIW_OP_SEND;
		}
	}
	init_model();
	g.conns++;

	// RFC 6581 §5.2: the RTR the Reply chose (or what the case says).
	if (p2p || c.rtr != RTR_AUTO) {
		rtr_choice r = c.rtr;
		if (r == RTR_AUTO)
			r = rtr_op == XIW_OP_READ_REQ ? RTR_READ
			    : rtr_op == XIW_OP_SEND   ? RTR_SEND
			    : rtr_op == XIW_OP_WRITE  ? RTR_WRITE
						      : RTR_NONE;
		frame_spec s;
		const bool proper = c.rtr == RTR_AUTO && !c.rtr_len;
		if (r == RTR_WRITE) {
			s = spec_from_template(find_template("write"));
			s.stag = sym::num(0);
			s.to = sym::num(0);
		} else if (r == RTR_READ) {
			s = spec_from_template(find_template("read_req"));
			s.msn = msn_out[XIW_QN_READ_REQ];
			field(s, "sink_stag") = sym::num(new_sink());
		} else if (r == RTR_SEND) {
			s = spec_from_template(find_template("send"));
			s.msn = msn_out[XIW_QN_SEND];
		}
		// Another RTR than the Reply asked for, or none: xiw may take a
		// later zero-length message for it.
		if (!(c.rtr == RTR_AUTO && !c.rtr_len) && p2p) {
			dirty();
			rtr_broken = true;
		}
		if (r != RTR_NONE) {
			if (c.rtr_len) {
				s.pk = PK_FILL;
				s.plen = c.rtr_len;
				s.pseed = 0x77;
			}
			s.valid = proper;
			s.mutation = proper ? "" : "rtr";
			const bool read = r == RTR_READ;
			const u32 sink = read ? static_cast<u32>(field(s, "sink_stag").v) : 0;
			send_frame(s);
			if (r == RTR_READ)
				msn_out[XIW_QN_READ_REQ]++;
			if (r == RTR_SEND)
				msn_out[XIW_QN_SEND]++;
			if (read && !c.rtr_len) {
				out_req o(XIW_OP_READ_REQ);
				o.sink_stag = sink;
				o.frame = sent.size() - 1;
				outq.push_back(o);
			}
		}
	}
	return true;
}

bool session::send_raw(const u8 *p, std::size_t n)
{
	if (dry) {
		g.bytes += n;
		return true;
	}
	std::size_t off = 0;
	const long long until = now_ms() + 5000;
	while (off < n) {
		pollfd pfd{fd, static_cast<short>(deaf ? POLLOUT : POLLOUT | POLLIN), 0};
		const long left = static_cast<long>(until - now_ms());
		if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) <= 0) {
			end = "send stuck";
			dead = true;
			return false;
		}
		if (pfd.revents & POLLIN && !deaf && rd.buffered() < (1u << 22)) {
			bytes b;
			const long k = xiw_raw::recv_some(fd, b, 0);
			if (k > 0)
				rd.feed(b.data(), b.size());
		}
		if (!(pfd.revents & (POLLOUT | POLLERR | POLLHUP)))
			continue;
		const ssize_t k = send(fd, p + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			if (!dead)
				end = errno == ECONNRESET ? "reset" : "closed";
			dead = true;
			return false;
		}
		off += static_cast<std::size_t>(k);
	}
	g.bytes += n;
	return true;
}

void session::send_bytes(const bytes &b, const std::vector<u32> &split)
{
	std::size_t at = 0;
	std::vector<u32> cuts = split;
	std::sort(cuts.begin(), cuts.end());
	for (u32 c : cuts) {
		if (c <= at || c >= b.size())
			continue;
		if (!send_raw(b.data() + at, c - at))
			return;
		at = c;
		// Its own TCP segment, most likely (TCP_NODELAY).
		if (!dry)
			std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	if (at < b.size())
		send_raw(b.data() + at, b.size() - at);
}

void session::send_frame(frame_spec s)
{
	if (dead)
		return;
	const bytes seg = build_segment(s, rc);
	xiw_raw::frame_opts o;
	o.crc = s.crc;
	o.crc_random_value = s.crc_value;
	o.lead_marker_ptr = s.lead;
	o.marker_ptr_xor = s.mxor;
	o.marker_rsvd = s.mrsvd;
	o.pad_fill = s.pad;
	// With desync the length field no longer says where the frame ends.
	bytes fr = xiw_raw::frame_fpdu(tx, seg, o);
	if (s.trunc >= 0 && static_cast<std::size_t>(s.trunc) < fr.size())
		fr.resize(static_cast<std::size_t>(s.trunc));
	sent_rec r;
	r.label = seg.size() >= 4 ? seg_label(seg[2], seg[3]) : "runt";
	r.valid = s.valid;
	r.must_fail = s.must_fail;
	r.allowed = s.allowed;
	r.mutation = s.mutation;
	r.hdr.assign(seg.begin() + std::min<std::size_t>(2, seg.size()),
		     seg.begin() + std::min<std::size_t>(2 + XIW_DDP_UNTAGGED_HLEN, seg.size()));
	if (!s.valid)
		dirty();
	if (!s.mutation.empty())
		g.mutations[s.mutation]++;
	sent.push_back(r);
	if (track && s.trunc < 0 && !s.desync && seg.size() >= sizeof(xiw_ddp_untagged_hdr)) {
		// A well-formed request of ours, as the responder must see it.
		const xiw_raw::seg_view v(seg);
		const op_template *tp = template_of(v.rv, v.opcode);
		if (!v.tagged && v.qn == XIW_QN_READ_REQ && v.last && tp && tp->qn == XIW_QN_READ_REQ &&
		    seg.size() >= v.hdr_len + tp->fields.size() * 4) {
			out_req o(static_cast<u8>(v.opcode));
			o.checked = false;
			o.frame = sent.size() - 1;
			const u8 *h = seg.data() + v.hdr_len;
			if (v.opcode == XIW_OP_READ_REQ && seg.size() >= v.hdr_len + 28) {
				o.sink_stag = get_be32(h);
				o.sink_to = get_be64(h + 4);
				o.size = get_be32(h + 12);
			} else if (v.opcode == XIW_OP_ATOMIC_REQ && seg.size() >= v.hdr_len + 8) {
				o.req_id = get_be32(h + 4);
			} else if (v.opcode == XIW_OP_VERIFY_REQ) {
				const fz_region *rg = nullptr;
				for (const auto &x : t.regions)
					if (x.stag && x.stag == get_be32(h))
						rg = &x;
				o.hash_kind = rg && rg->rights & RT_VS ? 2 : 1;
			}
			if (v.opcode != XIW_OP2_READ_REQ_V2)
				outq.push_back(o);
		}
	}
	action a;
	a.k = action::FRAME;
	a.f = s;
	log.push_back(a);
	g.frames++;
	send_bytes(fr, s.split);
}

// Octets that are no FPDU ("bytes HEX"): they break the stream's framing.
void session::send_unframed(const bytes &b)
{
	action a;
	a.k = action::BYTES;
	a.raw = b;
	log.push_back(a);
	dirty();
	sent.push_back(sent_rec{"raw", false});
	g.frames++;
	tx.pos += static_cast<u32>(b.size());
	send_bytes(b);
}

void session::stall(u32 ms)
{
	action a;
	a.k = action::STALL;
	a.ms = ms;
	log.push_back(a);
	const long long until = now_ms() + ms;
	while (!dead && !dry && now_ms() < until)
		pump(static_cast<int>(std::min<long long>(20, until - now_ms())));
}

void session::take(bool eof, int err)
{
	if (closing && !term_seen) {
		dead = true;
		return;
	}
	if (eof) {
		if (!dead)
			end = term_seen ? "terminated" : "closed";
		dead = true;
	} else if (err) {
		if (!dead)
			end = term_seen ? "terminated" : err == ECONNRESET ? "reset" : "closed";
		dead = true;
	}
}

void session::pump(int wait_ms)
{
	if (fd < 0 || dry)
		return;
	if (deaf) {
		std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
		return;
	}
	int w = wait_ms;
	for (int round = 0; round < 256; round++) {
		bytes b;
		const long n = xiw_raw::recv_some(fd, b, w);
		w = 0;
		if (n > 0)
			rd.feed(b.data(), b.size());
		std::string why;
		if (!rd.take_all([this](const bytes &seg) { handle(seg); }, why)) {
			anomaly(where, "from xiw: " + why);
			if (!opt.dump_dir.empty() && !rd.bad_raw.empty()) {
				// The octets as they came, for a closer look.
				const std::string path = opt.dump_dir + "/bad-fpdu-" +
							 std::to_string(rd.bad_pos) + ".hex";
				std::ofstream(path) << hex_text(rd.bad_raw) << "\n";
			}
			dead = true;
			end = "bad";
			close(fd);
			fd = -1;
			return;
		}
		if (n == 0) {
			take(true, 0);
			return;
		}
		if (n == -1) {
			take(false, errno);
			return;
		}
		if (n == -2)
			return;
	}
}

bool session::wait_outq(int ms)
{
	if (!outq.empty()) {
		// A replay must wait here too, or it outruns xiw's IRD.
		action a;
		a.k = action::ANSWERS;
		a.ms = static_cast<u32>(ms);
		log.push_back(a);
	}
	const long long until = now_ms() + ms;
	while (!outq.empty() && !dead && now_ms() < until)
		pump(20);
	return outq.empty();
}

void session::handle(const bytes &seg)
{
	const xiw_raw::seg_view v(seg);
	if (term_seen) {
		anomaly(where, strf("an FPDU (%s) after xiw's Terminate",
				    seg.size() >= 4 ? seg_label(seg[2], seg[3]).c_str() : "runt"));
		return;
	}
	if (!v.valid) {
		anomaly(where, strf("an FPDU of %zu octets from xiw, shorter than its DDP header",
				    seg.size()));
		return;
	}
	if (xiw_ddp_version(v.ddp_ctrl) != XIW_DDP_VERSION || (v.rv != 1 && v.rv != 2)) {
		anomaly(where, strf("xiw sent DDP control 0x%02x RDMAP control 0x%02x", v.ddp_ctrl,
				    v.rdmap_ctrl));
		return;
	}
	if (!v.tagged) {
		if (v.qn > 3) {
			anomaly(where, strf("xiw sent a segment on QN %u", v.qn));
			return;
		}
		if (v.msn != msn_in[v.qn])
			anomaly(where, strf("xiw sent MSN %u on QN %u, expected %u", v.msn, v.qn,
					    msn_in[v.qn]));
		if (v.last)
			msn_in[v.qn] = v.msn + 1;
	}
	if (v.tagged && v.opcode == XIW_OP_READ_RESP) {
		handle_response(seg, v);
		return;
	}
	if (!v.tagged && v.qn == XIW_QN_RESPONSE) {
		handle_response(seg, v);
		return;
	}
	if (!v.tagged && v.qn == XIW_QN_TERMINATE) {
		if (v.opcode != XIW_OP_TERMINATE || !v.last || seg.size() < v.hdr_len + 4) {
			anomaly(where, strf("a malformed Terminate (opcode 0x%x, %zu octets)", v.opcode,
					    seg.size()));
			return;
		}
		const u32 ctrl = get_be32(seg.data() + v.hdr_len);
		term_seen = true;
		term_code = term_key(ctrl >> 28, (ctrl >> 24) & 0xf, (ctrl >> 16) & 0xff);
		const bool d = ctrl & XIW_TERM_FLAG_D;
		const bool m = ctrl & XIW_TERM_FLAG_M;
		if ((d || m) && seg.size() < v.hdr_len + 6)
			anomaly(where, "Terminate with M/D but no DDP Segment Length");
		if (d && seg.size() >= v.hdr_len + 6 + XIW_DDP_TAGGED_HLEN) {
			term_has_hdr = true;
			term_hdr.assign(seg.begin() + static_cast<std::ptrdiff_t>(v.hdr_len + 6), seg.end());
		}
		g.terms[term_code]++;
		return;
	}
	handle_incoming(seg, v);
}

// A response to one of our requests: it must answer the oldest.
void session::handle_response(const bytes &seg, const xiw_raw::seg_view &v)
{
	g.responses++;
	const std::size_t n = seg.size() - v.hdr_len;
	if (outq.empty()) {
		if (clean)
			anomaly(where, strf("a response (%s) to no request", seg_label(v.ddp_ctrl, v.rdmap_ctrl).c_str()));
		return;
	}
	out_req &o = outq.front();
	const bool strict = o.checked;
	auto mismatch = [&](const std::string &what) {
		if (strict)
			anomaly(where, what);
		outq.pop_front();
	};
	if (o.must_fail) {
		anomaly(where, strf("a response (%s) to a request that must be refused (%s)",
				    seg_label(v.ddp_ctrl, v.rdmap_ctrl).c_str(),
				    sent[o.frame].mutation.c_str()));
		outq.pop_front();
		return;
	}
	const bool is_read = o.op == XIW_OP_READ_REQ;
	if (is_read != (v.tagged && v.opcode == XIW_OP_READ_RESP)) {
		mismatch(strf("%s in answer to opcode 0x%x", seg_label(v.ddp_ctrl, v.rdmap_ctrl).c_str(),
			      o.op));
		return;
	}
	if (is_read) {
		if (v.stag != o.sink_stag || v.to != o.sink_to + o.got) {
			mismatch(strf("Read Response to STag 0x%08x TO 0x%" PRIx64
				      ", expected 0x%08x 0x%" PRIx64,
				      v.stag, v.to, o.sink_stag, o.sink_to + o.got));
			return;
		}
		if (o.got + n > o.size) {
			mismatch(strf("Read Response beyond the %u octets asked for", o.size));
			return;
		}
		if (o.checked && o.region < R_COUNT) {
			for (std::size_t i = 0; i < n; i++) {
				const std::size_t at = o.got + i;
				if (at < o.snap.size() && o.snap_known[at] &&
				    o.snap[at] != seg[v.hdr_len + i]) {
					anomaly(where, strf("Read Response of %s+0x%" PRIx64 ": 0x%02x, the "
							    "region held 0x%02x when the Read was sent",
							    region_name(o.region), o.src_off + at,
							    seg[v.hdr_len + i], o.snap[at]));
					o.checked = false;
					break;
				}
			}
		}
		o.got += static_cast<u32>(n);
		if (v.last) {
			if (o.got != o.size)
				mismatch(strf("Read Response of %u octets, %u asked for", o.got, o.size));
			else {
				sent[o.frame].responded = true;
				g.answered++;
				outq.pop_front();
			}
		}
		return;
	}
	const op_template *tp = template_of(v.rv, v.opcode);
	const unsigned want = o.op == XIW_OP_ATOMIC_REQ	  ? XIW_OP_ATOMIC_RESP
			      : o.op == XIW_OP_FLUSH_REQ   ? XIW_OP_FLUSH_RESP
			      : o.op == XIW_OP_VERIFY_REQ  ? XIW_OP_VERIFY_RESP
			      : o.op == XIW_OP_ATOMIC_WRITE_REQ ? XIW_OP_ATOMIC_WRITE_RESP
							   : 0xff;
	if (v.opcode != want || !tp || !v.last || v.mo) {
		mismatch(strf("%s (L %d MO %u) in answer to opcode 0x%x",
			      seg_label(v.ddp_ctrl, v.rdmap_ctrl).c_str(), v.last, v.mo, o.op));
		return;
	}
	if (want == XIW_OP_ATOMIC_RESP) {
		if (n != 12) {
			mismatch(strf("Atomic Response of %zu octets", n));
			return;
		}
		const u32 id = get_be32(seg.data() + v.hdr_len);
		const u64 orig = get_be64(seg.data() + v.hdr_len + 4);
		if (id != o.req_id) {
			mismatch(strf("Atomic Response for request 0x%08x, expected 0x%08x", id, o.req_id));
			return;
		}
		if (o.checked && o.orig_known && orig != o.orig)
			anomaly(where, strf("Atomic Response with original value 0x%016" PRIx64
					    ", the target held 0x%016" PRIx64,
					    orig, o.orig));
	} else if (want == XIW_OP_VERIFY_RESP) {
		const std::size_t hl = o.hash_kind == 2 ? 32 : 4;
		if (n != hl)
			mismatch(strf("Verify Response with %zu octets of hash, expected %zu", n, hl));
		else if (o.checked && !o.hash.empty() &&
			 !std::equal(o.hash.begin(), o.hash.end(), seg.begin() + static_cast<std::ptrdiff_t>(v.hdr_len)))
			anomaly(where, "Verify Response with a hash that is not the region's");
		if (n != hl)
			return;
	} else if (n) {
		mismatch(strf("%s with %zu octets of payload", tp->name, n));
		return;
	}
	sent[o.frame].responded = true;
	g.answered++;
	outq.pop_front();
}

// What the victim's own work requests make xiw send: checked against
// the actions we asked for, requests queued for an answer.
void session::handle_incoming(const bytes &seg, const xiw_raw::seg_view &v)
{
	const std::size_t n = seg.size() - v.hdr_len;
	const u8 *p = seg.data() + v.hdr_len;
	const fz_region &sink = t.regions[R_SINK];
	// Responder mode: xiw's RTR (RFC 6581 §5.2), a zero-length message.
	if (expect_rtr != 0xff && n == 0 && v.last) {
		const bool w = v.tagged && v.opcode == XIW_OP_WRITE && expect_rtr == XIW_OP_WRITE;
		const bool s0 = !v.tagged && v.qn == XIW_QN_SEND && v.opcode == XIW_OP_SEND &&
				expect_rtr == XIW_OP_SEND;
		if (w || s0) {
			expect_rtr = 0xff;
			return;
		}
	}
	if (expect_rtr == XIW_OP_READ_REQ && !v.tagged && v.qn == XIW_QN_READ_REQ &&
	    v.opcode == XIW_OP_READ_REQ && n == 28 && get_be32(p + 12) == 0) {
		expect_rtr = 0xff;
		frame_spec f = spec_from_template(find_template("read_resp"));
		f.stag = sym::num(get_be32(p));
		f.to = sym::num(get_be64(p + 4));
		f.valid = true;
		send_frame(f);
		return;
	}
	if (v.tagged) {
		if (v.opcode != XIW_OP_WRITE) {
			anomaly(where, "xiw sent " + seg_label(v.ddp_ctrl, v.rdmap_ctrl));
			return;
		}
		if (act_write.empty()) {
			// xiw's own RTR is not ours to see as responder.
			if (n || !v.last)
				anomaly(where, "an RDMA Write from xiw that the victim never posted");
			return;
		}
		const unsigned k = act_write.front();
		const u32 len = cfg.hello.actions[k].len;
		if (v.stag != fake_stag(k) || v.to != fake_to(k) + act_write_off)
			anomaly(where, strf("RDMA Write of action %u to STag 0x%08x TO 0x%" PRIx64, k,
					    v.stag, v.to));
		for (std::size_t i = 0; i < n; i++)
			if (p[i] != region_byte(R_SRC, act_write_off + i)) {
				anomaly(where, strf("RDMA Write of action %u: octet %zu is wrong", k,
						    act_write_off + i));
				break;
			}
		act_write_off += static_cast<u32>(n);
		if (v.last) {
			if (act_write_off != len)
				anomaly(where, strf("RDMA Write of action %u: %u octets, %u posted", k,
						    act_write_off, len));
			act_write.pop_front();
			act_write_off = 0;
		}
		return;
	}
	if (v.qn == XIW_QN_SEND) {
		if (act_qn0.empty()) {
			anomaly(where, "a Send from xiw that the victim never posted");
			return;
		}
		const unsigned k = act_qn0.front();
		const fz_action &a = cfg.hello.actions[k];
		const op_template *tp = template_of(v.rv, v.opcode);
		const bool imm_part = tp && (tp->name == std::string("imm") ||
					     ((tp->name == std::string("send_imm") ||
					       tp->name == std::string("send_se_imm")) &&
					      v.last));
		if (!imm_part)
			for (std::size_t i = 0; i < n; i++)
				if (p[i] != region_byte(R_SRC, v.mo + i)) {
					anomaly(where, strf("Send of action %u: octet %zu is wrong", k,
							    v.mo + i));
					break;
				}
		// A Send with Immediate ends with its immediate data (RFC 7306
		// Immediate Data message, or draft-wood's last segment).
		if (v.last && (a.kind != A_SEND_IMM || imm_part))
			act_qn0.pop_front();
		return;
	}
	if (v.qn != XIW_QN_READ_REQ) {
		anomaly(where, strf("xiw sent %s on QN %u", seg_label(v.ddp_ctrl, v.rdmap_ctrl).c_str(),
				    v.qn));
		return;
	}
	if (act_qn1.empty()) {
		anomaly(where, "a request from xiw that the victim never posted: " +
				       seg_label(v.ddp_ctrl, v.rdmap_ctrl) + " (posted: " +
				       actions_text(cfg.hello) + (ext ? "" : ", no extensions") + ")");
		return;
	}
	const unsigned k = act_qn1.front();
	act_qn1.pop_front();
	const fz_action &a = cfg.hello.actions[k];
	in_req r{static_cast<u8>(v.opcode), k};
	auto bad = [&](const char *what) {
		anomaly(where, strf("%s of action %u (%s): %s", seg_label(v.ddp_ctrl, v.rdmap_ctrl).c_str(),
				    k, act_name(a.kind), what));
	};
	switch (a.kind) {
	case A_READ:
		if (v.opcode != XIW_OP_READ_REQ || n != 28)
			return bad("not a Read Request");
		r.sink_stag = get_be32(p);
		r.sink_to = get_be64(p + 4);
		r.size = get_be32(p + 12);
		if (r.size != std::min<u32>(a.len, sink_window) ||
		    (r.size && (r.sink_stag != sink.stag || r.sink_to != sink.addr + k * sink_window ||
				get_be32(p + 16) != fake_stag(k) || get_be64(p + 20) != fake_to(k))))
			bad(strf("fields are not what was posted: sink 0x%08x 0x%" PRIx64 " size %u source "
				 "0x%08x 0x%" PRIx64,
				 r.sink_stag, r.sink_to, r.size, get_be32(p + 16), get_be64(p + 20))
				    .c_str());
		break;
	case A_FETCH_ADD:
	case A_CMP_SWAP:
		if (v.opcode != XIW_OP_ATOMIC_REQ || n != 52)
			return bad("not an Atomic Request");
		r.req_id = get_be32(p + 4);
		if ((get_be32(p) & XIW_AOP_MASK) != (a.kind == A_FETCH_ADD ? XIW_AOP_FETCH_ADD : XIW_AOP_CMP_SWAP) ||
		    get_be32(p + 8) != fake_stag(k) || get_be64(p + 12) != fake_to(k))
			bad("fields are not what was posted");
		break;
	case A_FLUSH:
		if (v.opcode != XIW_OP_FLUSH_REQ || n != 20)
			return bad("not a Flush Request");
		if (get_be32(p) != fake_stag(k) || get_be64(p + 8) != fake_to(k))
			bad("fields are not what was posted");
		break;
	case A_AWRITE:
		if (v.opcode != XIW_OP_ATOMIC_WRITE_REQ || n != 24)
			return bad("not an Atomic Write Request");
		if (get_be32(p) != fake_stag(k) || get_be32(p + 4) != 8 ||
		    get_be64(p + 8) != fake_to(k) || get_be64(p + 16) != 0x1122334455667788ull + k)
			bad("fields are not what was posted");
		break;
	default:
		return bad("unexpected");
	}
	inq.push_back(r);
}

// Logs the end K of the connection; false if there is no socket to end
// (none left, or a dry run: then the connection counts as ended).
bool session::log_end(action::kind k)
{
	if (fd < 0 && !dry)
		return false;
	log.push_back(mk_action(k));
	if (dry)
		dead = true;
	return !dry;
}

void session::close_fin()
{
	if (!log_end(action::FIN))
		return;
	closing = true;
	shutdown(fd, SHUT_WR);
	const long long until = now_ms() + 1500;
	while (!dead && now_ms() < until)
		pump(50);
	close(fd);
	fd = -1;
}

void session::close_rst()
{
	if (!log_end(action::RST))
		return;
	xiw_raw::set_rst_on_close(fd);
	close(fd);
	fd = -1;
	dead = true;
}

// Attributes the end of the connection to a frame and counts outcomes.
std::string session::finish()
{
	if (fd >= 0)
		pump(0);
	std::string outcome = end;
	if (term_seen)
		outcome = "T" + term_text(term_code);
	else if (end == "alive" || end == "send stuck")
		outcome = "";
	// Which frame: the copied DDP header, else the first not known to be
	// acceptable, else the last.
	int at = -1;
	if (!outcome.empty() && !sent.empty()) {
		int first_bad = -1;
		for (std::size_t i = 0; i < sent.size(); i++)
			if (!sent[i].valid) {
				first_bad = static_cast<int>(i);
				break;
			}
		if (term_has_hdr) {
			for (std::size_t i = 0; i < sent.size(); i++) {
				const bytes &h = sent[i].hdr;
				const std::size_t l = std::min(h.size(), term_hdr.size());
				const std::size_t need = (h.size() && h[0] & XIW_DDP_FLAG_T) ? XIW_DDP_TAGGED_HLEN
											   : XIW_DDP_UNTAGGED_HLEN;
				if (l >= std::min(need, h.size()) && std::equal(h.begin(), h.begin() + static_cast<std::ptrdiff_t>(l), term_hdr.begin())) {
					if (at < 0 || (first_bad >= 0 && static_cast<int>(i) <= first_bad))
						at = static_cast<int>(i);
					if (static_cast<int>(i) >= first_bad)
						break;
				}
			}
		}
		if (at < 0)
			at = first_bad >= 0 ? first_bad : static_cast<int>(sent.size()) - 1;
		const sent_rec &r = sent[static_cast<std::size_t>(at)];
		end_frame = strf("frame %d (%s)", at, r.label.c_str());
		// A valid frame (and all before it) that drew an end it may not.
		if (r.valid && first_bad < 0 && !rtr_broken) {
			// Allowed by that frame, or (a Terminate that quotes no
			// header) by any: e.g. a Verify whose hash a later Write
			// made stale.
			bool ok = false;
			for (std::size_t i = 0; term_seen && i < sent.size(); i++)
				if ((i == static_cast<std::size_t>(at) || !term_has_hdr) &&
				    std::find(sent[i].allowed.begin(), sent[i].allowed.end(), term_code) !=
					    sent[i].allowed.end())
					ok = true;
			if (!ok)
				surprise(where, strf("%s on a valid sequence, at frame %d (%s)",
						     outcome.c_str(), at, r.label.c_str()));
		}
	}
	const std::size_t upto = at < 0 ? sent.size() : static_cast<std::size_t>(at);
	for (std::size_t i = 0; i < upto; i++)
		g.table[sent[i].label][sent[i].responded ? "resp" : "ok"]++;
	if (at >= 0)
		g.table[sent[static_cast<std::size_t>(at)].label][outcome]++;
	g.ends[outcome.empty() ? "alive" : outcome[0] == 'T' ? "terminated" : outcome]++;
	return outcome.empty() ? "alive" : outcome;
}

// ===========================================================================
// Generation

struct plan {
	std::vector<frame_spec> frames;
	std::function<void(session &)> commit; // model update when sent unmutated
	std::vector<out_req> reqs;              // pushed as the frame goes
	std::string what;
};

// Segments a message of LEN octets into 1..4 FPDUs: the sizes.
std::vector<u32> segment_sizes(rng &r, u32 len)
{
	std::vector<u32> s;
	const unsigned n = len < 2 ? 1 : static_cast<unsigned>(r.range(1, std::min<u32>(4, len)));
	u32 left = len;
	for (unsigned i = 0; i + 1 < n; i++) {
		const u32 k = static_cast<u32>(r.range(1, left - (n - 1 - i)));
		s.push_back(k);
		left -= k;
	}
	s.push_back(left);
	return s;
}

// Random splits of a frame's octets into TCP writes.
std::vector<u32> random_splits(rng &r, u32 approx_len)
{
	std::vector<u32> v;
	if (r.chance(1, 10)) {
		for (u32 i = 1; i < std::min<u32>(approx_len, 40); i++)
			v.push_back(i); // one octet at a time, the start
		return v;
	}
	const unsigned n = static_cast<unsigned>(r.range(1, 3));
	for (unsigned i = 0; i < n; i++)
		v.push_back(static_cast<u32>(r.range(1, std::max<u32>(approx_len, 2))));
	return v;
}

u32 pick_len(rng &r, u32 max)
{
	if (!max)
		return 0;
	switch (r.below(6)) {
	case 0: return 0;
	case 1: return max;
	case 2: return static_cast<u32>(r.range(1, std::min<u32>(max, 16)));
	case 3: return static_cast<u32>(r.range(max > 8 ? max - 8 : 0, max));
	default: return static_cast<u32>(r.range(0, max));
	}
}

class generator {
public:
	generator(rng &r, session &s) : r_(r), s_(s) {}

	// A valid operation, or none possible.
	bool valid_plan(plan &p);
	// A valid operation with one mutation, or another kind of bad input.
	void mutated_step();
	void chaos_frame();
	// RDMAP control RV/OPCODE with the header of its kind (a random one
	// if it has none), the DDP T bit as its kind says or the other one.
	void sweep_frame(unsigned rv, unsigned op, bool flip_t);
	// A Send and an RDMA Read of the read-only region, both valid.
	void good_exchange()
	{
		plan p = make_send(0);
		execute(p, false);
		p = make_read(R_RO);
		execute(p, false);
	}
	// Answers the victim's oldest request (correctly unless MUTATE).
	void respond(bool mutate);
	void execute(plan &p, bool mutate);

private:
	plan make_write(unsigned region, bool any_target = false);
	plan make_send(int opcode_variant);
	plan make_read(unsigned region);
	plan make_atomic(unsigned region);
	plan make_flush(unsigned region, u32 flags);
	plan make_verify(unsigned region, int expect);
	plan make_awrite(unsigned region);
	plan make_imm();
	plan make_send_imm();
	std::string mutate_field(frame_spec &f);
	unsigned pick_region(u8 rights, bool want);
	u64 pick_off(u32 len, u32 n);
	struct span {
		u32 n;
		u64 off;
	};
	span pick_span(u32 len, u32 most = ~0u);
	frame_spec request(const char *name) const;
	frame_spec range_request(const char *name, unsigned k, span at) const;
	void aim_at_rw(frame_spec &f, bool eights);
	void send_sweep(frame_spec &f, bool payload);
	std::vector<u32> send_allowed() const;
	rng &r_;
	session &s_;
};

unsigned generator::pick_region(u8 rights, bool want)
{
	std::vector<unsigned> c;
	for (unsigned k = 0; k < R_COUNT; k++) {
		const bool has = s_.has(k, rights) && k != R_OTHERPD && k != R_DEREG;
		if (has == want && (want || s_.reg(k).stag))
			c.push_back(k);
	}
	return c.empty() ? static_cast<unsigned>(R_COUNT) : r_.pick(c);
}

// An offset where N octets fit in LEN (preferring the edges and page
// boundaries of the address).
u64 generator::pick_off(u32 len, u32 n)
{
	if (n >= len)
		return 0;
	const u32 room = len - n;
	switch (r_.below(4)) {
	case 0: return 0;
	case 1: return room;
	default: return r_.range(0, room);
	}
}

// N octets (at most MOST) and where they lie in LEN (pick_len, pick_off).
generator::span generator::pick_span(u32 len, u32 most)
{
	const u32 n = pick_len(r_, std::min(len, most));
	return {n, pick_off(len, n)};
}

// A request of template NAME, with the next MSN of its queue.
frame_spec generator::request(const char *name) const
{
	frame_spec f = spec_from_template(find_template(name));
	f.msn = s_.msn_out[XIW_QN_READ_REQ];
	return f;
}

// A request of template NAME on AT of region K (its stag, len and to).
frame_spec generator::range_request(const char *name, unsigned k, span at) const
{
	frame_spec f = request(name);
	field(f, "stag") = sym::stag(k);
	field(f, "len") = sym::num(at.n);
	field(f, "to") = sym::at(k, static_cast<i64>(at.off));
	return f;
}

// The Terminates the next Send may draw: none while a receive waits for
// it; past the receives the victim posted first, reposted ones may not be
// there yet (untagged: invalid MSN, no buffer).
std::vector<u32> generator::send_allowed() const
{
	const unsigned k = s_.sends_done;
	const fz_hello &h = s_.cfg.hello;
	if (k < h.n_recv && !(h.flags & HF_BAD_RECV && k == h.bad_recv_at))
		return {};
	return {term_key(1, 2, 2), term_key(0, 0, 0)};
}

// What plans change in the model once their frames went out unmutated.
void commit_send(session &s)
{
	s.msn_out[XIW_QN_SEND]++;
	s.sends_done++;
}
void commit_request(session &s) { s.msn_out[XIW_QN_READ_REQ]++; }

plan generator::make_write(unsigned k, bool any_target)
{
	plan p;
	const fz_region &g0 = s_.reg(k);
	const u32 n = any_target ? static_cast<u32>(r_.range(1, 64)) : pick_len(r_, std::min<u32>(g0.len, 12000));
	const u64 off = any_target ? r_.below(std::max<u32>(g0.len, 1)) : pick_off(g0.len, n);
	const u64 seed = r_.next();
	bytes data(n);
	rand_fill(seed, data.data(), n);
	u32 at = 0;
	const std::vector<u32> sizes = segment_sizes(r_, n);
	for (std::size_t i = 0; i < sizes.size(); i++) {
		frame_spec f = spec_from_template(find_template("write"));
		f.ddp_ctrl = xiw_ddp_ctrl(1, i + 1 == sizes.size());
		f.stag = sym::stag(k);
		f.to = sym::at(k, static_cast<i64>(off + at));
		f.pk = PK_RAND;
		// Each segment's octets: a slice of DATA, regenerated from a
		// seed of its own so that the text form stays exact.
		f.pseed = seed + i;
		f.plen = sizes[i];
		at += sizes[i];
		p.frames.push_back(f);
	}
	p.what = "write";
	// Model: what each segment places.
	p.commit = [k, off, seed, sizes, n](session &s) {
		shadow &m = s.mem[k];
		u64 at2 = off;
		for (std::size_t i = 0; i < sizes.size(); i++) {
			bytes d(sizes[i]);
			rand_fill(seed + i, d.data(), d.size());
			for (std::size_t j = 0; j < d.size(); j++, at2++)
				if (at2 < m.v.size()) {
					m.v[at2] = d[j];
					m.known[at2] = s.clean;
				}
		}
		s.write_overlap(k, off, n);
	};
	return p;
}

plan generator::make_send(int variant)
{
	static const char *const names[] = {"send", "send_se", "send_inv", "send_se_inv"};
	plan p;
	// Receive k has layout k (the victim reposts in order).
	const u32 n = pick_len(r_, recv_capacity(s_.sends_done));
	const char *name = names[variant & 3];
	u32 at = 0;
	const std::vector<u32> sizes = segment_sizes(r_, n);
	const u32 msn = s_.msn_out[XIW_QN_SEND];
	for (std::size_t i = 0; i < sizes.size(); i++) {
		frame_spec f = spec_from_template(find_template(name));
		f.ddp_ctrl = xiw_ddp_ctrl(0, i + 1 == sizes.size());
		f.msn = msn;
		f.mo = at;
		f.pk = PK_SEND;
		f.plen = sizes[i];
		if (variant & 2)
			f.inval = sym::stag(R_RW);
		at += sizes[i];
		f.valid = !(variant & 2);
		f.allowed = send_allowed();
		p.frames.push_back(f);
	}
	if (variant & 2)
		p.frames.back().mutation = "send_with_invalidate";
	p.what = name;
	p.commit = commit_send;
	return p;
}

plan generator::make_read(unsigned k)
{
	plan p;
	const auto [n, off] = pick_span(s_.reg(k).len, 9000);
	frame_spec f = request("read_req");
	const u32 sink = s_.new_sink();
	const u64 sink_to = r_.chance(1, 4) ? 0 : r_.next() & ~0xfffull;
	field(f, "sink_stag") = sym::num(sink);
	field(f, "sink_to") = sym::num(sink_to);
	field(f, "size") = sym::num(n);
	field(f, "src_stag") = sym::stag(k);
	field(f, "src_to") = sym::at(k, static_cast<i64>(off));
	p.frames.push_back(f);
	out_req o(XIW_OP_READ_REQ, k, off, n);
	o.size = n;
	o.sink_stag = sink;
	o.sink_to = sink_to;
	const shadow &m = s_.mem[k];
	if (off + n <= m.v.size()) {
		o.snap.assign(m.v.begin() + static_cast<std::ptrdiff_t>(off),
			      m.v.begin() + static_cast<std::ptrdiff_t>(off + n));
		o.snap_known.assign(m.known.begin() + static_cast<std::ptrdiff_t>(off),
				    m.known.begin() + static_cast<std::ptrdiff_t>(off + n));
	}
	p.reqs.push_back(o);
	p.what = "read";
	p.commit = commit_request;
	return p;
}

plan generator::make_atomic(unsigned k)
{
	plan p;
	const fz_region &g0 = s_.reg(k);
	const u64 off = (g0.len >= 8 ? r_.below(g0.len / 8) : 0) * 8;
	// The address must be 8-aligned: R_RW's window is 4 GiB - 4132.
	const u64 addr = g0.addr + off;
	const u64 aligned_off = off - (addr & 7);
	const u64 word_off = (addr & 7) ? (aligned_off + 8 <= g0.len ? aligned_off + 8 : aligned_off)
					: off;
	frame_spec f = request("atomic_req");
	const bool cs = r_.chance(1, 2);
	const u32 id = static_cast<u32>(r_.next());
	const shadow &m = s_.mem[k];
	u64 cur = 0;
	bool known = word_off + 8 <= m.v.size();
	for (unsigned i = 0; known && i < 8; i++) {
		known = m.known[word_off + i];
		cur |= static_cast<u64>(m.v[word_off + i]) << (8 * i);
	}
	const u64 add = r_.chance(1, 3) ? r_.below(16) : r_.next();
	const u64 mask = r_.chance(2, 3) ? (cs ? ~0ull : 0) : r_.next();
	const u64 cmp = cs && known && r_.chance(1, 2) ? cur : r_.next();
	const u64 cmask = r_.chance(2, 3) ? ~0ull : r_.next();
	field(f, "aop") = sym::num(cs ? XIW_AOP_CMP_SWAP : XIW_AOP_FETCH_ADD);
	field(f, "req_id") = sym::num(id);
	field(f, "stag") = sym::stag(k);
	field(f, "to") = sym::at(k, static_cast<i64>(word_off));
	field(f, "add") = sym::num(add);
	field(f, "add_mask") = sym::num(mask);
	field(f, "cmp") = sym::num(cmp);
	field(f, "cmp_mask") = sym::num(cs ? cmask : ~0ull);
	p.frames.push_back(f);
	out_req o(XIW_OP_ATOMIC_REQ, k, word_off, 8);
	o.req_id = id;
	o.orig_known = known;
	o.orig = cur;
	p.reqs.push_back(o);
	p.what = cs ? "cmp_swap" : "fetch_add";
	p.commit = [k, word_off, cs, add, mask, cmp, cmask](session &s) {
		commit_request(s);
		shadow &m = s.mem[k];
		if (word_off + 8 > m.v.size())
			return;
		u64 cur2 = 0;
		bool known2 = true;
		for (unsigned i = 0; i < 8; i++) {
			known2 = known2 && m.known[word_off + i];
			cur2 |= static_cast<u64>(m.v[word_off + i]) << (8 * i);
		}
		u64 res = 0;
		__u64 res2 = 0;
		xiw_atomic_apply(cs ? XIW_AOP_CMP_SWAP : XIW_AOP_FETCH_ADD, cur2, add, mask, cmp,
				 cs ? cmask : ~0ull, 0, &res2);
		res = res2;
		for (unsigned i = 0; i < 8; i++) {
			m.v[word_off + i] = static_cast<u8>(res >> (8 * i));
			m.known[word_off + i] = known2;
		}
	};
	return p;
}

plan generator::make_flush(unsigned k, u32 flags)
{
	plan p;
	frame_spec f = range_request("flush_req", k, pick_span(s_.reg(k).len));
	field(f, "flags") = sym::num(flags);
	p.frames.push_back(f);
	p.reqs.push_back(out_req(XIW_OP_FLUSH_REQ));
	p.what = "flush";
	p.commit = commit_request;
	return p;
}

bytes hash_of(u8 kind, const u8 *p, std::size_t n)
{
	if (kind == 2) {
		const auto d = xiw_test::sha256::of(p, n);
		return bytes(d.begin(), d.end());
	}
	const u32 c = xiw_crc32c(p, n);
	return {static_cast<u8>(c), static_cast<u8>(c >> 8), static_cast<u8>(c >> 16),
		static_cast<u8>(c >> 24)};
}

// EXPECT: 0 no hash given, 1 the right one (if known), 2 a wrong one.
plan generator::make_verify(unsigned k, int expect)
{
	plan p;
	const fz_region &g0 = s_.reg(k);
	const u8 kind = g0.rights & RT_VS ? 2 : 1;
	const auto [n, off] = pick_span(g0.len);
	frame_spec f = range_request("verify_req", k, {n, off});
	const shadow &m = s_.mem[k];
	bool known = off + n <= m.v.size();
	for (std::size_t i = 0; known && i < n; i++)
		known = m.known[off + i];
	bytes h = known ? hash_of(kind, m.v.data() + off, n) : bytes{};
	out_req o(XIW_OP_VERIFY_REQ, k, off, n);
	o.hash_kind = kind;
	o.hash = h;
	if (expect && known) {
		bytes given = h;
		if (expect == 2)
			given[r_.below(given.size())] ^= static_cast<u8>(1 + r_.below(255));
		f.pk = PK_HEX;
		f.phex = given;
		if (expect == 2) {
			f.must_fail = true;
			f.mutation = "verify_wrong_hash";
			o.must_fail = true;
		}
	}
	p.frames.push_back(f);
	p.reqs.push_back(o);
	p.what = "verify";
	p.commit = commit_request;
	return p;
}

plan generator::make_awrite(unsigned k)
{
	plan p;
	const fz_region &g0 = s_.reg(k);
	u64 off = g0.len >= 8 ? r_.below(g0.len / 8) * 8 : 0;
	const u64 mis = (g0.addr + off) & 7;
	if (mis)
		off = off + 8 - mis + 8 <= g0.len ? off + 8 - mis : off - mis;
	const u64 val = r_.next();
	frame_spec f = range_request("awrite_req", k, {8, off});
	field(f, "data") = sym::num(val);
	p.frames.push_back(f);
	p.reqs.push_back(out_req(XIW_OP_ATOMIC_WRITE_REQ, k, off, 8));
	p.what = "awrite";
	p.commit = [k, off, val](session &s) {
		commit_request(s);
		shadow &m = s.mem[k];
		for (unsigned i = 0; i < 8 && off + i < m.v.size(); i++) {
			m.v[off + i] = static_cast<u8>(val >> (8 * i)); // host order (x86)
			m.known[off + i] = 1;
		}
	};
	return p;
}

plan generator::make_imm()
{
	plan p;
	frame_spec f = spec_from_template(find_template(r_.chance(1, 2) ? "imm" : "imm_se"));
	f.msn = s_.msn_out[XIW_QN_SEND];
	field(f, "imm") = sym::num(r_.next());
	f.allowed = send_allowed();
	p.frames.push_back(f);
	p.what = "imm";
	p.commit = commit_send;
	return p;
}

plan generator::make_send_imm()
{
	static const char *const names[] = {"send_imm", "send_se_imm"};
	plan p;
	const u32 n = pick_len(r_, recv_capacity(s_.sends_done));
	const char *name = names[r_.below(2)];
	const u32 msn = s_.msn_out[XIW_QN_SEND];
	u32 at = 0;
	std::vector<u32> sizes = n ? segment_sizes(r_, n) : std::vector<u32>{};
	for (std::size_t i = 0; i <= sizes.size(); i++) {
		frame_spec f = spec_from_template(find_template(name));
		const bool last = i == sizes.size();
		f.ddp_ctrl = xiw_ddp_ctrl(0, last);
		f.msn = msn;
		f.mo = at;
		if (last) {
			f.pk = PK_RAND;
			f.pseed = r_.next();
			f.plen = XIW_IMM_DATA_LEN;
		} else {
			f.pk = PK_SEND;
			f.plen = sizes[i];
			at += sizes[i];
		}
		f.valid = true;
		f.allowed = send_allowed();
		p.frames.push_back(f);
	}
	p.what = name;
	p.commit = commit_send;
	return p;
}

void generator::execute(plan &p, bool mutate)
{
	std::size_t which = p.frames.empty() ? 0 : r_.below(p.frames.size());
	bool mutated = false;
	for (std::size_t i = 0; i < p.frames.size(); i++) {
		frame_spec &f = p.frames[i];
		if (f.mutation.empty() && !f.must_fail && f.valid == false)
			f.valid = true;
		if (mutate && i == which) {
			f.mutation = mutate_field(f);
			f.valid = false;
			mutated = true;
		}
		if (!f.mutation.empty())
			f.valid = false;
		if (r_.chance(1, 6))
			f.split = random_splits(r_, 40 + f.plen);
		s_.send_frame(f);
		if (i == 0)
			for (auto &o : p.reqs) {
				o.frame = s_.sent.size() - 1;
				o.must_fail = o.must_fail || f.must_fail;
				o.checked = s_.clean || o.must_fail;
				if (!mutated)
					s_.outq.push_back(o);
			}
		if (s_.dead)
			break;
	}
	if (!mutated && p.commit)
		p.commit(s_);
}

bool generator::valid_plan(plan &p)
{
	const bool room = s_.outq.size() < s_.xiw_ird;
	std::vector<std::pair<int, int>> w; // (weight, kind)
	auto add = [&](int weight, int kind) { w.emplace_back(weight, kind); };
	if (pick_region(RT_RW, true) < R_COUNT)
		add(20, 0);
	add(s_.sends_done < s_.cfg.hello.n_recv ? 16 : 3, 1);
	if (room && pick_region(RT_RR, true) < R_COUNT)
		add(14, 2);
	if (room && s_.ext_ok() && pick_region(RT_RA, true) < R_COUNT)
		add(10, 3);
	if (room && s_.ext_ok() && (s_.has(R_RW, RT_FG) || s_.has(R_FLUSH, RT_FG)))
		add(5, 4);
	if (room && s_.ext_ok() && (s_.has(R_RW, RT_VC) || s_.has(R_FLUSH, RT_VS)))
		add(5, 5);
	if (room && s_.ext_ok() && pick_region(RT_RW, true) < R_COUNT)
		add(5, 6);
	if (s_.ext_ok())
		add(s_.sends_done < s_.cfg.hello.n_recv ? 4 : 1, 7);
	if (s_.ext_ok())
		add(s_.sends_done < s_.cfg.hello.n_recv ? 4 : 1, 8);
	int total = 0;
	for (auto &x : w)
		total += x.first;
	int pickv = static_cast<int>(r_.below(static_cast<u64>(total)));
	int kind = 0;
	for (auto &x : w) {
		if (pickv < x.first) {
			kind = x.second;
			break;
		}
		pickv -= x.first;
	}
	switch (kind) {
	case 0:
		p = make_write(pick_region(RT_RW, true));
		break;
	case 1:
		p = make_send(r_.chance(1, 3) ? 1 : 0);
		break;
	case 2:
		p = make_read(pick_region(RT_RR, true));
		break;
	case 3:
		p = make_atomic(pick_region(RT_RA, true));
		break;
	case 4: {
		std::vector<std::pair<unsigned, u32>> c;
		if (s_.has(R_RW, RT_FG))
			c.emplace_back(R_RW, XIW_FLUSH_DISP_G);
		if (s_.has(R_RW, RT_FG))
			c.emplace_back(R_RW, XIW_FLUSH_DISP_G | XIW_FLUSH_DISP_R);
		if (s_.has(R_FLUSH, RT_FG))
			c.emplace_back(R_FLUSH, XIW_FLUSH_DISP_G);
		if (s_.has(R_FLUSH, RT_FP))
			c.emplace_back(R_FLUSH, XIW_FLUSH_DISP_P);
		if (s_.has(R_FLUSH, RT_FP | RT_FG))
			c.emplace_back(R_FLUSH, XIW_FLUSH_DISP_P | XIW_FLUSH_DISP_G | (r_.chance(1, 3) ? XIW_FLUSH_DISP_R : 0));
		const auto &x = r_.pick(c);
		p = make_flush(x.first, x.second);
		break;
	}
	case 5: {
		std::vector<unsigned> c;
		if (s_.has(R_RW, RT_VC))
			c.push_back(R_RW);
		if (s_.has(R_FLUSH, RT_VS))
			c.push_back(R_FLUSH);
		p = make_verify(r_.pick(c), r_.chance(1, 2) ? 1 : 0);
		break;
	}
	case 6:
		p = make_awrite(pick_region(RT_RW, true));
		break;
	case 7:
		p = make_imm();
		break;
	default:
		p = make_send_imm();
		break;
	}
	return true;
}

// One field of F changed (F stays a well-framed FPDU unless the framing
// is what changes).  Returns the name of the mutation.
std::string generator::mutate_field(frame_spec &f)
{
	static const u32 odd_lens[] = {0, 1, 2, 3, 4, 7, 8, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
				       24, 28, 31, 32, 45, 46, 47, 48, 52, 63, 64, 71, 72, 73, 255,
				       256, 511, 512, 1023, 4095, 4096, 8191, 16383, 16384, 32768,
				       65531, 65532, 65535};
	const unsigned rv_op_any = static_cast<unsigned>(r_.below(256));
	const int c = static_cast<int>(r_.below(30));
	switch (c) {
	case 0:
		f.ddp_ctrl ^= XIW_DDP_FLAG_T;
		return "ddp_t";
	case 1:
		f.ddp_ctrl ^= XIW_DDP_FLAG_L;
		return "ddp_l";
	case 2:
		f.ddp_ctrl = static_cast<u8>((f.ddp_ctrl & ~XIW_DDP_DV_MASK) | r_.pick({0u, 2u, 3u}));
		return "ddp_version";
	case 3:
		f.ddp_ctrl ^= static_cast<u8>(4 << r_.below(4));
		return "ddp_reserved";
	case 4:
		f.rdmap_ctrl = static_cast<u8>((f.rdmap_ctrl & 0x3f) | (r_.pick({0u, 2u, 3u}) << 6));
		return "rdmap_rv";
	case 5:
		f.rdmap_ctrl ^= XIW_RDMAP_RSV_MASK;
		return "rdmap_rsv";
	case 6:
		f.rdmap_ctrl = static_cast<u8>((f.rdmap_ctrl & 0xe0) | r_.below(32));
		return "rdmap_opcode";
	case 7:
		f.rdmap_ctrl = static_cast<u8>(rv_op_any);
		return "rdmap_ctrl";
	case 8:
		if (f.tagged)
			f.stag = r_.chance(1, 2) ? sym::stag(f.stag.region, static_cast<u32>(1 + r_.below(255)))
						 : sym::stag(f.stag.region, 0, r_.chance(1, 2) ? 0x100 : -0x100);
		else
			f.qn = static_cast<u32>(r_.chance(3, 4) ? r_.below(5) : r_.next());
		return f.tagged ? "stag_neighbour" : "qn";
	case 9:
		if (f.tagged) {
			f.stag = r_.chance(1, 3) ? sym::num(r_.chance(1, 2) ? 0 : static_cast<u32>(r_.next()))
						 : sym::stag(static_cast<unsigned>(r_.pick({R_LOCAL, R_OTHERPD, R_DEREG, R_RECV, R_SINK, R_RO, R_ATOMIC, R_FLUSH})));
			return "stag_other";
		}
		f.msn += r_.chance(1, 2) ? 1 : static_cast<u32>(-1);
		return "msn_pm1";
	case 10:
		if (f.tagged) {
			f.to.off += r_.chance(1, 2) ? -1 : static_cast<i64>(r_.range(1, 8));
			return "to_edge";
		}
		f.msn = static_cast<u32>(r_.chance(1, 3) ? 0 : r_.next());
		return "msn_random";
	case 11:
		if (f.tagged) {
			// Across the end of the region, page and 4 GiB boundaries.
			f.to = r_.chance(1, 2) ? sym::end(f.to.region, -static_cast<i64>(r_.below(8)))
					       : sym::at(f.to.region, static_cast<i64>(r_.below(3)) * 4096 - 36 +
								    static_cast<i64>(r_.below(72)));
			return "to_boundary";
		}
		f.mo = static_cast<u32>(r_.pick({1u, 16u, 0xffffffffu, 0x80000000u, 4096u}) + f.mo);
		return "mo";
	case 12:
		if (f.tagged) {
			f.to = sym::num(r_.pick({0xfffffffffffffff8ull, 0xffffffffffffffffull, 0ull,
						  0x00000000fffffff0ull, 0x8000000000000000ull}));
			return "to_wrap";
		}
		f.mo = static_cast<u32>(r_.next());
		return "mo_random";
	case 13:
		if (f.tagged) {
			// The address with its upper half lost (32-bit truncation).
			const u64 a = s_.reg(f.to.region < R_COUNT ? f.to.region : 0).addr;
			f.to = sym::num((a + static_cast<u64>(f.to.off)) & 0xffffffffull);
			return "to_trunc32";
		}
		f.inval = sym::stag(static_cast<unsigned>(r_.below(R_COUNT)));
		return "inval";
	case 14:
		f.ulpdu = r_.pick(odd_lens);
		return "ulpdu_len";
	case 15:
		f.ulpdu = static_cast<u32>(r_.below(0x10000));
		return "ulpdu_random";
	case 16:
		f.plen = static_cast<u32>(r_.pick({0u, 1u, 7u, 9u, 4097u, 8192u, 16384u, 60000u}));
		if (f.pk == PK_NONE)
			f.pk = PK_FILL;
		return "payload_len";
	case 17:
		f.crc = xiw_raw::frame_opts::crc_bad;
		return "crc_bad";
	case 18:
		if (!s_.crc_on) {
			f.crc = xiw_raw::frame_opts::crc_random;
			f.crc_value = static_cast<u32>(r_.next());
			return "crc_garbage_off";
		}
		f.crc = xiw_raw::frame_opts::crc_zero;
		return "crc_zero";
	case 19:
		if (s_.tx.markers) {
			if (r_.chance(1, 2))
				f.lead = static_cast<int>(r_.pick({4u, 8u, 1u, 0xfffcu, 512u}));
			else
				f.mxor = static_cast<u16>(r_.pick({4u, 8u, 0x200u, 0x8000u}));
			return "marker_bad";
		}
		f.desync = static_cast<u32>(r_.below(0x10000));
		return "desync";
	case 20:
		f.trunc = static_cast<int>(r_.below(40 + f.plen));
		return "truncate";
	case 21:
		if (!f.fields.empty()) {
			const std::size_t i = r_.below(f.fields.size());
			const field_def &d = f.tpl->fields[i];
			if (d.type == FT_STAG)
				f.fields[i] = r_.chance(1, 2) ? sym::stag(static_cast<unsigned>(r_.below(R_COUNT)))
							   : sym::stag(f.fields[i].region, static_cast<u32>(1 + r_.below(255)));
			else if (d.type == FT_ADDR)
				f.fields[i] = r_.chance(1, 2) ? sym::end(f.fields[i].region, -static_cast<i64>(r_.below(12)))
							   : sym::num(r_.pick({0ull, ~0ull, 0xfffffffffffff000ull, 1ull}));
			else
				f.fields[i] = sym::num(r_.chance(1, 2) ? r_.next()
								       : r_.pick({0ull, 1ull, 3ull, 4ull, 5ull, 7ull, 8ull, 9ull, 15ull, 16ull,
										  0xffffffffull, 0x7fffffffull, 0x10000ull}));
			return std::string("hdr_") + d.name;
		}
		f.ddp_ctrl ^= XIW_DDP_FLAG_L;
		return "ddp_l";
	case 22:
		f.extra.resize(r_.range(1, 12));
		rand_fill(r_.next(), f.extra.data(), f.extra.size());
		return "extra_octets";
	case 23:
		f.pad = static_cast<u8>(1 + r_.below(255));
		return "pad_garbage";
	case 24:
		if (s_.tx.markers) {
			f.mrsvd = static_cast<u16>(1 + r_.below(0xffff));
			return "marker_rsvd";
		}
		f.ulpdu = static_cast<u32>(f.tagged ? r_.below(XIW_DDP_TAGGED_HLEN + 2) : r_.below(XIW_DDP_UNTAGGED_HLEN + 2));
		return "ulpdu_short";
	case 25:
		f.tagged = !f.tagged;
		return "layout";
	case 26: {
		// The header of another opcode in this one's clothes.
		const auto &t = op_templates();
		const op_template *o = &t[r_.below(t.size() - 1)];
		frame_spec g2 = spec_from_template(o);
		g2.ddp_ctrl = f.ddp_ctrl;
		g2.rdmap_ctrl = f.rdmap_ctrl;
		g2.msn = f.msn;
		for (std::size_t i = 0; i < g2.fields.size(); i++)
			g2.fields[i] = sym::num(r_.next());
		f = g2;
		return "other_header";
	}
	case 27:
		f.split.clear();
		for (u32 i = 1; i < 64; i++)
			f.split.push_back(i);
		f.valid = true;
		return "split_bytes";
	case 28:
		f.trunc = static_cast<int>(r_.range(1, 30));
		return "truncate_early";
	default:
		f.desync = static_cast<u32>(r_.below(0x10000));
		return "desync";
	}
}

// A Read Response, Atomic Response, ... for the oldest request of the
// victim: correct, or with one thing wrong.
void generator::respond(bool mutate)
{
	if (s_.inq.empty())
		return;
	in_req &q = s_.inq.front();
	const fz_action &a = s_.cfg.hello.actions[q.k];
	std::vector<frame_spec> fr;
	bool done = true;
	switch (q.op) {
	case XIW_OP_READ_REQ: {
		const u32 left = q.size - q.sent;
		const u32 n = left ? static_cast<u32>(r_.range(std::min<u32>(left, 1), left)) : 0;
		frame_spec f = spec_from_template(find_template("read_resp"));
		const bool last = q.sent + n == q.size;
		f.ddp_ctrl = xiw_ddp_ctrl(1, last);
		f.stag = sym::stag(R_SINK);
		f.to = sym::at(R_SINK, static_cast<i64>(q.k * sink_window + q.sent));
		f.pk = PK_FAKE;
		f.pseed = static_cast<u64>(q.k) << 32 | q.sent;
		f.plen = n;
		q.sent += n;
		done = last;
		fr.push_back(f);
		break;
	}
	case XIW_OP_ATOMIC_REQ: {
		frame_spec f = spec_from_template(find_template("atomic_resp"));
		f.msn = s_.msn_out[XIW_QN_RESPONSE];
		field(f, "req_id") = sym::request();
		field(f, "orig") = sym::num(fake_atomic_orig(q.k));
		fr.push_back(f);
		break;
	}
	case XIW_OP_FLUSH_REQ:
	case XIW_OP_ATOMIC_WRITE_REQ: {
		frame_spec f = spec_from_template(find_template(q.op == XIW_OP_FLUSH_REQ ? "flush_resp" : "awrite_resp"));
		f.msn = s_.msn_out[XIW_QN_RESPONSE];
		fr.push_back(f);
		break;
	}
	default:
		s_.inq.pop_front();
		return;
	}
	(void)a;
	s_.rc.req_id = q.req_id;
	const bool untagged_resp = q.op != XIW_OP_READ_REQ;
	for (auto &f : fr) {
		f.valid = true;
		if (mutate) {
			switch (r_.below(6)) {
			case 0:
				f.mutation = "resp_" + mutate_field(f);
				break;
			case 1:
				if (f.tagged) {
					f.stag = sym::stag(R_SINK, static_cast<u32>(1 + r_.below(255)));
					f.mutation = "resp_wrong_stag";
				} else {
					field(f, "req_id") = sym::request(1);
					f.mutation = "resp_wrong_req_id";
				}
				break;
			case 2:
				if (f.tagged) {
					f.stag = sym::stag(r_.chance(1, 2) ? R_LOCAL : R_RECV);
					f.to = sym::at(r_.chance(1, 2) ? R_LOCAL : R_RECV, 0);
					f.mutation = "resp_other_buffer";
				} else {
					f.msn++;
					f.mutation = "resp_msn";
				}
				break;
			case 3:
				f.plen += static_cast<u32>(r_.range(1, 2000));
				if (f.pk == PK_NONE)
					f.pk = PK_FILL;
				f.mutation = "resp_too_long";
				break;
			case 4:
				f.to.off += r_.chance(1, 2) ? 1 : -1;
				f.mutation = "resp_to";
				break;
			default:
				f.ddp_ctrl ^= XIW_DDP_FLAG_L;
				f.mutation = "resp_l";
				break;
			}
			f.valid = false;
		}
		s_.send_frame(f);
	}
	if (untagged_resp && !mutate)
		s_.msn_out[XIW_QN_RESPONSE]++;
	if (done || mutate)
		s_.inq.pop_front();
}

// A frame of random fields, framed correctly.
void generator::chaos_frame()
{
	const auto &t = op_templates();
	frame_spec f = spec_from_template(&t[r_.below(t.size())]);
	f.ddp_ctrl = static_cast<u8>(r_.chance(3, 4) ? xiw_ddp_ctrl(r_.chance(1, 2), r_.chance(3, 4)) : r_.below(256));
	f.rdmap_ctrl = static_cast<u8>(r_.chance(1, 2) ? xiw_rdmap_ctrl(r_.range(0, 3), r_.below(32)) : r_.below(256));
	f.tagged = xiw_ddp_tagged(f.ddp_ctrl) ^ r_.chance(1, 10);
	f.stag = r_.chance(1, 2) ? sym::stag(static_cast<unsigned>(r_.below(R_COUNT))) : sym::num(r_.next() & 0xffffffff);
	f.to = r_.chance(1, 2) ? sym::at(f.stag.region, static_cast<i64>(r_.below(10000)) - 100) : sym::num(r_.next());
	f.qn = static_cast<u32>(r_.chance(3, 4) ? r_.below(4) : r_.next());
	f.msn = static_cast<u32>(r_.chance(3, 4) ? r_.range(0, 4) : r_.next());
	f.mo = static_cast<u32>(r_.chance(1, 2) ? 0 : r_.chance(1, 2) ? r_.below(8192) : r_.next());
	for (std::size_t i = 0; i < f.fields.size(); i++) {
		const field_def &d = f.tpl->fields[i];
		if (d.type == FT_STAG && r_.chance(1, 2))
			f.fields[i] = sym::stag(static_cast<unsigned>(r_.below(R_COUNT)));
		else if (d.type == FT_ADDR && r_.chance(1, 2))
			f.fields[i] = sym::at(static_cast<unsigned>(r_.below(R_COUNT)), static_cast<i64>(r_.below(9000)));
		else
			f.fields[i] = sym::num(r_.chance(1, 2) ? r_.below(64) : r_.next());
	}
	if (r_.chance(1, 2)) {
		f.pk = PK_RAND;
		f.pseed = r_.next();
		f.plen = static_cast<u32>(r_.chance(4, 5) ? r_.below(300) : r_.below(20000));
	}
	if (r_.chance(1, 8))
		f.ulpdu = static_cast<u32>(r_.below(0x10000));
	f.mutation = "chaos";
	if (r_.chance(1, 5))
		f.split = random_splits(r_, 40 + f.plen);
	s_.send_frame(f);
}

void generator::sweep_frame(unsigned rv, unsigned op, bool flip_t)
{
	const op_template *tp = template_of(rv ? rv : 1, op);
	frame_spec f = spec_from_template(tp ? tp : find_template("raw"));
	const bool tagged = (tp ? tp->tagged : r_.chance(1, 2)) != flip_t;
	f.rdmap_ctrl = xiw_rdmap_ctrl(rv, op);
	f.ddp_ctrl = xiw_ddp_ctrl(tagged, 1);
	f.tagged = tagged;
	f.qn = tp ? tp->qn : static_cast<u32>(r_.below(4));
	aim_at_rw(f, true);
	if (!tp) {
		f.extra.resize(r_.range(0, 40));
		rand_fill(r_.next(), f.extra.data(), f.extra.size());
	}
	send_sweep(f, r_.chance(1, 2));
}

// An opcode sweep's frame F, its control fields set: the next MSN of its
// QN, its STags and addresses into R_RW, its other header fields below
// 16 (with EIGHTS, half of them 8).
void generator::aim_at_rw(frame_spec &f, bool eights)
{
	f.msn = s_.msn_out[f.qn < 4 ? f.qn : 0];
	f.stag = sym::stag(R_RW);
	f.to = sym::at(R_RW, 64);
	for (std::size_t i = 0; i < f.fields.size(); i++) {
		const field_def &d = f.tpl->fields[i];
		f.fields[i] = d.type == FT_STAG ? sym::stag(R_RW)
			      : d.type == FT_ADDR ? sym::at(R_RW, 64)
						  : sym::num(eights && r_.chance(1, 2) ? 8 : r_.below(16));
	}
}

// Sends an opcode sweep's frame F, with a random payload if PAYLOAD.
void generator::send_sweep(frame_spec &f, bool payload)
{
	if (payload) {
		f.pk = PK_RAND;
		f.pseed = r_.next();
		f.plen = static_cast<u32>(r_.pick({0u, 8u, 16u, 64u}));
	}
	f.mutation = "opcode_sweep";
	s_.send_frame(f);
}

// One step that is not a valid operation.
void generator::mutated_step()
{
	const int c = static_cast<int>(r_.below(100));
	plan p;
	if (c < 45) {
		// A valid operation, one field of one segment changed.
		valid_plan(p);
		execute(p, true);
		return;
	}
	if (c < 60) {
		// An operation on memory it has no right to.
		struct cand {
			int op;
			u8 right;
		};
		static const cand cands[] = {{0, RT_RW}, {2, RT_RR}, {3, RT_RA}, {4, RT_FG},
					     {5, RT_FP}, {6, RT_VC}, {7, RT_RW}};
		const cand &x = r_.pick(cands);
		if (x.op != 0 && x.op != 2 && !s_.ext_ok()) {
			chaos_frame();
			return;
		}
		// A Verify right names its algorithm: either will do.
		const u8 right = x.op == 6 ? static_cast<u8>(RT_VC | RT_VS) : x.right;
		std::vector<unsigned> targets;
		for (unsigned k = 0; k < R_COUNT; k++)
			if (s_.reg(k).stag && k != R_DEREG &&
			    (!(s_.reg(k).rights & right) || k == R_OTHERPD))
				targets.push_back(k);
		targets.push_back(R_DEREG);
		const unsigned k = r_.pick(targets);
		switch (x.op) {
		case 0:
			p = make_write(k, true);
			break;
		case 2:
			p = make_read(k);
			break;
		case 3:
			p = make_atomic(k);
			break;
		case 4:
		case 5:
			p = make_flush(k, x.op == 4 ? XIW_FLUSH_DISP_G : XIW_FLUSH_DISP_P);
			break;
		case 6:
			p = make_verify(k, 0);
			break;
		default:
			p = make_awrite(k);
			break;
		}
		// Zero-length operations name no buffer and legitimately succeed.
		bool zero = false;
		for (auto &f : p.frames) {
			if (f.tagged && f.plen == 0 && p.frames.size() == 1)
				zero = true;
			if (f.tpl->name == std::string("read_req") && field(f, "size").v == 0)
				zero = true;
		}
		for (auto &f : p.frames) {
			f.valid = false;
			f.must_fail = !zero && x.op != 0;
			f.mutation = strf("no_right_%s_%s", p.what.c_str(), region_name(k));
		}
		for (auto &o : p.reqs)
			o.must_fail = !zero;
		execute(p, false);
		return;
	}
	if (c < 67) {
		// More requests than the responder's IRD.
		const unsigned n = s_.xiw_ird + static_cast<unsigned>(r_.range(1, 3));
		for (unsigned i = 0; i < n && !s_.dead; i++) {
			plan q;
			const unsigned kind = s_.ext_ok() ? static_cast<unsigned>(r_.below(5)) : 0;
			if (kind == 1 && pick_region(RT_RA, true) < R_COUNT)
				q = make_atomic(pick_region(RT_RA, true));
			else if (kind == 2 && s_.has(R_RW, RT_FG))
				q = make_flush(R_RW, XIW_FLUSH_DISP_G);
			else if (kind == 3 && s_.has(R_RW, RT_VC))
				q = make_verify(R_RW, 0);
			else if (kind == 4 && pick_region(RT_RW, true) < R_COUNT)
				q = make_awrite(pick_region(RT_RW, true));
			else
				q = make_read(pick_region(RT_RR, true) < R_COUNT ? pick_region(RT_RR, true)
										 : static_cast<unsigned>(R_RO));
			for (auto &f : q.frames) {
				f.valid = false;
				f.mutation = "ird_burst";
			}
			execute(q, false);
		}
		return;
	}
	if (c < 75) {
		// A response to nothing.
		static const char *const resp[] = {"read_resp", "atomic_resp", "flush_resp", "verify_resp",
						   "awrite_resp", "read_resp_v2"};
		frame_spec f = spec_from_template(find_template(r_.pick(resp)));
		f.msn = s_.msn_out[XIW_QN_RESPONSE];
		f.stag = sym::stag(r_.chance(1, 2) ? R_SINK : R_RW);
		f.to = sym::at(r_.chance(1, 2) ? R_SINK : R_RW);
		for (auto &x : f.fields)
			x = sym::num(r_.next());
		if (r_.chance(1, 2)) {
			f.pk = PK_RAND;
			f.pseed = r_.next();
			f.plen = static_cast<u32>(r_.below(600));
		}
		f.mutation = "unsolicited_response";
		s_.send_frame(f);
		return;
	}
	if (c < 80) {
		// A Terminate, of any layer, type and code.
		frame_spec f = spec_from_template(find_template("terminate"));
		f.msn = s_.msn_out[XIW_QN_TERMINATE];
		const u32 layer = static_cast<u32>(r_.chance(4, 5) ? r_.below(3) : r_.below(16));
		const u32 etype = static_cast<u32>(r_.chance(4, 5) ? r_.below(4) : r_.below(16));
		const u32 ecode = static_cast<u32>(r_.chance(4, 5) ? r_.below(10) : r_.below(256));
		const u32 flags = static_cast<u32>(r_.below(8)) << 13;
		field(f, "ctrl") = sym::num(layer << 28 | etype << 24 | ecode << 16 | flags);
		const u32 tail = static_cast<u32>(r_.pick({0u, 2u, 16u, 20u, 48u, 50u, 100u}));
		if (tail) {
			f.pk = PK_RAND;
			f.pseed = r_.next();
			f.plen = tail;
		}
		f.mutation = "terminate";
		s_.send_frame(f);
		return;
	}
	if (c < 85) {
		// Every RV x opcode with a header of its own kind.
		const unsigned rv = static_cast<unsigned>(r_.below(4)), op = static_cast<unsigned>(r_.below(32));
		const op_template *tp = template_of(rv ? rv : 1, op);
		frame_spec f = spec_from_template(tp ? tp : find_template("raw"));
		f.rdmap_ctrl = static_cast<u8>(xiw_rdmap_ctrl(rv, op) | (r_.chance(1, 8) ? XIW_RDMAP_RSV_MASK : 0));
		f.ddp_ctrl = xiw_ddp_ctrl(tp ? tp->tagged : r_.chance(1, 2), 1);
		f.tagged = xiw_ddp_tagged(f.ddp_ctrl);
		aim_at_rw(f, false);
		send_sweep(f, true);
		return;
	}
	if (c < 89) {
		// Raw octets: garbage in the stream.
		bytes b(r_.range(1, 64));
		rand_fill(r_.next(), b.data(), b.size());
		g.mutations["raw_bytes"]++;
		s_.send_unframed(b);
		return;
	}
	if (c < 93) {
		// A message continued where none began (seed a's shape): a
		// complete Send, then a Send segment with the next MSN and the
		// first one's length as MO.
		plan q = make_send(0);
		execute(q, false);
		frame_spec f = spec_from_template(find_template("send"));
		f.msn = s_.msn_out[XIW_QN_SEND];
		f.mo = static_cast<u32>(r_.pick({1u, 16u, 64u, 256u}));
		f.pk = PK_SEND;
		f.plen = static_cast<u32>(r_.range(1, 32));
		f.ddp_ctrl = xiw_ddp_ctrl(0, r_.chance(1, 2));
		f.mutation = "send_mo_no_message";
		s_.send_frame(f);
		return;
	}
	if (c < 97) {
		// A tagged segment whose payload never (fully) comes: the STag
		// stays referenced while the stream stalls or dies (seed b).
		const unsigned k = pick_region(RT_RW, true) < R_COUNT ? pick_region(RT_RW, true) : static_cast<unsigned>(R_RW);
		frame_spec f = spec_from_template(find_template("write"));
		f.stag = sym::stag(k);
		f.to = sym::at(k, 0);
		f.ulpdu = static_cast<u32>(r_.range(XIW_DDP_TAGGED_HLEN + 64, 0xffff));
		f.pk = PK_RAND;
		f.pseed = r_.next();
		f.plen = *f.ulpdu;
		f.trunc = static_cast<int>(r_.range(16, 16 + 1200));
		f.mutation = "write_stall";
		s_.send_frame(f);
		s_.stall(static_cast<u32>(r_.range(0, 300)));
		if (r_.chance(2, 3))
			s_.close_rst();
		return;
	}
	chaos_frame();
}

// ===========================================================================
// Cases

// Marks HELLO as ours, of case CASE_ID of SEED (the victim logs them).
void sign_hello(fz_hello &h, u32 case_id, u64 seed = 0)
{
	h.magic = hello_magic;
	h.case_id = case_id;
	h.seed = seed;
}

// Operations for the victim to post toward us: one or more, of any kind.
void random_actions(rng &r, fz_hello &h)
{
	h.n_actions = static_cast<u8>(r.range(1, max_actions));
	for (unsigned i = 0; i < h.n_actions; i++) {
		fz_action &a = h.actions[i];
		a.kind = static_cast<u8>(r.range(A_READ, A_COUNT - 1));
		a.len = static_cast<u16>(pick_len(r, a.kind == A_READ ? sink_window : 2048));
	}
}

conn_cfg random_cfg(rng &r)
{
	conn_cfg c;
	c.rev = r.chance(3, 10) ? 1 : 2;
	c.enhanced = c.rev == 2 && !r.chance(1, 10);
	c.crc = !r.chance(1, 6);
	c.markers = r.chance(1, 5);
	c.ext = !r.chance(1, 7);
	c.flags_extra = r.chance(1, 20) ? static_cast<u8>(r.below(256) & (XIW_MPA_FLAG_RES_MASK & ~XIW_MPA_FLAG_ENHANCED & ~XIW_MPA_FLAG_EXT)) : 0;
	c.p2p = c.enhanced && r.chance(3, 5);
	c.offer = static_cast<u16>(r.below(8));
	c.ird = static_cast<u16>(r.chance(1, 10) ? r.below(0x4000) : r.range(0, 16));
	c.ord = static_cast<u16>(r.chance(1, 10) ? r.below(0x4000) : r.range(0, 16));
	if (c.p2p && r.chance(1, 12)) {
		c.rtr = static_cast<rtr_choice>(r.range(RTR_NONE, RTR_SEND));
		c.rtr_len = r.chance(1, 2) ? static_cast<u32>(r.range(1, 100)) : 0;
	}
	if (opt.set_params) {
		c.xiw_markers = r.chance(1, 4) ? 2 : 0;
		c.xiw_crc = r.chance(1, 8) ? 0 : 1;
	}
	fz_hello &h = c.hello;
	h.ird = static_cast<u8>(r.range(1, 8));
	h.ord = static_cast<u8>(r.range(1, 8));
	h.n_recv = static_cast<u8>(r.range(1, max_recv));
	h.flags = 0;
	if (r.chance(3, 10))
		h.flags |= HF_QP_FIRST;
	if (r.chance(1, 10)) {
		h.flags |= HF_BAD_RECV;
		h.bad_recv_at = static_cast<u8>(r.below(h.n_recv));
	}
	if (r.chance(1, 10))
		h.flags |= HF_NO_REPOST;
	h.n_actions = 0;
	if (r.chance(3, 10))
		random_actions(r, h);
	return c;
}

// Writes the case as a seed file into --dump-dir.
void dump_case(const session &s, const std::string &name, const std::string &why)
{
	if (opt.dump_dir.empty())
		return;
	fz_case fc;
	fc.name = name + ": " + why;
	fc.cfg = s.cfg;
	fc.acts = s.log;
	// Back to back, as the generator sent them.
	action pace;
	pace.k = action::PACE;
	pace.ms = 0;
	fc.acts.insert(fc.acts.begin(), pace);
	const std::string path = opt.dump_dir + "/" + name + ".seed";
	std::ofstream f(path);
	f << case_text(fc);
	std::printf("fuzz: wrote %s\n", path.c_str());
}

bool budget_left(long long start)
{
	if (opt.frames && g.frames >= opt.frames)
		return false;
	if (opt.seconds > 0 && (now_ms() - start) / 1000.0 >= opt.seconds)
		return false;
	return !g.victim_gone;
}

unsigned g_fail_in_a_row = 0;

void note_open_failure(const std::string &where, const std::string &why)
{
	g.conn_failed++;
	std::printf("fuzz: %s: %s\n", where.c_str(), why.c_str());
	if (why == "rejected") {
		g_fail_in_a_row = 0;
		return;
	}
	if (++g_fail_in_a_row >= 3) {
		g.victim_gone = true;
		std::printf("fuzz: the victim does not answer any more (%s)\n", why.c_str());
	}
}

// Counts a case and opens its connection (S.where = WHERE); false, with
// WHY, if that failed.
bool open_case(session &s, const conn_cfg &cfg, const std::string &where, std::string &why)
{
	g.cases++;
	s.where = where;
	if (!s.open(cfg, why)) {
		note_open_failure(where, why);
		return false;
	}
	g_fail_in_a_row = 0;
	return true;
}

void run_generated(u64 k, long long start)
{
	rng r(opt.seed ^ (k * 0x9e3779b97f4a7c15ull) ^ 0x6a09e667f3bcc909ull);
	conn_cfg cfg = random_cfg(r);
	sign_hello(cfg.hello, static_cast<u32>(k), opt.seed);
	const std::string where = strf("seed %" PRIu64 " case %" PRIu64, opt.seed, k);
	const unsigned style = static_cast<unsigned>(r.below(100));
	const bool chaos = style < 6;
	const unsigned steps = chaos ? static_cast<unsigned>(r.range(1, 12))
				     : static_cast<unsigned>(r.chance(1, 4) ? r.range(1, 8) : r.range(8, 90));
	const int mut_at = chaos || !r.chance(17, 20) ? -1 : static_cast<int>(r.below(steps));
	// Nothing but valid frames: the victim may check the data it gets.
	if (!chaos && mut_at < 0 && cfg.rtr == RTR_AUTO)
		cfg.hello.flags |= HF_STRICT_DATA;
	progress(strf("case %" PRIu64 " seed %" PRIu64 " %s", k, opt.seed, cfg_text(cfg).c_str()));
	const u64 before = g.anomalies;
	session s;
	std::string why;
	if (!open_case(s, cfg, where, why))
		return;
	generator gen(r, s);
	if (cfg.hello.n_actions)
		s.pump(30);
	for (unsigned i = 0; i < steps && !s.dead && budget_left(start); i++) {
		const bool mut = static_cast<int>(i) == mut_at;
		if (chaos) {
			gen.chaos_frame();
		} else if (!s.inq.empty() && r.chance(7, 10)) {
			gen.respond(mut);
		} else if (mut) {
			gen.mutated_step();
		} else {
			if (s.outq.size() >= s.xiw_ird)
				s.wait_outq(500);
			plan p;
			gen.valid_plan(p);
			gen.execute(p, false);
		}
		s.pump(!s.clean ? 15 : 0);
		if (r.chance(1, 60) && !s.dead)
			s.stall(static_cast<u32>(r.range(1, 120)));
	}
	// What is still owed to us, then the end.
	while (!s.dead && !s.inq.empty() && r.chance(9, 10))
		gen.respond(false), s.pump(5);
	if (!s.dead && !s.outq.empty() && !s.wait_outq(3000) && s.clean) {
		anomaly(where, strf("%zu requests never answered on a valid connection", s.outq.size()));
		dump_case(s, strf("seed%" PRIu64 "-case%" PRIu64, opt.seed, k), "requests never answered");
	}
	if (!s.dead) {
		s.pump(r.chance(1, 3) ? 20 : 0);
		s.hang_up(r.chance(6, 10));
	}
	const std::string out = s.finish();
	if (opt.verbose)
		std::printf("fuzz: %s: %zu frames, %s\n", where.c_str(), s.sent.size(), out.c_str());
	if (g.anomalies != before || g_surprised)
		dump_case(s, strf("seed%" PRIu64 "-case%" PRIu64, opt.seed, k),
			  g.anomalies != before ? "anomaly" : "surprise");
	g_surprised = false;
}

// Sweep case N: every RV (0..3) x opcode (0..31) once per run, after a
// few valid operations, with the DDP T bit flipped in one case of four.
void run_sweep_case(u64 n, long long start)
{
	(void)start;
	rng r(opt.seed ^ 0x5357454550ull ^ (n * 0xc2b2ae3d27d4eb4full));
	conn_cfg cfg = random_cfg(r);
	cfg.ext = true;
	cfg.hello.flags &= static_cast<u8>(~HF_BAD_RECV);
	cfg.rtr = RTR_AUTO;
	cfg.rtr_len = 0;
	sign_hello(cfg.hello, static_cast<u32>(0x80000000u | n), opt.seed);
	const unsigned rv = static_cast<unsigned>(n / 32 % 4), op = static_cast<unsigned>(n % 32);
	const bool flip = r.chance(1, 4);
	const unsigned before_n = static_cast<unsigned>(r.range(0, 4));
	const std::string where = strf("seed %" PRIu64 " sweep %" PRIu64, opt.seed, n);
	progress(strf("sweep %" PRIu64 " seed %" PRIu64 " rv %u op 0x%02x %s", n, opt.seed, rv, op,
		      cfg_text(cfg).c_str()));
	const u64 anomalies = g.anomalies;
	session s;
	std::string why;
	if (!open_case(s, cfg, where, why))
		return;
	generator gen(r, s);
	for (unsigned i = 0; i < before_n && !s.dead; i++) {
		if (s.outq.size() >= s.xiw_ird)
			s.wait_outq(500);
		plan p;
		gen.valid_plan(p);
		gen.execute(p, false);
		s.pump(0);
	}
	if (!s.dead)
		gen.sweep_frame(rv, op, flip);
	for (int i = 0; i < 3 && !s.dead; i++)
		s.pump(10);
	if (!s.dead)
		s.hang_up(r.chance(1, 2));
	s.finish();
	if (g.anomalies != anomalies)
		dump_case(s, strf("seed%" PRIu64 "-sweep%" PRIu64, opt.seed, n), "anomaly");
}

// A seed file's case.
void run_seed(const std::string &name, const fz_case &fc, long long start)
{
	(void)start;
	conn_cfg cfg = fc.cfg;
	sign_hello(cfg.hello, 0xffffffffu);
	const std::string where = "seed file " + name;
	progress("seed " + name + " " + cfg_text(cfg));
	session s;
	std::string why;
	if (!open_case(s, cfg, where, why)) {
		g.seed_results.push_back(name + ": could not connect: " + why);
		return;
	}
	s.track = true;
	rng r(0x5eed);
	generator gen(r, s);
	std::vector<std::string> expects;
	int pace = 5;
	for (const action &a : fc.acts) {
		switch (a.k) {
		case action::PACE:
			pace = static_cast<int>(a.ms);
			break;
		case action::DEAF:
			s.deaf = a.ms != 0;
			break;
		case action::FRAME: {
			frame_spec f = a.f;
			f.valid = false;
			if (f.mutation.empty())
				f.mutation = "seed";
			s.send_frame(f);
			s.pump(pace);
			break;
		}
		case action::BYTES:
			s.send_unframed(a.raw);
			s.pump(pace);
			break;
		case action::RESPOND:
			s.pump(200);
			gen.respond(false);
			break;
		case action::WAIT:
			s.deaf = false;
			s.pump(0);
			{
				const long long until = now_ms() + a.ms;
				while (!s.dead && now_ms() < until)
					s.pump(20);
			}
			break;
		case action::ANSWERS:
			s.deaf = false;
			s.wait_outq(static_cast<int>(a.ms));
			break;
		case action::STALL:
			s.stall(a.ms);
			break;
		case action::FIN:
			s.close_fin();
			break;
		case action::RST:
			s.close_rst();
			break;
		case action::EXPECT:
			expects.push_back(a.expect);
			break;
		}
	}
	// Time for the answer, then the end unless the case ended it.
	s.deaf = false;
	{
		const long long until = now_ms() + 300;
		while (!s.dead && now_ms() < until)
			s.pump(20);
	}
	const std::size_t unanswered = s.outq.size();
	if (s.fd >= 0)
		s.close_fin();
	const std::string out = s.finish();
	std::string verdict = "ok";
	for (const std::string &e : expects) {
		bool met;
		if (e == "alive")
			met = out == "alive";
		else if (e == "answered")
			met = out == "alive" && !unanswered;
		else if (e == "closed")
			met = out == "closed" || out == "reset" || out[0] == 'T';
		else if (e == "term")
			met = out[0] == 'T';
		else if (e.rfind("term ", 0) == 0)
			met = out == "T" + term_text(term_of_text(e.substr(5)));
		else
			met = true;
		if (!met) {
			verdict = "FAIL: expected " + e;
			anomaly(where, "expected " + e + ", got " + out +
					       (s.end_frame.empty() ? "" : " at " + s.end_frame) +
					       (unanswered ? strf(", %zu requests unanswered", unanswered) : ""));
		}
	}
	g.seed_results.push_back(name + ": " + out + ": " + verdict);
	std::printf("fuzz: seed %s: %zu frames, %s: %s\n", name.c_str(), s.sent.size(), out.c_str(),
		    verdict.c_str());
}

std::vector<std::pair<std::string, std::string>> load_corpus()
{
	std::vector<std::pair<std::string, std::string>> files;
	for (const std::string &p : opt.corpus) {
		struct stat st;
		if (stat(p.c_str(), &st)) {
			std::fprintf(stderr, "fuzz: %s: %s\n", p.c_str(), std::strerror(errno));
			std::exit(2);
		}
		std::vector<std::string> paths;
		if (S_ISDIR(st.st_mode)) {
			DIR *d = opendir(p.c_str());
			while (dirent *e = d ? readdir(d) : nullptr) {
				const std::string n = e->d_name;
				if (n.size() > 5 && n.substr(n.size() - 5) == ".seed")
					paths.push_back(p + "/" + n);
			}
			if (d)
				closedir(d);
			std::sort(paths.begin(), paths.end());
		} else {
			paths.push_back(p);
		}
		for (const std::string &f : paths) {
			std::ifstream in(f);
			std::stringstream ss;
			ss << in.rdbuf();
			std::string base = f.substr(f.find_last_of('/') + 1);
			base = base.substr(0, base.size() - (base.size() > 5 ? 5 : 0));
			files.emplace_back(base, ss.str());
		}
	}
	return files;
}

// ===========================================================================
// Summary

void print_summary(long long start)
{
	const double secs = (now_ms() - start) / 1000.0;
	std::printf("\n== fuzz summary: %" PRIu64 " frames (%" PRIu64 " octets) in %" PRIu64
		    " cases, %" PRIu64 " connections (%" PRIu64 " failed to open, %" PRIu64
		    " rejected), %.1f s, %.0f frames/s\n",
		    g.frames, g.bytes, g.cases, g.conns, g.conn_failed, g.rejected, secs,
		    secs > 0 ? g.frames / secs : 0.0);
	std::printf("responses from xiw: %" PRIu64 ", requests answered: %" PRIu64 "\n", g.responses,
		    g.answered);
	std::string ends;
	for (const auto &[k, n] : g.ends)
		ends += strf(" %s=%" PRIu64, k.c_str(), n);
	std::printf("connection ends:%s\n", ends.c_str());
	// Outcome columns in a stable order.
	std::set<std::string> cols;
	std::size_t pairs = 0;
	for (const auto &[lab, m] : g.table)
		for (const auto &[o, n] : m) {
			cols.insert(o);
			pairs++;
		}
	std::printf("distinct (opcode, outcome) pairs: %zu (opcodes %zu, outcomes %zu)\n", pairs,
		    g.table.size(), cols.size());
	std::vector<std::string> cv(cols.begin(), cols.end());
	std::printf("%-18s", "opcode\\outcome");
	for (const auto &c : cv)
		std::printf(" %7s", c.substr(0, 7).c_str());
	std::printf("\n");
	for (const auto &[lab, m] : g.table) {
		std::printf("%-18s", lab.substr(0, 18).c_str());
		for (const auto &c : cv) {
			const auto it = m.find(c);
			if (it == m.end())
				std::printf(" %7s", ".");
			else
				std::printf(" %7" PRIu64, it->second);
		}
		std::printf("\n");
	}
	std::printf("rows: RV:opcode, T tagged / U untagged, as sent; columns: ok = accepted, resp = "
		    "answered, TL/T/C = Terminate (layer/type/code hex), closed/reset = stream ended "
		    "without one, bad = xiw's stream was broken\n");
	std::printf("Terminates from xiw by layer/type/code:\n");
	for (const auto &[k, n] : g.terms)
		std::printf("  %-10s %-36s %8" PRIu64 "\n", term_text(k).c_str(), term_name(k), n);
	std::string muts;
	for (const auto &[k, n] : g.mutations)
		muts += strf(" %s=%" PRIu64, k.c_str(), n);
	std::printf("mutations:%s\n", muts.c_str());
	if (!g.handshake.empty()) {
		std::string h;
		for (const auto &[k, n] : g.handshake)
			h += strf(" %s=%" PRIu64, k.c_str(), n);
		std::printf("handshake outcomes:%s\n", h.c_str());
	}
	for (const auto &s : g.seed_results)
		std::printf("seed result: %s\n", s.c_str());
	std::printf("surprises (a valid sequence ended; not failures): %" PRIu64 "\n", g.surprises);
	for (const auto &s : g.surprise_msgs)
		std::printf("  surprise: %s\n", s.c_str());
	std::printf("anomalies: %" PRIu64 "\n", g.anomalies);
	for (const auto &s : g.anomaly_msgs)
		std::printf("  ANOMALY: %s\n", s.c_str());
	if (g.victim_gone)
		std::printf("the victim stopped answering\n");
	std::fflush(stdout);
}

// Ends the victim: a connection whose fz_hello says HF_QUIT.
void quit_victim()
{
	conn_cfg c;
	sign_hello(c.hello, 0xfffffffeu);
	c.hello.flags = HF_QUIT;
	session s;
	s.where = "quit";
	std::string why;
	if (s.open(c, why))
		s.close_fin();
	else
		std::printf("fuzz: quit connection: %s\n", why.c_str());
}

// The end of a run: with QUIT the victim is told to end (if it still
// answers), then the summary.  Returns the exit status.
int end_run(long long start, bool quit)
{
	if (quit && !g.victim_gone)
		quit_victim();
	print_summary(start);
	if (g.victim_gone)
		return 4;
	return g.anomalies ? 1 : 0;
}

int run_wire()
{
	const long long start = now_ms();
	std::printf("fuzz: wire: seed %" PRIu64 ", frames %" PRIu64 ", seconds %.0f, victim %s:%u\n",
		    opt.seed, opt.frames, opt.seconds, opt.addr.c_str(), opt.port);
	std::fflush(stdout);
	for (const auto &[name, text] : load_corpus()) {
		if (opt.skip.count(name)) {
			std::printf("fuzz: seed %s: skipped\n", name.c_str());
			g.seed_results.push_back(name + ": skipped");
			continue;
		}
		fz_case fc;
		std::string why;
		if (!parse_case(text, fc, why)) {
			std::printf("fuzz: seed %s: %s\n", name.c_str(), why.c_str());
			return 2;
		}
		if (g.victim_gone)
			break;
		run_seed(name, fc, start);
	}
	if (opt.sweep_case) {
		run_sweep_case(*opt.sweep_case, start);
	} else if (!opt.only_corpus) {
		if (opt.only_case) {
			run_generated(*opt.only_case, start);
		} else {
			for (u64 n = 0; opt.sweep && n < 128 && budget_left(start); n++)
				run_sweep_case(n, start);
			for (u64 k = 0; (!opt.cases || k < opt.cases) && budget_left(start); k++)
				run_generated(k, start);
		}
	}
	return end_run(start, opt.quit);
}

// ===========================================================================
// Handshake fuzzing

// A Request, correct or not; VALID says it must be answered.
bytes handshake_request(rng &r, bool &valid, std::string &what)
{
	conn_cfg c = random_cfg(r);
	sign_hello(c.hello, 0xfffffff0u);
	u8 flags = (c.crc ? XIW_MPA_FLAG_C : 0) | (c.markers ? XIW_MPA_FLAG_M : 0) |
		   (c.ext ? XIW_MPA_FLAG_EXT : 0);
	u8 rev = c.rev;
	bytes pd;
	if (rev == 2 && c.enhanced) {
		flags |= XIW_MPA_FLAG_ENHANCED;
		pd = xiw_raw::mpa_v2_word(c.p2p ? XIW_MPA_V2_IRD_P2P : 0, c.ird, 0, c.ord);
	}
	const bytes hb = xiw_raw::bytes_of(c.hello);
	pd.insert(pd.end(), hb.begin(), hb.end());
	char key[XIW_MPA_KEY_LEN];
	std::memcpy(key, XIW_MPA_KEY_REQ, sizeof(key));
	int pd_field = -1;
	valid = true;
	what = "good";
	switch (r.below(14)) {
	case 0:
		key[r.below(16)] ^= static_cast<char>(1 + r.below(255));
		what = "key";
		valid = false;
		break;
	case 1:
		std::memcpy(key, XIW_MPA_KEY_REP, sizeof(key));
		what = "reply_key";
		valid = false;
		break;
	case 2:
		rev = static_cast<u8>(r.chance(1, 2) ? r.pick({0u, 3u, 255u}) : r.below(256));
		what = "rev";
		valid = rev == 1 || rev == 2;
		break;
	case 3:
		flags = static_cast<u8>(r.below(256));
		what = "flags";
		valid = false; // R, or a v2 word that is not one
		break;
	case 4:
		pd.resize(r.pick({0u, 1u, 3u, 255u, 256u, 511u, 512u, 513u, 1000u, 4096u, 65535u}));
		rand_fill(r.next(), pd.data(), pd.size());
		what = "pd_random";
		valid = false;
		break;
	case 5:
		pd_field = static_cast<int>(r.below(0x10000));
		what = "pd_len_field";
		valid = false;
		break;
	case 6:
		pd.resize(r.pick({0u, 2u}));
		what = "pd_short";
		valid = false;
		break;
	default:
		break;
	}
	return xiw_raw::mpa_encode(key, flags, rev, pd, pd_field);
}

int run_handshake()
{
	const long long start = now_ms();
	rng r(opt.seed ^ 0x4853484b);
	std::printf("fuzz: handshake: seed %" PRIu64 ", cases %" PRIu64 ", flood %u\n", opt.seed,
		    opt.cases, opt.flood);
	std::fflush(stdout);
	const u64 n = opt.cases ? opt.cases : 200;
	for (u64 k = 0; k < n && (opt.seconds <= 0 || (now_ms() - start) / 1000.0 < opt.seconds); k++) {
		bool valid;
		std::string what;
		bytes req = handshake_request(r, valid, what);
		const std::string where = strf("handshake seed %" PRIu64 " case %" PRIu64 " (%s)", opt.seed, k, what.c_str());
		progress(where);
		g.cases++;
		std::string why;
		const int fd = xiw_raw::tcp_connect(opt.addr.c_str(), opt.port, 5000, why);
		if (fd < 0) {
			note_open_failure(where, why);
			if (g.victim_gone)
				break;
			continue;
		}
		g_fail_in_a_row = 0;
		g.conns++;
		// How it goes out: whole, in pieces, dripped, or cut short.
		const u64 how = r.below(10);
		std::size_t upto = req.size();
		if (how == 0) {
			upto = r.below(req.size());
			valid = false;
			what += "+truncated";
		}
		if (how == 1)
			what += "+dripped";
		bool send_ok = true;
		if (how == 1) {
			for (std::size_t i = 0; i < upto && send_ok; i++) {
				send_ok = send(fd, &req[i], 1, MSG_NOSIGNAL) == 1;
				std::this_thread::sleep_for(std::chrono::milliseconds(r.range(0, 3)));
			}
		} else {
			std::size_t at = 0;
			while (at < upto && send_ok) {
				const std::size_t k2 = how == 2 ? std::min<std::size_t>(upto - at, r.range(1, 64)) : upto - at;
				const ssize_t w = send(fd, &req[at], k2, MSG_NOSIGNAL);
				send_ok = w > 0;
				at += w > 0 ? static_cast<std::size_t>(w) : 0;
			}
		}
		// The answer: a Reply (and its private data), or the end.
		xiw_raw::mpa_frame_reader mr;
		bytes buf;
		std::size_t used = 0;
		const long got = xiw_raw::recv_mpa_frame(fd, mr, buf, used,
							 valid ? 15000 : how == 0 ? 300 : 3000);
		const std::string outcome =
			got > 0 ? (mr.frame().flags & XIW_MPA_FLAG_R ? "rejected" : "reply")
				: (got == 0 ? "closed" : got == -1 ? "reset" : "silence");
		if (mr.done()) {
			const auto &f = mr.frame();
			if (!f.key_is(XIW_MPA_KEY_REP))
				anomaly(where, "a Reply with a wrong key");
			if (f.rev != 1 && f.rev != 2)
				anomaly(where, strf("a Reply of revision %u", f.rev));
			fz_target t;
			if (outcome == "reply" && !target_decode(f.ulp_pd().data(), f.ulp_pd().size(), t))
				anomaly(where, "a Reply whose private data is not the victim's");
		}
		if (valid && outcome != "reply")
			anomaly(where, "a well-formed Request got no Reply: " + outcome);
		g.handshake[what + ":" + outcome]++;
		if (r.chance(1, 2))
			xiw_raw::set_rst_on_close(fd);
		close(fd);
	}
	// Half-open flood: connections that send nothing or part of a
	// Request and stay open; a good connection must get through.
	if (opt.flood && !g.victim_gone) {
		rlimit rl{opt.flood + 256, opt.flood + 256};
		if (setrlimit(RLIMIT_NOFILE, &rl))
			std::printf("fuzz: setrlimit(%u): %s\n", opt.flood + 256, std::strerror(errno));
		std::vector<int> fds;
		unsigned failed = 0;
		const long long t0 = now_ms();
		for (unsigned i = 0; i < opt.flood; i++) {
			sockaddr_in sa{};
			xiw_raw::ipv4_addr(opt.addr.c_str(), opt.port, sa);
			const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (fd < 0) {
				failed++;
				continue;
			}
			if (connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) && errno != EINPROGRESS) {
				close(fd);
				failed++;
				continue;
			}
			fds.push_back(fd);
			// Every fourth, once connected, a piece of a Request.
			if (i % 4 == 3) {
				pollfd p{fd, POLLOUT, 0};
				if (poll(&p, 1, 100) == 1) {
					bool v;
					std::string w;
					const bytes req = handshake_request(r, v, w);
					const std::size_t part = r.below(std::min<std::size_t>(req.size(), 30));
					if (part && send(fd, req.data(), part, MSG_NOSIGNAL) < 0)
						failed++;
				}
			}
		}
		std::printf("fuzz: flood: %zu half-open connections (%u failed) in %.1f s\n", fds.size(),
			    failed, (now_ms() - t0) / 1000.0);
		std::fflush(stdout);
		// The good connection, while they are open (xiw drops them
		// after its MPA timeout; retry until then).
		bool served = false;
		std::string why;
		for (int attempt = 0; attempt < 6 && !served; attempt++) {
			conn_cfg c;
			c.rev = 2;
			sign_hello(c.hello, 0xfffffff1u);
			session s;
			s.where = "flood: good connection";
			if (!s.open(c, why)) {
				std::printf("fuzz: flood: good connection, attempt %d: %s\n", attempt + 1, why.c_str());
				continue;
			}
			rng r2(7);
			generator gen(r2, s);
			gen.good_exchange();
			served = s.wait_outq(5000) && !s.dead;
			s.close_fin();
			s.finish();
		}
		if (!served)
			anomaly("flood", "no good connection served during the half-open flood: " + why);
		else
			std::printf("fuzz: flood: a good connection was served\n");
		for (int fd : fds) {
			xiw_raw::set_rst_on_close(fd);
			close(fd);
		}
	}
	return end_run(start, opt.quit);
}

} // namespace

namespace {

// ===========================================================================
// Hostile MPA responder (the victim's client mode connects to it)

// The Reply to REQ: correct, or mutated (WHAT says how; GOOD if correct).
// FATAL: a Reply no initiator may go on from (RFC 5044 §7.1, RFC 6581).
bytes hostile_reply(rng &r, const xiw_raw::mpa_frame &req, const fz_hello &hello, bool &good,
		    std::string &what, bool &p2p, u8 &rtr_op, bool &markers_rx, bool &fatal)
{
	fatal = false;
	u8 flags = 0;
	if (req.flags & XIW_MPA_FLAG_C || r.chance(1, 4))
		flags |= XIW_MPA_FLAG_C;
	markers_rx = r.chance(1, 5);
	if (markers_rx)
		flags |= XIW_MPA_FLAG_M;
	if (req.flags & XIW_MPA_FLAG_EXT && !r.chance(1, 8))
		flags |= XIW_MPA_FLAG_EXT | XIW_MPA_FLAG_EXT_ACK;
	u8 rev = req.rev;
	bytes pd;
	p2p = false;
	rtr_op = 0xff;
	if (req.has_v2()) {
		flags |= XIW_MPA_FLAG_ENHANCED;
		const xiw_mpa_v2_ird_ord w = req.v2();
		u16 irdf = 0, ordf = 0;
		if (xiw_mpa_v2_ird_flags(&w) & XIW_MPA_V2_IRD_P2P) {
			p2p = true;
			irdf = XIW_MPA_V2_IRD_P2P;
			const u16 offer = xiw_mpa_v2_ord_flags(&w);
			if (offer & XIW_MPA_V2_ORD_RTR_READ && r.chance(1, 2)) {
				ordf = XIW_MPA_V2_ORD_RTR_READ;
				rtr_op = XIW_OP_READ_REQ;
			} else if (offer & XIW_MPA_V2_ORD_RTR_WRITE) {
				ordf = XIW_MPA_V2_ORD_RTR_WRITE;
				rtr_op = XIW_OP_WRITE;
			} else if (xiw_mpa_v2_ird_flags(&w) & XIW_MPA_V2_IRD_RTR_SEND) {
				irdf |= XIW_MPA_V2_IRD_RTR_SEND;
				rtr_op = XIW_OP_SEND;
			} else {
				ordf = XIW_MPA_V2_ORD_RTR_READ;
				rtr_op = XIW_OP_READ_REQ;
			}
		}
		pd = xiw_raw::mpa_v2_word(irdf, static_cast<u16>(r.range(1, 8)), ordf,
					  std::min<u16>(xiw_mpa_v2_ird(&w), static_cast<u16>(r.range(1, 8))));
	}
	const bytes hb = xiw_raw::bytes_of(hello);
	pd.insert(pd.end(), hb.begin(), hb.end());
	char key[XIW_MPA_KEY_LEN];
	std::memcpy(key, XIW_MPA_KEY_REP, sizeof(key));
	int pd_field = -1;
	good = true;
	what = "good";
	if (r.chance(2, 5)) {
		good = false;
		switch (r.below(12)) {
		case 0:
			key[r.below(16)] ^= static_cast<char>(1 + r.below(255));
			what = "key";
			fatal = true;
			break;
		case 1:
			flags |= XIW_MPA_FLAG_R;
			what = "reject";
			fatal = true;
			break;
		case 2:
			rev = static_cast<u8>(r.pick({0u, 3u, 255u, rev == 2 ? 1u : 2u}));
			what = "rev";
			fatal = rev != 1 && rev != 2;
			break;
		case 3:
			pd_field = static_cast<int>(r.range(513, 0xffff));
			what = "pd_len_big";
			fatal = true;
			break;
		case 4:
			pd.resize(r.below(4));
			what = "pd_short";
			break;
		case 5:
			flags = static_cast<u8>(r.below(256));
			what = "flags";
			break;
		case 6:
			if (pd.size() >= 4) {
				pd[0] = static_cast<u8>(r.below(256));
				pd[2] = static_cast<u8>(r.below(256));
			}
			what = "ird_ord";
			break;
		case 7:
			flags &= static_cast<u8>(~XIW_MPA_FLAG_ENHANCED);
			what = "no_enhanced";
			break;
		case 8:
			pd.resize(pd.size() + r.range(1, 300));
			what = "pd_long";
			break;
		case 9:
			std::memcpy(key, XIW_MPA_KEY_REQ, sizeof(key));
			what = "request_key";
			fatal = true;
			break;
		case 10:
			flags &= static_cast<u8>(~XIW_MPA_FLAG_C);
			what = "no_crc";
			good = !(req.flags & XIW_MPA_FLAG_C);
			break;
		default:
			what = "truncated";
			fatal = true;
			break;
		}
	}
	bytes out = xiw_raw::mpa_encode(key, flags, rev, pd, pd_field);
	if (what == "truncated")
		out.resize(r.below(out.size()));
	return out;
}

int run_respond()
{
	const long long start = now_ms();
	std::string why;
	const int lfd = xiw_raw::tcp_listen(opt.addr.c_str(), opt.port, 16, why);
	if (lfd < 0) {
		std::printf("fuzz: respond: %s\n", why.c_str());
		return 2;
	}
	std::printf("fuzz: respond: listening on %s:%u, seed %" PRIu64 "\n", opt.addr.c_str(), opt.port,
		    opt.seed);
	std::fflush(stdout);
	const u64 n = opt.cases ? opt.cases : 100;
	for (u64 k = 0; k < n && budget_left(start); k++) {
		pollfd p{lfd, POLLIN, 0};
		if (poll(&p, 1, 30000) != 1) {
			std::printf("fuzz: respond: no connection from the victim for 30 s\n");
			g.victim_gone = true;
			break;
		}
		const int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		xiw_raw::set_nodelay(fd);
		rng r(opt.seed ^ (k * 0x9e3779b97f4a7c15ull) ^ 0x52455350ull);
		const std::string where = strf("respond seed %" PRIu64 " case %" PRIu64, opt.seed, k);
		progress(where);
		g.cases++;
		session s;
		s.where = where;
		s.fd = fd;
		// xiw's Request.
		xiw_raw::mpa_frame_reader mr;
		bytes buf;
		std::size_t used = 0;
		if (xiw_raw::recv_mpa_frame(fd, mr, buf, used, 10000) <= 0) {
			g.handshake["no_request"]++;
			continue;
		}
		const xiw_raw::mpa_frame &req = mr.frame();
		if (!req.key_is(XIW_MPA_KEY_REQ) || (req.rev != 1 && req.rev != 2) || (req.flags & XIW_MPA_FLAG_R))
			anomaly(where, strf("xiw sent a malformed MPA Request (rev %u flags 0x%02x)", req.rev,
					    req.flags));
		if (!target_decode(req.ulp_pd().data(), req.ulp_pd().size(), s.t)) {
			anomaly(where, "the Request's private data is not the victim's");
			continue;
		}
		s.rc.t = &s.t;
		conn_cfg c;
		fz_hello &h = c.hello;
		sign_hello(h, static_cast<u32>(k), opt.seed);
		h.n_recv = s.t.n_recv;
		random_actions(r, h);
		bool good, p2p, mrx, fatal;
		u8 rtr_op;
		std::string what;
		const bytes rep = hostile_reply(r, req, h, good, what, p2p, rtr_op, mrx, fatal);
		bool sent_ok = send(fd, rep.data(), rep.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(rep.size());
		if (!good || !sent_ok) {
			// What xiw makes of it: after a Reply it must refuse, nothing
			// (one it may take goes on unchecked: we close).
			const long long u2 = now_ms() + 2000;
			std::string outcome = "silence";
			const std::size_t had = buf.size();
			while (now_ms() < u2) {
				const long got = xiw_raw::recv_some(fd, buf, 100);
				if (got == 0 || got == -1) {
					outcome = got ? "reset" : "closed";
					break;
				}
			}
			// After a Reply it must refuse, xiw sends nothing more.
			if (fatal && sent_ok && buf.size() > had)
				anomaly(where, strf("xiw sent %zu octets after a %s MPA Reply",
						    buf.size() - had, what.c_str()));
			g.handshake["reply_" + what + ":" + outcome]++;
			if (r.chance(1, 2))
				xiw_raw::set_rst_on_close(fd);
			close(fd);
			s.fd = -1;
			continue;
		}
		g.handshake["reply_good"]++;
		g.conns++;
		c.markers = mrx;
		c.crc = true;
		c.ext = (req.flags & XIW_MPA_FLAG_EXT) && (rep[16] & XIW_MPA_FLAG_EXT_ACK);
		s.cfg = c;
		s.ext = c.ext;
		s.crc_on = (req.flags & XIW_MPA_FLAG_C) || (rep[16] & XIW_MPA_FLAG_C);
		s.tx = xiw_raw::mpa_stream{static_cast<bool>(req.flags & XIW_MPA_FLAG_M), s.crc_on, 0};
		s.rd.reset(xiw_raw::mpa_stream{mrx, s.crc_on, 0});
		if (buf.size() > used)
			s.rd.feed(buf.data() + used, buf.size() - used);
		s.xiw_ird = req.has_v2() ? std::max<u16>(1, [&] { auto w = req.v2(); return xiw_mpa_v2_ird(&w); }()) : 4;
		s.xiw_ird = std::min<u16>(s.xiw_ird, s.t.ird ? s.t.ird : 1);
		s.expect_rtr = p2p ? rtr_op : 0xff;
		s.init_model();
		generator gen(r, s);
		s.pump(50);
		const unsigned steps = static_cast<unsigned>(r.range(1, 40));
		const int mut_at = r.chance(3, 4) ? static_cast<int>(r.below(steps)) : -1;
		for (unsigned i = 0; i < steps && !s.dead && budget_left(start); i++) {
			const bool mut = static_cast<int>(i) == mut_at;
			if (!s.inq.empty() && r.chance(4, 5))
				gen.respond(mut);
			else if (mut)
				gen.mutated_step();
			else {
				if (s.outq.size() >= s.xiw_ird)
					s.wait_outq(500);
				plan pl;
				gen.valid_plan(pl);
				gen.execute(pl, false);
			}
			s.pump(s.clean ? 5 : 15);
		}
		while (!s.dead && !s.inq.empty())
			gen.respond(false), s.pump(5);
		if (!s.dead)
			s.wait_outq(2000);
		if (!s.dead)
			s.hang_up(r.chance(1, 2));
		s.finish();
	}
	close(lfd);
	return end_run(start, false);
}

// ===========================================================================
// Self-check (no device): framing both ways, the seed format

int fail_selfcheck(const std::string &m)
{
	std::printf("fuzz selfcheck: FAIL: %s\n", m.c_str());
	return 1;
}

int run_selfcheck()
{
	rng r(42);
	// Framing: every ULPDU length up to 1200 and some big ones, markers
	// and CRC on and off, fed to the reader in random pieces.
	for (int markers = 0; markers < 2; markers++)
		for (int crc = 0; crc < 2; crc++) {
			xiw_raw::mpa_stream tx{markers != 0, crc != 0, 0};
			xiw_raw::fpdu_reader rd(tx);
			bytes stream;
			std::vector<bytes> segs;
			for (unsigned n = 0; n < 1300; n++) {
				const unsigned len = n < 1200 ? n : static_cast<unsigned>(r.range(1200, 65535));
				bytes s(XIW_MPA_HDR_LEN + len);
				xiw_raw::put_be16(s.data(), static_cast<u16>(len));
				rand_fill(n, s.data() + 2, len);
				const bytes f = xiw_raw::frame_fpdu(tx, s);
				stream.insert(stream.end(), f.begin(), f.end());
				segs.push_back(s);
			}
			std::vector<bytes> back;
			std::string why;
			bool broken = false;
			for (std::size_t at = 0; at < stream.size() && !broken;) {
				const std::size_t k = std::min<std::size_t>(stream.size() - at, r.range(1, 3000));
				rd.feed(stream.data() + at, k);
				at += k;
				broken = !rd.take_all([&back](const bytes &seg) { back.push_back(seg); }, why);
			}
			// What came back before anything went wrong.
			const std::size_t same = static_cast<std::size_t>(
				std::mismatch(back.begin(), back.end(), segs.begin(), segs.end()).first - back.begin());
			if (same < back.size())
				return fail_selfcheck(strf("FPDU %zu does not round-trip (markers %d crc %d)", same, markers, crc));
			if (broken)
				return fail_selfcheck("reading back: " + why);
			if (back.size() != segs.size() || rd.stream().pos != tx.pos)
				return fail_selfcheck("not every FPDU came back");
			// A bad CRC and a bad marker are seen as such.
			if (crc || markers) {
				xiw_raw::mpa_stream t2{markers != 0, crc != 0, 0};
				xiw_raw::fpdu_reader r2(t2);
				frame_spec f = spec_from_template(find_template("send"));
				f.pk = PK_SEND;
				f.plen = 700;
				const bytes seg = build_segment(f, resolve_ctx{});
				xiw_raw::frame_opts o;
				if (crc)
					o.crc = xiw_raw::frame_opts::crc_bad;
				else
					o.marker_ptr_xor = 4;
				const bytes fr = xiw_raw::frame_fpdu(t2, seg, o);
				r2.feed(fr.data(), fr.size());
				if (r2.take_all([](const bytes &) {}, why))
					return fail_selfcheck("a bad CRC/marker went unnoticed");
			}
		}
	// The hand-worked marker layout of wire_inject's good_stream: an FPDU
	// at P=0 has its leading marker (FPDUPTR 0) and one at 512 pointing 508
	// back to its ULPDU_Length at 4.
	{
		xiw_raw::mpa_stream tx{true, true, 0};
		bytes s(XIW_MPA_HDR_LEN + XIW_DDP_TAGGED_HLEN + 984);
		xiw_raw::put_be16(s.data(), static_cast<u16>(s.size() - 2));
		const bytes f = xiw_raw::frame_fpdu(tx, s);
		if (f.size() != 1012 || get_be16(&f[2]) != 0 || get_be16(&f[514]) != 508)
			return fail_selfcheck(strf("marker layout: %zu octets, FPDUPTRs %u %u", f.size(),
						   get_be16(&f[2]), get_be16(&f[514])));
	}
	// Generated cases: their text form builds the same octets.
	fz_target t{};
	t.magic = target_magic;
	t.n_regions = R_COUNT;
	for (unsigned k = 0; k < R_COUNT; k++)
		t.regions[k] = fz_region{0x100u * (k + 1) + 0x37, static_cast<u8>(k), 0xff, 0,
					 0x10000000ull * (k + 1) + 36, 8192};
	unsigned frames = 0;
	for (u64 c = 0; c < 300; c++) {
		rng rc(c);
		session s;
		s.dry = true;
		s.t = t;
		s.rc.t = &s.t;
		s.rc.req_id = 0x1234;
		s.ext = true;
		s.xiw_ird = 4;
		s.cfg = random_cfg(rc);
		s.tx = xiw_raw::mpa_stream{rc.chance(1, 2), true, 0};
		s.init_model();
		generator gen(rc, s);
		for (int i = 0; i < 30; i++) {
			if (rc.chance(1, 10))
				gen.sweep_frame(static_cast<unsigned>(rc.below(4)), static_cast<unsigned>(rc.below(32)),
						rc.chance(1, 4));
			else if (rc.chance(1, 3))
				gen.mutated_step();
			else {
				plan p;
				gen.valid_plan(p);
				gen.execute(p, false);
			}
			s.dead = false;
			s.outq.clear();
		}
		fz_case fc;
		fc.name = "selfcheck";
		fc.cfg = s.cfg;
		fc.acts = s.log;
		const std::string text = case_text(fc);
		fz_case back;
		std::string why;
		if (!parse_case(text, back, why))
			return fail_selfcheck("generated case does not parse: " + why + "\n" + text);
		fz_case again;
		if (!parse_case(case_text(back), again, why) || case_text(again) != case_text(back) ||
		    again.acts.size() != fc.acts.size())
			return fail_selfcheck("generated case does not print back the same:\n" + text +
					      "\n---\n" + case_text(back));
		std::size_t fi = 0;
		for (std::size_t i = 0; i < fc.acts.size(); i++) {
			if (fc.acts[i].k != action::FRAME)
				continue;
			const bytes a = build_segment(fc.acts[i].f, s.rc);
			const bytes b = build_segment(back.acts[i].f, s.rc);
			if (a != b)
				return fail_selfcheck("frame " + std::to_string(fi) + " builds differently from its text: " +
						      action_text(fc.acts[i]));
			fi++;
			frames++;
		}
	}
	// The seed corpus parses and prints back to what parses the same.
	unsigned seeds = 0;
	for (const auto &[name, text] : load_corpus()) {
		fz_case fc, again;
		std::string why;
		if (!parse_case(text, fc, why))
			return fail_selfcheck("seed " + name + ": " + why);
		if (!parse_case(case_text(fc), again, why) || case_text(again) != case_text(fc))
			return fail_selfcheck("seed " + name + " does not round-trip");
		seeds++;
	}
	std::printf("fuzz selfcheck: framing round-trips, %u generated frames round-trip through "
		    "text, %u seed files parse: ok\n",
		    frames, seeds);
	return 0;
}

void usage()
{
	std::fprintf(stderr,
		     "usage: xiw_fuzz wire|handshake|respond --addr A --port P [--seed N] [--cases M]\n"
		     "                [--case K] [--frames N] [--seconds S] [--corpus PATH]...\n"
		     "                [--skip NAME,...] [--only-corpus] [--set-params] [--dump-dir DIR]\n"
		     "                [--progress FILE] [--kmsg] [--flood N] [--quit] [--no-sweep]\n"
		     "                [--sweep-case N] [-v]\n"
		     "       xiw_fuzz selfcheck [--corpus PATH]...\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	opt.mode = argv[1];
	for (int i = 2; i < argc; i++) {
		const std::string a = argv[i];
		auto val = [&]() -> std::string {
			if (i + 1 >= argc)
				usage();
			return argv[++i];
		};
		auto num = [&]() -> u64 {
			u64 v;
			const std::string s = val();
			if (!parse_num(s, v))
				usage();
			return v;
		};
		if (a == "--addr")
			opt.addr = val();
		else if (a == "--port")
			opt.port = static_cast<u16>(num());
		else if (a == "--seed") {
			opt.seed = num();
			opt.seed_given = true;
		} else if (a == "--cases")
			opt.cases = num();
		else if (a == "--case")
			opt.only_case = num();
		else if (a == "--frames")
			opt.frames = num();
		else if (a == "--seconds")
			opt.seconds = static_cast<double>(num());
		else if (a == "--corpus")
			opt.corpus.push_back(val());
		else if (a == "--skip") {
			for (const std::string &x : split_list(val()))
				if (!x.empty())
					opt.skip.insert(x);
		} else if (a == "--only-corpus")
			opt.only_corpus = true;
		else if (a == "--set-params")
			opt.set_params = true;
		else if (a == "--params-dir")
			opt.params_dir = val();
		else if (a == "--dump-dir")
			opt.dump_dir = val();
		else if (a == "--progress")
			opt.progress = val();
		else if (a == "--kmsg")
			opt.kmsg = true;
		else if (a == "--flood")
			opt.flood = static_cast<unsigned>(num());
		else if (a == "--quit")
			opt.quit = true;
		else if (a == "--no-sweep")
			opt.sweep = false;
		else if (a == "--sweep-case")
			opt.sweep_case = num();
		else if (a == "-v")
			opt.verbose = true;
		else
			usage();
	}
	setvbuf(stdout, nullptr, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (opt.mode == "selfcheck")
		return run_selfcheck();
	if (!opt.seed_given) {
		u64 s = 0;
		const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || read(fd, &s, sizeof(s)) != sizeof(s))
			s = static_cast<u64>(now_ms()) * 2654435761u ^ static_cast<u64>(getpid());
		if (fd >= 0)
			close(fd);
		opt.seed = s % 1000000000000ull;
	}
	std::printf("fuzz: seed %" PRIu64 " (replay: --seed %" PRIu64 ")\n", opt.seed, opt.seed);
	if (!opt.progress.empty())
		g_progress_fd = open(opt.progress.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (opt.kmsg)
		g_kmsg_fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	if (!opt.dump_dir.empty())
		mkdir(opt.dump_dir.c_str(), 0755);
	if (!opt.port && opt.mode != "selfcheck")
		usage();
	if (opt.mode == "wire")
		return run_wire();
	if (opt.mode == "handshake")
		return run_handshake();
	if (opt.mode == "respond")
		return run_respond();
	usage();
}
