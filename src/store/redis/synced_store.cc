#include "store/redis/synced_store.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/steady_timer.hpp>
#include <boost/container/small_vector.hpp>

#include "store/redis/redis_keys.h"
#include "store/redis/script_call.h"
#include "store/redis/shared_decision.h"
#include "store/redis/sync_policy.h"
#include "store/redis/synced_table.h"

namespace sluice {

namespace {

// Counts a sync call that timed out for as long as it lives on: the pool keeps it (with its
// late-reply handler) until Redis answers it or the connection drops.
class LateCall {
 public:
  explicit LateCall(std::shared_ptr<std::atomic<std::size_t>> late) : late_(std::move(late)) {}
  ~LateCall() {
    if (timed_out_) late_->fetch_sub(1);
  }
  LateCall(const LateCall&) = delete;
  LateCall& operator=(const LateCall&) = delete;
  void timedOut() {
    if (!std::exchange(timed_out_, true)) late_->fetch_add(1);
  }

 private:
  std::shared_ptr<std::atomic<std::size_t>> late_;
  bool timed_out_ = false;
};

Micros steadyNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Micros wallNowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

template <typename T>
using SmallVector = boost::container::small_vector<T, 4>;

constexpr std::size_t kKeysPerSyncCall = 256;
// How long a node that stops waits for its last push.
constexpr Micros kFinalPushDeadlineUs = 1'000'000;

Micros sinceSync(Micros last_synced_us, Micros steady_us) {
  return last_synced_us == kNeverSynced ? std::numeric_limits<Micros>::max()
                                        : steady_us - last_synced_us;
}

}  // namespace

// One sync call: the keys it pushes and pulls and the deltas it carries.
struct SyncedStore::Batch {
  std::vector<std::uint64_t> counters;
  std::vector<std::string> keys;
  std::vector<LimitSpec> specs;
  std::vector<std::uint64_t> deltas;
};

SyncedStore::SyncedStore(SyncedStoreOptions options) : options_(std::move(options)) {
  for (auto& shard : shards_) shard = std::make_unique<Shard>();
  last_sync_ok_us_.store(steadyNowUs());
  loop_.runAndWait([this] {
    pool_ = std::make_unique<redis::ServerPool>(loop_.io(), options_.host, options_.port, 1,
                                                options_.auth, options_.database);
    pool_->start();
    sync_timer_ = std::make_unique<boost::asio::steady_timer>(loop_.io());
    scheduleSync();
  });
}

SyncedStore::~SyncedStore() {
  stopSyncing();
  loop_.runAndWait([this] {
    sync_timer_.reset();
    pool_.reset();
  });
  loop_.stop();
}

std::uint64_t SyncedStore::counterOf(const LimitCheck& check) const noexcept {
  const std::uint64_t by_key = hasher_(check.key, *check.spec);
  // The group names the key's hash tag in Redis (redisKey); an empty group is the key itself.
  if (check.group.empty() || check.group == check.key) return by_key;
  const std::uint64_t by_group = hasher_(check.group, *check.spec);
  return by_key ^ ((by_group << 1) | (by_group >> 63));
}

std::size_t SyncedStore::shardIndexOf(std::uint64_t counter) noexcept {
  // Middle bits: the flat map picks a bucket from the high bits and a tag from the low byte.
  return (counter >> 24) % kShards;
}

SyncedStore::Shard& SyncedStore::shardFor(std::uint64_t counter) noexcept {
  return *shards_[shardIndexOf(counter)];
}

std::size_t SyncedStore::keyCount() const noexcept { return keys_.load(); }

StoreStatus SyncedStore::apply(std::span<const LimitCheck> checks, const Clock& /*clock*/,
                               std::span<Outcome> outcomes) noexcept {
  try {
    const Micros now_us = wallNowUs() + clock_offset_us_.load(std::memory_order_relaxed);
    const Micros steady_us = steadyNowUs();
    // Inline storage for the usual few checks: a decision allocates nothing but new keys.
    SmallVector<std::uint64_t> counters;
    SmallVector<std::size_t> shard_of;
    for (const LimitCheck& check : checks) {
      if (!algorithm::hasCompactState(check.spec->algorithm())) return StoreStatus::kUnavailable;
      counters.push_back(counterOf(check));
      shard_of.push_back(shardIndexOf(counters.back()));
    }
    // Lock every shard involved, in index order, so multi-limit requests never deadlock.
    SmallVector<std::size_t> order = shard_of;
    std::sort(order.begin(), order.end());
    order.erase(std::unique(order.begin(), order.end()), order.end());
    SmallVector<std::unique_lock<std::mutex>> locks;
    for (const std::size_t index : order) locks.emplace_back(shards_[index]->mutex);

    SmallVector<Entry*> entries(checks.size());
    bool inserted = false;
    for (std::size_t i = 0; i < checks.size(); ++i) {
      auto& map = shards_[shard_of[i]]->entries;
      auto found = map.find(counters[i]);
      if (found == map.end()) {
        if (keys_.load() >= options_.max_keys &&
            !makeRoom(shard_of[i], std::span(order.data(), order.size()),
                      std::span(counters.data(), counters.size()), now_us, steady_us)) {
          syncSoon();  // every key waits on a push: room frees once one is answered
          return StoreStatus::kUnavailable;
        }
        found = map.try_emplace(counters[i], *checks[i].spec,
                                redis::redisKey(options_.key_prefix, checks[i]))
                    .first;
        keys_.fetch_add(1);
        inserted = true;
      }
      entries[i] = &found->second;
    }
    if (inserted) {  // an insert may have moved the flat map's other entries
      for (std::size_t i = 0; i < checks.size(); ++i) {
        entries[i] = &shards_[shard_of[i]]->entries.find(counters[i])->second;
      }
    }
    bool all_allowed = true;
    for (std::size_t i = 0; i < checks.size(); ++i) {
      Entry& entry = *entries[i];
      entry.spec = *checks[i].spec;  // a reload may have changed the count
      entry.last_used_us = steady_us;
      payOutageDebt(entry, now_us);
      std::uint64_t earlier = 0;
      for (std::size_t j = 0; j < i; ++j) {
        if (entries[j] == &entry) earlier += checks[j].cost;
      }
      outcomes[i] = redis::decideShared(entry.global, entry.spec, now_us,
                                        entry.pending + entry.in_flight - entry.folded + earlier,
                                        checks[i].cost, options_.sluice_nodes,
                                        options_.sync_interval_us, entry.share_ran_out);
      all_allowed = all_allowed && outcomes[i].allowed;
    }
    if (all_allowed) {
      for (std::size_t i = 0; i < checks.size(); ++i) entries[i]->pending += checks[i].cost;
    }
    // Degraded when syncs fail (Redis unreachable), or have not completed for ten intervals; a
    // sync that is merely slow under load leaves decisions normal.
    const bool stale = last_sync_failed_.load(std::memory_order_relaxed) ||
                       steady_us - last_sync_ok_us_.load() > 10 * options_.sync_interval_us;
    return stale ? StoreStatus::kDegraded : StoreStatus::kOk;
  } catch (...) {  // allocation failure
    return StoreStatus::kUnavailable;
  }
}

void SyncedStore::syncSoon() {
  // While syncs fail (Redis unreachable), one more cannot make room: the scheduled ones retry.
  if (last_sync_failed_.load(std::memory_order_relaxed)) return;
  if (early_sync_asked_.exchange(true)) return;  // one is on its way
  loop_.post([this] { syncEarly(); });
}

void SyncedStore::syncEarly() {
  if (sync_timer_ == nullptr) return;  // stopping: the last push takes everything
  if (sync_running_) {
    sync_again_ = true;
    return;
  }
  early_sync_asked_.store(false);
  sync(Push::kEverything, [](bool) {});
}

void SyncedStore::scheduleSync() {
  sync_timer_->expires_after(std::chrono::microseconds(options_.sync_interval_us));
  sync_timer_->async_wait([this](const boost::system::error_code& error) {
    if (error || sync_timer_ == nullptr) return;
    sync(Push::kDue, [this](bool) {
      if (sync_timer_ != nullptr) scheduleSync();
    });
  });
}

SyncedStore::Collected SyncedStore::collect(Push push, bool pull, Micros steady_us) {
  const Micros slow_sync_us = redis::kSlowSyncEvery * options_.sync_interval_us;
  const Micros now_us = wallNowUs() + clock_offset_us_.load(std::memory_order_relaxed);
  Collected collected;
  std::vector<std::shared_ptr<Batch>>& batches = collected.batches;
  const bool sweep_idle = steady_us >= next_idle_sweep_us_;
  if (sweep_idle) {
    next_idle_sweep_us_ = steady_us + options_.idle_after_us / 10;
  }
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    // An idle key is forgotten only once it is back to full: forgetting one with usage left
    // would let it start over from a full limit here when its client returns. Such keys can
    // be many (a day's quotas), so they are looked at only every idle sweep.
    if (sweep_idle) {
      const std::size_t forgotten =
          boost::unordered::erase_if(shard->entries, [&](const auto& item) {
            return steady_us - item.second.last_used_us > options_.idle_after_us &&
                   forgetsNothing(item.second, now_us);
          });
      keys_.fetch_sub(forgotten);
    }
    for (auto& [counter, entry] : shard->entries) {
      // Push what was admitted when it is due (sync_policy.h; the reply brings the global
      // state back). Keys in use with nothing to push are pulled less often, to learn the
      // other nodes' usage: pulling every key every interval would cost Redis more than
      // deciding there.
      const Micros since_sync_us = sinceSync(entry.last_synced_us, steady_us);
      const bool refresh =
          pull && steady_us - entry.last_used_us <= slow_sync_us && since_sync_us >= slow_sync_us;
      const bool push_now = entry.pending > 0 &&
                            (push == Push::kEverything || dueForPush(entry, now_us, since_sync_us));
      if (entry.pending > 0 && !push_now) collected.held_back = true;
      if (push_now || refresh) {
        entry.last_synced_us = steady_us;
        entry.share_ran_out = false;
        if (batches.empty() || batches.back()->keys.size() == kKeysPerSyncCall)
          batches.push_back(std::make_shared<Batch>());
        batches.back()->counters.push_back(counter);
        batches.back()->keys.push_back(entry.redis_key);
        // A copy: a reload may change the entry's spec while the call is out.
        batches.back()->specs.push_back(entry.spec);
        batches.back()->deltas.push_back(entry.pending);
        entry.in_flight += entry.pending;
        entry.pending = 0;
      }
    }
  }
  return collected;
}

