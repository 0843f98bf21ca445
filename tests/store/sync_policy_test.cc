// The synced store's rules for a node's share and for when it pushes a key's units.
#include "store/redis/sync_policy.h"

#include <gtest/gtest.h>

namespace sluice::redis {
namespace {

constexpr Micros kIntervalUs = 100'000;

TEST(NodeShare, DividesWhatIsLeftAmongTheNodes) {
  EXPECT_EQ(nodeShare(1000, 1), 1000u);
  EXPECT_EQ(nodeShare(1000, 2), 500u);
  EXPECT_EQ(nodeShare(1000, 3), 333u);
  EXPECT_EQ(nodeShare(0, 1), 0u);
  EXPECT_EQ(nodeShare(0, 4), 0u);
}

TEST(NodeShare, IsAtLeastOneUnitWhileAnythingIsLeft) {
  EXPECT_EQ(nodeShare(1, 2), 1u);
  EXPECT_EQ(nodeShare(3, 4), 1u);
}

TEST(PushIsDue, AtOnceFromAQuarterOfTheShare) {
  EXPECT_TRUE(pushIsDue(125, 500, false, 0, kIntervalUs));
  EXPECT_TRUE(pushIsDue(500, 500, false, 0, kIntervalUs));
  EXPECT_FALSE(pushIsDue(124, 500, false, 0, kIntervalUs));
  EXPECT_FALSE(pushIsDue(1, 500, false, 0, kIntervalUs));
}

TEST(PushIsDue, NearTheLimitEveryUnitIsDue) {
  // A share under four units (or none left): a quarter of it rounds to nothing.
  EXPECT_TRUE(pushIsDue(1, 3, false, 0, kIntervalUs));
  EXPECT_TRUE(pushIsDue(1, 0, false, 0, kIntervalUs));
}

TEST(PushIsDue, UnitsHeldBackGoAfterFiveIntervals) {
  EXPECT_FALSE(pushIsDue(1, 500, false, kSlowSyncEvery * kIntervalUs - 1, kIntervalUs));
  EXPECT_TRUE(pushIsDue(1, 500, false, kSlowSyncEvery * kIntervalUs, kIntervalUs));
}

TEST(PushIsDue, AtOnceWhenTheShareRanOut) {
  // 100 units held back and a request of 450 denied against a share of 500: pushing the 100
  // makes the next share 450, where the request fits.
  EXPECT_TRUE(pushIsDue(100, 500, true, 0, kIntervalUs));
  EXPECT_FALSE(pushIsDue(100, 500, false, 0, kIntervalUs));
}

}  // namespace
}  // namespace sluice::redis
