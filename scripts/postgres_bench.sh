#!/usr/bin/env bash
# The PostgreSQL benchmarks ([Calico] Figures 8-9 plus pgbench): vanilla vs calico.
#   scripts/postgres_bench.sh [OUTDIR]      (default ./pg-results)
# Builds PostgreSQL if needed, then runs bench/postgres/pg_vector.py (pgvector HNSW: in memory,
# larger than memory with the OS cache dropped and in a memory cgroup; the ablation),
# pg_scan.py (heap SUM scans, 128 B - 6 KB rows) and pg_oltp.py (pgbench TPC-B-like and
# select-only, in memory and at 1/8), appending JSON lines to OUTDIR/postgres.jsonl; then
# bench/report/postgres_report.py prints the tables and writes OUTDIR/*.png.
# Sizes and rounds: environment PG_VECTOR_ARGS, PG_SCAN_ARGS, PG_OLTP_ARGS (passed through,
# e.g. PG_VECTOR_ARGS="--n 200000 --rounds 5"). Needs ~8 GB of RAM and ~10 GB of disk at the
# defaults; about an hour on 2 cores (the 1M-vector HNSW build alone takes ~12 minutes).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/pg-results}
mkdir -p "$OUT"
bash "$ROOT/scripts/setup.sh" > /dev/null
bash "$ROOT/scripts/postgres.sh" build
[ -x "$ROOT/build/calico_bench" ] || {
  cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
  cmake --build "$ROOT/build" --target calico_bench; }
# shellcheck disable=SC2086
python3 "$ROOT/bench/postgres/pg_vector.py" --out "$OUT" ${PG_VECTOR_ARGS:-}
# shellcheck disable=SC2086
python3 "$ROOT/bench/postgres/pg_scan.py" --out "$OUT" ${PG_SCAN_ARGS:-}
# shellcheck disable=SC2086
python3 "$ROOT/bench/postgres/pg_oltp.py" --out "$OUT" ${PG_OLTP_ARGS:-}
"$ROOT/.venv/bin/python" "$ROOT/bench/report/postgres_report.py" "$OUT/postgres.jsonl" "$OUT"
