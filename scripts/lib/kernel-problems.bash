# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Sourced: what fails a guest run in its kernel log, even when the command
# succeeded.  A user process's own crash ("traps: prog[pid] general
# protection fault ... in lib.so") is logged by the kernel but is the
# command's business.
XIW_USER_FAULTS='traps: .*\[[0-9]+\] .* in [^ ]+\['
XIW_KERNEL_PROBLEMS='WARNING:|BUG:|kernel BUG at|Oops|refcount_t|list_add corruption|list_del corruption|general protection|hung_task|blocked for more than|UBSAN|KASAN|Kernel panic|Call Trace:'
# What the sanitizer kernel (scripts/guest --debug-kernel) adds.  Most of its
# reports already match the list above: lockdep's ("WARNING: possible
# circular locking dependency detected", "WARNING: inconsistent lock state",
# "WARNING: suspicious RCU usage", "WARNING: possible recursive locking"),
# "BUG: sleeping function called from invalid context", "BUG: KASAN:",
# "UBSAN:", "watchdog: BUG: soft lockup", hung tasks, and ODEBUG (a WARN).
# Not matched above: SLUB debugging's "BUG kmalloc-64 (Not tainted): ...",
# a hard lockup, and ODEBUG/lockdep lines named for themselves.
# shellcheck disable=SC2034 # used by scripts/guest
XIW_KERNEL_PROBLEMS_DEBUG='BUG [^ ]+ \((Not tainted|Tainted: [^)]*)\): |hard LOCKUP|ODEBUG:|possible circular locking|inconsistent lock state|suspicious RCU usage|sleeping function called from invalid context|soft lockup'

# xiw_kernel_problems [EXTRA_ERE]: the problem lines of the kernel log on
# stdin, once each; EXTRA_ERE adds patterns (e.g. XIW_KERNEL_PROBLEMS_DEBUG).
# Two stacks are the kernel doing its job, not problems: the one an OOM
# kill prints ("... invoked oom-killer" to "</TASK>": the soak's memory
# cgroup phase), and, between the lines "$XIW_FAULTS_ON" and
# "$XIW_FAULTS_OFF" that a test writes to /dev/kmsg around fault
# injection (the soak's fault phase), an allocation failure's report
# ("page allocation failure:" or "vmalloc error:" to "</TASK>"): there the
# failures are wanted, what matters is how the caller copes.
# One lockdep report is upstream siw's own, about a lock only siw takes, and
# is told on stderr instead: siw takes its socket's sk_callback_lock for
# writing in softirq (siw_rtr_data_ready() -> siw_qp_socket_assoc()) and
# for reading with softirqs on (siw_qp_llp_data_ready() when TCP hands it
# its backlog in process context).  A peer's bug cannot fail xiw's run,
# but lockdep stays off for the rest of that boot, which the note says.
# Anything else in the log still is a problem.
XIW_FAULTS_ON='xiw-test: fault injection on'
XIW_FAULTS_OFF='xiw-test: fault injection off'
xiw_kernel_problems() {
	awk -v on="$XIW_FAULTS_ON" -v off="$XIW_FAULTS_OFF" '
		function flush_report(   i) {
			if (siw_takes && siw_rtr) {
				print "xiw-harness: upstream siw lockdep report (its sk_callback_lock) not counted; lockdep is off after it" >"/dev/stderr"
			} else {
				for (i = 0; i < held; i++)
					print report[i]
			}
			held = 0
		}
		{ sub(/\r$/, "") }	# the console ends its lines with CR LF
		index($0, on) { faults = 1 }
		index($0, off) { faults = 0 }
		/invoked oom-killer:/ { skip = 1 }
		faults && /(page allocation failure|vmalloc error): / { skip = 1 }
		/WARNING: inconsistent lock state/ {
			held = 0; siw_takes = 0; siw_rtr = 0; after_takes = 0; lockdep = 1
		}
		lockdep {
			report[held++] = $0
			if (after_takes && /\(clock-AF_INET\)/ &&
			    / at: siw_[a-z_]+\+0x[0-9a-f]+\/0x[0-9a-f]+ \[siw\]$/)
				siw_takes = 1
			after_takes = / takes:$/
			if (/ siw_rtr_data_ready\+/)
				siw_rtr = 1
			if (/<\/TASK>/) {
				lockdep = 0
				flush_report()
			}
			next
		}
		!skip { print }
		skip && /<\/TASK>/ { skip = 0 }
		END { if (lockdep) flush_report() }' |
		grep -E "$XIW_KERNEL_PROBLEMS${1:+|$1}" | grep -vE "$XIW_USER_FAULTS" | sort -u || true
}
