// BasicHnsw<Pool>'s member definitions and helper types: the declaration and its contract
// (algorithm, concurrency and latching, errors, a failed add) are in include/calico/index/hnsw.h,
// the page format in hnsw_layout.h. Included at the end of calico/index/hnsw.h (through
// calico/detail/hnsw_impl.h); every definition is inline, as if written in the class.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/checks.h"
#include "calico/error.h"
#include "calico/index/hnsw.h"
#include "index/corrupt_page.h"
#include "index/hnsw/hnsw_layout.h"
#include "vector/distance.h"
#include "vector/neighbor.h"

namespace calico::index {

template <class Pool>
inline HnswSearchState::HnswSearchState(const BasicHnsw<Pool>& index)
    : HnswSearchState(index.layout(), index.shared_.get(), index.capacity()) {}

inline HnswSearchState::HnswSearchState(const HnswLayout& l, const void* owner, uint32_t capacity)
    : owner_(owner),
      capacity_(capacity),
      dim_(l.dim),
      M_(l.M),
      visited_(capacity, 0),
      query_(l.dim),
      vec_(l.dim),
      links_(2 * l.M),
      fresh_(2 * l.M),
      ahead_(2 * l.M),
      group_(2 * l.M),
      offsets_(2 * l.M),
      reads_(2 * l.M),
      snapshot_(2 * l.M),
      rows_(size_t{2 * l.M + 1} * l.dim) {}

inline void HnswSearchState::fit(uint32_t capacity) {
  if (capacity > capacity_) [[unlikely]] {
    visited_.resize(capacity, 0);  // new marks are 0: never the current epoch
    capacity_ = capacity;
  }
}

inline uint8_t& HnswSearchState::mark(uint32_t id) {
  CALICO_DCHECK(id < capacity_);  // fit() after every read that may name a newer node
  return visited_[id];
}

inline uint8_t HnswSearchState::next_epoch() {
  if (++epoch_ == 0) {  // wrapped: forget every old mark (once every 255 layer searches)
    std::fill(visited_.begin(), visited_.end(), 0);
    epoch_ = 1;
  }
  return epoch_;
}

// Scratch states for add() (and contains()), reused across calls; shared by the threads.
template <class Pool>
struct BasicHnsw<Pool>::Shared {
  // add() and remove() hold it shared for their whole call, consolidate() exclusive: a
  // consolidation sees no list change but its own. Taken before any other lock or latch.
  std::shared_mutex writers;
  // Incremented by consolidate() before it clears the first slot: a search on the plain
  // path (no tombstone when it started) that sees it changed re-checks its results, since
  // a slot it scored may have been cleared meanwhile (recheck_results).
  std::atomic<uint64_t> frees{0};
  std::mutex states_mutex;
  std::vector<std::unique_ptr<HnswSearchState>> free_states;
  // Where slots and upper units live (hnsw_layout.h), and the capacity: slots of the level-0
  // extents. grow() publishes a new extent by storing the capacity (release) after the map.
  HnswExtentMap l0, upper;
  std::atomic<uint32_t> capacity{0};
  // Allocation in the space: upper units and pages, level-0 extents (grow). Held while a
  // page is allocated, so that an extent's blocks are contiguous. Taken before any latch.
  std::mutex alloc_mutex;
  // Held by an add() whose node is above the max level, from before its descent until the
  // metadata names the new max level. Taken before any page latch, and nothing that holds
  // a latch waits for it.
  std::mutex raise_mutex;
  // The ids an add() is running for (false) or whose add failed after the node became
  // present (true: see "A failed add" in the file comment). A leaf lock: nothing else is
  // taken or waited for under it.
  std::mutex adds_mutex;
  std::unordered_map<uint32_t, bool> adds;
  std::atomic<bool> any_failed{false};  // an add failed after its node became present
};

// One add() of an id in Shared::adds, for the add's duration: registered by the
// constructor (kInvalidArgument if another add of the id is running), and on the way out
// removed (done, or failed before the node was present) or recorded as a failed add.
template <class Pool>
class BasicHnsw<Pool>::AddRecord {
 public:
  AddRecord(Shared& s, uint32_t id) : shared_(&s), id_(id) {
    std::lock_guard lock(s.adds_mutex);
    auto [it, inserted] = s.adds.try_emplace(id, false);
    if (!inserted) {
      if (!it->second) {
        throw Error(ErrorCode::kInvalidArgument, "hnsw add: id " + std::to_string(id) +
                                                     " is being added by another thread");
      }
      it->second = false;                    // a failed add: this call resumes it
      present_ = resuming_ = true;
    }
  }
  ~AddRecord() {
    std::lock_guard lock(shared_->adds_mutex);
    if (present_ && !done_) {
      shared_->adds[id_] = true;  // the entry exists: no allocation
      shared_->any_failed.store(true, std::memory_order_relaxed);
    } else {
      shared_->adds.erase(id_);
    }
  }
  AddRecord(const AddRecord&) = delete;
  AddRecord& operator=(const AddRecord&) = delete;
  bool resuming() const { return resuming_; }
  void claimed() { present_ = true; }
  void done() { done_ = true; }

 private:
  Shared* shared_;
  uint32_t id_;
  bool present_ = false, resuming_ = false, done_ = false;
};

// A scratch state borrowed from Shared for one call.
template <class Pool>
struct BasicHnsw<Pool>::Lease {
  Lease(Shared& s, const HnswLayout& l) : shared(&s) {
    {
      std::lock_guard lock(s.states_mutex);
      if (!s.free_states.empty()) {
        state = std::move(s.free_states.back());
        s.free_states.pop_back();
      }
    }
    if (!state) state.reset(new HnswSearchState(l, &s, s.capacity.load(std::memory_order_acquire)));
  }
  ~Lease() {
    std::lock_guard lock(shared->states_mutex);
    shared->free_states.push_back(std::move(state));
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  Shared* shared;
  std::unique_ptr<HnswSearchState> state;
};

template <class Pool>
inline auto BasicHnsw<Pool>::create(Pool& pool, std::string_view name, const HnswParams& params,
                                    uint32_t capacity) -> BasicHnsw {
  HnswParams p = params;
  const int metric = static_cast<int>(p.metric);
  if (p.dim == 0 || p.M < 2 || p.M > HnswLayout::kMaxM || metric < 0 || metric > 2) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw '" + std::string(name) + "': dim " + std::to_string(p.dim) +
                                                 ", M " + std::to_string(p.M) + ": need dim >= 1, 2 <= M <= " +
                                                 std::to_string(HnswLayout::kMaxM) + " and a known metric");
  }
  if (capacity == 0 || capacity == HnswMeta::kNone) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw '" + std::string(name) + "': capacity " +
                                                 std::to_string(capacity) + " out of range");
  }
  const HnswLayout l = HnswLayout::make(static_cast<uint32_t>(pool.usable_page_size()), p.dim, p.M, capacity);
  if (l.per_page == 0) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw '" + std::string(name) + "': a node of dim " +
                                                 std::to_string(p.dim) + " and M " + std::to_string(p.M) +
                                                 " does not fit a " + std::to_string(pool.page_size()) +
                                                 "-byte page");
  }
  if (uint64_t{l.upper_base} + 1 > pool.options().max_blocks_per_space) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw '" + std::string(name) + "': capacity " +
                                                 std::to_string(capacity) + " needs " +
                                                 std::to_string(l.upper_base) + " pages; the space holds " +
                                                 std::to_string(pool.options().max_blocks_per_space));
  }
  if (uint64_t{l.l0_pages} * l.per_page > kMaxCapacity) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw '" + std::string(name) + "': capacity " +
                                                 std::to_string(capacity) + " out of range");
  }
  p.ef_construction = std::max(p.ef_construction, p.M);
  SpaceId space = pool.create_space(name);
  {
    ExclusiveGuard g = pool.allocate(space);
    CALICO_CHECK(g.page_id().block() == 0);
    HnswMeta m{};
    m.magic = HnswMeta::kMagic;
    m.format_version = HnswMeta::kFormatVersion;
    m.page_size = static_cast<uint32_t>(pool.page_size());
    m.dim = p.dim;
    m.metric = static_cast<uint32_t>(metric);
    m.M = p.M;
    m.ef_construction = p.ef_construction;
    m.capacity = capacity;
    m.per_page = l.per_page;
    m.vec_stride = l.vec_stride;
    m.l0_pages = l.l0_pages;
    m.max_level_cap = l.max_level_cap;
    m.seed = p.seed;
    m.entry = HnswMeta::kNone;
    HnswExtentTable t{};
    t.l0_count = 1;
    t.l0_base[0] = 1;
    std::memcpy(g.data(), &m, sizeof m);
    std::memcpy(g.data() + sizeof m, &t, sizeof t);
    g.mark_dirty();
  }
  for (uint32_t b = 1; b <= l.l0_pages; ++b) {
    ExclusiveGuard g = pool.allocate(space);  // zeroed and dirty: every slot unused
    CALICO_CHECK(g.page_id().block() == b);
  }
  return BasicHnsw(pool, space, p, l, nullptr, HnswMeta::kFormatVersion);
}

template <class Pool>
inline auto BasicHnsw<Pool>::open(Pool& pool, std::string_view name) -> BasicHnsw {
  SpaceId space = pool.open_space(name);
  HnswMeta m{};
  const uint64_t blocks = pool.space_blocks(space);
  if (blocks > 0) {
    SharedGuard g = pool.pin_shared(PageId(space, 0));
    std::memcpy(&m, g.data(), sizeof m);
  }
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument,
                 "space '" + std::string(name) + "' is not an HNSW index of this format: " + why, PageId(space, 0));
  };
  if (blocks == 0 || m.magic != HnswMeta::kMagic) throw bad("no HNSW metadata");
  if (m.format_version < HnswMeta::kFirstFormatVersion || m.format_version > HnswMeta::kFormatVersion) {
    throw bad("format version " + std::to_string(m.format_version));
  }
  if (m.page_size != pool.page_size()) throw bad("written with " + std::to_string(m.page_size) + "-byte pages");
  if (m.dim == 0 || m.M < 2 || m.M > HnswLayout::kMaxM || m.metric > 2 || m.capacity == 0 ||
      m.capacity == HnswMeta::kNone) {
    throw bad("parameters out of range");
  }
  const HnswLayout l = HnswLayout::make(static_cast<uint32_t>(pool.usable_page_size()), m.dim, m.M, m.capacity);
  if (l.per_page == 0) throw bad("a node of dim " + std::to_string(m.dim) + " and M " + std::to_string(m.M) + " does not fit a page");
  // Format 3: the extents, each inside the space; the capacity is theirs.
  const bool growing = m.format_version >= HnswMeta::kFirstGrowingVersion;
  HnswExtentTable t{};
  uint64_t capacity = m.capacity, upper_pages = m.upper_pages;
  if (growing) {
    {
      SharedGuard g = pool.pin_shared(PageId(space, 0));
      std::memcpy(&t, g.data() + sizeof m, sizeof t);
    }
    if (t.l0_count == 0 || t.l0_count > HnswExtentTable::kMaxExtents || t.upper_count > HnswExtentTable::kMaxExtents) {
      throw bad("extent table counts out of range");
    }
    if (t.l0_base[0] != 1) throw bad("level-0 extent 0 is not at block 1");  // page_of assumes it
    uint64_t pages = 0;
    for (uint32_t e = 0; e < t.l0_count; ++e) {
      const uint64_t n = extent_pages(l.l0_pages, e);
      if (t.l0_base[e] == 0 || t.l0_base[e] + n > blocks) throw bad("level-0 extent " + std::to_string(e) + " past the space");
      pages += n;
    }
    capacity = pages * l.per_page;
    if (capacity > kMaxCapacity) throw bad("capacity out of range");
    upper_pages = 0;
    for (uint32_t e = 0; e < t.upper_count; ++e) {
      const uint64_t n = extent_pages(1, e);
      if (t.upper_base[e] == 0 || t.upper_base[e] + n > blocks) throw bad("upper extent " + std::to_string(e) + " past the space");
      upper_pages += n;
    }
  }
  if (l.per_page != m.per_page || l.vec_stride != m.vec_stride || l.l0_pages != m.l0_pages ||
      l.max_level_cap != m.max_level_cap ||
      (growing ? upper_pages != m.upper_pages : uint64_t{l.upper_base} + m.upper_pages > blocks) ||
      uint64_t{m.upper_units} > uint64_t{m.upper_pages} * l.lists_per_page || m.size > capacity ||
      m.deleted > m.size || (m.format_version == 1 && m.deleted != 0) ||
      (m.entry != HnswMeta::kNone && (m.entry >= capacity || m.max_level >= l.max_level_cap)) ||
      m.ef_construction < m.M) {
    throw bad("inconsistent metadata");
  }
  HnswParams p{m.dim, static_cast<vector::Metric>(m.metric), m.M, m.ef_construction, m.seed};
  return BasicHnsw(pool, space, p, l, growing ? &t : nullptr, m.format_version);
}

