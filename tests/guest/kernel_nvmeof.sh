#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-timeout: 600
# A kernel ULP on xiw: NVMe over Fabrics, the in-tree nvmet-rdma target and
# nvme-rdma host, both on xiw0 ($XIW_ADDR_A).  Their work requests come
# from the kernel (ib_post_send/recv, fast registration, local and remote
# invalidation, Read with Invalidate on the target, ib_drain_qp); each pass
# writes a random pattern through the fabric, reads it back both through
# the fabric and from the target's backing device, and then takes it all
# down again.  The second pass has the target receive on an SRQ
# (nvmet-rdma use_srq=1, ib_post_srq_recv).  Afterwards xiw.ko must unload.
set -euo pipefail
# shellcheck source=case_lib.bash
source "$(dirname "$0")/case_lib.bash"

nqn=xiw-nvmeof-test
cfs=/sys/kernel/config/nvmet
image=/tmp/nvmeof-backing.img
pattern=/tmp/nvmeof-pattern
size_mib=16
backing=
ctrl=

fail() {
	echo "kernel_nvmeof: FAIL: $*"
	exit 1
}

teardown() {
	[ -z "$ctrl" ] || echo 1 >"/sys/class/nvme/$ctrl/delete_controller" 2>/dev/null || true
	ctrl=
	rm -f "$cfs/ports/1/subsystems/$nqn" 2>/dev/null || true
	rmdir "$cfs/ports/1" 2>/dev/null || true
	[ ! -d "$cfs/subsystems/$nqn/namespaces/1" ] ||
		echo 0 >"$cfs/subsystems/$nqn/namespaces/1/enable" 2>/dev/null || true
	rmdir "$cfs/subsystems/$nqn/namespaces/1" 2>/dev/null || true
	rmdir "$cfs/subsystems/$nqn" 2>/dev/null || true
	[ -z "$backing" ] || losetup -d "$backing" 2>/dev/null || true
	backing=
	modprobe -r nvme-rdma nvmet-rdma 2>/dev/null || true
}
case_at_exit teardown

# target_up [MODULE_PARAMS...]: a namespace on a loop device, exported
# over RDMA on $XIW_ADDR_A:4420.
target_up() {
	modprobe nvmet-rdma "$@"
	truncate -s "${size_mib}M" "$image"
	backing=$(losetup -f --show "$image")
	mkdir "$cfs/subsystems/$nqn"
	echo 1 >"$cfs/subsystems/$nqn/attr_allow_any_host"
	mkdir "$cfs/subsystems/$nqn/namespaces/1"
	echo -n "$backing" >"$cfs/subsystems/$nqn/namespaces/1/device_path"
	echo 1 >"$cfs/subsystems/$nqn/namespaces/1/enable"
	mkdir "$cfs/ports/1"
	echo rdma >"$cfs/ports/1/addr_trtype"
	echo ipv4 >"$cfs/ports/1/addr_adrfam"
	echo "$XIW_ADDR_A" >"$cfs/ports/1/addr_traddr"
	echo 4420 >"$cfs/ports/1/addr_trsvcid"
	ln -s "$cfs/subsystems/$nqn" "$cfs/ports/1/subsystems/$nqn"
}

# host_connect: sets $ctrl and $dev.
host_connect() {
	local answer ns
	modprobe nvme-rdma
	# What nvme-cli's "connect" writes; the kernel answers with the
	# controller instance.
	exec 3<>/dev/nvme-fabrics
	echo "transport=rdma,traddr=$XIW_ADDR_A,trsvcid=4420,nqn=$nqn,nr_io_queues=2,queue_size=32" >&3 ||
		fail "connect refused (see dmesg)"
	read -r answer <&3 || true
	exec 3>&-
	ctrl=$(sed -n 's/.*instance=\([0-9]*\).*/nvme\1/p' <<<"$answer")
	[ -n "$ctrl" ] || fail "no controller instance in '$answer'"
	# The namespace's block device (with native multipath that of the
	# subsystem, nvme<subsystem>n1; the controller's own path is hidden).
	dev=
	for _ in $(seq 1 100); do
		for ns in /sys/block/nvme*n1; do
			[[ $ns =~ /nvme[0-9]+n1$ ]] && [ -b "/dev/${ns##*/}" ] &&
				dev=/dev/${ns##*/}
		done
		[ -n "$dev" ] && break
		sleep 0.1
	done
	[ -n "$dev" ] || fail "$ctrl has no namespace"
	echo "$ctrl: $(cat "/sys/class/nvme/$ctrl/transport") $(cat "/sys/class/nvme/$ctrl/address"), namespace $dev"
}

check_data() {
	local want got
	head -c "$((size_mib << 20))" /dev/urandom >"$pattern"
	# Direct I/O in 1 MiB requests: each a multi-page fast registration.
	dd if="$pattern" of="$dev" bs=1M oflag=direct status=none
	want=$(sha256sum <"$pattern")
	got=$(dd if="$dev" bs=1M iflag=direct status=none | sha256sum)
	[ "$got" = "$want" ] || fail "data read through the fabric differs"
	echo "$size_mib MiB read back through the fabric: ok"
	sync
	got=$(dd if="$backing" bs=1M iflag=direct status=none | sha256sum)
	[ "$got" = "$want" ] || fail "the target's backing device holds other data"
	echo "target's backing device: ok"
	# A short request of an odd number of sectors too.
	dd if=/dev/urandom of="$pattern" bs=512 count=7 status=none
	dd if="$pattern" of="$dev" bs=512 count=7 seek=1001 oflag=direct status=none
	got=$(dd if="$dev" bs=512 count=7 skip=1001 iflag=direct status=none | sha256sum)
	[ "$got" = "$(sha256sum <"$pattern")" ] || fail "3.5 KiB at sector 1001 differs"
	echo "3.5 KiB at sector 1001: ok"
}

modprobe loop
modprobe nvmet
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config

case_begin "pass 1: a receive queue per QP"
target_up
host_connect
check_data
teardown

case_begin "pass 2: the target receives on an SRQ (use_srq=1)"
target_up use_srq=1
host_connect
srqs=$(rdma resource show srq | grep -c '^dev xiw0' || true)
[ "$srqs" -gt 0 ] || fail "nvmet-rdma created no SRQ on xiw0"
echo "SRQs on xiw0: $srqs"
check_data
teardown

case_begin "nvme-rdma and nvmet-rdma unloaded"
lsmod | grep -q '^nvme_rdma' && fail "nvme-rdma still loaded"
echo "kernel_nvmeof: ok"
