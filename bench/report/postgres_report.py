#!/usr/bin/env python3
"""Tables (markdown, stdout) and figures (PNG) from the PostgreSQL benchmarks' JSON lines.
Usage: postgres_report.py JSONL [OUTDIR]   (default OUTDIR: the JSONL's directory)"""
import json
import os
import sys

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402

CONFIGS = ['vanilla', 'calico-array', 'calico+opt', 'calico']


def save(fig, ax, path, title):
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def section(records, bench, title, header):
    """The summary records of a benchmark, after printing its title and table header."""
    summ = latest(records, bench=bench, kind='summary')
    if summ:
        print(title(summ[-1]) + '\n')
        print('| ' + ' | '.join(header) + ' |')
        print('|' + '---|' * len(header))
    return summ


def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def latest(records, **match):
    """The newest record per key among those matching."""
    return [r for r in records if all(r.get(k) == v for k, v in match.items())]


def vector(records, out):
    summ = latest(records, bench='pg_vector', kind='summary')
    if not summ:
        return
    rec = {(r['mode'], r['ef'], r['clients']): r for r in summ}
    recall = {(r['mode'], r['ef']): r for r in latest(records, bench='pg_vector', kind='recall')}
    any_r = summ[-1]
    print(f"### pgvector HNSW ({any_r['n']} x {any_r['dim']}, M={any_r['M']}, ef_construction="
          f"{any_r['ef_construction']}; index {any_r['index_mb']} MB, table {any_r['table_mb']} MB)\n")
    print('QPS (median of interleaved rounds) and speedup over vanilla (median of paired ratios).\n')
    print('| mode | shared_buffers | ef | recall@10 | clients | ' + ' | '.join(CONFIGS) + ' | calico / vanilla |')
    print('|---|---|---|---|---|' + '---|' * (len(CONFIGS) + 1))
    for (mode, ef, clients), r in sorted(rec.items(), key=lambda kv: (['inmem', 'ltm-drop', 'ltm-cg'].index(kv[0][0]), kv[0][1], kv[0][2])):
        rc = recall.get((mode, ef), {})
        sp = r.get('speedup_vs_vanilla', {})
        print(f"| {mode} | {r['shared_buffers']} | {ef} | {rc.get('recall', '')} | {clients} | " +
              ' | '.join(f"{r['qps'].get(c, '')}" for c in CONFIGS) +
              f" | **{sp.get('calico', '')}x** (array {sp.get('calico-array', '')}x, +opt {sp.get('calico+opt', '')}x) |")
    print()
    for mode in ('inmem', 'ltm-drop', 'ltm-cg'):
        rows = [(k, r) for k, r in rec.items() if k[0] == mode]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(7, 4))
        labels, width = [], 0.2
        keys = sorted(k for k, _ in rows)
        for i, c in enumerate(CONFIGS):
            ax.bar([j + i * width for j in range(len(keys))], [rec[k]['qps'].get(c, 0) for k in keys], width, label=c)
        ax.set_xticks([j + 1.5 * width for j in range(len(keys))])
        ax.set_xticklabels([f'ef {k[1]}\n{k[2]} client(s)' for k in keys], fontsize=8)
        ax.set_ylabel('queries / s')
        save(fig, ax, os.path.join(out, f'pg_vector_{mode}.png'), f'pgvector HNSW, {mode}')


def scan(records, out):
    summ = section(records, 'pg_scan', lambda r: f"### Heap SUM scans (in memory, tables of ~{r['table_mb']} MB, "
                   f"shared_buffers {r['shared_buffers']})",
                   ['row size', 'clients', 'vanilla GB/s', 'calico GB/s', 'calico / vanilla'])
    if not summ:
        return
    rec = {(r['row_size'], r['clients']): r for r in summ}
    for (size, clients), r in sorted(rec.items()):
        print(f"| {size} B | {clients} | {r['gb_per_s']['vanilla']} | {r['gb_per_s']['calico']} | {r['speedup']}x |")
    geos = {g['clients']: g['speedup'] for g in latest(records, bench='pg_scan', kind='geomean')}
    print('\nGeomean speedup: ' + ', '.join(f'{c} client(s) {v}x' for c, v in sorted(geos.items())) + '\n')
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for clients in sorted({k[1] for k in rec}):
        ks = sorted(k for k in rec if k[1] == clients)
        ax.plot([k[0] for k in ks], [rec[k]['speedup'] for k in ks], marker='o', label=f'{clients} client(s)')
    ax.axhline(1.0, color='grey', lw=0.8)
    ax.set_xscale('log', base=2)
    ax.set_xlabel('row size (bytes)')
    ax.set_ylabel('calico / vanilla')
    save(fig, ax, os.path.join(out, 'pg_scan.png'), 'SELECT sum(val): speedup over vanilla')


def oltp(records, out):
    summ = section(records, 'pg_oltp', lambda r: f"### pgbench (scale {r['scale']}, {r['db_mb']} MB, "
                   f"synchronous_commit off)",
                   ['mode', 'shared_buffers', 'workload', 'clients', 'vanilla tps', 'calico tps', 'calico / vanilla'])
    if not summ:
        return
    rec = {(r['mode'], r['workload'], r['clients']): r for r in summ}
    for (mode, w, c), r in sorted(rec.items()):
        print(f"| {mode} | {r['shared_buffers']} | {w} | {c} | {r['tps']['vanilla']} | {r['tps']['calico']} | {r['speedup']}x |")
    print()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    records = load(sys.argv[1])
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(sys.argv[1]))
    os.makedirs(out, exist_ok=True)
    vector(records, out)
    scan(records, out)
    oltp(records, out)


if __name__ == '__main__':
    main()