bool SyncedStore::dueForPush(const Entry& entry, Micros now_us,
                             Micros since_sync_us) const noexcept {
  const std::uint64_t remaining = redis::peek(entry.global, entry.spec, now_us).remaining;
  return redis::pushIsDue(entry.pending + entry.in_flight,
                          redis::nodeShare(remaining, options_.sluice_nodes), entry.share_ran_out,
                          since_sync_us, options_.sync_interval_us);
}

void SyncedStore::sync(Push push, std::function<void(bool)> finished) {
  if (sync_running_ || pool_ == nullptr) return finished(false);
  const Micros steady_us = steadyNowUs();
  Collected collected = collect(push, /*pull=*/true, steady_us);
  if (collected.batches.empty()) {
    // Nothing due and nothing to pull: the shared view is as current as it needs to be, unless
    // the last sync failed: a round that asked Redis nothing cannot say it is back, so that
    // verdict stands (decisions stay degraded) until a sync that reaches Redis succeeds. The
    // next request's key is due a pull, so such a sync comes with the next use. Nor can such a
    // round say Redis is there while no connection is up (refused at start, or dropped in a
    // quiet spell): the first decisions after it would not have been marked degraded.
    const bool failed = last_sync_failed_.load(std::memory_order_relaxed) || !pool_->connected();
    if (!collected.held_back && !failed) last_sync_ok_us_.store(steady_us);
    return finished(!failed);
  }
  if (late_calls_out_->load() > 0) {
    // A sync that timed out is still queued on the connection (Redis frozen, or the link gone
    // silent). Another would queue behind it with the same units again, and the connection's
    // buffers would grow for as long as that lasts. So this round counts as failed without
    // asking: its units stay pending, folded into the node's view, until that call is answered
    // (its late reply settles what it carried) or its connection drops. With no call going
    // out, none can time out and make the pool look for a silent path: look here, or a path
    // that went silent would hold the node degraded for as long as the kernel kept it open.
    for (const std::shared_ptr<Batch>& batch : collected.batches) (void)applyReply(*batch, nullptr);
    last_sync_failed_.store(true, std::memory_order_relaxed);
    pool_->probeIfSilent();
    return finished(false);
  }
  sync_running_ = true;
  syncs_sent_.fetch_add(1, std::memory_order_relaxed);
  // No request waits on a sync, and its calls queue behind each other on one connection:
  // allow the round a whole interval plus 10 ms per call ahead of each.
  const Micros first_deadline_us = std::max(options_.timeout_us, options_.sync_interval_us);
  send(std::move(collected.batches), first_deadline_us, 10'000,
       [this, finished = std::move(finished)](bool all_ok) {
         sync_running_ = false;
         if (all_ok) last_sync_ok_us_.store(steadyNowUs());
         last_sync_failed_.store(!all_ok, std::memory_order_relaxed);
         finished(all_ok);
         if (std::exchange(sync_again_, false)) syncEarly();
       });
}

