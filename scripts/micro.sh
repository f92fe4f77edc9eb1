#!/usr/bin/env bash
# scripts/micro.sh [OUTDIR] [OPTIONS...]: the translation microbenchmarks of calico.txt
# (Tables 2, 3, 4, 6; Figures 1, 10, 11) at their default sizes on every translation of
# src/variants/registry.h, then regenerates docs/micro.md and docs/micro/*.png.
#
# Sets up the machine (scripts/setup.sh), builds a release tree (build-micro:
# RelWithDebInfo, CALICO_CHECKS_LEVEL=1, no tests) when needed, and writes into OUTDIR
# (default ./micro-results): micro.jsonl (every result), one log per experiment, and the pools'
# data files under OUTDIR/data while they run (removed afterwards). OPTIONS go to every
# subcommand, e.g. `scripts/micro.sh out --translations array,direct --repeat 7`
# (calico_bench scan --help lists the common options).
#
# Needs a quiet machine: about 15-25 minutes with eight translations, up to ~11 GB of RAM
# (every translation's pool is resident at once) and ~15 GB of disk for the memory sweep.
#
# scripts/micro.sh --quick [OUTDIR]: the headline ratios in a few minutes: scans (1 GB) and
# B+tree lookups (5M records) on direct, array, vmcache_2m, vmcache and hash_open, 5 rounds
# of runs of at least 0.5 s each; writes OUTDIR/micro.jsonl (default ./micro-quick) and
# docs/micro/quick.jsonl (with the machine and the commit), and prints the paired ratios.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
quick=false
if [[ "${1:-}" == --quick ]]; then
  quick=true
  shift
fi
OUT=${1:-$($quick && echo micro-quick || echo micro-results)}
[ $# -gt 0 ] && shift
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

bash "$ROOT/scripts/setup.sh"
cmake -S "$ROOT" -B "$ROOT/build-micro" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALICO_CHECKS_LEVEL=1 \
  -DCALICO_BUILD_TESTS=OFF > /dev/null
cmake --build "$ROOT/build-micro" --target calico_bench
BENCH="$ROOT/build-micro/calico_bench"

JSON="$OUT/micro.jsonl"
: > "$JSON"
if $quick; then
  common=(--translations direct,array,vmcache_2m,vmcache,hash_open --repeat 5 --min-seconds 0.5
          --data-dir "$OUT/data" --json "$JSON")
  "$BENCH" scan "${common[@]}" --data-mb 1024 --no-pinned 2>&1 | tee "$OUT/scan.log"
  "$BENCH" micro-btree "${common[@]}" --records 5000000 2>&1 | tee "$OUT/micro-btree.log"
  commit=$(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo unknown)
  python3 "$ROOT/bench/report/micro_quick.py" "$JSON" --commit "$commit" --out "$ROOT/docs/micro/quick.jsonl"
  exit 0
fi
start=$(date +%s)
failed=()
for experiment in scan micro-btree micro-bfs micro-ablation micro-memory; do
  echo "=== $experiment ($(( $(date +%s) - start )) s so far)"
  # A failed self-check or a skipped variant fails the experiment, not the whole run.
  "$BENCH" "$experiment" --data-dir "$OUT/data" --json "$JSON" "$@" 2>&1 | tee "$OUT/$experiment.log" ||
    failed+=("$experiment")
done
rmdir "$OUT/data" 2> /dev/null || true  # each pool removes its own subdirectory
echo "=== all experiments done in $(( $(date +%s) - start )) s"

PY=python3
"$PY" -c 'import matplotlib' 2> /dev/null || PY=/usr/bin/python3  # Debian's python3-matplotlib
"$PY" "$ROOT/bench/report/micro_figures.py" "$JSON" --md "$ROOT/docs/micro.md" --png-dir "$ROOT/docs/micro" \
  --command "scripts/micro.sh $*"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "micro.sh: FAILED (see the logs in $OUT): ${failed[*]}" >&2
  exit 1
fi
