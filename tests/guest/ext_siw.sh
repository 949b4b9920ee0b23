#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer siw
# guest-timeout: 600
# xiw toward upstream siw, which does not speak the RFC 7306 extensions:
# the connection comes up without them, so posting FetchAdd, CmpSwap, RDMA
# Write / Send with Immediate or any xiwdv extension work request fails
# with EOPNOTSUPP (bad_wr set, nothing queued, the QP stays in RTS), and
# the same QP still carries byte-checked Send, RDMA Write and RDMA Read.
set -euo pipefail

# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

ext=${XIW_BUILD_DIR:?}/tests/guest/xiw_ext_test
port=7900
log=$XIW_OUT/ext-siw-server.log
# siw counts every registration against RLIMIT_MEMLOCK, even for root, and
# the server registers its 4 MiB buffer twice.
ulimit -l unlimited

server_start "$log" "$ext" server
failed=
on a timeout 120 "$ext" client "$XIW_ADDR_B" "$port" unsupported || failed=unsupported
if [ -z "$failed" ]; then
	on a timeout 60 "$ext" client "$XIW_ADDR_B" "$port" quit || failed=quit
fi
server_finish "$log" "$failed" || failed="$failed server"
[ -z "$failed" ] || { echo "FAIL: extensions toward siw: $failed"; exit 1; }
echo "ext siw: ok"
