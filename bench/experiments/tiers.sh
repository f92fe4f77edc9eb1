#!/usr/bin/env bash
# Reproduces: vmcache^n paper, Figure 2 (vmcache^n vs. vmcache: random lookups and TPC-C on a far
# memory tier); no Calico paper figure.
#
# bench/experiments/tiers.sh [OUTDIR]: the far-tier sweeps of docs/results/tiers.md, on a quiet machine:
# random lookups, then TPC-C (WORKLOADS="lookups tpcc").
#
# Lookups: random point lookups, the vmcache^n paper's key-value workload (section 4: 8-byte uniform
# keys, 120-byte values): YCSB-C with uniform keys on Calico's B+tree, the data larger than
# the fast and the far tier together (disk behind). For each far-tier size FAST_MB x ratio
# (FAR_RATIOS), one `calico_bench ycsb` run interleaves, per repeat, every system of
# SYSTEMS on identical data: the single-tier baselines (calico = array, calico:vmcache) and
# the tiered designs (calico:array_tiered, and calico:vmcache_n where it exists), which get
# the far tier; single-tier translations ignore --far-mb.
#
# The far tier is EMULATED on a one-node machine (docs/results/tiers.md): TIER = remote-numa (70 ns
# per touched line, 20.8 GB/s migration) or cxl; `calico_bench tier-calibrate` measures what
# the emulation charges here.
#
# Priority: the runs do I/O, so `nice -n -10` with the kernel's autogroup off (not real time:
# O_DIRECT completions run in kernel workers that real-time spinners starve; docs/results/tpcc.md).
# TPC-C: `calico_bench tpcc` on TPCC_WAREHOUSES (2) warehouses at TPCC_SCALE (0.5: about
# 170 MB loaded, growing while it runs), the pool TPCC_FAST_MB (16) and the far tier
# TPCC_FAST_MB x ratio, the same four designs interleaved per repeat (single-tier ones
# without the far tier), TPCC_SECONDS (10) per run, THREADS threads.
#
# Then bench/harness/report/tiers_tables.py prints the table (medians of ops/s, ratios paired
# within each repeat, far hits, migrations per second, time per page moved, time waiting for
# migration bandwidth) and plots OUTDIR/lookups.png.
#
# Environment: FAST_MB (64), FAR_RATIOS ("0 1 2 4"), RECORDS (5000000: ~780 MB of B+tree,
# more than 2x fast + far at ratio 4), SYSTEMS (calico,calico:vmcache,calico:array_tiered),
# TIER (remote-numa), THREADS (2), RUN_SECONDS (5), WARMUP (5: the far tier fills by demotion),
# REPEAT (3), BUILD (build-micro). About 25 minutes for the lookups and 12 for TPC-C at the
# defaults on 2 cores; writes OUTDIR/{lookups,tpcc}.{jsonl,log,png} (default ./tiers-results)
# and the data under OUTDIR/data (removed after).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-tiers-results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
FAST_MB=${FAST_MB:-64}
FAR_RATIOS=${FAR_RATIOS:-0 1 2 4}
RECORDS=${RECORDS:-5000000}
SYSTEMS=${SYSTEMS:-calico,calico:vmcache,calico:array_tiered,calico:vmcache_n}
WORKLOADS=${WORKLOADS:-lookups tpcc}
TPCC_FAST_MB=${TPCC_FAST_MB:-16}
TPCC_WAREHOUSES=${TPCC_WAREHOUSES:-2}
TPCC_SCALE=${TPCC_SCALE:-0.5}
TPCC_SECONDS=${TPCC_SECONDS:-10}
TIER=${TIER:-remote-numa}
THREADS=${THREADS:-2}
SECONDS_RUN=${RUN_SECONDS:-5}
WARMUP=${WARMUP:-5}
REPEAT=${REPEAT:-3}
BUILD=${BUILD:-build-micro}

