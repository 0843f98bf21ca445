#include "policy/policy_loader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>
#include <boost/asio/ip/address.hpp>

#include "policy/api_key_hash.h"
#include "policy/duration.h"

namespace sluice::policy {
namespace {

constexpr Micros kMaxThrottleDelayUs = 60 * kMicrosPerSecond;

// Collects errors with their place in the file; every check reports and carries on, so one run
// of `sluice validate` lists every problem.
class Errors {
 public:
  explicit Errors(std::string source) : source_(std::move(source)) {}

  void add(const YAML::Mark& mark, const std::string& message) {
    if (mark.is_null()) {
      list_.push_back(source_ + ": " + message);
    } else {
      list_.push_back(source_ + ":" + std::to_string(mark.line + 1) + ":" +
                      std::to_string(mark.column + 1) + ": " + message);
    }
  }
  void add(const YAML::Node& node, const std::string& message) { add(node.Mark(), message); }
  [[nodiscard]] bool empty() const noexcept { return list_.empty(); }
  std::vector<std::string> take() { return std::move(list_); }
  [[nodiscard]] const std::string& source() const noexcept { return source_; }

 private:
  std::string source_;
  std::vector<std::string> list_;
};

// Reports keys of `map` not in `allowed`: a misspelt key would otherwise be silently ignored.
void checkKeys(const YAML::Node& map, const std::string& where,
               std::initializer_list<std::string_view> allowed, Errors& errors) {
  for (const auto& entry : map) {
    const std::string key = entry.first.Scalar();
    bool known = false;
    for (std::string_view name : allowed) known = known || key == name;
    if (!known) {
      std::string list;
      for (std::string_view name : allowed) list += (list.empty() ? "" : ", ") + std::string(name);
      errors.add(entry.first,
                 "unknown key \"" + key + "\" in " + where + " (expected " + list + ")");
    }
  }
}

bool isMap(const YAML::Node& node, const std::string& what, Errors& errors) {
  if (node.IsMap()) return true;
  errors.add(node, what + " must be a mapping");
  return false;
}

std::optional<std::string> scalar(const YAML::Node& node, const std::string& what, Errors& errors) {
  if (node.IsScalar()) return node.Scalar();
  errors.add(node, what + " must be a single value");
  return std::nullopt;
}

std::optional<std::uint64_t> unsignedValue(const YAML::Node& node, const std::string& what,
                                           Errors& errors) {
  const auto text = scalar(node, what, errors);
  if (!text) return std::nullopt;
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size()) {
    errors.add(node, what + " must be a whole number, not \"" + *text + "\"");
    return std::nullopt;
  }
  return value;
}

std::optional<bool> boolValue(const YAML::Node& node, const std::string& what, Errors& errors) {
  const auto text = scalar(node, what, errors);
  if (!text) return std::nullopt;
  if (*text == "true" || *text == "yes" || *text == "on") return true;
  if (*text == "false" || *text == "no" || *text == "off") return false;
  errors.add(node, what + " must be true or false, not \"" + *text + "\"");
  return std::nullopt;
}

std::optional<Micros> durationValue(const YAML::Node& node, const std::string& what,
                                    Errors& errors) {
  const auto text = scalar(node, what, errors);
  if (!text) return std::nullopt;
  Result<Micros> parsed = parseDuration(*text);
  if (!parsed.ok()) {
    errors.add(node, what + ": " + parsed.error());
    return std::nullopt;
  }
  return parsed.value();
}

std::optional<Rate> rateValue(const YAML::Node& node, const std::string& what, Errors& errors) {
  const auto text = scalar(node, what, errors);
  if (!text) return std::nullopt;
  Result<Rate> parsed = Rate::parse(*text);
  if (!parsed.ok()) {
    errors.add(node, what + ": " + parsed.error());
    return std::nullopt;
  }
  return parsed.value();
}

// A scalar or a sequence of scalars, as a list.
std::vector<std::string> stringList(const YAML::Node& node, const std::string& what,
                                    Errors& errors) {
  std::vector<std::string> values;
  if (node.IsScalar()) {
    values.push_back(node.Scalar());
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      if (auto text = scalar(item, what + " entry", errors)) values.push_back(*text);
    }
  } else {
    errors.add(node, what + " must be a value or a list of values");
  }
  return values;
}

