// BasicIvf<Pool>: an IVF-Flat vector index (inverted file of full-precision vectors) stored
// in buffer-pool pages. build() trains nlist centroids by k-means on a seeded sample of the
// rows, assigns every row to its nearest centroid and writes one posting list per centroid
// as a chain of pages; search() ranks the centroids (in memory), scans the nprobe nearest
// lists page by page and keeps the k nearest rows; search_batch() does the same for a
// block of queries, ranking their centroids with one matrix product (BLAS). Search is the scan-heavy access pattern:
// long runs of pages read once, in an order known in advance (so group prefetch applies).
// The declaration and its contract; the format's structs are in src/index/ivf/ivf_layout.h,
// the member definitions in src/index/ivf/ivf_impl.h.
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

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/detail/ivf.h"
#include "calico/page_id.h"

namespace calico::index {

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
  explicit IvfSearchState(const BasicIvf<Pool>& ivf);

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

// IvfFormat (the format constants and layout arithmetic, inherited): src/index/ivf/ivf_layout.h.
// Thread safety: search, search_batch and add may run from any number of threads at once
// (each search with its own IvfSearchState); verify only with no add running; build and
// open must not race with operations on the same space (see "Concurrency" above).
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
                        const IvfProgressFn& progress = {});

  // Loads the metadata, the centroids and the list directory.
  // Errors: kUnknownSpace; kInvalidArgument when block 0 is not this format's metadata
  // (the space is not an index of this format); kCorruptPage naming the centroid or
  // directory page whose bytes the metadata's index cannot accept (a non-finite centroid, a
  // directory entry outside the posting pages).
  static BasicIvf open(Pool& pool, std::string_view name);

  // The k nearest rows (ascending by (distance, id)) among the lists of the nprobe
  // centroids nearest to q (ties between centroids: the lower list). nprobe = nlist is an
  // exact search. Deterministic: the result does not depend on optimistic or prefetch.
  // *out is replaced; it has min(k, rows in the probed lists) entries. The centroids are
  // ranked with the many-vector kernel (vector::CoarseRanker::rank).
  // Errors: kInvalidArgument (k 0, nprobe 0, a non-finite q, a zero q for kCosine); pool
  // errors.
  void search(const float* q, const IvfSearchOptions& opt, IvfSearchState& st, std::vector<vector::Neighbor>* out) const;

  // Searches nq queries, row i at qs + i * dim(), into out[i] (out points to nq vectors):
  // out[i] equals what search(qs + i * dim(), ...) gives, exactly. The centroids of the
  // block are ranked with one matrix product (vector::CoarseRanker::rank_block: BLAS sgemm,
  // then the kernel on the lists near the cut, so the probes are the same as search()'s);
  // then each query's lists are scanned as in search(). Every query is checked before any
  // is searched. Errors: as search() (naming the query's index); nothing is written to out
  // when a query is rejected.
  void search_batch(const float* qs, size_t nq, const IvfSearchOptions& opt, IvfSearchState& st,
                    std::vector<vector::Neighbor>* out) const;

  // Appends row (id, v) to the list of v's nearest centroid (kCosine: v normalised). Ids
  // are not checked for uniqueness: a repeated id is a second row with that id. Thread-safe
  // (see the header for the latch order). The row is durable after the next flush().
  // Errors: kInvalidArgument (non-finite v, zero v for kCosine; nothing is written);
  // pin / allocate errors (kPoolFull: nothing is written).
  void add(uint32_t id, const float* v);

  // Whole-structure check for tests, at quiescence (no concurrent add): every list's chain
  // keeps the invariants of the header. Returns the number of rows. Throws
  // std::logic_error naming the first violation.
  uint64_t verify() const;

  // Replaces *ids with the ids of list `list` in stored order (read under shared pins).
  // Errors: kInvalidArgument (list >= nlist()); kCorruptPage (see the header).
  void list_ids(uint32_t list, std::vector<uint32_t>* ids) const;

  uint32_t dim() const;
  uint32_t nlist() const;
  vector::Metric metric() const;
  // Rows: built plus added (added rows count once their add() returned).
  uint64_t size() const;
  uint32_t records_per_page() const;
  SpaceId space() const;
  // The parameters of build() (train_sample as used; threads is not stored: 0).
  IvfParams params() const;
  // Centroid of list l (dim floats, in memory). Pre: l < nlist().
  const float* centroid(uint32_t l) const;
  // The prefetch caps (see the header).
  uint32_t prefetch_window() const;
  uint32_t first_page_prefetch() const;

 private:
  struct ListHead {
    uint32_t first;        // block of the first page
    uint32_t build_pages;  // pages first .. first + build_pages - 1 are the chain's start
  };

  BasicIvf(Pool& pool, SpaceId space, const ivf_detail::IvfMeta& meta, std::vector<float> centroids,
           std::vector<ListHead> heads, uint64_t rows);
  static void check_build_args(const IvfParams& p, size_t usable, const float* data, uint64_t n);
  static void normalize_in_page(std::byte* p, uint32_t dim);
  const float* prepare(const float* v, std::vector<float>* buf, const char* what) const;
  static void check_search_options(const IvfSearchOptions& opt);
  void scan_probes(const float* query, std::span<const vector::Neighbor> probes, const IvfSearchOptions& opt,
                   IvfSearchState& st, std::vector<vector::Neighbor>* out) const;

  // The page read one step ahead of the scan (with opt.prefetch; src/index/ivf/ivf_impl.h).
  struct Lookahead;
  void look_ahead(uint32_t block, Lookahead& ahead) const;
  void scan_list(uint32_t l, uint32_t after, const float* query, const IvfSearchOptions& opt, IvfSearchState& st,
                 Lookahead& ahead) const;
  uint32_t scan_page(PageId pid, uint32_t l, const float* query, const IvfSearchOptions& opt, IvfSearchState& st,
                     const OptimisticRead* pre, const std::byte* next_frame) const;
  ivf_detail::IvfDirEntry dir_entry(uint32_t l) const;
  static uint64_t posting_first(const ivf_detail::IvfMeta& m);

  class ChainBound;  // a posting chain walk with a bound (src/index/ivf/ivf_impl.h)

  [[noreturn]] static void corrupt(PageId pid, const std::string& what);
  [[noreturn]] void bad_posting(PageId pid, const ivf_detail::IvfPostingHeader& h, uint32_t list,
                                const char* role) const;
  [[noreturn]] static void fail(uint32_t list, const char* what);

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

// The member definitions (src/index/ivf/ivf_impl.h).
#include "calico/detail/ivf_impl.h"
