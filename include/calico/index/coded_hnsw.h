// BasicCodedHnsw<Pool>: a graph index for vectors larger than memory that navigates on
// compressed codes kept resident and ranks the nodes it expands by their full vectors, which
// lie beside their links in pool pages (DiskANN's layout). The declaration and its contract; the page format is in
// src/index/coded_hnsw/coded_hnsw_layout.h, the member definitions in
// src/index/coded_hnsw/coded_hnsw_impl.h.
//
// Why. Larger than memory, every node BasicHnsw visits is a page read (its level-0 pages hold
// vector and links together), and it visits every neighbour of every node it expands.
// DiskANN (Subramanya et al., NeurIPS 2019) keeps a compressed code of every vector in
// memory and scores the neighbours on codes: only the nodes it expands are read, and each
// read gives that node's exact distance. This index does the same on the pool.
//
// Principal entry points:
//   BasicCodedHnsw::create(pool, name, params, sample, n, capacity, budget_bytes)
//                                   a new, empty index; the code model is trained on the sample
//   BasicCodedHnsw::open(pool, name, budget_bytes)   an index written earlier (any process)
//   add(id, v)                      inserts vector v as slot id (growing the capacity); thread-safe
//   remove(id)                      a tombstone: never returned again; thread-safe
//   consolidate()                   relinks around the tombstones and frees their slots
//   search(q, options, state, &out[, filter])  the k approximate nearest neighbours (among
//                                   the ids filter allows); thread-safe
//   pin_rows(bytes)                 keeps copies of the rows searches expand most (no page read)
//   memory()                        resident bytes: codes, model, pool frames, translation, pinned rows
//   size(), capacity(), dim(), code_bytes(), check_structure()
//
// Design.
//   - Codes: RaBitQ (vector/rabitq.h), 2 bits per dimension by default. Why RaBitQ and not PQ,
//     from docs/results/vector_codes.md: the same recall per code bit as PQ at every re-rank
//     depth on both measured sets, no training (a code depends on the sample's mean and a
//     seed only, so vectors added later are coded as well as the sample, where PQ's codebooks
//     go stale), 4-27x faster encoding, and an error bound per code. Why 2 bits
//     (docs/results/vector_coded.md): the beam steers by the estimates, and at 128-d 2-bit
//     codes (44 bytes a row with their factors, against 29 for 1 bit) reached recall 0.95-0.99
//     expanding 35-45% fewer nodes than 1-bit codes needed. 1 bit remains
//     for budgets the 2-bit codes would leave without a pool. PQ codes
//     (CodedHnswParams::pq_bytes) steer as well as RaBitQ codes of as many code bits (the
//     recall at each ef, 100K x 128 in memory: 16 bytes as 1 bit, 32 as 2 bits), so in
//     1.3-1.6x fewer resident bytes, as RaBitQ keeps three float factors and a cluster beside
//     each code; at 5% of the full HNSW's bytes (1M x 128) PQ codes of 29 bytes answered
//     1.37-2.49x DiskANN's queries where 1-bit RaBitQ codes answered 0.64-0.91x. RaBitQ stays
//     the default because its codes follow data added after training, where PQ's codebooks
//     do not.
//   - Two spaces (coded_hnsw_layout.h): <name>.codes holds the metadata, the model blob and
//     every code; <name>.graph one row per node, its level-0 list and its full vector (652 B
//     at M = 16 and 128 dimensions, 6 per 4 KB page). Every page carries the index's uuid and
//     its block; a code page a CRC32C of its codes; a node row the CRC32C of its code.
//     Format 2 kept links and vectors in separate spaces (links compact, so the hot graph
//     stayed resident): larger than memory it read a link page per expanded node and then
//     the re-rank's vector pages, 4-5x DiskANN's reads (docs/results/vector_coded.md).
//   - Codes stay resident: open() reads every code page (checking header and CRC) into one
//     array in memory, add() writes a code to the array and through to its page. The budget
//     (budget_bytes) must hold the codes of the whole capacity plus the model plus the pool's
//     frames and its translation (as it stands, plus 8 bytes for each page a growth adds);
//     growth past it is refused.
//   - The graph is HNSW's level 0 only (2M links per node, the paper's heuristic
//     Algorithm 4 choosing M of them): flat graphs search as well as the hierarchy on
//     high-dimensional data (Munyampirwa, Lakshman and Coleman, "Down with the Hierarchy: The
//     'H' in HNSW Stands for 'Hubs'", 2024). A search starts from a sample of nodes (slots
//     whose hash of (seed, id) falls in 1/entry_rate, and the first node), scored on codes
//     (copies kept side by side: one sequential pass, not a cache miss per entry): a start
//     near the query saves hops, and with well-separated clusters a search that starts in
//     none near the query does not find it (recall 0.38 at 1M rows from 64 evenly spread
//     entries, 0.90 from all 15,600: docs/results/vector_coded.md). A sample of 4,096 or
//     more is partitioned into cells around leaders (coded_detail::EntryCells, about sqrt of
//     the sample's size, the sample kept in cell order): a search ranks the leaders by
//     exact distance and scores the entries of the nearest cells, a quarter of the sample,
//     in place, instead of all of it.
//   - Search: a beam of width ef on level 0, navigated by code estimates. Each step takes the
//     prefetch_width best candidates, requests their pages as one batch (pool.prefetch_group)
//     and expands them all (DiskANN's beam width W), until 8 batches in a row found every
//     page resident (then 256 expansions take one candidate each and request nothing: in
//     memory the prefetch only costs). Format 2 prefetched every candidate that entered the
//     beam; most are never expanded. Expanding a node reads its row: its links, and its vector, scored
//     exactly. The k nearest of the expanded nodes by exact distance are returned (every
//     node left in the beam was expanded); candidates a scan of codes found (filters, below)
//     are not expanded, so the best `rerank` of them have their node pages requested as one
//     group (pool.read_group: one batch of asynchronous reads for the evicted ones) and are
//     scored exactly.
//   - Pinned rows (pin_rows, coded_detail::PinnedRows): copies of the node rows that sample
//     searches expanded most, kept in memory beside the codes, so that the nodes nearly
//     every search passes through cost no page read. A pool holds whole pages (6 rows), few
//     of whose rows are hot; the copies give the same memory to hot rows only. DiskANN keeps
//     the same kind of cache.
//   - Deletes and filters, as BasicHnsw does them (calico/index/hnsw.h, "Removal and
//     filters"): remove() marks the slot removed (in memory and in its code page's removed
//     bitmap); the node keeps code, vector and links, so searches still pass through it, but
//     only admissible nodes (not removed, allowed by the filter) enter the beam's results and
//     the ranking. A filter that allows few ids is answered by scanning their resident codes
//     (no graph page read) and re-ranking the best; a graph search that found fewer than k
//     admissible nodes is completed the same way. consolidate() is FreshDiskANN's
//     (Algorithm 4, as BasicHnsw's): each list naming a removed node keeps its live members
//     and fills the removed ones' places from their lists by the heuristic (exact distances,
//     one group read); then the removed slots are cleared and may be added again.
//   - add: code and vector written first; then a search on codes with ef_construction, the
//     heuristic picks M among the nearest ef_construction nodes it expanded (exact
//     distances, from the rows it read), the node's own list is written, then back links; a
//     list that overflows 2M is cut back by the heuristic around its owner from exact
//     distances (its members' rows read as one group).
//
// Concurrency and latching. A thread holds at most one page latch at a time:
//   - add() claims its slot (an in-memory state word per slot, CAS absent -> claimed), writes
//     its row's vector and the code (memory, then its page under the page's exclusive latch),
//     marks the slot coded (release), and only then writes any list that names it; so a
//     search that reads a link (a validated optimistic read or a pin: acquire) finds the code;
//   - each list update latches the list's page exclusive, merges, releases; an overflow is
//     shrunk from a snapshot without a latch and written only if the list is unchanged, else
//     redone (at most kMaxLinkAttempts);
//   - searches read node rows optimistically (racy_copy, validate; pinned after
//     Pool::kOptimisticAttempts failures);
//   - Shared::codes_mutex (shared_mutex): a search or an add holds it shared from start to
//     end (the code array and slot states do not move under it); a growth holds it exclusive
//     to reallocate them, and raises Shared::growing meanwhile so that new readers wait
//     instead of starving it. Lock order: writers, then codes_mutex, then any page latch; a
//     growth takes codes_mutex holding no latch. The entry sample has its own mutex
//     (innermost). One BasicCodedHnsw object per index per pool (the in-process state above).
//   - Shared::pinned (pin_rows' copies) is replaced only under codes_mutex exclusive (with
//     grow_mutex, as a growth); a search uses it, holding codes_mutex shared, only if
//     Shared::pinned_valid was set when it began. add() and consolidate() clear pinned_valid
//     before they change a list, so a search that began earlier may expand a copy whose list
//     is stale: it misses the new node, or names a slot consolidate() then freed, which the
//     frees count below covers. pin_rows() holds writers exclusive while it counts and copies.
//   - Shared::writers (shared_mutex): add() and remove() hold it shared, consolidate()
//     exclusive, so lists change under consolidate() only by its own hand. Searches do not
//     take it: one that read a list before consolidate() rewrote it may reach a slot
//     consolidate() then freed. Shared::frees counts the frees; a search that meets an
//     absent slot (or a node row that is not its code's) after the count moved skips it
//     instead of reporting corruption. A freed slot should be added again only once the
//     searches that began before consolidate() returned have ended (BasicMapped waits for
//     them: calico/index/mapped_index.h); a search that meets it re-added scores it like any
//     node.
//
// Errors (calico::Error; kInvalidArgument naming the parameter unless noted):
//   create: dim 0, bits not 1/2/4, M < 2 or > 256, alpha outside [1, 2], metric out of
//     range, an empty or non-finite sample, capacity 0, a name too long, rows that do not
//     fit a page, budget_bytes below the codes of the capacity plus the model plus the
//     pool's frames and translation;
//     kSpaceExists;
//   open: kUnknownSpace; kCorruptPage naming the page when a header (magic, kind, format,
//     uuid, block) or a code page's CRC disagrees, or the metadata is malformed (an index of
//     formats 1 or 2 is refused with a message to build it again);
//     budget_bytes as create;
//   add: an id past kMaxCapacity, an id added before (or removed and not yet freed), a
//     non-finite vector, a zero cosine vector, a growth past budget_bytes; pool errors;
//   remove: an id not in the index (never added, removed before, its add running or failed);
//   search: k 0, rerank 0, a state of another index, a non-finite query; kCorruptPage when a
//     validated node row breaks the format or its code CRC disagrees with the resident code
//     (the code or the vector is wrong: neither is used).
// A failed add leaves the index searchable: a node whose code was written is reachable by
// whatever links were written, is not counted in size(), and its id cannot be added again.
//
// Updates (a row replaced under the same id) and ids other than slots come from BasicMapped
// (calico/index/mapped_index.h). Missing: search_batch, the upper levels of HNSW.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/detail/coded_hnsw.h"
#include "calico/page_id.h"

