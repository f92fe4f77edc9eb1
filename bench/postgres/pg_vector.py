#!/usr/bin/env python3
"""pgvector HNSW on vanilla PostgreSQL 18 vs PostgreSQL 18 with Calico inside ([Calico] Fig. 8).

One data directory is built on calico (table, queries, HNSW index) and copied byte for byte to
vanilla, so both servers search the same graph: recall is identical by construction (checked)
and QPS differences are the buffer manager's alone. Each dataset lives in its own database
(named after it), so several sizes share the data directory.

Datasets (generated and cached by calico_bench vector): clustered (SIFT-like, L2,
vector_l2_ops) and embedding (text-embedding-like unit vectors, 384-d by default, inner
product, vector_ip_ops).

Configurations (common.py): vanilla-sync, vanilla-worker, vanilla-io_uring (the fastest per
point is the baseline), vanilla-aa (vanilla-worker again: the A/A control), and calico's
ablation: calico-array (array translation only: calico_optimistic_reads = off,
calico_group_prefetch = off), calico+opt (optimistic reads), calico (optimistic reads +
group prefetch through AIO, io_method io_uring); calico-worker and calico-sync on request, and
ext / ext-io_uring, the calico extension on the unmodified server (postgres/extension), which
opens a byte-for-byte copy of the same data directory.

Memory modes:
  inmem     shared_buffers larger than table + index, prewarmed after every start;
  ltm-cg    shared_buffers = index / 8, the OS page cache dropped before each run, and the
            server in a memory cgroup of shared_buffers + --cgroup-extra-mb (the page cache
            its reads fault in is charged to it): larger than memory for real;
  ltm-drop  as ltm-cg without the cgroup (the page cache fills up again during the run);
  common    the common configuration: shared_buffers --common-shared-buffers (16 MB), a
            cgroup that holds table + index + pool + 128 MB, the page cache warmed with
            pg_prewarm(..., 'read') after every start and never dropped: every pool miss
            is a page-cache hit.
Every timed run is pgbench with a custom script (one k-NN query per transaction, a random
query vector each time, prepared), -c clients -j clients for T seconds. Rounds interleave the
configurations (rotating which goes first; only the configuration's server is up, started
afresh); medians and paired ratios are reported. --counts adds one counting run per
configuration and point (reads, syscalls, CPU per query: common.Counters).

Filtered search (--filter-selectivity S): every query keeps only the rows whose id is its own
id modulo round(1/S) (a filter S of the rows pass, a different subset per query), with
hnsw.iterative_scan = relaxed_order; recall@k is measured against exact filtered answers (a
sequential scan on vanilla) for the first --filter-truth-queries queries.
"""
import argparse
import glob
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from common import (CONFIGS, REPO, Counters, MemoryCgroup, Progress, Rounds, add_common_args, cgroup_name,  # noqa
                    drop_os_caches, emit, finish_args, latency_percentiles, log, loadavg, machine, median,
                    paired_summary, parse_configs, run_fields, timed_pgbench)

DEFAULT_CONFIGS = ['vanilla-sync', 'vanilla-worker', 'vanilla-io_uring', 'vanilla-aa', 'calico-array',
                   'calico+opt', 'calico']
METRICS = {'l2': ('vector_l2_ops', '<->'), 'ip': ('vector_ip_ops', '<#>')}
MODES = ('inmem', 'ltm-cg', 'ltm-drop', 'common')


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
    """The dataset of calico_bench vector (generated and cached by it): its directory."""
    cache = os.path.abspath(args.cache_dir)
    pattern = os.path.join(cache, f'{args.dataset}-n{args.n}-d{args.dim}-c*-q{args.queries}-s*-{args.metric}')
    found = [d for d in glob.glob(pattern) if os.path.exists(os.path.join(d, 'gt.ivecs'))]
    if not found:
        log(f'generating the dataset with calico_bench vector ({args.dataset}, n={args.n}) in {cache}')
        subprocess.run([args.calico_bench, 'vector', '--dataset', args.dataset, '--n', str(args.n),
                        '--dim', str(args.dim), '--metric', args.metric,
                        '--queries', str(args.queries), '--cache-dir', cache,
                        '--data-dir', os.path.join(cache, 'pools'), '--index', 'ivf',
                        '--nlist', '16', '--build-only'], check=True, stdout=subprocess.DEVNULL)
        found = [d for d in glob.glob(pattern) if os.path.exists(os.path.join(d, 'gt.ivecs'))]
    if len(found) != 1:
        sys.exit(f'expected one dataset matching {pattern}, found {found}')
    return found[0]


