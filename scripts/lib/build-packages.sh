#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Build the Debian and RPM packages of xiw from the working tree and check
# them on the host:
#   $BUILD/packages/src/xiw-<v>/   copy of the working tree (tracked and
#                                  untracked, not ignored, files)
#   $BUILD/packages/deb/           *.deb, *.changes, *.buildinfo
#   $BUILD/packages/rpm/           rpmbuild top dir; RPMS/ and SOURCES/
#   $BUILD/packages/*.log          dpkg-buildpackage, lintian, rpmbuild,
#                                  rpmlint and the content checks
# Exits non-zero if a build fails, lintian reports an error, or a package
# lacks a file in its place.  tests/guest/packaging.sh installs the .debs
# in a guest.  $BUILD is ${XIW_BUILD_DIR:-<repo>/build}.
#   build-packages.sh --platform trixie
# builds the Debian packages for Debian 13 inside its root
# (scripts/lib/build-trixie-root.sh) with that release's debhelper, dkms
# and lintian, against its rdma-core 56, into the build tree of that root
# (<root dir>/build/packages/deb: the trixie guest's
# $XIW_BUILD_DIR/packages/deb).  RPMs are built on the host only.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${XIW_BUILD_DIR:-$repo/build}
mkdir -p "$build"
build=$(cd "$build" && pwd)
out=$build/packages

# shellcheck source=deps.sh
source "$repo/scripts/lib/deps.sh"

if [[ ${1:-} == --platform ]]; then
	[[ ${2:-} == trixie ]] || { echo "build-packages: unknown platform '${2:-}'" >&2; exit 2; }
	# shellcheck source=build-trixie-root.sh
	source "$repo/scripts/lib/build-trixie-root.sh"
	dir=$(xiw_build_trixie_root "$build")
	# The root has every package the build needs (XIW_TRIXIE_PACKAGES).
	xiw_trixie_chroot "$dir" "$repo" "$build" env XIW_BUILD_DIR="$dir/build" XIW_DEPS_SKIP=1 \
		XIW_PACKAGES_RPM=0 "$repo/scripts/lib/build-packages.sh"
	exit
fi
rpm=${XIW_PACKAGES_RPM:-1}
xiw_deps_ensure dpkg-dev debhelper dh-dkms dkms fakeroot lintian \
	cmake g++ make pkg-config libibverbs-dev libgtest-dev librdmacm-dev
((!rpm)) || xiw_deps_ensure rpm rpmlint

fail() {
	echo "build-packages: FAIL: $*" >&2
	exit 1
}
step() {
	echo "== $*"
}

