#!/usr/bin/env bash
# The rollback journal's cost (src/pool/journal.h, docs/results/atomic_flush.md): the demo
# workload (a space larger than the pool, loaded and flushed, then random reads and writes
# whose write-backs rewrite pages the flush made durable) with PoolOptions::atomic_flush on
# and off, in ROUNDS interleaved rounds (on, off, on, off, ...), plus an A/A pair of "on"
# runs per round. Appends one JSON line per run to OUT (the demo's, with atomic_flush,
# journal_pages and journal_syncs) and prints the median throughput ratio off/on and on/on.
#
# Usage: bench/experiments/atomic_flush.sh [OUT.jsonl (default atomic_flush.jsonl)]
# Environment: DATA_MB (256), POOL_MB (64), RUN_SECONDS (5), WRITES (0.2), ROUNDS (3), BENCH
# (build-test-release/calico_bench), DIR (a directory under /tmp).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 2,11p "$0"; exit 0 ;; esac
out=${1:-atomic_flush.jsonl}
bench=${BENCH:-build-test-release/calico_bench}
[ -x "$bench" ] || { echo "atomic_flush: $bench not built (bash scripts/test.sh release builds it)" >&2; exit 2; }
dir=${DIR:-$(mktemp -d /tmp/calico-atomic-flush-XXXXXX)/data}
run() {  # $1: on|off, $2: round
  local flag=()
  [ "$1" = on ] || flag=(--no-atomic-flush)
  "$bench" demo --data-mb "${DATA_MB:-256}" --pool-mb "${POOL_MB:-64}" --seconds "${RUN_SECONDS:-5}" \
    --write-fraction "${WRITES:-0.2}" --data-dir "$dir" --json "$out" "${flag[@]}" > /dev/null
  echo "round $2: atomic flush $1 done"
}
for r in $(seq 1 "${ROUNDS:-3}"); do
  run on "$r"; run off "$r"; run on "$r"
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"experiment":"demo"' in l and '"atomic_flush"' in l]
on = [r["ops_per_s"] for r in rows if r["atomic_flush"]]
off = [r["ops_per_s"] for r in rows if not r["atomic_flush"]]
# Per round: on, off, on. off/on against the round's first "on"; on/on is the A/A control.
rounds = len(off)
ratio = [off[i] / on[2 * i] for i in range(rounds)]
aa = [on[2 * i + 1] / on[2 * i] for i in range(rounds)]
print(f"ops/s median: on {statistics.median(on):.0f}, off {statistics.median(off):.0f}; "
      f"off/on median {statistics.median(ratio):.3f} (rounds {', '.join(f'{x:.3f}' for x in ratio)}); "
      f"A/A on/on median {statistics.median(aa):.3f} (rounds {', '.join(f'{x:.3f}' for x in aa)})")
jp = [r["journal_pages"] for r in rows if r["atomic_flush"]]
wb = [r["write_backs"] for r in rows if r["atomic_flush"]]
print(f"journal images per write-back (on): median {statistics.median([j / max(w, 1) for j, w in zip(jp, wb)]):.3f}")
PY
