// The translation microbenchmarks of [Calico] (section 3, Tables 2-4 and 6, Figure 1;
// section 6.5-6.6, Figures 10 and 11), run on every translation variant of
// include/calico/variants.h with the same index code and identical data:
//
//   calico_bench scan            heap SUM, sequential and random page order (Table 2,
//                                Figure 1a/b)                               bench/micro/scan.cc
//   calico_bench micro-btree     YCSB-C uniform lookups on a bulk-loaded B+tree (Table 3,
//                                Figure 1c)                                 bench/micro/btree.cc
//   calico_bench micro-bfs       graph BFS with and without group prefetch (Table 4,
//                                Figure 1d, Table 6)                        bench/micro/bfs.cc
//   calico_bench micro-ablation  hash_open -> array 4 KB frames pinned -> + huge pages ->
//                                + optimistic reads -> + group prefetch (Figure 11)
//                                                                          bench/micro/ablation.cc
//   calico_bench micro-memory    translation memory as data grows and as the hot set moves
//                                (Figure 10)                               bench/micro/memory.cc
//
// Timed experiments are single-threaded with everything resident (each checks that its
// pool never evicted), huge pages for frames where the variant uses them, a warm-up, then
// interleaved repeats (micro/harness.h). bench/experiments/micro.sh runs them all and
// bench/harness/report/micro_figures.py turns the JSON lines into docs/results/micro.md and its figures.
// Each run_* returns 0, or 1 when a self-check failed (a wrong sum, a missing key, a BFS
// that differs between variants) or a variant could not be loaded (it is then reported as
// SKIPPED, and the other variants still run). Bad options throw.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "micro/harness.h"

namespace calico::bench {

struct MicroBTreeConfig {
  micro::Common common;
  uint64_t records = 5'000'000;
  size_t value_bytes = 120;
  uint64_t lookups = 1'000'000;  // per run
  uint64_t pool_mb = 0;          // 0: sized from the records (all resident)
};
int run_micro_btree(const MicroBTreeConfig& cfg);

struct MicroBfsConfig {
  micro::Common common;
  uint32_t nodes = 256 * 1024;  // one 4 KB page each
  uint32_t degree = 44;
  uint64_t visits = 10'000;     // nodes visited per query
  uint32_t queries = 20;        // BFS queries per run, from random roots
  uint64_t pool_mb = 0;         // 0: nodes x 4 KB + 25% + 64 MB
  std::string prefetch = "both";  // micro-bfs: "off", "on" (group prefetch) or "both"
};
int run_micro_bfs(const MicroBfsConfig& cfg);
// Figure 11 on the same graph: common.translations is ignored (the steps are fixed).
int run_micro_ablation(const MicroBfsConfig& cfg);

struct MicroMemoryConfig {
  micro::Common common;
  std::vector<uint64_t> data_mb = {128, 256, 512, 1024};  // B-tree sizes of the size sweep
  uint64_t pool_mb = 64;
  size_t value_bytes = 120;
  double theta = 0.99;            // the size sweep's Zipf (YCSB-C, scrambled)
  uint64_t sweep_lookups = 200'000;
  uint64_t moving_data_mb = 256;  // the moving hot set: initial B-tree size
  uint64_t moving_ops = 600'000;  // first uniform reads (moving_uniform of them), then YCSB-D (read latest, 5% inserts)
  double moving_uniform = 1.0 / 3;  // fraction of moving_ops that are uniform reads (0: YCSB-D from the load on)
  uint32_t samples = 30;          // translation memory samples over the moving run
  // array_sparse's thresholds (PoolOptions::sparse_groups: sparse_at, dense_at).
  uint32_t sparse_group_at = PoolOptions{}.sparse_groups.sparse_at;
  uint32_t dense_group_at = PoolOptions{}.sparse_groups.dense_at;
};
int run_micro_memory(const MicroMemoryConfig& cfg);

}  // namespace calico::bench
