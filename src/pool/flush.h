// PoolCore: flush, the durability point (README.md rule 6).
#pragma once

#include "pool/core_definitions.h"

namespace calico {

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
void pool::PoolCore<T>::flush() {
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
    // The rollback journal first, as in eviction (pool/journal.h); if it fails, no page of
    // the batch is written (each stays dirty) and the flush does not commit.
    std::shared_lock<std::shared_mutex> epoch;
    bool journaled = true;
    if (journal_ != nullptr) {
      epoch = journal_->epoch_guard();
      std::vector<pool::Journal::Target> targets;
      targets.reserve(requests.size());
      for (size_t i = 0; i < requests.size(); ++i) {
        const PageId pid(meta_[held[i].frame].owner.load());
        targets.push_back({pid.space(), requests[i].fd, pid.block()});
      }
      try {
        journal_->save(targets, ring);
      } catch (const Error& e) {
        journaled = false;
        errors.push_back(e.what());
        for (io::IoRequest& r : requests) r.result = -EIO;
      }
    }
    if (journaled) ring.submit_and_wait(requests);
    if (epoch.owns_lock()) epoch.unlock();
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
  if (journal_ != nullptr) {
    // Atomic flush: all or nothing. Only a flush whose every write and sync succeeded
    // commits (its catalog, with the next generation, is the commit point; pool/journal.h);
    // after a failure the journal keeps the last commit restorable, and the next flush
    // rewrites what this one could not.
    if (errors.empty()) commit_locked(counted, errors);
  } else {
    for (auto& [s, blocks] : counted) {
      if (!s->alive.load() || failed(sync_failed, s) || failed(write_failed, s)) continue;
      if (blocks > s->durable_blocks) {
        s->durable_blocks = blocks;
        counts_changed = true;
      }
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

// Commits a flush with the rollback journal: the counts it read become durable and the
// catalog is written with the next generation, when a count moved or the epoch saved any
// image (else the catalog on disk already describes this state). Pre: spaces_mutex_ held,
// every write and sync of the flush succeeded. A failed catalog write changes nothing and is
// appended to `errors`.
template <class T>
void pool::PoolCore<T>::commit_locked(const std::vector<std::pair<Space*, uint64_t>>& counted,
                                      std::vector<std::string>& errors) {
  std::vector<std::pair<Space*, uint64_t>> before;
  bool moved = false;
  for (auto& [s, blocks] : counted) {
    if (!s->alive.load() || blocks <= s->durable_blocks) continue;
    before.emplace_back(s, s->durable_blocks);
    s->durable_blocks = blocks;
    moved = true;
  }
  if (!moved && !journal_->dirty()) return;
  std::vector<pool::CatalogSpace> counts;
  for (const auto& s : spaces_) {
    if (s->alive.load()) counts.push_back({s->id, s->durable_blocks, s->name});
  }
  try {
    journal_->commit(
        [&](uint64_t generation) {
          const uint64_t previous = std::exchange(generation_, generation);
          try {
            write_catalog_locked();
          } catch (...) {
            generation_ = previous;
            throw;
          }
        },
        counts);
  } catch (const Error& e) {
    for (auto& [s, blocks] : before) s->durable_blocks = blocks;
    errors.push_back(e.what());
  }
}

}  // namespace calico
