// Journal: the rollback journal that makes a flush atomic across pages
// (docs/design/atomic_flush.md; SQLite's rollback journal, "Atomic Commit In SQLite").
//
// Without it a crash reopens a page-wise mix of the last flush and later writes: eviction
// writes pages back between flushes, and a flush writes its pages in place before its
// catalog commits, so a structure spanning pages (a B+tree split, an HNSW list and the node
// it names) can come back torn. With it, a crash reopens exactly the state of the last
// committed flush.
//
// Epochs: epoch k runs from the commit of flush k (the catalog with `generation k`) to the
// commit of flush k+1. Before a page that flush k made durable (a block below its space's
// committed count) is overwritten in place for the first time in epoch k, its on-disk image
// (flush k's) is appended to dir/journal and the journal is synced. A crash before flush k+1
// commits leaves records of generation k beside a catalog of generation k: recover() writes
// them back, which restores flush k exactly (blocks past the committed counts are forgotten
// by the catalog anyway). Records of another generation are stale and ignored, so losing the
// truncation after a commit is harmless.
//
// Invariants:
//   (J1) While the epoch is k, every block b < committed(s) whose on-disk image differs from
//        flush k's has a durable generation-k record holding flush k's image.
//   (J2) An in-place write of such a block happens only under an epoch guard taken before
//        save() journaled it, and the commit (which moves the epoch on) excludes every guard:
//        no write journaled in epoch k lands in epoch k+1 without its own record.
//
// Record format (fixed stride: kRecordHeader + page_size bytes, appended back to back):
//   u32 magic, u32 page_size, u64 generation, u32 space, u32 unused, u64 block,
//   u32 crc32c (of the header with this field zero, then the image), pad to kRecordHeader,
//   then the page's image as it was on disk. A record whose magic, page size or CRC fails
//   ends the journal: it was being appended when the process died, so its page was not yet
//   overwritten.
//
// Locking: epoch_ (shared by a write batch from save() to the end of its writes; exclusive
// by commit) -> mu_ (the append offset, the saved set, the committed counts). Taken after
// every pool mutex; nothing is waited for while either is held but the journal's own I/O
// and, under epoch_, the batch's page writes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "calico/page_id.h"
#include "io/fault_injector.h"
#include "pool/catalog.h"

namespace calico::io {
class IoRing;
}

namespace calico::pool {

inline constexpr const char* kJournalFile = "journal";

class Journal {
 public:
  static constexpr size_t kRecordHeader = 64;
  static constexpr uint32_t kMagic = 0x4A4C4143;  // "CALJ"

  // A page about to be written in place: its space, the space file's fd, its block.
  struct Target {
    SpaceId space;
    int fd;
    uint64_t block;
  };

  // Writes back the records of `catalog.generation` found in dir/journal (pages of spaces the
  // catalog names, below their counts), syncs the space files, then empties the journal.
  // Returns the pages restored (0 when there is no journal). Errors: kIoError naming the
  // file; the journal is then left as it was, so the next open recovers again.
  static uint64_t recover(const std::string& dir, const CatalogData& catalog);

  // Opens dir/journal (created empty, its directory entry synced) for the epoch of
  // `generation`, with each space's committed count. Errors: kIoError.
  Journal(const std::string& dir, size_t page_size, uint64_t generation,
          std::span<const CatalogSpace> spaces, io::FaultInjector* faults);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Held by a write batch from before save() until its in-place writes completed (J2).
  std::shared_lock<std::shared_mutex> epoch_guard() { return std::shared_lock(epoch_); }

  // Saves the images of the targets that need one this epoch (below their space's committed
  // count, not saved yet): one batch of reads on `ring`, one append, one fdatasync. Pre: an
  // epoch_guard() held. Errors: kIoError naming the page or the journal; then nothing may
  // be written in place (the batch's pages stay dirty), and nothing is marked saved.
  void save(std::span<const Target> targets, io::IoRing& ring);

  // True when this epoch saved a record (a commit is then needed even if no count moved).
  bool dirty() const;

  // Commits flush k+1: with every write batch excluded, calls write_catalog(k + 1) (which
  // writes the catalog with that generation and the new counts; it throws on failure, and
  // then nothing changes here), then starts epoch k+1 with `counts` as the committed counts
  // and empties the journal (best effort: stale records are ignored by recover()).
  void commit(const std::function<void(uint64_t generation)>& write_catalog,
              std::span<const CatalogSpace> counts);

  // A dropped space: its records are no longer needed (the catalog no longer names it).
  void forget_space(SpaceId space);

  uint64_t generation() const;
  uint64_t pages_saved() const { return pages_saved_; }  // racy: for stats
  uint64_t syncs() const { return syncs_; }

 private:
  void append(const std::byte* bytes, size_t len);
  void sync();

  std::string path_;
  size_t page_size_;
  io::FaultInjector* faults_;
  int fd_ = -1;
  std::shared_mutex epoch_;
  mutable std::mutex mu_;
  uint64_t generation_;                                   // under mu_ (written under epoch_ too)
  uint64_t end_ = 0;                                      // append offset, under mu_
  std::unordered_map<SpaceId, uint64_t> committed_;       // under mu_
  std::unordered_set<uint64_t> saved_;                    // PageId raws saved this epoch, under mu_
  std::atomic<uint64_t> pages_saved_{0}, syncs_{0};
};

}  // namespace calico::pool
