// The service's admin side: the admin listener's paths (health, readiness, metrics, the
// dashboard, the configuration in force) and reloads of the configuration, asked by
// POST /admin/reload or SIGHUP (reloadInBackground).
#include "server/service.h"

#include <algorithm>
#include <new>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include "policy/freed_memory.h"
#include "policy/limit_loader.h"
#include "policy/policy_loader.h"
#include "server/dashboard/dashboard_page.h"
#include "server/dashboard/dashboard_security_policy.h"
#include "server/json_responses.h"
#include "server/restart_only_settings.h"

namespace sluice::server {

namespace http = boost::beast::http;
namespace net = boost::asio;

namespace {

// /admin/config: the file in force, secrets redacted, headed by YAML comments naming its edits
// that wait for a restart (the process still runs with the values it started with).
std::string configBody(const std::string& redacted_yaml,
                       const std::vector<std::string>& restart_pending) {
  std::string body;
  if (!restart_pending.empty()) {
    body = "# Not in force until a restart (the process runs with its start-up values):\n";
    for (const std::string& pending : restart_pending) body += "#   " + pending + "\n";
  }
  return body + redacted_yaml;
}

HttpResponse dashboardResponse(unsigned version) {
  HttpResponse response{http::status::ok, version};
  response.set(http::field::content_type, "text/html; charset=utf-8");
  response.set(http::field::cache_control, "no-store");
  response.set("Content-Security-Policy", dashboardSecurityPolicy());
  response.set("X-Content-Type-Options", "nosniff");
  response.body() = dashboardPage();
  response.prepare_payload();
  return response;
}

// {"reloaded":…,"errors":[…],"warnings":[…]}; the messages quote the configuration files, in
// whatever encoding.
std::string reloadBody(const ReloadReport& report) {
  std::string body =
      report.errors.empty() ? R"({"reloaded":true,"errors":)" : R"({"reloaded":false,"errors":)";
  appendJsonStrings(body, report.errors);
  body += R"(,"warnings":)";
  appendJsonStrings(body, report.warnings);
  body += '}';
  return body;
}

}  // namespace

ReloadReport Service::reload() {
  const std::lock_guard lock(reload_mutex_);
  const std::uint64_t number = ++reloads_run_;
  const Result<policy::ConfigFile> file = policy::readConfigFile(config_path_);
  if (!file.ok()) {
    metrics_.countReload(false);
    return logged(ReloadReport{.errors = {file.error()}, .warnings = {}, .number = number});
  }
  policy::LoadResult loaded;
  ReloadReport report{.errors = {}, .warnings = {}, .number = number};
  std::vector<std::function<void()>> commits;
  // The YAML parser holds a few hundred bytes per value it reads: a file of a few megabytes of
  // short values can take gigabytes. Out of memory, the reload is refused (nothing is
  // committed) and the process goes on with the old config, where the exception ended it.
  try {
    loaded = policy::loadPolicy(file.value(), &initial_->store);
    report.errors = std::move(loaded.errors);
    if (loaded.policy != nullptr) report.warnings = restartOnlyChanges(*initial_, *loaded.policy);
    for (const auto& hook : reload_hooks_) {
      if (auto commit = hook(file.value(), report)) commits.push_back(std::move(commit));
    }
  } catch (const std::bad_alloc&) {
    metrics_.countReload(false);
    return logged(ReloadReport{.errors = {config_path_ + ": " + policy::kOutOfMemoryReading},
                               .warnings = {},
                               .number = number});
  }
  const bool taken = loaded.policy != nullptr && report.errors.empty();
  metrics_.countReload(taken);
  if (!taken) {
    report.warnings.clear();  // of changes that were not made
    return logged(std::move(report));
  }
  // Raised before the policy is in force, so that a drain that starts between the two already
  // waits for the requests it may hold. Only reload() writes it, under reload_mutex_.
  longest_hold_us_.store(std::max(longest_hold_us_.load(), policy::longestHoldUs(*loaded.policy)));
  active_.store(std::make_shared<const Active>(loaded.policy, report.warnings));
  for (const auto& commit : commits) commit();
  return logged(std::move(report));
}

ReloadReport Service::logged(ReloadReport report) const {
  // Here rather than by each caller: a reload refused over HTTP left no trace in the log, and
  // SIGHUPs that shared one reload each logged it again.
  for (const std::string& warning : report.warnings) spdlog::warn("reload: {}", warning);
  if (report.errors.empty()) spdlog::info("reloaded {}", config_path_);
  for (const std::string& error : report.errors)
    spdlog::error("reload refused, keeping the old config: {}", error);
  return report;
}

void Service::reloadInBackground(std::function<void(ReloadReport)> done) {
  {
    const std::lock_guard lock(queued_reload_mutex_);
    queued_reload_callers_.push_back(std::move(done));
    if (queued_reload_callers_.size() > 1) return;  // joins the reload already queued
    ++reloads_under_way_;
  }
  net::post(reload_thread_, [this] {
    std::vector<std::function<void(ReloadReport)>> callers;
    {
      // Taken before reading any file: a caller that asks from here on gets a reload of its own.
      const std::lock_guard lock(queued_reload_mutex_);
      callers.swap(queued_reload_callers_);
    }
    const ReloadReport report = reload();
    policy::releaseFreedMemory();  // what the files' parse took, and the policy replaced
    for (const auto& answer : callers) answer(report);
    --reloads_under_way_;
  });
}

void Service::handleAdmin(HttpRequest&& request, const net::ip::tcp::endpoint& peer,
                          net::io_context& loop, Respond respond) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  const unsigned version = request.version();
  // DNS rebinding (admin_host.h): what a page could read through a browser on this machine.
  // The probes' paths tell nothing and stay open to any name.
  if (path != "/healthz" && path != "/readyz" && isLoopbackPeer(peer.address())) {
    const auto host = request.find(http::field::host);
    if (host != request.end() &&
        !hostNamesThisMachine(host->value(), machine_name_,
                              active_.load()->policy->server.admin_hosts)) {
      return respond(errorResponse(http::status::forbidden,
                                   "from this machine, name the admin listener in Host by its "
                                   "address, localhost, the machine's name or a name listed in "
                                   "server.admin_hosts (a page renamed to a loopback address by "
                                   "DNS rebinding is refused)",
                                   version));
    }
  }
  // The read-only paths answer GET and HEAD; a DELETE of /metrics answered 200 as if it had
  // done something.
  const bool reads = path == "/healthz" || path == "/readyz" || path == "/metrics" ||
                     path == "/admin/config" || path == "/dashboard";
  if (reads && request.method() != http::verb::get && request.method() != http::verb::head) {
    HttpResponse response =
        errorResponse(http::status::method_not_allowed, "use GET or HEAD", version);
    response.set(http::field::allow, "GET, HEAD");
    return respond(std::move(response));
  }
  if (path == "/healthz") {
    return respond(jsonResponse(http::status::ok, R"({"status":"ok"})", version));
  }
  if (path == "/readyz") {
    if (!ready_.load()) {
      return respond(
          errorResponse(http::status::service_unavailable, "starting or stopping", version));
    }
    for (const auto& check : readiness_checks_) {
      if (const auto reason = check())
        return respond(errorResponse(http::status::service_unavailable, *reason, version));
    }
    return respond(jsonResponse(http::status::ok, R"({"status":"ready"})", version));
  }
  if (path == "/metrics") {
    HttpResponse response{http::status::ok, version};
    response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    response.body() = metrics_.render(key_count_());
    for (const auto& extra : extra_metrics_) response.body() += extra();
    response.prepare_payload();
    return respond(std::move(response));
  }
  if (path == "/dashboard") return respond(dashboardResponse(version));
  if (path == "/admin/config") {
    HttpResponse response{http::status::ok, version};
    response.set(http::field::content_type, "application/yaml");
    const auto active = active_.load();
    response.body() = configBody(active->policy->redacted_yaml, active->restart_pending);
    response.prepare_payload();
    return respond(std::move(response));
  }
  if (path == "/admin/reload") {
    if (request.method() != http::verb::post) {
      HttpResponse response = errorResponse(http::status::method_not_allowed, "use POST", version);
      response.set(http::field::allow, "POST");
      return respond(std::move(response));
    }
    // Any web page can make a browser POST here (a form, or fetch in no-cors mode), and the
    // browser always says so in Origin; the tools that reload (curl, scripts, orchestrators) do
    // not send one, and no page of this listener reloads.
    if (request.find(http::field::origin) != request.end()) {
      return respond(errorResponse(http::status::forbidden,
                                   "a reload is not taken from a web page (the request has an "
                                   "Origin header)",
                                   version));
    }
    // Answered on the connection's loop once the reload thread is done. The reload stays under
    // way until the answer is handed to the connection, so that a drain does not stop the loops
    // between the two.
    return reloadInBackground([this, respond = std::move(respond), version,
                               &loop](ReloadReport report) mutable {
      ++reloads_under_way_;
      net::post(loop, [this, respond = std::move(respond), version, report = std::move(report)] {
        respond(jsonResponse(
            report.errors.empty() ? http::status::ok : http::status::unprocessable_entity,
            reloadBody(report), version));
        --reloads_under_way_;
      });
    });
  }
  respond(errorResponse(http::status::not_found, "unknown admin path", version));
}

}  // namespace sluice::server
