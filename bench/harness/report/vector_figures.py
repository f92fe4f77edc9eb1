#!/usr/bin/env python3
"""Turns the JSON lines of the vector-search benchmark into docs/results/vector.md and its figures.

Inputs (any mix, several files):
  calico_bench vector --json      {"experiment":"vector","system":"calico","index":"hnsw"|"ivf",
                                   "translation":..,"pool_fraction":..,"threads":..,"ef"|"nprobe":..,
                                   "recall":..,"qps":..,"reads_per_query":..,"iops":..,["ablation":true]}
  bench/harness/peers/vector_peers.py     {"bench":"vector_peers","system":"hnswlib"|"faiss_hnsw"|"faiss_ivf"|
                                   "usearch"|"usearch_view","params":{..,"ef"|"nprobe":..},"threads":..,
                                   "recall":..,"qps":..,["pool_fraction":..,"limit_bytes":..]}
  bench/experiments/disk_iops.sh            {"experiment":"disk_iops","iodepth":..,"iops":..}
Every (system, index, translation, pool fraction, threads, parameter) may appear once per
round (bench/experiments/vector.sh runs the systems in interleaved rounds): the report gives the
median QPS over the lines of a key and the recall (identical across rounds for a built index).

Writes: a Markdown report (--md) and PNGs (--png-dir):
  vector_hnsw_recall_qps.png   recall@10 vs QPS, HNSW, in memory, one panel per thread count
  vector_ivf_recall_qps.png    the same for IVF-Flat
  vector_ltm.png               QPS vs pool size (larger than memory)
Usage: vector_figures.py RESULTS.jsonl [...] [--md docs/results/vector.md] [--png-dir docs/results/vector] [--command "..."]
"""
import argparse
import collections
import datetime
import math
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if not __package__:  # run by path (python3 bench/harness/...): the repository root makes `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
from bench.harness.report.common import json_lines  # noqa: E402


def norm(r):
    """One shape for calico and peer lines: (key fields, values)."""
    if r.get("experiment") == "vector":
        index = r["index"]
        param = r.get("ef") if index == "hnsw" else r.get("nprobe")
        system = "calico" if not r.get("ablation") else "calico ablation"
        translation = r["translation"]
        if index == "hnsw" and int(r.get("batch", 1)) > 1:  # --hnsw-batch: queries in flight per thread
            translation = f"{translation}, {r['batch']} in flight"
        return dict(system=system, index=index, translation=translation,
                    fraction=float(r.get("pool_fraction", 0)), threads=int(r["threads"]), param=int(param),
                    recall=r["recall"], qps=r["qps"], reads=r.get("reads_per_query"), iops=r.get("iops"),
                    disk_iops=r.get("disk_iops"), disk_depth=r.get("disk_depth"), cpu_cores=r.get("cpu_cores"),
                    build_s=r.get("build_s"), index_bytes=r.get("index_bytes"), n=r.get("n"), dim=r.get("dim"),
                    machine=r.get("machine", {}), dataset=r.get("dataset"), page_size=r.get("page_size"))
    if r.get("bench") == "vector_peers":
        p = r.get("params", {})
        index = "ivf" if "nprobe" in p else "hnsw"
        param = p.get("nprobe") if index == "ivf" else p.get("ef")
        system = r["system"]
        if r.get("read_ahead_kb") is not None:  # mapped-view runs at different readahead stay apart
            system = f"{system} (readahead {r['read_ahead_kb']} KB)"
        return dict(system=system, index=index, translation="", fraction=float(r.get("pool_fraction", 0)),
                    threads=int(r["threads"]), param=int(param), recall=r["recall"], qps=r["qps"],
                    reads=r.get("reads_per_query"), iops=r.get("iops"), disk_iops=r.get("disk_iops"),
                    disk_depth=r.get("disk_depth"), build_s=r.get("build_s"),
                    index_bytes=r.get("index_bytes"), n=r.get("n"), dim=r.get("dim"), machine=r.get("machine", {}),
                    read_ahead_kb=r.get("read_ahead_kb"))
    return None


unfinished = []  # bench/experiments/vector_peer_ltm.sh runs stopped by its timeout


