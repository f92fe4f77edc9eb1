// Every quantiser behind the Quantizer interface (vector/quantizer.h): RaBitQ 1, 2 and 4
// bits (and 1 bit with 16 centroids), PQ with dim/4 and dim/8 subspaces. Ranking quality
// (recall@10 after re-ranking the best R by exact distance, against brute force; measured
// 0.23-0.83 at R = 10 and 0.55-1.0 at R = 50 on this hard data, isotropic noise in 96
// dimensions) above a floor about 2/3 of that, which a wrong estimator (random: 0.002 and
// 0.01; a sign error: 0) fails; the model blob's round trip (same codes, same estimates)
// and its corruption (every truncation, flipped bytes, a wrong kind, a bad field behind a
// valid checksum) as typed errors; a query state of another model.
#include "vector/quantizer.h"

#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "calico/error.h"
#include "support/test_util.h"
#include "vector/code_test_data.h"
#include "vector/model_blob.h"
#include "vector/pq.h"
#include "vector/rabitq.h"

namespace calico::vector {
namespace {

using testing::expect_error;

struct Spec {
  std::string name;
  // Trains on (rows, n, dim, metric).
  std::function<std::unique_ptr<Quantizer>(const float*, uint64_t, uint32_t, Metric)> train;
  double min_recall_r10;   // recall@10 re-ranking the best 10
  double min_recall_r50;   // re-ranking the best 50
};

std::vector<Spec> specs() {
  std::vector<Spec> all;
  for (uint32_t bits : {1u, 2u, 4u}) {
    all.push_back({"rabitq" + std::to_string(bits),
                   [bits](const float* rows, uint64_t n, uint32_t dim, Metric metric) -> std::unique_ptr<Quantizer> {
                     RabitqParams p;
                     p.bits = bits;
                     p.metric = metric;
                     return std::make_unique<RabitqQuantizer>(RabitqQuantizer::train(rows, n, dim, p));
                   },
                   bits == 1 ? 0.15 : bits == 2 ? 0.35 : 0.7, bits == 1 ? 0.4 : bits == 2 ? 0.75 : 0.95});
  }
  all.push_back({"rabitq1-c16",
                 [](const float* rows, uint64_t n, uint32_t dim, Metric metric) -> std::unique_ptr<Quantizer> {
                   RabitqParams p;
                   p.metric = metric;
                   p.clusters = 16;
                   p.threads = 2;
                   return std::make_unique<RabitqQuantizer>(RabitqQuantizer::train(rows, n, dim, p));
                 },
                 0.15, 0.45});
  for (uint32_t div : {4u, 8u}) {
    all.push_back({"pq-dim/" + std::to_string(div),
                   [div](const float* rows, uint64_t n, uint32_t dim, Metric metric) -> std::unique_ptr<Quantizer> {
                     PqParams p;
                     p.m = dim / div;
                     p.metric = metric;
                     p.iters = 8;
                     p.threads = 2;
                     return std::make_unique<PqQuantizer>(PqQuantizer::train(rows, n, dim, p));
                   },
                   div == 4 ? 0.3 : 0.15, div == 4 ? 0.7 : 0.45});
  }
  return all;
}

class QuantizerTest : public ::testing::TestWithParam<Spec> {};

bool slow() { return testing::kThreadSanitizer || testing::kAddressSanitizer; }

TEST_P(QuantizerTest, RecallAfterReranking) {
  const Spec& s = GetParam();
  const uint32_t dim = 96;  // RaBitQ pads it to 128
  const size_t n = slow() ? 1500 : 5000, nq = slow() ? 10 : 40;
  struct Set {
    const char* name;
    std::vector<float> base, queries;
    Metric metric;
  };
  const std::vector<Set> sets = {
      {"clustered-l2", test::clustered_rows(n, dim, 50, 1), test::clustered_rows(nq, dim, 50, 2), Metric::kL2},
      {"unit-cosine", test::normalized(test::clustered_rows(n, dim, 50, 1), dim),
       test::normalized(test::clustered_rows(nq, dim, 50, 2), dim), Metric::kCosine},
  };
  for (const Set& set : sets) {
    const std::unique_ptr<Quantizer> qz = s.train(set.base.data(), n, dim, set.metric);
    std::vector<uint8_t> codes(n * qz->code_bytes());
    qz->encode(set.base.data(), n, codes.data());
    const double r10 = test::rerank_recall(*qz, codes, set.base, set.queries, 10, 10);
    const double r50 = test::rerank_recall(*qz, codes, set.base, set.queries, 10, 50);
    EXPECT_GE(r10, s.min_recall_r10) << s.name << " " << set.name;
    EXPECT_GE(r50, s.min_recall_r50) << s.name << " " << set.name;
    RecordProperty(s.name + "-" + set.name, std::to_string(r10) + " " + std::to_string(r50));
    std::printf("%s %s recall@10 R=10 %.3f R=50 %.3f\n", s.name.c_str(), set.name, r10, r50);
  }
}

TEST_P(QuantizerTest, SerializeRoundTripAndCorruption) {
  const Spec& s = GetParam();
  const uint32_t dim = 32;
  const size_t n = 600;
  const std::vector<float> rows = test::clustered_rows(n, dim, 10, 3);
  const std::unique_ptr<Quantizer> qz = s.train(rows.data(), n, dim, Metric::kL2);
  const std::vector<uint8_t> blob = qz->serialize();
  const std::unique_ptr<Quantizer> back = load_quantizer(blob.data(), blob.size());
  EXPECT_EQ(back->name(), qz->name());
  EXPECT_EQ(back->dim(), dim);
  EXPECT_EQ(back->code_bytes(), qz->code_bytes());
  EXPECT_EQ(back->serialize(), blob);
  std::vector<uint8_t> a(n * qz->code_bytes()), b(a.size());
  qz->encode(rows.data(), n, a.data());
  back->encode(rows.data(), n, b.data());
  EXPECT_EQ(a, b);
  auto sa = qz->new_query(), sb = back->new_query();
  qz->prepare(rows.data(), *sa);
  back->prepare(rows.data(), *sb);
  std::vector<float> ea(n), eb(n);
  qz->estimate(*sa, a.data(), n, ea.data());
  back->estimate(*sb, a.data(), n, eb.data());
  EXPECT_EQ(ea, eb);

  // A state of another model.
  expect_error(ErrorCode::kInvalidArgument, [&] { back->estimate(*sa, a.data(), 1, eb.data()); });
  expect_error(ErrorCode::kInvalidArgument, [&] { back->prepare(rows.data(), *sa); });

  // Every truncation (a stride through the rotation, which is most of a RaBitQ blob).
  const size_t step = blob.size() > 4096 ? 61 : 1;
  for (size_t len = 0; len < blob.size(); len += (len < 64 ? 1 : step)) {
    expect_error(ErrorCode::kCorruptPage, [&] { load_quantizer(blob.data(), len); });
  }
  std::vector<uint8_t> longer = blob;
  longer.push_back(0);
  expect_error(ErrorCode::kCorruptPage, [&] { load_quantizer(longer.data(), longer.size()); });
  // A flipped bit anywhere: header, fields, the model's floats.
  for (size_t at : {size_t{0}, size_t{5}, size_t{9}, size_t{21}, size_t{24}, size_t{30}, blob.size() / 2, blob.size() - 1}) {
    std::vector<uint8_t> bad = blob;
    bad[at] ^= 0x10;
    expect_error(ErrorCode::kCorruptPage, [&] { load_quantizer(bad.data(), bad.size()); });
  }
  expect_error(ErrorCode::kCorruptPage, [&] { load_quantizer(nullptr, 0); });
  // The other kind's reader refuses it.
  if (s.name.rfind("rabitq", 0) == 0) {
    expect_error(ErrorCode::kCorruptPage, [&] { PqQuantizer::deserialize(blob.data(), blob.size()); });
  } else {
    expect_error(ErrorCode::kCorruptPage, [&] { RabitqQuantizer::deserialize(blob.data(), blob.size()); });
  }
}

INSTANTIATE_TEST_SUITE_P(All, QuantizerTest, ::testing::ValuesIn(specs()),
                         [](const ::testing::TestParamInfo<Spec>& info) {
                           std::string n = info.param.name;
                           for (char& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

// Blobs whose checksums are valid but whose fields are not (as a writer with a bug, or a
// forger, would make): each is refused naming the field, never trusted.
TEST(ModelBlob, BadFieldsBehindValidChecksums) {
  auto refused = [](const std::vector<uint8_t>& blob, const std::string& needle) {
    const Error e = expect_error(ErrorCode::kCorruptPage, [&] { load_quantizer(blob.data(), blob.size()); });
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  };
  auto rabitq = [](uint32_t dim, uint32_t padded, uint32_t bits, uint32_t metric, size_t floats) {
    BlobWriter w(BlobKind::kRabitq);
    w.u32(dim);
    w.u32(padded);
    w.u32(bits);
    w.u32(metric);
    w.u64(1);
    w.u32(1);  // clusters
    std::vector<float> f(floats, 0.0f);
    w.floats(f.data(), f.size());
    return w.finish();
  };
  refused(rabitq(0, 64, 1, 0, 0), "dim");
  refused(rabitq(8, 128, 1, 0, 0), "padded_dim");
  refused(rabitq(8, 64, 3, 0, 0), "bits");
  refused(rabitq(8, 64, 1, 7, 0), "metric");
  refused(rabitq(8, 64, 1, 0, 16), "truncated at field 'rotation'");
  refused(rabitq(8, 64, 1, 0, 16 + 64 * 64), "not unit length");  // a zero matrix
  auto pq = [](uint32_t dim, uint32_t m, uint32_t bits, size_t floats, float value) {
    BlobWriter w(BlobKind::kPq);
    w.u32(dim);
    w.u32(m);
    w.u32(bits);
    w.u32(0);
    std::vector<float> f(floats, value);
    w.floats(f.data(), f.size());
    return w.finish();
  };
  refused(pq(8, 9, 8, 0, 0), "pq m 9");  // more subspaces than dimensions
  refused(pq(8, 2, 9, 0, 0), "bits");
  refused(pq(8, 2, 2, 31, 0), "truncated");
  refused(pq(8, 2, 2, 33, 0), "left after");
  refused(pq(8, 2, 2, 32, std::numeric_limits<float>::infinity()), "non-finite");
  EXPECT_EQ(load_quantizer(pq(8, 2, 2, 32, 1.0f).data(), pq(8, 2, 2, 32, 1.0f).size())->name(), "pq2x2");
  std::vector<uint8_t> kind = pq(8, 2, 2, 32, 0);
  kind[6] = 9;  // an unknown kind: the header checksum catches it first
  refused(kind, "checksum");
}

}  // namespace
}  // namespace calico::vector
