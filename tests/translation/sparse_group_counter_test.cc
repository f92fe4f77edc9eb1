// Sparse-group counters (translation/array/sparse_group_counter.h): references say which
// representation they cover, the last one of a sparse group leaves it sparse and empty, moves start only from
// a quiet group of the right kind and count, and acquirers wait while a move runs.
#include "translation/array/sparse_group_counter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace calico::translation {
namespace {

TEST(SparseGroupCounter, ReferencesCoverTheGroupsRepresentation) {
  PunchCounter c{0};
  EXPECT_FALSE(acquire_group_ref(c));
  EXPECT_EQ(c.load(), 1u);
  c.store(kGroupSparse | 2);
  EXPECT_TRUE(acquire_group_ref(c));
  EXPECT_EQ(c.load(), kGroupSparse | 3);
}

TEST(SparseGroupCounter, LastReleasePunchesADenseGroupAndEmptiesASparseOne) {
  PunchCounter c{2};
  int punches = 0;
  auto punch = [&] { ++punches; };
  EXPECT_EQ(release_group_ref(c, punch), GroupRelease::kCounted);
  EXPECT_EQ(release_group_ref(c, punch), GroupRelease::kPunched);
  EXPECT_EQ(punches, 1);
  EXPECT_EQ(c.load(), 0u);
  c.store(kGroupSparse | 2);
  EXPECT_EQ(release_group_ref(c, punch), GroupRelease::kCounted);
  EXPECT_EQ(c.load(), kGroupSparse | 1);
  EXPECT_EQ(release_group_ref(c, punch), GroupRelease::kCounted);
  EXPECT_EQ(c.load(), kGroupSparse) << "an emptied sparse group stays sparse (its page is already punched)";
  EXPECT_TRUE(acquire_group_ref(c)) << "the next reference covers the side table";
  EXPECT_EQ(punches, 1);
}

// After a failed CAS may have backed a punched array page: an unreferenced dense group and a
// sparse group (whatever its count: its array page is written by nobody) are punched again;
// a referenced dense group, a moving or a punching one are left alone. The count and flags
// come back as they were.
TEST(SparseGroupCounter, RepunchTakesUnreferencedDenseAndSparseGroupsOnly) {
  int punches = 0;
  auto punch = [&] { ++punches; };
  for (uint32_t word : {0u, kGroupSparse, kGroupSparse | 3}) {
    PunchCounter c{word};
    EXPECT_TRUE(repunch_group_page(c, punch)) << word;
    EXPECT_EQ(c.load(), word);
  }
  EXPECT_EQ(punches, 3);
  for (uint32_t word : {1u, kGroupMoving | 2, kGroupSparse | kGroupMoving | 2, kPunchLock}) {
    PunchCounter c{word};
    EXPECT_FALSE(repunch_group_page(c, punch)) << word;
    EXPECT_EQ(c.load(), word);
  }
  EXPECT_EQ(punches, 3);
}

TEST(SparseGroupCounter, AMoveStartsOnlyFromAQuietGroupOfTheRightKindAndCount) {
  PunchCounter c{5};
  uint32_t count = 0;
  EXPECT_FALSE(begin_group_move(c, /*sparse=*/true, 1, 8, &count)) << "dense, not sparse";
  EXPECT_FALSE(begin_group_move(c, /*sparse=*/false, 1, 4, &count)) << "count above the bound";
  EXPECT_FALSE(begin_group_move(c, /*sparse=*/false, 6, 8, &count)) << "count below the bound";
  ASSERT_TRUE(begin_group_move(c, /*sparse=*/false, 1, 8, &count));
  EXPECT_EQ(count, 5u);
  EXPECT_FALSE(begin_group_move(c, /*sparse=*/false, 1, 8, &count)) << "one mover at a time";
  commit_group_move(c, /*sparse=*/true);
  EXPECT_EQ(c.load(), kGroupSparse | 5);
  ASSERT_TRUE(begin_group_move(c, /*sparse=*/true, 5, kGroupCountMask, &count));
  commit_group_move(c, /*sparse=*/false);
  EXPECT_EQ(c.load(), 5u);
}

TEST(SparseGroupCounter, ReleasesDuringAMoveOnlyCountAndTheAbortFinishesTheirWork) {
  int punches = 0;
  auto punch = [&] { ++punches; };
  PunchCounter c{1};
  uint32_t count = 0;
  ASSERT_TRUE(begin_group_move(c, /*sparse=*/false, 1, 8, &count));
  EXPECT_EQ(release_group_ref(c, punch), GroupRelease::kCounted) << "no punch under a mover";
  EXPECT_EQ(c.load(), kGroupMoving);
  EXPECT_EQ(abort_group_move(c, punch), GroupRelease::kPunched) << "the abort punches for the last release";
  EXPECT_EQ(c.load(), 0u);
  EXPECT_EQ(punches, 1);

  c.store(kGroupSparse | 1);
  ASSERT_TRUE(begin_group_move(c, /*sparse=*/true, 1, 8, &count));
  EXPECT_EQ(release_group_ref(c, punch), GroupRelease::kCounted);
  EXPECT_EQ(abort_group_move(c, punch), GroupRelease::kCounted);
  EXPECT_EQ(c.load(), kGroupSparse) << "the abort leaves the emptied group sparse";
  EXPECT_EQ(punches, 1);

  c.store(3);
  ASSERT_TRUE(begin_group_move(c, /*sparse=*/false, 1, 8, &count));
  EXPECT_EQ(abort_group_move(c, punch), GroupRelease::kCounted);
  EXPECT_EQ(c.load(), 3u);
}

TEST(SparseGroupCounter, AcquireWaitsForTheMoveAndGetsItsOutcome) {
  PunchCounter c{2};
  uint32_t count = 0;
  ASSERT_TRUE(begin_group_move(c, /*sparse=*/false, 1, 8, &count));
  std::atomic<int> result{-1};
  std::thread acquirer([&] { result = acquire_group_ref(c) ? 1 : 0; });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(result.load(), -1) << "no reference while a move runs";
  commit_group_move(c, /*sparse=*/true);
  acquirer.join();
  EXPECT_EQ(result.load(), 1) << "the waiting acquirer covers the side table";
  EXPECT_EQ(c.load(), kGroupSparse | 3);
}

}  // namespace
}  // namespace calico::translation
