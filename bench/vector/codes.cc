#include "vector/codes.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <numeric>
#include <stdexcept>

#include "calico/error.h"
#include "common/machine.h"
#include "vector/data/dataset.h"
#include "vector/distance.h"
#include "vector/pq.h"
#include "vector/quantizer.h"
#include "vector/rabitq.h"

namespace calico::bench {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  for (;;) {
    const size_t next = s.find(sep, at);
    out.push_back(s.substr(at, next - at));
    if (next == std::string::npos) return out;
    at = next + 1;
  }
}

uint32_t parse_u32(const std::string& s, const std::string& spec) {
  size_t used = 0;
  unsigned long v = 0;
  try {
    v = std::stoul(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || v > 1'000'000) {
    throw Error(ErrorCode::kInvalidArgument, "vector-codes: bad number '" + s + "' in spec '" + spec + "'");
  }
  return static_cast<uint32_t>(v);
}

std::unique_ptr<vector::Quantizer> train(const std::string& spec, const float* rows, uint64_t n, uint32_t dim,
                                         vector::Metric metric, unsigned threads) {
  const std::vector<std::string> parts = split(spec, ':');
  if (parts[0] == "rabitq" && (parts.size() == 2 || parts.size() == 3)) {
    vector::RabitqParams p;
    p.bits = parse_u32(parts[1], spec);
    p.metric = metric;
    p.clusters = parts.size() == 3 ? parse_u32(parts[2], spec) : 1;
    p.threads = threads;
    return std::make_unique<vector::RabitqQuantizer>(vector::RabitqQuantizer::train(rows, n, dim, p));
  }
  if (parts[0] == "pq" && parts.size() == 2) {
    vector::PqParams p;
    p.m = parts[1].rfind("dim/", 0) == 0 ? dim / std::max(1u, parse_u32(parts[1].substr(4), spec))
                                         : parse_u32(parts[1], spec);
    p.metric = metric;
    p.threads = threads;
    return std::make_unique<vector::PqQuantizer>(vector::PqQuantizer::train(rows, n, dim, p));
  }
  throw Error(ErrorCode::kInvalidArgument,
              "vector-codes: unknown spec '" + spec + "' (rabitq:<bits>[:<clusters>], pq:<m>, pq:dim/<d>)");
}

struct Result {
  std::string spec, name;
  size_t code_bytes = 0, model_bytes = 0;
  double train_s = 0, encode_s = 0, estimate_s = 0, prepare_s = 0, rerank_s = 0;
  std::vector<double> recall;  // per cfg.rerank
  bool ok = true;
};

}  // namespace