void SyncedStore::send(std::vector<std::shared_ptr<Batch>> batches, Micros first_deadline_us,
                       Micros deadline_step_us, std::function<void(bool)> done) {
  auto outstanding = std::make_shared<std::size_t>(batches.size());
  auto all_ok = std::make_shared<bool>(true);
  auto shared_done = std::make_shared<std::function<void(bool)>>(std::move(done));
  for (std::size_t index = 0; index < batches.size(); ++index) {
    const std::shared_ptr<Batch>& batch = batches[index];
    std::vector<const LimitSpec*> specs;
    for (const LimitSpec& spec : batch->specs) specs.push_back(&spec);
    auto call = std::make_shared<const redis::ScriptCall>(
        redis::ScriptCall::make("sync", batch->keys, specs, batch->deltas, std::nullopt));
    auto late_call = std::make_shared<LateCall>(late_calls_out_);
    pool_->call(
        call,
        std::chrono::microseconds(first_deadline_us +
                                  deadline_step_us * static_cast<Micros>(index)),
        [this, batch, outstanding, all_ok, shared_done, late_call](const redisReply* reply,
                                                                   std::string_view) {
          // No reply: timed out (the call may still be queued) or not sent at all (then it
          // ends with this handler, and so does its count).
          if (reply == nullptr) late_call->timedOut();
          *all_ok = applyReply(*batch, reply) && *all_ok;
          if (--*outstanding == 0) (*shared_done)(*all_ok);
        },
        [this, batch, late_call](const redisReply* reply) { undoLateSync(*batch, reply); });
  }
}

