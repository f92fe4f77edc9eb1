"""Shared pieces of the PostgreSQL benchmarks: servers, configurations, interleaved rounds,
counters, psql, pgbench, JSON lines.

The servers are the ones scripts/postgres.sh manages (vanilla on port 55431, calico on
55432, ext on 55433: vanilla's binaries with the calico extension preloaded and the patched
pgvector), each with its data directory under SCRATCH/postgres/FLAVOR/data.

A *configuration* is a server plus the settings it starts with (io_method is a postmaster
setting) plus session options (calico's ablation switches). Vanilla runs with each of
PostgreSQL 18's io_method values (sync, worker, io_uring); the fastest per workload is the
baseline every ratio is taken against. Rounds interleave the configurations, rotating which
goes first; before each configuration's block of runs in a round only its server is up,
started afresh (so every configuration begins a round with a cold pool and no other server
competes for the two cores).
"""
import glob
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PG_SH = os.path.join(REPO, 'scripts', 'postgres.sh')
# scripts/postgres.sh's ports (CALICO_PG_PORT_BASE moves both: two checkouts can then run
# their servers at the same time)
_PORT_BASE = int(os.environ.get('CALICO_PG_PORT_BASE', '55431'))
PORTS = {'vanilla': _PORT_BASE, 'calico': _PORT_BASE + 1, 'ext': _PORT_BASE + 2}


IO_METHODS = ('sync', 'worker', 'io_uring')
# name -> (server, settings it starts with, session options)
CONFIGS = {f'vanilla-{m}': ('vanilla', {'io_method': m}, {}) for m in IO_METHODS}
# the A/A control: vanilla-worker (PostgreSQL 18's default io_method) a second time, as its
# own configuration in the rotation; its ratio to vanilla-worker is the noise of a ratio
CONFIGS['vanilla-aa'] = ('vanilla', {'io_method': 'worker'}, {})
CONFIGS['calico-array'] = ('calico', {'io_method': 'io_uring'},
                           {'calico_optimistic_reads': 'off', 'calico_group_prefetch': 'off'})
CONFIGS['calico+opt'] = ('calico', {'io_method': 'io_uring'},
                         {'calico_optimistic_reads': 'on', 'calico_group_prefetch': 'off'})
CONFIGS['calico'] = ('calico', {'io_method': 'io_uring'},
                     {'calico_optimistic_reads': 'on', 'calico_group_prefetch': 'on'})
CONFIGS['calico-worker'] = ('calico', {'io_method': 'worker'},
                            {'calico_optimistic_reads': 'on', 'calico_group_prefetch': 'on'})
CONFIGS['calico-sync'] = ('calico', {'io_method': 'sync'},
                          {'calico_optimistic_reads': 'on', 'calico_group_prefetch': 'on'})
# the A/B of adaptive group prefetch: every group starts its reads, even when the OS page
# cache answers them at once
CONFIGS['calico-noadapt'] = ('calico', {'io_method': 'io_uring'},
                             {'calico_optimistic_reads': 'on', 'calico_group_prefetch': 'on',
                              'calico_prefetch_adaptive': 'off'})
# no page cache at all: reads go from the device straight into shared buffers
CONFIGS['calico-direct'] = ('calico', {'io_method': 'io_uring', 'debug_io_direct': 'data'},
                            {'calico_optimistic_reads': 'on', 'calico_group_prefetch': 'on'})
# vanilla without the page cache too: calico-direct's like-for-like comparison (not a
# baseline candidate: the baseline is vanilla as users run it, with one of its io_methods)
CONFIGS['vanilla-direct'] = ('vanilla', {'io_method': 'io_uring', 'debug_io_direct': 'data'}, {})
# the extension on the unmodified server (postgres/extension): hints + group prefetch, and
# the same server with both off (what loading the library costs when it does nothing)
CONFIGS['ext'] = ('ext', {'io_method': 'worker'}, {'calico.translation': 'on', 'calico.group_prefetch': 'on'})
CONFIGS['ext-io_uring'] = ('ext', {'io_method': 'io_uring'},
                           {'calico.translation': 'on', 'calico.group_prefetch': 'on'})
