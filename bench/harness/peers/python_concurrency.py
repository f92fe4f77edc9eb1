#!/usr/bin/env python3
"""Two measurements of the calico package's Python layer, on one HNSW index:

1. GIL release: Python threads that each call index.search() on their own queries
   (num_threads=1, so all parallelism comes from the Python threads): queries per second
   with 1 and with 2 Python threads, for single-query calls and for batches of 16. With the
   GIL held during the search, two threads would not beat one.
   CPU: the process's CPU time / wall time during the run (a GIL held across the search
   would keep two threads near 100%; released, they approach 200% on two free cores).
2. Call overhead: the time of a single-query call (index.search(q, k=10, ef=E), one [dim]
   query) minus the per-query time of the same queries searched in one batch call with one
   C++ thread (the C++ loop of the index, no Python per query): what the Python boundary
   (argument checks, GIL release, result arrays) costs per call. hnswlib's single-query
   knn_query is measured the same way for reference.

The data comes from python_peers.py (generated, cached in --work-dir). Timings on a shared
machine are noisy: each figure is the median of --repeat rounds.

Usage: .venv/bin/python bench/harness/peers/python_concurrency.py --n 200000 --dim 128 --queries 2000
"""

import argparse
import os
import statistics
import sys
import threading
import time

if not __package__:  # run by path (python3 bench/harness/...): the repository root makes `bench` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
from bench.harness.peers import python_peers as pp  # noqa: E402

np = pp.np


def qps_with_threads(index, queries, ef, nthreads, batch, seconds):
    """Queries per second of `nthreads` Python threads, each searching its share of the
    queries `batch` at a time (num_threads=1), for `seconds`."""
    shares = np.array_split(np.arange(len(queries)), nthreads)
    counts = [0] * nthreads
    stop = time.perf_counter() + seconds
    barrier = threading.Barrier(nthreads)

    def work(t):
        rows = queries[shares[t]]
        blocks = [np.ascontiguousarray(rows[i:i + batch]) for i in range(0, len(rows) - batch + 1, batch)]
        if batch == 1:
            blocks = [np.ascontiguousarray(r) for r in rows]
        barrier.wait()
        n = 0
        while time.perf_counter() < stop:
            for b in blocks:
                index.search(b, k=10, ef=ef, num_threads=1)
            n += len(blocks) * batch
        counts[t] = n

    start, cpu0 = time.perf_counter(), time.process_time()
    threads = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - start
    return sum(counts) / wall, (time.process_time() - cpu0) / wall


def per_call_us(fn, calls):
    start = time.perf_counter()
    for i in range(calls):
        fn(i)
    return (time.perf_counter() - start) / calls * 1e6


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--ef", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=3.0, help="per concurrency measurement")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work-dir", default=os.path.join(pp.tempfile.gettempdir(), "calico-python-peers"))
    ap.add_argument("--no-hnswlib", action="store_true")
    args = ap.parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    calico = pp.need_calico()
    base, queries, _ = pp.load_data(argparse.Namespace(data_dir=None, metric=None, work_dir=args.work_dir, n=args.n,
                                                       dim=args.dim, clusters=args.clusters, queries=args.queries,
                                                       seed=args.seed))[:3]
    # The index is kept in --work-dir and reused by later runs on the same data.
    path = os.path.join(args.work_dir, f"concurrency-pool-n{args.n}-d{args.dim}-c{args.clusters}-s{args.seed}")
    pool_bytes = int(len(base) * (4 * args.dim + 200) * 1.5) + (64 << 20)
    if os.path.exists(path):
        pool = calico.Pool(path, pool_bytes=pool_bytes)
        index = calico.HnswIndex.open(pool, "h")
        index.search(queries, k=10, ef=args.ef)  # loads its pages
        print(f"reusing {path} ({len(index)} x {index.dim}); ef {args.ef}, {os.cpu_count()} cores", flush=True)
    else:
        pool = calico.Pool(path + ".tmp", pool_bytes=pool_bytes)
        index = calico.HnswIndex(pool, "h", dim=args.dim, capacity=len(base))
        t0 = time.perf_counter()
        index.add(base, num_threads=2)
        print(f"built {len(base)} x {args.dim} in {time.perf_counter() - t0:.1f} s (2 threads); ef {args.ef}, "
              f"{os.cpu_count()} cores", flush=True)
        pool.close()
        os.rename(path + ".tmp", path)
        pool = calico.Pool(path, pool_bytes=pool_bytes)
        index = calico.HnswIndex.open(pool, "h")

    print(f"\nload average before: {os.getloadavg()[0]:.2f}")
    print("\n| calls | 1 Python thread (q/s, CPU) | 2 Python threads (q/s, CPU) | speed-up |")
    print("|---|---|---|---|")
    for batch in (1, 16):
        one, two = [], []
        for _ in range(args.repeat):
            one.append(qps_with_threads(index, queries, args.ef, 1, batch, args.seconds))
            two.append(qps_with_threads(index, queries, args.ef, 2, batch, args.seconds))
        a, b = statistics.median(q for q, _ in one), statistics.median(q for q, _ in two)
        ca, cb = statistics.median(c for _, c in one), statistics.median(c for _, c in two)
        print(f"| {'single query' if batch == 1 else f'batches of {batch}'} | {a:,.0f} ({ca:.0%}) | "
              f"{b:,.0f} ({cb:.0%}) | {b / a:.2f}x |", flush=True)

    singles = [np.ascontiguousarray(q) for q in queries]
    index.search(queries, k=10, ef=args.ef, num_threads=1)  # warm
    single, batched = [], []
    for _ in range(args.repeat):
        single.append(per_call_us(lambda i: index.search(singles[i], k=10, ef=args.ef), len(singles)))
        start = time.perf_counter()
        index.search(queries, k=10, ef=args.ef, num_threads=1)
        batched.append((time.perf_counter() - start) / len(queries) * 1e6)
    s, b = statistics.median(single), statistics.median(batched)
    print("\n| system | single-query call (us) | per query in one batch call (us) | overhead per call (us) |")
    print("|---|---|---|---|")
    print(f"| calico | {s:.1f} | {b:.1f} | {s - b:.1f} |", flush=True)
    if not args.no_hnswlib:
        import hnswlib
        h = hnswlib.Index(space="l2", dim=args.dim)
        h.init_index(max_elements=len(base), M=16, ef_construction=100, random_seed=42)
        print("building the hnswlib index for the overhead reference", flush=True)
        h.add_items(base, num_threads=2)
        h.set_ef(args.ef)
        h.knn_query(queries, k=10, num_threads=1)
        single, batched = [], []
        for _ in range(args.repeat):
            single.append(per_call_us(lambda i: h.knn_query(singles[i], k=10, num_threads=1), len(singles)))
            start = time.perf_counter()
            h.knn_query(queries, k=10, num_threads=1)
            batched.append((time.perf_counter() - start) / len(queries) * 1e6)
        s, b = statistics.median(single), statistics.median(batched)
        print(f"| hnswlib | {s:.1f} | {b:.1f} | {s - b:.1f} |")
    pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
