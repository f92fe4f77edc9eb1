// BasicIvf<Pool>: an IVF-Flat vector index (inverted file of full-precision vectors) stored
// in buffer-pool pages. build() trains nlist centroids by k-means on a seeded sample of the
// rows, assigns every row to its nearest centroid and writes one posting list per centroid
// as a chain of pages; search() ranks the centroids (in memory), scans the nprobe nearest
// lists page by page and keeps the k nearest rows; search_batch() does the same for a
// block of queries, ranking their centroids with one matrix product (BLAS). Search is the scan-heavy access pattern:
// long runs of pages read once, in an order known in advance (so group prefetch applies).
//
// Principal entry points:
//   BasicIvf::build(pool, name, params, data, n, progress)   writes the index (once)
//   BasicIvf::open(pool, name)                               loads centroids and list heads
//   search(q, options, state, &out)   the k nearest rows among the nprobe nearest lists
//   search_batch(qs, nq, options, state, out)   nq searches, equal to search() per query
//   add(id, v)                        appends one row to its list (thread-safe, also
//                                     concurrently with search)
//   verify() / list_ids(list, &ids)   whole-structure check and list contents (tests)
//
// On-disk format (little-endian; only the first usable_page_size() bytes of a page; block
// numbers are u32 within the index's space; block 0 is never a posting page, so 0 = none):
//   Block 0, metadata (IvfMeta): magic u64 "CALIVFFL" | format_version u32 | page_size u32 |
//       dim u32 | metric u32 | nlist u32 | train_iters u32 | seed u64 | train_sample u64 |
//       built_rows u64 | centroid_first u32 | centroid_pages u32 | centroids_per_page u32 |
//       directory_first u32 | directory_pages u32 | entries_per_page u32 |
//       records_per_page u32 | reserved u32
//   Blocks centroid_first .. + centroid_pages: the centroids, dim floats each, packed:
//       centroid c at block centroid_first + c / centroids_per_page, byte (c % cpp) * 4 * dim.
//   Blocks directory_first .. + directory_pages: the list directory, 16 bytes per list
//       (IvfDirEntry): first block u32 | tail block u32 | rows u32 | build_pages u32;
//       list l at block directory_first + l / entries_per_page, byte (l % epp) * 16.
//   Then the posting lists, list after list. A posting page (IvfPostingHeader, 16 bytes):
//       tag u32 "IVFP" | list u32 | count u32 | next block u32 (0 = last page) |
//       count records from byte 16, each: id u32 | dim floats (4 + 4 * dim bytes; the
//       vectors are 4-byte aligned). records_per_page = (usable - 16) / (4 + 4 * dim).
//   build() writes every list as build_pages contiguous blocks (first .. first + build_pages
//   - 1, each page full except the last; an empty list still has one page), so the chain's
//   next pointers are first + 1, first + 2, ...; pages that add() appends later are
//   allocated at the end of the space and linked from the tail.
//   Invariants: every page of list l's chain carries tag and list l; count <=
//   records_per_page; the chain from `first` has build_pages contiguous pages, ends at
//   `tail`, and its counts sum to the directory's rows. kCosine rows are stored normalised.
//   build() zeroes block 0 first and writes the metadata last, so an interrupted build
//   leaves a space that open() rejects.
//
// Memory: open() and build() keep the centroids (nlist x dim floats) and each list's first
// block and build_pages in memory; search reads only posting pages.
//
// Search (see search()): the centroids are ranked exactly by the metric's kernel
// (vector::CoarseRanker: a many-vector kernel pass for one query; for a block, an sgemm
// whose near-cut lists are re-ranked by the kernel, so both give the same probes). Each
// posting page is scored by one many-vector kernel call (distance_many_kernel, bit-identical
// to the one-vector kernel), and a record enters the top-k heap only when it beats the
// heap's top. Reads are optimistic (read_optimistic, then
// ivf_racy_score_posting scores the page's records in place into a per-thread buffer,
// bounds-checking everything taken from the page, an optimistic reader (calico/optimistic_reader.h); the
// scores enter the top-k only after the page validates; after kOptimisticAttempts failed
// validations the page is read under a shared pin) or, with optimistic = false, under a
// shared pin (distances computed in place). Group prefetch (options.prefetch):
//   (1) once the probes are chosen: one prefetch_group of the first page of the nearest
//       probed lists (at most first_page_prefetch() of them);
//   (2) while scanning a list's build-time pages, the next pages of the chain (known to be
//       first + i) are kept prefetched up to prefetch_window() pages ahead of the scan, in
//       groups of at least window / 2 pages. Pages appended by add() are not prefetched.
//   Both caps follow the pool's size (window = frames / 8 in [1, 8]; first pages = frames
//   / 4 in [1, 64]) so that prefetched pages are not evicted before they are read.
//   (3) one page ahead of the scan (Lookahead): the next page known in advance (the next
//   of a build-time run, else the next probed list's first) is read optimistically and
//   every cache line of it prefetched before the current page is scored;
//   that read is the next page's first optimistic attempt. Frames of adjacent blocks are
//   not adjacent in memory, so without it the hardware prefetcher stops at every page end.
//
// Concurrency: search() and add() may run from any number of threads at once (each search
// with its own IvfSearchState). add() latches the list's directory page exclusively, then
// its tail page, then (when full) the new page it allocates: that order is the same for
// every add, and readers hold at most one shared pin at a time, so there is no deadlock.
// Searches see a row added concurrently or not; every row whose add() returned before the
// search started is seen. build() and open() must not race with operations on the same
// space. Errors: calico::Error (kInvalidArgument for bad input; pool errors pass through;
// kCorruptPage naming the page when a pinned or validated page breaks the invariants above:
// a wrong tag, list or count, a next block outside the posting pages or past the space, a
// chain longer than the space (a cycle), a directory tail that is not a posting page).
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/checks.h"
#include "calico/error.h"
#include "index/corrupt_page.h"
#include "calico/optimistic_reader.h"
#include "vector/coarse.h"
#include "vector/distance.h"
#include "vector/kmeans.h"
#include "vector/neighbor.h"

