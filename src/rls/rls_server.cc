#include "rls/rls_server.h"

#include <grpcpp/resource_quota.h>

#include <array>
#include <limits>
#include <map>
#include <set>

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "policy/freed_memory.h"
#include "policy/utf8.h"
#include "rls/grpc_log.h"
#include "rls/protobuf_log.h"

namespace sluice::rls {
namespace {

// Envoy's requests are a few hundred bytes; the bound keeps a peer from making us buffer more.
constexpr int kMaxRequestBytes = 1 << 20;
constexpr std::size_t kMemoryQuotaBytes = std::size_t{128} << 20;

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += (text.empty() ? "" : "\n") + line;
  return text;
}

}  // namespace

std::string labelValue(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto percent = [&out](unsigned char byte) {
    constexpr char kHex[] = "0123456789ABCDEF";
    out += '%';
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' || c == '"' || c == '\n') {
      out += '\\';
      out += c == '\n' ? 'n' : c;
    } else if (const auto control = policy::controlCharacterAt(text, i)) {
      // C0, DEL and C1: the format allows them raw, a terminal obeys them. C1 is two bytes.
      if (*control >= 0x80) percent(static_cast<unsigned char>(text[i++]));
      percent(static_cast<unsigned char>(text[i]));
    } else {
      out += c;
    }
  }
  return out;
}

// The callback service, on the method's raw bytes: each RPC is handed to the decider and
// finished from whatever thread the decision completes on, so no gRPC thread waits on a network
// store. The request is decoded here rather than by gRPC, which answers a request it cannot
// decode with UNIMPLEMENTED and no message (as if the method were not served), uncounted.
class RlsServer::Service final
    : public envoy::service::ratelimit::v3::RateLimitService::WithRawCallbackMethod_ShouldRateLimit<
          envoy::service::ratelimit::v3::RateLimitService::Service> {
 public:
  explicit Service(RlsServer& owner) : owner_(owner) {}

  grpc::ServerUnaryReactor* ShouldRateLimit(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer* request_bytes,
                                            grpc::ByteBuffer* response_bytes) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    RlsCounters& counters = owner_.counters_;
    // The decoded request and the response, alive until the decision completes.
    auto call = std::make_shared<std::pair<RateLimitRequest, RateLimitResponse>>();
    grpc::ByteBuffer bytes(*request_bytes);  // shares the slices; decoding consumes its buffer
    if (!grpc::SerializationTraits<RateLimitRequest>::Deserialize(&bytes, &call->first).ok()) {
      counters.failed.fetch_add(1, std::memory_order_relaxed);
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "the request is not a RateLimitRequest (undecodable, or a "
                                   "string that is not UTF-8)"));
      return reactor;
    }
    owner_.decider_.decideAsync(
        owner_.config_.load(std::memory_order_acquire), call->first, call->second,
        [reactor, response_bytes, call, &counters](std::optional<RpcError> error) {
          if (error) {
            counters.failed.fetch_add(1, std::memory_order_relaxed);
            reactor->Finish(grpc::Status(error->code, error->message));
            return;
          }
          const RateLimitResponse& response = call->second;
          bool own_buffer = false;
          const grpc::Status encoded = grpc::SerializationTraits<RateLimitResponse>::Serialize(
              response, response_bytes, &own_buffer);
          if (!encoded.ok()) {
            counters.failed.fetch_add(1, std::memory_order_relaxed);
            reactor->Finish(encoded);
            return;
          }
          (response.overall_code() == RateLimitResponse::OVER_LIMIT ? counters.over_limit
                                                                    : counters.ok)
              .fetch_add(1, std::memory_order_relaxed);
          reactor->Finish(grpc::Status::OK);
        });
    return reactor;
  }

 private:
  RlsServer& owner_;
};

RlsServer::RlsServer(Engine& engine, const Clock& clock, RlsSettings settings)
    : settings_(std::move(settings)), decider_(engine, clock, settings_.decider) {}

RlsServer::~RlsServer() { shutdown(); }

