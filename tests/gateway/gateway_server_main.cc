// A stand-alone gateway for the benchmark and manual runs: `sluice_gateway_server CONFIG` reads
// the policy and the gateway: section of CONFIG, serves on gateway.listen with server.threads
// loops, and stops on SIGINT or SIGTERM. It counts decisions as `sluice serve` does.
#include <cstdio>
#include <thread>

#include <boost/asio/signal_set.hpp>

#include "engine/engine.h"
#include "gateway/gateway.h"
#include "policy/policy_loader.h"
#include "server/io_pool.h"
#include "server/metrics.h"
#include "store/memory_store.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CONFIG\n", argv[0]);
    return 2;
  }
  const sluice::policy::LoadResult loaded = sluice::policy::loadPolicy(argv[1]);
  for (const std::string& error : loaded.errors) std::fprintf(stderr, "%s\n", error.c_str());
  auto settings = sluice::gateway::loadGatewaySettings(argv[1]);
  if (!settings.ok()) std::fprintf(stderr, "%s\n", settings.error().c_str());
  if (loaded.policy == nullptr || !settings.ok()) return 2;
  if (!settings.value()) {
    std::fprintf(stderr, "%s has no gateway: section\n", argv[1]);
    return 2;
  }
  const unsigned threads = loaded.policy->server.threads != 0
                               ? loaded.policy->server.threads
                               : std::max(1u, std::thread::hardware_concurrency());
  sluice::server::IoPool pool(threads);
  sluice::SystemClock clock;  // as `sluice serve` uses
  sluice::MemoryStore store(sluice::MemoryStoreOptions{loaded.policy->store.max_keys});
  sluice::Engine engine(store, clock);
  sluice::server::Metrics metrics;  // counted as `sluice serve` counts, though nothing reads them
  sluice::gateway::Gateway gateway(
      pool, engine, clock, [policy = loaded.policy] { return policy; }, *settings.value(),
      &metrics);
  const auto endpoint = gateway.listen();
  if (!endpoint.ok()) {
    std::fprintf(stderr, "%s\n", endpoint.error().c_str());
    return 2;
  }
  boost::asio::signal_set signals(pool.first(), SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) {
    gateway.shutdown();
    pool.stop();
  });
  std::printf("listening gateway=%s:%u\n", endpoint.value().address().to_string().c_str(),
              endpoint.value().port());
  std::fflush(stdout);
  pool.run();
  return 0;
}
