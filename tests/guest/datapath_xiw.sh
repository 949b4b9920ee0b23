#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 900
# xiw <-> xiw: Send/Recv, RDMA Write and Read of 0 B .. 4 MiB, byte-checked,
# with MPA CRC on and off, and rping.
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

# How often a provider rang xiw's doorbell so far (a kprobe's hit count):
# each ring is a system call.
tracefs=/sys/kernel/tracing
mountpoint -q "$tracefs" || mount -t tracefs nodev "$tracefs"
echo 'p:xiw_doorbell xiw_qp_tx_doorbell' >>"$tracefs/kprobe_events"
echo 1 >"$tracefs/events/kprobes/xiw_doorbell/enable"
case_at_exit "echo 0 >$tracefs/events/kprobes/xiw_doorbell/enable; echo -:xiw_doorbell >>$tracefs/kprobe_events"
doorbells() {
	awk '$1 == "xiw_doorbell" {print $2}' "$tracefs/kprobe_profile"
}

# stream_run: a stream of 4096 64-byte Writes, byte-checked; posted back to
# back, they go to the kernel's worker in batches: far fewer doorbells than
# posts (one per post if every post were sent on its own; about two per
# send queue's window of 128 when they stream).  Then 64 Reads beyond the
# ORD in one post, the last fenced: only the answers resume the sender.
stream_run() {
	local before rings
	before=$(doorbells)
	dp_run b a "$XIW_ADDR_B" 262144 stream
	rings=$(($(doorbells) - before))
	echo "doorbells: $rings for 4096 Writes, 64 Reads and 6 control messages"
	if ((rings >= 1024)); then
		echo "FAIL: the stream rang a doorbell for every fourth post or more"
		return 1
	fi
}

case_begin "CRC on"
dp_run b a "$XIW_ADDR_B"
case_begin "a stream of small Writes, CRC on"
stream_run
case_begin "CRC off"
set_param xiw mpa_crc 0
dp_run b a "$XIW_ADDR_B"
case_begin "a stream of small Writes, CRC off"
stream_run
set_param xiw mpa_crc 1
case_begin "rping"
rping_run b a "$XIW_ADDR_B" 1000
# Depth-1 posting right after each completion: the SQ slot must be free by
# the time its completion is seen.
case_begin "perftest, CRC on"
perftest_run a ib_read_lat "$XIW_ADDR_A" -d xiw0 -s 2 -n 3000
perftest_run a ib_write_lat "$XIW_ADDR_A" -d xiw0 -s 2 -n 3000
perftest_run a ib_send_lat "$XIW_ADDR_A" -d xiw0 -s 2 -n 3000
