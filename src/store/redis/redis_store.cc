#include "store/redis/redis_store.h"

#include <future>
#include <vector>

#include "store/redis/script_call.h"

namespace sluice {

RedisStore::RedisStore(RedisStoreOptions options)
    : options_(std::move(options)),
      inbox_(loop_.io(), [this](std::vector<redis::DecideBatcher::Request>& requests) {
        if (batcher_ == nullptr) {  // shutting down
          for (auto& request : requests) request.done(StoreStatus::kUnavailable);
          return;
        }
        connected_.store(pool_->connected());
        batcher_->decide(requests);
      }) {
  loop_.runAndWait([this] {
    pool_ = std::make_unique<redis::ServerPool>(loop_.io(), options_.host, options_.port,
                                                options_.connections);
    pool_->start();
    batcher_ = std::make_shared<redis::DecideBatcher>(*pool_, options_.calls_in_flight,
                                                      !options_.use_caller_clock);
  });
}

RedisStore::~RedisStore() {
  loop_.runAndWait([this] {
    batcher_->close();  // fails waiting requests, sends no more
    pool_.reset();      // fails calls in flight on the loop
    batcher_.reset();
  });
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
  auto call = redis::ScriptCall::make(
      "decide", options_.key_prefix, checks,
      options_.use_caller_clock ? std::optional<Micros>(clock.now()) : std::nullopt);
  const auto deadline =
      redis::DecideBatcher::Clock::now() + std::chrono::microseconds(options_.timeout_us);
  inbox_.push({std::move(call), outcomes, deadline, std::move(done)});
}

}  // namespace sluice