Result<boost::asio::ip::tcp::endpoint> RlsServer::start() {
  LyftLoadResult loaded = loadConfiguredLyftFiles(settings_);
  // What was loaded: a file that changed during the load shows as changed at the first look.
  started_digest_ = loaded.digest;
  if (loaded.config == nullptr) return Error{joined(loaded.errors)};
  if (loaded.config->domainCount() == 0) {
    spdlog::warn("envoy rls: {} holds no domain config; every domain is unknown",
                 settings_.config_dir);
  }
  config_.store(std::move(loaded.config), std::memory_order_release);
  forwardProtobufLogs();  // before serving: undecodable requests would flood the log
  forwardGrpcLogs();      // and so would malformed metadata, through gRPC's own lines
  service_ = std::make_unique<Service>(*this);
  // grpc.health.v1.Health, as lyft/ratelimit serves it: Envoy's gRPC health checks and
  // Kubernetes probes ask it, and mark a host without it unhealthy. Process-wide, before build.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(settings_.listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(kMaxRequestBytes);
  // gRPC listens with SO_REUSEPORT by default: a second process on the same port then started
  // without a word and took half the calls, each counting about half. Refused, as the HTTP
  // listeners refuse it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Without a bound on streams per connection (gRPC advertises none), one client sending calls
  // and never reading the answers held about 16 KB per call: 200,000 calls on one connection
  // took 3 GB. Past the bound, the client's further streams are refused until its earlier ones
  // end. Envoy keeps few calls out per connection (a call takes well under a millisecond).
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxStreamsPerConnection);
  grpc::ResourceQuota quota("sluice-envoy-rls");
  quota.Resize(kMemoryQuotaBytes);
  builder.SetResourceQuota(quota);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) {
    server_.reset();
    return Error{"envoy_rls.listen " + settings_.listen + ": cannot listen there"};
  }
  // lyft registers its service name too, and an Envoy cluster's grpc_health_check may ask for
  // it (service_name: ratelimit). gRPC's shutdown turns every name NOT_SERVING.
  server_->GetHealthCheckService()->SetServingStatus("ratelimit", true);
  const std::size_t colon = settings_.listen.rfind(':');
  std::string host = settings_.listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  boost::system::error_code bad_address;
  const auto address = boost::asio::ip::make_address(host, bad_address);
  if (bad_address) return Error{"envoy_rls.listen " + settings_.listen + ": not an IP address"};
  return boost::asio::ip::tcp::endpoint(address, static_cast<unsigned short>(port));
}

std::vector<std::string> RlsServer::reload(std::optional<std::size_t>* digest_read) {
  Read read_now = read();
  if (digest_read != nullptr) *digest_read = read_now.loaded.digest;
  std::vector<std::string> errors;
  if (read_now.loaded.config == nullptr) {
    errors = std::move(read_now.loaded.errors);
  } else {
    install(std::move(read_now));
  }
  // What the files' parse took, and the config replaced (unless a call in flight holds it).
  // (A reload through the service, read() and install() apart, is trimmed there.)
  policy::releaseFreedMemory();
  return errors;
}

RlsServer::Read RlsServer::read() {
  const std::uint64_t sequence = reads_begun_.fetch_add(1) + 1;
  // Never throws: loading turns any exception (out of memory, say) into a refused load.
  Read read_now{.loaded = loadLyftConfigDir(settings_.config_dir), .sequence = sequence};
  const LyftConfigPtr serving = config_.load(std::memory_order_acquire);
  if (read_now.loaded.config != nullptr && read_now.loaded.config->domainCount() == 0 &&
      serving != nullptr && serving->domainCount() > 0) {
    read_now.loaded.config = nullptr;
    read_now.loaded.errors.push_back(
        settings_.config_dir + ": holds no domain config now, where " +
        std::to_string(serving->domainCount()) +
        " are served; refused, as an emptied directory is most likely a deploy under way "
        "(restart to serve none)");
  }
  return read_now;
}

void RlsServer::install(Read read) {
  if (read.loaded.config == nullptr) return;
  const std::lock_guard lock(install_mutex_);
  if (read.sequence < installed_sequence_) return;  // older files than those in force
  installed_sequence_ = read.sequence;
  if (const LyftConfigPtr serving = config_.load(std::memory_order_acquire)) {
    read.loaded.config->keepCountsOf(*serving);
  }
  config_.store(std::move(read.loaded.config), std::memory_order_release);
}

void RlsServer::watchConfigDir(boost::asio::io_context& loop) {
  if (settings_.watch_interval_us <= 0) return;
  watch_timer_ = std::make_unique<boost::asio::steady_timer>(loop);
  watched_digest_ = started_digest_;
  watchAgain();
}

void RlsServer::watchAgain() {
  watch_timer_->expires_after(std::chrono::microseconds(settings_.watch_interval_us));
  watch_timer_->async_wait([this](const boost::system::error_code& error) {
    if (error || stopped_.load()) return;
    const std::optional<std::size_t> digest = lyftConfigDirDigest(settings_.config_dir);
    // An unreadable directory (mid-swap, an editor replacing a file) is looked at again next
    // time; one that stays so for kUnreadableLooks looks (a mount gone) is said once, as the
    // config loaded last keeps serving meanwhile.
    constexpr int kUnreadableLooks = 3;
    if (!digest && ++unreadable_looks_ == kUnreadableLooks) {
      spdlog::warn("envoy rls: {} cannot be read; the config loaded last keeps serving",
                   settings_.config_dir);
    } else if (digest) {
      if (unreadable_looks_ >= kUnreadableLooks) {
        spdlog::info("envoy rls: {} can be read again", settings_.config_dir);
      }
      unreadable_looks_ = 0;
    }
    // A stop that came while the digest was read: no reload for a process that is ending.
    if (stopped_.load()) return;
    if (!digest || digest == watched_digest_) {
      settling_digest_.reset();
    } else if (digest != settling_digest_) {
      settling_digest_ = digest;  // changed: looked at once more before it is loaded
    } else {
      watch_reloading_.store(true, std::memory_order_relaxed);
      std::optional<std::size_t> digest_read;
      const std::vector<std::string> errors = reload(&digest_read);
      watch_reloading_.store(false, std::memory_order_relaxed);
      watched_digest_ = digest_read ? digest_read : digest;
      (errors.empty() ? counters_.watch_reloads_ok : counters_.watch_reloads_failed)
          .fetch_add(1, std::memory_order_relaxed);
      if (errors.empty()) {
        spdlog::info("envoy rls: {} changed; reloaded", settings_.config_dir);
      }
      for (const std::string& line : errors) {
        spdlog::error("envoy rls: {} changed, reload refused, keeping the old config: {}",
                      settings_.config_dir, line);
      }
    }
    watchAgain();
  });
}

