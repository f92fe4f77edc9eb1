// Pages with a valid checksum but bytes their index cannot accept (a wrong header, an offset
// past the page, a cyclic or out-of-range chain pointer, a page of another kind or of
// another node): every index operation that reads them throws Error(kCorruptPage) naming the
// page, never aborts or hangs, and the pool stays usable (invariants hold, another space
// reads back intact). Each corruption is made once through the pool (pin_exclusive +
// mark_dirty) and, for each index, once in the file on disk with a correct checksum
// trailer (io::stamp_page) followed by a reopen.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "calico/index/btree.h"
#include "calico/index/heap_file.h"
#include "calico/index/hnsw.h"
#include "calico/index/ivf.h"
#include "io/checksum.h"
#include "support/corrupt_page_env.h"
#include "support/test_util.h"

namespace calico {
namespace {

using index::HeapFile;
using index::RowId;
using index::ScanOptions;
using index::ScanRead;
using index::HeapFormat;

using Env = testing::CorruptPageEnv;
using testing::load;
using testing::store;

// --- B+tree ----------------------------------------------------------------------------

using index::BTree;
using index::NodeHeader;
using index::Slot;

std::string bkey(int i) {
  char b[16];
  std::snprintf(b, sizeof b, "key%06d", i);
  return b;
}
constexpr int kTreeKeys = 3000;

// A tree of height >= 2. Block 1 (the first root) stays the leftmost leaf: it holds bkey(0).
void build_tree(Env& env) {
  BTree t = BTree::create(env.pool(), "tree");
  for (int i = 0; i < kTreeKeys; ++i) ASSERT_TRUE(t.insert(bkey(i), std::string(20, 'v')));
  ASSERT_GE(t.check().height, 2u);
}
PageId tree_page(Env& env, BlockId b) { return PageId(env.pool().open_space("tree"), b); }
BlockId tree_root(Env& env) {
  SharedGuard g = env.pool().pin_shared(tree_page(env, 0));
  return load<index::MetaPage>(g.data(), 0).root;
}

void expect_tree_reads_fail(Env& env, PageId bad, const std::string& key) {
  BTree t = BTree::open(env.pool(), "tree");
  std::string v;
  env.expect_corrupt(bad, [&] { t.lookup(key, &v); });
  env.expect_corrupt(bad, [&] { t.scan(key, [](std::string_view, std::string_view) { return true; }); });
  env.expect_corrupt(bad, [&] { t.insert(key + "x", "y"); });
  env.expect_corrupt(bad, [&] { t.remove(key); });
  // Keys elsewhere in the tree still work when the bad page is a leaf.
}

TEST(CorruptPages, BTreeLeafWithWrongHeader) {
  Env env;
  build_tree(env);
  const PageId leaf = tree_page(env, 1);
  env.patch(leaf, [](std::byte* p) { p[offsetof(NodeHeader, type)] = std::byte{7}; });
  expect_tree_reads_fail(env, leaf, bkey(0));
}

TEST(CorruptPages, BTreeLeafSlotOffsetPastThePage) {
  Env env;
  build_tree(env);
  const PageId leaf = tree_page(env, 1);
  env.patch(leaf, [](std::byte* p) {
    const uint16_t count = load<uint16_t>(p, offsetof(NodeHeader, count));
    for (uint16_t i = 0; i < count; ++i) store<uint16_t>(p, sizeof(NodeHeader) + i * sizeof(Slot) + offsetof(Slot, offset), 0xFFF0);
  });
  expect_tree_reads_fail(env, leaf, bkey(0));
}

TEST(CorruptPages, BTreeLeafHeapBeginPastThePageIsNotWrittenThrough) {
  Env env;
  build_tree(env);
  const PageId leaf = tree_page(env, 1);
  env.patch(leaf, [](std::byte* p) { store<uint16_t>(p, offsetof(NodeHeader, heap_begin), 0xFFF0); });
  BTree t = BTree::open(env.pool(), "tree");
  env.expect_corrupt(leaf, [&] { t.insert(bkey(0) + "a", std::string(100, 'z')); });
  env.expect_corrupt(leaf, [&] { t.remove(bkey(0)); });
}

TEST(CorruptPages, BTreeInnerNodePointingToItself) {
  Env env;
  build_tree(env);
  const PageId root = tree_page(env, tree_root(env));
  // Every child reference of the root (slots and the upper child) names the root.
  env.patch(root, [&](std::byte* p) {
    index::NodeRef n(p, env.pool().usable_page_size());
    for (size_t i = 0; i < n.count(); ++i) n.set_child(i, root.block());
    n.set_link(root.block());
  });
  expect_tree_reads_fail(env, root, bkey(1500));
}

TEST(CorruptPages, BTreeInnerNodeChildPastTheSpace) {
  Env env;
  build_tree(env);
  const PageId root = tree_page(env, tree_root(env));
  env.patch(root, [&](std::byte* p) {
    index::NodeRef n(p, env.pool().usable_page_size());
    for (size_t i = 0; i < n.count(); ++i) n.set_child(i, 1u << 30);
    n.set_link(1u << 30);
  });
  expect_tree_reads_fail(env, root, bkey(1500));
}

TEST(CorruptPages, BTreeLeafReplacedByAMetadataPageOnDisk) {
  Env env;
  build_tree(env);
  const PageId leaf = tree_page(env, 1);
  std::vector<std::byte> meta(env.pool().usable_page_size());
  {
    SharedGuard g = env.pool().pin_shared(tree_page(env, 0));
    std::memcpy(meta.data(), g.data(), meta.size());
  }
  env.patch_on_disk(leaf, [&](std::byte* p) { std::memcpy(p, meta.data(), meta.size()); });
  expect_tree_reads_fail(env, leaf, bkey(0));
}

// --- heap file -------------------------------------------------------------------------

constexpr int kHeapRows = 300;

void build_heap(Env& env) {
  HeapFile h = HeapFile::create(env.pool(), "heap");
  for (int i = 0; i < kHeapRows; ++i) h.append(std::string(40, static_cast<char>('a' + i % 26)));
  ASSERT_GE(h.data_pages(), 3u);
}

void expect_heap_reads_fail(Env& env, PageId bad, bool append_too) {
  HeapFile h = HeapFile::open(env.pool(), "heap");
  for (ScanRead read : {ScanRead::kOptimistic, ScanRead::kShared}) {
    ScanOptions opt;
    opt.read = read;
    env.expect_corrupt(bad, [&] { h.scan_sequential([](RowId, std::span<const std::byte>) {}, opt); });
    env.expect_corrupt(bad, [&] { h.sum_column(0, opt); });
    const BlockId order[] = {bad.block()};
    if (bad.block() != 0) {
      env.expect_corrupt(bad, [&] { h.scan_pages(order, [](RowId, std::span<const std::byte>) {}, opt); });
    }
  }
  if (bad.block() != 0) {
    std::string out;
    env.expect_corrupt(bad, [&] { h.read(RowId(bad.block(), 0), &out); });
  }
  if (append_too) env.expect_corrupt(bad, [&] { h.append(std::string_view("row")); });
}

TEST(CorruptPages, HeapPageWithWrongHeader) {
  Env env;
  build_heap(env);
  const PageId page(env.pool().open_space("heap"), 2);
  env.patch(page, [](std::byte* p) { store<uint16_t>(p, 2, 0xFFF0); });  // rows_begin past the page
  expect_heap_reads_fail(env, page, false);
}

TEST(CorruptPages, HeapSlotPastThePage) {
  Env env;
  build_heap(env);
  const PageId page(env.pool().open_space("heap"), 1);
  env.patch(page, [](std::byte* p) { store<uint16_t>(p, HeapFormat::kHeaderBytes, 0xFF00); });
  expect_heap_reads_fail(env, page, false);
}

TEST(CorruptPages, HeapLastPageCorruptOnDisk) {
  Env env;
  BlockId last;
  {
    build_heap(env);
    last = HeapFile::open(env.pool(), "heap").data_pages();
  }
  const PageId page(env.pool().open_space("heap"), last);
  env.patch_on_disk(page, [](std::byte* p) { store<uint32_t>(p, 4, 0x12345678); });  // a foreign tag
  expect_heap_reads_fail(env, page, true);
}

TEST(CorruptPages, HeapMetadataNamesAPagePastTheSpace) {
  Env env;
  build_heap(env);
  const PageId meta(env.pool().open_space("heap"), 0);
  HeapFile h = HeapFile::open(env.pool(), "heap");
  env.patch(meta, [](std::byte* p) { store<uint32_t>(p, 24, 1u << 20); });
  env.expect_corrupt(meta, [&] { h.scan_sequential([](RowId, std::span<const std::byte>) {}); });
  env.expect_corrupt(meta, [&] { h.sum_column(0); });
  env.expect_corrupt(meta, [&] { h.append(std::string_view("row")); });
}

// --- HNSW ------------------------------------------------------------------------------

using index::HnswMeta;
using index::HnswRowHead;
using Hnsw = index::BasicHnsw<BufferPool>;
constexpr uint32_t kDim = 8;
constexpr uint32_t kNodes = 300;

std::vector<float> vec_of(uint32_t i) {
  std::vector<float> v(kDim);
  for (uint32_t d = 0; d < kDim; ++d) v[d] = static_cast<float>((i * 2654435761u >> (d * 3)) % 97) + 0.5f * d;
  return v;
}

void build_hnsw(Env& env) {
  index::HnswParams p;
  p.dim = kDim;
  p.M = 4;
  p.ef_construction = 20;
  Hnsw h = Hnsw::create(env.pool(), "hnsw", p, kNodes + 10);  // room for one more add
  for (uint32_t i = 0; i < kNodes; ++i) h.add(i, vec_of(i).data());
  h.check_structure();
}

// The entry point and its page.
uint32_t hnsw_entry(Env& env, const Hnsw& h) {
  SharedGuard g = env.pool().pin_shared(PageId(h.space(), 0));
  return load<HnswMeta>(g.data(), 0).entry;
}

void expect_hnsw_reads_fail(Env& env, PageId bad) {
  Hnsw h = Hnsw::open(env.pool(), "hnsw");
  index::HnswSearchState st(h);
  std::vector<vector::Neighbor> out;
  for (bool optimistic : {true, false}) {
    index::HnswSearchOptions opt;
    opt.optimistic = optimistic;
    env.expect_corrupt(bad, [&] { h.search(vec_of(7).data(), opt, st, &out); });
  }
  env.expect_corrupt(bad, [&] { h.add(kNodes, vec_of(1).data()); });
}

TEST(CorruptPages, HnswEntryPointWithWrongHead) {
  Env env;
  build_hnsw(env);
  Hnsw h = Hnsw::open(env.pool(), "hnsw");
  const uint32_t e = hnsw_entry(env, h);
  const PageId page(h.space(), h.layout().block_of(e));
  env.patch(page, [&](std::byte* p) {
    HnswRowHead head = load<HnswRowHead>(p, h.layout().row_offset(e));
    head.flags = 7;
    head.count = 1000;
    store(p, h.layout().row_offset(e), head);
  });
  expect_hnsw_reads_fail(env, page);
}

TEST(CorruptPages, HnswNeighbourPastTheCapacity) {
  Env env;
  build_hnsw(env);
  Hnsw h = Hnsw::open(env.pool(), "hnsw");
  const uint32_t e = hnsw_entry(env, h);
  // Every level-0 list of every node on the entry's page names a node past the capacity.
  const PageId page(h.space(), h.layout().block_of(e));
  env.patch(page, [&](std::byte* p) {
    const uint32_t first = (e / h.layout().per_page) * h.layout().per_page;
    for (uint32_t id = first; id < first + h.layout().per_page; ++id) {
      store<uint32_t>(p, h.layout().row_offset(id), 1);
      store<uint32_t>(p, h.layout().row_offset(id) + sizeof(HnswRowHead), 0x00FFFFFFu);  // past the capacity
    }
  });
  Hnsw again = Hnsw::open(env.pool(), "hnsw");
  index::HnswSearchState st(again);
  std::vector<vector::Neighbor> out;
  index::HnswSearchOptions opt;
  opt.ef = kNodes;  // the search reaches the whole graph, so the bad page too
  for (bool optimistic : {true, false}) {
    opt.optimistic = optimistic;
    env.expect_corrupt(page, [&] { again.search(vec_of(7).data(), opt, st, &out); });
  }
}

TEST(CorruptPages, HnswUpperListPastTheSpace) {
  Env env;
  build_hnsw(env);
  Hnsw h = Hnsw::open(env.pool(), "hnsw");
  const uint32_t e = hnsw_entry(env, h);
  HnswMeta m;
  {
    SharedGuard g = env.pool().pin_shared(PageId(h.space(), 0));
    m = load<HnswMeta>(g.data(), 0);
  }
  ASSERT_GT(m.max_level, 0u) << "the test needs an entry point above level 0";
  const PageId page(h.space(), h.layout().block_of(e));
  env.patch(page, [&](std::byte* p) { store<uint32_t>(p, h.layout().row_offset(e) + 4, 0x7FFFFF00u); });
  expect_hnsw_reads_fail(env, page);
}

// Found by hnsw_page_fuzz: metadata naming the node being added as the entry point (at level
// 0) made the insert seed its search with the node itself, choose it as its own neighbour
// and abort on an invariant. The metadata is what is corrupt, and the add must say so.
TEST(CorruptPages, HnswEntryPointNamingTheNodeBeingAdded) {
  Env env;
  build_hnsw(env);
  uint32_t spare = kNodes;
  {
    Hnsw h = Hnsw::open(env.pool(), "hnsw");
    while (spare < kNodes + 10 && h.level_of(spare) != 0) ++spare;
    ASSERT_LT(spare, kNodes + 10u) << "the test needs a level-0 id to add";
  }
  Hnsw h = Hnsw::open(env.pool(), "hnsw");
  const PageId meta_page(h.space(), 0);
  env.patch(meta_page, [&](std::byte* p) {
    store<uint32_t>(p, offsetof(HnswMeta, entry), spare);
    store<uint32_t>(p, offsetof(HnswMeta, max_level), 0);
  });
  env.expect_corrupt(meta_page, [&] { h.add(spare, vec_of(spare).data()); });
}

TEST(CorruptPages, HnswMetadataEntryPastTheCapacity) {
  Env env;
  build_hnsw(env);
  Hnsw h = Hnsw::open(env.pool(), "hnsw");
  const PageId meta(h.space(), 0);
  env.patch(meta, [](std::byte* p) { store<uint32_t>(p, offsetof(HnswMeta, entry), kNodes + 50); });
  index::HnswSearchState st(h);
  std::vector<vector::Neighbor> out;
  for (bool optimistic : {true, false}) {
    index::HnswSearchOptions opt;
    opt.optimistic = optimistic;
    env.expect_corrupt(meta, [&] { h.search(vec_of(7).data(), opt, st, &out); });
  }
  env.expect_corrupt(meta, [&] { (void)h.size(); });
  env.expect_corrupt(meta, [&] { h.add(kNodes, vec_of(1).data()); });
}

TEST(CorruptPages, HnswLevel0PageCorruptOnDisk) {
  Env env;
  build_hnsw(env);
  uint32_t e;
  PageId page;
  uint32_t row;
  {
    Hnsw h = Hnsw::open(env.pool(), "hnsw");
    e = hnsw_entry(env, h);
    page = PageId(h.space(), h.layout().block_of(e));
    row = h.layout().row_offset(e);
  }
  env.patch_on_disk(page, [&](std::byte* p) {
    HnswRowHead head = load<HnswRowHead>(p, row);
    head.flags = 6;  // kDeleted without kPresent
    head.count = 5000;
    store(p, row, head);
  });
  expect_hnsw_reads_fail(env, page);
}

// A stored vector of NaN (a corrupt page, or an inner product of huge finite values) must
// not reach the sorts of search and add as NaN: std::sort needs a strict weak order.
TEST(CorruptPages, HnswNaNVectorsAreOrderedAsInfinitelyFar) {
  Env env;
  build_hnsw(env);
  Hnsw h = Hnsw::open(env.pool(), "hnsw");
  const uint32_t e = hnsw_entry(env, h);
  const PageId page(h.space(), h.layout().block_of(e));
  env.patch(page, [&](std::byte* p) {
    const uint32_t first = (e / h.layout().per_page) * h.layout().per_page;
    for (uint32_t id = first; id < first + h.layout().per_page; ++id) {
      for (uint32_t d = 0; d < kDim; ++d) store(p, h.layout().vector_offset(id) + 4 * d, std::numeric_limits<float>::quiet_NaN());
    }
  });
  index::HnswSearchState st(h);
  std::vector<vector::Neighbor> out;
  index::HnswSearchOptions opt;
  opt.k = kNodes;
  opt.ef = kNodes;
  for (bool optimistic : {true, false}) {
    opt.optimistic = optimistic;
    h.search(vec_of(7).data(), opt, st, &out);
    ASSERT_FALSE(out.empty());
    for (const vector::Neighbor& n : out) EXPECT_FALSE(std::isnan(n.distance)) << "node " << n.id;
    EXPECT_TRUE(std::is_sorted(out.begin(), out.end()));
  }
  for (uint32_t id = kNodes; id < kNodes + 10; ++id) h.add(id, vec_of(id).data());
  h.check_structure();
  env.expect_sound();
}

// --- IVF -------------------------------------------------------------------------------

using Ivf = index::BasicIvf<BufferPool>;
constexpr uint32_t kIvfRows = 400;
constexpr uint32_t kLists = 4;

void build_ivf(Env& env) {
  std::vector<float> data;
  for (uint32_t i = 0; i < kIvfRows; ++i) {
    std::vector<float> v = vec_of(i);
    data.insert(data.end(), v.begin(), v.end());
  }
  index::IvfParams p;
  p.dim = kDim;
  p.nlist = kLists;
  p.threads = 1;
  Ivf ivf = Ivf::build(env.pool(), "ivf", p, data.data(), kIvfRows);
  ASSERT_EQ(ivf.verify(), kIvfRows);
}

// The directory entry of list l.
index::ivf_detail::IvfDirEntry ivf_dir(Env& env, uint32_t l) {
  const SpaceId s = env.pool().open_space("ivf");
  index::ivf_detail::IvfMeta m;
  {
    SharedGuard g = env.pool().pin_shared(PageId(s, 0));
    m = load<index::ivf_detail::IvfMeta>(g.data(), 0);
  }
  SharedGuard g = env.pool().pin_shared(PageId(s, m.directory_first + l / m.entries_per_page));
  return load<index::ivf_detail::IvfDirEntry>(g.data(), size_t{l % m.entries_per_page} * 16);
}

void expect_ivf_reads_fail(Env& env, PageId bad, uint32_t list) {
  Ivf ivf = Ivf::open(env.pool(), "ivf");
  index::IvfSearchState st(ivf);
  std::vector<vector::Neighbor> out;
  for (bool optimistic : {true, false}) {
    for (bool prefetch : {true, false}) {
      index::IvfSearchOptions opt;
      opt.nprobe = kLists;
      opt.optimistic = optimistic;
      opt.prefetch = prefetch;
      env.expect_corrupt(bad, [&] { ivf.search(vec_of(3).data(), opt, st, &out); });
    }
  }
  std::vector<uint32_t> ids;
  env.expect_corrupt(bad, [&] { ivf.list_ids(list, &ids); });
}

index::ivf_detail::IvfMeta ivf_meta(Env& env) {
  SharedGuard g = env.pool().pin_shared(PageId(env.pool().open_space("ivf"), 0));
  return load<index::ivf_detail::IvfMeta>(g.data(), 0);
}

// open() reads the centroid and directory pages: bytes there that the metadata's index cannot
// accept are a corrupt page naming that page (open() answered kInvalidArgument naming block
// 0, "not an IVF index", until the fuzz harness checked the code).
TEST(CorruptPages, IvfOpenNamesANonFiniteCentroidPage) {
  Env env;
  build_ivf(env);
  const PageId page(env.pool().open_space("ivf"), ivf_meta(env).centroid_first);
  env.patch(page, [](std::byte* p) { store<float>(p, 4, std::numeric_limits<float>::quiet_NaN()); });
  env.expect_corrupt(page, [&] { Ivf::open(env.pool(), "ivf"); });
}

TEST(CorruptPages, IvfOpenNamesADirectoryEntryOutsideThePostingPages) {
  Env env;
  build_ivf(env);
  const PageId page(env.pool().open_space("ivf"), ivf_meta(env).directory_first);
  env.patch(page, [](std::byte* p) { store<uint32_t>(p, 0, 0); });  // list 0 starts at the metadata page
  env.expect_corrupt(page, [&] { Ivf::open(env.pool(), "ivf"); });
}

TEST(CorruptPages, IvfPostingPageWithWrongTag) {
  Env env;
  build_ivf(env);
  const PageId page(env.pool().open_space("ivf"), ivf_dir(env, 0).first);
  env.patch(page, [](std::byte* p) { store<uint32_t>(p, 0, 0xBADC0DE); });
  expect_ivf_reads_fail(env, page, 0);
}

TEST(CorruptPages, IvfPostingCountPastThePage) {
  Env env;
  build_ivf(env);
  const PageId page(env.pool().open_space("ivf"), ivf_dir(env, 1).first);
  env.patch(page, [](std::byte* p) { store<uint32_t>(p, 8, 100000); });
  expect_ivf_reads_fail(env, page, 1);
}

TEST(CorruptPages, IvfPostingPageOfAnotherList) {
  Env env;
  build_ivf(env);
  const SpaceId s = env.pool().open_space("ivf");
  const PageId page(s, ivf_dir(env, 2).first);
  std::vector<std::byte> other(env.pool().usable_page_size());
  {
    SharedGuard g = env.pool().pin_shared(PageId(s, ivf_dir(env, 3).first));
    std::memcpy(other.data(), g.data(), other.size());
  }
  env.patch(page, [&](std::byte* p) { std::memcpy(p, other.data(), other.size()); });
  expect_ivf_reads_fail(env, page, 2);
}

TEST(CorruptPages, IvfCyclicPostingChain) {
  Env env;
  build_ivf(env);
  const index::ivf_detail::IvfDirEntry e = ivf_dir(env, 0);
  ASSERT_EQ(e.first, e.tail) << "the test expects one-page lists";
  const PageId page(env.pool().open_space("ivf"), e.first);
  env.patch(page, [&](std::byte* p) { store<uint32_t>(p, 12, e.first); });  // next = itself
  expect_ivf_reads_fail(env, page, 0);
}

TEST(CorruptPages, IvfNextPastTheSpaceOnDisk) {
  Env env;
  build_ivf(env);
  const PageId page(env.pool().open_space("ivf"), ivf_dir(env, 1).first);
  env.patch_on_disk(page, [](std::byte* p) { store<uint32_t>(p, 12, 0xFFFFFF); });
  expect_ivf_reads_fail(env, page, 1);
}

TEST(CorruptPages, IvfAddToACorruptTail) {
  Env env;
  build_ivf(env);
  Ivf ivf = Ivf::open(env.pool(), "ivf");
  // Every list's tail page gets a wrong tag: add() must refuse whatever list it picks.
  std::vector<PageId> tails;
  for (uint32_t l = 0; l < kLists; ++l) tails.push_back(PageId(ivf.space(), ivf_dir(env, l).tail));
  for (PageId t : tails) env.patch(t, [](std::byte* p) { store<uint32_t>(p, 0, 0xBADC0DE); });
  try {
    ivf.add(7, vec_of(7).data());
    ADD_FAILURE() << "add to a corrupt tail succeeded";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kCorruptPage) << err.what();
    EXPECT_NE(std::find(tails.begin(), tails.end(), err.page()), tails.end()) << err.what();
  }
  env.expect_sound();
}

TEST(CorruptPages, IvfDirectoryTailNamingTheDirectoryPage) {
  Env env;
  build_ivf(env);
  Ivf ivf = Ivf::open(env.pool(), "ivf");
  const SpaceId s = ivf.space();
  index::ivf_detail::IvfMeta m;
  {
    SharedGuard g = env.pool().pin_shared(PageId(s, 0));
    m = load<index::ivf_detail::IvfMeta>(g.data(), 0);
  }
  // Every list's tail names the directory page itself (add latches it already: no hang).
  const PageId dir(s, m.directory_first);
  env.patch(dir, [&](std::byte* p) {
    for (uint32_t l = 0; l < kLists; ++l) store<uint32_t>(p, l * 16 + 4, m.directory_first);
  });
  env.expect_corrupt(dir, [&] { ivf.add(7, vec_of(7).data()); });
}

}  // namespace
}  // namespace calico
