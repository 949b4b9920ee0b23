// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// A raw iWARP peer's building blocks over a plain TCP socket, on top of
// <xiw/wire.h> and <xiw/crc32c.h> only: MPA Request/Reply frames (RFC 5044
// §7.1, RFC 6581 §5), FPDU framing with CRC and markers (RFC 5044 §4,
// §4.3) in both directions, DDP segment builders (RFC 5041 §4) and socket
// helpers.  No policy: what to send and what to make of the answers is the
// user's (tests/fuzz/fuzzer.cpp; tests/guest/wire_inject.cpp frames with it).
//
// Stream positions: one mpa_stream per direction counts the octets of Full
// Operation Phase from its first octet (the one after the MPA frame that
// opened that direction), markers included.  A direction carries markers
// iff its receiver set M in its own Request or Reply.
#ifndef XIW_TESTS_FUZZ_RAW_PEER_H
#define XIW_TESTS_FUZZ_RAW_PEER_H

#include <xiw/crc32c.h>
#include <xiw/wire.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../fixed_width.h"

namespace xiw_raw {

using bytes = std::vector<u8>;

// ---------------------------------------------------------------------------
// Big-endian fields in a byte vector
inline void put_be16(u8 *p, u16 v)
{
	p[0] = static_cast<u8>(v >> 8);
	p[1] = static_cast<u8>(v);
}
inline void put_be32(u8 *p, u32 v)
{
	put_be16(p, static_cast<u16>(v >> 16));
	put_be16(p + 2, static_cast<u16>(v));
}
inline void put_be64(u8 *p, u64 v)
{
	put_be32(p, static_cast<u32>(v >> 32));
	put_be32(p + 4, static_cast<u32>(v));
}
inline u16 get_be16(const u8 *p) { return static_cast<u16>(p[0] << 8 | p[1]); }
inline u32 get_be32(const u8 *p) { return static_cast<u32>(get_be16(p)) << 16 | get_be16(p + 2); }
inline u64 get_be64(const u8 *p) { return static_cast<u64>(get_be32(p)) << 32 | get_be32(p + 4); }

template <class T> bytes bytes_of(const T &v)
{
	const auto *b = reinterpret_cast<const u8 *>(&v);
	return {b, b + sizeof(v)};
}

// ---------------------------------------------------------------------------
// MPA Request / Reply (RFC 5044 §7.1; RFC 6581 §5 IRD/ORD word)

// KEY (16 octets, not NUL-terminated), FLAGS, REV, then PD as private data.
// PD_Length is PD's size unless PD_LEN_FIELD is given (>= 0).
inline bytes mpa_encode(const char *key, u8 flags, u8 rev, const bytes &pd, int pd_len_field = -1)
{
	bytes out(sizeof(xiw_mpa_rr));
	std::memcpy(out.data(), key, XIW_MPA_KEY_LEN);
	out[16] = flags;
	out[17] = rev;
	put_be16(out.data() + 18,
		 static_cast<u16>(pd_len_field >= 0 ? pd_len_field : static_cast<int>(pd.size())));
	out.insert(out.end(), pd.begin(), pd.end());
	return out;
}

// An RFC 6581 IRD/ORD word as the first 4 octets of a private data.
inline bytes mpa_v2_word(u16 ird_flags, u16 ird, u16 ord_flags, u16 ord)
{
	xiw_mpa_v2_ird_ord w{};
	xiw_mpa_v2_set(&w, ird_flags, ird, ord_flags, ord);
	return bytes_of(w);
}

struct mpa_frame {
	u8 key[XIW_MPA_KEY_LEN]{};
	u8 flags = 0;
	u8 rev = 0;
	u16 pd_len = 0;
	bytes pd; // all of it, the IRD/ORD word included

