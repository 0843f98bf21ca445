#include "policy/jwt_verifier.h"

#include <mutex>
#include <unordered_map>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>

#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <boost/json/parse.hpp>

#include "policy/jwt_signature.h"

namespace sluice::policy {
namespace {

// A PEM key is a few KiB at most; the bound also keeps lengths within libjwt's `int`.
constexpr std::size_t kMaxKeyBytes = 64 * 1024;

struct JwtFree {
  void operator()(jwt_t* jwt) const noexcept { jwt_free(jwt); }
};
struct MallocFree {
  void operator()(char* text) const noexcept { std::free(text); }
};
struct BioFree {
  void operator()(BIO* bio) const noexcept { BIO_free(bio); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const noexcept { EVP_PKEY_free(key); }
};

// The three parts of a compact JWS, each non-empty base64url without padding.
struct Segments {
  std::string_view header;
  std::string_view payload;
  std::string_view signature;
};

bool isBase64Url(std::string_view text) noexcept {
  for (const char c : text) {
    const bool valid = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_';
    if (!valid) return false;
  }
  return true;
}

// `token` without '=' padding on its signature, when the padding is what base64 would add (one
// '=' after 3 mod 4 characters, two after 2 mod 4); as it is otherwise, for split() to judge.
// RFC 7515 omits padding, but lenient backends (PyJWT) accept a padded signature: refused
// here, such a token counted as none, and a `jwt:` limit with when_missing: skip was skipped.
// The signing input (header.payload) is what was signed either way, so the signature is still
// checked; header and payload stay strict, as padding there changes what was signed.
std::string_view withoutSignaturePadding(std::string_view token) noexcept {
  std::size_t padding = 0;
  while (padding < 2 && padding < token.size() && token[token.size() - 1 - padding] == '=') {
    ++padding;
  }
  if (padding == 0) return token;
  const std::size_t dot = token.rfind('.', token.size() - padding - 1);
  if (dot == std::string_view::npos) return token;
  const std::size_t unpadded = token.size() - padding - dot - 1;
  const bool canonical = (padding == 1 && unpadded % 4 == 3) || (padding == 2 && unpadded % 4 == 2);
  return canonical ? token.substr(0, token.size() - padding) : token;
}

std::optional<Segments> split(std::string_view token) noexcept {
  if (token.empty() || token.size() > JwtVerifier::kMaxTokenBytes) return std::nullopt;
  const std::size_t first_dot = token.find('.');
  if (first_dot == std::string_view::npos) return std::nullopt;
  const std::size_t second_dot = token.find('.', first_dot + 1);
  if (second_dot == std::string_view::npos) return std::nullopt;
  const Segments segments{token.substr(0, first_dot),
                          token.substr(first_dot + 1, second_dot - first_dot - 1),
                          token.substr(second_dot + 1)};
  for (const std::string_view segment : {segments.header, segments.payload, segments.signature}) {
    // This also refuses a third dot, and NUL bytes that would cut libjwt's C string short.
    if (segment.empty() || !isBase64Url(segment)) return std::nullopt;
  }
  return segments;
}

// The algorithm the header names, or nullopt for a header that is not a JSON object with a string
// "alg", and for any `crit` header: RFC 7515 4.1.11 requires refusing extensions we do not
// understand, and we understand none (libjwt ignores `crit`).
std::optional<std::string> headerAlgorithm(std::string_view header_segment) {
  const std::optional<std::string> header_json = decodeBase64Url(header_segment);
  if (!header_json) return std::nullopt;
  boost::system::error_code error;
  const boost::json::value header = boost::json::parse(*header_json, error);
  const boost::json::object* fields = error ? nullptr : header.if_object();
  if (fields == nullptr || fields->contains("crit")) return std::nullopt;
  const boost::json::value* alg = fields->if_contains("alg");
  const boost::json::string* name = alg != nullptr ? alg->if_string() : nullptr;
  if (name == nullptr) return std::nullopt;
  return std::string(*name);
}

// A NumericDate claim against whole seconds: <0, 0 or >0 as `date` is earlier, equal or later;
// nullopt when it is not a finite number. Integers compare exactly, fractions as doubles.
std::optional<int> compareDate(const boost::json::value& date, std::int64_t seconds) noexcept {
  if (const std::int64_t* whole = date.if_int64()) {
    return *whole < seconds ? -1 : (*whole > seconds ? 1 : 0);
  }
  if (date.if_uint64() != nullptr) return 1;  // the parser uses uint64 only beyond INT64_MAX
  if (const double* fraction = date.if_double(); fraction != nullptr && std::isfinite(*fraction)) {
    const auto bound = static_cast<double>(seconds);
    return *fraction < bound ? -1 : (*fraction > bound ? 1 : 0);
  }
  return std::nullopt;
}

std::int64_t saturatingAdd(std::int64_t seconds, std::int64_t delta) noexcept {
  std::int64_t sum;
  if (!__builtin_add_overflow(seconds, delta, &sum)) return sum;
  return delta > 0 ? std::numeric_limits<std::int64_t>::max()
                   : std::numeric_limits<std::int64_t>::min();
}

// exp and nbf, where present, are numbers and put `now_s` inside the validity window.
bool isTimely(const boost::json::object& claims, std::int64_t now_s, std::int64_t leeway_s) {
  if (const boost::json::value* exp = claims.if_contains("exp")) {
    const std::optional<int> order = compareDate(*exp, saturatingAdd(now_s, -leeway_s));
    if (!order || *order <= 0) return false;
  }
  if (const boost::json::value* nbf = claims.if_contains("nbf")) {
    const std::optional<int> order = compareDate(*nbf, saturatingAdd(now_s, leeway_s));
    if (!order || *order > 0) return false;
  }
  return true;
}

// Why an RS256 or ES256 key cannot be used, or nullopt when it can. libjwt 1.10 reads keys with
// the same PEM_read_bio_PUBKEY, so a key accepted here is one it accepts.
std::optional<std::string> pemKeyProblem(std::string_view pem, bool want_rsa) {
  const std::unique_ptr<BIO, BioFree> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  const std::unique_ptr<EVP_PKEY, PkeyFree> key(
      bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  ERR_clear_error();
  if (!key) {
    if (pem.find("PRIVATE KEY-----") != std::string_view::npos) {
      return "is a private key; configure its public key (openssl pkey -pubout)";
    }
    if (pem.find("BEGIN RSA PUBLIC KEY") != std::string_view::npos) {
      return "is a PKCS#1 \"RSA PUBLIC KEY\", which libjwt cannot read; convert it with openssl "
             "rsa -RSAPublicKey_in -pubout";
    }
    if (pem.find("BEGIN CERTIFICATE") != std::string_view::npos) {
      return "is a certificate; extract its public key with openssl x509 -pubkey -noout";
    }
    return "is not a PEM public key (-----BEGIN PUBLIC KEY-----)";
  }
  const char* type_name = EVP_PKEY_get0_type_name(key.get());
  const std::string held = type_name != nullptr ? type_name : "unknown";
  if (want_rsa) {
    if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_RSA) {
      return "is of type " + held + ", not RSA";
    }
    if (EVP_PKEY_get_bits(key.get()) < 2048) {
      return "is a " + std::to_string(EVP_PKEY_get_bits(key.get())) +
             "-bit RSA key; RS256 needs at least 2048 bits";
    }
    return std::nullopt;
  }
  if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_EC) return "is of type " + held + ", not EC";
  char group[64] = {};
  std::size_t group_length = 0;
  if (EVP_PKEY_get_group_name(key.get(), group, sizeof group, &group_length) != 1 ||
      OBJ_sn2nid(group) != NID_X9_62_prime256v1) {
    ERR_clear_error();
    return std::string("is an EC key on curve ") + (group[0] != '\0' ? group : "unknown") +
           "; ES256 needs P-256 (prime256v1)";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> JwtVerifier::keyProblem(const JwtKey& key) {
  const bool hmac = key.algorithm == "HS256";
  const bool rsa = key.algorithm == "RS256";
  if (!hmac && !rsa && key.algorithm != "ES256") {
    return ": unknown algorithm \"" + key.algorithm + "\" (use HS256, RS256 or ES256)";
  }
  const std::string what = " (" + key.algorithm + "): ";
  if (key.key.empty()) return what + "the key is empty";
  if (key.key.size() > kMaxKeyBytes) {
    return what + "the key is over " + std::to_string(kMaxKeyBytes) + " bytes";
  }
  if (hmac && key.key.size() < kMinHs256SecretBytes) {
    return what + "the secret is " + std::to_string(key.key.size()) +
           " bytes; HS256 needs at least " + std::to_string(kMinHs256SecretBytes) +
           " (RFC 7518 3.2)";
  }
  if (!hmac) {
    if (const auto problem = pemKeyProblem(key.key, rsa)) return what + "the key " + *problem;
  }
  return std::nullopt;
}

Result<JwtVerifier> JwtVerifier::create(std::vector<JwtKey> keys, std::int64_t leeway_s) {
  if (keys.empty()) return Error{"jwt: at least one key is needed"};
  if (leeway_s < 0 || leeway_s > kMaxLeewayS) {
    return Error{"jwt: leeway " + std::to_string(leeway_s) + "s is outside 0.." +
                 std::to_string(kMaxLeewayS) + "s"};
  }
  std::vector<Key> checked;
  checked.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    JwtKey& key = keys[i];
    if (const auto problem = keyProblem(key)) {
      return Error{"jwt keys[" + std::to_string(i) + "]" + *problem};
    }
    // keyProblem read the PEM key already.
    PublicKey public_key = key.algorithm == "HS256" ? nullptr : readPublicKey(key.key);
    checked.push_back({std::move(key.algorithm), std::move(key.key), std::move(public_key)});
  }
  return JwtVerifier(std::move(checked), leeway_s);
}

struct JwtVerifier::VerifiedCache {
  std::mutex mutex;
  std::unordered_map<std::string, boost::json::object> payloads;
};

JwtVerifier::JwtVerifier(std::vector<Key> keys, std::int64_t leeway_s)
    : keys_(std::move(keys)), leeway_s_(leeway_s), cache_(std::make_shared<VerifiedCache>()) {}

std::optional<boost::json::object> JwtVerifier::verify(std::string_view token,
                                                       std::int64_t now_s) const noexcept {
  token = withoutSignaturePadding(token);
  const std::optional<Segments> segments = split(token);
  if (!segments) return std::nullopt;
  // Only keys of the named algorithm are tried, and names compare exactly: "none" and "hs256"
  // (which libjwt 1.10 would take for HS256) find no key.
  const std::optional<std::string> algorithm = headerAlgorithm(segments->header);
  if (!algorithm) return std::nullopt;
  std::optional<boost::json::object> claims;
  {
    std::lock_guard lock(cache_->mutex);
    const auto cached = cache_->payloads.find(std::string(token));
    if (cached != cache_->payloads.end()) claims = cached->second;
  }
  if (!claims) {
    claims = verifySignature(token, *algorithm);
    if (!claims) return std::nullopt;
    std::lock_guard lock(cache_->mutex);
    // Bounded: when full, start over (the tokens in use come back at once).
    if (cache_->payloads.size() >= kCachedTokens) cache_->payloads.clear();
    cache_->payloads.emplace(std::string(token), *claims);
  }
  if (!isTimely(*claims, now_s, leeway_s_)) return std::nullopt;
  return claims;
}

std::optional<boost::json::object> JwtVerifier::verifySignature(
    std::string_view token, const std::string& algorithm) const {
  const std::string terminated(token);  // libjwt takes a C string
  // split() has checked there are exactly two dots.
  const std::size_t signature_start = token.rfind('.') + 1;
  const std::string_view signing_input = token.substr(0, signature_start - 1);
  const std::string_view signature = token.substr(signature_start);
  std::unique_ptr<char, MallocFree> payload_json;
  for (const Key& key : keys_) {
    if (key.algorithm != algorithm) continue;
    // A signature this key did not make goes no further: libjwt would take ~0.3 ms to refuse it.
    if (key.public_key != nullptr &&
        !signatureVerifies(key.public_key.get(), key.algorithm == "RS256", signing_input,
                           signature)) {
      continue;
    }
    // For RS256 and ES256, libjwt 1.10 re-reads the PEM key on every call: about 0.7 ms with
    // OpenSSL 3, some 25 times the signature check itself (hence the cache in verify()).
    jwt_t* decoded = nullptr;
    const int status = jwt_decode(&decoded, terminated.c_str(),
                                  reinterpret_cast<const unsigned char*>(key.bytes.data()),
                                  static_cast<int>(key.bytes.size()));
    const std::unique_ptr<jwt_t, JwtFree> jwt(decoded);
    // libjwt leaves OpenSSL errors queued on failure; they would surface in whatever this thread
    // does with OpenSSL next (TLS, say).
    ERR_clear_error();
    // libjwt verifies with the algorithm the token names, so given an RSA public key it would
    // check an HS256 token using the PEM text as the HMAC secret. The filter above prevents that;
    // this checks what libjwt actually did, so that a header jansson reads differently from
    // Boost.JSON still cannot choose the algorithm.
    if (status != 0 || !jwt || jwt_get_alg(jwt.get()) != jwt_str_alg(key.algorithm.c_str())) {
      continue;
    }
    payload_json.reset(jwt_get_grants_json(jwt.get(), nullptr));
    break;
  }
  if (!payload_json) return std::nullopt;

  // libjwt has re-serialized the payload: integers beyond int64 were refused, duplicate names
  // reduced to the last one, fractions printed with 17 digits.
  boost::system::error_code error;
  boost::json::value payload = boost::json::parse(payload_json.get(), error);
  boost::json::object* claims = error ? nullptr : payload.if_object();
  if (claims == nullptr) return std::nullopt;
  return std::move(*claims);
}

}  // namespace sluice::policy
