#!/usr/bin/env bash
# Differential test of the extension (postgres/tests/run.sh ext): stock pgvector on the vanilla
# server and the calico extension with the patched pgvector (ext: the same server binaries)
# open the SAME data directory in turn, so they search the same index files:
#   1. vanilla builds the data and indexes (HNSW: l2, ip, cosine, halfvec, unlogged; IVFFlat)
#      and answers differential_ext_queries.sql (plain, filtered, iterative scans);
#   2. ext answers the same (and calico 0.1 updates to the current version in place):
#      identical output, at the default pool and at shared_buffers =
#      1MB, with calico's translation and prefetch on and off, with 2 relation slots and 2
#      hint chunks (slots evicted by the clock, chunks exhausted); calico_stats() must show
#      hint hits (the translation path was used), stale hints at 1 MB, and, on a cold 16 MB
#      pool, prefetch reads and reads advised ahead (io_method worker and io_uring; the
#      answers identical with calico.lookahead 0, 2 and 4); then searches are cancelled at
#      random moments on a small pool (most while prefetched reads are held: counted by
#      calico_stats().prefetch_abandoned, which must be > 0), after which the answers must
#      still be identical and the server log free of warnings;
#   3. ext changes the data (differential_ext_churn.sql: inserts, DELETE + VACUUM, REINDEX,
#      TRUNCATE, DROP/CREATE INDEX) and answers again; vanilla then answers the same on
#      ext's files (the other way round), and exact (sequential) kNN agrees too.
# Usage: differential_ext.sh TMPDIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PG="$HERE/../../scripts/postgres.sh"
T=$1
DB=calico_diff_ext
export CALICO_PGDATA=$T/shared-data
fail() { echo "=== differential_ext: FAILED: $*"; exit 1; }
Q=$HERE/differential_ext_queries.sql

# on FLAVOR LOG [SETTING...] -- SCRIPT: runs SCRIPT (bash) against FLAVOR on the shared data.
on() {
  local flavor=$1 log=$2
  shift 2
  local settings=()
  while [ "$1" != "--" ]; do settings+=("$1"); shift; done
  shift
  bash "$PG" run "$flavor" ${settings[@]+"${settings[@]}"} -- bash -c "set -euo pipefail; $1" \
    > "$T/$log.log" 2>&1 || { tail -20 "$T/$log.log"; fail "$log"; }
}
q() { echo "psql -X -A -t -q -v ON_ERROR_STOP=1 -d $DB $*"; }
# SQL used with q -f (files: no quoting through bash -c)
cat > "$T/create.sql" <<'SQL'
CREATE EXTENSION IF NOT EXISTS calico;
SQL
echo "SELECT calico_reset();" > "$T/reset.sql"
echo "SELECT hits, misses, stale, prefetch_reads FROM calico_stats();" > "$T/stats.sql"
echo "SELECT prefetch_reads, prefetch_used, lookahead_reads FROM calico_stats();" > "$T/stats-pf.sql"
echo "SELECT prefetch_reads, prefetch_used, prefetch_abandoned FROM calico_stats();" > "$T/stats-abort.sql"
cat > "$T/exact.sql" <<'SQL'
SET enable_indexscan = off;
SELECT 'exact', q.id, (SELECT string_agg(id::text, ',') FROM
  (SELECT id FROM items ORDER BY embedding <-> q.embedding, id LIMIT 10) n) FROM queries q ORDER BY q.id;
