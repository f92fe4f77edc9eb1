// BasicMapped<Index>'s member definitions: the declaration and its contract (the steps of an
// upsert, why a search never misses an upserted id, the locking rule) are in
// include/calico/index/mapped_index.h. Included at its end (through
// calico/detail/mapped_index_impl.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "calico/checks.h"
#include "calico/error.h"
#include "calico/index/mapped_index.h"
#include "vector/distance.h"

namespace calico::index {

namespace mapped_detail {

// The message of e without its "kCode: " prefix (what() repeats the code's name).
inline std::string message_of(const Error& e) {
  const std::string w = e.what();
  const size_t colon = w.find(": ");
  return colon == std::string::npos ? w : w.substr(colon + 2);
}

// A read section for one scope.
class Section {
 public:
  explicit Section(ReadSections& s) : s_(s), t_(s.enter()) {}
  ~Section() { s_.leave(t_); }
  Section(const Section&) = delete;
  Section& operator=(const Section&) = delete;

 private:
  ReadSections& s_;
  ReadSections::Ticket t_;
};

}  // namespace mapped_detail

template <class Index>
inline MappedSearchState<Index>::MappedSearchState(const BasicMapped<Index>& m) : index_(m.index()) {}

template <class Index>
inline auto BasicMapped<Index>::attach(Pool& pool, std::string_view name, Index index) -> BasicMapped {
  if (Map::exists(pool, name)) {
    try {
      Map m = Map::open(pool, name);
      if (m.ready()) return BasicMapped(std::move(index), std::move(m));
    } catch (const Error& e) {
      // A migration that crashed before it created the tree's space: built again below.
      if (e.code() != ErrorCode::kUnknownSpace) throw;
    }
  }
  // No map (an index written before maps existed, or a new one), or a migration that did
  // not finish: (re)build it from the index, and mark it ready last.
  Map::drop(pool, name);
  Map m = Map::create(pool, name);
  migrate(index, m);
  m.mark_ready();
  return BasicMapped(std::move(index), std::move(m));
}

template <class Index>
inline void BasicMapped<Index>::migrate(Index& index, Map& map) {
  std::vector<uint32_t> live;
  Core::live_slots(index, [&](uint32_t s) { live.push_back(s); });
  if (live.empty()) return;
  // Identity: slot s keeps id s. Slots are handed out in order from 0 on a new map, so
  // allocating through the largest live slot makes each live slot's entry exist.
  for (uint64_t s = 0; s <= live.back(); ++s) {
    const uint32_t got = map.allocate_slot(Core::kSlotLimit);
    CALICO_CHECK(got == s);
  }
  for (const uint32_t s : live) {
    map.set_id(s, s);
    map.bind(s, s);
  }
}

template <class Index>
inline BasicMapped<Index>::BasicMapped(Index index, Map map)
    : index_(std::move(index)), shared_(std::make_unique<Shared>(std::move(map))) {
  if constexpr (Core::kConsolidates) {
    // Slots handed out and not bound: the tombstones, and free slots not yet listed (an
    // upper bound; see "Automatic consolidation").
    const uint64_t end = shared_->map.slot_end(), bound = shared_->map.size();
    shared_->tombstones.store(end > bound ? end - bound : 0, std::memory_order_relaxed);
  }
}

template <class Index>
inline uint32_t BasicMapped<Index>::dim() const { return Core::dim(index_); }

template <class Index>
inline uint64_t BasicMapped<Index>::size() const { return Core::size(index_); }

template <class Index>
inline bool BasicMapped<Index>::contains(uint64_t id) const {
  uint32_t s;
  return shared_->map.slot_of(id, &s);
}

template <class Index>
inline unsigned BasicMapped<Index>::lock_of(uint64_t id) {
  static_assert(kIdLocks == 64, "lock_of takes the top 6 bits of a Fibonacci hash");
  return static_cast<unsigned>((id * 0x9E3779B97F4A7C15ull) >> 58);
}

template <class Index>
inline void BasicMapped<Index>::check_rows(std::span<const uint64_t> ids, const float* rows,
                                           std::span<const uint32_t> labels) const {
  if (!labels.empty() && labels.size() != ids.size()) {
    throw Error(ErrorCode::kInvalidArgument, std::string(Core::kKind) + " add: labels holds " +
                                                 std::to_string(labels.size()) + " labels for " +
                                                 std::to_string(ids.size()) + " rows (one per row, or none)");
  }
  const uint32_t d = dim();
  const bool cosine = Core::metric(index_) == vector::Metric::kCosine;
  std::unordered_set<uint64_t> seen;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string at = std::string(Core::kKind) + " add: id " + std::to_string(ids[i]) + " (row " +
                           std::to_string(i) + ")";
    if (ids[i] == kNoId) throw Error(ErrorCode::kInvalidArgument, at + " is 2^64 - 1, the reserved id");
    if (ids.size() > 1 && !seen.insert(ids[i]).second) throw Error(ErrorCode::kInvalidArgument, at + " is given twice");
    const float* r = rows + i * d;
    if (!vector::all_finite(r, d)) throw Error(ErrorCode::kInvalidArgument, at + ": the vector holds NaN or infinity");
    if (cosine && std::all_of(r, r + d, [](float x) { return x == 0; })) {
      throw Error(ErrorCode::kInvalidArgument, at + ": the vector is zero (no cosine distance)");
    }
  }
}

