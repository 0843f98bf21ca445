// Limits shared by every Sluice node through a Redis Cluster. Each check's key carries a hash tag
// made from its group (redis_keys.h), so a client's limits share a slot: the checks of a request
// that land in one slot decide in one script call, atomically. Checks spread over several slots
// decide per slot, concurrently, and when any slot denies, the slots that consumed get their
// consumption back (consume-then-refund): the limits may briefly over-count, never over-admit.
//
// Routing follows the cluster: the slot table comes from CLUSTER SLOTS (at start, after every
// MOVED, periodically, and with a backoff while no node answers); MOVED updates the slot and
// retries on its new master; ASK retries once on the importing node with ASKING. TRYAGAIN and
// CLUSTERDOWN make the call unavailable. Everything a request does is bounded by the timeout.
//
// Each node has its own circuit breaker, so a dead master costs only the requests for its
// slots: they fail at once, as do those for a master whose first connects were all refused.
// Given the limits' failure policy, a request some of whose slots answered while others failed
// is decided in part: Redis's answers stand, and the failed slots' checks follow their on_error.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "store/circuit_breaker.h"
#include "store/on_error_policy.h"
#include "store/redis/loop_thread.h"
#include "store/redis/redis_keys.h"
#include "store/redis/server_pool.h"
#include "store/store.h"

namespace sluice {

struct RedisClusterStoreOptions {
  // "host:port" of one or more cluster nodes; the other masters are discovered from them.
  std::vector<std::string> seeds = {"127.0.0.1:7000"};
  std::size_t connections = 2;  // per master
  // Per request, redirections included; a denial across slots waits up to once more for the
  // refunds of the slots that consumed.
  Micros timeout_us = 20'000;
  std::string key_prefix = "sluice:";
  // Sent on every connection to every node when it has a password (the nodes share it).
  redis::RedisAuth auth{};
  // Tests: decide at the caller's clock instead of Redis TIME, to replay exact instants.
  bool use_caller_clock = false;
  // How often the slot table is fetched again when nothing else asks for it.
  Micros refresh_interval_us = 10'000'000;
  // A circuit breaker per node: this many failures in a row on one master make the calls for
  // its slots fail at once for the cooldown (then one probes), while the other masters' slots
  // keep deciding.
  std::size_t breaker_failures = 5;
  Micros breaker_cooldown_us = 1'000'000;
  // The limits' failure policy, for the checks of the slots that failed when the request's other
  // slots admitted it (the result is then kDegraded). Unset, such a request is unavailable as a
  // whole, and the caller's policy decides every check, Redis's answers given back.
  std::shared_ptr<OnErrorPolicy> on_error{};
};

namespace redis {
struct ClusterRequest;
struct RoutedCall;
class ScriptCall;
struct SlotMap;
}  // namespace redis

class RedisClusterStore final : public Store {
 public:
  // Connects to the seeds and fetches the slot table in the background; until the table and a
  // slot's master are known, a request waits for them, at most for its timeout.
  explicit RedisClusterStore(RedisClusterStoreOptions options);
  ~RedisClusterStore() override;

  // Blocks for at most the timeout. Must not be called from a callback of this store.
  [[nodiscard]] StoreStatus apply(std::span<const LimitCheck> checks, const Clock& clock,
                                  std::span<Outcome> outcomes) noexcept override;
  // `done` runs on the store's loop thread; once the store is being destroyed, at once and
  // kUnavailable.
  void applyAsync(std::span<const LimitCheck> checks, const Clock& clock,
                  std::span<Outcome> outcomes, StoreCallback done) noexcept override;

  // Thread-safe: whether a slot table has been fetched.
  [[nodiscard]] bool ready() const noexcept { return ready_.load(); }
  // Thread-safe: how many calls to a master ended unanswered because their deadline came, as
  // opposed to failing at once (a dead master, no table) or being answered. What tells a
  // request that failed fast from one that waited out its time, without reading a clock.
  [[nodiscard]] std::uint64_t callsOutOfTime() const noexcept { return calls_out_of_time_.load(); }

