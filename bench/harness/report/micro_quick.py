#!/usr/bin/env python3
"""The headline ratios of `bench/experiments/micro.sh --quick` and `--large` from their JSON lines.

For every workload: per translation the median ns per operation, the paired ratio against
array and direct (median over rounds of the baseline's time / this time in the same round:
above 1 means faster), and the spread of those per-round ratios (min..max), so that a
reader sees how stable each ratio is. Rounds: a line's runs_ns_per_op (--quick: one process
runs every translation, run i of each is round i), or, for lines tagged "round" (--large:
one process per translation and round, one run each), the tag. Writes the input lines plus
one "meta" line (commit, date, source) to --out.

usage: micro_quick.py MICRO.jsonl --commit HASH --out docs/results/micro/quick.jsonl [--source TEXT]
"""
import argparse
import datetime
import json
import statistics


def rounds_of(lines):
    """{round: ns per op} of one translation's lines for one workload."""
    out = {}
    for r in lines:
        if "round" in r:
            out[r["round"]] = r["median_ns_per_op"]
        else:
            out.update(enumerate(r["runs_ns_per_op"], start=len(out) + 1))
    return out


def per_round_ratios(base, other):
    return [base[k] / other[k] for k in sorted(base) if k in other and other[k] > 0]


BASES = ("array", "direct")


def paired_rows(rows):
    """{(experiment, workload): [(translation, median ns/op, median s/run, rounds,
    {base: (median, min, max) or None})]} from timed lines, in first-seen order."""
    by_workload = {}
    for r in rows:
        if r.get("experiment") in ("scan", "btree", "bfs"):
            by_workload.setdefault((r["experiment"], r["workload"]), {}).setdefault(r["translation"], []).append(r)
    out = {}
    for key, ts in by_workload.items():
        out[key] = []
        for t, lines in ts.items():
            mine = rounds_of(lines)
            ratios = {}
            for base in BASES:
                rr = per_round_ratios(rounds_of(ts[base]), mine) if base in ts else []
                ratios[base] = (statistics.median(rr), min(rr), max(rr)) if rr else None
            secs = statistics.median([x for r in lines for x in r.get("runs_seconds") or [0]])
            out[key].append((t, statistics.median(mine.values()), secs, len(mine), ratios))
    return out


def ratio_cell(x):
    return f"{x[0]:.3f} ({x[1]:.3f}..{x[2]:.3f})" if x else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jsonl")
    ap.add_argument("--commit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--source", default="bench/experiments/micro.sh --quick")
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(a.jsonl) if l.strip()]
    rows = [r for r in rows if r.get("experiment") in ("scan", "btree", "bfs")]
    if not rows:
        raise SystemExit(f"micro_quick: no scan, btree or bfs lines in {a.jsonl}")
    failures = sum(r.get("failures", 0) for r in rows)
    machine = rows[0].get("machine", {})
    print(f"\nmachine: {machine.get('cpu')}, {machine.get('cores')} cores; build {machine.get('build')}; commit {a.commit}")
    for (exp, wl), entries in paired_rows(rows).items():
        op = next(r["op"] for r in rows if r["experiment"] == exp and r["workload"] == wl)
        print(f"\n{exp} / {wl}: median ns per {op}, paired ratios (> 1: faster than the baseline), per-round spread")
        print(f"{'translation':12} {'ns/op':>9} {'s/run':>6}  {'vs array (spread)':>22}  {'vs direct (spread)':>22}  rounds")
        for t, ns, secs, n, ratios in entries:
            print(f"{t:12} {ns:9.1f} {secs:6.2f}  {ratio_cell(ratios['array']):>22}  {ratio_cell(ratios['direct']):>22}  {n}")
    print(f"\nself-check failures: {failures}")
    meta = {"experiment": "meta", "source": a.source, "commit": a.commit,
            "date": datetime.date.today().isoformat(), "machine": machine}
    with open(a.out, "w") as f:
        f.write(json.dumps(meta) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()
