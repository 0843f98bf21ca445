// How a limit's counter is named in Redis, and which Redis Cluster slot that name lands in.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/decision.h"

namespace sluice::redis {

inline constexpr std::uint16_t kClusterSlots = 16384;

// "{<tag>}<prefix><key>|<algorithm>|<period_us>" (plus "|<count>" for the states scaled by the
// rate), so limits with different numbers never share state, as in MemoryStore. The tag is a
// hash of the check's group, so a client's limits share a cluster slot, and no byte of the key
// (which may be anything) can change which part Redis hashes.
[[nodiscard]] std::string redisKey(std::string_view prefix, const LimitCheck& check);

// The cluster slot of a Redis key: CRC16 (XMODEM) of its hash tag, or of the whole key when it
// has no tag, modulo 16384, as Redis Cluster defines it.
[[nodiscard]] std::uint16_t hashSlot(std::string_view key) noexcept;

}  // namespace sluice::redis
