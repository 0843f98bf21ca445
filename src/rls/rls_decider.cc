#include "rls/rls_decider.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <limits>

#include <spdlog/spdlog.h>
#include <boost/container/small_vector.hpp>

#include "policy/key_selector.h"

namespace sluice::rls {
namespace {

using Kind = PlannedDescriptor::Kind;
using Code = RateLimitResponse::Code;
using Descriptor = envoy::extensions::common::ratelimit::v3::RateLimitDescriptor;

// `text` cut to at most `limit` bytes, at a UTF-8 character's start, with "..." when cut: for a
// name a client sent, quoted in an error's grpc-message trailer, which a client reads only up to
// its metadata limit (8 KB by default in gRPC): past it, the whole answer becomes an unreadable
// RESOURCE_EXHAUSTED.
std::string quotedShort(std::string_view text, std::size_t limit = 256) {
  if (text.size() <= limit) return "\"" + std::string(text) + "\"";
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return "\"" + std::string(text.substr(0, cut)) + "\"... (" + std::to_string(text.size()) +
         " bytes)";
}

constexpr std::uint32_t kMaxUint32 = std::numeric_limits<std::uint32_t>::max();

RpcError invalid(std::string message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, std::move(message)};
}

std::string where(std::size_t index) { return "descriptors[" + std::to_string(index) + "]"; }

std::optional<RpcError> validate(const RateLimitRequest& request, const DeciderOptions& options) {
  if (request.domain().empty()) return invalid("domain must not be empty");
  if (request.descriptors_size() == 0) return invalid("at least one descriptor is needed");
  if (static_cast<std::size_t>(request.descriptors_size()) > options.max_descriptors) {
    return invalid("at most " + std::to_string(options.max_descriptors) +
                   " descriptors per request");
  }
  for (int i = 0; i < request.descriptors_size(); ++i) {
    const Descriptor& descriptor = request.descriptors(i);
    const auto index = static_cast<std::size_t>(i);
    if (static_cast<std::size_t>(descriptor.entries_size()) > options.max_entries) {
      return invalid(where(index) + " has more than " + std::to_string(options.max_entries) +
                     " entries");
    }
    for (const auto& entry : descriptor.entries()) {
      if (entry.key().empty()) return invalid(where(index) + " has an entry with an empty key");
    }
    if (descriptor.has_limit()) {
      const int unit = descriptor.limit().unit();
      // envoy.type.v3.RateLimitUnit SECOND..YEAR share their numbers with the response's Unit.
      if (unit < static_cast<int>(Unit::kSecond) || unit > static_cast<int>(Unit::kYear)) {
        return invalid(where(index) +
                       ".limit.unit must be SECOND, MINUTE, HOUR, DAY, MONTH or YEAR");
      }
    }
  }
  return std::nullopt;
}

// The counter identity of an override: the same as a config rule's without share_threshold,
// so an override and the rule it stands in for count together, as in lyft.
std::string overrideKey(std::string_view domain, const Descriptor& descriptor) {
  std::string key = "E";
  policy::appendCounterPart(key, domain);
  for (const auto& entry : descriptor.entries()) {
    policy::appendCounterPart(key, entry.key());
    key += '=';
    policy::appendCounterPart(key, entry.value());
  }
  return key;
}

void planOverride(const RateLimitRequest& request, const Descriptor& descriptor,
                  PlannedDescriptor& planned) {
  planned.requests_per_unit = descriptor.limit().requests_per_unit();
  planned.unit = static_cast<Unit>(descriptor.limit().unit());
  planned.counter_key = overrideKey(request.domain(), descriptor);
  if (planned.requests_per_unit == 0) {
    planned.kind = Kind::kAlwaysOver;
    return;
  }
  // Cannot fail: the count is at least 1 and the unit's window is valid.
  Result<LimitSpec> spec =
      LimitSpec::fixedWindow(Rate{planned.requests_per_unit, unitMicros(planned.unit)});
  planned.override_spec = std::move(spec).value();
  planned.kind = Kind::kLimited;
}

void planRule(const Domain& domain, const Descriptor& descriptor, PlannedDescriptor& planned) {
  boost::container::small_vector<EntryView, 8> entries;
  for (const auto& entry : descriptor.entries()) entries.push_back({entry.key(), entry.value()});
  const DescriptorNode* node = LyftConfig::match(domain, entries, &planned.counter_key);
  if (node == nullptr || !node->rate_limit) return;
  const RateLimitRule& rule = *node->rate_limit;
  planned.node = node;
  planned.shadow = node->shadow_mode;
  planned.name = rule.name;
  planned.requests_per_unit = rule.requests_per_unit;
  planned.unit = rule.unit;
  if (node->detailed_metric) {
    planned.detailed_key = domain.name;
    for (const EntryView& entry : entries) {
      planned.detailed_key.append(".").append(entry.key).append("_").append(entry.value);
    }
  }
  planned.kind = rule.unlimited ? Kind::kUnlimited : rule.spec ? Kind::kLimited : Kind::kAlwaysOver;
}

// A matched rule named in another matched rule's `replaces` no longer applies.
void applyReplaces(std::vector<PlannedDescriptor>& descriptors) {
  std::vector<std::string_view> replaced;
  for (const PlannedDescriptor& planned : descriptors) {
    if (planned.node == nullptr || planned.kind == Kind::kNoRule) continue;
    for (const std::string& name : planned.node->rate_limit->replaces) replaced.push_back(name);
  }
  if (replaced.empty()) return;
  for (PlannedDescriptor& planned : descriptors) {
    if (planned.node == nullptr || planned.name.empty()) continue;
    if (std::find(replaced.begin(), replaced.end(), planned.name) != replaced.end()) {
      planned.kind = Kind::kNoRule;
      planned.node = nullptr;
    }
  }
}

// In whole seconds, rounded up and at least one, as lyft answers (`unit - now % unit` in Unix
// seconds). Envoy's X-RateLimit-Reset reads the seconds only: a SECOND limit's 0.6 s read 0,
// and clients retried at once.
void setDuration(Micros us, google::protobuf::Duration& duration) {
  duration.set_seconds(std::max<Micros>(1, (us + kMicrosPerSecond - 1) / kMicrosPerSecond));
  duration.set_nanos(0);
}

// Until the end of the unit's window containing `now_us`, as lyft computes the reset.
Micros untilWindowEnd(Unit unit, Micros now_us) {
  const Micros window_us = unitMicros(unit);
  return window_us - (now_us % window_us + window_us) % window_us;
}

void recordStats(const PlannedDescriptor& planned, bool over_limit) {
  if (planned.node == nullptr) return;
  RuleStats& stats = *planned.node->stats;
  stats.addHits(planned.hits);
  if (!planned.detailed_key.empty()) {
    stats.addDetailed(planned.detailed_key, planned.hits, over_limit, planned.shadow);
  }
  if (!over_limit) return;
  (planned.shadow ? stats.shadow_over_limit : stats.over_limit)
      .fetch_add(1, std::memory_order_relaxed);
  if (planned.shadow) {
    spdlog::debug("envoy rls: shadow rule {} is over its limit", planned.node->stat_key);
  }
}

}  // namespace

