// An io_context with its own thread: where a network store's connections, timers and replies
// live, so request threads never touch hiredis (which is not thread-safe).
#pragma once

#include <optional>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

namespace sluice::redis {

class LoopThread {
 public:
  LoopThread() : work_(io_.get_executor()), thread_([this] { io_.run(); }) {}
  ~LoopThread() { stop(); }
  LoopThread(const LoopThread&) = delete;
  LoopThread& operator=(const LoopThread&) = delete;

  [[nodiscard]] boost::asio::io_context& io() noexcept { return io_; }
  [[nodiscard]] bool runningHere() const noexcept {
    return std::this_thread::get_id() == thread_.get_id();
  }
  template <typename Handler>
  void post(Handler&& handler) {
    boost::asio::post(io_, std::forward<Handler>(handler));
  }
  // Runs `handler` on the loop and waits for it. Not from the loop's own thread.
  template <typename Handler>
  void runAndWait(Handler&& handler);

  // Idempotent. Handlers still queued are dropped.
  void stop() {
    if (!thread_.joinable()) return;
    work_.reset();
    io_.stop();
    thread_.join();
  }

 private:
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
};

}  // namespace sluice::redis

#include <future>

template <typename Handler>
void sluice::redis::LoopThread::runAndWait(Handler&& handler) {
  std::promise<void> finished;
  post([&] {
    handler();
    finished.set_value();
  });
  finished.get_future().wait();
}
