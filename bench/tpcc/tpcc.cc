// The `calico_bench tpcc` subcommand: see tpcc.h. Pieces in order: one database's load +
// runs (run_database<TableT>, any table backend), a translation's (run_translation<Pool>) and
// a peer's (run_peer) setup around it, validation and sizing, the summary table.
#include "tpcc/tpcc.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "calico/error.h"
#include "common/data_dir.h"
#include "common/far_tier_option.h"
#include "common/machine.h"
#include "micro/harness.h"
#include "tpcc/consistency.h"
#include "tpcc/loader.h"
#include "tpcc/peers/peer_store.h"
#include "tpcc/peers/peer_table.h"
#include "tpcc/run.h"
#include "tpcc/sizing.h"
#include "calico/variants.h"

namespace calico::bench {

namespace {

using namespace tpcc;
constexpr size_t kPageSize = 4096;
constexpr double kMaxPoolMb = 1 << 22;

struct RunRecord {
  RunResult r;
  size_t violations = 0;
  std::string config;  // the translation, + "+index-skip" with index skipping
  unsigned threads = 0;
};

// "customer 97.1% (stale 0.4%), ..." for every table whose hinted calls were counted, and the
// same as a JSON object body ("customer":{"calls":..,"hits":..,...},...).
template <class TableT>
std::pair<std::string, std::string> hint_report(Database<TableT>& db, const TableHintStats& h) {
  std::string text, json;
  for (TableT* t : db.tables()) {
    const index::HintStats& s = h[t->id()];
    if (s.calls() == 0) continue;
    const double calls = static_cast<double>(s.calls());
    text += fmt::format("{}{} {:.1f}% (stale {:.1f}%)", text.empty() ? "" : ", ", t->name(),
                        100.0 * static_cast<double>(s.hits + s.slot_moved) / calls,
                        100.0 * static_cast<double>(s.stale) / calls);
    json += fmt::format(R"({}"{}":{{"calls":{},"hits":{},"slot_moved":{},"stale":{},"none":{},"fallbacks":{}}})",
                        json.empty() ? "" : ",", t->name(), s.calls(), s.hits, s.slot_moved, s.stale, s.none,
                        s.fallbacks);
  }
  return {text, json};
}

struct Sizes {
  uint64_t pool_bytes;
  uint64_t data_pages;     // estimated after the load
  uint64_t growth_pages;   // estimated growth over every run of one database
  uint64_t capacity;       // max_blocks_per_space
  bool in_memory;
};

// What a run's report says about the system beyond the runs' numbers.
struct SystemInfo {
  std::string system;        // "calico" or the peer's name
  std::string engine_config; // a peer's configuration line; empty for calico
  bool cache_enforced = true;
  // Calico only: the bytes of translation entries (8 per block, in whole 4 KB pages) that an
  // array without hole punching would hold for every block of every space now; 0 for a peer.
  std::function<uint64_t()> flat_translation_bytes = [] { return uint64_t{0}; };
};

std::string json_escape(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

// A run's configuration label: the translation, + "+index-skip" (mode on) or
// "+index-skip+remember" (mode remember: also the workers' hint memory, hint_memory.h).
std::string config_name(const std::string& name, const std::string& mode) {
  if (mode == "on") return name + "+index-skip";
  if (mode == "remember") return name + "+index-skip+remember";
  return name;
}

// Loads db, then one timed run per thread count and index-skipping mode, each followed by
// the consistency checks. loaded(): the load report after "loaded in N s: ".
// Tiered memory figures of a run (docs/results/tiers.md), over the run only: per-tier hit rates,
// migrations per second, the time spent migrating and its cost per page moved (copies,
// throttle waits, vmcache_n's discards, publishing). Empty without a far tier.
std::pair<std::string, std::string> tier_report(const RunResult& r) {
  const PoolStats& a = r.begin;
  const PoolStats& b = r.end;
  if (b.tier[1].frames == 0) return {};
  const uint64_t fast_hits = b.tier[0].hits - a.tier[0].hits, far_hits = b.tier[1].hits - a.tier[1].hits;
  const uint64_t promotions = b.migration.promotions - a.migration.promotions, demotions = b.migration.demotions - a.migration.demotions;
  const uint64_t batches = b.migration.promotion_batches - a.migration.promotion_batches;
  const uint64_t far_evictions = b.tier[1].evictions - a.tier[1].evictions;
  const uint64_t moved = promotions + demotions;
  const double migrating_s = (b.migration.ns - a.migration.ns) / 1e9;
  const double wait_s = (b.migration.wait_ns - a.migration.wait_ns) / 1e9;
  const double hits = std::max<double>(1, double(fast_hits + far_hits));
  auto per_page = [moved](uint64_t ns) { return moved > 0 ? double(ns) / double(moved) : 0.0; };
  const double per_page_ns = per_page(b.migration.ns - a.migration.ns);
  const double fault_ns = per_page(b.migration.fault_ns - a.migration.fault_ns);
  const double copy_ns = per_page(b.migration.copy_ns - a.migration.copy_ns);
  const double discard_ns = per_page(b.migration.discard_ns - a.migration.discard_ns);
  const double per_s = r.seconds > 0 ? moved / r.seconds : 0;
  std::string text = fmt::format(
      "tiers: fast {} + far {} frames; hits fast {:.1f}% far {:.1f}%; {} promotions ({} batches), {} demotions, "
      "{} far evictions; {:.0f} migrations/s; time spent migrating {:.3f} s ({:.3f} s waiting for bandwidth), "
      "{:.0f} ns per page moved{}",
      b.tier[0].frames, b.tier[1].frames, 100.0 * fast_hits / hits, 100.0 * far_hits / hits, promotions, batches,
      demotions, far_evictions, per_s, migrating_s, wait_s, per_page_ns,
      fault_ns + copy_ns + discard_ns > 0
          ? fmt::format(" (backing the destination {:.0f}, copy {:.0f}, discard {:.0f})", fault_ns, copy_ns, discard_ns)
          : std::string());
  std::string json = fmt::format(
      R"("tiers":{{"fast_frames":{},"far_frames":{},"fast_hits":{},"far_hits":{},"promotions":{},"promotion_batches":{},)"
      R"("demotions":{},"far_evictions":{},"migrations_per_s":{:.1f},"migration_s":{:.6f},"migration_wait_s":{:.6f},)"
      R"("ns_per_page_moved":{:.1f},"ns_per_page_fault":{:.1f},"ns_per_page_copy":{:.1f},"ns_per_page_discard":{:.1f}}},)",
      b.tier[0].frames, b.tier[1].frames, fast_hits, far_hits, promotions, batches, demotions, far_evictions, per_s,
      migrating_s, wait_s, per_page_ns, fault_ns, copy_ns, discard_ns);
  return {text, json};
}

template <class TableT>
std::vector<RunRecord> run_database(const std::string& name, const TpccConfig& cfg, const Scale& scale,
                                    const Sizes& sz, unsigned rep, Database<TableT>& db, const SystemInfo& info,
                                    const std::function<std::string()>& loaded) {
  using Clock = std::chrono::steady_clock;
  const std::string tag = fmt::format("[{} rep {}]", name, rep);
  const auto t0 = Clock::now();
  auto since = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  try {
    load(db, *std::max_element(cfg.threads.begin(), cfg.threads.end()), cfg.seed, [&](const std::string& line) {
      if (!cfg.quiet) fmt::print("{} load: {} ({:.1f} s)\n", tag, line, since());
      std::fflush(stdout);
    });
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kPoolFull) throw;
    throw std::invalid_argument(fmt::format(
        "{}: the pool of {} bytes ({} frames) is too small to load the item table ({} items, about {} pages) and "
        "the other tables (about {} pages): {}",
        name, sz.pool_bytes, sz.pool_bytes / kPageSize, scale.items, item_pages(scale, kPageSize), sz.data_pages,
        e.what()));
  }
  const double load_s = since();
  fmt::print("{} loaded in {:.2f} s: {}\n", tag, load_s, loaded());
  std::fflush(stdout);

  // Every (threads, mode) run shares this database, which grows with each run: the order
  // is rotated per repeat, by runs / repeats, so that over the repeats each configuration
  // runs early and late about equally.
  std::vector<std::pair<unsigned, std::string>> runs;
  for (unsigned threads : cfg.threads) {
    for (const std::string& mode : cfg.index_skipping) runs.emplace_back(threads, mode);
  }
  std::rotate(runs.begin(), runs.begin() + static_cast<ptrdiff_t>(rep * runs.size() / cfg.repeat % runs.size()),
              runs.end());
  std::vector<RunRecord> out;
  for (const auto& [threads, mode] : runs) {
    const bool skipping = mode != "off";
    db.set_index_skipping(skipping);
    const std::string config = config_name(name, mode);
    RunSpec spec;
    spec.threads = threads;
    spec.seconds = cfg.seconds;
    spec.max_tx = cfg.max_tx;
    spec.seed = cfg.seed + rep * 1000003 + threads;
    spec.print_each_second = !cfg.quiet;
    spec.remember_hints = mode == "remember";
    spec.label = fmt::format("[{} t={} rep {}]", config, threads, rep);
    RunRecord rec;
    rec.config = config;
    rec.threads = threads;
    rec.r = run_workload(db, spec);
    const RunResult& r = rec.r;
    const uint64_t flat_bytes = info.flat_translation_bytes();
    const auto c0 = Clock::now();
    Violations v = check_consistency(db);
    const double check_s = std::chrono::duration<double>(Clock::now() - c0).count();
    rec.violations = v.size();
    for (size_t i = 0; i < v.size() && i < 20; ++i) fmt::print(stderr, "{} VIOLATION {}\n", spec.label, v[i].to_string());
    if (v.size() > 20) fmt::print(stderr, "{} ... and {} more violations\n", spec.label, v.size() - 20);
    if (r.counters.failures) fmt::print(stderr, "{} {} self-check failures; first: {}\n", spec.label, r.counters.failures, r.counters.first_failure);
    fmt::print("{} {:.0f} tx/s ({} tx in {:.2f} s), {:.0f} tx per CPU-second, NO p50 {:.1f} us p99 {:.1f} us; "
               "read {:.1f} MB, written {:.1f} MB, evictions {}; translation {:.2f} MB (unpunched {:.2f} MB, {} punches); rollbacks {}, remote lines {}, "
               "remote payments {}, delivery skips {}; consistency: {} ({:.2f} s), failures {}\n",
               spec.label, r.tx_per_s, r.tx, r.seconds, r.tx_per_cpu_s, r.latency[0].p50_us, r.latency[0].p99_us,
               r.pages_read * kPageSize / 1048576.0, r.pages_written * kPageSize / 1048576.0, r.evictions,
               r.end.translation_private_bytes / 1048576.0, flat_bytes / 1048576.0, r.end.punches,
               r.counters.new_order_rollbacks,
               r.counters.remote_order_lines, r.counters.remote_payments, r.counters.delivery_skipped,
               v.empty() ? "ok" : fmt::format("{} VIOLATIONS", v.size()), check_s, r.counters.failures);
    const auto [tier_text, tier_json] = tier_report(r);
    if (!tier_text.empty()) fmt::print("{} {}\n", spec.label, tier_text);
    const auto [hint_text, hint_json] = hint_report(db, r.hints);
    if (skipping) fmt::print("{} index skipping, hinted accesses answered without a descent: {}\n", spec.label, hint_text);
    std::fflush(stdout);
    if (!cfg.json_path.empty()) {
      std::string types;
      for (size_t t = 0; t < kTxTypes; ++t) {
        types += fmt::format(R"("{}":{{"count":{},"p50_us":{:.2f},"p99_us":{:.2f}}},)", kTxNames[t], r.latency[t].count,
                             r.latency[t].p50_us, r.latency[t].p99_us);
      }
      std::ofstream js(cfg.json_path, std::ios::app);
      js << fmt::format(
                R"({{"experiment":"tpcc","translation":"{}","system":"{}","engine_config":"{}","cache_enforced":{},"index_skipping":{},"hint_memory":{},"index_hints":{{{}}},"threads":{},"warehouses":{},"scale":{},"repeat":{},"seconds":{:.3f},)"
                R"("tx":{},"tx_per_s":{:.1f},"cpu_s":{:.3f},"tx_per_cpu_s":{:.1f},{})"
                R"("pool_bytes":{},"in_memory":{},"direct_io":{},"pages_read":{},"pages_written":{},"evictions":{},)"
                R"("translation_private_bytes":{},"translation_reserved_bytes":{},"translation_flat_bytes":{},"punches":{},)"
                R"("hint_hits":{},"hint_misses":{},)"
                R"("rollbacks":{},"remote_order_lines":{},"remote_payments":{},"by_name":{},"delivery_skipped":{},)"
                R"("delivery_claims_lost":{},"violations":{},"failures":{},"seed":{},"page_size":{},"far_mb_option":{},{}{}}})",
                name, info.system, json_escape(info.engine_config), info.cache_enforced, skipping, spec.remember_hints, hint_json, threads, scale.warehouses, scale.factor, rep, r.seconds, r.tx, r.tx_per_s, r.cpu_seconds,
                r.tx_per_cpu_s, types, sz.pool_bytes, sz.in_memory, r.end.direct_io, r.pages_read, r.pages_written,
                r.evictions, r.end.translation_private_bytes, r.end.translation_reserved_bytes, flat_bytes, r.end.punches,
                r.end.hints.hits,
                r.end.hints.misses, r.counters.new_order_rollbacks, r.counters.remote_order_lines,
                r.counters.remote_payments, r.counters.by_name, r.counters.delivery_skipped,
                r.counters.delivery_claims_lost, v.size(), r.counters.failures, spec.seed, kPageSize, cfg.far_mb, tier_json, machine_json())
         << "\n";
    }
    out.push_back(std::move(rec));
  }
  return out;
}

template <class Pool>
std::vector<RunRecord> run_translation(const std::string& name, const TpccConfig& cfg, const Scale& scale,
                                       const Sizes& sz, unsigned rep) {
  PoolOptions opt;
  opt.data_dir = cfg.data_dir + "/" + name;
  opt.page_size = kPageSize;
  opt.pool_bytes = sz.pool_bytes;
  opt.max_blocks_per_space = sz.capacity;
  opt.direct_io = true;
  // Single-tier translations run beside the tiered ones without the far tier (the baselines
  // of a far-tier sweep); run_tpcc refuses --far-mb when no translation takes it.
  if (cfg.far_mb > 0 && Pool::kTierable) opt.tiers.far = far_tier_option(cfg.far_tier, (cfg.far_mb << 20) / kPageSize);
  auto pool = micro::open_scratch_pool<Pool>(opt);  // BenchDirError: not our directory
  auto db = CalicoDatabase<Pool>::create(*pool, scale);
  SystemInfo info{"calico", "", true};
  info.flat_translation_bytes = [&] {
    uint64_t bytes = 0;
    for (Table<Pool>* t : db.tables()) bytes += (pool->space_blocks(t->tree().space()) * 8 + 4095) / 4096 * 4096;
    return bytes;
  };
  return run_database(name, cfg, scale, sz, rep, db, info, [&] {
    pool->flush();  // the load's dirty pages: written now, not by the first run (as a peer's after_load)
    uint64_t pages = 0;
    std::string per_table;
    for (Table<Pool>* t : db.tables()) {
      const uint64_t b = pool->space_blocks(t->tree().space());
      pages += b;
      per_table += fmt::format(" {}={}", t->name(), b);
    }
    const PoolStats ls = pool->stats();
    return fmt::format("{} pages ({:.1f} MB; estimated {}),{}; direct I/O {}, evictions {}", pages,
                       pages * kPageSize / 1048576.0, sz.data_pages, per_table, ls.direct_io ? "yes" : "no",
                       ls.evictions);
  });
}

// A peer (peers/peer_store.h) in <data-dir>/<name>/db, a bench directory (data_dir.h) that is
// removed afterwards. Cache: the pool's bytes (in memory or --pool-mb); LMDB's map: 4 x the
// estimated database with its growth, at least 1 GB.
std::vector<RunRecord> run_peer(const std::string& name, const TpccConfig& cfg, const Scale& scale, const Sizes& sz,
                                unsigned rep) {
  const std::filesystem::path dir = std::filesystem::path(cfg.data_dir) / name;
  prepare_bench_dir(dir.string(), {"db"});  // BenchDirError: not our directory
  std::filesystem::create_directories(dir / "db");
  std::vector<RunRecord> out;
  {
    peers::PeerOptions po;
    po.dir = (dir / "db").string();
    po.cache_bytes = sz.pool_bytes;
    po.map_bytes = 4 * (sz.data_pages + sz.growth_pages) * kPageSize;
    po.max_threads = *std::max_element(cfg.threads.begin(), cfg.threads.end());
    std::unique_ptr<peers::PeerStore> store = peers::open_peer_store(name, po);
    fmt::print("[{} rep {}] {}\n", name, rep, store->configuration());
    auto db = Database<PeerTable>::create(*store, scale);
    out = run_database(name, cfg, scale, sz, rep, db,
                       SystemInfo{name, store->configuration(), store->cache_enforced()}, [&] {
                         store->after_load();
                         std::string rows;
                         for (PeerTable* t : db.tables()) rows += fmt::format(" {}={}", t->name(), t->size());
                         return fmt::format("records{}; {}", rows, store->size_summary());
                       });
  }
  remove_bench_dir(dir.string(), {"db"});
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// What runs: Calico's translations and the peers (peers/peer_store.h), in the order given.
struct Selection {
  std::vector<std::string> names;         // translations and peers
  std::vector<std::string> translations;  // Calico's only
  std::vector<std::string> tiered;        // the translations that take the far tier
  bool peers_selected = false;
};

// Step 1a: the run's bounds (threads, seconds, repeats, pool size).
void check_run_options(const TpccConfig& cfg) {
  if (cfg.threads.empty()) throw std::invalid_argument("--threads needs at least one thread count");
  for (unsigned t : cfg.threads) {
    if (t < 1) throw std::invalid_argument("--threads must be at least 1 (got 0)");
    if (t > cfg.warehouses) {
      throw std::invalid_argument(fmt::format(
          "--threads {} exceeds --warehouses {}: every thread is the home terminal of its own warehouses "
          "(warehouse w runs on thread w mod threads)",
          t, cfg.warehouses));
    }
  }
  if (!(cfg.seconds > 0)) throw std::invalid_argument("--seconds must be > 0");
  if (cfg.repeat < 1) throw std::invalid_argument("--repeat must be at least 1");
  if (!(cfg.pool_mb >= 0 && cfg.pool_mb <= kMaxPoolMb)) {
    throw std::invalid_argument(fmt::format("--pool-mb {} is out of range (0 to {} MB)", cfg.pool_mb, kMaxPoolMb));
  }
}

// Step 1b: the translations and peers named, checked against the far tier and index
// skipping options.
Selection select_systems(const TpccConfig& cfg) {
  Selection sel;
  for (const std::string& n : cfg.translations) {
    if (std::find(sel.names.begin(), sel.names.end(), n) != sel.names.end()) continue;
    if (peers::is_peer_system(n)) {
      sel.peers_selected = true;
      sel.names.push_back(n);
      continue;
    }
    try {
      variants::with_pool_type(n, []<class Pool>() {});
    } catch (const Error&) {
      throw std::invalid_argument(fmt::format("unknown translation or system '{}' (translations: {}; peers: {})", n,
                                              fmt::join(variants::translation_names(), ", "),
                                              fmt::join(peers::peer_systems(), ", ")));
    }
    if (n == "direct") {
      throw std::invalid_argument("translation direct cannot run TPC-C: it gives block b of every space frame b + 1, "
                                  "so a pool holds one space, and TPC-C has eleven (one per table and index)");
    }
    sel.names.push_back(n);
    sel.translations.push_back(n);
  }
  if (sel.names.empty()) throw std::invalid_argument("--translation: nothing to run (give translations and/or peers)");
  for (const std::string& n : sel.translations) {
    if (variants::with_pool_type(n, []<class Pool>() { return Pool::kTierable; })) sel.tiered.push_back(n);
  }
  if (cfg.far_mb > 0 && sel.tiered.empty()) {
    throw std::invalid_argument(fmt::format(
        "--far-mb {}: none of the translations takes a far tier (the tiered translations: array_tiered, vmcache_n)",
        cfg.far_mb));
  }
  if (sel.peers_selected && std::any_of(cfg.index_skipping.begin(), cfg.index_skipping.end(),
                                        [](const std::string& m) { return m != "off"; })) {
    throw std::invalid_argument(fmt::format(
        "--index-skipping on (or remember) cannot run on a peer ({}): index skipping is Calico's (record hints "
        "into its B+tree leaves); run the peers with --index-skipping off",
        fmt::join(peers::peer_systems(), ", ")));
  }
  return sel;
}

// Step 2: the database's pages (loaded and grown by the runs), the pool (sized from them in
// memory, or --pool-mb) and the spaces' capacity; refuses a pool too small to load.
Sizes size_database(const TpccConfig& cfg, const Scale& scale, const Selection& sel) {
  const unsigned max_threads = *std::max_element(cfg.threads.begin(), cfg.threads.end());
  Sizes sz;
  sz.data_pages = estimated_pages(scale, kPageSize);
  double thread_seconds = 0;
  for (unsigned t : cfg.threads) thread_seconds += t * cfg.seconds;
  sz.growth_pages = cfg.max_tx ? cfg.max_tx * 2 * kMaxOrderLines / 20 + 64 : growth_pages(thread_seconds, kPageSize);
  const uint64_t need_pages = sz.data_pages + sz.growth_pages;
  sz.in_memory = cfg.pool_mb == 0;
  sz.pool_bytes = sz.in_memory ? (need_pages + need_pages / 4) * kPageSize + (uint64_t{64} << 20)
                               : static_cast<uint64_t>(std::llround(cfg.pool_mb * 1048576.0)) / kPageSize * kPageSize;
  sz.capacity = std::bit_ceil(std::max<uint64_t>(uint64_t{1} << 16, 2 * need_pages));
  const uint64_t frames = sz.pool_bytes / kPageSize;
  if (!sel.translations.empty() && frames < min_frames(max_threads)) {
    throw std::invalid_argument(fmt::format(
        "--pool-mb {}: a pool of {} bytes ({} frames of {} bytes) is too small to load the item table ({} items, "
        "about {} pages) with {} threads: it needs at least {} frames ({} bytes); the whole database is about {} pages",
        cfg.pool_mb, sz.pool_bytes, frames, kPageSize, scale.items, item_pages(scale, kPageSize), max_threads,
        min_frames(max_threads), min_frames(max_threads) * kPageSize, sz.data_pages));
  }
  if (!sz.in_memory) sz.in_memory = frames >= need_pages;
  return sz;
}

// Step 3: the run's configuration, the isolation it gives, and the machine (STYLE.md 10).
void print_tpcc_banner(const TpccConfig& cfg, const Scale& scale, const Selection& sel, const Sizes& sz) {
  const uint64_t frames = sz.pool_bytes / kPageSize;
  fmt::print("calico tpcc: translations and peers {}, {} warehouses (scale {}: {} customers/district, {} items), threads {}, "
             "{} s per run{}, repeat {} (translation order rotated), pool {:.1f} MB ({} frames; {}), database about "
             "{:.1f} MB loaded + up to {:.1f} MB of growth, space capacity {} blocks, seed {}\n",
             fmt::join(sel.names, ","), scale.warehouses, scale.factor, scale.customers, scale.items,
             fmt::join(cfg.threads, ","), cfg.seconds, cfg.max_tx ? fmt::format(" (or {} tx)", cfg.max_tx) : "",
             cfg.repeat, sz.pool_bytes / 1048576.0, frames, sz.in_memory ? "in memory" : "larger than memory, O_DIRECT",
             sz.data_pages * kPageSize / 1048576.0, sz.growth_pages * kPageSize / 1048576.0, sz.capacity, cfg.seed);
  if (cfg.far_mb > 0) {
    fmt::print("far tier: {} MB ({}) behind the pool of {}; the others run with the pool alone\n", cfg.far_mb,
               cfg.far_tier, fmt::join(sel.tiered, ","));
  }
  fmt::print("isolation: per-record atomicity (one B+tree update per read-modify-write), no multi-record isolation, "
             "no rollback, no WAL (bench/tpcc/workload.h)\n");
  if (sel.peers_selected) {
    fmt::print("isolation on the peers: the same; each table operation is one engine transaction (WiredTiger: "
               "auto-commit, an update = reserve + read + write; LMDB: a write txn per write op), no log, no sync "
               "(bench/tpcc/peers/peer_store.h); the peers report no page counters (zeros), LMDB's cache is the OS "
               "page cache (not limited)\n");
  }
  fmt::print("machine: {}, {} cores, {:.1f} GiB; build: {}\n", cpu_model(), std::thread::hardware_concurrency(),
             memory_bytes() / double(1ull << 30), build_flags());
  std::fflush(stdout);
}

// The runs by (configuration, threads), and the failures of all of them.
struct TpccResults {
  std::map<std::pair<std::string, unsigned>, std::vector<RunRecord>> rows;
  size_t violations = 0;
  uint64_t failures = 0;
};

// Step 4: `repeat` rounds, each running every translation and peer (order rotated per
// round) on a fresh database.
TpccResults run_rounds(const TpccConfig& cfg, const Scale& scale, const Selection& sel, const Sizes& sz) {
  TpccResults res;
  for (unsigned rep = 0; rep < cfg.repeat; ++rep) {
    std::vector<std::string> order = sel.names;
    std::rotate(order.begin(), order.begin() + static_cast<ptrdiff_t>(rep % order.size()), order.end());
    for (const std::string& name : order) {
      std::vector<RunRecord> recs =
          peers::is_peer_system(name)
              ? run_peer(name, cfg, scale, sz, rep)
              : variants::with_pool_type(
                    name, [&]<class Pool>() { return run_translation<Pool>(name, cfg, scale, sz, rep); });
      for (RunRecord& rec : recs) {
        res.violations += rec.violations;
        res.failures += rec.r.counters.failures;
        res.rows[{rec.config, rec.threads}].push_back(std::move(rec));
      }
    }
  }
  return res;
}

// Step 5: one line per (configuration, threads): medians over the repeats.
void print_tpcc_table(const TpccConfig& cfg, const Scale& scale, const Selection& sel, TpccResults& res) {
  fmt::print("\nTPC-C, {} warehouses, scale {}, {} s runs, medians over {} repeats; latency p50/p99 in us per type "
             "(NO new-order, PAY payment, OS order-status, DEL delivery, SL stock-level)\n",
             scale.warehouses, scale.factor, cfg.seconds, cfg.repeat);
  fmt::print("{:<22}{:>4}{:>11}{:>18}{:>10}{:>13}{:>13}{:>13}{:>15}{:>13}{:>10}{:>9}{:>6}\n", "translation", "thr",
             "tx/s", "min..max", "tx/cpu-s", "NO", "PAY", "OS", "DEL", "SL", "transl.MB", "evicted", "viol");
  std::vector<std::string> configs;
  for (const std::string& n : sel.names) {
    for (const std::string& mode : cfg.index_skipping) configs.push_back(config_name(n, mode));
  }
  for (const std::string& name : configs) {
    for (unsigned t : cfg.threads) {
      const std::vector<RunRecord>& rs = res.rows[{name, t}];
      if (rs.empty()) continue;
      auto med = [&](auto f) {
        std::vector<double> v;
        for (const RunRecord& x : rs) v.push_back(f(x.r));
        return median(v);
      };
      double lo = 1e300, hi = 0;
      size_t viol = 0;
      for (const RunRecord& x : rs) lo = std::min(lo, x.r.tx_per_s), hi = std::max(hi, x.r.tx_per_s), viol += x.violations;
      std::string lat[kTxTypes];
      for (size_t k = 0; k < kTxTypes; ++k) {
        lat[k] = fmt::format("{:.0f}/{:.0f}", med([&](const RunResult& r) { return r.latency[k].p50_us; }),
                             med([&](const RunResult& r) { return r.latency[k].p99_us; }));
      }
      fmt::print("{:<22}{:>4}{:>11.0f}{:>18}{:>10.0f}{:>13}{:>13}{:>13}{:>15}{:>13}{:>10.2f}{:>9.0f}{:>6}\n", name, t,
                 med([](const RunResult& r) { return r.tx_per_s; }), fmt::format("{:.0f}..{:.0f}", lo, hi),
                 med([](const RunResult& r) { return r.tx_per_cpu_s; }), lat[0], lat[1], lat[2], lat[3], lat[4],
                 med([](const RunResult& r) { return r.end.translation_private_bytes / 1048576.0; }),
                 med([](const RunResult& r) { return static_cast<double>(r.evictions); }), viol);
    }
  }
}

}  // namespace

int run_tpcc(const TpccConfig& cfg) {
  const Scale scale = Scale::make(cfg.warehouses, cfg.scale);
  check_run_options(cfg);
  const Selection sel = select_systems(cfg);
  const Sizes sz = size_database(cfg, scale, sel);
  print_tpcc_banner(cfg, scale, sel, sz);
  TpccResults res = run_rounds(cfg, scale, sel, sz);
  print_tpcc_table(cfg, scale, sel, res);
  if (res.violations != 0 || res.failures != 0) {
    fmt::print(stderr, "FAILED: {} consistency violations, {} transactions missed rows the schema guarantees\n",
               res.violations, res.failures);
    return 1;
  }
  return 0;
}

}  // namespace calico::bench
