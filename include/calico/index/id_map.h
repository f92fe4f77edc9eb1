// BasicIdMap<Pool>: the persistent map between a vector index's user ids (any u64 but
// kNoId) and its internal slots (u32: HNSW node numbers, IVF row numbers), on the index's
// own pool. BasicMapped (calico/index/mapped_index.h) composes it with an index; this class
// is the storage and knows nothing of vectors. The declaration and its contract; the page
// format is in src/index/id_map/id_map_layout.h, the member definitions in
// src/index/id_map/id_map_impl.h.
//
// Principal entry points:
//   BasicIdMap::create(pool, index)   new, empty spaces `<index>.ids` and `<index>.slots`
//   BasicIdMap::open(pool, index)     the map written earlier
//   slot_of(id, &slot)                id -> slot: a B+tree lookup (optimistic descent)
//   id_of(slot)                       slot -> id: one optimistic read of a slot-array page
//   binding_of(id, &b)                id -> (slot, label): the same lookup, with the label
//   bind(id, slot[, label]) / unbind(id)   write id -> (slot, label) (the B+tree)
//   set_id(slot, id)                  write slot -> id (the array)
//   add_label(label, slot) / erase_label(label, slot)   the label tree's entries
//   for_each_slot_of(label, fn)       the slots of a label: one range scan
//   allocate_slot(limit)              a free slot (the free list, else the next one)
//   check(), size(), slot_end()
//
// Storage. id -> slot is a BasicBTree in space `<index>.ids` keyed by the 8-byte big-endian
// id; slot -> id is a dense array in space `<index>.slots`, u64 per slot in slot-indexed
// pages after a metadata page: with the array translation a slot's page is one index
// computation away, so mapping a search's k results costs k reads of a few hot pages.
// Neither changes the index's own pages. Names: the index's name plus at most 6
// characters, so an index whose name is longer than kMaxIndexName characters has no map.
//
// Labels. A binding may carry a label, a u32 chosen by the user (a tenant, a user, a
// category): the id B+tree's value is then the slot and the label (an unlabeled binding
// keeps the 4-byte value of maps written before labels existed). A second B+tree, space
// `<index>.label`, keyed by (label, slot) big-endian, lists the slots of each label in one
// key range, so that the slots of a label cost a descent plus one entry per slot. It is
// created by the first add_label and opened with the map when its space exists. The map
// writes the two trees separately (one B+tree operation each); BasicMapped keeps them in
// step under its per-id locks (calico/index/mapped_index.h, "Labels"). At quiescence:
//   (L1) every labeled binding id -> (slot, label) has exactly one entry (label, slot);
//   (L2) every entry (label, slot) names a bound slot whose binding carries that label.
// check() checks both.
//
// Slots. allocate_slot hands out slots from an in-memory free list (refilled by
// refill_free, which BasicMapped calls after HNSW's consolidate) or else the next slot
// above every slot handed out. That high-water mark is persisted in chunks of
// kReserveChunk (the metadata's reserved_slots is written when a chunk is taken), so that
// a reopened map never hands out a slot it handed out before a flush; the rest of the last
// chunk is skipped after a reopen (until a refill finds it), up to the array's last page
// (a slot without its page was never handed out).
//
// Concurrency and latching: every member may be called from any number of threads at once
// (check() only at quiescence). The B+tree has its own (optimistic lock coupling); a slot
// entry is written under its page's exclusive latch and read optimistically; slot
// allocation (free list, high-water mark, appending array pages, the metadata page) is
// under one in-process mutex, so one BasicIdMap object per index per pool; the label tree
// is created at most once, under its own mutex, and found through an atomic pointer (a
// reader that finds none sees no labels). The map does not
// order its two halves: BasicMapped's per-id locks do (calico/index/mapped_index.h).
// A thread holds at most one page latch of the map at a time.
//
// Errors (calico::Error): kInvalidArgument for a name too long, a space that is not a map
// of this format, the slot limit; kSpaceExists (create); kUnknownSpace (open); kCorruptPage
// naming the metadata page; pool errors pass through, after which the map is as it was
// (each write is one B+tree operation or one entry under one latch).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/detail/id_map.h"
#include "calico/index/btree.h"
#include "calico/page_id.h"

