#!/usr/bin/env python3
"""Filtered search: Calico's HNSW (search(filter=...) with an allow-list, and search(labels=...)
with a label per row) against hnswlib (knn_query's filter callback), faiss (IndexHNSWFlat with
an IDSelectorBitmap) and pgvector (HNSW with iterative index scans, on PostgreSQL 18), on the
same rows, queries and allow-lists (docs/design/mutable_indexes.md, "Filtered search").

Every row carries two labels: a bucket, floor(u * 1000) for a uniform draw u of its own, and
its cluster. For each selectivity (--selectivity, the fraction of rows a filter allows, a
multiple of 0.001) and each kind of allow-list:
  - uncorrelated: the rows whose bucket is below selectivity * 1000 (0.1% is one bucket,
    50% is 500), independent of their vectors;
  - correlated: whole clusters (the first clusters, in a random order of the clusters, until
    the fraction is reached), while the queries come from every cluster: most queries'
    nearest allowed rows are far from them, the hard case for a graph search that keeps
    only allowed nodes;
every system searches every query with k = 10 at each --ef. Recall@10 is against the exact
top 10 among the allowed rows (NumPy), counted over min(10, allowed) per query; QPS is one
search thread, a batch of all queries repeated for at least --seconds, every system in turn,
median of --repeat interleaved rounds; `rows` is the mean number of results returned
(k whenever k rows are allowed is the contract Calico keeps).

Systems:
  calico           search(filter=mask): a boolean mask over the rows;
  calico-labels    the same index type, each row added with a u32 label, search(labels=[...]):
                   the allowed buckets or clusters as a list; two indexes (one labelled by
                   bucket, for the uncorrelated lists, one by cluster), each built once: the
                   cost of a label filter against an allow-list on the same data;
  hnswlib          knn_query(filter=callable): a Python call per candidate;
  faiss            IndexHNSWFlat, SearchParametersHNSW(sel=IDSelectorBitmap);
  pgvector         PostgreSQL 18.6 + pgvector 0.8.6 (scripts/postgres.sh's vanilla build, a
                   private server in the run's temporary directory, on --pg-port-base,
                   started here and stopped at the end, also on failure): table items(id,
                   label_bucket, label_cluster, v vector(dim)), an HNSW index (m = --M,
                   ef_construction = --ef-construction) and B-tree indexes on both labels
                   (pgvector's advice for filtering; --no-pg-label-btree leaves them out);
                   SELECT id FROM items WHERE label_bucket = ANY('{...}') (or label_cluster)
                   ORDER BY v <-> '[...]' LIMIT 10 with hnsw.ef_search = ef and
                   hnsw.iterative_scan = relaxed_order (hnsw.max_scan_tuples =
                   --pg-max-scan-tuples); the planner may answer by the B-tree and an exact
                   sort instead of the HNSW index: a plan users get, so kept, and each JSON
                   line records the plan of one query (EXPLAIN): `plan_uses` is hnsw, btree
                   or seqscan;
  pgvector-noiter  the same with hnsw.iterative_scan = off (one HNSW scan of ef_search
                   candidates, then the filter: fewer than k rows when few are allowed);
  pgvector-strict  (only when named) hnsw.iterative_scan = strict_order.
pgvector's QPS is a psql session per batch (psql -X -q -A -t -f: a new connection, then every
query's SQL parsed, planned and sent back over the Unix socket): it includes the client and
the SQL, so it is not like-for-like with the in-process library calls; recall and rows are.

Calico answers a filter allowing m of n rows by an exact scan of them when m * m <= 25 * ef
* n (HnswSearchOptions::exact_scan_below = 0), else by a graph search that keeps only allowed
nodes (labels too); hnswlib and faiss always search the graph (hnswlib calls the Python
callback for every candidate it keeps). usearch's Python API (2.26) has no filter.

Data: clustered float32 rows (bench/harness/peers/churn.py's generator), squared L2. JSON
lines with the machine (bench "filtered" per search point, "filtered_build" per system's
build); a table on stdout.

Usage (after scripts/setup.sh and pip install . into .venv; scripts/postgres.sh build for
pgvector, else the pgvector systems are skipped unless named in --systems):
  .venv/bin/python bench/harness/peers/filtered.py --n 100000 --dim 128 --json filtered.jsonl
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
if not __package__:  # run by path (python3 bench/harness/...): the repository root makes `bench` importable
    sys.path.insert(0, ROOT)
from bench.harness.peers import churn  # noqa: E402
from bench.harness.peers import vector_peers as vp  # noqa: E402

np = vp.np
K = vp.K
BUCKETS = 1000  # bucket labels: an uncorrelated allow-list is a prefix of them
SYSTEMS = ("calico", "calico-labels", "hnswlib", "faiss", "pgvector", "pgvector-noiter")
PG_SYSTEMS = ("pgvector", "pgvector-noiter", "pgvector-strict")
LABEL_COLUMN = {"uncorrelated": "label_bucket", "correlated": "label_cluster"}


class Calico:
    """search(filter=mask)."""

    def __init__(self, args, work, name="calico"):
        import calico
        self.path = os.path.join(work, name)
        shutil.rmtree(self.path, ignore_errors=True)
        self.calico, self.args, self.pool = calico, args, None

    def open_pool(self, rows, indexes=1):
        per_row = 4 * rows.shape[1] + 8 * self.args.M + 64
        self.pool = self.calico.Pool(self.path, pool_bytes=indexes * int(len(rows) * per_row * 2) + (64 << 20))

    def new_index(self, name, rows):
        return self.calico.HnswIndex(self.pool, name, dim=rows.shape[1], M=self.args.M,
                                     ef_construction=self.args.ef_construction, capacity=len(rows))

    def build(self, rows, threads, row_labels):
        self.open_pool(rows)
        self.index = self.new_index("hnsw", rows)
        self.index.add(rows, num_threads=threads)

    def allow(self, mask, kind, labels):
        self.mask = mask

    def search(self, queries, ef):
        ids, _ = self.index.search(queries, k=K, ef=ef, num_threads=1, filter=self.mask)
        return np.where(ids < len(self.mask), ids, -1).astype(np.int64)

    def close(self):
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        shutil.rmtree(self.path, ignore_errors=True)


class CalicoLabels(Calico):
    """search(labels=[...]) on an index whose rows were added with a label each: one index
    labelled by bucket (uncorrelated lists), one by cluster (correlated), in one pool."""

    def __init__(self, args, work):
        super().__init__(args, work, "calico-labels")

    def build(self, rows, threads, row_labels):
        self.open_pool(rows, indexes=len(row_labels))
        self.indexes, self.build_parts = {}, {}
        for kind, labels in row_labels.items():
            start = time.perf_counter()
            self.indexes[kind] = self.new_index(f"hnsw-{LABEL_COLUMN[kind]}", rows)
            self.indexes[kind].add(rows, labels=labels.astype(np.uint32), num_threads=threads)
            self.build_parts[f"{LABEL_COLUMN[kind]}_index_s"] = time.perf_counter() - start

    def allow(self, mask, kind, labels):
        self.n, self.index, self.labels = len(mask), self.indexes[kind], [int(x) for x in labels]

    def search(self, queries, ef):
        ids, _ = self.index.search(queries, k=K, ef=ef, num_threads=1, labels=self.labels)
        return np.where(ids < self.n, ids, -1).astype(np.int64)


class Hnswlib:
    """knn_query(filter=callable)."""

    def __init__(self, args, work):
        self.hnswlib, self.args = vp.need("hnswlib"), args

    def build(self, rows, threads, row_labels):
        self.index = self.hnswlib.Index(space="l2", dim=rows.shape[1])
        self.index.init_index(max_elements=len(rows), M=self.args.M, ef_construction=self.args.ef_construction,
                              random_seed=42)
        self.index.add_items(rows, np.arange(len(rows)), num_threads=threads)

    def allow(self, mask, kind, labels):
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
    """IndexHNSWFlat with SearchParametersHNSW(sel=IDSelectorBitmap)."""

    def __init__(self, args, work):
        self.faiss, self.args = vp.need("faiss"), args

    def build(self, rows, threads, row_labels):
        self.faiss.omp_set_num_threads(threads)
        self.index = self.faiss.IndexHNSWFlat(rows.shape[1], self.args.M)
        self.index.hnsw.efConstruction = self.args.ef_construction
        self.index.add(rows)
        self.faiss.omp_set_num_threads(1)

    def allow(self, mask, kind, labels):
        self.bits = np.packbits(mask.astype(np.uint8), bitorder="little")
        self.selector = self.faiss.IDSelectorBitmap(len(mask), self.faiss.swig_ptr(self.bits))

    def search(self, queries, ef):
        params = self.faiss.SearchParametersHNSW(sel=self.selector, efSearch=ef)
        _, labels = self.index.search(queries, K, params=params)
        return labels.astype(np.int64)

    def close(self):
        pass


def pg_build_problem():
    """None when scripts/postgres.sh's vanilla build (PostgreSQL with pgvector) is there,
    else why not."""
    r = subprocess.run(["bash", os.path.join(ROOT, "postgres", "build.sh"), "--print"],
                       capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        return f"postgres/build.sh --print failed: {r.stderr.strip()[-300:]}"
    build = r.stdout.strip().splitlines()[-1]
    if not os.path.exists(os.path.join(build, "done")):
        return f"no PostgreSQL build in {build} (run scripts/postgres.sh build)"
    if not os.path.exists(os.path.join(build, "vanilla", "install", "share", "extension", "vector.control")):
        return f"the vanilla build in {build} has no pgvector"
    return None


def vector_text(rows):
    """pgvector's text form of each row: '[x,y,...]', float32 exactly (9 significant digits)."""
    return ["[" + ",".join("%.9g" % x for x in row) + "]" for row in rows.tolist()]


