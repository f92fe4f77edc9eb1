// BasicBufferPool<Translation> / BufferPool: Calico's buffer manager. Pages of spaces (one
// file each) are cached in frames; a page id is translated to its page state word (entry.h)
// by the Translation policy (BufferPool: a per-space array of 64-bit entries; the others are
// listed in src/variants/registry.h and compared in bench/).
//
// Principal entry points:
//   open(options)              opens (or creates) a data directory
//   create_space / open_space / drop_space / space_blocks / spaces
//   allocate(space)            a new zeroed page, returned exclusively latched
//   pin_shared(pid)            -> SharedGuard       (readers; many at once)
//   pin_exclusive(pid)         -> ExclusiveGuard    (one writer; mark_dirty() to persist)
//   optimistic_read(pid, fn)   runs fn on the page without pinning; validated, retried
//   read_optimistic/validate   the same, split for optimistic lock coupling in indexes
//   prefetch_group(pids, offs) hints: warm entries and frames, start reads of the rest
//   prewarm(space)             loads a space's blocks in order into free frames (pg_prewarm)
//   try_pin_exclusive(pid)     the exclusive latch if it is free at once, else an empty guard
//   *_hinted(pid, &frame)      frame hints (policies with kFrameHints, e.g. lipah): reads and
//                              pins that skip the translation when the hinted frame holds pid
//   repair_hint(holder, fn)    opportunistic hint repair (kFrameHints)
//   flush()                    writes every dirty page, fsyncs files and the catalog
//   stats()
//
// Contracts (see src/pool/README.md for the full rules and the lock order):
//  - A guard's data() is valid until the guard is released or destroyed. The usable page is
//    usable_page_size() bytes; the last 16 bytes of a page are the on-disk trailer.
//  - A thread must not wait for a latch it holds itself: pinning exclusively a page it
//    already pins, dropping a space it holds pins in, or flushing while holding an
//    exclusive guard deadlocks.
//  - fn given to optimistic_read may see a page that is being modified (the result is then
//    thrown away and fn runs again). It must not crash on any bytes: no unchecked pointer or
//    index taken from the page, no side effects beyond its own locals and its result.
//  - Errors are calico::Error (error.h); the pool stays usable after any of them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "calico/error.h"
#include "calico/pool_options.h"
#include "calico/page_id.h"
#include "memory/frame_arena.h"
#include "pool/async_lane.h"
#include "pool/clock.h"
#include "pool/frame_meta.h"
#include "pool/free_list.h"
#include "pool/prediction.h"
#include "pool/space.h"
#include "pool/tiering.h"
#include "translation/array.h"
#include "translation/entry.h"
#include "translation/space_directory.h"

namespace calico {

namespace io {
class FaultInjector;
class IoRing;
}  // namespace io
namespace pool {
struct CatalogSpace;
}  // namespace pool

template <class Translation>
class BasicBufferPool;

namespace translation {
// Whether policy T asks for frame hints (declares kFrameHints = true).
template <class T>
inline constexpr bool kHasFrameHints = requires { requires T::kFrameHints; };
// Whether Table deletes entries and gives them to other blocks (declares kRecyclesEntries =
// true; entry.h, "Recycled entries"; partitioned_table.h).
template <class Table>
inline constexpr bool kRecyclingTable = requires { requires Table::kRecyclesEntries; };
// Whether Table keeps sparse groups in a side table (declares kSparseGroups = true:
// array_sparse, translation/sparse_array.h; pool/README.md, "Sparse groups").
template <class Table>
inline constexpr bool kSparseGroupTable = requires { requires Table::kSparseGroups; };
}  // namespace translation

// SharedGuard: a shared pin. Movable; releases on destruction.
class SharedGuard {
 public:
  SharedGuard() = default;
  SharedGuard(SharedGuard&& o) noexcept { *this = std::move(o); }
  SharedGuard& operator=(SharedGuard&& o) noexcept {
    release();
    entry_ = std::exchange(o.entry_, nullptr);
    data_ = o.data_;
    pid_ = o.pid_;
    return *this;
  }
  ~SharedGuard() { release(); }

  const std::byte* data() const { return data_; }
  PageId page_id() const { return pid_; }
  bool held() const { return entry_ != nullptr; }
  void release() {
    if (entry_ != nullptr) translation::unlock_shared(*std::exchange(entry_, nullptr));
  }

 private:
  template <class>
  friend class BasicBufferPool;
  SharedGuard(translation::Entry* e, const std::byte* d, PageId p) : entry_(e), data_(d), pid_(p) {}
  translation::Entry* entry_ = nullptr;
  const std::byte* data_ = nullptr;
  PageId pid_;
};

// ExclusiveGuard: the exclusive latch of one page. Release bumps the entry's version, which
// invalidates concurrent optimistic readers.
class ExclusiveGuard {
 public:
  ExclusiveGuard() = default;
  ExclusiveGuard(ExclusiveGuard&& o) noexcept { *this = std::move(o); }
  ExclusiveGuard& operator=(ExclusiveGuard&& o) noexcept {
    release();
    entry_ = std::exchange(o.entry_, nullptr);
    held_ = o.held_;
    data_ = o.data_;
    meta_ = o.meta_;
    pid_ = o.pid_;
    return *this;
  }
  ~ExclusiveGuard() { release(); }

  std::byte* data() const { return data_; }
  PageId page_id() const { return pid_; }
  bool held() const { return entry_ != nullptr; }
  // The page will be written back before its frame is reused, and by flush().
  void mark_dirty() { meta_->dirty.store(1, std::memory_order_relaxed); }
  void release() {
    if (entry_ != nullptr) {
      translation::unlock_exclusive(*std::exchange(entry_, nullptr), held_, /*bump_version=*/true);
    }
  }

