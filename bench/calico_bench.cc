// calico_bench: the benchmark driver. One subcommand per experiment.
//   demo   the README's main job (bench/demo.h)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "demo.h"

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

  CLI11_PARSE(app, argc, argv);
  try {
    if (d->parsed()) return calico::bench::run_demo(demo);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "calico_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
