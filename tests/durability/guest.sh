#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The guest half of tests/durability/run.sh, not a guest test of its own:
#   scripts/guest --hosts 2 --peer xiw --disk IMG -- tests/durability/guest.sh REP
# IMG holds an empty ext4 file system.  Host b mounts it and creates a 1 MiB
# file, durable with its metadata; xiw_commit_test's server on host b
# registers a shared mapping of the file with flush to persistence; the
# client on host a RDMA-Writes record A, flushes it to persistence, then
# RDMA-Writes record B without a flush, and both are checked in the
# server's memory (see "durable" in tests/guest/commit_test.cpp).  Then the
# script does what the harness would do after a command (unload xiw, look
# for kernel problems in dmesg: the harness will not see this run's dmesg),
# prints the marker line run.sh requires and powers the guest off at once
# with sysrq o: no sync, no unmount.  Periodic writeback is off, so what is
# on the disk is what a Flush (or this script's own fsync) put there.
set -euo pipefail
rep=${1:?usage: guest.sh REPETITION}
# shellcheck source=../guest/datapath_lib.bash
source "$(dirname "$0")/../guest/datapath_lib.bash"
# shellcheck source=../../scripts/lib/kernel-problems.bash
source "$(dirname "$0")/../../scripts/lib/kernel-problems.bash"

commit=${XIW_BUILD_DIR:?}/tests/guest/xiw_commit_test
disk=${XIW_DISK:?run under scripts/guest --disk IMG}
port=8200
mnt=/mnt/xiw-durable
file=$mnt/xiw-durable.dat

echo 0 >/proc/sys/vm/dirty_writeback_centisecs

modprobe ext4
mkdir -p "$mnt"
mount -t ext4 "$disk" "$mnt"
dd if=/dev/zero of="$file" bs=1M count=1 conv=fsync status=none
# Unmounted once, the file's inode and blocks sit at their home locations,
# not only in the journal.
umount "$mnt"
mount -t ext4 "$disk" "$mnt"

log=$XIW_OUT/durable-server.log
server_start "$log" "$commit" server -f "$file"
failed=
XIW_COMMIT_TAG="rep $rep" client_cases "$log" 120 durable "$commit" client
[ -z "$failed" ] || { echo "FAIL: flush_durability guest, rep $rep:$failed"; exit 1; }

if ! rmmod xiw; then
	echo "FAIL: rmmod xiw"
	exit 1
fi
# scripts/guest cannot judge a guest that powers itself off: judged here.
problems=$(dmesg | xiw_kernel_problems)
if [ -n "$problems" ]; then
	echo "FAIL: kernel problems in the guest log:"
	echo "$problems"
	exit 1
fi

echo "flush_durability guest: rep $rep: records written, kernel log clean; powering off without sync"
echo o >/proc/sysrq-trigger
sleep 60
echo "FAIL: the guest still runs 60 s after sysrq o"
exit 1