namespace calico::index {

struct CodedHnswParams {
  uint32_t dim = 0;
  vector::Metric metric = vector::Metric::kL2;
  // RaBitQ bits per dimension: 1, 2 or 4. 2 reached recall 0.95-0.99 in 35-45% fewer reads
  // than 1 bit larger than memory, at 1.5x the resident bytes (docs/results/vector_coded.md); 1 fits
  // budgets the 2-bit codes leave too little pool.
  uint32_t bits = 2;
  // 0: RaBitQ codes of `bits` per dimension. Otherwise product-quantization codes of this many
  // bytes a vector (vector/pq.h: pq_bytes subspaces of dim / pq_bytes dimensions, the first
  // dim % pq_bytes one wider; 256 centroids each, k-means of the sample; at most dim; the
  // sample needs 256 rows or more), and `bits` is not used. A RaBitQ row spends 13-14 bytes on three float factors and
  // a cluster; PQ spends every byte on the vector, and steered as well as RaBitQ with as many
  // code bits (docs/results/vector_coded.md). PQ's codebooks do not follow data added after
  // the sample; RaBitQ's codes do.
  uint32_t pq_bytes = 0;
  // RaBitQ centroids (k-means of the sample; 1: its mean). Codes are residuals to the
  // nearest, so data of well-separated clusters estimates better with K ~ the clusters.
  uint32_t clusters = 1;
  uint32_t M = 16;                 // links chosen per node; lists hold up to 2M
  uint32_t ef_construction = 100;  // beam width of insertion (raised to M)
  uint64_t seed = 42;              // the rotation, the entry sample
  // About 1 node in entry_rate (by a hash of seed and id) is a search start, all of them
  // scored on codes first: the flat graph's substitute for HNSW's upper levels.
  uint32_t entry_rate = 64;
  // The links heuristic keeps a candidate unless a kept neighbour is nearer to it than the
  // node, by this factor (1: HNSW's heuristic; DiskANN's Vamana uses 1.2). In [1, 2]; L2 and
  // cosine only (inner products keep 1). 1.2 gave about 0.01 more recall at the same reads
  // larger than memory (docs/results/vector_coded.md).
  float alpha = 1.2f;
};

struct CodedHnswSearchOptions {
  uint32_t k = 10;
  // Beam width on codes (raised to k). Every node the beam expands is scored exactly, from
  // its row. coded_hnsw_test.cc measures recall@10 >= 0.95 with these defaults; with 2-bit
  // codes 16 reached 0.95 and 28 0.99 on 100K x 128 (docs/results/vector_coded.md).
  uint32_t ef = 64;
  // Candidates found by a scan of codes (a filter that allows few ids, or a beam that found
  // fewer than k) scored exactly, the best by estimate, as one group read: 50 with 1-bit
  // codes and 20 with 2 bits gave recall 0.99 over exact code ranking
  // (docs/results/vector_codes.md).
  uint32_t rerank = 50;
  bool prefetch = true;   // prefetch node pages (below)
  // Node pages requested as one batch before each expansion: the node's and the next
  // prefetch_width - 1 candidates' (DiskANN's beam width; 0 counts as 1).
  uint32_t prefetch_width = 4;
  // DiskANN's step: each step takes the prefetch_width best candidates and expands them all
  // (their pages requested as one group), while pages are being read (in memory, once the
  // prefetch goes idle, steps take one). false: each step expands the best candidate, the
  // next ones' pages prefetched, some of which the beam then never expands. Batched read
  // 8-9% fewer pages at the same recall and answered 9-12% more queries at 10% of the full
  // HNSW's memory; best-first was 3-7% faster in memory (docs/results/vector_coded.md).
  bool batched = true;
  // Entry points scored per search, of the entry sample (about 1 node in
  // CodedHnswParams::entry_rate). A partitioned sample (4,096 entries or more) scores the
  // cells nearest the query until they hold at least this many entries; a smaller one at
  // most this many, spread evenly over it. 0: automatic, a quarter of a partitioned sample
  // and all of a smaller one. At least the sample's size: all of it, in one pass. (Fewer
  // starts lose recall on clustered data, evenly spread ones most: docs/results/vector_coded.md.)
  uint32_t entries = 0;
  // A filtered search whose filter allows at most this many ids scans their codes instead of
  // searching the graph. 0: automatic, a scan when m * m <= kScanC * ef * live for m allowed
  // ids (a graph search scores about 2M codes for each of ef / selectivity nodes it expands,
  // and reads their link rows; a scan scores m codes and reads nothing).
  static constexpr uint64_t kScanC = 64;
  uint32_t exact_scan_below = 0;
};

// Counters of one CodedHnswSearchState. Cumulative until reset.
struct CodedHnswSearchStats {
  uint64_t searches = 0;
  uint64_t estimates = 0;     // codes scored
  uint64_t expanded = 0;      // node rows the beam expanded (each an exact distance)
  uint64_t pinned = 0;        // of those, rows taken from pin_rows()'s copies (no page read)
  uint64_t reranked = 0;      // node rows read by re-rank groups (a scan's candidates)
  uint64_t group_reads = 0;   // page reads the re-rank groups submitted
  uint64_t retries = 0;       // optimistic reads that failed validation
  uint64_t scans = 0;         // searches answered (or completed) by a scan of codes
};

// Resident memory of the index (bytes).
struct CodedHnswMemory {
  uint64_t codes = 0;        // the code array (capacity x code_bytes), slot states, the entry sample
  uint64_t model = 0;        // the quantiser's model
  uint64_t pool_frames = 0;  // the pool's frames (every space's: the pool is shared)
  uint64_t translation = 0;  // the pool's translation memory (private bytes)
  uint64_t pinned_rows = 0;  // pin_rows()'s copies of node rows and their index
  uint64_t total() const { return codes + model + pool_frames + translation + pinned_rows; }
};

template <class Pool>
class BasicCodedHnsw;

// A search's scratch space; one per thread, reused. Made for one index.
class CodedHnswSearchState {
 public:
  template <class Pool>
  explicit CodedHnswSearchState(const BasicCodedHnsw<Pool>& index);
  const CodedHnswSearchStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  template <class>
  friend class BasicCodedHnsw;
  const void* owner_ = nullptr;
  std::unique_ptr<vector::QueryState> query_state_;
  std::vector<uint16_t> visited_;   // visited_[s] == epoch_: seen in this search
  std::vector<uint16_t> expanded_;  // expanded_[s] == epoch_: its row read (exact distance known)
  uint16_t epoch_ = 0;
  std::vector<float> query_;       // the (normalised) query
  std::vector<vector::Neighbor> candidates_, results_;  // min-heap, max-heap (ef)
  std::vector<vector::Neighbor> batch_;                 // the candidates one beam step expands
  std::vector<uint32_t> links_, fresh_;
  std::vector<uint32_t> block_ids_;                     // the entries of a scored block
  std::vector<vector::Neighbor> cell_order_;            // the leaders ranked (EntryCells::probe)
  std::vector<uint8_t> probe_;                          // the cells a search scores
  std::vector<uint8_t> codes_;     // gathered codes of fresh_
  std::vector<float> est_;
  std::vector<PageId> group_;
  std::vector<uint32_t> offsets_;
  std::vector<OptimisticRead> reads_;
  std::vector<float> rows_;        // re-ranked vectors, rerank x dim (add: the heuristic's rows)
  std::vector<float> vec_;         // the vector of the row being expanded
  std::vector<vector::Neighbor> scored_;  // expanded admissible nodes: {exact distance, slot}
  std::vector<vector::Neighbor> exact_;  // re-rank: {exact distance, index of the input id}
  std::vector<uint32_t> row_of_;         // exact_[j]'s row in rows_
  uint64_t frees_ = 0;                   // Shared::frees when the search began
  const coded_detail::PinnedRows* pinned_ = nullptr;  // this search's pinned rows (none: nullptr)
  std::vector<uint32_t>* trace_ = nullptr;            // if set, the beam appends each slot it expands
  // Adaptive prefetch: group prefetches that found every page resident, in a row; past
  // kIdlePrefetches the beam skips kSkippedOffers expansions before it tries again (in memory
  // the prefetch only costs).
  uint32_t idle_prefetches_ = 0, skip_prefetch_ = 0;
  CodedHnswSearchStats stats_;
};

// Thread safety: add and search may run from any number of threads at once (each search
// with its own state); check_structure only at quiescence.
template <class Pool>
class BasicCodedHnsw {
 public:
  static constexpr uint32_t kMaxLinkAttempts = 10000;
  static constexpr uint32_t kIdlePrefetches = 8, kSkippedOffers = 256;  // CodedHnswSearchState
  static constexpr uint64_t kMaxCapacity = UINT32_MAX - 1;
  static constexpr size_t kMaxNameBytes = 56;  // + ".codes" fits a space name (64), with room