namespace calico::index {

static_assert(std::endian::native == std::endian::little, "the IVF format is little-endian");

struct IvfParams {
  uint32_t dim = 0;
  vector::Metric metric = vector::Metric::kL2;
  uint32_t nlist = 1024;       // lists (centroids); 1 <= nlist <= n
  uint32_t train_iters = 10;   // Lloyd iterations
  uint64_t train_sample = 0;   // rows k-means trains on; 0: 64 * nlist. Clamped to [nlist, n]
  uint64_t seed = 42;          // sample and k-means initialisation
  uint32_t threads = 0;        // build's assignment threads; 0: hardware_concurrency()
  bool train_only = false;     // true: train on the rows but store none of them (every
                               // list empty, built_rows 0); rows come later with add()
};

struct IvfSearchOptions {
  uint32_t k = 10;
  uint32_t nprobe = 8;     // lists scanned; values above nlist are clamped to nlist
  bool optimistic = true;  // false: every posting page is read under a shared pin
  bool prefetch = true;    // group prefetch of the probed lists' pages (see the header)
};

// Build progress: done out of total = 2 n (n for the assignment, n for writing the lists).
using IvfProgressFn = std::function<void(uint64_t done, uint64_t total)>;

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

}  // namespace ivf_detail

template <class Pool>
class BasicIvf;

// A search's scratch space: one per thread, reused so that a search allocates nothing
// after the first. Default-constructed states size themselves on first use. Cache-line
// aligned, so that per-thread states side by side never share a line (a search writes its
// heap's bounds on every kept record).
class alignas(64) IvfSearchState {
 public:
  IvfSearchState() = default;
  template <class Pool>
  explicit IvfSearchState(const BasicIvf<Pool>& ivf) {
    query_.reserve(ivf.dim());
    coarse_.order.reserve(ivf.nlist());
    ids_.resize(ivf.records_per_page());
    dists_.resize(ivf.records_per_page());
  }

 private:
  template <class>
  friend class BasicIvf;
  std::vector<float> query_;                 // the query (kCosine: normalised)
  std::vector<float> batch_;                 // search_batch's queries (kCosine: normalised)
  vector::CoarseRanker::Scratch coarse_;     // centroid ranking
  std::vector<vector::Neighbor> probes_;     // (centroid distance, list) of the probed lists
  std::vector<vector::Neighbor> heap_;       // the best k so far (max-heap)
  std::vector<PageId> group_;                // a prefetch group
  std::vector<uint32_t> ids_;                // one posting page's records: ids
  std::vector<float> dists_;                 //   and distances
};

