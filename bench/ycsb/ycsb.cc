// ycsb: see ycsb.h. Principal pieces, in order: key choosers (uniform, scrambled Zipf,
// latest), YcsbDatabase::load / run / verify, and run_ycsb (the subcommand: configuration,
// the repeat x system x workload x threads loop, summary table, JSON lines).
#include "ycsb/ycsb.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "common/data_dir.h"
#include "common/sizes.h"
#include "common/machine.h"
#include "common/zipf.h"

namespace calico::bench {

using Clock = std::chrono::steady_clock;

WorkloadMix workload_mix(char letter) {
  switch (letter) {
    case 'A': return {.read = 0.5, .update = 0.5};
    case 'B': return {.read = 0.95, .update = 0.05};
    case 'C': return {.read = 1.0};
    case 'D': return {.read = 0.95, .insert = 0.05};
    case 'E': return {.insert = 0.05, .scan = 0.95};
    case 'F': return {.read = 0.5, .rmw = 0.5};
    default: throw std::invalid_argument(fmt::format("unknown YCSB workload '{}' (A..F)", letter));
  }
}

std::string default_distribution(char letter) { return letter == 'D' ? "latest" : "zipf"; }

namespace {

constexpr uint64_t kLatencySampleEvery = 16;  // sample one operation in 16 (steady_clock x2)
constexpr uint64_t kMaxScanLength = 100;      // YCSB E: scan lengths uniform in 1..100

}  // namespace

// State shared by the threads of runs on one database.
struct YcsbDatabase::Shared {
  std::atomic<uint64_t> next_key{0};  // the next key an insert claims
};

YcsbDatabase::YcsbDatabase(const std::string& system, const kv::KvConfig& config, uint64_t records)
    : store_(kv::open_kv(system, config)), config_(config), records_(records),
      shared_(std::make_unique<Shared>()) {
  if (records == 0) throw std::invalid_argument("records must be > 0");
}

YcsbDatabase::~YcsbDatabase() = default;

uint64_t YcsbDatabase::next_key() const { return shared_->next_key.load(); }

double YcsbDatabase::load(bool progress) {
  const bool tty = isatty(STDERR_FILENO);
  const std::string name = store_->name();
  uint64_t next_report = records_ / 10;
  auto start = Clock::now();
  auto report = [&](uint64_t done) {
    if (!progress || done < next_report) return;
    while (next_report <= done) next_report += std::max<uint64_t>(1, records_ / 10);
    double pct = 100.0 * static_cast<double>(std::min(done, records_)) / static_cast<double>(records_);
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    std::fprintf(stderr, tty ? "\r%s load: %3.0f%% (%llu records, %.1f s)" : "%s load: %3.0f%% (%llu records, %.1f s)\n",
                 name.c_str(), pct, static_cast<unsigned long long>(done), s);
  };
  store_->load(
      records_,
      [&](uint64_t i, std::string* key, std::string* value) {
        char k[kv::kKeyBytes];
        kv::encode_key(i, k);
        key->assign(k, kv::kKeyBytes);
        kv::make_value(i, 0, config_.value_bytes, value);
      },
      report);
  double s = std::chrono::duration<double>(Clock::now() - start).count();
  if (progress && tty) std::fprintf(stderr, "\n");
  shared_->next_key.store(records_);
  return s;
}

namespace {

struct alignas(64) ThreadCounters {
  std::atomic<uint64_t> ops{0};
};

struct ThreadResult {
  RunResult r;
  Clock::time_point end;  // when this worker stopped (the run ends at the latest one)
  std::vector<uint32_t> latencies_ns;  // sampled; saturates at ~4.3 s
};

double percentile_us(std::vector<uint32_t>& v, double q) {
  if (v.empty()) return 0;
  size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(i), v.end());
  return v[i] / 1000.0;
}

// Waits for the workers of a run that started at `start`: until they all finished, or (a
// timed run) until the deadline, when it sets `stop`; prints the ops per second of each
// second when the spec asks.
void watch_run(const RunSpec& spec, Clock::time_point start, const std::vector<ThreadCounters>& counters,
               std::atomic<bool>& stop, const std::atomic<unsigned>& finished) {
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.seconds));
  uint64_t last_ops = 0;
  auto last_time = start;
  for (int second = 1; finished.load() < spec.threads; ++second) {
    auto wake = start + std::chrono::seconds(second);
    // Wait for the next second, the deadline or the end of the workers (polling 10 ms).
    while (Clock::now() < wake && finished.load() < spec.threads &&
           (spec.ops != 0 || Clock::now() < deadline)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (spec.ops == 0 && Clock::now() >= deadline) stop.store(true);
    if (stop.load() || finished.load() == spec.threads) break;
    uint64_t now_ops = 0;
    for (auto& c : counters) now_ops += c.ops.load(std::memory_order_relaxed);
    auto now = Clock::now();
    if (spec.print_each_second) {
      fmt::print("  {} {:>3}s {:>12.0f} ops/s\n", spec.label, second,
                 static_cast<double>(now_ops - last_ops) / std::chrono::duration<double>(now - last_time).count());
      std::fflush(stdout);
    }
    last_ops = now_ops;
    last_time = now;
  }
}