std::string readFile(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string resolvePath(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

void loadServer(const YAML::Node& node, ServerSettings& server, Errors& errors) {
  if (!isMap(node, "server", errors)) return;
  checkKeys(node, "server",
            {"listen", "admin", "threads", "max_connections", "request_timeout", "max_body_bytes",
             "auth_deny_status"},
            errors);
  if (node["listen"]) server.listen = scalar(node["listen"], "server.listen", errors).value_or("");
  if (node["admin"]) server.admin = scalar(node["admin"], "server.admin", errors).value_or("");
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
  if (node["request_timeout"]) {
    server.request_timeout_us =
        durationValue(node["request_timeout"], "server.request_timeout", errors).value_or(0);
    if (server.request_timeout_us <= 0) {
      errors.add(node["request_timeout"], "server.request_timeout must be longer than zero");
    }
  }
  if (node["max_body_bytes"]) {
    server.max_body_bytes =
        unsignedValue(node["max_body_bytes"], "server.max_body_bytes", errors).value_or(0);
  }
  if (node["auth_deny_status"]) {
    const auto status = unsignedValue(node["auth_deny_status"], "server.auth_deny_status", errors);
    if (status && (*status < 400 || *status > 599)) {
      errors.add(node["auth_deny_status"], "server.auth_deny_status must be 400..599");
    }
    server.auth_deny_status = static_cast<int>(status.value_or(0));
  }
  for (const auto& [value, name] :
       {std::pair{server.listen, "server.listen"}, std::pair{server.admin, "server.admin"}}) {
    const std::size_t colon = value.rfind(':');
    std::string host = colon == std::string::npos ? "" : value.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    boost::system::error_code bad_address;
    boost::asio::ip::make_address(host, bad_address);
    if (colon == std::string::npos || bad_address) {
      errors.add(node, std::string(name) + " must be an IP address and port, e.g. 127.0.0.1:8080");
    }
  }
}

void loadStore(const YAML::Node& node, StoreSettings& store, Errors& errors) {
  if (!isMap(node, "store", errors)) return;
  checkKeys(node, "store", {"type", "max_keys"}, errors);
  if (node["type"]) {
    store.type = scalar(node["type"], "store.type", errors).value_or("memory");
    if (store.type != "memory") {
      errors.add(node["type"],
                 "store.type \"" + store.type + "\" is not available in this build (use memory)");
    }
  }
  if (node["max_keys"]) {
    store.max_keys = unsignedValue(node["max_keys"], "store.max_keys", errors).value_or(1);
    if (store.max_keys == 0) errors.add(node["max_keys"], "store.max_keys must be at least 1");
  }
}

void loadHeaders(const YAML::Node& node, HeaderSettings& headers, Errors& errors) {
  if (!isMap(node, "headers", errors)) return;
  checkKeys(node, "headers", {"x_ratelimit", "ietf", "retry_after", "names"}, errors);
  if (node["x_ratelimit"]) {
    headers.x_ratelimit =
        boolValue(node["x_ratelimit"], "headers.x_ratelimit", errors).value_or(true);
  }
  if (node["ietf"]) headers.ietf = boolValue(node["ietf"], "headers.ietf", errors).value_or(true);
  if (node["retry_after"]) {
    headers.retry_after =
        boolValue(node["retry_after"], "headers.retry_after", errors).value_or(true);
  }
  if (const YAML::Node names = node["names"]) {
    if (!isMap(names, "headers.names", errors)) return;
    checkKeys(names, "headers.names",
              {"limit", "remaining", "reset", "retry_after", "ratelimit", "ratelimit_policy"},
              errors);
    for (const auto& entry : names) {
      const std::string where = "headers.names." + entry.first.Scalar();
      if (auto value = scalar(entry.second, where, errors)) {
        const bool token = !value->empty() && std::all_of(value->begin(), value->end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) ||
                 std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
        });
        if (!token) errors.add(entry.second, where + " \"" + *value + "\" is not a header name");
        headers.names[entry.first.Scalar()] = *value;
      }
    }
  }
}

