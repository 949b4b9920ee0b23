// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// Verbs object life cycle on a real xiw device, through libibverbs and the
// xiw provider: runs inside the guest (tests/guest/verbs_objects.sh).
#include <infiniband/verbs.h>
#include <infiniband/xiwdv.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

const char *device_name()
{
	const char *name = std::getenv("XIW_DEV_A");
	return name ? name : "xiw0";
}

struct ContextCloser {
	void operator()(ibv_context *ctx) const { ibv_close_device(ctx); }
};
using Context = std::unique_ptr<ibv_context, ContextCloser>;

Context open_device(const char *name)
{
	int num = 0;
	ibv_device **list = ibv_get_device_list(&num);
	Context ctx;

	for (int i = 0; list && i < num; i++)
		if (std::strcmp(ibv_get_device_name(list[i]), name) == 0)
			ctx.reset(ibv_open_device(list[i]));
	ibv_free_device_list(list);
	return ctx;
}

class XiwVerbs : public ::testing::Test {
protected:
	void SetUp() override
	{
		ctx = open_device(device_name());
		ASSERT_TRUE(ctx) << "cannot open " << device_name();
		pd = ibv_alloc_pd(ctx.get());
		ASSERT_NE(pd, nullptr);
		cq = ibv_create_cq(ctx.get(), 16, nullptr, nullptr, 0);
		ASSERT_NE(cq, nullptr);
	}

	void TearDown() override
	{
		// gtest's EXPECT_* is an if/else: braces keep it unambiguous.
		if (cq) {
			EXPECT_EQ(ibv_destroy_cq(cq), 0);
		}
		if (pd) {
			EXPECT_EQ(ibv_dealloc_pd(pd), 0);
		}
	}

	ibv_qp *create_qp(uint32_t send_wr, uint32_t recv_wr,
			  ibv_qp_type type = IBV_QPT_RC)
	{
		ibv_qp_init_attr attr{};
		attr.send_cq = cq;
		attr.recv_cq = cq;
		attr.qp_type = type;
		attr.cap.max_send_wr = send_wr;
		attr.cap.max_recv_wr = recv_wr;
		attr.cap.max_send_sge = 2;
		attr.cap.max_recv_sge = 2;
		return ibv_create_qp(pd, &attr);
	}

	Context ctx;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
};

TEST_F(XiwVerbs, DeviceIsAnIwarpRnic)
{
	ibv_device_attr_ex attr{};

	EXPECT_EQ(ctx->device->node_type, IBV_NODE_RNIC);
	EXPECT_EQ(ctx->device->transport_type, IBV_TRANSPORT_IWARP);
	ASSERT_EQ(ibv_query_device_ex(ctx.get(), nullptr, &attr), 0);
	EXPECT_EQ(attr.orig_attr.phys_port_cnt, 1);
	EXPECT_GT(attr.orig_attr.max_qp, 0);
	EXPECT_GT(attr.orig_attr.max_qp_wr, 0);
	EXPECT_GT(attr.orig_attr.max_qp_rd_atom, 0);
	// Atomics run as CPU atomics at the target (guest.ext_xiw races them
	// against a CPU thread).
	EXPECT_EQ(attr.orig_attr.atomic_cap, IBV_ATOMIC_GLOB);
	// A Read Request names one sink buffer.
	EXPECT_EQ(attr.orig_attr.max_sge_rd, 1);
	// Flush and Atomic Write, by the bits Linux >= 6.2 gave them.
	const std::uint64_t commit_caps = XIWDV_DEVICE_FLUSH_GLOBAL |
					  XIWDV_DEVICE_FLUSH_PERSISTENT | XIWDV_DEVICE_ATOMIC_WRITE;
	EXPECT_EQ(attr.device_cap_flags_ex & commit_caps, commit_caps);
}

TEST_F(XiwVerbs, PortIsActiveWithMacGid)
{
	ibv_port_attr port{};
	ibv_gid gid{};

	ASSERT_EQ(ibv_query_port(ctx.get(), 1, &port), 0);
	EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
	EXPECT_EQ(port.gid_tbl_len, 1);
	ASSERT_EQ(ibv_query_gid(ctx.get(), 1, 0, &gid), 0);
	// iWARP GID: the MAC address, then zeros.
	for (int i = 6; i < 16; i++)
		EXPECT_EQ(gid.raw[i], 0) << "byte " << i;
	EXPECT_NE(ibv_query_gid(ctx.get(), 1, 1, &gid), 0);
}

