#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer siw
# guest-timeout: 600
# xiw toward upstream siw, which does not speak the RDMAP extensions: the
# connection comes up without them, so posting FetchAdd, CmpSwap, RDMA
# Write / Send with Immediate, RDMA Flush, Atomic Write or any xiwdv
# extension work request (masked atomics, Immediate Data, Verify, Flush)
# fails with EOPNOTSUPP (bad_wr set, nothing queued, the QP stays in RTS),
# and the same QP still carries byte-checked Send, RDMA Write and RDMA Read.
set -euo pipefail

# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

ext=${XIW_BUILD_DIR:?}/tests/guest/xiw_ext_test
commit=${XIW_BUILD_DIR:?}/tests/guest/xiw_commit_test
port=7900
# siw counts every registration against RLIMIT_MEMLOCK, even for root, and
# the servers register their buffers twice.
ulimit -l unlimited

# run_unsupported BIN LOG SERVER_ARGS...: BIN's "unsupported" case against
# its server on host b (siw0), then "quit"; what failed goes to $failed.
run_unsupported() {
	local bin=$1 log=$2
	shift 2
	server_start "$log" "$bin" server "$@"
	client_cases "$log" 120 unsupported "$bin" client
}

failed=
case_begin "RFC 7306 atomics and immediate data toward siw (xiw_ext_test)"
run_unsupported "$ext" "$XIW_OUT/ext-siw-server.log"
case_begin "RDMA Flush, Verify, Atomic Write toward siw (xiw_commit_test)"
scratch_fs /mnt/xiw-commit-siw
run_unsupported "$commit" "$XIW_OUT/commit-siw-server.log" -f /mnt/xiw-commit-siw/server.dat
case_end
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }
echo "ext siw: ok"
