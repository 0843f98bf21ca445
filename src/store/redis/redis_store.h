// Limits shared by every Sluice node through one Redis server. Each request's checks go to Redis
// in one script call (one round trip, all-or-nothing), or, under load, with other requests in
// one batch call (each request still all-or-nothing), over a few pipelined connections owned by
// the store's own loop thread. The script reads Redis's clock, so nodes' clocks don't matter.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "store/loop_inbox.h"
#include "store/redis/decide_batcher.h"
#include "store/redis/loop_thread.h"
#include "store/redis/server_pool.h"
#include "store/store.h"

namespace sluice {

struct RedisStoreOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::size_t connections = 2;
  // Decide calls outstanding at once; requests arriving meanwhile are batched into the next
  // call (decide_batcher.h).
  std::size_t calls_in_flight = 2;
  Micros timeout_us = 20'000;  // per call; past it the call is unavailable
  std::string key_prefix = "sluice:";
  // Tests: decide at the caller's clock instead of Redis TIME, to replay exact instants.
  bool use_caller_clock = false;
};

class RedisStore final : public Store {
 public:
  // Connects in the background; until connected, calls are unavailable at once.
  explicit RedisStore(RedisStoreOptions options);
  ~RedisStore() override;

  // Blocks for at most the timeout. Must not be called from a callback of this store.
  [[nodiscard]] StoreStatus apply(std::span<const LimitCheck> checks, const Clock& clock,
                                  std::span<Outcome> outcomes) noexcept override;
  // `done` runs on the store's loop thread.
  void applyAsync(std::span<const LimitCheck> checks, const Clock& clock,
                  std::span<Outcome> outcomes, StoreCallback done) noexcept override;

  // Thread-safe: whether some connection is up.
  [[nodiscard]] bool connected() const noexcept { return connected_.load(); }

 private:
  RedisStoreOptions options_;
  redis::LoopThread loop_;
  std::unique_ptr<redis::ServerPool> pool_;         // on loop_
  std::shared_ptr<redis::DecideBatcher> batcher_;   // on loop_, over pool_
  LoopInbox<redis::DecideBatcher::Request> inbox_;  // request threads -> loop_
  std::atomic<bool> connected_{false};
};

}  // namespace sluice