int run_vector_codes(const VectorCodesConfig& c) {
  data::DatasetSpec spec;
  spec.kind = c.dataset;
  spec.metric = vector::parse_metric(c.metric);
  spec.n = c.n;
  spec.dim = c.dim;
  spec.clusters = c.clusters;
  spec.queries = c.queries;
  spec.seed = c.data_seed;
  spec.gt_k = std::max<uint32_t>(c.k, 100);
  const data::Dataset ds = data::load_or_generate(spec, c.cache_dir);
  const uint64_t n = ds.base.rows, nq = ds.queries.rows;
  const uint32_t dim = ds.base.dim;
  if (c.k == 0 || c.k > ds.ground_truth.dim) throw Error(ErrorCode::kInvalidArgument, "vector-codes: bad --k");
  std::vector<uint32_t> rs = c.rerank;
  std::sort(rs.begin(), rs.end());
  if (rs.empty() || rs.front() < c.k || rs.back() > n) {
    throw Error(ErrorCode::kInvalidArgument, "vector-codes: every --rerank R must be in [k, n]");
  }
  const uint32_t r_max = rs.back();
  // The embedding set's unit vectors under ip: coded as cosine (header).
  const vector::Metric code_metric =
      c.dataset == "embedding" && spec.metric == vector::Metric::kInnerProduct ? vector::Metric::kCosine : spec.metric;
  const vector::DistanceFn exact =
      vector::distance_kernel(spec.metric == vector::Metric::kL2 ? vector::Metric::kL2 : vector::Metric::kInnerProduct);
  const uint64_t train_rows = std::min(c.train_rows, n);
  fmt::print("vector-codes: {} (n {}, dim {}, {} queries, metric {}, codes {}), train on {} rows, k {}, R {}\n", ds.name,
             n, dim, nq, c.metric, vector::metric_name(code_metric), train_rows, c.k, fmt::join(rs, ","));
  fmt::print("machine: {}\n", machine_json());
  fmt::print("simd: {}\n", vector::simd_level());

  std::vector<Result> results;
  int status = 0;
  for (const std::string& s : c.specs) {
    Result res;
    res.spec = s;
    auto t0 = Clock::now();
    std::unique_ptr<vector::Quantizer> qz = train(s, ds.base.values.data(), train_rows, dim, code_metric, c.train_threads);
    res.train_s = seconds_since(t0);
    res.name = qz->name();
    res.code_bytes = qz->code_bytes();
    const std::vector<uint8_t> blob = qz->serialize();
    res.model_bytes = blob.size();
    std::vector<uint8_t> codes(n * res.code_bytes);
    t0 = Clock::now();
    qz->encode(ds.base.values.data(), n, codes.data());
    res.encode_s = seconds_since(t0);

    // Self-check: the model's blob gives the same estimates.
    const std::unique_ptr<vector::Quantizer> back = vector::load_quantizer(blob.data(), blob.size());
    std::vector<float> est(n), est_back(n);
    {
      auto a = qz->new_query(), b = back->new_query();
      qz->prepare(ds.queries.row(0), *a);
      back->prepare(ds.queries.row(0), *b);
      qz->estimate(*a, codes.data(), n, est.data());
      back->estimate(*b, codes.data(), n, est_back.data());
      if (est != est_back) {
        fmt::print(stderr, "{}: SELF-CHECK FAILED: the deserialised model estimates differently\n", s);
        res.ok = false;
      }
    }

    auto state = qz->new_query();
    std::vector<uint32_t> ids(n);
    std::vector<std::pair<float, uint32_t>> cand(r_max);
    std::vector<double> hits(rs.size(), 0.0);
    for (uint64_t q = 0; q < nq; ++q) {
      const float* qv = ds.queries.row(q);
      t0 = Clock::now();
      qz->prepare(qv, *state);
      const auto t1 = Clock::now();
      qz->estimate(*state, codes.data(), n, est.data());
      const auto t2 = Clock::now();
      res.prepare_s += std::chrono::duration<double>(t1 - t0).count();
      res.estimate_s += std::chrono::duration<double>(t2 - t1).count();
      // The best r_max by estimate (ties by id), then for each R its first R re-ranked exactly.
      std::iota(ids.begin(), ids.end(), 0u);
      std::nth_element(ids.begin(), ids.begin() + (r_max - 1), ids.end(), [&](uint32_t a, uint32_t b) {
        return est[a] < est[b] || (est[a] == est[b] && a < b);
      });
      std::sort(ids.begin(), ids.begin() + r_max,
                [&](uint32_t a, uint32_t b) { return est[a] < est[b] || (est[a] == est[b] && a < b); });
      const auto t3 = Clock::now();
      for (uint32_t i = 0; i < r_max; ++i) cand[i] = {exact(qv, ds.base.row(ids[i]), dim), ids[i]};
      const uint32_t* truth = ds.ground_truth.row(q);
      for (size_t ri = 0; ri < rs.size(); ++ri) {
        std::vector<std::pair<float, uint32_t>> top(cand.begin(), cand.begin() + rs[ri]);
        std::partial_sort(top.begin(), top.begin() + c.k, top.end());
        for (uint32_t j = 0; j < c.k; ++j) hits[ri] += std::count(truth, truth + c.k, top[j].second);
      }
      res.rerank_s += seconds_since(t3);
    }
    for (size_t ri = 0; ri < rs.size(); ++ri) res.recall.push_back(hits[ri] / double(nq * c.k));
    for (size_t ri = 1; ri < rs.size(); ++ri) {
      if (res.recall[ri] + 1e-12 < res.recall[ri - 1]) {
        fmt::print(stderr, "{}: SELF-CHECK FAILED: recall falls from R {} to R {}\n", s, rs[ri - 1], rs[ri]);
        res.ok = false;
      }
    }
    if (!res.ok) status = 1;
    const double codes_per_s = double(n) * double(nq) / res.estimate_s;
    fmt::print("{:<14} {:>4} B/vec  train {:6.2f} s  encode {:6.2f} s ({:8.0f} vec/s)  estimate {:7.1f} M codes/s  "
               "prepare {:7.1f} us  recall@{} R={}: {:.3f}\n",
               res.name, res.code_bytes, res.train_s, res.encode_s, double(n) / res.encode_s, codes_per_s / 1e6,
               res.prepare_s / double(nq) * 1e6, c.k, fmt::join(rs, "/"), fmt::join(res.recall, " "));
    if (!c.json_path.empty()) {
      std::ofstream json(c.json_path, std::ios::app);
      std::string recall;
      for (size_t ri = 0; ri < rs.size(); ++ri) recall += fmt::format("{}\"{}\":{:.4f}", ri ? "," : "", rs[ri], res.recall[ri]);
      json << fmt::format(
          R"({{"bench":"vector_codes","dataset":"{}","n":{},"dim":{},"queries":{},"metric":"{}","code_metric":"{}",)"
          R"("spec":"{}","quantizer":"{}","bytes_per_vector":{},"model_bytes":{},"train_rows":{},"train_s":{:.3f},)"
          R"("encode_s":{:.3f},"encode_vectors_per_s":{:.0f},"estimate_codes_per_s":{:.0f},"prepare_us":{:.2f},)"
          R"("rerank_ms_per_query":{:.3f},"k":{},"recall_at_k":{{{}}},"self_check":{},"simd":"{}",{}}})",
          ds.name, n, dim, nq, c.metric, vector::metric_name(code_metric), s, res.name, res.code_bytes, res.model_bytes,
          train_rows, res.train_s, res.encode_s, double(n) / res.encode_s, codes_per_s, res.prepare_s / double(nq) * 1e6,
          res.rerank_s / double(nq) * 1e3, c.k, recall, res.ok ? "true" : "false", vector::simd_level(), machine_json())
           << "\n";
    }
    results.push_back(std::move(res));
  }
  return status;
}

}  // namespace calico::bench