# the A/B of the read-ahead beyond the expansion (calico.lookahead: candidates read ahead for;
# ext-io_uring runs the default, 2)
for _n in (0, 1, 4):
    CONFIGS[f'ext-io_uring-la{_n}'] = ('ext', {'io_method': 'io_uring'},
                                       {'calico.translation': 'on', 'calico.group_prefetch': 'on',
                                        'calico.lookahead': str(_n)})
CONFIGS['ext-off'] = ('ext', {'io_method': 'worker'}, {'calico.translation': 'off', 'calico.group_prefetch': 'off',
                                                       'calico.optimistic_reads': 'off'})
# everything but the optimistic reads (their ablation)
CONFIGS['ext-noopt'] = ('ext', {'io_method': 'worker'}, {'calico.translation': 'on', 'calico.group_prefetch': 'on',
                                                         'calico.optimistic_reads': 'off'})
# hints: translation and the tuple prefetch through them, no group prefetch (the group finds
# nothing to read in memory); notuple: translation alone (the ablation of the tuple prefetch)
CONFIGS['ext-hints'] = ('ext', {'io_method': 'worker'}, {'calico.translation': 'on', 'calico.group_prefetch': 'off'})
CONFIGS['ext-notuple'] = ('ext', {'io_method': 'worker'},
                          {'calico.translation': 'on', 'calico.group_prefetch': 'off', 'calico.tuple_prefetch': 'off'})
VANILLA = [f'vanilla-{m}' for m in IO_METHODS]
# Bounds: a run shorter than this is mostly start-up (pgbench connects, plans, warms caches)
MIN_SECONDS = 1.0


def add_common_args(ap, seconds, configs):
    """The options every PostgreSQL benchmark takes."""
    ap.add_argument('--out', default=os.path.join(REPO, 'pg-results'), help='results and scratch directory')
    ap.add_argument('--clients', default='1,2', help='client connections (comma list)')
    ap.add_argument('--seconds', type=float, default=seconds, help='timed seconds per run')
    ap.add_argument('--rounds', type=int, default=3, help='interleaved rounds')
    ap.add_argument('--configs', default=','.join(configs),
                    help=f'configurations, comma list (known: {", ".join(CONFIGS)})')
    ap.add_argument('--counts', action='store_true',
                    help='after the timed rounds, one counting run per configuration: reads, '
                         'syscalls (perf, system-wide) and CPU (cpuacct) per query')
    ap.add_argument('--reload', action='store_true', help='build the data directory again')
    ap.add_argument('--json', default=None, help='JSON lines file (default OUT/postgres.jsonl)')


def parse_configs(text):
    names = [c for c in text.split(',') if c]
    for c in names:
        if c not in CONFIGS:
            sys.exit(f'unknown configuration {c} (known: {", ".join(CONFIGS)})')
    if len(set(names)) != len(names):
        sys.exit('a configuration is listed twice (the A/A control is vanilla-aa)')
    return names


def finish_args(args):
    if args.seconds < MIN_SECONDS:
        sys.exit(f'--seconds must be at least {MIN_SECONDS}')
    os.makedirs(args.out, exist_ok=True)
    args.json = args.json or os.path.join(args.out, 'postgres.jsonl')
    return Servers(os.path.join(args.out, 'scratch'))


