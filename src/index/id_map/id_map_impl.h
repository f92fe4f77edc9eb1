// BasicIdMap<Pool>'s member definitions: the declaration and its contract are in
// include/calico/index/id_map.h, the page format in id_map_layout.h. Included at the end of
// calico/index/id_map.h (through calico/detail/id_map_impl.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "calico/checks.h"
#include "calico/error.h"
#include "calico/index/id_map.h"
#include "index/corrupt_page.h"
#include "index/id_map/id_map_layout.h"

namespace calico::index {

template <class Pool>
inline void BasicIdMap<Pool>::check_name(std::string_view index) {
  if (index.size() > kMaxIndexName) {
    throw Error(ErrorCode::kInvalidArgument, "index name '" + std::string(index) + "' is longer than " +
                                                 std::to_string(kMaxIndexName) +
                                                 " characters: no room for its id map's space names");
  }
}

template <class Pool>
inline bool BasicIdMap<Pool>::space_exists(const Pool& pool, const std::string& name) {
  for (const SpaceInfo& s : pool.spaces()) {
    if (s.name == name) return true;
  }
  return false;
}

template <class Pool>
inline bool BasicIdMap<Pool>::exists(const Pool& pool, std::string_view index) {
  const std::string name = slots_space(index);
  for (const SpaceInfo& s : pool.spaces()) {
    if (s.name == name) return s.blocks >= 1;
  }
  return false;
}

template <class Pool>
inline auto BasicIdMap<Pool>::create(Pool& pool, std::string_view index) -> BasicIdMap {
  check_name(index);
  // The slots space first: its metadata (kMigrating) is what open() and a redone migration
  // look at; a crash before the tree exists leaves a kMigrating map, which is dropped.
  const SpaceId slots = pool.create_space(slots_space(index));
  Meta m{};
  m.magic = id_map_detail::kMagic;
  m.format_version = id_map_detail::kFormatVersion;
  m.page_size = static_cast<uint32_t>(pool.page_size());
  m.slots_per_page = static_cast<uint32_t>(pool.usable_page_size() / id_map_detail::kEntryBytes);
  m.state = static_cast<uint32_t>(id_map_detail::MapState::kMigrating);
  m.reserved_slots = 0;
  {
    ExclusiveGuard g = pool.allocate(slots);
    CALICO_CHECK(g.page_id().block() == 0);
    std::memcpy(g.data(), &m, sizeof m);
    g.mark_dirty();
  }
  auto tree = std::make_unique<Tree>(Tree::create(pool, ids_space(index)));
  return BasicIdMap(pool, index, slots, std::move(tree), nullptr, m);
}

template <class Pool>
inline auto BasicIdMap<Pool>::open(Pool& pool, std::string_view index) -> BasicIdMap {
  check_name(index);
  const SpaceId slots = pool.open_space(slots_space(index));
  if (pool.space_blocks(slots) < 1) {
    throw Error(ErrorCode::kInvalidArgument, "space '" + slots_space(index) + "' is not an id map (empty)");
  }
  Meta m;
  {
    SharedGuard g = pool.pin_shared(PageId(slots, 0));
    std::memcpy(&m, g.data(), sizeof m);
  }
  const uint64_t per_page = pool.usable_page_size() / id_map_detail::kEntryBytes;
  const bool state_ok = m.state == static_cast<uint32_t>(id_map_detail::MapState::kMigrating) ||
                        m.state == static_cast<uint32_t>(id_map_detail::MapState::kReady);
  if (m.magic != id_map_detail::kMagic || m.format_version != id_map_detail::kFormatVersion ||
      m.page_size != pool.page_size() || m.slots_per_page != per_page || !state_ok) {
    throw Error(ErrorCode::kInvalidArgument, "space '" + slots_space(index) + "' is not an id map of this format",
                PageId(slots, 0));
  }
  // Every slot handed out has its array page (the invariant of id_map_layout.h).
  const uint64_t pages = pool.space_blocks(slots) - 1;
  if (m.reserved_slots > pages * per_page + per_page || m.reserved_slots >= kNoSlot) {
    corrupt_page("id map", "metadata: reserved_slots " + std::to_string(m.reserved_slots) + " past the array's " +
                               std::to_string(pages) + " pages",
                 PageId(slots, 0));
  }
  auto tree = std::make_unique<Tree>(Tree::open(pool, ids_space(index)));
  std::unique_ptr<Tree> labels = open_labels(pool, index, /*create=*/false);
  BasicIdMap map(pool, index, slots, std::move(tree), std::move(labels), m);
  // The high-water mark after a reopen, never past the array's last page: a slot without its
  // array page was never handed out (allocate_slot appends the page first), though the last
  // chunk reserved may reach past it; scans up to slot_end() read only pages that exist.
  const uint64_t end = std::min<uint64_t>(m.reserved_slots, pages * per_page);
  map.alloc_->next = end;
  map.end_->store(end, std::memory_order_relaxed);
  return map;
}

template <class Pool>
inline auto BasicIdMap<Pool>::open_labels(Pool& pool, std::string_view index, bool create) -> std::unique_ptr<Tree> {
  const std::string name = labels_space(index);
  if (space_exists(pool, name)) {
    const SpaceId s = pool.open_space(name);
    if (pool.space_blocks(s) >= 2) return std::make_unique<Tree>(Tree::open(pool, name));
    if (!create) return nullptr;
    pool.drop_space(s);
  }
  if (!create) return nullptr;
  return std::make_unique<Tree>(Tree::create(pool, name));
}

template <class Pool>
inline void BasicIdMap<Pool>::drop(Pool& pool, std::string_view index) {
  for (const std::string& name : {labels_space(index), ids_space(index), slots_space(index)}) {
    for (const SpaceInfo& s : pool.spaces()) {
      if (s.name == name) pool.drop_space(pool.open_space(name));
    }
  }
}

template <class Pool>
inline BasicIdMap<Pool>::BasicIdMap(Pool& pool, std::string_view index, SpaceId slots, std::unique_ptr<Tree> tree,
                                    std::unique_ptr<Tree> labels, const Meta& meta)
    : pool_(&pool),
      index_(index),
      slots_(slots),
      per_page_(meta.slots_per_page),
      tree_(std::move(tree)),
      alloc_(std::make_unique<Alloc>()),
      labels_(std::make_unique<Labels>()),
      end_(std::make_unique<std::atomic<uint64_t>>(meta.reserved_slots)) {
  labels_->owned = std::move(labels);
  labels_->tree.store(labels_->owned.get(), std::memory_order_release);
  // After a reopen the next slot is the persisted high-water mark: slots of the last chunk
  // that were never handed out are skipped (see "Slots" in the header).
  alloc_->next = meta.reserved_slots;
  alloc_->reserved = meta.reserved_slots;
}

template <class Pool>
inline PageId BasicIdMap<Pool>::entry_page(uint32_t slot) const {
  return PageId(slots_, static_cast<BlockId>(1 + slot / per_page_));
}

template <class Pool>
inline uint32_t BasicIdMap<Pool>::entry_offset(uint32_t slot) const {
  return static_cast<uint32_t>(slot % per_page_ * id_map_detail::kEntryBytes);
}

template <class Pool>
inline auto BasicIdMap<Pool>::read_meta() const -> Meta {
  Meta m;
  SharedGuard g = pool_->pin_shared(PageId(slots_, 0));
  std::memcpy(&m, g.data(), sizeof m);
  return m;
}

template <class Pool>
inline void BasicIdMap<Pool>::write_meta(const Meta& m) {
  ExclusiveGuard g = pool_->pin_exclusive(PageId(slots_, 0));
  std::memcpy(g.data(), &m, sizeof m);
  g.mark_dirty();
}

template <class Pool>
inline bool BasicIdMap<Pool>::ready() const {
  return read_meta().state == static_cast<uint32_t>(id_map_detail::MapState::kReady);
}

template <class Pool>
inline void BasicIdMap<Pool>::mark_ready() {
  std::lock_guard l(alloc_->mu);
  Meta m = read_meta();
  m.state = static_cast<uint32_t>(id_map_detail::MapState::kReady);
  write_meta(m);
}

// A binding's value (id_map_layout.h): 4 bytes (slot) or 8 (slot, label); anything else
// is a corrupt page.
template <class Pool>
inline bool BasicIdMap<Pool>::decode_binding(uint64_t id, std::string_view v, Binding* b) {
  if (v.size() != id_map_detail::kBindingBytes && v.size() != id_map_detail::kLabeledBindingBytes) {
    throw Error(ErrorCode::kCorruptPage, "id map: the binding of id " + std::to_string(id) + " has " +
                                             std::to_string(v.size()) + " bytes, not 4 or 8");
  }
  std::memcpy(&b->slot, v.data(), 4);
  b->label.reset();
  if (v.size() == id_map_detail::kLabeledBindingBytes) {
    uint32_t label;
    std::memcpy(&label, v.data() + 4, 4);
    b->label = label;
  }
  return true;
}

template <class Pool>
inline bool BasicIdMap<Pool>::binding_of(uint64_t id, Binding* b) const {
  if (id == kNoId) return false;
  std::string v;
  if (!tree_->lookup(id_map_detail::key_of(id), &v)) return false;
  return decode_binding(id, v, b);
}

template <class Pool>
inline bool BasicIdMap<Pool>::slot_of(uint64_t id, uint32_t* slot) const {
  Binding b;
  if (!binding_of(id, &b)) return false;
  *slot = b.slot;
  return true;
}

template <class Pool>
inline uint64_t BasicIdMap<Pool>::id_of(uint32_t slot) const {
  CALICO_DCHECK(slot < slot_end());
  const uint32_t off = entry_offset(slot);
  const uint64_t stored = pool_->optimistic_read(
      entry_page(slot), [off](const std::byte* page) { return id_map_detail::racy_entry(page, off); }, off);
  return stored - 1;  // 0 (none) becomes kNoId
}

template <class Pool>
inline bool BasicIdMap<Pool>::bind(uint64_t id, uint32_t slot, std::optional<uint32_t> label) {
  CALICO_CHECK(id != kNoId && slot != kNoSlot);
  return tree_->upsert(id_map_detail::key_of(id), id_map_detail::value_of(slot, label ? &*label : nullptr), nullptr);
}

template <class Pool>
inline bool BasicIdMap<Pool>::unbind(uint64_t id) {
  if (id == kNoId) return false;
  return tree_->remove(id_map_detail::key_of(id));
}

template <class Pool>
inline void BasicIdMap<Pool>::set_id(uint32_t slot, uint64_t id) {
  CALICO_CHECK(slot < slot_end());
  const uint64_t stored = id + 1;  // kNoId -> 0
  ExclusiveGuard g = pool_->pin_exclusive(entry_page(slot));
  std::memcpy(g.data() + entry_offset(slot), &stored, sizeof stored);
  g.mark_dirty();
}

template <class Pool>
inline void BasicIdMap<Pool>::add_label(uint32_t label, uint32_t slot) {
  Tree* t = labels_->tree.load(std::memory_order_acquire);
  if (!t) {
    std::lock_guard l(labels_->mu);
    if (!labels_->owned) {
      labels_->owned = open_labels(*pool_, index_, /*create=*/true);
      labels_->tree.store(labels_->owned.get(), std::memory_order_release);
    }
    t = labels_->owned.get();
  }
  t->upsert(id_map_detail::label_key(label, slot), std::string_view(), nullptr);
}

template <class Pool>
inline bool BasicIdMap<Pool>::erase_label(uint32_t label, uint32_t slot) {
  Tree* t = labels_->tree.load(std::memory_order_acquire);
  return t && t->remove(id_map_detail::label_key(label, slot));
}

template <class Pool>
inline bool BasicIdMap<Pool>::has_labels() const {
  return labels_->tree.load(std::memory_order_acquire) != nullptr;
}

template <class Pool>
template <class Fn>
inline void BasicIdMap<Pool>::for_each_slot_of(uint32_t label, Fn&& fn) const {
  Tree* t = labels_->tree.load(std::memory_order_acquire);
  if (!t) return;
  t->scan(id_map_detail::label_key(label, 0), [&](std::string_view k, std::string_view v) {
    if (k.size() != id_map_detail::kLabelKeyBytes || !v.empty()) {
      throw Error(ErrorCode::kCorruptPage, "id map: a label entry of " + std::to_string(k.size()) + " + " +
                                               std::to_string(v.size()) + " bytes, not 8 + 0");
    }
    if (id_map_detail::be32_at(k, 0) != label) return false;  // past the label's range
    fn(id_map_detail::be32_at(k, 4));
    return true;
  });
}

template <class Pool>
inline uint32_t BasicIdMap<Pool>::allocate_slot(uint64_t limit) {
  std::lock_guard l(alloc_->mu);
  Alloc& a = *alloc_;
  if (!a.free.empty()) {
    const uint32_t s = a.free.back();
    a.free.pop_back();
    return s;
  }
  const uint64_t s = a.next;
  if (s >= limit || s >= kNoSlot) {
    throw Error(ErrorCode::kInvalidArgument,
                "id map: every slot below the index's limit (" + std::to_string(std::min<uint64_t>(limit, kNoSlot)) +
                    ") is taken");
  }
  // The array page of s exists before s is handed out (appended in block order).
  while (pool_->space_blocks(slots_) < 2 + s / per_page_) pool_->allocate(slots_);
  if (s >= a.reserved) {
    Meta m = read_meta();
    m.reserved_slots = s + kReserveChunk;
    write_meta(m);
    a.reserved = m.reserved_slots;
  }
  a.next = s + 1;
  end_->store(a.next, std::memory_order_release);
  return static_cast<uint32_t>(s);
}

template <class Pool>
inline void BasicIdMap<Pool>::free_slot(uint32_t slot) {
  std::lock_guard l(alloc_->mu);
  alloc_->free.push_back(slot);
}

template <class Pool>
template <class Unused>
inline uint64_t BasicIdMap<Pool>::refill_free(Unused&& unused) {
  std::lock_guard l(alloc_->mu);
  std::vector<uint32_t> free;
  const uint64_t end = alloc_->next;
  for (uint64_t s = end; s-- > 0;) {  // descending: allocate_slot pops the lowest first
    const auto slot = static_cast<uint32_t>(s);
    if (id_of(slot) == kNoId && unused(slot)) free.push_back(slot);
  }
  alloc_->free = std::move(free);
  return alloc_->free.size();
}

template <class Pool>
inline uint32_t BasicIdMap<Pool>::slot_end() const {
  return static_cast<uint32_t>(end_->load(std::memory_order_acquire));
}

template <class Pool>
inline uint64_t BasicIdMap<Pool>::size() const { return tree_->size(); }

template <class Pool>
template <class Fn>
inline void BasicIdMap<Pool>::for_each_binding(Fn&& fn) const {
  tree_->scan(std::string_view("\0", 1), [&](std::string_view k, std::string_view v) {
    if (k.size() != 8) {
      throw Error(ErrorCode::kCorruptPage, "id map: a binding key of " + std::to_string(k.size()) + " bytes, not 8");
    }
    const uint64_t id = id_map_detail::id_of_key(k);
    Binding b;
    decode_binding(id, v, &b);
    fn(id, static_cast<const Binding&>(b));
    return true;
  });
}

template <class Pool>
template <class Fn>
inline void BasicIdMap<Pool>::for_each(Fn&& fn) const {
  for_each_binding([&](uint64_t id, const Binding& b) { fn(id, b.slot); });
}

template <class Pool>
inline void BasicIdMap<Pool>::sync() {
  tree_->sync_metadata();
  if (Tree* t = labels_->tree.load(std::memory_order_acquire)) t->sync_metadata();
}

template <class Pool>
inline void BasicIdMap<Pool>::fail(const std::string& what) {
  throw std::logic_error("id map: " + what);
}

template <class Pool>
inline uint64_t BasicIdMap<Pool>::check() const {
  const auto shape = tree_->check();
  const uint32_t end = slot_end();
  std::unordered_map<uint32_t, uint64_t> bound;  // slot -> id, from the tree
  std::unordered_map<uint32_t, uint32_t> labeled;  // slot -> label, of the labeled bindings
  uint64_t n = 0;
  for_each_binding([&](uint64_t id, const Binding& b) {
    const uint32_t slot = b.slot;
    if (b.label) labeled.emplace(slot, *b.label);
    if (id == kNoId) fail("id 2^64 - 1 (kNoId) is bound");
    if (slot >= end) fail("id " + std::to_string(id) + " is bound to slot " + std::to_string(slot) +
                          ", past slot_end " + std::to_string(end));
    if (!bound.emplace(slot, id).second) {
      fail("slot " + std::to_string(slot) + " is bound to ids " + std::to_string(bound[slot]) + " and " +
           std::to_string(id));
    }
    if (id_of(slot) != id) {
      fail("id " + std::to_string(id) + " -> slot " + std::to_string(slot) + ", whose entry names id " +
           std::to_string(id_of(slot)));
    }
    ++n;
  });
  if (shape.entries != n) fail("the tree counts " + std::to_string(shape.entries) + " entries, the scan " + std::to_string(n));
  for (uint32_t s = 0; s < end; ++s) {
    const uint64_t id = id_of(s);
    if (id != kNoId && !bound.contains(s)) {
      fail("slot " + std::to_string(s) + " names id " + std::to_string(id) + ", which is not bound to it");
    }
  }
  // (L2) each entry is its slot's binding's label; with the counts equal, (L1) too (a
  // slot's binding has one label, so no two entries match one binding).
  Tree* labels = labels_->tree.load(std::memory_order_acquire);
  if (!labels) {
    if (!labeled.empty()) fail(std::to_string(labeled.size()) + " labeled bindings and no label tree");
    return n;
  }
  const auto label_shape = labels->check();
  uint64_t entries = 0;
  labels->scan(std::string_view("\0", 1), [&](std::string_view k, std::string_view v) {
    if (k.size() != id_map_detail::kLabelKeyBytes || !v.empty()) {
      fail("a label entry of " + std::to_string(k.size()) + " + " + std::to_string(v.size()) + " bytes");
    }
    const uint32_t label = id_map_detail::be32_at(k, 0), slot = id_map_detail::be32_at(k, 4);
    const auto it = labeled.find(slot);
    if (it == labeled.end() || it->second != label) {
      fail("label entry (" + std::to_string(label) + ", slot " + std::to_string(slot) + "): slot " +
           std::to_string(slot) + (bound.contains(slot) ? " is bound with another label or none" : " is not bound"));
    }
    ++entries;
    return true;
  });
  if (entries != label_shape.entries) {
    fail("the label tree counts " + std::to_string(label_shape.entries) + " entries, the scan " + std::to_string(entries));
  }
  if (entries != labeled.size()) {
    fail(std::to_string(labeled.size()) + " labeled bindings but " + std::to_string(entries) + " label entries");
  }
  return n;
}

}  // namespace calico::index
