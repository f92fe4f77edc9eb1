// BasicHnsw<Pool>: a Hierarchical Navigable Small World graph (Malkov & Yashunin, "Efficient
// and robust approximate nearest neighbor search using HNSW graphs") whose nodes live in
// buffer-pool pages, so that the index can be larger than the pool and survives a restart.
// The declaration and its contract; the page format is in src/index/hnsw/hnsw_layout.h, the
// member definitions in src/index/hnsw/hnsw_impl.h.
//
// Principal entry points:
//   BasicHnsw::create(pool, name, params, capacity)   a new, empty index in space `name`
//   BasicHnsw::open(pool, name)                       an index written earlier (any process)
//   add(id, v)                      inserts vector v as node id (growing the index past
//                                   its capacity: reserve); thread-safe
//   remove(id)                      node id is never returned again (a tombstone); thread-safe
//   search(q, options, state, &out) the k approximate nearest neighbours; thread-safe
//   search(q, options, state, &out, filter)  the same among the ids `filter` allows
//   search_batch(qs, options, states, outs)  several searches in flight on one thread
//   size(), capacity(), reserve(n), dim(), params(), contains(id), check_structure()
//
// Growth (format 3): the index takes ids past create()'s capacity by allocating extents of
// level-0 pages, each doubling the capacity, while searches and adds go on (the extent map
// and its publication: src/index/hnsw/hnsw_layout.h, HnswExtentMap).
//
// Algorithm (the paper's Algorithms 1, 2, 4, 5):
//   - a node's top level is floor(-ln(U) / ln(M)) with U in (0, 1] drawn from a hash of
//     (seed, id), so a build is deterministic given the insertion order; capped at
//     max_level_cap - 1 (src/index/hnsw/hnsw_layout.h);
//   - insertion: greedy descent (ef = 1) from the entry point down to the node's level + 1,
//     then on every level from min(level, max level) down to 0 a beam search with
//     ef_construction whose whole result is the next level's entry set; neighbours are chosen
//     by the heuristic (Algorithm 4, extendCandidates and keepPrunedConnections off), M on
//     every level; each chosen neighbour gets a back link, and a list that overflows (2M on
//     level 0, M above) is cut back by the same heuristic around its owner;
//   - search: greedy descent to level 1, then a beam search with max(ef, k) on level 0; with
//     `prefetch`, expanding a node first hands its unvisited neighbours' pages and vector
//     offsets to pool.read_group ([Calico] Algorithm 4, section 5.1), and the greedy
//     descent reads each upper-level list's pages as one group the same way;
//     search_batch interleaves several searches' level-0 expansions on one thread.
//   Distances are vector::distance_kernel(metric); cosine vectors (stored and queried) are
//   normalised first and compared with the inner-product kernel.
//
// Removal and filters. remove(id) sets a tombstone in the node's head (kDeleted) and counts
// it; the node keeps its record and links, so the graph stays as connected as it was and
// searches go through removed nodes as before. A search returns only live nodes that its
// filter allows: on level 0 a node enters the beam's candidates as always, but the kept
// results (the max-heap bounded by ef, which also decides when the beam stops) take only
// admissible nodes, as hnswlib's filtered search does. The check costs nothing while the
// index has no tombstone and the search no filter (the metadata's tombstone count, read
// at the start, selects the path); otherwise it reads the head in the frame the distance
// came from and validates the read again. A filter that allows few ids is answered by an
// exact scan of them (HnswSearchOptions::exact_scan_below); and a graph search that found
// fewer than k admissible nodes is completed by an exact scan, so that a search returns
// min(k, admissible nodes) results whatever the filter's selectivity. Removed nodes'
// slots are not reused and their ids cannot be added again until consolidate() repairs the
// graph around them and frees the slots.
//
// Concurrency and latching. Page latches are the node locks, and a thread never holds two:
//   - add() writes the new node's record (vector, level, upper unit) under its level-0
//     page's exclusive latch, with an empty list, and releases it; then its own list on
//     each level, and only then the back links that name it (so a node is fully written,
//     links included, before any other node links to it);
//   - each list update (own list, back links) latches the list's page exclusive, merges,
//     and releases. A list that overflows is shrunk from a snapshot without a latch (the
//     heuristic reads other vectors), then written only if the list is still the snapshot,
//     else redone (bounded by kMaxLinkAttempts; a failure there means another writer
//     succeeded each time);
//   - the entry point, max level, size and the upper-region bump counter are changed under
//     the metadata page's exclusive latch; readers copy them optimistically;
//   - searches (and the searches inside add) read pages optimistically: read_optimistic,
//     copy through hnsw_racy_copy (bounds-checked before, every copied value checked after),
//     validate; after Pool::kOptimisticAttempts failed validations the read is repeated under
//     pin_shared. Optimistic distances skip the copy: the kernel reads the vector in the
//     frame and the result is dropped unless validate succeeds (distance_in). HnswSearchOptions::optimistic = false pins every read (the ablation).
//   Upper-region pages are allocated under an in-process mutex (one BasicHnsw object per
//   index per pool: two objects opened on one space in one pool would race on that counter).
//   A node of a level above the current maximum becomes the entry point when its insertion
//   ends; such insertions hold an in-process mutex throughout (as hnswlib's global lock), so
//   that the next one links the levels the previous one raised.
//   DirectTranslation pools do not validate optimistic reads: use them only for a built
//   index that no thread modifies while others search (as every direct-pool benchmark does).
//
// Errors (calico::Error, kInvalidArgument unless noted; the index stays intact):
//   create: dim 0, a record that does not fit a page, M < 2 or M > 256, metric out of range,
//     capacity 0 or too large for the space; kSpaceExists. ef_construction below M is
//     raised to M;
//   open: a space that is not an HNSW of this format (or another page size); kUnknownSpace;
//   add: id past the capacity of a format-1 or -2 index (or a growth that fails: reserve), an id added before (or removed, or being added by another thread), a vector
//     with NaN or infinity, a cosine vector of norm 0, a retried id (below) with another
//     vector; kRestartLimit (see above); pool errors (kPoolFull, kIoError, ...): see
//     "A failed add" below;
//   remove: id >= capacity, an id not in the index (never added, removed before, or whose
//     add is running or failed);
//   search: k == 0, a state made for another index, a query with NaN or infinity, a zero
//     cosine query. ef < k is raised to k. Searching an empty index returns no results;
//   add, search, size, contains: kCorruptPage naming the page when a pinned or validated
//     page breaks the format (a head, count or id out of range, an upper list past the
//     space, an entry point past the capacity, metadata naming pages the space lacks).
//
// A failed add. Any error of add() (a pool error while it faults, allocates or links) leaves
// the index searchable and every invariant of src/index/hnsw/hnsw_layout.h true except the last two, which
// change as follows. The invariant that makes this so, at every step of add():
//   (F) a node is present (kPresent) only once its whole record (vector, level, upper unit,
//       an empty list on each of its levels) is written, and a list names only present nodes;
//       so every list a search or an insertion follows leads to a complete record, whatever
//       step an add stopped at;
//   (L) another node's list names a node only once the node's own lists on all the levels
//       it is inserted on are written (add() writes them first and the back links last), so
//       a search that reaches a node whose add failed goes on from it like from any other.
// Each record, list or metadata change add() makes is written under one exclusive latch with
// nothing that can throw between its first byte and the release, so a throw never leaves a
// half-written record or list. What an error leaves behind, by step:
//   - before the node's record is written (contains check, upper units, the claim): nothing
//     but, possibly, upper units never to be used (and zero pages allocated for them, which
//     the next allocation takes over): the id is free, add(id) may be called again;
//   - after it (descent, own lists, back links, the metadata's size and entry point): the
//     node is present, with some or all of its links; size() does not count it, it is never
//     the entry point, searches may find it. Its id is recorded as a failed add (failed_adds())
//     and add(id) with the same vector resumes the insertion: it redoes the links (merging
//     is idempotent) and then counts the node. Until then check_structure() counts the
//     failed adds beside size, and does not require a level's nodes to have non-empty
//     lists (a failed add can leave a node that raised a level without a link there; that
//     costs recall, never a wrong result). The record of failed adds lives in this object:
//     after a reopen such a node is present and uncounted, as after a crash during an add.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/detail/hnsw.h"
#include "calico/page_id.h"

