#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 600
# Remote errors of RDMA Flush, Verify and Atomic Write between two xiw
# hosts: a Flush to memory without a flush right, a Flush to persistence
# with the global flush right only, a Verify without a verify right and an
# Atomic Write without IBV_ACCESS_REMOTE_WRITE end in IBV_WC_REM_ACCESS_ERR,
# a misaligned Atomic Write in IBV_WC_REM_OP_ERR; what follows is flushed
# and the target memory (buffer and file) is unchanged.  Then a fake peer on
# a plain TCP socket (xiw_wire_inject) sends an Atomic Write Request with
# Data Sink Length 4 (Terminate 0/2/0x07), a Flush Request to memory without
# a flush right (Terminate 0/1/0x02) and a valid Atomic Write as a control
# (Atomic Write Response on QN 3, the value at the target).
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

commit=${XIW_BUILD_DIR:?}/tests/guest/xiw_commit_test
inject=${XIW_BUILD_DIR:?}/tests/guest/xiw_wire_inject
port=8100

# The server registers its file with the flush-to-persistence right.
scratch_fs /mnt/xiw-commit-errors

echo "== remote errors through verbs (xiw0 on host a -> xiw1 on host b)"
log=$XIW_OUT/commit-errors-server.log
server_start "$log" "$commit" server -f /mnt/xiw-commit-errors/server.dat
cases="flush_no_right flush_type_no_right verify_no_right atomic_write_no_right atomic_write_unaligned"
failed=
client_cases "$log" 120 "$cases" "$commit" client
# One "bytes changed" report per case, every one of them zero.
expect_lines "$log" '^commit server: %s: connection closed, 0 bytes changed$' "$cases"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }
echo "target memory unchanged by every failed operation"

echo "== crafted FPDUs from a fake peer (host a) to xiw1 (host b)"
log=$XIW_OUT/commit-wire-inject-server.log
server_start "$log" "$inject" listen
cases="atomic_write_bad_length flush_no_right atomic_write_good"
client_cases "$log" 60 "$cases" "$inject"
expect_lines "$log" '^wire_inject server: %s: 0 bytes changed, 0 receives completed: ok$' "$cases"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }
echo "commit errors: ok"
