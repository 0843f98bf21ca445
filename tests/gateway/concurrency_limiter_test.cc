// The concurrency limiter: slots per key, given back by the permit on every path.
#include "gateway/concurrency_limiter.h"

#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sluice::gateway {
namespace {

// N permits per key; the N+1th is refused; other keys are independent.
TEST(ConcurrencyLimiterTest, AtMostNPerKey) {
  auto limiter = ConcurrencyLimiter::create();
  auto a1 = limiter->tryAcquire("a", 2);
  auto a2 = limiter->tryAcquire("a", 2);
  ASSERT_TRUE(a1 && a2);
  EXPECT_FALSE(limiter->tryAcquire("a", 2));
  EXPECT_TRUE(limiter->tryAcquire("b", 2));
  EXPECT_EQ(limiter->inFlight("a"), 2u);
}

// Destroying, moving and reassigning permits each give a slot back exactly once.
TEST(ConcurrencyLimiterTest, PermitsReleaseOnceOnEveryPath) {
  auto limiter = ConcurrencyLimiter::create();
  {
    auto permit = limiter->tryAcquire("k", 1);
    ASSERT_TRUE(permit);
    std::vector<ConcurrencyLimiter::Permit> held;
    held.push_back(std::move(*permit));  // the moved-from permit holds nothing
    permit.reset();
    EXPECT_EQ(limiter->inFlight("k"), 1u);
  }
  EXPECT_EQ(limiter->inFlight("k"), 0u);
  auto first = limiter->tryAcquire("k", 2);
  auto second = limiter->tryAcquire("k", 2);
  *first = std::move(*second);  // first's slot goes back, second's moves over
  EXPECT_EQ(limiter->inFlight("k"), 1u);
  first.reset();
  second.reset();
  EXPECT_EQ(limiter->inFlight("k"), 0u);
}

// A permit outliving everyone else's handle on the limiter still releases safely.
TEST(ConcurrencyLimiterTest, PermitKeepsLimiterAlive) {
  auto limiter = ConcurrencyLimiter::create();
  auto permit = limiter->tryAcquire("k", 1);
  limiter.reset();
  permit.reset();  // no crash (ASan would tell)
}

// Two threads hammering one key never exceed the bound and end at zero.
TEST(ConcurrencyLimiterTest, ThreadSafe) {
  auto limiter = ConcurrencyLimiter::create();
  std::atomic<int> over{0};
  auto work = [&] {
    for (int i = 0; i < 20000; ++i) {
      auto permit = limiter->tryAcquire("hot", 3);
      if (permit && limiter->inFlight("hot") > 3) ++over;
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  EXPECT_EQ(over.load(), 0);
  EXPECT_EQ(limiter->inFlight("hot"), 0u);
}

}  // namespace
}  // namespace sluice::gateway
