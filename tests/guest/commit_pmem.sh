#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw --pmem 512
# guest-timeout: 900
# Flush to persistence on persistent memory: the guest's emulated NVDIMM
# as device DAX (/dev/dax0.0).  The server on host b registers the first
# MiB of a mapping of it with flush to persistence (xiw writes the CPU
# caches of the range back to the memory instead of syncing a file); the
# client on host a runs WRITE -> FLUSH (persistent) -> VERIFY ->
# ATOMIC_WRITE back to back, with a wrong expected hash too, and through
# ibv_qp_ex; the server finds record and pointer in persistent memory.
# (Under TCG there are no CPU caches to write back, so this shows the
# function, not durability; tests/durability does that for files.)
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

commit=${XIW_BUILD_DIR:?}/tests/guest/xiw_commit_test

case_begin "device DAX on the emulated NVDIMM"
dax=$(pmem_dax)
ls -l "$dax"

case_begin "xiw_commit_test: xiw0 (host a) -> xiw1 (host b), target $dax"
server_cases "$XIW_OUT/commit-server.log" 300 "pipeline pipeline_bad_hash qp_ex" \
	'^commit server: %s: connection closed, 0 bytes changed \(record in place, pointer not written\)$' \
	"pipeline_bad_hash" "$commit" client server -f "$dax"
echo "commit pmem: ok"
