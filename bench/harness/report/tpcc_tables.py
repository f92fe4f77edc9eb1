#!/usr/bin/env python3
"""Summarises calico_bench tpcc JSON lines (bench/experiments/tpcc.sh) as Markdown tables.

Per file: a summary (a row per configuration: medians of tx/s and tx per CPU-second per
thread count, the tx per CPU-second ratio over the baseline paired within each repeat, and
translation MB at the most threads); then one row per (configuration, threads) with the medians over repeats of tx/s and tx
per CPU-second, the p50 latency of each transaction type, translation memory (private, and
for arrays the unpunched size of their entries) and the consistency violations; then ratios
paired within each repeat (both runs come from the same repeat, so the same machine state):
  - every configuration's tx per CPU-second over its baseline: hash_open (LIPAH's
    "conventional") when the file has it, else the first system; and over array;
  - index skipping: each configuration with skipping on / remember over the same
    translation with it off, per transaction type (p50 latency ratios, >1 = faster).

Usage: bench/harness/report/tpcc_tables.py FILE.jsonl [FILE.jsonl ...]
"""
import json
import statistics
import sys
from collections import defaultdict

TYPES = ["new_order", "payment", "order_status", "delivery", "stock_level"]
SHORT = {"new_order": "NO", "payment": "PAY", "order_status": "OS", "delivery": "DEL", "stock_level": "SL"}


def mode(r):
    if r.get("hint_memory"):
        return "remember"
    return "on" if r.get("index_skipping") else "off"


def config(r):
    m = mode(r)
    return r["translation"] + {"off": "", "on": " + skip", "remember": " + skip + remember"}[m]


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    return f"{med(xs):.2f} ({min(xs):.2f}..{max(xs):.2f})" if xs else "-"


