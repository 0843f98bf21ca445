#include "policy/key_selector.h"

#include <algorithm>
#include <utility>

#include <boost/json/serialize.hpp>

#include "policy/cookies.h"
#include "policy/percent_decoding.h"
#include "policy/request_view.h"

namespace sluice::policy {
namespace {

struct NamedKind {
  std::string_view name;
  KeySelector::Kind kind;
};

constexpr NamedKind kPlainParts[] = {
    {"global", KeySelector::Kind::kGlobal},  {"ip", KeySelector::Kind::kIp},
    {"api_key", KeySelector::Kind::kApiKey}, {"client", KeySelector::Kind::kClient},
    {"tier", KeySelector::Kind::kTier},      {"method", KeySelector::Kind::kMethod},
    {"path", KeySelector::Kind::kPath},      {"route", KeySelector::Kind::kRoute},
};

constexpr NamedKind kNamedParts[] = {
    {"header:", KeySelector::Kind::kHeader},
    {"cookie:", KeySelector::Kind::kCookie},
    {"jwt:", KeySelector::Kind::kJwtClaim},
    {"json:", KeySelector::Kind::kJsonPath},
};

// Why `path` can select no text in the request document (RequestContext::document: {"request":
// {"http": {"method", "path", "headers": {name: [lines]}, "cookies": {name: value}},
// "client_ip", "parsed_token": {"payload": claims}}}), or nullopt when it may. A misspelt member
// or a path to a list or an object would leave the limit keyed by address, or skipped, for
// every request, without a word.
std::optional<std::string> shapeProblem(const JsonPath& path) {
  const auto member = [&](std::size_t i) { return path.memberAt(i).value_or(""); };
  const auto ends = [&](std::size_t steps, std::string_view what) -> std::optional<std::string> {
    if (path.steps() == steps) return std::nullopt;
    if (path.steps() < steps) return "selects " + std::string(what) + ", not a value";
    return "goes past " + std::string(what) + ", which holds nothing further";
  };
  if (member(0) != "request") return "the request document's paths start at $.request";
  if (path.steps() == 1) return "selects an object, not a value";
  if (member(1) == "client_ip") return ends(2, "the client address");
  if (member(1) == "parsed_token") {
    if (path.steps() == 2) return "selects an object, not a value";
    if (member(2) != "payload") return "$.request.parsed_token holds only payload (the claims)";
    if (path.steps() == 3) return "selects the claims' object, not a value: name a claim";
    return std::nullopt;  // claims are the token's own
  }
  if (member(1) != "http") return "$.request holds http, client_ip and parsed_token";
  if (path.steps() == 2) return "selects an object, not a value";
  if (member(2) == "method" || member(2) == "path") return ends(3, "the " + std::string(member(2)));
  if (member(2) == "cookies") {
    if (path.steps() == 3 || path.memberAt(3) == std::nullopt) {
      return "name a cookie: $.request.http.cookies['name']";
    }
    return ends(4, "a cookie's value");
  }
  if (member(2) == "headers") {
    if (path.steps() == 3 || path.memberAt(3) == std::nullopt) {
      return "name a header: $.request.http.headers['Name'][0]";
    }
    if (path.steps() == 4 || path.memberAt(4) != std::nullopt) {
      return "a header is a list of its lines: add [0] (or the line's index)";
    }
    return ends(5, "a header line");
  }
  return "$.request.http holds method, path, headers and cookies";
}

// A claim's value as key text: strings as they are, numbers and booleans as JSON.
std::optional<std::string> claimText(const boost::json::object& claims, std::string_view name) {
  const auto found = claims.find(name);
  if (found == claims.end()) return std::nullopt;
  const boost::json::value& value = found->value();
  if (value.is_string()) return std::string(value.as_string());
  if (value.is_number() || value.is_bool()) return boost::json::serialize(value);
  return std::nullopt;
}

}  // namespace

void appendCounterPart(std::string& out, std::string_view part) {
  out += std::to_string(part.size());
  out += ':';
  out += part;
}

void appendAddressFallback(const RequestContext& context, std::string& out) {
  out += 'i';
  appendCounterPart(out, context.client_network);
}

Result<KeySelector> KeySelector::parse(const std::vector<std::string>& parts) {
  if (parts.empty()) return Error{"key: at least one part is needed, e.g. ip or header:X-User-Id"};
  KeySelector selector;
  for (const std::string& text : parts) {
    if (!selector.text_.empty()) selector.text_ += "+";
    selector.text_ += text;
    bool known = false;
    for (const NamedKind& plain : kPlainParts) {
      if (text == plain.name) {
        selector.parts_.push_back({plain.kind, {}, std::nullopt});
        known = true;
      }
    }
    for (const NamedKind& named : kNamedParts) {
      if (known || !text.starts_with(named.name)) continue;
      const std::string name = text.substr(named.name.size());
      if (name.empty()) return Error{"key part \"" + text + "\": a name must follow the colon"};
      // A header or cookie name that is not an HTTP token never arrives, and the limit would
      // silently never apply (or fall back to the address).
      if ((named.kind == Kind::kHeader || named.kind == Kind::kCookie) && !isHttpToken(name)) {
        return Error{"key part \"" + text + "\": \"" + name +
                     "\" is not a header or cookie name (letters, digits and !#$%&'*+-.^_`|~)"};
      }
      Part part{named.kind, name, std::nullopt};
      if (named.kind == Kind::kJsonPath) {
        Result<JsonPath> path = JsonPath::parse(name);
        if (!path.ok()) return Error{"key part \"" + text + "\": " + path.error()};
        if (const auto problem = shapeProblem(path.value())) {
          return Error{"key part \"" + text + "\": " + *problem};
        }
        part.path = std::move(path).value();
        // Header names are any case in a request; the document holds each under its lower-case
        // spelling (and a canonical one), so ['X-API-Key'] finds what ['x-api-key'] finds.
        if (part.path->startsWith({"request", "http", "headers"})) part.path->lowerMemberAt(3);
      }
      selector.parts_.push_back(std::move(part));
      known = true;
    }
    if (!known) {
      return Error{"key part \"" + text +
                   "\" is unknown (use global, ip, api_key, client, tier, method, path, route, "
                   "header:<name>, cookie:<name>, jwt:<claim> or json:<path>)"};
    }
  }
  return selector;
}

namespace {

// Whether two cookie values read the same once %XX-decoded.
bool sameCookieValue(std::string_view a, std::string_view b) {
  if (a.find('%') == std::string_view::npos && b.find('%') == std::string_view::npos) return a == b;
  return percentDecoded(a) == percentDecoded(b);
}

// Cookie `name` from every Cookie line, as a backend reads them (RFC 9113 8.2.3 splits cookies
// over lines: reading the first line only, "Cookie: a=b" ahead of the session hid it). Values
// compare decoded (S%31 is S1 to PHP and Express); an empty one is none, as for a header. Two
// different values leave the client in doubt: backends take the first or the last, so keying
// either would let a client vary the other at will. So does a value some backends read as
// several cookies (backendsMayReadOtherwise).
KeySelector::Read appendCookiePart(const RequestContext& context, std::string_view name,
                                   std::string& out) {
  std::optional<std::string_view> value;
  bool conflicting = false;
  for (const auto& [field, line] : context.request.headers) {
    if (!equalsIgnoreCase(field, "cookie")) continue;
    std::string_view rest = line;
    while (const auto found = nextCookie(rest, name)) {
      if (found->empty()) continue;
      if (backendsMayReadOtherwise(*found)) conflicting = true;
      if (!value) {
        value = found;
      } else if (!sameCookieValue(*value, *found)) {
        conflicting = true;
      }
    }
  }
  if (conflicting) return KeySelector::Read::kInDoubt;
  if (!value) return KeySelector::Read::kMissing;
  if (value->find('%') == std::string_view::npos) {
    appendCounterPart(out, *value);
  } else {
    appendCounterPart(out, percentDecoded(*value));
  }
  return KeySelector::Read::kKeyed;
}

// The folded path: spellings of one resource (%2F, ";..." parameters and, for a limit matching
// in any case, letter case) are one counter.
void appendPathPart(const RequestView& request, bool fold_case, std::string& out) {
  if (!fold_case) return appendCounterPart(out, request.foldedPath());
  std::string lower(request.foldedPath());
  for (char& c : lower) c = lowerAscii(c);
  appendCounterPart(out, lower);
}

// Whether a json: part reads something the client left in doubt, as the other parts read it:
// a cookie sent with two values (null in the document), any line of a header sent on lines that
// differ (`headers['X-User-Id'][0]` read the first, which a client could vary at will while a
// backend reads the last), or the token's claims while the token is in doubt (absent from the
// document, so the part read as missing, and `when_missing: skip` skipped the limit). Other
// nulls, a JWT claim's say, are no value, as jwt: reads them.
bool jsonPartInDoubt(const RequestContext& context, const JsonPath& path) {
  if (path.startsWith({"request", "http", "cookies"})) {
    const boost::json::value* found = path.find(context.document());
    return found != nullptr && found->is_null();
  }
  if (path.startsWith({"request", "http", "headers"})) {
    const std::optional<std::string_view> name = path.memberAt(3);
    bool in_doubt = false;
    if (name) (void)context.request.agreedHeader(*name, in_doubt);
    return in_doubt;
  }
  return context.token_in_doubt && path.startsWith({"request", "parsed_token"});
}

// A part's value: in doubt, missing (none, or empty: counted as a value, every client sending it
// empty would share one counter, which one of them could spend for all), or appended.
template <typename Text>
KeySelector::Read appendValue(const std::optional<Text>& value, bool in_doubt, std::string& out) {
  if (in_doubt) return KeySelector::Read::kInDoubt;
  if (!value || value->empty()) return KeySelector::Read::kMissing;
  appendCounterPart(out, *value);
  return KeySelector::Read::kKeyed;
}

}  // namespace

KeySelector::Read KeySelector::appendKey(const RequestContext& context, std::string_view route,
                                         std::string& out, bool fold_path_case) const {
  for (const Part& part : parts_) {
    if (const Read read = appendPart(part, context, route, out, fold_path_case);
        read != Read::kKeyed) {
      return read;
    }
  }
  return Read::kKeyed;
}

KeySelector::Read KeySelector::appendPart(const Part& part, const RequestContext& context,
                                          std::string_view route, std::string& out,
                                          bool fold_path_case) {
  switch (part.kind) {
    case Kind::kGlobal:
      appendCounterPart(out, "global");
      break;
    case Kind::kIp:
      appendCounterPart(out, context.client_network);
      break;
    case Kind::kApiKey:
      return appendValue(context.api_key_id, context.api_key_in_doubt, out);
    case Kind::kClient:
      // An unknown key would let a caller mint fresh counters at will: use the address.
      appendCounterPart(out, context.api_key_known && context.api_key_id ? *context.api_key_id
                                                                         : context.client_network);
      break;
    case Kind::kTier:
      appendCounterPart(out, context.tier);
      break;
    case Kind::kHeader: {
      // Lines that differ are in doubt, as cookies are.
      bool in_doubt = false;
      const auto value = context.request.agreedHeader(part.name, in_doubt);
      return appendValue(value, in_doubt, out);
    }
    case Kind::kCookie:
      return appendCookiePart(context, part.name, out);
    case Kind::kJwtClaim:
      return appendValue(context.claims ? claimText(*context.claims, part.name) : std::nullopt,
                         context.token_in_doubt, out);
    case Kind::kJsonPath:
      return appendValue(part.path->findText(context.document()),
                         jsonPartInDoubt(context, *part.path), out);
    case Kind::kMethod:
      appendCounterPart(out, context.request.method);
      break;
    case Kind::kPath:
      appendPathPart(context.request, fold_path_case, out);
      break;
    case Kind::kRoute:
      appendCounterPart(out, route);
      break;
  }
  return Read::kKeyed;
}

bool KeySelector::readsJwtClaims() const noexcept {
  return std::any_of(parts_.begin(), parts_.end(), [](const Part& part) {
    return part.kind == Kind::kJwtClaim ||
           (part.kind == Kind::kJsonPath && part.path->startsWith({"request", "parsed_token"}));
  });
}

}  // namespace sluice::policy
