#include "rls/rls_settings.h"

#include "http/rate_limit_headers.h"
#include "policy/header_settings_loader.h"
#include "policy/ip_endpoint.h"
#include "policy/section_change.h"
#include "policy/yaml_fields.h"

namespace sluice::rls {
namespace {

using policy::Errors;

void loadHeaderSwitch(const YAML::Node& node, DeciderOptions& options, Errors& errors) {
  if (node.IsScalar()) {
    options.response_headers =
        policy::boolValue(node, "envoy_rls.response_headers", errors).value_or(false);
    return;
  }
  // The policy's `headers:` vocabulary, with this door's defaults (no IETF pair). `names`
  // gives lyft's own set: {limit: RateLimit-Limit, remaining: RateLimit-Remaining, reset:
  // RateLimit-Reset}.
  policy::HeaderSettings settings{.x_ratelimit = options.headers.x_ratelimit,
                                  .ietf = options.headers.ietf,
                                  .retry_after = options.headers.retry_after,
                                  .names = {}};
  policy::loadHeaderSettings(node, "envoy_rls.response_headers", settings, errors);
  options.response_headers = true;
  options.headers = http::headerOptionsFor(settings);
}

void loadSection(const YAML::Node& node, const std::string& base_dir, RlsSettings& settings,
                 Errors& errors) {
  if (!policy::isMap(node, "envoy_rls", errors)) return;
  policy::checkKeys(node, "envoy_rls",
                    {"listen", "config_dir", "watch_interval", "response_headers", "shadow_mode",
                     "unknown_domain"},
                    errors);
  if (node["listen"]) {
    settings.listen = policy::scalar(node["listen"], "envoy_rls.listen", errors).value_or("");
    if (!policy::parseEndpoint(settings.listen).ok()) {
      errors.add(node["listen"],
                 "envoy_rls.listen must be an IP address and port, e.g. "
                 "127.0.0.1:8081");
    }
  }
  if (!node["config_dir"]) {
    errors.add(node, "envoy_rls.config_dir is required: the lyft/ratelimit config directory");
  } else if (auto dir = policy::pathValue(node["config_dir"], "envoy_rls.config_dir", errors)) {
    settings.config_dir = policy::resolvePath(base_dir, *dir);
  }
  if (node["watch_interval"]) {
    const auto every =
        policy::durationValue(node["watch_interval"], "envoy_rls.watch_interval", errors);
    if (every && *every != 0 && (*every < 10 * kMicrosPerMilli || *every > kMicrosPerHour)) {
      errors.add(node["watch_interval"],
                 "envoy_rls.watch_interval must be 0 (off) or from 10ms to 1h");
    } else if (every) {
      settings.watch_interval_us = *every;
    }
  }
  if (node["response_headers"])
    loadHeaderSwitch(node["response_headers"], settings.decider, errors);
  if (node["shadow_mode"]) {
    settings.decider.shadow_mode =
        policy::boolValue(node["shadow_mode"], "envoy_rls.shadow_mode", errors).value_or(false);
  }
  if (node["unknown_domain"]) {
    const auto text = policy::scalar(node["unknown_domain"], "envoy_rls.unknown_domain", errors);
    if (text && *text != "error" && *text != "allow") {
      errors.add(node["unknown_domain"], "envoy_rls.unknown_domain must be error or allow");
    }
    settings.decider.unknown_domain_is_error = !text || *text != "allow";
  }
}

}  // namespace

Result<std::optional<RlsSettings>> loadRlsSettingsText(const std::string& yaml,
                                                       const std::string& source,
                                                       const std::string& base_dir) {
  Errors errors(source);
  RlsSettings settings;
  bool present = false;
  policy::checkConfigText(yaml, errors);  // the policy loader's message, not the parser's
  if (errors.empty()) {
    try {
      const YAML::Node root = YAML::Load(yaml);
      present = root.IsMap() && root["envoy_rls"];
      if (present) {
        loadSection(root["envoy_rls"], base_dir, settings, errors);
        if (const YAML::Node section = root["envoy_rls"]; section.IsMap() && section["config_dir"])
          settings.config_dir_place = policy::placeText(source, section["config_dir"].Mark());
        settings.section_text = YAML::Dump(root["envoy_rls"]);
      }
    } catch (const YAML::Exception& error) {
      errors.add(error);
    }
  }
  if (!errors.empty()) {
    std::string message;
    for (const std::string& error : errors.take()) message += (message.empty() ? "" : "\n") + error;
    return Error{message};
  }
  if (!present) return std::optional<RlsSettings>();
  return std::optional<RlsSettings>(std::move(settings));
}

Result<std::optional<RlsSettings>> loadRlsSettings(const policy::ConfigFile& file) {
  return loadRlsSettingsText(file.text, file.path, file.baseDir());
}

Result<std::optional<RlsSettings>> loadRlsSettings(const std::string& path) {
  const Result<policy::ConfigFile> file = policy::readConfigFile(path);
  if (!file.ok()) return Error{file.error()};
  return loadRlsSettings(file.value());
}

LyftLoadResult loadConfiguredLyftFiles(const RlsSettings& settings) {
  LyftLoadResult loaded = loadLyftConfigDir(settings.config_dir);
  if (!loaded.digest) {  // the directory, or a file in it, could not be read at all
    for (std::string& error : loaded.errors)
      error = settings.config_dir_place + "envoy_rls.config_dir: " + error;
  }
  return loaded;
}

namespace {

// `settings`, or an error when the lyft files under its config_dir do not load: the door would
// not open with them.
Result<std::optional<RlsSettings>> withLoadableLyftFiles(
    Result<std::optional<RlsSettings>> settings) {
  if (!settings.ok() || !settings.value()) return settings;
  const LyftLoadResult lyft = loadConfiguredLyftFiles(*settings.value());
  if (lyft.config != nullptr) return settings;
  std::string errors;
  for (const std::string& error : lyft.errors) errors += (errors.empty() ? "" : "\n") + error;
  return Error{errors};
}

}  // namespace

Result<std::optional<RlsSettings>> loadRlsSettingsAsAtStart(const policy::ConfigFile& file) {
  return withLoadableLyftFiles(loadRlsSettings(file));
}

std::optional<policy::SectionChange> restartOnlyChange(const RlsSettings& running,
                                                       const policy::ConfigFile& file) {
  Result<std::optional<RlsSettings>> now = loadRlsSettings(file);
  // The reload loads the running door's lyft files; a config_dir that now names another
  // directory is what the next start will load, so its files must load too.
  if (now.ok() && now.value() && now.value()->config_dir != running.config_dir) {
    now = withLoadableLyftFiles(std::move(now));
  }
  return policy::sectionRestartChange("envoy_rls", "the Envoy door",
                                      "only the lyft files under config_dir reload",
                                      running.section_text, now);
}

}  // namespace sluice::rls
