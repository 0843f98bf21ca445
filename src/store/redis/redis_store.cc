#include "store/redis/redis_store.h"

#include <algorithm>
#include <future>

#include "store/redis/script_call.h"

namespace sluice {

RedisStore::Lane::Lane(boost::asio::io_context& lane_loop, const RedisStoreOptions& options)
    : loop(lane_loop),
      pool(std::make_unique<redis::ServerPool>(lane_loop, options.host, options.port,
                                               options.connections, options.auth,
                                               options.database)),
      batcher(std::make_shared<redis::DecideBatcher>(
          *pool, options.calls_in_flight, !options.use_caller_clock,
          std::chrono::microseconds(options.timeout_us))) {
  pool->start();
}

void RedisStore::Lane::decide(std::span<redis::DecideBatcher::Request> requests) {
  if (batcher == nullptr) {  // closed: the store is shutting down
    for (auto& request : requests) request.done(StoreStatus::kUnavailable);
    return;
  }
  batcher->decide(requests);
}

void RedisStore::Lane::close() {
  batcher->close();  // fails waiting requests, sends no more
  pool.reset();      // fails calls in flight
  batcher.reset();
}

RedisStore::RedisStore(RedisStoreOptions options)
    : options_(std::move(options)),
      inbox_(loop_.io(), [this](std::vector<redis::DecideBatcher::Request>& requests) {
        own_lane_->decide(requests);
      }) {
  // The request loops are not running yet (a precondition): their lanes can be made from here.
  for (boost::asio::io_context* request_loop : options_.request_loops) {
    request_lanes_.push_back(std::make_unique<Lane>(*request_loop, options_));
  }
  loop_.runAndWait([this] { own_lane_ = std::make_unique<Lane>(loop_.io(), options_); });
}

RedisStore::~RedisStore() {
  closing_.store(true);
  loop_.runAndWait([this] { own_lane_->close(); });
  loop_.stop();
  // The request loops have stopped (a precondition): nothing else touches their lanes.
  for (const auto& lane : request_lanes_) lane->close();
}

StoreStatus RedisStore::apply(std::span<const LimitCheck> checks, const Clock& clock,
                              std::span<Outcome> outcomes) noexcept {
  // Waiting on the loop that must deliver the answer would never end.
  const bool on_a_store_loop =
      loop_.runningHere() ||
      std::any_of(request_lanes_.begin(), request_lanes_.end(), [](const auto& lane) {
        return lane->loop.get_executor().running_in_this_thread();
      });
  if (on_a_store_loop) return StoreStatus::kUnavailable;
  std::promise<StoreStatus> result;
  applyAsync(checks, clock, outcomes, [&result](StoreStatus status) { result.set_value(status); });
  return result.get_future().get();
}

void RedisStore::applyAsync(std::span<const LimitCheck> checks, const Clock& clock,
                            std::span<Outcome> outcomes, StoreCallback done) noexcept {
  if (checks.empty()) return done(StoreStatus::kOk);
  if (closing_.load()) return done(StoreStatus::kUnavailable);
  auto call = redis::ScriptCall::make(
      "decide", options_.key_prefix, checks,
      options_.use_caller_clock ? std::optional<Micros>(clock.now()) : std::nullopt);
  const auto deadline =
      redis::DecideBatcher::Clock::now() + std::chrono::microseconds(options_.timeout_us);
  for (const auto& lane : request_lanes_) {
    if (!lane->loop.get_executor().running_in_this_thread()) continue;
    redis::DecideBatcher::Request request{std::move(call), outcomes, deadline, std::move(done)};
    return lane->decide(std::span(&request, 1));
  }
  inbox_.push({std::move(call), outcomes, deadline, std::move(done)});
}

}  // namespace sluice
