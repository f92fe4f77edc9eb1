// scan: see scan.h.
#include "scan.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <vector>

#include "calico/buffer_pool.h"
#include "data_dir.h"
#include "index/heap_file.h"
#include "machine.h"

namespace calico::bench {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Single-thread sequential read bandwidth: sums a buffer of `bytes` 8 bytes at a time
// (the compiler vectorises it), best of `repeat` medians. The same kind of work as the SUM,
// without any page structure.
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
  return median(rates);
}

}  // namespace

int run_scan(const ScanConfig& cfg) {
  prepare_data_dir(cfg.data_dir);
  PoolOptions opt;
  opt.data_dir = cfg.data_dir;
  opt.page_size = cfg.page_size;
  uint64_t pool_mb = cfg.pool_mb ? cfg.pool_mb : cfg.data_mb + cfg.data_mb / 4 + 64;
  opt.pool_bytes = pool_mb << 20;
  auto pool = BufferPool::open(opt);
  HeapFile heap = HeapFile::create(*pool, "scan");
  const size_t per_page = heap.rows_per_page(cfg.row_bytes);
  if (per_page == 0) throw std::runtime_error(fmt::format("{}-byte rows do not fit a page", cfg.row_bytes));
  const uint64_t pages = (cfg.data_mb << 20) / cfg.page_size;
  const uint64_t rows = pages * per_page;

  fmt::print("calico scan (Table 2): {} rows of {} B, {} per {}-byte page, {} pages ({} MB), pool {} MB, "
             "prefetch distance {}, {} repeats, translation array\n",
             rows, cfg.row_bytes, per_page, cfg.page_size, pages, cfg.data_mb, pool_mb, cfg.prefetch_distance,
             cfg.repeat);
  fmt::print("machine: {}, {} cores; build: {}\n", cpu_model(), std::thread::hardware_concurrency(), build_flags());
  std::fflush(stdout);

  std::vector<std::byte> row(cfg.row_bytes);
  std::mt19937_64 rng(cfg.seed);
  int64_t expected = 0;
  auto t0 = Clock::now();
  for (uint64_t i = 0; i < rows; ++i) {
    auto v = static_cast<int64_t>(rng() % 1000000);
    std::memcpy(row.data(), &v, 8);
    std::memcpy(row.data() + 8, &i, 8);
    expected += v;
    heap.append(row);
    if ((i + 1) % (rows / 4 + 1) == 0) std::fprintf(stderr, "loading: %.0f%%\n", 100.0 * (i + 1) / rows);
  }
  std::fprintf(stderr, "loading: done in %.1f s\n", std::chrono::duration<double>(Clock::now() - t0).count());

  std::vector<BlockId> order(heap.data_pages());
  std::iota(order.begin(), order.end(), BlockId{1});
  std::shuffle(order.begin(), order.end(), rng);

  struct Variant {
    const char* name;
    bool random;
    ScanRead read;
    std::vector<double> seconds;
  };
  std::vector<Variant> variants = {{"sequential optimistic", false, ScanRead::kOptimistic, {}},
                                   {"sequential pinned", false, ScanRead::kShared, {}},
                                   {"random optimistic", true, ScanRead::kOptimistic, {}},
                                   {"random pinned", true, ScanRead::kShared, {}}};
  int wrong = 0;
  heap.sum_column(0);  // warm-up: everything resident
  for (unsigned r = 0; r < cfg.repeat; ++r) {
    // Interleaved, rotating the start, so that drift cannot favour one variant.
    for (size_t k = 0; k < variants.size(); ++k) {
      Variant& v = variants[(k + r) % variants.size()];
      ScanOptions so{v.read, cfg.prefetch_distance};
      auto s0 = Clock::now();
      int64_t sum = v.random ? heap.sum_column(0, order, so) : heap.sum_column(0, so);
      v.seconds.push_back(std::chrono::duration<double>(Clock::now() - s0).count());
      if (sum != expected) ++wrong;
    }
  }
  uint64_t bw_checksum = 0;
  double bandwidth = memory_read_bandwidth(std::min<size_t>(cfg.data_mb << 20, size_t{1} << 30), cfg.repeat, &bw_checksum);

  const uint64_t data_pages = heap.data_pages();
  // The SUM reads one 8-byte column per row: per page, the header and slot array (at the
  // page start) and one cache line per row. That, not the page size, is the memory traffic.
  const size_t lines_per_page = (HeapFile::kHeaderBytes + HeapFile::kSlotBytes * per_page + 63) / 64 + per_page;
  fmt::print("\n{:<24}{:>11}{:>13}{:>9}{:>13}{:>14}{:>13}\n", "variant", "median ms", "pages/s", "ns/page",
             "page GB/s", "touched GB/s", "of mem bw");
  std::string json;
  for (const Variant& v : variants) {
    double s = median(v.seconds);
    double pages_per_s = data_pages / s;
    double bytes_per_s = pages_per_s * cfg.page_size;
    double touched_per_s = pages_per_s * lines_per_page * 64;
    fmt::print("{:<24}{:>11.1f}{:>13.0f}{:>9.1f}{:>13.2f}{:>14.2f}{:>12.1f}%\n", v.name, s * 1e3, pages_per_s,
               1e9 / pages_per_s, bytes_per_s / 1e9, touched_per_s / 1e9, 100 * touched_per_s / bandwidth);
    json += fmt::format(
        R"({{"experiment":"scan","translation":"array","variant":"{}","rows":{},"row_bytes":{},"page_size":{},"pages":{},"prefetch_distance":{},"repeat":{},"median_s":{:.6f},"pages_per_s":{:.0f},"bytes_per_s":{:.0f},"touched_bytes_per_s":{:.0f},"memory_read_bytes_per_s":{:.0f},{}}})",
        v.name, rows, cfg.row_bytes, cfg.page_size, data_pages, cfg.prefetch_distance, cfg.repeat, s, pages_per_s,
        bytes_per_s, touched_per_s, bandwidth, machine_json());
    json += "\n";
  }
  fmt::print("memory read bandwidth: {:.2f} GB/s (single thread, sequential sum over {} MB; checksum {})\n",
             bandwidth / 1e9, std::min<uint64_t>(cfg.data_mb, 1024), bw_checksum % 1000);
  fmt::print("touched = {} cache lines per page (header + slots, one line per row's column); page GB/s counts "
             "whole pages, of which the SUM reads only those lines\n", lines_per_page);
  fmt::print("sums checked: {} of {} wrong\n", wrong, cfg.repeat * variants.size());
  if (!cfg.json_path.empty()) std::ofstream(cfg.json_path, std::ios::app) << json;
  pool.reset();
  std::filesystem::remove_all(cfg.data_dir);
  return wrong == 0 ? 0 : 1;
}

}  // namespace calico::bench
