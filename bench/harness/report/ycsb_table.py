#!/usr/bin/env python3
"""Summarises calico_bench ycsb JSON lines: median ops/s per (workload, distribution,
threads, in_memory, system), with each peer's ratio to Calico.

When the files also hold bench/experiments/ycsb_ltm.sh's lines, prints two more tables:
  - read I/O of the measured runs ({"experiment":"ycsb_ltm_io"}): the process's read MB/s
    and reads per operation (from /proc/PID/io, so other processes' I/O is not counted; read
    size 4 KB, or the device's mean read size when it is larger), and that mean read size; with bench/experiments/disk_iops.sh's lines
    ({"experiment":"disk_iops"}) also the fraction of the disk's 4 KB random-read IOPS at
    queue depth = threads, for systems whose reads are 4 KB;
  - memory ({"experiment":"ycsb_ltm_mem"}): cache setting, peak cgroup usage, peak anon.

Usage: bench/harness/report/ycsb_table.py results.jsonl [more.jsonl ...]  (prints Markdown)
"""
import json
import statistics
import sys
from collections import defaultdict

SYSTEMS = ["calico", "lmdb", "rocksdb", "wiredtiger"]


def main(paths):
    runs = defaultdict(list)
    mem = defaultdict(list)
    disk = {}
    for path in paths:
        io = {}
        ycsb = []
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                exp = r.get("experiment")
                if exp == "ycsb":
                    ycsb.append(r)
                elif exp == "ycsb_ltm_io":
                    io[(r["system"], r["workload"], r["distribution"], r["threads"], r["repeat"])] = r
                elif exp == "ycsb_ltm_mem":
                    mem[r["system"]].append(r)
                elif exp == "disk_iops":
                    disk.setdefault(r["iodepth"], []).append(r)
        for r in ycsb:
            # bench/experiments/ycsb_ltm.sh runs repeat r with --seed 42 + r (one run per process)
            r["_io"] = io.get((r["system"], r["workload"], r["distribution"], r["threads"], r["seed"] - 42))
            runs[(r["workload"], r["distribution"], r["threads"], r["in_memory"], r["system"])].append(r)

    configs = sorted({k[:4] for k in runs})
    print("| workload | dist | threads | memory | " + " | ".join(SYSTEMS) + " | runs |")
    print("|---|---|---|---|" + "---|" * len(SYSTEMS) + "---|")
    for cfg in configs:
        base = None
        cells = []
        n = 0
        for s in SYSTEMS:
            rs = runs.get(cfg + (s,), [])
            if not rs:
                cells.append("-")
                continue
            n = max(n, len(rs))
            med = statistics.median(r["ops_per_s"] for r in rs)
            fails = sum(r["failures"] for r in rs)
            if s == "calico":
                base = med
            ratio = f" ({med / base:.2f}x)" if base and s != "calico" else ""
            cells.append(f"{med / 1e6:.3f}M{ratio}" + (f" FAIL {fails}" if fails else ""))
        wl, dist, threads, in_mem = cfg
        print(f"| {wl} | {dist} | {threads} | {'in memory' if in_mem else 'larger than memory'} | " +
              " | ".join(cells) + f" | {n} |")

    if any(r["_io"] for rs in runs.values() for r in rs):
        iops = {qd: statistics.median(r["iops"] for r in rs) for qd, rs in disk.items()}
        print("\nRead I/O of the process during the measured runs (medians): read MB/s (/proc/PID/io "
              "read_bytes), reads per operation (read bytes / 4 KB, or / the mean read size when it is larger)" +
              (", % of the disk's 4 KB random-read IOPS at queue depth = threads (systems reading 4 KB)"
               if iops else "") + "; the data device's mean read size (KB); Calico: hit rate")
        print()
        print("| workload | dist | threads | " + " | ".join(SYSTEMS) + " |")
        print("|---|---|---|" + "---|" * len(SYSTEMS))
        for wl, dist, threads, in_mem in configs:
            if in_mem:
                continue
            cells = []
            for s in SYSTEMS:
                rows = [r for r in runs.get((wl, dist, threads, in_mem, s), []) if r["_io"]]
                if not rows:
                    cells.append("-")
                    continue
                mbs = statistics.median(r["_io"]["proc_read_mb_per_s"] for r in rows)
                kb = statistics.median(r["_io"]["dev_read_kb_avg"] for r in rows)
                # reads of 4 KB pages/blocks (calico, lmdb, rocksdb), else of the device's mean size
                size = 4096 if kb < 8 else kb * 1024
                per_op = statistics.median(r["_io"]["proc_read_mb_per_s"] * 1e6 / size / max(r["ops_per_s"], 1)
                                           for r in rows)
                cell = f"{mbs:.1f} MB/s, {per_op:.2f}/op"
                if threads in iops and kb < 8:
                    cell += f", {100 * mbs * 1e6 / size / iops[threads]:.0f}%"
                cell += f", {kb:.0f} KB"
                if s == "calico":
                    hits = [r["hit_rate"] for r in rows if r.get("hit_rate") is not None]
                    if hits:
                        cell += f"; hits {100 * statistics.median(hits):.1f}%"
                cells.append(cell)
            print(f"| {wl} | {dist} | {threads} | " + " | ".join(cells) + " |")
        if iops:
            print("\nDisk (bench/experiments/disk_iops.sh): " + ", ".join(
                f"qd {qd}: {iops[qd]:.0f} IOPS (median of {len(disk[qd])})" for qd in sorted(iops)))

    if mem:
        print("\n| system | limit MB | cache MB | peak usage MB (median, max) | peak anon MB (median, max) "
              "| limit hits (median) | processes | failed |")
        print("|---|---|---|---|---|---|---|---|")
        for s in SYSTEMS:
            ms = mem.get(s)
            if not ms:
                continue
            peak = [m["peak_mb"] for m in ms]
            anon = [m["peak_anon_mb"] for m in ms]
            print(f"| {s} | {ms[0]['limit_mb']} | {ms[0]['cache_mb']} | {statistics.median(peak):.0f}, {max(peak)} "
                  f"| {statistics.median(anon):.0f}, {max(anon)} | {statistics.median(m['failcnt'] for m in ms):.0f} "
                  f"| {len(ms)} | {sum(1 for m in ms if m['exit'] != 0)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
