// nginx auth_request (and Traefik forwardAuth and the like) send the limiter a subrequest that
// carries the original request's headers, with its URI and method in extra headers. This turns
// one into the RequestView the policy decides on.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "policy/request_view.h"

namespace sluice::http {

// Method from X-Original-Method (or X-Forwarded-Method), else the subrequest's; path from
// X-Original-URI (or X-Forwarded-Uri), query removed, else the subrequest's target; every
// header as received; `peer` is the proxy's address (the client's is resolved through
// X-Forwarded-For / Forwarded from trusted proxies). Never throws but for allocation.
[[nodiscard]] policy::RequestView viewFromSubrequest(
    const boost::beast::http::request<boost::beast::http::string_body>& subrequest,
    const boost::asio::ip::address& peer);

}  // namespace sluice::http
