// B+tree node layout: one slotted page (usable_page_size() bytes) viewed through NodeRef.
//
// Entry points:
//   NodeRef / HintedNodeRef      the two node formats (BasicNodeRef<kHints>, see below)
//   NodeRef::build(...)          writes a whole node from full keys (fences, prefix, slots)
//   NodeRef::lower_bound(key)    binary search on 4-byte key heads, then on the suffixes
//   NodeRef::insert_at / remove_at / set_child / compact   in-place edits (exclusive latch)
//   NodeRef::well_formed()       bounds check of every offset (for snapshots and check())
//   btree_racy_step(page, ...)   one step of an optimistic descent, searching the node in
//                                place in its frame (bounds-checked; an optimistic reader)
//   copy_page_racy(dst, src, n)  copies a page during an optimistic section (scans);
//                                with the btree_racy_ functions, the only code that reads a
//                                page during an optimistic section
//
// Two formats. The plain one (NodeRef) is used on every pool without frame hints. The hinted
// one (HintedNodeRef, BasicBTree on a pool with kFrameHints: lipah, [LIPAH] 4.1) adds a
// 4-byte frame hint next to every child reference: a guess at the frame that holds the
// child, checked by the pool before use (buffer_pool.h, read_optimistic_hinted), repaired
// opportunistically under the exclusive latch without marking the page dirty (it reaches
// disk only with a write made for another reason), reset to 0 when its reference changes
// (set_child, set_link), kept by splits, merges and compaction. Any value, including 0 (no
// hint) and stale hints read from disk, is valid. The tree's metadata page holds the
// root's hint (MetaPage below). The differences are marked [hinted] below.
//
// Page layout (offsets in bytes from the start of the page; all integers little endian):
//
//   0   NodeHeader (24 bytes)
//         type        kFree (0, a zeroed page), kLeaf (1) or kInner (2)
//         level       0 for leaves, parent = child + 1
//         flags       kLowerInfinite / kUpperInfinite: the fence is -inf / +inf
//         count       number of slots
//         heap_begin  lowest offset used by the heap (the heap grows down from the end)
//         heap_live   bytes of the heap still referenced (fences + live entries)
//         lower/upper fence: offset + length in the heap (full keys)
//         prefix_len  the node's keys all start with the first prefix_len bytes of the
//                     lower fence (the common prefix of both fences); the prefix is stored
//                     once, as part of the lower fence, and stripped from every slot's key
//         link        leaf: right sibling block (0 = none; block 0 is the tree's metadata
//                     page, never a node); inner: the upper (rightmost) child block
//   24  [hinted] link_hint (4 bytes): frame hint of `link` (the upper child or the right
//         sibling); the hinted header is 28 bytes
//   24 [hinted: 28]  Slot[count] (12 bytes each), sorted by key:
//         head        first 4 bytes of the key suffix, big endian, zero padded: comparing
//                     heads as integers orders keys except on ties
//         offset      of the suffix in the heap; the value follows the suffix
//         key_len     suffix length (full key length - prefix_len)
//         value_len   leaf: value bytes; inner: 4 (the child's BlockId)
//                     [hinted] inner: 8 (the child's BlockId, then its frame hint)
//   ... free space ...
//   heap_begin .. usable end: fences and entries (suffix bytes, then value bytes)
//
// Key ranges: a node holds keys k with lower < k <= upper (lower exclusive, upper inclusive).
// In an inner node, slot i's child holds (key[i-1], key[i]] and the upper child holds
// (key[count-1], upper]; a child's fences equal these bounds exactly.
//
// Limits: keys 1..kMaxKeyBytes (256), values 0..kMaxValueBytes (512). Worst case per entry
// 12 + 256 + 512 = 780 bytes (an inner entry: 12 + 256 + 8); with 24 + 2 x 256 bytes of
// header and fences, 4 such entries take 3,656 of the 4,080 usable bytes of a 4 KB page
// ([hinted] 28 + 2 x 256: 3,660; static_asserts below).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "calico/checks.h"
#include "calico/page_id.h"
#include "calico/optimistic_reader.h"

