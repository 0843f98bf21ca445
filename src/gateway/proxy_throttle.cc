// How ProxySession holds a request a throttle limit delays: in line with the other requests
// held on the same limit and key (server/throttle_lines.h), so that when a unit frees, one
// request decides again rather than all of them.
#include <algorithm>
#include <chrono>

#include <boost/asio/post.hpp>

#include "gateway/proxy_exchange.h"
#include "gateway/proxy_session.h"

namespace sluice::gateway {

namespace net = boost::asio;

namespace {

Micros microsSince(std::chrono::steady_clock::time_point then) {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               then)
      .count();
}

}  // namespace

policy::HeldOn ProxySession::heldOn() const {
  // Called before the decision call returns, on this loop: the references stay valid.
  return [&exchange = *exchange_,
          &lines = *state_->throttle_lines](const policy::PlannedCheck& check) {
    if (!lines.anyHeld()) return false;
    const std::string line = server::ThrottleLines::lineKey(check.label, check.key, *check.spec);
    if (exchange.line.held() && exchange.line.key() == line) return false;  // its own turn
    return lines.waiting(line) > 0;
  };
}

bool ProxySession::takePlaceInLine(const policy::PlannedCheck& check) {
  Exchange& exchange = *exchange_;
  std::string line = server::ThrottleLines::lineKey(check.label, check.key, *check.spec);
  if (exchange.line.held() && exchange.line.key() == line) return true;  // its turn came
  exchange.line = state_->throttle_lines->join(
      std::move(line), [weak = weak_from_this(), loop = &loop_](std::uint64_t place) {
        net::post(*loop, [weak, place] {
          if (auto self = weak.lock()) self->onTurnInLine(place);
        });
      });
  return exchange.line.first();
}

void ProxySession::countThrottledOnce() {
  Exchange& exchange = *exchange_;
  if (exchange.throttle_counted) return;
  exchange.throttle_counted = true;
  count(state_->counters.throttled);
}

void ProxySession::queueBehind() {
  Exchange& exchange = *exchange_;
  const policy::PlannedCheck& check =
      exchange.decision.enforced_checks[exchange.decision.queue_behind];
  if (!exchange.throttle_counted && state_->metrics != nullptr) state_->metrics->countQueued(check);
  countThrottledOnce();
  if (request_->is_done()) watchClient();           // else the client is still sending its body
  if (takePlaceInLine(check)) return decidePass();  // the line emptied meanwhile
  waitForTurn(check.limit->max_delay_us);
}

void ProxySession::waitToDecideAgain() {
  Exchange& exchange = *exchange_;
  countThrottledOnce();                    // after countInMetrics, which read the flag
  if (request_->is_done()) watchClient();  // else the client is still sending its body
  const policy::PlannedCheck& binding = *exchange.decision.binding();
  if (!takePlaceInLine(binding)) return waitForTurn(binding.limit->max_delay_us);
  // First in line: the unit the store says frees then is this request's to try for.
  exchange.waited_us += exchange.decision.throttle_wait_us;
  exchange.timer = std::make_unique<server::LoopTimer>(loop_);
  exchange.timer->expires_after(std::chrono::microseconds(exchange.decision.throttle_wait_us));
  exchange.timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->exchange_ == nullptr) return;
    self->decidePass();
  });
}

void ProxySession::waitForTurn(Micros max_delay_us) {
  Exchange& exchange = *exchange_;
  const Micros left_us = std::max<Micros>(0, max_delay_us - exchange.waited_us);
  exchange.queued_at = std::chrono::steady_clock::now();
  exchange.timer = std::make_unique<server::LoopTimer>(loop_);
  exchange.timer->expires_after(std::chrono::microseconds(left_us));
  exchange.timer->async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
    if (ec || self->exchange_ == nullptr) return;  // its turn came first (or the session ended)
    Exchange& waiting = *self->exchange_;
    if (!waiting.line.held() || waiting.line.first()) return;
    // Its max_delay passed in line: it leaves the line and decides a last time (a unit may
    // have freed; else this pass denies, as it may not wait longer).
    waiting.line.reset();
    waiting.waited_us += microsSince(waiting.queued_at);
    self->decidePass();
  });
}

void ProxySession::onTurnInLine(std::uint64_t place) {
  // The session ended, or the request left that place meanwhile (its max_delay passed),
  // perhaps for another line.
  if (exchange_ == nullptr || !exchange_->line.held() || exchange_->line.id() != place ||
      exchange_->line.first()) {
    return;
  }
  Exchange& exchange = *exchange_;
  exchange.line.becameFirst();
  exchange.timer.reset();  // the wait for its max_delay; its handler sees the cancellation
  exchange.waited_us += microsSince(exchange.queued_at);
  decidePass();
}

}  // namespace sluice::gateway