namespace calico::index {

struct HnswParams {
  uint32_t dim = 0;
  vector::Metric metric = vector::Metric::kL2;
  uint32_t M = 16;                 // links per node on levels >= 1; 2M on level 0
  uint32_t ef_construction = 100;  // beam width of insertion (raised to M)
  uint64_t seed = 42;              // levels are drawn from hash(seed, id)
};

struct HnswSearchOptions {
  uint32_t k = 10;
  uint32_t ef = 50;         // beam width on level 0 (raised to k)
  bool optimistic = true;   // false: every page read under a shared pin
  bool prefetch = true;     // group prefetch of a node's unvisited neighbours (level 0)
  // Larger than memory: when a node's group had to read pages, the unvisited neighbours of
  // the next `lookahead` candidates are read ahead with it, so that the disk has more than
  // one node's fan-out in flight (with prefetch only; 0: off). A hint: results are the same.
  uint32_t lookahead = 2;
  // A filtered search whose filter allows at most this many ids scans them exactly instead
  // of searching the graph. 0: automatic, an exact scan when m * m <= kExactScanC * ef * live
  // for m allowed ids (a graph search visits about ef / selectivity nodes, an exact scan m).
  static constexpr uint64_t kExactScanC = 25;  // measured: docs/results/vector_filtered.md
  uint32_t exact_scan_below = 0;
};

// Which ids a filtered search may return (removed ids never are): the allow-list bitmap
// every vector index takes (src/vector/id_filter.h); the name HNSW code has always used.
using HnswFilter = vector::IdFilter;

// Counters of the work done with one HnswSearchState (searches and, for the states add()
// uses internally, insertions). Cumulative until reset.
struct HnswSearchStats {
  uint64_t searches = 0;
  uint64_t distances = 0;  // distance computations (vector reads)
  uint64_t expanded = 0;   // neighbour lists read
  uint64_t retries = 0;    // optimistic reads that failed validation
};

template <class Pool>
class BasicHnsw;

// A search's scratch space: visited marks (epochs, one byte per node of the capacity),
// candidate and result heaps, buffers for a list, a vector and a prefetch group. One per
// thread (one per query in flight for search_batch), reused, so that a search allocates
// nothing once the heaps have grown to ef.
// Cache-line aligned: a search writes its heaps' bounds and counters on every step, and
// states kept side by side (one per thread in a vector) must not share a line.
class alignas(64) HnswSearchState {
 public:
  template <class Pool>
  explicit HnswSearchState(const BasicHnsw<Pool>& index);