// The run's totals: the workers' counts summed, the latency percentiles over every
// thread's samples, and the run's time from `start` to the last worker's end.
RunResult sum_thread_results(std::vector<ThreadResult>& results, Clock::time_point start) {
  Clock::time_point end = start;
  for (const ThreadResult& tr : results) end = std::max(end, tr.end);
  double seconds = std::chrono::duration<double>(end - start).count();

  RunResult total;
  std::vector<uint32_t> lat;
  for (ThreadResult& tr : results) {
    const RunResult& r = tr.r;
    total.ops += r.ops, total.reads += r.reads, total.updates += r.updates, total.inserts += r.inserts;
    total.scans += r.scans, total.rmws += r.rmws, total.scan_rows += r.scan_rows;
    total.missing_loaded += r.missing_loaded, total.bad_values += r.bad_values;
    total.missing_inflight += r.missing_inflight;
    lat.insert(lat.end(), tr.latencies_ns.begin(), tr.latencies_ns.end());
  }
  total.seconds = seconds;
  total.ops_per_s = static_cast<double>(total.ops) / seconds;
  total.p50_us = percentile_us(lat, 0.50);
  total.p99_us = percentile_us(lat, 0.99);
  return total;
}

// The cache counters' change over a run (engines that have them: calico's pool).
void add_cache_delta(const kv::CacheCounters& b, const kv::CacheCounters& after, RunResult* total) {
  total->has_hit_rate = true;
  total->hits = after.hits - b.hits;
  total->accesses = after.accesses - b.accesses;
  total->cache = kv::CacheCounters{total->hits,
                                   total->accesses,
                                   after.far_hits - b.far_hits,
                                   after.promotions - b.promotions,
                                   after.demotions - b.demotions,
                                   after.far_evictions - b.far_evictions,
                                   after.migration_bytes - b.migration_bytes,
                                   after.migration_wait_ns - b.migration_wait_ns,
                                   after.migration_ns - b.migration_ns,
                                   after.migration_fault_ns - b.migration_fault_ns,
                                   after.migration_copy_ns - b.migration_copy_ns,
                                   after.migration_discard_ns - b.migration_discard_ns};
}

}  // namespace

namespace {

// One worker thread of a run: draws operations from the workload's mix and keys from its
// distribution, checks what it reads (a found value encodes its key; a loaded key is found)
// and counts into its ThreadResult. Operations per YCSB: read, update, insert (the next key),
// scan (1..kMaxScanLength rows from a chosen key), read-modify-write.
class YcsbWorker {
 public:
  YcsbWorker(const RunSpec& spec, const WorkloadMix& mix, const ZipfGenerator& zipf, uint64_t records,
             size_t value_bytes, std::atomic<uint64_t>& next_key, kv::KvHandle& handle, unsigned t,
             ThreadResult& res)
      : mix_(mix),
        dist_(spec.distribution == "uniform" ? kUniform : spec.distribution == "zipf" ? kZipf : kLatest),
        records_(records),
        value_bytes_(value_bytes),
        next_key_(next_key),
        h_(handle),
        rng_(spec.seed * 0x9E3779B97F4A7C15ull + t * 7919 + 1),
        uniform_(0, records - 1),
        scan_len_(1, kMaxScanLength),
        zipf_(zipf),
        res_(res),
        r_(res.r) {
    res_.latencies_ns.reserve(1 << 16);
  }

