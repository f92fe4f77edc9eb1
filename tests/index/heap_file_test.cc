// HeapFile: append/read against a vector model, both scans (sequential and a given page
// order; optimistic and pinned; with and without group prefetch), the Table 2 query
// (sum_column over 1024-byte rows in 8 KB pages, also with a 4-frame pool), concurrent
// appends, scans racing appends, persistence across a pool reopen, and bad input.
#include "calico/index/heap_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "support/test_util.h"
#include "support/variants.h"

namespace calico {
namespace {

using index::BasicHeapFile;
using index::HeapFile;
using index::RowId;
using index::ScanOptions;
using index::ScanRead;

using testing::expect_error;
using testing::small_options;
using testing::TempDir;

struct ModelRow {
  RowId id;
  std::string bytes;
};

std::string random_row(std::mt19937_64& rng, size_t len) {
  std::string s(len, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

std::span<const std::byte> as_span(const std::string& s) { return std::as_bytes(std::span(s.data(), s.size())); }

// Every read mode and prefetch setting a scan supports.
std::vector<ScanOptions> all_scan_options(uint32_t distance) {
  return {{ScanRead::kOptimistic, 0}, {ScanRead::kShared, 0}, {ScanRead::kOptimistic, distance},
          {ScanRead::kShared, distance}};
}
std::string describe(ScanOptions o) {
  return std::string(o.read == ScanRead::kOptimistic ? "optimistic" : "shared") + " prefetch " +
         std::to_string(o.prefetch_distance);
}

// Expects `visit(fn)` to report every model row exactly once with its bytes; when
// `in_order`, also in increasing RowId order.
template <class Visit>
void expect_scan_matches(const std::vector<ModelRow>& model, bool in_order, Visit visit) {
  std::vector<int> seen(model.size(), 0);
  std::unordered_map<uint64_t, size_t> index;  // RowId -> model position
  for (size_t i = 0; i < model.size(); ++i) index.emplace(model[i].id.raw, i);
  ASSERT_EQ(index.size(), model.size()) << "append returned a RowId twice";
  size_t visits = 0, mismatches = 0, unknown = 0;
  RowId prev{};
  bool ordered = true;
  visit([&](RowId id, std::span<const std::byte> row) {
    if (visits > 0 && !(prev < id)) ordered = false;
    prev = id;
    ++visits;
    auto it = index.find(id.raw);
    if (it == index.end()) {
      ++unknown;
      return;
    }
    size_t idx = it->second;
    ++seen[idx];
    const std::string& want = model[idx].bytes;
    if (row.size() != want.size() || std::memcmp(row.data(), want.data(), want.size()) != 0) ++mismatches;
  });
  EXPECT_EQ(visits, model.size());
  EXPECT_EQ(unknown, 0u);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<ptrdiff_t>(model.size())) << "a row missed or repeated";
  if (in_order) {
    EXPECT_TRUE(ordered) << "sequential scan not in RowId order";
  }
}

std::vector<BlockId> shuffled_pages(BlockId pages, uint64_t seed) {
  std::vector<BlockId> order(pages);
  for (BlockId b = 0; b < pages; ++b) order[b] = b + 1;
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

TEST(HeapFile, EmptyFile) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 16));
  HeapFile heap = HeapFile::create(*pool, "t");
  EXPECT_EQ(heap.size(), 0u);
  EXPECT_EQ(heap.data_pages(), 0u);
  size_t visits = 0;
  heap.scan_sequential([&](RowId, std::span<const std::byte>) { ++visits; });
  heap.scan_pages({}, [&](RowId, std::span<const std::byte>) { ++visits; });
  EXPECT_EQ(visits, 0u);
  EXPECT_EQ(heap.sum_column(0), 0);
  std::string out;
  EXPECT_FALSE(heap.read(RowId(1, 0), &out));
  pool->check_invariants();
}

TEST(HeapFile, AppendReadAndScanRandomLengths) {
  const uint64_t seed = 20240611;
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 32));  // 4 KB pages, evicts
  HeapFile heap = HeapFile::create(*pool, "rows");
  EXPECT_EQ(heap.max_row_bytes(), pool->usable_page_size() - 12);

  std::mt19937_64 rng(seed);
  std::vector<ModelRow> model;
  const int n = 1500;
  for (int i = 0; i < n; ++i) {
    size_t len = rng() % 8 == 0 ? heap.max_row_bytes() - rng() % 4 : rng() % 400;  // incl. 0 and max
    if (i == 7) len = 0;
    if (i == 8) len = heap.max_row_bytes();
    std::string row = random_row(rng, len);
    RowId id = heap.append(as_span(row));
    model.push_back({id, std::move(row)});
  }
  EXPECT_EQ(heap.size(), static_cast<uint64_t>(n));

  std::string out;
  for (const auto& r : model) {
    ASSERT_TRUE(heap.read(r.id, &out)) << "block " << r.id.block() << " slot " << r.id.slot();
    ASSERT_EQ(out, r.bytes) << "block " << r.id.block() << " slot " << r.id.slot();
  }
  std::vector<BlockId> order = shuffled_pages(heap.data_pages(), seed + 1);
  for (ScanOptions o : all_scan_options(4)) {
    SCOPED_TRACE(describe(o));
    expect_scan_matches(model, /*in_order=*/true, [&](auto fn) { heap.scan_sequential(fn, o); });
    expect_scan_matches(model, /*in_order=*/false, [&](auto fn) { heap.scan_pages(order, fn, o); });
  }
  pool->check_invariants();
}