namespace calico::index {

// Block 0 of a tree's space: the metadata page.
struct MetaPage {
  uint64_t magic;
  uint32_t format_version;
  BlockId root;
  uint32_t height;  // levels: 1 = the root is a leaf
  FrameId root_hint;  // hinted format: the root's frame hint (a guess; any value); else 0
  uint64_t entry_count;
};
static_assert(sizeof(MetaPage) == 32);
inline constexpr uint64_t kBTreeMagic = 0x45455254424f4c43ull;  // "CLOBTREE" little endian
// Node formats are not interchangeable: a tree is opened only by pools of its format.
inline constexpr uint32_t kBTreeFormatVersion = 1;        // plain nodes
inline constexpr uint32_t kBTreeHintedFormatVersion = 2;  // nodes with frame hints

inline constexpr size_t kMaxKeyBytes = 256;
inline constexpr size_t kMaxValueBytes = 512;

enum class NodeType : uint8_t { kFree = 0, kLeaf = 1, kInner = 2 };

inline constexpr uint8_t kLowerInfinite = 1;
inline constexpr uint8_t kUpperInfinite = 2;

struct NodeHeader {
  uint8_t type;
  uint8_t level;
  uint8_t flags;
  uint8_t reserved;
  uint16_t count;
  uint16_t heap_begin;
  uint16_t heap_live;
  uint16_t lower_off;
  uint16_t lower_len;
  uint16_t upper_off;
  uint16_t upper_len;
  uint16_t prefix_len;
  uint32_t link;
};
static_assert(sizeof(NodeHeader) == 24);
static_assert(offsetof(NodeHeader, link) == 20);

struct Slot {
  uint32_t head;
  uint16_t offset;
  uint16_t key_len;
  uint16_t value_len;
  uint16_t reserved;
};
static_assert(sizeof(Slot) == 12);

inline constexpr size_t kSlotBytes = sizeof(Slot);
inline constexpr size_t kHeaderBytes = sizeof(NodeHeader);
inline constexpr size_t kMaxEntryBytes = kSlotBytes + kMaxKeyBytes + kMaxValueBytes;
static_assert(kHeaderBytes + 2 * kMaxKeyBytes + 4 * kMaxEntryBytes <= 4096 - 16,
              "at least 4 maximal entries must fit in a 4 KB page");
// The hinted format: the header ends with the link's frame hint; inner values are child + hint.
inline constexpr size_t kLinkHintOffset = sizeof(NodeHeader);
inline constexpr size_t kHintedHeaderBytes = kLinkHintOffset + sizeof(FrameId);
static_assert(kHintedHeaderBytes == 28 && kHintedHeaderBytes % 4 == 0, "slots stay 4-byte aligned");
static_assert(kHintedHeaderBytes + 2 * kMaxKeyBytes + 4 * kMaxEntryBytes <= 4096 - 16,
              "at least 4 maximal entries must fit in a 4 KB page (hinted format)");
static_assert(sizeof(BlockId) + sizeof(FrameId) <= kMaxValueBytes, "an inner entry is never the largest");

// The constants of one format.
template <bool kHints>
struct NodeFormat {
  static constexpr size_t kHeader = kHints ? kHintedHeaderBytes : kHeaderBytes;
  static constexpr size_t kChildBytes = kHints ? sizeof(BlockId) + sizeof(FrameId) : sizeof(BlockId);
};
// Offsets are 16 bits: pages up to 64 KB.

// Copies n bytes (a multiple of 8) of a page that a writer may be modifying. Used only
// between read_optimistic and validate; the copy is used only after validate succeeded.
// An optimistic reader (calico/optimistic_reader.h): the race is intended.
CALICO_OPTIMISTIC_READER __attribute__((noinline)) inline void copy_page_racy(std::byte* dst,
                                                                           const std::byte* src,
                                                                           size_t n) {
  const volatile uint64_t* s = reinterpret_cast<const volatile uint64_t*>(src);
  uint64_t* d = reinterpret_cast<uint64_t*>(dst);
  for (size_t i = 0; i < n / 8; ++i) d[i] = s[i];
}

// --- In-place optimistic search -----------------------------------------------------
// Optimistic readers search a node where it lies in its frame instead of copying it. The
// bytes may be changing or belong to another page (src/pool/README.md rule 4), so:
//  - every integer that becomes an offset, a length or a count is read once (volatile)
//    into a local and bounds-checked against the page before any byte it designates is
//    read: offsets + lengths <= size, count <= the slots that fit, value_len <= the max;
//  - nothing computed here is used before the caller validates the page's version.
// btree_racy_step is an optimistic reader (calico/optimistic_reader.h: the race is intended). The
// btree_racy_ helpers are always inlined and called only by btree_racy_step, so they are
// uninstrumented with it (always_inline into any other caller would be instrumented
// there). They use only builtins expanded inline (fixed-size __builtin_memcpy), never a
// library function that TSan intercepts.
#define CALICO_RACY_HELPER CALICO_OPTIMISTIC_READER __attribute__((always_inline)) inline
#define CALICO_RACY_ENTRY CALICO_OPTIMISTIC_READER

static_assert(std::endian::native == std::endian::little, "page integers are little endian");

CALICO_RACY_HELPER uint8_t btree_racy_u8(const std::byte* p) {
  return *reinterpret_cast<const volatile uint8_t*>(p);
}
// p must be 2- (u16) or 4-byte (u32) aligned: header and slot fields are.
CALICO_RACY_HELPER uint16_t btree_racy_u16(const std::byte* p) {
  return *reinterpret_cast<const volatile uint16_t*>(p);
}
CALICO_RACY_HELPER uint32_t btree_racy_u32(const std::byte* p) {
  return *reinterpret_cast<const volatile uint32_t*>(p);
}
// Any alignment.
CALICO_RACY_HELPER uint32_t btree_racy_u32_unaligned(const std::byte* p) {
  return uint32_t{btree_racy_u8(p)} | uint32_t{btree_racy_u8(p + 1)} << 8 |
         uint32_t{btree_racy_u8(p + 2)} << 16 | uint32_t{btree_racy_u8(p + 3)} << 24;
}

// Three-way comparison of the page bytes [p, p + n) with k (unsigned bytes, shorter first).
// Pre: [p, p + n) lies inside the page.
CALICO_RACY_HELPER int btree_racy_compare(const std::byte* p, size_t n, const char* k, size_t kn) {
  size_t m = n < kn ? n : kn;
  size_t i = 0;
  for (; i + 8 <= m; i += 8) {
    uint64_t a, b;
    __builtin_memcpy(&a, p + i, 8);
    __builtin_memcpy(&b, k + i, 8);
    if (a != b) return __builtin_bswap64(a) < __builtin_bswap64(b) ? -1 : 1;
  }
  for (; i < m; ++i) {
    uint8_t a = btree_racy_u8(p + i), b = static_cast<uint8_t>(k[i]);
    if (a != b) return a < b ? -1 : 1;
  }
  return n < kn ? -1 : (n > kn ? 1 : 0);
}

// Copies n bytes of the page at p to dst. Pre: [p, p + n) lies inside the page.
CALICO_RACY_HELPER void btree_racy_copy(std::byte* dst, const std::byte* p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t a;
    __builtin_memcpy(&a, p + i, 8);
    __builtin_memcpy(dst + i, &a, 8);
  }
  for (; i < n; ++i) dst[i] = static_cast<std::byte>(btree_racy_u8(p + i));
}