def vec_text(v):
    return '[' + ','.join(repr(x) for x in v) + ']'


def load(servers, args, ds, db):
    """Builds database db on calico: items, queries, HNSW index; copies the data directory to
    vanilla and ext; returns the build's seconds."""
    s = servers
    opclass, _ = METRICS[args.metric]
    s.stop_all()
    s.start('calico', {'shared_buffers': args.inmem_shared_buffers, 'maintenance_work_mem': '4GB',
                       'max_parallel_maintenance_workers': '1', 'max_wal_size': '8GB',
                       'checkpoint_timeout': '1h'})
    s.psql('calico', f'DROP DATABASE IF EXISTS {db}')
    s.psql('calico', f'CREATE DATABASE {db}')
    s.psql('calico', 'CREATE EXTENSION vector; CREATE EXTENSION pg_prewarm;', db=db)
    s.psql('calico', f'CREATE TABLE items (id int PRIMARY KEY, embedding vector({args.dim})); '
                     f'CREATE TABLE queries (id int PRIMARY KEY, embedding vector({args.dim}));', db=db)
    for table, name in (('items', 'base.fvecs'), ('queries', 'query.fvecs')):
        tmp = os.path.join(s.scratch, f'{table}.copy')
        rows = 0
        with open(tmp, 'w') as f:
            for i, v in enumerate(iter_vecs(os.path.join(ds, name), 'f')):
                f.write(f'{i}\t{vec_text(v)}\n')
                rows += 1
        os.chmod(tmp, 0o644)
        log(f'loading {rows} rows into {table}')
        s.psql('calico', f"\\copy {table} FROM '{tmp}'", db=db)
        os.remove(tmp)
    log(f'building the HNSW index (M={args.M}, ef_construction={args.ef_construction})')
    t0 = time.time()

    def progress():
        out = s.psql('calico', 'SELECT phase, tuples_done, tuples_total, blocks_done, blocks_total '
                               'FROM pg_stat_progress_create_index', db=db).strip()
        return out or 'starting'
    with Progress('HNSW build (phase|tuples done|of|blocks done|of)', progress, period_s=30):
        s.psql('calico', f'CREATE INDEX items_hnsw ON items USING hnsw (embedding {opclass}) '
                         f'WITH (m = {args.M}, ef_construction = {args.ef_construction})', db=db)
    build_s = time.time() - t0
    log(f'HNSW index built in {build_s:.0f} s')
    for sql in ('VACUUM ANALYZE items', 'VACUUM ANALYZE queries', 'CHECKPOINT'):  # one per session
        s.psql('calico', sql, db=db)
    s.stop('calico')
    for dst in ('vanilla', 'ext'):
        log(f'copying the data directory to {dst}')
        s.clone_data('calico', dst)
    return build_s


def sizes(servers, db):
    out = servers.psql('calico', "SELECT pg_relation_size('items_hnsw'), pg_relation_size('items'), "
                                 "(SELECT count(*) FROM items)", db=db)
    return [int(x) for x in out.strip().split('|')]


FILTER_OPTIONS = {'hnsw.iterative_scan': 'relaxed_order', 'enable_seqscan': 'off', 'enable_bitmapscan': 'off'}


def filter_sql(modulus, qid):
    """The WHERE clause of a filtered query: the rows whose id is qid modulo modulus."""
    return f'WHERE id % {modulus} = {qid} % {modulus} ' if modulus else ''


