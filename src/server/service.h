// Sluice as a service: the decision API, the auth subrequest endpoint and the admin endpoints,
// over one engine and store, with the policy swapped atomically on reload.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "engine/engine.h"
#include "http/rate_limit_headers.h"
#include "policy/decide.h"
#include "policy/policy.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "store/memory_store.h"

namespace sluice::server {

class Service {
 public:
  // `config_path` is re-read on reload. The store is sized from the initial policy; store
  // settings take effect on restart.
  Service(policy::PolicyPtr initial, std::string config_path, const Clock& clock);

  // The API listener: POST /v1/check, and /v1/auth for auth subrequests (any method).
  // `loop` is the connection's; a throttled request waits on a timer there.
  void handleApi(HttpRequest&& request, const boost::asio::ip::tcp::endpoint& peer,
                 boost::asio::io_context& loop, Respond respond);
  // The admin listener: /healthz, /readyz, /metrics, /admin/config, POST /admin/reload.
  void handleAdmin(HttpRequest&& request, const boost::asio::ip::tcp::endpoint& peer,
                   boost::asio::io_context& loop, Respond respond);

  // Thread-safe. Re-reads the configuration; on any error keeps the current policy and returns
  // the errors.
  std::vector<std::string> reload();

  [[nodiscard]] policy::PolicyPtr policy() const { return active_.load()->policy; }
  void setReady(bool ready) noexcept { ready_.store(ready); }

 private:
  struct Pending;  // a request between decisions while it is throttled

  // One item of the request, on its view or as a named limit; error for an unknown limit.
  Result<policy::PolicyDecision> decideItem(const Pending& pending, std::size_t index,
                                            Micros waited_us);
  void decideAndRespond(std::shared_ptr<Pending> pending);
  void respondCheck(const std::shared_ptr<Pending>& pending);

  // The policy in force and what is derived from it once rather than per response; swapped
  // whole on reload.
  struct Active {
    explicit Active(policy::PolicyPtr loaded);
    policy::PolicyPtr policy;
    sluice::http::HeaderOptions headers;
  };
  std::atomic<std::shared_ptr<const Active>> active_;
  std::string config_path_;
  const Clock& clock_;
  MemoryStore store_;
  Engine engine_;
  Metrics metrics_;
  std::atomic<bool> ready_{false};
};

}  // namespace sluice::server
