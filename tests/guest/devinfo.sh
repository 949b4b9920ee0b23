#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# ibv_devinfo sees xiw0 through the xiw provider as an iWARP RNIC.
set -euo pipefail
# shellcheck source=case_lib.bash
source "$(dirname "$0")/case_lib.bash"

case_begin "ibv_devinfo: iWARP, firmware version, port active, Ethernet"
out=$(ibv_devinfo -v -d xiw0)
printf '%s\n' "$out"
grep -Eq '^[[:space:]]*transport:[[:space:]]+iWARP' <<<"$out"
grep -Eq '^[[:space:]]*fw_ver:[[:space:]]+0\.1\.0$' <<<"$out"
grep -Eq 'state:[[:space:]]+PORT_ACTIVE' <<<"$out"
grep -Eq 'link_layer:[[:space:]]+Ethernet' <<<"$out"

case_begin "node type RNIC"
# ibv_devinfo (rdma-core 44) prints no node type; the core exports it.
node_type=$(cat /sys/class/infiniband/xiw0/node_type)
echo "node_type: $node_type"
[ "$node_type" = "4: RNIC" ]
