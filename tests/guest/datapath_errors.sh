#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 600
# Remote errors between two xiw hosts: bad STag, out of bounds, missing
# access right and no posted receive each end in the expected completion
# status (via the peer's Terminate), leave the target memory unchanged and
# flush what follows; a peer process killed mid-transfer and a link going
# down end the stream with error completions.  The harness then checks
# dmesg and unloads xiw.
set -euo pipefail
# shellcheck source=case_lib.bash
source "$(dirname "$0")/case_lib.bash"

bin=${XIW_BUILD_DIR:?}/tests/guest/xiw_datapath_errors_test
port=7600

start_server() {
	port=$((port + 1))
	on b "$bin" server "$XIW_ADDR_B" "$port" >"$XIW_OUT/errors-server.log" 2>&1 &
	server=$!
	for _ in $(seq 1 100); do
		grep -q listening "$XIW_OUT/errors-server.log" && return 0
		sleep 0.1
	done
	echo "server did not start"; cat "$XIW_OUT/errors-server.log"; exit 1
}

case_begin "remote errors, target memory unchanged"
start_server
for c in bad_rkey_write bad_rkey_read write_out_of_bounds read_out_of_bounds \
	write_without_right read_without_right no_receive; do
	on a timeout 60 "$bin" client "$XIW_ADDR_B" "$port" "$c"
done
sleep 1
kill "$server"
wait "$server" 2>/dev/null || true
cat "$XIW_OUT/errors-server.log"
if grep -q "bytes changed" "$XIW_OUT/errors-server.log" &&
	! grep -q "[1-9][0-9]* bytes changed" "$XIW_OUT/errors-server.log"; then
	echo "target memory unchanged by every failed operation"
else
	echo "FAIL: target memory was modified"; exit 1
fi

# stream_then ACTION: a client streams RDMA Writes to a fresh server; once
# it streams, ACTION breaks the stream, and the client must end with the
# error it expects.
stream_then() {
	local log=$XIW_OUT/stream.log factor=${XIW_TIME_FACTOR:-1}
	start_server
	on a timeout $((60 * factor)) "$bin" client "$XIW_ADDR_B" "$port" stream >"$log" 2>&1 &
	client=$!
	for _ in $(seq 1 $((100 * factor))); do
		grep -q streaming "$log" && break
		sleep 0.1
	done
	sleep 1
	"$1"
	wait "$client" || { echo "FAIL: the client"; cat "$log"; exit 1; }
	cat "$log"
}
kill_server() { kill -9 "$server"; }
link_down() { on a ip link set va down; }

case_begin "peer process killed mid-transfer"
stream_then kill_server

case_begin "link down mid-transfer"
stream_then link_down
on a ip link set va up
kill "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
echo "errors: ok"
