#!/usr/bin/env python3
"""The far-tier sweep of docs/tiers.md (scripts/tiers.sh): calico_bench ycsb JSON lines of
one workload, several systems, and several far-tier sizes (far_bytes).

Prints, per far-tier size (as a multiple of the fast tier, cache_bytes) and system: the
median ops/s, its ratio to each baseline paired within each repeat (median and range over
repeats; the single-tier array and vmcache, and vmcache_n), the share of accesses served by
each tier and by disk, migrations per second, the time spent per page moved (for vmcache_n
also its parts: backing the destination, copying, discarding the source), and the time
moves waited for the emulated link's bandwidth.

Usage: bench/report/tiers_tables.py [--figure OUT.png] lookups.jsonl [more.jsonl ...]
(prints Markdown; --figure also plots median ops/s against the far tier's size, one line per
system and thread count, the whiskers spanning the repeats; needs matplotlib)
"""
import json
import statistics
import sys
from collections import defaultdict

# Ratios are paired against each of these present in the run (vmcache_n: Calico tiers
# against the other tiered design).
BASELINES = ["calico", "calico:vmcache", "calico:vmcache_n"]


def fmt_ratio(xs):
    if not xs:
        return "-"
    m = statistics.median(xs)
    return f"{m:.2f} ({min(xs):.2f}..{max(xs):.2f})" if len(xs) > 1 else f"{m:.2f}"


def figure(runs, systems, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    threads_seen = sorted({t for (_, t) in runs})
    for s in systems:
        for t in threads_seen:
            xs, ys, lo, hi = [], [], [], []
            for (ratio, th) in sorted(runs):
                if th != t:
                    continue
                ops = [r["ops_per_s"] for (sy, _), r in runs[(ratio, th)].items() if sy == s]
                if not ops:
                    continue
                m = statistics.median(ops)
                xs.append(ratio)
                ys.append(m / 1000)
                lo.append((m - min(ops)) / 1000)
                hi.append((max(ops) - m) / 1000)
            if xs:
                label = s.replace("calico:", "").replace("calico", "array") + (f", {t} thr" if len(threads_seen) > 1 else "")
                ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=label)
    ax.set_xlabel("far tier / fast tier")
    ax.set_ylabel("lookups per second (thousands)")
    ax.set_title("Random lookups, data larger than both tiers (far tier emulated)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main(paths):
    fig_out = None
    if len(paths) >= 2 and paths[0] == "--figure":
        fig_out, paths = paths[1], paths[2:]
    runs = defaultdict(dict)  # (ratio, threads) -> {(system, repeat): run}
    systems = []
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("experiment") != "ycsb":
                    continue
                ratio = r.get("far_bytes", 0) / r["cache_bytes"]
                runs[(ratio, r["threads"])][(r["system"], r["repeat"])] = r
                if r["system"] not in systems:
                    systems.append(r["system"])
    if not runs:
        sys.exit("tiers_tables: no ycsb lines")
    any_run = next(iter(next(iter(runs.values())).values()))
    print(f"Workload {any_run['workload']} ({any_run['distribution']}), {any_run['records']} records "
          f"({any_run['data_bytes'] >> 20} MB), fast tier {any_run['cache_bytes'] >> 20} MB; "
          f"machine: {any_run.get('cpu', '?')}, {any_run.get('cores', '?')} cores\n")
    base = [b for b in BASELINES if b in systems]
    head = ["far / fast", "threads", "system", "ops/s"] + [f"over {b}" for b in base] + \
           ["fast hits", "far hits", "disk", "migrations/s", "MB moved/s", "ns per page moved",
            "of which back / copy / discard", "wait s"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for (ratio, threads) in sorted(runs):
        group = runs[(ratio, threads)]
        for s in systems:
            mine = {rep: r for (sy, rep), r in group.items() if sy == s}
            if not mine:
                continue
            ops = statistics.median(r["ops_per_s"] for r in mine.values())
            ratios = []
            for b in base:
                xs = [r["ops_per_s"] / group[(b, rep)]["ops_per_s"] for rep, r in mine.items() if (b, rep) in group]
                ratios.append("1" if b == s else fmt_ratio(xs))
            def med(key):
                vals = [r["tiers"][key] for r in mine.values() if r.get("tiers") and key in r["tiers"]]
                return statistics.median(vals) if vals else 0
            hit = statistics.median(r["hit_rate"] or 0 for r in mine.values())
            far_share = statistics.median(
                r["tiers"]["far_hits"] / max(1, r["tiers"]["fast_hits"] + r["tiers"]["far_hits"]) * (r["hit_rate"] or 0)
                for r in mine.values() if r.get("tiers"))
            secs = statistics.median(r["seconds"] for r in mine.values())
            row = [f"{ratio:g}x", str(threads), s, f"{ops:.0f}"] + ratios + [
                f"{100 * (hit - far_share):.1f}%", f"{100 * far_share:.1f}%", f"{100 * (1 - hit):.1f}%",
                f"{med('migrations_per_s'):.0f}", f"{med('migration_bytes') / secs / 2**20:.1f}",
                f"{med('ns_per_page_moved'):.0f}" if any(r.get("tiers") and "ns_per_page_moved" in r["tiers"] for r in mine.values()) else "-",
                f"{med('ns_per_page_fault'):.0f} / {med('ns_per_page_copy'):.0f} / {med('ns_per_page_discard'):.0f}"
                if med('ns_per_page_copy') > 0 else "-",
                f"{med('migration_wait_s'):.3f}"]
            print("| " + " | ".join(row) + " |")
    print()
    if fig_out:
        figure(runs, systems, fig_out)


if __name__ == "__main__":
    main(sys.argv[1:])
