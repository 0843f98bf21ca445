#include "store/redis/decide_batcher.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

namespace sluice::redis {

DecideBatcher::DecideBatcher(ServerPool& pool, std::size_t max_in_flight, bool merge,
                             std::chrono::microseconds call_timeout)
    : pool_(pool),
      max_in_flight_(merge ? std::max<std::size_t>(1, max_in_flight)
                           : std::numeric_limits<std::size_t>::max()),
      merge_(merge),
      call_timeout_(call_timeout) {}

void DecideBatcher::decide(std::span<Request> requests) {
  for (Request& request : requests) {
    if (closed_) {
      request.done(StoreStatus::kUnavailable);
    } else {
      waiting_.push_back(std::move(request));
    }
  }
  pump();
}

void DecideBatcher::close() {
  closed_ = true;
  std::deque<Request> waiting = std::move(waiting_);
  waiting_.clear();
  for (Request& request : waiting) request.done(StoreStatus::kUnavailable);
}

void DecideBatcher::pump() {
  if (pumping_) return;  // the loop below is already running further up the stack
  pumping_ = true;
  while (!closed_ && in_flight_ < max_in_flight_ && !waiting_.empty()) {
    const Clock::time_point now = Clock::now();
    std::vector<Request> batch;
    // Sized once: growing it by doubling moved every request along and, past a kilobyte, made
    // malloc consolidate its small free blocks each time.
    batch.reserve(std::min(waiting_.size(), kMaxBatchChecks));  // a request has a check or more
    std::size_t checks = 0;
    while (!waiting_.empty()) {
      Request& next = waiting_.front();
      if (next.deadline <= now) {  // waited out its whole timeout behind full calls
        Request expired = std::move(next);
        waiting_.pop_front();
        expired.done(StoreStatus::kUnavailable);
        continue;
      }
      if (!batch.empty() && (!merge_ || checks + next.call.key_count > kMaxBatchChecks)) break;
      checks += next.call.key_count;
      batch.push_back(std::move(next));
      waiting_.pop_front();
    }
    if (!batch.empty()) send(std::move(batch));
  }
  pumping_ = false;
}

void DecideBatcher::send(std::vector<Request> batch) {
  std::shared_ptr<const ScriptCall> call;
  if (batch.size() == 1) {
    call = std::make_shared<const ScriptCall>(std::move(batch.front().call));
  } else {
    std::vector<ScriptCall> decides;
    decides.reserve(batch.size());
    for (Request& request : batch) decides.push_back(std::move(request.call));
    call = std::make_shared<const ScriptCall>(ScriptCall::batch(decides));
  }
  ++in_flight_;
  auto shared_batch = std::make_shared<std::vector<Request>>(std::move(batch));
  auto self = shared_from_this();
  pool_.call(
      call, call_timeout_,
      [self, shared_batch](const redisReply* reply, std::string_view) {
        --self->in_flight_;
        finish(*shared_batch, reply, self->pool_);
        self->pump();
      },
      [self, call](const redisReply* reply) { self->undoLate(*call, reply); });
}

// The requests were answered kUnavailable, which promises that nothing was consumed: give back
// what the late call consumed for each request it admitted. A refund that fails leaves the
// limit over-counted until it drains; it never admits more.
void DecideBatcher::undoLate(const ScriptCall& call, const redisReply* reply) {
  if (closed_) return;
  for (ScriptCall& refund : refundsOfLateReply(call, reply)) {
    pool_.call(std::make_shared<const ScriptCall>(std::move(refund)),
               ServerPool::kLateRefundTimeout, [](const redisReply*, std::string_view) {});
  }
}

// Each request's outcomes from its slice of the reply. A reply that is missing or malformed
// fails the whole batch: the script ran all of it or none of it.
void DecideBatcher::finish(std::vector<Request>& batch, const redisReply* reply, ServerPool& pool) {
  std::size_t total_checks = 0;
  for (const Request& request : batch) total_checks += request.outcomes.size();
  Micros now_us = 0;
  // No reply, or an error reply (the pool logs those), fails every request; so does a reply of
  // another shape, which is logged here.
  const bool answered = reply != nullptr && errorText(reply).empty();
  std::optional<std::string> unreadable;
  if (answered) unreadable = readDecideShape(reply, total_checks, now_us);
  if (unreadable) pool.logUnreadableReply(*unreadable);
  std::size_t first = 0;
  for (Request& request : batch) {
    std::optional<std::string> error;
    if (answered && !unreadable) error = readDecideOutcomes(reply, first, request.outcomes);
    first += request.outcomes.size();
    if (error) pool.logUnreadableReply(*error);
    request.done(answered && !unreadable && !error ? StoreStatus::kOk : StoreStatus::kUnavailable);
  }
}

}  // namespace sluice::redis
