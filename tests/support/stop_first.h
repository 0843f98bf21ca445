// Test helper: declared after an object that running event loops use (a store, an inbox), it
// stops the loops before that object goes, as those objects require, on every way out of a test
// (a failed ASSERT included). `Loops` is anything with an idempotent stop().
#pragma once

namespace sluice::testing {

template <typename Loops>
class StopFirst {
 public:
  explicit StopFirst(Loops& loops) : loops_(loops) {}
  ~StopFirst() { loops_.stop(); }
  StopFirst(const StopFirst&) = delete;
  StopFirst& operator=(const StopFirst&) = delete;

 private:
  Loops& loops_;
};

}  // namespace sluice::testing
