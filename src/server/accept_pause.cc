#include "server/accept_pause.h"

#include <atomic>
#include <chrono>

#include <spdlog/spdlog.h>

#include <boost/asio/steady_timer.hpp>

namespace sluice::server {
namespace {

// Long enough that a listener out of descriptors costs nothing, short enough that service
// resumes within a tenth of a second once connections close.
constexpr std::chrono::milliseconds kAcceptPause{100};

bool logNow() {
  static std::atomic<std::int64_t> last_us{0};
  const std::int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::steady_clock::now().time_since_epoch())
                                  .count();
  std::int64_t last = last_us.load(std::memory_order_relaxed);
  return now_us - last >= 1'000'000 &&
         last_us.compare_exchange_strong(last, now_us, std::memory_order_relaxed);
}

}  // namespace

void pauseAccepting(const std::shared_ptr<boost::asio::ip::tcp::acceptor>& acceptor,
                    const boost::system::error_code& error, std::string_view listener,
                    std::function<void()> accept_again) {
  if (logNow()) {
    spdlog::warn(
        "{}: accept failed ({}); new connections wait in the backlog, retrying every {} ms",
        listener, error.message(), kAcceptPause.count());
  }
  auto timer = std::make_shared<boost::asio::steady_timer>(acceptor->get_executor(), kAcceptPause);
  timer->async_wait([timer, acceptor, accept_again = std::move(accept_again)](
                        const boost::system::error_code& waited) {
    if (waited || !acceptor->is_open()) return;
    accept_again();
  });
}

}  // namespace sluice::server
