// BasicBufferPool<T> definitions: opening, spaces, the page-fault handler, group prefetch,
// flush, statistics and the invariant checker. Eviction is in eviction.h; the hot paths are
// inline in include/calico/buffer_pool.h. Rules and lock order: pool/README.md.
// Included only by the translation units that instantiate a pool (src/variants/).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/checks.h"
#include "io/checksum.h"
#include "io/io_ring.h"
#include "pool/catalog.h"
#include "pool/data_dir.h"
#include "pool/pool_support.h"
#include "pool/promotion.h"
#include "pool/tier_moves.h"
#include "pool/test_points.h"

namespace calico {

using translation::EntryWord;
using translation::kExclusive;
using translation::kIoPending;
using translation::kMarked;
using translation::kUnlocked;

static_assert(BufferPool::kTrailerBytes == io::kTrailerBytes);

namespace pool {
// Gives back an entry this thread claimed out of 0 (a fault's or an allocation's loading word,
// a prefetch's io-pending word). Nobody else writes a claimed word (movers install by CAS out
// of 0 and latch only resident words), so the claim is always still there: the check says so.
inline void undo_claim(translation::Entry& e, EntryWord claimed) {
  [[maybe_unused]] const bool ours = translation::release_claim(e, claimed);
  CALICO_DCHECK(ours);
}
}  // namespace pool

template <class T>
BasicBufferPool<T>::BasicBufferPool(const PoolOptions& options)
    : options_(options),
      uid_(pool::next_pool_uid.fetch_add(1)),
      // Translations that keep pages in place use frames only as a budget of tokens: the
      // arena is then reserved but never touched (no memory).
      // With a far tier, one arena holds both tiers: fast frames first (pool/tiering.h).
      frames_(options.page_size,
              static_cast<FrameId>(options.pool_bytes / options.page_size +
                                   (kTierable ? options.far_tier.frames : 0)),
              T::kPagesInPlace ? false : options.huge_pages, T::kPagesInPlace ? false : options.prefault_frames),
      fast_last_(static_cast<FrameId>(options.pool_bytes / options.page_size)),
      meta_(new pool::FrameMeta[frames_.num_frames() + 1]),
      free_list_(fast_last_),
      clock_(fast_last_),
      lanes_(new AsyncLane[pool::kMaxAsyncLanes]),
      low_watermark_(std::min<uint32_t>(options.eviction_batch / 2, fast_last_ / 4)) {
  if constexpr (kFrameHints) {
    frame_entries_.reset(new std::atomic<translation::Entry*>[frames_.num_frames() + 1]());
  }
  if constexpr (kTierable) {
    if (options.far_tier.frames > 0) {
      CALICO_CHECK(frames_.num_frames() > fast_last_);
      far_ = std::make_unique<pool::FarTier>(options, fast_last_ + 1, frames_.num_frames());
      // Frames are page-aligned, so the far range is 4 KB aligned (place's precondition).
      far_->tier->place(frames_.frame(far_->first), size_t{far_->last - fast_last_} * options.page_size);
    }
  }
}

template <class T>
std::unique_ptr<BasicBufferPool<T>> BasicBufferPool<T>::open(const PoolOptions& options) {
  // Nothing on disk changes until every check has passed (pool/data_dir.h): a failed open
  // leaves the directory exactly as it was, and never flushes a half-built pool over it.
  pool::validate_options(options);
  if (options.far_tier.frames > 0 && !kTierable) {
    throw Error(ErrorCode::kInvalidArgument,
                "far_tier: translation '" + std::string(T::kName) +
                    "' takes no far tier (the tiered translations: array_tiered, vmcache_n)");
  }
  pool::DataDirectory dir = pool::open_data_directory(options.data_dir, options.page_size);
  std::unique_ptr<BasicBufferPool> pool(new BasicBufferPool(options));
  pool->lock_fd_ = std::exchange(dir.lock_fd, -1);

  std::lock_guard lock(pool->spaces_mutex_);
  if (dir.catalog) {
    pool->next_space_id_ = dir.catalog->next_space_id;
    for (const pool::CatalogSpace& rec : dir.catalog->spaces) {
      if (rec.blocks > options.max_blocks_per_space) {
        throw Error(ErrorCode::kInvalidArgument,
                    "space " + rec.name + " has " + std::to_string(rec.blocks) +
                        " blocks, more than max_blocks_per_space");
      }
      io::PageFile file = io::PageFile::open(pool::space_path(options.data_dir, rec.id), options.page_size,
                                             /*create=*/false, options.fault_injector);
      // The catalog's count is the durable one: blocks allocated after the last flush that
      // synced the space are forgotten (pool/README.md, rule 6). The file may be longer (it
      // grows ahead in chunks, and may hold pages of forgotten blocks).
      pool->spaces_.push_back(std::make_unique<Space>(
          rec.id, rec.name, options.max_blocks_per_space, std::move(file), rec.blocks, options));
      pool->directory_.publish(rec.id, pool->spaces_.back().get());
    }
  } else {
    pool->write_catalog_locked();  // a new pool: its first write
  }
  pool::remove_leftovers(dir);
  pool->opened_ = true;
  return pool;
}

template <class T>
BasicBufferPool<T>::~BasicBufferPool() {
  if (opened_) {
    try {
      flush();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "calico: flush at close failed: %s\n", e.what());
    }
  }
  // Reads in flight complete before the frames they target go away. A lane whose ring gave
  // up (io_ring.h: no completion for ~10 s) cannot be drained; a destructor must not throw
  // (it would end the process), so that is reported, and its reads are left to the kernel.
  if (const uint32_t failed = drain_async(); failed > 0) {
    std::fprintf(stderr, "calico: reads in flight at close did not complete (%u prefetch ring(s) gave up)\n", failed);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

// --- spaces ----------------------------------------------------------------------------

template <class T>
typename BasicBufferPool<T>::Space* BasicBufferPool<T>::live_space(SpaceId id) const {
  Space* s = directory_.lookup(id);
  return (s != nullptr && s->alive.load(std::memory_order_acquire)) ? s : nullptr;
}

template <class T>
typename BasicBufferPool<T>::Resolved BasicBufferPool<T>::resolve_slow(SpaceId id) {
  Space* s = live_space(id);
  if (s == nullptr) throw Error(ErrorCode::kUnknownSpace, "space " + std::to_string(id));
  // Space ids are never reused, so even if the space is dropped right after this, the cache
  // can only ever resolve `id` to its own (dead) Space, whose zero entries fail in fault().
  auto& c = translation::tls_path_cache;
  translation::Entry* flat = nullptr;
  if constexpr (T::kFlatEntries) flat = s->table.entries();
  c = translation::PathCache{uid_, directory_.epoch(), id, flat, s->table.capacity(), s,
                            &thread_counter()->accesses};
  return {c.entries, c.capacity, s};
}

template <class T>
typename BasicBufferPool<T>::ThreadCounter* BasicBufferPool<T>::register_thread() {
  std::lock_guard lock(thread_counters_mutex_);
  std::thread::id me = std::this_thread::get_id();
  auto it = std::find_if(thread_counters_.begin(), thread_counters_.end(),
                         [&](const auto& tc) { return tc->thread == me; });
  if (it == thread_counters_.end()) {
    thread_counters_.push_back(std::make_unique<ThreadCounter>());
    thread_counters_.back()->thread = me;
    it = thread_counters_.end() - 1;
  }
  return it->get();
}

template <class T>
void BasicBufferPool<T>::throw_out_of_range(PageId pid) const {
  throw Error(ErrorCode::kPageOutOfRange,
              "block " + std::to_string(pid.block()) + " is past the capacity of space " +
                  std::to_string(pid.space()),
              pid);
}

template <class T>
void BasicBufferPool<T>::write_catalog_locked(const pool::CatalogSpace* added, SpaceId skipped) {
  pool::CatalogData data;
  data.page_size = options_.page_size;
  data.next_space_id = next_space_id_;
  for (const auto& s : spaces_) {
    if (s->alive.load(std::memory_order_acquire) && s->id != skipped) {
      data.spaces.push_back({s->id, s->durable_blocks, s->name});
    }
  }
  if (added != nullptr) {
    data.spaces.push_back(*added);
    data.next_space_id = added->id + 1;
  }
  pool::write_catalog(options_.data_dir, data);
}

template <class T>
SpaceId BasicBufferPool<T>::create_space(std::string_view name_view) {
  std::string name(name_view);
  if (!pool::valid_space_name(name)) {
    throw Error(ErrorCode::kInvalidArgument,
                "space name '" + name + "' is not 1..64 characters of [A-Za-z0-9_.-]");
  }
  std::lock_guard lock(spaces_mutex_);
  for (const auto& s : spaces_) {
    if (s->alive.load() && s->name == name) throw Error(ErrorCode::kSpaceExists, name);
  }
  SpaceId id = next_space_id_;
  if (id == 0xFFFFFFFFu) throw Error(ErrorCode::kInvalidArgument, "space ids exhausted");
  // The file first, then the catalog that names it: a crash in between leaves an empty file
  // that the next open removes (pool/data_dir.h). A failure changes nothing.
  std::string path = pool::space_path(options_.data_dir, id);
  io::PageFile file = io::PageFile::open(path, options_.page_size, /*create=*/true, options_.fault_injector);
  const pool::CatalogSpace record{id, 0, name};
  try {
    write_catalog_locked(&record);
  } catch (...) {
    file = io::PageFile{};
    ::unlink(path.c_str());
    throw;
  }
  spaces_.push_back(std::make_unique<Space>(id, name, options_.max_blocks_per_space, std::move(file), 0, options_));
  next_space_id_ = id + 1;
  directory_.publish(id, spaces_.back().get());
  return id;
}

template <class T>
SpaceId BasicBufferPool<T>::open_space(std::string_view name) const {
  std::lock_guard lock(spaces_mutex_);
  for (const auto& s : spaces_) {
    if (s->alive.load() && s->name == name) return s->id;
  }
  throw Error(ErrorCode::kUnknownSpace, "no space named '" + std::string(name) + "'");
}

template <class T>
uint64_t BasicBufferPool<T>::space_blocks(SpaceId id) const {
  Space* s = live_space(id);
  if (s == nullptr) throw Error(ErrorCode::kUnknownSpace, "space " + std::to_string(id));
  return s->num_blocks.load(std::memory_order_acquire);
}

template <class T>
std::vector<SpaceInfo> BasicBufferPool<T>::spaces() const {
  std::lock_guard lock(spaces_mutex_);
  std::vector<SpaceInfo> out;
  for (const auto& s : spaces_) {
    if (s->alive.load()) out.push_back({s->id, s->name, s->num_blocks.load()});
  }
  return out;
}

template <class T>
void BasicBufferPool<T>::drop_space(SpaceId id) {
  Space* s = live_space(id);
  if (s == nullptr) throw Error(ErrorCode::kUnknownSpace, "space " + std::to_string(id));
  // 1. The catalog without the space, then the space dead: under fault_latch exclusive, so
  //    that every fault, allocation and prefetch submission in the space (each holds it shared
  //    and checks `alive` under it) has either finished or will see the space dead. A failed
  //    catalog write changes nothing. The latch is held only for this step: threads that hold
  //    pins in the space and fault or allocate more of it must get kUnknownSpace (and unwind,
  //    releasing their pins), not wait for the drop that waits for their pins.
  {
    std::unique_lock fault_lock(s->fault_latch);
    std::lock_guard lock(spaces_mutex_);
    if (!s->alive.load()) throw Error(ErrorCode::kUnknownSpace, "space " + std::to_string(id));
    write_catalog_locked(nullptr, id);
    s->alive.store(false, std::memory_order_release);
    directory_.retire(id);
  }
  // 2. Reads already in flight for the space complete (and publish) now. The drop is
  //    committed (step 1): it is finished whatever happens here. A lane whose ring gave up
  //    keeps its reads (their frames stay out of the pool, their entries pending until the
  //    reset below); every other lane is drained.
  if (drain_async() > 0) abandon_reads(s);
  // 3. Discard every frame of the space. Pins held by other threads are waited for, but
  //    never while holding evict_mutex_ (a pin holder may need a frame) or fault_latch.
  for (int round = 0;; ++round) {
    bool waiting = false;
    {
      std::lock_guard lock(evict_mutex_);
      for (FrameId f = 1; f <= frames_.num_frames(); ++f) {
        PageId owner(meta_[f].owner.load(std::memory_order_acquire));
        if (owner.space() != id) continue;
        translation::Entry* ep = existing_entry(s, owner.block());
        if (ep == nullptr) continue;  // left the frame meanwhile (recycling tables)
        translation::Entry& e = *ep;
        EntryWord w = translation::load(e);
        if (w.frame() != f) continue;
        if (!translation::try_lock_exclusive(e, w)) {
          waiting = true;
          continue;
        }
        if (!owns(s, e, owner)) {  // recycled for another page: give it back, look again
          translation::unlock_exclusive(e, w.with_state(kExclusive), /*bump_version=*/false);
          waiting = true;
          continue;
        }
        meta_[f].version_seed.store(w.version() + 1, std::memory_order_relaxed);
        meta_[f].dirty.store(0, std::memory_order_relaxed);
        clear_owner(f);
        e.store(0, std::memory_order_release);
        release_ref(s, owner.block());
        forget(s, owner.block(), e);
        free_frame(f);
      }
    }
    if (!waiting) break;
    std::this_thread::sleep_for(std::chrono::microseconds(round < 100 ? 10 : 1000));
  }
  // 4. Translation memory and the file go back to the OS. Threads holding a stale pointer to
  //    the array now read zero entries and fail in fault() with kUnknownSpace. A crash before
  //    the unlink leaves a file the catalog no longer names: the next open removes it.
  s->table.reset();
  std::string path = s->file.path();
  {
    std::lock_guard lock(spaces_mutex_);  // flush syncs files of live spaces only, under it
    s->file = io::PageFile{};
  }
  ::unlink(path.c_str());
}

// --- page faults -------------------------------------------------------------------------

template <class T>
void BasicBufferPool<T>::wait_or_fault(Space* space, PageId pid, translation::Entry& e,
                               EntryWord seen, int* spins) {
  if (seen.evicted()) {
    fault(space, pid, e);
  } else if (seen.state() == kIoPending) {
    help_async(e);
  } else if (++*spins < 64) {
    translation::cpu_relax();  // latched (a writer, the evictor, or a loading fault)
  } else {
    std::this_thread::yield();
  }
}

// Algorithm 2 with the hole-punch reservation taken first (hole_punch_counter.h):
//   1. fault_latch shared; the space is alive and the block exists
//   2. acquire a punch reference for the entry's group
//   3. CAS the entry 0 -> loading; if another thread won, give the reference back
//   4. take a frame (free list or eviction), read and verify the page
//   5. publish {frame, seed, unlocked}; the reference now covers the resident entry
// On any failure after 3 the entry returns to zero and the frame to the free list.
template <class T>
void BasicBufferPool<T>::fault(Space* space, PageId pid, translation::Entry& e) {
  std::shared_lock fault_lock(space->fault_latch);
  BlockId block = pid.block();
  if (!space->alive.load(std::memory_order_acquire)) {
    forget(space, block, e);  // the entry the lookup created (recycling tables, side entries)
    throw Error(ErrorCode::kUnknownSpace, "space " + std::to_string(pid.space()) + " was dropped", pid);
  }
  uint64_t blocks = space->num_blocks.load(std::memory_order_acquire);
  if (block >= blocks) {
    forget(space, block, e);
    throw Error(ErrorCode::kPageOutOfRange,
                "block " + std::to_string(block) + " of space " + std::to_string(pid.space()) +
                    " (" + std::to_string(blocks) + " blocks)",
                pid);
  }
  if constexpr (kSparseGroups) {
    if (options_.test_points != nullptr) options_.test_points->at(pool::TestPoints::Point::kFaultLookedUp, pid);
    if (space->table.group_sparse(block) && space->table.group_count(block) >= space->table.dense_group_at()) {
      try_densify(space, block);  // only tries: the group stays sparse when it cannot move now
    }
  }
  if (!acquire_ref_for(space, block, e)) {
    forget(space, block, e);
    return;  // the group moved since the lookup: the caller looks pid up again
  }
  if constexpr (kSparseGroups) {
    if (options_.test_points != nullptr) options_.test_points->at(pool::TestPoints::Point::kFaultRefTaken, pid);
  }
  if (!translation::try_cas(e, EntryWord{0}, translation::kLoadingWord)) {
    release_ref(space, block);
    return;  // another thread is loading it or has loaded it
  }
  if constexpr (kSparseGroups) {
    if (options_.test_points != nullptr) options_.test_points->at(pool::TestPoints::Point::kFaultClaimed, pid);
  }
  if (!owns(space, e, pid)) {
    // Retired and recycled for another block between the lookup and the CAS (R4): give
    // it back as it was; the caller sees the other owner and looks pid up again.
    pool::undo_claim(e, translation::kLoadingWord);
    release_ref(space, block);
    return;
  }
  FrameId f = kInvalidFrame;
  try {
    f = get_frame(/*may_fail=*/false, pid);
    std::byte* frame = page_data(space, pid, f);
    io::IoRequest req{space->file.fd(), uint64_t{block} * options_.page_size, frame,
                      static_cast<uint32_t>(options_.page_size), false, 0, 0};
    io::IoRing& ring = thread_ring();
    const uint64_t start_ns = pool::monotonic_ns();
    ring.submit_and_wait(std::span(&req, 1));
    counters_.read_inflight_ns.fetch_add(pool::monotonic_ns() - start_ns, std::memory_order_relaxed);
    if (req.result != static_cast<int>(options_.page_size)) {
      pool::throw_read_error(pid, req.result, options_.page_size);
    }
    pool::check_read_page(io::verify_page(frame, options_.page_size, pid), pid, space->file.path());
  } catch (...) {
    if (f != kInvalidFrame) free_list_.push(f);
    pool::undo_claim(e, translation::kLoadingWord);
    release_ref(space, block);
    forget(space, block, e);
    throw;
  }
  meta_[f].dirty.store(0, std::memory_order_relaxed);
  publish_owner(f, pid, e);
  uint32_t seed = meta_[f].version_seed.load(std::memory_order_relaxed);
  e.store(EntryWord::make(f, seed, kUnlocked).raw, std::memory_order_release);
  counters_.faults.fetch_add(1, std::memory_order_relaxed);
}

template <class T>
ExclusiveGuard BasicBufferPool<T>::allocate(SpaceId id) {
  Space* space = resolve(id).space;
  if (options_.test_points != nullptr) options_.test_points->at(pool::TestPoints::Point::kAllocateResolved, PageId(id, 0));
  std::shared_lock fault_lock(space->fault_latch);
  if (!space->alive.load(std::memory_order_acquire)) {
    throw Error(ErrorCode::kUnknownSpace, "space " + std::to_string(id) + " was dropped");
  }
  // Claim block b = num_blocks. The rules:
  //  A1. Only the holder of entry(b)'s latch while num_blocks == b may advance num_blocks
  //      (to b + 1). So: latch the entry (0 -> loading), then re-read num_blocks; if it moved
  //      on, entry(b) is an existing, evicted page that another allocator published meanwhile:
  //      give its latch back and start again.
  //  A2. Make room in the file first, so that ENOSPC shows up here, not at write-back.
  //  A3. Take the frame before publishing: a failure leaves nothing claimed (no block that
  //      was counted but never written, which a reopen after a crash would find all zero).
  //  A4. Publish the page (frame owner, dirty, entry {frame, seed, exclusive}) BEFORE
  //      num_blocks: a flush that reads num_blocks = b + 1 (its durable count, rule 6) then
  //      finds the page dirty and writes it. A reader of b before that gets kPageOutOfRange
  //      (fault checks num_blocks) or waits on the latch.
  for (int spins = 0;;) {
    uint64_t block = space->num_blocks.load(std::memory_order_acquire);
    if (block >= space->table.capacity()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "space " + std::to_string(id) + " is full (" + std::to_string(block) + " blocks)");
    }
    if (options_.test_points != nullptr) {
      options_.test_points->at(pool::TestPoints::Point::kAllocateBlockRead, PageId(id, static_cast<BlockId>(block)));
    }
    if (block >= space->file_blocks.load(std::memory_order_acquire)) {  // A2
      std::lock_guard grow(space->grow_mutex);
      uint64_t have = space->file_blocks.load(std::memory_order_acquire);
      if (block >= have) {
        uint64_t want = std::min<uint64_t>(space->table.capacity(),
                                           std::max(block + 1, have + std::max<uint64_t>(kGrowMinBlocks, have / 8)));
        space->file.extend_blocks(want);
        space->file_blocks.store(want, std::memory_order_release);
      }
    }
    const PageId pid(id, static_cast<BlockId>(block));
    translation::Entry& e = space->table.entry(pid.block());
    if (!acquire_ref_for(space, pid.block(), e)) {  // the group moved since the lookup
      forget(space, pid.block(), e);
      continue;
    }
    auto give_back = [&] {  // entry(b) back to evicted, as it was before our CAS
      pool::undo_claim(e, translation::kLoadingWord);
      release_ref(space, pid.block());
    };
    if (!translation::try_cas(e, EntryWord{0}, translation::kLoadingWord)) {
      // Another allocator holds this block and publishes it shortly, or it is resident.
      release_ref(space, pid.block());
      if (++spins < 64) translation::cpu_relax(); else std::this_thread::yield();
      continue;
    }
    if (!owns(space, e, pid) || space->num_blocks.load(std::memory_order_acquire) != block) {
      // Recycled for another block since the lookup (R4), or (A1) an existing page.
      give_back();
      continue;
    }
    FrameId f;
    try {
      f = get_frame(/*may_fail=*/false, pid);  // A3
    } catch (...) {
      give_back();
      forget(space, pid.block(), e);
      throw;
    }
    std::memset(page_data(space, pid, f), 0, options_.page_size);
    meta_[f].dirty.store(pool::kDirty, std::memory_order_relaxed);
    publish_owner(f, pid, e);
    EntryWord held = EntryWord::make(f, meta_[f].version_seed.load(std::memory_order_relaxed), kExclusive);
    e.store(held.raw, std::memory_order_release);
    uint64_t expected = block;  // A1: nobody else can have moved it while we hold entry(b)
    CALICO_CHECK(space->num_blocks.compare_exchange_strong(expected, block + 1, std::memory_order_acq_rel));
    return ExclusiveGuard(&e, held, page_data(space, pid, f), &meta_[f], pid);
  }
}

template <class T>
io::IoRing& BasicBufferPool<T>::thread_ring() {
  struct ThreadRing {
    uint64_t pool_uid = 0;
    std::unique_ptr<io::IoRing> ring;
  };
  thread_local ThreadRing tr;
  // A ring whose wait failed (io_ring.h, failed()) is replaced. If creation fails (e.g. no
  // file descriptor left), tr is unchanged and the caller gets kIoError.
  if (tr.pool_uid != uid_ || tr.ring->failed()) [[unlikely]] {
    // Depth covers one eviction batch; the fault injector is per pool, so is the ring.
    tr.ring = std::make_unique<io::IoRing>(std::max(options_.eviction_batch, 8u), options_.fault_injector);
    tr.pool_uid = uid_;
  }
  return *tr.ring;
}

// --- group prefetch (Algorithm 4) ------------------------------------------------------

template <class T>
uint64_t BasicBufferPool<T>::prewarm(SpaceId space, BlockId first, uint64_t count) {
  const uint64_t blocks = space_blocks(space);
  const uint64_t end = first >= blocks ? first : first + std::min<uint64_t>(count, blocks - first);
  // Frames above the low watermark are the room: at or below it, every frame taken starts
  // an eviction batch (get_frame), and a prewarm evicts nothing.
  auto room = [&] {
    const size_t free = free_list_.size();
    return free > low_watermark_ ? free - low_watermark_ : 0;
  };
  auto word = [&](BlockId b) {
    Space* s = live_space(space);
    const translation::Entry* e = s == nullptr ? nullptr : existing_entry(s, b);
    return e == nullptr ? EntryWord{0} : translation::load(*e);
  };
  // Groups of evicted pages, at most the room: prefetch_group's reads take frames in block
  // order. Pages it skipped (no I/O slot free) are read by the pin, in order too.
  constexpr size_t kGroup = 64;
  std::vector<PageId> group;
  for (uint64_t b = first; b < end;) {
    const size_t budget = std::min(kGroup, room());
    if (budget == 0) break;
    group.clear();
    for (; b < end && group.size() < budget; ++b) {
      if (word(static_cast<BlockId>(b)).evicted()) group.push_back(PageId(space, static_cast<BlockId>(b)));
    }
    prefetch_group(group);
    for (PageId pid : group) {
      if (word(pid.block()).evicted() && room() == 0) continue;
      SharedGuard g = pin_shared(pid);  // waits for the prefetch's read, or reads the page
    }
  }
  uint64_t resident = 0;
  for (uint64_t b = first; b < end; ++b) resident += word(static_cast<BlockId>(b)).resident();
  return resident;
}

template <class T>
size_t BasicBufferPool<T>::prefetch_group(std::span<const PageId> pids, std::span<const uint32_t> offsets) {
  if (!offsets.empty() && offsets.size() != pids.size()) {
    throw Error(ErrorCode::kInvalidArgument, "prefetch_group: offsets and pids differ in length");
  }
  return prefetch_group(pids, offsets, nullptr);
}

template <class T>
size_t BasicBufferPool<T>::read_group(std::span<const PageId> pids, std::span<const uint32_t> offsets,
                                      std::span<OptimisticRead> reads) {
  if ((!offsets.empty() && offsets.size() != pids.size()) || reads.size() != pids.size()) {
    throw Error(ErrorCode::kInvalidArgument, "read_group: pids, offsets and reads differ in length");
  }
  return prefetch_group(pids, offsets, reads.data());
}

template <class T>
size_t BasicBufferPool<T>::prefetch_group(std::span<const PageId> pids, std::span<const uint32_t> offsets,
                                          OptimisticRead* reads) {
  constexpr size_t kMaxGroup = 256;  // bounds the stack arrays; larger groups are split
  if (pids.size() > kMaxGroup) {
    size_t submitted = 0;
    for (size_t i = 0; i < pids.size(); i += kMaxGroup) {
      size_t n = std::min(kMaxGroup, pids.size() - i);
      submitted += prefetch_group(pids.subspan(i, n), offsets.empty() ? offsets : offsets.subspan(i, n),
                                  reads == nullptr ? nullptr : reads + i);
    }
    return submitted;
  }
  if constexpr (T::kDirect) {
    if (reads != nullptr) {  // nothing to share: the direct reads themselves
      for (size_t i = 0; i < pids.size(); ++i) reads[i] = read_optimistic(pids[i]);
    }
  }
  translation::Entry* entries[kMaxGroup];
  Space* spaces[kMaxGroup];
  const uint32_t max_offset = options_.page_size - 1;
  auto offset_of = [&](size_t i) { return offsets.empty() ? 0u : std::min<uint32_t>(offsets[i], max_offset); };
  // The thread's path cache, read once (a group mostly lies in one space: its pages then
  // cost no directory lookup and no per-page check beyond the space id).
  const translation::PathCache& c = translation::tls_path_cache;
  const bool cache_ok = path_cached(c, c.space);
  const SpaceId cached_id = c.space;
  Space* const cached_space = static_cast<Space*>(c.owner);
  translation::Entry* const cached_entries = c.entries;
  const uint64_t cached_capacity = c.capacity;
  // The frame prediction of read_fast, where it holds.
  const bool predict = cache_ok && c.delta_stable;
  const uint32_t delta = c.frame_delta;
  // Reads (read_group) are started from the words phase 2 loads, on the conditions of
  // read_fast (a resident, unlatched, unmarked page of the fast tier, owned by its entry),
  // for pages of the cached space (whose access counter is at hand). Policies that promote
  // on access (every read may move the page) start none.
  const bool start_reads = reads != nullptr && cache_ok && !T::kDirect && !pool::Predicting<T>;
  uint64_t started = 0;
  // Phase 1: resolve and prefetch the translation entries (memory-level parallelism), and
  // the predicted frames, so that a correct guess needs no second round trip after the
  // entries arrive. Recycling tables: no entry is created here (the page may be skipped);
  // nullptr = none.
  for (size_t i = 0; i < pids.size(); ++i) {
    const PageId pid = pids[i];
    entries[i] = nullptr;
    spaces[i] = nullptr;
    if (!T::kDirect && reads != nullptr) reads[i].data = nullptr;
    const bool in_cached = cache_ok && pid.space() == cached_id;
    Space* s = in_cached ? cached_space : live_space(pid.space());
    if (s == nullptr) continue;
    if (pid.block() >= (in_cached ? cached_capacity : s->table.capacity())) continue;
    if constexpr (T::kFlatEntries) {
      entries[i] = in_cached ? cached_entries + pid.block() : existing_entry(s, pid.block());
    } else {
      entries[i] = existing_entry(s, pid.block());
    }
    spaces[i] = s;
    __builtin_prefetch(entries[i]);
    if constexpr (!T::kPagesInPlace) {
      if (predict && in_cached) __builtin_prefetch(frames_.frame(pid.block() + delta) + offset_of(i));
    }
  }
  // Phase 2: prefetch resident frames at their offsets; collect the evicted pages.
  uint32_t missing[kMaxGroup];
  size_t n_missing = 0;
  for (size_t i = 0; i < pids.size(); ++i) {
    if (spaces[i] == nullptr) continue;
    if (kLookedUpEntries && entries[i] == nullptr) {
      missing[n_missing++] = static_cast<uint32_t>(i);
      continue;
    }
    EntryWord w = translation::load(*entries[i]);  // acquire: then the owner (entry.h R5)
    if (w.resident()) {
      // A hint only: a stale (recycled) entry prefetches a frame for nothing.
      const std::byte* page = page_data(spaces[i], pids[i], w.frame());
      __builtin_prefetch(page + offset_of(i));
      if (start_reads && spaces[i] == cached_space && w.state() == translation::kUnlocked &&
          owns(spaces[i], *entries[i], pids[i]) && !in_far_tier(w.frame())) {
        reads[i] = OptimisticRead{page, entries[i], w, pids[i]};
        ++started;
      }
    } else if (w.evicted() || w.state() == translation::kGone) {
      missing[n_missing++] = static_cast<uint32_t>(i);
    }
  }
  if (started > 0) {  // the accesses read_fast would have counted, in one store
    c.accesses->store(c.accesses->load(std::memory_order_relaxed) + started, std::memory_order_relaxed);
  }
  if (n_missing == 0) return 0;
  // Phase 3: one batch of asynchronous reads for the evicted pages, in this thread's lane.
  const uint32_t lane_index = thread_lane();
  AsyncLane& lane = lanes_[lane_index];
  std::lock_guard lock(lane.mutex);
  if (!lane.ready(options_.async_depth, options_.fault_injector)) {
    // A ring that gave up takes no new reads; the completions the kernel still posts for the
    // reads it holds are collected here (and by other threads' eviction rounds).
    if (lane.ring != nullptr) reap_lane(lane, /*wait=*/false);
    return 0;
  }
  reap_lane(lane, /*wait=*/false);
  const EntryWord pending_word = translation::io_pending_word(lane_index);
  const uint64_t now_ns = pool::monotonic_ns();
  unsigned submitted = 0;
  // The reads pushed so far go to the kernel whatever happens next: their entries are
  // pending, and a thread waiting on one must find it in the ring (async_lane.h).
  auto submit_pushed = [&] {
    if (submitted == 0) return;
    busy_lanes_.fetch_or(uint64_t{1} << lane_index, std::memory_order_relaxed);
    lane.ring->submit();
    counters_.prefetch_issued.fetch_add(submitted, std::memory_order_relaxed);
  };
  try {
    for (size_t k = 0; k < n_missing && !lane.free_slots.empty(); ++k) {
      size_t i = missing[k];
      Space* s = spaces[i];
      PageId pid = pids[i];
      std::shared_lock fault_lock(s->fault_latch, std::try_to_lock);
      if (!fault_lock.owns_lock() || !s->alive.load(std::memory_order_acquire) ||
          pid.block() >= s->num_blocks.load(std::memory_order_acquire)) {
        continue;
      }
      // Recycling tables: the entry is created (or found again) only now that the read will
      // be tried, and checked after the CAS (R4).
      // Sparse groups: looked up again too (the phase-1 pointer may be the array word of a
      // page that lives in the side table).
      translation::Entry& e = kLookedUpEntries ? s->table.entry(pid.block()) : *entries[i];
      if (!acquire_ref_for(s, pid.block(), e)) {  // the group moved since the lookup
        forget(s, pid.block(), e);
        continue;
      }
      if (!translation::try_cas(e, EntryWord{0}, pending_word)) {
        release_ref(s, pid.block());
        continue;
      }
      auto give_back = [&] {  // the claim, its reference and the entry, as before the CAS
        pool::undo_claim(e, pending_word);
        release_ref(s, pid.block());
        forget(s, pid.block(), e);
      };
      if (!owns(s, e, pid)) {  // recycled for another block since the lookup: give it back
        pool::undo_claim(e, pending_word);
        release_ref(s, pid.block());
        continue;
      }
      FrameId f = kInvalidFrame;
      try {
        if (options_.test_points != nullptr) options_.test_points->at(pool::TestPoints::Point::kPrefetchClaimed, pid);
        f = get_frame(/*may_fail=*/true, pid);
      } catch (const Error&) {
        // A write-back failed while making room; the prefetch is only a hint.
      } catch (...) {  // e.g. std::bad_alloc: no pending entry is left without its read
        give_back();
        throw;
      }
      if (f == kInvalidFrame) {
        give_back();
        break;  // no frame to spare: the rest would fail too
      }
      uint32_t slot = lane.free_slots.back();
      lane.free_slots.pop_back();
      lane.pending[slot] = typename AsyncLane::PendingRead{s, pid, f, &e, now_ns};
      bool pushed = lane.ring->push(io::IoRequest{s->file.fd(), uint64_t{pid.block()} * options_.page_size,
                                                  page_data(s, pid, f), static_cast<uint32_t>(options_.page_size),
                                                  false, slot, 0});
      CALICO_CHECK(pushed);  // free_slots has as many slots as the ring has entries
      ++submitted;
    }
  } catch (...) {
    submit_pushed();
    throw;
  }
  submit_pushed();
  return submitted;
}

template <class T>
void BasicBufferPool<T>::complete_async(AsyncLane& lane, uint64_t slot, int result, uint64_t now_ns) {
  const typename AsyncLane::PendingRead p = lane.pending[slot];
  lane.free_slots.push_back(static_cast<uint32_t>(slot));
  counters_.read_inflight_ns.fetch_add(now_ns - p.submitted_ns, std::memory_order_relaxed);
  if (p.space == nullptr) {  // abandoned by a drop (abandon_reads): the frame is free now
    free_list_.push(p.frame);
    return;
  }
  translation::Entry& e = *p.entry;
  CALICO_DCHECK(translation::load(e).state() == kIoPending && owns(p.space, e, p.pid));
  std::byte* frame = page_data(p.space, p.pid, p.frame);
  bool ok = result == static_cast<int>(options_.page_size) &&
            io::verify_page(frame, options_.page_size, p.pid) == io::PageCheck::kOk;
  if (ok) {
    meta_[p.frame].dirty.store(0, std::memory_order_relaxed);
    publish_owner(p.frame, p.pid, e);
    uint32_t seed = meta_[p.frame].version_seed.load(std::memory_order_relaxed);
    e.store(EntryWord::make(p.frame, seed, kUnlocked).raw, std::memory_order_release);
  } else {
    // The page stays evicted; a later pin reads it synchronously and reports the error.
    counters_.prefetch_failed.fetch_add(1, std::memory_order_relaxed);
    pool::undo_claim(e, translation::io_pending_word(static_cast<uint32_t>(&lane - lanes_.get())));
    release_ref(p.space, p.pid.block());
    forget(p.space, p.pid.block(), e);
    free_list_.push(p.frame);
  }
}

template <class T>
void BasicBufferPool<T>::reap_lane(AsyncLane& lane, bool wait) {
  if (lane.idle()) return;
  uint64_t now_ns = 0;  // read once per reap, at its first completion
  lane.ring->reap(
      [&](uint64_t slot, int res) {
        if (now_ns == 0) now_ns = pool::monotonic_ns();
        complete_async(lane, slot, res, now_ns);
      },
      wait);
  if (lane.idle()) {
    busy_lanes_.fetch_and(~(uint64_t{1} << (&lane - lanes_.get())), std::memory_order_relaxed);
  }
}

template <class T>
void BasicBufferPool<T>::reap_other_lanes(bool include_own) {
  uint64_t busy = busy_lanes_.load(std::memory_order_relaxed);
  if (!include_own) busy &= ~(uint64_t{1} << thread_lane());
  while (busy != 0) {
    const int i = __builtin_ctzll(busy);
    busy &= busy - 1;
    std::unique_lock lock(lanes_[i].mutex, std::try_to_lock);
    if (lock.owns_lock()) reap_lane(lanes_[i], /*wait=*/false);
  }
}

template <class T>
void BasicBufferPool<T>::help_async(const translation::Entry& e) {
  const EntryWord seen = translation::load(e);
  if (seen.state() != kIoPending) return;
  AsyncLane& lane = lanes_[seen.version()];
  std::lock_guard lock(lane.mutex);
  // The prefetcher installs the pending word and submits in one critical section of this
  // lane, so the read is in the ring now, or done (async_lane.h). The same word seen again
  // after a completion is a new read of the page, in this lane too: also in the ring.
  while (translation::load(e).raw == seen.raw) {
    CALICO_CHECK(!lane.idle());
    reap_lane(lane, /*wait=*/true);
  }
}

// A drop's reads that a failed ring still holds: they belong to no page now (the space's
// entries are reset next), and if the kernel completes one after all, its frame goes back to
// the free list (complete_async). Until then the frame stays out of the pool.
template <class T>
void BasicBufferPool<T>::abandon_reads(const Space* space) {
  for (uint32_t i = 0; i < pool::kMaxAsyncLanes; ++i) {
    AsyncLane& lane = lanes_[i];
    std::lock_guard lock(lane.mutex);
    if (lane.idle()) continue;
    std::vector<bool> free(lane.pending.size(), false);
    for (uint32_t slot : lane.free_slots) free[slot] = true;
    for (size_t slot = 0; slot < lane.pending.size(); ++slot) {
      if (!free[slot] && lane.pending[slot].space == space) lane.pending[slot].space = nullptr;
    }
  }
}

template <class T>
uint32_t BasicBufferPool<T>::drain_async() {
  uint32_t failed = 0;
  for (uint32_t i = 0; i < pool::kMaxAsyncLanes; ++i) {
    AsyncLane& lane = lanes_[i];
    std::lock_guard lock(lane.mutex);
    try {
      while (!lane.idle()) reap_lane(lane, /*wait=*/true);
    } catch (const Error&) {
      ++failed;  // the ring gave up: its reads stay the kernel's, their frames out of the pool
    }
  }
  return failed;
}

// --- flush -------------------------------------------------------------------------------

namespace pool {
// "Input/output error", or "short write: 2048 of 4096 bytes", for a page transfer's result.
inline std::string transfer_error_text(int result, size_t page_size) {
  if (result < 0) return std::generic_category().message(-result);
  return "short transfer: " + std::to_string(result) + " of " + std::to_string(page_size) + " bytes";
}
}  // namespace pool

// Durability rule (README rule 6): a page is clean only once an fdatasync of its file that
// began after its write succeeded. So flush
//   1. writes each dirty page under a shared latch, marking it kWrittenUnsynced (a write
//      that fails leaves it kDirty); the evictor leaves kWrittenUnsynced pages alone;
//   2. syncs the files (every live space, even after a failure; also midway, when the
//      unsynced pages would otherwise hold more than half the frames out of eviction);
//   3. CASes each page it wrote to kClean if its file's syncs all succeeded, else back to
//      kDirty, so the next flush rewrites it (a writer's mark_dirty meanwhile wins);
//   4. writes the catalog, and throws kIoError with the first error and the count of others.
// space_synced[i] (parallel to spaces_) says at the end which spaces are durable.
// Pages the evictor wrote and dropped since a file's last good sync are not in memory to
// rewrite: a failed sync reports how many (Space::unsynced_evictions).
// On any exception (a failed ring), latched pages are unlatched and kDirty again.
template <class T>
void BasicBufferPool<T>::flush() {
  std::lock_guard flush_lock(flush_mutex_);
  // The ring first: a thread that cannot have one fails here, having latched nothing.
  io::IoRing& ring = thread_ring();
  // Rule 6: the durable count this flush may record for each live space is its num_blocks now.
  // allocate() publishes a page dirty before it counts it, so every block below this count
  // is written by the scan below (or was written before it).
  std::vector<std::pair<Space*, uint64_t>> counted;
  {
    std::lock_guard lock(spaces_mutex_);
    for (const auto& s : spaces_) {
      if (s->alive.load()) counted.emplace_back(s.get(), s->num_blocks.load(std::memory_order_acquire));
    }
  }
  std::vector<Space*> write_failed;  // spaces with a page this flush could not write
  struct Held {
    translation::Entry* entry;  // shared-latched until its write completes
    FrameId frame;
  };
  struct Written {
    Space* space;
    PageId pid;
    FrameId frame;  // kWrittenUnsynced until resolved
  };
  std::vector<io::IoRequest> requests;
  std::vector<Held> held;
  std::vector<Written> unsynced;
  std::vector<Space*> sync_failed;  // spaces with a failed sync in this flush
  std::vector<std::string> errors;
  const size_t batch = options_.eviction_batch;
  const size_t max_unsynced = std::max<size_t>(batch, frames_.num_frames() / 2);

  // Step 3 for every page in `unsynced`.
  auto resolve = [&] {
    for (const Written& w : unsynced) {
      if (meta_[w.frame].owner.load(std::memory_order_acquire) != w.pid.raw) continue;  // dropped
      bool durable = std::find(sync_failed.begin(), sync_failed.end(), w.space) == sync_failed.end();
      uint8_t expected = pool::kWrittenUnsynced;
      meta_[w.frame].dirty.compare_exchange_strong(expected, durable ? pool::kClean : pool::kDirty,
                                                   std::memory_order_relaxed);
    }
    unsynced.clear();
  };
  // On an exception: nothing stays latched, nothing stays kWrittenUnsynced.
  struct Unwind {
    std::vector<Held>& held;
    std::vector<Written>& unsynced;
    pool::FrameMeta* meta;
    ~Unwind() {
      for (const Held& h : held) {
        meta[h.frame].dirty.store(pool::kDirty, std::memory_order_relaxed);
        translation::unlock_shared(*h.entry);
      }
      for (const Written& w : unsynced) {
        uint8_t expected = pool::kWrittenUnsynced;
        meta[w.frame].dirty.compare_exchange_strong(expected, pool::kDirty, std::memory_order_relaxed);
      }
    }
  } unwind{held, unsynced, meta_.get()};

  // Syncs `s` (pre: spaces_mutex_ held, s alive); records a failure.
  auto sync_space = [&](Space* s) {
    const uint64_t evicted = s->unsynced_evictions.load(std::memory_order_relaxed);
    try {
      s->file.sync();
      s->unsynced_evictions.fetch_sub(evicted, std::memory_order_relaxed);
    } catch (const Error& e) {
      counters_.sync_failures.fetch_add(1, std::memory_order_relaxed);
      if (std::find(sync_failed.begin(), sync_failed.end(), s) == sync_failed.end()) sync_failed.push_back(s);
      std::string what = e.what();
      if (evicted > 0) {
        what += " (" + std::to_string(evicted) +
                " pages written back by eviction since its last good sync are not in memory; "
                "their durability is unknown)";
      }
      errors.push_back(std::move(what));
    }
  };
  // Step 2 midway: sync the spaces of the pages written so far.
  auto sync_written = [&] {
    std::vector<Space*> touched;
    for (const Written& w : unsynced) {
      if (std::find(touched.begin(), touched.end(), w.space) == touched.end()) touched.push_back(w.space);
    }
    {
      std::lock_guard lock(spaces_mutex_);
      for (Space* s : touched) {
        if (s->alive.load()) sync_space(s);
      }
    }
    resolve();
  };

  auto write_batch = [&] {
    if (requests.empty()) return;
    ring.submit_and_wait(requests);
    for (size_t i = 0; i < requests.size(); ++i) {
      const FrameId f = held[i].frame;
      PageId pid(meta_[f].owner.load());
      if (requests[i].result == static_cast<int>(options_.page_size)) {
        counters_.write_backs.fetch_add(1, std::memory_order_relaxed);
        unsynced.push_back({live_space(pid.space()), pid, f});
        if (unsynced.back().space == nullptr) unsynced.pop_back();  // being dropped
      } else {
        meta_[f].dirty.store(pool::kDirty, std::memory_order_relaxed);  // latched: no writer
        counters_.write_back_failures.fetch_add(1, std::memory_order_relaxed);
        Space* s = live_space(pid.space());
        if (s != nullptr && std::find(write_failed.begin(), write_failed.end(), s) == write_failed.end()) {
          write_failed.push_back(s);
        }
        errors.push_back("writing page " + std::to_string(pid.space()) + ":" + std::to_string(pid.block()) +
                         " of " + (s != nullptr ? s->file.path() : std::string("a dropped space")) + ": " +
                         pool::transfer_error_text(requests[i].result, options_.page_size) +
                         " (the page stays dirty)");
      }
    }
    // Released only now that each page's dirty state says what happened to it.
    for (const Held& h : held) translation::unlock_shared(*h.entry);
    requests.clear();
    held.clear();
    if (unsynced.size() >= max_unsynced) sync_written();
  };

  for (FrameId f = 1; f <= frames_.num_frames(); ++f) {
    if (meta_[f].dirty.load(std::memory_order_relaxed) == pool::kClean) continue;
    PageId pid(meta_[f].owner.load(std::memory_order_acquire));
    Space* s = pid.valid() ? live_space(pid.space()) : nullptr;
    if (s == nullptr) continue;
    translation::Entry* ep = existing_entry(s, pid.block());
    if (ep == nullptr) continue;  // evicted meanwhile (recycling tables)
    // A shared latch keeps writers and the evictor out while the page is written.
    bool latched = false;
    for (int spins = 0;;) {
      EntryWord w = translation::load(*ep);
      if (w.frame() != f) {
        if constexpr (kSparseGroups) {
          // The page may have moved between the array and the side table, still in f: its
          // entry now is where the lookup (after any move in progress) says.
          translation::Entry* now = existing_entry(s, pid.block());
          if (now != nullptr && now != ep) {
            ep = now;
            continue;
          }
        }
        break;  // evicted meanwhile (and written back by the evictor)
      }
      translation::Entry& e = *ep;
      if (translation::try_lock_shared(e, w)) {
        // Recycled for another page that now sits in f: its own owner is f's new owner, and
        // that page is written by the scan only if it is dirty, through its own entry.
        if (owns(s, e, pid)) latched = true; else translation::unlock_shared(e);
        break;
      }
      after_failed_cas(s, pid.block(), e);
      if (++spins < 64) translation::cpu_relax(); else std::this_thread::yield();
    }
    if (!latched) continue;
    translation::Entry& e = *ep;
    if (meta_[f].dirty.load(std::memory_order_relaxed) == pool::kClean) {
      translation::unlock_shared(e);
      continue;
    }
    // The trailer lies outside the payload that readers see, so stamping it under a shared
    // latch races with no reader.
    io::stamp_page(page_data(s, pid, f), options_.page_size, pid);
    meta_[f].dirty.store(pool::kWrittenUnsynced, std::memory_order_relaxed);
    requests.push_back(io::IoRequest{s->file.fd(), uint64_t{pid.block()} * options_.page_size,
                                     page_data(s, pid, f), static_cast<uint32_t>(options_.page_size), true, 0, 0});
    held.push_back({&e, f});
    if (requests.size() >= batch) write_batch();
  }
  write_batch();

  std::lock_guard lock(spaces_mutex_);
  // Every live space, whatever failed before: a failure in one must not leave the others
  // (or the catalog) unsynced.
  for (const auto& s : spaces_) {
    if (s->alive.load()) sync_space(s.get());
  }
  resolve();
  // Rule 6: a space whose writes and syncs all succeeded now holds every block below its
  // count durably; the catalog records that count (only when one moved: two fsyncs saved).
  auto failed = [](const std::vector<Space*>& v, Space* s) { return std::find(v.begin(), v.end(), s) != v.end(); };
  bool counts_changed = false;
  for (auto& [s, blocks] : counted) {
    if (!s->alive.load() || failed(sync_failed, s) || failed(write_failed, s)) continue;
    if (blocks > s->durable_blocks) {
      s->durable_blocks = blocks;
      counts_changed = true;
    }
  }
  if (counts_changed) {
    try {
      write_catalog_locked();
    } catch (const Error& e) {
      errors.push_back(e.what());
    }
  }
  if (!errors.empty()) {
    std::string what = errors.front();
    if (errors.size() > 1) {
      constexpr size_t kMaxListed = 8;  // bounds the message; the count says the rest
      what += "; and " + std::to_string(errors.size() - 1) + " more:";
      for (size_t i = 1; i < errors.size() && i <= kMaxListed; ++i) what += " [" + errors[i] + "]";
    }
    throw Error(ErrorCode::kIoError, "flush: " + what);
  }
}

// --- statistics and checks -----------------------------------------------------------------

template <class T>
PoolStats BasicBufferPool<T>::stats() const {
  PoolStats st;
  {
    std::lock_guard lock(thread_counters_mutex_);
    for (const auto& tc : thread_counters_) {
      st.hint_hits += tc->hint_hits.load(std::memory_order_relaxed);
      st.hint_misses += tc->hint_misses.load(std::memory_order_relaxed);
      st.accesses += tc->accesses.load(std::memory_order_relaxed);
      st.tier[1].hits += tc->far_hits.load(std::memory_order_relaxed);
    }
    st.accesses += st.hint_hits;  // an access through a valid hint looked nothing up
  }
  st.faults = counters_.faults.load();
  // Faults done for allocations or by threads that lost a race are still one read each.
  st.hits = st.accesses > st.faults ? st.accesses - st.faults : 0;
  st.evictions = counters_.evictions.load();
  st.write_backs = counters_.write_backs.load();
  st.punches = counters_.punches.load();
  st.prefetch_issued = counters_.prefetch_issued.load();
  st.prefetch_failed = counters_.prefetch_failed.load();
  st.read_inflight_ns = counters_.read_inflight_ns.load();
  st.optimistic_fallbacks = counters_.optimistic_fallbacks.load();
  st.hint_repairs = counters_.hint_repairs.load();
  st.frames = frames_.num_frames();
  st.free_frames = free_list_.size() + (far_ != nullptr ? far_->free.size() : 0);
  for (FrameId f = 1; f <= frames_.num_frames(); ++f) {
    const bool owned = meta_[f].owner.load(std::memory_order_relaxed) != 0;
    st.resident_pages += owned;
    st.tier[in_far_tier(f) ? 1 : 0].resident_pages += owned;
  }
  st.tier[0].frames = fast_last_;
  st.tier[1].frames = frames_.num_frames() - fast_last_;
  // A far hit is counted by the access, which may then fault (the page was evicted meanwhile).
  st.tier[1].hits = std::min(st.tier[1].hits, st.hits);
  st.tier[0].hits = st.hits - st.tier[1].hits;
  st.tier[0].evictions = st.evictions;
  if (far_ != nullptr) {
    st.tier[0].evictions = far_->evictions[0].load();
    st.tier[1].evictions = far_->evictions[1].load();
    st.promotions = far_->promotions.load();
    st.demotions = far_->demotions.load();
    st.migration_bytes = (st.promotions + st.demotions) * options_.page_size;
    st.migration_wait_ns = far_->tier->stats().throttle_wait_ns;
    st.migration_ns = far_->migration_ns.load();
    st.promotion_batches = far_->promotion_batches.load();
    st.migration_fault_ns = far_->fault_ns.load();
    st.migration_copy_ns = far_->copy_ns.load();
    st.migration_discard_ns = far_->discard_ns.load();
  }
  st.frame_bytes = frames_.bytes();
  st.frame_huge_page_bytes = frames_.huge_page_bytes();
  st.direct_io = true;
  st.write_back_failures = counters_.write_back_failures.load();
  st.sync_failures = counters_.sync_failures.load();
  std::lock_guard lock(spaces_mutex_);
  for (const auto& s : spaces_) {
    if (!s->alive.load()) continue;
    uint64_t blocks = s->num_blocks.load();
    st.translation_private_bytes += s->table.private_bytes(blocks);
    st.translation_mincore_bytes += s->table.mincore_bytes(blocks);
    st.translation_reserved_bytes += s->table.reserved_bytes();
    st.direct_io = st.direct_io && s->file.direct();
    if constexpr (kSparseGroups) {
      st.sparse_groups += static_cast<uint64_t>(std::max<int64_t>(s->table.sparse_groups(), 0));
      st.sparse_moves += s->table.moves_to_sparse();
      st.dense_moves += s->table.moves_to_dense();
      st.refused_group_moves += s->table.refused_moves();
      st.side_table_bytes += s->table.side_bytes();
    }
  }
  return st;
}

template <class T>
void BasicBufferPool<T>::check_invariants() const {
  auto fail = [](const std::string& why) { throw std::logic_error("pool invariant violated: " + why); };
  const FrameId n = frames_.num_frames();
  // Frames of reads in flight: owner 0, not free, their entries kIoPending.
  std::vector<uint8_t> in_flight(n + 1, 0);
  std::vector<uint64_t> pending_pages;
  size_t abandoned = 0;  // reads of dropped spaces that a failed ring still holds
  for (uint32_t i = 0; i < pool::kMaxAsyncLanes; ++i) {
    AsyncLane& lane = lanes_[i];
    std::lock_guard lock(lane.mutex);
    std::vector<uint8_t> slot_free(lane.pending.size(), 0);
    for (uint32_t slot : lane.free_slots) slot_free[slot] = 1;
    for (size_t slot = 0; slot < lane.pending.size(); ++slot) {
      if (slot_free[slot]) continue;
      const typename AsyncLane::PendingRead& p = lane.pending[slot];
      if (in_flight[p.frame]++) fail("frame " + std::to_string(p.frame) + " has two reads in flight");
      if (meta_[p.frame].owner.load() != 0) fail("frame " + std::to_string(p.frame) + " is read into while owned");
      if (p.space == nullptr) {  // abandoned by a drop (abandon_reads): no entry
        ++abandoned;
        continue;
      }
      if (translation::load(*p.entry).raw != translation::io_pending_word(i).raw || !owns(p.space, *p.entry, p.pid) ||
          existing_entry(p.space, p.pid.block()) != p.entry) {
        fail("a read in flight in lane " + std::to_string(i) + " for a page whose entry is not pending there");
      }
      pending_pages.push_back(p.pid.raw);
    }
  }
  std::sort(pending_pages.begin(), pending_pages.end());
  std::vector<uint8_t> listed(n + 1, 0);
  std::vector<FrameId> free_frames = free_list_.snapshot();
  const size_t free_count = free_frames.size() + (far_ != nullptr ? far_->free.size() : 0);
  if (far_ != nullptr) {
    for (FrameId f : far_->free.snapshot()) {
      if (!in_far_tier(f)) fail("the far tier's free list holds fast frame " + std::to_string(f));
      free_frames.push_back(f);
    }
  }
  for (FrameId f : free_frames) {
    if (f == kInvalidFrame || f > n) fail("free list holds frame " + std::to_string(f));
    if (in_far_tier(f) && far_ == nullptr) fail("free list holds far frame " + std::to_string(f));
    if (listed[f]++) fail("frame " + std::to_string(f) + " is in the free list twice");
    if (in_flight[f]) fail("frame " + std::to_string(f) + " is free and being read into");
    if (meta_[f].owner.load() != 0) fail("free frame " + std::to_string(f) + " has an owner");
    if constexpr (kFrameHints) {
      if (frame_entries_[f].load() != nullptr) fail("free frame " + std::to_string(f) + " has an entry pointer");
    }
  }
  size_t owned = 0;
  for (FrameId f = 1; f <= n; ++f) {
    PageId pid(meta_[f].owner.load());
    if (!pid.valid()) continue;
    ++owned;
    Space* s = live_space(pid.space());
    if (s == nullptr) fail("frame " + std::to_string(f) + " belongs to a dropped space");
    translation::Entry* pe = existing_entry(s, pid.block());
    if (pe == nullptr) fail("frame " + std::to_string(f) + "'s page has no entry");
    if (!owns(s, *pe, pid)) fail("frame " + std::to_string(f) + "'s page's entry belongs to another page");
    EntryWord w = translation::load(*pe);
    if (w.frame() != f) fail("frame " + std::to_string(f) + " and its page's entry disagree");
    if constexpr (kFrameHints) {
      if (frame_entries_[f].load() != pe) {
        fail("frame " + std::to_string(f) + "'s entry pointer is not its page's entry");
      }
    }
    if (!w.unlatched()) fail("page in frame " + std::to_string(f) + " is still pinned or latched");
  }
  size_t reading = pending_pages.size() + abandoned;
  if (in_flight.size() > size_t{fast_last_} + 1 &&
      std::find(in_flight.begin() + fast_last_ + 1, in_flight.end(), 1) != in_flight.end()) {
    fail("a read in flight into a far frame (reads load into the fast tier)");
  }
  if (owned + free_count + reading != n) {
    fail(std::to_string(owned) + " owned + " + std::to_string(free_count) + " free + " +
         std::to_string(reading) + " being read != " + std::to_string(n) + " frames (a frame leaked)");
  }

  // Entries -> frames for tables that enumerate their slots (hash tables): every resident
  // entry's frame is owned by its page (kIoPending and loading entries have no frame yet).
  if constexpr (requires(const typename T::Table& t) { t.for_each_entry([](BlockId, const translation::Entry&) {}); }) {
    std::lock_guard lock(spaces_mutex_);
    for (const auto& s : spaces_) {
      if (!s->alive.load()) continue;
      s->table.for_each_entry([&](BlockId b, const translation::Entry& e) {
        EntryWord w = translation::load(e);
        if (kRecyclesEntries && (w.state() == translation::kGone || !owns(s.get(), e, PageId(s->id, b)))) {
          fail("entry of block " + std::to_string(b) + " in space " + s->name + " is in the table but " +
               (w.state() == translation::kGone ? "retired" : "owned by another block"));
        }
        if (w.resident() && (w.frame() > n || meta_[w.frame()].owner.load() != PageId(s->id, b).raw)) {
          fail("entry of block " + std::to_string(b) + " in space " + s->name + " points to frame " +
               std::to_string(w.frame()) + ", which it does not own");
        }
      });
    }
  }

  if constexpr (kSparseGroups) check_sparse_groups(pending_pages);
  // Entries -> frames, and hole-punch counts: for tables that can enumerate their entries
  // by block without creating them (arrays).
  if constexpr (!kSparseGroups && requires(typename T::Table& t) { t.group_count(BlockId{}); }) {
  std::lock_guard lock(spaces_mutex_);
  for (const auto& s : spaces_) {
    if (!s->alive.load()) continue;
    uint64_t blocks = s->num_blocks.load();
    for (uint64_t g = 0; g * translation::kEntriesPerGroup < blocks; ++g) {
      uint32_t resident = 0;
      for (uint64_t b = g * translation::kEntriesPerGroup;
           b < std::min(blocks, (g + 1) * translation::kEntriesPerGroup); ++b) {
        EntryWord w = translation::load(s->table.entry(static_cast<BlockId>(b)));
        if (w.evicted()) continue;
        ++resident;
        if (w.state() == kIoPending &&
            std::binary_search(pending_pages.begin(), pending_pages.end(), PageId(s->id, static_cast<BlockId>(b)).raw)) {
          continue;  // its reference is held by the read in flight
        }
        if (!w.resident() || meta_[w.frame()].owner.load() != PageId(s->id, static_cast<BlockId>(b)).raw) {
          fail("entry of block " + std::to_string(b) + " in space " + s->name + " points to a frame it does not own");
        }
      }
      uint32_t count = s->table.group_count(static_cast<BlockId>(g * translation::kEntriesPerGroup));
      if (count != resident) {
        fail("hole-punch count " + std::to_string(count) + " != " + std::to_string(resident) +
             " resident entries in group " + std::to_string(g) + " of space " + s->name);
      }
      if constexpr (requires { s->table.page_backed(BlockId{}); }) {
        if (count == 0 && s->table.page_backed(static_cast<BlockId>(g * translation::kEntriesPerGroup))) {
          fail("group " + std::to_string(g) + " of space " + s->name +
               " has no reference but its page of entries is backed (written after its punch)");
        }
      }
    }
  }
  }
}

}  // namespace calico

#include "pool/eviction.h"       // CLOCK eviction and get_frame
#include "pool/sparse_moves.h"   // sparse groups (array_sparse)