  // Creates the two spaces; trains RaBitQ on sample[0 .. n * dim) (the sample's mean and
  // a rotation: vector/rabitq.h); allocates pages for `capacity` slots. Errors: see the file
  // comment.
  static BasicCodedHnsw create(Pool& pool, std::string_view name, const CodedHnswParams& params, const float* sample,
                               uint64_t n, uint32_t capacity, uint64_t budget_bytes);
  // Opens an index written earlier and loads its codes. Errors: see the file comment.
  static BasicCodedHnsw open(Pool& pool, std::string_view name, uint64_t budget_bytes);

  BasicCodedHnsw(BasicCodedHnsw&&) noexcept = default;
  BasicCodedHnsw& operator=(BasicCodedHnsw&&) noexcept = default;

  uint32_t dim() const { return params_.dim; }
  const CodedHnswParams& params() const { return params_; }
  const CodedLayout& layout() const { return layout_; }
  size_t code_bytes() const { return layout_.code_bytes; }
  const vector::Quantizer& quantizer() const { return *model_; }
  // Slots with pages (ids below it may be added without growth). Only grows.
  uint32_t capacity() const { return shared_->capacity.load(std::memory_order_acquire); }
  // Live nodes: completed adds, not removed. Racy while adds and removes run.
  uint32_t size() const {
    return shared_->size.load(std::memory_order_relaxed) - shared_->removed.load(std::memory_order_relaxed);
  }
  // Removed nodes not yet freed by consolidate().
  uint32_t tombstones() const { return shared_->removed.load(std::memory_order_relaxed); }
  // The bytes codes, model, slot states and the entry sample of `capacity` slots take in memory.
  uint64_t codes_bytes(uint64_t capacity) const;
  CodedHnswMemory memory() const;

