// The graph BFS workload shared by micro-bfs (Table 4, Figure 1d, Table 6) and
// micro-ablation (Figure 11): a pool holding the random graph of micro/data.h (one 4 KB
// page per node), and the Case that runs `queries` searches of `visits` nodes each from
// fixed random roots. Every run must produce the same visits and digest as the first run
// of any case (the BFS is deterministic: the same graph, roots and limits everywhere).
#pragma once

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "micro/graph.h"
#include "micro/micro.h"
#include "micro/data.h"

namespace calico::bench {

template <class Pool>
struct GraphTarget {
  micro::ScratchPool<Pool> pool;
  std::optional<BasicGraph<Pool>> graph;  // destroyed before the pool
  std::optional<BfsState> state;
};

inline uint64_t graph_pool_mb(const MicroBfsConfig& cfg) {
  check_size_mb(cfg.pool_mb, "--pool-mb");
  const uint64_t data_mb = (uint64_t{cfg.nodes} + 1) * 4096 >> 20;
  return cfg.pool_mb ? cfg.pool_mb : data_mb + data_mb / 4 + 64;
}

inline std::string graph_params_json(const MicroBfsConfig& cfg) {
  return fmt::format(R"("nodes":{},"degree":{},"visits_per_query":{},"queries_per_run":{},"page_size":4096,)"
                     R"("pool_mb":{})",
                     cfg.nodes, cfg.degree, cfg.visits, cfg.queries, graph_pool_mb(cfg));
}

// Opens a pool in data_dir/<dir_name> and writes the graph into it; checks it stayed resident.
template <class Pool>
std::shared_ptr<GraphTarget<Pool>> load_graph(const MicroBfsConfig& cfg, const std::string& dir_name, bool huge_pages) {
  if (cfg.nodes == 0 || cfg.degree == 0 || cfg.visits == 0 || cfg.queries == 0) {
    throw std::invalid_argument("nodes, degree, visits and queries must be > 0");
  }
  PoolOptions opt;
  opt.data_dir = cfg.common.data_dir + "/" + dir_name;
  opt.page_size = 4096;
  opt.pool_bytes = graph_pool_mb(cfg) << 20;
  opt.max_blocks_per_space = micro::space_capacity(opt.pool_bytes / opt.page_size);
  opt.huge_pages = huge_pages;
  auto t = std::make_shared<GraphTarget<Pool>>();
  t->pool = micro::open_scratch_pool<Pool>(opt);
  const uint64_t seed = cfg.common.seed;
  const uint32_t nodes = cfg.nodes, degree = cfg.degree;
  t->graph.emplace(BasicGraph<Pool>::create(
      *t->pool, "graph", nodes,
      [&](uint32_t v, std::vector<uint32_t>* out) { random_neighbours(seed, nodes, degree, v, out); }));
  t->state.emplace(nodes);
  micro::require_resident(*t->pool, dir_name);
  return t;
}

// The search roots: `queries` random nodes, the same for every case.
inline std::vector<uint32_t> bfs_roots(const MicroBfsConfig& cfg) {
  std::mt19937_64 rng(cfg.common.seed + 1);
  std::vector<uint32_t> roots(cfg.queries);
  for (uint32_t& r : roots) r = static_cast<uint32_t>(rng() % cfg.nodes);
  return roots;
}

// The first run's totals, which every other run must reproduce.
struct BfsReference {
  bool set = false;
  uint64_t visited = 0, probes = 0, digest = 0;
};

template <class Pool>
micro::Case bfs_case(std::shared_ptr<GraphTarget<Pool>> t, std::string label, std::string workload,
                     BfsOptions opt, const std::vector<uint32_t>* roots, BfsReference* ref) {
  std::string details = micro::pool_json(*t->pool) +
                        fmt::format(R"(,"read":"{}","prefetch":{})",
                                    opt.read == GraphRead::kOptimistic ? "optimistic" : "pinned", opt.prefetch);
  return {std::move(label), std::move(workload),
          [t, opt, roots, ref]() {
            BfsReference got{true};
            for (uint32_t root : *roots) {
              BfsResult r = t->graph->bfs(root, opt, *t->state);
              got.visited += r.visited;
              got.probes += r.probes;
              got.digest = GraphFormat::fold(got.digest, r.digest);
            }
            if (!ref->set) *ref = got;
            bool same = got.visited == ref->visited && got.probes == ref->probes && got.digest == ref->digest;
            return micro::RunOutcome{got.visited, same ? 0u : 1u};
          },
          std::move(details)};
}

}  // namespace calico::bench
