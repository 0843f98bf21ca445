#include "policy/client_ip.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include "policy/request_view.h"

namespace sluice::policy {
namespace {

namespace ip = boost::asio::ip;

bool isDigit(char c) noexcept { return c >= '0' && c <= '9'; }
bool isAlnum(char c) noexcept {
  return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// RFC 9110 tchar: what a parameter name may be made of.
bool isTokenChar(char c) noexcept {
  return isAlnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) noexcept {
  const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [&](char x, char y) { return lower(x) == lower(y); });
}

ip::address unmapped(const ip::address& address) noexcept {
  if (!address.is_v6() || !address.to_v6().is_v4_mapped()) return address;
  const ip::address_v6::bytes_type bytes = address.to_v6().to_bytes();
  return ip::address_v4(ip::address_v4::bytes_type{bytes[12], bytes[13], bytes[14], bytes[15]});
}

// RFC 7239 node-port: a decimal port, or an obfuscated one like "_abc".
bool isPort(std::string_view text) noexcept {
  if (text.empty()) return false;
  if (text.front() == '_') {
    return text.size() > 1 && std::all_of(text.begin() + 1, text.end(), [](char c) {
             return isAlnum(c) || c == '.' || c == '_' || c == '-';
           });
  }
  if (text.size() > 5 || !std::all_of(text.begin(), text.end(), isDigit)) return false;
  unsigned port = 0;
  std::from_chars(text.data(), text.data() + text.size(), port);
  return port <= 65535;
}

// One hop of a forwarding chain: "192.0.2.43", "192.0.2.43:47011", "[2001:db8::1]",
// "[2001:db8::1]:4711", or a bare IPv6 address (not RFC 7239, but what X-Forwarded-For carries).
// nullopt for anything else, "unknown" and "_hidden" included.
std::optional<ip::address> parseNode(std::string_view text) noexcept {
  text = trimBlanks(text);
  if (text.empty()) return std::nullopt;
  if (text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view after = text.substr(close + 1);
    if (!after.empty() && (after.front() != ':' || !isPort(after.substr(1)))) return std::nullopt;
    std::optional<ip::address> address = parseBareAddress(text.substr(1, close - 1));
    if (!address || !address->is_v6()) return std::nullopt;
    return address;
  }
  if (std::optional<ip::address> address = parseBareAddress(text)) return address;
  // Only IPv4 carries an unbracketed port: one colon.
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  if (!isPort(text.substr(colon + 1))) return std::nullopt;
  std::optional<ip::address> address = parseBareAddress(text.substr(0, colon));
  if (!address || !address->is_v4()) return std::nullopt;
  return address;
}

// The elements of a comma-separated header, last first. Reading from the right means the
// elements proxies appended are split correctly whatever a client put before them.
class ElementsFromRight {
 public:
  // With `honor_quotes`, commas inside quoted-strings (RFC 9110 5.6.4) do not split; an
  // unterminated quote makes everything to its left part of the same element.
  ElementsFromRight(std::string_view list, bool honor_quotes) noexcept
      : rest_(list), done_(list.empty()), honor_quotes_(honor_quotes) {}

  // False when no element is left. Elements are untrimmed and may be empty.
  bool next(std::string_view& element) noexcept {
    if (done_) return false;
    bool in_quotes = false;
    for (std::size_t i = rest_.size(); i-- > 0;) {
      const char c = rest_[i];
      if (honor_quotes_ && c == '"') {
        if (!in_quotes) {
          in_quotes = true;
          continue;
        }
        // Inside a quoted-string every backslash starts a pair, so a quote after an odd run of
        // backslashes is escaped. Each run is counted once: the scan stays linear.
        std::size_t backslashes = 0;
        while (backslashes < i && rest_[i - 1 - backslashes] == '\\') ++backslashes;
        if (backslashes % 2 == 0) in_quotes = false;
      } else if (c == ',' && !in_quotes) {
        element = rest_.substr(i + 1);
        rest_ = rest_.substr(0, i);
        return true;
      }
    }
    element = rest_;
    done_ = true;
    return true;
  }

