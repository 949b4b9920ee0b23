#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 1
# guest-timeout: 600
# Random verbs call sequences from a careless or malicious program
# (tests/hostile/verbs_fuzz.cpp): every object with any attributes, every
# modify_qp transition, work requests of every opcode in every state,
# connections to a peer made and dropped, destroy while in use, reuse after
# Error, workers killed or exiting with everything live.
# XIW_VERBS_SEQUENCES sequences (default 2000) within XIW_VERBS_SECONDS
# (default 240, times XIW_TIME_FACTOR), done between XIW_VERBS_LANES
# programs at once (default 1; lanes_lib.bash); XIW_VERBS_SEED replays a
# run of one lane (each lane prints its seed).  Fails if an oracle of the program fails, fewer
# sequences ran, the canary changed, or the device's resource counts are
# not back where they were; the harness adds the kernel log and `rmmod xiw`.
set -euo pipefail
# shellcheck source=lanes_lib.bash
source "$(dirname "$0")/lanes_lib.bash"

bin=${XIW_BUILD_DIR:?set by scripts/guest}/tests/guest/xiw_verbs_fuzz
sequences=${XIW_VERBS_SEQUENCES:-2000}
lanes_from_env VERBS "$sequences random verbs sequences"

# "pd 0 cq 0 qp 0 cm_id 0 mr 0 ctx 0 srq 0" of the device.
counts() {
	rdma resource show | sed -n "s/^[0-9]*: ${XIW_DEV_A:?}: *//p"
}
case_begin "$what"
before=$(counts)
echo "resources before: $before"
ulimit -l unlimited
run_lanes "$lanes" "$XIW_OUT/verbs_fuzz" $((seconds + 180)) "$bin" "${XIW_ADDR_A:?}" 7880 \
	"$sequences" "$seconds" "${seed[@]}"
# What killed workers left is released when their files close, which
# the kernel may finish a moment after their exit.
for _ in $(seq 50); do
	after=$(counts)
	[ "$after" = "$before" ] && break
	sleep 0.2
done
case_begin "resource counts back to where they were"
echo "resources after: $after"
if [ "$after" != "$before" ]; then
	echo "FAIL: the device's resource counts did not return to where they were"
	exit 1
fi
echo "verbs fuzz: ok"
