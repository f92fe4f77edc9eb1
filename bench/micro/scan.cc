// scan: see scan.h.
#include "micro/scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "calico/index/heap_file.h"
#include "calico/variants.h"

namespace calico::bench {
namespace {

using index::BasicHeapFile;
using index::ScanOptions;
using index::ScanRead;
using index::HeapFormat;

using Clock = std::chrono::steady_clock;

// Single-thread sequential read bandwidth: sums a buffer of `bytes` 8 bytes at a time
// (the compiler vectorises it), median of `repeat`. The same kind of work as the SUM,
// without any page structure: the scale against which pages/s is read.
double memory_read_bandwidth(size_t bytes, unsigned repeat, uint64_t* checksum) {
  std::vector<uint64_t> buf(bytes / 8);
  std::iota(buf.begin(), buf.end(), uint64_t{1});
  std::vector<double> rates;
  for (unsigned r = 0; r < repeat; ++r) {
    auto t0 = Clock::now();
    uint64_t sum = 0;
    for (uint64_t x : buf) sum += x;
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    *checksum += sum;
    rates.push_back(double(bytes) / s);
  }
  return micro::median(rates);
}

template <class Pool>
struct ScanTarget {
  micro::ScratchPool<Pool> pool;
  std::optional<BasicHeapFile<Pool>> heap;  // destroyed before the pool
};

}  // namespace

int run_scan(const ScanConfig& cfg) {
  const micro::Common& common = cfg.common;
  check_size_mb(cfg.data_mb, "--data-mb");
  check_size_mb(cfg.pool_mb, "--pool-mb");
  const std::vector<std::string> names = micro::select_translations(common.translations, true, "scan");
  const uint64_t pool_mb = cfg.pool_mb ? cfg.pool_mb : cfg.data_mb + cfg.data_mb / 4 + 64;
  micro::check_memory_budget(names.size() * (pool_mb << 20), "scan");
  const uint64_t pages = (cfg.data_mb << 20) / cfg.page_size;
  micro::print_banner("scan (Calico paper, Table 2, Figure 1a/b)",
                      fmt::format("SUM over an 8-byte column of {}-byte rows in {}-byte pages, {} MB ({} pages) per "
                                  "translation, pool {} MB, prefetch distance {}, {} repeats; translations: {}",
                                  cfg.row_bytes, cfg.page_size, cfg.data_mb, pages, pool_mb, cfg.prefetch_distance,
                                  common.repeat, fmt::join(names, ",")));

  std::vector<micro::Case> cases;
  unsigned skipped = 0;  // variants that failed to load (load_or_skip)
  std::vector<BlockId> order;  // the random page order, the same for every translation
  int64_t expected = 0;
  uint64_t rows = 0;
  for (const std::string& name : names) {
    skipped += !micro::load_or_skip("scan", name, common, [&] {
      variants::with_pool_type(name, [&]<class Pool>() {
        PoolOptions opt;
        opt.data_dir = common.data_dir + "/" + name;
        opt.page_size = cfg.page_size;
        opt.pool_bytes = pool_mb << 20;
        opt.max_blocks_per_space = micro::space_capacity(opt.pool_bytes / opt.page_size);
        auto t = std::make_shared<ScanTarget<Pool>>();
        t->pool = micro::open_scratch_pool<Pool>(opt);
        t->heap.emplace(BasicHeapFile<Pool>::create(*t->pool, "scan"));
        const size_t per_page = t->heap->rows_per_page(cfg.row_bytes);
        if (per_page == 0) throw std::runtime_error(fmt::format("{}-byte rows do not fit a page", cfg.row_bytes));
        // Identical rows in every pool: column 0 random in [0, 10^6), column 1 the row number.
        std::vector<std::byte> row(cfg.row_bytes);
        std::mt19937_64 rng(common.seed);
        int64_t sum = 0;
        rows = pages * per_page;
        auto t0 = Clock::now();
        for (uint64_t i = 0; i < rows; ++i) {
          auto v = static_cast<int64_t>(rng() % 1000000);
          std::memcpy(row.data(), &v, 8);
          std::memcpy(row.data() + 8, &i, 8);
          sum += v;
          t->heap->append(row);
        }
        micro::require_resident(*t->pool, name);
        if (!common.quiet) {
          std::fprintf(stderr, "%s: loaded %llu rows in %.1f s\n", name.c_str(), static_cast<unsigned long long>(rows),
                       std::chrono::duration<double>(Clock::now() - t0).count());
        }
        if (order.empty()) {
          order.resize(t->heap->data_pages());
          std::iota(order.begin(), order.end(), BlockId{1});
          std::shuffle(order.begin(), order.end(), rng);
          expected = sum;
        }
        if (t->heap->data_pages() != order.size() || sum != expected) {
          throw std::logic_error(name + ": the loaded heap differs from the first translation's");
        }
        const std::string details = micro::pool_json(*t->pool);
        for (ScanRead read : {ScanRead::kOptimistic, ScanRead::kShared}) {
          if (read == ScanRead::kShared && !cfg.pinned) continue;
          for (bool random : {false, true}) {
            std::string workload = fmt::format("{} {}", random ? "random" : "sequential",
                                               read == ScanRead::kOptimistic ? "optimistic" : "pinned");
            ScanOptions so{read, cfg.prefetch_distance};
            cases.push_back({name, workload,
                             [t, so, random, &order, &expected]() {
                               int64_t s = random ? t->heap->sum_column(0, order, so) : t->heap->sum_column(0, so);
                               return micro::RunOutcome{order.size(), s == expected ? 0u : 1u};
                             },
                             details});
          }
        }
      });
    });
  }
  // Workloads together in the report: sort by workload, keeping the registry order.
  std::stable_sort(cases.begin(), cases.end(), [](const micro::Case& a, const micro::Case& b) {
    auto rank = [](const std::string& w) {
      return (w.find("random") != std::string::npos) + 2 * (w.find("pinned") != std::string::npos);
    };
    return rank(a.workload) < rank(b.workload);
  });
  std::vector<micro::Result> results = micro::measure(cases, common);

  uint64_t bw_checksum = 0;
  const size_t bw_bytes = std::min<size_t>(cfg.data_mb << 20, size_t{1} << 30);
  // Three passes whatever --repeat is, so that bench/experiments/micro_counts.sh can difference rounds.
  const double bandwidth = memory_read_bandwidth(bw_bytes, 3, &bw_checksum);
  // The SUM reads, per page, the header and slot array and one cache line per row's column:
  // that, not the page size, is its memory traffic.
  const size_t per_page = rows / std::max<size_t>(order.size(), 1);
  const size_t lines_per_page =
      (HeapFormat::kHeaderBytes + HeapFormat::kSlotBytes * per_page + 63) / 64 + per_page;
  uint64_t failures = micro::report(
      {"scan", "page",
       fmt::format(R"("data_mb":{},"pages":{},"rows":{},"row_bytes":{},"page_size":{},"pool_mb":{},)"
                   R"("prefetch_distance":{},"touched_bytes_per_page":{},"memory_read_bytes_per_s":{:.0f})",
                   cfg.data_mb, order.size(), rows, cfg.row_bytes, cfg.page_size, pool_mb, cfg.prefetch_distance,
                   lines_per_page * 64, bandwidth)},
      results, common);
  fmt::print("memory read bandwidth: {:.2f} GB/s (single thread, sequential sum over {} MB; checksum {}); the SUM "
             "touches {} cache lines per page\n",
             bandwidth / 1e9, bw_bytes >> 20, bw_checksum % 1000, lines_per_page);
  return failures == 0 && skipped == 0 ? 0 : 1;
}

}  // namespace calico::bench
