#!/usr/bin/env python3
"""pgbench (TPC-B-like and select-only) on vanilla PostgreSQL vs PostgreSQL with Calico inside:
OLTP must not regress. The database (pgbench -i -s SCALE) is built once on calico and copied
byte for byte to vanilla. Modes: inmem (shared_buffers holds everything) and ltm
(shared_buffers = database / 8; the OS page cache is not limited: the pool is what is
measured). synchronous_commit = off so that the WAL flush does not hide the buffer manager.
Rounds interleave the servers; medians and paired ratios.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import add_common_args, finish_args, emit, log, machine, median  # noqa

DB = 'oltp'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--scale', type=int, default=50)
    ap.add_argument('--workloads', default='tpcb,select')
    ap.add_argument('--modes', default='inmem,ltm')
    add_common_args(ap, seconds=10.0)
    args = ap.parse_args()
    s = finish_args(args)
    common = {'max_parallel_workers_per_gather': '0', 'jit': 'off', 'synchronous_commit': 'off',
              'max_wal_size': '8GB', 'checkpoint_timeout': '1h'}
    marker = os.path.join(s.base('calico'), f'oltp-s{args.scale}')
    if args.reload or not os.path.exists(marker):
        s.stop_all()
        s.start('calico', dict(common, shared_buffers='2GB'))
        s.psql('calico', f'DROP DATABASE IF EXISTS {DB}')
        s.psql('calico', f'CREATE DATABASE {DB}')
        log(f'pgbench -i -s {args.scale}')
        import subprocess
        subprocess.run([s.bin('calico', 'pgbench'), '-i', '-q', '-s', str(args.scale), DB], check=True,
                       env=s.client_env('calico'), stdout=subprocess.DEVNULL)
        s.psql('calico', 'CREATE EXTENSION pg_prewarm', db=DB)
        s.psql('calico', 'CHECKPOINT', db=DB)
        s.stop('calico')
        s.clone_data('calico', 'vanilla')
        open(marker, 'w').close()
    s.stop_all()
    s.start('calico', dict(common, shared_buffers='2GB'))
    db_mb = int(s.psql('calico', f"SELECT pg_database_size('{DB}') / 1048576", db=DB))
    s.stop('calico')
    base = {'bench': 'pg_oltp', 'machine': machine(), 'scale': args.scale, 'db_mb': db_mb}
    for mode in args.modes.split(','):
        sb = f'{max(2048, db_mb * 2)}MB' if mode == 'inmem' else f'{max(16, db_mb // 8)}MB'
        s.stop_all()
        for f in ('vanilla', 'calico'):
            s.start(f, dict(common, shared_buffers=sb))
            if mode == 'inmem':
                s.psql(f, "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c WHERE relname LIKE 'pgbench_%' "
                          "AND relkind IN ('r', 'i')", db=DB)
        for workload in args.workloads.split(','):
            flag = ['-S'] if workload == 'select' else []
            for clients in [int(c) for c in args.clients.split(',')]:
                runs = {'vanilla': [], 'calico': []}
                for rnd in range(args.rounds):
                    for f in (('vanilla', 'calico') if rnd % 2 == 0 else ('calico', 'vanilla')):
                        tps, lat, txs = s.pgbench(f, ['-n', '-M', 'prepared'] + flag +
                                                  ['-c', str(clients), '-j', str(clients),
                                                   '-T', str(int(round(args.seconds)))], db=DB)
                        runs[f].append(tps)
                        emit(args.json, dict(base, kind='run', mode=mode, shared_buffers=sb, workload=workload,
                                             clients=clients, server=f, round=rnd, tps=round(tps, 1),
                                             latency_ms=lat))
                ratio = median([c / v for c, v in zip(runs['calico'], runs['vanilla'])])
                med = {f: median(v) for f, v in runs.items()}
                emit(args.json, dict(base, kind='summary', mode=mode, shared_buffers=sb, workload=workload,
                                     clients=clients, tps={f: round(v, 1) for f, v in med.items()},
                                     speedup=round(ratio, 3), rounds=args.rounds))
                log(f'{mode} {workload} {clients} client(s): vanilla {med["vanilla"]:.0f} tps, '
                    f'calico {med["calico"]:.0f} tps, ratio {ratio:.3f}')
    s.stop_all()


if __name__ == '__main__':
    main()
