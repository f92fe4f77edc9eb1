// The buffer pool: Calico's API. Pages of spaces (one file each) are cached in frames of one
// huge-page arena; a page id is translated to its 64-bit state word {frame | version | state}
// by the Translation policy (calico/translation_policy.h). BufferPool translates with
// Calico's arrays; the other policies (calico/variants.h) are the designs it is compared with.
//
// Contracts (src/pool/README.md has the full rules and the lock order):
//  - Every method may be called from any number of threads at once.
//  - A guard's data() is valid until the guard is released or destroyed. The usable page is
//    usable_page_size() bytes; the last kTrailerBytes of a page are the on-disk trailer.
//  - A thread must not wait for a latch it holds itself: pinning exclusively a page it
//    already pins, dropping a space it holds pins in, or flushing while it holds an
//    exclusive guard deadlocks.
//  - fn given to optimistic_read may see a page that is being modified (the result is then
//    thrown away and fn runs again). It must not crash on any bytes: no unchecked pointer or
//    index taken from the page, no side effects beyond its own locals and its result
//    (calico/optimistic_reader.h helps).
//  - Errors are calico::Error (calico/error.h) naming the page, space or file; the pool stays
//    usable after any of them, and a failed operation changes no stored page.
//
// Implementation: src/pool/pool_core.h holds the state; src/pool/README.md walks one page
// access through src/pool/access.h and src/pool/fault.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "calico/detail/pool_core.h"
#include "calico/error.h"
#include "calico/guards.h"
#include "calico/page_id.h"
#include "calico/options.h"
#include "calico/stats.h"
#include "calico/translation_policy.h"

namespace calico {

// Every hot access forwards with [[gnu::always_inline]]: the call into the core then inlines
// exactly as it would without this class (bench/experiments/micro_counts.sh counts the same
// instructions; docs/design/hot_path.md), which a plain inline forwarder of a large inlined
// body does not guarantee.
template <TranslationPolicy Translation>
class BasicBufferPool {
  using Core = pool::PoolCore<Translation>;

 public:
  using TranslationPolicy = Translation;
  static constexpr std::string_view kTranslationName = Translation::kName;
  // What the policy can do (calico/translation_policy.h): frame hints, recycled entries,
  // a far memory tier, migration in batches.
  static constexpr bool kFrameHints = translation::kHasFrameHints<Translation>;
  static constexpr bool kRecyclesEntries = Core::kRecyclesEntries;
  static constexpr bool kSparseGroups = Core::kSparseGroups;
  static constexpr bool kTierable = Core::kTierable;
  static constexpr bool kBatchedMigration = Core::kBatchedMigration;

  static constexpr int kOptimisticAttempts = Core::kOptimisticAttempts;  // before optimistic_read pins
  static constexpr size_t kTrailerBytes = Core::kTrailerBytes;           // checksum trailer of a page

  // Opens the data directory (creating it and an empty catalog if needed) and reopens every
  // space recorded in its catalog. Nothing on disk changes until every check has passed.
  // Errors: kInvalidArgument (options), kPageSizeMismatch, kCorruptCatalog, kIoError (also
  // when another pool has the directory open).
  static std::unique_ptr<BasicBufferPool> open(const PoolOptions& options);
  // Flushes (errors are printed, not thrown) and closes.
  ~BasicBufferPool() = default;
  BasicBufferPool(const BasicBufferPool&) = delete;
  BasicBufferPool& operator=(const BasicBufferPool&) = delete;

  // --- spaces ------------------------------------------------------------------------------
  // Names: 1..64 characters of [A-Za-z0-9_.-]. Errors: kInvalidArgument, kSpaceExists.
  SpaceId create_space(std::string_view name) { return core_.create_space(name); }
  // Errors: kUnknownSpace.
  SpaceId open_space(std::string_view name) const { return core_.open_space(name); }
  // Frees the space's frames (dirty pages are discarded), its translation memory and its
  // file. Waits for pins held by other threads. Errors: kUnknownSpace.
  void drop_space(SpaceId space) { core_.drop_space(space); }
  uint64_t space_blocks(SpaceId space) const { return core_.space_blocks(space); }
  std::vector<SpaceInfo> spaces() const { return core_.spaces(); }