// Table 2: SUM over one 8-byte column of 1024-byte rows in 8 KB pages, pages in block order
// (heap scan) and in a random permutation (B-tree-leaf-like), for every scan variant.
template <class Pool>
void table2_sum(uint32_t frames, bool expect_evictions) {
  const uint64_t seed = 42 + frames;
  SCOPED_TRACE("seed " + std::to_string(seed) + ", frames " + std::to_string(frames));
  TempDir dir;
  auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), frames, 8192));
  auto heap = BasicHeapFile<Pool>::create(*pool, "table2");
  constexpr size_t kRowBytes = 1024, kColumn = 16;
  ASSERT_EQ(heap.rows_per_page(kRowBytes), 7u);  // (8176 - 8) / 1028

  std::mt19937_64 rng(seed);
  const BlockId pages = 60;
  const size_t rows = heap.rows_per_page(kRowBytes) * pages;
  uint64_t model_sum = 0;  // wraps like the query
  std::string row(kRowBytes, '\0');
  for (size_t i = 0; i < rows; ++i) {
    for (auto& c : row) c = static_cast<char>(rng());
    uint64_t v = rng();  // full 64-bit range: negative values and wraparound too
    std::memcpy(row.data() + kColumn, &v, 8);
    model_sum += v;
    RowId id = heap.append(as_span(row));
    ASSERT_EQ(id.block(), 1 + i / 7) << "row " << i;
    ASSERT_EQ(id.slot(), i % 7) << "row " << i;
  }
  ASSERT_EQ(heap.data_pages(), pages);
  std::vector<BlockId> order = shuffled_pages(pages, seed);
  for (ScanOptions o : all_scan_options(8)) {
    SCOPED_TRACE(describe(o));
    EXPECT_EQ(heap.sum_column(kColumn, o), static_cast<int64_t>(model_sum));
    EXPECT_EQ(heap.sum_column(kColumn, order, o), static_cast<int64_t>(model_sum));
  }
  // The last 8 bytes of a row are a column too; a repeated page counts twice.
  std::vector<BlockId> twice{3, 3};
  int64_t once = heap.sum_column(kRowBytes - 8, std::span<const BlockId>(twice).first(1));
  EXPECT_EQ(heap.sum_column(kRowBytes - 8, twice), static_cast<int64_t>(2 * static_cast<uint64_t>(once)));
  if (expect_evictions) {  // the scans ran with pages mostly on disk, and prefetch read some
    EXPECT_GT(pool->stats().evictions, 0u);
    EXPECT_GT(pool->stats().prefetch_issued, 0u);
  }
  pool->check_invariants();
}

// Scans, sums and concurrent appends on every translation that evicts.
template <class Pool>
class HeapFileOnEveryTranslation : public ::testing::Test {};
TYPED_TEST_SUITE(HeapFileOnEveryTranslation, testing::IndexPools, testing::PoolName);

TYPED_TEST(HeapFileOnEveryTranslation, Table2SumColumnResidentPool) { table2_sum<TypeParam>(256, false); }
TYPED_TEST(HeapFileOnEveryTranslation, Table2SumColumnTinyPoolEvictsConstantly) {
  table2_sum<TypeParam>(4, true);
}
// direct: the ceiling of the scan benchmarks, with every page resident.
TEST(HeapFileOnDirect, Table2SumColumnResidentPool) {
  table2_sum<BasicBufferPool<translation::DirectTranslation>>(256, false);
}

