// The front doors `sluice serve` opens only when the config asks for them: Envoy's gRPC rate
// limit service (an envoy_rls: section) and the reverse-proxy gateway (a gateway: section). Each
// exists only in builds that include it; the decision API and admin listener are always there.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "policy/policy_loader.h"
#include "server/io_pool.h"
#include "server/service.h"
#include "sluice/time.h"
#ifdef SLUICE_WITH_RLS
#include <boost/asio/io_context.hpp>

#include "rls/rls_server.h"
#endif
#ifdef SLUICE_WITH_GATEWAY
#include "gateway/gateway.h"
#endif

namespace sluice::cli {

class OptionalDoors {
 public:
  // Opens the doors the config names, sharing the engine (and so the limits) with the
  // decision API. Returns what failed (a config error or a port that cannot be bound), or
  // nothing. Call once, before the pool runs. The doors' own configs are reloaded with the
  // service's policy (a reload hook), by SIGHUP and POST /admin/reload alike. `open_files` is
  // what connections may hold open (SIZE_MAX: no limit): the gateway, two files per connection,
  // takes at most two thirds of it, its max_connections lowered to fit.
  [[nodiscard]] std::optional<std::string> open(const policy::ConfigFile& config,
                                                server::IoPool& pool, Engine& engine,
                                                const Clock& clock, server::Service& service,
                                                std::size_t open_files);
  // The open files the doors' connections may hold at most (the gateway's two per connection).
  [[nodiscard]] std::size_t openFilesHeld() const noexcept { return open_files_held_; }
  // " rls=host:port gateway=host:port" for the doors that are open, for the ready line.
  [[nodiscard]] const std::string& listening() const noexcept { return listening_; }
  OptionalDoors() = default;
  OptionalDoors(const OptionalDoors&) = delete;
  OptionalDoors& operator=(const OptionalDoors&) = delete;
  ~OptionalDoors();

  // Stops accepting and lets the requests in flight finish. Returns at once: it runs on an event
  // loop (the signal handler's), and gRPC's shutdown waits for its calls in flight.
  void shutdown();
  // Client connections (for gRPC: a server not yet stopped) still open, for draining.
  [[nodiscard]] std::size_t openConnections() const noexcept;
  // After shutdown() and the loops' end: waits for the doors' own threads. A reload of the lyft
  // files under way finishes first (seconds for big files, bounded by their descriptor cap), and
  // this says so in the log rather than leave a process that said "stopped" running.
  // Idempotent; the destructor calls it.
  void join();

 private:
#ifdef SLUICE_WITH_RLS
  // The Envoy door, when the config has an envoy_rls: section; else a watch for one added.
  std::optional<std::string> openRls(const policy::ConfigFile& config, Engine& engine,
                                     const Clock& clock, server::Service& service);
#endif
#ifdef SLUICE_WITH_GATEWAY
  // The gateway, when the config has a gateway: section; else a watch for one added.
  std::optional<std::string> openGateway(const policy::ConfigFile& config, server::IoPool& pool,
                                         Engine& engine, const Clock& clock,
                                         server::Service& service, std::size_t open_files);
#endif
#ifdef SLUICE_WITH_RLS
  // The lyft directory's watcher reads and parses its files, which takes seconds when they are
  // big: on a loop and thread of its own, so no I/O loop's connections wait for it. Declared
  // before rls_, whose timer lives on it.
  boost::asio::io_context rls_watch_loop_;
  std::unique_ptr<rls::RlsServer> rls_;
  std::thread rls_watcher_;
  // gRPC's Shutdown() and Wait() block for up to their grace period: they run here, not on the
  // loop that asked, which would stop serving its HTTP connections meanwhile.
  std::thread rls_stopper_;
  std::atomic<bool> rls_stopped_{false};
#endif
#ifdef SLUICE_WITH_GATEWAY
  std::optional<gateway::Gateway> gateway_;
#endif
  std::string listening_;
  std::size_t open_files_held_ = 0;
};

}  // namespace sluice::cli
