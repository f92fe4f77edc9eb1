#!/usr/bin/env python3
"""The A/A control of the churn benchmark: the same rows built into a fresh Calico HNSW index
several times (2 build threads, so the insertion order and with it the graph differ), recall@10
of the same queries at each ef. The spread is the noise a "within x of a fresh build" claim
has to clear (docs/results/vector_churn.md).

Usage: .venv/bin/python bench/harness/peers/fresh_build_aa.py N CLUSTERS [BUILDS] > out.jsonl
(rows: churn.py's clustered generator, 128-d, seed 42; M 16, ef_construction 100)
"""
import json
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
from bench.harness.peers import churn  # noqa: E402

np = churn.np


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    n, clusters = int(argv[0]), int(argv[1])
    builds = int(argv[2]) if len(argv) == 3 else 3
    import calico
    rows, queries = churn.clustered_rows(n, 128, clusters, 1000, 42)
    gt = churn.exact_top_k(rows, np.arange(n), queries, "l2")
    work = tempfile.mkdtemp(prefix="calico-aa-")
    try:
        for b in range(builds):
            path = os.path.join(work, f"pool{b}")
            with calico.Pool(path, pool_bytes=int(n * (512 + 128 + 64) * 2) + (64 << 20)) as pool:
                index = calico.HnswIndex(pool, "h", dim=128, M=16, ef_construction=100, capacity=n)
                start = time.perf_counter()
                index.add(rows, num_threads=2)
                build_s = time.perf_counter() - start
                for ef in (16, 64):
                    ids, _ = index.search(queries, k=10, ef=ef, num_threads=1)
                    rec = float(np.mean([len(set(ids[i].astype(np.int64)) & set(gt[i])) / 10
                                         for i in range(len(queries))]))
                    print(json.dumps({"bench": "churn_aa_build", "n": n, "clusters": clusters, "dim": 128, "M": 16,
                                      "ef_construction": 100, "build": b, "ef": ef, "recall": rec,
                                      "build_s": build_s}), flush=True)
            shutil.rmtree(path, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
