#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 600
# MPA connection setup between two xiw devices with the default module
# parameters: MPA rev 2 in peer-to-peer mode, so the responder reports
# ESTABLISHED only once the initiator's RTR (RFC 6581 §5.2) came in over
# the data path.
set -euo pipefail
. "$(dirname "$0")/cm_lib.bash"

cm_log_negotiation

cm_pairs a b 7501 cdisc sdisc reject
cm_pairs b a 7504 destroy cdisc

case_begin "what the connections negotiated"
cm_show_negotiation ""
dmesg | grep -q 'MPA rev 2 responder.* p2p 1 rtr 0x0' ||
	{ echo "no P2P connection with an RDMA Write RTR"; exit 1; }
case_begin "no QP or cm_id left on the devices"
cm_no_resources_left a "$XIW_DEV_A"
cm_no_resources_left b "$XIW_DEV_B"
echo "cm p2p: ok"
