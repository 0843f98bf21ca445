// The script's exact arithmetic helpers (common.lua) against 128-bit C++ integers, where the
// products pass 2^53 and a double quotient alone would be off by a unit or two.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "store/redis/scripts.h"
#include "support/redis_server.h"

namespace sluice::testing {
namespace {

__extension__ using Int128 = __int128;

// common.lua alone (the script's first part), returning for ARGV the wide helpers' results and
// the inline floor and ceiling divisions the script writes everywhere.
std::string helperScript() {
  const std::string_view script = redis::sluiceScript();
  const std::string_view common = script.substr(0, script.find("-- arguments.lua"));
  return std::string(common) +
         "local a, b, c = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])\n"
         "local exact = exactArithmetic()\n"
         "return {exact.mulDivFloor(a, b, c), exact.mulDivCeil(a, b, c),\n"
         "        floor((a - b) / c), -floor(-(a - b) / c)}\n";
}

// Floor and ceiling of a × b / c are exact for products far beyond 2^53; so are floorDiv and
// ceilDiv of negative numerators.
TEST(LuaArithmetic, MulDivAndDivisionsAreExact) {
  RedisServer server;
  RedisConnection connection(server.port());
  const std::string script = helperScript();
  std::mt19937_64 random(5);
  const std::uint64_t kTwoTo53 = std::uint64_t{1} << 53;
  int wide = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::uint64_t a = 1 + random() % (std::uint64_t{1} << (20 + random() % 22));
    const std::uint64_t b = 1 + random() % (std::uint64_t{1} << 45);
    std::uint64_t c = 1 + random() % (std::uint64_t{1} << (30 + random() % 15));
    if (i % 4 == 0) c = a;  // exact quotients
    const Int128 product = Int128{a} * b;
    if (product / c >= kTwoTo53) continue;  // results must stay below 2^53
    if (product >= kTwoTo53) ++wide;
    connection.append(
        {"EVAL", script, "0", std::to_string(a), std::to_string(b), std::to_string(c)});
    const RedisReply reply = connection.read();
    ASSERT_EQ(reply.type, REDIS_REPLY_ARRAY) << reply.text;
    const auto floor_div = [](Int128 n, Int128 d) { return n / d - (n % d != 0 && n < 0); };
    const Int128 difference = Int128{a} - Int128{b};
    const std::string where = std::to_string(a) + " " + std::to_string(b) + " " + std::to_string(c);
    EXPECT_EQ(reply.elements[0].integer, static_cast<long long>(product / c)) << where;
    EXPECT_EQ(reply.elements[1].integer, static_cast<long long>((product + c - 1) / c)) << where;
    EXPECT_EQ(reply.elements[2].integer, static_cast<long long>(floor_div(difference, c))) << where;
    EXPECT_EQ(reply.elements[3].integer, static_cast<long long>(-floor_div(-difference, c)))
        << where;
  }
  EXPECT_GT(wide, 1000);
}

// The script divides inline, floor(n / d) and -floor(-n / d), trusting that the rounded double
// quotient never crosses an integer while |n| < 2^53 (common.lua): numerators up to 2^53 - 1,
// either sign, many one away from a multiple of the divisor, where rounding would show.
TEST(LuaArithmetic, InlineDivisionsAreExactBelowTwoTo53) {
  RedisServer server;
  RedisConnection connection(server.port());
  const std::string script =
      "local n, d = tonumber(ARGV[1]), tonumber(ARGV[2])\n"
      "return {math.floor(n / d), -math.floor(-n / d)}\n";
  std::mt19937_64 random(11);
  const std::int64_t kMax = (std::int64_t{1} << 53) - 1;
  for (int i = 0; i < 3000; ++i) {
    const std::int64_t d =
        1 + static_cast<std::int64_t>(random() % (std::uint64_t{1} << (1 + random() % 52)));
    std::int64_t n = static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(kMax + 1));
    if (i % 3 != 0) n = n / d * d + static_cast<std::int64_t>(random() % 3) - 1;  // k * d ± 1
    if (n > kMax) n = kMax;
    if (i % 2 == 0) n = -n;
    connection.append({"EVAL", script, "0", std::to_string(n), std::to_string(d)});
    const RedisReply reply = connection.read();
    ASSERT_EQ(reply.type, REDIS_REPLY_ARRAY) << reply.text;
    const std::int64_t floor_div = n / d - (n % d != 0 && n < 0);
    const std::int64_t ceil_div = n / d + (n % d != 0 && n > 0);
    const std::string where = std::to_string(n) + " / " + std::to_string(d);
    EXPECT_EQ(reply.elements[0].integer, floor_div) << where;
    EXPECT_EQ(reply.elements[1].integer, ceil_div) << where;
  }
}

}  // namespace
}  // namespace sluice::testing
