// Which Redis Cluster master serves which hash slot, as CLUSTER SLOTS reports it, and the
// redirections (MOVED, ASK) a node answers with when it does not serve a key's slot.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/redis/redis_keys.h"

struct redisReply;

namespace sluice::redis {

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};

// "host:port" (the host may be an IPv6 literal with colons; the port follows the last one).
// Nullopt when there is no colon or the port is not 1..65535.
[[nodiscard]] std::optional<HostPort> splitHostPort(std::string_view address);

struct SlotMap {
  static constexpr std::int32_t kNoMaster = -1;

  // "host:port" of each master, in the order the reply first names them.
  std::vector<std::string> masters;
  // Index into `masters` per slot, or kNoMaster for a slot no master serves.
  std::array<std::int32_t, kClusterSlots> owner;

  SlotMap() { owner.fill(kNoMaster); }
};

// A CLUSTER SLOTS reply into `map`. `asked_host` stands in for an empty endpoint, which Redis
// sends to mean "the host you asked". Error text for an error reply or a malformed one; a reply
// that leaves every slot without a master is an error too (the node is not in a cluster yet).
[[nodiscard]] std::optional<std::string> readClusterSlots(const redisReply* reply,
                                                          std::string_view asked_host,
                                                          SlotMap& map);

// A MOVED or ASK error reply: "MOVED <slot> <host:port>" / "ASK <slot> <host:port>".
struct Redirect {
  enum class Kind : std::uint8_t { kMoved, kAsk };
  Kind kind = Kind::kMoved;
  std::uint16_t slot = 0;
  std::string address;  // "host:port", the host filled in from `asked_host` when Redis omits it
};

// Nullopt when `error` (an error reply's text) is not a well-formed redirection.
[[nodiscard]] std::optional<Redirect> readRedirect(std::string_view error,
                                                   std::string_view asked_host);

}  // namespace sluice::redis
