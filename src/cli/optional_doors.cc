#include "cli/optional_doors.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "policy/section_change.h"
#include "server/http_server.h"

#ifdef SLUICE_WITH_RLS
#include "rls/grpc_log.h"
#endif
#ifdef SLUICE_WITH_GATEWAY
#include "gateway/gateway_config.h"
#include "gateway/gateway_metrics.h"
#endif

namespace sluice::cli {
namespace {

// For a door the process started without: a reload that finds its section added says the door
// opens at restart, and one that finds it added with errors (which would stop the next start)
// reports them, unless the file as a whole already failed (then its errors say it).
// `load(file)` is the door's section loader.
template <typename Load>
[[maybe_unused]] void watchForAddedSection(server::Service& service, const std::string& section,
                                           Load load) {
  service.addReloadHook([section, load](const policy::ConfigFile& file,
                                        server::ReloadReport& report) -> std::function<void()> {
    const auto now = load(file);
    if (now.ok() && now.value()) {
      report.warnings.push_back(section + ": the section was added; the door opens at restart");
    } else if (!now.ok() && report.errors.empty()) {
      report.errors.push_back(section +
                              ": the section was added with errors, which would stop the "
                              "next start:\n" +
                              now.error());
    }
    return {};
  });
}

// A running door's section as a reload found it: a change is a warning (it waits for a
// restart), or an error when the section would stop the next start, unless the file as a whole
// already failed (then its errors say it).
[[maybe_unused]] void reportSectionChange(server::ReloadReport& report,
                                          std::optional<policy::SectionChange> change) {
  if (!change) return;
  if (!change->refuses) return report.warnings.push_back(std::move(change->text));
  if (report.errors.empty()) report.errors.push_back(std::move(change->text));
}

}  // namespace

std::optional<std::string> OptionalDoors::open([[maybe_unused]] const policy::ConfigFile& config,
                                               [[maybe_unused]] server::IoPool& pool,
                                               [[maybe_unused]] Engine& engine,
                                               [[maybe_unused]] const Clock& clock,
                                               [[maybe_unused]] server::Service& service,
                                               [[maybe_unused]] std::size_t open_files) {
#ifdef SLUICE_WITH_RLS
  if (auto error = openRls(config, engine, clock, service)) return error;
#endif
#ifdef SLUICE_WITH_GATEWAY
  if (auto error = openGateway(config, pool, engine, clock, service, open_files)) return error;
#endif
  return std::nullopt;
}

#ifdef SLUICE_WITH_RLS
std::optional<std::string> OptionalDoors::openRls(const policy::ConfigFile& config, Engine& engine,
                                                  const Clock& clock, server::Service& service) {
  // gRPC runs its own threads.
  auto rls_settings = rls::loadRlsSettings(config);
  if (!rls_settings.ok()) return rls_settings.error();
  if (rls_settings.value()) {
    rls_ = std::make_unique<rls::RlsServer>(engine, clock, *rls_settings.value());
    const auto endpoint = rls_->start();
    if (!endpoint.ok()) return endpoint.error();
    listening_ += " rls=" + server::endpointText(endpoint.value());
    service.addExtraMetrics([this] { return rls_->metricsText(); });
    // Its listener gone (gRPC 1.51 gives up on it when an accept fails), the process cannot
    // serve Envoy until restarted: /readyz says so, for the orchestrator to act on.
    service.addReadinessCheck([]() -> std::optional<std::string> {
      const auto failure = rls::grpcListenerFailure();
      if (!failure) return std::nullopt;
      return "the Envoy door stopped accepting connections (gRPC: " + *failure +
             "); restart the process";
    });
    service.addReloadHook([this](const policy::ConfigFile& file,
                                 server::ReloadReport& report) -> std::function<void()> {
      // Live reconfiguration of the door (its port, shadow mode, ...) is not done: say so
      // rather than report a reload that silently left the section's edits unapplied.
      reportSectionChange(report, rls::restartOnlyChange(rls_->settings(), file));
      auto read = std::make_shared<rls::RlsServer::Read>(rls_->read());
      if (read->loaded.config == nullptr) {
        for (std::string& error : read->loaded.errors) {
          report.errors.push_back("envoy_rls: " + std::move(error));
        }
        return {};
      }
      return [this, read] { rls_->install(std::move(*read)); };
    });
    rls_->watchConfigDir(rls_watch_loop_);
    rls_watcher_ = std::thread([this] { rls_watch_loop_.run(); });
  } else {
    // The door loads its lyft files when it opens: files it cannot load would stop the start.
    watchForAddedSection(service, "envoy_rls", [](const policy::ConfigFile& file) {
      return rls::loadRlsSettingsAsAtStart(file);
    });
  }
  return std::nullopt;
}
#endif

#ifdef SLUICE_WITH_GATEWAY
std::optional<std::string> OptionalDoors::openGateway(const policy::ConfigFile& config,
                                                      server::IoPool& pool, Engine& engine,
                                                      const Clock& clock, server::Service& service,
                                                      std::size_t open_files) {
  auto gateway_settings = gateway::loadGatewaySettings(config);
  if (!gateway_settings.ok()) return gateway_settings.error();
  if (gateway_settings.value()) {
    gateway::GatewaySettings settings = *gateway_settings.value();
    // Each connection holds two files (client and upstream); a third is left for the API's.
    const std::size_t fitting = std::max<std::size_t>(open_files / 3, 1);
    if (settings.max_connections > fitting) {
      spdlog::warn("gateway.max_connections {} lowered to {} to fit the open-files limit",
                   settings.max_connections, fitting);
      settings.max_connections = fitting;
    }
    open_files_held_ = 2 * settings.max_connections;
    gateway_.emplace(
        pool, engine, clock, [&service] { return service.policy(); }, std::move(settings),
        &service.metrics());
    const auto endpoint = gateway_->listen();
    if (!endpoint.ok()) return endpoint.error();
    listening_ += " gateway=" + server::endpointText(endpoint.value());
    service.addExtraMetrics([this] { return gateway::metricsText(gateway_->stats()); });
    service.addReloadHook(
        [running = *gateway_settings.value()](
            const policy::ConfigFile& file, server::ReloadReport& report) -> std::function<void()> {
          reportSectionChange(report, gateway::restartOnlyChange(running, file));
          return {};
        });
  } else {
    watchForAddedSection(service, "gateway", [](const policy::ConfigFile& file) {
      return gateway::loadGatewaySettings(file);
    });
  }
  return std::nullopt;
}
#endif

OptionalDoors::~OptionalDoors() { join(); }

void OptionalDoors::join() {
#ifdef SLUICE_WITH_RLS
  rls_watch_loop_.stop();  // a reload under way finishes first
  if (rls_watcher_.joinable()) {
    if (rls_ != nullptr && rls_->reloadUnderWay()) {
      spdlog::info("waiting for the reload of {} under way to finish", rls_->settings().config_dir);
    }
    rls_watcher_.join();
  }
  if (rls_stopper_.joinable()) rls_stopper_.join();
#endif
}

void OptionalDoors::shutdown() {
#ifdef SLUICE_WITH_GATEWAY
  if (gateway_) gateway_->shutdown();
#endif
#ifdef SLUICE_WITH_RLS
  rls_watch_loop_.stop();
  if (rls_ != nullptr && !rls_stopper_.joinable()) {  // a second signal finds it started
    rls_stopper_ = std::thread([this] {
      rls_->shutdown(std::chrono::seconds(5));
      rls_stopped_.store(true);
    });
  }
#endif
}

std::size_t OptionalDoors::openConnections() const noexcept {
  std::size_t open = 0;
#ifdef SLUICE_WITH_RLS
  if (rls_ != nullptr && !rls_stopped_.load()) ++open;
#endif
#ifdef SLUICE_WITH_GATEWAY
  if (gateway_) open += gateway_->openConnections();
#endif
  return open;
}

}  // namespace sluice::cli
