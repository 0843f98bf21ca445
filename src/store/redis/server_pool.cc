#include "store/redis/server_pool.h"

#include <hiredis/hiredis.h>
#include <csignal>
#include <mutex>

#include <boost/asio/steady_timer.hpp>

namespace sluice::redis {
namespace {

// One call in flight: finished by its reply or its deadline, whichever comes first.
struct InFlight {
  explicit InFlight(boost::asio::io_context& io, ServerPool::CallHandler on_done)
      : deadline(io), handler(std::move(on_done)) {}
  boost::asio::steady_timer deadline;
  ServerPool::CallHandler handler;
  ServerPool::LateReplyHandler late;
  std::weak_ptr<RedisConnection> connection;  // the one the reply will come on
  bool finished = false;

  void finish(const redisReply* reply, std::string_view error) {
    if (finished) return;
    finished = true;
    deadline.cancel();
    handler(reply, error);
  }

  // A script call's reply, on time or not.
  void answer(const redisReply* reply, std::string_view error) {
    if (!finished) return finish(reply, error);
    if (reply != nullptr && late) late(reply);
  }
};

std::shared_ptr<InFlight> startDeadline(boost::asio::io_context& io,
                                        std::chrono::microseconds timeout,
                                        RedisConnection& connection,
                                        ServerPool::CallHandler handler) {
  auto flight = std::make_shared<InFlight>(io, std::move(handler));
  flight->connection = connection.weak_from_this();
  flight->deadline.expires_after(timeout);
  flight->deadline.async_wait([flight](const boost::system::error_code& error) {
    // Finished: the reply came after this handler was queued (cancel() cannot recall it).
    if (error || flight->finished) return;
    // A reply that reached the socket while this handler waited in the loop's queue (the loop
    // busy, or the process descheduled) is taken as on time: it came no later than the loop
    // could have looked.
    if (const auto receiving = flight->connection.lock()) receiving->readArrived();
    flight->finish(nullptr, "timed out");  // nothing if that read finished it
  });
  return flight;
}

}  // namespace

ServerPool::ServerPool(boost::asio::io_context& io, std::string host, std::uint16_t port,
                       std::size_t connections)
    : io_(io), address_(host + ":" + std::to_string(port)) {
  // hiredis writes with write(2): a write to a Redis that just died raises SIGPIPE, whose
  // default action kills the process. A rate limiter must outlive its store, so ignore it
  // (process-wide, as every network server does; Asio's own sockets never raise it).
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
  for (std::size_t i = 0; i < connections; ++i) {
    ConnectionOptions options;
    options.host = host;
    options.port = port;
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
  for (const auto& connection : connections_) connection->close();
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
  auto flight = startDeadline(io_, timeout, *connection, std::move(handler));
  flight->late = std::move(late);
  if (asking) {
    const std::string_view argv[] = {"ASKING"};
    connection->send(argv, [](const redisReply*, std::string_view) {});
  }
  const std::vector<std::string_view> argv = call->argv();
  const bool sent = connection->send(
      argv, [this, flight, call, asking](const redisReply* reply, std::string_view error) {
        if (!isNoScript(reply)) return flight->answer(reply, error);
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
            !again->send(eval, [flight](const redisReply* retried, std::string_view why) {
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
  auto flight = startDeadline(io_, timeout, *connection, std::move(handler));
  const std::vector<std::string_view> views(argv.begin(), argv.end());
  if (!connection->send(views, [flight](const redisReply* reply, std::string_view error) {
        flight->finish(reply, error);
      })) {
    flight->finish(nullptr, "could not send to " + address_);
  }
}

}  // namespace sluice::redis
