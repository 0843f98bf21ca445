// What a JWT must pass besides its signature: algorithm attacks (none, RS256 to HS256, an HMAC
// keyed with the public key), its payload and times (exp, nbf, leeway), malformed and oversized
// input, and verifies on several threads agreeing.
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <jwt.h>

#include "policy/jwt_test_tokens.h"
#include "policy/jwt_verifier.h"

namespace sluice::policy {
namespace {

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
      valid + "==",  // padding base64 would not write (one '=' is: see ASignatureWithItsPadding)
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

}  // namespace
}  // namespace sluice::policy
