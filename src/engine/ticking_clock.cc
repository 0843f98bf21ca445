#include <condition_variable>
#include <mutex>
#include <thread>

#include "sluice/time.h"

namespace sluice {

struct TickingClock::Ticker {
  SystemClock source;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::thread thread;
};

TickingClock::TickingClock(Micros tick_us) : ticker_(std::make_unique<Ticker>()) {
  now_us_.store(ticker_->source.now(), std::memory_order_relaxed);
  ticker_->thread = std::thread([this, tick_us] {
    Ticker& ticker = *ticker_;
    std::unique_lock lock(ticker.mutex);
    while (!ticker.wake.wait_for(lock, std::chrono::microseconds(tick_us),
                                 [&] { return ticker.stopping; })) {
      now_us_.store(ticker.source.now(), std::memory_order_relaxed);
    }
  });
}

TickingClock::~TickingClock() {
  {
    std::lock_guard lock(ticker_->mutex);
    ticker_->stopping = true;
  }
  ticker_->wake.notify_one();
  ticker_->thread.join();
}

}  // namespace sluice
