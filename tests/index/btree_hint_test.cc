// B+tree index skipping (calico/index/btree.h "Index skipping", calico/index/record_hint.h): every kind of stale
// hint (split, slot shift, merge, remove, eviction and reload, a page reused for another key
// range, garbage) is detected and repaired, never followed to a wrong record; a read/write
// set keeps a hint across a split; a primary tree with a secondary index storing primary key
// + hint matches a std::map; hinted lookups and updates race with splits and merges. Every
// test runs on every evicting translation with a tiny pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "calico/index/btree.h"
#include "calico/index/record_hint.h"
#include "support/test_util.h"
#include "support/variants.h"

namespace calico {
namespace {

using index::HintStats;
using index::RecordHint;
using testing::small_options;
using testing::TempDir;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 4;
#else
constexpr int kScale = 1;
#endif

constexpr uint32_t kTinyFrames = 16;  // a few leaves: the tests' trees are larger, so pages are evicted

std::string key_of(int i) {
  char k[32];
  std::snprintf(k, sizeof k, "key/%06d", i);
  return k;
}

// A record: an 8-byte little-endian counter, then the key, then `pad` filler bytes. The
// key inside the value shows a wrong record; updates add one to the counter.
std::string record(std::string_view key, uint64_t counter, size_t pad) {
  std::string v(8, '\0');
  std::memcpy(v.data(), &counter, 8);
  v.append(key);
  v.append(pad, '.');
  return v;
}
uint64_t counter_of(std::string_view v) {
  uint64_t c = 0;
  if (v.size() >= 8) std::memcpy(&c, v.data(), 8);
  return c;
}
auto increment = [](std::span<std::byte> v) {
  uint64_t c;
  std::memcpy(&c, v.data(), 8);
  ++c;
  std::memcpy(v.data(), &c, 8);
};

RecordHint must_locate(auto& tree, std::string_view key) {
  RecordHint h;
  std::string v;
  EXPECT_TRUE(tree.lookup_hinted(key, &h, &v, nullptr)) << key;
  return h;
}

template <class Pool>
class BTreeHints : public ::testing::Test {
 protected:
  using Tree = index::BasicBTree<Pool>;
  void SetUp() override {
    pool_ = Pool::open(testing::pool_options<Pool>(dir_.path(), kTinyFrames));
    tree_.emplace(Tree::create(*pool_, "primary"));
  }
  void TearDown() override {
    if (tree_) {
      EXPECT_NO_THROW(tree_->check());
      tree_.reset();
    }
    pool_->check_invariants();
  }
  Tree& tree() { return *tree_; }

  // Inserts key_of(first), key_of(first + 1), ... (values with `pad` filler) until the tree
  // has `leaves` leaves; returns the next unused i.
  int fill_until_leaves(int first, uint64_t leaves, size_t pad) {
    int i = first;
    // check() walks the whole tree: exact counts only matter for small targets.
    while ((leaves > 3 && (i - first) % 16 != 0) || tree().check().leaves < leaves) {
      EXPECT_TRUE(tree().insert(key_of(i), record(key_of(i), 0, pad)));
      ++i;
    }
    return i;
  }

