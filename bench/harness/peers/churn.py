#!/usr/bin/env python3
"""Churn: does recall hold while an index is rewritten? Calico's HNSW against hnswlib (with
replace_deleted) and usearch (remove, then add), all through their Python APIs, on the same
data (docs/design/mutable_indexes.md, "Deletes").

An index of --n rows is built (--build-threads threads). Then, in --rounds rounds, a random
--fraction of the live rows is deleted and as many new rows are added, until every row has
been replaced once (10 rounds of 10%). After each round every system is searched at each
fixed --ef: recall@10 against the exact top 10 of the rows live at that round (NumPy), and QPS.
After the last round a fresh index of the final live rows is built by each system: the recall
a rewritten index should keep (the aim: within 0.01 of it).

How each system applies a round:
  - calico: delete(ids), consolidate() (repairs the lists that named them and frees their
    slots), then add the new rows at the freed ids: an application's id map would hand a new
    document a freed slot the same way (ids below 2^32 - 1 index the slots today).
  - hnswlib: mark_deleted(labels), then add_items(new rows, new labels, replace_deleted=True):
    a new row takes a deleted one's slot and is linked in its place.
  - usearch: remove(keys), then add(new keys, new rows).
update_s is the wall time of that, on --build-threads threads where the API takes them.

QPS: one search thread, a batch of all queries repeated for at least --seconds, every system
in turn, --repeat interleaved rounds; the median. Recall is from the last batch.

Data: clustered float32 rows (bench/harness/peers/python_peers.py's generator), n + the
replacements, squared L2. JSON lines (one per system and round, and one per fresh build)
with the machine; a table on stdout.

Usage (after scripts/setup.sh and pip install . into .venv):
  .venv/bin/python bench/harness/peers/churn.py --n 100000 --dim 128 --rounds 10 \\
      --json churn.jsonl
  .venv/bin/python bench/harness/peers/churn.py --rounds 10 --json churn.jsonl \\
      --data-dir DATA/embedding-n100000-d384-c1000-q1000-s42-ip     (calico_bench vector writes it)
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
SYSTEMS = ("calico", "hnswlib", "usearch")


def clustered_rows(n, dim, clusters, queries, seed):
    """n rows and `queries` queries: Gaussian clusters of random centres (as python_peers.py)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 1, size=(clusters, dim)).astype(np.float32)

    def draw(m):
        return np.ascontiguousarray(centres[rng.integers(0, clusters, size=m)] +
                                    rng.normal(0, 0.35, size=(m, dim)).astype(np.float32))

    return draw(n), draw(queries)


def exact_top_k(rows, live, queries, metric):
    """The row numbers (into `rows`) of each query's K nearest live rows: squared L2, or the
    largest inner products ("ip")."""
    base = rows[live].astype(np.float64)
    norms = (base ** 2).sum(1) if metric == "l2" else np.zeros(len(base))
    scale = 2.0 if metric == "l2" else 1.0
    gt = np.empty((len(queries), K), dtype=np.int64)
    for i in range(0, len(queries), 100):
        d = norms[None, :] - scale * (queries[i:i + 100].astype(np.float64) @ base.T)
        part = np.argpartition(d, K, axis=1)[:, :K]
        order = np.take_along_axis(d, part, 1).argsort(axis=1, kind="stable")
        gt[i:i + 100] = live[np.take_along_axis(part, order, 1)]
    return gt


class Calico:
    """calico.HnswIndex in an in-memory pool; ids are slots, mapped to row numbers here."""

    def __init__(self, args, work_dir, name):
        import calico
        self.calico, self.args = calico, args
        self.path = os.path.join(work_dir, name)
        self.pool = self.index = None

    def build(self, rows, row_numbers, threads):
        shutil.rmtree(self.path, ignore_errors=True)
        per_row = 4 * rows.shape[1] + 8 * self.args.M + 64
        self.pool = self.calico.Pool(self.path, pool_bytes=int(len(rows) * per_row * 2) + (64 << 20))
        self.index = self.calico.HnswIndex(self.pool, "hnsw", dim=rows.shape[1], metric=self.args.metric, M=self.args.M,
                                           ef_construction=self.args.ef_construction, capacity=len(rows))
        self.index.auto_consolidate = 0  # consolidated by replace(), once per round, as measured
        self.row_of = np.array(row_numbers, dtype=np.int64)  # id -> row number
        self.id_of = {int(r): i for i, r in enumerate(self.row_of)}
        self.index.add(rows, ids=np.arange(len(rows), dtype=np.uint64), num_threads=threads)

    def replace(self, old_rows, new_rows, new_row_numbers, threads):
        ids = np.array([self.id_of.pop(int(r)) for r in old_rows], dtype=np.uint64)
        self.index.delete(ids)
        freed = self.index.consolidate()
        if freed != len(ids):
            sys.exit(f"churn: calico consolidate freed {freed} slots, {len(ids)} were deleted")
        self.index.add(new_rows, ids=ids, num_threads=threads)
        self.row_of[ids.astype(np.int64)] = new_row_numbers
        self.id_of.update({int(r): int(i) for r, i in zip(new_row_numbers, ids)})

    def search(self, queries, ef):
        ids, _ = self.index.search(queries, k=K, ef=ef, num_threads=1)
        found = ids < len(self.row_of)  # padding (2^64 - 1) when fewer than K are found
        return np.where(found, self.row_of[np.where(found, ids, 0).astype(np.int64)], -1)

    def close(self):
        if self.pool is not None:
            self.pool.close()
        shutil.rmtree(self.path, ignore_errors=True)


