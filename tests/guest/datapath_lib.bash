# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Helpers for the two-host data path tests (sourced, not a test itself).

# shellcheck source=../../scripts/lib/guest-devices.bash
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/guest-devices.bash"
# shellcheck source=case_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/case_lib.bash"

dp_bin=${XIW_BUILD_DIR:?set by scripts/guest}/tests/guest/xiw_datapath_test
dp_port=7470

# dp_run SERVER_HOST CLIENT_HOST SERVER_ADDR [MAX_SIZE [stream]]: one
# byte-checked run of Send/Recv, Write and Read over every size up to
# MAX_SIZE; with "stream", of a stream of small Writes instead.
dp_run() {
	local server_host=$1 client_host=$2 addr=$3 max=${4:-4194304}
	local client_args=("${@:5}")
	local log=$XIW_OUT/datapath-server-$dp_port.log rc=0
	dp_port=$((dp_port + 1))
	on "$server_host" "$dp_bin" server "$addr" "$dp_port" "$max" >"$log" 2>&1 &
	local server=$!
	# The listener is up once it says so.
	for _ in $(seq 1 100); do
		grep -q listening "$log" && break
		sleep 0.1
	done
	on "$client_host" "$dp_bin" client "$addr" "$dp_port" "$max" "${client_args[@]}" || rc=$?
	if ! wait "$server" && [ "$rc" = 0 ]; then
		rc=1
	fi
	sed 's/^/  server: /' "$log"
	return "$rc"
}

# rping_run SERVER_HOST CLIENT_HOST SERVER_ADDR COUNT: rping, each ping
# validated (-V); both sides must succeed.
rping_run() {
	local server_host=$1 client_host=$2 addr=$3 count=$4 rc=0
	on "$server_host" rping -s -a "$addr" -C "$count" -V >"$XIW_OUT/rping-server.log" 2>&1 &
	local server=$!
	sleep 1
	on "$client_host" rping -c -a "$addr" -C "$count" -V -S 64 \
		>"$XIW_OUT/rping-client.log" 2>&1 || rc=$?
	if ! wait "$server" && [ "$rc" = 0 ]; then
		rc=1
	fi
	if [ "$rc" != 0 ]; then
		sed 's/^/  rping client: /' "$XIW_OUT/rping-client.log"
		sed 's/^/  rping server: /' "$XIW_OUT/rping-server.log"
		return "$rc"
	fi
	echo "rping: $count validated pings"
}

# set_param MODULE PARAM VALUE: runtime module parameter.
set_param() {
	echo "$3" >"/sys/module/$1/parameters/$2"
}

# perftest_once HOST TOOL ADDR ARGS...: one perftest pair over rdma_cm
# within HOST (both ends use the device that owns ADDR); both must succeed.
# Prints the client's result line, or both logs.
perftest_once() {
	local host=$1 tool=$2 addr=$3 rc=0
	shift 3
	dp_port=$((dp_port + 1))
	on "$host" timeout 120 "$tool" -R -p "$dp_port" "$@" \
		>"$XIW_OUT/perftest-server.log" 2>&1 &
	local server=$!
	# iWARP listens on a TCP socket: connect once it is there, not after a
	# guess (a busy TCG guest can take seconds to start the server).
	for _ in $(seq 1 150); do
		on "$host" ss -Hltn "sport = :$dp_port" | grep -q . && break
		sleep 0.1
	done
	on "$host" timeout 120 "$tool" -R -p "$dp_port" "$@" "$addr" \
		>"$XIW_OUT/perftest-client.log" 2>&1 || rc=$?
	# The server's failure counts too, unless the client's came first.
	if ! wait "$server" && [ "$rc" = 0 ]; then
		rc=1
	fi
	if [ "$rc" != 0 ]; then
		{
			echo "== $tool $* (exit $rc)"
			sed 's/^/  client: /' "$XIW_OUT/perftest-client.log"
			sed 's/^/  server: /' "$XIW_OUT/perftest-server.log"
		} | tee -a "$XIW_OUT/perftest-failures.log"
		return "$rc"
	fi
	grep -E '^ *[0-9]+ +[0-9]+ ' "$XIW_OUT/perftest-client.log" | tail -n 1
}

# perftest_failures: what every failed perftest_once printed, and the
# kernel's last lines, again: a test's verdict comes last, and a reader of
# only its end then sees why.
perftest_failures() {
	[ -s "$XIW_OUT/perftest-failures.log" ] || return 0
	echo "== the failed perftest runs again"
	cat "$XIW_OUT/perftest-failures.log"
	echo "== the kernel's last lines"
	dmesg | tail -n 20
}

# perftest_run HOST TOOL ADDR ARGS...: perftest_once, once more if it
# failed.  About one run in 30 fails on its own under TCG: perftest
# calibrates its cycle clock and sometimes gives up ("Correlation
# coefficient r^2 < 0.9: Can't produce a report"), and once a client saw
# its connection rejected (-111) before its server printed anything.  The
# failed attempt's logs are printed.
perftest_run() {
	perftest_once "$@" && return 0
	echo "perftest $2: retrying once"
	perftest_once "$@"
}

