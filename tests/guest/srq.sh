#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-timeout: 600
# Shared receive queues on xiw0 (one host: server and clients on
# $XIW_ADDR_A): one SRQ feeding the connections of three clients at once,
# every message byte-checked, its limit event, Last WQE Reached and what
# it refuses (xiw_srq_test); then perftest's Send tests on an SRQ.
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"
ulimit -l unlimited

srq_bin=$XIW_BUILD_DIR/tests/guest/xiw_srq_test
# As many as xiw_srq_test's server accepts (kClients).
clients=3
port=7490
server_log=$XIW_OUT/srq-server.log
failed=

case_begin "one SRQ, $clients clients"
timeout 300 "$srq_bin" server "$XIW_ADDR_A" "$port" >"$server_log" 2>&1 &
server=$!
# The listener is up once it says so.
for _ in $(seq 1 150); do
	grep -q listening "$server_log" && break
	sleep 0.1
done
client_pids=()
for c in $(seq 1 "$clients"); do
	timeout 300 "$srq_bin" client "$XIW_ADDR_A" "$port" \
		>"$XIW_OUT/srq-client-$c.log" 2>&1 &
	client_pids+=("$!")
done
for c in $(seq 1 "$clients"); do
	wait "${client_pids[c - 1]}" || failed="$failed client$c"
done
wait "$server" || failed="$failed server"
sed 's/^/  server: /' "$server_log"
for c in $(seq 1 "$clients"); do
	sed "s/^/  client $c: /" "$XIW_OUT/srq-client-$c.log"
done

case_begin "perftest Send on an SRQ"
# Fewer iterations than the SRQ's receives (perftest caps its rx depth at
# the iterations), so it never runs dry: iWARP has no RNR retry.
for tool in ib_send_bw ib_send_lat; do
	for size in 64 4096; do
		perftest_case "$tool" "$size" 300 -d xiw0 --use-srq
	done
done

case_end
[ -z "$failed" ] || { perftest_failures; echo "FAIL:$failed"; exit 1; }
echo "srq: ok"
