#include "sluice/pacer.h"

#include <vector>

#include <gtest/gtest.h>

namespace sluice {
namespace {

Pacer pacer(const char* rate, std::uint64_t burst, const Clock& clock) {
  Result<Pacer> made = Pacer::make(Rate::parse(rate).value(), burst, &clock);
  EXPECT_TRUE(made.ok());
  return std::move(made).value();
}

TEST(PacerTest, LetsTheBurstGoAtOnceThenPacesAtTheRate) {
  FakeClock clock(kMicrosPerSecond);
  Pacer paced = pacer("10/s", 3, clock);
  EXPECT_EQ(paced.tryTake(), 0);
  EXPECT_EQ(paced.tryTake(), 0);
  EXPECT_EQ(paced.tryTake(), 0);
  EXPECT_EQ(paced.tryTake(), 100 * kMicrosPerMilli);  // one unit every 100 ms
  EXPECT_EQ(paced.tryTake(), 100 * kMicrosPerMilli);  // a refusal took nothing
  clock.advance(100 * kMicrosPerMilli);
  EXPECT_EQ(paced.tryTake(), 0);
}

TEST(PacerTest, TakeSleepsUntilTheQuotaHasTheUnits) {
  FakeClock clock(kMicrosPerSecond);
  Pacer paced = pacer("10/s", 1, clock);
  std::vector<Micros> sleeps;
  const auto sleep = [&](Micros wait) {
    sleeps.push_back(wait);
    clock.advance(wait);
  };
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(paced.take(1, sleep));
  EXPECT_EQ(sleeps, (std::vector<Micros>{100'000, 100'000, 100'000}));
}

TEST(PacerTest, ACostLargerThanTheBurstNeverFits) {
  FakeClock clock(kMicrosPerSecond);
  Pacer paced = pacer("10/s", 5, clock);
  EXPECT_EQ(paced.tryTake(6), kNever);
  int sleeps = 0;
  EXPECT_FALSE(paced.take(6, [&](Micros) { ++sleeps; }));
  EXPECT_EQ(sleeps, 0);
  EXPECT_EQ(paced.tryTake(5), 0);  // the refusals took nothing
}

TEST(PacerTest, ABadSpecIsAnError) {
  FakeClock clock;
  const Result<Pacer> made = Pacer::make(Rate::parse("10/s").value(), 0, &clock);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().find("burst"), std::string::npos) << made.error();
}

}  // namespace
}  // namespace sluice