# perftest_case TOOL SIZE ITERS ARGS...: perftest_run of TOOL within host a
# on $XIW_ADDR_A with SIZE-byte messages; prints "TOOL SIZE B: result", or
# the logs and adds TOOL/SIZE to $failed.
perftest_case() {
	local tool=$1 size=$2 iters=$3 line
	shift 3
	if line=$(perftest_run a "$tool" "$XIW_ADDR_A" "$@" -s "$size" -n "$iters"); then
		echo "$tool $size B: $line"
	else
		echo "$line"
		failed="$failed $tool/$size"
	fi
}

# server_start LOG CMD...: runs "CMD $XIW_ADDR_B PORT" on host b, PORT being
# the next one after $port, and returns once it printed "listening".  Sets
# $server (its pid) and $port.
server_start() {
	local log=$1
	shift
	port=$((${port:-7000} + 1))
	on b timeout $((800 * ${XIW_TIME_FACTOR:-1})) "$@" "$XIW_ADDR_B" "$port" >"$log" 2>&1 &
	server=$!
	for _ in $(seq 1 100); do
		grep -q listening "$log" && return 0
		sleep 0.1
	done
	echo "FAIL: $* did not start"
	cat "$log"
	exit 1
}

# server_finish LOG [FAILED]: waits for the server of server_start (killed
# first if FAILED is not empty: it may still wait for a client), prints its
# log indented and returns its exit status.
server_finish() {
	local rc=0
	[ -z "${2:-}" ] || kill "$server" 2>/dev/null || true
	wait "$server" || rc=$?
	sed 's/^/  server: /' "$1"
	return "$rc"
}

# client_cases LOG TIMEOUT CASES CMD...: runs "CMD $XIW_ADDR_B $port CASE"
# on host a for each of the space-separated CASES (printing "PASS CASE" or
# "FAIL CASE"), then CASE "quit" (which ends the server of server_start),
# and waits for that server (server_finish LOG).  Appends what failed to
# $failed.
client_cases() {
	local log=$1 timeout=$2 cases=$3 c
	shift 3
	for c in $cases; do
		if on a timeout "$timeout" "$@" "$XIW_ADDR_B" "$port" "$c"; then
			echo "PASS $c"
		else
			echo "FAIL $c"
			failed="$failed $c"
		fi
	done
	if [ -z "${failed:-}" ]; then
		on a timeout 60 "$@" "$XIW_ADDR_B" "$port" quit || failed="$failed quit"
	fi
	server_finish "$log" "${failed:-}" || failed="$failed server"
}

# expect_lines LOG FORMAT CASES: for each of CASES, LOG must have a line
# matching the extended regex FORMAT with %s replaced by the case.
# Appends the cases without one to $failed.
expect_lines() {
	local log=$1 format=$2 c line
	for c in $3; do
		# shellcheck disable=SC2059 # FORMAT is the caller's pattern
		line=$(printf "$format" "$c")
		grep -Eq "$line" "$log" && continue
		echo "FAIL $c: the server's log has no line $line"
		failed="${failed:-} $c(log)"
	done
}

# server_cases LOG TIMEOUT CASES LINE LINE_CASES PROGRAM CLIENT_WORDS
# SERVER_ARGS...: `PROGRAM SERVER_ARGS...` on host b (server_start LOG),
# `PROGRAM CLIENT_WORDS CASE` on host a for each of CASES (client_cases),
# then a line LINE in the server's log for each of LINE_CASES
# (expect_lines).  Exits on a failure, naming the cases that failed.
server_cases() {
	local log=$1 timeout=$2 cases=$3 line=$4 line_cases=$5 prog=$6 client_words
	read -ra client_words <<<"$7"
	shift 7
	server_start "$log" "$prog" "$@"
	failed=
	client_cases "$log" "$timeout" "$cases" "$prog" "${client_words[@]}"
	expect_lines "$log" "$line" "$line_cases"
	[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }
}

# verbs_error_cases PROGRAM TOOL CASES [SERVER_ARGS...]: remote errors
# through verbs between xiw0 (host a) and xiw1 (host b): PROGRAM's server on
# host b with SERVER_ARGS, its client for each of CASES; after each, TOOL's
# server must report the target memory unchanged.  Exits on a failure.
verbs_error_cases() {
	local prog=$1 tool=$2 cases=$3 log
	shift 3
	log=$XIW_OUT/$tool-errors-server.log
	case_begin "remote errors through verbs (xiw0 on host a -> xiw1 on host b)"
	# One "bytes changed" report per case, every one of them zero.
	server_cases "$log" 120 "$cases" "^$tool server: %s: connection closed, 0 bytes changed\$" \
		"$cases" "$prog" client server "$@"
	echo "target memory unchanged by every failed operation"
}

# injected_cases TOOL CASES: crafted FPDUs from a fake peer on a plain TCP
# socket (xiw_wire_inject, host a) to xiw1 (host b), one connection per
# case; each must end with nothing placed and nothing received.  Exits on
# a failure.
injected_cases() {
	local log=$XIW_OUT/$1-wire-inject-server.log
	local inject=${XIW_BUILD_DIR:?}/tests/guest/xiw_wire_inject
	case_begin "crafted FPDUs from a fake peer (host a) to xiw1 (host b)"
	server_cases "$log" 60 "$2" '^wire_inject server: %s: 0 bytes changed, 0 receives completed: ok$' \
		"$2" "$inject" "" listen
}
