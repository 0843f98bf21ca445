#include "store/redis/cluster_store.h"

#include <algorithm>
#include <optional>
#include <string>

#include <hiredis/hiredis.h>

#include "store/redis/cluster_routed_call.h"
#include "store/redis/cluster_slots.h"
#include "store/redis/script_call.h"

namespace sluice {
namespace redis {

// One slot's share of a request: the checks whose keys hash to it, decided in one script call.
struct SlotGroup {
  // kOnError: failed in Redis, then decided by the limits' on_error (nothing consumed in Redis).
  enum class State : std::uint8_t { kPending, kAllowed, kDenied, kFailed, kOnError };

  std::uint16_t slot = 0;
  std::vector<std::size_t> checks;  // indices into the request's checks, in request order
  std::vector<std::string> keys;
  std::vector<const LimitSpec*> specs;
  std::vector<std::uint64_t> costs;
  std::vector<Outcome> outcomes;
  Micros now_us = 0;  // the time the decide reply gave, which a refund must name
  State state = State::kPending;
};

struct ClusterRequest {
  std::span<const LimitCheck> checks;  // valid until done, as the caller promises
  const Clock* clock = nullptr;
  std::vector<SlotGroup> groups;
  std::optional<Micros> now_us;  // nullopt: Redis TIME
  std::span<Outcome> outcomes;
  StoreCallback done;
  std::chrono::steady_clock::time_point deadline;
  std::size_t pending = 0;  // calls (decides, then refunds) not answered yet
  StoreStatus status = StoreStatus::kOk;
  bool denied = false;
  bool refunded = false;  // refunds were sent for the slots that consumed (not at shutdown)
};

}  // namespace redis

namespace {

using redis::ClusterRequest;
using redis::RoutedCall;
using redis::SlotGroup;
using SteadyClock = std::chrono::steady_clock;

std::shared_ptr<ClusterRequest> makeRequest(std::span<const LimitCheck> checks, const Clock& clock,
                                            std::string_view key_prefix,
                                            std::optional<Micros> now_us,
                                            std::span<Outcome> outcomes, StoreCallback done,
                                            SteadyClock::time_point deadline) {
  auto request = std::make_shared<ClusterRequest>();
  request->checks = checks;
  request->clock = &clock;
  request->now_us = now_us;
  request->outcomes = outcomes;
  request->done = std::move(done);
  request->deadline = deadline;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    std::string key = redis::redisKey(key_prefix, checks[i]);
    const std::uint16_t slot = redis::hashSlot(key);
    auto group = std::find_if(request->groups.begin(), request->groups.end(),
                              [slot](const SlotGroup& g) { return g.slot == slot; });
    if (group == request->groups.end()) {
      group = request->groups.emplace(request->groups.end());
      group->slot = slot;
    }
    group->checks.push_back(i);
    group->keys.push_back(std::move(key));
    group->specs.push_back(checks[i].spec);
    group->costs.push_back(checks[i].cost);
  }
  for (SlotGroup& group : request->groups) group.outcomes.resize(group.checks.size());
  return request;
}

// A group that consumed and was refunded reports its state as it is now: as many units back as
// the request's checks of each key took, up to and including this one.
void restoreRefunded(SlotGroup& group) {
  for (std::size_t i = 0; i < group.outcomes.size(); ++i) {
    std::uint64_t taken = 0;
    for (std::size_t j = 0; j <= i; ++j) {
      if (group.keys[j] == group.keys[i]) taken += group.costs[j];
    }
    Outcome& outcome = group.outcomes[i];
    outcome.remaining = std::min(outcome.limit, outcome.remaining + taken);
  }
}

}  // namespace

RedisClusterStore::RedisClusterStore(RedisClusterStoreOptions options)
    : options_(std::move(options)) {
  loop_.runAndWait([this] {
    refresh_timer_ = std::make_unique<boost::asio::steady_timer>(loop_.io());
    for (const std::string& seed : options_.seeds) node(seed);
    refreshNow();
  });
}

RedisClusterStore::~RedisClusterStore() {
  closing_.store(true);
  loop_.runAndWait([this] {
    stopping_ = true;
    refresh_timer_->cancel();
    slots_.fill(nullptr);
    // Closing the pools fails their calls in flight; stopping_ keeps those callbacks from
    // touching the nodes being destroyed.
    std::map<std::string, Node> doomed = std::move(nodes_);
    nodes_.clear();
    doomed.clear();
    signalIfDrained();  // closing the pools may have finished the last of them already
  });
  // Requests waiting to look for their slot's master again see stopping_ within kWaitPoll
  // (cluster_routing.cc).
  drained_.get_future().wait();
  loop_.stop();
}

