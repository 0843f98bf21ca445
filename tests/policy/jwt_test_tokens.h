// What the JWT verifier tests share: keys made once per process with OpenSSL, tokens signed by
// libjwt or assembled by hand (for headers and payloads libjwt would not write), and the fixture.
// jwt_verifier_test.cc covers creating a verifier and each algorithm's signatures;
// jwt_token_checks_test.cc what a token must also pass: algorithm attacks, its payload and
// times, malformed input, verifies on several threads.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "policy/jwt_verifier.h"

namespace sluice::policy {

inline constexpr std::int64_t kNowS = 1'700'000'000;
inline const std::string kJwtSecret = "0123456789abcdef0123456789abcdef";  // 32 bytes
inline const std::string kOtherSecret = "fedcba9876543210fedcba9876543210";

// ---- Keys, made once per process with OpenSSL ----

struct KeyPair {
  std::string private_pem;
  std::string public_pem;
};

inline KeyPair pemEncoded(EVP_PKEY* key) {
  const auto pem = [&](bool is_private) {
    const std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    const int written =
        is_private ? PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)
                   : PEM_write_bio_PUBKEY(bio.get(), key);
    EXPECT_EQ(written, 1);
    char* data = nullptr;
    const long length = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(length));
  };
  KeyPair pair{pem(true), pem(false)};
  EVP_PKEY_free(key);
  return pair;
}

inline const KeyPair& rsaKeys() {
  static const KeyPair keys = pemEncoded(EVP_RSA_gen(2048));
  return keys;
}
inline const KeyPair& otherRsaKeys() {
  static const KeyPair keys = pemEncoded(EVP_RSA_gen(2048));
  return keys;
}
inline const KeyPair& ecKeys() {
  static const KeyPair keys = pemEncoded(EVP_EC_gen("P-256"));
  return keys;
}
inline const KeyPair& otherEcKeys() {
  static const KeyPair keys = pemEncoded(EVP_EC_gen("P-256"));
  return keys;
}

// ---- Tokens ----

// A token signed by libjwt itself, with string and integer claims.
class TokenBuilder {
 public:
  TokenBuilder& claim(std::string name, std::string value) {
    claims_.emplace_back(std::move(name), std::move(value));
    return *this;
  }
  TokenBuilder& claim(std::string name, long value) {
    claims_.emplace_back(std::move(name), value);
    return *this;
  }

  // `key` is the HMAC secret or the PEM private key.
  std::string sign(jwt_alg_t algorithm, const std::string& key) const {
    jwt_t* raw = nullptr;
    EXPECT_EQ(jwt_new(&raw), 0);
    const std::unique_ptr<jwt_t, decltype(&jwt_free)> jwt(raw, &jwt_free);
    for (const auto& [name, value] : claims_) {
      if (const std::string* text = std::get_if<std::string>(&value)) {
        EXPECT_EQ(jwt_add_grant(jwt.get(), name.c_str(), text->c_str()), 0);
      } else {
        EXPECT_EQ(jwt_add_grant_int(jwt.get(), name.c_str(), std::get<long>(value)), 0);
      }
    }
    EXPECT_EQ(jwt_set_alg(jwt.get(), algorithm, reinterpret_cast<const unsigned char*>(key.data()),
                          static_cast<int>(key.size())),
              0);
    const std::unique_ptr<char, decltype(&std::free)> token(jwt_encode_str(jwt.get()), &std::free);
    EXPECT_NE(token, nullptr);
    return token ? std::string(token.get()) : std::string();
  }

 private:
  std::vector<std::pair<std::string, std::variant<std::string, long>>> claims_;
};

inline std::string base64Url(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (const char c : bytes) {
    buffer = (buffer << 8) | static_cast<unsigned char>(c);
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(buffer >> bits) & 0x3f];
    }
  }
  if (bits > 0) out += kAlphabet[(buffer << (6 - bits)) & 0x3f];
  return out;
}

// A token assembled by hand, for headers and payloads libjwt would not write.
inline std::string hmacToken(std::string_view header_json, std::string_view payload_json,
                             const std::string& secret = kJwtSecret) {
  const std::string signing_input = base64Url(header_json) + "." + base64Url(payload_json);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), mac,
       &mac_length);
  return signing_input + "." +
         base64Url(std::string_view(reinterpret_cast<const char*>(mac), mac_length));
}

// RFC 7519 6.1's unsecured JWT: no signature at all.
inline std::string unsignedToken(std::string_view header_json = R"({"alg":"none","typ":"JWT"})",
                                 std::string_view payload_json = R"({"sub":"mallory"})") {
  return base64Url(header_json) + "." + base64Url(payload_json) + ".";
}

// `token` with its payload replaced and its signature kept.
inline std::string withPayload(const std::string& token, std::string_view payload_json) {
  const std::size_t first_dot = token.find('.');
  const std::size_t second_dot = token.find('.', first_dot + 1);
  return token.substr(0, first_dot + 1) + base64Url(payload_json) + token.substr(second_dot);
}

// ---- Fixture ----

class JwtVerifierTest : public ::testing::Test {
 protected:
  static JwtVerifier verifier(std::vector<JwtKey> keys, std::int64_t leeway_s = 0) {
    Result<JwtVerifier> created = JwtVerifier::create(std::move(keys), leeway_s);
    EXPECT_TRUE(created.ok()) << created.error();
    return std::move(created).value();
  }
  static JwtVerifier hs256Verifier(std::int64_t leeway_s = 0) {
    return verifier({{"HS256", kJwtSecret}}, leeway_s);
  }
  static std::string createError(std::vector<JwtKey> keys, std::int64_t leeway_s = 0) {
    const Result<JwtVerifier> created = JwtVerifier::create(std::move(keys), leeway_s);
    return created.ok() ? "(created)" : created.error();
  }
  static std::string hs256Token(TokenBuilder builder) {
    return builder.sign(JWT_ALG_HS256, kJwtSecret);
  }
};

}  // namespace sluice::policy
