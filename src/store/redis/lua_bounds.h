// Which specs the Redis Lua script (src/store/redis/lua/) computes exactly. Lua 5.1 numbers are
// doubles, exact for integers below 2^53 only; the C++ algorithms use 64- and 128-bit integers.
#pragma once

#include <optional>
#include <string>

#include "sluice/limit_spec.h"

namespace sluice::redis {

// Thread-safe. A human-readable reason when some value the script forms for `spec` could reach
// 2^53 (so its outcomes could differ from the C++ algorithm's), else nullopt. The rule:
//  - token bucket, leaky bucket meter and shaper, GCRA: burst × unitWeight + drainPerMicro
//    (the scaled capacity, plus GCRA's largest fraction) must be below 2^53;
//  - token bucket with interval refill: ceil(burst / count) × period_us (the time to refill
//    from empty) must be below 2^53;
//  - sliding window counter: the count must be below 2^21, since the state's b packs the
//    previous window's count above 32 bits of the current one (CompactState's layout);
//  - fixed window, sliding window log: every spec LimitSpec accepts.
// Instants (now_us) must also be below 2^53 µs, which holds until the year 2255.
[[nodiscard]] std::optional<std::string> luaIncompatibility(const LimitSpec& spec);

}  // namespace sluice::redis
