#!/usr/bin/env python3
"""Peer systems for the vector-search benchmark (docs/results/vector.md): hnswlib, faiss (HNSW and IVF-Flat)
and usearch (in memory and memory-mapped view), measured the way the C++ bench measures Calico.

Input: a dataset directory as written by the C++ dataset layer (bench/vector/data/dataset.h):
base.fvecs, query.fvecs and gt.ivecs (exact top-100 ids per query, closest first).

Measurement (the same as the C++ bench):
  * build: add every base vector with --build-threads threads (default: the largest of
    --threads); build_s is its wall time, index_bytes the size of the saved index file;
  * search: one batch of all queries, k = 10, with T threads (hnswlib num_threads, faiss
    OpenMP threads, usearch threads); QPS = queries / wall time of the batch;
  * every (system, parameter) point is searched --warmup times untimed, then --repeat times,
    the repeats interleaved across all systems and points; each timed repeat searches the
    whole query set again until it lasted --min-seconds (default 1 s); the reported QPS is
    the median over the repeats;
  * recall@10 = mean over queries of |found top-10 ∩ true top-10| / 10 (from the last batch).

usearch_view serves the usearch index saved in --index-dir through Index.restore(path,
view=True), a memory-mapped file: the larger-than-memory comparison.

Usage (after scripts/setup.sh, which installs the packages into .venv):
  .venv/bin/python bench/harness/peers/vector_peers.py --data-dir /work/vecdata/clustered-n1000000-d128-c1000-q1000-s42-l2 \
      --systems hnswlib,faiss_hnsw,faiss_ivf,usearch,usearch_view --M 16 --ef-construction 100 \
      --ef 10,20,40,80,160 --nlist 1024 --nprobe 1,4,16,64 --threads 1,2 --repeat 3 \
      --index-dir /work/vecdata/peer-indexes --json peers.jsonl
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

SETUP_HINT = "run scripts/setup.sh (it installs the peers into <repo>/.venv) and use .venv/bin/python"

try:
    import numpy as np
except ImportError:
    sys.exit(f"vector_peers: the Python package 'numpy' is missing: {SETUP_HINT}")

SYSTEMS = ("hnswlib", "faiss_hnsw", "faiss_ivf", "usearch", "usearch_view")
PACKAGE_OF = {"hnswlib": "hnswlib", "faiss_hnsw": "faiss", "faiss_ivf": "faiss", "usearch": "usearch",
              "usearch_view": "usearch"}
PIP_NAME = {"hnswlib": "hnswlib", "faiss": "faiss-cpu", "usearch": "usearch"}
K = 10


def need(module):
    """Imports a peer package or exits naming it and the setup script."""
    try:
        return __import__(module)
    except ImportError:
        sys.exit(f"vector_peers: the Python package '{PIP_NAME.get(module, module)}' (import {module}) "
                 f"is missing: {SETUP_HINT}")


# ---------------------------------------------------------------------------------------------
# Vector files: every row is an int32 dim followed by dim values (float32 / int32).

def read_vecs(path, dtype):
    """Reads an .fvecs (dtype float32) or .ivecs (int32) file into a rows x dim array."""
    if not os.path.exists(path):
        sys.exit(f"vector_peers: {path} does not exist (generate the dataset with the C++ bench first)")
    raw = np.fromfile(path, dtype=np.int32)
    if raw.size == 0:
        sys.exit(f"vector_peers: {path} is empty")
    dim = int(raw[0])
    if dim <= 0 or dim > 65536 or raw.size % (dim + 1) != 0:
        sys.exit(f"vector_peers: {path} is malformed (dim {dim}, {raw.size * 4} bytes)")
    rows = raw.reshape(-1, dim + 1)
    if not np.all(rows[:, 0] == dim):
        sys.exit(f"vector_peers: {path} has rows of different dims")
    return np.ascontiguousarray(rows[:, 1:].view(dtype))


def infer_metric(data_dir):
    """The metric from the dataset directory's name (..-l2, ..-ip, ..-cosine), else l2."""
    name = os.path.basename(os.path.normpath(data_dir))
    for m in ("cosine", "ip", "l2"):
        if name.endswith("-" + m):
            return m
    return "l2"


# ---------------------------------------------------------------------------------------------
# One adapter per system: build(base, threads), save(path), load(path, n, dim), and
# search(queries, param, threads) -> (queries x K) int64 ids (-1 for missing).