void loadJwt(const YAML::Node& node, const std::string& base_dir, Policy& policy, Errors& errors) {
  if (!isMap(node, "identity.jwt", errors)) return;
  checkKeys(node, "identity.jwt", {"header", "keys", "leeway", "tier_claim"}, errors);
  if (node["header"])
    policy.jwt_header = scalar(node["header"], "identity.jwt.header", errors).value_or("");
  if (node["tier_claim"]) {
    policy.tier_claim = scalar(node["tier_claim"], "identity.jwt.tier_claim", errors).value_or("");
  }
  const Micros leeway_us =
      node["leeway"] ? durationValue(node["leeway"], "identity.jwt.leeway", errors).value_or(0) : 0;
  const YAML::Node keys = node["keys"];
  if (!keys || !keys.IsSequence() || keys.size() == 0) {
    errors.add(node, "identity.jwt.keys must list at least one key");
    return;
  }
  std::vector<JwtKey> jwt_keys;
  for (const auto& entry : keys) {
    if (!isMap(entry, "a JWT key", errors)) continue;
    checkKeys(entry, "a JWT key", {"algorithm", "secret", "secret_env", "public_key_file"}, errors);
    JwtKey key;
    key.algorithm =
        entry["algorithm"] ? scalar(entry["algorithm"], "algorithm", errors).value_or("") : "";
    if (entry["secret"]) {
      key.key = scalar(entry["secret"], "secret", errors).value_or("");
    } else if (entry["secret_env"]) {
      const std::string variable = scalar(entry["secret_env"], "secret_env", errors).value_or("");
      const char* value = std::getenv(variable.c_str());
      if (value == nullptr)
        errors.add(entry["secret_env"], "environment variable " + variable + " is not set");
      key.key = value == nullptr ? "" : value;
    } else if (entry["public_key_file"]) {
      const std::string file = resolvePath(
          base_dir, scalar(entry["public_key_file"], "public_key_file", errors).value_or(""));
      bool ok = false;
      key.key = readFile(file, ok);
      if (!ok) errors.add(entry["public_key_file"], "cannot read " + file);
    } else {
      errors.add(entry, "a JWT key needs secret, secret_env or public_key_file");
    }
    jwt_keys.push_back(std::move(key));
  }
  Result<JwtVerifier> verifier =
      JwtVerifier::create(std::move(jwt_keys), leeway_us / kMicrosPerSecond);
  if (!verifier.ok()) {
    errors.add(keys, "identity.jwt.keys: " + verifier.error());
    return;
  }
  policy.jwt.emplace(std::move(verifier).value());
}

void loadKeysFile(const std::string& path, const YAML::Node& where, Policy& policy,
                  Errors& errors) {
  bool ok = false;
  const std::string text = readFile(path, ok);
  if (!ok) {
    errors.add(where, "cannot read keys file " + path);
    return;
  }
  Errors file_errors(path);
  try {
    const YAML::Node root = YAML::Load(text);
    const YAML::Node keys = root["keys"];
    if (!root.IsMap() || !keys || !keys.IsSequence()) {
      file_errors.add(root, "a keys file holds `keys:` followed by a list of {key, tier}");
    } else {
      for (const auto& entry : keys) {
        if (!isMap(entry, "a keys entry", file_errors)) continue;
        checkKeys(entry, "a keys entry", {"key", "sha256", "tier", "name"}, file_errors);
        std::string id;
        if (entry["key"]) {
          id = hashApiKey(scalar(entry["key"], "key", file_errors).value_or(""));
        } else if (entry["sha256"]) {
          id = apiKeyIdFromSha256("sha256:" +
                                  scalar(entry["sha256"], "sha256", file_errors).value_or(""));
          if (id.empty()) file_errors.add(entry["sha256"], "sha256 must be 64 hex digits");
        } else {
          file_errors.add(entry, "a keys entry needs key or sha256");
        }
        const std::string tier =
            entry["tier"] ? scalar(entry["tier"], "tier", file_errors).value_or("") : "";
        if (!policy.tiers.contains(tier)) {
          file_errors.add(entry["tier"] ? entry["tier"] : entry,
                          "tier \"" + tier + "\" is not defined in tiers");
        }
        if (!id.empty()) policy.api_key_tiers[id] = tier;
      }
    }
  } catch (const YAML::Exception& error) {
    file_errors.add(error.mark, error.msg);
  }
  for (std::string& message : file_errors.take()) errors.add(YAML::Mark::null_mark(), message);
}

