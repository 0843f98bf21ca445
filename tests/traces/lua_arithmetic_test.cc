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

// common.lua alone (the script's first part), returning the helpers' results for ARGV.
std::string helperScript() {
  const std::string_view script = redis::sluiceScript();
  const std::string_view common = script.substr(0, script.find("-- fixed_window.lua"));
  return std::string(common) +
         "local a, b, c = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])\n"
         "return {common.mulDivFloor(a, b, c), common.mulDivCeil(a, b, c),\n"
         "        common.floorDiv(a - b, c), common.ceilDiv(a - b, c)}\n";
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

}  // namespace
}  // namespace sluice::testing
