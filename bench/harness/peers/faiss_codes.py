"""faiss's PQ and RaBitQ codes on the data of `calico_bench vector-codes`: a sanity
cross-check of Calico's recall at equal bytes (docs/results/vector_codes.md).

For each code: train on the first --train-rows base rows, add every base row, search every
query for its best max(R) by code distance (faiss ranks by its estimator), re-rank the best R
by exact distance (numpy), recall@10 against gt.ivecs. One thread (faiss.omp_set_num_threads(1)),
as Calico's numbers. The embedding set's unit vectors are searched with METRIC_L2 (the same
ranking as inner product on unit vectors; what Calico's PQ does under cosine).
Writes one JSON line per code with faiss's version.
"""
import argparse
import json
import os
import time

import faiss
import numpy as np


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    dim = int(raw[0])
    return raw.reshape(-1, dim + 1)[:, 1:].copy().view(dtype)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", required=True, help="calico_bench's --cache-dir")
    ap.add_argument("--dataset", choices=["clustered", "embedding"], required=True)
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--train-rows", type=int, default=25000)
    ap.add_argument("--rerank", default="10,20,50,100,200")
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    dim = 128 if args.dataset == "clustered" else 384
    metric = "l2" if args.dataset == "clustered" else "ip"
    name = f"{args.dataset}-n{args.n}-d{dim}-c1000-q{args.queries}-s42-{metric}"
    d = os.path.join(args.data, name)
    base = read_vecs(os.path.join(d, "base.fvecs"), np.float32)
    queries = read_vecs(os.path.join(d, "query.fvecs"), np.float32)
    gt = read_vecs(os.path.join(d, "gt.ivecs"), np.int32)[:, :10]
    rs = sorted(int(r) for r in args.rerank.split(","))
    faiss.omp_set_num_threads(1)
    codes = [("pq", dim // 8), ("pq", dim // 4), ("pq", dim // 2), ("rabitq", 1)]
    for nb in (2, 4):
        codes.append(("rabitq", nb))
    for kind, p in codes:
        if kind == "pq":
            index = faiss.IndexPQ(dim, p, 8, faiss.METRIC_L2)
            label = f"faiss-pq{p}x8"
        else:
            try:
                index = faiss.IndexRaBitQ(dim, faiss.METRIC_L2, p) if p > 1 else faiss.IndexRaBitQ(dim, faiss.METRIC_L2)
            except TypeError:
                print(f"faiss {faiss.__version__}: IndexRaBitQ takes no bit count, skipping {p} bits")
                continue
            if hasattr(index, "qb"):
                index.qb = 4 if p == 1 else 8  # query bits, as Calico's
            label = f"faiss-rabitq{p}"
        t0 = time.time()
        index.train(base[: args.train_rows])
        train_s = time.time() - t0
        t0 = time.time()
        index.add(base)
        encode_s = time.time() - t0
        t0 = time.time()
        _, ids = index.search(queries, rs[-1])
        search_s = time.time() - t0
        recall = {}
        for r in rs:
            hits = 0
            for q in range(len(queries)):
                cand = ids[q, :r]
                cand = cand[cand >= 0]
                dist = ((base[cand] - queries[q]) ** 2).sum(axis=1)
                top = cand[np.argsort(dist, kind="stable")[:10]]
                hits += len(set(top.tolist()) & set(gt[q].tolist()))
            recall[str(r)] = round(hits / (10 * len(queries)), 4)
        rec = {"bench": "vector_codes_faiss", "dataset": name, "code": label, "bytes_per_vector": int(index.code_size),
               "train_s": round(train_s, 3), "encode_s": round(encode_s, 3),
               "search_codes_per_s": round(len(base) * len(queries) / search_s),
               "recall_at_10": recall, "faiss": faiss.__version__, "numpy": np.__version__}
        print(json.dumps(rec))
        with open(args.json, "a") as f:
            f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
