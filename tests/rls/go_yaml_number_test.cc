// Numbers read as go-yaml v2 (lyft/ratelimit's YAML library) reads a plain scalar into an
// unsigned integer field.
#include "rls/go_yaml_number.h"

#include <gtest/gtest.h>

namespace sluice::rls {
namespace {

std::optional<std::uint64_t> read(std::string_view text) {
  std::string problem;
  const auto value = goYamlUnsigned(text, problem);
  EXPECT_EQ(value.has_value(), problem.empty()) << text << ": " << problem;
  return value;
}

TEST(GoYamlNumberTest, IntegersInEveryBaseGoYamlReads) {
  EXPECT_EQ(read("16"), 16U);
  EXPECT_EQ(read("+16"), 16U);
  EXPECT_EQ(read("0"), 0U);
  EXPECT_EQ(read("-0"), 0U);
  EXPECT_EQ(read("010"), 8U);  // YAML 1.1 octal
  EXPECT_EQ(read("0o17"), 15U);
  EXPECT_EQ(read("0x10"), 16U);
  EXPECT_EQ(read("0XfF"), 255U);
  EXPECT_EQ(read("0b101"), 5U);
  EXPECT_EQ(read("1_000"), 1000U);  // underscores dropped, wherever they stand
  EXPECT_EQ(read("0x_1_0"), 16U);
  EXPECT_EQ(read("18446744073709551615"), 18446744073709551615ULL);
}

// Not an integer in any base, but a YAML float: go-yaml stores its value in the integer field.
TEST(GoYamlNumberTest, FloatsWithoutAFractionAreTheirValue) {
  EXPECT_EQ(read("09"), 9U);  // not octal, so a float
  EXPECT_EQ(read("1e3"), 1000U);
  EXPECT_EQ(read("16.0"), 16U);
  EXPECT_EQ(read("16."), 16U);
  EXPECT_EQ(read("+2.5e1"), 25U);
}

TEST(GoYamlNumberTest, RefusesWhatIsNoWholeNumberOrDoesNotFit) {
  std::string problem;
  for (const std::string_view text :
       {"", "_", "0x", "0b2", "0o8", "ten", "16 ", "1,000", ".inf", ".nan", "0x1p4", "1e", "--1"}) {
    problem.clear();
    EXPECT_FALSE(goYamlUnsigned(text, problem).has_value()) << text;
    EXPECT_EQ(problem, "must be a whole number") << text;
  }
  EXPECT_FALSE(goYamlUnsigned("-1", problem).has_value());
  EXPECT_EQ(problem, "must not be negative");
  EXPECT_FALSE(goYamlUnsigned("-1e2", problem).has_value());
  EXPECT_EQ(problem, "must not be negative");
  EXPECT_FALSE(goYamlUnsigned("16.5", problem).has_value());
  EXPECT_NE(problem.find("fraction"), std::string::npos);
  EXPECT_FALSE(goYamlUnsigned(".5", problem).has_value());
  EXPECT_NE(problem.find("fraction"), std::string::npos);
  EXPECT_FALSE(goYamlUnsigned("18446744073709551616", problem).has_value());
  EXPECT_FALSE(goYamlUnsigned("1e20", problem).has_value());
  EXPECT_EQ(problem, "is too large");
}

}  // namespace
}  // namespace sluice::rls
