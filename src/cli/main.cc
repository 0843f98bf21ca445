// The sluice binary: `sluice serve --config FILE` and `sluice validate FILE`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "policy/policy_loader.h"
#include "server/http_server.h"
#include "server/io_pool.h"
#include "server/service.h"
#include "server/store_factory.h"
#ifdef SLUICE_WITH_RLS
#include "rls/rls_server.h"
#endif
#ifdef SLUICE_WITH_GATEWAY
#include "gateway/gateway.h"
#include "gateway/gateway_config.h"
#include "gateway/gateway_metrics.h"
#endif

namespace {

namespace net = boost::asio;
using sluice::server::HttpServer;

int validate(const std::string& path) {
  const sluice::policy::LoadResult loaded = sluice::policy::loadPolicy(path);
  for (const std::string& error : loaded.errors) std::fprintf(stderr, "%s\n", error.c_str());
  if (loaded.policy == nullptr) {
    std::fprintf(stderr, "%zu error(s)\n", loaded.errors.size());
    return 1;
  }
#ifdef SLUICE_WITH_RLS
  // The Envoy door's section and its lyft config directory, when present.
  const auto rls = sluice::rls::loadRlsSettings(path);
  if (!rls.ok()) {
    std::fprintf(stderr, "%s\n", rls.error().c_str());
    return 1;
  }
#endif
#ifdef SLUICE_WITH_GATEWAY
  const auto gateway = sluice::gateway::loadGatewaySettings(path);
  if (!gateway.ok()) {
    std::fprintf(stderr, "%s\n", gateway.error().c_str());
    return 1;
  }
#endif
  std::printf("%s: ok, %zu limit(s), %zu tier(s)\n", path.c_str(), loaded.policy->limits.size(),
              loaded.policy->tiers.size());
  return 0;
}

// Polls, on a timer rather than blocking a loop, until every connection has closed or the grace
// period is over, then stops the loops.
void stopWhenDrained(sluice::server::IoPool& pool, std::shared_ptr<net::steady_timer> timer,
                     std::function<std::size_t()> open_connections,
                     std::chrono::steady_clock::time_point deadline) {
  if (open_connections() == 0 || std::chrono::steady_clock::now() >= deadline) {
    pool.stop();
    return;
  }
  timer->expires_after(std::chrono::milliseconds(20));
  timer->async_wait([&pool, timer, open_connections = std::move(open_connections),
                     deadline](const boost::system::error_code&) {
    stopWhenDrained(pool, timer, open_connections, deadline);
  });
}

// The listeners' bounds. Past the file-descriptor limit accept() fails instead of the cap
// answering 503, so the cap stays below it, with room for the listeners, logs and store.
sluice::server::HttpServerLimits serverLimits(const sluice::policy::Policy& policy) {
  std::size_t max_connections = policy.server.max_connections;
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY &&
      files.rlim_cur > 64 && max_connections > files.rlim_cur - 64) {
    spdlog::warn("server.max_connections {} lowered to {} to fit the open-files limit",
                 max_connections, files.rlim_cur - 64);
    max_connections = files.rlim_cur - 64;
  }
  return sluice::server::HttpServerLimits{.max_header_bytes = 16 * 1024,
                                          .max_body_bytes = policy.server.max_body_bytes,
                                          .request_timeout_us = policy.server.request_timeout_us,
                                          .max_connections = max_connections};
}

int serve(const std::string& path) {
  const sluice::policy::LoadResult loaded = sluice::policy::loadPolicy(path);
  if (loaded.policy == nullptr) {
    for (const std::string& error : loaded.errors) std::fprintf(stderr, "%s\n", error.c_str());
    return 2;
  }
  const sluice::policy::Policy& policy = *loaded.policy;
  const unsigned threads = policy.server.threads != 0
                               ? policy.server.threads
                               : std::max(1u, std::thread::hardware_concurrency());
  sluice::server::IoPool pool(threads);
  net::io_context& io = pool.first();  // signals, drain polling and throttle timers
  sluice::SystemClock clock;
  // Made before the loops run and destroyed after they stop, as a store on them requires.
  sluice::Result<sluice::server::StoreInstance> made =
      sluice::server::makeStore(policy.store, pool.loops());
  if (!made.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), made.error().c_str());
    return 2;
  }
  sluice::server::StoreInstance store = std::move(made).value();
  spdlog::info("store: {}", store.description);
  // One store and engine for every front door, so they all count against the same limits.
  sluice::Engine engine(*store.store, clock);
  sluice::server::Service service(loaded.policy, path, clock, engine, store.key_count);
#ifdef SLUICE_WITH_RLS
  // Envoy's gRPC door, when the config has an envoy_rls: section; gRPC runs its own threads.
  std::unique_ptr<sluice::rls::RlsServer> rls;
  std::string rls_listening;
  auto rls_settings = sluice::rls::loadRlsSettings(path);
  if (!rls_settings.ok()) {
    std::fprintf(stderr, "%s\n", rls_settings.error().c_str());
    return 2;
  }
  if (rls_settings.value()) {
    rls = std::make_unique<sluice::rls::RlsServer>(engine, clock, *rls_settings.value());
    const auto endpoint = rls->start();
    if (!endpoint.ok()) {
      std::fprintf(stderr, "%s\n", endpoint.error().c_str());
      return 2;
    }
    rls_listening = " rls=" + endpoint.value().address().to_string() + ":" +
                    std::to_string(endpoint.value().port());
    service.addExtraMetrics([&rls] { return rls->metricsText(); });
  }
