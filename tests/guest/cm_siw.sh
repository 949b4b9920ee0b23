#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer siw --xiw-params peer_to_peer=0
# guest-timeout: 600
# MPA connection setup between xiw and upstream siw through librdmacm,
# both directions: private data both ways, reject with private data,
# disconnect from either side, destroy without disconnect.  siw never asks
# for the RFC 6581 RTR; xiw runs with peer_to_peer=0 so that it does not
# ask either.  The negotiated parameters are printed from xiw's debug log.
set -euo pipefail
. "$(dirname "$0")/cm_lib.bash"

cm_log_negotiation

# xiw (host a) connects to siw (host b)
cm_pairs b a 7481 cdisc sdisc reject destroy
# siw connects to xiw
cm_pairs a b 7485 cdisc sdisc reject destroy
cm_refused b "$XIW_ADDR_A" 7489

case_begin "what the connections negotiated"
cm_show_negotiation " (xiw's view)"
# siw echoes the Request's Res bits: that must not pass for the extensions.
if dmesg | grep -q 'MPA rev.* ext 1'; then
	echo "xiw believes siw speaks the RDMAP extensions"; exit 1
fi
case_begin "no QP or cm_id left on the devices"
cm_no_resources_left a "$XIW_DEV_A"
echo "cm xiw-siw: ok"
