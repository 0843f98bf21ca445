#include "policy/store_loader.h"

#include <array>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <string>

#include "store/redis/lua_bounds.h"

namespace sluice::policy {
namespace {

constexpr std::array<std::string_view, 17> kStoreKeys = {"type",
                                                         "max_keys",
                                                         "address",
                                                         "addresses",
                                                         "connections",
                                                         "calls_in_flight",
                                                         "timeout",
                                                         "on_error",
                                                         "sluice_nodes",
                                                         "sync_interval",
                                                         "key_prefix",
                                                         "breaker_failures",
                                                         "breaker_cooldown",
                                                         "username",
                                                         "password",
                                                         "password_env",
                                                         "database"};

std::optional<StoreSettings::Type> storeType(const YAML::Node& node, Errors& errors) {
  const std::string name = scalar(node, "store.type", errors).value_or("");
  if (name == "memory") return StoreSettings::Type::kMemory;
  if (name == "redis") return StoreSettings::Type::kRedis;
  if (name == "redis_cluster") return StoreSettings::Type::kRedisCluster;
  if (name == "synced") return StoreSettings::Type::kSynced;
  errors.add(node, "store.type must be memory, redis, redis_cluster or synced");
  return std::nullopt;
}

// host:port with a numeric port (host may be a name, as Redis servers often are), or
// unix:/absolute/path of a Unix socket.
bool validAddress(std::string_view address) {
  if (address.starts_with("unix:")) return address.size() > 6 && address[5] == '/';
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  unsigned port = 0;
  const std::string_view digits = address.substr(colon + 1);
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  return error == std::errc() && end == digits.data() + digits.size() && port > 0 && port <= 65535;
}

// A socket's path is held in sockaddr_un's 108 bytes with its terminating NUL; hiredis would cut
// a longer one short and connect to another path, or to none.
constexpr std::size_t kMaxUnixSocketPathBytes = 107;

// One Redis address, `at` its place in the file.
void checkAddress(const YAML::Node& at, const std::string& address, StoreSettings::Type type,
                  Errors& errors) {
  const bool unix_socket = address.starts_with("unix:");
  const std::string_view path = std::string_view(address).substr(unix_socket ? 5 : 0);
  if (unix_socket && type == StoreSettings::Type::kRedisCluster) {
    errors.add(at,
               "store: a Redis Cluster's nodes are host:port (they announce each other so), not " +
                   address);
  } else if (unix_socket && path.find('\0') != std::string_view::npos) {
    errors.add(at, "a Unix socket path cannot hold a NUL byte");
  } else if (unix_socket && path.size() > kMaxUnixSocketPathBytes) {
    errors.add(at, "a Unix socket path is at most " + std::to_string(kMaxUnixSocketPathBytes) +
                       " bytes, not " + std::to_string(path.size()));
  } else if (!validAddress(address)) {
    errors.add(at, "store address \"" + address +
                       "\" must be host:port, e.g. 127.0.0.1:6379, or unix:/path/to/redis.sock");
  }
}

// `address: a` or `addresses: [a, b]`; each address's error at its own line.
void loadAddresses(const YAML::Node& node, StoreSettings& store, Errors& errors) {
  std::vector<std::string> addresses;
  if (node.IsSequence()) {
    for (const auto& item : node) {
      const auto address = scalar(item, "store.addresses entry", errors);
      if (!address) continue;
      checkAddress(item, *address, store.type, errors);
      addresses.push_back(*address);
    }
    if (node.size() == 0) errors.add(node, "store.addresses must name at least one server");
  } else if (const auto address = scalar(node, "store.address", errors)) {
    checkAddress(node, *address, store.type, errors);
    addresses.push_back(*address);
  }
  store.addresses = std::move(addresses);
}

// A count from 1 to `most`.
void loadPositive(const YAML::Node& node, const std::string& what, std::size_t& value,
                  Errors& errors, std::size_t most = std::numeric_limits<std::size_t>::max()) {
  value = unsignedValue(node, what, errors).value_or(1);
  if (value == 0) errors.add(node, what + " must be at least 1");
  if (value > most) errors.add(node, what + " is at most " + std::to_string(most));
}

void loadDuration(const YAML::Node& node, const std::string& what, Micros low, Micros high,
                  Micros& value, Errors& errors) {
  value = durationValue(node, what, errors).value_or(low);
  if (value < low || value > high) errors.add(node, what + " is out of range");
}

}  // namespace

std::optional<OnStoreError> onStoreErrorValue(const YAML::Node& node, const std::string& what,
                                              Errors& errors) {
  const std::string value = scalar(node, what, errors).value_or("");
  if (value == "allow") return OnStoreError::kAllow;
  if (value == "deny") return OnStoreError::kDeny;
  if (value == "local") return OnStoreError::kLocal;
  errors.add(node, what + " must be allow, deny or local");
  return std::nullopt;
}

// store.password or store.password_env (the name of an environment variable holding it, so the
// secret stays out of the file), and store.username for an ACL user.
void loadAuth(const YAML::Node& node, StoreSettings& store, Errors& errors) {
  if (node["password"] && node["password_env"]) {
    errors.add(node, "store: give password or password_env, not both");
  }
  if (node["password"]) {
    store.password = scalar(node["password"], "store.password", errors).value_or("");
    if (store.password.empty()) errors.add(node["password"], "store.password is empty");
  } else if (node["password_env"]) {
    const std::string variable =
        scalar(node["password_env"], "store.password_env", errors).value_or("");
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr || *value == '\0') {
      errors.add(node["password_env"], "environment variable " + variable + " is not set or empty");
    } else {
      store.password = value;
    }
  }
  if (node["username"]) {
    store.username = scalar(node["username"], "store.username", errors).value_or("");
    if (store.password.empty() && !node["password"] && !node["password_env"]) {
      errors.add(node["username"], "store.username needs a password or password_env");
    }
  }
}

