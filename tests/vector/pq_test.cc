// PQ (vector/pq.h): the estimate is the exact distance to the code's reconstruction (L2
// and inner product); planted subspace clusters are encoded exactly; bad parameters name
// the parameter.
#include "vector/pq.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "calico/error.h"
#include "support/test_util.h"
#include "vector/code_test_data.h"

namespace calico::vector {
namespace {

using testing::expect_error;

// The reconstruction of a code (the concatenated centroids) is not exposed; it is recovered
// from the table of a query: with the L2 table of query 0 and of unit vectors e_d, the
// estimates give |c|^2 and |e_d - c|^2, hence c_d = (|c|^2 + 1 - |e_d - c|^2) / 2.
// m = 4 divides the 16 dimensions; m = 5 and 7 do not (subspaces of 4, 3, 3, 3, 3 and of
// 3, 3, 2, 2, 2, 2, 2 dimensions), where a misplaced subspace would break the equality.
TEST(Pq, EstimateIsTheDistanceToTheReconstruction) {
  const uint32_t dim = 16, n = 600;
  const std::vector<float> rows = test::clustered_rows(n, dim, 8, 2);
  for (uint32_t m : {4u, 5u, 7u})
  for (Metric metric : {Metric::kL2, Metric::kInnerProduct}) {
    SCOPED_TRACE("m " + std::to_string(m));
    PqParams p;
    p.m = m;
    p.bits = 6;
    p.metric = metric;
    p.threads = 1;
    const PqQuantizer pq = PqQuantizer::train(rows.data(), n, dim, p);
    EXPECT_EQ(pq.code_bytes(), m);
    EXPECT_EQ(pq.name(), "pq" + std::to_string(m) + "x6");
    std::vector<uint8_t> codes(n * pq.code_bytes());
    pq.encode(rows.data(), n, codes.data());
    // Reconstruct with an L2 model trained identically (same seed -> same centroids).
    PqParams pl = p;
    pl.metric = Metric::kL2;
    const PqQuantizer l2 = PqQuantizer::train(rows.data(), n, dim, pl);
    auto st = l2.new_query();
    const std::vector<float> zero(dim, 0.0f);
    std::vector<float> c2(n), ed(n);
    l2.prepare(zero.data(), *st);
    l2.estimate(*st, codes.data(), n, c2.data());
    std::vector<float> recon(size_t{n} * dim);
    for (uint32_t d = 0; d < dim; ++d) {
      std::vector<float> e(dim, 0.0f);
      e[d] = 1;
      l2.prepare(e.data(), *st);
      l2.estimate(*st, codes.data(), n, ed.data());
      for (uint32_t i = 0; i < n; ++i) recon[size_t{i} * dim + d] = (c2[i] + 1 - ed[i]) / 2;
    }
    // Now the model's own estimate for a query equals the exact distance to the reconstruction.
    const std::vector<float> q = test::clustered_rows(1, dim, 8, 3);
    auto sq = pq.new_query();
    pq.prepare(q.data(), *sq);
    std::vector<float> est(n);
    pq.estimate(*sq, codes.data(), n, est.data());
    double err = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const float want = metric == Metric::kL2 ? l2_scalar(q.data(), recon.data() + size_t{i} * dim, dim)
                                               : ip_scalar(q.data(), recon.data() + size_t{i} * dim, dim);
      EXPECT_NEAR(est[i], want, 2e-3 * (1 + std::abs(want))) << metric_name(metric) << " row " << i;
      err += std::abs(l2_scalar(rows.data() + size_t{i} * dim, recon.data() + size_t{i} * dim, dim));
    }
    // The reconstruction is close to the row (quantisation error well below the spread).
    EXPECT_LT(err / n, 0.5 * dim);
  }
}

// Rows that take only 4 distinct values per subspace are reproduced exactly by 4+ centroids:
// every estimate of a row against itself is 0.
TEST(Pq, PlantedSubspacesAreExact) {
  const uint32_t dim = 8, n = 200;
  std::vector<float> rows(size_t{n} * dim);
  for (uint32_t i = 0; i < n; ++i) {
    for (uint32_t d = 0; d < dim; ++d) rows[size_t{i} * dim + d] = float(((i * 7 + d / 2) % 4) * 10);
  }
  PqParams p;
  p.m = 4;
  p.bits = 2;
  p.threads = 1;
  const PqQuantizer pq = PqQuantizer::train(rows.data(), n, dim, p);
  std::vector<uint8_t> codes(n * 4);
  pq.encode(rows.data(), n, codes.data());
  auto st = pq.new_query();
  for (uint32_t i = 0; i < n; i += 17) {
    pq.prepare(rows.data() + size_t{i} * dim, *st);
    float d;
    pq.estimate(*st, codes.data() + i * 4, 1, &d);
    EXPECT_NEAR(d, 0.0f, 1e-4) << i;
  }
}

TEST(Pq, BadParameters) {
  const std::vector<float> rows = test::gaussian_rows(300, 12, 1);
  auto message_of = [&](PqParams p, uint64_t n, uint32_t dim) {
    return std::string(
        expect_error(ErrorCode::kInvalidArgument, [&] { PqQuantizer::train(rows.data(), n, dim, p); }).what());
  };
  PqParams p;
  p.m = 4;
  p.threads = 1;
  EXPECT_NE(message_of(p, 300, 0).find("dim"), std::string::npos);
  PqParams m13 = p;  // more subspaces than dimensions
  m13.m = 13;
  EXPECT_NE(message_of(m13, 300, 12).find("subspaces m = 13"), std::string::npos);
  PqParams m0 = p;
  m0.m = 0;
  EXPECT_NE(message_of(m0, 300, 12).find("subspaces m = 0"), std::string::npos);
  for (uint32_t bits : {0u, 9u}) {
    PqParams b = p;
    b.bits = bits;
    EXPECT_NE(message_of(b, 300, 12).find("bits"), std::string::npos);
  }
  EXPECT_NE(message_of(p, 0, 12).find("empty"), std::string::npos);
  EXPECT_NE(message_of(p, 100, 12).find("fewer than the 2^bits"), std::string::npos);  // 100 < 256
}

}  // namespace
}  // namespace calico::vector
