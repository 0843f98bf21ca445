#include "store/redis/server_pool.h"

#include <hiredis/hiredis.h>
#include <algorithm>
#include <csignal>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace sluice::redis {

namespace {

// Whether each Redis server (by address) has a connection up, over every pool of the process: a
// redis store has a pool per I/O thread, all to the same server, and an outage is logged once
// when the last connection to it goes, and once when one is back. A server that drops each
// connection right after answering on it (a proxy or a server that is not Redis, at dozens of
// cycles a second) would fill the log with those two lines: an outage that follows an up of
// less than kFlapUpFor, within kFlapLogEvery of the last line, is counted instead, and the next
// line says how many there were.
class Reachability {
 public:
  static Reachability& instance() {
    static Reachability reachability;
    return reachability;
  }

  void up(const std::string& address) {
    const std::lock_guard lock(mutex_);
    Server& server = servers_[address];
    if (server.up++ == 0) {
      server.up_since = std::chrono::steady_clock::now();
      if (server.reported_down) spdlog::info("redis {}: connected again", address);
    }
    server.reported_down = server.reported_refusal = false;
  }

  // A pool going away with `count` connections up: they no longer count, and nothing is logged.
  void forget(const std::string& address, std::size_t count) {
    const std::lock_guard lock(mutex_);
    Server& server = servers_[address];
    server.up -= std::min(server.up, count);
  }

  void down(const std::string& address, bool was_up, std::string_view reason, bool has_password) {
    const std::lock_guard lock(mutex_);
    Server& server = servers_[address];
    if (was_up && server.up > 0) --server.up;
    if (server.up > 0) return;
    // Once per outage; but a refused AUTH or SELECT is told even when the outage began another
    // way (a password rotated on the server drops the connections first, then refuses the AUTH).
    const bool refused = reason.starts_with("AUTH") || reason.starts_with("SELECT");
    if (server.reported_down && (!refused || server.reported_refusal)) return;
    const auto now = std::chrono::steady_clock::now();
    const bool flap = server.up_since && now - *server.up_since < kFlapUpFor;
    if (flap && server.down_logged_at && now - *server.down_logged_at < kFlapLogEvery) {
      ++server.flaps_unlogged;
      return;
    }
    const std::uint64_t flaps = std::exchange(server.flaps_unlogged, 0);
    server.down_logged_at = now;
    server.reported_down = true;
    server.reported_refusal = refused;
    // Redis refuses commands (NOAUTH), then drops the connection for the script's size, from a
    // client that has not authenticated: say what to set.
    const bool wants_password =
        !has_password && (reason.find("NOAUTH") != std::string_view::npos ||
                          reason.find("unauthenticated") != std::string_view::npos);
    spdlog::warn(
        "redis {}: unreachable ({}){}; until it answers, its calls fail and decisions are "
        "degraded (each limit's on_error decides; a synced node decides alone){}",
        address, reason,
        wants_password ? "; it wants a password: set store.password or store.password_env" : "",
        flaps == 0 ? std::string()
                   : " (it came up and went again " + std::to_string(flaps) +
                         " more times since the last line, each time within a second)");
  }

 private:
  static constexpr std::chrono::seconds kFlapUpFor{1};
  static constexpr std::chrono::seconds kFlapLogEvery{10};

  struct Server {
    std::size_t up = 0;
    bool reported_down = false;     // "unreachable" logged, "connected again" not yet
    bool reported_refusal = false;  // and it quoted a refused AUTH or SELECT
    std::optional<std::chrono::steady_clock::time_point> up_since;        // the latest up
    std::optional<std::chrono::steady_clock::time_point> down_logged_at;  // the latest line
    std::uint64_t flaps_unlogged = 0;
  };
  std::mutex mutex_;
  std::map<std::string, Server, std::less<>> servers_;
};

}  // namespace

namespace {

// A connection that has waited this long for any reply, while a call timed out, is suspect: it
// may be on a path that went silent. Far above a round trip, and above a pause for a big key.
constexpr std::chrono::seconds kSilenceLimit{1};
// How long the probe's fresh connection has to connect and answer PING.
constexpr std::chrono::seconds kProbeTimeout{1};

}  // namespace

