// How a slot's script call finds its master: the slot table (CLUSTER SLOTS, refreshed in the
// background and after failures), MOVED and ASK redirections, and waits for a first connection.
// The request side (grouping checks by slot, refunds, on_error) is in cluster_store.cc.
#include <algorithm>

#include <hiredis/hiredis.h>

#include "store/redis/cluster_routed_call.h"
#include "store/redis/cluster_slots.h"
#include "store/redis/cluster_store.h"
#include "store/redis/script_call.h"

namespace sluice {

namespace {

using redis::RoutedCall;
using SteadyClock = std::chrono::steady_clock;

// A bound on MOVED/ASK hops for one call: a cluster in the middle of a reshard may move a slot
// again, but a loop of redirections means the nodes disagree, and the table must be fetched.
constexpr int kMaxRedirects = 3;
// How often a call waiting for a slot's master (table not fetched yet, or a new node's first
// connection) looks again: short, since it spends the request's own time.
constexpr std::chrono::microseconds kWaitPoll{500};
// Between attempts of a call its node answered TRYAGAIN (a slot half migrated): a migration
// batch takes milliseconds, and polling faster would only load the node moving it.
constexpr std::chrono::microseconds kTryAgainWait{10'000};
// Refreshes caused by MOVED or failures come at most this often, so a burst of redirected
// requests asks the cluster once.
constexpr std::chrono::milliseconds kMinRefreshGap{50};
constexpr std::chrono::milliseconds kLastRefreshBackoff{1000};
// CLUSTER SLOTS runs in the background; it may take longer than a decision may.
constexpr std::chrono::milliseconds kRefreshTimeout{1000};

// The breakers' time: any steady count of microseconds will do, as they only compare instants.
Micros steadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             SteadyClock::now().time_since_epoch())
      .count();
}

}  // namespace

RedisClusterStore::Node* RedisClusterStore::node(const std::string& address) {
  const auto found = nodes_.find(address);
  if (found != nodes_.end()) return &found->second;
  const std::optional<redis::HostPort> parsed = redis::splitHostPort(address);
  if (!parsed) return nullptr;
  Node& made = nodes_[address];
  made.breaker =
      std::make_unique<CircuitBreaker>(options_.breaker_failures, options_.breaker_cooldown_us);
  made.host = parsed->host;
  made.pool = std::make_unique<redis::ServerPool>(loop_.io(), parsed->host, parsed->port,
                                                  options_.connections, options_.auth);
  made.pool->start();
  return &made;
}

void RedisClusterStore::route(const std::shared_ptr<RoutedCall>& routed) {
  if (stopping_) return routed->fail();
  if (SteadyClock::now() >= routed->deadline) {
    calls_out_of_time_.fetch_add(1);
    return routed->fail();
  }
  Node* target = routed->ask_address.empty() ? slots_[routed->slot] : node(routed->ask_address);
  if (target == nullptr) {
    requestRefresh();
    // No master known for the slot. While the first table is on its way, wait for it; once a
    // table names none (the slot is not covered), or every node has refused its connects,
    // waiting would spend each request's whole time: fail at once.
    if (ready_.load() || !anyNodeMayAnswer()) return routed->fail();
    return retryLater(routed, kWaitPoll);
  }
  const bool connected = target->pool->connected();
  // Its first connects are under way: wait for them, within the request's time.
  if (!connected && !target->ever_connected && !target->pool->everyConnectionTried()) {
    return retryLater(routed, kWaitPoll);
  }
  const Micros now_us = steadyMicros();
  routed->attempt_started_us = now_us;
  if (routed->decide && !target->breaker->allow(now_us)) {
    requestRefresh();  // a replica may have replaced it
    return routed->fail();
  }
  if (!connected) {
    // A master that went away, or that refused every first connect: fail fast, and look for
    // the replica that may replace it.
    target->breaker->onFailure(now_us, now_us);
    requestRefresh();
    return routed->fail();
  }
  target->ever_connected = true;
  const auto remaining = std::max(
      std::chrono::microseconds(1),
      std::chrono::duration_cast<std::chrono::microseconds>(routed->deadline - SteadyClock::now()));
  const bool asking = !routed->ask_address.empty();
  target->pool->call(
      routed->call, remaining,
      [this, routed, target](const redisReply* reply, std::string_view error) {
        if (error == redis::ServerPool::kTimedOut) calls_out_of_time_.fetch_add(1);
        onRouted(routed, reply, *target);
      },
      // Not the routed call itself: its handler holds the request, and a reply may come long
      // after the request was answered.
      [this, call = routed->call, slot = routed->slot,
       decide = routed->decide](const redisReply* reply) {
        if (decide) undoLate(*call, slot, reply);
      },
      asking);
}

bool RedisClusterStore::anyNodeMayAnswer() const {
  return std::any_of(nodes_.begin(), nodes_.end(), [](const auto& entry) {
    const redis::ServerPool& pool = *entry.second.pool;
    return pool.connected() || !pool.everyConnectionTried();
  });
}