  const HnswSearchStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  template <class>
  friend class BasicHnsw;
  HnswSearchState(const HnswLayout& l, const void* owner, uint32_t capacity);

  // Starts a new visited set; returns the epoch that marks "visited".
  uint8_t next_epoch();
  // Grows the visited marks to `capacity` nodes (the index grew since the last search).
  void fit(uint32_t capacity);
  // Node id's visited mark (id below capacity_).
  uint8_t& mark(uint32_t id);

  const void* owner_;            // the index it was made for (its shared state)
  uint32_t capacity_, dim_, M_;  // buffers are sized by them; capacity_ follows the index's
  // visited_[v] == epoch_: seen in the current layer search. One byte per node, as faiss's
  // VisitedTable: the marks a search tests are random, and at 4 bytes per node (800 KB for
  // 200K nodes) they missed the L2 cache beside the vectors streaming through it; the test
  // was half of search_layer's time (perf, embedding set, ef 16).
  std::vector<uint8_t> visited_;
  uint8_t epoch_ = 0;
  std::vector<vector::Neighbor> candidates_;  // min-heap (std::greater)
  std::vector<vector::Neighbor> results_;     // max-heap (std::less), at most ef
  std::vector<float> query_;                  // the (normalised) query or new vector
  std::vector<float> vec_;                    // one vector read from a page
  std::vector<uint32_t> links_, fresh_;       // a list; its unvisited members
  std::vector<uint32_t> ahead_;               // a read-ahead candidate's list
  uint32_t pending_ = 0;                       // fresh_[0 .. pending_): to be scored (layer_expand)
  std::array<uint32_t, 8> read_ahead_{};      // the last candidates read ahead (ring; search_layer)
  uint32_t read_ahead_next_ = 0;
  std::vector<PageId> group_;                 // prefetch group
  std::vector<uint32_t> offsets_;
  std::vector<OptimisticRead> reads_;         // the group's reads (read_group)
  // add() only: the layer result, the chosen neighbours, a list snapshot, merged lists,
  // candidate rows (vectors) for the heuristic.
  std::vector<vector::Neighbor> layer_, shrink_;
  std::vector<uint32_t> chosen_, snapshot_, merged_;
  std::vector<float> rows_;
  HnswSearchStats stats_;
};

// Thread safety: add, remove, consolidate, search, search_batch, size, contains and
// failed_adds may run from any number of threads at once (each search with its own
// HnswSearchState; consolidate excludes add and remove); check_structure only at quiescence. One BasicHnsw object per index per pool (see "Concurrency" above).
template <class Pool>
class BasicHnsw {
 public:
  // Bounds every retry loop of a list update (see the file comment).
  static constexpr uint32_t kMaxLinkAttempts = 10000;

