// Limits shared by every Sluice node through one Redis server. Each request's checks go to Redis
// in one script call (one round trip, all-or-nothing), or, under load, with other requests in
// one batch call (each request still all-or-nothing), over a few connections. The script reads
// Redis's clock, so nodes' clocks don't matter.
//
// Where the connections live: each event loop named in `request_loops` (the server's I/O
// threads) gets connections and a batcher of its own, so a decision asked for on one of those
// threads is sent, answered and handed back on that thread, with no hop to another thread and
// back. Callers on any other thread go through the store's own loop thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "store/loop_inbox.h"
#include "store/redis/decide_batcher.h"
#include "store/redis/loop_thread.h"
#include "store/redis/server_pool.h"
#include "store/store.h"

namespace sluice {

struct RedisStoreOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::size_t connections = 2;  // per loop: the store's own, and each of request_loops
  // Decide calls outstanding at once per loop; requests arriving meanwhile are batched into the
  // next call (decide_batcher.h). One per loop: with a lane on each request loop, the store as
  // a whole already has several calls out, and fewer, larger batches spend less of Redis's and
  // this process's CPU on round trips (README, Benchmarks).
  std::size_t calls_in_flight = 1;
  // Per call, from when it is sent; past it the call is unavailable. A request waits at most
  // this long to be sent (behind the calls out), so a decision waits for Redis at most twice it.
  Micros timeout_us = 20'000;
  std::string key_prefix = "sluice:";
  redis::RedisAuth auth{};  // sent on every connection when it has a password
  int database = 0;         // SELECTed on every connection when not 0
  // Tests: decide at the caller's clock instead of Redis TIME, to replay exact instants.
  bool use_caller_clock = false;
  // The event loops that will call the store (each run by one thread). Precondition: none of
  // them runs while the store is constructed or destroyed (a server makes its store before it
  // starts its loops and destroys it after they stopped).
  std::vector<boost::asio::io_context*> request_loops;
};

class RedisStore final : public Store {
 public:
  // Connects in the background; until connected, calls are unavailable at once.
  explicit RedisStore(RedisStoreOptions options);
  ~RedisStore() override;

  // Blocks for at most twice the timeout (decide_batcher.h). Must not be called from a callback of
  // this store; on one of request_loops (whose thread would have to deliver the answer) it is
  // kUnavailable at once.
  [[nodiscard]] StoreStatus apply(std::span<const LimitCheck> checks, const Clock& clock,
                                  std::span<Outcome> outcomes) noexcept override;
  // Called on one of request_loops, `done` runs on that loop's thread; called elsewhere, on the
  // store's loop thread. Either may be before this returns (nothing connected yet), and once the
  // store is being destroyed `done` runs at once, kUnavailable.
  void applyAsync(std::span<const LimitCheck> checks, const Clock& clock,
                  std::span<Outcome> outcomes, StoreCallback done) noexcept override;

 private:
  // Connections and a batcher on one event loop. Made and closed while nothing runs the loop
  // (or on it); in between used only from the loop's thread.
  struct Lane {
    Lane(boost::asio::io_context& loop, const RedisStoreOptions& options);
    void decide(std::span<redis::DecideBatcher::Request> requests);
    void close();  // fails waiting requests and calls in flight; sends no more

    boost::asio::io_context& loop;
    std::unique_ptr<redis::ServerPool> pool;
    std::shared_ptr<redis::DecideBatcher> batcher;
  };

  RedisStoreOptions options_;
  // Set when destruction starts: the callbacks of the calls it fails may ask for more.
  std::atomic<bool> closing_{false};
  std::vector<std::unique_ptr<Lane>> request_lanes_;  // one per options_.request_loops
  redis::LoopThread loop_;
  std::unique_ptr<Lane> own_lane_;                  // on loop_, for callers on other threads
  LoopInbox<redis::DecideBatcher::Request> inbox_;  // other threads -> own_lane_
};

}  // namespace sluice
