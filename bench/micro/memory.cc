// micro-memory: [Calico] Figure 10 (section 6.5). Translation memory of every evicting
// translation (PoolStats: private bytes by pagemap, mincore's figure, reserved address
// space, punched entry pages) on a B+tree larger than the pool:
//   size sweep   for each data size: bulk-load, then YCSB-C lookups (scrambled Zipf: hot keys
//                spread over the key space, the worst case for reclaiming), then measure;
//   moving       one tree: a fraction of the operations uniform reads (every region warm;
//                --moving-uniform, a third by default, 0 for the paper's YCSB-D), then
//                YCSB-D (95% reads of the latest keys, Zipf over recency; 5% inserts of new
//                keys), sampled over time: the hot set moves to the newest pages and cold
//                translation memory can be returned.
// "flat" is what a dense, never-reclaimed array of 8-byte entries would hold for the
// space's blocks; reclaimed = 1 - private / flat, reported where the variant punches.
// Not timed (no repeats); every read is checked. `direct` cannot evict and is skipped.
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <ranges>
#include <string>
#include <vector>

#include "ycsb/kv_store.h"
#include "common/machine.h"
#include "micro/micro.h"
#include "micro/data.h"
#include "calico/variants.h"
#include "common/zipf.h"

namespace calico::bench {
namespace {

template <class Pool>
std::shared_ptr<YcsbTree<Pool>> load_tree(const MicroMemoryConfig& cfg, const std::string& dir, uint64_t records) {
  PoolOptions opt;
  opt.data_dir = cfg.common.data_dir + "/" + dir;
  opt.page_size = 4096;
  opt.pool_bytes = cfg.pool_mb << 20;
  opt.max_blocks_per_space = micro::space_capacity(records / 8);  // >= the tree's pages (~records / 20)
  opt.sparse_groups.sparse_at = cfg.sparse_group_at;
  opt.sparse_groups.dense_at = cfg.dense_group_at;
  return load_ycsb_tree<Pool>(opt, records, cfg.value_bytes);
}

// One measurement of translation memory, as a JSON object body.
//   occupied_bytes: 4 KB for every page of 512 entries (a 4 KB page of 8-byte entries) that
//   holds at least one resident block: the least translation memory any array that returns
//   whole OS pages of entries can hold for this resident set, so private - occupied is what
//   punching left behind and occupied - 0 is what only a sparse representation could save.
//   sparse_floor_bytes: the least for a representation that keeps a group's resident
//   entries as 16-byte OwnedEntry (entry.h) with no index when that is below 4 KB:
//   sum over groups of min(4 KB, 16 x resident). What array_sparse could reach at best.
//   side_table_bytes, sparse_groups: array_sparse's side table (its allocated bytes, part of
//   private_bytes) and its sparse groups (PoolStats; 0 for the others).
struct MemoryPoint {
  uint64_t blocks = 0, private_bytes = 0, mincore_bytes = 0, reserved_bytes = 0, punches = 0, resident = 0;
  double hit_rate = 0;
  uint64_t side_table_bytes = 0, sparse_groups = 0;
  uint64_t occupied_bytes = 0, sparse_floor_bytes = 0;

  static constexpr uint64_t kEntriesPerOsPage = 4096 / 8;

