// Sluice as a service: the decision API, the auth subrequest endpoint and the admin endpoints,
// over one engine and store, with the policy swapped atomically on reload.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "engine/engine.h"
#include "http/rate_limit_headers.h"
#include "policy/decide.h"
#include "policy/policy.h"
#include "policy/policy_loader.h"
#include "server/admin_host.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/throttle_lines.h"
#include "store/log_throttle.h"
#include "store/memory_store.h"

namespace sluice::server {

// What a reload did. A part with errors kept its old configuration; warnings name edits that
// were read but wait for a restart (the rest of the file is in force).
struct ReloadReport {
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  // Which reload this was, counting from 1. Callers that shared one reload (reloadInBackground)
  // get the same number.
  std::uint64_t number = 0;
};

class Service {
 public:
  // `config_path` is re-read on reload. Store settings take effect on restart.
  // With its own in-memory store, sized from the initial policy (tests, embedding).
  Service(policy::PolicyPtr initial, std::string config_path, const Clock& clock);
  // Over an engine the caller owns and shares with other front doors; `key_count` reports the
  // counters held in this process for /metrics.
  Service(policy::PolicyPtr initial, std::string config_path, const Clock& clock, Engine& engine,
          std::function<std::size_t()> key_count);

  // The API listener: POST /v1/check, and /v1/auth for auth subrequests (any method).
  // `loop` is the connection's; a throttled request waits on a timer there.
  void handleApi(HttpRequest&& request, const boost::asio::ip::tcp::endpoint& peer,
                 boost::asio::io_context& loop, Respond respond);
  // The admin listener: /healthz, /readyz, /metrics, /admin/config, POST /admin/reload.
  void handleAdmin(HttpRequest&& request, const boost::asio::ip::tcp::endpoint& peer,
                   boost::asio::io_context& loop, Respond respond);

  // Thread-safe. Re-reads the configuration and, through the reload hooks, the other doors'
  // files. Taken whole or not at all: on any error anywhere, nothing changes and the report
  // lists the errors. Limits must fit the store running now (store settings change at restart
  // only). A reload taken whose restart-only settings (restart_only_settings.h) differ from the
  // initial policy's gets a warning for each. The outcome is logged, whoever asked: "reloaded"
  // and the warnings, or each error. Reloads run one at a time, so the last one to start is the
  // one left in force.
  ReloadReport reload();
  // reload() on the service's own reload thread, then `done(report)` there. Reading and parsing
  // files (a keys file of megabytes takes seconds) must not hold an I/O loop, whose listeners
  // and connections would wait meanwhile. SIGHUP and POST /admin/reload reload this way.
  // Requests that arrive while one reload waits to start share it: each still gets a reload
  // that began after it asked, but a burst of SIGHUPs (one per file a deploy tool touched)
  // costs one more reload, not one each.
  void reloadInBackground(std::function<void(ReloadReport)> done);
  // Thread-safe. Whether a reloadInBackground is queued or running, its callers not answered yet
  // (for POST /admin/reload: until the answer is handed to the connection): a drain waits for
  // it, so that the reload's answer still goes out.
  [[nodiscard]] bool reloadUnderWay() const noexcept { return reloads_under_way_.load() > 0; }
  // Waits for the reload under way, if any, and takes no more. Before the service goes away,
  // so that "stopped" is said after the reload's own lines.
  void finishReloads() { reload_thread_.join(); }
  // More configuration reloaded with the policy (other front doors' own files), by SIGHUP and
  // POST /admin/reload alike. A hook reads its section of the configuration (and any files of
  // its own, such as the lyft files) and adds their errors and warnings to the report; it returns
  // what puts them in force (or nothing), which runs only when the whole reload is taken. Add
  // before serving. `file` is the configuration as this reload read it, once for the policy and
  // every hook.
  using ReloadHook =
      std::function<std::function<void()>(const policy::ConfigFile& file, ReloadReport&)>;
  void addReloadHook(ReloadHook hook) { reload_hooks_.push_back(std::move(hook)); }

  [[nodiscard]] policy::PolicyPtr policy() const { return active_.load()->policy; }
  // The longest a request may be held (policy::longestHoldUs) by any policy in force since
  // start: a request held under a policy a reload has since replaced keeps that policy's wait,
  // so a drain bounded by the policy in force alone cut it off unanswered.
  [[nodiscard]] Micros longestHoldSinceStartUs() const noexcept {
    return longest_hold_us_.load(std::memory_order_relaxed);
  }
  // More Prometheus text appended to /metrics (other front doors' counters). Add before serving.
  void addExtraMetrics(std::function<std::string()> extra) {
    extra_metrics_.push_back(std::move(extra));
  }
  // A door's own readiness, asked by /readyz: why it cannot serve, or nullopt. Add before
  // serving; called on the admin listener's loops.
  void addReadinessCheck(std::function<std::optional<std::string>()> check) {
    readiness_checks_.push_back(std::move(check));
  }
  void setReady(bool ready) noexcept { ready_.store(ready); }
  // The decision metrics /metrics shows: other front doors (the gateway) count theirs here too.
  [[nodiscard]] Metrics& metrics() noexcept { return metrics_; }