  // Grows the capacity to at least n slots (doubling): pages in both spaces, the code
  // array. Errors: n past kMaxCapacity, a growth past budget_bytes (kInvalidArgument
  // "budget_bytes"); pool errors.
  void reserve(uint64_t n);
  // Inserts v[0 .. dim) as slot id (reserve(id + 1) first when needed). Thread-safe.
  void add(uint32_t id, const float* v);
  // Removes slot id: no search returns it again (a search running meanwhile may). Its node
  // stays as a tombstone that searches pass through until consolidate(). Thread-safe with
  // add, remove and search. Errors: see the file comment (the index is unchanged).
  void remove(uint32_t id);
  // Relinks every list that names a removed node and frees the removed slots (see "Deletes
  // and filters"); returns how many. Blocks add() and remove(); searches go on. Errors:
  // pool errors, kCorruptPage; lists are rewritten before any slot is freed, so a failure
  // part-way leaves a searchable index whose tombstones the next call frees.
  uint32_t consolidate();
  // Keeps in memory copies of the node rows searches expand most, up to `bytes` (the rows
  // and their index: about 4 * (1 + 2M + dim) + 18 bytes each), so that expanding one reads
  // no page: the rows `sample` searches expanded most often, for the vectors of `sample` live
  // nodes spread over the slots, with the default search options (pinned_rows.h). Returns
  // the rows pinned. Blocks add(), remove() and consolidate() while it runs; searches go on.
  // An add() or consolidate() drops the copies (searches read pages again) until pin_rows()
  // is called again; bytes 0 drops them. Errors: bytes past budget_bytes less the rest of
  // memory() (kInvalidArgument naming "bytes"), sample 0; pool errors, kCorruptPage.
  uint32_t pin_rows(uint64_t bytes, uint32_t sample = 1000);
  // Rows pin_rows() pinned that searches use now (0 once a write dropped them).
  uint32_t pinned_rows() const;
  // Whether slot id holds a node that is not removed (its code is written: an add running
  // or failed counts). Errors: id >= capacity.
  bool contains(uint32_t id) const;
  // Whether slot id is removed (a tombstone). Errors: id >= capacity.
  bool removed(uint32_t id) const;
  // Slots whose add() failed after the code was written, ascending (their nodes are in the
  // graph, not counted in size(), never added again). Racy while adds run.
  std::vector<uint32_t> failed_adds() const;
  // The k (or fewer) approximate nearest neighbours of q with exact distances, ascending
  // by (distance, id), into *out (replaced).
  void search(const float* q, const CodedHnswSearchOptions& opt, CodedHnswSearchState& st,
              std::vector<vector::Neighbor>* out) const;
  // search() among the ids filter allows: the k (or fewer, when fewer live nodes are
  // allowed) approximate nearest of them.
  void search(const float* q, const CodedHnswSearchOptions& opt, CodedHnswSearchState& st,
              std::vector<vector::Neighbor>* out, const vector::IdFilter& filter) const;

