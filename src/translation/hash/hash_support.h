// What every hash-table translation shares (hash_chained.h, hash_open.h, hash_lockfree.h):
// the hash function (mix64, BlockHash) and the capacity check (check_table_capacity).
//
// mix64 is the finaliser of SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
// number generators", OOPSLA 2014; constants of Stafford's "Mix13"): two xor-shift-multiply
// rounds and a final xor-shift. It is a bijection on 64 bits with full avalanche (every input
// bit flips each output bit with probability ~1/2), so consecutive block numbers, which are
// what a space allocates, spread evenly over partitions (top bits) and slots (low bits).
// Cost: 2 multiplies and 3 xor-shifts, about 10 cycles of latency on the hot path. std::hash<uint32_t> is the
// identity in libstdc++ and would leave consecutive pages in consecutive slots of an open
// table, and put every page of a space in one partition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "calico/error.h"
#include "calico/page_id.h"

namespace calico::translation {

constexpr uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
static_assert(mix64(0) == 0, "the finaliser maps 0 to 0 (a bijection with a fixed point)");
static_assert(mix64(1) != 1 && mix64(1) != mix64(2));

// The hasher the maps are instantiated with: mix64 of the block number.
struct BlockHash {
  size_t operator()(BlockId block) const noexcept { return static_cast<size_t>(mix64(block)); }
};

// A table's capacity is the space's block limit (PoolOptions::max_blocks_per_space): 1 .. 2^32
// blocks, as for TranslationArray. Returns it. Errors: kInvalidArgument.
inline uint64_t check_table_capacity(uint64_t capacity, const char* table) {
  if (capacity == 0 || capacity > (uint64_t{1} << 32)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(table) + ": space capacity " +
                                                 std::to_string(capacity) + " blocks is not in 1 .. 2^32");
  }
  return capacity;
}

}  // namespace calico::translation