class Hnswlib:
    """hnswlib with allow_replace_deleted; labels are row numbers."""

    def __init__(self, args, work_dir, name):
        self.hnswlib, self.args = vp.need("hnswlib"), args

    def build(self, rows, row_numbers, threads):
        self.index = self.hnswlib.Index(space=self.args.metric, dim=rows.shape[1])
        self.index.init_index(max_elements=len(rows), M=self.args.M, ef_construction=self.args.ef_construction,
                              random_seed=42, allow_replace_deleted=True)
        self.index.add_items(rows, np.asarray(row_numbers), num_threads=threads)

    def replace(self, old_rows, new_rows, new_row_numbers, threads):
        for r in old_rows:
            self.index.mark_deleted(int(r))
        self.index.add_items(new_rows, np.asarray(new_row_numbers), num_threads=threads, replace_deleted=True)

    def search(self, queries, ef):
        self.index.set_ef(ef)
        labels, _ = self.index.knn_query(queries, k=K, num_threads=1)
        return labels.astype(np.int64)

    def close(self):
        pass


class Usearch:
    """usearch (remove, then add); keys are row numbers."""

    def __init__(self, args, work_dir, name):
        vp.need("usearch")
        from usearch.index import Index
        self.Index, self.args = Index, args

    def build(self, rows, row_numbers, threads):
        self.index = self.Index(ndim=rows.shape[1], metric={"l2": "l2sq", "ip": "ip"}[self.args.metric], dtype="f32",
                                connectivity=self.args.M,
                                expansion_add=self.args.ef_construction)
        self.index.add(np.asarray(row_numbers, dtype=np.uint64), rows, threads=threads)

    def replace(self, old_rows, new_rows, new_row_numbers, threads):
        self.index.remove(np.asarray(old_rows, dtype=np.uint64))
        self.index.add(np.asarray(new_row_numbers, dtype=np.uint64), new_rows, threads=threads)

    def search(self, queries, ef):
        self.index.expansion_search = ef
        m = self.index.search(queries, K, threads=1)
        keys = m.keys.astype(np.int64)
        keys[np.arange(K)[None, :] >= m.counts[:, None]] = -1
        return keys

    def close(self):
        pass


ADAPTERS = {"calico": Calico, "hnswlib": Hnswlib, "usearch": Usearch}


def timed_batches(systems, queries, ef, seconds, repeat):
    """{system: (the last batch's results, QPS)}: QPS the median of `repeat` interleaved timed
    regions of at least `seconds` each, after one untimed batch per system."""
    times = {s: [] for s in systems}
    last = {}
    for s, index in systems.items():
        index.search(queries, ef)  # warm-up, untimed
    for _ in range(repeat):
        for s, index in systems.items():
            batches, start = 0, time.perf_counter()
            while True:
                last[s] = index.search(queries, ef)
                batches += 1
                elapsed = time.perf_counter() - start
                if elapsed >= seconds:
                    break
            times[s].append(elapsed / (batches * len(queries)))
    return {s: (last[s], 1.0 / statistics.median(times[s])) for s in systems}


def measure(systems, queries, ef, gt, seconds, repeat):
    """{system: (recall@10 of the last batch, QPS)} (timed_batches)."""
    return {s: (vp.recall_at_k(found, gt), qps)
            for s, (found, qps) in timed_batches(systems, queries, ef, seconds, repeat).items()}