// Rows that describe themselves: 8 bytes of id, then bytes derived from it.
std::string self_row(uint64_t id) {
  std::string s(8 + id % 61, '\0');
  std::memcpy(s.data(), &id, 8);
  for (size_t i = 8; i < s.size(); ++i) s[i] = static_cast<char>(id * 31 + i);
  return s;
}
bool self_row_ok(std::span<const std::byte> row, uint64_t* id) {
  if (row.size() < 8) return false;
  std::memcpy(id, row.data(), 8);
  std::string want = self_row(*id);
  return row.size() == want.size() && std::memcmp(row.data(), want.data(), want.size()) == 0;
}

TYPED_TEST(HeapFileOnEveryTranslation, ConcurrentAppendsThenScanFindsEveryRowOnce) {
  using Pool = TypeParam;
  TempDir dir;
  auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 16));
  auto heap = BasicHeapFile<Pool>::create(*pool, "conc");
  const int threads = 4, per_thread = 600;
  std::vector<std::vector<RowId>> ids(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        uint64_t id = (uint64_t(t) << 32) | i;
        ids[t].push_back(heap.append(as_span(self_row(id))));
      }
    });
  }
  for (auto& w : workers) w.join();
  ASSERT_EQ(heap.size(), uint64_t(threads) * per_thread);

  std::vector<ModelRow> model;
  for (int t = 0; t < threads; ++t) {
    for (int i = 0; i < per_thread; ++i) model.push_back({ids[t][i], self_row((uint64_t(t) << 32) | i)});
  }
  std::string out;
  for (const auto& r : model) {
    ASSERT_TRUE(heap.read(r.id, &out));
    ASSERT_EQ(out, r.bytes);
  }
  expect_scan_matches(model, true, [&](auto fn) { heap.scan_sequential(fn); });
  expect_scan_matches(model, true, [&](auto fn) { heap.scan_sequential(fn, {ScanRead::kShared, 2}); });
  pool->check_invariants();
}

// Optimistic scans race appends (the intended race of rule 4): every row a scan reports must
// be complete, and a scan sees at least the rows appended before it started.
TYPED_TEST(HeapFileOnEveryTranslation, ScansRacingAppendsSeeOnlyCompleteRows) {
  using Pool = TypeParam;
  TempDir dir;
  auto pool = Pool::open(testing::pool_options<Pool>(dir.path(), 16));
  auto heap = BasicHeapFile<Pool>::create(*pool, "race");
  const int appenders = 2, per_thread = 1500;
  std::atomic<int> done{0};
  std::atomic<size_t> scans{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < appenders; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        // Halfway, let the scanner finish two scans, so that scans overlap appends for sure.
        while (i == per_thread / 2 && scans.load() < 2) std::this_thread::yield();
        heap.append(as_span(self_row((uint64_t(t) << 32) | i)));
      }
      done.fetch_add(1);
    });
  }
  size_t bad = 0, too_few = 0;
  bool last_round = false;
  while (!last_round) {
    last_round = done.load() == appenders;  // one more full scan after the appenders finish
    const size_t k = scans.load();
    ScanOptions o{k % 2 == 0 ? ScanRead::kOptimistic : ScanRead::kShared, uint32_t(k % 3)};
    uint64_t before = heap.size();
    size_t rows = 0;
    heap.scan_sequential(
        [&](RowId, std::span<const std::byte> row) {
          uint64_t id;
          if (!self_row_ok(row, &id)) ++bad;
          ++rows;
        },
        o);
    if (rows < before) ++too_few;
    heap.sum_column(0);  // exercised under the race; its value is checked below
    scans.fetch_add(1);
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(bad, 0u);
  EXPECT_EQ(too_few, 0u);
  EXPECT_GE(scans.load(), 3u);
  uint64_t want = 0;
  for (int t = 0; t < appenders; ++t) {
    for (int i = 0; i < per_thread; ++i) want += (uint64_t(t) << 32) | i;
  }
  EXPECT_EQ(heap.sum_column(0, {ScanRead::kOptimistic, 4}), static_cast<int64_t>(want));
  EXPECT_EQ(heap.size(), uint64_t(appenders) * per_thread);
}

