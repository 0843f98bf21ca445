// The dynamic-limit webhook end to end: the test upstream plays the webhook.
#include "gateway/webhook_limits.h"

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/write.hpp>

#include "gateway/gateway_fixture.h"
#include "support/http_client.h"

namespace sluice::gateway {
namespace {

namespace http = boost::beast::http;
using sluice::testing::httpCall;
using sluice::testing::HttpReply;

std::string configWith(const std::string& webhook_path) {
  return R"(
limits:
  - { name: everyone, key: global, rate: 100000/s }
gateway:
  upstreams: { app: UPSTREAM }
  routes: [ { path_prefix: /, upstream: app } ]
  webhook:
    url: http://UPSTREAM)" +
         webhook_path + R"(
    timeout: 100ms
    cache_ttl: 1m
    failure_ttl: 1m
)";
}

class WebhookLimitsTest : public sluice::testing::GatewayFixture {
 protected:
  HttpReply get(const std::string& target) {
    return httpCall(endpoint_, http::verb::get, target, "", {{"Authorization", "Bearer k"}});
  }
};

// The webhook's limit applies with the policy's; its answer is cached (one call).
TEST_F(WebhookLimitsTest, AnsweredLimitsApply) {
  upstream_.limits_answer = R"({"limits": [{"key": "user:k", "burst": 2, "window": "1m"}]})";
  start(configWith("/limits"));
  EXPECT_EQ(get("/a").status, 200);
  EXPECT_EQ(get("/a").status, 200);
  const HttpReply denied = get("/a");
  EXPECT_EQ(denied.status, 429);
  EXPECT_NE(denied.body.find("dynamic:user:k"), std::string::npos) << denied.body;
  EXPECT_EQ(gateway_->stats().webhook.calls, 1u);
  EXPECT_EQ(gateway_->stats().webhook.cache_hits, 2u);
}

// The webhook gets valid JSON whatever bytes the client sent: a byte 0xFF in a header or the
// path went raw into the body, a strict webhook refused it, and the request fell back to the
// static policy, past its dynamic limit.
TEST_F(WebhookLimitsTest, TheWebhookGetsValidJsonWhateverTheClientSent) {
  upstream_.limits_answer = R"({"limits": [{"key": "user:k", "burst": 1, "window": "1m"}]})";
  start(configWith("/limits-strict"));
  const auto send = [&](const std::string& target) {
    return httpCall(endpoint_, http::verb::get, target, "",
                    {{"Authorization", "Bearer k"}, {"X-A", "caf\xe9 \xff"}});
  };
  EXPECT_EQ(send("/a%FF").status, 200);
  EXPECT_EQ(send("/a%FF").status, 429);
  EXPECT_EQ(gateway_->stats().webhook.failures, 0u);
}

// An interval limit with max_throttle holds the request instead of rejecting it.
TEST_F(WebhookLimitsTest, IntervalLimitWithMaxThrottleDelays) {
  upstream_.limits_answer = R"({"limits": [{"key": "k", "interval": 100, "max_throttle": "1s"}]})";
  start(configWith("/limits"));
  EXPECT_EQ(get("/a").status, 200);
  const HttpReply held = get("/a");
  EXPECT_EQ(held.status, 200);
  EXPECT_FALSE(held.header("x-ratelimit-delayed-ms").empty());
}

// Garbage from the webhook: the static policy decides, and the failure is remembered.
TEST_F(WebhookLimitsTest, GarbageFallsBackToStaticPolicy) {
  start(configWith("/limits-garbage"));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(get("/a").status, 200);
  EXPECT_EQ(gateway_->stats().webhook.calls, 1u);
  EXPECT_EQ(gateway_->stats().webhook.failures, 1u);
}

// A webhook slower than its timeout (100 ms) costs one request about that long, then none: the
// request is answered while the webhook's answer is still to come (told by the upstream's count
// of requests unanswered, not by a clock).
TEST_F(WebhookLimitsTest, SlowWebhookFallsBackWithinTheTimeout) {
  start(configWith("/limits-slow?ms=60000"));
  EXPECT_EQ(get("/a").status, 200);
  EXPECT_EQ(upstream_.in_flight.load(), 1);  // the webhook's call, unanswered
  EXPECT_EQ(get("/a").status, 200);
  EXPECT_EQ(gateway_->stats().webhook.failures, 1u);
  EXPECT_EQ(gateway_->stats().webhook.calls, 1u);
}

// A client that leaves while the webhook is asked is neither forwarded nor charged, as one that
// leaves during a throttle hold: the upstream (which plays the webhook too) gets the webhook's
// call only. Bounded waits: 10 s each.
TEST_F(WebhookLimitsTest, AClientLeavingWhileTheWebhookIsAskedIsNotForwarded) {
  start(configWith("/limits-slow?ms=60000"));
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket socket(io);
    socket.connect(endpoint_);
    boost::asio::write(socket,
                       boost::asio::buffer(std::string_view("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")));
    for (int i = 0; i < 1000 && upstream_.requests.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // until the webhook is asked
    }
  }  // the client leaves
  // Until the webhook timed out and the client's leaving was noticed (forwarded, it would be
  // noticed only once the upstream had the request).
  for (int i = 0;
       i < 1000 && (gateway_->stats().webhook.failures == 0 || gateway_->stats().client_gone == 0);
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(gateway_->stats().webhook.failures, 1u);
  EXPECT_EQ(gateway_->stats().client_gone, 1u);
  EXPECT_EQ(upstream_.requests.load(), 1);  // the webhook's call, not the request
}

// A webhook that is down: the static policy decides.
TEST_F(WebhookLimitsTest, UnreachableWebhookFallsBack) {
  std::string config = configWith("/limits");
  config.replace(config.find("http://UPSTREAM"), 15, "http://127.0.0.1:1");
  start(config);
  EXPECT_EQ(get("/a").status, 200);
  EXPECT_EQ(gateway_->stats().webhook.failures, 1u);
}

// Different cache-key headers are different shapes: each is asked once.
TEST_F(WebhookLimitsTest, CacheKeyedByConfiguredHeaders) {
  start(configWith("/limits"));
  for (const char* key : {"Bearer a", "Bearer b", "Bearer a"}) {
    EXPECT_EQ(httpCall(endpoint_, http::verb::get, "/a", "", {{"Authorization", key}}).status, 200);
  }
  EXPECT_EQ(gateway_->stats().webhook.calls, 2u);
}

// The webhook is told the client's address and may answer by it, so each client is asked
// about on its own: one client's answer (say, a key "ip:<its address>") is never another's.
TEST_F(WebhookLimitsTest, CacheKeyedByClientAddress) {
  start("identity: { trusted_proxies: [127.0.0.1/32] }\n" + configWith("/limits"));
  for (const char* client : {"203.0.113.1", "203.0.113.2", "203.0.113.1"}) {
    const HttpReply reply = httpCall(endpoint_, http::verb::get, "/a", "",
                                     {{"Authorization", "Bearer k"}, {"X-Forwarded-For", client}});
    EXPECT_EQ(reply.status, 200) << client;
  }
  EXPECT_EQ(gateway_->stats().webhook.calls, 2u);
}

// A cache key's size does not grow with what the client sends: paths and header values of
// 15 KB made entries of ~19 KB each, up to max_entries of them.
class WebhookCacheKey : public ::testing::Test {
 protected:
  static policy::RequestView get(std::string_view path) {
    policy::RequestView request;
    request.method = "GET";
    request.setPath(path);
    return request;
  }
  std::string keyOf(const policy::RequestView& request, const std::string& client = "192.0.2.1") {
    return limits_->cacheKey(request, client);
  }