 private:
  template <class>
  friend class BasicBufferPool;
  ExclusiveGuard(translation::Entry* e, translation::EntryWord held, std::byte* d,
                 pool::FrameMeta* m, PageId p)
      : entry_(e), held_(held), data_(d), meta_(m), pid_(p) {}
  translation::Entry* entry_ = nullptr;
  translation::EntryWord held_;
  std::byte* data_ = nullptr;
  pool::FrameMeta* meta_ = nullptr;
  PageId pid_;
};

// An optimistic read in progress: data may change under the reader until validate().
struct OptimisticRead {
  const std::byte* data = nullptr;
  const translation::Entry* entry = nullptr;
  translation::EntryWord seen;
  PageId pid;
};

// BasicBufferPool<Translation>: the pool, generic over how a page id finds its entry word.
// Translation is a compile-time policy (src/translation/array.h is the default and the
// reference; the registry src/variants/registry.h maps names to instantiations):
//
//   struct SomeTranslation {
//     static constexpr std::string_view kName;   // "array", "hash_open", ...
//     using Table = ...;  // per space: Table(capacity, const PoolOptions&) and
//                         //   Entry& entry(BlockId)  the page's state word; the same object
//                         //       for the page as long as the pool lives (it may be
//                         //       created on first use); all-zero = evicted. Except for
//                         //       recycling tables (kRecyclesEntries = true): the entry may
//                         //       be deleted once zero and given to another block later; such
//                         //       tables hand out words of OwnedEntry (entry.h, R1-R5) and
//                         //       provide Entry* find(BlockId) (no insert) and
//                         //       forget(BlockId) (delete the entry if zero), and the pool
//                         //       checks the owner after every latch and optimistic load
//                         //   uint64_t capacity()
//                         //   void acquire_ref(BlockId); bool release_ref(BlockId)
//                         //       translation-memory reclamation around a resident entry
//                         //       (array: hole punching); true when memory was returned
//                         //   void reset()   drop: every entry zero, memory returned
//                         //   size_t private_bytes(blocks), mincore_bytes(blocks),
//                         //       reserved_bytes()   measured translation memory
//     static constexpr bool kFlatEntries;   // Table::entries()[block] is the entry for every
//                         //   block < capacity: the path cache keeps the base (one load)
//     static constexpr bool kPagesInPlace;  // pages live at Table::page(block), not in the
//                         //   frame arena; Table::discard(block) returns an evicted page's
//                         //   memory (vmcache). Frames are then only a budget of tokens.
//     static constexpr bool kDirect;        // optimistic reads go to frame block + 1 with no
//                         //   lookup, no residency check, no validation (the physical limit;
//                         //   faults load block b into frame b + 1; never evicts)
//     class FramePredictor;  // optional (predictive translation, pool/prediction.h): per pool,
//                         //   FramePredictor(num_frames), FrameId preferred_frame(PageId);
//                         //   with kPromoteOneIn/kDemoteOneIn. Faults take the preferred frame
//                         //   when free, pins prefetch it before the lookup, and hits move
//                         //   pages into it (pool/promotion.h). Compiled out for the others.
//   Table::kSparseGroups  // optional (absent = false; array_sparse): entries of sparse
//                         //   groups live in a side table and move between it and the
//                         //   array (pool/README.md, "Sparse groups"); the table then
//                         //   provides find, is_side, owns, forget_side, the move steps,
//                         //   and acquire_ref returning the representation it covers
//     static constexpr bool kFrameHints;    // optional (absent = false): references carry
//                         //   frame hints (LIPAH, src/translation/lipah.h). The pool then
//                         //   keeps per frame a pointer to its page's entry and offers the
//                         //   *_hinted accesses and repair_hint. Requires !kPagesInPlace.
//   };
//
// Everything else (latching protocol, faults, CLOCK eviction, I/O, prefetch, flush) is
// shared by every translation and lives in src/pool/.
template <class Translation>
class BasicBufferPool {
 public:
  using TranslationPolicy = Translation;
  using Space = pool::BasicSpace<typename Translation::Table>;
  using AsyncLane = pool::AsyncLane<Space>;
  static constexpr std::string_view kTranslationName = Translation::kName;
  static constexpr bool kFrameHints = translation::kHasFrameHints<Translation>;
  static constexpr bool kRecyclesEntries = translation::kRecyclingTable<typename Translation::Table>;
  // A page's entry lives in the array or, for a sparse group, in a side table, and moves
  // between them (array_sparse; pool/sparse_moves.h). Compiled out for every other policy.
  static constexpr bool kSparseGroups = translation::kSparseGroupTable<typename Translation::Table>;
  // Entries are found by a lookup that may miss and by pointers that may go stale.
  static constexpr bool kLookedUpEntries = kRecyclesEntries || kSparseGroups;
  static_assert(!kFrameHints || (!Translation::kPagesInPlace && !Translation::kDirect),
                "frame hints name frames of the frame arena");
  // Whether the pool can take a far tier (PoolOptions::far_tier, pool/tiering.h): only tiered
  // policies (array_tiered, vmcache_n), so that every other policy's hot path has no tier
  // compare. A tiered policy's pages move freely and are reached only through their entry:
  // in frames (array_tiered), or in place in one region per tier (vmcache_n).
  static constexpr bool kTierable = pool::Tiered<Translation>;
  static_assert(!kTierable || (!Translation::kDirect && !pool::Predicting<Translation> && !kFrameHints),
                "a tiered policy's pages move freely and are reached only through their entry");
  // A tiered policy with pages in place (vmcache_n, translation/vmcache_n.h): a page's bytes
  // are in its space's region of the tier of the frame token it holds.
  static constexpr bool kTieredInPlace = kTierable && Translation::kPagesInPlace;
  // Demotions and promotions in batches (pool::BatchedMigration; vmcache_n).
  static constexpr bool kBatchedMigration = pool::BatchedMigration<Translation>;

  // Opens the data directory (creating it and an empty catalog if needed) and reopens every
  // space recorded in its catalog. Errors: kInvalidArgument (options), kPageSizeMismatch,
  // kCorruptCatalog, kIoError (also when another pool has the directory open).
  static std::unique_ptr<BasicBufferPool> open(const PoolOptions& options);
  // Flushes (errors are printed, not thrown) and closes.
  ~BasicBufferPool();
  BasicBufferPool(const BasicBufferPool&) = delete;
  BasicBufferPool& operator=(const BasicBufferPool&) = delete;

  // --- spaces -----------------------------------------------------------------------
  // Names: 1..64 characters of [A-Za-z0-9_.-]. Errors: kInvalidArgument, kSpaceExists.
  SpaceId create_space(std::string_view name);
  // Errors: kUnknownSpace.
  SpaceId open_space(std::string_view name) const;
  // Frees the space's frames (dirty pages are discarded), its translation memory and its
  // file. Waits for pins held by other threads. Errors: kUnknownSpace.
  void drop_space(SpaceId space);
  uint64_t space_blocks(SpaceId space) const;
  std::vector<SpaceInfo> spaces() const;

  // --- pages ------------------------------------------------------------------------
  // Appends a zeroed, dirty page to the space; returns it exclusively latched.
  // Errors: kUnknownSpace, kInvalidArgument (space at max_blocks_per_space), kPoolFull.
  ExclusiveGuard allocate(SpaceId space);

  // Errors (all pins): kUnknownSpace, kPageOutOfRange, kPoolFull, kIoError, kShortRead,
  // kChecksumMismatch (the page stays evicted; other pages are unaffected).
  SharedGuard pin_shared(PageId pid);
  ExclusiveGuard pin_exclusive(PageId pid);

  // Runs fn(const std::byte* page) optimistically and returns its result once a validation
  // succeeds; after kOptimisticAttempts failed validations it pins the page shared and runs
  // fn once more under the pin. No atomic write on the happy path.
  // touch_offset: the byte of the page fn reads first (< page size; 0 for a header). The
  // frame prediction prefetches that line while the translation entry loads.
  template <class Fn>
  auto optimistic_read(PageId pid, Fn&& fn, uint32_t touch_offset = 0) -> std::invoke_result_t<Fn&, const std::byte*>;

  // Starts an optimistic read: waits while the page is exclusively latched, faults it in if
  // evicted. The caller reads r.data, then calls validate(r); false means start again.
  // touch_offset: as optimistic_read's.
  OptimisticRead read_optimistic(PageId pid, uint32_t touch_offset = 0);
  static bool validate(const OptimisticRead& r) {
    if constexpr (Translation::kDirect) return true;
    std::atomic_thread_fence(std::memory_order_acquire);
    translation::EntryWord now = translation::load(*r.entry, std::memory_order_relaxed);
    return now.frame_and_version() == r.seen.frame_and_version() &&
           now.state() != translation::kExclusive;
  }

  // The exclusive latch of pid if it can be taken at once: the page is resident and neither
  // pinned nor latched. Otherwise an empty guard (held() == false); never waits, never
  // faults. Errors: kUnknownSpace, kPageOutOfRange.
  ExclusiveGuard try_pin_exclusive(PageId pid);