// Steps (1)-(5) of an upsert (see the header comment); returns the replaced slot and its
// label, if id was present.
template <class Index>
inline auto BasicMapped<Index>::upsert_row(uint64_t id, const float* v, AddMode mode, std::optional<uint32_t> label)
    -> std::optional<Replaced> {
  Map& map = shared_->map;
  std::lock_guard lock(shared_->id_locks[lock_of(id)]);
  typename Map::Binding old;
  const bool present = map.binding_of(id, &old);  // (1)
  if (present && mode == AddMode::kInsert) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(Core::kKind) + " add: id " + std::to_string(id) + " is in the index (insert only)");
  }
  const uint32_t s = map.allocate_slot(Core::kSlotLimit);  // (2)
  try {
    Core::add(index_, s, v);  // (3)
  } catch (const Error& e) {
    // The slot is reused unless the index kept a failed add in it (HNSW); nothing is bound.
    try {
      if (Core::add_left_nothing(index_, s)) map.free_slot(s);
    } catch (const std::exception&) {
    }
    throw Error(e.code(), std::string(Core::kKind) + " add: id " + std::to_string(id) + " (slot " + std::to_string(s) +
                              "): " + mapped_detail::message_of(e),
                e.page());
  }
  try {
    if (label) map.add_label(*label, s);  // (3L)
    map.set_id(s, id);                    // (4)
    map.bind(id, s, label);               // (5): the commit point
  } catch (...) {
    // Take the row out again: no binding changed. A second error here leaves the slot
    // live in the index (never handed out again); its entry, if cleared, hides it from
    // every search. The label entry goes before the slot (see "Labels").
    try {
      map.set_id(s, kNoId);
      if (label) map.erase_label(*label, s);
      Core::remove(index_, std::span<const uint32_t>(&s, 1));
    } catch (const std::exception&) {
    }
    throw;
  }
  if (!present) return std::nullopt;
  return Replaced{old.slot, old.label};
}

// Step (6): after a grace period, the replaced slots' entries are cleared, their label
// entries removed, and the slots removed from the index (one call).
template <class Index>
inline void BasicMapped<Index>::retire(std::vector<Replaced>& replaced) {
  if (replaced.empty()) return;
  shared_->sections.wait_for_earlier();
  std::vector<uint32_t> slots;
  slots.reserve(replaced.size());
  for (const Replaced& r : replaced) {
    shared_->map.set_id(r.slot, kNoId);
    if (r.label) shared_->map.erase_label(*r.label, r.slot);
    slots.push_back(r.slot);
  }
  Core::remove(index_, slots);
  if constexpr (Core::kConsolidates) shared_->tombstones.fetch_add(slots.size(), std::memory_order_relaxed);
  replaced.clear();
}

template <class Index>
inline void BasicMapped<Index>::add(std::span<const uint64_t> ids, const float* rows, unsigned threads, AddMode mode,
                                    std::span<const uint32_t> labels) {
  check_rows(ids, rows, labels);
  if (ids.empty()) return;
  add_rows(ids, rows, threads, mode, labels);
  maybe_consolidate("add");
}