StoreStatus RedisClusterStore::apply(std::span<const LimitCheck> checks, const Clock& clock,
                                     std::span<Outcome> outcomes) noexcept {
  if (loop_.runningHere()) return StoreStatus::kUnavailable;  // would wait on itself
  std::promise<StoreStatus> result;
  applyAsync(checks, clock, outcomes, [&result](StoreStatus status) { result.set_value(status); });
  return result.get_future().get();
}

void RedisClusterStore::applyAsync(std::span<const LimitCheck> checks, const Clock& clock,
                                   std::span<Outcome> outcomes, StoreCallback done) noexcept {
  if (checks.empty()) return done(StoreStatus::kOk);
  if (closing_.load()) return done(StoreStatus::kUnavailable);
  auto request = makeRequest(
      checks, clock, options_.key_prefix,
      options_.use_caller_clock ? std::optional<Micros>(clock.now()) : std::nullopt, outcomes,
      std::move(done), SteadyClock::now() + std::chrono::microseconds(options_.timeout_us));
  loop_.post([this, request] { start(request); });
}

void RedisClusterStore::start(const std::shared_ptr<ClusterRequest>& request) {
  if (stopping_) return request->done(StoreStatus::kUnavailable);
  ++outstanding_;
  // Counted before sending: a call may be answered (failed) before the next is sent.
  request->pending = request->groups.size();
  for (std::size_t g = 0; g < request->groups.size(); ++g) {
    SlotGroup& group = request->groups[g];
    auto routed = std::make_shared<RoutedCall>();
    routed->call = std::make_shared<const redis::ScriptCall>(
        redis::ScriptCall::make("decide", group.keys, group.specs, group.costs, request->now_us));
    routed->slot = group.slot;
    routed->deadline = request->deadline;
    routed->handler = [this, request, g](const redisReply* reply, redis::ServerPool* from) {
      onDecided(request, g, reply, from);
    };
    routed->decide = true;
    route(routed);
  }
}

void RedisClusterStore::onDecided(const std::shared_ptr<ClusterRequest>& request, std::size_t g,
                                  const redisReply* reply, redis::ServerPool* from) {
  SlotGroup& group = request->groups[g];
  std::optional<std::string> unreadable;
  if (reply != nullptr) unreadable = redis::readDecideReply(reply, group.outcomes, group.now_us);
  // An error reply is the pool's to log; a reply of another shape is logged here.
  if (unreadable && from != nullptr && redis::errorText(reply).empty()) {
    from->logUnreadableReply(*unreadable);
  }
  if (reply == nullptr || unreadable) {
    group.state = SlotGroup::State::kFailed;
  } else {
    // The script is all-or-nothing within the slot: any denial means nothing was consumed.
    const bool allowed = std::all_of(group.outcomes.begin(), group.outcomes.end(),
                                     [](const Outcome& outcome) { return outcome.allowed; });
    group.state = allowed ? SlotGroup::State::kAllowed : SlotGroup::State::kDenied;
  }
  if (--request->pending == 0) settle(request);
}

