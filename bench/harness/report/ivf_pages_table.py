#!/usr/bin/env python3
"""IVF-Flat at each page size against faiss_ivf, paired per round (docs/results/vector_ivf.md, "Page size").

Input: JSON lines of `calico_bench vector --index ivf --ivf-page-size P --json F` (one run per
page size per round) and `bench/harness/peers/vector_peers.py --systems faiss_ivf --json F` (one run
per round), in any order. The i-th line of a key (page size or faiss, threads, nprobe) belongs
to round i. Prints a Markdown table: faiss's median QPS, and per page size Calico's median QPS
and the ratio calico / faiss paired within each round: median (min..max).
Usage: ivf_pages_table.py RESULTS.jsonl [...]"""
import collections
import json
import statistics as st
import sys


def main(paths):
    runs = collections.defaultdict(list)  # key -> [line per round]
    for path in paths:
        for line in open(path):
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("system") == "faiss_ivf":
                runs[("faiss", r["threads"], r["params"]["nprobe"])].append(r)
            elif r.get("experiment") == "vector" and r.get("index") == "ivf":
                runs[(r["page_size"], r["threads"], r["nprobe"])].append(r)
    sizes = sorted({k[0] for k in runs if k[0] != "faiss"})
    cells = sorted({(k[1], k[2]) for k in runs})
    rounds = min(len(v) for v in runs.values())
    print(f"{rounds} rounds")
    print("| threads | nprobe | recall@10 calico / faiss | faiss_ivf | " +
          " | ".join(f"calico {p // 1024} KB pages" for p in sizes) + " |")
    print("|---|---|---|---|" + "---|" * len(sizes))
    for t, npb in cells:
        f = runs[("faiss", t, npb)][:rounds]
        row = [f"{st.median(x['qps'] for x in f) / 1000:.1f}K"]
        for p in sizes:
            c = runs[(p, t, npb)][:rounds]
            rat = sorted(a["qps"] / b["qps"] for a, b in zip(c, f))
            row.append(f"{st.median(x['qps'] for x in c) / 1000:.1f}K, {st.median(rat):.2f}x "
                       f"({rat[0]:.2f}..{rat[-1]:.2f})")
        rc = runs[(sizes[0], t, npb)][0]["recall"]
        print(f"| {t} | {npb} | {rc:.3f} / {f[0]['recall']:.3f} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
