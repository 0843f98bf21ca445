// Test helper: a policy from YAML text, failing the test with every error if it does not load.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "policy/policy_loader.h"

namespace sluice::testing {

inline policy::PolicyPtr policyFrom(const std::string& yaml, const std::string& base_dir = "") {
  policy::LoadResult loaded = policy::loadPolicyText(yaml, "test.yaml", base_dir);
  std::string errors;
  for (const std::string& error : loaded.errors) errors += error + "\n";
  EXPECT_NE(loaded.policy, nullptr) << errors;
  return loaded.policy;
}

// The errors of a configuration that must not load.
inline std::vector<std::string> errorsOf(const std::string& yaml,
                                         const std::string& base_dir = "") {
  policy::LoadResult loaded = policy::loadPolicyText(yaml, "test.yaml", base_dir);
  EXPECT_EQ(loaded.policy, nullptr);
  return loaded.errors;
}

}  // namespace sluice::testing