void RedisClusterStore::onRouted(const std::shared_ptr<RoutedCall>& routed, const redisReply* reply,
                                 Node& asked) {
  routed->ask_address.clear();  // an ASK holds for one attempt only
  if (stopping_) return routed->fail();
  if (reply == nullptr) {
    asked.breaker->onFailure(steadyMicros(), routed->attempt_started_us);
    requestRefresh();  // timed out or lost the connection: the master may have failed over
    return routed->fail();
  }
  asked.breaker->onSuccess();  // any reply, an error or a redirection included: it answers
  // A slot half migrated: the node holds some of the call's keys and not others, and ran
  // nothing. Once the migration ends it answers MOVED; until then, ask again, within the
  // call's time, as cluster clients do. (Failed at once, a healthy cluster's reshard sent
  // the call to on_error.)
  if (redis::errorText(reply).starts_with("TRYAGAIN") && SteadyClock::now() < routed->deadline) {
    return retryLater(routed, kTryAgainWait);
  }
  const std::optional<redis::Redirect> redirect =
      redis::readRedirect(redis::errorText(reply), asked.host);
  // CLUSTERDOWN, script errors and a TRYAGAIN out of time end here, as error replies the caller
  // rejects.
  if (!redirect) return routed->handler(reply, asked.pool.get());
  if (++routed->redirects > kMaxRedirects) {
    requestRefresh();
    return routed->fail();
  }
  if (redirect->kind == redis::Redirect::Kind::kMoved) {
    // The slot has a new master for good: use it now, and learn whatever else moved with it.
    slots_[redirect->slot] = node(redirect->address);
    requestRefresh();
  } else {
    routed->ask_address = redirect->address;
  }
  route(routed);
}

void RedisClusterStore::retryLater(const std::shared_ptr<RoutedCall>& routed,
                                   std::chrono::microseconds wait) {
  auto timer = std::make_shared<boost::asio::steady_timer>(loop_.io());
  timer->expires_at(std::min(routed->deadline, SteadyClock::now() + wait));
  timer->async_wait([this, routed, timer](const boost::system::error_code&) { route(routed); });
}

void RedisClusterStore::requestRefresh() {
  if (stopping_) return;
  if (refresh_in_flight_) {
    refresh_again_ = true;
    return;
  }
  armRefresh(std::max(SteadyClock::now(), last_refresh_ + kMinRefreshGap));
}

void RedisClusterStore::armRefresh(Deadline at) {
  if (stopping_ || (refresh_armed_ && refresh_due_ <= at)) return;
  refresh_armed_ = true;
  refresh_due_ = at;
  refresh_timer_->expires_at(at);  // cancels a later wait
  refresh_timer_->async_wait([this](const boost::system::error_code& error) {
    if (error) return;  // replaced by an earlier wait, or the store is stopping
    refresh_armed_ = false;
    refreshNow();
  });
}

void RedisClusterStore::refreshNow() {
  if (stopping_) return;
  if (refresh_in_flight_) {
    refresh_again_ = true;
    return;
  }
  // Ask the next node that is connected, so one stuck node cannot keep the table stale.
  Node* asked = nullptr;
  for (std::size_t tried = 0; tried < nodes_.size() && asked == nullptr; ++tried) {
    auto it =
        std::next(nodes_.begin(), static_cast<std::ptrdiff_t>(refresh_cursor_++ % nodes_.size()));
    if (it->second.pool->connected()) asked = &it->second;
  }
  if (asked == nullptr) {
    armRefresh(SteadyClock::now() + refresh_backoff_);
    refresh_backoff_ = std::min(refresh_backoff_ * 2, kLastRefreshBackoff);
    return;
  }
  refresh_in_flight_ = true;
  last_refresh_ = SteadyClock::now();
  asked->pool->command({"CLUSTER", "SLOTS"}, kRefreshTimeout,
                       [this, host = asked->host](const redisReply* reply, std::string_view) {
                         onSlots(reply, host);
                       });
}

void RedisClusterStore::onSlots(const redisReply* reply, const std::string& asked_host) {
  refresh_in_flight_ = false;
  if (stopping_) return;
  redis::SlotMap map;
  if (redis::readClusterSlots(reply, asked_host, map)) {
    armRefresh(SteadyClock::now() + refresh_backoff_);  // try the next node
    refresh_backoff_ = std::min(refresh_backoff_ * 2, kLastRefreshBackoff);
    return;
  }
  applySlotMap(map);
  refresh_backoff_ = kFirstRefreshBackoff;
  ready_.store(true);
  if (refresh_again_) {
    refresh_again_ = false;
    armRefresh(SteadyClock::now() + kMinRefreshGap);
  } else {
    armRefresh(SteadyClock::now() + std::chrono::microseconds(options_.refresh_interval_us));
  }
}

void RedisClusterStore::applySlotMap(const redis::SlotMap& map) {
  std::vector<Node*> masters;
  masters.reserve(map.masters.size());
  for (const std::string& address : map.masters) masters.push_back(node(address));
  for (std::size_t slot = 0; slot < slots_.size(); ++slot) {
    const std::int32_t owner = map.owner[slot];
    slots_[slot] = owner == redis::SlotMap::kNoMaster ? nullptr : masters[owner];
  }
}

}  // namespace sluice
