// The service's JSON answers, on the decision API and the admin listener alike. The text they
// carry may quote a configuration file's or a client's bytes in any encoding: it is written with
// appendJsonString, which makes any bytes valid UTF-8 (boost::json::serialize passes them on as
// they are, which makes the body invalid JSON).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/status.hpp>

#include "server/http_server.h"

namespace sluice::server {

// `body` as an application/json answer.
[[nodiscard]] HttpResponse jsonResponse(boost::beast::http::status status, std::string body,
                                        unsigned version);
// {"error":…,"message":…}.
[[nodiscard]] std::string errorBody(std::string_view error, std::string_view message);
// An errorBody answer, its "error" the status's reason phrase.
[[nodiscard]] HttpResponse errorResponse(boost::beast::http::status status,
                                         std::string_view message, unsigned version);
// `strings` as a JSON array appended to `body`.
void appendJsonStrings(std::string& body, const std::vector<std::string>& strings);

}  // namespace sluice::server
