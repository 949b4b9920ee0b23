#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 900
# The stock tools on xiw, unchanged: perftest's latency and bandwidth tests
# for Write, Read and Send over rdma_cm (-R) from 1 B to 1 MiB (both ends
# on xiw0), its RDMA Write with Immediate where it has that mode, and
# qperf's RC tests between two xiw hosts (qperf's rc tests create QPs
# without receive queues, which siw refuses).
# TOOLS_SIZES narrows the sweep (the Debian 13 run in scripts/test keeps
# one FPDU, a few, a megabyte).
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

failed=
read -ra sizes <<<"${TOOLS_SIZES:-1 64 4096 65536 1048576}"
case_begin "perftest, ${sizes[0]} B .. ${sizes[-1]} B"
for tool in ib_write_lat ib_write_bw ib_read_lat ib_read_bw ib_send_lat ib_send_bw; do
	for size in "${sizes[@]}"; do
		# Fewer iterations for the big messages: TCG moves ~50 MB/s.
		perftest_case "$tool" "$size" $((size >= 65536 ? 100 : 500)) -d xiw0
	done
done

# RDMA Write with Immediate (RFC 7306) from perftest itself, where the
# release's perftest has the mode: 4.5 (Debian 12) has not, 25.01 (Debian
# 13) has, so from release 25 on its absence fails the case.
case_begin "perftest --write_with_imm"
for tool in ib_write_lat ib_write_bw; do
	# (perftest's --help exits non-zero.)
	if ! grep -q -- --write_with_imm <<<"$("$tool" --help 2>&1 || true)"; then
		echo "$tool has no --write_with_imm in this perftest"
		if package_at_least perftest 25; then
			failed="$failed $tool/no-write_with_imm"
		fi
		continue
	fi
	for size in 2 4096; do
		perftest_case "$tool" "$size" 500 -d xiw0 --write_with_imm
	done
done

case_begin "qperf RC tests (host a -> host b)"
on b timeout 600 qperf >"$XIW_OUT/qperf-server.log" 2>&1 &
qserver=$!
sleep 2
for test in rc_lat rc_bw rc_rdma_write_lat rc_rdma_read_bw; do
	# -cm1: connect through rdma_cm, which iWARP needs.
	if out=$(on a timeout 120 qperf -cm1 -t 3 "$XIW_ADDR_B" "$test" 2>&1) &&
		awk '$2 == "=" && $3 + 0 > 0 { ok = 1 } END { exit !ok }' <<<"$out"; then
		echo "$out"
	else
		echo "$out"
		failed="$failed qperf/$test"
	fi
done
kill "$qserver" 2>/dev/null || true
wait "$qserver" 2>/dev/null || true
case_end
[ -z "$failed" ] || { perftest_failures; echo "FAIL:$failed"; exit 1; }
echo "tools: ok"
