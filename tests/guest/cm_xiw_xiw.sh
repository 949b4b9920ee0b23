#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw --xiw-params peer_to_peer=0
# guest-timeout: 600
# MPA connection setup between two xiw devices through librdmacm: private
# data both ways, reject with private data, disconnect from either side,
# destroy without disconnect, connect to nobody.  Without the RFC 6581
# RTR (peer_to_peer=0), so no data moves.
set -euo pipefail
. "$(dirname "$0")/cm_lib.bash"

A=$XIW_ADDR_A B=$XIW_ADDR_B
cm_pair a "$A" b 7471 cdisc
cm_pair a "$A" b 7472 sdisc
cm_pair a "$A" b 7473 reject
cm_pair a "$A" b 7474 destroy
cm_pair b "$B" a 7475 cdisc
cm_pair b "$B" a 7476 sdisc
cm_pair b "$B" a 7477 reject
cm_refused b "$A" 7478
cm_refused a "$B" 7478
# Nothing may be left behind on either device.
case_begin "no QP or cm_id left on the devices"
cm_no_resources_left a "$XIW_DEV_A"
cm_no_resources_left b "$XIW_DEV_B"
echo "cm xiw-xiw: ok"
