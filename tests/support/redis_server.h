// Test helpers: a real redis-server on a loopback port, owned by the test, and a small
// synchronous hiredis client for talking to it. Header-only; link hiredis (pkg-config
// `hiredis`). Setup failures throw std::runtime_error, which GoogleTest reports as a failure.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace sluice::testing {

// A Redis reply, copied out of hiredis's reply object so it outlives the connection.
struct RedisReply {
  int type = REDIS_REPLY_NIL;  // REDIS_REPLY_STRING, _ARRAY, _INTEGER, _NIL, _STATUS, _ERROR
  long long integer = 0;
  std::string text;  // strings, statuses and errors
  std::vector<RedisReply> elements;

  [[nodiscard]] bool isError() const noexcept { return type == REDIS_REPLY_ERROR; }
};

// One synchronous connection. Not thread-safe. Every command is bounded by the timeout.
class RedisConnection {
 public:
  RedisConnection(int port, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const timeval limit = toTimeval(timeout);
    context_.reset(redisConnectWithTimeout("127.0.0.1", port, limit));
    if (!context_ || context_->err != 0) {
      throw std::runtime_error("cannot connect to redis on port " + std::to_string(port) + ": " +
                               (context_ ? context_->errstr : "out of memory"));
    }
    redisSetTimeout(context_.get(), limit);
  }

  // Sends one command and waits for its reply. Throws on a broken connection (not on an error
  // reply, which is returned).
  RedisReply command(const std::vector<std::string>& args) {
    append(args);
    return read();
  }

  // Pipelining: append() any number of commands, then read() their replies in order.
  void append(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const std::string& arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    if (redisAppendCommandArgv(context_.get(), static_cast<int>(args.size()), argv.data(),
                               lengths.data()) != REDIS_OK) {
      throw std::runtime_error(std::string("redis append failed: ") + context_->errstr);
    }
  }

  RedisReply read() {
    void* raw = nullptr;
    if (redisGetReply(context_.get(), &raw) != REDIS_OK || raw == nullptr) {
      throw std::runtime_error(std::string("redis read failed: ") + context_->errstr);
    }
    std::unique_ptr<redisReply, decltype(&freeReplyObject)> reply(static_cast<redisReply*>(raw),
                                                                  &freeReplyObject);
    return copy(*reply);
  }

 private:
  struct ContextFree {
    void operator()(redisContext* context) const noexcept { redisFree(context); }
  };

  static timeval toTimeval(std::chrono::milliseconds timeout) {
    timeval value{};
    value.tv_sec = static_cast<time_t>(timeout.count() / 1000);
    value.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
    return value;
  }

  static RedisReply copy(const redisReply& reply) {
    RedisReply out;
    out.type = reply.type;
    out.integer = reply.integer;
    if (reply.str != nullptr) out.text.assign(reply.str, reply.len);
    for (std::size_t i = 0; i < reply.elements; ++i)
      out.elements.push_back(copy(*reply.element[i]));
    return out;
  }

  std::unique_ptr<redisContext, ContextFree> context_;
};

// Whether the server answering on `connection` is the process `pid`. A port the probe freed can
// be taken by another test's Redis (ctest runs tests in parallel) before ours binds it: ours
// then exits, but the other answers PING meanwhile, and was once taken for a node of ours.
inline bool servedBy(RedisConnection& connection, pid_t pid) {
  const std::string info = connection.command({"INFO", "server"}).text;
  return info.find("process_id:" + std::to_string(pid) + "\r\n") != std::string::npos;
}

// A redis-server child process on 127.0.0.1, with no persistence and its own temporary
// directory. The destructor kills and reaps it and removes the directory.
class RedisServer {
 public:
  // `databases`: how many SELECT may choose from (one unless a test needs more). `unix_socket`:
  // listen on socketPath() too.
  explicit RedisServer(std::string binary = "/usr/bin/redis-server", int databases = 1,
                       bool unix_socket = false)
      : binary_(std::move(binary)), databases_(databases), unix_socket_(unix_socket) {
    std::string pattern = (std::filesystem::temp_directory_path() / "sluice-redis-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed for redis-server's directory");
    }
    dir_ = pattern;
    // A port freed by the probe can be taken by someone else before redis binds it: retry.
    for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
      port_ = freeLoopbackPort();
      if (!launch()) stop();
    }
    if (pid_ <= 0) throw std::runtime_error("redis-server did not start; see " + logPath());
  }

  ~RedisServer() {
    stop();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  [[nodiscard]] int port() const noexcept { return port_; }
  [[nodiscard]] std::string socketPath() const { return (dir_ / "redis.sock").string(); }
  [[nodiscard]] bool running() const noexcept { return pid_ > 0; }

  // Kills the server (SIGKILL: like a crash, nothing is saved) and reaps it. Idempotent.
  void stop() noexcept {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

  // Kills the server and starts a new, empty one on the same port.
  void restart() {
    stop();
    if (!launch()) {
      stop();
      throw std::runtime_error("redis-server did not restart on port " + std::to_string(port_));
    }
  }

  [[nodiscard]] RedisConnection connect() const { return RedisConnection(port_); }

 private:
  static int freeLoopbackPort() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error("socket() failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof address;
    const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                       getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    close(fd);
    if (!bound) throw std::runtime_error("cannot find a free loopback port");
    return ntohs(address.sin_port);
  }

  [[nodiscard]] std::string logPath() const { return (dir_ / "redis.log").string(); }

  // Starts the child and waits (bounded) until it answers PING; false if it does not.
  bool launch() {
    std::vector<std::string> args = {binary_,
                                     "--port",
                                     std::to_string(port_),
                                     "--bind",
                                     "127.0.0.1",
                                     "--save",
                                     "",
                                     "--appendonly",
                                     "no",
                                     "--dir",
                                     dir_.string(),
                                     "--logfile",
                                     logPath(),
                                     "--daemonize",
                                     "no",
                                     "--databases",
                                     std::to_string(databases_)};
    if (unix_socket_) {
      args.insert(args.end(), {"--unixsocket", socketPath(), "--unixsocketperm", "700"});
    }
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    // Its output goes nowhere (it logs to its file): holding the test's own stdout, a server
    // left behind by a test that crashed kept ctest waiting for the whole timeout.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int failed = posix_spawn(&pid, binary_.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (failed != 0) return false;
    pid_ = pid;
    return waitUntilAnswering(std::chrono::seconds(10));
  }

  bool waitUntilAnswering(std::chrono::steady_clock::duration limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {  // exited, e.g. the port was taken
        pid_ = -1;
        return false;
      }
      try {
        RedisConnection connection(port_, std::chrono::milliseconds(200));
        if (connection.command({"PING"}).text == "PONG" && servedBy(connection, pid_)) return true;
      } catch (const std::runtime_error&) {
        // not listening yet
      }
      // Polling a starting process, not timing a test: there is no event to wait on.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::string binary_;
  int databases_ = 1;
  bool unix_socket_ = false;
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace sluice::testing
