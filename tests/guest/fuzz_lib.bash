# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Helpers for the wire fuzzer's guest tests, fuzz_wire.sh and
# fuzz_handshake.sh (sourced, not a test itself).

# shellcheck source=case_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/case_lib.bash"
# shellcheck source=../../scripts/lib/guest-devices.bash
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/guest-devices.bash"

# fuzz_programs: copies xiw_fuzz and xiw_fuzz_victim into a new directory
# and prints it, so that a rebuild on the host does not pull them away
# mid-run.
fuzz_programs() {
	local dir
	dir=$(mktemp -d)
	cp "${XIW_BUILD_DIR:?set by scripts/guest}/tests/fuzz/xiw_fuzz" \
		"$XIW_BUILD_DIR/tests/fuzz/xiw_fuzz_victim" "$dir/"
	echo "$dir"
}

# fuzz_end_victim PID VAR [WHO]: waits for the victim PID, which ends
# after the fuzzer's last connection; a failed one sets VAR to its exit
# status.  One still running 30 s on is sent SIGTERM; one still there 35 s
# on is stuck (its log says where), maybe in the kernel where no signal
# reaches it: it is left behind, VAR says "stuck" and a line (WHO: first)
# says so.
fuzz_end_victim() {
	local pid=$1 i
	for i in $(seq 1 350); do
		kill -0 "$pid" 2>/dev/null || break
		[ "$i" != 300 ] || kill "$pid" 2>/dev/null || true
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "${3:+$3: }the victim is stuck: still there 35 s after the fuzzer ended"
		printf -v "$2" %s stuck
	else
		wait "$pid" || printf -v "$2" %s "$?"
	fi
}

# fuzz_failures PREFIX FRC VRC VLOG: adds to $failed what went wrong, each
# word with PREFIX: the fuzzer's exit status FRC, the victim's VRC, a hang
# or a failed check in the victim's log VLOG.
fuzz_failures() {
	local p=$1
	[ "$2" = 0 ] || failed="$failed ${p}fuzzer($2)"
	[ "$3" = 0 ] || failed="$failed ${p}victim($3)"
	! grep -q 'HANG' "$4" || failed="$failed ${p}victim-hang"
	! grep -q ': FAIL' "$4" || failed="$failed ${p}victim-checks"
}

# run_pair NAME VICTIM_ARGS -- FUZZ_ARGS: $victim and $fuzz (the caller's
# copies from fuzz_programs) side by side; the victim is started first
# unless it is the client.  Adds what went wrong, each word with NAME-, to
# $failed.
run_pair() {
	local name=$1 vlog=$XIW_OUT/fuzz-$1-victim.log flog=$XIW_OUT/fuzz-$1.log
	case_begin "$name"
	local -a vargs=() fargs=()
	shift
	while [ "$1" != -- ]; do
		vargs+=("$1")
		shift
	done
	shift
	fargs=("$@")
	local vpid frc=0 vrc=0
	# A side that does not start listening: the other one fails.
	if [ "${vargs[0]}" = listen ]; then
		timeout 1500 "${victim:?}" "${vargs[@]}" >"$vlog" 2>&1 &
		vpid=$!
		wait_listening "$vlog" || true
		timeout 1200 "${fuzz:?}" "${fargs[@]}" >"$flog" 2>&1 || frc=$?
	else
		timeout 1200 "${fuzz:?}" "${fargs[@]}" >"$flog" 2>&1 &
		local fpid=$!
		wait_listening "$flog" || true
		timeout 1500 "${victim:?}" "${vargs[@]}" >"$vlog" 2>&1 &
		vpid=$!
		wait "$fpid" || frc=$?
	fi
	fuzz_end_victim "$vpid" vrc "$name"
	grep -E '^fuzz: (seed|flood|ANOMALY|the victim)' "$flog" || true
	sed -n '/^== fuzz summary/,$p' "$flog" | grep -vE '^[0-9a-z:]+ +[0-9. ]+$' || true
	grep -E 'FAIL|HANG|FATAL|^victim summary' "$vlog" || true
	fuzz_failures "$name-" "$frc" "$vrc" "$vlog"
	return 0
}