void loadIdentity(const YAML::Node& node, const std::string& base_dir, Policy& policy,
                  Errors& errors, std::string& keys_file, YAML::Node& keys_file_node) {
  if (!isMap(node, "identity", errors)) return;
  checkKeys(node, "identity",
            {"api_key_header", "trusted_proxies", "forwarded_header", "jwt", "keys_file"}, errors);
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
    policy.api_key_header =
        scalar(node["api_key_header"], "identity.api_key_header", errors).value_or("");
  }
  if (const YAML::Node proxies = node["trusted_proxies"]) {
    std::vector<Cidr> networks;
    for (const std::string& text : stringList(proxies, "identity.trusted_proxies", errors)) {
      Result<Cidr> cidr = Cidr::parse(text);
      if (cidr.ok()) {
        networks.push_back(std::move(cidr).value());
      } else {
        errors.add(proxies, "identity.trusted_proxies: " + cidr.error());
      }
    }
    policy.client_ip = ClientIpResolver(std::move(networks));
  }
  if (node["jwt"]) loadJwt(node["jwt"], base_dir, policy, errors);
  if (node["keys_file"]) {
    keys_file =
        resolvePath(base_dir, scalar(node["keys_file"], "identity.keys_file", errors).value_or(""));
    keys_file_node = node["keys_file"];
  }
}

void loadTiers(const YAML::Node& node, Policy& policy, Errors& errors) {
  if (!isMap(node, "tiers", errors)) return;
  for (const auto& entry : node) {
    Tier tier;
    tier.name = entry.first.Scalar();
    const YAML::Node spec = entry.second;
    const std::string where = "tier " + tier.name;
    if (!isMap(spec, where, errors)) continue;
    checkKeys(spec, where, {"rate", "burst", "daily_quota", "unlimited"}, errors);
    if (spec["unlimited"])
      tier.unlimited = boolValue(spec["unlimited"], where + ".unlimited", errors).value_or(false);
    if (spec["rate"]) tier.rate = rateValue(spec["rate"], where + ".rate", errors).value_or(Rate{});
    if (spec["burst"])
      tier.burst = unsignedValue(spec["burst"], where + ".burst", errors).value_or(0);
    if (spec["daily_quota"]) {
      tier.daily_quota =
          unsignedValue(spec["daily_quota"], where + ".daily_quota", errors).value_or(0);
    }
    if (!tier.unlimited && !spec["rate"])
      errors.add(spec, where + " needs a rate, or unlimited: true");
    if (tier.unlimited && (spec["rate"] || spec["burst"] || spec["daily_quota"])) {
      errors.add(spec, where + " is unlimited and cannot also have a rate, burst or daily_quota");
    }
    policy.tiers[tier.name] = tier;
  }
}

RouteMatch loadMatch(const YAML::Node& node, const std::string& where, Errors& errors) {
  if (!isMap(node, where + ".match", errors)) return {};
  checkKeys(node, where + ".match", {"method", "path", "path_prefix", "path_glob"}, errors);
  std::vector<std::string> methods;
  if (node["method"]) {
    for (std::string method : stringList(node["method"], where + ".match.method", errors)) {
      for (char& c : method) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
      methods.push_back(method);
    }
  }
  int paths = 0;
  RouteMatch::PathKind kind = RouteMatch::PathKind::kAny;
  std::string path;
  for (const auto& [key, path_kind] : {std::pair{"path", RouteMatch::PathKind::kExact},
                                       std::pair{"path_prefix", RouteMatch::PathKind::kPrefix},
                                       std::pair{"path_glob", RouteMatch::PathKind::kGlob}}) {
    if (!node[key]) continue;
    ++paths;
    kind = path_kind;
    path = scalar(node[key], where + ".match." + key, errors).value_or("");
    // Request paths are normalized before matching; an exact path must be written the same way.
    if (path_kind == RouteMatch::PathKind::kExact && path.starts_with("/"))
      path = normalizePath(path);
    if (!path.starts_with("/"))
      errors.add(node[key], where + ".match." + key + " must start with /");
  }
  if (paths > 1) errors.add(node, where + ".match takes one of path, path_prefix, path_glob");
  return RouteMatch(std::move(methods), kind, std::move(path));
}