template <class Index>
inline void BasicMapped<Index>::add_rows(std::span<const uint64_t> ids, const float* rows, unsigned threads,
                                         AddMode mode, std::span<const uint32_t> labels) {
  std::shared_lock writing(shared_->writers);
  const uint32_t d = dim();
  std::vector<Replaced> replaced;
  std::mutex replaced_mu;
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  auto work = [&] {
    try {
      for (size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < ids.size();) {
        const std::optional<uint32_t> label = labels.empty() ? std::nullopt : std::optional(labels[i]);
        const std::optional<Replaced> old = upsert_row(ids[i], rows + i * d, mode, label);
        if (old) {
          std::lock_guard l(replaced_mu);
          replaced.push_back(*old);
        }
      }
    } catch (...) {
      std::lock_guard l(replaced_mu);
      if (!error) error = std::current_exception();
      failed.store(true, std::memory_order_relaxed);
    }
  };
  const auto n = static_cast<unsigned>(std::min<size_t>(std::max(1u, threads), ids.size()));
  {
    std::vector<std::jthread> workers;
    for (unsigned w = 1; w < n; ++w) workers.emplace_back(work);
    work();
  }
  // The committed rows' replaced slots go whether or not a row failed.
  try {
    retire(replaced);
  } catch (...) {
    if (!error) throw;
  }
  if (error) std::rethrow_exception(error);
}

template <class Index>
inline std::vector<uint64_t> BasicMapped<Index>::add_numbered(const float* rows, uint64_t n, unsigned threads,
                                                              std::span<const uint32_t> labels) {
  std::lock_guard numbering(shared_->numbering);
  std::vector<uint64_t> ids;
  for (uint64_t next = size(); ids.size() < n; ++next) {
    if (next == kNoId) {
      throw Error(ErrorCode::kInvalidArgument, std::string(Core::kKind) + " add: no " + std::to_string(n) +
                                                   " free ids from " + std::to_string(size()) + " up");
    }
    if (!contains(next)) ids.push_back(next);
  }
  add(ids, rows, threads, AddMode::kInsert, labels);
  return ids;
}

template <class Index>
inline void BasicMapped<Index>::remove(std::span<const uint64_t> ids) {
  remove_rows(ids);
  maybe_consolidate("delete");
}

template <class Index>
inline void BasicMapped<Index>::remove_rows(std::span<const uint64_t> ids) {
  Map& map = shared_->map;
  std::unordered_set<uint64_t> seen;
  std::vector<unsigned> locks;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!seen.insert(ids[i]).second) {
      throw Error(ErrorCode::kInvalidArgument, std::string(Core::kKind) + " delete: id " + std::to_string(ids[i]) +
                                                   " (element " + std::to_string(i) + ") is given twice");
    }
    locks.push_back(lock_of(ids[i]));
  }
  std::sort(locks.begin(), locks.end());
  locks.erase(std::unique(locks.begin(), locks.end()), locks.end());
  // A batch under more than half of the id locks takes `writers` exclusively instead: no
  // other add or remove runs then, so it needs no id lock, and a thread never holds more
  // than a few mutexes (ThreadSanitizer tracks at most 64 held at once by one thread).
  std::shared_lock shared_hold(shared_->writers, std::defer_lock);
  std::unique_lock exclusive_hold(shared_->writers, std::defer_lock);
  std::vector<std::unique_lock<std::mutex>> held;  // ascending lock index: the lock order
  if (locks.size() > kIdLocks / 2) {
    exclusive_hold.lock();
  } else {
    shared_hold.lock();
    held.reserve(locks.size());
    for (const unsigned l : locks) held.emplace_back(shared_->id_locks[l]);
  }
  // Every id checked under its lock before anything is written.
  std::vector<typename Map::Binding> bound(ids.size());
  std::vector<uint32_t> slots(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!map.binding_of(ids[i], &bound[i])) {
      throw Error(ErrorCode::kInvalidArgument, std::string(Core::kKind) + " delete: id " + std::to_string(ids[i]) +
                                                   " (element " + std::to_string(i) + ") is not in the index");
    }
    slots[i] = bound[i].slot;
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    map.unbind(ids[i]);  // the commit point of the id's removal
    map.set_id(slots[i], kNoId);
    if (bound[i].label) map.erase_label(*bound[i].label, slots[i]);  // before the slot goes
  }
  if (slots.empty()) return;
  Core::remove(index_, slots);
  if constexpr (Core::kConsolidates) shared_->tombstones.fetch_add(slots.size(), std::memory_order_relaxed);
}

template <class Index>
inline uint32_t BasicMapped<Index>::consolidate()
  requires Core::kConsolidates
{
  std::unique_lock writing(shared_->writers);
  return consolidate_locked();
}