std::variant<std::unique_ptr<RlsPlan>, RpcError> RlsPlan::make(LyftConfigPtr config,
                                                               const RateLimitRequest& request,
                                                               const DeciderOptions& options,
                                                               Micros now_us) {
  if (auto error = validate(request, options)) return std::move(*error);
  const Domain* domain = config->domain(request.domain());
  if (domain == nullptr && options.unknown_domain_is_error) {
    return RpcError{grpc::StatusCode::NOT_FOUND,
                    "no rate limit configuration for domain " + quotedShort(request.domain())};
  }
  std::unique_ptr<RlsPlan> plan(new RlsPlan());
  plan->config_ = std::move(config);
  plan->now_us_ = now_us;
  plan->descriptors_.resize(static_cast<std::size_t>(request.descriptors_size()));
  const std::uint64_t request_hits = std::max<std::uint32_t>(1, request.hits_addend());
  for (int i = 0; i < request.descriptors_size() && domain != nullptr; ++i) {
    const Descriptor& descriptor = request.descriptors(i);
    PlannedDescriptor& planned = plan->descriptors_[static_cast<std::size_t>(i)];
    planned.hits = descriptor.has_hits_addend() ? descriptor.hits_addend().value() : request_hits;
    if (descriptor.has_limit()) {
      planOverride(request, descriptor, planned);
    } else {
      planRule(*domain, descriptor, planned);
    }
  }
  applyReplaces(plan->descriptors_);
  plan->buildGroups();
  return plan;
}

