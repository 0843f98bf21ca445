#include "store/loop_inbox.h"

#include <array>
#include <chrono>
#include <future>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "store/redis/loop_thread.h"
#include "support/stop_first.h"

namespace sluice {
namespace {

using redis::LoopThread;
using testing::StopFirst;

struct Item {
  int producer = 0;
  int sequence = 0;
};

// Items pushed from several threads at once all reach the loop's thread exactly once, each
// producer's in the order it pushed them.
TEST(LoopInbox, DeliversEveryItemOnceInEachProducersOrder) {
  constexpr int kProducers = 4;
  constexpr int kItemsEach = 20'000;
  LoopThread loop;             // an io_context run by one thread, as a store's loop is
  std::vector<Item> received;  // the loop thread's only
  std::promise<void> all_received;
  bool on_loop_thread = true;
  LoopInbox<Item> inbox(loop.io(), [&](std::vector<Item>& items) {
    on_loop_thread = on_loop_thread && loop.io().get_executor().running_in_this_thread();
    received.insert(received.end(), items.begin(), items.end());
    if (received.size() == kProducers * kItemsEach) all_received.set_value();
  });
  const StopFirst stop_first(loop);

  std::vector<std::thread> producers;
  for (int producer = 0; producer < kProducers; ++producer) {
    producers.emplace_back([&inbox, producer] {
      for (int sequence = 0; sequence < kItemsEach; ++sequence) inbox.push({producer, sequence});
    });
  }
  for (std::thread& producer : producers) producer.join();
  ASSERT_EQ(all_received.get_future().wait_for(std::chrono::seconds(30)),
            std::future_status::ready);

  EXPECT_TRUE(on_loop_thread);
  std::array<int, kProducers> next{};
  for (const Item& item : received) {
    ASSERT_EQ(item.sequence, next[static_cast<std::size_t>(item.producer)]) << item.producer;
    ++next[static_cast<std::size_t>(item.producer)];
  }
  for (const int count : next) EXPECT_EQ(count, kItemsEach);
}

// A consumer may push from the loop itself (a completion that starts the next request): the
// item comes in a later drain, not lost and not delivered twice.
TEST(LoopInbox, APushFromTheConsumerComesInALaterDrain) {
  LoopThread loop;  // an io_context run by one thread, as a store's loop is
  std::vector<std::vector<int>> drains;
  std::promise<void> done;
  LoopInbox<int>* self = nullptr;
  LoopInbox<int> inbox(loop.io(), [&](std::vector<int>& items) {
    drains.push_back(items);
    if (items.front() < 3) self->push(items.front() + 1);
    if (items.front() == 3) done.set_value();
  });
  const StopFirst stop_first(loop);
  self = &inbox;
  inbox.push(0);
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(drains, (std::vector<std::vector<int>>{{0}, {1}, {2}, {3}}));
}

}  // namespace
}  // namespace sluice
