// Tests of the vector-search dataset layer (bench/vector/data/): file formats, the clustered
// generator, exact ground truth, the dataset cache and recall.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "calico/error.h"
#include "vector/data/dataset.h"
#include "vector/data/ground_truth.h"
#include "vector/data/recall.h"
#include "vector/data/synthetic.h"
#include "vector/data/vector_files.h"
#include "support/test_util.h"
#include "vector/distance.h"

namespace calico::bench::data {
namespace {

using calico::testing::expect_error;
using calico::testing::TempDir;
using vector::Metric;
using vector::Neighbor;
namespace fs = std::filesystem;

FloatMatrix random_matrix(uint64_t rows, uint32_t dim, uint64_t seed, bool integral = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 255);
  FloatMatrix m;
  m.rows = rows;
  m.dim = dim;
  m.values.resize(rows * dim);
  for (float& v : m.values) v = integral ? std::floor(u(rng)) : u(rng);
  return m;
}

// Raw bytes of a vector file: each row is an int32 header then `values` of T.
template <class T>
void write_raw(const std::string& path, const std::vector<std::pair<int32_t, std::vector<T>>>& rows) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& [d, v] : rows) {
    out.write(reinterpret_cast<const char*>(&d), 4);
    out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  }
}

TEST(VectorFiles, FvecsRoundTripAndRowLimit) {
  TempDir dir;
  const FloatMatrix m = random_matrix(1000, 37, 1);
  write_fvecs(dir.sub("a.fvecs"), m);
  EXPECT_EQ(fs::file_size(dir.sub("a.fvecs")), 1000u * (4 + 37 * 4));
  const FloatMatrix r = read_fvecs(dir.sub("a.fvecs"));
  EXPECT_EQ(r.rows, 1000u);
  EXPECT_EQ(r.dim, 37u);
  EXPECT_EQ(r.values, m.values);
  const FloatMatrix head = read_fvecs(dir.sub("a.fvecs"), 10);
  ASSERT_EQ(head.rows, 10u);
  EXPECT_TRUE(std::equal(head.values.begin(), head.values.end(), m.values.begin()));
  EXPECT_EQ(read_vectors(dir.sub("a.fvecs"), 3).rows, 3u);
  const VecsShape shape = vecs_shape(dir.sub("a.fvecs"), 4);
  EXPECT_EQ(shape.rows, 1000u);
  EXPECT_EQ(shape.dim, 37u);
}

TEST(VectorFiles, IvecsAndBvecsRoundTrip) {
  TempDir dir;
  IdMatrix ids;
  ids.rows = 50;
  ids.dim = 100;
  for (uint32_t i = 0; i < 5000; ++i) ids.ids.push_back(i * 7919u % 1000003u);
  write_ivecs(dir.sub("g.ivecs"), ids);
  const IdMatrix r = read_ivecs(dir.sub("g.ivecs"));
  EXPECT_EQ(r.rows, 50u);
  EXPECT_EQ(r.dim, 100u);
  EXPECT_EQ(r.ids, ids.ids);

  const FloatMatrix b = random_matrix(300, 128, 2, /*integral=*/true);
  write_bvecs(dir.sub("b.bvecs"), b);
  EXPECT_EQ(fs::file_size(dir.sub("b.bvecs")), 300u * (4 + 128));
  const FloatMatrix rb = read_bvecs(dir.sub("b.bvecs"));
  EXPECT_EQ(rb.rows, 300u);
  EXPECT_EQ(rb.values, b.values);
  EXPECT_EQ(read_vectors(dir.sub("b.bvecs")).values, b.values);
  // Values that are not bytes cannot be written as bvecs.
  expect_error(ErrorCode::kInvalidArgument, [&] { write_bvecs(dir.sub("x.bvecs"), random_matrix(2, 4, 3)); });
}

