#!/usr/bin/env python3
"""Where the time goes larger than memory: device reads per second and per query, for vanilla
and calico (group prefetch on), in the ltm-cg setting of pg_vector.py (run it first: this
reuses its data directory). Reads /proc/diskstats for the device holding the data around one
pgbench run per server, and pg_calico_stats() for the reads calico started ahead.
Usage: pg_vector_io.py [--out DIR] [--ef 40] [--clients 1] [--seconds 10]"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import MemoryCgroup, add_common_args, drop_os_caches, emit, finish_args, machine  # noqa
import pg_vector  # noqa


def device_of(path):
    dev = os.stat(path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    with open('/proc/diskstats') as f:
        for line in f:
            p = line.split()
            if int(p[0]) == major and int(p[1]) == minor:
                # a partition: count the whole disk's reads (same numbers for one partition)
                return p[2]
    sys.exit(f'no /proc/diskstats line for {path}')


def disk_reads(name):
    with open('/proc/diskstats') as f:
        for line in f:
            p = line.split()
            if p[2] == name:
                return int(p[3]), int(p[5])  # reads completed, sectors read
    return 0, 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--ef', type=int, default=40)
    ap.add_argument('--cgroup-extra-mb', type=int, default=256)
    add_common_args(ap, seconds=10.0)
    args = ap.parse_args()
    s = finish_args(args)
    clients = int(args.clients.split(',')[0])
    dev = device_of(s.scratch)
    s.stop_all()
    s.start('calico', {'shared_buffers': '1GB'})
    index_bytes, _, _ = pg_vector.sizes(s)
    s.stop('calico')
    sb = f'{max(16, index_bytes // 8 // 2**20)}MB'
    script = os.path.join(s.scratch, 'knn.sql')
    for flavor, opts in (('vanilla', {}), ('calico', {})):
        cg = MemoryCgroup(f'calico-pg-bench-{flavor}', (int(sb[:-2]) + args.cgroup_extra_mb) * 2**20)
        s.start(flavor, {'shared_buffers': sb, 'max_parallel_workers_per_gather': '0', 'jit': 'off'}, cgroup=cg)
        drop_os_caches()
        before = (disk_reads(dev), s.psql('calico', 'SELECT prefetch_io FROM pg_calico_stats()')
                  if flavor == 'calico' else '0')
        tps, lat, txs = s.pgbench(flavor, ['-n', '-M', 'prepared', '-f', script, '-c', str(clients), '-j',
                                           str(clients), '-T', str(int(args.seconds))], db=pg_vector.DB,
                                  options=dict(opts, **{'hnsw.ef_search': args.ef}))
        after = (disk_reads(dev), s.psql('calico', 'SELECT prefetch_io FROM pg_calico_stats()')
                 if flavor == 'calico' else '0')
        reads = after[0][0] - before[0][0]
        kb = (after[0][1] - before[0][1]) / 2
        fadvised = int(after[1]) - int(before[1])
        emit(args.json, {'bench': 'pg_vector_io', 'machine': machine(), 'server': flavor, 'ef': args.ef,
                         'clients': clients, 'shared_buffers': sb, 'qps': round(tps, 1),
                         'device_reads_per_s': round(reads / args.seconds), 'device_reads_per_query': round(reads / max(1, txs), 1),
                         'kb_per_read': round(kb / max(1, reads), 1), 'reads_started_ahead_per_query': round(fadvised / max(1, txs), 1)})
        s.stop(flavor)


if __name__ == '__main__':
    main()
