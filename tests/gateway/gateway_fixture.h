// Test helper: a Gateway over a real TestUpstream, in-process, on 127.0.0.1 with a free port,
// built from YAML in which UPSTREAM stands for the test upstream's address.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <string>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "gateway/gateway.h"
#include "gateway/test_upstream.h"
#include "server/io_pool.h"
#include "store/memory_store.h"
#include "support/fresh_day_clock.h"
#include "support/policy_text.h"

namespace sluice::testing {

// The memory store, counting the decisions asked of it: how tests see how often requests held
// by a throttle decide again. While `unavailable`, it decides nothing, as a store that cannot be
// reached.
class CountingStore final : public Store {
 public:
  [[nodiscard]] StoreStatus apply(std::span<const LimitCheck> checks, const Clock& clock,
                                  std::span<Outcome> outcomes) noexcept override {
    applies.fetch_add(1, std::memory_order_relaxed);
    if (unavailable.load()) return StoreStatus::kUnavailable;
    return inner_.apply(checks, clock, outcomes);
  }
  [[nodiscard]] bool decidesInline() const noexcept override { return true; }

  std::atomic<int> applies{0};
  std::atomic<bool> unavailable{false};

 private:
  MemoryStore inner_;
};

class GatewayFixture : public ::testing::Test {
 protected:
  void TearDown() override {
    if (gateway_ != nullptr) gateway_->shutdown();
    pool_.stop();
  }

  // Loads policy and gateway sections from `yaml` and starts the gateway.
  void start(std::string yaml) {
    for (std::size_t at = yaml.find("UPSTREAM"); at != std::string::npos;
         at = yaml.find("UPSTREAM")) {
      yaml.replace(at, 8, upstream_.address());
    }
    policy_ = policyFrom(yaml);
    ASSERT_NE(policy_, nullptr);
    auto settings = gateway::loadGatewaySettingsText(yaml, "test.yaml");
    ASSERT_TRUE(settings.ok()) << settings.error();
    ASSERT_TRUE(settings.value().has_value());
    gateway::GatewaySettings loaded = *settings.value();
    loaded.listen = "127.0.0.1:0";
    gateway_ = std::make_unique<gateway::Gateway>(
        pool_, engine_, clock_, [this] { return policy_; }, std::move(loaded), &metrics_);
    auto bound = gateway_->listen();
    ASSERT_TRUE(bound.ok()) << bound.error();
    endpoint_ = bound.value();
    pool_.run(false);
  }

  TestUpstream upstream_;
  FreshDayClock clock_;  // `limited` is a fixed window on the clock's minutes
  CountingStore store_;
  Engine engine_{store_, clock_};
  server::IoPool pool_{2};
  server::Metrics metrics_;  // the service's, in `sluice serve`
  policy::PolicyPtr policy_;
  std::unique_ptr<gateway::Gateway> gateway_;
  boost::asio::ip::tcp::endpoint endpoint_;
};

}  // namespace sluice::testing
