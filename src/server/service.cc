#include "server/service.h"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/verb.hpp>

#include "http/auth_subrequest.h"
#include "http/check_api.h"
#include "policy/limit_loader.h"
#include "policy/own_headers.h"
#include "server/json_responses.h"
#include "server/loop_io.h"

namespace sluice::server {

namespace http = boost::beast::http;
namespace net = boost::asio;

namespace {

Micros steadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t unixSeconds(const Clock& clock) { return clock.now() / kMicrosPerSecond; }

}  // namespace

struct Service::Pending {
  enum class Kind { kCheck, kAuth };
  Kind kind = Kind::kCheck;
  // One policy for the whole request, across throttle waits.
  std::shared_ptr<const Service::Active> active;
  sluice::http::CheckBody body;
  std::optional<policy::RequestView> auth_view;
  std::vector<std::optional<policy::PolicyDecision>> decisions;
  std::vector<Micros> waited_us;
  std::vector<std::string> errors;  // per item, for a named limit that does not exist
  std::size_t next = 0;
  unsigned version = 11;
  Respond respond;
  net::io_context* loop = nullptr;  // the connection's loop, where throttle waits happen
  std::unique_ptr<LoopTimer> timer;
  ThrottleLines::Place line;  // while a throttle holds it: its place in line
  Micros queued_at_us = 0;    // when it began to wait for its turn (steady clock)
  // Counted as throttled in the metrics, once: when it was first held or queued. (Only a request
  // that may wait is ever held, and it has one item.)
  bool throttle_counted = false;
  // Waiting on `timer` or in line, nothing else out: a hang-up may end it (holdWatchingClient).
  bool on_hold = false;

