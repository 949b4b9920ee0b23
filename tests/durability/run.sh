#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# ctest guest.flush_durability, run on the host: data that RDMA Flush made
# persistent survives the sudden death of the guest; data only written may
# not.  For each of XIW_DURABILITY_REPS repetitions (default 5, at least 5
# for the test to count) a fresh 64 MiB ext4 image ($BUILD/durability/) is
# attached to a guest:
#   scripts/guest --hosts 2 --peer xiw --disk IMG --out DIR --timeout 300 \
#       -- tests/durability/guest.sh REP
# guest.sh mounts it on host b, has host a RDMA-Write record A + Flush it to
# persistence and RDMA-Write record B without a Flush into a file there,
# prints a marker line and powers the guest off without a sync.  A guest
# that powers itself off leaves no exit status, so scripts/guest exits 125
# ("GUEST DIED"): accepted only together with the marker, which guest.sh
# prints only once everything in the guest went right.  The host then
# replays the journal as the next mount would (e2fsck -fy), dumps the file
# with debugfs and compares the records:
#   record A must be there in every repetition (else FAIL);
#   record B is counted, not required.
# Last line: "flush_durability: flushed record kept N/N, unflushed record
# kept M/N".
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${XIW_BUILD_DIR:-$repo/build}
reps=${XIW_DURABILITY_REPS:-5}
# shellcheck source=../../scripts/lib/deps.sh
source "$repo/scripts/lib/deps.sh"
xiw_deps_ensure e2fsprogs

if [[ ! $reps =~ ^[0-9]+$ ]] || ((reps < 5)); then
	echo "FAIL: XIW_DURABILITY_REPS=$reps: at least 5 repetitions"
	exit 1
fi
[[ -x $build/tests/guest/xiw_commit_test ]] ||
	{ echo "FAIL: $build/tests/guest/xiw_commit_test is not built"; exit 1; }
work=$build/durability
mkdir -p "$work"
cd "$repo"

# Offsets and size of the records in the file (tests/guest/commit_test.cpp).
readonly a_off=$((64 << 10)) b_off=$((512 << 10)) rec_len=4096 file_len=$((1 << 20))

# record TAG LETTER NOTE: the bytes of a record, 64 lines of its text.
record() {
	local line i
	line=$(printf '%-63.63s' "xiw flush_durability $1 record $2 ($3)")
	for ((i = 0; i < 64; i++)); do
		printf '%s\n' "$line"
	done
}

# has_record FILE OFFSET TAG LETTER NOTE: FILE holds the record at OFFSET
# (a multiple of the record length).
has_record() {
	cmp -s <(record "$3" "$4" "$5") \
		<(dd if="$1" bs="$rec_len" skip=$(($2 / rec_len)) count=1 status=none)
}

# show_log FILE: a failed repetition's log, indented.
show_log() {
	sed 's/^/  | /' "$1"
}

kept_a=0 kept_b=0 lost_a=
for ((rep = 1; rep <= reps; rep++)); do
	img=$work/disk-$rep.img
	log=$work/guest-$rep.log
	data=$work/data-$rep
	rm -f "$img" "$data"
	truncate -s 64M "$img"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$img"

	rc=0
	"$repo/scripts/guest" --hosts 2 --peer xiw --disk "$img" --out "$work/out" \
		--timeout 300 -- tests/durability/guest.sh "$rep" >"$log" 2>&1 || rc=$?
	marker="flush_durability guest: rep $rep: records written, kernel log clean; powering off without sync"
	if ((rc != 125)) || ! grep -Fxq "$marker" "$log" ||
		! grep -q "GUEST DIED: no exit status" "$log"; then
		echo "FAIL: rep $rep: scripts/guest exited $rc; expected 125 (guest powered" \
			"off) after the line \"$marker\". Its output ($log):"
		show_log "$log"
		exit 1
	fi

	fsck_rc=0
	e2fsck -fy "$img" >"$work/e2fsck-$rep.log" 2>&1 || fsck_rc=$?
	if ((fsck_rc > 1)); then
		echo "FAIL: rep $rep: e2fsck -fy $img exited $fsck_rc:"
		show_log "$work/e2fsck-$rep.log"
		exit 1
	fi
	debugfs -R "dump /xiw-durable.dat $data" "$img" >"$work/debugfs-$rep.log" 2>&1 || true
	if [[ ! -f $data ]] || (($(stat -c %s "$data") != file_len)); then
		echo "FAIL: rep $rep: debugfs could not dump the 1 MiB file /xiw-durable.dat:"
		show_log "$work/debugfs-$rep.log"
		exit 1
	fi

	a=kept b=kept
	if has_record "$data" "$a_off" "rep $rep" A flushed; then
		kept_a=$((kept_a + 1))
	else
		a=LOST
		lost_a="$lost_a $rep"
	fi
	if has_record "$data" "$b_off" "rep $rep" B "not flushed"; then
		kept_b=$((kept_b + 1))
	else
		b=lost
	fi
	echo "flush_durability: rep $rep: flushed record A $a, unflushed record B $b" \
		"(e2fsck exit $fsck_rc)"
	# 64 MiB each: kept only where record A went missing.
	[[ $a == LOST ]] || rm -f "$img"
done

echo "flush_durability: flushed record kept $kept_a/$reps, unflushed record kept $kept_b/$reps"
if [[ -n $lost_a ]]; then
	echo "FAIL: a record flushed to persistence was lost in repetition(s)$lost_a"
	exit 1
fi
