// The fixture of the decision tests: a policy loaded from text, an in-memory engine on a fake
// clock, and requests from one address. decide_test.cc covers how a request's limits decide
// together (all or nothing, shadow, throttle, the asynchronous path, paths);
// decide_identity_test.cc who the request is counted as (API keys and tiers, addresses, forwarded
// addresses, JWT claims, JSON paths, a missing key part).
#pragma once

#include <string>

#include <gtest/gtest.h>
#include <boost/asio/ip/address.hpp>

#include "policy/decide.h"
#include "store/memory_store.h"
#include "support/policy_text.h"
#include "support/specs.h"

namespace sluice::policy {

class DecideTest : public ::testing::Test {
 protected:
  void load(const std::string& yaml) { policy_ = sluice::testing::policyFrom(yaml); }

  RequestView request(const std::string& path, const std::string& ip = "198.51.100.7") {
    RequestView view;
    view.method = "GET";
    view.setPath(path);
    view.peer = boost::asio::ip::make_address(ip);
    return view;
  }
  PolicyDecision decideFor(const RequestView& view, Micros waited_us = 0) {
    const RequestContext context = resolveIdentity(*policy_, view, clock_.now() / kMicrosPerSecond);
    return decide(*policy_, context, engine_, waited_us);
  }

  FakeClock clock_{sluice::testing::kJan2026};
  MemoryStore store_{MemoryStoreOptions{10'000, 4}};
  Engine engine_{store_, clock_};
  PolicyPtr policy_;
};

}  // namespace sluice::policy
