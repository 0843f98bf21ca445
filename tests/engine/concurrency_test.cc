// Threads hammering the engine with a frozen clock: counts must come out exact.
#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "store/memory_store.h"
#include "support/specs.h"

namespace sluice {
namespace {

using testing::kJan2026;
using testing::spec;

constexpr int kThreads = 8;

// Real time only as a watchdog: a run that takes this long has hung.
constexpr auto kWatchdog = std::chrono::seconds(60);

class ConcurrencyTest : public ::testing::TestWithParam<Algorithm> {
 protected:
  FakeClock clock_{kJan2026};
  MemoryStore store_{MemoryStoreOptions{100'000, 16}};
  Engine engine_{store_, clock_};
};

// 8 threads on one key with a frozen clock admit exactly the limit, for every algorithm.
TEST_P(ConcurrencyTest, OneKeyAdmitsExactlyTheLimit) {
  const LimitSpec limit = spec(GetParam(), "500/min", 500);
  std::atomic<int> admitted{0};
  const auto deadline = std::chrono::steady_clock::now() + kWatchdog;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200 && std::chrono::steady_clock::now() < deadline; ++i) {
        const LimitCheck one{"hot", &limit, 1};
        if (engine_.check(std::span(&one, 1)).allowed) admitted.fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(admitted.load(), 500);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ConcurrencyTest,
                         ::testing::Values(Algorithm::kFixedWindow, Algorithm::kSlidingWindowLog,
                                           Algorithm::kSlidingWindowCounter,
                                           Algorithm::kTokenBucket, Algorithm::kTokenBucketInterval,
                                           Algorithm::kLeakyBucketMeter,
                                           Algorithm::kLeakyBucketShaper, Algorithm::kGcra),
                         [](const ::testing::TestParamInfo<Algorithm>& param_info) {
                           return std::string(algorithmName(param_info.param));
                         });

// Under contention, requests over overlapping sets of limits are all-or-nothing: each limit's
// consumption equals the number of admitted requests that include it, and none exceeds its limit.
TEST(ConcurrencyAllOrNothing, OverlappingLimitSets) {
  FakeClock clock(kJan2026);
  MemoryStore store(MemoryStoreOptions{100'000, 16});
  Engine engine(store, clock);
  const LimitSpec a = spec(Algorithm::kFixedWindow, "900/min");
  const LimitSpec b = spec(Algorithm::kTokenBucket, "1/h", 600);
  const LimitSpec c = spec(Algorithm::kSlidingWindowLog, "400/min");
  const std::vector<std::vector<LimitCheck>> sets{
      {{"A", &a, 1}, {"B", &b, 1}},
      {{"A", &a, 1}, {"C", &c, 1}},
      {{"C", &c, 1}, {"B", &b, 1}},
      {{"B", &b, 1}, {"A", &a, 1}, {"C", &c, 1}},
  };
  std::vector<std::atomic<int>> admitted(sets.size());
  const auto deadline = std::chrono::steady_clock::now() + kWatchdog;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      for (int i = 0; i < 500 && std::chrono::steady_clock::now() < deadline; ++i) {
        const std::size_t set = random() % sets.size();
        if (engine.check(sets[set]).allowed) admitted[set].fetch_add(1);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  const auto used = [&](std::string_view key, const LimitSpec& limit) {
    const LimitCheck peek{key, &limit, 0};
    return static_cast<int>(limit.limit() -
                            engine.check(std::span(&peek, 1)).statuses[0].remaining);
  };
  EXPECT_EQ(used("A", a), admitted[0] + admitted[1] + admitted[3]);
  EXPECT_EQ(used("B", b), admitted[0] + admitted[2] + admitted[3]);
  EXPECT_EQ(used("C", c), admitted[1] + admitted[2] + admitted[3]);
  EXPECT_LE(used("A", a), 900);
  EXPECT_LE(used("B", b), 600);
  EXPECT_LE(used("C", c), 400);
  EXPECT_EQ(used("C", c), 400);  // 4000 attempts, C in 3 of 4 sets: it must have filled
}

}  // namespace
}  // namespace sluice