bool storeSettingApplies(StoreSettings::Type type, std::string_view key) {
  // max_keys bounds every type's keys in this process: the memory store, the synced store's
  // table, on_error: local.
  if (key == "type" || key == "max_keys") return true;
  switch (type) {
    case StoreSettings::Type::kMemory:
      return false;
    case StoreSettings::Type::kRedis:
      return key != "sync_interval";
    case StoreSettings::Type::kRedisCluster:
      return key != "calls_in_flight" && key != "sync_interval";
    case StoreSettings::Type::kSynced:
      return key != "on_error" && key != "connections" && key != "calls_in_flight" &&
             key != "breaker_failures" && key != "breaker_cooldown";
  }
  return false;
}

void loadStore(const YAML::Node& node, StoreSettings& store, Errors& errors) {
  if (!isMap(node, "store", errors)) return;
  checkKeys(node, "store", kStoreKeys, errors);
  // A type misspelt leaves the store memory: no word then of Redis settings beside it.
  bool type_read = true;
  if (node["type"]) {
    const auto type = storeType(node["type"], errors);
    type_read = type.has_value();
    store.type = type.value_or(store.type);
  }
  if (node["max_keys"]) loadPositive(node["max_keys"], "store.max_keys", store.max_keys, errors);
  if (node["address"] && node["addresses"])
    errors.add(node, "store: give address or addresses, not both");
  if (node["address"]) loadAddresses(node["address"], store, errors);
  if (node["addresses"]) loadAddresses(node["addresses"], store, errors);
  if (store.type != StoreSettings::Type::kRedisCluster && store.addresses.size() > 1) {
    errors.add(node, "store: only redis_cluster takes several addresses");
  }
  if (node["connections"])
    loadPositive(node["connections"], "store.connections", store.connections, errors, 64);
  if (node["calls_in_flight"]) {
    loadPositive(node["calls_in_flight"], "store.calls_in_flight", store.calls_in_flight, errors,
                 64);
  }
  // Past a second a rate limiter adds more latency than it saves.
  if (node["timeout"])
    loadDuration(node["timeout"], "store.timeout (1ms..1s)", 1'000, 1'000'000, store.timeout_us,
                 errors);
  if (node["on_error"])
    store.on_error =
        onStoreErrorValue(node["on_error"], "store.on_error", errors).value_or(store.on_error);
  if (node["sluice_nodes"])
    loadPositive(node["sluice_nodes"], "store.sluice_nodes", store.sluice_nodes, errors);
  if (node["sync_interval"])
    loadDuration(node["sync_interval"], "store.sync_interval (10ms..10s)", 10'000, 10'000'000,
                 store.sync_interval_us, errors);
  if (node["key_prefix"])
    store.key_prefix = scalar(node["key_prefix"], "store.key_prefix", errors).value_or("");
  if (node["breaker_failures"])
    loadPositive(node["breaker_failures"], "store.breaker_failures", store.breaker_failures,
                 errors);
  if (node["breaker_cooldown"])
    loadDuration(node["breaker_cooldown"], "store.breaker_cooldown (10ms..60s)", 10'000, 60'000'000,
                 store.breaker_cooldown_us, errors);
  loadAuth(node, store, errors);
  if (node["database"]) {
    const auto index = unsignedValue(node["database"], "store.database", errors);
    if (index && *index > 1'000'000) {
      errors.add(node["database"], "store.database must be 0..1000000");
    } else if (index) {
      store.database = static_cast<int>(*index);
    }
    if (store.type == StoreSettings::Type::kRedisCluster && store.database != 0) {
      errors.add(node["database"], "store.database: a Redis Cluster has database 0 only");
    }
  }
  // Redis settings on the memory store (type left out, or commented out above them): the
  // process would run alone, its limits per node, with every Redis setting ignored.
  if (store.type == StoreSettings::Type::kMemory && type_read) {
    for (const std::string_view key : kStoreKeys) {
      const YAML::Node setting = node[std::string(key)];
      if (setting && !storeSettingApplies(store.type, key)) {
        errors.add(setting, "store." + std::string(key) +
                                " is a Redis setting, and this store is memory (type: redis, "
                                "redis_cluster or synced shares limits through Redis)");
      }
    }
  }
  // The synced store decides alone while Redis is unreachable: on_error never applies to it.
  if (store.type == StoreSettings::Type::kSynced && node["on_error"]) {
    errors.add(node["on_error"],
               "store.on_error does not apply to the synced store, which decides alone while "
               "Redis is unreachable (type: redis applies on_error)");
  }
  // Settings a store type has no use for would read as if they held.
  if (store.type == StoreSettings::Type::kSynced) {
    for (const std::string_view key : kStoreKeys) {
      const YAML::Node setting = node[std::string(key)];
      if (key != "on_error" && setting && !storeSettingApplies(store.type, key)) {
        errors.add(setting, "store." + std::string(key) +
                                " does not apply to the synced store, which syncs over one "
                                "connection from its own thread and decides alone while Redis "
                                "is unreachable (type: redis uses it)");
      }
    }
  }
  // Only a synced store syncs: on another, the interval would read as if it held.
  if (store.shared() && node["sync_interval"] &&
      !storeSettingApplies(store.type, "sync_interval")) {
    errors.add(node["sync_interval"],
               "store.sync_interval applies to the synced store only, which pushes and pulls "
               "at that interval (type: synced)");
  }
  if (store.type == StoreSettings::Type::kRedisCluster && node["calls_in_flight"]) {
    errors.add(node["calls_in_flight"],
               "store.calls_in_flight does not apply to redis_cluster, which sends each call as "
               "it comes over `connections` per master (type: redis uses it)");
  }
}

