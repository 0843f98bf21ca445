#include "policy/client_ip.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace sluice::policy {
namespace {

namespace ip = boost::asio::ip;

ip::address addr(const char* text) { return ip::make_address(text); }

// A network the test knows to be valid; a parse failure fails the test instead of aborting it.
Cidr cidr(std::string_view text) {
  Result<Cidr> parsed = Cidr::parse(text);
  if (!parsed.ok()) {
    ADD_FAILURE() << text << ": " << parsed.error();
    return Cidr::parse("255.255.255.255/32").value();
  }
  return std::move(parsed).value();
}

// ---------------------------------------------------------------------------------------------
// Cidr::parse

// Networks and bare addresses of both families parse and print canonically.
TEST(CidrParse, AcceptsNetworksAndBareAddresses) {
  EXPECT_EQ(cidr("10.0.0.0/8").toString(), "10.0.0.0/8");
  EXPECT_EQ(cidr("127.0.0.1/32").toString(), "127.0.0.1/32");
  EXPECT_EQ(cidr("127.0.0.1").toString(), "127.0.0.1/32");
  EXPECT_EQ(cidr("0.0.0.0/0").toString(), "0.0.0.0/0");
  EXPECT_EQ(cidr("::1/128").toString(), "::1/128");
  EXPECT_EQ(cidr("::1").toString(), "::1/128");
  EXPECT_EQ(cidr("fd00::/8").toString(), "fd00::/8");
  EXPECT_EQ(cidr("2001:DB8::/32").toString(), "2001:db8::/32");
  EXPECT_EQ(cidr("::/0").toString(), "::/0");
}

// toString() round-trips through parse().
TEST(CidrParse, ToStringRoundTrips) {
  for (const char* text : {"10.0.0.0/8", "192.168.0.0/23", "fd00::/8", "2001:db8::/33", "::/0"}) {
    EXPECT_EQ(cidr(cidr(text).toString()), cidr(text)) << text;
  }
}

// An IPv4-mapped network of /96 or longer is the IPv4 network it maps; a wider one stays IPv6.
TEST(CidrParse, MappedNetworksBecomeIpv4) {
  EXPECT_EQ(cidr("::ffff:10.0.0.0/104"), cidr("10.0.0.0/8"));
  EXPECT_EQ(cidr("::ffff:10.0.0.0/104").toString(), "10.0.0.0/8");
  EXPECT_EQ(cidr("::ffff:192.0.2.1"), cidr("192.0.2.1/32"));
  EXPECT_EQ(cidr("::ffff:0.0.0.0/96"), cidr("0.0.0.0/0"));
  EXPECT_EQ(cidr("::/80").toString(), "::/80");
}

struct BadCidr {
  const char* text;
  const char* error_mentions;
};

class CidrParseRejects : public ::testing::TestWithParam<BadCidr> {};

// Each malformed network is refused with a message that quotes it and says what is wrong.
TEST_P(CidrParseRejects, WithAMessageSayingWhy) {
  const Result<Cidr> parsed = Cidr::parse(GetParam().text);
  ASSERT_FALSE(parsed.ok()) << GetParam().text;
  EXPECT_NE(parsed.error().find("\"" + std::string(GetParam().text) + "\""), std::string::npos)
      << parsed.error();
  EXPECT_NE(parsed.error().find(GetParam().error_mentions), std::string::npos) << parsed.error();
}

INSTANTIATE_TEST_SUITE_P(Malformed, CidrParseRejects,
                         ::testing::Values(BadCidr{"10.0.0.0/33", "larger than 32"},
                                           BadCidr{"::1/129", "larger than 128"},
                                           BadCidr{"10.0.0.0/99999999999999999999",
                                                   "larger than 32"},
                                           BadCidr{"abc", "not an IPv4 or IPv6 address"},
                                           BadCidr{"", "not an IPv4 or IPv6 address"},
                                           BadCidr{"/8", "not an IPv4 or IPv6 address"},
                                           BadCidr{"1.2.3", "not an IPv4 or IPv6 address"},
                                           BadCidr{"1.2.3.4.5", "not an IPv4 or IPv6 address"},
                                           BadCidr{"256.0.0.0/8", "not an IPv4 or IPv6 address"},
                                           BadCidr{" 10.0.0.0/8", "not an IPv4 or IPv6 address"},
                                           BadCidr{"[::1]/128", "not an IPv4 or IPv6 address"},
                                           BadCidr{"1.2.3.4/", "missing prefix length"},
                                           BadCidr{"10.0.0.0/-1", "not a decimal number"},
                                           BadCidr{"10.0.0.0/+8", "not a decimal number"},
                                           BadCidr{"10.0.0.0/8 ", "not a decimal number"},
                                           BadCidr{"10.0.0.0/8/8", "not a decimal number"},
                                           BadCidr{"10.0.0.0/0x8", "not a decimal number"},
                                           BadCidr{"fe80::1%eth0/128", "zone ids"},
                                           BadCidr{"10.0.0.1/8", "the network is 10.0.0.0/8"},
                                           BadCidr{"fd00::1/8", "the network is fd00::/8"}));

// ---------------------------------------------------------------------------------------------
// Cidr::contains

// IPv4 containment is exact at both ends of the range, on and off byte boundaries.
TEST(CidrContains, Ipv4Edges) {
  const Cidr ten = cidr("10.0.0.0/8");
  EXPECT_TRUE(ten.contains(addr("10.0.0.0")));
  EXPECT_TRUE(ten.contains(addr("10.255.255.255")));
  EXPECT_FALSE(ten.contains(addr("9.255.255.255")));
  EXPECT_FALSE(ten.contains(addr("11.0.0.0")));

  const Cidr slash23 = cidr("192.168.0.0/23");
  EXPECT_TRUE(slash23.contains(addr("192.168.1.255")));
  EXPECT_FALSE(slash23.contains(addr("192.168.2.0")));

  EXPECT_TRUE(cidr("127.0.0.1").contains(addr("127.0.0.1")));
  EXPECT_FALSE(cidr("127.0.0.1").contains(addr("127.0.0.2")));
  EXPECT_TRUE(cidr("0.0.0.0/0").contains(addr("255.255.255.255")));
}

// IPv6 containment is exact at both ends of the range; zone ids are ignored.
TEST(CidrContains, Ipv6Edges) {
  const Cidr ula = cidr("fd00::/8");
  EXPECT_TRUE(ula.contains(addr("fd00::")));
  EXPECT_TRUE(ula.contains(addr("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));
  EXPECT_FALSE(ula.contains(addr("fcff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")));
  EXPECT_FALSE(ula.contains(addr("fe00::")));

  const Cidr slash33 = cidr("2001:db8::/33");
  EXPECT_TRUE(slash33.contains(addr("2001:db8:7fff:ffff::1")));
  EXPECT_FALSE(slash33.contains(addr("2001:db8:8000::")));

  EXPECT_TRUE(cidr("::1").contains(addr("::1")));
  EXPECT_FALSE(cidr("::1").contains(addr("::2")));
  EXPECT_TRUE(cidr("fe80::/10").contains(addr("fe80::1%1")));
}

// A client on a dual-stack socket (::ffff:a.b.c.d) matches IPv4 networks.
TEST(CidrContains, MappedAddressesMatchIpv4Networks) {
  const Cidr ten = cidr("10.0.0.0/8");
  EXPECT_TRUE(ten.contains(addr("::ffff:10.1.2.3")));
  EXPECT_FALSE(ten.contains(addr("::ffff:11.1.2.3")));
  EXPECT_TRUE(cidr("::ffff:10.0.0.0/104").contains(addr("10.9.9.9")));
}

// Otherwise families do not mix: ::/0 is not "everything" and 0.0.0.0/0 holds no IPv6 address.
TEST(CidrContains, FamiliesDoNotMix) {
  EXPECT_FALSE(cidr("::/0").contains(addr("192.0.2.1")));
  EXPECT_FALSE(cidr("::/0").contains(addr("::ffff:192.0.2.1")));
  EXPECT_TRUE(cidr("::/0").contains(addr("2001:db8::1")));
  EXPECT_FALSE(cidr("0.0.0.0/0").contains(addr("::1")));
  EXPECT_FALSE(cidr("10.0.0.0/8").contains(addr("::a00:1")));  // IPv4-compatible is not mapped
}

// ---------------------------------------------------------------------------------------------
// ClientIpResolver

class ClientIpResolverTest : public ::testing::Test {
 protected:
  ip::address resolve(const char* peer, std::string_view forwarded,
                      std::string_view x_forwarded_for = "") const {
    return resolver_.resolve(addr(peer), forwarded, x_forwarded_for);
  }
  ip::address resolveXff(const char* peer, std::string_view x_forwarded_for) const {
    return resolve(peer, "", x_forwarded_for);
  }

  // Proxies: 10.0.0.0/8, loopback and fd00::/8. Clients: 203.0.113.7, 198.51.100.9, 2001:db8::1.
  const ClientIpResolver resolver_{{cidr("10.0.0.0/8"), cidr("127.0.0.1"), cidr("fd00::/8")}};
  const ip::address client_ = addr("203.0.113.7");
};

// A peer that is not a trusted proxy is the client, whatever it claims in either header.
TEST_F(ClientIpResolverTest, UntrustedPeerCannotSpoofItsAddress) {
  EXPECT_EQ(resolve("203.0.113.7", "for=198.51.100.9", "198.51.100.9"), client_);
  EXPECT_EQ(resolveXff("203.0.113.7", "10.0.0.5"), client_);
}

// A trusted proxy with no forwarding headers is itself the client.
TEST_F(ClientIpResolverTest, TrustedPeerWithoutHeadersIsTheClient) {
  EXPECT_EQ(resolve("10.0.0.1", "", ""), addr("10.0.0.1"));
  EXPECT_EQ(resolve("10.0.0.1", "  ", " \t"), addr("10.0.0.1"));
}

// Nobody is trusted by an empty list.
TEST_F(ClientIpResolverTest, EmptyTrustListAlwaysGivesThePeer) {
  const ClientIpResolver nobody({});
  EXPECT_EQ(nobody.resolve(addr("127.0.0.1"), "for=192.0.2.43", "198.51.100.9"), addr("127.0.0.1"));
}

// "client, proxy2" from a trusted proxy: proxy2 is trusted, so the client is next.
TEST_F(ClientIpResolverTest, SkipsOneTrustedHop) {
  EXPECT_EQ(resolveXff("10.0.0.1", "203.0.113.7, 10.0.0.2"), client_);
  EXPECT_EQ(resolveXff("10.0.0.1", "203.0.113.7"), client_);
}

// Several trusted hops are skipped; what the client wrote left of its own address is ignored.
TEST_F(ClientIpResolverTest, SkipsSeveralTrustedHopsAndStopsAtTheFirstUntrusted) {
  EXPECT_EQ(resolveXff("10.0.0.1", "198.51.100.9, 203.0.113.7, 10.1.1.1, 127.0.0.1, fd00::9"),
            client_);
}

// When every hop is trusted, the leftmost is the client.
TEST_F(ClientIpResolverTest, AllTrustedChainGivesTheLeftmost) {
  EXPECT_EQ(resolveXff("10.0.0.1", "10.0.0.3, 10.0.0.2"), addr("10.0.0.3"));
  EXPECT_EQ(resolve("10.0.0.1", "for=127.0.0.1, for=10.0.0.2"), addr("127.0.0.1"));
}

// X-Forwarded-For entries may carry spaces, IPv4 ports, bracketed IPv6 with or without a port.
TEST_F(ClientIpResolverTest, XffEntryForms) {
  EXPECT_EQ(resolveXff("10.0.0.1", "203.0.113.7:5678"), client_);
  EXPECT_EQ(resolveXff("10.0.0.1", "  203.0.113.7  ,10.0.0.2\t"), client_);
  EXPECT_EQ(resolveXff("10.0.0.1", "2001:db8::1, 10.0.0.2"), addr("2001:db8::1"));
  EXPECT_EQ(resolveXff("10.0.0.1", "[2001:db8::1]"), addr("2001:db8::1"));
  EXPECT_EQ(resolveXff("10.0.0.1", "[2001:db8::1]:443, [fd00::2]:80"), addr("2001:db8::1"));
}

// Forwarded: quoted IPv6 with a port, quoted IPv4 with a port, other parameters around `for`.
TEST_F(ClientIpResolverTest, ForwardedQuotedAddressesAndPorts) {
  EXPECT_EQ(resolve("10.0.0.1", R"(for="[2001:db8::1]:4711")"), addr("2001:db8::1"));
  EXPECT_EQ(resolve("10.0.0.1", R"(for="[2001:db8::1]")"), addr("2001:db8::1"));
  EXPECT_EQ(resolve("10.0.0.1", R"(for="192.0.2.43:47011";proto=https, for=10.0.0.2)"),
            addr("192.0.2.43"));
  EXPECT_EQ(resolve("10.0.0.1", R"(proto=http;for=192.0.2.43;by=203.0.113.60)"),
            addr("192.0.2.43"));
  EXPECT_EQ(resolve("10.0.0.1", R"(for="192.0.2.43:_port1")"), addr("192.0.2.43"));
  EXPECT_EQ(resolve("10.0.0.1", R"(for=192.0.2.43 ; proto=https , for="[fd00::1]")"),
            addr("192.0.2.43"));
}

// Parameter names are case-insensitive.
TEST_F(ClientIpResolverTest, ForwardedParameterNamesIgnoreCase) {
  EXPECT_EQ(resolve("10.0.0.1", "For=192.0.2.43"), addr("192.0.2.43"));
  EXPECT_EQ(resolve("10.0.0.1", "FOR=192.0.2.43;Proto=https"), addr("192.0.2.43"));
}

// Forwarded, when it has a `for`, wins over X-Forwarded-For; without one, XFF is read.
TEST_F(ClientIpResolverTest, ForwardedIsPreferredOverXff) {
  EXPECT_EQ(resolve("10.0.0.1", "for=192.0.2.43", "198.51.100.9"), addr("192.0.2.43"));
  EXPECT_EQ(resolve("10.0.0.1", "proto=https;host=example.com", "198.51.100.9"),
            addr("198.51.100.9"));
}

// A comma inside a quoted value does not split a Forwarded element.
TEST_F(ClientIpResolverTest, ForwardedQuotedCommaDoesNotSplit) {
  EXPECT_EQ(resolve("10.0.0.1", R"(for=198.51.100.9, for=192.0.2.43;ext="a, for=10.0.0.9")"),
            addr("192.0.2.43"));
  EXPECT_EQ(resolve("10.0.0.1", R"(for=192.0.2.43;ext="a\", for=10.0.0.9")"), addr("192.0.2.43"));
}

// A client's unbalanced quote cannot swallow the elements proxies appended to its right.
TEST_F(ClientIpResolverTest, ClientQuotesCannotHideProxyElements) {
  EXPECT_EQ(resolve("10.0.0.1", R"(for="198.51.100.9, for=192.0.2.43)"), addr("192.0.2.43"));
  EXPECT_EQ(resolve("10.0.0.1", R"(for=198.51.100.9", for=192.0.2.43)"), addr("192.0.2.43"));
}

// Mapped addresses are trusted as IPv4 and returned unmapped.
TEST_F(ClientIpResolverTest, MappedAddressesAreUnmapped) {
  EXPECT_EQ(resolveXff("::ffff:10.0.0.1", "::ffff:203.0.113.7"), client_);
  EXPECT_EQ(resolveXff("::ffff:203.0.113.7", "198.51.100.9"), client_);
  EXPECT_EQ(resolveXff("10.0.0.1", "203.0.113.7, [::ffff:10.0.0.2]"), client_);
}

class MalformedHop : public ::testing::TestWithParam<const char*> {
 protected:
  const ClientIpResolver resolver_{{cidr("10.0.0.0/8")}};
};

// In X-Forwarded-For, a malformed entry stops the walk at the trusted hop that handed it over.
TEST_P(MalformedHop, XffStopsAtTheLastTrustedHop) {
  const std::string bad = GetParam();
  EXPECT_EQ(resolver_.resolve(addr("10.0.0.1"), "", "203.0.113.7, " + bad + ", 10.0.0.2"),
            addr("10.0.0.2"));
  EXPECT_EQ(resolver_.resolve(addr("10.0.0.1"), "", "203.0.113.7, " + bad), addr("10.0.0.1"));
}

// In Forwarded, a malformed `for` value stops the walk the same way.
TEST_P(MalformedHop, ForwardedStopsAtTheLastTrustedHop) {
  const std::string bad = GetParam();
  for (const std::string& value : {bad, "\"" + bad + "\""}) {
    if (value.find(',') != std::string::npos) continue;  // a token cannot hold a comma
    EXPECT_EQ(
        resolver_.resolve(addr("10.0.0.1"), "for=203.0.113.7, for=" + value + ", for=10.0.0.2", ""),
        addr("10.0.0.2"))
        << value;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Entries, MalformedHop,
    ::testing::Values("unknown", "_hidden", "not-an-ip", "", "1.2.3", "1.2.3.4.5", "256.1.1.1",
                      "1.2.3.4:", "1.2.3.4:99999", "1.2.3.4:port", "1.2.3.4:_", "[1.2.3.4]",
                      "[2001:db8::1", "[2001:db8::1]:", "[2001:db8::1]x", "fe80::1%eth0",
                      "[fe80::1%1]:80", "203.0.113.7 198.51.100.9",
                      "0000000000000000000000000000000000000000000000000000000000001.2.3.4"));

// Forwarded elements that are malformed as a whole stop the walk too.
TEST_F(ClientIpResolverTest, MalformedForwardedElementsStopTheWalk) {
  const ip::address proxy = addr("10.0.0.2");
  for (const char* element : {
           "proto=https",                      // no `for`
           "for=192.0.2.43;for=198.51.100.9",  // two
           "for=192.0.2.43;FOR=198.51.100.9",  // two, differently cased
           "for",                              // no '='
           "=192.0.2.43",                      // no name
           "for =192.0.2.43",                  // whitespace before '='
           R"(for="192.0.2.43)",               // unterminated quote
           R"(for="192.0.2.43"x)",             // junk after the quoted value
           R"(for="\192.0.2.43")",             // escapes are refused
           "for=192.0.2.43 proto=https",       // missing ';'
       }) {
    EXPECT_EQ(resolve("10.0.0.1", "for=203.0.113.7, " + std::string(element) + ", for=10.0.0.2"),
              proxy)
        << element;
  }
}

// An empty entry, also a trailing comma, is malformed.
TEST_F(ClientIpResolverTest, EmptyEntriesAreMalformed) {
  EXPECT_EQ(resolveXff("10.0.0.1", "203.0.113.7,"), addr("10.0.0.1"));
  EXPECT_EQ(resolveXff("10.0.0.1", "203.0.113.7, , 10.0.0.2"), addr("10.0.0.2"));
  EXPECT_EQ(resolve("10.0.0.1", "for=203.0.113.7, , for=10.0.0.2"), addr("10.0.0.2"));
}

// An embedded NUL does not cut an entry short ("203.0.113.7\0junk" is not 203.0.113.7).
TEST_F(ClientIpResolverTest, EmbeddedNulIsMalformed) {
  using std::string_literals::operator""s;
  EXPECT_EQ(resolveXff("10.0.0.1", "203.0.113.7\0junk"s), addr("10.0.0.1"));
}

std::string repeated(const std::string& entry, int times) {
  std::string list;
  for (int i = 0; i < times; ++i) list += (i == 0 ? "" : ", ") + entry;
  return list;
}

// Headers with 10,000 entries are walked to the right answer without trouble.
TEST_F(ClientIpResolverTest, VeryLongHeaders) {
  constexpr int kEntries = 10'000;
  EXPECT_EQ(resolveXff("10.0.0.1", "203.0.113.7, " + repeated("10.0.0.2", kEntries)), client_);
  EXPECT_EQ(resolveXff("10.0.0.1", repeated("198.51.100.9", kEntries) + ", 203.0.113.7, 10.0.0.2"),
            client_);
  EXPECT_EQ(resolveXff("10.0.0.1", repeated("10.0.0.3", kEntries)), addr("10.0.0.3"));
  EXPECT_EQ(resolveXff("10.0.0.1", repeated("unknown", kEntries)), addr("10.0.0.1"));
  EXPECT_EQ(resolve("10.0.0.1", "for=203.0.113.7, " + repeated(R"(for="[fd00::2]:80")", kEntries)),
            client_);
  EXPECT_EQ(resolve("10.0.0.1", repeated("proto=https", kEntries), "203.0.113.7"), client_);
}

// Long runs of quotes, backslashes and separators are survived and end in a safe answer.
TEST_F(ClientIpResolverTest, HostileHeadersDoNotCrash) {
  const std::string quotes(100'000, '"');
  const std::string backslashes = repeated(R"("\\\\\\\\\")", 10'000);
  const std::string separators(100'000, ';');
  for (const std::string& junk : {quotes, backslashes, separators, std::string(100'000, ',')}) {
    const ip::address forwarded = resolve("10.0.0.1", junk, "");
    const ip::address xff = resolveXff("10.0.0.1", junk);
    EXPECT_EQ(forwarded, addr("10.0.0.1"));
    EXPECT_EQ(xff, addr("10.0.0.1"));
  }
}

// addressText writes what to_string() writes: every octet value in every position, and IPv6
// (which it leaves to to_string()).
TEST(AddressText, MatchesToString) {
  for (unsigned value = 0; value < 256; ++value) {
    const ip::address_v4 spread(ip::address_v4::bytes_type{
        static_cast<unsigned char>(value), static_cast<unsigned char>(255 - value),
        static_cast<unsigned char>(value / 3), static_cast<unsigned char>(value * 7 % 256)});
    EXPECT_EQ(addressText(ip::address(spread)), spread.to_string());
  }
  for (const char* text : {"0.0.0.0", "255.255.255.255", "10.0.0.1", "::1", "2001:db8::1",
                           "::ffff:192.0.2.1", "fe80::1:2:3:4"}) {
    const ip::address address = ip::make_address(text);
    EXPECT_EQ(addressText(address), address.to_string()) << text;
  }
}

// Per-address limits count an IPv6 address as its network: the host bits are zero, whatever
// the prefix's alignment; IPv4 (mapped or not) is the address itself.
TEST(AddressNetwork, IPv6CountsByItsNetwork) {
  const auto network = [](const char* text, unsigned prefix) {
    return addressNetworkText(ip::make_address(text), prefix);
  };
  EXPECT_EQ(network("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 64), "2001:db8:1:2::/64");
  EXPECT_EQ(network("2001:db8:1:2::1", 64), network("2001:db8:1:2:ffff::9", 64));
  EXPECT_NE(network("2001:db8:1:2::1", 64), network("2001:db8:1:3::1", 64));
  EXPECT_EQ(network("2001:db8:1:2ff::1", 56), "2001:db8:1:200::/56");
  EXPECT_EQ(network("2001:db8:1:ff::1", 60), "2001:db8:1:f0::/60");  // not on a byte boundary
  EXPECT_EQ(network("2001:db8::7", 128), "2001:db8::7");
  EXPECT_EQ(network("ffff::1", 1), "8000::/1");
  EXPECT_EQ(network("192.0.2.1", 64), "192.0.2.1");
  EXPECT_EQ(network("::ffff:192.0.2.1", 64), "192.0.2.1");
  EXPECT_EQ(addressNetwork(ip::make_address("::ffff:192.0.2.1"), 64),
            ip::make_address("192.0.2.1"));
}

}  // namespace
}  // namespace sluice::policy
