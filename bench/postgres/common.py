"""Shared pieces of the PostgreSQL benchmarks: servers, psql, pgbench, JSON lines.

The servers are the ones scripts/postgres.sh manages (vanilla on port 55431, calico on
55432), each with its data directory under SCRATCH/postgres/FLAVOR/data.
"""
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PG_SH = os.path.join(REPO, 'scripts', 'postgres.sh')
PORTS = {'vanilla': 55431, 'calico': 55432}


def add_common_args(ap, seconds):
    """The options every PostgreSQL benchmark takes."""
    ap.add_argument('--out', default=os.path.join(REPO, 'pg-results'), help='results and scratch directory')
    ap.add_argument('--clients', default='1,2', help='client connections (comma list)')
    ap.add_argument('--seconds', type=float, default=seconds, help='timed seconds per run')
    ap.add_argument('--rounds', type=int, default=3, help='interleaved rounds')
    ap.add_argument('--reload', action='store_true', help='build the data directory again')
    ap.add_argument('--json', default=None, help='JSON lines file (default OUT/postgres.jsonl)')


def finish_args(args):
    os.makedirs(args.out, exist_ok=True)
    args.json = args.json or os.path.join(args.out, 'postgres.jsonl')
    return Servers(os.path.join(args.out, 'scratch'))


def log(msg):
    print(f'[{time.strftime("%H:%M:%S")}] {msg}', file=sys.stderr, flush=True)


class Servers:
    """Starts, stops and talks to the two servers; settings per start."""

    def __init__(self, scratch):
        self.scratch = os.path.abspath(scratch)
        self.env = dict(os.environ, CALICO_SCRATCH=self.scratch)
        out = subprocess.run(['bash', os.path.join(REPO, 'postgres', 'build.sh'), '--print'],
                             check=True, capture_output=True, text=True, env=self.env).stdout
        self.build = out.strip().splitlines()[-1]
        if not os.path.exists(os.path.join(self.build, 'done')):
            sys.exit('no PostgreSQL build: run scripts/postgres.sh build first')
        self.running = {}

    def base(self, flavor):
        return os.path.join(self.scratch, 'postgres', flavor)

    def data_dir(self, flavor):
        return os.path.join(self.base(flavor), 'data')

    def bin(self, flavor, tool):
        return os.path.join(self.build, flavor, 'install', 'bin', tool)

    def client_env(self, flavor, options=None):
        env = dict(self.env, PGHOST=self.base(flavor), PGPORT=str(PORTS[flavor]),
                   PGDATABASE='postgres',
                   PGUSER='calicopg' if os.getuid() == 0 else os.environ.get('USER', ''))
        if options:
            env['PGOPTIONS'] = ' '.join(f'-c {k}={v}' for k, v in options.items())
        return env

    def start(self, flavor, settings, cgroup=None):
        args = ['bash', PG_SH, 'start', flavor] + [f'{k}={v}' for k, v in settings.items()]
        subprocess.run(args, check=True, env=self.env, stdout=subprocess.DEVNULL)
        self.running[flavor] = dict(settings)
        if cgroup:
            cgroup.add_server(self.data_dir(flavor))

    def stop(self, flavor):
        subprocess.run(['bash', PG_SH, 'stop', flavor], check=True, env=self.env,
                       stdout=subprocess.DEVNULL)
        self.running.pop(flavor, None)

    def stop_all(self):
        for f in list(PORTS):
            self.stop(f)

    def psql(self, flavor, sql, db='postgres', options=None, check=True):
        """Runs sql (one -c: several statements run as one transaction)."""
        r = subprocess.run([self.bin(flavor, 'psql'), '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1',
                            '-d', db, '-c', sql], capture_output=True, text=True,
                           env=self.client_env(flavor, options))
        if check and r.returncode != 0:
            raise RuntimeError(f'psql on {flavor} failed: {r.stderr.strip()}\n{sql[:300]}')
        return r.stdout

    def psql_file(self, flavor, path, db='postgres', options=None):
        r = subprocess.run([self.bin(flavor, 'psql'), '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1',
                            '-d', db, '-f', path], capture_output=True, text=True,
                           env=self.client_env(flavor, options))
        if r.returncode != 0:
            raise RuntimeError(f'psql -f {path} on {flavor} failed: {r.stderr.strip()}')
        return r.stdout

    def pgbench(self, flavor, args, db='postgres', options=None):
        """Runs pgbench; returns (tps, latency_ms, transactions)."""
        r = subprocess.run([self.bin(flavor, 'pgbench')] + args + [db], capture_output=True,
                           text=True, env=self.client_env(flavor, options))
        if r.returncode != 0:
            raise RuntimeError(f'pgbench on {flavor} failed: {r.stderr.strip()[-2000:]}')
        out = r.stdout + r.stderr
        tps = float(re.search(r'tps = ([0-9.]+)', out).group(1))
        lat = re.search(r'latency average = ([0-9.]+) ms', out)
        txs = int(re.search(r'number of transactions actually processed: (\d+)', out).group(1))
        failed = re.search(r'number of failed transactions: (\d+)', out)
        if failed and int(failed.group(1)) > 0:
            raise RuntimeError(f'pgbench on {flavor}: {failed.group(1)} failed transactions')
        return tps, float(lat.group(1)) if lat else None, txs

    def clone_data(self, src, dst):
        """Copies src's data directory to dst's (both stopped): the same bytes, so the same
        tables and the same HNSW graph on both servers."""
        for f in (src, dst):
            if f in self.running:
                self.stop(f)
        shutil.rmtree(self.data_dir(dst), ignore_errors=True)
        os.makedirs(self.base(dst), exist_ok=True)
        subprocess.run(['cp', '-a', self.data_dir(src), self.data_dir(dst)], check=True)
        if os.getuid() == 0:
            subprocess.run(['chown', '-R', 'calicopg', self.base(dst)], check=True)