#endif
  const sluice::server::HttpServerLimits limits = serverLimits(policy);
  HttpServer api(pool, limits,
                 [&service](auto&& request, const auto& peer, auto& loop, auto respond) {
                   service.handleApi(std::move(request), peer, loop, std::move(respond));
                 });
  HttpServer admin(pool, limits,
                   [&service](auto&& request, const auto& peer, auto& loop, auto respond) {
                     service.handleAdmin(std::move(request), peer, loop, std::move(respond));
                   });
#ifdef SLUICE_WITH_GATEWAY
  // The reverse proxy, when the config has a gateway: section.
  std::optional<sluice::gateway::Gateway> gateway;
  std::string gateway_listening;
  auto gateway_settings = sluice::gateway::loadGatewaySettings(path);
  if (!gateway_settings.ok()) {
    std::fprintf(stderr, "%s\n", gateway_settings.error().c_str());
    return 2;
  }
  if (gateway_settings.value()) {
    gateway.emplace(
        pool, engine, clock, [&service] { return service.policy(); }, *gateway_settings.value());
    const auto endpoint = gateway->listen();
    if (!endpoint.ok()) {
      std::fprintf(stderr, "%s\n", endpoint.error().c_str());
      return 2;
    }
    gateway_listening = " gateway=" + endpoint.value().address().to_string() + ":" +
                        std::to_string(endpoint.value().port());
    service.addExtraMetrics([&gateway] { return sluice::gateway::metricsText(gateway->stats()); });
  }
#endif
  const auto api_endpoint = api.listen(policy.server.listen);
  const auto admin_endpoint = admin.listen(policy.server.admin);
  if (!api_endpoint.ok() || !admin_endpoint.ok()) {
    std::fprintf(stderr, "%s\n",
                 (!api_endpoint.ok() ? api_endpoint : admin_endpoint).error().c_str());
    return 2;
  }
  net::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_signal;
  on_signal = [&](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    if (signal == SIGHUP) {
      const std::vector<std::string> errors = service.reload();
      if (errors.empty()) spdlog::info("reloaded {}", path);
      for (const std::string& error : errors)
        spdlog::error("reload refused, keeping the old policy: {}", error);
#ifdef SLUICE_WITH_RLS
      if (rls != nullptr) {
        for (const std::string& error : rls->reload())
          spdlog::error("envoy rls reload refused, keeping the old config: {}", error);
      }
#endif
      signals.async_wait(on_signal);
      return;
    }
    spdlog::info("stopping: finishing requests in flight");
    service.setReady(false);
    api.shutdown();
    admin.shutdown();
#ifdef SLUICE_WITH_RLS
    if (rls != nullptr) rls->shutdown(std::chrono::seconds(5));
#endif
#ifdef SLUICE_WITH_GATEWAY
    if (gateway) gateway->shutdown();
#endif
    const auto open_connections = [&] {
      std::size_t open = api.openConnections() + admin.openConnections();
#ifdef SLUICE_WITH_GATEWAY
      if (gateway) open += gateway->openConnections();
#endif
      return open;
    };
    stopWhenDrained(pool, std::make_shared<net::steady_timer>(io), open_connections,
                    std::chrono::steady_clock::now() + std::chrono::seconds(10));
  };
  signals.async_wait(on_signal);
  service.setReady(true);
  std::string doors;
#ifdef SLUICE_WITH_RLS
  doors += rls_listening;
#endif
#ifdef SLUICE_WITH_GATEWAY
  doors += gateway_listening;
#endif
  std::printf("sluice listening api=%s:%u admin=%s:%u%s\n",
              api_endpoint.value().address().to_string().c_str(), api_endpoint.value().port(),
              admin_endpoint.value().address().to_string().c_str(), admin_endpoint.value().port(),
              doors.c_str());
  std::fflush(stdout);
  pool.run();
  // Now, while the engine and the service still exist: closing a shared store answers the
  // calls it still had out, and their callbacks reach both.
  store.store.reset();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Logs go to stderr; stdout carries only the "listening" line that scripts read.
  spdlog::set_default_logger(spdlog::stderr_color_mt("sluice"));
  CLI::App app{"Sluice: a rate limiter"};
  app.require_subcommand(1);
  std::string config_path;
  CLI::App* serve_command =
      app.add_subcommand("serve", "serve the decision API and admin endpoints");
  serve_command->add_option("-c,--config", config_path, "configuration file")->required();
  std::string validate_path;
  CLI::App* validate_command = app.add_subcommand("validate", "check a configuration file");
  validate_command->add_option("file", validate_path, "configuration file")->required();
  CLI11_PARSE(app, argc, argv);
  if (serve_command->parsed()) return serve(config_path);
  return validate(validate_path);
}
