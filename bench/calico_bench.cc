// calico_bench: the benchmark driver. One subcommand per experiment.
//   demo   the README's main job (bench/demo.h)
//   scan   heap SUM scans, sequential and random page order (Table 2) (bench/scan.h)
//   ycsb   YCSB A-F over calico, lmdb, rocksdb, wiredtiger (bench/ycsb.h)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "demo.h"
#include "scan.h"
#include "ycsb.h"

int main(int argc, char** argv) {
  CLI::App app{"Calico buffer manager benchmarks"};
  app.require_subcommand(1);

  calico::bench::DemoConfig demo;
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
  d->add_option("--json", demo.json_path, "append a JSON line with the results to this file");

  calico::bench::YcsbConfig ycsb;
  CLI::App* y = app.add_subcommand("ycsb", "YCSB workloads A-F over Calico's B+tree and peer engines");
  y->add_option("--system", ycsb.systems, "calico, lmdb, rocksdb, wiredtiger (repeatable or comma list)")->delimiter(',')->capture_default_str()->check(CLI::IsMember({"calico", "lmdb", "rocksdb", "wiredtiger"}));
  y->add_option("--workload", ycsb.workloads, "A..F (repeatable or comma list)")->delimiter(',')->capture_default_str()->check(CLI::IsMember({"A", "B", "C", "D", "E", "F", "a", "b", "c", "d", "e", "f"}));
  y->add_option("--distribution", ycsb.distribution, "uniform, zipf or latest (default: YCSB's, zipf; D: latest)")->check(CLI::IsMember({"uniform", "zipf", "latest"}));
  y->add_option("--theta", ycsb.theta, "Zipf skew")->capture_default_str()->check(CLI::Range(0.01, 0.999));
  y->add_option("--records", ycsb.records, "records loaded")->capture_default_str()->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  y->add_option("--value-bytes", ycsb.value_bytes, "value size in bytes")->capture_default_str()->check(CLI::Range(16, 500));
  y->add_option("--threads", ycsb.threads, "worker threads (list, e.g. 1,2)")->delimiter(',')->capture_default_str()->check(CLI::Range(1, 256));
  auto* secs = y->add_option("--seconds", ycsb.seconds, "run time per run")->capture_default_str()->check(CLI::Range(0.1, 86400.0));
  y->add_option("--ops", ycsb.ops, "operations per run (instead of --seconds)")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 50))->excludes(secs);
  y->add_option("--warmup-seconds", ycsb.warmup_seconds, "unrecorded run of each workload before it (0: none, as YCSB)")->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  y->add_option("--cache-mb", ycsb.cache_mb, "pool / block cache / WT cache in MB (0: in memory, 3x the data + 64 MB)")->capture_default_str();
  y->add_option("--data-dir", ycsb.data_dir, "directory for the engines' data (one subdirectory each)")->capture_default_str();
  y->add_option("--repeat", ycsb.repeat, "runs per configuration (systems interleaved)")->capture_default_str()->check(CLI::Range(1, 1000));
  y->add_option("--json", ycsb.json_path, "append a JSON line per run to this file");
  y->add_option("--seed", ycsb.seed, "random seed")->capture_default_str();
  y->add_flag("--keep-data", ycsb.keep_data, "keep the data directories afterwards");

  calico::bench::ScanConfig scan;
  CLI::App* sc = app.add_subcommand("scan", "heap SUM scans in sequential and random page order (calico.txt Table 2)");
  sc->add_option("--data-dir", scan.data_dir, "directory for the data files")->capture_default_str();
  sc->add_option("--data-mb", scan.data_mb, "heap size")->capture_default_str()->check(CLI::Range(1, 1 << 22));
  sc->add_option("--pool-mb", scan.pool_mb, "pool size (0: data + 25% + 64 MB, all resident)")->capture_default_str();
  sc->add_option("--page-size", scan.page_size, "page size in bytes")->capture_default_str()->check(CLI::IsMember({4096, 8192, 16384}));
  sc->add_option("--row-bytes", scan.row_bytes, "row size in bytes")->capture_default_str()->check(CLI::Range(16, 16000));
  sc->add_option("--repeat", scan.repeat, "measured runs per variant (interleaved)")->capture_default_str()->check(CLI::Range(1, 1000));
  sc->add_option("--prefetch-distance", scan.prefetch_distance, "group prefetch distance in pages (0 = off)")->capture_default_str()->check(CLI::Range(0, 256));
  sc->add_option("--seed", scan.seed, "random seed")->capture_default_str();
  sc->add_option("--json", scan.json_path, "append one JSON line per variant to this file");

  CLI11_PARSE(app, argc, argv);
  try {
    if (d->parsed()) return calico::bench::run_demo(demo);
    if (y->parsed()) return calico::bench::run_ycsb(ycsb);
    if (sc->parsed()) return calico::bench::run_scan(scan);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "calico_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
