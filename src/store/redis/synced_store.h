// The lowest-latency shared store, eventually consistent. Every node decides in its own memory,
// against the last global state it pulled from Redis plus what it admitted since; every
// `sync_interval` it pushes what it admitted (its deltas) to Redis and pulls the totals, in
// batched script calls; a key far from its limit waits up to five intervals (sync_policy.h).
// A decision never waits on the network, and a Redis outage only makes the shared view go stale
// (decisions say degraded) until syncs succeed again.
//
// To keep nodes from each spending the whole remainder at once, a node admits at most its share
// of what the global state had left (remaining / sluice_nodes) between two syncs. Overshoot
// bound (README, "Synced mode's bound"): about sluice_nodes × rate × sync_interval in steady
// state (the refill each node counts before it hears of the others); for a burst, the others'
// unpushed shares can be missing from a node's view, which adds up to at most
// (nodes − 1) / nodes × the limit over the burst.
// The sliding window log is not supported here: its state is a log, not two numbers.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithm/compact_state.h"
#include "store/key_hash.h"
#include "store/redis/loop_thread.h"
#include "store/redis/server_pool.h"
#include "store/store.h"

namespace sluice {

struct SyncedStoreOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  Micros timeout_us = 20'000;  // per sync call
  std::string key_prefix = "sluice:";
  redis::RedisAuth auth{};  // sent on every connection when it has a password
  int database = 0;         // SELECTed on every connection when not 0
  Micros sync_interval_us = 100'000;
  std::size_t sluice_nodes = 1;
  // Past this many keys, a new key makes room by forgetting keys that are back to full or, if
  // there are none, the least recently used keys whose units are all in Redis (evict).
  std::size_t max_keys = 1'000'000;
  // Keys not used for this long stop being synced, and are forgotten once back to full.
  Micros idle_after_us = 10'000'000;
};

class SyncedStore final : public Store {
 public:
  explicit SyncedStore(SyncedStoreOptions options);
  ~SyncedStore() override;

  // Never blocks on the network. kDegraded when the last sync failed or none has completed for
  // ten intervals (Redis is unreachable and the shared view is stale).
  // Decides against local state; syncing happens apart, on its own thread. Decides in Redis's
  // time: this node's wall clock plus the offset to Redis's learned at each sync, so a step of
  // either clock is corrected by the next sync. `clock` is not read: an offset measured against
  // one clock is only right when applied to that same clock (the engine's SystemClock ignores
  // wall-clock steps on purpose, and would carry a step's error for good).
  [[nodiscard]] bool decidesInline() const noexcept override { return true; }
  [[nodiscard]] StoreStatus apply(std::span<const LimitCheck> checks, const Clock& clock,
                                  std::span<Outcome> outcomes) noexcept override;

  // What a sync pushes: every key's deltas, or those due (sync_policy.h), as the syncs every
  // sync_interval do.
  enum class Push { kEverything, kDue };

  // Thread-safe. Syncs now and waits for the reply (tests). True when the node's shared view is
  // current: the sync succeeded, or had nothing to ask and no earlier sync had failed.
  bool syncNow(Push push = Push::kEverything);
  [[nodiscard]] std::size_t keyCount() const noexcept;
  // Syncs that sent calls to Redis (failed ones too).
  [[nodiscard]] std::uint64_t syncsSent() const noexcept { return syncs_sent_.load(); }
  // Entries forgotten because the table was full (not those forgotten for being idle).
  [[nodiscard]] std::uint64_t evictions() const noexcept { return evictions_.load(); }

 private:
  struct Entry;
  struct Shard;
  struct Batch;
  static constexpr std::size_t kShards = 16;

