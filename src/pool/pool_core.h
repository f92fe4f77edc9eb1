// PoolCore<Translation>: the buffer pool's implementation, one class shared by every
// translation policy. calico/buffer_pool.h is its API (and holds it by value); this file
// holds its state and declares its steps, each defined in the file named beside it:
//
//   access.h               the hit paths: resolve the space, load one entry, latch or read
//   fault.h                misses: wait, fault a page in, allocate
//   eviction.h             CLOCK eviction and write-back; get_frame
//   prefetch.h             group prefetch (asynchronous reads, lanes), prewarm
//   flush.h                flush and the durability point
//   spaces.h               create, open, drop spaces; the catalog
//   open_close.h           open, close, per-thread state
//   stats_invariants.h     stats() and check_invariants()
//   features/              what only some policies compile in: looked-up entries (recycled,
//                          sparse), frame hints, promotion (predictive), tiers, sparse groups
//
// The rules every step keeps (latching, the entry word's transitions, the lock order, who
// writes an entry) are in README.md beside this file; the entry word is translation/entry.h.
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
#include "calico/guards.h"
#include "calico/page_id.h"
#include "calico/options.h"
#include "calico/stats.h"
#include "calico/translation_policy.h"
#include "memory/frame_arena.h"
#include "pool/async_lane.h"
#include "pool/clock.h"
#include "pool/data_dir.h"
#include "pool/features/prediction.h"
#include "pool/features/tiering.h"
#include "pool/frame_meta.h"
#include "pool/free_list.h"
#include "pool/journal.h"
#include "pool/space.h"
#include "translation/array/array.h"
#include "translation/entry.h"
#include "translation/space_directory.h"

namespace calico {

namespace io {
class FaultInjector;
class IoRing;
}  // namespace io

namespace pool {
struct CatalogSpace;

template <class Translation>
class PoolCore {
 public:
  using TranslationPolicy = Translation;
  using Space = pool::BasicSpace<typename Translation::Table>;
  using AsyncLane = pool::AsyncLane<Space>;
  static constexpr std::string_view kTranslationName = Translation::kName;
  static constexpr bool kFrameHints = translation::kHasFrameHints<Translation>;
  static constexpr bool kRecyclesEntries = translation::kRecyclingTable<typename Translation::Table>;
  // A page's entry lives in the array or, for a sparse group, in a side table, and moves
  // between them (array_sparse; pool/features/sparse_groups.h). Compiled out for every other policy.
  static constexpr bool kSparseGroups = translation::kSparseGroupTable<typename Translation::Table>;
  // Entries are found by a lookup that may miss and by pointers that may go stale.
  static constexpr bool kLookedUpEntries = kRecyclesEntries || kSparseGroups;
  static_assert(!kFrameHints || (!Translation::kPagesInPlace && !Translation::kDirect),
                "frame hints name frames of the frame arena");
  // Whether the pool can take a far tier (PoolOptions::tiers.far, pool/features/tiering.h): only tiered
  // policies (array_tiered, vmcache_n), so that every other policy's hot path has no tier
  // compare. A tiered policy's pages move freely and are reached only through their entry:
  // in frames (array_tiered), or in place in one region per tier (vmcache_n).
  static constexpr bool kTierable = translation::Tiered<Translation>;
  static_assert(!kTierable || (!Translation::kDirect && !translation::Predicting<Translation> && !kFrameHints),
                "a tiered policy's pages move freely and are reached only through their entry");
  // A tiered policy with pages in place (vmcache_n, translation/vmcache_n.h): a page's bytes
  // are in its space's region of the tier of the frame token it holds.
  static constexpr bool kTieredInPlace = kTierable && Translation::kPagesInPlace;
  // Demotions and promotions in batches (translation::BatchedMigration; vmcache_n).
  static constexpr bool kBatchedMigration = translation::BatchedMigration<Translation>;

  explicit PoolCore(const PoolOptions& options);  // open_close.h; then open_catalog
  ~PoolCore();                                    // flushes (errors printed), drains reads
  PoolCore(const PoolCore&) = delete;
  PoolCore& operator=(const PoolCore&) = delete;