void RlsPlan::buildGroups() {
  groups_.assign(1, {});
  // A rule of 0 requests per unit (or such an override) is over whatever the store says. The
  // request is then denied, and, all-or-nothing, its other enforced descriptors only look.
  const bool denied_anyway =
      std::any_of(descriptors_.begin(), descriptors_.end(), [](const PlannedDescriptor& planned) {
        return planned.kind == Kind::kAlwaysOver && !planned.shadow && planned.hits > 0;
      });
  for (PlannedDescriptor& planned : descriptors_) {
    if (planned.kind != Kind::kLimited) continue;
    const LimitSpec* spec =
        planned.override_spec ? &*planned.override_spec : &*planned.node->rate_limit->spec;
    if (planned.shadow) {
      planned.group = groups_.size();
      groups_.emplace_back();
    }
    planned.index = groups_[planned.group].size();
    LimitCheck check;
    check.key = planned.counter_key;
    check.spec = spec;
    check.cost = denied_anyway && !planned.shadow ? 0 : planned.hits;
    // A store that cannot answer fails the RPC, so Envoy's failure_mode_deny decides, as with lyft.
    check.on_error = OnStoreError::kDeny;
    groups_[planned.group].push_back(check);
  }
}

std::optional<RpcError> RlsPlan::render(std::span<const Decision> decisions,
                                        const DeciderOptions& options,
                                        RateLimitResponse& response) const {
  bool over_limit = false;
  for (const PlannedDescriptor& planned : descriptors_) {
    auto& status = *response.add_statuses();
    status.set_code(RateLimitResponse::OK);
    if (planned.kind == Kind::kNoRule) continue;
    if (planned.kind == Kind::kUnlimited) {
      status.set_limit_remaining(kMaxUint32);
      continue;
    }
    auto& limit = *status.mutable_current_limit();
    limit.set_requests_per_unit(planned.requests_per_unit);
    limit.set_unit(static_cast<RateLimitResponse::RateLimit::Unit>(planned.unit));
    limit.set_name(planned.name);
    bool over = false;
    if (planned.kind == Kind::kAlwaysOver) {
      over = planned.hits > 0;
      setDuration(untilWindowEnd(planned.unit, now_us_), *status.mutable_duration_until_reset());
    } else {
      const Outcome& outcome = decisions[planned.group].statuses[planned.index];
      if (outcome.reason == DenyReason::kStoreUnavailable) {
        if (planned.shadow) continue;  // a shadow rule never decides, not even by failing
        return RpcError{grpc::StatusCode::UNAVAILABLE, "the rate limit store is unavailable"};
      }
      over = !outcome.allowed;
      status.set_limit_remaining(over ? 0
                                      : static_cast<std::uint32_t>(std::min<std::uint64_t>(
                                            outcome.remaining, kMaxUint32)));
      setDuration(outcome.reset_after_us, *status.mutable_duration_until_reset());
    }
    recordStats(planned, over);
    if (over && !planned.shadow) {
      status.set_code(RateLimitResponse::OVER_LIMIT);
      over_limit = true;
    }
  }
  // Global shadow mode answers OK overall and leaves each descriptor's code as decided, as lyft
  // does: Envoy acts on the overall code, and the statuses still say which limits were over.
  if (options.shadow_mode) over_limit = false;
  response.set_overall_code(over_limit ? RateLimitResponse::OVER_LIMIT : RateLimitResponse::OK);
  if (options.response_headers) addHeaders(decisions, options, over_limit, response);
  return std::nullopt;
}

