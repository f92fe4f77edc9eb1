#!/usr/bin/env python3
"""DiskANN (diskannpy's StaticDiskIndex) as the larger-than-memory peer of Calico's coded HNSW
(calico_bench vector-coded), at the same memory budget and measured the way the C++ bench measures.

Entry points (modes):
  default             build the disk index once (cached in --index-dir), load it with the node cache
                      the budget leaves room for, search every (L, beam width, threads) point; one
                      JSON line per point (--json)
  --build-only        build (or find) the cached index and exit
  --print-baseline-rss  read queries and ground truth, import diskannpy, print VmRSS (bytes) and exit
                      (bench/experiments/vector_coded.sh sizes the memory cgroup from it)
  --plan              print the memory plan (JSON: nodes to cache, calibrated bytes) and exit; it
                      calibrates outside the cgroup, so that the run inside finds the calibration cached
  --resident-probe N  internal: load with N cached nodes, search once, print the RSS growth (JSON)
  --self-test         2,000 random rows: build, search, assert recall > 0.9 (under a minute)

The index (diskannpy.build_disk_index, DiskANN 0.7.0):
  * graph degree R 32 (Calico's level-0 lists hold 2M = 32 links at M 16), build complexity 100
    (Calico's ef_construction), alpha 1.2 (DiskANN's default);
  * full-precision vectors in the disk index (pq_disk_bytes 0): each node's sector holds its vector
    and its links, so every node read during the search also gives an exact distance;
  * PQ codes of --pq-bytes chunks per vector resident for navigation: the same bytes per vector as
    Calico's resident RaBitQ codes (floor(resident_codes_bytes / n) of a calico_bench line, taken
    by --calico-json). diskannpy has no chunk parameter; DiskANN derives the chunks from
    search_memory_maximum (see search_memory_gb), and build_index checks the chunk count in the
    header of the built <prefix>_pq_compressed.bin.

Memory accounting (what --budget-bytes must cover, see plan_cache):
  resident = RSS after load - RSS before load (the interpreter, numpy, diskannpy, queries, ground
  truth: the baseline), i.e. everything DiskANN's load and first search add:
    - PQ codes (n x pq bytes) and PQ pivots (256 x dim floats and offsets, ~136 KB at 128-d);
    - one SSDThreadData per load thread: a 512 KB sector buffer (128 sectors), PQ distance scratch,
      the visited set, a libaio context; loaded with max(2, threads) because diskannpy 0.7.0
      deadlocks loading with 1 (use_medoids_data_as_centroids borrows the only scratch, then
      read_nodes waits for a second);
    - the node cache: per node its vector, its (R + 1) links and two hash-map entries (calibrated:
      ~1 KB at 128-d, R 32).
  plan_cache measures the fixed part (0 nodes) and the per-node part (a probe of n / 20 nodes, at
  most 40,000) in subprocesses, caches them in the index directory, and caches as many nodes as the budget
  leaves: nodes = (budget - fixed) / per_node, at least 0. When the fixed part alone exceeds the
  budget the run still goes ahead with 0 nodes and reports "over_budget": true.
  Cache selection: "bfs" (DiskANN's search_disk_index app: BFS from the medoid, capped by DiskANN
  at 10% of the nodes) or "sample" (diskannpy's default: the nodes most visited by searches of the
  build's sample rows, no cap; it keeps an n x 8 B visit counter resident for good, which its fixed
  part then includes). "auto" (default): bfs while the budget's nodes fit its cap, else sample.

Measurement (as bench/harness/peers/vector_peers.py): per thread count, every point searched --warmup
times untimed, then --repeat timed runs interleaved across the points, each run repeating the
whole query set (batch_search with T threads) until it lasted --min-seconds; qps = median over
the runs. recall@k from the last run. reads_per_query = /proc/self/io read_bytes / 4096 per
query (DiskANN reads 4 KB sectors with O_DIRECT + libaio; the block layer accounts them to the
submitting thread), device_reads_per_query = reads completed by the index file's block device
over the same runs (a cross-check: it counts every process's reads). Latency: one more pass
over the queries in batches of T queries searched with T threads; each batch's wall time is
the latency of its queries (p50_ms, p99_ms). Every line records /proc/loadavg at the start and
the end of the run.

diskannpy 0.7.0 requires numpy 1.25 and returns wrong ids under numpy 2 (silently: all 0), so it
lives in its own virtualenv (scripts/setup.sh creates <repo>/.venv-diskann).

Usage:
  .venv-diskann/bin/python bench/harness/peers/diskann_peer.py --self-test
  .venv-diskann/bin/python bench/harness/peers/diskann_peer.py \\
      --data-dir calico-vector-data/clustered-n100000-d128-c1000-q1000-s42-l2 \\
      --index-dir /var/tmp/diskann/indexes --calico-json coded-0.1.jsonl --pool-fraction 0.1 \\
      --L 10,20,40,80 --beam-width 1,4 --threads 1,2 --json diskann.jsonl
"""

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vector_peers import (comma_ints, disk_read_counters, infer_metric, machine_info, positive_int,  # noqa: E402
                          read_bytes, read_vecs, recall_at_k, rss_bytes)

