#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 600
# Regression tests for what a hostile peer did to xiw (issue "Hostile
# peers"): a fake peer on a plain TCP socket (xiw_wire_inject on host a)
# sends crafted FPDUs to an rdma_cm listener on xiw1 (host b):
#   send_mo_after_message  a Send segment that continues a message already
#                          completed (was: NULL dereference in softirq)
#   send_mo_after_full_receive
#                          the same after a Send that filled its receive
#                          (was: the receive completed a second time)
#   flush_no_type          a Flush with no disposition bit to a local-only
#                          STag (was: answered, an STag oracle)
#   write_qp_denied        an RDMA Write to a QP whose remote write access
#                          was taken away (was: placed)
#   stalled_write          dereg_mr while a Write is half received (was:
#                          dereg_mr blocked until the QP was destroyed)
#   terminate_last         a bad Send with more behind it, while Read
#                          Responses wait for the peer's window: they and
#                          the Terminate must all arrive, then a FIN (was:
#                          a RST, as the Sends behind were left unread,
#                          which dropped what was still queued)
# Each must end in the right Terminate (or, stalled_write, a prompt
# dereg_mr), with nothing placed that the case does not allow.  Before
# them, a flood of half-open connections must be held to mpa_backlog.
# Then read_before_atomic, with no MPA CRC (mpa_crc=0): a FetchAdd that
# arrives while the Read Response before it waits for TCP must not change
# what that Read Response carries (was: the Read Response went to TCP from
# the registered pages after the FetchAdd had changed them).  And
# read_after_dereg: once ibv_dereg_mr() of a region returned, what its
# pages hold is never sent, even by a Read Response that waited for TCP
# (was: what was framed from them went on to TCP, written since); and
# dereg_after_read: deregistering a region a Read is done with must not
# end the stream while a later Send still waits for TCP.
# Then exit_stalled_write: the listener's process exits while a Write into
# its region is half received; the exit must end at once (was: D state,
# the exit's dereg_mr waiting for the Write that only the QP's destroy,
# due after it, would have let go); and unregister_stalled_write, the
# same with the device deleted under the process (rdma link delete).
# Then, against a kernel ULP (tests/kmod/xiw_frmr_victim.ko on host b), a
# Read Response held back by a full TCP send buffer must not go on from
# pages the ULP got back, nor may the device write them once reused:
#   frmr_read_after_invalidate     the peer's Send with Invalidate
#   frmr_read_after_local_inv      the ULP's own Local Invalidate, then
#                                  its map_mr_sg to other pages
#   frmr_atomics_after_invalidate  a FetchAdd and an Atomic Write queued
#                                  behind the Read, then Send with Invalidate
# (was: the Read Response went on from the reused pages).
# Then kernel_ext_unnegotiated against the same ULP (probe_posts=1): its
# ib_post_send() of an RDMAP extension to a peer that did not negotiate
# them must fail with -EOPNOTSUPP (was: accepted, then the QP failed), and
# that of an RDMA Read with two SGEs (max_sge_rd is 1) with -EINVAL (was:
# accepted, then the QP failed).
# Then destroy_connecting: an rdma_cm client on xiw1 connects to a plain
# TCP listener on host a that never sends the MPA Reply and destroys its
# QP meanwhile: the destroy must not wait for the peer (was: the MPA
# timeout, 10 s).
# Last, no socket may be left lingering (xiw_linger.c) once the peers
# have gone.
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

inject=${XIW_BUILD_DIR:?}/tests/guest/xiw_wire_inject
port=7810

failed=
case_begin "half-open flood of 200 connections"
log=$XIW_OUT/hostile-peer-server.log
server_start "$log" "$inject" listen

# Half-open flood: 200 connections that never send their MPA Request.
# With mpa_backlog=50 xiw takes 50 of them into the MPA exchange; TCP's
# accept queue (listen backlog 4) holds a few more; the rest wait for
# their SYN to be answered.  Was: every one accepted, each held for
# mpa_timeout.  Then the cases below show the listener still serves.
params=/sys/module/xiw/parameters
echo 50 >"$params/mpa_backlog"
on a /usr/bin/python3 - "$XIW_ADDR_B" "$port" <<'PY' &
import socket, sys, time
conns = []
for _ in range(200):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect((sys.argv[1], int(sys.argv[2])))
    except BlockingIOError:
        pass
    conns.append(s)
