// Requests a throttle holds on one key wait in line: each decides again about once when its
// turn comes, instead of all of them at every freed unit.
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "gateway/gateway_fixture.h"
#include "support/http_client.h"

namespace sluice::gateway {
namespace {

constexpr const char* kThrottleConfig = R"(
limits:
  - name: paced
    match: { path_prefix: /paced }
    key: global
    algorithm: gcra
    rate: 100/s
    burst: 1
    action: throttle
    max_delay: 10s
gateway:
  listen: 127.0.0.1:0
  upstreams: { app: UPSTREAM }
  routes: [ { path_prefix: /, upstream: app } ]
  guard: { max_connections_per_ip: 1000 }
)";

class ThrottleLineTest : public sluice::testing::GatewayFixture {
 protected:
  void SetUp() override { start(kThrottleConfig); }
};

// 40 requests at once on a limit of 100/s with a burst of 1: all go through, paced, and the
// store is asked about three times per request (the first try, its turn, the unit it waited
// for). Deciding all held requests again at every freed unit asked it about 40 * 41 / 2 times.
TEST_F(ThrottleLineTest, HeldRequestsDecideAgainInTurn) {
  constexpr int kRequests = 40;
  std::vector<int> statuses(kRequests, 0);
  std::vector<std::thread> clients;
  for (int i = 0; i < kRequests; ++i) {
    clients.emplace_back([&, i] {
      statuses[i] =
          sluice::testing::httpCall(endpoint_, boost::beast::http::verb::get, "/paced").status;
    });
  }
  for (std::thread& client : clients) client.join();
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(statuses[i], 200) << i;
  EXPECT_LE(store_.applies.load(), 4 * kRequests);
  EXPECT_GE(gateway_->stats().throttled, static_cast<std::uint64_t>(kRequests / 2));
}

}  // namespace
}  // namespace sluice::gateway
