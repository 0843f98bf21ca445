#include "store/redis/redis_store.h"

#include <future>

#include "store/redis/script_call.h"

namespace sluice {

RedisStore::RedisStore(RedisStoreOptions options) : options_(std::move(options)) {
  loop_.runAndWait([this] {
    pool_ = std::make_unique<redis::ServerPool>(loop_.io(), options_.host, options_.port,
                                                options_.connections);
    pool_->start();
  });
}

RedisStore::~RedisStore() {
  loop_.runAndWait([this] { pool_.reset(); });  // fails calls in flight on the loop
  loop_.stop();
}

StoreStatus RedisStore::apply(std::span<const LimitCheck> checks, const Clock& clock,
                              std::span<Outcome> outcomes) noexcept {
  if (loop_.runningHere()) return StoreStatus::kUnavailable;  // would wait on itself
  std::promise<StoreStatus> result;
  applyAsync(checks, clock, outcomes, [&result](StoreStatus status) { result.set_value(status); });
  return result.get_future().get();
}

void RedisStore::applyAsync(std::span<const LimitCheck> checks, const Clock& clock,
                            std::span<Outcome> outcomes, StoreCallback done) noexcept {
  if (checks.empty()) return done(StoreStatus::kOk);
  auto call = std::make_shared<const redis::ScriptCall>(redis::ScriptCall::make(
      "decide", options_.key_prefix, checks,
      options_.use_caller_clock ? std::optional<Micros>(clock.now()) : std::nullopt));
  loop_.post([this, call, outcomes, done = std::move(done)]() mutable {
    if (pool_ == nullptr) return done(StoreStatus::kUnavailable);  // shutting down
    connected_.store(pool_->connected());
    pool_->call(call, std::chrono::microseconds(options_.timeout_us),
                [outcomes, done = std::move(done)](const redisReply* reply, std::string_view) {
                  Micros now_us = 0;
                  if (reply == nullptr || redis::readDecideReply(reply, outcomes, now_us)) {
                    return done(StoreStatus::kUnavailable);
                  }
                  done(StoreStatus::kOk);
                });
  });
}

}  // namespace sluice
