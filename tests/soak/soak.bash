#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The lifecycle and fault soak, run in a two-host guest with xiw on both
# ends (scripts/guest --hosts 2 --peer xiw; tests/guest/soak.sh and the
# long run long.soak).  Phases, each bounded in count and time:
#   scale    SOAK_SCALE_QPS QPs and SOAK_SCALE_MRS MRs on one device, each QP
#            a Send and a FetchAdd, one CQ overflow (tests/soak/scale.cpp)
#   churn    SOAK_CHURN_CYCLES connect/transfer/disconnect cycles over 64
#            QPs from host b to host a (tests/soak/churn.cpp)
#   kill     SOAK_KILLS times: kill -9 of the client or the server at a
#            random moment of a transfer
#   link     `ip link set down` and `rdma link delete` under traffic
#   netns    a network namespace with live QPs deleted (its processes
#            killed, the namespace then goes with its netdev and device)
#   rmmod    `rmmod xiw` while connections exist: refused or clean
#   memcg    registration under a memory cgroup limit
#   faults   failslab and fail_page_alloc in the client's and server's
#            calls (the sanitizer kernel only: the stock one has no fault
#            injection, and the phase says so)
# After each phase: the devices' resource counts and xiw's module
# reference count are back to where they started, no task is in D state,
# xiw has no connection endpoint left, the sanitizer kernel's kmemleak
# has nothing, and `rmmod xiw` is clean
# (xiw is loaded again and its links made for the next phase).
set -euo pipefail

bin=${XIW_BUILD_DIR:?set by scripts/guest}/tests/guest
churn=$bin/xiw_churn
A=${XIW_ADDR_A:?} B=${XIW_ADDR_B:?}
factor=${XIW_TIME_FACTOR:-1}
phases=${SOAK_PHASES:-scale churn kill link netns rmmod memcg faults}

# shellcheck source=../guest/case_lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/../guest/case_lib.bash"
# shellcheck source=../../scripts/lib/kernel-problems.bash
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/kernel-problems.bash"

say() { echo "soak: $*"; }
die() {
	echo "soak: FAIL: $*"
	exit 1
}

in_a() { ip netns exec a "$@"; }

# "pd N cq N qp N cm_id N mr N ctx N srq N" of both devices.
resources() {
	echo "a: $(in_a rdma resource show | sed -n "s/^[0-9]*: ${XIW_DEV_A:?}: *//p")" \
		"b: $(rdma resource show | sed -n "s/^[0-9]*: ${XIW_DEV_B:?}: *//p")"
}

d_state() {
	ps -eo stat=,pid=,comm= | awk '$1 ~ /^D/'
}

links() {
	in_a rdma link add "$XIW_DEV_A" type xiw netdev "$XIW_NETDEV_A"
	rdma dev set "$XIW_DEV_A" netns a
	rdma link add "$XIW_DEV_B" type xiw netdev "$XIW_NETDEV_B"
}

# wait_until SECONDS CMD...: until CMD succeeds, at most SECONDS.
wait_until() {
	local until=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < until)) || return 1
		sleep 0.2
	done
}

baseline_resources=
baseline_refcnt=
at_baseline() {
	[[ $(resources) == "$baseline_resources" ]] &&
		[[ $(</sys/module/xiw/refcnt) == "$baseline_refcnt" ]]
}

# xiw frees every connection endpoint once its connection is over; one
# handed to a ULP that never answers lasts 6 mpa_timeouts (xiw_cm.c).
no_endpoints() {
	[[ $(</sys/kernel/debug/xiw/endpoints) == 0 ]]
}

kmemleak_clean() {
	local f=/sys/kernel/debug/kmemleak n
	[[ -e $f ]] || return 0
	echo scan >$f
	sleep 5
	echo scan >$f
	n=$(grep -c 'unreferenced object' $f || true)
	say "kmemleak: $n unreferenced objects"
	if ((n)); then
		head -60 $f
		return 1
	fi
	echo clear >$f
}

# check PHASE: everything back where it started, then xiw reloaded.
check() {
	wait_until $((30 * factor)) at_baseline ||
		die "$1: resources $(resources), xiw refcnt $(</sys/module/xiw/refcnt);" \
			"before: $baseline_resources, refcnt $baseline_refcnt"
	wait_until $((30 * factor)) test -z "$(d_state)" ||
		die "$1: tasks in D state: $(d_state)"
	wait_until $(((6 * $(</sys/module/xiw/parameters/mpa_timeout) + 30) * factor)) no_endpoints ||
		die "$1: xiw endpoints left: $(</sys/kernel/debug/xiw/endpoints)"
	kmemleak_clean || die "$1: kmemleak found leaks"
	rmmod xiw || die "$1: rmmod xiw failed"
	# shellcheck disable=SC2086 # the parameters are words
	insmod "${XIW_KO:?}" ${XIW_KO_PARAMS:-}
	links
	wait_until 30 at_baseline || die "$1: after the reload: $(resources)"
	say "$1: back to baseline, xiw unloaded cleanly and loaded again"
}

