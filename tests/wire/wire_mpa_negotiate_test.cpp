// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// The MPA negotiation of mpa_negotiate.h for every combination of
// revision, flags, IRD/ORD and RTR offer: RFC 5044 §7.1 (C, M, R,
// revision), RFC 6581 §5.1 (IRD/ORD) and §5.2 (peer-to-peer mode, RTR),
// and the extensions bit pair of wire.h.
#include <vector>

#include <xiw/mpa_negotiate.h>

#include "wire_test_util.h"

namespace {

constexpr __u16 kMax = 64; // the device's IRD and ORD in these tests

std::vector<xiw_mpa_policy> all_policies()
{
	std::vector<xiw_mpa_policy> v;
	for (__u8 rev : {XIW_MPA_REV_V1, XIW_MPA_REV_V2})
		for (__u8 crc : {0, 1})
			for (__u8 markers : {0, 1})
				for (__u8 p2p : {0, 1})
					v.push_back({rev, crc, markers, p2p, kMax, kMax});
	return v;
}

const __u16 kDepths[] = {0, 1, 16, kMax, 200};

// xiw against xiw: every Request xiw sends, answered by xiw, is accepted,
// and both ends agree on what the connection uses.
TEST(MpaNegotiate, XiwToXiwAgrees)
{
	int cases = 0;
	for (const xiw_mpa_policy &ip : all_policies())
		for (const xiw_mpa_policy &rp : all_policies())
			for (__u16 iird : kDepths)
				for (__u16 iord : kDepths)
					for (__u16 rird : kDepths)
						for (__u16 rord : kDepths) {
		xiw_mpa_terms req{}, rep{};
		xiw_mpa_result ires{}, rres{};
		xiw_mpa_request(&ip, iird, iord, &req);
		xiw_mpa_respond(&req, &rp, rird, rord, &rep, &rres);
		ASSERT_EQ(xiw_mpa_conclude(&req, &rep, kMax, &ires), XIW_MPA_ACCEPTED);
		cases++;
		EXPECT_EQ(ires.crc, ip.crc || rp.crc);
		EXPECT_EQ(rres.crc, ires.crc);
		EXPECT_EQ(ires.markers_rx, ip.markers);
		EXPECT_EQ(rres.markers_tx, ip.markers);
		EXPECT_EQ(ires.markers_tx, rp.markers);
		EXPECT_EQ(rres.markers_rx, rp.markers);
		EXPECT_TRUE(ires.extensions);
		EXPECT_TRUE(rres.extensions);
		const bool v2 = ip.rev == XIW_MPA_REV_V2 && rp.rev == XIW_MPA_REV_V2;
		EXPECT_EQ(rep.rev, v2 ? XIW_MPA_REV_V2 : XIW_MPA_REV_V1);
		EXPECT_EQ(ires.p2p, v2 && ip.p2p && rp.p2p);
		EXPECT_EQ(rres.p2p, ires.p2p);
		if (ires.p2p) {
			// Write is offered, so Write is taken.
			EXPECT_EQ(ires.rtr_opcode, XIW_OP_WRITE);
			EXPECT_EQ(rres.rtr_opcode, XIW_OP_WRITE);
		}
		EXPECT_LE(ires.ird, kMax);
		EXPECT_LE(ires.ord, kMax);
		EXPECT_LE(rres.ird, kMax);
		EXPECT_LE(rres.ord, kMax);
		if (v2) {
			// RFC 6581 §5.1: no side may have more Reads
			// outstanding than the other can take.
			EXPECT_LE(ires.ord, rres.ird);
			EXPECT_LE(rres.ord, ires.ird);
		}
	}
	EXPECT_EQ(cases, 16 * 16 * 5 * 5 * 5 * 5);
}

// xiw answering any Request a peer may send.
TEST(MpaNegotiate, ResponderAnswersAnyRequest)
{
	for (const xiw_mpa_policy &rp : all_policies())
		for (unsigned flags = 0; flags < 0x100; flags++)
			for (__u8 rev : {XIW_MPA_REV_V1, XIW_MPA_REV_V2})
				for (__u8 v2w : {0, 1})
					for (__u16 ird_flags : {0, 0x8000, 0x4000, 0xc000})
						for (__u16 ord_flags : {0, 0x8000, 0x4000, 0xc000}) {
		const xiw_mpa_terms req{rev, static_cast<__u8>(flags), v2w, 9, 5, ird_flags,
					ord_flags};
		xiw_mpa_terms rep{};
		xiw_mpa_result res{};
		xiw_mpa_respond(&req, &rp, 32, 32, &rep, &res);
		// C in the Request obliges C in the Reply.
		if (flags & XIW_MPA_FLAG_C) {
			EXPECT_TRUE(rep.flags & XIW_MPA_FLAG_C);
		}
		EXPECT_FALSE(rep.flags & XIW_MPA_FLAG_R);
		EXPECT_EQ(bool(rep.flags & XIW_MPA_FLAG_EXT_ACK), bool(flags & XIW_MPA_FLAG_EXT));
		EXPECT_EQ(bool(res.extensions), bool(flags & XIW_MPA_FLAG_EXT));
		EXPECT_EQ(res.markers_tx, bool(flags & XIW_MPA_FLAG_M));
		EXPECT_EQ(rep.has_v2w, v2w && rp.rev == XIW_MPA_REV_V2);
		EXPECT_EQ(bool(rep.flags & XIW_MPA_FLAG_ENHANCED), bool(rep.has_v2w));
		EXPECT_EQ(rep.rev, rep.has_v2w ? XIW_MPA_REV_V2 : XIW_MPA_REV_V1);
		if (rep.has_v2w) {
			EXPECT_LE(rep.ord, req.ird);
		} // §5.1
		EXPECT_EQ(res.p2p, rep.has_v2w && rp.p2p && (ird_flags & XIW_MPA_V2_IRD_P2P));
		if (!res.p2p) {
			EXPECT_EQ(rep.ord_flags, 0);
			continue;
		}
		// §5.2: exactly one RTR, one that was offered (or Write when
		// nothing was).
		const bool send = rep.ird_flags & XIW_MPA_V2_IRD_RTR_SEND;
		const int chosen = bool(rep.ord_flags & XIW_MPA_V2_ORD_RTR_WRITE) +
				   bool(rep.ord_flags & XIW_MPA_V2_ORD_RTR_READ) + send;
		EXPECT_EQ(chosen, 1);
		if (rep.ord_flags & XIW_MPA_V2_ORD_RTR_READ) {
			EXPECT_TRUE(ord_flags & XIW_MPA_V2_ORD_RTR_READ);
		}
		if (send) {
			EXPECT_TRUE(ird_flags & XIW_MPA_V2_IRD_RTR_SEND);
		}
		if (ord_flags & XIW_MPA_V2_ORD_RTR_WRITE) {
			EXPECT_EQ(res.rtr_opcode, XIW_OP_WRITE);
		}
	}
}

// The initiator and the Replies no responder may send.
TEST(MpaNegotiate, InitiatorRefusesImpossibleReplies)
{
	const xiw_mpa_policy ip{XIW_MPA_REV_V2, 1, 0, 1, kMax, kMax};
	xiw_mpa_terms req{}, rep{};
	xiw_mpa_result res{};
	xiw_mpa_request(&ip, 8, 8, &req);

	xiw_mpa_terms good{};
	xiw_mpa_result rres{};
	const xiw_mpa_policy rp{XIW_MPA_REV_V2, 0, 0, 1, kMax, kMax};
	xiw_mpa_respond(&req, &rp, 8, 8, &good, &rres);
	ASSERT_EQ(xiw_mpa_conclude(&req, &good, kMax, &res), XIW_MPA_ACCEPTED);

	rep = good;
	rep.flags |= XIW_MPA_FLAG_R;
	EXPECT_EQ(xiw_mpa_conclude(&req, &rep, kMax, &res), XIW_MPA_REFUSED);
	// A newer revision than the Request's.
	rep = good;
	rep.rev = 3;
	EXPECT_EQ(xiw_mpa_conclude(&req, &rep, kMax, &res), XIW_MPA_INVALID);
	// An ORD beyond what our IRD can grow to.
	rep = good;
	rep.ord = kMax + 1;
	EXPECT_EQ(xiw_mpa_conclude(&req, &rep, kMax, &res), XIW_MPA_INVALID);
	// An ORD within it: our IRD grows.
	rep.ord = 20;
	ASSERT_EQ(xiw_mpa_conclude(&req, &rep, kMax, &res), XIW_MPA_ACCEPTED);
	EXPECT_EQ(res.ird, 20);
	// An IRD below our ORD: our ORD shrinks.
	rep = good;
	rep.ird = 3;
	ASSERT_EQ(xiw_mpa_conclude(&req, &rep, kMax, &res), XIW_MPA_ACCEPTED);
	EXPECT_EQ(res.ord, 3);
	// An RTR we did not offer (Send), or none.
	rep = good;
	rep.ord_flags = 0;
	rep.ird_flags |= XIW_MPA_V2_IRD_RTR_SEND;
	EXPECT_EQ(xiw_mpa_conclude(&req, &rep, kMax, &res), XIW_MPA_INVALID);
	// C: used unless both frames have C = 0.
	rep = good;
	rep.flags &= static_cast<__u8>(~XIW_MPA_FLAG_C);
	ASSERT_EQ(xiw_mpa_conclude(&req, &rep, kMax, &res), XIW_MPA_ACCEPTED);
	EXPECT_TRUE(res.crc);
	// No EXT_ACK: no extensions.
	rep = good;
	rep.flags &= static_cast<__u8>(~XIW_MPA_FLAG_EXT_ACK);
	ASSERT_EQ(xiw_mpa_conclude(&req, &rep, kMax, &res), XIW_MPA_ACCEPTED);
	EXPECT_FALSE(res.extensions);
}

TEST(MpaNegotiate, RejectKeepsRevisionAndBits)
{
	for (const xiw_mpa_policy &rp : all_policies())
		for (__u8 v2w : {0, 1}) {
			const xiw_mpa_terms req{v2w ? XIW_MPA_REV_V2 : XIW_MPA_REV_V1,
						static_cast<__u8>(XIW_MPA_FLAG_C | XIW_MPA_FLAG_EXT |
								  XIW_MPA_FLAG_M),
						v2w, 4, 4, XIW_MPA_V2_IRD_P2P, XIW_MPA_V2_ORD_RTR_WRITE};
			xiw_mpa_terms rep{};
			xiw_mpa_reject(&req, &rp, &rep);
			EXPECT_TRUE(rep.flags & XIW_MPA_FLAG_R);
			EXPECT_TRUE(rep.flags & XIW_MPA_FLAG_C);
			EXPECT_TRUE(rep.flags & XIW_MPA_FLAG_EXT);
			EXPECT_FALSE(rep.flags & XIW_MPA_FLAG_M);
			EXPECT_EQ(rep.has_v2w, v2w && rp.rev == XIW_MPA_REV_V2);
			EXPECT_EQ(rep.ird | rep.ord | rep.ird_flags | rep.ord_flags, 0);
			xiw_mpa_result res{};
			EXPECT_EQ(xiw_mpa_conclude(&req, &rep, kMax, &res), XIW_MPA_REFUSED);
		}
}

} // namespace
