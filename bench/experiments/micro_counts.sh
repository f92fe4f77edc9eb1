#!/usr/bin/env bash
# Reproduces: Calico paper, Tables 2, 3, 4 and 6 (instructions and cache misses per operation, counted
# with cachegrind where the paper reads hardware counters).
#
# bench/experiments/micro_counts.sh [OUT.jsonl] [TRANSLATIONS]
#
# Deterministic per-operation counts of the translation hot path (this machine has no
# hardware counters): each workload runs under cachegrind twice per translation, with 1 and
# with 3 timed rounds (--min-seconds 0: one pass per run), and the difference of the two
# runs' totals, divided by the operations of the two extra rounds, is the cost of one
# operation with the load, the warm-up and the process's setup cancelled out.
#   scan:  a SUM over 8-byte columns of 1024-byte rows, 8 KB pages (sequential + random
#          page order, optimistic reads; per page)
#   btree: YCSB-C uniform lookups on a bulk-loaded B+tree (per lookup)
#   bfs:   BFS on a random graph (4 KB page per node), optimistic reads, without group
#          prefetch (per visited node: one neighbour list and 44 probes)
#   bfs-prefetch: the same with group prefetch (read_group: the group also starts the probes'
#          reads). cachegrind does not model a prefetch's effect on time: its misses count
#          as if they were the loads' own; the timed runs say what prefetching saves.
# The operations per round come from the runs' own JSON lines (ops / runs), summed over
# the workloads one subcommand runs.
# Simulated caches: L1d/L1i 32 KB 8-way, last level 32 MB 16-way, 64-byte lines (an EPYC
# core's L1 and one CCX's L3; stated so that the counts can be compared across machines).
# Prints a table and writes one JSON line per (workload, translation) to OUT.jsonl
# (default docs/results/micro/counts.jsonl). TRANSLATIONS: comma list (default
# direct,array,vmcache_2m,vmcache,hash_open). Takes ~11-20 minutes for the default five (11 on this 2-core VM).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$ROOT/docs/results/micro/counts.jsonl}
TRANSLATIONS=${2:-direct,array,vmcache_2m,vmcache,hash_open}
WORKLOADS=${WORKLOADS:-scan btree bfs bfs-prefetch}  # a subset, e.g. WORKLOADS=bfs, to recount one workload
command -v valgrind > /dev/null || { echo "micro_counts: valgrind not found (scripts/setup.sh installs it)" >&2; exit 2; }

cmake -S "$ROOT" -B "$ROOT/build-micro" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALICO_CHECKS_LEVEL=1 \
  -DCALICO_BUILD_TESTS=OFF > /dev/null
cmake --build "$ROOT/build-micro" --target calico_bench > /dev/null
BENCH="$ROOT/build-micro/calico_bench"
WORK=$(mktemp -d /var/tmp/calico-counts.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

SCAN_MB=256
BTREE_RECORDS=1000000
BTREE_LOOKUPS=200000
BFS_NODES=65536  # 256 MB of pages: past the simulated last level
commit=$(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo unknown)
mkdir -p "$(dirname "$OUT")"
: > "$OUT"

# totals LOG -> "Ir Dr LLdr D1mr": instructions, data reads, last-level and L1 data read misses
totals() {
  python3 - "$1" << 'EOF'
import re, sys
t = open(sys.argv[1]).read()
def grab(label):
    m = re.search(r"==\d+== " + label + r":\s+([\d,]+)(?:\s+\(\s*([\d,]+) rd)?", t)
    if not m: sys.exit("no '" + label + "' line in " + sys.argv[1])
    return int((m.group(2) or m.group(1)).replace(",", ""))
print(grab("I   refs"), grab("D   refs"), grab("LLd misses"), grab("D1  misses"))
EOF
}

run_cg() {  # LOG ARGS...: one cachegrind run of calico_bench
  local log=$1
  shift
  valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=33554432,16,64 \
    --cachegrind-out-file=/dev/null "$BENCH" "$@" --min-seconds 0 --no-counters --data-dir "$WORK/data" \
    --json "$log.jsonl" > "$log.out" 2> "$log"
}

ops_per_round() {  # JSONL: operations of one timed round, summed over its workloads
  python3 -c 'import json, sys
print(round(sum(r["ops"] / r["runs"] for r in map(json.loads, open(sys.argv[1])) if r.get("runs"))))' "$1"
}

IFS=, read -ra TS <<< "$TRANSLATIONS"
for t in "${TS[@]}"; do
  for w in $WORKLOADS; do
    case $w in
      scan) args=(scan --translations "$t" --data-mb "$SCAN_MB" --no-pinned) op=page ;;
      btree) args=(micro-btree --translations "$t" --records "$BTREE_RECORDS" --lookups "$BTREE_LOOKUPS") op=lookup ;;
      bfs) args=(micro-bfs --translations "$t" --nodes "$BFS_NODES" --prefetch off) op=node ;;
      bfs-prefetch) args=(micro-bfs --translations "$t" --nodes "$BFS_NODES" --prefetch on) op=node ;;
    esac
    run_cg "$WORK/$t.$w.1" "${args[@]}" --repeat 1
    run_cg "$WORK/$t.$w.3" "${args[@]}" --repeat 3
    ops_per_round=$(ops_per_round "$WORK/$t.$w.1.jsonl")
    read -r i1 d1 ll1 l11 <<< "$(totals "$WORK/$t.$w.1")"
    read -r i3 d3 ll3 l13 <<< "$(totals "$WORK/$t.$w.3")"
    python3 - "$OUT" "$w" "$t" "$op" "$commit" "$ops_per_round" "$i1" "$d1" "$ll1" "$l11" "$i3" "$d3" "$ll3" "$l13" << 'EOF'
import json, sys
out, w, t, op, commit, ops = sys.argv[1:7]
a = list(map(int, sys.argv[7:11])); b = list(map(int, sys.argv[11:15]))
n = 2 * int(ops)
per = [(y - x) / n for x, y in zip(a, b)]
rec = {"experiment": "counts", "workload": w, "translation": t, "op": op, "commit": commit,
       "instructions": round(per[0], 2), "data_reads": round(per[1], 2),
       "ll_read_misses": round(per[2], 3), "l1d_read_misses": round(per[3], 3),
       "cache_model": "L1d 32K/8, LL 32M/16, 64B lines (cachegrind)"}
open(out, "a").write(json.dumps(rec) + "\n")
print(f"{w:12} {t:12} {per[0]:9.1f} instr/{op}  {per[1]:8.1f} reads  {per[3]:7.3f} L1d miss  {per[2]:7.3f} LL miss")
EOF
  done
done
echo "micro_counts: wrote $OUT (commit $commit)"
