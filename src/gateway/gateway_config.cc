#include "gateway/gateway_config.h"

#include <algorithm>
#include <functional>
#include <set>
#include <string>

#include <yaml-cpp/yaml.h>

#include "gateway/ddos_guard.h"
#include "gateway/pattern_folding.h"
#include "policy/ip_endpoint.h"
#include "policy/limit_loader.h"
#include "policy/request_view.h"
#include "policy/section_change.h"
#include "policy/yaml_fields.h"
#include "server/http_server.h"

namespace sluice::gateway {
namespace {

using policy::Errors;

// An upstream's or the webhook's address: an IP literal and a port other than 0.
std::optional<boost::asio::ip::tcp::endpoint> serverEndpoint(std::string_view text) {
  const Result<boost::asio::ip::tcp::endpoint> endpoint = policy::parseEndpoint(text);
  if (!endpoint.ok() || endpoint.value().port() == 0) return std::nullopt;
  return endpoint.value();
}

std::optional<boost::asio::ip::tcp::endpoint> endpointValue(const YAML::Node& node,
                                                            const std::string& what,
                                                            Errors& errors) {
  const auto text = policy::scalar(node, what, errors);
  if (!text) return std::nullopt;
  auto endpoint = serverEndpoint(*text);
  if (!endpoint) errors.add(node, what + " must be an IP address and port, e.g. 127.0.0.1:9000");
  return endpoint;
}

std::optional<Micros> positiveDuration(const YAML::Node& node, const std::string& what,
                                       Errors& errors) {
  const auto value = policy::durationValue(node, what, errors);
  if (value && *value <= 0) errors.add(node, what + " must be longer than zero");
  return value;
}

// `gateway`: the section; a missing `upstreams` is reported at `section`, its key's place.
void loadUpstreams(const YAML::Node& gateway, const YAML::Mark& section, GatewaySettings& settings,
                   Errors& errors) {
  const YAML::Node node = gateway["upstreams"];
  if (!node || !node.IsMap() || node.size() == 0) {
    errors.add(node ? node.Mark() : section,
               "gateway.upstreams must map at least one name to an address");
    return;
  }
  const auto listen = policy::parseEndpoint(settings.listen);
  for (const auto& entry : node) {
    Upstream upstream;
    upstream.name = entry.first.IsScalar() ? entry.first.Scalar() : "";
    const std::string where = "gateway.upstreams." + upstream.name;
    if (!policy::isPlainName(upstream.name)) {
      errors.add(entry.first, "an upstream name must be text, non-empty, at most " +
                                  std::to_string(policy::kMaxNameBytes) +
                                  " bytes and without control characters (routes name it)");
    }
    const YAML::Node value = entry.second;
    // reset(), not =: assigning to a yaml-cpp node writes through to the node it refers to.
    YAML::Node address;
    address.reset(value);
    bool has_address = true;
    if (value.IsMap()) {
      policy::checkKeys(value, where, {"address", "max_idle", "idle_timeout"}, errors);
      // Looked up first: reset() from a key that is not there throws (yaml-cpp's "invalid
      // node", with no line), which hid every other error of the file.
      if (const YAML::Node found = value["address"]) {
        address.reset(found);
      } else {
        has_address = false;
        errors.add(value, where + " needs an address");
      }
      if (value["max_idle"]) {
        upstream.max_idle_per_thread =
            policy::unsignedValue(value["max_idle"], where + ".max_idle", errors).value_or(64);
      }
      if (value["idle_timeout"]) {
        upstream.idle_timeout_us =
            positiveDuration(value["idle_timeout"], where + ".idle_timeout", errors).value_or(1);
      }
    }
    if (has_address) {
      if (auto endpoint = endpointValue(address, where, errors)) {
        upstream.endpoint = *endpoint;
        upstream.host = server::hostFieldText(*endpoint);
        // The gateway would forward each request to itself, again and again, until its header
        // block (X-Forwarded-For grows each time) is too long.
        if (listen.ok() && policy::reachesListener(listen.value(), *endpoint))
          errors.add(address, where + " is the gateway's own listener: requests would loop");
      }
    }
    settings.upstreams.push_back(std::move(upstream));
  }
}

// `gateway`: the section; a missing `routes` is reported at `section`, its key's place.
void loadRoutes(const YAML::Node& gateway, const YAML::Mark& section, GatewaySettings& settings,
                Errors& errors) {
  const YAML::Node node = gateway["routes"];
  if (!node || !node.IsSequence() || node.size() == 0) {
    errors.add(node ? node.Mark() : section, "gateway.routes must list at least one route");
    return;
  }
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node entry = node[i];
    const std::string where = "gateway.routes[" + std::to_string(i) + "]";
    if (!policy::isMap(entry, where, errors)) continue;
    policy::checkKeys(
        entry, where,
        {"method", "path", "path_prefix", "path_glob", "case_sensitive", "upstream", "mode"},
        errors);
    Route route;
    route.match = policy::loadRouteFields(entry, where, errors);
    const std::string upstream =
        entry["upstream"]
            ? policy::scalar(entry["upstream"], where + ".upstream", errors).value_or("")
            : "";
    const auto found = std::find_if(settings.upstreams.begin(), settings.upstreams.end(),
                                    [&](const Upstream& u) { return u.name == upstream; });
    if (found == settings.upstreams.end()) {
      errors.add(entry["upstream"] ? entry["upstream"] : entry,
                 where + ".upstream \"" + upstream + "\" is not one of gateway.upstreams");
    }
    route.upstream = static_cast<std::size_t>(found - settings.upstreams.begin());
    if (entry["mode"]) {
      const std::string mode = policy::scalar(entry["mode"], where + ".mode", errors).value_or("");
      if (mode == "monitor") {
        route.mode = RouteMode::kMonitor;
      } else if (mode != "enforce") {
        errors.add(entry["mode"], where + ".mode must be enforce or monitor");
      }
    }
    settings.routes.push_back(std::move(route));
  }
}

// A configured pattern folded as targets are (decoded, lower case, blanks and comments to one
// space), else one written encoded or with two blanks could never match: "%3Cscript" is
// "<script", "UNION  SELECT" is "union select". Nullopt, with an error at `where`, for a pattern
// that would not match what it says.
std::optional<std::string> foldedPattern(const std::string& pattern, const YAML::Node& where,
                                         Errors& errors) {
  // Targets are read without their control characters, so a pattern holding one would match as
  // if it were not there ("%00.jpg" would refuse every JPEG); an overlong spelling may be one.
  std::string decoding;
  if (holdsControlOrOverlong(decodedForMatching(pattern, decoding).text)) {
    errors.add(where,
               "gateway.guard.patterns has a pattern holding a control character or an "
               "overlong UTF-8 spelling, which targets are matched without");
    return std::nullopt;
  }
  std::string folded = foldForMatching(pattern);
  if (folded.find_first_not_of(' ') == std::string::npos) {
    errors.add(where, "gateway.guard.patterns has an empty or blank pattern");
    return std::nullopt;
  }
  return folded;
}

void loadGuard(const YAML::Node& node, GuardSettings& guard, Errors& errors) {
  if (!policy::isMap(node, "gateway.guard", errors)) return;
  policy::checkKeys(node, "gateway.guard", {"global_rps", "max_connections_per_ip", "patterns"},
                    errors);
  if (node["global_rps"]) {
    guard.global_rps =
        policy::unsignedValue(node["global_rps"], "gateway.guard.global_rps", errors).value_or(0);
  }
  if (node["max_connections_per_ip"]) {
    guard.max_connections_per_ip =
        policy::unsignedValue(node["max_connections_per_ip"],
                              "gateway.guard.max_connections_per_ip", errors)
            .value_or(0);
  }
  if (const YAML::Node patterns = node["patterns"]) {
    if (patterns.IsSequence() && patterns.size() == 0) {
      guard.patterns.clear();  // `patterns: []` turns the check off
    } else {
      guard.patterns.clear();
      for (const std::string& pattern :
           policy::stringList(patterns, "gateway.guard.patterns", errors)) {
        if (policy::equalsIgnoreCase(pattern, "default")) {
          for (const std::string& builtin : GuardSettings::defaultPatterns())
            guard.patterns.push_back(builtin);
          continue;
        }
        if (auto folded = foldedPattern(pattern, policy::entryOf(patterns, pattern), errors)) {
          guard.patterns.push_back(std::move(*folded));
        }
      }
    }
  }
}

// `jwt_set_up`: whether the file's identity.jwt is there, without which no request has claims.
// `limit_names`: the names of the file's limits.
void loadConcurrency(const YAML::Node& node, bool jwt_set_up,
                     const std::set<std::string, std::less<>>& limit_names,
                     GatewaySettings& settings, Errors& errors) {
  if (!node.IsSequence()) {
    errors.add(node, "gateway.concurrency must be a list");
    return;
  }
  for (std::size_t i = 0; i < node.size(); ++i) {
    const YAML::Node entry = node[i];
    const std::string where = "gateway.concurrency[" + std::to_string(i) + "]";
    if (!policy::isMap(entry, where, errors)) continue;
    policy::checkKeys(entry, where, {"name", "match", "key", "max_in_flight", "deny_status"},
                      errors);
    ConcurrencyLimit limit;
    limit.name = entry["name"] ? policy::scalar(entry["name"], where + ".name", errors).value_or("")
                               : "concurrency-" + std::to_string(i);
    // The name goes into the RateLimit-Policy header of a refusal, and the logs.
    if (!policy::isPlainName(limit.name)) {
      errors.add(entry["name"] ? entry["name"] : entry,
                 where + ".name must be non-empty, at most " +
                     std::to_string(policy::kMaxNameBytes) + " bytes, without control characters");
    }
    // A refusal names it in RateLimit-Policy, as answers name the rate limits: one name for two
    // policies would leave a client unable to tell which its r counts.
    if (limit_names.contains(limit.name)) {
      errors.add(entry["name"] ? entry["name"] : entry,
                 where + (entry["name"] ? ".name \"" : " has no name, and its default \"") +
                     limit.name +
                     "\" is a limit's name too: the answers' RateLimit fields would name two "
                     "policies alike" +
                     (entry["name"] ? "" : "; give it a name"));
    }
    // The name is the counter's: two entries of one name would count each other's requests.
    for (const ConcurrencyLimit& earlier : settings.concurrency) {
      if (earlier.name == limit.name) {
        errors.add(entry["name"] ? entry["name"] : entry,
                   where + ".name \"" + limit.name + "\" is already used");
        break;
      }
    }
    if (entry["match"])
      limit.match = policy::loadMatchSection(entry["match"], where + ".match", errors);
    const std::vector<std::string> parts =
        entry["key"] ? policy::stringList(entry["key"], where + ".key", errors)
                     : std::vector<std::string>{"client"};
    Result<policy::KeySelector> key = policy::KeySelector::parse(parts);
    if (key.ok()) {
      limit.key = std::move(key).value();
      if (limit.key.readsJwtClaims() && !jwt_set_up) {
        // As for a rate limit: every request would fall back to its address.
        errors.add(entry["key"], where +
                                     ".key reads a JWT claim, but identity.jwt is not set up (or "
                                     "was refused: see its errors)");
      }
    } else {
      errors.add(entry["key"] ? entry["key"] : entry, where + ".key: " + key.error());
    }
    if (!entry["max_in_flight"]) errors.add(entry, where + " needs max_in_flight");
    if (entry["max_in_flight"]) {
      limit.max_in_flight =
          policy::unsignedValue(entry["max_in_flight"], where + ".max_in_flight", errors)
              .value_or(1);
      if (limit.max_in_flight == 0)
        errors.add(entry["max_in_flight"], where + ".max_in_flight must be at least 1");
    }
    if (entry["deny_status"]) {
      const auto status =
          policy::unsignedValue(entry["deny_status"], where + ".deny_status", errors).value_or(429);
      if (status < 400 || status > 599)
        errors.add(entry["deny_status"], where + ".deny_status must be 400..599");
      limit.deny_status = static_cast<int>(status);
    }
    settings.concurrency.push_back(std::move(limit));
  }
}

void loadWebhook(const YAML::Node& node, GatewaySettings& settings, Errors& errors) {
  if (!policy::isMap(node, "gateway.webhook", errors)) return;
  policy::checkKeys(
      node, "gateway.webhook",
      {"url", "timeout", "cache_ttl", "failure_ttl", "max_entries", "cache_key_headers"}, errors);
  WebhookSettings webhook;
  webhook.server.name = "webhook";
  const std::string url =
      node["url"] ? policy::scalar(node["url"], "gateway.webhook.url", errors).value_or("") : "";
  constexpr std::string_view kScheme = "http://";
  const std::size_t slash = url.find('/', kScheme.size());
  if (!url.starts_with(kScheme)) {
    errors.add(node["url"] ? node["url"] : node,
               "gateway.webhook.url must be http://<ip>:<port>/<path>");
  } else {
    const auto endpoint = serverEndpoint(url.substr(kScheme.size(), slash - kScheme.size()));
    if (endpoint) {
      webhook.server.endpoint = *endpoint;
    } else {
      errors.add(node["url"], "gateway.webhook.url's host must be an IP address and port");
    }
    webhook.path = slash == std::string::npos ? "/" : url.substr(slash);
    // The path goes into the webhook request's request-line as it is: a blank or a control
    // character there would end that line early, and what follows would be read as headers.
    if (std::any_of(webhook.path.begin(), webhook.path.end(),
                    [](unsigned char c) { return c <= ' ' || c == 0x7f || c == '#'; })) {
      errors.add(node["url"],
                 "gateway.webhook.url's path must not hold a blank, a control character or a "
                 "fragment (#); percent-encode them");
    }
  }
  if (node["timeout"])
    webhook.timeout_us =
        positiveDuration(node["timeout"], "gateway.webhook.timeout", errors).value_or(1);
  if (node["cache_ttl"])
    webhook.cache_ttl_us =
        policy::durationValue(node["cache_ttl"], "gateway.webhook.cache_ttl", errors).value_or(0);
  if (node["failure_ttl"])
    webhook.failure_ttl_us =
        policy::durationValue(node["failure_ttl"], "gateway.webhook.failure_ttl", errors)
            .value_or(0);
  if (node["max_entries"]) {
    webhook.max_entries =
        policy::unsignedValue(node["max_entries"], "gateway.webhook.max_entries", errors)
            .value_or(1);
    if (webhook.max_entries == 0)
      errors.add(node["max_entries"], "gateway.webhook.max_entries must be at least 1");
  }
  if (node["cache_key_headers"]) {
    webhook.cache_key_headers =
        policy::stringList(node["cache_key_headers"], "gateway.webhook.cache_key_headers", errors);
  }
  settings.webhook = std::move(webhook);
}

void loadTimeouts(const YAML::Node& node, GatewaySettings& settings, Errors& errors) {
  for (const auto& [key, field] :
       {std::pair{"client_timeout", &settings.client_timeout_us},
        std::pair{"connect_timeout", &settings.connect_timeout_us},
        std::pair{"response_timeout", &settings.response_timeout_us},
        std::pair{"websocket_idle_timeout", &settings.websocket_idle_timeout_us}}) {
    if (node[key])
      *field = positiveDuration(node[key], std::string("gateway.") + key, errors).value_or(1);
  }
}

// `section`: the place of the `gateway` key.
void loadGateway(const YAML::Node& node, const YAML::Mark& section, bool jwt_set_up,
                 const std::set<std::string, std::less<>>& limit_names, GatewaySettings& settings,
                 Errors& errors) {
  if (!policy::isMap(node, "gateway", errors)) return;
  policy::checkKeys(
      node, "gateway",
      {"listen", "max_connections", "max_header_bytes", "client_timeout", "client_body_min_rate",
       "connect_timeout", "response_timeout", "websocket_idle_timeout", "upstreams", "routes",
       "guard", "concurrency", "webhook"},
      errors);
  if (node["listen"]) {
    settings.listen = policy::scalar(node["listen"], "gateway.listen", errors).value_or("");
    const YAML::Node listen = node["listen"];
    // Port 0 is fine for listening (tests: any free port).
    if (!policy::parseEndpoint(settings.listen).ok()) {
      errors.add(listen, "gateway.listen must be an IP address and port, e.g. 127.0.0.1:8000");
    }
  }
  if (node["max_connections"]) {
    settings.max_connections =
        policy::unsignedValue(node["max_connections"], "gateway.max_connections", errors)
            .value_or(1);
    if (settings.max_connections == 0)
      errors.add(node["max_connections"], "gateway.max_connections must be at least 1");
  }
  if (node["client_body_min_rate"]) {
    settings.client_body_min_rate =
        policy::unsignedValue(node["client_body_min_rate"], "gateway.client_body_min_rate", errors)
            .value_or(settings.client_body_min_rate);
  }
  if (node["max_header_bytes"]) {
    settings.max_header_bytes =
        policy::unsignedValue(node["max_header_bytes"], "gateway.max_header_bytes", errors)
            .value_or(16 * 1024);
    if (settings.max_header_bytes < policy::kMinHeaderBytes ||
        settings.max_header_bytes > policy::kMaxHeaderBytes) {
      errors.add(node["max_header_bytes"],
                 "gateway.max_header_bytes must be 1024 to 65536 (64 KiB)");
      settings.max_header_bytes = 16 * 1024;
    }
  }
  loadTimeouts(node, settings, errors);
  loadUpstreams(node, section, settings, errors);
  loadRoutes(node, section, settings, errors);
  if (node["guard"]) loadGuard(node["guard"], settings.guard, errors);
  if (node["concurrency"]) {
    loadConcurrency(node["concurrency"], jwt_set_up, limit_names, settings, errors);
  }
  if (node["webhook"]) loadWebhook(node["webhook"], settings, errors);
}

}  // namespace

