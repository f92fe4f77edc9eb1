// Sizes given in MB (command line, driver configs): each is checked against kMaxSizeMb before
// it is turned into bytes, so that no size wraps around (mb << 20 overflows above 2^44 MB).
//
// Entry points: kMaxSizeMb, check_size_mb(mb, option).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace calico::bench {

// 4 TiB: above the memory and disks of any machine we run on, far below the wrap-around.
inline constexpr uint64_t kMaxSizeMb = uint64_t{1} << 22;

// Throws std::invalid_argument naming the option when mb > kMaxSizeMb (a negative number
// given for an unsigned option arrives here as a huge one).
inline void check_size_mb(uint64_t mb, std::string_view option) {
  if (mb > kMaxSizeMb) {
    throw std::invalid_argument(std::string(option) + " " + std::to_string(mb) + " MB is out of range (0 to " +
                                std::to_string(kMaxSizeMb) + " MB)");
  }
}

}  // namespace calico::bench
