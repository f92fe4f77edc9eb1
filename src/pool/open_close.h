// PoolCore: construction (the frame arena, frame metadata, lanes, the far tier), open (the
// data directory and its catalog: pool/data_dir.h, pool/catalog.h) and close (flush, then
// drain the reads in flight). Nothing on disk changes until every check of open passed.
#pragma once

#include "pool/core_definitions.h"
#include "calico/buffer_pool.h"

namespace calico {

static_assert(BufferPool::kTrailerBytes == io::kTrailerBytes);

template <class T>
pool::PoolCore<T>::PoolCore(const PoolOptions& options)
    : options_(options),
      uid_(pool::next_pool_uid.fetch_add(1)),
      // Translations that keep pages in place use frames only as a budget of tokens: the
      // arena is then reserved but never touched (no memory).
      // With a far tier, one arena holds both tiers: fast frames first (pool/features/tiering.h).
      frames_(options.page_size,
              static_cast<FrameId>(options.pool_bytes / options.page_size +
                                   (kTierable ? options.tiers.far.frames : 0)),
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
    if (options.tiers.far.frames > 0) {
      CALICO_CHECK(frames_.num_frames() > fast_last_);
      far_ = std::make_unique<pool::FarTier>(options, fast_last_ + 1, frames_.num_frames());
      // Frames are page-aligned, so the far range is 4 KB aligned (place's precondition).
      far_->tier->place(frames_.frame(far_->first), size_t{far_->last - fast_last_} * options.page_size);
    }
  }
}

template <class T>
pool::DataDirectory pool::PoolCore<T>::open_directory(const PoolOptions& options) {
  // Nothing on disk changes until every check has passed (pool/data_dir.h): a failed open
  // leaves the directory exactly as it was, and never flushes a half-built pool over it.
  pool::validate_options(options);
  if (options.tiers.far.frames > 0 && !kTierable) {
    throw Error(ErrorCode::kInvalidArgument,
                "tiers.far: translation '" + std::string(T::kName) +
                    "' takes no far tier (the tiered translations: array_tiered, vmcache_n)");
  }
  return pool::open_data_directory(options.data_dir, options.page_size);
}

template <class T>
void pool::PoolCore<T>::open_catalog(pool::DataDirectory& dir) {
  const PoolOptions& options = options_;
  lock_fd_ = std::exchange(dir.lock_fd, -1);

  std::lock_guard lock(spaces_mutex_);
  if (dir.catalog) {
    next_space_id_ = dir.catalog->next_space_id;
    generation_ = dir.catalog->generation;
    for (const pool::CatalogSpace& rec : dir.catalog->spaces) {
      if (rec.blocks > options.max_blocks_per_space) {
        throw Error(ErrorCode::kInvalidArgument,
                    "space " + rec.name + " has " + std::to_string(rec.blocks) +
                        " blocks, more than max_blocks_per_space");
      }
      io::PageFile file = io::PageFile::open(pool::space_path(options.data_dir, rec.id), options.page_size,
                                             /*create=*/false, options.testing.fault_injector);
      // The catalog's count is the durable one: blocks allocated after the last flush that
      // synced the space are forgotten (pool/README.md, rule 6). The file may be longer (it
      // grows ahead in chunks, and may hold pages of forgotten blocks).
      spaces_.push_back(std::make_unique<Space>(
          rec.id, rec.name, options.max_blocks_per_space, std::move(file), rec.blocks, options));
      directory_.publish(rec.id, spaces_.back().get());
    }
    // A crash after flush k left records of generation k: flush k's images go back, whatever
    // this pool's atomic_flush (pool/journal.h), once every check of the open has passed (a
    // failed open changes nothing on disk) and before any page is read.
    pool::Journal::recover(options.data_dir, *dir.catalog);
  } else {
    write_catalog_locked();  // a new pool: its first write
  }
  if (options.atomic_flush) {
    std::vector<pool::CatalogSpace> counts;
    for (const auto& s : spaces_) counts.push_back({s->id, s->durable_blocks, s->name});
    journal_ = std::make_unique<pool::Journal>(options.data_dir, options.page_size, generation_, counts,
                                               options.testing.fault_injector);
  }
  pool::remove_leftovers(dir);
  opened_ = true;
}

// The API's open (calico/buffer_pool.h): the checks, then the pool, then its spaces.
template <TranslationPolicy T>
std::unique_ptr<BasicBufferPool<T>> BasicBufferPool<T>::open(const PoolOptions& options) {
  pool::DataDirectory dir = Core::open_directory(options);
  std::unique_ptr<BasicBufferPool> pool(new BasicBufferPool(options));
  pool->core_.open_catalog(dir);
  return pool;
}

template <class T>
pool::PoolCore<T>::~PoolCore() {
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

}  // namespace calico
