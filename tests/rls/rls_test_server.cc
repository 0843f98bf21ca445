// A test-only `sluice` stand-in for the Envoy door: reads the envoy_rls section of a Sluice
// YAML, serves it over an in-memory store and the system clock, and prints
// "listening rls=HOST:PORT" once it accepts calls. SIGTERM or SIGINT stops it.
// Usage: sluice_rls_test_server CONFIG.yaml
#include <csignal>
#include <cstdio>

#include "rls/rls_server.h"
#include "store/memory_store.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CONFIG.yaml\n", argv[0]);
    return 2;
  }
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  // Blocked before gRPC starts its threads, so only sigwait below receives them.
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  const auto settings = sluice::rls::loadRlsSettings(argv[1]);
  if (!settings.ok() || !settings.value().has_value()) {
    std::fprintf(stderr, "%s\n", settings.ok() ? "no envoy_rls section" : settings.error().c_str());
    return 2;
  }
  sluice::SystemClock clock;
  sluice::MemoryStore store;
  sluice::Engine engine(store, clock);
  sluice::rls::RlsServer server(engine, clock, *settings.value());
  const auto endpoint = server.start();
  if (!endpoint.ok()) {
    std::fprintf(stderr, "%s\n", endpoint.error().c_str());
    return 2;
  }
  std::printf("listening rls=%s:%u\n", endpoint.value().address().to_string().c_str(),
              endpoint.value().port());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop_signals, &signal);
  server.shutdown();
  return 0;
}
