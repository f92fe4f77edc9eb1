#!/usr/bin/env bash
# Reproduces: Calico paper, Figures 4 and 5 (vector search in memory and larger than memory, with
# hnswlib, faiss and USearch) and Figure 11 (the ablation, on HNSW).
#
# bench/experiments/vector.sh [OUTDIR]: the vector-search experiment (docs/results/vector.md), end to end.
#   1. sets up the machine (scripts/setup.sh: apt packages and the Python peers in .venv) and
#      builds build-vector (Release: -O3, as the peers' wheels are; CALICO_CHECKS_LEVEL=1; no
#      tests);
#   2. generates the dataset (SIFT-like, clustered) and its exact ground truth, builds
#      Calico's HNSW and IVF-Flat once (calico_bench vector --build-only);
#   3. in memory: ROUNDS rounds, each running Calico (calico_bench vector --repeat 1) and
#      the peers (bench/harness/peers/vector_peers.py --repeat 1: hnswlib, faiss HNSW and IVF,
#      usearch) on the same files, alternating which goes first; the peers build once into
#      OUTDIR/peer-indexes and reload afterwards;
#   4. larger than memory: Calico's HNSW on LTM_TRANSLATIONS with the pool at LTM_FRACTIONS
#      of the index (O_DIRECT), and usearch's memory-mapped view in a v1 memory cgroup
#      limited to the same fraction of its index plus the interpreter's own footprint
#      (measured first);
#   5. the disk's 4 KB random-read IOPS at queue depths 1 to 64 (bench/experiments/disk_iops.sh), the
#      curve each larger-than-memory run is compared with at the device depth it kept;
#   6. the Figure 11 ablation on HNSW;
#   7. bench/harness/report/vector_figures.py -> docs/results/vector.md and docs/results/vector/*.png.
# Everything goes to OUTDIR (default ./vector-results): vector.jsonl, logs, the dataset cache
# (data/), the built indexes (pools/, peer-indexes/).
#
# Sizes and parameters (environment): DATASET=clustered (or embedding: DIM 384, inner
# product) N=1000000 DIM=128 CLUSTERS=1000 QUERIES=1000 M=16
# EFC=100 EF=16,32,64,128,256,512 (to recall 0.99 at 1M) NPROBE=1,2,4,8,16,32 THREADS=1,2 ROUNDS=3
# TRANSLATIONS=array (in memory; e.g. array,vmcache,hash_open) LTM_FRACTIONS=0.5,0.2,0.1
# LTM_TRANSLATIONS=array,vmcache LTM_EF=50 LTM_THREADS=THREADS LTM_REPEAT=3 PEER_LTM_QUERIES=100 PEER_LTM_TIMEOUT=600
# LTM_BATCH=1 (HNSW queries in flight per thread, calico_bench vector --hnsw-batch; a comma list is a sweep)
# PEER_LTM_READAHEAD_KB (read_ahead_kb of the index's disk during usearch's view runs; default: as is)
# SKIP_MEMORY=1 (only the larger-than-memory part, e.g. REPORT=vector_ltm) SKIP_LTM=1 SKIP_PEERS=1 SKIP_ABLATION=1. The disk's readahead (/sys/block/*/queue/read_ahead_kb)
# decides how much usearch's mapped view reads per fault: report it with the results.
# Needs a quiet machine; at the defaults about 1 hour on 2 cores (the builds take most), ~6 GB
# of disk. The LTM part needs root and the cgroup v1 memory controller.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-vector-results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
DATASET=${DATASET:-clustered}  # clustered (SIFT-like, l2) or embedding (text-embedding-like, ip)
if [ "$DATASET" = embedding ]; then DEFAULT_DIM=384; else DEFAULT_DIM=128; fi
N=${N:-1000000} DIM=${DIM:-$DEFAULT_DIM} CLUSTERS=${CLUSTERS:-1000} QUERIES=${QUERIES:-1000}
M=${M:-16} EFC=${EFC:-100} EF=${EF:-16,32,64,128,256,512} NPROBE=${NPROBE:-1,2,4,8,16,32}
THREADS=${THREADS:-1,2} ROUNDS=${ROUNDS:-3} TRANSLATIONS=${TRANSLATIONS:-array}
LTM_FRACTIONS=${LTM_FRACTIONS:-0.5,0.2,0.1} LTM_TRANSLATIONS=${LTM_TRANSLATIONS:-array,vmcache} LTM_EF=${LTM_EF:-50}
LTM_THREADS=${LTM_THREADS:-$THREADS} LTM_REPEAT=${LTM_REPEAT:-3} LTM_BATCH=${LTM_BATCH:-1}

bash "$ROOT/scripts/setup.sh"
cmake -S "$ROOT" -B "$ROOT/build-vector" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCALICO_CHECKS_LEVEL=1 \
  -DCALICO_BUILD_TESTS=OFF > /dev/null
cmake --build "$ROOT/build-vector" --target calico_bench
BENCH="$ROOT/build-vector/calico_bench"
PY="$ROOT/.venv/bin/python"
JSON="$OUT/vector.jsonl"
start=$(date +%s)
log() { echo "=== $* ($(( $(date +%s) - start )) s so far)"; }

data=(--dataset "$DATASET" --n "$N" --dim "$DIM" --clusters "$CLUSTERS" --queries "$QUERIES" --cache-dir "$OUT/data"
      --data-dir "$OUT/pools" --M "$M" --ef-construction "$EFC")
