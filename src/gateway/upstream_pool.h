// Kept-alive connections to the upstreams, per I/O loop: a connection is used by one request at a
// time and parked between requests on the loop that made it, so no lock is taken to reuse one and
// it never changes threads.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include "gateway/gateway_config.h"

namespace sluice::gateway {

using UpstreamConnection = std::unique_ptr<boost::beast::tcp_stream>;

// The idle connections of one loop. Not thread-safe: used only from its loop.
class UpstreamPool {
 public:
  explicit UpstreamPool(const std::vector<Upstream>& upstreams);

  // A parked connection to `upstream` that still looks open (the peer has not closed it), or
  // null. The newest first: it is the least likely to have been closed by the upstream's idle
  // timeout.
  [[nodiscard]] UpstreamConnection takeIdle(std::size_t upstream);

  // Parks a connection whose last response was complete and kept alive; closes it when the
  // upstream already has max_idle_per_thread parked.
  void giveBack(std::size_t upstream, UpstreamConnection connection);

  // Closes every parked connection (shutdown).
  void closeAll();

  [[nodiscard]] std::size_t idleCount(std::size_t upstream) const noexcept {
    return idle_[upstream].size();
  }

 private:
  std::vector<std::size_t> max_idle_;
  std::vector<std::vector<UpstreamConnection>> idle_;
};

// The pools of every loop. Thread-safe.
class UpstreamPools {
 public:
  explicit UpstreamPools(std::vector<Upstream> upstreams) : upstreams_(std::move(upstreams)) {}

  // The pool of `loop`, made on first use. The reference stays valid for the life of this.
  [[nodiscard]] UpstreamPool& forLoop(boost::asio::io_context& loop);

  [[nodiscard]] const std::vector<Upstream>& upstreams() const noexcept { return upstreams_; }

 private:
  std::vector<Upstream> upstreams_;
  std::mutex mutex_;
  boost::unordered_flat_map<boost::asio::io_context*, std::unique_ptr<UpstreamPool>> pools_;
};

}  // namespace sluice::gateway
