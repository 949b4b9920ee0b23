#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw --pmem 512
# guest-timeout: 600
# guest-fixtures: xiw_rdma_core_new
# ibv_wr_flush() on xiw.  rdma-core 44 (Debian 12) has no such verb; built
# against a newer rdma-core's headers (scripts/lib/build-rdma-core-new.sh:
# Debian trixie's source, its libibverbs built next to the xiw provider and
# xiw_commit_test compiled against it), the provider offers
# IBV_QP_EX_WITH_FLUSH.  On Debian 13 the system's rdma-core 56 has it, and
# the tree's own build in that root is used as it is.  Both ends run with
# that libibverbs: the client on host a posts WRITE -> ibv_wr_flush
# (persistent, range) -> VERIFY -> ibv_wr_atomic_write -> ibv_wr_flush
# (global, whole region) through ibv_qp_ex, every completion as expected
# (IBV_WC_FLUSH), the record and the pointer in the server's target; then
# the ibv_post_send pipeline.  The target is the emulated NVDIMM as device
# DAX: since Linux 6.5 no RDMA device may pin a writable shared file
# mapping long term, and commit_xiw covers files on 6.1.
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

if libibverbs_has_flush; then
	commit=${XIW_BUILD_DIR:?}/tests/guest/xiw_commit_test
	version=$(dpkg-query -W -f='${Version}' libibverbs1)
	libibverbs=$(ldconfig -p | awk '$1 == "libibverbs.so.1" { print $NF; exit }')
else
	new=${XIW_BUILD_DIR:?}/rdma-core-new
	commit=$new/xiw/tests/guest/xiw_commit_test
	[ -x "$commit" ] || { echo "FAIL: $commit not built (scripts/lib/build-rdma-core-new.sh)"; exit 1; }
	export LD_LIBRARY_PATH=$new/rdma-core/lib
	export RDMAV_DRIVERS=$new/xiw/providers/xiw/libxiw
	version=$(cat "$new/version")
	libibverbs=$new/rdma-core/lib/libibverbs.so.1
fi

case_begin "the programs run with libibverbs $version"
ldd "$commit" | grep -F "libibverbs.so.1 => $libibverbs" ||
	{ echo "FAIL: $commit does not load $libibverbs"; ldd "$commit"; exit 1; }
on a ibv_devinfo -d xiw0 >/dev/null

dax=$(pmem_dax)
log=$XIW_OUT/commit-wr-flush-server.log
server_start "$log" "$commit" server -f "$dax"
case_begin "xiw_commit_test client (host a): qp_ex, pipeline"
client_log=$XIW_OUT/commit-wr-flush-client.log
failed=
client_cases "$log" 300 "qp_ex pipeline" "$commit" client >"$client_log" 2>&1
sed 's/^/  /' "$client_log"
[ -z "$failed" ] || { echo "FAIL: xiw_commit_test:$failed"; exit 1; }
grep -q '^commit: qp_ex: both RDMA Flushes completed, posted with ibv_wr_flush$' "$client_log" ||
	{ echo "FAIL: the qp_ex case did not post its flushes with ibv_wr_flush"; exit 1; }
echo "commit wr_flush (rdma-core $version): ok"
