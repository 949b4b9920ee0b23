# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Sourced inside a scripts/guest run: the address scripts/guest gave each
# device's netdev (one host, devices side by side).
addr_of() {
	case $1 in
	xiw0) echo "$XIW_ADDR_A" ;;
	siw0) echo "$XIW_PEER_ADDR_SIW" ;;
	rxe0) echo "$XIW_PEER_ADDR_RXE" ;;
	esac
}
