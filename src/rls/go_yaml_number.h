// Numbers as lyft/ratelimit reads them. Its YAML library (go-yaml v2) resolves a plain scalar
// by YAML 1.1's rules, not the decimal-only reading the rest of Sluice's configuration uses:
// `010` is octal 8, `0x10` is 16, `0b101` is 5, `1_000` is 1000, `+16` is 16, and `1e3` is a
// float that an integer field takes as 1000. A drop-in must read a file the same way, or a
// limit written `010` would silently be 10 here and 8 there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::rls {

// The value of `text`, a plain (unquoted) scalar, in an unsigned integer field, as go-yaml v2
// reads it; or nullopt with `problem` set to why not (not a number, negative, a fraction, or
// above 2^64 − 1). A float with a fraction is refused, as lyft refuses every float (its key
// check allows strings, integers, flags, lists and maps); a whole one (1e3, 1.0) is read, where
// lyft refuses it too.
[[nodiscard]] std::optional<std::uint64_t> goYamlUnsigned(std::string_view text,
                                                          std::string& problem);

}  // namespace sluice::rls
