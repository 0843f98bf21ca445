// Creating a JWT verifier (which keys it takes), and each algorithm's signatures: a valid token
// passes, a tampered, foreign or borrowed one does not. (What a token must also pass:
// jwt_token_checks_test.cc.)
#include "policy/jwt_verifier.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <jwt.h>

#include "policy/jwt_signature.h"
#include "policy/jwt_test_tokens.h"

namespace sluice::policy {
namespace {

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

// A signature's last character carries bits past its last byte; another spelling with those bits
// set decodes to the same bytes, but it is not how the token was written, and is refused: one
// token has one spelling (16 verified apart could keep the verifier's cache clearing).
TEST_P(JwtVerifierAlgorithmTest, OneTokenHasOneSpelling) {
  const std::string token = signedToken();
  ASSERT_TRUE(ownVerifier().verify(token, kNowS).has_value());
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string respelled = token;
  const std::size_t last = kAlphabet.find(respelled.back());
  ASSERT_NE(last, std::string_view::npos);
  respelled.back() = kAlphabet[last ^ 1];  // the lowest bit: past the last byte in every length
  EXPECT_EQ(ownVerifier().verify(respelled, kNowS), std::nullopt) << respelled;
}

// A signature with the '=' padding base64 would give it verifies, as lenient backends (PyJWT)
// accept it: refused, such a token counted as none, and a jwt: limit with when_missing: skip
// was skipped. Padding that base64 would not write, and padding on the signed parts, are refused.
TEST_P(JwtVerifierAlgorithmTest, ASignatureWithItsPaddingVerifies) {
  const std::string token = signedToken();
  const std::size_t signature_chars = token.size() - token.rfind('.') - 1;
  ASSERT_NE(signature_chars % 4, 0u);  // 43, 342 and 86 characters: each takes padding
  const std::string padding(4 - signature_chars % 4, '=');
  const std::optional<boost::json::object> claims = ownVerifier().verify(token + padding, kNowS);
  ASSERT_TRUE(claims.has_value()) << token + padding;
  EXPECT_EQ(claims->at("sub"), "alice");
  EXPECT_EQ(ownVerifier().verify(token + padding + "=", kNowS), std::nullopt);
  if (padding.size() == 2) {
    EXPECT_EQ(ownVerifier().verify(token + "=", kNowS), std::nullopt);
  }
  std::string padded_payload = token;
  padded_payload.insert(token.rfind('.'), "=");
  EXPECT_EQ(ownVerifier().verify(padded_payload, kNowS), std::nullopt);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, JwtVerifierAlgorithmTest, ::testing::ValuesIn(kSigners),
                         [](const ::testing::TestParamInfo<Signer>& param_info) {
                           return std::string(param_info.param.algorithm);
                         });

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