  enum class Kind { kStale, kSlotMoved };
  // The three assertions of every staleness test, for lookup_hinted and then update_hinted,
  // each starting from the stale hint: the right record comes back (its counter is
  // `counter`, its key inside), the stats name the kind of staleness, and the repaired hint
  // is a hit on the next call. Leaves the record's counter at counter + 2.
  void expect_repaired(const std::string& key, RecordHint stale, Kind kind, uint64_t counter) {
    SCOPED_TRACE("key " + key + ", hint {" + std::to_string(stale.block) + ", " + std::to_string(stale.slot) + "}");
    auto kind_count = [&](const HintStats& s) { return kind == Kind::kStale ? s.stale : s.slot_moved; };
    {
      HintStats st;
      RecordHint h = stale;
      std::string v;
      ASSERT_TRUE(tree().lookup_hinted(key, &h, &v, &st));
      EXPECT_EQ(counter_of(v), counter);
      EXPECT_EQ(v.substr(8, key.size()), key) << "a wrong record";
      EXPECT_EQ(kind_count(st), 1u);
      EXPECT_EQ(st.hits, 0u);
      EXPECT_EQ(st.fallbacks, kind == Kind::kStale ? 1u : 0u);
      EXPECT_NE(h, stale) << "the hint was not repaired";
      EXPECT_EQ(h, must_locate(tree(), key));
      HintStats again;
      ASSERT_TRUE(tree().lookup_hinted(key, &h, &v, &again));
      EXPECT_EQ(again.hits, 1u) << "the repaired hint is not a hit";
      EXPECT_EQ(again.fallbacks, 0u);
    }
    {
      HintStats st;
      RecordHint h = stale;
      ASSERT_TRUE(tree().update_hinted(key, &h, increment, &st));
      EXPECT_EQ(kind_count(st), 1u);
      EXPECT_EQ(st.hits, 0u);
      EXPECT_NE(h, stale);
      EXPECT_EQ(h, must_locate(tree(), key));
      HintStats again;
      ASSERT_TRUE(tree().update_hinted(key, &h, increment, &again));
      EXPECT_EQ(again.hits, 1u);
      std::string v;
      ASSERT_TRUE(tree().lookup(key, &v));
      EXPECT_EQ(counter_of(v), counter + 2) << "each update applied exactly once";
      EXPECT_EQ(v.substr(8, key.size()), key);
    }
  }

