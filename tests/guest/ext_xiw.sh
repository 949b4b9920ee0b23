#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 900
# RFC 7306 between two xiw hosts: the device reports global atomics;
# FetchAdd and CmpSwap through ibv_post_send and ibv_qp_ex; masked
# FetchAdd/CmpSwap and Swap checked against <xiw/atomic_ops.h>; RDMA Write
# and Send with (64-bit) immediate data, standalone Immediate Data,
# solicited events and in-order completion; many QPs and a CPU thread
# incrementing one counter with FetchAdd and with CmpSwap loops without
# losing an update; perftest and qperf atomics.
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

ext=${XIW_BUILD_DIR:?}/tests/guest/xiw_ext_test
stress=${XIW_BUILD_DIR:?}/tests/guest/xiw_atomic_stress_test
port=7700

# positive RESULT_LINE: perftest's last column (message rate, latency
# percentile) must be above zero.
positive() {
	echo "$1"
	awk 'END { exit !($NF + 0 > 0) }' <<<"$1" ||
		{ echo "FAIL: no positive result"; return 1; }
}

case_begin "device capabilities"
on a "$ext" caps xiw0

case_begin "xiw_ext_test: xiw0 (host a) -> xiw1 (host b)"
log=$XIW_OUT/ext-server.log
server_start "$log" "$ext" server
failed=
client_cases "$log" 300 "atomic_verbs atomic_qp_ex masked_wire write_imm send_imm solicited order" \
	"$ext" client
if [ -n "$failed" ]; then
	echo "FAIL: xiw_ext_test:$failed"
	exit 1
fi

# stress MODE: the counter must end exactly right.
stress() {
	local mode=$1 log=$XIW_OUT/stress-$1.log failed=
	case_begin "atomic stress, $mode: 8 QPs, 4 threads, CPU thread at the target"
	server_start "$log" "$stress" server
	on a timeout $((600 * ${XIW_TIME_FACTOR:-1})) "$stress" client "$XIW_ADDR_B" "$port" "$mode" || failed=client
	server_finish "$log" "$failed" || failed="$failed server"
	grep -Eq "^atomic_stress $mode: counter [0-9]+ expected [0-9]+: ok$" "$log" ||
		failed="$failed counter"
	[ -z "$failed" ] || { echo "FAIL: atomic stress $mode:$failed"; return 1; }
}
stress faa
stress cas

# perf_atomic TOOL TYPE ITERATIONS: a perftest atomic run on host a.
perf_atomic() {
	local out
	out=$(perftest_run a "$1" "$XIW_ADDR_A" -d xiw0 -A "$2" -n "$3") ||
		{ echo "$out"; echo "FAIL: $1 -A $2"; return 1; }
	positive "$out"
}

case_begin "perftest atomics over rdma_cm (both ends on xiw0)"
for type in FETCH_AND_ADD CMP_AND_SWAP; do
	perf_atomic ib_atomic_bw "$type" 2000
	perf_atomic ib_atomic_lat "$type" 1000
done

case_begin "qperf atomics over rdma_cm (host a -> host b)"
on b timeout 300 qperf >"$XIW_OUT/qperf-server.log" 2>&1 &
qserver=$!
sleep 2
# qperf's server sends the client its rdma_cm port before it calls
# rdma_listen (qperf rdma.c, cm_open_server()): on a slow kernel the
# client's connect can come first and be refused.  Only that is retried.
qperf_test() {
	local try out
	for try in 1 2 3; do
		out=$(on a timeout 120 qperf -cm1 -t 3 "$XIW_ADDR_B" "$1" 2>&1) && break
		grep -q "Event rejected" <<<"$out" || break
		echo "qperf $1: refused before its server listened (try $try)" >&2
	done
	echo "$out"
	[[ $out == *msg_rate* ]]
}
for test in rc_fetch_add_mr rc_compare_swap_mr; do
	out=$(qperf_test "$test") || { echo "$out"; echo "FAIL: qperf $test"; exit 1; }
	echo "$out"
	rate=$(awk '$1 == "msg_rate" { print $3; exit }' <<<"$out")
	awk -v r="${rate:-0}" 'BEGIN { exit !(r + 0 > 0) }' ||
		{ echo "FAIL: qperf $test: no positive msg_rate"; exit 1; }
done
kill "$qserver" 2>/dev/null || true
wait "$qserver" 2>/dev/null || true
echo "ext: ok"
