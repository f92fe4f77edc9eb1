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
//   search(q, options, state, &out, filter)      the same among the rows whose id `filter`
//                                     allows (and search_batch(..., filter))
//   add(id, v)                        appends one row to its list (thread-safe, also
//                                     concurrently with search)
//   remove(ids, n)                    removes every row with one of the ids (thread-safe;
//                                     one scan of the whole index per call)
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
//   allocated at the end of the space and linked from the tail. remove() compacts within
//   a page (the page's last record moves into the removed one's place) and frees no page,
//   so after it any page of a chain, in the middle too, may hold fewer than
//   records_per_page records, or none; add() appends to the tail only (a new page when the
//   tail is full), whatever the pages before it hold.
//   Invariants: every page of list l's chain carries tag and list l; count <=
//   records_per_page (nothing assumes a page other than a new build's is full); the chain
//   from `first` has build_pages contiguous pages, ends at `tail`, and its counts sum to
//   the directory's rows; a record never moves to another page. kCosine rows are stored
//   normalised.
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
//   / 4 in [1, 64]) so that prefetched pages are not evicted before they are read. The
//   steps name pages by block, never by row count, so pages that remove() left short
//   are prefetched and scored like any other.
//   (3) one page ahead of the scan (Lookahead): the next page known in advance (the next
//   of a build-time run, else the next probed list's first) is read optimistically and
//   every cache line of it prefetched before the current page is scored;
//   that read is the next page's first optimistic attempt. Frames of adjacent blocks are
//   not adjacent in memory, so without it the hardware prefetcher stops at every page end.
//
// Filtered search (search(..., filter), vector::IdFilter: a bitmap over ids): a scored row
// enters the top-k heap only when the filter allows its id (a separate loop, taken only
// when a filter is given: the unfiltered scan is unchanged). Every centroid is ranked; the
// nprobe nearest lists are scanned, then, while the heap holds fewer than k rows, the
// next-nearest lists one at a time, until it holds k or every list was scanned. So the
// result has min(k, allowed rows) rows at any selectivity; a filter that allows few rows,
// or rows only in far lists, costs up to a scan of the whole index.
//
// Removal (remove(ids, n)): there is no id -> list map (a B+tree id map is planned:
// docs/design/mutable_indexes.md), so one call scans the whole index once: pass 1 walks
// every list's chain under shared pins (one at a time) and notes which of the ids occur
// and in which lists; any id not found, or repeated in the batch, is rejected
// (kInvalidArgument naming the first) before anything is written. Pass 2, per list that
// holds one of the ids: the directory page is latched exclusively, then the chain's pages
// one at a time, exclusively (add()'s order), and each matching record is removed by
// compaction within its page (its page's last record copied over it, count - 1); the
// directory entry's rows and size() follow each page. Batch deletes: a call costs a read
// of every posting page whatever n is. remove() calls run one at a time (a mutex: two
// batches naming one id would both pass pass 1).
//
// Concurrency: search(), add() and remove() may run from any number of threads at once
// (each search with its own IvfSearchState). add() latches the list's directory page
// exclusively, then its tail page, then (when full) the new page it allocates; remove()
// latches the directory page, then the chain's pages one at a time: that order is the same
// for every writer, and readers hold at most one shared pin at a time, so there is no
// deadlock. Every change to a posting page is made under its exclusive latch, whose
// release bumps the page's version, so an optimistic reader that raced it fails
// validation and reads again; and a record never moves between pages, so a search sees
// every row that no remove() touched exactly once. Searches see a row added or removed
// concurrently or not; every row whose add() returned before the search started is seen,
// and no row whose remove() returned before it started. Rows with one of the ids that an
// add() puts in concurrently with a remove() may or may not be removed. build() and open()
// must not race with operations on the same space.
//
// Errors: calico::Error (kInvalidArgument for bad input; pool errors pass through;
// kCorruptPage naming the page when a pinned or validated page breaks the invariants above:
// a wrong tag, list or count, a next block outside the posting pages or past the space, a
// chain longer than the space (a cycle), a directory tail that is not a posting page, a
// directory entry counting fewer rows than remove() finds in its chain).
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
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
// Thread safety: search, search_batch, add and remove may run from any number of threads at
// once (each search with its own IvfSearchState); verify only with no add or remove running; build and
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

  // search() among the rows whose id `filter` allows (see "Filtered search" above): the
  // nprobe nearest lists, then further lists in centroid order while fewer than k allowed
  // rows were found. *out has min(k, allowed rows in the index) entries (rows: a repeated
  // id counts once per row); with nprobe = nlist it is the exact top k of the allowed rows.
  // The filter's words must not change during the call. Errors: as search().
  void search(const float* q, const IvfSearchOptions& opt, IvfSearchState& st, std::vector<vector::Neighbor>* out,
              const vector::IdFilter& filter) const;
  // search_batch() with a filter: out[i] equals search(qs + i * dim(), ..., filter).
  void search_batch(const float* qs, size_t nq, const IvfSearchOptions& opt, IvfSearchState& st,
                    std::vector<vector::Neighbor>* out, const vector::IdFilter& filter) const;

  // Appends row (id, v) to the list of v's nearest centroid (kCosine: v normalised). Ids
  // are not checked for uniqueness: a repeated id is a second row with that id. Thread-safe
  // (see the header for the latch order). The row is durable after the next flush().
  // Errors: kInvalidArgument (non-finite v, zero v for kCosine; nothing is written);
  // pin / allocate errors (kPoolFull: nothing is written).
  void add(uint32_t id, const float* v);

  // Removes every row whose id is one of ids[0 .. n) (a repeated id is several rows: all
  // go). Scans the whole index once per call (see "Removal" above): batch the ids. Thread-
  // safe; calls run one at a time. The rows' pages are written back at the next flush().
  // Errors: kInvalidArgument naming the first id that is repeated in the batch or has no
  // row (ids null with n > 0 too): nothing is removed. kCorruptPage (see the header), or
  // pool errors while pinning: in pass 1 nothing is removed; in pass 2 the rows of the
  // pages already compacted stay removed (the directory and size() agree with them: the
  // index stays consistent, and a retry of the ids still present finishes the batch).
  void remove(const uint32_t* ids, size_t n);

  // Whole-structure check for tests, at quiescence (no concurrent add or remove): every list's chain
  // keeps the invariants of the header. Returns the number of rows. Throws
  // std::logic_error naming the first violation.
  uint64_t verify() const;

  // Replaces *ids with the ids of list `list` in stored order (read under shared pins).
  // Errors: kInvalidArgument (list >= nlist()); kCorruptPage (see the header).
  void list_ids(uint32_t list, std::vector<uint32_t>* ids) const;

  uint32_t dim() const;
  uint32_t nlist() const;
  vector::Metric metric() const;
  // Rows: built plus added minus removed (an add counts once it returned; a remove page by
  // page as pass 2 compacts).
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
  void search_one(const float* q, const IvfSearchOptions& opt, IvfSearchState& st, std::vector<vector::Neighbor>* out,
                  const vector::IdFilter* filter) const;
  void search_block(const float* qs, size_t nq, const IvfSearchOptions& opt, IvfSearchState& st,
                    std::vector<vector::Neighbor>* out, const vector::IdFilter* filter) const;
  void scan_probes(const float* query, std::span<const vector::Neighbor> ranked, uint32_t nprobe,
                   const IvfSearchOptions& opt, IvfSearchState& st, std::vector<vector::Neighbor>* out,
                   const vector::IdFilter* filter) const;

  // The page read one step ahead of the scan (with opt.prefetch; src/index/ivf/ivf_impl.h).
  struct Lookahead;
  void look_ahead(uint32_t block, Lookahead& ahead) const;
  void scan_list(uint32_t l, uint32_t after, const float* query, const IvfSearchOptions& opt, IvfSearchState& st,
                 Lookahead& ahead, const vector::IdFilter* filter) const;
  uint32_t scan_page(PageId pid, uint32_t l, const float* query, const IvfSearchOptions& opt, IvfSearchState& st,
                     const OptimisticRead* pre, const std::byte* next_frame, const vector::IdFilter* filter) const;
  static void offer(IvfSearchState& st, uint32_t k, uint32_t count, const vector::IdFilter* filter);
  void find_rows(std::span<const uint32_t> wanted, std::vector<uint8_t>* found, std::vector<uint32_t>* lists) const;
  template <class Fn>
  void for_each_id(uint32_t l, Fn&& fn) const;
  void remove_in_list(uint32_t l, std::span<const uint32_t> wanted);
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
  std::unique_ptr<std::mutex> remove_mu_;  // held by remove() for its whole call
  vector::DistanceFn dist_;
  vector::DistanceManyFn many_;
  // Points into centroids_, whose buffer a move keeps (BasicIvf is move-only: size_).
  vector::CoarseRanker ranker_;
};

}  // namespace calico::index

// The member definitions (src/index/ivf/ivf_impl.h) are compiled into the library once per translation
// (cmake/variants.cmake) and are not included here: a user links them rather than
// compiling them again (src/index/README.md, "Compiled once"). The fuzz build, which
// compiles no variant, instantiates them where they are used.
#ifdef CALICO_IMPLICIT_INSTANTIATION
#include "calico/detail/ivf_impl.h"
#endif
