// Tests for translation/space_directory.h: publish, lookup and retire of space ids, and the epoch.
#include "translation/space_directory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace calico::translation {
namespace {

struct FakeSpace {
  SpaceId id = 0;
  uint64_t payload = 0;
};

TEST(SpaceDirectory, UnknownIdsAreNull) {
  SpaceDirectory<FakeSpace> dir;
  for (SpaceId id : {SpaceId{0}, SpaceId{1}, SpaceId{2}, SpaceId{4096}, SpaceId{1u << 20},
                     SpaceId{0x7FFFFFFFu}, SpaceId{0xFFFFFFFEu}, SpaceId{0xFFFFFFFFu}}) {
    EXPECT_EQ(dir.lookup(id), nullptr) << id;
  }
}

TEST(SpaceDirectory, PublishThenLookup) {
  SpaceDirectory<FakeSpace> dir;
  FakeSpace a{1, 10}, b{2, 20};
  dir.publish(1, &a);
  dir.publish(2, &b);
  EXPECT_EQ(dir.lookup(1), &a);
  EXPECT_EQ(dir.lookup(2), &b);
  EXPECT_EQ(dir.lookup(3), nullptr);
  EXPECT_EQ(dir.lookup(0), nullptr);
  // Re-publishing replaces the slot.
  dir.publish(1, &b);
  EXPECT_EQ(dir.lookup(1), &b);
}

TEST(SpaceDirectory, PublishDoesNotChangeTheEpoch) {
  SpaceDirectory<FakeSpace> dir;
  const uint64_t e0 = dir.epoch();
  FakeSpace a;
  dir.publish(7, &a);
  EXPECT_EQ(dir.epoch(), e0);
}

TEST(SpaceDirectory, RetireNullsTheSlotAndBumpsTheEpoch) {
  SpaceDirectory<FakeSpace> dir;
  FakeSpace a{5}, b{6};
  dir.publish(5, &a);
  dir.publish(6, &b);
  const uint64_t e0 = dir.epoch();
  EXPECT_NE(e0, 0u) << "epoch 0 is what an empty path cache holds; it must never be valid";
  dir.retire(5);
  EXPECT_EQ(dir.lookup(5), nullptr);
  EXPECT_EQ(dir.lookup(6), &b) << "retire touches only its own slot";
  EXPECT_EQ(dir.epoch(), e0 + 1);
  dir.retire(6);
  EXPECT_EQ(dir.lookup(6), nullptr);
  EXPECT_EQ(dir.epoch(), e0 + 2);
  // A retired id can be published again.
  dir.publish(5, &b);
  EXPECT_EQ(dir.lookup(5), &b);
  EXPECT_EQ(dir.epoch(), e0 + 2);
}

TEST(SpaceDirectory, IdsNearTheTopOfTheRange) {
  SpaceDirectory<FakeSpace> dir;
  FakeSpace top{0xFFFFFFFFu}, below{0xFFFFFFFEu}, mid{0x80000000u};
  dir.publish(0xFFFFFFFFu, &top);
  dir.publish(0xFFFFFFFEu, &below);
  dir.publish(0x80000000u, &mid);
  EXPECT_EQ(dir.lookup(0xFFFFFFFFu), &top);
  EXPECT_EQ(dir.lookup(0xFFFFFFFEu), &below);
  EXPECT_EQ(dir.lookup(0x80000000u), &mid);
  EXPECT_EQ(dir.lookup(0xFFFFFFFDu), nullptr);
  EXPECT_EQ(dir.lookup(0x7FFFFFFFu), nullptr);
  EXPECT_EQ(dir.lookup(0), nullptr) << "the top id must not alias slot 0";
  const uint64_t e0 = dir.epoch();
  dir.retire(0xFFFFFFFFu);
  EXPECT_EQ(dir.lookup(0xFFFFFFFFu), nullptr);
  EXPECT_EQ(dir.lookup(0xFFFFFFFEu), &below);
  EXPECT_EQ(dir.epoch(), e0 + 1);
}

TEST(SpaceDirectory, DirectoriesAreIndependent) {
  SpaceDirectory<FakeSpace> d1, d2;
  FakeSpace a;
  d1.publish(9, &a);
  EXPECT_EQ(d1.lookup(9), &a);
  EXPECT_EQ(d2.lookup(9), nullptr);
  d1.retire(9);
  EXPECT_EQ(d2.epoch(), d1.epoch() - 1);
}

// A reader that sees a published pointer must also see what was written into the object
// before publish (release/acquire); TSan checks the plain fields.
TEST(SpaceDirectory, ConcurrentPublishIsSeenWhole) {
  constexpr SpaceId kSpaces = 64;
  SpaceDirectory<FakeSpace> dir;
  std::vector<FakeSpace> spaces(kSpaces + 1);
  std::atomic<int> violations{0};
  std::thread reader([&] {
    for (SpaceId id = 1; id <= kSpaces; ++id) {
      FakeSpace* s;
      while ((s = dir.lookup(id)) == nullptr) std::this_thread::yield();
      if (s->id != id || s->payload != uint64_t{id} * 1000) violations.fetch_add(1);
    }
  });
  std::thread writer([&] {
    for (SpaceId id = 1; id <= kSpaces; ++id) {
      spaces[id].id = id;
      spaces[id].payload = uint64_t{id} * 1000;
      dir.publish(id, &spaces[id]);
    }
  });
  writer.join();
  reader.join();
  EXPECT_EQ(violations.load(), 0);
}

}  // namespace
}  // namespace calico::translation
