// PoolCore: the miss path. wait_or_fault is where every access goes when the entry it loaded
// is not usable: it faults an evicted page in (claim the entry out of 0, take a frame, read,
// publish), helps an asynchronous read complete, or backs off while the page is latched.
// Also allocate (a new page) and the thread's I/O ring. Rules: README.md, "Faults".
#pragma once

#include "pool/core_definitions.h"

namespace calico {

template <class T>
void pool::PoolCore<T>::wait_or_fault(Space* space, PageId pid, translation::Entry& e,
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
void pool::PoolCore<T>::fault(Space* space, PageId pid, translation::Entry& e) {
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
    if (options_.testing.test_points != nullptr) options_.testing.test_points->at(pool::TestPoints::Point::kFaultLookedUp, pid);
    if (space->table.group_sparse(block) && space->table.group_count(block) >= space->table.dense_group_at()) {
      try_densify(space, block);  // only tries: the group stays sparse when it cannot move now
    }
  }
  if (!acquire_ref_for(space, block, e)) {
    forget(space, block, e);
    return;  // the group moved since the lookup: the caller looks pid up again
  }
  if constexpr (kSparseGroups) {
    if (options_.testing.test_points != nullptr) options_.testing.test_points->at(pool::TestPoints::Point::kFaultRefTaken, pid);
  }
  if (!translation::try_cas(e, EntryWord{0}, translation::kLoadingWord)) {
    release_ref(space, block);
    return;  // another thread is loading it or has loaded it
  }
  if constexpr (kSparseGroups) {
    if (options_.testing.test_points != nullptr) options_.testing.test_points->at(pool::TestPoints::Point::kFaultClaimed, pid);
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
ExclusiveGuard pool::PoolCore<T>::allocate(SpaceId id) {
  Space* space = resolve(id).space;
  if (options_.testing.test_points != nullptr) options_.testing.test_points->at(pool::TestPoints::Point::kAllocateResolved, PageId(id, 0));
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
    if (options_.testing.test_points != nullptr) {
      options_.testing.test_points->at(pool::TestPoints::Point::kAllocateBlockRead, PageId(id, static_cast<BlockId>(block)));
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
io::IoRing& pool::PoolCore<T>::thread_ring() {
  struct ThreadRing {
    uint64_t pool_uid = 0;
    std::unique_ptr<io::IoRing> ring;
  };
  thread_local ThreadRing tr;
  // A ring whose wait failed (io_ring.h, failed()) is replaced. If creation fails (e.g. no
  // file descriptor left), tr is unchanged and the caller gets kIoError.
  if (tr.pool_uid != uid_ || tr.ring->failed()) [[unlikely]] {
    // Depth covers one eviction batch; the fault injector is per pool, so is the ring.
    tr.ring = std::make_unique<io::IoRing>(std::max(options_.eviction_batch, 8u), options_.testing.fault_injector);
    tr.pool_uid = uid_;
  }
  return *tr.ring;
}

}  // namespace calico
