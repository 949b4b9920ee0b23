#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
"""Summarise perf/guest-bench.sh's CSV: median (min-max) per benchmark and
device, the ratios of xiw's median to siw's, rxe's and TCP's, as a markdown
table; also the data file perf/chart.gp plots."""
import csv
import math
import statistics
import sys
from collections import defaultdict

DEVICES = ["xiw0", "xiw0-nocrc", "siw0", "rxe0"]
TCP_REFERENCE = {"us": "tcp_lat 2 B", "MB/s": "tcp_bw 64 KiB"}


def main(csv_path, table_path, chart_path):
    values = defaultdict(list)
    units = {}
    order = []
    with open(csv_path, newline="") as f:
        for row in csv.DictReader(f):
            try:
                value = float(row["value"])
            except ValueError:
                continue
            if not math.isfinite(value):  # perftest prints inf on a glitch
                continue
            key = (row["benchmark"], row["device"])
            values[key].append(value)
            units[row["benchmark"]] = row["unit"]
            if row["benchmark"] not in order:
                order.append(row["benchmark"])

    def median(bench, dev):
        v = values.get((bench, dev))
        return statistics.median(v) if v else None

    def cell(bench, dev):
        v = values.get((bench, dev))
        if not v:
            return "n/a"
        return f"{statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})"

    def ratio(a, b):
        return f"{a / b:.2f}" if a is not None and b else "n/a"

    lines = [
        "| benchmark | unit | xiw | xiw, no CRC | siw | rxe | xiw/siw | "
        "xiw no CRC/siw | xiw/rxe | xiw/TCP |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    chart = []
    for bench in order:
        if bench in TCP_REFERENCE.values():
            continue
        unit = units[bench]
        tcp = median(TCP_REFERENCE.get(unit, ""), "tcp")
        xiw = median(bench, "xiw0")
        siw = median(bench, 'siw0')
        lines.append(
            f"| {bench} | {unit} | {cell(bench, 'xiw0')} "
            f"| {cell(bench, 'xiw0-nocrc')} | {cell(bench, 'siw0')} "
            f"| {cell(bench, 'rxe0')} | {ratio(xiw, siw)} "
            f"| {ratio(median(bench, 'xiw0-nocrc'), siw)} "
            f"| {ratio(xiw, median(bench, 'rxe0'))} | {ratio(xiw, tcp)} |")
        # The chart normalises to siw: rows siw has no value for (xiw-only
        # benchmarks) would only be empty slots.
        if siw:
            chart.append('"%s (%s)" %s' % (bench, unit, " ".join(
                f"{median(bench, d) or 0:.3f}" for d in DEVICES)))
    for bench in TCP_REFERENCE.values():
        if (bench, "tcp") in values:
            lines.append(f"| {bench} (plain TCP, same path) | {units[bench]} "
                         f"| {cell(bench, 'tcp')} | | | | | | | |")
    # Immediate data should cost little over the Write it follows.
    imm = [(dev, median("write_imm 2 B (xiw_imm_lat)", dev),
            median("write 2 B (xiw_imm_lat)", dev)) for dev in DEVICES]
    imm = [f"{dev} {ratio(a, b)}" for dev, a, b in imm if a and b]
    if imm:
        lines.append("")
        lines.append("RDMA Write with Immediate / RDMA Write latency (2 B, "
                     "xiw_imm_lat medians): " + ", ".join(imm))
    # Atomics with 16 outstanding against 1: what pipelining them buys.
    depth = [f"{dev} {kind} {ratio(deep, one)}" for dev in DEVICES
             for kind in ("FETCH_AND_ADD", "CMP_AND_SWAP")
             for deep, one in [(median(f"ib_atomic_bw {kind} -o 16 rate", dev),
                                median(f"ib_atomic_bw {kind} -o 1 rate", dev))]
             if deep and one]
    if depth:
        lines.append("")
        lines.append("ib_atomic_bw rate with 16 outstanding / with 1 (medians): "
                     + ", ".join(depth))
    # RDMA Flush against the RDMA Read it resembles (one round trip), and
    # Atomic Write against RDMA Write (which completes once sent).
    def commit(name):
        return median(f"{name} (xiw_commit_bench)", "xiw0")
    read, write = commit("RDMA Read 8 B"), commit("RDMA Write 8 B")
    flush = [(kind, commit(f"Flush {kind}")) for kind in
             ("global 4 KiB", "global 1 MiB", "persistent 4 KiB",
              "persistent 1 MiB")]
    flush = [f"{kind} {ratio(v, read)}" for kind, v in flush if v and read]
    atomic_write = commit("Atomic Write 8 B")
    if flush or (atomic_write and write):
        lines.append("")
    if flush:
        lines.append("RDMA Flush / RDMA Read 8 B latency (xiw_commit_bench "
                     "medians, xiw0): " + ", ".join(flush))
    if atomic_write and write:
        lines.append("Atomic Write / RDMA Write latency (8 B, xiw_commit_bench "
                     f"medians, xiw0): {ratio(atomic_write, write)} (the Atomic "
                     "Write completes on its response, the Write once sent)")
    with open(table_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(chart_path, "w") as f:
        f.write("# benchmark " + " ".join(DEVICES) + " (medians)\n" +
                "\n".join(chart) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
