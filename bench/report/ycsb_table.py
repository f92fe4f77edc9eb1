#!/usr/bin/env python3
"""Summarises calico_bench ycsb JSON lines: median ops/s (and p50/p99 of the median run)
per (workload, distribution, threads, in_memory, system), with each peer's ratio to Calico.

Usage: bench/report/ycsb_table.py results.jsonl [more.jsonl ...]  (prints Markdown)
"""
import json
import statistics
import sys
from collections import defaultdict


def main(paths):
    runs = defaultdict(list)
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("experiment") != "ycsb":
                    continue
                key = (r["workload"], r["distribution"], r["threads"], r["in_memory"], r["system"])
                runs[key].append(r)
    configs = sorted({k[:4] for k in runs})
    systems = ["calico", "lmdb", "rocksdb", "wiredtiger"]
    print("| workload | dist | threads | memory | " + " | ".join(systems) + " | runs |")
    print("|---|---|---|---|" + "---|" * len(systems) + "---|")
    for cfg in configs:
        base = None
        cells = []
        n = 0
        for s in systems:
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
        wl, dist, threads, mem = cfg
        print(f"| {wl} | {dist} | {threads} | {'in memory' if mem else 'data 4x pool'} | " +
              " | ".join(cells) + f" | {n} |")


if __name__ == "__main__":
    main(sys.argv[1:])
