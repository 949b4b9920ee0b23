# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Per-case verdicts for the guest tests (sourced, not a test itself).  One
# ctest name covers several behaviours; each is a case, and its outcome is
# a line of its own, so a failed run says which one broke:
#   case_begin NAME...   ends the case in progress, starts NAME ("== NAME")
#   case_end             ends the case in progress: "PASS NAME (N s)" or
#                        "FAIL NAME"
# A case fails if the script exits non-zero while it is in progress, or if
# it added to the script's $failed (the convention of the tests that go on
# after a failure so that one run reports all of them).  At exit the
# commands of case_at_exit run, the case in progress is ended and the
# verdicts are counted ("cases: ...").  The EXIT trap is this library's:
# a script that needs its own calls case_exit STATUS from it.

[[ -z ${case_lib_loaded:-} ]] || return 0
case_lib_loaded=1
case_name=
case_start=0
case_failed_before=
case_passes=0
case_failures=()
case_exit_commands=()

# case_at_exit COMMAND: eval COMMAND when the script exits (unmounts, ...).
case_at_exit() {
	case_exit_commands+=("$1")
}

case_end() { # [STATUS]
	local status=${1:-0}
	[[ -n $case_name ]] || return 0
	if ((status == 0)) && [[ ${failed:-} == "$case_failed_before" ]]; then
		echo "PASS $case_name ($((SECONDS - case_start)) s)"
		case_passes=$((case_passes + 1))
	else
		echo "FAIL $case_name"
		case_failures+=("$case_name")
	fi
	case_name=
}

case_begin() { # NAME...
	case_end
	case_name=$*
	case_start=$SECONDS
	case_failed_before=${failed:-}
	echo "== $case_name"
}

case_exit() { # STATUS
	local status=$1 failures="" command
	for command in "${case_exit_commands[@]}"; do
		eval "$command" || true
	done
	# A failure no case has reported happened between them.
	if [[ -z $case_name ]] && ((status != 0)) && ((${#case_failures[@]} == 0)); then
		case_name="(outside the cases)"
	fi
	case_end "$status"
	((${#case_failures[@]} == 0)) || failures=$(printf ', %s' "${case_failures[@]}")
	echo "cases: $case_passes passed, ${#case_failures[@]} failed${failures:+ (${failures#, })}"
}

trap 'case_exit $?' EXIT
