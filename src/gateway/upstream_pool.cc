#include "gateway/upstream_pool.h"

#include <algorithm>
#include <atomic>
#include <cerrno>

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include "server/loop_io.h"

namespace sluice::gateway {
namespace {

// A parked connection is dead when the upstream has closed it (recv sees end of stream) or has
// sent something unasked (there is no request to answer); only "nothing to read yet" is alive.
// One non-blocking peek, as a connection is parked (for what came with the answer's own event)
// and before a request that cannot be sent again (for what the loop has not collected yet).
bool looksAlive(server::LoopSocket& socket) {
  if (!socket.is_open()) return false;
  const ssize_t got = server::peekOneByte(socket.native_handle());
  return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

UpstreamPool::UpstreamPool(boost::asio::io_context& loop, const std::vector<Upstream>& upstreams,
                           ParkedClosedCount parked_closed)
    : idle_(upstreams.size()), parked_closed_(std::move(parked_closed)), expiry_(loop) {
  for (const Upstream& upstream : upstreams) {
    max_idle_.push_back(upstream.max_idle_per_thread);
    idle_timeout_.push_back(std::chrono::microseconds(upstream.idle_timeout_us));
  }
}

UpstreamConnection UpstreamPool::takeIdle(std::size_t upstream, bool verify) {
  std::vector<Parked>& idle = idle_[upstream];
  // Parked before this, a connection is past its idle timeout (the timer may not have run yet).
  const auto expired_before = Clock::now() - idle_timeout_[upstream];
  while (!idle.empty()) {
    Parked parked = std::move(idle.back());
    idle.pop_back();
    boost::system::error_code ignored;
    const bool expired = parked.since <= expired_before;
    const bool spoke = parked.watch->spoke || !parked.connection->is_open() ||
                       (verify && !looksAlive(*parked.connection));
    if (!expired && !spoke) {
      parked.connection->cancel(ignored);  // the watch's handler then runs, aborted
      return std::move(parked.connection);
    }
    if (!expired) parked_closed_->fetch_add(1, std::memory_order_relaxed);
    parked.connection->close(ignored);
  }
  return nullptr;
}

void UpstreamPool::giveBack(std::size_t upstream, UpstreamConnection connection) {
  std::vector<Parked>& idle = idle_[upstream];
  if (idle.size() >= max_idle_[upstream] || !connection->is_open()) {
    boost::system::error_code ignored;
    connection->close(ignored);
    return;
  }
  // An end of stream the upstream sent right behind its answer (a lingering close: shutdown
  // after the last write) came with the answer's own event and raises none of its own
  // (DrainAwareSocket), so only a recv sees it: one peek, now. (A watch that began with that
  // recv would have its handler queued behind the loop's other ready work, and a take meanwhile
  // could hand the connection out.)
  if (!looksAlive(*connection)) {
    parked_closed_->fetch_add(1, std::memory_order_relaxed);
    boost::system::error_code ignored;
    connection->close(ignored);
    return;
  }
  // Then the watch waits for the reactor's next event, with no recv first.
  const auto now = Clock::now();
  auto watch = std::make_shared<Watch>();
  connection->expectEndOfStream(false);
  connection->async_read_some(boost::asio::buffer(&watch->byte, 1),
                              [watch](const boost::system::error_code& ec, std::size_t) {
                                if (ec != boost::asio::error::operation_aborted) {
                                  watch->spoke = true;
                                }
                              });
  idle.push_back({std::move(connection), now, std::move(watch)});
  expireAt(now + idle_timeout_[upstream]);
}

void UpstreamPool::expireAt(Clock::time_point when) {
  // Under load the timer is set already, for an older connection: nothing to do.
  if (expiry_at_ && *expiry_at_ <= when) return;
  expiry_at_ = when;
  expiry_.expires_at(when);  // cancels a wait set for later, whose handler then does nothing
  expiry_.async_wait([this](const boost::system::error_code& ec) {
    if (ec == boost::asio::error::operation_aborted) return;
    expiry_at_.reset();
    closeExpired();
  });
}

void UpstreamPool::closeExpired() {
  const auto now = Clock::now();
  for (std::size_t upstream = 0; upstream < idle_.size(); ++upstream) {
    std::vector<Parked>& idle = idle_[upstream];
    const auto expired_before = now - idle_timeout_[upstream];
    const auto live = std::find_if(idle.begin(), idle.end(), [&](const Parked& parked) {
      return parked.since > expired_before;
    });
    for (auto it = idle.begin(); it != live; ++it) {
      boost::system::error_code ignored;
      it->connection->close(ignored);
    }
    idle.erase(idle.begin(), live);
    if (!idle.empty()) expireAt(idle.front().since + idle_timeout_[upstream]);
  }
}

void UpstreamPool::closeAll() {
  for (auto& idle : idle_) {
    for (Parked& parked : idle) {
      boost::system::error_code ignored;
      parked.connection->close(ignored);
    }
    idle.clear();
  }
  expiry_.cancel();
  expiry_at_.reset();
}

namespace {

// The pools living on one loop, by gateway id. Destroyed with the loop: its shutdown() closes
// the parked sockets while the loop's socket services still exist.
class LoopPoolRegistry : public boost::asio::execution_context::service {
 public:
  static inline boost::asio::execution_context::id id;  // NOLINT: asio's service identity

  explicit LoopPoolRegistry(boost::asio::execution_context& context)
      : boost::asio::execution_context::service(context) {}

  UpstreamPool& poolFor(boost::asio::io_context& loop, std::uint64_t gateway,
                        const std::vector<Upstream>& upstreams,
                        const ParkedClosedCount& parked_closed) {
    std::lock_guard lock(mutex_);
    std::unique_ptr<UpstreamPool>& pool = pools_[gateway];
    if (pool == nullptr) pool = std::make_unique<UpstreamPool>(loop, upstreams, parked_closed);
    return *pool;
  }

  UpstreamPool* find(std::uint64_t gateway) {
    std::lock_guard lock(mutex_);
    const auto found = pools_.find(gateway);
    return found == pools_.end() ? nullptr : found->second.get();
  }

 private:
  void shutdown() override {
    std::lock_guard lock(mutex_);
    pools_.clear();
  }

  std::mutex mutex_;
  boost::unordered_flat_map<std::uint64_t, std::unique_ptr<UpstreamPool>> pools_;
};

std::atomic<std::uint64_t> next_gateway_id{1};

}  // namespace

UpstreamPools::UpstreamPools(std::vector<Upstream> upstreams)
    : id_(next_gateway_id.fetch_add(1)), upstreams_(std::move(upstreams)) {}

UpstreamPool& UpstreamPools::forLoop(boost::asio::io_context& loop) {
  {
    std::lock_guard lock(mutex_);
    if (std::find(loops_.begin(), loops_.end(), &loop) == loops_.end()) loops_.push_back(&loop);
  }
  return boost::asio::use_service<LoopPoolRegistry>(loop).poolFor(loop, id_, upstreams_,
                                                                  parked_closed_);
}

void UpstreamPools::closeIdle() {
  std::lock_guard lock(mutex_);
  for (boost::asio::io_context* loop : loops_) {
    boost::asio::post(*loop, [loop, id = id_] {
      if (UpstreamPool* pool = boost::asio::use_service<LoopPoolRegistry>(*loop).find(id)) {
        pool->closeAll();
      }
    });
  }
}

}  // namespace sluice::gateway
