# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# shellcheck shell=bash
#
# Host package installer for the xiw scripts (scripts/guest, scripts/test,
# scripts/demo).  Source this file, then call xiw_deps_ensure.
#
# A fresh machine has none of the toolchain, the guest kernel or QEMU, so
# every entry script calls xiw_deps_ensure before doing anything.  Repeat runs
# must stay fast: dpkg-query decides what is missing, and apt-get (update
# included) only runs when something is.

# Everything the project needs on the host: build, tests, the QEMU guest
# (kernel image + headers, busybox for the initramfs, cpio, module
# decompressors, ndctl for the emulated NVDIMM), the peer RNICs' user
# space, the benchmark tools, and the packaging tools (dkms also serves
# guest.packaging, which installs xiw-dkms).
XIW_DEPS_PACKAGES=(
	cmake g++ make pkg-config sparse shellcheck
	libibverbs-dev librdmacm-dev libgtest-dev googletest
	ibverbs-providers ibverbs-utils rdma-core rdmacm-utils perftest qperf
	linux-image-amd64 linux-headers-amd64
	qemu-system-x86 busybox-static iproute2 kmod cpio xz-utils zstd binutils ndctl
	dpkg-dev debhelper dh-dkms dkms fakeroot lintian rpm rpmlint
)

# Print the packages among "$@" that dpkg does not list as installed.
# One dpkg-query call for all of them: this runs on every script start.
xiw_deps_missing() {
	local -A installed=()
	local pkg status
	while read -r pkg status; do
		[[ $status == installed ]] && installed[$pkg]=1
	done < <(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null || true)
	for pkg in "$@"; do
		[[ -n ${installed[$pkg]:-} ]] || printf '%s\n' "$pkg"
	done
}

# xiw_deps_ensure [PACKAGE...]
# Install the given packages (default: all of XIW_DEPS_PACKAGES) when any is
# missing.  Set XIW_DEPS_SKIP=1 to skip the check entirely, e.g. on a host
# that provides the tools some other way.
xiw_deps_ensure() {
	local -a want missing
	if [[ ${XIW_DEPS_SKIP:-0} == 1 ]]; then
		return 0
	fi
	if (($#)); then
		want=("$@")
	else
		want=("${XIW_DEPS_PACKAGES[@]}")
	fi
	mapfile -t missing < <(xiw_deps_missing "${want[@]}")
	((${#missing[@]})) || return 0

	if ((EUID != 0)); then
		echo "xiw: missing packages: ${missing[*]} (run as root to install them)" >&2
		return 1
	fi
	echo "xiw: installing missing packages: ${missing[*]}" >&2
	# Only the first install in a script run pays for the index refresh.
	if [[ -z ${XIW_DEPS_UPDATED:-} ]]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
		XIW_DEPS_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${missing[@]}" >&2
}
