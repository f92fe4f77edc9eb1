// ycsb: the YCSB workloads A-F over every key-value engine behind bench/ycsb/kv_store.h
// (calico, lmdb, rocksdb, wiredtiger), one driver for all of them (STYLE.md 11).
//
// Entry points:
//   run_ycsb(config)          the `calico_bench ycsb` subcommand: for each repeat, each system
//                             (order rotated per repeat), load, then run every workload x
//                             thread count; prints the configuration, one line per second,
//                             a summary table; writes JSON lines. Returns 0, or 1 when a
//                             self-check failed.
//   YcsbDatabase              one loaded store: load(), run(spec) -> RunResult, verify().
//                             The tests drive it directly.
//   workload_mix(letter)      the operation mix of a core workload.
//
// Keys: record i is key i, 8-byte big-endian (YCSB's insertorder=ordered); inserts append
// keys records, records+1, ... Values: kv::make_value (bytes 0..7 repeat the key). Every
// read of a loaded key must find a value of the right length that encodes its key; a miss
// or a wrong value is a failure. A read of a key inserted during the run that is not found
// yet (its insert is still in flight in another thread) is counted, not a failure.
// Distributions: uniform; zipf (YCSB's scrambled Zipfian: rank -> FNV-1a 64 -> mod records,
// so hot keys spread over the key space); latest (Zipf over recency: rank r -> the r-th
// newest key). Zipf ranks are drawn over the loaded record count.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ycsb/kv_store.h"

namespace calico::bench {

struct YcsbConfig {
  std::vector<std::string> systems{"calico"};
  std::vector<std::string> workloads{"C"};  // letters A..F
  std::string distribution;       // uniform | zipf | latest; empty: YCSB's (zipf; D: latest)
  double theta = 0.99;
  uint64_t records = 1000000;
  size_t value_bytes = 120;
  std::vector<unsigned> threads{1};
  double seconds = 5;             // per run, unless ops > 0
  uint64_t ops = 0;               // > 0: each run does this many operations (all threads)
  double warmup_seconds = 0;      // > 0: an unrecorded run of the same workload first (its
                                  // self-check failures still count)
  uint64_t cache_mb = 0;          // 0: in memory (3 x the data + 64 MB)
  uint64_t far_mb = 0;            // calico: a far frame tier behind the pool (0: none)
  std::string far_tier = "remote-numa";  // remote-numa | cxl | local | numa:<node>
  std::string data_dir = "./ycsb-data";
  unsigned repeat = 1;
  std::string json_path;          // append one JSON line per run when set
  uint64_t seed = 42;
  bool keep_data = false;
  bool quiet = false;             // no per-second lines or load progress (tests)
};

int run_ycsb(const YcsbConfig& config);

// Fractions of reads, updates, inserts, scans and read-modify-writes (sum 1).
struct WorkloadMix {
  double read = 0, update = 0, insert = 0, scan = 0, rmw = 0;
};
// Errors: std::invalid_argument for a letter outside A..F.
WorkloadMix workload_mix(char letter);
// YCSB's default request distribution of a workload: "latest" for D, else "zipf".
std::string default_distribution(char letter);

struct RunSpec {
  char workload = 'C';
  std::string distribution = "zipf";
  double theta = 0.99;
  unsigned threads = 1;
  double seconds = 1;   // used when ops == 0
  uint64_t ops = 0;     // > 0: exactly this many operations over all threads
  uint64_t seed = 42;
  bool print_each_second = false;
  std::string label;    // prefix of the per-second lines
};

struct RunResult {
  uint64_t ops = 0;
  double seconds = 0;
  double ops_per_s = 0;
  double p50_us = 0, p99_us = 0;   // over sampled operations (every 16th)
  uint64_t reads = 0, updates = 0, inserts = 0, scans = 0, rmws = 0, scan_rows = 0;
  uint64_t missing_loaded = 0;     // reads (also in scans' start, rmw) of a loaded key: absent
  uint64_t bad_values = 0;         // values of the wrong length or for another key
  uint64_t missing_inflight = 0;   // reads of a run-inserted key not visible yet (not a failure)
  uint64_t hits = 0, accesses = 0; // cache counters during the run (calico only)
  kv::CacheCounters cache;          // every cache counter's change during the run (calico only)
  bool has_hit_rate = false;
  uint64_t failures() const { return missing_loaded + bad_values; }
};

class YcsbDatabase {
 public:
  // Opens a fresh store of `system` (kv::open_kv) for `records` records.
  YcsbDatabase(const std::string& system, const kv::KvConfig& config, uint64_t records);
  ~YcsbDatabase();

  // Loads records 0..records-1; returns the seconds it took. With `progress`, prints a line
  // per 10% on stderr (in place on a terminal).
  double load(bool progress);
  // Runs one workload. Pre: load() done. Thread-safe only against nothing: one run at a time.
  RunResult run(const RunSpec& spec);
  // Reads every key ever loaded or inserted (0..next_key-1) with `threads` threads; returns
  // how many were missing or had a wrong value.
  uint64_t verify(unsigned threads);

  uint64_t records() const { return records_; }
  uint64_t next_key() const;
  kv::KvStore& store() { return *store_; }

 private:
  std::unique_ptr<kv::KvStore> store_;
  kv::KvConfig config_;
  uint64_t records_;
  struct Shared;
  std::unique_ptr<Shared> shared_;
};

}  // namespace calico::bench