  // --- the API (contracts in calico/buffer_pool.h) ---------------------------------------
  // Checks the options and opens the data directory (locked); nothing on disk changes.
  static DataDirectory open_directory(const PoolOptions& options);  // open_close.h
  // Reopens the catalog's spaces (a new directory: writes the first catalog).
  void open_catalog(DataDirectory& dir);  // open_close.h
  SpaceId create_space(std::string_view name);  // spaces.h
  SpaceId open_space(std::string_view name) const;
  void drop_space(SpaceId space);
  uint64_t space_blocks(SpaceId space) const;
  std::vector<SpaceInfo> spaces() const;
  ExclusiveGuard allocate(SpaceId space);  // fault.h
  SharedGuard pin_shared(PageId pid);  // access.h
  ExclusiveGuard pin_exclusive(PageId pid);
  template <class Fn>
  auto optimistic_read(PageId pid, Fn&& fn, uint32_t touch_offset = 0) -> std::invoke_result_t<Fn&, const std::byte*>;
  OptimisticRead read_optimistic(PageId pid, uint32_t touch_offset = 0);
  static bool validate(const OptimisticRead& r) {
    if constexpr (Translation::kDirect) return true;
    std::atomic_thread_fence(std::memory_order_acquire);
    translation::EntryWord now = translation::load(*r.entry, std::memory_order_relaxed);
    return now.frame_and_version() == r.seen.frame_and_version() &&
           now.state() != translation::kExclusive;
  }
  ExclusiveGuard try_pin_exclusive(PageId pid);
  OptimisticRead read_optimistic_hinted(PageId pid, FrameId* hint)  // features/frame_hints.h
    requires translation::kHasFrameHints<Translation>;  // not kFrameHints: clang 14 (fuzz build)
  SharedGuard pin_shared_hinted(PageId pid, FrameId* hint)
    requires translation::kHasFrameHints<Translation>;
  ExclusiveGuard pin_exclusive_hinted(PageId pid, FrameId* hint)
    requires translation::kHasFrameHints<Translation>;
  template <class Fn>
  bool repair_hint(PageId holder, Fn&& write)
    requires kFrameHints
  {
    ExclusiveGuard g = try_pin_exclusive(holder);
    if (!g.held() || !write(g.data())) return false;
    counters_.hint_repairs.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  size_t prefetch_group(std::span<const PageId> pids, std::span<const uint32_t> offsets = {});  // prefetch.h
  size_t read_group(std::span<const PageId> pids, std::span<const uint32_t> offsets, std::span<OptimisticRead> reads);
  uint64_t prewarm(SpaceId space, BlockId first = 0, uint64_t count = UINT64_MAX);
  void flush();  // flush.h
  PoolStats stats() const;  // stats_invariants.h
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

  // --- tests and diagnostics (BasicBufferPool::internals()) -------------------------------
  // The frame holding pid now, kInvalidFrame when it is not resident. Racy unless the pool
  // is quiescent. Errors: as pins (kUnknownSpace, kPageOutOfRange).
  FrameId frame_of(PageId pid) {
    Space* space;
    translation::Entry* e = find_entry_for(pid, &space);
    if (e == nullptr) return kInvalidFrame;
    translation::EntryWord w = translation::load(*e);
    return owns(space, *e, pid) ? w.frame() : kInvalidFrame;
  }
  // Sparse groups: tries to move pid's group into the side table now, as the evictor does
  // after an eviction; false when refused (a page of the group latched, pinned or loading, a
  // fault in flight in it, or the group not dense with 1 .. sparse_group_at references).
  // Never waits for a latch. Errors: as pins.
  bool try_sparse_group(PageId pid)
    requires translation::kSparseGroupTable<typename Translation::Table>;  // not kSparseGroups: clang 14 (fuzz build)
  // Whether pid's group is sparse now (racy unless quiescent).
  bool group_is_sparse(PageId pid)
    requires translation::kSparseGroupTable<typename Translation::Table>;
  // Predictive translations: the frame a page should live in, and how many pages were moved
  // into (promoted) or out of (demoted) such frames.
  FrameId preferred_frame(PageId pid) const requires translation::Predicting<Translation> {
    return predictor_.preferred_frame(pid);
  }
  uint64_t promotions() const requires translation::Predicting<Translation> { return moves_.promotions.load(); }
  uint64_t demotions() const requires translation::Predicting<Translation> { return moves_.demotions.load(); }
  // Tiered memory: frames 1..fast_frames() are tier 0, the rest tier 1.
  FrameId fast_frames() const { return fast_last_; }
  // Moves resident page pid into tier 0 or 1 now, as a promotion or a demotion would,
  // without waiting for any latch. Returns whether pid is now in a frame of `tier`; false
  // when there is no far tier, or pid is evicted, latched, pinned, or no frame of `tier` can
  // be freed at once. Pre: the caller holds no latch on pid. Errors: as pins,
  // kInvalidArgument for a tier other than 0 or 1, kIoError when a far page cannot be
  // written back.
  bool move_to_tier(PageId pid, int tier);

 private:
  struct Resolved {
    translation::Entry* entries;
    uint64_t capacity;
    Space* space;
  };
  // The steps every access takes (access.h).
  bool path_cached(const translation::PathCache& c, SpaceId id) const;
  Resolved resolve(SpaceId id);
  Resolved resolve_slow(SpaceId id);  // spaces.h
  translation::Entry& entry_for(PageId pid, Space** space_out);
  translation::Entry* retry(Space* space, PageId pid, translation::Entry* e, translation::EntryWord w, int* spins);
  void after_failed_cas(Space* space, BlockId block, const translation::Entry& e);
  void after_failed_cas(PageId pid, const translation::Entry& e);
  void release_ref(Space* s, BlockId block) {
    if (s->table.release_ref(block)) counters_.punches.fetch_add(1, std::memory_order_relaxed);
  }

  // Policy hooks (policy_hooks.h): compiled to nothing or a constant without the capability.
  translation::Entry* find_entry_for(PageId pid, Space** space_out);
  static translation::Entry* existing_entry(Space* s, BlockId block);
  static bool owns(const Space* s, const translation::Entry& e, PageId pid);
  static void forget(Space* s, BlockId block, const translation::Entry& e);
  bool acquire_ref_for(Space* s, BlockId block, const translation::Entry& e);
  std::byte* page_data(Space* s, PageId pid, FrameId f) const;
  void discard_in_place(Space* s, PageId pid, FrameId f);
  FrameId predict(PageId pid) const;
  bool promote_on_hit(Space* space, PageId pid, translation::Entry& e, translation::EntryWord w,
                      FrameId predicted);
  bool in_far_tier(FrameId f) const;
  int tier_of(FrameId f) const { return in_far_tier(f) ? 1 : 0; }
  void free_frame(FrameId f);
  void publish_owner(FrameId f, PageId pid, translation::Entry& e);
  void clear_owner(FrameId f);
  translation::Entry* hinted_entry(PageId pid, FrameId f) const
    requires translation::kHasFrameHints<Translation>;
  bool owned_by(FrameId f, PageId pid) const;
  void count_hint(bool hit);

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

  // pool/features/promotion.h. Never waits; returns whether the page now lives in `target`.
  [[gnu::noinline]] bool try_promote(Space* space, PageId pid, translation::Entry& e,
                                     translation::EntryWord seen, FrameId target)
    requires translation::Predicting<Translation>;
  // The page move shared by predictive promotion (pool/features/promotion.h) and tier migration
  // (pool/features/tier_moves.h). move_page copies the exclusively latched page `pid` (word `held`)
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

  // --- sparse groups (array_sparse; pool/features/sparse_groups.h) ---
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
  // check_invariants() for sparse groups (pool/features/sparse_groups.h). pending_pages: sorted raw
  // page ids of the reads in flight.
  void check_sparse_groups(const std::vector<uint64_t>& pending_pages) const
    requires translation::kSparseGroupTable<typename Translation::Table>;

  // --- tiered memory (pool/features/tiering.h, pool/features/tier_moves.h) ---
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
  // pin_shared / pin_exclusive that also report the frame they pinned.
  SharedGuard pin_shared_at(PageId pid, FrameId* frame);
  ExclusiveGuard pin_exclusive_at(PageId pid, FrameId* frame);

  // The hinted pins' fast path: latches e (shared, or exclusive) while it shows frame f,
  // then confirms meta[f].owner == pid under the latch. Returns e and sets *held to the word
  // now in it (the guard's), or nullptr with nothing held.
  template <bool kExclusiveLatch>
  translation::Entry* latch_hinted(PageId pid, FrameId f, translation::EntryWord* held)
    requires kFrameHints;

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
  // Adds the time since `start` to far_->migration_ns (PoolStats::migration.ns).
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
  void commit_locked(const std::vector<std::pair<Space*, uint64_t>>& counted, std::vector<std::string>& errors);
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
  // The last frame of tier 0: the arena's last frame without a far tier (pool/features/tiering.h).
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
  uint64_t generation_ = 0;  // the catalog's (flushes committed); under spaces_mutex_
  // The rollback journal (pool/journal.h); null without PoolOptions::atomic_flush. Set at
  // open, before any write; its own locks come after every pool mutex.
  std::unique_ptr<pool::Journal> journal_;

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

}  // namespace pool
}  // namespace calico