TEST(VectorFiles, MalformedFilesGiveClearErrors) {
  TempDir dir;
  const FloatMatrix m = random_matrix(10, 8, 4);
  write_fvecs(dir.sub("ok.fvecs"), m);
  // Missing file.
  Error e = expect_error(ErrorCode::kIoError, [&] { read_fvecs(dir.sub("missing.fvecs")); });
  EXPECT_NE(std::string(e.what()).find("missing.fvecs"), std::string::npos);
  // Truncated last row: every row read is an error, fewer rows are fine.
  fs::copy_file(dir.sub("ok.fvecs"), dir.sub("short.fvecs"));
  fs::resize_file(dir.sub("short.fvecs"), fs::file_size(dir.sub("ok.fvecs")) - 5);
  e = expect_error(ErrorCode::kInvalidArgument, [&] { read_fvecs(dir.sub("short.fvecs")); });
  EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  expect_error(ErrorCode::kInvalidArgument, [&] { vecs_shape(dir.sub("short.fvecs"), 4); });
  EXPECT_EQ(read_fvecs(dir.sub("short.fvecs"), 9).rows, 9u);
  // Less than a header; empty.
  write_raw<float>(dir.sub("tiny.fvecs"), {});
  expect_error(ErrorCode::kInvalidArgument, [&] { read_fvecs(dir.sub("tiny.fvecs")); });
  { std::ofstream(dir.sub("three.fvecs")) << "abc"; }
  expect_error(ErrorCode::kInvalidArgument, [&] { read_fvecs(dir.sub("three.fvecs")); });
  // Inconsistent dims across rows (same total size as two rows of dim 3).
  write_raw<float>(dir.sub("mixed.fvecs"), {{3, {1, 2, 3}}, {2, {4, 5}}, {4, {6, 7, 8, 9}}});
  e = expect_error(ErrorCode::kInvalidArgument, [&] { read_fvecs(dir.sub("mixed.fvecs")); });
  EXPECT_NE(std::string(e.what()).find("row 1 has dim 2"), std::string::npos) << e.what();
  // Dim 0, negative, too large.
  write_raw<float>(dir.sub("zero.fvecs"), {{0, {}}});
  expect_error(ErrorCode::kInvalidArgument, [&] { read_fvecs(dir.sub("zero.fvecs")); });
  write_raw<float>(dir.sub("neg.fvecs"), {{-4, {1, 2, 3, 4}}});
  expect_error(ErrorCode::kInvalidArgument, [&] { read_fvecs(dir.sub("neg.fvecs")); });
  write_raw<float>(dir.sub("huge.fvecs"), {{65537, std::vector<float>(65537)}});
  expect_error(ErrorCode::kInvalidArgument, [&] { read_fvecs(dir.sub("huge.fvecs")); });
  // Negative ids in an ivecs file; a bvecs with an inconsistent row.
  write_raw<int32_t>(dir.sub("neg.ivecs"), {{2, {1, -1}}});
  expect_error(ErrorCode::kInvalidArgument, [&] { read_ivecs(dir.sub("neg.ivecs")); });
  write_raw<uint8_t>(dir.sub("mixed.bvecs"), {{4, {1, 2, 3, 4}}, {5, {1, 2, 3, 4, 5}}});
  expect_error(ErrorCode::kInvalidArgument, [&] { read_bvecs(dir.sub("mixed.bvecs")); });
  expect_error(ErrorCode::kInvalidArgument, [&] { read_vectors(dir.sub("ok.txt")); });
  // Unwritable path.
  expect_error(ErrorCode::kIoError, [&] { write_fvecs(dir.sub("no/such/dir.fvecs"), m); });
}

TEST(Synthetic, DeterministicPerSeedAndIndependentOfThreads) {
  ClusteredParams p;
  p.dim = 16;
  p.clusters = 20;
  p.seed = 5;
  const FloatMatrix a = generate_clustered(p, 5000, kBaseStream, 1);
  const FloatMatrix b = generate_clustered(p, 5000, kBaseStream, 3);
  ASSERT_EQ(a.rows, 5000u);
  ASSERT_EQ(a.dim, 16u);
  EXPECT_EQ(a.values, b.values);
  // Another seed, another stream: different rows.
  p.seed = 6;
  EXPECT_NE(generate_clustered(p, 5000, kBaseStream, 2).values, a.values);
  p.seed = 5;
  const FloatMatrix q = generate_clustered(p, 100, kQueryStream, 2);
  for (uint64_t i = 0; i < q.rows; ++i) {
    for (uint64_t j = 0; j < a.rows; ++j) ASSERT_FALSE(std::equal(q.row(i), q.row(i) + 16, a.row(j))) << i << " " << j;
  }
  // SIFT range and finite values.
  for (float v : a.values) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LE(v, 255.0f);
  }
  // Clustered: a query's nearest base row is much closer than the median base row.
  const auto dist = vector::distance_kernel(Metric::kL2);
  std::vector<float> d(a.rows);
  for (uint64_t j = 0; j < a.rows; ++j) d[j] = dist(q.row(0), a.row(j), 16);
  std::sort(d.begin(), d.end());
  EXPECT_LT(d[0] * 4, d[d.size() / 2]);
  p.dim = 0;
  expect_error(ErrorCode::kInvalidArgument, [&] { generate_clustered(p, 10, kBaseStream); });
}

