// Fuzz target: arbitrary bytes as one page (metadata or data page) of a small heap file;
// then scans (optimistic and shared), column sums, reads and an append. See fuzz_harness.h.
#include "fuzz_harness.h"
#include "index/heap_file/heap_file_impl.h"

namespace calico::fuzz {
namespace {

using index::HeapFile;
using index::RowId;
using index::ScanOptions;
using index::ScanRead;

constexpr uint32_t kRows = 300;
std::string row_of(uint32_t i) { return std::string(8 + i % 90, static_cast<char>(i)); }

class HeapTarget {
 public:
  static constexpr const char* kName = "heap";
  void build(BufferPool& pool, const std::string& name) {
    name_ = name;
    HeapFile h = HeapFile::create(pool, name);
    for (uint32_t i = 0; i < kRows; ++i) h.append(row_of(i));
    space_ = h.space();
    blocks_ = static_cast<BlockId>(pool.space_blocks(space_));
  }
  SpaceId space() const { return space_; }
  std::vector<BlockId> candidates() const {
    std::vector<BlockId> c;
    for (BlockId b = 0; b < blocks_; ++b) c.push_back(b);
    return c;
  }
  // The restored file holds exactly the rows build() appended, in order.
  void verify(BufferPool& pool) {
    HeapFile h = HeapFile::open(pool, name_);
    uint32_t i = 0;
    bool ok = true;
    h.scan_sequential([&](RowId, std::span<const std::byte> row) {
      const std::string want = row_of(i++);
      ok = ok && row.size() == want.size() && std::memcmp(row.data(), want.data(), want.size()) == 0;
    });
    if (!ok || i != kRows) {
      std::fprintf(stderr, "fuzz control: the restored heap differs from the one built (%u rows)\n", i);
      std::abort();
    }
  }
  void run(BufferPool& pool, const uint8_t* data, size_t size) {
    HeapFile h = open_index([&] { return HeapFile::open(pool, name_); });
    uint64_t bytes = 0;
    for (ScanRead read : {ScanRead::kOptimistic, ScanRead::kShared}) {
      ScanOptions opt;
      opt.read = read;
      opt.prefetch_distance = 2;
      h.scan_sequential([&](RowId, std::span<const std::byte> row) { bytes += row.size(); }, opt);
      (void)h.sum_column(0, opt);
      std::vector<BlockId> order;
      const BlockId last = h.data_pages();
      if (last < 1024) {  // a corrupt last_page may be anything: scan_pages checks the order
        for (BlockId b = last; b >= 1; --b) order.push_back(b);
      }
      h.scan_pages(order, [&](RowId, std::span<const std::byte> row) { bytes += row.size(); }, opt);
    }
    std::string out;
    for (BlockId b = 1; b <= h.data_pages() && b < 64; ++b) {
      h.read(RowId(b, 0), &out);
      h.read(RowId(b, size > 0 ? data[0] : 1), &out);
    }
    (void)h.size();
    h.append(std::string(size % 300, 'a'));
  }

 private:
  std::string name_;
  SpaceId space_ = 0;
  BlockId blocks_ = 0;
};

}  // namespace
}  // namespace calico::fuzz

CALICO_FUZZ_TARGET(calico::fuzz::HeapTarget)
