// id_map_bench: the search cost of the id map (include/calico/index/mapped_index.h) on one
// index, in memory: the same queries through
//   bare     the index's own search (results are slots)
//   mapped   BasicMapped::search (a read section, the index's search, k slot -> id reads,
//            deduplication)
// and, with an allow-list of 10% of the ids,
//   bare     the index's filtered search with a slot bitmap made once, before timing
//   mapped   BasicMapped::filter(ids) (one B+tree lookup per allowed id, timed: once per
//            round, as a Python call with a filter does it) and the filtered searches
// for HNSW (ef 16 and 64) and IVF-Flat (nprobe 8 and 32), k = 10, one thread. The rows get
// random 64-bit ids. Rounds are interleaved (bare, mapped, mapped, bare, ...) so that machine
// drift hits both; medians of QPS (wall clock and the thread's CPU time: the machine is
// shared) are reported. The answers are checked: each mapped result equals the bare one with
// its slot mapped to its id (the tool fails otherwise). Prints one JSON line per case (with
// the configuration) to stdout.
//
// Usage: id_map_bench [n=100000] [dim=128] [queries=1000] [rounds=7] [data_dir=./calico-idmap-bench]
#include <fmt/format.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/index/mapped_index.h"
#include "support/vector_data.h"

namespace calico::bench {
namespace {

using index::BasicHnsw;
using index::BasicIvf;
using index::BasicMapped;
using index::MappedNeighbor;

double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Timing {
  std::vector<double> qps, cpu_qps;
};

// Runs fn (all queries) and records QPS.
void timed(uint64_t queries, Timing* t, const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu_s();
  fn();
  const double cpu = thread_cpu_s() - c0;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t->qps.push_back(static_cast<double>(queries) / wall);
  t->cpu_qps.push_back(static_cast<double>(queries) / cpu);
}

template <class Index>
int measure(const char* kind, BasicMapped<Index>& x, const testing::Data& d, const std::vector<uint64_t>& ids,
            const typename BasicMapped<Index>::Options& opt, const std::string& knob, int rounds,
            const std::string& config) {
  using Mapped = BasicMapped<Index>;
  const uint64_t nq = d.num_queries();
  typename index::MappedCore<Index>::State bare_state(x.index());
  typename Mapped::State mapped_state(x);
  std::vector<std::vector<vector::Neighbor>> bare(nq);
  std::vector<std::vector<MappedNeighbor>> mapped(nq);
  // The allow-list: every 10th id, as ids (mapped) and as a slot bitmap (bare).
  std::vector<uint64_t> allowed_ids, slot_words;
  for (size_t i = 0; i < ids.size(); i += 10) {
    allowed_ids.push_back(ids[i]);
    uint32_t s = 0;
    if (!x.map().slot_of(ids[i], &s)) return 1;
    if (s / 64 >= slot_words.size()) slot_words.resize(s / 64 + 1, 0);
    slot_words[s / 64] |= uint64_t{1} << (s % 64);
  }
  int failures = 0;
  auto check = [&](const char* what) {
    for (uint64_t q = 0; q < nq; ++q) {
      bool same = bare[q].size() == mapped[q].size();
      for (size_t j = 0; same && j < bare[q].size(); ++j) {
        same = x.map().id_of(bare[q][j].id) == mapped[q][j].id && bare[q][j].distance == mapped[q][j].distance;
      }
      // Equal distances may order by slot in one and by id in the other: compare as sets then.
      if (!same) {
        std::vector<uint64_t> a, b;
        for (const auto& n : bare[q]) a.push_back(x.map().id_of(n.id));
        for (const auto& n : mapped[q]) b.push_back(n.id);
        std::sort(a.begin(), a.end());
        std::sort(b.begin(), b.end());
        if (a != b) {
          ++failures;
          std::fprintf(stderr, "%s %s: query %lu differs\n", kind, what, static_cast<unsigned long>(q));
        }
      }
    }
  };
  for (const bool filtered : {false, true}) {
    Timing tb, tm;
    const vector::IdFilter slot_filter{slot_words};
    auto run_bare = [&] {
      for (uint64_t q = 0; q < nq; ++q) {
        index::MappedCore<Index>::search(x.index(), d.query(q), opt, bare_state, &bare[q],
                                         filtered ? &slot_filter : nullptr);
      }
    };
    auto run_mapped = [&] {
      if (filtered) {
        const index::SlotFilter f = x.filter(allowed_ids);
        for (uint64_t q = 0; q < nq; ++q) x.search(d.query(q), opt, mapped_state, &mapped[q], f);
      } else {
        for (uint64_t q = 0; q < nq; ++q) x.search(d.query(q), opt, mapped_state, &mapped[q]);
      }
    };
    run_bare();  // warm-up, and the answers checked
    run_mapped();
    check(filtered ? "filtered" : "plain");
    for (int r = 0; r < rounds; ++r) {
      if (r % 2 == 0) {
        timed(nq, &tb, run_bare);
        timed(nq, &tm, run_mapped);
      } else {
        timed(nq, &tm, run_mapped);
        timed(nq, &tb, run_bare);
      }
    }
    std::vector<double> ratio;
    for (int r = 0; r < rounds; ++r) ratio.push_back(tm.cpu_qps[r] / tb.cpu_qps[r]);
    std::printf(
        "{%s, \"index\": \"%s\", %s, \"filter\": \"%s\", \"bare_qps\": %.0f, \"mapped_qps\": %.0f, "
        "\"bare_cpu_qps\": %.0f, \"mapped_cpu_qps\": %.0f, \"cpu_ratio_median\": %.4f, \"rounds\": %d}\n",
        config.c_str(), kind, knob.c_str(), filtered ? "10%" : "none", median(tb.qps), median(tm.qps),
        median(tb.cpu_qps), median(tm.cpu_qps), median(ratio), rounds);
    std::fflush(stdout);
  }
  return failures;
}

int run(int argc, char** argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100'000;
  const uint32_t dim = argc > 2 ? static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10)) : 128;
  const uint32_t queries = argc > 3 ? static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)) : 1000;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 7;
  const std::string dir = argc > 5 ? argv[5] : "./calico-idmap-bench";
  if (n < 1000 || dim == 0 || queries == 0 || rounds <= 0) {
    std::fprintf(stderr, "n >= 1000, dim, queries and rounds > 0\n");
    return 2;
  }
  std::filesystem::remove_all(dir);
  const testing::Data d = testing::clustered(n, dim, 1000, queries, 7);
  std::vector<uint64_t> ids(n);
  std::mt19937_64 rng(99);
  for (uint64_t& id : ids) id = rng() % (UINT64_MAX - 1);  // random 64-bit ids
  PoolOptions o;
  o.data_dir = dir;
  o.pool_bytes = size_t{2} << 30;  // the whole index in memory
  auto pool = BufferPool::open(o);