  // --- frame hints (policies with kFrameHints; lipah.txt 3.1, 4.1, 4.4) -------------------
  // A reference is (pid, frame hint). `*hint` may be anything (0, stale, out of range, read
  // from disk): it is only followed after checks. When the hinted frame holds pid, the access
  // touches the frame's metadata, the page's entry and the frame, never the translation
  // table (PoolStats::hint_hits). Otherwise it falls back to the unhinted access (the table;
  // a fault when evicted; PoolStats::hint_misses) and sets *hint to the frame it used, so
  // that the caller can repair the stored hint (repair_hint).
  //
  // read_optimistic_hinted: as read_optimistic(pid); validate(r) as usual. Why the hinted
  // path cannot accept a page other than pid (frames are reused, so think ABA):
  //   The reader loads, in order: (1) meta[f].owner == pid (a filter only), (2) e = the
  //   frame's entry pointer, (3) w = *e with w.frame() == f and not exclusive, (4) meta[f].owner
  //   == pid again; later (5) validate(r): *e still shows w's frame and version.
  //   Case e is pid's entry: (3) says pid was in f at (3), and (5) that it stayed there,
  //   unmodified, until (5) (an eviction zeroes e, and a reload into f starts above w's
  //   version: versions shown for one frame only grow, entry.h "Version ABA").
  //   Case e is the entry of another page q (a stale pointer: q left f, or f changed hands
  //   between (1) and (3)): (3) says q was in f at (3). If (5) succeeds, q stayed in f from
  //   (3) to (5) (same argument), so no evictor of q took e's latch in between (it would have
  //   left e exclusive, zero, or re-versioned), so meta[f].owner was q throughout: a loader
  //   stores owner before publishing e (release; (3) acquires it), and the evictor clears it
  //   only under e's exclusive latch (a load at (4) that sees the clear, or any later owner,
  //   acquires that latch's CAS too, so (5) sees e latched or changed). Then (4) read q, not
  //   pid: contradiction. Without (4) the hinted read could return q's bytes as pid's.
  //   (1) alone is not enough: f may pass from pid to q between (1) and (2).
  OptimisticRead read_optimistic_hinted(PageId pid, FrameId* hint)
    requires translation::kHasFrameHints<Translation>;  // not kFrameHints: clang 14 (fuzz build)
  // As pin_shared / pin_exclusive. Hinted path: latch e (reached as above) while it shows
  // f, then check meta[f].owner == pid under the latch. A latched page cannot leave its frame,
  // so the owner seen under the latch is the page of e; if it is not pid, the latch is
  // released (unchanged, no version bump) and the access falls back.
  SharedGuard pin_shared_hinted(PageId pid, FrameId* hint)
    requires translation::kHasFrameHints<Translation>;  // not kFrameHints: clang 14 (fuzz build)
  ExclusiveGuard pin_exclusive_hinted(PageId pid, FrameId* hint)
    requires translation::kHasFrameHints<Translation>;  // not kFrameHints: clang 14 (fuzz build)

