#!/usr/bin/env python3
"""Filtered search: Calico's HNSW (search(filter=...)) against hnswlib (knn_query's filter
callback) and faiss (IndexHNSWFlat with an IDSelectorBitmap), all through their Python APIs,
on the same index data and the same allow-lists (docs/design/mutable_indexes.md, "Filtered
search").

For each selectivity (--selectivity, the fraction of rows a filter allows) and each kind of
allow-list:
  - uncorrelated: each row is allowed with that probability, independently of its vector;
  - correlated: whole clusters are allowed (rows of the first clusters, in a random order of
    the clusters, until the fraction is reached), while the queries come from every
    cluster: most queries' nearest allowed rows are far from them, the hard case for a
    graph search that keeps only allowed nodes;
every system searches every query with k = 10 at each --ef. Recall@10 is against the exact
top 10 among the allowed rows (NumPy), counted over min(10, allowed) per query; QPS is one
search thread, a batch of all queries repeated for at least --seconds, every system in turn,
median of --repeat interleaved rounds; `rows` is the mean number of results returned
(k whenever k rows are allowed is the contract Calico keeps).

Calico answers a filter allowing m of n rows by an exact scan of them when m * m <= 25 * ef
* n (HnswSearchOptions::exact_scan_below = 0), else by a graph search that keeps only allowed
nodes; hnswlib and faiss always search the graph (hnswlib calls the Python callback for
every candidate it keeps). usearch's Python API (2.26) has no filter; pgvector's iterative
scans are measured with the PostgreSQL benchmarks, not here.

Data: clustered float32 rows (bench/harness/peers/churn.py's generator), squared L2. JSON
lines with the machine; a table on stdout.

Usage (after scripts/setup.sh and pip install . into .venv):
  .venv/bin/python bench/harness/peers/filtered.py --n 100000 --dim 128 --json filtered.jsonl
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

if not __package__:  # run by path (python3 bench/harness/...): the repository root makes `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
from bench.harness.peers import churn  # noqa: E402
from bench.harness.peers import vector_peers as vp  # noqa: E402

np = vp.np
K = vp.K
SYSTEMS = ("calico", "hnswlib", "faiss")


class Calico:
    def __init__(self, args, work):
        import calico
        self.path = os.path.join(work, "calico")
        shutil.rmtree(self.path, ignore_errors=True)
        self.calico, self.args = calico, args

    def build(self, rows, threads):
        per_row = 4 * rows.shape[1] + 8 * self.args.M + 64
        self.pool = self.calico.Pool(self.path, pool_bytes=int(len(rows) * per_row * 2) + (64 << 20))
        self.index = self.calico.HnswIndex(self.pool, "hnsw", dim=rows.shape[1], M=self.args.M,
                                           ef_construction=self.args.ef_construction, capacity=len(rows))
        self.index.add(rows, num_threads=threads)

    def allow(self, mask):
        self.mask = mask

    def search(self, queries, ef):
        ids, _ = self.index.search(queries, k=K, ef=ef, num_threads=1, filter=self.mask)
        return np.where(ids < len(self.mask), ids, -1).astype(np.int64)

    def close(self):
        self.pool.close()
        shutil.rmtree(self.path, ignore_errors=True)


class Hnswlib:
    def __init__(self, args, work):
        self.hnswlib, self.args = vp.need("hnswlib"), args

    def build(self, rows, threads):
        self.index = self.hnswlib.Index(space="l2", dim=rows.shape[1])
        self.index.init_index(max_elements=len(rows), M=self.args.M, ef_construction=self.args.ef_construction,
                              random_seed=42)
        self.index.add_items(rows, np.arange(len(rows)), num_threads=threads)

    def allow(self, mask):
        self.allowed = mask.tolist()  # a list: the callback's lookup stays cheap in Python
        self.predicate = self.allowed.__getitem__

    def search(self, queries, ef):
        self.index.set_ef(ef)
        # knn_query raises when fewer than k allowed rows are reached: ask for what exists.
        try:
            labels, _ = self.index.knn_query(queries, k=K, num_threads=1, filter=self.predicate)
        except RuntimeError:
            out = np.full((len(queries), K), -1, dtype=np.int64)
            for i, q in enumerate(queries):
                for k in range(K, 0, -1):
                    try:
                        labels, _ = self.index.knn_query(q, k=k, num_threads=1, filter=self.predicate)
                        out[i, :k] = labels[0]
                        break
                    except RuntimeError:
                        continue
            return out
        return labels.astype(np.int64)

    def close(self):
        pass


class Faiss:
    def __init__(self, args, work):
        self.faiss, self.args = vp.need("faiss"), args

    def build(self, rows, threads):
        self.faiss.omp_set_num_threads(threads)
        self.index = self.faiss.IndexHNSWFlat(rows.shape[1], self.args.M)
        self.index.hnsw.efConstruction = self.args.ef_construction
        self.index.add(rows)
        self.faiss.omp_set_num_threads(1)

    def allow(self, mask):
        self.bits = np.packbits(mask.astype(np.uint8), bitorder="little")
        self.selector = self.faiss.IDSelectorBitmap(len(mask), self.faiss.swig_ptr(self.bits))

    def search(self, queries, ef):
        params = self.faiss.SearchParametersHNSW(sel=self.selector, efSearch=ef)
        _, labels = self.index.search(queries, K, params=params)
        return labels.astype(np.int64)

    def close(self):
        pass


ADAPTERS = {"calico": Calico, "hnswlib": Hnswlib, "faiss": Faiss}


def allow_lists(n, clusters_of_rows, clusters, selectivity, seed):
    """{kind: boolean mask} for one selectivity (see the module comment)."""
    rng = np.random.default_rng(seed)
    uncorrelated = rng.random(n) < selectivity
    order = rng.permutation(clusters)
    sizes = np.bincount(clusters_of_rows, minlength=clusters)[order]
    take = order[:int(np.searchsorted(np.cumsum(sizes), selectivity * n)) + 1]
    correlated = np.isin(clusters_of_rows, take)
    return {"uncorrelated": uncorrelated, "correlated": correlated}


def recall(found, gt, allowed_count):
    """Mean over queries of |found ∩ gt| / min(K, allowed rows)."""
    want = min(K, allowed_count)
    if want == 0:
        return 1.0
    hits = (found[:, :K, None] == gt[:, None, :want]).any(axis=2).sum(axis=1)
    return float(np.mean(hits / want))


def fraction_list(s):
    try:
        values = [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma list of fractions, got '{s}'")
    if not values or any(not 0 < v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected fractions in (0, 1], got '{s}'")
    return values


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=churn.positive(int), default=100000)
    p.add_argument("--dim", type=churn.positive(int), default=128)
    p.add_argument("--clusters", type=churn.positive(int), default=1000)
    p.add_argument("--queries", type=churn.positive(int), default=500)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--selectivity", type=fraction_list, default=[0.001, 0.01, 0.1, 0.5])
    p.add_argument("--M", type=churn.positive(int), default=16)
    p.add_argument("--ef-construction", type=churn.positive(int), default=100)
    p.add_argument("--ef", type=vp.comma_ints, default=[16, 64, 256], help="beam widths (raised to 10)")
    p.add_argument("--build-threads", type=churn.positive(int), default=os.cpu_count() or 1)
    p.add_argument("--seconds", type=churn.positive(float), default=1.0, help="minimum timed region")
    p.add_argument("--repeat", type=churn.positive(int), default=3, help="interleaved rounds (median)")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--json", default=None, help="append JSON lines here")
    args = p.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in args.systems if s not in ADAPTERS]
    if unknown or not args.systems:
        p.error(f"--systems: unknown {unknown} (known: {', '.join(SYSTEMS)})")
    args.ef = sorted({max(ef, K) for ef in args.ef})
    return args


def main(argv):
    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)
    centres = rng.normal(0, 1, size=(args.clusters, args.dim)).astype(np.float32)
    of_rows = rng.integers(0, args.clusters, size=args.n)
    rows = np.ascontiguousarray(centres[of_rows] + rng.normal(0, 0.35, size=(args.n, args.dim)).astype(np.float32))
    queries = np.ascontiguousarray(centres[rng.integers(0, args.clusters, size=args.queries)] +
                                   rng.normal(0, 0.35, size=(args.queries, args.dim)).astype(np.float32))
    machine = vp.machine_info()
    out = open(args.json, "a") if args.json else None
    work = tempfile.mkdtemp(prefix="calico-filtered-")
    systems = {}
    for s in args.systems:
        systems[s] = ADAPTERS[s](args, work)
        start = time.perf_counter()
        systems[s].build(rows, args.build_threads)
        print(f"filtered: {s} built {args.n} rows in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    print(f"{'allow-list':>12} {'select.':>8} {'ef':>4} " +
          " ".join(f"{s + ' recall':>15} {s + ' QPS':>12} {s + ' rows':>10}" for s in args.systems))
    for sel in args.selectivity:
        for kind, mask in allow_lists(args.n, of_rows, args.clusters, sel, args.seed + 1).items():
            allowed = np.flatnonzero(mask)
            gt = churn.exact_top_k(rows, allowed, queries, "l2") if len(allowed) >= K else None
            if gt is None:
                gt = np.full((len(queries), K), -2, dtype=np.int64)
                gt[:, :len(allowed)] = allowed
            for index in systems.values():
                index.allow(mask)
            for ef in args.ef:
                res = churn.timed_batches(systems, queries, ef, args.seconds, args.repeat)
                cells = []
                for s, (found, qps) in res.items():
                    rec = recall(found, gt, len(allowed))
                    rows_returned = float(np.mean((found >= 0).sum(axis=1)))
                    wrong = int(np.sum((found >= 0) & ~mask[np.clip(found, 0, args.n - 1)]))
                    cells.append(f"{rec:>15.4f} {qps:>12.0f} {rows_returned:>10.2f}")
                    if out:
                        out.write(json.dumps({"bench": "filtered", "system": s, "allow_list": kind, "selectivity": sel,
                                              "allowed": int(len(allowed)), "ef": ef, "recall": rec, "qps": qps,
                                              "rows": rows_returned, "not_allowed_returned": wrong, "n": args.n,
                                              "dim": args.dim, "clusters": args.clusters, "queries": args.queries,
                                              "M": args.M, "ef_construction": args.ef_construction,
                                              "search_threads": 1, "machine": machine}) + "\n")
                        out.flush()
                print(f"{kind:>12} {sel:>8.3%} {ef:>4} " + " ".join(cells), flush=True)
    for index in systems.values():
        index.close()
    shutil.rmtree(work, ignore_errors=True)
    if out:
        out.close()


if __name__ == "__main__":
    main(sys.argv[1:])
