// The admission half of ProxySession: whether a request goes on to its upstream. The guard
// (ceiling, suspicious patterns), the route, identity and the webhook's dynamic limits, then the
// concurrency permits (before deciding, so that a request they refuse takes no units), the
// policy's decision (waits for a throttle are in proxy_throttle.cc) and a shaper's hold. A
// refused request gets the gateway's own answer (respondLocal).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/dispatch.hpp>

#include "gateway/proxy_exchange.h"
#include "gateway/proxy_session.h"
#include "http/check_api.h"
#include "http/rate_limit_headers.h"
#include "policy/origin_form.h"
#include "policy/own_headers.h"
#include "server/request_head.h"
#include "store/log_throttle.h"

namespace sluice::gateway {

namespace bhttp = boost::beast::http;
namespace net = boost::asio;

namespace {

// Why a target's path is refused, or nothing: a backslash is no URI character, and URL parsers
// read it as '/' (/\evil.com/login is //evil.com/login to them).
std::optional<std::string> targetRefusal(std::string_view target) {
  if (target.substr(0, target.find('?')).find('\\') != std::string_view::npos) {
    return "a backslash is not a path character (write it %5C)";
  }
  return std::nullopt;
}

struct Refusal {
  unsigned status;
  std::string message;
};

// Why a request's head leaves its path, body or site in doubt, so that the gateway and the
// upstream could each read another, or nothing: a backslash in the path, framing that is not
// one Content-Length or chunked alone, a length beyond what a signed 64-bit upstream reads, no
// Host in HTTP/1.1, two, or one that is no host[:port] (RFC 9112 3.2, 6.3).
template <class Header>
std::optional<Refusal> headRefusal(const Header& header, bool chunked,
                                   std::optional<std::uint64_t> content_length) {
  if (auto refusal = targetRefusal(header.target())) return Refusal{400, std::move(*refusal)};
  if (auto refusal = server::headRefusal(header, chunked)) {
    return Refusal{refusal->status, std::string(refusal->message)};
  }
  if (content_length &&
      *content_length > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return Refusal{400, "the Content-Length is too large"};
  }
  return std::nullopt;
}

// The first route matching the path as read literally, or null. The path's other readings (%2F
// as '/', ';' parameters dropped) must find a route to the same upstream in the same mode: else
// the client would choose, by spelling, whether a monitor route or an enforcing one decides
// (/internal/..;/login is /login to Tomcat), and the request is refused.
Result<const Route*> routeFor(const std::vector<Route>& routes, const policy::RequestView& view) {
  const auto first = [&](std::string_view path) -> const Route* {
    for (const Route& route : routes) {
      if (route.match.matches(view.method, path)) return &route;
    }
    return nullptr;
  };
  const Route* literal = first(view.path);
  for (const std::string& other : view.other_paths) {
    const Route* route = first(other);
    if (route == literal) continue;
    if (route == nullptr || literal == nullptr || route->upstream != literal->upstream ||
        route->mode != literal->mode) {
      return Error{"the path reads as two gateway routes (its ';' parameters or %2F decide which)"};
    }
  }
  return literal;
}

}  // namespace

const http::HeaderOptions& headerOptions(const policy::PolicyPtr& policy) {
  thread_local std::weak_ptr<const policy::Policy> derived_from;
  thread_local http::HeaderOptions options;
  if (derived_from.lock() != policy) {
    options = http::headerOptionsFor(policy->headers);
    derived_from = policy;
  }
  return options;
}

// What is checked before any per-client work: the target's form, the framing, Host, and the
// guard. True when the request was refused (and is being answered).
bool ProxySession::refusedBeforeRouting() {
  const auto& header = request_->get();
  // Routes, limits and the guard read the path, and the upstream must get that same path: an
  // absolute-form target (`GET http://host/login`), which origin servers accept as /login,
  // becomes that origin form (RFC 9112 3.2.2: its authority replaces Host) before anything
  // reads it; any other target that is not a path is refused. CONNECT, whose target can only
  // be host:port (RFC 9112 3.2.3), asks for a tunnel, which a reverse proxy does not open: one
  // with a path is malformed, and was passed on as it came.
  if (header.method() == bhttp::verb::connect) {
    respondLocal(400, "CONNECT asks for a tunnel, which the gateway does not open", {});
    return true;
  }
  if (const auto origin = policy::originForm(header.target())) {
    request_->get().set(bhttp::field::host, origin->authority);
    request_->get().target(origin->target);
  } else if (!header.target().starts_with('/') &&
             !(header.target() == "*" && header.method() == bhttp::verb::options)) {
    respondLocal(400, "the request target must be a path", {});
    return true;
  }
  // A leading "//" reads as an authority to an upstream resolving the target as a URL reference
  // (//evil.com/login is /login on evil.com); the gateway decides it as /evil.com/login.
  if (header.target().starts_with("//")) {
    const std::string_view target = header.target();
    const std::size_t path = target.find_first_not_of('/');
    request_->get().target("/" +
                           std::string(path == std::string_view::npos ? "" : target.substr(path)));
  }
  const auto length = request_->content_length();
  if (const auto refusal =
          headRefusal(header, request_->chunked(),
                      length ? std::optional<std::uint64_t>(*length) : std::nullopt)) {
    respondLocal(refusal->status, refusal->message, {});
    return true;
  }
  if (!state_->guard.admitGlobal()) {
    respondLocal(503, "the gateway is over its request ceiling", {{"Retry-After", "1"}});
    return true;
  }
  const std::string_view target = header.target();
  if (const auto pattern = state_->guard.suspiciousPattern(target)) {
    // A flood of such requests must not turn into a flood of log lines.
    static LogThrottle throttle(std::chrono::seconds(1));
    if (const auto dropped = throttle.admit()) {
      spdlog::warn("guard: refused {} {} from {}: matches \"{}\"{}",
                   std::string(header.method_string()), std::string(target.substr(0, 200)),
                   peer_ip_, *pattern,
                   *dropped == 0 ? std::string()
                                 : " (" + std::to_string(*dropped) + " more refused before it)");
    }
    respondLocal(400, "the request was refused by the gateway's guard", {});
    return true;
  }
  return false;
}

// The guard, then the route, then identity; the webhook (when configured) before deciding.
void ProxySession::admit() {
  Exchange& exchange = *exchange_;
  exchange.head_request = request_->get().method() == bhttp::verb::head;
  if (refusedBeforeRouting()) return;
  const auto& header = request_->get();
  const std::string_view target = header.target();
  policy::RequestView& view = exchange.view;
  view.method = std::string(header.method_string());
  for (char& c : view.method) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  view.setPath(target);
  view.peer = peer_.address();
  for (const auto& field : header) {
    view.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  const auto routed = routeFor(state_->settings.routes, view);
  if (!routed.ok()) return respondLocal(400, routed.error(), {});
  exchange.route = routed.value();
  if (exchange.route == nullptr) {
    count(state_->counters.not_found);
    return respondLocal(404, "no gateway route matches this request", {});
  }
  exchange.policy = state_->policy();
  exchange.context.emplace(
      policy::resolveIdentity(*exchange.policy, view, state_->clock.now() / kMicrosPerSecond));
  if (state_->webhook == nullptr) return decidePass();
  exchange.awaiting_webhook = true;
  state_->webhook->lookup(view, exchange.context->client_ip, loop_,
                          [self = shared_from_this()](DynamicLimitsPtr limits) {
                            if (self->exchange_ == nullptr) return;  // closed meanwhile
                            self->exchange_->awaiting_webhook = false;
                            self->exchange_->dynamic = std::move(limits);
                            self->decidePass();
                          });
  // Not answered from the cache: the webhook is being asked (up to its timeout). The client is
  // watched meanwhile, as during a throttle hold, so one that leaves is neither forwarded nor
  // charged. (A cached answer came at once, and the request went on: no watch, no system call.)
  if (exchange_ != nullptr && exchange_->awaiting_webhook && request_->is_done()) watchClient();
}

void ProxySession::decidePass() {
  Exchange& exchange = *exchange_;
  const bool monitor = exchange.route->mode == RouteMode::kMonitor;
  // On an enforce route the permits come first: a request the concurrency limit refuses takes
  // no units of the rate limits (all-or-nothing); taken after deciding, its units were gone, and
  // a client over its concurrency could exhaust an hourly quota in seconds.
  if (!monitor && !acquirePermits()) return;  // answered
  exchange.deciding_since = std::chrono::steady_clock::now();
  // A monitor route never holds a request: a throttle verdict is passed on as a denial. The
  // store may answer on its own thread; the session carries on on its loop.
  decideWithDynamic(
      *exchange.policy, *exchange.context, exchange.dynamic, state_->engine,
      monitor ? policy::kCannotWait : exchange.waited_us,
      [self = shared_from_this()](policy::PolicyDecision&& decision) {
        net::dispatch(self->client_.get_executor(),
                      [self, decided = std::move(decision)]() mutable {
                        self->onDecision(std::move(decided));
                      });
      },
      heldOn());
}

void ProxySession::onDecision(policy::PolicyDecision&& decision) {
  if (exchange_ == nullptr) return;
  Exchange& exchange = *exchange_;
  exchange.decision = std::move(decision);
  if (exchange.decision.queue_behind != policy::PolicyDecision::kNotQueued) {
    exchange.permits.clear();  // not in flight while it waits, as below
    return queueBehind();      // proxy_throttle.cc; not decided: nothing to count yet
  }
  countInMetrics();
  if (exchange.decision.throttle_wait_us > 0) {
    // Not in flight while it waits: its permits go back, and are taken again when it decides
    // again.
    exchange.permits.clear();
    return waitToDecideAgain();  // proxy_throttle.cc
  }
  exchange.line.reset();  // decided for good: the next request in its line decides now
  const bool monitor = exchange.route->mode == RouteMode::kMonitor;
  const Micros hold_us = monitor || !exchange.decision.allowed ? 0 : exchange.decision.hold_us;
  if (hold_us == 0) return afterDecision();
  // A shaper gave the request a later slot: it is let through then. Not in flight meanwhile: its
  // permits go back, and are taken again when its slot comes (as a shaper spaces a burst out,
  // those waiting must not fill max_in_flight).
  exchange.permits.clear();
  exchange.permits_after_hold = true;
  countThrottledOnce();
  exchange.waited_us += hold_us;
  if (request_->is_done()) watchClient();  // else the client is still sending its body
  exchange.timer = std::make_unique<server::LoopTimer>(loop_);
  exchange.timer->expires_after(std::chrono::microseconds(hold_us));
  exchange.timer->async_wait(
      [self = shared_from_this(), hold_us](const boost::system::error_code& ec) {
        if (ec || self->exchange_ == nullptr) return;
        // Its waits and resets were counted from the decision: the client reads them from now.
        policy::ageDecision(self->exchange_->decision, hold_us);
        self->afterDecision();
      });
}

// The service's decision metrics, as the API counts its own.
void ProxySession::countInMetrics() {
  if (state_->metrics == nullptr) return;
  const Exchange& exchange = *exchange_;
  state_->metrics->countPass(exchange.decision,
                             std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::steady_clock::now() - exchange.deciding_since)
                                 .count(),
                             exchange.throttle_counted);
}

void ProxySession::afterDecision() {
  Exchange& exchange = *exchange_;
  const policy::PolicyDecision& decision = exchange.decision;
  const std::string shadow = decision.shadowDenials();
  if (!shadow.empty()) count(state_->counters.shadow_denied);
  if (exchange.route->mode == RouteMode::kMonitor) {
    // The application decides (e.g. shadow-bans); the client sees the upstream's answer as is.
    http::HeaderList& out = exchange.upstream_headers;
    out.emplace_back("X-Sluice-Decision", decision.allowed ? "allow" : "deny");
    if (const policy::PlannedCheck* binding = decision.binding()) {
      out.emplace_back("X-Sluice-Limit", binding->label);
      out.emplace_back("X-Sluice-Remaining",
                       std::to_string(decision.enforced.bindingStatus()->remaining));
    }
    if (!decision.allowed) {
      count(state_->counters.monitor_denied);
      out.emplace_back("X-Sluice-Status", std::to_string(decision.status));
      out.emplace_back("X-Sluice-Retry-After",
                       std::to_string(http::headerSeconds(decision.enforced.retry_after_us)));
    }
    if (!shadow.empty()) out.emplace_back("X-Sluice-Shadow", shadow);
    if (!acquirePermits()) out.emplace_back("X-Sluice-Concurrency", "over");
    return forward();
  }
  if (!decision.allowed) return respondDenied();
  if (exchange.permits_after_hold && !acquirePermits()) return;  // answered
  std::string& lines = client_header_lines_;
  if (decision.enforced.degraded) appendHeaderLine(policy::kDegradedHeader, "true", lines);
  const http::LimitLabels labels = http::enforcedLabels(decision);
  http::appendRateLimitHeaderLines(decision.enforced, labels, headerOptions(exchange.policy),
                                   lines);
  if (!shadow.empty()) appendHeaderLine(policy::kShadowHeader, shadow, lines);
  if (exchange.waited_us > 0) {
    appendHeaderLine(policy::kDelayedMsHeader, std::to_string((exchange.waited_us + 999) / 1000),
                     lines);
  }
  forward();  // with the permits decidePass took (or this did, after a shaper's hold)
}

// The permits of every concurrency limit that applies. False when one is full: then, on an
// enforce route, the request has been answered with that limit's status.
bool ProxySession::acquirePermits() {
  Exchange& exchange = *exchange_;
  for (const ConcurrencyLimit& limit : state_->settings.concurrency) {
    if (!limit.match.matches(exchange.view)) continue;
    std::string key;
    policy::appendCounterPart(key, limit.name);
    const std::size_t named = key.size();
    if (limit.key.appendKey(*exchange.context, limit.match.describe(), key,
                            !limit.match.caseSensitive()) != policy::KeySelector::Read::kKeyed) {
      key.resize(named);  // what the parts before the missing one appended goes
      policy::appendAddressFallback(*exchange.context, key);
    }
    auto permit = state_->concurrency->tryAcquire(key, limit.max_in_flight);
    if (!permit) {
      count(state_->counters.concurrency_denied);
      if (exchange.route->mode == RouteMode::kMonitor) return false;
      const std::string body =
          "{\"error\":\"too_many_concurrent_requests\",\"message\":\"at most " +
          std::to_string(limit.max_in_flight) + " requests may be in flight at once\",\"limit\":";
      std::string name;
      http::appendJsonString(name, limit.name);
      http::HeaderList headers;
      http::appendConcurrencyHeaders(limit.name, limit.max_in_flight,
                                     headerOptions(exchange.policy), headers);
      respondLocal(static_cast<unsigned>(limit.deny_status), body + name + "}", headers);
      return false;
    }
    exchange.permits.push_back(std::move(*permit));
  }
  return true;
}

void ProxySession::respondDenied() {
  Exchange& exchange = *exchange_;
  count(state_->counters.denied);
  const http::LimitLabels labels = http::enforcedLabels(exchange.decision);
  http::HeaderList headers;
  http::appendRateLimitHeaders(exchange.decision.enforced, labels, headerOptions(exchange.policy),
                               headers);
  // What an allowed request's answer says besides, as /v1/auth says it on a denial too: that
  // the shared store could not decide, and how long the request was held before its refusal.
  if (exchange.decision.enforced.degraded) headers.emplace_back(policy::kDegradedHeader, "true");
  if (exchange.waited_us > 0) {
    headers.emplace_back(policy::kDelayedMsHeader,
                         std::to_string((exchange.waited_us + 999) / 1000));
  }
  respondLocal(static_cast<unsigned>(exchange.decision.status),
               http::deniedBody(exchange.decision.enforced, labels), headers);
}

}  // namespace sluice::gateway
