#!/usr/bin/env python3
"""Heap SUM scans on vanilla PostgreSQL vs PostgreSQL with Calico inside ([Calico] Fig. 9a).

One table per row size (128 B to 6 KB, columns stored PLAIN so that rows stay in the heap),
each about --table-mb; loaded once on calico and copied byte for byte to vanilla. In memory:
shared_buffers holds every table, prewarmed after every start. Each timed run is pgbench
repeating `SELECT sum(val) FROM t` (no parallel workers) for --seconds with 1 or 2 clients.
Configurations (common.py): vanilla with each io_method (the fastest per point is the
baseline) and calico; rounds interleave them (rotating which goes first, only that
configuration's server up, started afresh); medians and paired ratios.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import (Counters, Rounds, add_common_args, emit, finish_args, log, machine, paired_summary,  # noqa
                    parse_configs, run_fields, timed_pgbench)

DB = 'scans'
HEAP_TUPLE_OVERHEAD = 24 + 4 + 8 + 4 + 4  # header, line pointer, id, val, varlena header


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--row-sizes', default='128,256,512,1024,2048,4096,6144')
    ap.add_argument('--table-mb', type=int, default=512)
    ap.add_argument('--load-only', action='store_true', help='build the database (if needed) and stop')
    add_common_args(ap, seconds=5.0, configs=['vanilla-sync', 'vanilla-worker', 'vanilla-io_uring', 'calico'])
    args = ap.parse_args()
    s = finish_args(args)
    configs = parse_configs(args.configs)
    sizes = [int(x) for x in args.row_sizes.split(',')]
    if min(sizes) < 64 or max(sizes) > 8000:
        sys.exit('row sizes must be within 64..8000 bytes (one heap page holds at most 8 KB)')
    total_mb = args.table_mb * len(sizes)
    sb = f'{total_mb + 1024}MB'
    marker = os.path.join(s.base('calico'), f'scans-{args.row_sizes}-{args.table_mb}')
    settings = {'shared_buffers': sb, 'max_parallel_workers_per_gather': '0', 'jit': 'off',
                'max_wal_size': '8GB', 'checkpoint_timeout': '1h'}
    if args.reload or not os.path.exists(marker):
        s.stop_all()
        s.start('calico', settings)
        s.psql('calico', f'DROP DATABASE IF EXISTS {DB}')
        s.psql('calico', f'CREATE DATABASE {DB}')
        s.psql('calico', 'CREATE EXTENSION pg_prewarm', db=DB)
        for size in sizes:
            rows = args.table_mb * 2**20 // size
            pad = size - HEAP_TUPLE_OVERHEAD
            log(f'loading scan_{size}: {rows} rows of {size} B')
            s.psql('calico', f'CREATE UNLOGGED TABLE scan_{size} (id int8, val int4, pad text); '
                             f'ALTER TABLE scan_{size} ALTER COLUMN pad SET STORAGE PLAIN; '
                             f'INSERT INTO scan_{size} SELECT g, g % 1000, repeat(\'x\', {pad}) '
                             f'FROM generate_series(1, {rows}) g', db=DB)
            s.psql('calico', f'VACUUM ANALYZE scan_{size}', db=DB)
        s.psql('calico', 'CHECKPOINT', db=DB)
        s.stop('calico')
        s.clone_data('calico', 'vanilla')
        open(marker, 'w').close()
    if args.load_only:
        s.stop_all()
        return
    s.stop_all()
    s.start('calico', settings)
    mbs = {size: int(s.psql('calico', f"SELECT pg_relation_size('scan_{size}') / 1048576", db=DB)) for size in sizes}
    s.stop_all()
    for size in sizes:
        with open(os.path.join(s.scratch, f'scan_{size}.sql'), 'w') as fh:
            fh.write(f'SELECT sum(val) FROM scan_{size};\n')

    def prewarm(flavor):
        s.psql(flavor, 'SELECT ' + ', '.join(f"pg_prewarm('scan_{size}')" for size in sizes), db=DB)
    rounds = Rounds(s, settings, prepare=prewarm)
    base = {'bench': 'pg_scan', 'machine': machine(), 'table_mb': args.table_mb, 'shared_buffers': sb}
    clients_list = [int(c) for c in args.clients.split(',')]
    runs = {(size, c): {name: [] for name in configs} for size in sizes for c in clients_list}
    for rnd in range(args.rounds):
        for name in Rounds.order(configs, rnd):
            flavor = rounds.switch(name)
            for size in sizes:
                for clients in clients_list:
                    tps, lat, txs, la = timed_pgbench(s, flavor, ['-n', '-f', os.path.join(s.scratch, f'scan_{size}.sql'),
                                                                  '-c', str(clients), '-j', str(clients),
                                                                  '-T', str(int(round(args.seconds)))], db=DB)
                    runs[(size, clients)][name].append(tps)
                    emit(args.json, dict(base, kind='run', row_size=size, table_real_mb=mbs[size], clients=clients,
                                         round=rnd, scans_per_s=round(tps, 3), gb_per_s=round(tps * mbs[size] / 1024, 3),
                                         seconds=args.seconds, **run_fields(name), **la))
        log(f'scans: round {rnd + 1} of {args.rounds} done')
    ratios = {}
    for (size, clients), r in runs.items():
        summ = paired_summary(r, 'scans_per_s')
        summ['gb_per_s'] = {c: round(v * mbs[size] / 1024, 3) for c, v in summ['scans_per_s'].items()}
        emit(args.json, dict(base, kind='summary', row_size=size, table_real_mb=mbs[size], clients=clients,
                             rounds=args.rounds, **summ))
        ratio = summ.get('ratio_vs_baseline', {}).get('calico')
        if ratio:
            ratios.setdefault(clients, []).append(ratio)
        log(f"row {size} B, {clients} client(s): " + ', '.join(f'{c} {v:.2f} GB/s' for c, v in summ['gb_per_s'].items()) +
            f"; calico / {summ.get('baseline')} {ratio}")
    for clients, rs in ratios.items():
        g = math.exp(sum(math.log(r) for r in rs) / len(rs))
        emit(args.json, dict(base, kind='geomean', clients=clients, speedup=round(g, 3), row_sizes=sizes,
                             against='best vanilla io_method per row size'))
        log(f'{clients} client(s): geomean speedup {g:.3f}')
    if args.counts:
        for name in configs:
            flavor = rounds.switch(name)
            for size in sizes:
                cnt = Counters(s, flavor, DB, syscalls=True)
                cnt.start()
                tps, lat, txs, la = timed_pgbench(s, flavor, ['-n', '-f', os.path.join(s.scratch, f'scan_{size}.sql'),
                                                              '-c', '1', '-j', '1', '-T', str(int(round(args.seconds)))], db=DB)
                emit(args.json, dict(base, kind='counts', row_size=size, clients=1, scans_per_s=round(tps, 3),
                                     seconds=args.seconds, **run_fields(name), **la, **cnt.stop(txs)))
    s.stop_all()


if __name__ == '__main__':
    main()