  TempDir dir_;
  std::unique_ptr<Pool> pool_;
  std::optional<Tree> tree_;
};
TYPED_TEST_SUITE(BTreeHints, testing::IndexPools, testing::PoolName);

TYPED_TEST(BTreeHints, WritesReturnTheHintAndACorrectHintIsAHit) {
  auto& tree = this->tree();
  RecordHint h;
  ASSERT_TRUE(tree.insert(key_of(1), record(key_of(1), 0, 10), &h));
  EXPECT_EQ(h, (RecordHint{1, 0})) << "the root leaf is block 1";
  ASSERT_FALSE(tree.insert(key_of(1), "x", &h));
  EXPECT_EQ(h, (RecordHint{1, 0})) << "an insert that finds the key names it";
  ASSERT_TRUE(tree.upsert(key_of(0), record(key_of(0), 5, 10), &h));
  EXPECT_EQ(h, (RecordHint{1, 0}));
  ASSERT_FALSE(tree.upsert(key_of(0), record(key_of(0), 7, 10), &h));
  EXPECT_EQ(h, (RecordHint{1, 0}));
  ASSERT_TRUE(tree.update(key_of(1), increment, &h));
  EXPECT_EQ(h, (RecordHint{1, 1}));
  ASSERT_FALSE(tree.update(key_of(2), increment, &h));
  EXPECT_TRUE(h.none());
  HintStats st;
  std::string v;
  h = RecordHint{1, 0};
  ASSERT_TRUE(tree.lookup_hinted(key_of(0), &h, &v, &st));
  EXPECT_EQ(counter_of(v), 7u);
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.calls(), 1u);
  // No hint: a descent that fills it in.
  h = RecordHint{};
  ASSERT_TRUE(tree.lookup_hinted(key_of(1), &h, &v, &st));
  EXPECT_EQ(counter_of(v), 1u);
  EXPECT_EQ(st.none, 1u);
  EXPECT_EQ(st.fallbacks, 1u);
  EXPECT_EQ(h, (RecordHint{1, 1}));
  // An absent key: false, hint none, out untouched.
  h = RecordHint{1, 0};
  v = "untouched";
  EXPECT_FALSE(tree.lookup_hinted(key_of(9), &h, &v, &st));
  EXPECT_EQ(v, "untouched");
  EXPECT_TRUE(h.none());
  EXPECT_EQ(st.slot_moved, 1u) << "the hinted leaf covers the key: its search is the answer";
  // Encoding: 8 little-endian bytes; any 8 bytes decode.
  unsigned char b[8];
  RecordHint{0x01020304, 0x0506, 0}.encode(b);
  const unsigned char want[8] = {4, 3, 2, 1, 6, 5, 0, 0};
  EXPECT_EQ(std::memcmp(b, want, 8), 0);
  EXPECT_EQ(RecordHint::decode(b), (RecordHint{0x01020304, 0x0506, 0}));
  const unsigned char ones[8] = {255, 255, 255, 255, 255, 255, 255, 255};
  EXPECT_EQ(RecordHint::decode(ones), (RecordHint{0xffffffffu, 0xffff, 0xffff}));
  EXPECT_TRUE(RecordHint::decode(std::string(8, '\0').data()).none());
}

// A split moves the upper half of a leaf to a new right sibling: the hint names the left
// page, whose fences no longer cover the key.
TYPED_TEST(BTreeHints, SplitMovesTheRecordToTheNewRightSibling) {
  auto& tree = this->tree();
  RecordHint before;
  int i = 0;
  std::string moved;
  // Sequential inserts fill the root leaf; the key inserted just before the split is then
  // in the upper half, which moves right.
  for (;; ++i) {
    RecordHint h;
    ASSERT_TRUE(tree.insert(key_of(i), record(key_of(i), 0, 100), &h));
    if (tree.check().leaves > 1) break;
    moved = key_of(i);
    before = h;
  }
  ASSERT_EQ(before.block, 1u);
  this->expect_repaired(moved, before, TestFixture::Kind::kStale, 0);
}

// An insert or a remove before the record in its leaf shifts its slot: the page still
// covers the key, so the search in that page answers without a descent.
TYPED_TEST(BTreeHints, InsertAndRemoveShiftTheSlot) {
  auto& tree = this->tree();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(tree.insert(key_of(2 * i), record(key_of(2 * i), 0, 20)));
  const std::string k = key_of(20);
  RecordHint h = must_locate(tree, k);
  ASSERT_TRUE(tree.insert(key_of(3), record(key_of(3), 0, 20)));
  this->expect_repaired(k, h, TestFixture::Kind::kSlotMoved, 0);
  h = must_locate(tree, k);
  ASSERT_TRUE(tree.remove(key_of(3)));
  ASSERT_TRUE(tree.remove(key_of(4)));
  this->expect_repaired(k, h, TestFixture::Kind::kSlotMoved, 2);
}

// A remove of the key itself: the hinted leaf still covers it and says it is absent.
TYPED_TEST(BTreeHints, RemoveOfTheKey) {
  auto& tree = this->tree();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(tree.insert(key_of(i), record(key_of(i), 0, 20)));
  const std::string k = key_of(7);
  const RecordHint stale = must_locate(tree, k);
  ASSERT_TRUE(tree.remove(k));
  for (bool update : {false, true}) {
    HintStats st;
    RecordHint h = stale;
    std::string v = "untouched";
    bool found = update ? tree.update_hinted(k, &h, increment, &st) : tree.lookup_hinted(k, &h, &v, &st);
    EXPECT_FALSE(found) << "a removed record came back";
    EXPECT_EQ(v, "untouched");
    EXPECT_EQ(st.slot_moved, 1u);
    EXPECT_TRUE(h.none()) << "the hint of an absent key is none";
    HintStats again;
    EXPECT_FALSE(tree.lookup_hinted(k, &h, &v, &again));
    EXPECT_EQ(again.none, 1u);
  }
  // Reinserted: the write's hint is a hit.
  RecordHint h;
  ASSERT_TRUE(tree.insert(k, record(k, 3, 20), &h));
  HintStats st;
  std::string v;
  ASSERT_TRUE(tree.lookup_hinted(k, &h, &v, &st));
  EXPECT_EQ(counter_of(v), 3u);
  EXPECT_EQ(st.hits, 1u);
}

// A merge empties the right leaf of a pair (the page becomes kFree) and moves its records
// into the left one.
TYPED_TEST(BTreeHints, MergeFreesThePageAndMovesTheRecordLeft) {
  auto& tree = this->tree();
  const int n = this->fill_until_leaves(0, 2, 100);
  const std::string k = key_of(n - 1);  // in the right leaf
  const RecordHint stale = must_locate(tree, k);
  ASSERT_NE(stale.block, 1u);
  // Remove the right leaf's other keys from the top until the leaves merge.
  for (int i = n - 2; tree.check().leaves > 1; --i) {
    ASSERT_GE(i, 0);
    ASSERT_TRUE(tree.remove(key_of(i)));
  }
  EXPECT_EQ(tree.check().free_pages, 1u) << "the merge zeroed the right leaf";
  this->expect_repaired(k, stale, TestFixture::Kind::kStale, 0);
  EXPECT_EQ(must_locate(tree, k).block, 1u) << "the record moved left";
}

// Eviction and reload keep the page id (the hint stays a hit); a frame hint kept next to it
// (lipah) is then wrong, is detected by the pool and repaired.
TYPED_TEST(BTreeHints, EvictionAndReloadKeepThePageButNotTheFrame) {
  using Pool = TypeParam;
  auto& tree = this->tree();
  auto& pool = *this->pool_;
  const int n = this->fill_until_leaves(0, 4 * kTinyFrames, 100);
  const std::string k = key_of(n / 2);
  RecordHint h = must_locate(tree, k);
  const PageId pid(tree.space(), h.block);
  FrameId frame = kInvalidFrame;
  std::string v;
  {
    HintStats st;
    ASSERT_TRUE(tree.lookup_hinted(k, &h, &v, &st, &frame));
    EXPECT_EQ(st.hits, 1u);
    if (Pool::kFrameHints) {
      EXPECT_EQ(frame, pool.internals().frame_of(pid));
    }
  }
  const FrameId old_frame = frame;
  // Read other leaves until the page is evicted and its frame holds another page.
  auto frame_taken = [&] {
    if (pool.internals().frame_of(pid) != kInvalidFrame) return false;
    for (BlockId b = 1; b < pool.space_blocks(tree.space()); ++b) {
      if (pool.internals().frame_of(PageId(tree.space(), b)) == old_frame) return true;
    }
    return old_frame == kInvalidFrame;  // no frame hints: evicted is enough
  };
  for (int i = 0, steps = 0; !frame_taken(); i = (i + 7) % n) {
    ASSERT_LT(++steps, 100000) << "the page was never evicted";
    ASSERT_TRUE(tree.lookup(key_of(i), &v));
  }
  const PoolStats before = pool.stats();
  for (bool update : {false, true}) {
    HintStats st;
    const RecordHint hint_before = h;
    ASSERT_TRUE(update ? tree.update_hinted(k, &h, increment, &st, &frame) : tree.lookup_hinted(k, &h, &v, &st, &frame));
    EXPECT_EQ(st.hits, 1u) << "the page id survives eviction";
    EXPECT_EQ(h, hint_before);
    if (Pool::kFrameHints && !update) {
      EXPECT_EQ(st.frame_misses, 1u);
      EXPECT_NE(frame, old_frame);
      EXPECT_GT(pool.stats().hints.misses, before.hints.misses);
    }
    if (Pool::kFrameHints) {
      EXPECT_EQ(frame, pool.internals().frame_of(pid)) << "the frame hint is repaired";
    }
    if (!Pool::kFrameHints) {
      EXPECT_EQ(st.frame_misses, 0u);
    }
  }
  HintStats st;
  const uint64_t hint_hits = pool.stats().hints.hits;
  ASSERT_TRUE(tree.lookup_hinted(k, &h, &v, &st, &frame));
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.frame_misses, 0u);
  EXPECT_EQ(counter_of(v), 1u);
  if (Pool::kFrameHints) {
    EXPECT_GT(pool.stats().hints.hits, hint_hits) << "the repaired frame hint is followed";
  }
}

