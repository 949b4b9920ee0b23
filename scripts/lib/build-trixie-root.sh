#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Build the Debian 13 (trixie) root file system for
# `scripts/guest --platform trixie`: trixie's kernel 6.12 and its headers
# and compiler, rdma-core 56, perftest 25, qperf and the build and
# packaging tools, from the Debian mirror, with mmdebstrap.
#
#   scripts/lib/build-trixie-root.sh            prints the root's directory
#   scripts/lib/build-trixie-root.sh --unit     also builds this tree in it
#                                               and runs the unit tests there
#   source scripts/lib/build-trixie-root.sh; xiw_build_trixie_root BUILD_DIR
#
# The result lives in $BUILD/trixie/<key>/, where <key> hashes the package
# list, the mirror and the function that makes the root:
#   root/       the file system (the guest's read-only lower layer)
#   release     the kernel's release string (uname -r in the guest)
#   build/      this tree built inside root/ (xiw_trixie_build)
#   siw/        upstream siw.ko for that kernel, from its linux-source
#   versions    every package and its version (dpkg-query)
#   mmdebstrap.log  how the root was made
#   build.log   the last xiw_trixie_build's output
#   done        written last; a directory without it is made again
# A second call with the same key only prints the directory; a build for a
# new key removes the roots of other keys.  The mirror's newest trixie is
# taken at build time: remove the directory to refresh it.

