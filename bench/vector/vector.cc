// calico_bench vector: see vector.h.
#include "vector/vector.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "calico/error.h"
#include "vector/data/dataset.h"
#include "vector/data/recall.h"
#include "common/disk_stats.h"
#include "calico/index/hnsw.h"
#include "calico/index/ivf.h"
#include "common/machine.h"
#include "micro/harness.h"
#include "calico/variants.h"
#include "vector/distance.h"

namespace calico::bench {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using vector::Neighbor;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

uint32_t default_nlist(uint64_t n) {
  return static_cast<uint32_t>(std::bit_floor(std::max<uint64_t>(16, static_cast<uint64_t>(4 * std::sqrt(double(n))))));
}

// The two index kinds behind one shape, so that building, opening and searching are written once.
struct HnswKind {
  static constexpr const char* kName = "hnsw";
  static size_t page_size(const VectorConfig& c) { return c.hnsw_page_size; }
  static constexpr const char* kParam = "ef";
  template <class Pool>
  using Index = index::BasicHnsw<Pool>;
  // A thread's search states: one per query it has in flight (--hnsw-batch).
  struct State : std::vector<index::HnswSearchState> {
    template <class Ix>
    explicit State(const Ix& ix) {
      emplace_back(ix);
    }
  };
  static uint64_t estimate_bytes(const VectorConfig& c, uint64_t n, uint32_t dim) {
    return n * (uint64_t{dim} * 4 + uint64_t{c.M} * 8 + 96);
  }
  static std::string params_tag(const VectorConfig& c, uint64_t) {
    return fmt::format("M{}-efc{}", c.M, c.ef_construction);
  }
  static std::string params_json(const VectorConfig& c, uint64_t) {
    return fmt::format(R"("M":{},"ef_construction":{})", c.M, c.ef_construction);
  }
  static const std::vector<uint32_t>& sweep(const VectorConfig& c) { return c.ef; }
  static std::vector<uint32_t> batches(const VectorConfig& c) { return c.hnsw_batch; }
  // Searches queries [q0, q0 + n): one at a time when n == 1, else n in flight at once
  // (search_batch), with one state per query in flight (made by the first, untimed, pass).
  template <class Ix, class Opts>
  static void search_block(const Ix& ix, const data::Dataset& ds, uint64_t q0, uint64_t n, const Opts& o, State& st,
                           std::vector<Neighbor>* out) {
    if (n == 1) {
      ix.search(ds.queries.row(q0), o, st.front(), out);
      return;
    }
    while (st.size() < n) st.emplace_back(ix);
    std::array<const float*, kMaxHnswBatch> qs;
    std::array<index::HnswSearchState*, kMaxHnswBatch> states;
    for (uint64_t i = 0; i < n; ++i) {
      qs[i] = ds.queries.row(q0 + i);
      states[i] = &st[i];
    }
    ix.search_batch(std::span<const float* const>(qs.data(), n), o,
                    std::span<index::HnswSearchState* const>(states.data(), n), std::span(out, n));
  }
  static std::vector<uint32_t> lookaheads(const VectorConfig& c) { return c.lookahead; }
  static index::HnswSearchOptions options(uint32_t k, uint32_t param, bool optimistic, bool prefetch,
                                          uint32_t lookahead) {
    index::HnswSearchOptions o;
    o.k = k;
    o.ef = param;
    o.optimistic = optimistic;
    o.prefetch = prefetch;
    o.lookahead = lookahead;
    return o;
  }
  // Adds every row, rows handed out to `threads` threads; prints progress every 5%.
  template <class Pool>
  static void build(Pool& pool, const VectorConfig& c, const data::Dataset& ds, vector::Metric metric) {
    index::HnswParams p;
    p.dim = ds.base.dim;
    p.metric = metric;
    p.M = c.M;
    p.ef_construction = c.ef_construction;
    p.seed = c.data_seed;
    const uint64_t n = ds.base.rows;
    auto h = Index<Pool>::create(pool, kName, p, static_cast<uint32_t>(n));
    std::atomic<uint64_t> next{0};
    const Clock::time_point t0 = Clock::now();
    auto work = [&](unsigned t) {
      uint64_t step = std::max<uint64_t>(1, n / 20);
      for (uint64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
        h.add(static_cast<uint32_t>(i), ds.base.row(i));
        if (t == 0 && i % step == 0 && i > 0) {
          double s = seconds_since(t0);
          fmt::print(stderr, "  hnsw build: {:>3.0f}% ({} of {} vectors, {:.0f}/s, ~{:.0f} s left)\n", 100.0 * i / n, i,
                     n, i / s, s * (n - i) / i);
        }
      }
    };
    std::vector<std::thread> workers;
    for (unsigned t = 1; t < c.build_threads; ++t) workers.emplace_back(work, t);
    work(0);
    for (std::thread& w : workers) w.join();
  }
};

struct IvfKind {
  static constexpr const char* kName = "ivf";
  static size_t page_size(const VectorConfig& c) { return c.ivf_page_size; }
  static constexpr const char* kParam = "nprobe";
  template <class Pool>
  using Index = index::BasicIvf<Pool>;
  using State = index::IvfSearchState;
  static uint32_t nlist(const VectorConfig& c, uint64_t n) { return c.nlist ? c.nlist : default_nlist(n); }
  static uint64_t estimate_bytes(const VectorConfig&, uint64_t n, uint32_t dim) {
    return n * (uint64_t{dim} * 4 + 4) * 5 / 4;
  }
  static std::string params_tag(const VectorConfig& c, uint64_t n) { return fmt::format("nlist{}", nlist(c, n)); }
  static std::string params_json(const VectorConfig& c, uint64_t n) {
    return fmt::format(R"("nlist":{})", nlist(c, n));
  }
  static const std::vector<uint32_t>& sweep(const VectorConfig& c) { return c.nprobe; }
  static std::vector<uint32_t> batches(const VectorConfig& c) { return {c.ivf_batch}; }
  // Searches queries [q0, q0 + n): one search_batch (the centroids ranked by one sgemm) when
  // n > 1, as faiss searches a batch.
  template <class Ix, class Opts>
  static void search_block(const Ix& ix, const data::Dataset& ds, uint64_t q0, uint64_t n, const Opts& o, State& st,
                           std::vector<Neighbor>* out) {
    if (n == 1) {
      ix.search(ds.queries.row(q0), o, st, out);
    } else {
      ix.search_batch(ds.queries.row(q0), n, o, st, out);
    }
  }
  static std::vector<uint32_t> lookaheads(const VectorConfig&) { return {0}; }
  static index::IvfSearchOptions options(uint32_t k, uint32_t param, bool optimistic, bool prefetch, uint32_t) {
    index::IvfSearchOptions o;
    o.k = k;
    o.nprobe = param;
    o.optimistic = optimistic;
    o.prefetch = prefetch;
    return o;
  }
  template <class Pool>
  static void build(Pool& pool, const VectorConfig& c, const data::Dataset& ds, vector::Metric metric) {
    index::IvfParams p;
    p.dim = ds.base.dim;
    p.metric = metric;
    p.nlist = nlist(c, ds.base.rows);
    p.seed = c.data_seed;
    int last = -1;
    Index<Pool>::build(pool, kName, p, ds.base.values.data(), ds.base.rows, [&](uint64_t done, uint64_t total) {
      int pct = total ? static_cast<int>(100 * done / total) : 100;
      if (pct / 5 != last / 5) {
        last = pct;
        fmt::print(stderr, "  ivf build: {}% ({} of {})\n", pct, done, total);
      }
    });
  }
};

// What built.json records about a built index.
struct BuiltIndex {
  std::string dir;
  uint64_t bytes = 0;   // index pages x page size, every space
  double build_s = 0;
  unsigned build_threads = 0;
};

uint64_t pool_file_bytes(const std::string& dir) {
  uint64_t total = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != "catalog" && e.path().filename() != "LOCK") {
      total += e.file_size();
    }
  }
  return total;
}