// A page reused for another part of the key space: here the hint of a record of one tree is
// given to another tree whose block of that number is a leaf of another key range, which is
// what a page free list would produce. The fences reject it.
TYPED_TEST(BTreeHints, PageReusedForAnotherKeyRange) {
  using Tree = typename TestFixture::Tree;
  auto& tree = this->tree();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(tree.insert(key_of(5000 + i), record(key_of(5000 + i), 0, 20)));
  const std::string k = key_of(5005);
  const RecordHint stale = must_locate(tree, k);
  ASSERT_EQ(stale.block, 1u);
  // The new tree: block 1 is its first leaf, keys 0.. (bulk_load reuses the root), and k
  // lies in a later leaf. k's record there has counter 9.
  std::vector<std::pair<std::string, std::string>> rows;
  for (int i = 0; i < 6000; i += 2) rows.emplace_back(key_of(i), record(key_of(i), i == 5000 ? 0 : 1, 40));
  rows.emplace_back(k, record(k, 9, 40));
  std::sort(rows.begin(), rows.end());
  Tree other = Tree::create(*this->pool_, "reused");
  other.bulk_load(rows.begin(), rows.end());
  for (bool update : {false, true}) {
    HintStats st;
    RecordHint h = stale;
    std::string v;
    ASSERT_TRUE(update ? other.update_hinted(k, &h, increment, &st) : other.lookup_hinted(k, &h, &v, &st))
        << "a leaf of another key range answered";
    if (!update) {
      EXPECT_EQ(counter_of(v), 9u);
    }
    EXPECT_EQ(st.stale, 1u);
    EXPECT_NE(h.block, 1u);
    HintStats again;
    ASSERT_TRUE(other.lookup_hinted(k, &h, &v, &again));
    EXPECT_EQ(again.hits, 1u);
    EXPECT_EQ(counter_of(v), update ? 10u : 9u);
  }
  EXPECT_NO_THROW(other.check());
}

