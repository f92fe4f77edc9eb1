#!/usr/bin/env python3
"""pgbench (TPC-B-like and select-only) on vanilla PostgreSQL vs PostgreSQL with Calico inside:
OLTP must not regress. The database (pgbench -i -s SCALE) is built once on calico and copied
byte for byte to vanilla. Modes: inmem (shared_buffers holds everything) and ltm
(shared_buffers = database / 8; the OS page cache is not limited and is warmed with the
pgbench relations after every start, on every server alike: the pool is what is measured;
each run line records how much of them the page cache held at its start).
synchronous_commit = off so that the WAL flush does not hide the buffer manager.
Configurations (common.py): vanilla with each io_method (the fastest per point is the
baseline), vanilla-aa (vanilla-worker again: the A/A control) and calico; rounds interleave
them (rotating which goes first, only that configuration's server up, started afresh);
medians and paired ratios. --counts adds one
counting run per configuration, workload and client count: server CPU, blocks read and
written, evictions and the WAL's writes and fsyncs per transaction (common.Counters).
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import (Counters, Rounds, add_common_args, emit, files_mb, finish_args, log, machine,  # noqa
                    page_cache_mb, paired_summary, parse_configs, relation_files, run_fields, timed_pgbench)

DB = 'oltp'
PGBENCH_RELATIONS = "relname LIKE 'pgbench_%' AND relkind IN ('r', 'i')"
# ltm: at least this share of the pgbench relations in the OS page cache after warming it
PAGE_CACHE_WARM = 0.95


def page_cache_fields(files):
    """A run line's page-cache fields (ltm): MB of the pgbench relations resident at the run's
    start, and their size."""
    if not files:
        return {}
    return {'page_cache_mb': round(page_cache_mb(files), 1), 'relations_mb': round(files_mb(files), 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--scale', type=int, default=50)
    ap.add_argument('--workloads', default='tpcb,select')
    ap.add_argument('--modes', default='inmem,ltm')
    ap.add_argument('--load-only', action='store_true', help='build the database (if needed) and stop')
    add_common_args(ap, seconds=10.0, configs=['vanilla-sync', 'vanilla-worker', 'vanilla-io_uring', 'vanilla-aa',
                                                     'calico'])
    args = ap.parse_args()
    s = finish_args(args)
    configs = parse_configs(args.configs)
    common = {'max_parallel_workers_per_gather': '0', 'jit': 'off', 'synchronous_commit': 'off',
              'max_wal_size': '8GB', 'checkpoint_timeout': '1h'}
    marker = os.path.join(s.base('calico'), f'oltp-s{args.scale}')
    if args.reload or not os.path.exists(marker):
        s.stop_all()
        s.start('calico', dict(common, shared_buffers='2GB'))
        s.psql('calico', f'DROP DATABASE IF EXISTS {DB}')
        s.psql('calico', f'CREATE DATABASE {DB}')
        log(f'pgbench -i -s {args.scale}')
        subprocess.run([s.bin('calico', 'pgbench'), '-i', '-q', '-s', str(args.scale), DB], check=True,
                       env=s.client_env('calico'), stdout=subprocess.DEVNULL)
        s.psql('calico', 'CREATE EXTENSION pg_prewarm', db=DB)
        s.psql('calico', 'CHECKPOINT', db=DB)
        s.stop('calico')
        s.clone_data('calico', 'vanilla')
        open(marker, 'w').close()
    if args.load_only:
        s.stop_all()
        return
    s.stop_all()
    s.start('calico', dict(common, shared_buffers='2GB'))
    db_mb = int(s.psql('calico', f"SELECT pg_database_size('{DB}') / 1048576", db=DB))
    s.stop('calico')
    base = {'bench': 'pg_oltp', 'machine': machine(), 'scale': args.scale, 'db_mb': db_mb}
    clients_list = [int(c) for c in args.clients.split(',')]
    for mode in args.modes.split(','):
        sb = f'{max(2048, db_mb * 2)}MB' if mode == 'inmem' else f'{max(16, db_mb // 8)}MB'

        def prepare(flavor, mode=mode):
            if mode == 'inmem':
                s.psql(flavor, f'SELECT sum(pg_prewarm(oid)) FROM pg_class WHERE {PGBENCH_RELATIONS}', db=DB)
                return
            # ltm: the pool holds an eighth and the OS page cache the rest, on every server
            # alike. Each server has its own data directory, and vanilla's serves three of
            # the four configurations, so unwarmed it fills three times as fast: that, not
            # the buffer manager, was a 0.46x "loss" of calico's (docs/results/postgres.md).
            s.psql(flavor, f"SELECT sum(pg_prewarm(oid, 'read')) FROM pg_class WHERE {PGBENCH_RELATIONS}", db=DB)
            files[flavor] = relation_files(s, flavor, DB, PGBENCH_RELATIONS)
            have, size = page_cache_mb(files[flavor]), files_mb(files[flavor])
            if have < PAGE_CACHE_WARM * size:
                s.stop_all()
                sys.exit(f'ltm: after reading them, the OS page cache holds {have:.0f} of the {size:.0f} MB '
                         f'of pgbench relations on {flavor}: the machine has too little free memory '
                         'for this mode (it measures the pool with the page cache warm)')
        files = {}
        rounds = Rounds(s, dict(common, shared_buffers=sb), prepare=prepare)
        workloads = args.workloads.split(',')
        runs = {(w, c): {name: [] for name in configs} for w in workloads for c in clients_list}
        for rnd in range(args.rounds):
            for name in Rounds.order(configs, rnd):
                flavor = rounds.switch(name)
                for workload in workloads:
                    flag = ['-S'] if workload == 'select' else []
                    for clients in clients_list:
                        cache = page_cache_fields(files.get(flavor))
                        tps, lat, txs, la = timed_pgbench(s, flavor, ['-n', '-M', 'prepared'] + flag +
                                                          ['-c', str(clients), '-j', str(clients),
                                                           '-T', str(int(round(args.seconds)))], db=DB)
                        runs[(workload, clients)][name].append(tps)
                        emit(args.json, dict(base, kind='run', mode=mode, shared_buffers=sb, workload=workload,
                                             clients=clients, round=rnd, tps=round(tps, 1), latency_ms=lat,
                                             seconds=args.seconds, **run_fields(name), **la, **cache))
            log(f'pgbench {mode}: round {rnd + 1} of {args.rounds} done')
        for (workload, clients), r in runs.items():
            summ = paired_summary(r, 'tps')
            emit(args.json, dict(base, kind='summary', mode=mode, shared_buffers=sb, workload=workload,
                                 clients=clients, rounds=args.rounds, **summ))
            log(f'{mode} {workload} {clients} client(s): ' + ', '.join(f'{c} {v:.0f}' for c, v in summ['tps'].items()) +
                f"; calico / {summ.get('baseline')} {summ.get('ratio_vs_baseline', {}).get('calico')}")
        if args.counts:
            for name in configs:
                if name == 'vanilla-aa':
                    continue
                flavor = rounds.switch(name)
                for workload in workloads:
                    flag = ['-S'] if workload == 'select' else []
                    for clients in clients_list:
                        cache = page_cache_fields(files.get(flavor))
                        cnt = Counters(s, flavor, DB, syscalls=True)
                        cnt.start()
                        tps, lat, txs, la = timed_pgbench(s, flavor, ['-n', '-M', 'prepared'] + flag +
                                                          ['-c', str(clients), '-j', str(clients),
                                                           '-T', str(int(round(args.seconds)))], db=DB)
                        emit(args.json, dict(base, kind='counts', mode=mode, shared_buffers=sb, workload=workload,
                                             clients=clients, tps=round(tps, 1), seconds=args.seconds,
                                             **run_fields(name), **la, **cache, **cnt.stop(txs)))
    s.stop_all()


if __name__ == '__main__':
    main()