SQL
chmod 644 "$T"/*.sql
same() {  # same A B WHAT
  cmp -s "$1" "$2" || { diff "$1" "$2" | sed -n 1,20p; fail "$3"; }
}

# 1. vanilla builds everything and answers.
on vanilla vanilla-build -- "dropdb --if-exists $DB && createdb $DB &&
  $(q -f "$HERE/differential_ext_data.sql") > /dev/null && $(q -f "$Q") > $T/stock-A.out"
n=$(grep -c . "$T/stock-A.out")
[ "$n" -ge 400 ] || fail "only $n result lines from vanilla"

# 2. ext on vanilla's files: identical answers, through the hints.
on ext ext-A -- "$(q -f "$T/create.sql") && $(q -f "$T/reset.sql") > /dev/null &&
  $(q -f "$Q") > $T/ext-A.out && $(q -f "$Q") > $T/ext-A2.out &&
  PGOPTIONS='-c calico.translation=off -c calico.group_prefetch=off' $(q -f "$Q") > $T/ext-A-off.out &&
  $(q -f "$T/stats.sql") > $T/stats-A.out"
same "$T/stock-A.out" "$T/ext-A.out" "ext answers differ from stock pgvector's on stock's index"
same "$T/stock-A.out" "$T/ext-A2.out" "ext's second (warm) run differs"
same "$T/stock-A.out" "$T/ext-A-off.out" "ext with calico.translation/group_prefetch off differs"
IFS='|' read -r hits misses stale reads < "$T/stats-A.out"
echo "differential_ext: $n results identical (stock pgvector vs ext on stock's indexes);" \
     "calico hits|misses|stale|prefetch reads = $hits|$misses|$stale|$reads"
[ "$hits" -gt "$misses" ] || fail "hint hits ($hits) not above misses ($misses): the translation path was not used"

# An older calico updates in place: 0.1 -> 0.3 by ALTER EXTENSION UPDATE, and calico_stats()
# then has 0.3's columns.
cat > "$T/upgrade.sql" <<'SQL'
DROP EXTENSION IF EXISTS calico;
CREATE EXTENSION calico VERSION '0.1';
ALTER EXTENSION calico UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'calico';
SELECT lookahead_reads >= 0 FROM calico_stats();
SQL
chmod 644 "$T/upgrade.sql"
on ext ext-upgrade -- "$(q -f "$T/upgrade.sql") > $T/upgrade.out"
[ "$(tr '\n' ' ' < "$T/upgrade.out")" = "0.3 t " ] || fail "calico 0.1 -> 0.3 update: $(cat "$T/upgrade.out")"
echo "differential_ext: calico 0.1 updated to 0.3 (ALTER EXTENSION UPDATE); calico_stats() has lookahead_reads"

on ext ext-A-tiny shared_buffers=1MB -- "$(q -f "$T/reset.sql") > /dev/null && $(q -f "$Q") > $T/ext-A-tiny.out &&
  $(q -f "$T/stats.sql") > $T/stats-A-tiny.out"
same "$T/stock-A.out" "$T/ext-A-tiny.out" "ext at shared_buffers = 1MB differs"
IFS='|' read -r hits misses stale reads < "$T/stats-A-tiny.out"
echo "differential_ext: shared_buffers = 1MB identical; hits|misses|stale = $hits|$misses|$stale"
[ "$stale" -gt 0 ] || fail "no stale hint at shared_buffers = 1MB: eviction was not exercised"

# Few relation slots and hint chunks: slots are taken from each other (clock), chunks run out;
# the answers stay the same and the hints still serve most reads.
echo "SELECT hits, misses, relations, chunks_used FROM calico_stats();" > "$T/stats-dir.sql"
chmod 644 "$T/stats-dir.sql"
on ext ext-A-few calico.max_relations=2 calico.hint_chunks=2 -- \
  "$(q -f "$T/reset.sql") > /dev/null && $(q -f "$Q") > $T/ext-A-few.out && $(q -f "$T/stats-dir.sql") > $T/stats-A-few.out"
same "$T/stock-A.out" "$T/ext-A-few.out" "ext with 2 relation slots and 2 hint chunks differs"
IFS='|' read -r hits misses relations chunks < "$T/stats-A-few.out"
echo "differential_ext: 2 relation slots, 2 hint chunks: identical; hits|misses|relations|chunks = $hits|$misses|$relations|$chunks"
[ "$relations" -le 2 ] && [ "$chunks" -le 2 ] || fail "more slots or chunks in use than configured"
[ "$hits" -gt 0 ] && [ "$misses" -gt 0 ] || fail "hits $hits, misses $misses: the clock and the chunk limit were not exercised"

for io in worker io_uring; do
  on ext ext-A-$io shared_buffers=16MB max_connections=20 io_method=$io -- \
    "$(q -f "$T/reset.sql") > /dev/null && $(q -f "$Q") > $T/ext-A-$io.out &&
     $(q -f "$T/stats-pf.sql") > $T/stats-A-$io.out &&
     PGOPTIONS='-c calico.lookahead=0' $(q -f "$Q") > $T/ext-A-$io-la0.out &&
     PGOPTIONS='-c calico.lookahead=4' $(q -f "$Q") > $T/ext-A-$io-la4.out"
  same "$T/stock-A.out" "$T/ext-A-$io.out" "ext with a cold 16 MB pool ($io) differs"
  same "$T/stock-A.out" "$T/ext-A-$io-la0.out" "ext with a 16 MB pool ($io) and calico.lookahead = 0 differs"
  same "$T/stock-A.out" "$T/ext-A-$io-la4.out" "ext with a 16 MB pool ($io) and calico.lookahead = 4 differs"
  IFS='|' read -r reads used ahead < "$T/stats-A-$io.out"
  echo "differential_ext: cold 16 MB pool, io_method=$io: identical (calico.lookahead 2, 0 and 4);" \
       "prefetch reads|used|lookahead reads = $reads|$used|$ahead"
  [ "$reads" -gt 0 ] || fail "no prefetch read started ($io): the group prefetch was not exercised"
  [ "$ahead" -gt 0 ] || fail "no read advised ahead ($io): calico.lookahead was not exercised"
done

# Query cancels at random moments while searches hold prefetched pins (a cold 16 MB pool):
# the aborts must leave no pin or read behind (the resource owner releases them, calico's
# transaction callbacks forget them), so the next searches answer identically and the log
# shows no leak or error other than the cancels.
cat > "$T/cancel.sh" <<'SH'
set -uo pipefail
psql -X -A -t -q -d "$1" -f "$2" > /dev/null 2> "$3/cancel-client.err" &
client=$!
for i in $(seq 1 200); do
  sleep 0.0$(( RANDOM % 5 + 1 ))
  kill -0 "$client" 2> /dev/null || break
  psql -X -A -t -q -d "$1" -c "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'" > /dev/null
done
wait "$client"
exit 0
SH
chmod 755 "$T/cancel.sh"
# Many short searches (no ON_ERROR_STOP: the client goes on after each cancel), over every
# HNSW index and with iterative scans, at a high ef_search (longer expansions).
{
  echo "SET enable_seqscan = off; SET enable_bitmapscan = off; SET hnsw.ef_search = 200; SET hnsw.iterative_scan = relaxed_order;"
  for i in $(seq 1 1500); do
    qid=$(( (i * 500) % 20000 + 500 ))
    case $(( i % 4 )) in
      0) echo "SELECT id FROM items ORDER BY embedding <-> (SELECT embedding FROM items WHERE id = $qid) LIMIT 10;" ;;
      1) echo "SELECT id FROM items ORDER BY embedding <#> (SELECT embedding FROM items WHERE id = $qid) LIMIT 10;" ;;
      2) echo "SELECT id FROM items_unlogged ORDER BY embedding <-> (SELECT embedding FROM items WHERE id = $qid) LIMIT 10;" ;;
      3) echo "SELECT id FROM items WHERE cat = 5 ORDER BY half <-> (SELECT half FROM items WHERE id = $qid) LIMIT 10;" ;;
    esac
  done
} > "$T/cancel-load.sql"
chmod 644 "$T/cancel-load.sql"
rm -f "$T/cancel-client.err"
on ext ext-cancel shared_buffers=16MB max_connections=20 io_method=worker -- \
  "first=\$(( \$(wc -l < \$PGHOST/server.log) + 1 )) &&
   $(q -f "$T/reset.sql") > /dev/null && bash $T/cancel.sh $DB $T/cancel-load.sql $T && $(q -f "$Q") > $T/ext-A-cancel.out &&
   $(q -f "$T/stats-abort.sql") > $T/stats-A-cancel.out && tail -n +\$first \$PGHOST/server.log > $T/cancel-server.log"
same "$T/stock-A.out" "$T/ext-A-cancel.out" "ext's answers after cancelled searches differ"
cancels=$(grep -c "canceling statement due to user request" "$T/cancel-client.err" || true)
others=$(grep -v "canceling statement due to user request\|^CONTEXT\|^STATEMENT\|^ *$\|^LINE\|^ *\^" "$T/cancel-client.err" || true)
log_bad=$(grep -E "WARNING|PANIC|TRAP|FATAL|leak|not pinned|terminated by signal" "$T/cancel-server.log" || true)
IFS='|' read -r reads used abandoned < "$T/stats-A-cancel.out"
echo "differential_ext: $cancels searches cancelled mid-run on a small pool, $abandoned of them holding" \
     "prefetched reads; afterwards identical; prefetch reads|used = $reads|$used"
[ -z "$others" ] || { echo "$others" | sed -n 1,10p; fail "errors other than cancels during the cancelled run"; }
[ -z "$log_bad" ] || { echo "$log_bad" | sed -n 1,10p; fail "the server logged warnings or worse during the cancelled run"; }
[ "$cancels" -gt 0 ] || fail "no search was cancelled: the abort path was not exercised"
[ "$abandoned" -gt 0 ] || fail "no cancel found prefetched reads held: the abort path of the prefetch was not exercised"

# Optimistic reads under concurrent writers: searches read element tuples under a pin without
# the content lock (calico_api.h) while other sessions UPDATE vectors (HNSW inserts rewrite
# neighbour lists through GenericXLog on the pages being read), and VACUUM marks and repairs
# deleted elements. A read that validated a torn tuple would fail or return a distance out of
# place; every search checks that the distances it returns, recomputed from the rows, are in
# order, and fails (a division by zero) if not. Validations must have failed and been read again locked
# (optimistic_retries > 0): the fallback ran. The data then goes on to step 3, whose
# comparison of both servers on ext's files covers what these writers left.
cat > "$T/opt-search.sql" <<'SQL'
\set q random(1, 40)
SELECT CASE WHEN bool_and(ok) THEN 1 ELSE 1 / sum(0)::int END FROM (
  SELECT d >= lag(d, 1, d) OVER (ORDER BY n) AS ok FROM (
    SELECT row_number() OVER () AS n, d FROM (
      SELECT embedding <-> (SELECT embedding FROM queries WHERE id = :q * 500) AS d FROM items
      ORDER BY embedding <-> (SELECT embedding FROM queries WHERE id = :q * 500) LIMIT 20) s) t) u;
SQL
cat > "$T/opt-write.sql" <<'SQL'
\set id random(1, 20000)
UPDATE items SET embedding = v, half = v::halfvec
  FROM (SELECT (SELECT array_agg(random()::real) FROM generate_series(1, 32))::vector v) s WHERE id = :id;
SQL
echo "VACUUM items;" > "$T/opt-vacuum.sql"
echo "SELECT optimistic_reads, optimistic_retries FROM calico_stats();" > "$T/stats-opt.sql"
chmod 644 "$T"/opt-*.sql "$T/stats-opt.sql"
on ext ext-optimistic max_connections=20 -- \
  "$(q -f "$T/reset.sql") > /dev/null &&
   PGOPTIONS='-c enable_seqscan=off -c enable_bitmapscan=off -c hnsw.ef_search=100' pgbench -n -T 10 -c 3 -j 3 \
     -f $T/opt-search.sql@10 -f $T/opt-write.sql@6 -f $T/opt-vacuum.sql@1 $DB > $T/opt-pgbench.out 2>&1 &&
   $(q -f "$T/stats-opt.sql") > $T/stats-opt.out" || { tail -5 "$T/opt-pgbench.out"; fail "concurrent searches and writers"; }
IFS='|' read -r oreads oretries < "$T/stats-opt.out"
otx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$T/opt-pgbench.out")
echo "differential_ext: $otx transactions of searches (distances in order), updates and VACUUM at once;" \
     "optimistic reads|retried locked = $oreads|$oretries"
[ "$oreads" -gt 0 ] || fail "no optimistic read: the optimistic path was not exercised"
[ "$oretries" -gt 0 ] || fail "no optimistic read failed validation: the fallback was not exercised"

# 3. ext changes the data; then both answer on ext's files.
on ext ext-churn -- "$(q -f "$HERE/differential_ext_churn.sql") > /dev/null && $(q -f "$Q") > $T/ext-B.out"
on vanilla vanilla-B -- "$(q -f "$Q") > $T/stock-B.out &&
  $(q -f "$T/exact.sql") > $T/stock-exact.out"
same "$T/ext-B.out" "$T/stock-B.out" "stock pgvector's answers differ from ext's on ext's (changed) indexes"
on ext ext-exact -- "$(q -f "$T/exact.sql") > $T/ext-exact.out"
same "$T/stock-exact.out" "$T/ext-exact.out" "exact kNN differs"
recall=$(python3 - "$T/stock-exact.out" "$T/ext-B.out" <<'PY'
import sys
truth = {l.split('|')[1]: set(l.strip().split('|')[2].split(',')) for l in open(sys.argv[1])}
got = {l.split('|')[1]: set(l.strip().split('|')[2].split(',')) for l in open(sys.argv[2]) if l.startswith('hnsw-l2|')}
assert len(got) == len(truth) == 40, (len(got), len(truth))
print('%.3f' % (sum(len(got[k] & truth[k]) for k in truth) / (10.0 * len(truth))))
PY
)
echo "differential_ext: after churn on ext, $(grep -c . "$T/ext-B.out") results identical on vanilla; HNSW recall@10 vs exact = $recall"
python3 -c "import sys; sys.exit(0 if $recall >= 0.80 else 1)" || fail "recall $recall < 0.80"
