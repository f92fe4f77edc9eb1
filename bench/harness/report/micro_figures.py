#!/usr/bin/env python3
"""Turns the JSON lines of the translation microbenchmarks (calico_bench scan, micro-btree,
micro-bfs, micro-ablation, micro-memory; bench/micro/micro.h) into a Markdown report with figures:

  Figure 1   ([Calico] Figure 1a-d)  throughput per translation: sequential scan, random
             scan, B-tree lookup, graph BFS                      -> fig1_translation_overhead.png
  Tables 2-4 medians, speedups vs array and direct, counters per operation
  Table 6    group prefetch gain per translation (BFS)
  Figure 10  translation memory: size sweep and moving hot set   -> fig10_translation_memory.png
  Figure 11  ablation: cumulative speedups                        -> fig11_ablation.png
  Large      with --large: paired ratios of `bench/experiments/micro.sh --large` (one process per
             translation and round, data past what every pool at once can hold)
  Counts     with --counts: cachegrind's instructions, reads and misses per operation
             (bench/experiments/micro_counts.sh), next to the array's

Usage: micro_figures.py RESULTS.jsonl [more.jsonl ...] [--md docs/results/micro.md] [--png-dir docs/results/micro]
       [--command "how the results were produced"] [--large large.jsonl] [--counts counts.jsonl]
When a (experiment, workload, translation) appears more than once, the last line wins.
"""
import argparse
import datetime
import json
import statistics
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if not __package__:  # run by path (python3 bench/harness/...): the repository root makes `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
from bench.harness.report.common import json_lines  # noqa: E402
from bench.harness.report.micro_quick import paired_rows, ratio_cell  # noqa: E402

TIMED = ("scan", "btree", "bfs", "ablation")


def load(paths):
    timed, memory, skipped = {}, {}, []
    order = []
    for r in json_lines(paths):
        exp = r.get("experiment")
        if exp in TIMED:
            key = (exp, r["workload"], r["translation"])
            if key not in timed:
                order.append(key)
            timed[key] = r
        elif exp in ("memory_size", "memory_moving"):
            memory[(exp, r["translation"])] = r
        elif exp == "skipped":
            skipped.append(r)
    records = [timed[k] for k in order]
    repair_speedups(records)
    return records, memory, skipped


def paired(base, r):
    """Median over rounds of base's time / r's time in the same round (runs are interleaved,
    so a round's ratio cancels the machine's drift in that round)."""
    ratios = [b / x for b, x in zip(base["runs_ns_per_op"], r["runs_ns_per_op"]) if x > 0]
    if not ratios:
        return base["median_ns_per_op"] / r["median_ns_per_op"]
    return statistics.median(ratios)


def repair_speedups(records):
    """Recomputes every speedup as a paired ratio from the runs (older JSON lines carry a ratio
    of medians)."""
    for i, r in enumerate(records):
        group = [x for x in records if x["experiment"] == r["experiment"] and x["workload"] == r["workload"]]
        for b in list(r.get("speedup", {})):
            if b == "first":
                base = group[0]
            elif b == "previous":
                k = group.index(r)
                base = group[k - 1] if k > 0 else None
            else:
                base = next((x for x in group if x["translation"] == b), None)
            r["speedup"][b] = paired(base, r) if base is not None else None


def fmt(x, digits=2, suffix=""):
    return "n/a" if x is None else f"{x:.{digits}f}{suffix}"


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def workloads_of(records, exp):
    seen = []
    for r in records:
        if r["experiment"] == exp and r["workload"] not in seen:
            seen.append(r["workload"])
    return seen


