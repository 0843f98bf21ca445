#include "server/restart_only_settings.h"

#include <string_view>

#include "policy/store_loader.h"

namespace sluice::server {
namespace {

using policy::ServerSettings;
using policy::StoreSettings;

std::string text(const std::string& value) { return value; }
std::string text(std::size_t value) { return std::to_string(value); }
std::string threadsText(unsigned threads) {
  return threads == 0 ? "auto" : std::to_string(threads);
}

// As a config writes it: whole seconds or milliseconds where they are whole.
std::string durationText(Micros us) {
  if (us % kMicrosPerSecond == 0) return std::to_string(us / kMicrosPerSecond) + "s";
  if (us % 1000 == 0) return std::to_string(us / 1000) + "ms";
  return std::to_string(us) + "us";
}

std::string text(StoreSettings::Type type) {
  switch (type) {
    case StoreSettings::Type::kMemory:
      return "memory";
    case StoreSettings::Type::kRedis:
      return "redis";
    case StoreSettings::Type::kRedisCluster:
      return "redis_cluster";
    case StoreSettings::Type::kSynced:
      return "synced";
  }
  return "?";
}

std::string text(const std::vector<std::string>& values) {
  std::string joined = "[";
  for (const std::string& value : values) joined += (joined.size() > 1 ? ", " : "") + value;
  return joined + "]";
}

class Changes {
 public:
  template <typename T>
  void compare(std::string_view name, const T& running, const T& reloaded) {
    if (running != reloaded) add(name, text(running), text(reloaded));
  }
  void compareDuration(std::string_view name, Micros running, Micros reloaded) {
    if (running != reloaded) add(name, durationText(running), durationText(reloaded));
  }
  void add(std::string_view name, const std::string& running, const std::string& reloaded) {
    lines.push_back(std::string(name) + " changed from " + running + " to " + reloaded +
                    "; it takes effect at restart");
  }

  std::vector<std::string> lines;
};

void compareServer(const ServerSettings& running, const ServerSettings& reloaded,
                   Changes& changes) {
  changes.compare("server.listen", running.listen, reloaded.listen);
  changes.compare("server.admin", running.admin, reloaded.admin);
  if (running.threads != reloaded.threads) {
    changes.add("server.threads", threadsText(running.threads), threadsText(reloaded.threads));
  }
  changes.compare("server.max_connections", running.max_connections, reloaded.max_connections);
  changes.compareDuration("server.request_timeout", running.request_timeout_us,
                          reloaded.request_timeout_us);
  changes.compare("server.max_body_bytes", running.max_body_bytes, reloaded.max_body_bytes);
  changes.compare("server.max_header_bytes", running.max_header_bytes, reloaded.max_header_bytes);
}

// Every store setting but on_error, which the limits copy when they are loaded. Only the ones
// the reloaded type takes: the loader leaves the others at their defaults, so a switch from
// redis to memory would otherwise also report store.addresses "changed" to none.
void compareStore(const StoreSettings& running, const StoreSettings& reloaded, Changes& changes) {
  changes.compare("store.type", running.type, reloaded.type);
  const auto takes = [&reloaded](std::string_view key) {
    return policy::storeSettingApplies(reloaded.type, key);
  };
  changes.compare("store.max_keys", running.max_keys, reloaded.max_keys);
  if (takes("address")) changes.compare("store.addresses", running.addresses, reloaded.addresses);
  if (takes("connections"))
    changes.compare("store.connections", running.connections, reloaded.connections);
  if (takes("calls_in_flight"))
    changes.compare("store.calls_in_flight", running.calls_in_flight, reloaded.calls_in_flight);
  if (takes("timeout"))
    changes.compareDuration("store.timeout", running.timeout_us, reloaded.timeout_us);
  if (takes("sluice_nodes"))
    changes.compare("store.sluice_nodes", running.sluice_nodes, reloaded.sluice_nodes);
  if (takes("sync_interval")) {
    changes.compareDuration("store.sync_interval", running.sync_interval_us,
                            reloaded.sync_interval_us);
  }
  if (takes("key_prefix"))
    changes.compare("store.key_prefix", running.key_prefix, reloaded.key_prefix);
  if (takes("database")) {
    changes.compare("store.database", static_cast<std::size_t>(running.database),
                    static_cast<std::size_t>(reloaded.database));
  }
  if (takes("username")) changes.compare("store.username", running.username, reloaded.username);
  if (takes("password") && running.password != reloaded.password) {  // never the secret, in a log
    changes.lines.push_back("store.password changed; it takes effect at restart");
  }
  if (takes("breaker_failures")) {
    changes.compare("store.breaker_failures", running.breaker_failures, reloaded.breaker_failures);
  }
  if (takes("breaker_cooldown")) {
    changes.compareDuration("store.breaker_cooldown", running.breaker_cooldown_us,
                            reloaded.breaker_cooldown_us);
  }
}

}  // namespace

std::vector<std::string> restartOnlyChanges(const policy::Policy& running,
                                            const policy::Policy& reloaded) {
  Changes changes;
  compareServer(running.server, reloaded.server, changes);
  compareStore(running.store, reloaded.store, changes);
  return std::move(changes.lines);
}

}  // namespace sluice::server
