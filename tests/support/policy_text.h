// Test helper: a policy from YAML text, failing the test with every error if it does not load.
#pragma once

#include <string>
#include <vector>

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

// True if some error is exactly at `line` of test.yaml and mentions `text`.
inline bool hasError(const std::vector<std::string>& errors, int line, const std::string& text) {
  const std::string place = "test.yaml:" + std::to_string(line) + ":";
  for (const std::string& error : errors) {
    if (error.starts_with(place) && error.find(text) != std::string::npos) return true;
  }
  return false;
}

// The errors one to a line, for a failing test's message.
inline std::string describeErrors(const std::vector<std::string>& errors) {
  std::string out;
  for (const std::string& error : errors) out += error + "\n";
  return out;
}

}  // namespace sluice::testing
