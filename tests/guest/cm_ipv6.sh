#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-timeout: 600
# xiw over IPv6 (2001:db8::/32, the documentation range): a listener on
# xiw0's IPv6 address and one on the IPv6 wildcard each take a connection
# from the same host (through the loopback device), served by xiw0; then
# rping moves data over it.
set -euo pipefail
. "$(dirname "$0")/cm_lib.bash"

A6=2001:db8::1
ip -6 addr add "$A6/64" dev "$XIW_NETDEV_A" nodad
# Until the address is usable (no DAD, but the route appears first).
for _ in $(seq 1 50); do
	ip -6 addr show dev "$XIW_NETDEV_A" | grep -q "$A6" && break
	sleep 0.1
done

cm_pair b "$A6" b 7531 cdisc
cm_pair b "$A6" b 7532 sdisc

case_begin "wildcard listen on [::]:7533, client to $A6"
"$cm_test" server :: 7533 cdisc >"$XIW_OUT/server.out" 2>&1 &
spid=$!
wait_listen b 7533
ss -Hltn "sport = :7533"
"$cm_test" client "$A6" 7533 cdisc
wait "$spid" || { cat "$XIW_OUT/server.out"; exit 1; }
cat "$XIW_OUT/server.out"
grep -q "device $XIW_DEV_A" "$XIW_OUT/server.out" ||
	{ echo "connection not served by $XIW_DEV_A"; exit 1; }
wait_no_conn b 7533

case_begin "rping over IPv6"
ulimit -l unlimited
rping -s -a "$A6" -C 50 -V >"$XIW_OUT/rping-server.out" 2>&1 &
spid=$!
wait_listen b 7174
rping -c -a "$A6" -C 50 -V -S 64 || { cat "$XIW_OUT/rping-server.out"; exit 1; }
wait "$spid" || { cat "$XIW_OUT/rping-server.out"; exit 1; }
echo "rping: 50 validated pings"

case_begin "no QP or cm_id left on the devices"
cm_no_resources_left b "$XIW_DEV_A"
echo "cm ipv6: ok"