def positive(kind):
    def parse(s):
        v = kind(s)
        if v <= 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got '{s}'")
        return v
    return parse


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=positive(int), default=None,
                   help="live rows (default 100000, or as many as --data-dir's rows allow)")
    p.add_argument("--data-dir", default=None,
                   help="base.fvecs and query.fvecs (the C++ bench's datasets; the metric from the name: "
                        "..-l2 or ..-ip): the first --n rows are built, the next ones replace them")
    p.add_argument("--dim", type=positive(int), default=128)
    p.add_argument("--clusters", type=positive(int), default=1000)
    p.add_argument("--queries", type=positive(int), default=1000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--rounds", type=positive(int), default=10)
    p.add_argument("--fraction", type=positive(float), default=0.1, help="of the live rows replaced per round")
    p.add_argument("--M", type=positive(int), default=16)
    p.add_argument("--ef-construction", type=positive(int), default=100)
    p.add_argument("--ef", type=vp.comma_ints, default=[16, 64],
                   help="search beam widths, each measured after every round (raised to 10; default 16,64)")
    p.add_argument("--build-threads", type=positive(int), default=os.cpu_count() or 1)
    p.add_argument("--seconds", type=positive(float), default=1.0, help="minimum timed region")
    p.add_argument("--repeat", type=positive(int), default=3, help="interleaved rounds (median)")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--work-dir", default=None, help="for Calico's pools (default: a temporary directory)")
    p.add_argument("--json", default=None, help="append JSON lines here")
    p.add_argument("--plot", default=None, help="a PNG of recall and QPS per round (with --from-json: of that file)")
    p.add_argument("--from-json", default=None, help="plot these JSON lines (one run) instead of running")
    args = p.parse_args(argv)
    if args.from_json and not args.plot:
        p.error("--from-json needs --plot")
    args.systems = [s for s in args.systems.split(",") if s]
    unknown = [s for s in args.systems if s not in ADAPTERS]
    if unknown or not args.systems:
        p.error(f"--systems: unknown {unknown} (known: {', '.join(SYSTEMS)})")
    if args.fraction > 1:
        p.error("--fraction must be at most 1")
    args.ef = sorted({max(ef, K) for ef in args.ef})
    args.metric = vp.infer_metric(args.data_dir) if args.data_dir else "l2"
    if args.metric not in ("l2", "ip"):
        p.error(f"--data-dir: metric {args.metric} is not supported here (l2, ip)")
    return args


def load_rows(args):
    """(rows, queries, name): generated, or read from --data-dir; args.n set."""
    if not args.data_dir:
        args.n = args.n or 100000
        total = args.n + max(1, int(round(args.n * args.fraction))) * args.rounds
        print(f"churn: generating {total} x {args.dim} rows and {args.queries} queries", file=sys.stderr)
        rows, queries = clustered_rows(total, args.dim, args.clusters, args.queries, args.seed)
        return rows, queries, f"clustered-n{args.n}-d{args.dim}-c{args.clusters}-s{args.seed}"
    rows = vp.read_vecs(os.path.join(args.data_dir, "base.fvecs"), np.float32)
    queries = vp.read_vecs(os.path.join(args.data_dir, "query.fvecs"), np.float32)[:args.queries]
    most = int(len(rows) / (1 + args.fraction * args.rounds))
    args.n = args.n or most
    if args.n > most:
        sys.exit(f"churn: {args.data_dir} has {len(rows)} rows: --n {args.n} with {args.rounds} rounds of "
                 f"{args.fraction} needs {int(args.n * (1 + args.fraction * args.rounds))}; at most --n {most}")
    args.dim, args.queries = rows.shape[1], len(queries)
    return rows, queries, os.path.basename(os.path.normpath(args.data_dir))


def plot(records, path):
    """Recall@10 and QPS after each round, per system; the fresh builds' recall dotted."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    churn = [r for r in records if r.get("phase") == "churn"]
    if not churn:
        sys.exit("churn: no churn records to plot")
    efs = sorted({r["ef"] for r in churn})
    fig, axes = plt.subplots(2, len(efs), figsize=(5.5 * len(efs), 8), squeeze=False)
    for col, ef in enumerate(efs):
        ax_r, ax_q = axes[0][col], axes[1][col]
        fresh = {r["system"]: r for r in records if r.get("phase") == "fresh" and r["ef"] == ef}
        for i, s in enumerate(dict.fromkeys(r["system"] for r in churn)):
            pts = sorted((r["replaced"], r["recall"], r["qps"]) for r in churn if r["system"] == s and r["ef"] == ef)
            colour = f"C{i}"
            style = "-o" if s == "calico" else "--s"
            ax_r.plot([p[0] for p in pts], [p[1] for p in pts], style, color=colour, label=s, markersize=4)
            ax_q.plot([p[0] for p in pts], [p[2] for p in pts], style, color=colour, label=s, markersize=4)
            if s in fresh:
                ax_r.axhline(fresh[s]["recall"], color=colour, linestyle=":", linewidth=1, label=f"{s}, fresh build")
        ax_r.set_ylabel(f"recall@10 at ef {ef}")
        ax_q.set_ylabel(f"queries per second at ef {ef} (1 thread)")
        for ax in (ax_r, ax_q):
            ax.set_xlabel("fraction of the rows replaced")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
    first = churn[0]
    fig.suptitle(f"Churn: {first['dataset']} ({first['n']} x {first['dim']}, {first['metric']}), "
                 f"{first['fraction']:.0%} replaced per round")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv):
    args = parse_args(argv)
    if args.from_json:
        with open(args.from_json) as f:
            plot([json.loads(line) for line in f if line.strip()], args.plot)
        return
    records = []
    rows, queries, dataset = load_rows(args)
    per_round = max(1, int(round(args.n * args.fraction)))
    machine = vp.machine_info()
    out = open(args.json, "a") if args.json else None
    work = args.work_dir or tempfile.mkdtemp(prefix="calico-churn-")
    os.makedirs(work, exist_ok=True)
    common = {"bench": "churn", "dataset": dataset, "metric": args.metric, "n": args.n, "dim": args.dim, "clusters": args.clusters, "queries": args.queries,
              "M": args.M, "ef_construction": args.ef_construction, "fraction": args.fraction,
              "build_threads": args.build_threads, "search_threads": 1, "machine": machine}

    def emit(rec):
        rec = {**common, **rec}
        records.append(rec)
        if out:
            out.write(json.dumps(rec) + "\n")
            out.flush()

    rng = np.random.default_rng(args.seed + 1)
    live = np.arange(args.n, dtype=np.int64)
    systems = {}
    for s in args.systems:
        systems[s] = ADAPTERS[s](args, work, s)
        start = time.perf_counter()
        systems[s].build(rows[:args.n], live, args.build_threads)
        build_s = time.perf_counter() - start
        print(f"churn: {s} built {args.n} rows in {build_s:.1f} s", file=sys.stderr)
        emit({"system": s, "phase": "build", "round": 0, "build_s": build_s})
    print(f"{'round':>5} {'ef':>4} {'replaced':>8} " +
          " ".join(f"{s + ' recall':>15} {s + ' QPS':>12} {s + ' upd s':>12}" for s in args.systems))
    next_row = args.n
    for r in range(args.rounds + 1):
        update_s = {s: 0.0 for s in systems}
        if r > 0:
            pick = rng.choice(len(live), size=per_round, replace=False)
            old = live[pick]
            new = np.arange(next_row, next_row + per_round, dtype=np.int64)
            next_row += per_round
            for s, index in systems.items():
                start = time.perf_counter()
                index.replace(old, rows[new], new, args.build_threads)
                update_s[s] = time.perf_counter() - start
            live[pick] = new
        gt = exact_top_k(rows, np.sort(live), queries, args.metric)
        replaced = r * per_round / args.n
        for ef in args.ef:
            res = measure(systems, queries, ef, gt, args.seconds, args.repeat)
            for s in systems:
                emit({"system": s, "phase": "churn", "round": r, "ef": ef, "replaced": replaced, "recall": res[s][0],
                      "qps": res[s][1], "update_s": update_s[s]})
            print(f"{r:>5} {ef:>4} {replaced:>8.2f} " +
                  " ".join(f"{res[s][0]:>15.4f} {res[s][1]:>12.0f} {update_s[s]:>12.1f}" for s in systems), flush=True)
    # Fresh builds of the final live rows: the recall the rewritten indexes are held to.
    final = np.sort(live)
    gt = exact_top_k(rows, final, queries, args.metric)
    fresh = {}
    for s in args.systems:
        index = ADAPTERS[s](args, work, s + "-fresh")
        start = time.perf_counter()
        index.build(rows[final], final, args.build_threads)
        emit({"system": s, "phase": "fresh_build", "round": args.rounds, "build_s": time.perf_counter() - start})
        fresh[s] = index
    for ef in args.ef:
        res = measure(fresh, queries, ef, gt, args.seconds, args.repeat)
        for s in args.systems:
            emit({"system": s, "phase": "fresh", "round": args.rounds, "ef": ef,
                  "replaced": args.rounds * per_round / args.n, "recall": res[s][0], "qps": res[s][1]})
            print(f"fresh {s}, ef {ef}: recall {res[s][0]:.4f}, QPS {res[s][1]:.0f}")
    for index in list(systems.values()) + list(fresh.values()):
        index.close()
    if not args.work_dir:
        shutil.rmtree(work, ignore_errors=True)
    if out:
        out.close()
    if args.plot:
        plot(records, args.plot)


if __name__ == "__main__":
    main(sys.argv[1:])