template <class Pool>
class BasicIvf : public IvfFormat {
 public:
  // Trains, assigns and writes the index of rows data[0 .. n * dim) into a new space
  // `name`; row i gets id i. Reports progress (done, 2 n) after each chunk of rows
  // assigned and each list written, when given. With params.train_only the rows only
  // train the centroids: every list is written empty (one page each) and size() is 0.
  // Errors: kInvalidArgument (dim 0 or above max_dim(usable_page_size()), an unknown
  // metric, n 0 or above 2^32 - 1, nlist 0 or above n, a non-finite value, a zero row for
  // kCosine, more pages than the space may hold) before the space is created;
  // create_space (kSpaceExists) / allocate errors.
  static BasicIvf build(Pool& pool, std::string_view name, const IvfParams& params, const float* data, uint64_t n,
                        const IvfProgressFn& progress = {}) {
    const size_t usable = pool.usable_page_size();
    check_build_args(params, usable, data, n);
    const uint32_t dim = params.dim, nlist = params.nlist;
    const bool cosine = params.metric == vector::Metric::kCosine;

    // 1. Train on a seeded sample (ascending row order: Knuth's selection sampling).
    IvfParams p = params;
    p.train_sample = std::clamp<uint64_t>(params.train_sample == 0 ? uint64_t{64} * nlist : params.train_sample,
                                          nlist, n);
    std::vector<float> sample(p.train_sample * dim);
    {
      std::mt19937_64 rng(p.seed);
      uint64_t taken = 0;
      for (uint64_t i = 0; i < n && taken < p.train_sample; ++i) {
        if (std::uniform_int_distribution<uint64_t>(0, n - i - 1)(rng) < p.train_sample - taken) {
          std::copy_n(data + i * dim, dim, sample.data() + taken * dim);
          if (cosine) vector::normalize(sample.data() + taken * dim, dim);
          ++taken;
        }
      }
      CALICO_CHECK(taken == p.train_sample);
    }
    vector::KmeansParams kp;
    kp.k = nlist;
    kp.metric = p.metric;
    kp.iters = p.train_iters;
    kp.seed = p.seed;
    kp.threads = p.threads;
    vector::KmeansResult km = vector::kmeans(sample.data(), p.train_sample, dim, kp);
    sample = {};

    // 2. Assign every row (in chunks; kCosine rows are normalised in a chunk buffer).
    //    train_only: no row is stored (stored = 0), so there is nothing to assign.
    const uint64_t stored = p.train_only ? 0 : n;
    const uint64_t total = 2 * stored;
    std::vector<uint32_t> assignment(stored);
    if (stored > 0) {
      constexpr uint64_t kChunkRows = 16384;
      std::vector<float> chunk;
      for (uint64_t b = 0; b < n; b += kChunkRows) {
        const uint64_t rows = std::min(kChunkRows, n - b);
        const float* src = data + b * dim;
        if (cosine) {
          chunk.assign(src, src + rows * dim);
          for (uint64_t i = 0; i < rows; ++i) vector::normalize(chunk.data() + i * dim, dim);
          src = chunk.data();
        }
        vector::assign_nearest(src, rows, dim, km.centroids.data(), nlist, p.metric, p.threads,
                               assignment.data() + b);
        if (progress) progress(b + rows, total);
      }
    }

    // 3. Lay out: list l's rows in ascending row order (a counting sort by list).
    std::vector<uint64_t> start(uint64_t{nlist} + 1, 0);
    for (uint32_t a : assignment) ++start[a + 1];
    for (uint32_t l = 0; l < nlist; ++l) start[l + 1] += start[l];
    std::vector<uint32_t> members(stored);
    {
      std::vector<uint64_t> fill(start.begin(), start.end() - 1);
      for (uint64_t i = 0; i < stored; ++i) members[fill[assignment[i]]++] = static_cast<uint32_t>(i);
    }
    assignment = {};
    ivf_detail::IvfMeta m{};
    m.magic = kMagic;
    m.format_version = kFormatVersion;
    m.page_size = static_cast<uint32_t>(pool.page_size());
    m.dim = dim;
    m.metric = static_cast<uint32_t>(p.metric);
    m.nlist = nlist;
    m.train_iters = p.train_iters;
    m.seed = p.seed;
    m.train_sample = p.train_sample;
    m.built_rows = stored;
    m.centroids_per_page = centroids_per_page(usable, dim);
    m.centroid_first = 1;
    m.centroid_pages = (nlist + m.centroids_per_page - 1) / m.centroids_per_page;
    m.entries_per_page = static_cast<uint32_t>(usable / kDirEntryBytes);
    m.directory_first = m.centroid_first + m.centroid_pages;
    m.directory_pages = (nlist + m.entries_per_page - 1) / m.entries_per_page;
    m.records_per_page = IvfFormat::records_per_page(usable, dim);
    const uint32_t rpp = m.records_per_page;
    std::vector<ivf_detail::IvfDirEntry> dir(nlist);
    uint64_t next_block = uint64_t{m.directory_first} + m.directory_pages;
    for (uint32_t l = 0; l < nlist; ++l) {
      const uint64_t rows = start[l + 1] - start[l];
      const uint64_t pages = std::max<uint64_t>(1, (rows + rpp - 1) / rpp);
      dir[l] = {static_cast<uint32_t>(next_block), static_cast<uint32_t>(next_block + pages - 1),
                static_cast<uint32_t>(rows), static_cast<uint32_t>(pages)};
      next_block += pages;
    }
    if (next_block > pool.options().max_blocks_per_space || next_block > UINT32_MAX) {
      throw Error(ErrorCode::kInvalidArgument, "ivf '" + std::string(name) + "' needs " + std::to_string(next_block) +
                                                   " pages; the space holds at most " +
                                                   std::to_string(pool.options().max_blocks_per_space));
    }

    // 4. Write: block 0 zeroed, centroids, directory, lists, then the metadata.
    const SpaceId space = pool.create_space(name);
    auto write_page = [&](uint64_t expect_block, auto&& fill_page) {
      ExclusiveGuard g = pool.allocate(space);
      CALICO_CHECK(g.page_id().block() == expect_block);  // build is the space's only writer
      fill_page(g.data());
      g.mark_dirty();
    };
    write_page(0, [](std::byte*) {});
    for (uint32_t pg = 0; pg < m.centroid_pages; ++pg) {
      const uint32_t c0 = pg * m.centroids_per_page, c1 = std::min(nlist, c0 + m.centroids_per_page);
      write_page(m.centroid_first + pg, [&](std::byte* d) {
        std::memcpy(d, km.centroids.data() + size_t{c0} * dim, size_t{c1 - c0} * dim * 4);
      });
    }
    for (uint32_t pg = 0; pg < m.directory_pages; ++pg) {
      const uint32_t l0 = pg * m.entries_per_page, l1 = std::min(nlist, l0 + m.entries_per_page);
      write_page(m.directory_first + pg, [&](std::byte* d) { std::memcpy(d, &dir[l0], size_t{l1 - l0} * kDirEntryBytes); });
    }
    const size_t rec = record_bytes(dim);
    uint64_t written = 0;
    for (uint32_t l = 0; l < nlist; ++l) {
      const uint64_t rows = start[l + 1] - start[l];
      for (uint32_t pg = 0; pg < dir[l].build_pages; ++pg) {
        const uint64_t r0 = uint64_t{pg} * rpp, r1 = std::min<uint64_t>(rows, r0 + rpp);
        const bool last = pg + 1 == dir[l].build_pages;
        write_page(dir[l].first + pg, [&](std::byte* d) {
          const ivf_detail::IvfPostingHeader h{kPostingTag, l, static_cast<uint32_t>(r1 - r0),
                                               last ? kNoBlock : dir[l].first + pg + 1};
          std::memcpy(d, &h, sizeof h);
          for (uint64_t r = r0; r < r1; ++r) {
            const uint32_t id = members[start[l] + r];
            std::byte* out = d + kPostingHeaderBytes + (r - r0) * rec;
            std::memcpy(out, &id, 4);
            std::memcpy(out + 4, data + uint64_t{id} * dim, size_t{dim} * 4);
            if (cosine) normalize_in_page(out + 4, dim);
          }
        });
      }
      written += rows;
      if (progress) progress(stored + written, total);
    }
    {
      ExclusiveGuard g = pool.pin_exclusive(PageId(space, 0));
      std::memcpy(g.data(), &m, sizeof m);
      g.mark_dirty();
    }
    std::vector<ListHead> heads(nlist);
    for (uint32_t l = 0; l < nlist; ++l) heads[l] = {dir[l].first, dir[l].build_pages};
    return BasicIvf(pool, space, m, std::move(km.centroids), std::move(heads), stored);
  }

