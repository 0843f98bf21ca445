// Who sent a request: the client address behind a chain of trusted reverse proxies.
// DESIGN.md principle 6: forwarding headers are believed only as far as configured trusted
// proxies vouch for them, so a client can never choose its own identity (and with it its rate
// limit key) by sending X-Forwarded-For or Forwarded.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "sluice/result.h"

namespace sluice::policy {

// An IPv4 or IPv6 network, e.g. 10.0.0.0/8, 127.0.0.1/32, ::1/128, fd00::/8. A bare address
// means /32 or /128.
//
// Addresses are compared in their unmapped form: ::ffff:a.b.c.d is the IPv4 address a.b.c.d, so
// it matches IPv4 networks, as a client on a dual-stack socket must. Otherwise the families do
// not mix: IPv4 networks contain only IPv4 addresses, IPv6 networks only other IPv6 addresses
// (::/0 does not contain 192.0.2.1). A network written in mapped form, ::ffff:a.b.c.d/n with
// n >= 96, is the IPv4 network a.b.c.d/(n-96).
class Cidr {
 public:
  // Config-time. Rejects anything but `address` or `address/prefix-length` in decimal: a prefix
  // longer than the family allows, host bits set after the prefix ("10.0.0.1/8"; the error names
  // the network meant), zone ids ("fe80::1%eth0"), whitespace. The error quotes `text` and says
  // what is wrong.
  [[nodiscard]] static Result<Cidr> parse(std::string_view text);

  // Thread-safe. Ignores the zone id of an IPv6 `address`.
  [[nodiscard]] bool contains(const boost::asio::ip::address& address) const noexcept;

  // The canonical form, always with a prefix length: "10.0.0.0/8", "::1/128".
  // parse(toString()) gives back an equal Cidr.
  [[nodiscard]] std::string toString() const;

  friend bool operator==(const Cidr&, const Cidr&) = default;

 private:
  Cidr(const std::array<std::uint8_t, 16>& network, std::uint8_t prefix_bits, bool is_v4) noexcept
      : network_(network), prefix_bits_(prefix_bits), is_v4_(is_v4) {}

  std::array<std::uint8_t, 16> network_{};  // IPv4 uses the first 4 bytes; host bits are zero
  std::uint8_t prefix_bits_ = 0;
  bool is_v4_ = false;
};

// A bare IPv4 or IPv6 address, parsed without allocating (make_address(string_view) copies into
// a std::string), or nullopt. Zone ids ("fe80::1%eth0") are refused: they mean nothing beyond
// one host and would let one address be spelled many ways, i.e. be many rate limit keys.
[[nodiscard]] std::optional<boost::asio::ip::address> parseBareAddress(
    std::string_view text) noexcept;

// Decides the client address of a request from its TCP peer and its forwarding headers.
//
// The trusted proxies must maintain the header that is read: a proxy that writes only
// X-Forwarded-For must drop a client's Forwarded header, or the client's `for=` is believed.
class ClientIpResolver {
 public:
  // An empty list trusts nobody: every request resolves to its peer.
  explicit ClientIpResolver(std::vector<Cidr> trusted_proxies) noexcept
      : trusted_proxies_(std::move(trusted_proxies)) {}

  // Thread-safe, never throws. The client address for a request that arrived from `peer`:
  // - If `peer` is not a trusted proxy, the peer itself, whatever the headers say.
  // - Otherwise walk the forwarding chain from the right: the `for=` parameters of `forwarded`
  //   (RFC 7239) if any element has one, else the entries of `x_forwarded_for`. Skip entries
  //   that are trusted proxies and return the first untrusted one. If every entry is trusted,
  //   return the leftmost; with no chain at all, the peer.
  // - A malformed entry (unparsable, "unknown", an obfuscated identifier like "_hidden", empty,
  //   a Forwarded element without `for=` or with two) stops the walk: return the last trusted
  //   hop seen, i.e. the address that handed us the malformed value, never a string an attacker
  //   chose.
  // `forwarded` and `x_forwarded_for` are raw header values, several header lines joined with
  // ", "; empty if absent. Entries may carry ports ("192.0.2.43:47011", "[2001:db8::1]:4711").
  // The chain is read from the right, so what a client writes to the left of the proxies'
  // entries (unbalanced quotes included) cannot change how those entries are read.
  // Returned addresses are unmapped (::ffff:a.b.c.d comes back as a.b.c.d), so a client has one
  // identity whichever socket family it reached us on. Time is linear in the header length;
  // nothing is allocated.
  [[nodiscard]] boost::asio::ip::address resolve(const boost::asio::ip::address& peer,
                                                 std::string_view forwarded,
                                                 std::string_view x_forwarded_for) const noexcept;

  // Thread-safe. Whether `address` is one of the trusted proxies.
  [[nodiscard]] bool isTrusted(const boost::asio::ip::address& address) const noexcept;

 private:
  std::vector<Cidr> trusted_proxies_;
};

// The address as text, exactly as address::to_string() writes it ("192.0.2.1", "2001:db8::1"),
// without the C library's formatted printing for IPv4: it runs once per request.
[[nodiscard]] std::string addressText(const boost::asio::ip::address& address);

// What a per-address limit counts an address as (identity.ipv6_prefix): an IPv4 address itself
// (also when written IPv4-mapped), an IPv6 address as its /ipv6_prefix network, host bits zero.
// An IPv6 client is usually given a whole /64 (a home network, a phone's connection), so counted
// address by address it could spend a fresh limit from each of 2^64 addresses. ipv6_prefix is
// 1 to 128; 128 counts each address. Callers count a trusted proxy by its whole address (see
// countedPrefix): the hosts of a data centre share a /64, and each proxy is one.
[[nodiscard]] boost::asio::ip::address addressNetwork(const boost::asio::ip::address& address,
                                                      unsigned ipv6_prefix) noexcept;
// The prefix to count `address` by: 128 for a trusted proxy (one host of a data centre's /64,
// counted apart from its neighbours), else ipv6_prefix.
[[nodiscard]] inline unsigned countedPrefix(const ClientIpResolver& resolver,
                                            const boost::asio::ip::address& address,
                                            unsigned ipv6_prefix) noexcept {
  return resolver.isTrusted(address) ? 128 : ipv6_prefix;
}

// addressNetwork as text: "192.0.2.1", "2001:db8:1:2::/64", or at 128 the address alone.
[[nodiscard]] std::string addressNetworkText(const boost::asio::ip::address& address,
                                             unsigned ipv6_prefix);

}  // namespace sluice::policy
