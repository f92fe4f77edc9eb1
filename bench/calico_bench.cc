// calico_bench: the benchmark driver. One subcommand per experiment.
//   demo   the README's main job (bench/demo/demo.h)
//   ycsb   YCSB A-F over calico, lmdb, rocksdb, wiredtiger (bench/ycsb/ycsb.h)
//   scan (alias micro-scan), micro-btree, micro-bfs, micro-ablation, micro-memory
//          the translation microbenchmarks on every translation variant (bench/micro/micro.h)
//   vector HNSW / IVF vector search on the pool, in memory and larger than memory (bench/vector/vector.h)
//   vector-filtered  filtered HNSW search: graph against exact scan, and where they cross (bench/vector/filtered.h)
//   vector-codes  RaBitQ and PQ codes: size, encode and estimate speed, recall after re-ranking (bench/vector/codes.h)
//   vector-coded  larger than memory: the coded HNSW (codes resident) against the full-vector HNSW (bench/vector/coded.h)
//   tpcc   TPC-C on the B+trees, per translation, and on the peers (bench/tpcc/tpcc.h)
//   tier-calibrate  the emulated far tier's latency and bandwidth, measured (bench/tiers/tier_calibrate.h)
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "demo/demo.h"
#include "micro/graph.h"
#include "micro/micro.h"
#include "micro/scan.h"
#include "common/sizes.h"
#include "tiers/tier_calibrate.h"
#include "tpcc/tpcc.h"
#include "calico/variants.h"
#include "vector/filtered.h"
#include "vector/codes.h"
#include "vector/coded.h"
#include "vector/vector.h"
#include "ycsb/ycsb.h"

