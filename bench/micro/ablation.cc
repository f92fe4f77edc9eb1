// micro-ablation: [Calico] Figure 11 on the graph BFS of micro-bfs (the paper uses HNSW;
// the BFS is its stand-in here). Cumulative steps, each on identical data:
//   1. hash_open, 4 KB-page frames, pinned reads          (skipped when not in the registry)
//   2. array translation, 4 KB-page frames, pinned reads   (PoolOptions.huge_pages = false)
//   3. + huge pages for the frames
//   4. + optimistic reads
//   5. + group prefetch of each visited node's neighbours
// Speedups against the first step and the previous one. huge_pages = false only withholds
// MADV_HUGEPAGE: the JSON records how many frame bytes the kernel backed with huge pages.
#include <fmt/format.h>

#include <algorithm>

#include "micro/micro.h"
#include "micro/graph_workload.h"
#include "calico/variants.h"

namespace calico::bench {

int run_micro_ablation(const MicroBfsConfig& cfg) {
  const micro::Common& common = cfg.common;
  const std::vector<std::string> known = variants::translation_names();
  const bool have_hash = std::find(known.begin(), known.end(), "hash_open") != known.end();
  const unsigned pools = have_hash ? 3 : 2;
  micro::check_memory_budget(pools * (graph_pool_mb(cfg) << 20), "micro-ablation");
  micro::print_banner("micro-ablation (Calico paper, Figure 11, on the BFS of micro-bfs)",
                      fmt::format("BFS on {} nodes x {} random neighbours; {} queries of {} visits per run; pool {} MB; "
                                  "{} repeats",
                                  cfg.nodes, cfg.degree, cfg.queries, cfg.visits, graph_pool_mb(cfg), common.repeat));
  if (!have_hash) fmt::print("note: 'hash_open' is not in the registry; the ablation starts at the array step\n");
  const std::vector<uint32_t> roots = bfs_roots(cfg);
  BfsReference ref;
  std::vector<micro::Case> cases;
  unsigned skipped = 0;  // variants that failed to load (load_or_skip)
  const BfsOptions pinned{GraphRead::kPinned, false, cfg.visits};
  if (have_hash) {
    skipped += !micro::load_or_skip("micro-ablation", "hash_open", common, [&] {
      variants::with_pool_type("hash_open", [&]<class Pool>() {
        cases.push_back(bfs_case(load_graph<Pool>(cfg, "hash_open-4k", false), "hash_open 4KB pinned", "bfs", pinned,
                                 &roots, &ref));
      });
    });
  }
  using ArrayPool = BufferPool;  // Calico's translation arrays
  cases.push_back(bfs_case(load_graph<ArrayPool>(cfg, "array-4k", false), "array 4KB pinned", "bfs", pinned, &roots, &ref));
  auto huge = load_graph<ArrayPool>(cfg, "array-2m", true);
  cases.push_back(bfs_case(huge, "+ huge pages", "bfs", pinned, &roots, &ref));
  cases.push_back(bfs_case(huge, "+ optimistic reads", "bfs", {GraphRead::kOptimistic, false, cfg.visits}, &roots, &ref));
  cases.push_back(bfs_case(huge, "+ group prefetch", "bfs", {GraphRead::kOptimistic, true, cfg.visits}, &roots, &ref));
  std::vector<micro::Result> results = micro::measure(cases, common);
  uint64_t failures =
      micro::report({"ablation", "node", graph_params_json(cfg), {"first", "previous"}}, results, common);
  return failures == 0 && skipped == 0 ? 0 : 1;
}

}  // namespace calico::bench
