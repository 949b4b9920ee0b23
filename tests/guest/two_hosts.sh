#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer siw
# Two hosts in one guest: each network namespace sees its own device only,
# and the two reach each other over the veth pair.
set -euo pipefail
# shellcheck source=case_lib.bash
source "$(dirname "$0")/case_lib.bash"

devices_in() { ip netns exec "$1" rdma dev | awk '{print $2}' | sed 's/:$//' | tr '\n' ' '; }

case_begin "each host sees only its own device"
a=$(devices_in a)
b=$(devices_in b)
echo "host a: $a"
echo "host b: $b"
[ "$a" = "$XIW_DEV_A " ] || { echo "host a must see only $XIW_DEV_A"; exit 1; }
[ "$b" = "$XIW_DEV_B " ] || { echo "host b must see only $XIW_DEV_B"; exit 1; }

ip netns exec a ibv_devices | grep -q "$XIW_DEV_A"
ip netns exec b ibv_devices | grep -q "$XIW_DEV_B"
case_begin "the hosts reach each other"
# Debian has no ping by default; busybox-static does.
ip netns exec a busybox ping -c 1 -W 2 "$XIW_ADDR_B" >/dev/null
ip netns exec b busybox ping -c 1 -W 2 "$XIW_ADDR_A" >/dev/null
echo "two hosts: ok"
