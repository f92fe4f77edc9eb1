// Fuzz target: arbitrary bytes as one page (metadata, inner node or leaf) of a small
// B+tree (height 2, ~40 leaves); then lookups, scans, and an insert, upsert and remove.
// See fuzz_harness.h.
#include "fuzz_harness.h"
#include "calico/index/btree.h"

namespace calico::fuzz {
namespace {

std::string key_of(uint32_t i) {
  char b[16];
  std::snprintf(b, sizeof b, "k%06u", i);
  return b;
}
constexpr uint32_t kKeys = 1500;
std::string value_of(uint32_t i) { return std::string(40, static_cast<char>('a' + i % 26)); }

class BTreeTarget {
 public:
  static constexpr const char* kName = "btree";
  void build(BufferPool& pool, const std::string& name) {
    name_ = name;
    index::BTree t = index::BTree::create(pool, name);
    for (uint32_t i = 0; i < kKeys; ++i) t.insert(key_of(i * 2), value_of(i));
    space_ = t.space();
    blocks_ = static_cast<BlockId>(pool.space_blocks(space_));
  }
  SpaceId space() const { return space_; }
  std::vector<BlockId> candidates() const {
    std::vector<BlockId> c;
    for (BlockId b = 0; b < blocks_; ++b) c.push_back(b);
    return c;
  }
  // The restored tree holds exactly what build() inserted, in key order.
  void verify(BufferPool& pool) {
    index::BTree t = index::BTree::open(pool, name_);
    uint32_t i = 0;
    bool ok = true;
    t.scan("", [&](std::string_view k, std::string_view v) {
      ok = i < kKeys && k == key_of(i * 2) && v == value_of(i);
      ++i;
      return ok;
    });
    std::string v;
    if (!ok || i != kKeys || !t.lookup(key_of(2 * (kKeys / 2)), &v) || v != value_of(kKeys / 2)) {
      std::fprintf(stderr, "fuzz control: the restored btree differs from the one built (entry %u)\n", i);
      std::abort();
    }
  }
  void run(BufferPool& pool, const uint8_t* data, size_t size) {
    index::BTree t = open_index([&] { return index::BTree::open(pool, name_); });
    std::string v;
    for (uint32_t i = 0; i < 2 * kKeys; i += 97) t.lookup(key_of(i), &v);
    uint64_t seen = 0;
    t.scan("", [&](std::string_view, std::string_view) { return ++seen < 4 * kKeys; });
    t.scan(key_of(kKeys), [&](std::string_view, std::string_view) { return ++seen < 5 * kKeys; });
    // Writes at a key chosen by the input (restored by the harness afterwards).
    const uint32_t at = size >= 2 ? (uint32_t{data[0]} << 8 | data[1]) % (2 * kKeys) : 0;
    t.insert(key_of(at) + "x", std::string(size % 200, 'w'));
    t.upsert(key_of(at & ~1u), std::string(300, 'u'));
    t.remove(key_of((at + 2) & ~1u));
  }

 private:
  std::string name_;
  SpaceId space_ = 0;
  BlockId blocks_ = 0;
};

}  // namespace
}  // namespace calico::fuzz

CALICO_FUZZ_TARGET(calico::fuzz::BTreeTarget)