def summarise(path, runs):
    print(f"### {path}\n")
    r0 = runs[0]
    print(f"{r0['warehouses']} warehouses, {'in memory' if r0['in_memory'] else 'larger than memory'}, "
          f"pool {r0['pool_bytes'] / 2**20:.0f} MB, {len({r['repeat'] for r in runs})} repeats, "
          f"machine: {r0.get('cpu', '?')}, {r0.get('cores', '?')} cores; build: {r0.get('build', '?')}\n")
    rows = defaultdict(list)
    order = []
    for r in runs:
        key = (config(r), r["threads"])
        if key not in rows:
            order.append(key)
        rows[key].append(r)
    first = []
    for c, _ in order:
        if c not in first:
            first.append(c)
    order.sort(key=lambda k: (k[1], first.index(k[0])))
    # Paired ratios: (config, threads, repeat) -> run.
    by = {(config(r), r["threads"], r["repeat"]): r for r in runs}
    configs = []
    for c, _ in order:
        if c not in configs:
            configs.append(c)
    base = "hash_open" if "hash_open" in configs else configs[0]
    threads = sorted({t for _, t in order})

    def paired(a, b, t, f):
        out = []
        for (c, th, rep), r in by.items():
            if c == a and th == t and (b, t, rep) in by:
                out.append(f(r) / f(by[(b, t, rep)]))
        return out

    # The summary: one row per configuration, the thread counts side by side.
    print("| configuration | " + " | ".join(f"tx/s {t} thr" for t in threads) + " | " +
          " | ".join(f"tx per CPU-s {t} thr" for t in threads) + " | " +
          " | ".join(f"vs {base} {t} thr" for t in threads) + " | translation MB |")
    print("|---|" + "---|" * (3 * len(threads) + 1))
    for c in configs:
        cells = [f"{med([r['tx_per_s'] for r in rows[(c, t)]]):.0f}" for t in threads]
        cells += [f"{med([r['tx_per_cpu_s'] for r in rows[(c, t)]]):.0f}" for t in threads]
        cells += ["1" if c == base else f"{med(paired(c, base, t, lambda r: r['tx_per_cpu_s'])):.2f}"
                  for t in threads]
        cells.append(f"{med([r['translation_private_bytes'] / 2**20 for r in rows[(c, threads[-1])]]):.1f}")
        print(f"| {c} | " + " | ".join(cells) + " |")
    print()
    print("| configuration | thr | tx/s | tx per CPU-s | " + " | ".join(f"{SHORT[t]} p50 us" for t in TYPES) +
          " | translation MB | unpunched MB | violations |")
    print("|---|---|---|---|" + "---|" * len(TYPES) + "---|---|---|")
    for key in order:
        rs = rows[key]
        lat = [f"{med([r[t]['p50_us'] for r in rs]):.0f}" for t in TYPES]
        flats = [r["translation_flat_bytes"] / 2**20 for r in rs if "translation_flat_bytes" in r]
        flat = f"{med(flats):.2f}" if flats else "-"
        print(f"| {key[0]} | {key[1]} | {med([r['tx_per_s'] for r in rs]):.0f} | "
              f"{med([r['tx_per_cpu_s'] for r in rs]):.0f} | " + " | ".join(lat) +
              f" | {med([r['translation_private_bytes'] / 2**20 for r in rs]):.2f} | "
              f"{flat} | {sum(r['violations'] + r['failures'] for r in rs)} |")
    print()

    for b in [base] + (["array"] if "array" in configs and base != "array" else []):
        print(f"Tx per CPU-second over {b}, paired within each repeat: median (min..max)\n")
        print("| configuration | " + " | ".join(f"{t} thr" for t in threads) + " |")
        print("|---|" + "---|" * len(threads))
        for c in configs:
            if c == b:
                continue
            print(f"| {c} | " + " | ".join(spread(paired(c, b, t, lambda r: r["tx_per_cpu_s"])) for t in threads) + " |")
        print()

    skipped = [c for c in configs if c.endswith("+ skip") or c.endswith("+ remember")]
    if skipped:
        print("Index skipping: p50 latency of the configuration with it off over with it on (>1: faster), "
              "paired within each repeat; tx per CPU-second likewise\n")
        print("| configuration | thr | tx per CPU-s | " + " | ".join(SHORT[t] for t in TYPES) + " |")
        print("|---|---|---|" + "---|" * len(TYPES))
        for c in skipped:
            off = c.split(" + ")[0]
            for t in threads:
                cells = [spread(paired(off, c, t, lambda r, ty=ty: r[ty]["p50_us"])) for ty in TYPES]
                cpu = spread(paired(c, off, t, lambda r: r["tx_per_cpu_s"]))
                print(f"| {c} | {t} | {cpu} | " + " | ".join(cells) + " |")
        print()
        print("Hint hit rates (hits + moved slots over hinted calls, all runs pooled)\n")
        print("| configuration | thr | " + " | ".join(
            ["warehouse", "district", "customer", "order", "item", "stock"]) + " |")
        print("|---|---|" + "---|" * 6)
        for c in skipped:
            for t in threads:
                rs = rows[(c, t)]
                cells = []
                for table in ["warehouse", "district", "customer", "order", "item", "stock"]:
                    calls = sum(r["index_hints"].get(table, {}).get("calls", 0) for r in rs)
                    hits = sum(r["index_hints"].get(table, {}).get("hits", 0) +
                               r["index_hints"].get(table, {}).get("slot_moved", 0) for r in rs)
                    stale = sum(r["index_hints"].get(table, {}).get("stale", 0) for r in rs)
                    cells.append(f"{100 * hits / calls:.0f}% ({100 * stale / calls:.1f}% stale)" if calls else "-")
                print(f"| {c} | {t} | " + " | ".join(cells) + " |")
        print()


def main(paths):
    if not paths:
        sys.exit(__doc__)
    for path in paths:
        with open(path) as f:
            runs = [json.loads(line) for line in f if line.strip()]
        runs = [r for r in runs if r.get("experiment") == "tpcc"]
        if runs:
            summarise(path, runs)


if __name__ == "__main__":
    main(sys.argv[1:])