 private:
  struct Pending;  // a request between decisions while it is throttled

  // One item of the request, on its view or as a named limit. `done` gets an error for an
  // unknown limit; it may run on a store's thread.
  using ItemHandler = std::function<void(Result<policy::PolicyDecision>&&)>;
  void decideItem(const Pending& pending, std::size_t index, Micros waited_us, ItemHandler done);
  // Decides the next item (or responds when none is left); continues on the connection's loop.
  void decideAndRespond(std::shared_ptr<Pending> pending);
  void onItemDecided(const std::shared_ptr<Pending>& pending, Micros started_us,
                     Result<policy::PolicyDecision>&& decided);
  void respondCheck(const std::shared_ptr<Pending>& pending);
  // Ends a held request whose client has gone, without deciding it.
  void respondClientGone(Pending& pending);
  // The request waits on its timer or in line from now: a client that hangs up meanwhile ends
  // the wait at once (respondClientGone), freeing its connection.
  void holdWatchingClient(const std::shared_ptr<Pending>& pending);
  // A throttle holds the request: it waits in line for its limit and key (throttle_lines.h),
  // the first for the unit the store says frees, the others for their turn or their max_delay,
  // and then decides again.
  void holdForThrottle(const std::shared_ptr<Pending>& pending,
                       const policy::PolicyDecision& decision);
  // Requests are held on one of its throttle limits and keys: it joins their line undecided,
  // first come first served (a request that fit at once used to take the units they waited for).
  void queueBehind(const std::shared_ptr<Pending>& pending, const policy::PolicyDecision& decision);
  // Takes a place in the line of `check`'s limit and key, unless it holds one there; true when
  // the place is first (the request may decide now), false when it waits for its turn.
  bool takePlaceInLine(const std::shared_ptr<Pending>& pending, const policy::PlannedCheck& check);
  // What the policy asks before deciding (policy::HeldOn): whether requests other than this
  // one wait in the line of a throttle check.
  [[nodiscard]] policy::HeldOn heldOnFor(const Pending& pending) const;
  void waitForTurn(const std::shared_ptr<Pending>& pending, Micros max_delay_us);
  // An auth subrequest without the original URI decides on its own target, where no limit on
  // the original path matches: said in the log (at most once a minute), since nothing else
  // would show it.
  void warnOfMissingOriginalUri(const HttpRequest& request, const std::string& header);
  void onTurnInLine(const std::shared_ptr<Pending>& pending, std::uint64_t place);
  // `report` as reload() returns it, its outcome logged.
  ReloadReport logged(ReloadReport report) const;

  // The policy in force and what is derived from it once rather than per response; swapped
  // whole on reload.
  struct Active {
    explicit Active(policy::PolicyPtr loaded, std::vector<std::string> restart_pending = {});
    policy::PolicyPtr policy;
    sluice::http::HeaderOptions headers;
    // The reload's warnings: edits to restart-only settings (of every door) that the file holds
    // and the process does not run with, which /admin/config must not show as in force.
    std::vector<std::string> restart_pending;
  };
  std::atomic<std::shared_ptr<const Active>> active_;
  // The policy the process started with: its restart-only settings are the ones in force.
  const policy::PolicyPtr initial_;
  std::string config_path_;
  // The host's own name, which an admin request from the loopback may give as its Host
  // (admin_host.h); read once, as a Host is checked on every admin request.
  const std::string machine_name_ = thisMachineName();
  const Clock& clock_;
  std::unique_ptr<MemoryStore> own_store_;  // only with the first constructor
  std::unique_ptr<Engine> own_engine_;
  Engine& engine_;
  std::function<std::size_t()> key_count_;
  std::vector<std::function<std::string()>> extra_metrics_;
  std::vector<std::function<std::optional<std::string>()>> readiness_checks_;
  std::vector<ReloadHook> reload_hooks_;
  std::shared_ptr<ThrottleLines> throttle_lines_ = ThrottleLines::make();
  // Held by reload(): SIGHUP (on the first loop) and POST /admin/reload (on any) can overlap,
  // and a slower reload that read an older file must not store it after a newer one.
  std::mutex reload_mutex_;
  std::uint64_t reloads_run_ = 0;  // under reload_mutex_
  LogThrottle missing_uri_logged_{std::chrono::minutes(1)};
  // reloadInBackground's callers waiting for the reload queued and not yet started (none when
  // nothing is queued).
  std::mutex queued_reload_mutex_;
  // Reloads posted to the reload thread whose callers are not answered, and admin answers not
  // yet handed to their connections.
  std::atomic<int> reloads_under_way_{0};
  std::vector<std::function<void(ReloadReport)>> queued_reload_callers_;
  Metrics metrics_;
  std::atomic<bool> ready_{false};
  std::atomic<Micros> longest_hold_us_{0};  // longestHoldSinceStartUs; written by reload()
  // Declared last, so destroyed first: a reload running is finished (joined) while everything
  // it touches is still there; one queued behind it is dropped.
  boost::asio::thread_pool reload_thread_{1};
};

}  // namespace sluice::server
