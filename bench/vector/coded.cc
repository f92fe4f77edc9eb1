// calico_bench vector-coded: see coded.h.
#include "vector/coded.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "calico/buffer_pool.h"
#include "calico/index/coded_hnsw.h"
#include "calico/index/hnsw.h"
#include "common/machine.h"
#include "vector/data/dataset.h"
#include "vector/data/recall.h"

namespace calico::bench {

namespace {

namespace fs = std::filesystem;
using vector::Neighbor;

// Seconds since t0 (steady clock).
double elapsed_s(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One search setting's measurements.
struct Row {
  std::string index;
  uint32_t ef = 0, rerank = 0;
  uint64_t pool_bytes = 0, resident_codes_bytes = 0;
  double recall = 0, qps = 0, reads_per_query = 0;
  bool ok = true;
};

PoolOptions pool_options(const std::string& dir, uint64_t bytes) {
  PoolOptions o;
  o.data_dir = dir;
  o.pool_bytes = std::max<uint64_t>((bytes + 4095) / 4096 * 4096, uint64_t{1} << 20);
  o.max_blocks_per_space = uint64_t{1} << 24;
  return o;
}

// Runs search(q, results) over every query once (recall), then for `seconds` (QPS and pages
// read per query from the pool's counters).
template <class Pool, class Search>
void measure(Pool& pool, const data::Dataset& ds, const VectorCodedConfig& c, Row& row, Search&& search) {
  const uint64_t nq = ds.queries.rows;
  std::vector<std::vector<Neighbor>> got(nq);
  for (uint64_t q = 0; q < nq; ++q) search(ds.queries.row(q), &got[q]);
  row.recall = data::recall_at_k(got, ds.ground_truth, c.k);
  const PoolStats before = pool.stats();
  std::vector<Neighbor> out;
  uint64_t done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (elapsed_s(t0) < c.seconds) {
    search(ds.queries.row(done % nq), &out);
    ++done;
  }
  const double s = elapsed_s(t0);
  const PoolStats after = pool.stats();
  row.qps = double(done) / s;
  row.reads_per_query =
      double((after.faults - before.faults) + (after.prefetch_issued - before.prefetch_issued)) / double(done);
}

}  // namespace

int run_vector_coded(const VectorCodedConfig& c) {
  const data::Dataset ds = data::load_or_generate(
      data::DatasetSpec{.kind = "clustered", .metric = vector::Metric::kL2, .n = c.n, .dim = c.dim,
                        .clusters = c.clusters, .queries = c.queries, .seed = c.data_seed, .base_path = {},
                        .query_path = {}, .ground_truth_path = {}, .max_base_rows = data::kAllRows,
                        .max_queries = data::kAllRows, .gt_k = std::max<uint32_t>(c.k, 100), .threads = 0,
                        .verbose = true},
      c.cache_dir);
  const uint64_t n = ds.base.rows;
  const uint32_t dim = ds.base.dim;
  fmt::print("vector-coded: {} (n {}, dim {}, {} queries), M {}, ef_construction {}, rabitq{}, pool {:.0f}% of the "
             "HNSW, {} s per setting\n",
             ds.name, n, dim, ds.queries.rows, c.M, c.ef_construction, c.bits, c.pool_fraction * 100, c.seconds);
  fmt::print("machine: {}\n", machine_json());

  // 1. Build both in a pool that holds them.
  const std::string built = c.dir + "/built";
  const uint64_t vector_bytes = n * dim * 4;
  fs::remove_all(c.dir);
  fs::create_directories(built);
  uint64_t hnsw_bytes = 0;
  auto t0 = std::chrono::steady_clock::now();
  double hnsw_build_s = 0, coded_build_s = 0;
  {
    auto pool = BufferPool::open(pool_options(built, 4 * vector_bytes + (uint64_t{128} << 20)));
    index::HnswParams hp;
    hp.dim = dim;
    hp.M = c.M;
    hp.ef_construction = c.ef_construction;
    auto hnsw = index::BasicHnsw<BufferPool>::create(*pool, "hnsw", hp, static_cast<uint32_t>(n));
    index::CodedHnswParams cp;
    cp.dim = dim;
    cp.M = c.M;
    cp.ef_construction = c.ef_construction;
    cp.bits = c.bits;
    auto coded = index::BasicCodedHnsw<BufferPool>::create(*pool, "coded", cp, ds.base.values.data(),
                                                           std::min<uint64_t>(n, 25'000), static_cast<uint32_t>(n),
                                                           UINT64_MAX / 2);
    auto parallel = [&](auto&& add) {
      std::atomic<uint64_t> next{0};
      std::vector<std::thread> ts;
      for (uint32_t t = 0; t < c.build_threads; ++t) {
        ts.emplace_back([&] {
          for (uint64_t i = next++; i < n; i = next++) add(static_cast<uint32_t>(i), ds.base.row(i));
        });
      }
      for (auto& t : ts) t.join();
    };
    t0 = std::chrono::steady_clock::now();
    parallel([&](uint32_t i, const float* v) { hnsw.add(i, v); });
    hnsw_build_s = elapsed_s(t0);
    t0 = std::chrono::steady_clock::now();
    parallel([&](uint32_t i, const float* v) { coded.add(i, v); });
    coded_build_s = elapsed_s(t0);
    hnsw_bytes = pool->space_blocks(hnsw.space()) * pool->page_size();
    pool->flush();
  }
  fmt::print("built: hnsw {:.1f} s ({} MB), coded {:.1f} s\n", hnsw_build_s, hnsw_bytes >> 20, coded_build_s);

  // 2. Search with the small pool.
  const uint64_t budget = static_cast<uint64_t>(c.pool_fraction * double(hnsw_bytes));
  std::vector<Row> rows;
  int status = 0;
  {
    auto pool = BufferPool::open([&] {
      PoolOptions o = pool_options(built, budget);
      o.direct_io = true;
      return o;
    }());
    auto hnsw = index::BasicHnsw<BufferPool>::open(*pool, "hnsw");
    index::HnswSearchState st(hnsw);
    for (uint32_t ef : c.hnsw_ef) {
      Row r;
      r.index = "hnsw";
      r.ef = ef;
      r.pool_bytes = pool->num_frames() * pool->page_size();
      index::HnswSearchOptions opt;
      opt.k = c.k;
      opt.ef = ef;
      measure(*pool, ds, c, r, [&](const float* q, std::vector<Neighbor>* out) { hnsw.search(q, opt, st, out); });
      rows.push_back(r);
    }
  }
  {
    // The same memory: the pool less the resident codes.
    uint64_t codes_bytes = 0;
    {
      auto probe = BufferPool::open(pool_options(built, uint64_t{4} << 20));
      auto coded = index::BasicCodedHnsw<BufferPool>::open(*probe, "coded", UINT64_MAX / 2);
      codes_bytes = coded.codes_bytes(coded.capacity());
    }
    auto pool = BufferPool::open([&] {
      PoolOptions o = pool_options(built, budget > codes_bytes + (uint64_t{2} << 20) ? budget - codes_bytes : uint64_t{2} << 20);
      o.direct_io = true;
      return o;
    }());
    auto coded = index::BasicCodedHnsw<BufferPool>::open(*pool, "coded", UINT64_MAX / 2);
    index::CodedHnswSearchState st(coded);
    const vector::DistanceFn l2 = vector::distance_kernel(vector::Metric::kL2);
    for (uint32_t rr : c.rerank) {
      for (uint32_t ef : c.coded_ef) {
        Row r;
        r.index = "coded";
        r.ef = ef;
        r.rerank = rr;
        r.pool_bytes = pool->num_frames() * pool->page_size();
        r.resident_codes_bytes = coded.memory().codes + coded.memory().model;
        index::CodedHnswSearchOptions opt;
        opt.k = c.k;
        opt.ef = ef;
        opt.rerank = rr;
        measure(*pool, ds, c, r, [&](const float* q, std::vector<Neighbor>* out) {
          coded.search(q, opt, st, out);
          for (const Neighbor& nb : *out) {
            if (nb.id >= n || l2(q, ds.base.row(nb.id), dim) != nb.distance) r.ok = false;
          }
        });
        if (!r.ok) status = 1;
        rows.push_back(r);
      }
    }
  }
  std::ofstream json;
  if (!c.json_path.empty()) json.open(c.json_path, std::ios::app);
  fmt::print("{:>6} {:>5} {:>6} {:>10} {:>10} {:>8} {:>9} {:>12}\n", "index", "ef", "rerank", "pool MB", "codes MB",
             "recall", "QPS", "reads/query");
  for (const Row& r : rows) {
    fmt::print("{:>6} {:>5} {:>6} {:>10.1f} {:>10.2f} {:>8.3f} {:>9.0f} {:>12.1f}{}\n", r.index, r.ef, r.rerank,
               r.pool_bytes / 1048576.0, r.resident_codes_bytes / 1048576.0, r.recall, r.qps, r.reads_per_query,
               r.ok ? "" : "  CHECK FAILED");
    if (json.is_open()) {
      json << fmt::format(
          R"({{"bench":"vector-coded","index":"{}","dataset":"{}","n":{},"dim":{},"queries":{},"M":{},"ef_construction":{},"bits":{},"k":{},"ef":{},"rerank":{},"pool_fraction":{},"pool_bytes":{},"resident_codes_bytes":{},"recall":{:.4f},"qps":{:.1f},"reads_per_query":{:.2f},"seconds":{},"hnsw_build_s":{:.1f},"coded_build_s":{:.1f},"check":{},{}}})",
          r.index, ds.name, n, dim, ds.queries.rows, c.M, c.ef_construction, c.bits, c.k, r.ef, r.rerank,
          c.pool_fraction, r.pool_bytes, r.resident_codes_bytes, r.recall, r.qps, r.reads_per_query, c.seconds,
          hnsw_build_s, coded_build_s, r.ok ? "true" : "false", machine_json())
           << "\n";
    }
  }
  fs::remove_all(c.dir);
  return status;
}

}  // namespace calico::bench
