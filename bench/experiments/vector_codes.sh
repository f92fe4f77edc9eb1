#!/usr/bin/env bash
# Reproduces: docs/results/vector_codes.md (the choice of vector code for larger-than-memory
# search: RaBitQ or PQ), its table and docs/results/vector_codes/*.jsonl.
#
# bench/experiments/vector_codes.sh [BUILD_DIR] [OUTDIR]
#   runs `calico_bench vector-codes` (bench/vector/codes.h) on
#     (a) the SIFT-like clustered set, 100K x 128, l2;
#     (b) the text-embedding-like set, 100K x 384, ip (coded as cosine: unit vectors);
#   each with 1000 queries and every spec of the default list (RaBitQ 1, 2, 4 bits with one
#   centroid and 1, 4 bits with 256; PQ with m = dim/8, dim/4, dim/2 at 8 bits) and
#   R in {10, 20, 50, 100, 200}; and, when faiss imports in .venv, the faiss cross-check
#   (bench/harness/peers/faiss_codes.py) on the same files.
# BUILD_DIR (default build-rel) must hold calico_bench (RelWithDebInfo, as the recorded run).
# Sizes (environment): N=100000 QUERIES=1000 TRAIN_ROWS=25000. About 10 minutes on 2 cores.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-rel}
OUT=${2:-$ROOT/docs/results/vector_codes}
N=${N:-100000} QUERIES=${QUERIES:-1000} TRAIN_ROWS=${TRAIN_ROWS:-25000}
CACHE=${CACHE:-$ROOT/calico-vector-data}
mkdir -p "$OUT"
for ds in clustered embedding; do
  rm -f "$OUT/$ds.jsonl"
  "$BUILD/calico_bench" vector-codes --dataset "$ds" --n "$N" --queries "$QUERIES" --train-rows "$TRAIN_ROWS" \
    --cache-dir "$CACHE" --json "$OUT/$ds.jsonl" | tee "$OUT/$ds.log"
done
PY=${PYTHON:-$ROOT/.venv/bin/python}
if [ -x "$PY" ] && "$PY" -c 'import faiss' 2>/dev/null; then
  for ds in clustered embedding; do
    "$PY" "$ROOT/bench/harness/peers/faiss_codes.py" --data "$CACHE" --dataset "$ds" --n "$N" --queries "$QUERIES" \
      --train-rows "$TRAIN_ROWS" --json "$OUT/faiss_$ds.jsonl" | tee "$OUT/faiss_$ds.log"
  done
fi
