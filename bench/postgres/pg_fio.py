#!/usr/bin/env python3
"""The device's random-read rate at each queue depth: fio, 8 KB random reads (PostgreSQL's
block size), O_DIRECT through io_uring, on a file beside the servers' data (same device).
The PostgreSQL report sets each server's device reads per second (counting runs of
pg_vector.py, ltm-cg) against fio's IOPS at the server's mean queue depth.
Usage: pg_fio.py [--out DIR] [--depths 1,2,4,8,16,32,64] [--seconds 5] [--file-mb 2048]"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import REPO, emit, log, loadavg, machine  # noqa

MAX_DEPTH = 256  # past this the virtio queue is the limit, not the depth


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--out', default=os.path.join(REPO, 'pg-results'))
    ap.add_argument('--json', default=None)
    ap.add_argument('--depths', default='1,2,4,8,16,32,64')
    ap.add_argument('--seconds', type=int, default=5)
    ap.add_argument('--file-mb', type=int, default=2048)
    args = ap.parse_args()
    if not shutil.which('fio'):
        sys.exit('fio is not installed (apt-get install fio)')
    depths = [int(d) for d in args.depths.split(',')]
    if min(depths) < 1 or max(depths) > MAX_DEPTH:
        sys.exit(f'depths must be within 1..{MAX_DEPTH}')
    os.makedirs(os.path.join(args.out, 'scratch'), exist_ok=True)
    path = os.path.join(args.out, 'scratch', 'fio-randread.dat')
    json_path = args.json or os.path.join(args.out, 'postgres.jsonl')
    if not os.path.exists(path) or os.path.getsize(path) < args.file_mb * 2**20:
        log(f'writing the {args.file_mb} MB test file {path}')
        subprocess.run(['fio', '--name=fill', f'--filename={path}', f'--size={args.file_mb}M', '--rw=write',
                        '--bs=1M', '--direct=1', '--output-format=json'], check=True, stdout=subprocess.DEVNULL)
    mach = machine()
    for depth in depths:
        la0 = loadavg()
        out = subprocess.run(['fio', '--name=randread', f'--filename={path}', f'--size={args.file_mb}M',
                              '--rw=randread', '--bs=8k', '--direct=1', '--ioengine=io_uring',
                              f'--iodepth={depth}', f'--runtime={args.seconds}', '--time_based',
                              '--output-format=json'], check=True, capture_output=True, text=True).stdout
        job = json.loads(out)['jobs'][0]['read']
        emit(json_path, {'bench': 'pg_fio', 'machine': mach, 'depth': depth, 'block_kb': 8, 'seconds': args.seconds,
                         'iops': round(job['iops']), 'mean_latency_us': round(job['lat_ns']['mean'] / 1000, 1),
                         'loadavg_start': la0, 'loadavg_end': loadavg()})
        log(f'fio depth {depth}: {job["iops"]:.0f} IOPS')


if __name__ == '__main__':
    main()