// Naive reference: sort every base row by (distance, id) with the scalar formula.
std::vector<std::vector<Neighbor>> naive_neighbors(const FloatMatrix& base, const FloatMatrix& queries, Metric metric,
                                                   uint32_t k) {
  const auto dist = vector::distance_kernel(metric);
  std::vector<std::vector<Neighbor>> out;
  for (uint64_t q = 0; q < queries.rows; ++q) {
    std::vector<Neighbor> all;
    for (uint64_t b = 0; b < base.rows; ++b) {
      all.push_back({dist(queries.row(q), base.row(b), base.dim), static_cast<uint32_t>(b)});
    }
    std::sort(all.begin(), all.end());
    all.resize(k);
    out.push_back(all);
  }
  return out;
}

// The embedding-like generator: deterministic per seed whatever the threads, unit rows, a
// common direction (random pairs have a positive cosine), a spectrum dominated by a few
// directions, and topics (a query's best match is far above the median); through
// load_or_generate it is its own cached dataset, searched by inner product.
TEST(Synthetic, EmbeddingIsUnitAnisotropicAndDeterministic) {
  EmbeddingParams p;
  p.dim = 64;
  p.topics = 20;
  p.seed = 5;
  const FloatMatrix a = generate_embedding(p, 4000, kBaseStream, 1);
  ASSERT_EQ(a.rows, 4000u);
  ASSERT_EQ(a.dim, 64u);
  EXPECT_EQ(generate_embedding(p, 4000, kBaseStream, 3).values, a.values);
  p.seed = 6;
  EXPECT_NE(generate_embedding(p, 4000, kBaseStream, 2).values, a.values);
  p.seed = 5;
  const uint32_t d = a.dim;
  auto dot = [&](const float* x, const float* y) {
    double s = 0;
    for (uint32_t i = 0; i < d; ++i) s += double{x[i]} * y[i];
    return s;
  };
  for (uint64_t r = 0; r < a.rows; ++r) ASSERT_NEAR(dot(a.row(r), a.row(r)), 1.0, 1e-4) << "row " << r;
  // A common direction: the mean cosine of row pairs is clearly positive.
  double mean_cos = 0;
  for (uint64_t r = 0; r + 1 < 2000; r += 2) mean_cos += dot(a.row(r), a.row(r + 1)) / 1000;
  EXPECT_GT(mean_cos, 0.1);
  EXPECT_LT(mean_cos, 0.5);
  // Anisotropy: the covariance's largest eigenvalue (power iteration) is many times the
  // mean eigenvalue (trace / dim); an isotropic set gives about 1-2x.
  std::vector<double> mu(d, 0), cov(size_t{d} * d, 0);
  for (uint64_t r = 0; r < a.rows; ++r) {
    for (uint32_t i = 0; i < d; ++i) mu[i] += a.row(r)[i] / double(a.rows);
  }
  for (uint64_t r = 0; r < a.rows; ++r) {
    for (uint32_t i = 0; i < d; ++i) {
      for (uint32_t j = 0; j < d; ++j) cov[i * d + j] += (a.row(r)[i] - mu[i]) * (a.row(r)[j] - mu[j]);
    }
  }
  double trace = 0;
  for (uint32_t i = 0; i < d; ++i) trace += cov[i * d + i];
  std::vector<double> v(d, 1.0), w(d);
  double top = 0;
  for (int it = 0; it < 200; ++it) {
    for (uint32_t i = 0; i < d; ++i) {
      w[i] = 0;
      for (uint32_t j = 0; j < d; ++j) w[i] += cov[i * d + j] * v[j];
    }
    double n = 0;
    for (double x : w) n += x * x;
    top = std::sqrt(n);
    for (uint32_t i = 0; i < d; ++i) v[i] = w[i] / top;
  }
  EXPECT_GT(top / (trace / d), 5.0) << "largest eigenvalue over the mean eigenvalue";
  // Topics: a query's best inner product is well above its median one.
  const FloatMatrix q = generate_embedding(p, 20, kQueryStream, 2);
  for (uint64_t i = 0; i < q.rows; ++i) {
    std::vector<double> ips(a.rows);
    for (uint64_t r = 0; r < a.rows; ++r) ips[r] = dot(q.row(i), a.row(r));
    std::sort(ips.begin(), ips.end());
    ASSERT_LT(ips.back(), 1.0 - 1e-6) << "query " << i << " is a copy of a base row";
    EXPECT_GT(ips.back() - ips[ips.size() / 2], 0.3) << "query " << i;
  }
  p.topics = 0;
  expect_error(ErrorCode::kInvalidArgument, [&] { generate_embedding(p, 10, kBaseStream); });
  p.topics = 20;
  p.within = 0;
  expect_error(ErrorCode::kInvalidArgument, [&] { generate_embedding(p, 10, kBaseStream); });

  TempDir dir;
  DatasetSpec spec;
  spec.kind = "embedding";
  spec.metric = Metric::kInnerProduct;
  spec.n = 3000;
  spec.dim = 32;
  spec.clusters = 10;
  spec.queries = 7;
  spec.gt_k = 5;
  spec.verbose = false;
  const Dataset ds = load_or_generate(spec, dir.path());
  EXPECT_EQ(ds.name, "embedding-n3000-d32-c10-q7-s42-ip");
  EXPECT_TRUE(ds.generated_vectors && ds.computed_ground_truth);
  ASSERT_EQ(ds.ground_truth.rows, 7u);
  EXPECT_EQ(ds.ground_truth.ids[0], naive_neighbors(ds.base, ds.queries, Metric::kInnerProduct, 5)[0][0].id);
  const Dataset again = load_or_generate(spec, dir.path());
  EXPECT_FALSE(again.generated_vectors || again.computed_ground_truth);
  EXPECT_EQ(again.base.values, ds.base.values);
}

