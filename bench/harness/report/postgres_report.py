#!/usr/bin/env python3
"""Tables (markdown, stdout) and figures (PNG) from the PostgreSQL benchmarks' JSON lines
(bench/postgres/pg_vector.py, pg_scan.py, pg_oltp.py): [Calico] Figures 8 (pgvector) and 9a
(heap scans), plus pgbench.
Usage: postgres_report.py JSONL [JSONL...] [--out OUTDIR]   (default OUTDIR: the first JSONL's directory)

Every ratio is the median of paired (same round) ratios against the baseline: the vanilla
io_method (sync, worker, io_uring) with the highest median at that point, as the benchmark
recorded it in its summary line. When several summary lines share a key, the last one wins.
"""
import argparse
import json
import math
import os

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402

VANILLA = ['vanilla-sync', 'vanilla-worker', 'vanilla-io_uring']
OTHER_VANILLA = ['vanilla-direct']
CALICO = ['calico-array', 'calico+opt', 'calico', 'calico-noadapt', 'calico-worker', 'calico-sync', 'calico-direct']
MODES = ['inmem', 'ltm-cg', 'ltm-drop', 'common']


def load(paths):
    out = []
    for p in paths:
        with open(p) as f:
            out += [json.loads(line) for line in f if line.strip()]
    return out


def pick(records, **match):
    return [r for r in records if all(r.get(k) == v for k, v in match.items())]


def fmt(x, digits=1):
    if x is None:
        return ''
    if isinstance(x, float):
        return f'{x:.{digits}f}'
    return str(x)


def loads_of(runs):
    """The range of the 1-minute load average over runs' starts and ends."""
    la = [float(r[k].split()[0]) for r in runs for k in ('loadavg_start', 'loadavg_end') if k in r]
    return f'{min(la):.2f}-{max(la):.2f}' if la else 'n/a'


def save(fig, ax, path, title):
    """Writes the figure and prints its Markdown image link, relative to the directory that
    holds the figures' directory (where the page that includes these tables lives)."""
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    rel = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(path))), os.path.basename(path))
    print(f'![{title}]({rel})\n')


def fio_at(fio, depth):
    """fio's IOPS at a (fractional) queue depth: log-log interpolation between the measured
    depths (below the smallest: its value; above the largest: the largest's)."""
    ds = sorted(fio)
    if depth <= ds[0]:
        return fio[ds[0]]
    for lo, hi in zip(ds, ds[1:]):
        if depth <= hi:
            t = (math.log(depth) - math.log(lo)) / (math.log(hi) - math.log(lo))
            return math.exp(math.log(fio[lo]) + t * (math.log(fio[hi]) - math.log(fio[lo])))
    return fio[ds[-1]]


def device(records):
    """fio's IOPS per depth, and each ltm-cg counting run's device reads per second against
    fio at the run's mean queue depth."""
    fio = {r['depth']: r['iops'] for r in pick(records, bench='pg_fio')}
    if not fio:
        return
    runs = pick(records, bench='pg_fio')
    print(f"### The device (fio, 8 KB random reads, O_DIRECT, io_uring, {runs[-1]['seconds']} s per depth; "
          f"load average {loads_of(runs)})\n")
    print('| queue depth | ' + ' | '.join(str(d) for d in sorted(fio)) + ' |')
    print('|---|' + '---|' * len(fio))
    print('| IOPS | ' + ' | '.join(str(fio[d]) for d in sorted(fio)) + ' |\n')
    counts = [c for c in pick(records, bench='pg_vector', kind='counts', mode='ltm-cg') if c.get('device_reads_per_s')]
    if counts:
        print('Larger than memory (ltm-cg counting runs): the device reads each server drove, against fio at the '
              'same mean queue depth (/proc/diskstats: weighted ms in flight / elapsed ms).\n')
        print('| dataset | config | clients | QPS | device reads/s | mean queue depth | fio IOPS at that depth | '
              'share of fio |')
        print('|---|---|---|---|---|---|---|---|')
        for c in sorted(counts, key=lambda r: (r['dataset'], -r['n'], r['clients'], (VANILLA + OTHER_VANILLA + CALICO).index(r['config']))):
            f = fio_at(fio, max(1.0, c['device_mean_queue_depth']))
            print(f"| {c['dataset']} {c['n']} | {c['config']} | {c['clients']} | {c['qps']} | {c['device_reads_per_s']} | "
                  f"{c['device_mean_queue_depth']} | {f:.0f} | {c['device_reads_per_s'] / f:.2f} |")
        print()


