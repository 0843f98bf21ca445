// The lines requests held by a throttle wait in: first come, first woken; leaving from the middle
// wakes nobody; the last to leave removes the line.
#include "server/throttle_lines.h"

#include <gtest/gtest.h>

namespace sluice::server {
namespace {

TEST(ThrottleLinesTest, TheFirstToLeaveWakesTheNext) {
  ThrottleLines lines;
  int woken_b = 0;
  int woken_c = 0;
  ThrottleLines::Place a = lines.join("k", [] { ADD_FAILURE() << "the first is never woken"; });
  ThrottleLines::Place b = lines.join("k", [&] { ++woken_b; });
  ThrottleLines::Place c = lines.join("k", [&] { ++woken_c; });
  ThrottleLines::Place other = lines.join("other", [] { ADD_FAILURE() << "alone in its line"; });
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

}  // namespace
}  // namespace sluice::server