TEST(GroundTruth, EqualsNaiveSortWithTiesById) {
  // Integral values in a small range: many exact distance ties.
  FloatMatrix base = random_matrix(3000, 8, 7, true);
  for (float& v : base.values) v = std::fmod(v, 3.0f);
  FloatMatrix queries = random_matrix(37, 8, 8, true);
  for (float& v : queries.values) v = std::fmod(v, 3.0f);
  for (unsigned threads : {1u, 3u}) {
    GroundTruthOptions o;
    o.k = 50;
    o.threads = threads;
    const auto got = exact_neighbors(base, queries, Metric::kL2, o);
    const auto want = naive_neighbors(base, queries, Metric::kL2, 50);
    ASSERT_EQ(got.size(), want.size());
    for (size_t q = 0; q < got.size(); ++q) ASSERT_EQ(got[q], want[q]) << "query " << q << " threads " << threads;
    // Ties exist and were broken by id.
    EXPECT_EQ(got[0][0].distance, got[0][1].distance);
    const IdMatrix gt = exact_ground_truth(base, queries, Metric::kL2, o);
    ASSERT_EQ(gt.rows, 37u);
    ASSERT_EQ(gt.dim, 50u);
    for (size_t q = 0; q < got.size(); ++q) {
      for (uint32_t j = 0; j < 50; ++j) ASSERT_EQ(gt.row(q)[j], want[q][j].id);
    }
  }
  GroundTruthOptions o;
  o.k = 3001;
  expect_error(ErrorCode::kInvalidArgument, [&] { exact_neighbors(base, queries, Metric::kL2, o); });
}