void compileTierSpecs(Limit& limit, const YAML::Node& node, const Policy& policy, Errors& errors) {
  if (policy.tiers.empty()) {
    errors.add(node,
               "limit " + limit.name + " takes its numbers from_tier, but no tiers are defined");
    return;
  }
  for (const auto& [name, tier] : policy.tiers) {
    if (tier.unlimited || tier.rate.count == 0)
      continue;  // a tier without a rate is reported already
    Result<LimitSpec> spec =
        LimitSpec::make(limit.algorithm, tier.rate, tier.burst == 0 ? tier.rate.count : tier.burst);
    if (!spec.ok()) {
      errors.add(node, "limit " + limit.name + " with tier " + name + ": " + spec.error());
      continue;
    }
    limit.tier_specs.emplace(name, std::move(spec).value());
    if (tier.daily_quota > 0) {
      Result<LimitSpec> daily = LimitSpec::fixedWindow(Rate{tier.daily_quota, kMicrosPerDay});
      if (!daily.ok()) {
        errors.add(node, "tier " + name + " daily_quota: " + daily.error());
        continue;
      }
      limit.tier_daily_specs.emplace(name, std::move(daily).value());
    }
  }
}

void loadLimit(const YAML::Node& node, Policy& policy, Errors& errors,
               std::set<std::string>& names) {
  if (!isMap(node, "a limit", errors)) return;
  checkKeys(node, "a limit",
            {"name", "match", "key", "algorithm", "rate", "burst", "cost", "action", "max_delay",
             "deny_status", "when_missing", "from_tier"},
            errors);
  Limit limit;
  if (!node["name"]) {
    errors.add(node, "a limit needs a name");
  } else {
    limit.name = scalar(node["name"], "limit name", errors).value_or("");
    if (!names.insert(limit.name).second)
      errors.add(node["name"], "limit name \"" + limit.name + "\" is used twice");
  }
  const std::string where = "limit " + limit.name;
  if (node["match"]) limit.match = loadMatch(node["match"], where, errors);
  std::vector<std::string> key_parts = node["key"] ? stringList(node["key"], where + ".key", errors)
                                                   : std::vector<std::string>{"client"};
  Result<KeySelector> key = KeySelector::parse(key_parts);
  if (key.ok()) {
    limit.key = std::move(key).value();
  } else {
    errors.add(node["key"] ? node["key"] : node, where + ": " + key.error());
  }
  if (node["algorithm"]) {
    const std::string name = scalar(node["algorithm"], where + ".algorithm", errors).value_or("");
    if (auto algorithm = parseAlgorithm(name)) {
      limit.algorithm = *algorithm;
    } else {
      errors.add(node["algorithm"],
                 where + ".algorithm \"" + name +
                     "\" is unknown (fixed_window, sliding_window_log, sliding_window, "
                     "token_bucket, token_bucket_interval, leaky_bucket, "
                     "leaky_bucket_shaper, gcra)");
    }
  }
  if (node["from_tier"])
    limit.from_tier = boolValue(node["from_tier"], where + ".from_tier", errors).value_or(false);
  if (node["cost"]) limit.cost = unsignedValue(node["cost"], where + ".cost", errors);
  if (node["deny_status"]) {
    const auto status =
        unsignedValue(node["deny_status"], where + ".deny_status", errors).value_or(429);
    if (status < 400 || status > 599)
      errors.add(node["deny_status"], where + ".deny_status must be 400..599");
    limit.deny_status = static_cast<int>(status);
  }
  if (node["action"]) {
    const std::string action = scalar(node["action"], where + ".action", errors).value_or("");
    if (action == "reject")
      limit.action = Action::kReject;
    else if (action == "throttle")
      limit.action = Action::kThrottle;
    else if (action == "shadow")
      limit.action = Action::kShadow;
    else
      errors.add(node["action"], where + ".action must be reject, throttle or shadow");
  }
  if (node["max_delay"])
    limit.max_delay_us = durationValue(node["max_delay"], where + ".max_delay", errors).value_or(0);
  if (limit.action == Action::kThrottle && limit.max_delay_us <= 0) {
    errors.add(node, where + " throttles and needs max_delay, e.g. max_delay: 2s");
  }
  // A held request holds a connection; minutes of holding would let a few clients use them up.
  if (limit.max_delay_us > kMaxThrottleDelayUs) {
    errors.add(node["max_delay"], where + ".max_delay must be at most 60s");
  }
  if (node["when_missing"]) {
    const std::string value =
        scalar(node["when_missing"], where + ".when_missing", errors).value_or("");
    if (value == "ip")
      limit.when_missing = WhenMissing::kUseIp;
    else if (value == "skip")
      limit.when_missing = WhenMissing::kSkip;
    else
      errors.add(node["when_missing"], where + ".when_missing must be ip or skip");
  }
  if (limit.from_tier) {
    if (node["rate"] || node["burst"])
      errors.add(node, where + " takes rate and burst from_tier; remove them here");
    compileTierSpecs(limit, node, policy, errors);
  } else if (!node["rate"]) {
    errors.add(node, where + " needs a rate (e.g. rate: 100/min) or from_tier: true");
  } else if (auto rate = rateValue(node["rate"], where + ".rate", errors)) {
    const std::uint64_t burst =
        node["burst"] ? unsignedValue(node["burst"], where + ".burst", errors).value_or(0)
                      : rate->count;
    Result<LimitSpec> spec = LimitSpec::make(limit.algorithm, *rate, burst);
    if (spec.ok()) {
      limit.spec = std::move(spec).value();
    } else {
      errors.add(node["burst"] ? node["burst"] : node["rate"], where + ": " + spec.error());
    }
  }
  policy.limits.push_back(std::move(limit));
}

