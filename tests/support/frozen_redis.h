// Test helper: freezing a real redis-server (SIGSTOP) for a scope, so it keeps its connections
// open but answers nothing, as a Redis stalled by a slow command or a paused VM does.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <stdexcept>
#include <string>

#include "support/redis_server.h"

namespace sluice::testing {

// The redis-server's pid, read from INFO: RedisServer does not expose it.
inline pid_t redisPid(const RedisServer& server) {
  const std::string info = server.connect().command({"INFO", "server"}).text;
  const std::string field = "process_id:";
  const auto at = info.find(field);
  if (at == std::string::npos) throw std::runtime_error("INFO server has no process_id");
  return static_cast<pid_t>(std::stol(info.substr(at + field.size())));
}

// Resumes a SIGSTOPped process when the test leaves the scope, whatever its assertions did.
class Frozen {
 public:
  explicit Frozen(pid_t pid) : pid_(pid) { kill(pid_, SIGSTOP); }
  ~Frozen() { thaw(); }
  Frozen(const Frozen&) = delete;
  Frozen& operator=(const Frozen&) = delete;
  void thaw() {
    if (pid_ > 0) kill(pid_, SIGCONT);
    pid_ = -1;
  }

 private:
  pid_t pid_;
};

}  // namespace sluice::testing
