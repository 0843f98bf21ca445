// Test helper: a real Redis Cluster of masters (no replicas) on loopback ports, made by
// `redis-cli --cluster create`, owned by the test. The destructor kills and reaps every node and
// removes their directory. Header-only; link hiredis. Setup failures throw std::runtime_error.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/redis_server.h"

namespace sluice::testing {

class RedisCluster {
 public:
  explicit RedisCluster(std::size_t masters = 3) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "sluice-cluster-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    try {
      for (std::size_t i = 0; i < masters; ++i) nodes_.push_back(launchNode(i));
      create();
      waitUntilHealthy(std::chrono::seconds(30));
      for (Node& node : nodes_) node.id = connectPort(node.port).command({"CLUSTER", "MYID"}).text;
    } catch (...) {
      stopAll();
      throw;
    }
  }

  ~RedisCluster() {
    stopAll();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  [[nodiscard]] int port(std::size_t node) const { return nodes_.at(node).port; }
  [[nodiscard]] std::string address(std::size_t node) const {
    return "127.0.0.1:" + std::to_string(port(node));
  }
  [[nodiscard]] RedisConnection connect(std::size_t node) const {
    return RedisConnection(port(node));
  }

  // The node serving `slot`, as node `asked` sees the cluster.
  [[nodiscard]] std::size_t ownerOf(int slot, std::size_t asked = 0) const {
    const RedisReply ranges = connect(asked).command({"CLUSTER", "SLOTS"});
    for (const RedisReply& range : ranges.elements) {
      if (range.elements.size() < 3 || slot < range.elements[0].integer ||
          slot > range.elements[1].integer)
        continue;
      const int owner_port = static_cast<int>(range.elements[2].elements.at(1).integer);
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i].port == owner_port) return i;
      }
    }
    throw std::runtime_error("no node serves slot " + std::to_string(slot));
  }

  // Marks `slot` as moving from `from` to `to` (IMPORTING, then MIGRATING): from now on `from`
  // answers ASK for keys of the slot it does not hold.
  void beginMigration(int slot, std::size_t from, std::size_t to) {
    expectOk(connect(to).command(
        {"CLUSTER", "SETSLOT", std::to_string(slot), "IMPORTING", nodes_.at(from).id}));
    expectOk(connect(from).command(
        {"CLUSTER", "SETSLOT", std::to_string(slot), "MIGRATING", nodes_.at(to).id}));
  }

  // Moves `slot` with its keys from `from` to `to`, the way redis-cli --cluster reshard does,
  // and tells every node: afterwards `from` answers MOVED for it.
  void migrateSlot(int slot, std::size_t from, std::size_t to) {
    beginMigration(slot, from, to);
    RedisConnection source = connect(from);
    for (;;) {
      const RedisReply keys =
          source.command({"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), "100"});
      if (keys.elements.empty()) break;
      std::vector<std::string> migrate = {"MIGRATE", "127.0.0.1", std::to_string(port(to)), "", "0",
                                          "5000",    "KEYS"};
      for (const RedisReply& key : keys.elements) migrate.push_back(key.text);
      expectOk(source.command(migrate));
    }
    std::vector<std::size_t> order = {to, from};
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (i != to && i != from && nodes_[i].pid > 0) order.push_back(i);
    }
    for (const std::size_t node : order) {
      expectOk(connect(node).command(
          {"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", nodes_.at(to).id}));
    }
  }

  // SIGKILL, like a crash. Idempotent.
  void kill(std::size_t node) noexcept { stop(nodes_.at(node)); }
  // For a test that freezes one node (support/frozen_redis.h); -1 once killed.
  [[nodiscard]] pid_t pid(std::size_t node) const { return nodes_.at(node).pid; }

 private:
  struct Node {
    int port = 0;
    int bus_port = 0;
    pid_t pid = -1;
    std::string id;
  };

  static void expectOk(const RedisReply& reply) {
    if (reply.isError()) throw std::runtime_error("redis: " + reply.text);
  }

  static void stop(Node& node) noexcept {
    if (node.pid <= 0) return;
    ::kill(node.pid, SIGKILL);
    int status = 0;
    while (waitpid(node.pid, &status, 0) < 0 && errno == EINTR) {
    }
    node.pid = -1;
  }

  void stopAll() noexcept {
    for (Node& node : nodes_) stop(node);
  }

  static RedisConnection connectPort(int node_port) {
    return RedisConnection(node_port, std::chrono::milliseconds(2000));
  }

  static int freePort() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error("socket() failed");
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                       getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
    close(fd);
    if (!bound) throw std::runtime_error("cannot find a free loopback port");
    return ntohs(address.sin_port);
  }

  // Spawns `args` with stdout and stderr to `log`.
  static pid_t spawn(std::vector<std::string> args, const std::string& log) {
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid = -1;
    const int failed = posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    return failed != 0 ? -1 : pid;
  }

  // A port freed by the probe can be taken before redis binds it: retry with new ports.
  Node launchNode(std::size_t index) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      Node node;
      node.port = freePort();
      node.bus_port = freePort();
      if (node.bus_port == node.port) continue;
      const std::string name = "node" + std::to_string(index) + "-" + std::to_string(attempt);
      node.pid = spawn({"/usr/bin/redis-server", "--port", std::to_string(node.port),
                        "--cluster-port", std::to_string(node.bus_port), "--cluster-enabled", "yes",
                        "--cluster-config-file", (dir_ / (name + ".conf")).string(),
                        // Long enough that a killed node does not take the cluster down mid-test.
                        "--cluster-node-timeout", "60000", "--bind", "127.0.0.1", "--save", "",
                        "--appendonly", "no", "--dir", dir_.string(), "--daemonize", "no"},
                       (dir_ / (name + ".log")).string());
      if (node.pid > 0 && answers(node, std::chrono::seconds(10))) return node;
      stop(node);
    }
    throw std::runtime_error("redis-server (cluster node) did not start; see " + dir_.string());
  }

  static bool answers(Node& node, std::chrono::steady_clock::duration limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(node.pid, &status, WNOHANG) == node.pid) {
        node.pid = -1;
        return false;
      }
      try {
        RedisConnection connection = connectPort(node.port);
        if (connection.command({"PING"}).text == "PONG" && servedBy(connection, node.pid)) {
          return true;
        }
      } catch (const std::runtime_error&) {
        // not listening yet
      }
      // Polling a starting process, not timing a test.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  void create() {
    std::vector<std::string> args = {"/usr/bin/redis-cli", "--cluster", "create"};
    for (std::size_t i = 0; i < nodes_.size(); ++i) args.push_back(address(i));
    args.insert(args.end(), {"--cluster-replicas", "0", "--cluster-yes"});
    const std::string log = (dir_ / "create.log").string();
    const pid_t pid = spawn(args, log);
    if (pid <= 0) throw std::runtime_error("cannot run redis-cli");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        throw std::runtime_error("redis-cli --cluster create hung; see " + log);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      throw std::runtime_error("redis-cli --cluster create failed; see " + log);
    }
  }

  // Every node says the cluster is ok, with all slots assigned and every master known.
  void waitUntilHealthy(std::chrono::steady_clock::duration limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    const std::string known = "cluster_known_nodes:" + std::to_string(nodes_.size());
    while (std::chrono::steady_clock::now() < deadline) {
      bool healthy = true;
      for (const Node& node : nodes_) {
        const std::string info = connectPort(node.port).command({"CLUSTER", "INFO"}).text;
        healthy = healthy && info.find("cluster_state:ok") != std::string::npos &&
                  info.find("cluster_slots_assigned:16384") != std::string::npos &&
                  info.find(known) != std::string::npos;
      }
      if (healthy) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("the cluster did not become healthy; see " + dir_.string());
  }

  std::filesystem::path dir_;
  std::vector<Node> nodes_;
};

}  // namespace sluice::testing
