// calico_bench vector-filtered: see filtered.h.
#include "vector/filtered.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <thread>

#include "calico/buffer_pool.h"
#include "calico/error.h"
#include "calico/index/hnsw.h"
#include "common/data_dir.h"
#include "micro/harness.h"
#include "vector/data/dataset.h"
#include "vector/data/ground_truth.h"
#include "vector/data/recall.h"
#include "vector/distance.h"

namespace calico::bench {

namespace {

using vector::Neighbor;
using Hnsw = index::BasicHnsw<BufferPool>;

// One allow-list: the bitmap the search takes, and the allowed rows in order.
struct AllowList {
  std::vector<uint64_t> words;
  std::vector<uint32_t> rows;
};

AllowList make_allow_list(const std::vector<bool>& allowed) {
  AllowList a;
  a.words.assign((allowed.size() + 63) / 64, 0);
  for (uint32_t r = 0; r < allowed.size(); ++r) {
    if (allowed[r]) {
      a.words[r / 64] |= uint64_t{1} << (r % 64);
      a.rows.push_back(r);
    }
  }
  return a;
}

// Uncorrelated: each row with probability f. Correlated: the nearest n / clusters rows of
// anchor rows drawn at random, anchor after anchor until f * n rows are allowed (regions of
// the space, as clusters are; the queries are drawn independently of them).
AllowList draw_allow_list(const data::Dataset& ds, const std::string& kind, double f, uint32_t clusters,
                          uint64_t seed) {
  const uint64_t n = ds.base.rows;
  std::mt19937_64 rng(seed);
  std::vector<bool> allowed(n, false);
  if (kind == "uncorrelated") {
    std::uniform_real_distribution<double> u(0, 1);
    for (uint64_t r = 0; r < n; ++r) allowed[r] = u(rng) < f;
    return make_allow_list(allowed);
  }
  const uint64_t want = std::max<uint64_t>(1, static_cast<uint64_t>(f * double(n)));
  const uint64_t per = std::max<uint64_t>(1, n / clusters);
  const vector::DistanceManyFn many = vector::distance_many_kernel(ds.metric);
  std::vector<float> dist(n);
  std::vector<uint32_t> order(n);
  std::uniform_int_distribution<uint64_t> pick(0, n - 1);
  for (uint64_t have = 0; have < want;) {
    many(ds.base.row(pick(rng)), ds.base.row(0), ds.base.dim, n, ds.base.dim, dist.data());
    for (uint32_t r = 0; r < n; ++r) order[r] = r;
    const uint64_t take = std::min(per, n);
    std::partial_sort(order.begin(), order.begin() + take, order.end(),
                      [&](uint32_t a, uint32_t b) { return dist[a] < dist[b] || (dist[a] == dist[b] && a < b); });
    for (uint64_t i = 0; i < take && have < want; ++i) {
      if (!allowed[order[i]]) {
        allowed[order[i]] = true;
        ++have;
      }
    }
  }
  return make_allow_list(allowed);
}

// The exact top-k among the allowed rows of every query, as row ids.
data::IdMatrix filtered_ground_truth(const data::Dataset& ds, const AllowList& a, uint32_t k) {
  data::FloatMatrix sub;
  sub.rows = a.rows.size();
  sub.dim = ds.base.dim;
  sub.values.reserve(sub.rows * sub.dim);
  for (uint32_t r : a.rows) sub.values.insert(sub.values.end(), ds.base.row(r), ds.base.row(r) + sub.dim);
  data::GroundTruthOptions o;
  o.k = k;
  data::IdMatrix gt = data::exact_ground_truth(sub, ds.queries, ds.metric, o);
  for (uint32_t& id : gt.ids) id = a.rows[id];
  return gt;
}

// What one case leaves for the summary.
struct FilterCase {
  std::string kind;
  double fraction = 0;
  uint64_t allowed = 0;
  uint32_t ef = 0;
  std::string method;  // "graph" or "exact"
  double recall = 0;
};

double log_crossing(double m1, double s1, double m2, double s2) {
  // log s is taken as linear in log m between the two points; s = 1 where they cross.
  const double t = std::log(s1) / (std::log(s1) - std::log(s2));
  return std::exp(std::log(m1) + t * (std::log(m2) - std::log(m1)));
}

}  // namespace

int run_vector_filtered(const FilteredConfig& c) {
  if (c.k == 0) throw Error(ErrorCode::kInvalidArgument, "--k must be at least 1");
  if (c.dataset != "clustered" && c.dataset != "embedding") {
    throw Error(ErrorCode::kInvalidArgument, "unknown dataset '" + c.dataset + "' (known: clustered, embedding)");
  }
  for (double f : c.fractions) {
    if (!(f > 0 && f <= 1)) throw Error(ErrorCode::kInvalidArgument, fmt::format("--fractions {}: use values in (0, 1]", f));
  }
  for (const std::string& k : c.kinds) {
    if (k != "uncorrelated" && k != "correlated") {
      throw Error(ErrorCode::kInvalidArgument, "unknown filter kind '" + k + "' (known: uncorrelated, correlated)");
    }
  }
  data::DatasetSpec spec;
  spec.kind = c.dataset;
  spec.n = c.n;
  spec.dim = c.dim;
  spec.clusters = c.clusters;
  spec.queries = c.queries;
  spec.seed = c.data_seed;
  spec.metric = vector::parse_metric(c.metric.empty() ? (c.dataset == "embedding" ? "ip" : "l2") : c.metric);
  spec.gt_k = c.k;
  micro::print_banner("filtered HNSW search: graph search against exact scan of the allowed rows",
                      fmt::format("dataset {} n={} dim={} clusters={} metric {}; M {} ef_construction {}; ef {}; "
                                  "fractions {}; kinds {}; k {}; {} repeats of >= {} s",
                                  c.dataset, c.n, c.dim, c.clusters, vector::metric_name(spec.metric), c.M,
                                  c.ef_construction, fmt::join(c.ef, ","), fmt::join(c.fractions, ","),
                                  fmt::join(c.kinds, ","), c.k, c.repeat, c.min_seconds));
  const data::Dataset ds = data::load_or_generate(spec, c.cache_dir);
  const uint64_t n = ds.base.rows;

  PoolOptions opt;
  opt.data_dir = c.data_dir + "/filtered";
  const uint64_t bytes = n * (uint64_t{ds.base.dim} * 4 + uint64_t{c.M} * 12 + 128);
  opt.pool_bytes = (bytes * 3 / 2 + (uint64_t{64} << 20)) / (uint64_t{2} << 20) * (uint64_t{2} << 20);
  opt.max_blocks_per_space = micro::space_capacity(bytes / opt.page_size + 1);
  micro::check_memory_budget(opt.pool_bytes + ds.base.values.size() * 8, "vector-filtered");
  auto pool = micro::open_scratch_pool<BufferPool>(opt);
  index::HnswParams p;
  p.dim = ds.base.dim;
  p.metric = ds.metric;
  p.M = c.M;
  p.ef_construction = c.ef_construction;
  p.seed = c.data_seed;
  auto hnsw = std::make_shared<Hnsw>(Hnsw::create(*pool, "hnsw", p, static_cast<uint32_t>(n)));
  {
    std::atomic<uint64_t> next{0};
    auto work = [&] {
      for (uint64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) hnsw->add(uint32_t(i), ds.base.row(i));
    };
    std::vector<std::thread> workers;
    for (unsigned t = 1; t < c.build_threads; ++t) workers.emplace_back(work);
    work();
    for (std::thread& w : workers) w.join();
  }
  fmt::print("built HNSW over {} rows\n", n);

  std::vector<micro::Case> cases;
  std::vector<FilterCase> info;
  uint64_t seed = c.data_seed;
  for (const std::string& kind : c.kinds) {
    for (double f : c.fractions) {
      auto allow = std::make_shared<AllowList>(draw_allow_list(ds, kind, f, c.clusters, ++seed));
      if (allow->rows.size() < c.k) {
        fmt::print("{} {}: {} rows allowed, fewer than k = {}: skipped\n", kind, f, allow->rows.size(), c.k);
        continue;
      }
      const data::IdMatrix gt = filtered_ground_truth(ds, *allow, c.k);
      for (uint32_t ef : c.ef) {
        for (const char* method : {"graph", "exact"}) {
          index::HnswSearchOptions o;
          o.k = c.k;
          o.ef = ef;
          o.exact_scan_below = std::string_view(method) == "exact" ? UINT32_MAX : 1;
          auto st = std::make_shared<index::HnswSearchState>(*hnsw);
          auto first = std::make_shared<std::vector<std::vector<Neighbor>>>(ds.queries.rows);
          const index::HnswFilter filter{allow->words};
          for (uint64_t q = 0; q < ds.queries.rows; ++q) hnsw->search(ds.queries.row(q), o, *st, &(*first)[q], filter);
          FilterCase fc{kind, f, allow->rows.size(), ef, method, data::recall_at_k(*first, gt, c.k)};
          micro::Case mc;
          mc.translation = method;
          mc.workload = fmt::format("{} {:g}% ef{}", kind, f * 100, ef);
          mc.details_json = fmt::format(R"("kind":"{}","fraction":{},"allowed":{},"ef":{},"method":"{}","recall":{:.4f})",
                                        kind, f, fc.allowed, ef, method, fc.recall);
          mc.run = [hnsw, allow, st, first, o, &ds]() -> micro::RunOutcome {
            std::vector<Neighbor> out;
            uint64_t failures = 0;
            const index::HnswFilter filter{allow->words};
            for (uint64_t q = 0; q < ds.queries.rows; ++q) {
              hnsw->search(ds.queries.row(q), o, *st, &out, filter);
              failures += out != (*first)[q];
            }
            return {ds.queries.rows, failures, 0};
          };
          cases.push_back(std::move(mc));
          info.push_back(fc);
        }
      }
      fmt::print("{} {:g}%: {} rows allowed; cases ready\n", kind, f * 100, allow->rows.size());
    }
  }

  micro::Common common;
  common.repeat = c.repeat;
  common.min_seconds = c.min_seconds;
  common.counters = false;
  common.json_path = c.json_path;
  const std::vector<micro::Result> results = micro::measure(cases, common);
  micro::ReportSpec rs;
  rs.experiment = "vector-filtered";
  rs.op = "query";
  rs.params_json = fmt::format(R"("dataset":"{}","n":{},"dim":{},"clusters":{},"queries":{},"metric":"{}","M":{},"ef_construction":{},"k":{})",
                               ds.name, n, ds.base.dim, c.clusters, ds.queries.rows, vector::metric_name(ds.metric), c.M,
                               c.ef_construction, c.k);
  rs.baselines = {"graph"};
  const uint64_t failures = micro::report(rs, results, common);

  // Per kind and ef: recall and the exact scan's speedup at each fraction, and c where the
  // speedup crosses 1 (results alternate graph, exact).
  fmt::print("\n{:<14}{:>5}{:>9}{:>9}{:>10}{:>10}{:>11}\n", "kind", "ef", "fraction", "allowed", "graph R", "exact R",
             "exact/graph");
  std::string json;
  std::map<std::pair<std::string, uint32_t>, std::vector<std::pair<double, double>>> curve;  // (m, speedup)
  for (size_t i = 0; i + 1 < results.size(); i += 2) {
    const FilterCase& g = info[i];
    const double s = micro::paired_speedup(results[i], results[i + 1]);
    fmt::print("{:<14}{:>5}{:>8.2f}%{:>9}{:>10.4f}{:>10.4f}{:>10.2f}x\n", g.kind, g.ef, g.fraction * 100, g.allowed,
               g.recall, info[i + 1].recall, s);
    curve[{g.kind, g.ef}].push_back({double(g.allowed), s});
  }
  for (auto& [key, pts] : curve) {
    std::sort(pts.begin(), pts.end());
    std::optional<double> m;
    for (size_t j = 0; j + 1 < pts.size() && !m; ++j) {
      if (pts[j].second >= 1 && pts[j + 1].second < 1) {
        m = log_crossing(pts[j].first, pts[j].second, pts[j + 1].first, pts[j + 1].second);
      }
    }
    const std::string where = m ? fmt::format("crossing at m = {:.0f} rows: c = m^2 / (ef n) = {:.1f}", *m,
                                              *m * *m / (double(key.second) * double(n)))
                                : (pts.front().second < 1 ? "the graph search was faster at every fraction"
                                                          : "the exact scan was faster at every fraction (or no single crossing)");
    fmt::print("{} ef {}: {}\n", key.first, key.second, where);
    json += fmt::format(R"({{"experiment":"vector-filtered-crossing","params":{{{}}},"kind":"{}","ef":{},"crossing_rows":{},"c":{}}})"
                        "\n",
                        rs.params_json, key.first, key.second, m ? fmt::format("{:.1f}", *m) : "null",
                        m ? fmt::format("{:.2f}", *m * *m / (double(key.second) * double(n))) : "null");
  }
  if (!c.json_path.empty()) {
    std::ofstream out(c.json_path, std::ios::app);
    out << json;
    if (!out) throw Error(ErrorCode::kIoError, "cannot write " + c.json_path);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace calico::bench
