#include "gateway/upstream_pool.h"

#include <sys/socket.h>

namespace sluice::gateway {
namespace {

// A parked connection is dead when the upstream has closed it (recv sees end of stream) or has
// sent something unasked (there is no request to answer); only "nothing to read yet" is alive.
// One non-blocking peek, so a stale connection is noticed before a request is written to it.
bool looksAlive(boost::beast::tcp_stream& stream) {
  if (!stream.socket().is_open()) return false;
  char byte = 0;
  const ssize_t got = ::recv(stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

UpstreamPool::UpstreamPool(const std::vector<Upstream>& upstreams) : idle_(upstreams.size()) {
  for (const Upstream& upstream : upstreams) max_idle_.push_back(upstream.max_idle_per_thread);
}

UpstreamConnection UpstreamPool::takeIdle(std::size_t upstream) {
  std::vector<UpstreamConnection>& idle = idle_[upstream];
  while (!idle.empty()) {
    UpstreamConnection connection = std::move(idle.back());
    idle.pop_back();
    if (looksAlive(*connection)) return connection;
    boost::beast::error_code ignored;
    connection->socket().close(ignored);
  }
  return nullptr;
}

void UpstreamPool::giveBack(std::size_t upstream, UpstreamConnection connection) {
  std::vector<UpstreamConnection>& idle = idle_[upstream];
  if (idle.size() >= max_idle_[upstream] || !connection->socket().is_open()) {
    boost::beast::error_code ignored;
    connection->socket().close(ignored);
    return;
  }
  connection->expires_never();
  idle.push_back(std::move(connection));
}

void UpstreamPool::closeAll() {
  for (auto& idle : idle_) {
    for (UpstreamConnection& connection : idle) {
      boost::beast::error_code ignored;
      connection->socket().close(ignored);
    }
    idle.clear();
  }
}

UpstreamPool& UpstreamPools::forLoop(boost::asio::io_context& loop) {
  std::lock_guard lock(mutex_);
  std::unique_ptr<UpstreamPool>& pool = pools_[&loop];
  if (pool == nullptr) pool = std::make_unique<UpstreamPool>(upstreams_);
  return *pool;
}

}  // namespace sluice::gateway
