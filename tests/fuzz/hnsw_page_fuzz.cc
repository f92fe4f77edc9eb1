// Fuzz target: arbitrary bytes as one page (metadata, level-0 or upper-level page) of a
// small HNSW index; then searches (optimistic and pinned, prefetch on and off), filtered
// searches (graph and exact scan), contains, size, one remove, a consolidate and one add (of a node whose
// level is 0, so that the restore of the harness leaves the upper region as it was). See
// fuzz_harness.h.
#include "fuzz_harness.h"
#include "calico/index/hnsw.h"

namespace calico::fuzz {
namespace {

constexpr uint32_t kDim = 8;
constexpr uint32_t kNodes = 150;
constexpr uint32_t kCapacity = 200;

std::vector<float> vec_of(uint32_t i) {
  std::vector<float> v(kDim);
  for (uint32_t d = 0; d < kDim; ++d) v[d] = static_cast<float>((i * 2654435761u >> (d * 3)) % 97) + 0.5f * d;
  return v;
}

class HnswTarget {
 public:
  static constexpr const char* kName = "hnsw";
  void build(BufferPool& pool, const std::string& name) {
    name_ = name;
    index::HnswParams p;
    p.dim = kDim;
    p.M = 4;
    p.ef_construction = 16;
    index::BasicHnsw<BufferPool> h = index::BasicHnsw<BufferPool>::create(pool, name, p, kCapacity);
    for (uint32_t i = 0; i < kNodes; ++i) h.add(i, vec_of(i).data());
    for (spare_ = kNodes; spare_ < kCapacity && h.level_of(spare_) != 0; ++spare_) {
    }
    space_ = h.space();
    blocks_ = static_cast<BlockId>(pool.space_blocks(space_));
    if (spare_ < kCapacity) spare_block_ = h.layout().block_of(spare_);
  }
  SpaceId space() const { return space_; }
  std::vector<BlockId> candidates() const {
    std::vector<BlockId> c;
    for (BlockId b = 0; b < blocks_; ++b) c.push_back(b);
    return c;
  }
  // The control (fuzz_harness.h): the restored index holds exactly the nodes built.
  void verify(BufferPool& pool) {
    auto h = index::BasicHnsw<BufferPool>::open(pool, name_);
    bool ok = h.size() == kNodes;
    for (uint32_t i = 0; ok && i < kCapacity; ++i) ok = h.contains(i) == (i < kNodes);
    if (!ok) {
      std::fprintf(stderr, "fuzz control: the restored hnsw differs from the one built (size %llu)\n",
                   static_cast<unsigned long long>(h.size()));
      std::abort();
    }
  }
  // The input may set the spare id's presence in its level-0 page (valid bytes): then the
  // add below is refused as a duplicate, which is add's documented answer, not a finding.
  // Likewise the input may clear (or set the tombstone of) the removed id's presence: remove
  // then answers that the id is not in the index.
  bool legal(const Error& e, PageId overwritten) const {
    if (e.code() != ErrorCode::kInvalidArgument) return false;
    const std::string_view what(e.what());
    if (overwritten.block() == spare_block_ &&
        what.find("hnsw add: id " + std::to_string(spare_) + " was ") != std::string_view::npos) {
      return true;  // "was added before", or "was removed"
    }
    return overwritten.block() == removed_block_ &&
           what.find("hnsw remove: id " + std::to_string(removed_) + " is not in the index") != std::string_view::npos;
  }
  void run(BufferPool& pool, const uint8_t* data, size_t size) {
    auto h = open_index([&] { return index::BasicHnsw<BufferPool>::open(pool, name_); });
    index::HnswSearchState st(h);
    std::vector<vector::Neighbor> out;
    const std::vector<float> q = vec_of(size > 0 ? data[size - 1] : 7);
    for (bool optimistic : {true, false}) {
      for (bool prefetch : {true, false}) {
        index::HnswSearchOptions opt;
        opt.k = 5;
        opt.ef = 24;
        opt.optimistic = optimistic;
        opt.prefetch = prefetch;
        h.search(q.data(), opt, st, &out);
      }
    }
    // Filtered: an allow-list from the input's bytes, searched by the graph and by the exact
    // scan of the allowed ids.
    std::vector<uint64_t> allowed((kCapacity + 63) / 64);
    for (size_t i = 0; i < size && i < allowed.size() * 8; ++i) allowed[i / 8] |= uint64_t{data[i]} << (i % 8 * 8);
    if (size == 0) allowed.assign(allowed.size(), ~uint64_t{0});
    for (uint32_t exact_below : {1u, kCapacity + 1}) {
      index::HnswSearchOptions opt;
      opt.k = 5;
      opt.ef = 24;
      opt.exact_scan_below = exact_below;
      h.search(q.data(), opt, st, &out, index::HnswFilter{allowed});
    }
    (void)h.size();
    // Valid metadata may state a smaller capacity than the build's (a consistent layout
    // for it): ids are asked for below the capacity the index reports, as an application
    // would; contains() and add() refuse larger ones with kInvalidArgument, as documented.
    (void)h.contains(static_cast<uint32_t>(size % h.capacity()));
    removed_ = static_cast<uint32_t>((size > 1 ? data[size - 2] : 3) % kNodes);
    removed_block_ = h.layout().block_of(removed_);
    if (removed_ < h.capacity()) {
      h.remove(removed_);
      h.search(q.data(), index::HnswSearchOptions{}, st, &out);  // the path that checks tombstones
      (void)h.consolidate();  // relinks around it and frees its slot (every page is restored after)
    }
    if (spare_ < h.capacity()) h.add(spare_, q.data());
  }

 private:
  std::string name_;
  SpaceId space_ = 0;
  BlockId blocks_ = 0;
  uint32_t spare_ = kCapacity;
  BlockId spare_block_ = 0;  // the level-0 page of spare_ (0: none)
  uint32_t removed_ = 0;     // the id the current input removes, and its level-0 page
  BlockId removed_block_ = 0;
};

}  // namespace
}  // namespace calico::fuzz

CALICO_FUZZ_TARGET(calico::fuzz::HnswTarget)
