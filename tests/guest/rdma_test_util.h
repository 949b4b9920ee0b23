// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
// What the librdmacm-based guest test programs share.
#ifndef XIW_TESTS_RDMA_TEST_UTIL_H
#define XIW_TESTS_RDMA_TEST_UTIL_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace xiw_test {

[[noreturn]] inline void die(const char *what)
{
	std::fprintf(stderr, "%s: %s\n", what, std::strerror(errno));
	std::exit(1);
}

// The address of ADDR:PORT on the RDMA TCP port space.
inline rdma_addrinfo *resolve(const char *addr, const char *port, bool passive)
{
	rdma_addrinfo hints{}, *res = nullptr;
	hints.ai_port_space = RDMA_PS_TCP;
	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		die("rdma_getaddrinfo");
	return res;
}

// An RC QP with one SGE per work request.
inline ibv_qp_init_attr rc_qp_attr(std::uint32_t send_wr, std::uint32_t recv_wr)
{
	ibv_qp_init_attr attr{};
	attr.cap.max_send_wr = send_wr;
	attr.cap.max_recv_wr = recv_wr;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	return attr;
}

// Room for a few RDMA Reads in flight each way.
inline rdma_conn_param conn_param()
{
	rdma_conn_param p{};
	p.responder_resources = 4;
	p.initiator_depth = 4;
	p.retry_count = 7;
	return p;
}

} // namespace xiw_test

#endif
