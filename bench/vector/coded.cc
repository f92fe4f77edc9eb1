// calico_bench vector-coded: see coded.h.
#include "vector/coded.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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
#include "calico/error.h"
#include "vector/distance.h"
#include "vector/timed_region.h"

namespace calico::bench {

namespace {

namespace fs = std::filesystem;
using vector::Neighbor;

// Seconds since t0 (steady clock).
double elapsed_s(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One search setting's measurements (medians over the rounds).
struct Row {
  std::string index;
  double pool_fraction = 0;
  uint32_t ef = 0, rerank = 0, entries = 0, width = 0, threads = 1;
  bool batched = false;  // coded: CodedHnswSearchOptions::batched
  uint64_t pool_bytes = 0, resident_codes_bytes = 0;
  double pin_share = 0;           // coded: the share of its memory beyond codes given to pinned rows
  uint64_t pinned_bytes = 0;      // coded: memory().pinned_rows
  uint32_t pinned_rows = 0;
  double pin_s = 0;               // coded: pin_rows()'s time
  double recall = 0;
  std::vector<double> qps, reads_per_query, faults_per_query, p50_ms, p99_ms;  // faults: synchronous reads
  bool ok = true;
};

// One row per thread count of `setting` (its threads field set), appended to rows.
void add_per_thread(const Row& setting, const std::vector<uint32_t>& threads, std::vector<Row>* rows) {
  for (uint32_t th : threads) {
    Row r = setting;
    r.threads = th;
    rows->push_back(r);
  }
}

// The coded index's search options of a setting (width 0: no prefetch).
index::CodedHnswSearchOptions coded_options(uint32_t k, const Row& r) {
  index::CodedHnswSearchOptions opt;
  opt.k = k;
  opt.ef = r.ef;
  opt.rerank = r.rerank;
  opt.entries = r.entries;
  opt.batched = r.batched;
  opt.prefetch = r.width > 0;
  opt.prefetch_width = r.width;
  return opt;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  double one = -1;
  f >> one;
  return fmt::format("{:.2f}", one);
}

PoolOptions pool_options(const std::string& dir, uint64_t bytes) {
  PoolOptions o;
  o.data_dir = dir;
  o.pool_bytes = std::max<uint64_t>((bytes + 4095) / 4096 * 4096, uint64_t{1} << 20);
  o.max_blocks_per_space = uint64_t{1} << 24;
  return o;
}

// search(q, out, thread) over every query once, in order, on one thread (recall; the pool's
// warm-up); the cursor then points at the pass's first query (QueryCursor::after_pass).
template <class Search>
double recall_of(const data::Dataset& ds, uint32_t k, QueryCursor* cursor, Search&& search) {
  const uint64_t nq = ds.queries.rows;
  std::vector<std::vector<Neighbor>> got(nq);
  for (uint64_t q = 0; q < nq; ++q) search(ds.queries.row(q), &got[q], 0u);
  cursor->after_pass();
  return data::recall_at_k(got, ds.ground_truth, k);
}

// One timed region of row's setting (timed_region.h), its measurements appended to row.
template <class Pool, class Search>
void timed(const Pool& pool, const data::Dataset& ds, double seconds, QueryCursor* cursor, Row& row,
           Search&& search) {
  std::vector<std::vector<Neighbor>> out(row.threads);  // a result per thread
  const RegionResult r = timed_region(pool, row.threads, seconds, cursor, [&](uint64_t q, uint32_t t) {
    search(ds.queries.row(q), &out[t], t);
  });
  row.qps.push_back(r.qps);
  row.reads_per_query.push_back(r.reads_per_query);
  row.faults_per_query.push_back(r.faults_per_query);
  row.p50_ms.push_back(r.p50_ms);
  row.p99_ms.push_back(r.p99_ms);
}

// The built directory's record: what it was built from (the base vectors, not the queries:
// data::base_name), and how long each build took.
std::string built_key(const data::DatasetSpec& spec, const VectorCodedConfig& c) {
  return fmt::format("{} M{} efc{} {} alpha{}", data::base_name(spec), c.M, c.ef_construction,
                     c.pq_bytes > 0 ? fmt::format("pq{}", c.pq_bytes) : fmt::format("bits{}", c.bits), c.alpha);
}

}  // namespace

int run_vector_coded(const VectorCodedConfig& c) {
  if (c.pool_fractions.empty() || c.threads.empty() || c.rounds == 0) {
    throw Error(ErrorCode::kInvalidArgument, "vector-coded: --pool-fraction, --threads and --rounds need values");
  }
  data::DatasetSpec spec;
  spec.kind = c.dataset;
  spec.metric = vector::parse_metric(c.metric);
  spec.n = c.n;
  spec.dim = c.dim;
  spec.clusters = c.clusters;
  spec.queries = c.queries;
  spec.seed = c.data_seed;
  spec.base_path = c.base_path;
  spec.query_path = c.query_path;
  spec.ground_truth_path = c.gt_path;
  spec.gt_k = std::max<uint32_t>(c.k, 100);
  const data::Dataset ds = data::load_or_generate(spec, c.cache_dir);
  const uint64_t n = ds.base.rows;
  const uint32_t dim = ds.base.dim;
  if (n > index::BasicCodedHnsw<BufferPool>::kMaxCapacity) throw Error(ErrorCode::kInvalidArgument, "vector-coded: too many rows");
  fmt::print("vector-coded: {} (n {}, dim {}, {} queries), M {}, ef_construction {}, {}, pools {} of the "
             "HNSW, threads {}, {} round(s) of {} s per setting\n",
             ds.name, n, dim, ds.queries.rows, c.M, c.ef_construction,
             c.pq_bytes > 0 ? fmt::format("pq{}", c.pq_bytes) : fmt::format("rabitq{}", c.bits), fmt::join(c.pool_fractions, ","),
             fmt::join(c.threads, ","), c.rounds, c.seconds);
  fmt::print("machine: {}\n", machine_json());

  // 1. Build both in a pool that holds them (or reuse a directory built so before).
  const std::string built = c.dir + "/built";
  const std::string record = c.dir + "/built.txt";
  const uint64_t vector_bytes = n * dim * 4;
  double hnsw_build_s = 0, coded_build_s = 0;
  bool reused = false;
  if (c.reuse) {
    std::ifstream f(record);
    std::string key;
    if (std::getline(f, key) && key == built_key(spec, c) && f >> hnsw_build_s >> coded_build_s) reused = true;
  }
  if (!reused) {
    fs::remove_all(c.dir);
    fs::create_directories(built);
    auto pool = BufferPool::open(pool_options(built, 4 * vector_bytes + (uint64_t{128} << 20)));
    index::HnswParams hp;
    hp.dim = dim;
    hp.metric = ds.metric;
    hp.M = c.M;
    hp.ef_construction = c.ef_construction;
    auto hnsw = index::BasicHnsw<BufferPool>::create(*pool, "hnsw", hp, static_cast<uint32_t>(n));
    index::CodedHnswParams cp;
    cp.dim = dim;
    cp.metric = ds.metric;
    cp.M = c.M;
    cp.ef_construction = c.ef_construction;
    cp.bits = c.bits;
    cp.pq_bytes = c.pq_bytes;
    cp.alpha = c.alpha;
    auto coded = index::BasicCodedHnsw<BufferPool>::create(*pool, "coded", cp, ds.base.values.data(),
                                                           std::min<uint64_t>(n, 25'000), static_cast<uint32_t>(n),
                                                           UINT64_MAX / 2);
    auto parallel = [&](const char* what, auto&& add) {
      std::atomic<uint64_t> next{0};
      std::vector<std::thread> ts;
      const auto t0 = std::chrono::steady_clock::now();
      for (uint32_t t = 0; t < c.build_threads; ++t) {
        ts.emplace_back([&, t] {
          for (uint64_t i = next++; i < n; i = next++) {
            add(static_cast<uint32_t>(i), ds.base.row(i));
            if (t == 0 && i % 100'000 == 0 && i > 0) fmt::print("  {}: {} of {} rows ({:.0f} s)\n", what, i, n, elapsed_s(t0));
          }
        });
      }
      for (auto& t : ts) t.join();
      return elapsed_s(t0);
    };
    hnsw_build_s = parallel("hnsw", [&](uint32_t i, const float* v) { hnsw.add(i, v); });
    coded_build_s = parallel("coded", [&](uint32_t i, const float* v) { coded.add(i, v); });
    pool->flush();
    std::ofstream(record) << built_key(spec, c) << "\n" << hnsw_build_s << " " << coded_build_s << "\n";
  }
  uint64_t hnsw_bytes = 0, codes_bytes = 0;
  {
    auto probe = BufferPool::open(pool_options(built, uint64_t{4} << 20));
    hnsw_bytes = probe->space_blocks(probe->open_space("hnsw")) * probe->page_size();
    auto coded = index::BasicCodedHnsw<BufferPool>::open(*probe, "coded", UINT64_MAX / 2);
    codes_bytes = coded.codes_bytes(coded.capacity());
  }
  fmt::print("built{}: hnsw {:.1f} s ({} MB), coded {:.1f} s (codes {:.1f} MB)\n", reused ? " (reused)" : "",
             hnsw_build_s, hnsw_bytes >> 20, coded_build_s, codes_bytes / 1048576.0);

  // 2. Search with the small pools.
  const uint32_t max_threads = *std::max_element(c.threads.begin(), c.threads.end());
  const vector::DistanceFn dist = vector::distance_kernel(
      ds.metric == vector::Metric::kCosine ? vector::Metric::kInnerProduct : ds.metric);
  std::vector<Row> rows;
  int status = 0;
  const std::string load_before = loadavg();
  QueryCursor cursor(ds.queries.rows);  // every timed region's and recall pass's next query
  for (const double f : c.pool_fractions) {
    const uint64_t budget = static_cast<uint64_t>(f * double(hnsw_bytes));
    {
      auto pool = BufferPool::open([&] {
        PoolOptions o = pool_options(built, budget);
        o.direct_io = true;
        return o;
      }());
      auto hnsw = index::BasicHnsw<BufferPool>::open(*pool, "hnsw");
      std::vector<std::unique_ptr<index::HnswSearchState>> st;
      for (uint32_t t = 0; t < max_threads; ++t) st.push_back(std::make_unique<index::HnswSearchState>(hnsw));
      const size_t first = rows.size();
      for (uint32_t ef : c.hnsw_ef) {
        index::HnswSearchOptions opt;
        opt.k = c.k;
        opt.ef = ef;
        auto search = [&](const float* q, std::vector<Neighbor>* out, uint32_t t) { hnsw.search(q, opt, *st[t], out); };
        Row r;
        r.index = "hnsw";
        r.pool_fraction = f;
        r.ef = ef;
        r.pool_bytes = pool->num_frames() * pool->page_size();
        r.recall = recall_of(ds, c.k, &cursor, search);
        add_per_thread(r, c.threads, &rows);
      }
      for (uint32_t round = 0; round < c.rounds; ++round) {
        for (size_t i = first; i < rows.size(); ++i) {
          index::HnswSearchOptions opt;
          opt.k = c.k;
          opt.ef = rows[i].ef;
          timed(*pool, ds, c.seconds, &cursor, rows[i],
                [&](const float* q, std::vector<Neighbor>* out, uint32_t t) { hnsw.search(q, opt, *st[t], out); });
        }
      }
    }
    for (const double share : c.pin_share) {
      // The same memory: the pool less the resident codes, less the pinned rows.
      const uint64_t beyond = budget > codes_bytes + (uint64_t{2} << 20) ? budget - codes_bytes : uint64_t{2} << 20;
      // The pool keeps at least 1 MB (pool_options' floor), so the total stays `beyond`.
      const uint64_t pin_bytes = std::min(static_cast<uint64_t>(share * double(beyond)), beyond - (uint64_t{1} << 20));
      auto pool = BufferPool::open([&] {
        PoolOptions o = pool_options(built, beyond - pin_bytes);
        o.direct_io = true;
        return o;
      }());
      auto coded = index::BasicCodedHnsw<BufferPool>::open(*pool, "coded", UINT64_MAX / 2);
      const auto pin_t0 = std::chrono::steady_clock::now();
      const uint32_t pinned_rows = pin_bytes > 0 ? coded.pin_rows(pin_bytes, c.pin_sample) : 0;
      const double pin_s = elapsed_s(pin_t0);
      if (pin_bytes > 0) {
        fmt::print("pool {:.0f}%: pinned {} rows ({:.1f} MB) in {:.1f} s\n", f * 100, pinned_rows,
                   coded.memory().pinned_rows / 1048576.0, pin_s);
      }
      std::vector<std::unique_ptr<index::CodedHnswSearchState>> st;
      for (uint32_t t = 0; t < max_threads; ++t) st.push_back(std::make_unique<index::CodedHnswSearchState>(coded));
      const size_t first = rows.size();
      std::atomic<bool> ok{true};
      auto searcher = [&](const index::CodedHnswSearchOptions& opt) {
        return [&, opt](const float* q, std::vector<Neighbor>* out, uint32_t t) {
          coded.search(q, opt, *st[t], out);
          for (const Neighbor& nb : *out) {
            if (nb.id >= n || dist(q, ds.base.row(nb.id), dim) != nb.distance) ok = false;
          }
        };
      };
      for (uint32_t rr : c.rerank) {
        for (uint32_t ef : c.coded_ef) {
          for (uint32_t ent : c.entries) {
            for (uint32_t w : c.prefetch_width) {
             for (uint32_t b : c.batched) {
              Row r;
              r.batched = b != 0;
              r.index = "coded";
              r.pool_fraction = f;
              r.ef = ef;
              r.rerank = rr;
              r.entries = ent;
              r.width = w;
              r.pool_bytes = pool->num_frames() * pool->page_size();
              r.resident_codes_bytes = coded.memory().codes + coded.memory().model;
              r.pin_share = share;
              r.pinned_bytes = coded.memory().pinned_rows;
              r.pinned_rows = pinned_rows;
              r.pin_s = pin_s;
              // The search adapts to what it finds resident (coded_hnsw.h: batched steps,
              // automatic entries), so recall is measured after a pass that leaves the pool
              // and the state as the timed rounds find them.
              recall_of(ds, c.k, &cursor, searcher(coded_options(c.k, r)));
              r.recall = recall_of(ds, c.k, &cursor, searcher(coded_options(c.k, r)));
              add_per_thread(r, c.threads, &rows);
             }
            }
          }
        }
      }
      for (uint32_t round = 0; round < c.rounds; ++round) {
        for (size_t i = first; i < rows.size(); ++i) {
          timed(*pool, ds, c.seconds, &cursor, rows[i], searcher(coded_options(c.k, rows[i])));
        }
      }
      if (!ok) {
        for (size_t i = first; i < rows.size(); ++i) rows[i].ok = false;
        status = 1;
      }
    }
  }
  const std::string load_after = loadavg();
  std::ofstream json;
  if (!c.json_path.empty()) json.open(c.json_path, std::ios::app);
  fmt::print("{:>6} {:>6} {:>5} {:>6} {:>5} {:>3} {:>3} {:>9} {:>9} {:>9} {:>7} {:>9} {:>8} {:>8} {:>8}\n", "index", "pool",
             "ef", "rerank", "entr", "wid", "thr", "pool MB", "codes MB", "pinned MB", "recall", "QPS", "reads/q", "p50 ms",
             "p99 ms");
  for (const Row& r : rows) {
    fmt::print("{:>6} {:>5.0f}% {:>5} {:>6} {:>5} {:>3} {:>3} {:>9.1f} {:>9.2f} {:>9.2f} {:>7.3f} {:>9.0f} {:>8.1f} {:>8.3f} {:>8.3f}{}\n",
               r.index, r.pool_fraction * 100, r.ef, r.rerank, r.entries, r.width, r.threads, r.pool_bytes / 1048576.0,
               r.resident_codes_bytes / 1048576.0, r.pinned_bytes / 1048576.0, r.recall, median(r.qps), median(r.reads_per_query),
               median(r.p50_ms), median(r.p99_ms), r.ok ? "" : "  CHECK FAILED");
    if (json.is_open()) {
      json << fmt::format(
          R"({{"bench":"vector-coded","index":"{}","dataset":"{}","n":{},"dim":{},"queries":{},"metric":"{}","M":{},"ef_construction":{},"bits":{},"pq_bytes":{},"alpha":{},"k":{},"ef":{},"rerank":{},"entries":{},"prefetch_width":{},"batched":{},"threads":{},"pool_fraction":{},"hnsw_bytes":{},"pool_bytes":{},"resident_codes_bytes":{},"pin_share":{},"pinned_bytes":{},"pinned_rows":{},"pin_s":{:.2f},"recall":{:.4f},"qps":{:.1f},"qps_rounds":[{:.1f}],"reads_per_query":{:.2f},"faults_per_query":{:.2f},"p50_ms":{:.4f},"p99_ms":{:.4f},"rounds":{},"seconds":{},"hnsw_build_s":{:.1f},"coded_build_s":{:.1f},"reused_build":{},"loadavg_before":{},"loadavg_after":{},"check":{},{}}})",
          r.index, ds.name, n, dim, ds.queries.rows, vector::metric_name(ds.metric), c.M, c.ef_construction, c.pq_bytes > 0 ? 0 : c.bits, c.pq_bytes, c.alpha,
          c.k, r.ef, r.rerank, r.entries, r.width, r.batched, r.threads, r.pool_fraction, hnsw_bytes, r.pool_bytes, r.resident_codes_bytes,
          r.pin_share, r.pinned_bytes, r.pinned_rows, r.pin_s, r.recall, median(r.qps), fmt::join(r.qps, ","), median(r.reads_per_query), median(r.faults_per_query), median(r.p50_ms),
          median(r.p99_ms), c.rounds, c.seconds, hnsw_build_s, coded_build_s, reused ? "true" : "false", load_before,
          load_after, r.ok ? "true" : "false", machine_json())
           << "\n";
    }
  }
  if (!c.reuse) fs::remove_all(c.dir);
  return status;
}

}  // namespace calico::bench