	bool key_is(const char *k) const { return std::memcmp(key, k, XIW_MPA_KEY_LEN) == 0; }
	// RFC 6581 §5 word present (xiw_mpa_rx_has_v2w's rule: Rev 2 and the
	// enhanced flag; wire.h, XIW_MPA_FLAG_ENHANCED).
	bool has_v2() const
	{
		return rev == XIW_MPA_REV_V2 && (flags & XIW_MPA_FLAG_ENHANCED) &&
		       pd.size() >= sizeof(xiw_mpa_v2_ird_ord);
	}
	xiw_mpa_v2_ird_ord v2() const
	{
		xiw_mpa_v2_ird_ord w{};
		if (has_v2())
			std::memcpy(&w, pd.data(), sizeof(w));
		return w;
	}
	// The ULP's private data (after the word, if any).
	bytes ulp_pd() const
	{
		return has_v2() ? bytes(pd.begin() + sizeof(xiw_mpa_v2_ird_ord), pd.end()) : pd;
	}
};

// Takes a Request or Reply octet by octet, stopping right after its
// private data: the octets behind it belong to Full Operation Phase.
class mpa_frame_reader {
public:
	// Consumes octets of P[0, N) up to the end of the frame; returns how
	// many it took.
	std::size_t feed(const u8 *p, std::size_t n)
	{
		std::size_t used = 0;
		while (used < n && !done_) {
			if (hdr_.size() < sizeof(xiw_mpa_rr)) {
				const std::size_t k = std::min(n - used, sizeof(xiw_mpa_rr) - hdr_.size());
				hdr_.insert(hdr_.end(), p + used, p + used + k);
				used += k;
				if (hdr_.size() == sizeof(xiw_mpa_rr)) {
					std::memcpy(f_.key, hdr_.data(), XIW_MPA_KEY_LEN);
					f_.flags = hdr_[16];
					f_.rev = hdr_[17];
					f_.pd_len = get_be16(hdr_.data() + 18);
					done_ = f_.pd_len == 0;
				}
				continue;
			}
			const std::size_t k = std::min<std::size_t>(n - used, f_.pd_len - f_.pd.size());
			f_.pd.insert(f_.pd.end(), p + used, p + used + k);
			used += k;
			done_ = f_.pd.size() == f_.pd_len;
		}
		return used;
	}
	bool header_done() const { return hdr_.size() == sizeof(xiw_mpa_rr); }
	bool done() const { return done_; }
	const mpa_frame &frame() const { return f_; }

private:
	bytes hdr_;
	mpa_frame f_;
	bool done_ = false;
};

// ---------------------------------------------------------------------------
// FPDU framing

struct mpa_stream {
	bool markers = false;
	bool crc = true;
	u32 pos = 0;
};

struct frame_opts {
	enum crc_kind { crc_good, crc_bad, crc_zero, crc_random };
	crc_kind crc = crc_good;
	u32 crc_random_value = 0;
	// FPDUPTR of a marker at the FPDU's first octet (normally 0), if >= 0.
	int lead_marker_ptr = -1;
	// XORed into the FPDUPTR of the markers inside the FPDU.
	u16 marker_ptr_xor = 0;
	// XORed into RESERVED of every marker (ignored on receive but CRC'd).
	u16 marker_rsvd = 0;
	u8 pad_fill = 0;
};

// The stream octets of one FPDU starting at S.pos: SEG is ULPDU_Length +
// ULPDU as they should be read (its length field need not match its size:
// the framing follows SEG's size), then pad (to a multiple of 4 counted
// from ULPDU_Length, markers ignored), the markers due among them and the
// CRC over all of these (RFC 5044 §4, §4.3).  A marker at the FPDU's first
// octet belongs to it and precedes ULPDU_Length with FPDUPTR 0; the later
// ones point back to ULPDU_Length.  When the stream has no CRC the field
// is sent as zero (or what O says).  Advances S.pos.
inline bytes frame_fpdu(mpa_stream &s, const u8 *seg, std::size_t len, const frame_opts &o = {})
{
	const u32 start = s.pos;
	const bool lead = s.markers && xiw_mpa_marker_gap(start) == 0;
	const u32 len_pos = start + (lead ? XIW_MPA_MARKER_LEN : 0);
	const std::size_t pad = (XIW_MPA_ALIGN - (len & (XIW_MPA_ALIGN - 1))) & (XIW_MPA_ALIGN - 1);
	bytes out;
	out.reserve(len + pad + 8 + XIW_MPA_MARKER_LEN * (2 + len / 508));
	auto marker_if_due = [&] {
		const u32 p = start + static_cast<u32>(out.size());
		if (!s.markers || xiw_mpa_marker_gap(p))
			return;
		xiw_mpa_marker m{};
		xiw_mpa_marker_set(&m, p, p == start ? p : len_pos);
		if (p == start && o.lead_marker_ptr >= 0)
			m.fpdu_ptr = xiw_cpu_to_be16(static_cast<u16>(o.lead_marker_ptr));
		else if (p != start && o.marker_ptr_xor)
			m.fpdu_ptr = xiw_cpu_to_be16(
				static_cast<u16>(xiw_be16_to_cpu(m.fpdu_ptr) ^ o.marker_ptr_xor));
		m.rsvd = xiw_cpu_to_be16(o.marker_rsvd);
		const bytes mb = bytes_of(m);
		out.insert(out.end(), mb.begin(), mb.end());
	};
	for (std::size_t i = 0; i < len + pad; i++) {
		marker_if_due();
		out.push_back(i < len ? seg[i] : o.pad_fill);
	}
	marker_if_due(); // between pad and CRC: counted into the CRC
	u32 crc = 0;
	switch (o.crc) {
	case frame_opts::crc_good:
		crc = s.crc ? xiw_crc32c(out.data(), out.size()) : 0;
		break;
	case frame_opts::crc_bad:
		crc = xiw_crc32c(out.data(), out.size()) ^ 0x00800000u;
		break;
	case frame_opts::crc_zero:
		crc = 0;
		break;
	case frame_opts::crc_random:
		crc = o.crc_random_value;
		break;
	}
	xiw_mpa_trailer t{};
	xiw_mpa_put_crc(&t, crc);
	const bytes tb = bytes_of(t);
	out.insert(out.end(), tb.begin(), tb.end());
	s.pos += static_cast<u32>(out.size());
	return out;
}

inline bytes frame_fpdu(mpa_stream &s, const bytes &seg, const frame_opts &o = {})
{
	return frame_fpdu(s, seg.data(), seg.size(), o);
}

// Reads FPDUs out of one direction's stream, fed in pieces of any size:
// markers are checked (FPDUPTR) and stripped, the CRC checked (when the
// stream has one) and dropped with the pad.
class fpdu_reader {
public:
	explicit fpdu_reader(mpa_stream s = {}) : s_(s) {}
	void reset(mpa_stream s)
	{
		s_ = s;
		buf_.clear();
		off_ = 0;
	}
	void feed(const u8 *p, std::size_t n) { buf_.insert(buf_.end(), p, p + n); }
	std::size_t buffered() const { return buf_.size() - off_; }
	// The stream octets of the FPDU that failed its CRC check.
	bytes bad_raw;
	u32 bad_pos = 0;
	const mpa_stream &stream() const { return s_; }