template <class Pool>
inline uint64_t BasicHnsw<Pool>::extent_pages(uint64_t first, uint32_t e) {
  return e == 0 ? first : first << (e - 1);
}

template <class Pool>
inline uint32_t BasicHnsw<Pool>::dim() const { return params_.dim; }

template <class Pool>
inline uint32_t BasicHnsw<Pool>::capacity() const { return shared_->capacity.load(std::memory_order_acquire); }

template <class Pool>
inline bool BasicHnsw<Pool>::growable() const { return format_ >= HnswMeta::kFirstGrowingVersion; }

// Grows the level-0 region by extents until the capacity is at least n: each extent doubles
// the capacity, its blocks allocated (zeroed: unused slots) before the extent table names
// it, and the table written before the capacity is published. A failure (kPoolFull, an I/O
// error) leaves the capacity as it was; blocks allocated for the failed extent stay unused.
template <class Pool>
inline void BasicHnsw<Pool>::reserve(uint64_t n) {
  if (n <= capacity()) return;
  if (!growable()) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw: the index has format version " + std::to_string(format_) +
                                                 ", whose capacity (" + std::to_string(capacity()) +
                                                 ") is fixed; rebuild it to grow");
  }
  if (n > kMaxCapacity) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw: capacity " + std::to_string(n) + " is past the largest, " +
                                                 std::to_string(kMaxCapacity));
  }
  std::lock_guard lock(shared_->alloc_mutex);
  HnswExtentMap& l0 = shared_->l0;
  while (uint64_t{capacity()} < n) {
    const uint32_t e = l0.count();
    const uint64_t pages = extent_pages(layout_.l0_pages, e);
    const uint64_t slots = (l0.end() + pages) * layout_.per_page;
    if (e == HnswExtentMap::kMax || slots > kMaxCapacity ||
        pool_->space_blocks(space_) + pages > pool_->options().max_blocks_per_space) {
      throw Error(ErrorCode::kInvalidArgument, "hnsw: cannot grow past " + std::to_string(capacity()) +
                                                   " nodes (extent " + std::to_string(e) + " of " +
                                                   std::to_string(pages) + " pages does not fit)");
    }
    const uint32_t base = allocate_extent(pages);
    {
      ExclusiveGuard g = pool_->pin_exclusive(meta_page());
      record_extent(g, false, e, base);
    }
    l0.grow(base, pages);
    shared_->capacity.store(static_cast<uint32_t>(slots), std::memory_order_release);
  }
}

// Appends extent e at block `base` to the table on the metadata page (latched by `meta`):
// the upper region's table when `upper`, else level 0's. e is the table's count (one writer:
// alloc_mutex).
template <class Pool>
inline void BasicHnsw<Pool>::record_extent(ExclusiveGuard& meta, bool upper, uint32_t e, uint32_t base) {
  HnswExtentTable t;
  std::memcpy(&t, meta.data() + sizeof(HnswMeta), sizeof t);
  uint32_t& count = upper ? t.upper_count : t.l0_count;
  CALICO_CHECK(count == e);
  (upper ? t.upper_base : t.l0_base)[e] = base;
  count = e + 1;
  std::memcpy(meta.data() + sizeof(HnswMeta), &t, sizeof t);
  meta.mark_dirty();
}

// Allocates `pages` contiguous zeroed blocks at the space's end (alloc_mutex held: nothing
// else allocates in the space meanwhile); returns the first.
template <class Pool>
inline uint32_t BasicHnsw<Pool>::allocate_extent(uint64_t pages) {
  uint64_t first = 0;
  for (uint64_t i = 0; i < pages; ++i) {
    ExclusiveGuard g = pool_->allocate(space_);
    if (i == 0) first = g.page_id().block();
    if (g.page_id().block() != first + i) {
      corrupt(meta_page(), "block " + std::to_string(first + i) + " was expected next, but the space ends at " +
                               std::to_string(g.page_id().block()));
    }
  }
  return static_cast<uint32_t>(first);
}

template <class Pool>
inline const HnswParams& BasicHnsw<Pool>::params() const { return params_; }

template <class Pool>
inline const HnswLayout& BasicHnsw<Pool>::layout() const { return layout_; }

template <class Pool>
inline SpaceId BasicHnsw<Pool>::space() const { return space_; }

template <class Pool>
inline uint32_t BasicHnsw<Pool>::size() const {
  HnswStats s;
  const HnswMetaState ms = read_meta_state(true, s);
  return ms.size - ms.deleted;
}


template <class Pool>
inline uint32_t BasicHnsw<Pool>::level_of(uint32_t id) const { return random_level(id); }

template <class Pool>
inline void BasicHnsw<Pool>::add(uint32_t id, const float* v) {
  if (id >= capacity()) {
    if (!growable() || id == HnswMeta::kNone) {
      throw Error(ErrorCode::kInvalidArgument, "hnsw add: id " + std::to_string(id) + " >= capacity " +
                                                   std::to_string(capacity()) +
                                                   (growable() ? "" : " (a format-" + std::to_string(format_) + " index does not grow)"));
    }
    reserve(uint64_t{id} + 1);
  }
  std::shared_lock writing(shared_->writers);
  Lease lease(*shared_, layout_);
  HnswSearchState& st = *lease.state;
  prepare_vector(v, st.query_.data(), "add");
  const float* q = st.query_.data();
  const uint32_t level = random_level(id);
  AddRecord record(*shared_, id);  // throws if another add(id) is running
  if (record.resuming()) {
    // The node is present from the failed add: same vector, same level and units.
    const HnswRowHead h = read_head(id, false, st.stats_);
    if (h.flags == 0 || h.level != level) {
      corrupt(page_of(id), "node " + std::to_string(id) + ", whose add failed, lost its record");
    }
    read_vector(id, false, st, st.vec_.data());
    if (std::memcmp(st.vec_.data(), q, size_t{params_.dim} * 4) != 0) {
      throw Error(ErrorCode::kInvalidArgument, "hnsw add: id " + std::to_string(id) +
                                                   " was partly added with another vector; retry it with that one");
    }
  } else {
    // A cheap check before allocating upper units.
    if (const HnswRowHead h = read_head(id, true, st.stats_); h.present()) throw duplicate(id, h);
    const uint32_t upper = level > 0 ? allocate_upper(level) : HnswRowHead::kNoUpper;
    claim(id, level, upper, q);
    record.claimed();  // from here on the node is present: an error leaves a failed add
  }
  insert(id, level, q, st);
  record.done();
}

template <class Pool>
inline void BasicHnsw<Pool>::remove(uint32_t id) {
  if (id >= capacity()) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw remove: id " + std::to_string(id) + " >= capacity " +
                                                 std::to_string(capacity()));
  }
  std::shared_lock writing(shared_->writers);
  {
    // A node whose add runs or failed is present but not counted: removing it would make
    // the count of tombstones exceed the counted nodes. An add(id) that starts after this
    // check finds the node present and fails (or finds it removed).
    std::lock_guard lock(shared_->adds_mutex);
    if (shared_->adds.count(id) != 0) {
      throw Error(ErrorCode::kInvalidArgument, "hnsw remove: id " + std::to_string(id) +
                                                   " is being added, or its add failed (add it again first)");
    }
  }
  {
    // The metadata is checked before the flag is set, so that a corrupt page fails the call
    // with nothing changed (a live node is counted, so deleted < size holds below).
    HnswStats s;
    const HnswMetaState ms = read_meta_state(true, s);
    if (ms.deleted >= ms.size) corrupt(meta_page(), "metadata counts " + std::to_string(ms.deleted) +
                                                        " removed of " + std::to_string(ms.size) + " nodes");
  }
  {
    ExclusiveGuard g = pool_->pin_exclusive(page_of(id));
    HnswRowHead h;
    std::memcpy(&h, g.data() + layout_.row_offset(id), sizeof h);
    if (!h.flags_ok()) corrupt(page_of(id), "node " + std::to_string(id) + " has flags " + std::to_string(h.flags));
    if (!h.live()) {
      throw Error(ErrorCode::kInvalidArgument, "hnsw remove: id " + std::to_string(id) + " is not in the index" +
                                                   (h.present() ? " (removed before)" : ""));
    }
    h.flags |= HnswRowHead::kDeleted;
    std::memcpy(g.data() + layout_.row_offset(id) + offsetof(HnswRowHead, flags), &h.flags, sizeof h.flags);
    g.mark_dirty();
  }
  // Counted under the metadata latch (one latch at a time, as everywhere). A search that
  // reads the count before this still checks tombstones from the next search on; one that
  // ran before the flag may return the node (a remove concurrent with it). Like add(), a
  // remove is durable at the next flush; a flush that runs while it does may write the
  // tombstone without its count (check_structure reports it after a reopen).
  ExclusiveGuard g = pool_->pin_exclusive(meta_page());
  HnswMetaState ms = meta_state_of(g.data());
  if (!meta_state_ok(ms) || ms.deleted >= ms.size) {  // changed on disk since the check: take the flag back
    g = ExclusiveGuard();
    ExclusiveGuard row = pool_->pin_exclusive(page_of(id));
    const uint16_t flags = HnswRowHead::kPresent;
    std::memcpy(row.data() + layout_.row_offset(id) + offsetof(HnswRowHead, flags), &flags, sizeof flags);
    row.mark_dirty();
    corrupt(meta_page(), "metadata state is malformed");
  }
  ms.deleted += 1;
  write_meta_state(g, ms);
  uint32_t version;
  std::memcpy(&version, g.data() + offsetof(HnswMeta, format_version), 4);
  if (version < HnswMeta::kFirstTombstoneVersion) {  // a version-1 reader would return tombstones
    version = HnswMeta::kFirstTombstoneVersion;
    std::memcpy(g.data() + offsetof(HnswMeta, format_version), &version, 4);
  }
}

