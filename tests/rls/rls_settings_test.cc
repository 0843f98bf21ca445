#include "rls/rls_settings.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "policy/policy_loader.h"
#include "rls/lyft_config.h"

namespace sluice::rls {
namespace {

// Without an envoy_rls section the door is off.
TEST(RlsSettingsTest, AbsentSectionIsOff) {
  const auto settings = loadRlsSettingsText("limits: []\n", "s.yaml", "/etc/sluice");
  ASSERT_TRUE(settings.ok());
  EXPECT_FALSE(settings.value().has_value());
}

// Every key is read; config_dir is relative to the YAML file's directory.
TEST(RlsSettingsTest, ReadsTheSection) {
  const auto settings = loadRlsSettingsText(
      "envoy_rls:\n  listen: 127.0.0.1:0\n  config_dir: ratelimit/config\n"
      "  response_headers: true\n  shadow_mode: true\n  unknown_domain: allow\n",
      "s.yaml", "/etc/sluice");
  ASSERT_TRUE(settings.ok()) << settings.error();
  const RlsSettings& value = *settings.value();
  EXPECT_EQ(value.listen, "127.0.0.1:0");
  EXPECT_EQ(value.config_dir, "/etc/sluice/ratelimit/config");
  EXPECT_TRUE(value.decider.response_headers);
  EXPECT_TRUE(value.decider.shadow_mode);
  EXPECT_FALSE(value.decider.unknown_domain_is_error);
}

// A directory holding a NUL byte (YAML's "\0") is refused at its line: opendir would stop there.
TEST(RlsSettingsTest, AConfigDirHoldingANulByteIsRefused) {
  const auto settings = loadRlsSettingsText("envoy_rls:\n  config_dir: \"/srv/rl\\0/old\"\n",
                                            "s.yaml", "/etc/sluice");
  ASSERT_FALSE(settings.ok());
  EXPECT_NE(settings.error().find("s.yaml:2:15: envoy_rls.config_dir holds a NUL byte"),
            std::string::npos)
      << settings.error();
}

// A config_dir that cannot be read is an error at config_dir's line in the Sluice config; errors
// of the lyft files in it are at their own file's lines, as they were.
TEST(RlsSettingsTest, AnUnreadableConfigDirIsReportedAtItsLine) {
  const std::string missing = ::testing::TempDir() + "/no-such-lyft-dir";
  const auto settings = loadRlsSettingsText(
      "envoy_rls:\n  listen: 127.0.0.1:0\n  config_dir: " + missing + "\n", "s.yaml", "/x");
  ASSERT_TRUE(settings.ok()) << settings.error();
  const LyftLoadResult unreadable = loadConfiguredLyftFiles(*settings.value());
  ASSERT_EQ(unreadable.errors.size(), 1u);
  EXPECT_EQ(unreadable.errors[0].rfind(
                "s.yaml:3:15: envoy_rls.config_dir: " + missing + ": cannot read the directory", 0),
            0u)
      << unreadable.errors[0];

  const std::filesystem::path dir = ::testing::TempDir() + "/bad-lyft-dir";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "x.yaml") << "domain: a\ndescriptors: 5\n";
  const auto with_bad_file =
      loadRlsSettingsText("envoy_rls:\n  config_dir: " + dir.string() + "\n", "s.yaml", "/x");
  ASSERT_TRUE(with_bad_file.ok()) << with_bad_file.error();
  const LyftLoadResult bad = loadConfiguredLyftFiles(*with_bad_file.value());
  ASSERT_FALSE(bad.errors.empty());
  EXPECT_EQ(bad.errors[0].rfind((dir / "x.yaml").string() + ":2:", 0), 0u) << bad.errors[0];
}

// response_headers may pick header families; absolute directories stay as they are.
TEST(RlsSettingsTest, HeaderFamilies) {
  const auto settings = loadRlsSettingsText(
      "envoy_rls: {config_dir: /srv/rl, response_headers: {ietf: true, retry_after: false}}\n",
      "s.yaml", "/etc/sluice");
  ASSERT_TRUE(settings.ok()) << settings.error();
  const RlsSettings& value = *settings.value();
  EXPECT_EQ(value.config_dir, "/srv/rl");
  EXPECT_EQ(value.listen, "127.0.0.1:8081");
  EXPECT_TRUE(value.decider.response_headers);
  EXPECT_TRUE(value.decider.headers.x_ratelimit);
  EXPECT_TRUE(value.decider.headers.ietf);
  EXPECT_FALSE(value.decider.headers.retry_after);
  EXPECT_TRUE(value.decider.unknown_domain_is_error);
}

// response_headers may rename the headers, as the policy's headers.names does: lyft's own
// RateLimit-Limit / -Remaining / -Reset for clients written against lyft/ratelimit. A name that
// is not an HTTP token is an error at its line.
TEST(RlsSettingsTest, HeaderNames) {
  const auto settings = loadRlsSettingsText(
      "envoy_rls:\n  config_dir: /srv/rl\n  response_headers:\n    names: {limit: RateLimit-Limit, "
      "remaining: RateLimit-Remaining, reset: RateLimit-Reset}\n",
      "s.yaml", "/etc/sluice");
  ASSERT_TRUE(settings.ok()) << settings.error();
  const DeciderOptions& decider = settings.value()->decider;
  EXPECT_TRUE(decider.response_headers);
  EXPECT_TRUE(decider.headers.x_ratelimit);
  EXPECT_FALSE(decider.headers.ietf);
  EXPECT_EQ(decider.headers.names.limit, "RateLimit-Limit");
  EXPECT_EQ(decider.headers.names.remaining, "RateLimit-Remaining");
  EXPECT_EQ(decider.headers.names.reset, "RateLimit-Reset");
  EXPECT_EQ(decider.headers.names.retry_after, "Retry-After");
  const auto bad = loadRlsSettingsText(
      "envoy_rls:\n  config_dir: /srv/rl\n  response_headers: {names: {limit: \"Rate Limit\"}}\n",
      "s.yaml", "/x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("s.yaml:3:"), std::string::npos) << bad.error();
  EXPECT_NE(bad.error().find("envoy_rls.response_headers.names.limit"), std::string::npos)
      << bad.error();
}

// The directory is watched every second unless told otherwise; 0 turns it off, and an interval
// outside 10ms..1h is an error at its line.
TEST(RlsSettingsTest, WatchInterval) {
  const auto with = [](const std::string& every) {
    return loadRlsSettingsText("envoy_rls:\n  config_dir: /srv/rl\n" +
                                   (every.empty() ? "" : "  watch_interval: " + every + "\n"),
                               "s.yaml", "");
  };
  EXPECT_EQ(with("").value()->watch_interval_us, kMicrosPerSecond);
  EXPECT_EQ(with("0").value()->watch_interval_us, 0);
  EXPECT_EQ(with("250ms").value()->watch_interval_us, 250 * kMicrosPerMilli);
  for (const char* bad : {"5ms", "2h"}) {
    const auto refused = with(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.error().find("s.yaml:3:19: envoy_rls.watch_interval must be 0 (off)"),
              std::string::npos)
        << refused.error();
  }
}

// Mistakes are listed with file:line:column.
TEST(RlsSettingsTest, ErrorsHaveTheirPlace) {
  const auto settings = loadRlsSettingsText(
      "limits: []\nenvoy_rls:\n  listen: localhost:8081\n  unknown_domain: maybe\n  port: 1\n",
      "s.yaml", "");
  ASSERT_FALSE(settings.ok());
  const std::string& error = settings.error();
  EXPECT_NE(error.find("s.yaml:3:11: envoy_rls.listen must be an IP address"), std::string::npos)
      << error;
  EXPECT_NE(error.find("s.yaml:4:"), std::string::npos) << error;
  EXPECT_NE(error.find("unknown key \"port\""), std::string::npos) << error;
  EXPECT_NE(error.find("config_dir is required"), std::string::npos) << error;
}

// An unreadable file is an error that names it.
TEST(RlsSettingsTest, MissingFile) {
  const auto settings = loadRlsSettings("/nonexistent/sluice.yaml");
  ASSERT_FALSE(settings.ok());
  EXPECT_NE(settings.error().find("/nonexistent/sluice.yaml"), std::string::npos);
}

// The Envoy example is a valid Sluice config whose envoy_rls section points at a valid lyft
// config directory.
TEST(RlsSettingsTest, EnvoyExampleLoads) {
  const std::string path = std::string(SLUICE_SOURCE_DIR) + "/examples/envoy/sluice.yaml";
  const policy::LoadResult policy = policy::loadPolicy(path);
  EXPECT_NE(policy.policy, nullptr) << (policy.errors.empty() ? "" : policy.errors.front());
  const auto settings = loadRlsSettings(path);
  ASSERT_TRUE(settings.ok()) << settings.error();
  ASSERT_TRUE(settings.value().has_value());
  const LyftLoadResult lyft = loadLyftConfigDir(settings.value()->config_dir);
  ASSERT_NE(lyft.config, nullptr) << lyft.errors.front();
  EXPECT_NE(lyft.config->domain("edge"), nullptr);
}

// A reload reloads the lyft files only: an edit to the envoy_rls section itself is reported as
// taking effect at restart, and an edit elsewhere (or to comments) is not; a section edited into
// errors refuses the reload, and so does a config_dir moved to a directory whose lyft files
// would not load (the next start would fail on them).
TEST(RlsSettingsTest, ReloadWarnsThatSectionEditsWaitForRestart) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("sluice-rls-settings-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  const auto lyftDir = [&](const std::string& name, const std::string& unit) {
    std::filesystem::create_directories(dir / name);
    std::ofstream(dir / name / "config.yaml")
        << "domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: " << unit
        << ", requests_per_unit: 5 }\n";
    return (dir / name).string();
  };
  const std::string running_dir = lyftDir("rl", "minute");
  const std::string other_dir = lyftDir("other", "hour");
  const std::string broken_dir = lyftDir("broken", "fortnight");
  const auto path = dir / "sluice.yaml";
  const auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  // The file as a reload reads it, once.
  const auto reread = [&] { return policy::readConfigFile(path.string()).value(); };
  const auto sectionAt = [](const std::string& config_dir, bool shadow) {
    return "envoy_rls:\n  config_dir: " + config_dir +
           "\n  shadow_mode: " + (shadow ? "true" : "false") + "\n";
  };
  const std::string section = sectionAt(running_dir, false);
  write("limits: []\n" + section);
  const auto running = loadRlsSettings(path.string());
  ASSERT_TRUE(running.ok() && running.value()) << running.error();
  const RlsSettings& settings = *running.value();
  EXPECT_EQ(restartOnlyChange(settings, reread()), std::nullopt);
  write("limits: [] # other limits\n" + section + "  # a comment\n");
  EXPECT_EQ(restartOnlyChange(settings, reread()), std::nullopt);
  for (const std::string& edited :
       {sectionAt(running_dir, true), sectionAt(other_dir, false), std::string("server: {}\n")}) {
    write("limits: []\n" + edited);
    const auto change = restartOnlyChange(settings, reread());
    ASSERT_TRUE(change.has_value()) << edited;
    EXPECT_FALSE(change->refuses) << change->text;
    EXPECT_NE(change->text.find("restart"), std::string::npos) << change->text;
  }
  // A section with errors would stop the next start: the reload is refused.
  write("limits: []\n" + section + "  colour: red\n");
  const auto broken = restartOnlyChange(settings, reread());
  ASSERT_TRUE(broken.has_value());
  EXPECT_TRUE(broken->refuses);
  EXPECT_NE(broken->text.find("colour"), std::string::npos) << broken->text;
  // So would lyft files that do not load, or no directory at all, at the config_dir it names.
  for (const auto& [config_dir, expected] :
       {std::pair{broken_dir, std::string("fortnight")},
        std::pair{(dir / "nowhere").string(), std::string("envoy_rls.config_dir")}}) {
    write("limits: []\n" + sectionAt(config_dir, false));
    const auto unloadable = restartOnlyChange(settings, reread());
    ASSERT_TRUE(unloadable.has_value()) << config_dir;
    EXPECT_TRUE(unloadable->refuses) << unloadable->text;
    EXPECT_NE(unloadable->text.find(expected), std::string::npos) << unloadable->text;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::rls