class Hnswlib:
    space = {"l2": "l2", "ip": "ip", "cosine": "cosine"}

    def __init__(self, args, metric, dim):
        self.hnswlib = need("hnswlib")
        self.args, self.metric, self.dim = args, metric, dim
        self.index = None

    def build_params(self):
        return {"M": self.args.M, "ef_construction": self.args.ef_construction}

    def build(self, base, threads):
        self.index = self.hnswlib.Index(space=self.space[self.metric], dim=self.dim)
        self.index.init_index(max_elements=len(base), M=self.args.M, ef_construction=self.args.ef_construction,
                              random_seed=42)
        self.index.add_items(base, np.arange(len(base)), num_threads=threads)

    def save(self, path):
        self.index.save_index(path)

    def load(self, path, n):
        self.index = self.hnswlib.Index(space=self.space[self.metric], dim=self.dim)
        self.index.load_index(path, max_elements=n)

    def search_params(self):
        return [{"ef": ef} for ef in self.args.ef]

    def search(self, queries, p, threads):
        self.index.set_ef(max(p["ef"], K))
        labels, _ = self.index.knn_query(queries, k=K, num_threads=threads)
        return labels.astype(np.int64)


class FaissBase:
    def __init__(self, args, metric, dim):
        self.faiss = need("faiss")
        self.args, self.metric, self.dim = args, metric, dim
        self.index = None

    def faiss_metric(self):
        return self.faiss.METRIC_L2 if self.metric == "l2" else self.faiss.METRIC_INNER_PRODUCT

    def prepare(self, x):
        """Cosine: faiss has no cosine metric; normalise and use the inner product."""
        if self.metric != "cosine":
            return x
        x = x.copy()
        self.faiss.normalize_L2(x)
        return x

    def save(self, path):
        self.faiss.write_index(self.index, path)

    def load(self, path, n):
        self.index = self.faiss.read_index(path)

    def run(self, queries, threads):
        if self.metric == "cosine":  # normalise once, outside the timed batches
            if getattr(self, "_queries_in", None) is not queries:
                self._queries_in, self._queries_norm = queries, self.prepare(queries)
            queries = self._queries_norm
        self.faiss.omp_set_num_threads(threads)
        _, labels = self.index.search(queries, K)
        return labels.astype(np.int64)


class FaissHnsw(FaissBase):
    def build_params(self):
        return {"M": self.args.M, "ef_construction": self.args.ef_construction}

    def build(self, base, threads):
        self.faiss.omp_set_num_threads(threads)
        self.index = self.faiss.IndexHNSWFlat(self.dim, self.args.M, self.faiss_metric())
        self.index.hnsw.efConstruction = self.args.ef_construction
        self.index.add(self.prepare(base))

    def search_params(self):
        return [{"ef": ef} for ef in self.args.ef]

    def search(self, queries, p, threads):
        self.index.hnsw.efSearch = max(p["ef"], K)
        return self.run(queries, threads)


class FaissIvf(FaissBase):
    """IVF-Flat trained like Calico's IVF: k-means with train_iters iterations on a sample of
    64 * nlist base rows (capped at n), drawn with the seed."""

    def build_params(self):
        return {"nlist": self.args.nlist, "train_iters": self.args.train_iters,
                "train_sample": self.args.train_sample_per_list * self.args.nlist}

    def build(self, base, threads):
        self.faiss.omp_set_num_threads(threads)
        base = self.prepare(base)
        if self.metric == "l2":
            quantizer = self.faiss.IndexFlatL2(self.dim)
        else:
            quantizer = self.faiss.IndexFlatIP(self.dim)
        self.index = self.faiss.IndexIVFFlat(quantizer, self.dim, self.args.nlist, self.faiss_metric())
        self.index.cp.niter = self.args.train_iters
        self.index.cp.seed = self.args.seed
        self.index.cp.max_points_per_centroid = 1 << 30  # the sample below is the whole training set
        sample_n = min(len(base), self.args.train_sample_per_list * self.args.nlist)
        rng = np.random.default_rng(self.args.seed)
        sample = base[np.sort(rng.choice(len(base), size=sample_n, replace=False))]
        self.index.train(sample)
        self.index.add(base)

    def search_params(self):
        return [{"nprobe": p} for p in self.args.nprobe]

    def search(self, queries, p, threads):
        self.index.nprobe = p["nprobe"]
        return self.run(queries, threads)


