#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer siw
# guest-timeout: 600
# xiw with its default module parameters against upstream siw: xiw asks
# for peer-to-peer mode and CRC, siw (which never asks for P2P itself)
# answers with an RDMA Write RTR, which xiw's data path sends first.  In
# the other direction siw's Request has no P2P, so none is used.
set -euo pipefail
. "$(dirname "$0")/cm_lib.bash"

cm_log_negotiation

cm_pairs b a 7511 cdisc sdisc reject
cm_pairs a b 7514 cdisc sdisc

case_begin "what the connections negotiated"
cm_show_negotiation " (xiw's view)"
dmesg | grep -q 'MPA rev 2 initiator.* crc 1 .* ext 0 p2p 1 rtr 0x0' ||
	{ echo "siw did not answer P2P with a Write RTR, or xiw got it wrong"; exit 1; }
case_begin "no QP or cm_id left on the devices"
cm_no_resources_left a "$XIW_DEV_A"
echo "cm xiw-siw p2p: ok"
