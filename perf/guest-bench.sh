#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The guest half of perf/run: every benchmark on every device, interleaved,
# XIW_PERF_REPS times.  Writes $XIW_OUT/results.csv:
#   repetition,benchmark,device,value,unit
# XIW_PERF_ONLY (an extended regex) keeps the benchmarks whose name matches
# and XIW_PERF_DEVICES (default "xiw0 xiw0-nocrc siw0 rxe0 tcp") the
# devices: for quick comparisons while working on one path.
# Server and client run on one host: with a local address perftest and rping
# use the device that owns it on both ends.
set -euo pipefail

reps=${XIW_PERF_REPS:-3}
only=${XIW_PERF_ONLY:-}
devices=" ${XIW_PERF_DEVICES:-xiw0 xiw0-nocrc siw0 rxe0 tcp} "
imm_lat_bin=${XIW_BUILD_DIR:?set by scripts/guest}/perf/xiw_imm_lat
commit_bench_bin=$XIW_BUILD_DIR/perf/xiw_commit_bench
csv=$XIW_OUT/results.csv
port=19000
label=
echo "repetition,benchmark,device,value,unit" >"$csv"

# shellcheck source=../scripts/lib/guest-devices.bash
source "$(dirname "$0")/../scripts/lib/guest-devices.bash"

# perftest TOOL DEV ADDR ARGS...: prints the client's result line.  All
# devices connect through rdma_cm (-R); RoCE (rxe) also needs the GID of
# the IPv4 address (index 1).
perftest() {
	local tool=$1 dev=$2 addr=$3
	shift 3
	[ "$dev" = rxe0 ] && set -- -x 1 "$@"
	port=$((port + 1))
	timeout 300 "$tool" -R -d "$dev" -p "$port" "$@" >"$XIW_OUT/server.log" 2>&1 &
	local server=$!
	wait_cm_listening "$port" || true
	timeout 300 "$tool" -R -d "$dev" -p "$port" "$@" "$addr" >"$XIW_OUT/client.log" 2>&1 || {
		cat "$XIW_OUT/client.log" "$XIW_OUT/server.log" >&2
		kill "$server" 2>/dev/null || true
		return 1
	}
	wait "$server" || true
	# The result row is the last line that starts with the message size.
	grep -E '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+' "$XIW_OUT/client.log" | tail -n 1
}

# wanted NAME: whether benchmark NAME is to run (XIW_PERF_ONLY).
wanted() {
	[[ -z $only || $1 =~ $only ]]
}

# record REP BENCHMARK DEVICE VALUE UNIT; the device is recorded under
# $label when bench_device set one.
record() {
	local dev=${label:-$3}
	echo "$1,$2,$dev,$4,$5" >>"$csv"
	echo "rep $1: $2 on $dev: $4 $5"
}

lat() { # REP NAME TOOL SIZE DEV ADDR: typical latency (us)
	local line
	wanted "$2" || return 0
	line=$(perftest "$3" "$5" "$6" -s "$4" -n 2000) || return 0
	record "$1" "$2" "$5" "$(awk '{print $5}' <<<"$line")" us
}

bw() { # REP NAME TOOL SIZE DEV ADDR: average bandwidth (MB/s)
	local line
	wanted "$2" || return 0
	line=$(perftest "$3" "$5" "$6" -s "$4" -n 2000) || return 0
	record "$1" "$2" "$5" "$(awk '{print $4}' <<<"$line")" MB/s
}

atomic_lat() { # REP NAME TYPE DEV ADDR: typical atomic latency (us)
	local line
	wanted "$2" || return 0
	line=$(perftest ib_atomic_lat "$4" "$5" -A "$3" -n 2000) || return 0
	record "$1" "$2" "$4" "$(awk '{print $5}' <<<"$line")" us
}

# rate REP NAME TOOL DEV ADDR ARGS...: a bandwidth tool's message rate
# (thousands of messages a second, perftest's MsgRate) with ARGS.
rate() {
	local line
	wanted "$2" || return 0
	line=$(perftest "$3" "$4" "$5" "${@:6}" -n 5000) || return 0
	record "$1" "$2" "$4" "$(awk '{print $5 * 1000}' <<<"$line")" "K msg/s"
}

# imm_lat REP MODE DEV ADDR: xiw_imm_lat's typical one-way latency (us) of
# 2-byte RDMA Writes, with (write_imm) or without (write) immediate data.
imm_lat() {
	local out
	wanted "$2 2 B (xiw_imm_lat)" || return 0
	port=$((port + 1))
	timeout 300 "$imm_lat_bin" server "$4" "$port" >"$XIW_OUT/server.log" 2>&1 &
	local server=$!
	sleep 2
	out=$(timeout 300 "$imm_lat_bin" client "$4" "$port" "$2" 2 2000) || {
		kill "$server" 2>/dev/null || true
		return 0
	}
	wait "$server" || true
	record "$1" "$2 2 B (xiw_imm_lat)" "$3" "$(awk '{print $6}' <<<"$out")" us
}