class Usearch:
    usearch_metric = {"l2": "l2sq", "ip": "ip", "cosine": "cos"}

    def __init__(self, args, metric, dim, view=False):
        self.usearch = need("usearch")
        from usearch.index import Index
        self.Index = Index
        self.args, self.metric, self.dim, self.view = args, metric, dim, view
        self.index = None

    def build_params(self):
        return {"M": self.args.M, "ef_construction": self.args.ef_construction}

    def build(self, base, threads):
        self.index = self.Index(ndim=self.dim, metric=self.usearch_metric[self.metric], dtype="f32",
                                connectivity=self.args.M, expansion_add=self.args.ef_construction)
        self.index.add(np.arange(len(base), dtype=np.uint64), base, threads=threads)

    def save(self, path):
        self.index.save(path)

    def load(self, path, n):
        self.index = self.Index.restore(path, view=self.view)
        if self.index is None:
            sys.exit(f"vector_peers: usearch cannot restore {path}")

    def search_params(self):
        return [{"ef": ef} for ef in self.args.ef]

    def search(self, queries, p, threads):
        self.index.expansion_search = max(p["ef"], K)
        m = self.index.search(queries, K, threads=threads)
        keys = m.keys.astype(np.int64)
        keys[np.arange(K)[None, :] >= m.counts[:, None]] = -1
        return keys


def make_adapter(system, args, metric, dim):
    if system == "hnswlib":
        return Hnswlib(args, metric, dim)
    if system == "faiss_hnsw":
        return FaissHnsw(args, metric, dim)
    if system == "faiss_ivf":
        return FaissIvf(args, metric, dim)
    return Usearch(args, metric, dim, view=(system == "usearch_view"))


# ---------------------------------------------------------------------------------------------

def recall_at_k(ids, gt, k=K):
    """Mean over queries of |ids[:k] ∩ gt[:k]| / k (ids of -1 never match)."""
    hits = (ids[:, :k, None] == gt[:, None, :k]).any(axis=2).sum()
    return float(hits) / (len(gt) * k)


def machine_info():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = 0
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    from importlib import metadata
    for package in ("hnswlib", "faiss-cpu", "usearch"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_bytes": mem, "versions": versions}


def param_label(p):
    return " ".join(f"{k}={v}" for k, v in p.items())


def comma_ints(s):
    try:
        values = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma list of integers, got '{s}'")
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got '{s}'")
    return values


def positive_int(s):
    v = int(s)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{s}'")
    return v


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True, help="directory with base.fvecs, query.fvecs, gt.ivecs")
    ap.add_argument("--metric", choices=("l2", "ip", "cosine"),
                    help="default: from the directory name's suffix (-l2, -ip, -cosine), else l2")
    ap.add_argument("--systems", default="hnswlib,faiss_hnsw,faiss_ivf,usearch",
                    help=f"comma list of {','.join(SYSTEMS)}")
    ap.add_argument("--M", type=positive_int, default=16, help="HNSW degree (usearch connectivity)")
    ap.add_argument("--ef-construction", type=positive_int, default=100, help="HNSW build beam (usearch expansion_add)")
    ap.add_argument("--ef", type=comma_ints, default=[10, 20, 40, 80, 160], help="HNSW search beams (comma list)")
    ap.add_argument("--nlist", type=positive_int, default=1024, help="IVF lists")
    ap.add_argument("--nprobe", type=comma_ints, default=[1, 2, 4, 8, 16, 32, 64], help="IVF probes (comma list)")
    ap.add_argument("--train-iters", type=positive_int, default=10, help="IVF k-means iterations")
    ap.add_argument("--train-sample-per-list", type=positive_int, default=64, help="IVF training rows per list")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=comma_ints, default=[1, os.cpu_count() or 1], help="search threads (comma list)")
    ap.add_argument("--build-threads", type=positive_int, help="default: the largest of --threads")
    ap.add_argument("--repeat", type=positive_int, default=3, help="timed batches per point (median reported)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed batches per point before the repeats")
    ap.add_argument("--min-seconds", type=float, default=1.0,
                    help="a timed run repeats the whole query set until it lasted this long (default 1)")
    ap.add_argument("--max-queries", type=positive_int, help="use only the first N queries")
    ap.add_argument("--index-dir", help="save built indexes here and reuse them (required for usearch_view)")
    ap.add_argument("--rebuild", action="store_true", help="build even when --index-dir holds the index")
    ap.add_argument("--json", help="append one JSON line per measurement to this file")
    ap.add_argument("--no-base", action="store_true",
                    help="do not read base.fvecs (every index must be saved in --index-dir; larger-than-memory runs)")
    ap.add_argument("--print-baseline-rss", action="store_true",
                    help="load everything but search nothing, print the resident set size in bytes and exit "
                         "(bench/experiments/vector_peer_ltm.sh sizes its memory limit from it)")
    args = ap.parse_args(argv)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    for s in args.systems:
        if s not in SYSTEMS:
            ap.error(f"unknown system '{s}' (known: {', '.join(SYSTEMS)})")
    if "usearch_view" in args.systems and not args.index_dir:
        ap.error("usearch_view needs --index-dir (the view maps the saved usearch index)")
    args.threads = sorted(set(args.threads))
    if args.build_threads is None:
        args.build_threads = max(args.threads)
    return args


