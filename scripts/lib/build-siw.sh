#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Build upstream siw.ko (Debian's kernel ships without CONFIG_RDMA_SIW) so a
# guest can run it as the reference iWARP peer of xiw.
#
#   scripts/lib/build-siw.sh [KERNEL_RELEASE]     prints the path of siw.ko
#   source scripts/lib/build-siw.sh; xiw_build_siw BUILD_DIR KERNEL_RELEASE
#
# Everything is cached in $BUILD/siw/: the linux-source .deb, the extracted
# siw sources and one Kbuild tree per kernel release.  A repeat call that
# finds an up-to-date siw.ko only prints its path.

# Download the linux-source .deb into $1 unless a copy is already there;
# prints its path.
xiw_siw_fetch_deb() {
	local cache=$1 deb
	deb=$(compgen -G "$cache/linux-source-6.1_*.deb" | sort -V | tail -n1 || true)
	if [[ -z $deb ]]; then
		echo "xiw: downloading linux-source-6.1 for siw (one-time)" >&2
		# A machine that never ran apt-get update has no package index;
		# refresh once and retry rather than failing.
		if ! (cd "$cache" && apt-get download -q linux-source-6.1 >&2); then
			DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
			(cd "$cache" && apt-get download -q linux-source-6.1 >&2)
		fi
		deb=$(compgen -G "$cache/linux-source-6.1_*.deb" | sort -V | tail -n1)
	fi
	printf '%s\n' "$deb"
}

# Extract only siw and its uapi header from the .deb into $2; the full
# kernel tree is ~1.4 GB unpacked and siw needs a few hundred KB of it.
xiw_siw_extract() {
	local deb=$1 dest=$2 tmp
	[[ -f $dest/.from && $(<"$dest/.from") == "${deb##*/}" ]] && return 0
	rm -rf "$dest"
	tmp=$dest.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	dpkg-deb --fsys-tarfile "$deb" |
		tar -xO ./usr/src/linux-source-6.1.tar.xz |
		tar -xJ -C "$tmp" --strip-components=1 --wildcards \
			'linux-source-6.1/drivers/infiniband/sw/siw/*' \
			'linux-source-6.1/include/uapi/rdma/siw-abi.h'
	printf '%s\n' "${deb##*/}" >"$tmp/.from"
	mv "$tmp" "$dest"
}

# xiw_build_siw BUILD_DIR KERNEL_RELEASE: prints the path of siw.ko.
xiw_build_siw() {
	local build=$1 kver=$2 cache src kdir deb stamp
	cache=$build/siw
	src=$cache/src
	kdir=$cache/$kver
	mkdir -p "$cache"
	if [[ ! -d /lib/modules/$kver/build ]]; then
		echo "xiw: no kernel build tree for $kver (install linux-headers-$kver)" >&2
		return 1
	fi
	# Serialise concurrent guest runs that both want siw built.
	exec {lockfd}>"$cache/.lock"
	flock "$lockfd"

	deb=$(xiw_siw_fetch_deb "$cache")
	xiw_siw_extract "$deb" "$src"

	stamp="${deb##*/} $kver"
	if [[ -f $kdir/siw.ko && -f $kdir/.stamp && $(<"$kdir/.stamp") == "$stamp" ]]; then
		flock -u "$lockfd"
		printf '%s\n' "$kdir/siw.ko"
		return 0
	fi
	rm -rf "$kdir"
	mkdir -p "$kdir"
	cp "$src"/drivers/infiniband/sw/siw/*.[ch] "$src"/drivers/infiniband/sw/siw/Makefile "$kdir"/
	# Put the uapi header from the same source release ahead of the one in
	# the headers package, so sources and ABI header always agree.
	mkdir -p "$kdir/uapi/rdma"
	cp "$src/include/uapi/rdma/siw-abi.h" "$kdir/uapi/rdma/"
	echo "xiw: building siw.ko for $kver" >&2
	make -s -C "/lib/modules/$kver/build" M="$kdir" CONFIG_RDMA_SIW=m \
		KCFLAGS="-I$kdir/uapi" modules >&2
	printf '%s\n' "$stamp" >"$kdir/.stamp"
	flock -u "$lockfd"
	printf '%s\n' "$kdir/siw.ko"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	xiw_build_siw "${XIW_BUILD_DIR:-$repo/build}" "${1:-$(uname -r)}"
fi