import numpy as np  # noqa: E402  (vector_peers exits with a hint when numpy is missing)

SETUP_HINT = ("diskannpy lives in its own virtualenv (it pins numpy 1.25): run scripts/setup.sh and use "
              ".venv-diskann/bin/python")
PREFIX = "ann"                     # diskannpy's index file prefix
SECTOR_BYTES = 4096                # DiskANN's read unit (defaults::SECTOR_LEN)
PQ_MAX_CHUNKS = 512                # DiskANN's MAX_PQ_CHUNKS
BFS_CACHE_CAP = 0.10               # cache_bfs_levels caches at most 10% of the nodes
BUILD_ONLY_FILES = ("_vectors.bin", "_mem.index.data")  # build intermediates search never reads


def need_diskannpy():
    try:
        import diskannpy
    except ImportError:
        sys.exit(f"diskann_peer: the Python package 'diskannpy' is missing: {SETUP_HINT}")
    if int(np.__version__.split(".")[0]) >= 2:
        sys.exit(f"diskann_peer: diskannpy 0.7.0 returns wrong ids under numpy {np.__version__}: {SETUP_HINT}")
    return diskannpy


def loadavg():
    """/proc/loadavg's 1, 5 and 15 minute load averages."""
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


# ---------------------------------------------------------------------------------------------
# Build

def search_memory_gb(pq_chunks, n):
    """The search_memory_maximum (GB) that makes DiskANN 0.7.0 train pq_chunks PQ chunks.

    DiskANN's build_disk_index (src/disk_utils.cpp) turns B GB into bytes as B x 2^30, less
    0.25 GB when B - 0.25 > 1.0 (get_memory_budget: room it keeps for cached nodes), then sets
    num_pq_chunks = floor(bytes / n), clamped to [1, min(dim, 512)]. Half a chunk of margin
    keeps the floor away from float rounding."""
    assert 1 <= pq_chunks <= PQ_MAX_CHUNKS and n > 0
    gb = (pq_chunks + 0.5) * n / 2**30
    if gb > 1.0:  # DiskANN will subtract its 0.25 GB: add it back
        gb += 0.25
    return gb


def metric_for_diskann(metric):
    if metric == "cosine":
        sys.exit("diskann_peer: DiskANN's StaticDiskIndex does not support cosine (normalise and use ip)")
    return {"l2": "l2", "ip": "mips"}[metric]


def index_dir_for(args, dataset, metric):
    """One directory per base vectors and build parameters: the dataset's name less its queries
    part ("-q1000" before the seed or the metric; calico_bench's data::base_name), so that one
    index serves every query set of the same base."""
    base = re.sub(r"-q(?:\d+|all)(?=(?:-s\d+)?-[a-z0-9]+$)", "", dataset)
    return os.path.join(args.index_dir, f"{base}-{metric}-diskann-R{args.R}-L{args.L_build}-pq{args.pq_bytes}")


