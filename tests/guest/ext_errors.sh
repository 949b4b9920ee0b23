#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# guest-options: --hosts 2 --peer xiw
# guest-timeout: 600
# Remote errors of the RFC 7306 extensions between two xiw hosts: RDMA
# Write / Send with Immediate toward a QP without a posted receive, a
# FetchAdd to a misaligned address and one to memory registered without
# IBV_ACCESS_REMOTE_ATOMIC each end in the expected completion status and
# flush what follows, with the target memory unchanged.  Then a fake peer
# on a plain TCP socket (xiw_wire_inject) sends single crafted FPDUs: a bad
# AOpCode, a misaligned atomic, a short Immediate Data message, and a valid
# FetchAdd as a control; xiw must answer with the right Terminate (or the
# Atomic Response) and place nothing it must not.
set -euo pipefail
# shellcheck source=datapath_lib.bash
source "$(dirname "$0")/datapath_lib.bash"

port=7800
verbs_error_cases "${XIW_BUILD_DIR:?}/tests/guest/xiw_ext_test" ext \
	"no_receive_imm no_receive_send_imm atomic_unaligned atomic_no_right"
injected_cases ext "bad_aopcode unaligned_atomic short_immediate good_fetch_add"
echo "ext errors: ok"
