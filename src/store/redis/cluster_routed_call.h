#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <hiredis/hiredis.h>

namespace sluice::redis {

class ScriptCall;
class ServerPool;

// A script call for one slot on its way through the cluster's redirections.
struct RoutedCall {
  std::shared_ptr<const ScriptCall> call;
  std::uint16_t slot = 0;
  std::chrono::steady_clock::time_point deadline;
  // When its latest attempt went to a node (route()), for that node's breaker: a call out since
  // before a failure was seen is no new evidence of one (circuit_breaker.h). An attempt the
  // breaker let through as its probe starts at the instant it was let through.
  std::int64_t attempt_started_us = 0;
  // The final reply and the node's pool that gave it (to log a reply it cannot read): both null
  // when the call failed; an error reply when the cluster refused it.
  std::function<void(const redisReply*, ServerPool*)> handler;
  // A decide, not a refund: a reply that comes after its attempt was given up on is refunded
  // (undoLate), and while its node's breaker is open it fails at once. A refund is sent
  // whatever the breaker says: it must land, or the limit stays over-counted.
  bool decide = false;
  int redirects = 0;
  std::string ask_address;  // when set, the next attempt goes there, after ASKING

  void fail() const { handler(nullptr, nullptr); }
};

}  // namespace sluice::redis