# ---- one version everywhere -------------------------------------------------
deb_version=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)
version=${deb_version%-*}
cmake_version=$(sed -n 's/^project(xiw VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")
ko_version=$(awk '/#define XIW_VERSION_(MAJOR|MINOR|PATCH)/ {v = v (v == "" ? "" : ".") $3} END {print v}' \
	"$repo/kernel/xiw.h")
spec_version=$(sed -n 's/^Version:[[:space:]]*//p' "$repo/redhat/xiw.spec")
for v in "$cmake_version" "$ko_version" "$spec_version"; do
	[[ $v == "$version" ]] || fail "versions differ: debian/changelog $version," \
		"CMakeLists.txt $cmake_version, kernel/xiw.h $ko_version, redhat/xiw.spec $spec_version"
done
echo "xiw $version (Debian $deb_version)"

# ---- the source tree --------------------------------------------------------
# The working tree, not HEAD: a test run checks the code as it is, committed
# or not.  Ignored files (the build tree, Kbuild output) stay out; so does
# the build directory when it is inside the repository but not ignored.
rm -rf "$out"
src=$out/src/xiw-$version
mkdir -p "$src" "$out/deb" "$out/rpm"
(
	cd "$repo"
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files -z --cached --others --exclude-standard
	else
		find . -path ./build -prune -o -path ./.git -prune -o -type f -print0
	fi
) | while IFS= read -r -d '' f; do
	f=${f#./}
	[[ -f $repo/$f ]] || continue # deleted in the working tree
	case "$repo/$f" in "$build"/*) continue ;; esac
	printf '%s\0' "$f"
done | tar -C "$repo" --null -T - -cf - | tar -C "$src" -xf -

# Source0 of the RPM: the same tree, before anything is built in it.
tar -C "$out/src" --owner=0 --group=0 --sort=name \
	-czf "$out/xiw-$version.tar.gz" "xiw-$version"

# ---- Debian -----------------------------------------------------------------
step "dpkg-buildpackage -us -uc -b (log: $out/dpkg-buildpackage.log)"
if ! (cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc)" \
	dpkg-buildpackage -us -uc -b) >"$out/dpkg-buildpackage.log" 2>&1; then
	tail -n 60 "$out/dpkg-buildpackage.log"
	fail "dpkg-buildpackage"
fi
mv "$out"/src/*.deb "$out"/src/*.changes "$out"/src/*.buildinfo "$out/deb/"
ls -l "$out/deb"

step "lintian (log: $out/lintian.log)"
changes=$(ls "$out"/deb/*.changes)
lintian_rc=0
lintian --fail-on error --display-info --pedantic --tag-display-limit 0 "$changes" \
	>"$out/lintian.log" 2>&1 || lintian_rc=$?
cat "$out/lintian.log"
((lintian_rc == 0)) || fail "lintian reported errors (exit $lintian_rc)"
if grep -q '^E: ' "$out/lintian.log"; then
	fail "lintian reported errors"
fi

step "package contents (log: $out/contents.log)"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb() {
	ls "$out"/deb/"$1"_*.deb
}
{
	for p in xiw-dkms ibverbs-providers-xiw libxiw-dev; do
		echo "---- $p"
		dpkg-deb -f "$(deb "$p")" Package Version Architecture Depends Recommends
		dpkg-deb -c "$(deb "$p")" | awk '{print $1, $6}'
	done
} >"$out/contents.log"
cat "$out/contents.log"
has() { # has PACKAGE PATH
	dpkg-deb -c "$(deb "$1")" | awk '{print $6}' | grep -x "./${2#/}" >/dev/null ||
		fail "$1 lacks $2"
}
has ibverbs-providers-xiw "/usr/lib/$multiarch/libibverbs/libxiw-rdmav34.so"
has ibverbs-providers-xiw /etc/libibverbs.d/xiw.driver
has ibverbs-providers-xiw /usr/share/man/man7/xiw.7.gz
has libxiw-dev /usr/include/infiniband/xiwdv.h
has libxiw-dev /usr/share/pkgconfig/xiw.pc
for f in dkms.conf kernel/Kbuild kernel/xiw_main.c kernel/xiw.h \
	include/uapi/rdma/xiw-abi.h; do
	has xiw-dkms "/usr/src/xiw-$version/$f"
done
has xiw-dkms /usr/lib/modprobe.d/xiw.conf
dpkg-deb --fsys-tarfile "$(deb xiw-dkms)" | tar -xOf - "./usr/src/xiw-$version/dkms.conf" |
	grep -x "PACKAGE_VERSION=\"$version\"" >/dev/null || fail "dkms.conf: PACKAGE_VERSION is not $version"
depends=$(dpkg-deb -f "$(deb ibverbs-providers-xiw)" Depends)
ibv_major=$(dpkg-query -W -f='${Version}' libibverbs-dev)
ibv_major=${ibv_major%%.*}
if ! grep -q "libibverbs1 (>= $ibv_major)" <<<"$depends" ||
	! grep -q "libibverbs1 (<< $((ibv_major + 1))~)" <<<"$depends"; then
	fail "ibverbs-providers-xiw does not pin libibverbs1 $ibv_major: $depends"
fi
[[ $(dpkg-deb -f "$(deb xiw-dkms)" Depends) == *dkms* ]] || fail "xiw-dkms does not depend on dkms"
# The private provider ABI the .so needs is the one the package pins.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dpkg-deb -x "$(deb ibverbs-providers-xiw)" "$tmp"
objdump -p "$tmp/usr/lib/$multiarch/libibverbs/libxiw-rdmav34.so" | grep 'IBVERBS_PRIVATE_34' >/dev/null ||
	fail "libxiw-rdmav34.so does not need IBVERBS_PRIVATE_34"

# ---- RPM --------------------------------------------------------------------
if ((!rpm)); then
	echo "build-packages: ok: $out/deb"
	exit 0
fi
step "rpmbuild -bb (log: $out/rpmbuild.log)"
top=$out/rpm
mkdir -p "$top"/{SOURCES,SPECS,BUILD,RPMS,SRPMS,BUILDROOT}
cp "$out/xiw-$version.tar.gz" "$top/SOURCES/"
cp "$repo/redhat/xiw.spec" "$top/SPECS/"
# --nodeps: this host's RPM database is empty (Debian); the build
# requirements are Debian packages, checked by xiw_deps_ensure above.
# The Packager tag names who built the packages, so it comes from here.
if ! rpmbuild --define "_topdir $top" --define "packager ${XIW_PACKAGER:-xiw developers <xiw@example.invalid>}" \
	--nodeps -ba "$top/SPECS/xiw.spec" \
	>"$out/rpmbuild.log" 2>&1; then
	tail -n 60 "$out/rpmbuild.log"
	fail "rpmbuild"
fi
grep -E '^Wrote:' "$out/rpmbuild.log"

step "rpm -qpl / -qpR (log: $out/rpm-contents.log)"
rpm_of() {
	ls "$top"/RPMS/*/"$1-$version"-*.rpm
}
{
	for p in xiw xiw-devel xiw-dkms; do
		echo "---- $p: files"
		rpm -qpl "$(rpm_of "$p")"
		echo "---- $p: requires"
		rpm -qpR "$(rpm_of "$p")"
	done
} >"$out/rpm-contents.log" 2>&1
cat "$out/rpm-contents.log"
rpm_has() { # rpm_has PACKAGE PATH
	rpm -qpl "$(rpm_of "$1")" | grep -x "$2" >/dev/null || fail "$1.rpm lacks $2"
}
rpm_has xiw /usr/lib64/libibverbs/libxiw-rdmav34.so
rpm_has xiw /etc/libibverbs.d/xiw.driver
rpm_has xiw /usr/share/man/man7/xiw.7
rpm_has xiw-devel /usr/include/infiniband/xiwdv.h
rpm_has xiw-devel /usr/share/pkgconfig/xiw.pc
rpm_has xiw-dkms "/usr/src/xiw-$version/dkms.conf"
rpm_has xiw-dkms "/usr/src/xiw-$version/kernel/Kbuild"
rpm_has xiw-dkms /etc/modprobe.d/xiw.conf
rpm -qpR "$(rpm_of xiw)" | grep 'IBVERBS_PRIVATE_34' >/dev/null ||
	fail "xiw.rpm does not require the IBVERBS_PRIVATE_34 interface"
if ! rpm -qpR "$(rpm_of xiw)" | grep -qx "libibverbs(x86-64) >= $ibv_major" ||
	! rpm -qpR "$(rpm_of xiw)" | grep -qx "libibverbs(x86-64) < $((ibv_major + 1))"; then
	fail "xiw.rpm does not pin libibverbs $ibv_major"
fi

step "rpmlint (log: $out/rpmlint.log)"
rpmlint_rc=0
rpmlint -r "$repo/redhat/xiw.rpmlintrc" "$top/SPECS/xiw.spec" "$top"/RPMS/*/*.rpm "$top"/SRPMS/*.rpm \
	>"$out/rpmlint.log" 2>&1 || rpmlint_rc=$?
cat "$out/rpmlint.log"
# rpmlint exits 64 for errors, 66 for badness over the threshold.
if grep -qE '^[^ ]+: E: ' "$out/rpmlint.log" || ((rpmlint_rc & 64)); then
	fail "rpmlint reported errors (exit $rpmlint_rc)"
fi

echo "build-packages: ok: $out/deb, $top/RPMS"
