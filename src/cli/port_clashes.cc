#include "cli/port_clashes.h"

#include <optional>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "policy/ip_endpoint.h"
#include "policy/yaml_fields.h"
#ifdef SLUICE_WITH_RLS
#include "rls/rls_server.h"
#endif
#ifdef SLUICE_WITH_GATEWAY
#include "gateway/gateway_config.h"
#endif

namespace sluice::cli {
namespace {

struct Listener {
  std::string section;
  std::string key;
  std::string endpoint;
};

// Where `section.key` is written in the file, as "line:column: ", or "" when it is not there
// (a default) or the text does not parse.
std::string placeOf(const policy::ConfigFile& file, const Listener& listener) {
  try {
    const YAML::Node root = YAML::Load(file.text);
    const auto mark =
        root.IsMap() ? policy::keyMark(root[listener.section], listener.key) : std::nullopt;
    if (!mark) return "";
    return std::to_string(mark->line + 1) + ":" + std::to_string(mark->column + 1) + ": ";
  } catch (const YAML::Exception&) {
    return "";
  }
}

}  // namespace

std::vector<std::string> portClashes(const policy::ConfigFile& file, const policy::Policy& policy) {
  std::vector<Listener> listeners{{"server", "listen", policy.server.listen},
                                  {"server", "admin", policy.server.admin}};
#ifdef SLUICE_WITH_RLS
  if (const auto rls = rls::loadRlsSettings(file); rls.ok() && rls.value())
    listeners.push_back({"envoy_rls", "listen", rls.value()->listen});
#endif
#ifdef SLUICE_WITH_GATEWAY
  if (const auto gateway = gateway::loadGatewaySettings(file); gateway.ok() && gateway.value())
    listeners.push_back({"gateway", "listen", gateway.value()->listen});
#endif
  std::vector<std::string> clashes;
  for (std::size_t i = 0; i < listeners.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (listeners[i].section == "server" && listeners[j].section == "server") continue;
      const auto a = policy::parseEndpoint(listeners[i].endpoint);
      const auto b = policy::parseEndpoint(listeners[j].endpoint);
      if (!a.ok() || !b.ok() || !policy::sameListeningPort(a.value(), b.value())) continue;
      // At the later of the two as written; server.admin may be a default, written nowhere.
      std::string place = placeOf(file, listeners[i]);
      if (place.empty()) place = placeOf(file, listeners[j]);
      clashes.push_back(file.path + ":" + (place.empty() ? " " : place) + listeners[i].section +
                        "." + listeners[i].key + " and " + listeners[j].section + "." +
                        listeners[j].key + " name the same port");
    }
  }
  return clashes;
}

}  // namespace sluice::cli
