// A few pipelined connections to one Redis server, and script calls over them with a deadline.
// Lives on one loop thread: every member runs there.
//
// A connection whose path goes silent (no FIN or RST: a moved pod, a VIP failover, a proxy whose
// backend died) would stay "connected" for as long as the kernel keeps it, and calls on it would
// all time out. So when a call times out while a connection has waited a second or more for
// any reply, the pool probes: a fresh connection sends PING. Answered, Redis is reachable by a
// new path, and the silent connections are dropped and reconnected. Unanswered, Redis itself is
// frozen or down (a slow command, SIGSTOP, a paused VM): its connections stay, so what it runs
// when it resumes is answered on them, and late replies can be refunded.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "store/redis/redis_connection.h"
#include "store/redis/script_call.h"
#include "store/redis/server_log_throttles.h"

namespace sluice::redis {

class ServerPool {
 public:
  // `reply` is null when the call failed (not connected, connection lost, or past its deadline)
  // and then `error` says why; otherwise it may be an error reply (MOVED, ASK, a script error).
  using CallHandler = std::function<void(const redisReply* reply, std::string_view error)>;
  // The error of a call whose deadline came before its reply.
  static constexpr std::string_view kTimedOut = "timed out";

  ServerPool(boost::asio::io_context& io, std::string host, std::uint16_t port,
             std::size_t connections, RedisAuth auth = {}, int database = 0);
  ~ServerPool();
  ServerPool(const ServerPool&) = delete;
  ServerPool& operator=(const ServerPool&) = delete;

  void start();
  [[nodiscard]] bool connected() const noexcept;
  // Whether every connection has ended at least one connect attempt: not connected then means
  // the server refused or did not answer, not that the first connects are still under way.
  [[nodiscard]] bool everyConnectionTried() const noexcept;
  [[nodiscard]] const std::string& address() const noexcept { return address_; }

  // A reply that came after its call's deadline: the script ran, though the caller was told it
  // failed. Never an error reply saying the script did not run (NOSCRIPT).
  using LateReplyHandler = std::function<void(const redisReply* reply)>;
  // For the call that undoes a late reply: nobody waits on it, so it may take longer than a
  // decision may; it must land, or the limit stays over-counted until it drains.
  static constexpr std::chrono::milliseconds kLateRefundTimeout{1000};
  // Calls sent and not yet answered (or dropped with their connection), timed out or not, past
  // which a call that may leave a late reply (one given a LateReplyHandler) fails at once. A
  // timed-out call is kept for its late reply (a refund may follow), with its command in hiredis's
  // buffer while Redis reads nothing: with the circuit breaker set never to open, a frozen Redis
  // grew memory by megabytes a second without end.
  static constexpr std::size_t kMaxUnansweredCalls = 4096;

  // Sends `call` (re-sent as EVAL when Redis has lost the script) on the next connected
  // connection; `handler` runs exactly once, within `timeout` of now. A call past its deadline
  // has been written and may still run once Redis catches up: `late`, when given, then gets its
  // reply, so the caller can undo what it did. `asking` sends ASKING first, for a Redis Cluster
  // ASK redirection.
  void call(std::shared_ptr<const ScriptCall> call, std::chrono::microseconds timeout,
            CallHandler handler, LateReplyHandler late = {}, bool asking = false);
  // Any command, with the same deadline rule.
  void command(std::vector<std::string> argv, std::chrono::microseconds timeout,
               CallHandler handler);

  // A reply to a script call that is not an error reply, yet not of the shape the call asks for
  // (`why`): whatever answers is not Redis running this script (a proxy, another server on the
  // port). Such calls fail, and only the degraded metric showed it. Logged at most once in 10 s
  // per server.
  void logUnreadableReply(std::string_view why);

  // Probes when a connection has gone silent (see the top of this file). A timed-out call does
  // this by itself; a caller that holds its calls back while one is overdue (so none can time
  // out meanwhile) calls it instead, or a silent path would never be replaced.
  void probeIfSilent();

 private:
  struct InFlight;
  struct Probe;

  RedisConnection* pick() noexcept;
  // Finishes the call as failed at `timeout` unless its reply has come.
  std::shared_ptr<InFlight> startDeadline(std::chrono::microseconds timeout,
                                          RedisConnection& connection, CallHandler handler);
  void openProbe();
  void endProbe(const std::shared_ptr<Probe>& probe, bool answered);
  void resetSilentConnections();
  // A connection came up or went down (RedisConnection's on_state): logs the moment no
  // connection of the process to this server is up, once, with the reason, and the moment one
  // is again.
  void onConnectionState(bool up, bool was_up, std::string_view reason);
  // A script call Redis refused (out of memory under maxmemory, a replica that became
  // read-only, a script still busy): such calls fail as unavailable and each limit's on_error
  // decides, which only the degraded metric showed. Logged at most once in 10 s per server.
  // Redirections are the cluster store's to follow, not refusals.
  void logRefusal(const redisReply* reply);
  // A call Redis did not answer in time (a frozen or overloaded Redis, a path gone silent):
  // only the degraded metric showed it. Logged at most once in 10 s per server.
  void logTimeout(std::chrono::microseconds timeout);
  // Whether a call may be sent (fewer than kMaxUnansweredCalls are out); logs when not.
  bool roomForACall();

  boost::asio::io_context& io_;
  std::string host_;
  std::uint16_t port_;
  std::string address_;
  RedisAuth auth_;    // for every connection, the probe's too
  int database_ = 0;  // SELECTed on every connection but the probe's (PING needs none)
  std::vector<std::shared_ptr<RedisConnection>> connections_;
  std::size_t next_ = 0;
  std::shared_ptr<Probe> probe_;  // the probe running, if any
  std::size_t up_ = 0;            // connections up (on_state), forgotten when the pool goes
  // Calls whose InFlight lives (their reply, or their connection's end, still to come); shared,
  // as an InFlight can outlive the pool in a connection's callback.
  std::shared_ptr<std::atomic<std::size_t>> unanswered_ =
      std::make_shared<std::atomic<std::size_t>>(0);
  bool refusing_ = false;                     // roomForACall refused the last call
  std::shared_ptr<ServerLogThrottles> logs_;  // with every other pool on this server
};

}  // namespace sluice::redis