#ifdef NDEBUG
  const char* ndebug = "true";
#else
  const char* ndebug = "false";
#endif
  const std::string config = fmt::format(
      "\"bench\": \"id_map\", \"n\": {}, \"dim\": {}, \"queries\": {}, \"clusters\": 1000, \"k\": 10, "
      "\"translation\": \"array\", \"threads\": 1, \"ndebug\": {}, \"checks_level\": {}",
      n, dim, queries, ndebug, CALICO_CHECKS_LEVEL);
  int failures = 0;
  {
    index::HnswParams p;
    p.dim = dim;
    p.M = 16;
    p.ef_construction = 100;
    auto x = BasicMapped<BasicHnsw<BufferPool>>::attach(
        *pool, "hnsw", BasicHnsw<BufferPool>::create(*pool, "hnsw", p, static_cast<uint32_t>(n)));
    const auto t0 = std::chrono::steady_clock::now();
    x.add(ids, d.rows.data(), 2);
    std::fprintf(stderr, "hnsw built in %.1f s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    for (const uint32_t ef : {16u, 64u}) {
      index::HnswSearchOptions opt;
      opt.k = 10;
      opt.ef = ef;
      failures += measure("hnsw", x, d, ids, opt, fmt::format("\"ef\": {}", ef), rounds, config);
    }
  }
  {
    index::IvfParams p;
    p.dim = dim;
    p.nlist = 316;  // about sqrt(n)
    p.train_only = true;
    p.threads = 2;
    auto x = BasicMapped<BasicIvf<BufferPool>>::attach(
        *pool, "ivf", BasicIvf<BufferPool>::build(*pool, "ivf", p, d.rows.data(), std::min<uint64_t>(n, 64 * 316)));
    x.add(ids, d.rows.data(), 2);
    for (const uint32_t nprobe : {8u, 32u}) {
      failures += measure("ivf", x, d, ids, index::IvfSearchOptions{10, nprobe, true, true},
                          fmt::format("\"nprobe\": {}", nprobe), rounds, config);
    }
  }
  if (failures) std::fprintf(stderr, "%d queries differ\n", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace calico::bench

int main(int argc, char** argv) { return calico::bench::run(argc, argv); }
