#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw --xiw-params "peer_to_peer=0 mpa_timeout=2"
# guest-timeout: 600
# Bad input on the wire during MPA setup (RFC 5044 §7.1): malformed,
# truncated or missing Requests and Replies get the connection closed or
# the connect failed - never an upcall for garbage, a hang or a leak - and
# a listener destroyed with connections still reading their Request takes
# them along.  A raw TCP peer written in Python plays the other side.
set -euo pipefail
. "$(dirname "$0")/cm_lib.bash"

A=$XIW_ADDR_A B=$XIW_ADDR_B
py=/usr/bin/python3

# raw_client HOST ADDR PORT HEXBYTES HOLD: connect from HOST, send the
# bytes, then expect xiw to close within HOLD seconds; prints "sent", then
# how long it took or what came instead (and fails).
raw_client() {
	in_ns "$1" "$py" - "${@:2}" <<'PY'
import socket, sys, time
addr, port, data, hold = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3]), float(sys.argv[4])
s = socket.create_connection((addr, port), timeout=5)
t0 = time.monotonic()
if data:
    s.sendall(data)
print("sent", flush=True)
s.settimeout(hold)
try:
    got = s.recv(100)
except ConnectionResetError:
    got = b''
except socket.timeout:
    print(f"not closed after {hold} s"); sys.exit(1)
if got:
    print(f"answered {got.hex()}"); sys.exit(1)
print(f"closed after {time.monotonic() - t0:.1f} s")
PY
}

# raw_server PORT REPLYHEX: on host b, accept one connection, read the
# MPA Request, answer with REPLYHEX (nothing if empty), wait for the close.
raw_server() {
	"$py" - "$@" <<'PY' &
import socket, sys
port, reply = int(sys.argv[1]), bytes.fromhex(sys.argv[2])
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("0.0.0.0", port))
ls.listen(1)
c, _ = ls.accept()
c.settimeout(20)
req = c.recv(600)
assert req[:16] == b"MPA ID Req Frame", req[:16]
if reply:
    c.sendall(reply)
try:
    while c.recv(100):
        pass
except OSError:
    pass
PY
}

key_req=$(printf 'MPA ID Req Frame' | od -An -tx1 | tr -d ' \n')
key_rep=$(printf 'MPA ID Rep Frame' | od -An -tx1 | tr -d ' \n')
bad_key=$(printf 'MPA ID Xeq Frame' | od -An -tx1 | tr -d ' \n')

# --- passive side: xiw0 listens on host a; garbage first, then a good
# client must still get through with the very first CONNECT_REQUEST.
port=7491
in_ns a "$cm_test" server "$A" $port cdisc &
spid=$!
wait_listen a $port
case_begin "bad key";        raw_client b "$A" $port "${bad_key}40010000" 3
case_begin "bad revision";   raw_client b "$A" $port "${key_req}40030000" 3
case_begin "PD_Length 600";  raw_client b "$A" $port "${key_req}40010258" 3
case_begin "R in a Request"; raw_client b "$A" $port "${key_req}60010000" 3
case_begin "v2 word cut";    raw_client b "$A" $port "${key_req}50020002abcd" 3
case_begin "FIN mid-frame";  "$py" - "$A" $port "${key_req}40010064" <<'PY'
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.sendall(bytes.fromhex(sys.argv[3]) + b"x" * 50)
s.shutdown(socket.SHUT_WR)
s.settimeout(3)
try:
    assert s.recv(100) == b""
except ConnectionResetError:
    pass
print("closed")
PY
case_begin "silent peer";    raw_client b "$A" $port "" 6
case_begin "half a header";  raw_client b "$A" $port "${key_req:0:20}" 6
case_begin "a good client right after them"
in_ns b "$cm_test" client "$A" $port cdisc
wait "$spid"
wait_no_conn a $port

# --- a listener destroyed while a connection still reads its Request
case_begin "listener destroyed while a connection reads its Request"
port=7492
mpa_timeout_set 2
# Not through in_ns: $! must be the server itself, to kill it.
ip netns exec a "$cm_test" server "$A" $port cdisc &
spid=$!
wait_listen a $port
pending_probe "$A" $port &
ppid=$!
# Once TCP connected it (python starts slowly under TCG): then the
# connection is one the listener still holds while it reads the Request.
wait_established a "sport = :$port"
kill "$spid"; wait "$spid" || true
wait "$ppid"
wait_no_conn a $port
echo 2 >/sys/module/xiw/parameters/mpa_timeout