  // Runs up to my_ops operations (or until stop), publishing the count done in *done.
  void run(uint64_t my_ops, const std::atomic<bool>& stop, std::atomic<uint64_t>* done) {
    uint64_t i = 0;
    for (; i < my_ops; ++i) {
      if ((i & 63) == 0 && stop.load(std::memory_order_relaxed)) break;
      const bool sample = i % kLatencySampleEvery == 0;
      Clock::time_point t0;
      if (sample) t0 = Clock::now();
      one_operation();
      if (sample) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
        res_.latencies_ns.push_back(static_cast<uint32_t>(std::min<int64_t>(ns, UINT32_MAX)));
      }
      done->store(i + 1, std::memory_order_relaxed);
    }
    r_.ops = i;
    res_.end = Clock::now();
  }

 private:
  enum Distribution { kUniform, kZipf, kLatest };

  void one_operation() {
    double c = coin_(rng_);
    if ((c -= mix_.read) < 0) {
      read();
    } else if ((c -= mix_.update) < 0) {
      update();
    } else if ((c -= mix_.insert) < 0) {
      insert();
    } else if ((c -= mix_.scan) < 0) {
      scan();
    } else {
      read_modify_write();
    }
  }

  uint64_t choose() {
    switch (dist_) {
      case kUniform: return uniform_(rng_);
      case kZipf: return fnv1a64(zipf_.next(rng_)) % records_;
      default: {
        uint64_t newest = next_key_.load(std::memory_order_relaxed) - 1;
        uint64_t rank = zipf_.next(rng_);
        return rank > newest ? 0 : newest - rank;
      }
    }
  }
  std::string_view key_of(uint64_t k) {
    kv::encode_key(k, key_);
    return std::string_view(key_, kv::kKeyBytes);
  }
  // A read's outcome: found values must encode their key; a loaded key must be found.
  void judge(bool found, uint64_t k, std::string_view v) {
    if (!found) {
      (k < records_ ? r_.missing_loaded : r_.missing_inflight)++;
    } else if (!kv::check_value(v, k, value_bytes_)) {
      ++r_.bad_values;
    }
  }

  void read() {
    uint64_t k = choose();
    bool found = h_.read(key_of(k), &buf_);
    judge(found, k, buf_);
    ++r_.reads;
  }
  void update() {
    uint64_t k = choose();
    std::string_view key = key_of(k);
    kv::make_value(k, rng_(), value_bytes_, &value_);
    h_.update(key, value_);
    ++r_.updates;
  }
  void insert() {
    uint64_t k = next_key_.fetch_add(1);
    std::string_view key = key_of(k);
    kv::make_value(k, 0, value_bytes_, &value_);
    h_.insert(key, value_);
    ++r_.inserts;
  }
  void scan() {
    uint64_t k = choose();
    uint64_t len = scan_len_(rng_);
    std::string_view key = key_of(k);
    uint64_t expect = k;  // keys below next_key are dense, so a scan sees k, k+1, ...
    uint64_t rows = h_.scan(key, len, [&](std::string_view rk, std::string_view rv) {
      uint64_t got = kv::decode_key(rk);
      if (rk.size() != kv::kKeyBytes || got < expect) {
        ++r_.bad_values;
      } else {
        // Keys skipped below `records` are lost loaded keys.
        for (uint64_t m = expect; m < got; ++m) judge(false, m, {});
        judge(true, got, rv);
      }
      expect = got + 1;
    });
    if (rows == 0) judge(false, k, {});
    r_.scan_rows += rows;
    ++r_.scans;
  }
  void read_modify_write() {
    uint64_t k = choose();
    std::string_view key = key_of(k);
    uint64_t version = rng_();
    bool found = h_.read_modify_write(key, [&](std::string* v) {
      judge(true, k, *v);
      if (v->size() >= kv::kMinValueBytes) std::memcpy(v->data() + 8, &version, 8);
    });
    if (!found) judge(false, k, {});
    ++r_.rmws;
  }

  const WorkloadMix mix_;
  const Distribution dist_;
  const uint64_t records_;
  const size_t value_bytes_;
  std::atomic<uint64_t>& next_key_;
  kv::KvHandle& h_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> coin_{0.0, 1.0};
  std::uniform_int_distribution<uint64_t> uniform_;
  std::uniform_int_distribution<uint64_t> scan_len_;
  ZipfGenerator zipf_;
  ThreadResult& res_;
  RunResult& r_;
  std::string buf_, value_;
  char key_[kv::kKeyBytes];
};

}  // namespace

