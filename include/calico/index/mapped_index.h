// BasicMapped<Index>: a vector index (BasicHnsw or BasicIvf) composed with an id map
// (calico/index/id_map.h), so that rows carry any unsigned 64-bit id (but kNoId = 2^64 - 1)
// and add() of an id that is present replaces its vector (upsert). One piece of code serves
// both indexes; what differs is in MappedCore<Index> (src/index/id_map/mapped_cores.h). The
// index and its page format are unchanged: the index numbers rows by slot, as before, and
// the map translates. The declaration and its contract; the member definitions are in
// src/index/id_map/mapped_index_impl.h.
//
// Principal entry points:
//   BasicMapped::attach(pool, name, index)  the index with its map: opens `<name>.ids` and
//                                 `<name>.slots`, or creates them (a new index: empty; an
//                                 index written before maps existed: migrated, below)
//   add(ids, rows, threads, mode[, labels])  upserts rows (or inserts only: AddMode::kInsert),
//                                 each with its label when labels are given
//   add(id, v)                    upserts one row
//   add_numbered(rows, n, threads[, labels])  rows with the first free ids from size() up
//   remove(ids)                   removes ids; all checked first
//   label(id)                     the id's label, if it has one
//   filter(ids)                   an allow-list of ids as a slot bitmap (SlotFilter)
//   filter_labels(labels)         the rows whose label is one of labels (== is a set of one)
//   filter(ids, labels)           both: the ids whose label is one of labels
//   search(q, options, state, &out[, filter])   k results as (distance, id), each id once
//   search_batch(queries, options, states, outs)  HNSW's interleaved searches, mapped
//   consolidate()                 HNSW: consolidate, then the freed slots are reused
//   set_auto_consolidate(f, min)  HNSW: consolidate when tombstones reach a fraction of size()
//   contains(id), size(), check_structure()
//
// Ids and slots. id -> slot is a B+tree lookup (add, remove, filter); slot -> id is one read
// of the slot array per result (search). Slots come from BasicIdMap::allocate_slot: the
// lowest freed slot (HNSW, after consolidate) or the next one; so HNSW's level-0 region
// grows with the rows ever added until consolidate() frees slots, whatever the ids are.
//
// Add (upsert) of id X with vector v and label L (or none), under X's lock (one of kIdLocks
//   mutexes by hash): (1) s0, L0 = X's binding, if any; (2) s = a free slot;
//   (3) index.add(s, v); (3L) with a label: the label entry (L, s); (4) slot s -> X;
//   (5) X -> (s, L) in the B+tree: the commit point; (6) after a grace period (the searches
//   that began before (5) have ended: ReadSections, src/index/id_map/read_sections.h),
//   slot s0 -> none, the label entry (L0, s0) removed (when L0), and index.remove(s0). A
//   batch does (1)-(5) row by row, then one grace period and one removal of all replaced
//   slots (IVF's remove reads the whole index once per call). An error in (3) leaves
//   nothing bound (the slot is reused unless the index kept a failed add there); in
//   (3L)-(5) the row is taken out again (entry cleared, label entry (L, s) removed, slot
//   removed, in that order); so a failed row changes no binding and no label entry, and
//   the rows of the batch before it stay committed. AddMode::kInsert fails a row whose id
//   is present at (1). An error in (6) (a pool error) comes after the commit: the old
//   slot's entry is cleared first, then its label entry removed, then the slot removed, so
//   a slot whose label entry or removal failed stays in the index unmapped, hidden from
//   every result (its entry is none), never handed out again, its space not reclaimed
//   (check_structure then reports it).
//
// Upserts and searches: a search sees, for each id, its old vector or its new one, never
// neither. Every search (and every SlotFilter) runs inside a read section. From before (5)
// to after (6), at least one of X's slots is live in the index and names X: s0 until (6),
// s from (3); (6) waits for the sections that began before (5), so a search that began
// while s0 was X's slot keeps s0 live until it ends, and one that began after (5) finds
// s, which was added before (5) (as the index finds any row added before a search began:
// exactly in an exact search, approximately in an approximate one). A filter maps ids to
// slots inside its section, so it names s0 or s by the same argument. A search may meet
// both s0 and s: results are deduplicated by id (the nearer kept), and a slot whose entry
// is none (an add between (3) and (4), or one being retired) is dropped; when that leaves
// fewer than k, the search asks the index for 2k, 4k ... (kMaxFetchRounds).
//
// Remove (delete) of ids: all ids' locks are taken (in lock order; a batch under more than
// half of them takes the writers mutex exclusively instead), every id is checked
// (present, not repeated) before anything is written; then per id: the binding is removed
// (the commit point), the slot's entry cleared, its label entry removed; and the slots
// removed from the index in one call. No grace period: a search that began before may
// still return the id. A pool error midway leaves the ids before it removed and the slots
// not yet removed from the index unmapped (hidden, as in (6)).
//
// Labels. A row may carry a label, a u32 (a tenant, a user, a category), stored in its
// binding, with an entry (label, slot) in the map's label tree (calico/index/id_map.h,
// "Labels"). add() writes the row whole: an upsert without a label leaves the id
// unlabeled. At quiescence (check_structure): (L1) every labeled binding has exactly one
// label entry (label, slot), and (L2) every label entry names a bound slot whose binding
// carries that label. Between, they are kept in step by the steps above under X's lock:
// X's current binding's entry exists from before its commit (3L) until its slot is
// retired after the next commit's grace period (6) or removed (remove).
// filter_labels(S) scans the entries of each label of S into a slot bitmap inside the
// filter's read section. What its searches guarantee:
//   - a result X came from a slot s whose entry (L, s), L in S, the scan saw, and whose
//     slot entry named X: so the vector measured is one that X had with a label in S (X
//     may have been relabeled since; a search sees each id's old row or its new one, as
//     for vectors). A slot keeps one owner while the filter lives: a retired slot is
//     handed out again only after consolidate(), which waits for the sections that began
//     before it, and the scan saw s's entry before s was retired;
//   - an id whose binding carried a label in S when the section began is allowed (unless
//     removed meanwhile): that binding's slot, entry and label entry stay until the filter
//     is destroyed, since the next commit of X comes after the section began and its (6)
//     waits for the section;
//   - a bit of a slot retired meanwhile (its replacement committed before the section
//     began) is dropped by the search (its entry is none).
// filter(ids, labels) reads each id's binding (slot and label) inside the section, as
// filter(ids) does, and keeps those with a label in the set. Cost: filter(ids) a B+tree
// lookup per id; filter_labels a descent per label plus one entry per matching
// slot; the search itself is the index's filtered search (k results when k rows match).
//
// Automatic consolidation (HNSW). Removed and replaced slots stay in the graph as tombstones
// until consolidate() relinks around them and frees them ([FreshDiskANN] Algorithm 4). The
// object counts them (tombstones()); an add() or remove() that leaves at least
// max(min, fraction x size()) of them consolidates before it returns (defaults
// kAutoFraction, kAutoMinTombstones; fraction 0 turns it off). Each consolidation is one
// pass over the index after fraction x size() removals, so its cost per removal is O(1 /
// fraction) node visits, and searches never traverse more than that fraction of dead
// nodes. It runs on the calling thread after the call's own writes committed: it takes the
// writers mutex exclusively once the call released its shared hold (so it waits for the
// other writers' calls), checks again that it is still due (another call may have run it),
// and consolidates. An error there is thrown as the call's error, marked as coming after
// the call's rows committed; the index stays searchable and the next due call retries.
// After attach(), tombstones() starts from the slots handed out and not bound, which also
// counts free slots not yet on the free list: the first due call's consolidate() makes it
// exact (and fills the free list).
//
// ids = None (add_numbered): ids from size() up that are not present, handed out under
// one mutex and added with AddMode::kInsert, so an id that another add takes meanwhile
// fails that row (kInvalidArgument naming it) instead of overwriting it.
//
// Indexes written before the map existed: attach() finds no `<name>.slots` and migrates:
// it creates the map in state kMigrating, binds every live slot s of the index to id s
// (identity: the ids the index had), and marks it kReady. A map found kMigrating (a crash
// during the migration) is dropped and built again. Cost: one pass over the index (HNSW:
// every slot's head below the capacity; IVF: every posting page). IVF ids that repeated
// (several rows of one id) share one slot and stay together: remove removes all of them.
//
// Durability: the map's pages are pool pages like the index's; a flush makes both durable.
// After a crash, the state is that of the last completed flush that ran with no add or
// remove in flight (the pool writes pages, not structures: docs/design/atomic_flush.md).
//
// Concurrency and locking rule: add, add_numbered, remove, search, filter, contains and
// size may run from any number of threads at once; consolidate (called, or automatic)
// excludes add and remove (a shared mutex: they hold it shared); check_structure only at quiescence. Lock order:
// numbering mutex -> writers (shared) -> id locks in ascending lock index -> the index's
// and the map's own latches. A thread never waits for a grace period while it is inside a
// read section: do not call add() or consolidate() while holding a SlotFilter of the same
// index. One
// BasicMapped object per index per pool (the index's and the map's in-process state).
//
// Errors (calico::Error; kInvalidArgument unless noted): id kNoId; an id twice in one add or
// remove batch; labels given but not one per row (naming `labels`); remove of an id not present (naming the first, nothing removed); a vector
// with NaN or infinity, or zero for cosine (the batch is checked before any row is
// written); kInsert of a present id; the index's errors for a slot, prefixed with the id;
// attach: a name longer than BasicIdMap::kMaxIndexName; pool errors pass through.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "calico/detail/mapped_index.h"
#include "calico/index/id_map.h"

