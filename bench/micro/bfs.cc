// micro-bfs: [Calico] Table 4 / Figure 1d and Table 6. Breadth-first searches on a random
// graph (one 4 KB page per node, `degree` random neighbours each), reading neighbour lists
// and probing every neighbour's payload with optimistic reads, without and with one group
// prefetch (Algorithm 4) of each visited node's neighbours; every translation, identical
// graph and roots, everything resident. Prints Table 6: the prefetch gain per translation.
#include <fmt/format.h>

#include <algorithm>

#include "micro/micro.h"
#include "micro/graph_workload.h"
#include "calico/variants.h"

namespace calico::bench {

int run_micro_bfs(const MicroBfsConfig& cfg) {
  const micro::Common& common = cfg.common;
  const std::vector<std::string> names = micro::select_translations(common.translations, true, "micro-bfs");
  micro::check_memory_budget(names.size() * (graph_pool_mb(cfg) << 20), "micro-bfs");
  micro::print_banner("micro-bfs (Calico paper, Table 4, Figure 1d, Table 6)",
                      fmt::format("BFS on {} nodes x {} random neighbours (4 KB page per node); {} queries of {} "
                                  "visits per run; optimistic reads, group prefetch {}; pool {} MB; {} repeats; "
                                  "translations: {}",
                                  cfg.nodes, cfg.degree, cfg.queries, cfg.visits,
                                  cfg.prefetch == "both" ? "off/on" : cfg.prefetch, graph_pool_mb(cfg), common.repeat,
                                  fmt::join(names, ",")));
  const std::vector<uint32_t> roots = bfs_roots(cfg);
  BfsReference ref;
  std::vector<micro::Case> cases;
  unsigned skipped = 0;  // variants that failed to load (load_or_skip)
  for (const std::string& name : names) {
    skipped += !micro::load_or_skip("micro-bfs", name, common, [&] {
      variants::with_pool_type(name, [&]<class Pool>() {
        auto t = load_graph<Pool>(cfg, name, /*huge_pages=*/true);  // both workloads share it
        for (bool prefetch : {false, true}) {
          if (cfg.prefetch != "both" && prefetch != (cfg.prefetch == "on")) continue;
          cases.push_back(bfs_case(t, name, prefetch ? "bfs + group prefetch" : "bfs",
                                   {GraphRead::kOptimistic, prefetch, cfg.visits}, &roots, &ref));
        }
      });
    });
  }
  std::stable_sort(cases.begin(), cases.end(),
                   [](const micro::Case& a, const micro::Case& b) { return a.workload.size() < b.workload.size(); });
  std::vector<micro::Result> results = micro::measure(cases, common);
  uint64_t failures = micro::report({"bfs", "node", graph_params_json(cfg)}, results, common);
  fmt::print("\nTable 6: group prefetch gain (BFS time without / with prefetch)\n");
  for (const std::string& name : names) {
    const micro::Result* without = nullptr;
    const micro::Result* with = nullptr;
    for (const micro::Result& r : results) {
      if (r.c->translation != name) continue;
      (r.c->workload == "bfs" ? without : with) = &r;
    }
    if (without == nullptr || with == nullptr) continue;
    fmt::print("  {:<20}{:>8.3f}x   ({:.1f} -> {:.1f} ns/node, medians)\n", name,
               micro::paired_speedup(*without, *with), without->median_ns, with->median_ns);
  }
  fmt::print("checked: every run visited {} nodes with the same digest\n", ref.visited);
  return failures == 0 && skipped == 0 ? 0 : 1;
}

}  // namespace calico::bench
