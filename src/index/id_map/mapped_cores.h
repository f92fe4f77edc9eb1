// MappedCore<Index>: what BasicMapped (calico/index/mapped_index.h) needs of the index it
// composes with an id map, for BasicHnsw, BasicIvf and BasicCodedHnsw: the index's calls in terms of slots
// (its u32 ids), and the few places where the two differ (removal in batches, which slots
// are live, the structure check). Everything else is BasicMapped's one piece of code.
//
// Members of a MappedCore<Index>:
//   Pool, Options, State                the index's pool, search options and search state
//   kKind, kSlotLimit, kConsolidates    a name for errors, slots below it, consolidate()
//   dim, metric, size, add, remove, search, with_k, k; search_batch when kBatches
//   live_slots(index, fn)   fn(slot) for every slot that holds a live row (a migration's
//                           bindings, the check's bijection); each slot once
//   unused(index, slot)     the slot holds nothing and may be handed out again (HNSW: not
//                           present, not a tombstone; only after consolidate())
//   check(index)            the index's own whole-structure check
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "calico/index/coded_hnsw.h"
#include "calico/index/hnsw.h"
#include "calico/index/ivf.h"

namespace calico::index {

template <class Index>
struct MappedCore;

// What the cores of BasicHnsw and BasicCodedHnsw share: both are graphs over u32 slots whose
// removed nodes stay as tombstones until consolidate() frees them, with the same calls.
template <class I, class P, class O, class S>
struct GraphMappedCore {
  using Index = I;
  using Pool = P;
  using Options = O;
  using State = S;
  static constexpr uint64_t kSlotLimit = Index::kMaxCapacity;
  static constexpr bool kConsolidates = true;

  static uint32_t dim(const Index& x) { return x.dim(); }
  static vector::Metric metric(const Index& x) { return x.params().metric; }
  static uint64_t size(const Index& x) { return x.size(); }
  static void add(Index& x, uint32_t slot, const float* v) { x.add(slot, v); }
  // Whether a slot whose add() threw holds nothing (the slot may be handed out again).
  static bool add_left_nothing(const Index& x, uint32_t slot) { return unused(x, slot); }
  static void remove(Index& x, std::span<const uint32_t> slots) {
    for (const uint32_t s : slots) x.remove(s);
  }
  static void search(const Index& x, const float* q, const Options& opt, State& st, std::vector<vector::Neighbor>* out,
                     const vector::IdFilter* filter) {
    if (filter) {
      x.search(q, opt, st, out, *filter);
    } else {
      x.search(q, opt, st, out);
    }
  }
  static Options with_k(Options o, uint32_t k) {
    o.k = k;
    return o;
  }
  static uint32_t k(const Options& o) { return o.k; }
  template <class Fn>
  static void live_slots(const Index& x, Fn&& fn) {
    const uint32_t cap = x.capacity();
    for (uint32_t s = 0; s < cap; ++s) {
      if (x.contains(s)) fn(s);
    }
  }
  static bool unused(const Index& x, uint32_t slot) {
    return slot >= x.capacity() || (!x.contains(slot) && !x.removed(slot));
  }
  // Slots present in the index that no id needs to name: adds that failed after the node
  // became present (its slot was never bound; BasicMapped hides it).
  static std::vector<uint32_t> unbound_ok(const Index& x) { return x.failed_adds(); }
  static void check(const Index& x) { x.check_structure(); }
  static uint32_t consolidate(Index& x) { return x.consolidate(); }
};

template <class P>
struct MappedCore<BasicHnsw<P>> : GraphMappedCore<BasicHnsw<P>, P, HnswSearchOptions, HnswSearchState> {
  static constexpr const char* kKind = "hnsw";
  static constexpr bool kBatches = true;
  static void search_batch(const BasicHnsw<P>& x, std::span<const float* const> qs, const HnswSearchOptions& opt,
                           std::span<HnswSearchState* const> states, std::span<std::vector<vector::Neighbor>> out) {
    x.search_batch(qs, opt, states, out);
  }
};

template <class P>
struct MappedCore<BasicCodedHnsw<P>>
    : GraphMappedCore<BasicCodedHnsw<P>, P, CodedHnswSearchOptions, CodedHnswSearchState> {
  static constexpr const char* kKind = "coded hnsw";
  static constexpr bool kBatches = false;
};

template <class P>
struct MappedCore<BasicIvf<P>> {
  using Index = BasicIvf<P>;
  using Pool = P;
  using Options = IvfSearchOptions;
  using State = IvfSearchState;
  static constexpr const char* kKind = "ivf";
  static constexpr uint64_t kSlotLimit = UINT32_MAX;  // BasicIdMap::kNoSlot is never a slot
  static constexpr bool kConsolidates = false;
  static constexpr bool kBatches = false;

  static uint32_t dim(const Index& x) { return x.dim(); }
  static vector::Metric metric(const Index& x) { return x.metric(); }
  static uint64_t size(const Index& x) { return x.size(); }
  static void add(Index& x, uint32_t slot, const float* v) { x.add(slot, v); }
  // BasicIvf::add writes nothing when it throws.
  static bool add_left_nothing(const Index&, uint32_t) { return true; }
  // One call: BasicIvf::remove reads the whole index once per call.
  static void remove(Index& x, std::span<const uint32_t> slots) { x.remove(slots.data(), slots.size()); }
  static void search(const Index& x, const float* q, const Options& opt, State& st, std::vector<vector::Neighbor>* out,
                     const vector::IdFilter* filter) {
    if (filter) {
      x.search(q, opt, st, out, *filter);
    } else {
      x.search(q, opt, st, out);
    }
  }
  static Options with_k(Options o, uint32_t k) {
    o.k = k;
    return o;
  }
  static uint32_t k(const Options& o) { return o.k; }
  // Every list's rows; a slot with several rows (an index written before the map, whose
  // ids repeated) once.
  template <class Fn>
  static void live_slots(const Index& x, Fn&& fn) {
    std::vector<uint32_t> all, ids;
    for (uint32_t l = 0; l < x.nlist(); ++l) {
      x.list_ids(l, &ids);
      all.insert(all.end(), ids.begin(), ids.end());
    }
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    for (const uint32_t s : all) fn(s);
  }
  static std::vector<uint32_t> unbound_ok(const Index&) { return {}; }
  static void check(const Index& x) { x.verify(); }
};

}  // namespace calico::index
