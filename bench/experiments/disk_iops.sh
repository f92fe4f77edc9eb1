#!/usr/bin/env bash
# Reproduces: Calico paper, section 6.1 (the SSD's random 4 KB read IOPS, the bound that Figures 5 and
# 7 are read against); no figure of its own.
#
# Random 4 KB read IOPS and latency of the disk under DIR, with O_DIRECT, at queue depths
# QDS (environment, default "1 2 8 32": one synchronous fault per thread is depth 1, a
# group prefetch keeps up to a group's reads in flight) (fio, io_uring engine, one job, a
# 1 GB file, 10 s per depth after a 1 s ramp). Prints
# IOPS and mean / p99 completion latency per depth and appends one JSON line per depth to
# OUT.jsonl ({"experiment":"disk_iops", ...}).
#
# Usage: bench/experiments/disk_iops.sh [DIR (default /tmp)] [OUT.jsonl (default disk_iops.jsonl)]
# Needs fio (scripts/setup.sh installs it).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n 2,10p "$0"; exit 0 ;; esac
dir=${1:-/tmp} out=${2:-disk_iops.jsonl}
command -v fio > /dev/null || { echo "disk_iops: fio not found (bash scripts/setup.sh)" >&2; exit 2; }
file=$(mktemp "$dir/disk-iops-XXXXXX.dat")
trap 'rm -f "$file"' EXIT
dev=$(basename "$(findmnt -no SOURCE -T "$dir")")
for qd in ${QDS:-1 2 8 32}; do
  fio --name=randread --filename="$file" --size=1G --rw=randread --bs=4k --direct=1 \
      --ioengine=io_uring --iodepth="$qd" --numjobs=1 --time_based --runtime=10 --ramp_time=1 \
      --randrepeat=0 --output-format=json > "$file.json"
  python3 - "$file.json" "$qd" "$dir" "$dev" "$out" <<'PY'
import json, sys, time
path, qd, d, dev, out = sys.argv[1:]
r = json.load(open(path))["jobs"][0]["read"]
clat = r["clat_ns"]
line = {"experiment": "disk_iops", "dir": d, "device": dev, "rw": "randread", "bs": 4096, "direct": 1,
        "ioengine": "io_uring", "iodepth": int(qd), "iops": round(r["iops"]),
        "clat_mean_us": round(clat["mean"] / 1e3, 1),
        "clat_p50_us": round(clat["percentile"]["50.000000"] / 1e3, 1),
        "clat_p99_us": round(clat["percentile"]["99.000000"] / 1e3, 1),
        "seconds": round(r["runtime"] / 1e3, 1), "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
print(f"qd {qd}: {line['iops']} IOPS, latency mean {line['clat_mean_us']} us, p50 {line['clat_p50_us']} us, "
      f"p99 {line['clat_p99_us']} us ({dev}, {d}, 4 KB random reads, O_DIRECT)")
with open(out, "a") as f:
    f.write(json.dumps(line) + "\n")
PY
  rm -f "$file.json"
done