def index_path(args, dataset, system, adapter):
    stored = "usearch" if system == "usearch_view" else system  # the view maps usearch's file
    tag = "-".join(f"{k}{v}" for k, v in adapter.build_params().items())
    return os.path.join(args.index_dir, f"{dataset}-{adapter.metric}-{stored}-{tag}.index")


def build_or_load(args, system, adapter, base, dataset):
    """Builds (or loads from --index-dir) the index; returns (build_s, build_threads, index_bytes)."""
    path = index_path(args, dataset, system, adapter) if args.index_dir else None
    meta_path = path + ".json" if path else None
    if path and os.path.exists(path) and os.path.exists(meta_path) and not args.rebuild:
        with open(meta_path) as f:
            meta = json.load(f)
        adapter.load(path, len(base))
        print(f"  {system}: loaded {path} (built in {meta['build_s']:.1f} s with {meta['build_threads']} threads)",
              file=sys.stderr)
        return meta["build_s"], meta["build_threads"], os.path.getsize(path)
    if system == "usearch_view":
        # Build the in-memory usearch index, save it, then map the file.
        builder = Usearch(args, adapter.metric, adapter.dim, view=False)
        build_s, threads, size = build_or_load(args, "usearch", builder, base, dataset)
        del builder
        adapter.load(path, len(base))
        return build_s, threads, size
    print(f"  {system}: building ({param_label(adapter.build_params())}, {args.build_threads} threads)",
          file=sys.stderr)
    start = time.perf_counter()
    adapter.build(base, args.build_threads)
    build_s = time.perf_counter() - start
    print(f"  {system}: built in {build_s:.1f} s", file=sys.stderr)
    if path is None:
        path = os.path.join(args.tmp_dir, f"{system}.index")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    adapter.save(path + ".tmp")
    os.replace(path + ".tmp", path)
    size = os.path.getsize(path)
    if meta_path:
        with open(meta_path, "w") as f:
            json.dump({"build_s": build_s, "build_threads": args.build_threads}, f)
    else:
        os.remove(path)
    return build_s, args.build_threads, size