namespace calico::index {

template <class Pool>
class BasicIdMap {
 public:
  // The id that is never bound (stored ids are id + 1, 0 = none; Python pads results with it).
  static constexpr uint64_t kNoId = UINT64_MAX;
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  // Slots taken per write of the metadata's high-water mark (see "Slots"): at most this many
  // slots are skipped by a reopen; one metadata write per this many new slots.
  static constexpr uint32_t kReserveChunk = 64;
  // The longest index name with a map: space names are at most 64 characters, and the map
  // adds ".slots" (and ".label": also 6).
  static constexpr size_t kMaxIndexName = 58;

  static std::string ids_space(std::string_view index) { return std::string(index) + ".ids"; }
  static std::string slots_space(std::string_view index) { return std::string(index) + ".slots"; }
  static std::string labels_space(std::string_view index) { return std::string(index) + ".label"; }

  // What the id B+tree holds for an id.
  struct Binding {
    uint32_t slot = kNoSlot;
    std::optional<uint32_t> label;  // none: an unlabeled id
  };

  // Whether index `index` has a map space (`<index>.slots`) holding its metadata page,
  // complete or not. A slots space without a block was created and never flushed (a crash
  // before the first flush after create()): no map, and attach rebuilds one.
  static bool exists(const Pool& pool, std::string_view index);
  // Creates both spaces, empty, in state kMigrating (mark_ready() makes it usable for
  // reopening). Errors: kInvalidArgument (name too long), kSpaceExists, pool errors.
  static BasicIdMap create(Pool& pool, std::string_view index);
  // Opens both spaces, and the label tree when its space exists. Errors: kUnknownSpace;
  // kInvalidArgument when block 0 of the slots space is not a map of this format and page
  // size, or the label space is not a B+tree.
  static BasicIdMap open(Pool& pool, std::string_view index);
  // Drops the map's spaces (the label tree's too) where they exist (a migration that did
  // not finish is redone).
  static void drop(Pool& pool, std::string_view index);

  BasicIdMap(BasicIdMap&&) noexcept = default;
  BasicIdMap& operator=(BasicIdMap&&) = delete;

  // Whether the metadata says kReady; mark_ready() writes it (end of a migration).
  bool ready() const;
  void mark_ready();

  // id -> slot: true and *slot when id is bound. Thread-safe. Errors: kCorruptPage for a
  // binding of neither 4 nor 8 bytes.
  bool slot_of(uint64_t id, uint32_t* slot) const;
  // id -> (slot, label): true and *b when id is bound. Thread-safe; errors as slot_of.
  bool binding_of(uint64_t id, Binding* b) const;
  // slot -> id: the entry of slot (kNoId when it holds none). Pre: slot < slot_end().
  uint64_t id_of(uint32_t slot) const;
  // Binds id -> (slot, label) (inserts or replaces; true when id was not bound). The label
  // tree is not touched. id != kNoId.
  bool bind(uint64_t id, uint32_t slot, std::optional<uint32_t> label = std::nullopt);
  // Removes id's binding; false when it had none.
  bool unbind(uint64_t id);
  // Writes slot's entry (kNoId clears it). Pre: slot < slot_end().
  void set_id(uint32_t slot, uint64_t id);

  // Inserts the label tree's entry (label, slot), creating the tree (space `<index>.label`)
  // at the first call. Errors: pool errors (of the creation too: the next call tries again).
  void add_label(uint32_t label, uint32_t slot);
  // Removes the entry (label, slot); false when it was absent (or there is no label tree).
  bool erase_label(uint32_t label, uint32_t slot);
  // Calls fn(slot) for every entry (label, slot) in slot order (a range scan of the label
  // tree: a concurrent writer may or may not be seen). Nothing when there is no label tree.
  template <class Fn>
  void for_each_slot_of(uint32_t label, Fn&& fn) const;
  // Whether the label tree exists (a labeled binding was ever written, or its space found).
  bool has_labels() const;

