#!/usr/bin/env python3
"""pgvector HNSW on three servers over the same bytes: vanilla PostgreSQL 18 + stock pgvector
0.8.6, the calico extension on that unmodified server (ext: postgres/extension), and the
patched server (calico: postgres/patches). In memory, 1 client by default: a short run.

The data is generated in SQL (setseed: the same rows on every machine): --n vectors of --dim
dimensions around 64 random centres (uniform noise of +-0.15 per coordinate), and --queries
query vectors drawn the same way; L2 distance. Vanilla builds the HNSW index with stock
pgvector; its data directory is then copied byte for byte to ext and calico, so every server
searches the same graph: answers must be identical (checked and recorded), and recall@k is
measured against exact answers computed by a sequential scan.

Configurations (common.py CONFIGS): vanilla-worker and vanilla-io_uring (the faster is the
baseline of every ratio), vanilla-aa (vanilla-worker again: its ratio is the noise), ext-off
(the extension loaded, all of calico off: what the library costs when it does nothing; pgvector's
compute changes stay), ext-noopt (everything but optimistic reads), ext-hints (everything but
group prefetch), ext (everything), calico (the patched server:
optimistic reads + group prefetch). Each timed run is pgbench -M prepared with one k-NN query
per transaction (a random query id each time), -c clients for --seconds, after a fresh start
and pg_prewarm of table and index; rounds interleave the configurations, rotating which goes
first, and the summary gives medians and paired (same round) ratios, the medians of each
run's p50 and p95 latency (from pgbench's per-transaction log) and of the server's CPU time
per query (cpuacct cgroup of all its processes, when cgroup v1 cpuacct is writable).

  python3 bench/postgres/pg_vector_ext.py --json docs/postgres/extension-bench.jsonl
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import (CONFIGS, REPO, CpuCgroup, Rounds, add_common_args, emit, finish_args, latency_percentiles,  # noqa
                    log, loadavg, machine, median, paired_summary, parse_configs, run_fields, timed_pgbench)

DEFAULT_CONFIGS = ['vanilla-worker', 'vanilla-io_uring', 'vanilla-aa', 'ext-off', 'ext-noopt', 'ext-hints', 'ext',
                   'calico']
FLAVORS = ('vanilla', 'ext', 'calico')


def data_sql(n, dim, nq):
    """Deterministic clustered data (setseed) and queries, in one transaction."""
    def rows(table, first, count):
        return (f"INSERT INTO {table} SELECT i, (SELECT array_agg((c.v[d] + (random() - 0.5) * 0.3)::real "
                f"ORDER BY d) FROM generate_series(1, {dim}) d WHERE i > 0)::vector "
                f"FROM generate_series({first}, {first + count - 1}) i JOIN centres c ON c.c = 1 + i % 64;")
    return f"""
SELECT setseed(0.5);
CREATE TABLE centres AS SELECT c, array(SELECT random() FROM generate_series(1, {dim}) WHERE c > 0) v
  FROM generate_series(1, 64) c;