enum class RacyStep : uint8_t {
  kRestart,  // the bytes are not a node covering the key at a level >= stop_level
  kDescend,  // an inner node above stop_level: follow RacyResult::child
  kTarget,   // the node at stop_level covering the key (leaf: found / value filled in)
};
struct RacyResult {
  uint8_t level = 0;       // the node's level (kDescend, kTarget)
  BlockId child = 0;       // kDescend
  FrameId hint = 0;        // kDescend, hinted format: the child's frame hint
  uint16_t value_len = 0;  // kTarget with a value buffer, when found
  uint16_t slot = 0;       // kTarget with a value buffer, when found: the key's slot
  bool found = false;      // kTarget with a value buffer
};

// One step of an optimistic descent, on the page at p (size usable bytes) as it lies in its
// frame: checks that it is a node covering key (with `after`: the keys just above key) at a
// level >= stop_level; above stop_level finds the child for key (NodeRef::child_for) and,
// in the hinted format, its frame hint; at stop_level, when value_out is given (stop_level
// 0), looks key up and copies its value (<= kMaxValueBytes) to value_out. The result means
// something only if the page's version validates afterwards.
template <bool kHints = false>
CALICO_RACY_ENTRY inline RacyStep btree_racy_step(const std::byte* p, size_t size, std::string_view key,
                                                  bool after, int stop_level, std::byte* value_out,
                                                  RacyResult* out) {
  using F = NodeFormat<kHints>;
  const uint8_t type = btree_racy_u8(p + offsetof(NodeHeader, type));
  const uint8_t level = btree_racy_u8(p + offsetof(NodeHeader, level));
  const uint8_t flags = btree_racy_u8(p + offsetof(NodeHeader, flags));
  const size_t count = btree_racy_u16(p + offsetof(NodeHeader, count));
  const bool leaf = type == static_cast<uint8_t>(NodeType::kLeaf);
  if (!leaf && type != static_cast<uint8_t>(NodeType::kInner)) return RacyStep::kRestart;
  if (leaf != (level == 0) || level < stop_level) return RacyStep::kRestart;
  if (count > (size - F::kHeader) / kSlotBytes) return RacyStep::kRestart;
  out->level = level;
  const char* k = key.data();
  const size_t kn = key.size();
  // Fences: lower < key <= upper (after: lower <= key < upper).
  const size_t lower_off = btree_racy_u16(p + offsetof(NodeHeader, lower_off));
  const size_t lower_len = btree_racy_u16(p + offsetof(NodeHeader, lower_len));
  if (lower_off + lower_len > size) return RacyStep::kRestart;
  if (!(flags & kLowerInfinite)) {
    int c = btree_racy_compare(p + lower_off, lower_len, k, kn);
    if (after ? c > 0 : c >= 0) return RacyStep::kRestart;
  }
  if (!(flags & kUpperInfinite)) {
    const size_t upper_off = btree_racy_u16(p + offsetof(NodeHeader, upper_off));
    const size_t upper_len = btree_racy_u16(p + offsetof(NodeHeader, upper_len));
    if (upper_off + upper_len > size) return RacyStep::kRestart;
    int c = btree_racy_compare(p + upper_off, upper_len, k, kn);
    if (after ? c <= 0 : c < 0) return RacyStep::kRestart;
  }
  const bool search = level > stop_level || value_out != nullptr;
  if (!search) return RacyStep::kTarget;
  // Binary search on the suffixes (NodeRef::lower_bound): heads first, then the bytes.
  const size_t prefix_len = btree_racy_u16(p + offsetof(NodeHeader, prefix_len));
  if (prefix_len > lower_len || prefix_len > kn) return RacyStep::kRestart;
  const char* s = k + prefix_len;
  const size_t sn = kn - prefix_len;
  uint32_t head = 0;
  for (size_t i = 0; i < 4; ++i) head = head << 8 | (i < sn ? static_cast<uint8_t>(s[i]) : 0u);
  const std::byte* slots = p + F::kHeader;
  size_t lo = 0, hi = count;
  bool found = false;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    const std::byte* sl = slots + mid * kSlotBytes;
    const uint32_t h = btree_racy_u32(sl + offsetof(Slot, head));
    int c;
    if (h != head) {
      c = h < head ? -1 : 1;
    } else {
      const size_t off = btree_racy_u16(sl + offsetof(Slot, offset));
      const size_t len = btree_racy_u16(sl + offsetof(Slot, key_len));
      if (off + len > size) return RacyStep::kRestart;
      c = btree_racy_compare(p + off, len, s, sn);
    }
    if (c < 0 || (after && c == 0)) {
      lo = mid + 1;
    } else {
      if (c == 0) found = true;
      hi = mid;
    }
  }
  if (level > stop_level) {
    if (lo == count) {
      out->child = btree_racy_u32(p + offsetof(NodeHeader, link));
      if constexpr (kHints) out->hint = btree_racy_u32(p + kLinkHintOffset);
    } else {
      const std::byte* sl = slots + lo * kSlotBytes;
      const size_t off = btree_racy_u16(sl + offsetof(Slot, offset));
      const size_t len = btree_racy_u16(sl + offsetof(Slot, key_len));
      const size_t vlen = btree_racy_u16(sl + offsetof(Slot, value_len));
      if (vlen != F::kChildBytes || off + len + F::kChildBytes > size) return RacyStep::kRestart;
      out->child = btree_racy_u32_unaligned(p + off + len);
      if constexpr (kHints) out->hint = btree_racy_u32_unaligned(p + off + len + sizeof(BlockId));
    }
    return RacyStep::kDescend;
  }
  // Leaf lookup. With consistent bytes (validated later) keys are unique and sorted, so an
  // equal comparison at some mid leaves lo on that slot.
  out->found = found;
  if (found) {
    const std::byte* sl = slots + lo * kSlotBytes;
    const size_t off = btree_racy_u16(sl + offsetof(Slot, offset));
    const size_t len = btree_racy_u16(sl + offsetof(Slot, key_len));
    const size_t vlen = btree_racy_u16(sl + offsetof(Slot, value_len));
    if (vlen > kMaxValueBytes || off + len + vlen > size) return RacyStep::kRestart;
    btree_racy_copy(value_out, p + off + len, vlen);
    out->value_len = static_cast<uint16_t>(vlen);
    out->slot = static_cast<uint16_t>(lo);
  }
  return RacyStep::kTarget;
}

