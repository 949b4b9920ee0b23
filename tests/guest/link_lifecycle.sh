#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Device life cycle: links come and go, follow their netdev, and the
# module unloads cleanly afterwards (the harness checks dmesg).
set -euo pipefail
# shellcheck source=case_lib.bash
source "$(dirname "$0")/case_lib.bash"

port_state() {
	ibv_devinfo -d "$1" | sed -n 's/^[[:space:]]*state:[[:space:]]*\([A-Z_]*\).*/\1/p'
}

expect_devices() {
	local want=$1 got
	got=$(rdma dev | awk '$2 ~ /^xiw/ {sub(/:$/, "", $2); print $2}' | sort | tr '\n' ' ')
	[ "$got" = "$want" ] || { echo "devices: '$got', expected '$want'"; exit 1; }
}

case_begin "one device per netdev, Ethernet-like netdevs only"
expect_devices "xiw0 "

# The same netdev cannot carry two xiw devices.
if rdma link add xiw9 type xiw netdev d0 2>/dev/null; then
	echo "a second xiw device on d0 was accepted"; exit 1
fi
# iWARP needs an Ethernet-like netdev.
ip link add xiwtun type ipip remote 192.0.2.9 local 192.0.2.1
if rdma link add xiw9 type xiw netdev xiwtun 2>/dev/null; then
	echo "xiw accepted an IP tunnel netdev"; exit 1
fi
ip link del xiwtun

case_begin "20 times rdma link delete and add"
for _ in $(seq 1 20); do
	rdma link delete xiw0
	rdma link add xiw0 type xiw netdev d0
done
expect_devices "xiw0 "

case_begin "the port follows the carrier of its netdev"
[ "$(port_state xiw0)" = PORT_ACTIVE ]
ip link set d0 down
[ "$(port_state xiw0)" = PORT_DOWN ]
ip link set d0 up
[ "$(port_state xiw0)" = PORT_ACTIVE ]

case_begin "unregistering the netdev takes the device with it"
ip link add dtmp type dummy
ip link set dtmp up
rdma link add xiw5 type xiw netdev dtmp
expect_devices "xiw0 xiw5 "
ip link del dtmp
for _ in $(seq 1 50); do
	rdma dev | grep -q xiw5 || break
	sleep 0.1
done
expect_devices "xiw0 "

case_begin "a device still registered at unload is removed by rmmod"
ip link add dtmp type dummy
rdma link add xiw6 type xiw netdev dtmp
rmmod xiw
expect_devices ""
lsmod | grep -q '^xiw ' && { echo "xiw still loaded"; exit 1; }
ip link del dtmp
echo "link life cycle: ok"