  // Loads the metadata, the centroids and the list directory.
  // Errors: kUnknownSpace; kInvalidArgument when block 0 is not this format's metadata
  // (the space is not an index of this format); kCorruptPage naming the centroid or
  // directory page whose bytes the metadata's index cannot accept (a non-finite centroid, a
  // directory entry outside the posting pages).
  static BasicIvf open(Pool& pool, std::string_view name) {
    const SpaceId space = pool.open_space(name);
    const uint64_t blocks = pool.space_blocks(space);
    auto reject = [&](const std::string& why) {
      return Error(ErrorCode::kInvalidArgument, "space '" + std::string(name) + "' is not an IVF index: " + why,
                   PageId(space, 0));
    };
    ivf_detail::IvfMeta m{};
    if (blocks > 0) {
      SharedGuard g = pool.pin_shared(PageId(space, 0));
      std::memcpy(&m, g.data(), sizeof m);
    }
    const size_t usable = pool.usable_page_size();
    if (m.magic != kMagic || m.format_version != kFormatVersion) throw reject("no IVF metadata in block 0");
    if (m.page_size != pool.page_size() || m.dim == 0 || m.dim > max_dim(usable) || m.metric > 2 || m.nlist == 0 ||
        m.centroids_per_page != centroids_per_page(usable, m.dim) || m.records_per_page != IvfFormat::records_per_page(usable, m.dim) ||
        m.entries_per_page != usable / kDirEntryBytes ||
        // Exactly as many pages as the lists need: a page past them would start past nlist
        // (the copies below would then count from c0 > c1; found by ivf_posting_fuzz).
        m.centroid_pages != (uint64_t{m.nlist} + m.centroids_per_page - 1) / m.centroids_per_page ||
        m.directory_pages != (uint64_t{m.nlist} + m.entries_per_page - 1) / m.entries_per_page ||
        uint64_t{m.centroid_first} + m.centroid_pages > blocks ||
        uint64_t{m.directory_first} + m.directory_pages > blocks) {
      throw reject("inconsistent metadata");
    }
    std::vector<float> centroids(size_t{m.nlist} * m.dim);
    for (uint32_t pg = 0; pg < m.centroid_pages; ++pg) {
      const uint32_t c0 = pg * m.centroids_per_page, c1 = std::min(m.nlist, c0 + m.centroids_per_page);
      const PageId pid(space, m.centroid_first + pg);
      SharedGuard g = pool.pin_shared(pid);
      float* const dst = centroids.data() + size_t{c0} * m.dim;
      std::memcpy(dst, g.data(), size_t{c1 - c0} * m.dim * 4);
      if (!vector::all_finite(dst, size_t{c1 - c0} * m.dim)) {
        corrupt(pid, "centroids " + std::to_string(c0) + ".." + std::to_string(c1 - 1) + " not all finite");
      }
    }
    std::vector<ListHead> heads(m.nlist);
    uint64_t rows = 0;
    for (uint32_t pg = 0; pg < m.directory_pages; ++pg) {
      const uint32_t l0 = pg * m.entries_per_page, l1 = std::min(m.nlist, l0 + m.entries_per_page);
      const PageId pid(space, m.directory_first + pg);
      SharedGuard g = pool.pin_shared(pid);
      for (uint32_t l = l0; l < l1; ++l) {
        ivf_detail::IvfDirEntry e;
        std::memcpy(&e, g.data() + size_t{l - l0} * kDirEntryBytes, sizeof e);
        if (e.first < posting_first(m) || e.build_pages == 0 || uint64_t{e.first} + e.build_pages > blocks ||
            e.tail < posting_first(m) || e.tail >= blocks) {
          corrupt(pid, "directory entry of list " + std::to_string(l) + " outside the posting pages");
        }
        heads[l] = {e.first, e.build_pages};
        rows += e.rows;
      }
    }
    return BasicIvf(pool, space, m, std::move(centroids), std::move(heads), rows);
  }

  // The k nearest rows (ascending by (distance, id)) among the lists of the nprobe
  // centroids nearest to q (ties between centroids: the lower list). nprobe = nlist is an
  // exact search. Deterministic: the result does not depend on optimistic or prefetch.
  // *out is replaced; it has min(k, rows in the probed lists) entries. The centroids are
  // ranked with the many-vector kernel (vector::CoarseRanker::rank).
  // Errors: kInvalidArgument (k 0, nprobe 0, a non-finite q, a zero q for kCosine); pool
  // errors.
  void search(const float* q, const IvfSearchOptions& opt, IvfSearchState& st, std::vector<vector::Neighbor>* out) const {
    check_search_options(opt);
    const float* query = prepare(q, &st.query_, "ivf search");
    const uint32_t nprobe = std::min(opt.nprobe, nlist());
    st.probes_.resize(nprobe);
    ranker_.rank(query, nprobe, st.coarse_, st.probes_.data());
    scan_probes(query, std::span<const vector::Neighbor>(st.probes_.data(), nprobe), opt, st, out);
  }

