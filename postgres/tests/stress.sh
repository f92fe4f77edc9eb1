#!/usr/bin/env bash
# Stress test (postgres/tests/run.sh) on calico with a 1 MB pool (128 buffers):
#   pgbench with 4 clients mixing TPC-B-like transactions, HNSW inserts (exclusive locks on
#   index pages: versions change under optimistic readers) and HNSW searches (optimistic
#   reads, group prefetch) and, at the same time, a session looping
#   CREATE / INSERT / CREATE INDEX / TRUNCATE / VACUUM / VACUUM FULL (new relfilenode) / DROP.
# Then:
#   - pgbench finished with no failed transaction and the TPC-B balance invariants hold
#     (accounts, tellers, branches and history sum to the same);
#   - once the inserts stopped, HNSW searches give the same answers with optimistic reads and
#     group prefetch on and off (the index is the same; only how pages are read differs);
#   - amcheck finds nothing: bt_index_check(heapallindexed) on every index, verify_heapam on
#     every table;
#   - the translation counters are consistent: every prefix with a mapped buffer has a slot,
#     slots of dropped relations were reclaimed (slots in use <= prefixes in the pool plus
#     those emptied since the last sweep), and every reclaimed slot was punched.
# Usage: stress.sh TMPDIR [SECONDS]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PG="$HERE/../../scripts/postgres.sh"
T=$1
SECS=${2:-${CALICO_PG_STRESS_SECONDS:-20}}
export DB=calico_stress SECS

bash "$PG" run calico shared_buffers=1MB max_connections=20 -- bash -c '
set -euo pipefail
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }
dropdb --if-exists "$DB"
createdb "$DB"
pgbench -i -s 2 -q "$DB" 2>&1 | tail -1
q "CREATE EXTENSION amcheck; CREATE EXTENSION pg_buffercache; CREATE EXTENSION vector;"
q "SELECT setseed(0.5); CREATE TABLE vec (id serial PRIMARY KEY, e vector(16));
   INSERT INTO vec (e) SELECT (SELECT array_agg(random()::real) FROM generate_series(1, 16) WHERE g > 0)::vector
     FROM generate_series(1, 5000) g;
   CREATE INDEX vec_hnsw ON vec USING hnsw (e vector_l2_ops) WITH (m = 8, ef_construction = 32);"
cat > "$PGHOST/vec_insert.sql" <<SQL
INSERT INTO vec (e) SELECT (SELECT array_agg(random()::real) FROM generate_series(1, 16) WHERE g > 0)::vector FROM generate_series(1, 5) g;
SQL
cat > "$PGHOST/vec_search.sql" <<SQL
\\set id random(1, 5000)
SELECT id FROM vec ORDER BY e <-> (SELECT e FROM vec WHERE id = :id) LIMIT 10;
SQL

churn() {
  local i=0 end=$(( $(date +%s) + SECS ))
  while [ "$(date +%s)" -lt "$end" ]; do
    i=$((i + 1))
    psql -X -q -v ON_ERROR_STOP=1 -d "$DB" > /dev/null <<SQL
CREATE TABLE churn_$i (a int, b text);
INSERT INTO churn_$i SELECT g, repeat(md5(g::text), 4) FROM generate_series(1, 3000) g;
CREATE INDEX churn_${i}_a ON churn_$i (a);
DELETE FROM churn_$i WHERE a % 3 = 0;
VACUUM churn_$i;
TRUNCATE churn_$i;
INSERT INTO churn_$i SELECT g, md5(g::text) FROM generate_series(1, 2000) g;
VACUUM FULL churn_$i;
SELECT count(*) FROM churn_$i WHERE a < 100;
DROP TABLE churn_$i;
SQL
  done
  echo "churn: $i create/truncate/vacuum full/drop rounds"
}
churn > "$PGHOST/churn.out" 2>&1 &
churn_pid=$!
pgbench -n -c 4 -j 2 -T "$SECS" -b tpcb-like@4 -f "$PGHOST/vec_insert.sql@1" -f "$PGHOST/vec_search.sql@3" \
  "$DB" > "$PGHOST/pgbench.out" 2>&1 || { cat "$PGHOST/pgbench.out"; exit 1; }
wait "$churn_pid" || { cat "$PGHOST/churn.out"; echo "churn session failed"; exit 1; }
cat "$PGHOST/churn.out"
grep -E "number of (transactions actually processed|failed)|tps" "$PGHOST/pgbench.out" | sed -n 1,3p
if grep -q "number of failed transactions: [1-9]" "$PGHOST/pgbench.out"; then echo "pgbench had failed transactions"; exit 1; fi

q "SELECT '\''optimistic reads: '\'' || optimistic_ok || '\'' validated, '\'' || optimistic_failed || '\'' failed and fell back'\'' FROM pg_calico_stats()"
balances=$(q "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM pgbench_tellers),
                     (SELECT sum(bbalance) FROM pgbench_branches), (SELECT sum(delta) FROM pgbench_history)")
echo "balances accounts|tellers|branches|history = $balances"
echo "$balances" | awk -F"|" "{ exit !(\$1 == \$2 && \$2 == \$3 && \$3 == \$4) }" || { echo "TPC-B invariants broken"; exit 1; }

searches() {
  PGOPTIONS="-c calico_optimistic_reads=$1 -c calico_group_prefetch=$2" psql -X -A -t -q -d "$DB" -c "
    SELECT string_agg((SELECT string_agg(id::text, '\'','\'') FROM
      (SELECT id FROM vec ORDER BY e <-> q.e LIMIT 10) n), '\'';'\'' ORDER BY q.id)
    FROM vec q WHERE q.id % 100 = 0" | md5sum
}
a=$(searches on on); b=$(searches off off)
echo "HNSW after concurrent inserts: $(q "SELECT count(*) FROM vec") vectors; searches optimistic on/off: $a / $b"
[ "$a" = "$b" ] || { echo "optimistic and pinned searches differ"; exit 1; }
q "SELECT bt_index_check(c.oid, true) FROM pg_index i
   JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
   WHERE a.amname = '\''btree'\'' AND c.relpersistence = '\''p'\''" > /dev/null
corrupt=$(q "SELECT count(*) FROM pg_class c, verify_heapam(c.oid) v
             WHERE c.relkind = '\''r'\'' AND c.relpersistence = '\''p'\''")
echo "amcheck: every btree index checked (heapallindexed); verify_heapam reports $corrupt problems"
[ "$corrupt" -eq 0 ] || exit 1

# A drop sweeps the empty slots; then nothing else runs while the counters are read.
q "CREATE TABLE sweep (a int); INSERT INTO sweep VALUES (1); DROP TABLE sweep;"
stats=$(q "SELECT s.slots_used, p.prefixes, s.reclaimed_slots, s.punched_bytes, s.resident_bytes, s.dense_bytes
           FROM pg_calico_stats() s,
                (SELECT count(DISTINCT (reltablespace, reldatabase, relfilenode, relforknumber, relblocknumber >> 17)) prefixes
                 FROM pg_buffercache WHERE relfilenode IS NOT NULL) p")
echo "translation: slots used|prefixes in pool|reclaimed|punched bytes|resident bytes|dense bytes = $stats"
echo "$stats" | awk -F"|" "{ ok = \$1 >= \$2 && \$1 <= \$2 + 32 && \$3 > 0 && \$4 == \$3 * 1048576 && \$5 <= \$6 + 1048576;
                            exit !ok }" || { echo "translation counters inconsistent"; exit 1; }
' 2>&1 | tee "$T/stress.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || { echo "=== stress: FAILED"; exit 1; }