  // The counter a check names (its key, spec and group, as its Redis key name does).
  [[nodiscard]] std::uint64_t counterOf(const LimitCheck& check) const noexcept;
  [[nodiscard]] static std::size_t shardIndexOf(std::uint64_t counter) noexcept;
  Shard& shardFor(std::uint64_t counter) noexcept;
  void scheduleSync();
  // Thread-safe: asks the loop for a sync of everything now, not at the next interval (the
  // table is full of units not pushed yet). Asks made before it starts share it.
  void syncSoon();
  // On the loop: that sync, or, while one runs, right after it.
  void syncEarly();
  // The table is full and a request that holds the locks of shards `held` needs a new key in
  // shard `wanted`: forgets entries from that shard or, failing that, another, never one of
  // `keep` (the request's own). False when none could go: the request is then unavailable.
  bool makeRoom(std::size_t wanted, std::span<const std::size_t> held,
                std::span<const std::uint64_t> keep, Micros now_us, Micros steady_us);
  // Whether forgetting `entry` loses nothing: its units are all in Redis and, as this node last
  // saw the key, it is back to full, so a new entry would decide as it does.
  [[nodiscard]] static bool forgetsNothing(const Entry& entry, Micros now_us) noexcept;
  // After a failed push of `entry` (its shard locked): counts its units not yet in its view of
  // the global state into that view, at `now_us` on Redis's clock (Entry::folded).
  void foldIn(Entry& entry, Micros now_us) const noexcept;
  // Takes what `entry` owes (Entry::outage_debt) from its view as far as the view has room.
  static void payOutageDebt(Entry& entry, Micros now_us) noexcept;
  // Makes `state`, pulled from Redis at `redis_now_us`, the view of `entry` (its shard locked):
  // it holds every unit pushed so far, so nothing is folded in or owed any more.
  static void adoptPulled(Entry& entry, const algorithm::CompactState& state,
                          Micros redis_now_us) noexcept;
  // Forgets the entries of `shard` (locked) that forgetsNothing, or else the least recently
  // used ones whose units are all in Redis; never one of `keep`. How many.
  std::size_t evict(Shard& shard, std::span<const std::uint64_t> keep, Micros now_us,
                    Micros steady_us);
  // At least the oldest eighth, by last use, of the entries that are not in `keep` and whose
  // units are all in Redis.
  std::size_t evictLeastRecentlyUsed(Shard& shard, std::span<const std::uint64_t> keep,
                                     Micros steady_us);
  // A scan that finds fewer than 1 / kMinEvictableShare of a shard's entries evictable
  // makes the next wait for a sync interval.
  static constexpr std::size_t kMinEvictableShare = 16;

  struct Collected {
    std::vector<std::shared_ptr<Batch>> batches;
    bool held_back = false;  // some key has units that were not due
  };

  // On the loop: collects what to push and pull, sends it; `finished` runs when all replies are in.
  void sync(Push push, std::function<void(bool)> finished);
  // On the loop: takes what a sync pushes (and, with `pull`, pulls) out of the entries, into
  // calls of kKeysPerSyncCall keys; forgets idle keys on the way.
  Collected collect(Push push, bool pull, Micros steady_us);
  // Whether a sync that pushes only what is due pushes this entry's pending units, last synced
  // `since_sync_us` ago. `now_us` is on Redis's clock.
  [[nodiscard]] bool dueForPush(const Entry& entry, Micros now_us,
                                Micros since_sync_us) const noexcept;
  // On the loop: sends one sync call per batch, the call at `index` with a deadline of
  // first_deadline_us + index × deadline_step_us; `done(all_ok)` runs once every reply (or
  // failure) is in.
  void send(std::vector<std::shared_ptr<Batch>> batches, Micros first_deadline_us,
            Micros deadline_step_us, std::function<void(bool)> done);
  // Ends the syncs every interval and pushes every key's pending units, so that what this node
  // admitted outlives it (`sluice serve` closes its store when it stops). Waits at most a
  // second: Redis unreachable fails the calls at once, a frozen one runs into their deadline.
  // Units of a sync that timed out and may still run are not pushed again (pushFinally).
  void stopSyncing();
  // stopSyncing's push on the loop, once no sync that timed out is still queued on the
  // connection (at most until `until_steady_us`); then `done`.
  void pushFinally(Micros until_steady_us, std::function<void()> done);
  // Takes a sync reply (or its failure) into the entries; true if it was a good reply.
  bool applyReply(const Batch& batch, const redisReply* reply);
  // A sync that timed out (its deltas went back to pending) ran after all: takes its deltas
  // out of pending, and refunds in Redis what was pushed again meanwhile.
  void undoLateSync(const Batch& batch, const redisReply* reply);

  SyncedStoreOptions options_;
  KeyHasher hasher_;
  std::array<std::unique_ptr<Shard>, kShards> shards_;
  std::atomic<std::size_t> keys_{0};
  std::atomic<std::uint64_t> evictions_{0};
  std::atomic<std::uint64_t> syncs_sent_{0};
  // Sync calls that timed out and are still queued on their connection (a call lives until
  // Redis answers it or the connection drops). Shared with each call, which may outlive the
  // store.
  std::shared_ptr<std::atomic<std::size_t>> late_calls_out_ =
      std::make_shared<std::atomic<std::size_t>>(0);
  std::atomic<Micros> last_sync_ok_us_{0};  // steady micros; 0 before the first
  std::atomic<bool> last_sync_failed_{false};
  // Redis's clock minus this node's wall clock, learned at each sync, so states written with
  // Redis TIME are read at the same time scale.
  std::atomic<Micros> clock_offset_us_{0};
  redis::LoopThread loop_;
  std::unique_ptr<redis::ServerPool> pool_;                // on loop_
  std::unique_ptr<boost::asio::steady_timer> sync_timer_;  // on loop_
  bool sync_running_ = false;                              // on loop_
  bool sync_again_ = false;  // on loop_: syncEarly waits for the sync running
  // On loop_: steady micros after which a sync looks for idle keys to forget again: a tenth of
  // idle_after (a second by default) after the last look.
  Micros next_idle_sweep_us_ = 0;
  std::atomic<bool> early_sync_asked_{false};
};

}  // namespace sluice
