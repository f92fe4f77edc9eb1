#!/usr/bin/env python3
"""The far-tier sweeps of docs/results/tiers.md (bench/experiments/tiers.sh): calico_bench ycsb or tpcc JSON
lines of several systems and several far-tier sizes.

Prints, per workload (random lookups: ycsb; TPC-C: tpcc), far-tier size (as a multiple of
the fast tier) and system: the median throughput, its ratio to each baseline paired within
each repeat (median and range over repeats; the single-tier array and vmcache, and
vmcache_n), the share of accesses served by each tier and by disk (lookups) or the pages
read from disk per transaction (TPC-C), migrations per second, the time spent per page
moved (for vmcache_n also its parts: backing the destination, copying, discarding the
source), and the time moves waited for the emulated link's bandwidth.

Usage: bench/harness/report/tiers_tables.py [--figure OUT.png] runs.jsonl [more.jsonl ...]
(prints Markdown; --figure also plots median throughput against the far tier's size, one
line per system and thread count, the whiskers spanning the repeats; needs matplotlib; with
both workloads in the input, one panel each)
"""
import json
import statistics
import sys
from collections import defaultdict

# Ratios are paired against each of these present in the run (vmcache_n: Calico tiers
# against the other tiered design).
BASELINES = ["array", "vmcache", "vmcache_n"]
TITLES = {"ycsb": "Random lookups", "tpcc": "TPC-C"}
UNITS = {"ycsb": "lookups per second (thousands)", "tpcc": "transactions per second (thousands)"}


def system_of(r):
    """The design's name: ycsb's "calico" / "calico:<translation>", tpcc's translation."""
    if r["experiment"] == "tpcc":
        return r["translation"]
    s = r["system"]
    return "array" if s == "calico" else s.replace("calico:", "")


def throughput(r):
    return r["tx_per_s"] if r["experiment"] == "tpcc" else r["ops_per_s"]


def far_ratio(r):
    if r["experiment"] == "tpcc":
        return r.get("far_mb_option", 0) * 2**20 / r["pool_bytes"]
    return r.get("far_bytes", 0) / r["cache_bytes"]


def fmt_ratio(xs):
    if not xs:
        return "-"
    m = statistics.median(xs)
    return f"{m:.2f} ({min(xs):.2f}..{max(xs):.2f})" if len(xs) > 1 else f"{m:.2f}"


def load(paths):
    """{experiment: {(ratio, threads): {(system, repeat): run}}}, and the systems in order."""
    runs = defaultdict(lambda: defaultdict(dict))
    systems = []
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("experiment") not in TITLES:
                    continue
                s = system_of(r)
                runs[r["experiment"]][(far_ratio(r), r["threads"])][(s, r["repeat"])] = r
                if s not in systems:
                    systems.append(s)
    return runs, systems