template <class Kind>
BuiltIndex ensure_built(const VectorConfig& c, const data::Dataset& ds, vector::Metric metric) {
  BuiltIndex b;
  b.dir = fmt::format("{}/{}-{}-{}{}", c.data_dir, Kind::kName, ds.name, Kind::params_tag(c, ds.base.rows),
                      Kind::page_size(c) == 4096 ? std::string() : fmt::format("-p{}", Kind::page_size(c)));
  const std::string marker = b.dir + "/built.json";
  if (!c.rebuild && fs::exists(marker)) {
    std::ifstream in(marker);
    std::string line;
    std::getline(in, line);
    char kind[16] = {};
    unsigned long long bytes = 0;
    if (std::sscanf(line.c_str(), R"({"index":"%15[a-z]","bytes":%llu,"build_s":%lf,"build_threads":%u})", kind,
                    &bytes, &b.build_s, &b.build_threads) == 4 &&
        std::string_view(kind) == Kind::kName && bytes > 0) {
      b.bytes = bytes;
      fmt::print("{}: reusing the index built in {:.1f} s ({} threads), {} MB, in {}\n", Kind::kName, b.build_s,
                 b.build_threads, b.bytes >> 20, b.dir);
      return b;
    }
  }
  prepare_bench_dir(b.dir, {"built.json"});
  using Pool = BufferPool;
  PoolOptions opt;
  opt.data_dir = b.dir;
  opt.page_size = Kind::page_size(c);
  const uint64_t estimate = Kind::estimate_bytes(c, ds.base.rows, ds.base.dim);
  opt.pool_bytes = estimate * 3 / 2 + (uint64_t{256} << 20);
  opt.max_blocks_per_space = micro::space_capacity(opt.pool_bytes / opt.page_size);
  fmt::print("{}: building on {} ({} x {}), {} threads, pool {} MB ...\n", Kind::kName, ds.name, ds.base.rows,
             ds.base.dim, c.build_threads, opt.pool_bytes >> 20);
  std::fflush(stdout);
  {
    std::unique_ptr<Pool> pool = Pool::open(opt);
    const Clock::time_point t0 = Clock::now();
    Kind::build(*pool, c, ds, metric);
    pool->flush();
    b.build_s = seconds_since(t0);
    if (pool->stats().evictions != 0) {
      fmt::print("note: the build pool evicted {} pages (the estimate was low); the index is complete\n",
                 pool->stats().evictions);
    }
  }
  b.bytes = pool_file_bytes(b.dir);
  b.build_threads = c.build_threads;
  std::ofstream(marker) << fmt::format(R"({{"index":"{}","bytes":{},"build_s":{:.1f},"build_threads":{}}})", Kind::kName,
                                       b.bytes, b.build_s, b.build_threads)
                        << "\n";
  fmt::print("{}: built in {:.1f} s, {} MB\n", Kind::kName, b.build_s, b.bytes >> 20);
  return b;
}

