// Everything derived from a request once, before its limits are keyed: the client address after
// trusted proxies, the API key (hashed) and its tier, verified JWT claims, and on demand the
// request as a JSON document for JSON-path selectors.
#pragma once

#include <optional>
#include <string>

#include <boost/json/value.hpp>

#include "policy/request_view.h"

namespace sluice::policy {

struct RequestContext {
  explicit RequestContext(const RequestView& view) : request(view) {}

  const RequestView& request;
  std::string client_ip;  // resolved, textual
  // What per-address limits count: client_ip, or for IPv6 its network (addressNetworkText).
  std::string client_network;
  std::optional<std::string> api_key_id;  // hashApiKey() of the presented key, if any
  bool api_key_known = false;             // the key is in the keys file
  // The key header came on lines holding different keys: no key, and an api_key key part
  // counts by address, whatever when_missing says (a client choosing would skip the limit).
  bool api_key_in_doubt = false;
  bool token_in_doubt = false;     // the same for the JWT header: no claims, jwt: parts by address
  std::string tier = "anonymous";  // from the keys file, a JWT claim, or anonymous
  std::optional<boost::json::object> claims;  // verified JWT payload, if any

  // The request as {"request": {"http": {"method", "path", "headers": {Name: [values]},
  // "cookies": {name: value}}, "client_ip", "parsed_token": {"payload": claims}}}. Header names
  // appear both as received-canonical ("X-User-Id") and lower case. Built on first use.
  [[nodiscard]] const boost::json::value& document() const;

 private:
  mutable std::optional<boost::json::value> document_;
};

}  // namespace sluice::policy