template <class Pool>
inline uint32_t BasicHnsw<Pool>::consolidate() {
  std::unique_lock writing(shared_->writers);
  Lease lease(*shared_, layout_);
  HnswSearchState& st = *lease.state;
  HnswMetaState ms = read_meta_state(false, st.stats_);
  if (ms.deleted == 0) return 0;
  st.fit(capacity());  // no add runs: the capacity stays
  // No add runs (writers); the nodes of failed adds are live but may not be entry points.
  const std::vector<uint32_t> failed = failed_adds();
  // 1. Every slot's head: which nodes are removed, and each live node's level.
  const uint32_t cap = capacity();
  std::vector<HnswRowHead> heads(cap);
  std::vector<uint32_t> removed;
  for (uint32_t id = 0; id < cap; ++id) {
    heads[id] = read_head(id, false, st.stats_);
    if (heads[id].present() && !heads[id].live()) removed.push_back(id);
  }
  if (removed.empty()) return 0;
  auto is_removed = [&](uint32_t id) { return heads[id].present() && !heads[id].live(); };
  // 2. Every live node's list on each of its levels that names a removed node: its live
  // members (the survivors) all stay, and the places of the removed ones are filled from the
  // live nodes those lead to on that level, by the insertion heuristic seeded with the
  // survivors. ([FreshDiskANN] Algorithm 4 prunes survivors and candidates together; kept
  // survivors gave recall equal to a fresh build's after the whole index was replaced,
  // where pruning them all lost 0.03 at ef 16: docs/results/vector_churn.md.) A removed
  // member's neighbours may be removed too: the live ones are found through them (a walk
  // over removed nodes only). A node left with no candidate while the level has other
  // nodes is linked as insertion links it (relink).
  std::vector<uint32_t> members(2 * params_.M), theirs(2 * params_.M), through;
  std::vector<uint32_t> on_level(layout_.max_level_cap, 0);  // live nodes per level
  for (uint32_t id = 0; id < cap; ++id) {
    if (heads[id].live()) for (uint32_t l = 0; l <= heads[id].level; ++l) ++on_level[l];
  }
  for (uint32_t p = 0; p < cap; ++p) {
    if (!heads[p].live()) continue;
    for (uint32_t l = 0; l <= heads[p].level; ++l) {
      const uint32_t n = read_links(p, l, false, st, members.data());
      const uint8_t epoch = st.next_epoch();
      st.mark(p) = epoch;
      st.merged_.clear();
      through.clear();
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t v = members[i];
        if (st.mark(v) == epoch || !heads[v].present()) continue;
        st.mark(v) = epoch;
        (is_removed(v) ? through : st.merged_).push_back(v);
      }
      const size_t survivors = st.merged_.size();
      if (through.empty()) continue;  // names no removed node
      for (size_t t = 0; t < through.size(); ++t) {
        const uint32_t m = read_links(through[t], l, false, st, theirs.data());
        for (uint32_t j = 0; j < m; ++j) {
          const uint32_t v = theirs[j];
          if (st.mark(v) == epoch || !heads[v].present()) continue;
          st.mark(v) = epoch;
          // Deeper removed nodes only while no live candidate is found (bounded by them).
          if (!is_removed(v)) {
            st.merged_.push_back(v);
          } else if (st.merged_.empty()) {
            through.push_back(v);
          }
        }
      }
      const ListLocation loc = list_location(p, l, heads[p]);
      if (st.merged_.empty() && on_level[l] >= 2) {
        relink(p, l, is_removed, st);
      } else if (st.merged_.size() > loc.max) {
        shrink(p, loc.max, st, survivors);  // the survivors stay; the freed places are filled
      } else {
        st.chosen_.assign(st.merged_.begin(), st.merged_.end());
      }
      ExclusiveGuard g = pool_->pin_exclusive(loc.pid);
      write_list(g, loc, st.chosen_);
    }
  }
  // 3. A removed entry point gives way to a live node of the highest level, in the metadata
  // before any slot is freed (searches start there).
  ms = read_meta_state(false, st.stats_);
  if (ms.entry != HnswMeta::kNone && is_removed(ms.entry)) {
    uint32_t best = HnswMeta::kNone;
    for (uint32_t id = 0; id < cap; ++id) {
      if (heads[id].live() && !std::binary_search(failed.begin(), failed.end(), id) &&
          (best == HnswMeta::kNone || heads[id].level > heads[best].level)) {
        best = id;
      }
    }
    ExclusiveGuard g = pool_->pin_exclusive(meta_page());
    HnswMetaState now = meta_state_of(g.data());
    now.entry = best;
    now.max_level = best == HnswMeta::kNone ? 0 : heads[best].level;
    write_meta_state(g, now);
  }
  shared_->frees.fetch_add(1);
  // 4. The removed slots: no list names them now. Cleared (head zero: unused; vector zero),
  // they may be added again. Their upper-level units are not reused (the bump allocator).
  // A search that read a removed id before its list was rewritten may still reach its
  // cleared slot: an unused slot reads as a node without links and is never a result.
  for (const uint32_t id : removed) {
    ExclusiveGuard g = pool_->pin_exclusive(page_of(id));
    std::memset(g.data() + layout_.vector_offset(id), 0, size_t{params_.dim} * 4);
    std::memset(g.data() + layout_.row_offset(id), 0, layout_.row_bytes);
    g.mark_dirty();
  }
  ExclusiveGuard g = pool_->pin_exclusive(meta_page());
  HnswMetaState now = meta_state_of(g.data());
  const uint32_t freed = static_cast<uint32_t>(removed.size());
  if (now.deleted < freed || now.size < freed) corrupt(meta_page(), "metadata counts fewer removed nodes than found");
  now.deleted -= freed;
  now.size -= freed;
  write_meta_state(g, now);
  return freed;
}

// consolidate(), for a live node p whose level-l list leads to no live node: its
// neighbours on level l chosen as insertion chooses them (greedy descent from the entry
// point, a beam search with ef_construction on level l, the heuristic, M of them), among
// live nodes other than p, into st.chosen_. Removed nodes are still traversed (their
// lists are intact until their slots are freed).
template <class Pool>
template <class Removed>
inline void BasicHnsw<Pool>::relink(uint32_t p, uint32_t l, const Removed& is_removed, HnswSearchState& st) const {
  float* q = st.query_.data();
  read_vector(p, false, st, q);
  const HnswMetaState ms = read_meta_state(false, st.stats_);
  uint32_t cur = ms.entry;
  float cur_d = distance_to(q, cur, true, st);
  for (uint32_t lv = ms.max_level; lv > l; --lv) greedy_step(q, lv, true, true, st, &cur, &cur_d);
  const uint8_t epoch = st.next_epoch();
  st.mark(cur) = epoch;
  st.results_.assign(1, vector::Neighbor{cur_d, cur});
  search_layer(q, l, params_.ef_construction, true, true, 0, st);
  st.layer_.clear();
  for (const vector::Neighbor& n : st.results_) {
    if (n.id != p && !is_removed(n.id)) st.layer_.push_back(n);
  }
  std::sort(st.layer_.begin(), st.layer_.end());
  select_heuristic(st.layer_, params_.M, st, &st.chosen_);
}

template <class Pool>
inline void BasicHnsw<Pool>::search(const float* q, const HnswSearchOptions& opt, HnswSearchState& st,
                                    std::vector<vector::Neighbor>* out) const {
  out->clear();
  search_prepare(q, opt, st);
  // The plain path while the index has no tombstone (one set after this read may be
  // returned, as by a search that started before the remove).
  const uint64_t frees = shared_->frees.load(std::memory_order_acquire);
  const HnswMetaState ms = read_meta_state(opt.optimistic, st.stats_);
  if (ms.deleted == 0) {
    search_admitted(opt, ms, AdmitAll{}, 0, st, out);
    if (shared_->frees.load(std::memory_order_acquire) != frees) [[unlikely]] recheck_results(opt, st, out);
  } else {
    search_admitted(opt, ms, AdmitLive{nullptr, opt.optimistic}, ms.size - ms.deleted, st, out);
  }
}

template <class Pool>
inline void BasicHnsw<Pool>::search(const float* q, const HnswSearchOptions& opt, HnswSearchState& st,
                                    std::vector<vector::Neighbor>* out, const HnswFilter& filter) const {
  out->clear();
  search_prepare(q, opt, st);
  const AdmitLive admit{&filter, opt.optimistic};
  const uint64_t allowed = filter.count_below(capacity());
  const uint64_t ef = std::max(opt.ef, opt.k);
  const HnswMetaState ms = read_meta_state(opt.optimistic, st.stats_);
  const uint64_t live = ms.size - ms.deleted;
  const bool exact = opt.exact_scan_below != 0 ? allowed < opt.exact_scan_below
                                               : allowed * allowed <= HnswSearchOptions::kExactScanC * ef * live || allowed <= opt.k;
  if (exact) {
    ++st.stats_.searches;
    exact_scan(opt, admit, st, out);
  } else {
    search_admitted(opt, ms, admit, std::min(allowed, live), st, out);
  }
}

// The level-0 beam search with result admission `admit`; a search that found fewer than
// min(k, most) admissible nodes (a selective filter, or many tombstones near the query;
// `most` bounds the admissible nodes from above) is answered by an exact scan instead, so
// that it returns min(k, admissible nodes) results.
template <class Pool>
template <class Admit>
inline void BasicHnsw<Pool>::search_admitted(const HnswSearchOptions& opt, const HnswMetaState& ms, const Admit& admit,
                                             uint64_t most, HnswSearchState& st,
                                             std::vector<vector::Neighbor>* out) const {
  if (!search_start(opt, ms, admit, st)) return;
  const uint32_t ef = std::max(opt.ef, opt.k);
  while (layer_expand(0, ef, opt.optimistic, opt.prefetch, opt.lookahead, st)) {
    layer_score(st.query_.data(), 0, ef, opt.optimistic, opt.prefetch, st, admit);
  }
  search_end(opt.k, st, out);
  if constexpr (!Admit::kAll) {
    if (out->size() < std::min<uint64_t>(opt.k, most)) exact_scan(opt, admit, st, out);
  }
}