void checkLimitsOnError(const YAML::Node& limits, const StoreSettings& store, Errors& errors) {
  if (store.type != StoreSettings::Type::kSynced || !limits.IsSequence()) return;
  // A synced node keeps deciding alone through an outage: a limit's on_error (deny, say, for a
  // login limit) would read as if it held then.
  for (const YAML::Node& node : limits) {
    if (node.IsMap() && node["on_error"]) {
      const YAML::Node name = node["name"];
      errors.add(node["on_error"], "limit " + (name && name.IsScalar() ? name.Scalar() : "") +
                                       ": on_error does not apply to the synced store, which "
                                       "decides alone while Redis is unreachable (type: redis "
                                       "applies on_error)");
    }
  }
}

void checkLimitsFitStore(const YAML::Node& limits, const Policy& policy, const StoreSettings& store,
                         const std::string& which, Errors& errors) {
  if (!store.shared()) return;
  const bool synced = store.type == StoreSettings::Type::kSynced;
  for (std::size_t i = 0; i < policy.limits.size(); ++i) {
    const Limit& limit = policy.limits[i];
    const YAML::Node node =
        limits.IsSequence() && limits.size() == policy.limits.size() ? limits[i] : limits;
    std::vector<const LimitSpec*> specs;
    if (limit.spec) specs.push_back(&*limit.spec);
    for (const auto& [tier, spec] : limit.tier_specs) specs.push_back(&spec);
    for (const auto& [tier, spec] : limit.tier_daily_specs) specs.push_back(&spec);
    for (const LimitSpec* spec : specs) {
      if (synced && spec->algorithm() == Algorithm::kSlidingWindowLog) {
        errors.add(node, "limit " + limit.name + ": " + which +
                             " cannot share a sliding window log (its state is a log); use "
                             "sliding_window_counter, or store type redis");
        break;
      }
      if (const auto reason = redis::luaIncompatibility(*spec)) {
        errors.add(node, "limit " + limit.name + " (" + spec->toString() + ") is too large for " +
                             which + ": " + *reason);
        break;
      }
    }
  }
}

}  // namespace sluice::policy
