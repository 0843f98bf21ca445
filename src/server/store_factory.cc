#include "server/store_factory.h"

#include <charconv>

#include "store/failover_store.h"
#include "store/memory_store.h"
#include "store/redis/cluster_store.h"
#include "store/redis/redis_store.h"
#include "store/redis/synced_store.h"

namespace sluice::server {
namespace {

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};

// host:port, or unix:/path as the path with port 0 (a host starting with '/' is a socket path
// to the Redis connections).
Result<HostPort> splitAddress(const std::string& address) {
  if (address.starts_with("unix:/")) return HostPort{.host = address.substr(5), .port = 0};
  const std::size_t colon = address.rfind(':');
  HostPort parsed;
  if (colon == std::string::npos) return Error{"store address " + address + " has no port"};
  parsed.host = address.substr(0, colon);
  const char* begin = address.data() + colon + 1;
  const char* end = address.data() + address.size();
  const auto [stop, error] = std::from_chars(begin, end, parsed.port);
  if (error != std::errc() || stop != end || parsed.port == 0)
    return Error{"store address " + address + " has a bad port"};
  return parsed;
}

redis::RedisAuth auth(const policy::StoreSettings& settings) {
  return redis::RedisAuth{.username = settings.username, .password = settings.password};
}

FailoverOptions failoverOptions(const policy::StoreSettings& settings) {
  return FailoverOptions{
      .on_error = {.sluice_nodes = settings.sluice_nodes, .local_max_keys = settings.max_keys},
      .breaker_failures = settings.breaker_failures,
      .breaker_cooldown_us = settings.breaker_cooldown_us};
}

StoreInstance memoryStore(const policy::StoreSettings& settings) {
  StoreInstance instance;
  auto memory = std::make_unique<MemoryStore>(MemoryStoreOptions{.max_keys = settings.max_keys});
  MemoryStore* raw = memory.get();
  instance.key_count = [raw] { return raw->keyCount(); };
  instance.store = std::move(memory);
  instance.description = "memory";
  return instance;
}

StoreInstance redisStore(const policy::StoreSettings& settings, const HostPort& server,
                         const std::vector<boost::asio::io_context*>& request_loops) {
  StoreInstance instance;
  auto redis =
      std::make_unique<RedisStore>(RedisStoreOptions{.host = server.host,
                                                     .port = server.port,
                                                     .connections = settings.connections,
                                                     .calls_in_flight = settings.calls_in_flight,
                                                     .timeout_us = settings.timeout_us,
                                                     .key_prefix = settings.key_prefix,
                                                     .auth = auth(settings),
                                                     .database = settings.database,
                                                     .request_loops = request_loops});
  instance.store = std::make_unique<FailoverStore>(std::move(redis), failoverOptions(settings));
  instance.key_count = [] { return std::size_t{0}; };  // the keys live in Redis
  instance.description = "redis " + settings.addresses.front();
  return instance;
}

StoreInstance syncedStore(const policy::StoreSettings& settings, const HostPort& server) {
  StoreInstance instance;
  auto synced = std::make_unique<SyncedStore>(
      SyncedStoreOptions{.host = server.host,
                         .port = server.port,
                         .timeout_us = settings.timeout_us,
                         .key_prefix = settings.key_prefix,
                         .auth = auth(settings),
                         .database = settings.database,
                         .sync_interval_us = settings.sync_interval_us,
                         .sluice_nodes = settings.sluice_nodes,
                         .max_keys = settings.max_keys});
  SyncedStore* raw = synced.get();
  instance.key_count = [raw] { return raw->keyCount(); };
  instance.store = std::move(synced);
  instance.description = "synced through redis " + settings.addresses.front();
  return instance;
}

// Every address is a seed; the other masters are discovered from them.
StoreInstance clusterStore(const policy::StoreSettings& settings) {
  StoreInstance instance;
  FailoverOptions failover = failoverOptions(settings);
  // One policy for both: the cluster store applies it to the failed slots of a request whose
  // other slots answered, the failover store to requests that failed as a whole.
  auto on_error = std::make_shared<OnErrorPolicy>(failover.on_error);
  auto cluster = std::make_unique<RedisClusterStore>(
      RedisClusterStoreOptions{.seeds = settings.addresses,
                               .connections = settings.connections,
                               .timeout_us = settings.timeout_us,
                               .key_prefix = settings.key_prefix,
                               .auth = auth(settings),
                               .breaker_failures = settings.breaker_failures,
                               .breaker_cooldown_us = settings.breaker_cooldown_us,
                               .on_error = on_error});
  // The cluster store breaks per master, so a dead master fails only its own slots' requests;
  // one breaker over every call on top would let those failures take the healthy masters'
  // requests to on_error as well.
  failover.use_breaker = false;
  instance.store = std::make_unique<FailoverStore>(std::move(cluster), failover, on_error);
  instance.key_count = [] { return std::size_t{0}; };  // the keys live in the cluster
  instance.description = "redis cluster " + settings.addresses.front();
  return instance;
}

}  // namespace

Result<StoreInstance> makeStore(const policy::StoreSettings& settings,
                                const std::vector<boost::asio::io_context*>& request_loops) {
  using Type = policy::StoreSettings::Type;
  if (settings.type == Type::kMemory) return memoryStore(settings);
  if (settings.addresses.empty()) return Error{"the store names no Redis address"};
  for (const std::string& address : settings.addresses) {
    if (Result<HostPort> parsed = splitAddress(address); !parsed.ok()) {
      return Error{parsed.error()};
    }
  }
  const HostPort server = splitAddress(settings.addresses.front()).value();
  switch (settings.type) {
    case Type::kRedis:
      return redisStore(settings, server, request_loops);
    case Type::kSynced:
      return syncedStore(settings, server);
    case Type::kRedisCluster:
      return clusterStore(settings);
    case Type::kMemory:
      break;  // made above
  }
  return memoryStore(settings);
}

}  // namespace sluice::server
