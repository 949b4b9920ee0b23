# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Sourced: what fails a guest run in its kernel log, even when the command
# succeeded.  A user process's own crash ("traps: prog[pid] general
# protection fault ... in lib.so") is logged by the kernel but is the
# command's business.
XIW_USER_FAULTS='traps: .*\[[0-9]+\] .* in [^ ]+\['
XIW_KERNEL_PROBLEMS='WARNING:|BUG:|kernel BUG at|Oops|refcount_t|list_add corruption|list_del corruption|general protection|hung_task|blocked for more than|UBSAN|KASAN|Kernel panic|Call Trace:'

# xiw_kernel_problems: the problem lines of the kernel log on stdin, once each.
xiw_kernel_problems() {
	grep -E "$XIW_KERNEL_PROBLEMS" | grep -vE "$XIW_USER_FAULTS" | sort -u || true
}