// Pre: `writers` held exclusively, so every tombstone is counted and none is added meanwhile.
template <class Index>
inline uint32_t BasicMapped<Index>::consolidate_locked()
  requires Core::kConsolidates
{
  const uint32_t freed = Core::consolidate(index_);
  shared_->tombstones.store(0, std::memory_order_relaxed);  // consolidate freed them all
  // A label filter made before may hold a bit of a slot freed here: it must not name
  // another id while the filter lives ("Labels" in the header), so the freed slots are
  // handed out only after the sections that began before now have ended (the caller is in
  // no read section: consolidate() and maybe_consolidate() are called outside one).
  shared_->sections.wait_for_earlier();
  shared_->map.refill_free([&](uint32_t s) { return Core::unused(index_, s); });
  return freed;
}

template <class Index>
inline void BasicMapped<Index>::set_auto_consolidate(double fraction, uint64_t min_tombstones)
  requires Core::kConsolidates
{
  if (!(fraction >= 0) || !std::isfinite(fraction)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(Core::kKind) + " auto consolidate: fraction " +
                                                 std::to_string(fraction) + " is not a finite number >= 0");
  }
  shared_->auto_fraction.store(fraction, std::memory_order_relaxed);
  shared_->auto_min.store(min_tombstones, std::memory_order_relaxed);
}

template <class Index>
inline bool BasicMapped<Index>::consolidation_due() const {
  const double fraction = shared_->auto_fraction.load(std::memory_order_relaxed);
  if (fraction <= 0) return false;
  const uint64_t t = shared_->tombstones.load(std::memory_order_relaxed);
  return t > 0 && t >= shared_->auto_min.load(std::memory_order_relaxed) &&
         static_cast<double>(t) >= fraction * static_cast<double>(size());
}

// The end of a successful add() or remove() (`op` names it), with no lock of this object
// held: see "Automatic consolidation".
template <class Index>
inline void BasicMapped<Index>::maybe_consolidate(const char* op) {
  if constexpr (Core::kConsolidates) {
    if (!consolidation_due()) return;
    std::unique_lock writing(shared_->writers);
    if (!consolidation_due()) return;  // another call consolidated meanwhile
    try {
      consolidate_locked();
    } catch (const Error& e) {
      throw Error(e.code(),
                  std::string(Core::kKind) + " " + op +
                      ": the call's rows committed, but the automatic consolidate() after it failed (the index "
                      "stays searchable; the next due call retries): " + mapped_detail::message_of(e),
                  e.page());
    }
  }
}

template <class Index>
inline std::optional<uint32_t> BasicMapped<Index>::label(uint64_t id) const {
  typename Map::Binding b;
  if (!shared_->map.binding_of(id, &b)) return std::nullopt;
  return b.label;
}

template <class Index>
inline SlotFilter BasicMapped<Index>::filter(std::span<const uint64_t> ids) const {
  SlotFilter f(shared_->sections);  // the section first: the slots read below stay live
  for (const uint64_t id : ids) {
    uint32_t s;
    if (shared_->map.slot_of(id, &s)) f.allow(s);
  }
  return f;
}

template <class Index>
inline SlotFilter BasicMapped<Index>::filter_labels(std::span<const uint32_t> labels) const {
  std::vector<uint32_t> wanted(labels.begin(), labels.end());
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  SlotFilter f(shared_->sections);  // the section first: see "Labels" in the header
  for (const uint32_t l : wanted) shared_->map.for_each_slot_of(l, [&](uint32_t s) { f.allow(s); });
  return f;
}

template <class Index>
inline SlotFilter BasicMapped<Index>::filter(std::span<const uint64_t> ids, std::span<const uint32_t> labels) const {
  std::vector<uint32_t> wanted(labels.begin(), labels.end());
  std::sort(wanted.begin(), wanted.end());
  SlotFilter f(shared_->sections);
  for (const uint64_t id : ids) {
    typename Map::Binding b;
    if (shared_->map.binding_of(id, &b) && b.label && std::binary_search(wanted.begin(), wanted.end(), *b.label)) {
      f.allow(b.slot);
    }
  }
  return f;
}

template <class Index>
inline void BasicMapped<Index>::search(const float* q, const Options& opt, State& st,
                                       std::vector<MappedNeighbor>* out) const {
  mapped_detail::Section section(shared_->sections);
  search_in(q, opt, st, out, nullptr);
}

template <class Index>
inline void BasicMapped<Index>::search(const float* q, const Options& opt, State& st, std::vector<MappedNeighbor>* out,
                                       const SlotFilter& filter) const {
  const vector::IdFilter f = filter.slots();  // the filter holds the section
  search_in(q, opt, st, out, &f);
}

