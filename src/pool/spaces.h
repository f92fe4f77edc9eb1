// PoolCore: spaces. Create, open, drop; the directory a page id's space is resolved through
// when the thread's path cache misses (resolve_slow); the catalog write; per-thread counters.
// A space is type-stable: dropped spaces stay allocated until the pool closes (README.md).
#pragma once

#include "pool/core_definitions.h"

namespace calico {

template <class T>
typename pool::PoolCore<T>::Space* pool::PoolCore<T>::live_space(SpaceId id) const {
  Space* s = directory_.lookup(id);
  return (s != nullptr && s->alive.load(std::memory_order_acquire)) ? s : nullptr;
}

template <class T>
typename pool::PoolCore<T>::Resolved pool::PoolCore<T>::resolve_slow(SpaceId id) {
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
typename pool::PoolCore<T>::ThreadCounter* pool::PoolCore<T>::register_thread() {
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
void pool::PoolCore<T>::throw_out_of_range(PageId pid) const {
  throw Error(ErrorCode::kPageOutOfRange,
              "block " + std::to_string(pid.block()) + " is past the capacity of space " +
                  std::to_string(pid.space()),
              pid);
}

template <class T>
void pool::PoolCore<T>::write_catalog_locked(const pool::CatalogSpace* added, SpaceId skipped) {
  pool::CatalogData data;
  data.page_size = options_.page_size;
  data.next_space_id = next_space_id_;
  data.generation = generation_;
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
SpaceId pool::PoolCore<T>::create_space(std::string_view name_view) {
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
  io::PageFile file = io::PageFile::open(path, options_.page_size, /*create=*/true, options_.testing.fault_injector);
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
SpaceId pool::PoolCore<T>::open_space(std::string_view name) const {
  std::lock_guard lock(spaces_mutex_);
  for (const auto& s : spaces_) {
    if (s->alive.load() && s->name == name) return s->id;
  }
  throw Error(ErrorCode::kUnknownSpace, "no space named '" + std::string(name) + "'");
}

template <class T>
uint64_t pool::PoolCore<T>::space_blocks(SpaceId id) const {
  Space* s = live_space(id);
  if (s == nullptr) throw Error(ErrorCode::kUnknownSpace, "space " + std::to_string(id));
  return s->num_blocks.load(std::memory_order_acquire);
}

template <class T>
std::vector<SpaceInfo> pool::PoolCore<T>::spaces() const {
  std::lock_guard lock(spaces_mutex_);
  std::vector<SpaceInfo> out;
  for (const auto& s : spaces_) {
    if (s->alive.load()) out.push_back({s->id, s->name, s->num_blocks.load()});
  }
  return out;
}

template <class T>
void pool::PoolCore<T>::drop_space(SpaceId id) {
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
    if (journal_ != nullptr) journal_->forget_space(id);
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

}  // namespace calico