void SyncedStore::stopSyncing() {
  std::promise<void> pushed;
  loop_.post([&] {
    sync_timer_.reset();  // a sync still out finishes, and schedules none
    pushFinally(steadyNowUs() + kFinalPushDeadlineUs, [&pushed] { pushed.set_value(); });
  });
  pushed.get_future().wait();
}

void SyncedStore::pushFinally(Micros until_steady_us, std::function<void()> done) {
  const Micros now_steady_us = steadyNowUs();
  if (pool_ == nullptr) return done();
  if (late_calls_out_->load() > 0) {
    // A sync that timed out is still queued on the connection, and its units are pending again:
    // pushed now, they would count twice once Redis runs both. Its late reply takes them out of
    // pending; wait for it, as long as the deadline allows. Past it, push nothing: Redis may
    // still run the queued sync, and what was admitted since is lost rather than counted twice.
    if (now_steady_us >= until_steady_us) return done();
    auto timer =
        std::make_shared<boost::asio::steady_timer>(loop_.io(), std::chrono::milliseconds(5));
    timer->async_wait([this, timer, until_steady_us,
                       done = std::move(done)](const boost::system::error_code&) mutable {
      pushFinally(until_steady_us, std::move(done));
    });
    return;
  }
  Collected collected = collect(Push::kEverything, /*pull=*/false, now_steady_us);
  if (collected.batches.empty()) return done();
  // May run beside a sync still out: each call takes its own units from in_flight.
  send(std::move(collected.batches), std::max<Micros>(until_steady_us - now_steady_us, 10'000), 0,
       [done = std::move(done)](bool) { done(); });
}

bool SyncedStore::applyReply(const Batch& batch, const redisReply* reply) {
  std::vector<algorithm::CompactState> states(batch.keys.size());
  Micros redis_now_us = 0;
  std::optional<std::string> error;
  if (reply != nullptr) error = redis::readSyncReply(reply, states, redis_now_us);
  const bool ok = reply != nullptr && !error;
  // An error reply is the pool's to log; a reply of another shape is logged here.
  if (error && redis::errorText(reply).empty() && pool_ != nullptr) {
    pool_->logUnreadableReply(*error);
  }
  if (ok) clock_offset_us_.store(redis_now_us - wallNowUs());
  const Micros failed_at_us = wallNowUs() + clock_offset_us_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < batch.keys.size(); ++i) {
    Shard& shard = shardFor(batch.counters[i]);
    std::lock_guard lock(shard.mutex);
    const auto found = shard.entries.find(batch.counters[i]);
    if (found == shard.entries.end()) continue;
    Entry& entry = found->second;
    entry.in_flight -= batch.deltas[i];
    if (ok) {
      adoptPulled(entry, states[i], redis_now_us);
      if (entry.pending == 0 && entry.in_flight == 0) shard.next_eviction_scan_us = 0;
    } else {
      // Push it again next time, and pull it then too. (A call that timed out may still run
      // in Redis: undoLateSync then takes these units back.)
      entry.pending += batch.deltas[i];
      entry.last_synced_us = kNeverSynced;
      foldIn(entry, failed_at_us);
    }
  }
  return ok;
}