namespace calico::index {

// One result of a mapped search: ordered by (distance, id).
struct MappedNeighbor {
  float distance;
  uint64_t id;
  friend bool operator<(const MappedNeighbor& a, const MappedNeighbor& b) {
    return a.distance < b.distance || (a.distance == b.distance && a.id < b.id);
  }
  friend bool operator==(const MappedNeighbor& a, const MappedNeighbor& b) = default;
};

enum class AddMode {
  kUpsert,  // a present id gets the new vector
  kInsert,  // a present id is an error
};

template <class Index>
class BasicMapped;

// A search's scratch space: the index's state and the slot results. One per thread.
template <class Index>
class MappedSearchState {
 public:
  explicit MappedSearchState(const BasicMapped<Index>& m);

 private:
  friend class BasicMapped<Index>;
  typename MappedCore<Index>::State index_;
  std::vector<vector::Neighbor> slots_;
};

// An allow-list of ids as a bitmap over slots, made by BasicMapped::filter. It holds a read
// section for its lifetime (see "Upserts and searches"): use it for the searches at hand
// and destroy it; while it lives, upserts that replaced a slot wait before removing it.
// Move-only; must not outlive its index.
class SlotFilter {
 public:
  SlotFilter(SlotFilter&& o) noexcept : sections_(o.sections_), ticket_(o.ticket_), words_(std::move(o.words_)) {
    o.sections_ = nullptr;
  }
  SlotFilter& operator=(SlotFilter&&) = delete;
  ~SlotFilter() {
    if (sections_) sections_->leave(ticket_);
  }
  vector::IdFilter slots() const { return vector::IdFilter{words_}; }
  // Slots allowed: for filter(ids), the allowed ids found in the map (each one slot); for
  // filter_labels, the label entries seen (an id being upserted may count twice).
  uint64_t allowed() const { return allowed_; }