  // Whole-structure check for tests, at quiescence: the invariants of coded_hnsw_layout.h,
  // reading every page pinned. Throws std::logic_error naming the first violation.
  void check_structure() const;

 private:
  friend class CodedHnswSearchState;
  // Slot states (in memory): absent -> claimed (add running) -> coded (code and vector
  // written: links may name it) -> complete (linked and counted) -> removed (a tombstone)
  // -> absent (consolidate()). States >= kCoded have a code and may be traversed.
  enum SlotState : uint8_t { kAbsent = 0, kClaimed = 1, kCoded = 2, kComplete = 3, kRemoved = 4 };

  struct Shared {
    std::atomic<uint32_t> capacity{0};
    std::atomic<uint32_t> size{0};     // completed adds not yet freed (live + removed)
    std::atomic<uint32_t> removed{0};  // tombstones
    std::atomic<uint64_t> frees{0};    // consolidations that freed slots (see "Concurrency")
    std::shared_mutex writers;         // add / remove shared, consolidate exclusive
    // codes_mutex: shared to read or write codes / slot states, exclusive to reallocate them.
    mutable std::shared_mutex codes_mutex;
    // Set while a growth waits for codes_mutex exclusive: new readers wait for it to clear
    // (shared_mutex may prefer readers, and searches back to back would starve a growth).
    std::atomic<bool> growing{false};
    std::vector<uint8_t> codes;                         // capacity x code_bytes
    std::unique_ptr<std::atomic<uint8_t>[]> states;     // capacity SlotStates
    std::mutex grow_mutex;                              // one growth at a time
    // entries_mutex: exclusive to change entries and entry_codes, shared to read them
    // (lock_entries*: a writer counted in entry_writers holds new readers back).
    mutable std::shared_mutex entries_mutex;
    std::atomic<uint32_t> entry_writers{0};
    std::vector<uint32_t> entries;                      // search starts (complete nodes)
    // entries[i]'s code at entry_codes[i * code_bytes]: a copy, so that a search scores the
    // sample in one sequential pass and not by a cache miss per entry (15,600 at 1M rows).
    // A sampled slot's code does not change while it is an entry (add writes it before the
    // slot joins, consolidate() drops the slot before it frees it).
    std::vector<uint8_t> entry_codes;
    // The sample's partition (entry_cells.h), replaced or changed under entries_mutex
    // exclusive like the sample; nullptr below EntryCells::kMinEntries. cells_building: one
    // build_cells() at a time.
    std::unique_ptr<coded_detail::EntryCells> cells;
    std::atomic<bool> cells_building{false};
    std::atomic<uint32_t> entry{CodedMeta::kNone};      // the first node (coded before published)
    uint64_t budget_bytes = 0;
    std::mutex spare_mutex;                             // add()'s scratch states
    std::vector<std::unique_ptr<CodedHnswSearchState>> spare;
    // pin_rows()'s copies: replaced only under codes_mutex exclusive (searches use them
    // while they hold it shared); pinned_valid is cleared by every add() and consolidate()
    // before it changes a list, and searches that begin after it use no copy.
    std::unique_ptr<const coded_detail::PinnedRows> pinned;
    std::atomic<bool> pinned_valid{false};
  };

