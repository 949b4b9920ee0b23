#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer siw
# guest-timeout: 900
# xiw <-> upstream siw, both directions: byte-checked Send/Recv, Write and
# Read of 0 B .. 4 MiB with CRC on and off (siw follows what xiw asks
# for: its CRC policy is fixed at "use it if the peer does"), and rping.
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

for crc in 1 0; do
	case_begin "CRC $crc: xiw client -> siw server"
	set_param xiw mpa_crc "$crc"
	dp_run b a "$XIW_ADDR_B"
	case_begin "CRC $crc: siw client -> xiw server"
	dp_run a b "$XIW_ADDR_A"
done
case_begin "rping: xiw client -> siw server"
rping_run b a "$XIW_ADDR_B" 200
case_begin "rping: siw client -> xiw server"
rping_run a b "$XIW_ADDR_A" 200