template <class Pool>
inline void BasicHnsw<Pool>::search_batch(std::span<const float* const> queries, const HnswSearchOptions& opt,
                                          std::span<HnswSearchState* const> states,
                                          std::span<std::vector<vector::Neighbor>> out) const {
  const size_t n = queries.size();
  if (states.size() < n || out.size() < n) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw search_batch: " + std::to_string(n) + " queries need as many states and outputs (got " +
                                                 std::to_string(states.size()) + " and " + std::to_string(out.size()) + ")");
  }
  const uint32_t ef = std::max(opt.ef, opt.k);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (states[j] == states[i]) {
        throw Error(ErrorCode::kInvalidArgument, "hnsw search_batch: queries " + std::to_string(j) + " and " +
                                                     std::to_string(i) + " were given the same state");
      }
    }
    search_prepare(queries[i], opt, *states[i]);
  }
  if (n == 0) return;
  // As search(): the plain path while the index has no tombstone. With tombstones the
  // searches run one after the other (not interleaved yet).
  const uint64_t frees = shared_->frees.load(std::memory_order_acquire);
  const HnswMetaState ms = read_meta_state(opt.optimistic, states[0]->stats_);
  if (ms.deleted != 0) {
    for (size_t i = 0; i < n; ++i) {
      out[i].clear();
      search_admitted(opt, ms, AdmitLive{nullptr, opt.optimistic}, ms.size - ms.deleted, *states[i], &out[i]);
    }
    return;
  }
  std::vector<uint32_t> active;  // the searches not over, by index
  active.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    out[i].clear();
    if (search_start(opt, ms, AdmitAll{}, *states[i]) &&
        layer_expand(0, ef, opt.optimistic, opt.prefetch, opt.lookahead, *states[i])) {
      active.push_back(static_cast<uint32_t>(i));
    } else {
      search_end(opt.k, *states[i], &out[i]);
    }
  }
  while (!active.empty()) {
    size_t kept = 0;
    for (const uint32_t i : active) {
      HnswSearchState& st = *states[i];
      layer_score(st.query_.data(), 0, ef, opt.optimistic, opt.prefetch, st);
      if (layer_expand(0, ef, opt.optimistic, opt.prefetch, opt.lookahead, st)) {
        active[kept++] = i;
      } else {
        search_end(opt.k, st, &out[i]);
      }
    }
    active.resize(kept);
  }
  if (shared_->frees.load(std::memory_order_acquire) != frees) [[unlikely]] {
    for (size_t i = 0; i < n; ++i) recheck_results(opt, *states[i], &out[i]);
  }
}

// A plain-path search during which consolidate() cleared slots: a result may be a slot
// cleared after it was scored (its distance then to a zeroed vector), or added again since.
// Keeps the results that are live now, with their distance as of that version (admissible
// reads head and vector together), in order; completes with an exact scan when that left
// fewer than k of the live nodes.
template <class Pool>
inline void BasicHnsw<Pool>::recheck_results(const HnswSearchOptions& opt, HnswSearchState& st,
                                             std::vector<vector::Neighbor>* out) const {
  const AdmitLive live{nullptr, opt.optimistic};
  std::erase_if(*out, [&](vector::Neighbor& n) { return !admissible(n.id, nullptr, live, st.query_.data(), &n.distance, st); });
  std::sort(out->begin(), out->end());
  if (out->size() < std::min<uint64_t>(opt.k, size())) exact_scan(opt, live, st, out);
}

template <class Pool>
inline bool BasicHnsw<Pool>::contains(uint32_t id) const {
  if (id >= capacity()) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw contains: id " + std::to_string(id) + " >= capacity " +
                                                 std::to_string(capacity()));
  }
  Lease lease(*shared_, layout_);
  return read_head(id, true, lease.state->stats_).live();
}

template <class Pool>
inline bool BasicHnsw<Pool>::removed(uint32_t id) const {
  if (id >= capacity()) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw removed: id " + std::to_string(id) + " >= capacity " +
                                                 std::to_string(capacity()));
  }
  Lease lease(*shared_, layout_);
  const HnswRowHead h = read_head(id, true, lease.state->stats_);
  return h.present() && !h.live();
}

