#!/usr/bin/env python3
"""Heap SUM scans on vanilla PostgreSQL vs PostgreSQL with Calico inside ([Calico] Fig. 9a).

One table per row size (128 B to 6 KB, columns stored PLAIN so that rows stay in the heap),
each about --table-mb; loaded once on calico and copied byte for byte to vanilla. In memory:
shared_buffers holds every table, prewarmed. Each timed run is pgbench repeating
`SELECT sum(val) FROM t` (no parallel workers) for --seconds with 1 or 2 clients; rounds
interleave the two servers (alternating which goes first); medians and paired ratios.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import add_common_args, finish_args, emit, log, machine, median  # noqa

DB = 'scans'
HEAP_TUPLE_OVERHEAD = 24 + 4 + 8 + 4 + 4  # header, line pointer, id, val, varlena header


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--row-sizes', default='128,256,512,1024,2048,4096,6144')
    ap.add_argument('--table-mb', type=int, default=512)
    add_common_args(ap, seconds=5.0)
    args = ap.parse_args()
    s = finish_args(args)
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
    s.stop_all()
    for f in ('vanilla', 'calico'):
        s.start(f, settings)
        for size in sizes:
            s.psql(f, f"SELECT pg_prewarm('scan_{size}')", db=DB)
    base = {'bench': 'pg_scan', 'machine': machine(), 'table_mb': args.table_mb, 'shared_buffers': sb}
    ratios = {}
    for size in sizes:
        mb = int(s.psql('calico', f"SELECT pg_relation_size('scan_{size}') / 1048576", db=DB))
        script = os.path.join(s.scratch, f'scan_{size}.sql')
        with open(script, 'w') as fh:
            fh.write(f'SELECT sum(val) FROM scan_{size};\n')
        for clients in [int(c) for c in args.clients.split(',')]:
            runs = {'vanilla': [], 'calico': []}
            for rnd in range(args.rounds):
                for f in (('vanilla', 'calico') if rnd % 2 == 0 else ('calico', 'vanilla')):
                    tps, lat, txs = s.pgbench(f, ['-n', '-f', script, '-c', str(clients), '-j', str(clients),
                                                  '-T', str(int(round(args.seconds)))], db=DB)
                    runs[f].append(tps)
                    emit(args.json, dict(base, kind='run', row_size=size, table_real_mb=mb, clients=clients,
                                         server=f, round=rnd, scans_per_s=round(tps, 3), gb_per_s=round(tps * mb / 1024, 3)))
            ratio = median([c / v for c, v in zip(runs['calico'], runs['vanilla'])])
            ratios.setdefault(clients, []).append(ratio)
            med = {f: median(v) for f, v in runs.items()}
            emit(args.json, dict(base, kind='summary', row_size=size, table_real_mb=mb, clients=clients,
                                 gb_per_s={f: round(v * mb / 1024, 3) for f, v in med.items()},
                                 speedup=round(ratio, 3), rounds=args.rounds))
            log(f'row {size} B, {clients} client(s): vanilla {med["vanilla"] * mb / 1024:.2f} GB/s, '
                f'calico {med["calico"] * mb / 1024:.2f} GB/s, ratio {ratio:.3f}')
    for clients, rs in ratios.items():
        g = math.exp(sum(math.log(r) for r in rs) / len(rs))
        emit(args.json, dict(base, kind='geomean', clients=clients, speedup=round(g, 3), row_sizes=sizes))
        log(f'{clients} client(s): geomean speedup {g:.3f}')
    s.stop_all()


if __name__ == '__main__':
    main()
