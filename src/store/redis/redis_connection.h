// One connection to one Redis server: a hiredis async context whose socket an Asio io_context
// watches. Many commands may be in flight at once (pipelining); replies come back in order.
// Reconnects in the background after any failure, with a capped backoff and jitter. The backoff
// starts again from the first delay only for a connection Redis answered on that then stayed up
// a while (kSettledAfter): a server that accepts connections and then drops them (Redis at
// maxclients, a proxy whose backend is down), even after answering a command, would otherwise
// be reconnected to, and sent the script, every first delay.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

struct redisAsyncContext;
struct redisReply;

namespace sluice::redis {

// Redis AUTH: a password (requirepass, or an ACL user's) and, for an ACL user other than
// `default`, its name. No password: no AUTH is sent.
struct RedisAuth {
  std::string username;
  std::string password;
};

struct ConnectionOptions {
  // A host starting with '/' is the path of a Unix socket (and the port is not used).
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::chrono::milliseconds connect_timeout{500};
  // Between reconnect attempts: doubles from the first to the last.
  std::chrono::milliseconds first_retry{20};
  std::chrono::milliseconds last_retry{250};
  // Sent first on every (re)connect. A refused AUTH drops the connection (on_state says why),
  // which then retries with the backoff: the commands queued behind it fail as unavailable, and
  // an operator who fixes the password on the server needs no restart.
  RedisAuth auth;
  // SELECTed after AUTH on every (re)connect when not 0; refused like AUTH (a plain Redis only:
  // a cluster has database 0 alone).
  int database = 0;
  // Runs on the loop when the connection comes up (`up`: past AUTH and SELECT, Redis answered a
  // command without an error, the script load as a rule), and when it goes down or an attempt fails
  // (`up` false; `was_up` says whether it had come up), with the reason: for ServerPool to say when
  // a server became unreachable and when it is back. Not after close().
  std::function<void(bool up, bool was_up, std::string_view reason)> on_state;
  // Runs on the loop after every successful (re)connect, after AUTH and SELECT are queued and
  // before any other command can be sent; the place to load scripts. May send commands on the
  // connection it is given.
  std::function<void(class RedisConnection&)> on_connect;
};

class RedisConnection : public std::enable_shared_from_this<RedisConnection> {
 public:
  // `reply` is null when the connection failed before the reply came (then `error` says why);
  // otherwise it may be an error reply. It is valid only during the call.
  using ReplyHandler = std::function<void(const redisReply* reply, std::string_view error)>;
  // How long a connection must stay up after Redis first answers on it for its loss to start the
  // backoff again from the first delay.
  static constexpr std::chrono::seconds kSettledAfter{1};

  // Not connected yet: call start(). Every member runs on `io`'s thread.
  static std::shared_ptr<RedisConnection> create(boost::asio::io_context& io,
                                                 ConnectionOptions options);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  void start();
  // Fails pending commands and stops reconnecting.
  void close();
  // Drops the connection, failing pending commands, and reconnects after the backoff, as after
  // any lost connection. Not from inside one of this connection's own reply handlers.
  void reset();
  // Connected and ready for commands: AUTH and SELECT answered. Commands queued behind a SELECT
  // that then failed would run in database 0.
  [[nodiscard]] bool connected() const noexcept {
    return connected_ && setup_pending_ == 0 && !setup_refused_;
  }
  // Whether a connect attempt has ended, connected or not: until then, not being connected
  // says nothing about the server.
  [[nodiscard]] bool triedConnecting() const noexcept { return tried_connecting_; }
  [[nodiscard]] const ConnectionOptions& options() const noexcept { return options_; }
  // The backoff the next failure waits (before jitter), from first_retry to last_retry.
  [[nodiscard]] std::chrono::milliseconds retryDelay() const noexcept { return retry_delay_; }

  // Queues a command. False (and `handler` is not called) when not connected; otherwise
  // `handler` runs exactly once, on the loop.
  bool send(std::span<const std::string_view> argv, ReplyHandler handler);

  // How long the oldest command still unanswered has gone without any reply on this
  // connection: since it was sent, or since the last reply if one came later. Zero when every
  // command is answered. It grows on a path that went silent (no FIN or RST) as on a frozen
  // Redis; ServerPool tells the two apart.
  [[nodiscard]] std::chrono::steady_clock::duration silence(
      std::chrono::steady_clock::time_point now) const noexcept {
    return unanswered_ == 0 ? std::chrono::steady_clock::duration::zero() : now - waiting_since_;
  }

  // Reads the replies that have already arrived, without waiting, and runs their handlers. A
  // deadline calls this before giving up: its handler may have waited in the loop's queue (the
  // loop busy, or the process descheduled) while the reply reached the socket. One read, as
  // hiredis does per call (up to 16 KB): a reply behind more than that still times out.
  void readArrived();

 private:
  RedisConnection(boost::asio::io_context& io, ConnectionOptions options);

  void connect();
  void scheduleReconnect();
  void armRead();
  void armWrite();
  void waitWritable();
  void write();
  void onConnected(int status);
  // AUTH and SELECT, first on a new connection; a refusal resets it (sendSetupCommand).
  void sendSetup();
  void sendSetupCommand(std::span<const std::string_view> argv, std::string what);
  // AUTH and SELECT answered (or none sent): the connect attempt has ended, and its deadline.
  void setupDone();
  void onReply(const redisReply* reply);
  void onCleanup();

  // hiredis's C hooks; `data` is the RedisConnection.
  static void addRead(void* data);
  static void delRead(void* data);
  static void addWrite(void* data);
  static void delWrite(void* data);
  static void cleanup(void* data);
  static void connectCallback(const redisAsyncContext* context, int status);
  static void disconnectCallback(const redisAsyncContext* context, int status);
  static void replyCallback(redisAsyncContext* context, void* reply, void* handler);

  boost::asio::io_context& io_;
  ConnectionOptions options_;
  redisAsyncContext* context_ = nullptr;
  boost::asio::posix::stream_descriptor socket_;
  boost::asio::steady_timer timer_;  // connect timeout, then reconnect backoff
  std::chrono::milliseconds retry_delay_;
  // Bumped whenever the context goes away, so socket waits armed for it do nothing.
  std::uint64_t generation_ = 0;
  bool connected_ = false;
  bool tried_connecting_ = false;
  bool answered_ = false;  // Redis has answered a command since the last connect
  std::chrono::steady_clock::time_point answered_at_;  // when it first did
  std::string last_error_;    // why the context is going away, for on_state
  bool reported_up_ = false;  // on_state was told this context came up
  // AUTH and SELECT replies still to come on this context: they do not make it up.
  std::size_t setup_pending_ = 0;
  bool setup_refused_ = false;  // AUTH or SELECT failed on this context: it is being reset
  std::size_t unanswered_ = 0;  // commands sent on this context and not answered yet
  // When the oldest unanswered command was sent, or the last reply came if later.
  std::chrono::steady_clock::time_point waiting_since_;
  bool closing_ = false;
  bool want_read_ = false;
  bool want_write_ = false;
  bool read_armed_ = false;
  bool write_armed_ = false;
};

}  // namespace sluice::redis
