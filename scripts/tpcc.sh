#!/usr/bin/env bash
# scripts/tpcc.sh [OUTDIR]: the TPC-C tables of docs/tpcc.md (issue 14), on a quiet machine.
#
#   inmem  every LIPAH configuration in memory: hash_open, vmcache, lipah and array, each with
#          index skipping off, on and remember, at 1 and 2 threads, W_INMEM warehouses
#   ltm    the same larger than memory: W_LTM warehouses in a POOL_MB_LTM pool (O_DIRECT)
#   peers  array against WiredTiger and LMDB at 1 and 2 threads, in memory (W_PEERS warehouses)
#   peers-ltm  the same with a POOL_MB_LTM cache, the process in a memory cgroup of
#          POOL_MB_LTM + CGROUP_SLACK_MB when /sys/fs/cgroup/memory is writable (LMDB's
#          cache is the OS page cache, which only a cgroup limits; it also bounds WiredTiger's
#          buffered reads); without one, LMDB's cache is not limited and the log says so
#
# Every experiment interleaves its systems per repeat (calico_bench tpcc --repeat) and runs
# under `chrt -f 10` when allowed (a real-time class keeps other processes off its cores; the
# machine this was measured on is shared). Then bench/report/tpcc_tables.py prints the tables
# (medians of tx per second and per CPU-second, and ratios paired within each repeat).
#
# Environment: EXPERIMENTS (inmem,ltm,peers,peers-ltm), W_INMEM (10), W_LTM (5), W_PEERS (5),
# POOL_MB_LTM (210), SECONDS_INMEM (5), SECONDS_LTM (8), REPEAT (3), CGROUP_SLACK_MB (96), BUILD
# (build-micro). About 70 minutes at the defaults on 2 cores; writes OUTDIR/<experiment>.jsonl
# and .log (default ./tpcc-results) and the pools' files under OUTDIR/data (removed after).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-tpcc-results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
EXPERIMENTS=${EXPERIMENTS:-inmem,ltm,peers,peers-ltm}
W_INMEM=${W_INMEM:-10}
W_LTM=${W_LTM:-5}
W_PEERS=${W_PEERS:-5}
POOL_MB_LTM=${POOL_MB_LTM:-210}
REPEAT=${REPEAT:-3}
CGROUP_SLACK_MB=${CGROUP_SLACK_MB:-96}
BUILD=${BUILD:-build-micro}

if [[ -z "${SKIP_SETUP:-}" ]]; then bash "$ROOT/scripts/setup.sh"; fi
cmake -S "$ROOT" -B "$ROOT/$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALICO_CHECKS_LEVEL=1 \
  -DCALICO_BUILD_TESTS=OFF > /dev/null
cmake --build "$ROOT/$BUILD" --target calico_bench
BENCH="$ROOT/$BUILD/calico_bench"

rt=()
if chrt -f 10 true 2> /dev/null; then rt=(chrt -f 10); fi

# run NAME ARGS...: one calico_bench tpcc invocation, its JSON and log under OUT.
run() {
  local name=$1
  shift
  : > "$OUT/$name.jsonl"
  echo "== $name: calico_bench tpcc $* (${rt[*]:-no real-time class})"
  "${rt[@]}" "$BENCH" tpcc "$@" --repeat "$REPEAT" --data-dir "$OUT/data" --json "$OUT/$name.jsonl" \
    > "$OUT/$name.log" 2>&1 || { echo "$name FAILED (see $OUT/$name.log)"; tail -5 "$OUT/$name.log"; exit 1; }
  grep -A40 "^TPC-C," "$OUT/$name.log"
}

lipah_configs=(--translation hash_open,vmcache,lipah,array --index-skipping off,on,remember --threads 1,2)
for e in ${EXPERIMENTS//,/ }; do
  case $e in
    inmem) run inmem "${lipah_configs[@]}" --warehouses "$W_INMEM" --seconds "${SECONDS_INMEM:-5}" ;;
    ltm) run ltm "${lipah_configs[@]}" --warehouses "$W_LTM" --pool-mb "$POOL_MB_LTM" --seconds "${SECONDS_LTM:-8}" ;;
    peers) run peers --translation array,wiredtiger,lmdb --threads 1,2 --warehouses "$W_PEERS" --seconds "${SECONDS_INMEM:-5}" ;;
    peers-ltm)
      cg=/sys/fs/cgroup/memory/calico-tpcc-peers
      if mkdir -p "$cg" 2> /dev/null && echo $(((POOL_MB_LTM + CGROUP_SLACK_MB) << 20)) > "$cg/memory.limit_in_bytes"; then
        echo "peers-ltm: in memory cgroup $cg, limit $((POOL_MB_LTM + CGROUP_SLACK_MB)) MB (cache + process)"
        # The subshell joins the cgroup; everything it starts is charged there.
        (echo $BASHPID > "$cg/cgroup.procs" && run peers-ltm --translation array,wiredtiger,lmdb --threads 1,2 \
          --warehouses "$W_LTM" --pool-mb "$POOL_MB_LTM" --seconds "${SECONDS_LTM:-8}")
        echo "peers-ltm: cgroup peak $(($(cat "$cg/memory.max_usage_in_bytes") >> 20)) MB, failcnt $(cat "$cg/memory.failcnt")" \
          | tee -a "$OUT/peers-ltm.log"
        rmdir "$cg" 2> /dev/null || true
      else
        echo "peers-ltm: no writable memory cgroup: LMDB's cache (the OS page cache) is NOT limited" | tee "$OUT/peers-ltm.note"
        run peers-ltm --translation array,wiredtiger,lmdb --threads 1,2 --warehouses "$W_LTM" --pool-mb "$POOL_MB_LTM" \
          --seconds "${SECONDS_LTM:-8}"
      fi
      ;;
    *) echo "unknown experiment '$e' (inmem, ltm, peers, peers-ltm)" >&2; exit 2 ;;
  esac
done
python3 "$ROOT/bench/report/tpcc_tables.py" "$OUT"/*.jsonl