if [[ -z "${SKIP_SETUP:-}" ]]; then bash "$ROOT/scripts/setup.sh"; fi
if [[ -z "${BENCH:-}" ]]; then
  cmake -S "$ROOT" -B "$ROOT/$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALICO_CHECKS_LEVEL=1 \
    -DCALICO_BUILD_TESTS=OFF > /dev/null
  cmake --build "$ROOT/$BUILD" --target calico_bench
  BENCH="$ROOT/$BUILD/calico_bench"
fi

high=()
if nice -n -10 true 2> /dev/null; then high=(nice -n -10); fi
autogroup=/proc/sys/kernel/sched_autogroup_enabled
if [[ -w $autogroup && ${#high[@]} -gt 0 ]]; then
  saved_autogroup=$(cat $autogroup)
  trap 'echo "$saved_autogroup" > '"$autogroup"'; rm -rf "$OUT/data"' EXIT
  echo 0 > $autogroup
else
  trap 'rm -rf "$OUT/data"' EXIT
fi

PY=python3
"$PY" -c 'import matplotlib' 2> /dev/null || PY=/usr/bin/python3  # Debian's python3-matplotlib
"$PY" -c 'import matplotlib' 2> /dev/null || PY="$ROOT/.venv/bin/python"  # scripts/setup.sh's venv

if [[ " $WORKLOADS " == *" lookups "* ]]; then
  : > "$OUT/lookups.jsonl"
  : > "$OUT/lookups.log"
  for ratio in $FAR_RATIOS; do
    far_mb=$((FAST_MB * ratio))
    echo "== lookups: far tier ${ratio}x the fast tier: ${far_mb} MB behind ${FAST_MB} MB ($TIER, emulated)"
    rm -rf "$OUT/data"
    "${high[@]}" "$BENCH" ycsb --system "$SYSTEMS" --workload C --distribution uniform --records "$RECORDS" \
      --cache-mb "$FAST_MB" --far-mb "$far_mb" --far-tier "$TIER" --threads "$THREADS" --seconds "$SECONDS_RUN" \
      --warmup-seconds "$WARMUP" --repeat "$REPEAT" --data-dir "$OUT/data" --json "$OUT/lookups.jsonl" \
      >> "$OUT/lookups.log" 2>&1 || { echo "far ${ratio}x FAILED (see $OUT/lookups.log)"; tail -5 "$OUT/lookups.log"; exit 1; }
  done
  "$PY" "$ROOT/bench/harness/report/tiers_tables.py" --figure "$OUT/lookups.png" "$OUT/lookups.jsonl"
fi

if [[ " $WORKLOADS " == *" tpcc "* ]]; then
  translations=$(echo "$SYSTEMS" | sed 's/calico:\([a-z_0-9]*\)/\1/g; s/\bcalico\b/array/g')
  : > "$OUT/tpcc.jsonl"
  : > "$OUT/tpcc.log"
  for ratio in $FAR_RATIOS; do
    far_mb=$((TPCC_FAST_MB * ratio))
    echo "== tpcc: far tier ${ratio}x the fast tier: ${far_mb} MB behind ${TPCC_FAST_MB} MB ($TIER, emulated)"
    rm -rf "$OUT/data"
    "${high[@]}" "$BENCH" tpcc --translation "$translations" --warehouses "$TPCC_WAREHOUSES" --scale "$TPCC_SCALE" \
      --threads "$THREADS" --pool-mb "$TPCC_FAST_MB" --far-mb "$far_mb" --far-tier "$TIER" --seconds "$TPCC_SECONDS" \
      --repeat "$REPEAT" --data-dir "$OUT/data" --json "$OUT/tpcc.jsonl" \
      >> "$OUT/tpcc.log" 2>&1 || { echo "tpcc far ${ratio}x FAILED (see $OUT/tpcc.log)"; tail -5 "$OUT/tpcc.log"; exit 1; }
  done
  "$PY" "$ROOT/bench/harness/report/tiers_tables.py" --figure "$OUT/tpcc.png" "$OUT/tpcc.jsonl"
fi