class MemoryCgroup:
    """A cgroup-v1 memory cgroup that caps a server (its processes and the page cache they
    fault in): larger than memory for real, not only for the buffer pool."""

    ROOT = '/sys/fs/cgroup/memory'

    def __init__(self, name, limit_bytes):
        self.path = os.path.join(self.ROOT, name)
        os.makedirs(self.path, exist_ok=True)
        with open(os.path.join(self.path, 'memory.limit_in_bytes'), 'w') as f:
            f.write(str(limit_bytes))
        self.limit = limit_bytes

    @staticmethod
    def available():
        return os.path.isdir(MemoryCgroup.ROOT) and os.access(MemoryCgroup.ROOT, os.W_OK)

    def add_server(self, data_dir):
        with open(os.path.join(data_dir, 'postmaster.pid')) as f:
            pid = f.readline().strip()
        # the postmaster's children (already forked ones too) join with it
        pids = [pid] + subprocess.run(['pgrep', '-P', pid], capture_output=True,
                                      text=True).stdout.split()
        for p in pids:
            with open(os.path.join(self.path, 'cgroup.procs'), 'w') as f:
                f.write(p)


def drop_os_caches():
    subprocess.run(['sync'], check=True)
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write('3')


def machine():
    cpu = ''
    try:
        with open('/proc/cpuinfo') as f:
            cpu = next(l.split(':', 1)[1].strip() for l in f if l.startswith('model name'))
    except (OSError, StopIteration):
        pass
    with open('/proc/meminfo') as f:
        mem_kb = int(f.readline().split()[1])
    commit = subprocess.run(['git', '-C', REPO, 'rev-parse', '--short', 'HEAD'],
                            capture_output=True, text=True).stdout.strip()
    return {'cpu': cpu, 'cores': os.cpu_count(), 'mem_gib': round(mem_kb / 2**20, 1),
            'kernel': platform.release(), 'commit': commit}


def emit(path, record):
    record = dict(record, time=time.strftime('%Y-%m-%dT%H:%M:%S'))
    line = json.dumps(record, sort_keys=True)
    print(line, flush=True)
    if path:
        with open(path, 'a') as f:
            f.write(line + '\n')


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
