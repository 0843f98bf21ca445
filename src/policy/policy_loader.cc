#include "policy/policy_loader.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "policy/api_key_hash.h"
#include "policy/decide.h"
#include "policy/duration.h"
#include "policy/header_settings_loader.h"
#include "policy/ip_endpoint.h"
#include "policy/limit_loader.h"
#include "policy/request_view.h"
#include "policy/store_loader.h"
#include "policy/yaml_fields.h"

namespace sluice::policy {
namespace {

void loadServer(const YAML::Node& node, ServerSettings& server, Errors& errors) {
  if (!isMap(node, "server", errors)) return;
  checkKeys(node, "server",
            {"listen", "admin", "admin_hosts", "threads", "max_connections", "request_timeout",
             "max_body_bytes", "max_header_bytes", "auth_deny_status", "auth_uri_header",
             "auth_method_header"},
            errors);
  if (node["listen"]) server.listen = scalar(node["listen"], "server.listen", errors).value_or("");
  if (node["admin"]) server.admin = scalar(node["admin"], "server.admin", errors).value_or("");
  if (node["admin_hosts"]) {
    const std::vector<std::string> names =
        stringList(node["admin_hosts"], "server.admin_hosts", errors);
    for (const std::string& name : names) {
      // Compared with Host's name part, whole: a port, a blank or a bracket could never match,
      // and a `*` is no wildcard.
      if (name.empty() || name.find_first_of(" \t:[]/@*") != std::string::npos) {
        errors.add(entryOf(node["admin_hosts"], name),
                   "server.admin_hosts: \"" + name +
                       "\" must be a host name, without a port or a wildcard");
        continue;
      }
      // Host's name is compared without a final dot.
      std::string lower = name.back() == '.' ? name.substr(0, name.size() - 1) : name;
      if (lower.empty()) {
        errors.add(entryOf(node["admin_hosts"], name), "server.admin_hosts: \".\" is no name");
        continue;
      }
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      server.admin_hosts.push_back(std::move(lower));
    }
  }
  if (const YAML::Node threads = node["threads"]) {
    if (threads.IsScalar() && threads.Scalar() == "auto") {
      server.threads = 0;
    } else if (auto count = unsignedValue(threads, "server.threads", errors)) {
      if (*count == 0 || *count > 256) errors.add(threads, "server.threads must be 1..256 or auto");
      server.threads = static_cast<unsigned>(*count);
    }
  }
  if (node["max_connections"]) {
    if (auto count = unsignedValue(node["max_connections"], "server.max_connections", errors)) {
      if (*count == 0)
        errors.add(node["max_connections"], "server.max_connections must be at least 1");
      server.max_connections = *count;
    }
  }
  // Each range is checked only on a value that was read: one that was not is reported once.
  if (node["request_timeout"]) {
    if (const auto timeout =
            durationValue(node["request_timeout"], "server.request_timeout", errors)) {
      server.request_timeout_us = *timeout;
      // Below a millisecond no request could arrive in time: the server would drop every one.
      if (*timeout < 1000) {
        errors.add(node["request_timeout"], "server.request_timeout must be at least 1ms");
      }
    }
  }
  if (node["max_body_bytes"]) {
    if (const auto bytes = unsignedValue(node["max_body_bytes"], "server.max_body_bytes", errors)) {
      server.max_body_bytes = *bytes;
      // A body is held whole in memory while it is read: bounded, as the gateway's headers are.
      if (*bytes < 1 || *bytes > (64u << 20)) {
        errors.add(node["max_body_bytes"], "server.max_body_bytes must be 1 to 67108864 (64 MiB)");
      }
    }
  }
  if (node["max_header_bytes"]) {
    if (const auto bytes =
            unsignedValue(node["max_header_bytes"], "server.max_header_bytes", errors)) {
      server.max_header_bytes = *bytes;
      if (*bytes < kMinHeaderBytes || *bytes > kMaxHeaderBytes) {
        errors.add(node["max_header_bytes"],
                   "server.max_header_bytes must be 1024 to 65536 (64 KiB)");
      }
    }
  }
  if (node["auth_deny_status"]) {
    const auto status = unsignedValue(node["auth_deny_status"], "server.auth_deny_status", errors);
    if (status && (*status < 400 || *status > 599)) {
      errors.add(node["auth_deny_status"], "server.auth_deny_status must be 400..599");
    }
    server.auth_deny_status = static_cast<int>(status.value_or(0));
  }
  for (const auto& [key, field] : {std::pair{"auth_uri_header", &server.auth_uri_header},
                                   std::pair{"auth_method_header", &server.auth_method_header}}) {
    if (!node[key]) continue;
    *field = scalar(node[key], std::string("server.") + key, errors).value_or("");
    if (!isHttpToken(*field)) {
      errors.add(node[key], std::string("server.") + key + " must name a header");
    }
  }
  // Each at its own line; the defaults are valid, so a bad address is one written.
  for (const auto& [value, key] :
       {std::pair{server.listen, "listen"}, std::pair{server.admin, "admin"}}) {
    if (const auto endpoint = parseEndpoint(value); !endpoint.ok()) {
      errors.add(node[key] ? node[key] : node,
                 "server." + std::string(key) +
                     " must be an IP address and port (0..65535), e.g. 127.0.0.1:8080; " +
                     endpoint.error());
    }
  }
  // One port for both: serve would fail to bind the second ("address already in use").
  const auto listen = parseEndpoint(server.listen);
  const auto admin = parseEndpoint(server.admin);
  if (listen.ok() && admin.ok() && sameListeningPort(listen.value(), admin.value())) {
    errors.add(node["admin"]    ? node["admin"]
               : node["listen"] ? node["listen"]
                                : node,
               "server.listen and server.admin name the same port");
  }
}

// A header or claim name: empty would turn its identity off without a word (a template whose
// variable was unset), so it is refused.
std::string nonEmptyScalar(const YAML::Node& node, const std::string& what, Errors& errors) {
  std::string value = scalar(node, what, errors).value_or("");
  if (value.empty() && node.IsScalar()) errors.add(node, what + " must not be empty");
  return value;
}

// A header's name: one that is no HTTP token (a blank, a colon, a line break) can never match a
// field, so its identity would be off without a word.
std::string headerName(const YAML::Node& node, const std::string& what, Errors& errors) {
  std::string value = nonEmptyScalar(node, what, errors);
  if (!value.empty() && !isHttpToken(value)) {
    errors.add(node, what + " \"" + value + "\" is not a header name");
  }
  return value;
}

void loadJwt(const YAML::Node& node, const std::string& base_dir, Policy& policy, Errors& errors) {
  if (!isMap(node, "identity.jwt", errors)) return;
  checkKeys(node, "identity.jwt", {"header", "keys", "leeway", "tier_claim"}, errors);
  if (node["header"]) {
    policy.jwt_header = headerName(node["header"], "identity.jwt.header", errors);
  }
  if (node["tier_claim"]) {
    policy.tier_claim = nonEmptyScalar(node["tier_claim"], "identity.jwt.tier_claim", errors);
    // Tiers are loaded first. Without any, no claim could name one: the setting would do nothing.
    if (policy.tiers.empty()) {
      errors.add(node["tier_claim"],
                 "identity.jwt.tier_claim names each token's tier, but no tiers are defined");
    }
  }
  Micros leeway_us =
      node["leeway"] ? durationValue(node["leeway"], "identity.jwt.leeway", errors).value_or(0) : 0;
  // exp and nbf are whole seconds: a finer leeway would be cut to whole seconds unseen.
  if (leeway_us % kMicrosPerSecond != 0) {
    errors.add(node["leeway"], "identity.jwt.leeway must be whole seconds (exp and nbf are)");
  } else if (leeway_us / kMicrosPerSecond > JwtVerifier::kMaxLeewayS) {
    // Here, at its own line: the verifier's refusal is reported at the keys.
    errors.add(node["leeway"], "identity.jwt.leeway must be at most " +
                                   std::to_string(JwtVerifier::kMaxLeewayS) + "s (a day)");
    leeway_us = 0;  // the keys are still checked, their errors said in the same run
  }
  const YAML::Node keys = node["keys"];
  if (!keys || !keys.IsSequence() || keys.size() == 0) {
    errors.add(node, "identity.jwt.keys must list at least one key");
    return;
  }
  std::vector<JwtKey> jwt_keys;
  bool keys_usable = true;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const YAML::Node entry = keys[i];
    if (!isMap(entry, "a JWT key", errors)) {
      keys_usable = false;
      continue;
    }
    checkKeys(entry, "a JWT key", {"algorithm", "secret", "secret_env", "public_key_file"}, errors);
    JwtKey key;
    key.algorithm =
        entry["algorithm"] ? scalar(entry["algorithm"], "algorithm", errors).value_or("") : "";
    // One key source per key: with two, one would be dropped without a word.
    const int sources = (entry["secret"] ? 1 : 0) + (entry["secret_env"] ? 1 : 0) +
                        (entry["public_key_file"] ? 1 : 0);
    if (sources > 1) {
      errors.add(entry, "a JWT key takes one of secret, secret_env or public_key_file");
    }
    // A public key is public: used as an HMAC secret, it would let anyone sign tokens.
    const bool hmac = key.algorithm.starts_with("HS");
    if (hmac && entry["public_key_file"]) {
      errors.add(entry["public_key_file"],
                 key.algorithm +
                     " signs with a shared secret (secret or secret_env); a public "
                     "key file would let anyone who has it sign tokens");
    }
    bool read = false;  // the key's text, whatever it holds
    if (entry["secret"]) {
      const auto secret = scalar(entry["secret"], "secret", errors);
      key.key = secret.value_or("");
      read = secret.has_value();
    } else if (entry["secret_env"]) {
      const std::string variable = scalar(entry["secret_env"], "secret_env", errors).value_or("");
      const char* value = std::getenv(variable.c_str());
      if (value == nullptr)
        errors.add(entry["secret_env"], "environment variable " + variable + " is not set");
      key.key = value == nullptr ? "" : value;
      read = value != nullptr;
    } else if (entry["public_key_file"]) {
      if (const auto path = pathValue(entry["public_key_file"], "public_key_file", errors)) {
        Result<std::string> text = readFile(resolvePath(base_dir, *path));
        if (text.ok()) {
          key.key = std::move(text).value();
          read = true;
        } else {
          errors.add(entry["public_key_file"], text.error());
        }
      }
    } else {
      errors.add(entry, "a JWT key needs secret, secret_env or public_key_file");
    }
    keys_usable = keys_usable && read;
    // At the key's own line: the verifier would only say which of the list it was.
    if (read) {
      if (const auto problem = JwtVerifier::keyProblem(key)) {
        errors.add(entry, "identity.jwt.keys[" + std::to_string(i) + "]" + *problem);
        keys_usable = false;
      }
    }
    jwt_keys.push_back(std::move(key));
  }
  if (!keys_usable) return;
  Result<JwtVerifier> verifier =
      JwtVerifier::create(std::move(jwt_keys), leeway_us / kMicrosPerSecond);
  if (!verifier.ok()) {
    errors.add(keys, "identity.jwt.keys: " + verifier.error());
    return;
  }
  policy.jwt.emplace(std::move(verifier).value());
}

// The entries of a keys file's text into `policy.api_key_tiers`.
void readKeys(const std::string& text, Policy& policy, Errors& errors) {
  try {
    const YAML::Node root = onlyDocument(text, errors);
    checkDuplicateKeys(root, errors);
    const YAML::Node keys = root["keys"];
    if (!root.IsMap() || !keys || !keys.IsSequence()) {
      errors.add(root, "a keys file holds `keys:` followed by a list of {key, tier}");
    } else {
      // A misspelt or second list (`extra_keys:`) would give its keys no tier without a word.
      checkKeys(root, "a keys file", {"keys"}, errors);
      for (const auto& entry : keys) {
        if (!isMap(entry, "a keys entry", errors)) continue;
        checkKeys(entry, "a keys entry", {"key", "sha256", "tier", "name"}, errors);
        std::string id;
        if (entry["key"] && entry["sha256"]) {
          errors.add(entry, "a keys entry takes key or sha256, not both");
        }
        if (entry["key"]) {
          const std::optional<std::string> read = scalar(entry["key"], "key", errors);
          const std::string key = read.value_or("");
          // An empty key (a template's unset variable) would give its tier to every client
          // sending the header empty.
          if (!read) {
            // not a single value: scalar() said so, and "empty" would mislead
          } else if (key.empty()) {
            errors.add(entry["key"], "a key must not be empty");
          } else if (trimBlanks(key).size() != key.size()) {
            // Requests' keys are read without the blanks around them (as HTTP trims a field),
            // so this one could never be presented.
            errors.add(entry["key"],
                       "a key must not begin or end with a blank: no request's key can");
          } else if (std::any_of(key.begin(), key.end(), [](char c) {
                       // A tab may stand inside a header's value; no other control can.
                       return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7F;
                     })) {
            errors.add(entry["key"],
                       "a key must not hold a control character: no request's header can");
          } else if (policy.jwt && equalsIgnoreCase(policy.jwt_header, policy.api_key_header) &&
                     looksLikeJwt(key)) {
            // Read from the header tokens are read from, it would be taken for a token.
            errors.add(entry["key"], "a key with two dots reads as a JWT in " +
                                         policy.api_key_header +
                                         ", which identity.jwt reads too: it could never be "
                                         "presented; give the keys a header of their own "
                                         "(identity.api_key_header)");
          }
          if (read) id = hashApiKey(key);
        } else if (entry["sha256"]) {
          if (const auto hex = scalar(entry["sha256"], "sha256", errors)) {
            id = apiKeyIdFromSha256("sha256:" + *hex);
            if (id.empty()) errors.add(entry["sha256"], "sha256 must be 64 hex digits");
          }
        } else {
          errors.add(entry, "a keys entry needs key or sha256");
        }
        const std::optional<std::string> tier_read =
            entry["tier"] ? scalar(entry["tier"], "tier", errors) : std::nullopt;
        const std::string tier = tier_read.value_or("");
        if (!entry["tier"]) {
          errors.add(entry, "a keys entry needs a tier");
        } else if (tier_read && !policy.tiers.contains(tier)) {
          errors.add(entry["tier"], "tier \"" + tier + "\" is not defined in tiers");
        }
        // The same key twice would silently take the later tier.
        if (!id.empty() && !policy.api_key_tiers.emplace(id, tier).second) {
          errors.add(entry, "this key is already listed (as key or sha256) earlier in the file");
        }
      }
    }
  } catch (const YAML::Exception& error) {
    errors.add(error);
  }
}

void loadKeysFile(const std::string& path, const YAML::Node& where, Policy& policy,
                  Errors& errors) {
  const Result<std::string> read = readFile(path);
  if (!read.ok()) {
    errors.add(where, "keys file " + read.error());
    return;
  }
  Errors file_errors(path);
  // As every config file: a YAML file is Unicode. (A key in other bytes, such as Latin-1, can
  // still be listed by its sha256.)
  checkConfigText(read.value(), file_errors);
  if (file_errors.empty()) readKeys(read.value(), policy, file_errors);
  for (std::string& message : file_errors.take()) errors.add(YAML::Mark::null_mark(), message);
}

void loadIdentity(const YAML::Node& node, const std::string& base_dir, Policy& policy,
                  Errors& errors, std::string& keys_file, YAML::Node& keys_file_node) {
  if (!isMap(node, "identity", errors)) return;
  checkKeys(
      node, "identity",
      {"api_key_header", "trusted_proxies", "forwarded_header", "ipv6_prefix", "jwt", "keys_file"},
      errors);
  if (const YAML::Node header = node["forwarded_header"]) {
    const std::string name = scalar(header, "identity.forwarded_header", errors).value_or("");
    if (name == "x-forwarded-for" || name == "X-Forwarded-For") {
      policy.forwarded_header = Policy::ForwardedHeader::kXForwardedFor;
    } else if (name == "forwarded" || name == "Forwarded") {
      policy.forwarded_header = Policy::ForwardedHeader::kForwarded;
    } else {
      errors.add(header, "identity.forwarded_header must be X-Forwarded-For or Forwarded");
    }
  }
  if (node["api_key_header"]) {
    policy.api_key_header = headerName(node["api_key_header"], "identity.api_key_header", errors);
  }
  if (const YAML::Node proxies = node["trusted_proxies"]) {
    std::vector<Cidr> networks;
    for (const std::string& text : stringList(proxies, "identity.trusted_proxies", errors)) {
      Result<Cidr> cidr = Cidr::parse(text);
      if (cidr.ok()) {
        networks.push_back(std::move(cidr).value());
      } else {
        errors.add(entryOf(proxies, text), "identity.trusted_proxies: " + cidr.error());
      }
    }
    policy.client_ip = ClientIpResolver(std::move(networks));
  }
  if (const YAML::Node prefix = node["ipv6_prefix"]) {
    const std::optional<std::uint64_t> bits = unsignedValue(prefix, "identity.ipv6_prefix", errors);
    if (bits && (*bits < 1 || *bits > 128)) {
      errors.add(prefix,
                 "identity.ipv6_prefix must be 1 to 128 (64: each /64 network counts as "
                 "one client; 128: each address)");
    } else if (bits) {
      policy.ipv6_prefix = static_cast<unsigned>(*bits);
    }
  }
  if (node["jwt"]) loadJwt(node["jwt"], base_dir, policy, errors);
  if (node["keys_file"]) {
    const std::optional<std::string> path =
        pathValue(node["keys_file"], "identity.keys_file", errors);
    // Empty (a template whose variable was unset), it read as no keys file: every key's client
    // fell to the anonymous tier without a word.
    if (path && path->empty()) {
      errors.add(node["keys_file"],
                 "identity.keys_file must not be empty: remove it for no keys file");
    } else if (path) {
      keys_file = resolvePath(base_dir, *path);
    }
    keys_file_node = node["keys_file"];
  }
}

std::string redact(YAML::Node root) {
  YAML::Node copy = YAML::Clone(root);
  if (copy["store"] && copy["store"].IsMap() && copy["store"]["password"]) {
    copy["store"]["password"] = "<redacted>";
  }
  // Only where the loader takes them (a mapping of a list of mappings): iterated as a list, a
  // mapping threw, and a refused config's errors gained one with no line.
  if (copy["identity"].IsMap() && copy["identity"]["jwt"].IsMap() &&
      copy["identity"]["jwt"]["keys"].IsSequence()) {
    for (auto key : copy["identity"]["jwt"]["keys"]) {
      if (key.IsMap() && key["secret"]) key["secret"] = "<redacted>";
    }
  }
  YAML::Emitter out;
  out << copy;
  return out.c_str();
}

}  // namespace