	enum status { more, ok, error };
	// The next FPDU (ULPDU_Length + ULPDU, without pad, CRC or markers)
	// into SEG and its first octet's stream position into POS; on error
	// WHY says what is wrong with the stream (which then cannot go on).
	status next(bytes &seg, u32 &pos, std::string &why)
	{
		const u32 start = s_.pos;
		std::size_t i = off_; // walks buf_
		u32 len_pos = start;
		bytes f;
		std::size_t need = XIW_MPA_HDR_LEN;
		bool have_len = false;
		while (f.size() < need) {
			const u32 p = start + static_cast<u32>(i - off_);
			if (s_.markers && xiw_mpa_marker_gap(p) == 0) {
				if (buf_.size() - i < XIW_MPA_MARKER_LEN)
					return more;
				const u16 ptr = get_be16(&buf_[i + 2]);
				if (p == start)
					len_pos = start + XIW_MPA_MARKER_LEN;
				// 16 bits: an FPDU of nearly 64 KiB wraps it.
				const u16 want = static_cast<u16>(p == start ? 0 : p - len_pos);
				if (ptr != want) {
					why = "marker at P=" + std::to_string(p) + " (FPDU at P=" +
					      std::to_string(start) + ") has FPDUPTR " +
					      std::to_string(ptr) + ", expected " + std::to_string(want);
					return error;
				}
				i += XIW_MPA_MARKER_LEN;
				continue;
			}
			if (i >= buf_.size())
				return more;
			f.push_back(buf_[i++]);
			if (!have_len && f.size() == XIW_MPA_HDR_LEN) {
				have_len = true;
				const unsigned ulpdu = get_be16(f.data());
				need = XIW_MPA_HDR_LEN + ulpdu + xiw_mpa_pad_len(ulpdu) + XIW_MPA_CRC_LEN;
			}
		}
		// The CRC is the last 4 octets and never split by a marker.
		const std::size_t raw_len = i - off_;
		if (s_.crc) {
			const u32 want = xiw_crc32c(&buf_[off_], raw_len - XIW_MPA_CRC_LEN);
			xiw_mpa_trailer t{};
			std::memcpy(&t, &buf_[i - XIW_MPA_CRC_LEN], sizeof(t));
			if (xiw_mpa_get_crc(&t) != want) {
				char b[160];
				std::snprintf(b, sizeof(b),
					      "FPDU at P=%u (ULPDU_Length %u, %zu octets with markers, "
					      "DDP/RDMAP control %02x %02x) with CRC 0x%08x, computed 0x%08x",
					      start, get_be16(f.data()), raw_len, f.size() > 2 ? f[2] : 0,
					      f.size() > 3 ? f[3] : 0, xiw_mpa_get_crc(&t), want);
				why = b;
				bad_raw.assign(buf_.begin() + static_cast<std::ptrdiff_t>(off_),
					       buf_.begin() + static_cast<std::ptrdiff_t>(i));
				bad_pos = start;
				return error;
			}
		}
		const unsigned ulpdu = get_be16(f.data());
		f.resize(XIW_MPA_HDR_LEN + ulpdu);
		seg = std::move(f);
		pos = start;
		s_.pos += static_cast<u32>(raw_len);
		off_ = i;
		if (off_ > 65536) {
			buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(off_));
			off_ = 0;
		}
		return ok;
	}

