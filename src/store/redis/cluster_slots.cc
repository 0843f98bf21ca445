#include "store/redis/cluster_slots.h"

#include <algorithm>
#include <charconv>

#include <hiredis/hiredis.h>

namespace sluice::redis {
namespace {

std::string joinAddress(std::string_view host, std::string_view asked_host, long long port) {
  std::string address(host.empty() ? asked_host : host);
  address += ':';
  address += std::to_string(port);
  return address;
}

bool isInteger(const redisReply* element) {
  return element != nullptr && element->type == REDIS_REPLY_INTEGER;
}

// One range's master: [host, port, id, ...]. Nullopt when it is not one ("?" is Redis's word
// for an endpoint it does not know).
std::optional<std::string> masterAddress(const redisReply* node, std::string_view asked_host) {
  if (node == nullptr || node->type != REDIS_REPLY_ARRAY || node->elements < 2) return {};
  const redisReply* host = node->element[0];
  const redisReply* port = node->element[1];
  if (host == nullptr || host->type != REDIS_REPLY_STRING || !isInteger(port)) return {};
  const std::string_view host_text(host->str, host->len);
  if (host_text == "?" || port->integer <= 0 || port->integer > 65535) return {};
  return joinAddress(host_text, asked_host, port->integer);
}

std::int32_t masterIndex(SlotMap& map, const std::string& address) {
  const auto found = std::find(map.masters.begin(), map.masters.end(), address);
  if (found != map.masters.end()) return static_cast<std::int32_t>(found - map.masters.begin());
  map.masters.push_back(address);
  return static_cast<std::int32_t>(map.masters.size() - 1);
}

}  // namespace

std::optional<HostPort> splitHostPort(std::string_view address) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  HostPort parsed;
  parsed.host = std::string(address.substr(0, colon));
  const char* begin = address.data() + colon + 1;
  const char* end = address.data() + address.size();
  const auto [stop, error] = std::from_chars(begin, end, parsed.port);
  if (error != std::errc() || stop != end || parsed.port == 0) return std::nullopt;
  return parsed;
}

std::optional<std::string> readClusterSlots(const redisReply* reply, std::string_view asked_host,
                                            SlotMap& map) {
  if (reply == nullptr) return "no reply to CLUSTER SLOTS";
  if (reply->type == REDIS_REPLY_ERROR) return std::string(reply->str, reply->len);
  if (reply->type != REDIS_REPLY_ARRAY) return "CLUSTER SLOTS did not reply with an array";
  map = SlotMap();
  bool any = false;
  for (std::size_t i = 0; i < reply->elements; ++i) {
    const redisReply* range = reply->element[i];
    if (range == nullptr || range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
        !isInteger(range->element[0]) || !isInteger(range->element[1])) {
      return "CLUSTER SLOTS replied with a malformed range";
    }
    const long long first = range->element[0]->integer;
    const long long last = range->element[1]->integer;
    if (first < 0 || last < first || last >= kClusterSlots) {
      return "CLUSTER SLOTS replied with a slot out of range";
    }
    const std::optional<std::string> master = masterAddress(range->element[2], asked_host);
    if (!master) continue;  // a range whose master is unknown stays unserved until it is known
    const std::int32_t index = masterIndex(map, *master);
    for (long long slot = first; slot <= last; ++slot) map.owner[slot] = index;
    any = true;
  }
  if (!any) return "CLUSTER SLOTS named no master";
  return std::nullopt;
}

std::optional<Redirect> readRedirect(std::string_view error, std::string_view asked_host) {
  Redirect redirect;
  if (error.starts_with("MOVED ")) {
    error.remove_prefix(6);
  } else if (error.starts_with("ASK ")) {
    redirect.kind = Redirect::Kind::kAsk;
    error.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  const std::size_t space = error.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto [stop, parse_error] =
      std::from_chars(error.data(), error.data() + space, redirect.slot);
  if (parse_error != std::errc() || stop != error.data() + space || redirect.slot >= kClusterSlots)
    return std::nullopt;
  const std::string_view address = error.substr(space + 1);
  const std::optional<HostPort> parsed = splitHostPort(address);
  if (!parsed || parsed->host == "?") return std::nullopt;
  redirect.address = joinAddress(parsed->host, asked_host, parsed->port);
  return redirect;
}

}  // namespace sluice::redis
