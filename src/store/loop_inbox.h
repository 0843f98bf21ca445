// Hands items from any thread to an event loop (an io_context run by one thread), waking the
// loop once per burst instead of once per item.
//
// Why: a post to an io_context takes the context's scheduler lock, and when the loop sleeps in
// epoll_wait it interrupts it (an epoll_ctl and a context switch). On the hops between the
// request threads and a Redis store's loop that was, per decision, a post contending with the
// loop's own lock (half a futex call per decision under load) and a third of a wake-up. Here a
// sender appends under a lock held for one push_back, and only the first item of a burst posts;
// the loop then takes every item that arrived meanwhile in one go.
#pragma once

#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

namespace sluice {

template <typename Item>
class LoopInbox {
 public:
  // Runs on the loop with the items in arrival order; it may move from them, and may push().
  using Consumer = std::function<void(std::vector<Item>& items)>;

  // The inbox must outlive the loop's handlers: stop the loop before destroying it. Items still
  // in the inbox when the loop stops are destroyed without being consumed, as a handler still
  // queued on a stopped loop is.
  LoopInbox(boost::asio::io_context& loop, Consumer consume)
      : loop_(loop), consume_(std::move(consume)) {}
  LoopInbox(const LoopInbox&) = delete;
  LoopInbox& operator=(const LoopInbox&) = delete;

  // Thread-safe.
  void push(Item item) {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(item));
      wake = !drain_posted_;
      drain_posted_ = true;
    }
    if (wake) boost::asio::post(loop_, [this] { drain(); });
  }

 private:
  void drain() {
    {
      std::lock_guard lock(mutex_);
      draining_.swap(items_);  // both keep their capacity: no allocation once warmed up
      drain_posted_ = false;
    }
    consume_(draining_);
    draining_.clear();
  }

  boost::asio::io_context& loop_;
  Consumer consume_;
  std::mutex mutex_;
  std::vector<Item> items_;     // guarded by mutex_
  bool drain_posted_ = false;   // guarded by mutex_: a drain is queued on the loop
  std::vector<Item> draining_;  // the loop's only
};

}  // namespace sluice