def vector(records, out):
    summ = pick(records, bench='pg_vector', kind='summary')
    if not summ:
        return
    sets = sorted({(r['dataset'], r['n'], r['dim']) for r in summ}, key=lambda t: (t[0], -t[1]))
    for dset, n, dim in sets:
        rs = [r for r in summ if (r['dataset'], r['n'], r['dim']) == (dset, n, dim)]
        one = rs[-1]
        recall = {r['ef']: r for r in pick(records, bench='pg_vector', kind='recall', dataset=dset, n=n, dim=dim)}
        print(f"### pgvector HNSW, {dset} {n} x {dim} ({one['metric']}, M={one['M']}, ef_construction="
              f"{one['ef_construction']}; index {one['index_mb']} MB, table {one['table_mb']} MB)\n")
        for mode in MODES:
            mr = {(r['ef'], r['clients']): r for r in rs if r['mode'] == mode}
            if not mr:
                continue
            r0 = next(iter(mr.values()))
            runs = pick(records, bench='pg_vector', kind='run', dataset=dset, n=n, dim=dim, mode=mode)
            cg = f", memory cgroup {r0['cgroup_mb']} MB per server" if r0.get('cgroup_mb') else ''
            print(f"**{mode}**: shared_buffers {r0['shared_buffers']}{cg}; {r0['rounds']} rounds of "
                  f"{fmt(runs[0].get('seconds')) if runs else '?'} s per run; load average {loads_of(runs)}.\n")
            configs = [c for c in VANILLA + OTHER_VANILLA + CALICO if any(c in r['qps'] for r in mr.values())]
            extra = [c for c in ('calico-noadapt', 'calico-sync', 'calico-direct') if c in configs]
            direct = any('direct_ratio' in r for r in mr.values())
            print('| ef | recall@10 | clients | ' + ' | '.join(configs) +
                  ' | baseline | calico / baseline | ablation / baseline (array, +opt) | ' +
                  ''.join(f'{c} / baseline | ' for c in extra) +
                  ('calico-direct / vanilla-direct | ' if direct else '') + 'A/A |')
            print('|---|---|---|' + '---|' * (len(configs) + 4 + len(extra) + direct))
            for (ef, clients), r in sorted(mr.items()):
                ratio = r.get('ratio_vs_baseline', {})
                ablation = ', '.join(f'{ratio[c]}x' if c in ratio else 'not run' for c in ('calico-array', 'calico+opt'))
                print(f"| {ef} | {recall.get(ef, {}).get('recall', '')} | {clients} | " +
                      ' | '.join(fmt(r['qps'].get(c)) for c in configs) +
                      f" | {r.get('baseline', '')} | **{ratio.get('calico', '')}x** | {ablation} | " +
                      ''.join(f"{ratio.get(c, '')}x | " for c in extra) +
                      (f"{r.get('direct_ratio', '')}x | " if direct else '') + f"{r.get('aa_ratio', '')} |")
            print()
            counts = pick(records, bench='pg_vector', kind='counts', dataset=dset, n=n, dim=dim, mode=mode)
            if counts:
                print(f'Counts per query ({mode}, one counting run per configuration, ef '
                      f"{counts[0]['ef']}; syscalls system-wide, the pgbench client's included):\n")
                print('| config | clients | QPS | blocks read into shared buffers | buffer hits | device reads | '
                      'syscalls | server CPU µs | prefetch reads started | device queue depth |')
                print('|---|---|---|---|---|---|---|---|---|---|')
                for c in sorted(counts, key=lambda r: (r['clients'], (VANILLA + OTHER_VANILLA + CALICO).index(r['config']))):
                    print(f"| {c['config']} | {c['clients']} | {c['qps']} | {c['blocks_read_per_query']} | "
                          f"{c['buffer_hits_per_query']} | {c['device_reads_per_query']} | "
                          f"{c.get('syscalls_per_query', '')} | {c.get('server_cpu_us_per_query', '')} | "
                          f"{c.get('prefetch_reads_started_per_query', '')} | {c.get('device_mean_queue_depth', '')} |")
                print()
            fig, ax = plt.subplots(figsize=(7.5, 3.8))
            keys = sorted(mr)
            width = 0.8 / len(configs)
            for i, c in enumerate(configs):
                ax.bar([j + i * width for j in range(len(keys))], [mr[k]['qps'].get(c, 0) for k in keys], width,
                       label=c)
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))])
            ax.set_xticklabels([f'ef {k[0]}\n{k[1]} client(s)' for k in keys], fontsize=8)
            ax.set_ylabel('queries / s')
            save(fig, ax, os.path.join(out, f'pg_vector_{dset}_{n}_{mode}.png'),
                 f'pgvector HNSW {dset} {n} x {dim}, {mode}')


