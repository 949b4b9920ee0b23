#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Build what guest.commit_wr_flush needs to show ibv_wr_flush() on xiw:
# Debian 12's rdma-core 44 has no ibv_wr_flush (it came with 45), so this
# takes the rdma-core source of the next Debian release from the Debian
# mirror, builds its libibverbs, and builds the xiw provider and
# xiw_commit_test against its headers, below $BUILD/rdma-core-new:
#   src/rdma-core-<v>/   the upstream source (orig tarball, checksum from
#                        the suite's signed Sources index)
#   rdma-core/           its build tree: include/, lib/libibverbs.so.1
#   xiw/                 xiw configured with -DRDMA_CORE_SOURCE_DIR
#   apt/                 the private apt lists used to find the source
#   etc/libibverbs.d/    that libibverbs' (empty) driver config directory
# Nothing is installed: the guest test runs the programs with
# LD_LIBRARY_PATH and RDMAV_DRIVERS pointing here.  $BUILD is
# ${XIW_BUILD_DIR:-<repo>/build}; XIW_RDMA_CORE_SUITE (default trixie)
# picks the Debian suite.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${XIW_BUILD_DIR:-$repo/build}
mkdir -p "$build"
build=$(cd "$build" && pwd)
out=$build/rdma-core-new
suite=${XIW_RDMA_CORE_SUITE:-trixie}
mirror=http://deb.debian.org/debian

# shellcheck source=deps.sh
source "$repo/scripts/lib/deps.sh"
xiw_deps_ensure cmake g++ make pkg-config python3 libnl-3-dev libnl-route-3-dev \
	libibverbs-dev librdmacm-dev libgtest-dev debian-archive-keyring

fail() {
	echo "build-rdma-core-new: FAIL: $*" >&2
	exit 1
}
step() {
	echo "== $*"
}

# ---- the source: name, version and checksum from the suite's index ----------
mkdir -p "$out/apt/lists/partial" "$out/src"
cat >"$out/apt/sources.list" <<EOF
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main
EOF
apt_opts=(-o "Dir::Etc::SourceList=$out/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	-o "Dir::State::Lists=$out/apt/lists" -o APT::Sandbox::User=root)
step "rdma-core source in Debian $suite"
apt-get "${apt_opts[@]}" -qq update || fail "apt-get update of $suite's Sources"
# The first stanza's version, pool directory and orig tarball checksum.
read -r version dir sha name < <(apt-cache "${apt_opts[@]}" showsrc rdma-core | awk '
	/^$/ { if (name) exit }
	/^Version: / { ver = $2 }
	/^Directory: / { dir = $2 }
	/^Checksums-Sha256:/ { sums = 1; next }
	/^[^ ]/ { sums = 0 }
	sums && $3 ~ /\.orig\.tar\./ { sha = $1; name = $3 }
	END { if (name) print ver, dir, sha, name }')
[ -n "${name:-}" ] || fail "no rdma-core source package in $suite"
upstream=${version%-*}
upstream=${upstream#*:}
echo "rdma-core $version: $mirror/$dir/$name"
major=${upstream%%.*}
((major >= 45)) || fail "rdma-core $upstream in $suite predates ibv_wr_flush (45)"

src=$out/src/rdma-core-$upstream
if [ ! -f "$src/libibverbs/verbs.h" ]; then
	/usr/lib/apt/apt-helper -o APT::Sandbox::User=root download-file "$mirror/$dir/$name" "$out/src/$name" \
		"SHA256:$sha" || fail "downloading $name"
	rm -rf "$src"
	tar -xf "$out/src/$name" -C "$out/src"
	[ -f "$src/libibverbs/verbs.h" ] || fail "$name has no rdma-core-$upstream/"
fi
grep -q 'wr_flush' "$src/libibverbs/verbs.h" || fail "rdma-core $upstream's verbs.h has no wr_flush"

# ---- its libibverbs -----------------------------------------------------------
step "libibverbs $upstream"
# Its driver config directory: an empty one of ours (the programs name the
# provider in RDMAV_DRIVERS), not /etc's, whose providers were built for 44.
mkdir -p "$out/etc/libibverbs.d"
cmake -S "$src" -B "$out/rdma-core" -DNO_PYVERBS=1 -DNO_MAN_PAGES=1 \
	-DCMAKE_INSTALL_SYSCONFDIR="$out/etc" \
	-DCMAKE_BUILD_TYPE=Release >"$out/rdma-core-configure.log" 2>&1 ||
	{ tail -20 "$out/rdma-core-configure.log"; fail "configuring rdma-core"; }
cmake --build "$out/rdma-core" --target ibverbs -j"$(nproc)" >"$out/rdma-core-build.log" 2>&1 ||
	{ tail -20 "$out/rdma-core-build.log"; fail "building libibverbs"; }
[ -e "$out/rdma-core/lib/libibverbs.so.1" ] || fail "no libibverbs.so.1 in $out/rdma-core/lib"

# ---- xiw against it ---------------------------------------------------------------
step "xiw provider and xiw_commit_test against rdma-core $upstream"
cmake -S "$repo" -B "$out/xiw" -DRDMA_CORE_SOURCE_DIR="$src" \
	-DRDMA_CORE_BUILD_DIR="$out/rdma-core" >"$out/xiw-configure.log" 2>&1 ||
	{ tail -20 "$out/xiw-configure.log"; fail "configuring xiw"; }
grep -q '^XIW_HAVE_IBV_WR_FLUSH:INTERNAL=1$' "$out/xiw/CMakeCache.txt" ||
	fail "the provider did not find ibv_wr_flush in rdma-core $upstream's headers"
cmake --build "$out/xiw" --target xiw-rdmav34 xiw_commit_test -j"$(nproc)" \
	>"$out/xiw-build.log" 2>&1 ||
	{ tail -30 "$out/xiw-build.log"; fail "building xiw against rdma-core $upstream"; }
echo "$upstream" >"$out/version"
echo "build-rdma-core-new: rdma-core $upstream libibverbs, xiw provider with ibv_wr_flush: ok"
