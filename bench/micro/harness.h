// The measurement harness of the translation microbenchmarks ([Calico] section 3 and
// 6.5-6.6; bench/micro/micro.h lists the experiments). Every experiment loads identical data into
// one pool per translation variant (all resident at once), then hands the harness a list of
// Cases: (translation, workload) -> one run. The harness
//   - runs every case once as a warm-up (checked, not timed),
//   - then `repeat` rounds; each round runs every case once, round r starting at case
//     r mod n (round-robin, so slow drift of the machine cannot favour one variant); a
//     timed run repeats the case's pass until it lasted min_seconds (one pass of a scan is
//     tens of ms: too short to trust on a shared VM),
//   - reads the hardware counters around every timed run (perf_counters.h; "n/a" when the
//     machine has none),
//   - reports per case the median time per operation, speedups against baselines of the
//     same workload (array, direct, or the first/previous case for the ablation), the
//     counters per operation and the self-check failures: a terminal table and one JSON
//     line per case.
//
// Entry points: select_translations, check_memory_budget, open_scratch_pool, load_or_skip,
// measure, report, print_banner. Single-threaded; everything here runs on the calling thread.
#pragma once

#include <bit>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "calico/buffer_pool.h"
#include "common/data_dir.h"
#include "common/sizes.h"
#include "common/perf_counters.h"

namespace calico::bench::micro {

// The capacity every variant's space gets: a power of two >= 2 x the pages the data needs
// (at least 2^16). The same for all variants; it sizes the fixed-size structures as the
// papers do (hash_lockfree: 2 slots per block of capacity; vmcache: its data region)
// instead of the 2^32 default, which would give the lock-free table 2^28 slots, scattered
// over 4 GB.
inline uint64_t space_capacity(uint64_t data_pages) {
  return std::bit_ceil(std::max<uint64_t>(data_pages, uint64_t{1} << 15) * 2);
}

// Options every micro experiment takes (calico_bench micro-* --help).
struct Common {
  std::vector<std::string> translations;  // empty: every translation of the registry
  unsigned repeat = 5;                    // timed rounds after the warm-up
  double min_seconds = 0.5;               // a timed run repeats its case until this long
  std::string data_dir = "./calico-micro-data";  // one subdirectory per pool
  std::string json_path;                  // append one JSON line per case when set
  uint64_t seed = 42;
  bool counters = true;                   // read hardware counters (n/a when unsupported)
  bool quiet = false;                     // no progress lines (tests)
};

// The translations to run: `requested` (validated against include/calico/variants.h; the
// error names the known ones) or all of them, in registry order; without `allow_direct`,
// "direct" is dropped with a note on stdout. Errors: calico::Error kInvalidArgument.
std::vector<std::string> select_translations(const std::vector<std::string>& requested, bool allow_direct,
                                             const char* experiment);

// Throws std::runtime_error (saying how to shrink the run) when `bytes` exceeds 85% of the
// machine's MemAvailable: every variant's pool is resident at once.
void check_memory_budget(uint64_t bytes, const std::string& what);

// Prints the experiment's title, the machine and the build (STYLE.md 10).
void print_banner(const std::string& title, const std::string& configuration);

double median(std::vector<double> v);
struct Result;
// Speedup of r over base: the median over rounds of base's time / r's time in the same round
// (paired, so that the machine's round-to-round drift cancels).
double paired_speedup(const Result& base, const Result& r);

// A pool on a fresh data directory that is thrown away with it: the deleter drops every
// space (discarding dirty pages instead of flushing gigabytes nobody will read) and
// removes the directory.
template <class Pool>
struct ScratchPoolDeleter {
  std::string dir;
  void operator()(Pool* p) const {
    for (const SpaceInfo& s : p->spaces()) {
      try {
        p->drop_space(s.id);
      } catch (const std::exception&) {
        // Closing flushes whatever is left; nothing is lost that anybody needs.
      }
    }
    delete p;
    remove_bench_dir(dir);  // only what the bench created (data_dir.h)
  }
};
template <class Pool>
using ScratchPool = std::unique_ptr<Pool, ScratchPoolDeleter<Pool>>;

template <class Pool>
ScratchPool<Pool> open_scratch_pool(const PoolOptions& opt) {
  prepare_bench_dir(opt.data_dir);
  return ScratchPool<Pool>(Pool::open(opt).release(), ScratchPoolDeleter<Pool>{opt.data_dir});
}

// Throws std::runtime_error naming the variant when the pool evicted anything since it
// opened: the microbenchmarks measure resident data only (raise the pool size).
template <class Pool>
void require_resident(const Pool& pool, const std::string& what) {
  PoolStats s = pool.stats();
  if (s.evictions != 0) {
    throw std::runtime_error(what + ": the pool evicted " + std::to_string(s.evictions) +
                             " pages; the data must stay resident (raise --pool-mb)");
  }
}

// JSON object body describing a loaded pool: frames, how much of the arena the kernel backs
// with huge pages, translation memory.
template <class Pool>
std::string pool_json(const Pool& pool) {
  PoolStats s = pool.stats();
  return fmt::format(R"("pool_frames":{},"huge_pages_requested":{},"frame_huge_page_bytes":{},"frame_bytes":{},)"
                     R"("translation_private_bytes":{},"resident_pages":{})",
                     s.frames, pool.options().huge_pages, s.frame_huge_page_bytes, s.frame_bytes,
                     s.translation_private_bytes, s.resident_pages);
}

// Runs load() (which loads one variant and adds its cases); when it throws, prints
// "SKIPPED", appends {"experiment":"skipped","for":experiment,...} to the JSON file and
// returns false, so that one broken variant does not lose a long run of the others.
bool load_or_skip(const char* experiment, const std::string& translation, const Common& common,
                  const std::function<void()>& load);

// What one run did: operations (pages, lookups, visited nodes) and failed self-checks.
struct RunOutcome {
  uint64_t ops = 0;
  uint64_t failures = 0;
  // > 0: the seconds of the run's timed region, measured by the case itself, which then
  // keeps its bookkeeping (statistics, result checks) out of the time per operation; 0: the
  // harness times the whole run.
  double seconds = 0;
};

struct Case {
  std::string translation;  // registry name, or the ablation step
  std::string workload;     // e.g. "sequential optimistic"
  std::function<RunOutcome()> run;
  std::string details_json;  // JSON object body describing the case, or empty
};

struct Result {
  const Case* c = nullptr;
  std::vector<double> ns_per_op;  // one per timed run
  std::vector<double> run_seconds;  // the timed region of each run (>= min_seconds)
  uint64_t ops = 0;               // over the timed runs
  uint64_t failures = 0;          // over every run, the warm-up included
  PerfSample counters;            // summed over the timed runs
  double median_ns = 0;
};

// Warm-up, then `repeat` interleaved rounds (see the header comment). Pre: repeat >= 1.
std::vector<Result> measure(const std::vector<Case>& cases, const Common& common);

struct ReportSpec {
  std::string experiment;   // "scan", "btree", "bfs", "ablation"
  std::string op;           // the unit of an operation: "page", "lookup", "node"
  std::string params_json;  // JSON object body: the experiment's parameters
  // Speedups against the case of the same workload whose translation has this name; the
  // special names "first" and "previous" mean the workload's first / preceding case.
  std::vector<std::string> baselines = {"array", "direct"};
};

// Prints the table and appends the JSON lines; returns the total self-check failures.
uint64_t report(const ReportSpec& spec, const std::vector<Result>& results, const Common& common);

}  // namespace calico::bench::micro
