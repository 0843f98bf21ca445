#include "engine/engine.h"

#include <algorithm>

namespace sluice {

Decision Engine::check(std::span<const LimitCheck> checks) noexcept {
  Decision decision;
  if (checks.empty()) return decision;
  // One by one rather than resize(): for the usual one or two limits, GCC's zeroing of a
  // resize is a `rep stos` whose start-up cost was a fifth of a hot-key decision.
  for (std::size_t i = 0; i < checks.size(); ++i) decision.statuses.emplace_back();
  finish(checks, decision, store_.apply(checks, clock_, decision.statuses));
  return decision;
}

void Engine::checkAsync(std::span<const LimitCheck> checks, DecisionCallback done) noexcept {
  auto decision = std::make_shared<Decision>();
  if (checks.empty()) return done(std::move(*decision));
  for (std::size_t i = 0; i < checks.size(); ++i) decision->statuses.emplace_back();
  // checkAsync's caller keeps `checks` valid until `done` has run (engine.h), and finish runs
  // before it.
  store_.applyAsync(checks, clock_, decision->statuses,
                    [checks, decision, done = std::move(done)](StoreStatus status) {
                      finish(checks, *decision, status);
                      done(std::move(*decision));
                    });
}

void Engine::finish(std::span<const LimitCheck> checks, Decision& decision,
                    StoreStatus status) noexcept {
  if (status == StoreStatus::kUnavailable) {
    // A store that cannot decide at all denies: fail closed. (Stores that can fail wrap
    // themselves in a FailoverStore, which applies each limit's on_error and says kDegraded.)
    // The answer still names the limit, and asks for a retry a second on, as an on_error: deny
    // does: a 429 saying "limit 0, retry now" invites the retry storm it should hold off.
    for (std::size_t i = 0; i < decision.statuses.size(); ++i) {
      Outcome& outcome = decision.statuses[i];
      outcome = Outcome{};
      outcome.reason = DenyReason::kStoreUnavailable;
      outcome.limit = checks[i].spec != nullptr ? checks[i].spec->limit() : 0;
      outcome.retry_after_us = kUnavailableRetryAfterUs;
      outcome.reset_after_us = kUnavailableRetryAfterUs;  // "full now" would contradict it
    }
  }
  decision.degraded = status != StoreStatus::kOk;
  summarize(decision);
}

namespace {

// Whether allowed `a` binds before allowed `b`: fewer units left, or as few and longer until
// full. Of two limits used up, a per-minute burst and a daily quota, the answer must name the
// quota: a client that waited for the burst's reset was refused until midnight.
bool tighter(const Outcome& a, const Outcome& b) noexcept {
  if (a.remaining != b.remaining) return a.remaining < b.remaining;
  return a.reset_after_us > b.reset_after_us;
}

}  // namespace

void summarize(Decision& decision) noexcept {
  decision.allowed = true;
  decision.binding = Decision::kNoLimit;
  decision.retry_after_us = 0;
  decision.delay_us = 0;
  for (std::size_t i = 0; i < decision.statuses.size(); ++i) {
    const Outcome& outcome = decision.statuses[i];
    decision.delay_us = std::max(decision.delay_us, outcome.delay_us);
    if (!outcome.allowed) {
      const bool first_denial = decision.allowed;
      decision.allowed = false;
      if (first_denial || outcome.retry_after_us > decision.retry_after_us) {
        decision.binding = i;
        decision.retry_after_us = outcome.retry_after_us;
      }
    } else if (decision.allowed && (decision.binding == Decision::kNoLimit ||
                                    tighter(outcome, decision.statuses[decision.binding]))) {
      decision.binding = i;
    }
  }
  if (!decision.allowed) decision.delay_us = 0;
}

}  // namespace sluice
