// demo: see demo.h.
#include "demo/demo.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <random>
#include <thread>
#include <vector>

#include "calico/buffer_pool.h"
#include "common/data_dir.h"
#include "common/sizes.h"
#include "common/machine.h"
#include "support/page_pattern.h"
#include "common/zipf.h"

namespace calico::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct ThreadResult {
  uint64_t reads = 0, writes = 0, bad_pages = 0;
};

// Step 2: every page of `space` gets the pattern for stamp 0, then the pool is flushed.
// Progress: in place on a terminal, every 25% otherwise (logs). Returns the seconds it took.
double load_space(BufferPool& pool, SpaceId space, uint64_t pages) {
  const size_t usable = pool.usable_page_size();
  std::fflush(stdout);
  const bool tty = isatty(STDERR_FILENO);
  const uint64_t step = std::max<uint64_t>(1, pages / (tty ? 100 : 4));
  auto load_start = Clock::now();
  for (uint64_t i = 0; i < pages; ++i) {
    ExclusiveGuard g = pool.allocate(space);
    test::stamp_pattern(g.data(), usable, g.page_id(), 0);
    g.mark_dirty();
    if ((i + 1) % step == 0 && i + 1 < pages) {
      std::fprintf(stderr, tty ? "\rloading: %3.0f%% (%lu pages)" : "loading: %3.0f%% (%lu pages)\n",
                   100.0 * (i + 1) / pages, (unsigned long)(i + 1));
    }
  }
  pool.flush();
  double load_s = seconds_since(load_start);
  std::fprintf(stderr, "%sloading: done, %lu pages in %.1f s (%.0f pages/s, flush included)\n", tty ? "\r" : "",
               (unsigned long)pages, load_s, pages / load_s);
  return load_s;
}

// Step 3, one worker thread until `stop`: bursts of 64 random accesses, each a write (pin
// exclusive, check, restamp) or a read (optimistic or pinned, checked), reads after an
// optional group prefetch of random pages.
void run_worker(const DemoConfig& cfg, BufferPool& pool, SpaceId space, uint64_t pages, unsigned t,
                const std::atomic<bool>& stop, ThreadResult& r) {
  const size_t usable = pool.usable_page_size();
  std::mt19937_64 rng(cfg.seed * 1000 + t);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  std::uniform_int_distribution<uint64_t> uniform(0, pages - 1);
  // Zipf ranks are scattered over the space (an odd multiplier is a bijection mod 2^k;
  // the modulo keeps it in range) so that the hot pages are not all adjacent.
  ZipfGenerator zipf(cfg.distribution == "zipf" ? pages : 2, cfg.zipf_theta);
  auto pick = [&]() -> uint64_t {
    if (cfg.distribution == "uniform") return uniform(rng);
    return static_cast<uint64_t>((zipf.next(rng) * 0x9E3779B97F4A7C15ull) % pages);
  };
  std::vector<PageId> group(cfg.prefetch_group);
  while (!stop.load(std::memory_order_relaxed)) {
    for (int burst = 0; burst < 64; ++burst) {
      PageId pid(space, static_cast<BlockId>(pick()));
      if (coin(rng) < cfg.write_fraction) {
        ExclusiveGuard g = pool.pin_exclusive(pid);
        if (!test::check_pattern(g.data(), usable, pid)) ++r.bad_pages;
        test::stamp_pattern(g.data(), usable, pid, test::pattern_stamp(g.data()) + 1);
        g.mark_dirty();
        ++r.writes;
        continue;
      }
      if (!group.empty()) {
        for (auto& p : group) p = PageId(space, static_cast<BlockId>(pick()));
        pool.prefetch_group(group);
      }
      bool ok;
      if (coin(rng) < cfg.optimistic_fraction) {
        ok = pool.optimistic_read(pid, [&](const std::byte* p) { return test::check_pattern_racy(p, usable, pid); });
      } else {
        SharedGuard g = pool.pin_shared(pid);
        ok = test::check_pattern(g.data(), usable, pid);
      }
      r.bad_pages += !ok;
      ++r.reads;
    }
  }
}