// Maps the index's results (ascending (distance, slot), `asked` of them asked for) to ids
// into *out: the first slot of an id is its nearest; unbound slots are dropped. Returns
// whether *out is final: k ids, or the index had no more to give.
template <class Index>
inline bool BasicMapped<Index>::collect(const std::vector<vector::Neighbor>& slots, uint32_t k, uint32_t asked,
                                        std::vector<MappedNeighbor>* out) const {
  const Map& map = shared_->map;
  out->clear();
  const uint32_t end = map.slot_end();
  for (const vector::Neighbor& n : slots) {
    if (n.id >= end) continue;  // not a slot this map handed out: never bound
    const uint64_t id = map.id_of(n.id);
    if (id == kNoId) continue;  // being added, being retired, or a failed add
    if (std::none_of(out->begin(), out->end(), [id](const MappedNeighbor& m) { return m.id == id; })) {
      out->push_back({n.distance, id});
    }
  }
  const bool done = out->size() >= k || slots.size() < asked;
  if (done) {
    std::sort(out->begin(), out->end());
    if (out->size() > k) out->resize(k);
  }
  return done;
}

template <class Index>
inline void BasicMapped<Index>::search_in(const float* q, const Options& opt, State& st,
                                          std::vector<MappedNeighbor>* out, const vector::IdFilter* filter) const {
  const uint32_t k = Core::k(opt);
  uint32_t want = k;
  for (uint32_t round = 0;; ++round) {
    Core::search(index_, q, Core::with_k(opt, want), st.index_, &st.slots_, filter);
    if (collect(st.slots_, k, want, out)) return;
    if (round + 1 == kMaxFetchRounds || want > UINT32_MAX / 2) break;
    want *= 2;
  }
  std::sort(out->begin(), out->end());
}

template <class Index>
inline void BasicMapped<Index>::search_batch(std::span<const float* const> queries, const Options& opt,
                                             std::span<State* const> states,
                                             std::span<std::vector<MappedNeighbor>> out) const
  requires Core::kBatches
{
  if (states.size() < queries.size() || out.size() < queries.size()) {
    throw Error(ErrorCode::kInvalidArgument, std::string(Core::kKind) + " search_batch: " +
                                                 std::to_string(queries.size()) + " queries, " +
                                                 std::to_string(states.size()) + " states, " +
                                                 std::to_string(out.size()) + " outputs");
  }
  mapped_detail::Section section(shared_->sections);
  std::vector<typename Core::State*> core_states(queries.size());
  std::vector<std::vector<vector::Neighbor>> slots(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    core_states[i] = &states[i]->index_;
    slots[i].swap(states[i]->slots_);  // reuse each state's buffer
  }
  try {
    Core::search_batch(index_, queries, opt, core_states, slots);
  } catch (...) {
    for (size_t i = 0; i < queries.size(); ++i) slots[i].swap(states[i]->slots_);
    throw;
  }
  for (size_t i = 0; i < queries.size(); ++i) {
    slots[i].swap(states[i]->slots_);
    if (!collect(states[i]->slots_, Core::k(opt), Core::k(opt), &out[i])) {
      search_in(queries[i], opt, *states[i], &out[i], nullptr);  // duplicates: again, alone
    }
  }
}

template <class Index>
inline uint64_t BasicMapped<Index>::check_structure() const {
  auto fail = [](const std::string& what) { throw std::logic_error(std::string(Core::kKind) + " id map: " + what); };
  Core::check(index_);
  const Map& map = shared_->map;
  const uint64_t ids = map.check();
  std::vector<uint32_t> unbound_ok = Core::unbound_ok(index_);
  std::sort(unbound_ok.begin(), unbound_ok.end());
  std::vector<uint32_t> live;
  Core::live_slots(index_, [&](uint32_t s) { live.push_back(s); });
  const uint32_t end = map.slot_end();
  for (const uint32_t s : live) {
    if ((s >= end || map.id_of(s) == kNoId) && !std::binary_search(unbound_ok.begin(), unbound_ok.end(), s)) {
      fail("slot " + std::to_string(s) + " is live in the index but bound to no id");
    }
  }
  map.for_each([&](uint64_t id, uint32_t slot) {
    if (!std::binary_search(live.begin(), live.end(), slot)) {
      fail("id " + std::to_string(id) + " is bound to slot " + std::to_string(slot) + ", which the index does not hold");
    }
  });
  return ids;
}

}  // namespace calico::index
