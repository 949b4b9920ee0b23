#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Self-test of scripts/guest, run on the host (ctest: harness.selftest).
# Each check boots one guest (two for the stalls), so there are only eight:
#   1. a command's non-zero exit status (3) comes back, and so do files
#      written to $XIW_OUT; a peer device exists
#   2. a kernel WARNING fails the run although the command exits 0
#   3. an over-long command is reported as a timeout (124)
#   3b. a command stuck in the kernel (a write to a frozen file system,
#      D state, deaf to SIGKILL) is a timeout (124) with the blocked task's
#      stack in the log
#   3c. a boot that stalls before the command is reported with where the
#      vCPUs were, and booted once more: the run passes
#   3d. two stalled boots fail the run (125)
#   4. --hosts 2 shows each network namespace its own RDMA device and only
#      it, and exit status 0 comes back
#   5. --disk: the image is /dev/vda ($XIW_DISK); what the guest wrote to it
#      is in the image on the host even though the guest powered itself off
#      (sysrq o), which the harness reports as 125 "GUEST DIED"
# Without a built xiw.ko, check 4 uses rxe in host b and an empty host a.
# With XIW_DEBUG_KERNEL=1 every guest boots the sanitizer kernel
# (scripts/guest --debug-kernel), and two more checks run:
#   6. a use-after-free (lkdtm READ_AFTER_FREE) fails the run with KASAN's
#      report (123)
#   7. leaked memory (the kmemleak-test module) fails the run with
#      kmemleak's report (123), saved as .xiw/kmemleak

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${XIW_BUILD_DIR:-$REPO/build}
GUEST=$REPO/scripts/guest
# Our own output share, so that a concurrent run elsewhere cannot wipe the
# artifact between the guest writing it and this script reading it.
OUT=$BUILD/guest/selftest-out
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

PASSED=0 FAILED=0

pass() {
	echo "ok: $1"
	PASSED=$((PASSED + 1))
}

failed() {
	echo "FAIL: $1"
	echo "---- scripts/guest output ----"
	cat "$LOG"
	echo "---- end ----"
	FAILED=$((FAILED + 1))
}

# guest EXPECTED_RC DESCRIPTION ARGS...: run scripts/guest, output in $LOG.
guest() {
	local want=$1 what=$2 rc=0 start=$SECONDS
	shift 2
	"$GUEST" --out "$OUT" "$@" >"$LOG" 2>&1 || rc=$?
	if ((rc != want)); then
		failed "$what: exit status $rc, expected $want"
		return 1
	fi
	echo "   ($what: exit $rc in $((SECONDS - start))s)"
	return 0
}

# expect_output PATTERN DESCRIPTION: PATTERN (ERE) must occur in $LOG.
expect_output() {
	if grep -Eq -- "$1" "$LOG"; then
		pass "$2"
	else
		failed "$2: no '$1' in the output"
	fi
}

check_exit_status() {
	# shellcheck disable=SC2016 # expanded in the guest
	local cmd='ibv_devices | grep -q rxe0 || exit 1
		echo selftest-artifact >"$XIW_OUT/artifact"
		exit 3'
	guest 3 "exit status 3" --no-xiw --peer rxe -- sh -c "$cmd" || return 0
	pass "exit status 3 propagated"
	if [[ $(cat "$OUT/artifact" 2>/dev/null) == selftest-artifact ]]; then
		pass "\$XIW_OUT artifact reached the host"
	else
		failed "\$XIW_OUT artifact missing on the host"
	fi
}

check_warning() {
	local cmd="echo 'WARNING: CPU: 0 PID: 1 at xiw-selftest' >/dev/kmsg"
	guest 123 "injected WARNING" --no-xiw -- sh -c "$cmd" || return 0
	expect_output 'KERNEL PROBLEM.*' "kernel WARNING failed the run"
	expect_output 'WARNING: CPU: 0 PID: 1 at xiw-selftest' "the warning is shown"
}

check_timeout() {
	guest 124 "timeout" --no-xiw --timeout 15 -- sleep 600 || return 0
	expect_output '^scripts/guest: TIMEOUT' "timeout reported"
}

check_stuck_command() {
	# shellcheck disable=SC2016 # expanded in the guest
	local cmd='set -e
		truncate -s 32M /tmp/frozen.img
		mkfs.ext4 -q /tmp/frozen.img
		mkdir -p /mnt/frozen
		modprobe loop
		mount "$(losetup -f --show /tmp/frozen.img)" /mnt/frozen
		fsfreeze -f /mnt/frozen
		echo writing to a frozen file system
		echo data >/mnt/frozen/file'
	guest 124 "command stuck in D state" --no-xiw --timeout 60 -- sh -c "$cmd" || return 0
	expect_output '^scripts/guest: TIMEOUT: .*the command timed out' "a command deaf to SIGKILL is a timeout"
	expect_output 'task:.* state:D' "the blocked task is in the log"
}

