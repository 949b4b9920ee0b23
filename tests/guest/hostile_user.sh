#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 1
# guest-timeout: 300
# A local user against the kernel (tests/hostile/hostile_user.cpp): ring
# indices that claim more entries than the ring holds, a CQ that overflows
# by 60 completions, a Read with more SGEs than max_sge_rd, a QP reused after Error and Reset while its last
# stream had a Read Response half received, another process's QP named
# in rdma_connect.  Each case is a regression
# test of the hostile-users review; the harness adds the kernel log (a
# soft lockup or an oops fail the run).
set -euo pipefail

bin=${XIW_BUILD_DIR:?set by scripts/guest}/tests/guest/xiw_hostile_user
failed=
for c in rq_producer sq_producer cq_overflow read_sges query_states; do
	timeout 60 "$bin" "$c" || failed="$failed $c"
done
timeout 120 "$bin" qp_reuse "${XIW_ADDR_A:?}" 7850 || failed="$failed qp_reuse"
timeout 60 "$bin" qp_steal "$XIW_ADDR_A" 7851 || failed="$failed qp_steal"
if [ -n "$failed" ]; then
	echo "FAIL:$failed"
	exit 1
fi
echo "hostile user: ok"