log "dataset and Calico's index builds"
"$BENCH" vector "${data[@]}" --index hnsw,ivf --build-only 2>&1 | tee "$OUT/build.log"
DSDIR=$(ls -d "$OUT"/data/"$DATASET"-n"$N"-d"$DIM"-c"$CLUSTERS"-q"$QUERIES"-* | sed -n 1p)
NLIST=$(sed -n 's/^.*ivf-.*-nlist\([0-9]*\).*$/\1/p' "$OUT/build.log" | sed -n 1p)
NLIST=${NLIST:-$(ls -d "$OUT"/pools/ivf-*-nlist* | sed 's/.*nlist\([0-9]*\).*/\1/' | sed -n 1p)}
peers=(--data-dir "$DSDIR" --M "$M" --ef-construction "$EFC" --ef "$EF" --nlist "$NLIST" --nprobe "$NPROBE"
       --index-dir "$OUT/peer-indexes" --json "$JSON")

run_calico() {
  "$BENCH" vector "${data[@]}" --index hnsw,ivf --ef "$EF" --nprobe "$NPROBE" --threads "$THREADS" \
    --translations "$TRANSLATIONS" --repeat 1 --json "$JSON" 2>&1 | tee -a "$OUT/memory.log"
}
run_peers() {
  [ -n "${SKIP_PEERS:-}" ] && return 0
  "$PY" "$ROOT/bench/harness/peers/vector_peers.py" "${peers[@]}" --systems hnswlib,faiss_hnsw,faiss_ivf,usearch \
    --threads "$THREADS" --repeat 1 --warmup 1 2>&1 | tee -a "$OUT/memory.log"
}
if [ -z "${SKIP_MEMORY:-}" ]; then
  for ((r = 1; r <= ROUNDS; r++)); do
    log "in memory, round $r of $ROUNDS"
    if (( r % 2 )); then run_calico; run_peers; else run_peers; run_calico; fi
  done
fi

if [ -z "${SKIP_LTM:-}" ]; then
  log "larger than memory: Calico (pool at $LTM_FRACTIONS of the index)"
  "$BENCH" vector "${data[@]}" --index hnsw --ef "$LTM_EF" --threads "$LTM_THREADS" --translations "$LTM_TRANSLATIONS" \
    --pool-fraction "$LTM_FRACTIONS" --repeat "$LTM_REPEAT" --hnsw-batch "$LTM_BATCH" --json "$JSON" 2>&1 | tee "$OUT/ltm.log"
  if [ -z "${SKIP_PEERS:-}" ]; then
    log "larger than memory: usearch view (memory cgroup)"
    "$PY" "$ROOT/bench/harness/peers/vector_peers.py" "${peers[@]}" --systems usearch_view --threads 1 --ef "$LTM_EF" \
      --repeat 1 --warmup 0 --json /dev/null > /dev/null  # makes sure the saved index exists
    # The mapped view can read megabytes per fault (readahead): a bounded number of queries
    # and a timeout per fraction keep the run finite; unfinished fractions are recorded.
    MAX_QUERIES=${PEER_LTM_QUERIES:-100} PEER_TIMEOUT=${PEER_LTM_TIMEOUT:-600} READAHEAD_KB=${PEER_LTM_READAHEAD_KB:-} \
    bash "$ROOT/bench/experiments/vector_peer_ltm.sh" "$OUT" "$DSDIR" "$LTM_FRACTIONS" "$LTM_EF" "$LTM_THREADS" "$M" "$EFC" \
      2>&1 | tee -a "$OUT/ltm.log"
  fi
  log "disk IOPS"
  QDS="1 2 4 8 16 32 64" bash "$ROOT/bench/experiments/disk_iops.sh" "$OUT" "$JSON"
fi

if [ -z "${SKIP_ABLATION:-}" ]; then
  log "ablation"
  "$BENCH" vector "${data[@]}" --index hnsw --ef 50 --threads 1 --translations array --repeat "$ROUNDS" --ablation \
    --json "$OUT/ablation.jsonl" 2>&1 | tee "$OUT/ablation.log"
  grep '"ablation":true' "$OUT/ablation.jsonl" >> "$JSON" || true
fi

log "report"
ltm_args=""
[ -n "${SKIP_LTM:-}" ] || ltm_args=" LTM_FRACTIONS=$LTM_FRACTIONS LTM_THREADS=$LTM_THREADS LTM_BATCH=$LTM_BATCH${PEER_LTM_READAHEAD_KB:+ PEER_LTM_READAHEAD_KB=$PEER_LTM_READAHEAD_KB}${PEER_LTM_QUERIES:+ PEER_LTM_QUERIES=$PEER_LTM_QUERIES}"
REPORT=${REPORT:-vector}  # docs/results/$REPORT.md, docs/results/$REPORT/*.png and docs/results/$REPORT/vector.jsonl
mkdir -p "$ROOT/docs/results/$REPORT"
cp "$JSON" "$ROOT/docs/results/$REPORT/vector.jsonl"
"$PY" "$ROOT/bench/harness/report/vector_figures.py" "$JSON" --md "$ROOT/docs/results/$REPORT.md" --png-dir "$ROOT/docs/results/$REPORT" \
  --command "DATASET=$DATASET N=$N DIM=$DIM ROUNDS=$ROUNDS THREADS=$THREADS TRANSLATIONS=$TRANSLATIONS EF=$EF NPROBE=$NPROBE$ltm_args${SKIP_MEMORY:+ SKIP_MEMORY=1}${SKIP_LTM:+ SKIP_LTM=1}${SKIP_PEERS:+ SKIP_PEERS=1}${SKIP_ABLATION:+ SKIP_ABLATION=1} bench/experiments/vector.sh"