TEST_F(XiwVerbs, MemoryRegistration)
{
	std::vector<char> buf(1 << 20);
	ibv_mr *mr = ibv_reg_mr(pd, buf.data(), buf.size(),
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(mr, nullptr) << std::strerror(errno);
	EXPECT_EQ(mr->lkey, mr->rkey);
	EXPECT_NE(mr->lkey >> 8, 0u) << "STag index 0 is reserved";

	ibv_mr *other = ibv_reg_mr(pd, buf.data(), 4096, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(other, nullptr);
	EXPECT_NE(other->lkey, mr->lkey);
	EXPECT_EQ(ibv_dereg_mr(other), 0);
	EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(XiwVerbs, CompletionQueueStartsEmpty)
{
	ibv_wc wc{};

	EXPECT_GE(cq->cqe, 16);
	EXPECT_EQ(ibv_poll_cq(cq, 1, &wc), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq, 0), 0);
	EXPECT_EQ(ibv_req_notify_cq(cq, 1), 0);
}

TEST_F(XiwVerbs, QueuePairLifeCycle)
{
	ibv_qp *qp = create_qp(64, 64);
	ASSERT_NE(qp, nullptr) << std::strerror(errno);
	EXPECT_GT(qp->qp_num, 0u);

	ibv_qp_attr attr{};
	attr.qp_state = IBV_QPS_INIT;
	attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	attr.port_num = 1;
	ASSERT_EQ(ibv_modify_qp(qp, &attr,
				IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
					IBV_QP_PKEY_INDEX | IBV_QP_PORT),
		  0);

	ibv_qp_attr got{};
	ibv_qp_init_attr init{};
	ASSERT_EQ(ibv_query_qp(qp, &got, IBV_QP_STATE | IBV_QP_CAP, &init), 0);
	EXPECT_EQ(got.qp_state, IBV_QPS_INIT);
	EXPECT_GE(got.cap.max_send_wr, 64u);
	EXPECT_GE(got.cap.max_recv_wr, 64u);

	// RESET -> RTS skips states: refused.
	ibv_qp_attr bad{};
	bad.qp_state = IBV_QPS_SQD;
	EXPECT_NE(ibv_modify_qp(qp, &bad, IBV_QP_STATE), 0);

	EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

TEST_F(XiwVerbs, QueuesWithoutSendOrReceiveWork)
{
	ibv_qp *no_recv = create_qp(16, 0);
	ASSERT_NE(no_recv, nullptr) << std::strerror(errno);
	ibv_qp *no_send = create_qp(0, 16);
	ASSERT_NE(no_send, nullptr) << std::strerror(errno);
	EXPECT_EQ(ibv_destroy_qp(no_recv), 0);
	EXPECT_EQ(ibv_destroy_qp(no_send), 0);
}

TEST_F(XiwVerbs, UnsupportedQueuePairsAreRefused)
{
	EXPECT_EQ(create_qp(16, 16, IBV_QPT_UD), nullptr);
	EXPECT_EQ(create_qp(16, 16, IBV_QPT_UC), nullptr);

	ibv_qp_init_attr attr{};
	attr.send_cq = cq;
	attr.recv_cq = cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = 16;
	attr.cap.max_send_sge = 1000;
	EXPECT_EQ(ibv_create_qp(pd, &attr), nullptr);
}

// Opcodes the QP cannot execute are refused at post time, never accepted
// and dropped; the valid ones before them in the list are posted.  The
// extensions need a connection that negotiated them, which this QP lacks.
TEST_F(XiwVerbs, UnexecutableOpcodesAreRefusedAtPost)
{
	ibv_qp *qp = create_qp(16, 16);
	ASSERT_NE(qp, nullptr);

	for (ibv_wr_opcode op : {IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP,
				 IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND_WITH_IMM,
				 IBV_WR_LOCAL_INV, IBV_WR_BIND_MW, IBV_WR_TSO}) {
		ibv_send_wr send{}, refused{};
		ibv_send_wr *bad = nullptr;
		send.opcode = IBV_WR_SEND;
		send.next = &refused;
		refused.opcode = op;
		EXPECT_EQ(ibv_post_send(qp, &send, &bad), EOPNOTSUPP) << "opcode " << op;
		EXPECT_EQ(bad, &refused) << "opcode " << op;
	}

	ibv_recv_wr rwr{};
	ibv_recv_wr *bad_rwr = nullptr;
	EXPECT_EQ(ibv_post_recv(qp, &rwr, &bad_rwr), 0);

	// Nothing completes on a QP that is not connected.
	ibv_wc wc{};
	EXPECT_EQ(ibv_poll_cq(cq, 1, &wc), 0);
	EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

} // namespace
