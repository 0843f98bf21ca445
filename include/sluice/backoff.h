// Client side: how long to wait before calling again after a rate limiter said "not so fast"
// (429, or 503 from a guard) or the call failed in transit.
//
//   sluice::Backoff backoff;
//   for (;;) {
//     Response response = send();
//     if (response.status != 429 && response.status != 503) break;
//     const auto wait = backoff.next(sluice::serverWait(response["Retry-After"],
//                                                       response["RateLimit"], now_us));
//     if (!wait) break;  // out of retries, or the server asks for longer than we will wait
//     sleep_for(std::chrono::microseconds(*wait));
//   }
#pragma once

#include <cstdint>
#include <optional>
#include <random>

#include "sluice/time.h"

namespace sluice {

struct BackoffOptions {
  Micros base_us = 100 * kMicrosPerMilli;  // the first retry's ceiling, doubled for each next
  Micros cap_us = 30 * kMicrosPerSecond;   // no ceiling goes above this
  int max_retries = 5;                     // retries after the first call; 0 never retries
  // A server that asks for a longer wait than this ends the retries: better to fail now than
  // to hold the caller for minutes.
  Micros max_server_wait_us = 60 * kMicrosPerSecond;
  std::uint64_t seed = 0;  // 0 seeds from std::random_device; tests pass their own
};

// Exponential backoff with full jitter: each wait is drawn uniformly between zero and a ceiling
// that doubles with each retry (base, 2 base, 4 base, ... up to cap). Clients refused at the same
// moment then come back spread over the whole interval instead of together, which would be
// refused together again. A server's own word on when to return is a floor that is never
// shortened; a draw of up to `base` is added to it, so that clients told the same instant do
// not all arrive at it. Not thread-safe: one per logical call.
class Backoff {
 public:
  explicit Backoff(BackoffOptions options = {});

  // The wait before the next retry, or nullopt when the caller should stop: max_retries are used
  // up, or `server_wait_us` (what the response asked for, see serverWait) is longer than
  // max_server_wait_us. Each call counts one retry.
  [[nodiscard]] std::optional<Micros> next(std::optional<Micros> server_wait_us = std::nullopt);

  // After a call went through: the next refusal starts again from base.
  void reset() noexcept { retries_ = 0; }

  [[nodiscard]] int retries() const noexcept { return retries_; }

 private:
  [[nodiscard]] Micros draw(Micros ceiling_us);  // uniform in [0, ceiling_us]

  BackoffOptions options_;
  int retries_ = 0;
  std::mt19937_64 random_;
};

}  // namespace sluice