RunResult YcsbDatabase::run(const RunSpec& spec) {
  const WorkloadMix mix = workload_mix(spec.workload);
  if (spec.threads == 0) throw std::invalid_argument("threads must be > 0");
  if (spec.distribution != "uniform" && spec.distribution != "zipf" && spec.distribution != "latest") {
    throw std::invalid_argument("distribution must be uniform, zipf or latest");
  }
  const ZipfGenerator zipf_proto(std::max<uint64_t>(records_, 2), spec.theta);

  std::optional<kv::CacheCounters> cache_before = store_->cache_counters();
  std::vector<ThreadCounters> counters(spec.threads);
  std::vector<ThreadResult> results(spec.threads);
  std::atomic<bool> go{false}, stop{false};
  std::atomic<unsigned> finished{0};
  std::mutex error_mutex;
  std::exception_ptr error;

  auto worker = [&](unsigned t) {
    try {
      std::unique_ptr<kv::KvHandle> h = store_->handle();
      YcsbWorker w(spec, mix, zipf_proto, records_, config_.value_bytes, shared_->next_key, *h, t, results[t]);
      const uint64_t my_ops = spec.ops == 0 ? ~uint64_t{0}
                                            : spec.ops / spec.threads + (t < spec.ops % spec.threads ? 1 : 0);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      w.run(my_ops, stop, &counters[t].ops);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      stop.store(true);
    }
    finished.fetch_add(1);
  };

  std::vector<std::thread> threads;
  for (unsigned t = 0; t < spec.threads; ++t) threads.emplace_back(worker, t);
  auto start = Clock::now();
  go.store(true, std::memory_order_release);
  watch_run(spec, start, counters, stop, finished);
  for (auto& th : threads) th.join();
  if (error) std::rethrow_exception(error);
  RunResult total = sum_thread_results(results, start);
  if (cache_before) add_cache_delta(*cache_before, *store_->cache_counters(), &total);
  return total;
}

uint64_t YcsbDatabase::verify(unsigned threads) {
  const uint64_t n = next_key();
  std::atomic<uint64_t> failures{0};
  std::vector<std::thread> ts;
  threads = std::max(1u, threads);
  for (unsigned t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::unique_ptr<kv::KvHandle> h = store_->handle();
      std::string v;
      char key[kv::kKeyBytes];
      uint64_t bad = 0;
      for (uint64_t k = t; k < n; k += threads) {
        kv::encode_key(k, key);
        if (!h->read(std::string_view(key, kv::kKeyBytes), &v) || !kv::check_value(v, k, config_.value_bytes)) ++bad;
      }
      failures.fetch_add(bad);
    });
  }
  for (auto& t : ts) t.join();
  return failures.load();
}

// ------------------------------------------------------------------------------------------
// The subcommand.

