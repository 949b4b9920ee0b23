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

cm_pairs a b 7471 cdisc sdisc reject destroy
cm_pairs b a 7475 cdisc sdisc reject
cm_refused b "$XIW_ADDR_A" 7478
cm_refused a "$XIW_ADDR_B" 7478
# Nothing may be left behind on either device.
case_begin "no QP or cm_id left on the devices"
cm_no_resources_left a "$XIW_DEV_A"
cm_no_resources_left b "$XIW_DEV_B"
echo "cm xiw-xiw: ok"