def load(paths):
    groups = collections.OrderedDict()
    disk = {}
    unfinished.clear()
    for r in json_lines(paths):
        if r.get("experiment") == "vector_peer_ltm_unfinished":
            unfinished.append(r)
            continue
        if r.get("experiment") == "disk_iops":
            disk.setdefault(int(r["iodepth"]), []).append(r["iops"])
            continue
        n = norm(r)
        if n is None:
            continue
        key = (n["system"], n["index"], n["translation"], n["fraction"], n["threads"], n["param"])
        groups.setdefault(key, []).append(n)
    points = []
    for key, rs in groups.items():
        m = dict(rs[-1])
        m["qps"] = statistics.median(x["qps"] for x in rs)
        m["qps_lines"] = [x["qps"] for x in rs]
        m["recall"] = statistics.median(x["recall"] for x in rs)
        for f in ("reads", "iops", "disk_iops", "disk_depth", "cpu_cores"):
            vals = [x[f] for x in rs if x.get(f) is not None]
            m[f] = statistics.median(vals) if vals else None
        points.append(m)
    return points, {qd: statistics.median(v) for qd, v in disk.items()}


def label(p):
    if p["system"] == "calico":
        return f"calico ({p['translation']})"
    return p["system"]


def kfmt(x):
    return f"{x / 1000:.1f}K" if x >= 1000 else f"{x:.0f}"


def series(points, index, fraction):
    out = collections.OrderedDict()
    for p in points:
        if p["index"] == index and p["fraction"] == fraction and p["system"] != "calico ablation":
            out.setdefault((label(p), p["threads"]), []).append(p)
    for v in out.values():
        v.sort(key=lambda p: p["param"])
    return out


def recall_qps_table(points, index, lines):
    s = series(points, index, 0.0)
    if not s:
        return
    pname = "ef_search" if index == "hnsw" else "nprobe"
    params = sorted({p["param"] for v in s.values() for p in v})
    lines.append(f"| system | threads | " + " | ".join(f"{pname} {x}" for x in params) + " |")
    lines.append("|---|---|" + "---|" * len(params))
    for (name, threads), v in s.items():
        by = {p["param"]: p for p in v}
        cells = []
        for x in params:
            p = by.get(x)
            cells.append(f"{p['recall']:.3f} / {kfmt(p['qps'])}" if p else "")
        lines.append(f"| {name} | {threads} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Cells: recall@10 / queries per second (median of the rounds).")
    lines.append("")


def qps_at_recall(curve, target):
    """QPS at `target` recall on one system's curve [(recall, qps)] in parameter order:
    log-linear interpolation between the two points around the first crossing; None when the
    curve never reaches the target (or starts above it: no point below to interpolate from,
    unless the first point is exactly there)."""
    for (r0, q0), (r1, q1) in zip(curve, curve[1:]):
        if r0 <= target <= r1 and r1 > r0:
            w = (target - r0) / (r1 - r0)
            return math.exp(math.log(q0) + w * (math.log(q1) - math.log(q0)))
    if curve and curve[0][0] == target:
        return curve[0][1]
    return None


def equal_recall_table(points, index, lines, targets=(0.90, 0.95, 0.99), base="calico (array)"):
    """QPS of every system at equal recall, interpolated on its curve in each round, and the
    ratio of `base` to each other system paired within the round: median (min..max)."""
    s = series(points, index, 0.0)
    if not s:
        return
    names = []
    for (name, _t) in s:
        if name not in names:
            names.append(name)
    if base not in names:
        return
    threads = sorted({t for (_n, t) in s})
    rounds = min(len(p["qps_lines"]) for v in s.values() for p in v)
    lines.append("| threads | recall@10 | " + " | ".join(names) + " |")
    lines.append("|---|---|" + "---|" * len(names))
    for t in threads:
        for target in targets:
            per_round = {}
            for name in names:
                v = s.get((name, t))
                if not v:
                    continue
                per_round[name] = [qps_at_recall([(p["recall"], p["qps_lines"][i]) for p in v], target)
                                   for i in range(rounds)]
            cells = []
            for name in names:
                qs = per_round.get(name)
                v = s.get((name, t))
                if not qs:
                    cells.append("")
                    continue
                if any(q is None for q in qs):
                    cells.append("above at every point" if v[0]["recall"] > target else "not reached")
                    continue
                cell = kfmt(statistics.median(qs))
                bq = per_round.get(base)
                if name != base and bq and all(q is not None for q in bq):
                    rat = sorted(b / q for b, q in zip(bq, qs))
                    cell += f" ({statistics.median(rat):.2f}x; {rat[0]:.2f}..{rat[-1]:.2f})"
                cells.append(cell)
            lines.append(f"| {t} | {target:.2f} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Cells: QPS at that recall, interpolated (log-linear) on each system's curve in each of "
                 f"{rounds} rounds, median over rounds; in brackets {base} / that system, paired within each "
                 f"round: median; min..max. > 1x: {base} is faster. \"not reached\": the sweep's highest "
                 f"parameter stays below that recall; \"above at every point\": its lowest is already above it.")
    lines.append("")


