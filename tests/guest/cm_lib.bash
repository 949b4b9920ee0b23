# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Helpers for the cm_*.sh guest tests (sourced, not a test itself).

# shellcheck source=case_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/case_lib.bash"
# shellcheck source=../../scripts/lib/guest-devices.bash
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/guest-devices.bash"

cm_test=${XIW_BUILD_DIR:?set by scripts/guest}/tests/guest/xiw_cm_connect_test

# in_ns HOST CMD...: run CMD on host a or b (b is init_net).
in_ns() {
	local host=$1
	shift
	if [ "$host" = b ]; then "$@"; else ip netns exec "$host" "$@"; fi
}

# wait_listen HOST PORT: until something listens on PORT on HOST.
wait_listen() {
	for _ in $(seq 1 $((100 * ${XIW_TIME_FACTOR:-1}))); do
		[ -n "$(in_ns "$1" ss -Hltn "sport = :$2")" ] && return 0
		sleep 0.1
	done
	echo "nothing listens on port $2 on host $1"
	return 1
}

# wait_no_conn HOST PORT: until no TCP connection of PORT is left on HOST
# other than those in TIME-WAIT (a connection xiw forgot fails the test).
wait_no_conn() {
	for _ in $(seq 1 $((100 * ${XIW_TIME_FACTOR:-1}))); do
		in_ns "$1" ss -Htn state connected "sport = :$2 or dport = :$2" |
			grep -qv TIME-WAIT || return 0
		sleep 0.1
	done
	echo "connections of port $2 left on host $1:"
	in_ns "$1" ss -tn "sport = :$2 or dport = :$2"
	return 1
}

# cm_pair SERVER_HOST SERVER_ADDR CLIENT_HOST PORT SCENARIO
cm_pair() {
	local shost=$1 saddr=$2 chost=$3 port=$4 scen=$5 spid rc=0
	case_begin "$scen: server on $shost ($saddr:$port), client on $chost"
	in_ns "$shost" "$cm_test" server "$saddr" "$port" "$scen" &
	spid=$!
	wait_listen "$shost" "$port" || { kill "$spid"; return 1; }
	in_ns "$chost" "$cm_test" client "$saddr" "$port" "$scen" || rc=1
	wait "$spid" || rc=1
	[ $rc = 0 ] || return 1
	wait_no_conn "$shost" "$port"
	wait_no_conn "$chost" "$port"
}

# cm_pairs SERVER_HOST CLIENT_HOST PORT SCENARIO...: cm_pair for each
# SCENARIO in turn, on PORT, PORT + 1, ..., the server on its host's IPv4
# address.
cm_pairs() {
	local shost=$1 chost=$2 port=$3 saddr=$XIW_ADDR_A scen
	shift 3
	[ "$shost" = a ] || saddr=$XIW_ADDR_B
	for scen; do
		cm_pair "$shost" "$saddr" "$chost" "$port" "$scen" || return 1
		port=$((port + 1))
	done
}

# cm_refused CLIENT_HOST ADDR PORT: nobody listens, the connect fails.
cm_refused() {
	case_begin "refused: client on $1 to $2:$3"
	in_ns "$1" "$cm_test" client "$2" "$3" refused
}

# xiw logs what each connection negotiated through dynamic debug: turn it on.
cm_log_negotiation() {
	local dyndbg=/sys/kernel/debug/dynamic_debug/control
	mount -t debugfs none /sys/kernel/debug 2>/dev/null || true
	if [ -w $dyndbg ]; then echo 'module xiw +p' >$dyndbg; fi
}

# cm_show_negotiation TITLE: the negotiation lines, counted.
cm_show_negotiation() {
	echo "--- what was negotiated$1:"
	dmesg | grep 'MPA rev' | sed 's/^\[[^]]*\] //' | sort | uniq -c  || true
}

# mpa_timeout_set SECONDS: xiw's MPA timeout, times XIW_TIME_FACTOR (a slow
# kernel takes seconds to tear a listener or a device down).
mpa_timeout_set() {
	echo $(($1 * ${XIW_TIME_FACTOR:-1})) >/sys/module/xiw/parameters/mpa_timeout
}

# pending_probe ADDR PORT: a TCP connection to a listener that never sends
# its MPA Request; succeeds if xiw closes it well before mpa_timeout (its
# listener or device went away), fails if only the timeout did.
pending_probe() {
	/usr/bin/python3 - "$1" "$2" "$(</sys/module/xiw/parameters/mpa_timeout)" <<'PY'
import socket, sys, time
mpa = float(sys.argv[3])
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.settimeout(4 * mpa)
t0 = time.monotonic()
try:
    s.recv(100)
except OSError:
    pass
dt = time.monotonic() - t0
print(f"pending connection closed after {dt:.1f} s (mpa_timeout {mpa:.0f} s)")
sys.exit(0 if dt < 0.75 * mpa else 1)
PY
}

# cm_no_resources_left HOST DEVICE: DEVICE on HOST keeps no QP and no
# cm_id after the connections ended; prints its counts.
cm_no_resources_left() {
	local left
	left=$(in_ns "$1" rdma resource show | grep "$2:" || true)
	echo "$1: $left"
	if grep -Eq ' (qp|cm_id) [1-9]' <<<"$left"; then
		echo "resources left on $2"
		return 1
	fi
}

# wait_established HOST FILTER: until HOST has an established TCP connection
# that matches the ss(8) FILTER (e.g. "dport = :7531"), at most 10 s times
# XIW_TIME_FACTOR.
wait_established() {
	for _ in $(seq 1 $((100 * ${XIW_TIME_FACTOR:-1}))); do
		in_ns "$1" ss -Htn state established "$2" | grep -q . && return 0
		sleep 0.1
	done
	echo "no established connection ($2) on host $1"
	return 1
}