// One call in flight: finished by its reply or its deadline, whichever comes first.
struct ServerPool::InFlight {
  InFlight(boost::asio::io_context& io, CallHandler on_done,
           std::shared_ptr<std::atomic<std::size_t>> calls_unanswered)
      : deadline(io), handler(std::move(on_done)), unanswered(std::move(calls_unanswered)) {
    unanswered->fetch_add(1, std::memory_order_relaxed);
  }
  ~InFlight() { unanswered->fetch_sub(1, std::memory_order_relaxed); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  boost::asio::steady_timer deadline;
  CallHandler handler;
  LateReplyHandler late;
  std::weak_ptr<RedisConnection> connection;  // the one the reply will come on
  bool finished = false;
  std::shared_ptr<std::atomic<std::size_t>> unanswered;  // the pool's count, this call in it

  void finish(const redisReply* reply, std::string_view error) {
    if (finished) return;
    finished = true;
    deadline.cancel();
    // Let go of the handler now: what it holds (the caller's request, and with it a client's
    // session) must not wait for a reply that may come seconds later, or never.
    const CallHandler done = std::move(handler);
    handler = nullptr;
    done(reply, error);
  }

  // A script call's reply, on time or not.
  void answer(const redisReply* reply, std::string_view error) {
    if (!finished) return finish(reply, error);
    if (reply != nullptr && late) late(reply);
  }
};

// A fresh connection's PING, asking whether Redis answers by a new path. Shared with its
// handlers, which do nothing once `done` is set (the probe ended, or the pool is gone).
struct ServerPool::Probe {
  explicit Probe(boost::asio::io_context& io) : deadline(io) {}
  std::shared_ptr<RedisConnection> connection;
  boost::asio::steady_timer deadline;
  bool done = false;
};

std::shared_ptr<ServerPool::InFlight> ServerPool::startDeadline(std::chrono::microseconds timeout,
                                                                RedisConnection& connection,
                                                                CallHandler handler) {
  auto flight = std::make_shared<InFlight>(io_, std::move(handler), unanswered_);
  flight->connection = connection.weak_from_this();
  flight->deadline.expires_after(timeout);
  // `this` is used only while the call is unfinished: the pool's destructor fails every call
  // (closing their connections), so an unfinished call means the pool is still there.
  flight->deadline.async_wait([this, flight, timeout](const boost::system::error_code& error) {
    // Finished: the reply came after this handler was queued (cancel() cannot recall it).
    if (error || flight->finished) return;
    // A reply that reached the socket while this handler waited in the loop's queue (the loop
    // busy, or the process descheduled) is taken as on time: it came no later than the loop
    // could have looked.
    if (const auto receiving = flight->connection.lock()) receiving->readArrived();
    if (flight->finished) return;  // that read finished it
    logTimeout(timeout);
    probeIfSilent();  // first: the caller's handler may go on to anything
    flight->finish(nullptr, kTimedOut);
  });
  return flight;
}

bool ServerPool::roomForACall() {
  if (unanswered_->load(std::memory_order_relaxed) < kMaxUnansweredCalls) {
    refusing_ = false;
    return true;
  }
  // Logged when the refusals begin, not at every one (the throttle is shared between threads).
  if (!refusing_) {
    refusing_ = true;
    if (const std::optional<std::uint64_t> dropped = logs_->backlog.admit()) {
      spdlog::warn(
          "redis {}: {} calls unanswered; further calls fail at once (their decisions are "
          "degraded) until Redis answers{}",
          address_, kMaxUnansweredCalls, LogThrottle::droppedNote(*dropped, "times"));
    }
  }
  // No call goes out, so none times out to look for a silent path: look here, or a path gone
  // silent (a moved address that sends no reset) would be kept until the kernel gave up on it.
  probeIfSilent();
  return false;
}

void ServerPool::logTimeout(std::chrono::microseconds timeout) {
  const std::optional<std::uint64_t> dropped = logs_->timeouts.admit();
  if (!dropped) return;
  spdlog::warn(
      "redis {}: no answer within {} ms; such calls fail and their decisions are degraded "
      "(each limit's on_error decides; a synced node decides alone), and an answer that comes "
      "late is settled then{}",
      address_, (timeout.count() + 500) / 1000,  // the call's deadline, rounded to ms
      LogThrottle::droppedNote(*dropped, "timed out"));
}

ServerPool::ServerPool(boost::asio::io_context& io, std::string host, std::uint16_t port,
                       std::size_t connections, RedisAuth auth, int database)
    : io_(io),
      host_(host),
      port_(port),
      address_(host.starts_with('/') ? "unix:" + host : host + ":" + std::to_string(port)),
      auth_(std::move(auth)),
      database_(database),
      logs_(ServerLogThrottles::forServer(address_)) {
  // hiredis writes with write(2): a write to a Redis that just died raises SIGPIPE, whose
  // default action kills the process. A rate limiter must outlive its store, so ignore it
  // (process-wide, as every network server does; Asio's own sockets never raise it).
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
  for (std::size_t i = 0; i < connections; ++i) {
    ConnectionOptions options;
    options.host = host;
    options.port = port;
    options.auth = auth_;
    options.database = database_;
    options.on_state = [this](bool up, bool was_up, std::string_view reason) {
      onConnectionState(up, was_up, reason);
    };
    // Load the script first on every new connection (a restarted Redis has forgotten it), so
    // the EVALSHAs queued behind it find it.
    options.on_connect = [](RedisConnection& connection) {
      const std::string_view argv[] = {"SCRIPT", "LOAD", sluiceLuaScript().text};
      connection.send(argv, [](const redisReply*, std::string_view) {});
    };
    connections_.push_back(RedisConnection::create(io, std::move(options)));
  }
}

ServerPool::~ServerPool() {
  if (probe_ != nullptr) {
    probe_->done = true;  // its handlers must not touch this pool any more
    probe_->deadline.cancel();
    probe_->connection->close();
  }
  for (const auto& connection : connections_) connection->close();
  Reachability::instance().forget(address_, up_);
}

void ServerPool::onConnectionState(bool up, bool was_up, std::string_view reason) {
  if (up) {
    ++up_;
    Reachability::instance().up(address_);
  } else {
    if (was_up) --up_;
    Reachability::instance().down(address_, was_up, reason, !auth_.password.empty());
  }
}

void ServerPool::start() {
  for (const auto& connection : connections_) connection->start();
}

bool ServerPool::connected() const noexcept {
  for (const auto& connection : connections_) {
    if (connection->connected()) return true;
  }
  return false;
}

bool ServerPool::everyConnectionTried() const noexcept {
  for (const auto& connection : connections_) {
    if (!connection->triedConnecting()) return false;
  }
  return true;
}

RedisConnection* ServerPool::pick() noexcept {
  for (std::size_t tried = 0; tried < connections_.size(); ++tried) {
    RedisConnection* connection = connections_[next_++ % connections_.size()].get();
    if (connection->connected()) return connection;
  }
  return nullptr;
}

void ServerPool::call(std::shared_ptr<const ScriptCall> call, std::chrono::microseconds timeout,
                      CallHandler handler, LateReplyHandler late, bool asking) {
  RedisConnection* connection = pick();
  if (connection == nullptr) return handler(nullptr, "not connected to " + address_);
  // Refunds (no late handler) go out whatever the count: refused, a late reply's refund left
  // the limit over-counted, and they come only as replies do.
  if (late && !roomForACall()) return handler(nullptr, "too many calls unanswered by " + address_);
  auto flight = startDeadline(timeout, *connection, std::move(handler));
  flight->late = std::move(late);
  if (asking) {
    const std::string_view argv[] = {"ASKING"};
    connection->send(argv, [](const redisReply*, std::string_view) {});
  }
  const std::vector<std::string_view> argv = call->argv();
  const bool sent = connection->send(
      argv, [this, flight, call, asking](const redisReply* reply, std::string_view error) {
        if (!isNoScript(reply)) {
          logRefusal(reply);
          return flight->answer(reply, error);
        }
        if (flight->finished) return;  // the script did not run, and nobody waits any more
        // Redis lost the script (restart, SCRIPT FLUSH): send its text once; that loads it.
        RedisConnection* again = pick();
        const std::vector<std::string_view> eval = call->evalArgv();
        if (again != nullptr) flight->connection = again->weak_from_this();
        if (again != nullptr && asking) {
          const std::string_view ask[] = {"ASKING"};
          again->send(ask, [](const redisReply*, std::string_view) {});
        }
        if (again == nullptr ||
            !again->send(eval, [this, flight](const redisReply* retried, std::string_view why) {
              logRefusal(retried);
              flight->answer(retried, why);
            })) {
          flight->finish(nullptr, "not connected to " + address_);
        }
      });
  if (!sent) flight->finish(nullptr, "could not send to " + address_);
}

void ServerPool::command(std::vector<std::string> argv, std::chrono::microseconds timeout,
                         CallHandler handler) {
  RedisConnection* connection = pick();
  if (connection == nullptr) return handler(nullptr, "not connected to " + address_);
  auto flight = startDeadline(timeout, *connection, std::move(handler));
  const std::vector<std::string_view> views(argv.begin(), argv.end());
  if (!connection->send(views, [flight](const redisReply* reply, std::string_view error) {
        flight->finish(reply, error);
      })) {
    flight->finish(nullptr, "could not send to " + address_);
  }
}

void ServerPool::logRefusal(const redisReply* reply) {
  const std::string_view error = errorText(reply);
  if (error.empty() || error.starts_with("MOVED ") || error.starts_with("ASK ")) return;
  const std::optional<std::uint64_t> dropped = logs_->refusals.admit();
  if (!dropped) return;
  spdlog::warn(
      "redis {}: refused a script call: {}; such calls fail and their decisions are degraded "
      "(each limit's on_error decides; a synced node decides alone){}",
      address_, error.substr(0, 300), LogThrottle::droppedNote(*dropped, "refused"));
}

void ServerPool::logUnreadableReply(std::string_view why) {
  const std::optional<std::uint64_t> dropped = logs_->unreadable.admit();
  if (!dropped) return;
  spdlog::warn(
      "redis {}: a script call's reply cannot be read ({}); is this Redis running Sluice's "
      "script? Such calls fail and their decisions are degraded (each limit's on_error decides; "
      "a synced node decides alone){}",
      address_, why.substr(0, 300), LogThrottle::droppedNote(*dropped, "unreadable"));
}

void ServerPool::probeIfSilent() {
  if (probe_ != nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& connection : connections_) {
    if (connection->connected() && connection->silence(now) >= kSilenceLimit) return openProbe();
  }
}

void ServerPool::openProbe() {
  auto probe = std::make_shared<Probe>(io_);
  probe_ = probe;
  ConnectionOptions options;
  options.host = host_;
  options.port = port_;
  options.auth = auth_;
  options.connect_timeout = kProbeTimeout;
  // No script load: PING is all it sends. Weak, as the connection keeps its options.
  options.on_connect = [this, weak = std::weak_ptr<Probe>(probe)](RedisConnection& connection) {
    const std::string_view ping[] = {"PING"};
    connection.send(ping, [this, weak](const redisReply* reply, std::string_view) {
      const auto running = weak.lock();
      if (running == nullptr || running->done) return;
      endProbe(running, reply != nullptr && reply->type != REDIS_REPLY_ERROR);
    });
  };
  probe->connection = RedisConnection::create(io_, std::move(options));
  probe->deadline.expires_after(kProbeTimeout);
  probe->deadline.async_wait([this, probe](const boost::system::error_code& error) {
    if (!error && !probe->done) endProbe(probe, false);
  });
  probe->connection->start();
}

void ServerPool::endProbe(const std::shared_ptr<Probe>& probe, bool answered) {
  probe->done = true;
  probe->deadline.cancel();
  probe_.reset();
  // Closed on the loop's next turn: this may run inside the probe's own reply callback.
  boost::asio::post(io_, [connection = probe->connection] { connection->close(); });
  if (answered) resetSilentConnections();
}

void ServerPool::resetSilentConnections() {
  const auto now = std::chrono::steady_clock::now();
  const auto silent = [now](const RedisConnection& connection) {
    return connection.connected() && connection.silence(now) >= kSilenceLimit;
  };
  for (const auto& connection : connections_) {
    if (!silent(*connection)) continue;
    // A Redis resuming from a freeze answers the commands already queued on these connections
    // before the probe, which it has yet to accept: replies in the socket mean the path works.
    connection->readArrived();
    if (silent(*connection)) connection->reset();
  }
}

}  // namespace sluice::redis