 private:
  template <class>
  friend class BasicMapped;
  explicit SlotFilter(ReadSections& s) : sections_(&s), ticket_(s.enter()) {}
  void allow(uint32_t slot) {
    if (slot / 64 >= words_.size()) words_.resize(slot / 64 + 1, 0);
    const uint64_t bit = uint64_t{1} << (slot % 64);
    if ((words_[slot / 64] & bit) == 0) ++allowed_;
    words_[slot / 64] |= bit;
  }
  ReadSections* sections_;
  ReadSections::Ticket ticket_;
  std::vector<uint64_t> words_;
  uint64_t allowed_ = 0;
};

// Thread safety: see "Concurrency and locking rule" above.
template <class Index>
class BasicMapped {
 public:
  using Core = MappedCore<Index>;
  using Pool = typename Core::Pool;
  using Options = typename Core::Options;
  using State = MappedSearchState<Index>;
  using Map = BasicIdMap<Pool>;
  static constexpr uint64_t kNoId = Map::kNoId;
  static constexpr unsigned kIdLocks = 64;
  // A search whose results held duplicates or unmapped slots asks for 2k, 4k, ... up to
  // this many rounds (each round only when the previous one came back short).
  static constexpr uint32_t kMaxFetchRounds = 4;
  // Automatic consolidation's defaults (see "Automatic consolidation").
  static constexpr double kAutoFraction = 0.2;
  static constexpr uint64_t kAutoMinTombstones = 1000;