def scan(records, out):
    summ = pick(records, bench='pg_scan', kind='summary')
    if not summ:
        return
    rec = {(r['row_size'], r['clients']): r for r in summ}
    runs = pick(records, bench='pg_scan', kind='run')
    one = summ[-1]
    configs = [c for c in VANILLA + CALICO if any(c in r['gb_per_s'] for r in rec.values())]
    print(f"### Heap SUM scans (in memory, tables of ~{one['table_mb']} MB, shared_buffers {one['shared_buffers']}; "
          f"{one['rounds']} rounds of {fmt(runs[0].get('seconds')) if runs else '?'} s; load average {loads_of(runs)})\n")
    print('GB/s (median) and calico / baseline (median of paired ratios).\n')
    print('| row size | clients | ' + ' | '.join(configs) + ' | baseline | calico / baseline |')
    print('|---|---|' + '---|' * len(configs) + '---|---|')
    for (size, clients), r in sorted(rec.items()):
        print(f"| {size} B | {clients} | " + ' | '.join(fmt(r['gb_per_s'].get(c), 2) for c in configs) +
              f" | {r.get('baseline', '')} | **{r.get('ratio_vs_baseline', {}).get('calico', '')}x** |")
    geos = {g['clients']: g['speedup'] for g in pick(records, bench='pg_scan', kind='geomean')}
    print('\nGeomean of calico / baseline: ' + ', '.join(f'{c} client(s) {v}x' for c, v in sorted(geos.items())) + '\n')
    counts = pick(records, bench='pg_scan', kind='counts')
    if counts:
        print('Counts per scan (1 client):\n')
        print('| config | row size | scans/s | buffer hits | blocks read | syscalls | server CPU µs |')
        print('|---|---|---|---|---|---|---|')
        for c in sorted(counts, key=lambda r: (r['row_size'], (VANILLA + CALICO).index(r['config']))):
            print(f"| {c['config']} | {c['row_size']} B | {c['scans_per_s']} | {c['buffer_hits_per_query']} | "
                  f"{c['blocks_read_per_query']} | {c.get('syscalls_per_query', '')} | "
                  f"{c.get('server_cpu_us_per_query', '')} |")
        print()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for clients in sorted({k[1] for k in rec}):
        ks = sorted(k for k in rec if k[1] == clients)
        ax.plot([k[0] for k in ks], [rec[k].get('ratio_vs_baseline', {}).get('calico', math.nan) for k in ks],
                marker='o', label=f'{clients} client(s)')
    ax.axhline(1.0, color='grey', lw=0.8)
    ax.set_xscale('log', base=2)
    ax.set_xlabel('row size (bytes)')
    ax.set_ylabel('calico / best vanilla')
    save(fig, ax, os.path.join(out, 'pg_scan.png'), 'SELECT sum(val): calico over the best vanilla io_method')


