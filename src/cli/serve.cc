#include "cli/serve.h"

#include <pthread.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "cli/optional_doors.h"
#include "cli/port_clashes.h"
#include "policy/freed_memory.h"
#include "policy/limit_loader.h"
#include "policy/policy_loader.h"
#include "server/http_server.h"
#include "server/io_pool.h"
#include "server/service.h"
#include "server/store_factory.h"

namespace sluice::cli {
namespace {

namespace net = boost::asio;
using server::HttpServer;

// The admin listener's own cap: scrapes, the dashboard and reloads need few connections, and
// its files come out of those kept aside below, not the doors' budget.
constexpr std::size_t kAdminConnections = 64;

// The soft open-files limit raised to the hard one (as Go's runtime does for lyft's service):
// the default soft limit of 1024 left a busy door a few hundred connections, and the Envoy
// door's gRPC stops accepting for good after one accept() fails for want of descriptors.
void raiseOpenFilesLimit() {
  rlimit files{};
  // Linux bounds the hard limit by fs.nr_open: never infinite there.
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= files.rlim_max ||
      files.rlim_max == RLIM_INFINITY) {
    return;
  }
  const rlim_t before = files.rlim_cur;
  files.rlim_cur = files.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &files) != 0) {
    spdlog::warn("open-files limit stays {}: raising it to {} failed: {}", before, files.rlim_max,
                 std::strerror(errno));
    return;
  }
  spdlog::info("open-files limit raised from {} to {}", before, files.rlim_cur);
}

// The listeners' bounds. Past the file-descriptor limit accept() fails instead of the cap
// answering 503, so the cap stays below it, with room for the listeners, logs and store.
// The open files connections may hold: the process's limit less 64 kept for the store's
// connections, logs and configuration files, and the admin listener's cap. SIZE_MAX when
// there is no limit.
std::size_t openFilesForConnections() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
  const std::size_t kept = 64 + kAdminConnections;
  return files.rlim_cur > kept ? files.rlim_cur - kept : SIZE_MAX;  // too few to plan with
}

// The server's limits, its connections fitted to `open_files` (what the optional doors left).
server::HttpServerLimits serverLimits(const policy::Policy& policy, std::size_t open_files) {
  std::size_t max_connections = policy.server.max_connections;
  if (max_connections > open_files) {
    spdlog::warn("server.max_connections {} lowered to {} to fit the open-files limit",
                 max_connections, std::max<std::size_t>(open_files, 1));
    max_connections = std::max<std::size_t>(open_files, 1);
  }
  return server::HttpServerLimits{.max_header_bytes = policy.server.max_header_bytes,
                                  .max_body_bytes = policy.server.max_body_bytes,
                                  .request_timeout_us = policy.server.request_timeout_us,
                                  .max_connections = max_connections};
}

// Polls, on a timer rather than blocking a loop, until every connection has closed or the grace
// period is over, then calls `stop`.
void stopWhenDrained(std::function<void()> stop, std::shared_ptr<net::steady_timer> timer,
                     std::function<std::size_t()> open_connections,
                     std::chrono::steady_clock::time_point deadline) {
  const std::size_t open = open_connections();
  if (open == 0) return stop();
  if (std::chrono::steady_clock::now() >= deadline) {
    spdlog::warn("stopping: {} connection(s) still open at the drain's deadline are closed", open);
    return stop();
  }
  timer->expires_after(std::chrono::milliseconds(20));
  timer->async_wait([stop = std::move(stop), timer, open_connections = std::move(open_connections),
                     deadline](const boost::system::error_code&) {
    stopWhenDrained(stop, timer, open_connections, deadline);
  });
}

// Everything `serve` runs, so the signal handler can reach it.
struct Doors {
  server::Service& service;
  HttpServer& api;
  HttpServer& admin;
  OptionalDoors& optional;
};

// SIGHUP: the policy and the doors' own configs reloaded (the service runs the doors' reload
// hooks, as for POST /admin/reload); a part with errors keeps its old config. The service logs
// the outcome. On the service's reload thread: reading files must not hold the loop that took
// the signal.
void reload(const Doors& doors) {
  doors.service.reloadInBackground([](const server::ReloadReport&) {});
}

// SIGINT or SIGTERM: not ready, no new connections, the requests in flight finished (for at
// most 10 s, plus the longest a limit may hold a request: a throttled request held 30 s was cut
// off unanswered at 10 s), then the loops stop. The admin listener keeps serving meanwhile, so
// health checks and load balancers read /readyz 503 for the whole drain rather than a refused
// connection; its own connections (a metrics scraper's keep-alive) are not waited for, but a
// reload under way is, so that a POST /admin/reload in flight is answered.
void drainAndStop(const Doors& doors, server::IoPool& pool) {
  spdlog::info("stopping: finishing requests in flight");
  doors.service.setReady(false);
  doors.api.shutdown();
  doors.optional.shutdown();
  const auto open_connections = [doors] {
    return doors.api.openConnections() + doors.optional.openConnections() +
           (doors.service.reloadUnderWay() ? 1 : 0);
  };
  const auto stop = [doors, &pool] {
    doors.admin.shutdown();
    pool.stop();
  };
  stopWhenDrained(stop, std::make_shared<net::steady_timer>(pool.first()), open_connections,
                  std::chrono::steady_clock::now() + std::chrono::seconds(10) +
                      std::chrono::microseconds(doors.service.longestHoldSinceStartUs()));
}