  // A scratch state borrowed from Shared::spare for one add() (so that an add allocates no
  // visited marks once the spares have grown).
  struct Lease {
    explicit Lease(const BasicCodedHnsw& index) : shared(index.shared_.get()) {
      {
        std::lock_guard lock(shared->spare_mutex);
        if (!shared->spare.empty()) {
          state = std::move(shared->spare.back());
          shared->spare.pop_back();
        }
      }
      if (!state) state = std::make_unique<CodedHnswSearchState>(index);
    }
    ~Lease() {
      std::lock_guard lock(shared->spare_mutex);
      shared->spare.push_back(std::move(state));
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Shared* shared;
    std::unique_ptr<CodedHnswSearchState> state;
  };

  BasicCodedHnsw(Pool& pool, std::string name, const CodedHnswParams& p, std::unique_ptr<vector::Quantizer> model,
                 uint64_t uuid, const CodedLayout& l, uint64_t model_bytes);

  // Throws kInvalidArgument naming budget_bytes (and `hint`, a way out) unless the budget
  // holds codes_bytes plus the pool's frames and translation.
  static void check_budget(Pool& pool, uint64_t budget, uint64_t codes_bytes, const char* what,
                           std::string_view hint = {});
  static CodedPageHeader header_of(const std::byte* page);
  static void write_header(std::byte* page, CodedPageHeader::Kind kind, uint64_t uuid, uint32_t block);
  void check_header(const std::byte* page, PageId pid, CodedPageHeader::Kind kind) const;
  void load_codes(uint32_t capacity);
  // Partitions the entry sample (entry_cells.h) when EntryCells::wanted(): leaders read from
  // their rows, every entry assigned by estimate. A failed read leaves the sample as it was
  // (searches score it whole or by the previous cells). Pre: codes_mutex held shared.
  void build_cells(CodedHnswSearchState& st);
  // codes_mutex shared, after any pending growth (see Shared::growing).
  std::shared_lock<std::shared_mutex> lock_codes() const;
  std::shared_lock<std::shared_mutex> lock_entries() const;
  std::unique_lock<std::shared_mutex> lock_entries_exclusive() const;
  // codes_mutex exclusive, raising Shared::growing while it waits. Pre: grow_mutex held.
  std::unique_lock<std::shared_mutex> lock_codes_exclusive();
  // The pinned rows a search begun now may use, or nullptr. Pre: codes_mutex held shared.
  const coded_detail::PinnedRows* pinned_for_search() const;
  void grow_pages(uint32_t new_capacity);
  bool sampled(uint32_t id) const;
  void prepare_vector(const float* v, float* out, const char* what) const;
  uint8_t state_of(uint32_t id) const;
  static bool live_state(uint8_t state) { return state == kCoded || state == kComplete; }
  const uint8_t* code_of(uint32_t id) const { return shared_->codes.data() + size_t{id} * layout_.code_bytes; }
  template <class Copy>
  void read_row(PageId pid, uint32_t off, const OptimisticRead* started, CodedHnswSearchState& st, Copy&& copy) const;
  uint32_t read_links(uint32_t id, CodedHnswSearchState& st, uint32_t* out) const;
  void read_vector(uint32_t id, const OptimisticRead* started, CodedHnswSearchState& st, float* out) const;
  static constexpr uint32_t kStale = UINT32_MAX;  // read_node: freed meanwhile
  uint32_t read_node(uint32_t id, CodedHnswSearchState& st, uint32_t* links, float* vec) const;
  bool vector_row_ok(uint32_t id, const uint32_t row_head[2]) const;
  [[noreturn]] void bad_vector_row(uint32_t id, const uint32_t row_head[2], PageId pid) const;
  // Beam search on codes; leaves st.results_ sorted ascending by estimate, holding only
  // nodes admit(slot, its state) accepts (every node is traversed), and the expanded ones' exact
  // distances to q in st.scored_.
  template <class Admit>
  void beam(const float* q, uint32_t ef, uint32_t width, bool batched, const Admit& admit, CodedHnswSearchState& st,
            uint32_t entries, bool keep_rows) const;
  template <class Admit>
  void search_admitted(const float* q, const CodedHnswSearchOptions& opt, CodedHnswSearchState& st,
                       std::vector<vector::Neighbor>* out, const Admit& admit, const vector::IdFilter* filter) const;
  // The best `keep` by estimate among admissible slots (filter's allowed ids, or all) not
  // in st.results_, merged into st.results_ (ascending).
  template <class Admit>
  void scan_codes(uint32_t keep, const Admit& admit, const vector::IdFilter* filter, CodedHnswSearchState& st) const;
  // A stale read during consolidate(): true when the search may skip what it read.
  bool freed_since(const CodedHnswSearchState& st) const {
    return shared_->frees.load(std::memory_order_acquire) != st.frees_;
  }
  void write_code_bits(uint32_t id, bool present, bool removed, const uint8_t* code);
  // Exact distances from q to ids (one group read) into st.exact_ (ascending), vectors in st.rows_.
  // skip_stale: a search's re-rank drops rows freed meanwhile (freed_since) instead of
  // reporting them.
  void rerank(const float* q, const uint32_t* ids, uint32_t n, CodedHnswSearchState& st, bool skip_stale = false) const;
  bool pruned_by(float to_kept, float to_base) const;
  void select_heuristic(uint32_t m, CodedHnswSearchState& st, std::vector<uint32_t>* out) const;
  template <class Admit>
  void choose_links(const float* base, uint32_t node, const Admit& admit, CodedHnswSearchState& st,
                    std::vector<uint32_t>* chosen) const;
  void write_list(uint32_t node, const std::vector<uint32_t>& ids);
  void link_back(uint32_t node, uint32_t id, CodedHnswSearchState& st);
  uint32_t first_complete() const;

  Pool* pool_;
  std::string name_;
  SpaceId codes_space_, graph_space_;
  CodedHnswParams params_;
  std::unique_ptr<vector::Quantizer> model_;
  uint64_t uuid_;
  CodedLayout layout_;
  uint64_t model_bytes_;
  vector::DistanceFn dist_;
  std::unique_ptr<Shared> shared_;
};

}  // namespace calico::index

// The member definitions (src/index/coded_hnsw/coded_hnsw_impl.h) are compiled into the
// library once per translation (cmake/variants.cmake; src/index/README.md, "Compiled once").
#ifdef CALICO_IMPLICIT_INSTANTIATION
#include "calico/detail/coded_hnsw_impl.h"
#endif