  // --- pages -------------------------------------------------------------------------------
  // Appends a zeroed, dirty page to the space; returns it exclusively latched.
  // Errors: kUnknownSpace, kInvalidArgument (space at max_blocks_per_space), kPoolFull.
  ExclusiveGuard allocate(SpaceId space) { return core_.allocate(space); }

  // A shared pin (many readers) or the exclusive latch (one writer; mark_dirty() to persist)
  // of pid, faulting the page in when it is evicted. Errors (every access below):
  // kUnknownSpace, kPageOutOfRange, kPoolFull, kIoError, kShortRead, kChecksumMismatch (the
  // page stays evicted; other pages are unaffected).
  [[gnu::always_inline]] SharedGuard pin_shared(PageId pid) { return core_.pin_shared(pid); }
  [[gnu::always_inline]] ExclusiveGuard pin_exclusive(PageId pid) { return core_.pin_exclusive(pid); }

  // Runs fn(const std::byte* page) optimistically and returns its result once a validation
  // succeeds; after kOptimisticAttempts failed validations it pins the page shared and runs
  // fn once more under the pin. No atomic write on the happy path.
  // touch_offset: the byte of the page fn reads first (< page size; 0 for a header), which
  // is prefetched while the translation entry loads.
  template <class Fn>
  [[gnu::always_inline]] auto optimistic_read(PageId pid, Fn&& fn, uint32_t touch_offset = 0)
      -> std::invoke_result_t<Fn&, const std::byte*> {
    return core_.optimistic_read(pid, std::forward<Fn>(fn), touch_offset);
  }

  // optimistic_read split in two, for optimistic lock coupling in indexes: waits while the
  // page is exclusively latched, faults it in if evicted; the caller reads r.data, then
  // calls validate(r). false means the bytes read may be torn: start again.
  [[gnu::always_inline]] OptimisticRead read_optimistic(PageId pid, uint32_t touch_offset = 0) {
    return core_.read_optimistic(pid, touch_offset);
  }
  [[gnu::always_inline]] static bool validate(const OptimisticRead& r) { return Core::validate(r); }

  // The exclusive latch of pid if it can be taken at once: the page is resident and neither
  // pinned nor latched. Otherwise an empty guard (held() == false); never waits, never
  // faults. Errors: kUnknownSpace, kPageOutOfRange.
  [[gnu::always_inline]] ExclusiveGuard try_pin_exclusive(PageId pid) { return core_.try_pin_exclusive(pid); }

  // --- group prefetch ([Calico] Algorithm 4) ------------------------------------------------
  // Prefetches the entries of pids, then the cache line at offsets[i] of each resident page,
  // then submits one batch of asynchronous reads for the evicted ones and returns. Best
  // effort: pages past a space's end, of unknown spaces, or for which no frame is free are
  // skipped. offsets may be empty (offset 0 for all), else pids.size() long.
  // Returns the number of reads submitted (0 when every page was resident or in flight).
  size_t prefetch_group(std::span<const PageId> pids, std::span<const uint32_t> offsets = {}) {
    return core_.prefetch_group(pids, offsets);
  }
  // prefetch_group that also starts the optimistic read of the resident pages, so that a
  // caller who then reads the whole group translates each page once. reads[i] is what
  // read_optimistic(pids[i]) returns on its fast path (validate it as such), or has data ==
  // nullptr when the group started none for it (evicted and now being read in, latched,
  // CLOCK-marked, or in another space than the thread's last access): then call
  // read_optimistic. A started read counts as an access.
  // Errors: kInvalidArgument when reads.size() != pids.size().
  size_t read_group(std::span<const PageId> pids, std::span<const uint32_t> offsets,
                    std::span<OptimisticRead> reads) {
    return core_.read_group(pids, offsets, reads);
  }
  // Reads blocks [first, first + count) of a space (clamped to its end) in ascending order
  // into free frames and waits for them (pg_prewarm). Evicts nothing: stops when the free
  // frames reach the eviction watermark. Returns how many of the asked pages are resident
  // when it returns. Errors: kUnknownSpace; I/O errors as pin_shared (pages read before the
  // failure stay resident).
  uint64_t prewarm(SpaceId space, BlockId first = 0, uint64_t count = UINT64_MAX) {
    return core_.prewarm(space, first, count);
  }

