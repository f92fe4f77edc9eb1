#!/usr/bin/env bash
# Reproduces: Calico paper, Figure 7a-b (YCSB-C larger than memory, with LMDB, WiredTiger and
# RocksDB).
#
# Larger-than-memory YCSB with every engine held to the SAME total memory: each run is one
# process alone in a (v1) memory cgroup of LIMIT_MB, which charges its heap, its kernel memory
# and the OS page cache it brings in. Each engine is configured to use as much of LIMIT_MB as
# it safely can. Defaults, measured at LIMIT_MB = 128 with 4M records (docs/results/overview.md):
#   calico      pool = LIMIT - 18 MB: its fixed overhead (driver, heap, page tables, io_uring,
#               translation) is 14-15 MB (peak usage 124 MB with a 110 MB pool), + 3 MB margin.
#               O_DIRECT, so no page cache.
#   rocksdb     block cache = (LIMIT - 53) * 2/3 (50 MB at 128): the adapter adds 2 memtables
#               of cache/4, and the heap grows ~15-40 MB beyond cache + memtables (glibc
#               arenas under block-cache churn, compaction buffers, table metadata): peak
#               anon 87-92 MB with 50 MB, 105 MB with 60 MB. Direct reads; flushes and
#               compactions write through the page cache (clean, reclaimable).
#   wiredtiger  cache_size = LIMIT * 3/16 (24 MB at 128): its heap exceeds cache_size by ~20 MB
#               in C and ~65 MB in A (peak anon 90 / 107 / 117 MB with 24 / 40 / 56 MB), so a
#               larger cache nears the OOM killer, and a pilot showed no gain from 40 or 56 MB;
#               the rest of the limit is page cache for its buffered reads.
#   lmdb        --cache-mb LIMIT is nominal: LMDB caches in the page cache through mmap (all of
#               the limit that its ~2 MB heap leaves).
# Override with CALICO_POOL_MB, ROCKSDB_CACHE_MB, WT_CACHE_MB (e.g. for a different LIMIT);
# SYSTEMS="wiredtiger rocksdb" runs a subset (pilots).
#
# Usage: bench/experiments/ycsb_ltm.sh LIMIT_MB RECORDS REPEAT OUT.jsonl [BUILD_DIR]
#   e.g. bench/experiments/ycsb_ltm.sh 128 4000000 5 ycsb_ltm.jsonl   (4M x 128 B = 488 MiB raw, ~4x the limit)
# Runs C (zipf), A (zipf) and C (uniform) at 1 and 2 threads, 5 s each after a 3 s warm-up;
# repeats rotate the system order. Besides the driver's JSON lines (one per run), appends per
# run {"experiment":"ycsb_ltm_io"}: the process's read bytes (/proc/PID/io) and the data
# device's reads and writes (/proc/diskstats) over the measured run; and per process
# {"experiment":"ycsb_ltm_mem"}: the cgroup's peak usage, peak sampled anon (rss), limit hits.
# bench/harness/report/ycsb_table.py OUT.jsonl prints all three tables.
# Needs root and the cgroup v1 memory controller at /sys/fs/cgroup/memory.
set -euo pipefail
if [ $# -lt 4 ]; then sed -n 2,31p "$0"; exit 2; fi
limit_mb=$1 records=$2 repeat=$3 out=$4 build=${5:-build}
seconds=5 warmup=3
cgroot=/sys/fs/cgroup/memory
[ -w "$cgroot" ] || { echo "ycsb_ltm: $cgroot is not writable (need root and cgroup v1 memory)" >&2; exit 2; }
bench="$(cd "$(dirname "$0")/../.." && pwd)/$build/calico_bench"
[ -x "$bench" ] || { echo "ycsb_ltm: $bench not built" >&2; exit 2; }
limit=$(( limit_mb << 20 ))
declare -A cache_mb=(
  [calico]=${CALICO_POOL_MB:-$(( limit_mb - 18 ))}
  [rocksdb]=${ROCKSDB_CACHE_MB:-$(( (limit_mb - 53) * 2 / 3 ))}
  [wiredtiger]=${WT_CACHE_MB:-$(( limit_mb * 3 / 16 ))}
  [lmdb]=$limit_mb
)
read -ra systems <<< "${SYSTEMS:-calico lmdb rocksdb wiredtiger}"
for s in "${systems[@]}"; do
  [ "${cache_mb[$s]}" -ge 4 ] || { echo "ycsb_ltm: LIMIT_MB $limit_mb leaves $s a cache of ${cache_mb[$s]} MB" >&2; exit 2; }
done
data_dir=$(mktemp -d /tmp/calico-ycsb-ltm-XXXXXX)
trap 'rm -rf "$data_dir"' EXIT
dev=$(basename "$(findmnt -no SOURCE -T "$data_dir")")
grep -q " $dev " /proc/diskstats || { echo "ycsb_ltm: no /proc/diskstats line for $dev" >&2; exit 2; }
echo "ycsb_ltm: limit $limit_mb MB per process; caches (MB): calico ${cache_mb[calico]}, lmdb page cache" \
     "(nominal ${cache_mb[lmdb]}), rocksdb ${cache_mb[rocksdb]}, wiredtiger ${cache_mb[wiredtiger]}; $records records;" \
     "data on $dev ($data_dir)" >&2

now() { date +%s.%N; }
# reads completed, sectors read, writes completed, sectors written of the data device
disk() { awk -v d="$dev" '$3 == d { print $4, $6, $8, $10 }' /proc/diskstats; }
proc_read_bytes() { awk '$1 == "read_bytes:" { print $2 }' "/proc/$1/io" 2>/dev/null || echo 0; }

# Reads the driver's (line-buffered) output and measures the I/O of each measured run: the
# driver prints "warm-up: ..." just before a measured run and "<label> N ops/s, ..." after it.
measure_io() {  # system, cgroup, repeat
  local sys=$1 cg=$2 rep=$3 line pid t0 rb0 d0 t1 rb1 d1
  while IFS= read -r line; do
    printf '%s\n' "$line"
    case "$line" in
      *"] warm-up: "*)
        pid=$(head -n1 "$cg/cgroup.procs" 2>/dev/null || true)
        t0=$(now); rb0=$(proc_read_bytes "$pid"); d0=$(disk) ;;
      "[$sys "*" ops/s, p50 "*)
        [ -n "${t0:-}" ] || continue
        t1=$(now); rb1=$(proc_read_bytes "$pid"); d1=$(disk)
        # "[calico C zipf t=1 rep 0] ..." -> workload, distribution, threads
        set -- ${line#\[}
        python3 - "$sys" "$2" "$3" "${4#t=}" "$rep" "$t0" "$t1" "$rb0" "$rb1" "$d0" "$d1" "$dev" >> "$out" <<'PY'
import json, sys
sys_, wl, dist, thr, rep, t0, t1, rb0, rb1, d0, d1, dev = sys.argv[1:]
dt = float(t1) - float(t0)
a, b = [int(x) for x in d0.split()], [int(x) for x in d1.split()]
reads, rsec, writes, wsec = (b[i] - a[i] for i in range(4))
print(json.dumps({"experiment": "ycsb_ltm_io", "system": sys_, "workload": wl, "distribution": dist,
                  "threads": int(thr), "repeat": int(rep), "seconds": round(dt, 3), "device": dev,
                  "proc_read_mb_per_s": round((int(rb1) - int(rb0)) / dt / 1e6, 2),
                  "dev_reads_per_s": round(reads / dt), "dev_read_kb_avg": round(rsec * 0.512 / max(reads, 1), 1),
                  "dev_writes_per_s": round(writes / dt), "dev_write_mb_per_s": round(wsec * 512 / dt / 1e6, 2)}))
PY
        t0= ;;
    esac
  done
}