def pq_chunks_on_disk(path):
    """(points, chunks) from the header of <prefix>_pq_compressed.bin (int32 n, int32 chunks, then
    n x chunks bytes); checks the file size against it."""
    header = np.fromfile(path, dtype=np.int32, count=2)
    points, chunks = int(header[0]), int(header[1])
    if os.path.getsize(path) != 8 + points * chunks:
        sys.exit(f"diskann_peer: {path} is {os.path.getsize(path)} bytes, not 8 + {points} x {chunks}")
    return points, chunks


def index_files_bytes(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path) if f.startswith(PREFIX))


def build_index(args, base, metric, path):
    """Builds the disk index into path (through a temporary sibling, renamed at the end) unless
    it is there; returns its metadata (build_s, build_threads, pq_chunks, index_bytes, ...)."""
    meta_path = os.path.join(path, "build.json")
    if os.path.exists(meta_path) and not args.rebuild:
        with open(meta_path) as f:
            return json.load(f)
    diskannpy = need_diskannpy()
    if base is None:
        sys.exit(f"diskann_peer: no index in {path} and the base vectors were not read (--no-base)")
    n, dim = base.shape
    if args.pq_bytes > min(dim, PQ_MAX_CHUNKS):
        sys.exit(f"diskann_peer: --pq-bytes {args.pq_bytes} is above DiskANN's limit min(dim, 512) = "
                 f"{min(dim, PQ_MAX_CHUNKS)}")
    tmp = path + ".building"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    gb = search_memory_gb(args.pq_bytes, n)
    print(f"diskann_peer: building {path} (R {args.R}, L {args.L_build}, {args.pq_bytes} PQ bytes/vector via "
          f"search_memory_maximum {gb:.6f} GB, {args.build_threads} threads)", file=sys.stderr)
    start = time.perf_counter()
    diskannpy.build_disk_index(base, metric_for_diskann(metric), tmp, complexity=args.L_build, graph_degree=args.R,
                               search_memory_maximum=gb, build_memory_maximum=args.build_memory_gb,
                               num_threads=args.build_threads, pq_disk_bytes=0, index_prefix=PREFIX)
    build_s = time.perf_counter() - start
    points, chunks = pq_chunks_on_disk(os.path.join(tmp, f"{PREFIX}_pq_compressed.bin"))
    if points != n or chunks != args.pq_bytes:
        sys.exit(f"diskann_peer: DiskANN built {chunks} PQ chunks for {points} points, expected "
                 f"{args.pq_bytes} for {n}: the search_memory_maximum mapping is off")
    for suffix in BUILD_ONLY_FILES:
        p = os.path.join(tmp, PREFIX + suffix)
        if os.path.exists(p):
            os.remove(p)
    meta = {"build_s": build_s, "build_threads": args.build_threads, "R": args.R, "L_build": args.L_build,
            "pq_chunks": chunks, "search_memory_maximum_gb": gb, "n": n, "dim": dim, "metric": metric,
            "disk_index_bytes": os.path.getsize(os.path.join(tmp, f"{PREFIX}_disk.index")),
            "pq_compressed_bytes": os.path.getsize(os.path.join(tmp, f"{PREFIX}_pq_compressed.bin")),
            "index_bytes": index_files_bytes(tmp)}
    with open(os.path.join(tmp, "build.json"), "w") as f:
        json.dump(meta, f)
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)
    print(f"diskann_peer: built in {build_s:.1f} s, {meta['index_bytes'] / 2**20:.1f} MB "
          f"(disk index {meta['disk_index_bytes'] / 2**20:.1f} MB, PQ {chunks} bytes x {n})", file=sys.stderr)
    return meta


# ---------------------------------------------------------------------------------------------
# Load and the memory plan

CACHE_MECHANISM = {"sample": 1, "bfs": 2}


def load_threads(args):
    return max(2, max(args.threads))  # 1 deadlocks in diskannpy 0.7.0's load (see the module comment)


