#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 1 --peer siw --xiw-params peer_to_peer=0
# guest-timeout: 600
# A wildcard listen on one host with two RNICs: rdma_cm makes one listener
# per device, all on the same port, so xiw must take only its own share
# and leave the port to siw for siw's (siw binds the wildcard to its
# netdev).  A connection to xiw's address from the same host, which comes
# through the loopback device, must reach xiw's listener.  (siw cannot
# take such connections for its own address: its listener is bound to
# its netdev; that is siw's business and not tested here.)
set -euo pipefail
. "$(dirname "$0")/cm_lib.bash"

A=$XIW_ADDR_A
for port in 7521 7522 7523; do
	case_begin "wildcard listen on :$port, client to $A"
	"$cm_test" server 0.0.0.0 $port cdisc >"$XIW_OUT/server.out" 2>&1 &
	spid=$!
	wait_listen b $port
	ss -Hltn "sport = :$port"
	# rdma_listen succeeded, so both RNICs listen: siw on the wildcard
	# (through d1), xiw on its address (through d0 and lo).
	ss -Hltn "sport = :$port" | grep -q "%d1:$port" ||
		{ echo "siw does not listen"; kill $spid; exit 1; }
	[ "$(ss -Hltn "sport = :$port" | grep -c "$A%")" = 2 ] ||
		{ echo "xiw does not listen on $A through d0 and lo"; kill $spid; exit 1; }
	"$cm_test" client "$A" $port cdisc
	wait "$spid" || { cat "$XIW_OUT/server.out"; exit 1; }
	cat "$XIW_OUT/server.out"
	grep -q "device $XIW_DEV_A" "$XIW_OUT/server.out" ||
		{ echo "connection not served by $XIW_DEV_A"; exit 1; }
	wait_no_conn b $port
done
case_begin "no QP or cm_id left on the devices"
cm_no_resources_left b "$XIW_DEV_A"
echo "cm wildcard: ok"
