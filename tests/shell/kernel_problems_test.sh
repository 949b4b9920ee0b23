#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# unit.kernel_problems: what scripts/lib/kernel-problems.bash counts as a
# problem in a guest's kernel log, on short logs shaped like real ones:
# upstream siw's own lockdep report is not counted (and is told on stderr),
# the same report with another lock site is, and so is anything else.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=../../scripts/lib/kernel-problems.bash
source "$repo/scripts/lib/kernel-problems.bash"
failed=0

# lockdep_report TAKES_SITE REGISTERED_SITE: an "inconsistent lock state"
# report as 6.1 prints it, with CR LF endings as on the serial console.
lockdep_report() {
	printf '%s\r\n' \
		'[   75.798996] ================================' \
		'[   75.799117] WARNING: inconsistent lock state' \
		'[   75.799814] inconsistent {IN-SOFTIRQ-W} -> {SOFTIRQ-ON-R} usage.' \
		'[   75.799996] xiw_datapath_te/176 [HC0[0]:SC0[0]:HE1:SE1] takes:' \
		"[   75.800198] ffff888108309078 (clock-AF_INET){++-?}-{2:2}, at: $1+0x75/0x2e0 [siw]" \
		'[   75.801276] {IN-SOFTIRQ-W} state was registered at:' \
		'[   75.801824]   _raw_write_lock_bh+0x2f/0x40' \
		"[   75.801940]   $2+0x1b6/0x300 [siw]" \
		'[   75.809774] Call Trace:' \
		'[   75.809912]  <TASK>' \
		'[   75.810043]  dump_stack_lvl+0x4c/0x63' \
		'[   75.819543]  </TASK>'
}

# expect NAME WANT_PROBLEMS WANT_NOTE < LOG (in this shell: it sets $failed)
expect() {
	local out err
	err=$(mktemp)
	out=$(xiw_kernel_problems "$XIW_KERNEL_PROBLEMS_DEBUG" 2>"$err")
	local note=0
	grep -q 'upstream siw lockdep report' "$err" && note=1
	rm -f "$err"
	local problems=0
	[[ -n $out ]] && problems=1
	if ((problems == $2 && note == $3)); then
		echo "ok: $1"
	else
		echo "FAIL: $1: problems $problems (want $2), note $note (want $3)"
		[[ -n $out ]] && printf '%s\n' "$out"
		failed=1
	fi
}

expect "siw's sk_callback_lock report is not counted" 0 1 \
	< <(lockdep_report siw_qp_llp_data_ready siw_rtr_data_ready)
expect "the report with another site registered is a problem" 1 0 \
	< <(lockdep_report siw_qp_llp_data_ready xiw_rx_actor)
expect "the report with another site taking the lock is a problem" 1 0 \
	< <(lockdep_report xiw_qp_data_ready siw_rtr_data_ready)
expect "a problem after the siw report still counts" 1 1 < <(
	lockdep_report siw_qp_llp_data_ready siw_rtr_data_ready
	printf '%s\n' '[   80.000000] WARNING: CPU: 1 PID: 9 at kernel/xiw_qp.c:1 xiw_qp_fatal+0x1/0x2 [xiw]'
)
expect "the siw report cut short is not counted" 0 1 \
	< <(lockdep_report siw_qp_llp_data_ready siw_rtr_data_ready | head -n 9)
expect "a clean log has no problem" 0 0 < <(printf '%s\n' '[    1.000000] xiw: loaded')
exit "$failed"