def build_table(points, lines):
    seen = {}
    for p in points:
        if p["fraction"] == 0 and p.get("build_s") and p["system"] != "calico ablation":
            key = (p["system"] if p["system"] != "calico" else "calico", p["index"])
            seen.setdefault(key, p)
    if not seen:
        return
    lines.append("| system | index | build s | index MB |")
    lines.append("|---|---|---|---|")
    for (s, i), p in seen.items():
        mb = (p.get("index_bytes") or 0) / 2**20
        lines.append(f"| {s} | {i} | {p['build_s']:.1f} | {mb:.0f} |")
    lines.append("")


def plot_recall_qps(points, index, path):
    s = series(points, index, 0.0)
    if not s:
        return False
    threads = sorted({t for (_, t) in s})
    fig, axes = plt.subplots(1, len(threads), figsize=(6 * len(threads), 4.5), squeeze=False)
    for ax, t in zip(axes[0], threads):
        for (name, tt), v in s.items():
            if tt != t:
                continue
            ax.plot([p["recall"] for p in v], [p["qps"] for p in v], marker="o", label=name)
        ax.set_xlabel("recall@10")
        ax.set_ylabel("queries per second")
        ax.set_yscale("log")
        ax.set_title(f"{index.upper()}, in memory, {t} thread{'s' if t > 1 else ''}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def translation_table(points, lines):
    s = [p for p in points if p["system"] == "calico" and p["fraction"] == 0]
    names = sorted({p["translation"] for p in s})
    if len(names) < 2:
        return
    lines.append("| index | threads | param | " + " | ".join(names) + " |")
    lines.append("|---|---|---|" + "---|" * len(names))
    keys = sorted({(p["index"], p["threads"], p["param"]) for p in s})
    for k in keys:
        by = {p["translation"]: p for p in s if (p["index"], p["threads"], p["param"]) == k}
        base = by.get("array")
        cells = []
        for n in names:
            p = by.get(n)
            if not p:
                cells.append("")
            elif base and n != "array":
                cells.append(f"{kfmt(p['qps'])} ({p['qps'] / base['qps']:.2f}x)")
            else:
                cells.append(kfmt(p["qps"]))
        lines.append(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("QPS per translation, in memory (ratio to array: ratio of medians).")
    lines.append("")


def fio_at_depth(disk, depth):
    """fio's IOPS at queue depth `depth` (bench/experiments/disk_iops.sh points {iodepth: IOPS}),
    interpolated linearly in log(depth); the first point below it, the last point above."""
    if not disk or depth is None:
        return None
    qds = sorted(disk)
    if depth <= qds[0]:
        return disk[qds[0]]
    if depth >= qds[-1]:
        return disk[qds[-1]]
    for lo, hi in zip(qds, qds[1:]):
        if lo <= depth <= hi:
            t = (math.log(depth) - math.log(lo)) / (math.log(hi) - math.log(lo))
            return disk[lo] + t * (disk[hi] - disk[lo])
    return None


def ltm_table(points, disk, lines):
    s = [p for p in points if p["fraction"] > 0]
    if not s:
        return False
    lines.append("| pool | system | threads | param | recall@10 | QPS | reads/query | IOPS | device IOPS | "
                 "device depth | fio at that depth | of fio | CPU cores |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in sorted(s, key=lambda p: (-p["fraction"], p["threads"], p["param"], label(p))):
        reads = f"{p['reads']:.1f}" if p.get("reads") is not None else "n/a"
        iops = f"{p['iops']:.0f}" if p.get("iops") is not None else "n/a"
        dev_iops, depth = p.get("disk_iops"), p.get("disk_depth")
        fio = fio_at_depth(disk, depth)
        cells = [f"{dev_iops:.0f}" if dev_iops is not None else "n/a", f"{depth:.1f}" if depth is not None else "n/a",
                 f"{fio:.0f}" if fio is not None else "n/a",
                 f"{dev_iops / fio:.0%}" if fio and dev_iops is not None else "n/a",
                 f"{p['cpu_cores']:.2f}" if p.get("cpu_cores") is not None else "n/a"]
        lines.append(f"| {p['fraction'] * 100:.0f}% | {label(p)} | {p['threads']} | {p['param']} | "
                     f"{p['recall']:.3f} | {p['qps']:.0f} | {reads} | {iops} | " + " | ".join(cells) + " |")
    for u in unfinished:
        ra = f" (readahead {u['read_ahead_kb']} KB)" if u.get("read_ahead_kb") is not None else ""
        lines.append(f"| {float(u['pool_fraction']) * 100:.0f}% | {u['system']}{ra} | | | | did not finish "
                     f"(stopped after {u['seconds']} s, exit {u['exit']}) | | | | | | | |")
    lines.append("")
    ra = sorted({p["read_ahead_kb"] for p in s if p.get("read_ahead_kb") is not None} |
                {u["read_ahead_kb"] for u in unfinished if u.get("read_ahead_kb") is not None})
    if ra:
        lines.append("usearch_view reads the index through the page cache: each fault reads ahead up to the disk's "
                     f"read_ahead_kb = {', '.join(str(x) for x in ra)} KB (bench/experiments/vector_peer_ltm.sh READAHEAD_KB). "
                     "Calico's pool reads single pages with O_DIRECT.")
        lines.append("")
    lines.append("IOPS: the reads the system asked for (Calico: page reads; usearch_view: bytes read / 4 KB). "
                 "Device IOPS and depth: the block device's own counters over the run (/sys/dev/block/*/stat: "
                 "reads completed, and their summed time in flight / wall time, iostat's aqu-sz). "
                 "fio at that depth: fio's IOPS interpolated (log-linear) at the device depth the run kept. "
                 "CPU cores: the process's user + system CPU seconds per wall second (Calico).")
    lines.append("")
    if disk:
        lines.append("Disk, 4 KB random reads with O_DIRECT (fio, bench/experiments/disk_iops.sh): " +
                     ", ".join(f"queue depth {qd}: {iops:.0f} IOPS" for qd, iops in sorted(disk.items())) + ".")
        lines.append("")
    return True


def plot_ltm(points, path):
    s = [p for p in points if p["fraction"] > 0 or (p["fraction"] == 0 and (p["system"] == "calico" or p["system"].startswith("usearch_view")))]
    groups = collections.defaultdict(list)
    for p in s:
        if p["index"] != "hnsw" or p["system"] == "calico ablation":
            continue
        groups[(label(p), p["threads"], p["param"])].append(p)
    groups = {k: v for k, v in groups.items() if any(p["fraction"] > 0 for p in v)}
    if not groups:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (name, t, param), v in sorted(groups.items()):
        v.sort(key=lambda p: p["fraction"] if p["fraction"] > 0 else 1.0)
        ax.plot([p["fraction"] * 100 if p["fraction"] > 0 else 100 for p in v], [p["qps"] for p in v], marker="o",
                label=f"{name}, {t} thr, ef {param}")
    ax.set_xlabel("pool (memory) as % of the index (100 = in memory)")
    ax.set_ylabel("queries per second")
    ax.set_yscale("log")
    ax.set_title("HNSW larger than memory")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def ablation_table(points, lines):
    s = [p for p in points if p["system"] == "calico ablation"]
    if not s:
        return False
    lines.append("| step | us/query | recall@10 | gain over previous | cumulative |")
    lines.append("|---|---|---|---|---|")
    first = prev = None
    for p in s:
        us = 1e6 / p["qps"]
        gain = f"{prev / us:.2f}x" if prev else ""
        cum = f"{first / us:.2f}x" if first else ""
        lines.append(f"| {p['translation']} | {us:.1f} | {p['recall']:.3f} | {gain} | {cum} |")
        first = first or us
        prev = us
    lines.append("")
    lines.append("Ratios of medians (the bench prints per-round paired ratios too).")
    lines.append("")
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+")
    ap.add_argument("--md", default="docs/results/vector.md")
    ap.add_argument("--png-dir", default="docs/results/vector")
    ap.add_argument("--command", default="bench/experiments/vector.sh")
    ap.add_argument("--note", default="", help="a paragraph placed under the header (e.g. how quiet the machine was)")
    a = ap.parse_args()
    points, disk = load(a.results)
    if not points:
        raise SystemExit("vector_figures: no vector results in " + ", ".join(a.results))
    os.makedirs(a.png_dir, exist_ok=True)
    rel = os.path.relpath(a.png_dir, os.path.dirname(os.path.abspath(a.md)) or ".")
    m = next((p["machine"] for p in points if p.get("machine")), {})
    n = next((p["n"] for p in points if p.get("n")), "?")
    dim = next((p["dim"] for p in points if p.get("dim")), "?")
    name = next((p["dataset"] for p in points if p.get("dataset")), None)
    pages = {p["index"]: p["page_size"] for p in points if p.get("page_size")}
    lines = [
        "# Vector search on the pool: HNSW and IVF-Flat vs hnswlib, faiss and usearch",
        "",
        f"Generated by `bench/harness/report/vector_figures.py` on {datetime.date.today()} from `{a.command}`.",
        f"Dataset: {n} x {dim}{f' ({name})' if name else ''}. Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores"
        f"{', build ' + m['build'] if m.get('build') else ''}. "
        + (f"Calico's pages: {', '.join(f'{i} {b // 1024} KB' for i, b in sorted(pages.items()))}. " if pages else "") +
        "Every system searches the same queries from the same files, k = 10, all queries as one batch "
        "spread over the threads one query at a time; QPS = queries / wall time; medians over interleaved rounds.",
        "",
    ]
    if a.note:
        lines += [a.note, ""]
    def section(title, *fills):
        """A heading and what `fills` add under it, or a line saying there is nothing."""
        lines.extend([title, ""])
        start = len(lines)
        for fill in fills:
            fill()
        if len(lines) == start:
            lines.extend(["Not part of these results.", ""])

    def recall_plot(index, title):
        png = f"vector_{index}_recall_qps.png"
        if plot_recall_qps(points, index, os.path.join(a.png_dir, png)):
            lines.extend([f"![{title} recall vs QPS]({rel}/{png})", ""])

    def ltm():
        if ltm_table(points, disk, lines) and plot_ltm(points, os.path.join(a.png_dir, "vector_ltm.png")):
            lines.extend([f"![HNSW larger than memory]({rel}/vector_ltm.png)", ""])

    section("## Build", lambda: build_table(points, lines))
    section("## HNSW in memory", lambda: recall_qps_table(points, "hnsw", lines), lambda: recall_plot("hnsw", "HNSW"))
    section("### At equal recall", lambda: equal_recall_table(points, "hnsw", lines))
    section("## IVF-Flat in memory", lambda: recall_qps_table(points, "ivf", lines), lambda: recall_plot("ivf", "IVF"))
    section("### At equal recall", lambda: equal_recall_table(points, "ivf", lines))
    section("## Translations (Calico's indexes on every translation)", lambda: translation_table(points, lines))
    section("## Larger than memory", ltm)
    section("## Ablation (Calico paper, Figure 11, HNSW)", lambda: ablation_table(points, lines))
    with open(a.md, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"vector_figures: wrote {a.md} and the PNGs in {a.png_dir}")


if __name__ == "__main__":
    main()