std::string redact(YAML::Node root) {
  YAML::Node copy = YAML::Clone(root);
  if (copy["identity"] && copy["identity"]["jwt"] && copy["identity"]["jwt"]["keys"]) {
    for (auto key : copy["identity"]["jwt"]["keys"]) {
      if (key["secret"]) key["secret"] = "<redacted>";
    }
  }
  YAML::Emitter out;
  out << copy;
  return out.c_str();
}

}  // namespace

LoadResult loadPolicyText(const std::string& yaml, const std::string& source,
                          const std::string& base_dir) {
  Errors errors(source);
  auto policy = std::make_shared<Policy>();
  policy->source = source;
  try {
    const YAML::Node root = YAML::Load(yaml);
    if (!root.IsMap()) {
      errors.add(root, "the configuration must be a mapping with limits: and friends");
      return {nullptr, errors.take()};
    }
    checkKeys(root, "the configuration",
              {"server", "store", "identity", "headers", "tiers", "limits"}, errors);
    if (root["server"]) loadServer(root["server"], policy->server, errors);
    if (root["store"]) loadStore(root["store"], policy->store, errors);
    if (root["headers"]) loadHeaders(root["headers"], policy->headers, errors);
    if (root["tiers"]) loadTiers(root["tiers"], *policy, errors);
    std::string keys_file;
    YAML::Node keys_file_node;
    if (root["identity"]) {
      loadIdentity(root["identity"], base_dir, *policy, errors, keys_file, keys_file_node);
    }
    if (!keys_file.empty()) loadKeysFile(keys_file, keys_file_node, *policy, errors);
    if (!root["limits"] || !root["limits"].IsSequence() || root["limits"].size() == 0) {
      errors.add(root["limits"] ? root["limits"] : root, "limits: must list at least one limit");
    } else {
      std::set<std::string> names;
      for (const auto& limit : root["limits"]) loadLimit(limit, *policy, errors, names);
      const bool tiered = std::any_of(policy->limits.begin(), policy->limits.end(),
                                      [](const Limit& limit) { return limit.from_tier; });
      if (tiered && !policy->tiers.empty() && !policy->tiers.contains("anonymous")) {
        // Otherwise callers without a known key would silently have no tier limit at all.
        errors.add(root["tiers"],
                   "a limit takes its numbers from_tier, so tiers.anonymous must be defined "
                   "(anonymous: {unlimited: true} exempts callers without a key)");
      }
    }
    policy->redacted_yaml = redact(root);
  } catch (const YAML::Exception& error) {
    errors.add(error.mark, error.msg);
  }
  if (!errors.empty()) return {nullptr, errors.take()};
  return {std::move(policy), {}};
}

LoadResult loadPolicy(const std::string& path) {
  bool ok = false;
  const std::string text = readFile(path, ok);
  if (!ok) return {nullptr, {path + ": cannot read the file"}};
  const std::size_t slash = path.rfind('/');
  return loadPolicyText(text, path, slash == std::string::npos ? "" : path.substr(0, slash));
}

}  // namespace sluice::policy
