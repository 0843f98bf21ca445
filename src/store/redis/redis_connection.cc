#include "store/redis/redis_connection.h"

#include <random>
#include <vector>

#include <boost/asio/post.hpp>

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

namespace sluice::redis {

namespace net = boost::asio;

std::shared_ptr<RedisConnection> RedisConnection::create(net::io_context& io,
                                                         ConnectionOptions options) {
  return std::shared_ptr<RedisConnection>(new RedisConnection(io, std::move(options)));
}

RedisConnection::RedisConnection(net::io_context& io, ConnectionOptions options)
    : io_(io),
      options_(std::move(options)),
      socket_(io),
      timer_(io),
      retry_delay_(options_.first_retry) {}

RedisConnection::~RedisConnection() {
  closing_ = true;
  if (context_ != nullptr) redisAsyncFree(context_);  // fails pending commands, then cleanup
}

void RedisConnection::start() { connect(); }

void RedisConnection::close() {
  closing_ = true;
  timer_.cancel();
  if (context_ != nullptr) redisAsyncFree(context_);
}

void RedisConnection::reset() {
  if (context_ != nullptr) redisAsyncFree(context_);  // fails pending commands; cleanup reconnects
}

void RedisConnection::connect() {
  if (closing_) return;
  redisAsyncContext* context = options_.host.starts_with('/')
                                   ? redisAsyncConnectUnix(options_.host.c_str())
                                   : redisAsyncConnect(options_.host.c_str(), options_.port);
  if (context == nullptr) return scheduleReconnect();
  if (context->err != 0) {
    // Failed at once, as a Unix socket that is not there (or has no listener) does: no cleanup
    // will follow to say so, so say it here, or such a Redis was never reported unreachable.
    const std::string reason = context->errstr;
    redisAsyncFree(context);
    if (options_.on_state) options_.on_state(false, false, reason);
    return scheduleReconnect();
  }
  context_ = context;
  // Watch the socket before hooking the events: setting the connect callback already asks to
  // wait for writability.
  boost::system::error_code ignored;
  socket_.assign(context->c.fd, ignored);
  context->data = this;
  context->ev.data = this;
  context->ev.addRead = &RedisConnection::addRead;
  context->ev.delRead = &RedisConnection::delRead;
  context->ev.addWrite = &RedisConnection::addWrite;
  context->ev.delWrite = &RedisConnection::delWrite;
  context->ev.cleanup = &RedisConnection::cleanup;
  redisAsyncSetConnectCallback(context, &RedisConnection::connectCallback);
  redisAsyncSetDisconnectCallback(context, &RedisConnection::disconnectCallback);
  // The connect completes when the socket turns writable. hiredis 0.14 asks for that when the
  // connect callback is set; ask again in case another version does not (it is idempotent).
  addWrite(this);
  timer_.expires_after(options_.connect_timeout);
  timer_.async_wait(
      [weak = weak_from_this(), generation = generation_](const boost::system::error_code& error) {
        const auto self = weak.lock();
        // The deadline covers AUTH and SELECT too: a path that goes silent right after the TCP
        // connect would otherwise leave the connection setting up for good, never used.
        if (error || self == nullptr || self->generation_ != generation || self->connected())
          return;
        self->last_error_ =
            self->connected_ ? "no answer to AUTH or SELECT in time" : "connect timed out";
        redisAsyncFree(self->context_);  // too slow to connect: give up on this attempt
      });
}

void RedisConnection::scheduleReconnect() {
  tried_connecting_ = true;  // every failed attempt, and every lost connection, comes here
  if (closing_) return;
  // Jitter, between half the delay and all of it: the connections of every node that lost the
  // same Redis would otherwise come back to it in step.
  thread_local std::minstd_rand random(std::random_device{}());
  const auto half = retry_delay_ / 2;
  timer_.expires_after(half + std::chrono::milliseconds(random() % (half.count() + 1)));
  retry_delay_ = std::min(retry_delay_ * 2, options_.last_retry);
  timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& error) {
    if (const auto self = weak.lock(); !error && self != nullptr && self->context_ == nullptr)
      self->connect();
  });
}

void RedisConnection::armRead() {
  if (read_armed_ || context_ == nullptr) return;
  read_armed_ = true;
  socket_.async_wait(net::posix::stream_descriptor::wait_read,
                     [self = shared_from_this(),
                      generation = generation_](const boost::system::error_code& error) {
                       if (self->generation_ != generation) return;  // another context's wait
                       self->read_armed_ = false;
                       if (error || !self->want_read_) return;
                       redisAsyncHandleRead(self->context_);
                       // The read may have freed the context (a closed connection).
                       if (self->generation_ == generation && self->want_read_) self->armRead();
                     });
}

