#!/usr/bin/env bash
# Calico's coded HNSW against DiskANN (and usearch's memory-mapped view) at equal memory budgets,
# larger than memory. Report: bench/harness/report/vector_coded_report.py OUT/*.jsonl.
#
# For each fraction f of FRACTIONS (comma list; 4 = in memory):
#   1. calico_bench vector-coded --pool-fraction f (the full HNSW gets f x its bytes as pool, the
#      coded HNSW the same bytes: its resident codes plus a pool of the rest, at least 2 MB),
#      JSON lines into OUT/calico.jsonl (with "loadavg", "limit_bytes", "cgroup_peak_bytes");
#   2. DiskANN (bench/harness/peers/diskann_peer.py) with budget = pool_bytes + resident_codes_bytes
#      of that run's coded lines without pinned rows (--pin-share 0), i.e. the memory the coded
#      index actually had (at small f the 2 MB pool floor makes it more than f x the HNSW), and PQ codes of floor(resident_codes_bytes
#      / n) bytes per vector, the coded index's bytes per vector; JSON lines into OUT/diskann.jsonl;
#   3. with USEARCH=1, usearch's view through bench/experiments/vector_peer_ltm.sh (its limit is
#      f x usearch's own index file, about the HNSW's size) into OUT/vector.jsonl.
# CROSS_ROUNDS=R (default 1) runs the whole sequence R times, so that the systems' rounds interleave
# (calico f1, DiskANN f1, calico f2, ..., then again): the disk's speed drifts from minute to
# minute, and a system measured only after the other would carry that drift in its ratio. Every
# line records its "cross_round"; the report merges the lines of a setting (median QPS, reads,
# latencies). calico_bench builds once (--reuse, in the script's scratch directory, or in
# CALICO_BUILD_DIR, kept for later runs) and searches that build in every round and at every
# fraction; DiskANN builds once into INDEX_DIR.
# Queries: calico's pool keeps what searches read, DiskANN's node cache is fixed at load, so a
# query repeated while its pages are resident is a hit for calico alone. calico_bench's timed
# regions take queries from one cursor (none repeats before all have run); give more queries
# than the pool holds the pages of (--queries 10000 at 1M rows and 20%; a query reads 15-50).
# Each runs alone in a v1 memory cgroup, the page cache dropped first:
#   calico_bench builds both indexes in the same process before it searches, so its limit is set
#   once it prints "built:": the cgroup's usage then (dataset, heap; caches dropped again) + f x
#   the HNSW's bytes + 16 MB; its lines record that usage and the search phase's peak;
#   DiskANN's limit is the interpreter's baseline (diskann_peer.py --print-baseline-rss) + the
#   larger of the budget and DiskANN's calibrated resident bytes (diskann_peer.py --plan; larger
#   only when its fixed part alone is over the budget, reported "over_budget") + 8 MB.
#
# Usage: bench/experiments/vector_coded.sh OUT FRACTIONS [calico_bench vector-coded options ...]
#   e.g. bench/experiments/vector_coded.sh /var/tmp/diskann/results/1m 0.1,0.2,4 --n 1000000 --queries 10000
#   The options (--n, --dim, --clusters, --threads, ...) go to calico_bench as they are; --pool-fraction,
#   --json, --cache-dir and --dir are the script's.
# Environment: CALICO_BENCH (default <repo>/build-release/calico_bench); DATA_DIR, the dataset cache
# (default OUT/data); INDEX_DIR, DiskANN's index cache (default OUT/diskann-indexes);
# DISKANN_PY (default <repo>/.venv-diskann/bin/python); DISKANN_ARGS, more diskann_peer.py options
# (e.g. "--threads 1 --L 10,20,40"); USEARCH=1 adds usearch's view (builds it into OUT/peer-indexes
# with <repo>/.venv/bin/python); DISKANN_ONLY=1 runs DiskANN alone, at the budgets of the coded
# lines already in OUT/calico.jsonl (e.g. with DISKANN_ARGS="--pq-bytes 29": DiskANN's smaller
# codes and a larger node cache in the same memory).
# Needs root and the cgroup v1 memory controller.
set -euo pipefail
if [ $# -lt 2 ]; then sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; fi  # the header above
out=$1 fractions=$2
shift 2
calico_opts=("$@")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=${CALICO_BENCH:-$ROOT/build-release/calico_bench}
DPY=${DISKANN_PY:-$ROOT/.venv-diskann/bin/python}
PEER="$ROOT/bench/harness/peers/diskann_peer.py"
data=${DATA_DIR:-$out/data}
indexes=${INDEX_DIR:-$out/diskann-indexes}
read -ra diskann_opts <<< "${DISKANN_ARGS:-}"
cgroot=/sys/fs/cgroup/memory
[ -w "$cgroot" ] || { echo "vector_coded: $cgroot is not writable (need root and cgroup v1 memory)" >&2; exit 2; }
[ -x "$BENCH" ] || { echo "vector_coded: no calico_bench at $BENCH (set CALICO_BENCH)" >&2; exit 2; }
[ -x "$DPY" ] || { echo "vector_coded: no $DPY (run scripts/setup.sh or set DISKANN_PY)" >&2; exit 2; }
mkdir -p "$out" "$data" "$indexes"
scratch=$(mktemp -d "$out/scratch.XXXXXX")
trap 'rm -rf "$scratch"; rmdir "$cgroot"/calico-vector-coded "$cgroot"/calico-vector-diskann 2>/dev/null || true' EXIT

drop_caches() { sync; echo 1 > /proc/sys/vm/drop_caches; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# Runs "$@" as the only process of cgroup $1 (created, limit unset): its stdout is the caller's.
in_cgroup() {
  local cg=$1
  shift
  sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$cg" "$@"
}

# calico_bench at fraction $1: JSON lines into $2, then (with the load averages and the cgroup's
# numbers) appended to OUT/calico.jsonl.
run_calico() {
  local f=$1 json=$2 round=$3 cg=$cgroot/calico-vector-coded
  mkdir -p "$cg"
  echo -1 > "$cg/memory.limit_in_bytes"
  drop_caches
  local load0
  load0=$(loadavg)
  echo "=== calico_bench vector-coded, f = $f (load $load0)" >&2
  local state="$scratch/calico-state"
  : > "$state"
  in_cgroup "$cg" stdbuf -oL "$BENCH" vector-coded "${calico_opts[@]}" --pool-fraction "$f" \
      --cache-dir "$data" --dir "${CALICO_BUILD_DIR:-$scratch/calico}" --reuse --json "$json" |
    while IFS= read -r line; do
      echo "$line" >&2
      if [[ $line =~ ^built[^:]*:.*\(([0-9]+)\ MB\) ]]; then  # "built:" or "built (reused):"
        # Built: the search phase may hold what it holds now plus f x the HNSW (+ slack).
        drop_caches
        local base limit
        base=$(cat "$cg/memory.usage_in_bytes")
        limit=$(python3 -c "print(int($base + $f * (${BASH_REMATCH[1]} + 1) * 2**20 + 16 * 2**20))")
        echo "$limit" > "$cg/memory.limit_in_bytes"
        echo 0 > "$cg/memory.max_usage_in_bytes"
        echo "$base $limit" > "$state"
        echo "vector_coded: calico search phase limited to $((limit >> 20)) MB (usage after build $((base >> 20)) MB)" >&2
      fi
    done
  local peak base limit
  peak=$(cat "$cg/memory.max_usage_in_bytes")
  read -r base limit < "$state" || { echo "vector_coded: calico_bench printed no 'built:' line" >&2; exit 1; }
  python3 - "$json" "$load0" "$(loadavg)" "$base" "$limit" "$peak" "$round" >> "$out/calico.jsonl" <<'PY'
import json, sys
path, load0, load1, base, limit, peak, round_ = sys.argv[1:]
for line in open(path):
    r = json.loads(line)
    r.update(system="calico", loadavg={"start": [float(x) for x in load0.split()], "end": [float(x) for x in load1.split()]},
             usage_after_build_bytes=int(base), limit_bytes=int(limit), cgroup_peak_bytes=int(peak),
             cross_round=int(round_))
    print(json.dumps(r))
PY
  rmdir "$cg"
}

# DiskANN at fraction $1, with the budget of calico's coded lines at $1 in $2.
run_diskann() {
  local f=$1 calico_json=$2 round=$3 cg=$cgroot/calico-vector-diskann
  local ds
  ds=$(python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['dataset'])" "$calico_json")
  local opts=(--data-dir "$data/$ds" --index-dir "$indexes" --calico-json "$calico_json" --pool-fraction "$f"
              "${diskann_opts[@]}")
  "$DPY" "$PEER" "${opts[@]}" --build-only  # outside the cgroup: the build holds the base vectors
  local baseline plan predicted budget
  baseline=$("$DPY" "$PEER" "${opts[@]}" --no-base --print-baseline-rss)
  plan=$("$DPY" "$PEER" "${opts[@]}" --no-base --plan)  # calibrates (once per index) outside the cgroup
  predicted=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['predicted_resident_bytes'])" "$plan")
  budget=$(python3 - "$calico_json" "$f" <<'PY'
import json, math, sys
coded = [r for r in map(json.loads, open(sys.argv[1]))
         if r.get("index") == "coded" and math.isclose(r["pool_fraction"], float(sys.argv[2]))]
r = ([r for r in coded if not r.get("pin_share")] or coded)[0]  # pinned lines: rounding may leave some unused
print(r["pool_bytes"] + r["resident_codes_bytes"] + r.get("pinned_bytes", 0))
PY
)
  local limit=$(( baseline + (budget > predicted ? budget : predicted) + (8 << 20) ))
  mkdir -p "$cg"
  drop_caches
  echo "$limit" > "$cg/memory.limit_in_bytes"
  echo 0 > "$cg/memory.max_usage_in_bytes"
  echo "=== diskann, f = $f: budget $((budget >> 10)) KB, plan $plan, limit $((limit >> 20)) MB (load $(loadavg))" >&2
  local tmp="$scratch/diskann.jsonl" rc=0
  : > "$tmp"
  in_cgroup "$cg" "$DPY" "$PEER" "${opts[@]}" --no-base --json "$tmp" || rc=$?
  local peak
  peak=$(cat "$cg/memory.max_usage_in_bytes")
  echo "  diskann: exit $rc, cgroup peak $((peak >> 20)) MB of $((limit >> 20)) MB" >&2
  python3 - "$tmp" "$limit" "$peak" "$rc" "$f" "$round" >> "$out/diskann.jsonl" <<'PY'
import json, sys
path, limit, peak, rc, f, round_ = sys.argv[1:]
lines = open(path).read().splitlines()
for line in lines:
    r = json.loads(line)
    r.update(limit_bytes=int(limit), cgroup_peak_bytes=int(peak), cross_round=int(round_))
    print(json.dumps(r))
if int(rc) != 0:  # 137: the memory limit
    print(json.dumps({"experiment": "vector_coded_unfinished", "system": "diskann", "pool_fraction": float(f),
                      "limit_bytes": int(limit), "exit": int(rc), "lines": len(lines)}))
PY
  rmdir "$cg"
}

IFS=, read -ra fs <<< "$fractions"
rounds=${CROSS_ROUNDS:-1}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "vector_coded: CROSS_ROUNDS must be a positive integer, not '$rounds'" >&2; exit 2; }
for ((round = 1; round <= rounds; round++)); do
  for f in "${fs[@]}"; do
    echo "=== vector_coded: round $round of $rounds, f = $f" >&2
    if [ "${DISKANN_ONLY:-0}" = 1 ]; then  # another DiskANN configuration at an earlier run's budgets
      run_diskann "$f" "$out/calico.jsonl" "$round"
      continue
    fi
    run_calico "$f" "$scratch/calico-$f-$round.jsonl" "$round"  # calico_bench appends: a file per round
    run_diskann "$f" "$scratch/calico-$f-$round.jsonl" "$round"  # the budget from this run's coded lines
  done
done

if [ "${USEARCH:-0}" = 1 ]; then
  ds=$(python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['dataset'])" "$out/calico.jsonl")
  if ! ls "$out"/peer-indexes/*-usearch-*.index > /dev/null 2>&1; then
    "$ROOT/.venv/bin/python" "$ROOT/bench/harness/peers/vector_peers.py" --data-dir "$data/$ds" --systems usearch \
      --index-dir "$out/peer-indexes" --threads 1 --repeat 1 --json "$out/usearch_in_memory.jsonl"
  fi
  "$ROOT/bench/experiments/vector_peer_ltm.sh" "$out" "$data/$ds" "$fractions" 10,20,40,80,160 1,2 16 100
fi
echo "vector_coded: done; report: bench/harness/report/vector_coded_report.py $out/*.jsonl" >&2
