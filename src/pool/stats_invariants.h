// PoolCore: stats() (summing per-thread and per-pool counters, measuring translation and
// frame memory) and check_invariants() (the whole-structure check tests run at quiescence).
#pragma once

#include "pool/core_definitions.h"

namespace calico {

template <class T>
PoolStats pool::PoolCore<T>::stats() const {
  PoolStats st;
  {
    std::lock_guard lock(thread_counters_mutex_);
    for (const auto& tc : thread_counters_) {
      st.hints.hits += tc->hint_hits.load(std::memory_order_relaxed);
      st.hints.misses += tc->hint_misses.load(std::memory_order_relaxed);
      st.accesses += tc->accesses.load(std::memory_order_relaxed);
      st.tier[1].hits += tc->far_hits.load(std::memory_order_relaxed);
    }
    st.accesses += st.hints.hits;  // an access through a valid hint looked nothing up
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
  st.hints.repairs = counters_.hint_repairs.load();
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
    st.migration.promotions = far_->promotions.load();
    st.migration.demotions = far_->demotions.load();
    st.migration.bytes = (st.migration.promotions + st.migration.demotions) * options_.page_size;
    st.migration.wait_ns = far_->tier->stats().throttle_wait_ns;
    st.migration.ns = far_->migration_ns.load();
    st.migration.promotion_batches = far_->promotion_batches.load();
    st.migration.fault_ns = far_->fault_ns.load();
    st.migration.copy_ns = far_->copy_ns.load();
    st.migration.discard_ns = far_->discard_ns.load();
  }
  st.frame_bytes = frames_.bytes();
  st.frame_huge_page_bytes = frames_.huge_page_bytes();
  st.direct_io = true;
  st.write_back_failures = counters_.write_back_failures.load();
  st.sync_failures = counters_.sync_failures.load();
  if (journal_ != nullptr) {
    st.journal_pages = journal_->pages_saved();
    st.journal_syncs = journal_->syncs();
  }
  std::lock_guard lock(spaces_mutex_);
  st.flush_generation = generation_;
  for (const auto& s : spaces_) {
    if (!s->alive.load()) continue;
    uint64_t blocks = s->num_blocks.load();
    st.translation_private_bytes += s->table.private_bytes(blocks);
    st.translation_mincore_bytes += s->table.mincore_bytes(blocks);
    st.translation_reserved_bytes += s->table.reserved_bytes();
    st.direct_io = st.direct_io && s->file.direct();
    if constexpr (kSparseGroups) {
      st.sparse_groups.groups += static_cast<uint64_t>(std::max<int64_t>(s->table.sparse_groups(), 0));
      st.sparse_groups.sparse_moves += s->table.moves_to_sparse();
      st.sparse_groups.dense_moves += s->table.moves_to_dense();
      st.sparse_groups.refused_moves += s->table.refused_moves();
      st.sparse_groups.side_table_bytes += s->table.side_bytes();
    }
  }
  return st;
}

template <class T>
void pool::PoolCore<T>::check_invariants() const {
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
