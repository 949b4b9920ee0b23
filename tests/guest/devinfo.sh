#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# ibv_devinfo sees xiw0 through the xiw provider as an iWARP RNIC.
set -euo pipefail

out=$(ibv_devinfo -v -d xiw0)
printf '%s\n' "$out"
grep -Eq '^[[:space:]]*transport:[[:space:]]+iWARP' <<<"$out"
# ibv_devinfo (rdma-core 44) prints no node type; the core exports it.
node_type=$(cat /sys/class/infiniband/xiw0/node_type)
echo "node_type: $node_type"
[ "$node_type" = "4: RNIC" ]
grep -Eq '^[[:space:]]*fw_ver:[[:space:]]+0\.1\.0$' <<<"$out"
grep -Eq 'state:[[:space:]]+PORT_ACTIVE' <<<"$out"
grep -Eq 'link_layer:[[:space:]]+Ethernet' <<<"$out"
