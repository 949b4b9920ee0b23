#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --no-xiw --pmem 512
# guest-timeout: 1500
# guest-fixtures: xiw_packages
#
# The .debs of scripts/lib/build-packages.sh (ctest packaging.build; on
# Debian 13 trixie.packaging.build, built in that root) on a system that
# has dkms and the kernel headers but nothing of xiw: dpkg -i, DKMS builds
# xiw.ko for the running kernel, `rdma link add ... type xiw` loads it by
# its alias, libibverbs finds xiw0 through the installed provider
# (RDMAV_DRIVERS unset), the installed xiwdv.h and xiw.pc build a program,
# perftest's Write and atomics and an RDMA Flush run through them, and
# purging removes everything.
# Runs with --no-xiw: the harness loads no xiw.ko from the build tree.
# The timeout is for the sanitizer kernel (x4): there DKMS's build alone
# took 2820 s, and all cases 3400 s.
set -euo pipefail
# shellcheck source=case_lib.bash
source "$(dirname "$0")/case_lib.bash"
# shellcheck source=../../scripts/lib/guest-devices.bash
source "$(dirname "$0")/../../scripts/lib/guest-devices.bash"

# libibverbs must read /etc/libibverbs.d, not the harness's build-tree path.
unset RDMAV_DRIVERS
export DEBIAN_FRONTEND=noninteractive
debs=${XIW_BUILD_DIR:?}/packages/deb
kver=$(uname -r)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
provider=/usr/lib/$multiarch/libibverbs/libxiw-rdmav34.so
driver=/etc/libibverbs.d/xiw.driver
# DKMS compresses the module as the kernel's own are (Debian 13: .ko.xz).
dkms_dir=/lib/modules/$kver/updates/dkms
packages=(xiw-dkms ibverbs-providers-xiw libxiw-dev)

fail() {
	echo "FAIL: $*"
	exit 1
}
not_there() {
	local f
	for f; do
		[[ ! -e $f ]] || fail "$f exists"
	done
}

case_begin "preconditions"
# dkms uses <(...), which needs /dev/fd.  A real system gets it from udev or
# systemd; the guest's bare devtmpfs has none (see the report to the lead:
# guest-init should create it).
if [[ ! -e /dev/fd ]]; then
	ln -s /proc/self/fd /dev/fd
	echo "note: created /dev/fd -> /proc/self/fd"
