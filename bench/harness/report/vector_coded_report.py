#!/usr/bin/env python3
"""Tables and figures of the coded HNSW against DiskANN at equal memory (bench/experiments/vector_coded.sh).

Inputs (any mix, several files; other lines are skipped):
  calico_bench vector-coded --json      {"bench":"vector-coded","index":"hnsw"|"coded","pool_fraction":..,
                                         "pool_bytes":..,"resident_codes_bytes":..,"ef":..,"rerank":..,
                                         ["prefetch_width"],
                                         "recall":..,"qps":..,"reads_per_query":..,["threads","p50_ms","p99_ms"]}
  bench/harness/peers/diskann_peer.py   {"bench":"diskann_peer","pool_fraction":..,"budget_bytes":..,
                                         "resident_bytes":..,"L":..,"beam_width":..,"threads":..,"recall":..,
                                         "qps":..,"reads_per_query":..,"p50_ms":..,"p99_ms":..}
  bench/harness/peers/vector_peers.py   usearch_view lines of bench/experiments/vector_peer_ltm.sh
                                        ("pool_fraction", "limit_bytes": f x usearch's own index file)
A budget is a (dataset, pool fraction) pair: calico's coded index had pool_bytes +
resident_codes_bytes, the full HNSW pool_bytes (f x its bytes), DiskANN the coded index's bytes.
Lines of the same setting from several runs are merged: median QPS, reads and latencies.

For each budget and thread count: every system's best QPS at recall@k >= 0.90 / 0.95 / 0.99
(with its reads per query, p50 and p99 latency and the setting), and the ratios coded / DiskANN
and coded / full HNSW at each target. Figure per budget: recall against QPS, one panel per
thread count (vector_coded_<dataset>_f<fraction>.png).

Usage: vector_coded_report.py OUT/*.jsonl [--md report.md] [--png-dir DIR]
"""
import argparse
import collections
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if not __package__:  # run by path (python3 bench/harness/...): the repository root makes `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
from bench.harness.report.common import json_lines, recall_qps_axes  # noqa: E402

TARGETS = (0.90, 0.95, 0.99)
IN_MEMORY = 1.0  # fractions at or above this are in memory


def norm(r):
    """One shape for every system's line, or None: (key, values)."""
    bench = r.get("bench")
    if bench == "vector-coded":
        system = "calico coded" if r["index"] == "coded" else "calico hnsw"
        if r["index"] == "coded" and r.get("pin_share", 0) > 0:  # pinned rows (pin_rows) in its memory
            system = "calico coded+pin"
        setting = f"ef {r['ef']}"
        if r["index"] == "coded":  # format 3 lines name the prefetch width; rerank then serves scans only
            setting += f", W {r['prefetch_width']}" if "prefetch_width" in r else f", rerank {r['rerank']}"
            if r.get("batched"):
                setting += " batched"
            if r.get("pq_bytes"):
                setting += f", PQ {r['pq_bytes']}"
            elif "bits" in r:
                setting += f", {r['bits']} bit"
            if r.get("pin_share", 0) > 0:
                setting += f", pin {r['pin_share']:g}"
        memory = r["pool_bytes"] + r.get("resident_codes_bytes", 0) + r.get("pinned_bytes", 0)
    elif bench == "diskann_peer":
        system = "diskann"
        setting = f"L {r['L']}, W {r['beam_width']}, PQ {r.get('pq_bytes_per_vector')}"  # configurations apart
        memory = r["resident_bytes"]
    elif bench == "vector_peers" and r.get("system") == "usearch_view" and r.get("pool_fraction") is not None:
        system = "usearch_view"
        setting = f"ef {r['params']['ef']}"
        memory = r.get("limit_bytes")
    else:
        return None
    if r.get("pool_fraction") is None:
        return None
    key = (r.get("dataset"), float(r["pool_fraction"]), int(r.get("threads", 1)), system, setting)
    return key, dict(recall=r["recall"], qps=r["qps"], reads=r.get("reads_per_query"), p50=r.get("p50_ms"),
                     p99=r.get("p99_ms"), memory=memory, n=r.get("n"), budget=r.get("budget_bytes"),
                     over=r.get("over_budget"), nodes=r.get("nodes_cached"), pq=r.get("pq_bytes_per_vector"),
                     codes=r.get("resident_codes_bytes"), loadavg=r.get("loadavg"))


def load(paths):
    """{(dataset, fraction, threads, system, setting): merged values}."""
    groups = collections.defaultdict(list)
    for r in json_lines(paths):
        got = norm(r)
        if got:
            groups[got[0]].append(got[1])
    merged = {}
    for key, rows in groups.items():
        m = dict(rows[-1])
        for field in ("qps", "reads", "p50", "p99"):
            values = [r[field] for r in rows if r[field] is not None]
            m[field] = statistics.median(values) if values else None
        m["runs"] = len(rows)
        merged[key] = m
    return merged


def best_at(points, target):
    """The (setting, values) of the highest QPS with recall >= target, or None."""
    ok = [(s, v) for s, v in points.items() if v["recall"] >= target]
    return max(ok, key=lambda sv: sv[1]["qps"]) if ok else None


def fmt(x, digits=0):
    if x is None:
        return "-"
    return f"{x:,.{digits}f}"


def mb(x):
    return "-" if x is None else f"{x / 2**20:.2f} MB"


def budget_label(fraction):
    return "in memory" if fraction >= IN_MEMORY else f"{fraction * 100:g}% of the HNSW"


