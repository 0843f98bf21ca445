// Builds the store the configuration names: in memory, one Redis, a Redis Cluster, or synced.
// Shared stores come wrapped in their failure policy (FailoverStore); the synced store decides
// locally and needs none.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "policy/policy.h"
#include "sluice/result.h"
#include "store/store.h"

namespace sluice::server {

struct StoreInstance {
  std::unique_ptr<Store> store;
  std::function<std::size_t()> key_count;  // counters held in this process, for /metrics
  std::string description;                 // e.g. "redis 127.0.0.1:6379", for the log
};

// Error for an address that cannot be used. Shared stores connect in the background.
// `request_loops`: the server's event loops, which will call the store; a Redis store gives
// each its own connections (redis_store.h). Precondition: they run only while the store lives.
[[nodiscard]] Result<StoreInstance> makeStore(
    const policy::StoreSettings& settings,
    const std::vector<boost::asio::io_context*>& request_loops = {});

}  // namespace sluice::server