TEST(GroundTruth, CosineUsesNormalisedVectors) {
  const FloatMatrix base = random_matrix(500, 12, 9);
  const FloatMatrix queries = random_matrix(5, 12, 10);
  FloatMatrix nb = base, nq = queries;
  for (uint64_t i = 0; i < nb.rows; ++i) vector::normalize(nb.row(i), nb.dim);
  for (uint64_t i = 0; i < nq.rows; ++i) vector::normalize(nq.row(i), nq.dim);
  GroundTruthOptions o;
  o.k = 10;
  const auto got = exact_neighbors(base, queries, Metric::kCosine, o);
  const auto want = naive_neighbors(nb, nq, Metric::kInnerProduct, 10);
  for (size_t q = 0; q < got.size(); ++q) EXPECT_EQ(ids_of(got[q]), ids_of(want[q])) << q;
  // Scaling a base vector does not change its cosine rank.
  FloatMatrix scaled = base;
  for (float& v : scaled.values) v *= 3;
  EXPECT_EQ(ids_of(exact_neighbors(scaled, queries, Metric::kCosine, o)), ids_of(got));
}

DatasetSpec small_spec() {
  DatasetSpec s;
  s.n = 2000;
  s.dim = 16;
  s.clusters = 10;
  s.queries = 20;
  s.seed = 3;
  s.gt_k = 10;
  s.threads = 2;
  s.verbose = false;
  return s;
}

TEST(Dataset, GeneratesOnceThenReusesTheCache) {
  TempDir dir;
  const DatasetSpec spec = small_spec();
  EXPECT_EQ(dataset_name(spec), "clustered-n2000-d16-c10-q20-s3-l2");
  const Dataset first = load_or_generate(spec, dir.path());
  EXPECT_TRUE(first.generated_vectors);
  EXPECT_TRUE(first.computed_ground_truth);
  EXPECT_EQ(first.dir, dir.sub("clustered-n2000-d16-c10-q20-s3-l2"));
  ASSERT_EQ(first.base.rows, 2000u);
  ASSERT_EQ(first.queries.rows, 20u);
  ASSERT_EQ(first.ground_truth.rows, 20u);
  ASSERT_EQ(first.ground_truth.dim, 10u);
  GroundTruthOptions o;
  o.k = 10;
  EXPECT_EQ(first.ground_truth.ids, exact_ground_truth(first.base, first.queries, Metric::kL2, o).ids);
  const auto mtime = fs::last_write_time(first.dir + "/base.fvecs");

  const Dataset second = load_or_generate(spec, dir.path());
  EXPECT_FALSE(second.generated_vectors);
  EXPECT_FALSE(second.computed_ground_truth);
  EXPECT_EQ(fs::last_write_time(first.dir + "/base.fvecs"), mtime);
  EXPECT_EQ(second.base.values, first.base.values);
  EXPECT_EQ(second.queries.values, first.queries.values);
  EXPECT_EQ(second.ground_truth.ids, first.ground_truth.ids);
  // No temporary file is left behind.
  for (const auto& e : fs::directory_iterator(first.dir)) EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos);

  // Another seed is another directory.
  DatasetSpec other = spec;
  other.seed = 4;
  const Dataset third = load_or_generate(other, dir.path());
  EXPECT_TRUE(third.generated_vectors);
  EXPECT_NE(third.base.values, first.base.values);
}

// base_name names the base alone: a built index is reused across query sets (calico_bench
// vector-coded --reuse, diskann_peer.py's index directory), which is sound only because more
// queries leave the base vectors, and the queries drawn before, as they were.
TEST(Dataset, MoreQueriesKeepTheBaseAndItsName) {
  TempDir dir;
  const DatasetSpec spec = small_spec();
  DatasetSpec more = spec;
  more.queries = 50;
  EXPECT_EQ(base_name(spec), "clustered-n2000-d16-c10-s3-l2");
  EXPECT_EQ(base_name(more), base_name(spec));
  EXPECT_NE(dataset_name(more), dataset_name(spec));
  DatasetSpec embedding = spec;
  embedding.kind = "embedding";
  embedding.metric = Metric::kInnerProduct;
  EXPECT_EQ(base_name(embedding), "embedding-n2000-d16-c10-s3-ip");
  const Dataset a = load_or_generate(spec, dir.path());
  const Dataset b = load_or_generate(more, dir.path());
  EXPECT_EQ(b.base.values, a.base.values);
  ASSERT_EQ(b.queries.rows, 50u);
  EXPECT_TRUE(std::equal(a.queries.values.begin(), a.queries.values.end(), b.queries.values.begin()));
}