// Garbage: a block past the space, block 0 (the metadata page), an inner node, a slot past
// the leaf's count, a slot holding another key, nonzero reserved bits.
TYPED_TEST(BTreeHints, GarbageHints) {
  auto& tree = this->tree();
  auto& pool = *this->pool_;
  const int n = this->fill_until_leaves(0, 3 * kTinyFrames, 100);
  BlockId inner = 0;
  for (BlockId b = 1; b < pool.space_blocks(tree.space()) && inner == 0; ++b) {
    SharedGuard g = pool.pin_shared(PageId(tree.space(), b));
    if (static_cast<index::NodeType>(g.data()[0]) == index::NodeType::kInner) inner = b;
  }
  ASSERT_NE(inner, 0u) << "the tree has an inner node";
  const std::string k = key_of(n / 3);
  const RecordHint right = must_locate(tree, k);
  const BlockId past = static_cast<BlockId>(pool.space_blocks(tree.space()));
  uint64_t counter = 0;
  for (RecordHint garbage : {RecordHint{past, 0}, RecordHint{0xffffffffu, 0xffff}, RecordHint{0, 3},
                             RecordHint{inner, right.slot}}) {
    this->expect_repaired(k, garbage, TestFixture::Kind::kStale, counter);
    counter += 2;
  }
  for (RecordHint moved : {RecordHint{right.block, 0xffff}, RecordHint{right.block, uint16_t(right.slot ^ 1)}}) {
    this->expect_repaired(k, moved, TestFixture::Kind::kSlotMoved, counter);
    counter += 2;
  }
  // Reserved bits are ignored: the hint is still right.
  HintStats st;
  RecordHint h{right.block, right.slot, 0xabcd};
  std::string v;
  ASSERT_TRUE(tree.lookup_hinted(k, &h, &v, &st));
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(counter_of(v), counter);
}