TEST(HeapFile, PersistsAcrossPoolReopen) {
  const uint64_t seed = 99;
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir;
  std::mt19937_64 rng(seed);
  std::vector<ModelRow> model;
  {
    auto pool = BufferPool::open(small_options(dir.path(), 8, 8192));
    HeapFile heap = HeapFile::create(*pool, "persist");
    for (int i = 0; i < 300; ++i) {
      std::string row = random_row(rng, rng() % 700);
      model.push_back({heap.append(as_span(row)), row});
    }
    pool->flush();
  }
  auto pool = BufferPool::open(small_options(dir.path(), 8, 8192));
  HeapFile heap = HeapFile::open(*pool, "persist");
  EXPECT_EQ(heap.size(), model.size());
  std::string out;
  for (const auto& r : model) {
    ASSERT_TRUE(heap.read(r.id, &out));
    ASSERT_EQ(out, r.bytes);
  }
  expect_scan_matches(model, true, [&](auto fn) { heap.scan_sequential(fn); });
  // Appends continue on the last page after the reopen.
  BlockId last = heap.data_pages();
  std::string row = "after reopen";
  RowId id = heap.append(as_span(row));
  EXPECT_EQ(id.block(), last);
  model.push_back({id, row});
  expect_scan_matches(model, true, [&](auto fn) { heap.scan_sequential(fn, {ScanRead::kShared, 0}); });
}

TEST(HeapFile, RejectsBadInput) {
  TempDir dir;
  auto pool = BufferPool::open(small_options(dir.path(), 16));
  HeapFile heap = HeapFile::create(*pool, "bad");
  std::string too_long(heap.max_row_bytes() + 1, 'x');
  Error e = expect_error(ErrorCode::kInvalidArgument, [&] { heap.append(as_span(too_long)); });
  EXPECT_NE(std::string(e.what()).find(std::to_string(heap.max_row_bytes())), std::string::npos);
  EXPECT_EQ(heap.size(), 0u);
  too_long.pop_back();
  RowId big = heap.append(as_span(too_long));  // exactly the maximum fits (one per page)
  RowId small = heap.append("abc");
  EXPECT_EQ(small.block(), big.block() + 1);

  std::string out = "untouched";
  EXPECT_FALSE(heap.read(RowId(0, 0), &out));             // the metadata page
  EXPECT_FALSE(heap.read(RowId(3, 0), &out));             // past the last page
  EXPECT_FALSE(heap.read(RowId(0xFFFFFFFFu, 0), &out));
  EXPECT_FALSE(heap.read(RowId(small.block(), 1), &out));  // bad slot
  EXPECT_FALSE(heap.read(RowId(small.block(), 0xFFFFFFFFu), &out));
  EXPECT_EQ(out, "untouched");
  EXPECT_TRUE(heap.read(small, &out));
  EXPECT_EQ(out, "abc");

  auto ignore = [](RowId, std::span<const std::byte>) {};
  std::vector<BlockId> meta_page{0}, past_end{1, 3};
  expect_error(ErrorCode::kInvalidArgument, [&] { heap.scan_pages(meta_page, ignore); });
  expect_error(ErrorCode::kInvalidArgument, [&] { heap.scan_pages(past_end, ignore); });
  expect_error(ErrorCode::kInvalidArgument, [&] { heap.sum_column(0, past_end); });
  expect_error(ErrorCode::kInvalidArgument, [&] { heap.sum_column(heap.max_row_bytes() - 7); });
  expect_error(ErrorCode::kInvalidArgument, [&] { heap.sum_column(~size_t{0}); });
  expect_error(ErrorCode::kInvalidArgument,
               [&] { heap.scan_sequential(ignore, {ScanRead::kOptimistic, HeapFile::kMaxPrefetchDistance + 1}); });

  // open() of spaces that are not heap files.
  SpaceId other = pool->create_space("pattern");
  testing::fill_space(*pool, other, 2, [](uint64_t b) { return b; });
  e = expect_error(ErrorCode::kInvalidArgument, [&] { HeapFile::open(*pool, "pattern"); });
  EXPECT_NE(std::string(e.what()).find("not a heap file"), std::string::npos) << e.what();
  pool->create_space("empty");
  expect_error(ErrorCode::kInvalidArgument, [&] { HeapFile::open(*pool, "empty"); });
  expect_error(ErrorCode::kUnknownSpace, [&] { HeapFile::open(*pool, "missing"); });
  expect_error(ErrorCode::kSpaceExists, [&] { HeapFile::create(*pool, "bad"); });
  EXPECT_NO_THROW(HeapFile::open(*pool, "bad"));
  pool->check_invariants();
}

}  // namespace
}  // namespace calico