  // Ids below this: u32 node ids, one value (HnswMeta::kNone) reserved.
  static constexpr uint64_t kMaxCapacity = UINT32_MAX - 1;

  // Creates space `name` with the metadata page and the first level-0 extent: ceil(capacity
  // / per_page) zeroed pages (no node), so that ids below the capacity (rounded up to a
  // whole page) need no growth. The index grows past it as ids are added (add, reserve).
  static BasicHnsw create(Pool& pool, std::string_view name, const HnswParams& params, uint32_t capacity);

  // Errors: kUnknownSpace; kInvalidArgument when block 0 is not this format's metadata for
  // this pool's page size, or the space is shorter than the metadata says.
  static BasicHnsw open(Pool& pool, std::string_view name);

  // Move-only (the in-process state moves with it); a moved-from index may only be
  // destroyed or assigned to.
  BasicHnsw(BasicHnsw&&) noexcept;
  BasicHnsw& operator=(BasicHnsw&&) noexcept;
  ~BasicHnsw();

  // What create() was given (ef_construction as raised to M), and where every node lives
  // (src/index/hnsw/hnsw_layout.h). Immutable.
  uint32_t dim() const;
  // Nodes the index has room for now (ids below it): create()'s capacity rounded up to a
  // page, doubled by each growth. Only grows.
  uint32_t capacity() const;
  // Grows the index (format 3) until capacity() >= n: each growth adds a level-0 extent
  // that doubles the capacity, allocated at the space's end, while searches and adds go
  // on (an add of an id past the capacity calls it). Errors: kInvalidArgument for a
  // format-1 or -2 index, or n past kMaxCapacity or the space's block limit; pool errors
  // (kPoolFull, kIoError), after which the capacity is as it was.
  void reserve(uint64_t n);
  const HnswParams& params() const;
  const HnswLayout& layout() const;
  SpaceId space() const;
  // Live nodes: added (add() returned; failed adds are not counted) and not removed. Racy
  // while adds and removes run.
  uint32_t size() const;
  // The top level node `id` was given (a hash of seed and id; whether or not it was added).
  uint32_t level_of(uint32_t id) const;

  // Inserts vector v[0 .. dim) as node `id`; an id past the capacity grows the index first
  // (reserve(id + 1)). Thread-safe: any number of threads may add and search at once. Errors: see the file comment; after an error that left the node
  // present (failed_adds()), add(id, v) with the same vector completes the insertion.
  void add(uint32_t id, const float* v);
  // Removes node `id`: no search returns it again (a search running meanwhile may). Its
  // record stays as a tombstone that searches pass through. Thread-safe with add, remove and
  // search. Errors: see the file comment (the index is unchanged).
  void remove(uint32_t id);
  // Repairs the graph around the removed nodes and frees their slots: every list that names
  // a removed node gets the removed node's own neighbours instead, pruned by the insertion
  // heuristic ([FreshDiskANN] Algorithm 4, on every level); a removed entry point gives way
  // to a live node of the highest level; then the removed slots are cleared, so their ids
  // may be added again. Returns the number of slots freed. One pass over every node's head
  // and lists. Blocks add() and remove() while it runs; searches go on. Errors: pool errors
  // and kCorruptPage; lists are rewritten before any slot is freed, so a failure part-way
  // leaves a searchable index whose tombstones the next call frees.
  uint32_t consolidate();
  // The k (or fewer, when the index holds fewer) approximate nearest neighbours of q,
  // sorted ascending by (distance, id), into *out (replaced). Deterministic for an index
  // that does not change: the same for every read mode and prefetch setting.
  void search(const float* q, const HnswSearchOptions& opt, HnswSearchState& st,
              std::vector<vector::Neighbor>* out) const;
  // search() among the ids `filter` allows: the k (or fewer, when fewer live nodes are
  // allowed) approximate nearest of them; see "Removal and filters" in the file comment.
  void search(const float* q, const HnswSearchOptions& opt, HnswSearchState& st, std::vector<vector::Neighbor>* out,
              const HnswFilter& filter) const;