namespace {

// The far tier's traffic during a run (docs/results/tiers.md), null for engines without cache counters:
// hits per tier (fast = hits - far hits, of which disk reads are the rest of the accesses),
// migrations per second, the time spent migrating (and waiting for the far tier's bandwidth),
// and that time per page moved, with batched migration's parts (vmcache_n: backing the
// destination, copying, discarding the source; 0 for the others).
std::string tiers_json(const RunResult& r) {
  if (!r.has_hit_rate) return "null";
  const kv::CacheCounters& c = r.cache;
  const double s = r.seconds > 0 ? r.seconds : 1;
  const uint64_t moved = c.promotions + c.demotions;
  auto per_page = [moved](uint64_t ns) { return moved > 0 ? double(ns) / double(moved) : 0.0; };
  return fmt::format(
      R"({{"far_hits":{},"fast_hits":{},"promotions":{},"demotions":{},"far_evictions":{},"migration_bytes":{},)"
      R"("migrations_per_s":{:.0f},"migration_wait_s":{:.6f},"migration_s":{:.6f},"ns_per_page_moved":{:.0f},)"
      R"("ns_per_page_fault":{:.0f},"ns_per_page_copy":{:.0f},"ns_per_page_discard":{:.0f}}})",
      c.far_hits, c.hits >= c.far_hits ? c.hits - c.far_hits : 0, c.promotions, c.demotions, c.far_evictions,
      c.migration_bytes, double(c.promotions + c.demotions) / s, c.migration_wait_ns / 1e9, c.migration_ns / 1e9,
      per_page(c.migration_ns), per_page(c.migration_fault_ns), per_page(c.migration_copy_ns),
      per_page(c.migration_discard_ns));
}

// A directory for one engine's data: <data_dir>/<system>, a bench directory (data_dir.h)
// holding the engine's files in db/; refuses anything the bench did not create.
std::string prepare_engine_dir(const std::string& data_dir, const std::string& system) {
  const std::filesystem::path dir = std::filesystem::path(data_dir) / system;
  prepare_bench_dir(dir.string(), {"db"});
  std::filesystem::create_directories(dir / "db");
  return (dir / "db").string();
}

struct Row {
  std::string system;
  char workload;
  unsigned threads;
  std::string distribution;
  std::vector<RunResult> runs;
};

template <class F>
double median_of(const std::vector<RunResult>& runs, F f) {
  std::vector<double> v;
  for (const RunResult& r : runs) v.push_back(f(r));
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// What the options come to: the workloads (validated letters), the data and cache sizes.
struct YcsbPlan {
  std::vector<char> workloads;
  uint64_t data_bytes = 0;
  uint64_t cache_bytes = 0;
  bool in_memory = false;
  unsigned max_threads = 0;
};

// The runs of every (system, workload, threads), in the order they first ran, and the
// failed reads of all runs (warm-ups included).
struct YcsbResults {
  std::map<std::tuple<std::string, char, unsigned>, Row> rows;
  std::vector<std::tuple<std::string, char, unsigned>> row_order;
  uint64_t failures = 0;

  void add(const std::string& system, char w, unsigned threads, const std::string& distribution, const RunResult& r) {
    auto key = std::make_tuple(system, w, threads);
    if (!rows.count(key)) {
      row_order.push_back(key);
      rows[key] = Row{system, w, threads, distribution, {}};
    }
    rows[key].runs.push_back(r);
  }
};

// Step 1: checks the options and sizes the data and the cache.
YcsbPlan plan_ycsb(const YcsbConfig& cfg) {
  check_size_mb(cfg.cache_mb, "--cache-mb");
  YcsbPlan plan;
  for (const std::string& w : cfg.workloads) {
    if (w.size() != 1) throw std::invalid_argument("workload '" + w + "': one letter A..F");
    char c = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
    workload_mix(c);  // validates
    plan.workloads.push_back(c);
  }
  for (const std::string& s : cfg.systems) kv::check_system(s);
  if (cfg.threads.empty() || cfg.systems.empty() || plan.workloads.empty() || cfg.repeat == 0) {
    throw std::invalid_argument("need at least one system, workload, thread count and repeat");
  }
  plan.data_bytes = cfg.records * (kv::kKeyBytes + cfg.value_bytes);
  plan.cache_bytes = cfg.cache_mb ? cfg.cache_mb << 20 : 3 * plan.data_bytes + (uint64_t{64} << 20);
  plan.in_memory = plan.cache_bytes >= 2 * plan.data_bytes;  // B-tree pages at ~90% fill, with slack
  plan.max_threads = *std::max_element(cfg.threads.begin(), cfg.threads.end());
  return plan;
}

// Step 2: the run's configuration and the machine (STYLE.md 10).
void print_ycsb_banner(const YcsbConfig& cfg, const YcsbPlan& plan) {
  fmt::print("calico ycsb: systems {}, workloads {}, distribution {}, theta {}, {} records x {} B values "
             "(~{:.1f} MB), cache {} MB ({}), threads {}, {} per run, warm-up {} s, repeat {} (system order rotated), seed {}\n",
             fmt::join(cfg.systems, ","), fmt::join(cfg.workloads, ","),
             cfg.distribution.empty() ? "YCSB default (zipf; D: latest)" : cfg.distribution, cfg.theta, cfg.records,
             cfg.value_bytes, plan.data_bytes / 1048576.0, plan.cache_bytes >> 20,
             plan.in_memory ? "in memory" : "larger than memory", fmt::join(cfg.threads, ","),
             cfg.ops ? fmt::format("{} ops", cfg.ops) : fmt::format("{} s", cfg.seconds), cfg.warmup_seconds, cfg.repeat,
             cfg.seed);
  fmt::print("machine: {}, {} cores, {:.1f} GiB; build: {}\n", cpu_model(), std::thread::hardware_concurrency(),
             memory_bytes() / double(1ull << 30), build_flags());
  std::fflush(stdout);
}

kv::KvConfig engine_config(const YcsbConfig& cfg, const YcsbPlan& plan, const std::string& system) {
  kv::KvConfig kc;
  kc.data_dir = prepare_engine_dir(cfg.data_dir, system);
  kc.cache_bytes = plan.cache_bytes;
  kc.data_bytes = plan.data_bytes;
  kc.value_bytes = cfg.value_bytes;
  kc.max_threads = plan.max_threads;
  kc.far_bytes = cfg.far_mb << 20;
  kc.far_tier = cfg.far_tier;
  return kc;
}

RunSpec run_spec(const YcsbConfig& cfg, const std::string& system, char w, unsigned threads, unsigned rep) {
  RunSpec spec;
  spec.workload = w;
  spec.distribution = cfg.distribution.empty() ? default_distribution(w) : cfg.distribution;
  spec.theta = cfg.theta;
  spec.threads = threads;
  spec.seconds = cfg.seconds;
  spec.ops = cfg.ops;
  spec.seed = cfg.seed + rep * 1000003;
  spec.print_each_second = !cfg.quiet;
  spec.label = fmt::format("[{} {} t={}]", system, w, threads);
  return spec;
}

// The engine as one run saw it (for its JSON line).
struct EngineRun {
  std::string configuration;
  bool cache_enforced = true;
  double load_s = 0;
};

void append_json(const YcsbConfig& cfg, const YcsbPlan& plan, const std::string& system, const RunSpec& spec,
                 unsigned rep, const EngineRun& engine, const RunResult& r) {
  const double hit_rate = r.accesses ? double(r.hits) / double(r.accesses) : 0.0;
  std::ofstream out(cfg.json_path, std::ios::app);
  out << fmt::format(
      R"({{"experiment":"ycsb","system":"{}","translation":"{}","workload":"{}","distribution":"{}","theta":{},"threads":{},"records":{},"value_bytes":{},"data_bytes":{},"cache_bytes":{},"cache_enforced":{},"in_memory":{},"repeat":{},"warmup_s":{},"ops":{},"ops_per_s":{:.0f},"p50_us":{:.3f},"p99_us":{:.3f},"seconds":{:.3f},"load_s":{:.3f},"hit_rate":{},"failures":{},"inflight_misses":{},"seed":{},"far_bytes":{},"tiers":{},"configuration":"{}",{}}})",
      system, kv::calico_translation(system).empty() ? "-" : kv::calico_translation(system), spec.workload,
      spec.distribution, cfg.theta, spec.threads, cfg.records, cfg.value_bytes, plan.data_bytes, plan.cache_bytes,
      engine.cache_enforced, plan.in_memory, rep, cfg.warmup_seconds, r.ops, r.ops_per_s, r.p50_us, r.p99_us,
      r.seconds, engine.load_s, r.has_hit_rate ? fmt::format("{:.5f}", hit_rate) : "null", r.failures(),
      r.missing_inflight, spec.seed, cfg.far_mb << 20, tiers_json(r), json_escape(engine.configuration),
      machine_json())
      << "\n";
}

// Step 4 (per workload and thread count): the warm-up (not recorded), the timed run, its
// line and its JSON line.
void run_measured(YcsbDatabase& db, const YcsbConfig& cfg, const YcsbPlan& plan, const std::string& system,
                  const RunSpec& spec, unsigned rep, const EngineRun& engine, YcsbResults& results) {
  const char w = spec.workload;
  const unsigned threads = spec.threads;
  if (cfg.warmup_seconds > 0) {
    RunSpec warm = spec;
    warm.ops = 0;
    warm.seconds = cfg.warmup_seconds;
    warm.print_each_second = false;
    warm.seed = spec.seed + 77;
    RunResult wr = db.run(warm);
    results.failures += wr.failures();
    fmt::print("[{} {} t={}] warm-up: {:.0f} ops/s over {:.1f} s (not recorded), failures {}\n", system, w, threads,
               wr.ops_per_s, wr.seconds, wr.failures());
  }
  RunResult r = db.run(spec);
  results.failures += r.failures();
  double hit_rate = r.accesses ? double(r.hits) / double(r.accesses) : 0.0;
  fmt::print("[{} {} {} t={} rep {}] {:.0f} ops/s, p50 {:.2f} us, p99 {:.2f} us, {} ops in {:.2f} s{}; "
             "failures {} (missing {}, bad values {}), in-flight misses {}\n",
             system, w, spec.distribution, threads, rep, r.ops_per_s, r.p50_us, r.p99_us, r.ops, r.seconds,
             r.has_hit_rate ? fmt::format(", hit rate {:.2f}%", hit_rate * 100) : "", r.failures(), r.missing_loaded,
             r.bad_values, r.missing_inflight);
  std::fflush(stdout);
  results.add(system, w, threads, spec.distribution, r);
  if (!cfg.json_path.empty()) append_json(cfg, plan, system, spec, rep, engine, r);
}

// Step 3 (per repeat and system): opens a fresh engine, loads it, runs every workload at
// every thread count, closes it (checkpoint / flush) and removes its data.
void run_system(const YcsbConfig& cfg, const YcsbPlan& plan, const std::string& system, unsigned rep,
                YcsbResults& results) {
  {
    YcsbDatabase db(system, engine_config(cfg, plan, system), cfg.records);
    EngineRun engine;
    engine.configuration = db.store().configuration();
    engine.cache_enforced = db.store().cache_enforced();
    fmt::print("[{} repeat {}] {}\n", system, rep, engine.configuration);
    if (!engine.cache_enforced && !plan.in_memory) {
      fmt::print("[{}] NOTE: larger-than-memory setting, but {}'s cache is the OS page cache and is not "
                 "limited to {} MB (only a memory cgroup could); its numbers are not comparable\n",
                 system, system, plan.cache_bytes >> 20);
    }
    std::fflush(stdout);
    engine.load_s = db.load(!cfg.quiet);
    fmt::print("[{}] loaded {} records in {:.2f} s ({:.0f} records/s)\n", system, cfg.records, engine.load_s,
               cfg.records / engine.load_s);
    for (char w : plan.workloads) {
      for (unsigned threads : cfg.threads) {
        run_measured(db, cfg, plan, system, run_spec(cfg, system, w, threads, rep), rep, engine, results);
      }
    }
  }  // closes the engine (checkpoint / flush)
  if (!cfg.keep_data) remove_bench_dir((std::filesystem::path(cfg.data_dir) / system).string(), {"db"});
}

// Step 5: one line per (system, workload, threads): medians over the repeats.
void print_ycsb_summary(YcsbResults& results) {
  fmt::print("\n{:<21}{:>3}{:>8}{:>8}{:>14}{:>22}{:>10}{:>10}{:>10}{:>9}\n", "system", "wl", "dist", "threads",
             "ops/s (med)", "min..max", "p50 us", "p99 us", "hit rate", "failures");
  for (const auto& key : results.row_order) {
    const Row& row = results.rows[key];
    double lo = 1e300, hi = 0;
    uint64_t fails = 0;
    for (const RunResult& r : row.runs) lo = std::min(lo, r.ops_per_s), hi = std::max(hi, r.ops_per_s), fails += r.failures();
    std::string hit = row.runs[0].has_hit_rate
                          ? fmt::format("{:.2f}%", 100 * median_of(row.runs, [](const RunResult& r) {
                                                         return r.accesses ? double(r.hits) / double(r.accesses) : 0.0;
                                                       }))
                          : "-";
    fmt::print("{:<21}{:>3}{:>8}{:>8}{:>14.0f}{:>22}{:>10.2f}{:>10.2f}{:>10}{:>9}\n", row.system, row.workload,
               row.distribution, row.threads, median_of(row.runs, [](const RunResult& r) { return r.ops_per_s; }),
               fmt::format("{:.0f}..{:.0f}", lo, hi), median_of(row.runs, [](const RunResult& r) { return r.p50_us; }),
               median_of(row.runs, [](const RunResult& r) { return r.p99_us; }), hit, fails);
  }
}

}  // namespace

int run_ycsb(const YcsbConfig& cfg) {
  const YcsbPlan plan = plan_ycsb(cfg);
  print_ycsb_banner(cfg, plan);
  YcsbResults results;
  for (unsigned rep = 0; rep < cfg.repeat; ++rep) {
    std::vector<std::string> order = cfg.systems;
    std::rotate(order.begin(), order.begin() + static_cast<ptrdiff_t>(rep % order.size()), order.end());
    for (const std::string& system : order) run_system(cfg, plan, system, rep, results);
  }
  print_ycsb_summary(results);
  if (results.failures != 0) {
    fmt::print(stderr, "FAILED: {} reads of loaded keys were missing or had a wrong value\n", results.failures);
    return 1;
  }
  return 0;
}

}  // namespace calico::bench