# Setup takes some 10 s (80 s on the sanitizer kernel): 30 s (times 4)
# leave room for a busy host, and keep the three boots that wait for it
# out short.
check_boot_stall() {
	XIW_GUEST_BOOT_SECONDS=30 XIW_GUEST_SELFTEST_STALLS=1 \
		guest 0 "boot stalled once" --no-xiw -- true || return 0
	expect_output '^scripts/guest: GUEST BOOT STALLED: .*attempt 1 of 2' "a stalled boot is reported"
	expect_output "^  CPU#0 RIP=[0-9a-f]{16} [A-Za-z_]" "the stalled vCPUs are named"
	expect_output '^scripts/guest: booting again' "the run boots once more"
	XIW_GUEST_BOOT_SECONDS=30 XIW_GUEST_SELFTEST_STALLS=2 \
		guest 125 "boot stalled twice" --no-xiw -- true || return 0
	expect_output '^scripts/guest: GUEST BOOT STALLED twice' "a second stall fails the run"
}

# In the guest: host a must list exactly $1 (may be empty), host b exactly $2.
two_host_probe() {
	# shellcheck disable=SC2016 # expanded in the guest
	cat <<'EOS'
devs() { ip netns exec "$1" rdma dev | awk '{ sub(":", "", $2); print $2 }' | sort | tr '\n' ' '; }
a=$(devs a); b=$(devs b)
echo "host a: [$a] host b: [$b]"
[ "$a" = "$WANT_A" ] && [ "$b" = "$WANT_B" ] || exit 1
ip netns exec a ip -br addr show dev va | grep -q 192.0.2.1/24 || exit 2
ip netns exec b ip -br addr show dev vb | grep -q 192.0.2.2/24 || exit 2
EOS
}

check_two_hosts() {
	local probe
	probe=$(two_host_probe)
	if [[ -f $BUILD/kernel/xiw.ko ]]; then
		guest 0 "two hosts" --hosts 2 --peer siw -- \
			env WANT_A='xiw0 ' WANT_B='siw0 ' sh -c "$probe" || return 0
		expect_output 'host a: \[xiw0 \] host b: \[siw0 \]' "--hosts 2: xiw0 only in a, siw0 only in b"
	else
		echo "   (no $BUILD/kernel/xiw.ko: host a stays empty, rxe in host b)"
		guest 0 "two hosts" --no-xiw --hosts 2 --peer rxe -- \
			env WANT_A= WANT_B='rxe0 ' sh -c "$probe" || return 0
		expect_output 'host a: \[\] host b: \[rxe0 \]' "--hosts 2: rxe0 only in b"
	fi
	pass "exit status 0 propagated"
}

check_disk() {
	local img=$BUILD/guest/selftest-disk.img
	# shellcheck disable=SC2016 # expanded in the guest
	local cmd='[ "$XIW_DISK" = /dev/vda ] && [ -b /dev/vda ] || exit 1
		printf selftest-disk | dd of=/dev/vda bs=512 conv=sync oflag=direct status=none
		echo selftest-disk-written
		echo o >/proc/sysrq-trigger
		sleep 60'
	rm -f "$img"
	truncate -s 1M "$img"
	guest 125 "--disk, guest powered off" --no-xiw --disk "$img" -- sh -c "$cmd" || return 0
	expect_output '^selftest-disk-written$' "the command saw /dev/vda and wrote it"
	expect_output 'GUEST DIED' "a guest that powers itself off is reported as GUEST DIED"
	if [[ $(head -c 13 "$img") == selftest-disk ]]; then
		pass "--disk: what the guest wrote is in the image"
	else
		failed "--disk: the image does not hold what the guest wrote"
	fi
	rm -f "$img"
}

check_kasan() {
	local cmd='modprobe lkdtm && echo READ_AFTER_FREE >/sys/kernel/debug/provoke-crash/DIRECT'
	guest 123 "--debug-kernel, use-after-free" --no-xiw -- sh -c "$cmd" || return 0
	expect_output 'KERNEL PROBLEM' "a KASAN report failed the run"
	expect_output 'BUG: KASAN: (slab-)?use-after-free in lkdtm_READ_AFTER_FREE' "KASAN's report is shown"
}

check_kmemleak() {
	guest 123 "--debug-kernel, leak" --no-xiw -- modprobe kmemleak-test || return 0
	expect_output 'KMEMLEAK: [0-9]+ unreferenced object' "kmemleak's report failed the run"
	if grep -q 'unreferenced object' "$OUT/.xiw/kmemleak" 2>/dev/null; then
		pass "kmemleak's report is saved in .xiw/kmemleak"
	else
		failed "no unreferenced object in $OUT/.xiw/kmemleak"
	fi
}

check_exit_status
check_warning
check_timeout
check_stuck_command
check_boot_stall
check_two_hosts
check_disk
if [[ ${XIW_DEBUG_KERNEL:-0} == 1 ]]; then
	check_kasan
	check_kmemleak
fi
echo "selftest: $PASSED passed, $FAILED failed"
((FAILED == 0))