namespace {

// Every size in MB on the command line: 0 .. kMaxSizeMb, so that "-1" (which CLI11 would
// read into an unsigned option as a huge number) and sizes that overflow << 20 are rejected
// with the option's name.
const CLI::Range kSizeMb(0.0, double(calico::bench::kMaxSizeMb), "MB");

// The options every microbenchmark takes (micro/harness.h, Common).
void add_micro_options(CLI::App* a, calico::bench::micro::Common& c) {
  a->add_option("--translations", c.translations,
                fmt::format("translation variants, comma list (default: all of {})",
                            fmt::join(calico::variants::translation_names(), ",")))
      ->delimiter(',');
  a->add_option("--repeat", c.repeat, "timed rounds after the warm-up (variants interleaved in each)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  a->add_option("--min-seconds", c.min_seconds, "each timed run repeats its pass until it lasted this long")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  a->add_option("--data-dir", c.data_dir, "directory for the pools' files (one subdirectory each)")->capture_default_str();
  a->add_option("--json", c.json_path, "append one JSON line per translation and workload to this file");
  a->add_option("--seed", c.seed, "random seed")->capture_default_str();
  a->add_flag("!--no-counters", c.counters, "do not read hardware counters (perf_event_open)");
}

// The graph options of micro-bfs and micro-ablation.
void add_graph_options(CLI::App* a, calico::bench::MicroBfsConfig& g) {
  a->add_option("--nodes", g.nodes, "graph nodes (one 4 KB page each)")->capture_default_str()->check(CLI::Range(1u, 1u << 28));
  a->add_option("--degree", g.degree, "random neighbours per node")->capture_default_str()->check(CLI::Range(1u, calico::bench::GraphFormat::kMaxDegree));
  a->add_option("--visits", g.visits, "nodes visited per BFS query")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  a->add_option("--queries", g.queries, "BFS queries (random roots) per run")->capture_default_str()->check(CLI::Range(1u, 1u << 20));
  a->add_option("--pool-mb", g.pool_mb, "pool size (0: graph + 25% + 64 MB, all resident)")->capture_default_str()->check(kSizeMb);
}

// `calico_bench demo` and its options (demo/demo.h).
CLI::App* add_demo_command(CLI::App& app, calico::bench::DemoConfig& demo) {
  CLI::App* d = app.add_subcommand("demo", "larger-than-pool random reads/writes on one space");
  d->add_option("--data-dir", demo.data_dir, "directory for the data files")->capture_default_str();
  d->add_option("--data-mb", demo.data_mb, "size of the space")->capture_default_str()->check(CLI::Range(1, 1 << 22));
  d->add_option("--pool-mb", demo.pool_mb, "size of the buffer pool")->capture_default_str()->check(CLI::Range(1, 1 << 22));
  d->add_option("--page-size", demo.page_size, "page size in bytes")->capture_default_str()->check(CLI::IsMember({4096, 8192, 16384}));
  d->add_option("--threads", demo.threads, "worker threads")->capture_default_str()->check(CLI::Range(1, 256));
  d->add_option("--seconds", demo.seconds, "run time")->capture_default_str()->check(CLI::Range(0.1, 86400.0));
  d->add_option("--write-fraction", demo.write_fraction, "fraction of operations that write")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  d->add_option("--optimistic-fraction", demo.optimistic_fraction, "fraction of reads done optimistically")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  d->add_option("--distribution", demo.distribution, "page access distribution")->capture_default_str()->check(CLI::IsMember({"zipf", "uniform"}));
  d->add_option("--zipf-theta", demo.zipf_theta, "Zipf skew")->capture_default_str()->check(CLI::Range(0.01, 0.999));
  d->add_option("--prefetch-group", demo.prefetch_group, "pages prefetched before each read (0 = off)")->capture_default_str()->check(CLI::Range(0, 256));
  d->add_option("--seed", demo.seed, "random seed")->capture_default_str();
  d->add_flag("--keep-data", demo.keep_data, "keep the data directory afterwards");
  d->add_flag("!--no-atomic-flush", demo.atomic_flush, "turn off the rollback journal (PoolOptions::atomic_flush)");
  d->add_option("--json", demo.json_path, "append a JSON line with the results to this file");
  return d;
}
// `calico_bench ycsb` and its options (ycsb/ycsb.h).
CLI::App* add_ycsb_command(CLI::App& app, calico::bench::YcsbConfig& ycsb) {
  CLI::App* y = app.add_subcommand("ycsb", "YCSB workloads A-F over Calico's B+tree and peer engines");
  y->add_option("--system", ycsb.systems, "calico, calico:<translation> (e.g. calico:vmcache, calico:array_tiered), lmdb, rocksdb, wiredtiger (repeatable or comma list)")->delimiter(',')->capture_default_str();
  y->add_option("--workload", ycsb.workloads, "A..F (repeatable or comma list)")->delimiter(',')->capture_default_str()->check(CLI::IsMember({"A", "B", "C", "D", "E", "F", "a", "b", "c", "d", "e", "f"}));
  y->add_option("--distribution", ycsb.distribution, "uniform, zipf or latest (default: YCSB's, zipf; D: latest)")->check(CLI::IsMember({"uniform", "zipf", "latest"}));
  y->add_option("--theta", ycsb.theta, "Zipf skew")->capture_default_str()->check(CLI::Range(0.01, 0.999));
  y->add_option("--records", ycsb.records, "records loaded")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  y->add_option("--value-bytes", ycsb.value_bytes, "value size in bytes")->capture_default_str()->check(CLI::Range(16, 500));
  y->add_option("--threads", ycsb.threads, "worker threads (list, e.g. 1,2)")->delimiter(',')->capture_default_str()->check(CLI::Range(1, 256));
  auto* secs = y->add_option("--seconds", ycsb.seconds, "run time per run")->capture_default_str()->check(CLI::Range(0.1, 86400.0));
  y->add_option("--ops", ycsb.ops, "operations per run (instead of --seconds)")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 50))->excludes(secs);
  y->add_option("--warmup-seconds", ycsb.warmup_seconds, "unrecorded run of each workload before it (0: none, as YCSB)")->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  y->add_option("--far-mb", ycsb.far_mb, "calico with a tiered translation (calico:array_tiered): a far frame tier of this size behind the pool (docs/results/tiers.md; 0: none)")->capture_default_str()->check(kSizeMb);
  y->add_option("--far-tier", ycsb.far_tier, "calico's far tier: remote-numa, cxl (emulated), local, or numa:<node>")->capture_default_str();
  y->add_option("--cache-mb", ycsb.cache_mb, "pool / block cache / WT cache in MB (0: in memory, 3x the data + 64 MB)")->capture_default_str()->check(kSizeMb);
  y->add_option("--data-dir", ycsb.data_dir, "directory for the engines' data (one subdirectory each)")->capture_default_str();
  y->add_option("--repeat", ycsb.repeat, "runs per configuration (systems interleaved)")->capture_default_str()->check(CLI::Range(1, 1000));
  y->add_option("--json", ycsb.json_path, "append a JSON line per run to this file");
  y->add_option("--seed", ycsb.seed, "random seed")->capture_default_str();
  y->add_flag("--keep-data", ycsb.keep_data, "keep the data directories afterwards");
  return y;
}
// `calico_bench scan` and its options (micro/scan.h).
CLI::App* add_scan_command(CLI::App& app, calico::bench::ScanConfig& scan) {
  CLI::App* sc = app.add_subcommand("scan", "heap SUM scans, sequential and random page order, per translation "
                                            "(Calico paper, Table 2, Figure 1a/b)");
  sc->alias("micro-scan");
  add_micro_options(sc, scan.common);
  sc->add_option("--data-mb", scan.data_mb, "heap size per translation")->capture_default_str()->check(CLI::Range(1, 1 << 22));
  sc->add_option("--pool-mb", scan.pool_mb, "pool size (0: data + 25% + 64 MB, all resident)")->capture_default_str()->check(kSizeMb);
  sc->add_option("--page-size", scan.page_size, "page size in bytes")->capture_default_str()->check(CLI::IsMember({4096, 8192, 16384}));
  sc->add_option("--row-bytes", scan.row_bytes, "row size in bytes")->capture_default_str()->check(CLI::Range(16, 16000));
  sc->add_option("--prefetch-distance", scan.prefetch_distance, "group prefetch distance in pages (0 = off)")->capture_default_str()->check(CLI::Range(0, 256));
  sc->add_flag("!--no-pinned", scan.pinned, "skip the pinned (shared latch) workloads");
  return sc;
}
// `calico_bench micro-btree` and its options (micro/micro.h).
CLI::App* add_micro_btree_command(CLI::App& app, calico::bench::MicroBTreeConfig& bt) {
  CLI::App* mb = app.add_subcommand("micro-btree", "YCSB-C uniform B+tree lookups per translation (Calico paper, Table 3, Figure 1c)");
  add_micro_options(mb, bt.common);
  mb->add_option("--records", bt.records, "records bulk-loaded")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  mb->add_option("--value-bytes", bt.value_bytes, "value size in bytes")->capture_default_str()->check(CLI::Range(16, 500));
  mb->add_option("--lookups", bt.lookups, "lookups per run")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  mb->add_option("--pool-mb", bt.pool_mb, "pool size (0: sized from the records, all resident)")->capture_default_str()->check(kSizeMb);
  return mb;
}
// `calico_bench micro-bfs` and its options (micro/micro.h).
CLI::App* add_micro_bfs_command(CLI::App& app, calico::bench::MicroBfsConfig& bfs) {
  CLI::App* mf = app.add_subcommand("micro-bfs", "graph BFS per translation, group prefetch off/on (Calico paper, Table 4, Figure 1d, Table 6)");
  add_micro_options(mf, bfs.common);
  add_graph_options(mf, bfs);
  mf->add_option("--prefetch", bfs.prefetch, "which BFS to run: without group prefetch, with it, or both")
      ->capture_default_str()
      ->check(CLI::IsMember({"both", "off", "on"}));
  return mf;
}
// `calico_bench micro-ablation` and its options (micro/micro.h).
CLI::App* add_micro_ablation_command(CLI::App& app, calico::bench::MicroBfsConfig& abl) {
  CLI::App* ma = app.add_subcommand("micro-ablation", "hash_open -> array 4 KB pinned -> + huge pages -> + optimistic -> "
                                                      "+ group prefetch, on the BFS (Calico paper, Figure 11)");
  add_micro_options(ma, abl.common);
  add_graph_options(ma, abl);
  return ma;
}
// `calico_bench micro-memory` and its options (micro/micro.h).
CLI::App* add_micro_memory_command(CLI::App& app, calico::bench::MicroMemoryConfig& mem) {
  CLI::App* mm = app.add_subcommand("micro-memory", "translation memory as data grows and as the hot set moves (Calico paper, Figure 10)");
  add_micro_options(mm, mem.common);
  mm->add_option("--data-mb", mem.data_mb, "B+tree sizes of the size sweep (comma list)")->delimiter(',')->capture_default_str()->check(CLI::Range(1, 1 << 20));
  mm->add_option("--pool-mb", mem.pool_mb, "pool size (smaller than the data)")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  mm->add_option("--value-bytes", mem.value_bytes, "value size in bytes")->capture_default_str()->check(CLI::Range(16, 500));
  mm->add_option("--theta", mem.theta, "Zipf skew of the size sweep's lookups and of read-latest")->capture_default_str()->check(CLI::Range(0.01, 0.999));
  mm->add_option("--sweep-lookups", mem.sweep_lookups, "YCSB-C lookups per size")->capture_default_str();
  mm->add_option("--moving-data-mb", mem.moving_data_mb, "initial B+tree size of the moving hot set")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  mm->add_option("--moving-ops", mem.moving_ops, "operations of the moving hot set (uniform reads, then YCSB-D)")->capture_default_str();
  mm->add_option("--moving-uniform", mem.moving_uniform, "fraction of the moving hot set's operations that are uniform reads, first (0: YCSB-D right after the load, as the paper's)")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  mm->add_option("--samples", mem.samples, "translation memory samples over the moving run")->capture_default_str()->check(CLI::Range(1u, 100000u));
  mm->add_option("--sparse-group-at", mem.sparse_group_at, "array_sparse: a group left with this many resident pages moves to the side table")->capture_default_str()->check(CLI::Range(1u, 511u));
  mm->add_option("--dense-group-at", mem.dense_group_at, "array_sparse: a sparse group with this many moves back to the array")->capture_default_str()->check(CLI::Range(2u, 512u));
  return mm;
}
// `calico_bench vector-filtered` and its options (vector/filtered.h).
CLI::App* add_vector_filtered_command(CLI::App& app, calico::bench::FilteredConfig& f) {
  CLI::App* v = app.add_subcommand("vector-filtered", "filtered HNSW search: a graph search that keeps only allowed rows against an exact scan of "
                                                      "them, per filter fraction, kind and ef; where their costs cross (HnswSearchOptions::exact_scan_below)");
  v->add_option("--dataset", f.dataset, "clustered (SIFT-like) or embedding (unit vectors, --metric ip by default, 384-d unless --dim)")->capture_default_str()->check(CLI::IsMember({"clustered", "embedding"}));
  v->add_option("--n", f.n, "base vectors")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  v->add_option("--dim", f.dim, "dimensions")->capture_default_str()->check(CLI::Range(1u, 4096u));
  v->add_option("--clusters", f.clusters, "clusters or topics of the generator; a correlated filter allows regions of n / clusters rows")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  v->add_option("--queries", f.queries, "query vectors")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  v->add_option("--data-seed", f.data_seed, "seed of the generator, the index levels and the filters")->capture_default_str();
  v->add_option("--metric", f.metric, "l2, ip or cosine (default: l2 for clustered, ip for embedding)")->check(CLI::IsMember({"l2", "ip", "cosine"}));
  v->add_option("--M", f.M, "HNSW links per node (2M on level 0)")->capture_default_str()->check(CLI::Range(2u, 256u));
  v->add_option("--ef-construction", f.ef_construction, "HNSW beam width while building")->capture_default_str()->check(CLI::Range(1u, 1u << 16));
  v->add_option("--build-threads", f.build_threads, "threads inserting while building")->capture_default_str()->check(CLI::Range(1, 256));
  v->add_option("--ef", f.ef, "ef_search values (comma list)")->delimiter(',')->capture_default_str()->check(CLI::Range(1u, 1u << 16));
  v->add_option("--fractions", f.fractions, "fractions of the rows a filter allows (comma list, each in (0, 1])")->delimiter(',')->capture_default_str();
  v->add_option("--kinds", f.kinds, "uncorrelated (rows at random), correlated (regions of the space) (comma list)")->delimiter(',')->capture_default_str()->check(CLI::IsMember({"uncorrelated", "correlated"}));
  v->add_option("--k", f.k, "neighbours per query (recall@k)")->capture_default_str()->check(CLI::Range(1u, 100u));
  v->add_option("--repeat", f.repeat, "timed rounds after the warm-up (cases interleaved)")->capture_default_str()->check(CLI::Range(1, 1000));
  v->add_option("--min-seconds", f.min_seconds, "each timed run repeats the whole query set until it lasted this long")->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  v->add_option("--cache-dir", f.cache_dir, "where generated datasets are cached")->capture_default_str();
  v->add_option("--data-dir", f.data_dir, "where the scratch pool goes")->capture_default_str();
  v->add_option("--json", f.json_path, "append one JSON line per case, then one per kind and ef (the crossing), to this file");
  return v;
}