// Index skipping (calico/index/btree.h, lookup_hinted): looks key up in the page at p, a page named by a
// record hint, so anything at all. kTarget only when the bytes are a leaf whose fences cover
// key; then, as btree_racy_step with stop_level 0, out->found / slot / value_len and the
// value in value_out (<= kMaxValueBytes). When slot `slot` holds key, that is all it reads
// (*exact = true: no search); otherwise it searches the leaf (btree_racy_step). The result
// means something only if the page's version validates afterwards.
template <bool kHints = false>
CALICO_RACY_ENTRY inline RacyStep btree_racy_probe_leaf(const std::byte* p, size_t size, std::string_view key,
                                                        size_t slot, std::byte* value_out, RacyResult* out,
                                                        bool* exact) {
  using F = NodeFormat<kHints>;
  *exact = false;
  const uint8_t type = btree_racy_u8(p + offsetof(NodeHeader, type));
  const uint8_t level = btree_racy_u8(p + offsetof(NodeHeader, level));
  const uint8_t flags = btree_racy_u8(p + offsetof(NodeHeader, flags));
  const size_t count = btree_racy_u16(p + offsetof(NodeHeader, count));
  if (type != static_cast<uint8_t>(NodeType::kLeaf) || level != 0) return RacyStep::kRestart;
  if (count > (size - F::kHeader) / kSlotBytes) return RacyStep::kRestart;
  if (slot >= count) return btree_racy_step<kHints>(p, size, key, false, 0, value_out, out);
  const char* k = key.data();
  const size_t kn = key.size();
  // Fences: lower < key <= upper. They are what makes the page the key's leaf.
  const size_t lower_off = btree_racy_u16(p + offsetof(NodeHeader, lower_off));
  const size_t lower_len = btree_racy_u16(p + offsetof(NodeHeader, lower_len));
  if (lower_off + lower_len > size) return RacyStep::kRestart;
  if (!(flags & kLowerInfinite) && btree_racy_compare(p + lower_off, lower_len, k, kn) >= 0) {
    return RacyStep::kRestart;
  }
  if (!(flags & kUpperInfinite)) {
    const size_t upper_off = btree_racy_u16(p + offsetof(NodeHeader, upper_off));
    const size_t upper_len = btree_racy_u16(p + offsetof(NodeHeader, upper_len));
    if (upper_off + upper_len > size) return RacyStep::kRestart;
    if (btree_racy_compare(p + upper_off, upper_len, k, kn) < 0) return RacyStep::kRestart;
  }
  // The keys of a leaf covering key share its first prefix_len bytes: compare the suffixes.
  const size_t prefix_len = btree_racy_u16(p + offsetof(NodeHeader, prefix_len));
  if (prefix_len > lower_len || prefix_len > kn) return RacyStep::kRestart;
  const std::byte* sl = p + F::kHeader + slot * kSlotBytes;
  const size_t off = btree_racy_u16(sl + offsetof(Slot, offset));
  const size_t len = btree_racy_u16(sl + offsetof(Slot, key_len));
  const size_t vlen = btree_racy_u16(sl + offsetof(Slot, value_len));
  if (len != kn - prefix_len || vlen > kMaxValueBytes || off + len + vlen > size ||
      btree_racy_compare(p + off, len, k + prefix_len, len) != 0) {
    return btree_racy_step<kHints>(p, size, key, false, 0, value_out, out);
  }
  out->level = 0;
  out->found = true;
  out->slot = static_cast<uint16_t>(slot);
  btree_racy_copy(value_out, p + off + len, vlen);
  out->value_len = static_cast<uint16_t>(vlen);
  *exact = true;
  return RacyStep::kTarget;
}

