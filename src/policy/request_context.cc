#include "policy/request_context.h"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "policy/cookies.h"
#include "policy/percent_decoding.h"

namespace sluice::policy {
namespace {

// "x-user-id" → "X-User-Id": the usual spelling, so documented paths work whatever case a
// client or proxy sent.
std::string canonicalHeaderName(std::string_view name) {
  std::string out(name);
  bool start = true;
  for (char& c : out) {
    if (start && c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    if (!start && c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    start = c == '-';
  }
  return out;
}

std::string lowerCase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = lowerAscii(c);
  return out;
}

// Every "name=value" pair of a Cookie header, read as cookie: key parts read them: %XX decoded,
// an empty value none, and a name sent with two different values, or with a value backends may
// read as several cookies, null (in doubt: backends take the first or the last, or split it),
// which a json: key part counts by address, as cookie: does.
void addCookies(std::string_view header, boost::json::object& cookies) {
  while (!header.empty()) {
    const std::size_t end = header.find(';');
    std::string_view pair = header.substr(0, end);
    header = end == std::string_view::npos ? std::string_view() : header.substr(end + 1);
    const std::size_t equals = pair.find('=');
    if (equals == std::string_view::npos) continue;
    // Blanks around the name are not part of it, as cookie: (findCookie) reads it: "sid =x" is
    // sid, and a client sending "sid=a; sid =b" is in doubt here too.
    const std::string_view name = trimBlanks(pair.substr(0, equals));
    if (name.empty()) continue;
    const auto value = findCookie(pair, name);
    if (!value || value->empty()) continue;
    std::string decoded = percentDecoded(*value);
    const auto seen = cookies.find(name);
    if (backendsMayReadOtherwise(*value)) {
      cookies[name] = nullptr;
    } else if (seen == cookies.end()) {
      cookies[name] = decoded;
    } else if (!seen->value().is_string() || seen->value().as_string() != decoded) {
      seen->value() = nullptr;
    }
  }
}

}  // namespace

const boost::json::value& RequestContext::document() const {
  if (document_) return *document_;
  boost::json::object headers;
  boost::json::object cookies;
  for (const auto& [name, value] : request.headers) {
    for (const std::string& spelled : {canonicalHeaderName(name), lowerCase(name)}) {
      boost::json::value& values = headers[spelled];
      if (!values.is_array()) values.emplace_array();
      values.as_array().emplace_back(value);
      if (spelled == lowerCase(name)) break;  // canonical and lower case are the same name
    }
    if (equalsIgnoreCase(name, "cookie")) addCookies(value, cookies);
  }
  boost::json::object http;
  http["method"] = request.method;
  http["path"] = request.foldedPath();  // as a `path` key part counts it
  http["headers"] = std::move(headers);
  http["cookies"] = std::move(cookies);
  boost::json::object inner;
  inner["http"] = std::move(http);
  inner["client_ip"] = client_ip;
  if (claims) inner["parsed_token"] = boost::json::object{{"payload", *claims}};
  document_ = boost::json::object{{"request", std::move(inner)}};
  return *document_;
}

}  // namespace sluice::policy
