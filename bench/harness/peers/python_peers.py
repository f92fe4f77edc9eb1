#!/usr/bin/env python3
"""Calico against hnswlib, faiss and usearch, all through their Python APIs, on the same data
(the ann-benchmarks way): build time, recall@10 and QPS over a sweep of ef (HNSW) / nprobe
(IVF-Flat), at each of --threads search threads; a table, JSON lines and a recall-QPS PNG.

The peers' adapters, the dataset reader, recall@10 and the machine description come from
bench/harness/peers/vector_peers.py (the C++ bench's peer harness); this file adds Calico's adapters
(calico_hnsw, calico_ivf: the calico package, pool in --work-dir), generated data with NumPy
ground truth when no --data-dir is given, and the plot.

Measurement: every index is built once with --build-threads threads (build_s: wall time of
the adds, IVF: train + add); each (system, parameter, threads) point runs one batch of all
queries --warmup times untimed, then --repeat times interleaved across all points; QPS is
queries / median batch time; recall@10 is from the last batch.

Usage (after scripts/setup.sh and pip install . into .venv):
  .venv/bin/python bench/harness/peers/python_peers.py --n 200000 --dim 128 --queries 1000 \\
      --systems calico_hnsw,hnswlib,faiss_hnsw,usearch,calico_ivf,faiss_ivf \\
      --ef 10,20,40,80,160 --nprobe 1,4,16,64 --threads 1,2 --json py.jsonl --plot py.png
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

if not __package__:  # run by path (python3 bench/harness/...): the repository root makes `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
from bench.harness.peers import vector_peers as vp  # noqa: E402

np = vp.np
K = vp.K
PEERS = ("hnswlib", "faiss_hnsw", "faiss_ivf", "usearch")
SYSTEMS = ("calico_hnsw", "calico_ivf") + PEERS
CALICO_METRIC = {"l2": "l2", "ip": "ip", "cosine": "cos"}


def need_calico():
    try:
        import calico
        return calico
    except ImportError:
        sys.exit("python_peers: the calico package is missing: .venv/bin/pip install . (from the repository root)")


class CalicoHnsw:
    """calico.HnswIndex in a pool of --pool-mb (default: room for the whole index)."""

    def __init__(self, args, metric, dim):
        self.calico = need_calico()
        self.args, self.metric, self.dim = args, metric, dim
        self.pool = self.index = None

    def build_params(self):
        return {"M": self.args.M, "ef_construction": self.args.ef_construction}

    def open_pool(self, n, per_row):
        path = os.path.join(self.args.work_dir, type(self).__name__)
        shutil.rmtree(path, ignore_errors=True)
        need = int(n * per_row * 1.5) + (64 << 20)
        size = (self.args.pool_mb << 20) if self.args.pool_mb else need
        self.pool = self.calico.Pool(path, pool_bytes=size, translation=self.args.translation)

    def build(self, base, threads):
        self.open_pool(len(base), 4 * self.dim + 8 * self.args.M + 64)
        self.index = self.calico.HnswIndex(self.pool, "hnsw", dim=self.dim, metric=CALICO_METRIC[self.metric],
                                           M=self.args.M, ef_construction=self.args.ef_construction,
                                           capacity=len(base))
        self.index.add(base, num_threads=threads)

    def search_params(self):
        return [{"ef": ef} for ef in self.args.ef]

    def search(self, queries, p, threads):
        ids, _ = self.index.search(queries, k=K, ef=max(p["ef"], K), num_threads=threads)
        return ids.astype(np.int64)

    def close(self):
        self.pool.close()


class CalicoIvf(CalicoHnsw):
    """calico.IvfIndex trained like the faiss_ivf peer (train_iters, 64 rows per list)."""

    def build_params(self):
        return {"nlist": self.args.nlist, "train_iters": self.args.train_iters,
                "train_sample": self.args.train_sample_per_list * self.args.nlist}

    def build(self, base, threads):
        self.open_pool(len(base), 4 * self.dim + 4)
        self.index = self.calico.IvfIndex(self.pool, "ivf", dim=self.dim, metric=CALICO_METRIC[self.metric],
                                          nlist=self.args.nlist)
        sample_n = min(len(base), self.args.train_sample_per_list * self.args.nlist)
        rng = np.random.default_rng(self.args.seed)
        sample = np.ascontiguousarray(base[np.sort(rng.choice(len(base), size=sample_n, replace=False))])
        self.index.train(sample, iters=self.args.train_iters, seed=self.args.seed, num_threads=threads)
        self.index.add(base, num_threads=threads)

    def search_params(self):
        return [{"nprobe": p} for p in self.args.nprobe]

    def search(self, queries, p, threads):
        ids, _ = self.index.search(queries, k=K, nprobe=p["nprobe"], num_threads=threads)
        return ids.astype(np.int64)


def make_adapter(system, args, metric, dim):
    if system == "calico_hnsw":
        return CalicoHnsw(args, metric, dim)
    if system == "calico_ivf":
        return CalicoIvf(args, metric, dim)
    return vp.make_adapter(system, args, metric, dim)


def generate(n, dim, clusters, queries, seed):
    """Clustered float32 rows (Gaussian clusters of random centres; queries drawn the same way)
    and the exact top-K ids of every query (squared L2), by NumPy in chunks."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1, size=(clusters, dim)).astype(np.float32)

    def draw(m):
        return np.ascontiguousarray(centres[rng.integers(0, clusters, size=m)] +
                                    rng.normal(0, 0.35, size=(m, dim)).astype(np.float32))

    base, q = draw(n), draw(queries)
    norms = (base.astype(np.float64) ** 2).sum(1)
    gt = np.empty((queries, K), dtype=np.int64)
    for i in range(0, queries, 100):
        d = norms[None, :] - 2.0 * (q[i:i + 100].astype(np.float64) @ base.T.astype(np.float64))
        part = np.argpartition(d, K, axis=1)[:, :K]
        order = np.take_along_axis(d, part, 1).argsort(axis=1, kind="stable")
        gt[i:i + 100] = np.take_along_axis(part, order, 1)
    return base, q, gt