def report(merged, png_dir):
    budgets = collections.defaultdict(lambda: collections.defaultdict(dict))  # (ds, f) -> threads -> sys -> pts
    for (ds, f, threads, system, setting), v in merged.items():
        budgets[(ds, f)][threads].setdefault(system, {})[setting] = v
    lines = ["# The coded HNSW against DiskANN at equal memory", ""]
    lines.append("Generated by bench/harness/report/vector_coded_report.py. Cells: best QPS at recall@10 >= the target "
                 "(reads per query, p50 / p99 ms, setting); '-' when no setting reaches it. Memory: calico coded = "
                 "pool + resident codes (the budget; coded+pin adds its pinned rows, its pool smaller by as much), calico hnsw = its pool, diskann = its measured resident bytes "
                 "(RSS growth of loading the index), usearch_view = its cgroup limit.")
    lines.append("")
    ratio_rows = []
    for (ds, f) in sorted(budgets, key=lambda k: (k[0] or "", -k[1])):
        by_threads = budgets[(ds, f)]
        lines.append(f"## {ds}, {budget_label(f)} (pool fraction {f:g})")
        lines.append("")
        any_sys = next(iter(by_threads.values()))
        mem = {s: next(iter(p.values()))["memory"] for s, p in any_sys.items()}
        dks = {(v["pq"], v["nodes"]): v for v in any_sys.get("diskann", {}).values()}  # one per configuration
        desc = ", ".join(f"{s} {mb(m)}" for s, m in sorted(mem.items()))
        lines.append(f"Memory: {desc}.")
        for _, dk in sorted(dks.items(), key=lambda kv: kv[0][0] or 0):
            lines.append(f"DiskANN: budget {mb(dk['budget'])}, {dk['pq']} PQ bytes per vector, {fmt(dk['nodes'])} nodes "
                         f"cached{' (no room: its calibrated fixed part is above the budget)' if dk['over'] else ''}.")
        lines.append("")
        for threads in sorted(by_threads):
            systems = by_threads[threads]
            names = sorted(systems)
            lines.append(f"**{threads} thread{'s' if threads > 1 else ''}**")
            lines.append("")
            lines.append("| recall@10 >= | " + " | ".join(names) + " | coded / diskann | coded+pin / diskann | coded / hnsw |")
            lines.append("|---|" + "---|" * (len(names) + 3))
            for target in TARGETS:
                cells, best = [], {}
                for s in names:
                    b = best_at(systems[s], target)
                    best[s] = b
                    if b is None:
                        cells.append("-")
                        continue
                    setting, v = b
                    cells.append(f"**{fmt(v['qps'])}** ({fmt(v['reads'], 1)} reads, {fmt(v['p50'], 2)} / "
                                 f"{fmt(v['p99'], 2)} ms, {setting})")

                def ratio(a, b):
                    if best.get(a) is None or best.get(b) is None:
                        return None
                    return best[a][1]["qps"] / best[b][1]["qps"]

                r_dk, r_h = ratio("calico coded", "diskann"), ratio("calico coded", "calico hnsw")
                r_pdk = ratio("calico coded+pin", "diskann")
                ratio_rows.append((ds, f, threads, target, r_dk, r_pdk, r_h))
                lines.append(f"| {target:.2f} | " + " | ".join(cells) +
                             f" | {fmt(r_dk, 2)}x | {fmt(r_pdk, 2)}x | {fmt(r_h, 2)}x |".replace("-x", "-"))
            lines.append("")
        if png_dir:
            path = figure(ds, f, by_threads, png_dir)
            lines.append(f"![recall against QPS]({os.path.basename(path)})")
            lines.append("")
    lines.append("## Ratios")
    lines.append("")
    lines.append("| dataset | budget | threads | recall@10 >= | coded / diskann | coded+pin / diskann | coded / hnsw |")
    lines.append("|---|---|---|---|---|---|---|")
    for ds, f, threads, target, r_dk, r_pdk, r_h in ratio_rows:
        lines.append(f"| {ds} | {budget_label(f)} | {threads} | {target:.2f} | {fmt(r_dk, 2)} | {fmt(r_pdk, 2)} | "
                     f"{fmt(r_h, 2)} |")
    lines.append("")
    return "\n".join(lines)


def figure(ds, f, by_threads, png_dir):
    os.makedirs(png_dir, exist_ok=True)
    panels = sorted(by_threads)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, threads in zip(axes[0], panels):
        for system, points in sorted(by_threads[threads].items()):
            # One curve per system and setting but the beam width (ef, L): DiskANN's W, calico
            # coded's W, batched and pin share.
            curves = collections.defaultdict(list)
            for setting, v in points.items():
                sub = ", ".join(setting.split(", ")[1:])  # all but the beam width: one curve per other setting
                curves[f"{system} {sub}".strip()].append((v["recall"], v["qps"]))
            for name, pts in sorted(curves.items()):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=name)
        recall_qps_axes(ax, f"{threads} thread{'s' if threads > 1 else ''}", legend_size=7)
    fig.suptitle(f"{ds}, {budget_label(f)}", fontsize=10)
    fig.tight_layout()
    path = os.path.join(png_dir, f"vector_coded_{ds}_f{f:g}.png")
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", help="JSON lines files")
    ap.add_argument("--md", help="write the Markdown here (default: stdout)")
    ap.add_argument("--png-dir", help="write the figures here (default: beside --md, else none)")
    args = ap.parse_args(argv)
    png_dir = args.png_dir or (os.path.dirname(os.path.abspath(args.md)) if args.md else None)
    merged = load(args.inputs)
    if not merged:
        sys.exit("vector_coded_report: no vector-coded, diskann_peer or usearch_view lines in the inputs")
    text = report(merged, png_dir)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
