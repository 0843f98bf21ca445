// The throttled log lines about one Redis server, shared by every pool that talks to it. Each
// I/O thread has a pool of its own, and a server that stalls fails the calls of all of them at
// once: throttled per pool, every thread wrote the same line within a millisecond.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "store/log_throttle.h"

namespace sluice::redis {

struct ServerLogThrottles {
  LogThrottle refusals{std::chrono::seconds(10)};    // script calls Redis refused
  LogThrottle timeouts{std::chrono::seconds(10)};    // calls not answered in time
  LogThrottle unreadable{std::chrono::seconds(10)};  // replies that could not be read
  LogThrottle backlog{std::chrono::seconds(10)};     // calls failed for too many unanswered

  // The throttles of the server at `address` ("host:port" or "unix:/path"), shared while any
  // pool holds them. Thread-safe.
  [[nodiscard]] static std::shared_ptr<ServerLogThrottles> forServer(const std::string& address);
};

}  // namespace sluice::redis
