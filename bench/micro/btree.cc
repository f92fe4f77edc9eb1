// micro-btree: [Calico] Table 3 / Figure 1c. YCSB-C point lookups (uniform keys) on
// index::BasicBTree<Pool>, bulk-loaded with identical records in every translation's pool,
// everything resident; the same key sequence for every variant and run. Every lookup must
// find its key with the value that encodes it.
#include <fmt/format.h>

#include <random>
#include <string>
#include <vector>

#include "ycsb/kv_store.h"
#include "micro/micro.h"
#include "micro/data.h"
#include "calico/variants.h"

namespace calico::bench {

int run_micro_btree(const MicroBTreeConfig& cfg) {
  const micro::Common& common = cfg.common;
  if (cfg.records == 0 || cfg.lookups == 0) throw std::invalid_argument("records and lookups must be > 0");
  check_size_mb(cfg.pool_mb, "--pool-mb");
  const std::vector<std::string> names = micro::select_translations(common.translations, true, "micro-btree");
  // Bulk-loaded leaves are 90% full; an entry costs its key, value and about 24 bytes of
  // slot and length fields: 1.3x the payload covers leaves, inner nodes and fences.
  const uint64_t tree_mb = cfg.records * (kv::kKeyBytes + cfg.value_bytes + 24) * 13 / 10 >> 20;
  const uint64_t pool_mb = cfg.pool_mb ? cfg.pool_mb : tree_mb + tree_mb / 4 + 64;
  micro::check_memory_budget(names.size() * (pool_mb << 20), "micro-btree");
  micro::print_banner("micro-btree (Calico paper, Table 3, Figure 1c)",
                      fmt::format("YCSB-C uniform lookups: {} records of {}-byte keys and {}-byte values, bulk-loaded "
                                  "into 4 KB pages; {} lookups per run; pool {} MB; {} repeats; translations: {}",
                                  cfg.records, kv::kKeyBytes, cfg.value_bytes, cfg.lookups, pool_mb, common.repeat,
                                  fmt::join(names, ",")));

  std::vector<uint64_t> keys(cfg.lookups);
  std::mt19937_64 rng(common.seed);
  std::uniform_int_distribution<uint64_t> uniform(0, cfg.records - 1);
  for (uint64_t& k : keys) k = uniform(rng);

  std::vector<micro::Case> cases;
  unsigned skipped = 0;  // variants that failed to load (load_or_skip)
  uint64_t tree_pages = 0;
  for (const std::string& name : names) {
    skipped += !micro::load_or_skip("micro-btree", name, common, [&] {
      variants::with_pool_type(name, [&]<class Pool>() {
        PoolOptions opt;
        opt.data_dir = common.data_dir + "/" + name;
        opt.page_size = 4096;
        opt.pool_bytes = pool_mb << 20;
        opt.max_blocks_per_space = micro::space_capacity(opt.pool_bytes / opt.page_size);
        auto t = load_ycsb_tree<Pool>(opt, cfg.records, cfg.value_bytes);
        micro::require_resident(*t->pool, name);
        tree_pages = t->pool->space_blocks(t->tree->space());
        if (!common.quiet) std::fprintf(stderr, "%s: loaded %llu tree pages\n", name.c_str(), (unsigned long long)tree_pages);
        cases.push_back({name, "ycsb-c uniform",
                         [t, &keys]() {
                           micro::RunOutcome o{keys.size(), 0};
                           std::string value;
                           for (uint64_t k : keys) o.failures += !t->read(k, &value);
                           return o;
                         },
                         micro::pool_json(*t->pool)});
      });
    });
  }
  std::vector<micro::Result> results = micro::measure(cases, common);
  uint64_t failures = micro::report(
      {"btree", "lookup",
       fmt::format(R"("records":{},"key_bytes":{},"value_bytes":{},"lookups_per_run":{},"page_size":4096,)"
                   R"("pool_mb":{},"tree_pages":{},"distribution":"uniform")",
                   cfg.records, kv::kKeyBytes, cfg.value_bytes, cfg.lookups, pool_mb, tree_pages)},
      results, common);
  return failures == 0 && skipped == 0 ? 0 : 1;
}

}  // namespace calico::bench