def oltp(records, out):  # pylint: disable=unused-argument
    summ = pick(records, bench='pg_oltp', kind='summary')
    if not summ:
        return
    rec = {(r['mode'], r['workload'], r['clients']): r for r in summ}
    runs = pick(records, bench='pg_oltp', kind='run')
    one = summ[-1]
    configs = [c for c in VANILLA + CALICO if any(c in r['tps'] for r in rec.values())]
    aa = any('aa_ratio' in r for r in rec.values())
    print(f"### pgbench (scale {one['scale']}, {one['db_mb']} MB, synchronous_commit off; {one['rounds']} rounds "
          f"of {fmt(runs[0].get('seconds')) if runs else '?'} s; load average {loads_of(runs)})\n")
    def page_cache(mode, w, c):
        # ltm: the least of the pgbench relations any timed run of the point found in the OS
        # page cache at its start (each server reads its own copy of the data directory)
        if mode != 'ltm':
            return ''
        shares = [r['page_cache_mb'] / r['relations_mb'] for r in runs
                  if (r['mode'], r['workload'], r['clients']) == (mode, w, c) and r.get('relations_mb')]
        return f'{min(shares):.0%}' if shares else 'not recorded'

    print('| mode | shared_buffers | workload | clients | ' + ' | '.join(configs) + ' | baseline | calico / baseline |' +
          (' A/A |' if aa else '') + ' page cache at start (least) |')
    print('|---|---|---|---|' + '---|' * len(configs) + '---|---|' + ('---|' if aa else '') + '---|')
    for (mode, w, c), r in sorted(rec.items()):
        print(f"| {mode} | {r['shared_buffers']} | {w} | {c} | " + ' | '.join(fmt(r['tps'].get(x)) for x in configs) +
              f" | {r.get('baseline', '')} | **{r.get('ratio_vs_baseline', {}).get('calico', '')}x** |" +
              (f" {r.get('aa_ratio', '')} |" if aa else '') + f' {page_cache(mode, w, c)} |')
    print()
    counts = pick(records, bench='pg_oltp', kind='counts')
    if counts:
        print('Counts per transaction (one counting run per configuration; pg_stat_io of every backend type; '
              'syscalls system-wide, the pgbench client\'s included):\n')
        print('| mode | workload | clients | config | TPS | server CPU µs | buffer hits | blocks read | '
              'blocks written | evictions | WAL writes | WAL fsyncs | syscalls |')
        print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
        for c in sorted(counts, key=lambda r: (r['mode'], r['workload'], r['clients'],
                                               (VANILLA + CALICO).index(r['config']))):
            print(f"| {c['mode']} | {c['workload']} | {c['clients']} | {c['config']} | {fmt(c['tps'])} | "
                  f"{fmt(c.get('server_cpu_us_per_query'))} | {fmt(c['buffer_hits_per_query'])} | "
                  f"{fmt(c['blocks_read_per_query'], 2)} | {fmt(c.get('io_writes_per_query'), 3)} | "
                  f"{fmt(c.get('evictions_per_query'), 3)} | {fmt(c.get('wal_writes_per_query'), 3)} | "
                  f"{fmt(c.get('wal_fsyncs_per_query'), 3)} | {fmt(c.get('syscalls_per_query'))} |")
        print()