# --- a Request that iw_cm drops after xiw handed it over: its listener
# (tests/kmod/xiw_cm_hold.ko, on host b) is destroyed while the event
# waits behind another listener's handler (as when a server process dies
# with requests in flight).  iw_cm then never accepts nor
# rejects it; xiw must close it once the ULP's time to answer is over
# (6 mpa_timeouts) and free its endpoint.  Was: held for ever, the TCP
# connection open and the endpoint leaked.
case_begin "a Request iw_cm dropped is closed when its answer is overdue"
insmod "${XIW_TEST_KMOD_DIR:?set by scripts/guest}/xiw_cm_hold.ko" \
	addr="$B" port_held=7497 port_dropped=7498
mpa=$(</sys/module/xiw/parameters/mpa_timeout)
hold_log=$XIW_OUT/cm-hold-held.log drop_log=$XIW_OUT/cm-hold-dropped.log
raw_client a "$B" 7497 "${key_req}40010000" $((9 * mpa)) >"$hold_log" 2>&1 &
held_pid=$!
# wait_for LOG PATTERN: until PATTERN is in LOG (a file or "dmesg").
wait_for() {
	for _ in $(seq 1 $((100 * ${XIW_TIME_FACTOR:-1}))); do
		if [ "$1" = dmesg ]; then dmesg; else cat "$1"; fi | grep -q "$2" &&
			return 0
		sleep 0.1
	done
	echo "no '$2' in $1"
	return 1
}
wait_for dmesg "xiw_cm_hold: holding" || { cat "$hold_log"; exit 1; }
raw_client a "$B" 7498 "${key_req}40010000" $((8 * mpa)) >"$drop_log" 2>&1 &
drop_pid=$!
wait_for "$drop_log" '^sent'
# xiw reads the Request and hands it to iw_cm in milliseconds.
sleep "${XIW_TIME_FACTOR:-1}"
echo 1 >/sys/module/xiw_cm_hold/parameters/release
wait "$held_pid" || true
hold_rc=0
wait "$drop_pid" || hold_rc=$?
echo "held listener's client: $(tail -n1 "$hold_log")"
echo "dropped listener's client: $(tail -n1 "$drop_log")"
rmmod xiw_cm_hold
dmesg | grep -E 'xiw_cm_hold|not answered in' | tail -n 5
if grep -q '^answered' "$drop_log" ||
	dmesg | grep -q "xiw_cm_hold: request on port 7498 delivered"; then
	echo "FAIL: the Request was answered, iw_cm did not drop it: nothing tested"
	exit 1
fi
((hold_rc == 0)) || { echo "FAIL: the dropped Request's connection stayed open"; exit 1; }
# Closed by the answer deadline, not by the listener's end: the Request
# had been handed to iw_cm.
closed=$(sed -n 's/^closed after \([0-9]*\)\..*/\1/p' "$drop_log")
if [ -z "$closed" ] || ((closed < 6 * mpa - 2)); then
	echo "FAIL: expected a close after $((6 * mpa)) s"
	exit 1
fi
dmesg | grep -q "connection request from .* not answered in $((6 * mpa)) s, closed" ||
	{ echo "FAIL: no kernel log line for the overdue Request"; exit 1; }
wait_no_conn b 7498

# --- active side: xiw0 (host a) against a raw server on host b
active() {
	local port=$1 reply=$2 scen=$3 rpid
	raw_server "$port" "$reply"
	rpid=$!
	wait_listen b "$port"
	in_ns a "$cm_test" client "$B" "$port" "$scen"
	wait "$rpid"
	wait_no_conn a "$port"
}
case_begin "no Reply at all";  active 7493 "" unreachable
case_begin "Reply, bad key";   active 7494 "${bad_key}40010000" connerr
case_begin "Reply, rev 3";     active 7495 "${key_rep}40030000" connerr
case_begin "Reply, PD 513";    active 7496 "${key_rep}40010201" connerr

case_begin "no QP, cm_id or endpoint left on the devices"
cm_no_resources_left a "$XIW_DEV_A"
xiw_count_drains endpoints
echo "cm robustness: ok"
