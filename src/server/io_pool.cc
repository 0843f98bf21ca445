#include "server/io_pool.h"

#include <algorithm>

namespace sluice::server {

IoPool::IoPool(std::size_t loops) {
  for (std::size_t i = 0; i < std::max<std::size_t>(1, loops); ++i) {
    // One thread runs each loop. Asio still takes its locks with this hint (only its special
    // UNSAFE hints drop them); dropping the reactor's per-socket lock measured no gain.
    loops_.push_back(std::make_unique<boost::asio::io_context>(1));
    guards_.push_back(boost::asio::make_work_guard(*loops_.back()));
  }
}

IoPool::~IoPool() {
  stop();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

void IoPool::run(bool block) {
  for (std::size_t i = block ? 1 : 0; i < loops_.size(); ++i) {
    threads_.emplace_back([loop = loops_[i].get()] { loop->run(); });
  }
  if (!block) return;
  loops_.front()->run();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

void IoPool::stop() {
  for (auto& loop : loops_) loop->stop();
}

std::vector<boost::asio::io_context*> IoPool::loops() const {
  std::vector<boost::asio::io_context*> loops;
  for (const auto& loop : loops_) loops.push_back(loop.get());
  return loops;
}

boost::asio::io_context& IoPool::next() noexcept {
  return *loops_[next_.fetch_add(1, std::memory_order_relaxed) % loops_.size()];
}

}  // namespace sluice::server