def load_index(args, path, nodes, mechanism):
    diskannpy = need_diskannpy()
    return diskannpy.StaticDiskIndex(path, num_threads=load_threads(args), num_nodes_to_cache=nodes,
                                     cache_mechanism=CACHE_MECHANISM[mechanism], index_prefix=PREFIX)


def resident_probe(args, path, queries, nodes):
    """Loads with `nodes` cached nodes, searches a few queries at the largest L, beam width and
    thread count, and returns the RSS growth over the process's state before the load."""
    assert args.cache_mechanism in CACHE_MECHANISM, "a probe is given bfs or sample"
    before = rss_bytes()
    index = load_index(args, path, nodes, args.cache_mechanism)
    index.batch_search(queries[:64], args.k, max(args.L), max(args.threads), beam_width=max(args.beam_width))
    return rss_bytes() - before


def calibrate(args, path, meta, mechanism):
    """(fixed bytes, bytes per cached node), measured in two subprocesses (0 nodes and a probe),
    cached in <index>/calibration.json per (load threads, cache mechanism, largest L and beam).
    The probe's growth over the fixed part can hide in memory the fixed run freed and kept (at
    L 120 a 4,000-node probe grew by 64 KB, where 20,000 nodes grew by 14 MB), so the probe is
    large and the result is never taken below what a cached node holds: its float vector and its
    R + 1 links."""
    n = meta["n"]
    key = f"threads{load_threads(args)}-{mechanism}-L{max(args.L)}-W{max(args.beam_width)}"
    cal_path = os.path.join(path, "calibration.json")
    cal = {}
    if os.path.exists(cal_path):
        with open(cal_path) as f:
            cal = json.load(f)
    if key in cal:
        return cal[key]["fixed_bytes"], cal[key]["per_node_bytes"]
    probe_nodes = max(1, min(40000, n // 20))

    def probe(nodes):
        argv = ([sys.executable, os.path.abspath(__file__), "--resident-probe", str(nodes)] + args.passthrough
                + ["--cache-mechanism", mechanism])
        out = subprocess.run(argv, check=True, stdout=subprocess.PIPE, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])["resident_bytes"]

    fixed = probe(0)
    node_floor = 4 * meta["dim"] + 4 * (meta["R"] + 1)
    measured = (probe(probe_nodes) - fixed) / probe_nodes
    if measured < node_floor:
        print(f"diskann_peer: the probe measured {measured:.0f} B per cached node, below a node's own "
              f"{node_floor} B (vector and links); using {node_floor}", file=sys.stderr)
    per_node = max(float(node_floor), measured)
    cal[key] = {"fixed_bytes": fixed, "per_node_bytes": per_node, "probe_nodes": probe_nodes}
    with open(cal_path + ".tmp", "w") as f:
        json.dump(cal, f)
    os.replace(cal_path + ".tmp", cal_path)
    print(f"diskann_peer: calibrated {key}: fixed {fixed / 2**20:.2f} MB, {per_node:.0f} B per cached node",
          file=sys.stderr)
    return fixed, per_node


def plan_cache(args, path, meta):
    """The node cache the budget leaves room for: a dict with nodes, the calibration, the
    predicted resident bytes and whether even 0 nodes are over the budget."""
    n = meta["n"]

    def nodes_for(mechanism):
        fixed, per_node = calibrate(args, path, meta, mechanism)
        nodes = max(0, int((args.budget_bytes - fixed) // per_node)) if args.nodes is None else args.nodes
        return min(nodes, n), fixed, per_node

    mechanism = "bfs" if args.cache_mechanism == "auto" else args.cache_mechanism
    nodes, fixed, per_node = nodes_for(mechanism)
    cap = max(1, round(BFS_CACHE_CAP * n))
    if args.cache_mechanism == "auto" and nodes > cap:
        mechanism = "sample"
        nodes, fixed, per_node = nodes_for(mechanism)
    effective = min(nodes, cap) if mechanism == "bfs" else nodes  # the budget's rest stays unused
    return {"nodes_requested": nodes, "nodes_cached": effective, "cache_mechanism": mechanism,
            "fixed_bytes": fixed, "per_node_bytes": per_node,
            "predicted_resident_bytes": int(fixed + effective * per_node),
            "over_budget": bool(args.budget_bytes and fixed > args.budget_bytes)}


# ---------------------------------------------------------------------------------------------
# Search

def search_ids(index, queries, p, k, threads):
    ids, _ = index.batch_search(queries, k, p["L"], threads, beam_width=p["beam_width"])
    return ids.astype(np.int64)


def latencies_ms(index, queries, p, k, threads):
    """Wall time of each batch of `threads` queries searched with `threads` threads (ms)."""
    out = []
    for i in range(0, len(queries), threads):
        batch = queries[i:i + threads]
        start = time.perf_counter()
        index.batch_search(batch, k, p["L"], threads, beam_width=p["beam_width"])
        out.extend([(time.perf_counter() - start) * 1e3] * len(batch))
    return out


def percentile(values, q):
    return float(np.percentile(np.asarray(values), q))


def measure(args, index, path, queries, gt):
    """Rows of measurements, one per (threads, L, beam width)."""
    points = [{"L": L, "beam_width": w} for w in args.beam_width for L in args.L if L >= args.k]
    rows = []
    for threads in args.threads:
        times, reads, dev, recalls = ([[] for _ in points] for _ in range(4))
        for p in points:
            for _ in range(args.warmup):
                search_ids(index, queries, p, args.k, threads)
        for _ in range(args.repeat):  # interleaved: one run of every point per round
            for i, p in enumerate(points):
                rb0, d0 = read_bytes(), disk_read_counters(path)
                start = time.perf_counter()
                passes = 0
                while True:
                    ids = search_ids(index, queries, p, args.k, threads)
                    passes += 1
                    elapsed = time.perf_counter() - start
                    if elapsed >= args.min_seconds:
                        break
                d1 = disk_read_counters(path)
                times[i].append(elapsed / passes)
                reads[i].append((read_bytes() - rb0) / SECTOR_BYTES / passes / len(queries))
                if d0 and d1:
                    dev[i].append((d1[0] - d0[0]) / passes / len(queries))
                recalls[i] = recall_at_k(ids, gt, args.k)
        for i, p in enumerate(points):
            lat = latencies_ms(index, queries, p, args.k, threads)
            qps_runs = [len(queries) / t for t in times[i]]
            rows.append({"threads": threads, **p, "recall": recalls[i], "qps": statistics.median(qps_runs),
                         "qps_runs": qps_runs, "reads_per_query": statistics.median(reads[i]),
                         "device_reads_per_query": statistics.median(dev[i]) if dev[i] else None,
                         "p50_ms": percentile(lat, 50), "p99_ms": percentile(lat, 99)})
            r = rows[-1]
            print(f"  threads {threads} L {p['L']:>4} W {p['beam_width']}: recall {r['recall']:.4f}  "
                  f"QPS {r['qps']:8.0f}  reads/query {r['reads_per_query']:6.1f}  p50 {r['p50_ms']:.2f} ms  "
                  f"p99 {r['p99_ms']:.2f} ms", file=sys.stderr)
    return rows


# ---------------------------------------------------------------------------------------------

def budget_from_calico(path, fraction):
    """(budget bytes, resident code bytes per vector) from calico_bench vector-coded JSON lines:
    the coded index's pool_bytes + resident_codes_bytes + pinned_bytes (the memory Calico's coded
    index had: its pool is the budget less its codes and pinned rows, at least 2 MB in all) at that
    pool fraction."""
    found = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("bench") == "vector-coded" and r.get("index") == "coded" and (
                    fraction is None or math.isclose(float(r["pool_fraction"]), fraction)):
                found.append(r)
    if not found:
        sys.exit(f"diskann_peer: no coded line at pool fraction {fraction} in {path}")
    # Lines with pinned rows (pin_share > 0) had the same budget, less what rounding left
    # unused; the lines without them give it exactly.
    found = [r for r in found if not r.get("pin_share")] or found
    budgets = {r["pool_bytes"] + r["resident_codes_bytes"] + r.get("pinned_bytes", 0) for r in found}
    if len(budgets) != 1:
        sys.exit(f"diskann_peer: {path} has several coded budgets at fraction {fraction}: {sorted(budgets)}")
    r = found[0]
    return budgets.pop(), r["resident_codes_bytes"] / r["n"]


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", help="directory with base.fvecs, query.fvecs, gt.ivecs")
    ap.add_argument("--index-dir", help="built indexes are cached here, one directory per dataset and parameters")
    ap.add_argument("--metric", choices=("l2", "ip"), help="default: from the directory name (-l2, -ip), else l2")
    ap.add_argument("--calico-json", help="calico_bench vector-coded JSON lines: the budget (pool_bytes + "
                    "resident_codes_bytes of the coded lines at --pool-fraction) and --pq-bytes "
                    "(floor of resident_codes_bytes / n)")
    ap.add_argument("--pool-fraction", type=float, help="the fraction whose coded lines give the budget; recorded")
    ap.add_argument("--budget-bytes", type=int, help="memory budget of the index (default: from --calico-json)")
    ap.add_argument("--pq-bytes", type=positive_int, help="PQ chunks (bytes) per vector (default: from --calico-json)")
    ap.add_argument("--nodes", type=int, help="cache exactly this many nodes (default: what the budget leaves)")
    ap.add_argument("--cache-mechanism", choices=("auto",) + tuple(CACHE_MECHANISM), default="auto",
                    help="which nodes to cache: bfs (from the medoid, at most 10%% of n), sample, auto")
    ap.add_argument("--R", type=positive_int, default=32, help="graph degree (Calico: 2M = 32 at M 16)")
    ap.add_argument("--L-build", type=positive_int, default=100, help="build complexity (Calico's ef_construction)")
    ap.add_argument("--build-threads", type=positive_int, default=2)
    ap.add_argument("--build-memory-gb", type=float, default=16.0,
                    help="DiskANN's build_memory_maximum; above the data's size it builds in one piece")
    ap.add_argument("--L", type=comma_ints, default=[10, 15, 20, 30, 40, 60, 80, 120],
                    help="search complexities (comma list; those below k are skipped)")
    ap.add_argument("--beam-width", type=comma_ints, default=[1, 4], help="beam widths (comma list)")
    ap.add_argument("--threads", type=comma_ints, default=[1, 2], help="search threads (comma list)")
    ap.add_argument("--k", type=positive_int, default=10)
    ap.add_argument("--repeat", type=positive_int, default=3, help="timed runs per point (median reported)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs per point first")
    ap.add_argument("--min-seconds", type=float, default=1.0, help="a timed run lasts at least this long")
    ap.add_argument("--max-queries", type=positive_int, help="use only the first N queries")
    ap.add_argument("--no-base", action="store_true", help="do not read base.fvecs (the index must be cached)")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--json", help="append one JSON line per point to this file")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--plan", action="store_true")
    ap.add_argument("--print-baseline-rss", action="store_true")
    ap.add_argument("--resident-probe", type=int, metavar="NODES", help=argparse.SUPPRESS)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv)
    if args.self_test:
        return args
    if not args.data_dir or not args.index_dir:
        ap.error("--data-dir and --index-dir are needed (or --self-test)")
    if args.calico_json:
        budget, codes_per_vector = budget_from_calico(args.calico_json, args.pool_fraction)
        args.budget_bytes = args.budget_bytes if args.budget_bytes is not None else budget
        args.pq_bytes = args.pq_bytes or max(1, int(codes_per_vector))
    if args.pq_bytes is None:
        ap.error("--pq-bytes or --calico-json is needed")
    needs_budget = not (args.build_only or args.print_baseline_rss or args.resident_probe is not None
                        or args.nodes is not None)
    if needs_budget and args.budget_bytes is None:
        ap.error("--budget-bytes, --calico-json or --nodes is needed")
    args.threads = sorted(set(args.threads))
    # What a --resident-probe subprocess needs to rebuild the same configuration.
    args.passthrough = [a for a in argv if a not in ("--plan", "--build-only", "--print-baseline-rss", "--rebuild")]
    if "--no-base" not in args.passthrough:
        args.passthrough.append("--no-base")
    for flag in ("--json",):
        if flag in args.passthrough:
            i = args.passthrough.index(flag)
            del args.passthrough[i:i + 2]
    return args


def run(args):
    lavg_start = loadavg()
    need_diskannpy()  # imported before any RSS is taken: its library is part of the baseline
    metric = args.metric or infer_metric(args.data_dir)
    dataset = os.path.basename(os.path.normpath(args.data_dir))
    base_path = os.path.join(args.data_dir, "base.fvecs")
    queries = read_vecs(os.path.join(args.data_dir, "query.fvecs"), np.float32)
    gt = read_vecs(os.path.join(args.data_dir, "gt.ivecs"), np.int32).astype(np.int64)
    if args.max_queries:
        queries, gt = queries[:args.max_queries], gt[:args.max_queries]
    dim0 = int(np.fromfile(base_path, dtype=np.int32, count=1)[0])
    n = os.path.getsize(base_path) // (4 * (dim0 + 1))
    if queries.shape[1] != dim0 or len(gt) != len(queries) or gt.shape[1] < args.k:
        sys.exit(f"diskann_peer: inconsistent dataset: base {n} x {dim0}, queries {queries.shape}, gt {gt.shape}")
    path = index_dir_for(args, dataset, metric)
    if args.resident_probe is not None:  # before anything else grows the heap
        print(json.dumps({"resident_bytes": resident_probe(args, path, queries, args.resident_probe)}))
        return 0
    if args.print_baseline_rss:
        print(rss_bytes())
        return 0
    if args.build_only:
        build_index(args, read_vecs(base_path, np.float32), metric, path)
        return 0
    if not os.path.exists(os.path.join(path, "build.json")) or args.rebuild:
        # Built in a child process, so that this one's RSS (the baseline of the accounting)
        # never held the base vectors or the build's heap.
        if args.no_base:
            sys.exit(f"diskann_peer: --no-base needs the index built in {path} (run with --build-only first)")
        argv = [a for a in args.passthrough if a != "--no-base"] + ["--build-only"]
        subprocess.run([sys.executable, os.path.abspath(__file__)] + argv, check=True)
        args.rebuild = False
    meta = build_index(args, None, metric, path)
    plan = plan_cache(args, path, meta)
    if args.plan:
        print(json.dumps(plan))
        return 0
    if plan["over_budget"]:
        print(f"diskann_peer: DiskANN's fixed resident {plan['fixed_bytes'] / 2**20:.2f} MB is above the budget "
              f"{args.budget_bytes / 2**20:.2f} MB: searching with no node cache, reported as over budget",
              file=sys.stderr)
    machine = machine_info()
    from importlib import metadata
    machine["versions"]["diskannpy"] = metadata.version("diskannpy")
    print(f"diskann_peer: {dataset} ({n} x {dim0}, {len(queries)} queries, {metric}); budget "
          f"{(args.budget_bytes or 0) / 2**20:.2f} MB, PQ {meta['pq_chunks']} B/vector, cache {plan['nodes_cached']} "
          f"nodes ({plan['cache_mechanism']}); threads {args.threads}; {machine['versions']}", file=sys.stderr)
    baseline = rss_bytes()
    start = time.perf_counter()
    index = load_index(args, path, plan["nodes_requested"], plan["cache_mechanism"])
    load_s = time.perf_counter() - start
    rss_loaded = rss_bytes()
    rows = measure(args, index, path, queries, gt)
    lavg_end = loadavg()
    common = {"bench": "diskann_peer", "system": "diskann", "index": "diskann", "dataset": dataset, "n": n,
              "dim": dim0, "queries": len(queries), "metric": metric, "k": args.k,
              "pool_fraction": args.pool_fraction, "budget_bytes": args.budget_bytes,
              "baseline_rss_bytes": baseline, "rss_bytes": rss_loaded, "rss_peak_bytes": rss_bytes("VmHWM"),
              "resident_bytes": rss_loaded - baseline, **plan,
              "pq_bytes_per_vector": meta["pq_chunks"],
              "load_threads": load_threads(args), "R": meta["R"], "L_build": meta["L_build"],
              "build_s": meta["build_s"], "build_threads": meta["build_threads"],
              "index_bytes": meta["index_bytes"], "disk_index_bytes": meta["disk_index_bytes"], "load_s": load_s,
              "repeat": args.repeat, "warmup": args.warmup, "min_seconds": args.min_seconds,
              "loadavg": {"start": lavg_start, "end": lavg_end}, "machine": machine}
    print(f"diskann_peer: resident {common['resident_bytes'] / 2**20:.2f} MB after load (predicted "
          f"{plan['predicted_resident_bytes'] / 2**20:.2f} MB, budget {(args.budget_bytes or 0) / 2**20:.2f} MB), "
          f"peak RSS {common['rss_peak_bytes'] / 2**20:.1f} MB", file=sys.stderr)
    if args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps({**common, **r}) + "\n")
    return 0