def aims(records):
    """The aims of the PostgreSQL 18 work, each against what the JSON lines say. A ratio is
    the median of paired ratios against the best vanilla io_method; 'level' means at least
    LEVEL (the A/A control's spread is printed beside the vector rows)."""
    LEVEL = 0.95
    vec = pick(records, bench='pg_vector', kind='summary')
    rows = []

    def ratios(mode, clients, dataset='clustered'):
        rs = [r for r in vec if r['mode'] == mode and r['clients'] == clients and r['dataset'] == dataset]
        if not rs:
            return None, []
        n = max(r['n'] for r in rs)
        rs = {r['ef']: r for r in rs if r['n'] == n}
        return n, [(ef, rs[ef].get('ratio_vs_baseline', {}).get('calico')) for ef in sorted(rs)]

    def fmt_r(n, rs):
        return f'{n} x 128: ' + ', '.join(f'ef {ef} {r}x' for ef, r in rs if r is not None)

    for mode, clients, target, what in (('inmem', 1, 3.9, 'in memory, 1 client'),
                                        ('ltm-cg', 1, 5.8, 'larger than memory (cgroup), 1 client')):
        n, rs = ratios(mode, clients)
        if rs:
            got = [r for _, r in rs if r is not None]
            rows.append((what, f'>= {target}x', fmt_r(n, rs), 'yes' if got and min(got) >= target else
                         ('partly' if got and max(got) >= target else 'no')))
        else:
            rows.append((what, f'>= {target}x', 'not run', ''))
    fio = {r['depth']: r['iops'] for r in pick(records, bench='pg_fio')}
    dev = [c for c in pick(records, bench='pg_vector', kind='counts', mode='ltm-cg', config='calico', clients=2,
                           dataset='clustered') if c.get('device_reads_per_s')]
    if fio and dev:
        c = max(dev, key=lambda r: r['n'])
        f = fio_at(fio, max(1.0, c['device_mean_queue_depth']))
        share = c['device_reads_per_s'] / f
        rows.append(('device, larger than memory, 2 clients', '>= 80% of fio at equal depth',
                     f"{c['device_reads_per_s']} reads/s at mean depth {c['device_mean_queue_depth']}: "
                     f"{share:.0%} of fio's {f:.0f}", 'yes' if share >= 0.8 else 'no'))
    else:
        rows.append(('device, larger than memory, 2 clients', '>= 80% of fio at equal depth', 'not run', ''))
    geos = {g['clients']: g['speedup'] for g in pick(records, bench='pg_scan', kind='geomean')}
    rows.append(('heap SUM scans, geomean over row sizes', '>= 1.7x',
                 ', '.join(f'{c} client(s) {v}x' for c, v in sorted(geos.items())) or 'not run',
                 ('yes' if min(geos.values()) >= 1.7 else 'no') if geos else ''))
    ol = [r.get('ratio_vs_baseline', {}).get('calico') for r in pick(records, bench='pg_oltp', kind='summary')]
    ol = [r for r in ol if r is not None]
    rows.append(('pgbench (TPC-B-like, select-only)', f'level (>= {LEVEL}x)',
                 f'{min(ol)}x - {max(ol)}x over {len(ol)} points' if ol else 'not run',
                 ('yes' if min(ol) >= LEVEL else 'no') if ol else ''))
    com = [(r['ef'], r['clients'], r.get('ratio_vs_baseline', {}).get('calico')) for r in vec if r['mode'] == 'common']
    com = [x for x in com if x[2] is not None]
    rows.append(('the common configuration (16 MB pool, all in page cache)', f'level (>= {LEVEL}x)',
                 ', '.join(f'ef {e} {c}c {r}x' for e, c, r in sorted(com)) or 'not run',
                 ('yes' if min(x[2] for x in com) >= LEVEL else 'no') if com else ''))
    print('### The aims\n')
    print('| aim | target | measured (calico / best vanilla io_method) | met |')
    print('|---|---|---|---|')
    for r in rows:
        print('| ' + ' | '.join(r) + ' |')
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('jsonl', nargs='+')
    ap.add_argument('--out', default=None)
    args = ap.parse_args()
    records = load(args.jsonl)
    out = args.out or os.path.dirname(os.path.abspath(args.jsonl[0]))
    os.makedirs(out, exist_ok=True)
    aims(records)
    vector(records, out)
    device(records)
    scan(records, out)
    oltp(records, out)


if __name__ == '__main__':
    main()
