#!/usr/bin/env bash
# The pgbench benchmark's larger-than-memory premise (postgres/tests/run.sh): bench/postgres/
# pg_oltp.py --modes ltm compares the pools with the OS page cache holding the database on
# every server alike. Each server reads its own copy of the data directory, so unless the
# harness warms them, whichever copy more configurations use fills faster and its
# configurations look faster (vanilla's serves three io_methods, calico's one: that made a
# 0.46x loss of calico's out of nothing). Here both copies start evicted from the page cache;
# then every timed run must find at least 95% of the pgbench relations of its own server
# resident (the run line's page_cache_mb against relations_mb).
# Usage: bench_oltp.sh TMPDIR
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$1/oltp
mkdir -p "$OUT"
chmod 755 "$OUT"
OLTP=(python3 "$ROOT/bench/postgres/pg_oltp.py" --out "$OUT" --scale 2)
"${OLTP[@]}" --load-only
ROOT="$ROOT" python3 - "$OUT/scratch/postgres" <<'EOF'
import glob, os, sys
sys.path.insert(0, os.path.join(os.environ['ROOT'], 'bench', 'postgres'))
from common import evict_page_cache, page_cache_mb
for flavor in ('vanilla', 'calico'):
    files = glob.glob(os.path.join(sys.argv[1], flavor, 'data', 'base', '*', '*'))
    evict_page_cache(files)
    left = page_cache_mb(files)
    print(f'{flavor}: {len(files)} files evicted from the page cache, {left:.1f} MB left')
    if left > 1:
        sys.exit(f'bench_oltp: could not evict {flavor}\'s data directory from the page cache')
EOF
"${OLTP[@]}" --modes ltm --workloads select --clients 1 --seconds 1 --rounds 2 \
  --configs vanilla-worker,vanilla-aa,calico --json "$OUT/runs.jsonl"
python3 - "$OUT/runs.jsonl" <<'EOF'
import json, sys
runs = [r for r in map(json.loads, open(sys.argv[1])) if r['kind'] == 'run']
assert len(runs) == 6, f'expected 6 timed runs (3 configurations x 2 rounds), got {len(runs)}'
for r in runs:
    have, size = r.get('page_cache_mb'), r.get('relations_mb')
    print(f"round {r['round']} {r['config']}: {have} of {size} MB of pgbench relations in the page cache")
    assert size and size > 20, f'{r["config"]}: no pgbench relations measured ({size} MB)'
    assert have >= 0.95 * size, f'{r["config"]} round {r["round"]}: page cache cold ({have} of {size} MB)'
print('bench_oltp: every timed run began with its server\'s pgbench relations in the page cache')
EOF