#undef CALICO_RACY_HELPER
#undef CALICO_RACY_ENTRY

inline uint32_t key_head(std::string_view suffix) {
  uint32_t h = 0;
  for (size_t i = 0; i < 4; ++i) {
    h <<= 8;
    if (i < suffix.size()) h |= static_cast<uint8_t>(suffix[i]);
  }
  return h;
}

// A full-key entry used to (re)build nodes. For inner nodes, value is the 4-byte child id.
struct NodeEntry {
  std::string key;
  std::string value;
};

// The value of an inner entry: the child's block, then (hinted format) its frame hint.
template <bool kHints>
std::string encode_child_ref(BlockId b, FrameId hint = 0) {
  std::string s(NodeFormat<kHints>::kChildBytes, '\0');
  std::memcpy(s.data(), &b, sizeof b);
  if constexpr (kHints) std::memcpy(s.data() + sizeof b, &hint, sizeof hint);
  return s;
}
inline std::string encode_child(BlockId b) { return encode_child_ref<false>(b); }

// A view of one node page in format kHints (NodeRef: plain, HintedNodeRef: with frame
// hints). Does not own the bytes; callers hold the page (exclusive guard for edits, a shared
// guard or a validated private copy for reads). Frame hints may be rewritten under the
// exclusive latch without marking the page dirty (BasicBufferPool::repair_hint).
template <bool kHints>
class BasicNodeRef {
 public:
  using Format = NodeFormat<kHints>;
  static constexpr size_t kHeader = Format::kHeader;
  static constexpr size_t kChildBytes = Format::kChildBytes;

  BasicNodeRef(std::byte* page, size_t size) : p_(page), size_(size) {
    CALICO_DCHECK(size <= 65536 && size % 8 == 0);
  }

  NodeHeader& h() const { return *reinterpret_cast<NodeHeader*>(p_); }
  Slot* slots() const { return reinterpret_cast<Slot*>(p_ + kHeader); }
  std::byte* data() const { return p_; }
  size_t size() const { return size_; }

