#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The guest half of perf/profile: each message-rate benchmark, then each
# latency benchmark, on each device, one after another, with a
# software-clock profile of the whole guest (`perf record -e cpu-clock -a
# -g`) taken while it runs.  Writes to $XIW_OUT/profile/:
#   rates.csv           benchmark, device, messages per second, samples
#                       per CPU-second, CPUs, CPUs busy (/proc/stat)
#   BENCH.DEV.data      the profile (perf report -i ... in this guest)
#   BENCH.DEV.script.gz its samples with their kernel call chains, named
#                       here, where the guest's symbols are
#                       (perf/profile_report.py reads them)
set -euo pipefail

out=$XIW_OUT/profile
# perf record takes many seconds to start in this guest (it reads every
# process's maps over 9p): it starts with its events off, before the
# benchmark, and a control FIFO turns them on once the stream runs and off
# before it ends; a benchmark that ended first makes the row invalid.
# XIW_PROFILE_ONLY: a regular expression on the benchmarks' names below.
run_secs=${XIW_PROFILE_RUN_SECS:-40}
warmup_secs=6
sample_secs=6
sample_period_ns=1000000
port=19500
# FIFOs cannot live on the 9p share behind $XIW_OUT.
fifos=$(mktemp -d)
mkdir -p "$out"
echo "benchmark,device,msgs_per_s,sample_hz,cpus,busy_cpus" >"$out/rates.csv"

# shellcheck source=../scripts/lib/guest-devices.bash
source "$(dirname "$0")/../scripts/lib/guest-devices.bash"

# cpu_ticks: the guest's non-idle and all CPU time so far, in clock ticks.
cpu_ticks() {
	awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8; exit}' \
		/proc/stat
}

# perf_control CMD: sends CMD to the running perf record and waits (at
# most a minute: it may still be starting) for its ack.
perf_control() {
	# shellcheck disable=SC2016 # expanded by the inner shell
	timeout 60 bash -c 'echo "$1" >"$2" && read -r _ <"$3"' _ "$1" "$fifos/ctl" "$fifos/ack"
}

# profile NAME DEV TOOL ARGS...: runs TOOL's server and client on DEV for
# run_secs, profiles the guest for sample_secs in the middle, records the
# message rate and how many CPUs /proc/stat saw busy meanwhile (the profile's
# own non-idle share must agree: perf/profile_report.py prints both).
profile() {
	local name=$1 dev=$2 tool=$3 addr rate busy ticks_before ticks_after perf_pid
	shift 3
	[[ $name =~ ${XIW_PROFILE_ONLY:-.} ]] || return 0
	addr=$(addr_of "$dev")
	[ "$dev" = rxe0 ] && set -- -x 1 "$@"
	port=$((port + 1))
	rm -f "$fifos/ctl" "$fifos/ack"
	mkfifo "$fifos/ctl" "$fifos/ack"
	perf record -q -e cpu-clock -c "$sample_period_ns" -a -g -D -1 \
		--control "fifo:$fifos/ctl,$fifos/ack" -o "$out/$name.$dev.data" \
		-- sleep $((run_secs + 60)) 2>>"$out/perf.log" &
	perf_pid=$!
	timeout 180 "$tool" -R -d "$dev" -p "$port" -D "$run_secs" "$@" \
		>"$out/server.log" 2>&1 &
	local server=$!
	wait_cm_listening "$port" || true
	timeout 180 "$tool" -R -d "$dev" -p "$port" -D "$run_secs" "$@" "$addr" \
		>"$out/client.log" 2>&1 &
	local client=$!
	sleep "$warmup_secs"
	perf_control enable || echo "profile: perf did not take 'enable'" >&2
	ticks_before=$(cpu_ticks)
	sleep "$sample_secs"
	ticks_after=$(cpu_ticks)
	perf_control disable || echo "profile: perf did not take 'disable'" >&2
	local streaming=1
	kill -0 "$client" 2>/dev/null || streaming=0
	kill -INT "$perf_pid" 2>/dev/null || true
	wait "$perf_pid" 2>/dev/null || true
	if ! wait "$client"; then
		echo "profile: $name on $dev failed" >&2
		cat "$out/client.log" "$out/server.log" >&2
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
		return 0
	fi
	wait "$server" || true
	if ((!streaming)); then
		echo "profile: $name on $dev ended before its profile did; not recorded" >&2
		return 0
	fi
	# The result row: size, iterations, then peak and average MB/s and
	# Mpps (bandwidth tests) or the average latency in us (latency tests,
	# one message in flight: messages per second are 1e6 / t_avg).
	rate=$(awk '/t_avg/ {lat = 1}
		/^[[:space:]]*[0-9]+[[:space:]]+[0-9]+/ {r = lat ? 1 / $3 : $5}
		END {printf "%.0f", r * 1e6}' "$out/client.log")
	busy=$(awk -v a="$ticks_before" -v b="$ticks_after" -v n="$(nproc)" 'BEGIN {
		split(a, x, " "); split(b, y, " ")
		printf "%.2f", n * (y[1] - x[1]) / (y[2] - x[2])
	}')
	echo "$name,$dev,$rate,$((1000000000 / sample_period_ns)),$(nproc),$busy" \
		>>"$out/rates.csv"
	perf script -i "$out/$name.$dev.data" -F comm,cpu,ip,sym,dso 2>>"$out/perf.log" |
		gzip >"$out/$name.$dev.script.gz"
	echo "profile: $name on $dev: $rate messages/s"
}

# Once for nothing: the first perf record of a boot reads everything cold
# and would start after the first benchmark ended.
perf record -q -a -o "$fifos/warm.data" -- true >/dev/null 2>&1 || true
for dev in xiw0 siw0 rxe0; do
	profile write_bw_64 "$dev" ib_write_bw -s 64
	profile send_bw_64 "$dev" ib_send_bw -s 64
	profile read_bw_8_o16 "$dev" ib_read_bw -s 8 -o 16
	# siw has no atomics.
	[ "$dev" = siw0 ] && continue
	profile atomic_faa_o16 "$dev" ib_atomic_bw -A FETCH_AND_ADD -o 16
	profile atomic_faa_o1 "$dev" ib_atomic_bw -A FETCH_AND_ADD -o 1
done
# One operation at a time: the kernel's share of a message is on the
# critical path (the poster's system call sends, and over loopback the
# receiver's parsing runs in the same call), user space is both sides
# polling.
for dev in xiw0 siw0 rxe0; do
	profile write_lat_2 "$dev" ib_write_lat -s 2
	profile send_lat_2 "$dev" ib_send_lat -s 2
	profile read_lat_2 "$dev" ib_read_lat -s 2
done
