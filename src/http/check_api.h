// The JSON of the decision API, POST /v1/check, apart from any server:
//   {"limit": "login", "key": "203.0.113.9", "cost": 1, "tier": "free"}     one named limit
//   {"request": {"method": "GET", "path": "/api/x", "headers": {"X-Api-Key": "..."},
//                "client_ip": "203.0.113.9"}, "cost": 1}                    the whole policy
//   {"checks": [ ...up to 100 of the above... ]}                            a batch
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "http/json_string.h"
#include "http/rate_limit_headers.h"
#include "policy/decide.h"
#include "policy/request_view.h"
#include "sluice/result.h"

namespace sluice::http {

inline constexpr std::size_t kMaxBatchChecks = 100;

struct CheckItem {
  // The direct form: a limit by name and the key to count under.
  std::string limit;
  std::string key;
  std::string tier = "anonymous";
  // The request form: evaluated against every limit of the policy.
  std::optional<policy::RequestView> request;
  std::uint64_t cost = 1;
};

struct CheckBody {
  std::vector<CheckItem> items;
  bool batch = false;  // the {"checks": [...]} form: answer {"results": [...]}
};

// Never throws. The error names what is wrong, for a 400. `peer` stands in for a request
// description that gives no client_ip.
[[nodiscard]] Result<CheckBody> parseCheckBody(std::string_view json,
                                               const boost::asio::ip::address& peer);

// The labels for rendering headers, parallel to decision.enforced.statuses. A request has a
// handful of limits at most: they fit in place, with no allocation per response.
using LimitLabels = boost::container::small_vector<LimitLabel, 4>;
[[nodiscard]] LimitLabels enforcedLabels(const policy::PolicyDecision& decision);

// One decision as a JSON object text, with `headers` (appendRateLimitHeaders' output for it),
// which a response would carry. `delayed_us` is how long a throttled request was held; a
// decision's hold_us left (a shaper's slot not waited for) is written as `hold_ms`.
[[nodiscard]] std::string renderDecision(const policy::PolicyDecision& decision,
                                         const HeaderList& headers, Micros delayed_us);

}  // namespace sluice::http