# commit_bench REP DEV ADDR: xiw_commit_bench's rows: typical latency (us)
# of Flush global/persistent of 4 KiB and 1 MiB, RDMA Read, Atomic Write and
# RDMA Write of 8 B, and (xiw) Verify CRC32c/SHA-256 MB/s.  The flushed
# memory is $commit_target.
commit_bench() {
	local out name value unit tag
	wanted xiw_commit_bench || return 0
	port=$((port + 1))
	timeout 300 "$commit_bench_bin" server "$3" "$port" "$commit_target" \
		>"$XIW_OUT/server.log" 2>&1 &
	local server=$!
	sleep 2
	out=$(timeout 600 "$commit_bench_bin" client "$3" "$port" 1000) || {
		cat "$XIW_OUT/server.log" >&2
		kill "$server" 2>/dev/null || true
		return 0
	}
	wait "$server" || true
	while IFS=$'\t' read -r tag name value unit; do
		[ "$tag" = commit_bench ] || continue
		record "$1" "$name (xiw_commit_bench)" "$2" "$value" "$unit"
	done <<<"$out"
}

rping_time() { # REP DEV ADDR: microseconds per validated ping, 200 pings
	local start end
	wanted "rping -C 200 (per ping)" || return 0
	port=$((port + 1))
	rping -s -a "$3" -p "$port" -C 200 -V >/dev/null 2>&1 &
	local server=$!
	sleep 2
	start=$(date +%s%N)
	rping -c -a "$3" -p "$port" -C 200 -V -S 64 >/dev/null 2>&1 || {
		kill "$server" 2>/dev/null || true
		return 0
	}
	end=$(date +%s%N)
	wait "$server" || true
	record "$1" "rping -C 200 (per ping)" "$2" $(((end - start) / 200000)) us
}

qperf_tcp() { # REP ADDR: TCP latency and bandwidth on the same path
	local out
	wanted "tcp_lat 2 B" || wanted "tcp_bw 64 KiB" || return 0
	qperf >/dev/null 2>&1 &
	local server=$!
	sleep 2
	out=$(qperf -v "$2" -m 2 tcp_lat -m 65536 tcp_bw 2>&1 || true)
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	record "$1" "tcp_lat 2 B" tcp "$(awk '$1 == "latency" {print $3 * ($4 == "ms" ? 1000 : 1); exit}' <<<"$out")" us
	record "$1" "tcp_bw 64 KiB" tcp "$(awk '$1 == "bw" {print $3 * ($4 == "GB/sec" ? 1000 : 1); exit}' <<<"$out")" MB/s
}

# Runs every benchmark on one device; LABEL names it in the results.
bench_device() { # REP DEV LABEL
	local addr
	addr=$(addr_of "$2")
	label=$3
	lat "$1" "ib_write_lat 2 B" ib_write_lat 2 "$2" "$addr"
	lat "$1" "ib_write_lat 4 KiB" ib_write_lat 4096 "$2" "$addr"
	bw "$1" "ib_write_bw 64 KiB" ib_write_bw 65536 "$2" "$addr"
	lat "$1" "ib_read_lat 2 B" ib_read_lat 2 "$2" "$addr"
	lat "$1" "ib_send_lat 2 B" ib_send_lat 2 "$2" "$addr"
	rping_time "$1" "$2" "$addr"
	# Streams of small operations: what batching buys.
	rate "$1" "ib_write_bw 64 B rate" ib_write_bw "$2" "$addr" -s 64
	rate "$1" "ib_send_bw 64 B rate" ib_send_bw "$2" "$addr" -s 64
	rate "$1" "ib_read_bw 8 B -o 16 rate" ib_read_bw "$2" "$addr" -s 8 -o 16
	# siw has no atomics and no immediate data.
	if [ "$2" != siw0 ]; then
		atomic_lat "$1" "ib_atomic_lat FETCH_AND_ADD" FETCH_AND_ADD "$2" "$addr"
		atomic_lat "$1" "ib_atomic_lat CMP_AND_SWAP" CMP_AND_SWAP "$2" "$addr"
		local type depth
		for type in FETCH_AND_ADD CMP_AND_SWAP; do
			for depth in 16 1; do
				rate "$1" "ib_atomic_bw $type -o $depth rate" ib_atomic_bw "$2" \
					"$addr" -A "$type" -o "$depth"
			done
		done
		imm_lat "$1" write "$2" "$addr"
		imm_lat "$1" write_imm "$2" "$addr"
	fi
	# draft-talpey-rdma-commit: xiw, and rxe where libibverbs has the
	# verbs (rdma-core >= 45), once per repetition.
	if [ "$3" = xiw0 ] || { [ "$3" = rxe0 ] && libibverbs_has_flush; }; then
		commit_bench "$1" "$2" "$addr"
	fi
	label=
}

# Flush to persistence on a shared mapping of a file on ext4 (a loop
# device in RAM); on Linux >= 6.5, where no RDMA device may pin such a
# mapping, on the emulated NVDIMM (perf/run --platform trixie boots with
# --pmem).
if [ -e /sys/firmware/acpi/tables/NFIT ]; then
	commit_target=$(pmem_dax)
else
	scratch_fs /mnt/xiw-bench
	commit_target=/mnt/xiw-bench/commit.dat
fi
# bench REP DEV LABEL: bench_device, if LABEL is one of XIW_PERF_DEVICES.
bench() {
	[[ $devices == *" $3 "* ]] || return 0
	bench_device "$@"
}

for rep in $(seq 1 "$reps"); do
	bench "$rep" xiw0 xiw0
	# siw asks for no CRC, so siw to siw runs without: so does this row.
	echo 0 >/sys/module/xiw/parameters/mpa_crc
	bench "$rep" xiw0 xiw0-nocrc
	echo 1 >/sys/module/xiw/parameters/mpa_crc
	bench "$rep" siw0 siw0
	bench "$rep" rxe0 rxe0
	[[ $devices != *" tcp "* ]] || qperf_tcp "$rep" "$(addr_of xiw0)"
done
