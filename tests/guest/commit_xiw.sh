#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 900
# draft-talpey-rdma-commit between two xiw hosts: both devices report the
# seven xiwdv capability bits; ibv_reg_mr refuses two Verify algorithms
# (EINVAL) and flush to persistence outside one shared file mapping
# (EOPNOTSUPP on anonymous memory) and takes it on a shared file mapping;
# WRITE -> FLUSH -> VERIFY -> ATOMIC_WRITE posted back to back through
# ibv_post_send and through ibv_qp_ex complete in order with the right
# opcodes and hashes, and the server finds record and pointer in its file;
# with a wrong expected CRC32c or SHA-256 the Verify fails with
# IBV_WC_REM_OP_ERR and the Atomic Write behind it is flushed, not
# performed; Verify returns the CRC32c and SHA-256 computed locally for
# several lengths and offsets; what the kernel would fail later (a Flush of
# an unknown level, a Verify's bad hash length, inline data on a Read) fails
# the post with EINVAL.  The server's file lives on ext4 on a loop device,
# so that Flush to persistence writes back to a block device.
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

commit=${XIW_BUILD_DIR:?}/tests/guest/xiw_commit_test
port=8000

case_begin "ext4 on a loop device for the files"
fs=/mnt/xiw-commit
scratch_fs "$fs"

case_begin "capabilities"
on a "$commit" caps xiw0
on b "$commit" caps xiw1

case_begin "registration rights (xiw0, file on ext4)"
on a "$commit" registration xiw0 "$fs/registration.dat"

case_begin "xiw_commit_test: xiw0 (host a) -> xiw1 (host b)"
# After a failed Verify the record is in place and the pointer untouched.
server_cases "$XIW_OUT/commit-server.log" 300 \
	"pipeline pipeline_bad_hash pipeline_bad_sha256 qp_ex verify_hash post_checks" \
	'^commit server: %s: connection closed, 0 bytes changed \(record in place, pointer not written\)$' \
	"pipeline_bad_hash pipeline_bad_sha256" "$commit" client server -f "$fs/server.dat"
echo "commit xiw: ok"