def load_data(args):
    if args.data_dir:
        base = vp.read_vecs(os.path.join(args.data_dir, "base.fvecs"), np.float32)
        queries = vp.read_vecs(os.path.join(args.data_dir, "query.fvecs"), np.float32)
        gt = vp.read_vecs(os.path.join(args.data_dir, "gt.ivecs"), np.int32).astype(np.int64)
        name = os.path.basename(os.path.normpath(args.data_dir))
        return base, queries, gt, name, args.metric or vp.infer_metric(args.data_dir)
    if args.metric not in (None, "l2"):
        sys.exit("python_peers: generated data has L2 ground truth; use --data-dir for other metrics")
    cache = os.path.join(args.work_dir, f"gen-n{args.n}-d{args.dim}-c{args.clusters}-q{args.queries}-s{args.seed}.npz")
    if os.path.exists(cache):
        z = np.load(cache)
        base, queries, gt = z["base"], z["queries"], z["gt"]
    else:
        print(f"python_peers: generating {args.n} x {args.dim} and the ground truth", file=sys.stderr)
        base, queries, gt = generate(args.n, args.dim, args.clusters, args.queries, args.seed)
        np.savez(cache, base=base, queries=queries, gt=gt)
    return base, queries, gt, os.path.basename(cache)[:-4], "l2"


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", help="base.fvecs, query.fvecs, gt.ivecs (default: generated data)")
    ap.add_argument("--n", type=vp.positive_int, default=200_000, help="generated rows")
    ap.add_argument("--dim", type=vp.positive_int, default=128, help="generated dimensions")
    ap.add_argument("--clusters", type=vp.positive_int, default=1000, help="generated clusters")
    ap.add_argument("--queries", type=vp.positive_int, default=1000, help="generated queries")
    ap.add_argument("--metric", choices=("l2", "ip", "cosine"))
    ap.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma list of {','.join(SYSTEMS)}")
    ap.add_argument("--M", type=vp.positive_int, default=16)
    ap.add_argument("--ef-construction", type=vp.positive_int, default=100)
    ap.add_argument("--ef", type=vp.comma_ints, default=[10, 20, 40, 80, 160])
    ap.add_argument("--nlist", type=vp.positive_int, default=1024)
    ap.add_argument("--nprobe", type=vp.comma_ints, default=[1, 4, 16, 64])
    ap.add_argument("--train-iters", type=vp.positive_int, default=10)
    ap.add_argument("--train-sample-per-list", type=vp.positive_int, default=64)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=vp.comma_ints, default=[1, 2])
    ap.add_argument("--build-threads", type=vp.positive_int, help="default: the largest of --threads")
    ap.add_argument("--repeat", type=vp.positive_int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--translation", default="array", help="Calico's translation variant")
    ap.add_argument("--pool-mb", type=int, default=0, help="Calico's pool size (0: room for the index)")
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "calico-python-peers"),
                    help="Calico's pools and the generated data's cache")
    ap.add_argument("--json", help="append one JSON line per point")
    ap.add_argument("--plot", help="write the recall-QPS PNG here")
    args = ap.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    for s in args.systems:
        if s not in SYSTEMS:
            ap.error(f"unknown system '{s}' (known: {', '.join(SYSTEMS)})")
    args.threads = sorted(set(args.threads))
    args.build_threads = args.build_threads or max(args.threads)
    return args


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from bench.harness.report.common import recall_qps_axes
    threads = sorted({r["threads"] for r in rows})
    fig, axes = plt.subplots(1, len(threads), figsize=(6 * len(threads), 4.5), squeeze=False)
    for ax, t in zip(axes[0], threads):
        for s in dict.fromkeys(r["system"] for r in rows):
            pts = sorted((r["recall"], r["qps"]) for r in rows if r["system"] == s and r["threads"] == t)
            style = "-o" if s.startswith("calico") else "--s"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=s, markersize=4)
        recall_qps_axes(ax, f"{t} search thread{'s' if t > 1 else ''}", "queries per second (batch)")
    fig.suptitle(f"Python APIs, {rows[0]['dataset']} ({rows[0]['n']} x {rows[0]['dim']}, {rows[0]['queries']} queries)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv):
    args = parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    base, queries, gt, dataset, metric = load_data(args)
    dim = base.shape[1]
    machine = vp.machine_info()
    machine["versions"]["calico"] = need_calico().__version__
    print(f"python_peers: {dataset} ({len(base)} x {dim}, {len(queries)} queries, {metric}); "
          f"{machine['cpu']}, {machine['cores']} cores; {machine['versions']}", file=sys.stderr)
    adapters, builds = {}, {}
    for s in args.systems:
        adapters[s] = make_adapter(s, args, metric, dim)
        print(f"  {s}: building ({vp.param_label(adapters[s].build_params())}, {args.build_threads} threads)",
              file=sys.stderr)
        start = time.perf_counter()
        adapters[s].build(base, args.build_threads)
        builds[s] = time.perf_counter() - start
        print(f"  {s}: built in {builds[s]:.1f} s", file=sys.stderr)

    points = [(s, p) for s in args.systems for p in adapters[s].search_params()]
    rows = []
    for threads in args.threads:
        times = {i: [] for i in range(len(points))}
        recalls = {}
        for s, p in points:
            for _ in range(args.warmup):
                adapters[s].search(queries, p, threads)
        for _ in range(args.repeat):
            for i, (s, p) in enumerate(points):
                start = time.perf_counter()
                ids = adapters[s].search(queries, p, threads)
                times[i].append(time.perf_counter() - start)
                recalls[i] = vp.recall_at_k(ids, gt)
        for i, (s, p) in enumerate(points):
            qps_runs = [len(queries) / t for t in times[i]]
            rec = {"bench": "python_peers", "system": s, "params": {**adapters[s].build_params(), **p},
                   "threads": threads, "k": K, "recall": recalls[i], "qps": statistics.median(qps_runs),
                   "qps_runs": qps_runs, "build_s": builds[s], "build_threads": args.build_threads,
                   "dataset": dataset, "n": len(base), "dim": dim, "queries": len(queries), "metric": metric,
                   "repeat": args.repeat, "warmup": args.warmup, "machine": machine}
            if s.startswith("calico"):
                rec["translation"] = args.translation
            rows.append(rec)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(rec) + "\n")
    for a in adapters.values():
        if hasattr(a, "close"):
            a.close()

    header = f"| {'system':<12} | {'params':<46} | thr | recall@10 | {'QPS':>8} | build s |"
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    for r in rows:
        print(f"| {r['system']:<12} | {vp.param_label(r['params']):<46} | {r['threads']:>3} | {r['recall']:>9.4f} | "
              f"{r['qps']:>8.0f} | {r['build_s']:>7.1f} |")
    if args.plot:
        plot(rows, args.plot)
        print(f"python_peers: wrote {args.plot}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