// The headers come from the enforced descriptors with a limit, seen as one decision, so the
// binding one (over the limit, else closest to it) is chosen as for Sluice's own limits.
void RlsPlan::addHeaders(std::span<const Decision> decisions, const DeciderOptions& options,
                         bool over_limit, RateLimitResponse& response) const {
  Decision decision;
  std::vector<http::LimitLabel> labels;
  for (const PlannedDescriptor& planned : descriptors_) {
    if (planned.shadow || (planned.kind != Kind::kLimited && planned.kind != Kind::kAlwaysOver)) {
      continue;
    }
    Outcome outcome;
    if (planned.kind == Kind::kLimited) {
      outcome = decisions[planned.group].statuses[planned.index];
      // A denied cost may be more than what is left (3/min, 2 asked with 1 left): the status
      // then says limit_remaining 0, as lyft's does, and so must the header.
      if (!outcome.allowed) outcome.remaining = 0;
    } else {
      outcome.allowed = planned.hits == 0;
      outcome.reason = outcome.allowed ? DenyReason::kNone : DenyReason::kCostExceedsLimit;
      outcome.reset_after_us = untilWindowEnd(planned.unit, now_us_);
      outcome.retry_after_us = outcome.allowed ? 0 : kNever;
    }
    decision.statuses.push_back(outcome);
    labels.push_back(
        {planned.name.empty() && planned.node != nullptr ? planned.node->stat_key : planned.name,
         unitMicros(planned.unit)});
  }
  summarize(decision);
  http::HeaderOptions header_options = options.headers;
  header_options.retry_after = header_options.retry_after && over_limit;
  http::HeaderList headers;
  http::appendRateLimitHeaders(decision, labels, header_options, headers);
  for (auto& [name, value] : headers) {
    auto& header = *response.add_response_headers_to_add();
    header.set_key(std::move(name));
    header.set_value(std::move(value));
  }
}

namespace {

// One request in flight: the plan, a decision per engine call, and who to tell.
struct Call {
  std::unique_ptr<RlsPlan> plan;
  std::vector<Decision> decisions;
  std::atomic<std::size_t> pending{0};
  RateLimitResponse* response = nullptr;
  const DeciderOptions* options = nullptr;
  RlsDecider::Done done;

  void finish() { done(plan->render(decisions, *options, *response)); }
};

}  // namespace

void RlsDecider::decideAsync(LyftConfigPtr config, const RateLimitRequest& request,
                             RateLimitResponse& response, Done done) {
  auto planned = RlsPlan::make(std::move(config), request, options_, clock_.now());
  if (auto* error = std::get_if<RpcError>(&planned)) return done(std::move(*error));
  auto call = std::make_shared<Call>();
  call->plan = std::move(std::get<std::unique_ptr<RlsPlan>>(planned));
  call->response = &response;
  call->options = &options_;
  call->done = std::move(done);
  const auto& groups = call->plan->groups();
  call->decisions.resize(groups.size());
  // One extra count held until every call is issued, so an inline completion cannot finish early.
  call->pending.store(groups.size() + 1, std::memory_order_relaxed);
  for (std::size_t group = 0; group < groups.size(); ++group) {
    engine_.checkAsync(groups[group], [call, group](Decision&& decision) {
      call->decisions[group] = std::move(decision);
      if (call->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) call->finish();
    });
  }
  if (call->pending.fetch_sub(1, std::memory_order_acq_rel) == 1) call->finish();
}

std::optional<RpcError> RlsDecider::decide(LyftConfigPtr config, const RateLimitRequest& request,
                                           RateLimitResponse& response) {
  std::promise<std::optional<RpcError>> promise;
  std::future<std::optional<RpcError>> result = promise.get_future();
  decideAsync(std::move(config), request, response,
              [&promise](std::optional<RpcError> error) { promise.set_value(std::move(error)); });
  return result.get();
}

}  // namespace sluice::rls
