#include "gateway/forwarding.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <span>

#include <boost/container/small_vector.hpp>

#include "policy/request_view.h"

namespace sluice::gateway {
namespace {

using policy::equalsIgnoreCase;

// Whether `list` (a comma-separated header value) holds `token`, in any case.
bool listContains(std::string_view list, std::string_view token) noexcept {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    if (equalsIgnoreCase(policy::trimBlanks(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// Whether field name `name` starts with `prefix` (lower case, '-' for '_') when '_' is read as
// '-', as CGI, WSGI and Rack read it: X_Sluice_Decision reaches them as X-Sluice-Decision does.
bool startsAsGatewaySets(std::string_view name, std::string_view prefix) noexcept {
  if (name.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    char c = policy::lowerAscii(name[i]);
    if (c == '_') c = '-';
    if (c != prefix[i]) return false;
  }
  return true;
}

// A client's field that an upstream could take for one the gateway writes itself: the decision
// headers, or X-Forwarded-* spelled with '_' (the gateway merges the '-' spellings into its own).
bool spellsAGatewayField(std::string_view name) noexcept {
  if (startsAsGatewaySets(name, "x-sluice-")) return true;
  if (name.find('_') == std::string_view::npos) return false;
  for (const std::string_view field : {"x-forwarded-for", "x-forwarded-proto"}) {
    if (name.size() == field.size() && startsAsGatewaySets(name, field)) return true;
  }
  return false;
}

void appendFraming(Framing framing, std::uint64_t content_length, std::string& out) {
  if (framing == Framing::kLength) {
    std::array<char, 24> digits{};
    const auto end =
        std::to_chars(digits.data(), digits.data() + digits.size(), content_length).ptr;
    appendHeaderLine("Content-Length", std::string_view(digits.data(), end - digits.data()), out);
  } else if (framing == Framing::kChunked) {
    appendHeaderLine("Transfer-Encoding", "chunked", out);
  }
}

// The values of every `name` field of a message joined with ", ", as one field (RFC 9110 5.3):
// a Connection header may be split over several lines.
template <class Fields>
std::string joinedField(const Fields& fields, boost::beast::http::field name) {
  std::string joined;
  const auto [first, last] = fields.equal_range(name);
  for (auto field = first; field != last; ++field) {
    if (!joined.empty()) joined += ", ";
    joined += field->value();
  }
  return joined;
}

// The names of the header lines in `lines` ("Name: value\r\n" each) that are not in `lists`:
// the fields whose upstream lines give way to the gateway's.
boost::container::small_vector<std::string_view, 8> replacedFields(
    std::string_view lines, std::span<const std::string_view> lists) {
  boost::container::small_vector<std::string_view, 8> names;
  while (!lines.empty()) {
    const std::size_t end = lines.find("\r\n");
    const std::string_view line = lines.substr(0, end);
    lines = end == std::string_view::npos ? std::string_view{} : lines.substr(end + 2);
    const std::string_view name = line.substr(0, line.find(':'));
    if (std::none_of(lists.begin(), lists.end(),
                     [&](std::string_view list) { return equalsIgnoreCase(name, list); })) {
      names.push_back(name);
    }
  }
  return names;
}

// The status line in `version` ("HTTP/1.1") with the upstream's code and reason, and the
// response's end-to-end fields, but Content-Length when `drop_length` (the framing is
// re-stated) and the fields named in `replaced`.
template <class Fields>
void appendStatusAndFields(const boost::beast::http::header<false, Fields>& response,
                           std::string_view version, bool drop_length,
                           std::span<const std::string_view> replaced, std::string& out) {
  namespace bhttp = boost::beast::http;
  out += version;
  out += ' ';
  out += std::to_string(response.result_int());
  out += ' ';
  const std::string_view reason = response.reason();
  out += reason.empty() ? std::string_view(bhttp::obsolete_reason(response.result())) : reason;
  out += "\r\n";
  const std::string connection = joinedField(response, bhttp::field::connection);
  for (const auto& field : response) {
    const std::string_view name = field.name_string();
    if (isHopByHop(name, connection)) continue;
    if (drop_length && equalsIgnoreCase(name, "content-length")) continue;
    if (std::any_of(replaced.begin(), replaced.end(),
                    [&](std::string_view own) { return equalsIgnoreCase(name, own); })) {
      continue;
    }
    appendHeaderLine(name, field.value(), out);
  }
}

}  // namespace

void appendHeaderLine(std::string_view name, std::string_view value, std::string& out) {
  out += name;
  out += ": ";
  out += value;
  out += "\r\n";
}

bool isHopByHop(std::string_view name, std::string_view connection) noexcept {
  static constexpr std::array<std::string_view, 9> kHopByHop = {"connection",
                                                                "keep-alive",
                                                                "proxy-connection",
                                                                "te",
                                                                "trailer",
                                                                "transfer-encoding",
                                                                "upgrade",
                                                                "proxy-authenticate",
                                                                "proxy-authorization"};
  for (std::string_view hop : kHopByHop) {
    if (equalsIgnoreCase(name, hop)) return true;
  }
  return !connection.empty() && listContains(connection, name);
}

template <class Fields>
bool wantsWebSocket(const boost::beast::http::header<true, Fields>& request) {
  namespace bhttp = boost::beast::http;
  // Most requests have no Upgrade field: they are told apart before any value is joined.
  return request.version() >= 11 && request.method() == bhttp::verb::get &&
         request.find(bhttp::field::upgrade) != request.end() &&
         listContains(joinedField(request, bhttp::field::connection), "upgrade") &&
         listContains(joinedField(request, bhttp::field::upgrade), "websocket");
}

template <class Fields>
bool acceptsWebSocket(const boost::beast::http::header<false, Fields>& response) {
  return response.result_int() == 101 &&
         listContains(joinedField(response, boost::beast::http::field::upgrade), "websocket");
}

template <class Fields>
void appendUpstreamRequestHead(const boost::beast::http::header<true, Fields>& request,
                               std::string_view peer_ip, std::string_view default_host,
                               Framing framing, std::uint64_t content_length, bool websocket,
                               const http::HeaderList& extra, std::string& out) {
  namespace bhttp = boost::beast::http;
  out += request.method_string();
  out += ' ';
  out += request.target();
  out += " HTTP/1.1\r\n";
  if (request.find(bhttp::field::host) == request.end())
    appendHeaderLine("Host", default_host, out);
  const std::string connection = joinedField(request, bhttp::field::connection);
  std::string forwarded_for;
  std::string forwarded_proto;
  for (const auto& field : request) {
    const std::string_view name = field.name_string();
    // Host is the request's own (RFC 9112 3.2), whatever a Connection header lists: a client
    // naming it there must not make the upstream guess which site is meant.
    const bool host = field.name() == bhttp::field::host;
    if ((!host && isHopByHop(name, connection)) || equalsIgnoreCase(name, "content-length") ||
        equalsIgnoreCase(name, "expect")) {
      continue;
    }
    if (spellsAGatewayField(name)) continue;
    if (equalsIgnoreCase(name, "x-forwarded-for")) {
      forwarded_for += std::string(field.value()) + ", ";
      continue;
    }
    if (equalsIgnoreCase(name, "x-forwarded-proto")) {
      forwarded_proto += std::string(field.value()) + ", ";
      continue;
    }
    appendHeaderLine(name, field.value(), out);
  }
  forwarded_for += peer_ip;
  forwarded_proto += "http";
  appendHeaderLine("X-Forwarded-For", forwarded_for, out);
  appendHeaderLine("X-Forwarded-Proto", forwarded_proto, out);
  appendFraming(framing, content_length, out);
  if (websocket) {
    appendHeaderLine("Connection", "upgrade", out);
    appendHeaderLine("Upgrade", "websocket", out);
  }
  // The gateway's own lines, whose values may carry names from outside (a webhook's keys):
  // a control byte there must not end the line, so each becomes a space.
  for (const auto& [name, value] : extra) {
    const std::size_t start = out.size() + name.size() + 2;  // where the value goes
    appendHeaderLine(name, value, out);
    for (std::size_t i = start; i < out.size() - 2; ++i) {
      if (static_cast<unsigned char>(out[i]) < 0x20 || out[i] == 0x7F) out[i] = ' ';
    }
  }
  out += "\r\n";
}

template <class Fields>
void appendWebSocketAcceptHead(const boost::beast::http::header<false, Fields>& response,
                               std::string_view extra_lines, std::string& out,
                               std::span<const std::string_view> lists) {
  appendStatusAndFields(response, "HTTP/1.1", false, replacedFields(extra_lines, lists), out);
  appendHeaderLine("Connection", "upgrade", out);
  appendHeaderLine("Upgrade", "websocket", out);
  out += extra_lines;
  out += "\r\n";
}

template <class Fields>
bool chunkedAlone(const boost::beast::http::header<false, Fields>& response) {
  const auto [first, last] = response.equal_range(boost::beast::http::field::transfer_encoding);
  if (first == last) return true;
  return std::next(first) == last &&
         equalsIgnoreCase(policy::trimBlanks(first->value()), "chunked");
}

template <class Fields>
void appendClientResponseHead(const boost::beast::http::header<false, Fields>& response,
                              unsigned client_version, Framing framing,
                              std::optional<std::uint64_t> content_length, bool keep_alive,
                              std::string_view extra_lines, std::string& out,
                              std::span<const std::string_view> lists) {
  // A body without framing of its own (HEAD, 304) keeps the upstream's Content-Length; a 204
  // has none (RFC 9110 8.6).
  appendStatusAndFields(response, client_version == 10 ? "HTTP/1.0" : "HTTP/1.1",
                        framing != Framing::kNone || response.result_int() == 204,
                        replacedFields(extra_lines, lists), out);
  appendFraming(framing, content_length.value_or(0), out);
  if (!keep_alive) {
    appendHeaderLine("Connection", "close", out);
  } else if (client_version == 10) {
    appendHeaderLine("Connection", "keep-alive", out);
  }
  out += extra_lines;
  out += "\r\n";
}

template bool chunkedAlone(const boost::beast::http::header<false>&);
template bool chunkedAlone(const boost::beast::http::header<false, ArenaFields>&);
template bool wantsWebSocket(const boost::beast::http::header<true>&);
template bool wantsWebSocket(const boost::beast::http::header<true, ArenaFields>&);
template bool acceptsWebSocket(const boost::beast::http::header<false>&);
template bool acceptsWebSocket(const boost::beast::http::header<false, ArenaFields>&);
template void appendUpstreamRequestHead(const boost::beast::http::header<true>&, std::string_view,
                                        std::string_view, Framing, std::uint64_t, bool,
                                        const http::HeaderList&, std::string&);
template void appendUpstreamRequestHead(const boost::beast::http::header<true, ArenaFields>&,
                                        std::string_view, std::string_view, Framing, std::uint64_t,
                                        bool, const http::HeaderList&, std::string&);
template void appendWebSocketAcceptHead(const boost::beast::http::header<false>&, std::string_view,
                                        std::string&, std::span<const std::string_view>);
template void appendWebSocketAcceptHead(const boost::beast::http::header<false, ArenaFields>&,
                                        std::string_view, std::string&,
                                        std::span<const std::string_view>);
template void appendClientResponseHead(const boost::beast::http::header<false>&, unsigned, Framing,
                                       std::optional<std::uint64_t>, bool, std::string_view,
                                       std::string&, std::span<const std::string_view>);
template void appendClientResponseHead(const boost::beast::http::header<false, ArenaFields>&,
                                       unsigned, Framing, std::optional<std::uint64_t>, bool,
                                       std::string_view, std::string&,
                                       std::span<const std::string_view>);

Framing clientFraming(Framing upstream, unsigned client_version) noexcept {
  if (upstream == Framing::kChunked || upstream == Framing::kUntilClose) {
    return client_version >= 11 ? Framing::kChunked : Framing::kUntilClose;
  }
  return upstream;
}

void appendChunkHeader(std::size_t bytes, std::string& out) {
  std::array<char, 24> digits{};
  const auto end = std::to_chars(digits.data(), digits.data() + digits.size(), bytes, 16).ptr;
  out.append(digits.data(), end);
  out += "\r\n";
}

}  // namespace sluice::gateway