void RedisConnection::armWrite() {
  if (write_armed_ || context_ == nullptr) return;
  write_armed_ = true;
  // A connected socket almost always has room, and waiting for writability costs an epoll_ctl
  // per wait (Asio re-registers the descriptor for every async_wait): write on the loop's next
  // turn instead, so the commands queued meanwhile go out in one write. Only what did not fit
  // waits for the socket. A connect does wait: writability is what says it completed.
  if (connected_) {
    net::post(io_, [self = shared_from_this(), generation = generation_] {
      if (self->generation_ == generation) self->write();
    });
    return;
  }
  waitWritable();
}

void RedisConnection::waitWritable() {
  socket_.async_wait(net::posix::stream_descriptor::wait_write,
                     [self = shared_from_this(),
                      generation = generation_](const boost::system::error_code& error) {
                       if (self->generation_ != generation) return;
                       if (error) {
                         self->write_armed_ = false;
                         return;
                       }
                       self->write();
                     });
}

// Runs with write_armed_ set, so that hiredis asking to write more (from inside
// redisAsyncHandleWrite) does not post again: what is left waits for the socket instead.
void RedisConnection::write() {
  if (want_write_) {
    const std::uint64_t generation = generation_;
    redisAsyncHandleWrite(context_);
    if (generation_ != generation) return;  // the write failed and freed the context
    if (want_write_) return waitWritable();
  }
  write_armed_ = false;
}