  // `index` (opened or created on `pool` under `name`) with its id map (see the header
  // comment: opened, created empty, or migrated). Errors: see the header comment; a failed
  // migration leaves the map kMigrating (redone by the next attach).
  static BasicMapped attach(Pool& pool, std::string_view name, Index index);

  BasicMapped(BasicMapped&&) noexcept = default;
  BasicMapped& operator=(BasicMapped&&) noexcept = default;

  Index& index() { return index_; }
  const Index& index() const { return index_; }
  const Map& map() const { return shared_->map; }
  uint32_t dim() const;
  // Rows in the index (ids present; briefly one more per upsert between its steps (3) and
  // (6)). Racy while writers run.
  uint64_t size() const;
  bool contains(uint64_t id) const;

  // Upserts rows[i * dim() ..] as ids[i] on `threads` threads (1: the caller's), then retires
  // the replaced slots (one grace period, one removal). `labels`: empty (the rows are
  // unlabeled) or labels[i] for row i (see "Labels"). Errors: see the header comment; ids,
  // labels and rows are checked before any row is written; a row's error stops the batch,
  // and the rows committed before it stay (their replaced slots are retired before the
  // throw).
  void add(std::span<const uint64_t> ids, const float* rows, unsigned threads = 1, AddMode mode = AddMode::kUpsert,
           std::span<const uint32_t> labels = {});
  void add(uint64_t id, const float* v) { add(std::span<const uint64_t>(&id, 1), v); }
  // Adds n rows with the first n ids >= size() that are not present (AddMode::kInsert),
  // labels as for add(); returns them. Such adds run one at a time.
  std::vector<uint64_t> add_numbered(const float* rows, uint64_t n, unsigned threads = 1,
                                     std::span<const uint32_t> labels = {});
  // Removes ids: every id present and none repeated, else kInvalidArgument naming the
  // first offender (element i) and nothing is removed.
  void remove(std::span<const uint64_t> ids);
  // HNSW: the index's consolidate() (the removed slots' tombstones repaired and freed),
  // then the free slots go to the map's free list. Returns the slots the index freed.
  uint32_t consolidate()
    requires Core::kConsolidates;
  // HNSW: consolidate automatically once tombstones() >= max(min_tombstones, fraction x
  // size()) (see "Automatic consolidation"); fraction 0 turns it off. Errors:
  // kInvalidArgument for a fraction that is negative or not finite.
  void set_auto_consolidate(double fraction, uint64_t min_tombstones = kAutoMinTombstones)
    requires Core::kConsolidates;
  double auto_consolidate_fraction() const { return shared_->auto_fraction.load(std::memory_order_relaxed); }
  // HNSW: removed and replaced slots not yet freed by consolidate() (an upper bound right
  // after attach(); see "Automatic consolidation"). Racy while writers run.
  uint64_t tombstones() const { return shared_->tombstones.load(std::memory_order_relaxed); }

  // The label of id: none when id is not present or has no label. Thread-safe.
  std::optional<uint32_t> label(uint64_t id) const;

