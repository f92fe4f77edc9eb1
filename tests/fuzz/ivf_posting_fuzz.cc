// Fuzz target: arbitrary bytes as one page of a small IVF index (the metadata, centroid and
// directory pages, read by open(), or a posting page; lists are chains of several pages:
// rows added after the build go to appended pages); then open, exact and partial searches
// (optimistic and pinned, prefetch on and off), a search_batch, list_ids, and one add. See
// fuzz_harness.h.
#include "fuzz_harness.h"
#include "calico/index/ivf.h"

namespace calico::fuzz {
namespace {

constexpr uint32_t kDim = 8;
constexpr uint32_t kLists = 4;
constexpr uint32_t kRows = 900;  // 300 built, 600 added

std::vector<float> vec_of(uint32_t i) {
  std::vector<float> v(kDim);
  for (uint32_t d = 0; d < kDim; ++d) v[d] = static_cast<float>((i * 2654435761u >> (d * 3)) % 97) + 0.5f * d;
  return v;
}

class IvfTarget {
 public:
  static constexpr const char* kName = "ivf";
  void build(BufferPool& pool, const std::string& name) {
    name_ = name;
    std::vector<float> data;
    for (uint32_t i = 0; i < 300; ++i) {
      std::vector<float> v = vec_of(i);
      data.insert(data.end(), v.begin(), v.end());
    }
    index::IvfParams p;
    p.dim = kDim;
    p.nlist = kLists;
    p.threads = 1;
    auto ivf = index::BasicIvf<BufferPool>::build(pool, name, p, data.data(), 300);
    for (uint32_t i = 300; i < kRows; ++i) ivf.add(i, vec_of(i).data());  // chains of 2-4 pages
    space_ = ivf.space();
    blocks_ = static_cast<BlockId>(pool.space_blocks(space_));
  }
  SpaceId space() const { return space_; }
  std::vector<BlockId> candidates() const {
    std::vector<BlockId> c;
    for (BlockId b = 0; b < blocks_; ++b) c.push_back(b);
    return c;
  }
  // The control (fuzz_harness.h): the restored index holds what was built, every chain
  // keeps its invariants, and an exact search finds a stored vector at distance 0.
  void verify(BufferPool& pool) {
    auto ivf = index::BasicIvf<BufferPool>::open(pool, name_);
    uint64_t rows = 0;
    try {
      rows = ivf.verify();
    } catch (const std::logic_error& e) {
      std::fprintf(stderr, "fuzz control: the restored ivf breaks an invariant: %s\n", e.what());
      std::abort();
    }
    index::IvfSearchState st(ivf);
    std::vector<vector::Neighbor> out;
    index::IvfSearchOptions opt;
    opt.k = 1;
    opt.nprobe = kLists;
    ivf.search(vec_of(7).data(), opt, st, &out);
    if (rows != kRows || out.empty() || out[0].distance != 0) {
      std::fprintf(stderr, "fuzz control: the restored ivf differs from the one built (%llu rows)\n",
                   static_cast<unsigned long long>(rows));
      std::abort();
    }
  }
  void run(BufferPool& pool, const uint8_t* data, size_t size) {
    auto ivf = open_index([&] { return index::BasicIvf<BufferPool>::open(pool, name_); });
    index::IvfSearchState st(ivf);
    std::vector<vector::Neighbor> out;
    const std::vector<float> q = vec_of(size > 0 ? data[size - 1] : 7);
    for (bool optimistic : {true, false}) {
      for (bool prefetch : {true, false}) {
        index::IvfSearchOptions opt;
        opt.k = 5;
        opt.nprobe = optimistic ? kLists : 2;
        opt.optimistic = optimistic;
        opt.prefetch = prefetch;
        ivf.search(q.data(), opt, st, &out);
      }
    }
    // Two queries in one block: the centroids (as open() read them) ranked by sgemm.
    std::vector<float> qs = vec_of(size > 1 ? data[0] : 3);
    qs.insert(qs.end(), q.begin(), q.end());
    std::vector<vector::Neighbor> outs[2];
    ivf.search_batch(qs.data(), 2, index::IvfSearchOptions{}, st, outs);
    std::vector<uint32_t> ids;
    // The lists the opened index has: the input may have rewritten nlist in valid metadata.
    for (uint32_t l = 0; l < ivf.nlist(); ++l) ivf.list_ids(l, &ids);
    ivf.add(1000, q.data());
  }

 private:
  std::string name_;
  SpaceId space_ = 0;
  BlockId blocks_ = 0;
};

}  // namespace
}  // namespace calico::fuzz

CALICO_FUZZ_TARGET(calico::fuzz::IvfTarget)