  // Searches nq queries, row i at qs + i * dim(), into out[i] (out points to nq vectors):
  // out[i] equals what search(qs + i * dim(), ...) gives, exactly. The centroids of the
  // block are ranked with one matrix product (vector::CoarseRanker::rank_block: BLAS sgemm,
  // then the kernel on the lists near the cut, so the probes are the same as search()'s);
  // then each query's lists are scanned as in search(). Every query is checked before any
  // is searched. Errors: as search() (naming the query's index); nothing is written to out
  // when a query is rejected.
  void search_batch(const float* qs, size_t nq, const IvfSearchOptions& opt, IvfSearchState& st,
                    std::vector<vector::Neighbor>* out) const {
    check_search_options(opt);
    if (nq == 0) return;
    if (qs == nullptr) throw Error(ErrorCode::kInvalidArgument, "ivf search_batch: no queries");
    const size_t d = dim();
    st.batch_.resize(nq * d);
    for (size_t i = 0; i < nq; ++i) {
      const float* query;
      try {
        query = prepare(qs + i * d, &st.query_, "ivf search_batch");
      } catch (const Error& e) {
        throw Error(e.code(), std::string(e.what()) + " (query " + std::to_string(i) + ")");
      }
      std::copy_n(query, d, st.batch_.data() + i * d);
    }
    const uint32_t nprobe = std::min(opt.nprobe, nlist());
    st.probes_.resize(nq * nprobe);
    ranker_.rank_block(st.batch_.data(), nq, nprobe, st.coarse_, st.probes_.data());
    for (size_t i = 0; i < nq; ++i) {
      scan_probes(st.batch_.data() + i * d, std::span<const vector::Neighbor>(st.probes_.data() + i * nprobe, nprobe),
                  opt, st, &out[i]);
    }
  }

  // Appends row (id, v) to the list of v's nearest centroid (kCosine: v normalised). Ids
  // are not checked for uniqueness: a repeated id is a second row with that id. Thread-safe
  // (see the header for the latch order). The row is durable after the next flush().
  // Errors: kInvalidArgument (non-finite v, zero v for kCosine; nothing is written);
  // pin / allocate errors (kPoolFull: nothing is written).
  void add(uint32_t id, const float* v) {
    std::vector<float> buf;
    const float* row = prepare(v, &buf, "ivf add");
    const uint32_t list = vector::nearest_centroid(row, centroids_.data(), nlist(), dim(), dist_);
    const PageId dir_pid(space_, meta_.directory_first + list / meta_.entries_per_page);
    const size_t dir_off = size_t{list % meta_.entries_per_page} * kDirEntryBytes;
    ExclusiveGuard dg = pool_->pin_exclusive(dir_pid);
    ivf_detail::IvfDirEntry e;
    std::memcpy(&e, dg.data() + dir_off, sizeof e);
    // The tail must be a posting page: never the latched directory page (a self-deadlock)
    // nor a block past the space.
    if (e.tail < posting_first(meta_) || e.tail >= pool_->space_blocks(space_)) {
      corrupt(dir_pid, "directory entry of list " + std::to_string(list) + " names tail block " +
                           std::to_string(e.tail) + ", not a posting page");
    }
    ExclusiveGuard tg = pool_->pin_exclusive(PageId(space_, e.tail));
    ivf_detail::IvfPostingHeader h;
    std::memcpy(&h, tg.data(), sizeof h);
    if (h.tag != kPostingTag || h.list != list || h.next != kNoBlock || h.count > meta_.records_per_page) {
      bad_posting(tg.page_id(), h, list, "as the tail of");
    }
    const size_t rec = record_bytes(dim());
    auto write_record = [&](std::byte* page, uint32_t slot) {
      std::byte* r = page + kPostingHeaderBytes + size_t{slot} * rec;
      std::memcpy(r, &id, 4);
      std::memcpy(r + 4, row, size_t{dim()} * 4);
    };
    if (h.count == meta_.records_per_page) {
      ExclusiveGuard ng = pool_->allocate(space_);  // may throw: nothing is written yet
      const ivf_detail::IvfPostingHeader nh{kPostingTag, list, 1, kNoBlock};
      std::memcpy(ng.data(), &nh, sizeof nh);
      write_record(ng.data(), 0);
      ng.mark_dirty();
      h.next = ng.page_id().block();
      e.tail = h.next;
    } else {
      write_record(tg.data(), h.count);
      ++h.count;
    }
    std::memcpy(tg.data(), &h, sizeof h);
    tg.mark_dirty();
    ++e.rows;
    std::memcpy(dg.data() + dir_off, &e, sizeof e);
    dg.mark_dirty();
    size_->fetch_add(1, std::memory_order_relaxed);
  }

