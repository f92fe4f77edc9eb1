// PageId: the logical identity of a page. 64 bits = space (32, high) | block (32, low).
//
// A space is one file in the data directory (a relation, an index); the block number
// indexes the space's last-level translation array. Space id 0 is never a real space, so
// PageId{} (all zero) is "no page".
#pragma once

#include <cstdint>
#include <functional>

namespace calico {

using SpaceId = uint32_t;
using BlockId = uint32_t;
using FrameId = uint32_t;

inline constexpr SpaceId kInvalidSpace = 0;
inline constexpr FrameId kInvalidFrame = 0;  // frame 0 is never a real frame

struct PageId {
  uint64_t raw = 0;

  constexpr PageId() = default;
  constexpr explicit PageId(uint64_t r) : raw(r) {}
  constexpr PageId(SpaceId space, BlockId block)
      : raw((static_cast<uint64_t>(space) << 32) | block) {}

  constexpr SpaceId space() const { return static_cast<SpaceId>(raw >> 32); }
  constexpr BlockId block() const { return static_cast<BlockId>(raw); }
  constexpr bool valid() const { return space() != kInvalidSpace; }

  friend constexpr bool operator==(PageId, PageId) = default;
  friend constexpr auto operator<=>(PageId, PageId) = default;
};
static_assert(sizeof(PageId) == 8);
static_assert(PageId(7, 9).space() == 7 && PageId(7, 9).block() == 9);
static_assert(PageId(0xFFFFFFFFu, 0xFFFFFFFFu).raw == ~uint64_t{0});

}  // namespace calico

template <>
struct std::hash<calico::PageId> {
  size_t operator()(calico::PageId p) const noexcept { return std::hash<uint64_t>{}(p.raw); }
};