// `calico_bench vector` and its options (vector/vector.h).
CLI::App* add_vector_command(CLI::App& app, calico::bench::VectorConfig& vec) {
  CLI::App* v = app.add_subcommand("vector", "HNSW and IVF-Flat vector search on the pool: recall@k and QPS per ef_search / "
                                             "nprobe, threads, translation and pool size; the Figure 11 ablation");
  v->add_option("--dataset", vec.dataset, "clustered (generated, SIFT-like), embedding (generated, like text embeddings: unit vectors, anisotropic; --metric ip by default) or files (--base/--query[/--gt])")->capture_default_str()->check(CLI::IsMember({"clustered", "embedding", "files"}));
  v->add_option("--n", vec.n, "base vectors (clustered)")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  v->add_option("--dim", vec.dim, "dimensions (generated sets; embedding: 384 unless given)")->capture_default_str()->check(CLI::Range(1u, 4096u));
  v->add_option("--clusters", vec.clusters, "Gaussian clusters (clustered) or topics (embedding)")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  v->add_option("--queries", vec.queries, "query vectors (clustered)")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  v->add_option("--data-seed", vec.data_seed, "seed of the generator and of the index levels")->capture_default_str();
  v->add_option("--metric", vec.metric, "l2, ip or cosine (embedding: ip unless given)")->capture_default_str()->check(CLI::IsMember({"l2", "ip", "cosine"}));
  v->add_option("--base", vec.base_path, ".fvecs/.bvecs base vectors (files)");
  v->add_option("--query", vec.query_path, ".fvecs/.bvecs queries (files)");
  v->add_option("--gt", vec.gt_path, ".ivecs ground truth (files; computed and cached when missing)");
  v->add_option("--cache-dir", vec.cache_dir, "where generated datasets and ground truth are cached")->capture_default_str();
  v->add_option("--index", vec.indexes, "hnsw, ivf (comma list)")->delimiter(',')->capture_default_str()->check(CLI::IsMember({"hnsw", "ivf"}));
  v->add_option("--M", vec.M, "HNSW links per node (2M on level 0)")->capture_default_str()->check(CLI::Range(2u, 256u));
  v->add_option("--ef-construction", vec.ef_construction, "HNSW beam width while building")->capture_default_str()->check(CLI::Range(1u, 1u << 16));
  v->add_option("--ef", vec.ef, "HNSW ef_search sweep (comma list)")->delimiter(',')->capture_default_str()->check(CLI::Range(1u, 1u << 16));
  v->add_option("--nlist", vec.nlist, "IVF lists (0: 4 sqrt(n) rounded down to a power of two)")->capture_default_str();
  v->add_option("--nprobe", vec.nprobe, "IVF nprobe sweep (comma list)")->delimiter(',')->capture_default_str()->check(CLI::Range(1u, 1u << 20));
  v->add_option("--ivf-batch", vec.ivf_batch, "IVF queries per search_batch call (1: one search per query)")->capture_default_str()->check(CLI::Range(1u, 1u << 16));
  v->add_option("--hnsw-batch", vec.hnsw_batch, fmt::format("HNSW queries in flight per thread (search_batch; 1: one search at a time; comma list: a sweep; at most {})", calico::bench::kMaxHnswBatch))->delimiter(',')->capture_default_str()->check(CLI::Range(1u, calico::bench::kMaxHnswBatch));
  v->add_option("--k", vec.k, "neighbours per query (recall@k)")->capture_default_str()->check(CLI::Range(1u, 100u));
  v->add_option("--translations", vec.translations, fmt::format("translation variants, comma list (known: {})", fmt::join(calico::variants::translation_names(), ",")))->delimiter(',')->capture_default_str();
  v->add_option("--threads", vec.threads, "search threads (comma list)")->delimiter(',')->capture_default_str()->check(CLI::Range(1, 256));
  v->add_option("--build-threads", vec.build_threads, "threads inserting while building HNSW")->capture_default_str()->check(CLI::Range(1, 256));
  v->add_option("--pool-fraction", vec.pool_fractions, "pool sizes: 0 = in memory, f in (0,1) = f x index bytes, O_DIRECT (comma list)")->delimiter(',')->capture_default_str();
  v->add_option("--repeat", vec.repeat, "timed rounds after the warm-up (cases interleaved)")->capture_default_str()->check(CLI::Range(1, 1000));
  v->add_option("--hnsw-page-size", vec.hnsw_page_size, "HNSW's pool page size in bytes (indexes are built and kept per size)")->capture_default_str()->check(CLI::IsMember({4096, 8192, 16384}));
  v->add_option("--ivf-page-size", vec.ivf_page_size, "IVF's pool page size in bytes (indexes are built and kept per size)")->capture_default_str()->check(CLI::IsMember({4096, 8192, 16384}));
  v->add_option("--min-seconds", vec.min_seconds, "each timed run repeats the whole query set until it lasted this long")->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  v->add_flag("!--no-optimistic", vec.optimistic, "pinned reads instead of optimistic ones");
  v->add_flag("!--no-prefetch", vec.prefetch, "no group prefetch");
  v->add_option("--lookahead", vec.lookahead, "HNSW larger than memory: when a hop reads pages, also read ahead the neighbours of the next N candidates (0: off; comma list: a sweep)")->delimiter(',')->capture_default_str()->check(CLI::Range(0u, 16u));
  v->add_flag("!--no-prewarm", vec.prewarm, "in-memory pools: no prewarm (pages load in first-query order)");
  v->add_flag("--ablation", vec.ablation, "also run Figure 11 on HNSW: hash_open -> array 4 KB -> + huge pages -> + optimistic -> + prefetch");
  v->add_option("--ablation-ef", vec.ablation_ef, "ef_search of the ablation")->capture_default_str()->check(CLI::Range(1u, 1u << 16));
  v->add_option("--data-dir", vec.data_dir, "where built indexes are kept and the per-run pool copies go")->capture_default_str();
  v->add_option("--json", vec.json_path, "append one JSON line per case to this file");
  v->add_flag("--rebuild", vec.rebuild, "build the indexes again even when a built copy exists");
  v->add_flag("--build-only", vec.build_only, "build (or check) the indexes and stop");
  return v;
}
// `calico_bench vector-codes` and its options (vector/codes.h).
CLI::App* add_vector_codes_command(CLI::App& app, calico::bench::VectorCodesConfig& vc) {
  CLI::App* v = app.add_subcommand("vector-codes", "RaBitQ and PQ vector codes: bytes per vector, encode time, estimate "
                                                   "throughput, recall@k after re-ranking the best R exactly (docs/results/vector_codes.md)");
  v->add_option("--dataset", vc.dataset, "clustered (SIFT-like, l2) or embedding (unit vectors, ip; dim 384 unless given)")->capture_default_str()->check(CLI::IsMember({"clustered", "embedding"}));
  v->add_option("--n", vc.n, "base vectors")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  v->add_option("--dim", vc.dim, "dimensions")->capture_default_str()->check(CLI::Range(1u, 4096u));
  v->add_option("--clusters", vc.clusters, "generator clusters (clustered) or topics (embedding)")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  v->add_option("--queries", vc.queries, "query vectors")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  v->add_option("--data-seed", vc.data_seed, "seed of the generator")->capture_default_str();
  v->add_option("--metric", vc.metric, "l2, ip or cosine (embedding: ip unless given)")->capture_default_str()->check(CLI::IsMember({"l2", "ip", "cosine"}));
  v->add_option("--cache-dir", vc.cache_dir, "where generated datasets and ground truth are cached")->capture_default_str();
  v->add_option("--train-rows", vc.train_rows, "rows the quantisers train on (the first ones)")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 32));
  v->add_option("--codes", vc.specs, "quantiser specs, comma list: rabitq:<bits>[:<clusters>], pq:<m>, pq:dim/<d>")->delimiter(',')->capture_default_str();
  v->add_option("--rerank", vc.rerank, "R values: re-rank the best R by exact distance (comma list)")->delimiter(',')->capture_default_str()->check(CLI::Range(1u, 1u << 20));
  v->add_option("--k", vc.k, "neighbours per query (recall@k)")->capture_default_str()->check(CLI::Range(1u, 100u));
  v->add_option("--train-threads", vc.train_threads, "k-means threads while training")->capture_default_str()->check(CLI::Range(1u, 64u));
  v->add_option("--json", vc.json_path, "append one JSON line per quantiser to this file");
  return v;
}
// `calico_bench vector-coded` and its options (vector/coded.h).
CLI::App* add_vector_coded_command(CLI::App& app, calico::bench::VectorCodedConfig& vc) {
  CLI::App* v = app.add_subcommand("vector-coded", "larger than memory: the coded HNSW (RaBitQ codes resident, node rows of "
                                                   "links and vector in the pool) against the full-vector HNSW with the same memory");
  v->add_option("--dataset", vc.dataset, "clustered (SIFT-like, l2), embedding (unit vectors, ip; 384-d unless --dim) or files (--base/--query[/--gt])")->capture_default_str()->check(CLI::IsMember({"clustered", "embedding", "files"}));
  v->add_option("--metric", vc.metric, "l2, ip or cosine (embedding: ip unless given)")->capture_default_str()->check(CLI::IsMember({"l2", "ip", "cosine"}));
  v->add_option("--base", vc.base_path, ".fvecs/.bvecs base vectors (files)");
  v->add_option("--query", vc.query_path, ".fvecs/.bvecs queries (files)");
  v->add_option("--gt", vc.gt_path, ".ivecs ground truth (files; computed and cached when missing)");
  v->add_option("--n", vc.n, "base vectors (generated sets)")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 31));
  v->add_option("--dim", vc.dim, "dimensions (generated sets)")->capture_default_str()->check(CLI::Range(1u, 4096u));
  v->add_option("--clusters", vc.clusters, "generator clusters (clustered) or topics (embedding)")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  v->add_option("--queries", vc.queries, "query vectors (generated sets)")->capture_default_str()->check(CLI::Range(1u, 1u << 24));
  v->add_option("--data-seed", vc.data_seed, "seed of the generator")->capture_default_str();
  v->add_option("--cache-dir", vc.cache_dir, "where generated datasets and ground truth are cached")->capture_default_str();
  v->add_option("--dir", vc.dir, "scratch directory for the built indexes (removed at the end unless --reuse)")->capture_default_str();
  v->add_flag("--reuse", vc.reuse, "keep the built indexes in --dir, and search a directory built before from the same base vectors and parameters (any query set) instead of building");
  v->add_option("--pool-fraction", vc.pool_fractions, "memory budgets: pool bytes as fractions of the full-vector HNSW's bytes (comma list)")->delimiter(',')->capture_default_str()->check(CLI::Range(0.001, 4.0));
  v->add_option("--threads", vc.threads, "search threads (comma list)")->delimiter(',')->capture_default_str()->check(CLI::Range(1u, 256u));
  v->add_option("--rounds", vc.rounds, "timed rounds per setting (settings interleave; medians reported)")->capture_default_str()->check(CLI::Range(1u, 100u));
  v->add_option("--M", vc.M, "graph degree (lists hold 2M on level 0)")->capture_default_str()->check(CLI::Range(2u, 256u));
  v->add_option("--ef-construction", vc.ef_construction, "insertion beam")->capture_default_str()->check(CLI::Range(1u, 4096u));
  v->add_option("--bits", vc.bits, "RaBitQ bits per dimension (1, 2, 4)")->capture_default_str()->check(CLI::IsMember({1u, 2u, 4u}));
  v->add_option("--pq-bytes", vc.pq_bytes, "PQ codes of this many bytes a vector instead of RaBitQ (at most the dimension; 0: RaBitQ)")->capture_default_str();
  v->add_option("--alpha", vc.alpha, "the coded HNSW's links heuristic factor (1: HNSW's; 1.2: Vamana's)")->capture_default_str()->check(CLI::Range(1.0, 2.0));
  v->add_option("--build-threads", vc.build_threads, "threads adding rows")->capture_default_str()->check(CLI::Range(1u, 64u));
  v->add_option("--hnsw-ef", vc.hnsw_ef, "ef values of the full-vector HNSW (comma list)")->delimiter(',')->capture_default_str();
  v->add_option("--coded-ef", vc.coded_ef, "ef values of the coded HNSW (comma list)")->delimiter(',')->capture_default_str();
  v->add_option("--rerank", vc.rerank, "re-rank depths of the coded HNSW (comma list)")->delimiter(',')->capture_default_str();
  v->add_option("--entries", vc.entries, "entry points the coded HNSW scores per search (0: automatic, a quarter of a sample of 4,096 or more by its nearest cells, a smaller one whole; at least the sample: all of it; comma list)")->delimiter(',')->capture_default_str();
  v->add_option("--prefetch-width", vc.prefetch_width, "node pages the coded HNSW requests as one batch before each expansion (0: no prefetch; comma list)")->delimiter(',')->capture_default_str();
  v->add_option("--pin-share", vc.pin_share, "shares of the coded index's memory beyond its codes given to pinned rows (pin_rows), the pool the rest (comma list; each its own run)")->delimiter(',')->check(CLI::Range(0.0, 0.9))->capture_default_str();
  v->add_option("--batched", vc.batched, "coded HNSW beam steps: 0 expands the best candidate and prefetches the next ones' pages, 1 expands the prefetch-width best (DiskANN's step) (comma list)")->delimiter(',')->check(CLI::Range(0u, 1u))->capture_default_str();
  v->add_option("--pin-sample", vc.pin_sample, "pin_rows' sample searches")->check(CLI::Range(1u, 1000000u))->capture_default_str();
  v->add_option("--k", vc.k, "neighbours per query (recall@k)")->capture_default_str()->check(CLI::Range(1u, 100u));
  v->add_option("--seconds", vc.seconds, "timed region per setting")->capture_default_str()->check(CLI::Range(0.01, 3600.0));
  v->add_option("--json", vc.json_path, "append one JSON line per setting to this file");
  return v;
}
// `calico_bench tpcc` and its options (tpcc/tpcc.h).
CLI::App* add_tpcc_command(CLI::App& app, calico::bench::TpccConfig& tpcc) {
  CLI::App* tp = app.add_subcommand("tpcc", "TPC-C (five transactions, spec mix, consistency checks) on the B+trees, "
                                            "per translation, and on the peers wiredtiger and lmdb, in memory or larger than memory");
  tp->add_option("--translation,--translations", tpcc.translations, fmt::format("translation variants and/or peer systems (wiredtiger, lmdb), comma list, interleaved per repeat (known translations: {})", fmt::join(calico::variants::translation_names(), ",")))->delimiter(',')->capture_default_str();
  tp->add_option("--warehouses", tpcc.warehouses, "warehouses (about 160 MB each at scale 1, in half-full leaves)")->capture_default_str();
  tp->add_option("--threads", tpcc.threads, "worker threads (list, e.g. 1,2; at most --warehouses)")->delimiter(',')->capture_default_str();
  tp->add_option("--index-skipping", tpcc.index_skipping, "LIPAH index skipping (record hints in secondary indexes and read/write sets): off, on, remember (on, and each worker keeps the hints of the records it touched across transactions), or a comma list (the order rotated per repeat: all runs of a repeat share one loaded database); Calico only (refused with a peer)")->delimiter(',')->capture_default_str()->check(CLI::IsMember({"off", "on", "remember"}));
  tp->add_option("--seconds", tpcc.seconds, "run time per thread count")->capture_default_str()->check(CLI::Range(0.01, 86400.0));
  tp->add_option("--pool-mb", tpcc.pool_mb, "pool size in MB (0: in memory; smaller than the data: larger than memory, O_DIRECT); a peer's cache (WiredTiger's cache_size; LMDB: not limited)")->capture_default_str();
  tp->add_option("--far-mb", tpcc.far_mb, "a far frame tier of this size behind the pool of the tiered translations (docs/results/tiers.md: array_tiered, vmcache_n; the others run beside them without it; 0: none)")->capture_default_str()->check(kSizeMb);
  tp->add_option("--far-tier", tpcc.far_tier, "the far tier: remote-numa, cxl (emulated), local, or numa:<node>")->capture_default_str();
  tp->add_option("--data-dir", tpcc.data_dir, "directory for the pools' files (one subdirectory per translation)")->capture_default_str();
  tp->add_option("--repeat", tpcc.repeat, "runs per configuration (translations interleaved)")->capture_default_str()->check(CLI::Range(1, 1000));
  tp->add_option("--json", tpcc.json_path, "append one JSON line per run to this file");
  tp->add_option("--seed", tpcc.seed, "random seed")->capture_default_str();
  tp->add_option("--scale", tpcc.scale, "in (0, 1]: customers, orders and items x scale (1 = the spec's counts)")->capture_default_str();
  return tp;
}
// `calico_bench tier-calibrate` and its options (tiers/tier_calibrate.h).
CLI::App* add_tier_calibrate_command(CLI::App& app, calico::bench::TierCalibrateConfig& tc) {
  CLI::App* tcal = app.add_subcommand("tier-calibrate", "pointer chase and copies through the emulated far tier: "
                                                         "measured extra latency and bandwidth against the configured ones (docs/results/tiers.md)");
  tcal->add_option("--preset", tc.preset, "defaults for the next two: remote-numa or cxl (src/memory/tiers/tier_config.h)")->capture_default_str()->check(CLI::IsMember({"remote-numa", "cxl"}));
  tcal->add_option("--latency-ns", tc.latency_ns, "extra ns per cache line (default: the preset's)")->check(CLI::Range(0.0, 10000.0));
  tcal->add_option("--bandwidth-mb-s", tc.bandwidth_mb_s, "migration bandwidth in MB/s, 0 = unthrottled (default: the preset's)")->check(CLI::Range(0.0, 1e6));
  tcal->add_option("--mb", tc.mb, "chase buffer in MB (larger than the LLC)")->capture_default_str()->check(CLI::Range(4, 16384));
  tcal->add_option("--seconds", tc.seconds, "length of each run")->capture_default_str()->check(CLI::Range(0.01, 3600.0));
  tcal->add_option("--repeat", tc.repeat, "rounds (local and far interleaved); medians are reported")->capture_default_str()->check(CLI::Range(1, 1000));
  tcal->add_option("--seed", tc.seed, "seed of the random cycle")->capture_default_str();
  tcal->add_option("--json", tc.json_path, "append one JSON line with the configuration and the results to this file");
  return tcal;
}


}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Calico buffer manager benchmarks"};
  app.require_subcommand(1);

  calico::bench::DemoConfig demo;
  CLI::App* d = add_demo_command(app, demo);
  calico::bench::YcsbConfig ycsb;
  CLI::App* y = add_ycsb_command(app, ycsb);
  calico::bench::ScanConfig scan;
  CLI::App* sc = add_scan_command(app, scan);
  calico::bench::MicroBTreeConfig bt;
  CLI::App* mb = add_micro_btree_command(app, bt);
  calico::bench::MicroBfsConfig bfs;
  CLI::App* mf = add_micro_bfs_command(app, bfs);
  calico::bench::MicroBfsConfig abl;
  CLI::App* ma = add_micro_ablation_command(app, abl);
  calico::bench::MicroMemoryConfig mem;
  CLI::App* mm = add_micro_memory_command(app, mem);
  calico::bench::VectorConfig vec;
  CLI::App* v = add_vector_command(app, vec);
  calico::bench::FilteredConfig vf;
  CLI::App* vfc = add_vector_filtered_command(app, vf);
  calico::bench::VectorCodesConfig vcodes;
  CLI::App* vc = add_vector_codes_command(app, vcodes);
  calico::bench::VectorCodedConfig vcoded;
  CLI::App* vcd = add_vector_coded_command(app, vcoded);
  calico::bench::TpccConfig tpcc;
  CLI::App* tp = add_tpcc_command(app, tpcc);
  calico::bench::TierCalibrateConfig tc;
  CLI::App* tcal = add_tier_calibrate_command(app, tc);

  CLI11_PARSE(app, argc, argv);
  try {
    if (d->parsed()) return calico::bench::run_demo(demo);
    if (y->parsed()) return calico::bench::run_ycsb(ycsb);
    if (sc->parsed()) return calico::bench::run_scan(scan);
    if (mb->parsed()) return calico::bench::run_micro_btree(bt);
    if (mf->parsed()) return calico::bench::run_micro_bfs(bfs);
    if (ma->parsed()) return calico::bench::run_micro_ablation(abl);
    if (mm->parsed()) return calico::bench::run_micro_memory(mem);
    if (v->parsed()) {
      if (vec.dataset == "embedding") {  // what such data is searched with, unless asked otherwise
        if (v->count("--metric") == 0) vec.metric = "ip";
        if (v->count("--dim") == 0) vec.dim = 384;
      }
      return calico::bench::run_vector(vec);
    }
    if (vfc->parsed()) {
      if (vf.dataset == "embedding" && vfc->count("--dim") == 0) vf.dim = 384;
      return calico::bench::run_vector_filtered(vf);
    }
    if (vc->parsed()) {
      if (vcodes.dataset == "embedding") {
        if (vc->count("--metric") == 0) vcodes.metric = "ip";
        if (vc->count("--dim") == 0) vcodes.dim = 384;
      }
      return calico::bench::run_vector_codes(vcodes);
    }
    if (vcd->parsed()) {
      if (vcoded.dataset == "embedding") {
        if (vcd->count("--metric") == 0) vcoded.metric = "ip";
        if (vcd->count("--dim") == 0) vcoded.dim = 384;
      }
      return calico::bench::run_vector_coded(vcoded);
    }
    if (tp->parsed()) return calico::bench::run_tpcc(tpcc);
    if (tcal->parsed()) return calico::bench::run_tier_calibrate(tc);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "calico_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
