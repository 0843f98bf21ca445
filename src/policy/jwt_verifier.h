// Checks a compact JWT (JWS) against configured keys and yields its claims. Claims of a token that
// fails any check are never returned (DESIGN principle 6): an unsigned token (`alg: none`), a
// token whose algorithm no configured key has, or a bad signature all look like no token at all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/json/object.hpp>

#include "policy/jwt_signature.h"
#include "sluice/result.h"

namespace sluice::policy {

// One configured verification key.
struct JwtKey {
  std::string algorithm;  // "HS256", "RS256" or "ES256"
  std::string key;        // HS256: the shared secret bytes; RS256/ES256: a PEM public key
};

class JwtVerifier {
 public:
  // Tokens longer than this are refused unread; real ones are well under 2 KiB.
  static constexpr std::size_t kMaxTokenBytes = 16 * 1024;
  // RFC 7518 3.2: an HS256 secret is at least as long as the hash, 256 bits.
  static constexpr std::size_t kMinHs256SecretBytes = 32;
  // A clock-skew allowance beyond this is a configuration mistake, not skew.
  static constexpr std::int64_t kMaxLeewayS = 24 * 60 * 60;

  // At least one key. Each key's algorithm is one of the three above; an HS256 secret has at least
  // kMinHs256SecretBytes; an RS256 key is a PEM "PUBLIC KEY" holding RSA of at least 2048 bits
  // (RFC 7518 3.3), an ES256 key one holding EC on P-256. `leeway_s` is seconds of clock skew
  // allowed on exp and nbf, 0..kMaxLeewayS. The error names the key (keys[i]) and the problem.
  static Result<JwtVerifier> create(std::vector<JwtKey> keys, std::int64_t leeway_s = 0);
  // What create would refuse in this one key, to follow the key's name: ": unknown algorithm
  // ..." or " (HS256): the secret is ..."; nullopt when it is usable. For a config loader to
  // report each key at its own line.
  [[nodiscard]] static std::optional<std::string> keyProblem(const JwtKey& key);

  // Thread-safe; never throws (allocation failure terminates). `token` is the bare compact
  // serialization, without "Bearer "; `now_s` is Unix seconds. The verified payload, or nullopt
  // when the token is malformed or over kMaxTokenBytes, unsigned (alg none), has a `crit` header,
  // names an algorithm no configured key has (names are case-sensitive), verifies under none of
  // that algorithm's keys, has a payload that is not a JSON object, is expired (exp <= now_s -
  // leeway_s) or not yet valid (nbf > now_s + leeway_s), or has a non-numeric exp or nbf. Each key
  // of the token's algorithm is tried in configuration order, so keys can be rotated.
  [[nodiscard]] std::optional<boost::json::object> verify(std::string_view token,
                                                          std::int64_t now_s) const noexcept;

 private:
  struct Key {
    std::string algorithm;  // exactly "HS256", "RS256" or "ES256"
    std::string bytes;      // the secret, or the PEM text
    PublicKey public_key;   // RS256 and ES256: the PEM's key, read once (jwt_signature.h)
  };

  // Tokens whose signature checked out, by their exact text, with their payload. Verifying an
  // RS256 or ES256 signature through libjwt costs ~0.8 ms (it re-reads the PEM key each time),
  // and a client sends the same token with every request; exp and nbf are checked on every use.
  struct VerifiedCache;
  static constexpr std::size_t kCachedTokens = 1024;  // tokens ≤ 16 KiB: at most 16 MiB

  JwtVerifier(std::vector<Key> keys, std::int64_t leeway_s);
  [[nodiscard]] std::optional<boost::json::object> verifySignature(
      std::string_view token, const std::string& algorithm) const;

  std::vector<Key> keys_;
  std::int64_t leeway_s_;
  std::shared_ptr<VerifiedCache> cache_;
};

}  // namespace sluice::policy