run_in_cgroup() {  # system, repeat, then the command
  local sys=$1 rep=$2 cg="$cgroot/calico-ycsb-$1"
  shift 2
  mkdir -p "$cg"
  echo "$limit" > "$cg/memory.limit_in_bytes"
  echo 0 > "$cg/memory.max_usage_in_bytes" 2>/dev/null || true
  local stop="$data_dir/.stop-$sys" rssf="$data_dir/.rss-$sys"
  rm -f "$stop"; echo 0 > "$rssf"
  # peak anon memory (total_rss), sampled every 0.25 s
  ( m=0; while [ ! -e "$stop" ]; do
      r=$(awk '$1 == "total_rss" { print $2 }' "$cg/memory.stat" 2>/dev/null || echo 0)
      [ "${r:-0}" -gt "$m" ] && { m=$r; echo "$m" > "$rssf"; }
      sleep 0.25
    done ) &
  local sampler=$! rc=0
  sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec stdbuf -oL "$@"' sh "$cg" "$@" | measure_io "$sys" "$cg" "$rep" ||
    rc=$?
  touch "$stop"; wait "$sampler" || true
  local peak=$(( $(cat "$cg/memory.max_usage_in_bytes") >> 20 )) rss=$(( $(cat "$rssf") >> 20 ))
  local fails; fails=$(cat "$cg/memory.failcnt")
  echo "  [$(basename "$cg")] peak $peak MB of $limit_mb MB (peak sampled anon $rss MB, limit hit $fails times)" >&2
  printf '{"experiment":"ycsb_ltm_mem","system":"%s","repeat":%d,"workloads":"%s","limit_mb":%d,"cache_mb":%d,"peak_mb":%d,"peak_anon_mb":%d,"failcnt":%d,"exit":%d}\n' \
    "$sys" "$rep" "$spec" "$limit_mb" "${cache_mb[$sys]}" "$peak" "$rss" "$fails" "$rc" >> "$out"
  rmdir "$cg" 2>/dev/null || true
  return $rc
}

for ((r = 0; r < repeat; r++)); do
  for ((k = 0; k < ${#systems[@]}; k++)); do
    sys=${systems[$(( (k + r) % ${#systems[@]} ))]}
    for spec in "C,A zipf" "C uniform"; do
      set -- $spec
      echo "=== repeat $((r + 1))/$repeat: $sys (cache ${cache_mb[$sys]} MB, limit $limit_mb MB), workloads $1, $2" >&2
      run_in_cgroup "$sys" "$r" "$bench" ycsb --system "$sys" --workload "$1" --distribution "$2" \
        --threads 1,2 --records "$records" --cache-mb "${cache_mb[$sys]}" --seconds "$seconds" \
        --warmup-seconds "$warmup" --repeat 1 --seed $((42 + r)) --data-dir "$data_dir/$sys" --json "$out" ||
        echo "ycsb_ltm: $sys failed (exit $?; 137 = killed at the memory limit)" >&2
      rm -rf "${data_dir:?}/$sys"
    done
  done
done
