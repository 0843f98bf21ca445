// A fixed set of event loops, one thread each, like nginx's workers. A connection lives on one
// loop for its whole life, so it needs no strand and no loop shares a lock with another: with a
// single multi-threaded io_context, the scheduler's lock capped the server at half of nginx's
// request rate on two cores.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace sluice::server {

class IoPool {
 public:
  // Precondition: loops >= 1.
  explicit IoPool(std::size_t loops);
  ~IoPool();
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  // Starts a thread per loop but the first, and runs the first on the calling thread until
  // stop(). Or, with `block` false, starts every loop on its own thread and returns.
  void run(bool block = true);
  // Thread-safe. Stops every loop; run() returns once they have.
  void stop();

  // Thread-safe. The loops in turn, for spreading new connections.
  [[nodiscard]] boost::asio::io_context& next() noexcept;
  [[nodiscard]] boost::asio::io_context& first() noexcept { return *loops_.front(); }
  [[nodiscard]] std::vector<boost::asio::io_context*> loops() const;

 private:
  using WorkGuard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
  std::vector<std::unique_ptr<boost::asio::io_context>> loops_;
  std::vector<WorkGuard> guards_;
  std::vector<std::thread> threads_;
  std::atomic<std::size_t> next_{0};
};

}  // namespace sluice::server
