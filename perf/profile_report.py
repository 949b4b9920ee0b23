#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Per-message cost by stage from perf/guest-profile.sh's output.

    profile_report.py DIR [OUT.md]

DIR holds rates.csv and BENCH.DEV.script.gz (`perf script -F
comm,cpu,ip,sym,dso` of a `perf record -e cpu-clock -a -g` of the whole
guest while BENCH streamed on DEV) and rates.csv their message rates.  Each sample is charged to one stage:
the first frame, from the leaf up, whose function names a stage (so a
memcpy called by tcp_sendmsg is the socket's send, one called by the RNIC's
receive path is placement); a sample whose leaf is in user space is user
space.  A stage's cost per message is its CPU time over the profile divided
by the messages sent meanwhile (rate x the profile's length); all CPUs count,
so idle time shows how much of the guest the benchmark left unused.
"""
import collections
import csv
import gzip
import os
import re
import sys

# (stage, pattern on a kernel function's name), tried in this order on each
# frame from the leaf up.  Helpers that every stage calls (memcpy, locks,
# allocators) name none: the caller's stage gets them.
STAGES = [
    ("idle", r"^(default_idle|arch_cpu_idle|do_idle|cpu_idle_poll|"
     r"\w*safe_halt|acpi_idle|cpuidle_)"),
    ("CRC", r"^(crc32c|__crc32c|crc32_|crc32c_pcl|chksum_|crc_t10dif|"
     r"siw_crc|rxe_icrc|rxe_crc|xiw_crc)"),
    ("completion", r"^(xiw_cq_|xiw_wqe_done|xiw_wqe_finish|xiw_sq_retire|"
     r"siw_sqe_complete|siw_rqe_complete|siw_reap_cqe|siw_cqe|rxe_cq_post|"
     r"do_complete|rxe_completer|make_send_cqe)"),
    ("RNIC receive: parse and place",
     r"^(xiw_rx_|xiw_qp_data_ready|xiw_rq_|xiw_rqe_|xiw_mr_|siw_rx|siw_proc|"
     r"siw_tcp_rx|siw_qp_llp_data_ready|siw_rresp|siw_orqe|siw_check|"
     r"siw_get_hdr|siw_get_trailer|siw_srx|rxe_rcv|rxe_udp_encap_recv|"
     r"rxe_responder|rxe_resp|rxe_receiver|rxe_mr_copy|copy_data|"
     r"execute|atomic_reply|rxe_check)"),
    ("RNIC send: framing",
     r"^(xiw_tx_|xiw_sq_|xiw_wqe_|xiw_qp_tx|xiw_post_send|siw_qp_sq|siw_sq_|"
     r"siw_tx|siw_send|siw_0copy|siw_post_send|siw_run_sq|siw_sq_resume|"
     r"siw_qp_sq_process|rxe_requester|rxe_xmit_packet|rxe_init_packet|"
     r"rxe_prepare|rxe_post_send|rxe_send|init_req_packet|finish_packet|"
     r"rxe_sched_task|rxe_run_task|do_task|rxe_do_task|post_one_send)"),
    ("socket send: TCP/UDP, IP, loopback",
     r"^(tcp_sendmsg|tcp_sendpage|do_tcp_sendpages|tcp_push|__tcp_push|"
     r"tcp_write_xmit|__tcp_transmit_skb|tcp_transmit_skb|tcp_build_frag|"
     r"tcp_stream_alloc|tcp_skb_entail|tcp_current_mss|kernel_sendmsg|"
     r"kernel_sendpage|sock_sendmsg|inet_sendmsg|udp_sendmsg|udp_send_skb|"
     r"udp_tunnel_xmit|udp_tunnel_xmit_skb|ip_queue_xmit|__ip_queue_xmit|"
     r"ip_local_out|__ip_local_out|ip_output|ip_finish_output|ip_finish_"
     r"output2|ip_send_skb|ip_make_skb|__dev_queue_xmit|dev_queue_xmit|"
     r"dev_hard_start_xmit|loopback_xmit|netif_rx|__netif_rx|"
     r"neigh_hh_output|rxe_send|tcp_event_new_data_sent|sk_stream_)"),
    ("socket receive: softirq, IP, TCP/UDP",
     r"^(net_rx_action|__napi_poll|process_backlog|__netif_receive_skb|"
     r"netif_receive_skb|ip_rcv|ip_list_rcv|ip_sublist_rcv|ip_local_deliver|"
     r"ip_protocol_deliver_rcu|tcp_v4_rcv|tcp_v4_do_rcv|tcp_rcv_|tcp_ack|"
     r"tcp_data_queue|tcp_queue_rcv|tcp_clean_rtx_queue|tcp_read_sock|"
     r"tcp_cleanup_rbuf|tcp_send_ack|__tcp_send_ack|tcp_delack|tcp_add_"
     r"backlog|__release_sock|release_sock|lock_sock|udp_rcv|__udp4_lib_rcv|"
     r"udp_queue_rcv|udp_unicast_rcv|__inet_lookup|tcp_event_data_recv|"
     r"tcp_check_space|sk_forced_mem_schedule|tcp_grow_window)"),
    ("system calls (doorbell, poll)",
     r"^(entry_SYSCALL|do_syscall_64|syscall_exit|exit_to_user_mode|"
     r"__x64_sys_|ksys_|vfs_write|vfs_read|__fget|ib_uverbs_|uverbs_|"
     r"ib_uverbs|xiw_qp_tx_doorbell|xiw_doorbell|siw_notify|rxe_post|"
     r"__do_sys|do_epoll|ep_poll)"),
    ("scheduler, workers, softirq entry",
     r"^(schedule|__schedule|__cond_resched|try_to_wake_up|wake_up_|"
     r"__wake_up|finish_task_switch|pick_next_|enqueue_|dequeue_|"
     r"update_curr|worker_thread|process_one_work|queue_work|__queue_work|"
     r"kthread|smpboot_thread|run_ksoftirqd|__do_softirq|do_softirq|"
     r"__local_bh_enable_ip|irq_exit|select_task_rq|ttwu_|sched_)"),
    ("interrupts and timers",
     r"^(asm_sysvec|sysvec_|__sysvec|hrtimer_|tick_|update_process_times|"
     r"scheduler_tick|irqentry_|asm_common_interrupt|common_interrupt|"
     r"handle_irq|__irq_exit)"),
]
STAGE_RES = [(name, re.compile(pat)) for name, pat in STAGES]
STAGE_ORDER = ["user space (app, libibverbs, provider)"] + [n for n, _ in STAGES] + [
    "other kernel"]
DEVICES = ["xiw0", "siw0", "rxe0"]

HEADER = re.compile(r"^\S.*\[(\d+)\]")
FRAME = re.compile(r"^\s+([0-9a-f]+)\s+(\S+?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)\s*$")


def kernel_dso(dso):
    return dso.startswith("[kernel") or (dso.startswith("[") and dso != "[unknown]")


def stage_of(frames):
    """frames: [(sym, dso)], leaf first."""
    if not frames:
        return "other kernel"
    if not kernel_dso(frames[0][1]):
        return STAGE_ORDER[0]
    for sym, dso in frames:
        if not kernel_dso(dso):
            break
        for name, rx in STAGE_RES:
            if rx.match(sym):
                return name
    return "other kernel"


def read_samples(path):
    """Yields the leaf-first frame list of each sample."""
    frames = []
    with gzip.open(path, "rt", errors="replace") as f:
        for line in f:
            if not line.strip():
                if frames:
                    yield frames
                frames = []
                continue
            m = FRAME.match(line)
            if m:
                frames.append((m.group(2), m.group(3)))
            elif HEADER.match(line):
                if frames:
                    yield frames
                frames = []
    if frames:
        yield frames


def profile(path):
    stages = collections.Counter()
    leaves = collections.Counter()
    for frames in read_samples(path):
        stages[stage_of(frames)] += 1
        leaves[frames[0][0] if kernel_dso(frames[0][1]) else frames[0][1]] += 1
    return stages, leaves


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    rows = {}
    with open(os.path.join(d, "rates.csv")) as f:
        for r in csv.DictReader(f):
            rows[(r["benchmark"], r["device"])] = r
    benches = list(dict.fromkeys(b for b, _ in rows))
    out = []
    for bench in benches:
        devs = [dv for dv in DEVICES if (bench, dv) in rows]
        rate = {dv: float(rows[(bench, dv)]["msgs_per_s"]) for dv in devs}
        cost, leaves, busy = {}, {}, {}
        for dv in devs:
            path = os.path.join(d, f"{bench}.{dv}.script.gz")
            if not os.path.exists(path) or rate[dv] <= 0:
                continue
            hz = float(rows[(bench, dv)]["sample_hz"])
            cpus = int(rows[(bench, dv)]["cpus"])
            stages, leaves[dv] = profile(path)
            # Every CPU takes hz samples a second, idle or not: the samples
            # tell how long the profile ran.
            samples = sum(stages.values())
            msgs = rate[dv] * samples / hz / cpus
            cost[dv] = {s: n / hz / msgs * 1e6 for s, n in stages.items()}
            busy[dv] = cpus * (samples - stages["idle"]) / samples
        out.append(f"### {bench}\n")
        ratio = []
        for other in ("siw0", "rxe0"):
            if rate.get("xiw0") and rate.get(other):
                ratio.append(f"xiw/{other[:3]} {rate['xiw0'] / rate[other]:.2f}")
        out.append("messages/s: " + ", ".join(f"{dv} {rate[dv]:.0f}" for dv in devs) +
                   (" (" + ", ".join(ratio) + ")" if ratio else "") + "\n")
        shown = [dv for dv in devs if dv in cost]
        out.append("| µs of CPU per message | " + " | ".join(shown) + " |")
        out.append("|---|" + "---|" * len(shown))
        for s in STAGE_ORDER:
            if not any(cost[dv].get(s, 0) >= 0.05 for dv in shown):
                continue
            out.append(f"| {s} | " +
                       " | ".join(f"{cost[dv].get(s, 0):.1f}" for dv in shown) + " |")
        out.append("| all but idle | " + " | ".join(
            f"{sum(v for k, v in cost[dv].items() if k != 'idle'):.1f}" for dv in shown) +
            " |")
        # The profile's busy share against the kernel's own accounting: a
        # profile that missed the busy CPUs would be told by this row.
        out.append("| CPUs busy: profile / /proc/stat | " + " | ".join(
            f"{busy[dv]:.2f} / "
            f"{float(rows[(bench, dv)]['busy_cpus']):.2f}" for dv in shown) + " |\n")
        if "xiw0" in leaves:
            total = sum(leaves["xiw0"].values())
            top = ", ".join(f"{sym} {100 * n / total:.1f}%"
                            for sym, n in leaves["xiw0"].most_common(12))
            out.append(f"xiw0's hottest leaves: {top}\n")
    out.append("User space includes the benchmark's busy polling: perftest spins on its "
               "CQ (for xiw in xiw::poll_cq), so its share is waiting as much as work.")
    text = "\n".join(out)
    print(text)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