bool RedisConnection::send(std::span<const std::string_view> argv, ReplyHandler handler) {
  if (!connected_ || context_ == nullptr) return false;
  std::vector<const char*> pointers;
  std::vector<std::size_t> lengths;
  pointers.reserve(argv.size());
  lengths.reserve(argv.size());
  for (const std::string_view arg : argv) {
    pointers.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  auto* owned = new ReplyHandler(std::move(handler));
  if (redisAsyncCommandArgv(context_, &RedisConnection::replyCallback, owned,
                            static_cast<int>(argv.size()), pointers.data(),
                            lengths.data()) != REDIS_OK) {
    delete owned;
    return false;
  }
  if (unanswered_++ == 0) waiting_since_ = std::chrono::steady_clock::now();
  return true;
}

void RedisConnection::readArrived() {
  // hiredis reads once per call and treats EAGAIN as "nothing yet", so this never blocks.
  if (connected_ && context_ != nullptr && want_read_) redisAsyncHandleRead(context_);
}

void RedisConnection::onConnected(int status) {
  if (status != REDIS_OK) return;  // hiredis frees the context next; cleanup reconnects
  connected_ = true;
  answered_ = false;    // the backoff starts again once Redis answers (see the header)
  last_error_.clear();  // a new connection: no reason yet to drop it
  setup_refused_ = false;
  setup_pending_ = 0;
  sendSetup();
  // With AUTH or SELECT out, the attempt ends when they are answered (onReply): until then the
  // connect deadline stands, and callers treat the connection as still connecting.
  if (setup_pending_ == 0) setupDone();
  if (options_.on_connect) options_.on_connect(*this);
}

void RedisConnection::setupDone() {
  tried_connecting_ = true;
  timer_.cancel();
}

void RedisConnection::sendSetup() {
  if (!options_.auth.password.empty()) {
    std::vector<std::string_view> argv = {"AUTH"};
    if (!options_.auth.username.empty()) argv.push_back(options_.auth.username);
    argv.push_back(options_.auth.password);
    sendSetupCommand(argv, options_.auth.username.empty() ? std::string("AUTH")
                                                          : "AUTH as " + options_.auth.username);
  }
  if (options_.database != 0) {
    const std::string index = std::to_string(options_.database);
    const std::string_view argv[] = {"SELECT", index};
    sendSetupCommand(argv, "SELECT " + index);
  }
}

void RedisConnection::sendSetupCommand(std::span<const std::string_view> argv, std::string what) {
  if (!connected_ || context_ == nullptr) return;
  const bool sent = send(argv, [weak = weak_from_this(), generation = generation_,
                                what = std::move(what)](const redisReply* reply, std::string_view) {
    const auto self = weak.lock();
    if (self == nullptr || reply == nullptr || self->generation_ != generation) return;
    if (reply->type != REDIS_REPLY_ERROR) return;
    // The commands queued behind may still succeed (a script load needs no AUTH where Redis has
    // no password): they must not make the connection count as up.
    self->setup_refused_ = true;
    // The reason on_state gives (ServerPool logs it); the connection then retries.
    self->last_error_ = what + " refused: " + std::string(reply->str, reply->len);
    // Not from inside this connection's own reply handler (reset() says why): on the next turn.
    net::post(self->io_, [weak, generation] {
      const auto connection = weak.lock();
      if (connection != nullptr && connection->generation_ == generation) connection->reset();
    });
  });
  if (sent) {
    ++setup_pending_;
  } else {
    setup_refused_ = true;  // cannot happen while connected; never use the connection if it does
  }
}

void RedisConnection::onReply(const redisReply* reply) {
  if (setup_pending_ > 0) {
    // AUTH or SELECT: let in, but not up until a command of its own succeeds.
    if (--setup_pending_ == 0 && !setup_refused_ && reply->type != REDIS_REPLY_ERROR) setupDone();
  } else if (setup_refused_) {
    // About to be reset: neither up nor a reason to restart the backoff.
  } else if (!answered_ && reply->type != REDIS_REPLY_ERROR) {
    answered_ = true;
    answered_at_ = std::chrono::steady_clock::now();
    // Up once Redis answers, not at the TCP connect: a Redis that wants a password accepts the
    // connection, refuses every command, then drops it for sending the script unauthenticated.
    reported_up_ = true;
    last_error_.clear();  // an error before it was up is no reason for a later drop
    if (options_.on_state) options_.on_state(true, false, {});
  } else if (!answered_ && last_error_.empty()) {
    last_error_.assign(reply->str, reply->len);  // e.g. NOAUTH: why it is not up, for on_state
  }
  // Only while more wait: one clock read per reply at most, none when the pipeline empties.
  if (unanswered_ > 0 && --unanswered_ > 0) waiting_since_ = std::chrono::steady_clock::now();
}

void RedisConnection::onCleanup() {
  // hiredis runs this before its disconnect callback, with the context still whole: the place to
  // read why it failed (a reason kept from a reply, or a refused AUTH, comes first).
  if (last_error_.empty() && context_ != nullptr && context_->errstr[0] != '\0') {
    last_error_ = context_->errstr;
  }
  ++generation_;
  const bool was_up = reported_up_;
  reported_up_ = false;
  // A connection that served a while was a working one: the next is tried at once. One dropped
  // right after its first answer is a server that answers, then drops (see the header).
  if (answered_ && std::chrono::steady_clock::now() - answered_at_ >= kSettledAfter) {
    retry_delay_ = options_.first_retry;
  }
  // Said of this connection only: the attempts after it that fail (a refused or timed-out
  // connect also ends here) must keep growing the backoff.
  answered_ = false;
  connected_ = false;
  unanswered_ = 0;  // hiredis failed them all
  want_read_ = want_write_ = read_armed_ = write_armed_ = false;
  context_ = nullptr;
  // hiredis owns the descriptor and closes it; only stop watching it.
  if (socket_.is_open()) socket_.release();
  if (options_.on_state && !closing_) {
    options_.on_state(false, was_up, last_error_.empty() ? "connection lost" : last_error_);
  }
  last_error_.clear();
  scheduleReconnect();
}

void RedisConnection::addRead(void* data) {
  auto* self = static_cast<RedisConnection*>(data);
  self->want_read_ = true;
  self->armRead();
}

void RedisConnection::delRead(void* data) {
  static_cast<RedisConnection*>(data)->want_read_ = false;
}

void RedisConnection::addWrite(void* data) {
  auto* self = static_cast<RedisConnection*>(data);
  self->want_write_ = true;
  self->armWrite();
}

void RedisConnection::delWrite(void* data) {
  static_cast<RedisConnection*>(data)->want_write_ = false;
}

void RedisConnection::cleanup(void* data) { static_cast<RedisConnection*>(data)->onCleanup(); }

void RedisConnection::connectCallback(const redisAsyncContext* context, int status) {
  static_cast<RedisConnection*>(context->data)->onConnected(status);
}

void RedisConnection::disconnectCallback(const redisAsyncContext* /*context*/, int /*status*/) {
  // Nothing: cleanup, which every way of losing the context goes through and which hiredis runs
  // first, does it all.
}

void RedisConnection::replyCallback(redisAsyncContext* context, void* reply, void* handler) {
  std::unique_ptr<ReplyHandler> owned(static_cast<ReplyHandler*>(handler));
  auto* self = context != nullptr ? static_cast<RedisConnection*>(context->data) : nullptr;
  if (self != nullptr && reply != nullptr) self->onReply(static_cast<const redisReply*>(reply));
  if (reply == nullptr) {
    (*owned)(nullptr, context != nullptr && context->errstr != nullptr ? context->errstr
                                                                       : "connection lost");
    return;
  }
  (*owned)(static_cast<const redisReply*>(reply), {});
}

}  // namespace sluice::redis