def latency_percentiles(prefix):
    """p50 and p95 latency (ms) from pgbench's per-transaction logs PREFIX.* (the third field
    is the latency in microseconds); the logs are removed."""
    lat = []
    for path in glob.glob(prefix + '.*'):
        with open(path) as f:
            lat.extend(int(line.split()[2]) for line in f if line.strip())
        os.remove(path)
    if not lat:
        return None, None
    lat.sort()
    return (round(lat[len(lat) // 2] / 1000.0, 3), round(lat[min(len(lat) - 1, (len(lat) * 95) // 100)] / 1000.0, 3))


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
        cpu = CpuCgroup.for_server(flavor)
        if cpu:
            cpu.add_server(self.data_dir(flavor))

    def postmaster_pid(self, flavor):
        with open(os.path.join(self.data_dir(flavor), 'postmaster.pid')) as f:
            return int(f.readline())

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


def cgroup_name(flavor):
    """The cgroups of a server are named after it and its port: two checkouts' servers
    (CALICO_PG_PORT_BASE) never share one, nor its counters."""
    return f'calico-pg-bench-{flavor}-{PORTS[flavor]}'


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

    @classmethod
    def available(cls):
        return os.path.isdir(cls.ROOT) and os.access(cls.ROOT, os.W_OK)

    def add_server(self, data_dir):
        with open(os.path.join(data_dir, 'postmaster.pid')) as f:
            pid = f.readline().strip()
        # the postmaster's children (already forked ones too) join with it; later children
        # are born in it
        pids = [pid] + subprocess.run(['pgrep', '-P', pid], capture_output=True,
                                      text=True).stdout.split()
        for p in pids:
            with open(os.path.join(self.path, 'cgroup.procs'), 'w') as f:
                f.write(p)


class CpuCgroup(MemoryCgroup):
    """A cgroup-v1 cpuacct group per server: cpuacct.usage is the CPU time of every process
    of the server (backends, I/O workers, background processes), in ns."""

    ROOT = '/sys/fs/cgroup/cpuacct'

    def __init__(self, name):  # pylint: disable=super-init-not-called
        self.path = os.path.join(self.ROOT, name)
        os.makedirs(self.path, exist_ok=True)

    @classmethod
    def for_server(cls, flavor):
        return cls(cgroup_name(flavor)) if cls.available() else None

    def usage_ns(self):
        with open(os.path.join(self.path, 'cpuacct.usage')) as f:
            return int(f.read())


def loadavg():
    with open('/proc/loadavg') as f:
        return ' '.join(f.read().split()[:3])


def disk_of(path):
    """The /proc/diskstats name of the device holding path."""
    dev = os.stat(path).st_dev
    with open('/proc/diskstats') as f:
        for line in f:
            p = line.split()
            if int(p[0]) == os.major(dev) and int(p[1]) == os.minor(dev):
                return p[2]
    return None


def disk_reads(name):
    """(reads completed, sectors read, weighted ms of I/O in flight) of a /proc/diskstats
    device; the last one's growth over elapsed ms is the mean queue depth (Little's law)."""
    with open('/proc/diskstats') as f:
        for line in f:
            p = line.split()
            if p[2] == name:
                return int(p[3]), int(p[5]), int(p[13])
    return 0, 0, 0


class Counters:
    """What one server does during a run: its CPU (cpuacct), block reads into shared buffers
    (pg_stat_io, all backend types), the device's reads (/proc/diskstats), calico's prefetch
    counters (pg_calico_stats) and, with syscalls=True, every syscall on the machine
    (perf stat -a -e raw_syscalls:sys_enter; the pgbench client's few per query included)."""

    IO_SQL = ("SELECT coalesce(sum(reads), 0), coalesce(sum(read_bytes), 0), coalesce(sum(hits), 0), "
              "coalesce(sum(writes), 0), coalesce(sum(evictions), 0), coalesce(sum(fsyncs), 0) "
              "FROM pg_stat_io WHERE object = 'relation'")
    # the WAL: writes and fsyncs by every backend type (PostgreSQL 18 counts them in pg_stat_io)
    WAL_SQL = ("SELECT coalesce(sum(writes), 0), coalesce(sum(fsyncs), 0), "
               "(SELECT wal_records FROM pg_stat_wal) FROM pg_stat_io WHERE object = 'wal'")

    def __init__(self, servers, flavor, db, syscalls):
        self.s, self.flavor, self.db, self.syscalls = servers, flavor, db, syscalls
        self.disk = disk_of(servers.scratch)
        self.cpu = CpuCgroup.for_server(flavor)

    def _snap(self):
        io = [int(float(x)) for x in self.s.psql(self.flavor, self.IO_SQL, db=self.db).strip().split('|')]
        wal = [int(float(x)) for x in self.s.psql(self.flavor, self.WAL_SQL, db=self.db).strip().split('|')]
        snap = {'io_reads': io[0], 'io_read_bytes': io[1], 'hits': io[2], 'io_writes': io[3],
                'evictions': io[4], 'io_fsyncs': io[5], 'wal_writes': wal[0], 'wal_fsyncs': wal[1],
                'wal_records': wal[2],
                'cpu_ns': self.cpu.usage_ns() if self.cpu else 0,
                'client_cpu_s': sum(getattr(resource.getrusage(resource.RUSAGE_CHILDREN), f)
                                    for f in ('ru_utime', 'ru_stime'))}
        if self.flavor == 'calico':
            v = self.s.psql(self.flavor, 'SELECT prefetch_resident, prefetch_io FROM pg_calico_stats()',
                            db=self.db).strip().split('|')
            snap['prefetch_resident'], snap['prefetch_io'] = int(v[0]), int(v[1])
        return snap

    def start(self):
        self.before = self._snap()
        self.perf = None
        if self.syscalls and shutil.which('perf'):
            self.perf_out = os.path.join(self.s.scratch, 'perf-syscalls.txt')
            self.perf = subprocess.Popen(['perf', 'stat', '-a', '-x', ',', '-e', 'raw_syscalls:sys_enter',
                                          '-o', self.perf_out], stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
            time.sleep(0.3)  # perf attaches to every CPU
        self.disk0 = (disk_reads(self.disk) if self.disk else (0, 0, 0), time.time())

    def stop(self, queries):
        """Per-query counts since start()."""
        disk1 = (disk_reads(self.disk) if self.disk else (0, 0, 0), time.time())
        syscalls = None
        if self.perf:
            self.perf.send_signal(2)
            self.perf.wait(timeout=30)
            with open(self.perf_out) as f:
                for line in f:
                    if 'raw_syscalls:sys_enter' in line:
                        syscalls = int(line.split(',')[0])
        time.sleep(0.5)  # exiting backends flush their I/O statistics
        after = self._snap()
        b = self.before
        q = max(1, queries)
        elapsed_ms = max(1.0, (disk1[1] - self.disk0[1]) * 1000)
        d0, d1 = self.disk0[0], disk1[0]
        out = {'queries': queries,
               'io_reads_per_query': round((after['io_reads'] - b['io_reads']) / q, 2),
               'blocks_read_per_query': round((after['io_read_bytes'] - b['io_read_bytes']) / 8192 / q, 2),
               'buffer_hits_per_query': round((after['hits'] - b['hits']) / q, 1),
               # pages written out of shared buffers (by any process), buffers evicted, and
               # the WAL's writes and fsyncs: what a write-heavy run spends beside its reads
               'io_writes_per_query': round((after['io_writes'] - b['io_writes']) / q, 3),
               'evictions_per_query': round((after['evictions'] - b['evictions']) / q, 3),
               'relation_fsyncs_per_query': round((after['io_fsyncs'] - b['io_fsyncs']) / q, 4),
               'wal_writes_per_query': round((after['wal_writes'] - b['wal_writes']) / q, 3),
               'wal_fsyncs_per_query': round((after['wal_fsyncs'] - b['wal_fsyncs']) / q, 3),
               'wal_records_per_query': round((after['wal_records'] - b['wal_records']) / q, 2),
               'device_reads_per_query': round((d1[0] - d0[0]) / q, 2),
               'device_kb_per_query': round((d1[1] - d0[1]) / 2 / q, 1),
               # over the pgbench run (and a pgbench start-up)
               'device_reads_per_s': round((d1[0] - d0[0]) / elapsed_ms * 1000),
               'device_mean_queue_depth': round((d1[2] - d0[2]) / elapsed_ms, 2),
               'server_cpu_us_per_query': round((after['cpu_ns'] - b['cpu_ns']) / 1000 / q, 1) if self.cpu else None,
               'client_cpu_us_per_query': round((after['client_cpu_s'] - b['client_cpu_s']) * 1e6 / q, 1)}
        if syscalls is not None:
            out['syscalls_per_query'] = round(syscalls / q, 1)
        if 'prefetch_io' in after:
            out['prefetch_reads_started_per_query'] = round((after['prefetch_io'] - b['prefetch_io']) / q, 2)
            out['prefetch_resident_per_query'] = round((after['prefetch_resident'] - b['prefetch_resident']) / q, 2)
        return out


class Rounds:
    """Runs configurations in interleaved rounds. switch(name) leaves only that
    configuration's server up, started afresh with base settings + its own, inside its
    memory cgroup if any, and calls prepare(flavor) (a prewarm, say)."""

    def __init__(self, servers, base_settings, cgroups=None, prepare=None):
        self.s, self.base, self.cgroups, self.prepare = servers, base_settings, cgroups or {}, prepare

    def switch(self, name):
        flavor, start, _ = CONFIGS[name]
        self.s.stop_all()
        self.s.start(flavor, dict(self.base, **start), cgroup=self.cgroups.get(flavor))
        if self.prepare:
            self.prepare(flavor)
        return flavor

    @staticmethod
    def order(configs, rnd):
        k = rnd % len(configs)
        return configs[k:] + configs[:k]


def run_fields(name):
    """The fields every run line carries about its configuration and the machine's load."""
    flavor, start, opts = CONFIGS[name]
    return {'config': name, 'server': flavor, 'io_method': start.get('io_method'),
            'session': opts}


def paired_summary(runs, metric):
    """Medians per configuration and, for every configuration, the median of its paired
    (same round) ratios against each vanilla io_method and against the best vanilla (the
    vanilla configuration with the highest median)."""
    med = {c: median(v) for c, v in runs.items() if v}
    vanillas = [c for c in VANILLA if c in med]
    out = {metric: {c: round(v, 3) for c, v in med.items()}}
    if vanillas:
        best = max(vanillas, key=lambda c: med[c])
        out['baseline'] = best
        out['ratio_vs_baseline'] = {c: round(median([a / b for a, b in zip(runs[c], runs[best])]), 3)
                                    for c in med if c != best}
    if 'calico-direct' in med and 'vanilla-direct' in med:
        out['direct_ratio'] = round(median([a / b for a, b in zip(runs['calico-direct'], runs['vanilla-direct'])]), 3)
    if 'vanilla-aa' in med and 'vanilla-worker' in med:
        out['aa_ratio'] = round(median([a / b for a, b in zip(runs['vanilla-aa'], runs['vanilla-worker'])]), 3)
    return out


class Progress:
    """Logs fn() every period_s seconds on stderr while a long step runs (with-block)."""

    def __init__(self, what, fn, period_s=20.0):
        self.what, self.fn, self.period_s = what, fn, period_s
        self.done = threading.Event()

    def _loop(self):
        t0 = time.time()
        while not self.done.wait(self.period_s):
            try:
                log(f'{self.what}: {self.fn()} ({time.time() - t0:.0f} s)')
            except Exception as e:  # noqa: BLE001  (progress is best effort)
                log(f'{self.what}: (no progress: {e})')

    def __enter__(self):
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()


def relation_files(servers, flavor, db, where):
    """The files of the relations `SELECT ... FROM pg_class WHERE where` selects in flavor's
    data directory: every 1 GB segment of each main fork (base/DB/NODE, NODE.1, ...)."""
    rel = servers.psql(flavor, f'SELECT pg_relation_filepath(oid) FROM pg_class WHERE {where}', db=db).split()
    files = []
    for r in rel:
        first = os.path.join(servers.data_dir(flavor), r)
        files += [first] + sorted(glob.glob(first + '.[0-9]*'), key=lambda f: int(f.rsplit('.', 1)[1]))
    return [f for f in files if os.path.exists(f)]


def files_mb(files):
    return sum(os.path.getsize(f) for f in files) / 2 ** 20


def page_cache_mb(files):
    """MB of files resident in the OS page cache (fincore, util-linux's mincore(2) tool)."""
    if not files:
        return 0.0
    out = subprocess.run(['fincore', '--bytes', '--noheadings', '--output', 'RES'] + files,
                         check=True, capture_output=True, text=True).stdout
    return sum(int(x) for x in out.split()) / 2 ** 20


def evict_page_cache(files):
    """Drops files' clean pages from the OS page cache (written back first), without root."""
    os.sync()
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


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
    commit = subprocess.run(['git', '-C', REPO, 'describe', '--always', '--dirty', '--abbrev=7'],
                            capture_output=True, text=True).stdout.strip()
    nproc = subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()
    return {'cpu': cpu, 'cores': os.cpu_count(), 'nproc': int(nproc or 0), 'mem_gib': round(mem_kb / 2**20, 1),
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


def timed_pgbench(servers, flavor, args, db, options=None):
    """One timed pgbench run: (tps, latency_ms, transactions, fields with /proc/loadavg at
    its start and end)."""
    la0 = loadavg()
    tps, lat, txs = servers.pgbench(flavor, args, db=db, options=options)
    return tps, lat, txs, {'loadavg_start': la0, 'loadavg_end': loadavg()}
