# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Runs one hostile program several times at once (sourced, not a test
# itself).  Under the sanitizer kernel one ring fuzzer keeps the guest
# half idle, waiting on the kernel's workers (measured: 3 at once wrote
# 2.8 times the entries of one in the same minute), so the long runs
# split their work over lanes; the lanes also attack the same device from
# several processes at once.

# run_lanes LANES LOG TIMEOUT PROGRAM ADDR PORT WORK ARGS...: LANES copies
# of `PROGRAM ADDR PORT+i SHARE ARGS...` at once, for i from 0, SHARE being
# WORK divided among them (rounded up), each under `timeout TIMEOUT`.
# With more than one, each line they print is prefixed "[lane i] ", and
# lane i's own output is kept in LOG.i.  Fails if any copy failed.
run_lanes() {
	local lanes=$1 log=$2 timeout=$3 prog=$4 addr=$5 port=$6 work=$7 i pid status=0
	shift 7
	if ((lanes <= 1)); then
		timeout "$timeout" "$prog" "$addr" "$port" "$work" "$@"
		return
	fi
	local share=$(((work + lanes - 1) / lanes)) pids=()
	for ((i = 0; i < lanes; i++)); do
		timeout "$timeout" "$prog" "$addr" $((port + i)) "$share" "$@" \
			> >(tee "$log.$i" | sed -u "s/^/[lane $i] /") 2>&1 &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || status=1
	done
	# The prefixing pipelines end with their program's output.
	wait
	return "$status"
}
