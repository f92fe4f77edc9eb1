#!/usr/bin/env bash
# Reproduces: Calico paper, Figure 5 (USearch's larger-than-memory points).
#
# usearch's memory-mapped view (Index.restore(view=True)) larger than memory: for each
# fraction f, bench/harness/peers/vector_peers.py runs alone in a v1 memory cgroup limited to
#   the interpreter's own footprint (numpy, usearch, queries, ground truth: measured first,
#   with the index mapped but not yet touched) + f x the usearch index file,
# so that f of the index fits in the page cache, as Calico's pool holds f of its index
# (calico_bench vector --pool-fraction f, O_DIRECT). The peer script measures reads per
# query and IOPS from /proc/self/io (read_bytes / 4 KB). Appends JSON lines with
# "pool_fraction" and "limit_bytes" to OUT/vector.jsonl.
#
# Usage: bench/experiments/vector_peer_ltm.sh OUT DSDIR FRACTIONS(comma list) EF THREADS(comma list) M EFC
# Environment: MAX_QUERIES=N searches only the first N queries; PEER_TIMEOUT=S (default 900)
# stops a fraction's run after S seconds and records that it did not finish; READAHEAD_KB=K
# sets the index file's block device read_ahead_kb for the run (restored on exit). The
# readahead in force is recorded as "read_ahead_kb" in every JSON line.
# Needs root and the cgroup v1 memory controller; the usearch index saved in OUT/peer-indexes
# (bench/experiments/vector.sh builds it).
set -euo pipefail
if [ $# -lt 7 ]; then sed -n 2,14p "$0"; exit 2; fi
out=$1 dsdir=$2 fractions=$3 ef=$4 threads=$5 M=$6 efc=$7
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY="$ROOT/.venv/bin/python"
cgroot=/sys/fs/cgroup/memory
[ -w "$cgroot" ] || { echo "vector_peer_ltm: $cgroot is not writable (need root and cgroup v1 memory)" >&2; exit 2; }
idx=$(ls "$out"/peer-indexes/*-usearch-*.index 2>/dev/null | sed -n 1p)
[ -n "$idx" ] || { echo "vector_peer_ltm: no usearch index in $out/peer-indexes (run bench/experiments/vector.sh)" >&2; exit 2; }
index_bytes=$(stat -c %s "$idx")
# The block device under the index file, whose readahead decides how much a fault reads.
dev=$(findmnt -no SOURCE --target "$idx")
parent=$(lsblk -no PKNAME "$dev" 2>/dev/null | sed -n 1p)
ra_file=/sys/block/$(basename "${parent:-$dev}")/queue/read_ahead_kb
if [ -n "${READAHEAD_KB:-}" ]; then
  [ -w "$ra_file" ] || { echo "vector_peer_ltm: cannot set $ra_file" >&2; exit 2; }
  old_ra=$(cat "$ra_file")
  trap 'echo "$old_ra" > "$ra_file"' EXIT
  echo "$READAHEAD_KB" > "$ra_file"
fi
read_ahead_kb=$(cat "$ra_file" 2>/dev/null || echo -1)
echo "vector_peer_ltm: $ra_file = $read_ahead_kb" >&2
common=(--data-dir "$dsdir" --systems usearch_view --M "$M" --ef-construction "$efc" --ef "$ef"
        --index-dir "$out/peer-indexes" --no-base)
baseline=$("$PY" "$ROOT/bench/harness/peers/vector_peers.py" "${common[@]}" --print-baseline-rss)
echo "vector_peer_ltm: usearch index $((index_bytes >> 20)) MB; interpreter baseline $((baseline >> 20)) MB" >&2
cg="$cgroot/calico-vector-usearch"
IFS=, read -ra fs <<< "$fractions"
for f in "${fs[@]}"; do
  limit=$(python3 -c "print(int($baseline + 8 * 2**20 + $f * $index_bytes))")
  mkdir -p "$cg"
  sync; echo 1 > /proc/sys/vm/drop_caches  # the index file starts cold, as Calico's O_DIRECT pool does
  echo "$limit" > "$cg/memory.limit_in_bytes"
  echo 0 > "$cg/memory.max_usage_in_bytes" 2>/dev/null || true
  tmp=$(mktemp)
  echo "=== usearch_view, limit $((limit >> 20)) MB (f = $f)" >&2
  t0=$(date +%s)
  rc=0
  timeout "${PEER_TIMEOUT:-900}" sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$cg" "$PY" \
    "$ROOT/bench/harness/peers/vector_peers.py" "${common[@]}" ${MAX_QUERIES:+--max-queries "$MAX_QUERIES"} \
    --threads "$threads" --repeat 1 --warmup 1 --json "$tmp" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "vector_peer_ltm: usearch_view did not finish at f = $f (exit $rc; 124 = timeout, 137 = memory limit)" \
         "after $(( $(date +%s) - t0 )) s" >&2
    printf '{"experiment":"vector_peer_ltm_unfinished","system":"usearch_view","pool_fraction":%s,"limit_bytes":%s,"read_ahead_kb":%s,"exit":%d,"seconds":%d}\n' \
      "$f" "$limit" "$read_ahead_kb" "$rc" "$(( $(date +%s) - t0 ))" >> "$out/vector.jsonl"
  fi
  echo "  peak $(( $(cat "$cg/memory.max_usage_in_bytes") >> 20 )) MB of $((limit >> 20)) MB" >&2
  python3 - "$tmp" "$f" "$limit" "$read_ahead_kb" >> "$out/vector.jsonl" <<'PY'
import json, sys
path, f, limit, ra = sys.argv[1:]
for line in open(path):
    r = json.loads(line)
    r["pool_fraction"] = float(f)
    r["limit_bytes"] = int(limit)
    r["read_ahead_kb"] = int(ra)
    print(json.dumps(r))
PY
  rm -f "$tmp"
  rmdir "$cg" 2>/dev/null || true
done
