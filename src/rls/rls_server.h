// The Envoy door: envoy.service.ratelimit.v3.RateLimitService over gRPC, on its own port,
// answering from a lyft/ratelimit config directory with Sluice's engine and any store.
//
//   sluice::rls::RlsServer rls(engine, clock, settings);
//   auto endpoint = rls.start();        // loads settings.config_dir, then listens
//   ...                                 // SIGHUP: rls.reload(); /metrics: rls.metricsText()
//   rls.shutdown();                     // stops listening, finishes RPCs in flight
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "engine/engine.h"
#include "rls/lyft_config.h"
#include "rls/rls_decider.h"
#include "rls/rls_settings.h"
#include "sluice/result.h"
#include "sluice/time.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace grpc {
class Server;
}  // namespace grpc

namespace sluice::rls {

// Totals over the server's life, for metrics. Relaxed atomics.
struct RlsCounters {
  std::atomic<std::uint64_t> ok{0};
  std::atomic<std::uint64_t> over_limit{0};
  std::atomic<std::uint64_t> failed{0};  // RPCs answered with an error status
  // Reloads the directory watcher made, and those it refused (the old config kept serving).
  std::atomic<std::uint64_t> watch_reloads_ok{0};
  std::atomic<std::uint64_t> watch_reloads_failed{0};
};

class RlsServer {
 public:
  // Calls at once on one connection (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS), as Go's HTTP/2
  // server bounds them; each call out holds memory until its client reads the answer.
  static constexpr int kMaxStreamsPerConnection = 250;

  // `engine` and `clock` must outlive the server.
  RlsServer(Engine& engine, const Clock& clock, RlsSettings settings);
  ~RlsServer();  // shutdown()
  RlsServer(const RlsServer&) = delete;
  RlsServer& operator=(const RlsServer&) = delete;

  // Call once. Loads settings.config_dir and starts serving on settings.listen on gRPC's own
  // threads; returns the bound endpoint (the real port when the setting's port is 0), or every
  // config error ("file:line:column: message", joined by '\n') or the bind failure.
  [[nodiscard]] Result<boost::asio::ip::tcp::endpoint> start();

  // Thread-safe. Reads config_dir again and swaps it in atomically; RPCs in flight finish with
  // the config they started with. On errors the old config stays and the errors are returned.
  // `digest_read`, when given: the digest of the files as read (LyftLoadResult::digest).
  std::vector<std::string> reload(std::optional<std::size_t>* digest_read = nullptr);
  // reload() in two halves, for a reload of several sources taken whole or not at all: read()
  // reads config_dir (a null config and its errors when it has any, or when it holds no domain
  // while the config in force has some: a directory emptied mid-deploy would turn every call
  // into NOT_FOUND, so only a restart serves none), install() swaps in what
  // read() gave, unless a read that began later has been installed meanwhile (its files are
  // newer). Thread-safe.
  struct Read {
    LyftLoadResult loaded;
    std::uint64_t sequence = 0;  // the order reads began in
  };
  [[nodiscard]] Read read();
  void install(Read read);

  // After start(), when settings.watch_interval_us > 0: every interval, on `loop`, reads
  // config_dir and reloads when its files changed since the last look, logging the outcome (a
  // change with errors keeps the old config, as reload() does). Call once, before `loop` runs.
  // `loop` must outlive the server; stop it before destroying the server.
  void watchConfigDir(boost::asio::io_context& loop);
  // Thread-safe. Whether the watcher is reloading now (reading and parsing the files).
  [[nodiscard]] bool reloadUnderWay() const noexcept {
    return watch_reloading_.load(std::memory_order_relaxed);
  }

  // Thread-safe, idempotent. Stops accepting, lets RPCs in flight finish for up to `grace`, then
  // cancels the rest, and returns when the server is down.
  void shutdown(std::chrono::milliseconds grace = std::chrono::seconds(5));

  // Thread-safe. Prometheus text: sluice_rls_requests_total{result}, the watcher's
  // sluice_rls_config_reloads_total{result}, and per configured rule
  // sluice_rls_rule_hits_total / _over_limit_total / _shadow_over_limit_total{rule}.
  [[nodiscard]] std::string metricsText() const;

  [[nodiscard]] const RlsSettings& settings() const noexcept { return settings_; }

 private:
  class Service;

  RlsSettings settings_;
  RlsDecider decider_;
  std::atomic<LyftConfigPtr> config_;
  // The watcher (on its loop), SIGHUP and POST /admin/reload can overlap: a slower reload that
  // read older files must not store them after a newer one. install() keeps the latest.
  std::atomic<std::uint64_t> reads_begun_{0};
  std::mutex install_mutex_;
  std::uint64_t installed_sequence_ = 0;  // under install_mutex_
  RlsCounters counters_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::atomic<bool> stopped_{false};
  // The digest (lyftConfigDirDigest) of what start() loaded, read before loading.
  std::optional<std::size_t> started_digest_;
  // On the watching loop.
  std::unique_ptr<boost::asio::steady_timer> watch_timer_;
  std::optional<std::size_t> watched_digest_;
  // What the latest look saw when it differed from watched_digest_: files mid-change (a deploy
  // that clears the directory, then copies) read differently from one look to the next, so the
  // watcher reloads once two looks in a row agree. watched_digest_ is then what the reload read:
  // a file that changed between the look and the load is seen as changed at the next look.
  std::optional<std::size_t> settling_digest_;
  int unreadable_looks_ = 0;  // in a row; said once at a few, until it can be read again
  std::atomic<bool> watch_reloading_{false};  // see reloadUnderWay()

  void watchAgain();
};

// A Prometheus label value: backslash, quote and newline escaped (the text exposition format),
// and other control characters (C0, DEL, C1) written as %XX, UTF-8's bytes: the format would
// carry them raw, and a terminal showing the page would obey them.
[[nodiscard]] std::string labelValue(std::string_view text);

}  // namespace sluice::rls