// The configuration in `file`, checked for serving; null, with the errors printed, when it
// cannot be.
policy::PolicyPtr loadForServing(const policy::ConfigFile& file) {
  policy::LoadResult loaded = policy::loadPolicy(file);
  if (loaded.policy == nullptr) {
    for (const std::string& error : loaded.errors) std::fprintf(stderr, "%s\n", error.c_str());
    return nullptr;
  }
  if (const auto clashes = portClashes(file, *loaded.policy); !clashes.empty()) {
    for (const std::string& clash : clashes) std::fprintf(stderr, "%s\n", clash.c_str());
    return nullptr;
  }
  return std::move(loaded.policy);
}

// With the doors open: signals handled (SIGHUP, held until now in `unheld`'s complement, reloads;
// SIGINT and SIGTERM drain and stop), ready, the ready line printed, and the loops run until
// they stop.
void runUntilStopped(const Doors& doors, server::IoPool& pool, const sigset_t& unheld,
                     const std::string& listening) {
  net::signal_set signals(pool.first(), SIGINT, SIGTERM, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_signal;
  on_signal = [&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    if (signal != SIGHUP) return drainAndStop(doors, pool);
    reload(doors);
    signals.async_wait(on_signal);
  };
  signals.async_wait(on_signal);
  pthread_sigmask(SIG_SETMASK, &unheld, nullptr);  // a SIGHUP held meanwhile is taken now
  policy::releaseFreedMemory();                    // what parsing the config files took at start
  doors.service.setReady(true);
  std::printf("sluice listening %s\n", listening.c_str());
  std::fflush(stdout);
  pool.run();
}

}  // namespace

int serve(const std::string& path) {
  // SIGHUP's default action ends the process, and its handler is in place only once the config
  // is loaded and the doors are open (seconds, for a file of thousands of limits): a reload
  // asked meanwhile (a deploy tool signalling after writing the file) killed the service. Held
  // until then, so that it is taken as the reload it asks for. Threads started meanwhile hold
  // it for good; the I/O loops, started after, do not.
  sigset_t hangup;
  sigemptyset(&hangup);
  sigaddset(&hangup, SIGHUP);
  sigset_t unheld;
  pthread_sigmask(SIG_BLOCK, &hangup, &unheld);
  // Read once: the policy and every door's section come from the same text, so a file replaced
  // while the service starts is judged as one version, not half of each (as a reload does).
  Result<policy::ConfigFile> read = policy::readConfigFile(path);
  if (!read.ok()) {
    std::fprintf(stderr, "%s\n", read.error().c_str());
    return 2;
  }
  // Dropped once the doors have read it: a file of thousands of limits (up to 64 MiB) is not
  // kept for the process's life.
  std::optional<policy::ConfigFile> file(std::move(read).value());
  const policy::PolicyPtr loaded = loadForServing(*file);
  if (loaded == nullptr) return 2;
  const policy::Policy& policy = *loaded;
  const unsigned threads = policy.server.threads != 0
                               ? policy.server.threads
                               : std::max(1u, std::thread::hardware_concurrency());
  server::IoPool pool(threads);
  SystemClock clock;
  // Made before the loops run and destroyed after they stop, as a store on them requires.
  Result<server::StoreInstance> made = server::makeStore(policy.store, pool.loops());
  if (!made.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), made.error().c_str());
    return 2;
  }
  server::StoreInstance store = std::move(made).value();
  spdlog::info("store: {}", store.description);
  // One store and engine for every front door, so they all count against the same limits.
  Engine engine(*store.store, clock);
  server::Service service(loaded, path, clock, engine, store.key_count);
  OptionalDoors optional;
  raiseOpenFilesLimit();
  const std::size_t open_files = openFilesForConnections();
  if (const auto error = optional.open(*file, pool, engine, clock, service, open_files)) {
    std::fprintf(stderr, "%s\n", error->c_str());
    return 2;
  }
  file.reset();
  const server::HttpServerLimits limits =
      serverLimits(policy, open_files - std::min(open_files, optional.openFilesHeld()));
  HttpServer api(pool, limits,
                 [&service](auto&& request, const auto& peer, auto& loop, auto respond) {
                   service.handleApi(std::move(request), peer, loop, std::move(respond));
                 });
  server::HttpServerLimits admin_limits = limits;
  admin_limits.max_connections = std::min(limits.max_connections, kAdminConnections);
  HttpServer admin(pool, admin_limits,
                   [&service](auto&& request, const auto& peer, auto& loop, auto respond) {
                     service.handleAdmin(std::move(request), peer, loop, std::move(respond));
                   });
  const auto api_endpoint = api.listen(policy.server.listen);
  const auto admin_endpoint = admin.listen(policy.server.admin);
  if (!api_endpoint.ok() || !admin_endpoint.ok()) {
    std::fprintf(stderr, "%s\n",
                 (!api_endpoint.ok() ? api_endpoint : admin_endpoint).error().c_str());
    return 2;
  }
  const std::string listening = "api=" + server::endpointText(api_endpoint.value()) +
                                " admin=" + server::endpointText(admin_endpoint.value()) +
                                optional.listening();
  runUntilStopped(Doors{service, api, admin, optional}, pool, unheld, listening);
  // Now, while the engine and the service still exist: closing a shared store answers the
  // calls it still had out, and their callbacks reach both.
  store.store.reset();
  optional.join();
  if (service.reloadUnderWay()) spdlog::info("waiting for the reload under way to finish");
  service.finishReloads();
  spdlog::info("stopped");
  return 0;
}

}  // namespace sluice::cli
