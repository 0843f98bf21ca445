// The lines requests held by a throttle wait in: first come, first woken; leaving from the middle
// wakes nobody; the last to leave removes the line.
#include "server/throttle_lines.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace {

TEST(ThrottleLinesTest, TheFirstToLeaveWakesTheNext) {
  const auto made = ThrottleLines::make();
  ThrottleLines& lines = *made;
  int woken_b = 0;
  int woken_c = 0;
  ThrottleLines::Place a =
      lines.join("k", [](std::uint64_t) { ADD_FAILURE() << "the first is never woken"; });
  ThrottleLines::Place b = lines.join("k", [&](std::uint64_t) { ++woken_b; });
  ThrottleLines::Place c = lines.join("k", [&](std::uint64_t id) {
    EXPECT_EQ(id, c.id());
    ++woken_c;
  });
  ThrottleLines::Place other =
      lines.join("other", [](std::uint64_t) { ADD_FAILURE() << "alone in its line"; });
  EXPECT_TRUE(a.first());
  EXPECT_FALSE(b.first());
  EXPECT_TRUE(other.first());
  EXPECT_EQ(lines.waiting("k"), 3u);
  b.reset();  // gives up from the middle: nobody's turn comes
  EXPECT_EQ(woken_c, 0);
  a.reset();
  EXPECT_EQ(woken_b, 0);
  EXPECT_EQ(woken_c, 1);
  c.becameFirst();
  {
    ThrottleLines::Place moved = std::move(c);  // the place moves; the line keeps it
    EXPECT_FALSE(c.held());
    EXPECT_EQ(lines.waiting("k"), 1u);
  }  // destroyed: it leaves
  EXPECT_EQ(lines.waiting("k"), 0u);
  EXPECT_EQ(woken_c, 1);
}

// A place keeps its lines alive: the requests a door held may be destroyed after the door (the
// event loops destroy the handlers they still hold when they stop).
TEST(ThrottleLinesTest, APlaceOutlivesItsDoor) {
  ThrottleLines::Place place;
  {
    const auto lines = ThrottleLines::make();
    place = lines->join("k", [](std::uint64_t) {});
  }
  EXPECT_TRUE(place.held());
  place.reset();  // leaves lines that are still there (ASan would say otherwise)
  EXPECT_FALSE(place.held());
}

// A line is its limit's counter's: a reload that keeps the counter (a new burst; a window's new
// count) keeps the line, so newcomers still wait behind the requests held on it; one that makes
// a new counter (a new period or algorithm; a bucket's new rate) makes a new line.
TEST(ThrottleLinesTest, ALineIsItsCountersLine) {
  const auto line = [](Algorithm algorithm, std::uint64_t count, Micros period_us,
                       std::uint64_t burst) {
    return ThrottleLines::lineKey(
        "paced", "k", LimitSpec::make(algorithm, Rate{count, period_us}, burst).value());
  };
  const Micros minute = 60 * kMicrosPerSecond;
  EXPECT_EQ(line(Algorithm::kTokenBucket, 30, minute, 1),
            line(Algorithm::kTokenBucket, 30, minute, 2));
  EXPECT_EQ(line(Algorithm::kFixedWindow, 30, minute, 30),
            line(Algorithm::kFixedWindow, 60, minute, 60));
  EXPECT_NE(line(Algorithm::kTokenBucket, 30, minute, 1),
            line(Algorithm::kTokenBucket, 60, minute, 1));
  EXPECT_NE(line(Algorithm::kTokenBucket, 30, minute, 1),
            line(Algorithm::kTokenBucket, 30, kMicrosPerSecond, 1));
  EXPECT_NE(line(Algorithm::kTokenBucket, 30, minute, 1), line(Algorithm::kGcra, 30, minute, 1));
}

}  // namespace
}  // namespace sluice::server
