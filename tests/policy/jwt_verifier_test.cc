#include "policy/jwt_verifier.h"

#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "policy/jwt_signature.h"

namespace sluice::policy {
namespace {

constexpr std::int64_t kNowS = 1'700'000'000;
const std::string kJwtSecret = "0123456789abcdef0123456789abcdef";  // 32 bytes
const std::string kOtherSecret = "fedcba9876543210fedcba9876543210";

// ---- Keys, made once per process with OpenSSL ----

struct KeyPair {
  std::string private_pem;
  std::string public_pem;
};

KeyPair pemEncoded(EVP_PKEY* key) {
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

const KeyPair& rsaKeys() {
  static const KeyPair keys = pemEncoded(EVP_RSA_gen(2048));
  return keys;
}
const KeyPair& otherRsaKeys() {
  static const KeyPair keys = pemEncoded(EVP_RSA_gen(2048));
  return keys;
}
const KeyPair& ecKeys() {
  static const KeyPair keys = pemEncoded(EVP_EC_gen("P-256"));
  return keys;
}
const KeyPair& otherEcKeys() {
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

std::string base64Url(std::string_view bytes) {
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
std::string hmacToken(std::string_view header_json, std::string_view payload_json,
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
std::string unsignedToken(std::string_view header_json = R"({"alg":"none","typ":"JWT"})",
                          std::string_view payload_json = R"({"sub":"mallory"})") {
  return base64Url(header_json) + "." + base64Url(payload_json) + ".";
}

// `token` with its payload replaced and its signature kept.
std::string withPayload(const std::string& token, std::string_view payload_json) {
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

// ---- create() ----

// Each supported algorithm with a good key is accepted, several keys together too.
TEST_F(JwtVerifierTest, CreateAcceptsEachAlgorithm) {
  EXPECT_TRUE(JwtVerifier::create({{"HS256", kJwtSecret}}).ok());
  EXPECT_TRUE(JwtVerifier::create({{"RS256", rsaKeys().public_pem}}).ok());
  EXPECT_TRUE(JwtVerifier::create({{"ES256", ecKeys().public_pem}}).ok());
  EXPECT_TRUE(
      JwtVerifier::create(
          {{"HS256", kJwtSecret}, {"RS256", rsaKeys().public_pem}, {"ES256", ecKeys().public_pem}},
          JwtVerifier::kMaxLeewayS)
          .ok());
}

// Unknown algorithms, empty or short secrets and unusable PEM keys are refused, naming the key.
TEST_F(JwtVerifierTest, CreateRefusesBadKeys) {
  EXPECT_EQ(createError({}), "jwt: at least one key is needed");
  EXPECT_EQ(createError({{"HS256", kJwtSecret}, {"HS512", kJwtSecret}}),
            "jwt keys[1]: unknown algorithm \"HS512\" (use HS256, RS256 or ES256)");
  EXPECT_EQ(createError({{"hs256", kJwtSecret}}),
            "jwt keys[0]: unknown algorithm \"hs256\" (use HS256, RS256 or ES256)");
  EXPECT_EQ(createError({{"none", kJwtSecret}}),
            "jwt keys[0]: unknown algorithm \"none\" (use HS256, RS256 or ES256)");
  EXPECT_EQ(createError({{"HS256", ""}}), "jwt keys[0] (HS256): the key is empty");
  EXPECT_EQ(createError({{"HS256", kJwtSecret.substr(1)}}),
            "jwt keys[0] (HS256): the secret is 31 bytes; HS256 needs at least 32 (RFC 7518 3.2)");
  EXPECT_EQ(createError({{"RS256", ""}}), "jwt keys[0] (RS256): the key is empty");
  EXPECT_EQ(createError({{"RS256", "not a pem"}}),
            "jwt keys[0] (RS256): the key is not a PEM public key (-----BEGIN PUBLIC KEY-----)");
  EXPECT_EQ(createError({{"RS256", rsaKeys().private_pem}}),
            "jwt keys[0] (RS256): the key is a private key; configure its public key (openssl "
            "pkey -pubout)");
  EXPECT_EQ(createError({{"RS256",
                          "-----BEGIN RSA PUBLIC KEY-----\nMAA=\n-----END RSA PUBLIC "
                          "KEY-----\n"}}),
            "jwt keys[0] (RS256): the key is a PKCS#1 \"RSA PUBLIC KEY\", which libjwt cannot "
            "read; convert it with openssl rsa -RSAPublicKey_in -pubout");
  EXPECT_EQ(createError({{"RS256", ecKeys().public_pem}}),
            "jwt keys[0] (RS256): the key is of type EC, not RSA");
  EXPECT_EQ(createError({{"ES256", rsaKeys().public_pem}}),
            "jwt keys[0] (ES256): the key is of type RSA, not EC");
  EXPECT_EQ(createError({{"ES256", ecKeys().private_pem}}),
            "jwt keys[0] (ES256): the key is a private key; configure its public key (openssl "
            "pkey -pubout)");
}

// RSA below 2048 bits and EC off P-256 are refused: RFC 7518 3.3 and 3.4.
TEST_F(JwtVerifierTest, CreateRefusesWeakOrMismatchedCurves) {
  EXPECT_EQ(createError({{"RS256", pemEncoded(EVP_RSA_gen(1024)).public_pem}}),
            "jwt keys[0] (RS256): the key is a 1024-bit RSA key; RS256 needs at least 2048 bits");
  EXPECT_EQ(createError({{"ES256", pemEncoded(EVP_EC_gen("P-384")).public_pem}}),
            "jwt keys[0] (ES256): the key is an EC key on curve secp384r1; ES256 needs P-256 "
            "(prime256v1)");
}

// The leeway is 0..one day.
TEST_F(JwtVerifierTest, CreateRefusesLeewayOutOfRange) {
  EXPECT_EQ(createError({{"HS256", kJwtSecret}}, -1), "jwt: leeway -1s is outside 0..86400s");
  EXPECT_EQ(createError({{"HS256", kJwtSecret}}, 86'401),
            "jwt: leeway 86401s is outside 0..86400s");
  EXPECT_EQ(createError({{"HS256", kJwtSecret}}, 86'400), "(created)");
}

// ---- Each algorithm: a valid token passes, a tampered or foreign one does not ----

struct Signer {
  const char* algorithm;
  jwt_alg_t libjwt_algorithm;
  const std::string& (*signing_key)();
  const std::string& (*verifying_key)();
  const std::string& (*other_signing_key)();
};

const Signer kSigners[] = {
    {"HS256", JWT_ALG_HS256, []() -> const std::string& { return kJwtSecret; },
     []() -> const std::string& { return kJwtSecret; },
     []() -> const std::string& { return kOtherSecret; }},
    {"RS256", JWT_ALG_RS256, []() -> const std::string& { return rsaKeys().private_pem; },
     []() -> const std::string& { return rsaKeys().public_pem; },
     []() -> const std::string& { return otherRsaKeys().private_pem; }},
    {"ES256", JWT_ALG_ES256, []() -> const std::string& { return ecKeys().private_pem; },
     []() -> const std::string& { return ecKeys().public_pem; },
     []() -> const std::string& { return otherEcKeys().private_pem; }},
};

class JwtVerifierAlgorithmTest : public JwtVerifierTest,
                                 public ::testing::WithParamInterface<Signer> {
 protected:
  static TokenBuilder aliceClaims() {
    TokenBuilder builder;
    builder.claim("sub", "alice").claim("tier", "premium").claim("exp", long{kNowS + 60});
    return builder;
  }
  std::string signedToken() const {
    return aliceClaims().sign(GetParam().libjwt_algorithm, GetParam().signing_key());
  }
  JwtVerifier ownVerifier() const {
    return verifier({{GetParam().algorithm, GetParam().verifying_key()}});
  }
};

// A token signed with the configured key yields its whole payload, types intact.
TEST_P(JwtVerifierAlgorithmTest, ValidTokenYieldsClaims) {
  const std::optional<boost::json::object> claims = ownVerifier().verify(signedToken(), kNowS);
  ASSERT_TRUE(claims.has_value());
  EXPECT_EQ(claims->size(), 3u);
  EXPECT_EQ(claims->at("sub"), "alice");
  EXPECT_EQ(claims->at("tier"), "premium");
  EXPECT_EQ(claims->at("exp"), kNowS + 60);
}

// Changing the payload after signing breaks the signature, however small the change.
TEST_P(JwtVerifierAlgorithmTest, PayloadChangedAfterSigningIsRejected) {
  const std::string forged = withPayload(signedToken(), R"({"exp":)" + std::to_string(kNowS + 60) +
                                                            R"(,"sub":"alice","tier":"gold"})");
  EXPECT_EQ(ownVerifier().verify(forged, kNowS), std::nullopt);
}

// A verified token is remembered, and its exp still applies on every later use: a token that was
// valid at first is refused once it has expired, even from the cache.
TEST_P(JwtVerifierAlgorithmTest, RememberedTokensStillExpire) {
  const JwtVerifier verifier = ownVerifier();
  const std::string token = signedToken();
  ASSERT_TRUE(verifier.verify(token, kNowS).has_value());
  EXPECT_EQ(verifier.verify(token, kNowS + 1).value().at("sub"), "alice");
  EXPECT_EQ(verifier.verify(token, kNowS + 60), std::nullopt);
  // A forged twin is not the same text, so it is checked, and refused.
  const std::string forged = withPayload(
      token, R"({"exp":)" + std::to_string(kNowS + 60) + R"(,"sub":"mallory","tier":"premium"})");
  EXPECT_EQ(verifier.verify(forged, kNowS), std::nullopt);
}

// A token signed with a key that is not configured is rejected.
TEST_P(JwtVerifierAlgorithmTest, OtherKeyIsRejected) {
  const std::string token =
      aliceClaims().sign(GetParam().libjwt_algorithm, GetParam().other_signing_key());
  EXPECT_EQ(ownVerifier().verify(token, kNowS), std::nullopt);
}

// Every key of the token's algorithm is tried, so a rotated-out key can stay configured.
TEST_P(JwtVerifierAlgorithmTest, AnyConfiguredKeyOfTheAlgorithmVerifies) {
  const std::string other_verifying_key =
      GetParam().libjwt_algorithm == JWT_ALG_HS256   ? kOtherSecret
      : GetParam().libjwt_algorithm == JWT_ALG_RS256 ? otherRsaKeys().public_pem
                                                     : otherEcKeys().public_pem;
  const JwtVerifier rotated = verifier({{GetParam().algorithm, other_verifying_key},
                                        {GetParam().algorithm, GetParam().verifying_key()}});
  EXPECT_NE(rotated.verify(signedToken(), kNowS), std::nullopt);
}

// A verifier with keys of every other algorithm rejects the token.
TEST_P(JwtVerifierAlgorithmTest, VerifierWithoutThisAlgorithmRejects) {
  std::vector<JwtKey> keys;
  for (const Signer& signer : kSigners) {
    if (signer.libjwt_algorithm != GetParam().libjwt_algorithm) {
      keys.push_back({signer.algorithm, signer.verifying_key()});
    }
  }
  EXPECT_EQ(verifier(std::move(keys)).verify(signedToken(), kNowS), std::nullopt);
}

// The signature of one token does not verify another payload, nor does a truncated signature.
TEST_P(JwtVerifierAlgorithmTest, BorrowedOrTruncatedSignatureIsRejected) {
  const std::string token = signedToken();
  TokenBuilder bob;
  bob.claim("sub", "bob").claim("tier", "premium").claim("exp", long{kNowS + 60});
  const std::string bob_token = bob.sign(GetParam().libjwt_algorithm, GetParam().signing_key());
  const std::string spliced =
      bob_token.substr(0, bob_token.rfind('.')) + token.substr(token.rfind('.'));
  EXPECT_EQ(ownVerifier().verify(spliced, kNowS), std::nullopt);
  EXPECT_EQ(ownVerifier().verify(token.substr(0, token.size() - 4), kNowS), std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, JwtVerifierAlgorithmTest, ::testing::ValuesIn(kSigners),
                         [](const ::testing::TestParamInfo<Signer>& param_info) {
                           return std::string(param_info.param.algorithm);
                         });

// ---- Algorithm attacks ----

// An unsigned token is never accepted, whatever keys are configured and however "none" is
// spelled, even with a made-up signature.
TEST_F(JwtVerifierTest, AlgNoneIsRejected) {
  const JwtVerifier all = verifier(
      {{"HS256", kJwtSecret}, {"RS256", rsaKeys().public_pem}, {"ES256", ecKeys().public_pem}});
  EXPECT_EQ(all.verify(unsignedToken(), kNowS), std::nullopt);
  EXPECT_EQ(all.verify(unsignedToken(R"({"alg":"none"})"), kNowS), std::nullopt);
  EXPECT_EQ(all.verify(unsignedToken(R"({"alg":"None","typ":"JWT"})"), kNowS), std::nullopt);
  EXPECT_EQ(all.verify(unsignedToken(R"({"alg":"NONE","typ":"JWT"})"), kNowS), std::nullopt);
  EXPECT_EQ(all.verify(unsignedToken() + "c2ln", kNowS), std::nullopt);
  EXPECT_EQ(all.verify(hmacToken(R"({"alg":"none"})", R"({"sub":"mallory"})"), kNowS),
            std::nullopt);
}

// An RS256 token shown to an HS256-only verifier is rejected.
TEST_F(JwtVerifierTest, Rs256TokenToHs256VerifierIsRejected) {
  TokenBuilder builder;
  builder.claim("sub", "alice");
  EXPECT_EQ(hs256Verifier().verify(builder.sign(JWT_ALG_RS256, rsaKeys().private_pem), kNowS),
            std::nullopt);
}

// The classic confusion: an HS256 token keyed with the RSA public key's PEM text, shown to an
// RS256 verifier. libjwt alone accepts it when handed the PEM; the verifier must not.
TEST_F(JwtVerifierTest, HmacKeyedWithPublicKeyIsRejected) {
  TokenBuilder builder;
  builder.claim("sub", "mallory").claim("tier", "premium");
  const std::string forged = builder.sign(JWT_ALG_HS256, rsaKeys().public_pem);

  jwt_t* raw = nullptr;
  const int libjwt_status = jwt_decode(
      &raw, forged.c_str(), reinterpret_cast<const unsigned char*>(rsaKeys().public_pem.data()),
      static_cast<int>(rsaKeys().public_pem.size()));
  jwt_free(raw);
  ASSERT_EQ(libjwt_status, 0) << "the attack token should fool libjwt on its own";

  EXPECT_EQ(verifier({{"RS256", rsaKeys().public_pem}}).verify(forged, kNowS), std::nullopt);
  EXPECT_EQ(
      verifier({{"ES256", ecKeys().public_pem}})
          .verify(TokenBuilder().claim("sub", "m").sign(JWT_ALG_HS256, ecKeys().public_pem), kNowS),
      std::nullopt);
}

// Algorithm names are case-sensitive (RFC 7515 4.1.1); libjwt 1.10 alone would take "hs256".
TEST_F(JwtVerifierTest, AlgorithmNamesAreCaseSensitive) {
  EXPECT_NE(hs256Verifier().verify(hmacToken(R"({"alg":"HS256"})", R"({"sub":"a"})"), kNowS),
            std::nullopt);
  EXPECT_EQ(hs256Verifier().verify(hmacToken(R"({"alg":"hs256"})", R"({"sub":"a"})"), kNowS),
            std::nullopt);
}

// A `crit` header names extensions we do not implement, so the token is refused (RFC 7515
// 4.1.11).
TEST_F(JwtVerifierTest, CriticalHeaderIsRejected) {
  EXPECT_EQ(hs256Verifier().verify(
                hmacToken(R"({"alg":"HS256","crit":["exp2"],"exp2":1})", R"({"sub":"a"})"), kNowS),
            std::nullopt);
}

// libjwt 1.10 takes "typ" JWT in any case, or none, and refuses other types such as RFC 9068's
// "at+jwt".
TEST_F(JwtVerifierTest, TypeMustBeJwtWhenPresent) {
  const JwtVerifier hs256 = hs256Verifier();
  EXPECT_NE(hs256.verify(hmacToken(R"({"alg":"HS256","typ":"jwt"})", "{}"), kNowS), std::nullopt);
  EXPECT_NE(hs256.verify(hmacToken(R"({"alg":"HS256"})", "{}"), kNowS), std::nullopt);
  EXPECT_EQ(hs256.verify(hmacToken(R"({"alg":"HS256","typ":"at+jwt"})", "{}"), kNowS),
            std::nullopt);
}

// ---- Payload and time ----

// Nested claims come through as JSON; a payload that is not an object is refused.
TEST_F(JwtVerifierTest, PayloadIsAJsonObject) {
  const std::optional<boost::json::object> claims = hs256Verifier().verify(
      hmacToken(R"({"alg":"HS256"})", R"({"roles":["a","b"],"org":{"id":7},"admin":true})"), kNowS);
  ASSERT_TRUE(claims.has_value());
  EXPECT_EQ(claims->at("roles").as_array().size(), 2u);
  EXPECT_EQ(claims->at("org").at("id"), 7);
  EXPECT_EQ(claims->at("admin"), true);
  EXPECT_EQ(hs256Verifier().verify(hmacToken(R"({"alg":"HS256"})", "[1,2]"), kNowS), std::nullopt);
  EXPECT_EQ(hs256Verifier().verify(hmacToken(R"({"alg":"HS256"})", "not json"), kNowS),
            std::nullopt);
}

// exp is exclusive: valid through exp - 1, expired at exp. No exp means no expiry.
TEST_F(JwtVerifierTest, ExpiresAtExp) {
  const JwtVerifier hs256 = hs256Verifier();
  EXPECT_NE(hs256.verify(hs256Token(TokenBuilder().claim("exp", long{kNowS + 1})), kNowS),
            std::nullopt);
  EXPECT_EQ(hs256.verify(hs256Token(TokenBuilder().claim("exp", long{kNowS})), kNowS),
            std::nullopt);
  EXPECT_EQ(hs256.verify(hs256Token(TokenBuilder().claim("exp", long{kNowS - 3600})), kNowS),
            std::nullopt);
  EXPECT_NE(hs256.verify(hs256Token(TokenBuilder().claim("sub", "a")), kNowS), std::nullopt);
}

// nbf is inclusive: not valid at nbf - 1, valid from nbf.
TEST_F(JwtVerifierTest, ValidFromNbf) {
  const JwtVerifier hs256 = hs256Verifier();
  EXPECT_NE(hs256.verify(hs256Token(TokenBuilder().claim("nbf", long{kNowS})), kNowS),
            std::nullopt);
  EXPECT_EQ(hs256.verify(hs256Token(TokenBuilder().claim("nbf", long{kNowS + 1})), kNowS),
            std::nullopt);
}

// The leeway widens both ends by exactly its length.
TEST_F(JwtVerifierTest, LeewayWidensTheWindow) {
  const JwtVerifier lenient = hs256Verifier(60);
  EXPECT_NE(lenient.verify(hs256Token(TokenBuilder().claim("exp", long{kNowS - 59})), kNowS),
            std::nullopt);
  EXPECT_EQ(lenient.verify(hs256Token(TokenBuilder().claim("exp", long{kNowS - 60})), kNowS),
            std::nullopt);
  EXPECT_NE(lenient.verify(hs256Token(TokenBuilder().claim("nbf", long{kNowS + 60})), kNowS),
            std::nullopt);
  EXPECT_EQ(lenient.verify(hs256Token(TokenBuilder().claim("nbf", long{kNowS + 61})), kNowS),
            std::nullopt);
}

// Fractional dates compare exactly; dates that are not numbers make the token invalid.
TEST_F(JwtVerifierTest, DatesAreNumbers) {
  const JwtVerifier hs256 = hs256Verifier();
  const auto withDates = [](std::string dates) {
    return hmacToken(R"({"alg":"HS256"})", "{" + dates + "}");
  };
  const std::string now = std::to_string(kNowS);
  EXPECT_NE(hs256.verify(withDates(R"("exp":)" + now + ".5"), kNowS), std::nullopt);
  EXPECT_EQ(hs256.verify(withDates(R"("exp":)" + std::to_string(kNowS - 1) + ".5"), kNowS),
            std::nullopt);
  EXPECT_EQ(hs256.verify(withDates(R"("nbf":)" + now + ".5"), kNowS), std::nullopt);
  EXPECT_NE(hs256.verify(withDates(R"("exp":1e300)"), kNowS), std::nullopt);
  EXPECT_EQ(hs256.verify(withDates(R"("exp":"2100-01-01")"), kNowS), std::nullopt);
  EXPECT_EQ(hs256.verify(withDates(R"("exp":null)"), kNowS), std::nullopt);
  EXPECT_EQ(hs256.verify(withDates(R"("nbf":true)"), kNowS), std::nullopt);
  EXPECT_EQ(hs256.verify(withDates(R"("nbf":{})"), kNowS), std::nullopt);
}

// Extreme clocks and dates neither overflow nor wrap.
TEST_F(JwtVerifierTest, ExtremeTimesDoNotOverflow) {
  const JwtVerifier lenient = hs256Verifier(JwtVerifier::kMaxLeewayS);
  const std::string token =
      hs256Token(TokenBuilder().claim("exp", long{kNowS}).claim("nbf", long{kNowS}));
  EXPECT_EQ(lenient.verify(token, std::numeric_limits<std::int64_t>::max()), std::nullopt);
  EXPECT_EQ(lenient.verify(token, std::numeric_limits<std::int64_t>::min()), std::nullopt);
  const std::string forever = hs256Token(TokenBuilder()
                                             .claim("exp", std::numeric_limits<long>::max())
                                             .claim("nbf", std::numeric_limits<long>::min()));
  EXPECT_NE(lenient.verify(forever, std::numeric_limits<std::int64_t>::max()), std::nullopt);
  EXPECT_NE(lenient.verify(forever, std::numeric_limits<std::int64_t>::min()), std::nullopt);
}

// ---- Malformed input ----

// Garbage of every shape is rejected without crashing.
TEST_F(JwtVerifierTest, MalformedTokensAreRejected) {
  const JwtVerifier all = verifier(
      {{"HS256", kJwtSecret}, {"RS256", rsaKeys().public_pem}, {"ES256", ecKeys().public_pem}});
  const std::string valid = hs256Token(TokenBuilder().claim("sub", "alice"));
  ASSERT_NE(all.verify(valid, kNowS), std::nullopt);
  const std::string header = valid.substr(0, valid.find('.'));
  const std::string garbage[] = {
      "",
      ".",
      "..",
      "a.b",
      "a.b.c.d",
      "a..c",
      ".b.c",
      "a.b.",
      std::string(10 * 1024, '.'),
      std::string(JwtVerifier::kMaxTokenBytes + 1, 'a'),
      "e30.e30.c2ln",  // {} header: no alg
      header + ".e30",
      header + "." + std::string(3, 'A') + "!.c2ln",
      "Bearer " + valid,
      valid + ".",
      valid + " ",
      " " + valid,
      valid + "=",
      std::string(valid).insert(5, 1, '\0'),
      std::string("\xff\xfe\x00\x01", 4),
      base64Url("not json") + ".e30.c2ln",
      base64Url(R"(["alg","HS256"])") + ".e30.c2ln",
      base64Url(R"({"alg":256})") + ".e30.c2ln",
      "A.e30.c2ln",  // a length no base64 text has
  };
  for (const std::string& token : garbage) {
    EXPECT_EQ(all.verify(token, kNowS), std::nullopt) << token.substr(0, 80);
  }
}

// A token over kMaxTokenBytes is refused even when its signature is good.
TEST_F(JwtVerifierTest, OversizedTokenIsRejected) {
  const std::string big =
      hs256Token(TokenBuilder().claim("pad", std::string(JwtVerifier::kMaxTokenBytes, 'x')));
  ASSERT_GT(big.size(), JwtVerifier::kMaxTokenBytes);
  EXPECT_EQ(hs256Verifier().verify(big, kNowS), std::nullopt);
  const std::string fits =
      hs256Token(TokenBuilder().claim("pad", std::string(JwtVerifier::kMaxTokenBytes / 2, 'x')));
  EXPECT_NE(hs256Verifier().verify(fits, kNowS), std::nullopt);
}

// ---- Threads ----

// One verifier serves many threads at once; every answer is right.
TEST_F(JwtVerifierTest, ConcurrentVerifiesAgree) {
  const JwtVerifier all = verifier(
      {{"HS256", kJwtSecret}, {"RS256", rsaKeys().public_pem}, {"ES256", ecKeys().public_pem}});
  TokenBuilder builder;
  builder.claim("sub", "alice");
  const std::vector<std::string> good = {builder.sign(JWT_ALG_HS256, kJwtSecret),
                                         builder.sign(JWT_ALG_RS256, rsaKeys().private_pem),
                                         builder.sign(JWT_ALG_ES256, ecKeys().private_pem)};
  const std::string bad = builder.sign(JWT_ALG_HS256, kOtherSecret);
  constexpr int kThreads = 8;
  constexpr int kRounds = 50;
  std::vector<int> wrong_answers(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        const auto claims = all.verify(good[static_cast<std::size_t>(round) % good.size()], kNowS);
        if (!claims || claims->at("sub") != "alice") ++wrong_answers[static_cast<std::size_t>(t)];
        if (all.verify(bad, kNowS)) ++wrong_answers[static_cast<std::size_t>(t)];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong_answers, std::vector<int>(kThreads, 0));
}

// The OpenSSL check that runs before libjwt's decode: it takes what the key signed, and refuses
// a changed signature, a changed payload, a signature of the wrong shape and another key's.
TEST(JwtSignatureTest, VerifiesWhatTheKeySignedOnly) {
  for (const bool rsa : {true, false}) {
    const KeyPair& keys = rsa ? rsaKeys() : ecKeys();
    const KeyPair& others = rsa ? otherRsaKeys() : otherEcKeys();
    TokenBuilder builder;
    builder.claim("sub", "alice");
    const std::string token = builder.sign(rsa ? JWT_ALG_RS256 : JWT_ALG_ES256, keys.private_pem);
    const std::size_t dot = token.rfind('.');
    const std::string_view input = std::string_view(token).substr(0, dot);
    const std::string signature = token.substr(dot + 1);
    const PublicKey key = readPublicKey(keys.public_pem);
    ASSERT_NE(key, nullptr);
    EXPECT_TRUE(signatureVerifies(key.get(), rsa, input, signature)) << rsa;
    std::string flipped = signature;
    flipped[flipped.size() / 2] = flipped[flipped.size() / 2] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(signatureVerifies(key.get(), rsa, input, flipped)) << rsa;
    EXPECT_FALSE(signatureVerifies(key.get(), rsa, std::string(input) + "x", signature)) << rsa;
    EXPECT_FALSE(signatureVerifies(key.get(), rsa, input, signature.substr(4))) << rsa;
    EXPECT_FALSE(signatureVerifies(readPublicKey(others.public_pem).get(), rsa, input, signature));
  }
  EXPECT_EQ(readPublicKey("not a pem"), nullptr);
}

}  // namespace
}  // namespace sluice::policy