  template <class Pool>
  static MemoryPoint of(Pool& pool, SpaceId space) {
    PoolStats s = pool.stats();
    MemoryPoint p{pool.space_blocks(space), s.translation_private_bytes, s.translation_mincore_bytes,
                  s.translation_reserved_bytes, s.punches, s.resident_pages,
                  s.accesses ? static_cast<double>(s.hits) / static_cast<double>(s.accesses) : 0.0,
                  s.sparse_groups.side_table_bytes, s.sparse_groups.groups};
    // After the stats: frame_of counts as an access. Quiescent pool: no worker runs.
    for (uint64_t group = 0; group * kEntriesPerOsPage < p.blocks; ++group) {
      const uint64_t end = std::min(p.blocks, (group + 1) * kEntriesPerOsPage);
      uint64_t resident = 0;
      for (uint64_t b = group * kEntriesPerOsPage; b < end; ++b) {
        resident += pool.internals().frame_of(PageId(space, static_cast<BlockId>(b))) != kInvalidFrame;
      }
      p.occupied_bytes += resident > 0 ? 4096 : 0;
      p.sparse_floor_bytes += std::min<uint64_t>(4096, 16 * resident);
    }
    return p;
  }
  uint64_t flat_bytes() const { return (blocks * 8 + 4095) / 4096 * 4096; }
  std::optional<double> reclaimed() const {
    return punches ? std::optional<double>(1.0 - static_cast<double>(private_bytes) / static_cast<double>(flat_bytes()))
                   : std::nullopt;
  }
  // "private KB (reclaimed %)" for the terminal.
  std::string cell() const {
    std::optional<double> rec = reclaimed();
    return fmt::format("{:.0f} KB{}", static_cast<double>(private_bytes) / 1024,
                       rec ? fmt::format(" ({:.0f}%)", 100 * *rec) : std::string());
  }
  std::string json() const {
    return fmt::format(R"("blocks":{},"translation_private_bytes":{},"translation_mincore_bytes":{},)"
                       R"("translation_reserved_bytes":{},"punches":{},"flat_bytes":{},"reclaimed_fraction":{},)"
                       R"("resident_pages":{},"hit_rate":{:.4f},"occupied_bytes":{},"sparse_floor_bytes":{},)"
                       R"("side_table_bytes":{},"sparse_groups":{})",
                       blocks, private_bytes, mincore_bytes, reserved_bytes, punches, flat_bytes(),
                       json_counter(reclaimed()), resident, hit_rate, occupied_bytes, sparse_floor_bytes,
                       side_table_bytes, sparse_groups);
  }
};

void append_json(const micro::Common& common, const std::string& line) {
  if (common.json_path.empty()) return;
  std::ofstream out(common.json_path, std::ios::app);
  out << line << "\n";
  if (!out) throw std::runtime_error("cannot write " + common.json_path);
}

// The size sweep: for each translation and data size, a freshly loaded B+tree, the
// YCSB-C lookups, then its translation memory; one table row and one JSON line per
// translation. Adds the failed lookups to *failures; returns the variants skipped.
unsigned run_size_sweep(const MicroMemoryConfig& cfg, const std::vector<std::string>& names, const std::string& params,
                        uint64_t* failures) {
  const micro::Common& common = cfg.common;
  const uint64_t record_bytes = kv::kKeyBytes + cfg.value_bytes;
  unsigned skipped = 0;  // variants that failed to load (load_or_skip)
  fmt::print("\nsize sweep: translation memory (private KB; reclaimed vs a flat array) after {} lookups\n{:<18}",
             cfg.sweep_lookups, "translation");
  for (uint64_t mb : cfg.data_mb) fmt::print("{:>22}", fmt::format("{} MB data", mb));
  fmt::print("\n");
  for (const std::string& name : names) {
    fmt::print("{:<18}", name);
    std::fflush(stdout);
    std::string points;
    skipped += !micro::load_or_skip("micro-memory", name, common, [&] {
      variants::with_pool_type(name, [&]<class Pool>() {
        for (uint64_t mb : cfg.data_mb) {
          const uint64_t records = std::max<uint64_t>((mb << 20) / record_bytes, 1);
          auto t = load_tree<Pool>(cfg, name, records);
          std::mt19937_64 rng(common.seed);
          ZipfGenerator zipf(std::max<uint64_t>(records, 2), cfg.theta);
          uint64_t bad = 0;
          std::string value;
          for (uint64_t i = 0; i < cfg.sweep_lookups; ++i) bad += !t->read(fnv1a64(zipf.next(rng)) % records, &value);
          MemoryPoint p = MemoryPoint::of(*t->pool, t->tree->space());
          *failures += bad;
          fmt::print("{:>22}", p.cell());
          std::fflush(stdout);
          points += fmt::format(R"({}{{"data_mb":{},"records":{},"failures":{},{}}})", points.empty() ? "" : ",", mb,
                                records, bad, p.json());
        }
      });
    });
    fmt::print("\n");
    append_json(common, fmt::format(R"({{"experiment":"memory_size","translation":"{}","params":{{{}}},)"
                                    R"("points":[{}],"machine":{{{}}}}})",
                                    name, params, points, machine_json()));
  }
  return skipped;
}

// The moving hot set: per translation, a B+tree of --moving-data-mb, uniform reads, then
// YCSB-D (5% inserts, reads of the latest keys), with the translation memory sampled along
// the way; one table row and one JSON line per translation. Adds the failures to
// *failures; returns the variants skipped.
unsigned run_moving_hot_set(const MicroMemoryConfig& cfg, const std::vector<std::string>& names,
                            const std::string& params, uint64_t* failures) {
  const micro::Common& common = cfg.common;
  const uint64_t record_bytes = kv::kKeyBytes + cfg.value_bytes;
  unsigned skipped = 0;  // variants that failed to load (load_or_skip)
  const uint64_t records0 = std::max<uint64_t>((cfg.moving_data_mb << 20) / record_bytes, 2);
  const auto uniform_ops = static_cast<uint64_t>(double(cfg.moving_ops) * cfg.moving_uniform);
  const uint64_t every = std::max<uint64_t>(cfg.moving_ops / std::max<uint32_t>(cfg.samples, 1), 1);
  fmt::print("\nmoving hot set: private KB at start / after the uniform reads / at the end (reclaimed)\n");
  for (const std::string& name : names) {
    skipped += !micro::load_or_skip("micro-memory", name, common, [&] {
      variants::with_pool_type(name, [&]<class Pool>() {
        auto t = load_tree<Pool>(cfg, name, records0);
        std::mt19937_64 rng(common.seed);
        std::uniform_int_distribution<uint64_t> uniform(0, records0 - 1);
        ZipfGenerator zipf(records0, cfg.theta);
        std::uniform_real_distribution<double> coin(0, 1);
        uint64_t next_key = records0;
        uint64_t bad = 0;
        std::string samples, value;
        std::vector<MemoryPoint> marks;
        auto sample = [&](uint64_t op) {
          MemoryPoint p = MemoryPoint::of(*t->pool, t->tree->space());
          samples += fmt::format(R"({}{{"op":{},"phase":"{}",{}}})", samples.empty() ? "" : ",", op,
                                 op <= uniform_ops ? "uniform" : "latest", p.json());
          // Three marks: the start, the end of the uniform reads (the start again when there
          // are none), the end.
          if (op == 0) marks.push_back(p);
          if (op == uniform_ops) marks.push_back(p);
          if (op == cfg.moving_ops) marks.push_back(p);
        };
        sample(0);
        for (uint64_t op = 1; op <= cfg.moving_ops; ++op) {
          if (op <= uniform_ops) {
            bad += !t->read(uniform(rng), &value);
          } else if (coin(rng) < 0.05) {
            std::string key(kv::kKeyBytes, '\0');
            kv::encode_key(next_key, key.data());
            kv::make_value(next_key, 0, cfg.value_bytes, &value);
            bad += !t->tree->insert(key, value);
            ++next_key;
          } else {
            uint64_t rank = zipf.next(rng);
            bad += !t->read(rank >= next_key ? 0 : next_key - 1 - rank, &value);
          }
          if (op % every == 0 || op == uniform_ops || op == cfg.moving_ops) sample(op);
        }
        *failures += bad;
        std::string line = fmt::format("{:<18}", name);
        for (const MemoryPoint& p : marks) line += fmt::format("{:>20}", p.cell());
        // The view outlives this call (it is formatted later): it holds field by value.
        auto kb = [&](auto field) {
          return fmt::join(marks | std::views::transform([field](const MemoryPoint& p) { return field(p) >> 10; }),
                           " / ");
        };
        fmt::print("{}   {} inserts, {} failures; least possible for 4 KB pages of entries: {} KB; "
                   "with 16-byte side entries: {} KB; side table: {} KB in {} sparse groups at the end\n",
                   line, next_key - records0, bad, kb([](const MemoryPoint& p) { return p.occupied_bytes; }),
                   kb([](const MemoryPoint& p) { return p.sparse_floor_bytes; }), marks.back().side_table_bytes >> 10,
                   marks.back().sparse_groups);
        std::fflush(stdout);
        append_json(common, fmt::format(R"({{"experiment":"memory_moving","translation":"{}","params":{{{},)"
                                        R"("records":{},"uniform_ops":{}}},"samples":[{}],"failures":{},"machine":{{{}}}}})",
                                        name, params, records0, uniform_ops, samples, bad, machine_json()));
      });
    });
  }
  return skipped;
}

}  // namespace

int run_micro_memory(const MicroMemoryConfig& cfg) {
  const micro::Common& common = cfg.common;
  check_size_mb(cfg.pool_mb, "--pool-mb");
  check_size_mb(cfg.moving_data_mb, "--moving-data-mb");
  for (uint64_t mb : cfg.data_mb) check_size_mb(mb, "--data-mb");
  const std::vector<std::string> names = micro::select_translations(common.translations, false, "micro-memory");
  const uint64_t record_bytes = kv::kKeyBytes + cfg.value_bytes;
  micro::print_banner(
      "micro-memory (Calico paper, Figure 10)",
      fmt::format("B+tree of {}-byte records on a {} MB pool (4 KB pages); size sweep {} MB with {} YCSB-C lookups "
                  "(Zipf {}); moving hot set on {} MB: {} ops ({:.0f}% uniform reads, then YCSB-D), {} samples; "
                  "translations: {}",
                  record_bytes, cfg.pool_mb, fmt::join(cfg.data_mb, "/"), cfg.sweep_lookups, cfg.theta,
                  cfg.moving_data_mb, cfg.moving_ops, 100 * cfg.moving_uniform, cfg.samples, fmt::join(names, ",")));
  const std::string params =
      fmt::format(R"("pool_mb":{},"page_size":4096,"key_bytes":{},"value_bytes":{},"theta":{},"sweep_lookups":{},)"
                  R"("moving_data_mb":{},"moving_ops":{},"sparse_group_at":{},"dense_group_at":{})",
                  cfg.pool_mb, kv::kKeyBytes, cfg.value_bytes, cfg.theta, cfg.sweep_lookups, cfg.moving_data_mb,
                  cfg.moving_ops, cfg.sparse_group_at, cfg.dense_group_at);
  uint64_t failures = 0;
  unsigned skipped = run_size_sweep(cfg, names, params, &failures);
  skipped += run_moving_hot_set(cfg, names, params, &failures);
  fmt::print("self-check failures (missing keys, wrong values, failed inserts): {}\n", failures);
  return failures == 0 && skipped == 0 ? 0 : 1;
}

}  // namespace calico::bench