std::vector<std::string> GuardSettings::defaultPatterns() {
  // Lower case; matched as pattern_folding.h reads targets, with runs of blanks and SQL
  // comments as one space, so "UNION/**/SELECT" and "union%20%20select" are the same to the
  // guard ("SLEEP/**/(5)" is "sleep(5)"). "..;" climbs a directory on servers that
  // drop ";" path parameters (Tomcat, Jetty), whatever the parameter ("..;/", "..;x/").
  return {"<script",
          "javascript:",
          "../",
          "..\\",
          "..;",
          "union select",
          "union all select",
          "union(select",
          "union (select",
          "union all(select",
          "union all (select",
          "union distinct select",
          "select * from",
          "' or '1'='1",
          "'or'1'='1",
          "\" or \"1\"=\"1",
          "' or 1=1",
          " or 1=1 --",
          "drop table",
          "insert into",
          "delete from",
          "information_schema",
          "sleep(",
          "benchmark(",
          "xp_cmdshell",
          "/etc/passwd"};
}

Result<std::optional<GatewaySettings>> loadGatewaySettingsText(const std::string& yaml,
                                                               const std::string& source) {
  Errors errors(source);
  GatewaySettings settings;
  settings.guard.patterns = GuardSettings::defaultPatterns();
  policy::checkConfigText(yaml, errors);  // the policy loader's message, not the parser's
  if (errors.empty()) {
    try {
      const YAML::Node root = YAML::Load(yaml);
      if (!root.IsMap() || !root["gateway"]) return std::optional<GatewaySettings>{};
      const YAML::Node identity = root["identity"];
      const bool jwt_set_up =
          identity && identity.IsMap() && identity["jwt"] && identity["jwt"].IsMap();
      // The limits' names, as the policy loader reads them (it reports what is wrong there).
      std::set<std::string, std::less<>> limit_names;
      if (const YAML::Node limits = root["limits"]; limits && limits.IsSequence()) {
        for (const YAML::Node& limit : limits) {
          if (!limit.IsMap() || !limit["name"] || !limit["name"].IsScalar()) continue;
          limit_names.insert(limit["name"].Scalar());
          // A from_tier limit's daily quota is named "<name>:daily" in the answers.
          // (What from_tier says wrongly, the policy loader reports.)
          Errors ignored(source);
          if (limit["from_tier"] &&
              policy::boolValue(limit["from_tier"], "from_tier", ignored).value_or(false)) {
            limit_names.insert(limit["name"].Scalar() + ":daily");
          }
        }
      }
      loadGateway(root["gateway"], policy::keyMark(root, "gateway").value_or(root.Mark()),
                  jwt_set_up, limit_names, settings, errors);
      settings.section_text = YAML::Dump(root["gateway"]);
    } catch (const YAML::Exception& error) {
      errors.add(error);
    }
  }
  if (errors.empty()) return std::optional<GatewaySettings>(std::move(settings));
  std::string message;
  for (const std::string& line : errors.take()) message += (message.empty() ? "" : "\n") + line;
  return Error{message};
}

Result<std::optional<GatewaySettings>> loadGatewaySettings(const policy::ConfigFile& file) {
  return loadGatewaySettingsText(file.text, file.path);
}

Result<std::optional<GatewaySettings>> loadGatewaySettings(const std::string& path) {
  const Result<policy::ConfigFile> file = policy::readConfigFile(path);
  if (!file.ok()) return Error{file.error()};
  return loadGatewaySettings(file.value());
}

std::optional<policy::SectionChange> restartOnlyChange(const GatewaySettings& running,
                                                       const policy::ConfigFile& file) {
  return policy::sectionRestartChange("gateway", "the gateway", "the limits it enforces reload",
                                      running.section_text, loadGatewaySettings(file));
}

}  // namespace sluice::gateway