  NodeType type() const { return static_cast<NodeType>(h().type); }
  bool is_leaf() const { return type() == NodeType::kLeaf; }
  bool is_inner() const { return type() == NodeType::kInner; }
  int level() const { return h().level; }
  uint16_t count() const { return h().count; }
  BlockId link() const { return h().link; }
  // Also forgets the old link's frame hint (hinted format).
  void set_link(BlockId b) {
    h().link = b;
    if constexpr (kHints) set_link_hint(kInvalidFrame);
  }
  FrameId link_hint() const
    requires kHints
  {
    return load_u32(kLinkHintOffset);
  }
  void set_link_hint(FrameId f)
    requires kHints
  {
    std::memcpy(p_ + kLinkHintOffset, &f, sizeof f);
  }

  bool lower_infinite() const { return (h().flags & kLowerInfinite) != 0; }
  bool upper_infinite() const { return (h().flags & kUpperInfinite) != 0; }
  std::string_view lower_fence() const { return str(h().lower_off, h().lower_len); }
  std::string_view upper_fence() const { return str(h().upper_off, h().upper_len); }
  std::string_view prefix() const { return str(h().lower_off, h().prefix_len); }

  std::string_view suffix(size_t i) const { return str(slots()[i].offset, slots()[i].key_len); }
  std::string_view value(size_t i) const {
    const Slot& s = slots()[i];
    return str(s.offset + s.key_len, s.value_len);
  }
  // The value's bytes in the page, to change in place (same length).
  std::span<std::byte> mutable_value(size_t i) {
    const Slot& s = slots()[i];
    return {p_ + s.offset + s.key_len, s.value_len};
  }
  std::string full_key(size_t i) const {
    std::string k(prefix());
    k.append(suffix(i));
    return k;
  }
  BlockId child(size_t i) const { return load_u32(child_offset(i)); }
  // Also forgets the old child's frame hint (hinted format).
  void set_child(size_t i, BlockId b) {
    std::memcpy(p_ + child_offset(i), &b, sizeof b);
    if constexpr (kHints) set_child_hint(i, kInvalidFrame);
  }
  FrameId child_hint(size_t i) const
    requires kHints
  {
    return load_u32(child_offset(i) + sizeof(BlockId));
  }
  void set_child_hint(size_t i, FrameId f)
    requires kHints
  {
    std::memcpy(p_ + child_offset(i) + sizeof(BlockId), &f, sizeof f);
  }
  // The frame hint of position i: inner slot i's child for i < count; i == count: the link's
  // (inner: the upper child; leaf: the right sibling). 0 in the plain format.
  FrameId hint_at(size_t i) const {
    if constexpr (kHints) {
      return i < count() ? child_hint(i) : link_hint();
    } else {
      (void)i;
      return kInvalidFrame;
    }
  }
  // Sets the frame hint of child position i (0..count) if it still refers to `child`.
  // Returns whether it did. Pre: an inner node.
  bool set_hint_if_child(size_t i, BlockId child, FrameId f)
    requires kHints
  {
    if (i < count()) {
      if (this->child(i) != child) return false;
      set_child_hint(i, f);
    } else {
      if (link() != child) return false;
      set_link_hint(f);
    }
    return true;
  }

  // True when key lies in (lower, upper]; with `after`, when the keys just above `key`
  // belong here, i.e. key in [lower, upper).
  bool covers(std::string_view key, bool after) const {
    if (!after) {
      return (lower_infinite() || key > lower_fence()) && (upper_infinite() || key <= upper_fence());
    }
    return (lower_infinite() || key >= lower_fence()) && (upper_infinite() || key < upper_fence());
  }

