#!/usr/bin/env bash
# Interleavings of two backends that the stress test can hit only by luck, forced on calico
# with the patch's test-only pause points (pg_calico_test_arm / _wait / _release, see
# buf_table.c): a backend armed for a point and a block stops there until another session
# releases it. Each case runs on a freshly started server (postgres/tests/run.sh):
#   late_publish  A reads a block in and stops once BM_VALID is visible; B pins the block,
#                 locks it exclusively and stops holding the lock; A goes on. An optimistic
#                 read must now be refused: a late publish must not mark the page readable
#                 under B's exclusive lock.
#   slot_reuse    A starts an optimistic read of block 0 of p and stops once p's slot is
#                 resolved; p is dropped (its slot reclaimed) and q created, which gets the
#                 same slot, its block 0 readable at the same entry; A goes on. A must not
#                 validate q's page as p's block.
#   stale_read    as slot_reuse, but the reclaimed slot stays free: when A goes on, the
#                 memfd's allocated bytes (pg_calico_stats().resident_bytes) must not grow:
#                 a lock-free read of a punched slot must not leave memory behind.
# Every wait is on a condition (a paused backend, a statement's end) with a 60 s watchdog.
# Usage: interleavings.sh TMPDIR
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PG="$HERE/../../scripts/postgres.sh"
export DB=calico_interleavings

if [ "${1:-}" != "--case" ]; then
  T=$1
  # io_method=sync: a read completes in the backend that issued it, the one armed for
  # read_done (pause points are armed per backend; with io_method=worker an I/O worker would
  # complete it, with io_uring possibly another backend).
  settings=(autovacuum=off max_connections=20 io_method=sync)
  failed=()
  for c in setup late_publish slot_reuse stale_read; do
    bash "$PG" run calico "${settings[@]}" -- bash "$0" --case "$c" 2>&1 | tee -a "$T/interleavings.log" ||
      failed+=("$c")
    [ "$c" != setup ] || [ "${#failed[@]}" -eq 0 ] || break
  done
  [ "${#failed[@]}" -eq 0 ] || { echo "=== interleavings: FAILED: ${failed[*]}"; exit 1; }
  exit 0
fi

# ---- inside a running server (scripts/postgres.sh run): one case ----
case_name=$2
S=$(mktemp -d /tmp/calico-pg-interleave-XXXXXX)
declare -A SFD SN
pids=()
cleanup() {
  local p
  # a failed case may leave a backend paused: let it go before the server stops
  psql -X -q -d "$DB" -c "SELECT pg_calico_test_release(p) FROM unnest('{resolved,read_done,exclusive}'::text[]) p" \
    > /dev/null 2>&1 || true
  for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2> /dev/null || true; done
  rm -rf "$S"
}
trap cleanup EXIT

fail() { echo "interleavings/$case_name: FAILED: $*"; exit 1; }
say() { echo "interleavings/$case_name: $*"; }