void RedisClusterStore::settle(const std::shared_ptr<ClusterRequest>& request) {
  bool failed = false;
  bool admitted_somewhere = false;
  for (const SlotGroup& group : request->groups) {
    failed = failed || group.state == SlotGroup::State::kFailed;
    admitted_somewhere = admitted_somewhere || group.state == SlotGroup::State::kAllowed;
    request->denied = request->denied || group.state == SlotGroup::State::kDenied;
  }
  // Whether some slot failed, whoever decided its checks: its time is spent.
  const bool some_failed = failed;
  if (failed && !request->denied && admitted_somewhere && options_.on_error != nullptr) {
    // The limits on the slots that answered stay enforced by Redis; only the failed slots'
    // limits follow their on_error, as they would in a request of their own. (As a whole, the
    // request would go to on_error, and a limit whose master is fine could be waived, or
    // refused as unavailable.) Should on_error refuse, the slots that consumed are refunded.
    decideFailedByPolicy(*request);
    failed = false;
  }
  // A slot that denied settles the request, whatever another slot's failure: all-or-nothing
  // means it is denied. (Reported unavailable, it would have gone to on_error, which may
  // admit a client that its own reachable slot had just refused.) The failed slot's checks
  // say they could not be decided.
  if (failed && !request->denied) request->status = StoreStatus::kUnavailable;
  if (failed && request->denied) {
    for (SlotGroup& group : request->groups) {
      if (group.state != SlotGroup::State::kFailed) continue;
      for (Outcome& outcome : group.outcomes) {
        outcome = Outcome{};
        outcome.reason = DenyReason::kStoreUnavailable;
      }
    }
  }
  if (!failed && !request->denied) return finish(request);
  // Some slot did not admit: give back what the others consumed. The refund names the time each
  // decide ran at, so it undoes exactly that consumption. A refund that fails leaves the limit
  // over-counted until it drains; it never admits more.
  const std::size_t refunds = static_cast<std::size_t>(std::count_if(
      request->groups.begin(), request->groups.end(),
      [](const SlotGroup& group) { return group.state == SlotGroup::State::kAllowed; }));
  if (refunds == 0 || stopping_) return finish(request);
  request->refunded = true;
  // A denial reports the state after the refunds, so it waits for them (one more round trip).
  // When a slot failed, its time is already spent (a hung master takes the whole timeout), and
  // the answer does not depend on them (restoreRefunded reads the decide replies): answer now.
  const bool wait = !some_failed;
  const Deadline deadline =
      SteadyClock::now() + (wait ? std::chrono::microseconds(options_.timeout_us)
                                 : redis::ServerPool::kLateRefundTimeout);
  request->pending = refunds;
  for (const SlotGroup& group : request->groups) {
    if (group.state != SlotGroup::State::kAllowed) continue;
    auto call =
        redis::ScriptCall::make("refund", group.keys, group.specs, group.costs, group.now_us);
    refund(std::move(call), group.slot, deadline, [this, request, wait] {
      if (wait && --request->pending == 0) finish(request);
    });
  }
  if (!wait) finish(request);
}

void RedisClusterStore::decideFailedByPolicy(ClusterRequest& request) {
  std::vector<LimitCheck> checks;
  std::vector<Outcome*> outcomes_of;  // where each decided check's outcome goes
  for (SlotGroup& group : request.groups) {
    if (group.state != SlotGroup::State::kFailed) continue;
    group.state = SlotGroup::State::kOnError;
    for (std::size_t i = 0; i < group.checks.size(); ++i) {
      checks.push_back(request.checks[group.checks[i]]);
      outcomes_of.push_back(&group.outcomes[i]);
    }
  }
  std::vector<Outcome> outcomes(checks.size());
  request.status = options_.on_error->decide(checks, *request.clock, outcomes);
  for (std::size_t j = 0; j < outcomes.size(); ++j) {
    *outcomes_of[j] = outcomes[j];
    request.denied = request.denied || !outcomes[j].allowed;
  }
}

void RedisClusterStore::refund(redis::ScriptCall call, std::uint16_t slot, Deadline deadline,
                               std::function<void()> then) {
  ++outstanding_;
  auto routed = std::make_shared<RoutedCall>();
  routed->call = std::make_shared<const redis::ScriptCall>(std::move(call));
  routed->slot = slot;
  routed->deadline = deadline;
  routed->handler = [this, then = std::move(then)](const redisReply*, redis::ServerPool*) {
    then();
    release();
  };
  route(routed);
}

void RedisClusterStore::undoLate(const redis::ScriptCall& decided, std::uint16_t slot,
                                 const redisReply* reply) {
  if (stopping_) return;
  for (redis::ScriptCall& call : redis::refundsOfLateReply(decided, reply)) {
    refund(std::move(call), slot, SteadyClock::now() + redis::ServerPool::kLateRefundTimeout,
           [] {});
  }
}

void RedisClusterStore::release() {
  --outstanding_;
  signalIfDrained();
}

void RedisClusterStore::signalIfDrained() {
  if (!stopping_ || outstanding_ > 0 || drained_signalled_) return;
  drained_signalled_ = true;
  drained_.set_value();
}

void RedisClusterStore::finish(const std::shared_ptr<ClusterRequest>& request) {
  if (request->status != StoreStatus::kUnavailable) {
    for (SlotGroup& group : request->groups) {
      if (request->refunded && group.state == SlotGroup::State::kAllowed) restoreRefunded(group);
      for (std::size_t i = 0; i < group.checks.size(); ++i) {
        request->outcomes[group.checks[i]] = group.outcomes[i];
      }
    }
  }
  request->done(request->status);
  release();
}

}  // namespace sluice
