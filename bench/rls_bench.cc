// Load for the Envoy door: gRPC ShouldRateLimit decisions per second and latency percentiles at a
// fixed number of calls in flight (64 by default, like wrk -c64 against the HTTP API).
//
//   sluice_rls_bench [--target HOST:PORT] [--concurrency 64] [--channels 2] [--seconds 10]
//                    [--clients 10000]
//
// Without --target it starts the door in this process (in-memory store, a lyft config of one
// rule per remote_address, 1000/second each) on 127.0.0.1:0 and drives that; with --target it
// drives a running server, whose config must have a `remote_address` rule in domain `bench`.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "rls/rls_server.h"
#include "store/memory_store.h"

namespace {

using envoy::service::ratelimit::v3::RateLimitRequest;
using envoy::service::ratelimit::v3::RateLimitResponse;
using envoy::service::ratelimit::v3::RateLimitService;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string target;
  int concurrency = 64;
  int channels = 2;
  int seconds = 10;
  int clients = 10'000;
};

Options parseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i];
    const std::string value = argv[i + 1];
    if (name == "--target") options.target = value;
    if (name == "--concurrency") options.concurrency = std::max(1, std::atoi(value.c_str()));
    if (name == "--channels") options.channels = std::max(1, std::atoi(value.c_str()));
    if (name == "--seconds") options.seconds = std::max(1, std::atoi(value.c_str()));
    if (name == "--clients") options.clients = std::max(1, std::atoi(value.c_str()));
  }
  return options;
}

// One call slot: as soon as its call completes it records the latency and starts the next, until
// the deadline; so exactly `concurrency` calls are in flight.
struct Slot {
  RateLimitService::Stub* stub = nullptr;
  std::unique_ptr<grpc::ClientContext> context;
  RateLimitRequest request;
  RateLimitResponse response;
  Clock::time_point started;
  std::vector<std::uint32_t> latencies_us;
  std::uint64_t over_limit = 0;
  std::uint64_t errors = 0;
  std::minstd_rand random;
};

class Load {
 public:
  Load(const Options& options, Clock::time_point deadline)
      : options_(options), deadline_(deadline) {}

  void start(Slot& slot) {
    if (Clock::now() >= deadline_) {
      std::lock_guard lock(mutex_);
      if (--active_ == 0) done_.notify_all();
      return;
    }
    auto& entry = *slot.request.mutable_descriptors(0)->mutable_entries(0);
    const unsigned client = slot.random() % static_cast<unsigned>(options_.clients);
    entry.set_value("10." + std::to_string(client / 65536) + "." +
                    std::to_string(client / 256 % 256) + "." + std::to_string(client % 256));
    slot.context = std::make_unique<grpc::ClientContext>();
    slot.response.Clear();
    slot.started = Clock::now();
    slot.stub->async()->ShouldRateLimit(slot.context.get(), &slot.request, &slot.response,
                                        [this, &slot](grpc::Status status) {
                                          finish(slot, status);
                                          start(slot);
                                        });
  }

  void run(std::vector<Slot>& slots) {
    active_ = static_cast<int>(slots.size());
    for (Slot& slot : slots) start(slot);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return active_ == 0; });
  }

 private:
  static void finish(Slot& slot, const grpc::Status& status) {
    const auto elapsed = Clock::now() - slot.started;
    slot.latencies_us.push_back(static_cast<std::uint32_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count()));
    if (!status.ok()) {
      ++slot.errors;
    } else if (slot.response.overall_code() == RateLimitResponse::OVER_LIMIT) {
      ++slot.over_limit;
    }
  }

  const Options& options_;
  Clock::time_point deadline_;
  std::mutex mutex_;
  std::condition_variable done_;
  int active_ = 0;
};

// The in-process door's config: a lyft file in a fresh temporary directory.
std::string writeBenchConfig() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("sluice-rls-bench-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bench.yaml")
      << "domain: bench\n"
         "descriptors:\n"
         "  - key: remote_address\n"
         "    rate_limit: { unit: second, requests_per_unit: 1000 }\n";
  return dir.string();
}

void report(const Options& options, std::vector<Slot>& slots, double seconds) {
  std::vector<std::uint32_t> all;
  std::uint64_t over = 0, errors = 0;
  for (Slot& slot : slots) {
    all.insert(all.end(), slot.latencies_us.begin(), slot.latencies_us.end());
    over += slot.over_limit;
    errors += slot.errors;
  }
  std::sort(all.begin(), all.end());
  const auto percentile = [&](double p) {
    return all.empty()
               ? 0.0
               : all[std::min(all.size() - 1, static_cast<std::size_t>(p * all.size()))] / 1000.0;
  };
  std::printf("gRPC ShouldRateLimit: %d calls in flight over %d channel(s), %d clients, %.1f s\n",
              options.concurrency, options.channels, options.clients, seconds);
  std::printf("decisions/s %.0f  (calls %zu, over_limit %llu, errors %llu)\n",
              static_cast<double>(all.size()) / seconds, all.size(),
              static_cast<unsigned long long>(over), static_cast<unsigned long long>(errors));
  std::printf("latency ms  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", percentile(0.5),
              percentile(0.9), percentile(0.99), percentile(0.999), percentile(1.0));
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parseOptions(argc, argv);
  sluice::SystemClock clock;
  sluice::MemoryStore store;
  sluice::Engine engine(store, clock);
  std::unique_ptr<sluice::rls::RlsServer> server;
  std::string target = options.target;
  std::string config_dir;
  if (target.empty()) {
    config_dir = writeBenchConfig();
    sluice::rls::RlsSettings settings;
    settings.listen = "127.0.0.1:0";
    settings.config_dir = config_dir;
    server = std::make_unique<sluice::rls::RlsServer>(engine, clock, settings);
    const auto endpoint = server->start();
    if (!endpoint.ok()) {
      std::fprintf(stderr, "%s\n", endpoint.error().c_str());
      return 1;
    }
    target = "127.0.0.1:" + std::to_string(endpoint.value().port());
  }
  std::vector<std::unique_ptr<RateLimitService::Stub>> stubs;
  for (int i = 0; i < options.channels; ++i) {
    grpc::ChannelArguments arguments;
    arguments.SetInt("sluice.bench.channel", i);  // distinct arguments: a connection per channel
    stubs.push_back(RateLimitService::NewStub(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), arguments)));
  }
  std::vector<Slot> slots(static_cast<std::size_t>(options.concurrency));
  for (std::size_t i = 0; i < slots.size(); ++i) {
    slots[i].stub = stubs[i % stubs.size()].get();
    slots[i].random.seed(static_cast<unsigned>(i + 1));
    slots[i].request.set_domain("bench");
    slots[i].request.add_descriptors()->add_entries()->set_key("remote_address");
    slots[i].latencies_us.reserve(1 << 16);
  }
  const auto begin = Clock::now();
  Load load(options, begin + std::chrono::seconds(options.seconds));
  load.run(slots);
  const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  report(options, slots, seconds);
  if (server) server->shutdown();
  if (!config_dir.empty()) std::filesystem::remove_all(config_dir);
  return 0;
}
