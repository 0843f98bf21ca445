// The optional `envoy_rls:` section of Sluice's own YAML: where the Envoy door listens, where the
// lyft/ratelimit config directory is, and how answers are shaped.
//
//   envoy_rls:
//     listen: 127.0.0.1:8081          # gRPC, plaintext HTTP/2 as Envoy's cluster speaks it
//     config_dir: ratelimit/config    # relative to this YAML file's directory
//     response_headers: true          # X-RateLimit-* and Retry-After in response_headers_to_add
//     shadow_mode: false              # answer OK always, still counting (lyft's SHADOW_MODE)
//     unknown_domain: error           # or allow: OK without limits, as lyft does
#pragma once

#include <optional>
#include <string>

#include "policy/policy_loader.h"
#include "policy/section_change.h"
#include "rls/lyft_config.h"
#include "rls/rls_decider.h"
#include "sluice/result.h"

namespace sluice::rls {

struct RlsSettings {
  std::string listen = "127.0.0.1:8081";  // an IP literal and a port; port 0 picks one
  std::string config_dir;                 // resolved: absolute, or relative to the working dir
  std::string config_dir_place;           // "file:line:column: " of config_dir's value
  // How often config_dir is read for changes, which are then loaded as a reload would load
  // them (lyft/ratelimit picks up its files' changes too). 0: only on SIGHUP or POST reload.
  Micros watch_interval_us = kMicrosPerSecond;
  DeciderOptions decider;
  // The section as YAML wrote it back (comments and layout aside), so that a reload can tell
  // whether it changed: these settings are read at start only.
  std::string section_text;
};

// Reads the `envoy_rls` section of the Sluice config at `path`. nullopt when the file has no
// such section (the Envoy door is off). Errors are "file:line:column: message" lines joined by
// '\n'. Never throws.
[[nodiscard]] Result<std::optional<RlsSettings>> loadRlsSettings(const std::string& path);
// The same from the file already read.
[[nodiscard]] Result<std::optional<RlsSettings>> loadRlsSettings(const policy::ConfigFile& file);

// The same from YAML text; `source` names it in messages, `base_dir` resolves config_dir.
[[nodiscard]] Result<std::optional<RlsSettings>> loadRlsSettingsText(const std::string& yaml,
                                                                     const std::string& source,
                                                                     const std::string& base_dir);

// loadLyftConfigDir(settings.config_dir), an error about the directory itself (it cannot be
// read) placed at config_dir's line in the Sluice config and naming the setting: at start and
// in `validate`, where the file that names the directory is the one being checked.
[[nodiscard]] LyftLoadResult loadConfiguredLyftFiles(const RlsSettings& settings);

// loadRlsSettings(file), and an error when the lyft files under its config_dir do not load
// (loadConfiguredLyftFiles): what the door's opening at start reads.
[[nodiscard]] Result<std::optional<RlsSettings>> loadRlsSettingsAsAtStart(
    const policy::ConfigFile& file);

// For a reload, which reloads the lyft files but not these settings: a warning when the
// envoy_rls section of the config `file` is no longer the one `running` was read from
// (changed or removed), saying it takes effect at restart, or an error when it now has errors,
// its config_dir's lyft files included when it names another directory; nullopt when it is the
// same. Never throws.
[[nodiscard]] std::optional<policy::SectionChange> restartOnlyChange(
    const RlsSettings& running, const policy::ConfigFile& file);

}  // namespace sluice::rls