// A read/write set: the hint taken by the read is used by the write after a split moved the
// record (LIPAH 3.3, SELECT ... FOR UPDATE).
TYPED_TEST(BTreeHints, ReadWriteSetHintSurvivesAnInterleavedSplit) {
  auto& tree = this->tree();
  const int n = this->fill_until_leaves(0, 3, 60);
  // The read: the last key of the middle leaf... simply the largest key so far.
  const std::string k = key_of(n - 1);
  HintStats st;
  RecordHint h;
  std::string v;
  ASSERT_TRUE(tree.lookup_hinted(k, &h, &v, &st));
  const RecordHint read_hint = h;
  // Interleaved: inserts right below k split its leaf; k ends in the upper half.
  const uint64_t leaves = tree.check().leaves;
  for (int j = 0; tree.check().leaves == leaves; ++j) {
    const std::string below = key_of(n - 2) + "/" + std::to_string(1000 + j);
    ASSERT_TRUE(tree.insert(below, record(below, 0, 60)));
  }
  // The write with the read's hint.
  ASSERT_TRUE(tree.update_hinted(k, &h, increment, &st));
  EXPECT_EQ(st.stale, 1u) << "the split moved the record off the read's page";
  EXPECT_NE(h, read_hint);
  HintStats again;
  ASSERT_TRUE(tree.update_hinted(k, &h, increment, &again));
  EXPECT_EQ(again.hits, 1u);
  ASSERT_TRUE(tree.lookup(k, &v));
  EXPECT_EQ(counter_of(v), 2u);
  EXPECT_EQ(v.substr(8, k.size()), k);
}

// A primary tree and a secondary index whose values are primary key + RecordHint, under
// random inserts, removes, upserts and updates, against a std::map. Every read through the
// secondary uses the stored hint and writes the repaired one back.
TYPED_TEST(BTreeHints, SecondaryIndexWithHintsMatchesStdMap) {
  using Tree = typename TestFixture::Tree;
  auto& primary = this->tree();
  Tree secondary = Tree::create(*this->pool_, "secondary");
  std::mt19937_64 rng(0x5EC0DA4E);
  std::map<std::string, std::string> model;  // primary key -> value
  auto sec_key = [](const std::string& pk) { return "s/" + std::string(pk.rbegin(), pk.rend()); };
  auto sec_value = [](const std::string& pk, const RecordHint& h) {
    std::string v = pk;
    v.resize(pk.size() + RecordHint::kBytes);
    h.encode(v.data() + pk.size());
    return v;
  };
  // Looks pk up through the secondary, repairing the stored hint; the primary's answer.
  HintStats stats;
  auto read_through_secondary = [&](const std::string& pk, std::string* out, bool update) {
    std::string sv;
    if (!secondary.lookup(sec_key(pk), &sv)) return false;
    EXPECT_EQ(sv.substr(0, pk.size()), pk);
    const RecordHint stored = RecordHint::decode(sv.data() + pk.size());
    RecordHint h = stored;
    bool found = update ? primary.update_hinted(pk, &h, increment, &stats) : primary.lookup_hinted(pk, &h, out, &stats);
    EXPECT_TRUE(found) << "the secondary names a record the primary lacks: " << pk;
    if (h != stored) {
      EXPECT_TRUE(secondary.update(sec_key(pk), [&](std::span<std::byte> v) { h.encode(v.data() + pk.size()); }));
    }
    return found;
  };
  const int ops = 4000 / kScale;
  for (int op = 0; op < ops; ++op) {
    const std::string pk = key_of(static_cast<int>(rng() % 1500));
    const size_t pad = rng() % 160;
    const int kind = static_cast<int>(rng() % 100);
    auto it = model.find(pk);
    if (kind < 30) {  // insert
      RecordHint h;
      const std::string v = record(pk, rng() % 100, pad);
      ASSERT_EQ(primary.insert(pk, v, &h), it == model.end()) << "op " << op;
      if (it == model.end()) {
        model[pk] = v;
        ASSERT_TRUE(secondary.insert(sec_key(pk), sec_value(pk, h)));
      }
    } else if (kind < 45) {  // remove
      ASSERT_EQ(primary.remove(pk), it != model.end()) << "op " << op;
      ASSERT_EQ(secondary.remove(sec_key(pk)), it != model.end());
      if (it != model.end()) model.erase(it);
    } else if (kind < 55) {  // upsert: the secondary entry gets the fresh hint
      RecordHint h;
      const std::string v = record(pk, rng() % 100, pad);
      ASSERT_EQ(primary.upsert(pk, v, &h), it == model.end()) << "op " << op;
      model[pk] = v;
      secondary.upsert(sec_key(pk), sec_value(pk, h));
    } else if (kind < 70) {  // update through the secondary
      std::string unused;
      ASSERT_EQ(read_through_secondary(pk, &unused, true), it != model.end()) << "op " << op;
      if (it != model.end()) {
        uint64_t c = counter_of(it->second) + 1;
        std::memcpy(it->second.data(), &c, 8);
      }
    } else {  // lookup through the secondary
      std::string v;
      ASSERT_EQ(read_through_secondary(pk, &v, false), it != model.end()) << "op " << op;
      if (it != model.end()) {
        ASSERT_EQ(v, it->second) << "op " << op;
      }
    }
  }
  // Every record through the secondary, then the trees themselves.
  for (const auto& [pk, value] : model) {
    std::string v;
    ASSERT_TRUE(read_through_secondary(pk, &v, false));
    ASSERT_EQ(v, value);
  }
  EXPECT_EQ(primary.size(), model.size());
  EXPECT_EQ(secondary.size(), model.size());
  EXPECT_NO_THROW(secondary.check());
  EXPECT_GT(stats.hits, 0u);
  EXPECT_GT(stats.stale, 0u);
  EXPECT_GT(stats.slot_moved, 0u);
  EXPECT_EQ(stats.none, 0u) << "every secondary entry carries a hint";
  EXPECT_GT(testing::pages_pushed_out(this->pool_->stats()), 0u);
}

