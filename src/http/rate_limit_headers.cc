#include "http/rate_limit_headers.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <string>
#include <vector>

#include "algorithm/scaled_math.h"
#include "http/json_string.h"
#include "policy/own_headers.h"
#include "sluice/outcome.h"

namespace sluice::http {
namespace {

void appendInteger(std::string& out, std::int64_t value) {
  char digits[24];
  const auto result = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, result.ptr);
}

std::int64_t cappedInteger(std::uint64_t value) noexcept {
  return static_cast<std::int64_t>(
      std::min<std::uint64_t>(value, static_cast<std::uint64_t>(kMaxHeaderInteger)));
}

std::string integerText(std::int64_t value) {
  std::string text;
  appendInteger(text, value);
  return text;
}

// SF Strings allow printable ASCII only. Other bytes, and '%' itself, are written as %XX: two
// names stay two items (each byte replaced by '_', "café" and "cafè" were both "caf__"), and a
// client percent-decodes an item's name to match it to its limit. The denied body's "limit"
// carries the same spelling as the header.
void appendSafeName(std::string& out, std::string_view name, bool escape_quotes) {
  if (!escape_quotes) return policy::appendPercentEncoded(out, name);
  for (const char byte : name) {
    if (byte == '"' || byte == '\\') out += '\\';
    policy::appendPercentEncoded(out, {&byte, 1});
  }
}

void appendSfString(std::string& out, std::string_view name) {
  out += '"';
  appendSafeName(out, name, /*escape_quotes=*/true);
  out += '"';
}

std::string sanitizedName(std::string_view name) {
  std::string safe;
  appendSafeName(safe, name, /*escape_quotes=*/false);  // the JSON writer escapes them
  return safe;
}

const LimitLabel* labelAt(std::span<const LimitLabel> labels, std::size_t index) noexcept {
  return index < labels.size() ? &labels[index] : nullptr;
}

bool neverFits(const Outcome& binding, Micros retry_after_us) noexcept {
  return binding.reason == DenyReason::kCostExceedsLimit || retry_after_us == kNever;
}

// Appends the items of the limits `listed` (all when it is empty) through
// `append_item(list, index)`, ", "-separated.
template <class AppendItem>
void appendList(std::string& list, std::size_t count, const std::vector<bool>& listed,
                const AppendItem& append_item) {
  bool first = true;
  for (std::size_t i = 0; i < count; ++i) {
    if (!listed.empty() && !listed[i]) continue;
    if (!first) list += ", ";
    first = false;
    append_item(list, i);
  }
}

// The index of the binding limit's status, or statuses.size() when there is none.
std::size_t bindingIndex(const Decision& decision) noexcept {
  return decision.bindingStatus() == nullptr ? decision.statuses.size() : decision.binding;
}

void appendPolicyItem(std::string& list, const Decision& decision,
                      std::span<const LimitLabel> labels, std::size_t i) {
  const LimitLabel* label = labelAt(labels, i);
  appendSfString(list, label != nullptr ? label->name : std::string_view{});
  list += ";q=";
  appendInteger(list, cappedInteger(decision.statuses[i].limit));
  if (label != nullptr) {
    // w is an SF Integer > 0: a sub-second or zero period still says "1".
    list += ";w=";
    appendInteger(list, std::max<std::int64_t>(1, headerSeconds(label->window_us)));
  }
}

void appendServiceLimitItem(std::string& list, const Decision& decision,
                            std::span<const LimitLabel> labels, std::size_t i) {
  const LimitLabel* label = labelAt(labels, i);
  const Outcome& status = decision.statuses[i];
  appendSfString(list, label != nullptr ? label->name : std::string_view{});
  list += ";r=";
  appendInteger(list, cappedInteger(status.remaining));
  // Seconds until more quota is available: for a denial, until the request would fit, as
  // Retry-After says (which should not point earlier than t); otherwise until full again.
  const bool waits = !status.allowed && !neverFits(status, status.retry_after_us);
  list += ";t=";
  appendInteger(list, headerSeconds(waits ? status.retry_after_us : status.reset_after_us));
}

// Which limits RateLimit and RateLimit-Policy name, the same in both: all (empty) while each
// list stays within kMaxNameListBytes, else the binding limit and as many others, in order, as
// fit in both. A list's items are at most the bound below, so the exact sizes are worked out
// only when many or long names could pass it.
std::vector<bool> listedLimits(const Decision& decision, std::span<const LimitLabel> labels) {
  const std::size_t count = decision.statuses.size();
  // An item: ", ", the quoted name (a byte percent-encoded at most triples), two parameters of
  // at most 3 + 19 bytes each.
  constexpr std::size_t kItemBytesBesidesName = 2 + 2 + 2 * (3 + 19);
  std::size_t most = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const LimitLabel* label = labelAt(labels, i);
    most += kItemBytesBesidesName + 3 * (label != nullptr ? label->name.size() : 0);
  }
  if (most <= policy::kMaxNameListBytes) return {};
  const std::size_t binding = bindingIndex(decision);
  std::vector<bool> listed(count, false);
  std::size_t policy_bytes = 0;
  std::size_t limit_bytes = 0;
  std::string item;
  for (std::size_t i = 0; i < count; ++i) {
    item.clear();
    appendPolicyItem(item, decision, labels, i);
    const std::size_t policy_item = item.size() + 2;
    item.clear();
    appendServiceLimitItem(item, decision, labels, i);
    const std::size_t limit_item = item.size() + 2;
    if (i == binding) {
      listed[i] = true;  // always, and outside the bound
      continue;
    }
    if (policy_bytes + policy_item > policy::kMaxNameListBytes ||
        limit_bytes + limit_item > policy::kMaxNameListBytes) {
      continue;
    }
    policy_bytes += policy_item;
    limit_bytes += limit_item;
    listed[i] = true;
  }
  return listed;
}

