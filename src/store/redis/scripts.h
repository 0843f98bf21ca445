// The Lua script the Redis stores load (SCRIPT LOAD) and run (EVALSHA), embedded at build time
// from src/store/redis/lua/*.lua. Its arguments, replies and semantics: script_protocol.h.
#pragma once

#include <string_view>

namespace sluice::redis {

// The whole script: one script serves every algorithm and the decide, refund and sync
// operations. Thread-safe; the view is valid for the life of the program.
[[nodiscard]] std::string_view sluiceScript() noexcept;

}  // namespace sluice::redis
