#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 900
# MPA markers (RFC 5044 §4.3).  A receiver asks for them on the stream it
# receives with the M bit of its MPA Request or Reply (§7.1); xiw does when
# /sys/module/xiw/parameters/mpa_markers has 1 (connecting) or 2
# (accepting).  Between two xiw hosts, host a connecting: byte-checked
# Send/Recv, RDMA Write and Read of 0 B .. 4 MiB with markers b->a only
# (1), a->b only (2) and both ways (3), CRC on and off, both ways with MPA
# revision 1 (no RTR), and rping with markers both ways.  Then a fake peer on a plain TCP socket
# (xiw_wire_inject), which inserts, checks and strips markers by its own
# stream positions, against xiw1: two RDMA Writes (markers in a payload,
# in a DDP header, between a pad and the CRC), a Send and an RDMA Read of
# what was written, with markers both ways, to xiw only and from xiw only;
# and a leading marker with a wrong FPDUPTR, which xiw must answer with a
# Terminate LLP/MPA/marker error (2/0/0x03), placing nothing.
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"
# shellcheck source=cm_lib.bash
source "$(dirname "$0")/cm_lib.bash"

inject=${XIW_BUILD_DIR:?}/tests/guest/xiw_wire_inject
port=8200

cm_log_negotiation

# expect_markers INITIATOR RESPONDER: the last connection's two ends
# negotiated markers "tx T rx R" as given, e.g. "tx 0 rx 1".
expect_markers() {
	local last
	last=$(dmesg | grep 'MPA rev' | tail -2)
	if ! grep -q "initiator: .* markers $1 ext" <<<"$last" ||
		! grep -q "responder: .* markers $2 ext" <<<"$last"; then
		echo "FAIL: expected markers $1 (initiator), $2 (responder); xiw logged:"
		echo "$last"
		exit 1
	fi
	echo "negotiated: initiator markers $1, responder markers $2"
}

# Host a initiates: with 1 it asks for markers on what it receives.
declare -A initiator=([1]="tx 0 rx 1" [2]="tx 1 rx 0" [3]="tx 1 rx 1")
declare -A responder=([1]="tx 1 rx 0" [2]="tx 0 rx 1" [3]="tx 1 rx 1")
for m in 1 2 3; do
	for crc in on off; do
		set_param xiw mpa_markers "$m"
		set_param xiw mpa_crc "$([ "$crc" = on ] && echo 1 || echo 0)"
		case_begin "markers $m, CRC $crc"
		dp_run b a "$XIW_ADDR_B" || { echo "FAIL: data path with markers $m, CRC $crc"; exit 1; }
		expect_markers "${initiator[$m]}" "${responder[$m]}"
	done
done
set_param xiw mpa_crc 1
# MPA revision 1: no RFC 6581 RTR, so the first FPDU is a ULP's own.
set_param xiw mpa_rev 1
case_begin "markers 3, MPA revision 1"
dp_run b a "$XIW_ADDR_B" || { echo "FAIL: data path with markers 3, MPA revision 1"; exit 1; }
expect_markers "${initiator[3]}" "${responder[3]}"
[ "$(dmesg | grep 'MPA rev' | tail -2 | grep -c 'MPA rev 1 ')" = 2 ] ||
	{ echo "FAIL: the connection did not use MPA revision 1"; exit 1; }
set_param xiw mpa_rev 2

case_begin "rping, markers 3"
set_param xiw mpa_markers 3
rping_run b a "$XIW_ADDR_B" 200 || { echo "FAIL: rping with markers 3"; exit 1; }

case_begin "a fake peer (host a) that frames markers itself, to xiw1 (host b)"
# Its own framing first: markers inserted, then stripped and checked.
on a "$inject" selfcheck || { echo "FAIL: xiw_wire_inject selfcheck"; exit 1; }
failed=
# xiw reads mpa_markers when it accepts: 2 puts M into its MPA Reply, so
# these clients insert markers (and markers_both, bad_marker ask for them).
set_param xiw mpa_markers 2
log=$XIW_OUT/mpa-markers-inject-server.log
server_start "$log" "$inject" listen
client_cases "$log" 60 "markers_both markers_from_peer bad_marker" "$inject"
expect_lines "$log" '^wire_inject server: %s: 0 bytes changed, 1 receives completed: ok$' \
	"markers_both markers_from_peer"
expect_lines "$log" '^wire_inject server: %s: 0 bytes changed, 0 receives completed: ok$' \
	"bad_marker"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }
# No M in xiw's Reply: markers from xiw to the client only.
set_param xiw mpa_markers 0
log=$XIW_OUT/mpa-markers-inject-server-0.log
server_start "$log" "$inject" listen
client_cases "$log" 60 "markers_to_peer" "$inject"
expect_lines "$log" '^wire_inject server: %s: 0 bytes changed, 1 receives completed: ok$' \
	"markers_to_peer"
[ -z "$failed" ] || { echo "FAIL:$failed"; exit 1; }

set_param xiw mpa_markers 0
set_param xiw mpa_crc 1
echo "mpa markers: ok"