server_pid=
start_server() { # PORT SECONDS [wrapper...]
	local port=$1 secs=$2
	shift 2
	# Not through a function: $! must be the server itself, to stop it.
	ip netns exec a "$@" "$churn" server "$A" "$port" "$secs" &
	server_pid=$!
	wait_until 30 sh -c "ip netns exec a ss -Hltn 'sport = :$port' | grep -q ." ||
		die "no server on port $port"
}
stop_server() {
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
}

# A short churn that must succeed: the stack works after a phase.
works() {
	start_server "$1" $((60 * factor))
	"$churn" client "$A" "$1" 4 8 $((60 * factor)) || die "$2: no clean cycles afterwards"
	stop_server
}

phase_scale() {
	ulimit -l unlimited
	timeout $((600 * factor)) "$bin/xiw_scale" "$B" 7990 "${SOAK_SCALE_QPS:-4096}" \
		"${SOAK_SCALE_MRS:-16384}" || die "scale"
}

phase_churn() {
	start_server 7900 $((900 * factor))
	timeout $((900 * factor)) "$churn" client "$A" 7900 64 "${SOAK_CHURN_CYCLES:-300}" \
		$((600 * factor)) || die "churn"
	stop_server
}

phase_kill() {
	local n=${SOAK_KILLS:-10} i port cpid victim
	for ((i = 0; i < n; i++)); do
		port=$((7910 + i % 40))
		start_server "$port" $((120 * factor))
		"$churn" client "$A" "$port" 16 1000000 $((120 * factor)) tolerate >/dev/null &
		cpid=$!
		sleep "$((RANDOM % 20 / 10)).$((RANDOM % 10))"
		if ((RANDOM % 2)); then victim=$server_pid; else victim=$cpid; fi
		kill -KILL "$victim"
		sleep 0.$((RANDOM % 10))
		kill -KILL "$server_pid" "$cpid" 2>/dev/null || true
		wait "$server_pid" "$cpid" 2>/dev/null || true
		[[ -z $(d_state) ]] || sleep $((5 * factor))
		[[ -z $(d_state) ]] || die "kill $i: tasks in D state: $(d_state)"
	done
	say "kill: $n kills of the client or the server mid-transfer"
}

phase_link() {
	local cpid
	start_server 7960 $((300 * factor))
	timeout $((300 * factor)) "$churn" client "$A" 7960 16 1000000 $((40 * factor)) \
		tolerate &
	cpid=$!
	sleep $((5 * factor))
	say "link: ${XIW_NETDEV_A} down for 2 s under traffic"
	in_a ip link set "$XIW_NETDEV_A" down
	sleep 2
	in_a ip link set "$XIW_NETDEV_A" up
	sleep $((5 * factor))
	say "link: rdma link delete ${XIW_DEV_A} under traffic"
	in_a rdma link delete "$XIW_DEV_A"
	wait "$server_pid" || true	# its device went away
	in_a rdma link add "$XIW_DEV_A" type xiw netdev "$XIW_NETDEV_A"
	rdma dev set "$XIW_DEV_A" netns a
	wait "$cpid" || die "link: the client did not finish"
	works 7961 link
}

phase_netns() {
	local spid cpid
	ip netns add c
	ip -n c link set lo up
	ip -n c link add dc type dummy
	ip -n c addr add 192.0.2.9/24 dev dc
	ip -n c link set dc up
	ip netns exec c rdma link add xiwc type xiw netdev dc
	rdma dev set xiwc netns c
	ip netns exec c "$churn" server 192.0.2.9 7970 $((300 * factor)) &
	spid=$!
	wait_until 30 sh -c "ip netns exec c ss -Hltn 'sport = :7970' | grep -q ." ||
		die "netns: no server"
	ip netns exec c "$churn" client 192.0.2.9 7970 8 1000000 $((300 * factor)) tolerate \
		>/dev/null &
	cpid=$!
	sleep $((5 * factor))
	say "netns: namespace c deleted with live QPs; its processes killed"
	ip netns delete c
	kill -KILL "$spid" "$cpid"
	wait "$spid" "$cpid" 2>/dev/null || true
	# (In exclusive mode a device of a dying namespace that outlived it
	# would come back to init_net.)
	wait_until $((60 * factor)) sh -c '! rdma dev | grep -q xiwc' ||
		die "netns: device xiwc outlived its namespace"
}

