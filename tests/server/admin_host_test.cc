// The admin listener's Host check against DNS rebinding: which names need no DNS to reach this
// machine, and which peers are this machine's loopback.
#include "server/admin_host.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sluice::server {
namespace {

namespace ip = boost::asio::ip;

TEST(AdminHostTest, AddressesAndLocalhostNamesNeedNoDns) {
  for (const char* host : {"", "127.0.0.1", "127.0.0.1:9090", "10.1.2.3:80", "[::1]", "[::1]:9090",
                           "[fe80::1]:1", "localhost", "localhost:9090", "LocalHost.:9090",
                           "admin.localhost:9090", "myhost:9090", "MYHOST"}) {
    EXPECT_TRUE(hostNamesThisMachine(host, "myhost")) << host;
  }
}

// A name its owner's DNS answers for, however it is spelled to look local.
TEST(AdminHostTest, OtherNamesAreRefused) {
  for (const char* host :
       {"attacker.example", "attacker.example:9090", "localhost.attacker.example",
        "127.0.0.1.nip.io:9090", "xlocalhost", ".localhost", "[::1", "[::1]x", "[not-v6]:1",
        "myhost.attacker.example", "localhost..", "otherhost"}) {
    EXPECT_FALSE(hostNamesThisMachine(host, "myhost")) << host;
  }
  // An unknown machine name accepts no name.
  EXPECT_FALSE(hostNamesThisMachine("anything", ""));
}

// Names server.admin_hosts lists (a local reverse proxy passing its clients' Host on) count too,
// in any case and with any port; only those.
TEST(AdminHostTest, ListedNamesCount) {
  const std::vector<std::string> listed = {"metrics.internal", "sluice-admin"};
  EXPECT_TRUE(hostNamesThisMachine("metrics.internal", "myhost", listed));
  EXPECT_TRUE(hostNamesThisMachine("Sluice-Admin:443", "myhost", listed));
  EXPECT_FALSE(hostNamesThisMachine("attacker.example", "myhost", listed));
  EXPECT_FALSE(hostNamesThisMachine("metrics.internal.attacker.example", "myhost", listed));
}

TEST(AdminHostTest, LoopbackPeersIncludeMappedOnes) {
  EXPECT_TRUE(isLoopbackPeer(ip::make_address("127.0.0.1")));
  EXPECT_TRUE(isLoopbackPeer(ip::make_address("127.0.1.1")));
  EXPECT_TRUE(isLoopbackPeer(ip::make_address("::1")));
  EXPECT_TRUE(isLoopbackPeer(ip::make_address("::ffff:127.0.0.1")));
  EXPECT_FALSE(isLoopbackPeer(ip::make_address("10.0.0.1")));
  EXPECT_FALSE(isLoopbackPeer(ip::make_address("::ffff:10.0.0.1")));
  EXPECT_FALSE(isLoopbackPeer(ip::make_address("2001:db8::1")));
}

}  // namespace
}  // namespace sluice::server
