// The translation policy: how BasicBufferPool<Translation> finds a page's entry word, as one
// C++20 concept, and the optional capabilities a policy may declare, in one place.
// src/translation/README.md says what each requirement means, which policy has which
// capability, and which paper section each reproduces; translation/array/array.h is the reference.
//
// A policy is a struct of compile-time constants and one per-space Table type:
//
//   struct SomeTranslation {
//     static constexpr std::string_view kName = "...";   // the variant's name (variants.h)
//     using Table = ...;                  // per space, TranslationTable below
//     static constexpr bool kFlatEntries;  // Table::entries()[block] is every block's entry:
//                                          // the thread's path cache keeps the base
//     static constexpr bool kPagesInPlace; // pages live at Table::page(block), not in frames
//     static constexpr bool kDirect;       // no lookup at all (the physical ceiling)
//     // optional capabilities, absent = off:
//     static constexpr bool kFrameHints = true;        // references carry frame hints
//     static constexpr bool kTiered = true;            // takes PoolOptions::tiers.far
//     static constexpr bool kBatchedMigration = true;  // tier moves in batches
//     class FramePredictor; kPromoteOneIn; kDemoteOneIn // preferred frames (predictive)
//   };
//   Table::kRecyclesEntries = true   entries are deleted when zero and reused (hash tables)
//   Table::kSparseGroups = true      cold groups' entries live in a side table (array_sparse)
//
// The pool compiles each capability's code in only for the policies that declare it: a
// policy without one pays nothing for it on the hot path.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "calico/detail/entry.h"
#include "calico/page_id.h"

namespace calico {

// What every per-space table provides (the pool calls nothing else on it unless the policy
// declares a capability):
//   Table(capacity, options)      reserves translation for blocks [0, capacity)
//   entry(block)                  the block's entry word; all-zero = evicted
//   capacity()
//   acquire_ref(block) / release_ref(block)
//                                 the reference held around a non-zero entry, so that the
//                                 memory holding entries can be returned when they are all
//                                 zero (arrays: hole punching); release_ref returns true when
//                                 memory was returned
//   reset()                       drop: every entry zero, memory returned
//   private_bytes(blocks), mincore_bytes(blocks), reserved_bytes()
//                                 the translation memory, measured
template <class T>
concept TranslationTable = requires(T& t, const T& ct, BlockId block, uint64_t blocks) {
  { t.entry(block) } -> std::same_as<translation::Entry&>;
  { ct.capacity() } -> std::convertible_to<uint64_t>;
  t.acquire_ref(block);
  { t.release_ref(block) } -> std::convertible_to<bool>;
  t.reset();
  { ct.private_bytes(blocks) } -> std::convertible_to<size_t>;
  { ct.mincore_bytes(blocks) } -> std::convertible_to<size_t>;
  { ct.reserved_bytes() } -> std::convertible_to<size_t>;
};

template <class T>
concept TranslationPolicy = requires {
  { T::kName } -> std::convertible_to<std::string_view>;
  { T::kFlatEntries } -> std::convertible_to<bool>;
  { T::kPagesInPlace } -> std::convertible_to<bool>;
  { T::kDirect } -> std::convertible_to<bool>;
} && TranslationTable<typename T::Table>;

namespace translation {

// --- capabilities --------------------------------------------------------------------------

// Frame hints ([LIPAH]): the pool keeps, per frame, a pointer to its page's entry and offers
// the *_hinted accesses and repair_hint (src/pool/features/frame_hints.h). Frames must be
// the arena's: not with kPagesInPlace or kDirect.
template <class T>
inline constexpr bool kHasFrameHints = requires { requires T::kFrameHints; };

// Recycled entries: a zero entry may be deleted and its memory given to another block, so
// the pool checks the entry's owner after every latch and load (entry.h R1-R5;
// src/pool/features/looked_up_entries.h). The table adds find(block) and forget(block).
template <class Table>
inline constexpr bool kRecyclingTable = requires { requires Table::kRecyclesEntries; };

// Sparse groups (array_sparse): a cold group's entries move to a side table and back
// (src/pool/features/sparse_groups.h, rules S1-S4 in src/pool/README.md).
template <class Table>
inline constexpr bool kSparseGroupTable = requires { requires Table::kSparseGroups; };

// A far memory tier behind the pool (src/pool/features/tiering.h). Every other policy
// compiles the tier tests of the access paths away and refuses PoolOptions::tiers.far.
template <class T>
concept Tiered = requires { requires T::kTiered; };

// A tiered policy that migrates in batches ([vmcache^n] 2.3): demotion_batch pages per
// round, promotions queued and run promotion_batch at a time (features/tier_moves.h).
template <class T>
concept BatchedMigration = Tiered<T> && requires { requires T::kBatchedMigration; };

// Preferred frames ([PrediCache]): faults take a page's preferred frame when free, pins
// prefetch it before the lookup, and hits move pages into it (features/promotion.h).
template <class T>
concept Predicting = requires(const typename T::FramePredictor& p, PageId pid) {
  { p.preferred_frame(pid) } -> std::same_as<FrameId>;
  { T::kPromoteOneIn } -> std::convertible_to<uint32_t>;
  { T::kDemoteOneIn } -> std::convertible_to<uint32_t>;
};

}  // namespace translation
}  // namespace calico