  // A slot no one holds: the free list's, else slot_end() (the array page is appended when
  // needed). Errors: kInvalidArgument when slot_end() reached `limit` (naming it); pool
  // errors, after which nothing was handed out.
  uint32_t allocate_slot(uint64_t limit);
  // Gives slot back (a slot that allocate_slot returned and that holds no id and no row).
  void free_slot(uint32_t slot);
  // Replaces the free list with every slot below slot_end() that holds no id and for which
  // unused(slot) is true; returns its length. The caller excludes allocation meanwhile.
  template <class Unused>
  uint64_t refill_free(Unused&& unused);
  // One past the largest slot handed out (in this process or before the last reopen).
  uint32_t slot_end() const;
  // Bound ids (the B+tree's count: racy while writers run).
  uint64_t size() const;
  // Calls fn(id, slot) for every binding in id order (a scan: a concurrent writer may or
  // may not be seen).
  template <class Fn>
  void for_each(Fn&& fn) const;
  // Calls fn(id, const Binding&) for every binding in id order (as for_each).
  template <class Fn>
  void for_each_binding(Fn&& fn) const;
  // Writes the B+trees' counts to their metadata pages (flush the pool after it).
  void sync();
  // Whole-map check at quiescence: the B+trees' invariants, the two halves are one
  // bijection (every binding's slot is below slot_end() and its entry names the id; every
  // non-empty entry's id is bound to that slot), and (L1), (L2) of "Labels". Returns the
  // number of bindings. Throws std::logic_error naming the first violation.
  uint64_t check() const;

 private:
  using Tree = BasicBTree<Pool>;
  using Meta = id_map_detail::IdMapMeta;

  // Slot allocation: under mu.
  struct Alloc {
    std::mutex mu;
    uint64_t next = 0;      // slot_end
    uint64_t reserved = 0;  // the metadata's reserved_slots
    std::vector<uint32_t> free;
  };

  // The label tree, created at most once (under mu); `tree` is read without the mutex.
  struct Labels {
    std::mutex mu;
    std::unique_ptr<Tree> owned;
    std::atomic<Tree*> tree{nullptr};
  };

  BasicIdMap(Pool& pool, std::string_view index, SpaceId slots, std::unique_ptr<Tree> tree,
             std::unique_ptr<Tree> labels, const Meta& meta);
  static bool space_exists(const Pool& pool, const std::string& name);
  // The label tree of `index`: opened; or, when `create`, created (nullptr otherwise) if it
  // has none, or if its space is one a crash or a failed creation left without the tree
  // (created, fewer than 2 blocks durable: it holds no label), which is dropped first.
  static std::unique_ptr<Tree> open_labels(Pool& pool, std::string_view index, bool create);
  static bool decode_binding(uint64_t id, std::string_view v, Binding* b);
  static void check_name(std::string_view index);
  PageId entry_page(uint32_t slot) const;
  uint32_t entry_offset(uint32_t slot) const;
  Meta read_meta() const;
  void write_meta(const Meta& m);
  [[noreturn]] static void fail(const std::string& what);

  Pool* pool_;
  std::string index_;
  SpaceId slots_;
  uint32_t per_page_;
  std::unique_ptr<Tree> tree_;  // lookups are logically const (the tree caches a frame)
  std::unique_ptr<Alloc> alloc_;
  std::unique_ptr<Labels> labels_;
  std::unique_ptr<std::atomic<uint64_t>> end_;  // slot_end(), read without the mutex
};

}  // namespace calico::index

// The member definitions (src/index/id_map/id_map_impl.h) are compiled into the library once per translation
// (cmake/variants.cmake) and are not included here: a user links them rather than
// compiling them again (src/index/README.md, "Compiled once"). The fuzz build, which
// compiles no variant, instantiates them where they are used.
#ifdef CALICO_IMPLICIT_INSTANTIATION
#include "calico/detail/id_map_impl.h"
#endif
