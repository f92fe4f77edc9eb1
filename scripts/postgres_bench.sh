#!/usr/bin/env bash
# The PostgreSQL 18 benchmarks ([Calico] Figures 8-9 plus pgbench): vanilla (io_method sync,
# worker and io_uring; the fastest per point is the baseline) vs calico.
#   scripts/postgres_bench.sh [OUTDIR]      (default ./pg-results)
# Builds PostgreSQL if needed, then runs bench/postgres/pg_vector.py four times (the 1M x 128
# clustered set in memory and larger than memory in a memory cgroup, with the A/A control and
# the ablation; the 100K x 128 set in the common configuration, shared_buffers 16 MB with
# everything in the page cache; the 384-d embedding-like set in memory and larger than
# memory), pg_scan.py (heap SUM scans, 128 B - 6 KB rows) and pg_oltp.py (pgbench TPC-B-like
# and select-only, in memory and at 1/8), each with counting runs (reads, syscalls and CPU
# per query), appending JSON lines to OUTDIR/postgres.jsonl; then
# bench/harness/report/postgres_report.py prints the tables and writes OUTDIR/*.png.
# Sizes and rounds: environment PG_VECTOR_N (1000000), PG_EMBEDDING_N (100000), and
# PG_VECTOR_ARGS, PG_COMMON_ARGS, PG_EMBEDDING_ARGS, PG_SCAN_ARGS, PG_OLTP_ARGS (passed
# through, e.g. PG_VECTOR_ARGS="--rounds 5"). Needs ~8 GB of RAM and ~15 GB of disk at the
# defaults; about 1.5 hours on 2 cores (the 1M-vector HNSW build alone takes ~12 minutes).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/pg-results}
mkdir -p "$OUT"
bash "$ROOT/scripts/setup.sh" > /dev/null
bash "$ROOT/scripts/postgres.sh" build
[ -x "$ROOT/build/calico_bench" ] || {
  cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build "$ROOT/build" --target calico_bench; }
V="$ROOT/bench/postgres/pg_vector.py"
# shellcheck disable=SC2086
python3 "$V" --out "$OUT" --n "${PG_VECTOR_N:-1000000}" --modes inmem,ltm-cg --counts ${PG_VECTOR_ARGS:-}
# shellcheck disable=SC2086
python3 "$V" --out "$OUT" --n 100000 --modes common --ltm-ef 40,100 --counts \
  --configs vanilla-sync,vanilla-worker,vanilla-io_uring,calico-array,calico+opt,calico ${PG_COMMON_ARGS:-}
# shellcheck disable=SC2086
python3 "$V" --out "$OUT" --dataset embedding --n "${PG_EMBEDDING_N:-100000}" --modes inmem,ltm-cg \
  --ef 40,100 --ltm-ef 40 --cgroup-extra-mb 64 --counts \
  --configs vanilla-sync,vanilla-worker,vanilla-io_uring,calico ${PG_EMBEDDING_ARGS:-}
# shellcheck disable=SC2086
python3 "$ROOT/bench/postgres/pg_scan.py" --out "$OUT" --counts ${PG_SCAN_ARGS:-}
# shellcheck disable=SC2086
python3 "$ROOT/bench/postgres/pg_oltp.py" --out "$OUT" ${PG_OLTP_ARGS:-}
"$ROOT/.venv/bin/python" "$ROOT/bench/harness/report/postgres_report.py" "$OUT/postgres.jsonl" --out "$OUT"