 private:
  std::string_view rest_;
  bool done_;
  bool honor_quotes_;
};

struct ForParameter {
  enum class Kind { kAbsent, kPresent, kMalformed };
  Kind kind = Kind::kAbsent;
  std::string_view value;  // quotes removed; set when kPresent
};

// The `for` parameter of one Forwarded element: pairs `name=value` separated by ';', the name
// case-insensitive, the value a token or a quoted-string. Malformed if the element does not
// parse or names `for` twice. A quoted value with escapes is malformed too: no address needs
// one, and refusing them avoids an unescaping buffer.
ForParameter findForParameter(std::string_view element) noexcept {
  constexpr ForParameter kMalformed{ForParameter::Kind::kMalformed, {}};
  ForParameter result;
  const std::size_t size = element.size();
  std::size_t pos = 0;
  const auto skipWhitespace = [&] {
    while (pos < size && (element[pos] == ' ' || element[pos] == '\t')) ++pos;
  };
  while (true) {
    skipWhitespace();
    if (pos == size) return result;
    if (element[pos] == ';') {  // an empty pair
      ++pos;
      continue;
    }
    const std::size_t name_start = pos;
    while (pos < size && isTokenChar(element[pos])) ++pos;
    const std::string_view name = element.substr(name_start, pos - name_start);
    if (name.empty() || pos == size || element[pos] != '=') return kMalformed;
    ++pos;
    std::string_view value;
    bool escaped = false;
    if (pos < size && element[pos] == '"') {
      const std::size_t value_start = ++pos;
      while (pos < size && element[pos] != '"') {
        if (element[pos] == '\\') {
          escaped = true;
          ++pos;
        }
        ++pos;
      }
      if (pos >= size) return kMalformed;  // unterminated
      value = element.substr(value_start, pos - value_start);
      ++pos;
    } else {
      // RFC 7239 wants ':' and '[' quoted; proxies that skip the quotes are still understood.
      const std::size_t value_start = pos;
      while (pos < size && element[pos] != ';' && element[pos] != '"' && element[pos] != ' ' &&
             element[pos] != '\t') {
        ++pos;
      }
      value = element.substr(value_start, pos - value_start);
    }
    skipWhitespace();
    if (pos < size && element[pos] != ';') return kMalformed;
    if (equalsIgnoringCase(name, "for")) {
      if (result.kind != ForParameter::Kind::kAbsent || escaped) return kMalformed;
      result = {ForParameter::Kind::kPresent, value};
    }
  }
}

bool hasForParameter(std::string_view forwarded) noexcept {
  ElementsFromRight elements(forwarded, /*honor_quotes=*/true);
  std::string_view element;
  while (elements.next(element)) {
    if (findForParameter(element).kind == ForParameter::Kind::kPresent) return true;
  }
  return false;
}

// Bytes of an address in the family it is compared in (see Cidr), IPv4 in the first 4.
struct ComparableBytes {
  std::array<std::uint8_t, 16> bytes{};
  bool is_v4 = false;
};

ComparableBytes comparableBytes(const ip::address& address) noexcept {
  ComparableBytes result;
  const ip::address plain = unmapped(address);
  result.is_v4 = plain.is_v4();
  if (result.is_v4) {
    const ip::address_v4::bytes_type bytes = plain.to_v4().to_bytes();
    std::copy(bytes.begin(), bytes.end(), result.bytes.begin());
  } else {
    const ip::address_v6::bytes_type bytes = plain.to_v6().to_bytes();
    std::copy(bytes.begin(), bytes.end(), result.bytes.begin());
  }
  return result;
}

// `bytes` with every bit after the first `prefix_bits` cleared.
std::array<std::uint8_t, 16> masked(std::array<std::uint8_t, 16> bytes,
                                    unsigned prefix_bits) noexcept {
  for (unsigned byte = 0; byte < bytes.size(); ++byte) {
    const unsigned bits_before = byte * 8;
    if (prefix_bits >= bits_before + 8) continue;
    const unsigned kept_bits = prefix_bits > bits_before ? prefix_bits - bits_before : 0;
    bytes[byte] &= static_cast<std::uint8_t>(0xFF00u >> kept_bits);
  }
  return bytes;
}

}  // namespace

std::optional<ip::address> parseBareAddress(std::string_view text) noexcept {
  // The longest IPv6 text form, "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", has 45 chars.
  constexpr std::size_t kMaxAddressChars = 45;
  if (text.empty() || text.size() > kMaxAddressChars) return std::nullopt;
  // An embedded NUL would end the C string early and let "1.2.3.4\0junk" pass.
  if (text.find_first_of(std::string_view("%\0", 2)) != std::string_view::npos) {
    return std::nullopt;
  }
  std::array<char, kMaxAddressChars + 1> buffer{};
  std::memcpy(buffer.data(), text.data(), text.size());
  boost::system::error_code error;
  ip::address address = ip::make_address(buffer.data(), error);
  if (error) return std::nullopt;
  return address;
}

Result<Cidr> Cidr::parse(std::string_view text) {
  const auto fail = [text](const std::string& what) {
    return Error{"invalid CIDR \"" + std::string(text) + "\": " + what};
  };
  const std::size_t slash = text.find('/');
  const std::string_view address_text = text.substr(0, slash);
  const std::optional<ip::address> address = parseBareAddress(address_text);
  if (!address) {
    if (address_text.find('%') != std::string_view::npos) {
      return fail("zone ids (\"%...\") are not allowed");
    }
    return fail("\"" + std::string(address_text) + "\" is not an IPv4 or IPv6 address");
  }

  ComparableBytes network = comparableBytes(*address);
  const bool written_mapped = address->is_v6() && network.is_v4;
  const unsigned written_max_bits = address->is_v4() ? 32 : 128;
  unsigned written_bits = written_max_bits;
  if (slash != std::string_view::npos) {
    const std::string_view bits_text = text.substr(slash + 1);
    if (bits_text.empty()) return fail("missing prefix length after '/'");
    if (!std::all_of(bits_text.begin(), bits_text.end(), isDigit)) {
      return fail("prefix length \"" + std::string(bits_text) + "\" is not a decimal number");
    }
    const auto [end, error] =
        std::from_chars(bits_text.data(), bits_text.data() + bits_text.size(), written_bits);
    if (error != std::errc() || written_bits > written_max_bits) {
      return fail("prefix length " + std::string(bits_text) + " is larger than " +
                  std::to_string(written_max_bits) + ", the maximum for " +
                  (address->is_v4() ? "IPv4" : "IPv6"));
    }
  }

  unsigned prefix_bits = written_bits;
  if (written_mapped) {
    if (written_bits >= 96) {
      prefix_bits = written_bits - 96;  // ::ffff:a.b.c.d/n is the IPv4 network a.b.c.d/(n-96)
    } else {
      // Wider than the mapped range, so not an IPv4 network.
      network.bytes = address->to_v6().to_bytes();
      network.is_v4 = false;
    }
  }

  const Cidr cidr(masked(network.bytes, prefix_bits), static_cast<std::uint8_t>(prefix_bits),
                  network.is_v4);
  if (cidr.network_ != network.bytes) {
    return fail("host bits are set after the prefix; the network is " + cidr.toString());
  }
  return cidr;
}

bool Cidr::contains(const ip::address& address) const noexcept {
  const ComparableBytes candidate = comparableBytes(address);
  return candidate.is_v4 == is_v4_ && masked(candidate.bytes, prefix_bits_) == network_;
}

std::string Cidr::toString() const {
  std::string text;
  if (is_v4_) {
    text = ip::address_v4(
               ip::address_v4::bytes_type{network_[0], network_[1], network_[2], network_[3]})
               .to_string();
  } else {
    text = ip::address_v6(network_).to_string();
  }
  return text + "/" + std::to_string(prefix_bits_);
}

bool ClientIpResolver::isTrusted(const ip::address& address) const noexcept {
  return std::any_of(trusted_proxies_.begin(), trusted_proxies_.end(),
                     [&](const Cidr& proxy) { return proxy.contains(address); });
}

ip::address ClientIpResolver::resolve(const ip::address& peer, std::string_view forwarded,
                                      std::string_view x_forwarded_for) const noexcept {
  ip::address last_trusted = unmapped(peer);
  if (!isTrusted(last_trusted)) return last_trusted;

  forwarded = trimBlanks(forwarded);
  const bool use_forwarded = hasForParameter(forwarded);
  ElementsFromRight elements(use_forwarded ? forwarded : trimBlanks(x_forwarded_for),
                             /*honor_quotes=*/use_forwarded);
  std::string_view element;
  while (elements.next(element)) {
    std::optional<ip::address> hop;
    if (!use_forwarded) {
      hop = parseNode(element);
    } else if (const ForParameter parameter = findForParameter(element);
               parameter.kind == ForParameter::Kind::kPresent) {
      hop = parseNode(parameter.value);
    }
    if (!hop) return last_trusted;
    const ip::address address = unmapped(*hop);
    if (!isTrusted(address)) return address;
    last_trusted = address;
  }
  return last_trusted;
}

std::string addressText(const ip::address& address) {
  if (!address.is_v4()) return address.to_string();
  std::string text;
  text.reserve(15);  // "255.255.255.255"
  for (const unsigned char octet : address.to_v4().to_bytes()) {
    if (!text.empty()) text += '.';
    if (octet >= 100) text += static_cast<char>('0' + octet / 100);
    if (octet >= 10) text += static_cast<char>('0' + octet / 10 % 10);
    text += static_cast<char>('0' + octet % 10);
  }
  return text;
}

ip::address addressNetwork(const ip::address& address, unsigned ipv6_prefix) noexcept {
  if (address.is_v4()) return address;
  const ip::address_v6 v6 = address.to_v6();
  if (v6.is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, v6);
  if (ipv6_prefix >= 128) return ip::address_v6(v6.to_bytes());  // the zone id dropped
  ip::address_v6::bytes_type bytes = v6.to_bytes();
  for (unsigned bit = ipv6_prefix; bit < 128; ++bit) {
    bytes[bit / 8] = static_cast<unsigned char>(bytes[bit / 8] & ~(0x80u >> (bit % 8)));
  }
  return ip::address_v6(bytes);
}

std::string addressNetworkText(const ip::address& address, unsigned ipv6_prefix) {
  const ip::address network = addressNetwork(address, ipv6_prefix);
  if (network.is_v4() || ipv6_prefix >= 128) return addressText(network);
  return addressText(network) + '/' + std::to_string(ipv6_prefix);
}

}  // namespace sluice::policy
