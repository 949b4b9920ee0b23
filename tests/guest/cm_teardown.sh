#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw --xiw-params "peer_to_peer=0 mpa_timeout=5"
# guest-timeout: 600
# Devices going away under live connections and listeners: the xiw link is
# deleted, then the netdev itself, while a connection is established and a
# listener has a connection still reading its MPA Request.  Everything must
# end promptly - both sides see the end of the connection, the pending
# connection is closed - and the module unloads cleanly afterwards.
set -euo pipefail
. "$(dirname "$0")/cm_lib.bash"

A=$XIW_ADDR_A
mpa_timeout_set 5

# hold_pair PORT: an established connection, server on a, client on b.
hold_pair() {
	ip netns exec a "$cm_test" server "$A" "$1" hold &
	spid=$!
	wait_listen a "$1"
	"$cm_test" client "$A" "$1" hold &
	cpid=$!
	wait_established b "dport = :$1"
	sleep 1
}

# A second listener with a connection that never sends its Request.
pending() {
	ip netns exec a "$cm_test" server "$A" "$1" cdisc &
	lpid=$!
	wait_listen a "$1"
	pending_probe "$A" "$1" &
	ppid=$!
	# Until the connection is up (Python starts slowly in the guest).
	wait_established b "dport = :$1"
	sleep 0.5
}

case_begin "rdma link del under a connection and a listener"
hold_pair 7531
pending 7532
ip netns exec a rdma link del "$XIW_DEV_A"
wait "$spid"; wait "$cpid"; wait "$ppid"
wait "$lpid" && { echo "listener survived its device"; exit 1; }
wait_no_conn a 7531; wait_no_conn a 7532; wait_no_conn b 7531

case_begin "the device again, and its netdev deleted under a connection"
ip netns exec a rdma link add "$XIW_DEV_A" type xiw netdev "$XIW_NETDEV_A"
rdma dev set "$XIW_DEV_A" netns a	# as scripts/lib/guest-init does
sleep 1
hold_pair 7533
ip netns exec a "$cm_test" server "$A" 7534 cdisc &
lpid=$!
wait_listen a 7534
# Deleting one end of the veth pair takes both: both xiw devices go.
# (Nothing can reach a peer any more, so no pending connection here.)
ip netns exec a ip link del "$XIW_NETDEV_A"
wait "$spid"; wait "$cpid"
wait "$lpid" && { echo "listener survived its device"; exit 1; }
rdma dev
ip netns exec a rdma dev
# (The listeners report FAIL above: they get DEVICE_REMOVAL instead of a
# CONNECT_REQUEST, which is what this test wants.)
echo "cm teardown: ok"