// A pool opened on a private copy of a built index (the pool locks its directory; every
// translation and pool size gets its own copy, removed with the pool).
template <class Kind, class Pool>
struct Target {
  std::string label;
  std::string dir;  // the pool's data directory (a copy of the built index)
  micro::ScratchPool<Pool> pool;
  std::optional<typename Kind::template Index<Pool>> index;  // destroyed before the pool
  double fraction = 0;
  uint64_t pool_bytes = 0;
};

// The copy was written through the page cache; the pool reads it with O_DIRECT, and every
// such read of a file with cached pages first searches them (for writeback). Start as a
// pool that wrote its own files would: nothing of them cached.
void drop_cached_pages(const std::string& dir) {
  for (const auto& f : fs::directory_iterator(dir)) {
    if (!f.is_regular_file()) continue;
    const int fd = ::open(f.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

template <class Kind, class Pool>
std::shared_ptr<Target<Kind, Pool>> open_target(const VectorConfig& c, const BuiltIndex& b, const std::string& label,
                                                double fraction, bool huge_pages) {
  auto t = std::make_shared<Target<Kind, Pool>>();
  t->label = label;
  t->fraction = fraction;
  PoolOptions opt;
  opt.data_dir = fmt::format("{}/run/{}-{}-{}", c.data_dir, Kind::kName, label, fraction == 0 ? "mem" : fmt::format("{:.0f}pct", fraction * 100));
  opt.huge_pages = huge_pages;
  opt.direct_io = true;
  opt.page_size = Kind::page_size(c);
  opt.pool_bytes = fraction == 0 ? b.bytes + b.bytes / 4 + (uint64_t{64} << 20)
                                 : std::max<uint64_t>(static_cast<uint64_t>(fraction * double(b.bytes)), uint64_t{4} << 20);
  opt.pool_bytes = (opt.pool_bytes + (uint64_t{2} << 20) - 1) / (uint64_t{2} << 20) * (uint64_t{2} << 20);
  opt.max_blocks_per_space = micro::space_capacity(b.bytes / opt.page_size + 1);
  t->pool_bytes = opt.pool_bytes;
  prepare_bench_dir(opt.data_dir);
  fs::copy(b.dir, opt.data_dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::remove(fs::path(opt.data_dir) / "built.json");
  drop_cached_pages(opt.data_dir);
  t->dir = opt.data_dir;
  t->pool = micro::ScratchPool<Pool>(Pool::open(opt).release(), micro::ScratchPoolDeleter<Pool>{opt.data_dir});
  if (fraction == 0 && c.prewarm) {
    for (const SpaceInfo& s : t->pool->spaces()) t->pool->prewarm(s.id);
  }
  t->index.emplace(Kind::template Index<Pool>::open(*t->pool, Kind::kName));
  return t;
}

// Per case: the results of every run (the first is the reference the others must equal),
// and each run's reads and wall time.
struct CaseRecord {
  std::string index, translation, workload;
  double fraction = 0;
  uint64_t pool_bytes = 0;
  unsigned threads = 1;
  uint32_t param = 0;
  uint32_t batch = 1;  // queries per search call (search_batch: IVF ranks them at once, HNSW has them in flight)
  uint32_t lookahead = index::HnswSearchOptions{}.lookahead;  // HNSW only
  bool optimistic = true, prefetch = true, huge_pages = true;
  std::vector<std::vector<Neighbor>> results, first;
  // Per pass over the query set (the first is the warm-up; a timed run repeats passes until
  // it lasted min_seconds, see timed_runs()): wall seconds, the pool's page reads, the
  // seconds its reads spent in flight, summed (PoolStats::read_inflight_ns), and the
  // process's CPU seconds (user + system).
  std::vector<double> seconds, reads, inflight_seconds, cpu_seconds;
  std::vector<double> faults;  // per pass: the reads that were faults (the thread waited for each)
  // Per pass, from the device's counters (disk_stats.h; empty when it has none): the reads
  // it completed and the seconds they spent in flight, summed (iostat's aqu-sz numerator).
  std::vector<double> disk_reads, disk_busy_seconds;
  // after the last run (PoolStats): the frame arena's bytes, and those on 2 MB huge pages
  // (smaps' AnonHugePages). With huge pages requested, a shortfall means the kernel had no
  // free huge pages (memory fragmented by what ran before), and TLB misses slow the run.
  // Both 0 for policies whose pages live in place (vmcache: its own mapping, not the arena).
  uint64_t frame_bytes = 0, frame_huge_bytes = 0;
  uint64_t mismatches = 0;
};

static_assert(index::HnswSearchOptions{}.lookahead == 2, "VectorConfig::lookahead's default is the index's");

// A flag for the table when huge pages were asked for and under 90% of the frames got them.
std::string huge_page_shortfall(const CaseRecord& rec) {
  if (!rec.huge_pages || rec.frame_bytes == 0 || rec.frame_huge_bytes * 10 >= rec.frame_bytes * 9) return "";
  return fmt::format("  FRAMES {:.0f}% ON HUGE PAGES", 100.0 * double(rec.frame_huge_bytes) / double(rec.frame_bytes));
}

// User + system CPU seconds of the whole process so far.
double process_cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return double(tv.tv_sec) + 1e-6 * double(tv.tv_usec); };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

// A case's run is one pass over every query, in order, so a query repeats only after every
// other query has run once since (the invariant timed_region.h states for vector-coded: larger
// than memory, give more queries than the pool holds the pages of).
template <class Kind, class Pool>
micro::Case search_case(std::shared_ptr<Target<Kind, Pool>> t, const data::Dataset& ds, uint32_t k, uint32_t param,
                        unsigned threads, bool optimistic, bool prefetch, std::shared_ptr<CaseRecord> rec,
                        uint32_t batch = 1) {
  rec->results.resize(ds.queries.rows);
  auto states = std::make_shared<std::vector<typename Kind::State>>();
  for (unsigned i = 0; i < threads; ++i) states->emplace_back(*t->index);
  const auto opts = Kind::options(k, param, optimistic, prefetch, rec->lookahead);
  micro::Case c;
  c.translation = rec->translation;
  c.workload = rec->workload;
  c.run = [t, &ds, states, opts, threads, rec, batch]() -> micro::RunOutcome {
    const uint64_t nq = ds.queries.rows;
    const PoolStats before = t->pool->stats();
    std::atomic<uint64_t> next{0};
    auto work = [&](unsigned w) {
      for (uint64_t q; (q = next.fetch_add(batch, std::memory_order_relaxed)) < nq;) {
        Kind::search_block(*t->index, ds, q, std::min<uint64_t>(batch, nq - q), opts, (*states)[w], &rec->results[q]);
      }
    };
    const auto disk0 = bench::disk_read_counters(t->dir);
    const double cpu0 = process_cpu_seconds();
    const Clock::time_point t0 = Clock::now();
    std::vector<std::thread> workers;
    for (unsigned w = 1; w < threads; ++w) workers.emplace_back(work, w);
    work(0);
    for (std::thread& w : workers) w.join();
    rec->seconds.push_back(seconds_since(t0));
    rec->cpu_seconds.push_back(process_cpu_seconds() - cpu0);
    const PoolStats after = t->pool->stats();
    if constexpr (!Pool::TranslationPolicy::kPagesInPlace) {  // vmcache's pages live in its own mapping
      rec->frame_bytes = after.frame_bytes;
      rec->frame_huge_bytes = after.frame_huge_page_bytes;
    }
    rec->reads.push_back(double(after.faults - before.faults) + double(after.prefetch_issued - before.prefetch_issued));
    rec->faults.push_back(double(after.faults - before.faults));
    rec->inflight_seconds.push_back(1e-9 * double(after.read_inflight_ns - before.read_inflight_ns));
    if (const auto disk1 = bench::disk_read_counters(t->dir); disk0 && disk1) {
      rec->disk_reads.push_back(double(disk1->reads - disk0->reads));
      rec->disk_busy_seconds.push_back(1e-3 * double(disk1->read_ms - disk0->read_ms));
    }
    micro::RunOutcome out{nq, 0, rec->seconds.back()};
    if (rec->first.empty()) {
      rec->first = rec->results;
    } else {
      for (uint64_t q = 0; q < nq; ++q) {
        if (rec->results[q] != rec->first[q]) ++out.failures;
      }
      rec->mismatches += out.failures;
    }
    return out;
  };
  return c;
}

std::string fraction_label(double f) { return f == 0 ? "mem" : fmt::format("{:.0f}%", f * 100); }

void report(const std::vector<micro::Result>& results, const std::vector<std::shared_ptr<CaseRecord>>& recs,
            const data::Dataset& ds, const VectorConfig& c, const std::string& extra_json,
            const std::vector<BuiltIndex>& built, const std::vector<std::string>& index_names) {
  fmt::print("\n{:<6} {:<18} {:>5} {:>3} {:>7} {:>9} {:>11} {:>9} {:>9} {:>10} {:>9} {:>6} {:>6} {:>6}\n", "index", "translation",
             "pool", "thr", "param", "recall@" + std::to_string(c.k), "QPS", "ms/query", "vs array", "reads/q", "IOPS",
             "depth", "disk q", "cores");
  std::ofstream json;
  if (!c.json_path.empty()) json.open(c.json_path, std::ios::app);
  for (size_t i = 0; i < results.size(); ++i) {
    const micro::Result& r = results[i];
    const CaseRecord& rec = *recs[i];
    const double recall = data::recall_at_k(rec.first, ds.ground_truth, c.k);
    const double qps = 1e9 / r.median_ns;
    const auto runs = timed_runs(rec.seconds, c.repeat, c.min_seconds);
    const std::vector<double> queries(rec.seconds.size(), double(ds.queries.rows));
    const double reads = run_median(rec.reads, queries, runs);
    const double faults = run_median(rec.faults, queries, runs);
    const double iops = run_median(rec.reads, rec.seconds, runs);
    const double depth = run_median(rec.inflight_seconds, rec.seconds, runs);
    const double cores = run_median(rec.cpu_seconds, rec.seconds, runs);
    const bool disk = !rec.disk_reads.empty();
    const double disk_depth = disk ? run_median(rec.disk_busy_seconds, rec.seconds, runs) : 0;
    const double disk_iops = disk ? run_median(rec.disk_reads, rec.seconds, runs) : 0;
    std::string vs_array = "";
    for (size_t j = 0; j < results.size(); ++j) {
      const CaseRecord& o = *recs[j];
      if (o.translation == "array" && o.index == rec.index && o.workload == rec.workload && o.huge_pages && o.optimistic == rec.optimistic && o.prefetch == rec.prefetch) {
        vs_array = fmt::format("{:.2f}x", micro::paired_speedup(results[j], r));
      }
    }
    fmt::print("{:<6} {:<18} {:>5} {:>3} {:>7} {:>9.4f} {:>11.0f} {:>9.3f} {:>9} {:>10.1f} {:>9.0f} {:>6.1f} {:>6} {:>6.2f}{}{}\n",
               rec.index, rec.translation, fraction_label(rec.fraction), rec.threads, rec.param, recall, qps,
               1e3 * rec.threads / qps, vs_array, reads, iops, depth, disk ? fmt::format("{:.1f}", disk_depth) : "n/a",
               cores, rec.mismatches ? "  RESULTS DIFFER" : "", huge_page_shortfall(rec));
    if (json.is_open()) {
      std::string qps_runs;
      for (double ns : r.ns_per_op) qps_runs += (qps_runs.empty() ? "" : ",") + fmt::format("{:.1f}", 1e9 / ns);
      const size_t bi = std::find(index_names.begin(), index_names.end(), rec.index) - index_names.begin();
      json << fmt::format(
          R"({{"experiment":"vector","system":"calico","index":"{}","translation":"{}","pool_fraction":{},"pool_bytes":{},)"
          R"("threads":{},"{}":{},"batch":{},"lookahead":{},"k":{},"page_size":{},"optimistic":{},"prefetch":{},"huge_pages":{},"prewarm":{},"recall":{:.5f},"qps":{:.1f},)"
          R"("qps_runs":[{}],"reads_per_query":{:.2f},"faults_per_query":{:.2f},"iops":{:.0f},"read_depth":{:.2f},"disk_depth":{},"disk_iops":{},"cpu_cores":{:.2f},"result_mismatches":{},"frame_bytes":{},"frame_huge_page_bytes":{},)"
          R"("build_s":{:.1f},"build_threads":{},"index_bytes":{},"dataset":"{}","n":{},"dim":{},"queries":{},{}"machine":{{{}}}}})",
          rec.index, rec.translation, rec.fraction, rec.pool_bytes, rec.threads, rec.index == "hnsw" ? "ef" : "nprobe",
          rec.param, rec.batch, rec.index == "hnsw" ? rec.lookahead : 0, c.k, rec.index == "hnsw" ? c.hnsw_page_size : c.ivf_page_size, rec.optimistic, rec.prefetch, rec.huge_pages, rec.fraction == 0 && c.prewarm, recall, qps, qps_runs, reads, faults, iops,
          depth, disk ? fmt::format("{:.2f}", disk_depth) : "null", disk ? fmt::format("{:.0f}", disk_iops) : "null",
          cores, rec.mismatches, rec.frame_bytes, rec.frame_huge_bytes, bi < built.size() ? built[bi].build_s : 0.0, bi < built.size() ? built[bi].build_threads : 0,
          bi < built.size() ? built[bi].bytes : 0, ds.name, ds.base.rows, ds.base.dim, ds.queries.rows, extra_json,
          machine_json())
           << "\n";
    }
  }
  std::fflush(stdout);
}

// The sweep of one index kind on every requested translation and pool size.
template <class Kind>
void add_sweep(const VectorConfig& c, const data::Dataset& ds, const BuiltIndex& b,
               std::vector<micro::Case>& cases, std::vector<std::shared_ptr<CaseRecord>>& recs, unsigned& skipped) {
  for (double f : c.pool_fractions) {
    for (const std::string& name : c.translations) {
      if (f != 0 && (name == "direct" || name == "vmcache_2m")) {
        fmt::print("note: {} is in-memory only (direct cannot evict; vmcache_2m splits huge pages on eviction); "
                   "skipped at pool {}\n", name, fraction_label(f));
        continue;
      }
      micro::Common common;
      common.json_path = c.json_path;
      skipped += !micro::load_or_skip("vector", name, common, [&] {
        variants::with_pool_type(name, [&]<class Pool>() {
          auto t = open_target<Kind, Pool>(c, b, name, f, true);
          for (unsigned th : c.threads) {
            for (uint32_t p : Kind::sweep(c)) {
             for (uint32_t la : Kind::lookaheads(c)) {
             for (uint32_t bt : Kind::batches(c)) {
              auto rec = std::make_shared<CaseRecord>();
              rec->lookahead = la;
              rec->index = Kind::kName;
              rec->translation = name;
              rec->fraction = f;
              rec->pool_bytes = t->pool_bytes;
              rec->threads = th;
              rec->param = p;
              rec->batch = bt;
              rec->optimistic = c.optimistic;
              rec->prefetch = c.prefetch;
              rec->workload = fmt::format("{} {}={} t={} pool={}{}{}", Kind::kName, Kind::kParam, p, th, fraction_label(f),
                                          Kind::lookaheads(c).size() > 1 ? fmt::format(" ahead={}", la) : "",
                                          Kind::batches(c).size() > 1 ? fmt::format(" batch={}", bt) : "");
              cases.push_back(search_case(t, ds, c.k, p, th, c.optimistic, c.prefetch, rec, bt));
              recs.push_back(rec);
             }
             }
            }
          }
        });
      });
    }
  }
}

// Figure 11 on HNSW, in memory, 1 thread: each step adds one of Calico's techniques.
void run_ablation(const VectorConfig& c, const data::Dataset& ds, const BuiltIndex& b, std::vector<micro::Case>& cases,
                  std::vector<std::shared_ptr<CaseRecord>>& recs) {
  struct Step {
    const char* label;
    const char* translation;
    bool huge, optimistic, prefetch;
  };
  const Step steps[] = {{"hash_open", "hash_open", false, false, false},
                        {"array 4 KB frames", "array", false, false, false},
                        {"+ huge pages", "array", true, false, false},
                        {"+ optimistic reads", "array", true, true, false},
                        {"+ group prefetch", "array", true, true, true}};
  auto hash = open_target<HnswKind, BasicBufferPool<translation::HashOpenTranslation>>(c, b, "ablation-hash_open", 0, false);
  auto small = open_target<HnswKind, BufferPool>(c, b, "ablation-array-4k", 0, false);
  auto huge = open_target<HnswKind, BufferPool>(c, b, "ablation-array-2m", 0, true);
  for (const Step& s : steps) {
    auto rec = std::make_shared<CaseRecord>();
    rec->index = "hnsw";
    rec->translation = s.label;
    rec->threads = 1;
    rec->param = c.ablation_ef;
    rec->optimistic = s.optimistic;
    rec->prefetch = s.prefetch;
    rec->huge_pages = s.huge;
    rec->workload = "ablation";
    if (std::string(s.translation) == "hash_open") {
      rec->pool_bytes = hash->pool_bytes;
      cases.push_back(search_case(hash, ds, c.k, c.ablation_ef, 1, s.optimistic, s.prefetch, rec));
    } else {
      auto t = s.huge ? huge : small;
      rec->pool_bytes = t->pool_bytes;
      cases.push_back(search_case(t, ds, c.k, c.ablation_ef, 1, s.optimistic, s.prefetch, rec));
    }
    recs.push_back(rec);
  }
}

}  // namespace

std::vector<std::pair<size_t, size_t>> timed_runs(const std::vector<double>& seconds, unsigned repeat,
                                                  double min_seconds) {
  std::vector<std::pair<size_t, size_t>> runs;
  size_t i = 1;
  for (unsigned r = 0; r < repeat && i < seconds.size(); ++r) {
    const size_t begin = i;
    double s = 0;
    do {
      s += seconds[i++];
    } while (s < min_seconds && i < seconds.size());
    runs.emplace_back(begin, i);
  }
  return runs;
}

double run_median(const std::vector<double>& amount, const std::vector<double>& per,
                  const std::vector<std::pair<size_t, size_t>>& runs) {
  std::vector<double> v;
  for (const auto& [begin, end] : runs) {
    double a = 0, p = 0;
    for (size_t i = begin; i < end && i < amount.size(); ++i) a += amount[i], p += per[i];
    if (p > 0) v.push_back(a / p);
  }
  return v.empty() ? 0 : micro::median(v);
}

int run_vector(const VectorConfig& c) {
  if (c.k == 0) throw Error(ErrorCode::kInvalidArgument, "--k must be at least 1");
  for (double f : c.pool_fractions) {
    if (!(f == 0 || (f > 0 && f < 1))) {
      throw Error(ErrorCode::kInvalidArgument, fmt::format("--pool-fraction {} : use 0 (in memory) or a value in (0, 1)", f));
    }
  }
  for (const std::string& i : c.indexes) {
    if (i != "hnsw" && i != "ivf") throw Error(ErrorCode::kInvalidArgument, "unknown index '" + i + "' (known: hnsw, ivf)");
  }
  const vector::Metric metric = vector::parse_metric(c.metric);
  VectorConfig cfg = c;
  cfg.translations = micro::select_translations(c.translations, true, "vector");

  data::DatasetSpec spec;
  if (c.dataset == "clustered" || c.dataset == "embedding") {
    spec.kind = c.dataset;
    spec.n = c.n;
    spec.dim = c.dim;
    spec.clusters = c.clusters;
    spec.queries = c.queries;
    spec.seed = c.data_seed;
  } else if (c.dataset == "files") {
    spec.kind = "files";
    spec.base_path = c.base_path;
    spec.query_path = c.query_path;
    spec.ground_truth_path = c.gt_path;
  } else {
    throw Error(ErrorCode::kInvalidArgument, "unknown dataset '" + c.dataset + "' (known: clustered, embedding, files)");
  }
  spec.metric = metric;
  micro::print_banner("vector search on the pool (Calico paper, 3.3, 5.1, 6.2, 6.6)",
                      fmt::format("dataset {}; indexes {}; translations {}; pool {}; threads {}; k {}; {} repeats; "
                                  "ivf batch {}; prewarm {}; simd {}",
                                  c.dataset != "files" ? fmt::format("{} n={} dim={} clusters={} metric={}", c.dataset, c.n, c.dim, c.clusters, c.metric) : c.base_path,
                                  fmt::join(c.indexes, ","), fmt::join(cfg.translations, ","),
                                  fmt::join(c.pool_fractions, ","), fmt::join(c.threads, ","), c.k, c.repeat,
                                  c.ivf_batch, c.prewarm ? "on" : "off", vector::simd_level()));
  const Clock::time_point t0 = Clock::now();
  const data::Dataset ds = data::load_or_generate(spec, c.cache_dir);
  fmt::print("dataset {}: {} x {} base, {} queries, ground truth top-{} ({:.1f} s)\n", ds.name, ds.base.rows,
             ds.base.dim, ds.queries.rows, ds.ground_truth.dim, seconds_since(t0));
  if (ds.ground_truth.dim < c.k) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--k {} exceeds the ground truth's {} ids per query", c.k, ds.ground_truth.dim));
  }

  std::vector<BuiltIndex> built;
  for (const std::string& i : c.indexes) {
    built.push_back(i == "hnsw" ? ensure_built<HnswKind>(cfg, ds, metric) : ensure_built<IvfKind>(cfg, ds, metric));
  }
  if (c.build_only) return 0;

  uint64_t resident = 0;
  for (const BuiltIndex& b : built) {
    for (double f : c.pool_fractions) resident += (f == 0 ? b.bytes * 5 / 4 : uint64_t(f * double(b.bytes))) * cfg.translations.size();
  }
  micro::check_memory_budget(resident, "vector");

  std::vector<micro::Case> cases;
  std::vector<std::shared_ptr<CaseRecord>> recs;
  unsigned skipped = 0;
  for (size_t i = 0; i < c.indexes.size(); ++i) {
    if (c.indexes[i] == "hnsw") add_sweep<HnswKind>(cfg, ds, built[i], cases, recs, skipped);
    else add_sweep<IvfKind>(cfg, ds, built[i], cases, recs, skipped);
  }
  micro::Common common;
  common.repeat = c.repeat;
  common.min_seconds = c.min_seconds;
  common.counters = false;
  uint64_t failures = 0;
  if (!cases.empty()) {
    std::vector<micro::Result> results = micro::measure(cases, common);
    report(results, recs, ds, c, "", built, c.indexes);
    for (const micro::Result& r : results) failures += r.failures;
  }
  if (c.ablation) {
    const auto it = std::find(c.indexes.begin(), c.indexes.end(), "hnsw");
    if (it == c.indexes.end()) throw Error(ErrorCode::kInvalidArgument, "--ablation needs --index hnsw");
    std::vector<micro::Case> acases;
    std::vector<std::shared_ptr<CaseRecord>> arecs;
    run_ablation(cfg, ds, built[it - c.indexes.begin()], acases, arecs);
    std::vector<micro::Result> ar = micro::measure(acases, common);
    fmt::print("\nFigure 11: ablation on HNSW (ef {}, 1 thread, in memory)\n", c.ablation_ef);
    for (size_t i = 0; i < ar.size(); ++i) {
      fmt::print("  {:<22}{:>10.1f} us/query  recall {:.4f}{}\n", arecs[i]->translation, ar[i].median_ns / 1e3,
                 data::recall_at_k(arecs[i]->first, ds.ground_truth, c.k),
                 i == 0 ? std::string() : fmt::format("  {:.2f}x over the previous step", micro::paired_speedup(ar[i - 1], ar[i])));
      failures += ar[i].failures;
    }
    fmt::print("  in all: {:.2f}x\n", micro::paired_speedup(ar.front(), ar.back()));
    report(ar, arecs, ds, c, R"("ablation":true,)", built, c.indexes);
  }
  return failures == 0 && skipped == 0 ? 0 : 1;
}

}  // namespace calico::bench
