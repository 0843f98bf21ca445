#include "server/json_responses.h"

#include <boost/beast/http/field.hpp>

#include "http/json_string.h"

namespace sluice::server {

namespace http = boost::beast::http;

HttpResponse jsonResponse(http::status status, std::string body, unsigned version) {
  HttpResponse response{status, version};
  response.set(http::field::content_type, "application/json");
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

std::string errorBody(std::string_view error, std::string_view message) {
  std::string body = R"({"error":)";
  sluice::http::appendJsonString(body, error);
  body += R"(,"message":)";
  sluice::http::appendJsonString(body, message);
  body += '}';
  return body;
}

HttpResponse errorResponse(http::status status, std::string_view message, unsigned version) {
  return jsonResponse(status, errorBody(http::obsolete_reason(status), message), version);
}

void appendJsonStrings(std::string& body, const std::vector<std::string>& strings) {
  body += '[';
  for (std::size_t i = 0; i < strings.size(); ++i) {
    if (i > 0) body += ',';
    sluice::http::appendJsonString(body, strings[i]);
  }
  body += ']';
}

}  // namespace sluice::server
