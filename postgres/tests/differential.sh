#!/usr/bin/env bash
# Differential test (postgres/tests/run.sh): see the checks below. Usage: differential.sh TMPDIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PG="$HERE/../../scripts/postgres.sh"
T=$1
DB=calico_diff
fail() { echo "=== differential: FAILED: $*"; exit 1; }

# sql FLAVOR OUT FILE... [-- SETTING...]: runs the files in a fresh session each.
psql_files() {
  local out=$1
  shift
  : > "$out"
  local f
  for f in "$@"; do
    psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$DB" -f "$f" >> "$out" || return 1
  done
}
export -f psql_files
export DB

# recall FILE: recall@10 of the hnsw-l2 lines against the exact-l2 line of $T/exact.out
recall() {
  python3 - "$T/exact.out" "$1" <<'PY'
import sys
exact = [l for l in open(sys.argv[1]) if l.startswith('exact-l2|')][0].strip().split('|')[1]
truth = [set(x.split(',')) for x in exact.split(';')]
got = [set(l.strip().split('|')[2].split(',')) for l in open(sys.argv[2]) if l.startswith('hnsw-l2|')]
assert len(got) == len(truth) == 50, (len(got), len(truth))
print('%.3f' % (sum(len(a & b) for a, b in zip(got, truth)) / (10.0 * len(truth))))
PY
}

for flavor in vanilla calico; do
  bash "$PG" run "$flavor" -- bash -c "
    dropdb --if-exists $DB && createdb $DB &&
    psql_files $T/$flavor-data.out $HERE/differential_data.sql &&
    psql -X -q -d $DB -f $HERE/differential_index.sql &&
    psql_files $T/$flavor-hnsw.out $HERE/differential_hnsw.sql" > "$T/diff-$flavor.log" 2>&1 ||
    { tail -20 "$T/diff-$flavor.log"; fail "queries on $flavor"; }
done

# 1. Heap, B-tree, bitmap, DML, TRUNCATE and exact kNN: identical on both builds.
cmp -s "$T/vanilla-data.out" "$T/calico-data.out" ||
  { diff "$T/vanilla-data.out" "$T/calico-data.out" | sed -n 1,20p; fail "vanilla and calico differ"; }
cp "$T/calico-data.out" "$T/exact.out"
echo "differential: $(grep -c . "$T/calico-data.out") query results identical on vanilla and calico"

# 2. HNSW recall on each build's own index (graphs differ: levels are random).
for flavor in vanilla calico; do
  r=$(recall "$T/$flavor-hnsw.out")
  echo "differential: $flavor HNSW recall@10 (ef_search 40) = $r"
  python3 -c "import sys; sys.exit(0 if $r >= 0.80 else 1)" || fail "$flavor recall $r < 0.80"
done

# 3. On calico's index, every knob setting and pool size gives the same answers as the
#    pinned path: optimistic reads and group prefetch change how pages are read, not what.
run_knobs() {  # run_knobs TAG [SETTING...]
  local tag=$1
  shift
  bash "$PG" run calico "$@" -- bash -c "
    for k in 'on on' 'off off' 'on off' 'off on'; do
      set -- \$k
      PGOPTIONS=\"-c calico_optimistic_reads=\$1 -c calico_group_prefetch=\$2\" \
        psql_files $T/knobs-$tag-\$1-\$2.out $HERE/differential_hnsw.sql || exit 1
    done
    psql -X -A -t -d $DB -c 'SELECT optimistic_ok, optimistic_failed, prefetch_resident, prefetch_io FROM pg_calico_stats()' > $T/stats-$tag.out" \
    > "$T/knobs-$tag.log" 2>&1 || { tail -20 "$T/knobs-$tag.log"; fail "knob runs ($tag)"; }
  local f
  for f in "$T"/knobs-"$tag"-*.out; do
    cmp -s "$f" "$T/calico-hnsw.out" ||
      { diff "$T/calico-hnsw.out" "$f" | sed -n 1,10p; fail "$(basename "$f") differs from the first calico run"; }
  done
  echo "differential: calico ($tag): 4 knob settings x $(grep -c . "$T/calico-hnsw.out") searches identical;" \
       "optimistic ok|failed|prefetched resident|reads started = $(cat "$T/stats-$tag.out")"
}
#    default: 128 MB, io_method=worker; tiny: 1 MB (no pins to spare: nothing prefetched);
#    small: 16 MB and 20 connections (a backend's share of pins is then 2048 buffers over
#    ~80 processes, GetPinLimit), each server started cold, so the group prefetch reads into
#    shared buffers, through I/O workers and through io_uring (completions reaped by
#    whoever waits).
run_knobs default
run_knobs tiny shared_buffers=1MB
run_knobs small-worker shared_buffers=16MB max_connections=20 io_method=worker
run_knobs small-uring shared_buffers=16MB max_connections=20 io_method=io_uring
ok=$(cut -d'|' -f1 "$T/stats-default.out")
[ "$ok" -gt 0 ] || fail "no optimistic read validated: the optimistic path was not exercised"
for tag in small-worker small-uring; do
  reads=$(cut -d'|' -f4 "$T/stats-$tag.out")
  [ "$reads" -gt 0 ] || fail "no prefetch read started ($tag): the prefetch path was not exercised"
done
