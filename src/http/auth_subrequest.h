// nginx auth_request (and Traefik forwardAuth and the like) send the limiter a subrequest that
// carries the original request's headers, with its URI and method in extra headers. This turns
// one into the RequestView the policy decides on.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "policy/request_view.h"

namespace sluice::http {

// Method from `method_header`, else the subrequest's; path from `uri_header` (normalized, query
// removed), else the subrequest's target; every header as received; `peer` is the proxy's
// address (the client's is resolved through the forwarding header from trusted proxies). Only
// the configured headers are read: a client can send any of them, so the proxy must set them.
// Never throws but for allocation.
[[nodiscard]] policy::RequestView viewFromSubrequest(
    const boost::beast::http::request<boost::beast::http::string_body>& subrequest,
    const boost::asio::ip::address& peer, std::string_view uri_header = "X-Original-URI",
    std::string_view method_header = "X-Original-Method");

}  // namespace sluice::http