def read_bytes():
    """Bytes this process made the kernel read from storage (/proc/self/io read_bytes): mmap
    faults of usearch_view included. 4 KB units of it are reported as reads."""
    try:
        with open("/proc/self/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def disk_read_counters(path):
    """(reads completed, ms spent by reads) of the block device holding path
    (/sys/dev/block/MAJ:MIN/stat, as bench/common/disk_stats.h), or None: around a run they give the
    device's IOPS and mean reads in flight (aqu-sz), whoever issued the reads."""
    try:
        st = os.stat(path)
        with open(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/stat") as f:
            fields = f.read().split()
        return int(fields[0]), int(fields[3])
    except (OSError, IndexError, ValueError):
        return None


def rss_bytes(field="VmRSS"):
    """This process's resident set size (VmRSS) or another /proc/self/status size (VmHWM: its peak)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def main(argv):
    args = parse_args(argv)
    for s in args.systems:  # fail before any work when a package is missing
        need(PACKAGE_OF[s])
    metric = args.metric or infer_metric(args.data_dir)
    dataset = os.path.basename(os.path.normpath(args.data_dir))
    base_path = os.path.join(args.data_dir, "base.fvecs")
    if args.no_base:
        # Larger than memory: the saved indexes are served as they are; the base vectors are
        # never read (they would not fit the memory limit). Only the shape is needed.
        dim0 = int(np.fromfile(base_path, dtype=np.int32, count=1)[0])
        base = np.empty((os.path.getsize(base_path) // (4 * (dim0 + 1)), dim0), dtype=np.float32)
    else:
        base = read_vecs(base_path, np.float32)
    queries = read_vecs(os.path.join(args.data_dir, "query.fvecs"), np.float32)
    gt = read_vecs(os.path.join(args.data_dir, "gt.ivecs"), np.int32).astype(np.int64)
    if args.max_queries:
        queries, gt = queries[:args.max_queries], gt[:args.max_queries]
    if base.shape[1] != queries.shape[1] or len(gt) != len(queries) or gt.shape[1] < K:
        sys.exit(f"vector_peers: inconsistent dataset: base {base.shape}, queries {queries.shape}, gt {gt.shape}")
    dim = base.shape[1]
    machine = machine_info()
    print(f"vector_peers: dataset {dataset} ({len(base)} x {dim}, {len(queries)} queries, {metric}), "
          f"systems {','.join(args.systems)}, threads {args.threads}, build threads {args.build_threads}, "
          f"repeat {args.repeat}, warmup {args.warmup}, k {K}", file=sys.stderr)
    print(f"vector_peers: {machine['cpu']}, {machine['cores']} cores, {machine['versions']}", file=sys.stderr)

    import tempfile
    with tempfile.TemporaryDirectory(prefix="vector-peers-") as tmp:
        args.tmp_dir = tmp
        adapters, builds = {}, {}
        for s in args.systems:
            adapters[s] = make_adapter(s, args, metric, dim)
            if args.no_base and not (args.index_dir and os.path.exists(index_path(args, dataset, s, adapters[s]))):
                sys.exit(f"vector_peers: --no-base needs {s}'s index saved in --index-dir (run once without it)")
            builds[s] = build_or_load(args, s, adapters[s], base, dataset)
        if args.print_baseline_rss:
            print(rss_bytes())
            return 0

        points = [(s, p) for s in args.systems for p in adapters[s].search_params()]
        rows = []
        for threads in args.threads:
            times = {i: [] for i in range(len(points))}
            reads = {}
            disk = {i: [] for i in range(len(points))}  # (device IOPS, device depth) per run
            recalls = {}
            for i, (s, p) in enumerate(points):
                for _ in range(args.warmup):
                    adapters[s].search(queries, p, threads)
            for _ in range(args.repeat):  # interleaved: one batch of every point per round
                for i, (s, p) in enumerate(points):
                    rb0 = read_bytes()
                    d0 = disk_read_counters(args.index_dir or tmp)
                    start = time.perf_counter()
                    passes = 0
                    while True:  # one timed run: whole query sets until --min-seconds passed
                        ids = adapters[s].search(queries, p, threads)
                        passes += 1
                        elapsed = time.perf_counter() - start
                        if elapsed >= args.min_seconds:
                            break
                    d1 = disk_read_counters(args.index_dir or tmp)
                    if d0 and d1:
                        disk[i].append(((d1[0] - d0[0]) / elapsed, (d1[1] - d0[1]) / 1e3 / elapsed))
                    times[i].append(elapsed / passes)
                    reads.setdefault(i, []).append((read_bytes() - rb0) / 4096 / passes)
                    recalls[i] = recall_at_k(ids, gt)
            for i, (s, p) in enumerate(points):
                qps_runs = [len(queries) / t for t in times[i]]
                build_s, build_threads, index_bytes = builds[s]
                rec = {"bench": "vector_peers", "system": s, "params": {**adapters[s].build_params(), **p},
                       "threads": threads, "k": K, "recall": recalls[i], "qps": statistics.median(qps_runs),
                       "qps_runs": qps_runs,
                       "reads_per_query": statistics.median(reads[i]) / len(queries),
                       "iops": statistics.median(r / t for r, t in zip(reads[i], times[i])),
                       "disk_iops": round(statistics.median(x[0] for x in disk[i])) if disk[i] else None,
                       "disk_depth": round(statistics.median(x[1] for x in disk[i]), 2) if disk[i] else None,
                       "build_s": build_s, "build_threads": build_threads,
                       "index_bytes": index_bytes, "dataset": dataset, "n": len(base), "dim": dim,
                       "queries": len(queries), "metric": metric, "repeat": args.repeat, "warmup": args.warmup,
                       "min_seconds": args.min_seconds,
                       "machine": machine}
                rows.append(rec)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps(rec) + "\n")

    header = f"{'system':<13} {'params':<48} {'thr':>3} {'recall@10':>9} {'QPS':>10} {'build s':>8} {'index MB':>9}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['system']:<13} {param_label(r['params']):<48} {r['threads']:>3} {r['recall']:>9.4f} "
              f"{r['qps']:>10.0f} {r['build_s']:>8.1f} {r['index_bytes'] / 2**20:>9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
