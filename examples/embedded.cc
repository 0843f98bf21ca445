// A C++ service limiting its own callers with Sluice linked in: 5 requests per second per user
// with a burst of 5, plus a global ceiling, checked together all-or-nothing.
#include <cstdio>
#include <string>

#include "sluice/sluice.h"

int main() {
  sluice::Limiter limiter;  // in-memory store, system clock

  const auto per_user = sluice::LimitSpec::tokenBucket(sluice::Rate::parse("5/s").value(), 5);
  const auto global = sluice::LimitSpec::gcra(sluice::Rate::parse("1000/s").value(), 100);
  if (!per_user || !global) return 1;

  int admitted = 0;
  for (int request = 1; request <= 8; ++request) {
    const std::string user_key = "user:alice";
    const sluice::LimitCheck checks[] = {{"global", &global.value(), 1},
                                         {user_key, &per_user.value(), 1}};
    const sluice::Decision decision = limiter.check(checks);
    if (decision.allowed) {
      ++admitted;
      std::printf("request %d: allowed, %llu left\n", request,
                  static_cast<unsigned long long>(decision.bindingStatus()->remaining));
    } else {
      std::printf("request %d: 429, retry after %lld ms\n", request,
                  static_cast<long long>(decision.retry_after_us / 1000));
    }
  }
  std::printf("%d of 8 admitted\n", admitted);
  // The burst of 5 always passes; more only if the machine stalled long enough to refill.
  return admitted >= 5 ? 0 : 1;
}
