// hint_skip_bench: index skipping ([LIPAH] 3.2, 5.2) on one B+tree, in memory. Point
// lookups of uniform random keys (YCSB records bulk-loaded as in micro-btree) through
//   plain        lookup(key): the root-to-leaf descent
//   hint         lookup_hinted(key, &hint): a correct RecordHint (page id + slot) per key
//   hint+frame   the same with a correct frame hint kept next to it (pools with frame hints)
// on each translation given (default: array, lipah), the same key sequence for every case,
// rounds interleaved (case after case within a round, so that machine drift hits all).
// Every lookup must find its key with the value that encodes it, and every hinted lookup
// must be a hit (checked; the tool fails otherwise). Prints ns per lookup per round.
//
// Usage: hint_skip_bench [records=1000000] [lookups=2000000] [rounds=2] [translations=array,lipah]
//                        [data_dir=./calico-hint-bench]
#include <fmt/format.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "micro/data.h"
#include "micro/harness.h"
#include "calico/variants.h"

namespace calico::bench {
namespace {

double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

struct Case {
  std::string name;
  std::function<uint64_t()> run;  // returns failures
  std::vector<double> ns_per_lookup = {};      // wall clock
  std::vector<double> cpu_ns_per_lookup = {};  // this thread's CPU time (the machine is shared)
};

int run(int argc, char** argv) {
  const uint64_t records = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1'000'000;
  const uint64_t lookups = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2'000'000;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 2;
  std::vector<std::string> names;
  {
    std::stringstream ss(argc > 4 ? argv[4] : "array,lipah");
    for (std::string n; std::getline(ss, n, ',');) names.push_back(n);
  }
  const std::string data_dir = argc > 5 ? argv[5] : "./calico-hint-bench";
  if (records == 0 || lookups == 0 || rounds <= 0) {
    std::fprintf(stderr, "records, lookups and rounds must be > 0\n");
    return 2;
  }
  const size_t value_bytes = 120;  // micro-btree's default
  const uint64_t tree_mb = records * (kv::kKeyBytes + value_bytes + 24) * 13 / 10 >> 20;
  const uint64_t pool_mb = tree_mb + tree_mb / 4 + 64;
  micro::print_banner("hint_skip_bench (index skipping, LIPAH paper, 3.2)",
                      fmt::format("uniform point lookups: {} records of {}-byte keys and {}-byte values, bulk-loaded "
                                  "into 4 KB pages; {} lookups per case and round; pool {} MB; {} rounds; "
                                  "translations: {}",
                                  records, kv::kKeyBytes, value_bytes, lookups, pool_mb, rounds, fmt::join(names, ",")));

  std::vector<uint64_t> keys(lookups);
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<uint64_t> uniform(0, records - 1);
  for (uint64_t& k : keys) k = uniform(rng);

  std::vector<Case> cases;  // each holds its tree and pool (shared_ptr) until the end
  for (const std::string& name : names) {
    variants::with_pool_type(name, [&]<class Pool>() {
      PoolOptions opt;
      opt.data_dir = data_dir + "/" + name;
      opt.page_size = 4096;
      opt.pool_bytes = pool_mb << 20;
      opt.max_blocks_per_space = micro::space_capacity(opt.pool_bytes / opt.page_size);
      auto t = load_ycsb_tree<Pool>(opt, records, value_bytes);
      // The hint of every record (and its frame), as a secondary index would store them:
      // from a hinted lookup without a hint (the descent fills them in).
      auto hints = std::make_shared<std::vector<index::RecordHint>>(records);
      auto frames = std::make_shared<std::vector<FrameId>>(records, kInvalidFrame);
      {
        std::string value;
        char key[kv::kKeyBytes];
        for (uint64_t k = 0; k < records; ++k) {
          kv::encode_key(k, key);
          if (!t->tree->lookup_hinted(std::string_view(key, kv::kKeyBytes), &(*hints)[k], &value, nullptr,
                                      &(*frames)[k])) {
            throw std::runtime_error(name + ": record " + std::to_string(k) + " missing after the load");
          }
        }
      }
      micro::require_resident(*t->pool, name);
      std::fprintf(stderr, "%s: loaded %llu tree pages\n", name.c_str(),
                   (unsigned long long)t->pool->space_blocks(t->tree->space()));
      cases.push_back({name + " plain", [t, &keys] {
                         uint64_t failures = 0;
                         std::string value;
                         for (uint64_t k : keys) failures += !t->read(k, &value);
                         return failures;
                       }});
      auto hinted = [t, &keys, hints, frames, value_bytes](bool with_frames) {
        uint64_t failures = 0;
        std::string value;
        index::HintStats st;
        char key[kv::kKeyBytes];
        for (uint64_t k : keys) {
          kv::encode_key(k, key);
          index::RecordHint h = (*hints)[k];
          failures += !t->tree->lookup_hinted(std::string_view(key, kv::kKeyBytes), &h, &value, &st,
                                              with_frames ? &(*frames)[k] : nullptr) ||
                      !kv::check_value(value, k, value_bytes);
        }
        return failures + (keys.size() - st.hits);  // every lookup must be a hit
      };
      cases.push_back({name + " hint", [hinted] { return hinted(false); }});
      if constexpr (Pool::kFrameHints) cases.push_back({name + " hint+frame", [hinted] { return hinted(true); }});
    });
  }
  for (int r = 0; r < rounds; ++r) {
    for (Case& c : cases) {
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = thread_cpu_ns();
      const uint64_t failures = c.run();
      const double cpu_ns = thread_cpu_ns() - cpu_start;
      const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
      if (failures != 0) {
        std::fprintf(stderr, "%s: %llu lookups failed (wrong value or not a hit)\n", c.name.c_str(),
                     (unsigned long long)failures);
        return 1;
      }
      c.ns_per_lookup.push_back(ns / static_cast<double>(keys.size()));
      c.cpu_ns_per_lookup.push_back(cpu_ns / static_cast<double>(keys.size()));
    }
  }
  std::printf("%-20s %s\n", "case", "ns/lookup per round: wall clock | thread CPU time");
  for (const Case& c : cases) {
    std::printf("%-20s", c.name.c_str());
    for (double ns : c.ns_per_lookup) std::printf(" %8.1f", ns);
    std::printf("  |");
    for (double ns : c.cpu_ns_per_lookup) std::printf(" %8.1f", ns);
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace calico::bench

int main(int argc, char** argv) {
  try {
    return calico::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hint_skip_bench: %s\n", e.what());
    return 1;
  }
}