 private:
  SystemClock clock_;
  std::shared_ptr<WebhookLimits> limits_ =
      std::make_shared<WebhookLimits>(WebhookSettings{}, clock_);
};

TEST_F(WebhookCacheKey, IsBoundedWhateverTheRequestHolds) {
  const policy::RequestView small = get("/a");
  policy::RequestView big = get("/" + std::string(15'000, 'p'));
  big.headers.emplace_back("Authorization", "Bearer " + std::string(15'000, 'k'));
  const std::string small_key = keyOf(small);
  const std::string big_key = keyOf(big);
  EXPECT_EQ(big_key.size(), small_key.size());
  EXPECT_LT(big_key.size(), 64u);
  EXPECT_NE(big_key, small_key);
  EXPECT_NE(keyOf(small, "192.0.2.2"), small_key);
}

// The webhook is sent every line of a header joined: the cache keys them so too, or its answer
// for two lines was handed to a request sending the first alone.
TEST_F(WebhookCacheKey, ReadsEveryLineOfAHeader) {
  policy::RequestView one = get("/a");
  one.headers.emplace_back("Authorization", "Bearer a");
  policy::RequestView two = one;
  two.headers.emplace_back("Authorization", "Bearer b");
  EXPECT_NE(keyOf(one), keyOf(two));
}

}  // namespace
}  // namespace sluice::gateway
