// The IVF-Flat index's on-page format (include/calico/index/ivf.h describes it): the format
// constants and layout arithmetic (IvfFormat), the metadata, directory entry and posting page
// header structs, and the optimistic reader that scores a posting page in place.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "calico/optimistic_reader.h"
#include "vector/distance.h"
#include "vector/id_filter.h"
#include "vector/neighbor.h"

namespace calico::index {

static_assert(std::endian::native == std::endian::little, "the IVF format is little-endian");

// The format constants and layout arithmetic.
struct IvfFormat {
  static constexpr uint64_t kMagic = 0x4C464656494C4143ull;  // "CALIVFFL" little-endian
  static constexpr uint32_t kFormatVersion = 1;
  static constexpr uint32_t kPostingTag = 0x50465649;  // "IVFP"
  static constexpr size_t kPostingHeaderBytes = 16;
  static constexpr size_t kDirEntryBytes = 16;
  static constexpr uint32_t kNoBlock = 0;
  static constexpr uint32_t kMaxFirstPagePrefetch = 64;
  static constexpr uint32_t kMaxPrefetchWindow = 8;

  static constexpr size_t record_bytes(uint32_t dim) { return 4 + size_t{4} * dim; }
  static constexpr uint32_t records_per_page(size_t usable, uint32_t dim) {
    return static_cast<uint32_t>((usable - kPostingHeaderBytes) / record_bytes(dim));
  }
  static constexpr uint32_t centroids_per_page(size_t usable, uint32_t dim) {
    return static_cast<uint32_t>(usable / (size_t{4} * dim));
  }
  // The largest dim for which a posting page holds one record (and a centroid page one
  // centroid).
  static constexpr uint32_t max_dim(size_t usable) {
    return static_cast<uint32_t>((usable - kPostingHeaderBytes - 4) / 4);
  }
};

namespace ivf_detail {

struct IvfMeta {
  uint64_t magic;
  uint32_t format_version;
  uint32_t page_size;
  uint32_t dim;
  uint32_t metric;
  uint32_t nlist;
  uint32_t train_iters;
  uint64_t seed;
  uint64_t train_sample;
  uint64_t built_rows;
  uint32_t centroid_first;
  uint32_t centroid_pages;
  uint32_t centroids_per_page;
  uint32_t directory_first;
  uint32_t directory_pages;
  uint32_t entries_per_page;
  uint32_t records_per_page;
  uint32_t reserved;
};
static_assert(sizeof(IvfMeta) == 88);

struct IvfDirEntry {
  uint32_t first;
  uint32_t tail;
  uint32_t rows;
  uint32_t build_pages;
};
static_assert(sizeof(IvfDirEntry) == IvfFormat::kDirEntryBytes);

struct IvfPostingHeader {
  uint32_t tag;
  uint32_t list;
  uint32_t count;
  uint32_t next;
};
static_assert(sizeof(IvfPostingHeader) == IvfFormat::kPostingHeaderBytes);

// Reads the header of a posting page that may be changing into *h and, when it is a
// posting page (tag) with count <= records_per_page, scores its count records against
// query: ids[r] and dists[r] for r < count (one many-vector kernel call for the page);
// returns false for garbage. The kernel reads the vectors in the frame (any bytes give
// some float, and frames stay mapped); every offset is bounds-checked first, and the
// caller uses nothing before the page validates. An optimistic reader (calico/optimistic_reader.h:
// the race is intended), as is the kernel.
//
// prefetch / prefetch_bytes: the next page's frame (the lookahead), whose lines are
// prefetched in slices between chunks of kScoreChunk records, so that the prefetches
// overlap the scoring instead of queueing up in one burst (nullptr: none).
inline constexpr uint32_t kScoreChunk = 4;
CALICO_OPTIMISTIC_READER inline __attribute__((noinline)) bool ivf_racy_score_posting(
    const std::byte* page, uint32_t records_per_page, uint32_t dim, vector::DistanceManyFn many, const float* query,
    IvfPostingHeader* h, uint32_t* ids, float* dists, const std::byte* prefetch = nullptr, size_t prefetch_bytes = 0) {
  const volatile uint32_t* w = reinterpret_cast<const volatile uint32_t*>(page);
  h->tag = w[0];
  h->list = w[1];
  h->count = w[2];
  h->next = w[3];
  if (h->tag != IvfFormat::kPostingTag || h->count > records_per_page) return false;
  const size_t words = IvfFormat::record_bytes(dim) / 4;  // count records fit the page
  const volatile uint32_t* rec = w + IvfFormat::kPostingHeaderBytes / 4;
  for (uint32_t r = 0; r < h->count; ++r) ids[r] = rec[r * words];
  const float* vectors = const_cast<const float*>(reinterpret_cast<const volatile float*>(rec + 1));
  if (prefetch == nullptr) {
    many(query, vectors, words, h->count, dim, dists);
    return true;
  }
  const uint32_t chunks = (records_per_page + kScoreChunk - 1) / kScoreChunk;
  const size_t slice = (prefetch_bytes / 64 + chunks - 1) / chunks * 64;  // bytes per chunk
  size_t ahead = 0;
  for (uint32_t r = 0; r < h->count; r += kScoreChunk) {
    for (const size_t end = std::min(prefetch_bytes, ahead + slice); ahead < end; ahead += 64) {
      __builtin_prefetch(prefetch + ahead);
    }
    many(query, vectors + r * words, words, std::min(kScoreChunk, h->count - r), dim, dists + r);
  }
  for (; ahead < prefetch_bytes; ahead += 64) __builtin_prefetch(prefetch + ahead);  // a short page
  return true;
}

// The top-k so far: a max-heap by (distance, id) of at most k neighbours.
inline void push_candidate(std::vector<vector::Neighbor>& heap, uint32_t k, vector::Neighbor c) {
  if (heap.size() < k) {
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end());
  } else if (c < heap.front()) {
    std::pop_heap(heap.begin(), heap.end());
    heap.back() = c;
    std::push_heap(heap.begin(), heap.end());
  }
}

// Offers n scored records to the heap; once it holds k, a record not below its top is
// rejected by one comparison.
inline void push_scored(std::vector<vector::Neighbor>& heap, uint32_t k, const uint32_t* ids, const float* dists,
                        uint32_t n) {
  for (uint32_t r = 0; r < n; ++r) {
    const vector::Neighbor c{dists[r], ids[r]};
    if (heap.size() == k && !(c < heap.front())) continue;
    push_candidate(heap, k, c);
  }
}

// push_scored() for the records whose id `filter` allows; the others never enter the heap.
inline void push_scored_allowed(std::vector<vector::Neighbor>& heap, uint32_t k, const uint32_t* ids,
                                const float* dists, uint32_t n, const vector::IdFilter& filter) {
  for (uint32_t r = 0; r < n; ++r) {
    if (!filter.allows(ids[r])) continue;
    const vector::Neighbor c{dists[r], ids[r]};
    if (heap.size() == k && !(c < heap.front())) continue;
    push_candidate(heap, k, c);
  }
}

}  // namespace ivf_detail

}  // namespace calico::index