template <class Pool>
inline std::vector<uint32_t> BasicHnsw<Pool>::failed_adds() const {
  std::vector<uint32_t> ids;
  {
    std::lock_guard lock(shared_->adds_mutex);
    for (const auto& [id, failed] : shared_->adds) {
      if (failed) ids.push_back(id);
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

template <class Pool>
inline void BasicHnsw<Pool>::check_structure() const {
  HnswMeta m{};
  {
    SharedGuard g = pool_->pin_shared(meta_page());
    std::memcpy(&m, g.data(), sizeof m);
  }
  auto fail = [](const std::string& what) { throw std::logic_error("hnsw: " + what); };
  const uint32_t cap = capacity();
  if (growable()) {
    HnswExtentTable t;
    {
      SharedGuard g = pool_->pin_shared(meta_page());
      std::memcpy(&t, g.data() + sizeof(HnswMeta), sizeof t);
    }
    if (t.l0_count != shared_->l0.count() || t.upper_count != shared_->upper.count() ||
        m.upper_pages != shared_->upper.end()) {
      fail("the extent table disagrees with the index's map");
    }
    for (uint32_t e = 0; e < t.l0_count; ++e) {
      if (t.l0_base[e] != shared_->l0.base(e)) fail("level-0 extent " + std::to_string(e) + " moved");
    }
    for (uint32_t e = 0; e < t.upper_count; ++e) {
      if (t.upper_base[e] != shared_->upper.base(e)) fail("upper extent " + std::to_string(e) + " moved");
    }
  }
  std::vector<HnswRowHead> heads(cap);
  uint32_t present = 0, deleted = 0;
  for (uint32_t id = 0; id < cap; ++id) {
    SharedGuard g = pool_->pin_shared(page_of(id));
    std::memcpy(&heads[id], g.data() + layout_.row_offset(id), sizeof(HnswRowHead));
    const HnswRowHead& h = heads[id];
    if (h.flags == 0) {
      if (h.count != 0) fail("unused slot " + std::to_string(id) + " has links");
      continue;
    }
    ++present;
    deleted += h.live() ? 0 : 1;
    if (!h.flags_ok() || h.level >= layout_.max_level_cap ||
        (h.level == 0) != (h.upper == HnswRowHead::kNoUpper) ||
        (h.level > 0 && uint64_t{h.upper} + h.level > m.upper_units)) {
      fail("node " + std::to_string(id) + " has a bad head");
    }
  }
  const std::vector<uint32_t> failed = failed_adds();
  for (uint32_t id : failed) {
    if (!heads[id].live()) fail("node " + std::to_string(id) + ", whose add failed, is not present or removed");
    if (id == m.entry) fail("node " + std::to_string(id) + ", whose add failed, is the entry point");
  }
  if (present != uint64_t{m.size} + failed.size()) {
    fail("size " + std::to_string(m.size) + " and " + std::to_string(failed.size()) + " failed adds but " +
         std::to_string(present) + " nodes");
  }
  if (deleted != m.deleted) {
    fail("the metadata counts " + std::to_string(m.deleted) + " removed nodes but " + std::to_string(deleted) +
         " are tombstones");
  }
  if ((m.entry == HnswMeta::kNone) != (m.size == 0)) fail("entry point and size disagree");
  if (m.entry != HnswMeta::kNone && (heads[m.entry].flags == 0 || heads[m.entry].level != m.max_level)) {
    fail("entry point " + std::to_string(m.entry) + " is not a node of the max level");
  }
  // Nodes on each level (a node of top level L is on levels 0 .. L).
  std::vector<uint32_t> on_level(layout_.max_level_cap, 0);
  for (uint32_t id = 0; id < cap; ++id) {
    if (heads[id].flags != 0) for (uint32_t l = 0; l <= heads[id].level; ++l) ++on_level[l];
  }
  std::vector<uint32_t> list(2 * params_.M);
  for (uint32_t id = 0; id < cap; ++id) {
    if (heads[id].flags == 0) continue;
    for (uint32_t l = 0; l <= heads[id].level; ++l) {
      const ListLocation loc = list_location(id, l, heads[id]);
      uint32_t count;
      {
        SharedGuard g = pool_->pin_shared(loc.pid);
        std::memcpy(&count, g.data() + loc.offset, 4);
        if (count > loc.max) fail("node " + std::to_string(id) + " level " + std::to_string(l) + " overflows");
        std::memcpy(list.data(), g.data() + loc.offset + loc.ids_offset, size_t{count} * 4);
      }
      if (count == 0 && on_level[l] >= 2 && !shared_->any_failed.load(std::memory_order_relaxed)) {
        fail("node " + std::to_string(id) + " has no links on level " + std::to_string(l) + ", which " +
             std::to_string(on_level[l]) + " nodes share");
      }
      for (uint32_t i = 0; i < count; ++i) {
        const uint32_t n = list[i];
        const std::string where = "node " + std::to_string(id) + " level " + std::to_string(l) + ": ";
        if (n >= cap || heads[n].flags == 0) fail(where + "names a missing node " + std::to_string(n));
        if (n == id) fail(where + "links itself");
        if (heads[n].level < l) fail(where + "names node " + std::to_string(n) + " of a lower level");
        if (std::find(list.begin(), list.begin() + i, n) != list.begin() + i) fail(where + "repeats " + std::to_string(n));
      }
    }
  }
}

// Defined where Shared is complete (the unique_ptr's deleter needs it).
template <class Pool>
inline BasicHnsw<Pool>::BasicHnsw(BasicHnsw&&) noexcept = default;
template <class Pool>
inline BasicHnsw<Pool>& BasicHnsw<Pool>::operator=(BasicHnsw&&) noexcept = default;
template <class Pool>
inline BasicHnsw<Pool>::~BasicHnsw() = default;

template <class Pool>
inline BasicHnsw<Pool>::BasicHnsw(Pool& pool, SpaceId space, const HnswParams& p, const HnswLayout& l,
                                  const HnswExtentTable* extents, uint32_t format)
    : pool_(&pool),
        space_(space),
        params_(p),
        layout_(l),
        format_(format),
        dist_(vector::distance_kernel(p.metric == vector::Metric::kCosine ? vector::Metric::kInnerProduct : p.metric)),
        gather_(vector::distance_gather_kernel(p.metric == vector::Metric::kCosine ? vector::Metric::kInnerProduct
                                                                                   : p.metric)),
        shared_(std::make_unique<Shared>()) {
  CALICO_CHECK(l.per_page > 0 && l.links_base + l.per_page * l.row_bytes <= l.usable);
  CALICO_CHECK(l.lists_per_page * l.unit_bytes <= l.usable && l.max_level_cap >= 1);
  Shared& sh = *shared_;
  if (format >= HnswMeta::kFirstGrowingVersion) {
    const HnswExtentTable t = extents != nullptr ? *extents : HnswExtentTable{1, 0, {1}, {}};
    for (uint32_t e = 0; e < t.l0_count; ++e) sh.l0.grow(t.l0_base[e], extent_pages(l.l0_pages, e));
    for (uint32_t e = 0; e < t.upper_count; ++e) sh.upper.grow(t.upper_base[e], extent_pages(1, e));
    sh.capacity.store(static_cast<uint32_t>(sh.l0.end() * l.per_page), std::memory_order_release);
  } else {
    sh.l0.grow(1, l.l0_pages);
    sh.upper.open_region(l.upper_base);
    sh.capacity.store(l.capacity, std::memory_order_release);
  }
}

template <class Pool>
inline PageId BasicHnsw<Pool>::meta_page() const { return PageId(space_, 0); }

template <class Pool>
inline PageId BasicHnsw<Pool>::page_of(uint32_t id) const {
  // Level-0 extent 0 is blocks 1 .. l0_pages in every format (immutable, no map load).
  const uint32_t p = id / layout_.per_page;
  if (p < layout_.l0_pages) [[likely]] return PageId(space_, 1 + p);
  return PageId(space_, static_cast<BlockId>(shared_->l0.block(p)));
}

template <class Pool>
inline Error BasicHnsw<Pool>::duplicate(uint32_t id, const HnswRowHead& h) {
  return Error(ErrorCode::kInvalidArgument,
               "hnsw add: id " + std::to_string(id) +
                   (h.live() ? " was added before"
                             : " was removed; its slot is a tombstone until consolidate() frees it"));
}

template <class Pool>
inline void BasicHnsw<Pool>::check_state(const HnswSearchState& st) const {
  if (st.owner_ != shared_.get() || st.dim_ != params_.dim || st.M_ != params_.M) {
    throw Error(ErrorCode::kInvalidArgument, "hnsw search: the state was made for another index");
  }
}

// Copies v into out, normalised for cosine. Errors: non-finite values, zero cosine vector.
template <class Pool>
inline void BasicHnsw<Pool>::prepare_vector(const float* v, float* out, const char* what) const {
  if (!vector::all_finite(v, params_.dim)) {
    throw Error(ErrorCode::kInvalidArgument, std::string("hnsw ") + what + ": the vector has NaN or infinity");
  }
  std::memcpy(out, v, size_t{params_.dim} * 4);
  if (params_.metric == vector::Metric::kCosine && !vector::normalize(out, params_.dim)) {
    throw Error(ErrorCode::kInvalidArgument, std::string("hnsw ") + what + ": a cosine vector of norm 0");
  }
}

template <class Pool>
inline uint32_t BasicHnsw<Pool>::random_level(uint32_t id) const {
  uint64_t z = params_.seed ^ (uint64_t{id} * 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const double u = (static_cast<double>(z >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double level = std::floor(-std::log(u) / std::log(static_cast<double>(params_.M)));
  return static_cast<uint32_t>(std::min(level, static_cast<double>(layout_.max_level_cap - 1)));
}

// Reads page pid through fn(const std::byte* page) -> bool (false: the bytes break the
// format). Optimistic: retried until a validation succeeds, at most kOptimisticAttempts
// times, then pinned. Errors: kCorruptPage (`what` is malformed) when a validated or
// pinned page breaks the format; unvalidated bytes are only retried.
template <class Pool>
template <class Fn>
inline void BasicHnsw<Pool>::read_page(PageId pid, bool optimistic, HnswStats& s, const char* what, Fn&& fn) const {
  if (optimistic) {
    for (int attempt = 0; attempt < Pool::kOptimisticAttempts; ++attempt) {
      OptimisticRead r = pool_->read_optimistic(pid);
      const bool ok = fn(r.data);
      if (Pool::validate(r)) {
        if (!ok) corrupt(pid, std::string(what) + " is malformed");
        return;
      }
      ++s.retries;
    }
  }
  SharedGuard g = pool_->pin_shared(pid);
  if (!fn(g.data())) corrupt(pid, std::string(what) + " is malformed");
}

template <class Pool>
inline void BasicHnsw<Pool>::corrupt(PageId pid, const std::string& what) { corrupt_page("hnsw", what, pid); }

// Whether a metadata state (as read from the page) is usable.
template <class Pool>
// The capacity is read after the state: a validated or latched state names an entry point
// whose add published its extent before (see HnswExtentMap), so the load sees that extent.
inline bool BasicHnsw<Pool>::meta_state_ok(const HnswMetaState& ms) const {
  return ms.deleted <= ms.size &&
         (ms.entry == HnswMeta::kNone || (ms.entry < capacity() && ms.max_level < layout_.max_level_cap));
}

template <class Pool>
inline HnswMetaState BasicHnsw<Pool>::meta_state_of(const std::byte* page) {
  HnswMetaState s;
  std::memcpy(&s, page + offsetof(HnswMeta, entry), sizeof s);
  return s;
}

template <class Pool>
inline void BasicHnsw<Pool>::write_meta_state(ExclusiveGuard& g, const HnswMetaState& s) {
  std::memcpy(g.data() + offsetof(HnswMeta, entry), &s, sizeof s);
  g.mark_dirty();
}

template <class Pool>
inline HnswMetaState BasicHnsw<Pool>::read_meta_state(bool optimistic, HnswStats& s) const {
  HnswMetaState ms{};
  read_page(meta_page(), optimistic, s, "metadata state (entry point, max level)", [&](const std::byte* p) {
    hnsw_detail::hnsw_racy_copy(&ms, p + offsetof(HnswMeta, entry), sizeof ms);
    return ms.deleted <= ms.size && ms.max_level < layout_.max_level_cap;
  });
  // After the validation (meta_state_ok): an entry point in an extent grown meanwhile.
  if (!meta_state_ok(ms)) corrupt(meta_page(), "metadata state (entry point, max level) is malformed");
  return ms;
}

template <class Pool>
inline HnswRowHead BasicHnsw<Pool>::read_head(uint32_t id, bool optimistic, HnswStats& s) const {
  HnswRowHead h{};
  const uint32_t off = layout_.row_offset(id);
  read_page(page_of(id), optimistic, s, "link row head", [&](const std::byte* p) {
    hnsw_detail::hnsw_racy_copy(&h, p + off, sizeof h);
    return h.flags == 0 || (h.flags_ok() && h.level < layout_.max_level_cap &&
                            (h.level == 0) == (h.upper == HnswRowHead::kNoUpper));
  });
  return h;
}

template <class Pool>
inline auto BasicHnsw<Pool>::list_location(uint32_t id, uint32_t level, const HnswRowHead& h) const -> ListLocation {
  if (level == 0) {
    return ListLocation{page_of(id), layout_.row_offset(id), static_cast<uint32_t>(sizeof(HnswRowHead)),
                        2 * params_.M};
  }
  // h was read validated or pinned: a node named in a level-`level` list must have that level.
  if (!h.present() || !h.flags_ok() || h.level < level || h.upper == HnswRowHead::kNoUpper) {
    corrupt(page_of(id), "node " + std::to_string(id) + " is named on level " + std::to_string(level) +
                             " but its head says level " + std::to_string(h.level) + ", flags " +
                             std::to_string(h.flags));
  }
  const uint64_t page = layout_.upper_page(h.upper, level);
  const uint64_t block = page < shared_->upper.end() ? shared_->upper.block(page) : HnswExtentMap::kOpen;
  if (block >= pool_->space_blocks(space_)) {
    corrupt(page_of(id), "node " + std::to_string(id) + " has its level-" + std::to_string(level) +
                             " list in block " + std::to_string(block) + ", past the space");
  }
  return ListLocation{PageId(space_, static_cast<BlockId>(block)), layout_.upper_offset(h.upper, level), 4,
                      params_.M};
}

template <class Pool>
inline auto BasicHnsw<Pool>::list_location(uint32_t id, uint32_t level, HnswStats& s) const -> ListLocation {
  return list_location(id, level, level == 0 ? HnswRowHead{} : read_head(id, true, s));
}

// Copies node id's level-`level` list into out[0 .. 2M); returns its length.
template <class Pool>
inline uint32_t BasicHnsw<Pool>::read_links(uint32_t id, uint32_t level, bool optimistic, HnswSearchState& st,
                                            uint32_t* out) const {
  const HnswRowHead h = level == 0 ? HnswRowHead{} : read_head(id, optimistic, st.stats_);
  // An unused slot on an upper level: a slot consolidate() freed after this search read its
  // id from a list it then rewrote. It has no links (a level-0 row of an unused slot reads
  // count 0 the same way). check_structure() still reports a list naming an unused slot.
  if (level > 0 && !h.present()) return 0;
  const ListLocation loc = list_location(id, level, h);
  uint32_t count = 0;
  read_page(loc.pid, optimistic, st.stats_, "neighbour list", [&](const std::byte* p) {
    hnsw_detail::hnsw_racy_copy(&count, p + loc.offset, 4);
    if (count > loc.max) return false;
    hnsw_detail::hnsw_racy_copy(out, p + loc.offset + loc.ids_offset, size_t{count} * 4);
    return true;
  });
  // Ids past the state's capacity (checked after the validation, like meta_state_ok): a
  // branch-free test of the validated copy, then the cold path (leave_out_newer).
  const uint32_t known = st.capacity_;
  bool beyond = false;
  for (uint32_t i = 0; i < count; ++i) beyond |= out[i] >= known;
  if (beyond) [[unlikely]] count = leave_out_newer(loc.pid, id, out, count, known);
    return count;
}

// read_links' cold path: a validated list names ids at or past `known` (the state's
// capacity). Past the index's capacity the list is corrupt; else they are nodes of an extent
// grown since the search started, added since, which the search leaves out (st.visited_ has
// no mark for them). Returns the count left.
template <class Pool>
[[gnu::cold, gnu::noinline]] inline uint32_t BasicHnsw<Pool>::leave_out_newer(PageId pid, uint32_t id, uint32_t* out,
                                                                           uint32_t count, uint32_t known) const {
  const uint32_t cap = capacity();
  for (uint32_t i = 0; i < count; ++i) {
    if (out[i] >= cap) {
      corrupt(pid, "neighbour list of node " + std::to_string(id) + " names node " + std::to_string(out[i]) +
                       ", past the capacity");
    }
  }
  return static_cast<uint32_t>(std::remove_if(out, out + count, [&](uint32_t v) { return v >= known; }) - out);
}

template <class Pool>
inline void BasicHnsw<Pool>::read_vector(uint32_t id, bool optimistic, HnswSearchState& st, float* out) const {
  const uint32_t off = layout_.vector_offset(id);
  const size_t bytes = size_t{params_.dim} * 4;
  read_page(page_of(id), optimistic, st.stats_, "vector", [&](const std::byte* p) {
    hnsw_detail::hnsw_racy_copy(out, p + off, bytes);
    return true;
  });
}

template <class Pool>
inline float BasicHnsw<Pool>::distance_to(const float* q, uint32_t id, bool optimistic, HnswSearchState& st) const {
  if (optimistic) return distance_in(q, id, pool_->read_optimistic(page_of(id)), st);
  read_vector(id, false, st, st.vec_.data());
  ++st.stats_.distances;
  return ordered(dist_(q, st.vec_.data(), params_.dim));
}

// NaN (an inner product of huge finite values, or a corrupt stored vector) as +infinity:
// distances are sorted (std::sort needs a strict weak order, which NaN breaks: it may then
// read past the range).
template <class Pool>
inline float BasicHnsw<Pool>::ordered(float d) { return d != d ? std::numeric_limits<float>::infinity() : d; }

// Touches every cache line of a vector at `at` (a hint: the bytes may be anything).
template <class Pool>
inline void BasicHnsw<Pool>::prefetch_lines(const std::byte* at) const {
  const size_t bytes = size_t{params_.dim} * 4;
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(at + off);
}

// Touches every cache line of node id's level-0 link row in `frame` (its level-0 page, as
// read; a hint, like prefetch_lines).
template <class Pool>
inline void BasicHnsw<Pool>::prefetch_row(const std::byte* frame, uint32_t id) const {
  const std::byte* row = frame + layout_.row_offset(id);
  const size_t bytes = sizeof(HnswRowHead) + size_t{8} * params_.M;  // head and 2M ids
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(row + off);
  __builtin_prefetch(row + bytes - 1);  // the last line when the row straddles one more
}

// The distance of q to node id, whose page read `r` was started (read_optimistic of id's
// page), computed in place from the frame and then validated; on a failed validation the
// value (of possibly torn bytes: any float, never a fault, since frames stay mapped) is
// dropped and the vector read again (read_vector). The kernel is the optimistic reader
// here (vector/distance.h: every kernel is one, calico/optimistic_reader.h).
template <class Pool>
inline float BasicHnsw<Pool>::distance_in(const float* q, uint32_t id, const OptimisticRead& r,
                                          HnswSearchState& st) const {
  ++st.stats_.distances;
  const float* v = reinterpret_cast<const float*>(r.data + layout_.vector_offset(id));
  const float d = dist_(q, v, params_.dim);
  if (Pool::validate(r)) [[likely]] return ordered(d);
  ++st.stats_.retries;
  read_vector(id, true, st, st.vec_.data());
  return ordered(dist_(q, st.vec_.data(), params_.dim));
}

// One level of greedy descent: moves (*cur, *cur_d) to the closest neighbour on `level`
// until none is closer. Ends: (distance, id) strictly decreases over a finite set.
template <class Pool>
inline void BasicHnsw<Pool>::greedy_step(const float* q, uint32_t level, bool optimistic, bool prefetch,
                                         HnswSearchState& st, uint32_t* cur, float* cur_d) const {
  for (bool changed = true; changed;) {
    changed = false;
    const uint32_t n = read_links(*cur, level, optimistic, st, st.links_.data());
    ++st.stats_.expanded;
    auto closer = [&](uint32_t v, float d) {
      if (vector::Neighbor{d, v} < vector::Neighbor{*cur_d, *cur}) {
        *cur = v;
        *cur_d = d;
        changed = true;
      }
    };
    if (optimistic && prefetch) {
      // One group read for the whole list: larger than memory, its evicted pages are read
      // at once (one wait per hop) instead of one fault after another.
      for (uint32_t i = 0; i < n; ++i) {
        st.group_[i] = page_of(st.links_[i]);
        st.offsets_[i] = layout_.vector_offset(st.links_[i]);
      }
      pool_->read_group(std::span<const PageId>(st.group_.data(), n), std::span<const uint32_t>(st.offsets_.data(), n),
                        std::span<OptimisticRead>(st.reads_.data(), n));
      score_in_place(q, st.links_.data(), n, st, [&](uint32_t i, float d, const std::byte*) { closer(st.links_[i], d); });
    } else {
      for (uint32_t i = 0; i < n; ++i) closer(st.links_[i], distance_to(q, st.links_[i], optimistic, st));
    }
  }
}

// Scores ids[0 .. n) against q in place on their frames, read optimistically: st.reads_[i]
// is ids[i]'s page read if already started (read_group), else data == nullptr and it is
// started here. Four vectors per kernel call (gather_: four vectors loading at once), and
// the next four's reads started and their vectors prefetched before; each value is then
// validated against its own read, and recomputed from a copy on a failure.
// fn(i, distance, frame of the read) for each i in order.
template <class Pool>
template <class Fn>
inline void BasicHnsw<Pool>::score_in_place(const float* q, const uint32_t* ids, uint32_t n, HnswSearchState& st,
                                            Fn&& fn) const {
  auto start_read = [&](uint32_t i) -> const OptimisticRead& {
    OptimisticRead& r = st.reads_[i];
    if (r.data == nullptr) r = pool_->read_optimistic(page_of(ids[i]));
    return r;
  };
  for (uint32_t i = 0; i < n; i += 4) {
    const uint32_t live = std::min<uint32_t>(4, n - i);
    const float* vs[4];
    for (uint32_t j = 0; j < live; ++j) {
      vs[j] = reinterpret_cast<const float*>(start_read(i + j).data + layout_.vector_offset(ids[i + j]));
    }
    for (uint32_t j = i + 4; j < std::min<uint32_t>(i + 8, n); ++j) {
      prefetch_lines(start_read(j).data + layout_.vector_offset(ids[j]));
    }
    float d[4];
    gather_(q, vs, live, params_.dim, d);
    st.stats_.distances += live;
    for (uint32_t j = 0; j < live; ++j) {
      const OptimisticRead& r = st.reads_[i + j];
      float dj = d[j];
      if (!Pool::validate(r)) [[unlikely]] {
        ++st.stats_.retries;
        read_vector(ids[i + j], true, st, st.vec_.data());
        dj = dist_(q, st.vec_.data(), params_.dim);
      }
      fn(i + j, ordered(dj), r.data);
    }
  }
}

// Read-ahead (HnswSearchOptions::lookahead): prefetches the pages of the unvisited
// neighbours of the candidates at the first `count` heap positions (the best one, and
// some of the next best) that were not read ahead lately. Marks nothing visited: the
// candidates are expanded as usual later, their pages then resident or in flight.
template <class Pool>
inline void BasicHnsw<Pool>::read_ahead(uint32_t count, bool optimistic, HnswSearchState& st) const {
  const uint8_t epoch = st.epoch_;
  uint32_t members = 0;
  for (uint32_t j = 0; j < count && j < st.candidates_.size(); ++j) {
    const uint32_t id = st.candidates_[j].id;
    if (std::find(st.read_ahead_.begin(), st.read_ahead_.end(), id + 1) != st.read_ahead_.end()) continue;
    st.read_ahead_[st.read_ahead_next_++ % st.read_ahead_.size()] = id + 1;
    const uint32_t n = read_links(id, 0, optimistic, st, st.ahead_.data());
    for (uint32_t i = 0; i < n && members < st.group_.size(); ++i) {
      const uint32_t v = st.ahead_[i];
      if (st.mark(v) == epoch) continue;
      st.group_[members] = page_of(v);
      st.offsets_[members++] = layout_.vector_offset(v);
    }
    if (members == st.group_.size()) break;
  }
  if (members > 0) {
    pool_->prefetch_group(std::span<const PageId>(st.group_.data(), members),
                          std::span<const uint32_t>(st.offsets_.data(), members));
  }
}

// search(), first step: checks the arguments, copies the (normalised) query into st.
template <class Pool>
inline void BasicHnsw<Pool>::search_prepare(const float* q, const HnswSearchOptions& opt, HnswSearchState& st) const {
  if (opt.k == 0) throw Error(ErrorCode::kInvalidArgument, "hnsw search: k must be at least 1");
  check_state(st);
  prepare_vector(q, st.query_.data(), "search");
}

// Second step: from the metadata state `ms` (read by the caller), the greedy descent to
// level 1 and the level-0 beam's start (layer_begin). False when the index is empty.
template <class Pool>
template <class Admit>
inline bool BasicHnsw<Pool>::search_start(const HnswSearchOptions& opt, const HnswMetaState& ms, const Admit& admit,
                                          HnswSearchState& st) const {
  ++st.stats_.searches;
  if (ms.entry == HnswMeta::kNone) {
    st.results_.clear();
    return false;
  }
  st.fit(capacity());  // after ms (meta_state_ok): covers the entry point
  const float* query = st.query_.data();
  uint32_t cur = ms.entry;
  float cur_d = distance_to(query, cur, opt.optimistic, st);
  for (uint32_t l = ms.max_level; l > 0; --l) greedy_step(query, l, opt.optimistic, opt.prefetch, st, &cur, &cur_d);
  const uint8_t epoch = st.next_epoch();
  st.mark(cur) = epoch;
  st.results_.assign(1, vector::Neighbor{cur_d, cur});
  layer_begin(std::max(opt.ef, opt.k), st);
  if constexpr (!Admit::kAll) {
    // Admitted with its distance as of the head's version (a candidate in any case).
    if (!admissible(cur, nullptr, admit, st.query_.data(), &st.results_[0].distance, st)) st.results_.clear();
  }
  return true;
}

// Last step: the k nearest of st.results_ (a max-heap), ascending, into *out.
template <class Pool>
inline void BasicHnsw<Pool>::search_end(uint32_t k, HnswSearchState& st, std::vector<vector::Neighbor>* out) {
  std::sort_heap(st.results_.begin(), st.results_.end());
  const size_t n = std::min<size_t>(k, st.results_.size());
  out->assign(st.results_.begin(), st.results_.begin() + n);
}

// Beam search on `level` (Algorithm 2) from the entry set in st.results_ (distances set,
// marked visited with the current epoch). On return st.results_ is a max-heap of the ef
// closest nodes found. In steps (search_batch interleaves them): layer_begin, then
// layer_expand and layer_score in turn until layer_expand returns false.
template <class Pool>
inline void BasicHnsw<Pool>::search_layer(const float* q, uint32_t level, uint32_t ef, bool optimistic, bool prefetch,
                                          uint32_t lookahead, HnswSearchState& st) const {
  layer_begin(ef, st);
  while (layer_expand(level, ef, optimistic, prefetch, lookahead, st)) layer_score(q, level, ef, optimistic, prefetch, st);
}

// The candidate heap from the entry set in st.results_; st.results_ cut to ef.
template <class Pool>
inline void BasicHnsw<Pool>::layer_begin(uint32_t ef, HnswSearchState& st) const {
  st.read_ahead_.fill(0);
  st.pending_ = 0;
  auto& cand = st.candidates_;
  auto& res = st.results_;
  cand.assign(res.begin(), res.end());
  std::make_heap(cand.begin(), cand.end(), std::greater<>());
  std::make_heap(res.begin(), res.end());
  while (res.size() > ef) {
    std::pop_heap(res.begin(), res.end());
    res.pop_back();
  }
}

// Expands the nearest candidate: reads its list and marks its unvisited members, which wait
// in st.fresh_[0 .. st.pending_) for layer_score; on level 0 with `prefetch` their pages'
// reads are started (read_group: the resident ones' optimistic reads into st.reads_, the
// evicted ones' I/O). Returns false, with nothing pending, when the search is over: no
// candidate left, or the nearest is farther than every kept result.
template <class Pool>
inline bool BasicHnsw<Pool>::layer_expand(uint32_t level, uint32_t ef, bool optimistic, bool prefetch,
                                          uint32_t lookahead, HnswSearchState& st) const {
  auto& cand = st.candidates_;
  auto& res = st.results_;
  st.pending_ = 0;
  if (cand.empty()) return false;
  const vector::Neighbor c = cand.front();
  if (res.size() >= ef && res.front() < c) return false;  // c is farther than every kept result
  std::pop_heap(cand.begin(), cand.end(), std::greater<>());
  cand.pop_back();
  const uint32_t n = read_links(c.id, level, optimistic, st, st.links_.data());
  ++st.stats_.expanded;
  // The visited marks of a list are random words of a capacity-sized array: start them
  // all before the first test, so that their misses overlap instead of each waiting
  // behind the branch on the previous one.
  for (uint32_t i = 0; i < n; ++i) __builtin_prefetch(&st.visited_[st.links_[i]]);
  const uint8_t epoch = st.epoch_;
  uint32_t fresh = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t v = st.links_[i];
    if (st.mark(v) == epoch) continue;
    st.mark(v) = epoch;
    st.fresh_[fresh++] = v;
  }
  st.pending_ = fresh;
  if (prefetch && level == 0 && fresh > 0) {
    for (uint32_t i = 0; i < fresh; ++i) {
      st.group_[i] = page_of(st.fresh_[i]);
      st.offsets_[i] = layout_.vector_offset(st.fresh_[i]);
    }
    const std::span<const PageId> pids(st.group_.data(), fresh);
    const std::span<const uint32_t> offsets(st.offsets_.data(), fresh);
    // Optimistic: the group also starts the reads of the resident pages (st.reads_), so
    // that each page is translated once.
    const size_t issued = optimistic
                              ? pool_->read_group(pids, offsets, std::span<OptimisticRead>(st.reads_.data(), fresh))
                              : pool_->prefetch_group(pids, offsets);
    if (issued > 0 && lookahead > 0) read_ahead(lookahead, optimistic, st);
  }
  return true;
}

// Scores the members layer_expand left pending and offers each to the heaps.
// Flattened: the heap operations of `offer` stay inlined in the scoring loop (cachegrind:
// as separate calls they cost 4% more instructions per query at ef 256).
// With Admit = AdmitLive (level 0 only), v still becomes a candidate by the same rule, but
// enters the kept results only if admissible: the results bound the beam by admissible
// nodes alone, so the beam widens past removed and filtered-out regions.
template <class Pool>
template <class Admit>
inline void BasicHnsw<Pool>::layer_score(const float* q, uint32_t level, uint32_t ef, bool optimistic, bool prefetch,
                                         HnswSearchState& st, const Admit& admit) const {
  auto& cand = st.candidates_;
  auto& res = st.results_;
  const uint32_t fresh = st.pending_;
  st.pending_ = 0;
  // v becomes a candidate if it is closer than the worst kept result; a candidate is likely
  // expanded soon: its link row is started from `frame`, v's page as read (no second
  // translation; hnswlib prefetches its next candidate's list the same way; a hint: the
  // frame may have changed since, then a wasted line).
  auto offer = [&](uint32_t v, float d, const std::byte* frame, const OptimisticRead* r) {
    vector::Neighbor nb{d, v};
    if (res.size() < ef || nb < res.front()) {
      if (frame != nullptr) prefetch_row(frame, v);
      cand.push_back(nb);
      std::push_heap(cand.begin(), cand.end(), std::greater<>());
      if constexpr (!Admit::kAll) {
        if (!admissible(v, r, admit, q, &nb.distance, st)) return;
        if (res.size() >= ef && !(nb < res.front())) return;  // its distance as admitted
      }
      res.push_back(nb);
      std::push_heap(res.begin(), res.end());
      if (res.size() > ef) {
        std::pop_heap(res.begin(), res.end());
        res.pop_back();
      }
    }
  };
  if (prefetch && optimistic) {
    if (level != 0) std::fill_n(st.reads_.begin(), fresh, OptimisticRead{});  // else as read_group started them
    score_in_place(q, st.fresh_.data(), fresh, st, [&](uint32_t i, float d, const std::byte* frame) {
      offer(st.fresh_[i], d, frame, &st.reads_[i]);
    });
  } else {
    for (uint32_t i = 0; i < fresh; ++i) {
      offer(st.fresh_[i], distance_to(q, st.fresh_[i], optimistic, st), nullptr, nullptr);
    }
  }
}

// Whether node id may be a result: allowed by the filter, and live (present, no tombstone)
// in the same page version as its distance *d to q. With `r` (id's page read whose vector
// gave *d) the head is read from it and the read validated again: then both are of that
// version. Without a read, or when that validation fails (the page changed: a slot claimed,
// removed or cleared since), head and vector are read again together and *d recomputed:
// a head of one version with a distance of another could admit a node by its new head at
// the distance of the unused slot it was before.
template <class Pool>
inline bool BasicHnsw<Pool>::admissible(uint32_t id, const OptimisticRead* r, const AdmitLive& a, const float* q,
                                        float* d, HnswSearchState& st) const {
  if (a.filter != nullptr && !a.filter->allows(id)) return false;
  if (r != nullptr && r->data != nullptr) {
    uint32_t level_flags;  // {level u16, flags u16}: the head's last word
    hnsw_detail::hnsw_racy_copy(&level_flags, r->data + layout_.row_offset(id) + offsetof(HnswRowHead, level), 4);
    if (Pool::validate(*r)) return (level_flags >> 16) == HnswRowHead::kPresent;
    ++st.stats_.retries;
  }
  HnswRowHead h{};
  const uint32_t head_at = layout_.row_offset(id), vec_at = layout_.vector_offset(id);
  const size_t bytes = size_t{params_.dim} * 4;
  read_page(page_of(id), a.optimistic, st.stats_, "link row head and vector", [&](const std::byte* p) {
    hnsw_detail::hnsw_racy_copy(&h, p + head_at, sizeof h);
    hnsw_detail::hnsw_racy_copy(st.vec_.data(), p + vec_at, bytes);
    return h.flags_ok();
  });
  if (!h.live()) return false;
  ++st.stats_.distances;
  *d = ordered(dist_(q, st.vec_.data(), params_.dim));
  return true;
}

// The exact answer among the admissible nodes: every id the filter allows (every id without
// a filter) is scored, in groups whose pages are read at once (read_group) when the search
// prefetches, and the k nearest admissible ones are kept.
template <class Pool>
inline void BasicHnsw<Pool>::exact_scan(const HnswSearchOptions& opt, const AdmitLive& admit, HnswSearchState& st,
                                        std::vector<vector::Neighbor>* out) const {
  const float* q = st.query_.data();
  auto& res = st.results_;
  res.clear();
  auto offer = [&](uint32_t v, float d, const OptimisticRead* r) {
    vector::Neighbor nb{d, v};
    if (res.size() >= opt.k && !(nb < res.front())) return;
    if (!admissible(v, r, admit, q, &nb.distance, st)) return;
    if (res.size() >= opt.k && !(nb < res.front())) return;  // its distance as admitted
    res.push_back(nb);
    std::push_heap(res.begin(), res.end());
    if (res.size() > opt.k) {
      std::pop_heap(res.begin(), res.end());
      res.pop_back();
    }
  };
  const uint32_t group = static_cast<uint32_t>(std::min(st.fresh_.size(), st.group_.size()));
  uint32_t n = 0;
  auto score = [&] {
    if (opt.optimistic && opt.prefetch) {
      for (uint32_t i = 0; i < n; ++i) {
        st.group_[i] = page_of(st.fresh_[i]);
        st.offsets_[i] = layout_.vector_offset(st.fresh_[i]);
      }
      pool_->read_group(std::span<const PageId>(st.group_.data(), n), std::span<const uint32_t>(st.offsets_.data(), n),
                        std::span<OptimisticRead>(st.reads_.data(), n));
      score_in_place(q, st.fresh_.data(), n, st,
                     [&](uint32_t i, float d, const std::byte*) { offer(st.fresh_[i], d, &st.reads_[i]); });
    } else {
      for (uint32_t i = 0; i < n; ++i) offer(st.fresh_[i], distance_to(q, st.fresh_[i], opt.optimistic, st), nullptr);
    }
    n = 0;
  };
  const uint32_t cap = capacity();
  for (uint32_t id = 0; id < cap; ++id) {
    if (admit.filter != nullptr) {
      const size_t w = id / 64;
      if (w >= admit.filter->allowed.size()) break;
      const uint64_t word = admit.filter->allowed[w] >> (id % 64);
      if (word == 0) {  // skip to the next word
        id = static_cast<uint32_t>(std::min<uint64_t>((w + 1) * 64, cap)) - 1;
        continue;
      }
      if ((word & 1) == 0) {
        id += static_cast<uint32_t>(std::countr_zero(word)) - 1;
        continue;
      }
    }
    st.fresh_[n++] = id;
    if (n == group) score();
  }
  if (n > 0) score();
  std::sort_heap(res.begin(), res.end());
  out->assign(res.begin(), res.end());
}

// The heuristic (Algorithm 4, no extension, pruned connections dropped): walks `sorted`
// (ascending distance to the base vector) and keeps a candidate unless a kept one is
// closer to it than the base is; stops at m kept. The first `kept` ids of *out (kept <= m)
// stay and count as kept; the rest of *out is replaced. Kept vectors stay in st.rows_.
template <class Pool>
inline void BasicHnsw<Pool>::select_heuristic(const std::vector<vector::Neighbor>& sorted, uint32_t m,
                                              HnswSearchState& st, std::vector<uint32_t>* out, size_t kept) const {
  out->resize(kept);
  const uint32_t dim = params_.dim;
  for (size_t r = 0; r < kept; ++r) read_vector((*out)[r], true, st, st.rows_.data() + r * dim);
  for (const vector::Neighbor& c : sorted) {
    if (out->size() >= m) break;
    float* row = st.rows_.data() + out->size() * dim;
    read_vector(c.id, true, st, row);
    bool keep = true;
    for (size_t r = 0; r < out->size() && keep; ++r) {
      ++st.stats_.distances;
      keep = !(dist_(row, st.rows_.data() + r * dim, dim) < c.distance);
    }
    if (keep) out->push_back(c.id);
  }
}

// add() after the node's record is present: links node id (level `level`, vector q) on
// each of its levels, then counts it in the metadata (and makes it the entry point when it
// raised the max level). Idempotent up to the metadata step: a resumed add runs it again.
template <class Pool>
inline void BasicHnsw<Pool>::insert(uint32_t id, uint32_t level, const float* q, HnswSearchState& st) {
  HnswMetaState ms = read_meta_state(true, st.stats_);
  if (ms.entry == HnswMeta::kNone) {
    ExclusiveGuard g = pool_->pin_exclusive(meta_page());
    HnswMetaState now = meta_state_of(g.data());
    if (!meta_state_ok(now)) corrupt(meta_page(), "metadata state (entry point, max level) is malformed");
    if (now.entry == HnswMeta::kNone) {  // the first node: nothing to link
      now.entry = id;
      now.max_level = level;
      now.size += 1;
      write_meta_state(g, now);
      return;
    }
    ms = now;
  }
  // A node above the max level holds raise_mutex for its whole insertion (as hnswlib's
  // global lock), so that two such nodes are inserted one after the other and the later
  // one links the earlier one on the levels it raised: each level >= 1 with two nodes or
  // more then has every node linked there (check_structure's level rule).
  std::unique_lock<std::mutex> raising;
  if (level > ms.max_level) {
    raising = std::unique_lock(shared_->raise_mutex);
    ms = read_meta_state(true, st.stats_);
    if (level <= ms.max_level) raising.unlock();  // raised meanwhile: an ordinary insertion
  }
  // After the last read of ms (the first, the latched one or the raise's re-read), never
  // before: the entry point it names may be a node of an extent grown since an earlier
  // read, and st.visited_ is indexed by it. Covers id too (claimed before).
  st.fit(capacity());
  // Only this call makes id the entry point, after linking it: metadata naming it now is
  // corrupt (the search would start at the node itself and link it to itself).
  if (ms.entry == id) {
    corrupt(meta_page(), "the entry point is node " + std::to_string(id) + ", which is being added");
  }
  // Greedy descent through the levels above the node's. It cannot end at id: a list naming
  // id on a level above id's is reported when id's list on that level is read.
  uint32_t cur = ms.entry;
  float cur_d = distance_to(q, cur, true, st);
  for (uint32_t l = ms.max_level; l > level; --l) greedy_step(q, l, true, true, st, &cur, &cur_d);
  st.layer_.assign(1, vector::Neighbor{cur_d, cur});
  // The node's own lists first, on every level; the back links (which make it reachable)
  // only then, level 0 first: a node that any list names has its own links on each of its
  // levels, so a search that reaches it can go on from it even if this add fails part-way
  // (a node named on level 2 with an empty level-0 list would end every search through it
  // with that one result). The searches of lower levels do not read the back links of
  // higher ones, so the links are those of the interleaved order.
  std::array<std::vector<uint32_t>, HnswLayout::kMaxLevels> chosen;
  const uint32_t top = std::min(level, ms.max_level);
  for (uint32_t l = top + 1; l-- > 0;) {
    const uint8_t epoch = st.next_epoch();
    st.mark(id) = epoch;  // never find the node itself (others may link it already)
    st.results_.clear();
    for (const vector::Neighbor& n : st.layer_) {
      st.mark(n.id) = epoch;
      st.results_.push_back(n);
    }
    search_layer(q, l, params_.ef_construction, true, true, 0, st);
    st.layer_.assign(st.results_.begin(), st.results_.end());
    std::sort(st.layer_.begin(), st.layer_.end());
    select_heuristic(st.layer_, params_.M, st, &st.chosen_);
    chosen[l] = st.chosen_;  // link() reuses chosen_
    link(id, chosen[l].data(), static_cast<uint32_t>(chosen[l].size()), l, st);
  }
  for (uint32_t l = 0; l <= top; ++l) {
    for (uint32_t n : chosen[l]) link(n, &id, 1, l, st);
  }
  ExclusiveGuard g = pool_->pin_exclusive(meta_page());
  HnswMetaState now = meta_state_of(g.data());
  if (!meta_state_ok(now)) corrupt(meta_page(), "metadata state (entry point, max level) is malformed");
  now.size += 1;
  if (level > now.max_level) {
    now.entry = id;
    now.max_level = level;
  }
  write_meta_state(g, now);
}

// Hands out `level` consecutive upper-list units on one page, allocating pages as needed:
// format 3 an upper extent at a time (extent 0 one page, then doubling), formats 1 and 2 a
// page at a time after upper_base.
template <class Pool>
inline uint32_t BasicHnsw<Pool>::allocate_upper(uint32_t level) {
  std::lock_guard lock(shared_->alloc_mutex);
  HnswMetaState ms;
  {
    SharedGuard g = pool_->pin_shared(meta_page());
    ms = meta_state_of(g.data());
  }
  const uint32_t lpp = layout_.lists_per_page;
  CALICO_CHECK(level <= lpp);
  const bool growing = growable();
  if (uint64_t{ms.upper_units} > uint64_t{ms.upper_pages} * lpp ||
      (growing ? ms.upper_pages != shared_->upper.end()
               : uint64_t{layout_.upper_base} + ms.upper_pages > pool_->space_blocks(space_))) {
    corrupt(meta_page(), "metadata names " + std::to_string(ms.upper_units) + " upper units on " +
                             std::to_string(ms.upper_pages) + " pages, more than the space holds");
  }
  uint64_t u = ms.upper_units;
  if (u % lpp + level > lpp) u = (u / lpp + 1) * lpp;
  const uint64_t end = u + level;
  if (end > UINT32_MAX) throw Error(ErrorCode::kInvalidArgument, "hnsw: the upper region is full");
  const uint64_t pages = (end + lpp - 1) / lpp;
  if (growing) {
    HnswExtentMap& upper = shared_->upper;
    while (upper.end() < pages) {
      const uint32_t e = upper.count();
      if (e == HnswExtentMap::kMax) throw Error(ErrorCode::kInvalidArgument, "hnsw: the upper region is full");
      const uint64_t n = extent_pages(1, e);
      const uint32_t base = allocate_extent(n);
      ExclusiveGuard g = pool_->pin_exclusive(meta_page());
      record_extent(g, true, e, base);
      HnswMetaState now = meta_state_of(g.data());
      now.upper_pages = static_cast<uint32_t>(upper.end() + n);
      write_meta_state(g, now);  // the table and its page count in one latch
      // Units on the new pages are handed out below, after this; readers reach them only
      // through heads written after that.
      upper.grow(base, n);
    }
    ExclusiveGuard g = pool_->pin_exclusive(meta_page());
    HnswMetaState now = meta_state_of(g.data());
    CALICO_CHECK(now.upper_units == ms.upper_units);
    now.upper_units = static_cast<uint32_t>(end);
    write_meta_state(g, now);
    return static_cast<uint32_t>(u);
  }
  // The space may hold pages past the counted ones: an earlier call allocated them and
  // failed (a pool error) before the metadata counted them. No unit in them was handed
  // out, so they are still as allocate left them, all zero, and are used as they are; a
  // page that is not all zero is not such a page: the metadata is corrupt.
  uint64_t have = ms.upper_pages;
  const uint64_t left = pool_->space_blocks(space_) - layout_.upper_base;
  for (; have < pages && have < left; ++have) {
    const PageId pid(space_, static_cast<BlockId>(layout_.upper_base + have));
    SharedGuard g = pool_->pin_shared(pid);
    const std::byte* p = g.data();
    if (!std::all_of(p, p + pool_->usable_page_size(), [](std::byte b) { return b == std::byte{0}; })) {
      corrupt(meta_page(), "metadata counts " + std::to_string(ms.upper_pages) + " upper pages, but page " +
                               std::to_string(pid.block()) + " after them holds data");
    }
  }
  for (; have < pages; ++have) {
    ExclusiveGuard g = pool_->allocate(space_);  // zeroed: empty lists
    if (g.page_id().block() != uint64_t{layout_.upper_base} + have) {
      // The space grew under us (only this object allocates in it, under upper_mutex).
      corrupt(meta_page(), "upper page " + std::to_string(layout_.upper_base + have) +
                               " was expected next, but the space ends at " + std::to_string(g.page_id().block()));
    }
  }
  ExclusiveGuard g = pool_->pin_exclusive(meta_page());
  HnswMetaState now = meta_state_of(g.data());
  CALICO_CHECK(now.upper_units == ms.upper_units && now.upper_pages == ms.upper_pages);
  now.upper_units = static_cast<uint32_t>(end);
  now.upper_pages = static_cast<uint32_t>(std::max<uint64_t>(ms.upper_pages, pages));
  write_meta_state(g, now);
  return static_cast<uint32_t>(u);
}

// Writes node id's record (vector, head, empty list) under its page's latch.
template <class Pool>
inline void BasicHnsw<Pool>::claim(uint32_t id, uint32_t level, uint32_t upper, const float* v) {
  ExclusiveGuard g = pool_->pin_exclusive(page_of(id));
  HnswRowHead h;
  std::memcpy(&h, g.data() + layout_.row_offset(id), sizeof h);
  if (h.present()) throw duplicate(id, h);
  std::memcpy(g.data() + layout_.vector_offset(id), v, size_t{params_.dim} * 4);
  h = HnswRowHead{0, upper, static_cast<uint16_t>(level), HnswRowHead::kPresent};
  std::memcpy(g.data() + layout_.row_offset(id), &h, sizeof h);
  g.mark_dirty();
}

// Merges ids[0 .. n) into node's level-`level` list (see the file comment): appended while
// there is room; else node's list plus ids is cut to the list's maximum by the heuristic
// around node's vector, computed from a snapshot without a latch and written only if the
// list still equals the snapshot.
template <class Pool>
inline void BasicHnsw<Pool>::link(uint32_t node, const uint32_t* ids, uint32_t n, uint32_t level, HnswSearchState& st) {
  const ListLocation loc = list_location(node, level, st.stats_);
  for (uint32_t attempt = 0; attempt < kMaxLinkAttempts; ++attempt) {
    uint32_t count;
    {
      ExclusiveGuard g = pool_->pin_exclusive(loc.pid);
      std::byte* list = g.data() + loc.offset;
      std::memcpy(&count, list, 4);
      if (count > loc.max) corrupt(loc.pid, "neighbour list of node " + std::to_string(node) + " holds " +
                                                std::to_string(count) + " ids, more than " + std::to_string(loc.max));
      std::memcpy(st.snapshot_.data(), list + loc.ids_offset, size_t{count} * 4);
      for (uint32_t i = 0; i < count; ++i) {
        if (st.snapshot_[i] >= capacity()) {
          corrupt(loc.pid, "neighbour list of node " + std::to_string(node) + " names node " +
                               std::to_string(st.snapshot_[i]) + ", past the capacity");
        }
      }
      st.merged_.assign(st.snapshot_.begin(), st.snapshot_.begin() + count);
      for (uint32_t i = 0; i < n; ++i) {
        CALICO_DCHECK(ids[i] != node);
        if (std::find(st.merged_.begin(), st.merged_.end(), ids[i]) == st.merged_.end()) st.merged_.push_back(ids[i]);
      }
      if (st.merged_.size() == count) return;  // every id is there already
      if (st.merged_.size() <= loc.max) {
        write_list(g, loc, st.merged_);
        return;
      }
    }
    // Overflow: shrink st.merged_ around node's vector (reads other pages: no latch held).
    shrink(node, loc.max, st);
    ExclusiveGuard g = pool_->pin_exclusive(loc.pid);
    const std::byte* list = g.data() + loc.offset;
    uint32_t now;
    std::memcpy(&now, list, 4);
    if (now == count && std::memcmp(list + loc.ids_offset, st.snapshot_.data(), size_t{count} * 4) == 0) {
      write_list(g, loc, st.chosen_);
      return;
    }
  }
  throw Error(ErrorCode::kRestartLimit, "hnsw: the list of node " + std::to_string(node) + " changed " +
                                            std::to_string(kMaxLinkAttempts) + " times during an update");
}

template <class Pool>
inline void BasicHnsw<Pool>::write_list(ExclusiveGuard& g, const ListLocation& loc, const std::vector<uint32_t>& ids) {
  CALICO_CHECK(ids.size() <= loc.max);
  const uint32_t count = static_cast<uint32_t>(ids.size());
  std::memcpy(g.data() + loc.offset, &count, 4);
  std::memcpy(g.data() + loc.offset + loc.ids_offset, ids.data(), size_t{count} * 4);
  g.mark_dirty();
}

// st.merged_ (node's list plus new ids) -> st.chosen_, at most max ids, by the heuristic.
template <class Pool>
inline void BasicHnsw<Pool>::shrink(uint32_t node, uint32_t max, HnswSearchState& st, size_t kept) const {
  // node's own vector goes to the last row of st.rows_ (rows 0 .. max - 1 hold kept ones).
  float* node_vec = st.rows_.data() + size_t{2 * params_.M} * params_.dim;
  read_vector(node, true, st, node_vec);
  st.shrink_.clear();
  for (size_t i = kept; i < st.merged_.size(); ++i) {
    st.shrink_.push_back(vector::Neighbor{distance_to(node_vec, st.merged_[i], true, st), st.merged_[i]});
  }
  std::sort(st.shrink_.begin(), st.shrink_.end());
  st.chosen_.assign(st.merged_.begin(), st.merged_.begin() + static_cast<std::ptrdiff_t>(kept));
  select_heuristic(st.shrink_, max, st, &st.chosen_, kept);
}

}  // namespace calico::index