// The most headers renderRateLimitHeaders writes: three X-RateLimit-*, two IETF, Retry-After.
constexpr std::size_t kMostHeaders = 6;

// The headers appendRateLimitHeaders documents, in its order, through `sink`:
// sink.value(name) gives the string to append that header's value to, sink.done() ends it.
template <class Sink>
void renderRateLimitHeaders(const Decision& decision, std::span<const LimitLabel> labels,
                            const HeaderOptions& options, Sink& sink) {
  assert(labels.size() == decision.statuses.size());
  const Outcome* binding = decision.bindingStatus();
  if (options.x_ratelimit && binding != nullptr) {
    appendInteger(sink.value(options.names.limit), cappedInteger(binding->limit));
    sink.done();
    appendInteger(sink.value(options.names.remaining), cappedInteger(binding->remaining));
    sink.done();
    appendInteger(sink.value(options.names.reset), headerSeconds(binding->reset_after_us));
    sink.done();
  }
  // RateLimit-Policy must be a non-empty list, so both IETF fields go only with some limit.
  if (options.ietf && !decision.statuses.empty()) {
    const std::size_t count = decision.statuses.size();
    const std::vector<bool> listed = listedLimits(decision, labels);
    appendList(
        sink.value(options.names.ratelimit_policy), count, listed,
        [&](std::string& list, std::size_t i) { appendPolicyItem(list, decision, labels, i); });
    sink.done();
    appendList(sink.value(options.names.ratelimit), count, listed,
               [&](std::string& list, std::size_t i) {
                 appendServiceLimitItem(list, decision, labels, i);
               });
    sink.done();
  }
  if (options.retry_after && !decision.allowed && binding != nullptr &&
      !neverFits(*binding, decision.retry_after_us)) {
    appendInteger(sink.value(options.names.retry_after), headerSeconds(decision.retry_after_us));
    sink.done();
  }
}

struct ListSink {
  HeaderList& out;
  std::string& value(std::string_view name) { return out.emplace_back(name, std::string()).second; }
  void done() noexcept {}
};

struct LinesSink {
  std::string& lines;
  std::string& value(std::string_view name) {
    lines += name;
    lines += ": ";
    return lines;
  }
  void done() { lines += "\r\n"; }
};

}  // namespace

Micros quotaWindowUs(const LimitSpec& spec) noexcept {
  const Rate& rate = spec.rate();
  if (rate.count == 0 || spec.limit() == rate.count) return rate.period_us;
  // period × limit / count, rounded up. A valid spec keeps burst × period within exact
  // arithmetic (LimitSpec::make), but the product is formed in 128 bits all the same. The
  // interval bucket refills in whole steps of `count` each `period`, so its quota takes whole
  // periods: at 2/3s with a burst of 5, 9 s (three steps), where 7.5 s would promise a fifth
  // token that is not back yet.
  const algorithm::Int128 window =
      spec.algorithm() == Algorithm::kTokenBucketInterval
          ? algorithm::ceilDiv(static_cast<algorithm::Int128>(spec.limit()), rate.count) *
                rate.period_us
          : algorithm::ceilDiv(static_cast<algorithm::Int128>(rate.period_us) * spec.limit(),
                               rate.count);
  return window >= kNever ? kNever : static_cast<Micros>(window);
}

