// The id map's page format (include/calico/index/id_map.h has the contract): the slot array
// space `<index>.slots`, the key and value encoding of the id B+tree `<index>.ids`, and the
// key encoding of the label B+tree `<index>.label`.
//
// Space `<index>.slots` (little-endian; only the first usable_page_size() bytes of a page):
//   Block 0, metadata (IdMapMeta): magic u64 "CALIDMAP" | format_version u32 | page_size u32 |
//       slots_per_page u32 | state u32 (kMigrating, kReady) | reserved_slots u64 | spare u64
//   Blocks 1 ..: the slot array, slots_per_page = usable / 8 entries of u64 per page: slot s
//       at block 1 + s / slots_per_page, byte 8 * (s % slots_per_page). An entry holds id + 1
//       of the id the slot is bound to, 0 when the slot holds no id (so that a zeroed page, as
//       allocate() returns it, maps nothing). Id 2^64 - 1 (kNoId) is therefore not storable:
//       it is reserved (it is also the padding id of Python's search results).
//   Invariants: every slot handed out is below reserved_slots, and its array page exists
//   (pages are appended in block order, before a slot on them is handed out); an entry is
//   written only under its page's exclusive latch.
// Space `<index>.ids`: a BasicBTree whose key is the id as 8 bytes big-endian (so that key
//   order is id order) and whose value (the binding) is the slot as 4 bytes little-endian,
//   then, for a labeled id, its label as 4 more bytes little-endian. A 4-byte value is an
//   unlabeled binding (every map written before labels existed reads so); no other length
//   is valid.
// Space `<index>.label` (only once a labeled binding was written): a BasicBTree whose key
//   is (label, slot), each 4 bytes big-endian (so that the slots of one label are one range
//   of keys, in slot order), and whose value is empty. Kept in step with the bindings by
//   BasicMapped (calico/index/mapped_index.h, "Labels"): at quiescence, (L1) every labeled
//   binding id -> (slot, label) has the entry (label, slot), and (L2) every entry (label,
//   slot) is the slot of a binding that carries that label; so a slot has at most one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "calico/optimistic_reader.h"

namespace calico::index::id_map_detail {

inline constexpr uint64_t kMagic = 0x50414d44494c4143ull;  // "CALIDMAP" read little-endian
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kEntryBytes = 8;
inline constexpr size_t kBindingBytes = 4;         // slot
inline constexpr size_t kLabeledBindingBytes = 8;  // slot, label
inline constexpr size_t kLabelKeyBytes = 8;        // label, slot (big-endian)

// The map's life: created empty or filled from an existing index (migration) while
// kMigrating; usable once kReady is written. A map found kMigrating at open is dropped and
// built again (migration is idempotent: it reads only the index).
enum class MapState : uint32_t { kMigrating = 1, kReady = 2 };

struct IdMapMeta {
  uint64_t magic;
  uint32_t format_version;
  uint32_t page_size;
  uint32_t slots_per_page;
  uint32_t state;           // MapState
  uint64_t reserved_slots;  // every slot ever handed out is below it (bumped in chunks)
  uint64_t spare;
};
static_assert(sizeof(IdMapMeta) == 40);

// The B+tree key of an id: 8 bytes big-endian.
inline std::string key_of(uint64_t id) {
  std::string k(8, '\0');
  for (int i = 0; i < 8; ++i) k[i] = static_cast<char>(id >> (56 - 8 * i));
  return k;
}
inline uint64_t id_of_key(std::string_view k) {
  uint64_t id = 0;
  for (size_t i = 0; i < 8 && i < k.size(); ++i) id = id << 8 | static_cast<uint8_t>(k[i]);
  return id;
}
// The B+tree value of a binding: the slot, then the label when there is one (4 bytes each,
// little-endian).
inline std::string value_of(uint32_t slot, const uint32_t* label = nullptr) {
  std::string v(label ? kLabeledBindingBytes : kBindingBytes, '\0');
  std::memcpy(v.data(), &slot, 4);
  if (label) std::memcpy(v.data() + 4, label, 4);
  return v;
}

// The label tree's key of (label, slot): 8 bytes big-endian, label first.
inline std::string label_key(uint32_t label, uint32_t slot) {
  std::string k(kLabelKeyBytes, '\0');
  for (int i = 0; i < 4; ++i) {
    k[i] = static_cast<char>(label >> (24 - 8 * i));
    k[4 + i] = static_cast<char>(slot >> (24 - 8 * i));
  }
  return k;
}
// The big-endian u32 at k[at .. at + 4).
inline uint32_t be32_at(std::string_view k, size_t at) {
  uint32_t x = 0;
  for (size_t i = 0; i < 4; ++i) x = x << 8 | static_cast<uint8_t>(k[at + i]);
  return x;
}

// One slot-array entry read from a page that may be changing (an optimistic reader: the
// offset comes from the slot number, never from the page; the value is used only after the
// read validates, and every value is a valid entry).
CALICO_OPTIMISTIC_READER inline uint64_t racy_entry(const std::byte* page, uint32_t offset) {
  uint64_t v;
  racy_copy(&v, page + offset, sizeof v);
  return v;
}

}  // namespace calico::index::id_map_detail
