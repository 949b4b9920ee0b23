/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * unit.wire.c_check: the wire headers compile as C (-std=gnu11 -Wpedantic
 * -Werror) and give the same layout/results as in C++.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <xiw/atomic_ops.h>
#include <xiw/crc32c.h>
#include <xiw/mpa_negotiate.h>
#include <xiw/wire.h>
#include <xiw/wr_opcodes.h>

static int failures;

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n",	\
				__FILE__, __LINE__, #cond);		\
			failures++;					\
		}							\
	} while (0)

int main(void)
{
	struct xiw_hdr_atomic_req h;
	const struct xiw_opcode_info *oi;
	static const unsigned char exp_head[] = {
		0x00, 0x46, 0x41, 0x4a, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 9,
		0, 0, 0, 0, 0, 0, 0, 2, 0xa1, 0xa2, 0xa3, 0xa4,
	};
	__u64 r = 0;

	CHECK(sizeof(struct xiw_mpa_rr) == 20);
	CHECK(sizeof(struct xiw_ddp_tagged_hdr) == 16);
	CHECK(sizeof(struct xiw_ddp_untagged_hdr) == 20);
	CHECK(sizeof(struct xiw_rdmap_read_req) == 28);
	CHECK(sizeof(struct xiw_rdmap_terminate) == 52);
	CHECK(sizeof(struct xiw_rdmap_atomic_req) == 52);
	CHECK(sizeof(struct xiw_rdmap_atomic_resp) == 12);
	CHECK(sizeof(struct xiw_rdmap_flush_req) == 20);
	CHECK(sizeof(struct xiw_rdmap_atomic_write_req) == 24);
	CHECK(sizeof(union xiw_hdr) == 72);
	CHECK(offsetof(struct xiw_rdmap_atomic_req, compare_mask) == 44);
	CHECK(offsetof(struct xiw_ddp_untagged_hdr, mo) == 16);

	memset(&h, 0, sizeof(h));
	xiw_ctrl_set(&h.ddp.ctrl, 70, 0, 1, XIW_RDMAP_RV1, XIW_OP_ATOMIC_REQ);
	xiw_untagged_set(&h.ddp, 0, XIW_QN_READ_REQ, 9, 0);
	h.atomic.aopcode = xiw_cpu_to_be32(XIW_AOP_CMP_SWAP);
	h.atomic.req_id = xiw_cpu_to_be32(0xa1a2a3a4u);
	CHECK(memcmp(&h, exp_head, sizeof(exp_head)) == 0);

	oi = xiw_opcode_lookup(xiw_rdmap_rv(h.ddp.ctrl.rdmap_ctrl),
			       xiw_rdmap_opcode(h.ddp.ctrl.rdmap_ctrl));
	CHECK(oi != NULL);
	if (oi) {
		CHECK(oi->qn == XIW_QN_READ_REQ);
		CHECK(oi->hdr_len == sizeof(struct xiw_rdmap_atomic_req));
		CHECK(oi->resp_opcode == XIW_OP_ATOMIC_RESP);
	}
	CHECK(xiw_opcode_lookup(1, 0x12) == NULL);
	CHECK(xiw_opcode_lookup(2, 0x16) != NULL);

	CHECK(xiw_crc32c("123456789", 9) == 0xe3069283u);
	CHECK(xiw_wr_lookup(XIW_WR_FLUSH) != NULL &&
	      xiw_wr_lookup(XIW_WR_FLUSH)->wire == XIW_OP_FLUSH_REQ);
	CHECK(xiw_wr_is(XIW_WR_RDMA_READ, XIW_WRF_REQUEST));
	CHECK(xiw_masked_fetch_add(0xff01ff01ff01ff01ull,
				   0x0101010101010101ull,
				   0x8080808080808080ull) ==
	      0x0002000200020002ull);
	CHECK(xiw_atomic_apply(XIW_AOP_CMP_SWAP, 3, 4, ~0ull, 3, ~0ull, 0,
			       &r) == 0 && r == 4);
	CHECK(xiw_mpa_pad_len(23) == 3);

	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	else
		printf("wire headers OK in C\n");
	return failures ? 1 : 0;
}
