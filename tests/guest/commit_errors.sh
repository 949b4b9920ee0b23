#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw --pmem 512
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

port=8100
# The server registers its file with the flush-to-persistence right: on
# ext4 where the kernel lets RDMA pin it, else device DAX.
if file_pins_long_term; then
	scratch_fs /mnt/xiw-commit-errors
	target=/mnt/xiw-commit-errors/server.dat
else
	target=$(pmem_dax)
fi
verbs_error_cases "${XIW_BUILD_DIR:?}/tests/guest/xiw_commit_test" commit \
	"flush_no_right flush_type_no_right verify_no_right atomic_write_no_right atomic_write_unaligned" \
	-f "$target"
injected_cases commit "atomic_write_bad_length flush_no_right atomic_write_good"
echo "commit errors: ok"