XIW_TRIXIE_MIRROR=${XIW_TRIXIE_MIRROR:-http://deb.debian.org/debian}

# What the guest needs from trixie: the kernel to boot and build for (and
# its source, for siw, which trixie's kernel lacks too), the RDMA user
# space to test with (rdma-core 56, perftest 25, qperf), what the guest
# tests run besides (python3 for their probes and fake peers, busybox for
# ping), and what builds and checks xiw.ko, the provider and the packages
# inside the root.
XIW_TRIXIE_PACKAGES=(
	linux-image-amd64 linux-headers-amd64 linux-source gcc make
	libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils
	rdma-core rdmacm-utils perftest qperf
	cmake g++ pkg-config libnl-3-dev libnl-route-3-dev libgtest-dev
	iproute2 kmod procps psmisc util-linux mawk e2fsprogs nvme-cli ndctl
	python3 busybox
	build-essential dpkg-dev debhelper dh-dkms dkms fakeroot lintian git
)

xiw_trixie_key() {
	{
		printf '%s\n' "${XIW_TRIXIE_PACKAGES[@]}" "$XIW_TRIXIE_MIRROR"
		declare -f xiw_trixie_make
	} | sha256sum | cut -c1-16
}

# xiw_trixie_make DIR: mmdebstrap into DIR/root.  Returns non-zero on any
# failure (runs in an `if`, where set -e is off).
xiw_trixie_make() {
	local dir=$1 include rel
	include=$(IFS=,; echo "${XIW_TRIXIE_PACKAGES[*]}")
	# INITRD=No: the kernel's postinst hook makes no initramfs (scripts/guest
	# makes its own); no documentation, manual pages or translations.
	INITRD=No nice -n 10 mmdebstrap --mode=root --variant=apt \
		--keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
		--include="$include" \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		trixie "$dir/root" "deb $XIW_TRIXIE_MIRROR trixie main" \
		>"$dir/mmdebstrap.log" 2>&1 || return 1
	rel=$(find "$dir/root/boot" -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' |
		sed 's/^vmlinuz-//' | sort -V | tail -n1)
	[[ -n $rel && -f $dir/root/lib/modules/$rel/modules.dep ]] || {
		echo "xiw: trixie root has no kernel with modules" >&2
		return 1
	}
	[[ -d $dir/root/usr/src/linux-headers-$rel ]] || {
		echo "xiw: trixie root has no headers for $rel" >&2
		return 1
	}
	printf '%s\n' "$rel" >"$dir/release"
	# shellcheck disable=SC2016 # dpkg-query's format, not the shell's
	chroot "$dir/root" dpkg-query -W -f='${Package} ${Version}\n' >"$dir/versions" || return 1
}

# xiw_build_trixie_root BUILD_DIR: print the root's directory, making it
# first if needed.
xiw_build_trixie_root() {
	local build=$1 key dir lockfd
	key=$(xiw_trixie_key)
	dir=$build/trixie/$key
	mkdir -p "$build/trixie"
	exec {lockfd}>"$build/trixie/.lock"
	flock "$lockfd"
	if [[ ! -e $dir/done ]]; then
		xiw_deps_ensure mmdebstrap debian-archive-keyring >&2 || return 1
		rm -rf "$dir"
		mkdir -p "$dir"
		echo "xiw: making the Debian 13 root in $dir (a few minutes)" >&2
		if ! xiw_trixie_make "$dir"; then
			echo "xiw: making the trixie root failed; see $dir/mmdebstrap.log" >&2
			tail -n 20 "$dir/mmdebstrap.log" >&2
			exec {lockfd}>&-
			return 1
		fi
		: >"$dir/done"
		find "$build/trixie" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
	fi
	exec {lockfd}>&-
	printf '%s\n' "$dir"
}

# xiw_trixie_binds REPO BUILD: the host directories a trixie chroot or
# guest needs at their own paths, comma-separated: the tree, and the
# build tree unless it is inside the tree.
xiw_trixie_binds() {
	case $2/ in
	"$1"/*) printf '%s\n' "$1" ;;
	*) printf '%s,%s\n' "$1" "$2" ;;
	esac
}

# xiw_trixie_chroot DIR REPO BUILD CMD...: run CMD inside the root
# DIR/root, which sees REPO and BUILD at their own paths (bind mounts),
# /proc and /dev, all in a private mount namespace that ends with CMD.
xiw_trixie_chroot() {
	local dir=$1 repo=$2 build=$3
	shift 3
	# shellcheck disable=SC2016 # the inner script's own variables
	unshare --mount --propagation private bash -euc '
		root=$1 binds=$2
		shift 2
		IFS=, read -ra dirs <<<"$binds"
		for d in "${dirs[@]}"; do
			mkdir -p "$root$d"
			mount --bind "$d" "$root$d"
		done
		mount -t proc proc "$root/proc"
		mount --bind /dev "$root/dev"
		exec chroot "$root" "$@"
	' _ "$dir/root" "$(xiw_trixie_binds "$repo" "$build")" "$@"
}

# xiw_trixie_build DIR REPO BUILD: configure and build REPO inside the
# root DIR/root, into DIR/build (make redoes only what changed): xiw.ko
# and tests/kmod for trixie's kernel, the provider against rdma-core 56
# and the test programs, with trixie's compiler; and siw.ko into DIR/siw.
# Output in DIR/build.log.
xiw_trixie_build() {
	local dir=$1 lockfd rc=0
	# One build at a time (concurrent guest runs share the tree).
	exec {lockfd}>"$dir/.build-lock"
	flock "$lockfd"
	xiw_trixie_build_locked "$@" || rc=$?
	exec {lockfd}>&-
	return "$rc"
}

xiw_trixie_build_locked() {
	local dir=$1 repo=$2 build=$3 tarball top
	if [[ ! -f $dir/siw/Makefile ]]; then
		tarball=$(find "$dir/root/usr/src" -maxdepth 1 -name 'linux-source-*.tar.xz' | head -n1)
		[[ -n $tarball ]] || { echo "xiw: no linux-source tarball in the trixie root" >&2; return 1; }
		top=$(basename "$tarball" .tar.xz)
		rm -rf "$dir/siw.tmp"
		mkdir -p "$dir/siw.tmp/uapi/rdma"
		tar -xJf "$tarball" -C "$dir/siw.tmp" --strip-components=5 \
			"$top/drivers/infiniband/sw/siw" || return 1
		tar -xJf "$tarball" -O "$top/include/uapi/rdma/siw-abi.h" \
			>"$dir/siw.tmp/uapi/rdma/siw-abi.h" || return 1
		mv "$dir/siw.tmp" "$dir/siw"
	fi
	# Configured once; the build re-runs CMake itself when its inputs change.
	{
		{ [[ -f $dir/build/CMakeCache.txt ]] ||
			xiw_trixie_chroot "$dir" "$repo" "$build" \
				cmake -S "$repo" -B "$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo; } &&
			xiw_trixie_chroot "$dir" "$repo" "$build" \
				cmake --build "$dir/build" -j "$(nproc)" &&
			xiw_trixie_chroot "$dir" "$repo" "$build" \
				make -s -C "/lib/modules/$(<"$dir/release")/build" M="$dir/siw" \
				CONFIG_RDMA_SIW=m KCFLAGS="-I$dir/siw/uapi" modules
	} >"$dir/build.log" 2>&1
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	# shellcheck source=deps.sh
	source "$(dirname "${BASH_SOURCE[0]}")/deps.sh"
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	build=$(cd "${XIW_BUILD_DIR:-$repo/build}" && pwd)
	dir=$(xiw_build_trixie_root "$build")
	if [[ ${1:-} == --unit ]]; then
		xiw_trixie_build "$dir" "$repo" "$build" ||
			{ tail -n 30 "$dir/build.log" >&2; exit 1; }
		# unit.shellcheck checks the host's tooling, not the release's.
		xiw_trixie_chroot "$dir" "$repo" "$build" \
			ctest --test-dir "$dir/build" --output-on-failure --no-tests=error \
			-R '^unit\.' -E '^unit\.shellcheck$'
	else
		printf '%s\n' "$dir"
	fi
fi