  // search() for queries[0 .. n) with the n searches in flight at once on the calling
  // thread: they take turns, one expansion of the level-0 beam each, and a search scores the
  // pages its expansion started (read_group) only at its next turn, after the others' turns.
  // So a thread keeps up to n expansions' reads on the device instead of one, and waits only
  // when a page has still not arrived after the others' work. Each search runs the same steps
  // in the same order as search() (results are identical; the tests compare them); only the
  // interleaving of their page accesses differs. The upper levels are descended one search
  // at a time (their few pages stay resident). out[i] is replaced by queries[i]'s results.
  // states[i] is queries[i]'s state (distinct objects). Errors: as search() (checked for
  // every query before any search starts); also kInvalidArgument when states or out are
  // shorter than queries, or a state is given twice.
  void search_batch(std::span<const float* const> queries, const HnswSearchOptions& opt,
                    std::span<HnswSearchState* const> states, std::span<std::vector<vector::Neighbor>> out) const;

  // Whether node id was added (or is being added, or its add failed after the node became
  // present: failed_adds()) and not removed. Errors: kInvalidArgument (id >= capacity).
  bool contains(uint32_t id) const;
  // Whether node id was removed (its slot holds a tombstone). Errors: as contains().
  bool removed(uint32_t id) const;

  // The ids whose add() failed after the node became present and that no later add()
  // completed, ascending (see "A failed add" in the file comment). Racy while adds run.
  std::vector<uint32_t> failed_adds() const;

  // Whole-structure check for tests, at quiescence (no add running): the invariants of
  // src/index/hnsw/hnsw_layout.h, with failed adds as the file comment says. Throws
  // std::logic_error naming the first violation.
  void check_structure() const;

 private:
  using HnswStats = HnswSearchStats;

  struct Shared;    // add()'s scratch states and the in-process locks (src/index/hnsw/hnsw_impl.h)
  class AddRecord;  // one add() of an id, registered in Shared::adds
  struct Lease;     // a scratch state borrowed from Shared for one call

  // Where a list lives: its page, the byte offset of its count, where ids start relative to
  // the count, and its maximum length.
  struct ListLocation {
    PageId pid;
    uint32_t offset;
    uint32_t ids_offset;
    uint32_t max;
  };

  friend class HnswSearchState;

