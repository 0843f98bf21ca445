// Reading the script's decide replies (script_protocol.h): one string of little-endian doubles.
// The replies here are built by hand, so each malformed shape the reader must refuse is exact.
#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include "sluice/outcome.h"
#include "store/redis/script_call.h"
#include "store/redis/script_protocol.h"

namespace sluice::redis {
namespace {

static_assert(std::endian::native == std::endian::little, "the replies are built in host order");

std::string packed(const std::vector<double>& numbers) {
  std::string bytes;
  for (const double number : numbers) {
    char raw[sizeof number];
    std::memcpy(raw, &number, sizeof number);
    bytes.append(raw, sizeof raw);
  }
  return bytes;
}

redisReply stringReply(std::string& bytes) {
  redisReply reply{};
  reply.type = REDIS_REPLY_STRING;
  reply.str = bytes.data();
  reply.len = bytes.size();
  return reply;
}

TEST(ScriptReply, ReadsEachCheckFromThePackedNumbers) {
  std::string bytes = packed({1'700'000'000'000'000.0,                 // now_us
                              1, 0, 10, 9, 100'000, 0, 250,            // allowed, with a delay
                              0, 1, 5, 0, 200'000, kNeverOnWire, 0});  // denied, never fits
  const redisReply reply = stringReply(bytes);
  std::vector<Outcome> outcomes(2);
  Micros now_us = 0;
  ASSERT_EQ(readDecideReply(&reply, outcomes, now_us), std::nullopt);
  EXPECT_EQ(now_us, 1'700'000'000'000'000);
  EXPECT_TRUE(outcomes[0].allowed);
  EXPECT_EQ(outcomes[0].reason, DenyReason::kNone);
  EXPECT_EQ(outcomes[0].limit, 10u);
  EXPECT_EQ(outcomes[0].remaining, 9u);
  EXPECT_EQ(outcomes[0].reset_after_us, 100'000);
  EXPECT_EQ(outcomes[0].retry_after_us, 0);
  EXPECT_EQ(outcomes[0].delay_us, 250);
  EXPECT_FALSE(outcomes[1].allowed);
  EXPECT_EQ(outcomes[1].reason, DenyReason::kOverLimit);
  EXPECT_EQ(outcomes[1].limit, 5u);
  EXPECT_EQ(outcomes[1].remaining, 0u);
  EXPECT_EQ(outcomes[1].reset_after_us, 200'000);
  EXPECT_EQ(outcomes[1].retry_after_us, kNever);
}

// The numbers of a well-formed one-check reply with number `index` replaced by `value`.
std::string withNumber(std::size_t index, double value) {
  std::vector<double> numbers = {1000, 1, 0, 10, 9, 100, 0, 0};
  numbers[index] = value;
  return packed(numbers);
}

std::optional<std::string> readOne(std::string bytes) {
  const redisReply reply = stringReply(bytes);
  std::vector<Outcome> outcomes(1);
  Micros now_us = 0;
  return readDecideReply(&reply, outcomes, now_us);
}

TEST(ScriptReply, MalformedRepliesAreErrors) {
  EXPECT_EQ(readOne(withNumber(3, 10)), std::nullopt);  // the well-formed base
  std::string bytes = withNumber(3, 10);
  EXPECT_NE(readOne(bytes.substr(0, bytes.size() - 8)), std::nullopt) << "a number short";
  EXPECT_NE(readOne(bytes + packed({0})), std::nullopt) << "a number too many";
  EXPECT_NE(readOne(bytes.substr(0, bytes.size() - 1)), std::nullopt) << "a byte short";
  EXPECT_NE(readOne(withNumber(0, 1000.5)), std::nullopt) << "a fractional time";
  EXPECT_NE(readOne(withNumber(4, 1.5)), std::nullopt) << "a fractional remaining";
  EXPECT_NE(readOne(withNumber(4, std::numeric_limits<double>::quiet_NaN())), std::nullopt);
  EXPECT_NE(readOne(withNumber(4, std::numeric_limits<double>::infinity())), std::nullopt);
  EXPECT_NE(readOne(withNumber(4, 1e300)), std::nullopt) << "past 2^53";
  EXPECT_NE(readOne(withNumber(4, -1)), std::nullopt) << "a negative remaining";
  EXPECT_NE(readOne(withNumber(2, 9)), std::nullopt) << "an unknown reason";
  EXPECT_EQ(readOne(withNumber(6, kNeverOnWire)), std::nullopt) << "retry_after may be never";
  EXPECT_NE(readOne(withNumber(5, kNeverOnWire)), std::nullopt) << "but reset_after may not";

  std::vector<Outcome> outcomes(1);
  Micros now_us = 0;
  EXPECT_EQ(readDecideReply(nullptr, outcomes, now_us), "no reply");
  char text[] = "ERR sluice: something";
  redisReply error{};
  error.type = REDIS_REPLY_ERROR;
  error.str = text;
  error.len = sizeof text - 1;
  EXPECT_EQ(readDecideReply(&error, outcomes, now_us), "ERR sluice: something");
  redisReply integers{};  // the earlier protocol's array of integers is not read as numbers
  integers.type = REDIS_REPLY_ARRAY;
  EXPECT_NE(readDecideReply(&integers, outcomes, now_us), std::nullopt);
}

}  // namespace
}  // namespace sluice::redis
