# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Runs one hostile program several times at once (sourced, not a test
# itself).  Under the sanitizer kernel one ring fuzzer keeps the guest
# half idle, one of its two CPUs busy (measured: 3 at once wrote 2.8 times
# the entries of one in the same minute, 8 at once 3.2 times), so the
# long runs share their work among lanes; the lanes also attack the same
# device from several processes at once.

# run_lanes LANES LOG TIMEOUT PROGRAM ADDR PORT WORK ARGS...: LANES copies
# of `PROGRAM ADDR PORT+i WORK ARGS...` at once, for i from 0, each under
# `timeout TIMEOUT`.  They count their work in one shared counter (the
# file $XIW_LANE_COUNTER, see work_count in tests/hostile/hostile_lib.h)
# and all stop once WORK is done between them.  With more than one, each
# line they print is prefixed "[lane i] ", and lane i's own output is kept
# in LOG.i.  Fails if any copy failed.
run_lanes() {
	local lanes=$1 log=$2 timeout=$3 prog=$4 addr=$5 port=$6 work=$7 i pid status=0
	shift 7
	if ((lanes <= 1)); then
		timeout "$timeout" "$prog" "$addr" "$port" "$work" "$@"
		return
	fi
	local counter pids=()
	counter=$(mktemp)
	head -c 8 /dev/zero >"$counter"
	for ((i = 0; i < lanes; i++)); do
		XIW_LANE_COUNTER=$counter timeout "$timeout" "$prog" "$addr" $((port + i)) "$work" "$@" \
			> >(tee "$log.$i" | sed -u "s/^/[lane $i] /") 2>&1 &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || status=1
	done
	# The prefixing pipelines end with their program's output.
	wait
	echo "lanes: $(od -An -t u8 "$counter" | tr -d ' ') of $work done between $lanes"
	rm -f "$counter"
	return "$status"
}
