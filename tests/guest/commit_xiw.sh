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
# so that Flush to persistence writes back to a block device.  Meanwhile
# kprobes on the two senders' work functions show where they ran: every
# xiw_tx_work on a high-priority kworker ("H"), and the Flushes and
# Verifies longer than 64 KiB on a nice-0 one (xiw_tx_fair_work).
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

tracefs=/sys/kernel/tracing
mountpoint -q "$tracefs" || mount -t tracefs nodev "$tracefs"
echo 'p:xiw_tx xiw_tx_work' >>"$tracefs/kprobe_events"
echo 'p:xiw_tx_fair xiw_tx_fair_work' >>"$tracefs/kprobe_events"
case_at_exit "echo 0 >$tracefs/events/kprobes/enable; echo -:xiw_tx >>$tracefs/kprobe_events; echo -:xiw_tx_fair >>$tracefs/kprobe_events"
echo 1024 >"$tracefs/saved_cmdlines_size" # no "<...>" for a kworker
echo >"$tracefs/trace"
echo 1 >"$tracefs/events/kprobes/xiw_tx/enable"
echo 1 >"$tracefs/events/kprobes/xiw_tx_fair/enable"

case_begin "xiw_commit_test: xiw0 (host a) -> xiw1 (host b)"
# After a failed Verify the record is in place and the pointer untouched.
server_cases "$XIW_OUT/commit-server.log" 300 \
	"pipeline pipeline_bad_hash pipeline_bad_sha256 qp_ex verify_hash post_checks" \
	'^commit server: %s: connection closed, 0 bytes changed \(record in place, pointer not written\)$' \
	"pipeline_bad_hash pipeline_bad_sha256" "$commit" client server -f "$fs/server.dat"

# workers EVENT: "COMM COUNT" for each task that hit kprobe EVENT, the
# task's name without its pid (kworker/1:2H-123 -> kworker/1:2H).  A
# workqueue's rescuer, which runs its work under memory pressure, has the
# workqueue's name.
workers() {
	awk -v event="$1:" '$0 !~ /^#/ && $5 == event {
		sub(/-[0-9]+$/, "", $1); n[$1]++
	} END { for (t in n) print t, n[t] }' "$tracefs/trace"
}

case_begin "which workers sent (kprobes on xiw_tx_work, xiw_tx_fair_work)"
echo 0 >"$tracefs/events/kprobes/enable"
tx=$(workers xiw_tx)
fair=$(workers xiw_tx_fair)
echo "xiw_tx_work ran on: $(tr '\n' ' ' <<<"$tx")"
echo "xiw_tx_fair_work ran on: $(tr '\n' ' ' <<<"$fair")"
if [ -z "$fair" ]; then
	echo "FAIL: no long Flush or Verify went to the nice-0 worker"
	false
fi
if grep -Ev '^(kworker/[0-9]+:[0-9]+|xiw) ' <<<"$fair"; then
	echo "FAIL: long Flushes or Verifies ran elsewhere than on nice-0 kworkers"
	false
fi
if [ -z "$tx" ] || grep -Ev '^(kworker/[0-9]+:[0-9]+H|xiw_tx) ' <<<"$tx"; then
	echo "FAIL: the transmit work ran elsewhere than on high-priority kworkers"
	false
fi
echo "commit xiw: ok"