 private:
  using Deadline = std::chrono::steady_clock::time_point;
  static constexpr std::chrono::milliseconds kFirstRefreshBackoff{5};
  // A master (or seed) and the connections to it. Kept for the store's life once seen: a
  // cluster has a bounded number of nodes, and in-flight calls may still be on its pool.
  struct Node {
    // Declared before the pool, so it outlives the calls the pool fails as it is destroyed.
    std::unique_ptr<CircuitBreaker> breaker;
    std::unique_ptr<redis::ServerPool> pool;
    std::string host;
    bool ever_connected = false;  // after that, a lost connection fails calls at once
  };

  // Every member below runs on loop_.
  Node* node(const std::string& address);
  void start(const std::shared_ptr<redis::ClusterRequest>& request);
  void onDecided(const std::shared_ptr<redis::ClusterRequest>& request, std::size_t group,
                 const redisReply* reply, redis::ServerPool* from);
  void settle(const std::shared_ptr<redis::ClusterRequest>& request);
  // The checks of the request's failed slots, decided by options_.on_error.
  void decideFailedByPolicy(redis::ClusterRequest& request);
  void finish(const std::shared_ptr<redis::ClusterRequest>& request);
  // Sends a "refund" call to `slot`; `then` runs when it is answered or has failed (by
  // `deadline`). Counted in outstanding_.
  void refund(redis::ScriptCall call, std::uint16_t slot, Deadline deadline,
              std::function<void()> then);
  // A decide call answered as failed whose reply came after all: refund what it consumed.
  void undoLate(const redis::ScriptCall& decided, std::uint16_t slot, const redisReply* reply);
  void release();  // one outstanding request or refund is done
  void signalIfDrained();

  // Sends a script call to its slot's master, following redirections, until its deadline.
  void route(const std::shared_ptr<redis::RoutedCall>& routed);
  void onRouted(const std::shared_ptr<redis::RoutedCall>& routed, const redisReply* reply,
                Node& asked);
  // route() again after `wait`, or at the call's deadline if that comes first.
  void retryLater(const std::shared_ptr<redis::RoutedCall>& routed, std::chrono::microseconds wait);
  // Whether some node is connected, or still making its first connects.
  [[nodiscard]] bool anyNodeMayAnswer() const;

  void requestRefresh();
  void armRefresh(Deadline at);
  void refreshNow();
  void onSlots(const redisReply* reply, const std::string& asked_host);
  void applySlotMap(const redis::SlotMap& map);

  RedisClusterStoreOptions options_;
  redis::LoopThread loop_;
  std::map<std::string, Node> nodes_;  // by "host:port"
  std::array<Node*, redis::kClusterSlots> slots_{};
  std::unique_ptr<boost::asio::steady_timer> refresh_timer_;
  bool refresh_armed_ = false;
  Deadline refresh_due_{};
  bool refresh_in_flight_ = false;
  bool refresh_again_ = false;
  Deadline last_refresh_{};
  // The wait before asking again for a table after a failed CLUSTER SLOTS; doubles per failure.
  std::chrono::milliseconds refresh_backoff_{kFirstRefreshBackoff};
  std::size_t refresh_cursor_ = 0;
  bool stopping_ = false;
  std::size_t outstanding_ = 0;  // requests started and refunds sent, not finished
  std::promise<void> drained_;   // set when stopping and the last of them has finished
  bool drained_signalled_ = false;
  std::atomic<bool> ready_{false};
  // Set when destruction starts, before stopping_: a callback of a call it fails may ask again
  // when the loop is about to stop, and a request posted then would never be answered.
  std::atomic<bool> closing_{false};
  std::atomic<std::uint64_t> calls_out_of_time_{0};
};

}  // namespace sluice
