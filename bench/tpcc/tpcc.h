// `calico_bench tpcc`: TPC-C on Calico's B+trees, on every translation variant, and on the
// peers WiredTiger and LMDB (bench/tpcc/peers/), named in the same list.
//
// Entry points: TpccConfig, run_tpcc(config) -> exit code (0 ok; 1 when a run broke a
// consistency condition or a transaction missed a row the schema guarantees). Bad input
// throws std::invalid_argument (or BenchDirError for a data directory that is not ours),
// which the command line reports with exit code 2.
//
// For each repeat, each translation or peer (order rotated per repeat, so that the machine's
// drift cannot favour one): a fresh pool (a peer: a fresh engine directory) in
// <data-dir>/<name>, the load (with progress
// lines), then one timed run per thread count on that database, each followed by the
// consistency checks (bench/tpcc/consistency.h). Prints the configuration, per-second lines,
// per-run lines, and a summary table (medians over repeats); appends one JSON line per run.
// The workload itself: bench/tpcc/workload.h (its header states the isolation provided).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace calico::bench {

struct TpccConfig {
  std::vector<std::string> translations{"array"};  // and/or peers: "wiredtiger", "lmdb"
  uint32_t warehouses = 1;
  std::vector<unsigned> threads{1};
  // "off", "on", "remember" (on + each worker's hint memory, hint_memory.h), run in this
  // order; anything but "off" is refused with a peer.
  std::vector<std::string> index_skipping{"off"};
  double seconds = 10;
  double pool_mb = 0;     // 0: in memory (sized from the data and the run's growth)
  // A far frame tier behind the pool of each tiered translation (docs/results/tiers.md: array_tiered,
  // vmcache_n; the single-tier ones run beside them without it): its size in MB (0: none)
  // and kind (bench/common/far_tier_option.h). Refused when no translation is tiered.
  uint64_t far_mb = 0;
  std::string far_tier = "remote-numa";
  std::string data_dir = "./tpcc-data";
  unsigned repeat = 1;
  std::string json_path;  // append one JSON line per run when set
  uint64_t seed = 42;
  double scale = 1.0;     // (0, 1]: customers, orders and items x scale (tpcc/scale.h)
  uint64_t max_tx = 0;    // > 0: each run stops after this many transactions (tests)
  bool quiet = false;     // no per-second or load progress lines (tests)
};

int run_tpcc(const TpccConfig& config);

}  // namespace calico::bench
