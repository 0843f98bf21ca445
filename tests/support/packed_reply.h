// Test helper: the numbers of a decide or batch script reply, which Redis sends as one string
// of little-endian doubles (src/store/redis/script_protocol.h). Written apart from the store's
// own reader, so the tests check the wire format rather than share its code.
#pragma once

#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/redis_server.h"

namespace sluice::testing {

inline std::vector<long long> packedNumbers(const RedisReply& reply) {
  static_assert(std::endian::native == std::endian::little,
                "the tests assume a little-endian host");
  if (reply.type != REDIS_REPLY_STRING || reply.text.size() % sizeof(double) != 0) {
    throw std::runtime_error("not a packed script reply: " +
                             (reply.isError() ? reply.text : "wrong type or length"));
  }
  std::vector<long long> numbers;
  for (std::size_t at = 0; at < reply.text.size(); at += sizeof(double)) {
    double number = 0;
    std::memcpy(&number, reply.text.data() + at, sizeof number);
    // Every number the script sends is an integer below 2^53 in magnitude.
    if (!(number >= -9007199254740991.0 && number <= 9007199254740991.0) ||
        static_cast<double>(static_cast<long long>(number)) != number) {
      throw std::runtime_error("a packed reply number is not an integer below 2^53");
    }
    numbers.push_back(static_cast<long long>(number));
  }
  return numbers;
}

}  // namespace sluice::testing
