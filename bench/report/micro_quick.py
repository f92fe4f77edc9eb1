#!/usr/bin/env python3
"""The headline ratios of `scripts/micro.sh --quick` from its JSON lines.

For every workload: per translation the median ns per operation, the paired ratio against
array and direct (median over rounds of the baseline's time / this time in the same round:
above 1 means faster), and the spread of those per-round ratios (min..max), so that a
reader sees how stable each ratio is. Writes the input lines plus one "meta" line (commit,
date) to --out.

usage: micro_quick.py MICRO.jsonl --commit HASH --out docs/micro/quick.jsonl
"""
import argparse
import datetime
import json
import statistics


def per_round_ratios(base, other):
    return [b / o for b, o in zip(base["runs_ns_per_op"], other["runs_ns_per_op"]) if o > 0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl")
    ap.add_argument("--commit", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(a.jsonl) if l.strip()]
    rows = [r for r in rows if r.get("experiment") in ("scan", "btree")]
    if not rows:
        raise SystemExit(f"micro_quick: no scan or btree lines in {a.jsonl}")
    by_workload = {}
    for r in rows:
        by_workload.setdefault((r["experiment"], r["workload"]), {})[r["translation"]] = r
    machine = rows[0].get("machine", {})
    print(f"\nmachine: {machine.get('cpu')}, {machine.get('cores')} cores; build {machine.get('build')}; commit {a.commit}")
    for (exp, wl), ts in by_workload.items():
        print(f"\n{exp} / {wl}: median ns per {rows[0]['op'] if exp == 'scan' else 'lookup'}, "
              f"paired ratios (> 1: faster than the baseline), per-round spread")
        print(f"{'translation':12} {'ns/op':>9} {'s/run':>6}  {'vs array':>8} {'(spread)':>13}  {'vs direct':>9} {'(spread)':>13}")
        for t, r in ts.items():
            cells = []
            for base in ("array", "direct"):
                if base not in ts:
                    cells.append(f"{'':>8} {'':>13}")
                    continue
                rr = per_round_ratios(ts[base], r)
                cells.append(f"{statistics.median(rr):8.3f} ({min(rr):.3f}..{max(rr):.3f})")
            secs = statistics.median(r.get("runs_seconds") or [0])
            print(f"{t:12} {r['median_ns_per_op']:9.1f} {secs:6.2f}  {cells[0]}  {cells[1]}")
    meta = {"experiment": "meta", "source": "scripts/micro.sh --quick", "commit": a.commit,
            "date": datetime.date.today().isoformat(), "machine": machine}
    with open(a.out, "w") as f:
        f.write(json.dumps(meta) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()
