#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 1
# guest-timeout: 600
# A malicious verbs library (tests/hostile/ring_fuzz.cpp): random and
# structured garbage in the send and receive rings of a connected QP,
# indices anywhere, entries rewritten while the kernel reads them, raw
# doorbells, against a peer QP of its own and a canary region of another
# process.  XIW_RING_ENTRIES entries (default 20000) within
# XIW_RING_SECONDS (default 240, times XIW_TIME_FACTOR), done between
# XIW_RING_LANES fuzzers at once (default 1; lanes_lib.bash); XIW_RING_SEED
# replays a run of one lane (each lane prints its seed).  Fails if a
# canary changed, fewer entries were written, or a call failed; the
# harness adds the kernel log and `rmmod xiw`.
set -euo pipefail
# shellcheck source=lanes_lib.bash
source "$(dirname "$0")/lanes_lib.bash"

bin=${XIW_BUILD_DIR:?set by scripts/guest}/tests/guest/xiw_ring_fuzz
entries=${XIW_RING_ENTRIES:-20000}
lanes_from_env RING "$entries ring entries"
case_begin "$what, canary intact"
run_lanes "$lanes" "$XIW_OUT/ring_fuzz" $((seconds + 120)) "$bin" "${XIW_ADDR_A:?}" 7870 \
	"$entries" "$seconds" "${seed[@]}"
