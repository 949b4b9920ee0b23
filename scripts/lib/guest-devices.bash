# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Sourced inside a scripts/guest run: what the guest's devices give the
# tests and benchmarks.

# addr_of DEV: the address scripts/guest gave DEV's netdev (one host,
# devices side by side).
addr_of() {
	case $1 in
	xiw0) echo "$XIW_ADDR_A" ;;
	siw0) echo "$XIW_PEER_ADDR_SIW" ;;
	rxe0) echo "$XIW_PEER_ADDR_RXE" ;;
	esac
}

# scratch_fs DIR: a fresh ext4 file system mounted at DIR, on a loop device
# over a file in the guest's RAM.  Unlike tmpfs (and the 9p share, which
# cannot be mapped writable) it can back a region with the flush-to-
# persistence right, and a Flush then really writes back to a block device.
# Unmounted when the script exits.
scratch_fs() {
	local img
	img=$(mktemp /tmp/xiw-scratch-fs.XXXXXX)
	modprobe -a loop ext4
	truncate -s 64M "$img"
	mkfs.ext4 -q -F "$img"
	mkdir -p "$1"
	mount -o loop "$img" "$1"
	# A test's EXIT trap is tests/guest/case_lib.bash's.
	if declare -F case_at_exit >/dev/null; then
		case_at_exit "umount '$1' 2>/dev/null"
	else
		# shellcheck disable=SC2064 # the directory is known now
		trap "umount '$1' 2>/dev/null || true" EXIT
	fi
}

# wait_listening LOG: waits up to 10 s for LOG to say "listening" (the
# test programs' servers do once they listen); fails if it does not.
wait_listening() {
	for _ in $(seq 1 100); do
		grep -q listening "$1" && return 0
		sleep 0.1
	done
	grep -q listening "$1"
}

# wait_cm_listening PORT: waits up to 30 s for an rdma_cm listener on PORT,
# on any device (the core's resource tracking lists RoCE's and iWARP's
# alike): perftest's client does not retry a refused connect, and how long
# its server takes to listen varies with the host's load, so a fixed pause
# either wastes time or is too short.  Fails if none appears.
wait_cm_listening() {
	# One cm_id per line: the match must not run from one line into the next.
	local nl=$'\n'
	local listening="state LISTEN [^$nl]*src-addr [^ $nl]*:$1([ $nl]|$)"
	for _ in $(seq 1 300); do
		# Not a pipe into grep -q: under pipefail its early exit can fail
		# the match.
		[[ $(rdma resource show cm_id 2>/dev/null) =~ $listening ]] && return 0
		sleep 0.1
	done
	echo "nothing listens on rdma_cm port $1" >&2
	return 1
}

# xiw_count_drains NAME [SECONDS]: xiw's debugfs count NAME (endpoints,
# lingering) reaches 0 within SECONDS (10) times XIW_TIME_FACTOR; prints
# "xiw NAME: 0", else "xiw NAME left: N" and fails.
xiw_count_drains() {
	local count=/sys/kernel/debug/xiw/$1 n
	for _ in $(seq 1 $((${2:-10} * 10 * ${XIW_TIME_FACTOR:-1}))); do
		n=$(<"$count")
		((n == 0)) && { echo "xiw $1: 0"; return 0; }
		sleep 0.1
	done
	echo "xiw $1 left: $n"
	return 1
}

# package_at_least PACKAGE VERSION: the system's PACKAGE is VERSION or
# newer.
package_at_least() {
	dpkg --compare-versions "$(dpkg-query -W -f='${Version}' "$1")" ge "$2"
}

# libibverbs_has_flush: the system's libibverbs has ibv_wr_flush() and
# ibv_wr_atomic_write() (rdma-core >= 45: Debian 13, not 12).
libibverbs_has_flush() {
	package_at_least libibverbs1 45
}

# file_pins_long_term: whether an RDMA device may pin a writable shared
# mapping of a page-cache file long term, as a region with the flush-to-
# persistence right on ext4 needs.  Up to Linux 6.4 it may; since 6.5 GUP
# refuses FOLL_LONGTERM on file mappings that need dirty tracking
# (ib_umem_get: EFAULT) and only device DAX (pmem_dax) can back one.
file_pins_long_term() {
	local rel major minor
	rel=$(uname -r)
	major=${rel%%.*}
	minor=${rel#*.}
	minor=${minor%%.*}
	((major < 6 || (major == 6 && minor < 5)))
}

# pmem_dax: the guest's emulated NVDIMM (scripts/guest --pmem) as device
# DAX; prints its device node (/dev/dax0.0).
pmem_dax() {
	local dax=/dev/dax0.0
	modprobe -a nfit dax_pmem device_dax
	ndctl create-namespace -f -e namespace0.0 -m devdax -a 2M >/dev/null
	[[ -c $dax ]] || { echo "FAIL: no $dax" >&2; return 1; }
	echo "$dax"
}