  // extents: the table read by open() (format 3), nullptr for create() or formats 1 and 2.
  BasicHnsw(Pool& pool, SpaceId space, const HnswParams& p, const HnswLayout& l, const HnswExtentTable* extents,
            uint32_t format);
  // Pages of extent e of a region whose extent 0 has `first` pages.
  static uint64_t extent_pages(uint64_t first, uint32_t e);
  bool growable() const;
  uint32_t allocate_extent(uint64_t pages);
  void record_extent(ExclusiveGuard& meta, bool upper, uint32_t e, uint32_t base);
  PageId meta_page() const;
  PageId page_of(uint32_t id) const;
  static Error duplicate(uint32_t id, const HnswRowHead& h);
  void check_state(const HnswSearchState& st) const;
  void prepare_vector(const float* v, float* out, const char* what) const;
  uint32_t random_level(uint32_t id) const;
  template <class Fn>
  void read_page(PageId pid, bool optimistic, HnswStats& s, const char* what, Fn&& fn) const;
  [[noreturn]] static void corrupt(PageId pid, const std::string& what);
  bool meta_state_ok(const HnswMetaState& ms) const;
  static HnswMetaState meta_state_of(const std::byte* page);
  static void write_meta_state(ExclusiveGuard& g, const HnswMetaState& s);
  HnswMetaState read_meta_state(bool optimistic, HnswStats& s) const;
  HnswRowHead read_head(uint32_t id, bool optimistic, HnswStats& s) const;
  ListLocation list_location(uint32_t id, uint32_t level, const HnswRowHead& h) const;
  ListLocation list_location(uint32_t id, uint32_t level, HnswStats& s) const;
  uint32_t read_links(uint32_t id, uint32_t level, bool optimistic, HnswSearchState& st, uint32_t* out) const;
  uint32_t leave_out_newer(PageId pid, uint32_t id, uint32_t* out, uint32_t count, uint32_t known) const;
  void read_vector(uint32_t id, bool optimistic, HnswSearchState& st, float* out) const;
  float distance_to(const float* q, uint32_t id, bool optimistic, HnswSearchState& st) const;
  static float ordered(float d);
  void prefetch_lines(const std::byte* at) const;
  void prefetch_row(const std::byte* frame, uint32_t id) const;
  float distance_in(const float* q, uint32_t id, const OptimisticRead& r, HnswSearchState& st) const;
  void greedy_step(const float* q, uint32_t level, bool optimistic, bool prefetch, HnswSearchState& st,
                   uint32_t* cur, float* cur_d) const;
  template <class Fn>
  void score_in_place(const float* q, const uint32_t* ids, uint32_t n, HnswSearchState& st, Fn&& fn) const;
  void read_ahead(uint32_t count, bool optimistic, HnswSearchState& st) const;
  void search_prepare(const float* q, const HnswSearchOptions& opt, HnswSearchState& st) const;
  // Result admission on level 0 (see "Removal and filters"): AdmitAll admits every node
  // (no tombstone, no filter: the plain path); AdmitLive live nodes its filter allows.
  struct AdmitAll {
    static constexpr bool kAll = true;
  };
  struct AdmitLive {
    static constexpr bool kAll = false;
    const HnswFilter* filter;  // nullptr: every live node
    bool optimistic;
  };
  bool admissible(uint32_t id, const OptimisticRead* r, const AdmitLive& a, const float* q, float* d,
                  HnswSearchState& st) const;
  template <class Admit>
  void search_admitted(const HnswSearchOptions& opt, const HnswMetaState& ms, const Admit& admit, uint64_t most,
                       HnswSearchState& st, std::vector<vector::Neighbor>* out) const;
  void exact_scan(const HnswSearchOptions& opt, const AdmitLive& admit, HnswSearchState& st,
                  std::vector<vector::Neighbor>* out) const;
  void recheck_results(const HnswSearchOptions& opt, HnswSearchState& st, std::vector<vector::Neighbor>* out) const;
  template <class Admit>
  bool search_start(const HnswSearchOptions& opt, const HnswMetaState& ms, const Admit& admit,
                    HnswSearchState& st) const;
  static void search_end(uint32_t k, HnswSearchState& st, std::vector<vector::Neighbor>* out);
  void search_layer(const float* q, uint32_t level, uint32_t ef, bool optimistic, bool prefetch,
                    uint32_t lookahead, HnswSearchState& st) const;
  void layer_begin(uint32_t ef, HnswSearchState& st) const;
  bool layer_expand(uint32_t level, uint32_t ef, bool optimistic, bool prefetch, uint32_t lookahead,
                    HnswSearchState& st) const;
  template <class Admit = AdmitAll>
  [[gnu::flatten]] void layer_score(const float* q, uint32_t level, uint32_t ef, bool optimistic, bool prefetch,
                                    HnswSearchState& st, const Admit& admit = Admit{}) const;
  void select_heuristic(const std::vector<vector::Neighbor>& sorted, uint32_t m, HnswSearchState& st,
                        std::vector<uint32_t>* out, size_t kept = 0) const;
  void insert(uint32_t id, uint32_t level, const float* q, HnswSearchState& st);
  uint32_t allocate_upper(uint32_t level);
  void claim(uint32_t id, uint32_t level, uint32_t upper, const float* v);
  void link(uint32_t node, const uint32_t* ids, uint32_t n, uint32_t level, HnswSearchState& st);
  static void write_list(ExclusiveGuard& g, const ListLocation& loc, const std::vector<uint32_t>& ids);
  void shrink(uint32_t node, uint32_t max, HnswSearchState& st, size_t kept = 0) const;
  template <class Removed>
  void relink(uint32_t p, uint32_t l, const Removed& is_removed, HnswSearchState& st) const;

  Pool* pool_;
  SpaceId space_;
  HnswParams params_;
  HnswLayout layout_;
  uint32_t format_;  // HnswMeta::format_version as opened (a remove may upgrade 1 to 2 on disk)
  vector::DistanceFn dist_;
  vector::DistanceGatherFn gather_;  // dist_ four vectors at a time, bit for bit
  std::unique_ptr<Shared> shared_;
};

}  // namespace calico::index

// The member definitions (src/index/hnsw/hnsw_impl.h) are compiled into the library once per translation
// (cmake/variants.cmake) and are not included here: a user links them rather than
// compiling them again (src/index/README.md, "Compiled once"). The fuzz build, which
// compiles no variant, instantiates them where they are used.
#ifdef CALICO_IMPLICIT_INSTANTIATION
#include "calico/detail/hnsw_impl.h"
#endif
