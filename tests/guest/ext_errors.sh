#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 600
# Remote errors of the RFC 7306 extensions between two xiw hosts: RDMA
# Write / Send with Immediate toward a QP without a posted receive, a
# FetchAdd to a misaligned address and one to memory registered without
# IBV_ACCESS_REMOTE_ATOMIC each end in the expected completion status and
# flush what follows, with the target memory unchanged.  Then a fake peer
# on a plain TCP socket (xiw_wire_inject) sends single crafted FPDUs: a bad
# AOpCode, a misaligned atomic, a short Immediate Data message, and a valid
# FetchAdd as a control; xiw must answer with the right Terminate (or the
# Atomic Response) and place nothing it must not.
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

ext=${XIW_BUILD_DIR:?}/tests/guest/xiw_ext_test
inject=${XIW_BUILD_DIR:?}/tests/guest/xiw_wire_inject
port=7800

echo "== remote errors through verbs (xiw0 on host a -> xiw1 on host b)"
log=$XIW_OUT/ext-errors-server.log
server_start "$log" "$ext" server
cases="no_receive_imm no_receive_send_imm atomic_unaligned atomic_no_right"
failed=
client_cases "$log" 120 "$cases" "$ext" client
# One "bytes changed" report per case, every one of them zero.
expect_lines "$log" '^ext server: %s: connection closed, 0 bytes changed$' "$cases"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }
echo "target memory unchanged by every failed operation"

echo "== crafted FPDUs from a fake peer (host a) to xiw1 (host b)"
log=$XIW_OUT/wire-inject-server.log
server_start "$log" "$inject" listen
cases="bad_aopcode unaligned_atomic short_immediate good_fetch_add"
client_cases "$log" 60 "$cases" "$inject"
expect_lines "$log" '^wire_inject server: %s: 0 bytes changed, 0 receives completed: ok$' "$cases"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }
echo "ext errors: ok"