def timed_table(records, exp, workload):
    rows = []
    for r in records:
        if r["experiment"] != exp or r["workload"] != workload:
            continue
        c = r.get("counters_per_op") or {}
        sp = r.get("speedup", {})
        rows.append([r["translation"], f"{r['median_ns_per_op']:.1f}", f"{r['ops_per_s'] / 1e6:.3f}"] +
                    [fmt(sp.get(b), 3, "x") for b in sp] +
                    [fmt(c.get("ipc")), fmt(c.get("instructions"), 0), fmt(c.get("llc_misses")),
                     fmt(c.get("dtlb_misses")), r["runs"], r["failures"]])
    first = next(r for r in records if r["experiment"] == exp and r["workload"] == workload)
    op = first["op"]
    headers = (["translation", f"ns/{op}", f"M{op}s/s"] + [f"vs {b}" for b in first.get("speedup", {})] +
               ["IPC", f"instr/{op}", f"LLC miss/{op}", f"dTLB miss/{op}", "runs", "failures"])
    return table(headers, rows)


def figure1(records, path):
    panels = [("scan", "sequential optimistic", "(a) sequential scan", "Mpages/s"),
              ("scan", "random optimistic", "(b) random scan", "Mpages/s"),
              ("btree", "ycsb-c uniform", "(c) B-tree lookup (YCSB-C)", "Mlookups/s"),
              ("bfs", "bfs", "(d) graph BFS", "Mnodes/s")]
    panels = [p for p in panels if any(r["experiment"] == p[0] and r["workload"] == p[1] for r in records)]
    if not panels:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    for ax, (exp, wl, title, unit) in zip(axes[0], panels):
        rs = [r for r in records if r["experiment"] == exp and r["workload"] == wl]
        names = [r["translation"] for r in rs]
        vals = [r["ops_per_s"] / 1e6 for r in rs]
        colors = ["#999999" if n == "direct" else "#d62728" if n == "array" else "#1f77b4" for n in names]
        bars = ax.bar(names, vals, color=colors)
        for b, r in zip(bars, rs):
            s = r.get("speedup", {}).get("array")
            if s is not None:
                ax.annotate(f"{1 / s:.2f}x" if s else "", (b.get_x() + b.get_width() / 2, b.get_height()),
                            ha="center", va="bottom", fontsize=8)
        ax.set_title(title)
        ax.set_ylabel(unit)
        ax.tick_params(axis="x", rotation=45)
    fig.suptitle("Translation overhead (labels: time relative to array; direct = no translation)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def figure11(records, path):
    rs = [r for r in records if r["experiment"] == "ablation"]
    if not rs:
        return False
    fig, ax = plt.subplots(figsize=(7, 3.8))
    vals = [r["speedup"].get("first") or 0 for r in rs]
    bars = ax.bar([r["translation"] for r in rs], vals, color="#2ca02c")
    for b, v in zip(bars, vals):
        ax.annotate(f"{v:.2f}x", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                    fontsize=8)
    ax.set_ylabel("cumulative speedup")
    ax.set_title("Ablation on the graph BFS (Figure 11)")
    ax.tick_params(axis="x", rotation=20)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def figure10(memory, path):
    sizes = {t: r for (e, t), r in memory.items() if e == "memory_size"}
    moving = {t: r for (e, t), r in memory.items() if e == "memory_moving"}
    if not sizes and not moving:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    flat = None
    for t, r in sizes.items():
        xs = [p["data_mb"] for p in r["points"]]
        ax.plot(xs, [p["translation_private_bytes"] / 2**20 for p in r["points"]], marker="o", label=t)
        flat = (xs, [p["flat_bytes"] / 2**20 for p in r["points"]])
    if flat:
        ax.plot(flat[0], flat[1], "k--", label="flat array (no reclaiming)")
    ax.set_xlabel("data (MB of records)")
    ax.set_ylabel("translation memory (MB, private)")
    ax.set_title("(a) as data grows (YCSB-C Zipf)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax = axes[1]
    switch = None
    for t, r in moving.items():
        ax.plot([s["op"] for s in r["samples"]], [s["translation_private_bytes"] / 2**20 for s in r["samples"]],
                label=t)
        switch = r["params"].get("uniform_ops")
    if switch:
        ax.axvline(switch, color="k", linestyle=":", label="uniform -> YCSB-D (read latest)")
    ax.set_xlabel("operations")
    ax.set_ylabel("translation memory (MB, private)")
    ax.set_title("(b) as the hot set moves")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    fig.suptitle("Translation memory (Figure 10)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def table6(records):
    bfs = [r for r in records if r["experiment"] == "bfs"]
    rows = []
    for t in dict.fromkeys(r["translation"] for r in bfs):
        no = next((r for r in bfs if r["translation"] == t and r["workload"] == "bfs"), None)
        yes = next((r for r in bfs if r["translation"] == t and r["workload"] != "bfs"), None)
        if not no or not yes:
            continue
        cn, cy = no.get("counters_per_op") or {}, yes.get("counters_per_op") or {}
        rows.append([t, f"{paired(no, yes):.3f}x",
                     f"{no['median_ns_per_op']:.1f} -> {yes['median_ns_per_op']:.1f}",
                     f"{fmt(cn.get('cycles'), 0)} -> {fmt(cy.get('cycles'), 0)}",
                     f"{fmt(cn.get('llc_misses'), 1)} -> {fmt(cy.get('llc_misses'), 1)}"])
    return table(["translation", "speedup", "ns/node no -> yes", "cycles/node", "LLC miss/node"], rows)


def memory_tables(memory):
    out = []
    sizes = {t: r for (e, t), r in memory.items() if e == "memory_size"}
    if sizes:
        any_r = next(iter(sizes.values()))
        cols = [p["data_mb"] for p in any_r["points"]]
        rows = []
        for t, r in sizes.items():
            cells = []
            for p in r["points"]:
                rec = p.get("reclaimed_fraction")
                cells.append(f"{p['translation_private_bytes'] / 1024:.0f} KB" +
                             (f" ({100 * rec:.0f}%)" if rec is not None else ""))
            rows.append([t] + cells + [sum(p["failures"] for p in r["points"])])
        flat = [f"{p['flat_bytes'] / 1024:.0f} KB" for p in any_r["points"]]
        rows.append(["*flat array*"] + flat + [""])
        pr = any_r["params"]
        out.append(f"Size sweep: pool {pr['pool_mb']} MB, {pr['sweep_lookups']} YCSB-C lookups (scrambled Zipf "
                   f"{pr['theta']}) after a bulk load; private translation memory (reclaimed vs a flat array "
                   f"where the variant punches):\n")
        out.append(table(["translation"] + [f"{c} MB data" for c in cols] + ["failures"], rows))
    moving = {t: r for (e, t), r in memory.items() if e == "memory_moving"}
    if moving:
        rows = []
        for t, r in moving.items():
            s = r["samples"]
            u = r["params"]["uniform_ops"]
            mid = min(s, key=lambda x: abs(x["op"] - u))

            def cell(p):
                rec = p.get("reclaimed_fraction")
                least = (f"; least {p['occupied_bytes'] / 1024:.0f} KB" if "occupied_bytes" in p and rec is not None
                         else "")
                return f"{p['translation_private_bytes'] / 1024:.0f} KB" + (
                    f" ({100 * rec:.0f}%{least})" if rec is not None else "")

            rows.append([t, cell(s[0]), cell(mid), cell(s[-1]), f"{s[-1]['blocks']}",
                         f"{s[-1]['translation_reserved_bytes'] / 2**20:.0f} MB", s[-1]["punches"], r["failures"]])
        pr = next(iter(moving.values()))["params"]
        out.append(f"\nMoving hot set: {pr['moving_data_mb']} MB of records ({pr['records']}) on a {pr['pool_mb']} MB "
                   f"pool; {pr['uniform_ops']} uniform reads, then YCSB-D (95% read latest, 5% insert) up to "
                   f"{pr['moving_ops']} operations. *least*: 4 KB for every page of 512 entries that holds a "
                   "resident block, the least any array that returns whole OS pages can keep for that resident "
                   "set:\n")
        out.append(table(["translation", "after load", "after uniform reads", "end (read latest)", "blocks",
                          "reserved", "punches", "failures"], rows))
    return "\n".join(out)


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def large_section(path):
    rows = read_jsonl(path)
    meta = next((r for r in rows if r.get("experiment") == "meta"), {})
    timed = [r for r in rows if r.get("experiment") in ("scan", "btree", "bfs")]
    if not timed:
        return ""
    md = [f"## Large data, one process per translation\n",
          f"`{meta.get('source', 'bench/experiments/micro.sh --large')}` at commit {meta.get('commit', '?')} "
          f"({meta.get('date', '?')}): each round runs one fresh process per translation (order rotated per "
          "round) that generates the same data from the same seed, warms up, and times one run of at least "
          "1 s per workload; *vs X* is the median over rounds of X's time / this time in the same round, with "
          "the spread (min..max) over rounds."
          + (" `array_sparse` is the A/A control: while nothing is evicted it runs the array's hot path "
             "instruction for instruction, in its own pool and code, so its ratio to array is how far this "
             "machine moves one design; a difference between designs within that is not resolved."
             if any(r.get("translation") == "array_sparse" for r in timed) else "") + "\n"]
    for (exp, wl), entries in paired_rows(timed).items():
        first = next(r for r in timed if r["experiment"] == exp and r["workload"] == wl)
        p = first["params"]
        size = {"scan": f"{p.get('data_mb')} MB", "btree": f"{p.get('records')} records",
                "bfs": f"{p.get('nodes')} nodes"}.get(exp, "")
        md.append(f"**{exp} / {wl}** ({size})\n\n" +
                  table(["translation", f"ns/{first['op']}", "s/run", "vs array (spread)", "vs direct (spread)",
                         "rounds"],
                        [[t, f"{ns:.1f}", f"{secs:.2f}", ratio_cell(r["array"]), ratio_cell(r["direct"]), n]
                         for t, ns, secs, n, r in entries]) + "\n")
    md.append(f"Self-check failures: {sum(r.get('failures', 0) for r in timed)}.\n")
    return "\n".join(md)


def counts_section(path):
    rows = [r for r in read_jsonl(path) if r.get("experiment") == "counts"]
    if not rows:
        return ""
    md = [f"## Deterministic counts per operation (cachegrind)\n",
          f"`bench/experiments/micro_counts.sh` at commit {', '.join(dict.fromkeys(r.get('commit', '?') for r in rows))}: "
          "each workload under cachegrind with 1 "
          "and with 3 timed rounds; the difference over the extra operations is one operation's cost, with "
          f"load, warm-up and setup cancelled. Cache model: {rows[0].get('cache_model')}. Scan: 256 MB, per "
          "page (sequential and random order together); btree: 1M records, per lookup; bfs and bfs-prefetch "
          "(without and with group prefetch): 65536 nodes, per visited node (one list and 44 probes; "
          "cachegrind does not model a prefetch's effect on time). *Δ array*: this translation minus array.\n"]
    for w in dict.fromkeys(r["workload"] for r in rows):
        ws = [r for r in rows if r["workload"] == w]
        arr = next((r for r in ws if r["translation"] == "array"), None)

        def delta(r, k):
            return f"{r[k] - arr[k]:+.2f}" if arr else ""
        md.append(f"**{w}** (per {ws[0]['op']})\n\n" +
                  table(["translation", "instructions", "Δ array", "data reads", "Δ array", "L1d read misses",
                         "LL read misses"],
                        [[r["translation"], f"{r['instructions']:.1f}", delta(r, "instructions"),
                          f"{r['data_reads']:.1f}", delta(r, "data_reads"), f"{r['l1d_read_misses']:.3f}",
                          f"{r['ll_read_misses']:.3f}"] for r in ws]) + "\n")
    return "\n".join(md)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("jsonl", nargs="+")
    ap.add_argument("--md", default="docs/results/micro.md")
    ap.add_argument("--png-dir", default="docs/results/micro")
    ap.add_argument("--command", default="bench/experiments/micro.sh")
    ap.add_argument("--large", help="JSON lines of bench/experiments/micro.sh --large (docs/results/micro/large.jsonl)")
    ap.add_argument("--counts", help="JSON lines of bench/experiments/micro_counts.sh (docs/results/micro/counts.jsonl)")
    a = ap.parse_args()
    records, memory, skipped = load(a.jsonl)
    if not records and not memory:
        sys.exit("micro_figures.py: no microbenchmark records in " + ", ".join(a.jsonl))
    os.makedirs(a.png_dir, exist_ok=True)
    rel = os.path.relpath(a.png_dir, os.path.dirname(os.path.abspath(a.md)) or ".")
    machine = (records[0] if records else next(iter(memory.values())))["machine"]
    md = [f"# Translation microbenchmarks (Calico paper, sections 3, 6.5, 6.6)\n",
          f"Generated {datetime.date.today()} by `bench/harness/report/micro_figures.py` from the JSON lines of "
          f"`{a.command}`. Machine: {machine['cpu']}, {machine['cores']} cores, "
          f"{machine['memory_bytes'] / 2**30:.1f} GiB; build: {machine['build']}.\n",
          "Single-threaded, everything resident (each run checks that its pool never evicted), one pool per "
          "translation loaded with identical data and the same index code; a warm-up, then interleaved "
          "repeats; medians. *vs X* is the median over rounds of X's time divided by this time in the same "
          "round (above 1: faster than X): rounds are interleaved and this VM drifts 2-3x from round to "
          "round, equally for every variant, so paired ratios are far steadier than ratios of medians; `direct` "
          "(no translation at all) is the ceiling. Counters are per operation, `n/a` where the machine has "
          "no perf_event_open (deterministic cache-miss counts: run a command under "
          "`valgrind --tool=cachegrind --cache-sim=yes`).\n"]
    fig1 = os.path.join(a.png_dir, "fig1_translation_overhead.png")
    if figure1(records, fig1):
        md.append(f"## Figure 1: translation overhead across workloads\n\n![Figure 1]({rel}/{os.path.basename(fig1)})\n")
    titles = {"scan": "Table 2: heap SUM scan (8-byte column of 1024-byte rows, 8 KB pages)",
              "btree": "Table 3: B-tree point lookups (YCSB-C, uniform)",
              "bfs": "Table 4: graph BFS (optimistic reads)",
              "ablation": "Figure 11: ablation on the graph BFS"}
    for exp in TIMED:
        wls = workloads_of(records, exp)
        if not wls:
            continue
        p = next(r for r in records if r["experiment"] == exp)["params"]
        md.append(f"## {titles[exp]}\n\nParameters: " + ", ".join(f"{k}={v}" for k, v in p.items()) + "\n")
        if exp == "ablation":
            fig11 = os.path.join(a.png_dir, "fig11_ablation.png")
            if figure11(records, fig11):
                md.append(f"![Figure 11]({rel}/{os.path.basename(fig11)})\n")
        for wl in wls:
            md.append(f"**{wl}**\n\n" + timed_table(records, exp, wl) + "\n")
        if exp == "bfs":
            md.append("### Table 6: group prefetch gain (BFS time without / with prefetch)\n\n" + table6(records) + "\n")
    if memory:
        fig10 = os.path.join(a.png_dir, "fig10_translation_memory.png")
        figure10(memory, fig10)
        md.append(f"## Figure 10: translation memory\n\n![Figure 10]({rel}/{os.path.basename(fig10)})\n\n" +
                  memory_tables(memory) + "\n")
    failures = sum(r["failures"] for r in records) + sum(r.get("failures", 0) for r in memory.values())
    md.append(f"Self-check failures over all runs: {failures}.\n")
    for path, section in ((a.large, large_section), (a.counts, counts_section)):
        if path and os.path.exists(path):
            md.append(section(path))
    if skipped:
        md.append("Skipped (the variant failed to load; the others ran):\n\n" +
                  table(["experiment", "translation", "reason"], [[r["for"], r["translation"], r["reason"]]
                                                                  for r in skipped]) + "\n")
    os.makedirs(os.path.dirname(os.path.abspath(a.md)), exist_ok=True)
    with open(a.md, "w") as f:
        f.write("\n".join(md))
    print(f"wrote {a.md} and figures in {a.png_dir}")


if __name__ == "__main__":
    main()
