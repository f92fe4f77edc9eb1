#!/usr/bin/env bash
# Reproduces: Calico paper, Tables 2, 3, 4 and 6; Figures 1, 10 and 11 (the translation microbenchmarks).
#
# bench/experiments/micro.sh [OUTDIR] [OPTIONS...]: the translation microbenchmarks of the Calico paper
# (Tables 2, 3, 4, 6; Figures 1, 10, 11) at their default sizes on every translation of
# include/calico/variants.h, then regenerates docs/results/micro.md and docs/results/micro/*.png.
#
# docs/results/micro.md also gets the sections of docs/results/micro/large.jsonl (--large below) and
# docs/results/micro/counts.jsonl (bench/experiments/micro_counts.sh) when they exist.
#
# Sets up the machine (scripts/setup.sh), builds a release tree (build-micro:
# RelWithDebInfo, CALICO_CHECKS_LEVEL=1, no tests) when needed, and writes into OUTDIR
# (default ./micro-results): micro.jsonl (every result), one log per experiment, and the pools'
# data files under OUTDIR/data while they run (removed afterwards). OPTIONS go to every
# subcommand, e.g. `bench/experiments/micro.sh out --translations array,direct --repeat 7`
# (calico_bench scan --help lists the common options).
#
# Needs a quiet machine: about 15-25 minutes with eight translations, up to ~11 GB of RAM
# (every translation's pool is resident at once) and ~15 GB of disk for the memory sweep.
#
# bench/experiments/micro.sh --quick [OUTDIR]: the headline ratios in a few minutes: scans (1 GB) and
# B+tree lookups (5M records) on direct, array, array_sparse, vmcache_2m, vmcache and
# hash_open, 5 rounds of runs of at least 0.5 s each; writes OUTDIR/micro.jsonl (default
# ./micro-quick) and docs/results/micro/quick.jsonl (with the machine and the commit), and prints the
# paired ratios.
#
# The A/A control of --quick and --large: array_sparse runs array's hot path instruction for
# instruction while nothing is evicted (src/translation/array/sparse_array.h; docs/design/hot_path.md), in
# its own pool and its own code. Its ratio to array is what the machine alone makes of one
# design: a difference between designs no larger than that is not resolved by the run.
#
# bench/experiments/micro.sh --large [OUTDIR]: the headline workloads at larger sizes (scans of
# 4 GB, B+tree lookups on 20M records, BFS on 2M nodes), which do not fit as resident pools of
# every translation at once: each round runs one fresh process per translation (order rotated
# per round), each generating the same data from the same seed, one timed run of at least
# 1 s per workload; ratios are paired within a round. Writes OUTDIR/large.jsonl (default
# ./micro-large; each line tagged with its round) and docs/results/micro/large.jsonl. Sizes and
# rounds: ROUNDS (5), SCAN_MB (4096), RECORDS (20000000), NODES (2097152), LARGE_TRANSLATIONS
# (direct,array,array_sparse,vmcache_2m,vmcache,hash_open), BFS_TRANSLATIONS
# (direct,array,array_sparse,vmcache_2m), in the environment. About 12 minutes at the
# defaults on this 2-core VM; up to ~11 GB of RAM at once.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
mode=full
if [[ "${1:-}" == --quick || "${1:-}" == --large ]]; then
  mode=${1#--}
  shift
fi
case $mode in
  quick) default_out=micro-quick ;;
  large) default_out=micro-large ;;
  *) default_out=micro-results ;;
esac
OUT=${1:-$default_out}
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
commit=$(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo unknown)
if [[ $mode == quick ]]; then
  common=(--translations direct,array,array_sparse,vmcache_2m,vmcache,hash_open --repeat 5 --min-seconds 0.5
          --data-dir "$OUT/data" --json "$JSON")
  "$BENCH" scan "${common[@]}" --data-mb 1024 --no-pinned 2>&1 | tee "$OUT/scan.log"
  "$BENCH" micro-btree "${common[@]}" --records 5000000 2>&1 | tee "$OUT/micro-btree.log"
  python3 "$ROOT/bench/harness/report/micro_quick.py" "$JSON" --commit "$commit" --out "$ROOT/docs/results/micro/quick.jsonl"
  exit 0
fi
if [[ $mode == large ]]; then
  IFS=, read -r -a large <<< "${LARGE_TRANSLATIONS:-direct,array,array_sparse,vmcache_2m,vmcache,hash_open}"
  IFS=, read -r -a bfs <<< "${BFS_TRANSLATIONS:-direct,array,array_sparse,vmcache_2m}"
  rounds=${ROUNDS:-5}
  LARGE="$OUT/large.jsonl"
  : > "$LARGE"
  # run ROUND TRANSLATION SUBCOMMAND [OPTIONS...]: one fresh process, its lines tagged.
  run() {
    local round=$1 t=$2 sub=$3
    shift 3
    : > "$OUT/one.jsonl"
    echo "=== round $round of $rounds: $sub on $t"
    "$BENCH" "$sub" --translations "$t" --repeat 1 --min-seconds 1 --data-dir "$OUT/data" --json "$OUT/one.jsonl" \
      "$@" 2>&1 | tee -a "$OUT/$sub.log" | grep -E " $t +[0-9]" || true
    python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if l.strip():
        r = json.loads(l); r["round"] = int(sys.argv[2]); print(json.dumps(r))' "$OUT/one.jsonl" "$round" >> "$LARGE"
  }
  for ((r = 1; r <= rounds; r++)); do
    # Rotate the order each round so that no translation always runs first (or last).
    for ((i = 0; i < ${#large[@]}; i++)); do
      t=${large[(i + r) % ${#large[@]}]}
      run "$r" "$t" scan --data-mb "${SCAN_MB:-4096}" --no-pinned
      run "$r" "$t" micro-btree --records "${RECORDS:-20000000}"
    done
    for ((i = 0; i < ${#bfs[@]}; i++)); do
      run "$r" "${bfs[(i + r) % ${#bfs[@]}]}" micro-bfs --nodes "${NODES:-2097152}"
    done
  done
  rm -f "$OUT/one.jsonl"
  python3 "$ROOT/bench/harness/report/micro_quick.py" "$LARGE" --commit "$commit" --out "$ROOT/docs/results/micro/large.jsonl" \
    --source "bench/experiments/micro.sh --large"
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
"$PY" "$ROOT/bench/harness/report/micro_figures.py" "$JSON" --md "$ROOT/docs/results/micro.md" --png-dir "$ROOT/docs/results/micro" \
  --command "bench/experiments/micro.sh $*" --large "$ROOT/docs/results/micro/large.jsonl" --counts "$ROOT/docs/results/micro/counts.jsonl"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "micro.sh: FAILED (see the logs in $OUT): ${failed[*]}" >&2
  exit 1
fi
