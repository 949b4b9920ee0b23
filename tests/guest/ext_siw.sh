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

# run_unsupported NAME BIN LOG SERVER_ARGS...: BIN's "unsupported" case
# against its server on host b (siw0), then "quit".
run_unsupported() {
	local name=$1 bin=$2 log=$3 failed=
	shift 3
	server_start "$log" "$bin" server "$@"
	client_cases "$log" 120 unsupported "$bin" client
	[ -z "$failed" ] || { echo "FAIL: $name toward siw: $failed"; return 1; }
}

rc=0
echo "== RFC 7306 atomics and immediate data (xiw_ext_test)"
run_unsupported "RFC 7306 extensions" "$ext" "$XIW_OUT/ext-siw-server.log" || rc=1
echo "== RDMA Flush, Verify, Atomic Write (xiw_commit_test)"
scratch_fs /mnt/xiw-commit-siw
run_unsupported "draft-talpey-rdma-commit" "$commit" "$XIW_OUT/commit-siw-server.log" \
	-f /mnt/xiw-commit-siw/server.dat || rc=1
((rc == 0)) || exit 1
echo "ext siw: ok"