  // First slot whose key is >= key (with `after`: > key); `found` when equal (not `after`).
  // Pre: covers(key, after), so the key starts with prefix().
  size_t lower_bound(std::string_view key, bool after, bool* found) const {
    CALICO_DCHECK(key.size() >= h().prefix_len);
    std::string_view s = key.substr(h().prefix_len);
    uint32_t head = key_head(s);
    size_t lo = 0, hi = count();
    *found = false;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      const Slot& sl = slots()[mid];
      int c;
      if (sl.head != head) {
        c = sl.head < head ? -1 : 1;
      } else {
        c = suffix(mid).compare(s);
      }
      if (c < 0 || (after && c == 0)) {
        lo = mid + 1;
      } else {
        if (c == 0) *found = true;
        hi = mid;
      }
    }
    if (*found && lo < count() && suffix(lo) != s) *found = false;
    return lo;
  }

  // Inner: the child responsible for key (with `after`: for the keys just above it).
  BlockId child_for(std::string_view key, bool after) const {
    bool found;
    size_t i = lower_bound(key, after, &found);
    return i < count() ? child(i) : link();
  }

  size_t free_contiguous() const {
    size_t slots_end = kHeader + size_t{count()} * kSlotBytes;
    return h().heap_begin >= slots_end ? h().heap_begin - slots_end : 0;
  }
  size_t free_total() const {
    return size_ - kHeader - size_t{count()} * kSlotBytes - h().heap_live;
  }
  size_t used_bytes() const { return size_ - free_total(); }
  // Bytes an entry with this full key takes in this node.
  size_t entry_bytes(std::string_view key, size_t value_len) const {
    return kSlotBytes + key.size() - h().prefix_len + value_len;
  }
  // Whether the entry fits, possibly after compact().
  bool fits(std::string_view key, size_t value_len) const {
    return entry_bytes(key, value_len) <= free_total();
  }

  // Inserts at slot i (the lower_bound position). Pre: fits(); compacts when needed.
  void insert_at(size_t i, std::string_view key, std::string_view value) {
    CALICO_CHECK(fits(key, value.size()));
    if (entry_bytes(key, value.size()) > free_contiguous()) compact();
    std::string_view s = key.substr(h().prefix_len);
    size_t n = s.size() + value.size();
    CALICO_DCHECK(kSlotBytes + n <= free_contiguous());
    h().heap_begin = static_cast<uint16_t>(h().heap_begin - n);
    h().heap_live = static_cast<uint16_t>(h().heap_live + n);
    std::memcpy(p_ + h().heap_begin, s.data(), s.size());
    if (!value.empty()) std::memcpy(p_ + h().heap_begin + s.size(), value.data(), value.size());
    std::memmove(slots() + i + 1, slots() + i, (count() - i) * kSlotBytes);
    slots()[i] = Slot{key_head(s), h().heap_begin, static_cast<uint16_t>(s.size()),
                      static_cast<uint16_t>(value.size()), 0};
    h().count = static_cast<uint16_t>(count() + 1);
  }

  void remove_at(size_t i) {
    CALICO_CHECK(i < count());
    h().heap_live = static_cast<uint16_t>(h().heap_live - slots()[i].key_len - slots()[i].value_len);
    std::memmove(slots() + i, slots() + i + 1, (count() - i - 1) * kSlotBytes);
    h().count = static_cast<uint16_t>(count() - 1);
  }

  std::vector<NodeEntry> entries() const {
    std::vector<NodeEntry> out;
    out.reserve(count());
    for (size_t i = 0; i < count(); ++i) out.push_back({full_key(i), std::string(value(i))});
    return out;
  }

  // Rewrites the node with the same contents (hints included), removing heap holes.
  void compact() {
    std::string lower(lower_fence()), upper(upper_fence());
    build(p_, size_, type(), level(), lower_infinite() ? nullptr : &lower,
          upper_infinite() ? nullptr : &upper, entries(), link(), hint_at(count()));
  }

  // Bytes a node with these fences and entries needs (prefix stripping included).
  static size_t needed_bytes(const std::string* lower, const std::string* upper,
                             const NodeEntry* first, const NodeEntry* last) {
    size_t prefix = common_prefix(lower, upper);
    size_t n = kHeader + (lower ? lower->size() : 0) + (upper ? upper->size() : 0);
    for (const NodeEntry* e = first; e != last; ++e) {
      n += kSlotBytes + e->key.size() - prefix + e->value.size();
    }
    return n;
  }

  // Writes a complete node at page (size bytes). lower/upper null = infinite. entries are
  // sorted full keys within the fences (inner values: encode_child_ref<kHints>). link_hint:
  // the frame hint of link (hinted format; ignored by the plain one). Pre: the result fits
  // (CALICO_CHECK).
  static void build(std::byte* page, size_t size, NodeType type, int level,
                    const std::string* lower, const std::string* upper,
                    const std::vector<NodeEntry>& entries, BlockId link,
                    FrameId link_hint = kInvalidFrame) {
    CALICO_CHECK(needed_bytes(lower, upper, entries.data(), entries.data() + entries.size()) <= size);
    std::vector<std::byte> tmp(size, std::byte{0});
    BasicNodeRef n(tmp.data(), size);
    NodeHeader& h = n.h();
    h.type = static_cast<uint8_t>(type);
    h.level = static_cast<uint8_t>(level);
    h.flags = static_cast<uint8_t>((lower ? 0 : kLowerInfinite) | (upper ? 0 : kUpperInfinite));
    h.heap_begin = static_cast<uint16_t>(size);
    h.heap_live = 0;
    auto put = [&](std::string_view s) {
      h.heap_begin = static_cast<uint16_t>(h.heap_begin - s.size());
      h.heap_live = static_cast<uint16_t>(h.heap_live + s.size());
      if (!s.empty()) std::memcpy(tmp.data() + h.heap_begin, s.data(), s.size());
      return h.heap_begin;
    };
    h.lower_off = put(lower ? std::string_view(*lower) : std::string_view());
    h.lower_len = static_cast<uint16_t>(lower ? lower->size() : 0);
    h.upper_off = put(upper ? std::string_view(*upper) : std::string_view());
    h.upper_len = static_cast<uint16_t>(upper ? upper->size() : 0);
    h.prefix_len = static_cast<uint16_t>(common_prefix(lower, upper));
    h.link = link;
    if constexpr (kHints) n.set_link_hint(link_hint);
    (void)link_hint;
    h.count = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      n.insert_at(i, entries[i].key, entries[i].value);
    }
    std::memcpy(page, tmp.data(), size);
  }

  static size_t common_prefix(const std::string* lower, const std::string* upper) {
    if (lower == nullptr || upper == nullptr) return 0;
    size_t n = std::min(lower->size(), upper->size());
    size_t i = 0;
    while (i < n && (*lower)[i] == (*upper)[i]) ++i;
    return i;
  }

  // Every offset and length inside the page, sizes consistent: heap_live is the sum of the
  // fences and entries (so free_total() and the in-place edits stay inside the page),
  // prefix_len is the fences' common prefix (so every key covered starts with it), finite
  // fences are ordered (so scans move forward), values fit kMaxValueBytes. Cheap
  // (O(count)); node pages can come from disk, so every pinned, latched or validated page
  // is checked before use. Says nothing about the order of the keys (ordered()).
  bool well_formed() const {
    const NodeHeader& x = h();
    if (x.type != static_cast<uint8_t>(NodeType::kLeaf) && x.type != static_cast<uint8_t>(NodeType::kInner)) {
      return false;
    }
    if ((x.type == static_cast<uint8_t>(NodeType::kLeaf)) != (x.level == 0)) return false;
    if (x.flags & ~(kLowerInfinite | kUpperInfinite)) return false;
    size_t slots_end = kHeader + size_t{x.count} * kSlotBytes;
    if (slots_end > x.heap_begin || x.heap_begin > size_) return false;
    auto in_heap = [&](size_t off, size_t len) { return off >= x.heap_begin && off + len <= size_; };
    if (!in_heap(x.lower_off, x.lower_len) || !in_heap(x.upper_off, x.upper_len)) return false;
    if (x.prefix_len > x.lower_len || x.prefix_len > x.upper_len) return false;
    size_t live = size_t{x.lower_len} + x.upper_len;
    for (size_t i = 0; i < x.count; ++i) {
      const Slot& s = slots()[i];
      if (!in_heap(s.offset, size_t{s.key_len} + s.value_len)) return false;
      if (s.value_len > kMaxValueBytes) return false;
      if (x.type == static_cast<uint8_t>(NodeType::kInner) && s.value_len != kChildBytes) return false;
      live += size_t{s.key_len} + s.value_len;
    }
    if (live != x.heap_live) return false;
    const bool finite = !lower_infinite() && !upper_infinite();
    if (!finite) return x.prefix_len == 0;
    const std::string_view lower = lower_fence(), upper = upper_fence();
    size_t common = 0;
    while (common < lower.size() && common < upper.size() && lower[common] == upper[common]) ++common;
    return x.prefix_len == common && lower < upper;
  }

  // Keys strictly increasing and inside the fences, heads matching. O(count) key copies:
  // for splits and merges, which rebuild nodes from full keys. Pre: well_formed().
  bool ordered() const {
    std::string prev;
    for (size_t i = 0; i < count(); ++i) {
      std::string k = full_key(i);
      if (slots()[i].head != key_head(suffix(i))) return false;
      if ((i > 0 && !(prev < k)) || !covers(k, false)) return false;
      prev = std::move(k);
    }
    return true;
  }

 private:
  std::string_view str(size_t off, size_t len) const {
    CALICO_DCHECK(off + len <= size_);
    return std::string_view(reinterpret_cast<const char*>(p_ + off), len);
  }
  // Offset of inner slot i's child id (its hint follows in the hinted format).
  size_t child_offset(size_t i) const {
    CALICO_DCHECK(is_inner() && i < count() && slots()[i].value_len == kChildBytes);
    return size_t{slots()[i].offset} + slots()[i].key_len;
  }
  uint32_t load_u32(size_t off) const {
    uint32_t v;
    std::memcpy(&v, p_ + off, sizeof v);
    return v;
  }

  std::byte* p_;
  size_t size_;
};

using NodeRef = BasicNodeRef<false>;
using HintedNodeRef = BasicNodeRef<true>;

}  // namespace calico::index