void RlsServer::shutdown(std::chrono::milliseconds grace) {
  if (server_ == nullptr || stopped_.exchange(true)) return;
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
}

std::string RlsServer::metricsText() const {
  std::string text =
      "# HELP sluice_rls_requests_total Envoy ShouldRateLimit calls by answer.\n"
      "# TYPE sluice_rls_requests_total counter\n";
  for (const auto& [result, count] :
       {std::pair{"ok", &counters_.ok}, std::pair{"over_limit", &counters_.over_limit},
        std::pair{"error", &counters_.failed}}) {
    text += "sluice_rls_requests_total{result=\"" + std::string(result) + "\"} " +
            std::to_string(count->load(std::memory_order_relaxed)) + "\n";
  }
  text +=
      "# HELP sluice_rls_config_reloads_total Reloads of the lyft files by the directory watcher "
      "(SIGHUP and /admin/reload count in sluice_config_reloads_total).\n"
      "# TYPE sluice_rls_config_reloads_total counter\n"
      "sluice_rls_config_reloads_total{result=\"ok\"} " +
      std::to_string(counters_.watch_reloads_ok.load(std::memory_order_relaxed)) +
      "\nsluice_rls_config_reloads_total{result=\"failed\"} " +
      std::to_string(counters_.watch_reloads_failed.load(std::memory_order_relaxed)) + "\n";
  const LyftConfigPtr config = config_.load(std::memory_order_acquire);
  if (config == nullptr) return text;
  // One sample per label value, the counts of every rule and detailed tuple that shows as it
  // summed: a request's value can spell another rule's name (value "vip.tier" of key "acct" is
  // acct_vip.tier, the name of a rule nested under acct: vip), as can two rules (key "a_b", and
  // key "a" with value "b"), and two samples of one series on a page is a malformed scrape.
  // lyft's statsd counters of one name add up likewise.
  std::map<std::string, std::array<std::uint64_t, 3>> series;
  const auto add = [&](const std::string& rule, std::uint64_t total, std::uint64_t over_limit,
                       std::uint64_t shadow_over_limit) {
    std::array<std::uint64_t, 3>& counts = series[labelValue(rule)];
    const std::array<std::uint64_t, 3> more{total, over_limit, shadow_over_limit};
    for (std::size_t i = 0; i < counts.size(); ++i) {
      counts[i] = counts[i] > std::numeric_limits<std::uint64_t>::max() - more[i]
                      ? std::numeric_limits<std::uint64_t>::max()  // stop at the top, no wrap
                      : counts[i] + more[i];
    }
  };
  // Rules of one stat_key share one RuleStats (LyftConfig::shareCountsByName): counted once,
  // and its tuples listed once, if any of those rules has detailed_metric.
  std::set<const RuleStats*> counted;
  std::set<const RuleStats*> listed;
  config->forEachRule([&](const Domain&, const DescriptorNode& node) {
    const RuleStats& stats = *node.stats;
    if (counted.insert(&stats).second) {
      add(node.stat_key, stats.total_hits.load(std::memory_order_relaxed),
          stats.over_limit.load(std::memory_order_relaxed),
          stats.shadow_over_limit.load(std::memory_order_relaxed));
    }
    // detailed_metric: one more series per request tuple seen, and one for the tuples over the
    // bounds of RuleStats (too long, or too many).
    if (node.detailed_metric && listed.insert(&stats).second) {
      stats.forEachDetailed(node.stat_key + "#overflow", add);
    }
  });
  std::string hits, over, shadow;
  for (const auto& [label, counts] : series) {
    const std::string labels = "{rule=\"" + label + "\"} ";
    hits += "sluice_rls_rule_hits_total" + labels + std::to_string(counts[0]) + "\n";
    over += "sluice_rls_rule_over_limit_total" + labels + std::to_string(counts[1]) + "\n";
    shadow += "sluice_rls_rule_shadow_over_limit_total" + labels + std::to_string(counts[2]) + "\n";
  }
  text +=
      "# HELP sluice_rls_rule_hits_total Hits counted per lyft rule (domain.key_value path).\n"
      "# TYPE sluice_rls_rule_hits_total counter\n" +
      hits;
  text += "# TYPE sluice_rls_rule_over_limit_total counter\n" + over;
  text += "# TYPE sluice_rls_rule_shadow_over_limit_total counter\n" + shadow;
  return text;
}

}  // namespace sluice::rls
