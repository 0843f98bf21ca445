// Decide calls to one Redis server, batched under load. At most `max_in_flight` calls are
// outstanding; requests that arrive meanwhile wait, and the next call carries all that waited
// (up to kMaxBatchChecks checks) as one "batch" script call, each request still all-or-nothing
// on its own (script_protocol.h). An idle store sends each request at once, so batching adds no
// latency; a busy one pays Redis's fixed cost of a script call (about that of a whole GCRA
// decision) once per batch instead of once per request. Lives on the store's loop thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "sluice/outcome.h"
#include "store/redis/script_call.h"
#include "store/redis/server_pool.h"
#include "store/store.h"

namespace sluice::redis {

class DecideBatcher : public std::enable_shared_from_this<DecideBatcher> {
 public:
  using Clock = std::chrono::steady_clock;
  // A Redis script call stays short: a batch holds at most this many checks.
  static constexpr std::size_t kMaxBatchChecks = 128;

  // `merge` false sends every request as its own call, at once (calls that carry their own
  // time, which one batch cannot share). Each call has `call_timeout` from when it is sent.
  DecideBatcher(ServerPool& pool, std::size_t max_in_flight, bool merge,
                std::chrono::microseconds call_timeout);

  // One request: `call` is a "decide" call for `outcomes.size()` checks. `deadline` is the
  // latest it may be sent: a request still waiting then (behind calls that took their whole
  // time) is answered kUnavailable unsent. So `done` runs exactly once, by `deadline` plus the
  // call timeout: kOk with the outcomes written, or kUnavailable.
  struct Request {
    ScriptCall call;
    std::span<Outcome> outcomes;
    Clock::time_point deadline;
    StoreCallback done;
  };

  // Takes the requests (moving from them) in order, then sends what may be sent: requests that
  // arrive together share a call even when no call is in flight.
  void decide(std::span<Request> requests);

  // Fails every waiting request and sends nothing more; calls in flight still finish. Call
  // before the pool goes away.
  void close();

 private:
  // Sends waiting requests while fewer than max_in_flight calls are out.
  void pump();
  void send(std::vector<Request> batch);
  // Answers each request from its slice of `reply`; a reply that cannot be read is logged by
  // `pool`.
  static void finish(std::vector<Request>& batch, const redisReply* reply, ServerPool& pool);
  // `call` was answered unavailable, then its reply came.
  void undoLate(const ScriptCall& call, const redisReply* reply);

  ServerPool& pool_;
  std::size_t max_in_flight_;
  bool merge_;
  // A call's own deadline, whatever its requests waited before it went: measured from the
  // oldest request's arrival instead, a batch that waited behind a call to a Redis a round trip
  // away was sent with almost no time left, timed out, and ran for nothing.
  std::chrono::microseconds call_timeout_;
  bool closed_ = false;
  bool pumping_ = false;  // pump() is on the stack: a reply handled inside it must not recurse
  std::size_t in_flight_ = 0;
  std::deque<Request> waiting_;
};

}  // namespace sluice::redis