  // Whole-structure check for tests, at quiescence (no concurrent add): every list's chain
  // keeps the invariants of the header. Returns the number of rows. Throws
  // std::logic_error naming the first violation.
  uint64_t verify() const {
    uint64_t total = 0;
    std::vector<uint32_t> ids;
    for (uint32_t l = 0; l < nlist(); ++l) {
      const ivf_detail::IvfDirEntry e = dir_entry(l);
      if (e.first != heads_[l].first || e.build_pages != heads_[l].build_pages) fail(l, "directory moved");
      uint64_t rows = 0, pages = 0;
      uint32_t block = e.first, last = kNoBlock;
      while (block != kNoBlock) {
        if (++pages > pool_->space_blocks(space_)) fail(l, "chain has a cycle");
        if (pages <= e.build_pages && block != e.first + pages - 1) fail(l, "build pages not contiguous");
        SharedGuard g = pool_->pin_shared(PageId(space_, block));
        ivf_detail::IvfPostingHeader h;
        std::memcpy(&h, g.data(), sizeof h);
        if (h.tag != kPostingTag || h.list != l || h.count > meta_.records_per_page) fail(l, "bad posting page");
        rows += h.count;
        last = block;
        block = h.next;
      }
      if (pages < e.build_pages || last != e.tail || rows != e.rows) fail(l, "chain disagrees with the directory");
      total += rows;
    }
    if (total != size()) throw std::logic_error("ivf: rows " + std::to_string(total) + " != size() " + std::to_string(size()));
    return total;
  }

  // Replaces *ids with the ids of list `list` in stored order (read under shared pins).
  // Errors: kInvalidArgument (list >= nlist()); kCorruptPage (see the header).
  void list_ids(uint32_t list, std::vector<uint32_t>* ids) const {
    if (list >= nlist()) {
      throw Error(ErrorCode::kInvalidArgument, "ivf list_ids: list " + std::to_string(list) + " >= nlist " +
                                                   std::to_string(nlist()));
    }
    ids->clear();
    ChainBound bound(*this);
    for (uint32_t block = heads_[list].first; block != kNoBlock;) {
      SharedGuard g = pool_->pin_shared(PageId(space_, block));
      ivf_detail::IvfPostingHeader h;
      std::memcpy(&h, g.data(), sizeof h);
      if (h.tag != kPostingTag || h.list != list || h.count > meta_.records_per_page) {
        bad_posting(g.page_id(), h, list, "in the chain of");
      }
      for (uint32_t r = 0; r < h.count; ++r) {
        uint32_t id;
        std::memcpy(&id, g.data() + kPostingHeaderBytes + r * record_bytes(dim()), 4);
        ids->push_back(id);
      }
      block = bound.next(g.page_id(), h.next);
    }
  }

  uint32_t dim() const { return meta_.dim; }
  uint32_t nlist() const { return meta_.nlist; }
  vector::Metric metric() const { return static_cast<vector::Metric>(meta_.metric); }
  // Rows: built plus added (added rows count once their add() returned).
  uint64_t size() const { return size_->load(std::memory_order_relaxed); }
  uint32_t records_per_page() const { return meta_.records_per_page; }
  SpaceId space() const { return space_; }
  // The parameters of build() (train_sample as used; threads is not stored: 0).
  IvfParams params() const {
    IvfParams p;
    p.dim = meta_.dim;
    p.metric = metric();
    p.nlist = meta_.nlist;
    p.train_iters = meta_.train_iters;
    p.train_sample = meta_.train_sample;
    p.seed = meta_.seed;
    return p;
  }
  // Centroid of list l (dim floats, in memory). Pre: l < nlist().
  const float* centroid(uint32_t l) const { return centroids_.data() + size_t{l} * dim(); }
  // The prefetch caps (see the header).
  uint32_t prefetch_window() const { return std::clamp<uint32_t>(pool_->num_frames() / 8, 1, kMaxPrefetchWindow); }
  uint32_t first_page_prefetch() const { return std::clamp<uint32_t>(pool_->num_frames() / 4, 1, kMaxFirstPagePrefetch); }

 private:
  struct ListHead {
    uint32_t first;        // block of the first page
    uint32_t build_pages;  // pages first .. first + build_pages - 1 are the chain's start
  };

  BasicIvf(Pool& pool, SpaceId space, const ivf_detail::IvfMeta& meta, std::vector<float> centroids,
           std::vector<ListHead> heads, uint64_t rows)
      : pool_(&pool),
        space_(space),
        meta_(meta),
        centroids_(std::move(centroids)),
        heads_(std::move(heads)),
        size_(std::make_unique<std::atomic<uint64_t>>(rows)),
        dist_(vector::distance_kernel(static_cast<vector::Metric>(meta.metric))),
        many_(vector::distance_many_kernel(static_cast<vector::Metric>(meta.metric))),
        ranker_(centroids_.data(), meta_.nlist, meta_.dim, static_cast<vector::Metric>(meta.metric)) {
    CALICO_CHECK(centroids_.size() == size_t{meta_.nlist} * meta_.dim && heads_.size() == meta_.nlist);
  }

  static void check_build_args(const IvfParams& p, size_t usable, const float* data, uint64_t n) {
    auto bad = [](const std::string& what) { return Error(ErrorCode::kInvalidArgument, "ivf build: " + what); };
    if (p.dim == 0 || p.dim > max_dim(usable)) {
      throw bad("dim " + std::to_string(p.dim) + " not in 1.." + std::to_string(max_dim(usable)) + " for this page size");
    }
    if (static_cast<uint32_t>(p.metric) > 2) throw bad("unknown metric");
    if (n == 0 || n > UINT32_MAX - 1 || data == nullptr) throw bad("need 1.." + std::to_string(UINT32_MAX - 1) + " rows");
    if (p.nlist == 0 || p.nlist > n) {
      throw bad("nlist " + std::to_string(p.nlist) + " not in 1.." + std::to_string(n) + " (the rows)");
    }
    for (uint64_t i = 0; i < n; ++i) {
      const float* v = data + i * p.dim;
      if (!vector::all_finite(v, p.dim)) throw bad("row " + std::to_string(i) + " is not finite");
      if (p.metric == vector::Metric::kCosine && std::all_of(v, v + p.dim, [](float x) { return x == 0; })) {
        throw bad("row " + std::to_string(i) + " is zero (cosine)");
      }
    }
  }