fi
shopt -s nullglob
files=("$debs"/xiw-dkms_*_all.deb "$debs"/ibverbs-providers-xiw_*.deb "$debs"/libxiw-dev_*_all.deb)
shopt -u nullglob
((${#files[@]} == 3)) || fail "no packages in $debs: run scripts/lib/build-packages.sh (ctest packaging.build)"
printf '%s\n' "${files[@]}"
[[ ! -d /sys/module/xiw ]] || fail "xiw is loaded before the packages are installed"
if modinfo -n xiw 2>/dev/null; then
	fail "an xiw module is already installed for $kver"
fi
not_there "$provider" "$driver" /usr/src/xiw-* /var/lib/dkms/xiw
command -v dkms >/dev/null || fail "dkms is not installed"
[[ -e /lib/modules/$kver/build/Makefile ]] || fail "no kernel headers for $kver"

# DKMS's own build log: the compiler lines for $kver, and what failed.  It
# stays in build/ after a failure and moves to <kver>/<arch>/log/ after a
# build that succeeded.
show_dkms_make_log() {
	local log
	for log in /var/lib/dkms/xiw/*/build/make.log /var/lib/dkms/xiw/*/"$kver"/*/log/make.log; do
		if [[ -e $log ]]; then
			echo "-- $log"
			cat "$log"
		fi
	done
}

case_begin "dpkg -i (DKMS builds xiw.ko for $kver)"
if ! dpkg -i "${files[@]}"; then
	show_dkms_make_log
	fail "dpkg -i"
fi
show_dkms_make_log
dkms status xiw
dpkg -l "${packages[@]}" | tail -n 3

case_begin "the module DKMS installed"
dkms_ko=$(find "$dkms_dir" -maxdepth 1 -name 'xiw.ko*' | head -n1)
[[ -n $dkms_ko ]] || fail "no xiw.ko in $dkms_dir"
ko=$(modinfo -n xiw)
echo "modinfo -n xiw: $ko"
[[ $ko == "$dkms_ko" ]] || fail "modinfo finds $ko, not the DKMS module $dkms_ko"
case $ko in "$XIW_BUILD_DIR"/* | "$XIW_REPO"/*) fail "the module comes from the build tree" ;; esac
[[ $(modinfo -F version xiw) == 0.1.0 ]] || fail "module version is not 0.1.0"
grep -E 'alias rdma[-_]link[-_]xiw xiw$' "/lib/modules/$kver/modules.alias" ||
	fail "depmod did not record the alias rdma-link-xiw"
modprobe -c | grep -E '^softdep xiw ' || fail "/usr/lib/modprobe.d/xiw.conf is not in effect"
[[ ! -d /sys/module/xiw ]] || fail "installing loaded xiw"

case_begin "rdma link add xiw0 type xiw netdev d0, without modprobe"
# The harness loaded the uverbs and RDMA CM modules; unload them so that the
# softdep of /usr/lib/modprobe.d/xiw.conf has to bring them back.
softdep_checked=0
if rmmod rdma_ucm ib_uverbs 2>/dev/null; then
	softdep_checked=1
else
	echo "note: rdma_ucm/ib_uverbs in use; the softdep is not exercised"
fi
ip link add d0 type dummy
ip addr add 192.0.2.1/24 dev d0
ip link set d0 up
rdma link add xiw0 type xiw netdev d0
[[ -d /sys/module/xiw ]] || fail "xiw is not loaded"
[[ $(cat /sys/module/xiw/srcversion) == $(modinfo -F srcversion "$dkms_ko") ]] ||
	fail "the loaded xiw is not $dkms_ko"
if ((softdep_checked)); then
	[[ -d /sys/module/ib_uverbs && -d /sys/module/rdma_ucm ]] ||
		fail "ib_uverbs/rdma_ucm were not loaded with xiw (softdep)"
	echo "softdep: ib_uverbs and rdma_ucm loaded with xiw"
fi
rdma link show | grep -E 'link xiw0/1 .*netdev d0'
for _ in $(seq 1 50); do
	[[ -e /dev/infiniband/uverbs0 ]] && break
	sleep 0.1
done

case_begin "ibv_devinfo -d xiw0 through the installed provider"
work=$(mktemp -d)
ibv_devices
LD_DEBUG=files ibv_devinfo -d xiw0 >"$work/devinfo.out" 2>"$work/ld-debug.out" || {
	cat "$work/devinfo.out" "$work/ld-debug.out"
	fail "ibv_devinfo -d xiw0"
}
cat "$work/devinfo.out"
grep -Eq '^[[:space:]]*transport:[[:space:]]+iWARP' "$work/devinfo.out" || fail "xiw0 is not iWARP"
grep -Eq 'vendor_id:[[:space:]]+0x786977' "$work/devinfo.out" || fail "wrong vendor id"
loaded=$(sed -n 's/.*file=\([^ ]*libxiw-rdmav34\.so\).*/\1/p' "$work/ld-debug.out" | sort -u)
echo "provider loaded: $loaded"
[[ $loaded == "$provider" ]] || fail "libibverbs loaded '$loaded', not $provider"

case_begin "a program built with the installed xiwdv.h and xiw.pc"
[[ $(pkg-config --modversion xiw) == 0.1.0 ]] || fail "pkg-config xiw version"
# shellcheck disable=SC2046 # pkg-config prints separate words
gcc -std=c99 -Wall -Wextra -Werror -o "$work/xiwdv_probe" tests/packaging/xiwdv_probe.c \
	$(pkg-config --cflags --libs xiw)
"$work/xiwdv_probe" xiw0

case_begin "perftest ib_write_lat through the installed packages"
# 1. The server without -R (socket exchange) resolves xiw0, opens it through
#    the installed provider and waits for a client.
# 2. ib_write_lat -R, server and client over xiw0: both must complete.
provider_maps() { # provider_maps PID: the libxiw-rdmav34.so files PID mapped
	grep -o '/[^ ]*libxiw-rdmav34\.so' "/proc/$1/maps" 2>/dev/null | sort -u || true
}
ib_write_lat -d xiw0 -n 5 >"$work/server.out" 2>&1 &
server=$!
maps=
for _ in $(seq 1 40); do
	maps=$(provider_maps "$server")
	[[ -n $maps ]] && break
	kill -0 "$server" 2>/dev/null || break
	sleep 0.5
done
sleep 1
alive=0
kill -0 "$server" 2>/dev/null && alive=1
kill "$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
echo "-- ib_write_lat -d xiw0 (server, killed after a moment):"
cat "$work/server.out"
echo "server pid $server mapped: ${maps:-nothing}"
((alive)) || fail "ib_write_lat server exited instead of waiting for a client"
[[ $maps == "$provider" ]] || fail "ib_write_lat did not load $provider"

# perftest_over_rdma_cm TOOL ARGS...: TOOL -R (rdma_cm) as server and
# client on xiw0 through the installed provider; both must complete.
perftest_over_rdma_cm() {
	local tool=$1 listening=0 client_rc='' server_rc=0 server loaded
	shift
	LD_DEBUG=files timeout 120 stdbuf -oL "$tool" -d xiw0 -R "$@" \
		>"$work/server-R.out" 2>"$work/server-R.err" &
	server=$!
	# It listens on TCP port 18515 through xiw; if the listen is refused it
	# exits at once.
	for _ in $(seq 1 60); do
		if [[ -n $(ss -Hltn 'sport = :18515' 2>/dev/null) ]]; then
			listening=1
			break
		fi
		kill -0 "$server" 2>/dev/null || break
		sleep 0.5
	done
	# Still up without a listener ss can see: let the client try.
	if ((!listening)) && kill -0 "$server" 2>/dev/null; then
		listening=1
	fi
	if ((listening)); then
		client_rc=0
		timeout 60 "$tool" -d xiw0 -R "$@" 192.0.2.1 >"$work/client.out" 2>&1 ||
			client_rc=$?
		echo "-- $tool -d xiw0 -R $* 192.0.2.1 (client, exit $client_rc):"
		cat "$work/client.out"
		((client_rc == 0)) || kill "$server" 2>/dev/null || true
	fi
	wait "$server" || server_rc=$?
	echo "-- $tool -d xiw0 -R $* (server, exit $server_rc):"
	cat "$work/server-R.out"
	grep -v '^[[:space:]]*[0-9]*:' "$work/server-R.err" || true # all but LD_DEBUG
	loaded=$(sed -n 's/.*file=\([^ ]*libxiw-rdmav34\.so\).*/\1/p' "$work/server-R.err" | sort -u)
	echo "$tool -R server loaded: ${loaded:-nothing}"
	[[ $loaded == "$provider" ]] || fail "$tool -R did not load $provider"
	if grep -qiE 'not found|no IB devices' "$work/server-R.out"; then
		fail "$tool -R did not find xiw0"
	fi
	((listening)) || fail "$tool -R server did not listen on xiw0"
	((client_rc == 0 && server_rc == 0)) ||
		fail "$tool -R over xiw0: client exit $client_rc, server exit $server_rc"
	echo "$tool -R: pass (client and server completed)"
}
perftest_over_rdma_cm ib_write_lat -n 5

case_begin "perftest ib_atomic_lat (FetchAdd, CmpSwap) through the installed packages"
perftest_over_rdma_cm ib_atomic_lat -A FETCH_AND_ADD -n 5
perftest_over_rdma_cm ib_atomic_lat -A CMP_AND_SWAP -n 5

case_begin "RDMA Flush, Verify, Atomic Write through the installed packages"
# The tree's xiw_commit_test needs only libibverbs and the provider it
# finds through /etc/libibverbs.d; its target is the emulated NVDIMM as
# device DAX (flush to persistence; a file would need ext4, which 6.12
# does not let RDMA pin).
commit=$XIW_BUILD_DIR/tests/guest/xiw_commit_test
dax=$(pmem_dax)
timeout 300 "$commit" server -f "$dax" 192.0.2.1 7790 >"$work/commit-server.out" 2>&1 &
server=$!
wait_listening "$work/commit-server.out" || true
commit_rc=0
timeout 120 "$commit" client 192.0.2.1 7790 pipeline quit || commit_rc=$?
wait "$server" || commit_rc=1
cat "$work/commit-server.out"
((commit_rc == 0)) || fail "xiw_commit_test pipeline through the installed provider"
rm -rf "$work"

case_begin "purge"
rdma link delete xiw0
ip link del d0
rmmod xiw
dpkg -P "${packages[@]}"
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	[[ -z $status || $status == ?n* ]] || fail "$p is still installed ($status)"
done
not_there "$dkms_dir"/xiw.ko* "$provider" "$driver" /usr/lib/modprobe.d/xiw.conf \
	/usr/src/xiw-0.1.0 /var/lib/dkms/xiw /usr/include/infiniband/xiwdv.h \
	"/usr/share/pkgconfig/xiw.pc"
if modprobe -n xiw 2>/dev/null; then
	fail "modprobe -n xiw still finds a module"
fi
if grep -q 'rdma[-_]link[-_]xiw' "/lib/modules/$kver/modules.alias"; then
	fail "modules.alias still has rdma-link-xiw"
fi
devices=$(ibv_devices 2>&1 || true)
[[ $devices != *xiw* ]] || fail "ibv_devices still lists xiw: $devices"
echo "packaging: ok"