TEST(Dataset, DetectsCorruptOrMissingCachedFiles) {
  TempDir dir;
  const DatasetSpec spec = small_spec();
  const Dataset first = load_or_generate(spec, dir.path());
  // A truncated ground truth is recomputed, the vectors are kept.
  fs::resize_file(first.dir + "/gt.ivecs", fs::file_size(first.dir + "/gt.ivecs") - 4);
  Dataset d = load_or_generate(spec, dir.path());
  EXPECT_FALSE(d.generated_vectors);
  EXPECT_TRUE(d.computed_ground_truth);
  EXPECT_EQ(d.ground_truth.ids, first.ground_truth.ids);
  // A flipped byte inside the base (same size, valid headers) is caught by the checksum.
  {
    std::fstream f(first.dir + "/base.fvecs", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x7f');
  }
  d = load_or_generate(spec, dir.path());
  EXPECT_TRUE(d.generated_vectors);
  EXPECT_TRUE(d.computed_ground_truth);
  EXPECT_EQ(d.base.values, first.base.values);
  // A missing query file and a missing manifest both regenerate.
  fs::remove(first.dir + "/query.fvecs");
  d = load_or_generate(spec, dir.path());
  EXPECT_TRUE(d.generated_vectors);
  EXPECT_EQ(d.queries.values, first.queries.values);
  fs::remove(first.dir + "/manifest");
  EXPECT_TRUE(load_or_generate(spec, dir.path()).generated_vectors);
  EXPECT_FALSE(load_or_generate(spec, dir.path()).generated_vectors);
}

TEST(Dataset, FilesWithAndWithoutGroundTruth) {
  TempDir dir;
  const Dataset gen = load_or_generate(small_spec(), dir.path());
  DatasetSpec spec;
  spec.kind = "files";
  spec.base_path = gen.dir + "/base.fvecs";
  spec.query_path = gen.dir + "/query.fvecs";
  spec.ground_truth_path = gen.dir + "/gt.ivecs";
  spec.gt_k = 10;
  spec.verbose = false;
  // The given ground truth is used as is.
  Dataset d = load_or_generate(spec, dir.sub("cache"));
  EXPECT_FALSE(d.computed_ground_truth);
  EXPECT_EQ(d.ground_truth.ids, gen.ground_truth.ids);
  // None given: computed once, then cached.
  spec.ground_truth_path.clear();
  d = load_or_generate(spec, dir.sub("cache"));
  EXPECT_TRUE(d.computed_ground_truth);
  EXPECT_EQ(d.ground_truth.ids, gen.ground_truth.ids);
  EXPECT_FALSE(load_or_generate(spec, dir.sub("cache")).computed_ground_truth);
  // A cut base makes the given ground truth unusable.
  spec.ground_truth_path = gen.dir + "/gt.ivecs";
  spec.max_base_rows = 1000;
  d = load_or_generate(spec, dir.sub("cache"));
  EXPECT_TRUE(d.computed_ground_truth);
  EXPECT_EQ(d.base.rows, 1000u);
  for (uint32_t id : d.ground_truth.ids) EXPECT_LT(id, 1000u);
  spec.query_path = gen.dir + "/missing.fvecs";
  expect_error(ErrorCode::kIoError, [&] { load_or_generate(spec, dir.sub("cache")); });
  spec.kind = "sift";
  expect_error(ErrorCode::kInvalidArgument, [&] { load_or_generate(spec, dir.sub("cache")); });
}

TEST(Recall, HandMadeCases) {
  IdMatrix gt;
  gt.rows = 2;
  gt.dim = 4;
  gt.ids = {1, 2, 3, 4, 10, 20, 30, 40};
  auto res = [](std::vector<uint32_t> ids) {
    std::vector<Neighbor> r;
    for (uint32_t id : ids) r.push_back({static_cast<float>(r.size()), id});
    return r;
  };
  // Perfect, in another order.
  EXPECT_DOUBLE_EQ(recall_at_k({res({4, 3, 2, 1}), res({10, 20, 40, 30})}, gt, 4), 1.0);
  // Half: query 0 finds 2 of 4, query 1 finds 2 of 4.
  EXPECT_DOUBLE_EQ(recall_at_k({res({1, 2, 7, 8}), res({9, 20, 40, 11})}, gt, 4), 0.5);
  // None.
  EXPECT_DOUBLE_EQ(recall_at_k({res({5, 6, 7, 8}), res({1, 2, 3, 4})}, gt, 4), 0.0);
  // k = 2 looks at the first two of each: {1,2} vs {1,2} and {20,10} vs {10,20}.
  EXPECT_DOUBLE_EQ(recall_at_k({res({1, 2, 3, 4}), res({20, 10, 99, 98})}, gt, 2), 1.0);
  // Short results count missing entries as misses; duplicates count once.
  EXPECT_DOUBLE_EQ(recall_at_k({res({1}), res({10, 10, 10, 10})}, gt, 4), 0.25);
  // Ids form.
  EXPECT_DOUBLE_EQ(recall_at_k(std::vector<std::vector<uint32_t>>{{1, 2, 3, 9}, {10, 9, 9, 9}}, gt, 4), 0.5);
  EXPECT_EQ(ids_of(res({5, 6})), (std::vector<uint32_t>{5, 6}));
  expect_error(ErrorCode::kInvalidArgument, [&] { recall_at_k({res({1})}, gt, 4); });
  expect_error(ErrorCode::kInvalidArgument, [&] { recall_at_k({res({1}), res({1})}, gt, 5); });
  expect_error(ErrorCode::kInvalidArgument, [&] { recall_at_k({res({1}), res({1})}, gt, 0); });
}


// End to end through the Python peers (bench/harness/peers/vector_peers.py) on a tiny
// generated dataset: every system builds, saves, reloads (usearch_view maps the saved file)
// and finds the true neighbours. Needs the virtualenv that scripts/setup.sh makes; skipped (visibly)
// without it.
TEST(VectorPeers, ScriptRunsEverySystemOnATinyDataset) {
  const fs::path root = fs::path(__FILE__).parent_path().parent_path().parent_path();
  const fs::path python = root / ".venv" / "bin" / "python";
  if (!fs::exists(python)) GTEST_SKIP() << "no " << python << ": run scripts/setup.sh to install the Python peers";
  TempDir dir;
  const Dataset d = load_or_generate(small_spec(), dir.path());
  const std::string log = dir.sub("peers.log"), json = dir.sub("peers.jsonl");
  const std::string cmd = fmt::format(
      "'{}' '{}' --data-dir '{}' --systems hnswlib,faiss_hnsw,faiss_ivf,usearch,usearch_view --M 8 "
      "--ef-construction 64 --ef 64 --nlist 16 --nprobe 16 --threads 1 --repeat 1 --index-dir '{}' --json '{}' "
      "> '{}' 2>&1",
      python.string(), (root / "bench" / "harness" / "peers" / "vector_peers.py").string(), d.dir, dir.sub("indexes"),
      json, log);
  const int rc = std::system(cmd.c_str());
  std::ifstream log_in(log);
  const std::string log_text((std::istreambuf_iterator<char>(log_in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << cmd << "\n" << log_text;
  std::ifstream in(json);
  std::string line;
  std::vector<std::string> systems;
  // The value after `"key": ` in a JSON line (strings without their quotes).
  auto field = [](const std::string& text, const std::string& key) {
    const size_t at = text.find("\"" + key + "\": ");
    if (at == std::string::npos) return std::string();
    size_t begin = at + key.size() + 4;
    if (text[begin] == '"') ++begin;
    return text.substr(begin, text.find_first_of(",\"}", begin) - begin);
  };
  while (std::getline(in, line)) {
    const std::string system = field(line, "system"), recall = field(line, "recall");
    ASSERT_FALSE(system.empty()) << line;
    ASSERT_FALSE(recall.empty()) << line;
    systems.push_back(system);
    // 2000 points, a beam of 64 and every IVF list probed: (nearly) exact.
    EXPECT_GE(std::stod(recall), 0.95) << line;
  }
  EXPECT_EQ(systems, (std::vector<std::string>{"hnswlib", "faiss_hnsw", "faiss_ivf", "usearch", "usearch_view"}))
      << log_text;
}

}  // namespace
}  // namespace calico::bench::data