  // Normalises dim floats stored (unaligned) at p.
  static void normalize_in_page(std::byte* p, uint32_t dim) {
    std::vector<float> v(dim);
    std::memcpy(v.data(), p, size_t{dim} * 4);
    CALICO_CHECK(vector::normalize(v.data(), dim));  // zero rows were rejected
    std::memcpy(p, v.data(), size_t{dim} * 4);
  }

  // Checks a query or a new row; returns it, or its normalised copy in *buf (kCosine).
  const float* prepare(const float* v, std::vector<float>* buf, const char* what) const {
    if (v == nullptr || !vector::all_finite(v, dim())) {
      throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": the vector is missing or not finite");
    }
    if (metric() != vector::Metric::kCosine) return v;
    buf->assign(v, v + dim());
    if (!vector::normalize(buf->data(), dim())) {
      throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": a zero vector has no cosine distance");
    }
    return buf->data();
  }

  static void check_search_options(const IvfSearchOptions& opt) {
    if (opt.k == 0 || opt.nprobe == 0) {
      throw Error(ErrorCode::kInvalidArgument, "ivf search: k (" + std::to_string(opt.k) + ") and nprobe (" +
                                                   std::to_string(opt.nprobe) + ") must be at least 1");
    }
  }

  // Scans the probed lists (in the given order) into *out: prefetch step (1), then each
  // list's chain (scan_list), then the heap sorted.
  void scan_probes(const float* query, std::span<const vector::Neighbor> probes, const IvfSearchOptions& opt,
                   IvfSearchState& st, std::vector<vector::Neighbor>* out) const {
    if (opt.prefetch) {  // (1) the first page of the nearest probed lists
      st.group_.clear();
      for (const vector::Neighbor& p : probes.first(std::min<size_t>(probes.size(), first_page_prefetch()))) {
        st.group_.push_back(PageId(space_, heads_[p.id].first));
      }
      pool_->prefetch_group(st.group_);
    }
    st.ids_.resize(meta_.records_per_page);
    st.dists_.resize(meta_.records_per_page);
    st.heap_.clear();
    Lookahead ahead;
    for (size_t i = 0; i < probes.size(); ++i) {
      const uint32_t after = i + 1 < probes.size() ? heads_[probes[i + 1].id].first : kNoBlock;
      scan_list(probes[i].id, after, query, opt, st, ahead);
    }
    std::sort_heap(st.heap_.begin(), st.heap_.end());
    out->assign(st.heap_.begin(), st.heap_.end());
  }

  // The page read one step ahead of the scan (with opt.prefetch): the next page whose block
  // is known before the current one is read (the next page of a build-time run, else the
  // first page of the next probed list). Its optimistic read starts, and its lines are
  // prefetched into the CPU cache, before the current page is scored: frames of adjacent
  // blocks are not adjacent in memory, so the hardware prefetcher stops at each page's
  // end. The read is used as the page's first optimistic attempt when the scan gets there.
  struct Lookahead {
    uint32_t block = kNoBlock;
    OptimisticRead read;
  };

  void look_ahead(uint32_t block, Lookahead& ahead) const {
    ahead.block = block;
    if (block == kNoBlock) return;
    ahead.read = pool_->read_optimistic(PageId(space_, block));
    // Every line of the page is prefetched, spread over the scoring of the current page
    // (ivf_racy_score_posting). At 4 KB (64 lines), measured on a quiet machine
    // (docs/results/vector_ivf.md): 1.10-1.34x the QPS of 8 lines at 1 thread and 1.07-1.28x at 2; 16
    // or 32 lines 0.68-0.93x of 64. Larger pages are one frame, contiguous in memory, but
    // the hardware prefetcher does not cross 4 KB boundaries, so they get every line too.
  }

  // Scans list l's chain into st.heap_, with prefetch step (2) of the header; `after` is the
  // first block of the next probed list (kNoBlock: none), for the lookahead.
  void scan_list(uint32_t l, uint32_t after, const float* query, const IvfSearchOptions& opt, IvfSearchState& st,
                 Lookahead& ahead) const {
    const ListHead head = heads_[l];
    const uint32_t window = prefetch_window();
    uint32_t prefetched = 1;  // pages [0, prefetched) of the build-time run were prefetched
    uint64_t index = 0;
    ChainBound bound(*this);
    for (uint32_t block = head.first; block != kNoBlock; ++index) {
      if (opt.prefetch && prefetched < head.build_pages && prefetched <= index + window / 2) {
        const uint64_t end = std::min<uint64_t>(head.build_pages, index + 1 + window);
        st.group_.clear();
        for (uint64_t i = std::max<uint64_t>(prefetched, index + 1); i < end; ++i) {
          st.group_.push_back(PageId(space_, static_cast<BlockId>(head.first + i)));
        }
        if (!st.group_.empty()) pool_->prefetch_group(st.group_);
        prefetched = static_cast<uint32_t>(std::max<uint64_t>(end, prefetched));
      }
      const PageId pid(space_, block);
      const OptimisticRead* pre = nullptr;
      OptimisticRead here;
      if (opt.prefetch) {
        if (ahead.block == block) {
          here = ahead.read;
          pre = &here;
        }
        look_ahead(index + 1 < head.build_pages ? static_cast<uint32_t>(head.first + index + 1) : after, ahead);
      }
      block = bound.next(pid, scan_page(pid, l, query, opt, st, pre, ahead.block == kNoBlock ? nullptr : ahead.read.data));
    }
  }

  // Scores one posting page of list l into st.heap_; returns its next block. pre, when not
  // null, is an optimistic read of pid already started (the lookahead): the first attempt.
  uint32_t scan_page(PageId pid, uint32_t l, const float* query, const IvfSearchOptions& opt, IvfSearchState& st,
                     const OptimisticRead* pre, const std::byte* next_frame) const {
    ivf_detail::IvfPostingHeader h;
    if (opt.optimistic) {
      for (int attempt = 0; attempt < Pool::kOptimisticAttempts; ++attempt) {
        OptimisticRead r = attempt == 0 && pre != nullptr ? *pre : pool_->read_optimistic(pid);
        const bool ok = ivf_detail::ivf_racy_score_posting(r.data, meta_.records_per_page, dim(), many_, query, &h,
                                                           st.ids_.data(), st.dists_.data(), next_frame,
                                                           next_frame == nullptr ? 0 : meta_.page_size);
        if (Pool::validate(r)) {
          if (!ok || h.list != l) bad_posting(pid, h, l, "in the chain of");  // validated bytes
          ivf_detail::push_scored(st.heap_, opt.k, st.ids_.data(), st.dists_.data(), h.count);
          return h.next;
        }
      }
    }
    SharedGuard g = pool_->pin_shared(pid);  // pinned reads, or repeated conflicts
    if (next_frame != nullptr) {
      for (size_t off = 0; off < meta_.page_size; off += 64) __builtin_prefetch(next_frame + off);
    }
    std::memcpy(&h, g.data(), sizeof h);
    if (h.tag != kPostingTag || h.list != l || h.count > meta_.records_per_page) bad_posting(pid, h, l, "in the chain of");
    const std::byte* records = g.data() + kPostingHeaderBytes;
    const size_t words = record_bytes(dim()) / 4;
    for (uint32_t r = 0; r < h.count; ++r) std::memcpy(&st.ids_[r], records + r * words * 4, 4);
    many_(query, reinterpret_cast<const float*>(records + 4), words, h.count, dim(), st.dists_.data());
    ivf_detail::push_scored(st.heap_, opt.k, st.ids_.data(), st.dists_.data(), h.count);
    return h.next;
  }

  ivf_detail::IvfDirEntry dir_entry(uint32_t l) const {
    SharedGuard g = pool_->pin_shared(PageId(space_, meta_.directory_first + l / meta_.entries_per_page));
    ivf_detail::IvfDirEntry e;
    std::memcpy(&e, g.data() + size_t{l % meta_.entries_per_page} * kDirEntryBytes, sizeof e);
    return e;
  }

  // The first block after the centroids and the directory: posting pages start there.
  static uint64_t posting_first(const ivf_detail::IvfMeta& m) {
    return std::max<uint64_t>(uint64_t{m.centroid_first} + m.centroid_pages,
                              uint64_t{m.directory_first} + m.directory_pages);
  }

  // Walks a posting chain with a bound: every next block must be a posting page inside the
  // space, and a chain may not have more pages than the space (else it has a cycle). The
  // space may grow meanwhile (add): the block count is read again before giving up.
  class ChainBound {
   public:
    explicit ChainBound(const BasicIvf& ivf) : ivf_(ivf), blocks_(ivf.pool_->space_blocks(ivf.space_)) {}
    // The block after `pid` (whose validated or pinned header says `next`), or kNoBlock.
    uint32_t next(PageId pid, uint32_t next) {
      if (next == kNoBlock) return kNoBlock;
      ++pages_;
      if (next >= blocks_ || pages_ >= blocks_) blocks_ = ivf_.pool_->space_blocks(ivf_.space_);
      if (next < posting_first(ivf_.meta_) || next >= blocks_) {
        corrupt(pid, "posting page names next block " + std::to_string(next) + ", not a posting page");
      }
      if (pages_ >= blocks_) corrupt(pid, "posting chain is longer than the space (a cycle)");
      return next;
    }

   private:
    const BasicIvf& ivf_;
    uint64_t blocks_;
    uint64_t pages_ = 0;  // pages left behind so far
  };

  [[noreturn]] static void corrupt(PageId pid, const std::string& what) { corrupt_page("ivf", what, pid); }
  [[noreturn]] void bad_posting(PageId pid, const ivf_detail::IvfPostingHeader& h, uint32_t list,
                                const char* role) const {
    corrupt(pid, "page (tag " + std::to_string(h.tag) + ", list " + std::to_string(h.list) + ", count " +
                     std::to_string(h.count) + ", next " + std::to_string(h.next) + ") is not a posting page " + role +
                     " list " + std::to_string(list) + " (at most " + std::to_string(meta_.records_per_page) +
                     " records)");
  }

  [[noreturn]] static void fail(uint32_t list, const char* what) {
    throw std::logic_error("ivf list " + std::to_string(list) + ": " + what);
  }

  Pool* pool_;
  SpaceId space_;
  ivf_detail::IvfMeta meta_;
  std::vector<float> centroids_;  // nlist x dim, loaded at open (immutable)
  std::vector<ListHead> heads_;   // immutable after build / open
  std::unique_ptr<std::atomic<uint64_t>> size_;
  vector::DistanceFn dist_;
  vector::DistanceManyFn many_;
  // Points into centroids_, whose buffer a move keeps (BasicIvf is move-only: size_).
  vector::CoarseRanker ranker_;
};

}  // namespace calico::index
