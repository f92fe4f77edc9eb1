#!/usr/bin/env bash
# Larger-than-memory YCSB with every engine held to the same memory. LMDB and WiredTiger
# cache through the OS page cache, which no option of theirs bounds; so each system runs
# alone in a (v1) memory cgroup of cache + slack MB, which charges page cache too. Calico
# (O_DIRECT pool) and RocksDB (direct reads, block cache) get the same limit.
#
# Usage: scripts/ycsb_ltm.sh RECORDS CACHE_MB SLACK_MB REPEAT OUT.jsonl [BUILD_DIR]
#   e.g. scripts/ycsb_ltm.sh 2000000 64 96 3 ycsb_ltm.jsonl    (256 MB of raw data, 4x the cache)
# Runs C (zipf), A (zipf) and C (uniform) at 1 and 2 threads; repeats rotate the systems.
# Needs root and the cgroup v1 memory controller at /sys/fs/cgroup/memory.
set -euo pipefail
if [ $# -lt 5 ]; then sed -n 2,10p "$0"; exit 2; fi
records=$1 cache_mb=$2 slack_mb=$3 repeat=$4 out=$5 build=${6:-build}
cgroot=/sys/fs/cgroup/memory
[ -w "$cgroot" ] || { echo "ycsb_ltm: $cgroot is not writable (need root and cgroup v1 memory)" >&2; exit 2; }
bench="$(cd "$(dirname "$0")/.." && pwd)/$build/calico_bench"
[ -x "$bench" ] || { echo "ycsb_ltm: $bench not built" >&2; exit 2; }
limit=$(( (cache_mb + slack_mb) << 20 ))
systems=(calico lmdb rocksdb wiredtiger)
data_dir=$(mktemp -d /tmp/calico-ycsb-ltm-XXXXXX)
trap 'rm -rf "$data_dir"' EXIT

run_in_cgroup() {  # name, then the command
  local cg="$cgroot/calico-ycsb-$1"
  shift
  mkdir -p "$cg"
  echo "$limit" > "$cg/memory.limit_in_bytes"
  local rc=0
  sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec "$@"' sh "$cg" "$@" || rc=$?
  echo "  [$(basename "$cg")] peak $(( $(cat "$cg/memory.max_usage_in_bytes") >> 20 )) MB of $(( limit >> 20 )) MB" >&2
  rmdir "$cg" 2>/dev/null || true
  return $rc
}

for ((r = 0; r < repeat; r++)); do
  for ((k = 0; k < ${#systems[@]}; k++)); do
    sys=${systems[$(( (k + r) % ${#systems[@]} ))]}
    for spec in "C,A zipf" "C uniform"; do
      set -- $spec
      echo "=== repeat $((r + 1))/$repeat: $sys, workloads $1, $2" >&2
      run_in_cgroup "$sys" "$bench" ycsb --system "$sys" --workload "$1" --distribution "$2" \
        --threads 1,2 --records "$records" --cache-mb "$cache_mb" --seconds 5 --warmup-seconds 2 \
        --repeat 1 --seed $((42 + r)) --data-dir "$data_dir/$sys" --json "$out" ||
        echo "ycsb_ltm: $sys failed (exit $?; 137 = killed at the memory limit)" >&2
      rm -rf "${data_dir:?}/$sys"
    done
  done
done