def recall(servers, flavor, ef, gt, k, op, db, modulus=None, nq=None):
    """recall@k over the queries, and the result lists (to compare servers). With modulus
    (filtered search), gt is the exact filtered answers of the first nq queries."""
    opts = dict(FILTER_OPTIONS if modulus else {}, **{'hnsw.ef_search': ef})
    out = servers.psql(flavor, f"SELECT q.id, (SELECT string_agg(id::text, ',') FROM (SELECT id FROM items "
                               f"{filter_sql(modulus, 'q.id')}ORDER BY embedding {op} q.embedding LIMIT {k}) n) "
                               f"FROM queries q {f'WHERE q.id < {nq} ' if nq else ''}ORDER BY q.id",
                       db=db, options=opts)
    lists = [line.split('|')[1] for line in out.strip().splitlines()]
    hits = sum(len(set(int(x) for x in l.split(',') if x) & set(gt[i][:k])) for i, l in enumerate(lists))
    return hits / (k * len(lists)), lists


def filtered_truth(servers, k, op, db, modulus, nq):
    """Exact filtered answers of the first nq queries (vanilla must be up): a sequential scan."""
    out = servers.psql('vanilla', f"SELECT q.id, (SELECT string_agg(id::text, ',') FROM (SELECT id FROM items "
                                  f"{filter_sql(modulus, 'q.id')}ORDER BY embedding {op} q.embedding, id LIMIT {k}) n) "
                                  f"FROM queries q WHERE q.id < {nq} ORDER BY q.id",
                       db=db, options={'enable_indexscan': 'off', 'enable_bitmapscan': 'off'})
    return [[int(x) for x in line.split('|')[1].split(',')] for line in out.strip().splitlines()]