  // Opportunistic hint repair (lipah.txt 4.4): if `holder` can be latched exclusively at once
  // (try_pin_exclusive), runs write(std::byte* page) under the latch and returns its result
  // (true: it wrote a hint; counted in PoolStats::hint_repairs); otherwise returns false.
  // write may change only hint bytes (every use of a hint checks it). The page is not marked
  // dirty: a frame hint rarely survives the page's next eviction, so it is not worth a write;
  // it persists only if the page is written for another reason. The release bumps the
  // version, as for every exclusive latch. Errors: those of try_pin_exclusive.
  template <class Fn>
  bool repair_hint(PageId holder, Fn&& write)
    requires kFrameHints
  {
    ExclusiveGuard g = try_pin_exclusive(holder);
    if (!g.held() || !write(g.data())) return false;
    counters_.hint_repairs.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // Algorithm 4: prefetches the entries of pids, then the cache line at offsets[i] of each
  // resident page, then submits one batch of asynchronous reads for the evicted ones and
  // returns. Best effort: pages past a space's end, of unknown spaces, or for which no frame
  // is free are skipped. offsets may be empty (offset 0 for all), else pids.size() long.
  // Returns the number of reads submitted (0 when every page was resident or in flight).
  size_t prefetch_group(std::span<const PageId> pids, std::span<const uint32_t> offsets = {});
  // prefetch_group that also starts the optimistic read of the resident pages, so that a
  // caller who then reads the whole group translates each page once, not twice. reads[i] is
  // what read_optimistic(pids[i]) returns on its fast path (use it as such: validate), or
  // has data == nullptr when the group started none for it: the page was evicted (and is
  // now being read in), latched or CLOCK-marked, not in the space of the thread's last
  // access, or the policy moves pages on access (predictive); then call read_optimistic.
  // A started read counts as an access. reads.size() == pids.size() (else kInvalidArgument).
  size_t read_group(std::span<const PageId> pids, std::span<const uint32_t> offsets, std::span<OptimisticRead> reads);

  // Reads blocks [first, first + count) of a space (clamped to its end) in ascending order
  // into free frames and waits for them: pg_prewarm. Nothing is evicted: it stops when the
  // free frames reach the eviction watermark. A pool whose free frames are still in their
  // initial order hands them out ascending, so a prewarmed run of blocks lands in adjacent
  // frames. Returns how many of the asked pages are resident when it returns (other threads
  // may evict meanwhile). Errors: kUnknownSpace; I/O errors as pin_shared (pages read before
  // the failure stay resident).
  uint64_t prewarm(SpaceId space, BlockId first = 0, uint64_t count = UINT64_MAX);

  // Writes every dirty page (in batches), fsyncs every space file and the catalog. This is
  // the durability point: after a crash, a reopened pool holds exactly what the last flush
  // wrote (allocations after it are forgotten). Closing the pool flushes.
  // Errors: kIoError naming the first failure (a page write, a file's fdatasync, the
  // catalog) and counting the others. Every space is synced even when one fails. A page is
  // clean only once a sync of its file succeeded after its write: after a failed flush,
  // every page it could not make durable is dirty again and the next flush rewrites it
  // (pool/README.md rule 6 says what is and is not recoverable).
  void flush();

  PoolStats stats() const;
  // Whole-structure check for tests, at quiescence (no concurrent operations): every
  // resident entry and its frame agree (bijection), free frames are referenced by no entry,
  // every frame is owned, free, or the target of one read in flight (whose entry is
  // kIoPending), no pins or latches are held, and every hole-punch count equals the
  // non-zero entries of its group. Throws std::logic_error naming the first violation.
  void check_invariants() const;

  size_t page_size() const { return options_.page_size; }
  size_t usable_page_size() const { return options_.page_size - kTrailerBytes; }
  FrameId num_frames() const { return frames_.num_frames(); }
  const PoolOptions& options() const { return options_; }

  static constexpr int kOptimisticAttempts = 8;
  // CAS attempts of the no-wait latches (try_pin_exclusive, the hinted pins' fast path)
  // while the word keeps changing under them but stays latchable.
  static constexpr int kTryLatchAttempts = 4;
  static constexpr size_t kTrailerBytes = 16;

  // Tests and diagnostics: the frame holding pid now, kInvalidFrame when it is not resident.
  // Racy unless the pool is quiescent. Errors: as pins (kUnknownSpace, kPageOutOfRange).
  FrameId frame_of(PageId pid) {
    Space* space;
    translation::Entry* e = find_entry_for(pid, &space);
    if (e == nullptr) return kInvalidFrame;
    translation::EntryWord w = translation::load(*e);
    return owns(space, *e, pid) ? w.frame() : kInvalidFrame;
  }
  // Sparse groups (array_sparse; pool/sparse_moves.h). Tests and diagnostics: tries to move
  // pid's group into the side table now, as the evictor does after an eviction; false when
  // refused (a page of the group latched, pinned or loading, a fault in flight in it, or the
  // group not dense with 1 .. sparse_group_at references). Never waits for a latch.
  // Errors: as pins (kUnknownSpace, kPageOutOfRange).
  bool try_sparse_group(PageId pid)
    requires translation::kSparseGroupTable<typename Translation::Table>;  // not kSparseGroups: clang 14 (fuzz build)
  // Whether pid's group is sparse now (racy unless quiescent).
  bool group_is_sparse(PageId pid)
    requires translation::kSparseGroupTable<typename Translation::Table>;
  // Predictive translations (pool/prediction.h, pool/promotion.h): the frame a page should
  // live in, and how many pages were moved into (promoted) or out of (demoted) such frames.
  FrameId preferred_frame(PageId pid) const requires pool::Predicting<Translation> {
    return predictor_.preferred_frame(pid);
  }
  uint64_t promotions() const requires pool::Predicting<Translation> { return moves_.promotions.load(); }
  uint64_t demotions() const requires pool::Predicting<Translation> { return moves_.demotions.load(); }
  // Tiered memory (pool/tiering.h): frames 1..fast_frames() are tier 0, the rest tier 1.
  FrameId fast_frames() const { return fast_last_; }
  // Tests and diagnostics: moves resident page pid into tier 0 or 1 now, as a promotion or
  // a demotion would (pool/tier_moves.h), without waiting for any latch. Returns whether
  // pid is now in a frame of `tier`; false when there is no far tier, or pid is evicted,
  // latched, pinned, or no frame of `tier` can be freed at once. Pre: the caller holds no
  // latch on pid. Errors: as pins (kUnknownSpace, kPageOutOfRange), kInvalidArgument for a
  // tier other than 0 or 1, kIoError when a far page cannot be written back.
  bool move_to_tier(PageId pid, int tier);

 private:
  explicit BasicBufferPool(const PoolOptions& options);

  struct Resolved {
    translation::Entry* entries;
    uint64_t capacity;
    Space* space;
  };
  // True when the thread's path cache c resolves space id of this pool: same pool, same
  // space, and no space created or dropped since it was filled (the directory's epoch).
  bool path_cached(const translation::PathCache& c, SpaceId id) const {
    return c.pool_uid == uid_ && c.space == id && c.epoch == directory_.epoch();
  }
  // Hot path: the thread's path cache, else the directory (throws kUnknownSpace).
  Resolved resolve(SpaceId id) {
    auto& c = translation::tls_path_cache;
    if (path_cached(c, id)) [[likely]] {
      return {c.entries, c.capacity, static_cast<Space*>(c.owner)};
    }
    return resolve_slow(id);
  }
  Resolved resolve_slow(SpaceId id);
  translation::Entry& entry_for(PageId pid, Space** space_out) {
    Resolved r = resolve(pid.space());
    if (pid.block() >= r.capacity) [[unlikely]] throw_out_of_range(pid);
    *space_out = r.space;
    std::atomic<uint64_t>* accesses = translation::tls_path_cache.accesses;
    accesses->store(accesses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if constexpr (Translation::kFlatEntries) {
      return r.entries[pid.block()];
    } else {
      return r.space->table.entry(pid.block());
    }
  }
  // As entry_for, but a recycling table inserts no entry: nullptr when pid has none (paths
  // that never fault, which must not create entries for pages that are not resident).
  translation::Entry* find_entry_for(PageId pid, Space** space_out) {
    if constexpr (kLookedUpEntries) {
      Resolved r = resolve(pid.space());
      if (pid.block() >= r.capacity) [[unlikely]] throw_out_of_range(pid);
      *space_out = r.space;
      return r.space->table.find(pid.block());
    } else {
      return &entry_for(pid, space_out);
    }
  }
  // The entry of `block` if it has one, without inserting (recycling tables): for the scans
  // of frames (CLOCK, flush, drop), whose owner hint may name a page that just left.
  static translation::Entry* existing_entry(Space* s, BlockId block) {
    if constexpr (kLookedUpEntries) {
      return s->table.find(block);
    } else {
      return &s->table.entry(block);
    }
  }
  // Recycling tables (entry.h, R4/R5): whether e, reached through pid's lookup in space s,
  // belongs to pid now (exact while a latch on e is held); sparse groups: an array word is
  // always its block's, a side entry is checked as a recycled one. Always true, and compiled
  // away, for the others.
  static bool owns(const Space* s, const translation::Entry& e, PageId pid) {
    if constexpr (kRecyclesEntries) {
      (void)s;
      return translation::owned_by(e, pid.block());
    } else if constexpr (kSparseGroups) {
      return s->table.owns(e, pid.block());
    } else {
      (void)s, (void)e, (void)pid;
      return true;
    }
  }
  // Recycling tables: delete block's entry if it is zero (entry.h, R2); sparse groups: the
  // same for a side entry `e`. Called after every store of 0 into an entry (eviction, drop, a
  // failed load) and when a fault gives up before latching, so that the table only holds
  // pages in the pool. Nothing for the others.
  static void forget(Space* s, BlockId block, const translation::Entry& e) {
    if constexpr (kRecyclesEntries) {
      (void)e;
      s->table.forget(block);
    } else if constexpr (kSparseGroups) {
      if (s->table.is_side(e)) s->table.forget_side(block);
    } else {
      (void)s, (void)block, (void)e;
    }
  }
  // The hole-punch reference before a write out of zero into e, pid's entry as looked up.
  // Sparse groups: false (no reference held) when e is not in the representation the
  // reference covers (the group moved since the lookup): look pid up again.
  bool acquire_ref_for(Space* s, BlockId block, const translation::Entry& e) {
    if constexpr (kSparseGroups) {
      if (s->table.acquire_ref(block) == s->table.is_side(e)) return true;
      release_ref(s, block);
      return false;
    } else {
      (void)e;
      s->table.acquire_ref(block);
      return true;
    }
  }
  void release_ref(Space* s, BlockId block) {
    if (s->table.release_ref(block)) counters_.punches.fetch_add(1, std::memory_order_relaxed);
  }
  // The access loops' slow path: the entry to retry with after wait_or_fault. Recycling
  // tables first check that e is still pid's (entry.h R4): a retired entry, or one recycled
  // for another page, is never waited on (waiting on another page's latch could deadlock
  // against its holder); pid is looked up again instead. The owner is read after `w`
  // (acquire), so it is at least as new as the residency `w` belongs to. For the other
  // tables this is wait_or_fault alone.
  // Called when a CAS on an entry word the caller loaded resident has failed. If the word
  // reads zero now, the page may have been evicted and its page of entries punched between
  // the load and the CAS, and a failing CAS writes too (x86's LOCK CMPXCHG), so the kernel
  // backed the page again, all zero and counted by nobody. Tables that punch (the arrays)
  // punch it again if nothing references it (translation_array.h, repunch); for the others
  // this is nothing. Off the hit path: only after a failed CAS.
  void after_failed_cas(Space* space, BlockId block, const translation::Entry& e) {
    if constexpr (requires { space->table.repunch(block); }) {
      if constexpr (kSparseGroups) {
        if (space->table.is_side(e)) return;  // side entries are never punched
      }
      if (translation::load(e, std::memory_order_relaxed).evicted() && space->table.repunch(block)) {
        counters_.punches.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }

  // The same, for callers that hold a frame's entry pointer rather than the space (frame hints).
  void after_failed_cas(PageId pid, const translation::Entry& e) {
    if constexpr (requires(Space* space) { space->table.repunch(pid.block()); }) {
      if (Space* space = live_space(pid.space())) after_failed_cas(space, pid.block(), e);
    }
  }

  translation::Entry* retry(Space* space, PageId pid, translation::Entry* e, translation::EntryWord w, int* spins) {
    if (w.resident()) after_failed_cas(space, pid.block(), *e);  // the caller's latch CAS failed
    if constexpr (kRecyclesEntries) {
      if (w.state() == translation::kGone || !owns(space, *e, pid)) return &space->table.entry(pid.block());
    }
    if constexpr (kSparseGroups) {
      // A zero or retired entry may be one the group moved away from: look pid up again
      // (after any move in progress), and fault only through the entry it has now.
      if (w.evicted() || w.state() == translation::kGone || !owns(space, *e, pid)) {
        translation::Entry* now = &space->table.entry(pid.block());
        if (now != e) return now;
      }
    }
    wait_or_fault(space, pid, *e, w, spins);
    return e;
  }

  // The bytes of page `pid` while it is held in frame f.
  std::byte* page_data(Space* s, PageId pid, FrameId f) const {
    if constexpr (kTieredInPlace) {
      return s->table.page(pid.block(), tier_of(f));  // the one tier branch of vmcache_n
    } else if constexpr (Translation::kPagesInPlace) {
      return s->table.page(pid.block());
    } else {
      (void)s, (void)pid;
      return frames_.frame(f);
    }
  }
  [[noreturn]] void throw_out_of_range(PageId pid) const;

  // read_optimistic's fast path: the thread's path cache names pid's space, and pid's entry
  // is resident, unlatched and unmarked; fills *r and returns true. Otherwise false and
  // nothing changed: the caller takes the general loop (read_optimistic_slow). Policies that
  // promote on access always take the loop.
  bool read_fast(PageId pid, OptimisticRead* r, uint32_t touch_offset);
  OptimisticRead read_optimistic_slow(PageId pid);
  // prefetch_group and read_group; reads == nullptr: no reads started.
  size_t prefetch_group(std::span<const PageId> pids, std::span<const uint32_t> offsets, OptimisticRead* reads);
  template <class Fn>
  auto optimistic_read_slow(PageId pid, Fn& fn, int attempts_made) -> std::invoke_result_t<Fn&, const std::byte*>;

  // Predictive translations only; compiled out (constant results) for the other policies.
  // predict: the page's preferred frame, its first line prefetched before the lookup resolves,
  // so that the frame and the bucket load overlap (Listing 3 of the paper).
  FrameId predict(PageId pid) const {
    if constexpr (pool::Predicting<Translation>) {
      FrameId f = predictor_.preferred_frame(pid);
      __builtin_prefetch(frames_.frame(f));
      return f;
    } else {
      (void)pid;
      return kInvalidFrame;
    }
  }
  // A hit on a resident, unlatched page outside its predicted frame: with probability
  // 1/kPromoteOneIn try to move it there (try_promote). True when the entry may have changed
  // and the caller must reload it.
  bool promote_on_hit(Space* space, PageId pid, translation::Entry& e, translation::EntryWord w,
                      FrameId predicted) {
    if constexpr (pool::Predicting<Translation>) {
      if (w.frame() == predicted || !w.resident() || !w.unlatched()) [[likely]] return false;
      if (!pool::promotion_draw(Translation::kPromoteOneIn)) [[likely]] return false;
      try_promote(space, pid, e, w, predicted);
      return true;
    } else {
      (void)space, (void)pid, (void)e, (void)w, (void)predicted;
      return false;
    }
  }
  // pool/promotion.h. Never waits; returns whether the page now lives in `target`.
  [[gnu::noinline]] bool try_promote(Space* space, PageId pid, translation::Entry& e,
                                     translation::EntryWord seen, FrameId target)
    requires pool::Predicting<Translation>;
  // The page move shared by predictive promotion (pool/promotion.h) and tier migration
  // (pool/tier_moves.h). move_page copies the exclusively latched page `pid` (word `held`)
  // into frame `to` (taken, owner 0), through the far tier's copy() when either frame is
  // far, and publishes it there unlatched at `to`'s version seed; frees nothing.
  // Pages in place (vmcache_n): the copy goes from the page's address in the source tier's
  // region to its address in the destination's, and the source page is discarded
  // (MADV_DONTNEED) before the entry is published (translation/vmcache_n.h).
  void move_page(Space* s, PageId pid, translation::Entry& e, translation::EntryWord held, FrameId to);
  // move_page's parts: the copy (through the far tier's copy() when either frame is far) and
  // the publication of the page at `to`.
  void copy_page(Space* s, PageId pid, FrameId from, FrameId to);
  void publish_moved(PageId pid, translation::Entry& e, translation::EntryWord held, FrameId to);
  // After a move out of held.frame(): seeds (held's version + 1), clears, poisons (frames
  // only) and frees that frame (free_frame).
  void release_moved_frame(translation::EntryWord held);
  // Pages in place: returns the memory of pid's page in frame f's tier (pid is latched
  // exclusively and no longer there, or leaving).
  void discard_in_place(Space* s, PageId pid, FrameId f) {
    if constexpr (kTieredInPlace) {
      s->table.discard(pid.block(), tier_of(f));
    } else if constexpr (Translation::kPagesInPlace) {
      s->table.discard(pid.block());
    } else {
      (void)s, (void)pid, (void)f;
    }
  }

  // --- sparse groups (array_sparse; pool/sparse_moves.h) ---
  // Dense to sparse: the evictor, under evict_mutex_, after an eviction left pid's group
  // with 1 .. sparse_group_at references. Sparse to dense: a fault into a sparse group whose
  // count reached dense_group_at, under the space's fault_latch. Both only try (every latch
  // by CAS, never a wait): false and nothing changed when any page of the group is latched,
  // pinned or loading, or a fault is in flight in it. Return whether the group moved.
  bool try_sparsify(Space* s, BlockId block)
    requires translation::kSparseGroupTable<typename Translation::Table>;
  bool try_densify(Space* s, BlockId block)
    requires translation::kSparseGroupTable<typename Translation::Table>;
  bool move_group(Space* s, BlockId block, bool to_sparse)
    requires translation::kSparseGroupTable<typename Translation::Table>;
  // check_invariants() for sparse groups (pool/sparse_moves.h). pending_pages: sorted raw
  // page ids of the reads in flight.
  void check_sparse_groups(const std::vector<uint64_t>& pending_pages) const
    requires translation::kSparseGroupTable<typename Translation::Table>;

  // --- tiered memory (pool/tiering.h, pool/tier_moves.h) ---
  // Whether frame f is in the far tier. False for every frame without a far tier (fast_last_
  // is then the last frame) and compiled away for policies that cannot take one.
  bool in_far_tier(FrameId f) const {
    if constexpr (kTierable) {
      return f > fast_last_;
    } else {
      (void)f;
      return false;
    }
  }
  int tier_of(FrameId f) const { return in_far_tier(f) ? 1 : 0; }
  // An access found pid in far frame w.frame(): counts the far hit, and with the configured
  // probability tries to promote the page (try_promote_far); else charges the access. True
  // when the page moved (the caller reloads the entry). Never waits.
  [[gnu::noinline]] bool far_hit(Space* space, PageId pid, translation::Entry& e, translation::EntryWord w,
                                 bool write);
  void charge_far_access() const;
  // Promotion: moves pid (seen resident in a far frame as `seen`) into a free fast frame,
  // demoting a batch first if none is free. Every lock and latch is only tried. Returns
  // whether it moved the page.
  bool try_promote_far(Space* space, PageId pid, translation::Entry& e, translation::EntryWord seen);
  // Demotion of up to n cold fast pages (CLOCK over tier 0) into free far frames; n <= the
  // far tier's free frames. Pre: evict_mutex_ held. Returns the pages moved.
  uint32_t demote_locked(uint32_t n);
  // Gives a frame that holds no page back to its tier's free list.
  void free_frame(FrameId f) {
    if (in_far_tier(f)) {
      far_->free.push(f);
    } else {
      free_list_.push(f);
    }
  }
  // pin_shared / pin_exclusive that also report the frame they pinned.
  SharedGuard pin_shared_at(PageId pid, FrameId* frame);
  ExclusiveGuard pin_exclusive_at(PageId pid, FrameId* frame);

  // Frame ownership changes (pool/README.md, "Frame ownership"). publish_owner: after the
  // page is in frame f and before its entry is published; clear_owner: under the page's
  // exclusive latch, before its entry is zeroed. With frame hints they also set / clear the
  // frame's entry pointer (nothing else for other policies).
  void publish_owner(FrameId f, PageId pid, translation::Entry& e) {
    if constexpr (kFrameHints) frame_entries_[f].store(&e, std::memory_order_release);
    meta_[f].owner.store(pid.raw, std::memory_order_release);
  }
  void clear_owner(FrameId f) {
    meta_[f].owner.store(0, std::memory_order_release);
    if constexpr (kFrameHints) frame_entries_[f].store(nullptr, std::memory_order_release);
  }
  // Frame hints: the entry pointer of frame f if f is a frame owned by pid (step (1) and (2)
  // of the proof at read_optimistic_hinted), else nullptr.
  translation::Entry* hinted_entry(PageId pid, FrameId f) const
    requires kFrameHints
  {
    if (f - 1 >= frames_.num_frames()) return nullptr;  // kInvalidFrame (wraps) or past the end
    if (!owned_by(f, pid)) return nullptr;
    return frame_entries_[f].load(std::memory_order_acquire);
  }
  // The hinted pins' fast path: latches e (shared, or exclusive) while it shows frame f,
  // then confirms meta[f].owner == pid under the latch. Returns e and sets *held to the word
  // now in it (the guard's), or nullptr with nothing held.
  template <bool kExclusiveLatch>
  translation::Entry* latch_hinted(PageId pid, FrameId f, translation::EntryWord* held)
    requires kFrameHints;
  bool owned_by(FrameId f, PageId pid) const {
    return meta_[f].owner.load(std::memory_order_acquire) == pid.raw;
  }
  void count_hint(bool hit) {
    std::atomic<uint64_t>& c = hit ? thread_counter()->hint_hits : thread_counter()->hint_misses;
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Slow path shared by every access that found the entry not usable: faults the page in
  // when it is evicted, helps asynchronous reads complete, or backs off while latched.
  // Recycling tables: called through retry(), which first checks that e is pid's.
  void wait_or_fault(Space* space, PageId pid, translation::Entry& e,
                     translation::EntryWord seen, int* spins);
  void fault(Space* space, PageId pid, translation::Entry& e);

  // Frames: a free frame, evicting a batch when none is free; kPoolFull when nothing can be
  // evicted for options_.pool_full_wait_ms. With `may_fail`, returns kInvalidFrame instead of waiting.
  // `preferred`: the frame this page should go to (kDirect: must), or kInvalidFrame.
  FrameId get_frame(bool may_fail, PageId pid);
  // One CLOCK round under evict_mutex_: evicts up to eviction_batch pages. Returns the
  // number of frames freed (1 when enough were already free). When `wait` is false and
  // another thread is evicting, returns 0 at once. A failed write-back is the page's, not
  // the caller's: the page stays resident and dirty, stats() counts it, and the first one
  // is described in *write_failure (if given). Throws only kIoError when this thread has no
  // I/O ring, before it latches anything.
  struct WriteFailure {
    PageId pid;        // invalid: no write-back failed
    std::string what;  // names the page, the file and the error
  };
  uint32_t evict_batch(bool wait, WriteFailure* write_failure = nullptr);
  // A page latched exclusively by an eviction or demotion round.
  struct Victim {
    Space* space;
    PageId pid;
    FrameId frame;
    translation::Entry* entry;  // latched exclusively by this round until `done`
    translation::EntryWord held;
    bool write_failed;
    bool done;  // evicted, moved, or unlatched and kept
  };
  // Unlatches, unchanged, every victim not yet done (on every path out of a round).
  struct VictimLatches {
    std::vector<Victim>& victims;
    ~VictimLatches() {
      for (Victim& v : victims) {
        if (!v.done) translation::unlock_exclusive(*v.entry, v.held, /*bump_version=*/false);
      }
    }
  };
  // CLOCK over `hand`'s frames (range_frames of them): marks unlocked pages and latches up
  // to `batch` marked ones (never kWrittenUnsynced pages) into `victims`. Pre: evict_mutex_
  // held, victims.capacity() >= batch.
  void collect_victims(pool::ClockHand& hand, FrameId range_frames, uint32_t batch, std::vector<Victim>& victims);
  // Moves every victim (latched exclusively, all in one tier) into the frame to[i] of the
  // other tier (taken, owner 0): copies them all, discards the sources (pages in place:
  // adjacent pages in one madvise), then publishes each and frees its old frame. Counts the
  // time in far_->migration_ns. Pre: to.size() == victims.size().
  void migrate_latched(std::vector<Victim>& victims, const std::vector<FrameId>& to);
  // Batched promotion (kBatchedMigration): queues pid, seen in the far tier by an access that
  // drew promotion; when promotion_batch pages are queued, migrates them (promote_batch).
  // Never waits for a latch. Returns whether pid itself moved (the caller reloads its entry).
  bool queue_promotion(PageId pid);
  // Moves the queued pages still in the far tier and unlatched into free fast frames
  // (demoting a batch first when too few are free), every lock and latch only tried.
  bool promote_batch(std::vector<PageId>& batch, PageId wanted);
  // Adds the time since `start` to far_->migration_ns (PoolStats::migration_ns).
  void count_migration(std::chrono::steady_clock::time_point start) const;
  // One eviction round to disk over `hand`'s frames (tier `tier`). Pre: evict_mutex_ held.
  uint32_t evict_locked(io::IoRing& ring, pool::ClockHand& hand, FrameId range_frames, int tier,
                        WriteFailure* write_failure);
  // A round of the tiered evictor: frees tier-0 frames by demotion, evicting far pages to
  // disk first when the far tier has too few free frames; evicts fast pages to disk only
  // when the far tier can take none. Pre: evict_mutex_ held, far_ set.
  uint32_t make_room_tiered(io::IoRing& ring, WriteFailure* write_failure);
  // This thread's counters in this pool (registered on first use). Only this thread writes
  // them (relaxed load + store, no atomic read-modify-write); stats() sums them. A cache
  // line of its own: read_fast bumps `accesses` on every hit, and two threads' counters
  // allocated side by side would share a line that both write.
  struct alignas(64) ThreadCounter {
    std::thread::id thread;
    std::atomic<uint64_t> accesses{0};     // translation lookups (entry_for)
    std::atomic<uint64_t> hint_hits{0};    // hinted accesses that skipped the translation
    std::atomic<uint64_t> hint_misses{0};  // hinted accesses that fell back to it
    std::atomic<uint64_t> far_hits{0};     // accesses that found their page in the far tier
  };
  static_assert(sizeof(ThreadCounter) % 64 == 0, "one cache line per thread's counters");
  ThreadCounter* thread_counter() {
    struct Registered {
      uint64_t pool_uid = 0;
      ThreadCounter* counter = nullptr;
    };
    thread_local Registered reg;
    if (reg.pool_uid != uid_) [[unlikely]] reg = Registered{uid_, register_thread()};
    return reg.counter;
  }
  ThreadCounter* register_thread();
  // The calling thread's async lane (index into lanes_).
  uint32_t thread_lane() {
    struct Dealt {
      uint64_t pool_uid = 0;
      uint32_t lane = 0;
    };
    thread_local Dealt dealt;
    if (dealt.pool_uid != uid_) [[unlikely]] {
      dealt = Dealt{uid_, next_lane_.fetch_add(1, std::memory_order_relaxed) % pool::kMaxAsyncLanes};
    }
    return dealt.lane;
  }
  // Completes the reads of the lane `e` is pending in until `e` is no longer that read.
  void help_async(const translation::Entry& e);
  // Pre: lane.mutex held. Publishes a completed read, or returns the page to evicted.
  void complete_async(AsyncLane& lane, uint64_t slot, int result, uint64_t now_ns);
  // Reaps lane's completed reads (waiting for one when `wait`). Pre: lane.mutex held.
  void reap_lane(AsyncLane& lane, bool wait);
  // Completes what is done in every busy lane but the caller's own (unless include_own: the
  // caller then holds no lane), each only if its mutex is free at once (never waits): a
  // thread that prefetched and then ended (or stopped prefetching) leaves completed reads
  // whose frames nobody else would release.
  void reap_other_lanes(bool include_own = false);
  // Waits for every lane's reads to complete. Never throws: returns the lanes whose ring gave
  // up (io_ring.h), whose reads stay in flight and whose frames stay out of the pool.
  uint32_t drain_async();
  void abandon_reads(const Space* space);

  io::IoRing& thread_ring();
  // Writes the catalog: the live spaces at their durable counts, plus `added` (a space being
  // created), minus `skipped` (a space being dropped). Pre: spaces_mutex_ held.
  void write_catalog_locked(const pool::CatalogSpace* added = nullptr, SpaceId skipped = kInvalidSpace);
  Space* live_space(SpaceId id) const;  // nullptr when unknown or dropped

  // Consecutive eviction rounds that free nothing because write-backs fail before a caller
  // that needs a frame gets kIoError (each round retries the failing pages).
  static constexpr int kMaxFailedEvictionRounds = 4;
  static constexpr uint64_t kGrowMinBlocks = 64;  // files grow by max(64 pages, 1/8)

  PoolOptions options_;
  uint64_t uid_;
  int lock_fd_ = -1;    // the data directory's LOCK (pool/data_dir.h), flock()ed
  bool opened_ = false;  // open() succeeded: only then may the destructor flush or write
  memory::FrameArena frames_;
  // The last frame of tier 0: the arena's last frame without a far tier (pool/tiering.h).
  const FrameId fast_last_;
  std::unique_ptr<pool::FrameMeta[]> meta_;
  pool::FreeList free_list_;
  translation::SpaceDirectory<Space> directory_;
  // Predictive translations: preferred frames and move counters (empty for the others).
  [[no_unique_address]] const typename pool::PredictorOf<Translation>::type predictor_{frames_.num_frames()};
  [[no_unique_address]] mutable pool::MoveCountersOf<Translation> moves_;

  mutable std::mutex spaces_mutex_;  // creation/drop, the catalog, spaces_
  std::vector<std::unique_ptr<Space>> spaces_;  // every space ever opened (type-stable)
  SpaceId next_space_id_ = 1;

  std::mutex evict_mutex_;  // one evictor at a time; guards clock_
  pool::ClockHand clock_;

  // Prefetch reads: one ring per lane, a lane per thread (pool/async_lane.h).
  std::unique_ptr<AsyncLane[]> lanes_;  // kMaxAsyncLanes
  std::atomic<uint32_t> next_lane_{0};  // deals lanes to threads round-robin
  // Bit i: lane i may have reads in flight (set by its submissions, cleared when a reap under
  // its mutex leaves it idle), so that eviction can complete the reads of lanes whose
  // threads went away (reap_other_lanes).
  std::atomic<uint64_t> busy_lanes_{0};
  static_assert(pool::kMaxAsyncLanes <= 64, "busy_lanes_ has one bit per lane");

  std::mutex flush_mutex_;

  // Eviction starts when free frames fall to this many (eviction_batch / 2), so that a
  // faulting thread usually finds a frame without waiting for a write-back.
  const uint32_t low_watermark_;

  mutable std::mutex thread_counters_mutex_;
  std::vector<std::unique_ptr<ThreadCounter>> thread_counters_;  // one per thread ever used

  struct Counters {
    std::atomic<uint64_t> faults{0}, evictions{0}, write_backs{0}, punches{0},
        prefetch_issued{0}, prefetch_failed{0}, optimistic_fallbacks{0}, hint_repairs{0},
        write_back_failures{0}, sync_failures{0}, read_inflight_ns{0};
  };
  mutable Counters counters_;
  // The far tier's state, or null (one tier). Set at construction, never changed.
  std::unique_ptr<pool::FarTier> far_;
  // Frame hints only: frame f's page's entry, or nullptr while f is free or loading.
  // Written by publish_owner / clear_owner; read without latches by hinted accesses.
  struct NoFrameEntries {};
  [[no_unique_address]] std::conditional_t<kFrameHints, std::unique_ptr<std::atomic<translation::Entry*>[]>,
                                           NoFrameEntries>
      frame_entries_;
  // kDirect: the entry that direct optimistic reads point at (never written).
  static inline translation::Entry direct_entry_{0};
};

// ------------------------------------------------------------------------------------
// Hot paths (inline): resolve the space, load one entry, CAS or read, done.

template <class T>
inline SharedGuard BasicBufferPool<T>::pin_shared(PageId pid) {
  FrameId frame;
  return pin_shared_at(pid, &frame);
}

template <class T>
inline SharedGuard BasicBufferPool<T>::pin_shared_at(PageId pid, FrameId* frame) {
  const FrameId predicted = predict(pid);
  Space* space;
  translation::Entry* e = &entry_for(pid, &space);
  for (int spins = 0;;) {
    translation::EntryWord w = translation::load(*e);
    if (promote_on_hit(space, pid, *e, w, predicted)) [[unlikely]] continue;
    if (in_far_tier(w.frame())) [[unlikely]] {
      if (far_hit(space, pid, *e, w, /*write=*/false)) continue;
    }
    if (translation::try_lock_shared(*e, w)) [[likely]] {
      if (owns(space, *e, pid)) [[likely]] {
        *frame = w.frame();
        return SharedGuard(e, page_data(space, pid, w.frame()), pid);
      }
      translation::unlock_shared(*e);  // another page's (recycled) entry: look pid up again
      e = &space->table.entry(pid.block());
      continue;
    }
    e = retry(space, pid, e, w, &spins);
  }
}

template <class T>
inline ExclusiveGuard BasicBufferPool<T>::pin_exclusive(PageId pid) {
  FrameId frame;
  return pin_exclusive_at(pid, &frame);
}

template <class T>
inline ExclusiveGuard BasicBufferPool<T>::pin_exclusive_at(PageId pid, FrameId* frame) {
  const FrameId predicted = predict(pid);
  Space* space;
  translation::Entry* e = &entry_for(pid, &space);
  for (int spins = 0;;) {
    translation::EntryWord w = translation::load(*e);
    if (promote_on_hit(space, pid, *e, w, predicted)) [[unlikely]] continue;
    if (in_far_tier(w.frame())) [[unlikely]] {
      if (far_hit(space, pid, *e, w, /*write=*/true)) continue;
    }
    if (translation::try_lock_exclusive(*e, w)) [[likely]] {
      translation::EntryWord held = w.with_state(translation::kExclusive);
      if (owns(space, *e, pid)) [[likely]] {
        *frame = w.frame();
        return ExclusiveGuard(e, held, page_data(space, pid, w.frame()), &meta_[w.frame()], pid);
      }
      // Another page's (recycled) entry: give its latch back unchanged, look pid up again.
      translation::unlock_exclusive(*e, held, /*bump_version=*/false);
      e = &space->table.entry(pid.block());
      continue;
    }
    e = retry(space, pid, e, w, &spins);
  }
}

template <class T>
inline ExclusiveGuard BasicBufferPool<T>::try_pin_exclusive(PageId pid) {
  Space* space;
  translation::Entry* e = find_entry_for(pid, &space);  // a page without an entry is evicted
  if (e == nullptr) return ExclusiveGuard();
  // A failed CAS means the word changed (a pin, CLOCK's mark): look again, a bounded number
  // of times; a latched, pinned, evicted or loading page gives up at once.
  for (int attempt = 0; attempt < kTryLatchAttempts; ++attempt) {
    translation::EntryWord w = translation::load(*e);
    if (!w.resident() || !w.unlatched()) break;
    if (translation::try_lock_exclusive(*e, w)) {
      translation::EntryWord held = w.with_state(translation::kExclusive);
      if (!owns(space, *e, pid)) [[unlikely]] {
        // Recycled for another page: pid was evicted meanwhile. Give the latch back unchanged.
        translation::unlock_exclusive(*e, held, /*bump_version=*/false);
        break;
      }
      if (in_far_tier(w.frame())) [[unlikely]] charge_far_access();  // never promotes: it never waits
      return ExclusiveGuard(e, held, page_data(space, pid, w.frame()), &meta_[w.frame()], pid);
    }
    after_failed_cas(space, pid.block(), *e);
  }
  return ExclusiveGuard();
}

// --- frame hints (the proof is at the declaration of read_optimistic_hinted) --------------

template <class T>
inline OptimisticRead BasicBufferPool<T>::read_optimistic_hinted(PageId pid, FrameId* hint)
  requires translation::kHasFrameHints<T>
{
  const FrameId f = *hint;
  if (translation::Entry* e = hinted_entry(pid, f)) [[likely]] {   // (1), (2)
    translation::EntryWord w = translation::load(*e);              // (3)
    if (w.frame() == f && w.state() != translation::kExclusive && owned_by(f, pid)) [[likely]] {  // (4)
      if (w.state() == translation::kMarked) [[unlikely]] {
        if (!translation::try_cas(*e, w, w.with_state(translation::kUnlocked))) {  // CLOCK's second chance
          after_failed_cas(pid, *e);
        }
      }
      count_hint(true);
      return OptimisticRead{frames_.frame(f), e, w, pid};
    }
  }
  count_hint(false);
  OptimisticRead r = read_optimistic(pid);
  *hint = r.seen.frame();
  return r;
}

template <class T>
template <bool kExclusiveLatch>
inline translation::Entry* BasicBufferPool<T>::latch_hinted(PageId pid, FrameId f, translation::EntryWord* held)
  requires kFrameHints
{
  translation::Entry* e = hinted_entry(pid, f);
  if (e == nullptr) return nullptr;
  for (int attempt = 0; attempt < kTryLatchAttempts; ++attempt) {
    translation::EntryWord w = translation::load(*e);
    if (w.frame() != f) return nullptr;
    if (!(kExclusiveLatch ? translation::try_lock_exclusive(*e, w) : translation::try_lock_shared(*e, w))) {
      after_failed_cas(pid, *e);
      continue;
    }
    if (owned_by(f, pid)) [[likely]] {
      *held = kExclusiveLatch ? w.with_state(translation::kExclusive) : w;
      return e;
    }
    // e is another page's entry: give its latch back, unchanged (no version bump).
    if constexpr (kExclusiveLatch) {
      translation::unlock_exclusive(*e, w.with_state(translation::kExclusive), /*bump_version=*/false);
    } else {
      translation::unlock_shared(*e);
    }
    return nullptr;
  }
  return nullptr;
}

template <class T>
inline SharedGuard BasicBufferPool<T>::pin_shared_hinted(PageId pid, FrameId* hint)
  requires translation::kHasFrameHints<T>
{
  translation::EntryWord held;
  if (translation::Entry* e = latch_hinted<false>(pid, *hint, &held)) [[likely]] {
    count_hint(true);
    return SharedGuard(e, frames_.frame(*hint), pid);
  }
  count_hint(false);
  return pin_shared_at(pid, hint);
}

template <class T>
inline ExclusiveGuard BasicBufferPool<T>::pin_exclusive_hinted(PageId pid, FrameId* hint)
  requires translation::kHasFrameHints<T>
{
  translation::EntryWord held;
  if (translation::Entry* e = latch_hinted<true>(pid, *hint, &held)) [[likely]] {
    count_hint(true);
    return ExclusiveGuard(e, held, frames_.frame(*hint), &meta_[*hint], pid);
  }
  count_hint(false);
  return pin_exclusive_at(pid, hint);
}

template <class T>
inline OptimisticRead BasicBufferPool<T>::read_optimistic(PageId pid, uint32_t touch_offset) {
  if constexpr (T::kDirect) {
    // The physical limit: no lookup, no residency check (see DirectTranslation).
    return OptimisticRead{frames_.frame(static_cast<FrameId>(pid.block()) + 1), &direct_entry_,
                          translation::EntryWord{0}, pid};
  }
  OptimisticRead r;
  if (read_fast(pid, &r, touch_offset)) [[likely]] return r;
  return read_optimistic_slow(pid);
}

template <class T>
[[gnu::always_inline]] inline bool BasicBufferPool<T>::read_fast(PageId pid, OptimisticRead* r,
                                                                uint32_t touch_offset) {
  if constexpr (pool::Predicting<T>) {
    (void)pid, (void)r, (void)touch_offset;
    return false;  // every access may promote: the general loop
  } else {
    auto& c = translation::tls_path_cache;
    if (!path_cached(c, pid.space())) [[unlikely]] return false;
    if (pid.block() >= c.capacity) [[unlikely]] return false;
    Space* space = static_cast<Space*>(c.owner);
    if constexpr (!T::kPagesInPlace) {
      // Frame prediction (PrediCache's idea on the array): while the entry loads, start the
      // frame the last reads' frame-block difference predicts, so that on a hit the entry
      // and the page arrive together instead of one after the other. Only a prefetch (which
      // never faults, even past the arena): a wrong guess costs a cache line, never
      // correctness. The line prefetched is the one the caller reads first.
      if (c.delta_stable) __builtin_prefetch(frames_.frame(pid.block() + c.frame_delta) + touch_offset);
    }
    translation::Entry* e;
    if constexpr (T::kFlatEntries) {
      e = &c.entries[pid.block()];
    } else {
      e = &space->table.entry(pid.block());
    }
    const translation::EntryWord w = translation::load(*e);  // acquire: then the owner (entry.h R5)
    // Resident, unlatched and unmarked (a marked page's read clears the mark: the slow path).
    // Tiered pools: a page in the far tier takes the slow path (charged, maybe promoted).
    // One compare of the frame id against fast_last_ (the arena's last frame without a far
    // tier, so never true then); compiled away for policies that cannot take a far tier.
    // Flat entries are their block's (array_sparse: a non-zero array word is the entry).
    if (!w.resident() || w.state() != translation::kUnlocked || (!T::kFlatEntries && !owns(space, *e, pid)) ||
        in_far_tier(w.frame()))
        [[unlikely]] {
      return false;
    }
    std::atomic<uint64_t>* accesses = c.accesses;
    accesses->store(accesses->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if constexpr (!T::kPagesInPlace) {
      const uint32_t delta = w.frame() - pid.block();
      if (delta != c.frame_delta || !c.delta_stable) [[unlikely]] {
        c.delta_stable = delta == c.frame_delta;
        c.frame_delta = delta;
      }
    }
    *r = OptimisticRead{page_data(space, pid, w.frame()), e, w, pid};
    return true;
  }
}

template <class T>
[[gnu::noinline]] OptimisticRead BasicBufferPool<T>::read_optimistic_slow(PageId pid) {
  const FrameId predicted = predict(pid);
  Space* space;
  translation::Entry* e = &entry_for(pid, &space);
  for (int spins = 0;;) {
    translation::EntryWord w = translation::load(*e);  // acquire: then the owner (entry.h R5)
    if (promote_on_hit(space, pid, *e, w, predicted)) [[unlikely]] continue;
    if (w.resident() && w.state() != translation::kExclusive) [[likely]] {
      if (!owns(space, *e, pid)) [[unlikely]] {
        e = &space->table.entry(pid.block());  // recycled for another page: look up again
        continue;
      }
      if (in_far_tier(w.frame())) [[unlikely]] {
        if (far_hit(space, pid, *e, w, /*write=*/false)) continue;
      }
      if (w.state() == translation::kMarked) [[unlikely]] {
        // Second chance: an access clears CLOCK's mark (the only write, and a rare one).
        if (!translation::try_cas(*e, w, w.with_state(translation::kUnlocked))) after_failed_cas(space, pid.block(), *e);
      }
      return OptimisticRead{page_data(space, pid, w.frame()), e, w, pid};
    }
    e = retry(space, pid, e, w, &spins);
  }
}

template <class T>
template <class Fn>
[[gnu::always_inline]] inline auto BasicBufferPool<T>::optimistic_read(PageId pid, Fn&& fn, uint32_t touch_offset)
    -> std::invoke_result_t<Fn&, const std::byte*> {
  using R = std::invoke_result_t<Fn&, const std::byte*>;
  if constexpr (!T::kDirect) {
    // The fast path inline (resident, unlatched, one attempt); the retry loop out of line.
    OptimisticRead r;
    if (read_fast(pid, &r, touch_offset)) [[likely]] {
      if constexpr (std::is_void_v<R>) {
        fn(r.data);
        if (validate(r)) [[likely]] return;
      } else {
        R result = fn(r.data);
        if (validate(r)) [[likely]] return result;
      }
      return optimistic_read_slow(pid, fn, 1);  // that was the first of kOptimisticAttempts
    }
  }
  return optimistic_read_slow(pid, fn, 0);
}

template <class T>
template <class Fn>
[[gnu::noinline]] auto BasicBufferPool<T>::optimistic_read_slow(PageId pid, Fn& fn, int attempts_made)
    -> std::invoke_result_t<Fn&, const std::byte*> {
  using R = std::invoke_result_t<Fn&, const std::byte*>;
  for (int attempt = attempts_made; attempt < kOptimisticAttempts; ++attempt) {
    OptimisticRead r = read_optimistic(pid);
    if constexpr (std::is_void_v<R>) {
      fn(r.data);
      if (validate(r)) return;
    } else {
      R result = fn(r.data);
      if (validate(r)) return result;
    }
  }
  // Repeated conflicts: stop wasting work and read under a shared pin (as pgvector on Calico).
  counters_.optimistic_fallbacks.fetch_add(1, std::memory_order_relaxed);
  SharedGuard g = pin_shared(pid);
  return fn(g.data());
}

// The default pool: Calico's translation arrays.
using BufferPool = BasicBufferPool<translation::ArrayTranslation>;
#ifndef CALICO_IMPLICIT_INSTANTIATION  // the fuzz build (CMakeLists.txt, CALICO_FUZZ)
extern template class BasicBufferPool<translation::ArrayTranslation>;
#endif

}  // namespace calico