	// Hands each complete FPDU buffered to TAKE(seg), in order; false
	// (WHY) at one that breaks the stream.
	template <class Take> bool take_all(Take take, std::string &why)
	{
		bytes seg;
		u32 pos;
		for (;;) {
			switch (next(seg, pos, why)) {
			case more:
				return true;
			case error:
				return false;
			case ok:
				take(seg);
				break;
			}
		}
	}

private:
	mpa_stream s_;
	bytes buf_;
	std::size_t off_ = 0;
};

// ---------------------------------------------------------------------------
// DDP segments (ULPDU_Length included), RFC 5041 §4.3/§4.4

// Tagged: DDP control, RDMAP control, STag, TO, then PAYLOAD.
inline bytes seg_tagged(u8 ddp_ctrl, u8 rdmap_ctrl, u32 stag, u64 to, const u8 *payload,
			std::size_t n)
{
	bytes s(sizeof(xiw_ddp_tagged_hdr));
	put_be16(s.data(), static_cast<u16>(XIW_DDP_TAGGED_HLEN + n));
	s[2] = ddp_ctrl;
	s[3] = rdmap_ctrl;
	put_be32(s.data() + 4, stag);
	put_be64(s.data() + 8, to);
	s.insert(s.end(), payload, payload + n);
	return s;
}

// Untagged: DDP control, RDMAP control, Invalidate STag, QN, MSN, MO,
// then REST (RDMAP header and payload).
inline bytes seg_untagged(u8 ddp_ctrl, u8 rdmap_ctrl, u32 inval, u32 qn, u32 msn, u32 mo,
			  const u8 *rest, std::size_t n)
{
	bytes s(sizeof(xiw_ddp_untagged_hdr));
	put_be16(s.data(), static_cast<u16>(XIW_DDP_UNTAGGED_HLEN + n));
	s[2] = ddp_ctrl;
	s[3] = rdmap_ctrl;
	put_be32(s.data() + 4, inval);
	put_be32(s.data() + 8, qn);
	put_be32(s.data() + 12, msn);
	put_be32(s.data() + 16, mo);
	s.insert(s.end(), rest, rest + n);
	return s;
}

// Sets ULPDU_Length of SEG to its size (after edits).
inline void seg_fix_len(bytes &s)
{
	put_be16(s.data(), static_cast<u16>(s.size() - XIW_MPA_HDR_LEN));
}

// A segment as read: the fields of its DDP header.
struct seg_view {
	bool valid = false; // at least the DDP header of its kind
	u16 ulpdu = 0;
	u8 ddp_ctrl = 0, rdmap_ctrl = 0;
	bool tagged = false, last = false;
	unsigned rv = 0, opcode = 0;
	u32 stag = 0;
	u64 to = 0;
	u32 inval = 0, qn = 0, msn = 0, mo = 0;
	std::size_t hdr_len = 0; // ULPDU_Length + DDP header

