#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The guest half of scripts/demo: what the stock tools say about the devices.
set -euo pipefail

section() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

section "RDMA links: xiw next to upstream siw and rxe"
run rdma link show
section "Devices as libibverbs sees them (xiw through libxiw-rdmav34.so)"
run ibv_devices
section "xiw0 in detail"
run ibv_devinfo -v -d xiw0

section "Side by side"
printf '%-28s %-14s %-14s %-14s\n' attribute xiw0 siw0 rxe0
for attr in transport fw_ver vendor_id max_qp max_qp_wr max_sge \
	max_cqe max_mr_size max_qp_rd_atom atomic_cap max_srq; do
	row=$(printf '%-28s' "$attr")
	for dev in xiw0 siw0 rxe0; do
		val=$(ibv_devinfo -v -d "$dev" |
			sed -n "s/^[[:space:]]*$attr:[[:space:]]*\\(.*\\)/\\1/p" | head -n1)
		row+=$(printf ' %-14s' "${val:--}")
	done
	printf '%s\n' "$row"
done

# A short real workload on each device: server and client on one host,
# which perftest and rping run over the device that owns the address.
# shellcheck source=guest-devices.bash
source "$(dirname "$0")/guest-devices.bash"

section "rping over xiw0 (3 validated pings)"
addr=$(addr_of xiw0)
rping -s -a "$addr" -C 3 -V -v >/dev/null 2>&1 &
sleep 2
run rping -c -a "$addr" -C 3 -V -v -S 64
wait

port=18600
for dev in xiw0 siw0 rxe0; do
	section "ib_write_lat -R, 2 bytes, over $dev"
	addr=$(addr_of "$dev")
	gid=()
	[ "$dev" = rxe0 ] && gid=(-x 1)
	port=$((port + 1))
	timeout 120 ib_write_lat -R -d "$dev" "${gid[@]}" -p "$port" -s 2 -n 1000 >/dev/null 2>&1 &
	sleep 3
	timeout 120 ib_write_lat -R -d "$dev" "${gid[@]}" -p "$port" -s 2 -n 1000 "$addr" |
		grep -E '^ *#bytes|^ *2 '
	wait || true
done
