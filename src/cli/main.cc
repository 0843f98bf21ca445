// The sluice binary: `sluice serve --config FILE` (cli/serve.h) and `sluice validate [--config]
// FILE`.
#include <cstdio>
#include <new>
#include <set>
#include <string>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "cli/port_clashes.h"
#include "cli/serve.h"
#include "policy/policy_loader.h"
#ifdef SLUICE_WITH_RLS
#include "rls/rls_server.h"
#endif
#ifdef SLUICE_WITH_GATEWAY
#include "gateway/gateway_config.h"
#endif

namespace {

// Every section's problems, not only the first section's: the policy, then the Envoy door's
// section and lyft files, then the gateway's. A line that a later loader repeats (a file that
// is not YAML fails them all alike) is printed once.
int validate(const std::string& path) {
  std::set<std::string> printed;
  std::size_t error_count = 0;
  const auto report_one = [&](const std::string& error) {
    if (error.empty()) return;
    ++error_count;
    if (printed.insert(error).second) std::fprintf(stderr, "%s\n", error.c_str());
  };
  // The door loaders give their errors as one message, a line each: counted a line each.
  const auto report = [&](const std::string& errors) {
    std::size_t start = 0;
    for (std::size_t end = errors.find('\n'); end != std::string::npos;
         start = end + 1, end = errors.find('\n', start)) {
      report_one(errors.substr(start, end - start));
    }
    report_one(errors.substr(start));
  };
  // Read once, as `serve` reads it: every section is judged from the same text.
  const sluice::Result<sluice::policy::ConfigFile> file = sluice::policy::readConfigFile(path);
  if (!file.ok()) {
    std::fprintf(stderr, "%s\n1 error(s)\n", file.error().c_str());
    return 1;
  }
  const sluice::policy::LoadResult loaded = sluice::policy::loadPolicy(file.value());
  for (const std::string& error : loaded.errors) report(error);
#ifdef SLUICE_WITH_RLS
  // The Envoy door's section and its lyft config directory, when present.
  const auto rls = sluice::rls::loadRlsSettings(file.value());
  if (!rls.ok()) {
    report(rls.error());
  } else if (rls.value()) {  // the lyft files, read as `serve` reads them
    const sluice::rls::LyftLoadResult lyft = sluice::rls::loadConfiguredLyftFiles(*rls.value());
    for (const std::string& error : lyft.errors) report(error);
  }
#endif
#ifdef SLUICE_WITH_GATEWAY
  const auto gateway = sluice::gateway::loadGatewaySettings(file.value());
  if (!gateway.ok()) report(gateway.error());
#endif
  // The doors' listeners against each other: `serve` could not bind the second of two on one
  // port.
  if (loaded.policy != nullptr) {
    for (const std::string& clash : sluice::cli::portClashes(file.value(), *loaded.policy))
      report(clash);
  }
  if (error_count > 0 || loaded.policy == nullptr) {
    std::fprintf(stderr, "%zu error(s)\n", printed.size());
    return 1;
  }
  std::printf("%s: ok, %zu limit(s), %zu tier(s)\n", path.c_str(), loaded.policy->limits.size(),
              loaded.policy->tiers.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Logs go to stderr; stdout carries only the "listening" line that scripts read.
  spdlog::set_default_logger(spdlog::stderr_color_mt("sluice"));
  CLI::App app{"Sluice: a rate limiter"};
  app.require_subcommand(1);
  std::string config_path;
  CLI::App* serve_command =
      app.add_subcommand("serve", "serve the decision API and admin endpoints");
  serve_command->add_option("-c,--config", config_path, "configuration file")->required();
  std::string validate_path;
  CLI::App* validate_command = app.add_subcommand("validate", "check a configuration file");
  // The file as `serve` takes it (-c/--config) or bare, as `sluice validate FILE`.
  validate_command->add_option("file,-c,--config", validate_path, "configuration file")->required();
  CLI11_PARSE(app, argc, argv);
  const std::string& path = serve_command->parsed() ? config_path : validate_path;
  try {
    if (serve_command->parsed()) return sluice::cli::serve(config_path);
    return validate(validate_path);
  } catch (const std::bad_alloc&) {
    // Reading the configuration at start ran out of memory (a reload refuses and goes on): an
    // error and exit code 2, as for any configuration refused at start, not an abort.
    std::fprintf(stderr, "%s: %s\n", path.c_str(), sluice::policy::kOutOfMemoryReading);
    return 2;
  }
}