// What a run measured: the workers' sums and the pool's counters around the run.
struct DemoRun {
  ThreadResult total;
  double seconds = 0;
  PoolStats before, after;
};

// Step 3: cfg.threads workers for cfg.seconds.
DemoRun run_workers(const DemoConfig& cfg, BufferPool& pool, SpaceId space, uint64_t pages) {
  DemoRun run;
  run.before = pool.stats();
  std::atomic<bool> stop{false};
  std::vector<ThreadResult> results(cfg.threads);
  std::vector<std::thread> workers;
  auto run_start = Clock::now();
  for (unsigned t = 0; t < cfg.threads; ++t) {
    workers.emplace_back([&, t] { run_worker(cfg, pool, space, pages, t, stop, results[t]); });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(cfg.seconds));
  stop = true;
  for (auto& w : workers) w.join();
  run.seconds = seconds_since(run_start);
  run.after = pool.stats();
  for (const auto& r : results) {
    run.total.reads += r.reads, run.total.writes += r.writes, run.total.bad_pages += r.bad_pages;
  }
  return run;
}

// The pool's own count: page lookups that did not read the page themselves.
double hit_rate(const DemoRun& run) {
  uint64_t accesses = run.after.accesses - run.before.accesses;
  return accesses ? double(run.after.hits - run.before.hits) / double(accesses) : 0.0;
}

// Step 4: the table of the run.
void print_demo_table(const DemoRun& run, uint64_t pages) {
  const PoolStats& before = run.before;
  const PoolStats& after = run.after;
  const ThreadResult& total = run.total;
  uint64_t ops = total.reads + total.writes;
  uint64_t faults = after.faults - before.faults;
  uint64_t accesses = after.accesses - before.accesses;
  double mb = 1.0 / (1 << 20);

  fmt::print("\n{:<34}{:>16}\n", "metric", "value");
  fmt::print("{:<34}{:>16.0f}\n", "throughput (ops/s)", ops / run.seconds);
  fmt::print("{:<34}{:>16}\n", "operations (reads / writes)", fmt::format("{} / {}", total.reads, total.writes));
  fmt::print("{:<34}{:>16}\n", "page accesses", accesses);
  fmt::print("{:<34}{:>15.2f}%\n", "hit rate", hit_rate(run) * 100);
  fmt::print("{:<34}{:>16}\n", "faults (synchronous reads)", faults);
  fmt::print("{:<34}{:>16}\n", "prefetch reads issued", after.prefetch_issued - before.prefetch_issued);
  fmt::print("{:<34}{:>16}\n", "evictions", after.evictions - before.evictions);
  fmt::print("{:<34}{:>16}\n", "write-backs", after.write_backs - before.write_backs);
  fmt::print("{:<34}{:>16}\n", "journal images / syncs",
             fmt::format("{} / {}", after.journal_pages - before.journal_pages, after.journal_syncs - before.journal_syncs));
  fmt::print("{:<34}{:>16}\n", "entry pages punched", after.punches - before.punches);
  fmt::print("{:<34}{:>16}\n", "optimistic fallbacks to pins", after.optimistic_fallbacks - before.optimistic_fallbacks);
  fmt::print("{:<34}{:>13.2f} MB\n", "translation resident (pagemap)", after.translation_private_bytes * mb);
  fmt::print("{:<34}{:>13.2f} MB\n", "translation resident (mincore)", after.translation_mincore_bytes * mb);
  fmt::print("{:<34}{:>13.2f} MB\n", "translation dense array would be", pages * 8 * mb);
  fmt::print("{:<34}{:>13.0f} MB\n", "translation reserved (virtual)", after.translation_reserved_bytes * mb);
  fmt::print("{:<34}{:>16}\n", "frame arena on huge pages",
             fmt::format("{:.0f} of {:.0f} MB", after.frame_huge_page_bytes * mb, after.frame_bytes * mb));
  fmt::print("{:<34}{:>16}\n", "O_DIRECT", after.direct_io ? "yes" : "no (buffered)");
  fmt::print("{:<34}{:>16}\n", "pages failing the pattern check", total.bad_pages);
}