class PgItems:
    """The private vanilla server (scripts/postgres.sh, through bench/postgres/common.py's
    Servers, in a scratch directory under the run's work directory, on --pg-port-base) with
    the items table and its indexes, shared by the pgvector systems."""

    FLAVOR = "vanilla"

    def __init__(self, args, work):
        os.environ["CALICO_PG_PORT_BASE"] = str(args.pg_port_base)  # read by common.py and postgres.sh
        from bench.postgres import common as pg
        self.pg, self.args, self.work = pg, args, work
        os.chmod(work, 0o755)  # as root the server runs as calicopg, who must reach its scratch directory
        self.servers = pg.Servers(os.path.join(work, "pg"))
        self.started, self.loaded_by, self.users, self.parts = False, None, 0, {}

    def psql(self, sql, options=None):
        return self.servers.psql(self.FLAVOR, sql, options=options)

    def load(self, system, rows, threads, row_labels):
        """Starts the server, loads the rows (COPY), builds the indexes; the seconds of each step."""
        a, n, dim = self.args, len(rows), rows.shape[1]
        workers = max(8, threads + 1)
        self.settings = {"shared_buffers": a.pg_shared_buffers, "max_wal_size": "8GB", "checkpoint_timeout": "1h",
                         "max_worker_processes": workers, "max_parallel_workers": workers}
        self.started = True  # stop() is harmless if the start fails
        t0 = time.perf_counter()
        self.servers.start(self.FLAVOR, self.settings)
        self.parts["start_s"] = time.perf_counter() - t0
        self.psql("CREATE EXTENSION IF NOT EXISTS vector")
        self.psql(f"CREATE TABLE items (id int PRIMARY KEY, label_bucket int NOT NULL, "
                  f"label_cluster int NOT NULL, v vector({dim}))")
        t0 = time.perf_counter()
        path = os.path.join(self.work, "items.copy")
        bucket, cluster = row_labels["uncorrelated"], row_labels["correlated"]
        with open(path, "w") as f:
            for i, v in enumerate(vector_text(rows)):
                f.write(f"{i}\t{bucket[i]}\t{cluster[i]}\t{v}\n")
        self.parts["write_copy_file_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.psql(f"\\copy items FROM '{path}'")
        self.parts["copy_s"] = time.perf_counter() - t0
        os.remove(path)
        if a.pg_label_btree:
            t0 = time.perf_counter()
            self.psql("CREATE INDEX items_bucket_idx ON items (label_bucket)")
            self.psql("CREATE INDEX items_cluster_idx ON items (label_cluster)")
            self.parts["btree_s"] = time.perf_counter() - t0
        # the graph in memory: pgvector's elements, vectors and neighbour lists, with room to spare
        mwm_mb = max(1024, int(n * (4 * dim + 64 * a.M + 256) * 1.5) >> 20)
        build_opts = {"maintenance_work_mem": f"{mwm_mb}MB", "max_parallel_maintenance_workers": threads - 1}
        t0 = time.perf_counter()

        def progress():
            return self.psql("SELECT phase, tuples_done, tuples_total FROM pg_stat_progress_create_index").strip() \
                or "starting"
        with self.pg.Progress("pgvector HNSW build (phase|tuples done|of)", progress, period_s=30):
            self.psql(f"CREATE INDEX items_v_idx ON items USING hnsw (v vector_l2_ops) "
                      f"WITH (m = {a.M}, ef_construction = {a.ef_construction})", options=build_opts)
        self.parts["hnsw_index_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for sql in ("VACUUM ANALYZE items", "CHECKPOINT"):  # one per session
            self.psql(sql)
        self.parts["vacuum_analyze_s"] = time.perf_counter() - t0
        sizes = self.psql("SELECT pg_relation_size('items'), pg_relation_size('items_v_idx')").strip().split("|")
        self.parts["table_bytes"], self.parts["hnsw_index_bytes"] = int(sizes[0]), int(sizes[1])
        self.parts["maintenance_work_mem"] = build_opts["maintenance_work_mem"]
        self.parts["max_parallel_maintenance_workers"] = threads - 1
        self.parts["shared_buffers"] = a.pg_shared_buffers
        self.parts["versions"] = self.psql("SELECT current_setting('server_version'), "
                                           "(SELECT extversion FROM pg_extension WHERE extname = 'vector')").strip()
        self.loaded_by = system

    def run_file(self, path):
        return self.servers.psql_file(self.FLAVOR, path)

    def close(self):
        if self.started:
            self.started = False
            self.servers.stop(self.FLAVOR)


def plan_text(node):
    """A one-line EXPLAIN: node types (index names) from the top, children after '>'."""
    name = node["Node Type"] + (f" using {node['Index Name']}" if "Index Name" in node else "")
    kids = [plan_text(k) for k in node.get("Plans", [])]
    return name + (" > " + " | ".join(kids) if kids else "")


class PgVector:
    """pgvector through psql: a SQL file of every query's SELECT, run by one psql session per
    batch (so QPS includes the connection, SQL and client; see the module comment)."""

    ITERATIVE = "relaxed_order"
    shared = {}  # work directory -> PgItems: the pgvector systems share the server, table and indexes

    def __init__(self, args, work):
        self.args, self.work = args, work
        if work not in PgVector.shared:
            PgVector.shared[work] = PgItems(args, work)
        self.items = PgVector.shared[work]
        self.items.users += 1
        self.name = {"relaxed_order": "pgvector", "off": "pgvector-noiter", "strict_order": "pgvector-strict"}[
            self.ITERATIVE]
        self.queries, self.files = None, {}

    def build(self, rows, threads, row_labels):
        if self.items.loaded_by is None:
            self.items.load(self.name, rows, threads, row_labels)
            self.build_parts = dict(self.items.parts)
        else:
            self.build_parts = {"shares_table_and_indexes_of": self.items.loaded_by}

    def allow(self, mask, kind, labels):
        self.where = f"{LABEL_COLUMN[kind]} = ANY('{{{','.join(str(int(x)) for x in labels)}}}')"
        self.files, self.plans = {}, {}

    def settings(self, ef):
        return {"hnsw.ef_search": ef, "hnsw.iterative_scan": self.ITERATIVE,
                "hnsw.max_scan_tuples": self.args.pg_max_scan_tuples}

    def header(self, ef):
        return "".join(f"SET {k} = {v};\n" for k, v in self.settings(ef).items())

    def select(self, vector):
        return f"SELECT id FROM items WHERE {self.where} ORDER BY v <-> '{vector}' LIMIT {K};\n"

    def search(self, queries, ef):
        if self.queries is not queries:
            self.queries, self.query_text, self.files = queries, vector_text(queries), {}
        path = self.files.get(ef)
        if path is None:
            path = self.files[ef] = os.path.join(self.work, f"{self.name}-ef{ef}.sql")
            with open(path, "w") as f:
                f.write(self.header(ef))
                for v in self.query_text:
                    f.write(self.select(v) + "\\echo #\n")  # \echo: psql's own line, no round trip
        out = np.full((len(queries), K), -1, dtype=np.int64)
        i = j = 0
        for line in self.items.run_file(path).splitlines():
            if line == "#":
                i, j = i + 1, 0
            elif line:
                out[i, j], j = int(line), j + 1
        if i != len(queries):
            raise RuntimeError(f"{self.name}: psql answered {i} of {len(queries)} queries")
        return out

    def fields(self, ef):
        """The JSON line's extra fields: settings and the plan of the first query (EXPLAIN)."""
        if ef not in self.plans:
            path = os.path.join(self.work, f"{self.name}-explain.sql")
            with open(path, "w") as f:
                f.write(self.header(ef) + "EXPLAIN (FORMAT JSON) " + self.select(vector_text(self.queries[:1])[0]))
            plan = plan_text(json.loads(self.items.run_file(path))[0]["Plan"])
            uses = ("hnsw" if "items_v_idx" in plan else
                    "btree" if "items_bucket_idx" in plan or "items_cluster_idx" in plan else
                    "seqscan" if "Seq Scan" in plan else "other")
            self.plans[ef] = {"plan_uses": uses, "plan": plan}
        return dict(self.plans[ef], label_btree=self.args.pg_label_btree,
                    **{k: v for k, v in self.settings(ef).items() if k != "hnsw.ef_search"})

    def close(self):
        self.items.users -= 1
        if self.items.users == 0:
            PgVector.shared.pop(self.work, None)
            self.items.close()


class PgVectorNoIter(PgVector):
    """hnsw.iterative_scan = off."""
    ITERATIVE = "off"


class PgVectorStrict(PgVector):
    """hnsw.iterative_scan = strict_order."""
    ITERATIVE = "strict_order"


ADAPTERS = {"calico": Calico, "calico-labels": CalicoLabels, "hnswlib": Hnswlib, "faiss": Faiss,
            "pgvector": PgVector, "pgvector-noiter": PgVectorNoIter, "pgvector-strict": PgVectorStrict}


def row_labels(n, clusters, seed):
    """Each row's bucket (floor(u * BUCKETS), u uniform) and the random order in which the
    correlated lists take clusters."""
    rng = np.random.default_rng(seed)
    buckets = np.minimum((rng.random(n) * BUCKETS).astype(np.int64), BUCKETS - 1)
    return buckets, rng.permutation(clusters)


def allow_lists(buckets, clusters_of_rows, order, selectivity):
    """{kind: (boolean mask, the labels it allows)} for one selectivity (see the module comment)."""
    n = len(buckets)
    take_buckets = np.arange(round(selectivity * BUCKETS))
    sizes = np.bincount(clusters_of_rows, minlength=len(order))[order]
    take = np.sort(order[:int(np.searchsorted(np.cumsum(sizes), selectivity * n)) + 1])
    return {"uncorrelated": (buckets < len(take_buckets), take_buckets),
            "correlated": (np.isin(clusters_of_rows, take), take)}


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
    bad = [v for v in values if abs(v * BUCKETS - round(v * BUCKETS)) > 1e-6]
    if bad:
        raise argparse.ArgumentTypeError(
            f"selectivities must be multiples of {1 / BUCKETS:g} (an uncorrelated allow-list is whole "
            f"buckets of the {BUCKETS}): got {', '.join(map(str, bad))}")
    return values


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=churn.positive(int), default=100000)
    p.add_argument("--dim", type=churn.positive(int), default=128)
    p.add_argument("--clusters", type=churn.positive(int), default=1000)
    p.add_argument("--queries", type=churn.positive(int), default=500)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--selectivity", type=fraction_list, default=[0.001, 0.01, 0.1, 0.5],
                   help="fractions of rows allowed, multiples of 0.001 (others are rejected)")
    p.add_argument("--M", type=churn.positive(int), default=16)
    p.add_argument("--ef-construction", type=churn.positive(int), default=100)
    p.add_argument("--ef", type=vp.comma_ints, default=[16, 64, 256], help="beam widths (raised to 10)")
    p.add_argument("--build-threads", type=churn.positive(int), default=os.cpu_count() or 1,
                   help="threads of every build (pgvector: the leader and threads - 1 parallel workers)")
    p.add_argument("--seconds", type=churn.positive(float), default=1.0, help="minimum timed region")
    p.add_argument("--repeat", type=churn.positive(int), default=3, help="interleaved rounds (median)")
    p.add_argument("--systems", default=None,
                   help=f"comma list (default {','.join(SYSTEMS)}; also pgvector-strict). The pgvector "
                        "systems need scripts/postgres.sh build: without it they are skipped, with a "
                        "message, unless named here (then the run fails)")
    p.add_argument("--pg-max-scan-tuples", type=churn.positive(int), default=20000,
                   help="hnsw.max_scan_tuples of the iterative scans (pgvector's default 20000)")
    p.add_argument("--pg-label-btree", action=argparse.BooleanOptionalAction, default=True,
                   help="B-tree indexes on the label columns (default on; the planner may then scan a "
                        "label's rows exactly)")
    p.add_argument("--pg-shared-buffers", default="2GB", help="the server's shared_buffers (table and indexes fit)")
    p.add_argument("--pg-port-base", type=churn.positive(int), default=56431,
                   help="CALICO_PG_PORT_BASE of the private server (vanilla listens on it, on a Unix socket)")
    p.add_argument("--json", default=None, help="append JSON lines here")
    args = p.parse_args(argv)
    args.systems_named = args.systems is not None
    args.systems = [s for s in (args.systems or ",".join(SYSTEMS)).split(",") if s]
    unknown = [s for s in args.systems if s not in ADAPTERS]
    if unknown or not args.systems:
        p.error(f"--systems: unknown {unknown} (known: {', '.join(ADAPTERS)})")
    args.ef = sorted({max(ef, K) for ef in args.ef})
    if any(s in PG_SYSTEMS for s in args.systems) and args.ef[-1] > 1000:
        p.error("--ef: pgvector's hnsw.ef_search is at most 1000")
    return args


