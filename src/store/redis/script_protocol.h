// The contract between the C++ Redis stores and the Lua script they run (src/store/redis/lua/).
// One script serves every algorithm and operation, so all limits of a request that live on one
// Redis (or one cluster slot) decide in one EVALSHA: one round trip, all-or-nothing.
//
// Call:  EVALSHA <sha> <n> key_1 .. key_n  op  now_us  S  spec_1 .. spec_S  [batch]  check runs
//   op       "decide" | "batch" | "refund" | "sync"
//   now_us   "" reads Redis TIME (production: every node sees one clock); a decimal number sets
//            the time (the trace tests replay exact instants)
//   S        how many distinct specs the checks use; each is sent once, as kArgsPerSpec decimal
//            integers in this order:
//     algorithm     static_cast<int>(sluice::Algorithm)
//     count         spec.rate().count
//     period_us     spec.rate().period_us
//     burst         spec.burst()
//     unit_weight   spec.unitWeight()
//     drain_per_us  spec.drainPerMicro()
//   batch    batch only: R (at least 1), then R runs of consecutive requests, each run two
//            decimal integers: how many requests (at least 1), and how many checks each of them
//            has (at least 1); the runs, in order, cover key_1 .. key_n exactly
//   check runs  the checks of key_1 .. key_n, in order and covering them exactly, as runs of
//            consecutive checks with the same spec and cost, kArgsPerCheckRun decimal integers
//            each (a run need not be the longest possible: equal neighbours may be split):
//     checks        how many consecutive keys the run covers (at least 1)
//     spec          which of the S specs (1-based)
//     cost          the request's cost (decide), the amount to give back (refund), or the units
//                   this node consumed since its last sync (sync)
//   (Most calls carry many keys under one or two limits, nearly all at cost 1: sending each spec
//   once and the checks as runs spares the script parsing numbers per key, and Redis making
//   strings for them. The script's time goes mostly to such per-argument work.)
//
// Replies:
//   decide  one bulk string of numbers, each kBytesPerPackedNumber bytes: a little-endian IEEE
//           double holding an integer below 2^53 in magnitude; now_us, then
//           kDecideFieldsPerCheck per check:
//            allowed (0|1), reason (DenyReason), limit, remaining, reset_after_us,
//            retry_after_us (-1 for kNever), delay_us
//           (Not an array of integers: hiredis makes an object per array element, seven per
//           check, which cost the caller more than the script's packing costs Redis.)
//           Exactly MemoryStore's semantics: when every check allows, every one is consumed;
//           when any denies, none is, and the others report their state as it is.
//   batch   the same reply as decide over all the checks. Each request (a run of consecutive
//           checks, as the counts say) is decided as one decide would decide it, all-or-nothing
//           on its own, in order: a later request sees what an earlier one consumed. Lets a
//           node send the requests that queued while its calls were in flight in one call.
//   refund  [now_us], an array of integers. Gives `cost` back to each key, as if the
//           consumption made at `now_us` (which must be the now_us the decide reply gave) had
//           not happened; the refund never leaves a key with more than it would have had. Used
//           by Redis Cluster when a request's limits live on several slots
//           (consume-then-refund).
//   sync    an array of integers: [now_us, then per check the state's two fields a, b as
//           algorithm::CompactState encodes them] after consuming `cost` unconditionally (a
//           sync records what the node already admitted; it can leave a key over its limit,
//           which then denies until it drains). Not for the sliding window log, whose state is
//           not compact.
//
// Keys carry a TTL: a key is written with SET ... PX until its state is back to full (or its
// window ends), so idle keys disappear from Redis as they do from MemoryStore. What a key holds
// (a short binary string per counter, see main.lua) is the script's own business: the C++ side
// reads only replies.
//
// Lua numbers are doubles: the script's integer arithmetic is exact only below 2^53.
// luaIncompatibility() (lua_bounds.h) says which specs exceed that; the stores refuse them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::redis {

inline constexpr std::size_t kArgsPerSpec = 6;
inline constexpr std::size_t kArgsPerCheckRun = 3;
inline constexpr std::size_t kDecideFieldsPerCheck = 7;
inline constexpr std::size_t kBytesPerPackedNumber = 8;
inline constexpr long long kNeverOnWire = -1;
// Lua's numbers are doubles: integers are exact below this, in magnitude.
inline constexpr std::uint64_t kExactIntegersBelow = std::uint64_t{1} << 53;

}  // namespace sluice::redis
