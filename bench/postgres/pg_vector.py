#!/usr/bin/env python3
"""pgvector HNSW on vanilla PostgreSQL vs PostgreSQL with Calico inside ([Calico] Fig. 8).

One data directory is built on calico (table, queries, HNSW index) and copied byte for byte to
vanilla, so both servers search the same graph: recall is identical by construction (checked)
and QPS differences are the buffer manager's alone.

Configurations (the ablation): vanilla (hash table), calico-array (array translation only:
calico_optimistic_reads = off, calico_group_prefetch = off), calico+opt (optimistic reads),
calico (optimistic reads + group prefetch).

Memory modes:
  inmem     shared_buffers larger than table + index, prewarmed;
  ltm-drop  shared_buffers = index / 8, OS page cache dropped before each run (the page cache
            then fills up: a second cache level under the pool);
  ltm-cg    shared_buffers = index / 8, OS page cache dropped before each run, and both
            servers in a memory cgroup of shared_buffers + CGROUP_EXTRA_MB (the page cache their
            reads fault in is charged to it): larger than memory for real.
Every timed run is pgbench with a custom script (one k-NN query per transaction, a random
query vector each time, prepared), -c clients -j clients for T seconds; rounds interleave the
configurations (rotating which goes first); medians and paired ratios are reported.
"""
import argparse
import glob
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import REPO, MemoryCgroup, add_common_args, finish_args, drop_os_caches, emit, log, machine, median  # noqa

CONFIGS = {
    'vanilla': ('vanilla', {}),
    'calico-array': ('calico', {'calico_optimistic_reads': 'off', 'calico_group_prefetch': 'off'}),
    'calico+opt': ('calico', {'calico_optimistic_reads': 'on', 'calico_group_prefetch': 'off'}),
    'calico': ('calico', {'calico_optimistic_reads': 'on', 'calico_group_prefetch': 'on'}),
}
DB = 'vectors'


def iter_vecs(path, kind):
    """The rows of an .fvecs (kind 'f') or .ivecs (kind 'i') file, one at a time."""
    with open(path, 'rb') as f:
        while True:
            head = f.read(4)
            if not head:
                return
            dim = struct.unpack('<i', head)[0]
            body = f.read(4 * dim)
            if len(body) != 4 * dim:
                sys.exit(f'{path}: truncated row')
            yield struct.unpack(f'<{dim}{kind}', body)


def read_vecs(path, kind):
    return list(iter_vecs(path, kind))


def dataset(args):
    """The clustered dataset of calico_bench vector (generated and cached by it)."""
    cache = os.path.abspath(args.cache_dir)
    pattern = os.path.join(cache, f'clustered*n{args.n}*')
    found = [d for d in glob.glob(pattern) if os.path.exists(os.path.join(d, 'gt.ivecs'))]
    if not found:
        log(f'generating the dataset with calico_bench vector (n={args.n}) in {cache}')
        subprocess.run([os.path.join(REPO, 'build', 'calico_bench'), 'vector', '--n', str(args.n),
                        '--queries', str(args.queries), '--cache-dir', cache,
                        '--data-dir', os.path.join(cache, 'pools'), '--index', 'ivf',
                        '--nlist', '16', '--build-only'], check=True)
        found = [d for d in glob.glob(pattern) if os.path.exists(os.path.join(d, 'gt.ivecs'))]
    if len(found) != 1:
        sys.exit(f'expected one dataset matching {pattern}, found {found}')
    return found[0]


def vec_text(v):
    return '[' + ','.join(repr(x) for x in v) + ']'


def load(servers, args, ds):
    """Builds the data directory on calico: items, queries, HNSW index; returns sizes."""
    s = servers
    s.start('calico', {'shared_buffers': args.inmem_shared_buffers, 'maintenance_work_mem': '4GB',
                       'max_parallel_maintenance_workers': '1', 'max_wal_size': '8GB',
                       'checkpoint_timeout': '1h'})
    s.psql('calico', f'DROP DATABASE IF EXISTS {DB}')
    s.psql('calico', f'CREATE DATABASE {DB}')
    s.psql('calico', 'CREATE EXTENSION vector; CREATE EXTENSION pg_prewarm;', db=DB)
    s.psql('calico', f'CREATE TABLE items (id int PRIMARY KEY, embedding vector({args.dim})); '
                     f'CREATE TABLE queries (id int PRIMARY KEY, embedding vector({args.dim}));', db=DB)
    for table, name in (('items', 'base.fvecs'), ('queries', 'query.fvecs')):
        tmp = os.path.join(s.scratch, f'{table}.copy')
        rows = 0
        with open(tmp, 'w') as f:
            for i, v in enumerate(iter_vecs(os.path.join(ds, name), 'f')):
                f.write(f'{i}\t{vec_text(v)}\n')
                rows += 1
        os.chmod(tmp, 0o644)
        log(f'loading {rows} rows into {table}')
        s.psql('calico', f"\\copy {table} FROM '{tmp}'", db=DB)
        os.remove(tmp)
    log(f'building the HNSW index (M={args.M}, ef_construction={args.ef_construction})')
    t0 = time.time()
    s.psql('calico', f'CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_l2_ops) '
                     f'WITH (m = {args.M}, ef_construction = {args.ef_construction})', db=DB)
    for sql in ('VACUUM ANALYZE items', 'VACUUM ANALYZE queries', 'CHECKPOINT'):  # one per session
        s.psql('calico', sql, db=DB)
    build_s = time.time() - t0
    s.stop('calico')
    s.clone_data('calico', 'vanilla')
    return build_s


