#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Verbs objects through the provider, then no object left behind.
set -euo pipefail
# shellcheck source=case_lib.bash
source "$(dirname "$0")/case_lib.bash"

build=${XIW_BUILD_DIR:?set by scripts/guest}
case_begin "verbs objects (xiw_verbs_objects_test)"
"$build/tests/guest/xiw_verbs_objects_test"

case_begin "no object left on xiw0"

left=$(rdma resource show | awk '$2 == "xiw0:"')
echo "$left"
for kind in pd cq qp mr; do
	count=$(sed -n "s/.* $kind \([0-9]*\).*/\1/p" <<<"$left")
	[ "${count:-0}" = 0 ] || { echo "xiw0 still holds $count $kind"; exit 1; }
done