time.sleep(8)
PY
flood=$!
sleep 5
held=$(ss -Htn state established "( sport = :$port )" | wc -l)
wait "$flood"
echo 128 >"$params/mpa_backlog"
echo "half-open flood: $held of 200 connections established on the listener's side"
if ((held > 60)); then
	failed="$failed half_open_flood"
fi
dmesg | grep -q "listener on port $port: 50 connections in the MPA exchange" ||
	failed="$failed half_open_flood(log)"
crafted="send_mo_after_message send_mo_after_full_receive flush_no_type write_qp_denied stalled_write terminate_last"
cases=${XIW_HOSTILE_CASES:-$crafted}
case_begin "crafted FPDUs, the listener serving after the flood"
client_cases "$log" 60 "$cases" "$inject"
expect_lines "$log" '^wire_inject server: %s: .*: ok$' "$cases"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }

case_begin "a Read Response that waits for TCP (no MPA CRC): an Atomic behind it, a deregistration"
ordered_log=$XIW_OUT/hostile-peer-ordered.log
held_cases="read_before_atomic read_after_dereg"
echo 0 >"$params/mpa_crc"
server_start "$ordered_log" "$inject" listen
client_cases "$ordered_log" 60 "$held_cases" "$inject"
echo 1 >"$params/mpa_crc"
expect_lines "$ordered_log" '^wire_inject server: %s: 0 bytes changed, .*: ok$' "$held_cases"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }

case_begin "a region deregistered once read, while a Send framed after it waits for TCP (no MPA CRC)"
# TCP buffers of 4 KiB on the listener's side: most of what xiw frames
# behind the Read Response waits in xiw, not in TCP.
dereg_log=$XIW_OUT/hostile-peer-dereg.log
wmem=$(on b sysctl -n net.ipv4.tcp_wmem)
on b sysctl -qw net.ipv4.tcp_wmem="4096 4096 4096"
echo 0 >"$params/mpa_crc"
server_start "$dereg_log" "$inject" listen
client_cases "$dereg_log" 60 dereg_after_read "$inject"
echo 1 >"$params/mpa_crc"
on b sysctl -qw net.ipv4.tcp_wmem="$wmem"
expect_lines "$dereg_log" '^wire_inject server: %s: 0 bytes changed, 1 receives completed: ok$' \
	dereg_after_read
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }

# ended_within PID SECONDS: PID ends within SECONDS (times the time
# factor); else says so with its state and kernel stack, and its
# children's (a process in D state is not waited for: it would hold the
# test there).
ended_within() {
	local pid=$1 seconds=$2 p
	for _ in $(seq 1 $((10 * seconds * ${XIW_TIME_FACTOR:-1}))); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	for p in "$pid" $(pgrep -P "$pid"); do
		echo "  process $p ($(tr '\0' ' ' <"/proc/$p/cmdline")) still exists after" \
			"$seconds s, state $(awk '{print $3}' "/proc/$p/stat"), in:"
		sed 's/^/    /' "/proc/$p/stack"
	done
	return 1
}
# stalled_end CASE: xiw_wire_inject's CASE (exit_stalled_write,
# unregister_stalled_write) against a listener of its own, whose process
# must end within 10 s of the connection's end.
stalled_end() {
	local which=$1 log=$XIW_OUT/hostile-peer-$1.log client
	server_start "$log" "$inject" listen
	on a timeout 60 "$inject" "$XIW_ADDR_B" "$port" "$which" &
	client=$!
	if [[ $which == unregister_stalled_write ]]; then
		for _ in $(seq 1 $((100 * ${XIW_TIME_FACTOR:-1}))); do
			grep -q "waiting for the device to go" "$log" && break
			sleep 0.1
		done
		local start=$EPOCHREALTIME
		rdma link delete "$XIW_DEV_B" &
		if ! ended_within $! 10; then
			echo "FAIL $which: rdma link delete $XIW_DEV_B blocked by a half-received Write"
			exit 1
		fi
		echo "rdma link delete $XIW_DEV_B took" \
			"$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }') s"
		rdma link add "$XIW_DEV_B" type xiw netdev "$XIW_NETDEV_B"
	fi
	wait "$client" || failed="$failed $which"
	if ! ended_within "$server" 10; then
		sed 's/^/  server: /' "$log"
		echo "FAIL $which: the listener's process did not end"
		exit 1
	fi
	server_finish "$log" || failed="$failed $which(status)"
}
case_begin "the listener's process exits while a Write into its region is half received"
stalled_end exit_stalled_write
expect_lines "$XIW_OUT/hostile-peer-exit_stalled_write.log" \
	'^wire_inject server: %s: exiting with the Write half received$' exit_stalled_write
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }

case_begin "the device is deleted while a Write into a region is half received"
stalled_end unregister_stalled_write
expect_lines "$XIW_OUT/hostile-peer-unregister_stalled_write.log" \
	'^wire_inject server: %s: the device or the connection went, exiting$' \
	unregister_stalled_write
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }

victim=${XIW_TEST_KMOD_DIR:?set by scripts/guest}/xiw_frmr_victim.ko
victim_log=
# victim_case CASE PORT PARAM...: xiw_wire_inject's CASE against
# xiw_frmr_victim.ko loaded with PARAMs on PORT; the ULP's kernel log
# lines of it (from its "listening on" line: each case has its own PORT)
# are printed and kept in $victim_log.
victim_case() {
	local which=$1 port=$2
	shift 2
	insmod "$victim" addr="$XIW_ADDR_B" port="$port" "$@"
	on a timeout 120 "$inject" "$XIW_ADDR_B" "$port" "$which" ||
		failed="$failed $which"
	rmmod xiw_frmr_victim
	victim_log=$(dmesg | sed -n "/xiw_frmr_victim: listening on .*:$port\$/,\$p" |
		grep xiw_frmr_victim || true)
	echo "$victim_log"
}
# victim_said CASE ERE...: the ULP logged a line that matches each ERE.
victim_said() {
	local which=$1 ere
	shift
	for ere; do
		grep -qE "$ere" <<<"$victim_log" || failed="$failed $which(no '$ere')"
	done
}
untouched='xiw_frmr_victim: 0 octets of the reused pages changed since'

case_begin "RDMA Read after the kernel consumer's peer invalidated its region"
victim_case frmr_read_after_invalidate 7830
victim_said frmr_read_after_invalidate 'invalidated by the peer, pages reused$' "$untouched"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }

case_begin "RDMA Read after the kernel consumer invalidated its region and mapped it anew"
victim_case frmr_read_after_local_inv 7832 local_inv=1
victim_said frmr_read_after_local_inv 'invalidated locally, pages reused$' \
	'region mapped to other pages: ' "$untouched"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }

case_begin "Atomics queued behind an RDMA Read when the peer invalidates the region"
victim_case frmr_atomics_after_invalidate 7833
victim_said frmr_atomics_after_invalidate 'invalidated by the peer, pages reused$' "$untouched"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }

case_begin "a kernel consumer posts what its QP cannot send"
victim_case kernel_ext_unnegotiated 7831 probe_posts=1
victim_said kernel_ext_unnegotiated 'Send with Immediate Data posted: -95$' \
	'RDMA Read with 2 SGEs posted: -22$'
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }

case_begin "destroy_qp while the peer never sends its MPA Reply"
mute_log=$XIW_OUT/hostile-peer-mute.log
on a timeout 60 "$inject" mute "$XIW_ADDR_A" 7899 >"$mute_log" 2>&1 &
mute=$!
for _ in $(seq 1 100); do
	grep -q listening "$mute_log" && break
	sleep 0.1
done
on b timeout 60 "$inject" destroy_connecting "$XIW_ADDR_A" 7899 || failed="$failed destroy_connecting"
wait "$mute" || failed="$failed mute"
cat "$mute_log"

# Every socket closed behind a Terminate lingered only until its peer's
# FIN, and mpa_timeout at most.
case_begin "no socket left lingering"
xiw_count_drains lingering "$(($(<"$params/mpa_timeout") + 5))" ||
	failed="$failed lingering"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }
echo "hostile peer: ok"
