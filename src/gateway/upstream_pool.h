// Kept-alive connections to the upstreams, per I/O loop: a connection is used by one request at a
// time and parked between requests on the loop that made it, so no lock is taken to reuse one and
// it never changes threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include "gateway/gateway_config.h"
#include "server/drain_aware_socket.h"

namespace sluice::gateway {

using UpstreamConnection = std::unique_ptr<server::DrainAwareSocket>;

// How many parked connections were closed because the upstream closed them or sent bytes while
// they were parked: shared by a gateway's pools, which may outlive it (they live with their loop).
using ParkedClosedCount = std::shared_ptr<std::atomic<std::uint64_t>>;

// The idle connections of one loop. Not thread-safe: used only from its loop.
//
// Nothing may arrive on a parked connection while no request is out on it. Whatever does (an
// end of stream, a reset, or bytes an upstream sent late, such as a body behind a HEAD answer or
// past its Content-Length) would be read as the next request's answer, and every answer on that
// connection after it would be one behind: one client's answer sent to another. So a parked
// connection is watched, as nginx's keepalive module watches its parked connections: a read of
// one byte waits on it in the loop's reactor, and whatever ends that read (bytes, end of stream,
// an error) marks the connection spoken, to be closed instead of reused. Parking costs one peek
// (a recv), for an end of stream that came right behind the answer and so raises no event of its
// own (see giveBack); after that the reactor only waits for the next event, and taking the
// connection cancels the watch in user space. An earlier version peeked only at connections
// parked for a millisecond or more, and so let through what came sooner, including that end of
// stream: the next request sent on the connection then waited for response_timeout.
//
// What the watch cannot see is an event the loop has not collected yet (epoll_wait runs once per
// pass over the loop's ready handlers), or whose handler waits in the loop's queue: a connection
// the upstream closed (or reset) just then is reused, its request fails with that end of stream
// or reset, and one without a body is sent again on a fresh connection
// (ProxySession::retryOnFreshConnection). Late bytes in that window are read as the answer (a
// 502 if they do not parse), as by nginx. A request that could not be sent again is checked by a
// peek as well (takeIdle's `verify`).
//
// A connection parked for its upstream's idle_timeout is closed: by one timer per pool, set for
// the oldest parked connection, so an idle gateway does not hold its upstreams' connections (or,
// once the upstream has closed them, their descriptors) for ever.
class UpstreamPool {
 public:
  UpstreamPool(boost::asio::io_context& loop, const std::vector<Upstream>& upstreams,
               ParkedClosedCount parked_closed);

  // A parked connection to `upstream` on which nothing arrived, or null. The newest first: it is
  // the least likely to have been closed by the upstream's idle timeout. With `verify`, also
  // peeked at, at the cost of a system call, for what the loop has not collected yet: for a
  // request that could not be sent again on a fresh connection if this one turned out dead.
  [[nodiscard]] UpstreamConnection takeIdle(std::size_t upstream, bool verify);

  // Parks a connection whose last response was complete and kept alive; closes it when the
  // upstream already has max_idle_per_thread parked.
  void giveBack(std::size_t upstream, UpstreamConnection connection);

  // Closes every parked connection (shutdown).
  void closeAll();

  [[nodiscard]] std::size_t idleCount(std::size_t upstream) const noexcept {
    return idle_[upstream].size();
  }

 private:
  using Clock = std::chrono::steady_clock;
  // A parked connection's watch: the byte its read waits for, and whether that read ended.
  struct Watch {
    char byte = 0;
    bool spoke = false;
  };
  struct Parked {
    UpstreamConnection connection;
    Clock::time_point since;
    std::shared_ptr<Watch> watch;  // shared with the watch's handler, which may run after a take
  };

  // Sets the timer for the earliest moment a parked connection reaches its idle timeout, if
  // earlier than the one set (or none is set).
  void expireAt(Clock::time_point when);
  // Closes the connections parked for their idle timeout or longer, and sets the timer for the
  // next one.
  void closeExpired();

  std::vector<std::size_t> max_idle_;
  std::vector<Clock::duration> idle_timeout_;
  // Per upstream, oldest first: parked at the back, and taken from the back.
  std::vector<std::vector<Parked>> idle_;
  ParkedClosedCount parked_closed_;
  boost::asio::steady_timer expiry_;
  std::optional<Clock::time_point> expiry_at_;  // when the timer is set for, if it is
};

// A gateway's pools, one per loop. Each pool belongs to its loop (an io_context service holds
// it), so parked sockets are destroyed with their loop, never after it, whatever order the
// gateway and the loops go in. Thread-safe.
class UpstreamPools {
 public:
  explicit UpstreamPools(std::vector<Upstream> upstreams);

  // The pool of `loop` for this gateway, made on first use. The reference stays valid for the
  // life of `loop`.
  [[nodiscard]] UpstreamPool& forLoop(boost::asio::io_context& loop);

  // Closes the parked connections on every loop (posted to each; a stopped loop closes them
  // when it is destroyed).
  void closeIdle();

  [[nodiscard]] const std::vector<Upstream>& upstreams() const noexcept { return upstreams_; }
  // Thread-safe: parked connections closed because the upstream spoke or closed on them.
  [[nodiscard]] std::uint64_t parkedClosed() const noexcept { return parked_closed_->load(); }

 private:
  std::uint64_t id_;  // names this gateway's pools in each loop's registry
  std::vector<Upstream> upstreams_;
  ParkedClosedCount parked_closed_ = std::make_shared<std::atomic<std::uint64_t>>(0);
  std::mutex mutex_;
  std::vector<boost::asio::io_context*> loops_;
};

}  // namespace sluice::gateway