CREATE TABLE items (id int PRIMARY KEY, embedding vector({dim}));
CREATE TABLE queries (id int PRIMARY KEY, embedding vector({dim}));
{rows('items', 1, n)}
{rows('queries', n + 1, nq)}
UPDATE queries SET id = id - {n + 1};
"""


def answers(servers, flavor, db, k, ef=None, exact=False):
    """The k nearest ids of every query, one comma list per query (query order)."""
    opts = {'enable_indexscan': 'off', 'enable_bitmapscan': 'off'} if exact else \
        {'hnsw.ef_search': ef, 'enable_seqscan': 'off'}
    order = 'embedding <-> q.embedding, id' if exact else 'embedding <-> q.embedding'
    out = servers.psql(flavor, f"SELECT (SELECT string_agg(id::text, ',') FROM (SELECT id FROM items "
                               f"ORDER BY {order} LIMIT {k}) n) FROM queries q ORDER BY q.id",
                       db=db, options=opts)
    return out.strip().splitlines()


def recall(got, truth):
    hits = sum(len(set(g.split(',')) & set(t.split(','))) for g, t in zip(got, truth))
    return hits / sum(len(t.split(',')) for t in truth)


def load(servers, args, db):
    """Builds db on vanilla (stock pgvector), then copies the data directory to ext and calico."""
    s = servers
    s.stop_all()
    s.start('vanilla', {'shared_buffers': args.shared_buffers, 'maintenance_work_mem': args.maintenance_work_mem,
                        'max_parallel_maintenance_workers': '1', 'max_wal_size': '4GB'})
    s.psql('vanilla', f'DROP DATABASE IF EXISTS {db}')
    s.psql('vanilla', f'CREATE DATABASE {db}')
    s.psql('vanilla', 'CREATE EXTENSION vector; CREATE EXTENSION pg_prewarm;', db=db)
    t0 = time.time()
    s.psql('vanilla', data_sql(args.n, args.dim, args.queries), db=db)
    log(f'{args.n} rows and {args.queries} queries generated in {time.time() - t0:.0f} s')
    t0 = time.time()
    s.psql('vanilla', f'CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_l2_ops) '
                      f'WITH (m = {args.M}, ef_construction = {args.ef_construction})', db=db)
    build_s = time.time() - t0
    log(f'HNSW index built by stock pgvector in {build_s:.0f} s')
    for sql in ('VACUUM ANALYZE items', 'VACUUM ANALYZE queries', 'CHECKPOINT'):
        s.psql('vanilla', sql, db=db)
    s.stop('vanilla')
    for dst in ('ext', 'calico'):
        s.clone_data('vanilla', dst)
    return build_s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--n', type=int, default=50000)
    ap.add_argument('--dim', type=int, default=128)
    ap.add_argument('--queries', type=int, default=200)
    ap.add_argument('--M', type=int, default=16)
    ap.add_argument('--ef-construction', type=int, default=64)
    ap.add_argument('--ef', default='40,100')
    ap.add_argument('--k', type=int, default=10)
    ap.add_argument('--shared-buffers', default='1GB', help='in memory: larger than table + index')
    ap.add_argument('--maintenance-work-mem', default='1GB',
                    help='for the index build: the graph must fit (about 2 kB per 128-d row at m 16)')
    add_common_args(ap, seconds=10.0, configs=DEFAULT_CONFIGS)
    ap.set_defaults(clients='1')
    args = ap.parse_args()
    subprocess.run(['bash', os.path.join(REPO, 'postgres', 'extension', 'build.sh')], check=True,
                   stdout=subprocess.DEVNULL)
    servers = finish_args(args)
    configs = parse_configs(args.configs)
    db = f'vec_ext_{args.n}_{args.dim}_m{args.M}_efc{args.ef_construction}'
    marker = os.path.join(servers.base('vanilla'), f'{db}.loaded')
    build_s = None
    if args.reload or not os.path.exists(marker) or not all(
            os.path.exists(servers.data_dir(f)) for f in FLAVORS):
        build_s = load(servers, args, db)
        open(marker, 'w').close()
    efs = [int(e) for e in args.ef.split(',')]
    base = {'bench': 'pg_vector_ext', 'machine': machine(), 'n': args.n, 'dim': args.dim, 'M': args.M,
            'ef_construction': args.ef_construction, 'k': args.k, 'mode': 'inmem',
            'shared_buffers': args.shared_buffers, 'data': 'clustered-sql-setseed-0.5'}
    if build_s is not None:
        emit(args.json, dict(base, kind='build', seconds=round(build_s, 1), loadavg_end=loadavg(),
                             note='built on vanilla (stock pgvector); not a timed result'))

    # Answers: exact (vanilla, sequential scan) and HNSW on each server over the same bytes.
    settings = {'shared_buffers': args.shared_buffers, 'max_parallel_workers_per_gather': '0', 'jit': 'off'}
    lists = {}
    for flavor in FLAVORS:
        servers.stop_all()
        servers.start(flavor, settings)
        if flavor == 'vanilla':
            truth = answers(servers, flavor, db, args.k, exact=True)
            sizes = servers.psql(flavor, "SELECT pg_relation_size('items_hnsw'), pg_relation_size('items')", db=db)
            index_bytes, table_bytes = (int(x) for x in sizes.strip().split('|'))
            base.update(index_mb=round(index_bytes / 2**20), table_mb=round(table_bytes / 2**20))
        lists[flavor] = {ef: answers(servers, flavor, db, args.k, ef=ef) for ef in efs}
    servers.stop_all()
    for ef in efs:
        same = all(lists[f][ef] == lists['vanilla'][ef] for f in FLAVORS)
        emit(args.json, dict(base, kind='recall', ef=ef, recall=round(recall(lists['vanilla'][ef], truth), 4),
                             identical_results=same, servers=list(FLAVORS)))
        if not same:
            sys.exit(f'the servers answer differently at ef {ef} over the same data directory')

    script = os.path.join(servers.scratch, f'knn-{db}.sql')
    with open(script, 'w') as f:
        f.write(f'\\set q random(0, {args.queries - 1})\n'
                f'SELECT id FROM items ORDER BY embedding <-> (SELECT embedding FROM queries WHERE id = :q) '
                f'LIMIT {args.k};\n')
    os.chmod(script, 0o644)

    def prepare(flavor):
        servers.psql(flavor, "SELECT pg_prewarm('items_hnsw'), pg_prewarm('items'), pg_prewarm('queries')", db=db)
    rounds = Rounds(servers, settings, None, prepare)
    clients_list = [int(c) for c in args.clients.split(',')]
    runs = {(c, ef): {name: [] for name in configs} for c in clients_list for ef in efs}
    p95s = {(c, ef): {name: [] for name in configs} for c in clients_list for ef in efs}
    p50s = {(c, ef): {name: [] for name in configs} for c in clients_list for ef in efs}
    cpus = {(c, ef): {name: [] for name in configs} for c in clients_list for ef in efs}
    logdir = os.path.join(args.out, 'pgbench-logs')
    os.makedirs(logdir, exist_ok=True)
    for rnd in range(args.rounds):
        for name in Rounds.order(configs, rnd):
            flavor = rounds.switch(name)
            for clients in clients_list:
                for ef in efs:
                    prefix = os.path.join(logdir, f'{name}-{ef}-{clients}-{rnd}')
                    cpu = CpuCgroup.for_server(flavor)
                    cpu0 = cpu.usage_ns() if cpu else None
                    tps, lat, txs, la = timed_pgbench(
                        servers, flavor, ['-n', '-M', 'prepared', '-f', script, '-c', str(clients),
                                          '-j', str(clients), '-T', str(int(round(args.seconds))),
                                          '-l', '--log-prefix', prefix], db=db,
                        options=dict(CONFIGS[name][2], **{'hnsw.ef_search': ef}))
                    p50, p95 = latency_percentiles(prefix)
                    # the server's CPU per query (all its processes; cpuacct): less sensitive
                    # than QPS to other work competing for the cores
                    cpu_us = round((cpu.usage_ns() - cpu0) / 1000.0 / txs, 1) if cpu and txs else None
                    cpus[(clients, ef)][name].append(cpu_us)
                    runs[(clients, ef)][name].append(tps)
                    p50s[(clients, ef)][name].append(p50)
                    p95s[(clients, ef)][name].append(p95)
                    emit(args.json, dict(base, kind='run', ef=ef, clients=clients, round=rnd, qps=round(tps, 1),
                                         latency_ms=lat, p50_ms=p50, p95_ms=p95, server_cpu_us_per_query=cpu_us, queries=txs, seconds=args.seconds,
                                         **run_fields(name), **la))
            if flavor == 'ext':
                st = servers.psql('ext', 'CREATE EXTENSION IF NOT EXISTS calico; '
                                         'SELECT hits, misses, stale, prefetch_reads FROM calico_stats()', db=db)
                emit(args.json, dict(base, kind='calico_stats', config=name, round=rnd,
                                     **dict(zip(('hits', 'misses', 'stale', 'prefetch_reads'),
                                                (int(x) for x in st.strip().split('|'))))))
        log(f'round {rnd + 1} of {args.rounds} done')
    servers.stop_all()
    for (clients, ef), r in runs.items():
        summary = dict(base, kind='summary', ef=ef, clients=clients, rounds=args.rounds, **paired_summary(r, 'qps'),
                       p50_ms={c: median(v) for c, v in p50s[(clients, ef)].items() if v and None not in v},
                       p95_ms={c: median(v) for c, v in p95s[(clients, ef)].items() if v and None not in v},
                       server_cpu_us_per_query={c: median(v) for c, v in cpus[(clients, ef)].items()
                                                if v and None not in v})
        emit(args.json, summary)
        log(f'ef={ef} clients={clients}: ' + ', '.join(f'{c} {v:.0f}' for c, v in summary['qps'].items()) +
            f"; vs {summary.get('baseline')}: {summary.get('ratio_vs_baseline')}")


if __name__ == '__main__':
    main()