// Hinted lookups and updates of shared records (each thread keeps its own hints, like a
// secondary index or read set) while another thread inserts and removes keys between them,
// splitting and merging their leaves. Values carry a counter and a checksum of key and
// counter: a wrong record or a torn read shows; a lost update shows in the final counters.
uint64_t checksum(std::string_view key, uint64_t counter) {
  uint64_t h = 0xcbf29ce484222325ull ^ counter;
  for (char c : key) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}
std::string hot_value(std::string_view key, uint64_t counter) {
  std::string v(16, '\0');
  const uint64_t sum = checksum(key, counter);
  std::memcpy(v.data(), &counter, 8);
  std::memcpy(v.data() + 8, &sum, 8);
  v.append(key);
  return v;
}
bool hot_value_ok(std::string_view key, std::string_view v, uint64_t* counter) {
  if (v.size() != 16 + key.size() || v.substr(16) != key) return false;
  uint64_t sum;
  std::memcpy(counter, v.data(), 8);
  std::memcpy(&sum, v.data() + 8, 8);
  return sum == checksum(key, *counter);
}

TYPED_TEST(BTreeHints, ConcurrentHintedAccessesDuringSplitsAndMerges) {
  auto& tree = this->tree();
  const int hot = 64, workers = 3, min_rounds = 1000 / kScale, churn_ops = 1500 / kScale;
  auto hot_key = [](int i) { return key_of(i * 100); };
  // Churn keys lie between the hot ones, so the hot keys' leaves split and merge.
  auto churn_key = [](std::mt19937_64& rng) {
    return key_of(static_cast<int>(rng() % (hot * 100))) + "/c" + std::to_string(rng() % 1000);
  };
  for (int i = 0; i < hot; ++i) ASSERT_TRUE(tree.insert(hot_key(i), hot_value(hot_key(i), 0)));
  std::mt19937_64 churn_rng(99);
  std::vector<std::string> live;  // the churn thread's keys
  while (live.size() < 200) {
    std::string k = churn_key(churn_rng);
    if (tree.insert(k, std::string(100 + churn_rng() % 200, 'c'))) live.push_back(k);
  }
  std::atomic<bool> churn_done{false};
  std::atomic<uint64_t> errors{0};
  std::vector<std::vector<uint64_t>> increments(workers, std::vector<uint64_t>(hot, 0));
  std::vector<HintStats> stats(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        std::mt19937_64 rng(77 + w);
        std::vector<RecordHint> hints(hot);  // this thread's read/write set
        std::vector<FrameId> frames(hot, kInvalidFrame);
        std::string v;
        // At least min_rounds, and until the churn is over, so that they overlap.
        for (int r = 0; r < min_rounds || !churn_done.load(); ++r) {
          const int i = static_cast<int>(rng() % hot);
          const std::string k = hot_key(i);
          uint64_t before;
          if (!tree.lookup_hinted(k, &hints[i], &v, &stats[w], &frames[i]) || !hot_value_ok(k, v, &before)) {
            ADD_FAILURE() << "lookup of " << k << " returned a wrong record";
            errors.fetch_add(1);
            continue;
          }
          bool ok = tree.update_hinted(
              k, &hints[i],
              [&](std::span<std::byte> val) {
                std::string_view cur(reinterpret_cast<const char*>(val.data()), val.size());
                uint64_t c;
                if (!hot_value_ok(k, cur, &c)) {
                  errors.fetch_add(1);
                  return;
                }
                const std::string next = hot_value(k, c + 1);
                std::memcpy(val.data(), next.data(), next.size());
              },
              &stats[w], &frames[i]);
          if (!ok) {
            ADD_FAILURE() << "update of " << k << " did not find it";
            errors.fetch_add(1);
          }
          ++increments[w][i];
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "worker " << w << ": " << e.what();
        errors.fetch_add(1);
      }
    });
  }
  threads.emplace_back([&] {
    try {
      for (int op = 0; op < churn_ops; ++op) {
        if (live.size() < 400 && churn_rng() % 2 == 0) {
          std::string k = churn_key(churn_rng);
          if (tree.insert(k, std::string(100 + churn_rng() % 200, 'c'))) live.push_back(k);
        } else if (!live.empty()) {
          const size_t j = churn_rng() % live.size();
          if (!tree.remove(live[j])) errors.fetch_add(1);
          live[j] = live.back();
          live.pop_back();
        }
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "churn: " << e.what();
      errors.fetch_add(1);
    }
    churn_done.store(true);
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0u);
  HintStats all;
  uint64_t rounds = 0;
  for (const HintStats& s : stats) all += s;
  for (int i = 0; i < hot; ++i) {
    uint64_t want = 0;
    for (int w = 0; w < workers; ++w) want += increments[w][i];
    rounds += want;
    std::string v;
    uint64_t got;
    ASSERT_TRUE(tree.lookup(hot_key(i), &v));
    ASSERT_TRUE(hot_value_ok(hot_key(i), v, &got));
    EXPECT_EQ(got, want) << "lost or doubled updates of " << hot_key(i);
  }
  EXPECT_EQ(all.calls(), 2 * rounds);
  EXPECT_GT(all.hits, 0u);
  EXPECT_GT(all.stale + all.slot_moved, 0u) << "the churn never moved a hinted record";
  EXPECT_GT(testing::pages_pushed_out(this->pool_->stats()), 0u);
  // Shared records stay where the tree says: every hint a worker could keep is repairable.
  for (int i = 0; i < hot; ++i) {
    HintStats st;
    RecordHint h = must_locate(tree, hot_key(i));
    std::string v;
    ASSERT_TRUE(tree.lookup_hinted(hot_key(i), &h, &v, &st));
    EXPECT_EQ(st.hits, 1u);
  }
}

}  // namespace
}  // namespace calico