LoadResult loadPolicyText(const std::string& yaml, const std::string& source,
                          const std::string& base_dir, const StoreSettings* running_store) {
  Errors errors(source);
  auto policy = std::make_shared<Policy>();
  policy->source = source;
  // Limit names become metric labels (a byte 0xE9 in one made every scrape of /metrics fail),
  // and matchers in other bytes could never match what clients send.
  checkConfigText(yaml, errors);
  if (!errors.empty()) return {nullptr, errors.take()};
  try {
    const YAML::Node root = onlyDocument(yaml, errors);
    if (!root.IsMap()) {
      errors.add(root, "the configuration must be a mapping with limits: and friends");
      return {nullptr, errors.take()};
    }
    checkDuplicateKeys(root, errors);  // the whole file: the gateway and envoy_rls sections too
    checkKeys(root, "the configuration",
              {"server", "store", "identity", "headers", "tiers", "limits",
               // read by their own front doors' loaders from the same file
               "gateway", "envoy_rls"},
              errors);
    if (root["server"]) loadServer(root["server"], policy->server, errors);
    if (root["store"]) loadStore(root["store"], policy->store, errors);
    if (root["headers"]) loadHeaderSettings(root["headers"], "headers", policy->headers, errors);
    if (root["tiers"]) loadTiers(root["tiers"], *policy, errors);
    std::string keys_file;
    YAML::Node keys_file_node;
    if (root["identity"]) {
      loadIdentity(root["identity"], base_dir, *policy, errors, keys_file, keys_file_node);
    }
    if (!keys_file.empty()) {
      policy->api_keys_listed = true;
      loadKeysFile(keys_file, keys_file_node, *policy, errors);
    }
    // An Envoy-only deployment (lyft's drop-in) has its limits in the lyft files: it may list
    // none here, and the HTTP doors then limit nothing.
    const bool limits_optional = static_cast<bool>(root["envoy_rls"]);
    const YAML::Node limits = root["limits"];
    // `limits:` with nothing under it (its entries commented out) is null: none too.
    if (limits_optional &&
        (!limits || limits.IsNull() || (limits.IsSequence() && limits.size() == 0))) {
      // nothing to load
    } else if (!limits || !limits.IsSequence() || limits.size() == 0) {
      errors.add(limits ? limits : root,
                 limits && !limits.IsSequence()
                     ? "limits: must be a list of limits (- { name: ..., rate: ... })"
                     : "limits: must list at least one limit (only a config with envoy_rls "
                       "may have none)");
    } else {
      loadLimits(root["limits"], root["tiers"], *policy, errors);
      const bool synced = policy->store.type == StoreSettings::Type::kSynced;
      checkLimitsFitStore(root["limits"], *policy, policy->store,
                          synced ? "the synced store" : "the Redis store", errors);
      checkLimitsOnError(root["limits"], policy->store, errors);
      // A reload's limits go to the store running now, whatever the file says it will be.
      if (running_store != nullptr && running_store->type != policy->store.type) {
        const bool running_synced = running_store->type == StoreSettings::Type::kSynced;
        checkLimitsFitStore(root["limits"], *policy, *running_store,
                            std::string(running_synced ? "the synced store" : "the Redis store") +
                                " this process runs (store settings change at restart)",
                            errors);
      }
    }
    policy->redacted_yaml = redact(root);
  } catch (const YAML::Exception& error) {
    errors.add(error);
  }
  if (!errors.empty()) return {nullptr, errors.take()};
  return {std::move(policy), {}};
}

std::string ConfigFile::baseDir() const {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

Result<ConfigFile> readConfigFile(const std::string& path) {
  Result<std::string> text = readFile(path);
  if (!text.ok()) return Error{text.error()};
  return ConfigFile{path, std::move(text).value()};
}

LoadResult loadPolicy(const ConfigFile& file, const StoreSettings* running_store) {
  return loadPolicyText(file.text, file.path, file.baseDir(), running_store);
}

LoadResult loadPolicy(const std::string& path, const StoreSettings* running_store) {
  const Result<ConfigFile> file = readConfigFile(path);
  if (!file.ok()) return {nullptr, {file.error()}};
  return loadPolicy(file.value(), running_store);
}

}  // namespace sluice::policy
