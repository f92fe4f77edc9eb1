#include "vector/id_filter.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace calico::vector {
namespace {

// count_below counts the allowed ids below the end only: an allow-list of whole words
// (every bit set) over 900 ids allows 900, not 15 x 64 = 960. A filtered search decides
// between the graph and a scan on this count.
TEST(IdFilter, CountBelowIgnoresBitsPastTheEnd) {
  const std::vector<uint64_t> all(15, ~uint64_t{0});
  const IdFilter f{all};
  EXPECT_EQ(f.count_below(900), 900u);
  EXPECT_EQ(f.count_below(960), 960u);
  EXPECT_EQ(f.count_below(2000), 960u) << "ids past the words are not allowed";
  EXPECT_EQ(f.count_below(1), 1u);
  EXPECT_EQ(f.count_below(0), 0u);
  std::vector<uint64_t> some(2, 0);
  some[0] = uint64_t{1} << 63;  // id 63
  some[1] = 1 | uint64_t{1} << 5;  // ids 64, 69
  const IdFilter g{some};
  EXPECT_EQ(g.count_below(63), 0u);
  EXPECT_EQ(g.count_below(64), 1u);
  EXPECT_EQ(g.count_below(65), 2u);
  EXPECT_EQ(g.count_below(69), 2u);
  EXPECT_EQ(g.count_below(70), 3u);
  EXPECT_EQ(IdFilter{}.count_below(100), 0u);
}

}  // namespace
}  // namespace calico::vector
