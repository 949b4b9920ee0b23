#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Build the sanitizer guest kernel for `scripts/guest --debug-kernel`:
# Debian's linux-source-6.1, x86_64_defconfig plus scripts/lib/
# debug-kernel.config (KASAN, UBSAN, lockdep, kmemleak, ...).
#
#   scripts/lib/build-debug-kernel.sh           prints the kernel's directory
#   source scripts/lib/build-debug-kernel.sh; xiw_build_debug_kernel BUILD_DIR
#
# The result lives in $BUILD/debug-kernel/<key>/, where <key> hashes the
# fragment, the linux-source package version, the compiler and this script:
#   bzImage     the kernel
#   release     its release string (uname -r)
#   modules/    `make modules_install INSTALL_MOD_PATH=`: lib/modules/<release>
#   src/        the configured and built kernel tree, for out-of-tree
#               modules: make -C src M=DIR modules
#   build.log   the build's output
#   done        written last; a directory without it is rebuilt
# A second call with the same key only prints the directory; a build for a
# new key removes the kernels of other keys.  make runs
# under `nice -n 10`, so guests of concurrent runs keep priority.

# Build dependencies (on a fresh Debian 12 machine nothing is installed).
XIW_DEBUG_KERNEL_PACKAGES=(
	linux-source-6.1 gcc make bc flex bison libelf-dev libssl-dev dwarves
	rsync xz-utils kmod cpio
)

xiw_debug_kernel_fragment() {
	printf '%s\n' "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/debug-kernel.config"
}

# The tarball the linux-source-6.1 package installs.
xiw_debug_kernel_tarball() {
	dpkg -L linux-source-6.1 | grep -E '/linux-source-6\.1\.tar\.xz$' | head -n1
}

# The cache key: what decides the kernel's content.
xiw_debug_kernel_key() {
	{
		cat "$(xiw_debug_kernel_fragment)" "${BASH_SOURCE[0]}"
		dpkg-query -W -f='${Version}\n' linux-source-6.1
		gcc --version | head -n1
	} | sha256sum | cut -c1-16
}

# Fail unless every option of the fragment is in .config as written: a typo
# or an unmet dependency makes Kconfig drop an option without a word.
xiw_debug_kernel_verify() {
	local config=$1 fragment=$2 line opt bad=0
	while IFS= read -r line; do
		if [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
			opt=${BASH_REMATCH[1]}
			if grep -q "^$opt=" "$config"; then
				echo "xiw: debug kernel: wanted '$line', have '$(grep "^$opt=" "$config")'" >&2
				bad=1
			fi
		elif [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)= ]]; then
			opt=${BASH_REMATCH[1]}
			if ! grep -qxF -- "$line" "$config"; then
				echo "xiw: debug kernel: wanted '$line', have '$(grep -E "^$opt=|^# $opt is not set" "$config" || echo "nothing (unknown option or unmet dependency)")'" >&2
				bad=1
			fi
		fi
	done <"$fragment"
	return "$bad"
}

# xiw_debug_kernel_build DIR: configure and build into DIR (empty).  Every
# step checks its own status: this runs in an `if`, where set -e is off.
xiw_debug_kernel_build() {
	local dir=$1 tarball fragment jobs
	fragment=$(xiw_debug_kernel_fragment)
	tarball=$(xiw_debug_kernel_tarball)
	[[ -f $tarball ]] || { echo "xiw: linux-source-6.1 has no tarball" >&2; return 1; }
	jobs=$(nproc)
	mkdir -p "$dir/src" || return 1
	tar -xJf "$tarball" -C "$dir/src" --strip-components=1 || return 1
	cd "$dir/src" || return 1
	make -s x86_64_defconfig || return 1
	scripts/kconfig/merge_config.sh -m .config "$fragment" || return 1
	make -s olddefconfig || return 1
	xiw_debug_kernel_verify .config "$fragment" || return 1
	nice -n 10 make -j "$jobs" bzImage modules || return 1
	nice -n 10 make -s modules_install INSTALL_MOD_PATH="$dir/modules" || return 1
	cp arch/x86/boot/bzImage "$dir/bzImage" || return 1
	make -s kernelrelease >"$dir/release" || return 1
	cp .config "$dir/config"
}

# xiw_build_debug_kernel BUILD_DIR: prints the kernel's directory.
xiw_build_debug_kernel() {
	local build=$1 key dir lockfd start
	xiw_deps_ensure "${XIW_DEBUG_KERNEL_PACKAGES[@]}" || return 1
	key=$(xiw_debug_kernel_key)
	mkdir -p "$build/debug-kernel" || return 1
	# Absolute: the build cds into the kernel tree and writes to $dir from
	# there (a relative BUILD_DIR put bzImage and modules/ inside src/).
	build=$(cd "$build" && pwd) || return 1
	dir=$build/debug-kernel/$key
	# Serialise concurrent callers; the second finds the first's result.
	exec {lockfd}>"$build/debug-kernel/.lock"
	if ! flock -n "$lockfd"; then
		echo "xiw: waiting for another build of the debug kernel" >&2
		flock "$lockfd"
	fi
	if [[ ! -f $dir/done ]]; then
		# Kernels of other keys are outdated (2.5 GB each): drop them.
		find "$build/debug-kernel" -mindepth 1 -maxdepth 1 -type d \
			-regex '.*/[0-9a-f]\{16\}' -exec rm -rf {} +
		mkdir -p "$dir"
		start=$SECONDS
		echo "xiw: building the debug kernel in $dir (about 30 min on 2 cores; log: $dir/build.log)" >&2
		if ! (xiw_debug_kernel_build "$dir") >"$dir/build.log" 2>&1; then
			tail -n 40 "$dir/build.log" >&2
			echo "xiw: building the debug kernel failed; log: $dir/build.log" >&2
			flock -u "$lockfd"
			return 1
		fi
		echo "$((SECONDS - start))" >"$dir/build-seconds"
		echo "xiw: debug kernel $(<"$dir/release") built in $((SECONDS - start)) s" >&2
		touch "$dir/done"
	fi
	flock -u "$lockfd"
	printf '%s\n' "$dir"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	set -euo pipefail
	repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	# shellcheck source=scripts/lib/deps.sh
	source "$repo/scripts/lib/deps.sh"
	xiw_build_debug_kernel "${XIW_BUILD_DIR:-$repo/build}"
fi
