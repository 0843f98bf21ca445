#include "gateway/webhook_limits.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include "http/json_string.h"
#include "policy/api_key_hash.h"
#include "policy/key_selector.h"
#include "server/bounded_parser.h"
#include "server/http_server.h"

namespace sluice::gateway {

namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace net = boost::asio;

namespace {

// A webhook answer is a short list of limits; anything bigger is garbage.
constexpr std::size_t kMaxAnswerBytes = 64 * 1024;
constexpr std::uint32_t kMaxAnswerHeaderBytes = 16 * 1024;

// The webhook's request as JSON. Written with appendJsonString, which makes any bytes valid
// UTF-8: a client's byte 0xFF in a header or the path, passed raw, made the body invalid JSON,
// a strict webhook refused it, and the request fell back to the static policy, past its
// dynamic limits.
std::string requestBody(const policy::RequestView& request, const std::string& client_ip) {
  std::string body = "{\"method\":";
  http::appendJsonString(body, request.method);
  body += ",\"path\":";
  http::appendJsonString(body, request.foldedPath());
  body += ",\"client_ip\":";
  http::appendJsonString(body, client_ip);
  body += ",\"headers\":{";
  std::vector<std::string> written;  // lower-case names, each once with its values joined
  for (const auto& [name, value] : request.headers) {
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    if (std::find(written.begin(), written.end(), lower) != written.end()) continue;
    if (!written.empty()) body += ',';
    http::appendJsonString(body, lower);
    body += ':';
    http::appendJsonString(body, request.joinedHeader(name));
    written.push_back(std::move(lower));
  }
  body += "}}";
  return body;
}

}  // namespace

// One POST to the webhook on the requesting connection's loop, under one deadline for connect,
// write and read together.
class WebhookCall : public std::enable_shared_from_this<WebhookCall> {
 public:
  // `done` runs on `loop` when the call is over, after the waiters were woken.
  WebhookCall(net::io_context& loop, std::shared_ptr<WebhookLimits> owner, std::string key,
              std::string body, WebhookLimits::Done done)
      : stream_(loop), owner_(std::move(owner)), key_(std::move(key)), done_(std::move(done)) {
    const WebhookSettings& settings = owner_->settings_;
    request_ = {bhttp::verb::post, settings.path, 11};
    request_.set(bhttp::field::host, server::hostFieldText(settings.server.endpoint));
    request_.set(bhttp::field::content_type, "application/json");
    request_.set(bhttp::field::connection, "close");
    request_.body() = std::move(body);
    request_.prepare_payload();
    parser_.body_limit(kMaxAnswerBytes);
    parser_.header_limit(kMaxAnswerHeaderBytes);
    parser_.trailer_limit(kMaxAnswerHeaderBytes);
    // What the parser has not taken yet; bounded, so a chunk line that never ends fails the
    // call instead of growing memory until the timeout.
    buffer_.max_size(kMaxAnswerHeaderBytes + 2 * kMaxAnswerBytes);
  }

  void start() {
    const WebhookSettings& settings = owner_->settings_;
    stream_.expires_after(std::chrono::microseconds(settings.timeout_us));
    stream_.async_connect(
        settings.server.endpoint, [self = shared_from_this()](beast::error_code ec) {
          if (ec) return self->fail("connect: " + ec.message());
          bhttp::async_write(self->stream_, self->request_,
                             [self](beast::error_code write_ec, std::size_t) {
                               if (write_ec) return self->fail("write: " + write_ec.message());
                               self->read();
                             });
        });
  }