	explicit seg_view(const bytes &s)
	{
		if (s.size() < sizeof(xiw_ctrl))
			return;
		ulpdu = get_be16(s.data());
		ddp_ctrl = s[2];
		rdmap_ctrl = s[3];
		tagged = xiw_ddp_tagged(ddp_ctrl);
		last = xiw_ddp_last(ddp_ctrl);
		rv = xiw_rdmap_rv(rdmap_ctrl);
		opcode = xiw_rdmap_opcode(rdmap_ctrl);
		hdr_len = tagged ? sizeof(xiw_ddp_tagged_hdr) : sizeof(xiw_ddp_untagged_hdr);
		if (s.size() < hdr_len)
			return;
		if (tagged) {
			stag = get_be32(s.data() + 4);
			to = get_be64(s.data() + 8);
		} else {
			inval = get_be32(s.data() + 4);
			qn = get_be32(s.data() + 8);
			msn = get_be32(s.data() + 12);
			mo = get_be32(s.data() + 16);
		}
		valid = true;
	}
};

// ---------------------------------------------------------------------------
// Sockets

inline void set_nonblock(int fd, bool on)
{
	const int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

inline void set_nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// close() then sends a RST instead of a FIN.
inline void set_rst_on_close(int fd)
{
	linger l{1, 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

inline bool ipv4_addr(const char *addr, u16 port, sockaddr_in &sa)
{
	sa = sockaddr_in{};
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	return inet_pton(AF_INET, addr, &sa.sin_addr) == 1;
}

// A TCP socket for ADDR:PORT, which SA then holds; -1 with WHY on failure.
inline int tcp_socket(const char *addr, u16 port, sockaddr_in &sa, std::string &why)
{
	if (!ipv4_addr(addr, port, sa)) {
		why = std::string("bad address ") + addr;
		return -1;
	}
	const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		why = std::string("socket: ") + std::strerror(errno);
	return fd;
}

// A TCP connection to ADDR:PORT within TIMEOUT_MS, blocking, TCP_NODELAY;
// -1 with WHY on failure.
inline int tcp_connect(const char *addr, u16 port, int timeout_ms, std::string &why)
{
	sockaddr_in sa;
	const int fd = tcp_socket(addr, port, sa, why);
	if (fd < 0)
		return -1;
	set_nodelay(fd);
	set_nonblock(fd, true);
	int rc = connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa));
	if (rc && errno == EINPROGRESS) {
		pollfd p{fd, POLLOUT, 0};
		rc = poll(&p, 1, timeout_ms);
		if (rc == 0) {
			why = "connect: timed out";
			close(fd);
			return -1;
		}
		int err = 0;
		socklen_t l = sizeof(err);
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
		rc = err ? -1 : 0;
		errno = err;
	}
	if (rc) {
		why = std::string("connect: ") + std::strerror(errno);
		close(fd);
		return -1;
	}
	set_nonblock(fd, false);
	return fd;
}

inline int tcp_listen(const char *addr, u16 port, int backlog, std::string &why)
{
	sockaddr_in sa;
	const int fd = tcp_socket(addr, port, sa, why);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) || listen(fd, backlog)) {
		why = std::string("listen: ") + std::strerror(errno);
		close(fd);
		return -1;
	}
	return fd;
}

inline long long now_ms()
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

// Reads what FD has within TIMEOUT_MS (0: only what is there) into OUT;
// returns the octets read, 0 at the end of the stream, -1 on error (errno)
// and -2 if nothing came in time.
inline long recv_some(int fd, bytes &out, int timeout_ms)
{
	pollfd p{fd, POLLIN, 0};
	const int r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return -1;
	if (r == 0)
		return -2;
	u8 b[16384];
	const ssize_t k = recv(fd, b, sizeof(b), MSG_DONTWAIT);
	if (k < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -2 : -1;
	out.insert(out.end(), b, b + k);
	return k;
}

// Reads FD into BUF until MR has the MPA Request or Reply at its start,
// for at most TIMEOUT_MS.  USED counts the octets of BUF the frame took
// (those after it are Full Operation Phase).  Returns 1 once MR is done,
// else as recv_some: 0 at the end of the stream, -1 on error (errno), -2
// if the frame did not come in time.
inline long recv_mpa_frame(int fd, mpa_frame_reader &mr, bytes &buf, std::size_t &used,
			   int timeout_ms)
{
	const long long until = now_ms() + timeout_ms;
	while (!mr.done()) {
		const long long left = until - now_ms();
		if (left <= 0)
			return -2;
		const long n = recv_some(fd, buf, static_cast<int>(left));
		if (n == 0 || n == -1)
			return n;
		if (n > 0)
			used += mr.feed(buf.data() + used, buf.size() - used);
	}
	return 1;
}

} // namespace xiw_raw

#endif