  // --- frame hints (policies with kFrameHints, e.g. lipah; [LIPAH] 3.1, 4.1, 4.4) -----------
  // A reference is (pid, frame hint). `*hint` may be anything (0, stale, out of range, read
  // from disk): it is only followed after checks. When the hinted frame holds pid, the access
  // skips the translation (PoolStats::hints.hits). Otherwise it falls back to the unhinted
  // access (PoolStats::hints.misses) and sets *hint to the frame it used, so that the caller
  // can repair its stored hint. Why a hinted access never returns another page: the proof at
  // read_optimistic_hinted in src/pool/features/frame_hints.h.
  [[gnu::always_inline]] OptimisticRead read_optimistic_hinted(PageId pid, FrameId* hint)
    requires translation::kHasFrameHints<Translation>
  {
    return core_.read_optimistic_hinted(pid, hint);
  }
  [[gnu::always_inline]] SharedGuard pin_shared_hinted(PageId pid, FrameId* hint)
    requires translation::kHasFrameHints<Translation>
  {
    return core_.pin_shared_hinted(pid, hint);
  }
  [[gnu::always_inline]] ExclusiveGuard pin_exclusive_hinted(PageId pid, FrameId* hint)
    requires translation::kHasFrameHints<Translation>
  {
    return core_.pin_exclusive_hinted(pid, hint);
  }
  // Opportunistic hint repair: if `holder` can be latched exclusively at once, runs
  // write(std::byte* page) under the latch and returns its result (true: it wrote a hint;
  // PoolStats::hints.repairs); otherwise false. write may change only hint bytes (every use
  // of a hint checks it). The page is not marked dirty: a hint persists only if the page is
  // written for another reason. Errors: those of try_pin_exclusive.
  template <class Fn>
  bool repair_hint(PageId holder, Fn&& write)
    requires translation::kHasFrameHints<Translation>
  {
    return core_.repair_hint(holder, std::forward<Fn>(write));
  }

  // --- durability --------------------------------------------------------------------------
  // Writes every dirty page (in batches), fsyncs every space file and the catalog: the
  // durability point. After a crash, a reopened pool holds exactly what the last flush wrote
  // (allocations after it are forgotten). Closing the pool flushes.
  // Errors: kIoError naming the first failure (a page write, a file's fdatasync, the
  // catalog) and counting the others. Every space is synced even when one fails. After a
  // failed flush, every page it could not make durable is dirty again and the next flush
  // rewrites it (src/pool/README.md, rule 6).
  void flush() { core_.flush(); }

  // --- reports -----------------------------------------------------------------------------
  PoolStats stats() const { return core_.stats(); }
  size_t page_size() const { return core_.page_size(); }
  size_t usable_page_size() const { return core_.usable_page_size(); }
  FrameId num_frames() const { return core_.num_frames(); }
  const PoolOptions& options() const { return core_.options(); }

  // Whole-structure check for tests, at quiescence (no concurrent operations): every
  // resident entry and its frame agree, free frames are referenced by no entry, every frame
  // is owned, free, or the target of one read in flight, no pins or latches are held, and
  // every hole-punch count equals the non-zero entries of its group. Throws
  // std::logic_error naming the first violation.
  void check_invariants() const { core_.check_invariants(); }

  // Tests and diagnostics, expert use only: the implementation (src/pool/pool_core.h), for
  // what a test must observe or force (the frame of a page, group and tier moves, ...).
  Core& internals() { return core_; }
  const Core& internals() const { return core_; }

 private:
  explicit BasicBufferPool(const PoolOptions& options) : core_(options) {}
  Core core_;
};

// The default pool: Calico's translation arrays.
using BufferPool = BasicBufferPool<translation::ArrayTranslation>;
#ifndef CALICO_IMPLICIT_INSTANTIATION  // the fuzz build (CMakeLists.txt, CALICO_FUZZ)
extern template class pool::PoolCore<translation::ArrayTranslation>;
extern template class BasicBufferPool<translation::ArrayTranslation>;
#endif

}  // namespace calico