 private:
  void read() {
    bhttp::async_read(stream_, buffer_, parser_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec) return self->fail("read: " + ec.message());
                        self->answer();
                      });
  }

  void answer() {
    const auto& response = parser_.get();
    if (response.result() != bhttp::status::ok) {
      return fail("answered " + std::to_string(response.result_int()));
    }
    Result<DynamicLimitsPtr> limits = parseDynamicLimits(response.body());
    if (!limits.ok()) return fail(limits.error());
    close();
    DynamicLimitsPtr parsed = std::move(limits).value();
    owner_->finish(key_, parsed, false);
    done_(std::move(parsed));
  }

  void fail(const std::string& why) {
    close();
    // At most one line a second: a webhook that is down would otherwise log once per shape.
    static std::atomic<std::int64_t> last_logged_s{0};
    const std::int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count();
    if (last_logged_s.exchange(now_s) != now_s) {
      spdlog::warn("dynamic-limit webhook failed ({}); the static policy decides", why);
    }
    owner_->finish(key_, nullptr, true);
    done_(nullptr);
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  std::shared_ptr<WebhookLimits> owner_;
  std::string key_;
  WebhookLimits::Done done_;
  bhttp::request<bhttp::string_body> request_;
  server::BoundedResponseParser<bhttp::string_body> parser_;
  beast::flat_buffer buffer_;
};

WebhookLimits::WebhookLimits(WebhookSettings settings, const Clock& clock)
    : settings_(std::move(settings)), clock_(clock), cache_(settings_.max_entries) {}

std::string WebhookLimits::cacheKey(const policy::RequestView& request,
                                    const std::string& client_ip) const {
  std::string key;
  // The webhook is told the client's address and may answer by it (a per-address key): an
  // answer for one client must not be handed to another.
  policy::appendCounterPart(key, client_ip);
  policy::appendCounterPart(key, request.method);
  policy::appendCounterPart(key, request.foldedPath());
  // Every line of each header, joined, as the webhook is sent them: keyed by the first line, an
  // answer for "a, b" was handed to requests sending "a" alone.
  for (const std::string& header : settings_.cache_key_headers) {
    const bool present = request.header(header).has_value();
    key += present ? 'h' : 'n';
    if (present) policy::appendCounterPart(key, request.joinedHeader(header));
  }
  // Hashed: the path and headers are the client's, up to max_header_bytes each, and the cache
  // holds up to max_entries keys (15 KB paths took ~19 KB per entry, 1.9 GB at the default).
  return policy::hashApiKey(key);
}

void WebhookLimits::lookup(const policy::RequestView& request, const std::string& client_ip,
                           net::io_context& loop, Done done) {
  std::string key = cacheKey(request, client_ip);
  // A request that finds a fetch under way waits for it on its own loop.
  auto waiter = [&loop, done](DynamicLimitsPtr limits) {
    net::post(loop, [done, limits = std::move(limits)] { done(limits); });
  };
  const WebhookCache::Probe probe = cache_.probe(key, clock_.now(), std::move(waiter));
  switch (probe.kind) {
    case WebhookCache::Probe::Kind::kHit:
      cache_hits_.fetch_add(1, std::memory_order_relaxed);
      return done(probe.limits);
    case WebhookCache::Probe::Kind::kQueued:
      return;
    case WebhookCache::Probe::Kind::kFetch:
      break;
  }
  calls_.fetch_add(1, std::memory_order_relaxed);
  std::make_shared<WebhookCall>(loop, shared_from_this(), std::move(key),
                                requestBody(request, client_ip), std::move(done))
      ->start();
}

void WebhookLimits::finish(const std::string& key, DynamicLimitsPtr limits, bool failed) {
  if (failed) failures_.fetch_add(1, std::memory_order_relaxed);
  const Micros ttl_us = failed ? settings_.failure_ttl_us : settings_.cache_ttl_us;
  std::vector<WebhookCache::Waiter> waiters = cache_.complete(key, limits, clock_.now() + ttl_us);
  for (WebhookCache::Waiter& waiter : waiters) waiter(limits);
}

WebhookStats WebhookLimits::stats() const noexcept {
  return {calls_.load(std::memory_order_relaxed), failures_.load(std::memory_order_relaxed),
          cache_hits_.load(std::memory_order_relaxed)};
}

}  // namespace sluice::gateway
