# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Race windows made wide for the guest tests (sourced, not a test itself).
# A race of a few instructions after a lock is dropped is shown on every
# run, not once in a million: tests/kmod/xiw_delay.ko busy-waits at the
# instruction right after the unlock, found in the module's code by
# objdump, so the same test finds the place in an old module too.
#   race_sites KO CALLEE_ERE  the instructions of KO right after a spinlock
#                            is released whose next call is to a function
#                            matching CALLEE_ERE, as function+0xoffset
#   race_widen_begin DELAY_US sites|returns ITEM...  loads xiw_delay.ko,
#                            waiting at each instruction of race_sites'
#                            form, or as each function named returns
#   race_widen_end           unloads it, prints how many waits it took;
#                            fails if none (the window was never reached)

race_sites() {
	local ko=$1 callee=$2 fn base site
	# Relocation lines (tabs) name each call's target; instruction lines
	# (spaces) give the address after it.  The sanitizers' checks between
	# the unlock and the call do not count as calls.
	objdump -dr --no-show-raw-insn "$ko" | awk -v callee="$callee" '
		/^[0-9a-f]+ <[^>]+>:$/ {
			fn = $2; gsub(/[<>:]/, "", fn); base = $1; cand = ""; unlocked = 0; next
		}
		/^ +[0-9a-f]+:\t/ {
			if (unlocked) { cand = $1; sub(/:$/, "", cand); unlocked = 0 }
			next
		}
		/R_X86_64_PLT32/ {
			t = $NF; sub(/-0x4$/, "", t)
			if (t ~ /^_raw_spin_unlock/) { unlocked = 1; cand = ""; next }
			if (t ~ /^__(asan|ubsan|kasan|sanitizer)_/) next
			if (cand != "" && t ~ callee) print fn, base, cand
			cand = ""
		}' | while read -r fn base site; do
		printf '%s+0x%x\n' "$fn" $((0x$site - 0x$base))
	done
}

race_widen_begin() {
	local delay=$1 kind=$2 items
	shift 2
	items=$(IFS=,; echo "$*")
	insmod "${XIW_TEST_KMOD_DIR:?set by scripts/guest}/xiw_delay.ko" \
		"$kind=$items" delay_us="$delay"
}

race_widen_end() {
	local hits
	hits=$(cat /sys/module/xiw_delay/parameters/hits)
	rmmod xiw_delay
	echo "xiw_delay: $hits waits taken"
	((hits > 0))
}
