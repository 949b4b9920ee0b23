#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 1
# guest-timeout: 600
# A stateful wire fuzzer against xiw (tests/fuzz/): xiw_fuzz_victim, an
# rdma_cm listener on xiw0 that exposes regions of every kind of rights
# between canaries, and xiw_fuzz, a raw TCP peer that speaks MPA, DDP and
# RDMAP itself (correct CRCs and markers, so its frames reach DDP/RDMAP).
# First the seed corpus (tests/fuzz/seeds/*.seed: regressions, known
# crashes), then generated cases from one random seed (printed; replay with
# XIW_FUZZ_SEED) until XIW_FUZZ_FRAMES frames (default 20000) or
# XIW_FUZZ_SECONDS seconds (default 420, times XIW_TIME_FACTOR; fewer
# frames than asked for fail).  With XIW_FUZZ_CONNS, then the other
# direction: xiw connects that many times to a hostile MPA responder
# (xiw_fuzz respond, as in fuzz_handshake.sh).  A long run is the same
# script with bigger numbers (long.fuzz_wire: XIW_FUZZ_FRAMES=200000
# XIW_FUZZ_SECONDS=3000 XIW_FUZZ_CONNS=600, scripts/guest --timeout 3600).  XIW_FUZZ_SKIP=name,name leaves seed files
# out (e.g. a known crash while looking for others).
# Fails if the victim saw a canary or a region without the right changed,
# a work completion it cannot explain, or a hang (its watchdog), if the
# fuzzer saw something a correct peer never does (an anomaly: a response
# to no request, a bad CRC, wrong data, a request answered that must be
# refused, a seed's expectation unmet), or if either stopped early.  The
# harness adds the kernel log (WARNING/BUG/Oops) and `rmmod xiw`.
# Prints the frames sent, connections, the (opcode, outcome) table and the
# Terminates by layer/type/code.
set -euo pipefail
# shellcheck source=fuzz_lib.bash
source "$(dirname "$0")/fuzz_lib.bash"

bin=$(fuzz_programs)
fuzz=$bin/xiw_fuzz
victim=$bin/xiw_fuzz_victim

corpus=${XIW_REPO:?}/tests/fuzz/seeds
addr=${XIW_ADDR_A:?}
port=7900
frames=${XIW_FUZZ_FRAMES:-20000}
# A limit for slow guests, not a goal: fewer frames than asked for fail.
seconds=$((${XIW_FUZZ_SECONDS:-420} * ${XIW_TIME_FACTOR:-1}))
params=/sys/module/xiw/parameters
failed=

case_begin "the fuzzer's own framing checks (selfcheck)"
"$fuzz" selfcheck --corpus "$corpus"

# The region with the flush-to-persistence right needs a file on a file
# system that writes back (not tmpfs).
scratch_fs /mnt/xiw-fuzz

case_begin "wire fuzz: $frames frames within $seconds s"
vlog=$XIW_OUT/fuzz-victim.log
flog=$XIW_OUT/fuzz-wire.log
: >"$XIW_OUT/fuzz-progress.txt"
# Each connection lives at most 60 s; a teardown call that takes 20 s is a
# hang.
timeout $((seconds + 600)) "$victim" listen "$addr" "$port" --conn-seconds 60 \
	--hang-seconds 20 --file /mnt/xiw-fuzz/victim.dat >"$vlog" 2>&1 &
vpid=$!
wait_listening "$vlog" || { echo "FAIL: the victim did not start"; cat "$vlog"; exit 1; }

args=(wire --addr "$addr" --port "$port" --corpus "$corpus" --frames "$frames"
	--seconds "$seconds" --set-params --kmsg --progress "$XIW_OUT/fuzz-progress.txt"
	--dump-dir "$XIW_OUT/fuzz-cases" --quit)
[ -z "${XIW_FUZZ_SEED:-}" ] || args+=(--seed "$XIW_FUZZ_SEED")
[ -z "${XIW_FUZZ_SKIP:-}" ] || args+=(--skip "$XIW_FUZZ_SKIP")
frc=0
timeout $((seconds + 300)) "$fuzz" "${args[@]}" >"$flog" 2>&1 || frc=$?
echo 0 >"$params/mpa_markers"
echo 1 >"$params/mpa_crc"

# The victim ends after the fuzzer's last connection (HF_QUIT).
vrc=0
fuzz_end_victim "$vpid" vrc

# The fuzzer's run: its seed, the seed files' results, the summary.
grep -E '^fuzz: (seed|wire)|^fuzz: ANOMALY|^fuzz: wrote|^fuzz: the victim' "$flog" || true
sed -n '/^== fuzz summary/,$p' "$flog"
echo "--- victim"
grep -E 'FAIL|HANG|FATAL|^victim summary|note:' "$vlog" || true

fuzz_failures "" "$frc" "$vrc" "$vlog"
sent=$(sed -n 's/^== fuzz summary: \([0-9]*\) frames.*/\1/p' "$flog")
if [ -z "$sent" ]; then
	failed="$failed no-summary"
elif [ "$sent" -lt "$frames" ]; then
	failed="$failed only-$sent-of-$frames-frames-in-${seconds}s"
fi

# The other direction in the same boot (XIW_FUZZ_CONNS, the long run):
# xiw connects to xiw_fuzz respond, a hostile MPA responder (as in
# fuzz_handshake.sh), that many times.
conns=${XIW_FUZZ_CONNS:-0}
if ((conns > 0)); then
	seed=()
	[ -z "${XIW_FUZZ_SEED:-}" ] || seed=(--seed "$XIW_FUZZ_SEED")
	run_pair respond client "$addr" 7960 "$conns" --conn-seconds 30 --hang-seconds 20 -- \
		respond --addr "$addr" --port 7960 --cases "$conns" \
		--progress "$XIW_OUT/fuzz-progress.txt" --kmsg "${seed[@]}"
	back=$(sed -n 's/^== fuzz summary: \([0-9]*\) frames.*/\1/p' "$XIW_OUT/fuzz-respond.log")
	[ -n "$back" ] || failed="$failed respond-no-summary"
	echo "fuzz wire: both directions in this boot: ${sent:-0} frames to xiw's listener," \
		"${back:-0} to xiw's connections, $((${sent:-0} + ${back:-0})) in all"
fi
# The verdict below is the whole run's: it ends the last case first, which
# is failed only by what it added itself.
case_end
if [ -n "$failed" ]; then
	echo "FAIL:$failed (logs: $flog $vlog; cases: $XIW_OUT/fuzz-progress.txt)"
	tail -n 20 "$flog"
	exit 1
fi
echo "fuzz wire: ok"