  // Items of a batch never wait, each would hold the connection in turn; that goes for a batch
  // of one item too, whose caller asked for the batch form's answer at once.
  [[nodiscard]] bool mayWait() const { return !body.batch; }
};

Service::Active::Active(policy::PolicyPtr loaded, std::vector<std::string> restart_pending_now)
    : policy(std::move(loaded)),
      headers(sluice::http::headerOptionsFor(policy->headers)),
      restart_pending(std::move(restart_pending_now)) {}

Service::Service(policy::PolicyPtr initial, std::string config_path, const Clock& clock)
    : active_(std::make_shared<const Active>(initial)),
      initial_(initial),
      config_path_(std::move(config_path)),
      clock_(clock),
      own_store_(std::make_unique<MemoryStore>(MemoryStoreOptions{initial->store.max_keys})),
      own_engine_(std::make_unique<Engine>(*own_store_, clock)),
      engine_(*own_engine_),
      key_count_([store = own_store_.get()] { return store->keyCount(); }),
      longest_hold_us_(policy::longestHoldUs(*initial)) {}

Service::Service(policy::PolicyPtr initial, std::string config_path, const Clock& clock,
                 Engine& engine, std::function<std::size_t()> key_count)
    : active_(std::make_shared<const Active>(initial)),
      initial_(initial),
      config_path_(std::move(config_path)),
      clock_(clock),
      engine_(engine),
      key_count_(std::move(key_count)),
      longest_hold_us_(policy::longestHoldUs(*initial)) {}

void Service::warnOfMissingOriginalUri(const HttpRequest& request, const std::string& header) {
  if (request.find(header) != request.end()) return;
  const std::optional<std::uint64_t> dropped = missing_uri_logged_.admit();
  if (!dropped) return;
  spdlog::warn(
      "an auth subrequest came without {}: its limits match the subrequest's own target ({}), "
      "so none on the original request's path applies; have the proxy set {} to the original "
      "URI (examples/nginx/nginx.conf does), or name the header it sends in "
      "server.auth_uri_header{}",
      header, std::string_view(request.target().data(), request.target().size()), header,
      LogThrottle::droppedNote(*dropped, ""));
}

void Service::handleApi(HttpRequest&& request, const net::ip::tcp::endpoint& peer,
                        net::io_context& loop, Respond respond) {
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  auto pending = std::make_shared<Pending>();
  pending->active = active_.load();
  pending->version = request.version();
  pending->respond = std::move(respond);
  pending->loop = &loop;
  if (path == "/v1/check") {
    if (request.method() != http::verb::post) {
      HttpResponse response =
          errorResponse(http::status::method_not_allowed, "use POST", request.version());
      response.set(http::field::allow, "POST");
      return pending->respond(std::move(response));
    }
    Result<sluice::http::CheckBody> body =
        sluice::http::parseCheckBody(request.body(), peer.address());
    if (!body.ok()) {
      return pending->respond(
          errorResponse(http::status::bad_request, body.error(), request.version()));
    }
    pending->kind = Pending::Kind::kCheck;
    pending->body = std::move(body).value();
  } else if (path == "/v1/auth" || path.starts_with("/v1/auth/")) {
    pending->kind = Pending::Kind::kAuth;
    warnOfMissingOriginalUri(request, pending->active->policy->server.auth_uri_header);
    pending->auth_view = sluice::http::viewFromSubrequest(
        request, peer.address(), pending->active->policy->server.auth_uri_header,
        pending->active->policy->server.auth_method_header);
  } else {
    return pending->respond(errorResponse(
        http::status::not_found, "unknown path; the API serves POST /v1/check and /v1/auth",
        request.version()));
  }
  const std::size_t items = pending->kind == Pending::Kind::kAuth ? 1 : pending->body.items.size();
  pending->decisions.resize(items);
  pending->waited_us.assign(items, 0);
  pending->errors.resize(items);
  decideAndRespond(std::move(pending));
}

void Service::decideItem(const Pending& pending, std::size_t index, Micros waited_us,
                         ItemHandler done) {
  const policy::Policy& policy = *pending.active->policy;
  const policy::RequestView* view =
      pending.kind == Pending::Kind::kAuth
          ? &*pending.auth_view
          : (pending.body.items[index].request ? &*pending.body.items[index].request : nullptr);
  const auto forward = [done](policy::PolicyDecision&& decision) {
    done(Result<policy::PolicyDecision>(std::move(decision)));
  };
  const policy::HeldOn held_on = heldOnFor(pending);
  if (view != nullptr) {
    const policy::RequestContext context =
        policy::resolveIdentity(policy, *view, unixSeconds(clock_));
    return policy::decideAsync(policy, context, engine_, waited_us, forward, held_on);
  }
  const auto& item = pending.body.items[index];
  if (auto error = policy::decideNamedAsync(policy, item.limit, item.key, item.tier, item.cost,
                                            engine_, waited_us, forward, held_on)) {
    done(Error{std::move(*error)});
  }
}

policy::HeldOn Service::heldOnFor(const Pending& pending) const {
  // Called before decidePlannedAsync returns, on this loop: the references stay valid.
  return [&pending, &lines = *throttle_lines_](const policy::PlannedCheck& check) {
    if (!lines.anyHeld()) return false;
    const std::string line = ThrottleLines::lineKey(check.label, check.key, *check.spec);
    if (pending.line.held() && pending.line.key() == line) return false;  // its own turn
    return lines.waiting(line) > 0;
  };
}

void Service::decideAndRespond(std::shared_ptr<Pending> pending) {
  if (pending->next >= pending->decisions.size()) return respondCheck(pending);
  const std::size_t index = pending->next;
  const bool may_wait = pending->mayWait();
  const Micros waited_us = may_wait ? pending->waited_us[index] : policy::kCannotWait;
  const Micros started_us = steadyMicros();
  decideItem(*pending, index, waited_us,
             [this, pending, started_us](Result<policy::PolicyDecision>&& decided) {
               // A network store answers on its own thread; the connection lives on its loop.
               net::dispatch(*pending->loop,
                             [this, pending, started_us, decided = std::move(decided)]() mutable {
                               onItemDecided(pending, started_us, std::move(decided));
                             });
             });
}

void Service::onItemDecided(const std::shared_ptr<Pending>& pending, Micros started_us,
                            Result<policy::PolicyDecision>&& decided) {
  const std::size_t index = pending->next;
  const bool may_wait = pending->mayWait();
  const Micros latency_us = steadyMicros() - started_us;
  if (!decided.ok()) {
    metrics_.observeDecisionLatency(latency_us);
    pending->errors[index] = decided.error();
    ++pending->next;
    return decideAndRespond(pending);
  }
  policy::PolicyDecision decision = std::move(decided).value();
  if (decision.queue_behind != policy::PolicyDecision::kNotQueued) {
    return queueBehind(pending, decision);  // not decided: nothing to count yet
  }
  metrics_.countPass(decision, latency_us, pending->throttle_counted);
  if (decision.throttle_wait_us > 0) {
    pending->throttle_counted = true;
    return holdForThrottle(pending, decision);
  }
  pending->line.reset();  // decided for good: the next request in its line decides now
  const Micros hold_us = may_wait ? decision.hold_us : 0;
  // Held here, the slot is served. A batch item is not held: its answer tells its slot.
  if (may_wait) decision.hold_us = 0;
  pending->decisions[index] = std::move(decision);
  ++pending->next;
  if (hold_us > 0) {
    // A shaper admitted the request into a later slot: let it through then.
    pending->waited_us[index] += hold_us;
    pending->timer = std::make_unique<LoopTimer>(*pending->loop);
    pending->timer->expires_after(std::chrono::microseconds(hold_us));
    pending->timer->async_wait(
        [this, pending, index, hold_us](const boost::system::error_code& ec) {
          // The client hung up (holdWatchingClient), perhaps as the timer fired: answered.
          if (ec || !pending->on_hold) return;
          pending->on_hold = false;
          // Its waits and resets were counted from the decision: the client reads them from now.
          policy::ageDecision(*pending->decisions[index], hold_us);
          respondCheck(pending);
        });
    holdWatchingClient(pending);
    return;
  }
  decideAndRespond(pending);
}

bool Service::takePlaceInLine(const std::shared_ptr<Pending>& pending,
                              const policy::PlannedCheck& check) {
  std::string line = ThrottleLines::lineKey(check.label, check.key, *check.spec);
  if (pending->line.held() && pending->line.key() == line) return true;  // its turn came
  pending->line = throttle_lines_->join(
      std::move(line),
      [this, weak = std::weak_ptr<Pending>(pending), loop = pending->loop](std::uint64_t place) {
        net::post(*loop, [this, weak, place] {
          if (auto held = weak.lock()) onTurnInLine(held, place);
        });
      });
  return pending->line.first();
}

void Service::queueBehind(const std::shared_ptr<Pending>& pending,
                          const policy::PolicyDecision& decision) {
  const policy::PlannedCheck& check = decision.enforced_checks[decision.queue_behind];
  if (!pending->throttle_counted) metrics_.countQueued(check);
  pending->throttle_counted = true;
  if (takePlaceInLine(pending, check)) return decideAndRespond(pending);  // the line emptied
  waitForTurn(pending, check.limit->max_delay_us);
}

void Service::holdForThrottle(const std::shared_ptr<Pending>& pending,
                              const policy::PolicyDecision& decision) {
  const std::size_t index = pending->next;
  const policy::PlannedCheck& binding = *decision.binding();
  if (!takePlaceInLine(pending, binding)) return waitForTurn(pending, binding.limit->max_delay_us);
  // First in line: held on a timer, no thread blocked, for the unit the store says frees then.
  pending->waited_us[index] += decision.throttle_wait_us;
  pending->timer = std::make_unique<LoopTimer>(*pending->loop);
  pending->timer->expires_after(std::chrono::microseconds(decision.throttle_wait_us));
  pending->timer->async_wait([this, pending](const boost::system::error_code& ec) {
    // The client hung up (holdWatchingClient), perhaps as the timer fired: answered.
    if (ec || !pending->on_hold) return;
    pending->on_hold = false;
    // A client that hung up while held is not decided for again: that decision would take
    // a unit (or a slot ahead of the clients still waiting) for an answer nobody reads.
    if (pending->respond.clientGone()) return respondClientGone(*pending);
    decideAndRespond(pending);
  });
  holdWatchingClient(pending);
}

void Service::holdWatchingClient(const std::shared_ptr<Pending>& pending) {
  pending->on_hold = true;
  // Noticed only when the wait ended, a client that sent a request and left held its connection
  // (a file, and a place under max_connections) for up to a minute: a few such requests a
  // second kept the door at its cap.
  pending->respond.watchHangUp([this, weak = std::weak_ptr<Pending>(pending)] {
    const std::shared_ptr<Pending> held = weak.lock();
    if (held == nullptr || !held->on_hold) return;  // answered, or waking meanwhile
    held->on_hold = false;
    held->timer.reset();  // its handler sees the cancellation
    respondClientGone(*held);
  });
}

void Service::waitForTurn(const std::shared_ptr<Pending>& pending, Micros max_delay_us) {
  const Micros left_us = std::max<Micros>(0, max_delay_us - pending->waited_us[pending->next]);
  pending->queued_at_us = steadyMicros();
  pending->timer = std::make_unique<LoopTimer>(*pending->loop);
  pending->timer->expires_after(std::chrono::microseconds(left_us));
  pending->timer->async_wait([this, pending](const boost::system::error_code& ec) {
    // Cancelled: its turn came first. Else its max_delay passed in line: it leaves the line and
    // decides a last time (a unit may have freed; else this pass denies).
    if (ec || !pending->line.held() || pending->line.first()) return;
    pending->on_hold = false;
    pending->line.reset();
    pending->waited_us[pending->next] += steadyMicros() - pending->queued_at_us;
    if (pending->respond.clientGone()) return respondClientGone(*pending);
    decideAndRespond(pending);
  });
  holdWatchingClient(pending);
}

void Service::onTurnInLine(const std::shared_ptr<Pending>& pending, std::uint64_t place) {
  // It left that place meanwhile (its max_delay passed), perhaps for another line.
  if (!pending->line.held() || pending->line.id() != place || pending->line.first()) return;
  pending->line.becameFirst();
  pending->on_hold = false;
  pending->timer.reset();  // the wait for its max_delay: its handler sees the cancellation
  pending->waited_us[pending->next] += steadyMicros() - pending->queued_at_us;
  if (pending->respond.clientGone()) return respondClientGone(*pending);
  decideAndRespond(pending);
}

void Service::respondClientGone(Pending& pending) {
  pending.line.reset();  // the next in line need not wait for this one's answer to be written
  metrics_.countClientGone();
  // nginx's code for a request whose client closed first. A client that closed reads nothing; one
  // that only half-closed its side (shutdown after sending) reads this 499 instead of a
  // decision: as with nginx's default (proxy_ignore_client_abort off), a half-close while the
  // request is held counts as leaving.
  HttpResponse response{static_cast<http::status>(499), pending.version};
  response.reason("Client Closed Request");
  // The close token in any version: keep_alive(false) writes none for HTTP/1.0, and the
  // server would keep an HTTP/1.0 keep-alive connection open.
  response.set(http::field::connection, "close");
  response.prepare_payload();
  pending.respond(std::move(response));
}

void Service::respondCheck(const std::shared_ptr<Pending>& pending) {
  const policy::Policy& policy = *pending->active->policy;
  const sluice::http::HeaderOptions& options = pending->active->headers;
  if (pending->kind == Pending::Kind::kAuth) {
    const policy::PolicyDecision& decision = *pending->decisions[0];
    HttpResponse response{http::status::ok, pending->version};
    sluice::http::HeaderList headers;
    const sluice::http::LimitLabels labels = sluice::http::enforcedLabels(decision);
    sluice::http::appendRateLimitHeaders(decision.enforced, labels, options, headers);
    for (const auto& [name, value] : headers) response.set(name, value);
    if (const std::string shadow = decision.shadowDenials(); !shadow.empty()) {
      response.set(policy::kShadowHeader, shadow);
    }
    if (decision.enforced.degraded) response.set(policy::kDegradedHeader, "true");
    if (!decision.allowed) {
      const int status =
          policy.server.auth_deny_status != 0 ? policy.server.auth_deny_status : decision.status;
      response.result(static_cast<unsigned>(status));
      response.set(policy::kStatusHeader, std::to_string(decision.status));
      response.set(http::field::content_type, "application/json");
      response.body() = sluice::http::deniedBody(decision.enforced, labels);
    }
    if (pending->waited_us[0] > 0) {
      response.set(policy::kDelayedMsHeader, std::to_string((pending->waited_us[0] + 999) / 1000));
    }
    response.prepare_payload();
    return pending->respond(std::move(response));
  }
  std::vector<std::string> rendered;
  sluice::http::HeaderList headers;
  for (std::size_t i = 0; i < pending->decisions.size(); ++i) {
    if (!pending->errors[i].empty()) {
      rendered.push_back(errorBody("bad_request", pending->errors[i]));
      continue;
    }
    const policy::PolicyDecision& decision = *pending->decisions[i];
    headers.clear();
    const sluice::http::LimitLabels labels = sluice::http::enforcedLabels(decision);
    sluice::http::appendRateLimitHeaders(decision.enforced, labels, options, headers);
    rendered.push_back(sluice::http::renderDecision(decision, headers, pending->waited_us[i]));
  }
  if (!pending->body.batch) {
    if (!pending->errors[0].empty()) {
      return pending->respond(
          errorResponse(http::status::bad_request, pending->errors[0], pending->version));
    }
    HttpResponse response =
        jsonResponse(http::status::ok, std::move(rendered[0]), pending->version);
    for (const auto& [name, value] : headers) response.set(name, value);  // the one decision's
    if (pending->decisions[0]->enforced.degraded) response.set(policy::kDegradedHeader, "true");
    response.prepare_payload();
    return pending->respond(std::move(response));
  }
  std::string body = "{\"results\":[";
  for (std::size_t i = 0; i < rendered.size(); ++i) body += (i == 0 ? "" : ",") + rendered[i];
  body += "]}";
  pending->respond(jsonResponse(http::status::ok, std::move(body), pending->version));
}

}  // namespace sluice::server