std::int64_t headerSeconds(Micros us) noexcept {
  if (us <= 0) return 0;
  if (us == kNever) return kMaxHeaderInteger;
  // Not (us + 999'999) / 1e6: that overflows near kNever.
  const std::int64_t seconds = us / kMicrosPerSecond + (us % kMicrosPerSecond != 0 ? 1 : 0);
  return std::min(seconds, kMaxHeaderInteger);
}

void appendRateLimitHeaders(const Decision& decision, std::span<const LimitLabel> labels,
                            const HeaderOptions& options, HeaderList& out) {
  out.reserve(out.size() + kMostHeaders);  // grown once, not at every header
  ListSink sink{out};
  renderRateLimitHeaders(decision, labels, options, sink);
}

void appendRateLimitHeaderLines(const Decision& decision, std::span<const LimitLabel> labels,
                                const HeaderOptions& options, std::string& lines) {
  LinesSink sink{lines};
  renderRateLimitHeaders(decision, labels, options, sink);
}

void appendConcurrencyHeaders(std::string_view name, std::uint64_t max_in_flight,
                              const HeaderOptions& options, HeaderList& out) {
  out.reserve(out.size() + kMostHeaders - 1);
  if (options.x_ratelimit) {
    appendInteger(out.emplace_back(options.names.limit, std::string()).second,
                  cappedInteger(max_in_flight));
    out.emplace_back(options.names.remaining, "0");
  }
  if (options.ietf) {
    std::string& policy = out.emplace_back(options.names.ratelimit_policy, std::string()).second;
    appendSfString(policy, name);
    policy += ";q=";
    appendInteger(policy, cappedInteger(max_in_flight));
    policy += ";qu=\"concurrent-requests\"";
    std::string& limit = out.emplace_back(options.names.ratelimit, std::string()).second;
    appendSfString(limit, name);
    limit += ";r=0";
  }
  if (options.retry_after) out.emplace_back(options.names.retry_after, "1");
}

std::string deniedBody(const Decision& decision, std::span<const LimitLabel> labels) {
  assert(labels.size() == decision.statuses.size());
  const Outcome* binding = decision.bindingStatus();
  const LimitLabel* label = labelAt(labels, decision.binding);
  const bool never = binding != nullptr && neverFits(*binding, decision.retry_after_us);
  const std::int64_t retry_after_s = headerSeconds(decision.retry_after_us);

  std::string message;
  if (never) {
    message = "The request costs more than the limit allows at once; it can never fit.";
  } else if (binding != nullptr && binding->reason == DenyReason::kStoreUnavailable) {
    message = "The rate limiter could not check this request; retry after " +
              integerText(retry_after_s) + " s.";
  } else {
    message = "Too many requests; retry after " + integerText(retry_after_s) + " s.";
  }

  std::string body = R"({"error":"rate_limited","message":)";
  appendJsonString(body, message);
  body += R"(,"limit":)";
  if (binding == nullptr) {
    body += "null";
  } else {
    appendJsonString(body, sanitizedName(label != nullptr ? label->name : std::string_view{}));
  }
  body += R"(,"retry_after":)";
  if (never) {
    body += "null";
  } else {
    appendInteger(body, retry_after_s);
  }
  body += '}';
  return body;
}

HeaderOptions headerOptionsFor(const policy::HeaderSettings& settings) {
  HeaderOptions options;
  options.x_ratelimit = settings.x_ratelimit;
  options.ietf = settings.ietf;
  options.retry_after = settings.retry_after;
  const auto rename = [&](std::string_view family, std::string& name) {
    if (const auto found = settings.names.find(family); found != settings.names.end())
      name = found->second;
  };
  rename("limit", options.names.limit);
  rename("remaining", options.names.remaining);
  rename("reset", options.names.reset);
  rename("retry_after", options.names.retry_after);
  rename("ratelimit", options.names.ratelimit);
  rename("ratelimit_policy", options.names.ratelimit_policy);
  return options;
}

}  // namespace sluice::http
