// The dynamic-limit webhook (Gate's "map limit endpoint"): for a request it has not seen the shape
// of lately, the gateway POSTs {"method", "path", "client_ip", "headers"} to the webhook and adds
// the limits it answers (see dynamic_limits.h) to the policy's. Answers are cached for a TTL; a
// webhook that is slow (past `timeout`), down, or answers garbage leaves the request to the static
// policy, and that failure is remembered for `failure_ttl` so requests do not keep paying for it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>

#include "gateway/dynamic_limits.h"
#include "gateway/gateway_config.h"
#include "gateway/webhook_cache.h"
#include "policy/request_view.h"

namespace sluice::gateway {

struct WebhookStats {
  std::uint64_t calls = 0;     // requests sent to the webhook
  std::uint64_t failures = 0;  // of which: timed out, failed, or answered garbage
  std::uint64_t cache_hits = 0;
};

class WebhookLimits : public std::enable_shared_from_this<WebhookLimits> {
 public:
  // `clock` times the cache and must outlive this.
  WebhookLimits(WebhookSettings settings, const Clock& clock);

  // Runs with the limits to add; null: none (no answer, a failure, or an empty list).
  using Done = std::function<void(DynamicLimitsPtr)>;

  // Thread-safe. Runs `done` exactly once: before returning when the answer is cached, else on
  // `loop` within about settings.timeout_us. `client_ip` is the resolved client address.
  void lookup(const policy::RequestView& request, const std::string& client_ip,
              boost::asio::io_context& loop, Done done);

  [[nodiscard]] WebhookStats stats() const noexcept;
  [[nodiscard]] const WebhookSettings& settings() const noexcept { return settings_; }

  // The cache key of a request: method, path, and the cache_key_headers' values.
  [[nodiscard]] std::string cacheKey(const policy::RequestView& request,
                                     const std::string& client_ip) const;

 private:
  friend class WebhookCall;
  // Stores a fetch's outcome and wakes the requests that waited for it.
  void finish(const std::string& key, DynamicLimitsPtr limits, bool failed);

  WebhookSettings settings_;
  const Clock& clock_;
  WebhookCache cache_;
  std::atomic<std::uint64_t> calls_{0};
  std::atomic<std::uint64_t> failures_{0};
  std::atomic<std::uint64_t> cache_hits_{0};
};

}  // namespace sluice::gateway