def dynahash_bytes(entries, entry_size):
    """PostgreSQL's hash_estimate_size (dynahash.c) for a table of fixed size: one 16-byte
    HASHELEMENT plus the MAXALIGNed entry per element, a power-of-two bucket array of
    pointers in 256-bucket segments, and the directory of segments."""
    buckets = 1 << max(0, (entries - 1).bit_length())
    segments = max(1, buckets // 256)
    return entries * (16 + (entry_size + 7) // 8 * 8) + segments * 256 * 8 + segments * 8


def translation_memory(servers, shared_buffers_blocks):
    """What each server spends on translation (calico must be up). pg_shmem_allocations
    shows only the headers of shared hash tables, so the tables are sized as PostgreSQL
    sizes them: vanilla's buffer hash holds NBuffers + 128 entries of {tag 20, id 4};
    calico's directory holds calico_translation_slots entries of {prefix 20, slot 4} beside
    a 32-byte CalicoSlot each, plus the entry pages the OS holds
    (pg_calico_stats().resident_bytes)."""
    nslots = int(servers.psql('calico', "SELECT setting FROM pg_settings WHERE name = 'calico_translation_slots'"))
    cols = ['slots_used', 'resident_bytes', 'dense_bytes', 'reserved_bytes', 'optimistic_ok',
            'optimistic_failed', 'prefetch_resident', 'prefetch_io']
    vals = servers.psql('calico', f"SELECT {', '.join(cols)} FROM pg_calico_stats()").strip().split('|')
    st = dict(zip(cols, (int(v) for v in vals)))
    fixed = dynahash_bytes(nslots, 24) + 32 * nslots
    return {'vanilla_hash_bytes': dynahash_bytes(shared_buffers_blocks + 128, 24), 'calico_fixed_bytes': fixed,
            'calico_total_bytes': fixed + st['resident_bytes'], 'calico_stats': st}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--cache-dir', default=None, help='dataset cache (default OUT/data)')
    ap.add_argument('--calico-bench', default=os.path.join(REPO, 'build', 'calico_bench'),
                    help='the calico_bench binary that generates the datasets')
    ap.add_argument('--dataset', default='clustered', choices=['clustered', 'embedding'])
    ap.add_argument('--n', type=int, default=1000000)
    ap.add_argument('--dim', type=int, default=None, help='default: 128 (clustered), 384 (embedding)')
    ap.add_argument('--queries', type=int, default=1000)
    ap.add_argument('--M', type=int, default=16)
    ap.add_argument('--ef-construction', type=int, default=64)
    ap.add_argument('--ef', default='40,100,200')
    ap.add_argument('--k', type=int, default=10)
    ap.add_argument('--modes', default='inmem,ltm-cg')
    ap.add_argument('--ltm-ef', default='40,100', help='ef_search sweep in ltm-cg, ltm-drop and common')
    ap.add_argument('--ltm-seconds', type=float, default=8.0)
    ap.add_argument('--inmem-shared-buffers', default='4GB')
    ap.add_argument('--common-shared-buffers', default='16MB')
    ap.add_argument('--cgroup-extra-mb', type=int, default=256,
                    help='ltm-cg: room for page cache and processes beyond shared_buffers')
    ap.add_argument('--filter-selectivity', type=float, default=None,
                    help='filtered search: the share of rows each query keeps (e.g. 0.01)')
    ap.add_argument('--filter-truth-queries', type=int, default=100,
                    help='filtered search: queries whose recall is measured (exact answers by a scan)')
    ap.add_argument('--load-only', action='store_true', help='build the database (if needed) and stop')
    add_common_args(ap, seconds=5.0, configs=DEFAULT_CONFIGS)
    args = ap.parse_args()
    modulus = None
    if args.filter_selectivity is not None:
        if not 0 < args.filter_selectivity <= 0.5:
            sys.exit(f'--filter-selectivity must be in (0, 0.5], not {args.filter_selectivity}')
        modulus = round(1 / args.filter_selectivity)
    args.dim = args.dim or (384 if args.dataset == 'embedding' else 128)
    args.metric = 'ip' if args.dataset == 'embedding' else 'l2'
    _, op = METRICS[args.metric]
    servers = finish_args(args)
    args.cache_dir = args.cache_dir or os.path.join(args.out, 'data')
    configs = parse_configs(args.configs)
    modes = args.modes.split(',')
    for m in modes:
        if m not in MODES:
            sys.exit(f'unknown mode {m} ({", ".join(MODES)})')
    ds = dataset(args)
    gt = read_vecs(os.path.join(ds, 'gt.ivecs'), 'i')
    mach = machine()
    db = f'vec_{args.dataset}_{args.n}_{args.dim}_m{args.M}_efc{args.ef_construction}'
    marker = os.path.join(servers.base('calico'), f'{db}-{os.path.basename(ds)}.loaded')
    build_s = None
    if args.reload or not os.path.exists(marker) or not all(
            os.path.exists(servers.data_dir(f)) for f in ('vanilla', 'ext')):
        build_s = load(servers, args, ds, db)
        open(marker, 'w').close()
    if args.load_only:
        if build_s is not None:
            emit(args.json, dict(bench='pg_vector', kind='build', machine=machine(), dataset=args.dataset,
                                 n=args.n, dim=args.dim, M=args.M, ef_construction=args.ef_construction,
                                 seconds=round(build_s, 1), loadavg_end=loadavg(),
                                 note='built on calico while other work may have run: not a timed result'))
        return
    script = os.path.join(servers.scratch, f'knn-{db}{f"-mod{modulus}" if modulus else ""}.sql')
    with open(script, 'w') as f:
        f.write(f'\\set q random(0, {len(gt) - 1})\n'
                f'SELECT id FROM items {filter_sql(modulus, ":q")}'
                f'ORDER BY embedding {op} (SELECT embedding FROM queries WHERE id = :q) '
                f'LIMIT {args.k};\n')
    os.chmod(script, 0o644)

    servers.stop_all()
    servers.start('calico', {'shared_buffers': args.inmem_shared_buffers})
    index_bytes, table_bytes, rows = sizes(servers, db)
    servers.stop('calico')
    ltm_buffers_mb = max(16, index_bytes // 8 // 2**20)
    log(f'{db}: index {index_bytes / 2**20:.0f} MB, table {table_bytes / 2**20:.0f} MB, {rows} rows; '
        f'larger than memory: shared_buffers {ltm_buffers_mb} MB')
    base = {'bench': 'pg_vector', 'machine': mach, 'dataset': args.dataset, 'metric': args.metric, 'n': rows,
            'dim': args.dim, 'M': args.M, 'ef_construction': args.ef_construction,
            'index_mb': round(index_bytes / 2**20), 'table_mb': round(table_bytes / 2**20), 'k': args.k}
    if modulus:
        base.update(filter_selectivity=1 / modulus, iterative_scan='relaxed_order')
    if build_s is not None:
        emit(args.json, dict(base, kind='build', seconds=round(build_s, 1), loadavg_end=loadavg(),
                             note='built on calico while other work may have run: not a timed result'))

    rels = ['items_hnsw', 'items', 'items_pkey', 'queries', 'queries_pkey']
    # recall, once per ef (the graph is the same in every mode), on servers that hold it all:
    # the same graph on both servers must give the same answers
    all_efs = sorted({int(e) for e in (args.ef + ',' + args.ltm_ef).split(',')})
    lists = {}
    flavors = ['vanilla', 'calico'] + (['ext'] if any(CONFIGS[c][0] == 'ext' for c in configs) else [])
    truth, nq = gt, None
    for flavor in flavors:
        servers.stop_all()
        servers.start(flavor, {'shared_buffers': args.inmem_shared_buffers, 'jit': 'off',
                               'max_parallel_workers_per_gather': '0'})
        if modulus and flavor == 'vanilla':
            nq = min(args.filter_truth_queries, len(gt))
            log(f'exact filtered answers of {nq} queries (1 row in {modulus}), by sequential scans')
            truth = filtered_truth(servers, args.k, op, db, modulus, nq)
        lists[flavor] = {ef: recall(servers, flavor, ef, truth, args.k, op, db, modulus, nq) for ef in all_efs}
    servers.stop_all()
    for ef in all_efs:
        (r_cal, l_cal), (r_van, l_van) = lists['calico'][ef], lists['vanilla'][ef]
        same = all(lists[f][ef][1] == l_van for f in flavors)
        emit(args.json, dict(base, kind='recall', ef=ef, recall=round(r_cal, 4),
                             recall_vanilla=round(r_van, 4), identical_results=same, servers=flavors))
        if not same:
            log(f'WARNING: the servers ({", ".join(flavors)}) answer differently at ef {ef}')
    for mode in modes:
        inmem = mode == 'inmem'
        sb = {'inmem': args.inmem_shared_buffers, 'common': args.common_shared_buffers}.get(mode,
                                                                                           f'{ltm_buffers_mb}MB')
        efs = [int(e) for e in (args.ef if inmem else args.ltm_ef).split(',')]
        secs = args.seconds if inmem or mode == 'common' else args.ltm_seconds
        cgroups = {}
        cg_mb = None
        if mode in ('ltm-cg', 'common'):
            if not MemoryCgroup.available():
                log(f'no writable memory cgroup: skipping {mode} (reported as skipped)')
                emit(args.json, dict(base, kind='skipped', mode=mode, reason='no writable memory cgroup'))
                continue
            sb_mb = int(sb[:-2]) if sb.endswith('MB') else int(sb[:-2]) * 1024
            cg_mb = (sb_mb + args.cgroup_extra_mb if mode == 'ltm-cg' else
                     sb_mb + (index_bytes + table_bytes) // 2**20 + 128)
            # one cgroup per server: each has its own pool plus the same room for page cache
            cgroups = {f: MemoryCgroup(cgroup_name(f), cg_mb * 2**20) for f in ('vanilla', 'calico', 'ext')}
            log(f'{mode}: shared_buffers {sb}, memory cgroup {cg_mb} MB per server')
        settings = {'shared_buffers': sb, 'max_parallel_workers_per_gather': '0', 'jit': 'off'}

        def prepare(flavor, mode=mode):
            if mode == 'inmem':
                servers.psql(flavor, 'SELECT ' + ', '.join(f"pg_prewarm('{r}')" for r in rels), db=db)
            elif mode == 'common':
                servers.psql(flavor, 'SELECT ' + ', '.join(f"pg_prewarm('{r}', 'read')" for r in rels), db=db)
        rounds = Rounds(servers, settings, cgroups, prepare)
        if mode != 'inmem':
            # Page-cache pages stay charged to the cgroup that read them first: start from an
            # empty page cache, so that every page a server reads is charged to its cgroup.
            drop_os_caches()
        mode_base = dict(base, mode=mode, shared_buffers=sb, cgroup_mb=cg_mb)
        clients_list = [int(c) for c in args.clients.split(',')]
        runs = {(c, ef): {name: [] for name in configs} for c in clients_list for ef in efs}
        p50s = {(c, ef): {name: [] for name in configs} for c in clients_list for ef in efs}
        p95s = {(c, ef): {name: [] for name in configs} for c in clients_list for ef in efs}
        logdir = os.path.join(args.out, 'pgbench-logs')
        os.makedirs(logdir, exist_ok=True)
        for rnd in range(args.rounds):
            for name in Rounds.order(configs, rnd):
                flavor = rounds.switch(name)
                for clients in clients_list:
                    for ef in efs:
                        if mode in ('ltm-cg', 'ltm-drop'):
                            drop_os_caches()
                        prefix = os.path.join(logdir, f'{mode}-{name}-{ef}-{clients}-{rnd}')
                        tps, lat, txs, la = timed_pgbench(
                            servers, flavor, ['-n', '-M', 'prepared', '-f', script, '-c', str(clients),
                                              '-j', str(clients), '-T', str(int(round(secs))),
                                              '-l', '--log-prefix', prefix], db=db,
                            options=dict(CONFIGS[name][2], **(FILTER_OPTIONS if modulus else {}), **{'hnsw.ef_search': ef}))
                        p50, p95 = latency_percentiles(prefix)
                        runs[(clients, ef)][name].append(tps)
                        p50s[(clients, ef)][name].append(p50)
                        p95s[(clients, ef)][name].append(p95)
                        emit(args.json, dict(mode_base, kind='run', ef=ef, clients=clients, round=rnd,
                                             qps=round(tps, 1), latency_ms=lat, p50_ms=p50, p95_ms=p95,
                                             queries=txs, seconds=secs, **run_fields(name), **la))
            log(f'{mode}: round {rnd + 1} of {args.rounds} done')
        for (clients, ef), r in runs.items():
            summary = dict(mode_base, kind='summary', ef=ef, clients=clients, rounds=args.rounds,
                           **paired_summary(r, 'qps'),
                           p50_ms={c: median(v) for c, v in p50s[(clients, ef)].items() if v and None not in v},
                           p95_ms={c: median(v) for c, v in p95s[(clients, ef)].items() if v and None not in v})
            emit(args.json, summary)
            log(f'{mode} ef={ef} clients={clients}: ' +
                ', '.join(f'{c} {v:.0f}' for c, v in summary['qps'].items()) +
                f"; calico / {summary.get('baseline')} {summary.get('ratio_vs_baseline', {}).get('calico')}")
        if args.counts:
            for name in configs:
                if name == 'vanilla-aa':
                    continue
                flavor = rounds.switch(name)
                for clients in clients_list:
                    ef = efs[0]
                    if mode in ('ltm-cg', 'ltm-drop'):
                        drop_os_caches()
                    cnt = Counters(servers, flavor, db, syscalls=True)
                    cnt.start()
                    tps, lat, txs, la = timed_pgbench(
                        servers, flavor, ['-n', '-M', 'prepared', '-f', script, '-c', str(clients),
                                          '-j', str(clients), '-T', str(int(round(secs)))], db=db,
                        options=dict(CONFIGS[name][2], **(FILTER_OPTIONS if modulus else {}), **{'hnsw.ef_search': ef}))
                    emit(args.json, dict(mode_base, kind='counts', ef=ef, clients=clients, qps=round(tps, 1),
                                         seconds=secs, **run_fields(name), **la, **cnt.stop(txs)))
        if 'calico' in configs:
            rounds.switch('calico')
            nbuf = int(servers.psql('calico', "SELECT setting FROM pg_settings WHERE name = 'shared_buffers'"))
            emit(args.json, dict(mode_base, kind='translation_memory', **translation_memory(servers, nbuf)))
        servers.stop_all()


if __name__ == '__main__':
    main()