void append_demo_json(const DemoConfig& cfg, const DemoRun& run) {
  const PoolStats& before = run.before;
  const PoolStats& after = run.after;
  const uint64_t ops = run.total.reads + run.total.writes;
  std::ofstream out(cfg.json_path, std::ios::app);
  out << fmt::format(
      R"({{"experiment":"demo","translation":"array","data_mb":{},"pool_mb":{},"page_size":{},"threads":{},"seconds":{:.2f},"write_fraction":{},"distribution":"{}","ops_per_s":{:.0f},"hit_rate":{:.5f},"evictions":{},"write_backs":{},"atomic_flush":{},"journal_pages":{},"journal_syncs":{},"punches":{},"translation_private_bytes":{},"translation_mincore_bytes":{},"translation_reserved_bytes":{},"frame_huge_page_bytes":{},"frame_bytes":{},"bad_pages":{},{}}})",
      cfg.data_mb, cfg.pool_mb, cfg.page_size, cfg.threads, run.seconds, cfg.write_fraction, cfg.distribution,
      ops / run.seconds, hit_rate(run), after.evictions - before.evictions, after.write_backs - before.write_backs,
      cfg.atomic_flush, after.journal_pages - before.journal_pages, after.journal_syncs - before.journal_syncs,
      after.punches - before.punches, after.translation_private_bytes, after.translation_mincore_bytes,
      after.translation_reserved_bytes, after.frame_huge_page_bytes, after.frame_bytes, run.total.bad_pages,
      machine_json())
      << "\n";
}

}  // namespace

int run_demo(const DemoConfig& cfg) {
  // Step 1: the options and the run's configuration (STYLE.md 10).
  check_size_mb(cfg.data_mb, "--data-mb");
  check_size_mb(cfg.pool_mb, "--pool-mb");
  prepare_bench_dir(cfg.data_dir);
  PoolOptions opt;
  opt.data_dir = cfg.data_dir;
  opt.page_size = cfg.page_size;
  opt.pool_bytes = cfg.pool_mb << 20;
  opt.atomic_flush = cfg.atomic_flush;
  const uint64_t pages = (cfg.data_mb << 20) / cfg.page_size;

  fmt::print("calico demo: data {} MB ({} pages of {} B), pool {} MB, {} threads, {:.1f} s, "
             "writes {:.0f}%, optimistic reads {:.0f}%, {} access{}, prefetch group {}, atomic flush {}, seed {}\n",
             cfg.data_mb, pages, cfg.page_size, cfg.pool_mb, cfg.threads, cfg.seconds,
             cfg.write_fraction * 100, cfg.optimistic_fraction * 100, cfg.distribution,
             cfg.distribution == "zipf" ? fmt::format(" (theta {})", cfg.zipf_theta) : "",
             cfg.prefetch_group, cfg.atomic_flush ? "on" : "off", cfg.seed);
  fmt::print("machine: {}, {} cores, {:.1f} GiB; build: {}\n", cpu_model(),
             std::thread::hardware_concurrency(), memory_bytes() / double(1ull << 30), build_flags());

  auto pool = BufferPool::open(opt);
  SpaceId space = pool->create_space("demo");
  load_space(*pool, space, pages);
  const DemoRun run = run_workers(cfg, *pool, space, pages);
  print_demo_table(run, pages);

  pool->flush();
  pool->check_invariants();
  if (!cfg.json_path.empty()) append_demo_json(cfg, run);
  pool.reset();
  if (!cfg.keep_data) remove_bench_dir(cfg.data_dir);
  if (run.total.bad_pages != 0) {
    fmt::print(stderr, "FAILED: {} reads saw a page that did not match its pattern\n", run.total.bad_pages);
    return 1;
  }
  return 0;
}

}  // namespace calico::bench