  // The slots of ids (ids not present allow nothing), inside a read section that lasts
  // as long as the filter.
  SlotFilter filter(std::span<const uint64_t> ids) const;
  // The slots whose label is in `labels` (any order, repeats allowed; empty: nothing), as
  // "Labels" states, inside a read section that lasts as long as the filter.
  SlotFilter filter_labels(std::span<const uint32_t> labels) const;
  // The slots of those ids whose label is in `labels` (both conditions), likewise.
  SlotFilter filter(std::span<const uint64_t> ids, std::span<const uint32_t> labels) const;
  // The index's search in terms of ids: min(k, rows) results (fewer only when the index
  // returns fewer), sorted by (distance, id), each id once.
  void search(const float* q, const Options& opt, State& st, std::vector<MappedNeighbor>* out) const;
  // The same among the ids `filter` allows.
  void search(const float* q, const Options& opt, State& st, std::vector<MappedNeighbor>* out,
              const SlotFilter& filter) const;

  // HNSW: BasicHnsw::search_batch (the queries' searches interleaved on this thread) in
  // terms of ids, out[i] as search() would give for queries[i] (a query whose results held
  // duplicates is searched again alone with a larger k, as search() does).
  // states[i] distinct, out at least as long as queries.
  void search_batch(std::span<const float* const> queries, const Options& opt, std::span<State* const> states,
                    std::span<std::vector<MappedNeighbor>> out) const
    requires Core::kBatches;

  // Whole-structure check at quiescence: the index's check, the map's check (with (L1) and
  // (L2) of "Labels"), and that the index's live slots are exactly the bound slots (HNSW
  // failed adds aside). Returns the number of ids. Throws std::logic_error naming the first
  // violation.
  uint64_t check_structure() const;
  // Writes the map's B+tree count (BasicIdMap::sync).
  void sync() { shared_->map.sync(); }

 private:
  friend class MappedSearchState<Index>;
  // In-process state (move-stable).
  struct Shared {
    explicit Shared(Map m) : map(std::move(m)) {}
    Map map;
    ReadSections sections;
    std::array<std::mutex, kIdLocks> id_locks;
    std::shared_mutex writers;  // add/remove shared, consolidate exclusive
    std::mutex numbering;       // add_numbered, one at a time
    // Automatic consolidation: tombstones counted by retire() and remove() under `writers`
    // shared, zeroed by consolidate under it exclusive.
    std::atomic<uint64_t> tombstones{0};
    std::atomic<double> auto_fraction{kAutoFraction};
    std::atomic<uint64_t> auto_min{kAutoMinTombstones};
  };

  // A slot replaced by an upsert, with the label entry it had.
  struct Replaced {
    uint32_t slot;
    std::optional<uint32_t> label;
  };

  BasicMapped(Index index, Map map);
  static void migrate(Index& index, Map& map);
  static unsigned lock_of(uint64_t id);
  void check_rows(std::span<const uint64_t> ids, const float* rows, std::span<const uint32_t> labels) const;
  void add_rows(std::span<const uint64_t> ids, const float* rows, unsigned threads, AddMode mode,
                std::span<const uint32_t> labels);
  void remove_rows(std::span<const uint64_t> ids);
  std::optional<Replaced> upsert_row(uint64_t id, const float* v, AddMode mode, std::optional<uint32_t> label);
  void retire(std::vector<Replaced>& replaced);
  uint32_t consolidate_locked()
    requires Core::kConsolidates;
  bool consolidation_due() const;
  void maybe_consolidate(const char* op);
  void search_in(const float* q, const Options& opt, State& st, std::vector<MappedNeighbor>* out,
                 const vector::IdFilter* filter) const;
  bool collect(const std::vector<vector::Neighbor>& slots, uint32_t k, uint32_t asked,
               std::vector<MappedNeighbor>* out) const;

  Index index_;
  std::unique_ptr<Shared> shared_;
};

template <class Pool>
using MappedHnsw = BasicMapped<BasicHnsw<Pool>>;
template <class Pool>
using MappedIvf = BasicMapped<BasicIvf<Pool>>;

}  // namespace calico::index

// The member definitions (src/index/id_map/mapped_index_impl.h) are compiled into the library once per translation
// (cmake/variants.cmake) and are not included here: a user links them rather than
// compiling them again (src/index/README.md, "Compiled once"). The fuzz build, which
// compiles no variant, instantiates them where they are used.
#ifdef CALICO_IMPLICIT_INSTANTIATION
#include "calico/detail/mapped_index_impl.h"
#endif