void SyncedStore::foldIn(Entry& entry, Micros now_us) const noexcept {
  const std::uint64_t unfolded = entry.pending + entry.in_flight - entry.folded;
  if (unfolded == 0) return;
  entry.folded += unfolded;
  // As every node's, not only this one's: the others are cut off too and presumably as busy,
  // so the node goes on at about its share of the rate (what on_error: local enforces) rather
  // than at the whole rate. A state can only be emptied, not overdrawn: what does not fit now
  // is owed, and taken as the state refills. At most a full limit is owed, so the node never
  // waits longer than the limit takes to refill.
  const std::uint64_t nodes = std::max<std::size_t>(1, options_.sluice_nodes);
  const std::uint64_t limit = entry.spec.limit();
  const std::uint64_t scaled = unfolded > limit / nodes ? limit : unfolded * nodes;
  entry.outage_debt = std::min(limit, entry.outage_debt + scaled);
  payOutageDebt(entry, now_us);
}

void SyncedStore::payOutageDebt(Entry& entry, Micros now_us) noexcept {
  if (entry.outage_debt == 0) return;
  const std::uint64_t room = redis::peek(entry.global, entry.spec, now_us).remaining;
  const std::uint64_t paid = std::min(room, entry.outage_debt);
  if (paid == 0) return;
  (void)algorithm::consumeCompact(entry.global, now_us, entry.spec, paid);
  entry.outage_debt -= paid;
}

void SyncedStore::adoptPulled(Entry& entry, const algorithm::CompactState& state,
                              Micros redis_now_us) noexcept {
  entry.global = state;
  entry.global_at_us = redis_now_us;
  entry.folded = 0;
  entry.outage_debt = 0;
}

void SyncedStore::undoLateSync(const Batch& batch, const redisReply* reply) {
  if (pool_ == nullptr) return;  // shutting down
  std::vector<algorithm::CompactState> states(batch.keys.size());
  Micros redis_now_us = 0;
  if (redis::readSyncReply(reply, states, redis_now_us)) return;  // an error: nothing ran
  std::vector<std::string> keys;
  std::vector<const LimitSpec*> specs;
  std::vector<std::uint64_t> refunds;
  for (std::size_t i = 0; i < batch.keys.size(); ++i) {
    std::uint64_t pushed_again = batch.deltas[i];
    {
      Shard& shard = shardFor(batch.counters[i]);
      std::lock_guard lock(shard.mutex);
      const auto found = shard.entries.find(batch.counters[i]);
      if (found != shard.entries.end()) {
        Entry& entry = found->second;
        const std::uint64_t unpushed = std::min(entry.pending, pushed_again);
        entry.pending -= unpushed;
        pushed_again -= unpushed;
        // The units taken out of pending are in Redis now, and in the state the reply brings:
        // unless a later sync brought a newer state already, it becomes the node's view.
        // Without it, the node counted those units nowhere until its next pull, and could
        // admit them again.
        if (redis_now_us > entry.global_at_us) adoptPulled(entry, states[i], redis_now_us);
        entry.folded = std::min(entry.folded, entry.pending + entry.in_flight);
      }
    }
    if (pushed_again == 0) continue;
    keys.push_back(batch.keys[i]);
    specs.push_back(&batch.specs[i]);
    refunds.push_back(pushed_again);
  }
  if (keys.empty()) return;
  // As if the late push had not happened; the batch (owning the specs) lives until this returns.
  auto call = std::make_shared<const redis::ScriptCall>(
      redis::ScriptCall::make("refund", keys, specs, refunds, redis_now_us));
  pool_->call(std::move(call), redis::ServerPool::kLateRefundTimeout,
              [](const redisReply*, std::string_view) {});
}

bool SyncedStore::syncNow(Push push) {
  std::promise<bool> result;
  std::function<void()> attempt;
  attempt = [&] {
    if (sync_running_) {
      // Wait for the sync in progress, then run a fresh one.
      auto timer =
          std::make_shared<boost::asio::steady_timer>(loop_.io(), std::chrono::milliseconds(1));
      timer->async_wait([&, timer](const boost::system::error_code&) { attempt(); });
      return;
    }
    sync(push, [&](bool ok) { result.set_value(ok); });
  };
  loop_.post([&] { attempt(); });
  return result.get_future().get();
}

}  // namespace sluice
