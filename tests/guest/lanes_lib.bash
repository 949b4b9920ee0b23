# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Runs one hostile program several times at once (sourced, not a test
# itself).  Under the sanitizer kernel one ring fuzzer keeps the guest
# half idle, one of its two CPUs busy (measured: 3 at once wrote 2.8 times
# the entries of one in the same minute, 8 at once 3.2 times), so the
# long runs share their work among lanes; the lanes also attack the same
# device from several processes at once.  Brings case_lib.bash along.

# shellcheck source=case_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/case_lib.bash"

# lanes_from_env NAME WHAT: the options of a test's lanes from its
# environment: sets `seconds` (XIW_NAME_SECONDS, default 240, times
# XIW_TIME_FACTOR), `lanes` (XIW_NAME_LANES, default 1), `seed` (an array,
# empty or XIW_NAME_SEED, which replays one lane, so makes one) and `what`
# (WHAT, with the lanes named if there are several).
# shellcheck disable=SC2034 # the variables are the sourcing test's
lanes_from_env() {
	local seconds_var="XIW_$1_SECONDS" lanes_var="XIW_$1_LANES" seed_var="XIW_$1_SEED"
	seconds=$((${!seconds_var:-240} * ${XIW_TIME_FACTOR:-1}))
	lanes=${!lanes_var:-1}
	seed=()
	[ -z "${!seed_var:-}" ] || { seed=("${!seed_var}"); lanes=1; }
	what=$2
	((lanes == 1)) || what+=" in $lanes lanes"
}

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
