#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 900
# xiw <-> xiw: Send/Recv, RDMA Write and Read of 0 B .. 4 MiB, byte-checked,
# with MPA CRC on and off, and rping.
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

case_begin "CRC on"
dp_run b a "$XIW_ADDR_B"
case_begin "CRC off"
set_param xiw mpa_crc 0
dp_run b a "$XIW_ADDR_B"
set_param xiw mpa_crc 1
case_begin "rping"
rping_run b a "$XIW_ADDR_B" 1000
# Depth-1 posting right after each completion: the SQ slot must be free by
# the time its completion is seen.
case_begin "perftest, CRC on"
perftest_run a ib_read_lat "$XIW_ADDR_A" -d xiw0 -s 2 -n 3000
perftest_run a ib_write_lat "$XIW_ADDR_A" -d xiw0 -s 2 -n 3000
perftest_run a ib_send_lat "$XIW_ADDR_A" -d xiw0 -s 2 -n 3000
