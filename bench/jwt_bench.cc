// What a forged RS256 or ES256 token costs JwtVerifier before it is refused, against what
// libjwt's own decode costs for the same token (the verifier's only check before session 14),
// and what a valid token costs once remembered. Run: build/bench/sluice_jwt_bench
#include <benchmark/benchmark.h>
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "policy/jwt_verifier.h"

namespace {

struct Keys {
  std::string private_pem;
  std::string public_pem;
};

Keys generate(bool rsa) {
  EVP_PKEY* key = rsa ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
  const auto pem = [&](bool is_private) {
    BIO* bio = BIO_new(BIO_s_mem());
    if (is_private) {
      PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
    } else {
      PEM_write_bio_PUBKEY(bio, key);
    }
    char* data = nullptr;
    const long length = BIO_get_mem_data(bio, &data);
    std::string text(data, static_cast<std::size_t>(length));
    BIO_free(bio);
    return text;
  };
  Keys keys{pem(true), pem(false)};
  EVP_PKEY_free(key);
  return keys;
}

const Keys& keysFor(bool rsa) {
  static const Keys rsa_keys = generate(true);
  static const Keys ec_keys = generate(false);
  return rsa ? rsa_keys : ec_keys;
}

std::string sign(bool rsa, const std::string& private_pem) {
  jwt_t* jwt = nullptr;
  jwt_new(&jwt);
  jwt_add_grant(jwt, "sub", "alice");
  jwt_add_grant_int(jwt, "exp", 4'000'000'000);
  jwt_set_alg(jwt, rsa ? JWT_ALG_RS256 : JWT_ALG_ES256,
              reinterpret_cast<const unsigned char*>(private_pem.data()),
              static_cast<int>(private_pem.size()));
  char* encoded = jwt_encode_str(jwt);
  std::string token = encoded;
  std::free(encoded);
  jwt_free(jwt);
  return token;
}

// The same token with another signature of the same shape: what an attacker sends.
std::string forged(std::string token) {
  const std::size_t dot = token.rfind('.');
  for (std::size_t i = dot + 1; i < token.size(); i += 3) token[i] = token[i] == 'A' ? 'B' : 'A';
  return token;
}

sluice::policy::JwtVerifier verifierFor(bool rsa) {
  return sluice::policy::JwtVerifier::create({{rsa ? "RS256" : "ES256", keysFor(rsa).public_pem}})
      .value();
}

void BM_VerifierForgedToken(benchmark::State& state) {
  const bool rsa = state.range(0) == 0;
  const sluice::policy::JwtVerifier verifier = verifierFor(rsa);
  const std::string token = forged(sign(rsa, keysFor(rsa).private_pem));
  for (auto _ : state) benchmark::DoNotOptimize(verifier.verify(token, 1'000'000'000));
  state.SetLabel(rsa ? "RS256" : "ES256");
}
BENCHMARK(BM_VerifierForgedToken)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_LibjwtDecodeForgedToken(benchmark::State& state) {
  const bool rsa = state.range(0) == 0;
  const std::string& pem = keysFor(rsa).public_pem;
  const std::string token = forged(sign(rsa, keysFor(rsa).private_pem));
  for (auto _ : state) {
    jwt_t* jwt = nullptr;
    benchmark::DoNotOptimize(jwt_decode(&jwt, token.c_str(),
                                        reinterpret_cast<const unsigned char*>(pem.data()),
                                        static_cast<int>(pem.size())));
    jwt_free(jwt);
  }
  state.SetLabel(rsa ? "RS256" : "ES256");
}
BENCHMARK(BM_LibjwtDecodeForgedToken)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_VerifierRememberedToken(benchmark::State& state) {
  const bool rsa = state.range(0) == 0;
  const sluice::policy::JwtVerifier verifier = verifierFor(rsa);
  const std::string token = sign(rsa, keysFor(rsa).private_pem);
  if (!verifier.verify(token, 1'000'000'000)) state.SkipWithError("the valid token was refused");
  for (auto _ : state) benchmark::DoNotOptimize(verifier.verify(token, 1'000'000'000));
  state.SetLabel(rsa ? "RS256" : "ES256");
}
BENCHMARK(BM_VerifierRememberedToken)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