# A session is a psql reading from a fifo, so that a statement can be left blocked while
# others run. send queues a statement and a marker; await waits for the marker and puts
# what the statement printed in R.
session_open() {
  local name=$1 fd
  mkfifo "$S/$name.in"
  psql -X -A -t -q -d "$DB" < "$S/$name.in" > "$S/$name.out" 2>&1 &
  pids+=($!)
  exec {fd}> "$S/$name.in"
  SFD[$name]=$fd
  SN[$name]=0
}
send() {
  local name=$1
  SN[$name]=$(( ${SN[$name]} + 1 ))
  printf '%s;\n\\echo __end_%s__\n' "$2" "${SN[$name]}" >&"${SFD[$name]}"
}
await() {
  local name=$1 n=${SN[$1]} deadline=$(( $(date +%s) + 60 ))
  until grep -q "^__end_${n}__\$" "$S/$name.out"; do
    [ "$(date +%s)" -lt "$deadline" ] || { cat "$S/$name.out"; fail "session $name gave no answer within 60 s"; }
    sleep 0.05
  done
  R=$(awk -v a="__end_$(( n - 1 ))__" -v b="__end_${n}__" -v p=$(( n == 1 )) \
        '$0 == b { exit } p { print } $0 == a { p = 1 }' "$S/$name.out")
  if grep -q "ERROR" <<< "$R"; then fail "session $name: $R"; fi
}
q() { send "$1" "$2"; await "$1"; }
# wait_until SQL VALUE: runs SQL in session D until it prints VALUE (watchdog: 60 s).
wait_until() {
  local deadline=$(( $(date +%s) + 60 ))
  while q D "$1"; [ "$R" != "$2" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "'$1' still gives '$R', not '$2', after 60 s"
    sleep 0.05
  done
}
# paused POINT: waits until some backend is paused at POINT.
paused() {
  q D "SELECT pg_calico_test_wait('$1', 60000)"
  [ "$R" = "t" ] || fail "no backend reached pause point '$1' within 60 s"
}

case "$case_name" in
  setup)
    dropdb --if-exists "$DB"
    createdb "$DB"
    psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -c "CREATE EXTENSION pg_buffercache;
      CREATE TABLE t (id int, v int); INSERT INTO t VALUES (1, 0); CHECKPOINT;"
    say "database $DB ready"
    ;;

  late_publish)
    session_open A; session_open B; session_open D
    q D "SELECT count(*) FROM pg_buffercache b JOIN pg_database d ON d.oid = b.reldatabase
         WHERE d.datname = current_database() AND b.relfilenode = pg_relation_filenode('t')"
    [ "$R" = "0" ] || fail "block 0 of t is resident in a freshly started server"
    q A "SELECT pg_backend_pid()"
    apid=$R
    q A "SELECT pg_calico_test_arm('read_done', 't', 0)"
    send A "SELECT count(*) FROM t"
    paused read_done
    say "A read block 0 of t in and stopped with BM_VALID visible"
    q B "SELECT pg_calico_test_arm('exclusive', 't', 0)"
    send B "UPDATE t SET v = v + 1 WHERE id = 1"
    paused exclusive
    say "B pinned it and holds its content lock exclusively"
    # A goes on: it finishes the read (the publish, if it comes late) and then waits for
    # B's lock to read the page.
    q D "SELECT pg_calico_test_release('read_done')"
    wait_until "SELECT wait_event FROM pg_stat_activity WHERE pid = $apid" BufferContent
    q D "SELECT pg_calico_test_optimistic_read('t', 0)"
    under_lock=$R
    say "with B's exclusive lock held, after A finished the read, an optimistic read of it: $under_lock"
    q D "SELECT pg_calico_test_release('exclusive')"
    await B
    await A
    [ "$R" = "1" ] || fail "A's scan returned '$R'"
    q D "SELECT pg_calico_test_optimistic_read('t', 0)"
    after=$R
    say "after B's unlock, an optimistic read of it: $after"
    [ "$under_lock" = "not readable" ] ||
      fail "an optimistic reader got '$under_lock' for a page another backend held exclusively (a late publish marked it readable)"
    [ "$after" = "validated" ] || fail "the page is not readable after the exclusive unlock ('$after')"
    say "passed"
    ;;

  slot_reuse)
    session_open A; session_open D
    q D "DROP TABLE IF EXISTS p, q; CREATE TABLE p (a int); INSERT INTO p VALUES (1)"
    q D "SELECT pg_calico_test_slot('p', 0), pg_calico_test_optimistic_read('p', 0)"
    slot=${R%%|*}
    [ "${R#*|}" = "validated" ] || fail "block 0 of p is not readable optimistically ('$R')"
    q A "SELECT pg_calico_test_arm('resolved', 'p', 0)"
    send A "SELECT pg_calico_test_optimistic_read('p', 0)"
    paused resolved
    say "A resolved p's slot ($slot) and stopped before reading the entry"
    q D "DROP TABLE p"
    q D "CREATE TABLE q (a int); INSERT INTO q VALUES (1)"
    q D "SELECT pg_calico_test_slot('q', 0), pg_calico_test_slot_word($slot, 0) & 3"
    [ "$R" = "$slot|3" ] || fail "could not steer q into p's reclaimed slot $slot (slot of q | entry state: $R)"
    say "p dropped, its slot reclaimed; q got slot $slot, its block 0 mapped and readable at the same entry"
    q D "SELECT pg_calico_test_release('resolved')"
    await A
    say "A's optimistic read of block 0 of p: $R"
    case "$R" in
      "not readable"|failed) say "passed" ;;
      *) fail "A's optimistic read of p's block accepted '$R' (q's page, through the reused slot)" ;;
    esac
    q D "DROP TABLE q"
    ;;

  stale_read)
    session_open A; session_open D
    q D "DROP TABLE IF EXISTS p2; CREATE TABLE p2 (a int); INSERT INTO p2 VALUES (1)"
    q D "SELECT pg_calico_test_slot('p2', 0)"
    slot=$R
    # D's statements below, run once before the measured window (nothing of theirs to load then)
    q D "SELECT resident_bytes FROM pg_calico_stats(); SELECT pg_calico_test_release('resolved');
         SELECT pg_calico_test_slot_word($slot, 0) IS NULL"
    q A "SELECT pg_calico_test_arm('resolved', 'p2', 0)"
    send A "SELECT pg_calico_test_optimistic_read('p2', 0)"
    paused resolved
    say "A resolved p2's slot ($slot) and stopped before reading the entry"
    q D "DROP TABLE p2"
    q D "SELECT pg_calico_test_slot_word($slot, 0) IS NULL"
    [ "$R" = "t" ] || fail "p2's slot $slot was not reclaimed by the drop"
    q D "SELECT resident_bytes FROM pg_calico_stats()"
    before=$R
    q D "SELECT pg_calico_test_release('resolved')"
    await A
    result=$R
    q D "SELECT resident_bytes FROM pg_calico_stats()"
    after=$R
    q D "SELECT pg_calico_test_slot_word($slot, 0) IS NULL"
    still_free=$R
    say "A's read of the reclaimed slot: '$result'; memfd allocated bytes before/after: $before / $after (slot still free: $still_free)"
    [ "$still_free" = "t" ] || fail "the slot was reused meanwhile: the measurement proves nothing"
    [ "$result" = "not readable" ] || fail "A's optimistic read of a dropped relation's block gave '$result'"
    [ "$after" -eq "$before" ] ||
      fail "a lock-free read of a reclaimed slot left $(( after - before )) bytes allocated in the memfd"
    say "passed"
    ;;

  *) fail "unknown case" ;;
esac
