#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 1200
# The lifecycle soak's short run (tests/soak/soak.bash has the phases and
# their checks): many QPs and MRs, connection churn, kill -9 mid-transfer,
# link down and link delete, a namespace deleted, rmmod under connections,
# a memory cgroup limit; fault injection under the sanitizer kernel.  The
# long run is long.soak.
set -euo pipefail
exec "$(dirname "$0")/../soak/soak.bash"