phase_rmmod() {
	local cpid rc=0 log=/tmp/churn-rmmod.log
	start_server 7975 $((300 * factor))
	"$churn" client "$A" 7975 16 1000000 $((60 * factor)) tolerate >"$log" &
	cpid=$!
	wait_until $((30 * factor)) grep -q "slots connecting" "$log" || die "rmmod: no client"
	sleep $((5 * factor))
	# Held: no route resolution in flight when the devices go (a race in
	# rdma_cm itself, explained at hold_gate in churn.cpp); the open
	# connections keep moving data.
	kill -USR1 "$cpid"
	wait_until $((60 * factor)) grep -q "held:" "$log" || die "rmmod: the client did not hold"
	say "rmmod: $(grep -o 'held: .*' "$log")"
	timeout $((60 * factor)) rmmod xiw 2>/tmp/rmmod.err || rc=$?
	((rc != 124)) || die "rmmod: rmmod xiw hung with connections open"
	say "rmmod under connections: exit $rc $(</tmp/rmmod.err)"
	if ((rc == 0)); then
		wait "$server_pid" "$cpid" 2>/dev/null || true
		# shellcheck disable=SC2086 # the parameters are words
		insmod "${XIW_KO:?}" ${XIW_KO_PARAMS:-}
		links
	else
		kill -KILL "$cpid" 2>/dev/null || true
		wait "$cpid" 2>/dev/null || true
		stop_server
	fi
	works 7976 rmmod
}

phase_memcg() {
	local cg=/sys/fs/cgroup rc=0
	[[ -e $cg/cgroup.controllers ]] || mount -t cgroup2 none $cg
	echo +memory >$cg/cgroup.subtree_control
	mkdir -p $cg/xiw-soak
	echo 72M >$cg/xiw-soak/memory.max
	# 16384 registered pages are 64 MiB of the process's own; what the
	# kernel keeps for each region is charged too and does not fit: a
	# registration fails or the OOM killer ends the process; either way
	# nothing may be left behind.
	# shellcheck disable=SC2016 # for the inner shell
	timeout $((300 * factor)) sh -c 'echo $$ >"$1" && ulimit -l unlimited &&
		exec "$0" "$2" 7980 64 16384' "$bin/xiw_scale" $cg/xiw-soak/cgroup.procs "$B" ||
		rc=$?
	((rc != 124)) || die "memcg: registration under the limit hung"
	say "memcg: 16384 MRs under memory.max 72M: exit $rc"
	rmdir $cg/xiw-soak 2>/dev/null || true
}

phase_faults() {
	local d=/sys/kernel/debug f
	for f in failslab fail_page_alloc; do
		echo Y >$d/$f/task-filter
		echo "${SOAK_FAULT_PERCENT:-2}" >$d/$f/probability
		echo 1 >$d/$f/interval
		echo 1000000 >$d/$f/times
		echo 0 >$d/$f/verbose
	done
	echo N >$d/fail_page_alloc/ignore-gfp-wait
	echo N >$d/failslab/ignore-gfp-wait
	# The harness takes allocation-failure reports between these lines
	# for what they are (scripts/lib/kernel-problems.bash).
	echo "$XIW_FAULTS_ON" >/dev/kmsg
	# Only these processes' allocations fail (make-it-fail, set by
	# xiw_churn itself once it is running), in every call they make:
	# create, register, connect, post, destroy.
	start_server 7985 $((600 * factor)) env XIW_CHURN_FAULTS=1
	XIW_CHURN_FAULTS=1 "$churn" client "$A" 7985 16 1000000 \
		"${SOAK_FAULT_SECONDS:-60}" tolerate || true
	stop_server
	for f in failslab fail_page_alloc; do
		echo 0 >$d/$f/probability
	done
	echo "$XIW_FAULTS_OFF" >/dev/kmsg
	say "faults: $((1000000 - $(<$d/failslab/times))) slab and" \
		"$((1000000 - $(<$d/fail_page_alloc/times))) page allocations failed" \
		"in the client and the server"
	works 7986 faults
}

baseline_resources=$(resources)
baseline_refcnt=$(</sys/module/xiw/refcnt)
say "baseline: $baseline_resources, xiw refcnt $baseline_refcnt"
for p in $phases; do
	if [[ $p == faults && ! -d /sys/kernel/debug/failslab ]]; then
		say "faults: not run: this kernel has no fault injection (the sanitizer kernel has)"
		continue
	fi
	start=$SECONDS
	case_begin "soak phase $p"
	"phase_$p"
	check "$p"
	say "$p: $((SECONDS - start)) s"
done
say "ok"