def main(argv):
    args = parse_args(argv)
    # a kill (SIGTERM) unwinds like an error: the finally below closes every system (the server stops)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    pg = [s for s in args.systems if s in PG_SYSTEMS]
    problem = pg_build_problem() if pg else None
    if problem:
        if args.systems_named:
            sys.exit(f"filtered: {', '.join(pg)}: {problem}")
        print(f"filtered: skipping {', '.join(pg)}: {problem}", file=sys.stderr)
        args.systems = [s for s in args.systems if s not in pg]
    rng = np.random.default_rng(args.seed)
    centres = rng.normal(0, 1, size=(args.clusters, args.dim)).astype(np.float32)
    of_rows = rng.integers(0, args.clusters, size=args.n)
    rows = np.ascontiguousarray(centres[of_rows] + rng.normal(0, 0.35, size=(args.n, args.dim)).astype(np.float32))
    queries = np.ascontiguousarray(centres[rng.integers(0, args.clusters, size=args.queries)] +
                                   rng.normal(0, 0.35, size=(args.queries, args.dim)).astype(np.float32))
    buckets, cluster_order = row_labels(args.n, args.clusters, args.seed + 1)
    labels_of_rows = {"uncorrelated": buckets, "correlated": of_rows}
    machine = vp.machine_info()
    out = open(args.json, "a") if args.json else None
    work = tempfile.mkdtemp(prefix="calico-filtered-")
    systems = {}
    common = {"n": args.n, "dim": args.dim, "clusters": args.clusters, "queries": args.queries,
              "M": args.M, "ef_construction": args.ef_construction}
    try:
        for s in args.systems:
            systems[s] = ADAPTERS[s](args, work)
            start = time.perf_counter()
            systems[s].build(rows, args.build_threads, labels_of_rows)
            seconds = time.perf_counter() - start
            parts = getattr(systems[s], "build_parts", {})
            detail = ", ".join(f"{k} {v:.1f} s" if k.endswith("_s") else f"{k} {v}" for k, v in parts.items())
            print(f"filtered: {s} built {args.n} rows in {seconds:.1f} s" + (f" ({detail})" if detail else ""),
                  file=sys.stderr)
            if out:
                out.write(json.dumps(dict({"bench": "filtered_build", "system": s, "seconds": seconds, **parts},
                                          build_threads=args.build_threads, **common, machine=machine)) + "\n")
        print(f"{'allow-list':>12} {'select.':>8} {'ef':>4} " +
              " ".join(f"{s + ' recall':>15} {s + ' QPS':>12} {s + ' rows':>10}" for s in args.systems))
        last_plan = {}
        for sel in args.selectivity:
            for kind, (mask, labels) in allow_lists(buckets, of_rows, cluster_order, sel).items():
                allowed = np.flatnonzero(mask)
                gt = churn.exact_top_k(rows, allowed, queries, "l2") if len(allowed) >= K else None
                if gt is None:
                    gt = np.full((len(queries), K), -2, dtype=np.int64)
                    gt[:, :len(allowed)] = allowed
                for index in systems.values():
                    index.allow(mask, kind, labels)
                for ef in args.ef:
                    res = churn.timed_batches(systems, queries, ef, args.seconds, args.repeat)
                    cells = []
                    for s, (found, qps) in res.items():
                        rec = recall(found, gt, len(allowed))
                        rows_returned = float(np.mean((found >= 0).sum(axis=1)))
                        wrong = int(np.sum((found >= 0) & ~mask[np.clip(found, 0, args.n - 1)]))
                        cells.append(f"{rec:>15.4f} {qps:>12.0f} {rows_returned:>10.2f}")
                        extra = systems[s].fields(ef) if hasattr(systems[s], "fields") else {}
                        if "plan" in extra and last_plan.get(s) != extra["plan"]:
                            last_plan[s] = extra["plan"]
                            print(f"filtered: {s} plan from {kind} {sel:.3%} ef {ef} on: {extra['plan_uses']}: "
                                  f"{extra['plan']}", file=sys.stderr)
                        if out:
                            out.write(json.dumps(dict({"bench": "filtered", "system": s, "allow_list": kind,
                                                       "selectivity": sel, "allowed": int(len(allowed)),
                                                       "labels": int(len(labels)), "ef": ef, "recall": rec,
                                                       "qps": qps, "rows": rows_returned,
                                                       "not_allowed_returned": wrong, **common,
                                                       "search_threads": 1}, **extra, machine=machine)) + "\n")
                            out.flush()
                    print(f"{kind:>12} {sel:>8.3%} {ef:>4} " + " ".join(cells), flush=True)
    finally:
        for s, index in systems.items():
            try:
                index.close()
            except Exception as e:  # noqa: BLE001  (the others still close: the server stops)
                print(f"filtered: closing {s} failed: {e}", file=sys.stderr)
        shutil.rmtree(work, ignore_errors=True)
        if out:
            out.close()


if __name__ == "__main__":
    main(sys.argv[1:])