def self_test():
    """2,000 random rows in 32-d: build (8 PQ bytes), search with a budget that caches some nodes,
    check the PQ chunk mapping, recall > 0.9 and that searches read the disk."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(7)
    base = rng.standard_normal((2000, 32), dtype=np.float32)
    queries = rng.standard_normal((100, 32), dtype=np.float32)
    d2 = (queries ** 2).sum(1)[:, None] - 2 * queries @ base.T + (base ** 2).sum(1)[None, :]
    gt = np.argsort(d2, axis=1)[:, :100].astype(np.int32)

    def write_vecs(path, x):
        np.hstack([np.full((len(x), 1), x.shape[1], dtype=np.int32), x.view(np.int32)]).tofile(path)

    with tempfile.TemporaryDirectory(prefix="diskann-self-test-") as tmp:
        data = os.path.join(tmp, "random-n2000-d32-l2")
        os.makedirs(data)
        write_vecs(os.path.join(data, "base.fvecs"), base)
        write_vecs(os.path.join(data, "query.fvecs"), queries)
        write_vecs(os.path.join(data, "gt.ivecs"), gt)
        out = os.path.join(tmp, "out.jsonl")
        argv = ["--data-dir", data, "--index-dir", os.path.join(tmp, "idx"), "--pq-bytes", "8",
                "--budget-bytes", str(4 << 20), "--cache-mechanism", "bfs", "--L", "20,40", "--beam-width", "2",
                "--threads", "1",
                "--repeat", "1", "--min-seconds", "0.05", "--json", out]
        assert run(parse_args(argv)) == 0
        rows = [json.loads(line) for line in open(out)]
        assert len(rows) == 2, rows
        assert all(r["pq_bytes_per_vector"] == 8 for r in rows)
        assert max(r["recall"] for r in rows) > 0.9, [r["recall"] for r in rows]
        assert all(r["reads_per_query"] >= 1 for r in rows), [r["reads_per_query"] for r in rows]
        assert all(0 < r["resident_bytes"] < r["budget_bytes"] + (8 << 20) for r in rows)
        print(f"diskann_peer: self-test passed in {time.perf_counter() - t0:.1f} s: recall "
              f"{[round(r['recall'], 3) for r in rows]}, reads/query {[round(r['reads_per_query'], 1) for r in rows]}, "
              f"{rows[0]['nodes_cached']} nodes cached, resident {rows[0]['resident_bytes'] / 2**20:.2f} MB")
    return 0


def main(argv):
    args = parse_args(argv)
    if args.self_test:
        return self_test()
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
