#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 1
# guest-timeout: 900
# MPA connection setup under attack (tests/fuzz/), both ways.
# 1. xiw as responder: xiw_fuzz handshake sends random and mutated MPA
#    Requests (keys, revision, flags, private data of 0..65535 octets,
#    truncated, dripped an octet at a time) to xiw_fuzz_victim's rdma_cm
#    listener on xiw0; a well-formed Request must get a Reply.  Then a
#    half-open flood: XIW_FUZZ_FLOOD connections (default 300; a long run
#    takes 10000) that send nothing or part of a Request and stay open,
#    during which a good connection (MPA, a Send and an RDMA Read) must be
#    served.
# 2. xiw as initiator: the victim in client mode rdma_connect()s
#    XIW_FUZZ_CONNS times (default 60) to xiw_fuzz respond, a hostile MPA
#    responder: mutated Replies, then mutated answers to the victim's
#    Reads, Atomics, Flushes..., responses that match nothing, Terminates.
# XIW_FUZZ_SEED fixes the seed (printed otherwise), XIW_FUZZ_CASES the
# number of handshake cases (default 300).  Fails on an anomaly (e.g. a
# well-formed Request not answered, a malformed MPA frame from xiw), on a
# victim check (canaries, completions, hangs) or when a side stops early;
# the harness adds the kernel log and `rmmod xiw`.
set -euo pipefail
# shellcheck source=fuzz_lib.bash
source "$(dirname "$0")/fuzz_lib.bash"

bin=$(fuzz_programs)
fuzz=$bin/xiw_fuzz
victim=$bin/xiw_fuzz_victim

addr=${XIW_ADDR_A:?}
cases=${XIW_FUZZ_CASES:-300}
flood=${XIW_FUZZ_FLOOD:-300}
conns=${XIW_FUZZ_CONNS:-60}
seed=()
[ -z "${XIW_FUZZ_SEED:-}" ] || seed=(--seed "$XIW_FUZZ_SEED")
failed=

run_pair handshake listen "$addr" 7950 --conn-seconds 60 --hang-seconds 20 -- \
	handshake --addr "$addr" --port 7950 --cases "$cases" --flood "$flood" --quit \
	--progress "$XIW_OUT/fuzz-progress.txt" --kmsg "${seed[@]}"
run_pair respond client "$addr" 7960 "$conns" --conn-seconds 30 --hang-seconds 20 -- \
	respond --addr "$addr" --port 7960 --cases "$conns" \
	--progress "$XIW_OUT/fuzz-progress.txt" --kmsg "${seed[@]}"

case_end
if [ -n "$failed" ]; then
	echo "FAIL:$failed (logs in $XIW_OUT)"
	exit 1
fi
echo "fuzz handshake: ok"