def sizes(servers):
    out = servers.psql('calico', "SELECT pg_relation_size('items_hnsw'), pg_relation_size('items'), "
                                 "(SELECT count(*) FROM items)", db=DB)
    return [int(x) for x in out.strip().split('|')]


def recall(servers, flavor, ef, gt, k, options=None):
    """recall@k over all queries, and the result lists (to compare servers)."""
    opts = dict(options or {}, **{'hnsw.ef_search': ef})
    out = servers.psql(flavor, f"SELECT q.id, (SELECT string_agg(id::text, ',') FROM (SELECT id FROM items "
                               f"ORDER BY embedding <-> q.embedding LIMIT {k}) n) FROM queries q ORDER BY q.id",
                       db=DB, options=opts)
    lists = [line.split('|')[1] for line in out.strip().splitlines()]
    hits = sum(len(set(int(x) for x in l.split(',')) & set(gt[i][:k])) for i, l in enumerate(lists))
    return hits / (k * len(lists)), lists


def dynahash_bytes(entries, entry_size):
    """PostgreSQL's hash_estimate_size (dynahash.c) for a table of fixed size: one 16-byte
    HASHELEMENT plus the MAXALIGNed entry per element, a power-of-two bucket array of
    pointers in 256-bucket segments, and the directory of segments."""
    buckets = 1 << max(0, (entries - 1).bit_length())
    segments = max(1, buckets // 256)
    return entries * (16 + (entry_size + 7) // 8 * 8) + segments * 256 * 8 + segments * 8


def translation_memory(servers):
    """What each server spends on translation. pg_shmem_allocations shows only the headers
    of shared hash tables, so the tables are sized as PostgreSQL sizes them: vanilla's buffer
    hash holds NBuffers + 128 entries of {tag 20, id 4}; calico's directory holds
    calico_translation_slots entries of {prefix 20, slot 4} beside a 32-byte CalicoSlot each,
    plus the entry pages the OS holds (pg_calico_stats().resident_bytes)."""
    nbuffers = int(servers.psql('vanilla', "SELECT setting FROM pg_settings WHERE name = 'shared_buffers'"))
    nslots = int(servers.psql('calico', "SELECT setting FROM pg_settings WHERE name = 'calico_translation_slots'"))
    cols = ['slots_used', 'resident_bytes', 'dense_bytes', 'reserved_bytes', 'optimistic_ok',
            'optimistic_failed', 'prefetch_resident', 'prefetch_io']
    vals = servers.psql('calico', f"SELECT {', '.join(cols)} FROM pg_calico_stats()").strip().split('|')
    st = dict(zip(cols, (int(v) for v in vals)))
    fixed = dynahash_bytes(nslots, 24) + 32 * nslots
    return {'vanilla_hash_bytes': dynahash_bytes(nbuffers + 128, 24), 'calico_fixed_bytes': fixed,
            'calico_total_bytes': fixed + st['resident_bytes'], 'calico_stats': st}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--cache-dir', default=None, help='dataset cache (default OUT/data)')
    ap.add_argument('--n', type=int, default=1000000)
    ap.add_argument('--dim', type=int, default=128)
    ap.add_argument('--queries', type=int, default=1000)
    ap.add_argument('--M', type=int, default=16)
    ap.add_argument('--ef-construction', type=int, default=64)
    ap.add_argument('--ef', default='40,100,200')
    ap.add_argument('--k', type=int, default=10)
    ap.add_argument('--modes', default='inmem,ltm-drop,ltm-cg')
    ap.add_argument('--ltm-ef', default='40,100', help='ef_search sweep larger than memory')
    ap.add_argument('--configs', default=','.join(CONFIGS))
    ap.add_argument('--ltm-seconds', type=float, default=8.0)
    ap.add_argument('--inmem-shared-buffers', default='4GB')
    ap.add_argument('--cgroup-extra-mb', type=int, default=256)
    add_common_args(ap, seconds=5.0)
    args = ap.parse_args()
    servers = finish_args(args)
    args.cache_dir = args.cache_dir or os.path.join(args.out, 'data')
    configs = args.configs.split(',')
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f'unknown configuration {c} ({", ".join(CONFIGS)})')
    ds = dataset(args)
    gt = read_vecs(os.path.join(ds, 'gt.ivecs'), 'i')
    mach = machine()
    marker = os.path.join(servers.base('calico'), f'vectors-{os.path.basename(ds)}-M{args.M}-efc{args.ef_construction}')
    build_s = None
    if args.reload or not os.path.exists(marker):
        servers.stop_all()
        build_s = load(servers, args, ds)
        open(marker, 'w').close()
    script = os.path.join(servers.scratch, 'knn.sql')
    with open(script, 'w') as f:
        f.write(f'\\set q random(0, {len(gt) - 1})\n'
                f'SELECT id FROM items ORDER BY embedding <-> (SELECT embedding FROM queries WHERE id = :q) '
                f'LIMIT {args.k};\n')
    os.chmod(script, 0o644)

    servers.start('calico', {'shared_buffers': args.inmem_shared_buffers})
    index_bytes, table_bytes, rows = sizes(servers)
    servers.stop('calico')
    ltm_buffers_mb = max(16, index_bytes // 8 // 2**20)
    log(f'index {index_bytes / 2**20:.0f} MB, table {table_bytes / 2**20:.0f} MB, {rows} rows; '
        f'larger than memory: shared_buffers {ltm_buffers_mb} MB')
    base = {'bench': 'pg_vector', 'machine': mach, 'n': rows, 'dim': args.dim, 'M': args.M,
            'ef_construction': args.ef_construction, 'index_mb': round(index_bytes / 2**20),
            'table_mb': round(table_bytes / 2**20), 'k': args.k}
    if build_s is not None:
        emit(args.json, dict(base, kind='build', seconds=round(build_s, 1)))

    for mode in args.modes.split(','):
        inmem = mode == 'inmem'
        sb = args.inmem_shared_buffers if inmem else f'{ltm_buffers_mb}MB'
        efs = [int(e) for e in (args.ef if inmem else args.ltm_ef).split(',')]
        cgroups = {}
        if mode == 'ltm-cg':
            if not MemoryCgroup.available():
                log('no writable memory cgroup: skipping ltm-cg (reported as skipped)')
                emit(args.json, dict(base, kind='skipped', mode=mode, reason='no writable memory cgroup'))
                continue
            # one cgroup per server: each has its own pool plus the same room for page cache
            cgroups = {f: MemoryCgroup(f'calico-pg-bench-{f}', (ltm_buffers_mb + args.cgroup_extra_mb) * 2**20)
                       for f in ('vanilla', 'calico')}
        servers.stop_all()
        for flavor in ('vanilla', 'calico'):
            servers.start(flavor, {'shared_buffers': sb, 'max_parallel_workers_per_gather': '0',
                                   'jit': 'off'}, cgroup=cgroups.get(flavor))
        if inmem:
            for flavor in ('vanilla', 'calico'):
                servers.psql(flavor, "SELECT pg_prewarm('items_hnsw'), pg_prewarm('items'), "
                                     "pg_prewarm('queries'), pg_prewarm('queries_pkey')", db=DB)
        # recall: the same graph on both servers must give the same answers
        for ef in efs:
            r_cal, l_cal = recall(servers, 'calico', ef, gt, args.k)
            r_van, l_van = recall(servers, 'vanilla', ef, gt, args.k)
            same = l_cal == l_van
            emit(args.json, dict(base, kind='recall', mode=mode, ef=ef, recall=round(r_cal, 4),
                                 recall_vanilla=round(r_van, 4), identical_results=same))
            if not same:
                log(f'WARNING: vanilla and calico answers differ at ef {ef}')
        for clients in [int(c) for c in args.clients.split(',')]:
            for ef in efs:
                runs = {c: [] for c in configs}
                for rnd in range(args.rounds):
                    order = configs[rnd % len(configs):] + configs[:rnd % len(configs)]
                    for c in order:
                        flavor, opts = CONFIGS[c]
                        if not inmem:
                            # Page-cache pages stay charged to the cgroup that read them
                            # first: drop them all, so that in ltm-cg every page this run
                            # reads is charged to (and capped by) the server's cgroup.
                            drop_os_caches()
                        secs = args.seconds if inmem else args.ltm_seconds
                        tps, lat, txs = servers.pgbench(
                            flavor, ['-n', '-M', 'prepared', '-f', script, '-c', str(clients),
                                     '-j', str(clients), '-T', str(int(round(secs)))], db=DB,
                            options=dict(opts, **{'hnsw.ef_search': ef}))
                        runs[c].append(tps)
                        emit(args.json, dict(base, kind='run', mode=mode, shared_buffers=sb, ef=ef,
                                             clients=clients, config=c, round=rnd, qps=round(tps, 1),
                                             latency_ms=lat, queries=txs))
                med = {c: median(v) for c, v in runs.items()}
                summary = dict(base, kind='summary', mode=mode, shared_buffers=sb, ef=ef, clients=clients,
                               qps={c: round(v, 1) for c, v in med.items()}, rounds=args.rounds)
                if 'vanilla' in runs:
                    summary['speedup_vs_vanilla'] = {
                        c: round(median([a / b for a, b in zip(runs[c], runs['vanilla'])]), 3)
                        for c in configs if c != 'vanilla'}
                emit(args.json, summary)
                log(f'{mode} ef={ef} clients={clients}: ' +
                    ', '.join(f'{c} {med[c]:.0f}' for c in configs))
        emit(args.json, dict(base, kind='translation_memory', mode=mode, shared_buffers=sb,
                             **translation_memory(servers)))
        servers.stop_all()


if __name__ == '__main__':
    main()