def figure(runs, systems, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    exps = [e for e in TITLES if e in runs]
    fig, axes = plt.subplots(1, len(exps), figsize=(6.4 * len(exps), 4.0), squeeze=False)
    for ax, exp in zip(axes[0], exps):
        group = runs[exp]
        threads_seen = sorted({t for (_, t) in group})
        for s in systems:
            for t in threads_seen:
                xs, ys, lo, hi = [], [], [], []
                for (ratio, th) in sorted(group):
                    if th != t:
                        continue
                    vals = [throughput(r) for (sy, _), r in group[(ratio, th)].items() if sy == s]
                    if not vals:
                        continue
                    m = statistics.median(vals)
                    xs.append(ratio)
                    ys.append(m / 1000)
                    lo.append((m - min(vals)) / 1000)
                    hi.append((max(vals) - m) / 1000)
                if xs:
                    label = s + (f", {t} thr" if len(threads_seen) > 1 else "")
                    ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=label)
        ax.set_xlabel("far tier / fast tier")
        ax.set_ylabel(UNITS[exp])
        ax.set_title(f"{TITLES[exp]}, data larger than both tiers (far tier emulated)", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def table(exp, runs, systems):
    any_run = next(iter(next(iter(runs.values())).values()))
    if exp == "ycsb":
        print(f"Random lookups: workload {any_run['workload']} ({any_run['distribution']}), {any_run['records']} records "
              f"({any_run['data_bytes'] >> 20} MB), fast tier {any_run['cache_bytes'] >> 20} MB; "
              f"machine: {any_run.get('cpu', '?')}, {any_run.get('cores', '?')} cores\n")
    else:
        print(f"TPC-C: {any_run['warehouses']} warehouses at scale {any_run['scale']}, fast tier "
              f"{any_run['pool_bytes'] >> 20} MB, {any_run['seconds']:.0f} s runs; "
              f"machine: {any_run.get('cpu', '?')}, {any_run.get('cores', '?')} cores\n")
    base = [b for b in BASELINES if b in systems]
    access = ["fast hits", "far hits", "disk"] if exp == "ycsb" else ["far hits", "pages read per tx"]
    head = ["far / fast", "threads", "system", "ops/s" if exp == "ycsb" else "tx/s"] + [f"over {b}" for b in base] + \
        access + ["migrations/s", "MB moved/s", "ns per page moved", "of which back / copy / discard", "wait s"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for (ratio, threads) in sorted(runs):
        group = runs[(ratio, threads)]
        for s in systems:
            mine = {rep: r for (sy, rep), r in group.items() if sy == s}
            if not mine:
                continue
            tput = statistics.median(throughput(r) for r in mine.values())
            ratios = []
            for b in base:
                xs = [throughput(r) / throughput(group[(b, rep)]) for rep, r in mine.items() if (b, rep) in group]
                ratios.append("1" if b == s else fmt_ratio(xs))

            def med(key):
                vals = [r["tiers"][key] for r in mine.values() if r.get("tiers") and key in r["tiers"]]
                return statistics.median(vals) if vals else 0
            tiered = any(r.get("tiers") and r["tiers"].get("far_frames", 1) for r in mine.values()) and \
                any(r.get("tiers") and (r["tiers"]["far_hits"] or r["tiers"].get("demotions")) for r in mine.values())
            secs = statistics.median(r["seconds"] for r in mine.values())
            if exp == "ycsb":
                hit = statistics.median(r["hit_rate"] or 0 for r in mine.values())
                far_share = statistics.median(
                    r["tiers"]["far_hits"] / max(1, r["tiers"]["fast_hits"] + r["tiers"]["far_hits"]) * (r["hit_rate"] or 0)
                    for r in mine.values() if r.get("tiers"))
                cols = [f"{100 * (hit - far_share):.1f}%", f"{100 * far_share:.1f}%", f"{100 * (1 - hit):.1f}%"]
                moved_mb = med("migration_bytes") / secs / 2**20
            else:
                far = [r["tiers"]["far_hits"] / max(1, r["tiers"]["fast_hits"] + r["tiers"]["far_hits"])
                       for r in mine.values() if r.get("tiers")]
                reads = statistics.median(r["pages_read"] / max(1, r["tx"]) for r in mine.values())
                cols = [f"{100 * statistics.median(far):.1f}%" if far else "", f"{reads:.2f}"]
                moved_mb = med("migrations_per_s") * any_run["page_size"] / 2**20
            row = [f"{ratio:g}x", str(threads), s, f"{tput:.0f}"] + ratios + cols + [
                f"{med('migrations_per_s'):.0f}" if tiered else "", f"{moved_mb:.1f}" if tiered else "",
                f"{med('ns_per_page_moved'):.0f}" if tiered else "",
                f"{med('ns_per_page_fault'):.0f} / {med('ns_per_page_copy'):.0f} / {med('ns_per_page_discard'):.0f}"
                if med("ns_per_page_copy") > 0 else "",
                f"{med('migration_wait_s'):.3f}" if tiered else ""]
            print("| " + " | ".join(row) + " |")
    print()


def main(args):
    fig_out = None
    if len(args) >= 2 and args[0] == "--figure":
        fig_out, args = args[1], args[2:]
    runs, systems = load(args)
    if not runs:
        sys.exit("tiers_tables: no ycsb or tpcc lines")
    for exp in TITLES:
        if exp in runs:
            table(exp, runs[exp], systems)
    if fig_out:
        figure(runs, systems, fig_out)


if __name__ == "__main__":
    main(sys.argv[1:])
